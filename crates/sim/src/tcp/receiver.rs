//! The TCP receiver: reassembly, SACK generation, delayed ACKs and the advertised window.
//!
//! Sources: RFC 9293 §3.10.7.4 (segment arrival), RFC 2018 §4 (SACK block order: the block
//! holding the most recent segment first, then the most recently reported others), RFC 5681 §4.2
//! and RFC 1122 §4.2.3.2 (delayed ACK: at least every second full-sized segment, immediately for
//! out-of-order segments and for segments that fill a hole), Linux's 40 ms minimum delayed-ACK
//! timeout (`TCP_DELACK_MIN`).
//!
//! Deviations: no quick-ACK mode at connection start, no receive-window auto-tuning or window
//! scaling granularity (the advertised window is the exact free buffer space), the application
//! reads everything in order at once unless the scenario pauses it.
use crate::core::time::{Time, NEVER, NS_PER_MS};
use crate::packet::{Packet, PacketKind};

#[derive(Clone, Debug)]
pub struct ReceiverConfig {
    pub sack: bool,
    pub delayed_ack: bool,
    pub delack_timeout: Time,
    /// Receive buffer in bytes (in-order unread + out-of-order data).
    pub rcv_buf: u64,
    /// Intervals [start, end) in which the application does not read.
    pub read_pauses: Vec<(Time, Time)>,
}

impl Default for ReceiverConfig {
    fn default() -> Self {
        ReceiverConfig {
            sack: true,
            delayed_ack: true,
            delack_timeout: 40 * NS_PER_MS,
            rcv_buf: 6 * 1024 * 1024,
            read_pauses: vec![],
        }
    }
}

#[derive(Clone, Debug, Default)]
pub struct ReceiverStats {
    /// Bytes handed to the application in order.
    pub bytes_delivered: u64,
    pub segments_received: u64,
    pub duplicate_segments: u64,
    pub dropped_out_of_window: u64,
    pub acks_sent: u64,
    /// Time-integral of out-of-order bytes (byte·ns) for the time-weighted mean.
    pub ofo_byte_ns: f64,
    pub max_ofo_bytes: u64,
}

pub struct TcpReceiver {
    pub cfg: ReceiverConfig,
    pub stats: ReceiverStats,
    flow: u32,
    subflow: u16,
    rcv_nxt: u64,
    /// Out-of-order ranges [start, end), sorted and disjoint.
    ofo: Vec<(u64, u64)>,
    ofo_bytes: u64,
    /// Starts of the SACK blocks in most-recently-reported order.
    sack_recent: Vec<u64>,
    /// In-order bytes the application has not read (only during read pauses).
    unread: u64,
    /// Full segments received since the last ACK.
    pending: u32,
    delack_deadline: Time,
    ts_recent: Time,
    last_ofo_change: Time,
    next_id: u64,
    window_was_closed: bool,
}

impl TcpReceiver {
    pub fn new(cfg: ReceiverConfig, flow: u32, subflow: u16) -> Self {
        TcpReceiver {
            cfg,
            stats: ReceiverStats::default(),
            flow,
            subflow,
            rcv_nxt: 0,
            ofo: Vec::new(),
            ofo_bytes: 0,
            sack_recent: Vec::new(),
            unread: 0,
            pending: 0,
            delack_deadline: NEVER,
            ts_recent: 0,
            last_ofo_change: 0,
            next_id: 0,
            window_was_closed: false,
        }
    }

    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    pub fn ofo_bytes(&self) -> u64 {
        self.ofo_bytes
    }
    /// Bytes in the receive buffer (unread in-order + out-of-order).
    pub fn buffered(&self) -> u64 {
        self.unread + self.ofo_bytes
    }
    /// Advertised window: buffer space beyond `rcv_nxt` not taken by unread in-order data.
    /// Out-of-order data lies inside this window already, so the right edge never moves left
    /// while holes are filled (as Linux, which never shrinks an advertised window); this keeps
    /// duplicate ACKs identical, as RFC 5681's duplicate-ACK definition needs.
    pub fn rwnd(&self) -> u64 {
        self.cfg.rcv_buf.saturating_sub(self.unread)
    }

    fn reading(&self, now: Time) -> bool {
        !self.cfg.read_pauses.iter().any(|&(s, e)| now >= s && now < e)
    }

    /// Next time `on_timer` must run: the delayed-ACK deadline or the end of a read pause.
    pub fn next_timeout(&self, now: Time) -> Time {
        let mut t = self.delack_deadline;
        if self.unread > 0 {
            for &(s, e) in &self.cfg.read_pauses {
                if now >= s && now < e {
                    t = t.min(e);
                }
            }
        }
        t
    }

