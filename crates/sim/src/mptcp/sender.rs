//! The MPTCP data sender: connection-level state over TCP subflows (RFC 8684 semantics).
//!
//! - Data sequence numbers (DSN) are mapped onto subflow sequence numbers when the scheduler
//!   pushes a segment into a subflow; a mapping is fixed once made (RFC 8684 §3.3.1) and the
//!   same DSN range may later be re-sent on another subflow (reinjection).
//! - Data stays at connection level until DATA_ACKed (cumulative, §3.3.2), not merely
//!   subflow-ACKed. The peer's window is connection-level, relative to DATA_ACK (§3.3.5).
//! - Pushed data sits in the subflow's send queue until its cwnd lets it out (Linux: the
//!   subflow's write queue); a backup mark stops *new* pushes, not what is queued.
//! - The reinjection queue is served before new data. A subflow RTO re-injects that subflow's
//!   un-DATA_ACKed data and sets `pf` (out-of-tree `mptcp_reinject_data`,
//!   `mptcp_sub_retransmit_timer`); `pf` clears on any valid incoming packet on the subflow.
//! - The out-of-tree receive-buffer optimisation (`mptcp_rcv_buf_optimization`, see
//!   `MptcpSender::rcvbuf_optimisation`): when the connection-level window blocks, the subflow
//!   the scheduler would send on halves the window of every subflow that carries the oldest
//!   unacknowledged data, is strictly slower and is in the Open state (at most once per its own
//!   RTT), and may retransmit that data itself.
//! - Backup: MP_JOIN B flag (scenario) or MP_PRIO from the peer (§3.3.8), which is carried on an
//!   ACK and can be lost.
//!
//! Deviations: no DATA_FIN, no connection-level RTO of its own (subflow RTOs drive
//! reinjection), no fallback to TCP, no ADD_ADDR/path manager (subflows come from the scenario).
use super::sched::{ConnView, Decision, SchedEvent, Scheduler, SegmentInfo, SubflowView};
use crate::core::time::{Time, NEVER, NS_PER_S};
use crate::endpoint::Outbox;
use crate::packet::{Packet, PacketKind};
use crate::tcp::cc::coupled::{Coupling, SubflowCc};
use crate::tcp::cc::CaState;
use crate::tcp::sender::{IdlePoll, TcpSender};
use std::collections::VecDeque;

/// Upstream `net.mptcp.stale_loss_cnt` default.
const STALE_LOSS_CNT: u32 = 4;

/// One subflow on the sending side.
pub struct SubflowTx {
    pub tcp: TcpSender,
    /// (subflow seq, dsn, len) of pushed segments not yet acknowledged at subflow level.
    map: VecDeque<(u64, u64, u32)>,
    pub established: bool,
    /// Backup requested by this host (MP_JOIN B bit from the scenario).
    pub local_backup: bool,
    /// Backup requested by the peer (latest MP_PRIO received).
    pub peer_backup: bool,
    pub pf: bool,
    /// Upstream's stale mark (see `on_conn_rto`).
    pub stale: bool,
    stale_count: u32,
    /// Packets received on this subflow (ACKs), and the count at the last stale check.
    rx_count: u64,
    rx_at_last_check: u64,
    seen_timeouts: u64,
    min_srtt: Time,
    max_srtt: Time,
    /// Handshake: when the next join request goes out, and its backoff.
    pub join_at: Time,
    join_backoff: u32,
    /// When this subflow, as the sender, last penalised others (Linux: the scheduler's
    /// per-subflow `last_rbuf_opti`).
    last_rbuf_opti: Time,
    // metrics
    pub decisions: u64,
    pub reinjected_segments: u64,
    pub lost_estimate: (u64, u64),
}

impl SubflowTx {
    fn backup(&self) -> bool {
        self.local_backup || self.peer_backup
    }
}

#[derive(Clone, Copy, Debug)]
struct DsnMeta {
    dsn: u64,
    len: u32,
    first_sent: Time,
    /// Subflow of the first transmission.
    first_subflow: u16,
    /// Subflow sequence number of the first transmission.
    first_seq: u64,
    sent_on: u64,
}

/// Counters for the summary.
#[derive(Clone, Debug, Default)]
pub struct MptcpSenderStats {
    pub reinjections: u64,
    /// Connection-level RTO expiries.
    pub conn_timeouts: u64,
    pub penalisations: u64,
    pub opportunistic_retransmissions: u64,
    pub waits: u64,
    pub retx_requests_served: u64,
    pub mp_prio_received: u64,
}

pub struct MptcpSender {
    /// Private so that every change to a subflow goes through this type, which marks the
    /// subflow's scheduler snapshot stale (`view_dirty`); read them with [`Self::subflows`].
    subflows: Vec<SubflowTx>,
    sched: Box<dyn Scheduler>,
    /// `sched.view_rates()`, asked once.
    view_rates: bool,
    coupling: Option<Coupling>,
    mss: u32,
    data_ack: u64,
    next_dsn: u64,
    app_limit: u64,
    peer_window: u64,
    /// Segments to re-send (dsn, len), served before new data.
    reinject: VecDeque<(u64, u32)>,
    /// Retransmissions the receiver asked for, to go on the subflow the request came from.
    requested: VecDeque<(u64, u32, usize)>,
    meta: VecDeque<DsnMeta>,
    /// The scheduler's subflow snapshots, kept between decisions: `views[i]` is current unless
    /// `view_dirty[i]`. Every path that changes subflow `i` marks it, except two that update
    /// the snapshot in place (an assignment: the queue, `refresh_queue_of`; a send with the
    /// window unchanged: flight and queue, `refresh_sent_of`); with [`crate::core::checks`] on,
    /// each refresh compares the whole cache with fresh snapshots, and both in-place updates
    /// compare theirs.
    /// Rebuilding every snapshot on every ACK made the per-packet cost grow with the number of
    /// subflows.
    views: Vec<SubflowView>,
    view_dirty: Vec<bool>,
    /// Per subflow: what its last poll did, if it sent nothing and nothing about the subflow
    /// changed since (every path that marks `view_dirty` clears it), so polling it again
    /// would do the same ([`TcpSender::last_idle_poll`]); `transmit` repeats that instead.
    /// Polling every subflow after every ACK made the per-packet cost grow with the number
    /// of subflows. With [`crate::core::checks`] on, the poll runs and is compared.
    idle_poll: Vec<Option<IdlePoll>>,
    check_views: bool,
    /// Scratch snapshots for scheduler events (rare, always fresh).
    event_buf: Vec<SubflowView>,
    conn_rto_deadline: Time,
    conn_backoff: u32,
    pub stats: MptcpSenderStats,
    flow: u32,
}

