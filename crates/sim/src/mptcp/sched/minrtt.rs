//! minRTT, the out-of-tree MPTCP default scheduler ("default" in multipath-tcp/mptcp v0.9x).
//!
//! Source: multipath-tcp/mptcp `net/mptcp/mptcp_sched.c` — `get_available_subflow`,
//! `get_subflow_from_selectors`, `mptcp_is_def_unavailable`, `mptcp_is_temp_unavailable`,
//! `mptcp_dont_reinject_skb`; algorithms.md §minRTT.
//!
//! Rule (one *pass* per class, regular first, then backup):
//! - a subflow is "unused" if the segment was not sent on it yet (`sent_on`, Linux `path_mask`;
//!   0 for new data, so every subflow is unused);
//! - within the class, skip never-usable subflows; among the usable ones pick the lowest srtt,
//!   considering used subflows only while no unused usable one was seen;
//! - the regular pass *decides* ("force") if it found an unused usable subflow (→ send) or an
//!   unused one that is only temporarily unavailable (→ **wait**: no spill to a backup while a
//!   regular subflow is merely cwnd-limited or in Loss);
//! - otherwise the backup pass runs (so backups carry new data only when every regular subflow
//!   is never-usable); if it does not decide either, the mask is cleared and both passes run once
//!   more (a segment sent everywhere may go anywhere again).
//!
//! The receive-buffer optimisation (penalisation + opportunistic retransmission) is done by the
//! connection core; [`Scheduler::rcvbuf_optimisation`] says yes.
//!
//! Deviations: Linux's "one subflow → bypass" shortcut and the DATA_FIN-on-the-same-path rule
//! are omitted (the first gives the same choice; the second is the core's business). The cwnd
//! test is [`SubflowView::temp_unavailable`] (`in_flight + queued >= cwnd`); Linux tests
//! `queued_bytes > (cwnd − in_flight)·mss`, i.e. admits one more segment when the queue exactly
//! fills the window. The per-subflow receive-window test (`zero_wnd_test`) is not modelled.
use super::{sent_on, ConnView, Decision, Scheduler, SubflowView};
use crate::core::Time;

/// The out-of-tree default scheduler.
#[derive(Clone, Debug, Default)]
pub struct MinRtt;

impl MinRtt {
    pub fn new() -> Self {
        MinRtt
    }
}

struct Pass {
    /// Index into the slice.
    best: Option<usize>,
    /// Linux's `force`: the pass decided (found an unused subflow, usable or temporarily not).
    force: bool,
}

/// One `get_subflow_from_selectors` pass over the subflows whose `backup` flag equals `backup`.
fn pass(subflows: &[SubflowView], backup: bool, mask: u64) -> Pass {
    if mask == 0 {
        pass_unsent(subflows, backup)
    } else {
        pass_masked(subflows, backup, mask)
    }
}

/// [`pass`] in general: used subflows count only while no unused usable one was seen.
fn pass_masked(subflows: &[SubflowView], backup: bool, mask: u64) -> Pass {
    let mut best: Option<(Time, usize)> = None;
    let mut found_unused = false;
    let mut found_unused_una = false;
    for (k, s) in subflows.iter().enumerate() {
        if s.backup != backup {
            continue;
        }
        let unused = !sent_on(mask, s.id);
        if !unused && found_unused {
            continue;
        }
        if s.never_usable() {
            continue;
        }
        if s.temp_unavailable() {
            found_unused_una |= unused;
            continue;
        }
        if unused && !found_unused {
            // First unused candidate: forget any used one picked so far.
            found_unused = true;
            best = None;
        }
        if best.is_none_or(|(rtt, _)| s.srtt < rtt) {
            best = Some((s.srtt, k));
        }
    }
    let force = if best.is_some() { found_unused } else { found_unused_una };
    Pass {
        best: best.map(|(_, k)| k),
        force,
    }
}

/// [`pass`] with an empty mask: a segment sent nowhere yet (new data: the usual case, once or
/// more per segment), or one whose mask [`select`] cleared after it went everywhere. Every
/// subflow is unused, so the pass picks the lowest srtt among the usable ones (the first on
/// ties) and decides if it found one, or a temporarily unavailable one (wait).
fn pass_unsent(subflows: &[SubflowView], backup: bool) -> Pass {
    let mut best: Option<(Time, usize)> = None;
    let mut found_una = false;
    for (k, s) in subflows.iter().enumerate() {
        if s.backup != backup || s.never_usable() {
            continue;
        }
        if s.temp_unavailable() {
            found_una = true;
        } else if best.is_none_or(|(rtt, _)| s.srtt < rtt) {
            best = Some((s.srtt, k));
        }
    }
    Pass {
        force: best.is_some() || found_una,
        best: best.map(|(_, k)| k),
    }
}

