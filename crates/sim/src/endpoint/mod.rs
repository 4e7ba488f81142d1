//! One interface for the ends of every transport: the event loop drives TCP and MPTCP senders
//! and receivers through [`Endpoint`] and never asks which one it holds.
//!
//! Model: quinn-proto's `Connection` (a state machine fed packets and timer expiries with an
//! explicit `now`, asked what to transmit and when it next needs a timer) and smoltcp's socket
//! set (one trait, one-line delegation per kind). Each end of a connection is one endpoint: the
//! data sender at the path's `from` node and the data receiver at its `to` node, so that a relay
//! element can own the receiving end of one connection and the sending end of another.
//!
//! Adding a transport (e.g. a handoff-aware TCP) is one file implementing [`Endpoint`] for its
//! two ends plus one arm in [`build`].
use crate::core::rng::RngStreams;
use crate::core::time::Time;
use crate::packet::{Packet, PacketKind, Pkt};
use crate::plan::{FlowPlan, Transport};
use serde_json::{Map, Value};

pub mod mptcp;
pub mod tcp;

/// At most this many empty boxes are kept for reuse.
const SPARE_BOXES: usize = 1024;

/// The packets endpoints send, as (subflow, packet), each already in the box that links, pipes
/// and elements then move, taken from the boxes of delivered packets.
///
/// Why not a `Vec<(usize, Packet)>`: a packet is built field by field and then copied whole;
/// the copy's wide loads read stores still in flight, which stalls the CPU, and each copy of the
/// ~170-byte header costs it again. Pushed straight into its box, a packet is copied once (perf,
/// profile-guided build, TCP: packet copies were 13.6 % of the run).
#[derive(Default)]
pub struct Outbox {
    pkts: Vec<(usize, Pkt)>,
    spare: Vec<Pkt>,
}

impl Outbox {
    /// Sends `p` on `subflow`.
    #[inline]
    pub fn push(&mut self, subflow: usize, p: Packet) {
        self.push_with(subflow, |b| {
            *b = p;
            true
        });
    }

    /// Lets `write` put a packet straight into a box (every field; see [`Outbox`]); sends it on
    /// `subflow` if `write` returns true. Returns what `write` returned.
    #[inline]
    pub fn push_with(&mut self, subflow: usize, write: impl FnOnce(&mut Packet) -> bool) -> bool {
        let mut b = self.spare_box();
        if write(&mut b) {
            self.pkts.push((subflow, b));
            true
        } else {
            self.recycle(b);
            false
        }
    }

    /// A box to write a packet into now and send later with [`Outbox::push_box`] (every field
    /// must be written: it may hold a delivered packet).
    #[inline]
    pub fn spare_box(&mut self) -> Pkt {
        self.spare
            .pop()
            .unwrap_or_else(|| Box::new(Packet::new(PacketKind::Data)))
    }

    /// Sends a packet already in its box on `subflow`.
    #[inline]
    pub fn push_box(&mut self, subflow: usize, b: Pkt) {
        self.pkts.push((subflow, b));
    }

    /// Keeps a delivered packet's box for a later [`Outbox::push`].
    #[inline]
    pub fn recycle(&mut self, p: Pkt) {
        if self.spare.len() < SPARE_BOXES {
            self.spare.push(p);
        }
    }

    pub fn len(&self) -> usize {
        self.pkts.len()
    }

    pub fn is_empty(&self) -> bool {
        self.pkts.is_empty()
    }

    /// The packets sent so far, in order.
    pub fn iter(&self) -> impl Iterator<Item = (usize, &Packet)> {
        self.pkts.iter().map(|(i, p)| (*i, &**p))
    }

    /// Takes the packets sent so far (the engine routes them; the vector comes back through
    /// [`Outbox::give_back`] so its capacity is reused).
    pub fn take(&mut self) -> Vec<(usize, Pkt)> {
        std::mem::take(&mut self.pkts)
    }

    pub fn give_back(&mut self, mut v: Vec<(usize, Pkt)>) {
        v.clear();
        if self.pkts.is_empty() {
            self.pkts = v;
        }
    }

