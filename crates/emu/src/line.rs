//! One direction's model-side bookkeeping: a [`LinkDir`] (the simulator's link model), the raw
//! frames of the packets inside it, and the delay line of packets propagating to the far end.
//!
//! The model works on [`Packet`]s; the frame bytes stay here, in a FIFO beside the model. The
//! link is FIFO (drop-tail queue, one transmitter), so packets leave it in the order they were
//! accepted; a packet that leaves but is not handed back by `wake` was lost on the wire, and a
//! "drop" outage flushes from the front. So after each `wake` the frames of everything that left
//! are the oldest `side.len() - queue_packets` entries, and the delivered packets are matched to
//! them by id in one merge walk.
//!
//! Sizes: a TUN frame is an IP packet, exactly what the simulator calls `wire_bytes()` (IP + TCP
//! headers + payload), so `Packet.len = frame_len - HEADER_BYTES`. Frames shorter than 52 bytes
//! (bare 40-byte ACKs without timestamps, small ICMP) are counted as 52 bytes by the model — a
//! ≤ 12-byte overestimate, documented deviation.
use crate::capture::LineTap;
use mobipath_sim::core::Time;
use mobipath_sim::link::{DropCause, LinkDir};
use mobipath_sim::packet::{Packet, PacketKind, HEADER_BYTES};
use std::cmp::Reverse;
use std::collections::{BinaryHeap, VecDeque};

/// A packet on its way to the far end: due at `at` (ns since the emulator started).
#[derive(Debug)]
struct InFlight {
    at: Time,
    seq: u64,
    frame: Vec<u8>,
}
impl PartialEq for InFlight {
    fn eq(&self, o: &Self) -> bool {
        (self.at, self.seq) == (o.at, o.seq)
    }
}
impl Eq for InFlight {}
impl PartialOrd for InFlight {
    fn partial_cmp(&self, o: &Self) -> Option<std::cmp::Ordering> {
        Some(self.cmp(o))
    }
}
impl Ord for InFlight {
    fn cmp(&self, o: &Self) -> std::cmp::Ordering {
        (self.at, self.seq).cmp(&(o.at, o.seq))
    }
}

/// A link direction carrying raw frames.
pub struct Line {
    pub link: LinkDir,
    /// Frames of the packets inside `link` (accepted, not yet departed), oldest first.
    side: VecDeque<(u64, Vec<u8>)>,
    /// Packets propagating, earliest arrival first (ties in departure order).
    wire: BinaryHeap<Reverse<InFlight>>,
    next_id: u64,
    out: Vec<(Time, Packet)>,
    gone: Vec<(u64, Vec<u8>)>,
    /// Packet capture of this direction (`crate::capture`), if asked for.
    tap: Option<Box<LineTap>>,
    /// With a tap: the model's internal drops since the last resync, (packet id, cause).
    drop_causes: Vec<(u64, DropCause)>,
}

impl Line {
    pub fn new(link: LinkDir) -> Line {
        Line {
            link,
            side: VecDeque::new(),
            wire: BinaryHeap::new(),
            next_id: 0,
            out: Vec::new(),
            gone: Vec::new(),
            tap: None,
            drop_causes: Vec::new(),
        }
    }

    /// Captures this direction from now on.
    pub fn set_tap(&mut self, tap: LineTap) {
        self.link.keep_drops();
        self.tap = Some(Box::new(tap));
    }

    pub fn tap_mut(&mut self) -> Option<&mut LineTap> {
        self.tap.as_deref_mut()
    }

    /// A frame arrives at the link's input at `now`; false if the model dropped it (queue full
    /// or a "drop" outage).
    pub fn offer(&mut self, now: Time, frame: Vec<u8>) -> bool {
        let mut p = Packet::new(PacketKind::Data);
        p.id = self.next_id;
        self.next_id += 1;
        p.len = (frame.len() as u32).saturating_sub(HEADER_BYTES);
        // A "drop" outage flush that is due is applied inside enqueue: resync first.
        match self.link.enqueue_with_cause(now, p) {
            Ok(()) => {
                self.side.push_back((self.next_id - 1, frame));
                self.resync(now);
                true
            }
            Err((_, cause)) => {
                if let Some(t) = self.tap.as_deref_mut() {
                    t.dropped(now, &frame, cause);
                }
                self.resync(now);
                false
            }
        }
    }

    /// Advances the model to `now`: packets whose transmission ended go onto the wire.
    pub fn advance(&mut self, now: Time) {
        if self.link.next_wakeup().is_some_and(|t| t <= now) {
            self.link.wake(now, &mut self.out);
        }
        self.resync(now);
    }

