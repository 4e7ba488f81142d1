//! BBR v1 (Bottleneck Bandwidth and Round-trip propagation time).
//!
//! Sources: N. Cardwell, Y. Cheng, C. S. Gunn, S. Hassas Yeganeh, V. Jacobson, "BBR:
//! Congestion-Based Congestion Control", ACM Queue 14(5), 2016; Linux `net/ipv4/tcp_bbr.c`
//! (kernel 6.x) with the windowed max filter of `lib/win_minmax.c` and the delivery-rate
//! samples of `net/ipv4/tcp_rate.c` (provided by the sender as [`RateSample`]).
//!
//! What it does, as Linux does it (function names are Linux's):
//! - Model: BtlBw = max delivery-rate sample over the last 10 packet-timed rounds
//!   (`bbr_update_bw`, app-limited samples only count if they raise the max); RTprop = min RTT
//!   over 10 s (`bbr_update_min_rtt`). Rounds are counted with `delivered`/`prior_delivered`.
//! - Startup: pacing and cwnd gain 2/ln 2 ≈ 2.885 until the bandwidth has grown by less than
//!   25 % for 3 non-app-limited rounds (`bbr_check_full_bw_reached`); then Drain with pacing
//!   gain ln 2/2 until in-flight ≤ BDP (`bbr_check_drain`; ssthresh is set to that BDP);
//!   then ProbeBW.
//! - ProbeBW: pacing gain cycles [1.25, 0.75, 1, 1, 1, 1, 1, 1], one phase per min RTT (the 1.25
//!   phase lasts until in-flight reaches 1.25·BDP or a loss, the 0.75 phase ends early once
//!   in-flight ≤ BDP); cwnd gain 2. The starting phase is random among all but the 0.75 one
//!   (`bbr_reset_probe_bw_mode`), drawn from a seeded generator here.
//! - ProbeRTT: when the min-RTT estimate is 10 s old (and not restarting from idle), cwnd is
//!   capped at 4 segments until 200 ms and one round have passed with in-flight ≤ 4; then the
//!   saved cwnd is restored and BBR returns to ProbeBW (or Startup if the pipe was never full).
//! - cwnd (`bbr_set_cwnd`): target = cwnd_gain·BDP + ACK-aggregation allowance, plus
//!   `bbr_quantization_budget` (+3 segments, rounded up to even, +2 in the 1.25 phase); cwnd
//!   grows towards it by the ACKed count (slow-start-like) and, once the pipe was full, is cut to
//!   it; minimum 4. Without any RTT sample the BDP is the initial window (10).
//! - Losses (`bbr_set_cwnd_to_recover_or_restore`): cwnd −= newly lost; the first round of
//!   fast recovery uses packet conservation (cwnd = in-flight + ACKed); on leaving Recovery or
//!   Loss the cwnd saved on entry (`bbr_save_cwnd`) is restored.
//! - Pacing (`bbr_set_pacing_rate`): rate = pacing_gain·BtlBw·(1 − 1 %); before the pipe is full
//!   it only ever increases. The initial rate is 2.885·cwnd/SRTT (1 ms if no RTT yet).
//! - Long-term bandwidth (`bbr_lt_bw_sampling`): policer detection — two consecutive lossy
//!   (≥ 20 % loss) intervals of 4–16 rounds with consistent rates make BBR pace at their average
//!   for 48 rounds.
//! - ACK aggregation (`bbr_update_ack_aggregation`): the max excess of ACKed over expected data
//!   in the last 5–10 rounds is added to the cwnd target (capped at 100 ms of BtlBw).
//! - `ssthresh()` only saves cwnd and returns the current ssthresh; `cong_avoid` does nothing;
//!   `cwnd_after_recovery` keeps cwnd (Linux skips `tcp_end_cwnd_reduction` for `cong_control`
//!   algorithms). [`CongestionControl::cong_control`] always returns true.
//!
//! Units: bandwidth is kept in segments per second (f64) and gains as f64. The pacing rate
//! written to `tcb.pacing_rate_bps` counts **wire bytes**: segments/s · (mss + 52 header bytes)
//! · 8, so a sender that spaces each packet by its wire size (`tx_time(len + HEADER_BYTES,
//! rate)`) sends exactly pacing_gain·BtlBw·0.99 segments per second. Linux computes the rate
//! from `mss_cache` (payload bytes) and fq then charges whole packets, which paces slightly
//! (≈3.5 % at 1448-byte MSS) below the intended packet rate.
//!
//! Deviations from Linux:
//! - Gains are exact (2/ln 2, ln 2/2); Linux uses 739/256 and 88/256. Rates and BDPs are
//!   computed in f64 instead of the 2^24 / 2^8 fixed-point units.
//! - TSO/GSO send quantum (when the sender's `tso` is on, the default): `bbr_tso_segs_goal` =
//!   max(min(pacing rate >> `sk_pacing_shift` (10: ≈1 ms of data), 64 KiB − 1 − 320) / mss,
//!   `bbr_min_tso_segs` (1 below 1.2 Mbit/s, else 2)), at most 127 segments, from the pacing rate
//!   in payload bytes/s as Linux's `sk_pacing_rate`; it sizes the quantization budget (+3 bursts)
//!   and the sender's pacing bursts ([`Tcb::send_quantum`]). Off: 1 segment. There is no earliest
//!   departure time, so `bbr_packets_in_net_at_edt` is in-flight (+1 burst in a gain > 1 phase).
//! - Linux's ProbeRTT marks the connection application-limited (`tp->app_limited`) so that rate
//!   samples of that phase do not count; the trait cannot write the sender's flag, so BBR treats
//!   samples of packets sent during ProbeRTT as app-limited itself (same effect).
//! - `is_ack_delayed` is not modelled (taken as false). Linux's `tp->lost` is the running sum of
//!   `rs.losses`; the RTO's fake `{losses: 1}` sample is fed to the long-term sampler as in
//!   Linux but does not add to that sum. Long-term intervals are timed in ns (Linux: ms).
//! - The trait has no `init`: the state is initialised on the first callback that gets the
//!   `Tcb` mutably (as Linux's `bbr_init`: ssthresh = ∞, initial pacing rate, min RTT from
//!   `tcb.min_rtt`).
//! - `TxStart` is only reported after idle, which in Linux implies `tp->app_limited`; BBR treats
//!   every `TxStart` as an app-limited restart.
//! - The sender calls `set_state(Loss)` before `ssthresh()` on an RTO; BBR saves cwnd in
//!   `set_state(Loss)` from the state on the previous ACK, which is what Linux's order gives.
//! - Undo (`bbr_undo_cwnd`) is not modelled.
use super::*;
use crate::core::time::{NS_PER_MS, NS_PER_S};
use crate::packet::HEADER_BYTES;
use std::f64::consts::LN_2;

