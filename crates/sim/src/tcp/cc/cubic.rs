//! CUBIC congestion control with HyStart.
//!
//! Sources: RFC 9438 (CUBIC for fast and long-distance networks), §4.1–4.7; Linux
//! `net/ipv4/tcp_cubic.c` (v2.3, kernel 6.x: `bictcp_update`, `cubictcp_recalc_ssthresh`,
//! `cubictcp_cwnd_event`, `cubictcp_acked`, `hystart_update`); HyStart from Ha & Rhee,
//! "Taming the Elephants: New TCP Slow Start" (NCSU tech report 2008) as Linux implements it.
//!
//! What it does, as Linux does it:
//! - Window W(t) = C·(t−K)³ + W_max with C = 0.4, K = cbrt((W_max − cwnd_epoch)/C) seconds, W in
//!   segments. The epoch starts at the first congestion-avoidance ACK after a reduction; the
//!   target is W(t + delay_min), i.e. where the curve will be one (minimum) RTT from now, and
//!   cwnd grows by one every `cnt = cwnd/(target − cwnd)` ACKed segments (`tcp_cong_avoid_ai`).
//!   `cnt` is at least 2, so cwnd grows at most 1.5× per RTT; with no W_max yet (first epoch)
//!   `cnt` is at most 20 (5 % per RTT).
//! - On loss: ssthresh = max(⌊0.7·cwnd⌋, 2); W_max = cwnd, or with fast convergence
//!   W_max = cwnd·(1+β)/2 when cwnd is below the previous W_max; the epoch ends.
//! - Reno-friendly region (RFC 9438 §4.3, Linux `tcp_friendliness`): an estimate of the window
//!   a Reno flow with α = 3(1−β)/(1+β) would have (`tcp_cwnd`, +1 every `cwnd·15/8` ACKed
//!   segments as in Linux's `beta_scale`), and `cnt` is lowered so cwnd keeps up with it.
//! - RTO (`set_state(Loss)`): all CUBIC state is forgotten (Linux `bictcp_reset`), including
//!   W_max and delay_min, and HyStart is re-armed.
//! - After idle (`TxStart`): the epoch start is shifted by the idle time, so the curve resumes
//!   where it stopped instead of jumping ahead.
//! - HyStart (on by default like Linux's `hystart=1`, both detectors): in slow start with
//!   cwnd ≥ 16, once per round it exits slow start (ssthresh = cwnd) when either an ACK train
//!   (ACKs ≤ 2 ms apart) has lasted longer than delay_min/2, or the minimum RTT of the first 8
//!   samples of the round exceeds delay_min + clamp(delay_min/8, 4 ms, 16 ms).
//!
//! Deviations from Linux:
//! - Time is exact (ns) and the curve is evaluated in f64 seconds; Linux works in jiffies and
//!   2^-10 s units with a table-based cube root (≈0.2 % error). β is exactly 0.7 (ssthresh =
//!   ⌊7·cwnd/10⌋, fast convergence W_max = ⌊17·cwnd/20⌋); Linux uses 717/1024 ≈ 0.7002 and
//!   C = 410/1024 ≈ 0.4004. The Reno-friendly ACK scale 15/8 is Linux's integer value.
//! - Linux's rate limits on recomputing `cnt` (at most once per jiffy, and not within HZ/32 if
//!   cwnd is unchanged) are kept, with HZ = 1000 (1 ms jiffies).
//! - Rounds for HyStart end when a segment sent after the round started is delivered; Linux uses
//!   `snd_una > end_seq` with `end_seq = snd_nxt`. Here "snd_nxt" is approximated in segments
//!   by `tcb.delivered + tcb.in_flight` (segments marked lost are not counted).
//! - `hystart_ack_delay()` (a TSO/GRO allowance derived from `sk_pacing_rate` and the GSO size)
//!   is 0: the simulator has no TSO/GSO. The ACK-train threshold is halved as in Linux when the
//!   flow is not paced (`tcb.pacing_rate_bps` is None).
//! - `pkts_acked` only sees `&Tcb`, so HyStart's `ssthresh = cwnd` is applied in `cong_control`
//!   on the same ACK (the sender calls it right after `pkts_acked`, before `cong_avoid`).
//! - Idle time at `TxStart` is measured from the last ACK seen (when the flight drained);
//!   Linux measures from the last transmission (`tp->lsndtime`), about one RTT earlier.
//! - The sender calls `set_state(Loss)` before `ssthresh()` on an RTO (Linux: the reverse). To
//!   end with Linux's state (W_max forgotten), `ssthresh()` right after `set_state(Loss)`
//!   computes its result but leaves the reset state in place.
//! - `undo_cwnd` is not modelled (the trait has no undo).
use super::*;
use crate::core::time::{NS_PER_MS, NS_PER_S};