/// minRTT's choice for a segment already sent on `mask` (0 for new data): an index into
/// `subflows`, or `None` (wait).
pub fn select(subflows: &[SubflowView], mask: u64) -> Option<usize> {
    let mut mask = mask;
    let mut looping = false;
    loop {
        let regular = pass(subflows, false, mask);
        if regular.force {
            return regular.best;
        }
        let backup = pass(subflows, true, mask);
        if !backup.force && !looping {
            // Sent on every candidate already: clear the mask and try once more.
            mask = 0;
            looping = true;
            continue;
        }
        return backup.best;
    }
}

/// The "fastest" subflow of BLEST/ECF (`minsk`): lowest srtt among established subflows,
/// whatever their backup or `pf` flags and cwnd (first one on ties). An index into `subflows`.
pub fn fastest(subflows: &[SubflowView]) -> Option<usize> {
    let mut best: Option<(Time, usize)> = None;
    for (k, s) in subflows.iter().enumerate() {
        if s.established && best.is_none_or(|(rtt, _)| s.srtt < rtt) {
            best = Some((s.srtt, k));
        }
    }
    best.map(|(_, k)| k)
}

impl Scheduler for MinRtt {
    fn view_rates(&self) -> bool {
        false
    }

    fn event_views(&self) -> bool {
        false
    }

    fn name(&self) -> String {
        "minrtt".into()
    }