/// Startup gain 2/ln 2: the smallest gain that doubles the sending rate every round.
pub const HIGH_GAIN: f64 = 2.0 / LN_2;
/// Drain gain: the inverse of the Startup gain, to drain Startup's queue in about one round.
pub const DRAIN_GAIN: f64 = LN_2 / 2.0;
/// cwnd gain in ProbeBW (tolerates delayed and stretched ACKs).
pub const CWND_GAIN: f64 = 2.0;
/// ProbeBW pacing-gain cycle.
pub const PACING_GAIN_CYCLE: [f64; CYCLE_LEN] = [1.25, 0.75, 1.0, 1.0, 1.0, 1.0, 1.0, 1.0];
pub const CYCLE_LEN: usize = 8;
/// The starting phase is drawn among this many phases (all but the 0.75 one).
const CYCLE_RAND: u64 = 7;
/// Bandwidth filter window, in rounds (`bbr_bw_rtts` = CYCLE_LEN + 2).
pub const BW_WINDOW_ROUNDS: u64 = CYCLE_LEN as u64 + 2;
/// Min-RTT filter window.
pub const MIN_RTT_WINDOW: Time = 10 * NS_PER_S;
/// Minimum time at 4 segments in ProbeRTT.
pub const PROBE_RTT_DURATION: Time = 200 * NS_PER_MS;
/// Minimum cwnd, and the cwnd in ProbeRTT.
pub const CWND_MIN_TARGET: u32 = 4;
/// Pace 1 % below the estimated bandwidth.
const PACING_MARGIN: f64 = 0.01;
/// Bandwidth must grow by 25 % per round to count as still growing...
const FULL_BW_THRESH: f64 = 1.25;
/// ...and the pipe is full after 3 rounds without such growth.
const FULL_BW_CNT: u32 = 3;
/// Linux `TCP_INIT_CWND`.
const INIT_CWND: u32 = 10;
/// Linux `sk_pacing_shift` default (`tcp_init_sock`): a TSO burst holds ≈ 2^-10 s of data.
const PACING_SHIFT: u32 = 10;
/// `GSO_LEGACY_MAX_SIZE - 1 - MAX_TCP_HEADER` (MAX_TCP_HEADER = 320 on x86-64).
const TSO_MAX_BYTES: f64 = (65_536 - 1 - 320) as f64;
/// `bbr_min_tso_rate`: below 1.2 Mbit/s a burst may be one segment.
const MIN_TSO_RATE_BPS: f64 = 1_200_000.0;
/// Initial pacing uses this RTT when there is no RTT sample yet.
const NOMINAL_RTT: Time = NS_PER_MS;

// Long-term ("policer") bandwidth estimation.
const LT_INTVL_MIN_RTTS: u32 = 4;
/// Lossy interval: lost/delivered ≥ 50/256 (≈ 20 %).
const LT_LOSS_THRESH: u64 = 50;
/// Consistent intervals: rates differ by ≤ 1/8...
const LT_BW_RATIO: f64 = 1.0 / 8.0;
/// ...or by ≤ 4 kbit/s (in bytes/s).
const LT_BW_DIFF_BYTES_PER_S: f64 = 4000.0 / 8.0;
const LT_BW_MAX_RTTS: u32 = 48;

// ACK aggregation.
const EXTRA_ACKED_GAIN: f64 = 1.0;
const EXTRA_ACKED_WIN_RTTS: u32 = 5;
const ACK_EPOCH_ACKED_RESET_THRESH: u32 = 1 << 20;
const EXTRA_ACKED_MAX: Time = 100 * NS_PER_MS;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum BbrMode {
    Startup,
    Drain,
    ProbeBw,
    ProbeRtt,
}

/// Kathleen Nichols' windowed max filter (Linux `lib/win_minmax.c`): the best, 2nd and 3rd best
/// samples, spread over the window, in constant space.
#[derive(Clone, Copy, Debug)]
struct MaxFilter {
    s: [(u64, f64); 3],
}

impl MaxFilter {
    fn new() -> Self {
        MaxFilter { s: [(0, 0.0); 3] }
    }
    fn get(&self) -> f64 {
        self.s[0].1
    }
    fn reset(&mut self, t: u64, v: f64) -> f64 {
        self.s = [(t, v); 3];
        v
    }
    /// `minmax_running_max(m, win, t, meas)`.
    fn update(&mut self, win: u64, t: u64, v: f64) -> f64 {
        if v >= self.s[0].1 || t - self.s[2].0 > win {
            // New max, or nothing left in the window: forget earlier samples.
            return self.reset(t, v);
        }
        if v >= self.s[1].1 {
            self.s[2] = (t, v);
            self.s[1] = (t, v);
        } else if v >= self.s[2].1 {
            self.s[2] = (t, v);
        }
        // `minmax_subwin_update`: age the choices.
        let dt = t - self.s[0].0;
        if dt > win {
            self.s[0] = self.s[1];
            self.s[1] = self.s[2];
            self.s[2] = (t, v);
            if t - self.s[0].0 > win {
                self.s[0] = self.s[1];
                self.s[1] = self.s[2];
                self.s[2] = (t, v);
            }
        } else if self.s[1].0 == self.s[0].0 && dt > win / 4 {
            // A quarter window without a new max: take a 2nd choice from the 2nd quarter.
            self.s[2] = (t, v);
            self.s[1] = (t, v);
        } else if self.s[2].0 == self.s[1].0 && dt > win / 2 {
            // Half a window: take a 3rd choice from the last half.
            self.s[2] = (t, v);
        }
        self.s[0].1
    }
}

/// SplitMix64: a tiny deterministic generator for the random ProbeBW phase.
fn splitmix64(state: &mut u64) -> u64 {
    *state = state.wrapping_add(0x9e37_79b9_7f4a_7c15);
    let mut z = *state;
    z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    z ^ (z >> 31)
}

fn in_recovery_or_loss(s: CaState) -> bool {
    matches!(s, CaState::Recovery | CaState::Loss)
}

pub struct Bbr {
    rng: u64,
    initialized: bool,
    mode: BbrMode,

    /// Min RTT in the 10 s window (Time::MAX = none), and when it was taken.
    min_rtt: Time,
    min_rtt_stamp: Time,
    /// End of the 200 ms at cwnd 4 in ProbeRTT (None until in-flight reached 4).
    probe_rtt_done_stamp: Option<Time>,
    probe_rtt_round_done: bool,

    /// Max delivery rate (segments/s), windowed over rounds.
    bw: MaxFilter,
    /// Packet-timed rounds elapsed.
    rtt_cnt: u64,
    /// `tcb.delivered` at which the current round ends.
    next_rtt_delivered: u64,
    round_start: bool,

    cycle_idx: usize,
    cycle_stamp: Time,

    prev_ca_state: CaState,
    packet_conservation: bool,
    idle_restart: bool,
    /// cwnd saved on entering recovery / ProbeRTT.
    prior_cwnd: u32,

    pacing_gain: f64,
    cwnd_gain: f64,
    /// Current pacing rate, segments/s (0 = not set).
    pacing_rate: f64,
    /// `bbr_tso_segs_goal` at the current pacing rate.
    tso_segs: u32,
    has_seen_rtt: bool,

    full_bw_reached: bool,
    full_bw: f64,
    full_bw_cnt: u32,

    // Long-term bandwidth sampling.
    lt_is_sampling: bool,
    lt_rtt_cnt: u32,
    lt_use_bw: bool,
    lt_bw: f64,
    lt_last_delivered: u64,
    lt_last_stamp: Time,
    lt_last_lost: u64,
    /// Running total of segments marked lost (Linux `tp->lost`).
    lost: u64,

    // ACK aggregation.
    ack_epoch_stamp: Time,
    ack_epoch_acked: u32,
    extra_acked: [u32; 2],
    extra_acked_win_rtts: u32,
    extra_acked_win_idx: usize,

    /// Packets sent while `delivered` was in this range were sent in ProbeRTT: their rate
    /// samples are app-limited (Linux sets `tp->app_limited` in ProbeRTT).
    probe_rtt_app_limited: Option<(u64, u64)>,
}

impl Default for Bbr {
    fn default() -> Self {
        Self::new()
    }
}

impl Bbr {
    /// BBR with seed 0 for the random ProbeBW starting phase.
    pub fn new() -> Self {
        Self::with_seed(0)
    }

    /// `seed` drives the (deterministic) choice of the ProbeBW starting phase.
    pub fn with_seed(seed: u64) -> Self {
        Bbr {
            rng: seed,
            initialized: false,
            mode: BbrMode::Startup,
            min_rtt: Time::MAX,
            min_rtt_stamp: 0,
            probe_rtt_done_stamp: None,
            probe_rtt_round_done: false,
            bw: MaxFilter::new(),
            rtt_cnt: 0,
            next_rtt_delivered: 0,
            round_start: false,
            cycle_idx: 0,
            cycle_stamp: 0,
            prev_ca_state: CaState::Open,
            packet_conservation: false,
            idle_restart: false,
            prior_cwnd: 0,
            pacing_gain: HIGH_GAIN,
            cwnd_gain: HIGH_GAIN,
            pacing_rate: 0.0,
            tso_segs: 1,
            has_seen_rtt: false,
            full_bw_reached: false,
            full_bw: 0.0,
            full_bw_cnt: 0,
            lt_is_sampling: false,
            lt_rtt_cnt: 0,
            lt_use_bw: false,
            lt_bw: 0.0,
            lt_last_delivered: 0,
            lt_last_stamp: 0,
            lt_last_lost: 0,
            lost: 0,
            ack_epoch_stamp: 0,
            ack_epoch_acked: 0,
            extra_acked: [0; 2],
            extra_acked_win_rtts: 0,
            extra_acked_win_idx: 0,
            probe_rtt_app_limited: None,
        }
    }

