//! Upstream Linux's default MPTCP scheduler (kernel 6.x), the one real deployments run today.
//!
//! Source: Linux `net/mptcp/protocol.c`, `mptcp_subflow_get_send` (with `mptcp_subflow_active`
//! and the 2024 change that treats `backup || request_bkup` as backup); algorithms.md §Upstream.
//!
//! Rule: for every *active* subflow (established, not stale, not `pf`),
//! `linger = wmem / avg_pacing_rate`; keep the lowest linger per class (regular, backup; first
//! one on ties); use the regular pick, or the backup pick only if no regular subflow is active.
//! There is no cwnd test: the pick gets a burst of up to 64 KiB ([`Scheduler::burst_bytes`]) and
//! the data waits in its queue. After a pick, its `avg_pacing_rate` moves towards the current
//! pacing rate weighted by the burst: `avg = (avg·wmem + rate·burst)/(burst + wmem)` with
//! `burst = min(64 KiB, send_window_left)` (no update when the burst is 0).
//!
//! Choices and deviations:
//! - `wmem` (Linux `sk_wmem_queued`) counts every byte the subflow still holds: queued *and*
//!   sent-but-unacknowledged (`queued_bytes + unacked_bytes`), without skb overhead (truesize).
//!   A linger over `queued_bytes` alone would tie at 0 whenever all queues are empty.
//! - `avg_pacing_rate` starts from [`SubflowView::pacing_rate_bytes_per_s`] (the view's instant
//!   rate) the first time a subflow is seen with a non-zero rate; a subflow whose rate is 0 is
//!   skipped (it still counts as active, as in Linux).
//! - `pf` (potentially failed: its RTO fired, nothing heard since) subflows are excluded, as by
//!   every scheduler here; upstream has no `pf` and only drops a subflow after it is marked stale.
//! - The send-buffer test on the pick (`!sk_stream_memory_free(ssk)` → no subflow this round):
//!   the subflow's send buffer is what `tcp_sndbuf_expand` (net/ipv4/tcp_input.c) grows it to,
//!   `2 · max(cwnd, 10) · per_mss`, capped by `tcp_wmem[2]` = 4 MiB. We count payload bytes
//!   (`wmem` below) against `2 · max(cwnd, 10) · mss`: Linux counts skb truesize on both sides,
//!   so the per-segment overhead roughly cancels. Without this bound every byte the
//!   connection-level window allows would be queued on the first subflow before the others
//!   join (seconds of head-of-line blocking that the kernel does not show).
//! - Reinjected segments are placed by the same rule: upstream re-sends a stale or closed
//!   subflow's pending data through `mptcp_subflow_get_send`; the MPTCP-level retransmission
//!   timer's `mptcp_subflow_get_retrans` (idle subflows only) is not modelled.
use super::{ConnView, Decision, Scheduler, SubflowView};

/// Upstream's `MPTCP_SEND_BURST_SIZE`.
pub const BURST_BYTES: u64 = 65_536;

#[derive(Clone, Debug, Default)]
pub struct LinuxDefault {
    /// `subflow->avg_pacing_rate` (bytes/s) by subflow id; 0 = not initialised.
    avg_pacing: Vec<f64>,
}

impl LinuxDefault {
    pub fn new() -> Self {
        Self::default()
    }

    fn avg(&mut self, id: usize) -> &mut f64 {
        if self.avg_pacing.len() <= id {
            self.avg_pacing.resize(id + 1, 0.0);
        }
        &mut self.avg_pacing[id]
    }
}

fn active(s: &SubflowView) -> bool {
    s.established && !s.stale && !s.pf
}

fn wmem(s: &SubflowView) -> u64 {
    s.queued_bytes + s.unacked_bytes
}

/// `tcp_wmem[2]`, the send buffer's upper bound (Linux default 4 MiB).
pub const SNDBUF_MAX_BYTES: u64 = 4 << 20;

/// The subflow's send buffer as `tcp_sndbuf_expand` sizes it, in payload bytes.
fn sndbuf(s: &SubflowView) -> u64 {
    (2 * u64::from(s.cwnd.max(10)) * u64::from(s.mss)).min(SNDBUF_MAX_BYTES)
}

impl Scheduler for LinuxDefault {
    fn event_views(&self) -> bool {
        false
    }

    fn name(&self) -> String {
        "linux-default".into()
    }

    fn schedule(&mut self, conn: &ConnView, subflows: &[SubflowView]) -> Decision {
        // [regular, backup]: (linger, index)
        let mut best: [Option<(f64, usize)>; 2] = [None, None];
        let mut nr_active = 0;
        for (k, s) in subflows.iter().enumerate() {
            if !active(s) {
                continue;
            }
            nr_active += usize::from(!s.backup);
            let avg = self.avg(s.id);
            if *avg <= 0.0 {
                *avg = s.pacing_rate_bytes_per_s;
            }
            let pace = *avg;
            if pace.is_nan() || pace <= 0.0 {
                continue;
            }
            let linger = wmem(s) as f64 / pace;
            let class = usize::from(s.backup);
            if best[class].is_none_or(|(l, _)| linger < l) {
                best[class] = Some((linger, k));
            }
        }
        let pick = if nr_active == 0 { best[1] } else { best[0] };
        let Some((_, k)) = pick else { return Decision::Wait };
        let s = &subflows[k];
        if wmem(s) >= sndbuf(s) {
            return Decision::Wait;
        }
        let burst = BURST_BYTES.min(conn.send_window_left);
        if burst > 0 {
            let w = wmem(s) as f64;
            let avg = self.avg(s.id);
            *avg = (*avg * w + s.pacing_rate_bytes_per_s * burst as f64) / (burst as f64 + w);
        }
        Decision::Send(s.id)
    }

