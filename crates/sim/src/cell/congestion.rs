//! Uplink congestion control at the eNB, a pluggable per-uplink-TTI policy (P4 and baselines).
//!
//! - `none`: nothing.
//! - `bsr-drop` (P4 §2.2, the four steps, every uplink TTI):
//!   1. congestion check: Σ over the cell's UEs of their latest reported BSR (read back as the
//!      upper bound of its index range, GBR and non-GBR groups summed) > `TH_Cell_n`;
//!   2. target: among the UEs whose PUSCH is received in this TTI and whose reported BSR >
//!      `TH_UE`, one chosen uniformly at random (stream `cell/<name>/bsr-drop`);
//!   3. decision: with probability `p`;
//!   4. action: the first packet larger than `TH_Packet` (IP size: payload + 52 B of headers)
//!      completed from that UE in this TTI is dropped inside the eNB instead of being forwarded;
//!      if there is none, one drop is kept pending for that UE's next such packet (pending drops
//!      do not accumulate).
//! - `red-large`: every uplink TTI, with probability `p`, one UE with PUSCH in this TTI chosen
//!   uniformly loses its next packet larger than `TH_Packet` (the same action as step 4) — a
//!   random early drop of large uplink packets without P4's thresholds.
//! - `ack-prio`: at the UE, pure ACKs (no payload) leave the uplink buffer before data (a
//!   modern UE's alternative; no eNB action).
//!
//! Parameters (P4 §2.3, equations (1)–(7); every one overridable):
//! - `TH_Cell_1 = (4/3) · T_1 · RTT_target` (eq. 1; T_1 = the peak throughput of one UE alone,
//!   by default the cell's uplink peak at `ul_max_cqi`, in bytes/s);
//! - `TH_Cell_N = N · CW_target · MSS` (eq. 2; N = the UE count of the congestion reference);
//! - `TH_Cell_n` for the cell's n UEs (eq. 3, printed garbled): TH_Cell_1 for n = 1,
//!   `((n−1)·TH_Cell_N + (N−n)·TH_Cell_1)/(N−1)` for 1 < n < N (linear interpolation, P4 ref. 6),
//!   TH_Cell_N for n ≥ N;
//! - `TH_UE = (CW_target/2) · MSS` (eq. 4);
//! - `p = n/(τ·M)` with `τ = MSS·8·Σ_{i=CW/2}^{CW−1} i / (T_peak/n)` (eqs. 5, 6), i.e. eq. (7)
//!   `p = T_peak / (MSS·(3·CW² − 2·CW)·M)`, M = uplink TTIs per second.
//!
//! The p reading. Eq. (7) with T_peak in bit/s and MSS in bytes (dimensionally consistent,
//! `p = "consistent"`) gives p = 0.237 for a 20 MHz configuration-2 cell (T_peak = 6.65 Mbit/s),
//! and would need an impossible 0.87 Mbit/s "cell peak" to give the paper's p = 0.031. With the
//! MSS in bits as well — one more factor 8, equivalently T_peak in bytes/s — (`p = "paper"`, the
//! default) the same cell gives 0.0297 and a round 7 Mbit/s uplink peak gives 0.0312: the
//! published value. We take the paper's own number as the evidence of how its authors evaluated
//! the formula; both values are printed in every summary and `p` can be given as a number.
//!
//! Deviations: n is the number of UEs connected to the cell (the eNB "already knows" it) unless
//! `n_ues` is given; the BSR sum uses the reports received up to and including this TTI.

/// How `p` is obtained.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum PChoice {
    /// Reading D: `T_peak[bit/s] / (8 · MSS[B] · (3CW² − 2CW) · M)` (reproduces P4's 0.031).
    Paper,
    /// Reading A: `T_peak[bit/s] / (MSS[B] · (3CW² − 2CW) · M)`.
    Consistent,
    Fixed(f64),
}

/// The inputs of P4's parameter formulas.
#[derive(Clone, Debug, PartialEq)]
pub struct BsrDropInputs {
    /// N, the UE count of the congestion reference.
    pub n_ref: u32,
    /// n, the UEs in the cell.
    pub n_ues: u32,
    pub cw_target: u32,
    pub mss: u32,
    pub rtt_target_s: f64,
    /// T_1 and T_peak, bit/s.
    pub t1_bps: f64,
    pub t_peak_bps: f64,
    /// M, uplink TTIs per second.
    pub m: u32,
    pub th_packet: u32,
    pub p: PChoice,
    /// Overrides of the computed thresholds, bytes.
    pub th_cell_1: Option<u64>,
    pub th_cell_n_ref: Option<u64>,
    pub th_ue: Option<u64>,
}