    pub fn mode(&self) -> BbrMode {
        self.mode
    }
    pub fn pacing_gain(&self) -> f64 {
        self.pacing_gain
    }
    pub fn cwnd_gain(&self) -> f64 {
        self.cwnd_gain
    }
    /// Index in [`PACING_GAIN_CYCLE`] (meaningful in ProbeBW).
    pub fn cycle_idx(&self) -> usize {
        self.cycle_idx
    }
    /// Bottleneck bandwidth estimate in use (segments/s).
    pub fn btl_bw(&self) -> f64 {
        self.bw()
    }
    /// Windowed max delivery rate (segments/s).
    pub fn max_bw(&self) -> f64 {
        self.bw.get()
    }
    /// Min-RTT estimate (Time::MAX = none yet).
    pub fn min_rtt(&self) -> Time {
        self.min_rtt
    }
    /// When the min-RTT estimate was last refreshed.
    pub fn min_rtt_stamp(&self) -> Time {
        self.min_rtt_stamp
    }
    pub fn full_bw_reached(&self) -> bool {
        self.full_bw_reached
    }
    /// Packet-timed rounds counted so far.
    pub fn round_count(&self) -> u64 {
        self.rtt_cnt
    }
    /// Pacing rate in segments per second (0 = not set yet).
    pub fn pacing_rate_segs_per_s(&self) -> f64 {
        self.pacing_rate
    }
    /// BtlBw × RTprop in segments (rounded up), or the initial window without an RTT sample.
    pub fn bdp(&self) -> u32 {
        self.bdp_for(self.bw(), 1.0)
    }
    pub fn prior_cwnd(&self) -> u32 {
        self.prior_cwnd
    }
    /// Whether the long-term (policer) rate is in use.
    pub fn lt_use_bw(&self) -> bool {
        self.lt_use_bw
    }

    /// Linux `bbr_init`, run lazily on the first callback with the TCB.
    fn ensure_init(&mut self, tcb: &mut Tcb, now: Time) {
        if self.initialized {
            return;
        }
        self.initialized = true;
        self.prior_cwnd = 0;
        tcb.ssthresh = u32::MAX;
        self.rtt_cnt = 0;
        self.next_rtt_delivered = tcb.delivered;
        self.prev_ca_state = CaState::Open;
        self.packet_conservation = false;
        self.probe_rtt_done_stamp = None;
        self.probe_rtt_round_done = false;
        self.min_rtt = tcb.min_rtt;
        self.min_rtt_stamp = now;
        self.bw.reset(0, 0.0);
        self.has_seen_rtt = false;
        self.init_pacing_rate_from_rtt(tcb);
        self.round_start = false;
        self.idle_restart = false;
        self.full_bw_reached = false;
        self.full_bw = 0.0;
        self.full_bw_cnt = 0;
        self.cycle_stamp = 0;
        self.cycle_idx = 0;
        self.reset_lt_bw_sampling(tcb, now);
        self.mode = BbrMode::Startup;
        self.pacing_gain = HIGH_GAIN;
        self.cwnd_gain = HIGH_GAIN;
        self.ack_epoch_stamp = now;
        self.ack_epoch_acked = 0;
        self.extra_acked_win_rtts = 0;
        self.extra_acked_win_idx = 0;
        self.extra_acked = [0; 2];
    }

    fn bw(&self) -> f64 {
        if self.lt_use_bw {
            self.lt_bw
        } else {
            self.bw.get()
        }
    }

    fn write_pacing_rate(&mut self, tcb: &mut Tcb) {
        if self.pacing_rate > 0.0 {
            let wire_bits = (tcb.mss + HEADER_BYTES) as f64 * 8.0;
            tcb.pacing_rate_bps = Some(self.pacing_rate * wire_bits);
        }
        self.tso_segs = Self::tso_segs_goal(tcb.tso, self.pacing_rate * tcb.mss as f64, tcb.mss);
        tcb.send_quantum = self.tso_segs;
    }

    /// `bbr_tso_segs_goal` / `bbr_min_tso_segs` for a pacing rate in payload bytes/s (Linux's
    /// `sk_pacing_rate` is computed from `mss_cache`); 1 without TSO.
    fn tso_segs_goal(tso: bool, rate_bytes: f64, mss: u32) -> u32 {
        if !tso {
            return 1;
        }
        let min_segs = if rate_bytes * 8.0 < MIN_TSO_RATE_BPS { 1 } else { 2 };
        let bytes = (rate_bytes / (1u64 << PACING_SHIFT) as f64).floor().min(TSO_MAX_BYTES);
        ((bytes as u64 / mss.max(1) as u64) as u32).max(min_segs).min(0x7f)
    }

    /// `bbr_bw_to_pacing_rate`, in segments/s.
    fn bw_to_pacing_rate(bw: f64, gain: f64) -> f64 {
        bw * gain * (1.0 - PACING_MARGIN)
    }

    /// `bbr_init_pacing_rate_from_rtt`: high_gain · cwnd / SRTT.
    fn init_pacing_rate_from_rtt(&mut self, tcb: &mut Tcb) {
        let rtt = if tcb.srtt > 0 {
            self.has_seen_rtt = true;
            tcb.srtt
        } else {
            NOMINAL_RTT
        };
        let bw = tcb.cwnd as f64 * NS_PER_S as f64 / rtt as f64;
        self.pacing_rate = Self::bw_to_pacing_rate(bw, HIGH_GAIN);
        self.write_pacing_rate(tcb);
    }

    /// `bbr_set_pacing_rate`: before the pipe is full the rate only goes up.
    fn set_pacing_rate(&mut self, tcb: &mut Tcb, bw: f64, gain: f64) {
        let rate = Self::bw_to_pacing_rate(bw, gain);
        if !self.has_seen_rtt && tcb.srtt > 0 {
            self.init_pacing_rate_from_rtt(tcb);
        }
        if (self.full_bw_reached && rate > 0.0) || rate > self.pacing_rate {
            self.pacing_rate = rate;
        }
        self.write_pacing_rate(tcb);
    }

    /// `bbr_save_cwnd`: remember the last good cwnd before recovery or ProbeRTT cut it.
    fn save_cwnd(&mut self, cwnd: u32) {
        if !in_recovery_or_loss(self.prev_ca_state) && self.mode != BbrMode::ProbeRtt {
            self.prior_cwnd = cwnd;
        } else {
            self.prior_cwnd = self.prior_cwnd.max(cwnd);
        }
    }

    /// `bbr_bdp`: ceil(bw · min_rtt · gain) segments.
    fn bdp_for(&self, bw: f64, gain: f64) -> u32 {
        if self.min_rtt == Time::MAX {
            return INIT_CWND; // no RTT sample yet: be safe
        }
        let w = bw * (self.min_rtt as f64 / NS_PER_S as f64) * gain;
        // Round up (as Linux) so that an underestimate does not feed on itself; the small
        // epsilon keeps f64 noise on exact products (e.g. 41.000000001) from adding a segment.
        (w - 1e-9).ceil().max(0.0) as u32
    }