    fn burst_bytes(&self) -> u64 {
        BURST_BYTES
    }
}

#[cfg(test)]
mod tests {
    use super::super::testutil::*;
    use super::*;

    /// A subflow whose send buffer (2·cwnd·mss) never limits these tests.
    fn with(id: usize, queued: u64, unacked: u64, rate: f64) -> SubflowView {
        let mut s = sf(id, 20, 10_000, 0);
        s.queued_bytes = queued;
        s.unacked_bytes = unacked;
        s.pacing_rate_bytes_per_s = rate;
        s
    }

    #[test]
    fn picks_lowest_linger_and_ignores_cwnd() {
        // 0: 100 kB at 1 MB/s = 100 ms; 1: 30 kB at 1 MB/s = 30 ms; 2: 50 kB at 10 MB/s = 5 ms
        // but its cwnd is full — no cwnd test, so it still wins.
        let mut full = with(2, 20_000, 30_000, 10e6);
        full.in_flight = full.cwnd;
        full.queued = 14;
        let sfs = [with(0, 100_000, 0, 1e6), with(1, 0, 30_000, 1e6), full];
        assert_eq!(LinuxDefault::new().schedule(&conn(0), &sfs), Decision::Send(2));
        // Without it, the 30 ms one (unacked bytes count as well as queued ones).
        assert_eq!(LinuxDefault::new().schedule(&conn(0), &sfs[..2]), Decision::Send(1));
    }

    #[test]
    fn a_full_send_buffer_on_the_pick_means_wait() {
        // cwnd 20 segments of 1448 B: the buffer holds 2·20·1448 = 57 920 payload bytes.
        let mut s0 = with(0, 0, 0, 1e6);
        s0.cwnd = 20;
        s0.mss = 1448;
        s0.queued_bytes = 57_920 - 1448 * 20;
        s0.unacked_bytes = 1448 * 20 - 1;
        assert_eq!(LinuxDefault::new().schedule(&conn(0), &[s0.clone()]), Decision::Send(0));
        s0.unacked_bytes += 1;
        assert_eq!(LinuxDefault::new().schedule(&conn(0), &[s0.clone()]), Decision::Wait);
        // The other subflow has room but a longer linger: upstream still waits (it only tests
        // the pick), until the pick drains.
        let mut s1 = with(1, 0, 50_000, 0.1e6);
        s1.cwnd = 100;
        assert_eq!(LinuxDefault::new().schedule(&conn(0), &[s0, s1]), Decision::Wait);
    }

    #[test]
    fn inactive_subflows_are_skipped() {
        let mut stale = with(0, 0, 0, 1e6);
        stale.stale = true;
        let mut pf = with(1, 0, 0, 1e6);
        pf.pf = true;
        let mut closed = with(2, 0, 0, 1e6);
        closed.established = false;
        let sfs = [stale, pf, closed, with(3, 500_000, 0, 1e6)];
        assert_eq!(LinuxDefault::new().schedule(&conn(0), &sfs), Decision::Send(3));
        assert_eq!(LinuxDefault::new().schedule(&conn(0), &sfs[..3]), Decision::Wait);
    }

    #[test]
    fn backup_only_when_no_regular_is_active() {
        let mut b = with(1, 0, 0, 100e6);
        b.backup = true;
        // A regular one, however loaded, beats an idle backup.
        let sfs = [with(0, 1_000_000, 0, 1e6), b.clone()];
        assert_eq!(LinuxDefault::new().schedule(&conn(0), &sfs), Decision::Send(0));
        // Regular stale: the backup.
        let mut r = sfs[0].clone();
        r.stale = true;
        assert_eq!(
            LinuxDefault::new().schedule(&conn(0), &[r, b.clone()]),
            Decision::Send(1)
        );
        // A regular active subflow with no pacing rate yet is still "active": nothing is sent.
        let zero = with(0, 0, 0, 0.0);
        assert_eq!(LinuxDefault::new().schedule(&conn(0), &[zero, b]), Decision::Wait);
    }

    #[test]
    fn average_pacing_rate_follows_the_burst_weighted_rule() {
        let mut s = LinuxDefault::new();
        // wmem = 65536, burst = 65536: the average moves halfway to the new rate.
        let first = with(0, 65_536, 0, 1e6);
        assert_eq!(s.schedule(&conn(0), &[first]), Decision::Send(0));
        assert_eq!(s.avg_pacing[0], 1e6);
        let faster = with(0, 65_536, 0, 3e6);
        s.schedule(&conn(0), std::slice::from_ref(&faster));
        assert!((s.avg_pacing[0] - 2e6).abs() < 1e-6);
        // No window left: burst 0, no update.
        let mut c = conn(0);
        c.send_window_left = 0;
        s.schedule(&c, &[faster]);
        assert!((s.avg_pacing[0] - 2e6).abs() < 1e-6);
    }

    #[test]
    fn averaged_rate_decides_linger() {
        // Subflow 0's average is still low (1 MB/s) although its instant rate jumped to 4 MB/s:
        // 40 kB / 1 MB/s = 40 ms loses to 1's 60 kB / 2 MB/s = 30 ms.
        let mut s = LinuxDefault::new();
        let mut c = conn(0);
        c.send_window_left = 0; // keep the averages as initialised
        s.schedule(&c, &[with(0, 0, 0, 1e6)]);
        let sfs = [with(0, 40_000, 0, 4e6), with(1, 60_000, 0, 2e6)];
        assert_eq!(s.schedule(&c, &sfs), Decision::Send(1));
        assert_eq!(s.burst_bytes(), 65_536);
        assert!(!s.rcvbuf_optimisation());
    }
}
