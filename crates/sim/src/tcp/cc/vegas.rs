//! TCP Vegas.
//!
//! Sources: L. S. Brakmo, L. L. Peterson, "TCP Vegas: End to End Congestion Avoidance on a
//! Global Internet", IEEE JSAC 13(8), 1995; Linux `net/ipv4/tcp_vegas.c`.
//!
//! What it does, as Linux does it:
//! - baseRTT = the minimum RTT seen (reset when sending restarts after idle); per RTT, the
//!   minimum RTT sample of that RTT is `rtt` (the minimum filters out delayed-ACK noise).
//! - Once per RTT (when a segment sent after the previous adjustment is ACKed), if at least 3
//!   RTT samples were taken in it: diff = cwnd·(rtt − baseRTT)/baseRTT (segments queued).
//!   - In slow start: diff > γ = 1 ends slow start with cwnd = min(cwnd, cwnd·baseRTT/rtt + 1)
//!     and ssthresh ≤ cwnd; otherwise Reno slow start.
//!   - In congestion avoidance: diff > β = 4 → cwnd − 1 (and ssthresh ≤ cwnd); diff < α = 2 →
//!     cwnd + 1; else unchanged.
//!   - cwnd stays within [2, clamp]; ssthresh = max(ssthresh, ¾·cwnd) (`tcp_current_ssthresh`).
//! - With fewer than 3 samples in the RTT, or outside the Open state, it behaves as Reno.
//! - Between adjustments, slow start still grows cwnd per ACK (Linux grows every RTT in slow
//!   start, unlike the paper's every other RTT).
//! - Loss response: Reno (ssthresh = max(cwnd/2, 2)).
//!
//! Deviations from Linux:
//! - "snd_nxt" (the sequence that ends the current RTT, `beg_snd_nxt`) is kept in segments as
//!   `tcb.delivered + tcb.in_flight`, and the RTT ends when `tcb.delivered` passes it; Linux
//!   compares the cumulative ACK with `snd_nxt`. Segments marked lost are not counted, so with
//!   losses the RTT can end slightly early.
//! - RTTs are in ns; Linux adds 1 µs to every sample (to avoid 0), which is kept.
//! - Undo is not modelled.
use super::*;
use crate::core::time::NS_PER_US;

/// Lower bound of segments queued in the network.
pub const ALPHA: u32 = 2;
/// Upper bound of segments queued in the network.
pub const BETA: u32 = 4;
/// Slow-start exit threshold (segments queued).
pub const GAMMA: u32 = 1;

pub struct Vegas {
    alpha: u32,
    beta: u32,
    gamma: u32,
    /// Vegas adjustments on (Open state, Linux `doing_vegas_now`).
    doing_vegas_now: bool,
    /// The current RTT ends when `tcb.delivered` exceeds this (Linux `beg_snd_nxt`).
    beg_snd_nxt: u64,
    /// RTT samples taken in the current RTT.
    cnt_rtt: u32,
    /// Minimum RTT sample in the current RTT.
    min_rtt: Time,
    /// Minimum RTT seen (propagation delay estimate).
    base_rtt: Time,
    reno: reno::Reno,
}

impl Default for Vegas {
    fn default() -> Self {
        Self::new()
    }
}

impl Vegas {
    /// Linux defaults: α = 2, β = 4, γ = 1.
    pub fn new() -> Self {
        Self::with_params(ALPHA, BETA, GAMMA)
    }

    pub fn with_params(alpha: u32, beta: u32, gamma: u32) -> Self {
        Vegas {
            alpha,
            beta,
            gamma,
            doing_vegas_now: true,
            beg_snd_nxt: 0,
            cnt_rtt: 0,
            min_rtt: Time::MAX,
            base_rtt: Time::MAX,
            reno: reno::Reno::new(RecoveryStyle::NewReno),
        }
    }

    /// Minimum RTT seen (Time::MAX = none yet).
    pub fn base_rtt(&self) -> Time {
        self.base_rtt
    }
    /// Whether Vegas adjustments are active (Open state).
    pub fn doing_vegas_now(&self) -> bool {
        self.doing_vegas_now
    }