impl MptcpSender {
    /// `initial_window`: the peer's connection-level window as learned in the handshake (the
    /// receiver's buffer), used until the first DATA_ACK arrives.
    pub fn new(
        flow: u32,
        subflows: Vec<SubflowTx>,
        sched: Box<dyn Scheduler>,
        coupling: Option<Coupling>,
        mss: u32,
        initial_window: u64,
    ) -> Self {
        let n = subflows.len();
        let rates = sched.view_rates();
        let views = subflows
            .iter()
            .enumerate()
            .map(|(id, sf)| Self::view_of(id, sf, rates))
            .collect();
        MptcpSender {
            subflows,
            sched,
            view_rates: rates,
            coupling,
            mss,
            data_ack: 0,
            next_dsn: 0,
            app_limit: 0,
            peer_window: initial_window,
            reinject: VecDeque::new(),
            requested: VecDeque::new(),
            meta: VecDeque::new(),
            views,
            view_dirty: vec![false; n],
            idle_poll: vec![None; n],
            check_views: crate::core::checks::cache_checks(),
            event_buf: Vec::new(),
            conn_rto_deadline: NEVER,
            conn_backoff: 0,
            stats: MptcpSenderStats::default(),
            flow,
        }
    }

    pub fn new_subflow(tcp: TcpSender, established: bool, backup: bool, join_at: Time) -> SubflowTx {
        SubflowTx {
            tcp,
            map: VecDeque::new(),
            established,
            local_backup: backup,
            peer_backup: false,
            pf: false,
            stale: false,
            stale_count: 0,
            rx_count: 0,
            rx_at_last_check: 0,
            seen_timeouts: 0,
            min_srtt: Time::MAX,
            max_srtt: 0,
            join_at,
            join_backoff: 0,
            last_rbuf_opti: 0,
            decisions: 0,
            reinjected_segments: 0,
            lost_estimate: (0, 0),
        }
    }

    /// The subflows, read-only (changes go through this type's methods).
    pub fn subflows(&self) -> &[SubflowTx] {
        &self.subflows
    }

    /// Park et al.'s handover reaction: cwnd to one segment on subflow `i` (no-op if absent).
    pub fn collapse_cwnd(&mut self, i: usize) {
        if let Some(sf) = self.subflows.get_mut(i) {
            sf.tcp.tcb.cwnd = 1;
            sf.tcp.tcb.cwnd_cnt = 0;
            self.view_dirty[i] = true;
            self.idle_poll[i] = None;
        }
    }

    pub fn scheduler_name(&self) -> String {
        self.sched.name()
    }
    pub fn data_ack(&self) -> u64 {
        self.data_ack
    }
    pub fn next_dsn(&self) -> u64 {
        self.next_dsn
    }
    pub fn app_limit(&self) -> u64 {
        self.app_limit
    }
    pub fn set_app_limit(&mut self, bytes: u64) {
        self.app_limit = self.app_limit.max(bytes);
    }
    pub fn all_acked(&self) -> bool {
        self.data_ack >= self.app_limit
    }

    /// Earliest timer of any subflow (RTO, persist, pacing) or pending join retry.
    pub fn next_timeout(&self) -> Time {
        self.subflows
            .iter()
            .map(|s| if s.established { s.tcp.next_timeout() } else { s.join_at })
            .min()
            .unwrap_or(NEVER)
            .min(self.conn_rto_deadline)
    }

    /// Connection-level RTO: 2 × the largest subflow RTO (out-of-tree `mptcp_set_rto`), with
    /// exponential backoff while DATA_ACK does not move.
    fn conn_rto(&self) -> Time {
        let max_sub = self
            .subflows
            .iter()
            .filter(|s| s.established)
            .map(|s| s.tcp.rto())
            .max()
            .unwrap_or(NS_PER_S);
        (2 * max_sub)
            .saturating_mul(1 << self.conn_backoff.min(10))
            .min(120 * NS_PER_S)
    }

    /// (Re)arms the connection-level timer when data is outstanding beyond DATA_ACK.
    fn arm_conn_rto(&mut self, now: Time, restart: bool) {
        let outstanding = self.meta.front().is_some_and(|m| m.first_sent != NEVER);
        if !outstanding {
            self.conn_rto_deadline = NEVER;
        } else if restart || self.conn_rto_deadline == NEVER {
            self.conn_rto_deadline = now + self.conn_rto();
        }
    }

    /// Connection-level RTO expiry (out-of-tree `mptcp_meta_retransmit_timer`): the oldest
    /// un-DATA_ACKed segment is re-injected. The expiry also drives upstream's stale detection
    /// (`mptcp_pm_subflows_chk_stale`): a subflow with data outstanding that received nothing
    /// for `STALE_LOSS_CNT` consecutive expiries while another subflow is healthy is marked
    /// stale and its data re-injected; anything arriving on it clears the mark.
    fn on_conn_rto(&mut self, now: Time) {
        self.conn_rto_deadline = NEVER;
        if let Some(m) = self.meta.front().copied() {
            if !self.reinject.iter().any(|&(d, _)| d == m.dsn) {
                self.reinject.push_front((m.dsn, m.len));
            }
            self.stats.conn_timeouts += 1;
        }
        let healthy = self
            .subflows
            .iter()
            .filter(|s| s.established && !s.pf && !s.stale)
            .count();
        let data_ack = self.data_ack;
        for i in 0..self.subflows.len() {
            self.view_dirty[i] = true;
            self.idle_poll[i] = None;
            let sf = &mut self.subflows[i];
            if !sf.established || sf.tcp.unacked_bytes() == 0 {
                sf.stale_count = 0;
                continue;
            }
            if sf.rx_count == sf.rx_at_last_check {
                sf.stale_count += 1;
            } else {
                sf.stale_count = 0;
            }
            sf.rx_at_last_check = sf.rx_count;
            if sf.stale_count >= STALE_LOSS_CNT && !sf.stale && healthy > 1 {
                sf.stale = true;
                for &(_, dsn, len) in sf.map.iter() {
                    if dsn + len as u64 > data_ack && !self.reinject.iter().any(|&(d, _)| d == dsn) {
                        self.reinject.push_back((dsn, len));
                    }
                }
            }
        }
        self.conn_backoff += 1;
        self.arm_conn_rto(now, true);
    }

