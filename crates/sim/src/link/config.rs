//! Link configuration: one `[[links]]` entry of a scenario file, its checks, and its
//! resolution into the runtime pieces ([`LinkSpec`] → two [`LinkDir`]s).
//!
//! Rules (also in `link/README.md`):
//! - capacity: exactly one of `rate_mbps`, `rate_schedule`, `trace`, `token_bucket` (a
//!   `tbf`-like bottleneck whose `limit_bytes` is the queue; no outages);
//! - queue: at most one of `queue_packets`, `queue_bytes` (default `queue_packets = 1000`);
//! - the reverse direction (ACKs) inherits the forward capacity, delay and queue unless
//!   `[links.reverse]` gives them; loss and reorder are per direction and NOT inherited;
//! - outages belong to the link and apply to both directions.
use super::capacity::{Capacity, Forwarding, Outage, OutageQueued, Timeline};
use super::dir::{LinkDir, Wire};
use super::loss::DirStreams;
use super::trace;
use crate::core::rng::RngStreams;
use crate::core::time::{from_ms_f64, from_secs_f64, Time};
use crate::error::{fmt_num, ConfigError, Errors};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// Default queue size when neither `queue_packets` nor `queue_bytes` is given.
pub const DEFAULT_QUEUE_PACKETS: u64 = 1000;
/// Largest accepted delay (1 hour), rate (1 Tbit/s) and time value (10^9 s): far beyond
/// any sensible scenario, and small enough that nanosecond arithmetic cannot overflow.
pub const MAX_DELAY_MS: f64 = 3_600_000.0;
pub const MAX_RATE_MBPS: f64 = 1_000_000.0;
pub const MIN_RATE_MBPS: f64 = 0.000_001;
pub const MAX_TIME_S: f64 = 1e9;
/// Shortest accepted Gilbert–Elliott sojourn (mean, or uniform maximum): 1 µs.
pub const MIN_SOJOURN_S: f64 = 0.000_001;

/// One link: two directions (forward = data, reverse = ACKs) with rate, delay, queue and
/// impairments. Capacity: exactly one of `rate_mbps`, `rate_schedule`, `trace`. Queue: at
/// most one of `queue_packets`, `queue_bytes` (default `queue_packets = 1000`). The reverse
/// direction inherits capacity, delay and queue unless `reverse` overrides them; it has
/// no loss or reorder unless `reverse` gives them. `outages` apply to both directions.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct LinkConfig {
    /// Name of the link, used by routes and in reports.
    pub name: String,
    /// One-way propagation delay in milliseconds, in [0, 3600000].
    #[schemars(range(min = 0, max = 3_600_000))]
    pub delay_ms: f64,
    /// Constant capacity in Mbit/s (> 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_mbps: Option<f64>,
    /// Piecewise-constant capacity: the first `at_s` must be 0, `at_s` strictly increasing,
    /// rates >= 0 (0 = nothing is sent). The last rate holds until the end.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_schedule: Option<Vec<RateStep>>,
    /// Capacity from a trace file (path relative to the scenario file's folder).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceConfig>,
    /// A token-bucket bottleneck as Linux's `tbf` qdisc (rate, burst, byte limit, frame
    /// overhead); its `limit_bytes` is the queue, so no `queue_packets`/`queue_bytes`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_bucket: Option<TokenBucketConfig>,
    /// Drop-tail queue limit in packets (>= 1), counting the packet being transmitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub queue_packets: Option<i64>,
    /// Drop-tail queue limit in bytes (>= 1500), counting the packet being transmitted.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1500))]
    pub queue_bytes: Option<i64>,
    /// Random loss on the forward direction, applied as packets leave the link.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<LossConfig>,
    /// Random extra delay (reordering) on the forward direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<ReorderConfig>,
    /// Intervals in which the link (both directions) transmits nothing; must not overlap.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub outages: Vec<OutageConfig>,
    /// Overrides for the reverse direction (ACKs).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse: Option<ReverseConfig>,
}

/// Overrides for the reverse direction. Capacity (`rate_mbps` | `rate_schedule` | `trace`,
/// at most one), `delay_ms` and queue (`queue_packets` | `queue_bytes`, at most one)
/// replace the forward values when given, else are inherited. `loss` and `reorder` apply
/// only if given here (never inherited).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields)]
pub struct ReverseConfig {
    /// One-way propagation delay in milliseconds, in [0, 3600000] (default: forward's).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0, max = 3_600_000))]
    pub delay_ms: Option<f64>,
    /// Constant capacity in Mbit/s (> 0).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_mbps: Option<f64>,
    /// Piecewise-constant capacity (same rules as the forward one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub rate_schedule: Option<Vec<RateStep>>,
    /// Capacity from a trace file.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub trace: Option<TraceConfig>,
    /// A token-bucket bottleneck (same rules as the forward one).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub token_bucket: Option<TokenBucketConfig>,
    /// Drop-tail queue limit in packets (>= 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub queue_packets: Option<i64>,
    /// Drop-tail queue limit in bytes (>= 1500).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1500))]
    pub queue_bytes: Option<i64>,
    /// Random loss on the reverse direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub loss: Option<LossConfig>,
    /// Random extra delay on the reverse direction.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reorder: Option<ReorderConfig>,
}

/// A token-bucket bottleneck modelled on Linux's `tbf` qdisc (`net/sched/sch_tbf.c`):
/// tokens accrue at `rate_mbps` up to `burst_bytes` (the bucket starts full, as `tbf_change`
/// fills it); the head packet leaves as soon as the bucket holds its frame size, which is
/// then taken out (`tbf_dequeue`); packets wait in a byte-limited FIFO (`tbf`'s `bfifo`
/// child: an arrival is dropped if the queued frame bytes plus its own exceed `limit_bytes`;
/// the head waiting for tokens counts). Sizes are frames as `tbf` counts them: the IP packet
/// plus `frame_overhead_bytes` (14 on Ethernet/veth: a 1448-byte payload with timestamps is a
/// 1500-byte IP packet and a 1514-byte frame). A frame larger than the burst can never leave
/// and is dropped at the input, as `tbf_enqueue` drops packets above its `max_size`.
/// Deviations: no `peakrate`/`mtu` second bucket; departures are exact to the nanosecond (the
/// kernel's qdisc watchdog fires late by its timer slack and softirq latency).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct TokenBucketConfig {
    /// Token rate in Mbit/s (> 0, <= 1000000), counted on frame bytes.
    pub rate_mbps: f64,
    /// Bucket size in bytes, in [1500 + frame_overhead_bytes, 1000000000].
    #[schemars(range(min = 1500, max = 1_000_000_000))]
    pub burst_bytes: i64,
    /// Queue limit in frame bytes, in [1500 + frame_overhead_bytes, 150000000000].
    #[schemars(range(min = 1500))]
    pub limit_bytes: i64,
    /// Bytes the bucket counts per packet beyond its IP size, in [0, 256] (default 14: the
    /// Ethernet header `tbf` sees on a veth).
    #[serde(default = "default_frame_overhead")]
    #[schemars(range(min = 0, max = 256))]
    pub frame_overhead_bytes: i64,
}

fn default_frame_overhead() -> i64 {
    DEFAULT_FRAME_OVERHEAD_BYTES
}

