//! Scheduler configuration as written in scenario files, its checks, and the factory.
//!
//! A scenario writes either a bare name, `scheduler = "minrtt"`, or a table with parameters,
//! `scheduler = { name = "roundrobin", num_segments = 3 }` ([`SchedulerSpec`]). Parameters a
//! scheduler does not take, unknown names and out-of-range values are reported by
//! [`SchedulerConfig::validate`] with the field path, the value and what is allowed.
use super::{
    blest::Blest, delay_predictive::DelayPredictive, ecf, ecf::Ecf, linux_default::LinuxDefault, minrtt::MinRtt,
    peekaboo, peekaboo::Peekaboo, redundant::Redundant, roundrobin::RoundRobin, Scheduler,
};
use crate::core::Time;
use crate::error::{fmt_num, ConfigError, Errors};
use schemars::JsonSchema;
use serde::{de, Deserialize, Deserializer, Serialize};
use std::fmt;

/// Every scheduler a scenario can name: the registry. Adding one is a variant here, a row in
/// [`SchedulerKind::ALL`] (with the parameters it takes) and an arm in [`build`]; validation, the
/// Python layer (`_core.names()`) and the tests take the names from here.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum SchedulerKind {
    MinRtt,
    LinuxDefault,
    RoundRobin,
    Redundant,
    Blest,
    Ecf,
    Peekaboo,
    DelayPredictive,
}

impl SchedulerKind {
    /// (kind, scenario name, parameters it takes).
    pub const ALL: &'static [(SchedulerKind, &'static str, &'static [&'static str])] = &[
        (SchedulerKind::MinRtt, "minrtt", &["rcvbuf_optimisation"]),
        (SchedulerKind::LinuxDefault, "linux-default", &[]),
        (
            SchedulerKind::RoundRobin,
            "roundrobin",
            &["num_segments", "cwnd_limited"],
        ),
        (SchedulerKind::Redundant, "redundant", &[]),
        (SchedulerKind::Blest, "blest", &["rcvbuf_optimisation"]),
        (SchedulerKind::Ecf, "ecf", &["delta_floor_ms", "rcvbuf_optimisation"]),
        (SchedulerKind::Peekaboo, "peekaboo", &["alpha", "epsilon"]),
        (
            SchedulerKind::DelayPredictive,
            "delay-predictive",
            &["rcvbuf_optimisation", "queue_on_slower_paths"],
        ),
    ];

    pub fn from_name(name: &str) -> Option<SchedulerKind> {
        Self::ALL.iter().find(|(_, n, _)| *n == name).map(|(k, _, _)| *k)
    }

    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(k, _, _)| *k == self)
            .map(|(_, n, _)| *n)
            .expect("every kind is listed in ALL")
    }

    /// Every scheduler name, in registry order.
    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|(_, n, _)| *n).collect()
    }

    /// Names of the schedulers that take parameter `param`.
    fn takers(param: &str) -> Vec<&'static str> {
        Self::ALL
            .iter()
            .filter(|(_, _, ps)| ps.contains(&param))
            .map(|(_, n, _)| *n)
            .collect()
    }
}

pub const MAX_NUM_SEGMENTS: i64 = 255;
pub const MAX_DELTA_FLOOR_MS: f64 = 10_000.0;
pub const MAX_ALPHA: f64 = 100.0;

