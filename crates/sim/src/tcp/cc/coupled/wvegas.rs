//! wVegas, weighted Vegas for MPTCP subflows.
//!
//! Sources: Y. Cao, M. Xu, X. Fu, "Delay-based Congestion Control for Multipath TCP",
//! IEEE ICNP 2012; Linux out-of-tree MPTCP `net/mptcp/mptcp_wvegas.c`. Vegas itself: see
//! [`crate::tcp::cc::vegas`].
//!
//! What it does, as Linux does it:
//! - Per subflow, Vegas-style sampling: baseRTT = minimum RTT sample (+1 µs, as Linux), and per
//!   RTT the *average* of the RTT samples taken in it (Vegas uses the minimum).
//! - Once per RTT (when a segment sent after the previous decision is ACKed), with at least 3
//!   samples: `diff = cwnd·(rtt − baseRTT)/rtt` (segments this subflow has queued).
//!   - Slow start: diff > γ = 1 ends it with cwnd = min(cwnd, cwnd·baseRTT/rtt + 1) and
//!     ssthresh = min(ssthresh, cwnd − 1); otherwise Reno slow start.
//!   - Congestion avoidance: if diff ≥ α_r, recompute `α_r = max(2, ⌊weight_r·total_α⌋)` with
//!     `weight_r = rate_r/Σ_k rate_k`, total_α = 10 (initially α_r = 2, weight 1); then
//!     diff > α_r → cwnd − 1 (ssthresh = min(ssthresh, cwnd − 1)), diff < α_r → cwnd + 1.
//!   - Queue drain: with `q = rtt − baseRTT` and `q_min` the smallest q seen since the last
//!     drain, if `q ≥ 2·q_min` then cwnd = cwnd·baseRTT/(2·rtt) and q_min is forgotten.
//!   - cwnd stays within [2, clamp]; ssthresh = max(ssthresh, ¾·cwnd) (`tcp_current_ssthresh`).
//! - Fewer than 3 samples in the RTT, or any state but Open: Reno. Entering Open restarts the
//!   sampling and resets α_r = 2, weight 1 and q_min (Linux `wvegas_enable`). Loss response:
//!   Reno (ssthresh = max(cwnd/2, 2)).
//!
//! Deviations from Linux:
//! - Rates `rate_k = cwnd_k/srtt_k` of all active subflows with an RTT sample come from the
//!   shared table (this subflow's from its Tcb). Linux sums each sibling's `instant_rate` =
//!   cwnd/rtt from that sibling's last α recomputation (0 after an RTO or a restart, skipped while
//!   it has no samples in its current RTT) and uses this round's average RTT for its own.
//! - Linux treats q_min = 0 as "unset", so a round without any queueing (q = 0, which is common
//!   in a deterministic simulator: every sample equal to baseRTT) satisfies `q ≥ 2·q_min` and
//!   halves cwnd; here the drain needs q > 0.
//! - The end of the RTT is tracked in segments as in [`crate::tcp::cc::vegas`]; restart after
//!   idle is `CwndEvent::TxStart` (Linux `CA_EVENT_CWND_RESTART`); RTTs are in ns.
use super::{paths, publish, reno_ssthresh, Coupling};
use crate::core::time::NS_PER_US;
use crate::core::Time;
use crate::tcp::cc::reno::Reno;
use crate::tcp::cc::{CaState, CongestionControl, CwndEvent, RecoveryStyle, Tcb};

/// α of every subflow until its first recomputation.
pub const INITIAL_ALPHA: u32 = 2;
/// Sum of the α's of a connection's subflows (segments queued in the network).
pub const TOTAL_ALPHA: u32 = 10;
/// Slow-start exit threshold (segments queued).
pub const GAMMA: u32 = 1;

pub struct WVegas {
    coupling: Coupling,
    index: usize,
    /// Vegas decisions on (Open state).
    doing_now: bool,
    /// The current RTT ends when `tcb.delivered` exceeds this.
    beg_snd_nxt: u64,
    /// RTT samples in the current RTT and their sum.
    cnt_rtt: u32,
    sampled_rtt: Time,
    /// Minimum RTT sample seen.
    base_rtt: Time,
    weight: f64,
    alpha: u32,
    /// Smallest queueing delay seen since the last drain (0 = none).
    queue_delay: Time,
    reno: Reno,
}

impl WVegas {
    pub fn new(coupling: Coupling, index: usize) -> Self {
        WVegas {
            coupling,
            index,
            doing_now: true,
            beg_snd_nxt: 0,
            cnt_rtt: 0,
            sampled_rtt: 0,
            base_rtt: Time::MAX,
            weight: 1.0,
            alpha: INITIAL_ALPHA,
            queue_delay: 0,
            reno: Reno::new(RecoveryStyle::NewReno),
        }
    }