/// Default `token_bucket.frame_overhead_bytes`: an Ethernet header (what `tbf` counts on a veth).
pub const DEFAULT_FRAME_OVERHEAD_BYTES: i64 = 14;
/// Largest `token_bucket.frame_overhead_bytes` and `burst_bytes`.
pub const MAX_FRAME_OVERHEAD_BYTES: i64 = 256;
pub const MAX_BURST_BYTES: i64 = 1_000_000_000;

/// A resolved token bucket (see [`TokenBucketConfig`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TokenBucket {
    /// Token rate in bit/s.
    pub bps: u64,
    pub burst_bytes: u64,
    pub overhead_bytes: u64,
    /// Queue limit in frame bytes.
    pub limit_bytes: u64,
}

/// One step of a rate schedule: from `at_s` on, the capacity is `rate_mbps`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct RateStep {
    /// Start of this step in seconds (first step: 0; strictly increasing).
    #[schemars(range(min = 0))]
    pub at_s: f64,
    /// Capacity in Mbit/s, >= 0 (0: the link sends nothing; queued packets wait).
    #[schemars(range(min = 0, max = 1_000_000))]
    pub rate_mbps: f64,
}

/// A capacity trace file; `file` is relative to the scenario file's folder.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "format", deny_unknown_fields)]
pub enum TraceConfig {
    /// mahimahi format: one integer millisecond timestamp per line, each a delivery
    /// opportunity of 1500 bytes; repeats with period = the last timestamp.
    #[serde(rename = "mahimahi")]
    Mahimahi {
        /// Path of the trace file.
        file: String,
    },
    /// `<second> <Mbit/s>` per line (seconds from 1; line `s` covers [s-1, s)); repeats
    /// after the last second.
    #[serde(rename = "mbps-per-second")]
    MbpsPerSecond {
        /// Path of the trace file.
        file: String,
        /// How to fill seconds with no line: "zero" (0 Mbit/s) or "hold" (previous rate).
        #[serde(default)]
        missing: MissingPolicy,
    },
}

impl TraceConfig {
    pub fn file(&self) -> &str {
        match self {
            TraceConfig::Mahimahi { file } | TraceConfig::MbpsPerSecond { file, .. } => file,
        }
    }
}

/// How a per-second trace's absent seconds are filled.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum MissingPolicy {
    /// A missing second delivers nothing (0 Mbit/s).
    #[default]
    Zero,
    /// A missing second repeats the previous second's rate.
    Hold,
}

/// Random loss, applied when a packet leaves the link (it used capacity, then is lost on
/// the wire).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "model", deny_unknown_fields)]
pub enum LossConfig {
    /// Each packet is lost independently with probability `p`.
    #[serde(rename = "bernoulli")]
    Bernoulli {
        /// Loss probability, in [0, 1].
        #[schemars(range(min = 0, max = 1))]
        p: f64,
    },
    /// Two-state Gilbert–Elliott channel (Gilbert 1960, Elliott 1963) with time-based
    /// states: the channel stays in a state for a random sojourn time, then switches; a
    /// packet leaving in state good (bad) is lost with probability `p_good` (`p_bad`).
    #[serde(rename = "gilbert-elliott")]
    GilbertElliott {
        /// Loss probability in the good state, in [0, 1].
        #[schemars(range(min = 0, max = 1))]
        p_good: f64,
        /// Loss probability in the bad state, in [0, 1].
        #[schemars(range(min = 0, max = 1))]
        p_bad: f64,
        /// State at time 0: "good" (default) or "bad".
        #[serde(default)]
        start: GeState,
        /// Sojourn-time distribution of the good state.
        good: SojournConfig,
        /// Sojourn-time distribution of the bad state.
        bad: SojournConfig,
    },
}

/// A Gilbert–Elliott state.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum GeState {
    #[default]
    Good,
    Bad,
}

/// How long the channel stays in a state (seconds of simulated time).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(tag = "sojourn", deny_unknown_fields)]
pub enum SojournConfig {
    /// Always exactly `mean_s` seconds.
    #[serde(rename = "deterministic")]
    Deterministic {
        /// Sojourn in seconds, in [0.000001, 1e9].
        mean_s: f64,
    },
    /// Exponentially distributed with mean `mean_s` seconds (a Markov chain in time).
    #[serde(rename = "exponential")]
    Exponential {
        /// Mean sojourn in seconds, in [0.000001, 1e9].
        mean_s: f64,
    },
    /// Uniform on [`min_s`, `max_s`] seconds.
    #[serde(rename = "uniform")]
    Uniform {
        /// Shortest sojourn in seconds, >= 0.
        min_s: f64,
        /// Longest sojourn in seconds, >= min_s and >= 0.000001.
        max_s: f64,
    },
}

/// Reordering: with probability `p` a packet gets `extra_delay_ms` on top of the
/// propagation delay, so packets sent after it can overtake it.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ReorderConfig {
    /// Probability that a packet is delayed, in [0, 1].
    #[schemars(range(min = 0, max = 1))]
    pub p: f64,
    /// Extra one-way delay in milliseconds for such a packet, in [0, 3600000].
    #[schemars(range(min = 0, max = 3_600_000))]
    pub extra_delay_ms: f64,
}

/// An interval `[start_s, start_s + duration_s)` in which the link sends nothing, in
/// either direction. Packets already propagating are still delivered.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OutageConfig {
    /// Start in seconds, >= 0.
    #[schemars(range(min = 0))]
    pub start_s: f64,
    /// Duration in seconds, > 0.
    pub duration_s: f64,
    /// "hold" (default): queued packets wait and go out after the outage; "drop": the
    /// queue is flushed at the start and arrivals during the outage are dropped.
    #[serde(default)]
    pub queued: OutageQueued,
    /// X2-style forwarding of the forward direction's held packets (a handover): packets
    /// held at the start or arriving during the outage go out no earlier than
    /// `delay_ms` after its end; those arriving during the outage are lost with probability
    /// `loss`, those already queued at its start with `queued_loss`. Needs `queued = "hold"`.
    /// The reverse direction only sees the outage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub forwarding: Option<ForwardingConfig>,
    /// The reverse direction's (uplink's) handling of queued packets, if it differs from
    /// `queued`: e.g. `queued = "hold"` with forwarding for the downlink and `reverse_queued =
    /// "drop"` for an uplink that loses what it sends during a handover. Default: as `queued`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reverse_queued: Option<OutageQueued>,
}

/// Forwarding of held packets at the end of an outage (see [`OutageConfig::forwarding`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct ForwardingConfig {
    /// Extra delay after the outage's end before forwarded packets go out, ms, in [0, 3600000].
    #[schemars(range(min = 0, max = 3_600_000))]
    pub delay_ms: f64,
    /// Probability that a packet arriving during the outage is lost in forwarding, in [0, 1]
    /// (default 0).
    #[serde(default)]
    #[schemars(range(min = 0, max = 1))]
    pub loss: f64,
    /// Probability that a packet already queued (or partly sent) at the outage's start is lost
    /// instead of forwarded, in [0, 1] (default 0; 1 = the source's buffer is discarded, as in
    /// ns-3's LENA X2 handover).
    #[serde(default)]
    #[schemars(range(min = 0, max = 1))]
    pub queued_loss: f64,
    /// The target's transmit buffer for the forwarded packets, bytes, in [1, 2^40] (default:
    /// unlimited). Forwarded packets beyond it (in arrival order) are lost: ns-3 hands the whole
    /// forwarded burst to the target's RLC at once, whose `MaxTxBufferSize` drops what does not fit.
    #[serde(default)]
    #[schemars(range(min = 1))]
    pub buffer_bytes: Option<u64>,
}

