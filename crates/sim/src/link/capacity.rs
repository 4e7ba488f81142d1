//! Capacity timelines: how many bits a link direction may send, and when.
//!
//! Three shapes, all static (known before the run starts), so a transmission's finish
//! time can be computed exactly the moment it starts:
//! - [`Capacity::Constant`]: one rate forever;
//! - [`Capacity::Schedule`]: piecewise-constant rates (a `rate_schedule`, or a
//!   `mbps-per-second` trace, which repeats with a period);
//! - [`Capacity::Opportunities`]: mahimahi delivery opportunities, each worth
//!   [`OPPORTUNITY_BYTES`] bytes, repeating with period = the last timestamp
//!   (Netravali et al., "Mahimahi: Accurate Record-and-Replay for HTTP", USENIX ATC 2015;
//!   `src/packet/link_queue.cc`, `LinkQueue::next_delivery_time` / `use_a_delivery_opportunity`).
//!
//! [`Outage`]s overlay any of them: inside `[start, end)` the capacity is zero.
//! Rates are integer bit/s so the integration below is exact integer arithmetic.
use crate::core::time::{Time, NEVER, NS_PER_S};
use serde::{Deserialize, Serialize};

/// Bytes one mahimahi delivery opportunity may carry (mahimahi's `PACKET_SIZE`).
pub const OPPORTUNITY_BYTES: u32 = 1500;

/// A link direction's capacity over time (outages excluded; see [`Timeline`]).
#[derive(Clone, Debug, PartialEq)]
pub enum Capacity {
    /// A constant rate in bit/s (> 0).
    Constant { bps: u64 },
    /// Piecewise-constant rates: `points[i] = (start_ns, bit/s)`; `points[0].0 == 0`,
    /// starts strictly increasing. With `period = Some(p)` (all starts `< p`) the
    /// schedule repeats every `p` ns; with `None` the last rate holds forever.
    Schedule {
        points: Vec<(Time, u64)>,
        period: Option<Time>,
    },
    /// mahimahi delivery opportunities at `times` (ns, non-decreasing, last == `period` > 0);
    /// opportunity `i` of cycle `k` happens at `k·period + times[i]`.
    Opportunities { times: Vec<Time>, period: Time },
}

/// What happens to queued packets during an outage.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, schemars::JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum OutageQueued {
    /// Queued packets (and a partly sent one) wait and go out after the outage.
    #[default]
    Hold,
    /// The queue is flushed when the outage starts and arrivals during it are dropped.
    Drop,
}

/// An interval `[start, end)` in which a link transmits nothing (both directions).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Outage {
    pub start: Time,
    pub end: Time,
    pub queued: OutageQueued,
}

/// X2 forwarding at a handover (TS 36.300 §10.1.2.1 X2 handover, §10.1.2.3 data forwarding): packets that are
/// still at the source when the UE detaches at `start` (queued, or partly sent), or that arrive
/// before `end`, are forwarded to the target cell and transmitted from
/// `end + extra_delay` on, in FIFO order (the target sends forwarded data before fresh data,
/// TS 36.300 §10.1.2.2, so later arrivals wait behind them). A packet already at the source at
/// the detach is lost with probability `queued_loss` (1 = the source's buffer is discarded, as
/// in ns-3's LENA X2 handover, which forwards only what reaches the source after the handover
/// command; 0 = lossless 3GPP forwarding of un-acknowledged PDCP SDUs, TS 36.300 §10.1.2.3); one
/// arriving during the interruption is lost with probability `loss_prob` (forwarding is best
/// effort). A partly sent packet is sent again in full by the target. Applies to one direction
/// (the downlink); usually paired with a `Hold` [`Outage`] `[start, end)` on the link.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Forwarding {
    pub start: Time,
    pub end: Time,
    pub extra_delay: Time,
    pub loss_prob: f64,
    pub queued_loss: f64,
    /// The target's transmit buffer for the forwarded packets, bytes (`u64::MAX`: unlimited).
    /// ns-3 hands the whole forwarded burst to the target's RLC at once (`UeManager::
    /// RecvRrcConnectionReconfigurationCompleted` empties `m_packetBuffer` into PDCP) and
    /// `LteRlcAm::DoTransmitPdcpPdu` discards an SDU that does not fit in `MaxTxBufferSize`:
    /// forwarded packets beyond this many bytes (in arrival order) are lost.
    pub buffer_bytes: u64,
}

impl Forwarding {
    /// When forwarded packets may start going out at the target.
    #[inline]
    pub fn release(&self) -> Time {
        self.end.saturating_add(self.extra_delay)
    }
}

