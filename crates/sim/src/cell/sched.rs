//! MAC schedulers: how one TTI's resource blocks of one direction are split among the UEs that
//! need them (the GBR pass before them is the cell's, see `element.rs`).
//!
//! Every scheduler is need-capped (a UE gets no more RBs than its buffer, as the eNB knows it,
//! fills) and work-conserving (RBs left by capped UEs go to the others), and serves at most
//! `max_ues` UEs per TTI (standing in for PDCCH capacity).
//!
//! - `rr` — round robin: the UEs in cyclic order from a pointer; the first K' = min(K, n) get
//!   ⌊N/K'⌋ RBs each, leftovers go in the same order; the pointer moves past the last one served.
//! - `pf` — proportional fair, time domain: metric r_i / R_i, r_i = bytes the whole band would
//!   carry at the UE's CQI, R_i = the UE's average served bytes per TTI of this direction,
//!   R ← (1 − 1/T)·R + served/T every TTI of the direction (0 if not served), T = `pf_window_tti`
//!   (ns-3 `pf-ff-mac-scheduler.cc`, T = 99 TTIs; Sesia/Toufik/Baker eq. 12.3), R₀ = 1 byte. The
//!   top K by metric are served in rank order, each up to its need (with a flat channel every
//!   RB goes to the best metric first, as in ns-3). Equal CQIs give equal long-run shares; a
//!   better CQI gets equal time and so more bytes.
//! - `bsr-proportional` — P4's "existing scheduler \[which\], to raise uplink throughput, does not
//!   distinguish U and A" (P4 §2.1), read as the throughput-raising extreme: RBs in proportion
//!   to the buffered bytes, no minimum per UE, fractional shares carried over (a per-UE credit,
//!   largest remainder first) so long-run shares are proportional to the buffers. It behaves
//!   like one FIFO shared by all UEs: a UE holding 2 ACKs beside ten holding 60 kB each waits
//!   about Σ backlog / capacity. When more than K UEs need RBs, K of those owed at least one RB
//!   (share plus credit) are served in round-robin order and the others keep their share as
//!   credit.
//!   This is our reading (OPNET's scheduler is not described); the P4 report shows that fair
//!   schedulers (rr, pf) do not starve the ACKs in the first place.

/// A UE that wants resource blocks in this TTI.
#[derive(Clone, Copy, Debug)]
pub struct Candidate {
    pub ue: usize,
    /// RBs that would carry its whole (known) buffer, capped at the band.
    pub need_rbs: u32,
    /// Its buffer as the eNB knows it, bytes (bsr-proportional's weight).
    pub buffered: u64,
    /// Bytes the whole band carries at its CQI (PF's achievable rate).
    pub full_band_bytes: u64,
}

/// A scheduler's registry entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SchedKind {
    RoundRobin,
    ProportionalFair,
    BsrProportional,
}

impl SchedKind {
    pub const ALL: [(SchedKind, &'static str); 3] = [
        (SchedKind::RoundRobin, "rr"),
        (SchedKind::ProportionalFair, "pf"),
        (SchedKind::BsrProportional, "bsr-proportional"),
    ];

    pub fn from_name(s: &str) -> Option<SchedKind> {
        Self::ALL.iter().find(|(_, n)| *n == s).map(|(k, _)| *k)
    }
    pub fn name(self) -> &'static str {
        Self::ALL
            .iter()
            .find(|(k, _)| *k == self)
            .map(|(_, n)| *n)
            .expect("registered")
    }
    pub fn names() -> Vec<&'static str> {
        Self::ALL.iter().map(|(_, n)| *n).collect()
    }

    pub fn build(self, n_ues: usize, pf_window: f64) -> Box<dyn MacScheduler> {
        match self {
            SchedKind::RoundRobin => Box::new(RoundRobin { next: 0 }),
            SchedKind::ProportionalFair => Box::new(ProportionalFair {
                avg: vec![1.0; n_ues],
                window: pf_window,
                order: Vec::new(),
            }),
            SchedKind::BsrProportional => Box::new(BsrProportional {
                credit: vec![0.0; n_ues],
                rr: RoundRobin { next: 0 },
                picked: Vec::new(),
            }),
        }
    }
}