/// Queue limit of a direction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum QueueLimit {
    Packets(u64),
    Bytes(u64),
}

/// A direction, resolved and checked: everything a [`LinkDir`] needs but its RNG.
#[derive(Clone, Debug, PartialEq)]
pub struct DirSpec {
    /// For a token bucket: `Constant` at its rate (what reports show as the capacity).
    pub capacity: Capacity,
    /// A `tbf`-like token bucket instead of a serializing transmitter (queue = its limit).
    pub token_bucket: Option<TokenBucket>,
    pub delay: Time,
    pub queue: QueueLimit,
    pub loss: Option<LossConfig>,
    pub reorder: Option<ReorderConfig>,
}

/// A link, resolved and checked (traces read and parsed): build it with [`LinkSpec::build`].
#[derive(Clone, Debug, PartialEq)]
pub struct LinkSpec {
    pub name: String,
    pub forward: DirSpec,
    pub reverse: DirSpec,
    /// Sorted by start, non-overlapping.
    pub outages: Vec<Outage>,
    /// Outages of the forward direction only (a handoff: the radio delivers nothing toward the
    /// mobile host while its own messages still reach the new base station), sorted, not
    /// overlapping `outages`.
    pub forward_outages: Vec<Outage>,
    /// Forwarding at the end of outages (forward direction only), sorted by start.
    pub forwarding: Vec<Forwarding>,
    /// The reverse direction's outages when some handle queued packets differently
    /// (`reverse_queued`); `None`: `outages`.
    pub reverse_outages: Option<Vec<Outage>>,
}

impl LinkSpec {
    /// The two directions, with their impairments' random streams named
    /// `link/<name>/forward/...` and `link/<name>/reverse/...` ([`DirStreams::named`]): the
    /// simulator and the emulator draw the same losses for the same seed.
    pub fn build<P: Wire>(&self, rngs: &RngStreams) -> (LinkDir<P>, LinkDir<P>) {
        let name = &self.name;
        let mut fwd_outages = self.outages.clone();
        if !self.forward_outages.is_empty() {
            fwd_outages.extend(self.forward_outages.iter().cloned());
            fwd_outages.sort_by_key(|o| o.start);
        }
        let mut fwd = LinkDir::new(
            &self.forward,
            &fwd_outages,
            DirStreams::named(rngs, &format!("link/{name}/forward")),
        );
        fwd.set_forwarding(&self.forwarding);
        let rev_outages = self.reverse_outages.as_deref().unwrap_or(&self.outages);
        (
            fwd,
            LinkDir::new(
                &self.reverse,
                rev_outages,
                DirStreams::named(rngs, &format!("link/{name}/reverse")),
            ),
        )
    }
}

impl LinkConfig {
    /// Checks everything and reports every problem into `errs`, each naming the field
    /// (`{prefix}.rate_mbps`, `{prefix}.reverse.loss.p`, `{prefix}.trace.file`, ...), the
    /// value and what is allowed. Trace files are read and parsed.
    pub fn validate(&self, prefix: &str, base_dir: &Path, errs: &mut Errors) {
        let _ = self.resolve(prefix, base_dir, errs);
    }

    /// Like [`validate`](Self::validate), and returns the resolved link if there was no
    /// problem. The scenario loader should call this once per link (traces are read once).
    pub fn resolve(&self, prefix: &str, base_dir: &Path, errs: &mut Errors) -> Option<LinkSpec> {
        let n0 = errs.0.len();
        errs.check(
            !self.name.trim().is_empty(),
            format!("{prefix}.name"),
            &self.name,
            "must not be empty",
        );
        let delay = check_delay(&format!("{prefix}.delay_ms"), self.delay_ms, errs);
        let cap = resolve_capacity(
            prefix,
            CapFields {
                rate_mbps: self.rate_mbps,
                rate_schedule: &self.rate_schedule,
                trace: &self.trace,
                token_bucket: &self.token_bucket,
            },
            base_dir,
            errs,
        );
        let cap = match cap {
            Some(Some(c)) => Some(c),
            Some(None) => {
                errs.push(ConfigError::new(
                    prefix,
                    "",
                    "exactly one of rate_mbps, rate_schedule, trace, token_bucket must be given (found none)",
                ));
                None
            }
            None => None,
        };
        let tb = cap.as_ref().and_then(|c| c.1);
        let queue = resolve_queue(prefix, self.queue_packets, self.queue_bytes, errs);
        if self.token_bucket.is_some() {
            check_no_queue_with_bucket(prefix, self.queue_packets, self.queue_bytes, errs);
            errs.check(
                self.outages.is_empty(),
                format!("{prefix}.outages"),
                format!("{} entries", self.outages.len()),
                "a token_bucket link cannot have outages (not modelled); use rate_mbps or rate_schedule",
            );
        }
        let queue = queue.map(|q| match tb {
            Some(t) => QueueLimit::Bytes(t.limit_bytes),
            None => q.unwrap_or(QueueLimit::Packets(DEFAULT_QUEUE_PACKETS)),
        });
        check_loss(&format!("{prefix}.loss"), self.loss.as_ref(), errs);
        check_reorder(&format!("{prefix}.reorder"), self.reorder.as_ref(), errs);
        let (outages, forwarding) = resolve_outages(prefix, &self.outages, errs);
        // Same spans; only what happens to the queue differs (resolve_outages sorted them by start).
        let reverse_outages = self
            .outages
            .iter()
            .any(|o| o.reverse_queued.is_some_and(|q| q != o.queued))
            .then(|| {
                let mut order: Vec<&OutageConfig> = self.outages.iter().collect();
                order.sort_by(|a, b| a.start_s.total_cmp(&b.start_s));
                outages
                    .iter()
                    .zip(order)
                    .map(|(o, c)| Outage {
                        queued: c.reverse_queued.unwrap_or(c.queued),
                        ..*o
                    })
                    .collect::<Vec<_>>()
            });

        let rev_default = ReverseConfig::default();
        let rv = self.reverse.as_ref().unwrap_or(&rev_default);
        let rp = format!("{prefix}.reverse");
        let rev_delay = rv.delay_ms.map(|d| check_delay(&format!("{rp}.delay_ms"), d, errs));
        let rev_cap = resolve_capacity(
            &rp,
            CapFields {
                rate_mbps: rv.rate_mbps,
                rate_schedule: &rv.rate_schedule,
                trace: &rv.trace,
                token_bucket: &rv.token_bucket,
            },
            base_dir,
            errs,
        );
        let rev_queue = resolve_queue(&rp, rv.queue_packets, rv.queue_bytes, errs);
        // A token-bucket direction's queue is its limit: the reverse's own bucket, or the
        // forward one it inherits when it gives no capacity.
        let rev_own_cap =
            rv.rate_mbps.is_some() || rv.rate_schedule.is_some() || rv.trace.is_some() || rv.token_bucket.is_some();
        if rv.token_bucket.is_some() || (!rev_own_cap && self.token_bucket.is_some()) {
            check_no_queue_with_bucket(&rp, rv.queue_packets, rv.queue_bytes, errs);
        }
        check_loss(&format!("{rp}.loss"), rv.loss.as_ref(), errs);
        check_reorder(&format!("{rp}.reorder"), rv.reorder.as_ref(), errs);

        if errs.0.len() > n0 {
            return None;
        }
        let ((cap, tb), queue, rev_cap, rev_queue) = (cap?, queue?, rev_cap?, rev_queue?);
        let forward = DirSpec {
            capacity: cap,
            token_bucket: tb,
            delay,
            queue,
            loss: self.loss.clone(),
            reorder: self.reorder.clone(),
        };
        let (rev_capacity, rev_tb) = rev_cap.unwrap_or_else(|| (forward.capacity.clone(), forward.token_bucket));
        let rev_queue = match rev_tb {
            Some(t) => QueueLimit::Bytes(t.limit_bytes),
            None => rev_queue.unwrap_or(queue),
        };
        let reverse = DirSpec {
            capacity: rev_capacity,
            token_bucket: rev_tb,
            delay: rev_delay.unwrap_or(delay),
            queue: rev_queue,
            loss: rv.loss.clone(),
            reorder: rv.reorder.clone(),
        };
        Some(LinkSpec {
            name: self.name.clone(),
            forward,
            reverse,
            outages,
            forward_outages: Vec::new(),
            forwarding,
            reverse_outages,
        })
    }