    /// Drops the packets sent so far, keeping their boxes.
    pub fn clear(&mut self) {
        while let Some((_, p)) = self.pkts.pop() {
            self.recycle(p);
        }
    }

    /// The packets sent so far, as values (tests).
    pub fn drain_values(&mut self) -> Vec<(usize, Packet)> {
        self.pkts.drain(..).map(|(i, p)| (i, *p)).collect()
    }
}

/// What an endpoint call hands back besides its packets.
pub struct Io<'a> {
    /// Packets to send, as (subflow, packet); the loop routes them (data forward, ACKs reverse).
    pub out: &'a mut Outbox,
    /// Sender: bytes the application has written in total (input to
    /// [`Endpoint::poll_transmit`]).
    pub app_limit: u64,
    /// Receiver: bytes the application read during the call.
    pub read: u64,
    /// Receiver: the byte range `[start, end)` newly delivered in order to the application.
    pub delivered: Option<(u64, u64)>,
}

impl<'a> Io<'a> {
    pub fn new(out: &'a mut Outbox) -> Self {
        Io {
            out,
            app_limit: 0,
            read: 0,
            delivered: None,
        }
    }
}

/// Outside actions on an endpoint (from [drivers](crate::engine::drivers)).
#[derive(Clone, Debug, PartialEq)]
pub enum Action {
    /// The data receiver asks the sender to treat `subflow` as backup (B=1) or regular (B=0):
    /// MP_PRIO on a pure ACK of that subflow (RFC 8684 §3.3.8).
    SetBackup { subflow: usize, backup: bool },
    /// The sender collapses `subflow`'s congestion window to one segment (subflow blocking,
    /// Park et al. 2022).
    CollapseCwnd { subflow: usize },
    /// A phase of handoff `id` (1, 2, ...) at the mobile host (the data receiver; `handoff`).
    Handoff { phase: HandoffPhase, id: u32 },
}

/// The moments of a handoff a receiver's scheme may act on (`crate::handoff`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum HandoffPhase {
    /// A predicted handoff is `warning` away (Freeze-TCP's zero window).
    Warn,
    /// The handoff starts: the old base station stops delivering.
    Start,
    /// EHN's notification leaves (at the start unless delayed for a test).
    SendEhn,
    /// The handoff ends: the new base station delivers.
    End,
}

/// What drivers may read of an endpoint.
#[derive(Clone, Debug, Default)]
pub struct Observation {
    /// Per subflow: the receiver's RTT estimate (ns, 0 = unknown).
    pub rtt: Vec<Time>,
    /// Per subflow: segments received so far.
    pub segments_received: Vec<u64>,
}

/// Cumulative byte counters (for the warm-up cut and the summary).
#[derive(Clone, Debug, Default)]
pub struct Counters {
    /// Receiver: bytes delivered in order to the application.
    pub delivered: u64,
    /// Sender: bytes sent on the wire (payload + headers, retransmissions included).
    pub sent: u64,
    /// Per subflow, (delivered via it, sent on it); empty for single-path TCP.
    pub subflows: Vec<(u64, u64)>,
}

/// One time-series sample (per bin); each end fills what it knows.
#[derive(Clone, Debug, Default)]
pub struct Sample {
    pub cwnd_segments: f64,
    pub srtt_ms: f64,
    pub rto_ms: f64,
    pub ofo_bytes: f64,
    pub rcvbuf_bytes: f64,
    /// Receiver: ACKs sent so far (cumulative).
    pub acks_sent: u64,
    /// Per subflow (MPTCP): (cwnd in segments, srtt in ms).
    pub subflows: Vec<(f64, f64)>,
}

/// The end-of-run summary of an end: flow-level fields and, for MPTCP, per-subflow fields.
/// Built from typed stats structs ([`to_map`]); the loop merges the two ends' maps.
#[derive(Clone, Debug, Default)]
pub struct EndpointSummary {
    pub fields: Map<String, Value>,
    pub subflows: Vec<Map<String, Value>>,
}

/// A typed stats struct as a JSON map.
pub fn to_map<T: serde::Serialize>(v: &T) -> Map<String, Value> {
    match serde_json::to_value(v).expect("stats serialise") {
        Value::Object(m) => m,
        _ => Map::new(),
    }
}