/// A capacity plus the link's outages (sorted by start, non-overlapping).
#[derive(Clone, Debug, PartialEq)]
pub struct Timeline {
    pub cap: Capacity,
    pub outages: Vec<Outage>,
}

/// Index of the first outage that ends after `t`, and whether `t` lies inside it.
#[inline]
fn outage_index(outages: &[Outage], t: Time) -> (usize, bool) {
    let i = outages.partition_point(|o| o.end <= t);
    let inside = i < outages.len() && outages[i].start <= t;
    (i, inside)
}

impl Capacity {
    /// Makes a hand-built capacity safe to run (specs from [`LinkConfig`](super::LinkConfig)
    /// already are): sorted points starting at 0, a period that covers them, no periodic
    /// all-zero schedule (it would be searched forever for capacity), non-empty
    /// opportunity lists with period = last time > 0. Anything unusable becomes "never
    /// sends" rather than a panic or a hang.
    pub fn sanitized(self) -> Capacity {
        let never = Capacity::Schedule {
            points: vec![(0, 0)],
            period: None,
        };
        match self {
            Capacity::Schedule { mut points, period } => {
                points.sort_by_key(|p| p.0);
                points.dedup_by_key(|p| p.0);
                let mut period = period.filter(|&p| p > 0);
                if let Some(p) = period {
                    points.retain(|q| q.0 < p);
                }
                match points.first_mut() {
                    None => return never,
                    Some(first) => first.0 = 0,
                }
                if points.iter().all(|q| q.1 == 0) {
                    period = None;
                }
                Capacity::Schedule { points, period }
            }
            Capacity::Opportunities { mut times, .. } => {
                times.sort_unstable();
                match times.last() {
                    Some(&last) if last > 0 => Capacity::Opportunities { period: last, times },
                    _ => never,
                }
            }
            c => c,
        }
    }

    /// The rate in force at `t` and the piece `[start, end)` it holds on.
    /// (Opportunity traces have no instantaneous rate; they report 0 forever.)
    pub fn piece_at(&self, t: Time) -> (Time, Time, u64) {
        match self {
            Capacity::Constant { bps } => (0, NEVER, *bps),
            Capacity::Schedule { points, period } => {
                let (base, local, p_end) = match period {
                    Some(p) => {
                        let k = t / p;
                        (k * p, t - k * p, Some(*p))
                    }
                    None => (0, t, None),
                };
                // points[0].0 == 0 <= local, so idx >= 0.
                let idx = points.partition_point(|q| q.0 <= local).saturating_sub(1);
                let start = base.saturating_add(points[idx].0);
                let end = match points.get(idx + 1) {
                    Some(q) => base.saturating_add(q.0),
                    None => match p_end {
                        Some(p) => base.saturating_add(p),
                        None => NEVER,
                    },
                };
                (start, end, points[idx].1)
            }
            Capacity::Opportunities { .. } => (0, NEVER, 0),
        }
    }

    /// Time of opportunity `i` of cycle `k` (saturating at [`NEVER`]).
    #[inline]
    pub(crate) fn opp_time(times: &[Time], period: Time, k: u64, i: usize) -> Time {
        k.saturating_mul(period).saturating_add(times[i])
    }

    /// The first opportunity `(cycle, index)` whose time is `>= t`.
    ///
    /// The last opportunity of cycle k−1 (at `k·period`) may coincide with or follow `t`
    /// even when `t / period == k`, so the search starts one cycle early.
    pub(crate) fn first_opp_at_or_after(times: &[Time], period: Time, t: Time) -> (u64, usize) {
        let k0 = t / period;
        for k in [k0.saturating_sub(1), k0] {
            let base = k.saturating_mul(period);
            let i = times.partition_point(|&x| base.saturating_add(x) < t);
            if i < times.len() {
                return (k, i);
            }
        }
        (k0.saturating_add(1), 0)
    }

    /// Number of opportunities strictly before `t`.
    fn opps_before(times: &[Time], period: Time, t: Time) -> u64 {
        let n = times.len() as u64;
        let k0 = t / period;
        let mut c = 0u64;
        if k0 >= 1 {
            // Cycles 0..=k0-2 end (at most) at (k0-1)·period < t: fully counted.
            c = (k0 - 1).saturating_mul(n);
            c = c.saturating_add(times.partition_point(|&x| (k0 - 1) * period + x < t) as u64);
        }
        c.saturating_add(times.partition_point(|&x| (k0 * period).saturating_add(x) < t) as u64)
    }
}

