//! The TCP receiver: reassembly, SACK generation, delayed ACKs and the advertised window.
//!
//! Sources: RFC 9293 §3.10.7.4 (segment arrival), RFC 2018 §4 (SACK block order: the block
//! holding the most recent segment first, then the most recently reported others), RFC 5681 §4.2
//! and RFC 1122 §4.2.3.2 (delayed ACK: at least every second full-sized segment, immediately for
//! out-of-order segments and for segments that fill a hole), Linux's 40 ms minimum delayed-ACK
//! timeout (`TCP_DELACK_MIN`).
//!
//! Quick ACKs as Linux (`net/ipv4/tcp_input.c`): with delayed ACKs on, the receiver still ACKs
//! every segment while in quick-ACK mode (`tcp_in_quickack_mode`, checked in
//! `__tcp_ack_snd_check`). Linux enters it for `TCP_MAX_QUICKACKS` = 16 ACKs at the first data
//! segment (`tcp_event_data_recv` → `tcp_incr_quickack`), and grants one more quick ACK each time
//! an arriving segment of at least 128 bytes raises the receive-window threshold `rcv_ssthresh`
//! (`tcp_grow_window`: `icsk_ack.quick |= 1`; the threshold grows by max(2·advmss, 2·len) per
//! segment until it reaches the window the buffer allows). Each ACK of new data uses up one
//! (`tcp_dec_quickack_mode`). So while a bulk transfer ramps up, Linux ACKs every segment, not
//! every second one — which matters, e.g., to CUBIC's HyStart ACK-train test (ACKs ≤ 2 ms apart):
//! at 10 Mbit/s one ACK per two 1500-byte packets is 2.4 ms apart and never forms a train.
//! Linux re-enters quick-ACK mode (`tcp_enter_quickack_mode`, up to 16 again) when a segment
//! arrives that was received already (`tcp_data_queue`: the sender retransmitted, so it may
//! have missed ACKs); so does this receiver.
//!
//! Deviations: no receive-window auto-tuning (Linux's `tcp_rcv_space_adjust` raises
//! `window_clamp` once per RTT; here the threshold may grow straight to half the buffer, Linux's
//! default `tcp_win_from_space` ratio, so the quick-ACK phase is one stretch at the start instead
//! of bursts spread over the first RTTs), `rcv_ssthresh` starts at Linux's unscaled initial window
//! (65 535 bytes) and is bounded by half of `window_buf` (an MPTCP subflow's by the connection's
//! buffer), but only drives quick ACKs — the advertised window is the exact free buffer
//! space (no window scaling granularity); advmss is taken as the segment's payload; the
//! application reads everything in order at once unless the scenario pauses it. Not modelled:
//! the adaptive delayed-ACK timeout (`icsk_ack.ato`; fixed `delack_timeout` here, Linux's is at
//! least 40 ms too), quick ACKs after a receive gap longer than the RTO (`tcp_event_data_recv`;
//! the receiver has no RTO), SACK compression while the out-of-order queue is non-empty
//! (`tcp_comp_sack_*`: Linux sends the first 3 duplicate ACKs per `rcv_nxt` at once, then at most
//! one per min(1 ms, RTT/20) or per 44 segments), a quick ACK used up by an immediate ACK for
//! out-of-order data, and deferring the every-second-segment ACK while unread data shrinks the
//! window (`__tcp_select_window(sk) >= tp->rcv_wnd`), which makes a Linux receiver whose
//! application reads in batches ACK once per read (`tcp_cleanup_rbuf`).
use crate::core::time::{Time, NEVER, NS_PER_MS};
use crate::packet::{Packet, PacketKind};

