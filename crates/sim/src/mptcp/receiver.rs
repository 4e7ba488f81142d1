//! The MPTCP data receiver: subflow reassembly, then connection-level reassembly by DSN in one
//! shared receive buffer, DATA_ACK, MP_PRIO and P1's receiver-based loss recovery.
//!
//! As in Linux, data reaches the connection level only when it is in order at subflow level
//! (the subflow's own out-of-order queue holds it before). At connection level, data beyond a
//! missing DSN waits in the out-of-order queue: that wait is the head-of-line delay. The
//! advertised window is the connection's buffer minus unread data, relative to DATA_ACK
//! (RFC 8684 §3.3.5), so out-of-order data uses up the window and stalls every subflow.
//!
//! MP_PRIO (RFC 8684 §3.3.8) goes out once, on a pure ACK of the subflow it concerns, and is
//! never repeated (Linux `mptcp_pm_nl_mp_prio_send_ack`); it can be lost.
//!
//! P1 receiver-based recovery (papers.md P1, Fig. 6): a subflow-level gap starts a watch on the
//! expected DSN; once three packets with higher DSNs have been seen (the gap-revealing one plus
//! two more), the receiver asks for the expected DSN on the path with the lowest one-way delay
//! (measured from the sender's timestamps: both paths share the sender's clock, so comparing
//! them is valid even without synchronised clocks).
use crate::core::time::{Time, NEVER};
use crate::metrics::WeightedHist;
use crate::packet::{Packet, PacketKind, NONE_U64};
use crate::tcp::receiver::TcpReceiver;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct MptcpReceiverStats {
    pub bytes_delivered: u64,
    /// Bytes delivered per subflow (attributed to the subflow whose copy arrived first).
    pub delivered_per_subflow: Vec<u64>,
    pub duplicate_bytes: u64,
    pub dropped_beyond_window: u64,
    pub retx_requests: u64,
    pub mp_prio_sent: u64,
}

/// A data segment as it arrived, waiting to be in order at subflow level.
#[derive(Clone, Copy, Debug)]
struct Arrived {
    dsn: u64,
    len: u32,
    arrival: Time,
    /// When this DSN was first transmitted (by any subflow).
    first_sent: Time,
    /// This copy is not the DSN's first transmission (a retransmission or reinjection).
    is_retx: bool,
}

pub struct MptcpReceiver {
    pub subflows: Vec<TcpReceiver>,
    /// Per subflow: data that arrived out of order at subflow level, by subflow seq.
    pending: Vec<BTreeMap<u64, Arrived>>,
    data_rcv_nxt: u64,
    /// Connection-level out-of-order queue: dsn → (len, arrival, subflow).
    ofo: BTreeMap<u64, (u32, Time, usize)>,
    ofo_bytes: u64,
    /// Bytes waiting in the subflows' own out-of-order queues.
    held_bytes: u64,
    rcv_buf: u64,
    /// Pending MP_PRIO per subflow: 0 none, 1 B=0, 2 B=1.
    prio_pending: Vec<u8>,
    // P1 recovery
    receiver_recovery: bool,
    watch: Option<(u64, u32)>,
    requested_dsn: u64,
    owd: Vec<Time>,
    // metrics
    pub stats: MptcpReceiverStats,
    pub hol: WeightedHist,
    /// HoL delay and OFO occupancy split by whether `now` lies in a handover window
    /// (see [`MptcpReceiver::set_handover_windows`]): index 0 = outside, 1 = inside.
    pub hol_split: [WeightedHist; 2],
    pub ofo_split: [WeightedHist; 2],
    handover_windows: Vec<(Time, Time)>,
    pub ofo_hist: WeightedHist,
    pub buf_hist: WeightedHist,
    pub recovery_hist: WeightedHist,
    last_change: Time,
    ofo_byte_ns: f64,
    buf_byte_ns: f64,
}