    /// Resolves and builds both directions (forward, reverse). Errors name fields as
    /// `links["<name>"].<field>`; a scenario loader that knows the link's index should
    /// prefer [`resolve`](Self::resolve) with its own prefix.
    pub fn build<P: Wire>(
        &self,
        base_dir: &Path,
        rngs: &RngStreams,
    ) -> Result<(LinkDir<P>, LinkDir<P>), Vec<ConfigError>> {
        let mut errs = Errors::default();
        match self.resolve(&format!("links[{:?}]", self.name), base_dir, &mut errs) {
            Some(spec) if errs.is_empty() => Ok(spec.build(rngs)),
            _ => Err(errs.0),
        }
    }

    /// This configuration with every default made explicit (for provenance): the queue
    /// limit, and a `reverse` section spelling out the inherited capacity, delay and queue.
    pub fn with_defaults(&self) -> LinkConfig {
        let mut c = self.clone();
        if c.queue_packets.is_none() && c.queue_bytes.is_none() && c.token_bucket.is_none() {
            c.queue_packets = Some(DEFAULT_QUEUE_PACKETS as i64);
        }
        let mut r = c.reverse.clone().unwrap_or_default();
        if r.rate_mbps.is_none() && r.rate_schedule.is_none() && r.trace.is_none() && r.token_bucket.is_none() {
            r.rate_mbps = c.rate_mbps;
            r.rate_schedule = c.rate_schedule.clone();
            r.trace = c.trace.clone();
            r.token_bucket = c.token_bucket.clone();
        }
        r.delay_ms = r.delay_ms.or(Some(c.delay_ms));
        if r.queue_packets.is_none() && r.queue_bytes.is_none() && r.token_bucket.is_none() {
            r.queue_packets = c.queue_packets;
            r.queue_bytes = c.queue_bytes;
        }
        c.reverse = Some(r);
        c
    }
}

fn check_delay(field: &str, v: f64, errs: &mut Errors) -> Time {
    errs.range(field, v, 0.0, MAX_DELAY_MS);
    if v.is_finite() && (0.0..=MAX_DELAY_MS).contains(&v) {
        from_ms_f64(v)
    } else {
        0
    }
}

/// Checks a rate that must be > 0; returns bit/s.
fn check_positive_rate(field: &str, v: f64, errs: &mut Errors) -> u64 {
    if !(v.is_finite() && v > 0.0) {
        errs.push(ConfigError::new(field, fmt_num(v), "must be > 0"));
    } else if v < MIN_RATE_MBPS {
        errs.push(ConfigError::new(field, fmt_num(v), "must be >= 0.000001 (1 bit/s)"));
    } else if v > MAX_RATE_MBPS {
        errs.push(ConfigError::new(field, fmt_num(v), "must be <= 1000000 (1 Tbit/s)"));
    }
    (v * 1e6).round().clamp(0.0, MAX_RATE_MBPS * 1e6) as u64
}

struct CapFields<'a> {
    rate_mbps: Option<f64>,
    rate_schedule: &'a Option<Vec<RateStep>>,
    trace: &'a Option<TraceConfig>,
    token_bucket: &'a Option<TokenBucketConfig>,
}

/// Refuses `queue_packets` / `queue_bytes` on a token-bucket direction (its queue is `limit_bytes`).
fn check_no_queue_with_bucket(prefix: &str, pk: Option<i64>, by: Option<i64>, errs: &mut Errors) {
    for (name, v) in [("queue_packets", pk), ("queue_bytes", by)] {
        if let Some(v) = v {
            errs.push(ConfigError::new(
                format!("{prefix}.{name}"),
                v,
                "not allowed on a token_bucket direction: its queue is token_bucket.limit_bytes",
            ));
        }
    }
}

/// Checks a `token_bucket` table; `None` if it has errors.
fn resolve_token_bucket(field: &str, t: &TokenBucketConfig, errs: &mut Errors) -> Option<TokenBucket> {
    let n0 = errs.0.len();
    let bps = check_positive_rate(&format!("{field}.rate_mbps"), t.rate_mbps, errs);
    let oh = t.frame_overhead_bytes;
    errs.check(
        (0..=MAX_FRAME_OVERHEAD_BYTES).contains(&oh),
        format!("{field}.frame_overhead_bytes"),
        oh,
        "must be in [0, 256]",
    );
    let min = 1500 + oh.clamp(0, MAX_FRAME_OVERHEAD_BYTES);
    errs.check(
        (min..=MAX_BURST_BYTES).contains(&t.burst_bytes),
        format!("{field}.burst_bytes"),
        t.burst_bytes,
        &format!("must be in [{min} (a 1500-byte packet plus frame_overhead_bytes), 1000000000]"),
    );
    errs.check(
        (min..=MAX_QUEUE_BYTES).contains(&t.limit_bytes),
        format!("{field}.limit_bytes"),
        t.limit_bytes,
        &format!("must be in [{min} (a 1500-byte packet plus frame_overhead_bytes), 150000000000]"),
    );
    (errs.0.len() == n0).then_some(TokenBucket {
        bps,
        burst_bytes: t.burst_bytes as u64,
        overhead_bytes: oh as u64,
        limit_bytes: t.limit_bytes as u64,
    })
}

