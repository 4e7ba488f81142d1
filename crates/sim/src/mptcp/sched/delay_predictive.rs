//! Delay-predictive scheduling (P1: "Delay-predictive packet scheduling and receiver-based loss
//! recovery for MPTCP on heterogeneous paths", J-KICS 2012, §3.1, eq. (1)–(2), Fig. 5;
//! papers.md §P1).
//!
//! The paper predicts the arrival of the n-th packet queued on path i as
//! `T_{i,n} = (n − 1)·D_t + RTT_i/2` (D_t: transmission delay of one packet on that path), merges
//! all paths' predictions in ascending order and assigns the next packets, in connection order, to
//! the paths in that order; each path's send buffer is FIFO. It may leave cwnd unused on purpose.
//!
//! Incremental form (the core asks for one segment at a time, with the queues as they are now):
//! the next segment goes to the path where it is predicted to arrive first,
//! `T_i = (n_i − 1)·D_i + srtt_i/2`, where `n_i − 1` counts the packets that must leave path i
//! before it: `queued_i + max(0, in_flight_i + 1 − cwnd_i)` — everything already in its send
//! queue, plus, if the window is full, the acknowledgements it must wait for (one per packet the
//! window is over; with the ACK clock running at the delivery rate each costs about one `D_i`).
//! Packets in flight within the window are on the wire and do not delay it. Assigning segments one
//! by one this way produces exactly the paper's merged order (Fig. 5).
//!
//! Exact rule:
//! - candidates: not never-usable, not in Loss (no meaningful prediction), and regular subflows —
//!   backups only when every regular subflow is never-usable (as minRTT);
//! - for a reinjected segment (`sent_on != 0`), candidates it was not sent on yet are preferred;
//! - `D_i` = [`SubflowView::tx_time_per_segment`], or `srtt_i / cwnd_i` when that is 0; a path with
//!   no RTT sample yet predicts `T_i = n_i − 1` times its D (0), so it is tried first;
//! - pick the lowest `T_i` (ties: lower srtt, then lower position);
//! - if the pick's window is open → send; if it is full ([`SubflowView::temp_unavailable`]), the
//!   segment is still queued on it (the paper's FIFO send buffer: a slower path's free window
//!   stays unused) as long as the pick has the lowest one-way delay of the eligible paths and
//!   its predicted arrival is within the horizon — the latest `one-way delay + D` of the
//!   eligible paths, when a fresh packet on the slowest path would arrive; otherwise, or before
//!   the pick has an RTT sample → **wait** at connection level. With `queue_on_slower_paths`
//!   a full slower path is queued on too (the paper's rule taken literally).
//!
//! Deviations: one-way delay = srtt/2 (the paper's assumption); the paper's `D_t` is not defined
//! further, so it is the view's delivery-rate serialisation time. The paper assigns every packet
//! at once; the horizon bounds how far ahead a path is committed (the paper's send buffers have
//! some size; ours is one slowest-path delay), so a path whose RTT changes is not left with a
//! long queue planned for the old one. Only the fastest path is queued on beyond its window
//! (docs/p1.md): a segment queued behind a slower, cwnd-limited path's full window
//! leaves when that path's ACK clock lets it, which the prediction `(n − 1)·D` assumes steady;
//! a loss or a penalisation halves that window and the segment arrives up to an RTT late,
//! while everything sent on the fast path meanwhile waits for it in the receive buffer. In P1's
//! scenario 1 with 1 % loss on path 2 this made delay-predictive hold more than minRTT from
//! 10 Mbit/s up (the `ofo_behind_late_original_mean_bytes` of path 2 was 13–27 packets against
//! minRTT's 1–3 at 10 and 50 Mbit/s; `reproduce p1`'s diagnosis table). Waiting instead of queueing on a full path (this
//! scheduler's first version) starved a fast path whose RTT estimate was inflated: it carried only
//! lone packets, whose delayed ACKs inflated its RTT further. The receiver-based recovery of
//! P1 §3.2 is not a scheduler concern (the core serves each request on the subflow it came
//! from, ahead of the new data queued there).
//! [`Scheduler::rcvbuf_optimisation`]: the `rcvbuf_optimisation` parameter, default true. The
//! paper replaces only the scheduler; the MPTCP of its time kept Linux's opportunistic
//! retransmission and penalisation below it, at connection level. They act only when the send
//! window blocks, which delay prediction cannot prevent when the slow path loses packets: with
//! them off, P1's scenario 1 (path 2 at 1–2 Mbit/s, 1 % loss) loses 5–7 % against minRTT to
//! window stalls of 0.1–0.4 s after each path-2 timeout.
use super::{sent_on, ConnView, Decision, Scheduler, SubflowView};
use crate::core::Time;