    /// Handles a data segment or window probe. Returns the bytes newly delivered in order
    /// (`(start, end)` of the stream) and possibly an ACK to send now.
    pub fn on_segment(&mut self, now: Time, p: &Packet) -> (Option<(u64, u64)>, Option<Packet>) {
        if p.kind == PacketKind::WindowProbe {
            return (None, Some(self.make_ack(now)));
        }
        self.stats.segments_received += 1;
        let (start, end) = (p.seq, p.seq + p.len as u64);
        if end <= self.rcv_nxt {
            self.stats.duplicate_segments += 1;
            // RFC 9293: acknowledge duplicates at once (they may be retransmissions after a lost ACK).
            return (None, Some(self.make_ack(now)));
        }
        // Drop what does not fit in the buffer (beyond the advertised window).
        let limit = self.rcv_nxt + self.cfg.rcv_buf.saturating_sub(self.unread);
        if end > limit {
            self.stats.dropped_out_of_window += 1;
            return (None, Some(self.make_ack(now)));
        }
        self.account_ofo(now);
        let mut delivered = None;
        let had_holes = !self.ofo.is_empty();
        if start <= self.rcv_nxt {
            self.ts_recent = p.ts_val;
            let old = self.rcv_nxt;
            self.rcv_nxt = end;
            // Pull contiguous out-of-order data.
            while let Some(&(s, e)) = self.ofo.first() {
                if s > self.rcv_nxt {
                    break;
                }
                self.ofo.remove(0);
                self.ofo_bytes -= e - s;
                self.rcv_nxt = self.rcv_nxt.max(e);
            }
            // Trim ranges partly covered.
            self.sack_recent.retain(|&s| s > self.rcv_nxt);
            delivered = Some((old, self.rcv_nxt));
            let n = self.rcv_nxt - old;
            if self.reading(now) {
                self.stats.bytes_delivered += n;
            } else {
                self.unread += n;
            }
        } else {
            let duplicate = self.insert_ofo(start, end);
            if duplicate {
                self.stats.duplicate_segments += 1;
            }
        }
        self.stats.max_ofo_bytes = self.stats.max_ofo_bytes.max(self.ofo_bytes);
        let out_of_order = start > self.rcv_nxt || !self.ofo.is_empty() || had_holes;
        if !self.cfg.delayed_ack || out_of_order {
            return (delivered, Some(self.make_ack(now)));
        }
        self.pending += 1;
        if self.pending >= 2 {
            return (delivered, Some(self.make_ack(now)));
        }
        if self.delack_deadline == NEVER {
            self.delack_deadline = now + self.cfg.delack_timeout;
        }
        (delivered, None)
    }

    /// Inserts [start, end) into the out-of-order set; returns true if it was all there already.
    fn insert_ofo(&mut self, start: u64, end: u64) -> bool {
        let start = start.max(self.rcv_nxt);
        let i = self.ofo.partition_point(|&(_, e)| e < start);
        if i < self.ofo.len() && self.ofo[i].0 <= start && self.ofo[i].1 >= end {
            let s = self.ofo[i].0;
            self.touch_recent(s);
            return true;
        }
        let mut ns = start;
        let mut ne = end;
        let mut j = i;
        while j < self.ofo.len() && self.ofo[j].0 <= ne {
            ns = ns.min(self.ofo[j].0);
            ne = ne.max(self.ofo[j].1);
            self.ofo_bytes -= self.ofo[j].1 - self.ofo[j].0;
            let old_start = self.ofo[j].0;
            self.sack_recent.retain(|&s| s != old_start);
            j += 1;
        }
        self.ofo.splice(i..j, std::iter::once((ns, ne)));
        self.ofo_bytes += ne - ns;
        self.touch_recent(ns);
        false
    }

    fn touch_recent(&mut self, block_start: u64) {
        self.sack_recent.retain(|&s| s != block_start);
        self.sack_recent.insert(0, block_start);
        self.sack_recent.truncate(8);
    }

    fn account_ofo(&mut self, now: Time) {
        let dt = now.saturating_sub(self.last_ofo_change);
        self.stats.ofo_byte_ns += self.ofo_bytes as f64 * dt as f64;
        self.last_ofo_change = now;
    }

    /// Closes the out-of-order time integral at `now` (for the summary).
    pub fn finish(&mut self, now: Time) {
        self.account_ofo(now);
    }

    /// Delayed-ACK expiry and the end of read pauses (window update).
    pub fn on_timer(&mut self, now: Time) -> Option<Packet> {
        let mut send = false;
        if now >= self.delack_deadline {
            send = true;
        }
        if self.unread > 0 && self.reading(now) {
            self.stats.bytes_delivered += self.unread;
            self.unread = 0;
            // Window update: the application made room.
            send = true;
        }
        send.then(|| self.make_ack(now))
    }

    /// Bytes read by the application when a pause ends (for goodput accounting).
    pub fn unread(&self) -> u64 {
        self.unread
    }

    /// An ACK right now (MP_PRIO and P1 retransmission requests ride on a pure ACK).
    pub fn force_ack(&mut self, now: Time) -> Packet {
        self.make_ack(now)
    }

    fn make_ack(&mut self, now: Time) -> Packet {
        let _ = now;
        self.pending = 0;
        self.delack_deadline = NEVER;
        self.stats.acks_sent += 1;
        self.next_id += 1;
        let mut a = Packet::new(PacketKind::Ack);
        a.id = self.next_id;
        a.flow = self.flow;
        a.subflow = self.subflow;
        a.ack = self.rcv_nxt;
        a.rwnd = self.rwnd();
        self.window_was_closed = a.rwnd == 0;
        a.ts_ecr = self.ts_recent;
        if self.cfg.sack {
            let mut n = 0;
            for &s in &self.sack_recent {
                if n == 3 {
                    break;
                }
                if let Ok(i) = self.ofo.binary_search_by(|&(bs, _)| bs.cmp(&s)) {
                    a.sack[n] = self.ofo[i];
                    n += 1;
                }
            }
            a.n_sack = n as u8;
        }
        a
    }
}