    /// `vegas_enable`: restart sampling from the next flight.
    fn enable(&mut self, tcb: &Tcb) {
        self.doing_vegas_now = true;
        self.beg_snd_nxt = tcb.delivered + tcb.in_flight as u64;
        self.cnt_rtt = 0;
        self.min_rtt = Time::MAX;
    }

    /// Linux `tcp_current_ssthresh`.
    fn current_ssthresh(tcb: &Tcb) -> u32 {
        if tcb.ca_state == CaState::Recovery {
            tcb.ssthresh
        } else {
            tcb.ssthresh.max((tcb.cwnd >> 1) + (tcb.cwnd >> 2))
        }
    }

    /// The once-per-RTT Vegas decision.
    fn adjust(&mut self, tcb: &mut Tcb, acked: u32) {
        let rtt = self.min_rtt;
        let base = self.base_rtt;
        let cwnd = tcb.cwnd as u64;
        // Window that would just fill the pipe at the measured rate: cwnd·baseRTT/rtt.
        let target_cwnd = cwnd * base / rtt;
        // Segments queued in the network ("Diff" of the Vegas paper, in segments).
        let diff = cwnd * (rtt - base) / base;

        if diff > self.gamma as u64 && tcb.in_slow_start() {
            // Going too fast: leave slow start at the rate actually achieved (+1 for the
            // truncation).
            tcb.cwnd = tcb.cwnd.min(target_cwnd as u32 + 1);
            tcb.ssthresh = tcb.ssthresh.min(tcb.cwnd);
        } else if tcb.in_slow_start() {
            tcb.slow_start(acked);
        } else if diff > self.beta as u64 {
            tcb.cwnd -= 1;
            tcb.ssthresh = tcb.ssthresh.min(tcb.cwnd);
        } else if diff < self.alpha as u64 {
            tcb.cwnd += 1;
        }
        // else: sending just as fast as we should.

        tcb.cwnd = tcb.cwnd.clamp(2, tcb.cwnd_clamp.max(2));
        tcb.ssthresh = Self::current_ssthresh(tcb);
    }
}

