//! `delay-every-nth`: a toy element that holds every n-th packet crossing its node (counted per
//! direction) for a fixed time and forwards the others at once, so later packets overtake the
//! held one. It exists to exercise the element interface (hold, timer, forward) and the
//! transports' reordering tolerance; it models nothing real.
use super::{Element, ElementOut};
use crate::core::time::{Time, NEVER};
use crate::packet::Pkt;
use std::collections::VecDeque;

pub struct DelayEveryNth {
    n: u64,
    delay: Time,
    /// Packets seen per direction (0 = the data direction of the route, 1 = the reverse).
    seen: [u64; 2],
    /// Held packets in release order (the delay is constant, so arrival order is release order).
    held: VecDeque<(Time, Pkt)>,
    delayed: u64,
    forwarded: u64,
}

impl DelayEveryNth {
    pub fn new(n: u64, delay: Time) -> Self {
        DelayEveryNth {
            n: n.max(1),
            delay,
            seen: [0; 2],
            held: VecDeque::new(),
            delayed: 0,
            forwarded: 0,
        }
    }
}

impl Element for DelayEveryNth {
    fn kind(&self) -> &'static str {
        "delay-every-nth"
    }

    fn on_packet(&mut self, now: Time, p: Pkt, reverse: bool, out: &mut ElementOut) {
        let dir = usize::from(reverse);
        self.seen[dir] += 1;
        if self.seen[dir].is_multiple_of(self.n) && self.delay > 0 {
            self.delayed += 1;
            self.held.push_back((now + self.delay, p));
        } else {
            self.forwarded += 1;
            out.forward.push(p);
        }
    }

    fn on_timer(&mut self, now: Time, out: &mut ElementOut) {
        while self.held.front().is_some_and(|&(t, _)| t <= now) {
            let (_, p) = self.held.pop_front().expect("front exists");
            self.forwarded += 1;
            out.forward.push(p);
        }
    }

    fn next_timer(&self) -> Time {
        self.held.front().map_or(NEVER, |&(t, _)| t)
    }

    fn summary(&self) -> serde_json::Value {
        serde_json::json!({ "kind": self.kind(), "delayed": self.delayed, "forwarded": self.forwarded, "held_at_end": self.held.len() })
    }
}