    /// `bbr_quantization_budget`.
    fn quantization_budget(&self, cwnd: u32) -> u32 {
        // Room for bursts in flight at the end hosts (3 bursts of `bbr_tso_segs_goal` segments).
        let mut cwnd = cwnd + 3 * self.tso_segs;
        // Round up to an even number to reduce delayed ACKs.
        cwnd = (cwnd + 1) & !1;
        // Let the probing phase push in-flight above the BDP even for small BDPs.
        if self.mode == BbrMode::ProbeBw && self.cycle_idx == 0 {
            cwnd += 2;
        }
        cwnd
    }

    /// `bbr_inflight`.
    fn inflight(&self, bw: f64, gain: f64) -> u32 {
        self.quantization_budget(self.bdp_for(bw, gain))
    }

    /// `bbr_packets_in_net_at_edt` without an earliest-departure-time model.
    fn packets_in_net_at_edt(&self, inflight_now: u32) -> u32 {
        if self.pacing_gain > 1.0 {
            inflight_now + self.tso_segs // include the next burst
        } else {
            inflight_now
        }
    }

    /// `bbr_ack_aggregation_cwnd`.
    fn ack_aggregation_cwnd(&self) -> u32 {
        if EXTRA_ACKED_GAIN > 0.0 && self.full_bw_reached {
            let max_aggr = self.bw() * (EXTRA_ACKED_MAX as f64 / NS_PER_S as f64);
            let extra = self.extra_acked[0].max(self.extra_acked[1]) as f64 * EXTRA_ACKED_GAIN;
            extra.min(max_aggr) as u32
        } else {
            0
        }
    }

    /// `bbr_set_cwnd_to_recover_or_restore`: returns (packet conservation in force, cwnd).
    fn recover_or_restore(&mut self, tcb: &Tcb, rs: &RateSample, acked: u32) -> (bool, u32) {
        let prev = self.prev_ca_state;
        let state = tcb.ca_state;
        let mut cwnd = tcb.cwnd;

        // An ACK for P segments releases at most 2P: first deduct the newly lost ones.
        if rs.losses > 0 {
            cwnd = cwnd.saturating_sub(rs.losses).max(1);
        }
        if state == CaState::Recovery && prev != CaState::Recovery {
            // First round of recovery: packet conservation.
            self.packet_conservation = true;
            self.next_rtt_delivered = tcb.delivered; // start the round now
            cwnd = tcb.in_flight + acked;
        } else if in_recovery_or_loss(prev) && !in_recovery_or_loss(state) {
            // Leaving recovery: restore the cwnd saved on entry.
            cwnd = cwnd.max(self.prior_cwnd);
            self.packet_conservation = false;
        }
        self.prev_ca_state = state;

        if self.packet_conservation {
            (true, cwnd.max(tcb.in_flight + acked))
        } else {
            (false, cwnd)
        }
    }

    /// `bbr_set_cwnd`.
    fn set_cwnd(&mut self, tcb: &mut Tcb, rs: &RateSample, acked: u32, bw: f64, gain: f64) {
        let mut cwnd = tcb.cwnd;
        if acked > 0 {
            let (conserving, c) = self.recover_or_restore(tcb, rs, acked);
            cwnd = c;
            if !conserving {
                let target = self.bdp_for(bw, gain) + self.ack_aggregation_cwnd();
                let target = self.quantization_budget(target);
                if self.full_bw_reached {
                    // Grow towards the target, or snap down to it.
                    cwnd = (cwnd + acked).min(target);
                } else if cwnd < target || tcb.delivered < INIT_CWND as u64 {
                    cwnd += acked;
                }
                cwnd = cwnd.max(CWND_MIN_TARGET);
            }
        }
        tcb.cwnd = cwnd.min(tcb.cwnd_clamp);
        if self.mode == BbrMode::ProbeRtt {
            // Drain the queue and refresh min_rtt.
            tcb.cwnd = tcb.cwnd.min(CWND_MIN_TARGET);
        }
    }

    /// `bbr_is_next_cycle_phase`.
    fn is_next_cycle_phase(&self, rs: &RateSample, now: Time) -> bool {
        let is_full_length = now.saturating_sub(self.cycle_stamp) > self.min_rtt;
        if self.pacing_gain == 1.0 {
            return is_full_length;
        }
        let inflight = self.packets_in_net_at_edt(rs.prior_in_flight);
        let bw = self.max_bw();
        if self.pacing_gain > 1.0 {
            // Probe until in-flight reaches gain·BDP, unless losses say it will not fit.
            return is_full_length && (rs.losses > 0 || inflight >= self.inflight(bw, self.pacing_gain));
        }
        // Drain phase: stop early once the queue we built is gone.
        is_full_length || inflight <= self.inflight(bw, 1.0)
    }

    fn advance_cycle_phase(&mut self, now: Time) {
        self.cycle_idx = (self.cycle_idx + 1) % CYCLE_LEN;
        self.cycle_stamp = now;
    }

    fn reset_probe_bw_mode(&mut self, now: Time) {
        self.mode = BbrMode::ProbeBw;
        // CYCLE_LEN − 1 − rand(0..7) then advance: any phase except 1 (the 0.75 drain phase).
        let r = splitmix64(&mut self.rng) % CYCLE_RAND;
        self.cycle_idx = CYCLE_LEN - 1 - r as usize;
        self.advance_cycle_phase(now);
    }

    fn reset_mode(&mut self, now: Time) {
        if !self.full_bw_reached {
            self.mode = BbrMode::Startup;
        } else {
            self.reset_probe_bw_mode(now);
        }
    }

    fn reset_lt_bw_sampling_interval(&mut self, tcb: &Tcb, now: Time) {
        self.lt_last_stamp = now;
        self.lt_last_delivered = tcb.delivered;
        self.lt_last_lost = self.lost;
        self.lt_rtt_cnt = 0;
    }

    fn reset_lt_bw_sampling(&mut self, tcb: &Tcb, now: Time) {
        self.lt_bw = 0.0;
        self.lt_use_bw = false;
        self.lt_is_sampling = false;
        self.reset_lt_bw_sampling_interval(tcb, now);
    }

    /// `bbr_lt_bw_interval_done`: two consistent lossy intervals mean a policer.
    fn lt_bw_interval_done(&mut self, tcb: &Tcb, bw: f64, now: Time) {
        if self.lt_bw > 0.0 {
            let diff = (bw - self.lt_bw).abs();
            let diff_bytes_per_s = diff * tcb.mss as f64 * (1.0 - PACING_MARGIN);
            if diff <= LT_BW_RATIO * self.lt_bw || diff_bytes_per_s <= LT_BW_DIFF_BYTES_PER_S {
                self.lt_bw = (bw + self.lt_bw) / 2.0;
                self.lt_use_bw = true;
                self.pacing_gain = 1.0;
                self.lt_rtt_cnt = 0;
                return;
            }
        }
        self.lt_bw = bw;
        self.reset_lt_bw_sampling_interval(tcb, now);
    }

    /// `bbr_lt_bw_sampling`: token-bucket policer detection.
    fn lt_bw_sampling(&mut self, tcb: &Tcb, losses: u32, app_limited: bool, now: Time) {
        if self.lt_use_bw {
            if self.mode == BbrMode::ProbeBw && self.round_start {
                self.lt_rtt_cnt += 1;
                if self.lt_rtt_cnt >= LT_BW_MAX_RTTS {
                    self.reset_lt_bw_sampling(tcb, now);
                    self.reset_probe_bw_mode(now);
                }
            }
            return;
        }
        // Start at the first loss, once the policer's tokens are exhausted.
        if !self.lt_is_sampling {
            if losses == 0 {
                return;
            }
            self.reset_lt_bw_sampling_interval(tcb, now);
            self.lt_is_sampling = true;
        }
        if app_limited {
            self.reset_lt_bw_sampling(tcb, now);
            return;
        }
        if self.round_start {
            self.lt_rtt_cnt += 1;
        }
        if self.lt_rtt_cnt < LT_INTVL_MIN_RTTS {
            return;
        }
        if self.lt_rtt_cnt > 4 * LT_INTVL_MIN_RTTS {
            self.reset_lt_bw_sampling(tcb, now);
            return;
        }
        // End the interval on a loss.
        if losses == 0 {
            return;
        }
        let lost = self.lost - self.lt_last_lost;
        let delivered = tcb.delivered.saturating_sub(self.lt_last_delivered);
        if delivered == 0 || (lost << 8) < LT_LOSS_THRESH * delivered {
            return;
        }
        let t = now.saturating_sub(self.lt_last_stamp);
        if t < NS_PER_MS {
            return; // interval shorter than 1 ms: wait
        }
        let bw = delivered as f64 * NS_PER_S as f64 / t as f64;
        self.lt_bw_interval_done(tcb, bw, now);
    }

