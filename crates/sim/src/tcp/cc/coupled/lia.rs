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
//! - α is recomputed from the shared table in floating point on every ACK whose threshold can
//!   change the window (below cwnd none can, see `Tcb::cong_avoid_ai_at_least_cwnd`) (Linux caches a
//!   fixed-point α per connection and recomputes it in slow start, when a cwnd grows, on a
//!   state change and on RTO); `c_total/α` is computed directly as `(Σ c_k/rtt_k)²/max(c_k/rtt_k²)`.
//! - Windows are weighted by each subflow's MSS as in the RFC (Linux uses segments and the
//!   connection's MSS); with equal MSS both agree.
//! - ACKed segments are counted per segment as Linux's current `tcp_cong_avoid_ai` does (the
//!   out-of-tree code counts one per ACK), and slow-start leftovers go to congestion avoidance
//!   as in `tcp_reno_cong_avoid`.
use super::{ack_count, publish, reno_ssthresh, slow_start_part, Coupling, Path};
use crate::core::Time;
use crate::tcp::cc::{CongestionControl, Tcb};

pub struct Lia {
    coupling: Coupling,
    index: usize,
}

impl Lia {
    pub fn new(coupling: Coupling, index: usize) -> Self {
        Lia { coupling, index }
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
    let mut acc = (0f64, 0f64);
    for p in paths {
        add_term(&mut acc, p.cwnd, p.mss, p.rtt);
    }
    acc
}

/// Adds one subflow to `(max_k(c_k/rtt_k²), Σ_k c_k/rtt_k)`: the one place these terms are
/// computed, so [`threshold_from_table`] gives [`ack_threshold`]'s result bit for bit.
#[inline]
fn add_term(acc: &mut (f64, f64), cwnd: u32, mss: u32, rtt: Time) {
    let c = cwnd as f64 * mss as f64;
    let r = rtt as f64;
    acc.0 = acc.0.max(c / (r * r));
    acc.1 += c / r;
}

/// [`ack_threshold`] of subflow `me` over [`super::paths_into`]'s list, read straight from the coupling
/// table (it runs on every ACK in congestion avoidance: building the list cost about a third of
/// LIA's time, and more with every subflow). The same subflows in the same order, so
/// the same floating-point operations: `me` described by its own `tcb`, the others by their
/// active table entries, each only with an RTT sample; `me` without one gets Reno's threshold.
fn threshold_from_table(coupling: &Coupling, me: usize, tcb: &Tcb) -> u32 {
    if tcb.srtt == 0 {
        return tcb.cwnd;
    }
    let table = coupling.borrow();
    let mut acc = (0f64, 0f64);
    let mut n = 0usize;
    for i in 0..table.len().max(me + 1) {
        if i == me {
            add_term(&mut acc, tcb.cwnd, tcb.mss, tcb.srtt);
        } else {
            match table.get(i) {
                Some(e) if e.active && e.srtt != 0 => {
                    add_term(&mut acc, e.cwnd, if e.mss == 0 { tcb.mss } else { e.mss }, e.srtt)
                }
                _ => continue,
            }
        }
        n += 1;
    }
    if n <= 1 {
        return tcb.cwnd;
    }
    let (max, sum) = acc;
    ack_count(sum * sum / max / tcb.mss as f64).max(tcb.cwnd)
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
            // The threshold is at least cwnd (`threshold_from_table`), so it is computed only
            // when it can change the window.
            let (coupling, me) = (&self.coupling, self.index);
            tcb.cong_avoid_ai_at_least_cwnd(acked, |t| threshold_from_table(coupling, me, t));
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
        *c.borrow_mut() = vec![entry(10, 100, 1000), entry(20, 50, 1000), entry(30, 10, 1000)];
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
        assert!((grown / rtts as f64 - 0.5).abs() < 0.1, "total +{grown} in {rtts} RTTs");
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

    /// The threshold read straight from the table is `ack_threshold` over `paths` bit for bit:
    /// inactive subflows, subflows without an RTT sample (`me` among them), table entries
    /// without an MSS, `me`'s own newer window, and `me` beyond the table.
    #[test]
    fn threshold_from_table_is_ack_threshold_over_paths() {
        use proptest::prelude::*;
        let entry_s = (
            any::<bool>(),
            1u32..5000,
            0u64..3,
            1u64..2_000_000_000,
            prop_oneof![Just(0u32), 500u32..9000],
        );
        let strategy = (
            prop::collection::vec(entry_s, 0..9),
            0usize..10,
            1u32..5000,
            prop_oneof![Just(0u64), 1u64..2_000_000_000],
            500u32..9000,
        );
        proptest!(ProptestConfig::with_cases(2000), |((entries, me, cwnd, srtt, mss) in strategy)| {
            let c = new_coupling(entries.len());
            for (i, &(active, w, unsampled, rtt, emss)) in entries.iter().enumerate() {
                let mut e = entry(w, 1, emss);
                e.active = active;
                // One in three without an RTT sample.
                e.srtt = if unsampled == 0 { 0 } else { rtt };
                c.borrow_mut()[i] = e;
            }
            let mut t = Tcb::new(mss, cwnd);
            t.srtt = srtt;
            let (ps, pos) = paths(&c, me, &t);
            let expected = pos.map_or(t.cwnd, |p| ack_threshold(&ps, p));
            prop_assert_eq!(threshold_from_table(&c, me, &t), expected);
        });
    }

    /// `cong_avoid` with α skipped below cwnd leaves every window and counter as computing α on
    /// every ACK does: random tables, counters and ACK sizes, run ACK after ACK.
    #[test]
    fn skipping_alpha_below_cwnd_changes_nothing() {
        use proptest::prelude::*;
        let entry_s = (any::<bool>(), 1u32..400, 1u64..2_000_000_000, 500u32..9000);
        let strategy = (
            prop::collection::vec(entry_s, 1..9),
            0usize..9,
            1u32..400,
            0u32..2000,
            1u64..2_000_000_000,
            prop::collection::vec(1u32..5, 1..200),
        );
        proptest!(ProptestConfig::with_cases(2000), |((entries, me, cwnd, cnt, srtt, acks) in strategy)| {
            let c = new_coupling(entries.len());
            for (i, &(active, w, rtt, emss)) in entries.iter().enumerate() {
                let mut e = entry(w, 1, emss);
                e.active = active;
                e.srtt = rtt;
                c.borrow_mut()[i] = e;
            }
            let me = me % entries.len();
            let mut t = Tcb::new(1448, cwnd);
            t.ssthresh = 1;
            t.srtt = srtt;
            t.cwnd_cnt = cnt;
            let mut plain = t.clone();
            let mut lia = Lia::new(c.clone(), me);
            for (k, &acked) in acks.iter().enumerate() {
                let w = threshold_from_table(&c, me, &plain);
                plain.cong_avoid_ai(w, acked);
                lia.cong_avoid(&mut t, acked, 0);
                prop_assert_eq!((t.cwnd, t.cwnd_cnt), (plain.cwnd, plain.cwnd_cnt), "ack {}", k);
            }
        });
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
        assert!(uncoupled / reno > 1.8, "uncoupled {uncoupled:.1} reno {reno:.1}");
    }
}
