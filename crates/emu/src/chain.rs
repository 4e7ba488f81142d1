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

    pub fn stages_mut(&mut self) -> &mut [Line] {
        &mut self.stages
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

    /// A lower bound on the next release at the output (`None` if the chain is empty): for each
    /// link, its next arrival bound ([`Line::next_arrival_bound`]) plus the delays of the links
    /// after it (a frame entering a link at `t` arrives at its far end at `t + delay` at the
    /// earliest). Waking at this time instead of [`Chain::next_event`] skips the wake-ups for
    /// departures and hand-overs, which [`Chain::advance`] applies at their model times anyway:
    /// the releases are the same, with fewer passes of the loop.
    pub fn next_release_bound(&self) -> Option<Time> {
        let mut best: Option<Time> = None;
        let mut downstream: Time = 0;
        for s in self.stages.iter().rev() {
            if let Some(t) = s.next_arrival_bound() {
                let t = t.saturating_add(downstream);
                best = Some(best.map_or(t, |b| b.min(t)));
            }
            downstream = downstream.saturating_add(s.link.delay());
        }
        best
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
        assert_eq!(drain(&mut c), vec![(11_000_000, 0), (12_000_000, 1), (13_000_000, 2)]);
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
        assert_eq!(drain(&mut c), vec![(18_000_000, 0), (20_000_000, 1), (22_000_000, 2)]);
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
        assert_eq!(got, vec![(18_000_000, 0), (20_000_000, 1), (22_000_000, 2)]);
    }

    /// Driving a chain by waking only at `next_release_bound` releases exactly what waking at
    /// every internal event releases (same frames, same model times), with fewer wake-ups, and
    /// the bound never passes a release. Three links with loss and reordering, frames offered at
    /// irregular times between the wake-ups.
    #[test]
    fn waking_at_the_release_bound_releases_the_same_frames_at_the_same_times() {
        use mobipath_sim::core::RngStreams;
        use mobipath_sim::link::LinkConfig;
        let build = || {
            let mk = |j: &str| {
                let cfg: LinkConfig = serde_json::from_str(j).unwrap();
                cfg.build(std::path::Path::new("."), &RngStreams::new(5)).unwrap().0
            };
            Chain::new(vec![
                mk(r#"{"name": "a", "delay_ms": 2, "rate_mbps": 50, "loss": {"model": "bernoulli", "p": 0.1}}"#),
                mk(r#"{"name": "b", "delay_ms": 0, "rate_mbps": 20, "queue_packets": 30}"#),
                mk(r#"{"name": "c", "delay_ms": 3, "rate_mbps": 40, "reorder": {"p": 0.2, "extra_delay_ms": 1}}"#),
            ])
        };
        // Offers: 400 frames of varying size at pseudo-random times over ~100 ms.
        let mut offers = Vec::new();
        let (mut t, mut x) = (0u64, 12345u64);
        for i in 0..400u32 {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            t += x % 500_000;
            let mut f = vec![0u8; 100 + (x % 1400) as usize];
            f[..4].copy_from_slice(&i.to_be_bytes());
            offers.push((t, f));
        }
        let drive = |lazy: bool| {
            let mut c = build();
            let (mut got, mut wakes, mut k) = (Vec::new(), 0, 0);
            loop {
                let next = if lazy { c.next_release_bound() } else { c.next_event() };
                let off = offers.get(k).map(|o| o.0);
                let now = match (next, off) {
                    (None, None) => break,
                    (a, b) => a.unwrap_or(u64::MAX).min(b.unwrap_or(u64::MAX)),
                };
                wakes += 1;
                c.advance(now);
                while let Some((at, f)) = c.pop_due(now) {
                    if lazy {
                        assert!(at >= now, "a release due at {at} was only found at {now}");
                    }
                    got.push((at, u32::from_be_bytes(f[..4].try_into().unwrap())));
                }
                while k < offers.len() && offers[k].0 <= now {
                    c.offer(now, offers[k].1.clone());
                    k += 1;
                }
            }
            (got, wakes, c.held())
        };
        let (eager, eager_wakes, held_e) = drive(false);
        let (lazy, lazy_wakes, held_l) = drive(true);
        assert!(eager.len() > 250, "most frames arrive: {}", eager.len());
        assert_eq!(lazy, eager);
        assert_eq!((held_e, held_l), (0, 0));
        assert!(
            lazy_wakes * 10 < eager_wakes * 7,
            "wake-ups: {lazy_wakes} lazy vs {eager_wakes}"
        );
    }

    #[test]
    fn a_full_second_link_drops_there() {
        let mut c = Chain::new(vec![LinkDir::constant(100.0, 0.0, 100), LinkDir::constant(1.0, 0.0, 2)]);
        for i in 0..10 {
            assert!(c.offer(0, vec![i; 1500]), "the fast first link takes all");
        }
        let got = drain(&mut c);
        assert!(got.len() < 10, "{got:?}");
        assert!(c.stages()[1].link.stats().drops_queue > 0);
        assert_eq!(c.held(), 0);
    }
}