/// P4's parameters as computed (and printed in the summary).
#[derive(Clone, Debug, PartialEq)]
pub struct BsrDropParams {
    pub th_cell_1: f64,
    /// TH_Cell_N (at N = `n_ref`).
    pub th_cell_n_ref: f64,
    /// TH_Cell_n for the cell's n.
    pub th_cell: f64,
    pub th_ue: f64,
    pub th_packet: u32,
    pub p_paper: f64,
    pub p_consistent: f64,
    pub p: f64,
}

/// Σ_{i=CW/2}^{CW−1} i · 8 = 3·CW² − 2·CW (P4 eq. 6 → 7; CW even).
pub fn window_sum_bits_per_byte(cw: u32) -> f64 {
    let cw = cw as f64;
    3.0 * cw * cw - 2.0 * cw
}

/// TH_Cell_n by P4's eq. (3) (linear interpolation between n = 1 and n = N).
pub fn th_cell_n(n: u32, n_ref: u32, th1: f64, th_n: f64) -> f64 {
    if n <= 1 {
        th1
    } else if n >= n_ref {
        th_n
    } else {
        ((n - 1) as f64 * th_n + (n_ref - n) as f64 * th1) / (n_ref - 1) as f64
    }
}

impl BsrDropInputs {
    pub fn compute(&self) -> BsrDropParams {
        let th1 = self
            .th_cell_1
            .map_or(4.0 / 3.0 * self.t1_bps / 8.0 * self.rtt_target_s, |v| v as f64);
        let th_n = self
            .th_cell_n_ref
            .map_or(self.n_ref as f64 * self.cw_target as f64 * self.mss as f64, |v| {
                v as f64
            });
        let th_ue = self
            .th_ue
            .map_or(self.cw_target as f64 / 2.0 * self.mss as f64, |v| v as f64);
        let denom = self.mss as f64 * window_sum_bits_per_byte(self.cw_target) * self.m as f64;
        let p_consistent = self.t_peak_bps / denom;
        let p_paper = p_consistent / 8.0;
        let p = match self.p {
            PChoice::Paper => p_paper,
            PChoice::Consistent => p_consistent,
            PChoice::Fixed(p) => p,
        };
        BsrDropParams {
            th_cell_1: th1,
            th_cell_n_ref: th_n,
            th_cell: th_cell_n(self.n_ues, self.n_ref, th1, th_n),
            th_ue,
            th_packet: self.th_packet,
            p_paper,
            p_consistent,
            p,
        }
    }
}

/// A resolved uplink policy.
#[derive(Clone, Debug, PartialEq)]
pub enum UlPolicy {
    None,
    BsrDrop {
        inputs: BsrDropInputs,
        params: BsrDropParams,
    },
    RedLarge {
        p: f64,
        th_packet: u32,
    },
    AckPrio,
}

impl UlPolicy {
    /// Registry names (`ul_congestion.policy`).
    pub const NAMES: &'static [&'static str] = &["none", "bsr-drop", "red-large", "ack-prio"];

    pub fn name(&self) -> &'static str {
        match self {
            UlPolicy::None => "none",
            UlPolicy::BsrDrop { .. } => "bsr-drop",
            UlPolicy::RedLarge { .. } => "red-large",
            UlPolicy::AckPrio => "ack-prio",
        }
    }

    /// Whether UEs put pure ACKs ahead of data in their uplink buffers.
    pub fn ack_priority(&self) -> bool {
        matches!(self, UlPolicy::AckPrio)
    }

    /// Drop probability per uplink TTI and packet-size threshold of the dropping policies.
    pub fn drop_parameters(&self) -> Option<(f64, u32)> {
        match self {
            UlPolicy::BsrDrop { params, .. } => Some((params.p, params.th_packet)),
            UlPolicy::RedLarge { p, th_packet } => Some((*p, *th_packet)),
            _ => None,
        }
    }
}