    /// `bbr_update_bw`: round counting and the bandwidth filter.
    fn update_bw(&mut self, tcb: &Tcb, rs: &RateSample, app_limited: bool, now: Time) {
        self.round_start = false;
        if rs.interval == 0 {
            return; // not a valid sample
        }
        if rs.prior_delivered >= self.next_rtt_delivered {
            self.next_rtt_delivered = tcb.delivered;
            self.rtt_cnt += 1;
            self.round_start = true;
            self.packet_conservation = false;
        }
        self.lt_bw_sampling(tcb, rs.losses, app_limited, now);

        let bw = rs.delivered as f64 * NS_PER_S as f64 / rs.interval as f64;
        // An app-limited sample shows the application's rate, not the path's: use it only if
        // it still raises the estimate.
        if !app_limited || bw >= self.max_bw() {
            self.bw.update(BW_WINDOW_ROUNDS, self.rtt_cnt, bw);
        }
    }

    /// `bbr_update_ack_aggregation`.
    fn update_ack_aggregation(&mut self, tcb: &Tcb, rs: &RateSample, now: Time) {
        if EXTRA_ACKED_GAIN <= 0.0 || rs.acked_sacked == 0 || rs.interval == 0 {
            return;
        }
        if self.round_start {
            self.extra_acked_win_rtts = (self.extra_acked_win_rtts + 1).min(0x1f);
            if self.extra_acked_win_rtts >= EXTRA_ACKED_WIN_RTTS {
                self.extra_acked_win_rtts = 0;
                self.extra_acked_win_idx ^= 1;
                self.extra_acked[self.extra_acked_win_idx] = 0;
            }
        }
        // Segments we expected to be ACKed over this epoch at the estimated rate.
        let epoch = now.saturating_sub(self.ack_epoch_stamp);
        let mut expected = (self.bw() * epoch as f64 / NS_PER_S as f64) as u32;
        // Restart the epoch if ACKs run at or below the expected rate, or it got too old.
        if self.ack_epoch_acked <= expected || self.ack_epoch_acked + rs.acked_sacked >= ACK_EPOCH_ACKED_RESET_THRESH {
            self.ack_epoch_acked = 0;
            self.ack_epoch_stamp = now;
            expected = 0;
        }
        self.ack_epoch_acked = (self.ack_epoch_acked + rs.acked_sacked).min(0xfffff);
        let extra = (self.ack_epoch_acked - expected).min(tcb.cwnd);
        let slot = &mut self.extra_acked[self.extra_acked_win_idx];
        *slot = (*slot).max(extra);
    }

    /// `bbr_check_full_bw_reached`.
    fn check_full_bw_reached(&mut self, app_limited: bool) {
        if self.full_bw_reached || !self.round_start || app_limited {
            return;
        }
        if self.max_bw() >= self.full_bw * FULL_BW_THRESH {
            self.full_bw = self.max_bw();
            self.full_bw_cnt = 0;
            return;
        }
        self.full_bw_cnt += 1;
        self.full_bw_reached = self.full_bw_cnt >= FULL_BW_CNT;
    }

    /// `bbr_check_drain`.
    fn check_drain(&mut self, tcb: &mut Tcb, now: Time) {
        if self.mode == BbrMode::Startup && self.full_bw_reached {
            self.mode = BbrMode::Drain;
            tcb.ssthresh = self.inflight(self.max_bw(), 1.0);
        }
        if self.mode == BbrMode::Drain && self.packets_in_net_at_edt(tcb.in_flight) <= self.inflight(self.max_bw(), 1.0)
        {
            self.reset_probe_bw_mode(now); // queue drained
        }
    }

    /// `bbr_check_probe_rtt_done`.
    fn check_probe_rtt_done(&mut self, tcb: &mut Tcb, now: Time) {
        match self.probe_rtt_done_stamp {
            Some(done) if now > done => {}
            _ => return,
        }
        self.min_rtt_stamp = now; // wait another 10 s before the next ProbeRTT
        tcb.cwnd = tcb.cwnd.max(self.prior_cwnd);
        self.reset_mode(now);
    }

    /// `bbr_update_min_rtt`: the min-RTT filter and ProbeRTT.
    fn update_min_rtt(&mut self, tcb: &mut Tcb, rs: &RateSample, now: Time) {
        let filter_expired = now > self.min_rtt_stamp.saturating_add(MIN_RTT_WINDOW);
        if rs.rtt > 0 && (rs.rtt < self.min_rtt || filter_expired) {
            self.min_rtt = rs.rtt;
            self.min_rtt_stamp = now;
        }

        if filter_expired && !self.idle_restart && self.mode != BbrMode::ProbeRtt {
            self.mode = BbrMode::ProbeRtt; // dip, drain the queue
            self.save_cwnd(tcb.cwnd);
            self.probe_rtt_done_stamp = None;
            self.probe_rtt_app_limited = Some((tcb.delivered, tcb.delivered));
        }

        if self.mode == BbrMode::ProbeRtt {
            // Ignore the low-rate samples of this phase (Linux: tp->app_limited).
            let mark = tcb.delivered + tcb.in_flight as u64;
            if let Some((_, end)) = &mut self.probe_rtt_app_limited {
                *end = (*end).max(mark);
            }
            // Keep in-flight minimal for max(200 ms, 1 round).
            if self.probe_rtt_done_stamp.is_none() && tcb.in_flight <= CWND_MIN_TARGET {
                self.probe_rtt_done_stamp = Some(now + PROBE_RTT_DURATION);
                self.probe_rtt_round_done = false;
                self.next_rtt_delivered = tcb.delivered;
            } else if self.probe_rtt_done_stamp.is_some() {
                if self.round_start {
                    self.probe_rtt_round_done = true;
                }
                if self.probe_rtt_round_done {
                    self.check_probe_rtt_done(tcb, now);
                }
            }
        }
        // An idle restart ends once new data has been delivered.
        if rs.delivered > 0 {
            self.idle_restart = false;
        }
    }

    fn update_gains(&mut self) {
        let (pacing, cwnd) = match self.mode {
            BbrMode::Startup => (HIGH_GAIN, HIGH_GAIN),
            BbrMode::Drain => (DRAIN_GAIN, HIGH_GAIN), // slow to drain, keep cwnd
            BbrMode::ProbeBw => {
                let p = if self.lt_use_bw {
                    1.0
                } else {
                    PACING_GAIN_CYCLE[self.cycle_idx]
                };
                (p, CWND_GAIN)
            }
            BbrMode::ProbeRtt => (1.0, 1.0),
        };
        self.pacing_gain = pacing;
        self.cwnd_gain = cwnd;
    }

    /// Whether this rate sample counts as app-limited (the sender's flag, or sent in ProbeRTT).
    fn sample_app_limited(&self, rs: &RateSample) -> bool {
        rs.is_app_limited
            || self
                .probe_rtt_app_limited
                .is_some_and(|(start, end)| rs.prior_delivered >= start && rs.prior_delivered <= end)
    }
}