/// `None` if there were errors; `Some(None)` if no capacity was given (reverse inherits;
/// the forward caller reports it); `Some(Some((cap, bucket)))` otherwise (a token bucket's
/// capacity is `Constant` at its rate).
fn resolve_capacity(
    prefix: &str,
    f: CapFields<'_>,
    base_dir: &Path,
    errs: &mut Errors,
) -> Option<Option<(Capacity, Option<TokenBucket>)>> {
    let n0 = errs.0.len();
    let given: Vec<&str> = [
        f.rate_mbps.map(|_| "rate_mbps"),
        f.rate_schedule.as_ref().map(|_| "rate_schedule"),
        f.trace.as_ref().map(|_| "trace"),
        f.token_bucket.as_ref().map(|_| "token_bucket"),
    ]
    .into_iter()
    .flatten()
    .collect();
    if given.len() > 1 {
        errs.push(ConfigError::new(
            prefix,
            "",
            format!(
                "exactly one of rate_mbps, rate_schedule, trace, token_bucket must be given (found {})",
                given.join(", ")
            ),
        ));
    }
    if let Some(t) = f.token_bucket {
        let tb = resolve_token_bucket(&format!("{prefix}.token_bucket"), t, errs);
        if errs.0.len() > n0 {
            return None;
        }
        let tb = tb?;
        return Some(Some((Capacity::Constant { bps: tb.bps }, Some(tb))));
    }
    let mut cap = None;
    if let Some(r) = f.rate_mbps {
        let bps = check_positive_rate(&format!("{prefix}.rate_mbps"), r, errs);
        cap = Some(Capacity::Constant { bps });
    }
    if let Some(steps) = f.rate_schedule {
        cap = resolve_schedule(&format!("{prefix}.rate_schedule"), steps, errs);
    }
    if let Some(t) = f.trace {
        cap = load_trace(&format!("{prefix}.trace"), t, base_dir, errs);
    }
    if errs.0.len() > n0 {
        return None;
    }
    Some(cap.map(|c| (c, None)))
}

fn resolve_schedule(field: &str, steps: &[RateStep], errs: &mut Errors) -> Option<Capacity> {
    if steps.is_empty() {
        errs.push(ConfigError::new(field, "[]", "must have at least one entry"));
        return None;
    }
    let n0 = errs.0.len();
    let mut points: Vec<(Time, u64)> = Vec::with_capacity(steps.len());
    for (i, s) in steps.iter().enumerate() {
        let f_at = format!("{field}[{i}].at_s");
        if i == 0 {
            errs.check(
                s.at_s == 0.0,
                &f_at,
                fmt_num(s.at_s),
                "the first entry must have at_s = 0",
            );
        } else if s.at_s.is_finite() && steps[i - 1].at_s.is_finite() && s.at_s <= steps[i - 1].at_s {
            errs.push(ConfigError::new(
                &f_at,
                fmt_num(s.at_s),
                format!(
                    "must be > {field}[{}].at_s = {} (strictly increasing)",
                    i - 1,
                    fmt_num(steps[i - 1].at_s)
                ),
            ));
        }
        errs.range(&f_at, s.at_s, 0.0, MAX_TIME_S);
        errs.range(format!("{field}[{i}].rate_mbps"), s.rate_mbps, 0.0, MAX_RATE_MBPS);
        if errs.0.len() == n0 {
            let t = from_secs_f64(s.at_s);
            let bps = (s.rate_mbps * 1e6).round() as u64;
            if let Some(&(pt, _)) = points.last() {
                if t <= pt {
                    errs.push(ConfigError::new(
                        &f_at,
                        fmt_num(s.at_s),
                        "must be at least 1 ns after the previous entry",
                    ));
                    continue;
                }
            }
            if points.last().is_none_or(|p| p.1 != bps) {
                points.push((t, bps));
            }
        }
    }
    if errs.0.len() > n0 {
        return None;
    }
    Some(Capacity::Schedule { points, period: None })
}

fn load_trace(field: &str, t: &TraceConfig, base_dir: &Path, errs: &mut Errors) -> Option<Capacity> {
    let file = t.file();
    let f_file = format!("{field}.file");
    let path = base_dir.join(file);
    let text = match mobipath_hst::input::read_bytes(&path, mobipath_hst::input::MAX_DATA_FILE_BYTES) {
        Ok(bytes) => match String::from_utf8(bytes) {
            Ok(s) => s,
            Err(e) => {
                let line = 1 + e.as_bytes()[..e.utf8_error().valid_up_to()]
                    .iter()
                    .filter(|&&b| b == b'\n')
                    .count();
                errs.push(ConfigError::new(&f_file, file, format!("line {line}: not UTF-8 text")));
                return None;
            }
        },
        Err(_) if !path.exists() => {
            errs.push(ConfigError::new(
                &f_file,
                file,
                format!("trace file not found (looked for {})", path.display()),
            ));
            return None;
        }
        Err(e) => {
            errs.push(ConfigError::new(
                &f_file,
                file,
                format!("cannot read trace file {}: {e}", path.display()),
            ));
            return None;
        }
    };
    let parsed = match t {
        TraceConfig::Mahimahi { .. } => trace::parse_mahimahi(&text),
        TraceConfig::MbpsPerSecond { missing, .. } => trace::parse_mbps_per_second(&text, *missing),
    };
    match parsed {
        Ok(c) => Some(c),
        Err(list) => {
            for e in list {
                errs.push(ConfigError::new(&f_file, file, e.to_string()));
            }
            None
        }
    }
}

/// `None` on error; `Some(None)` if neither field was given.
/// Largest queue limits: 10^8 packets, or as many bytes of full-sized packets (beyond that a
/// queue is "infinite" for any run the simulator can do, and a typo is likelier).
pub const MAX_QUEUE_PACKETS: i64 = 100_000_000;
pub const MAX_QUEUE_BYTES: i64 = 150_000_000_000;

fn resolve_queue(prefix: &str, pk: Option<i64>, by: Option<i64>, errs: &mut Errors) -> Option<Option<QueueLimit>> {
    let n0 = errs.0.len();
    if pk.is_some() && by.is_some() {
        errs.push(ConfigError::new(
            prefix,
            "",
            "at most one of queue_packets, queue_bytes may be given",
        ));
    }
    if let Some(p) = pk {
        errs.check(
            (1..=MAX_QUEUE_PACKETS).contains(&p),
            format!("{prefix}.queue_packets"),
            p,
            "must be in [1, 100000000]",
        );
    }
    if let Some(b) = by {
        errs.check(
            (1500..=MAX_QUEUE_BYTES).contains(&b),
            format!("{prefix}.queue_bytes"),
            b,
            "must be in [1500 (one full-sized packet), 150000000000]",
        );
    }
    if errs.0.len() > n0 {
        return None;
    }
    Some(match (pk, by) {
        (Some(p), _) => Some(QueueLimit::Packets(p as u64)),
        (None, Some(b)) => Some(QueueLimit::Bytes(b as u64)),
        (None, None) => None,
    })
}

fn check_loss(field: &str, l: Option<&LossConfig>, errs: &mut Errors) {
    match l {
        None => {}
        Some(LossConfig::Bernoulli { p }) => errs.range(format!("{field}.p"), *p, 0.0, 1.0),
        Some(LossConfig::GilbertElliott {
            p_good,
            p_bad,
            good,
            bad,
            ..
        }) => {
            errs.range(format!("{field}.p_good"), *p_good, 0.0, 1.0);
            errs.range(format!("{field}.p_bad"), *p_bad, 0.0, 1.0);
            check_sojourn(&format!("{field}.good"), good, errs);
            check_sojourn(&format!("{field}.bad"), bad, errs);
        }
    }
}

