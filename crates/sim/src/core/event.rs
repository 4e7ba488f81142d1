//! The event queue: a binary min-heap keyed by (time, insertion order).
//!
//! Ties at the same nanosecond are broken by insertion order, which makes the
//! event order — and so every result — deterministic.
//!
//! Events queued for the current instant (an application's read at the end of the instant in
//! which data arrived, a timer re-armed to "now") skip the heap: they go to a FIFO, which is
//! already in insertion order since every push takes the next insertion number, and `pop`
//! takes the smaller (time, insertion number) of the FIFO's front and the heap's top. The order
//! is exactly the heap's; only the O(log n) push and pop are saved (about a third of all
//! events of a bulk TCP transfer are of this kind since the receiver reads at the end of
//! each arrival instant). An event queued under a reserved number for the current instant
//! joins the FIFO too when its number is after every FIFO entry's.
//!
//! The future events are few in most runs (a bulk TCP transfer holds about five: its links'
//! wake-ups, its timers, the next time-series bin), where a binary heap's pop (sift to the
//! bottom, then up) costs more than keeping them sorted: they are kept in a vector sorted
//! latest first, so the next one is popped off the end, and a push is a binary search and a
//! short move. Past [`SORTED_MAX`] entries (a cell with a hundred UEs, hundreds of flows' timers)
//! they move to a binary heap, and back below [`SORTED_MIN`]; in heap form up to [`NEAR_MAX`] of
//! the earliest events wait in front of the heap, so a link's next wake-up, microseconds ahead
//! of every flow's timer, never sifts through it. Keys are unique, so every form gives exactly
//! the same order.
use super::time::Time;
use std::cmp::Ordering;
use std::collections::{BinaryHeap, VecDeque};

struct Entry<E> {
    at: Time,
    seq: u64,
    ev: E,
}

impl<E> PartialEq for Entry<E> {
    fn eq(&self, o: &Self) -> bool {
        self.at == o.at && self.seq == o.seq
    }
}
impl<E> Eq for Entry<E> {}
impl<E> PartialOrd for Entry<E> {
    fn partial_cmp(&self, o: &Self) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}
impl<E> Ord for Entry<E> {
    fn cmp(&self, o: &Self) -> Ordering {
        // Reversed: BinaryHeap is a max-heap, we want the earliest first.
        (o.at, o.seq).cmp(&(self.at, self.seq))
    }
}

/// Above this many future events the sorted vector turns into a binary heap ...
pub const SORTED_MAX: usize = 64;
/// ... and below this many, back (the gap keeps a queue near one size from switching often).
pub const SORTED_MIN: usize = 16;
/// In heap form, at most this many of the earliest events wait in front of the heap (see
/// [`Store::Heap`]).
pub const NEAR_MAX: usize = 8;

/// The future events: sorted latest first (the next one last), or a binary heap when many.
enum Store<E> {
    Sorted(Vec<Entry<E>>),
    /// Many future events (a timer or two per flow of a run with hundreds of flows): a binary
    /// heap, and in front of it `near`, a few events earlier than every one in the heap, sorted
    /// latest first like [`Store::Sorted`]. Most pushes are a new earliest event (a link's next
    /// wake-up, microseconds ahead, while the flows' timers wait milliseconds): it goes to
    /// `near` in one comparison and is popped off its end, never sifting through a heap of
    /// thousands (a heap push of a new minimum climbs to the root; a pop sifts to the bottom and
    /// back). Invariant: every `near` entry is earlier than every heap entry, so the next event
    /// is `near`'s last, or the heap's top when `near` is empty; the order is exactly a plain
    /// heap's.
    Heap {
        heap: BinaryHeap<Entry<E>>,
        near: Vec<Entry<E>>,
    },
}

/// Inserts `e` into `v`, sorted latest first (`Entry`'s order is reversed, so "later" is "less").
#[inline]
fn insert_sorted<E>(v: &mut Vec<Entry<E>>, e: Entry<E>) {
    // Most inserts are the new earliest: one comparison with the last entry, no search, no move.
    if v.last().is_none_or(|l| *l < e) {
        v.push(e);
    } else {
        let i = v.partition_point(|x| x < &e);
        v.insert(i, e);
    }
}