    /// Fires due timers; returns control packets (join requests, probes) as (subflow, packet).
    pub fn on_timer(&mut self, now: Time, out: &mut Outbox) {
        for i in 0..self.subflows.len() {
            let sf = &mut self.subflows[i];
            if !sf.established {
                if now >= sf.join_at {
                    self.view_dirty[i] = true;
                    self.idle_poll[i] = None;
                    let mut p = Packet::new(PacketKind::Syn);
                    p.flow = self.flow;
                    p.subflow = i as u16;
                    p.ts_val = now;
                    out.push(i, p);
                    // SYN retransmission: 1 s initial RTO, doubling (RFC 6298 §2.1, Linux).
                    sf.join_backoff = (sf.join_backoff + 1).min(6);
                    sf.join_at = now + NS_PER_S * (1 << (sf.join_backoff - 1));
                }
                continue;
            }
            if now >= sf.tcp.next_timeout() {
                self.view_dirty[i] = true;
                self.idle_poll[i] = None;
                if let Some(mut probe) = sf.tcp.on_timer(now) {
                    probe.data_ack = 0;
                    out.push(i, probe);
                }
                self.check_rto(i, now);
            }
        }
        if now >= self.conn_rto_deadline {
            self.on_conn_rto(now);
        }
    }

    /// A subflow RTO re-injects its un-DATA_ACKed data and marks it potentially failed.
    fn check_rto(&mut self, i: usize, now: Time) {
        let sf = &mut self.subflows[i];
        if sf.tcp.stats.timeouts == sf.seen_timeouts {
            return;
        }
        sf.seen_timeouts = sf.tcp.stats.timeouts;
        sf.pf = true;
        self.view_dirty[i] = true;
        self.idle_poll[i] = None;
        let data_ack = self.data_ack;
        let mut added = 0;
        for &(_, dsn, len) in sf.map.iter() {
            if dsn + len as u64 > data_ack && !self.reinject.iter().any(|&(d, _)| d == dsn) {
                self.reinject.push_back((dsn, len));
                added += 1;
            }
        }
        sf.reinjected_segments += added;
        let _ = now;
    }

    /// Handles a join answer on subflow `i`. The SYN/SYN-ACK exchange is the subflow's first RTT
    /// sample, timed by the echoed timestamp (so a retransmitted SYN is timed right), as Linux
    /// does (`tcp_rcv_synsent_state_process` → `tcp_ack_update_rtt`, seeding srtt and min_rtt):
    /// without it a subflow that only ever carries lone packets knows its RTT only through the
    /// receiver's delayed-ACK timer.
    pub fn on_syn_ack(&mut self, i: usize, now: Time, p: &Packet) {
        self.view_dirty[i] = true;
        self.idle_poll[i] = None;
        let sf = &mut self.subflows[i];
        if !sf.established {
            sf.established = true;
            sf.join_at = NEVER;
            if now > p.ts_ecr {
                sf.tcp.rtt.on_sample(now - p.ts_ecr);
                sf.min_srtt = sf.min_srtt.min(sf.tcp.rtt.srtt);
                sf.max_srtt = sf.max_srtt.max(sf.tcp.rtt.srtt);
            }
            if p.mp_prio == 2 {
                sf.peer_backup = true;
            }
        }
    }

    /// Processes an ACK that arrived on subflow `i`.
    pub fn on_ack(&mut self, i: usize, now: Time, p: &Packet) {
        self.refresh_coupling();
        self.view_dirty[i] = true;
        self.idle_poll[i] = None;
        {
            let sf = &mut self.subflows[i];
            sf.pf = false; // any valid incoming packet clears "potentially failed"
            sf.stale = false; // ... and upstream's "stale"
            sf.rx_count += 1;
            sf.tcp.on_ack(now, p);
            let srtt = sf.tcp.rtt.srtt;
            if srtt > 0 {
                sf.min_srtt = sf.min_srtt.min(srtt);
                sf.max_srtt = sf.max_srtt.max(srtt);
            }
            let una = sf.tcp.snd_una();
            while let Some(&(seq, _, len)) = sf.map.front() {
                if seq + len as u64 <= una {
                    sf.map.pop_front();
                } else {
                    break;
                }
            }
            match p.mp_prio {
                1 => {
                    sf.peer_backup = false;
                    self.stats.mp_prio_received += 1;
                }
                2 => {
                    sf.peer_backup = true;
                    self.stats.mp_prio_received += 1;
                }
                _ => {}
            }
        }
        if p.data_ack > self.data_ack {
            let acked = p.data_ack - self.data_ack;
            self.data_ack = p.data_ack;
            self.conn_backoff = 0;
            self.conn_rto_deadline = NEVER; // re-armed below from the new oldest segment
            while let Some(m) = self.meta.front() {
                if m.dsn + m.len as u64 <= self.data_ack {
                    self.meta.pop_front();
                } else {
                    break;
                }
            }
            let da = self.data_ack;
            self.reinject.retain(|&(d, l)| d + l as u64 > da);
            self.requested.retain(|&(d, l, _)| d + l as u64 > da);
            self.sched_event(SchedEvent::DataAcked { now, bytes: acked });
        }
        if p.data_ack >= self.data_ack {
            self.peer_window = p.rwnd;
        }
        if p.retx_request != crate::packet::NONE_U64 && p.retx_request >= self.data_ack {
            self.requested.push_back((p.retx_request, p.retx_request_len.max(1), i));
        }
        self.check_rto(i, now);
        self.arm_conn_rto(now, false);
    }

    fn refresh_coupling(&mut self) {
        if let Some(c) = &self.coupling {
            let mut t = c.borrow_mut();
            for (k, sf) in self.subflows.iter().enumerate() {
                t[k] = SubflowCc {
                    active: sf.established,
                    cwnd: sf.tcp.tcb.cwnd,
                    ssthresh: sf.tcp.tcb.ssthresh,
                    srtt: sf.tcp.rtt.srtt,
                    min_rtt: sf.tcp.rtt.min_rtt,
                    mss: sf.tcp.cfg.mss,
                    bytes_acked: sf.tcp.stats.bytes_acked,
                    backup: sf.backup(),
                    // Kept by the subflow's own controller.
                    losses: t[k].losses,
                };
            }
        }
    }

    /// Feeds an event to the scheduler, with fresh views only if it reads them.
    fn sched_event(&mut self, ev: SchedEvent) {
        let mut views = std::mem::take(&mut self.event_buf);
        if self.sched.event_views() {
            self.fill_views(&mut views);
        } else {
            views.clear();
        }
        self.sched.on_event(&ev, &views);
        self.event_buf = views;
    }

