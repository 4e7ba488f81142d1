//! One direction of a link: a FIFO drop-tail queue feeding a transmitter whose capacity
//! follows a [`Timeline`], then a propagation delay, with loss and reordering applied as
//! packets leave.
//!
//! Event-driven and clock-free: the owner calls [`LinkDir::enqueue`] when a packet
//! arrives and [`LinkDir::wake`] at (or after) [`LinkDir::next_wakeup`]. Because the
//! capacity timeline is static, the head packet's departure time is computed exactly
//! when its transmission starts; the only events are departures and the starts of
//! "drop" outages (which flush the queue).
use super::capacity::{Capacity, Forwarding, Outage, OutageQueued, Timeline, OPPORTUNITY_BYTES};
use super::config::{timeline, DirSpec, QueueLimit, TokenBucket};
use super::loss::{DirStreams, LossModel, Reorder};
use crate::core::rng::Rng;
use crate::core::time::{from_ms_f64, Time, NEVER, NS_PER_S};
use crate::packet::Packet;
use rand::Rng as _;
use serde::Serialize;
use std::collections::VecDeque;

/// Counters of a link direction. Invariants (checked by the tests):
/// `arrived = departed + queue_packets + drops_queue + drops_outage + drops_forwarding` and
/// `departed = delivered + drops_loss`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize)]
pub struct LinkStats {
    /// Packets (bytes on the wire) offered to the link's input.
    pub arrived_packets: u64,
    pub arrived_bytes: u64,
    /// Packets accepted into the queue.
    pub enqueued_packets: u64,
    pub enqueued_bytes: u64,
    /// Packets whose transmission finished (including those then lost on the wire).
    pub departed_packets: u64,
    pub departed_bytes: u64,
    /// Packets handed to the far end (departed and not lost).
    pub delivered_packets: u64,
    pub delivered_bytes: u64,
    /// Arrivals refused because the queue was full (drop-tail).
    pub drops_queue: u64,
    /// Departed packets lost on the wire (Bernoulli / Gilbert–Elliott).
    pub drops_loss: u64,
    /// Packets dropped by "drop" outages: flushed from the queue or refused on arrival.
    pub drops_outage: u64,
    /// Delivered packets that got the reorder extra delay.
    pub reordered: u64,
    /// Current queue (including the packet being transmitted).
    pub queue_packets: u64,
    pub queue_bytes: u64,
    /// Largest queue seen.
    pub max_queue_packets: u64,
    pub max_queue_bytes: u64,
    /// Packets forwarded at a handover ([`Forwarding`]), including those lost in forwarding.
    pub forwarded: u64,
    /// Forwarded packets lost (dropped before the target sends them; they never depart).
    pub drops_forwarding: u64,
}

/// Around one [`Forwarding`]: the last departure at or before its start and the first
/// departure after it (the IP-level delivery gap is their difference).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct ForwardingGap {
    /// The forwarding's start (the detach).
    pub start: Time,
    pub last_before: Option<Time>,
    pub first_after: Option<Time>,
}

/// Why a link direction dropped a packet (for packet captures: `crate::capture`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropCause {
    /// Refused at the input: the queue was full (drop-tail).
    Queue,
    /// Lost on the wire (Bernoulli / Gilbert–Elliott, or after the last link-layer attempt).
    Loss,
    /// Dropped by a "drop" outage: refused on arrival or flushed from the queue.
    Outage,
    /// Lost in handover forwarding.
    Forwarding,
}

impl DropCause {
    pub fn name(self) -> &'static str {
        match self {
            DropCause::Queue => "queue",
            DropCause::Loss => "loss",
            DropCause::Outage => "outage",
            DropCause::Forwarding => "forwarding",
        }
    }
}

/// What a link carries: anything with a size on the wire. The simulator passes boxed packets
/// (moving a pointer through queues instead of the whole header); tests and the emulator pass
/// [`Packet`]s by value.
pub trait Wire {
    /// Bytes on the wire (payload + headers).
    fn wire_bytes(&self) -> u32;
}