    /// Current α_r (segments this subflow aims to keep queued).
    pub fn alpha(&self) -> u32 {
        self.alpha
    }
    /// Minimum RTT seen (Time::MAX = none yet).
    pub fn base_rtt(&self) -> Time {
        self.base_rtt
    }

    /// Linux `wvegas_enable`.
    fn enable(&mut self, tcb: &Tcb) {
        self.doing_now = true;
        self.beg_snd_nxt = tcb.delivered + tcb.in_flight as u64;
        self.cnt_rtt = 0;
        self.sampled_rtt = 0;
        self.alpha = INITIAL_ALPHA;
        self.weight = 1.0;
        self.queue_delay = 0;
    }

    /// weight_r = rate_r/Σ rates over the table; unchanged if a rate is unknown.
    fn weight(&self, tcb: &Tcb) -> f64 {
        let (ps, me) = paths(&self.coupling, self.index, tcb);
        let total: f64 = ps.iter().map(|p| p.rate()).sum();
        match me {
            Some(me) if total > 0.0 && ps[me].rate() > 0.0 => ps[me].rate() / total,
            _ => self.weight,
        }
    }

    /// The once-per-RTT decision from this RTT's samples.
    fn adjust(&mut self, tcb: &mut Tcb, acked: u32) {
        let rtt = self.sampled_rtt / self.cnt_rtt as u64;
        let base = self.base_rtt.min(rtt);
        let cwnd = tcb.cwnd as u64;
        let target_cwnd = cwnd * base / rtt;
        let diff = cwnd * (rtt - base) / rtt;

        if diff > GAMMA as u64 && tcb.in_slow_start() {
            tcb.cwnd = tcb.cwnd.min(target_cwnd as u32 + 1);
            tcb.ssthresh = tcb.ssthresh.min(tcb.cwnd.saturating_sub(1));
        } else if tcb.in_slow_start() {
            tcb.slow_start(acked);
        } else {
            if diff >= self.alpha as u64 {
                self.weight = self.weight(tcb);
                self.alpha = ((self.weight * TOTAL_ALPHA as f64) as u32).max(2);
            }
            if diff > self.alpha as u64 {
                tcb.cwnd -= 1;
                tcb.ssthresh = tcb.ssthresh.min(tcb.cwnd.saturating_sub(1));
            } else if diff < self.alpha as u64 {
                tcb.cwnd += 1;
            }
            // Drain the queue when the queueing delay has doubled since its minimum.
            let q = rtt - base;
            if self.queue_delay == 0 || self.queue_delay > q {
                self.queue_delay = q;
            }
            if q > 0 && q >= 2 * self.queue_delay {
                tcb.cwnd = (tcb.cwnd as u64 * base / (2 * rtt)) as u32;
                self.queue_delay = 0;
            }
        }
        tcb.cwnd = tcb.cwnd.clamp(2, tcb.cwnd_clamp.max(2));
        // tcp_current_ssthresh (only called in Open).
        tcb.ssthresh = tcb.ssthresh.max((tcb.cwnd >> 1) + (tcb.cwnd >> 2));
    }
}

