//! The event loop: owns virtual time, moves packets along routes (links, elements) to
//! endpoints, fires timers and drivers, and samples the time series.
//!
//! Endpoints, links, elements and drivers never read a clock; every call passes `now`. Timers
//! are lazy: each component has at most one pending wake-up event that is still current (`*_at`
//! fields); stale events are recognised by their time and skipped, and early wake-ups are
//! harmless because every handler re-checks its own deadlines.
//!
//! Packets on the wire wait in per-link-direction FIFO pipes, merged with the event queue by
//! (time, insertion number): the order is exactly what one queued event per packet would give,
//! without a heap push and pop per packet.
use super::drivers::{Driver, Schedule, Side, World};
use super::flow::Flow;
use crate::capture::Capture;
use crate::core::time::{Time, NEVER};
use crate::core::{EventQueue, Tournament};
use crate::element::{Element, ElementOut};
use crate::endpoint::{Action, Io, Observation, Outbox};
use crate::link::LinkDir;
use crate::packet::{PacketKind, Pkt};
use std::collections::VecDeque;

#[derive(Clone, Copy, Debug)]
pub(crate) enum Ev {
    LinkWake(u32),
    /// The head of a link's propagation pipe reaches the far end.
    PipeHead(u32),
    /// A packet that could not join its link's pipe (reordered: it arrives before the pipe's
    /// tail) reaches the far end; index into the slab.
    Arrive(u32),
    SenderTimer(u32),
    ReceiverTimer(u32),
    FlowStart(u32),
    /// (driver, token).
    Driver(u32, u32),
    ElementWake(u32),
    Bin,
}

/// An empty pipe's head key (after every real one).
pub(crate) const NO_HEAD: (Time, u64) = (Time::MAX, u64::MAX);
/// Route hops with this bit set are elements (index in the low bits); others are link directions.
pub(crate) const ELEMENT_HOP: u32 = 1 << 31;

pub(crate) struct LinkSlot {
    pub dir: LinkDir<Pkt>,
    pub name: String,
    pub wake_at: Time,
    /// Whether [`Sim::capture`] taps this direction (its packets and drops go to a file).
    pub tapped: bool,
    /// Packets on the wire after this link direction, in arrival order: (arrival time, event
    /// insertion number reserved when the packet left the link, packet).
    pub pipe: VecDeque<(Time, u64, Pkt)>,
}

pub(crate) struct ElementSlot {
    pub node: String,
    pub element: Box<dyn Element>,
    pub wake_at: Time,
    pub dropped: u64,
}

pub(crate) struct Sim {
    pub now: Time,
    pub end: Time,
    pub queue: EventQueue<Ev>,
    pub links: Vec<LinkSlot>,
    /// Per link direction: (time, insertion number) of its pipe's head, [`NO_HEAD`] if empty;
    /// a tournament, so the earliest head is found without scanning every link.
    pub heads: Tournament<(Time, u64)>,
    /// Hops per route: link-direction indices, or [`ELEMENT_HOP`] | element index.
    pub routes: Vec<Vec<u32>>,
    /// Per route: whether it runs against its path's data direction.
    pub route_reverse: Vec<bool>,
    pub elements: Vec<ElementSlot>,
    pub flows: Vec<Flow>,
    /// Taken out while one fires (see [`Sim::fire_driver`]).
    pub drivers: Vec<Option<Box<dyn Driver>>>,
    pub slab: Vec<Option<Pkt>>,
    pub free: Vec<u32>,
    pub out: Vec<(Time, Pkt)>,
    /// What endpoints send, in boxes of delivered packets reused.
    pub outbox: Outbox,
    pub bin: Time,
    pub n_bins: usize,
    pub link_queue: Vec<Vec<f64>>,
    /// Whether the links' queue series are kept (`[output] series`).
    pub keep_links: bool,
    /// Bins sampled so far (every kept series has this many values).
    pub sampled: usize,
    /// The flows [`Sim::sample`] visits each bin: those whose series are kept and relays (the
    /// summary's mean relay buffer), so a bin costs nothing per flow whose series are not kept.
    pub sampled_flows: Vec<u32>,
    /// The sum over every flow of goodput and sent bytes per bin (written with
    /// `series = "aggregate"`; [`Bins::off`](crate::metrics::Bins::off) otherwise).
    pub total_goodput: crate::metrics::Bins,
    pub total_sent: crate::metrics::Bins,
    /// Packet captures of the tapped link directions (`crate::capture`), if any.
    pub capture: Option<Box<Capture>>,
}

