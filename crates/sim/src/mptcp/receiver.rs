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
//! P1 receiver-based recovery (papers.md P1, Fig. 6): while a subflow has a sequence gap, the
//! receiver watches the data level; once three segments beyond the expected DSN have been seen
//! (the gap-revealing one plus two more; segments that arrived beyond the hole before the gap
//! showed count too), it declares the expected DSN lost and asks for it on the path with the
//! lowest one-way delay (measured from the sender's timestamps: both paths share the sender's
//! clock, so comparing them is valid even without synchronised clocks), the paper's "best path".
//! The request rides on a pure ACK of that subflow; the sender re-sends the data on it, ahead of
//! the new data queued there. If only the best path has a gap, nothing is asked: its own
//! retransmission is the fastest repair. Each expected DSN is asked for once.
//!
//! P1's receiver reads the data-level sequence number of every packet as it arrives (§3.2), so
//! with this option each packet goes to the connection level on arrival, by its own DSN mapping,
//! instead of waiting behind a subflow-level hole as in Linux (which takes a subflow's data only
//! in subflow order). Without that, the data-level repair would gain nothing: everything after
//! the hole on the lossy subflow would still wait for that subflow's own retransmission.
//!
//! Loss-recovery metrics, both over the same segments — those whose original transmission never
//! arrived (a copy that overtakes an original still on its way is not a recovery) — and both
//! also per subflow of the original transmission:
//! - from the send (`loss_recovery_*`, metrics.md): arrival of the data at the receiver, by any
//!   subflow, − the original transmission time;
//! - from detection (`loss_recovery_from_detection_*`): arrival of the data − the arrival of the
//!   first later segment (higher subflow sequence number) on the subflow the lost segment was
//!   originally sent on: the gap-revealing packet, the earliest moment any receiver could know of
//!   the loss. 0 if the data arrives before any such segment (e.g. a tail loss repaired by a
//!   timeout). The sender tags each segment with its DSN's first subflow sequence number
//!   (`Packet::dsn_first_seq`); the receiver keeps, per subflow, the ranges of sequence space a
//!   segment beyond them revealed as missing, with that segment's arrival time.
use crate::core::time::{Time, NEVER};
use crate::core::SortedDeque;
use crate::endpoint::Outbox;
use crate::metrics::WeightedHist;
use crate::packet::{Packet, PacketKind, NONE_U64};
use crate::tcp::receiver::TcpReceiver;
use std::collections::BTreeMap;

#[derive(Clone, Debug, Default)]
pub struct MptcpReceiverStats {
    pub bytes_delivered: u64,
    /// New data bytes per subflow, counted when the packet *arrives* at the receiver: new at
    /// subflow level, and its DSN range neither delivered nor held out of order at connection
    /// level yet (so a subflow's count never outruns its link: docs/metrics.md, "per-subflow
    /// goodput"). The name is kept for the callers; the flow's goodput counts in-order delivery.
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
    /// Subflow of that first transmission.
    first_subflow: u16,
    /// Its subflow sequence number.
    first_seq: u64,
    /// This copy is not the DSN's first transmission (a retransmission or reinjection).
    is_retx: bool,
}