    fn schedule(&mut self, conn: &ConnView, subflows: &[SubflowView]) -> Decision {
        match select(subflows, conn.segment.sent_on) {
            Some(k) => Decision::Send(subflows[k].id),
            None => Decision::Wait,
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

    fn run(conn: &ConnView, sfs: &[SubflowView]) -> Decision {
        MinRtt::new().schedule(conn, sfs)
    }

    #[test]
    fn picks_lowest_srtt_with_cwnd_room() {
        let sfs = [sf(0, 40, 10, 3), sf(1, 20, 10, 3), sf(2, 30, 10, 3)];
        assert_eq!(run(&conn(0), &sfs), Decision::Send(1));
        // The fastest is full: the next fastest with room.
        let sfs = [sf(0, 40, 10, 3), sf(1, 20, 10, 10), sf(2, 30, 10, 3)];
        assert_eq!(run(&conn(0), &sfs), Decision::Send(2));
        // Queued data counts against the window too.
        let mut sfs = [sf(0, 40, 10, 3), sf(1, 20, 10, 6)];
        sfs[1].queued = 4;
        assert_eq!(run(&conn(0), &sfs), Decision::Send(0));
    }

    /// The pass for new data is the general pass with an empty mask, on generated subflows
    /// (backup or not, never usable, in Loss, cwnd-limited, srtt ties, ids past 63).
    #[test]
    fn unsent_pass_is_the_masked_pass_with_an_empty_mask() {
        use prop::bool::weighted;
        use proptest::prelude::*;
        let flags = (weighted(0.3), weighted(0.9), weighted(0.1), weighted(0.1));
        let view = (0usize..70, 0u64..4, 1u32..20, 0u32..12, 0u32..4, flags);
        proptest!(ProptestConfig::with_cases(3000), |(views in prop::collection::vec(view, 0..10), backup in weighted(0.2))| {
            let sfs: Vec<SubflowView> = views
                .iter()
                .map(|&(id, srtt, cwnd, in_flight, queued, (is_backup, established, pf, in_loss))| {
                    let mut s = sf(id, srtt, cwnd, in_flight);
                    s.queued = queued;
                    s.backup = is_backup;
                    s.established = established;
                    s.pf = pf;
                    s.in_loss = in_loss;
                    s
                })
                .collect();
            let (a, b) = (pass_unsent(&sfs, backup), pass_masked(&sfs, backup, 0));
            prop_assert_eq!((a.best, a.force), (b.best, b.force));
        });
    }

    #[test]
    fn ties_go_to_the_first_subflow() {
        let sfs = [sf(0, 20, 10, 0), sf(1, 20, 10, 0)];
        assert_eq!(run(&conn(0), &sfs), Decision::Send(0));
    }

    #[test]
    fn waits_when_every_regular_is_only_cwnd_limited_and_does_not_spill_to_backup() {
        let mut backup = sf(2, 5, 10, 0);
        backup.backup = true;
        let sfs = [sf(0, 20, 10, 10), sf(1, 30, 10, 10), backup.clone()];
        assert_eq!(run(&conn(0), &sfs), Decision::Wait);
        // Same with one regular in Loss and the other never usable.
        let mut a = sf(0, 20, 10, 0);
        a.in_loss = true;
        let mut b = sf(1, 30, 10, 0);
        b.established = false;
        assert_eq!(run(&conn(0), &[a, b, backup]), Decision::Wait);
    }

    #[test]
    fn uses_backup_only_when_every_regular_is_never_usable() {
        let mut a = sf(0, 20, 10, 0);
        a.pf = true;
        let mut b = sf(1, 30, 10, 0);
        b.established = false;
        let mut c = sf(2, 50, 10, 0);
        c.backup = true;
        let mut d = sf(3, 60, 10, 0);
        d.backup = true;
        assert_eq!(
            run(&conn(0), &[a.clone(), b.clone(), c.clone(), d.clone()]),
            Decision::Send(2)
        );
        // The lowest-srtt backup with room.
        c.in_flight = 10;
        assert_eq!(
            run(&conn(0), &[a.clone(), b.clone(), c.clone(), d.clone()]),
            Decision::Send(3)
        );
        // Every backup full: wait.
        d.in_flight = 10;
        assert_eq!(
            run(&conn(0), &[a.clone(), b.clone(), c.clone(), d.clone()]),
            Decision::Wait
        );
        // A usable regular subflow wins over a faster backup.
        let fast_backup = {
            let mut x = sf(2, 1, 10, 0);
            x.backup = true;
            x
        };
        assert_eq!(run(&conn(0), &[sf(0, 90, 10, 0), fast_backup]), Decision::Send(0));
    }

    #[test]
    fn no_subflow_at_all_waits() {
        assert_eq!(run(&conn(0), &[]), Decision::Wait);
        let mut a = sf(0, 20, 10, 0);
        a.established = false;
        assert_eq!(run(&conn(0), &[a]), Decision::Wait);
    }

    #[test]
    fn reinjection_prefers_subflows_not_used_yet() {
        let sfs = [sf(0, 10, 10, 0), sf(1, 50, 10, 0)];
        // Sent on 0 already: go to the slower, unused 1.
        assert_eq!(run(&reinject(0, 0b01), &sfs), Decision::Send(1));
        // Unused subflow only cwnd-limited while the used one has room: Linux's regular pass
        // does not decide (its best is a used subflow), the mask is cleared, 0 takes it again.
        let sfs_full = [sf(0, 10, 10, 0), sf(1, 50, 10, 10)];
        assert_eq!(run(&reinject(0, 0b01), &sfs_full), Decision::Send(0));
        // Both full: the unused one is only temporarily unavailable → wait.
        let both_full = [sf(0, 10, 10, 10), sf(1, 50, 10, 10)];
        assert_eq!(run(&reinject(0, 0b01), &both_full), Decision::Wait);
        // Unused subflow never usable: resend on a used one.
        let mut dead = sf(1, 50, 10, 0);
        dead.pf = true;
        assert_eq!(run(&reinject(0, 0b01), &[sf(0, 10, 10, 0), dead]), Decision::Send(0));
    }

    #[test]
    fn reinjection_on_all_regulars_goes_to_an_unused_backup_then_anywhere() {
        let mut b = sf(2, 80, 10, 0);
        b.backup = true;
        let sfs = [sf(0, 10, 10, 0), sf(1, 20, 10, 0), b.clone()];
        // Both regulars used: an unused backup takes it (Linux's path-mask preference crosses classes).
        assert_eq!(run(&reinject(0, 0b011), &sfs), Decision::Send(2));
        // Sent everywhere: the mask is cleared and plain minRTT applies.
        assert_eq!(run(&reinject(0, 0b111), &sfs), Decision::Send(0));
    }

    #[test]
    fn fastest_ignores_backup_pf_and_cwnd_but_not_establishment() {
        let mut a = sf(0, 5, 10, 10);
        a.backup = true;
        a.pf = true;
        let mut b = sf(1, 1, 10, 0);
        b.established = false;
        let sfs = [sf(2, 30, 10, 0), a, b];
        assert_eq!(fastest(&sfs), Some(1));
    }

    #[test]
    fn asks_for_the_receive_buffer_optimisation() {
        assert!(MinRtt::new().rcvbuf_optimisation());
        assert_eq!(MinRtt::new().burst_bytes(), 0);
    }
}
