//! Packets on the wire: TCP data segments, ACKs and window probes.
use crate::core::Time;

/// Bytes of IP + TCP headers (with the timestamp option) added to every segment,
/// so a 1448-byte MSS makes a 1500-byte packet, as on Linux over Ethernet.
pub const HEADER_BYTES: u32 = 52;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PacketKind {
    /// A segment carrying `len` payload bytes starting at `seq`.
    Data,
    /// A pure acknowledgement.
    Ack,
    /// A zero-window probe (carries no data, elicits an ACK).
    WindowProbe,
    /// MPTCP subflow join request (SYN with MP_JOIN).
    Syn,
    /// Answer to a join request (SYN/ACK with MP_JOIN).
    SynAck,
    /// P3's Explicit Handoff Notification, mobile host → fixed host (ICMP-like, not a TCP
    /// segment): a handoff started; `handoff_id` names it, `ack` is the receiver's `rcv_nxt`.
    Ehn,
    /// P3's Greet, mobile host → the new base station (which consumes it): `handoff_id`, and the
    /// receiver's `rcv_nxt` in `ack` so the base station can answer window probes for it.
    Greet,
}

/// No value in an optional `u64` packet field.
pub const NONE_U64: u64 = u64::MAX;

/// A SACK block: [start, end) in byte sequence space.
pub type SackBlock = (u64, u64);

#[derive(Clone, Debug)]
pub struct Packet {
    /// Unique id (for tracing and for the link's bookkeeping).
    pub id: u64,
    /// Which flow (connection) this belongs to.
    pub flow: u32,
    /// Subflow index within the connection (0 for single-path TCP).
    pub subflow: u16,
    /// Which route (chain of link directions) it travels, and how far it got.
    pub route: u16,
    pub hop: u8,
    pub kind: PacketKind,
    /// Data: first payload byte. ACK: unused.
    pub seq: u64,
    /// Payload bytes.
    pub len: u32,
    /// Cumulative ACK (next byte expected) — on ACKs.
    pub ack: u64,
    /// Advertised receive window in bytes — on ACKs.
    pub rwnd: u64,
    pub sack: [SackBlock; 3],
    pub n_sack: u8,
    /// Timestamp option: sender's clock when sent, and the echo.
    pub ts_val: Time,
    pub ts_ecr: Time,
    /// Whether this data segment is a retransmission.
    pub retransmit: bool,
    // --- MPTCP (RFC 8684) options; unused by single-path TCP ---
    /// DSS mapping: data sequence number of the payload's first byte.
    pub dsn: u64,
    /// DSS DATA_ACK: next data sequence number expected (on ACKs).
    pub data_ack: u64,
    /// MP_PRIO on this ACK: 0 = none, 1 = B=0 (regular), 2 = B=1 (backup).
    pub mp_prio: u8,
    /// Time this DSN was first transmitted (for the loss-recovery-time metric).
    pub dsn_first_sent: Time,
    /// Subflow of this DSN's first transmission (for the loss-recovery time per path).
    pub dsn_first_subflow: u16,
    /// Subflow sequence number of that first transmission (for the loss-recovery time from
    /// detection: the receiver finds when the gap at this seq was revealed).
    pub dsn_first_seq: u64,
    /// P1 receiver-based recovery: the data sequence number the receiver asks to be resent
    /// ([`NONE_U64`] = none).
    pub retx_request: u64,
    /// Length of the requested range.
    pub retx_request_len: u32,
    /// P3 handoff messages: the handoff this EHN or Greet announces, or (on an ACK) the handoff
    /// whose end this resume ACK signals; 0 = none.
    pub handoff_id: u32,
}

impl Packet {
    pub fn new(kind: PacketKind) -> Self {
        Packet {
            id: 0,
            flow: 0,
            subflow: 0,
            route: 0,
            hop: 0,
            kind,
            seq: 0,
            len: 0,
            ack: 0,
            rwnd: 0,
            sack: [(0, 0); 3],
            n_sack: 0,
            ts_val: 0,
            ts_ecr: 0,
            retransmit: false,
            dsn: 0,
            data_ack: 0,
            mp_prio: 0,
            dsn_first_sent: 0,
            dsn_first_subflow: 0,
            dsn_first_seq: 0,
            retx_request: NONE_U64,
            retx_request_len: 0,
            handoff_id: 0,
        }
    }

    /// Size on the wire in bytes (payload + headers).
    pub fn wire_bytes(&self) -> u32 {
        self.len + HEADER_BYTES
    }

    pub fn sacks(&self) -> &[SackBlock] {
        &self.sack[..self.n_sack as usize]
    }
}

/// A packet in transit. Boxed so that links, pipes, elements and events move a pointer, not the
/// ~150-byte header (each packet is moved through half a dozen queues between its endpoints).
pub type Pkt = Box<Packet>;