pub struct MptcpReceiver {
    pub subflows: Vec<TcpReceiver>,
    /// Per subflow: data that arrived out of order at subflow level, by subflow seq.
    pending: Vec<SortedDeque<u64, Arrived>>,
    data_rcv_nxt: u64,
    /// In-order data the application has not read (a relay whose output is full), and the
    /// stream offset it may read up to (`u64::MAX` unless it feeds a relay).
    unread: u64,
    read_limit: u64,
    /// Right edge of the connection-level window last advertised.
    last_right_edge: u64,
    /// Connection-level out-of-order queue: dsn → (len, arrival, subflow).
    ofo: SortedDeque<u64, (u32, Time, usize)>,
    ofo_bytes: u64,
    /// Bytes waiting in the subflows' own out-of-order queues.
    held_bytes: u64,
    rcv_buf: u64,
    /// Pending MP_PRIO per subflow: 0 none, 1 B=0, 2 B=1.
    prio_pending: Vec<u8>,
    // P1 recovery
    receiver_recovery: bool,
    requested_dsn: u64,
    owd: Vec<Time>,
    // metrics
    pub stats: MptcpReceiverStats,
    pub hol: WeightedHist,
    /// HoL delay and OFO occupancy split by whether `now` lies in a split window
    /// (see [`MptcpReceiver::set_split_windows`]): index 0 = outside, 1 = inside.
    pub hol_split: [WeightedHist; 2],
    pub ofo_split: [WeightedHist; 2],
    split_windows: Vec<(Time, Time)>,
    pub ofo_hist: WeightedHist,
    pub buf_hist: WeightedHist,
    /// Loss-recovery time (s, metrics.md): for each segment whose original transmission never
    /// arrived, arrival of its data (first copy, any subflow) − the original's send time.
    pub recovery_hist: WeightedHist,
    /// The same, per subflow of the lost segment's first transmission.
    pub recovery_by_subflow: Vec<WeightedHist>,
    /// Loss-recovery time from detection (s), for the same segments: arrival of the data − the
    /// detection, which is the arrival of the first later segment (higher subflow sequence
    /// number) on the subflow the lost segment was first sent on — the gap-revealing packet, the
    /// earliest moment any receiver could know of the loss. If the data arrives before any such
    /// segment (a tail loss repaired by a timeout, or a reinjection that wins), it counts as 0.
    pub recovery_detect_hist: WeightedHist,
    /// The same, per subflow of the lost segment's first transmission.
    pub recovery_detect_by_subflow: Vec<WeightedHist>,
    /// DSNs whose first copy to arrive was a retransmission: recovery time from the send and
    /// from detection (s), and the subflow of the first transmission. Dropped if the original
    /// arrives later (it was not lost); the rest go into the histograms in
    /// [`MptcpReceiver::finish`].
    recovery_pending: BTreeMap<u64, (f64, f64, u16)>,
    /// Per subflow: the end of the highest subflow sequence seen so far.
    seq_high: Vec<u64>,
    /// Per subflow: ranges [start, end) of subflow sequence space that a segment beyond them
    /// revealed as missing, by start → (end, arrival of that segment). Ranges are disjoint
    /// (each lies above everything seen before it); one entry per gap, not per packet.
    revealed: Vec<BTreeMap<u64, (u64, Time)>>,
    /// P1 only, per subflow: its open sequence gaps, start → (end, DSN range that can be
    /// missing there): from the end of the data just below the gap to the DSN of the segment
    /// that revealed it (a subflow carries new data in DSN order). Pruned as the subflow fills.
    p1_gaps: Vec<BTreeMap<u64, (u64, u64, u64)>>,
    /// Per subflow: the DSN end of the segment with the highest subflow sequence seen.
    dsn_high: Vec<u64>,
    last_change: Time,
    /// Out-of-order byte·ns accumulated since the connection-level hole now open was last
    /// filled, and, per subflow of the hole-filler's first transmission, the byte·ns spent
    /// behind holes filled by that original arriving late (index 0) or by a copy (1: the
    /// original was lost or overtaken). Where the receive buffer's occupancy comes from.
    ofo_wait_byte_ns: f64,
    pub ofo_cause_byte_ns: Vec<[f64; 2]>,
    ofo_byte_ns: f64,
    buf_byte_ns: f64,
}