/// One end of a connection (see the module docs). Every call takes `now`; none reads a clock.
pub trait Endpoint {
    /// A packet for this end arrived.
    fn on_packet(&mut self, now: Time, p: &Packet, io: &mut Io);
    /// Its timer fired (possibly early: it re-checks its own deadlines).
    fn on_timeout(&mut self, now: Time, io: &mut Io);
    /// Sends what it may now, given `io.app_limit` (senders; receivers send only in reply).
    fn poll_transmit(&mut self, _now: Time, _io: &mut Io) {}
    /// When it next needs [`on_timeout`](Self::on_timeout) (`NEVER` if not).
    fn poll_timeout(&self, now: Time) -> Time;
    /// An outside action; ends that do not support it ignore it.
    fn act(&mut self, _now: Time, _action: &Action, _io: &mut Io) {}
    /// What drivers may read.
    fn observe(&self) -> Observation {
        Observation::default()
    }
    /// Sender: (bytes taken from the application so far, bytes the application has written).
    fn app_position(&self) -> (u64, u64) {
        (0, 0)
    }
    /// Receiver: bytes delivered per subflow so far (empty for single-path TCP).
    fn delivered_per_subflow(&self) -> &[u64] {
        &[]
    }
    /// Sender: bytes the peer has acknowledged cumulatively (connection level for MPTCP).
    fn acked_bytes(&self) -> u64 {
        0
    }
    /// Receiver: bytes the application has read.
    fn read_bytes(&self) -> u64 {
        0
    }
    /// Receiver feeding a relay: the application reads at most up to stream offset `limit`
    /// (raised as the relay's output drains). Sets `io.read` and may send a window update.
    fn set_read_limit(&mut self, _now: Time, _limit: u64, _io: &mut Io) {}
    /// Receiver feeding a relay: the read limit before the run starts (the relay's buffer).
    fn init_read_limit(&mut self, _limit: u64) {}
    fn counters(&self) -> Counters;
    /// Adds what this end knows to the bin's sample.
    fn record(&self, s: &mut Sample);
    /// The end's summary at `end`; `since` is the flow's start.
    fn summary(&mut self, end: Time, since: Time) -> EndpointSummary;
}

/// The two ends of a flow's connection: (data sender, data receiver). The registry of
/// transports: one arm per transport.
pub fn build(
    f: &FlowPlan,
    flow: u32,
    rngs: &RngStreams,
    split_windows: &[(Time, Time)],
) -> (Box<dyn Endpoint>, Box<dyn Endpoint>) {
    match &f.transport {
        Transport::Tcp { .. } => tcp::build(f, flow, rngs),
        Transport::Mptcp(m) => mptcp::build(f, m, flow, rngs, split_windows),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn outbox_reuses_boxes_and_keeps_only_what_was_sent() {
        let mut out = Outbox::default();
        let mut a = Packet::new(PacketKind::Ack);
        a.ack = 5;
        out.push(1, a);
        assert!(!out.push_with(0, |p| {
            p.seq = 99;
            false
        }));
        assert!(out.push_with(2, |p| {
            *p = Packet::new(PacketKind::Data);
            p.seq = 7;
            true
        }));
        let sent: Vec<(usize, u64, u64)> = out.iter().map(|(i, p)| (i, p.ack, p.seq)).collect();
        assert_eq!(sent, vec![(1, 5, 0), (2, 0, 7)]);
        // A delivered packet's box is the next one filled (no allocation), and the pool is bounded.
        let v = out.take();
        let addr = &*v[1].1 as *const Packet;
        for (_, p) in v {
            out.recycle(p);
        }
        assert!(
            out.push_with(0, |p| std::ptr::eq(p, addr)),
            "the last box recycled is reused first"
        );
        out.clear();
        for _ in 0..SPARE_BOXES + 10 {
            out.recycle(Box::new(Packet::new(PacketKind::Ack)));
        }
        assert_eq!(out.spare.len(), SPARE_BOXES);
        assert!(out.is_empty());
    }
}