/// A packet scheduler and its parameters. Each parameter belongs to one scheduler; giving it to
/// another is an error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SchedulerConfig {
    /// One of: `minrtt` (out-of-tree Linux default), `linux-default` (upstream Linux 6.x),
    /// `roundrobin`, `redundant`, `blest`, `ecf`, `peekaboo` (from the published description),
    /// `delay-predictive` (P1).
    pub name: String,
    /// roundrobin: consecutive segments per subflow turn, in [1, 255] (default 1; Linux's
    /// `num_segments`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1, max = 255))]
    pub num_segments: Option<i64>,
    /// roundrobin: true (default) skips subflows whose cwnd is full; false waits for the subflow
    /// whose turn it is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cwnd_limited: Option<bool>,
    /// ecf: lower bound of δ in ms, in [0, 10000] (default 100 = Linux's `tcp_rto_min`/2, because
    /// Linux's `rttvar_us` never falls below `tcp_rto_min`; 0 = plain 2·RTTVAR).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 10_000))]
    pub delta_floor_ms: Option<f64>,
    /// peekaboo: weight α of the ECF prior in the learner's score, in [0, 100] (default 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 100))]
    pub alpha: Option<f64>,
    /// peekaboo: probability of a random (exploring) choice, in [0, 1] (default 0.05).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 1))]
    pub epsilon: Option<f64>,
    /// delay-predictive, minrtt, ecf, blest: true (default) lets the connection level apply
    /// Linux's receive-buffer optimisation (opportunistic retransmission + penalisation,
    /// out-of-tree `mptcp_rcv_buf_optimization`) when the send window blocks, as the Linux
    /// schedulers do; false = the scheduler alone (an MPTCP without it, e.g. to test whether a
    /// simulator of another stack penalises).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rcvbuf_optimisation: Option<bool>,
    /// delay-predictive: false (default) queues segments beyond a full window only on the path
    /// with the lowest one-way delay; true also on slower paths (the paper's FIFO send buffer
    /// taken literally: a segment queued behind a slower path's full window arrives late when
    /// that window shrinks, and the receive buffer holds what overtook it; docs/p1.md).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queue_on_slower_paths: Option<bool>,
}

impl SchedulerConfig {
    /// A scheduler with default parameters.
    pub fn named(name: &str) -> Self {
        SchedulerConfig {
            name: name.to_string(),
            num_segments: None,
            cwnd_limited: None,
            delta_floor_ms: None,
            alpha: None,
            epsilon: None,
            rcvbuf_optimisation: None,
            queue_on_slower_paths: None,
        }
    }

    /// The parameters that are set, as (field name, value as written).
    fn given(&self) -> Vec<(&'static str, String)> {
        let mut v = Vec::new();
        if let Some(x) = self.num_segments {
            v.push(("num_segments", x.to_string()));
        }
        if let Some(x) = self.cwnd_limited {
            v.push(("cwnd_limited", x.to_string()));
        }
        if let Some(x) = self.delta_floor_ms {
            v.push(("delta_floor_ms", fmt_num(x)));
        }
        if let Some(x) = self.alpha {
            v.push(("alpha", fmt_num(x)));
        }
        if let Some(x) = self.epsilon {
            v.push(("epsilon", fmt_num(x)));
        }
        if let Some(x) = self.rcvbuf_optimisation {
            v.push(("rcvbuf_optimisation", x.to_string()));
        }
        if let Some(x) = self.queue_on_slower_paths {
            v.push(("queue_on_slower_paths", x.to_string()));
        }
        v
    }

    /// Reports an unknown name (listing the allowed ones), parameters the scheduler does not take,
    /// and out-of-range values; `prefix` is the field path of this config (e.g. `flows[0].scheduler`).
    pub fn validate(&self, prefix: &str, errs: &mut Errors) {
        let kind = SchedulerKind::from_name(&self.name);
        if kind.is_none() {
            errs.push(ConfigError::new(
                format!("{prefix}.name"),
                &self.name,
                format!("unknown scheduler; allowed: {}", SchedulerKind::names().join(", ")),
            ));
        }
        for (field, value) in self.given() {
            let takers = SchedulerKind::takers(field);
            if kind.is_some() && !takers.contains(&self.name.as_str()) {
                errs.push(ConfigError::new(
                    format!("{prefix}.{field}"),
                    value,
                    format!(
                        "not a parameter of scheduler `{}` (only {} takes it)",
                        self.name,
                        takers.join(", ")
                    ),
                ));
            }
        }
        if let Some(n) = self.num_segments {
            errs.range(format!("{prefix}.num_segments"), n as f64, 1.0, MAX_NUM_SEGMENTS as f64);
        }
        if let Some(x) = self.delta_floor_ms {
            errs.range(format!("{prefix}.delta_floor_ms"), x, 0.0, MAX_DELTA_FLOOR_MS);
        }
        if let Some(x) = self.alpha {
            errs.range(format!("{prefix}.alpha"), x, 0.0, MAX_ALPHA);
        }
        if let Some(x) = self.epsilon {
            errs.range(format!("{prefix}.epsilon"), x, 0.0, 1.0);
        }
    }
}

/// The scenario form: a bare name or a table (see the module docs).
#[derive(Clone, Debug, PartialEq, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum SchedulerSpec {
    /// Just a name with default parameters, e.g. `"minrtt"`.
    Name(String),
    /// A name with parameters, e.g. `{ name = "roundrobin", num_segments = 3 }`.
    Config(SchedulerConfig),
}