impl Wire for Packet {
    fn wire_bytes(&self) -> u32 {
        Packet::wire_bytes(self)
    }
}

impl Wire for Box<Packet> {
    fn wire_bytes(&self) -> u32 {
        Packet::wire_bytes(self)
    }
}

/// One direction of a link. See the module docs and `link/README.md` for semantics.
pub struct LinkDir<P: Wire = Packet> {
    tl: Timeline,
    delay: Time,
    max_packets: u64,
    max_bytes: u64,
    /// (arrival time, packet); the front one is being transmitted.
    queue: VecDeque<(Time, P)>,
    /// When the front packet's last bit is sent; NEVER if idle or capacity never returns.
    head_done: Time,
    /// Constant rate without outages: a division per packet and nothing else.
    fast_bps: u64,
    /// The last two (work, ⌈work / fast_bps⌉) pairs computed, most recent first (work 0 is
    /// never asked for: a packet has at least its headers).
    fast_div: [(u64, u64); 2],
    /// Rate-based: work (bit·ns/s units) left over in the last nanosecond of the previous
    /// transmission, usable by a packet starting at exactly `carry_at`. It makes
    /// back-to-back transmissions exact although finish times round up to whole ns.
    carry: u64,
    carry_at: Time,
    /// Cache of the capacity piece [pc_start, pc_end) at pc_bps.
    pc_start: Time,
    pc_end: Time,
    pc_bps: u64,
    /// mahimahi: next unused opportunity (cycle, index), and bytes left in the last used
    /// one (at `credit_at`), usable by a packet that was queued by then.
    opp_k: u64,
    opp_i: usize,
    credit: u32,
    credit_at: Time,
    /// Starts of "drop" outages, sorted; `drop_cursor` = first one >= `head_start`.
    drop_starts: Vec<Time>,
    drop_cursor: usize,
    loss: LossModel,
    reorder: Option<Reorder>,
    /// Handover forwarding (sorted); `fwd_cursor` = first one whose `end` is after the head
    /// packet's arrival; `gap_cursor` = first one whose start is not yet passed by a departure.
    fwd: Vec<Forwarding>,
    fwd_cursor: usize,
    /// Bytes each forwarding has handed to the target so far (against its `buffer_bytes`).
    fwd_used: Vec<u64>,
    fwd_rng: Rng,
    gaps: Vec<ForwardingGap>,
    gap_cursor: usize,
    last_departure: Option<Time>,
    /// Link-layer retransmission (set by the radio model, e.g. LTE HARQ) and the latest arrival
    /// it has scheduled (delivery stays in order).
    retx: Option<(Retransmission, Time)>,
    /// A `tbf`-like token bucket instead of the serializing transmitter (see [`TbState`]).
    tb: Option<TbState>,
    stats: LinkStats,
    /// Packets dropped inside the direction (wire loss, flushes, forwarding losses), kept for
    /// [`LinkDir::drain_drops`] only when [`LinkDir::keep_drops`] asked for them (a capture);
    /// otherwise `None` and dropped packets are freed as before.
    drop_log: Option<Vec<(P, DropCause)>>,
}

/// A per-packet link-layer retransmission process, called once per departing packet with its
/// departure time: `Ok(extra delay)` for a delivered packet, `Err(hold)` for one lost after its
/// last attempt (later packets wait `hold` behind it). Delivery stays in order, as a receiver's
/// reordering layer (LTE RLC) delivers it.
pub type Retransmission = Box<dyn FnMut(Time) -> Result<Time, Time> + Send>;

/// Token-bucket state: `tokens` (in bit·ns/s work units, as `finish_rate` counts) held at
/// time `at`; they grow at the rate up to the burst.
#[derive(Clone, Copy, Debug)]
struct TbState {
    spec: TokenBucket,
    burst_w: u128,
    tokens: u128,
    at: Time,
}

