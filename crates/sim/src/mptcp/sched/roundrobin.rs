//! Round robin.
//!
//! Source: multipath-tcp/mptcp `net/mptcp/mptcp_rr.c` (`mptcp_rr_next_segment`,
//! `rr_get_available_subflow`, `mptcp_rr_is_available`); algorithms.md §Round robin.
//!
//! Rule for new data: walk the subflows in order, considering those that are usable (established,
//! not `pf`, not in Loss) and — when `cwnd_limited` — have cwnd room. Each keeps a quota of
//! segments taken in the current round:
//! - the first considered subflow with `0 < quota < num_segments` continues its burst;
//! - otherwise the *last* considered subflow with `quota == 0` is chosen (Linux overwrites its
//!   pick while walking);
//! - if every considered subflow has a full quota, their quotas are reset to 0 and the walk
//!   restarts.
//!
//! The chosen subflow must then pass the full test *with* cwnd: if it fails (only possible with
//! `cwnd_limited = false`) the scheduler waits for that subflow, otherwise its quota grows by one.
//! Backup flags are ignored. Reinjected segments go to the last usable subflow (with cwnd room)
//! not yet used for them, else the last usable one.
//!
//! Deviations: the quota grows by one per decision (Linux adds `ceil(len/mss)`; our segments are
//! at most one MSS). A quota above `num_segments` cannot occur here; Linux would never reset it.
//! One segment is pushed per decision (Linux hands the subflow up to `split·mss` bytes at once,
//! the same segments in the same order).
use super::{sent_on, ConnView, Decision, Scheduler, SubflowView};

#[derive(Clone, Debug)]
pub struct RoundRobin {
    num_segments: u32,
    cwnd_limited: bool,
    /// Per-subflow quota (segments taken in the current round), by subflow id.
    quota: Vec<u32>,
}

impl RoundRobin {
    /// `num_segments` ≥ 1 (Linux default 1), `cwnd_limited` (Linux default true).
    pub fn new(num_segments: u32, cwnd_limited: bool) -> Self {
        RoundRobin {
            num_segments: num_segments.max(1),
            cwnd_limited,
            quota: Vec::new(),
        }
    }

    fn quota(&mut self, id: usize) -> &mut u32 {
        if self.quota.len() <= id {
            self.quota.resize(id + 1, 0);
        }
        &mut self.quota[id]
    }
}

impl Default for RoundRobin {
    fn default() -> Self {
        Self::new(1, true)
    }
}

/// `mptcp_rr_is_available`: usable, not in Loss, and (if `cwnd_test`) room in the cwnd.
fn rr_available(s: &SubflowView, cwnd_test: bool) -> bool {
    if cwnd_test {
        s.available()
    } else {
        !s.never_usable() && !s.in_loss
    }
}

impl RoundRobin {
    fn reinjection(&self, conn: &ConnView, subflows: &[SubflowView]) -> Decision {
        let mut best = None;
        let mut used = None;
        for s in subflows.iter().filter(|s| s.available()) {
            if sent_on(conn.segment.sent_on, s.id) {
                used = Some(s.id);
            } else {
                best = Some(s.id);
            }
        }
        best.or(used).map_or(Decision::Wait, Decision::Send)
    }
}

impl Scheduler for RoundRobin {
    fn view_rates(&self) -> bool {
        false
    }

    fn event_views(&self) -> bool {
        false
    }

    fn name(&self) -> String {
        "roundrobin".into()
    }

