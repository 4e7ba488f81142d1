//! LIA, the Linked Increases Algorithm of MPTCP.
//!
//! Sources: RFC 6356 §3 (algorithm) and §4 (implementation considerations); Wischik et al.,
//! "Design, implementation and evaluation of congestion control for multipath TCP", NSDI 2011;
//! Linux out-of-tree MPTCP `net/mptcp/mptcp_coupled.c` ("coupled").
//!
//! What it does:
//! - Slow start, loss response (ssthresh = max(cwnd/2, 2)) and RTO handling as Reno.
//! - Congestion avoidance on subflow i, per ACK of `acked` segments (RFC 6356 §3, windows in
//!   bytes `c_k = cwnd_k·mss_k`):
//!   `α = c_total · max_k(c_k/rtt_k²) / (Σ_k c_k/rtt_k)²` and
//!   `c_i += min(α·acked·mss_i/c_total, acked·mss_i/c_i)`.
//!   As in Linux this is done in segments with the `cwnd_cnt` counter: cwnd_i grows by one
//!   segment every `max(cwnd_i, ⌊c_total/(α·mss_i)⌋)` ACKed segments
//!   ([`Tcb::cong_avoid_ai`]), i.e. by `min(α·mss_i/c_total, 1/cwnd_i)` per segment — never
//!   faster than Reno on the same subflow.
//! - The sums run over the subflows that are active and have an RTT sample, backup subflows
//!   included (as Linux's `mptcp_for_each_sk`). With one such subflow it is Reno exactly.
//!
//! Deviations from Linux:
//! - α is recomputed from the shared table on every ACK in floating point (Linux caches a
//!   fixed-point α per connection and recomputes it in slow start, when a cwnd grows, on a
//!   state change and on RTO); `c_total/α` is computed directly as `(Σ c_k/rtt_k)²/max(c_k/rtt_k²)`.
//! - Windows are weighted by each subflow's MSS as in the RFC (Linux uses segments and the
//!   connection's MSS); with equal MSS both agree.
//! - ACKed segments are counted per segment as Linux's current `tcp_cong_avoid_ai` does (the
//!   out-of-tree code counts one per ACK), and slow-start leftovers go to congestion avoidance
//!   as in `tcp_reno_cong_avoid`.
use super::{ack_count, paths_into, publish, reno_ssthresh, slow_start_part, Coupling, Path};
use crate::core::Time;
use crate::tcp::cc::{CongestionControl, Tcb};

pub struct Lia {
    coupling: Coupling,
    index: usize,
    /// Reused buffer for the coupled subflows.
    buf: Vec<Path>,
}

impl Lia {
    pub fn new(coupling: Coupling, index: usize) -> Self {
        Lia { coupling, index, buf: Vec::new() }
    }
}

/// RFC 6356's α for the given subflows (windows in bytes).
pub fn alpha(paths: &[Path]) -> f64 {
    let bytes = |p: &Path| p.cwnd as f64 * p.mss as f64;
    let total: f64 = paths.iter().map(bytes).sum();
    let (max, sum) = best_and_sum(paths);
    total * max / (sum * sum)
}

/// `max_k(c_k/rtt_k²)` and `Σ_k c_k/rtt_k`, windows in bytes, RTTs in ns.
fn best_and_sum(paths: &[Path]) -> (f64, f64) {
    let mut max = 0f64;
    let mut sum = 0f64;
    for p in paths {
        let c = p.cwnd as f64 * p.mss as f64;
        let r = p.rtt as f64;
        max = max.max(c / (r * r));
        sum += c / r;
    }
    (max, sum)
}

/// Segments to ACK on `paths[me]` per one-segment increase: `max(cwnd_i, ⌊c_total/(α·mss_i)⌋)`.
pub fn ack_threshold(paths: &[Path], me: usize) -> u32 {
    let p = &paths[me];
    if paths.len() <= 1 {
        return p.cwnd;
    }
    let (max, sum) = best_and_sum(paths);
    // c_total/α = (Σ c_k/rtt_k)² / max(c_k/rtt_k²), in bytes.
    ack_count(sum * sum / max / p.mss as f64).max(p.cwnd)
}

