//! The emulator's run description (JSON). The link is a scenario `[[links]]` entry, parsed
//! and checked by the simulator's own `LinkConfig`, so emulation and simulation read the same
//! fields with the same rules and the same error messages.
use mobipath_sim::core::RngStreams;
use mobipath_sim::link::{LinkConfig, LinkDir};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Longest run accepted, in seconds (the emulator must always end by itself).
pub const MAX_DURATION_S: f64 = 24.0 * 3600.0;

/// One side of the emulated path: the TUN device `ifname` inside the namespace `netns`
/// (`ip netns` name, i.e. `/run/netns/<netns>`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Side {
    pub netns: String,
    pub ifname: String,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmuConfig {
    /// The link, exactly as a scenario's `[[links]]` table. Forward = a → b.
    pub link: LinkConfig,
    /// Scenario seed: the link's RNG streams are `link/<name>/forward|reverse`, as in the simulator.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Folder that relative trace paths resolve against.
    #[serde(default)]
    pub base_dir: Option<PathBuf>,
    /// Hard bound on the run, in seconds, in (0, 86400].
    pub duration_s: f64,
    /// Sender side (data leaves here on the forward direction).
    pub a: Side,
    /// Receiver side.
    pub b: Side,
    /// Busy-wait this long before a release instead of sleeping (µs, 0..=2000).
    #[serde(default = "default_spin_us")]
    pub spin_us: u64,
    /// Where to write the stats JSON at exit (also printed on stdout).
    #[serde(default)]
    pub stats_path: Option<PathBuf>,
    /// After printing "ready", wait for a line on stdin before starting the clock, so time 0
    /// (rate schedules, outages) is when the caller starts its traffic.
    #[serde(default)]
    pub wait_for_start: bool,
    /// Run the forwarding threads as `SCHED_FIFO` when permitted (default true).
    #[serde(default = "default_true")]
    pub realtime: bool,
}

fn default_true() -> bool {
    true
}

fn default_seed() -> u64 {
    1
}
fn default_spin_us() -> u64 {
    100
}

impl EmuConfig {
    /// Parses and checks the JSON text; every problem is one line naming the field.
    pub fn from_json(text: &str, file: &str) -> Result<EmuConfig, Vec<String>> {
        let c: EmuConfig = serde_json::from_str(text).map_err(|e| vec![format!("{file}: {e}")])?;
        let mut errs = Vec::new();
        if !(c.duration_s > 0.0 && c.duration_s <= MAX_DURATION_S) {
            errs.push(format!(
                "{file}: duration_s = {}: must be in (0, {MAX_DURATION_S}]",
                c.duration_s
            ));
        }
        if c.spin_us > 2000 {
            errs.push(format!(
                "{file}: spin_us = {}: must be in [0, 2000]",
                c.spin_us
            ));
        }
        for (n, s) in [("a", &c.a), ("b", &c.b)] {
            if s.ifname.is_empty()
                || s.ifname.len() >= libc::IFNAMSIZ
                || s.ifname.contains(['/', ' '])
            {
                errs.push(format!(
                    "{file}: {n}.ifname = {:?}: must be 1..15 characters, no '/' or space",
                    s.ifname
                ));
            }
            if s.netns.is_empty() || s.netns.contains('/') {
                errs.push(format!(
                    "{file}: {n}.netns = {:?}: must be a non-empty name without '/'",
                    s.netns
                ));
            }
        }
        if c.a.netns == c.b.netns && c.a.ifname == c.b.ifname {
            errs.push(format!("{file}: a and b name the same device"));
        }
        // Let the simulator check the link (field paths like `link.rate_mbps`).
        if let Err(e) = c.build_link() {
            errs.extend(e.into_iter().map(|m| format!("{file}: {m}")));
        }
        if errs.is_empty() {
            Ok(c)
        } else {
            Err(errs)
        }
    }

    pub fn base_dir(&self) -> &Path {
        self.base_dir.as_deref().unwrap_or(Path::new("."))
    }

    /// The two directions (forward a → b, reverse b → a) with the simulator's RNG stream names.
    pub fn build_link(&self) -> Result<(LinkDir, LinkDir), Vec<String>> {
        let rngs = RngStreams::new(self.seed);
        let name = &self.link.name;
        self.link
            .build(
                self.base_dir(),
                rngs.stream(&format!("link/{name}/forward")),
                rngs.stream(&format!("link/{name}/reverse")),
            )
            .map_err(|es| es.into_iter().map(|e| format!("link.{e}")).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(link: &str, extra: &str) -> String {
        format!(
            r#"{{"link": {link}, "duration_s": 5, "a": {{"netns": "mp-1-c", "ifname": "mpa0"}},
               "b": {{"netns": "mp-1-s", "ifname": "mpb0"}} {extra}}}"#
        )
    }

    #[test]
    fn parses_a_plain_link_with_defaults() {
        let c = EmuConfig::from_json(
            &json(r#"{"name": "l", "delay_ms": 20, "rate_mbps": 10}"#, ""),
            "t.json",
        )
        .unwrap();
        assert_eq!(c.seed, 1);
        assert_eq!(c.spin_us, 100);
        assert_eq!(c.link.rate_mbps, Some(10.0));
        let (f, r) = c.build_link().unwrap();
        assert_eq!(f.stats().arrived_packets, 0);
        assert_eq!(r.stats().arrived_packets, 0);
    }

    #[test]
    fn parses_schedule_loss_and_outages() {
        let link = r#"{"name": "l", "delay_ms": 5, "rate_schedule": [{"at_s": 0, "rate_mbps": 10}, {"at_s": 2, "rate_mbps": 0}],
                      "queue_packets": 50, "loss": {"model": "bernoulli", "p": 0.02},
                      "outages": [{"start_s": 1, "duration_s": 0.5, "queued": "drop"}]}"#;
        let c =
            EmuConfig::from_json(&json(link, r#", "seed": 7, "spin_us": 0"#), "t.json").unwrap();
        assert_eq!(c.seed, 7);
        assert_eq!(c.link.outages.len(), 1);
    }

    #[test]
    fn reports_link_errors_with_field_names() {
        let e = EmuConfig::from_json(
            &json(r#"{"name": "l", "delay_ms": -1, "rate_mbps": 10}"#, ""),
            "t.json",
        )
        .unwrap_err();
        assert!(e.iter().any(|m| m.contains("delay_ms")), "{e:?}");
        let e = EmuConfig::from_json(&json(r#"{"name": "l", "delay_ms": 1}"#, ""), "t.json")
            .unwrap_err();
        assert!(e.iter().any(|m| m.contains("rate")), "{e:?}");
    }

    #[test]
    fn rejects_unknown_fields_bad_duration_and_names() {
        let e = EmuConfig::from_json(
            &json(
                r#"{"name": "l", "delay_ms": 1, "rate_mbps": 1}"#,
                r#", "speed": 3"#,
            ),
            "t.json",
        )
        .unwrap_err();
        assert!(e[0].contains("speed"), "{e:?}");
        let t = json(r#"{"name": "l", "delay_ms": 1, "rate_mbps": 1}"#, "")
            .replace("\"duration_s\": 5", "\"duration_s\": 0");
        let e = EmuConfig::from_json(&t, "t.json").unwrap_err();
        assert!(e[0].contains("duration_s"), "{e:?}");
        let t = json(r#"{"name": "l", "delay_ms": 1, "rate_mbps": 1}"#, "")
            .replace("mpa0", "a-very-long-interface-name");
        let e = EmuConfig::from_json(&t, "t.json").unwrap_err();
        assert!(e[0].contains("a.ifname"), "{e:?}");
    }
}