impl CongestionControl for Bbr {
    fn name(&self) -> &'static str {
        "bbr"
    }

    /// BBR sets cwnd in `cong_control`; Linux never calls `cong_avoid` for it.
    fn cong_avoid(&mut self, _tcb: &mut Tcb, _acked: u32, _now: Time) {}

    /// `bbr_ssthresh`: save cwnd for after recovery, keep ssthresh.
    fn ssthresh(&mut self, tcb: &Tcb, _now: Time) -> u32 {
        self.save_cwnd(tcb.cwnd);
        tcb.ssthresh
    }

    fn set_state(&mut self, tcb: &mut Tcb, new_state: CaState, now: Time) {
        self.ensure_init(tcb, now);
        if new_state == CaState::Loss {
            // Linux calls ssthresh() (saving cwnd) before set_state(Loss); do that part here,
            // with the state of the previous ACK.
            self.save_cwnd(tcb.cwnd);
            self.prev_ca_state = CaState::Loss;
            self.full_bw = 0.0;
            self.round_start = true; // treat an RTO like the end of a round
            self.lt_bw_sampling(tcb, 1, false, now);
        }
    }

    fn cwnd_event(&mut self, tcb: &mut Tcb, ev: CwndEvent, now: Time) {
        self.ensure_init(tcb, now);
        if ev == CwndEvent::TxStart {
            // Restarting from idle (application-limited).
            self.idle_restart = true;
            self.ack_epoch_stamp = now;
            self.ack_epoch_acked = 0;
            match self.mode {
                // No need to go faster than the estimate: avoid a pointless queue.
                BbrMode::ProbeBw => self.set_pacing_rate(tcb, self.bw(), 1.0),
                BbrMode::ProbeRtt => self.check_probe_rtt_done(tcb, now),
                _ => {}
            }
        }
    }

    /// `bbr_main`.
    fn cong_control(&mut self, tcb: &mut Tcb, rs: &RateSample, now: Time) -> bool {
        self.ensure_init(tcb, now);
        self.lost += rs.losses as u64;
        let app_limited = self.sample_app_limited(rs);

        // bbr_update_model
        self.update_bw(tcb, rs, app_limited, now);
        self.update_ack_aggregation(tcb, rs, now);
        if self.mode == BbrMode::ProbeBw && self.is_next_cycle_phase(rs, now) {
            self.advance_cycle_phase(now);
        }
        self.check_full_bw_reached(app_limited);
        self.check_drain(tcb, now);
        self.update_min_rtt(tcb, rs, now);
        self.update_gains();

        let bw = self.bw();
        self.set_pacing_rate(tcb, bw, self.pacing_gain);
        self.set_cwnd(tcb, rs, rs.acked_sacked, bw, self.cwnd_gain);
        true
    }

    /// Linux leaves cwnd alone at the end of recovery for `cong_control` algorithms; BBR
    /// restores its saved cwnd on the next ACK.
    fn cwnd_after_recovery(&mut self, tcb: &Tcb) -> u32 {
        tcb.cwnd
    }

    /// Linux `bbr_undo_cwnd`: keep cwnd, restart the full-bandwidth search and the long-term
    /// sampling (the loss that ended them was not real).
    fn undo_cwnd(&mut self, tcb: &Tcb, _prior_cwnd: u32, now: Time) -> u32 {
        self.full_bw = 0.0;
        self.full_bw_cnt = 0;
        self.reset_lt_bw_sampling(tcb, now);
        tcb.cwnd
    }
}

/// A one-flow bottleneck model for unit tests of the algorithms in this folder (also used by
/// the CUBIC and Vegas tests): a FIFO served at a fixed rate (no loss, unlimited buffer), a
/// fixed propagation RTT, one ACK per segment, rate samples as in Linux `tcp_rate.c`, pacing
/// honoured when `tcb.pacing_rate_bps` is set (wire size mss + 52 bytes).
#[cfg(test)]
pub(crate) mod path_model {
    use super::super::*;
    use crate::core::time::{tx_time, NS_PER_S};
    use crate::packet::HEADER_BYTES;
    use std::collections::VecDeque;

    struct Pkt {
        sent: Time,
        delivered: u64,
        delivered_time: Time,
        first_tx: Time,
        ack_at: Time,
    }

    pub struct Path {
        pub tcb: Tcb,
        pub now: Time,
        /// Bottleneck service time per segment.
        service: Time,
        base_rtt: Time,
        queue: VecDeque<Pkt>,
        last_depart: Time,
        delivered_time: Time,
        first_tx: Time,
        next_send: Time,
        /// Stop sending (application-limited) while set.
        pub app_paused: bool,
    }

    impl Path {
        /// `rate` in segments/s; `base_rtt` is the RTT without queueing or serialisation.
        pub fn new(mss: u32, init_cwnd: u32, rate: f64, base_rtt: Time) -> Self {
            Path {
                tcb: Tcb::new(mss, init_cwnd),
                now: 0,
                service: (NS_PER_S as f64 / rate).round() as Time,
                base_rtt,
                queue: VecDeque::new(),
                last_depart: 0,
                delivered_time: 0,
                first_tx: 0,
                next_send: 0,
                app_paused: false,
            }
        }

        pub fn queue_len(&self) -> usize {
            // Segments sent but not yet through the bottleneck.
            self.queue
                .iter()
                .filter(|p| p.ack_at - self.base_rtt > self.now)
                .count()
        }

        fn try_send(&mut self, cc: &mut dyn CongestionControl) {
            while !self.app_paused && self.tcb.in_flight < self.tcb.cwnd && self.now >= self.next_send {
                if self.tcb.in_flight == 0 {
                    cc.cwnd_event(&mut self.tcb, CwndEvent::TxStart, self.now);
                    self.first_tx = self.now;
                    self.delivered_time = self.now;
                }
                let start = self.now.max(self.last_depart);
                self.last_depart = start + self.service;
                self.queue.push_back(Pkt {
                    sent: self.now,
                    delivered: self.tcb.delivered,
                    delivered_time: self.delivered_time,
                    first_tx: self.first_tx,
                    ack_at: self.last_depart + self.base_rtt,
                });
                self.tcb.in_flight += 1;
                if let Some(rate) = self.tcb.pacing_rate_bps {
                    self.next_send = self.now + tx_time((self.tcb.mss + HEADER_BYTES) as u64, rate);
                }
            }
        }

        fn on_ack(&mut self, cc: &mut dyn CongestionControl, on_ack: &mut dyn FnMut(&Tcb, &RateSample, Time)) {
            let p = self.queue.pop_front().unwrap();
            let prior_in_flight = self.tcb.in_flight;
            self.tcb.in_flight -= 1;
            self.tcb.delivered += 1;
            let rtt = self.now - p.sent;
            self.tcb.srtt = if self.tcb.srtt == 0 {
                rtt
            } else {
                (7 * self.tcb.srtt + rtt) / 8
            };
            self.tcb.min_rtt = self.tcb.min_rtt.min(rtt);
            // tcp_rate_gen: interval = max(send interval, ACK interval).
            let send_elapsed = p.sent - p.first_tx;
            let ack_elapsed = self.now - p.delivered_time;
            let mut interval = send_elapsed.max(ack_elapsed);
            if interval < self.tcb.min_rtt {
                interval = 0; // Linux discards samples shorter than min_rtt
            }
            self.first_tx = p.sent;
            self.delivered_time = self.now;
            let rs = RateSample {
                acked_sacked: 1,
                losses: 0,
                prior_delivered: p.delivered,
                delivered: if interval > 0 {
                    self.tcb.delivered - p.delivered
                } else {
                    0
                },
                interval,
                rtt,
                prior_in_flight,
                is_app_limited: false,
            };
            cc.pkts_acked(&self.tcb, 1, rtt, self.now);
            let handled = cc.cong_control(&mut self.tcb, &rs, self.now);
            if !handled && matches!(self.tcb.ca_state, CaState::Open | CaState::Disorder) {
                cc.cong_avoid(&mut self.tcb, 1, self.now);
            }
            on_ack(&self.tcb, &rs, self.now);
        }

