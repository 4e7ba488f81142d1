//! Scenario files (TOML): nodes, links, paths (chains of links), flows, duration and seed.
//!
//! Loading reports *every* error it can find, each naming the field, the value and what is
//! allowed: unknown keys and type errors are collected per entry (each link, path and flow is
//! decoded on its own so one bad entry does not hide the next), then semantic checks (ranges,
//! references between entries, trace files) run over everything that decoded.
pub mod bounds;
pub mod budget;

use crate::capture::config::PcapSelect;
use crate::cell::{CellConfig, CellSpec};
use crate::element::ElementSpec;
use crate::error::{ConfigError, Errors};
use crate::handoff::{FlowHandoffConfig, HandoffConfig, HandoffPattern, HandoffScheme};
use crate::hst::phad::PhaDConfig;
use crate::hst::scenario::HstScenario;
use crate::hst::wrappers::split_wrapper;
use crate::link::config::{LinkConfig, LinkSpec};
use crate::mptcp::sched::SchedulerSpec;
use crate::radio::config::HandoverType;
pub use crate::tcp::bsd_timer::TimerProfile;
use crate::tcp::cc::CcKind;
use crate::tcp::rtt::RtoStyle;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::{Path, PathBuf};

/// A complete scenario.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ScenarioFile {
    /// Free-form name shown in reports.
    #[serde(default)]
    pub name: Option<String>,
    /// Free-form description.
    #[serde(default)]
    pub description: Option<String>,
    /// Seed from which every component's random stream is derived (`--seed` overrides it).
    #[serde(default = "default_seed")]
    pub seed: u64,
    /// Simulated time in seconds, in [0.001, 86400].
    pub duration_s: f64,
    /// Output options.
    #[serde(default)]
    pub output: OutputConfig,
    /// Named hosts; paths run from one node to another. Optional: when omitted, every path
    /// runs from `client` to `server`.
    #[serde(default)]
    pub nodes: Vec<NodeConfig>,
    /// Links; each has a forward (data) and a reverse (ACK) direction.
    pub links: Vec<LinkConfig>,
    /// Paths: chains of links from one node to another.
    pub paths: Vec<PathConfig>,
    /// Flows (connections) and their traffic.
    pub flows: Vec<FlowConfig>,
    /// A high-speed train whose handovers drive links (P0).
    #[serde(default)]
    pub hst: Option<HstScenario>,
    /// Handoffs of a mobile host behind a radio link (P3; `crate::handoff`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub handoffs: Vec<HandoffConfig>,
    /// LTE cells (P4): paths name a cell in `links` in place of the radio link of their UE.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub cells: Vec<CellConfig>,
}

/// The seed of a scenario that names none.
pub const DEFAULT_SEED: u64 = 1;

fn default_seed() -> u64 {
    DEFAULT_SEED
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutputConfig {
    /// Width of the time-series bins in milliseconds, in [1, 60000]; bins are aligned to t = 0.
    #[serde(default = "default_bin_ms")]
    pub bin_ms: f64,
    /// Summary metrics ignore the first `warmup_s` seconds (default 0).
    #[serde(default)]
    pub warmup_s: f64,
    /// Packet captures (`crate::capture`, docs/pcap.md): `true` for every link, or a list of
    /// link names; each direction goes to `OUT/pcap/<link>.<forward|reverse>.pcapng`.
    #[serde(default, skip_serializing_if = "PcapSelect::is_off")]
    pub pcap: PcapSelect,
    /// Bytes of each captured packet kept, in [80, 262144] (default 128; the original length
    /// is recorded).
    #[serde(
        default = "crate::capture::config::default_snaplen",
        skip_serializing_if = "crate::capture::config::is_default_snaplen"
    )]
    pub pcap_snaplen: u32,
    /// Limit on all capture files of a run together, in MB (10^6 bytes), in (0, 1000000]
    /// (default 100); capture stops there with a warning in the summary.
    #[serde(
        default = "crate::capture::config::default_max_mb",
        skip_serializing_if = "crate::capture::config::is_default_max_mb"
    )]
    pub pcap_max_mb: f64,
    /// Which time series are kept: `"auto"` (default: `"all"` up to
    /// [`AUTO_ALL_MAX_FLOWS`](crate::metrics::select::AUTO_ALL_MAX_FLOWS) flows, `"aggregate"`
    /// above), `"all"`, `"aggregate"` (the links' and the sum over all flows), `"none"`, or a
    /// list of flow names (those flows' and the links'). The summary is complete either way.
    #[serde(default, skip_serializing_if = "crate::metrics::select::SeriesSelect::is_auto")]
    pub series: crate::metrics::select::SeriesSelect,
}

impl Default for OutputConfig {
    fn default() -> Self {
        OutputConfig {
            bin_ms: default_bin_ms(),
            warmup_s: 0.0,
            pcap: PcapSelect::default(),
            pcap_snaplen: crate::capture::config::default_snaplen(),
            pcap_max_mb: crate::capture::config::default_max_mb(),
            series: Default::default(),
        }
    }
}