/// CUBIC's scaling constant C (segments / s³).
pub const C: f64 = 0.4;
/// Multiplicative decrease factor β.
pub const BETA: f64 = 0.7;
/// β as an exact fraction for the integer ssthresh computation.
const BETA_NUM: u32 = 7;
const BETA_DEN: u32 = 10;
/// Linux `beta_scale = 8·(1+β)/(3·(1−β))` truncated (15 for β = 0.7): the Reno-friendly
/// estimate grows by one every `cwnd·15/8` ACKed segments, i.e. α ≈ 0.53 per RTT.
const RENO_FRIENDLY_SCALE: u32 = 15;
/// Linux's jiffy for the rate limits on recomputing `cnt` (HZ = 1000).
const JIFFY: Time = NS_PER_MS;
/// `HZ / 32` in jiffies.
const HZ_DIV_32: u64 = 1000 / 32;
/// With no W_max yet, grow at least 5 % per RTT (Linux: `cnt` capped at 20).
const FIRST_EPOCH_MAX_CNT: u32 = 20;

/// HyStart only acts once cwnd reaches this many segments (`hystart_low_window`).
const HYSTART_LOW_WINDOW: u32 = 16;
/// ACKs closer than this belong to one train (`hystart_ack_delta_us` = 2000).
const HYSTART_ACK_DELTA: Time = 2 * NS_PER_MS;
/// RTT samples per round before the delay test (`HYSTART_MIN_SAMPLES`).
const HYSTART_MIN_SAMPLES: u8 = 8;
const HYSTART_DELAY_MIN: Time = 4 * NS_PER_MS;
const HYSTART_DELAY_MAX: Time = 16 * NS_PER_MS;

/// RFC 9438 §4.2, Eq. 1: W_cubic(t) = C·(t − K)³ + W_max, with t and K in seconds and
/// windows in segments.
pub fn cubic_window(t_s: f64, k_s: f64, w_max: f64) -> f64 {
    C * (t_s - k_s).powi(3) + w_max
}

/// RFC 9438 §4.2, Eq. 2 for the common case cwnd_epoch = β·W_max:
/// K = cbrt(W_max·(1 − β)/C) seconds.
pub fn cubic_k(w_max: f64, beta: f64, c: f64) -> f64 {
    (w_max * (1.0 - beta) / c).cbrt()
}

pub struct Cubic {
    hystart: bool,
    fast_convergence: bool,
    tcp_friendliness: bool,

    // --- Linux `struct bictcp` ---
    /// Increase cwnd by one after this many ACKed segments.
    cnt: u32,
    /// W_max (`last_max_cwnd`), segments; 0 = none yet.
    last_max_cwnd: u32,
    /// cwnd and jiffy when `cnt` was last recomputed.
    last_cwnd: u32,
    last_time: Option<u64>,
    /// Origin of the curve (W_max, or cwnd if above W_max at epoch start).
    origin_point: u32,
    /// K in seconds.
    k: f64,
    /// Minimum RTT seen by CUBIC (ns); 0 = none (Linux `delay_min`).
    delay_min: Time,
    /// Start of the current epoch; None = no epoch (Linux `epoch_start == 0`).
    epoch_start: Option<Time>,
    /// ACKed segments counted towards the Reno-friendly estimate.
    ack_cnt: u32,
    /// Reno-friendly window estimate (segments).
    tcp_cwnd: u32,

    // --- HyStart ---
    found: bool,
    round_start: Time,
    /// "snd_nxt" (in delivered-segment units) at the start of the HyStart round.
    end_mark: u64,
    last_ack: Time,
    curr_rtt: Time,
    sample_cnt: u8,

    // --- glue to this simulator's callback order ---
    /// ssthresh chosen by HyStart in `pkts_acked`, written in `cong_control`.
    pending_ssthresh: Option<u32>,
    /// `set_state(Loss)` just reset the state; keep it reset through the following `ssthresh()`.
    reset_after_ssthresh: bool,
    /// Time of the last ACK, to measure idle periods.
    last_ack_time: Option<Time>,
}

impl Default for Cubic {
    fn default() -> Self {
        Self::new()
    }
}

impl Cubic {
    /// Linux defaults: fast convergence, Reno-friendliness and HyStart on.
    pub fn new() -> Self {
        Self::with_hystart(true)
    }

    pub fn with_hystart(hystart: bool) -> Self {
        Cubic {
            hystart,
            fast_convergence: true,
            tcp_friendliness: true,
            cnt: 0,
            last_max_cwnd: 0,
            last_cwnd: 0,
            last_time: None,
            origin_point: 0,
            k: 0.0,
            delay_min: 0,
            epoch_start: None,
            ack_cnt: 0,
            tcp_cwnd: 0,
            found: false,
            round_start: 0,
            end_mark: 0,
            last_ack: 0,
            curr_rtt: Time::MAX,
            sample_cnt: 0,
            pending_ssthresh: None,
            reset_after_ssthresh: false,
            last_ack_time: None,
        }
    }

