//! The model's packets as IPv4/TCP bytes: what the header fields the model does not carry are,
//! and how those it carries map onto a real header.
//!
//! The model has byte offsets, not TCP sequence numbers; no handshake for single-path TCP or for
//! an MPTCP connection's first subflow; no keys, tokens or nonces. The capture fills them in,
//! deterministically from the run's seed (`derive`: the first 8 bytes of
//! SHA-256(`"mobipath capture/<seed>/flow/<i>/<what>"`)), so the same seed gives the same bytes:
//!
//! - addresses: path *k* (scenario order) is 10.77.*k+1*.0/24 as the emulator lays it out, its
//!   `from` node (the data sender) .1 and its `to` node .2 (paths beyond 255 continue in
//!   10.78.x, 10.79.x, …); ports: the data sender 10000 + (256·flow + subflow) mod 55000, the
//!   receiver 5201;
//! - ISNs: one per subflow and side; a data byte at model offset *x* has sequence number
//!   ISN + 1 + *x* (mod 2³²), as after a SYN;
//! - timestamps (RFC 7323): TSval = the packet's time in ms plus a per-side offset, as Linux's
//!   1 ms clock with `tcp_ts_off`;
//! - window: the receiver's window scale is the smallest shift that fits its buffer in 16 bits
//!   (Linux `tcp_select_initial_window`); the field is `rwnd >> scale`. The data sender's own
//!   receive window is not modelled: it advertises 512 << 7 bytes (scale 7);
//! - MPTCP: the two keys, the join nonces, then tokens, IDSNs and HMACs from them (RFC 8684,
//!   [`super::mptcp`]); a DSN at model offset *d* is IDSN + 1 + *d*; the data sender's DATA_ACK
//!   (it receives no data) is the receiver's IDSN + 1;
//! - option space: 40 bytes as in TCP. Data segments carry timestamps and, for MPTCP, a DSS
//!   with DATA_ACK and mapping (38 bytes). ACKs carry timestamps, the DSS DATA_ACK and MP_PRIO
//!   when the model sends one, then as many SACK blocks (DSACK first) as still fit — fewer than
//!   the model holds when MPTCP options take the room, as Linux trims them
//!   (`tcp_established_options`).
//!
//! Headers are real; payload bytes are zeros (the model has none), so TCP checksums are those of
//! zero-filled payloads. Lengths are the real header lengths: an MPTCP packet is longer on file
//! than the model's 52-byte header allowance (`packet::HEADER_BYTES`) by its MPTCP options.
//!
//! Not on the wire, as the model does not have them: DATA_FIN, ADD_ADDR, MP_FAIL, MP_FASTCLOSE,
//! the MP_JOIN third ACK, FIN/RST; P1's retransmission requests (no standard option). P3's
//! handoff messages (EHN, Greet) are not TCP: they are IPv4 packets of protocol 253 (RFC 3692,
//! for experiments) whose payload is a 4-byte tag (`EHN\0`, `GRT\0`), the handoff id and the
//! receiver's next expected TCP sequence number.
use super::mptcp::{self, Mapping};
use crate::core::time::Time;
use crate::packet::{Packet, PacketKind};
use crate::plan::{Plan, Transport};
use etherparse::{IpNumber, Ipv4Header, TcpHeader};
use sha2::{Digest, Sha256};

/// The data receiver's port (iperf3's).
pub const RECEIVER_PORT: u16 = 5201;
/// The data sender's window scale and window field (its receive window is not modelled).
const SENDER_WSCALE: u8 = 7;
const SENDER_WINDOW: u16 = 512;
const TTL: u8 = 64;
/// IP protocol number for P3's handoff messages (RFC 3692: experimentation).
const HANDOFF_PROTOCOL: u8 = 253;
const MAX_OPTIONS: usize = 40;