impl CongestionControl for Lia {
    fn name(&self) -> &'static str {
        "lia"
    }

    fn cong_avoid(&mut self, tcb: &mut Tcb, acked: u32, _now: Time) {
        if let Some(acked) = slow_start_part(tcb, acked) {
            let me = paths_into(&self.coupling, self.index, tcb, &mut self.buf);
            let w = match me {
                Some(me) => ack_threshold(&self.buf, me),
                None => tcb.cwnd,
            };
            tcb.cong_avoid_ai(w, acked);
        }
        publish(&self.coupling, self.index, tcb);
    }

    fn ssthresh(&mut self, tcb: &Tcb, _now: Time) -> u32 {
        reno_ssthresh(tcb)
    }
}

#[cfg(test)]
mod tests {
    use super::super::fluid::{self, Fluid};
    use super::super::{new_coupling, paths, SubflowCc};
    use super::*;
    use crate::core::time::NS_PER_MS;
    use crate::tcp::cc::reno::Reno;
    use crate::tcp::cc::RecoveryStyle;

    fn entry(cwnd: u32, rtt_ms: u64, mss: u32) -> SubflowCc {
        SubflowCc {
            active: true,
            cwnd,
            ssthresh: 2,
            srtt: rtt_ms * NS_PER_MS,
            min_rtt: rtt_ms * NS_PER_MS,
            mss,
            bytes_acked: 0,
            backup: false,
            ..Default::default()
        }
    }

    fn tcb_for(e: &SubflowCc) -> Tcb {
        let mut t = Tcb::new(e.mss, e.cwnd);
        t.ssthresh = 2;
        t.srtt = e.srtt;
        t
    }

    #[test]
    fn alpha_matches_rfc_formula() {
        // cwnd 10 and 20 segments of 1000 B, RTT 100 ms and 50 ms.
        let c = new_coupling(2);
        *c.borrow_mut() = vec![entry(10, 100, 1000), entry(20, 50, 1000)];
        let (ps, me) = paths(&c, 0, &tcb_for(&c.borrow()[0]));
        assert_eq!(me, Some(0));
        // Bytes and seconds: c/rtt² = 1e6 and 8e6; Σ c/rtt = 1e5 + 4e5; total 30000.
        let rfc = 30_000.0 * 8e6 / (5e5f64 * 5e5);
        assert!((alpha(&ps) - rfc).abs() < 1e-12, "{} vs {rfc}", alpha(&ps));
        assert!((rfc - 0.96).abs() < 1e-12);
        // c_total/(α·mss) = 30000/(0.96·1000) = 31.25: both subflows +1 per 31 ACKed segments.
        assert_eq!(ack_threshold(&ps, 0), 31);
        assert_eq!(ack_threshold(&ps, 1), 31);
        // Subflow 0 with the larger window but the smaller cwnd/rtt²: c_total/(α·mss) =
        // (1e6 + 5e5)²/5e7/1000 = 45 < 100, so the Reno term binds there.
        *c.borrow_mut() = vec![entry(100, 100, 1000), entry(5, 10, 1000)];
        let (ps, _) = paths(&c, 0, &tcb_for(&c.borrow()[0]));
        assert_eq!(ack_threshold(&ps, 0), 100);
        assert_eq!(ack_threshold(&ps, 1), 45);
    }

    #[test]
    fn inactive_and_unsampled_subflows_are_left_out_backups_are_not() {
        let c = new_coupling(3);
        *c.borrow_mut() = vec![
            entry(10, 100, 1000),
            entry(20, 50, 1000),
            entry(30, 10, 1000),
        ];
        c.borrow_mut()[2].active = false;
        let t = tcb_for(&c.borrow()[0]);
        assert_eq!(paths(&c, 0, &t).0.len(), 2);
        c.borrow_mut()[1].srtt = 0;
        assert_eq!(paths(&c, 0, &t).0.len(), 1);
        c.borrow_mut()[1].srtt = 50 * NS_PER_MS;
        c.borrow_mut()[1].backup = true;
        let (ps, _) = paths(&c, 0, &t);
        assert_eq!(ps.len(), 2);
        assert_eq!(ack_threshold(&ps, 0), 31);
    }