/// Counters of a dropping policy (summary).
#[derive(Clone, Debug, Default)]
pub struct PolicyStats {
    /// Uplink TTIs seen by the policy.
    pub ttis: u64,
    /// TTIs in which Σ BSR exceeded TH_Cell_n (bsr-drop).
    pub congested_ttis: u64,
    /// TTIs with at least one candidate UE (bsr-drop: congested and a scheduled UE above TH_UE;
    /// red-large: a scheduled UE).
    pub candidate_ttis: u64,
    /// Decisions to drop (Bernoulli(p) successes).
    pub decisions: u64,
    /// Decisions that found a pending drop already armed for the UE (no accumulation).
    pub decisions_merged: u64,
    /// Packets dropped.
    pub drops: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    /// P4's setup: 20 MHz configuration 2, uplink peak 200 × 4158 B × 8 = 6 652 800 bit/s, N = 50,
    /// CW_target = 6, MSS = 1460, RTT_target = 100 ms, n = 20. Values computed by hand in
    /// /work/notes/p4.md §5 (and below).
    fn p4() -> BsrDropInputs {
        BsrDropInputs {
            n_ref: 50,
            n_ues: 20,
            cw_target: 6,
            mss: 1460,
            rtt_target_s: 0.1,
            t1_bps: 6_652_800.0,
            t_peak_bps: 6_652_800.0,
            m: 200,
            th_packet: 100,
            p: PChoice::Paper,
            th_cell_1: None,
            th_cell_n_ref: None,
            th_ue: None,
        }
    }

    #[test]
    fn thresholds_and_p_equal_hand_computed_values() {
        let q = p4().compute();
        // TH_Cell_N = 50 · 6 · 1460.
        assert_eq!(q.th_cell_n_ref, 438_000.0);
        // TH_UE = 3 · 1460.
        assert_eq!(q.th_ue, 4380.0);
        // TH_Cell_1 = 4/3 · 831 600 B/s · 0.1 s.
        assert!((q.th_cell_1 - 110_880.0).abs() < 1e-6);
        // TH_Cell_20 = (19 · 438 000 + 30 · 110 880) / 49 = (8 322 000 + 3 326 400) / 49.
        assert!((q.th_cell - 11_648_400.0 / 49.0).abs() < 1e-6, "{}", q.th_cell);
        assert!((q.th_cell - 237_722.45).abs() < 0.01);
        // 3·36 − 12 = 96; 1460 · 96 · 200 = 28 032 000.
        assert_eq!(window_sum_bits_per_byte(6), 96.0);
        assert!((q.p_consistent - 6_652_800.0 / 28_032_000.0).abs() < 1e-12);
        assert!((q.p_consistent - 0.237329).abs() < 1e-6);
        assert!((q.p_paper - 0.029666).abs() < 1e-6);
        assert_eq!(q.p, q.p_paper);
        // A 7 Mbit/s peak gives the paper's 0.031.
        let q7 = BsrDropInputs {
            t_peak_bps: 7e6,
            ..p4()
        }
        .compute();
        assert!((q7.p_paper - 0.031214).abs() < 1e-6);
    }

    #[test]
    fn interpolation_ends_and_overrides() {
        assert_eq!(th_cell_n(1, 50, 100.0, 500.0), 100.0);
        assert_eq!(th_cell_n(50, 50, 100.0, 500.0), 500.0);
        assert_eq!(th_cell_n(60, 50, 100.0, 500.0), 500.0);
        assert_eq!(th_cell_n(2, 3, 100.0, 500.0), 300.0);
        let q = BsrDropInputs { n_ues: 60, ..p4() }.compute();
        assert_eq!(q.th_cell, 438_000.0);
        let q = BsrDropInputs {
            th_cell_1: Some(1000),
            th_cell_n_ref: Some(2000),
            th_ue: Some(10),
            p: PChoice::Fixed(0.5),
            n_ues: 1,
            ..p4()
        }
        .compute();
        assert_eq!(
            (q.th_cell_1, q.th_cell_n_ref, q.th_cell, q.th_ue, q.p),
            (1000.0, 2000.0, 1000.0, 10.0, 0.5)
        );
        // Sum identity: 8 · Σ_{i=CW/2}^{CW−1} i = 3CW² − 2CW for every even CW.
        for cw in (2..=40).step_by(2) {
            let s: u32 = (cw / 2..cw).sum();
            assert_eq!(8.0 * s as f64, window_sum_bits_per_byte(cw));
        }
    }
}