impl SchedulerSpec {
    /// The full configuration (defaults for a bare name).
    pub fn config(&self) -> SchedulerConfig {
        match self {
            SchedulerSpec::Name(n) => SchedulerConfig::named(n),
            SchedulerSpec::Config(c) => c.clone(),
        }
    }
}

impl Default for SchedulerSpec {
    /// `minrtt`, the out-of-tree default the papers compare against.
    fn default() -> Self {
        SchedulerSpec::Name("minrtt".into())
    }
}

/// Hand-written so that a table's errors (unknown key, wrong type) are reported as such instead
/// of serde's untagged "did not match any variant".
impl<'de> Deserialize<'de> for SchedulerSpec {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl<'de> de::Visitor<'de> for V {
            type Value = SchedulerSpec;
            fn expecting(&self, f: &mut fmt::Formatter) -> fmt::Result {
                f.write_str("a scheduler name or a table { name = ..., <parameters> }")
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<SchedulerSpec, E> {
                Ok(SchedulerSpec::Name(v.to_string()))
            }
            fn visit_map<A: de::MapAccess<'de>>(self, map: A) -> Result<SchedulerSpec, A::Error> {
                SchedulerConfig::deserialize(de::value::MapAccessDeserializer::new(map)).map(SchedulerSpec::Config)
            }
        }
        d.deserialize_any(V)
    }
}

/// Creates the scheduler `cfg` describes (one instance per connection); `seed` feeds schedulers
/// that draw random numbers (peekaboo). Invalid configurations are refused with the messages of
/// [`SchedulerConfig::validate`] (field prefix `scheduler`).
pub fn build(cfg: &SchedulerConfig, seed: u64) -> Result<Box<dyn Scheduler>, String> {
    let mut errs = Errors::default();
    cfg.validate("scheduler", &mut errs);
    if !errs.is_empty() {
        return Err(errs.0.iter().map(|e| e.to_string()).collect::<Vec<_>>().join("; "));
    }
    let kind = SchedulerKind::from_name(&cfg.name)
        .ok_or_else(|| format!("scheduler.name = {}: unknown scheduler", cfg.name))?;
    let s = build_kind(kind, cfg, seed);
    // minrtt / ecf / blest with `rcvbuf_optimisation = false`: the same scheduler, without the
    // connection-level optimisation (delay-predictive takes the flag itself).
    Ok(
        if cfg.rcvbuf_optimisation == Some(false) && kind != SchedulerKind::DelayPredictive {
            Box::new(super::Filtered::without_rcvbuf_optimisation(s))
        } else {
            s
        },
    )
}