    /// Snapshot of every subflow for the scheduler.
    pub fn views(&self) -> Vec<SubflowView> {
        let mut v = Vec::with_capacity(self.subflows.len());
        self.fill_views(&mut v);
        v
    }

    /// Fills `out` with the subflow snapshots (reusing its allocation).
    fn fill_views(&self, out: &mut Vec<SubflowView>) {
        out.clear();
        let rates = self.view_rates;
        out.extend(
            self.subflows
                .iter()
                .enumerate()
                .map(|(id, sf)| Self::view_of(id, sf, rates)),
        );
    }

    /// Brings the kept snapshots up to date: only the subflows marked since the last refresh
    /// are rebuilt (with checks on, the whole cache is then compared with fresh snapshots).
    fn refresh_views(&mut self, views: &mut [SubflowView]) {
        for (i, dirty) in self.view_dirty.iter_mut().enumerate() {
            if std::mem::take(dirty) {
                views[i] = Self::view_of(i, &self.subflows[i], self.view_rates);
            }
        }
        if self.check_views {
            for (i, view) in views.iter().enumerate() {
                self.check_view(view, i, "a change to it was not marked");
            }
        }
    }

    /// With checks on, `view` must be a fresh snapshot of subflow `i` (`after` says what the
    /// cache skipped).
    #[inline]
    fn check_view(&self, view: &SubflowView, i: usize, after: &str) {
        if self.check_views {
            assert_eq!(
                *view,
                Self::view_of(i, &self.subflows[i], self.view_rates),
                "stale scheduler snapshot of subflow {i}: {after}"
            );
        }
    }

    /// A snapshot of subflow `id` for the scheduler; the derived rates only if `rates` (see
    /// [`Scheduler::view_rates`]), else 0.
    #[inline]
    fn view_of(id: usize, sf: &SubflowTx, rates: bool) -> SubflowView {
        let t = &sf.tcp;
        let tcb = &t.tcb;
        let mss = t.cfg.mss;
        let srtt = t.rtt.srtt;
        let packets_out = t.packets_out();
        let pacing = if !rates {
            0.0
        } else if srtt > 0 {
            let factor = if tcb.cwnd < tcb.ssthresh / 2 { 2.0 } else { 1.2 };
            mss as f64 * tcb.cwnd.max(packets_out) as f64 / (srtt as f64 / 1e9) * factor
        } else {
            // Before an RTT sample Linux paces at ~ initial window per 1 ms-ish; use IW/100 µs.
            mss as f64 * tcb.cwnd as f64 / 1e-4
        };
        let queued_bytes = t.queued_bytes();
        SubflowView {
            id,
            established: sf.established,
            pf: sf.pf,
            stale: sf.stale,
            backup: sf.backup(),
            in_loss: tcb.ca_state == CaState::Loss,
            cwnd: tcb.cwnd,
            ssthresh: tcb.ssthresh,
            in_flight: t.pipe(),
            queued: queued_bytes.div_ceil(mss as u64) as u32,
            queued_bytes,
            unacked_bytes: t.unacked_bytes(),
            srtt,
            rttvar: t.rtt.rttvar,
            min_srtt: if sf.min_srtt == Time::MAX { 0 } else { sf.min_srtt },
            max_srtt: sf.max_srtt,
            mss,
            pacing_rate_bytes_per_s: pacing,
            delivered_bytes: t.stats.bytes_acked,
            loss_rate: if rates && t.stats.segments_sent > 0 {
                t.stats.segments_retransmitted as f64 / t.stats.segments_sent as f64
            } else {
                0.0
            },
            tx_time_per_segment: if rates && srtt > 0 && tcb.cwnd > 0 {
                srtt / tcb.cwnd as u64
            } else {
                0
            },
        }
    }

    /// The queue fields of a snapshot ([`Self::view_of`]'s `queued_bytes` and `queued`), the
    /// only ones data handed to the subflow changes.
    #[inline]
    fn refresh_queue_of(view: &mut SubflowView, sf: &SubflowTx) {
        let queued_bytes = sf.tcp.queued_bytes();
        view.queued_bytes = queued_bytes;
        view.queued = queued_bytes.div_ceil(sf.tcp.cfg.mss as u64) as u32;
    }

    /// The fields of a snapshot that sending changes when the window does not: the queue (see
    /// [`Self::refresh_queue_of`]), the flight and the unacknowledged bytes.
    #[inline]
    fn refresh_sent_of(view: &mut SubflowView, sf: &SubflowTx) {
        Self::refresh_queue_of(view, sf);
        view.in_flight = sf.tcp.pipe();
        view.unacked_bytes = sf.tcp.unacked_bytes();
    }

    fn window_end(&self) -> u64 {
        self.data_ack.saturating_add(self.peer_window)
    }