impl Timeline {
    /// Effective rate at `t` (0 inside an outage) and the piece `[start, end)` over which
    /// it is constant. Not meaningful for opportunity traces.
    pub fn piece_at(&self, t: Time) -> (Time, Time, u64) {
        if self.outages.is_empty() {
            return self.cap.piece_at(t);
        }
        let (i, inside) = outage_index(&self.outages, t);
        if inside {
            return (self.outages[i].start, self.outages[i].end, 0);
        }
        let next_out = self.outages.get(i).map_or(NEVER, |o| o.start);
        let prev_end = if i > 0 { self.outages[i - 1].end } else { 0 };
        let (s, e, r) = self.cap.piece_at(t);
        (s.max(prev_end), e.min(next_out), r)
    }

    /// The outage covering `t`, if any.
    #[inline]
    pub fn outage_at(&self, t: Time) -> Option<&Outage> {
        if self.outages.is_empty() {
            return None;
        }
        let (i, inside) = outage_index(&self.outages, t);
        if inside {
            Some(&self.outages[i])
        } else {
            None
        }
    }

    /// Bits the timeline can carry in `[a, b)` (outages excluded), as f64.
    pub fn capacity_bits(&self, a: Time, b: Time) -> f64 {
        if b <= a {
            return 0.0;
        }
        match &self.cap {
            Capacity::Opportunities { times, period } => {
                let count = |x: Time, y: Time| {
                    Capacity::opps_before(times, *period, y).saturating_sub(Capacity::opps_before(times, *period, x))
                };
                let mut n = count(a, b);
                for o in &self.outages {
                    let (x, y) = (o.start.max(a), o.end.min(b));
                    if x < y {
                        n = n.saturating_sub(count(x, y));
                    }
                }
                n as f64 * (OPPORTUNITY_BYTES as f64 * 8.0)
            }
            _ => {
                // Sum rate × duration piece by piece; integer bit·ns, then one division.
                let mut t = a;
                let mut acc: u128 = 0;
                while t < b {
                    let (_, end, r) = self.piece_at(t);
                    let e = end.min(b);
                    acc += r as u128 * (e - t) as u128;
                    t = e;
                }
                acc as f64 / NS_PER_S as f64
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn schedule_pieces_wrap_with_period() {
        let c = Capacity::Schedule {
            points: vec![(0, 5), (10, 0), (15, 7)],
            period: Some(20),
        };
        assert_eq!(c.piece_at(0), (0, 10, 5));
        assert_eq!(c.piece_at(12), (10, 15, 0));
        assert_eq!(c.piece_at(19), (15, 20, 7));
        assert_eq!(c.piece_at(20), (20, 30, 5));
        assert_eq!(c.piece_at(55), (55, 60, 7));
        let c = Capacity::Schedule {
            points: vec![(0, 5), (10, 3)],
            period: None,
        };
        assert_eq!(c.piece_at(1_000_000), (10, NEVER, 3));
    }

    #[test]
    fn outages_cut_pieces() {
        let tl = Timeline {
            cap: Capacity::Constant { bps: 9 },
            outages: vec![
                Outage {
                    start: 10,
                    end: 20,
                    queued: OutageQueued::Hold,
                },
                Outage {
                    start: 30,
                    end: 40,
                    queued: OutageQueued::Drop,
                },
            ],
        };
        assert_eq!(tl.piece_at(0), (0, 10, 9));
        assert_eq!(tl.piece_at(10), (10, 20, 0));
        assert_eq!(tl.piece_at(20), (20, 30, 9));
        assert_eq!(tl.piece_at(39), (30, 40, 0));
        assert_eq!(tl.piece_at(40), (40, NEVER, 9));
        assert_eq!(tl.capacity_bits(0, 50), 9.0 * 30.0 / 1e9);
    }

    #[test]
    fn opportunity_search_and_count() {
        // Opportunities at 0, 2, 2, 5 (=period): cycle 1 at 5, 7, 7, 10, ...
        let t = vec![0, 2, 2, 5];
        assert_eq!(Capacity::first_opp_at_or_after(&t, 5, 0), (0, 0));
        assert_eq!(Capacity::first_opp_at_or_after(&t, 5, 1), (0, 1));
        assert_eq!(Capacity::first_opp_at_or_after(&t, 5, 3), (0, 3));
        assert_eq!(Capacity::first_opp_at_or_after(&t, 5, 5), (0, 3)); // cycle 0's last, at 5
        assert_eq!(Capacity::first_opp_at_or_after(&t, 5, 6), (1, 1));
        assert_eq!(Capacity::first_opp_at_or_after(&t, 5, 10), (1, 3));
        // Brute-force count check.
        for x in 0..40u64 {
            let brute = (0..10u64)
                .flat_map(|k| t.iter().map(move |&ti| k * 5 + ti))
                .filter(|&y| y < x)
                .count() as u64;
            assert_eq!(Capacity::opps_before(&t, 5, x), brute, "t = {x}");
        }
    }
}