    fn schedule(&mut self, conn: &ConnView, subflows: &[SubflowView]) -> Decision {
        if conn.segment.reinjection {
            return self.reinjection(conn, subflows);
        }
        let n = self.num_segments;
        let mut chosen = None;
        for _round in 0..2 {
            let (mut considered, mut full) = (0, 0);
            chosen = None;
            for (k, s) in subflows.iter().enumerate() {
                if !rr_available(s, self.cwnd_limited) {
                    continue;
                }
                considered += 1;
                let q = *self.quota(s.id);
                if q > 0 && q < n {
                    chosen = Some(k);
                    break;
                }
                if q == 0 {
                    chosen = Some(k);
                }
                if q >= n {
                    full += 1;
                }
            }
            let all_full = considered > 0 && considered == full;
            if !all_full {
                break;
            }
            // Start a new round: reset the quotas of the considered subflows and walk again.
            let cwnd_limited = self.cwnd_limited;
            for s in subflows.iter().filter(|s| rr_available(s, cwnd_limited)) {
                *self.quota(s.id) = 0;
            }
        }
        let Some(k) = chosen else { return Decision::Wait };
        let s = &subflows[k];
        if !s.available() {
            return Decision::Wait;
        }
        *self.quota(s.id) += 1;
        Decision::Send(s.id)
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    /// Runs `steps` decisions, pushing each sent segment into the chosen subflow's queue.
    fn sequence(rr: &mut RoundRobin, sfs: &mut [SubflowView], steps: usize) -> Vec<Decision> {
        (0..steps)
            .map(|_| {
                let d = rr.schedule(&conn(0), sfs);
                if let Decision::Send(i) = d {
                    sfs[i].queued += 1;
                }
                d
            })
            .collect()
    }

    fn ids(ds: &[Decision]) -> Vec<i64> {
        ds.iter()
            .map(|d| if let Decision::Send(i) = d { *i as i64 } else { -1 })
            .collect()
    }

    #[test]
    fn one_segment_per_turn_with_quota_reset() {
        let mut sfs = [sf(0, 10, 100, 0), sf(1, 50, 100, 0), sf(2, 30, 100, 0)];
        let mut rr = RoundRobin::default();
        // Quota 0 everywhere: the last one; then the remaining zero-quota ones, last first;
        // then everyone is full → reset → again from the last.
        assert_eq!(ids(&sequence(&mut rr, &mut sfs, 7)), vec![2, 1, 0, 2, 1, 0, 2]);
    }

    #[test]
    fn num_segments_gives_bursts() {
        let mut sfs = [sf(0, 10, 100, 0), sf(1, 50, 100, 0)];
        let mut rr = RoundRobin::new(3, true);
        assert_eq!(ids(&sequence(&mut rr, &mut sfs, 9)), vec![1, 1, 1, 0, 0, 0, 1, 1, 1]);
    }

    #[test]
    fn backup_flags_are_ignored() {
        let mut sfs = [sf(0, 10, 100, 0), sf(1, 50, 100, 0)];
        sfs[1].backup = true;
        let mut rr = RoundRobin::default();
        assert_eq!(ids(&sequence(&mut rr, &mut sfs, 4)), vec![1, 0, 1, 0]);
    }

    #[test]
    fn cwnd_limited_skips_full_subflows() {
        // Subflow 1 has room for 1 segment.
        let mut sfs = [sf(0, 10, 100, 0), sf(1, 50, 2, 1)];
        let mut rr = RoundRobin::new(1, true);
        // 1 takes one; then it is full and is not considered, so 0 alone keeps going
        // (all considered full → reset → 0 again).
        assert_eq!(ids(&sequence(&mut rr, &mut sfs, 4)), vec![1, 0, 0, 0]);
    }

    #[test]
    fn not_cwnd_limited_waits_for_the_subflow_whose_turn_it_is() {
        let mut sfs = [sf(0, 10, 100, 0), sf(1, 50, 2, 1)];
        let mut rr = RoundRobin::new(1, false);
        assert_eq!(ids(&sequence(&mut rr, &mut sfs, 4)), vec![1, 0, -1, -1]);
        // Its window opens (an ACK arrived): it takes the segment, then 0's turn again.
        sfs[1].queued = 0;
        sfs[1].in_flight = 1;
        assert_eq!(ids(&sequence(&mut rr, &mut sfs, 2)), vec![1, 0]);
    }

    #[test]
    fn unusable_subflows_are_never_considered() {
        let mut sfs = [sf(0, 10, 100, 0), sf(1, 50, 100, 0), sf(2, 50, 100, 0)];
        sfs[1].pf = true;
        sfs[2].in_loss = true;
        let mut rr = RoundRobin::new(1, false);
        assert_eq!(ids(&sequence(&mut rr, &mut sfs, 3)), vec![0, 0, 0]);
        sfs[0].established = false;
        assert_eq!(ids(&sequence(&mut rr, &mut sfs, 1)), vec![-1]);
    }

    #[test]
    fn reinjection_prefers_last_unused_available_subflow() {
        let sfs = [sf(0, 10, 100, 0), sf(1, 50, 100, 0), sf(2, 30, 100, 0)];
        let mut rr = RoundRobin::default();
        assert_eq!(rr.schedule(&reinject(0, 0b100), &sfs), Decision::Send(1));
        assert_eq!(rr.schedule(&reinject(0, 0b111), &sfs), Decision::Send(2));
        let full = [sf(0, 10, 1, 1)];
        assert_eq!(rr.schedule(&reinject(0, 0), &full), Decision::Wait);
        // Reinjections do not touch the quotas.
        assert!(rr.quota.iter().all(|&q| q == 0));
    }
}