/// One subflow (or a TCP connection): the fields of its headers the model does not carry.
#[derive(Clone, Debug)]
pub struct Subflow {
    pub path: usize,
    pub sender_port: u16,
    pub isn_sender: u32,
    pub isn_receiver: u32,
    pub ts_off_sender: u32,
    pub ts_off_receiver: u32,
    /// MP_JOIN nonces R-A (sender, the initiator) and R-B.
    pub nonce_sender: u32,
    pub nonce_receiver: u32,
    /// MP_JOIN B flag from the scenario.
    pub backup: bool,
}

/// An MPTCP connection's keys and what follows from them.
#[derive(Clone, Copy, Debug)]
pub struct Keys {
    pub sender: u64,
    pub receiver: u64,
    pub receiver_token: u32,
    pub sender_idsn: u64,
    pub receiver_idsn: u64,
}

#[derive(Clone, Debug)]
pub struct Flow {
    /// When the connection starts (its handshake is written at this time).
    pub start: Time,
    pub mss: u16,
    pub receiver_wscale: u8,
    pub keys: Option<Keys>,
    pub subflows: Vec<Subflow>,
}

/// Which handshake packet the capture writes for a connection that the model starts established.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Handshake {
    Syn,
    SynAck,
    Ack,
}

/// Every flow's header fields, and scratch space for encoding.
pub struct Wire {
    flows: Vec<Flow>,
    zeros: Vec<u8>,
    opts: Vec<u8>,
}

/// 8 bytes of SHA-256 over a label naming the run's seed, the flow and what is derived.
fn derive(seed: u64, flow: usize, what: &str) -> u64 {
    let d = Sha256::digest(format!("mobipath capture/{seed}/flow/{flow}/{what}").as_bytes());
    u64::from_be_bytes(d[..8].try_into().expect("8 bytes"))
}

/// The smallest shift that brings `buf` within 16 bits, at most 14 (RFC 7323 §2.3).
pub fn window_scale(buf: u64) -> u8 {
    let mut s = 0;
    while s < 14 && (buf >> s) > 65535 {
        s += 1;
    }
    s
}

/// The IPv4 address of a path's end: path `k` is 10.77.(k+1).0/24, `from` = .1, `to` = .2.
pub fn path_address(k: usize, to_side: bool) -> [u8; 4] {
    let n = k + 1;
    [10, (77 + n / 256) as u8, (n % 256) as u8, if to_side { 2 } else { 1 }]
}

fn ms(t: Time) -> u32 {
    (t / 1_000_000) as u32
}

impl Wire {
    pub fn new(plan: &Plan) -> Wire {
        let seed = plan.seed;
        let flows = plan
            .flows
            .iter()
            .enumerate()
            .map(|(i, fp)| {
                let (paths, backup, buf) = match &fp.transport {
                    Transport::Tcp { path } => (vec![*path], vec![false], fp.receiver.rcv_buf),
                    Transport::Mptcp(m) => (m.paths.clone(), m.backup.clone(), m.rcv_buf),
                };
                let keys = matches!(fp.transport, Transport::Mptcp(_)).then(|| {
                    let (sender, receiver) = (derive(seed, i, "key/sender"), derive(seed, i, "key/receiver"));
                    let (receiver_token, receiver_idsn) = mptcp::token_and_idsn(receiver);
                    let (_, sender_idsn) = mptcp::token_and_idsn(sender);
                    Keys {
                        sender,
                        receiver,
                        receiver_token,
                        sender_idsn,
                        receiver_idsn,
                    }
                });
                let subflows = paths
                    .iter()
                    .enumerate()
                    .map(|(k, &path)| {
                        let d = |what: &str| derive(seed, i, &format!("subflow/{k}/{what}"));
                        Subflow {
                            path,
                            sender_port: 10000 + ((256 * i + k) % 55000) as u16,
                            isn_sender: d("isn/sender") as u32,
                            isn_receiver: d("isn/receiver") as u32,
                            ts_off_sender: d("ts/sender") as u32,
                            ts_off_receiver: d("ts/receiver") as u32,
                            nonce_sender: d("nonce/sender") as u32,
                            nonce_receiver: d("nonce/receiver") as u32,
                            backup: backup.get(k).copied().unwrap_or(false),
                        }
                    })
                    .collect();
                Flow {
                    start: fp.start,
                    mss: fp.mss.min(u16::MAX as u32) as u16,
                    receiver_wscale: window_scale(buf),
                    keys,
                    subflows,
                }
            })
            .collect();
        Wire {
            flows,
            zeros: Vec::new(),
            opts: Vec::with_capacity(MAX_OPTIONS),
        }
    }

