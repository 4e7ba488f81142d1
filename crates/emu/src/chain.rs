//! A path direction made of several links in series, as the simulator chains a path's links:
//! a frame leaving link *i* (its arrival time at the far end of link *i*) enters link *i + 1*
//! at that same model time.
//!
//! Exactness: internal hand-overs happen in model-time order (the earliest pending event of any
//! stage first), so every link sees non-decreasing times, whatever the real-time loop's jitter.
//! A hand-over is processed at its *model* time, never at the (later) real time the loop noticed
//! it, so chaining adds no timing error; only the final release to the TUN device can be late.
use crate::line::Line;
use mobipath_sim::core::Time;
use mobipath_sim::link::LinkDir;

pub struct Chain {
    stages: Vec<Line>,
}

impl Chain {
    /// Links in order from the input side to the output side (at least one).
    pub fn new(links: Vec<LinkDir>) -> Chain {
        assert!(!links.is_empty(), "a chain needs at least one link");
        Chain {
            stages: links.into_iter().map(Line::new).collect(),
        }
    }

    pub fn stages(&self) -> &[Line] {
        &self.stages
    }

    /// A frame arrives at the first link's input at `now`; false if that link dropped it.
    pub fn offer(&mut self, now: Time, frame: Vec<u8>) -> bool {
        self.settle(now);
        self.stages[0].offer(now, frame)
    }

    /// Runs every internal event due by `now` in time order; frames reaching the end of the
    /// last link wait in its delay line for [`Chain::pop_due`].
    pub fn advance(&mut self, now: Time) {
        self.settle(now);
        let last = self.stages.len() - 1;
        self.stages[last].advance(now);
    }

    fn settle(&mut self, now: Time) {
        let n = self.stages.len();
        if n == 1 {
            self.stages[0].advance(now);
            return;
        }
        loop {
            // The earliest internal event: a departure inside any link, or an arrival at the end
            // of a link that is not the last (the last one's arrivals are releases).
            let mut best: Option<(Time, usize)> = None;
            for (i, s) in self.stages.iter().enumerate() {
                let t = if i + 1 < n {
                    s.next_event()
                } else {
                    s.link.next_wakeup()
                };
                if let Some(t) = t.filter(|&t| t <= now) {
                    if best.is_none_or(|(b, _)| t < b) {
                        best = Some((t, i));
                    }
                }
            }
            let Some((t, i)) = best else { break };
            self.stages[i].advance(t);
            if i + 1 < n {
                while let Some((at, frame)) = self.stages[i].pop_due(t) {
                    self.stages[i + 1].advance(at);
                    self.stages[i + 1].offer(at, frame);
                }
            }
        }
    }

    /// The earliest time something must happen anywhere in the chain.
    pub fn next_event(&self) -> Option<Time> {
        self.stages.iter().filter_map(Line::next_event).min()
    }

    /// The next frame due at the output by `now`, with its intended arrival time.
    pub fn pop_due(&mut self, now: Time) -> Option<(Time, Vec<u8>)> {
        self.stages.last_mut().expect("non-empty").pop_due(now)
    }

    /// Frames inside the chain (queued or propagating).
    pub fn held(&self) -> usize {
        self.stages.iter().map(Line::held).sum()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn drain(c: &mut Chain) -> Vec<(Time, u8)> {
        let mut got = Vec::new();
        while let Some(t) = c.next_event() {
            c.advance(t);
            while let Some((at, f)) = c.pop_due(t) {
                got.push((at, f[0]));
            }
        }
        got
    }

    #[test]
    fn one_link_chain_is_the_link() {
        let mut c = Chain::new(vec![LinkDir::constant(12.0, 10.0, 100)]);
        for i in 0..3 {
            assert!(c.offer(0, vec![i; 1500]));
        }
        assert_eq!(
            drain(&mut c),
            vec![(11_000_000, 0), (12_000_000, 1), (13_000_000, 2)]
        );
        assert_eq!(c.held(), 0);
    }

    #[test]
    fn two_links_add_delays_and_the_slower_rate_paces() {
        // 12 Mbit/s + 5 ms, then 6 Mbit/s + 10 ms: a 1500-B frame takes 1 ms, then 2 ms.
        let mut c = Chain::new(vec![
            LinkDir::constant(12.0, 5.0, 100),
            LinkDir::constant(6.0, 10.0, 100),
        ]);
        for i in 0..3 {
            assert!(c.offer(0, vec![i; 1500]));
        }
        // Frame 0: 1 + 5 = 6 ms into link 2, + 2 + 10 = 18 ms. Frame 1 enters at 7 ms but link 2
        // is busy until 8 ms: 8 + 2 + 10 = 20 ms. Frame 2: 22 ms.
        assert_eq!(
            drain(&mut c),
            vec![(18_000_000, 0), (20_000_000, 1), (22_000_000, 2)]
        );
    }

    #[test]
    fn late_polling_does_not_shift_model_times() {
        let mut c = Chain::new(vec![
            LinkDir::constant(12.0, 5.0, 100),
            LinkDir::constant(6.0, 10.0, 100),
        ]);
        for i in 0..3 {
            assert!(c.offer(0, vec![i; 1500]));
        }
        // Nobody looks until 100 ms: the chain still computes the same arrival times.
        c.advance(100_000_000);
        let mut got = Vec::new();
        while let Some((at, f)) = c.pop_due(100_000_000) {
            got.push((at, f[0]));
        }
        assert_eq!(
            got,
            vec![(18_000_000, 0), (20_000_000, 1), (22_000_000, 2)]
        );
    }

    #[test]
    fn a_full_second_link_drops_there() {
        let mut c = Chain::new(vec![
            LinkDir::constant(100.0, 0.0, 100),
            LinkDir::constant(1.0, 0.0, 2),
        ]);
        for i in 0..10 {
            assert!(c.offer(0, vec![i; 1500]), "the fast first link takes all");
        }
        let got = drain(&mut c);
        assert!(got.len() < 10, "{got:?}");
        assert!(c.stages()[1].link.stats().drops_queue > 0);
        assert_eq!(c.held(), 0);
    }
}
