//! The `[output]` keys that ask for packet captures, and their checks.
use super::{CaptureSpec, DEFAULT_MAX_MB, DEFAULT_SNAPLEN};
use crate::error::{fmt_num, ConfigError, Errors};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[output] pcap`: `false` (default), `true` (every link, both directions) or a list of link
/// names (both directions of each).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum PcapSelect {
    All(bool),
    Links(Vec<String>),
}

impl Default for PcapSelect {
    fn default() -> Self {
        PcapSelect::All(false)
    }
}

impl PcapSelect {
    pub fn is_off(&self) -> bool {
        *self == PcapSelect::All(false)
    }
}

/// Snap lengths allowed: every header the capture writes (IPv4 20 + TCP with options 60) fits
/// in the lower bound; the upper is libpcap's largest.
pub const SNAPLEN_RANGE: (u32, u32) = (80, 262_144);
/// Size limits allowed, MB.
pub const MAX_MB_RANGE: (f64, f64) = (0.0, 1_000_000.0);

pub fn default_snaplen() -> u32 {
    DEFAULT_SNAPLEN
}
pub fn default_max_mb() -> f64 {
    DEFAULT_MAX_MB
}
pub fn is_default_snaplen(v: &u32) -> bool {
    *v == DEFAULT_SNAPLEN
}
pub fn is_default_max_mb(v: &f64) -> bool {
    *v == DEFAULT_MAX_MB
}

/// Checks `snaplen`, the size limit (`field` names where it came from: `output.pcap_max_mb` or a
/// command-line flag) and the link names of `pcap` against the scenario's `links`.
pub fn check(pcap: &PcapSelect, snaplen: u32, max_mb: f64, links: &[String], errs: &mut Errors) {
    if let PcapSelect::Links(names) = pcap {
        if names.is_empty() {
            errs.push(ConfigError::new(
                "output.pcap",
                "[]",
                "must be true, false or a non-empty list of link names",
            ));
        }
        for (i, n) in names.iter().enumerate() {
            if !links.contains(n) {
                errs.push(ConfigError::new(
                    format!("output.pcap[{i}]"),
                    n,
                    format!("unknown link; links: {}", links.join(", ")),
                ));
            }
        }
    }
    let (lo, hi) = SNAPLEN_RANGE;
    errs.check(
        (lo..=hi).contains(&snaplen),
        "output.pcap_snaplen",
        snaplen,
        &format!("must be in [{lo}, {hi}] bytes (every header fits in {lo})"),
    );
    if let Err(e) = check_max_mb("output.pcap_max_mb", max_mb) {
        errs.push(e);
    }
}

/// A size limit in MB: > 0 and at most 10^6.
pub fn check_max_mb(field: &str, v: f64) -> Result<(), ConfigError> {
    let (lo, hi) = MAX_MB_RANGE;
    if v.is_finite() && v > lo && v <= hi {
        Ok(())
    } else {
        Err(ConfigError::new(
            field,
            fmt_num(v),
            format!(
                "must be in ({}, {}] MB (a limit of 0 would capture nothing)",
                fmt_num(lo),
                fmt_num(hi)
            ),
        ))
    }
}

/// The capture of a checked `[output]`: the link directions to tap (engine numbering: 2i
/// forward, 2i + 1 reverse of link i), or `None` when `pcap` is off.
pub fn spec(pcap: &PcapSelect, snaplen: u32, max_mb: f64, links: &[String]) -> CaptureSpec {
    let link_dirs = match pcap {
        PcapSelect::All(false) => None,
        PcapSelect::All(true) => Some((0..links.len() * 2).collect()),
        PcapSelect::Links(names) => {
            let mut v: Vec<usize> = (0..links.len())
                .filter(|&i| names.contains(&links[i]))
                .flat_map(|i| [2 * i, 2 * i + 1])
                .collect();
            v.sort_unstable();
            Some(v)
        }
    };
    CaptureSpec {
        link_dirs,
        snaplen,
        max_bytes: (max_mb * 1e6).round() as u64,
    }
}
