//! The event queue: a binary min-heap keyed by (time, insertion order).
//!
//! Ties at the same nanosecond are broken by insertion order, which makes the
//! event order — and so every result — deterministic.
use super::time::Time;
use std::cmp::Ordering;
use std::collections::BinaryHeap;

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

pub struct EventQueue<E> {
    heap: BinaryHeap<Entry<E>>,
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
        Self { heap: BinaryHeap::with_capacity(1024), next_seq: 0, popped: 0 }
    }
    pub fn push(&mut self, at: Time, ev: E) {
        let seq = self.next_seq;
        self.next_seq += 1;
        self.heap.push(Entry { at, seq, ev });
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
    /// Queues an event under an insertion number from [`reserve`](Self::reserve).
    pub fn push_reserved(&mut self, at: Time, seq: u64, ev: E) {
        debug_assert!(seq < self.next_seq);
        self.heap.push(Entry { at, seq, ev });
    }
    pub fn pop(&mut self) -> Option<(Time, E)> {
        let e = self.heap.pop()?;
        self.popped += 1;
        Some((e.at, e.ev))
    }
    /// (time, insertion number) of the next event, to merge this queue with an outside
    /// time-ordered source of events numbered by [`reserve`](Self::reserve).
    pub fn peek_key(&self) -> Option<(Time, u64)> {
        self.heap.peek().map(|e| (e.at, e.seq))
    }
    /// Counts an event taken from such an outside source as processed.
    pub fn note_popped(&mut self) {
        self.popped += 1;
    }
    pub fn peek_time(&self) -> Option<Time> {
        self.heap.peek().map(|e| e.at)
    }
    pub fn len(&self) -> usize {
        self.heap.len()
    }
    pub fn is_empty(&self) -> bool {
        self.heap.is_empty()
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
}
