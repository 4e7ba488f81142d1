//! `[output] series`: which time series a run keeps (docs/outputs.md, "Time series of large
//! runs"). Every series is one value per bin for one entity, so a run's series grow with
//! entities × bins; past [`AUTO_ALL_MAX_FLOWS`] flows the default keeps only the links' series
//! and the sum over all flows, which grow with bins alone. The summary is the same either way.
use crate::error::{ConfigError, Errors};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// With `series = "auto"` (the default), runs of at most this many flows keep every flow's
/// series (`"all"`); larger runs keep the links' and the total (`"aggregate"`).
pub const AUTO_ALL_MAX_FLOWS: usize = 100;

/// The values `series` takes as a word.
pub const SERIES_WORDS: [&str; 4] = ["auto", "all", "aggregate", "none"];

/// `[output] series`: one of [`SERIES_WORDS`] or a list of flow names.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum SeriesSelect {
    Word(String),
    Flows(Vec<String>),
}

impl Default for SeriesSelect {
    fn default() -> Self {
        SeriesSelect::Word("auto".into())
    }
}

impl SeriesSelect {
    pub fn is_auto(&self) -> bool {
        matches!(self, SeriesSelect::Word(w) if w == "auto")
    }
}

/// What the engine keeps, resolved from [`SeriesSelect`] and the scenario's flows.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SeriesPlan {
    /// Per flow (scenario order): whether its own and its subflows' series are kept.
    pub flows: Vec<bool>,
    /// Whether the links' queue series are kept.
    pub links: bool,
    /// Whether the sum over all flows (`kind = "total"`, `name = "flows"`) is written.
    pub total: bool,
}

impl SeriesPlan {
    /// Every series of every flow and link (what runs wrote before `series` existed).
    pub fn all(n_flows: usize) -> Self {
        SeriesPlan {
            flows: vec![true; n_flows],
            links: true,
            total: false,
        }
    }

    /// Resolves `sel` for a run of `flows` (names in scenario order). Call after [`check`].
    pub fn resolve(sel: &SeriesSelect, flows: &[String]) -> Self {
        let n = flows.len();
        match sel {
            SeriesSelect::Word(w) => match w.as_str() {
                "all" => Self::all(n),
                "auto" if n <= AUTO_ALL_MAX_FLOWS => Self::all(n),
                "none" => SeriesPlan {
                    flows: vec![false; n],
                    links: false,
                    total: false,
                },
                // "aggregate", and "auto" above the limit.
                _ => SeriesPlan {
                    flows: vec![false; n],
                    links: true,
                    total: true,
                },
            },
            SeriesSelect::Flows(names) => SeriesPlan {
                flows: flows.iter().map(|f| names.contains(f)).collect(),
                links: true,
                total: false,
            },
        }
    }

    /// Whether any flow keeps its series.
    pub fn any_flow(&self) -> bool {
        self.flows.iter().any(|&k| k)
    }
}

/// Checks `series` against the allowed words and the scenario's flow names.
pub fn check(sel: &SeriesSelect, flows: &[String], errs: &mut Errors) {
    match sel {
        SeriesSelect::Word(w) => {
            if !SERIES_WORDS.contains(&w.as_str()) {
                errs.push(ConfigError::new(
                    "output.series",
                    w,
                    format!(
                        "must be one of {} or a non-empty list of flow names",
                        SERIES_WORDS.map(|w| format!("\"{w}\"")).join(", ")
                    ),
                ));
            }
        }
        SeriesSelect::Flows(names) => {
            if names.is_empty() {
                errs.push(ConfigError::new(
                    "output.series",
                    "[]",
                    "must be one of \"auto\", \"all\", \"aggregate\", \"none\" or a non-empty list of flow names",
                ));
            }
            for (i, n) in names.iter().enumerate() {
                if !flows.contains(n) {
                    errs.push(ConfigError::new(
                        format!("output.series[{i}]"),
                        n,
                        format!("unknown flow; flows: {}", flows.join(", ")),
                    ));
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(n: usize) -> Vec<String> {
        (0..n).map(|i| format!("f{i}")).collect()
    }

    #[test]
    fn auto_keeps_every_flow_up_to_the_limit_and_the_total_above() {
        let auto = SeriesSelect::default();
        assert_eq!(
            SeriesPlan::resolve(&auto, &names(AUTO_ALL_MAX_FLOWS)),
            SeriesPlan::all(AUTO_ALL_MAX_FLOWS)
        );
        let big = SeriesPlan::resolve(&auto, &names(AUTO_ALL_MAX_FLOWS + 1));
        assert!(!big.any_flow() && big.links && big.total);
    }

    #[test]
    fn a_list_keeps_the_flows_it_names() {
        let sel = SeriesSelect::Flows(vec!["f2".into()]);
        let p = SeriesPlan::resolve(&sel, &names(4));
        assert_eq!(p.flows, vec![false, false, true, false]);
        assert!(p.links && !p.total);
        let none = SeriesPlan::resolve(&SeriesSelect::Word("none".into()), &names(4));
        assert!(!none.any_flow() && !none.links && !none.total);
    }

    #[test]
    fn bad_values_name_the_field_and_what_is_allowed() {
        let mut errs = Errors::default();
        check(&SeriesSelect::Word("some".into()), &names(2), &mut errs);
        check(&SeriesSelect::Flows(vec![]), &names(2), &mut errs);
        check(
            &SeriesSelect::Flows(vec!["f1".into(), "x".into()]),
            &names(2),
            &mut errs,
        );
        let msgs: Vec<String> = errs.0.iter().map(|e| e.to_string()).collect();
        assert_eq!(msgs.len(), 3, "{msgs:?}");
        assert!(
            msgs[0].contains("output.series") && msgs[0].contains("\"aggregate\""),
            "{msgs:?}"
        );
        assert!(
            msgs[1].contains("output.series") && msgs[1].contains("non-empty"),
            "{msgs:?}"
        );
        assert!(
            msgs[2].contains("output.series[1]") && msgs[2].contains("unknown flow"),
            "{msgs:?}"
        );
    }
}