fn default_bin_ms() -> f64 {
    100.0
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct NodeConfig {
    pub name: String,
    /// Behaviour at this node for the paths that go through it (`via`); default: plain
    /// forwarding. Kinds: see `crate::element::ElementSpec`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub element: Option<ElementSpec>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PathConfig {
    pub name: String,
    /// Node where data enters the path (default `client`).
    #[serde(default = "default_from")]
    pub from: String,
    /// Node where data leaves the path (default `server`).
    #[serde(default = "default_to")]
    pub to: String,
    /// Link names in order from `from` to `to`; data uses their forward directions and ACKs
    /// their reverse directions (in the opposite order).
    pub links: Vec<String>,
    /// The nodes between consecutive links (one fewer than `links`), so that their elements act
    /// on this path's packets; empty (default): plain forwarding everywhere.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub via: Vec<String>,
}

fn default_from() -> String {
    "client".into()
}
fn default_to() -> String {
    "server".into()
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct FlowConfig {
    pub name: String,
    /// Single-path TCP: the path the data travels (the sender sits at the path's `from` node).
    /// Give exactly one of `path` and `paths`.
    #[serde(default)]
    pub path: Option<String>,
    /// Multipath TCP: one subflow per path, in this order (subflow 0 is the initial subflow).
    #[serde(default)]
    pub paths: Option<Vec<String>>,
    /// Congestion control: tahoe, reno, newreno, cubic, bbr, vegas; for MPTCP also the coupled
    /// lia, olia, balia, wvegas (a single-path name means uncoupled, one instance per subflow).
    pub cc: String,
    /// MPTCP packet scheduler: a name (`"minrtt"`) or a table with parameters
    /// (`{ name = "roundrobin", num_segments = 3 }`). Default `minrtt`.
    #[serde(default)]
    pub scheduler: Option<SchedulerSpec>,
    /// MPTCP connection options.
    #[serde(default)]
    pub mptcp: Option<MptcpOptions>,
    /// When the sender starts, in seconds.
    #[serde(default)]
    pub start_s: f64,
    /// When the application stops writing (bulk/cbr), in seconds; default: never.
    #[serde(default)]
    pub stop_s: Option<f64>,
    pub traffic: Traffic,
    #[serde(default)]
    pub tcp: TcpOptions,
    #[serde(default)]
    pub receiver: ReceiverOptions,
    /// How this single-path flow's mobile host reacts to the handoffs on its path (P3; default:
    /// no scheme).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub handoff: Option<FlowHandoffConfig>,
}

/// Connection-level options of an MPTCP flow.
#[derive(Clone, Debug, Default, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MptcpOptions {
    /// Connection-level receive buffer shared by all subflows, in bytes (default 6 MiB).
    #[serde(default)]
    pub rcv_buf_bytes: Option<u64>,
    /// The same in packets of one MSS each (P1 uses 500). Give at most one of the two.
    #[serde(default)]
    pub rcv_buf_packets: Option<u64>,
    /// P1's receiver-based loss recovery (retransmission requests on the fastest path).
    #[serde(default)]
    pub receiver_recovery: bool,
    /// MP_JOIN B flag per subflow (true = backup), in `paths` order; missing entries are false.
    #[serde(default)]
    pub backup: Vec<bool>,
    /// Delay before the join handshakes of the additional subflows start, in ms (default 0).
    #[serde(default)]
    pub join_delay_ms: f64,
    /// MP_PRIO sent by the data receiver at chosen times (once, on a pure ACK; may be lost).
    #[serde(default)]
    pub mp_prio: Vec<MpPrioEvent>,
    /// PHA-D: the receiver marks subflows backup around predicted handovers (needs `[hst]`
    /// with a `table`).
    #[serde(default)]
    pub pha_d: Option<PhaDConfig>,
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct MpPrioEvent {
    pub at_s: f64,
    /// Subflow index (position in `paths`).
    pub subflow: usize,
    /// B flag: true = backup, false = regular.
    pub backup: bool,
}

/// What the sending application does.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum Traffic {
    /// Always has data to send. (A struct variant so that unknown keys are refused.)
    Bulk {},
    /// Sends `bytes` and stops; the flow completion time is recorded.
    File { bytes: u64 },
    /// Writes at a constant bit rate (application-limited), in MSS-sized chunks.
    Cbr { rate_mbps: f64 },
    /// A split-connection relay (an MPTCP router or proxy, P2): this flow sends what flow `from`
    /// delivers at the node where `from` ends and this flow starts. At most `buffer_bytes` (in
    /// [1, 1073741824], default 4194304 = Linux's largest default send buffer, `tcp_wmem`) are
    /// read from `from` and not yet acknowledged on this flow; when that is full the relay stops
    /// reading, so `from`'s receive window closes (back-pressure).
    Relay {
        from: String,
        #[serde(default = "d_relay_buffer")]
        buffer_bytes: u64,
    },
}

fn d_relay_buffer() -> u64 {
    4 * 1024 * 1024
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TcpOptions {
    /// Payload bytes per segment, in [64, 9000]; packets are 52 bytes larger.
    #[serde(default = "d_mss")]
    pub mss_bytes: u32,
    /// Initial window in segments, in [1, 1000] (Linux: 10, RFC 6928).
    #[serde(default = "d_iw")]
    pub initial_cwnd: u32,
    /// Selective acknowledgements (RFC 2018/6675); on by default like Linux.
    #[serde(default = "d_true")]
    pub sack: bool,
    /// Minimum RTO in ms, in [1, 60000] (Linux 200, RFC 6298 1000).
    #[serde(default = "d_min_rto")]
    pub min_rto_ms: f64,
    /// RTO before the first RTT sample, in ms, in [1, 60000] (RFC 6298: 1000).
    #[serde(default = "d_init_rto")]
    pub initial_rto_ms: f64,
    /// "linux" (RTO = SRTT + max(4·RTTVAR, min_rto)) or "rfc6298".
    #[serde(default = "d_rto_style")]
    pub rto_style: RtoStyle,
    /// Congestion-window restart after an idle period longer than the RTO (RFC 5681 §4.1;
    /// Linux `net.ipv4.tcp_slow_start_after_idle`, default on).
    #[serde(default = "d_true")]
    pub slow_start_after_idle: bool,
    /// RACK time-based loss detection (RFC 8985; Linux `net.ipv4.tcp_recovery` = 1). Uses SACK:
    /// default on with `sack`, off without; `true` with `sack = false` is an error.
    #[serde(default)]
    pub rack: Option<bool>,
    /// Tail loss probe (RFC 8985 §7; Linux `net.ipv4.tcp_early_retrans` = 3). Uses SACK: default
    /// on with `sack`, off without; `true` with `sack = false` is an error.
    #[serde(default)]
    pub tlp: Option<bool>,
    /// F-RTO detection of spurious retransmission timeouts (RFC 5682; Linux `net.ipv4.tcp_frto`
    /// = 2, default on).
    #[serde(default = "d_true")]
    pub frto: bool,
    /// Undo of window reductions shown spurious by timestamps (Eifel, RFC 3522; Linux
    /// `tcp_try_undo_*`, always on there).
    #[serde(default = "d_true")]
    pub undo: bool,
    /// DSACK (RFC 2883): the receiver reports duplicate segments, and the sender undoes a window
    /// reduction once every retransmission of the episode was reported duplicate (RFC 3708;
    /// Linux `net.ipv4.tcp_dsack` = 1, `tcp_try_undo_dsack`). Default: on with `sack`, off
    /// without; `true` with `sack = false` is an error.
    #[serde(default)]
    pub dsack: Option<bool>,
    /// TSO/GSO-like send quantum: a paced sender (BBR) releases bursts of about 1 ms of data, at
    /// least 2 segments above 1.2 Mbit/s (Linux `bbr_tso_segs_goal`, `sk_pacing_shift` = 10);
    /// on by default, as TSO/GSO in Linux.
    #[serde(default = "d_true")]
    pub tso: bool,
    /// Slow-start threshold of tahoe/reno/newreno on a loss: `"cwnd"` (default, Linux
    /// `tcp_reno_ssthresh`: cwnd / 2) or `"flight"` (ns-3 `TcpNewReno::GetSsThresh`: the RFC 6675
    /// pipe at the loss / 2, a documented deviation from Linux for matching ns-3 runs). Other
    /// algorithms ignore it (ns-3's CUBIC also reduces from cwnd).
    #[serde(default)]
    pub reno_ssthresh: RenoSsthresh,
    /// Window growth of tahoe/reno/newreno per ACK: `"per-segment"` (default, Linux
    /// `tcp_reno_cong_avoid`: slow start +1 per segment ACKed, congestion avoidance +1 per cwnd
    /// segments ACKed) or `"per-ack"` (ns-3 `TcpNewReno::SlowStart`/`CongestionAvoidance`: +1
    /// segment, or +1/cwnd, per ACK however many segments it acknowledges; with delayed ACKs half
    /// Linux's growth). A documented deviation from Linux for matching ns-3 runs.
    #[serde(default)]
    pub reno_increase: RenoIncrease,
    /// Grow cwnd only while it limits sending (default, Linux `tcp_is_cwnd_limited`, RFC 7661
    /// spirit). `false` grows it on every ACK even when the receive window or the application
    /// limits the flight, as ns-3's `TcpNewReno` does, and ns-3's `TcpCubic` did before ns-3.42
    /// (commit f75345fa0, 2024-05): a documented deviation from Linux for matching ns-3 runs.
    #[serde(default = "d_true")]
    pub cwnd_validation: bool,
    /// The retransmission timer: `"linux"` (default: `rto_style`, `min_rto_ms`,
    /// `initial_rto_ms`) or `"bsd"` (4.4BSD: 500 ms ticks, RTO from Jacobson's estimator in
    /// ticks within [1 s, 64 s], 6 s before the first sample, doubling per timeout; the
    /// receiver's delayed ACKs leave on a 200 ms timer, no quick-ACK mode). `"bsd"` ignores the
    /// three RTO options.
    #[serde(default)]
    pub timer: TimerProfile,
}

/// How tahoe/reno/newreno count an ACK for window growth (`[flows.tcp] reno_increase`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RenoIncrease {
    /// Linux (net/ipv4/tcp_cong.c `tcp_slow_start`, `tcp_cong_avoid_ai`): by segments ACKed.
    #[default]
    PerSegment,
    /// ns-3 (src/internet/model/tcp-congestion-ops.cc): once per ACK.
    PerAck,
}

/// What tahoe/reno/newreno halve on a loss (`[flows.tcp] reno_ssthresh`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Deserialize, Serialize, JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RenoSsthresh {
    /// Linux `tcp_reno_ssthresh` (net/ipv4/tcp_cong.c): `max(cwnd / 2, 2)`.
    #[default]
    Cwnd,
    /// ns-3 `TcpNewReno::GetSsThresh` (src/internet/model/tcp-congestion-ops.cc):
    /// `max(BytesInFlight / 2, 2 segments)`, BytesInFlight being the RFC 6675 pipe after the ACK
    /// that starts recovery (`TcpSocketBase::EnterRecovery`) or before the RTO marks everything lost
    /// (`TcpSocketBase::ReTxTimeout`).
    Flight,
}