    /// Turns fast convergence off (RFC 9438 §4.7; on by default as in Linux).
    pub fn without_fast_convergence(mut self) -> Self {
        self.fast_convergence = false;
        self
    }

    /// Turns the Reno-friendly region off (on by default as in Linux).
    pub fn without_reno_friendliness(mut self) -> Self {
        self.tcp_friendliness = false;
        self
    }

    /// Start of the current epoch (None between a reduction and the next growth).
    pub fn epoch_start(&self) -> Option<Time> {
        self.epoch_start
    }
    /// W_max in segments (Linux `last_max_cwnd`); 0 before the first loss.
    pub fn w_max(&self) -> u32 {
        self.last_max_cwnd
    }
    /// K of the current epoch, in seconds.
    pub fn k(&self) -> f64 {
        self.k
    }
    /// Origin point of the current epoch's curve, in segments.
    pub fn origin_point(&self) -> u32 {
        self.origin_point
    }
    /// Minimum RTT used for the target (Linux `delay_min`); 0 = none yet.
    pub fn delay_min(&self) -> Time {
        self.delay_min
    }
    /// Current ACKs-per-increment count.
    pub fn cnt(&self) -> u32 {
        self.cnt
    }
    /// Reno-friendly window estimate (segments).
    pub fn reno_cwnd(&self) -> u32 {
        self.tcp_cwnd
    }
    /// Whether HyStart has ended slow start.
    pub fn hystart_found(&self) -> bool {
        self.found
    }

    /// Linux `bictcp_reset`: forget everything (after an RTO).
    fn reset(&mut self) {
        self.cnt = 0;
        self.last_max_cwnd = 0;
        self.last_cwnd = 0;
        self.last_time = None;
        self.origin_point = 0;
        self.k = 0.0;
        self.delay_min = 0;
        self.epoch_start = None;
        self.ack_cnt = 0;
        self.tcp_cwnd = 0;
        self.found = false;
    }

    /// Linux `bictcp_hystart_reset`: start a new HyStart round now.
    fn hystart_reset(&mut self, tcb: &Tcb, now: Time) {
        self.round_start = now;
        self.last_ack = now;
        self.end_mark = tcb.delivered + tcb.in_flight as u64;
        self.curr_rtt = Time::MAX;
        self.sample_cnt = 0;
    }

    /// Linux `bictcp_update`: recompute `cnt` for the current cwnd.
    fn update(&mut self, cwnd: u32, acked: u32, now: Time) {
        self.ack_cnt = self.ack_cnt.saturating_add(acked);
        let jiffies = now / JIFFY;

        // Linux recomputes at most every HZ/32 while cwnd is unchanged...
        if self.last_cwnd == cwnd && self.last_time.is_some_and(|t| jiffies - t <= HZ_DIV_32) {
            return;
        }
        // ...and at most once per jiffy; the Reno-friendly estimate is still updated.
        let same_jiffy = self.epoch_start.is_some() && self.last_time == Some(jiffies);
        if !same_jiffy {
            self.last_cwnd = cwnd;
            self.last_time = Some(jiffies);
            self.update_cubic_cnt(cwnd, acked, now);
        }

        if self.tcp_friendliness {
            // RFC 9438 §4.3: W_est grows by α_cubic per RTT (one per cwnd·15/8 segments ACKed).
            let per_increment = ((cwnd as u64 * RENO_FRIENDLY_SCALE as u64) >> 3).max(1) as u32;
            while self.ack_cnt > per_increment {
                self.ack_cnt -= per_increment;
                self.tcp_cwnd += 1;
            }
            if self.tcp_cwnd > cwnd {
                // CUBIC is slower than Reno would be: grow at least as fast as W_est.
                let max_cnt = cwnd / (self.tcp_cwnd - cwnd);
                self.cnt = self.cnt.min(max_cnt);
            }
        }

        // At most one increment per 2 ACKed segments: cwnd grows at most 1.5× per RTT.
        self.cnt = self.cnt.max(2);
    }