    /// Places data on subflows (requests, reinjections, then new data) and returns the packets
    /// the subflows can send now, as (subflow, packet).
    pub fn push_and_send(&mut self, now: Time, out: &mut Outbox) {
        // 1. P1 retransmission requests: resent on the subflow the request came from.
        // Newest first, each to the front of its subflow's queue: the oldest ends up first.
        while let Some((dsn, len, i)) = self.requested.pop_back() {
            if dsn + len as u64 <= self.data_ack || !self.subflows[i].established {
                continue;
            }
            let len = len.min(self.mss);
            self.assign_front(i, dsn, len);
            self.stats.retx_requests_served += 1;
        }
        // 2. Reinjections, then new data. The snapshots are taken once: pushing a segment only
        // changes the chosen subflows' queues, so only their views are refreshed after each
        // decision (the scheduler sees exactly what a fresh snapshot would show).
        let mut views = std::mem::take(&mut self.views);
        self.refresh_views(&mut views);
        loop {
            let (seg, from_reinject) = if let Some(&(dsn, len)) = self.reinject.front() {
                (
                    SegmentInfo {
                        dsn,
                        len,
                        reinjection: true,
                        sent_on: self.sent_on(dsn),
                    },
                    true,
                )
            } else if self.next_dsn < self.app_limit {
                let len = (self.app_limit - self.next_dsn).min(self.mss as u64) as u32;
                if self.next_dsn + len as u64 > self.window_end() {
                    if self.sched.rcvbuf_optimisation() {
                        let seg = SegmentInfo {
                            dsn: self.next_dsn,
                            len,
                            reinjection: false,
                            sent_on: 0,
                        };
                        self.rcvbuf_optimisation(now, seg, &views);
                    }
                    break;
                }
                (
                    SegmentInfo {
                        dsn: self.next_dsn,
                        len,
                        reinjection: false,
                        sent_on: 0,
                    },
                    false,
                )
            } else {
                break;
            };
            let conn = ConnView {
                now,
                send_window_left: self.window_end().saturating_sub(self.next_dsn),
                send_window: self.peer_window,
                unsent_bytes: self.app_limit.saturating_sub(self.next_dsn).min(1 << 40),
                segment: seg.clone(),
            };
            let decision = self.sched.schedule(&conn, &views);
            let usable = |s: &Self, i: usize| i < s.subflows.len() && s.subflows[i].established;
            let mut one = [0usize; 1];
            let targets: &[usize] = match &decision {
                Decision::Send(i) if usable(self, *i) => {
                    one[0] = *i;
                    &one
                }
                Decision::SendMany(v) if !v.is_empty() && v.iter().all(|&i| usable(self, i)) => v,
                _ => {
                    self.stats.waits += 1;
                    break;
                }
            };
            if from_reinject {
                self.reinject.pop_front();
                self.stats.reinjections += targets.len() as u64;
            } else {
                self.next_dsn += seg.len as u64;
            }
            for &i in targets {
                self.subflows[i].decisions += 1;
                self.assign(i, seg.dsn, seg.len, now);
            }
            // Upstream-style bursts: keep filling the chosen subflow with new data.
            let burst = self.sched.burst_bytes();
            if !from_reinject && burst > 0 && targets.len() == 1 {
                let i = targets[0];
                let mut pushed = seg.len as u64;
                while pushed < burst && self.reinject.is_empty() && self.next_dsn < self.app_limit {
                    let len = (self.app_limit - self.next_dsn).min(self.mss as u64) as u32;
                    if self.next_dsn + len as u64 > self.window_end() {
                        break;
                    }
                    let dsn = self.next_dsn;
                    self.next_dsn += len as u64;
                    self.assign(i, dsn, len, now);
                    pushed += len as u64;
                }
            }
            for &i in targets {
                // Assigning only queues data on the subflow (`TcpSender::push_segment`), which
                // moves nothing in its snapshot but the queue: rebuilding the whole snapshot
                // was 2 % of an MPTCP run. With checks on, it must equal a fresh one.
                Self::refresh_queue_of(&mut views[i], &self.subflows[i]);
                self.check_view(&views[i], i, "after an assignment");
                self.view_dirty[i] = false;
            }
            if self.subflows.iter().all(|s| !s.established) {
                break;
            }
        }
        self.views = views;
        self.transmit(now, out);
        self.arm_conn_rto(now, false);
        // Data still waits at connection level within the peer's window: subflows whose window
        // is full are cwnd-limited (they may grow).
        let waiting = !self.reinject.is_empty()
            || (self.next_dsn < self.app_limit
                && self.next_dsn + (self.mss as u64).min(self.app_limit - self.next_dsn) <= self.window_end());
        if waiting {
            for sf in self.subflows.iter_mut().filter(|s| s.established) {
                sf.tcp.note_cwnd_limited();
            }
        }
    }

    fn sent_on(&self, dsn: u64) -> u64 {
        self.meta_index(dsn).map_or(0, |k| self.meta[k].sent_on)
    }

    fn meta_index(&self, dsn: u64) -> Option<usize> {
        // Usually one of the newest DSNs (just assigned, or being sent while a few more wait in
        // subflow queues): look at the last few entries before a binary search.
        let n = self.meta.len();
        for k in (n.saturating_sub(8)..n).rev() {
            let d = self.meta[k].dsn;
            if d == dsn {
                return Some(k);
            }
            if d < dsn {
                return None;
            }
        }
        let k = self.meta.partition_point(|m| m.dsn < dsn);
        (k < self.meta.len() && self.meta[k].dsn == dsn).then_some(k)
    }

    /// Like [`Self::assign`], but ahead of the data already queued (unsent) on subflow `i`: a
    /// P1 retransmission request is served before new data, as a TCP retransmission would be.
    fn assign_front(&mut self, i: usize, dsn: u64, len: u32) {
        self.view_dirty[i] = true;
        self.idle_poll[i] = None;
        let sf = &mut self.subflows[i];
        let seq = sf.tcp.push_segment_front(len);
        let k = sf.map.partition_point(|&(s, _, _)| s < seq);
        for m in sf.map.range_mut(k..) {
            m.0 += len as u64;
        }
        sf.map.insert(k, (seq, dsn, len));
        if let Some(mk) = self.meta_index(dsn) {
            self.meta[mk].sent_on |= 1 << i.min(63);
        }
    }

    /// Maps `[dsn, dsn+len)` onto subflow `i` (fixed from now on) and queues it there.
    fn assign(&mut self, i: usize, dsn: u64, len: u32, _now: Time) {
        self.view_dirty[i] = true;
        self.idle_poll[i] = None;
        let seq = self.subflows[i].tcp.push_segment(len);
        self.subflows[i].map.push_back((seq, dsn, len));
        if self.meta.back().is_none_or(|m| m.dsn < dsn) {
            // New data (the usual case): DSNs are assigned in increasing order, so push_back
            // keeps `meta` sorted, and no entry can hold this DSN yet.
            self.meta.push_back(DsnMeta {
                dsn,
                len,
                first_sent: NEVER,
                first_subflow: 0,
                first_seq: 0,
                sent_on: 1 << i.min(63),
            });
        } else if let Some(k) = self.meta_index(dsn) {
            self.meta[k].sent_on |= 1 << i.min(63);
        }
    }

    /// Polls subflow `i`'s TCP sender into `p` and adds the connection-level fields (DSN and
    /// where it was first sent); false if the subflow sends nothing now.
    #[inline]
    fn poll_subflow(&mut self, i: usize, now: Time, p: &mut Packet) -> bool {
        if !self.subflows[i].tcp.poll_transmit_into(now, p) {
            return false;
        }
        let sf = &self.subflows[i];
        let k = map_index(&sf.map, p.seq);
        if let Some(&(s, dsn, _)) = sf.map.get(k) {
            p.dsn = dsn + (p.seq - s);
        }
        if let Some(mk) = self.meta_index(p.dsn) {
            let m = &mut self.meta[mk];
            if m.first_sent == NEVER {
                m.first_sent = now;
                m.first_subflow = i as u16;
                m.first_seq = p.seq;
            }
            p.dsn_first_sent = m.first_sent;
            p.dsn_first_subflow = m.first_subflow;
            p.dsn_first_seq = m.first_seq;
        } else {
            // No record: the DSN was acknowledged at data level while this copy (a P1
            // request or reinjection) waited in the subflow's queue. It is not an
            // original: "first sent" at 0 makes the receiver count it as a copy.
            p.dsn_first_sent = 0;
            p.dsn_first_subflow = i as u16;
            p.dsn_first_seq = p.seq;
        }
        p.data_ack = 0;
        true
    }