#[derive(Clone, Debug)]
pub struct DelayPredictive {
    rcvbuf_optimisation: bool,
    queue_on_slower_paths: bool,
}

impl DelayPredictive {
    /// `rcvbuf_optimisation`: whether the connection level may apply Linux's receive-buffer
    /// optimisation under this scheduler (the `rcvbuf_optimisation` parameter, default true).
    pub fn new(rcvbuf_optimisation: bool) -> Self {
        DelayPredictive {
            rcvbuf_optimisation,
            queue_on_slower_paths: false,
        }
    }

    /// Whether a full path slower than the fastest eligible one may still be given segments
    /// (queued behind its window) — the paper's FIFO rule taken literally. Default false.
    pub fn queue_on_slower_paths(mut self, yes: bool) -> Self {
        self.queue_on_slower_paths = yes;
        self
    }
}

/// Per-packet transmission delay `D_i` (ns).
pub fn d_t(s: &SubflowView) -> Time {
    if s.tx_time_per_segment > 0 {
        s.tx_time_per_segment
    } else {
        s.srtt / s.cwnd.max(1) as Time
    }
}

/// Packets that must leave the path before a new one (`n − 1`).
pub fn backlog(s: &SubflowView) -> u64 {
    s.queued as u64 + (s.in_flight as u64 + 1).saturating_sub(s.cwnd as u64)
}

/// Predicted arrival time (ns from now) of a segment queued on `s` now.
pub fn predicted_arrival(s: &SubflowView) -> Time {
    backlog(s).saturating_mul(d_t(s)).saturating_add(one_way_delay(s))
}

/// `RTT_i / 2`. A path with nothing in flight or queued has drained the queue its last smoothed
/// RTT measured; that stale estimate would never be refreshed while it kept the path unused, so an
/// idle path uses its minimum smoothed RTT (a choice: the paper does not say how RTT is measured).
fn one_way_delay(s: &SubflowView) -> Time {
    if s.in_flight == 0 && s.queued == 0 && s.min_srtt > 0 {
        s.min_srtt / 2
    } else {
        s.srtt / 2
    }
}

impl Scheduler for DelayPredictive {
    fn event_views(&self) -> bool {
        false
    }

    fn name(&self) -> String {
        "delay-predictive".into()
    }

    fn rcvbuf_optimisation(&self) -> bool {
        self.rcvbuf_optimisation
    }

