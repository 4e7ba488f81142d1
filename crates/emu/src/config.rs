//! The emulator's run description (JSON). The link is a scenario `[[links]]` entry, parsed
//! and checked by the simulator's own `LinkConfig`, so emulation and simulation read the same
//! fields with the same rules and the same error messages.
use mobipath_sim::core::RngStreams;
use mobipath_sim::link::{LinkConfig, LinkDir};
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// Longest run accepted, in seconds (the emulator must always end by itself).
pub const MAX_DURATION_S: f64 = 24.0 * 3600.0;

/// One side of an emulated path: the TUN device `ifname` inside the namespace `netns`
/// (`ip netns` name, i.e. `/run/netns/<netns>`).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Side {
    pub netns: String,
    pub ifname: String,
}

/// One emulated path: links in series from side `a` to side `b`, each exactly as a scenario's
/// `[[links]]` table. Forward (a → b) crosses them in order, reverse (b → a) in the opposite
/// order, as in the simulator.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathSpec {
    pub name: String,
    pub links: Vec<LinkConfig>,
    /// Sender side (data leaves here on the forward direction).
    pub a: Side,
    /// Receiver side.
    pub b: Side,
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EmuConfig {
    /// The emulated paths (at least one); each gets its own pair of TUN devices.
    pub paths: Vec<PathSpec>,
    /// Scenario seed: a link's RNG streams are `link/<name>/forward|reverse`, as in the simulator.
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Folder that relative trace paths resolve against.
    #[serde(default)]
    pub base_dir: Option<PathBuf>,
    /// Hard bound on the run, in seconds, in (0, 86400].
    pub duration_s: f64,
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
    /// Width of the per-path delivered-bytes bins in the stats, ms, in [1, 60000] (default 100).
    #[serde(default = "default_bin_ms")]
    pub bin_ms: f64,
    /// Packet captures of the link directions (`crate::capture`).
    #[serde(default)]
    pub pcap: Option<crate::capture::PcapConfig>,
}

fn default_true() -> bool {
    true
}

fn default_seed() -> u64 {
    1
}
fn default_spin_us() -> u64 {
    DEFAULT_SPIN_US
}

/// Busy-wait before a release, µs. 20 µs keeps p50/p99 release errors near those of 100 µs on an
/// idle machine, but a loop that spins 100 µs before every event of a 16 kpkt/s stream is
/// almost always spinning, and with both cores busy the kernel's RT throttling
/// (`sched_rt_runtime_us` = 95 %) then stops the `SCHED_FIFO` threads for tens of ms
/// (measured: 2 paths, 200 Mbit/s, loaded machine: p99 15 ms at 100 µs, 19–40 µs at 20 µs).
/// From ~600 Mbit/s even 20 µs is always spinning (events closer than the spin), so the loop
/// also keeps its busy share under a budget (`forward::SpinBudget`).
pub const DEFAULT_SPIN_US: u64 = 20;
fn default_bin_ms() -> f64 {
    100.0
}

/// One path's link models, built: forward links in order, reverse links in reverse order.
pub struct BuiltPath {
    pub forward: Vec<LinkDir>,
    pub reverse: Vec<LinkDir>,
}