impl<E> Store<E> {
    #[inline]
    fn push(&mut self, e: Entry<E>) {
        match self {
            Store::Sorted(v) => {
                insert_sorted(v, e);
                if v.len() > SORTED_MAX {
                    *self = Store::Heap {
                        heap: BinaryHeap::from(std::mem::take(v)),
                        near: Vec::with_capacity(NEAR_MAX + 1),
                    };
                }
            }
            Store::Heap { heap, near } => {
                // Earlier than the heap's top (`Entry`'s order: earlier is greater): in front.
                if heap.peek().is_none_or(|top| e > *top) {
                    insert_sorted(near, e);
                    if near.len() > NEAR_MAX {
                        // The latest of `near` is still earlier than the whole heap: it becomes
                        // the heap's new top, and the invariant holds.
                        heap.push(near.remove(0));
                    }
                } else {
                    heap.push(e);
                }
            }
        }
    }
    #[inline]
    fn peek_key(&self) -> Option<(Time, u64)> {
        match self {
            Store::Sorted(v) => v.last().map(|e| (e.at, e.seq)),
            Store::Heap { heap, near } => near.last().or_else(|| heap.peek()).map(|e| (e.at, e.seq)),
        }
    }
    #[inline]
    fn pop(&mut self) -> Option<Entry<E>> {
        match self {
            Store::Sorted(v) => v.pop(),
            Store::Heap { heap, near } => {
                let e = match near.pop() {
                    Some(e) => Some(e),
                    None => heap.pop(),
                };
                if heap.len() + near.len() < SORTED_MIN {
                    // into_sorted_vec is ascending in `Entry`'s order: latest first; every
                    // `near` entry is earlier than the heap's, so they follow.
                    let mut v = std::mem::take(heap).into_sorted_vec();
                    v.append(near);
                    *self = Store::Sorted(v);
                }
                e
            }
        }
    }
    fn len(&self) -> usize {
        match self {
            Store::Sorted(v) => v.len(),
            Store::Heap { heap, near } => heap.len() + near.len(),
        }
    }
}

pub struct EventQueue<E> {
    heap: Store<E>,
    /// Events at `now`, in insertion order (see the module doc).
    now_fifo: VecDeque<(u64, E)>,
    /// Time of the last event taken (from this queue or an outside source).
    now: Time,
    /// (time, insertion number) of the last event taken.
    last_key: (Time, u64),
    next_seq: u64,
    popped: u64,
}