    pub fn flow(&self, i: usize) -> &Flow {
        &self.flows[i]
    }

    /// Writes `p`'s IP and TCP headers (no payload) into `out` (cleared first) as it is on the
    /// wire at `now`; returns the packet's whole length on the wire (headers + payload).
    pub fn encode(&mut self, p: &Packet, now: Time, out: &mut Vec<u8>) -> u32 {
        out.clear();
        let fi = p.flow as usize;
        let flow = &self.flows[fi];
        let sf = &flow.subflows[(p.subflow as usize).min(flow.subflows.len() - 1)];
        let from_sender = matches!(p.kind, PacketKind::Data | PacketKind::WindowProbe | PacketKind::Syn);
        let (a, b) = (path_address(sf.path, false), path_address(sf.path, true));
        let (src, dst) = if from_sender { (a, b) } else { (b, a) };
        let seq_s = |x: u64| sf.isn_sender.wrapping_add(1).wrapping_add(x as u32);
        let ts_s = |t: Time| ms(t).wrapping_add(sf.ts_off_sender);
        let ts_r = |t: Time| ms(t).wrapping_add(sf.ts_off_receiver);
        let echo = |t: Time, off: u32| if t == 0 { 0 } else { ms(t).wrapping_add(off) };
        let opts = &mut self.opts;
        opts.clear();
        let (mut tcp, payload) = match p.kind {
            PacketKind::Ehn | PacketKind::Greet => {
                let tag: &[u8; 4] = if p.kind == PacketKind::Ehn { b"EHN\0" } else { b"GRT\0" };
                let mut body = [0u8; 12];
                body[..4].copy_from_slice(tag);
                body[4..8].copy_from_slice(&p.handoff_id.to_be_bytes());
                body[8..].copy_from_slice(&seq_s(p.ack).to_be_bytes());
                let ip = ipv4(src, dst, IpNumber(HANDOFF_PROTOCOL), body.len() as u16);
                ip.write(out).expect("writing to a Vec");
                out.extend_from_slice(&body);
                return out.len() as u32;
            }
            PacketKind::Data | PacketKind::WindowProbe => {
                let mut h = TcpHeader::new(sf.sender_port, RECEIVER_PORT, seq_s(p.seq), SENDER_WINDOW);
                let len = if p.kind == PacketKind::Data { p.len } else { 0 };
                if p.kind == PacketKind::WindowProbe {
                    // Linux's zero-window probe: no data, the last acknowledged byte's number.
                    h.sequence_number = h.sequence_number.wrapping_sub(1);
                }
                h.ack = true;
                h.acknowledgment_number = sf.isn_receiver.wrapping_add(1);
                timestamps(opts, ts_s(p.ts_val), echo(p.ts_ecr, sf.ts_off_receiver));
                if let Some(k) = flow.keys {
                    let mapping = (len > 0).then(|| Mapping {
                        dsn: k.sender_idsn.wrapping_add(1).wrapping_add(p.dsn),
                        ssn: (p.seq as u32).wrapping_add(1),
                        len: len.min(u16::MAX as u32) as u16,
                    });
                    mptcp::dss(opts, Some(k.receiver_idsn.wrapping_add(1)), mapping, false);
                }
                (h, len)
            }
            PacketKind::Syn => {
                let mut h = TcpHeader::new(sf.sender_port, RECEIVER_PORT, sf.isn_sender, u16::MAX);
                h.syn = true;
                syn_options(opts, flow.mss, ts_s(p.ts_val.max(now)), 0, SENDER_WSCALE);
                if let Some(k) = flow.keys {
                    mptcp::join_syn(opts, sf.backup, p.subflow as u8, k.receiver_token, sf.nonce_sender);
                }
                (h, 0)
            }
            PacketKind::SynAck => {
                let mut h = TcpHeader::new(RECEIVER_PORT, sf.sender_port, sf.isn_receiver, u16::MAX);
                h.syn = true;
                h.ack = true;
                h.acknowledgment_number = sf.isn_sender.wrapping_add(1);
                let tsval = ts_r(if p.ts_val > 0 { p.ts_val } else { now });
                syn_options(
                    opts,
                    flow.mss,
                    tsval,
                    echo(p.ts_ecr, sf.ts_off_sender),
                    flow.receiver_wscale,
                );
                if let Some(k) = flow.keys {
                    let hmac = mptcp::join_hmac64(k.receiver, k.sender, sf.nonce_receiver, sf.nonce_sender);
                    mptcp::join_synack(opts, p.mp_prio == 2, p.subflow as u8, hmac, sf.nonce_receiver);
                }
                (h, 0)
            }
            PacketKind::Ack => {
                let window = (p.rwnd >> flow.receiver_wscale).min(u16::MAX as u64) as u16;
                let mut h = TcpHeader::new(RECEIVER_PORT, sf.sender_port, sf.isn_receiver.wrapping_add(1), window);
                h.ack = true;
                h.acknowledgment_number = seq_s(p.ack);
                timestamps(opts, ts_r(p.ts_val), echo(p.ts_ecr, sf.ts_off_sender));
                if let Some(k) = flow.keys {
                    mptcp::dss(
                        opts,
                        Some(k.sender_idsn.wrapping_add(1).wrapping_add(p.data_ack)),
                        None,
                        false,
                    );
                    if p.mp_prio != 0 {
                        mptcp::prio(opts, p.mp_prio == 2);
                        opts.push(NOP);
                    }
                }
                let room = MAX_OPTIONS - opts.len();
                let fit = room.saturating_sub(4) / 8; // NOP NOP kind len, then 8 bytes a block
                let blocks = &p.sacks()[..p.sacks().len().min(fit)];
                if !blocks.is_empty() {
                    opts.extend_from_slice(&[NOP, NOP, 5, (2 + 8 * blocks.len()) as u8]);
                    for &(s, e) in blocks {
                        opts.extend_from_slice(&seq_s(s).to_be_bytes());
                        opts.extend_from_slice(&seq_s(e).to_be_bytes());
                    }
                }
                (h, 0)
            }
        };
        self.finish(&mut tcp, src, dst, payload, out)
    }