    /// The cubic-curve part of `bictcp_update`.
    fn update_cubic_cnt(&mut self, cwnd: u32, acked: u32, now: Time) {
        let epoch_start = match self.epoch_start {
            Some(e) => e,
            None => {
                // First ACK of a new epoch.
                self.epoch_start = Some(now);
                self.ack_cnt = acked;
                self.tcp_cwnd = cwnd;
                if self.last_max_cwnd <= cwnd {
                    self.k = 0.0;
                    self.origin_point = cwnd;
                } else {
                    // RFC 9438 Eq. 2: K = cbrt((W_max − cwnd_epoch)/C).
                    self.k = ((self.last_max_cwnd - cwnd) as f64 / C).cbrt();
                    self.origin_point = self.last_max_cwnd;
                }
                now
            }
        };

        // Aim where the curve will be one minimum RTT from now (RFC 9438 §4.2 target).
        let t = (now - epoch_start + self.delay_min) as f64 / NS_PER_S as f64;
        let offs = (t - self.k).abs();
        let delta = (C * offs * offs * offs).min(u32::MAX as f64) as u32;
        let target = if t < self.k {
            self.origin_point.saturating_sub(delta)
        } else {
            self.origin_point.saturating_add(delta)
        };

        self.cnt = if target > cwnd {
            cwnd / (target - cwnd)
        } else {
            // At or above the curve: grow very slowly.
            cwnd.saturating_mul(100)
        };

        // No W_max known yet: the curve says little, grow at least 5 % per RTT.
        if self.last_max_cwnd == 0 && self.cnt > FIRST_EPOCH_MAX_CNT {
            self.cnt = FIRST_EPOCH_MAX_CNT;
        }
    }

    /// Linux `hystart_update`: may end slow start (ssthresh = cwnd).
    fn hystart_update(&mut self, tcb: &Tcb, delay: Time, now: Time) {
        if tcb.delivered > self.end_mark {
            self.hystart_reset(tcb, now);
        }
        if tcb.cwnd < HYSTART_LOW_WINDOW {
            return;
        }

        // ACK-train detection: the ACKs of one round, arriving back to back, span more than
        // half the minimum RTT => the pipe is (about to be) full.
        if now.saturating_sub(self.last_ack) <= HYSTART_ACK_DELTA {
            self.last_ack = now;
            // + hystart_ack_delay() in Linux: 0 here (no TSO/GRO).
            let mut threshold = self.delay_min;
            if tcb.pacing_rate_bps.is_none() {
                // Unpaced, the train is sent in about half an RTT in slow start.
                threshold /= 2;
            }
            if now - self.round_start > threshold {
                self.found = true;
                self.pending_ssthresh = Some(tcb.cwnd);
            }
        }

        // Delay-increase detection: the round's minimum RTT grew noticeably above delay_min.
        self.curr_rtt = self.curr_rtt.min(delay);
        if self.sample_cnt < HYSTART_MIN_SAMPLES {
            self.sample_cnt += 1;
        } else {
            let thresh = (self.delay_min / 8).clamp(HYSTART_DELAY_MIN, HYSTART_DELAY_MAX);
            if self.curr_rtt > self.delay_min + thresh {
                self.found = true;
                self.pending_ssthresh = Some(tcb.cwnd);
            }
        }
    }
}