impl CongestionControl for Vegas {
    fn name(&self) -> &'static str {
        "vegas"
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, acked: u32, now: Time) {
        if !self.doing_vegas_now {
            self.reno.cong_avoid(tcb, acked, now);
            return;
        }
        if tcb.delivered > self.beg_snd_nxt {
            // One RTT has passed: remember where the next one ends.
            self.beg_snd_nxt = tcb.delivered + tcb.in_flight as u64;
            // Fewer than 3 samples probably means delayed ACKs only: behave as Reno.
            if self.cnt_rtt <= 2 {
                self.reno.cong_avoid(tcb, acked, now);
            } else {
                self.adjust(tcb, acked);
            }
            // Wipe the slate clean for the next RTT.
            self.cnt_rtt = 0;
            self.min_rtt = Time::MAX;
        } else if tcb.in_slow_start() {
            tcb.slow_start(acked);
        }
    }

    fn ssthresh(&mut self, tcb: &Tcb, now: Time) -> u32 {
        self.reno.ssthresh(tcb, now)
    }

    fn pkts_acked(&mut self, _tcb: &Tcb, _acked: u32, rtt: Time, _now: Time) {
        if rtt == 0 {
            return;
        }
        // Linux adds 1 µs so that neither RTT nor baseRTT is ever 0.
        let vrtt = rtt + NS_PER_US;
        self.base_rtt = self.base_rtt.min(vrtt);
        self.min_rtt = self.min_rtt.min(vrtt);
        self.cnt_rtt += 1;
    }

    fn set_state(&mut self, tcb: &mut Tcb, new_state: CaState, _now: Time) {
        if new_state == CaState::Open {
            self.enable(tcb);
        } else {
            self.doing_vegas_now = false;
        }
    }

    fn cwnd_event(&mut self, tcb: &mut Tcb, ev: CwndEvent, _now: Time) {
        if ev == CwndEvent::TxStart {
            // Restart after idle: the saved state is stale (Linux `tcp_vegas_init`).
            self.base_rtt = Time::MAX;
            self.enable(tcb);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::time::{NS_PER_MS, NS_PER_S};

    const MSS: u32 = 1448;

    /// One RTT: `n` ACKs (one segment each); the first `samples` carry RTT sample `rtt`.
    ///
    /// The per-RTT decision happens on the first ACK of a round and uses the previous round's
    /// samples (as in Linux: pkts_acked then cong_avoid when a segment of the next window is
    /// ACKed), so a round's RTT shows in cwnd after the following round.
    fn rtt_round(v: &mut Vegas, tcb: &mut Tcb, now: &mut Time, rtt: Time, n: u32, samples: u32) {
        tcb.in_flight = tcb.cwnd;
        for i in 0..n {
            *now += rtt / n as u64;
            tcb.delivered += 1;
            tcb.in_flight = tcb.in_flight.saturating_sub(1);
            v.pkts_acked(tcb, 1, if i < samples { rtt } else { 0 }, *now);
            if !v.cong_control(tcb, &RateSample::default(), *now) {
                v.cong_avoid(tcb, 1, *now);
            }
        }
    }

    fn full_round(v: &mut Vegas, tcb: &mut Tcb, now: &mut Time, rtt: Time) {
        let n = tcb.cwnd;
        rtt_round(v, tcb, now, rtt, n, n);
    }

    /// Congestion avoidance at `cwnd` with baseRTT 100 ms learnt and sampling restarted.
    fn in_ca(cwnd: u32) -> (Vegas, Tcb, Time) {
        let mut v = Vegas::new();
        let mut tcb = Tcb::new(MSS, cwnd);
        tcb.ssthresh = 2;
        let mut now = 0;
        full_round(&mut v, &mut tcb, &mut now, 100 * NS_PER_MS);
        tcb.cwnd = cwnd;
        tcb.cwnd_cnt = 0;
        tcb.ssthresh = 2;
        tcb.in_flight = 0;
        v.set_state(&mut tcb, CaState::Open, now);
        (v, tcb, now)
    }

    #[test]
    fn grows_when_diff_below_alpha() {
        let (mut v, mut tcb, mut now) = in_ca(20);
        // RTT 102 ms: diff = cwnd·2/100 < 2 for cwnd < 100: +1 per RTT.
        for i in 0..10 {
            full_round(&mut v, &mut tcb, &mut now, 102 * NS_PER_MS);
            assert_eq!(tcb.cwnd, 20 + i, "round {i}");
        }
    }

    #[test]
    fn shrinks_when_diff_above_beta_then_holds() {
        let (mut v, mut tcb, mut now) = in_ca(20);
        // RTT 150 ms: diff = ⌊cwnd·50/100.001⌋ (Linux's +1 µs), above β = 4 while cwnd ≥ 11:
        // −1 per RTT down to 10, where diff = 4.9999 -> 4.
        let mut seen = vec![];
        for _ in 0..20 {
            full_round(&mut v, &mut tcb, &mut now, 150 * NS_PER_MS);
            seen.push(tcb.cwnd);
        }
        assert_eq!(&seen[..11], &[20, 19, 18, 17, 16, 15, 14, 13, 12, 11, 10]);
        assert!(seen[11..].iter().all(|&c| c == 10), "{seen:?}");
        assert!(tcb.ssthresh <= 10);
    }

    #[test]
    fn holds_when_diff_between_alpha_and_beta() {
        let (mut v, mut tcb, mut now) = in_ca(20);
        // RTT 117.5 ms: diff = 20·17.5/100 = 3.5 -> 3, within [α, β].
        for _ in 0..10 {
            full_round(&mut v, &mut tcb, &mut now, 117_500_000);
            assert_eq!(tcb.cwnd, 20);
        }
    }

    #[test]
    fn reno_with_fewer_than_three_samples() {
        let (mut v, mut tcb, mut now) = in_ca(20);
        // Only 2 RTT samples per RTT: no Vegas decision (the 150 ms RTT would shrink cwnd);
        // Linux calls Reno's cong_avoid once per RTT instead.
        let mut seen = vec![];
        for _ in 0..41 {
            let n = tcb.cwnd;
            rtt_round(&mut v, &mut tcb, &mut now, 150 * NS_PER_MS, n, 2);
            seen.push(tcb.cwnd);
        }
        assert!(seen.windows(2).all(|w| w[1] >= w[0]), "{seen:?}");
        // One ACKed segment counted per RTT: +1 after 20 RTTs, +1 after 21 more.
        assert_eq!(tcb.cwnd, 22, "{seen:?}");
    }

    #[test]
    fn slow_start_exits_when_diff_exceeds_gamma() {
        let mut v = Vegas::new();
        let mut tcb = Tcb::new(MSS, 10);
        let mut now = 0;
        // Slow start grows per ACK while the RTT stays at baseRTT.
        full_round(&mut v, &mut tcb, &mut now, 100 * NS_PER_MS);
        full_round(&mut v, &mut tcb, &mut now, 100 * NS_PER_MS);
        assert_eq!(tcb.cwnd, 40);
        full_round(&mut v, &mut tcb, &mut now, 120 * NS_PER_MS);
        assert!(tcb.in_slow_start());
        assert_eq!(tcb.cwnd, 80);
        // The 120 ms round is judged: diff = 80·20/100 = 16 > γ -> cwnd = 80·100/120 + 1,
        // ssthresh = cwnd.
        full_round(&mut v, &mut tcb, &mut now, 120 * NS_PER_MS);
        assert!(!tcb.in_slow_start());
        assert_eq!(tcb.cwnd, 67);
        assert_eq!(tcb.ssthresh, 67);
    }

    #[test]
    fn reno_loss_response_and_reno_outside_open() {
        let (mut v, mut tcb, mut now) = in_ca(20);
        assert_eq!(v.ssthresh(&tcb, now), 10);
        v.set_state(&mut tcb, CaState::Disorder, now);
        assert!(!v.doing_vegas_now());
        // Reno growth in Disorder even with a long RTT.
        for _ in 0..2 {
            rtt_round(&mut v, &mut tcb, &mut now, 200 * NS_PER_MS, 20, 20);
        }
        assert_eq!(tcb.cwnd, 21);
        v.set_state(&mut tcb, CaState::Open, now);
        assert!(v.doing_vegas_now());
    }

    #[test]
    fn idle_restart_forgets_base_rtt() {
        let (mut v, mut tcb, _) = in_ca(20);
        assert_eq!(v.base_rtt(), 100 * NS_PER_MS + NS_PER_US);
        v.cwnd_event(&mut tcb, CwndEvent::TxStart, 5 * NS_PER_S);
        assert_eq!(v.base_rtt(), Time::MAX);
    }

    /// On a bottleneck, Vegas settles with α..β segments queued. (Slow start overshoots first:
    /// the per-round minimum RTT comes from the round's first ACK, which sees little queue, so
    /// the unpaced flow reaches ~160 segments here; congestion avoidance then removes one
    /// segment per RTT.)
    #[test]
    fn keeps_alpha_to_beta_segments_queued_on_a_path() {
        use super::super::bbr::path_model::Path;
        let mut p = Path::new(MSS, 10, 1000.0, 40 * NS_PER_MS);
        let mut v = Vegas::new();
        p.run_until(&mut v, 15 * NS_PER_S, |_, _, _| {});
        let (mut lo, mut hi) = (u32::MAX, 0);
        p.run_until(&mut v, 25 * NS_PER_S, |tcb, _, _| {
            lo = lo.min(tcb.cwnd);
            hi = hi.max(tcb.cwnd);
        });
        // BDP = 41 segments; diff = cwnd·queue_delay/baseRTT ∈ [2, 4] -> 2..4 segments queued.
        assert!(lo >= 41 + 2 && hi <= 41 + 5, "cwnd in {lo}..={hi}");
        assert!(hi - lo <= 1, "steady: cwnd in {lo}..={hi}");
        let q = p.queue_len();
        assert!((1..=5).contains(&q), "queue {q}");
    }
}