        /// Runs the flow until `t_end`, calling `on_ack` after each ACK.
        pub fn run_until(
            &mut self,
            cc: &mut dyn CongestionControl,
            t_end: Time,
            mut on_ack: impl FnMut(&Tcb, &RateSample, Time),
        ) {
            loop {
                self.try_send(cc);
                let next_ack = self.queue.front().map_or(Time::MAX, |p| p.ack_at);
                let can_send = !self.app_paused && self.tcb.in_flight < self.tcb.cwnd;
                let next_send = if can_send {
                    self.next_send.max(self.now)
                } else {
                    Time::MAX
                };
                let t = next_ack.min(next_send);
                if t > t_end {
                    break;
                }
                self.now = t;
                if next_ack <= t {
                    self.on_ack(cc, &mut on_ack);
                }
            }
            self.now = t_end;
        }
    }
}

#[cfg(test)]
mod tests {

    /// Linux `bbr_tso_segs_goal`: ≈ 1 ms of data (pacing rate >> 10), at least 2 segments at or
    /// above 1.2 Mbit/s (1 below), at most 64 KiB − 1 − 320 bytes; 1 without TSO.
    #[test]
    fn tso_segs_goal_follows_the_pacing_rate() {
        let g = |mbps: f64| Bbr::tso_segs_goal(true, mbps * 1e6 / 8.0, 1448);
        assert_eq!(g(1.0), 1);
        assert_eq!(g(10.0), 2);
        assert_eq!(g(100.0), 8); // 12.5e6 / 1024 = 12 207 B = 8 segments
        assert_eq!(g(1000.0), 45); // capped at 65 215 B
        assert_eq!(Bbr::tso_segs_goal(false, 100e6 / 8.0, 1448), 1);
    }
    use super::path_model::Path;
    use super::*;

    const MSS: u32 = 1448;

    /// 1000 segments/s (≈12 Mbit/s), 40 ms propagation: min RTT 41 ms, BDP 41 segments.
    fn path() -> Path {
        Path::new(MSS, 10, 1000.0, 40 * NS_PER_MS)
    }

    /// A synthetic ACK of one segment that completes a round and carries a bandwidth sample.
    fn round_ack(bbr: &mut Bbr, tcb: &mut Tcb, now: Time, bw_segs: f64) {
        let interval = 100 * NS_PER_MS;
        let delivered = (bw_segs * 0.1).round() as u64;
        let prior = tcb.delivered;
        tcb.delivered += delivered;
        let rs = RateSample {
            acked_sacked: 1,
            losses: 0,
            prior_delivered: prior,
            delivered,
            interval,
            rtt: 100 * NS_PER_MS,
            prior_in_flight: tcb.in_flight,
            is_app_limited: false,
        };
        assert!(bbr.cong_control(tcb, &rs, now));
    }

    #[test]
    fn max_filter_keeps_windowed_max() {
        let mut f = MaxFilter::new();
        f.reset(0, 0.0);
        assert_eq!(f.update(10, 1, 100.0), 100.0);
        for t in 2..=11 {
            assert_eq!(f.update(10, t, 50.0), 100.0, "t={t}");
        }
        // The 100 sample (t=1) ages out after 10 rounds; the best later sample takes over.
        let v = f.update(10, 12, 40.0);
        assert_eq!(v, 50.0);
        assert_eq!(f.update(10, 13, 200.0), 200.0);
    }

    #[test]
    fn startup_until_bandwidth_plateaus_for_three_rounds() {
        let mut bbr = Bbr::new();
        let mut tcb = Tcb::new(MSS, 10);
        tcb.in_flight = 1000; // keep Drain from ending at once
        let mut now = 0;
        for bw in [100.0, 200.0, 400.0, 800.0] {
            now += 100 * NS_PER_MS;
            round_ack(&mut bbr, &mut tcb, now, bw);
            assert_eq!(bbr.mode(), BbrMode::Startup);
            assert!((bbr.pacing_gain() - 2.885).abs() < 1e-3);
            assert!((bbr.cwnd_gain() - 2.885).abs() < 1e-3);
        }
        // Growth below 25 %: three such rounds fill the pipe.
        for (i, bw) in [900.0, 950.0, 990.0].into_iter().enumerate() {
            now += 100 * NS_PER_MS;
            round_ack(&mut bbr, &mut tcb, now, bw);
            if i < 2 {
                assert_eq!(bbr.mode(), BbrMode::Startup, "round {i}");
            }
        }
        assert!(bbr.full_bw_reached());
        assert_eq!(bbr.mode(), BbrMode::Drain);
        assert!((bbr.pacing_gain() - 1.0 / 2.885).abs() < 1e-3);
        // ssthresh = BDP at 1.0 gain + quantization: 990 seg/s · 0.1 s = 99 -> 102.
        assert_eq!(tcb.ssthresh, 102);
        // In-flight at or below the BDP ends Drain.
        tcb.in_flight = 50;
        now += 10 * NS_PER_MS;
        round_ack(&mut bbr, &mut tcb, now, 990.0);
        assert_eq!(bbr.mode(), BbrMode::ProbeBw);
    }

    #[test]
    fn a_twenty_five_percent_jump_restarts_the_plateau_count() {
        let mut bbr = Bbr::new();
        let mut tcb = Tcb::new(MSS, 10);
        tcb.in_flight = 1000;
        let mut now = 0;
        for bw in [100.0, 110.0, 120.0, 200.0, 210.0, 220.0] {
            now += 100 * NS_PER_MS;
            round_ack(&mut bbr, &mut tcb, now, bw);
            assert_eq!(bbr.mode(), BbrMode::Startup, "bw {bw}");
        }
        now += 100 * NS_PER_MS;
        round_ack(&mut bbr, &mut tcb, now, 230.0);
        assert_eq!(bbr.mode(), BbrMode::Drain);
    }

    #[test]
    fn reaches_probe_bw_on_a_path_with_2bdp_cwnd() {
        let mut p = path();
        let mut bbr = Bbr::new();
        let mut modes = vec![BbrMode::Startup];
        let mut t = 0;
        while t < 3 * NS_PER_S {
            t += NS_PER_MS;
            p.run_until(&mut bbr, t, |_, _, _| {});
            if *modes.last().unwrap() != bbr.mode() {
                modes.push(bbr.mode());
            }
        }
        assert_eq!(modes, vec![BbrMode::Startup, BbrMode::Drain, BbrMode::ProbeBw]);
        assert!((bbr.btl_bw() - 1000.0).abs() < 20.0, "btl_bw {}", bbr.btl_bw());
        assert_eq!(bbr.min_rtt(), 41 * NS_PER_MS);
        let bdp = bbr.bdp();
        assert!((41..=42).contains(&bdp), "bdp {bdp}");
        // cwnd = 2·BDP + 3, even, (+2 in the probing phase) + a small ACK-aggregation allowance.
        let cwnd = p.tcb.cwnd;
        assert!(cwnd >= 2 * bdp && cwnd <= 2 * bdp + 10, "cwnd {cwnd}, bdp {bdp}");
        assert_eq!(bbr.cwnd_gain(), 2.0);
        // Pacing at ≈ gain·BtlBw·0.99 in wire bits.
        let rate = p.tcb.pacing_rate_bps.unwrap();
        let expect = bbr.pacing_gain() * bbr.btl_bw() * 0.99 * (MSS + 52) as f64 * 8.0;
        assert!((rate - expect).abs() / expect < 1e-9);
        // The pipe is used, the queue is small.
        assert!(p.queue_len() <= 15, "queue {}", p.queue_len());
    }

    #[test]
    fn probe_bw_cycles_through_eight_phases() {
        let mut p = path();
        let mut bbr = Bbr::new();
        p.run_until(&mut bbr, 2 * NS_PER_S, |_, _, _| {});
        assert_eq!(bbr.mode(), BbrMode::ProbeBw);
        let mut seq = vec![bbr.cycle_idx()];
        let mut t = p.now;
        while t < 8 * NS_PER_S {
            t += NS_PER_MS;
            p.run_until(&mut bbr, t, |_, _, _| {});
            assert_eq!(bbr.pacing_gain(), PACING_GAIN_CYCLE[bbr.cycle_idx()]);
            if *seq.last().unwrap() != bbr.cycle_idx() {
                seq.push(bbr.cycle_idx());
            }
        }
        for w in seq.windows(2) {
            assert_eq!(w[1], (w[0] + 1) % CYCLE_LEN, "phases advance one by one: {seq:?}");
        }
        // About one phase per min RTT (41 ms): 6 s ≈ 146 phases, longer probing phases aside.
        assert!(seq.len() > 80, "{} phases", seq.len());
        for i in 0..CYCLE_LEN {
            assert!(seq.contains(&i));
        }
    }