impl<E> Default for EventQueue<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> EventQueue<E> {
    pub fn new() -> Self {
        Self {
            heap: Store::Sorted(Vec::with_capacity(SORTED_MAX + 1)),
            now_fifo: VecDeque::with_capacity(16),
            now: 0,
            last_key: (0, 0),
            next_seq: 0,
            popped: 0,
        }
    }
    pub fn push(&mut self, at: Time, ev: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        if at == self.now {
            self.now_fifo.push_back((seq, ev));
        } else {
            debug_assert!(at > self.now, "event queued in the past");
            self.heap.push(Entry { at, seq, ev });
        }
    }
    /// Takes the next insertion number without queueing anything: a component that keeps
    /// its own time-ordered FIFO of future events (a link's propagation pipe) numbers each
    /// item when it is created and later queues only its head with
    /// [`push_reserved`](Self::push_reserved), so the global order is exactly what pushing
    /// every item at creation would have given.
    pub fn reserve(&mut self) -> u64 {
        let seq = self.next_seq;
        self.next_seq += 1;
        seq
    }
    /// Queues an event under an insertion number from [`reserve`](Self::reserve). One for the
    /// current instant numbered after every FIFO entry (a timer's read at "now", reserved just
    /// before) joins the FIFO, which stays in insertion order; any other goes to the heap.
    pub fn push_reserved(&mut self, at: Time, seq: u64, ev: E) {
        debug_assert!(seq < self.next_seq);
        if at == self.now && self.now_fifo.back().is_none_or(|&(b, _)| b < seq) {
            self.now_fifo.push_back((seq, ev));
        } else {
            debug_assert!(at >= self.now, "event queued in the past");
            self.heap.push(Entry { at, seq, ev });
        }
    }
    pub fn pop(&mut self) -> Option<(Time, E)> {
        self.pop_before((Time::MAX, u64::MAX))
    }
    /// The next event if its (time, insertion number) is below `bound` (the key of an outside
    /// source's next event, see [`peek_key`](Self::peek_key)); `None` if the queue is empty or
    /// the outside one comes first. One pass instead of a peek and then a pop.
    #[inline]
    pub fn pop_before(&mut self, bound: (Time, u64)) -> Option<(Time, E)> {
        // Every FIFO entry is at `now`, no heap entry is earlier: the FIFO's front goes first
        // unless a heap entry at `now` has a smaller insertion number (a reserved one).
        let heap = self.heap.peek_key();
        if let Some(&(seq, _)) = self.now_fifo.front() {
            let key = (self.now, seq);
            if heap.is_none_or(|h| h > key) {
                if key > bound {
                    return None;
                }
                let (_, ev) = self.now_fifo.pop_front().expect("front exists");
                self.popped += 1;
                self.last_key = key;
                return Some((self.now, ev));
            }
        }
        if heap? > bound {
            return None;
        }
        let e = self.heap.pop().expect("peeked");
        self.popped += 1;
        self.now = e.at;
        self.last_key = (e.at, e.seq);
        Some((e.at, e.ev))
    }
    /// (time, insertion number) of the next event, to merge this queue with an outside
    /// time-ordered source of events numbered by [`reserve`](Self::reserve).
    pub fn peek_key(&self) -> Option<(Time, u64)> {
        let heap = self.heap.peek_key();
        match self.now_fifo.front() {
            Some(&(seq, _)) => Some(heap.map_or((self.now, seq), |h| h.min((self.now, seq)))),
            None => heap,
        }
    }
    /// Counts an event (`at`, `seq`) taken from such an outside source as processed.
    pub fn note_popped(&mut self, at: Time, seq: u64) {
        debug_assert!(at >= self.now && (self.now_fifo.is_empty() || at == self.now));
        self.popped += 1;
        self.now = at;
        self.last_key = (at, seq);
    }
    /// (time, insertion number) of the last event taken: an event with a smaller key would
    /// already have been taken.
    pub fn last_key(&self) -> (Time, u64) {
        self.last_key
    }
    pub fn peek_time(&self) -> Option<Time> {
        self.peek_key().map(|(at, _)| at)
    }
    pub fn len(&self) -> usize {
        self.heap.len() + self.now_fifo.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.len() == 0 && self.now_fifo.is_empty()
    }
    /// Events processed so far (for the benchmark's events/s figure).
    pub fn popped(&self) -> u64 {
        self.popped
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    #[test]
    fn pops_in_time_then_insertion_order() {
        let mut q = EventQueue::new();
        q.push(5, 'a');
        q.push(1, 'b');
        q.push(5, 'c');
        q.push(3, 'd');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['b', 'd', 'a', 'c']);
    }

    #[test]
    fn reserved_numbers_order_like_pushes_at_reservation_time() {
        let mut q = EventQueue::new();
        let r = q.reserve(); // 'x' is created first, queued later
        q.push(5, 'a');
        q.push_reserved(5, r, 'x');
        q.push(5, 'b');
        let order: Vec<char> = std::iter::from_fn(|| q.pop().map(|(_, e)| e)).collect();
        assert_eq!(order, vec!['x', 'a', 'b']);
    }

    /// Past SORTED_MAX future events the queue becomes a heap and below SORTED_MIN sorted again;
    /// the order is a plain (time, seq) sort's throughout, across many switches.
    #[test]
    fn switching_between_sorted_and_heap_keeps_the_order() {
        use rand::{Rng as _, SeedableRng};
        let mut rng = crate::core::rng::Rng::seed_from_u64(11);
        let mut q = EventQueue::new();
        let mut reference: Vec<(Time, u64, u32)> = vec![];
        let (mut now, mut id, mut switches, mut was_heap) = (0, 0u32, 0, false);
        for round in 0..40 {
            // Grow well past SORTED_MAX, then drain well below SORTED_MIN (ties included).
            let target = if round % 2 == 0 { SORTED_MAX * 3 } else { SORTED_MIN / 2 };
            while q.len() != target {
                if q.len() < target {
                    let at = now + rng.gen_range(0..50u64);
                    reference.push((at, q.next_seq, id));
                    q.push(at, id);
                    id += 1;
                } else {
                    let (t, e) = q.pop().expect("not empty");
                    now = t;
                    reference.sort();
                    let (rt, _, rid) = reference.remove(0);
                    assert_eq!((rt, rid), (t, e));
                }
                let is_heap = matches!(q.heap, Store::Heap { .. });
                switches += usize::from(is_heap != was_heap);
                was_heap = is_heap;
            }
        }
        assert!(
            switches >= 30,
            "the test must cross the thresholds ({switches} switches)"
        );
    }

