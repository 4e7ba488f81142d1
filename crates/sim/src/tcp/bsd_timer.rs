//! The 4.4BSD retransmission timer (`[flows.tcp] timer = "bsd"`), the timer of the BSD-derived
//! stacks that 1990s studies ran (Netsim's and ns-2's Tahoe come from this lineage).
//!
//! Sources: 4.4BSD-Lite `netinet/tcp_timer.h` (PR_SLOWHZ = 2 slow-timer ticks per second,
//! `TCPTV_MIN` = 1 s, `TCPTV_REXMTMAX` = 64 s, `TCPTV_SRTTDFLT` = 3 s, `TCP_MAXRXTSHIFT` = 12,
//! `TCPT_RANGESET`), `netinet/tcp_timer.c` (`tcp_slowtimo` counts every armed timer down once per
//! 500 ms tick and times the RTT by counting the same ticks; `tcp_backoff[]` = 1, 2, 4, 8, 16,
//! 32, 64, 64, …; after `TCP_MAXRXTSHIFT / 4` backoffs the SRTT is folded into RTTVAR and
//! forgotten; `tcp_fasttimo` sends pending delayed ACKs every 200 ms), `netinet/tcp_var.h`
//! (`TCP_RTT_SHIFT` = 3, `TCP_RTTVAR_SHIFT` = 2, `TCP_REXMTVAL` = srtt + 4·rttvar in ticks),
//! `netinet/tcp_input.c` `tcp_xmit_timer` (Jacobson's estimator in fixed point: gains 1/8 and
//! 1/4; the first sample sets srtt = rtt, rttvar = rtt/2) and `tcp_newtcpcb` (RTO before any
//! sample: (`TCPTV_SRTTBASE`/4 + 4·`TCPTV_SRTTDFLT`)/2 = 6 s).
//!
//! What that means for the RTO: it is a whole number of 500 ms ticks, at least 1 s, and the
//! timer fires on a tick of the host's slow clock, so a timer armed for n ticks expires after
//! between n − 1 and n ticks. One segment at a time is timed (`t_rtt`, `t_rtseq`); a sample
//! counts the ticks between its transmission and the ACK that covers it, plus one, and any
//! retransmission stops the measurement (Karn). The slow clock ticks at multiples of 500 ms from
//! the start of the run (a real host's phase is arbitrary; a fixed one keeps runs deterministic).
//!
//! Deviations: no route-cached RTT (`rmx_rtt`); the persist timer keeps the simulator's Linux
//! schedule; no keepalive or 2MSL timers (nothing here idles or closes).
use crate::core::time::{Time, NS_PER_MS};

/// Which retransmission timer a sender runs (`[flows.tcp] timer`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum TimerProfile {
    /// Linux's (or RFC 6298's, with `rto_style`): a fine-grained RTO, `min_rto` 200 ms by default.
    #[default]
    Linux,
    /// 4.4BSD's: 500 ms ticks, RTO ≥ 1 s, and the receiver's delayed ACKs on a 200 ms fast timer.
    Bsd,
}

/// One slow-timer tick (PR_SLOWHZ = 2).
pub const SLOW_TICK: Time = 500 * NS_PER_MS;
/// The fast timer's period: pending delayed ACKs leave on its ticks.
pub const FAST_TICK: Time = 200 * NS_PER_MS;
/// `TCPTV_MIN`: 1 s in ticks.
const TCPTV_MIN: i64 = 2;
/// `TCPTV_REXMTMAX`: 64 s in ticks.
const TCPTV_REXMTMAX: i64 = 128;
/// `TCPTV_SRTTDFLT`: 3 s in ticks.
const TCPTV_SRTTDFLT: i64 = 6;
const TCP_RTT_SHIFT: u32 = 3;
const TCP_RTTVAR_SHIFT: u32 = 2;
const TCP_MAXRXTSHIFT: u32 = 12;
const BACKOFF: [i64; TCP_MAXRXTSHIFT as usize + 1] = [1, 2, 4, 8, 16, 32, 64, 64, 64, 64, 64, 64, 64];

