//! MPTCP packet schedulers behind one trait.
//!
//! As in Linux (`net/mptcp/sched.c`, out-of-tree `mptcp_sched.c`), a scheduler only *chooses*:
//! it sees a read-only snapshot of the connection and its subflows and returns a
//! [`Decision`]; the connection core pushes the segment, handles reinjection and fallback.
//! Wrappers (`hst::wrappers`: PHA, oracle, blocking) filter the view before delegating to an inner
//! scheduler.
use crate::core::Time;

/// Read-only state of one subflow at decision time.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct SubflowView {
    /// Index of the subflow in the connection.
    pub id: usize,
    /// Handshake complete (MP_CAPABLE / MP_JOIN done) and not closed.
    pub established: bool,
    /// "Potentially failed": its RTO fired and nothing valid arrived since (out-of-tree `pf`).
    pub pf: bool,
    /// Upstream's "stale" mark (stale_loss_cnt retransmission intervals without progress).
    pub stale: bool,
    /// Backup: either end asked (MP_JOIN B bit, MP_PRIO, or the local endpoint flag).
    pub backup: bool,
    /// In the Loss state (after an RTO, until the lost data is recovered).
    pub in_loss: bool,
    /// Congestion window, segments.
    pub cwnd: u32,
    /// Slow-start threshold, segments (`u32::MAX` = infinite).
    pub ssthresh: u32,
    /// Segments in flight (sent, not yet acknowledged or declared lost).
    pub in_flight: u32,
    /// Segments pushed to this subflow by the scheduler but not yet transmitted.
    pub queued: u32,
    /// Bytes pushed but not yet transmitted (`queued` in bytes).
    pub queued_bytes: u64,
    /// Bytes sent on this subflow and not yet acknowledged at subflow level.
    pub unacked_bytes: u64,
    /// Smoothed RTT (ns); 0 before the first sample.
    pub srtt: Time,
    /// RTT variation (ns), RFC 6298's RTTVAR (not Linux's 4·RTTVAR scaling).
    pub rttvar: Time,
    /// Minimum and maximum smoothed RTT seen (for BLEST).
    pub min_srtt: Time,
    pub max_srtt: Time,
    /// Payload bytes per segment.
    pub mss: u32,
    /// Pacing rate in bytes/s as upstream Linux computes it for the linger estimate
    /// (`mss·max(cwnd, packets_out)/srtt × (2.0 in slow start below ssthresh/2, else 1.2)`).
    pub pacing_rate_bytes_per_s: f64,
    /// Data delivered on this subflow so far (bytes), for learning schedulers.
    pub delivered_bytes: u64,
    /// Recent loss rate estimate in [0, 1] (lost / sent over the last RTTs), for learning schedulers.
    pub loss_rate: f64,
    /// Serialisation time of one segment at the subflow's recent delivery rate (ns), 0 if unknown
    /// (P1's `D_t`).
    pub tx_time_per_segment: Time,
}

impl SubflowView {
    /// Never usable (out-of-tree `mptcp_is_def_unavailable`): not established, or `pf`.
    pub fn never_usable(&self) -> bool {
        !self.established || self.pf
    }
    /// Temporarily unavailable (out-of-tree `mptcp_is_temp_unavailable`): in Loss, or the
    /// cwnd is already filled by what is in flight plus what is queued.
    pub fn temp_unavailable(&self) -> bool {
        self.in_loss || self.in_flight + self.queued >= self.cwnd
    }
    /// Usable now.
    pub fn available(&self) -> bool {
        !self.never_usable() && !self.temp_unavailable()
    }
}

/// Connection-level state at decision time.
#[derive(Clone, Debug, Default)]
pub struct ConnView {
    pub now: Time,
    /// Connection-level send window left (bytes): peer's window beyond DATA_ACK minus data
    /// already assigned beyond DATA_ACK.
    pub send_window_left: u64,
    /// Peer's whole advertised connection-level window (bytes).
    pub send_window: u64,
    /// Bytes waiting at connection level, not yet pushed to any subflow (`sndbuf_unsent`).
    pub unsent_bytes: u64,
    /// The segment to place.
    pub segment: SegmentInfo,
}