impl<P: Wire> LinkDir<P> {
    /// A direction from its resolved spec, the link's outages (sorted, non-overlapping)
    /// and its impairments' random streams.
    pub fn new(spec: &DirSpec, outages: &[Outage], streams: DirStreams) -> LinkDir<P> {
        let mut tl = timeline(spec, outages);
        // Defensive for hand-built specs: order what the timeline searches.
        tl.cap = tl.cap.sanitized();
        tl.outages.sort_by_key(|o| o.start);
        let (max_packets, max_bytes) = match spec.queue {
            QueueLimit::Packets(n) => (n, u64::MAX),
            QueueLimit::Bytes(b) => (u64::MAX, b),
        };
        let fast_bps = match tl.cap {
            Capacity::Constant { bps } if tl.outages.is_empty() => bps,
            _ => 0,
        };
        let drop_starts = tl
            .outages
            .iter()
            .filter(|o| o.queued == OutageQueued::Drop)
            .map(|o| o.start)
            .collect();
        LinkDir {
            tl,
            delay: spec.delay,
            max_packets,
            max_bytes,
            queue: VecDeque::with_capacity(max_packets.min(256) as usize),
            head_done: NEVER,
            fast_bps,
            fast_div: [(0, 0); 2],
            carry: 0,
            carry_at: 0,
            pc_start: 1,
            pc_end: 0,
            pc_bps: 0,
            opp_k: 0,
            opp_i: 0,
            credit: 0,
            credit_at: 0,
            drop_starts,
            drop_cursor: 0,
            loss: LossModel::new(spec.loss.as_ref(), streams.loss, streams.ge_state),
            reorder: Reorder::new(spec.reorder.as_ref(), streams.reorder),
            fwd: Vec::new(),
            fwd_cursor: 0,
            fwd_used: Vec::new(),
            fwd_rng: streams.forwarding,
            gaps: Vec::new(),
            gap_cursor: 0,
            last_departure: None,
            retx: None,
            tb: spec.token_bucket.map(|t| {
                let burst_w = t.burst_bytes as u128 * 8 * NS_PER_S as u128;
                // The bucket starts full (`tbf_change` sets tokens = buffer).
                TbState {
                    spec: t,
                    burst_w,
                    tokens: burst_w,
                    at: 0,
                }
            }),
            stats: LinkStats::default(),
            drop_log: None,
        }
    }

    /// Keeps the packets this direction drops internally (wire loss, "drop" outage flushes,
    /// forwarding losses) for [`LinkDir::drain_drops`], so a capture can record them.
    pub fn keep_drops(&mut self) {
        self.drop_log.get_or_insert_with(Vec::new);
    }

    /// Hands over the packets dropped internally since the last call (in drop order), if
    /// [`LinkDir::keep_drops`] was called; input drops come back from [`LinkDir::enqueue_with_cause`].
    pub fn drain_drops(&mut self, mut f: impl FnMut(P, DropCause)) {
        if let Some(log) = self.drop_log.as_mut() {
            for (p, c) in log.drain(..) {
                f(p, c);
            }
        }
    }

    #[inline]
    fn log_drop(&mut self, p: P, cause: DropCause) {
        if let Some(log) = self.drop_log.as_mut() {
            log.push((p, cause));
        }
    }

    /// Applies `r` to every packet that departs from now on (see [`Retransmission`]); its
    /// losses count in `drops_loss`.
    pub fn set_retransmission(&mut self, r: Retransmission) {
        self.retx = Some((r, 0));
    }

    /// Adds handover forwarding ([`Forwarding`]) to this direction (the downlink); call before
    /// any packet arrives. Entries are sorted by start; overlapping ones are kept as given
    /// (the first whose `end` is after a packet's arrival applies).
    pub fn set_forwarding(&mut self, fwd: &[Forwarding]) {
        let mut v = fwd.to_vec();
        v.sort_by_key(|f| f.start);
        self.gaps = v
            .iter()
            .map(|f| ForwardingGap {
                start: f.start,
                ..Default::default()
            })
            .collect();
        self.fwd_used = vec![0; v.len()];
        self.fwd = v;
        self.fwd_cursor = 0;
        self.gap_cursor = 0;
    }