    /// With one subflow (siblings inactive or without RTT sample) LIA is Reno, ACK by ACK.
    #[test]
    fn one_subflow_is_reno_exactly() {
        let c = new_coupling(2);
        *c.borrow_mut() = vec![entry(10, 100, 1448), entry(50, 10, 1448)];
        c.borrow_mut()[1].active = false;
        let mut lia = Lia::new(c.clone(), 0);
        let mut reno = Reno::new(RecoveryStyle::NewReno);
        let mut a = Tcb::new(1448, 10);
        a.srtt = 100 * NS_PER_MS;
        a.ssthresh = 37;
        let mut b = a.clone();
        for i in 0..5000u32 {
            let acked = 1 + i % 3;
            lia.cong_avoid(&mut a, acked, 0);
            reno.cong_avoid(&mut b, acked, 0);
            assert_eq!((a.cwnd, a.cwnd_cnt), (b.cwnd, b.cwnd_cnt), "ack {i}");
        }
        assert_eq!(lia.ssthresh(&a, 0), reno.ssthresh(&b, 0));
        assert_eq!(c.borrow()[0].cwnd, a.cwnd, "own window published");
    }

    /// Two equal subflows: α = 1/2, each grows by 1/(4w) per ACK, so together they grow by
    /// α = 1/2 segment per RTT (RFC 6356 §3: the aggregate of n equal subflows grows by 1/n per
    /// RTT; with each loss halving only one subflow this gives one TCP's window — see the fluid
    /// test below).
    #[test]
    fn two_equal_subflows_grow_by_alpha_per_rtt_together() {
        let w = 40;
        let c = new_coupling(2);
        *c.borrow_mut() = vec![entry(w, 100, 1448), entry(w, 100, 1448)];
        let (ps, _) = paths(&c, 0, &tcb_for(&c.borrow()[0]));
        assert!((alpha(&ps) - 0.5).abs() < 1e-12);
        assert_eq!(ack_threshold(&ps, 0), 4 * w);
        let mut ccs = [Lia::new(c.clone(), 0), Lia::new(c.clone(), 1)];
        let mut tcbs = [tcb_for(&c.borrow()[0]), tcb_for(&c.borrow()[1])];
        // 40 RTTs, each: every subflow gets one ACK per segment of its window, interleaved.
        let rtts = 40;
        for _ in 0..rtts {
            let n = tcbs[0].cwnd.max(tcbs[1].cwnd);
            for k in 0..n {
                for s in 0..2 {
                    if k < tcbs[s].cwnd {
                        ccs[s].cong_avoid(&mut tcbs[s], 1, 0);
                    }
                }
            }
        }
        let grown = (tcbs[0].cwnd + tcbs[1].cwnd - 2 * w) as f64;
        assert!(
            (grown / rtts as f64 - 0.5).abs() < 0.1,
            "total +{grown} in {rtts} RTTs"
        );
        assert_eq!(c.borrow()[1].cwnd, tcbs[1].cwnd);
    }

    /// Against Reno on the same subflow and the same ACKs, LIA's window is never larger,
    /// whatever the siblings' windows and RTTs.
    #[test]
    fn never_more_aggressive_than_reno() {
        let mut rng = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = |m: u64| {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            rng % m
        };
        for _ in 0..200 {
            let n = 2 + next(3) as usize;
            let c = new_coupling(n);
            for i in 0..n {
                c.borrow_mut()[i] = entry(1 + next(200) as u32, 1 + next(300), 1448);
            }
            let me = next(n as u64) as usize;
            let mut lia = Lia::new(c.clone(), me);
            let mut reno = Reno::new(RecoveryStyle::NewReno);
            let mut a = tcb_for(&c.borrow()[me]);
            let mut b = a.clone();
            for _ in 0..3000 {
                lia.cong_avoid(&mut a, 1, 0);
                reno.cong_avoid(&mut b, 1, 0);
                assert!(a.cwnd <= b.cwnd);
            }
            let (ps, pos) = paths(&c, me, &a);
            assert!(ack_threshold(&ps, pos.unwrap()) >= a.cwnd);
        }
    }

    /// Two subflows through one bottleneck with per-packet loss probability p: LIA's total
    /// window is about one Reno flow's under the same p (and two uncoupled Reno flows would
    /// get twice as much, which this check would reject).
    #[test]
    fn shared_bottleneck_total_is_one_tcp() {
        let p = 1e-3;
        let rtt = 100 * NS_PER_MS;
        let reno = fluid::single_reno(p, rtt);
        let lia = Fluid::lossy("lia", &[(rtt, p), (rtt, p)]).run_avg_total();
        let ratio = lia / reno;
        assert!((0.7..=1.3).contains(&ratio), "lia {lia:.1} reno {reno:.1}");
        let uncoupled = Fluid::uncoupled("reno", &[(rtt, p), (rtt, p)]).run_avg_total();
        assert!(
            uncoupled / reno > 1.8,
            "uncoupled {uncoupled:.1} reno {reno:.1}"
        );
    }
}