/// A MAC scheduler for one direction of one cell.
pub trait MacScheduler {
    fn kind(&self) -> SchedKind;
    /// Splits `n_rbs` among `cands` (sorted by UE index): `alloc[i]` = RBs for `cands[i]`.
    fn allocate(&mut self, cands: &[Candidate], n_rbs: u32, max_ues: usize, alloc: &mut Vec<u32>);
    /// One TTI of this direction ended; `served[ue]` = bytes each UE got in it.
    fn end_tti(&mut self, _served: &[u64]) {}
    /// `n` TTIs of this direction passed with nothing to schedule.
    fn idle(&mut self, _n: u64) {}
    /// The UE has nothing buffered any more (bsr-proportional forgets its credit).
    fn forget(&mut self, _ue: usize) {}
}

/// Max-min fair split of `n_rbs` among `order` (indices into cands), need-capped: equal shares,
/// what a capped UE leaves is shared again among the others; the last indivisible RBs go in
/// `order`'s order.
fn fair_shares(cands: &[Candidate], order: &[usize], n_rbs: u32, alloc: &mut [u32]) {
    let mut open: Vec<usize> = order.to_vec();
    let mut left = n_rbs;
    while left > 0 && !open.is_empty() {
        let share = left / open.len() as u32;
        if share == 0 {
            for &i in &open {
                if left == 0 {
                    break;
                }
                alloc[i] += 1;
                left -= 1;
            }
            break;
        }
        for &i in &open {
            let g = share.min(cands[i].need_rbs - alloc[i]);
            alloc[i] += g;
            left -= g;
        }
        open.retain(|&i| alloc[i] < cands[i].need_rbs);
    }
}

pub struct RoundRobin {
    /// The UE index the next TTI starts from.
    next: usize,
}

impl RoundRobin {
    /// Up to `k` candidates in cyclic order from the pointer (indices into cands); moves the
    /// pointer past the last one taken.
    fn pick(&mut self, cands: &[Candidate], k: usize, out: &mut Vec<usize>) {
        out.clear();
        if cands.is_empty() {
            return;
        }
        let start = cands.iter().position(|c| c.ue >= self.next).unwrap_or(0);
        for j in 0..cands.len().min(k) {
            out.push((start + j) % cands.len());
        }
        self.next = cands[*out.last().expect("non-empty")].ue + 1;
    }
}

impl MacScheduler for RoundRobin {
    fn kind(&self) -> SchedKind {
        SchedKind::RoundRobin
    }
    fn allocate(&mut self, cands: &[Candidate], n_rbs: u32, max_ues: usize, alloc: &mut Vec<u32>) {
        alloc.clear();
        alloc.resize(cands.len(), 0);
        let mut order = Vec::with_capacity(max_ues.min(cands.len()));
        self.pick(cands, max_ues, &mut order);
        fair_shares(cands, &order, n_rbs, alloc);
    }
}

pub struct ProportionalFair {
    avg: Vec<f64>,
    window: f64,
    order: Vec<usize>,
}

impl MacScheduler for ProportionalFair {
    fn kind(&self) -> SchedKind {
        SchedKind::ProportionalFair
    }
    fn allocate(&mut self, cands: &[Candidate], n_rbs: u32, max_ues: usize, alloc: &mut Vec<u32>) {
        alloc.clear();
        alloc.resize(cands.len(), 0);
        self.order.clear();
        self.order.extend(0..cands.len());
        let avg = &self.avg;
        let metric = |i: usize| cands[i].full_band_bytes as f64 / avg[cands[i].ue].max(1e-9);
        // Highest metric first; ties by UE index (deterministic).
        self.order.sort_by(|&a, &b| {
            metric(b)
                .partial_cmp(&metric(a))
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(cands[a].ue.cmp(&cands[b].ue))
        });
        let mut left = n_rbs;
        for &i in self.order.iter().take(max_ues) {
            if left == 0 {
                break;
            }
            let g = cands[i].need_rbs.min(left);
            alloc[i] = g;
            left -= g;
        }
    }
    fn end_tti(&mut self, served: &[u64]) {
        let a = 1.0 / self.window;
        for (r, &s) in self.avg.iter_mut().zip(served) {
            *r = (1.0 - a) * *r + a * s as f64;
        }
    }
    fn idle(&mut self, n: u64) {
        let f = (1.0 - 1.0 / self.window).powf(n as f64);
        for r in &mut self.avg {
            *r *= f;
        }
    }
}