    /// Per [`Forwarding`] (sorted by start), the departures around it.
    pub fn forwarding_gaps(&self) -> &[ForwardingGap] {
        &self.gaps
    }

    /// A plain direction: constant rate, delay, packet-limited queue, no impairments
    /// (handy for other modules' tests). Rates are clamped to at least 1 bit/s.
    pub fn constant(rate_mbps: f64, delay_ms: f64, queue_packets: u64) -> LinkDir<P> {
        let spec = DirSpec {
            capacity: Capacity::Constant {
                bps: ((rate_mbps * 1e6).round() as u64).max(1),
            },
            delay: from_ms_f64(delay_ms.max(0.0)),
            token_bucket: None,
            queue: QueueLimit::Packets(queue_packets),
            loss: None,
            reorder: None,
        };
        LinkDir::new(
            &spec,
            &[],
            DirStreams::named(&crate::core::RngStreams::new(0), "constant"),
        )
    }

    /// A packet arrives at the link's input at `now`. Returns `Err(pkt)` if it was
    /// dropped at the input: queue full (drop-tail) or inside a "drop" outage. Drops are
    /// counted in [`stats`](Self::stats).
    #[inline]
    pub fn enqueue(&mut self, now: Time, pkt: P) -> Result<(), P> {
        self.enqueue_with_cause(now, pkt).map_err(|(p, _)| p)
    }

    /// [`LinkDir::enqueue`], saying why a refused packet was dropped. Always inlined: it is
    /// `enqueue`'s body, which the engine's per-packet path had inlined before it had two callers
    /// (measured: +1 % instructions on the TCP workload when it became a call).
    #[inline(always)]
    pub fn enqueue_with_cause(&mut self, now: Time, pkt: P) -> Result<(), (P, DropCause)> {
        let bytes = pkt.wire_bytes() as u64;
        self.stats.arrived_packets += 1;
        self.stats.arrived_bytes += bytes;
        if !self.drop_starts.is_empty() {
            // Apply a flush that is due but not yet processed (same-instant event order).
            let drop_at = self.next_drop_start();
            if !self.queue.is_empty() && drop_at <= now && drop_at < self.head_done {
                self.flush(drop_at);
            }
            if let Some(o) = self.tl.outage_at(now) {
                if o.queued == OutageQueued::Drop {
                    self.stats.drops_outage += 1;
                    return Err((pkt, DropCause::Outage));
                }
            }
        }
        let full = match &self.tb {
            // tbf's bfifo counts frames (IP + overhead), the head waiting for tokens included;
            // a frame larger than the bucket could never leave (tbf_enqueue drops it).
            Some(tb) => {
                let oh = tb.spec.overhead_bytes;
                let queued = self.stats.queue_bytes + oh * self.queue.len() as u64;
                queued + bytes + oh > self.max_bytes || bytes + oh > tb.spec.burst_bytes
            }
            None => self.queue.len() as u64 >= self.max_packets || self.stats.queue_bytes + bytes > self.max_bytes,
        };
        if full {
            self.stats.drops_queue += 1;
            return Err((pkt, DropCause::Queue));
        }
        self.queue.push_back((now, pkt));
        let s = &mut self.stats;
        s.enqueued_packets += 1;
        s.enqueued_bytes += bytes;
        s.queue_packets += 1;
        s.queue_bytes += bytes;
        s.max_queue_packets = s.max_queue_packets.max(s.queue_packets);
        s.max_queue_bytes = s.max_queue_bytes.max(s.queue_bytes);
        if self.queue.len() == 1 {
            self.start_head(now);
        }
        Ok(())
    }