pub(crate) fn check_sojourn(field: &str, s: &SojournConfig, errs: &mut Errors) {
    match s {
        // At least 1 µs: the state process advances sojourn by sojourn, so absurdly short
        // ones would cost time without changing anything at packet scale.
        SojournConfig::Deterministic { mean_s } | SojournConfig::Exponential { mean_s } => {
            errs.range(format!("{field}.mean_s"), *mean_s, MIN_SOJOURN_S, MAX_TIME_S);
        }
        SojournConfig::Uniform { min_s, max_s } => {
            errs.range(format!("{field}.min_s"), *min_s, 0.0, MAX_TIME_S);
            errs.range(format!("{field}.max_s"), *max_s, 0.0, MAX_TIME_S);
            if min_s.is_finite() && max_s.is_finite() {
                errs.check(
                    max_s >= min_s && *max_s >= MIN_SOJOURN_S,
                    format!("{field}.max_s"),
                    fmt_num(*max_s),
                    &format!("must be >= min_s = {} and >= 0.000001", fmt_num(*min_s)),
                );
            }
        }
    }
}

fn check_reorder(field: &str, r: Option<&ReorderConfig>, errs: &mut Errors) {
    if let Some(r) = r {
        errs.range(format!("{field}.p"), r.p, 0.0, 1.0);
        errs.range(format!("{field}.extra_delay_ms"), r.extra_delay_ms, 0.0, MAX_DELAY_MS);
    }
}

fn resolve_outages(prefix: &str, list: &[OutageConfig], errs: &mut Errors) -> (Vec<Outage>, Vec<Forwarding>) {
    let mut out: Vec<(usize, Outage)> = Vec::with_capacity(list.len());
    let mut fwd: Vec<Forwarding> = Vec::new();
    for (i, o) in list.iter().enumerate() {
        let f = format!("{prefix}.outages[{i}]");
        let n0 = errs.0.len();
        errs.range(format!("{f}.start_s"), o.start_s, 0.0, MAX_TIME_S);
        let ok = o.duration_s.is_finite() && o.duration_s > 0.0 && o.duration_s <= MAX_TIME_S;
        errs.check(
            ok,
            format!("{f}.duration_s"),
            fmt_num(o.duration_s),
            "must be > 0 and <= 1000000000",
        );
        if let Some(fc) = &o.forwarding {
            errs.range(format!("{f}.forwarding.delay_ms"), fc.delay_ms, 0.0, MAX_DELAY_MS);
            errs.range(format!("{f}.forwarding.loss"), fc.loss, 0.0, 1.0);
            errs.range(format!("{f}.forwarding.queued_loss"), fc.queued_loss, 0.0, 1.0);
            if let Some(b) = fc.buffer_bytes {
                errs.check(
                    (1..=1u64 << 40).contains(&b),
                    format!("{f}.forwarding.buffer_bytes"),
                    b,
                    "must be in [1, 2^40]",
                );
            }
            let hold = o.queued == OutageQueued::Hold;
            errs.check(
                hold,
                format!("{f}.queued"),
                "drop",
                "forwarding needs queued = \"hold\" (a dropped packet cannot be forwarded)",
            );
        }
        if errs.0.len() == n0 {
            let start = from_secs_f64(o.start_s);
            let end = from_secs_f64(o.start_s + o.duration_s).max(start + 1);
            out.push((
                i,
                Outage {
                    start,
                    end,
                    queued: o.queued,
                },
            ));
            if let Some(fc) = &o.forwarding {
                fwd.push(Forwarding {
                    start,
                    end,
                    extra_delay: from_ms_f64(fc.delay_ms),
                    loss_prob: fc.loss,
                    queued_loss: fc.queued_loss,
                    buffer_bytes: fc.buffer_bytes.unwrap_or(u64::MAX),
                });
            }
        }
    }
    fwd.sort_by_key(|x| x.start);
    out.sort_by_key(|(_, o)| o.start);
    for w in out.windows(2) {
        let ((i, a), (j, b)) = (&w[0], &w[1]);
        if b.start < a.end {
            errs.push(ConfigError::new(
                format!("{prefix}.outages[{j}].start_s"),
                fmt_num(list[*j].start_s),
                format!(
                    "overlaps outages[{i}] = [{}, {}) s; outages must not overlap",
                    fmt_num(list[*i].start_s),
                    fmt_num(list[*i].start_s + list[*i].duration_s)
                ),
            ));
        }
    }
    (out.into_iter().map(|(_, o)| o).collect(), fwd)
}