impl Default for TcpOptions {
    fn default() -> Self {
        TcpOptions {
            mss_bytes: d_mss(),
            initial_cwnd: d_iw(),
            sack: true,
            min_rto_ms: d_min_rto(),
            initial_rto_ms: d_init_rto(),
            rto_style: d_rto_style(),
            slow_start_after_idle: true,
            rack: None,
            tlp: None,
            frto: true,
            undo: true,
            dsack: None,
            tso: true,
            reno_ssthresh: RenoSsthresh::Cwnd,
            reno_increase: RenoIncrease::PerSegment,
            cwnd_validation: true,
            timer: TimerProfile::Linux,
        }
    }
}

fn d_mss() -> u32 {
    1448
}
fn d_iw() -> u32 {
    10
}
fn d_true() -> bool {
    true
}
fn d_min_rto() -> f64 {
    200.0
}
fn d_init_rto() -> f64 {
    1000.0
}
fn d_rto_style() -> RtoStyle {
    RtoStyle::Linux
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReceiverOptions {
    /// Receive buffer in bytes, in [2·MSS, 1 GiB] (Linux tcp_rmem max default: 6 MiB).
    #[serde(default = "d_rcvbuf")]
    pub rcv_buf_bytes: u64,
    /// Delayed ACKs (every second segment or after `delack_ms`); on by default.
    #[serde(default = "d_true")]
    pub delayed_ack: bool,
    /// Delayed-ACK timeout in ms, in [1, 500] (Linux minimum: 40).
    #[serde(default = "d_delack")]
    pub delack_ms: f64,
    /// Intervals in which the receiving application does not read (the window closes).
    #[serde(default)]
    pub read_pauses: Vec<ReadPause>,
    /// Linux's ACK deferral while unread data holds the window edge back, the ACK going out when
    /// the application reads (`__tcp_ack_snd_check`, `tcp_cleanup_rbuf`); on by default.
    #[serde(default = "d_true")]
    pub ack_on_read: bool,
    /// With `ack_on_read`: the application's read latency in µs, in [0, 1000000]; 0 = it reads at
    /// the end of the instant the data arrived in (after a same-instant burst).
    #[serde(default)]
    pub read_delay_us: f64,
    /// Receive-buffer auto-tuning of the window clamp (Linux `tcp_rcv_space_adjust`); off by
    /// default (Linux has it on; see `crates/sim/src/tcp/receiver.rs` for why).
    #[serde(default)]
    pub autotune: bool,
}

impl Default for ReceiverOptions {
    fn default() -> Self {
        ReceiverOptions {
            rcv_buf_bytes: d_rcvbuf(),
            delayed_ack: true,
            delack_ms: d_delack(),
            read_pauses: vec![],
            ack_on_read: true,
            read_delay_us: 0.0,
            autotune: false,
        }
    }
}

fn d_rcvbuf() -> u64 {
    6 * 1024 * 1024
}
fn d_delack() -> f64 {
    40.0
}

#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReadPause {
    pub start_s: f64,
    pub duration_s: f64,
}

/// Most cells of a train's radio map (8 bytes each, per operator and map): 2·10^7 ≈ 160 MB.
const MAX_MAP_CELLS: f64 = 2e7;

/// Shortest run: one millisecond (a run must span at least one event of every kind it has).
pub const MIN_DURATION_S: f64 = 0.001;

/// A loaded, checked scenario file: what the user wrote, with defaults. [`crate::plan::Plan`]
/// turns it into what a run executes.
#[derive(Clone, Debug)]
pub struct Scenario {
    pub file: ScenarioFile,
    pub seed: u64,
    /// Folder that relative trace paths are resolved against.
    pub base_dir: PathBuf,
    pub source_name: String,
    /// The links resolved while checking (traces read and parsed once), in `file.links` order.
    pub links: Vec<LinkSpec>,
    /// The cells resolved while checking, in `file.cells` order.
    pub cells: Vec<CellSpec>,
}

const TOP_KEYS: &[&str] = &[
    "name",
    "description",
    "seed",
    "duration_s",
    "output",
    "nodes",
    "links",
    "paths",
    "flows",
    "hst",
    "handoffs",
    "cells",
];

impl Scenario {
    /// Parses and checks scenario text. `file` names the source in errors; relative trace
    /// paths resolve against `base_dir`.
    pub fn load(text: &str, file: &str, base_dir: &Path) -> Result<Scenario, Vec<ConfigError>> {
        let value: toml::Table = match text.parse::<toml::Table>() {
            Ok(v) => v,
            Err(e) => {
                let msg = e.to_string().replace('\n', " ").trim().to_string();
                return Err(vec![ConfigError::new("", "", format!("not valid TOML: {msg}"))]);
            }
        };
        let mut errs = Errors::default();
        for k in value.keys() {
            if !TOP_KEYS.contains(&k.as_str()) {
                errs.push(ConfigError::new(
                    k.clone(),
                    "",
                    format!("unknown key; allowed: {}", TOP_KEYS.join(", ")),
                ));
            }
        }
        for required in ["duration_s", "links", "paths", "flows"] {
            if !value.contains_key(required) {
                errs.push(ConfigError::new(required, "", "missing (required)"));
            }
        }
        // Decode each part on its own so that every bad entry is reported.
        STAND_INS.with(|s| s.borrow_mut().clear());
        let seed = decode_opt::<u64>(&value, "seed", &mut errs).unwrap_or(1);
        let duration_s = decode_opt::<f64>(&value, "duration_s", &mut errs);
        let name = decode_opt::<String>(&value, "name", &mut errs);
        let description = decode_opt::<String>(&value, "description", &mut errs);
        let output = decode_opt::<OutputConfig>(&value, "output", &mut errs).unwrap_or_default();
        let nodes = decode_list::<NodeConfig>(&value, "nodes", &mut errs);
        let links = decode_list::<LinkConfig>(&value, "links", &mut errs);
        let paths = decode_list::<PathConfig>(&value, "paths", &mut errs);
        let flows = decode_list::<FlowConfig>(&value, "flows", &mut errs);
        let hst = decode_opt::<HstScenario>(&value, "hst", &mut errs);
        let handoffs = decode_list::<HandoffConfig>(&value, "handoffs", &mut errs);
        let cells = decode_list::<CellConfig>(&value, "cells", &mut errs);
        let decoded_all = errs.is_empty();
        let n_decode_errors = errs.0.len();
        let sf = ScenarioFile {
            name,
            description,
            seed,
            duration_s: duration_s.unwrap_or(f64::NAN),
            output,
            nodes,
            links,
            paths,
            flows,
            hst,
            handoffs,
            cells,
        };
        let n_flows_written = value.get("flows").and_then(|v| v.as_array()).map_or(0, |a| a.len());
        let raw = RawNames {
            links: raw_names(&value, "links"),
            paths: raw_names(&value, "paths"),
            cells: raw_names(&value, "cells"),
            n_flows_written,
        };
        let links = validate(&sf, &raw, base_dir, duration_s.is_some(), &mut errs);
        inert_fields(&value, &sf, &mut errs);
        let cells: Vec<Option<CellSpec>> = sf
            .cells
            .iter()
            .enumerate()
            .map(|(i, c)| c.resolve(&format!("cells[{i}]"), base_dir, sf.duration_s, &mut errs))
            .collect();
        if !errs.is_empty() || !decoded_all {
            // A field that held a stand-in (its type error is reported) has no other errors.
            let stand_ins = STAND_INS.with(|s| std::mem::take(&mut *s.borrow_mut()));
            let under = |f: &str| {
                stand_ins.iter().any(|p| {
                    f.strip_prefix(p.as_str())
                        .is_some_and(|rest| rest.is_empty() || rest.starts_with(['.', '[']))
                })
            };
            let mut i = 0;
            errs.0.retain(|e| {
                i += 1;
                i <= n_decode_errors || !under(&e.field)
            });
            return Err(errs.0);
        }
        let links = links
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| vec![ConfigError::new("links", "", "a link could not be resolved")])?;
        let cells = cells
            .into_iter()
            .collect::<Option<Vec<_>>>()
            .ok_or_else(|| vec![ConfigError::new("cells", "", "a cell could not be resolved")])?;
        Ok(Scenario {
            seed: sf.seed,
            file: sf,
            base_dir: base_dir.to_path_buf(),
            source_name: file.to_string(),
            links,
            cells,
        })
    }
}