    /// When [`wake`](Self::wake) must next be called: the head packet's departure, or the
    /// start of a "drop" outage while packets are queued. `None` if nothing is pending.
    pub fn next_wakeup(&self) -> Option<Time> {
        if self.queue.is_empty() {
            return None;
        }
        let t = self.head_done.min(self.next_drop_start());
        (t != NEVER).then_some(t)
    }

    /// Advances to `now`: every transmission finished by `now` leaves the link; a packet
    /// not lost on the wire is pushed onto `out` as `(arrival at the far end, packet)`,
    /// arrival = departure + delay (+ reorder extra delay). Early or repeated calls do
    /// nothing; `now` must not go backwards.
    pub fn wake(&mut self, now: Time, out: &mut Vec<(Time, P)>) {
        loop {
            if self.queue.is_empty() {
                return;
            }
            if !self.drop_starts.is_empty() {
                let drop_at = self.next_drop_start();
                if drop_at <= now && drop_at < self.head_done {
                    self.flush(drop_at);
                    return;
                }
            }
            let f = self.head_done;
            if f > now || f == NEVER {
                return; // not due yet, or the capacity never returns
            }
            let Some((_, pkt)) = self.queue.pop_front() else { return };
            let bytes = pkt.wire_bytes() as u64;
            let s = &mut self.stats;
            s.queue_packets -= 1;
            s.queue_bytes -= bytes;
            s.departed_packets += 1;
            s.departed_bytes += bytes;
            if !self.fwd.is_empty() {
                self.note_departure(f);
            }
            let retx = self.retx.as_mut().map(|(draw, last)| {
                let at = f.saturating_add(self.delay);
                match draw(f) {
                    Ok(extra) => {
                        *last = (*last).max(at.saturating_add(extra));
                        Some(*last)
                    }
                    Err(hold) => {
                        *last = (*last).max(at.saturating_add(hold));
                        None
                    }
                }
            });
            if self.loss.lost(f) || retx == Some(None) {
                self.stats.drops_loss += 1;
                self.log_drop(pkt, DropCause::Loss);
            } else if let Some(Some(at)) = retx {
                self.stats.delivered_packets += 1;
                self.stats.delivered_bytes += bytes;
                out.push((at, pkt));
            } else {
                let extra = match &mut self.reorder {
                    Some(r) => r.extra(),
                    None => 0,
                };
                self.stats.reordered += (extra > 0) as u64;
                self.stats.delivered_packets += 1;
                self.stats.delivered_bytes += bytes;
                out.push((f.saturating_add(self.delay).saturating_add(extra), pkt));
            }
            self.start_head(f);
        }
    }

    pub fn stats(&self) -> &LinkStats {
        &self.stats
    }
    /// Packets in the queue, including the one being transmitted.
    pub fn queue_packets(&self) -> usize {
        self.queue.len()
    }
    /// Wire bytes in the queue, including the packet being transmitted.
    pub fn queue_bytes(&self) -> u64 {
        self.stats.queue_bytes
    }
    /// One-way propagation delay.
    pub fn delay(&self) -> Time {
        self.delay
    }

    /// The configured capacity at `t` in bit/s, 0 inside an outage. For a mahimahi trace
    /// (no instantaneous rate) it is the mean over the second `[⌊t⌋, ⌊t⌋ + 1 s)`.
    pub fn rate_bps_at(&self, t: Time) -> f64 {
        match self.tl.cap {
            Capacity::Opportunities { .. } => {
                let a = t - t % NS_PER_S;
                self.tl.capacity_bits(a, a.saturating_add(NS_PER_S))
            }
            _ => self.tl.piece_at(t).2 as f64,
        }
    }

    /// Mean configured capacity over `[from, to)` in bit/s (outages count as 0).
    pub fn mean_rate_bps(&self, from: Time, to: Time) -> f64 {
        if to <= from {
            return 0.0;
        }
        self.tl.capacity_bits(from, to) / ((to - from) as f64 / NS_PER_S as f64)
    }