impl MptcpReceiver {
    pub fn new(subflows: Vec<TcpReceiver>, rcv_buf: u64, receiver_recovery: bool) -> Self {
        let n = subflows.len();
        MptcpReceiver {
            subflows,
            pending: vec![BTreeMap::new(); n],
            data_rcv_nxt: 0,
            ofo: BTreeMap::new(),
            ofo_bytes: 0,
            held_bytes: 0,
            rcv_buf,
            prio_pending: vec![0; n],
            receiver_recovery,
            watch: None,
            requested_dsn: NONE_U64,
            owd: vec![0; n],
            stats: MptcpReceiverStats { delivered_per_subflow: vec![0; n], ..Default::default() },
            hol: WeightedHist::new(1e-6, 1e3),
            hol_split: [WeightedHist::new(1e-6, 1e3), WeightedHist::new(1e-6, 1e3)],
            ofo_split: [WeightedHist::new(1.0, 1e10), WeightedHist::new(1.0, 1e10)],
            handover_windows: Vec::new(),
            ofo_hist: WeightedHist::new(1.0, 1e10),
            buf_hist: WeightedHist::new(1.0, 1e10),
            recovery_hist: WeightedHist::new(1e-6, 1e3),
            last_change: 0,
            ofo_byte_ns: 0.0,
            buf_byte_ns: 0.0,
        }
    }

    pub fn data_rcv_nxt(&self) -> u64 {
        self.data_rcv_nxt
    }
    pub fn ofo_bytes(&self) -> u64 {
        self.ofo_bytes
    }
    /// Receive-buffer occupancy: out-of-order data (the application reads in-order data at once).
    pub fn buffered(&self) -> u64 {
        self.ofo_bytes + self.subflow_held()
    }
    fn subflow_held(&self) -> u64 {
        self.held_bytes
    }
    /// The receiver's RTT estimate for subflow `i`: twice the smoothed one-way delay of arriving
    /// data (0 before any data).
    pub fn rtt_estimate(&self, i: usize) -> Time {
        2 * self.owd.get(i).copied().unwrap_or(0)
    }

    pub fn window(&self) -> u64 {
        self.rcv_buf
    }

    /// Queue MP_PRIO for subflow `i` (sent once on the next pure ACK, which goes out now).
    pub fn request_mp_prio(&mut self, i: usize, backup: bool, now: Time) -> Option<Packet> {
        if i >= self.subflows.len() {
            return None;
        }
        self.prio_pending[i] = if backup { 2 } else { 1 };
        self.stats.mp_prio_sent += 1;
        // A pure ACK carrying the option, right away.
        let mut a = self.subflows[i].force_ack(now);
        self.decorate(i, &mut a);
        Some(a)
    }

    /// Windows [start, end) in which metrics count as "during a handover" (sorted).
    pub fn set_handover_windows(&mut self, windows: Vec<(Time, Time)>) {
        self.handover_windows = windows;
    }

    fn in_handover(&self, t: Time) -> usize {
        let i = self.handover_windows.partition_point(|&(_, e)| e <= t);
        usize::from(self.handover_windows.get(i).is_some_and(|&(s, _)| s <= t))
    }

    fn account(&mut self, now: Time) {
        let dt = now.saturating_sub(self.last_change);
        if dt > 0 && !self.handover_windows.is_empty() {
            // Attribute the interval to where it ends (intervals are short: one packet apart).
            let k = self.in_handover(now);
            self.ofo_split[k].add(self.ofo_bytes as f64, dt as f64);
        }
        if dt > 0 {
            let ofo = self.ofo_bytes as f64;
            let buf = self.buffered() as f64;
            self.ofo_byte_ns += ofo * dt as f64;
            self.buf_byte_ns += buf * dt as f64;
            self.ofo_hist.add(ofo, dt as f64);
            self.buf_hist.add(buf, dt as f64);
        }
        self.last_change = now;
    }