fn decode_opt<T: serde::de::DeserializeOwned + Serialize>(t: &toml::Table, key: &str, errs: &mut Errors) -> Option<T> {
    let v = t.get(key)?;
    decode_value(v.clone(), key, errs)
}

/// Decodes one entry, reporting its errors under `field`. An unknown key is reported and then
/// removed so that decoding continues and the entry's other problems are reported too.
fn decode_value<T: serde::de::DeserializeOwned + Serialize>(
    mut v: toml::Value,
    field: &str,
    errs: &mut Errors,
) -> Option<T> {
    let mut last_stand_in: Option<(String, usize)> = None;
    for _ in 0..64 {
        let shown = short_value(&v);
        match serde_path_to_error::deserialize::<_, T>(v.clone()) {
            Ok(x) => {
                // serde accepts a struct from an array (positionally): `receiver = []` would run
                // with the defaults. Where the decoded value is a table, the input must be one.
                let n0 = errs.0.len();
                if let Ok(back) = toml::Value::try_from(&x) {
                    shape_errors(&v, &back, field, errs);
                }
                return (errs.0.len() == n0).then_some(x);
            }
            Err(e) => {
                let inner = e.path().to_string();
                let path = if inner == "." || inner.is_empty() {
                    field.to_string()
                } else {
                    format!("{field}.{inner}")
                };
                let full = e.inner().to_string();
                let msg = full.lines().next().unwrap_or("").trim().to_string();
                let unknown = msg.starts_with("unknown field");
                let value = if unknown || msg.contains("missing field") {
                    String::new()
                } else {
                    value_at(&v, e.path()).unwrap_or(shown)
                };
                // Inside a tagged enum (`traffic = { kind = ..., typo = 1 }`) the path stops at the
                // enum's table: name the key and remove it there, not the whole table (which
                // would add a wrong "missing field" error).
                let key = unknown.then(|| msg.split('`').nth(1)).flatten().map(str::to_string);
                if let Some(k) = key
                    .as_ref()
                    .filter(|k| table_at_mut(&mut v, e.path()).is_some_and(|t| t.contains_key(k.as_str())))
                {
                    errs.push(ConfigError::new(format!("{path}.{k}"), value, msg));
                    table_at_mut(&mut v, e.path()).expect("checked").remove(k.as_str());
                    continue;
                }
                // Decoding goes on with a stand-in value so the entry's other fields are checked
                // too; errors about the stand-in itself are not reported.
                let attempt = match &last_stand_in {
                    Some((p, n)) if *p == path => n + 1,
                    _ => 0,
                };
                if attempt == 0 {
                    errs.push(ConfigError::new(path.clone(), value, msg.clone()));
                }
                if !unknown && !segments(e.path()).is_empty() && stand_in(&mut v, e.path(), &msg, attempt) {
                    if attempt == 0 {
                        STAND_INS.with(|s| s.borrow_mut().push(path.clone()));
                    }
                    last_stand_in = Some((path, attempt));
                    continue;
                }
                if attempt > 0 {
                    return None;
                }
                if !(unknown && remove_at(&mut v, e.path())) {
                    return None;
                }
            }
        }
    }
    None
}

thread_local! {
    /// Fields given a stand-in value while decoding (see [`stand_in`]): their type error is
    /// reported, any later error about them is not.
    static STAND_INS: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Replaces the value that failed to decode at `path` with one that decodes, so that a type error
/// does not hide the entry's other errors: the closest name for an unknown variant (a typo in a
/// `kind` or `model`), else candidate `attempt` of 1, "", false, [] and {} (the caller tries the
/// next while the field still does not decode). False when there is none left.
fn stand_in(v: &mut toml::Value, path: &serde_path_to_error::Path, msg: &str, attempt: usize) -> bool {
    let segs = segments(path);
    let Some(cur) = value_at_mut(v, &segs) else {
        return false;
    };
    if let Some(rest) = msg.strip_prefix("unknown variant `") {
        let Some((bad, expected)) = rest.split_once('`') else {
            return false;
        };
        let names: Vec<&str> = expected.split('`').skip(1).step_by(2).collect();
        let Some(best) = names.iter().min_by_key(|n| edit_distance(bad, n)) else {
            return false;
        };
        let best = toml::Value::String(best.to_string());
        // An internally tagged enum reports the table; an externally tagged one the string.
        if cur.as_str() == Some(bad) {
            *cur = best;
            return true;
        }
        if let Some(t) = cur.as_table_mut() {
            if let Some(tag) = t.iter_mut().find(|(_, x)| x.as_str() == Some(bad)).map(|(_, x)| x) {
                *tag = best;
                return true;
            }
        }
        return false;
    }
    if !msg.starts_with("invalid type") && !msg.starts_with("invalid value") {
        return false;
    }
    const CANDIDATES: usize = 5;
    if attempt >= CANDIDATES {
        return false;
    }
    *cur = match attempt {
        0 => toml::Value::Integer(1),
        1 => toml::Value::String(String::new()),
        2 => toml::Value::Boolean(false),
        3 => toml::Value::Array(vec![]),
        _ => toml::Value::Table(toml::Table::new()),
    };
    true
}

fn value_at_mut<'a>(v: &'a mut toml::Value, segs: &[serde_path_to_error::Segment]) -> Option<&'a mut toml::Value> {
    use serde_path_to_error::Segment;
    let mut cur = v;
    for seg in segs {
        cur = match seg {
            Segment::Seq { index } => cur.as_array_mut()?.get_mut(*index)?,
            Segment::Map { key } => cur.as_table_mut()?.get_mut(key)?,
            _ => return None,
        };
    }
    Some(cur)
}

/// Levenshtein distance (for the closest variant name).
fn edit_distance(a: &str, b: &str) -> usize {
    let b: Vec<char> = b.chars().collect();
    let mut row: Vec<usize> = (0..=b.len()).collect();
    for (i, ca) in a.chars().enumerate() {
        let mut prev = row[0];
        row[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let cur = row[j + 1];
            row[j + 1] = (prev + usize::from(ca != *cb)).min(row[j] + 1).min(cur + 1);
            prev = cur;
        }
    }
    row[b.len()]
}

/// Reports every place where `input` has an array and the decoded value a table.
fn shape_errors(input: &toml::Value, decoded: &toml::Value, path: &str, errs: &mut Errors) {
    match (input, decoded) {
        (toml::Value::Array(a), toml::Value::Table(_)) => {
            errs.push(ConfigError::new(
                path,
                short_value(input),
                format!("must be a table ({{ ... }}), not an array of {} values", a.len()),
            ));
        }
        (toml::Value::Table(a), toml::Value::Table(b)) => {
            for (k, x) in a {
                if let Some(y) = b.get(k) {
                    shape_errors(x, y, &format!("{path}.{k}"), errs);
                }
            }
        }
        (toml::Value::Array(a), toml::Value::Array(b)) => {
            for (i, (x, y)) in a.iter().zip(b).enumerate() {
                shape_errors(x, y, &format!("{path}[{i}]"), errs);
            }
        }
        _ => {}
    }
}

fn segments(path: &serde_path_to_error::Path) -> Vec<serde_path_to_error::Segment> {
    path.iter().cloned().collect()
}

