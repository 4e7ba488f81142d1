//! ECF, Earliest Completion First (Lim et al., CoNEXT 2017).
//!
//! Source: multipath-tcp/mptcp `net/mptcp/mptcp_ecf.c` (`ecf_get_available_subflow`, v0.95);
//! algorithms.md §ECF.
//!
//! Rule: `s` = minRTT's choice ([`super::minrtt::select`]; none → wait), `f` = the fastest
//! established subflow ([`super::minrtt::fastest`]). If `s == f`, send on it. Otherwise, with
//! `mss` = s's MSS, `sndbuf` = [`ConnView::unsent_bytes`], β = 1/4 and the per-connection
//! `waiting` flag (initially 0):
//! - `x_f = max(sndbuf, cwnd_f·mss)`, `x_s = max(sndbuf, cwnd_s·mss)`;
//! - if `srtt_f·(x_f + cwnd_f·mss) < (1 + waiting·β)·cwnd_f·mss·(srtt_s + δ)`:
//!   - if `srtt_s·x_s >= cwnd_s·mss·(2·srtt_f + δ)`: `waiting = 1` and **wait**;
//!   - else send on s (waiting unchanged);
//! - else `waiting = 0` and send on s.
//!
//! All arithmetic is exact integer (ns × bytes in u128), comparisons as in Linux
//! (`4·lhs < 4·rhs + waiting·rhs`).
//!
//! δ — the rttvar scaling used: Linux computes `δ = max(rttvar_us_f, rttvar_us_s) >> 1`. Its
//! `rttvar_us` is ≈ 4·RTTVAR (the RTO's variance term) and never below `tcp_rto_min` (200 ms by
//! default: `tcp_rtt_estimator` resets `mdev_max_us` to `tcp_rto_min_us` every RTT and `rttvar_us`
//! decays towards it). So here `δ = max(2·RTTVAR_f, 2·RTTVAR_s, delta_floor)` with the view's
//! RFC 6298 RTTVAR and `delta_floor` = 100 ms by default (= 200 ms / 2, as in Linux); a scenario
//! can set `delta_floor_ms = 0` for the unfloored 2·RTTVAR. Backup and `pf` subflows can be the
//! "fastest" (Linux does not exclude them), so ECF may wait for a fast subflow that minRTT will
//! not use; this Linux quirk is kept.
//!
//! Deviations: Linux derives `sndbuf` from `sk_wmem_queued` (truesize, including the subflows'
//! accounting); here it is the payload bytes not yet assigned to any subflow. The receive-buffer
//! optimisation is the core's ([`Scheduler::rcvbuf_optimisation`] = true: ECF uses
//! `mptcp_next_segment`).
use super::{minrtt, ConnView, Decision, Scheduler, SubflowView};
use crate::core::Time;

/// Default lower bound of δ: half of Linux's default `tcp_rto_min` (200 ms).
pub const DEFAULT_DELTA_FLOOR: Time = 100_000_000;

#[derive(Clone, Debug)]
pub struct Ecf {
    waiting: bool,
    delta_floor: Time,
}

impl Ecf {
    /// `delta_floor` in ns (see the module docs; [`DEFAULT_DELTA_FLOOR`] mimics Linux).
    pub fn new(delta_floor: Time) -> Self {
        Ecf {
            waiting: false,
            delta_floor,
        }
    }

    /// The current `waiting` flag (for tests and traces).
    pub fn waiting(&self) -> bool {
        self.waiting
    }
}

impl Default for Ecf {
    fn default() -> Self {
        Self::new(DEFAULT_DELTA_FLOOR)
    }
}

/// What ECF's two inequalities say for fast `f` and slow `s`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum EcfVerdict {
    /// First inequality false: the slow subflow is worth using (`waiting = 0`).
    UseSlow,
    /// First inequality true, second false: send on the slow subflow, flag unchanged.
    UseSlowKeepFlag,
    /// Both true: wait for the fast subflow (`waiting = 1`).
    Wait,
}