fn build_kind(kind: SchedulerKind, cfg: &SchedulerConfig, seed: u64) -> Box<dyn Scheduler> {
    match kind {
        SchedulerKind::MinRtt => Box::new(MinRtt::new()),
        SchedulerKind::LinuxDefault => Box::new(LinuxDefault::new()),
        SchedulerKind::RoundRobin => Box::new(RoundRobin::new(
            cfg.num_segments.unwrap_or(1) as u32,
            cfg.cwnd_limited.unwrap_or(true),
        )),
        SchedulerKind::Redundant => Box::new(Redundant::new()),
        SchedulerKind::Blest => Box::new(Blest::new()),
        SchedulerKind::Ecf => {
            let floor = cfg
                .delta_floor_ms
                .map_or(ecf::DEFAULT_DELTA_FLOOR, |ms| (ms * 1e6).round() as Time);
            Box::new(Ecf::new(floor))
        }
        SchedulerKind::Peekaboo => Box::new(Peekaboo::new(
            cfg.alpha.unwrap_or(peekaboo::DEFAULT_ALPHA),
            cfg.epsilon.unwrap_or(peekaboo::DEFAULT_EPSILON),
            seed,
        )),
        SchedulerKind::DelayPredictive => Box::new(
            DelayPredictive::new(cfg.rcvbuf_optimisation.unwrap_or(true))
                .queue_on_slower_paths(cfg.queue_on_slower_paths.unwrap_or(false)),
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Deserialize)]
    #[serde(deny_unknown_fields)]
    struct Doc {
        scheduler: SchedulerSpec,
    }

    fn parse(s: &str) -> Result<SchedulerSpec, String> {
        toml::from_str::<Doc>(s).map(|d| d.scheduler).map_err(|e| e.to_string())
    }

    fn errors(cfg: &SchedulerConfig) -> Vec<ConfigError> {
        let mut e = Errors::default();
        cfg.validate("flows[0].scheduler", &mut e);
        e.0
    }

    #[test]
    fn every_name_builds_with_its_own_name() {
        for name in SchedulerKind::names() {
            let s = build(&SchedulerConfig::named(name), 1).unwrap();
            assert_eq!(s.name(), *name);
        }
    }

    #[test]
    fn string_and_table_forms_parse() {
        assert_eq!(
            parse(r#"scheduler = "ecf""#).unwrap(),
            SchedulerSpec::Name("ecf".into())
        );
        let spec = parse(r#"scheduler = { name = "roundrobin", num_segments = 3, cwnd_limited = false }"#).unwrap();
        let cfg = spec.config();
        assert_eq!(cfg.name, "roundrobin");
        assert_eq!(cfg.num_segments, Some(3));
        assert_eq!(cfg.cwnd_limited, Some(false));
        assert_eq!(
            SchedulerSpec::Name("blest".into()).config(),
            SchedulerConfig::named("blest")
        );
        assert_eq!(SchedulerSpec::default().config().name, "minrtt");
    }

    #[test]
    fn table_errors_name_the_key() {
        let e = parse(r#"scheduler = { name = "roundrobin", num_segment = 3 }"#).unwrap_err();
        assert!(e.contains("unknown field `num_segment`"), "{e}");
        let e = parse(r#"scheduler = { name = "roundrobin", num_segments = "3" }"#).unwrap_err();
        assert!(e.contains("invalid type"), "{e}");
        let e = parse("scheduler = 3").unwrap_err();
        assert!(e.contains("a scheduler name or a table"), "{e}");
    }

    #[test]
    fn round_trips_through_toml_and_json() {
        let spec = SchedulerSpec::Config(SchedulerConfig {
            alpha: Some(0.5),
            ..SchedulerConfig::named("peekaboo")
        });
        let json = serde_json::to_string(&spec).unwrap();
        assert_eq!(json, r#"{"name":"peekaboo","alpha":0.5}"#);
        assert_eq!(serde_json::from_str::<SchedulerSpec>(&json).unwrap(), spec);
        assert_eq!(
            serde_json::to_string(&SchedulerSpec::Name("minrtt".into())).unwrap(),
            r#""minrtt""#
        );
        let schema = serde_json::to_string(&schemars::schema_for!(SchedulerSpec)).unwrap();
        assert!(schema.contains("anyOf") && schema.contains("num_segments"), "{schema}");
    }

    #[test]
    fn unknown_name_lists_the_allowed_ones() {
        let e = errors(&SchedulerConfig::named("minRTT"));
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "flows[0].scheduler.name");
        assert_eq!(e[0].value, "minRTT");
        assert!(
            e[0].message.contains("minrtt, linux-default, roundrobin"),
            "{}",
            e[0].message
        );
        let err = build(&SchedulerConfig::named("nope"), 0).err().unwrap();
        assert!(
            err.contains("scheduler.name = nope: unknown scheduler; allowed: minrtt"),
            "{err}"
        );
    }

    #[test]
    fn parameters_of_other_schedulers_are_refused() {
        let cfg = SchedulerConfig {
            num_segments: Some(2),
            alpha: Some(1.0),
            ..SchedulerConfig::named("minrtt")
        };
        let e = errors(&cfg);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].field, "flows[0].scheduler.num_segments");
        assert_eq!(e[0].value, "2");
        assert!(e[0]
            .message
            .contains("not a parameter of scheduler `minrtt` (only roundrobin takes it)"));
        assert_eq!(e[1].field, "flows[0].scheduler.alpha");
        assert!(build(&cfg, 0).is_err());
        let opt = SchedulerConfig {
            rcvbuf_optimisation: Some(false),
            ..SchedulerConfig::named("peekaboo")
        };
        let e = errors(&opt);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "flows[0].scheduler.rcvbuf_optimisation");
        assert!(
            e[0].message.contains("not a parameter of scheduler `peekaboo`"),
            "{}",
            e[0].message
        );
    }

    /// delay-predictive, minrtt, ecf and blest take the switch; the Linux schedulers keep the
    /// optimisation by default and keep their names without it.
    #[test]
    fn the_rcvbuf_optimisation_switch() {
        for name in ["delay-predictive", "minrtt", "ecf", "blest"] {
            for (given, expect) in [(None, true), (Some(true), true), (Some(false), false)] {
                let cfg = SchedulerConfig {
                    rcvbuf_optimisation: given,
                    ..SchedulerConfig::named(name)
                };
                assert!(errors(&cfg).is_empty(), "{name}");
                let s = build(&cfg, 0).unwrap();
                assert_eq!(s.rcvbuf_optimisation(), expect, "{name} {given:?}");
                assert_eq!(s.name(), build(&SchedulerConfig::named(name), 0).unwrap().name());
            }
        }
        let lit = SchedulerConfig {
            queue_on_slower_paths: Some(true),
            ..SchedulerConfig::named("delay-predictive")
        };
        assert!(errors(&lit).is_empty());
        assert!(build(&lit, 0).is_ok());
        let e = errors(&SchedulerConfig {
            queue_on_slower_paths: Some(true),
            ..SchedulerConfig::named("minrtt")
        });
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].field, "flows[0].scheduler.queue_on_slower_paths");
    }

    #[test]
    fn out_of_range_values_are_reported_with_the_range() {
        let rr = SchedulerConfig {
            num_segments: Some(0),
            ..SchedulerConfig::named("roundrobin")
        };
        let e = errors(&rr);
        assert_eq!(e.len(), 1);
        assert_eq!(
            (e[0].field.as_str(), e[0].value.as_str()),
            ("flows[0].scheduler.num_segments", "0")
        );
        assert_eq!(e[0].message, "must be in [1, 255]");
        assert_eq!(
            errors(&SchedulerConfig {
                num_segments: Some(256),
                ..rr.clone()
            })
            .len(),
            1
        );
        assert!(errors(&SchedulerConfig {
            num_segments: Some(255),
            ..rr
        })
        .is_empty());

        let pk = SchedulerConfig {
            alpha: Some(-1.0),
            epsilon: Some(1.5),
            ..SchedulerConfig::named("peekaboo")
        };
        let e = errors(&pk);
        assert_eq!(e.len(), 2);
        assert_eq!(e[0].message, "must be in [0, 100]");
        assert_eq!(e[1].field, "flows[0].scheduler.epsilon");
        assert_eq!(e[1].message, "must be in [0, 1]");
        let ecf = SchedulerConfig {
            delta_floor_ms: Some(f64::NAN),
            ..SchedulerConfig::named("ecf")
        };
        assert_eq!(errors(&ecf).len(), 1);
    }

    #[test]
    fn parameters_reach_the_schedulers() {
        use super::super::{testutil::*, Decision};
        // roundrobin with num_segments = 2 and cwnd_limited = false.
        let cfg = SchedulerConfig {
            num_segments: Some(2),
            cwnd_limited: Some(false),
            ..SchedulerConfig::named("roundrobin")
        };
        let mut s = build(&cfg, 0).unwrap();
        let mut sfs = [sf(0, 10, 100, 0), sf(1, 10, 1, 1)];
        // Subflow 1's turn first, but its window is full: waits (cwnd_limited = false).
        assert_eq!(s.schedule(&conn(0), &sfs), Decision::Wait);
        sfs[1].cwnd = 100;
        assert_eq!(s.schedule(&conn(0), &sfs), Decision::Send(1));
        assert_eq!(s.schedule(&conn(0), &sfs), Decision::Send(1));
        assert_eq!(s.schedule(&conn(0), &sfs), Decision::Send(0));
        // ecf with delta_floor_ms = 0 vs the default: same views, different verdicts.
        let mut f = sf(0, 10, 10, 10);
        f.rttvar = 0;
        let mut slow = sf(1, 25, 10, 0);
        slow.rttvar = 0;
        let views = [f, slow];
        let floor0 = SchedulerConfig {
            delta_floor_ms: Some(0.0),
            ..SchedulerConfig::named("ecf")
        };
        assert_eq!(build(&floor0, 0).unwrap().schedule(&conn(0), &views), Decision::Wait);
        assert_eq!(
            build(&SchedulerConfig::named("ecf"), 0)
                .unwrap()
                .schedule(&conn(0), &views),
            Decision::Send(1)
        );
    }
}