fn value_at(v: &toml::Value, path: &serde_path_to_error::Path) -> Option<String> {
    use serde_path_to_error::Segment;
    let mut cur = v;
    for seg in segments(path) {
        cur = match seg {
            Segment::Seq { index } => cur.as_array()?.get(index)?,
            Segment::Map { key } => cur.as_table()?.get(&key)?,
            _ => return None,
        };
    }
    Some(short_value(cur))
}

/// The table at `path` inside `v`, if there is one.
fn table_at_mut<'a>(v: &'a mut toml::Value, path: &serde_path_to_error::Path) -> Option<&'a mut toml::Table> {
    use serde_path_to_error::Segment;
    let mut cur = v;
    for seg in segments(path) {
        cur = match seg {
            Segment::Seq { index } => cur.as_array_mut()?.get_mut(index)?,
            Segment::Map { key } => cur.as_table_mut()?.get_mut(&key)?,
            _ => return None,
        };
    }
    cur.as_table_mut()
}

fn remove_at(v: &mut toml::Value, path: &serde_path_to_error::Path) -> bool {
    use serde_path_to_error::Segment;
    let segs = segments(path);
    let Some((last, parents)) = segs.split_last() else {
        return false;
    };
    let mut cur = v;
    for seg in parents {
        cur = match seg {
            Segment::Seq { index } => match cur.as_array_mut().and_then(|a| a.get_mut(*index)) {
                Some(x) => x,
                None => return false,
            },
            Segment::Map { key } => match cur.as_table_mut().and_then(|t| t.get_mut(key)) {
                Some(x) => x,
                None => return false,
            },
            _ => return false,
        };
    }
    match (last, cur.as_table_mut()) {
        (Segment::Map { key }, Some(t)) => t.remove(key).is_some(),
        _ => false,
    }
}

/// `name` of each entry of a top-level array, as written (even where the entry did not decode),
/// so references to an entry with another error are not reported as missing.
fn raw_names(t: &toml::Table, key: &str) -> Vec<String> {
    t.get(key)
        .and_then(|v| v.as_array())
        .map(|a| {
            a.iter()
                .filter_map(|e| e.get("name")?.as_str().map(String::from))
                .collect()
        })
        .unwrap_or_default()
}

fn decode_list<T: serde::de::DeserializeOwned + Serialize>(t: &toml::Table, key: &str, errs: &mut Errors) -> Vec<T> {
    let Some(v) = t.get(key) else { return vec![] };
    let Some(arr) = v.as_array() else {
        errs.push(ConfigError::new(
            key,
            short_value(v),
            "must be an array of tables ([[...]])",
        ));
        return vec![];
    };
    arr.iter()
        .enumerate()
        .filter_map(|(i, item)| decode_value(item.clone(), &format!("{key}[{i}]"), errs))
        .collect()
}

fn short_value(v: &toml::Value) -> String {
    match v {
        toml::Value::Table(_) => "{...}".into(),
        toml::Value::Array(_) => "[...]".into(),
        other => {
            // Cut on a character boundary (a value may be any UTF-8 text).
            let s = other.to_string();
            if s.chars().count() > 60 {
                format!("{}...", s.chars().take(57).collect::<String>())
            } else {
                s
            }
        }
    }
}

struct RawNames {
    links: Vec<String>,
    paths: Vec<String>,
    /// Cells, which paths name in `links` like links.
    cells: Vec<String>,
    n_flows_written: usize,
}

