//! A weighted log-bucket histogram for distributions over long runs in bounded memory
//! (HoL delay weighted by bytes, queue occupancy weighted by time).
//!
//! Buckets are ~1 % wide (relative error of a quantile ≤ 1 %); values below `min` fall into
//! an exact zero/underflow bucket. Memory is fixed (a few thousand f64) whatever the run length.

#[derive(Clone, Debug)]
pub struct WeightedHist {
    min: f64,
    log_base: f64,
    buckets: Vec<f64>,
    zero_weight: f64,
    total_weight: f64,
    weighted_sum: f64,
    /// Recently bucketed values and their buckets, direct-mapped by the value's bits: occupancy
    /// in bytes cycles through a few hundred values (multiples of the segment sizes), and each
    /// logarithm costs more than the rest of `add` (perf: libm's `log` was 3.5 % of an MPTCP
    /// run). A hit gives exactly what the logarithm gave for that same value.
    memo: Box<[(f64, u32); MEMO]>,
}

const MEMO: usize = 256;
const _: () = assert!(MEMO.is_power_of_two());

const GROWTH: f64 = 1.01;

impl WeightedHist {
    /// Values in [min, max] are bucketed; smaller ones (including 0) count as 0, larger ones
    /// as `max`.
    pub fn new(min: f64, max: f64) -> Self {
        let n = ((max / min).ln() / GROWTH.ln()).ceil() as usize + 1;
        WeightedHist {
            min,
            log_base: GROWTH.ln(),
            buckets: vec![0.0; n],
            zero_weight: 0.0,
            total_weight: 0.0,
            weighted_sum: 0.0,
            memo: Box::new([(f64::NAN, 0); MEMO]),
        }
    }

    pub fn add(&mut self, value: f64, weight: f64) {
        if weight <= 0.0 || !value.is_finite() {
            return;
        }
        self.total_weight += weight;
        self.weighted_sum += value * weight;
        if value < self.min {
            self.zero_weight += weight;
            return;
        }
        // Fibonacci hashing: the top bits of the product index the table.
        let slot = &mut self.memo
            [(value.to_bits().wrapping_mul(0x9E37_79B9_7F4A_7C15) >> (64 - MEMO.trailing_zeros())) as usize];
        let i = if slot.0 == value {
            slot.1 as usize
        } else {
            let i = (((value / self.min).ln() / self.log_base) as usize).min(self.buckets.len() - 1);
            *slot = (value, i as u32);
            i
        };
        self.buckets[i] += weight;
    }

    pub fn total_weight(&self) -> f64 {
        self.total_weight
    }

    pub fn mean(&self) -> f64 {
        if self.total_weight > 0.0 {
            self.weighted_sum / self.total_weight
        } else {
            0.0
        }
    }

    /// The q-quantile (q in [0, 1]); 0 if empty. Values in the underflow bucket report 0.
    pub fn quantile(&self, q: f64) -> f64 {
        if self.total_weight <= 0.0 {
            return 0.0;
        }
        let target = q.clamp(0.0, 1.0) * self.total_weight;
        let mut acc = self.zero_weight;
        if acc >= target {
            return 0.0;
        }
        for (i, w) in self.buckets.iter().enumerate() {
            acc += w;
            if acc >= target && *w > 0.0 {
                // Geometric middle of the bucket.
                return self.min * GROWTH.powf(i as f64 + 0.5);
            }
        }
        self.min * GROWTH.powf(self.buckets.len() as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn quantiles_of_a_uniform_distribution_within_one_percent() {
        let mut h = WeightedHist::new(1e-3, 1e6);
        for v in 1..=10_000 {
            h.add(v as f64, 1.0);
        }
        for (q, want) in [(0.5, 5000.0), (0.95, 9500.0), (0.99, 9900.0)] {
            let got = h.quantile(q);
            assert!((got / want - 1.0).abs() < 0.011, "q{q}: {got} vs {want}");
        }
        assert!((h.mean() - 5000.5).abs() < 1e-6);
    }

    /// The memo must give exactly the logarithm's bucket: values that share a memo slot
    /// (thousands of distinct values through 256 slots), repeats, and values one ulp apart at
    /// bucket edges, against the formula evaluated afresh for each value.
    #[test]
    fn memoised_buckets_equal_the_logarithm() {
        let (min, max) = (1.0, 1e10);
        let mut h = WeightedHist::new(min, max);
        let mut want = vec![0.0; h.buckets.len()];
        let last = want.len() - 1;
        let bucket = |v: f64| (((v / min).ln() / GROWTH.ln()) as usize).min(last);
        let mut values = Vec::new();
        let mut x: u64 = 0x2545_F491_4F6C_DD1D;
        for k in 0..20_000u64 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            values.push((x % 3_000_000) as f64); // byte counts
            values.push(1448.0 * (k % 300) as f64); // occupancy in whole segments, repeating
        }
        for j in [10usize, 500, 1000, 2000] {
            // Both sides of the edge between buckets j-1 and j.
            let e = min * GROWTH.powi(j as i32);
            for v in [e, f64::from_bits(e.to_bits() - 1), f64::from_bits(e.to_bits() + 1)] {
                values.push(v);
                values.push(v);
            }
        }
        for &v in &values {
            h.add(v, 1.0);
            if v >= min {
                want[bucket(v)] += 1.0;
            }
        }
        assert_eq!(h.buckets, want);
    }

    #[test]
    fn weights_and_zeros_count() {
        let mut h = WeightedHist::new(1.0, 1000.0);
        h.add(0.0, 90.0);
        h.add(100.0, 10.0);
        assert_eq!(h.quantile(0.5), 0.0);
        assert!((h.quantile(0.95) / 100.0 - 1.0).abs() < 0.011);
        assert!((h.mean() - 10.0).abs() < 1e-9);
    }
}