    fn transmit(&mut self, now: Time, out: &mut Outbox) {
        for i in 0..self.subflows.len() {
            if !self.subflows[i].established {
                continue;
            }
            if let Some(idle) = self.idle_poll[i] {
                if !self.check_views {
                    self.subflows[i].tcp.repeat_idle_poll(idle);
                    continue;
                }
                // Self-check: the poll runs and must do exactly what the repeat would.
                let tcp = &self.subflows[i].tcp;
                let expected = match idle {
                    IdlePoll::Unchanged => tcp.blocked_by_cwnd(),
                    IdlePoll::Blocked(b) => b,
                };
                let before = window_state(tcp);
                let sent = out.push_with(i, |p| self.poll_subflow(i, now, p));
                let tcp = &self.subflows[i].tcp;
                assert!(
                    !sent
                        && tcp.blocked_by_cwnd() == expected
                        && tcp.last_idle_poll() == Some(idle)
                        && before == window_state(tcp),
                    "subflow {i} changed since its last poll without being marked (idle poll {idle:?})"
                );
                continue;
            }
            // Polling can change the snapshot without sending (the idle restart lowers cwnd).
            let before = window_state(&self.subflows[i].tcp);
            let mut sent = false;
            // Each packet is written straight into the box it travels in (endpoint::Outbox):
            // by value, a poll that sends nothing still paid for a whole header.
            while out.push_with(i, |p| self.poll_subflow(i, now, p)) {
                sent = true;
            }
            let tcp = &self.subflows[i].tcp;
            if before != window_state(tcp) || (sent && self.view_rates) {
                self.view_dirty[i] = true;
            } else if sent && !self.view_dirty[i] {
                // Sending moves only the flight and the queue in the snapshot (the window is
                // unchanged, checked above, and no derived rate is kept): refreshed here instead
                // of rebuilt whole at the next decision.
                Self::refresh_sent_of(&mut self.views[i], &self.subflows[i]);
                self.check_view(&self.views[i], i, "after sending");
            }
            // The last poll sent nothing; what it did is repeated until the subflow changes.
            self.idle_poll[i] = self.subflows[i].tcp.last_idle_poll();
        }
    }

    /// Out-of-tree receive-buffer optimisation: multipath-tcp/mptcp v0.95/v0.96
    /// `net/mptcp/mptcp_sched.c`, `mptcp_rcv_buf_optimization` (older trees:
    /// `net/mptcp/mptcp_output.c`), called from `mptcp_next_segment` with `penal = 1` when the
    /// segment at the send head does not fit the connection-level window. Upstream Linux MPTCP
    /// (`net/mptcp/`) has no penalisation at all.
    ///
    /// - The sending subflow `tp` is the one the scheduler picks for the blocked segment
    ///   (Linux: `get_available_subflow` / the scheduler's own choice); no choice, nothing happens.
    /// - Penalisation, at most once per `tp`'s srtt (its `last_rbuf_opti`): every other subflow
    ///   on which the oldest un-DATA_ACKed segment was sent (`path_mask`) has its cwnd halved
    ///   (ssthresh too unless in slow start) if it is **strictly slower** (`tp`'s srtt < its
    ///   srtt) **and in the Open state** (`icsk_ca_state == TCP_CA_Open`).
    /// - Retransmission, whether or not anything was penalised: if that segment was not sent on
    ///   `tp` yet, the holders are examined in order; the first one with cwnd ≤ 4 decides "yes",
    ///   the first one with `4·srtt(tp) ≥ srtt(holder)` decides "no", any other one "yes".
    ///
    /// Deviations: the scheduler is asked with the views of this pass (as for every decision);
    /// Linux's per-subflow receive-window test and its `penal = 0` path (send buffer full while
    /// nothing is unsent) do not exist here (the sender never runs out of send buffer).
    fn rcvbuf_optimisation(&mut self, now: Time, seg: SegmentInfo, views: &[SubflowView]) {
        let conn = ConnView {
            now,
            send_window_left: 0,
            send_window: self.peer_window,
            unsent_bytes: self.app_limit.saturating_sub(self.next_dsn).min(1 << 40),
            segment: seg,
        };
        let tp = match self.sched.schedule(&conn, views) {
            Decision::Send(i) => i,
            Decision::SendMany(v) if !v.is_empty() => v[0],
            _ => return,
        };
        if tp >= self.subflows.len() || !self.subflows[tp].established {
            return;
        }
        let Some(oldest) = self.meta.front().copied() else {
            return;
        };
        let srtt_tp = self.subflows[tp].tcp.rtt.srtt;
        let n = self.subflows.len();
        let holders = move || (0..n).filter(move |&i| i != tp && oldest.sent_on & (1 << i.min(63)) != 0);
        if now >= self.subflows[tp].last_rbuf_opti + srtt_tp {
            let mut penalised = false;
            for i in holders() {
                let sf = &mut self.subflows[i];
                if !(srtt_tp < sf.tcp.rtt.srtt && sf.tcp.ca_state() == CaState::Open) {
                    continue;
                }
                self.view_dirty[i] = true;
                self.idle_poll[i] = None;
                let tcb = &mut sf.tcp.tcb;
                let was_ca = tcb.cwnd >= tcb.ssthresh;
                tcb.cwnd = (tcb.cwnd / 2).max(1);
                if was_ca {
                    tcb.ssthresh = (tcb.ssthresh / 2).max(2);
                }
                penalised = true;
            }
            if penalised {
                self.subflows[tp].last_rbuf_opti = now;
                self.stats.penalisations += 1;
                self.sched_event(SchedEvent::Penalised { now });
            }
        }
        if oldest.sent_on & (1 << tp.min(63)) != 0 {
            return;
        }
        let mut retransmit = false;
        for i in holders() {
            let h = &self.subflows[i].tcp;
            if h.tcb.cwnd <= 4 {
                retransmit = true;
                break;
            }
            if 4 * srtt_tp >= h.rtt.srtt {
                retransmit = false;
                break;
            }
            retransmit = true;
        }
        if retransmit {
            self.assign(tp, oldest.dsn, oldest.len, now);
            self.stats.opportunistic_retransmissions += 1;
        }
    }
}