    /// Whether the Gilbert–Elliott loss channel is in its bad state at `t` (false for
    /// other models). For reports and tests; `t` must not go backwards.
    pub fn loss_state_bad_at(&mut self, t: Time) -> bool {
        self.loss.is_bad_at(t)
    }

    // ---- internals ----

    #[inline]
    fn next_drop_start(&self) -> Time {
        self.drop_starts.get(self.drop_cursor).copied().unwrap_or(NEVER)
    }

    /// The front packet (if any) starts transmitting at `max(t, its arrival)` — or, if it is
    /// held at the source at a handover, at the forwarding's release time (see [`Forwarding`]).
    #[inline]
    fn start_head(&mut self, mut t: Time) {
        loop {
            let Some((arr, pkt)) = self.queue.front() else {
                self.head_done = NEVER;
                return;
            };
            let (arr, bytes) = (*arr, pkt.wire_bytes());
            let s = t.max(arr);
            // Waiting behind the previous packet (not arriving at an idle link)?
            let backlogged = arr < t;
            while self.drop_cursor < self.drop_starts.len() && self.drop_starts[self.drop_cursor] < s {
                self.drop_cursor += 1;
            }
            if self.fwd.is_empty() {
                self.head_done = self.finish(s, bytes, backlogged);
                return;
            }
            while self.fwd_cursor < self.fwd.len() && self.fwd[self.fwd_cursor].end <= arr {
                self.fwd_cursor += 1;
            }
            // Held at the source by forwarding k: it arrived before the UE came back (arr < end;
            // true for every k from the cursor on) and was not completely sent when the UE
            // detached. Released at end + extra, it may run into the next handover (only if
            // handovers come closer than interruption + extra): held again there.
            let (mut s, mut backlogged, mut held, mut lost) = (s, backlogged, false, false);
            let mut k = self.fwd_cursor;
            while let Some(&fw) = self.fwd.get(k) {
                if s < fw.start {
                    let saved = (self.opp_k, self.opp_i, self.credit, self.credit_at);
                    let f = self.finish(s, bytes, backlogged);
                    if f <= fw.start {
                        self.head_done = f;
                        return;
                    }
                    (self.opp_k, self.opp_i, self.credit, self.credit_at) = saved;
                }
                if !held {
                    held = true;
                    self.stats.forwarded += 1;
                    // At the source when the UE detached (queued or partly sent), or arrived during the interruption.
                    let p = if arr < fw.start { fw.queued_loss } else { fw.loss_prob };
                    // A forwarded packet that no longer fits in the target's buffer is lost too.
                    let full = || self.fwd_used[k].saturating_add(bytes as u64) > fw.buffer_bytes;
                    if p >= 1.0 || (p > 0.0 && self.fwd_rng.gen::<f64>() < p) || full() {
                        lost = true;
                        t = t.max(fw.start); // what follows was held too
                        break;
                    }
                    self.fwd_used[k] += bytes as u64;
                }
                s = s.max(fw.release());
                backlogged = false;
                k += 1;
            }
            if lost {
                // Lost in forwarding: it never reaches the target's transmitter.
                let Some((_, p)) = self.queue.pop_front() else { return };
                let b = p.wire_bytes() as u64;
                self.stats.drops_forwarding += 1;
                self.stats.queue_packets -= 1;
                self.stats.queue_bytes -= b;
                self.log_drop(p, DropCause::Forwarding);
                continue;
            }
            self.head_done = self.finish(s, bytes, backlogged);
            return;
        }
    }

    #[inline]
    fn finish(&mut self, s: Time, bytes: u32, backlogged: bool) -> Time {
        if let Some(tb) = &mut self.tb {
            return tb.departure(s, bytes);
        }
        if let Capacity::Opportunities { .. } = self.tl.cap {
            self.finish_opportunities(s, bytes)
        } else {
            self.finish_rate(s, bytes, backlogged)
        }
    }

