//! An endpoint's lazy timer whose stale events are never queued.
//!
//! The engine's timers are lazy: the owner asks for a time, an event is queued only when that
//! time is earlier than the one asked for before, and an event that fires at a time its owner no
//! longer wants is skipped. A TCP receiver that ACKs on read asks for "now" at every arrival
//! (the application's read), which consumes the timer, and then for its delayed-ACK deadline
//! again: about one queued event per packet pair that can only fire stale, a binary-heap push
//! and pop each.
//!
//! [`LazyTimer`] keeps exactly that plain timer's semantics and event order, but queues only the
//! events that can fire. Every event the plain timer would queue takes its insertion number at
//! that moment ([`EventQueue::reserve`]) and is kept in a list (`held`); it goes into the event
//! queue ([`EventQueue::push_reserved`]) only when it is the one that fires at the wanted time:
//! the first (lowest insertion number) held or queued event at that time, as the plain timer's
//! first event at a time is the one that finds the time still wanted. A held event whose time
//! passes is dropped: the plain timer would have skipped it. So results are identical; only the
//! count of processed events falls by the skipped ones.
//!
//! Why the numbers must be the reserved ones: a delayed-ACK deadline is an arrival plus exactly
//! 40 ms, and arrivals lie on grids (a cell's 1 ms TTIs plus a wired link's serialization), so a
//! deadline often ties with another flow's arrival. Queued under a fresh number when an earlier
//! event of the timer fires stale, the deadline would come after that arrival instead of before
//! it: P4's mixed-UE cell results move (a tried "read as its own event" did this; traced on
//! `p4/mixed-pf-bsr-drop`, the first divergence is flow 3's delayed ACK at 568.036288 ms, due
//! from its arrival at 528.036288 ms, going after flow 6's arrival at the same nanosecond).
//!
//! The usual request, "now" (the read at the end of an arrival instant) while nothing of this
//! timer is held or queued at or before now, is queued with a plain push (the queue's FIFO for
//! the current instant) and marked in `now_slot` instead of the sorted lists: it is the event
//! that fires, the next of this timer to fire.
use crate::core::time::{Time, NEVER};
use crate::core::EventQueue;
use std::collections::VecDeque;

#[derive(Debug)]
pub struct LazyTimer {
    /// The time the owner wants (`NEVER`: none).
    at: Time,
    /// Events the plain timer would have queued, not queued: (time, insertion number), sorted.
    held: VecDeque<(Time, u64)>,
    /// This timer's events in the event queue, sorted (the queue pops them in this order),
    /// except the one in `now_slot`.
    queued: VecDeque<(Time, u64)>,
    /// An event for the current instant is queued, not in `queued`: the one that fires at `at`
    /// (= its time). The usual case, an application's read at the end of an arrival instant,
    /// so it skips the bookkeeping of `queued` (see [`LazyTimer::arm`]).
    now_slot: bool,
}

impl Default for LazyTimer {
    fn default() -> Self {
        Self {
            at: NEVER,
            held: VecDeque::new(),
            queued: VecDeque::new(),
            now_slot: false,
        }
    }
}

/// The first entry at time `t` (index and key), if any; O(1) when `t` lies outside the range.
fn first_of(v: &VecDeque<(Time, u64)>, t: Time) -> Option<(usize, (Time, u64))> {
    match (v.front(), v.back()) {
        (Some(f), Some(b)) if f.0 <= t && t <= b.0 => {
            let i = v.partition_point(|&(vt, _)| vt < t);
            v.get(i).filter(|&&(vt, _)| vt == t).map(|&k| (i, k))
        }
        _ => None,
    }
}

fn insert_sorted(v: &mut VecDeque<(Time, u64)>, key: (Time, u64)) {
    if v.back().is_none_or(|&b| b < key) {
        v.push_back(key);
    } else if v.front().is_some_and(|&f| key < f) {
        v.push_front(key);
    } else {
        let i = v.partition_point(|&e| e < key);
        v.insert(i, key);
    }
}

impl LazyTimer {
    /// The owner wants to run at `t` (at `now` if `t` is past). Queues `ev()` when needed.
    pub fn arm<E>(&mut self, t: Time, now: Time, q: &mut EventQueue<E>, ev: impl FnOnce() -> E) {
        if t >= self.at {
            return;
        }
        let t = t.max(now);
        self.at = t;
        // Held events the queue has passed would have fired (stale) already.
        let passed = q.last_key();
        while self.held.front().is_some_and(|&h| h < passed) {
            self.held.pop_front();
        }
        // Fastest path (the usual case: the application's read at the end of an arrival
        // instant): no event of this timer held or queued at or before `now`. The new one comes
        // before all of them, so it fires; until it does, nothing earlier can be asked for and
        // nothing else of this timer is queued at `now` (see `fire`). A plain push takes the
        // number `reserve` would give, and the queue's FIFO keeps it cheap.
        if t == now && self.held.front().is_none_or(|h| h.0 > t) && self.queued.front().is_none_or(|f| f.0 > t) {
            q.push(t, ev());
            self.now_slot = true;
            return;
        }
        // Fast path (no other event of this timer at `t`): the new one fires, queued now unless
        // an earlier queued event of this timer comes first.
        if first_of(&self.held, t).is_none() && first_of(&self.queued, t).is_none() {
            let new = (t, q.reserve());
            if self.queued.front().is_none_or(|&qf| qf > new) {
                q.push_reserved(t, new.1, ev());
                insert_sorted(&mut self.queued, new);
            } else {
                insert_sorted(&mut self.held, new);
            }
            return;
        }
        insert_sorted(&mut self.held, (t, q.reserve()));
        self.queue_the_firing_one(q, ev);
    }