pub struct BsrProportional {
    /// Fractional RBs owed to (positive) or by (negative) each UE.
    credit: Vec<f64>,
    rr: RoundRobin,
    picked: Vec<usize>,
}

impl MacScheduler for BsrProportional {
    fn kind(&self) -> SchedKind {
        SchedKind::BsrProportional
    }
    fn allocate(&mut self, cands: &[Candidate], n_rbs: u32, max_ues: usize, alloc: &mut Vec<u32>) {
        alloc.clear();
        alloc.resize(cands.len(), 0);
        let total: f64 = cands.iter().map(|c| c.buffered as f64).sum();
        if total <= 0.0 || n_rbs == 0 {
            return;
        }
        let n = n_rbs as f64;
        // Every candidate's entitlement this TTI: its proportional share plus what it is owed.
        let mut shares: Vec<(usize, f64)> = cands
            .iter()
            .enumerate()
            .map(|(i, c)| (i, n * c.buffered as f64 / total + self.credit[c.ue]))
            .collect();
        // At most K UEs: those due at least one RB (entitlement ≥ 1) in round-robin order from a
        // pointer, then, if fewer than K are due, the largest entitlements; the others keep theirs
        // as credit, so long-run shares stay proportional to the buffers.
        let mut picked = std::mem::take(&mut self.picked);
        picked.clear();
        if cands.len() <= max_ues {
            picked.extend(0..cands.len());
        } else {
            let due: Vec<Candidate> = cands
                .iter()
                .zip(&shares)
                .filter(|(_, s)| s.1 >= 1.0)
                .map(|(c, _)| *c)
                .collect();
            let mut order = Vec::new();
            self.rr.pick(&due, max_ues, &mut order);
            picked.extend(
                order
                    .iter()
                    .map(|&j| cands.iter().position(|c| c.ue == due[j].ue).expect("a candidate")),
            );
            if picked.len() < max_ues {
                let mut rest: Vec<usize> = (0..cands.len()).filter(|i| shares[*i].1 < 1.0).collect();
                rest.sort_by(|&a, &b| {
                    shares[b]
                        .1
                        .partial_cmp(&shares[a].1)
                        .unwrap_or(std::cmp::Ordering::Equal)
                        .then(cands[a].ue.cmp(&cands[b].ue))
                });
                picked.extend(rest.into_iter().take(max_ues - picked.len()));
            }
            picked.sort_unstable();
        }
        // RBs the UEs left out would have had go to those served, in proportion to their buffers
        // (for the split only: the credit charges them, so long-run shares stay proportional).
        let present: f64 = picked.iter().map(|&i| shares[i].1).sum();
        let w_picked: f64 = picked.iter().map(|&i| cands[i].buffered as f64).sum();
        let split: Vec<f64> = (0..cands.len())
            .map(|i| {
                if present < n && w_picked > 0.0 {
                    shares[i].1 + (n - present) * cands[i].buffered as f64 / w_picked
                } else {
                    shares[i].1
                }
            })
            .collect();
        let mut left = n_rbs;
        for &i in &picked {
            let g = (split[i].max(0.0).floor() as u32).min(cands[i].need_rbs).min(left);
            alloc[i] = g;
            left -= g;
        }
        // Largest remainder first (ties: lower UE index), one RB at a time, need-capped.
        while left > 0 {
            let best = picked
                .iter()
                .copied()
                .filter(|&i| alloc[i] < cands[i].need_rbs)
                .max_by(|&a, &b| {
                    (split[a] - alloc[a] as f64)
                        .partial_cmp(&(split[b] - alloc[b] as f64))
                        .unwrap_or(std::cmp::Ordering::Equal)
                        .then(cands[b].ue.cmp(&cands[a].ue))
                });
            let Some(i) = best else { break };
            alloc[i] += 1;
            left -= 1;
        }
        for (i, s) in shares.iter_mut() {
            let c = &cands[*i];
            self.credit[c.ue] = if alloc[*i] >= c.need_rbs {
                0.0
            } else {
                (*s - alloc[*i] as f64).clamp(-n, n)
            };
        }
        self.picked = picked;
    }
    fn forget(&mut self, ue: usize) {
        self.credit[ue] = 0.0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cand(ue: usize, need: u32, buffered: u64, full: u64) -> Candidate {
        Candidate {
            ue,
            need_rbs: need,
            buffered,
            full_band_bytes: full,
        }
    }

    fn run(s: &mut dyn MacScheduler, cands: &[Candidate], n: u32, k: usize) -> Vec<u32> {
        let mut a = Vec::new();
        s.allocate(cands, n, k, &mut a);
        a
    }

    #[test]
    fn round_robin_rotates_and_is_work_conserving() {
        let mut s = SchedKind::RoundRobin.build(4, 99.0);
        let c = [
            cand(0, 100, 1, 1),
            cand(1, 100, 1, 1),
            cand(2, 10, 1, 1),
            cand(3, 100, 1, 1),
        ];
        assert_eq!(run(s.as_mut(), &c, 100, 4), [30, 30, 10, 30]);
        // K = 2: two at a time, in turn.
        assert_eq!(run(s.as_mut(), &c, 100, 2), [50, 50, 0, 0]);
        assert_eq!(run(s.as_mut(), &c, 100, 2), [0, 0, 10, 90]);
        assert_eq!(run(s.as_mut(), &c, 100, 2), [50, 50, 0, 0]);
    }

    #[test]
    fn pf_time_shares_equal_cqi_and_prefers_the_less_served() {
        let mut s = SchedKind::ProportionalFair.build(2, 99.0);
        let c = [cand(0, 100, 1, 1000), cand(1, 100, 1, 1000)];
        let mut bytes = [0u64; 2];
        for _ in 0..10_000 {
            let a = run(s.as_mut(), &c, 100, 2);
            let served = [a[0] as u64 * 10, a[1] as u64 * 10];
            bytes[0] += served[0];
            bytes[1] += served[1];
            s.end_tti(&served);
        }
        let share = bytes[0] as f64 / (bytes[0] + bytes[1]) as f64;
        assert!((share - 0.5).abs() < 0.01, "{share}");
    }

    #[test]
    fn bsr_proportional_shares_follow_buffers() {
        let mut s = SchedKind::BsrProportional.build(2, 99.0);
        let c = [cand(0, 96, 100_000, 1), cand(1, 96, 10_000, 1)];
        let mut rbs = [0u64; 2];
        for _ in 0..1000 {
            let a = run(s.as_mut(), &c, 96, 10);
            assert_eq!(a[0] + a[1], 96);
            rbs[0] += a[0] as u64;
            rbs[1] += a[1] as u64;
        }
        let ratio = rbs[0] as f64 / rbs[1] as f64;
        assert!((ratio - 10.0).abs() < 0.05, "{ratio}");
        // A tiny buffer beside large ones gets its RB only after its credit has built up.
        let mut s = SchedKind::BsrProportional.build(3, 99.0);
        let c = [cand(0, 96, 60_000, 1), cand(1, 96, 60_000, 1), cand(2, 2, 52, 1)];
        let first = (1..=10_000).find(|_| run(s.as_mut(), &c, 96, 10)[2] > 0).unwrap();
        // 96 · 52 / 120 052 ≈ 0.0416 RB per TTI: its first RB after 1/0.0416 = 24 TTIs at most
        // (sooner when the large UEs' rounding debts outweigh its credit).
        assert!((10..=24).contains(&first), "{first}");
        let mut small = 0u64;
        for _ in 0..10_000 {
            small += run(s.as_mut(), &c, 96, 10)[2] as u64;
        }
        // Long run: its proportional share, 416 RBs in 10 000 TTIs.
        assert!((small as f64 - 415.8).abs() <= 4.0, "{small}");
        // The same with K = 2 of 3: the credit still brings it its share, and it waits no longer
        // for its first RB than it takes to be owed one.
        let mut s = SchedKind::BsrProportional.build(3, 99.0);
        let first = (1..=10_000).find(|_| run(s.as_mut(), &c, 96, 2)[2] > 0).unwrap();
        assert!(first <= 26, "K = 2: first RB after {first} TTIs");
        let mut small = 0u64;
        for _ in 0..10_000 {
            small += run(s.as_mut(), &c, 96, 2)[2] as u64;
        }
        assert!((small as f64 - 415.8).abs() <= 8.0, "K = 2: {small}");
    }
}