/// The segment the scheduler is asked to place.
#[derive(Clone, Debug, Default)]
pub struct SegmentInfo {
    pub dsn: u64,
    pub len: u32,
    /// From the reinjection queue (or a P1 retransmission request).
    pub reinjection: bool,
    /// Subflows this data was already sent on (bit i = subflow i).
    pub sent_on: u64,
}

/// What to do with the segment.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Decision {
    /// Push it to this subflow.
    Send(usize),
    /// Push copies to all of these (redundant).
    SendMany(Vec<usize>),
    /// Keep it at connection level for now; the core asks again at the next event.
    Wait,
}

/// Feedback the core gives schedulers that learn or adapt.
#[derive(Clone, Debug)]
pub enum SchedEvent {
    /// The receive-buffer optimisation penalised a slower subflow (BLEST's λ reacts).
    Penalised { now: Time },
    /// Connection-level data was acknowledged (DATA_ACK advanced by `bytes`).
    DataAcked { now: Time, bytes: u64 },
}

/// A packet scheduler (one instance per connection).
pub trait Scheduler {
    /// Name as written in scenarios (e.g. `minrtt`, `pha(minrtt)`).
    fn name(&self) -> String;
    /// Chooses where the segment goes.
    fn schedule(&mut self, conn: &ConnView, subflows: &[SubflowView]) -> Decision;
    /// Feedback; default ignores it.
    fn on_event(&mut self, _ev: &SchedEvent, _subflows: &[SubflowView]) {}
    /// Whether [`on_event`](Self::on_event) reads the subflow views. When false the core passes
    /// an empty slice and saves a snapshot of every subflow per DATA_ACK. Default true.
    fn event_views(&self) -> bool {
        true
    }
    /// Whether the core should apply the out-of-tree receive-buffer optimisation
    /// (penalisation + opportunistic retransmission) when the send window blocks. minRTT-family
    /// schedulers say yes; default no.
    fn rcvbuf_optimisation(&self) -> bool {
        false
    }
    /// Whether [`schedule`](Self::schedule) and [`on_event`](Self::on_event) read the views'
    /// derived rates ([`SubflowView::pacing_rate_bytes_per_s`], [`SubflowView::loss_rate`],
    /// [`SubflowView::tx_time_per_segment`]). When false the core leaves them at 0 and skips
    /// their four divisions per snapshot (a snapshot is refreshed for every segment scheduled, and
    /// a floating-point division's latency stalled the refresh). Default true: a scheduler that
    /// says false must not read them.
    fn view_rates(&self) -> bool {
        true
    }
    /// Upper bound on bytes the core may push to the chosen subflow in one decision
    /// (upstream pushes bursts of up to 64 KiB; out-of-tree one segment). Default: one segment.
    fn burst_bytes(&self) -> u64 {
        0
    }
}

// ---------------------------------------------------------------------------------------------
// Implementations, factory and configuration (added below the trait definitions).
// ---------------------------------------------------------------------------------------------

pub mod blest;
pub mod config;
pub mod delay_predictive;
pub mod ecf;
pub mod filtered;
pub mod linux_default;
pub mod minrtt;
pub mod peekaboo;
pub mod redundant;
pub mod roundrobin;

pub use config::{build, SchedulerConfig, SchedulerKind, SchedulerSpec};
pub use filtered::Filtered;

/// Whether bit `id` of a `sent_on` mask is set (ids ≥ 64 are never marked).
pub(crate) fn sent_on(mask: u64, id: usize) -> bool {
    id < 64 && mask & (1u64 << id) != 0
}

#[cfg(test)]
pub(crate) mod testutil {
    //! Hand-built views for the schedulers' unit tests.
    use super::*;

    pub const MS: Time = 1_000_000;
    pub const MSS: u32 = 1448;

    /// An established regular subflow with `srtt_ms`, `cwnd` and `in_flight`; RTTVAR = srtt/4,
    /// min/max srtt = srtt, initial slow start.
    pub fn sf(id: usize, srtt_ms: u64, cwnd: u32, in_flight: u32) -> SubflowView {
        let srtt = srtt_ms * MS;
        SubflowView {
            id,
            established: true,
            cwnd,
            ssthresh: u32::MAX,
            in_flight,
            unacked_bytes: in_flight as u64 * MSS as u64,
            srtt,
            rttvar: srtt / 4,
            min_srtt: srtt,
            max_srtt: srtt,
            mss: MSS,
            pacing_rate_bytes_per_s: if srtt > 0 {
                2.0 * MSS as f64 * cwnd as f64 / (srtt as f64 / 1e9)
            } else {
                0.0
            },
            ..Default::default()
        }
    }