    /// Records a departure at `f` for the delivery gaps around forwardings.
    fn note_departure(&mut self, f: Time) {
        while let Some(fw) = self.fwd.get(self.gap_cursor) {
            if fw.start >= f {
                break;
            }
            let g = &mut self.gaps[self.gap_cursor];
            (g.last_before, g.first_after) = (self.last_departure, Some(f));
            self.gap_cursor += 1;
        }
        self.last_departure = Some(f);
    }

    /// "Drop" outage at `at`: everything queued (even a partly sent packet) is dropped.
    fn flush(&mut self, at: Time) {
        let n = self.queue.len() as u64;
        match self.drop_log.as_mut() {
            Some(log) => log.extend(self.queue.drain(..).map(|(_, p)| (p, DropCause::Outage))),
            None => self.queue.clear(),
        }
        self.stats.drops_outage += n;
        self.stats.queue_packets = 0;
        self.stats.queue_bytes = 0;
        self.head_done = NEVER;
        self.carry = 0;
        self.credit = 0;
        if let Capacity::Opportunities { times, period } = &self.tl.cap {
            // The flushed packet may have been charged opportunities after `at`: give them back.
            (self.opp_k, self.opp_i) = Capacity::first_opp_at_or_after(times, *period, at);
        }
    }

    /// Effective rate at `t` and the end of the piece it holds on (cached).
    #[inline]
    fn piece(&mut self, t: Time) -> (u64, Time) {
        if !(self.pc_start <= t && t < self.pc_end) {
            let (s, e, r) = self.tl.piece_at(t);
            (self.pc_start, self.pc_end, self.pc_bps) = (s, e, r);
        }
        (self.pc_bps, self.pc_end)
    }

    /// Departure time of `bytes` starting at `s` under a rate-based capacity: the rate
    /// integrated exactly over the pieces (a transmission spanning a rate change finishes
    /// at the new rate; nothing progresses at rate 0). Work is counted in bit·ns/s
    /// (bits × 10⁹), so a piece of `dt` ns at `r` bit/s does `r·dt` units, exactly.
    fn finish_rate(&mut self, s: Time, bytes: u32, backlogged: bool) -> Time {
        let mut w: u128 = bytes as u128 * 8 * NS_PER_S as u128;
        // The carry is capacity from just before `s`: only a packet that was already
        // waiting could have used it (an arrival at an idle link starts from scratch).
        let carry = if backlogged && self.carry_at == s {
            self.carry as u128
        } else {
            0
        };
        self.carry = 0;
        if carry >= w {
            self.carry = (carry - w) as u64;
            self.carry_at = s;
            return s;
        }
        w -= carry;
        if self.fast_bps > 0 {
            // In 64 bits when the work fits (any packet below ~2.3 GB does): a 128-bit
            // division is a library call, the most expensive step of a departure.
            if let Ok(w64) = u64::try_from(w) {
                // The same work recurs (one packet size, no carry at a round rate): the last
                // two quotients are remembered, which skips the division's tens of cycles.
                let dt = match self.fast_div {
                    [(a, q), _] if a == w64 => q,
                    [_, (b, q)] if b == w64 => q,
                    [x, _] => {
                        let q = w64.div_ceil(self.fast_bps);
                        self.fast_div = [(w64, q), x];
                        q
                    }
                };
                return self.finish_at(s, dt as u128, self.fast_bps as u128, w);
            }
            let r = self.fast_bps as u128;
            let dt = w.div_ceil(r);
            return self.finish_at(s, dt, r, w);
        }
        let mut t = s;
        loop {
            let (r, end) = self.piece(t);
            if r > 0 {
                let r = r as u128;
                let dt = w.div_ceil(r);
                if end == NEVER || dt <= (end - t) as u128 {
                    return self.finish_at(t, dt, r, w);
                }
                w -= r * (end - t) as u128;
            } else if end == NEVER {
                return NEVER; // the capacity never returns
            }
            t = end;
        }
    }