// The per-event functions below carry `#[inline]`: without the hint, whether they are inlined
// into `engine::run` depends on how the crate is split into codegen units, and adding an
// unrelated dependency (crates/hst) un-inlined five of them: +4.8 % instructions on the TCP
// workload, +2.6 % on MPTCP 2x25, with identical results.
impl Sim {
    /// The next event: the earliest pipe head or the event queue's next, by (time, insertion
    /// number).
    #[inline]
    pub fn next_event(&mut self) -> Option<(Time, Ev)> {
        let (key, best) = self.heads.min();
        if let Some(e) = self.queue.pop_before(key) {
            return Some(e);
        }
        if key == NO_HEAD {
            return None;
        }
        self.queue.note_popped(key.0, key.1);
        Some((key.0, Ev::PipeHead(best as u32)))
    }

    /// Handles one event at `self.now`.
    #[inline]
    pub fn handle(&mut self, t: Time, ev: Ev) {
        match ev {
            Ev::PipeHead(l) => {
                let slot = &mut self.links[l as usize];
                let Some((_, _, p)) = slot.pipe.pop_front() else { return };
                self.heads
                    .set(l as usize, slot.pipe.front().map_or(NO_HEAD, |&(t, seq, _)| (t, seq)));
                if slot.tapped {
                    self.tap_delivered(l, &p);
                }
                self.forward(p);
            }
            Ev::Arrive(idx) => {
                let p = self.slab[idx as usize].take().expect("live packet");
                self.free.push(idx);
                if self.capture.is_some() {
                    // The link it crossed: the hop before the packet's next one.
                    let l = self.routes[p.route as usize][p.hop as usize - 1];
                    if self.links[l as usize].tapped {
                        if let Some(c) = self.capture.as_deref_mut() {
                            c.arrived_overtaking(idx);
                        }
                        self.tap_delivered(l, &p);
                    }
                }
                self.forward(p);
            }
            Ev::LinkWake(l) => {
                if take_if_current(&mut self.links[l as usize].wake_at, t) {
                    self.wake_link(l);
                }
            }
            Ev::SenderTimer(fi) => {
                if take_if_current(&mut self.flows[fi as usize].snd_timer_at, t) {
                    self.sender_timer(fi);
                }
            }
            Ev::ReceiverTimer(fi) => {
                if self.flows[fi as usize]
                    .rcv_timer
                    .fire(t, &mut self.queue, || Ev::ReceiverTimer(fi))
                {
                    self.receiver_timer(fi);
                }
            }
            Ev::FlowStart(fi) => {
                self.flows[fi as usize].started = true;
                self.pump(fi);
            }
            Ev::Driver(d, token) => self.fire_driver(d as usize, token),
            Ev::ElementWake(e) => {
                if take_if_current(&mut self.elements[e as usize].wake_at, t) {
                    let mut out = ElementOut::default();
                    self.elements[e as usize].element.on_timer(self.now, &mut out);
                    self.element_out(e, out);
                }
            }
            Ev::Bin => unreachable!("bins are handled by the run loop"),
        }
    }

    /// Queues the times a driver asked for (in the order given).
    pub fn queue_driver(&mut self, d: usize, q: Schedule) {
        for (t, token) in q.items {
            self.queue.push(t, Ev::Driver(d as u32, token));
        }
    }

    fn fire_driver(&mut self, d: usize, token: u32) {
        let Some(mut drv) = self.drivers[d].take() else { return };
        let mut q = Schedule::default();
        drv.fire(self.now, token, self, &mut q);
        self.drivers[d] = Some(drv);
        self.queue_driver(d, q);
    }

    fn recycle(&mut self, p: Pkt) {
        self.outbox.recycle(p);
    }

    fn alloc(&mut self, p: Pkt) -> u32 {
        if let Some(i) = self.free.pop() {
            self.slab[i as usize] = Some(p);
            i
        } else {
            self.slab.push(Some(p));
            (self.slab.len() - 1) as u32
        }
    }