/// Checks everything that decoded and returns each link resolved (`None` where it has errors).
fn validate(
    sf: &ScenarioFile,
    raw: &RawNames,
    base_dir: &Path,
    has_duration: bool,
    errs: &mut Errors,
) -> Vec<Option<LinkSpec>> {
    if has_duration {
        errs.check(
            sf.duration_s.is_finite() && sf.duration_s >= MIN_DURATION_S && sf.duration_s <= 86400.0,
            "duration_s",
            crate::error::fmt_num(sf.duration_s),
            "must be in [0.001, 86400] seconds",
        );
    }
    if sf.name.as_deref().is_some_and(|n| n.trim().is_empty()) {
        errs.push(ConfigError::new(
            "name",
            "\"\"",
            "must not be empty (leave it out to name the run after its file)",
        ));
    }
    errs.range("output.bin_ms", sf.output.bin_ms, 1.0, 60000.0);
    let o = &sf.output;
    crate::capture::config::check(&o.pcap, o.pcap_snaplen, o.pcap_max_mb, &raw.links, errs);
    let flow_names: Vec<String> = sf.flows.iter().map(|f| f.name.clone()).collect();
    crate::metrics::select::check(&o.series, &flow_names, errs);
    // Checks that depend on the duration only apply once the duration itself is valid.
    let dur = if sf.duration_s.is_finite() && (MIN_DURATION_S..=86400.0).contains(&sf.duration_s) {
        sf.duration_s
    } else {
        f64::INFINITY
    };
    if !(sf.output.warmup_s >= 0.0 && sf.output.warmup_s < dur) {
        errs.push(ConfigError::new(
            "output.warmup_s",
            crate::error::fmt_num(sf.output.warmup_s),
            "must be in [0, duration_s)",
        ));
    }

    let mut node_names: HashSet<&str> = HashSet::new();
    for (i, n) in sf.nodes.iter().enumerate() {
        if !node_names.insert(&n.name) {
            errs.push(ConfigError::new(
                format!("nodes[{i}].name"),
                &n.name,
                "duplicate node name",
            ));
        }
        errs.check(
            !n.name.trim().is_empty(),
            format!("nodes[{i}].name"),
            &n.name,
            "must not be empty",
        );
        if let Some(e) = &n.element {
            e.check(&format!("nodes[{i}].element"), errs);
        }
    }
    let mut link_names: HashSet<&str> = HashSet::new();
    let mut specs = Vec::with_capacity(sf.links.len());
    for (i, l) in sf.links.iter().enumerate() {
        if !link_names.insert(&l.name) {
            errs.push(ConfigError::new(
                format!("links[{i}].name"),
                &l.name,
                "duplicate link name",
            ));
        }
        specs.push(l.resolve(&format!("links[{i}]"), base_dir, errs));
        for (j, o) in l.outages.iter().enumerate() {
            if o.start_s.is_finite() && o.start_s >= dur {
                errs.push(ConfigError::new(
                    format!("links[{i}].outages[{j}].start_s"),
                    crate::error::fmt_num(o.start_s),
                    format!(
                        "must be before the run ends (duration_s = {})",
                        crate::error::fmt_num(dur)
                    ),
                ));
            }
        }
    }
    let mut path_names: HashSet<&str> = HashSet::new();
    for (i, p) in sf.paths.iter().enumerate() {
        if !path_names.insert(&p.name) {
            errs.push(ConfigError::new(
                format!("paths[{i}].name"),
                &p.name,
                "duplicate path name",
            ));
        }
        errs.check(
            !p.name.trim().is_empty(),
            format!("paths[{i}].name"),
            "\"\"",
            "must not be empty",
        );
        if p.links.is_empty() {
            errs.push(ConfigError::new(
                format!("paths[{i}].links"),
                "[]",
                "must name at least one link",
            ));
        }
        for (j, l) in p.links.iter().enumerate() {
            if !raw.links.contains(l) && !raw.cells.contains(l) {
                let cells = if raw.cells.is_empty() {
                    String::new()
                } else {
                    format!("; cells: {}", list(raw.cells.iter()))
                };
                errs.push(ConfigError::new(
                    format!("paths[{i}].links[{j}]"),
                    l,
                    format!("no link with this name; defined: {}{cells}", list(raw.links.iter())),
                ));
            }
        }
        if !sf.nodes.is_empty() {
            for (field, n) in [("from", &p.from), ("to", &p.to)] {
                // A cell's UEs are nodes too.
                if !node_names.contains(n.as_str()) && !sf.cells.iter().any(|c| c.ues.iter().any(|u| &u.name == n)) {
                    errs.push(ConfigError::new(
                        format!("paths[{i}].{field}"),
                        n,
                        format!(
                            "no node with this name; defined: {}",
                            list(sf.nodes.iter().map(|n| &n.name))
                        ),
                    ));
                }
            }
        }
        if p.from == p.to {
            errs.push(ConfigError::new(
                format!("paths[{i}].to"),
                &p.to,
                "must differ from `from`",
            ));
        }
        if !p.via.is_empty() && p.via.len() + 1 != p.links.len() {
            let msg = format!(
                "must name the {} node(s) between the path's {} links, or be left out",
                p.links.len().saturating_sub(1),
                p.links.len()
            );
            errs.push(ConfigError::new(format!("paths[{i}].via"), p.via.len(), msg));
        }
        for (j, n) in p.via.iter().enumerate() {
            if !node_names.contains(n.as_str()) {
                errs.push(ConfigError::new(
                    format!("paths[{i}].via[{j}]"),
                    n,
                    format!(
                        "no node with this name; defined: {}",
                        list(sf.nodes.iter().map(|n| &n.name))
                    ),
                ));
            } else if *n == p.from || *n == p.to {
                errs.push(ConfigError::new(
                    format!("paths[{i}].via[{j}]"),
                    n,
                    "must not be the path's `from` or `to` node",
                ));
            }
        }
    }
    if let Some(h) = &sf.hst {
        h.validate(&raw.links, base_dir, errs);
        // The radio map covers the track from 0 to where the ride can end, one cell per grid_m.
        let top_kmh = h
            .train
            .speed_profile
            .iter()
            .map(|s| s.speed_kmh)
            .fold(h.train.speed_kmh, f64::max);
        let reach_m = h.train.start_m + top_kmh / 3.6 * dur.min(86400.0);
        let cells = reach_m / h.radio.shadowing.grid_m;
        if reach_m.is_finite() && cells.is_finite() && cells > MAX_MAP_CELLS {
            let msg = format!(
                "the ride reaches {:.0} km along the track: {cells:.3e} radio-map cells of shadowing.grid_m = {} m, at most {MAX_MAP_CELLS:e} (start nearer 0, shorten the run or raise grid_m)",
                reach_m / 1000.0,
                crate::error::fmt_num(h.radio.shadowing.grid_m)
            );
            errs.push(ConfigError::new(
                "hst.train.start_m",
                crate::error::fmt_num(h.train.start_m),
                msg,
            ));
        }
        for l in &h.links {
            if sf.links.iter().any(|c| &c.name == l && !c.outages.is_empty()) {
                errs.push(ConfigError::new(
                    "hst.links",
                    l,
                    "this link has its own `outages`; a link driven by the train's handovers cannot have both",
                ));
            }
        }
    }
    let train_links: Vec<String> = sf.hst.as_ref().map(|h| h.links.clone()).unwrap_or_default();
    for (i, h) in sf.handoffs.iter().enumerate() {
        let pre = format!("handoffs[{i}]");
        h.validate(&pre, &raw.links, &train_links, errs);
        // DAPS keeps the link delivering through a handover (source and target together); a
        // handoff scheme's model stops the link for the whole handover: it cannot carry both.
        let daps = sf
            .hst
            .as_ref()
            .is_some_and(|x| x.handover.kind == Some(HandoverType::Daps));
        if daps && matches!(h.pattern, HandoffPattern::Train {}) {
            errs.push(ConfigError::new(
                format!("{pre}.pattern.kind"),
                "train",
                "[hst.handover] type = \"daps\" keeps the link delivering through each handover, and a handoff \
                 scheme stops it for the whole handover: use type = \"hard\" or \"cho\", or no [[handoffs]] on this link",
            ));
        }
        if sf.handoffs[..i].iter().any(|o| o.link == h.link) {
            errs.push(ConfigError::new(
                format!("{pre}.link"),
                &h.link,
                "has handoffs already (one [[handoffs]] per link)",
            ));
        }
        if sf.links.iter().any(|l| l.name == h.link && !l.outages.is_empty()) {
            errs.push(ConfigError::new(
                format!("{pre}.link"),
                &h.link,
                "this link has its own `outages`; a link with handoffs cannot have both",
            ));
        }
    }
    if !sf.cells.is_empty() {
        let nodes: Vec<String> = sf.nodes.iter().map(|n| n.name.clone()).collect();
        crate::cell::config::check_references(&sf.cells, &raw.links, &nodes, &sf.paths, &sf.flows, errs);
        // UEs on the train take their CQIs from one of its operators.
        let operators: Vec<String> = sf
            .hst
            .as_ref()
            .map(|h| (0..h.radio.operators.len()).map(|i| h.operator_name(i)).collect())
            .unwrap_or_default();
        for (i, c) in sf.cells.iter().enumerate() {
            for (j, u) in c.ues.iter().enumerate() {
                let Some(op) = &u.cqi_train else { continue };
                let field = format!("cells[{i}].ues[{j}].cqi_train");
                if sf.hst.is_none() {
                    errs.push(ConfigError::new(field, op, "needs a train: the scenario has no [hst]"));
                } else if !operators.contains(op) {
                    errs.push(ConfigError::new(
                        field,
                        op,
                        format!("no train operator with this name; operators: {}", operators.join(", ")),
                    ));
                }
            }
        }
    }
    if raw.n_flows_written == 0 && !sf.paths.is_empty() {
        errs.push(ConfigError::new("flows", "[]", "at least one flow is required"));
    }
    let mut flow_names: HashSet<&str> = HashSet::new();
    for (i, f) in sf.flows.iter().enumerate() {
        let pre = format!("flows[{i}]");
        if !flow_names.insert(&f.name) {
            errs.push(ConfigError::new(format!("{pre}.name"), &f.name, "duplicate flow name"));
        }
        errs.check(
            !f.name.trim().is_empty(),
            format!("{pre}.name"),
            "\"\"",
            "must not be empty",
        );
        let mut check_path = |field: String, p: &String| {
            if !raw.paths.contains(p) {
                errs.push(ConfigError::new(
                    field,
                    p,
                    format!("no path with this name; defined: {}", list(raw.paths.iter())),
                ));
            }
        };
        match (&f.path, &f.paths) {
            (Some(p), None) => check_path(format!("{pre}.path"), p),
            (None, Some(ps)) => {
                for (j, p) in ps.iter().enumerate() {
                    check_path(format!("{pre}.paths[{j}]"), p);
                }
                if ps.is_empty() || ps.len() > 32 {
                    errs.push(ConfigError::new(
                        format!("{pre}.paths"),
                        ps.len(),
                        "must list between 1 and 32 paths",
                    ));
                }
            }
            (Some(_), Some(_)) => errs.push(ConfigError::new(
                format!("{pre}.paths"),
                "",
                "give either `path` (TCP) or `paths` (MPTCP), not both",
            )),
            (None, None) => errs.push(ConfigError::new(
                format!("{pre}.path"),
                "",
                "missing: give `path` (TCP) or `paths` (MPTCP)",
            )),
        }
        let multipath = f.paths.is_some();
        let kind = CcKind::from_name(&f.cc);
        if kind.is_none() || (kind.is_some_and(CcKind::coupled) && !multipath) {
            let allowed = if multipath {
                format!(
                    "{}, {}",
                    CcKind::single_path_names().join(", "),
                    CcKind::coupled_names().join(", ")
                )
            } else {
                CcKind::single_path_names().join(", ")
            };
            let hint = if kind.is_some() {
                " (coupled algorithms need an MPTCP flow: `paths = [...]`)"
            } else {
                ""
            };
            errs.push(ConfigError::new(
                format!("{pre}.cc"),
                &f.cc,
                format!("unknown congestion control; allowed: {allowed}{hint}"),
            ));
        }
        if !multipath {
            if f.scheduler.is_some() {
                errs.push(ConfigError::new(
                    format!("{pre}.scheduler"),
                    "",
                    "only MPTCP flows (`paths = [...]`) have a scheduler",
                ));
            }
            if f.mptcp.is_some() {
                errs.push(ConfigError::new(
                    format!("{pre}.mptcp"),
                    "",
                    "only MPTCP flows (`paths = [...]`) take mptcp options",
                ));
            }
        }
        if let Some(spec) = &f.scheduler {
            let (wrapper, inner) = split_wrapper(&spec.config());
            inner.validate(&format!("{pre}.scheduler"), errs);
            match wrapper {
                Some(w) if w.needs_table() && sf.hst.as_ref().and_then(|h| h.table.as_ref()).is_none() => {
                    errs.push(ConfigError::new(
                        format!("{pre}.scheduler"),
                        format!("{}({})", w.name(), inner.name),
                        "PHA needs a train with a handover table: set [hst] table = \"FILE.csv\"",
                    ));
                }
                Some(w) if sf.hst.is_none() => {
                    errs.push(ConfigError::new(
                        format!("{pre}.scheduler"),
                        format!("{}({})", w.name(), inner.name),
                        "needs a train: add an [hst] section",
                    ));
                }
                _ => {}
            }
        }
        if let Some(m) = &f.mptcp {
            let n = f.paths.as_ref().map_or(0, |p| p.len());
            if m.rcv_buf_bytes.is_some() && m.rcv_buf_packets.is_some() {
                errs.push(ConfigError::new(
                    format!("{pre}.mptcp.rcv_buf_packets"),
                    "",
                    "give at most one of rcv_buf_bytes and rcv_buf_packets",
                ));
            }
            if let Some(b) = m.rcv_buf_bytes {
                let min = 2 * f.tcp.mss_bytes as u64;
                errs.check(
                    b >= min && b <= 1 << 30,
                    format!("{pre}.mptcp.rcv_buf_bytes"),
                    b,
                    &format!("must be in [{min}, 1073741824]"),
                );
            }
            if let Some(p) = m.rcv_buf_packets {
                errs.check(
                    (2..=1_000_000).contains(&p),
                    format!("{pre}.mptcp.rcv_buf_packets"),
                    p,
                    "must be in [2, 1000000]",
                );
            }
            if m.backup.len() > n {
                errs.push(ConfigError::new(
                    format!("{pre}.mptcp.backup"),
                    m.backup.len(),
                    format!("has more entries than paths ({n})"),
                ));
            }
            errs.range(format!("{pre}.mptcp.join_delay_ms"), m.join_delay_ms, 0.0, 3_600_000.0);
            if let Some(p) = &m.pha_d {
                errs.range(format!("{pre}.mptcp.pha_d.lead_ms"), p.lead_ms, 0.0, 10_000.0);
                if sf.hst.as_ref().and_then(|h| h.table.as_ref()).is_none() {
                    errs.push(ConfigError::new(
                        format!("{pre}.mptcp.pha_d"),
                        "",
                        "PHA-D needs a train with a handover table: set [hst] table = \"FILE.csv\"",
                    ));
                }
            }
            for (j, e) in m.mp_prio.iter().enumerate() {
                errs.range(format!("{pre}.mptcp.mp_prio[{j}].at_s"), e.at_s, 0.0, dur);
                if e.subflow >= n {
                    errs.push(ConfigError::new(
                        format!("{pre}.mptcp.mp_prio[{j}].subflow"),
                        e.subflow,
                        format!("must be in [0, {}]", n.saturating_sub(1)),
                    ));
                }
            }
        }
        if !(f.start_s >= 0.0 && f.start_s < dur) {
            errs.push(ConfigError::new(
                format!("{pre}.start_s"),
                crate::error::fmt_num(f.start_s),
                "must be in [0, duration_s)",
            ));
        }
        if let Some(stop) = f.stop_s {
            if !(stop > f.start_s && stop.is_finite()) {
                errs.push(ConfigError::new(
                    format!("{pre}.stop_s"),
                    crate::error::fmt_num(stop),
                    "must be greater than start_s",
                ));
            }
        }
        match &f.traffic {
            Traffic::Bulk {} => {}
            Traffic::File { bytes } => errs.check(*bytes > 0, format!("{pre}.traffic.bytes"), bytes, "must be > 0"),
            Traffic::Cbr { rate_mbps } => {
                if !(rate_mbps.is_finite() && *rate_mbps > 0.0 && *rate_mbps <= 1e6) {
                    errs.push(ConfigError::new(
                        format!("{pre}.traffic.rate_mbps"),
                        crate::error::fmt_num(*rate_mbps),
                        "must be in (0, 1000000]",
                    ));
                }
            }
            Traffic::Relay { from, buffer_bytes } => {
                errs.check(
                    (1..=1 << 30).contains(buffer_bytes),
                    format!("{pre}.traffic.buffer_bytes"),
                    buffer_bytes,
                    "must be in [1, 1073741824]",
                );
                match sf.flows.iter().position(|x| &x.name == from) {
                    None => errs.push(ConfigError::new(
                        format!("{pre}.traffic.from"),
                        from,
                        "no flow with this name",
                    )),
                    Some(j) if j == i => errs.push(ConfigError::new(
                        format!("{pre}.traffic.from"),
                        from,
                        "a flow cannot relay itself",
                    )),
                    Some(j) => {
                        let feeders = sf
                            .flows
                            .iter()
                            .filter(|x| matches!(&x.traffic, Traffic::Relay { from: g, .. } if g == from))
                            .count();
                        if feeders > 1 {
                            errs.push(ConfigError::new(
                                format!("{pre}.traffic.from"),
                                from,
                                "feeds another relay already (one relay per incoming flow)",
                            ));
                        }
                        // The relay sits where `from` ends and this flow starts.
                        let ends_at = |fl: &FlowConfig, end: bool| -> Vec<String> {
                            fl.path
                                .iter()
                                .chain(fl.paths.iter().flatten())
                                .filter_map(|p| sf.paths.iter().find(|x| &x.name == p))
                                .map(|p| if end { p.to.clone() } else { p.from.clone() })
                                .collect()
                        };
                        let (into, out) = (ends_at(&sf.flows[j], true), ends_at(f, false));
                        if let (Some(a), Some(b)) = (into.first(), out.first()) {
                            if into.iter().chain(out.iter()).any(|n| n != a) || a != b {
                                errs.push(ConfigError::new(format!("{pre}.traffic.from"), from, format!("the relay must sit where flow {from} ends and this flow starts: their paths end at {into:?} and start at {out:?}")));
                            }
                        }
                        // No cycle: following `from` must reach a flow with an application.
                        let mut seen = vec![i];
                        let mut k = j;
                        while let Traffic::Relay { from: g, .. } = &sf.flows[k].traffic {
                            if seen.contains(&k) {
                                errs.push(ConfigError::new(
                                    format!("{pre}.traffic.from"),
                                    from,
                                    "relays form a cycle: some flow in the chain must have its own traffic",
                                ));
                                break;
                            }
                            seen.push(k);
                            match sf.flows.iter().position(|x| &x.name == g) {
                                Some(n) => k = n,
                                None => break,
                            }
                        }
                    }
                }
            }
        }
        if let Some(h) = &f.handoff {
            h.validate(&format!("{pre}.handoff"), errs);
            if multipath && h.scheme != HandoffScheme::None {
                errs.push(ConfigError::new(
                    format!("{pre}.handoff"),
                    "",
                    "handoff schemes are for single-path TCP flows (`path = ...`)",
                ));
            }
            let crosses = f
                .path
                .as_ref()
                .and_then(|p| sf.paths.iter().find(|x| &x.name == p))
                .is_some_and(|p| sf.handoffs.iter().any(|h| p.links.contains(&h.link)));
            if h.scheme != HandoffScheme::None && f.path.is_some() && !crosses {
                errs.push(ConfigError::new(
                    format!("{pre}.handoff.scheme"),
                    "",
                    "the flow's path crosses no link with [[handoffs]]",
                ));
            }
        }
        let t = &f.tcp;
        errs.range(format!("{pre}.tcp.mss_bytes"), t.mss_bytes as f64, 64.0, 9000.0);
        // Every link on the flow's paths must be able to queue one of its packets.
        let packet = t.mss_bytes as i64 + crate::packet::HEADER_BYTES as i64;
        let flow_paths: Vec<&String> = f.path.iter().chain(f.paths.iter().flatten()).collect();
        for (li, l) in sf.links.iter().enumerate() {
            let on_path = sf
                .paths
                .iter()
                .any(|p| flow_paths.contains(&&p.name) && p.links.contains(&l.name));
            let queues = [
                (format!("links[{li}].queue_bytes"), l.queue_bytes),
                (
                    format!("links[{li}].reverse.queue_bytes"),
                    l.reverse.as_ref().and_then(|r| r.queue_bytes),
                ),
            ];
            for (field, q) in queues {
                if let Some(q) = q.filter(|&q| on_path && q < packet) {
                    errs.push(ConfigError::new(field, q, format!("smaller than one packet of flow {} ({packet} bytes: mss_bytes + {} header bytes); every packet would be dropped", f.name, crate::packet::HEADER_BYTES)));
                }
            }
            // A token bucket must hold one frame (packet + frame overhead) in its burst and its limit.
            let buckets = [
                (format!("links[{li}].token_bucket"), l.token_bucket.as_ref()),
                (
                    format!("links[{li}].reverse.token_bucket"),
                    l.reverse.as_ref().and_then(|r| r.token_bucket.as_ref()),
                ),
            ];
            for (field, tb) in buckets {
                let Some(tb) = tb.filter(|_| on_path) else { continue };
                let frame = packet + tb.frame_overhead_bytes;
                for (name, v) in [("burst_bytes", tb.burst_bytes), ("limit_bytes", tb.limit_bytes)] {
                    if v < frame {
                        errs.push(ConfigError::new(format!("{field}.{name}"), v, format!("smaller than one frame of flow {} ({frame} bytes: mss_bytes + {} header bytes + frame_overhead_bytes); every packet would be dropped", f.name, crate::packet::HEADER_BYTES)));
                    }
                }
            }
        }
        errs.range(format!("{pre}.tcp.initial_cwnd"), t.initial_cwnd as f64, 1.0, 1000.0);
        for (name, v) in [("rack", t.rack), ("tlp", t.tlp), ("dsack", t.dsack)] {
            if v == Some(true) && !t.sack {
                errs.push(ConfigError::new(format!("{pre}.tcp.{name}"), "true", "needs sack = true (RACK and TLP work on SACK information, as in Linux); remove it or set sack = true"));
            }
        }
        errs.range(format!("{pre}.tcp.min_rto_ms"), t.min_rto_ms, 1.0, 60000.0);
        errs.range(format!("{pre}.tcp.initial_rto_ms"), t.initial_rto_ms, 1.0, 60000.0);
        let r = &f.receiver;
        let min_buf = 2 * t.mss_bytes as u64;
        if !(r.rcv_buf_bytes >= min_buf && r.rcv_buf_bytes <= 1 << 30) {
            errs.push(ConfigError::new(
                format!("{pre}.receiver.rcv_buf_bytes"),
                r.rcv_buf_bytes,
                format!("must be in [{min_buf} (2·MSS), 1073741824]"),
            ));
        }
        errs.range(format!("{pre}.receiver.delack_ms"), r.delack_ms, 1.0, 500.0);
        errs.range(format!("{pre}.receiver.read_delay_us"), r.read_delay_us, 0.0, 1e6);
        for (j, p) in r.read_pauses.iter().enumerate() {
            errs.range(
                format!("{pre}.receiver.read_pauses[{j}].start_s"),
                p.start_s,
                0.0,
                86400.0,
            );
            if p.start_s.is_finite() && p.start_s >= dur {
                errs.push(ConfigError::new(
                    format!("{pre}.receiver.read_pauses[{j}].start_s"),
                    crate::error::fmt_num(p.start_s),
                    format!(
                        "must be before the run ends (duration_s = {})",
                        crate::error::fmt_num(dur)
                    ),
                ));
            }
            if !(p.duration_s.is_finite() && p.duration_s > 0.0) {
                errs.push(ConfigError::new(
                    format!("{pre}.receiver.read_pauses[{j}].duration_s"),
                    crate::error::fmt_num(p.duration_s),
                    "must be > 0",
                ));
            }
        }
    }
    budget::check(sf, dur, errs);
    specs
}