/// Linux `TCP_MAX_QUICKACKS`: quick ACKs granted at the first data segment.
const TCP_MAX_QUICKACKS: u32 = 16;
/// Linux's initial receive window (unscaled in the SYN, so at most 65 535 bytes); the initial
/// `rcv_ssthresh`.
const INITIAL_RCV_SSTHRESH: u64 = 65_535;
/// `tcp_event_data_recv` only grows the window for segments of at least this many bytes.
const GROW_WINDOW_MIN_LEN: u32 = 128;

#[derive(Clone, Debug)]
pub struct ReceiverConfig {
    pub sack: bool,
    pub delayed_ack: bool,
    /// Linux's quick-ACK mode on top of delayed ACKs (see the module doc); on by default.
    pub quickack: bool,
    /// Buffer whose window bounds `rcv_ssthresh` for quick ACKs (Linux: the socket's receive
    /// buffer; for an MPTCP subflow, whose own `rcv_buf` is unbounded here, the connection's).
    pub window_buf: u64,
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
            quickack: true,
            window_buf: 6 * 1024 * 1024,
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
    /// The application reads at most up to this stream offset (a relay whose output is full;
    /// `u64::MAX` otherwise). Data beyond it stays unread and closes the window.
    read_limit: u64,
    /// Right edge of the window last advertised (`rcv_wup + rcv_wnd` in Linux).
    last_right_edge: u64,
    /// Full segments received since the last ACK.
    pending: u32,
    delack_deadline: Time,
    /// Quick ACKs left (Linux `icsk_ack.quick`).
    quick: u32,
    /// Linux `rcv_ssthresh` (bytes); drives quick ACKs only.
    rcv_ssthresh: u64,
    /// Whether data has arrived yet (Linux: `icsk_ack.ato == 0` before the first data).
    got_data: bool,
    ts_recent: Time,
    last_ofo_change: Time,
    next_id: u64,
    window_was_closed: bool,
    /// Advertise a zero window whatever the buffer holds (Freeze-TCP around a handoff).
    pub zero_window: bool,
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
            read_limit: u64::MAX,
            last_right_edge: 0,
            pending: 0,
            delack_deadline: NEVER,
            quick: 0,
            rcv_ssthresh: 0,
            got_data: false,
            ts_recent: 0,
            last_ofo_change: 0,
            next_id: 0,
            window_was_closed: false,
            zero_window: false,
        }
    }

    pub fn rcv_nxt(&self) -> u64 {
        self.rcv_nxt
    }
    /// The flow (connection) this receiver belongs to.
    pub fn flow(&self) -> u32 {
        self.flow
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
        if self.zero_window {
            return 0;
        }
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
            // Linux (`tcp_data_queue`, "A retransmit"): the sender may have missed our ACKs, so
            // enter quick-ACK mode (`tcp_enter_quickack_mode(sk, TCP_MAX_QUICKACKS)`); this ACK
            // was scheduled, so it uses up one quick ACK (`tcp_dec_quickack_mode`).
            if self.cfg.quickack && self.got_data {
                self.enter_quickack(p.len);
                self.pending = self.pending.max(1);
            }
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
            self.unread += self.rcv_nxt - old;
            self.read(now);
        } else {
            let duplicate = self.insert_ofo(start, end);
            if duplicate {
                self.stats.duplicate_segments += 1;
            }
        }
        self.stats.max_ofo_bytes = self.stats.max_ofo_bytes.max(self.ofo_bytes);
        if self.cfg.quickack {
            self.quickack_on_data(p.len);
        }
        let out_of_order = start > self.rcv_nxt || !self.ofo.is_empty() || had_holes;
        if !self.cfg.delayed_ack || out_of_order {
            return (delivered, Some(self.make_ack(now)));
        }
        self.pending += 1;
        if self.pending >= 2 || self.quick > 0 {
            // Every second full segment, or at once in quick-ACK mode (`__tcp_ack_snd_check`).
            return (delivered, Some(self.make_ack(now)));
        }
        if self.delack_deadline == NEVER {
            self.delack_deadline = now + self.cfg.delack_timeout;
        }
        (delivered, None)
    }

    /// Linux's quick-ACK bookkeeping for an arriving data segment of `len` bytes (in order or
    /// not, as both `tcp_data_queue` paths grow the window): `tcp_event_data_recv` enters
    /// quick-ACK mode at the first data (`tcp_incr_quickack(sk, TCP_MAX_QUICKACKS)`: at most
    /// rcv_wnd/(2·rcv_mss), capped at 16), and `tcp_grow_window` grants one quick ACK whenever
    /// it raises `rcv_ssthresh` (by max(2·advmss, 2·len), up to the window the buffer allows).
    fn quickack_on_data(&mut self, len: u32) {
        let mss = len.max(1) as u64;
        // The window the buffer allows (Linux `min(window_clamp, tcp_space)`, with the default
        // 50 % `tcp_win_from_space` ratio).
        let clamp = self.cfg.rcv_buf.min(self.cfg.window_buf) / 2;
        if !self.got_data {
            self.got_data = true;
            self.rcv_ssthresh = INITIAL_RCV_SSTHRESH.min(clamp);
            self.enter_quickack(len);
        }
        if len >= GROW_WINDOW_MIN_LEN && self.rcv_ssthresh < clamp {
            let incr = 2 * mss;
            self.rcv_ssthresh += incr.min(clamp - self.rcv_ssthresh);
            self.quick = self.quick.max(1);
        }
    }

    /// Linux `tcp_incr_quickack(sk, TCP_MAX_QUICKACKS)`: at least rcv_wnd/(2·rcv_mss) quick ACKs
    /// (2 if that is 0), at most 16; never lowers what is left.
    fn enter_quickack(&mut self, len: u32) {
        let mss = len.max(1) as u64;
        let q = (self.rwnd() / (2 * mss)).clamp(2, TCP_MAX_QUICKACKS as u64) as u32;
        self.quick = self.quick.max(q);
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
        if self.unread > 0 && self.reading(now) && self.read(now) > 0 {
            // Window update: the application made room.
            send = true;
        }
        send.then(|| self.make_ack(now))
    }

    /// The application reads what it may (not in a read pause, up to the read limit); returns
    /// the bytes read.
    fn read(&mut self, now: Time) -> u64 {
        if !self.reading(now) {
            return 0;
        }
        let n = self.unread.min(self.read_limit.saturating_sub(self.stats.bytes_delivered));
        self.unread -= n;
        self.stats.bytes_delivered += n;
        n
    }

    /// A relay's output made room: the application may read up to stream offset `limit`.
    /// Returns the bytes read and a window update when the read at least doubled what is left
    /// of the advertised window and that was at most half the buffer (Linux
    /// `__tcp_cleanup_rbuf`), so a closed window reopens at once.
    pub fn set_read_limit(&mut self, now: Time, limit: u64) -> (u64, Option<Packet>) {
        self.read_limit = self.read_limit.max(limit);
        let n = self.read(now);
        let left = self.last_right_edge.saturating_sub(self.rcv_nxt);
        let update = n > 0 && 2 * left <= self.cfg.rcv_buf && self.rwnd() >= 2 * left.max(1);
        (n, update.then(|| self.make_ack(now)))
    }

    /// Sets the initial read limit (a relay's buffer).
    pub fn init_read_limit(&mut self, limit: u64) {
        self.read_limit = limit;
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
        // `tcp_dec_quickack_mode`: an ACK sent while one was due uses up a quick ACK.
        if self.pending > 0 || self.delack_deadline != NEVER {
            self.quick = self.quick.saturating_sub(1);
        }
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
        self.last_right_edge = self.rcv_nxt + a.rwnd;
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

#[cfg(test)]
mod tests {
    use super::*;

    const MSS: u32 = 1448;

    fn data(seq: u64) -> Packet {
        let mut p = Packet::new(PacketKind::Data);
        p.seq = seq;
        p.len = MSS;
        p
    }

    /// Feeds `n` in-order full segments; returns which of them were ACKed at once.
    fn feed(r: &mut TcpReceiver, from: u64, n: u64) -> Vec<bool> {
        (0..n).map(|i| r.on_segment(i * NS_PER_MS, &data((from + i) * MSS as u64)).1.is_some()).collect()
    }

    /// Linux ACKs every segment while its receive window opens (`tcp_grow_window` grants a quick
    /// ACK per raise of `rcv_ssthresh`), then every second one once the window is fully open.
    #[test]
    fn quick_acks_while_window_opens_then_every_second_segment() {
        // 64 KiB buffer: window 32 KiB < the initial 65 535, so only the 16 initial quick ACKs.
        let cfg = ReceiverConfig { rcv_buf: 64 * 1024, window_buf: 64 * 1024, ..Default::default() };
        let mut r = TcpReceiver::new(cfg, 0, 0);
        let acked = feed(&mut r, 0, 40);
        assert!(acked[..16].iter().all(|&a| a), "first 16 segments quick-ACKed: {acked:?}");
        let later: Vec<bool> = acked[16..].to_vec();
        assert_eq!(later.iter().filter(|&&a| a).count(), later.len() / 2, "then every second: {later:?}");

        // Default 6 MiB buffer: rcv_ssthresh grows from 65 535 to 3 MiB by 2·MSS per segment,
        // so the first ~1050 segments are each ACKed, the following ones every second.
        let mut r = TcpReceiver::new(ReceiverConfig::default(), 0, 0);
        let acked = feed(&mut r, 0, 1000);
        assert!(acked.iter().all(|&a| a));
        let acked = feed(&mut r, 1000, 200);
        let n = acked.iter().filter(|&&a| a).count();
        assert!((100..=160).contains(&n), "{n} ACKs for 200 segments");
        let tail = feed(&mut r, 1200, 100);
        assert_eq!(tail.iter().filter(|&&a| a).count(), 50);

        // Quick ACKs off: RFC 1122 delayed ACKs from the start.
        let cfg = ReceiverConfig { quickack: false, ..Default::default() };
        let mut r = TcpReceiver::new(cfg, 0, 0);
        assert_eq!(feed(&mut r, 0, 40).iter().filter(|&&a| a).count(), 20);
    }
    /// Linux `tcp_data_queue`: a segment received already (a retransmission: the sender may
    /// have missed ACKs) re-enters quick-ACK mode for 16 ACKs, one of which the duplicate's own
    /// ACK uses; then every in-order segment is ACKed at once until they are used up.
    #[test]
    fn a_duplicate_segment_reenters_quick_ack_mode() {
        let cfg = ReceiverConfig { rcv_buf: 64 * 1024, window_buf: 64 * 1024, ..Default::default() };
        let mut r = TcpReceiver::new(cfg.clone(), 0, 0);
        feed(&mut r, 0, 40); // the initial quick ACKs are used up: every second segment now
        assert_eq!(feed(&mut r, 40, 10).iter().filter(|&&a| a).count(), 5);
        assert!(r.on_segment(60 * NS_PER_MS, &data(3 * MSS as u64)).1.is_some(), "a duplicate is ACKed at once");
        let after = feed(&mut r, 50, 30);
        assert!(after[..15].iter().all(|&a| a), "15 quick ACKs left: {after:?}");
        assert_eq!(after[15..].iter().filter(|&&a| a).count(), 7, "then every second: {after:?}");

        // With quick ACKs off, a duplicate changes nothing.
        let mut r = TcpReceiver::new(ReceiverConfig { quickack: false, ..cfg }, 0, 0);
        feed(&mut r, 0, 40);
        r.on_segment(60 * NS_PER_MS, &data(3 * MSS as u64));
        assert_eq!(feed(&mut r, 40, 30).iter().filter(|&&a| a).count(), 15);
    }

}