/// ECF's test, exact in integers. `delta` in ns, `sndbuf` in bytes, `mss` the slow subflow's.
pub fn verdict(f: &SubflowView, s: &SubflowView, sndbuf: u64, waiting: bool, delta: Time) -> EcfVerdict {
    let mss = s.mss as u128;
    let sndbuf = sndbuf as u128;
    let (cwnd_f, cwnd_s) = (f.cwnd as u128, s.cwnd as u128);
    let (srtt_f, srtt_s, delta) = (f.srtt as u128, s.srtt as u128, delta as u128);
    let x_f = sndbuf.max(cwnd_f * mss);
    let lhs = srtt_f * (x_f + cwnd_f * mss);
    let rhs = cwnd_f * mss * (srtt_s + delta);
    if 4 * lhs < 4 * rhs + u128::from(waiting) * rhs {
        let x_s = sndbuf.max(cwnd_s * mss);
        if srtt_s * x_s >= cwnd_s * mss * (2 * srtt_f + delta) {
            EcfVerdict::Wait
        } else {
            EcfVerdict::UseSlowKeepFlag
        }
    } else {
        EcfVerdict::UseSlow
    }
}

impl Scheduler for Ecf {
    fn view_rates(&self) -> bool {
        false
    }

    fn event_views(&self) -> bool {
        false
    }

    fn name(&self) -> String {
        "ecf".into()
    }

    fn schedule(&mut self, conn: &ConnView, subflows: &[SubflowView]) -> Decision {
        let Some(k) = minrtt::select(subflows, conn.segment.sent_on) else {
            return Decision::Wait;
        };
        let s = &subflows[k];
        let Some(fi) = minrtt::fastest(subflows) else {
            return Decision::Send(s.id);
        };
        if fi == k {
            return Decision::Send(s.id);
        }
        let f = &subflows[fi];
        let delta = (2 * f.rttvar).max(2 * s.rttvar).max(self.delta_floor);
        match verdict(f, s, conn.unsent_bytes, self.waiting, delta) {
            EcfVerdict::Wait => {
                self.waiting = true;
                Decision::Wait
            }
            EcfVerdict::UseSlowKeepFlag => Decision::Send(s.id),
            EcfVerdict::UseSlow => {
                self.waiting = false;
                Decision::Send(s.id)
            }
        }
    }