impl CongestionControl for Cubic {
    fn name(&self) -> &'static str {
        "cubic"
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, acked: u32, now: Time) {
        let Some(acked) = tcb.slow_start_leftover(acked) else {
            return;
        };
        self.update(tcb.cwnd, acked, now);
        tcb.cong_avoid_ai(self.cnt, acked);
    }

    fn ssthresh(&mut self, tcb: &Tcb, _now: Time) -> u32 {
        self.epoch_start = None; // end of epoch
        let cwnd = tcb.cwnd;
        // W_max and fast convergence (RFC 9438 §4.7): if this loss came below the previous
        // W_max, another flow probably joined; release bandwidth by remembering less.
        self.last_max_cwnd = if cwnd < self.last_max_cwnd && self.fast_convergence {
            (cwnd as u64 * (BETA_DEN + BETA_NUM) as u64 / (2 * BETA_DEN) as u64) as u32
        } else {
            cwnd
        };
        if self.reset_after_ssthresh {
            // RTO: Linux computes ssthresh first, then `bictcp_reset` forgets W_max.
            self.reset_after_ssthresh = false;
            self.reset();
        }
        ((cwnd as u64 * BETA_NUM as u64 / BETA_DEN as u64) as u32).max(2)
    }

    fn pkts_acked(&mut self, tcb: &Tcb, _acked: u32, rtt: Time, now: Time) {
        self.last_ack_time = Some(now);
        if rtt == 0 {
            return;
        }
        // Discard delay samples right after a reduction (within 1 s of the epoch start).
        if self.epoch_start.is_some_and(|e| now - e < NS_PER_S) {
            return;
        }
        let delay = rtt.max(1);
        if self.delay_min == 0 || self.delay_min > delay {
            self.delay_min = delay;
        }
        if !self.found && tcb.in_slow_start() && self.hystart {
            self.hystart_update(tcb, delay, now);
        }
    }

    fn set_state(&mut self, tcb: &mut Tcb, new_state: CaState, now: Time) {
        if new_state == CaState::Loss {
            self.reset();
            self.hystart_reset(tcb, now);
            self.reset_after_ssthresh = true;
        }
    }

    fn cwnd_event(&mut self, _tcb: &mut Tcb, ev: CwndEvent, now: Time) {
        if ev == CwndEvent::TxStart {
            // Idle (application-limited) for a while: shift the epoch so the window keeps
            // following the curve rather than jumping by the idle time.
            if let (Some(epoch), Some(last)) = (self.epoch_start, self.last_ack_time) {
                let idle = now.saturating_sub(last);
                if idle > 0 {
                    self.epoch_start = Some((epoch + idle).min(now));
                }
            }
        }
    }

    fn cong_control(&mut self, tcb: &mut Tcb, _rs: &RateSample, _now: Time) -> bool {
        // An ACK has been processed since any RTO: the reset is complete.
        self.reset_after_ssthresh = false;
        if let Some(ssthresh) = self.pending_ssthresh.take() {
            tcb.ssthresh = ssthresh;
        }
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::time::NS_PER_MS;

    const MSS: u32 = 1448;

    /// Feeds one ACK (one segment) at `now` with RTT sample `rtt`, in sender order.
    fn ack(cc: &mut Cubic, tcb: &mut Tcb, now: Time, rtt: Time) {
        tcb.delivered += 1;
        cc.pkts_acked(tcb, 1, rtt, now);
        let handled = cc.cong_control(tcb, &RateSample::default(), now);
        if !handled && matches!(tcb.ca_state, CaState::Open | CaState::Disorder) {
            cc.cong_avoid(tcb, 1, now);
        }
    }

    /// One RTT worth of ACKs: cwnd ACKs evenly spread over `rtt`, starting after `*now`.
    fn round(cc: &mut Cubic, tcb: &mut Tcb, now: &mut Time, rtt: Time) {
        let n = tcb.cwnd;
        tcb.in_flight = n;
        let step = rtt / n as u64;
        for _ in 0..n {
            *now += step;
            ack(cc, tcb, *now, rtt);
        }
    }

    /// Fast-recovery episode as the sender runs it, ending with cwnd = ssthresh.
    fn loss(cc: &mut Cubic, tcb: &mut Tcb, now: Time) {
        cc.set_state(tcb, CaState::Recovery, now);
        tcb.ca_state = CaState::Recovery;
        tcb.ssthresh = cc.ssthresh(tcb, now);
        tcb.cwnd = cc.cwnd_after_recovery(tcb);
        cc.cwnd_event(tcb, CwndEvent::CompleteCwr, now);
        cc.set_state(tcb, CaState::Open, now);
        tcb.ca_state = CaState::Open;
    }

    /// A connection in congestion avoidance at `cwnd` with delay_min = `rtt`.
    fn steady(cwnd: u32, rtt: Time, hystart: bool) -> (Cubic, Tcb, Time) {
        let mut cc = Cubic::with_hystart(hystart);
        let mut tcb = Tcb::new(MSS, cwnd);
        tcb.ssthresh = cwnd; // not in slow start
        let mut now = 0;
        // A few ACKs to learn delay_min (before any epoch, so not discarded).
        for _ in 0..3 {
            now += NS_PER_MS;
            cc.pkts_acked(&tcb, 1, rtt, now);
        }
        tcb.cwnd = cwnd;
        (cc, tcb, now)
    }

    #[test]
    fn helpers_match_rfc_formulas() {
        let k = cubic_k(100.0, 0.7, 0.4);
        assert!((k - 75f64.cbrt()).abs() < 1e-12);
        // W(0) = W_max·β, W(K) = W_max.
        assert!((cubic_window(0.0, k, 100.0) - 70.0).abs() < 1e-9);
        assert!((cubic_window(k, k, 100.0) - 100.0).abs() < 1e-12);
        assert!(cubic_window(k + 1.0, k, 100.0) > 100.0);
    }

    #[test]
    fn loss_sets_ssthresh_wmax_and_k() {
        for w in [100u32, 1000] {
            let rtt = 100 * NS_PER_MS;
            let (mut cc, mut tcb, mut now) = steady(w, rtt, false);
            tcb.cwnd = w;
            loss(&mut cc, &mut tcb, now);
            assert_eq!(tcb.ssthresh, w * 7 / 10);
            assert_eq!(tcb.cwnd, w * 7 / 10);
            assert_eq!(cc.w_max(), w);
            assert_eq!(cc.epoch_start(), None);
            // The epoch (and K) start on the next congestion-avoidance ACK.
            now += NS_PER_MS;
            ack(&mut cc, &mut tcb, now, rtt);
            assert_eq!(cc.epoch_start(), Some(now));
            let expect = (w as f64 * 0.3 / 0.4).cbrt();
            assert!((cc.k() - expect).abs() / expect < 0.01, "K {} vs {}", cc.k(), expect);
            assert!((cc.k() - cubic_k(w as f64, BETA, C)).abs() / expect < 0.01);
            assert_eq!(cc.origin_point(), w);
        }
    }

    #[test]
    fn ssthresh_floor_is_two() {
        let mut cc = Cubic::new();
        let mut tcb = Tcb::new(MSS, 2);
        assert_eq!(cc.ssthresh(&tcb, 0), 2);
        tcb.cwnd = 1;
        assert_eq!(cc.ssthresh(&tcb, 0), 2);
    }

    /// cwnd follows W(t) = C(t−K)³ + W_max through the concave and convex regions.
    #[test]
    fn cwnd_follows_cubic_curve() {
        let rtt = 100 * NS_PER_MS;
        let w = 100u32;
        let (mut cc, mut tcb, mut now) = steady(w, rtt, false);
        loss(&mut cc, &mut tcb, now);
        now += NS_PER_MS;
        ack(&mut cc, &mut tcb, now, rtt);
        let epoch = cc.epoch_start().unwrap();
        let k = cc.k();
        let checks = [1.0, 2.0, 3.0, 4.0, 5.0, 6.0, 7.0, 8.0, 9.0];
        let mut i = 0;
        while i < checks.len() {
            round(&mut cc, &mut tcb, &mut now, rtt);
            let t = (now - epoch) as f64 / 1e9;
            if t >= checks[i] {
                let want = cubic_window(t, k, w as f64);
                let got = tcb.cwnd as f64;
                let tol = (0.015 * want).max(1.5);
                assert!(
                    (got - want).abs() <= tol,
                    "t={t:.2}s K={k:.3}: cwnd {got} vs W(t) {want:.1}"
                );
                i += 1;
            }
        }
        // Well into the convex region: above W_max.
        assert!(tcb.cwnd > w + 20);
    }

    #[test]
    fn fast_convergence_lowers_wmax() {
        let rtt = 100 * NS_PER_MS;
        let (mut cc, mut tcb, now) = steady(100, rtt, false);
        loss(&mut cc, &mut tcb, now);
        assert_eq!(cc.w_max(), 100);
        // Next loss below the previous W_max: W_max = 90·(1+β)/2 = 76.5 -> 76.
        tcb.cwnd = 90;
        loss(&mut cc, &mut tcb, now);
        assert_eq!(cc.w_max(), 76);
        assert_eq!(tcb.ssthresh, 63);
        // Above the previous W_max: W_max = cwnd.
        tcb.cwnd = 120;
        loss(&mut cc, &mut tcb, now);
        assert_eq!(cc.w_max(), 120);

        // Without fast convergence W_max is just the cwnd at loss.
        let (cc2, mut tcb2, now2) = steady(100, rtt, false);
        let mut cc2 = cc2.without_fast_convergence();
        loss(&mut cc2, &mut tcb2, now2);
        tcb2.cwnd = 90;
        loss(&mut cc2, &mut tcb2, now2);
        assert_eq!(cc2.w_max(), 90);
    }

    /// At a small RTT and window, the Reno-friendly estimate grows faster than the curve and
    /// drives cwnd (RFC 9438 §4.3).
    #[test]
    fn reno_friendly_region_dominates_at_small_rtt() {
        let rtt = NS_PER_MS;
        let w = 20u32;
        let (mut cc, mut tcb, mut now) = steady(w, rtt, false);
        loss(&mut cc, &mut tcb, now);
        let cwnd0 = tcb.cwnd; // 14
        now += 1000;
        ack(&mut cc, &mut tcb, now, rtt);
        let epoch = cc.epoch_start().unwrap();
        let k = cc.k();
        let mut rounds = 1u32;
        while now - epoch < 200 * NS_PER_MS {
            round(&mut cc, &mut tcb, &mut now, rtt);
            rounds += 1;
        }
        let t = (now - epoch) as f64 / 1e9;
        let curve = cubic_window(t + 0.001, k, w as f64);
        // Reno with α = 3(1−β)/(1+β) ≈ 0.53 segments per RTT (Linux: 8/15).
        let reno = cwnd0 as f64 + rounds as f64 * 8.0 / 15.0;
        let got = tcb.cwnd as f64;
        assert!(
            got > curve + 50.0,
            "cwnd {got} should be far above the curve {curve:.1}"
        );
        assert!((got - reno).abs() / reno < 0.1, "cwnd {got} vs Reno estimate {reno:.1}");
        assert!((cc.reno_cwnd() as f64 - got).abs() <= 2.0);

        // Without the Reno-friendly region, cwnd stays near the curve.
        let (cc2, mut tcb2, mut now2) = steady(w, rtt, false);
        let mut cc2 = cc2.without_reno_friendliness();
        loss(&mut cc2, &mut tcb2, now2);
        now2 += 1000;
        ack(&mut cc2, &mut tcb2, now2, rtt);
        let epoch2 = cc2.epoch_start().unwrap();
        while now2 - epoch2 < 200 * NS_PER_MS {
            round(&mut cc2, &mut tcb2, &mut now2, rtt);
        }
        assert!(
            (tcb2.cwnd as f64) < curve + 2.0,
            "cwnd {} vs curve {curve:.1}",
            tcb2.cwnd
        );
    }

    /// Far in the convex region the curve asks for more than 1.5×, which `cnt >= 2` caps.
    #[test]
    fn growth_capped_at_one_and_a_half_per_rtt() {
        let rtt = 100 * NS_PER_MS;
        let (mut cc, mut tcb, mut now) = steady(100, rtt, false);
        loss(&mut cc, &mut tcb, now);
        now += NS_PER_MS;
        ack(&mut cc, &mut tcb, now, rtt);
        // Jump 30 s ahead without ACKs (as if the flow had been stuck): target is huge.
        now += 30 * NS_PER_S;
        let before = tcb.cwnd;
        round(&mut cc, &mut tcb, &mut now, rtt);
        assert_eq!(cc.cnt(), 2);
        assert!(tcb.cwnd <= before + before / 2 + 1, "{before} -> {}", tcb.cwnd);
        assert!(tcb.cwnd >= before + before / 2 - 1, "{before} -> {}", tcb.cwnd);
    }

    #[test]
    fn first_epoch_grows_at_least_five_percent_per_rtt() {
        // No loss yet (W_max = 0): cnt <= 20.
        let rtt = 100 * NS_PER_MS;
        let (mut cc, mut tcb, mut now) = steady(100, rtt, false);
        round(&mut cc, &mut tcb, &mut now, rtt);
        assert!(cc.cnt() <= 20);
        assert!(tcb.cwnd >= 104, "cwnd {}", tcb.cwnd);
    }

    #[test]
    fn rto_forgets_wmax_and_hystart() {
        let rtt = 100 * NS_PER_MS;
        let (mut cc, mut tcb, now) = steady(100, rtt, true);
        loss(&mut cc, &mut tcb, now);
        assert_eq!(cc.w_max(), 100);
        // RTO in the sender's order: event, set_state, ssthresh, cwnd = 1.
        tcb.cwnd = 80;
        cc.cwnd_event(&mut tcb, CwndEvent::Loss, now);
        cc.set_state(&mut tcb, CaState::Loss, now);
        tcb.ca_state = CaState::Loss;
        tcb.ssthresh = cc.ssthresh(&tcb, now);
        tcb.cwnd = 1;
        assert_eq!(tcb.ssthresh, 56);
        assert_eq!(cc.w_max(), 0, "Linux's bictcp_reset forgets W_max on RTO");
        assert_eq!(cc.delay_min(), 0);
        assert_eq!(cc.epoch_start(), None);
        assert!(!cc.hystart_found());
        // A later fast recovery behaves normally again.
        cc.cong_control(&mut tcb, &RateSample::default(), now);
        tcb.ca_state = CaState::Open;
        tcb.cwnd = 90;
        loss(&mut cc, &mut tcb, now);
        assert_eq!(cc.w_max(), 90);
    }

    #[test]
    fn idle_shifts_epoch() {
        let rtt = 100 * NS_PER_MS;
        let (mut cc, mut tcb, mut now) = steady(100, rtt, false);
        loss(&mut cc, &mut tcb, now);
        for _ in 0..5 {
            round(&mut cc, &mut tcb, &mut now, rtt);
        }
        let epoch = cc.epoch_start().unwrap();
        let cwnd = tcb.cwnd;
        // 3 s idle, then the application sends again.
        now += 3 * NS_PER_S;
        cc.cwnd_event(&mut tcb, CwndEvent::TxStart, now);
        assert_eq!(cc.epoch_start(), Some(epoch + 3 * NS_PER_S));
        // Growth resumes along the curve, not 3 s ahead of it.
        round(&mut cc, &mut tcb, &mut now, rtt);
        assert!(tcb.cwnd <= cwnd + 3, "{cwnd} -> {}", tcb.cwnd);
    }

    /// One round whose ACKs come `gap` apart (more than HyStart's 2 ms, so no ACK train),
    /// then the rest of the RTT passes.
    fn spaced_round(cc: &mut Cubic, tcb: &mut Tcb, now: &mut Time, rtt: Time, gap: Time) {
        let n = tcb.cwnd;
        tcb.in_flight = n;
        let start = *now;
        for _ in 0..n {
            *now += gap;
            ack(cc, tcb, *now, rtt);
        }
        *now = (*now).max(start + rtt);
    }

    #[test]
    fn hystart_delay_increase_ends_slow_start() {
        let mut cc = Cubic::new();
        let mut tcb = Tcb::new(MSS, 10);
        let mut now = 0;
        let base = 200 * NS_PER_MS;
        let gap = 3 * NS_PER_MS;
        // Slow start with a constant RTT: no exit.
        while tcb.cwnd < 40 {
            spaced_round(&mut cc, &mut tcb, &mut now, base, gap);
        }
        assert!(!cc.hystart_found());
        assert_eq!(tcb.ssthresh, u32::MAX);
        // Queue builds: RTT = base + 20 ms > base + clamp(base/8, 4 ms, 16 ms).
        let cwnd = tcb.cwnd;
        spaced_round(&mut cc, &mut tcb, &mut now, base + 20 * NS_PER_MS, gap);
        assert!(cc.hystart_found());
        // Found once the round has its 8 samples: ssthresh = cwnd at that ACK.
        assert!(
            (cwnd + 8..=cwnd + 10).contains(&tcb.ssthresh),
            "{cwnd} {}",
            tcb.ssthresh
        );
        assert!(!tcb.in_slow_start());
    }

    #[test]
    fn hystart_small_delay_increase_is_tolerated() {
        let mut cc = Cubic::new();
        let mut tcb = Tcb::new(MSS, 10);
        let mut now = 0;
        let base = 200 * NS_PER_MS;
        while tcb.cwnd < 60 {
            // +10 ms is below the 16 ms threshold.
            spaced_round(&mut cc, &mut tcb, &mut now, base + 10 * NS_PER_MS, 3 * NS_PER_MS);
            spaced_round(&mut cc, &mut tcb, &mut now, base, 3 * NS_PER_MS);
        }
        assert!(!cc.hystart_found());
        assert_eq!(tcb.ssthresh, u32::MAX);
    }

    #[test]
    fn hystart_ack_train_ends_slow_start() {
        let mut cc = Cubic::new();
        let mut tcb = Tcb::new(MSS, 32);
        let rtt = 40 * NS_PER_MS;
        let mut now = 0;
        // Learn delay_min, start a round.
        cc.pkts_acked(&tcb, 1, rtt, now);
        // A round whose ACKs come back-to-back 1 ms apart (bottleneck-paced): after more than
        // delay_min/2 = 20 ms of train, slow start ends.
        tcb.in_flight = 32;
        let mut exit_at = None;
        for i in 0..32 {
            now += NS_PER_MS;
            ack(&mut cc, &mut tcb, now, rtt);
            if exit_at.is_none() && cc.hystart_found() {
                exit_at = Some(i);
            }
        }
        let i = exit_at.expect("ACK train should end slow start");
        assert!((19..=22).contains(&i), "exit after {i} ACKs");
        assert!(tcb.ssthresh < u32::MAX);

        // HyStart off: no exit.
        let mut cc = Cubic::with_hystart(false);
        let mut tcb = Tcb::new(MSS, 32);
        cc.pkts_acked(&tcb, 1, rtt, 0);
        tcb.in_flight = 32;
        let mut now = 0;
        for _ in 0..32 {
            now += NS_PER_MS;
            ack(&mut cc, &mut tcb, now, rtt);
        }
        assert!(!cc.hystart_found());
        assert_eq!(tcb.ssthresh, u32::MAX);
    }

    #[test]
    fn hystart_needs_low_window() {
        let mut cc = Cubic::new();
        let mut tcb = Tcb::new(MSS, 10);
        tcb.cwnd_clamp = 15; // never reaches hystart_low_window
        let mut now = 0;
        for r in 0..20 {
            let rtt = if r < 2 { 50 * NS_PER_MS } else { 200 * NS_PER_MS };
            round(&mut cc, &mut tcb, &mut now, rtt);
        }
        assert!(!cc.hystart_found());
    }

    /// Through a bottleneck with a deep buffer, HyStart leaves slow start near the BDP,
    /// long before the queue would overflow.
    #[test]
    fn hystart_exits_near_bdp_on_path() {
        use super::super::bbr::path_model::Path;
        let rate = 1000.0; // segments/s
        let base = 40 * NS_PER_MS;
        let mut path = Path::new(MSS, 10, rate, base);
        let mut cc = Cubic::new();
        path.run_until(&mut cc, 2 * NS_PER_S, |_, _, _| {});
        assert!(cc.hystart_found());
        let bdp = 41.0;
        let ss = path.tcb.ssthresh as f64;
        assert!(ss >= 0.4 * bdp && ss <= 2.0 * bdp, "ssthresh {ss} vs BDP {bdp}");
    }
}