    /// Writes one packet of the handshake the model leaves out (a connection's first subflow
    /// starts established), at `now`; returns its length.
    pub fn encode_handshake(&mut self, flow: usize, which: Handshake, now: Time, out: &mut Vec<u8>) -> u32 {
        out.clear();
        let f = &self.flows[flow];
        let sf = &f.subflows[0];
        let (a, b) = (path_address(sf.path, false), path_address(sf.path, true));
        let opts = &mut self.opts;
        opts.clear();
        let (mut tcp, src, dst) = match which {
            Handshake::Syn => {
                let mut h = TcpHeader::new(sf.sender_port, RECEIVER_PORT, sf.isn_sender, u16::MAX);
                h.syn = true;
                syn_options(opts, f.mss, ms(now).wrapping_add(sf.ts_off_sender), 0, SENDER_WSCALE);
                if f.keys.is_some() {
                    mptcp::capable_syn(opts);
                }
                (h, a, b)
            }
            Handshake::SynAck => {
                let mut h = TcpHeader::new(RECEIVER_PORT, sf.sender_port, sf.isn_receiver, u16::MAX);
                h.syn = true;
                h.ack = true;
                h.acknowledgment_number = sf.isn_sender.wrapping_add(1);
                let (tsval, tsecr) = (
                    ms(now).wrapping_add(sf.ts_off_receiver),
                    ms(now).wrapping_add(sf.ts_off_sender),
                );
                syn_options(opts, f.mss, tsval, tsecr, f.receiver_wscale);
                if let Some(k) = f.keys {
                    mptcp::capable_synack(opts, k.receiver);
                }
                (h, b, a)
            }
            Handshake::Ack => {
                let mut h = TcpHeader::new(
                    sf.sender_port,
                    RECEIVER_PORT,
                    sf.isn_sender.wrapping_add(1),
                    SENDER_WINDOW,
                );
                h.ack = true;
                h.acknowledgment_number = sf.isn_receiver.wrapping_add(1);
                timestamps(
                    opts,
                    ms(now).wrapping_add(sf.ts_off_sender),
                    ms(now).wrapping_add(sf.ts_off_receiver),
                );
                if let Some(k) = f.keys {
                    mptcp::capable_ack(opts, k.sender, k.receiver);
                }
                (h, a, b)
            }
        };
        self.finish(&mut tcp, src, dst, 0, out)
    }