    fn rcvbuf_optimisation(&self) -> bool {
        true
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    /// Fast subflow 0 (10 ms, cwnd 10, full) and slow subflow 1 (`srtt_s_ms`, cwnd `cwnd_s`,
    /// empty); RTTVAR 0 so that δ is the floor.
    fn pair(srtt_s_ms: u64, cwnd_s: u32) -> [SubflowView; 2] {
        let mut f = sf(0, 10, 10, 10);
        f.rttvar = 0;
        let mut s = sf(1, srtt_s_ms, cwnd_s, 0);
        s.rttvar = 0;
        [f, s]
    }

    fn with_unsent(bytes: u64) -> ConnView {
        let mut c = conn(0);
        c.unsent_bytes = bytes;
        c
    }

    #[test]
    fn sends_on_the_fastest_when_minrtt_picks_it() {
        let mut sfs = pair(100, 10);
        sfs[0].in_flight = 0;
        assert_eq!(Ecf::new(0).schedule(&conn(0), &sfs), Decision::Send(0));
    }

    #[test]
    fn waits_exactly_when_both_inequalities_hold() {
        // δ = 0, mss M, cwnd_f = 10, srtt_f = 10 ms, sndbuf = 0 → x_f = 10M:
        // first: 10·(20M) < 10M·srtt_s ⇔ srtt_s > 20 ms.
        // second (cwnd_s = 10, x_s = 10M): srtt_s·10M >= 10M·(20) ⇔ srtt_s >= 20 ms.
        let mut e = Ecf::new(0);
        assert_eq!(e.schedule(&conn(0), &pair(20, 10)), Decision::Send(1)); // 200 < 200 is false
        assert!(!e.waiting());
        assert_eq!(e.schedule(&conn(0), &pair(21, 10)), Decision::Wait);
        assert!(e.waiting());
        // Lots of unsent data (x_f large): the fast subflow alone would take too long → use slow.
        let mut e = Ecf::new(0);
        assert_eq!(e.schedule(&with_unsent(1_000_000), &pair(21, 10)), Decision::Send(1));
        assert!(!e.waiting());
    }

    #[test]
    fn second_inequality_false_sends_and_keeps_the_flag() {
        // δ = 15 ms (the floor): first: 10·20M < 10M·(srtt_s + 15) ⇔ srtt_s > 5 ms;
        // second: srtt_s·10M >= 10M·(20 + 15) ⇔ srtt_s ≥ 35 ms.
        let mut e = Ecf::new(15 * MS);
        assert_eq!(e.schedule(&conn(0), &pair(30, 10)), Decision::Send(1));
        assert!(!e.waiting());
        // Set the flag, then the same situation keeps it set.
        assert_eq!(e.schedule(&conn(0), &pair(40, 10)), Decision::Wait);
        assert!(e.waiting());
        assert_eq!(e.schedule(&conn(0), &pair(30, 10)), Decision::Send(1));
        assert!(e.waiting());
    }

    #[test]
    fn waiting_flag_gives_hysteresis() {
        // δ = 0. With sndbuf S > 10M: x_f = S, first: 10·(S + 10M) < (1 + w/4)·10M·srtt_s.
        // srtt_s = 50 ms, M = mss: w = 0 → S + 10M < 50M ⇔ S < 40M; w = 1 → S < 52.5M.
        // Second: 50·max(S, 10M) >= 10M·20 holds for all S.
        let m = MSS as u64;
        let s_mid = 45 * m; // between the two thresholds
        let mut e = Ecf::new(0);
        // Not waiting: S = 45M fails the first inequality → send on slow, flag stays 0.
        assert_eq!(e.schedule(&with_unsent(s_mid), &pair(50, 10)), Decision::Send(1));
        assert!(!e.waiting());
        // S = 30M: wait, flag set.
        assert_eq!(e.schedule(&with_unsent(30 * m), &pair(50, 10)), Decision::Wait);
        assert!(e.waiting());
        // Now the same S = 45M still waits (β margin).
        assert_eq!(e.schedule(&with_unsent(s_mid), &pair(50, 10)), Decision::Wait);
        // Beyond the widened threshold: send on slow and clear the flag.
        assert_eq!(e.schedule(&with_unsent(53 * m), &pair(50, 10)), Decision::Send(1));
        assert!(!e.waiting());
    }

    #[test]
    fn delta_uses_twice_rttvar_with_a_floor() {
        // RTTVAR_s = 5 ms → δ = 10 ms (floor 0). First: 200 < 10·(srtt_s + 10) ⇔ srtt_s > 10;
        // second: srtt_s ≥ 30. With srtt_s = 25: send on slow; with RTTVAR 0 it would wait.
        let mut sfs = pair(25, 10);
        assert_eq!(Ecf::new(0).schedule(&conn(0), &sfs), Decision::Wait);
        sfs[1].rttvar = 5 * MS;
        assert_eq!(Ecf::new(0).schedule(&conn(0), &sfs), Decision::Send(1));
        // The default 100 ms floor dominates: second needs srtt_s ≥ 120 ms.
        let mut e = Ecf::default();
        assert_eq!(e.schedule(&conn(0), &pair(119, 10)), Decision::Send(1));
        assert_eq!(e.schedule(&conn(0), &pair(120, 10)), Decision::Wait);
    }

    #[test]
    fn nothing_available_waits_and_rcvbuf_optimisation_is_on() {
        let mut sfs = pair(30, 10);
        sfs[1].in_flight = 10;
        assert_eq!(Ecf::new(0).schedule(&conn(0), &sfs), Decision::Wait);
        assert!(Ecf::default().rcvbuf_optimisation());
    }
}