impl MptcpReceiver {
    pub fn new(subflows: Vec<TcpReceiver>, rcv_buf: u64, receiver_recovery: bool) -> Self {
        let n = subflows.len();
        MptcpReceiver {
            subflows,
            pending: (0..n).map(|_| SortedDeque::new()).collect(),
            data_rcv_nxt: 0,
            unread: 0,
            read_limit: u64::MAX,
            last_right_edge: 0,
            ofo: SortedDeque::new(),
            ofo_bytes: 0,
            held_bytes: 0,
            rcv_buf,
            prio_pending: vec![0; n],
            receiver_recovery,
            requested_dsn: NONE_U64,
            owd: vec![0; n],
            stats: MptcpReceiverStats {
                delivered_per_subflow: vec![0; n],
                ..Default::default()
            },
            hol: WeightedHist::new(1e-6, 1e3),
            hol_split: [WeightedHist::new(1e-6, 1e3), WeightedHist::new(1e-6, 1e3)],
            ofo_split: [WeightedHist::new(1.0, 1e10), WeightedHist::new(1.0, 1e10)],
            split_windows: Vec::new(),
            ofo_hist: WeightedHist::new(1.0, 1e10),
            buf_hist: WeightedHist::new(1.0, 1e10),
            recovery_hist: WeightedHist::new(1e-6, 1e3),
            recovery_by_subflow: vec![WeightedHist::new(1e-6, 1e3); n],
            recovery_detect_hist: WeightedHist::new(1e-6, 1e3),
            recovery_detect_by_subflow: vec![WeightedHist::new(1e-6, 1e3); n],
            recovery_pending: BTreeMap::new(),
            seq_high: vec![0; n],
            revealed: vec![BTreeMap::new(); n],
            p1_gaps: vec![BTreeMap::new(); n],
            dsn_high: vec![0; n],
            last_change: 0,
            ofo_wait_byte_ns: 0.0,
            ofo_cause_byte_ns: vec![[0.0; 2]; n],
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
        self.rcv_buf - self.unread
    }

    /// The application reads what it may (up to the read limit); returns the bytes read.
    fn read(&mut self) -> u64 {
        let n = self
            .unread
            .min(self.read_limit.saturating_sub(self.stats.bytes_delivered));
        self.unread -= n;
        self.stats.bytes_delivered += n;
        n
    }

    /// Sets the initial read limit (a relay's buffer).
    pub fn init_read_limit(&mut self, limit: u64) {
        self.read_limit = limit;
    }

    /// A relay's output made room: the application may read up to stream offset `limit`.
    /// Returns the bytes read and, when the read at least doubled what was left of the
    /// advertised window (Linux `__tcp_cleanup_rbuf`, as for TCP), a window update on the
    /// first subflow, as (subflow, packet).
    pub fn set_read_limit(&mut self, now: Time, limit: u64) -> (u64, Option<(usize, Packet)>) {
        self.read_limit = self.read_limit.max(limit);
        let n = self.read();
        let left = self.last_right_edge.saturating_sub(self.data_rcv_nxt);
        if n == 0 || 2 * left > self.rcv_buf || self.window() < 2 * left.max(1) {
            return (n, None);
        }
        let i = 0;
        let mut a = self.subflows[i].force_ack(now);
        self.decorate(i, &mut a);
        (n, Some((i, a)))
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

    /// Windows [start, end) (sorted) that split the HoL and OFO metrics into inside / outside
    /// (`hol_split`, `ofo_split`). The receiver does not know what they stand for: the plan
    /// gives them (P0's handover windows, from the train's record).
    pub fn set_split_windows(&mut self, windows: Vec<(Time, Time)>) {
        self.split_windows = windows;
    }

    fn in_window(&self, t: Time) -> usize {
        let i = self.split_windows.partition_point(|&(_, e)| e <= t);
        usize::from(self.split_windows.get(i).is_some_and(|&(s, _)| s <= t))
    }

    fn account(&mut self, now: Time) {
        let dt = now.saturating_sub(self.last_change);
        if dt > 0 && !self.split_windows.is_empty() {
            // Attribute the interval to where it ends (intervals are short: one packet apart).
            let k = self.in_window(now);
            self.ofo_split[k].add(self.ofo_bytes as f64, dt as f64);
        }
        if dt > 0 {
            let ofo = self.ofo_bytes as f64;
            let buf = self.buffered() as f64;
            self.ofo_byte_ns += ofo * dt as f64;
            self.ofo_wait_byte_ns += ofo * dt as f64;
            self.buf_byte_ns += buf * dt as f64;
            self.ofo_hist.add(ofo, dt as f64);
            self.buf_hist.add(buf, dt as f64);
        }
        self.last_change = now;
    }

    /// Time-weighted means of OFO and buffer occupancy up to `now`.
    pub fn finish(&mut self, now: Time, since: Time) -> (f64, f64) {
        self.account(now);
        for (_, (secs, detect_secs, sub)) in std::mem::take(&mut self.recovery_pending) {
            self.recovery_hist.add(secs, 1.0);
            self.recovery_detect_hist.add(detect_secs, 1.0);
            if let Some(h) = self.recovery_by_subflow.get_mut(sub as usize) {
                h.add(secs, 1.0);
            }
            if let Some(h) = self.recovery_detect_by_subflow.get_mut(sub as usize) {
                h.add(detect_secs, 1.0);
            }
        }
        let span = now.saturating_sub(since).max(1) as f64;
        (self.ofo_byte_ns / span, self.buf_byte_ns / span)
    }

    /// Mean out-of-order bytes (over `since`..`now`, as [`Self::finish`]'s means) held behind
    /// connection-level holes filled by data first sent on subflow `k`: `[late original, copy]`.
    /// Bytes behind a hole still open at the end are in neither.
    pub fn ofo_cause_mean_bytes(&self, k: usize, now: Time, since: Time) -> [f64; 2] {
        let span = now.saturating_sub(since).max(1) as f64;
        self.ofo_cause_byte_ns
            .get(k)
            .map_or([0.0; 2], |c| [c[0] / span, c[1] / span])
    }

    /// Adds the connection-level options to an ACK leaving on subflow `i`.
    fn decorate(&mut self, i: usize, a: &mut Packet) {
        a.data_ack = self.data_rcv_nxt;
        a.rwnd = self.window();
        self.last_right_edge = self.data_rcv_nxt + a.rwnd;
        if self.prio_pending[i] != 0 && a.len == 0 {
            a.mp_prio = self.prio_pending[i];
            self.prio_pending[i] = 0;
        }
    }

    /// A packet for this connection arrived on subflow `i`. Returns the ACKs to send as
    /// (subflow, packet) in `out`, and the bytes newly delivered to the application.
    pub fn on_packet(&mut self, i: usize, now: Time, p: &Packet, out: &mut Outbox) -> u64 {
        if p.kind == PacketKind::Syn {
            let mut a = Packet::new(PacketKind::SynAck);
            a.flow = p.flow;
            a.subflow = p.subflow;
            a.ts_ecr = p.ts_val;
            out.push(i, a);
            return 0;
        }
        self.account(now);
        if p.kind == PacketKind::Data && p.len > 0 {
            let owd = now.saturating_sub(p.ts_val);
            self.owd[i] = if self.owd[i] == 0 {
                owd
            } else {
                (7 * self.owd[i] + owd) / 8
            };
        }
        let rcv_nxt = self.subflows[i].rcv_nxt();
        if p.kind == PacketKind::Data && p.len > 0 {
            // Beyond everything seen on this subflow: what lies between is revealed missing now.
            let high = self.seq_high[i].max(rcv_nxt);
            if p.seq > high {
                self.revealed[i].insert(high, (p.seq, now));
                if self.receiver_recovery {
                    // A revealing copy with an older DSN (a reinjection) bounds nothing above.
                    let hi = if p.dsn > self.dsn_high[i] { p.dsn } else { u64::MAX };
                    self.p1_gaps[i].insert(high, (p.seq, self.dsn_high[i], hi));
                }
            }
            if p.seq + p.len as u64 > high {
                self.dsn_high[i] = p.dsn + p.len as u64;
            }
            self.seq_high[i] = high.max(p.seq + p.len as u64);
        }
        let arrived = Arrived {
            dsn: p.dsn,
            len: p.len,
            arrival: now,
            first_sent: p.dsn_first_sent,
            first_subflow: p.dsn_first_subflow,
            first_seq: p.dsn_first_seq,
            is_retx: p.retransmit || p.ts_val > p.dsn_first_sent,
        };
        let is_new = p.kind == PacketKind::Data && p.seq + p.len as u64 > rcv_nxt;
        if is_new && !self.pending[i].contains_key(p.seq) {
            // Per-subflow goodput counts here, at arrival: counted when the connection level
            // released the data, a window could credit a subflow with bytes that crossed its
            // link before the window began, above the link's rate.
            let end = p.dsn + p.len as u64;
            if end > self.data_rcv_nxt && !self.in_ofo(p.dsn) {
                self.stats.delivered_per_subflow[i] += end - p.dsn.max(self.data_rcv_nxt);
            }
        }
        // Common case: in order at subflow level with nothing held back. The segment goes
        // straight to the connection level if the subflow accepts it in full (as the map
        // below would hand it over), without a trip through the subflow's queue.
        let direct = is_new && p.seq == rcv_nxt && self.pending[i].is_empty();
        // P1's receiver reads each packet's own data-level sequence number (its per-packet DSS
        // mapping) as it arrives, so data beyond a subflow-level hole reaches the connection
        // level at once instead of waiting for the subflow's own retransmission.
        let per_packet = self.receiver_recovery && is_new && !direct;
        if is_new && !direct && !per_packet {
            let held = &mut self.held_bytes;
            self.pending[i].insert_if_absent(p.seq, || {
                *held += p.len as u64;
                arrived
            });
        }
        // The ACK is written now (the subflow's state as of this segment) into the box it will
        // travel in, and sent after the connection level has seen the segment (`decorate`).
        let (range, ack_due) = self.subflows[i].on_segment_ack_due(now, p);
        let ack = ack_due.then(|| {
            let mut b = out.spare_box();
            self.subflows[i].write_ack(now, &mut b);
            b
        });
        let before = self.stats.bytes_delivered;
        if direct {
            match range {
                Some((_, e)) if e > p.seq => self.conn_segment(i, now, arrived),
                _ => {
                    self.held_bytes += p.len as u64;
                    self.pending[i].insert(p.seq, arrived);
                }
            }
        } else if per_packet {
            self.conn_segment(i, now, arrived);
        } else if let Some((_, e)) = range {
            // Hand what is now in order at subflow level to the connection level.
            while let Some((_, seg)) = self.pending[i].pop_first_if(|k| k < e) {
                self.held_bytes -= seg.len as u64;
                self.conn_segment(i, now, seg);
            }
        }
        if self.receiver_recovery && p.kind == PacketKind::Data {
            self.p1_check(now, out);
        }
        if let Some(mut a) = ack {
            self.decorate(i, &mut a);
            out.push_box(i, a);
        }
        self.stats.bytes_delivered - before
    }

    /// Subflow timers (delayed ACK): decorate what they send.
    pub fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        for i in 0..self.subflows.len() {
            if now >= self.subflows[i].next_timeout(now) {
                if let Some(mut a) = self.subflows[i].on_timer(now) {
                    self.decorate(i, &mut a);
                    out.push(i, a);
                }
            }
        }
    }

    pub fn next_timeout(&self, now: Time) -> Time {
        self.subflows.iter().map(|s| s.next_timeout(now)).min().unwrap_or(NEVER)
    }

    fn conn_segment(&mut self, i: usize, now: Time, seg: Arrived) {
        let Arrived {
            dsn,
            len,
            arrival,
            first_sent,
            first_subflow,
            first_seq,
            is_retx,
        } = seg;
        let end = dsn + len as u64;
        if end <= self.data_rcv_nxt || self.in_ofo(dsn) {
            self.stats.duplicate_bytes += len as u64;
            if !is_retx {
                // The original arrived after all: it was overtaken, not lost.
                self.recovery_pending.remove(&dsn);
            }
            return;
        }
        if end > self.data_rcv_nxt + self.window() {
            self.stats.dropped_beyond_window += 1;
            return;
        }
        // Loss-recovery time (metrics.md): the first copy of this DSN to arrive was not its
        // original transmission, so the original was lost — unless it still arrives later
        // (overtaken by a reinjection on a faster path): counted at the end of the run.
        if is_retx {
            let secs = arrival.saturating_sub(first_sent) as f64 / 1e9;
            let detected = self.gap_revealed_at(first_subflow as usize, first_seq).unwrap_or(NEVER);
            let detect_secs = arrival.saturating_sub(detected) as f64 / 1e9;
            self.recovery_pending.insert(dsn, (secs, detect_secs, first_subflow));
        }
        if dsn > self.data_rcv_nxt {
            self.ofo.insert(dsn, (len, arrival, i));
            self.ofo_bytes += len as u64;
            return;
        }
        // This segment fills the hole everything in the out-of-order queue waited for.
        if let Some(c) = self.ofo_cause_byte_ns.get_mut(first_subflow as usize) {
            c[usize::from(is_retx)] += std::mem::take(&mut self.ofo_wait_byte_ns);
        }
        self.deliver(i, now, dsn, len, arrival);
        loop {
            let next = self.data_rcv_nxt;
            let Some((d, (l, a, sf))) = self.ofo.pop_first_if(|d| d <= next) else {
                break;
            };
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
    }

    /// Whether a segment starting at `dsn` waits in the out-of-order queue. Every key there is
    /// above `data_rcv_nxt` (in-order data is delivered and the queue drained up to it at
    /// once), so data at or below it needs no search.
    fn in_ofo(&self, dsn: u64) -> bool {
        debug_assert!(self.ofo.first().is_none_or(|(d, _)| d > self.data_rcv_nxt));
        dsn > self.data_rcv_nxt && self.ofo.contains_key(dsn)
    }

    /// When the gap at subflow `sub`'s sequence number `seq` was revealed: the arrival of the
    /// first segment beyond it on that subflow (None if none has arrived yet).
    fn gap_revealed_at(&self, sub: usize, seq: u64) -> Option<Time> {
        let (_, &(end, at)) = self.revealed.get(sub)?.range(..=seq).next_back()?;
        (seq < end).then_some(at)
    }

    fn deliver(&mut self, i: usize, now: Time, dsn: u64, len: u32, arrival: Time) {
        let new_bytes = dsn + len as u64 - self.data_rcv_nxt.max(dsn);
        self.data_rcv_nxt = dsn + len as u64;
        self.unread += new_bytes;
        self.read();
        let _ = i; // attributed at arrival (conn_segment)
        self.hol.add((now - arrival) as f64 / 1e9, new_bytes as f64);
        if !self.split_windows.is_empty() {
            let k = self.in_window(now);
            self.hol_split[k].add((now - arrival) as f64 / 1e9, new_bytes as f64);
        }
    }

    /// P1 §3.2 after each data packet: the expected DSN is declared lost once three segments
    /// beyond it have been seen (the segments held above it; in the paper's setting, arrival in
    /// data order, these are the ones that arrived since the gap showed) and it lies in the DSN
    /// range of an open subflow gap; it is then asked for once on the best path. Checked after
    /// every packet, not only on arrivals beyond the hole: when a repair moves the expected DSN
    /// onto the next hole while the sender is blocked by the receive window, no further packet
    /// may arrive to prompt the check. The DSN-range test keeps data sent after the gap from
    /// being asked for; schedulers interleave DSNs over the paths, so a range can still cover
    /// data in flight or queued on the best path, which is then sent twice.
    fn p1_check(&mut self, now: Time, out: &mut Outbox) {
        let w = self.data_rcv_nxt;
        for k in 0..self.p1_gaps.len() {
            let filled = self.subflows[k].rcv_nxt();
            while let Some(e) = self.p1_gaps[k].first_entry() {
                if e.get().0 > filled {
                    break;
                }
                e.remove();
            }
        }
        if self.ofo.len() < 3 || self.requested_dsn == w {
            return;
        }
        let Some(best) = (0..self.owd.len())
            .filter(|&k| self.owd[k] > 0)
            .min_by_key(|&k| self.owd[k])
        else {
            return;
        };
        // A gap of the best path's own is repaired fastest by its own retransmission.
        let in_gap = |k: usize| self.p1_gaps[k].values().any(|&(_, lo, hi)| lo <= w && w < hi);
        if !(0..self.p1_gaps.len()).any(|k| k != best && in_gap(k)) {
            return;
        }
        // The hole's length (the sender caps it at its MSS).
        let len = self
            .ofo
            .first()
            .map_or(1, |(first, _)| first.saturating_sub(w))
            .min(u32::MAX as u64) as u32;
        let mut a = self.subflows[best].force_ack(now);
        self.decorate(best, &mut a);
        a.retx_request = w;
        a.retx_request_len = len.max(1);
        out.push(best, a);
        self.requested_dsn = w;
        self.stats.retx_requests += 1;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::time::NS_PER_MS;
    use crate::tcp::receiver::ReceiverConfig;

    const LEN: u32 = 1000;

    fn receiver(recovery: bool) -> MptcpReceiver {
        let cfg = || ReceiverConfig {
            delayed_ack: false,
            rcv_buf: 1 << 40,
            ..Default::default()
        };
        MptcpReceiver::new(
            vec![TcpReceiver::new(cfg(), 0, 0), TcpReceiver::new(cfg(), 0, 1)],
            1 << 20,
            recovery,
        )
    }

    /// The first transmission of DSN `dsn` as segment `seq` of subflow `sub`, sent at `sent_ms`.
    fn original(sub: u16, seq: u64, dsn: u64, sent_ms: u64) -> Packet {
        let mut p = Packet::new(PacketKind::Data);
        p.subflow = sub;
        p.seq = seq;
        p.len = LEN;
        p.dsn = dsn;
        p.ts_val = sent_ms * NS_PER_MS;
        p.dsn_first_sent = p.ts_val;
        p.dsn_first_subflow = sub;
        p.dsn_first_seq = seq;
        p
    }

    /// A later copy of a DSN first sent as segment `first_seq` of subflow `first_sub` at
    /// `first_ms`, re-sent as segment `seq` of subflow `sub` at `sent_ms`.
    fn copy(sub: u16, seq: u64, dsn: u64, sent_ms: u64, (first_sub, first_seq, first_ms): (u16, u64, u64)) -> Packet {
        let mut p = original(sub, seq, dsn, sent_ms);
        p.dsn_first_sent = first_ms * NS_PER_MS;
        p.dsn_first_subflow = first_sub;
        p.dsn_first_seq = first_seq;
        p
    }

    fn arrive(r: &mut MptcpReceiver, at_ms: u64, p: &Packet) -> Vec<(usize, Packet)> {
        let mut out = Outbox::default();
        r.on_packet(p.subflow as usize, at_ms * NS_PER_MS, p, &mut out);
        out.drain_values()
    }

    fn requests(out: &[(usize, Packet)]) -> Vec<(usize, u64)> {
        out.iter()
            .filter(|(_, a)| a.retx_request != NONE_U64)
            .map(|(k, a)| (*k, a.retx_request))
            .collect()
    }

    /// Subflow 0: one-way delay 3 ms; subflow 1: 50 ms. DSNs 0 and 1000 arrive in order.
    fn two_paths(recovery: bool) -> MptcpReceiver {
        let mut r = receiver(recovery);
        arrive(&mut r, 3, &original(0, 0, 0, 0));
        arrive(&mut r, 50, &original(1, 0, 1000, 0));
        assert_eq!(r.data_rcv_nxt(), 2000);
        r
    }

    #[test]
    fn loss_on_the_slow_path_is_requested_on_the_fast_one_after_three_packets_beyond_it() {
        let mut r = two_paths(true);
        // DSN 2000 (subflow 1, seq 1000, sent at 10 ms) is lost; DSN 3000 behind it reveals the
        // gap at subflow level: the watch starts (1 packet beyond the hole).
        assert!(requests(&arrive(&mut r, 61, &original(1, 2000, 3000, 11))).is_empty());
        // Two more beyond it, on the fast path: the third asks for DSN 2000 on subflow 0.
        assert!(requests(&arrive(&mut r, 62, &original(0, 1000, 4000, 59))).is_empty());
        assert_eq!(
            requests(&arrive(&mut r, 63, &original(0, 2000, 5000, 60))),
            vec![(0, 2000)]
        );
        // Asked once.
        assert!(requests(&arrive(&mut r, 64, &original(0, 3000, 6000, 61))).is_empty());
        assert_eq!(r.stats.retx_requests, 1);
        // The re-sent copy on subflow 0 repairs the connection-level hole; recovery time counts
        // from the original send (10 ms) and is charged to subflow 1, where it was lost. DSN 3000
        // reached the connection level when it arrived, although subflow 1 still has a hole at
        // seq 1000 (P1's receiver reads each packet's own DSN), so everything is in order now.
        arrive(&mut r, 70, &copy(0, 4000, 2000, 67, (1, 1000, 10)));
        assert_eq!(r.data_rcv_nxt(), 7000);
        // Subflow 1's own retransmission of seq 1000 comes later and is a duplicate.
        arrive(&mut r, 160, &copy(1, 1000, 2000, 110, (1, 1000, 10)));
        assert_eq!(r.data_rcv_nxt(), 7000);
        assert_eq!(r.stats.duplicate_bytes, LEN as u64);
        r.finish(100 * NS_PER_MS, 0);
        assert_eq!(r.recovery_by_subflow[1].total_weight(), 1.0);
        assert!((r.recovery_by_subflow[1].mean() - 0.060).abs() < 1e-9);
        assert_eq!(r.recovery_by_subflow[0].total_weight(), 0.0);
        // From detection: the gap was revealed at 61 ms by DSN 3000, the next segment of
        // subflow 1 (seq 2000); the data arrived at 70 ms.
        assert_eq!(r.recovery_detect_by_subflow[1].total_weight(), 1.0);
        assert!((r.recovery_detect_by_subflow[1].mean() - 0.009).abs() < 1e-9);
        assert!((r.recovery_detect_hist.mean() - 0.009).abs() < 1e-9);
    }

    /// Detection is the arrival of the first later segment on the lost segment's own subflow,
    /// not on another one; a loss repaired before any such segment arrives counts as 0.
    #[test]
    fn recovery_from_detection_counts_from_the_gap_revealing_segment_of_the_same_subflow() {
        let mut r = two_paths(false);
        // DSN 2000 (subflow 1, seq 1000, sent at 10 ms) and DSN 6000 (subflow 1, seq 2000, sent
        // at 15 ms) are lost. Later data on subflow 0 does not reveal them; subflow 1's seq 3000
        // (DSN 4000) at 70 ms is the first segment beyond them there.
        arrive(&mut r, 62, &original(0, 1000, 3000, 59));
        arrive(&mut r, 70, &original(1, 3000, 4000, 20));
        // Subflow 1 re-sends seq 2000 (arrives at 80 ms, held behind seq 1000), then seq 1000.
        arrive(&mut r, 80, &copy(1, 2000, 6000, 30, (1, 2000, 15)));
        arrive(&mut r, 90, &copy(1, 1000, 2000, 40, (1, 1000, 10)));
        // DSN 5000 (subflow 0, seq 2000, sent at 60 ms) is a tail loss: nothing later arrives on
        // subflow 0 before its retransmission at 300 ms.
        arrive(&mut r, 300, &copy(0, 2000, 5000, 297, (0, 2000, 60)));
        assert_eq!(r.data_rcv_nxt(), 7000);
        r.finish(400 * NS_PER_MS, 0);
        // Subflow 1: DSN 2000 detected at 70 ms, repaired at 90; DSN 6000 (seq 2000) detected at
        // 70 ms too (the same gap), repaired at 80.
        assert_eq!(r.recovery_detect_by_subflow[1].total_weight(), 2.0);
        assert!((r.recovery_detect_by_subflow[1].mean() - 0.015).abs() < 1e-9);
        assert!((r.recovery_by_subflow[1].mean() - 0.0725).abs() < 1e-9);
        // Subflow 0: from send 240 ms, from detection 0.
        assert_eq!(r.recovery_detect_by_subflow[0].total_weight(), 1.0);
        assert_eq!(r.recovery_detect_by_subflow[0].mean(), 0.0);
        assert!((r.recovery_by_subflow[0].mean() - 0.240).abs() < 1e-9);
        assert_eq!(r.recovery_detect_hist.total_weight(), 3.0);
    }

    #[test]
    fn nothing_is_asked_when_the_lossy_path_is_the_fastest() {
        let mut r = two_paths(true);
        // DSN 2000 lost on the fast subflow 0 (seq 1000): every other path is slower, so subflow
        // 0's own retransmission is the fastest repair.
        for (k, p) in [
            original(0, 2000, 3000, 5),
            original(1, 1000, 4000, 0),
            original(1, 2000, 5000, 1),
            original(0, 3000, 6000, 7),
        ]
        .iter()
        .enumerate()
        {
            assert!(requests(&arrive(&mut r, 51 + k as u64, p)).is_empty());
        }
        assert_eq!(r.stats.retx_requests, 0);
    }

    /// Linux (the default) passes a subflow's data to the connection level only in subflow
    /// order: data beyond a subflow hole waits for that subflow's own retransmission even when
    /// another path has already repaired the data-level hole. P1's receiver does not wait.
    #[test]
    fn data_beyond_a_subflow_hole_waits_for_it_unless_p1_recovery_reads_each_packet() {
        for p1 in [false, true] {
            let mut r = two_paths(p1);
            // DSN 2000 (subflow 1, seq 1000) lost; DSN 3000 behind it on subflow 1; DSN 2000
            // reinjected on subflow 0.
            arrive(&mut r, 61, &original(1, 2000, 3000, 11));
            arrive(&mut r, 65, &copy(0, 1000, 2000, 62, (1, 1000, 10)));
            assert_eq!(r.data_rcv_nxt(), if p1 { 4000 } else { 3000 }, "p1 = {p1}");
            arrive(&mut r, 160, &copy(1, 1000, 2000, 110, (1, 1000, 10)));
            assert_eq!(r.data_rcv_nxt(), 4000, "p1 = {p1}");
        }
    }

    #[test]
    fn without_receiver_recovery_nothing_is_asked() {
        let mut r = two_paths(false);
        for (k, p) in [
            original(1, 2000, 3000, 11),
            original(0, 1000, 4000, 59),
            original(0, 2000, 5000, 60),
        ]
        .iter()
        .enumerate()
        {
            assert!(requests(&arrive(&mut r, 61 + k as u64, p)).is_empty());
        }
        assert_eq!(r.stats.retx_requests, 0);
    }

    /// metrics.md: loss-recovery time is for lost segments. A reinjected copy that overtakes an
    /// original still on its way is not a recovery; one whose original never comes is.
    #[test]
    fn overtaken_originals_are_not_losses() {
        let mut r = receiver(false);
        arrive(&mut r, 3, &original(0, 0, 0, 0));
        // DSN 1000 first sent on subflow 1 at 1 ms; a copy on subflow 0 (sent at 20 ms) arrives
        // first at 23 ms, the original later at 51 ms.
        arrive(&mut r, 23, &copy(0, 1000, 1000, 20, (1, 0, 1)));
        arrive(&mut r, 51, &original(1, 0, 1000, 1));
        // DSN 2000 first sent on subflow 1 at 2 ms never arrives; its copy does at 33 ms.
        arrive(&mut r, 33, &copy(0, 2000, 2000, 30, (1, 1000, 2)));
        assert_eq!(r.data_rcv_nxt(), 3000);
        r.finish(100 * NS_PER_MS, 0);
        assert_eq!(r.recovery_hist.total_weight(), 1.0);
        assert!((r.recovery_hist.mean() - 0.031).abs() < 1e-9);
        assert_eq!(r.recovery_by_subflow[1].total_weight(), 1.0);
        // Same set of segments from detection; no later segment of subflow 1 arrived: 0.
        assert_eq!(r.recovery_detect_hist.total_weight(), 1.0);
        assert_eq!(r.recovery_detect_hist.mean(), 0.0);
    }
}