/// What a poll can change in a subflow's scheduler snapshot besides flight and queue (the idle
/// restart lowers cwnd; a send can start an event that moves the window): compared before and
/// after every poll. A poll that sent and left it unchanged only needs `refresh_sent_of`, so it
/// must cover every other snapshot field a sending poll can change (derived rates aside: a
/// scheduler that reads them always gets a full rebuild).
fn window_state(tcp: &TcpSender) -> (u32, u32, CaState) {
    (tcp.tcb.cwnd, tcp.tcb.ssthresh, tcp.tcb.ca_state)
}

/// Index of the first mapping of `map` (contiguous `(seq, dsn, len)` in subflow sequence order)
/// that ends after `seq`, i.e. the one holding `seq` (`map.len()` if none). A new segment's
/// mapping is among the last few (only queued, unsent ones follow it), so those are looked at
/// before a binary search.
fn map_index(map: &VecDeque<(u64, u64, u32)>, seq: u64) -> usize {
    let n = map.len();
    for k in (n.saturating_sub(4)..n).rev() {
        let (s, _, l) = map[k];
        if s <= seq {
            return if seq < s + l as u64 { k } else { k + 1 };
        }
    }
    map.partition_point(|&(s, _, l)| s + l as u64 <= seq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::cc;
    use crate::tcp::sender::SenderConfig;

    /// Puts every segment on subflow 0, whatever its window (as a scheduler with a FIFO per path,
    /// like delay-predictive, may).
    struct AllOnFirst;
    impl Scheduler for AllOnFirst {
        fn name(&self) -> String {
            "all-on-first".into()
        }
        fn schedule(&mut self, _conn: &ConnView, _subflows: &[SubflowView]) -> Decision {
            Decision::Send(0)
        }
    }

    /// Sends every segment to one subflow (`to`), with the receive-buffer optimisation on.
    struct To(usize);
    impl Scheduler for To {
        fn name(&self) -> String {
            "to".into()
        }
        fn schedule(&mut self, _conn: &ConnView, _subflows: &[SubflowView]) -> Decision {
            Decision::Send(self.0)
        }
        fn rcvbuf_optimisation(&self) -> bool {
            true
        }
    }

    /// Three established Reno subflows with the given srtts (ms); a 10-segment peer window filled
    /// on subflow 0 (which then holds the oldest data); then the scheduler wants to send the next
    /// segment on subflow `wants`, and the window blocks at `now` = 1 s (past every RTT gate).
    /// `prepare` edits the senders before that blocked attempt. Returns the sender.
    fn blocked_on_window(srtt_ms: [u64; 3], wants: usize, prepare: impl FnOnce(&mut MptcpSender)) -> MptcpSender {
        let cfg = SenderConfig::default();
        let mss = cfg.mss;
        let sub = |k: u16| {
            MptcpSender::new_subflow(
                TcpSender::new(cfg.clone(), cc::by_name("reno").unwrap(), 0, k),
                true,
                false,
                0,
            )
        };
        let mut s = MptcpSender::new(
            0,
            vec![sub(0), sub(1), sub(2)],
            Box::new(To(0)),
            None,
            mss,
            10 * mss as u64,
        );
        s.set_app_limit(u64::MAX);
        let mut out = Outbox::default();
        s.push_and_send(0, &mut out);
        assert_eq!(out.len(), 10);
        for (k, ms) in srtt_ms.iter().enumerate() {
            s.subflows[k].tcp.rtt.srtt = ms * 1_000_000;
        }
        // Subflow 0 in congestion avoidance, so a halving shows in both cwnd and ssthresh.
        s.subflows[0].tcp.tcb.ssthresh = 8;
        prepare(&mut s);
        s.sched = Box::new(To(wants));
        out.clear();
        s.push_and_send(1_000_000_000, &mut out);
        s
    }

    /// P0's symmetric paths: the subflow that wants to send penalises the holder of the oldest
    /// data when the holder is strictly slower and in Open (multipath-tcp/mptcp
    /// `mptcp_rcv_buf_optimization`), and only then.
    #[test]
    fn rcvbuf_optimisation_penalises_only_a_strictly_slower_holder() {
        let s = blocked_on_window([100, 50, 50], 1, |_| {});
        assert_eq!(
            (s.subflows[0].tcp.tcb.cwnd, s.subflows[0].tcp.tcb.ssthresh),
            (5, 4),
            "slower holder in Open: halved"
        );
        assert_eq!(s.stats.penalisations, 1);
        // Not strictly slower: same srtt as the sender.
        let s = blocked_on_window([50, 50, 50], 1, |_| {});
        assert_eq!(s.subflows[0].tcp.tcb.cwnd, 10, "equal srtt: not penalised");
        assert_eq!(s.stats.penalisations, 0);
        // Faster than the sender, though slower than the fastest subflow (2), which has no say:
        // the penaliser is the subflow the scheduler picked.
        let s = blocked_on_window([60, 80, 20], 1, |_| {});
        assert_eq!(
            s.subflows[0].tcp.tcb.cwnd, 10,
            "holder faster than the sender: not penalised"
        );
        assert_eq!(s.stats.penalisations, 0);
    }

    #[test]
    fn rcvbuf_optimisation_spares_a_holder_outside_the_open_state() {
        for state in [CaState::Disorder, CaState::Recovery, CaState::Loss] {
            let s = blocked_on_window([100, 50, 50], 1, |s| s.subflows[0].tcp.tcb.ca_state = state);
            assert_eq!(s.subflows[0].tcp.tcb.cwnd, 10, "{state:?}: not penalised");
            assert_eq!(s.stats.penalisations, 0);
        }
    }

    /// The opportunistic retransmission does not depend on a penalisation: a holder more than 4x
    /// slower than the sender, even in Recovery, has its oldest segment re-sent on the sender;
    /// one at most 4x slower (window above 4) does not.
    #[test]
    fn rcvbuf_optimisation_retransmits_from_a_much_slower_holder() {
        let mss = SenderConfig::default().mss as u64;
        let s = blocked_on_window([300, 50, 50], 1, |s| s.subflows[0].tcp.tcb.ca_state = CaState::Recovery);
        assert_eq!(s.stats.penalisations, 0);
        assert_eq!(s.stats.opportunistic_retransmissions, 1);
        let dsns: Vec<u64> = s.subflows[1].map.iter().map(|&(_, d, _)| d).collect();
        assert_eq!(dsns, vec![0]);
        assert_eq!(mss, s.subflows[1].map[0].2 as u64);
        let s = blocked_on_window([150, 50, 50], 1, |_| {});
        assert_eq!(
            s.stats.opportunistic_retransmissions, 0,
            "4 x 50 >= 150 and the halved window is 5 > 4"
        );
    }

    /// An ACK on subflow 0 with peer window 30 segments; `request`: a P1 retransmission request.
    fn ack(mss: u64, ack: u64, data_ack: u64, request: Option<u64>) -> Packet {
        let mut a = Packet::new(PacketKind::Ack);
        a.ack = ack;
        a.data_ack = data_ack;
        a.rwnd = 30 * mss;
        if let Some(dsn) = request {
            a.retx_request = dsn;
            a.retx_request_len = mss as u32;
        }
        a
    }

    /// Two established Reno subflows, every segment queued on subflow 0, peer window 30 segments.
    fn sender() -> (MptcpSender, u64) {
        let cfg = SenderConfig::default();
        let mss = cfg.mss;
        let sub = |k: u16| {
            MptcpSender::new_subflow(
                TcpSender::new(cfg.clone(), cc::by_name("reno").unwrap(), 0, k),
                true,
                false,
                0,
            )
        };
        let mut s = MptcpSender::new(
            0,
            vec![sub(0), sub(1)],
            Box::new(AllOnFirst),
            None,
            mss,
            30 * mss as u64,
        );
        s.set_app_limit(u64::MAX);
        (s, mss as u64)
    }

    /// Linux tcp_cwnd_restart applies to MPTCP subflows too (each is a TCP socket whose
    /// `tcp_slow_start_after_idle_check` runs when data is queued on it): a subflow idle for
    /// 1.5 RTOs sends half its window, not all of it.
    #[test]
    fn an_idle_subflow_restarts_its_window() {
        let cfg = SenderConfig::default();
        let mss = cfg.mss as u64;
        let sub = |k: u16| {
            MptcpSender::new_subflow(
                TcpSender::new(cfg.clone(), cc::by_name("reno").unwrap(), 0, k),
                true,
                false,
                0,
            )
        };
        let mut s = MptcpSender::new(
            0,
            vec![sub(0), sub(1)],
            Box::new(AllOnFirst),
            None,
            mss as u32,
            100 * mss,
        );
        let ms = 1_000_000;
        s.set_app_limit(10 * mss);
        let mut out = Outbox::default();
        s.push_and_send(0, &mut out);
        assert_eq!(out.len(), 10);
        s.set_app_limit(30 * mss);
        s.on_ack(0, 40 * ms, &ack(mss, 10 * mss, 10 * mss, None));
        out.clear();
        s.push_and_send(40 * ms, &mut out);
        assert_eq!(out.len(), 20);
        s.on_ack(0, 80 * ms, &ack(mss, 30 * mss, 30 * mss, None));
        let cwnd = s.subflows[0].tcp.tcb.cwnd;
        assert!(cwnd >= 20, "cwnd {cwnd}");
        assert_eq!(s.subflows[0].tcp.packets_out(), 0);
        let rto = s.subflows[0].tcp.rto();
        s.set_app_limit(u64::MAX);
        out.clear();
        s.push_and_send(80 * ms + rto + rto / 2, &mut out);
        assert_eq!(out.len() as u32, cwnd / 2, "one halving after 1.5 RTOs idle");
    }

    #[test]
    fn a_requested_retransmission_goes_ahead_of_the_data_queued_on_its_subflow() {
        let (mut s, mss) = sender();
        let mut out = Outbox::default();
        s.push_and_send(0, &mut out);
        // The initial window (10 segments) leaves; DSNs 10..30 wait in subflow 0's queue.
        assert_eq!(out.len(), 10);
        assert!(out.iter().all(|(k, _)| k == 0));
        assert_eq!(s.subflows[0].tcp.queued_bytes(), 20 * mss);
        // The first segment is acknowledged, and the receiver asks for DSN 5 on subflow 0.
        s.on_ack(0, 1_000_000, &ack(mss, mss, mss, Some(5 * mss)));
        out.clear();
        s.push_and_send(1_000_000, &mut out);
        // Slow start opens two places: the requested DSN goes first, on the next subflow
        // sequence number; the queued data follows with its own DSNs, one segment further on.
        let sent: Vec<(u64, u64)> = out.iter().map(|(_, p)| (p.seq, p.dsn)).collect();
        assert_eq!(sent, vec![(10 * mss, 5 * mss), (11 * mss, 10 * mss)]);
        assert_eq!(s.stats.retx_requests_served, 1);
        // Every queued DSN is still mapped once, in order, behind the inserted one (the window
        // moved by one segment: DSN 30 joined the queue).
        let dsns: Vec<u64> = s.subflows[0].map.iter().map(|&(_, d, _)| d).collect();
        let expect: Vec<u64> = (1..10).chain([5]).chain(10..31).map(|k| k * mss).collect();
        assert_eq!(dsns, expect);
    }

    /// A copy that waited in a subflow queue while its DSN was acknowledged at data level (here
    /// by the original) is still marked as a copy when it finally leaves: the receiver must not
    /// take it for the original and forget that the original was lost.
    #[test]
    fn a_copy_sent_after_its_dsn_was_acknowledged_is_not_an_original() {
        let (mut s, mss) = sender();
        let mut out = Outbox::default();
        s.push_and_send(0, &mut out);
        // Subflow 0's window is full: the request for DSN 5 waits at the front of its queue.
        s.on_ack(0, 1_000_000, &ack(mss, 0, 0, Some(5 * mss)));
        out.clear();
        s.push_and_send(1_000_000, &mut out);
        assert!(out.is_empty());
        // Everything up to DSN 10 is acknowledged (DSN 5 included); the window opens.
        s.on_ack(0, 2_000_000, &ack(mss, 10 * mss, 10 * mss, None));
        s.push_and_send(2_000_000, &mut out);
        let out = out.drain_values();
        let (_, copy) = &out[0];
        assert_eq!(copy.dsn, 5 * mss);
        assert!(
            copy.dsn_first_sent < copy.ts_val,
            "marked as a copy: first sent {} vs now {}",
            copy.dsn_first_sent,
            copy.ts_val
        );
        // The data behind it are originals, first sent now.
        assert!(out[1..]
            .iter()
            .all(|(_, p)| p.dsn >= 10 * mss && p.dsn_first_sent == 2_000_000));
    }
}