    fn schedule(&mut self, conn: &ConnView, subflows: &[SubflowView]) -> Decision {
        let regular_usable = subflows.iter().any(|s| !s.backup && !s.never_usable());
        let eligible = |s: &&SubflowView| !s.never_usable() && !s.in_loss && s.backup != regular_usable;
        let mask = conn.segment.sent_on;
        let prefer_unused = subflows.iter().filter(eligible).any(|s| !sent_on(mask, s.id));
        let pick = subflows
            .iter()
            .enumerate()
            .filter(|(_, s)| eligible(s) && !(prefer_unused && sent_on(mask, s.id)))
            .min_by_key(|(k, s)| (predicted_arrival(s), s.srtt, *k))
            .map(|(_, s)| s);
        // How far ahead a full path may be given data: until its queue would deliver no earlier
        // than a fresh packet on the slowest eligible path.
        let horizon = subflows
            .iter()
            .filter(eligible)
            .map(|s| one_way_delay(s).saturating_add(d_t(s)))
            .max()
            .unwrap_or(0);
        let fastest = subflows.iter().filter(eligible).map(one_way_delay).min().unwrap_or(0);
        match pick {
            Some(s) if !s.temp_unavailable() => Decision::Send(s.id),
            // Without an RTT sample there is no prediction to queue by (the horizon would be 0
            // and everything would go to the first path at start-up).
            Some(s)
                if s.srtt > 0
                    && horizon > 0
                    && predicted_arrival(s) <= horizon
                    && (self.queue_on_slower_paths || one_way_delay(s) <= fastest) =>
            {
                Decision::Send(s.id)
            }
            _ => Decision::Wait,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    const US: Time = 1_000;

    /// Path 1 (id 0): RTT 6 ms, D_t 1 ms; path 2 (id 1): RTT 11 ms, D_t 2 ms; big windows.
    /// T_1 = 3, 4, 5, 6, 7 … ms; T_2 = 5.5, 7.5 … ms.
    fn fig5_paths() -> [SubflowView; 2] {
        let mut p1 = sf(0, 6, 100, 0);
        p1.tx_time_per_segment = MS;
        let mut p2 = sf(1, 11, 100, 0);
        p2.tx_time_per_segment = 2 * MS;
        [p1, p2]
    }

    fn assign(sfs: &mut [SubflowView], n: usize) -> Vec<usize> {
        let mut sched = DelayPredictive::new(true);
        (0..n)
            .map(|_| match sched.schedule(&conn(0), sfs) {
                Decision::Send(i) => {
                    sfs[i].queued += 1;
                    i + 1 // paths are numbered from 1 in the paper
                }
                d => panic!("unexpected {d:?}"),
            })
            .collect()
    }

    #[test]
    fn reproduces_fig5_packets_1_to_3_on_path_1_then_4_on_path_2_then_5_on_path_1() {
        let mut sfs = fig5_paths();
        assert_eq!(assign(&mut sfs, 5), vec![1, 1, 1, 2, 1]);
        // And continues in merged order: T_1 = 7 (6th), T_2 = 7.5 vs T_1 = 8 → 7th on path 2.
        assert_eq!(assign(&mut sfs, 2), vec![1, 2]);
    }

    #[test]
    fn leaves_cwnd_unused_on_the_slower_path() {
        // Path 2 has plenty of room, but path 1's queue is short enough to win.
        let mut sfs = fig5_paths();
        sfs[0].queued = 2; // T_1 = 5 ms < T_2 = 5.5 ms
        assert_eq!(DelayPredictive::new(true).schedule(&conn(0), &sfs), Decision::Send(0));
    }

    #[test]
    fn queues_ahead_on_a_full_path_up_to_the_slowest_paths_delay_then_waits() {
        // Path 1 full (in_flight = cwnd): backlog 1 → T_1 = 0.1 + 1 ms; path 2 T = 10 ms. The
        // horizon is the slowest eligible path's fresh packet: 10 + 0.1 ms.
        let mut p1 = sf(0, 2, 10, 10);
        p1.tx_time_per_segment = 100 * US;
        let mut p2 = sf(1, 20, 10, 0);
        p2.tx_time_per_segment = 100 * US;
        assert_eq!(predicted_arrival(&p1), 1_100 * US);
        // The paper's FIFO send buffer: the segment is queued on path 1 although its window is
        // full, and path 2's free window stays unused.
        assert_eq!(
            DelayPredictive::new(true).schedule(&conn(0), &[p1.clone(), p2.clone()]),
            Decision::Send(0)
        );
        // 100 queued on path 1: T_1 = 101·0.1 + 1 = 11.1 ms > T_2 = 10 ms → path 2.
        p1.queued = 100;
        assert_eq!(predicted_arrival(&p1), 11_100 * US);
        assert_eq!(
            DelayPredictive::new(true).schedule(&conn(0), &[p1.clone(), p2.clone()]),
            Decision::Send(1)
        );
        // Path 2 full too, with 5 queued: T_2 = 6·0.1 + 10 = 10.6 ms, the earliest, but beyond
        // the horizon → wait (nothing is committed to a path that far ahead).
        p2.in_flight = 10;
        p2.queued = 5;
        assert_eq!(predicted_arrival(&p2), 10_600 * US);
        assert_eq!(
            DelayPredictive::new(true).schedule(&conn(0), &[p1.clone(), p2.clone()]),
            Decision::Wait
        );
        // Exactly at the horizon, T_2 = 0.1 + 10 ms: path 2 is not the fastest path, so nothing
        // is queued behind its full window (a shrinking window would make it late) — unless the
        // paper's FIFO rule is taken literally.
        p2.queued = 0;
        assert_eq!(
            DelayPredictive::new(true).schedule(&conn(0), &[p1.clone(), p2.clone()]),
            Decision::Wait
        );
        assert_eq!(
            DelayPredictive::new(true)
                .queue_on_slower_paths(true)
                .schedule(&conn(0), &[p1, p2]),
            Decision::Send(1)
        );
    }

    #[test]
    fn a_full_slower_path_is_not_queued_on_even_when_it_predicts_first() {
        // Path 1 (2 ms) full with a long queue: T_1 = 201·0.1 + 1 = 21.1 ms; path 2 (20 ms RTT)
        // full, nothing queued: T_2 = 1·1 + 10 = 11 ms, the earliest and within the horizon.
        let mut p1 = sf(0, 2, 10, 10);
        p1.tx_time_per_segment = 100 * US;
        p1.queued = 200;
        let mut p2 = sf(1, 20, 10, 10);
        p2.tx_time_per_segment = MS;
        assert!(predicted_arrival(&p2) < predicted_arrival(&p1));
        assert_eq!(
            DelayPredictive::new(true).schedule(&conn(0), &[p1.clone(), p2.clone()]),
            Decision::Wait
        );
        assert_eq!(
            DelayPredictive::new(true)
                .queue_on_slower_paths(true)
                .schedule(&conn(0), &[p1.clone(), p2.clone()]),
            Decision::Send(1)
        );
        // With room in its window it gets the segment either way (the window is not full).
        p2.in_flight = 5;
        assert_eq!(
            DelayPredictive::new(true).schedule(&conn(0), &[p1, p2]),
            Decision::Send(1)
        );
    }

    #[test]
    fn nothing_is_queued_ahead_before_an_rtt_sample() {
        // Start-up: no RTT samples, the first path's initial window is full. Queueing ahead would
        // commit the whole receive window to it; the segment waits instead.
        let mut p0 = sf(0, 0, 10, 10);
        p0.srtt = 0;
        let mut p1 = sf(1, 0, 10, 0);
        p1.srtt = 0;
        p1.established = false;
        assert_eq!(DelayPredictive::new(true).schedule(&conn(0), &[p0, p1]), Decision::Wait);
    }

    #[test]
    fn falls_back_to_srtt_over_cwnd() {
        // D = 20 ms / 10 = 2 ms; 3 queued → T = 6 + 10 = 16 ms.
        let mut p = sf(0, 20, 10, 0);
        p.queued = 3;
        assert_eq!(d_t(&p), 2 * MS);
        assert_eq!(predicted_arrival(&p), 16 * MS);
        // vs a 30 ms path with D 1 ms: 15 ms → it wins.
        let mut q = sf(1, 30, 10, 0);
        q.tx_time_per_segment = MS;
        assert_eq!(
            DelayPredictive::new(true).schedule(&conn(0), &[p, q]),
            Decision::Send(1)
        );
    }

    #[test]
    fn respects_never_usable_loss_and_backup() {
        let [mut p1, p2] = fig5_paths();
        let mut b = sf(2, 1, 100, 0);
        b.backup = true;
        // The backup is fastest but a regular subflow is usable.
        assert_eq!(
            DelayPredictive::new(true).schedule(&conn(0), &[p1.clone(), p2.clone(), b.clone()]),
            Decision::Send(0)
        );
        // Path 1 in Loss: skip it (path 2), not the backup.
        p1.in_loss = true;
        assert_eq!(
            DelayPredictive::new(true).schedule(&conn(0), &[p1.clone(), p2.clone(), b.clone()]),
            Decision::Send(1)
        );
        // Regulars never usable: the backup.
        let mut p2_dead = p2.clone();
        p2_dead.pf = true;
        p1.in_loss = false;
        p1.established = false;
        assert_eq!(
            DelayPredictive::new(true).schedule(&conn(0), &[p1.clone(), p2_dead.clone(), b]),
            Decision::Send(2)
        );
        assert_eq!(
            DelayPredictive::new(true).schedule(&conn(0), &[p1, p2_dead]),
            Decision::Wait
        );
    }

    #[test]
    fn reinjection_prefers_paths_not_used_yet() {
        let sfs = fig5_paths();
        assert_eq!(
            DelayPredictive::new(true).schedule(&reinject(0, 0b01), &sfs),
            Decision::Send(1)
        );
        assert_eq!(
            DelayPredictive::new(true).schedule(&reinject(0, 0b11), &sfs),
            Decision::Send(0)
        );
        assert!(DelayPredictive::new(true).rcvbuf_optimisation());
        assert!(!DelayPredictive::new(false).rcvbuf_optimisation());
    }

    #[test]
    fn an_idle_path_is_judged_by_its_minimum_rtt_not_a_stale_srtt() {
        // Path 0 last measured 160 ms (its queue has drained since: nothing in flight or queued),
        // path 1 is busy at 10 ms srtt with 40 segments queued at 1 ms each → T_1 = 45 ms.
        let mut p0 = sf(0, 160, 10, 0);
        p0.min_srtt = 8 * MS;
        let mut p1 = sf(1, 10, 100, 50);
        p1.queued = 40;
        p1.tx_time_per_segment = MS;
        assert_eq!(predicted_arrival(&p0), 4 * MS);
        assert_eq!(
            DelayPredictive::new(true).schedule(&conn(0), &[p0.clone(), p1.clone()]),
            Decision::Send(0)
        );
        // Busy, the same path is judged by its current srtt.
        p0.in_flight = 1;
        assert_eq!(predicted_arrival(&p0), 80 * MS);
        assert_eq!(
            DelayPredictive::new(true).schedule(&conn(0), &[p0, p1]),
            Decision::Send(1)
        );
    }
}
