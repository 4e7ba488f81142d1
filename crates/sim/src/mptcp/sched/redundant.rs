//! Redundant: every packet on every available subflow.
//!
//! Source: multipath-tcp/mptcp `net/mptcp/mptcp_redundant.c` (v0.90+, Erbshäußer/Frömmgen:
//! `redundant_next_segment`, `redsched_use_subflow`, `redsched_get_active_valid_sks`);
//! algorithms.md §Redundant.
//!
//! Rule:
//! - reinjected segments are placed by minRTT ([`super::minrtt::select`]), once;
//! - a never-sent segment (`sent_on == 0`) goes to every available regular subflow
//!   ([`Decision::SendMany`], order = a round-robin walk starting after the previous walk's first
//!   subflow). Backups take it only when no regular subflow is valid (established and not `pf`);
//!   then it goes to one backup, the first available in the walk (Linux sends each never-sent
//!   packet once and copies only on regular subflows);
//! - a segment already sent somewhere (`sent_on != 0`, not a reinjection) is copied only to
//!   available regular subflows that have not carried it yet;
//! - nothing eligible → wait.
//!
//! Deviation: Linux keeps a per-subflow pointer into the send queue, so a subflow whose cwnd is
//! full now sends its copy later (unless the data was DATA_ACKed meanwhile). Here copies are
//! pushed only to subflows with cwnd room at decision time; a full subflow skips the segment. The
//! core pushes each copy at once, and data stays queued in a subflow until its cwnd lets it out,
//! so pushing copies into full subflows would grow their queues without bound.
use super::{minrtt, sent_on, ConnView, Decision, Scheduler, SubflowView};

#[derive(Clone, Debug, Default)]
pub struct Redundant {
    /// Slice position where the next round-robin walk starts.
    next: usize,
}

impl Redundant {
    pub fn new() -> Self {
        Self::default()
    }
}

impl Scheduler for Redundant {
    fn view_rates(&self) -> bool {
        false
    }

    fn event_views(&self) -> bool {
        false
    }

    fn name(&self) -> String {
        "redundant".into()
    }

    fn schedule(&mut self, conn: &ConnView, subflows: &[SubflowView]) -> Decision {
        let seg = &conn.segment;
        if seg.reinjection {
            return minrtt::select(subflows, seg.sent_on).map_or(Decision::Wait, |k| Decision::Send(subflows[k].id));
        }
        let n = subflows.len();
        if n == 0 {
            return Decision::Wait;
        }
        let walk = (0..n).map(|j| (self.next + j) % n);
        let mut targets: Vec<usize> = if seg.sent_on == 0 {
            let regular_valid = subflows.iter().any(|s| !s.backup && !s.never_usable());
            let mut t: Vec<usize> = walk
                .filter(|&k| subflows[k].available() && (!subflows[k].backup || !regular_valid))
                .collect();
            if !regular_valid {
                t.truncate(1);
            }
            t
        } else {
            walk.filter(|&k| {
                let s = &subflows[k];
                s.available() && !s.backup && !sent_on(seg.sent_on, s.id)
            })
            .collect()
        };
        let Some(&first) = targets.first() else {
            return Decision::Wait;
        };
        self.next = (first + 1) % n;
        if targets.len() == 1 {
            return Decision::Send(subflows[first].id);
        }
        for k in targets.iter_mut() {
            *k = subflows[*k].id;
        }
        Decision::SendMany(targets)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    #[test]
    fn new_segment_goes_on_every_available_regular_subflow_in_round_robin_order() {
        let sfs = [sf(0, 10, 10, 0), sf(1, 50, 10, 0), sf(2, 30, 10, 0)];
        let mut r = Redundant::new();
        assert_eq!(r.schedule(&conn(0), &sfs), Decision::SendMany(vec![0, 1, 2]));
        assert_eq!(r.schedule(&conn(0), &sfs), Decision::SendMany(vec![1, 2, 0]));
        assert_eq!(r.schedule(&conn(0), &sfs), Decision::SendMany(vec![2, 0, 1]));
    }

    #[test]
    fn full_or_unusable_subflows_get_no_copy() {
        let mut sfs = [sf(0, 10, 10, 10), sf(1, 50, 10, 0), sf(2, 30, 10, 0)];
        sfs[2].pf = true;
        assert_eq!(Redundant::new().schedule(&conn(0), &sfs), Decision::Send(1));
        sfs[1].in_flight = 10;
        assert_eq!(Redundant::new().schedule(&conn(0), &sfs), Decision::Wait);
    }

    #[test]
    fn backups_take_never_sent_data_only_when_no_regular_subflow_is_valid() {
        let mut b1 = sf(1, 5, 10, 0);
        b1.backup = true;
        let mut b2 = sf(2, 6, 10, 0);
        b2.backup = true;
        // A regular subflow that is only cwnd-limited is still valid: wait, no backup.
        let sfs = [sf(0, 50, 10, 10), b1.clone(), b2.clone()];
        assert_eq!(Redundant::new().schedule(&conn(0), &sfs), Decision::Wait);
        // With room it is the only target.
        let sfs = [sf(0, 50, 10, 0), b1.clone(), b2.clone()];
        assert_eq!(Redundant::new().schedule(&conn(0), &sfs), Decision::Send(0));
        // Regular never usable: one backup per packet, round robin among backups.
        let mut dead = sf(0, 50, 10, 0);
        dead.established = false;
        let sfs = [dead, b1, b2];
        let mut r = Redundant::new();
        assert_eq!(r.schedule(&conn(0), &sfs), Decision::Send(1));
        assert_eq!(r.schedule(&conn(0), &sfs), Decision::Send(2));
        assert_eq!(r.schedule(&conn(0), &sfs), Decision::Send(1));
    }

    #[test]
    fn copies_of_sent_data_only_on_unused_regular_subflows() {
        let mut b = sf(2, 5, 10, 0);
        b.backup = true;
        let sfs = [sf(0, 10, 10, 0), sf(1, 50, 10, 0), b, sf(3, 20, 10, 0)];
        let mut c = conn(0);
        c.segment.sent_on = 0b0001;
        assert_eq!(Redundant::new().schedule(&c, &sfs), Decision::SendMany(vec![1, 3]));
        c.segment.sent_on = 0b1011;
        assert_eq!(Redundant::new().schedule(&c, &sfs), Decision::Wait);
    }

    #[test]
    fn reinjections_are_served_by_minrtt_once() {
        let sfs = [sf(0, 10, 10, 0), sf(1, 50, 10, 0), sf(2, 30, 10, 0)];
        assert_eq!(Redundant::new().schedule(&reinject(0, 0b001), &sfs), Decision::Send(2));
        assert!(!Redundant::new().rcvbuf_optimisation());
    }
}