/// Refuses fields that are written but cannot take effect, saying why (as a scheduler parameter
/// on the wrong scheduler is refused): a run must not look configured where it is not. Looks at
/// the keys as written (a default is never refused).
fn inert_fields(value: &toml::Table, sf: &ScenarioFile, errs: &mut Errors) {
    let given = |t: Option<&toml::Value>, k: &str| t.and_then(|t| t.as_table()).is_some_and(|t| t.contains_key(k));
    let raw_flows = value.get("flows").and_then(|v| v.as_array());
    for (i, f) in sf.flows.iter().enumerate() {
        // Entries that did not decode are not in sf.flows: match by name.
        let Some(raw) = raw_flows.and_then(|a| {
            a.iter()
                .find(|r| r.get("name").and_then(|n| n.as_str()) == Some(f.name.as_str()))
        }) else {
            continue;
        };
        let i = raw_flows
            .and_then(|a| a.iter().position(|r| std::ptr::eq(r, raw)))
            .unwrap_or(i);
        let (tcp, rcv) = (raw.get("tcp"), raw.get("receiver"));
        if given(tcp, "tso") && f.cc != "bbr" {
            errs.push(ConfigError::new(
                format!("flows[{i}].tcp.tso"),
                f.tcp.tso,
                format!(
                    "has no effect with cc = \"{}\": only a paced sender (bbr) uses the send quantum; remove it",
                    f.cc
                ),
            ));
        }
        for key in ["reno_increase", "reno_ssthresh"] {
            if given(tcp, key) && !matches!(f.cc.as_str(), "tahoe" | "reno" | "newreno") {
                errs.push(ConfigError::new(
                    format!("flows[{i}].tcp.{key}"),
                    "",
                    format!(
                        "has no effect with cc = \"{}\": only tahoe, reno and newreno use it; remove it",
                        f.cc
                    ),
                ));
            }
        }
        if given(rcv, "read_delay_us") && !f.receiver.ack_on_read {
            errs.push(ConfigError::new(
                format!("flows[{i}].receiver.read_delay_us"),
                crate::error::fmt_num(f.receiver.read_delay_us),
                "has no effect with ack_on_read = false (the read latency only delays ACKs deferred to the read); remove it or set ack_on_read = true",
            ));
        }
        if given(rcv, "delack_ms") && !f.receiver.delayed_ack {
            errs.push(ConfigError::new(
                format!("flows[{i}].receiver.delack_ms"),
                crate::error::fmt_num(f.receiver.delack_ms),
                "has no effect with delayed_ack = false (every segment is ACKed at once); remove it or set delayed_ack = true",
            ));
        }
    }
    if let Some(h) = &sf.hst {
        // A train may serve only as the CQI source of cells' UEs (`cqi_train`).
        let cqi_only = sf.cells.iter().any(|c| c.ues.iter().any(|u| u.cqi_train.is_some()));
        if h.links.is_empty() && !cqi_only {
            errs.push(ConfigError::new(
                "hst.links",
                "[]",
                "names no link: the train's handovers would interrupt nothing; name the link of each operator (radio.operators order)",
            ));
        }
    }
}

fn list<'a>(names: impl Iterator<Item = &'a String>) -> String {
    let v: Vec<&str> = names.map(|s| s.as_str()).collect();
    if v.is_empty() {
        "(none)".into()
    } else {
        v.join(", ")
    }
}

/// JSON Schema (draft 7) of the scenario format.
pub fn schema_json() -> String {
    let schema = schemars::schema_for!(ScenarioFile);
    let mut v = serde_json::to_value(&schema).expect("schema serialises");
    bounds::apply(&mut v);
    serde_json::to_string_pretty(&v).expect("schema serialises")
}