    /// Sets the options and checksums, writes IPv4 + TCP headers; returns the length on the wire.
    fn finish(&mut self, tcp: &mut TcpHeader, src: [u8; 4], dst: [u8; 4], payload: u32, out: &mut Vec<u8>) -> u32 {
        while !self.opts.len().is_multiple_of(4) {
            self.opts.push(NOP);
        }
        debug_assert!(self.opts.len() <= MAX_OPTIONS, "{} option bytes", self.opts.len());
        tcp.set_options_raw(&self.opts).expect("options fit in 40 bytes");
        let payload = payload.min(u16::MAX as u32 - 60) as usize;
        if self.zeros.len() < payload {
            self.zeros.resize(payload, 0);
        }
        let zeros = &self.zeros[..payload];
        tcp.checksum = tcp.calc_checksum_ipv4_raw(src, dst, zeros).expect("length checked");
        let ip = ipv4(src, dst, IpNumber::TCP, (tcp.header_len() + payload) as u16);
        ip.write(out).expect("writing to a Vec");
        tcp.write(out).expect("writing to a Vec");
        (out.len() + payload) as u32
    }
}

const NOP: u8 = 1;

fn ipv4(src: [u8; 4], dst: [u8; 4], protocol: IpNumber, payload_len: u16) -> Ipv4Header {
    // Don't Fragment set, identification 0 (RFC 6864: atomic datagrams), as Linux sends TCP.
    Ipv4Header::new(payload_len, TTL, protocol, src, dst).expect("payload below 64 KiB")
}

/// NOP NOP TS (RFC 7323 Appendix A's layout), 12 bytes.
fn timestamps(opts: &mut Vec<u8>, tsval: u32, tsecr: u32) {
    opts.extend_from_slice(&[NOP, NOP, 8, 10]);
    opts.extend_from_slice(&tsval.to_be_bytes());
    opts.extend_from_slice(&tsecr.to_be_bytes());
}

/// A SYN's options in Linux's order: MSS, SACK-permitted, timestamps, NOP, window scale (20 bytes).
fn syn_options(opts: &mut Vec<u8>, mss: u16, tsval: u32, tsecr: u32, wscale: u8) {
    opts.extend_from_slice(&[2, 4]);
    opts.extend_from_slice(&mss.to_be_bytes());
    opts.extend_from_slice(&[4, 2, 8, 10]);
    opts.extend_from_slice(&tsval.to_be_bytes());
    opts.extend_from_slice(&tsecr.to_be_bytes());
    opts.extend_from_slice(&[NOP, 3, 3, wscale]);
}