    /// A connection at `now_ms` with a large window and one new MSS-sized segment to place.
    pub fn conn(now_ms: u64) -> ConnView {
        ConnView {
            now: now_ms * MS,
            send_window_left: 1 << 30,
            send_window: 1 << 30,
            unsent_bytes: 0,
            segment: SegmentInfo {
                dsn: 0,
                len: MSS,
                reinjection: false,
                sent_on: 0,
            },
        }
    }

    /// The same connection with a re-injected segment already sent on `mask`.
    pub fn reinject(now_ms: u64, mask: u64) -> ConnView {
        let mut c = conn(now_ms);
        c.segment.reinjection = true;
        c.segment.sent_on = mask;
        c
    }
}

#[cfg(test)]
mod view_rates_tests {
    use super::testutil::*;
    use super::*;
    use rand::{Rng as _, SeedableRng};

    /// Every scheduler that says it does not read the derived rates decides exactly the same with
    /// them zeroed as with random values, over random states and events: the core may skip them.
    /// (It fails for a scheduler that reads them, e.g. the delay-predictive one.)
    #[test]
    fn schedulers_without_view_rates_ignore_them() {
        let all: Vec<Box<dyn Fn() -> Box<dyn Scheduler>>> = vec![
            Box::new(|| Box::new(minrtt::MinRtt::new())),
            Box::new(|| Box::new(ecf::Ecf::default())),
            Box::new(|| Box::new(blest::Blest::new())),
            Box::new(|| Box::new(roundrobin::RoundRobin::default())),
            Box::new(|| Box::new(redundant::Redundant::new())),
            Box::new(|| Box::new(Filtered::without_rcvbuf_optimisation(Box::new(minrtt::MinRtt::new())))),
        ];
        let mut rng = crate::core::rng::Rng::seed_from_u64(3);
        for make in &all {
            let (mut zeroed, mut with_rates) = (make(), make());
            assert!(!zeroed.view_rates(), "{} reads the rates", zeroed.name());
            for step in 0..3000u64 {
                let n = rng.gen_range(1..5);
                let views: Vec<SubflowView> = (0..n)
                    .map(|i| {
                        let cwnd = rng.gen_range(1..40);
                        let mut v = sf(i, rng.gen_range(1..200), cwnd, rng.gen_range(0..=cwnd + 2));
                        v.queued_bytes = rng.gen_range(0..4) * MSS as u64;
                        v.queued = v.queued_bytes.div_ceil(MSS as u64) as u32;
                        v.ssthresh = rng.gen_range(2..80);
                        v.backup = rng.gen_range(0..6) == 0;
                        v.in_loss = rng.gen_range(0..8) == 0;
                        v
                    })
                    .collect();
                let mut rated = views.clone();
                for v in &mut rated {
                    v.pacing_rate_bytes_per_s = rng.gen_range(1.0..1e9);
                    v.loss_rate = rng.gen_range(0.0..1.0);
                    v.tx_time_per_segment = rng.gen_range(1..10 * MS);
                }
                let mut blank = views;
                for v in &mut blank {
                    (v.pacing_rate_bytes_per_s, v.loss_rate, v.tx_time_per_segment) = (0.0, 0.0, 0);
                }
                let mut c = if rng.gen_range(0..5) == 0 {
                    reinject(step, rng.gen_range(0..16))
                } else {
                    conn(step)
                };
                c.send_window_left = rng.gen_range(0..64) * MSS as u64;
                c.unsent_bytes = rng.gen_range(0..64) * MSS as u64;
                if rng.gen_range(0..10) == 0 {
                    let ev = if rng.gen_range(0..2) == 0 {
                        SchedEvent::Penalised { now: step * MS }
                    } else {
                        SchedEvent::DataAcked {
                            now: step * MS,
                            bytes: rng.gen_range(0..100_000),
                        }
                    };
                    zeroed.on_event(&ev, &blank);
                    with_rates.on_event(&ev, &rated);
                }
                assert_eq!(
                    zeroed.schedule(&c, &blank),
                    with_rates.schedule(&c, &rated),
                    "{} at step {step}",
                    zeroed.name()
                );
            }
        }
    }
}