    /// One of this timer's queued events fires at `t`: true if the owner still wants `t` (the
    /// timer is consumed; the owner re-arms), false for a stale event.
    pub fn fire<E>(&mut self, t: Time, q: &mut EventQueue<E>, ev: impl FnOnce() -> E) -> bool {
        if self.now_slot {
            // While it is queued `at` stays at its time (nothing earlier can be asked for) and
            // no other event of this timer is queued at that time, so this is the one. Held
            // events it passes are dropped by the next `arm`.
            debug_assert_eq!(self.at, t);
            self.now_slot = false;
            self.at = NEVER;
            return true;
        }
        let key = self
            .queued
            .pop_front()
            .expect("a timer event fired that was not queued");
        debug_assert_eq!(key.0, t);
        // Held events up to this one would have fired stale.
        while self.held.front().is_some_and(|&h| h <= key) {
            self.held.pop_front();
        }
        if self.at == t {
            self.at = NEVER;
            return true;
        }
        self.queue_the_firing_one(q, ev);
        false
    }

    /// Keeps the invariant: the event that will fire at `at` — the first held or queued one at
    /// that time — is queued, or is held behind a queued event of this timer that comes before
    /// it (which, firing stale, queues it then: under the number it was given when asked for,
    /// so the order is as if it had been queued at once).
    fn queue_the_firing_one<E>(&mut self, q: &mut EventQueue<E>, ev: impl FnOnce() -> E) {
        let t = self.at;
        if t == NEVER {
            return;
        }
        let Some((hi, h)) = first_of(&self.held, t) else { return };
        if first_of(&self.queued, t).is_some_and(|(_, qf)| qf < h) {
            return; // a queued event at `t` comes first and fires
        }
        if self.queued.front().is_some_and(|&qf| qf < h) {
            return; // held behind an earlier queued event of this timer
        }
        self.held.remove(hi);
        q.push_reserved(t, h.1, ev());
        insert_sorted(&mut self.queued, h);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::{Rng as _, SeedableRng};

    /// Both timers driven by the same random requests, each with its own event queue shared
    /// with other events: the owner must run at the same times and between the same other
    /// events in both, and the lazy one's queue must never process more events.
    #[test]
    fn fires_exactly_when_the_plain_lazy_timer_does() {
        const TIMER: u32 = u32::MAX;
        let mut rng = crate::core::rng::Rng::seed_from_u64(11);
        let mut skipped = 0;
        for round in 0..300 {
            let (mut qa, mut qb) = (EventQueue::<u32>::new(), EventQueue::<u32>::new());
            let mut plain_at = NEVER;
            let mut lazy = LazyTimer::default();
            let (mut runs_a, mut runs_b) = (vec![], vec![]);
            let mut id = 0;
            for _ in 0..40 {
                let at = rng.gen_range(0..4u64);
                qa.push(at, id);
                qb.push(at, id);
                id += 1;
            }
            // (last other event seen, time) of every run of the owner.
            let (mut last_a, mut last_b) = (None, None);
            loop {
                // Each queue up to its next other event, running the owner where its timer fires.
                let a = loop {
                    match qa.pop() {
                        Some((t, TIMER)) => {
                            if plain_at == t {
                                plain_at = NEVER;
                                runs_a.push((last_a, t));
                            }
                        }
                        other => break other,
                    }
                };
                let b = loop {
                    match qb.pop() {
                        Some((t, TIMER)) => {
                            if lazy.fire(t, &mut qb, || TIMER) {
                                runs_b.push((last_b, t));
                            }
                        }
                        other => break other,
                    }
                };
                assert_eq!(a, b, "round {round}: other events out of step");
                let Some((now, other)) = a else { break };
                (last_a, last_b) = (Some(other), Some(other));
                // The owner asks for 0-2 times around now, as an endpoint does after an event.
                for _ in 0..rng.gen_range(0..3) {
                    let want = now + [0, 0, 1, 2, 5][rng.gen_range(0..5)];
                    if want < plain_at {
                        plain_at = want;
                        qa.push(want, TIMER);
                    }
                    lazy.arm(want, now, &mut qb, || TIMER);
                }
                if rng.gen_bool(0.3) {
                    let at = now + rng.gen_range(0..4u64);
                    qa.push(at, id);
                    qb.push(at, id);
                    id += 1;
                }
            }
            // The plain timer's last wish may be left pending in both.
            assert_eq!(runs_a, runs_b, "round {round}");
            assert!(qb.popped() <= qa.popped());
            skipped += qa.popped() - qb.popped();
        }
        assert!(skipped > 100, "the lazy timer skipped only {skipped} stale events");
    }
}