impl CongestionControl for WVegas {
    fn name(&self) -> &'static str {
        "wvegas"
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, acked: u32, now: Time) {
        if !self.doing_now {
            self.reno.cong_avoid(tcb, acked, now);
        } else if tcb.delivered > self.beg_snd_nxt {
            self.beg_snd_nxt = tcb.delivered + tcb.in_flight as u64;
            if self.cnt_rtt <= 2 {
                self.reno.cong_avoid(tcb, acked, now);
            } else {
                self.adjust(tcb, acked);
            }
            self.cnt_rtt = 0;
            self.sampled_rtt = 0;
        } else if tcb.in_slow_start() {
            tcb.slow_start(acked);
        }
        publish(&self.coupling, self.index, tcb);
    }

    fn ssthresh(&mut self, tcb: &Tcb, _now: Time) -> u32 {
        reno_ssthresh(tcb)
    }

    fn pkts_acked(&mut self, _tcb: &Tcb, _acked: u32, rtt: Time, _now: Time) {
        if rtt == 0 {
            return;
        }
        let vrtt = rtt + NS_PER_US;
        self.base_rtt = self.base_rtt.min(vrtt);
        self.sampled_rtt += vrtt;
        self.cnt_rtt += 1;
    }

    fn set_state(&mut self, tcb: &mut Tcb, new_state: CaState, _now: Time) {
        if new_state == CaState::Open {
            self.enable(tcb);
        } else {
            self.doing_now = false;
        }
    }

    fn cwnd_event(&mut self, tcb: &mut Tcb, ev: CwndEvent, _now: Time) {
        if ev == CwndEvent::TxStart {
            self.base_rtt = Time::MAX;
            self.enable(tcb);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::fluid::Fluid;
    use super::super::{new_coupling, SubflowCc};
    use super::*;
    use crate::core::time::NS_PER_MS;
    use crate::tcp::cc::{by_name, RateSample};

    const MSS: u32 = 1448;
    const MS: Time = NS_PER_MS;

    /// `n` ACKs of one segment, each with RTT sample `rtt` (also the subflow's srtt), spread
    /// over a round.
    fn acks(v: &mut WVegas, tcb: &mut Tcb, now: &mut Time, rtt: Time, n: u32) {
        tcb.srtt = rtt;
        for _ in 0..n {
            *now += rtt / tcb.cwnd as u64;
            tcb.delivered += 1;
            tcb.in_flight = tcb.in_flight.saturating_sub(1);
            v.pkts_acked(tcb, 1, rtt, *now);
            if !v.cong_control(tcb, &RateSample::default(), *now) {
                v.cong_avoid(tcb, 1, *now);
            }
        }
    }

    /// One RTT: an ACK for every segment of the window. As in Linux, the decision at the first
    /// ACK of a round judges the previous round's samples.
    fn round(v: &mut WVegas, tcb: &mut Tcb, now: &mut Time, rtt: Time) {
        let n = tcb.cwnd;
        tcb.in_flight = n;
        acks(v, tcb, now, rtt, n);
    }

    /// Subflow 0 in congestion avoidance at `cwnd` with baseRTT 100 ms learnt, then one round
    /// at `rtt` (its decision has a single sample: Reno, no change), so that the next round
    /// judges samples of `rtt` only. `sibling` = (cwnd, srtt) of an active subflow 1, if any.
    fn in_ca(cwnd: u32, sibling: Option<(u32, Time)>, rtt: Time) -> (WVegas, Tcb, Time) {
        let c = new_coupling(2);
        if let Some((w, srtt)) = sibling {
            c.borrow_mut()[1] = SubflowCc {
                active: true,
                cwnd: w,
                srtt,
                mss: MSS,
                ..Default::default()
            };
        }
        let mut v = WVegas::new(c, 0);
        let mut tcb = Tcb::new(MSS, cwnd);
        tcb.ssthresh = 2;
        let mut now = 0;
        round(&mut v, &mut tcb, &mut now, 100 * MS);
        tcb.cwnd = cwnd;
        tcb.cwnd_cnt = 0;
        tcb.ssthresh = 2;
        tcb.in_flight = 0;
        v.set_state(&mut tcb, CaState::Open, now);
        round(&mut v, &mut tcb, &mut now, rtt);
        assert_eq!(tcb.cwnd, cwnd);
        (v, tcb, now)
    }

    #[test]
    fn alpha_recomputed_from_rate_weight_when_diff_reaches_alpha() {
        let (mut v, mut tcb, mut now) = in_ca(30, Some((10, 50 * MS)), 110 * MS);
        assert_eq!(v.alpha(), INITIAL_ALPHA);
        round(&mut v, &mut tcb, &mut now, 110 * MS);
        // diff = ⌊30·10/110⌋ = 2 ≥ α = 2: weight = (30/110)/(30/110 + 10/50) = 0.58, so
        // α = ⌊5.8⌋ = 5; diff < 5: +1.
        assert_eq!(v.alpha(), 5);
        assert_eq!(tcb.cwnd, 31);
        // Alone (sibling inactive): weight 1, α = total_α = 10.
        let (mut v, mut tcb, mut now) = in_ca(30, None, 110 * MS);
        round(&mut v, &mut tcb, &mut now, 110 * MS);
        assert_eq!(v.alpha(), TOTAL_ALPHA);
        assert_eq!(tcb.cwnd, 31);
        // A sibling with the same rate: weight 1/2, α = 5.
        let (mut v, mut tcb, mut now) = in_ca(30, Some((30, 110 * MS)), 110 * MS);
        round(&mut v, &mut tcb, &mut now, 110 * MS);
        assert_eq!(v.alpha(), 5);
    }

    #[test]
    fn steps_of_one_around_alpha() {
        // Alone, α becomes 10. RTT 160 ms: diff = ⌊cwnd·60/160⌋ > 10 while cwnd ≥ 30: −1 per RTT
        // down to 29 (diff 10 = α), then hold.
        let (mut v, mut tcb, mut now) = in_ca(34, None, 160 * MS);
        let mut seen = vec![];
        for _ in 0..8 {
            round(&mut v, &mut tcb, &mut now, 160 * MS);
            seen.push(tcb.cwnd);
        }
        assert_eq!(seen, [33, 32, 31, 30, 29, 29, 29, 29]);
        assert_eq!(v.alpha(), 10);
        // min(ssthresh, cwnd − 1) on each decrease, then max(ssthresh, ¾·cwnd): ¾·33 → 24.
        assert_eq!(tcb.ssthresh, 24);
        // Below α: +1 per RTT; no queueing (diff 0) never recomputes α nor drains.
        let (mut v, mut tcb, mut now) = in_ca(20, None, 100 * MS);
        for i in 1..=5 {
            round(&mut v, &mut tcb, &mut now, 100 * MS);
            assert_eq!(tcb.cwnd, 20 + i);
        }
        assert_eq!(v.alpha(), INITIAL_ALPHA);
    }

    #[test]
    fn drains_when_queueing_delay_doubles() {
        let (mut v, mut tcb, mut now) = in_ca(30, None, 105 * MS);
        round(&mut v, &mut tcb, &mut now, 105 * MS); // judges 105 ms: q_min = 5 ms; diff 1: +1
        assert_eq!(tcb.cwnd, 31);
        // Judges 29 samples of 105 ms and one of 110 ms: q = 5.17 ms < 2·q_min; +1.
        round(&mut v, &mut tcb, &mut now, 110 * MS);
        assert_eq!(tcb.cwnd, 32);
        // The first ACK of the next round judges 110 ms: q = 10 ms ≥ 2·5 ms. diff = ⌊32·10/110⌋
        // = 2 ≥ α: α = 10, +1 → 33; then the drain: ⌊33·100.001/(2·110.001)⌋ = 15.
        tcb.in_flight = tcb.cwnd;
        acks(&mut v, &mut tcb, &mut now, 110 * MS, 1);
        assert_eq!(tcb.cwnd, 15);
        // ssthresh stays at ¾ of the earlier window (tcp_current_ssthresh), so the rest of the
        // round slow-starts back up to it, as in Linux.
        assert_eq!(tcb.ssthresh, 24);
        acks(&mut v, &mut tcb, &mut now, 110 * MS, 31);
        assert_eq!(tcb.cwnd, 24);
        // q_min forgotten: the next 110 ms round sets it again and does not drain; diff 2 < α.
        round(&mut v, &mut tcb, &mut now, 110 * MS);
        assert_eq!(tcb.cwnd, 25);
    }

    #[test]
    fn reno_outside_open_and_floor_two() {
        let (mut v, mut tcb, mut now) = in_ca(20, None, 100 * MS);
        v.set_state(&mut tcb, CaState::Disorder, now);
        // Reno in Disorder even with a long RTT: +1 per cwnd ACKs.
        round(&mut v, &mut tcb, &mut now, 300 * MS);
        assert_eq!(tcb.cwnd, 21);
        assert_eq!(v.ssthresh(&tcb, now), 10);
        v.set_state(&mut tcb, CaState::Open, now);
        assert_eq!(v.alpha(), INITIAL_ALPHA);
        // A drain below 2 segments stops at 2: cwnd 3 → 4, then 4·100/(2·500) = 0.4 → 2.
        v.base_rtt = 100 * MS;
        v.queue_delay = 10 * MS;
        v.cnt_rtt = 3;
        v.sampled_rtt = 3 * 500 * MS;
        tcb.cwnd = 3;
        v.adjust(&mut tcb, 1);
        assert_eq!(tcb.cwnd, 2);
        v.cwnd_event(&mut tcb, CwndEvent::TxStart, now);
        assert_eq!(v.base_rtt(), Time::MAX);
    }

    /// Two subflows through one bottleneck (BDP 100 segments): the total window is about a
    /// single Vegas flow's on the same bottleneck, and together the subflows keep about
    /// total_α = 10 segments queued (α = 5 each; two uncoupled Vegas flows keep 2–4 each).
    #[test]
    fn shared_bottleneck_total_is_one_vegas() {
        let rtt = 100 * MS;
        let cap = 1000.0;
        let mut vegas = Fluid::new(&[(rtt, 0.0)], |_, _| by_name("vegas").unwrap()).with_bottleneck(cap);
        let single = vegas.run_avg_total();
        let mut wv = Fluid::lossy("wvegas", &[(rtt, 0.0), (rtt, 0.0)]).with_bottleneck(cap);
        let total = wv.run_avg_total();
        assert!(
            (0.7..=1.3).contains(&(total / single)),
            "wvegas {total:.1} vegas {single:.1}"
        );
        // Queued = total − BDP; diff is rounded down, so up to one more per subflow.
        let queued = total - 100.0;
        assert!((10.0..=12.5).contains(&queued), "wvegas {total:.1}");
    }
}