    /// Time-weighted means of OFO and buffer occupancy up to `now`.
    pub fn finish(&mut self, now: Time, since: Time) -> (f64, f64) {
        self.account(now);
        let span = now.saturating_sub(since).max(1) as f64;
        (self.ofo_byte_ns / span, self.buf_byte_ns / span)
    }

    /// Adds the connection-level options to an ACK leaving on subflow `i`.
    fn decorate(&mut self, i: usize, a: &mut Packet) {
        a.data_ack = self.data_rcv_nxt;
        a.rwnd = self.window();
        if self.prio_pending[i] != 0 && a.len == 0 {
            a.mp_prio = self.prio_pending[i];
            self.prio_pending[i] = 0;
        }
    }

    /// A packet for this connection arrived on subflow `i`. Returns the ACKs to send as
    /// (subflow, packet) in `out`, and the bytes newly delivered to the application.
    pub fn on_packet(&mut self, i: usize, now: Time, p: &Packet, out: &mut Vec<(usize, Packet)>) -> u64 {
        if p.kind == PacketKind::Syn {
            let mut a = Packet::new(PacketKind::SynAck);
            a.flow = p.flow;
            a.subflow = p.subflow;
            a.ts_ecr = p.ts_val;
            out.push((i, a));
            return 0;
        }
        self.account(now);
        if p.kind == PacketKind::Data && p.len > 0 {
            let owd = now.saturating_sub(p.ts_val);
            self.owd[i] = if self.owd[i] == 0 { owd } else { (7 * self.owd[i] + owd) / 8 };
        }
        let rcv_nxt = self.subflows[i].rcv_nxt();
        let sub_gap_before = p.kind == PacketKind::Data && p.seq > rcv_nxt;
        let arrived = Arrived {
            dsn: p.dsn,
            len: p.len,
            arrival: now,
            first_sent: p.dsn_first_sent,
            is_retx: p.retransmit || p.ts_val > p.dsn_first_sent,
        };
        let is_new = p.kind == PacketKind::Data && p.seq + p.len as u64 > rcv_nxt;
        // Common case: in order at subflow level with nothing held back. The segment goes
        // straight to the connection level if the subflow accepts it in full (as the map
        // below would hand it over), without a trip through the subflow's queue.
        let direct = is_new && p.seq == rcv_nxt && self.pending[i].is_empty();
        if is_new && !direct {
            let held = &mut self.held_bytes;
            self.pending[i].entry(p.seq).or_insert_with(|| {
                *held += p.len as u64;
                arrived
            });
        }
        let (range, ack) = self.subflows[i].on_segment(now, p);
        let before = self.stats.bytes_delivered;
        if direct {
            match range {
                Some((_, e)) if e > p.seq => self.conn_segment(i, now, arrived),
                _ => {
                    self.held_bytes += p.len as u64;
                    self.pending[i].insert(p.seq, arrived);
                }
            }
        } else if let Some((_, e)) = range {
            // Hand what is now in order at subflow level to the connection level.
            while let Some(entry) = self.pending[i].first_entry() {
                if *entry.key() >= e {
                    break;
                }
                let seg = entry.remove();
                self.held_bytes -= seg.len as u64;
                self.conn_segment(i, now, seg);
            }
        }
        if self.receiver_recovery && p.kind == PacketKind::Data {
            self.p1_watch(i, p, sub_gap_before, now, out);
        }
        if let Some(mut a) = ack {
            self.decorate(i, &mut a);
            out.push((i, a));
        }
        self.stats.bytes_delivered - before
    }

    /// Subflow timers (delayed ACK): decorate what they send.
    pub fn on_timer(&mut self, now: Time, out: &mut Vec<(usize, Packet)>) {
        for i in 0..self.subflows.len() {
            if now >= self.subflows[i].next_timeout(now) {
                if let Some(mut a) = self.subflows[i].on_timer(now) {
                    self.decorate(i, &mut a);
                    out.push((i, a));
                }
            }
        }
    }