    #[test]
    fn probe_bw_start_phase_is_seeded_and_never_the_drain_phase() {
        let mut starts = std::collections::BTreeSet::new();
        for seed in 0..64 {
            let mut bbr = Bbr::with_seed(seed);
            bbr.full_bw_reached = true;
            bbr.reset_probe_bw_mode(0);
            assert_ne!(bbr.cycle_idx(), 1);
            starts.insert(bbr.cycle_idx());
            // Same seed, same phase.
            let mut again = Bbr::with_seed(seed);
            again.reset_probe_bw_mode(0);
            assert_eq!(again.cycle_idx(), bbr.cycle_idx());
        }
        assert_eq!(starts.len(), 7, "{starts:?}");
    }

    #[test]
    fn probe_rtt_after_ten_seconds_holds_cwnd_four_for_200ms() {
        let mut p = path();
        let mut bbr = Bbr::new();
        p.run_until(&mut bbr, 2 * NS_PER_S, |_, _, _| {});
        assert_eq!(bbr.mode(), BbrMode::ProbeBw);
        let stamp = bbr.min_rtt_stamp();
        let mut entered = None;
        let mut left = None;
        let mut max_cwnd_in_probe_rtt = 0;
        let mut t = p.now;
        while t < 14 * NS_PER_S && left.is_none() {
            t += NS_PER_MS / 4;
            p.run_until(&mut bbr, t, |_, _, _| {});
            match (bbr.mode(), entered) {
                (BbrMode::ProbeRtt, None) => entered = Some(t),
                (BbrMode::ProbeRtt, Some(_)) => max_cwnd_in_probe_rtt = max_cwnd_in_probe_rtt.max(p.tcb.cwnd),
                (_, Some(_)) => left = Some(t),
                _ => {}
            }
        }
        let entered = entered.expect("ProbeRTT");
        let left = left.expect("ProbeRTT ends");
        // Entered once the 10 s min-RTT window expired (within an RTT of it).
        assert!(entered > stamp + MIN_RTT_WINDOW, "{entered} vs {stamp}");
        assert!(entered < stamp + MIN_RTT_WINDOW + 50 * NS_PER_MS);
        assert_eq!(max_cwnd_in_probe_rtt, CWND_MIN_TARGET);
        // At least 200 ms at cwnd 4 (plus the time to drain to 4), and not much longer.
        assert!(
            left - entered >= PROBE_RTT_DURATION,
            "{} ms",
            (left - entered) / NS_PER_MS
        );
        assert!(left - entered <= PROBE_RTT_DURATION + 150 * NS_PER_MS);
        assert_eq!(bbr.mode(), BbrMode::ProbeBw);
        assert!(
            bbr.min_rtt_stamp() > entered,
            "min-RTT stamp refreshed on leaving ProbeRTT"
        );
        // The cwnd is restored and the low-rate ProbeRTT samples did not drag the estimate.
        assert!(p.tcb.cwnd >= 2 * 41, "cwnd {}", p.tcb.cwnd);
        assert!((bbr.btl_bw() - 1000.0).abs() < 20.0, "btl_bw {}", bbr.btl_bw());
    }

    #[test]
    fn packet_conservation_in_recovery_and_restore_after() {
        let mut p = path();
        let mut bbr = Bbr::new();
        p.run_until(&mut bbr, 3 * NS_PER_S, |_, _, _| {});
        let before = p.tcb.cwnd;
        let now = p.now;
        let tcb = &mut p.tcb;
        // Enter fast recovery (sender order).
        bbr.set_state(tcb, CaState::Recovery, now);
        tcb.ssthresh = bbr.ssthresh(tcb, now);
        tcb.ca_state = CaState::Recovery;
        assert_eq!(bbr.prior_cwnd(), before);
        tcb.in_flight = 30;
        let rs = RateSample {
            acked_sacked: 1,
            losses: 2,
            prior_delivered: tcb.delivered - 40,
            delivered: 40,
            interval: 41 * NS_PER_MS,
            rtt: 41 * NS_PER_MS,
            prior_in_flight: 33,
            is_app_limited: false,
        };
        assert!(bbr.cong_control(tcb, &rs, now + 1));
        assert_eq!(tcb.cwnd, 31, "packet conservation: in_flight + acked");
        // Leave recovery: the cwnd comes back on the next ACK.
        tcb.cwnd = bbr.cwnd_after_recovery(tcb);
        assert_eq!(tcb.cwnd, 31);
        tcb.ca_state = CaState::Open;
        let rs = RateSample { losses: 0, ..rs };
        bbr.cong_control(tcb, &rs, now + 2);
        assert!(tcb.cwnd >= before.min(2 * bbr.bdp() + 3), "{} vs {before}", tcb.cwnd);
    }

    #[test]
    fn rto_keeps_ssthresh_and_restores_cwnd() {
        let mut p = path();
        let mut bbr = Bbr::new();
        p.run_until(&mut bbr, 3 * NS_PER_S, |_, _, _| {});
        let before = p.tcb.cwnd;
        let now = p.now;
        let tcb = &mut p.tcb;
        let ss = tcb.ssthresh;
        bbr.cwnd_event(tcb, CwndEvent::Loss, now);
        bbr.set_state(tcb, CaState::Loss, now);
        tcb.ca_state = CaState::Loss;
        assert_eq!(bbr.ssthresh(tcb, now), ss);
        tcb.cwnd = 1;
        assert_eq!(bbr.prior_cwnd(), before);
        tcb.ca_state = CaState::Open;
        tcb.in_flight = 0;
        let rs = RateSample {
            acked_sacked: 1,
            prior_delivered: tcb.delivered - 1,
            delivered: 1,
            interval: 41 * NS_PER_MS,
            rtt: 41 * NS_PER_MS,
            ..Default::default()
        };
        bbr.cong_control(tcb, &rs, now + NS_PER_MS);
        assert!(tcb.cwnd >= before.min(2 * bbr.bdp() + 3));
    }

    #[test]
    fn app_limited_samples_do_not_lower_the_estimate() {
        let mut bbr = Bbr::new();
        let mut tcb = Tcb::new(MSS, 10);
        tcb.in_flight = 1000;
        let mut now = 0;
        now += 100 * NS_PER_MS;
        round_ack(&mut bbr, &mut tcb, now, 1000.0);
        for _ in 0..20 {
            now += 100 * NS_PER_MS;
            let prior = tcb.delivered;
            tcb.delivered += 10;
            let rs = RateSample {
                acked_sacked: 1,
                prior_delivered: prior,
                delivered: 10,
                interval: 100 * NS_PER_MS,
                rtt: 100 * NS_PER_MS,
                is_app_limited: true,
                ..Default::default()
            };
            bbr.cong_control(&mut tcb, &rs, now);
        }
        assert_eq!(bbr.max_bw(), 1000.0);
        assert!(!bbr.full_bw_reached(), "app-limited rounds do not count as a plateau");
    }

    #[test]
    fn initial_pacing_rate_from_srtt() {
        let mut bbr = Bbr::new();
        let mut tcb = Tcb::new(MSS, 10);
        tcb.srtt = 100 * NS_PER_MS;
        bbr.cwnd_event(&mut tcb, CwndEvent::TxStart, 0);
        let segs = bbr.pacing_rate_segs_per_s();
        assert!((segs - 2.885 * 100.0 * 0.99).abs() < 0.5, "{segs}");
        assert_eq!(tcb.ssthresh, u32::MAX);
        assert!(tcb.pacing_rate_bps.is_some());
    }
}