/// The resolved timeline of a direction (capacity with the link's outages).
pub(crate) fn timeline(spec: &DirSpec, outages: &[Outage]) -> Timeline {
    Timeline {
        cap: spec.capacity.clone(),
        outages: outages.to_vec(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(toml_text: &str) -> LinkConfig {
        toml::from_str(toml_text).unwrap_or_else(|e| panic!("{e}"))
    }

    fn errors_of(toml_text: &str, base: &Path) -> Vec<String> {
        let c = parse(toml_text);
        let mut errs = Errors::default();
        c.validate("links[0]", base, &mut errs);
        errs.0.iter().map(|e| e.to_string()).collect()
    }

    fn tmpdir(tag: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("mobipath-link-{}-{}", tag, std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    #[test]
    fn full_example_parses_and_resolves() {
        let dir = tmpdir("full");
        std::fs::write(dir.join("hsr.trace"), "1 10\r\n2 20\r\n").unwrap();
        let c = parse(
            r#"
            name = "bottleneck"
            delay_ms = 20
            trace = { format = "mbps-per-second", file = "hsr.trace", missing = "hold" }
            queue_bytes = 250000
            loss = { model = "gilbert-elliott", p_good = 0.0, p_bad = 1.0, start = "good", good = { sojourn = "deterministic", mean_s = 10 }, bad = { sojourn = "exponential", mean_s = 4 } }
            reorder = { p = 0.01, extra_delay_ms = 5 }
            outages = [ { start_s = 10, duration_s = 2, queued = "hold" }, { start_s = 1, duration_s = 1, queued = "drop" } ]
            [reverse]
            rate_mbps = 10
            "#,
        );
        let mut errs = Errors::default();
        let spec = c.resolve("links[0]", &dir, &mut errs).expect("valid");
        assert!(errs.is_empty());
        assert_eq!(spec.forward.delay, 20_000_000);
        assert_eq!(spec.forward.queue, QueueLimit::Bytes(250_000));
        assert!(matches!(
            spec.forward.capacity,
            Capacity::Schedule {
                period: Some(2_000_000_000),
                ..
            }
        ));
        // Reverse: own capacity, inherited delay and queue, no loss/reorder.
        assert_eq!(spec.reverse.capacity, Capacity::Constant { bps: 10_000_000 });
        assert_eq!(spec.reverse.delay, 20_000_000);
        assert_eq!(spec.reverse.queue, QueueLimit::Bytes(250_000));
        assert!(spec.reverse.loss.is_none() && spec.reverse.reorder.is_none());
        // Outages sorted.
        assert_eq!(spec.outages[0].start, 1_000_000_000);
        assert_eq!(spec.outages[1].queued, OutageQueued::Hold);
        // Defaults made explicit, and the result still resolves to the same thing.
        let d = c.with_defaults();
        assert_eq!(d.reverse.as_ref().unwrap().delay_ms, Some(20.0));
        let spec2 = d.resolve("links[0]", &dir, &mut errs).unwrap();
        assert_eq!(spec, spec2);
        // Serialises back to TOML and parses again.
        let again: LinkConfig = toml::from_str(&toml::to_string(&d).unwrap()).unwrap();
        assert_eq!(again, d);
    }

    #[test]
    fn default_queue_and_inheritance() {
        let c = parse("name = \"a\"\ndelay_ms = 5\nrate_mbps = 100\nloss = { model = \"bernoulli\", p = 0.1 }\n");
        let mut errs = Errors::default();
        let s = c.resolve("l", Path::new("."), &mut errs).unwrap();
        assert_eq!(s.forward.queue, QueueLimit::Packets(DEFAULT_QUEUE_PACKETS));
        assert_eq!(
            s.reverse,
            DirSpec {
                loss: None,
                reorder: None,
                ..s.forward.clone()
            }
        );
        assert!(s.forward.loss.is_some());
    }

    #[test]
    fn unknown_fields_are_rejected_by_serde() {
        for bad in [
            "name = \"a\"\ndelay_ms = 1\nrate_mbps = 1\nrate_mpbs = 2\n",
            "name = \"a\"\ndelay_ms = 1\nrate_mbps = 1\nloss = { model = \"bernoulli\", p = 0.1, q = 2 }\n",
            "name = \"a\"\ndelay_ms = 1\nrate_mbps = 1\nloss = { model = \"gilbert-elliott\", p_good = 0, p_bad = 1, good = { sojourn = \"deterministic\", mean_s = 1, max_s = 3 }, bad = { sojourn = \"exponential\", mean_s = 1 } }\n",
            "name = \"a\"\ndelay_ms = 1\nrate_mbps = 1\n[reverse]\noutages = []\n",
            "name = \"a\"\ndelay_ms = 1\ntrace = { format = \"mahimahi\", file = \"x\", missing = \"zero\" }\n",
            "name = \"a\"\ndelay_ms = 1\ntrace = { format = \"csv\", file = \"x\" }\n",
        ] {
            assert!(toml::from_str::<LinkConfig>(bad).is_err(), "accepted: {bad}");
        }
    }

    /// A table of bad configurations, each yielding its specific message(s).
    #[test]
    fn bad_configs_table() {
        let dir = tmpdir("bad");
        std::fs::write(dir.join("bad.down"), "0\n5\nabc\n3\n").unwrap();
        std::fs::write(dir.join("ok.down"), "0\n5\n").unwrap();
        std::fs::write(dir.join("bad.trace"), "1 2\n2 x\n").unwrap();
        std::fs::write(dir.join("latin1.trace"), b"1 2\n2 \xe9\n").unwrap();
        let head = "name = \"l\"\ndelay_ms = 10\n";
        let cases: &[(&str, &[&str])] = &[
            ("name = \"l\"\ndelay_ms = -1\nrate_mbps = 1\n", &["links[0].delay_ms = -1: must be in [0, 3600000]"]),
            ("name = \"\"\ndelay_ms = 1\nrate_mbps = 1\n", &["links[0].name: must not be empty"]),
            ("rate_mbps = 0\n", &["links[0].rate_mbps = 0: must be > 0"]),
            ("rate_mbps = -3\n", &["links[0].rate_mbps = -3: must be > 0"]),
            ("rate_mbps = nan\n", &["links[0].rate_mbps = NaN: must be > 0"]),
            ("rate_mbps = 2e6\n", &["links[0].rate_mbps = 2000000: must be <= 1000000 (1 Tbit/s)"]),
            ("", &["links[0]: exactly one of rate_mbps, rate_schedule, trace, token_bucket must be given (found none)"]),
            (
                "rate_mbps = 1\ntrace = { format = \"mahimahi\", file = \"ok.down\" }\n",
                &["links[0]: exactly one of rate_mbps, rate_schedule, trace, token_bucket must be given (found rate_mbps, trace)"],
            ),
            ("rate_schedule = []\n", &["links[0].rate_schedule = []: must have at least one entry"]),
            (
                "rate_schedule = [ { at_s = 1, rate_mbps = 5 }, { at_s = 1, rate_mbps = -1 } ]\n",
                &[
                    "links[0].rate_schedule[0].at_s = 1: the first entry must have at_s = 0",
                    "links[0].rate_schedule[1].at_s = 1: must be > links[0].rate_schedule[0].at_s = 1 (strictly increasing)",
                    "links[0].rate_schedule[1].rate_mbps = -1: must be in [0, 1000000]",
                ],
            ),
            (
                "trace = { format = \"mahimahi\", file = \"nope.down\" }\n",
                &["links[0].trace.file = nope.down: trace file not found (looked for "],
            ),
            (
                "trace = { format = \"mahimahi\", file = \"bad.down\" }\n",
                &[
                    "links[0].trace.file = bad.down: line 3: expected `<ms>` integer, found `abc`",
                    "links[0].trace.file = bad.down: line 4: timestamps must be non-decreasing, found 3 after 5",
                ],
            ),
            (
                "trace = { format = \"mbps-per-second\", file = \"bad.trace\" }\n",
                &["links[0].trace.file = bad.trace: line 2: expected `<Mbit/s>` number, found `x`"],
            ),
            (
                "trace = { format = \"mbps-per-second\", file = \"latin1.trace\" }\n",
                &["links[0].trace.file = latin1.trace: line 2: not UTF-8 text"],
            ),
            (
                "rate_mbps = 1\nqueue_packets = 0\nqueue_bytes = 100\n",
                &[
                    "links[0]: at most one of queue_packets, queue_bytes may be given",
                    "links[0].queue_packets = 0: must be in [1, 100000000]",
                    "links[0].queue_bytes = 100: must be in [1500 (one full-sized packet), 150000000000]",
                ],
            ),
            ("rate_mbps = 1\nloss = { model = \"bernoulli\", p = 1.5 }\n", &["links[0].loss.p = 1.5: must be in [0, 1]"]),
            (
                "rate_mbps = 1\nloss = { model = \"gilbert-elliott\", p_good = -0.1, p_bad = 2, good = { sojourn = \"deterministic\", mean_s = 0 }, bad = { sojourn = \"uniform\", min_s = 3, max_s = 2 } }\n",
                &[
                    "links[0].loss.p_good = -0.1: must be in [0, 1]",
                    "links[0].loss.p_bad = 2: must be in [0, 1]",
                    "links[0].loss.good.mean_s = 0: must be in [0.000001, 1000000000]",
                    "links[0].loss.bad.max_s = 2: must be >= min_s = 3 and >= 0.000001",
                ],
            ),
            (
                "rate_mbps = 1\nreorder = { p = 2, extra_delay_ms = -5 }\n",
                &["links[0].reorder.p = 2: must be in [0, 1]", "links[0].reorder.extra_delay_ms = -5: must be in [0, 3600000]"],
            ),
            (
                "rate_mbps = 1\noutages = [ { start_s = 10, duration_s = 5 }, { start_s = -1, duration_s = 0 }, { start_s = 12, duration_s = 1 } ]\n",
                &[
                    "links[0].outages[1].start_s = -1: must be in [0, 1000000000]",
                    "links[0].outages[1].duration_s = 0: must be > 0 and <= 1000000000",
                    "links[0].outages[2].start_s = 12: overlaps outages[0] = [10, 15) s; outages must not overlap",
                ],
            ),
            (
                "rate_mbps = 1\noutages = [ { start_s = 1, duration_s = 1, queued = \"drop\", forwarding = { delay_ms = 10 } }, { start_s = 5, duration_s = 1, forwarding = { delay_ms = -1, loss = 1.5, queued_loss = -0.1, buffer_bytes = 0 } } ]\n",
                &[
                    "links[0].outages[0].queued = drop: forwarding needs queued = \"hold\"",
                    "links[0].outages[1].forwarding.delay_ms = -1: must be in [0, 3600000]",
                    "links[0].outages[1].forwarding.loss = 1.5: must be in [0, 1]",
                    "links[0].outages[1].forwarding.queued_loss = -0.1: must be in [0, 1]",
                    "links[0].outages[1].forwarding.buffer_bytes = 0: must be in [1, 2^40]",
                ],
            ),
            (
                "rate_mbps = 1\n[reverse]\nrate_mbps = 0\ntrace = { format = \"mahimahi\", file = \"nope\" }\ndelay_ms = -2\nqueue_bytes = 10\nloss = { model = \"bernoulli\", p = -1 }\n",
                &[
                    "links[0].reverse.delay_ms = -2: must be in [0, 3600000]",
                    "links[0].reverse: exactly one of rate_mbps, rate_schedule, trace, token_bucket must be given (found rate_mbps, trace)",
                    "links[0].reverse.rate_mbps = 0: must be > 0",
                    "links[0].reverse.trace.file = nope: trace file not found",
                    "links[0].reverse.queue_bytes = 10: must be in [1500",
                    "links[0].reverse.loss.p = -1: must be in [0, 1]",
                ],
            ),
        ];
        for (body, wants) in cases {
            let text = if body.starts_with("name") {
                body.to_string()
            } else {
                format!("{head}{body}")
            };
            let got = errors_of(&text, &dir);
            for w in *wants {
                assert!(
                    got.iter().any(|g| g.starts_with(w)),
                    "config:\n{text}\nwant {w:?}\ngot {got:#?}"
                );
            }
            assert_eq!(got.len(), wants.len(), "config:\n{text}\ngot {got:#?}");
        }
    }

    #[test]
    fn build_reports_errors_with_name_prefix() {
        let c = parse("name = \"x\"\ndelay_ms = 1\nrate_mbps = 0\n");
        let e = c
            .build::<crate::packet::Packet>(Path::new("."), &crate::core::RngStreams::new(1))
            .err()
            .unwrap();
        assert_eq!(e[0].to_string(), "links[\"x\"].rate_mbps = 0: must be > 0");
    }

    #[test]
    fn schema_has_descriptions_and_ranges() {
        let s = serde_json::to_string(&schemars::schema_for!(LinkConfig)).unwrap();
        assert!(s.contains("One-way propagation delay in milliseconds"));
        assert!(s.contains("gilbert-elliott") && s.contains("mbps-per-second"));
        assert!(s.contains("\"minimum\":1500"));
    }

    #[test]
    fn token_bucket_resolves_with_its_limit_as_queue_and_is_inherited_by_the_reverse() {
        let c = parse(
            "name = \"b\"\ndelay_ms = 10\ntoken_bucket = { rate_mbps = 10, burst_bytes = 15140, limit_bytes = 45420 }",
        );
        let mut errs = Errors::default();
        let s = c.resolve("links[0]", Path::new("."), &mut errs).expect("valid");
        assert!(errs.is_empty(), "{errs:?}");
        let tb = TokenBucket {
            bps: 10_000_000,
            burst_bytes: 15140,
            overhead_bytes: 14,
            limit_bytes: 45420,
        };
        assert_eq!(s.forward.token_bucket, Some(tb));
        assert_eq!(s.forward.capacity, Capacity::Constant { bps: 10_000_000 });
        assert_eq!(s.forward.queue, QueueLimit::Bytes(45420));
        assert_eq!(s.reverse.token_bucket, Some(tb));
        // A reverse rate replaces the bucket (and then the reverse may give its own queue).
        let c = parse("name = \"b\"\ndelay_ms = 10\ntoken_bucket = { rate_mbps = 10, burst_bytes = 15140, limit_bytes = 45420 }\nreverse = { rate_mbps = 1000, queue_packets = 1000 }");
        let s = c.resolve("links[0]", Path::new("."), &mut errs).expect("valid");
        assert_eq!(
            (s.reverse.token_bucket, s.reverse.queue),
            (None, QueueLimit::Packets(1000))
        );
        let d = c.with_defaults();
        assert!(d.queue_packets.is_none() && d.reverse.unwrap().token_bucket.is_none());
        let d = parse(
            "name = \"b\"\ndelay_ms = 10\ntoken_bucket = { rate_mbps = 10, burst_bytes = 15140, limit_bytes = 45420 }",
        )
        .with_defaults();
        assert!(d.queue_packets.is_none() && d.reverse.unwrap().token_bucket.is_some());
    }

    #[test]
    fn token_bucket_errors_name_the_field_and_the_range() {
        let base = Path::new(".");
        let e = errors_of("name = \"b\"\ndelay_ms = 1\ntoken_bucket = { rate_mbps = 0, burst_bytes = 1513, limit_bytes = 100, frame_overhead_bytes = 14 }", base);
        assert!(
            e.iter()
                .any(|m| m.contains("links[0].token_bucket.rate_mbps") && m.contains("must be > 0")),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|m| m.contains("links[0].token_bucket.burst_bytes") && m.contains("1513") && m.contains("[1514")),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|m| m.contains("links[0].token_bucket.limit_bytes") && m.contains("[1514")),
            "{e:?}"
        );
        let e = errors_of("name = \"b\"\ndelay_ms = 1\ntoken_bucket = { rate_mbps = 1, burst_bytes = 2000, limit_bytes = 3000, frame_overhead_bytes = 300 }", base);
        assert!(
            e.iter()
                .any(|m| m.contains("links[0].token_bucket.frame_overhead_bytes") && m.contains("[0, 256]")),
            "{e:?}"
        );
        let e = errors_of("name = \"b\"\ndelay_ms = 1\nrate_mbps = 5\nqueue_packets = 10\noutages = [ { start_s = 1, duration_s = 1 } ]\ntoken_bucket = { rate_mbps = 1, burst_bytes = 2000, limit_bytes = 3000 }", base);
        assert!(e.iter().any(|m| m.contains("found rate_mbps, token_bucket")), "{e:?}");
        assert!(
            e.iter()
                .any(|m| m.contains("links[0].queue_packets") && m.contains("token_bucket.limit_bytes")),
            "{e:?}"
        );
        assert!(
            e.iter()
                .any(|m| m.contains("links[0].outages") && m.contains("token_bucket")),
            "{e:?}"
        );
        let e = errors_of("name = \"b\"\ndelay_ms = 1\ntoken_bucket = { rate_mbps = 1, burst_bytes = 2000, limit_bytes = 3000 }\nreverse = { queue_bytes = 5000 }", base);
        assert!(
            e.iter()
                .any(|m| m.contains("links[0].reverse.queue_bytes") && m.contains("token_bucket")),
            "{e:?}"
        );
        let e = errors_of("name = \"b\"\ndelay_ms = 1\n", base);
        assert!(
            e.iter()
                .any(|m| m.contains("rate_mbps, rate_schedule, trace, token_bucket") && m.contains("found none")),
            "{e:?}"
        );
    }
}