    pub fn next_timeout(&self, now: Time) -> Time {
        self.subflows.iter().map(|s| s.next_timeout(now)).min().unwrap_or(NEVER)
    }

    fn conn_segment(&mut self, i: usize, now: Time, seg: Arrived) {
        let Arrived { dsn, len, arrival, first_sent, is_retx } = seg;
        let end = dsn + len as u64;
        if end <= self.data_rcv_nxt || self.ofo.contains_key(&dsn) {
            self.stats.duplicate_bytes += len as u64;
            return;
        }
        if end > self.data_rcv_nxt + self.rcv_buf {
            self.stats.dropped_beyond_window += 1;
            return;
        }
        // Loss-recovery time (metrics.md): the first copy of this DSN to arrive was not its
        // original transmission, so the original was lost (or overtaken).
        if is_retx {
            self.recovery_hist.add(arrival.saturating_sub(first_sent) as f64 / 1e9, 1.0);
        }
        if dsn > self.data_rcv_nxt {
            self.ofo.insert(dsn, (len, arrival, i));
            self.ofo_bytes += len as u64;
            return;
        }
        self.deliver(i, now, dsn, len, arrival);
        while let Some((&d, &(l, a, sf))) = self.ofo.iter().next() {
            if d > self.data_rcv_nxt {
                break;
            }
            self.ofo.remove(&d);
            self.ofo_bytes -= l as u64;
            if d + l as u64 > self.data_rcv_nxt {
                self.deliver(sf, now, d, l, a);
            } else {
                self.stats.duplicate_bytes += l as u64;
            }
        }
        if self.data_rcv_nxt > self.requested_dsn || self.requested_dsn == NONE_U64 {
            self.requested_dsn = NONE_U64;
        }
        if let Some((w, _)) = self.watch {
            if self.data_rcv_nxt > w {
                self.watch = None;
            }
        }
    }

    fn deliver(&mut self, i: usize, now: Time, dsn: u64, len: u32, arrival: Time) {
        let new_bytes = dsn + len as u64 - self.data_rcv_nxt.max(dsn);
        self.data_rcv_nxt = dsn + len as u64;
        self.stats.bytes_delivered += new_bytes;
        self.stats.delivered_per_subflow[i] += new_bytes;
        self.hol.add((now - arrival) as f64 / 1e9, new_bytes as f64);
        if !self.handover_windows.is_empty() {
            let k = self.in_handover(now);
            self.hol_split[k].add((now - arrival) as f64 / 1e9, new_bytes as f64);
        }
    }

    fn p1_watch(&mut self, i: usize, p: &Packet, sub_gap: bool, now: Time, out: &mut Vec<(usize, Packet)>) {
        let expected = self.data_rcv_nxt;
        if p.dsn <= expected {
            return;
        }
        match &mut self.watch {
            None if sub_gap => self.watch = Some((expected, 1)),
            Some((w, n)) if *w == expected => *n += 1,
            Some(_) => self.watch = Some((expected, 1)),
            None => {}
        }
        let Some((w, n)) = self.watch else { return };
        if n < 3 || self.requested_dsn == w {
            return;
        }
        // Ask for the missing data on the path with the lowest one-way delay.
        let best = (0..self.owd.len()).filter(|&k| self.owd[k] > 0).min_by_key(|&k| self.owd[k]).unwrap_or(i);
        let len = self.ofo.keys().next().map_or(p.len as u64, |&first| first.saturating_sub(w)).min(p.len.max(1) as u64) as u32;
        let mut a = self.subflows[best].force_ack(now);
        self.decorate(best, &mut a);
        a.retx_request = w;
        a.retx_request_len = len.max(1);
        out.push((best, a));
        self.requested_dsn = w;
        self.stats.retx_requests += 1;
    }
}