    /// Moves a packet to its next hop, or hands it to its endpoint at the end of the route.
    fn forward(&mut self, mut p: Pkt) {
        let route = &self.routes[p.route as usize];
        if (p.hop as usize) < route.len() {
            let h = route[p.hop as usize];
            p.hop += 1;
            if h & ELEMENT_HOP != 0 {
                self.deliver_to_element(h & !ELEMENT_HOP, p);
                return;
            }
            let now = self.now;
            let slot = &mut self.links[h as usize];
            if slot.tapped {
                self.enqueue_tapped(h, p);
            } else {
                let _ = slot.dir.enqueue(now, p);
            }
            self.arm_link(h);
            return;
        }
        let fi = p.flow;
        match p.kind {
            PacketKind::Data | PacketKind::WindowProbe | PacketKind::Syn => self.deliver_to_receiver(fi, p),
            PacketKind::Ack | PacketKind::SynAck | PacketKind::Ehn | PacketKind::Greet => self.deliver_to_sender(fi, p),
        }
    }

    fn deliver_to_element(&mut self, e: u32, p: Pkt) {
        let reverse = self.route_reverse[p.route as usize];
        let mut out = ElementOut::default();
        self.elements[e as usize]
            .element
            .on_packet(self.now, p, reverse, &mut out);
        self.element_out(e, out);
    }

    fn element_out(&mut self, e: u32, out: ElementOut) {
        self.elements[e as usize].dropped += out.drop.len() as u64;
        for p in out.drop.into_iter().chain(out.absorb) {
            self.recycle(p);
        }
        for mut p in out.reply {
            // Back along the reverse route from this node: the reverse of route r is r ^ 1, and
            // this node's next hop there is len + 1 - hop (hop = the answered packet's, advanced).
            let n = self.routes[p.route as usize].len() as u8;
            p.route ^= 1;
            p.hop = n + 1 - p.hop;
            self.forward(p);
        }
        for p in out.forward.into_iter().chain(out.send) {
            self.forward(p);
        }
        let slot = &mut self.elements[e as usize];
        let t = slot.element.next_timer();
        if t != NEVER {
            let t = t.max(self.now);
            if t < slot.wake_at {
                slot.wake_at = t;
                self.queue.push(t, Ev::ElementWake(e));
            }
        }
    }

    fn deliver_to_sender(&mut self, fi: u32, p: Pkt) {
        let now = self.now;
        self.flows[fi as usize]
            .sender
            .on_packet(now, &p, &mut Io::new(&mut self.outbox));
        self.recycle(p);
        self.inject_all(fi, true);
        self.pump(fi);
        self.relay_drained(fi);
    }

    fn deliver_to_receiver(&mut self, fi: u32, p: Pkt) {
        let now = self.now;
        let fl = &mut self.flows[fi as usize];
        let mut io = Io::new(&mut self.outbox);
        fl.receiver.on_packet(now, &p, &mut io);
        let (read, delivered) = (io.read, io.delivered);
        fl.goodput.add(now, read as f64);
        self.total_goodput.add(now, read as f64);
        if read > 0 && !fl.sub.is_empty() {
            fl.attribute_subflow_goodput(now);
        }
        if let Some((s, e)) = delivered {
            fl.note_delivery(now, s, e);
        }
        self.recycle(p);
        self.inject_all(fi, false);
        self.arm_receiver(fi);
        if read > 0 {
            self.relay_feed(fi);
        }
    }

    /// Flow `fi`'s receiver read data: if it feeds a relay, the relay's output flow has more
    /// to send.
    fn relay_feed(&mut self, fi: u32) {
        let Some(o) = self.flows[fi as usize].feeds else { return };
        let read = self.flows[fi as usize].receiver.read_bytes();
        let out = &mut self.flows[o as usize];
        out.relay_input = read;
        out.relay_buffer_max = out.relay_buffer_max.max(out.relay_occupancy());
        self.pump(o);
    }

    /// Flow `o` is a relay's output and may have had data acknowledged: the relay reads its
    /// input up to the room in its buffer (a window update reopens the input's window).
    fn relay_drained(&mut self, o: u32) {
        let Some((inn, buffer)) = self.flows[o as usize].relay_from else {
            return;
        };
        let now = self.now;
        let limit = self.flows[o as usize].sender.acked_bytes().saturating_add(buffer);
        let fl = &mut self.flows[inn as usize];
        let mut io = Io::new(&mut self.outbox);
        fl.receiver.set_read_limit(now, limit, &mut io);
        let read = io.read;
        if read > 0 {
            fl.goodput.add(now, read as f64);
            self.total_goodput.add(now, read as f64);
        }
        self.inject_all(inn, false);
        self.arm_receiver(inn);
        if read > 0 {
            self.relay_feed(inn);
        }
    }