/// The BSD retransmission-timer state of one sender.
#[derive(Clone, Debug)]
pub struct BsdTimer {
    /// Smoothed RTT in ticks, scaled by 8; 0 = no sample yet.
    srtt: i64,
    /// Smoothed mean deviation in ticks, scaled by 4.
    rttvar: i64,
    /// The timed segment: the sequence number its ACK must pass, and the tick it left on.
    timing: Option<(u64, u64)>,
    /// `t_rxtcur`: the current RTO in ticks, backoff included.
    rxtcur: i64,
    /// `t_rxtshift`: timeouts since the last RTT sample.
    rxtshift: u32,
}

impl Default for BsdTimer {
    fn default() -> Self {
        Self::new()
    }
}

impl BsdTimer {
    pub fn new() -> Self {
        BsdTimer {
            srtt: 0,
            rttvar: TCPTV_SRTTDFLT << TCP_RTTVAR_SHIFT,
            timing: None,
            // tcp_newtcpcb: (TCPTV_SRTTBASE / 4 + 4·TCPTV_SRTTDFLT) / 2 with TCPTV_SRTTBASE = 0.
            rxtcur: (TCPTV_SRTTDFLT << 2) >> 1,
            rxtshift: 0,
        }
    }

    fn tick(now: Time) -> u64 {
        now / SLOW_TICK
    }

    /// New data left at `now` starting at `seq`: time it unless a segment is being timed.
    pub fn on_send_new(&mut self, now: Time, seq: u64) {
        if self.timing.is_none() {
            self.timing = Some((seq, Self::tick(now)));
        }
    }

    /// A retransmission: the timed segment's sample would be ambiguous (Karn).
    pub fn on_retransmit(&mut self) {
        self.timing = None;
    }

    /// A cumulative ACK up to `ack` arrived at `now`: takes the sample if it covers the timed
    /// segment (`SEQ_GT(ti_ack, t_rtseq)`). Returns the sample in ticks.
    pub fn on_ack(&mut self, now: Time, ack: u64) -> Option<i64> {
        let (seq, sent_tick) = self.timing?;
        if ack <= seq {
            return None;
        }
        self.timing = None;
        // t_rtt starts at 1 and tcp_slowtimo adds one per tick.
        let rtt = (Self::tick(now) - sent_tick) as i64 + 1;
        self.sample(rtt);
        Some(rtt)
    }

    /// `tcp_xmit_timer`: Jacobson's estimator in BSD's fixed point.
    fn sample(&mut self, rtt: i64) {
        if self.srtt != 0 {
            let mut delta = rtt - 1 - (self.srtt >> TCP_RTT_SHIFT);
            self.srtt += delta;
            if self.srtt <= 0 {
                self.srtt = 1;
            }
            delta = delta.abs() - (self.rttvar >> TCP_RTTVAR_SHIFT);
            self.rttvar += delta;
            if self.rttvar <= 0 {
                self.rttvar = 1;
            }
        } else {
            self.srtt = rtt << TCP_RTT_SHIFT;
            self.rttvar = rtt << (TCP_RTTVAR_SHIFT - 1);
        }
        self.rxtshift = 0;
        self.rxtcur = self.rexmtval().clamp(TCPTV_MIN, TCPTV_REXMTMAX);
    }

    /// `TCP_REXMTVAL`: srtt + 4·rttvar, in ticks.
    fn rexmtval(&self) -> i64 {
        (self.srtt >> TCP_RTT_SHIFT) + self.rttvar
    }

    /// The current RTO in ticks (`t_rxtcur`). Unlike Linux, an ACK of new data does not undo the
    /// backoff: only a new RTT sample does.
    pub fn rto_ticks(&self) -> i64 {
        self.rxtcur
    }

    /// The current RTO as a duration.
    pub fn rto(&self) -> Time {
        self.rxtcur as Time * SLOW_TICK
    }

    /// When a retransmission timer armed at `now` expires: `tcp_slowtimo` counts it down on each
    /// tick of the slow clock, so on the `t_rxtcur`-th tick after `now`.
    pub fn deadline(&self, now: Time) -> Time {
        (Self::tick(now) + self.rxtcur as u64) * SLOW_TICK
    }

