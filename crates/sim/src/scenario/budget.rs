//! The work budget: what a scenario would make the simulator store, estimated before it runs.
//!
//! Some fields multiply: a handoff every nanosecond, or 1 ms bins over a day, pass every range
//! check on their own but would fill memory (each handoff is an outage, a forwarding window and a
//! summary entry; each time-series bin is one row per series). [`check`] estimates both from the
//! scenario and refuses one above [`MAX_HANDOFFS`] or [`MAX_SERIES_ROWS`], naming the field to
//! change and the value that would fit. The limits are stated in the documentation's scenario
//! limits page.
use super::{ScenarioFile, Traffic};
use crate::error::{fmt_num, ConfigError, Errors};
use crate::handoff::HandoffPattern;
use crate::link::config::SojournConfig;
use crate::metrics::select::SeriesPlan;

/// Most handoffs one `[[handoffs]]` entry may produce over the run (expected count for the random
/// pattern).
pub const MAX_HANDOFFS: f64 = 100_000.0;

/// Most time-series rows a run may produce: bins (`duration_s / output.bin_ms`) times the series
/// `[output] series` keeps (eight per flow, one more for a relay, four per MPTCP subflow, one per
/// link, two for the sum over flows). About 200 bytes each in memory: 5 million rows is about 1 GB.
pub const MAX_SERIES_ROWS: f64 = 5_000_000.0;

/// Time-series rows of one bin: the series the run keeps (`[output] series`).
pub fn series_per_bin(sf: &ScenarioFile) -> usize {
    let names: Vec<String> = sf.flows.iter().map(|f| f.name.clone()).collect();
    let keep = SeriesPlan::resolve(&sf.output.series, &names);
    let flows: usize = sf
        .flows
        .iter()
        .zip(&keep.flows)
        .filter(|(_, kept)| **kept)
        .map(|(f, _)| {
            let relay = usize::from(matches!(f.traffic, Traffic::Relay { .. }));
            let subflows = f.paths.as_ref().map_or(0, |p| p.len());
            8 + relay + 4 * subflows
        })
        .sum();
    let links = if keep.links { sf.links.len() } else { 0 };
    let total = if keep.total { 2 } else { 0 };
    flows + links + total
}

fn mean_sojourn(s: &SojournConfig) -> f64 {
    match s {
        SojournConfig::Deterministic { mean_s } | SojournConfig::Exponential { mean_s } => *mean_s,
        SojournConfig::Uniform { min_s, max_s } => (min_s + max_s) / 2.0,
    }
}

/// Refuses a scenario whose handoffs or time series exceed the budget. Runs after the range
/// checks: it only looks at values that passed them (`dur` is the valid duration).
pub fn check(sf: &ScenarioFile, dur: f64, errs: &mut Errors) {
    if !dur.is_finite() {
        return;
    }
    for (i, h) in sf.handoffs.iter().enumerate() {
        let (field, value, cycle_s) = match &h.pattern {
            HandoffPattern::Deterministic { good_s, handoff_s } => ("pattern.good_s", *good_s, good_s + handoff_s),
            HandoffPattern::Random { good, handoff } => {
                let field = match good {
                    SojournConfig::Uniform { .. } => "pattern.good.max_s",
                    _ => "pattern.good.mean_s",
                };
                let v = match good {
                    SojournConfig::Uniform { max_s, .. } => *max_s,
                    _ => mean_sojourn(good),
                };
                (field, v, mean_sojourn(good) + mean_sojourn(handoff))
            }
            HandoffPattern::List { .. } | HandoffPattern::Train {} => continue,
        };
        if !(cycle_s.is_finite() && cycle_s > 0.0) {
            continue;
        }
        let n = dur / cycle_s;
        if n > MAX_HANDOFFS {
            errs.push(ConfigError::new(
                format!("handoffs[{i}].{field}"),
                fmt_num(value),
                format!(
                    "makes {n:.3e} handoffs in duration_s = {} (a handoff every {} s on average), at most {}: good and handoff time together must average at least {} s",
                    fmt_num(dur),
                    fmt_num(cycle_s),
                    fmt_num(MAX_HANDOFFS),
                    fmt_num(dur / MAX_HANDOFFS)
                ),
            ));
        }
    }
    let bin_ms = sf.output.bin_ms;
    // An out-of-range bin_ms is reported by its range check.
    if (1.0..=60000.0).contains(&bin_ms) {
        let bins = (dur * 1000.0 / bin_ms).ceil();
        let series = series_per_bin(sf) as f64;
        let rows = bins * series;
        if rows > MAX_SERIES_ROWS {
            let min_bin = (dur * 1000.0 * series / MAX_SERIES_ROWS).ceil();
            errs.push(ConfigError::new(
                "output.bin_ms",
                fmt_num(bin_ms),
                format!(
                    "makes {bins:.3e} bins x {series} series = {rows:.3e} time-series rows over duration_s = {}, at most {MAX_SERIES_ROWS:e} (about 1 GB): use bin_ms >= {}, keep fewer series (output.series = \"aggregate\") or a shorter run",
                    fmt_num(dur),
                    fmt_num(min_bin)
                ),
            ));
        }
    }
}

