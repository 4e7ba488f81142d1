//! A tournament tree over a fixed set of keyed sources: which source holds the smallest key,
//! in O(1), after an O(log n) update of one source's key.
//!
//! The event loop merges every link direction's propagation pipe with the event queue. Scanning
//! all pipe heads on every event made each event cost O(links): 2 link directions per subflow,
//! so an 8-subflow connection paid for 16+ comparisons per event (the per-packet cost
//! must stay flat in the number of subflows). A changed head is one leaf-to-root walk instead.
//!
//! Ties cannot occur between live keys (the loop's keys carry unique insertion numbers); an
//! empty source holds the maximum key and the lower index wins ties, so the answer is exactly
//! the first minimum a linear scan would have found.

/// Min-tournament over `n` sources with keys of type `K`.
#[derive(Clone, Debug)]
pub struct Tournament<K: Copy + Ord> {
    /// Leaves start at `width`; node `i`'s children are `2i` and `2i + 1`; node 1 is the root.
    /// Each node holds (key, source index) of the winner below it.
    nodes: Vec<(K, u32)>,
    width: usize,
    empty: K,
}

impl<K: Copy + Ord> Tournament<K> {
    /// `n` sources, each holding `empty` (the key that never wins against a real one).
    pub fn new(n: usize, empty: K) -> Self {
        let width = n.max(1).next_power_of_two();
        let mut nodes = vec![(empty, 0u32); 2 * width];
        for i in 0..width {
            nodes[width + i] = (empty, i as u32);
        }
        for i in (1..width).rev() {
            nodes[i] = Self::winner(nodes[2 * i], nodes[2 * i + 1]);
        }
        Tournament { nodes, width, empty }
    }

    fn winner(a: (K, u32), b: (K, u32)) -> (K, u32) {
        if b.0 < a.0 {
            b
        } else {
            a
        }
    }

    /// Sets source `i`'s key.
    pub fn set(&mut self, i: usize, key: K) {
        let mut k = self.width + i;
        self.nodes[k].0 = key;
        while k > 1 {
            k /= 2;
            let w = Self::winner(self.nodes[2 * k], self.nodes[2 * k + 1]);
            if w == self.nodes[k] {
                // Same winner here, so the same everywhere above.
                return;
            }
            self.nodes[k] = w;
        }
    }

    /// Empties source `i`.
    pub fn clear(&mut self, i: usize) {
        let e = self.empty;
        self.set(i, e);
    }

    /// Source `i`'s key.
    pub fn get(&self, i: usize) -> K {
        self.nodes[self.width + i].0
    }

    /// The smallest key and its source (the lowest index among equal keys); the key is the
    /// empty key when every source is empty.
    pub fn min(&self) -> (K, usize) {
        let (k, i) = self.nodes[1];
        (k, i as usize)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng, SeedableRng};

    /// Against the linear scan it replaces, over random updates of random sizes.
    #[test]
    fn agrees_with_a_linear_scan() {
        let mut rng = rand_chacha::ChaCha8Rng::seed_from_u64(7);
        for n in [1usize, 2, 3, 5, 16, 17, 40] {
            let empty = (u64::MAX, u64::MAX);
            let mut t = Tournament::new(n, empty);
            let mut plain = vec![empty; n];
            for step in 0..2000u64 {
                let i = rng.gen_range(0..n);
                if rng.gen_bool(0.3) {
                    t.clear(i);
                    plain[i] = empty;
                } else {
                    let key = (rng.gen_range(0..50u64), step);
                    t.set(i, key);
                    plain[i] = key;
                }
                let (mut best, mut key) = (0, empty);
                for (l, &h) in plain.iter().enumerate() {
                    if h < key {
                        (best, key) = (l, h);
                    }
                }
                let (k, at) = t.min();
                assert_eq!(k, key, "n={n} step={step}");
                if key != empty {
                    assert_eq!(at, best, "n={n} step={step}");
                }
                assert_eq!(t.get(i), plain[i]);
            }
        }
    }

    #[test]
    fn equal_keys_go_to_the_lowest_index() {
        let mut t = Tournament::new(4, u64::MAX);
        t.set(3, 5);
        t.set(1, 5);
        assert_eq!(t.min(), (5, 1));
        t.clear(1);
        assert_eq!(t.min(), (5, 3));
    }
}