    /// `tcp_timers` (TCPT_REXMT): back off (`tcp_backoff[]`); after more than
    /// `TCP_MAXRXTSHIFT / 4` backoffs the estimate is probably wrong: keep it only as variance.
    pub fn on_timeout(&mut self) {
        self.timing = None;
        self.rxtshift = (self.rxtshift + 1).min(TCP_MAXRXTSHIFT);
        self.rxtcur = (self.rexmtval() * BACKOFF[self.rxtshift as usize]).clamp(TCPTV_MIN, TCPTV_REXMTMAX);
        if self.rxtshift > TCP_MAXRXTSHIFT / 4 {
            self.rttvar += self.srtt >> TCP_RTT_SHIFT;
            self.srtt = 0;
        }
    }

    /// When a delayed ACK pending since `now` leaves: on the next tick of the 200 ms fast timer.
    pub fn delack_deadline(now: Time) -> Time {
        (now / FAST_TICK + 1) * FAST_TICK
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const MS: Time = NS_PER_MS;

    #[test]
    fn before_a_sample_the_rto_is_six_seconds_and_backs_off() {
        let mut t = BsdTimer::new();
        assert_eq!(t.rto(), 6000 * MS);
        // The first timeout: TCP_REXMTVAL (0 + 4·3 s) × 2, within TCPTV_REXMTMAX.
        t.on_timeout();
        assert_eq!(t.rto(), 24000 * MS);
        for _ in 0..10 {
            t.on_timeout();
        }
        assert_eq!(t.rto(), 64000 * MS, "capped at TCPTV_REXMTMAX");
    }

    #[test]
    fn a_short_rtt_gives_three_ticks_on_tick_boundaries() {
        let mut t = BsdTimer::new();
        // 40 ms RTTs within one tick: samples of 1 tick (t_rtt starts at 1). srtt settles at
        // 7/8 tick (scaled 7) and rttvar at 3/4 tick (scaled 3): TCP_REXMTVAL = 0 + 3 ticks,
        // the 1.5 s a 4.4BSD host gives any LAN-like path.
        for k in 0..20u64 {
            let sent = k * SLOW_TICK + 100 * MS;
            t.on_send_new(sent, k * 1000);
            assert_eq!(t.on_ack(sent + 40 * MS, k * 1000 + 1), Some(1));
        }
        assert_eq!(t.rto_ticks(), 3);
        assert!(t.rto() >= 1000 * MS, "never below TCPTV_MIN");
        // Armed at 1.3 s (tick 2) for 3 ticks: fires on the tick at 2.5 s.
        assert_eq!(t.deadline(1300 * MS), 2500 * MS);
        // A timeout doubles it; an RTT sample (not an ACK alone) resets it.
        t.on_timeout();
        assert_eq!(t.deadline(1300 * MS), 4000 * MS);
        t.on_send_new(50 * SLOW_TICK, 50_000);
        t.on_ack(50 * SLOW_TICK + 40 * MS, 50_001);
        assert_eq!(t.rto(), 1500 * MS);
    }

    #[test]
    fn first_sample_sets_srtt_and_half_variance() {
        let mut t = BsdTimer::new();
        t.on_send_new(0, 0);
        // Sent on tick 0, acknowledged on tick 3: t_rtt = 4.
        assert_eq!(t.on_ack(1600 * MS, 1), Some(4));
        // srtt = 4 ticks, rttvar = 2 ticks: RTO = 4 + 4·2 = 12 ticks.
        assert_eq!(t.rto_ticks(), 12);
    }

    #[test]
    fn a_retransmission_stops_the_measurement() {
        let mut t = BsdTimer::new();
        t.on_send_new(0, 0);
        t.on_retransmit();
        assert_eq!(t.on_ack(600 * MS, 10), None);
        assert_eq!(t.rto(), 6000 * MS);
    }

    #[test]
    fn delayed_acks_leave_on_the_fast_timer() {
        assert_eq!(BsdTimer::delack_deadline(0), 200 * MS);
        assert_eq!(BsdTimer::delack_deadline(199 * MS), 200 * MS);
        assert_eq!(BsdTimer::delack_deadline(200 * MS), 400 * MS);
    }
}