    /// Moves frames that left the model (delivered, lost or flushed) off the side table; the
    /// delivered ones go onto the wire.
    fn resync(&mut self, now: Time) {
        let inside = self.link.stats().queue_packets as usize;
        // The newest frame may not be in the model yet when called from `offer`'s error path;
        // `side` only holds accepted frames, so this is exact.
        let n_gone = self.side.len().saturating_sub(inside);
        if n_gone == 0 && self.out.is_empty() {
            return;
        }
        self.gone.clear();
        self.gone.extend(self.side.drain(..n_gone));
        let mut g = 0;
        let tapped = self.tap.is_some();
        for (at, p) in self.out.drain(..) {
            while g < self.gone.len() && self.gone[g].0 < p.id {
                g += 1; // lost on the wire or flushed
            }
            if g < self.gone.len() && self.gone[g].0 == p.id {
                let frame = std::mem::take(&mut self.gone[g].1);
                self.wire.push(Reverse(InFlight { at, seq: p.id, frame }));
                if tapped {
                    self.gone[g].0 = u64::MAX; // delivered: not a drop
                }
                g += 1;
            } else {
                debug_assert!(false, "delivered packet {} has no frame", p.id);
            }
        }
        if let Some(tap) = self.tap.as_deref_mut() {
            // What left without being delivered was dropped inside the model; the model says why.
            let causes = &mut self.drop_causes;
            self.link.drain_drops(|p, c| causes.push((p.id, c)));
            for (id, frame) in &self.gone {
                if *id == u64::MAX {
                    continue;
                }
                let cause = causes
                    .iter()
                    .find(|(i, _)| i == id)
                    .map_or(DropCause::Loss, |&(_, c)| c);
                tap.dropped(now, frame, cause);
            }
            causes.retain(|(i, _)| self.gone.iter().all(|(g, _)| g != i));
        }
    }