    /// In heap form, a mix of near and far pushes (a link's wake-ups microseconds ahead among
    /// timers milliseconds ahead, ties included) pops in exactly (time, insertion) order, with
    /// `near` filling past NEAR_MAX and spilling into the heap.
    #[test]
    fn the_heap_with_events_in_front_keeps_the_order() {
        use rand::{Rng as _, SeedableRng};
        let mut rng = crate::core::rng::Rng::seed_from_u64(23);
        let mut q = EventQueue::new();
        let mut reference: Vec<(Time, u64, u32)> = vec![];
        let (mut now, mut id, mut spilled, mut max_near) = (0, 0u32, 0usize, 0usize);
        // Timers far ahead: the queue stays a heap.
        for _ in 0..(SORTED_MAX * 4) {
            let at = rng.gen_range(1_000_000..2_000_000u64);
            reference.push((at, q.next_seq, id));
            q.push(at, id);
            id += 1;
        }
        for _ in 0..20_000 {
            if rng.gen_bool(0.55) {
                let at = match rng.gen_range(0..10) {
                    0..=5 => now + rng.gen_range(0..20u64),
                    6..=8 => now + rng.gen_range(0..200u64),
                    _ => now + rng.gen_range(1_000..2_000_000u64),
                };
                reference.push((at, q.next_seq, id));
                let heap_before = match &q.heap {
                    Store::Heap { heap, .. } => heap.len(),
                    Store::Sorted(_) => 0,
                };
                q.push(at, id);
                if let Store::Heap { heap, near } = &q.heap {
                    max_near = max_near.max(near.len());
                    spilled += usize::from(heap.len() > heap_before && at < now + 200);
                }
                id += 1;
            } else if let Some((t, e)) = q.pop() {
                now = t;
                reference.sort();
                let (rt, _, rid) = reference.remove(0);
                assert_eq!((rt, rid), (t, e));
            }
        }
        while let Some((t, e)) = q.pop() {
            reference.sort();
            let (rt, _, rid) = reference.remove(0);
            assert_eq!((rt, rid), (t, e));
        }
        assert!(reference.is_empty());
        assert!(
            max_near == NEAR_MAX && spilled > 0,
            "near filled to {max_near}, {spilled} spills"
        );
    }

    /// Events pushed for the current instant (the FIFO) interleave with heap events at that
    /// instant, reserved numbers and later events exactly as in a plain (time, seq) heap.
    #[test]
    fn same_instant_events_keep_the_heap_order() {
        use rand::{Rng as _, SeedableRng};
        // Reference: sort by (time, seq) what a plain heap would hold.
        let mut rng = crate::core::rng::Rng::seed_from_u64(7);
        for _ in 0..200 {
            let mut q = EventQueue::new();
            let mut reference: Vec<(Time, u64, u32)> = vec![];
            let mut reserved: Vec<u64> = vec![];
            let mut id = 0u32;
            let mut now = 0;
            for _ in 0..60 {
                match rng.gen_range(0..5) {
                    0 | 1 => {
                        // push at now or later
                        let at = now + rng.gen_range(0..3u64);
                        reference.push((at, q.next_seq, id));
                        q.push(at, id);
                        id += 1;
                    }
                    2 => reserved.push(q.reserve()),
                    3 if !reserved.is_empty() => {
                        let seq = reserved.remove(0);
                        let at = now + rng.gen_range(0..2u64);
                        reference.push((at, seq, id));
                        q.push_reserved(at, seq, id);
                        id += 1;
                    }
                    _ => {
                        if let Some((t, e)) = q.pop() {
                            now = t;
                            reference.sort();
                            let (rt, _, rid) = reference.remove(0);
                            assert_eq!((rt, rid), (t, e));
                        }
                    }
                }
            }
            while let Some((t, e)) = q.pop() {
                reference.sort();
                let (rt, _, rid) = reference.remove(0);
                assert_eq!((rt, rid), (t, e));
            }
            assert!(reference.is_empty() && q.is_empty());
        }
    }
}