#[cfg(test)]
mod tests {
    use crate::scenario::Scenario;
    use std::path::Path;

    fn errors(text: &str) -> Vec<String> {
        match Scenario::load(text, "t.toml", Path::new(".")) {
            Ok(_) => vec![],
            Err(e) => e.iter().map(|e| e.to_string()).collect(),
        }
    }

    const BASE: &str = r#"
duration_s = DUR
[output]
bin_ms = BIN
[[links]]
name = "l"
rate_mbps = 10
delay_ms = 10
[[paths]]
name = "p"
links = ["l"]
[[flows]]
name = "f"
path = "p"
cc = "reno"
traffic = { kind = "bulk" }
"#;

    fn scenario(dur: &str, bin: &str, handoffs: &str) -> String {
        format!("{}{handoffs}", BASE.replace("DUR", dur).replace("BIN", bin))
    }

    #[test]
    fn nanosecond_handoffs_are_refused_naming_good_s() {
        let h = "[[handoffs]]\nlink = \"l\"\npattern = { kind = \"deterministic\", good_s = 1e-9, handoff_s = 1e-9 }\n";
        let e = errors(&scenario("0.001", "100", h));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(
            e[0].starts_with("handoffs[0].pattern.good_s = 0.000000001: makes"),
            "{e:?}"
        );
        assert!(e[0].contains("at most 100000"), "{e:?}");
        // The same pattern over a run where it stays within the budget is accepted.
        let ok = "[[handoffs]]\nlink = \"l\"\npattern = { kind = \"deterministic\", good_s = 0.5, handoff_s = 0.5 }\n";
        assert!(errors(&scenario("60", "100", ok)).is_empty());
    }

    #[test]
    fn random_handoffs_at_the_sojourn_floor_are_refused() {
        let h = "[[handoffs]]\nlink = \"l\"\npattern = { kind = \"random\", good = { sojourn = \"exponential\", mean_s = 0.000001 }, handoff = { sojourn = \"deterministic\", mean_s = 0.000001 } }\n";
        let e = errors(&scenario("10", "100", h));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("handoffs[0].pattern.good.mean_s"), "{e:?}");
    }

    #[test]
    fn millisecond_bins_over_a_long_run_are_refused_naming_bin_ms() {
        // 600 s at 1 ms: 600000 bins x 9 series.
        let e = errors(&scenario("600", "1", ""));
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].starts_with("output.bin_ms = 1: makes"), "{e:?}");
        assert!(e[0].contains("use bin_ms >= 2"), "{e:?}");
        assert!(errors(&scenario("600", "2", "")).is_empty());
        assert!(errors(&scenario("86400", "1000", "")).is_empty());
    }

    #[test]
    fn the_budget_counts_only_the_series_kept() {
        // A day at 100 ms bins: 864000 bins x 9 series is over the budget, but the links' queue
        // and the flows' total (3 series) or nothing at all fit.
        let day = scenario("86400", "100", "");
        let e = errors(&day);
        assert_eq!(e.len(), 1, "{e:?}");
        assert!(e[0].contains("output.series = \"aggregate\""), "{e:?}");
        for series in ["aggregate", "none"] {
            let text = day.replace("bin_ms = 100", &format!("bin_ms = 100\nseries = \"{series}\""));
            assert!(errors(&text).is_empty(), "{series}: {:?}", errors(&text));
        }
        let text = day.replace("bin_ms = 100", "bin_ms = 100\nseries = [\"f\"]");
        assert_eq!(errors(&text).len(), 1, "a list naming the flow keeps its series");
    }
}
