//! The `[pha_d]` section of the router's config (crates/proxy/README.md). Every error names the
//! field and the allowed values; the handover table's and the track's errors name the file, the
//! line and the field.
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use super::controller::{self, Policy, Time, NS_PER_MS};
use super::gps::Source;
use super::peer::PeerSettings;
use super::table::Table;
use super::track::Track;
use crate::files::{read_text, MAX_DATA_FILE_BYTES};

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawSubflow {
    operator: String,
    endpoint: i64,
    peer_address: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Raw {
    gps: String,
    table: PathBuf,
    track: Option<PathBuf>,
    subflows: Vec<RawSubflow>,
    policy: Option<String>,
    lead_ms: Option<f64>,
    resend_b0: Option<bool>,
    gps_period_ms: Option<f64>,
    tick_ms: Option<f64>,
    stale_s: Option<f64>,
    max_offset_m: Option<f64>,
    max_speed_mps: Option<f64>,
    min_interval_ms: Option<f64>,
    retry_s: Option<f64>,
    max_retries: Option<i64>,
    slow_start_after_idle: Option<String>,
    peer_metrics: Option<String>,
    peer_poll_ms: Option<f64>,
    peer_stale_ms: Option<f64>,
}

#[derive(Debug, Clone)]
pub struct PhaDSettings {
    pub source: Source,
    pub table_file: PathBuf,
    pub track: Option<Track>,
    /// (operator, endpoint id), one per uplink.
    pub subflows: Vec<(String, u8)>,
    pub ctl: controller::Config,
    pub gps_period: Time,
    /// `None`: decide at fixes only.
    pub tick: Option<Duration>,
    pub stale: Duration,
    pub max_offset_m: f64,
    pub max_speed_mps: f64,
    pub min_interval_s: f64,
    pub retry: Duration,
    pub max_retries: Option<u32>,
    /// `slow_start_after_idle = "off"`: turn `net.ipv4.tcp_slow_start_after_idle` off in this
    /// namespace while PHA-D runs (restored after); `"leave"` (default): only remind.
    pub idle_restart_off: bool,
    /// `peer_metrics`: the server proxy's metrics endpoint (phad/peer.rs), with per subflow the
    /// address the server sees for it when NAT rewrites it (`peer_address`; else the endpoint's).
    pub peer: Option<PeerConfig>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct PeerConfig {
    pub settings: PeerSettings,
    pub seen_as: Vec<Option<std::net::IpAddr>>,
}

fn num(field: &str, v: Option<f64>, lo: f64, hi: f64, lo_open: bool, default: f64) -> Result<f64, String> {
    match v {
        None => Ok(default),
        Some(x) if x.is_finite() && x <= hi && (x > lo || (!lo_open && x == lo)) => Ok(x),
        Some(x) => Err(format!(
            "pha_d.{field}: {x} is out of range {}{lo}, {hi}]",
            if lo_open { "(" } else { "[" }
        )),
    }
}

/// Parses `[pha_d]` (a TOML table) and loads its table and track. Errors: `field: why`, or the
/// files' own `FILE: line N: field = value: why`.
pub fn parse(v: toml::Value, base: &Path) -> Result<(PhaDSettings, Table), String> {
    let r: Raw = v
        .try_into()
        .map_err(|e: toml::de::Error| format!("pha_d: {}", e.to_string().trim().replace('\n', " ")))?;
    let source = Source::parse(&r.gps, base).map_err(|e| format!("pha_d.gps: {e}"))?;
    let policy = match r.policy.as_deref() {
        None => Policy::QueueAware,
        Some(p) => Policy::parse(p).ok_or_else(|| format!("pha_d.policy: `{p}`: one of paper, queue-aware, resend"))?,
    };
    if r.subflows.is_empty() {
        return Err("pha_d.subflows: at least one { operator = \"A\", endpoint = 1 }".into());
    }
    let mut subflows = Vec::new();
    for (i, s) in r.subflows.iter().enumerate() {
        if s.operator.is_empty() || s.operator.contains(',') {
            return Err(format!(
                "pha_d.subflows[{i}].operator: `{}`: a non-empty name without commas, as in the handover table",
                s.operator
            ));
        }
        if !(1..=255).contains(&s.endpoint) {
            return Err(format!(
                "pha_d.subflows[{i}].endpoint: {} is out of range 1..=255 (an `ip mptcp endpoint` id)",
                s.endpoint
            ));
        }
        if subflows.iter().any(|(_, e)| *e == s.endpoint as u8) {
            return Err(format!("pha_d.subflows[{i}].endpoint: {} is listed twice", s.endpoint));
        }
        if let Some(j) = subflows.iter().position(|(o, _)| *o == s.operator) {
            // One handover table range per operator: two uplinks of one operator would be marked
            // backup together, and the table cannot tell their handovers apart.
            return Err(format!(
                "pha_d.subflows[{i}].operator: `{}` is also subflows[{j}]'s: one subflow per operator",
                s.operator
            ));
        }
        subflows.push((s.operator.clone(), s.endpoint as u8));
    }
    let mut seen_as = Vec::new();
    for (i, s) in r.subflows.iter().enumerate() {
        seen_as.push(match &s.peer_address {
            None => None,
            Some(a) => Some(a.parse::<std::net::IpAddr>().map_err(|_| format!("pha_d.subflows[{i}].peer_address: `{a}`: an IPv4 or IPv6 address (as the server proxy sees this uplink)"))?),
        });
    }
    if r.peer_metrics.is_none() {
        if let Some(i) = seen_as.iter().position(Option::is_some) {
            return Err(format!(
                "pha_d.subflows[{i}].peer_address: only used with peer_metrics, which is not set"
            ));
        }
    }
    let abs = |p: &PathBuf| if p.is_absolute() { p.clone() } else { base.join(p) };
    let table_file = abs(&r.table);
    let text = read_text(&table_file, MAX_DATA_FILE_BYTES)
        .map_err(|e| format!("pha_d.table: cannot read {}: {e}", table_file.display()))?;
    let table = Table::parse(&text, &table_file.display().to_string()).map_err(|e| e.join("\n"))?;
    for (i, (op, _)) in subflows.iter().enumerate() {
        if !table.operators.contains(op) {
            // PHA-D would never mark this subflow backup: a typo, or a table of another network.
            let known: Vec<&str> = table.operators.iter().map(String::as_str).collect();
            return Err(format!(
                "pha_d.subflows[{i}].operator: `{op}` has no row in the handover table {} (its operators: {})",
                table_file.display(),
                if known.is_empty() {
                    "none".to_string()
                } else {
                    known.join(", ")
                }
            ));
        }
    }
    let track = match &r.track {
        None if source.needs_track() => {
            return Err(
                "pha_d.track: missing: a lat,lon CSV of the line, needed to place the GPS fixes along it".into(),
            )
        }
        None => None,
        Some(p) => {
            let p = abs(p);
            let text = read_text(&p, MAX_DATA_FILE_BYTES)
                .map_err(|e| format!("pha_d.track: cannot read {}: {e}", p.display()))?;
            Some(Track::parse(&text, &p.display().to_string()).map_err(|e| e.join("\n"))?)
        }
    };
    let gps_period_ms = num("gps_period_ms", r.gps_period_ms, 0.0, 10000.0, true, 1000.0)?;
    let tick_ms = num("tick_ms", r.tick_ms, 0.0, 1000.0, false, 50.0)?;
    let max_retries = match r.max_retries {
        None => None,
        Some(m) if (0..=1_000_000).contains(&m) => Some(m as u32),
        Some(m) => return Err(format!("pha_d.max_retries: {m} is out of range 0..=1000000")),
    };
    let s = PhaDSettings {
        source,
        table_file,
        track,
        subflows,
        ctl: controller::Config {
            policy,
            lead_ms: num("lead_ms", r.lead_ms, 0.0, 10000.0, false, 0.0)?,
            resend_b0: r.resend_b0.unwrap_or(true),
        },
        gps_period: (gps_period_ms * NS_PER_MS as f64) as Time,
        tick: (tick_ms > 0.0).then(|| Duration::from_secs_f64(tick_ms / 1e3)),
        stale: Duration::from_secs_f64(num("stale_s", r.stale_s, 0.1, 60.0, false, 3.0)?),
        max_offset_m: num("max_offset_m", r.max_offset_m, 0.0, 10000.0, true, 50.0)?,
        max_speed_mps: num("max_speed_mps", r.max_speed_mps, 0.0, 1000.0, true, 150.0)?,
        min_interval_s: num("min_interval_ms", r.min_interval_ms, 0.0, 60000.0, false, 1000.0)? / 1e3,
        retry: Duration::from_secs_f64(num("retry_s", r.retry_s, 0.1, 600.0, false, 2.0)?),
        max_retries,
        idle_restart_off: match r.slow_start_after_idle.as_deref() {
            None | Some("leave") => false,
            Some("off") => true,
            Some(v) => return Err(format!("pha_d.slow_start_after_idle: `{v}`: one of leave, off")),
        },
        peer: match &r.peer_metrics {
            None => {
                if let Some(field) = [("peer_poll_ms", r.peer_poll_ms), ("peer_stale_ms", r.peer_stale_ms)]
                    .iter()
                    .find_map(|&(name, v)| v.map(|_| name))
                {
                    return Err(format!("pha_d.{field}: only used with peer_metrics, which is not set"));
                }
                None
            }
            Some(url) => {
                let (authority, path) = PeerSettings::parse_url(url).map_err(|e| format!("pha_d.peer_metrics: {e}"))?;
                let poll_ms = num("peer_poll_ms", r.peer_poll_ms, 10.0, 10000.0, false, 100.0)?;
                let stale_ms = num("peer_stale_ms", r.peer_stale_ms, 50.0, 60000.0, false, 1000.0)?;
                if stale_ms < poll_ms {
                    return Err(format!(
                        "pha_d.peer_stale_ms: {stale_ms} is below peer_poll_ms ({poll_ms}): every poll would be stale"
                    ));
                }
                Some(PeerConfig {
                    settings: PeerSettings {
                        authority,
                        path,
                        poll: Duration::from_secs_f64(poll_ms / 1e3),
                        stale: Duration::from_secs_f64(stale_ms / 1e3),
                    },
                    seen_as,
                })
            }
        },
    };
    Ok((s, table))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dir() -> PathBuf {
        let d = std::env::temp_dir().join(format!("phad-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(
            d.join("t.csv"),
            "operator,start_m,end_m,count\nA,100,120,1\nB,300,320,1\n",
        )
        .unwrap();
        std::fs::write(d.join("bad.csv"), "operator,start_m,end_m,count\nA,100,x,1\n").unwrap();
        std::fs::write(d.join("trk.csv"), "lat,lon\n37,127\n37,127.1\n").unwrap();
        d
    }

    fn cfg(extra: &str) -> Result<(PhaDSettings, Table), String> {
        let text = format!("gps = \"nmea-udp:127.0.0.1:10110\"\ntable = \"t.csv\"\ntrack = \"trk.csv\"\nsubflows = [{{ operator = \"A\", endpoint = 1 }}, {{ operator = \"B\", endpoint = 2 }}]\n{extra}");
        parse(toml::from_str(&text).unwrap(), &dir())
    }

    #[test]
    fn defaults_and_errors() {
        let (s, t) = cfg("").unwrap();
        assert_eq!(s.ctl.policy, Policy::QueueAware);
        assert!(s.ctl.resend_b0 && s.tick == Some(Duration::from_millis(50)) && s.stale == Duration::from_secs(3));
        assert_eq!(t.ranges["A"].len(), 1);
        assert!(!s.idle_restart_off && cfg("slow_start_after_idle = \"off\"").unwrap().0.idle_restart_off);
        assert!(s.peer.is_none());
        let p = cfg("peer_metrics = \"http://10.1.0.2:9464/metrics\"")
            .unwrap()
            .0
            .peer
            .unwrap();
        assert_eq!(
            (p.settings.authority.as_str(), p.settings.path.as_str()),
            ("10.1.0.2:9464", "/metrics")
        );
        assert_eq!(
            (p.settings.poll, p.settings.stale, p.seen_as),
            (Duration::from_millis(100), Duration::from_secs(1), vec![None, None])
        );
        for (extra, want) in [
            ("slow_start_after_idle = \"no\"", "pha_d.slow_start_after_idle"),
            ("policy = \"fast\"", "pha_d.policy"),
            ("lead_ms = -1.0", "pha_d.lead_ms: -1 is out of range [0, 10000]"),
            ("stale_s = 0.0", "pha_d.stale_s"),
            (
                "gps_period_ms = 0.0",
                "pha_d.gps_period_ms: 0 is out of range (0, 10000]",
            ),
            ("max_retries = -1", "pha_d.max_retries"),
            ("colour = 1", "pha_d: unknown field `colour`"),
            (
                "peer_metrics = \"https://x:1/\"",
                "pha_d.peer_metrics: `https://x:1/`: must start with http://",
            ),
            (
                "peer_metrics = \"http://x:1/\"\npeer_poll_ms = 5.0",
                "pha_d.peer_poll_ms: 5 is out of range [10, 10000]",
            ),
            (
                "peer_metrics = \"http://x:1/\"\npeer_poll_ms = 500.0\npeer_stale_ms = 200.0",
                "pha_d.peer_stale_ms: 200 is below peer_poll_ms",
            ),
            (
                "peer_stale_ms = 2000.0",
                "pha_d.peer_stale_ms: only used with peer_metrics",
            ),
            (
                "peer_poll_ms = 200.0",
                "pha_d.peer_poll_ms: only used with peer_metrics",
            ),
        ] {
            let e = cfg(extra).unwrap_err();
            assert!(e.starts_with(want), "{extra}: {e}");
        }
        let d = dir();
        let bad = |text: &str| parse(toml::from_str(text).unwrap(), &d).unwrap_err();
        assert!(bad("gps = \"nmea-udp:127.0.0.1:1\"\ntable = \"bad.csv\"\ntrack = \"trk.csv\"\nsubflows = [{ operator = \"A\", endpoint = 1 }]").contains("bad.csv: line 2: end_m = x"));
        assert!(bad(
            "gps = \"nmea-udp:127.0.0.1:1\"\ntable = \"t.csv\"\nsubflows = [{ operator = \"A\", endpoint = 1 }]"
        )
        .starts_with("pha_d.track: missing"));
        assert!(bad("gps = \"nmea-udp:127.0.0.1:1\"\ntable = \"t.csv\"\ntrack = \"trk.csv\"\nsubflows = [{ operator = \"A\", endpoint = 0 }]").starts_with("pha_d.subflows[0].endpoint: 0"));
        assert!(bad("gps = \"nmea-udp:127.0.0.1:1\"\ntable = \"t.csv\"\ntrack = \"trk.csv\"\nsubflows = [{ operator = \"A\", endpoint = 1 }, { operator = \"B\", endpoint = 1 }]").contains("listed twice"));
        assert!(bad("gps = \"nmea-udp:127.0.0.1:1\"\ntable = \"t.csv\"\ntrack = \"trk.csv\"\npeer_metrics = \"http://x:1/\"\nsubflows = [{ operator = \"A\", endpoint = 1, peer_address = \"10.1.0\" }]").starts_with("pha_d.subflows[0].peer_address: `10.1.0`"));
        assert!(bad("gps = \"nmea-udp:127.0.0.1:1\"\ntable = \"t.csv\"\ntrack = \"trk.csv\"\nsubflows = [{ operator = \"A\", endpoint = 1, peer_address = \"10.1.0.9\" }]").contains("only used with peer_metrics"));
        assert!(bad("gps = \"tcp:x\"\ntable = \"t.csv\"\ntrack = \"trk.csv\"\nsubflows = []").starts_with("pha_d.gps"));
        // An operator the table does not have; two subflows of one operator.
        let e = bad("gps = \"nmea-udp:127.0.0.1:1\"\ntable = \"t.csv\"\ntrack = \"trk.csv\"\nsubflows = [{ operator = \"A\", endpoint = 1 }, { operator = \"Z\", endpoint = 2 }]");
        assert!(
            e.starts_with("pha_d.subflows[1].operator: `Z` has no row in the handover table")
                && e.ends_with("(its operators: A, B)"),
            "{e}"
        );
        let e = bad("gps = \"nmea-udp:127.0.0.1:1\"\ntable = \"t.csv\"\ntrack = \"trk.csv\"\nsubflows = [{ operator = \"A\", endpoint = 1 }, { operator = \"A\", endpoint = 2 }]");
        assert_eq!(
            e,
            "pha_d.subflows[1].operator: `A` is also subflows[0]'s: one subflow per operator"
        );
        // Data files are read bounded: a device is refused at once.
        let e = bad("gps = \"nmea-udp:127.0.0.1:1\"\ntable = \"/dev/zero\"\ntrack = \"trk.csv\"\nsubflows = [{ operator = \"A\", endpoint = 1 }]");
        assert!(e.starts_with("pha_d.table: cannot read /dev/zero: is a device"), "{e}");
        // A replay needs no track.
        assert!(parse(
            toml::from_str(
                "gps = \"replay:r.csv\"\ntable = \"t.csv\"\nsubflows = [{ operator = \"A\", endpoint = 1 }]"
            )
            .unwrap(),
            &d
        )
        .is_ok());
    }
}