    /// Routes what flow `fi`'s endpoint sent (see [`Outbox`]).
    fn inject_all(&mut self, fi: u32, from_sender: bool) {
        if self.outbox.is_empty() {
            // Most calls (a TCP receiver's read, an ACK that releases nothing): taking and
            // giving back the empty vector cost ~60 instructions each.
            return;
        }
        let mut pkts = self.outbox.take();
        for (i, b) in pkts.drain(..) {
            self.inject(fi, i, b, from_sender);
        }
        self.outbox.give_back(pkts);
    }

    /// Puts a packet from an endpoint onto its subflow's route: data forward, ACKs reverse.
    fn inject(&mut self, fi: u32, subflow: usize, mut b: Pkt, from_sender: bool) {
        let fl = &self.flows[fi as usize];
        let (fwd, rev) = fl.routes[subflow.min(fl.routes.len() - 1)];
        b.route = if from_sender { fwd } else { rev };
        b.hop = 0;
        b.flow = fi;
        b.subflow = subflow as u16;
        self.forward(b);
    }

    #[inline]
    fn wake_link(&mut self, l: u32) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.out);
        self.links[l as usize].dir.wake(now, &mut out);
        if self.links[l as usize].tapped {
            self.tap_drops(l);
        }
        for (t, p) in out.drain(..) {
            let pipe = &mut self.links[l as usize].pipe;
            match pipe.back() {
                Some(&(last, _, _)) if t < last => {
                    // Overtakes packets already on the wire (reordering): an event of its own.
                    let idx = self.alloc(p);
                    self.queue.push(t, Ev::Arrive(idx));
                    if self.links[l as usize].tapped {
                        if let Some(c) = self.capture.as_deref_mut() {
                            c.note_overtaking(idx, t);
                        }
                    }
                }
                _ => {
                    let seq = self.queue.reserve();
                    if pipe.is_empty() {
                        self.heads.set(l as usize, (t, seq));
                    }
                    pipe.push_back((t, seq, p));
                }
            }
        }
        self.out = out;
        self.arm_link(l);
    }

    /// At the end of the run: the packets still on the wire after tapped directions go to the
    /// capture with the times they would arrive (a direction's file then holds every packet it
    /// delivered), in time order.
    pub fn capture_in_flight(&mut self) {
        let Some(c) = self.capture.as_deref_mut() else { return };
        let mut left: Vec<(Time, u64, u32, &crate::packet::Packet)> = Vec::new();
        for (l, slot) in self.links.iter().enumerate() {
            if slot.tapped {
                left.extend(slot.pipe.iter().map(|(t, seq, p)| (*t, *seq, l as u32, &**p)));
            }
        }
        for (idx, t) in c.overtaking() {
            if let Some(p) = self.slab.get(idx as usize).and_then(|p| p.as_deref()) {
                let l = self.routes[p.route as usize][p.hop as usize - 1];
                left.push((t, u64::MAX, l, p));
            }
        }
        left.sort_by_key(|&(t, seq, l, _)| (t, seq, l));
        for (t, _, l, p) in left {
            c.delivered(l as usize, t, p);
        }
    }

    /// A packet left tapped link direction `l` at its far end now.
    #[cold]
    fn tap_delivered(&mut self, l: u32, p: &crate::packet::Packet) {
        if let Some(c) = self.capture.as_deref_mut() {
            c.delivered(l as usize, self.now, p);
        }
    }

    /// [`LinkDir::enqueue`] on a tapped direction: what it drops goes to the capture.
    #[cold]
    fn enqueue_tapped(&mut self, h: u32, p: Pkt) {
        let now = self.now;
        if let Err((p, cause)) = self.links[h as usize].dir.enqueue_with_cause(now, p) {
            if let Some(c) = self.capture.as_deref_mut() {
                c.dropped(h as usize, now, &p, cause);
            }
        }
        self.tap_drops(h);
    }

    /// Hands what tapped direction `l` dropped inside (loss, flushes, forwarding) to the capture.
    #[cold]
    fn tap_drops(&mut self, l: u32) {
        let now = self.now;
        let Some(c) = self.capture.as_deref_mut() else { return };
        self.links[l as usize]
            .dir
            .drain_drops(|p, cause| c.dropped(l as usize, now, &p, cause));
    }

    #[inline]
    fn arm_link(&mut self, l: u32) {
        let slot = &mut self.links[l as usize];
        if let Some(t) = slot.dir.next_wakeup() {
            let t = t.max(self.now);
            if t < slot.wake_at {
                slot.wake_at = t;
                self.queue.push(t, Ev::LinkWake(l));
            }
        }
    }

    fn sender_timer(&mut self, fi: u32) {
        let now = self.now;
        self.flows[fi as usize]
            .sender
            .on_timeout(now, &mut Io::new(&mut self.outbox));
        self.inject_all(fi, true);
        self.pump(fi);
        self.relay_drained(fi);
    }

    #[inline]
    fn receiver_timer(&mut self, fi: u32) {
        let now = self.now;
        let fl = &mut self.flows[fi as usize];
        let mut io = Io::new(&mut self.outbox);
        fl.receiver.on_timeout(now, &mut io);
        let read = io.read;
        if read > 0 {
            fl.goodput.add(now, read as f64);
            self.total_goodput.add(now, read as f64);
        }
        self.inject_all(fi, false);
        self.arm_receiver(fi);
        if read > 0 {
            self.relay_feed(fi);
        }
    }

    /// Lets the application write, sends what the sender allows and re-arms its timer.
    pub fn pump(&mut self, fi: u32) {
        let now = self.now;
        let (limit, app_next) = self.flows[fi as usize].app_bytes(now);
        let fl = &mut self.flows[fi as usize];
        let mut io = Io::new(&mut self.outbox);
        io.app_limit = limit;
        fl.sender.poll_transmit(now, &mut io);
        for (i, p) in self.outbox.iter() {
            if p.kind == PacketKind::Data {
                fl.sent.add(now, p.wire_bytes() as f64);
                self.total_sent.add(now, p.wire_bytes() as f64);
                if let Some(s) = fl.sub.get_mut(i) {
                    s.sent.add(now, p.wire_bytes() as f64);
                }
            }
        }
        self.inject_all(fi, true);
        let fl = &mut self.flows[fi as usize];
        let mut t = fl.sender.poll_timeout(now);
        let (taken, app_limit) = fl.sender.app_position();
        if taken >= app_limit || app_limit < limit {
            t = t.min(app_next);
        }
        if t < fl.snd_timer_at {
            let t = t.max(now);
            fl.snd_timer_at = t;
            self.queue.push(t, Ev::SenderTimer(fi));
        }
    }

    #[inline]
    fn arm_receiver(&mut self, fi: u32) {
        let now = self.now;
        let fl = &mut self.flows[fi as usize];
        let t = fl.receiver.poll_timeout(now);
        fl.rcv_timer.arm(t, now, &mut self.queue, || Ev::ReceiverTimer(fi));
    }

    /// One time-series sample of every flow and link (a bin ends).
    pub fn sample(&mut self) {
        if self.sampled >= self.n_bins {
            return;
        }
        self.sampled += 1;
        for &fi in &self.sampled_flows {
            self.flows[fi as usize].sample();
        }
        if self.keep_links {
            for (i, l) in self.links.iter().enumerate() {
                self.link_queue[i].push(l.dir.queue_packets() as f64);
            }
        }
    }
}

impl World for Sim {
    fn act(&mut self, flow: usize, side: Side, action: Action) {
        let now = self.now;
        let fl = &mut self.flows[flow];
        let ep = match side {
            Side::Sender => &mut fl.sender,
            Side::Receiver => &mut fl.receiver,
        };
        ep.act(now, &action, &mut Io::new(&mut self.outbox));
        self.inject_all(flow as u32, side == Side::Sender);
    }

    fn observe(&self, flow: usize, side: Side) -> Observation {
        let fl = &self.flows[flow];
        match side {
            Side::Sender => fl.sender.observe(),
            Side::Receiver => fl.receiver.observe(),
        }
    }
}

/// Lazy timers: an event is current only if it fires at the time its owner last asked for; a
/// current one is consumed (the owner re-arms), a stale one is skipped.
fn take_if_current(scheduled_at: &mut Time, t: Time) -> bool {
    if *scheduled_at != t {
        return false;
    }
    *scheduled_at = NEVER;
    true
}