    /// The earliest time something must happen: a departure in the model or an arrival at the
    /// far end.
    pub fn next_event(&self) -> Option<Time> {
        let w = self.wire.peek().map(|Reverse(f)| f.at);
        match (self.link.next_wakeup(), w) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// A lower bound on the next arrival at the far end (`None` if the line is empty): the
    /// earliest frame propagating, or the next departure plus the propagation delay — every
    /// arrival is at least its departure plus [`LinkDir::delay`] (reorder and retransmission
    /// only add to it), and later departures are later. The forwarding loop need not wake for a
    /// departure itself: [`Line::advance`] applies every departure due by `now` at its model
    /// time, however late it is called.
    pub fn next_arrival_bound(&self) -> Option<Time> {
        let w = self.wire.peek().map(|Reverse(f)| f.at);
        let d = self.link.next_wakeup().map(|t| t.saturating_add(self.link.delay()));
        match (w, d) {
            (Some(a), Some(b)) => Some(a.min(b)),
            (a, b) => a.or(b),
        }
    }

    /// Pops the next frame due at or before `now`, with its intended arrival time.
    pub fn pop_due(&mut self, now: Time) -> Option<(Time, Vec<u8>)> {
        if self.wire.peek().is_some_and(|Reverse(f)| f.at <= now) {
            let Reverse(f) = self.wire.pop()?;
            if let Some(t) = self.tap.as_deref_mut() {
                t.delivered(f.at, &f.frame);
            }
            return Some((f.at, f.frame));
        }
        None
    }

    /// Frames held (queued in the model + propagating).
    pub fn held(&self) -> usize {
        self.side.len() + self.wire.len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use mobipath_sim::core::RngStreams;
    use mobipath_sim::link::LinkConfig;

    fn frame(n: usize, tag: u8) -> Vec<u8> {
        vec![tag; n]
    }

    #[test]
    fn delivers_at_serialization_plus_delay_in_order() {
        // 12 Mbit/s: a 1500-byte frame takes 1 ms; delay 10 ms.
        let mut l = Line::new(LinkDir::constant(12.0, 10.0, 100));
        for i in 0..3 {
            assert!(l.offer(0, frame(1500, i)));
        }
        assert_eq!(l.next_event(), Some(1_000_000));
        let mut got = Vec::new();
        let mut now = 0;
        while let Some(t) = l.next_event() {
            now = t;
            l.advance(now);
            while let Some((at, f)) = l.pop_due(now) {
                got.push((at, f[0], f.len()));
            }
        }
        assert_eq!(
            got,
            vec![(11_000_000, 0, 1500), (12_000_000, 1, 1500), (13_000_000, 2, 1500)]
        );
        assert_eq!(now, 13_000_000);
        assert_eq!(l.held(), 0);
    }

    #[test]
    fn drop_tail_refuses_and_forgets_frames() {
        let mut l = Line::new(LinkDir::constant(12.0, 0.0, 2));
        assert!(l.offer(0, frame(1500, 0)));
        assert!(l.offer(0, frame(1500, 1)));
        assert!(!l.offer(0, frame(1500, 2)));
        assert_eq!(l.held(), 2);
        assert_eq!(l.link.stats().drops_queue, 1);
    }

    #[test]
    fn lost_packets_free_their_frames_and_the_rest_match() {
        let cfg: LinkConfig = serde_json::from_str(
            r#"{"name": "l", "delay_ms": 1, "rate_mbps": 100, "loss": {"model": "bernoulli", "p": 0.3}}"#,
        )
        .unwrap();
        let r = RngStreams::new(3);
        let (f, _) = cfg.build(std::path::Path::new("."), &r).unwrap();
        let mut l = Line::new(f);
        let n = 2000u32;
        let mut delivered = Vec::new();
        let mut now = 0;
        for i in 0..n {
            let mut fr = frame(200, 0);
            fr[..4].copy_from_slice(&i.to_be_bytes());
            l.offer(now, fr);
            now += 20_000; // 200 B at 100 Mbit/s = 16 µs: never queues much
            l.advance(now);
            while let Some((_, f)) = l.pop_due(now) {
                delivered.push(u32::from_be_bytes(f[..4].try_into().unwrap()));
            }
        }
        now += 1_000_000_000;
        l.advance(now);
        while let Some((_, f)) = l.pop_due(now) {
            delivered.push(u32::from_be_bytes(f[..4].try_into().unwrap()));
        }
        let st = l.link.stats();
        assert_eq!(delivered.len() as u64, st.delivered_packets);
        assert_eq!(st.delivered_packets + st.drops_loss, n as u64);
        assert!(delivered.windows(2).all(|w| w[0] < w[1]), "in order, no duplicates");
        assert_eq!(l.held(), 0, "lost frames were freed");
        let loss = st.drops_loss as f64 / n as f64;
        assert!((0.25..0.35).contains(&loss), "{loss}");
    }

    /// A tapped line writes every delivered frame to its file and every dropped one, with its
    /// cause, to the drops file; counts match the model's.
    #[test]
    fn tap_writes_delivered_and_dropped_frames() {
        let cfg: LinkConfig = serde_json::from_str(
            r#"{"name": "l", "delay_ms": 1, "rate_mbps": 10, "queue_packets": 5, "loss": {"model": "bernoulli", "p": 0.2}}"#,
        )
        .unwrap();
        let (f, _) = cfg.build(std::path::Path::new("."), &RngStreams::new(4)).unwrap();
        let dir = std::env::temp_dir().join(format!("mobipath-emu-tap-{}", std::process::id()));
        let budget = crate::capture::Budget::new(1 << 30);
        let mut l = Line::new(f);
        l.set_tap(crate::capture::LineTap::open(&dir, "l.forward", 128, budget.clone()).unwrap());
        let mut now = 0;
        for i in 0..400u32 {
            let mut fr = frame(300, 0);
            fr[..4].copy_from_slice(&i.to_be_bytes());
            l.offer(now, fr);
            now += 100_000; // 300 B at 10 Mbit/s = 240 µs: the queue fills and drops
            l.advance(now);
            while l.pop_due(now).is_some() {}
        }
        now += 1_000_000_000;
        l.advance(now);
        while l.pop_due(now).is_some() {}
        let st = l.link.stats().clone();
        let report = l.tap_mut().unwrap().finish();
        assert!(st.drops_queue > 0 && st.drops_loss > 0, "{st:?}");
        assert_eq!(report["packets"].as_u64().unwrap(), st.delivered_packets);
        assert_eq!(report["drops"].as_u64().unwrap(), st.drops_queue + st.drops_loss);
        let main = std::fs::read(dir.join("l.forward.pcapng")).unwrap();
        let drops = std::fs::read(dir.join("l.forward.drops.pcapng")).unwrap();
        assert_eq!((main.len() + drops.len()) as u64, budget.used());
        let text = String::from_utf8_lossy(&drops);
        assert!(text.contains("dropped: queue") && text.contains("dropped: loss"));
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn reorder_releases_by_arrival_time() {
        let cfg: LinkConfig = serde_json::from_str(
            r#"{"name": "l", "delay_ms": 1, "rate_mbps": 100, "reorder": {"p": 0.5, "extra_delay_ms": 5}}"#,
        )
        .unwrap();
        let r = RngStreams::new(1);
        let (f, _) = cfg.build(std::path::Path::new("."), &r).unwrap();
        let mut l = Line::new(f);
        for _ in 0..50 {
            l.offer(0, frame(100, 0));
        }
        let mut last = 0;
        let mut count = 0;
        while let Some(t) = l.next_event() {
            l.advance(t);
            while let Some((at, _)) = l.pop_due(t) {
                assert!(at >= last);
                last = at;
                count += 1;
            }
        }
        assert_eq!(count, 50);
    }
}
