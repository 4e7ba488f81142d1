//! An ordered map over a ring buffer, for out-of-order queues.
//!
//! A receiver's out-of-order queue holds tens to hundreds of segments keyed by sequence number.
//! Most insertions land at the end: each path delivers its own segments in order, so a new one
//! is usually above everything held. Most removals take the front, when a hole fills. A
//! `BTreeMap` pays a tree search and node bookkeeping for each. Here the entries lie sorted in a
//! `VecDeque`: an append at the back, a pop at the front, and a binary search otherwise. An
//! insert in the middle moves the shorter side (a few entries in practice).
//!
//! The semantics are `BTreeMap`'s for the operations offered (a differential test checks them),
//! so swapping one for the other cannot change a result.
use std::collections::VecDeque;

#[derive(Clone, Debug)]
pub struct SortedDeque<K: Ord + Copy, V> {
    items: VecDeque<(K, V)>,
}

impl<K: Ord + Copy, V> Default for SortedDeque<K, V> {
    fn default() -> Self {
        Self { items: VecDeque::new() }
    }
}

impl<K: Ord + Copy, V> SortedDeque<K, V> {
    pub fn new() -> Self {
        Self::default()
    }

    /// Index of `key`, or where it would go.
    #[inline]
    fn find(&self, key: K) -> Result<usize, usize> {
        match self.items.back() {
            None => Err(0),
            Some(&(b, _)) if b < key => Err(self.items.len()),
            _ => self.items.binary_search_by(|(k, _)| k.cmp(&key)),
        }
    }

    /// Inserts or replaces (as `BTreeMap::insert`); returns the old value.
    pub fn insert(&mut self, key: K, value: V) -> Option<V> {
        match self.find(key) {
            Ok(i) => Some(std::mem::replace(&mut self.items[i].1, value)),
            Err(i) => {
                self.items.insert(i, (key, value));
                None
            }
        }
    }

    /// Inserts `make()` unless `key` is present (as `entry(key).or_insert_with(make)`).
    pub fn insert_if_absent(&mut self, key: K, make: impl FnOnce() -> V) {
        if let Err(i) = self.find(key) {
            self.items.insert(i, (key, make()));
        }
    }

    pub fn contains_key(&self, key: K) -> bool {
        self.find(key).is_ok()
    }

    pub fn remove(&mut self, key: K) -> Option<V> {
        let i = self.find(key).ok()?;
        self.items.remove(i).map(|(_, v)| v)
    }

    /// The smallest key and its value.
    pub fn first(&self) -> Option<(K, &V)> {
        self.items.front().map(|(k, v)| (*k, v))
    }

    /// Removes and returns the smallest entry if `take(key)` says so.
    pub fn pop_first_if(&mut self, take: impl FnOnce(K) -> bool) -> Option<(K, V)> {
        match self.items.front() {
            Some(&(k, _)) if take(k) => self.items.pop_front(),
            _ => None,
        }
    }

    pub fn len(&self) -> usize {
        self.items.len()
    }

    pub fn is_empty(&self) -> bool {
        self.items.is_empty()
    }

    /// Entries in key order.
    pub fn iter(&self) -> impl Iterator<Item = (K, &V)> {
        self.items.iter().map(|(k, v)| (*k, v))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng as _, SeedableRng};
    use std::collections::BTreeMap;

    /// Random operation sequences, shaped like out-of-order queues (appends, front pops) and not
    /// (random keys, replacements, middle removals), give what a `BTreeMap` gives.
    #[test]
    fn behaves_as_a_btreemap() {
        let mut rng = crate::core::rng::Rng::seed_from_u64(17);
        for round in 0..50 {
            let mut a = SortedDeque::new();
            let mut b = BTreeMap::new();
            let mut next = 0u64;
            let spread = [8u64, 64, 1 << 20][round % 3];
            for step in 0..2000u32 {
                match rng.gen_range(0..10) {
                    0..=2 => {
                        // Append above everything (the usual case), sometimes with gaps.
                        next += rng.gen_range(1..4);
                        assert_eq!(a.insert(next, step), b.insert(next, step));
                    }
                    3 => {
                        let k = rng.gen_range(0..spread);
                        assert_eq!(a.insert(k, step), b.insert(k, step));
                    }
                    4 => {
                        let k = rng.gen_range(0..spread);
                        a.insert_if_absent(k, || step);
                        b.entry(k).or_insert_with(|| step);
                    }
                    5 => {
                        let k = rng.gen_range(0..spread.max(next + 1));
                        assert_eq!(a.remove(k), b.remove(&k));
                    }
                    6 | 7 => {
                        let bound = rng.gen_range(0..spread.max(next + 1));
                        let got = a.pop_first_if(|k| k <= bound);
                        let want = match b.first_entry() {
                            Some(e) if *e.key() <= bound => Some(e.remove_entry()),
                            _ => None,
                        };
                        assert_eq!(got, want);
                    }
                    _ => {
                        let k = rng.gen_range(0..spread.max(next + 1));
                        assert_eq!(a.contains_key(k), b.contains_key(&k));
                    }
                }
                assert_eq!(a.len(), b.len());
                assert_eq!(a.is_empty(), b.is_empty());
                assert_eq!(a.first(), b.first_key_value().map(|(k, v)| (*k, v)));
            }
            assert!(a.iter().eq(b.iter().map(|(k, v)| (*k, v))));
        }
    }
}