/// Most bins kept per path and direction (memory bound: duration_s / bin_ms).
pub const MAX_BINS: f64 = 1_000_000.0;

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
            errs.push(format!("{file}: spin_us = {}: must be in [0, 2000]", c.spin_us));
        }
        if !(c.bin_ms >= 1.0 && c.bin_ms <= 60_000.0) {
            errs.push(format!("{file}: bin_ms = {}: must be in [1, 60000]", c.bin_ms));
        } else if c.duration_s / (c.bin_ms / 1000.0) > MAX_BINS {
            errs.push(format!(
                "{file}: bin_ms = {}: too fine for duration_s = {} (at most {MAX_BINS} bins)",
                c.bin_ms, c.duration_s
            ));
        }
        if c.paths.is_empty() {
            errs.push(format!("{file}: paths: must name at least one path"));
        }
        let mut devices = std::collections::HashSet::new();
        let mut link_names = std::collections::HashSet::new();
        for (i, p) in c.paths.iter().enumerate() {
            if p.links.is_empty() {
                errs.push(format!("{file}: paths[{i}].links: must hold at least one link"));
            }
            for l in &p.links {
                if !link_names.insert(l.name.clone()) {
                    errs.push(format!(
                        "{file}: paths[{i}].links: link {:?} appears twice; a link shared by several paths (or repeated) cannot be emulated",
                        l.name
                    ));
                }
            }
            for (n, s) in [("a", &p.a), ("b", &p.b)] {
                if s.ifname.is_empty() || s.ifname.len() >= libc::IFNAMSIZ || s.ifname.contains(['/', ' ']) {
                    errs.push(format!(
                        "{file}: paths[{i}].{n}.ifname = {:?}: must be 1..15 characters, no '/' or space",
                        s.ifname
                    ));
                }
                if s.netns.is_empty() || s.netns.contains('/') {
                    errs.push(format!(
                        "{file}: paths[{i}].{n}.netns = {:?}: must be a non-empty name without '/'",
                        s.netns
                    ));
                }
                if !devices.insert((s.netns.clone(), s.ifname.clone())) {
                    errs.push(format!(
                        "{file}: paths[{i}].{n}: device {} in namespace {} is used twice",
                        s.ifname, s.netns
                    ));
                }
            }
        }
        if let Some(pc) = &c.pcap {
            let names: Vec<String> = c
                .paths
                .iter()
                .flat_map(|p| p.links.iter().map(|l| l.name.clone()))
                .collect();
            errs.extend(pc.check(&names).into_iter().map(|m| format!("{file}: {m}")));
        }
        // Let the simulator check the links (field paths like `paths[0].links[1].rate_mbps`).
        if let Err(e) = c.build_paths() {
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

    /// Every path's link directions with the simulator's RNG stream names.
    pub fn build_paths(&self) -> Result<Vec<BuiltPath>, Vec<String>> {
        let rngs = RngStreams::new(self.seed);
        let mut errs = Vec::new();
        let mut out = Vec::new();
        for (i, p) in self.paths.iter().enumerate() {
            let mut built = BuiltPath {
                forward: Vec::new(),
                reverse: Vec::new(),
            };
            for l in &p.links {
                match l.build(self.base_dir(), &rngs) {
                    Ok((f, r)) => {
                        built.forward.push(f);
                        built.reverse.push(r);
                    }
                    Err(es) => errs.extend(es.into_iter().map(|e| format!("paths[{i}].{e}"))),
                }
            }
            built.reverse.reverse();
            out.push(built);
        }
        if errs.is_empty() {
            Ok(out)
        } else {
            Err(errs)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn json(link: &str, extra: &str) -> String {
        format!(
            r#"{{"paths": [{{"name": "p", "links": [{link}], "a": {{"netns": "mp-1-c", "ifname": "mpa0"}},
               "b": {{"netns": "mp-1-s", "ifname": "mpb0"}}}}], "duration_s": 5 {extra}}}"#
        )
    }

    #[test]
    fn parses_a_plain_link_with_defaults() {
        let c = EmuConfig::from_json(&json(r#"{"name": "l", "delay_ms": 20, "rate_mbps": 10}"#, ""), "t.json").unwrap();
        assert_eq!(c.seed, 1);
        assert_eq!(c.spin_us, DEFAULT_SPIN_US);
        assert_eq!(c.bin_ms, 100.0);
        assert_eq!(c.paths[0].links[0].rate_mbps, Some(10.0));
        let b = c.build_paths().unwrap();
        assert_eq!(b.len(), 1);
        assert_eq!(b[0].forward[0].stats().arrived_packets, 0);
        assert_eq!(b[0].reverse.len(), 1);
    }

    #[test]
    fn parses_schedule_loss_and_outages() {
        let link = r#"{"name": "l", "delay_ms": 5, "rate_schedule": [{"at_s": 0, "rate_mbps": 10}, {"at_s": 2, "rate_mbps": 0}],
                      "queue_packets": 50, "loss": {"model": "bernoulli", "p": 0.02},
                      "outages": [{"start_s": 1, "duration_s": 0.5, "queued": "drop"}]}"#;
        let c = EmuConfig::from_json(&json(link, r#", "seed": 7, "spin_us": 0"#), "t.json").unwrap();
        assert_eq!(c.seed, 7);
        assert_eq!(c.paths[0].links[0].outages.len(), 1);
    }

    #[test]
    fn reverse_crosses_the_links_backwards() {
        let links = r#"{"name": "first", "delay_ms": 1, "rate_mbps": 10}, {"name": "second", "delay_ms": 1, "rate_mbps": 10, "reverse": {"rate_mbps": 1}}"#;
        let c = EmuConfig::from_json(&json(links, ""), "t.json").unwrap();
        let b = c.build_paths().unwrap();
        assert_eq!(b[0].forward.len(), 2);
        // The reverse of `second` (1 Mbit/s) comes first on the way back: a 1500-B frame takes 12 ms there.
        let mut r0 = b.into_iter().next().unwrap().reverse.remove(0);
        let mut p = mobipath_sim::packet::Packet::new(mobipath_sim::packet::PacketKind::Ack);
        p.len = 1448;
        r0.enqueue(0, p).unwrap();
        assert_eq!(r0.next_wakeup(), Some(12_000_000));
    }

    #[test]
    fn reports_link_errors_with_field_names() {
        let e =
            EmuConfig::from_json(&json(r#"{"name": "l", "delay_ms": -1, "rate_mbps": 10}"#, ""), "t.json").unwrap_err();
        assert!(e.iter().any(|m| m.contains("paths[0].links[\"l\"].delay_ms")), "{e:?}");
        let e = EmuConfig::from_json(&json(r#"{"name": "l", "delay_ms": 1}"#, ""), "t.json").unwrap_err();
        assert!(e.iter().any(|m| m.contains("rate")), "{e:?}");
    }

    #[test]
    fn rejects_unknown_fields_bad_duration_names_and_shared_links() {
        let e = EmuConfig::from_json(
            &json(r#"{"name": "l", "delay_ms": 1, "rate_mbps": 1}"#, r#", "speed": 3"#),
            "t.json",
        )
        .unwrap_err();
        assert!(e[0].contains("speed"), "{e:?}");
        let t = json(r#"{"name": "l", "delay_ms": 1, "rate_mbps": 1}"#, "")
            .replace("\"duration_s\": 5", "\"duration_s\": 0");
        let e = EmuConfig::from_json(&t, "t.json").unwrap_err();
        assert!(e[0].contains("duration_s"), "{e:?}");
        let t =
            json(r#"{"name": "l", "delay_ms": 1, "rate_mbps": 1}"#, "").replace("mpa0", "a-very-long-interface-name");
        let e = EmuConfig::from_json(&t, "t.json").unwrap_err();
        assert!(e[0].contains("paths[0].a.ifname"), "{e:?}");
        let twice = r#"{"name": "l", "delay_ms": 1, "rate_mbps": 1}, {"name": "l", "delay_ms": 1, "rate_mbps": 1}"#;
        let e = EmuConfig::from_json(&json(twice, ""), "t.json").unwrap_err();
        assert!(e.iter().any(|m| m.contains("appears twice")), "{e:?}");
        let e = EmuConfig::from_json(
            &json(r#"{"name": "l", "delay_ms": 1, "rate_mbps": 1}"#, r#", "bin_ms": 0.5"#),
            "t.json",
        )
        .unwrap_err();
        assert!(e[0].contains("bin_ms"), "{e:?}");
    }
}