    #[inline]
    fn finish_at(&mut self, t: Time, dt: u128, r: u128, w: u128) -> Time {
        let f = u64::try_from(dt).map_or(NEVER, |d| t.saturating_add(d));
        self.carry = (dt * r - w) as u64; // < r <= 10^12
        self.carry_at = f;
        f
    }

    /// Departure time of `bytes` starting at `s` under a mahimahi trace: each delivery
    /// opportunity pays up to 1500 bytes of the head-of-line packet(s), as in mahimahi's
    /// `LinkQueue::rationalize`; a packet leaves at the opportunity that pays its last
    /// byte. Leftover bytes of that opportunity go to the next packet if it was queued by
    /// then, otherwise they are lost (mahimahi burns unused opportunities). Deviations:
    /// packets may exceed 1500 bytes (they take several opportunities), and a packet
    /// arriving at exactly an opportunity's time may use it (mahimahi works in whole ms
    /// and serves the opportunity before the arrival).
    fn finish_opportunities(&mut self, s: Time, bytes: u32) -> Time {
        let mut rem = bytes;
        if self.credit > 0 && self.credit_at == s {
            let u = self.credit.min(rem);
            self.credit -= u;
            rem -= u;
            if rem == 0 {
                return s;
            }
        }
        self.credit = 0;
        let Capacity::Opportunities { times, period } = &self.tl.cap else {
            return NEVER;
        };
        let period = *period;
        let mut cur = (self.opp_k, self.opp_i).max(Capacity::first_opp_at_or_after(times, period, s));
        loop {
            let t = Capacity::opp_time(times, period, cur.0, cur.1);
            if t == NEVER {
                (self.opp_k, self.opp_i) = cur;
                return NEVER;
            }
            if let Some(o) = self.tl.outage_at(t) {
                // Opportunities inside an outage are lost; jump past it.
                cur = cur.max(Capacity::first_opp_at_or_after(times, period, o.end));
                continue;
            }
            cur = if cur.1 + 1 < times.len() {
                (cur.0, cur.1 + 1)
            } else {
                (cur.0.saturating_add(1), 0)
            };
            let u = OPPORTUNITY_BYTES.min(rem);
            rem -= u;
            if rem == 0 {
                (self.opp_k, self.opp_i) = cur;
                self.credit = OPPORTUNITY_BYTES - u;
                self.credit_at = t;
                return t;
            }
        }
    }
}

impl TbState {
    /// When a packet of `bytes` (IP) at the head from `s` on leaves: at once if the bucket
    /// holds its frame, else when enough tokens have accrued; the frame's tokens are taken
    /// out (`tbf_dequeue`: toks = min(toks + elapsed, buffer) − len; send if ≥ 0). Exact
    /// integer arithmetic; a departure time rounds up to the whole ns and the remainder is
    /// kept as tokens, so n back-to-back frames leave at exactly ⌈n·frame/rate⌉.
    #[inline]
    fn departure(&mut self, s: Time, bytes: u32) -> Time {
        let w = (bytes as u128 + self.spec.overhead_bytes as u128) * 8 * NS_PER_S as u128;
        let r = self.spec.bps as u128;
        let avail = (self.tokens + r * s.saturating_sub(self.at) as u128).min(self.burst_w);
        if avail >= w {
            (self.tokens, self.at) = (avail - w, s.max(self.at));
            return s;
        }
        let dt = (w - avail).div_ceil(r);
        let f = u64::try_from(dt).map_or(NEVER, |d| s.saturating_add(d));
        (self.tokens, self.at) = (avail + r * dt - w, f);
        f
    }
}

impl<P: Wire> std::fmt::Debug for LinkDir<P> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("LinkDir")
            .field("delay", &self.delay)
            .field("queue_packets", &self.queue.len())
            .field("head_done", &self.head_done)
            .field("stats", &self.stats)
            .finish_non_exhaustive()
    }
}
