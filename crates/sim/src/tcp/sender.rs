//! The TCP sender: a state machine fed ACKs and timer expiries with an explicit `now`.
//!
//! Sources and Linux counterparts:
//! - segment scoreboard and "pipe" as Linux `tcp_packets_in_flight` (packets_out − sacked_out −
//!   lost_out + retrans_out), RFC 6675 §4 for SACK-based loss marking (a segment is lost when
//!   DupThresh = 3 segments above it are SACKed) and NextSeg (retransmit lost segments first);
//! - fast retransmit and recovery: RFC 5681 (Reno), RFC 6582 (NewReno partial ACKs), Tahoe
//!   (cwnd = 1 and go-back-N after the fast retransmit); without SACK, duplicate ACKs count as
//!   "SACKed" segments for the pipe like Linux's `tcp_add_reno_sack`, except in the Loss state
//!   (after a timeout or Tahoe's fast retransmit), where only the cumulative ACK clocks the
//!   go-back-N retransmissions (Linux `tcp_process_loss` for `tcp_is_reno`);
//! - without SACK, RFC 6582 §3.2 step 2 and §4's `recover`: a fast retransmit (Tahoe, NewReno),
//!   a timeout or an EHN go-back records `snd_nxt`, and duplicate ACKs count toward a new fast
//!   retransmit only once the cumulative ACK passes it (strictly, as ns-2's Tahoe/NewReno with
//!   `bugFix_` = true compare `highest_ack_ > recover_`, and Linux holds a Reno sender's
//!   recovery while `snd_una == high_seq`). Without it the go-back-N copies that the receiver
//!   already holds draw duplicate ACKs that fire the next fast retransmit, and so on. Reno
//!   (RFC 5681) records it only on a timeout, so it may reduce again for a second loss of the
//!   same window. Deviation: RFC 6582 §4.1/§4.2's ACK and timestamp heuristics, which let
//!   some ambiguous duplicate ACKs through, are not implemented (ns-2's `bugfix_ack_` and
//!   `bugfix_ts_` are off by default too), so a loss of the first segment sent after `recover`
//!   is repaired by the timeout;
//! - window reduction during recovery by Proportional Rate Reduction (RFC 6937, Linux
//!   `tcp_cwnd_reduction`), cwnd = ssthresh on exit;
//! - RTO: RFC 6298 with exponential backoff; on expiry all un-SACKed outstanding segments are
//!   marked lost and cwnd = 1 (Linux `tcp_enter_loss`); ssthresh is reduced only on the first
//!   expiry of a backoff series;
//! - zero-window persist timer and probes (RFC 9293 §3.8.6.1, Linux `tcp_probe_timer`);
//! - congestion-window restart after idle (RFC 5681 §4.1 as Linux `tcp_cwnd_restart`, called
//!   from `tcp_slow_start_after_idle_check`: when new data is sent with nothing outstanding and the
//!   last transmission is more than one RTO ago, cwnd is halved once per RTO of idle time, not
//!   below the restart window min(IW, cwnd); skipped for algorithms that set cwnd themselves
//!   (BBR), as Linux skips `ca_ops->cong_control`);
//! - delivery-rate samples for model-based control (Linux net/ipv4/tcp_rate.c);
//! - RACK (RFC 8985 §6.2, Linux net/ipv4/tcp_recovery.c `tcp_rack_detect_loss`): with SACK, a
//!   segment is lost when a segment sent after it (in send order, see `rack_advance`) was
//!   delivered and it is older than
//!   RACK.rtt + reo_wnd; reo_wnd = min_rtt/4 (capped at SRTT), 0 in recovery or once DupThresh
//!   segments are SACKed while no reordering has been seen (`tcp_rack_reo_wnd`); a reordering
//!   timer re-checks when the window has not passed yet (`tcp_rack_reo_timeout`, + 2 ms as Linux's
//!   `TCP_TIMEOUT_MIN` at HZ = 1000). RACK replaces the DupThresh rule as in Linux
//!   (`tcp_identify_packet_loss`), so lost retransmissions are detected without an RTO. On an RTO,
//!   only segments older than RACK.rtt are marked lost (`tcp_timeout_mark_lost`) and cwnd =
//!   pipe + 1 (`tcp_enter_loss`);
//! - Tail loss probe (RFC 8985 §7, Linux `tcp_schedule_loss_probe` / `tcp_send_loss_probe` /
//!   `tcp_process_tlp_ack`): in the Open state with SACK, PTO = 2·SRTT (+ min_rto with one
//!   segment outstanding, else + 2 ms; 1 s before an RTT sample), not beyond the RTO; the probe is
//!   one new segment (cwnd ignored) or else the last segment again; one probe per episode; an ACK
//!   beyond the probe's `snd_nxt` after a retransmitted probe means a loss was repaired: cwnd =
//!   ssthresh (`tcp_init_cwnd_reduction` + `tcp_end_cwnd_reduction`);
//! - undo of spurious reductions (Linux `tcp_try_undo_recovery`, `tcp_try_undo_loss`,
//!   `tcp_undo_cwnd_reduction`, `tcp_packet_delayed`): the Eifel timestamp test (RFC 3522): an
//!   ACK that advances snd_una echoing a timestamp older than the episode's first retransmission
//!   shows an original arrived, so cwnd = `undo_cwnd` (max(cwnd, prior cwnd) but for BBR) and
//!   ssthresh = max(ssthresh, prior ssthresh); after an RTO the lost marks are cleared too;
//! - F-RTO (RFC 5682 §3.1, SACK-enhanced as Linux `tcp_process_loss`, sysctl `tcp_frto` = 2):
//!   after an RTO that did not continue a recovery, the first ACK that advances snd_una sends new
//!   data instead of retransmissions; if the next ACK delivers never-retransmitted data below the
//!   RTO's `snd_nxt` the RTO was spurious and is undone, a duplicate ACK / SACK means it was real;
//! - DSACK-based undo (RFC 2883 §4, RFC 3708 §3; Linux `tcp_check_dsack`, `tcp_sacktag_one`,
//!   `tcp_try_undo_dsack`, `undo_retrans`): each retransmission of the episode counts one; a DSACK
//!   (first SACK block below the cumulative ACK or inside the second block) for data above the
//!   undo marker takes its segments off; once none is left, every retransmission was a
//!   duplicate: in Open/Disorder (where the DSACK usually arrives, after recovery ended) or during
//!   recovery the reduction is undone as above, and `tcp_may_undo` also accepts it at the end of
//!   recovery or after an RTO. Also peer timestamps are echoed (TSecr) so the receiver can
//!   measure the RTT for its auto-tuning.
//!
//! Each of RACK, TLP, F-RTO, undo and DSACK undo is a switch in [`SenderConfig`] (scenario `[flows.tcp]`), on
//! by default as in Linux (`tcp_recovery` = 1, `tcp_early_retrans` = 3, `tcp_frto` = 2; undo has
//! no switch in Linux). They apply to the Linux-like recovery (NewReno, or any algorithm with
//! SACK); the textbook Tahoe, and Reno without SACK, keep their RFC behaviour.
//!
//! ns-3's TCP semantics, off by default, for comparing with ns-3 studies (docs/handover-model.md
//! §4.2; ns-3-dev `src/internet/model/`): `reno_ssthresh_from_flight` (tahoe/reno/newreno set
//! ssthresh = max(pipe / 2, 2) as `TcpNewReno::GetSsThresh(tcb, BytesInFlight())`),
//! `reno_increase_per_ack` (they grow once per ACK, as `TcpNewReno::SlowStart` /
//! `CongestionAvoidance`), `cwnd_validation = false` (every algorithm grows cwnd while not
//! cwnd-limited, as `TcpNewReno`, and `TcpCubic` before ns-3.42).
//!
//! Deviations: DSACKs do not grow RACK's reo_wnd (Linux `tcp_rack_update_reo_wnd`) and are not
//! checked for being dubious beyond lying above `snd_nxt` (`tcp_dsack_seen`); a DSACK for data
//! acknowledged by the same ACK counts whether or not that segment was retransmitted (Linux
//! checks `TCPCB_RETRANS` there); no partial undo in recovery (`tcp_try_undo_partial`); the reordering and TLP timers run beside the
//! RTO timer (Linux multiplexes one timer; the RTO is re-armed from the probe as Linux does); no
//! TSO/GSO except BBR's send quantum (`tso`: other senders send every segment separately); no CWR state (the TLP response sets cwnd at once, as
//! Linux ends that reduction at once).
use super::bsd_timer::{BsdTimer, TimerProfile};
use super::cc::{CaState, CongestionControl, CwndEvent, RateSample, RecoveryStyle, Tcb};
use super::rtt::{RtoStyle, RttEstimator};
use crate::core::time::{tx_time, Time, NEVER, NS_PER_MS, NS_PER_S};
use crate::packet::{Packet, PacketKind, HEADER_BYTES};
use std::collections::VecDeque;

const DUP_THRESH: u32 = 3;

/// Sender options (the `[flows.tcp]` table of a scenario).
#[derive(Clone, Debug)]
pub struct SenderConfig {
    pub mss: u32,
    pub initial_cwnd: u32,
    pub sack: bool,
    pub rto_style: RtoStyle,
    pub min_rto: Time,
    pub initial_rto: Time,
    pub slow_start_after_idle: bool,
    /// RACK time-based loss detection (RFC 8985; Linux `net.ipv4.tcp_recovery` = 1). Needs SACK.
    pub rack: bool,
    /// Tail loss probe (RFC 8985 §7; Linux `net.ipv4.tcp_early_retrans` = 3). Needs SACK.
    pub tlp: bool,
    /// F-RTO spurious-RTO detection (RFC 5682; Linux `net.ipv4.tcp_frto` = 2).
    pub frto: bool,
    /// Undo of spurious window reductions (Eifel timestamps, RFC 3522; Linux `tcp_try_undo_*`).
    pub undo: bool,
    /// TSO/GSO-like send quantum: a paced sender releases `Tcb::send_quantum` segments at once
    /// (Linux: one GSO skb of `tcp_tso_autosize` / `bbr_tso_segs_goal` segments, which `fq`
    /// paces as a unit); only BBR paces here, so only BBR is affected.
    pub tso: bool,
    /// DSACK-based undo (RFC 3708 §3 / Linux `tcp_try_undo_dsack`): undo once every
    /// retransmission of the episode was reported duplicate by a DSACK (RFC 2883). Needs SACK
    /// and `undo`.
    pub dsack: bool,
    /// tahoe/reno/newreno halve the pipe instead of cwnd on a loss (ns-3 `TcpNewReno::GetSsThresh`;
    /// `[flows.tcp] reno_ssthresh = "flight"`, a deviation from Linux).
    pub reno_ssthresh_from_flight: bool,
    /// tahoe/reno/newreno grow once per ACK, not per segment ACKed (ns-3 `TcpNewReno`;
    /// `[flows.tcp] reno_increase = "per-ack"`, a deviation from Linux).
    pub reno_increase_per_ack: bool,
    /// Grow cwnd only while cwnd-limited (Linux); false = on every ACK (ns-3 `TcpNewReno`,
    /// `TcpCubic` before ns-3.42; `[flows.tcp] cwnd_validation = false`).
    pub cwnd_validation: bool,
    /// P3's Explicit Handoff Notification: freeze on an EHN message (see [`TcpSender::on_ehn`]).
    pub ehn: bool,
    /// EHN: longest freeze before the sender gives up waiting and resumes as plain TCP.
    pub ehn_max_freeze: Time,
    /// The retransmission timer: Linux's (`rto_style`, `min_rto`, `initial_rto`) or 4.4BSD's
    /// 500 ms-tick timer ([`BsdTimer`], which ignores those three).
    pub timer: TimerProfile,
}

impl Default for SenderConfig {
    fn default() -> Self {
        SenderConfig {
            mss: 1448,
            initial_cwnd: 10,
            sack: true,
            rto_style: RtoStyle::Linux,
            min_rto: 200 * NS_PER_MS,
            initial_rto: NS_PER_S,
            slow_start_after_idle: true,
            rack: true,
            tlp: true,
            frto: true,
            undo: true,
            dsack: true,
            tso: true,
            reno_ssthresh_from_flight: false,
            reno_increase_per_ack: false,
            cwnd_validation: true,
            ehn: false,
            ehn_max_freeze: 10 * NS_PER_S,
            timer: TimerProfile::Linux,
        }
    }
}

/// EHN (P3 §3) counters.
#[derive(Clone, Debug, Default)]
pub struct EhnStats {
    /// EHN messages that froze the sender.
    pub freezes: u64,
    /// Freezes ended by an ACK that reopened the window.
    pub resumes: u64,
    /// Freezes ended by the watchdog (`ehn_max_freeze`) instead.
    pub watchdog: u64,
    /// EHN messages ignored: late (their handoff already ended) or repeated.
    pub ignored: u64,
    /// Window probes sent while frozen.
    pub probes: u64,
    /// Segments outstanding at a resume, sent again from the acknowledged point.
    pub go_back_segments: u64,
    /// Time spent frozen, ns.
    pub frozen_ns: u64,
}

/// The sender while frozen by an EHN: nothing is sent but window probes, the retransmission
/// timer is stopped, and the congestion state is left as it was.
#[derive(Clone, Copy, Debug)]
struct Frozen {
    id: u32,
    since: Time,
    probe_at: Time,
    backoff: u32,
}

/// Linux `TCP_RTO_MIN` (the floor of the zero-window probe interval) and `TCP_RTO_MAX` (its cap).
const PROBE_MIN: Time = 200 * NS_PER_MS;
const PROBE_MAX: Time = 120 * NS_PER_S;

/// Counters reported in the summary.
#[derive(Clone, Debug, Default)]
pub struct SenderStats {
    /// Data segments sent, originals and retransmissions.
    pub segments_sent: u64,
    pub segments_retransmitted: u64,
    pub bytes_sent: u64,
    pub timeouts: u64,
    pub fast_retransmits: u64,
    pub window_probes: u64,
    /// Bytes cumulatively acknowledged.
    pub bytes_acked: u64,
    /// Tail loss probes sent.
    pub tlp_probes: u64,
    /// Segments RACK marked lost.
    pub rack_lost: u64,
    /// Window reductions undone (recovery, RTO or F-RTO).
    pub undos: u64,
    /// RTOs found spurious by F-RTO.
    pub spurious_rtos: u64,
    /// ACKs carrying a DSACK block (Linux `TCPDSACKRecv` + `TCPDSACKOfoRecv`).
    pub dsacks_received: u64,
    /// Window reductions undone because DSACKs showed every retransmission spurious
    /// (Linux `TCPDSACKUndo`; also counted in `undos`).
    pub dsack_undos: u64,
}

#[derive(Clone, Debug)]
struct Segment {
    seq: u64,
    len: u32,
    /// Last transmission time.
    sent: Time,
    /// Send order of the last transmission (the sender's running transmission count).
    tx: u64,
    /// Ever retransmitted (Karn: no RTT samples from it).
    ever_retrans: bool,
    sacked: bool,
    lost: bool,
    /// A retransmission of this (lost) segment is in flight.
    retrans: bool,
    // tcp_rate.c snapshot at (re)transmission
    delivered: u64,
    delivered_time: Time,
    first_tx_time: Time,
    app_limited: bool,
}

/// What a poll that sent nothing did to the sender's state, to do it again without polling
/// ([`TcpSender::repeat_idle_poll`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum IdlePoll {
    /// Nothing (in persist, or frozen by a handoff).
    Unchanged,
    /// Set "the last attempt was blocked by cwnd" to this.
    Blocked(bool),
}

pub struct TcpSender {
    pub cfg: SenderConfig,
    pub tcb: Tcb,
    cc: Box<dyn CongestionControl>,
    pub rtt: RttEstimator,
    /// The 4.4BSD timer when `cfg.timer` is `bsd` (the RTO; `rtt` still measures for reports
    /// and the congestion controllers).
    bsd: Option<BsdTimer>,
    pub stats: SenderStats,
    pub ehn_stats: EhnStats,
    frozen: Option<Frozen>,
    /// Highest handoff id whose end this sender has seen (a resume ACK), or whose EHN froze it:
    /// an EHN with an id not above it is late or repeated and is ignored.
    last_handoff_id: u32,
    flow: u32,
    subflow: u16,

    snd_una: u64,
    snd_nxt: u64,
    /// Bytes the application has handed over so far (`u64::MAX` = unlimited).
    app_limit: u64,
    /// The peer's advertised window (bytes) from the latest ACK.
    peer_rwnd: u64,

    board: VecDeque<Segment>,
    /// Ends of pushed segments not yet sent (MPTCP mapping boundaries).
    seg_bounds: VecDeque<u64>,
    sacked_out: u32,
    lost_out: u32,
    retrans_out: u32,
    /// Non-SACK: duplicate ACKs counted as "SACKed" segments (Linux reno sack).
    dupacks: u32,
    /// The three highest SACKed sequence numbers (for the DupThresh loss rule).
    top_sacked: [u64; 3],
    /// Scoreboard index below which every un-SACKed segment is already marked lost.
    lost_scan_from: u64,
    /// Previous ACK's SACK blocks, to skip re-reported ranges.
    sack_cache: [(u64, u64); 3],
    recovery_point: u64,
    /// RFC 6582 `recover` (non-SACK): `snd_nxt` when the last fast retransmit (Tahoe, NewReno),
    /// timeout or EHN go-back started; no new fast retransmit until the cumulative ACK passes it.
    recover: Option<u64>,
    // PRR (RFC 6937)
    prr_delivered: u32,
    prr_out: u32,
    recover_fs: u32,

    backoff: u32,
    rto_deadline: Time,
    persist_deadline: Time,
    persist_backoff: u32,
    next_send_time: Time,
    last_send: Time,
    /// The previous send attempt stopped because cwnd was full.
    blocked_by_cwnd: bool,
    pacing_blocked: bool,
    /// What the last poll did when it sent nothing and a repeat would do the same (see
    /// [`IdlePoll`]); `None` after a poll that sent, or whose outcome depends on the time.
    last_idle_poll: Option<IdlePoll>,
    model_based_cc: bool,

    // tcp_rate.c state
    delivered_time: Time,
    first_tx_time: Time,
    app_limited_until: u64,
    next_packet_id: u64,

    // RACK (RFC 8985 §6; Linux `tp->rack`)
    /// Send order ([`Segment::tx`]) of the most recently sent segment delivered so far (Linux
    /// keeps its send time `rack.mstamp` and end `rack.end_seq`; see `rack_advance`).
    rack_tx: u64,
    /// Transmissions so far; the next one's [`Segment::tx`].
    tx_count: u64,
    /// RTT of that segment (`rack.rtt_us`).
    rack_rtt: Time,
    /// A delivery advanced RACK since the last loss check (`rack.advanced`).
    rack_advanced: bool,
    /// Reordering has been observed (`tp->reord_seen`).
    reord_seen: bool,
    /// Highest SACKed sequence end (`tcp_highest_sack_seq`).
    high_sacked: u64,
    /// Transmissions in send order, (send order, seq) (Linux `tsorted_sent_queue`); an entry is
    /// stale once its segment is delivered or sent again, and is dropped lazily from the front.
    tsorted: VecDeque<(u64, u64)>,
    reo_deadline: Time,
    // TLP (RFC 8985 §7)
    tlp_deadline: Time,
    /// The timer fired: the next `poll_transmit` sends the probe.
    tlp_pending: bool,
    /// `snd_nxt` when the outstanding probe was sent (`tp->tlp_high_seq`).
    tlp_high_seq: Option<u64>,
    /// The probe was a retransmission (`tp->tlp_retrans`).
    tlp_retrans: bool,
    // Undo (Linux `undo_marker`, `retrans_stamp`, `prior_cwnd`, `prior_ssthresh`)
    undo_marker: Option<u64>,
    /// Retransmissions of the episode not yet reported duplicate (Linux `undo_retrans`; −1:
    /// none made).
    undo_retrans: i64,
    /// The peer's last timestamp (RFC 7323 TS.Recent: an ACK's TSval), echoed in data as TSecr so
    /// the receiver can measure the RTT (Linux `tcp_rcv_rtt_measure_ts`).
    peer_ts: Time,
    /// The open pacing burst (TSO): its instant, segments sent, start of its pacing slot and the
    /// wire time of its segments so far.
    burst_at: Time,
    burst_n: u32,
    burst_base: Time,
    burst_gap: Time,
    retrans_stamp: Time,
    prior_cwnd: u32,
    prior_ssthresh: u32,
    // F-RTO (RFC 5682)
    frto: bool,
    /// F-RTO step 2b: this ACK sends new data, not retransmissions (Linux `REXMIT_NEW`).
    frto_send_new: bool,
}

/// What kind of transmission [`TcpSender::transmit`] makes.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Tx {
    New,
    /// Retransmission of a lost segment (counted in `retrans_out`).
    Retrans,
    /// TLP retransmission of the last segment (Linux `__tcp_retransmit_skb`: not in `retrans_out`).
    Probe,
}

/// Facts about one ACK that the recovery state machine needs.
struct AckInfo {
    advanced: bool,
    newly_sacked: u32,
    /// A duplicate ACK: no new data acknowledged or SACKed, no window change.
    dupack: bool,
    /// Never-retransmitted data below the recovery point was newly (S)ACKed (Linux
    /// `FLAG_ORIG_SACK_ACKED`).
    orig_acked: bool,
    ts_ecr: Time,
}

/// Linux `TCP_TIMEOUT_MIN` (2 jiffies at HZ = 1000), added to the RACK and TLP timers.
const TIMEOUT_MIN: Time = 2 * NS_PER_MS;

impl TcpSender {
    pub fn new(cfg: SenderConfig, cc: Box<dyn CongestionControl>, flow: u32, subflow: u16) -> Self {
        let mut tcb = Tcb::new(cfg.mss, cfg.initial_cwnd);
        tcb.tso = cfg.tso;
        let rtt = RttEstimator::new(cfg.rto_style, cfg.min_rto, cfg.initial_rto);
        let bsd = (cfg.timer == TimerProfile::Bsd).then(BsdTimer::new);
        TcpSender {
            cfg,
            tcb,
            cc,
            rtt,
            bsd,
            stats: SenderStats::default(),
            ehn_stats: EhnStats::default(),
            frozen: None,
            last_handoff_id: 0,
            flow,
            subflow,
            snd_una: 0,
            snd_nxt: 0,
            app_limit: 0,
            peer_rwnd: u64::MAX,
            // Grows with the window in flight (no reserve: 256 entries up front were 16 KiB per
            // flow, 16 MB of a run of 1000 flows whose windows stay near ten segments).
            board: VecDeque::new(),
            seg_bounds: VecDeque::new(),
            sacked_out: 0,
            lost_out: 0,
            retrans_out: 0,
            dupacks: 0,
            top_sacked: [0; 3],
            lost_scan_from: 0,
            sack_cache: [(0, 0); 3],
            recovery_point: 0,
            recover: None,
            prr_delivered: 0,
            prr_out: 0,
            recover_fs: 0,
            backoff: 0,
            rto_deadline: NEVER,
            persist_deadline: NEVER,
            persist_backoff: 0,
            next_send_time: 0,
            last_send: 0,
            blocked_by_cwnd: false,
            pacing_blocked: false,
            last_idle_poll: None,
            model_based_cc: false,
            delivered_time: 0,
            first_tx_time: 0,
            app_limited_until: 0,
            next_packet_id: 0,
            rack_tx: 0,
            tx_count: 0,
            rack_rtt: 0,
            rack_advanced: false,
            reord_seen: false,
            high_sacked: 0,
            tsorted: VecDeque::new(),
            reo_deadline: NEVER,
            tlp_deadline: NEVER,
            tlp_pending: false,
            tlp_high_seq: None,
            tlp_retrans: false,
            undo_marker: None,
            undo_retrans: -1,
            peer_ts: 0,
            burst_at: 0,
            burst_n: 0,
            burst_base: 0,
            burst_gap: 0,
            retrans_stamp: 0,
            prior_cwnd: 0,
            prior_ssthresh: 0,
            frto: false,
            frto_send_new: false,
        }
    }

    pub fn cc_name(&self) -> &'static str {
        self.cc.name()
    }
    pub fn snd_una(&self) -> u64 {
        self.snd_una
    }
    pub fn snd_nxt(&self) -> u64 {
        self.snd_nxt
    }
    pub fn ca_state(&self) -> CaState {
        self.tcb.ca_state
    }
    pub fn in_persist(&self) -> bool {
        self.persist_deadline != NEVER
    }
    /// Segments in flight (Linux `tcp_packets_in_flight`).
    pub fn pipe(&self) -> u32 {
        (self.board.len() as u32 + self.retrans_out).saturating_sub(self.sacked_out + self.lost_out)
    }
    pub fn packets_out(&self) -> u32 {
        self.board.len() as u32
    }
    /// The current RTO including backoff.
    pub fn rto(&self) -> Time {
        match &self.bsd {
            Some(b) => b.rto(),
            None => self.rtt.backed_off_rto(self.backoff),
        }
    }

    /// When a retransmission timer armed at `now` expires (on a slow-clock tick with the BSD timer).
    fn rto_deadline_from(&self, now: Time) -> Time {
        match &self.bsd {
            Some(b) => b.deadline(now),
            None => now + self.rto(),
        }
    }
    pub fn backoff(&self) -> u32 {
        self.backoff
    }

    /// Queues one segment of `len` bytes that must go out as a segment of its own (MPTCP pushes
    /// DSS-mapped segments this way). Returns the subflow sequence number it will carry.
    pub fn push_segment(&mut self, len: u32) -> u64 {
        let seq = self.app_limit;
        self.app_limit += len as u64;
        self.seg_bounds.push_back(self.app_limit);
        seq
    }
    /// Queues a segment of `len` bytes ahead of everything handed over but not yet sent, and
    /// returns its sequence number; the queued segments move up by `len`. MPTCP uses it for a
    /// data-level retransmission that must not wait behind new data already queued on the
    /// subflow. Every queued segment starts at a push boundary (segments never span two), so
    /// `snd_nxt` is one too.
    pub fn push_segment_front(&mut self, len: u32) -> u64 {
        let seq = self.snd_nxt;
        for b in self.seg_bounds.iter_mut() {
            *b += len as u64;
        }
        self.seg_bounds.push_front(seq + len as u64);
        self.app_limit += len as u64;
        seq
    }
    /// Bytes handed to this sender but not yet transmitted.
    pub fn queued_bytes(&self) -> u64 {
        self.app_limit.saturating_sub(self.snd_nxt)
    }
    /// Bytes transmitted and not yet acknowledged.
    pub fn unacked_bytes(&self) -> u64 {
        self.snd_nxt - self.snd_una
    }
    /// Subflow sequence ranges `[seq, seq+len)` sent and not yet cumulatively acknowledged.
    pub fn outstanding(&self) -> impl Iterator<Item = (u64, u32)> + '_ {
        self.board.iter().map(|s| (s.seq, s.len))
    }

    /// Tells the sender that more data was waiting for it but its window was full (MPTCP: the
    /// scheduler could not place connection-level data here). Linux grows cwnd only when the
    /// sender is cwnd-limited (`tcp_is_cwnd_limited`); an MPTCP subflow's own queue is often
    /// empty because the scheduler only pushes into free window, so the connection says so.
    pub fn note_cwnd_limited(&mut self) {
        if self.pipe() + (self.queued_bytes().div_ceil(self.cfg.mss as u64) as u32) >= self.tcb.cwnd {
            self.blocked_by_cwnd = true;
        }
    }

    /// Raises the amount of data the application has written (bytes since the start).
    pub fn set_app_limit(&mut self, total_bytes: u64) {
        debug_assert!(total_bytes >= self.app_limit.min(total_bytes));
        self.app_limit = total_bytes;
    }
    pub fn app_limit(&self) -> u64 {
        self.app_limit
    }
    /// All data written by the application has been acknowledged.
    pub fn all_acked(&self) -> bool {
        self.snd_una >= self.app_limit
    }

    /// The earliest time at which `on_timer` must be called (RTO, persist, pacing).
    pub fn next_timeout(&self) -> Time {
        if let Some(f) = &self.frozen {
            return f.probe_at.min(f.since + self.cfg.ehn_max_freeze);
        }
        let mut t = self
            .rto_deadline
            .min(self.persist_deadline)
            .min(self.reo_deadline)
            .min(self.tlp_deadline);
        if self.pacing_blocked {
            t = t.min(self.next_send_time);
        }
        t
    }

    // ---------------------------------------------------------------- sending

    /// The next packet to put on the wire at `now`, if cwnd, the receive window and pacing allow.
    /// Call repeatedly until it returns `None`.
    pub fn poll_transmit(&mut self, now: Time) -> Option<Packet> {
        let mut p = Packet::new(PacketKind::Data);
        self.poll_transmit_into(now, &mut p).then_some(p)
    }

    /// [`TcpSender::poll_transmit`] writing the packet into `p` (every field), in place: the
    /// engine passes the box the packet then travels in, so it is never copied whole
    /// (`endpoint::Outbox`). Returns whether it wrote one.
    pub fn poll_transmit_into(&mut self, now: Time, p: &mut Packet) -> bool {
        self.last_idle_poll = None;
        if self.in_persist() || self.frozen.is_some() {
            self.last_idle_poll = Some(IdlePoll::Unchanged);
            return false;
        }
        // Pacing and a pending loss probe make the outcome depend on the time or end with a
        // change: such a poll is never repeated from memory.
        let repeatable = self.tcb.pacing_rate_bps.is_none() && !self.tlp_pending;
        // Only a send attempt that pacing (and nothing else) held back needs a pacing timer.
        // Within an open TSO burst, the burst's segments leave in the same instant.
        let in_burst = self.burst_n > 0 && now == self.burst_at;
        self.pacing_blocked = self.tcb.pacing_rate_bps.is_some() && now < self.next_send_time && !in_burst;
        if self.pacing_blocked {
            return false;
        }
        if self.tlp_pending {
            self.tlp_pending = false;
            if self.send_loss_probe(now, p) {
                return true;
            }
        }
        let pipe = self.pipe();
        let cwnd_room = pipe < self.tcb.cwnd;
        // 1. Retransmit the first lost segment not yet retransmitted (RFC 6675 NextSeg rule 1),
        // unless F-RTO sends new data on this ACK.
        if self.lost_out > self.retrans_out && !self.frto_send_new {
            if !cwnd_room {
                self.blocked_by_cwnd = true;
                self.note_idle_poll(repeatable, IdlePoll::Blocked(true));
                return false;
            }
            if let Some(i) = self.board.iter().position(|s| s.lost && !s.retrans && !s.sacked) {
                self.transmit(now, i, Tx::Retrans, p);
                return true;
            }
        }
        // 2. New data within the receive window.
        if self.snd_nxt >= self.app_limit {
            self.blocked_by_cwnd = false;
            self.note_app_limited();
            // A repeat sets the same mark (note_app_limited reads only state a change resets).
            self.note_idle_poll(repeatable, IdlePoll::Blocked(false));
            return false;
        }
        let mut len = (self.app_limit - self.snd_nxt).min(self.cfg.mss as u64) as u32;
        if let Some(&bound) = self.seg_bounds.front() {
            // MPTCP: a segment never spans two DSS mappings.
            len = len.min((bound - self.snd_nxt) as u32);
        }
        let wnd_end = self.snd_una.saturating_add(self.peer_rwnd);
        if self.snd_nxt + len as u64 > wnd_end {
            self.blocked_by_cwnd = false;
            if self.board.is_empty() {
                self.enter_persist(now);
                // A repeat finds the sender in persist and returns at once.
                self.note_idle_poll(repeatable, IdlePoll::Unchanged);
            } else {
                self.note_idle_poll(repeatable, IdlePoll::Blocked(false));
            }
            return false;
        }
        if !cwnd_room {
            self.blocked_by_cwnd = true;
            self.note_idle_poll(repeatable, IdlePoll::Blocked(true));
            return false;
        }
        if self.board.is_empty() {
            self.restart_after_idle(now);
            if self.pipe() >= self.tcb.cwnd {
                return false;
            }
        }
        self.send_new(now, len, p);
        // Linux tcp_write_xmit: every transmission of new data (re)schedules the loss probe.
        self.schedule_loss_probe(now);
        true
    }

    fn note_idle_poll(&mut self, repeatable: bool, what: IdlePoll) {
        if repeatable {
            self.last_idle_poll = Some(what);
        }
    }

    /// What the last [`poll_transmit_into`](Self::poll_transmit_into) did if it sent nothing
    /// and another poll, with nothing about this sender changed since (no ACK, timer, new data,
    /// window change) and at any later time, would do exactly the same: send nothing and leave
    /// the state as [`repeat_idle_poll`](Self::repeat_idle_poll) leaves it. `None` otherwise
    /// (it sent, pacing or a loss probe was involved, or the idle restart lowered cwnd).
    pub fn last_idle_poll(&self) -> Option<IdlePoll> {
        self.last_idle_poll
    }

    /// Does what a poll described by [`last_idle_poll`](Self::last_idle_poll) would do again,
    /// without the poll: the caller guarantees nothing about this sender changed since. An
    /// MPTCP connection polls every subflow after every ACK (the per-packet cost must not
    /// grow with the number of subflows); most of them have nothing to send and nothing new.
    pub fn repeat_idle_poll(&mut self, what: IdlePoll) {
        if let IdlePoll::Blocked(b) = what {
            self.blocked_by_cwnd = b;
        }
    }

    /// Whether the last send attempt stopped because cwnd was full (Linux `tcp_is_cwnd_limited`'s
    /// input here); for the self-checks of [`repeat_idle_poll`](Self::repeat_idle_poll).
    pub fn blocked_by_cwnd(&self) -> bool {
        self.blocked_by_cwnd
    }

    /// The next new segment: `len` bytes at `snd_nxt`.
    fn new_segment_len(&self) -> Option<u32> {
        if self.snd_nxt >= self.app_limit {
            return None;
        }
        let mut len = (self.app_limit - self.snd_nxt).min(self.cfg.mss as u64) as u32;
        if let Some(&bound) = self.seg_bounds.front() {
            len = len.min((bound - self.snd_nxt) as u32);
        }
        (self.snd_nxt + len as u64 <= self.snd_una.saturating_add(self.peer_rwnd)).then_some(len)
    }

    fn send_new(&mut self, now: Time, len: u32, p: &mut Packet) {
        if let Some(b) = &mut self.bsd {
            b.on_send_new(now, self.snd_nxt);
        }
        self.board.push_back(Segment {
            seq: self.snd_nxt,
            len,
            sent: now,
            tx: 0,
            ever_retrans: false,
            sacked: false,
            lost: false,
            retrans: false,
            delivered: 0,
            delivered_time: 0,
            first_tx_time: 0,
            app_limited: false,
        });
        self.snd_nxt += len as u64;
        if self.seg_bounds.front() == Some(&self.snd_nxt) {
            self.seg_bounds.pop_front();
        }
        let i = self.board.len() - 1;
        self.transmit(now, i, Tx::New, p);
    }

    /// RFC 8985 §7.3 / Linux `tcp_send_loss_probe`: one new segment if the receive window allows
    /// (cwnd is ignored), else the highest outstanding segment again.
    fn send_loss_probe(&mut self, now: Time, p: &mut Packet) -> bool {
        if self.tlp_high_seq.is_some() || self.tcb.ca_state != CaState::Open || self.board.is_empty() {
            return false;
        }
        if let Some(len) = self.new_segment_len() {
            self.tlp_retrans = false;
            self.send_new(now, len, p);
        } else {
            let i = self.board.len() - 1;
            if self.board[i].sacked {
                return false;
            }
            self.tlp_retrans = true;
            self.transmit(now, i, Tx::Probe, p);
        }
        self.stats.tlp_probes += 1;
        self.tlp_high_seq = Some(self.snd_nxt);
        // tcp_rearm_rto after the probe: a full RTO from now.
        self.rto_deadline = self.rto_deadline_from(now);
        true
    }

    /// Linux `tcp_schedule_loss_probe`: arms the probe timeout in the Open state with SACK.
    fn schedule_loss_probe(&mut self, now: Time) {
        self.tlp_deadline = NEVER;
        if !self.cfg.tlp
            || !self.cfg.sack
            || self.board.is_empty()
            || self.tcb.ca_state != CaState::Open
            || self.tlp_high_seq.is_some()
            || self.frozen.is_some()
        {
            return;
        }
        let mut pto = if self.rtt.has_sample() {
            2 * self.rtt.srtt
                + if self.board.len() == 1 {
                    self.cfg.min_rto
                } else {
                    TIMEOUT_MIN
                }
        } else {
            self.cfg.initial_rto
        };
        if self.rto_deadline != NEVER && self.rto_deadline > now {
            pto = pto.min(self.rto_deadline - now);
        }
        self.tlp_deadline = now + pto;
    }

    /// Sends board segment `i`, written into `p` (every field).
    fn transmit(&mut self, now: Time, i: usize, kind: Tx, p: &mut Packet) {
        let is_retrans = kind != Tx::New;
        if self.pipe() == 0 {
            // tcp_rate_skb_sent: a new sampling interval starts when nothing is in flight.
            self.first_tx_time = now;
            self.delivered_time = now;
            self.cc.cwnd_event(&mut self.tcb, CwndEvent::TxStart, now);
        }
        let (delivered, delivered_time, first_tx_time, app_limited) = (
            self.tcb.delivered,
            self.delivered_time,
            self.first_tx_time,
            self.app_limited_until != 0,
        );
        self.tx_count += 1;
        let tx = self.tx_count;
        let s = &mut self.board[i];
        s.sent = now;
        s.tx = tx;
        s.delivered = delivered;
        s.delivered_time = delivered_time;
        s.first_tx_time = first_tx_time;
        s.app_limited = app_limited;
        if kind == Tx::Retrans {
            s.retrans = true;
        }
        if is_retrans {
            s.ever_retrans = true;
        }
        let (seq, len) = (s.seq, s.len);
        if kind == Tx::Retrans {
            self.retrans_out += 1;
            if self.retrans_stamp == 0 {
                // Linux tcp_retransmit_skb: the first retransmission of the episode (for undo).
                self.retrans_stamp = now;
            }
            // Linux tcp_retransmit_skb: counted for DSACK undo.
            self.undo_retrans = self.undo_retrans.max(0) + 1;
        }
        if is_retrans {
            self.stats.segments_retransmitted += 1;
            if let Some(b) = &mut self.bsd {
                b.on_retransmit();
            }
        }
        if self.cfg.rack && self.cfg.sack {
            self.tsorted.push_back((tx, seq));
        }
        if matches!(self.tcb.ca_state, CaState::Recovery) {
            self.prr_out += 1;
        }
        self.stats.segments_sent += 1;
        self.stats.bytes_sent += len as u64;
        self.last_send = now;
        if let Some(rate) = self.tcb.pacing_rate_bps {
            // Pacing by bursts of `send_quantum` segments (1 without TSO): a burst leaves at
            // once and the next waits for the whole burst's wire time (Linux fq paces a GSO skb
            // as a unit: `time_next_packet` += skb length / rate).
            let gap = tx_time((len + HEADER_BYTES) as u64, rate.max(1.0));
            if !(self.burst_n > 0 && now == self.burst_at) {
                self.burst_at = now;
                self.burst_n = 0;
                self.burst_base = now.max(self.next_send_time);
                self.burst_gap = 0;
            }
            self.burst_n += 1;
            self.burst_gap += gap;
            self.next_send_time = self.burst_base + self.burst_gap;
            if self.burst_n >= self.tcb.send_quantum.max(1) {
                self.burst_n = 0; // closed: the next segment waits for next_send_time
            }
        }
        if self.rto_deadline == NEVER {
            self.rto_deadline = self.rto_deadline_from(now);
        }
        *p = Packet::new(PacketKind::Data);
        p.id = self.next_id();
        p.flow = self.flow;
        p.subflow = self.subflow;
        p.seq = seq;
        p.len = len;
        p.ts_val = now;
        p.ts_ecr = self.peer_ts;
        p.retransmit = is_retrans;
    }

    fn next_id(&mut self) -> u64 {
        self.next_packet_id += 1;
        self.next_packet_id
    }

    /// tcp_rate_check_app_limited: remember that the application, not the network, limits us.
    fn note_app_limited(&mut self) {
        if self.pipe() < self.tcb.cwnd && self.lost_out <= self.retrans_out {
            self.app_limited_until = (self.tcb.delivered + self.pipe() as u64).max(1);
        }
    }

    /// RFC 5681 §4.1 / Linux `tcp_cwnd_restart`.
    fn restart_after_idle(&mut self, now: Time) {
        if !self.cfg.slow_start_after_idle || self.stats.segments_sent == 0 || self.model_based_cc {
            return;
        }
        let rto = self.rto();
        let idle = now.saturating_sub(self.last_send);
        if idle <= rto {
            return;
        }
        let restart = self.cfg.initial_cwnd.min(self.tcb.cwnd);
        // tcp_current_ssthresh
        self.tcb.ssthresh = self.tcb.ssthresh.max((self.tcb.cwnd >> 1) + (self.tcb.cwnd >> 2));
        let mut cwnd = self.tcb.cwnd;
        // Linux: `while ((delta -= rto) > 0 && cwnd > restart_cwnd) cwnd >>= 1;` — one halving
        // per whole RTO of idle time, the first as soon as the idle time exceeds one RTO.
        let mut delta = idle;
        while delta > rto && cwnd > restart {
            cwnd >>= 1;
            delta -= rto;
        }
        self.tcb.cwnd = cwnd.max(restart);
        self.tcb.cwnd_cnt = 0;
    }

    // ---------------------------------------------------------------- persist

    fn enter_persist(&mut self, now: Time) {
        if self.persist_deadline == NEVER {
            self.persist_deadline = now + self.rtt.backed_off_rto(self.persist_backoff);
            self.rto_deadline = NEVER;
            self.tlp_deadline = NEVER;
        }
    }

    fn window_probe(&mut self, now: Time) -> Packet {
        self.stats.window_probes += 1;
        self.persist_backoff = (self.persist_backoff + 1).min(20);
        self.persist_deadline = now + self.rtt.backed_off_rto(self.persist_backoff);
        let mut p = Packet::new(PacketKind::WindowProbe);
        p.id = self.next_id();
        p.flow = self.flow;
        p.subflow = self.subflow;
        p.seq = self.snd_una;
        p.ts_val = now;
        p
    }

    // ---------------------------------------------------------------- timers

    /// Handles whatever timer is due at `now`; may return a window probe to send.
    pub fn on_timer(&mut self, now: Time) -> Option<Packet> {
        if let Some(f) = self.frozen {
            if now >= f.since + self.cfg.ehn_max_freeze {
                // No resume came (the mobile host is gone, or every message was lost): carry on
                // as plain TCP, whose retransmission timer then recovers what is outstanding.
                self.ehn_stats.watchdog += 1;
                self.unfreeze(now);
                if !self.board.is_empty() {
                    self.rto_deadline = self.rto_deadline_from(now);
                }
                return None;
            }
            if now >= f.probe_at {
                let backoff = (f.backoff + 1).min(20);
                let probe_at = now + Self::probe_interval(self.rto(), backoff);
                self.frozen = Some(Frozen { backoff, probe_at, ..f });
                self.ehn_stats.probes += 1;
                self.stats.window_probes += 1;
                let mut p = Packet::new(PacketKind::WindowProbe);
                p.id = self.next_id();
                p.flow = self.flow;
                p.subflow = self.subflow;
                p.seq = self.snd_una;
                p.ts_val = now;
                return Some(p);
            }
            return None;
        }
        self.frto_send_new = false;
        if now >= self.persist_deadline {
            return Some(self.window_probe(now));
        }
        if now >= self.reo_deadline {
            self.on_reo_timeout(now);
        }
        if now >= self.tlp_deadline {
            self.tlp_deadline = NEVER;
            if self.tlp_high_seq.is_none() && self.tcb.ca_state == CaState::Open && !self.board.is_empty() {
                self.tlp_pending = true;
                return None;
            }
        }
        if now >= self.rto_deadline {
            self.on_rto(now);
        }
        None
    }

    /// Linux `tcp_rack_reo_timeout`: the reordering window of a segment passed; mark what is lost
    /// and start recovery if it is not under way.
    fn on_reo_timeout(&mut self, now: Time) {
        self.reo_deadline = NEVER;
        let lost_before = self.lost_out;
        self.rack_advanced = true;
        self.rack_mark_lost(now);
        if self.lost_out > lost_before && matches!(self.tcb.ca_state, CaState::Open | CaState::Disorder) {
            self.enter_recovery(now, RecoveryStyle::NewReno);
        }
    }

    fn on_rto(&mut self, now: Time) {
        self.rto_deadline = NEVER;
        if self.board.is_empty() {
            return;
        }
        self.stats.timeouts += 1;
        if let Some(b) = &mut self.bsd {
            b.on_timeout();
        }
        self.cc.cwnd_event(&mut self.tcb, CwndEvent::Loss, now);
        // Linux tcp_enter_loss: ssthresh is reduced unless this continues a loss episode
        // (repeated expiry, or an RTO during fast recovery that already reduced it).
        let reduce = match self.tcb.ca_state {
            CaState::Open | CaState::Disorder => true,
            CaState::Loss => self.backoff == 0,
            CaState::Recovery => false,
        };
        let new_recovery = matches!(self.tcb.ca_state, CaState::Open | CaState::Disorder);
        if reduce {
            self.init_undo();
        }
        self.cc.set_state(&mut self.tcb, CaState::Loss, now);
        if reduce {
            self.tcb.ssthresh = self.loss_ssthresh(now);
        }
        self.tcb.ca_state = CaState::Loss;
        self.recovery_point = self.snd_nxt;
        // RFC 6582 §3.2 step 6 / §4: after a timeout, duplicate ACKs for data sent before it
        // (the go-back-N copies the receiver already holds) must not fire a fast retransmit.
        self.recover = Some(self.snd_nxt);
        if self.cfg.rack && self.cfg.sack {
            self.timeout_mark_lost(now);
        } else {
            self.mark_all_lost();
        }
        // Linux tcp_enter_loss: cwnd = packets in flight + 1.
        self.tcb.cwnd = self.pipe() + 1;
        self.tcb.cwnd_cnt = 0;
        self.tlp_high_seq = None;
        self.tlp_deadline = NEVER;
        self.reo_deadline = NEVER;
        // F-RTO step 1 (RFC 5682 §3.1): unless this continues a recovery, except repeated RTOs.
        self.frto = self.cfg.frto && self.linux_recovery() && (new_recovery || self.backoff > 0);
        self.backoff = (self.backoff + 1).min(20);
        self.next_send_time = now;
        self.burst_n = 0;
        // The retransmission that poll_transmit sends now re-arms the timer with the backed-off RTO.
    }

    /// Linux tcp_enter_loss / Tahoe go-back-N: every un-SACKed outstanding segment is lost
    /// and its earlier retransmission no longer counts as in flight.
    fn mark_all_lost(&mut self) {
        for s in self.board.iter_mut() {
            if !s.sacked {
                if !s.lost {
                    s.lost = true;
                    self.lost_out += 1;
                }
                s.retrans = false;
            }
        }
        self.retrans_out = 0;
        self.lost_scan_from = self.snd_nxt;
        if !self.cfg.sack {
            // Duplicate-ACK "SACKs" no longer mean anything.
            self.sacked_out = 0;
            self.dupacks = 0;
        }
    }

    /// Linux `tcp_timeout_mark_lost` with RACK: the head and every segment older than RACK.rtt are
    /// lost; more recent ones may still be in flight.
    fn timeout_mark_lost(&mut self, now: Time) {
        let rack_rtt = self.rack_rtt;
        for (k, s) in self.board.iter_mut().enumerate() {
            if s.sacked {
                continue;
            }
            if k > 0 && now.saturating_sub(s.sent) < rack_rtt {
                continue;
            }
            if !s.lost {
                s.lost = true;
                self.lost_out += 1;
            }
            if s.retrans {
                s.retrans = false;
                self.retrans_out -= 1;
            }
        }
        self.lost_scan_from = self.snd_nxt;
    }

    /// The sender follows Linux's recovery (NewReno-style, or any algorithm with SACK) rather
    /// than textbook Tahoe or Reno; RACK, TLP, F-RTO and undo apply only then.
    fn linux_recovery(&self) -> bool {
        match self.cc.recovery_style() {
            RecoveryStyle::Tahoe => false,
            RecoveryStyle::Reno => self.cfg.sack,
            RecoveryStyle::NewReno => true,
        }
    }

    // ---------------------------------------------------------------- RACK (RFC 8985)

    /// Linux `tcp_rack_advance`: a delivered segment sent at `sent`, `tx`-th transmission.
    ///
    /// Which transmission is "more recent" is decided by send order. Linux compares send times
    /// and breaks ties by end sequence (`tcp_skb_sent_after`): its clock has µs resolution and is
    /// read anew for each event, so a tie practically only happens inside one burst, which goes
    /// out in sequence order (retransmissions first). Here events often share a nanosecond (an ACK arrival and the reordering timer, say):
    /// new data sent on the ACK and then a retransmission sent when the timer fires at the same
    /// instant would tie, and the end-sequence rule would rank the retransmission (lower
    /// sequence) as sent *first*, so the ACK of the new data marks the retransmission lost while
    /// it is still in flight behind it: a spurious retransmission. The send order is what Linux's
    /// timestamps express.
    fn rack_advance(&mut self, now: Time, sent: Time, tx: u64, ever_retrans: bool) {
        let rtt = now.saturating_sub(sent);
        if ever_retrans && self.rtt.has_sample() && rtt < self.rtt.min_rtt {
            // Ambiguous: the original may have been delivered, not this retransmission.
            return;
        }
        self.rack_advanced = true;
        self.rack_rtt = rtt;
        self.rack_tx = self.rack_tx.max(tx);
    }

    /// Linux `tcp_rack_reo_wnd`.
    fn rack_reo_wnd(&self) -> Time {
        if !self.reord_seen
            && (matches!(self.tcb.ca_state, CaState::Recovery | CaState::Loss) || self.sacked_out >= DUP_THRESH)
        {
            return 0;
        }
        if !self.rtt.has_sample() {
            return 0;
        }
        (self.rtt.min_rtt / 4).min(self.rtt.srtt)
    }

    /// Linux `tcp_rack_mark_lost` / `tcp_rack_detect_loss` (RFC 8985 §6.2 step 5): walks the
    /// transmissions in send order up to the most recently sent delivered one.
    /// The scoreboard index of the first segment starting at or after `seq` (a `partition_point`
    /// by `seq`). RACK looks up every transmission it walks, once per ACK; the segments are
    /// contiguous and mostly one MSS long, so the index is first guessed from the front segment's
    /// length and checked, which spares the binary search in nearly every case.
    fn board_index(&self, seq: u64) -> usize {
        let Some(front) = self.board.front() else { return 0 };
        if seq <= front.seq {
            return 0;
        }
        let guess = ((seq - front.seq) / front.len.max(1) as u64) as usize;
        if guess < self.board.len() && self.board[guess].seq == seq {
            return guess;
        }
        self.board.partition_point(|s| s.seq < seq)
    }

    fn rack_mark_lost(&mut self, now: Time) {
        if !self.rack_advanced {
            return;
        }
        self.rack_advanced = false;
        let reo_wnd = self.rack_reo_wnd();
        let mut wait: Time = 0;
        let mut k = 0;
        while k < self.tsorted.len() {
            let (tx, seq) = self.tsorted[k];
            let i = self.board_index(seq);
            let current = i < self.board.len() && {
                let s = &self.board[i];
                s.seq == seq && s.tx == tx && !s.sacked
            };
            if !current {
                // Delivered or sent again since: drop the entry (lazily, from the front only).
                if k == 0 {
                    self.tsorted.pop_front();
                } else {
                    k += 1;
                }
                continue;
            }
            if self.board[i].lost && !self.board[i].retrans {
                // Already marked lost, waiting for its retransmission. Kept: an undo may clear
                // the mark, and RACK must see the segment again then.
                k += 1;
                continue;
            }
            if self.rack_tx <= tx {
                break; // sent after the most recently delivered segment
            }
            let sent = self.board[i].sent;
            let deadline = sent + self.rack_rtt + reo_wnd;
            if deadline <= now {
                // Linux tcp_mark_skb_lost.
                let s = &mut self.board[i];
                if !s.lost {
                    s.lost = true;
                    self.lost_out += 1;
                }
                if s.retrans {
                    // A lost retransmission (RFC 8985 §6.2): it is sent again.
                    s.retrans = false;
                    self.retrans_out -= 1;
                }
                self.stats.rack_lost += 1;
                k += 1;
            } else {
                wait = wait.max(deadline - now);
                k += 1;
            }
        }
        self.reo_deadline = if wait > 0 { now + wait + TIMEOUT_MIN } else { NEVER };
    }

    // ---------------------------------------------------------------- undo

    /// Linux `tcp_init_undo` with the prior window (`tcp_init_cwnd_reduction`, `tcp_enter_loss`).
    fn init_undo(&mut self) {
        if !self.cfg.undo || !self.linux_recovery() {
            self.undo_marker = None;
            return;
        }
        self.undo_marker = Some(self.snd_una);
        // `tp->undo_retrans = tp->retrans_out ? : -1`
        self.undo_retrans = if self.retrans_out > 0 {
            self.retrans_out as i64
        } else {
            -1
        };
        if self.retrans_out == 0 {
            self.retrans_stamp = 0;
        }
        self.prior_cwnd = self.tcb.cwnd;
        // tcp_current_ssthresh
        self.prior_ssthresh = self.tcb.ssthresh.max((self.tcb.cwnd >> 1) + (self.tcb.cwnd >> 2));
    }

    /// Linux `tcp_may_undo` with `tcp_packet_delayed`: nothing was retransmitted, or the ACK
    /// echoes a timestamp from before the first retransmission (RFC 3522 Eifel detection), or
    /// (with DSACK) every retransmission was reported duplicate (`!tp->undo_retrans`).
    fn may_undo(&self, ts_ecr: Time) -> bool {
        self.undo_marker.is_some()
            && ((self.cfg.dsack && self.undo_retrans == 0)
                || self.retrans_stamp == 0
                || (ts_ecr != 0 && ts_ecr < self.retrans_stamp))
    }

    /// Linux `tcp_check_dsack` / `tcp_sacktag_one` (RFC 2883 §4, RFC 3708 §3): the first SACK
    /// block is a DSACK if it lies below the cumulative ACK or inside the second block; each
    /// duplicate segment above the undo marker is one retransmission fewer left unexplained.
    fn check_dsack(&mut self, ack: &Packet) {
        if !(self.cfg.dsack && self.cfg.sack) || ack.n_sack == 0 {
            return;
        }
        let (s0, e0) = ack.sack[0];
        let inside_second = ack.n_sack > 1 && ack.sack[1].0 <= s0 && e0 <= ack.sack[1].1;
        if e0 <= s0 || !(s0 < ack.ack || inside_second) || e0 > self.snd_nxt {
            return; // not a DSACK, or a dubious one (`tcp_dsack_seen`)
        }
        self.stats.dsacks_received += 1;
        let dup_segs = (e0 - s0).div_ceil(self.cfg.mss.max(1) as u64) as i64;
        if self.undo_marker.is_some_and(|m| e0 > m) && self.undo_retrans > 0 {
            self.undo_retrans = (self.undo_retrans - dup_segs).max(0);
        }
    }

    /// Linux `tcp_try_undo_dsack`: every retransmission of the episode was a duplicate, so the
    /// reduction was spurious: restore cwnd and ssthresh.
    fn try_undo_dsack(&mut self, now: Time) -> bool {
        if !self.cfg.dsack || self.undo_marker.is_none() || self.undo_retrans != 0 {
            return false;
        }
        self.undo_cwnd_reduction(now, false);
        self.stats.dsack_undos += 1;
        true
    }

    /// Linux `tcp_undo_cwnd_reduction`.
    fn undo_cwnd_reduction(&mut self, now: Time, unmark_loss: bool) {
        if unmark_loss {
            for s in self.board.iter_mut() {
                s.lost = false;
            }
            self.lost_out = 0;
        }
        self.tcb.cwnd = self.cc.undo_cwnd(&self.tcb, self.prior_cwnd, now).max(1);
        self.tcb.ssthresh = self.tcb.ssthresh.max(self.prior_ssthresh);
        self.tcb.cwnd_cnt = 0;
        self.undo_marker = None;
        self.rack_advanced = true;
        self.stats.undos += 1;
    }

    /// Back to Open after an undo (Linux `tcp_set_ca_state(sk, TCP_CA_Open)`).
    fn open_after_undo(&mut self, now: Time) {
        self.cc.set_state(&mut self.tcb, CaState::Open, now);
        self.tcb.ca_state = CaState::Open;
        self.lost_scan_from = self.snd_una;
        self.frto = false;
    }

    /// Linux `tcp_try_undo_loss`.
    fn try_undo_loss(&mut self, now: Time, frto_undo: bool, ts_ecr: Time) -> bool {
        let undo = (frto_undo && self.undo_marker.is_some()) || self.may_undo(ts_ecr);
        if !undo {
            return false;
        }
        self.undo_cwnd_reduction(now, true);
        if frto_undo {
            self.stats.spurious_rtos += 1;
        }
        self.backoff = 0;
        if frto_undo || self.cfg.sack {
            self.open_after_undo(now);
        }
        true
    }

    // ---------------------------------------------------------------- ACK processing

    // ---------------------------------------------------------------- EHN (P3)

    /// Linux `tcp_probe0_when`: the zero-window probe interval, `max(rto, TCP_RTO_MIN)` doubled per
    /// backoff, capped at `TCP_RTO_MAX`.
    fn probe_interval(rto: Time, backoff: u32) -> Time {
        rto.max(PROBE_MIN).saturating_mul(1 << backoff.min(20)).min(PROBE_MAX)
    }

    /// Whether an EHN froze the sender.
    pub fn frozen(&self) -> bool {
        self.frozen.is_some()
    }

    /// P3 §3: an Explicit Handoff Notification from the mobile host. The sender enters persist
    /// mode whatever is outstanding: the retransmission timer and the congestion state freeze,
    /// only window probes go out (Linux's probe schedule), until an ACK reopens the window.
    /// An EHN whose handoff already ended (a late one) or was already handled is ignored, so it
    /// cannot freeze a healthy path; a newer one while frozen just takes over.
    pub fn on_ehn(&mut self, now: Time, p: &Packet) {
        if !self.cfg.ehn {
            return;
        }
        if p.handoff_id <= self.last_handoff_id {
            self.ehn_stats.ignored += 1;
            return;
        }
        self.last_handoff_id = p.handoff_id;
        if let Some(f) = &mut self.frozen {
            f.id = p.handoff_id; // back-to-back handoffs: one freeze
            return;
        }
        self.ehn_stats.freezes += 1;
        self.frozen = Some(Frozen {
            id: p.handoff_id,
            since: now,
            probe_at: now + Self::probe_interval(self.rto(), 0),
            backoff: 0,
        });
        self.rto_deadline = NEVER;
        self.tlp_deadline = NEVER;
        self.tlp_pending = false;
        self.reo_deadline = NEVER;
        self.persist_deadline = NEVER;
        self.persist_backoff = 0;
        self.pacing_blocked = false;
    }

    fn unfreeze(&mut self, now: Time) {
        if let Some(f) = self.frozen.take() {
            self.ehn_stats.frozen_ns += now.saturating_sub(f.since);
        }
        // The pre-handoff window is kept: no restart after the idle time the freeze caused.
        self.last_send = now;
    }

    /// An ACK while frozen: the cumulative part only frees acknowledged data (no window growth, no
    /// RTT sample: the segments may be old); a reopened window resumes from the acknowledged
    /// point with the pre-handoff congestion window — what was outstanding is sent again first,
    /// without a congestion response (P3 §3: "the FH continues from that sequence").
    fn on_ack_frozen(&mut self, now: Time, ack: &Packet) {
        while let Some(s) = self.board.front() {
            if s.seq + s.len as u64 > ack.ack {
                break;
            }
            let s = self.board.pop_front().expect("front exists");
            self.sacked_out -= u32::from(s.sacked);
            self.lost_out -= u32::from(s.lost);
            self.retrans_out -= u32::from(s.retrans);
        }
        if ack.ack > self.snd_una {
            self.stats.bytes_acked += ack.ack - self.snd_una;
            self.snd_una = ack.ack;
        }
        self.peer_rwnd = ack.rwnd;
        if ack.rwnd == 0 {
            // Linux tcp_ack_probe: the next probe is timed from this ACK, same backoff.
            if let Some(f) = &mut self.frozen {
                f.probe_at = now + Self::probe_interval(self.rtt.rto(), f.backoff);
            }
            return;
        }
        self.ehn_stats.resumes += 1;
        // Everything still outstanding was lost in the handoff (or is on its way, forwarded):
        // send it again first, like after a timeout (Linux tcp_enter_loss marks the same) but
        // with no congestion response — cwnd, ssthresh and the controller keep their pre-handoff
        // state, and the Loss state only orders the retransmissions until snd_nxt is acked.
        // snd_nxt stays: the receiver may hold data beyond the hole and acknowledge up to it.
        self.ehn_stats.go_back_segments += self.board.iter().filter(|s| !s.sacked).count() as u64;
        if !self.board.is_empty() {
            self.mark_all_lost();
            self.tcb.ca_state = CaState::Loss;
            self.recovery_point = self.snd_nxt;
            // The resent copies of forwarded segments draw duplicate ACKs: not a new loss.
            self.recover = Some(self.snd_nxt);
        }
        // No congestion response to undo, no F-RTO: this is not an RTO.
        self.undo_marker = None;
        self.frto = false;
        self.tlp_high_seq = None;
        self.backoff = 0;
        self.next_send_time = now;
        self.burst_n = 0;
        self.unfreeze(now);
    }

    /// Processes an ACK (or the ACK of a window probe).
    pub fn on_ack(&mut self, now: Time, ack: &Packet) {
        self.peer_ts = self.peer_ts.max(ack.ts_val);
        if ack.ack > self.snd_nxt {
            return; // acknowledges data never sent: ignore (RFC 9293 §3.10.7.4)
        }
        if ack.handoff_id > self.last_handoff_id {
            // A resume ACK: its handoff ended (an EHN for it arriving later is late).
            self.last_handoff_id = ack.handoff_id;
        }
        if self.frozen.is_some() {
            self.on_ack_frozen(now, ack);
            return;
        }
        self.frto_send_new = false;
        let prior_in_flight = self.pipe();
        let prior_una = self.snd_una;
        let prior_fack = self.high_sacked;
        let rack_on = self.cfg.rack && self.cfg.sack;
        let mut orig_acked = false;
        let window_update = ack.rwnd != self.peer_rwnd;
        self.peer_rwnd = ack.rwnd;
        if self.peer_rwnd > 0 && self.in_persist() {
            self.persist_deadline = NEVER;
            self.persist_backoff = 0;
        }

        let mut rs = RateSample {
            prior_in_flight,
            ..Default::default()
        };
        let mut acc = RateAcc::default();
        let mut delivered_segs = 0u32;

        // Cumulative ACK.
        let mut acked_segs = 0u32;
        while let Some(s) = self.board.front() {
            if s.seq + s.len as u64 > ack.ack {
                break;
            }
            let s = self.board.pop_front().unwrap();
            if s.sacked {
                self.sacked_out -= 1;
            } else {
                delivered_segs += 1;
                Self::rate_on_delivered(&s, &mut acc);
                if rack_on {
                    self.rack_advance(now, s.sent, s.tx, s.ever_retrans);
                }
                if !s.ever_retrans {
                    // tcp_clean_rtx_queue: an original below the highest SACK means reordering.
                    if s.seq < prior_fack {
                        self.reord_seen = true;
                    }
                    if s.seq + s.len as u64 <= self.recovery_point {
                        orig_acked = true;
                    }
                }
            }
            if s.lost {
                self.lost_out -= 1;
            }
            if s.retrans {
                self.retrans_out -= 1;
            }
            acked_segs += 1;
        }
        if ack.ack > self.snd_una {
            self.stats.bytes_acked += ack.ack - self.snd_una;
            self.snd_una = ack.ack;
        }
        let advanced = self.snd_una > prior_una;

        // SACK blocks (a DSACK first: Linux tcp_sacktag_write_queue → tcp_check_dsack).
        self.check_dsack(ack);
        let mut newly_sacked = 0u32;
        if self.cfg.sack && ack.n_sack > 0 {
            let (n, orig) = self.process_sacks(now, ack, &mut acc, prior_fack);
            newly_sacked = n;
            orig_acked |= orig;
            delivered_segs += newly_sacked;
        }
        if self.cfg.sack {
            self.sack_cache = [(0, 0); 3];
            self.sack_cache[..ack.n_sack as usize].copy_from_slice(ack.sacks());
        }

        // Non-SACK duplicate ACK counting.
        let is_dupack = !advanced && ack.len == 0 && !self.board.is_empty() && !window_update;
        if !self.cfg.sack {
            if self.tcb.ca_state == CaState::Loss && self.snd_nxt <= self.recovery_point {
                // Linux tcp_process_loss (tcp_is_reno): in the Loss state a duplicate ACK counts
                // only for new data F-RTO sent beyond high_seq; otherwise the go-back-N
                // retransmissions are clocked by the cumulative ACK alone. Counting the
                // duplicates as "SACKed" here would shrink the pipe and release copies of
                // segments the receiver already holds.
                if advanced {
                    self.dupacks = 0;
                    self.sacked_out = 0;
                }
            } else if advanced {
                // Linux tcp_remove_reno_sacks: the cumulative ACK covers "SACKed" segments.
                let covered = acked_segs.saturating_sub(1);
                self.dupacks -= covered.min(self.dupacks);
                self.sacked_out = self.dupacks;
            } else if is_dupack
                && (matches!(self.tcb.ca_state, CaState::Recovery | CaState::Loss)
                    || self.recover.is_none_or(|r| self.snd_una > r))
            {
                // RFC 6582 §3.2 step 2: duplicate ACKs that do not cover more than `recover` may
                // be echoes of go-back-N copies; they neither count toward DupThresh nor inflate
                // the "SACKed" count.
                self.dupacks += 1;
                if self.dupacks < self.board.len() as u32 {
                    self.sacked_out = self.dupacks;
                    delivered_segs += 1;
                }
            }
        }

        // RTT sample (Karn: only from never-retransmitted segments).
        if let Some(n) = acc.newest {
            if !n.ever_retrans {
                let sample = now - n.sent;
                self.rtt.on_sample(sample);
                self.tcb.srtt = self.rtt.srtt;
                self.tcb.min_rtt = self.rtt.min_rtt;
                rs.rtt = sample;
            }
        }
        if advanced {
            if let Some(b) = &mut self.bsd {
                b.on_ack(now, ack.ack);
            }
            self.backoff = 0;
            // RFC 6298 §5.3: restart the timer when new data is acknowledged.
            self.rto_deadline = if self.board.is_empty() {
                NEVER
            } else {
                self.rto_deadline_from(now)
            };
        }
        if self.board.is_empty() {
            self.reo_deadline = NEVER;
            self.tlp_deadline = NEVER;
        }

        // TLP episode (Linux tcp_process_tlp_ack, before loss detection as in tcp_ack).
        let dupack = !advanced && newly_sacked == 0 && !window_update && ack.len == 0;
        if let Some(high) = self.tlp_high_seq {
            self.process_tlp_ack(now, ack.ack, high, advanced, dupack);
        }

        // Loss detection.
        let lost_before = self.lost_out;
        if rack_on {
            self.rack_mark_lost(now);
        } else if self.cfg.sack {
            self.mark_sack_losses();
        }
        let info = AckInfo {
            advanced,
            newly_sacked,
            dupack: is_dupack,
            orig_acked,
            ts_ecr: ack.ts_ecr,
        };
        self.update_state_on_ack(now, &info);
        if advanced {
            // Linux tcp_set_xmit_timer: an ACK of new data re-arms the probe (or the RTO).
            self.schedule_loss_probe(now);
        } else if self.tcb.ca_state != CaState::Open {
            self.tlp_deadline = NEVER;
        }
        rs.losses = self.lost_out.saturating_sub(lost_before);

        // Rate sample and congestion control.
        rs.acked_sacked = delivered_segs;
        self.tcb.delivered += delivered_segs as u64;
        if delivered_segs > 0 {
            self.delivered_time = now;
        }
        self.finish_rate_sample(now, &acc, &mut rs);
        if self.app_limited_until != 0 && self.tcb.delivered > self.app_limited_until {
            self.app_limited_until = 0;
        }
        self.tcb.in_flight = self.pipe();
        self.tcb.cwnd_limited = if !self.cfg.cwnd_validation {
            true
        } else if self.tcb.in_slow_start() {
            self.tcb.cwnd < 2 * prior_in_flight.max(1) || self.blocked_by_cwnd
        } else {
            self.blocked_by_cwnd
        };
        let rtt_for_cc = rs.rtt;
        self.cc.pkts_acked(&self.tcb, delivered_segs, rtt_for_cc, now);
        let handled = self.cc.cong_control(&mut self.tcb, &rs, now);
        self.model_based_cc = handled;
        if !handled && delivered_segs > 0 {
            match self.tcb.ca_state {
                // Linux tcp_may_raise_cwnd: only an ACK that advances snd_una raises cwnd
                // (SACK-only duplicate ACKs do not), by everything delivered (acked + sacked).
                CaState::Open | CaState::Disorder | CaState::Loss => {
                    if advanced {
                        // ns-3 semantics (`reno_increase_per_ack`): one increment per ACK.
                        let per_ack =
                            self.cfg.reno_increase_per_ack && matches!(self.cc.name(), "tahoe" | "reno" | "newreno");
                        self.cc
                            .cong_avoid(&mut self.tcb, if per_ack { 1 } else { delivered_segs }, now)
                    }
                }
                CaState::Recovery => self.prr_update(delivered_segs, newly_sacked),
            }
        }
        if self.tcb.cwnd == 0 {
            self.tcb.cwnd = 1;
        }
    }

    /// tcp_rate_skb_delivered: the sample is taken from the most recently sent delivered segment.
    fn rate_on_delivered(s: &Segment, acc: &mut RateAcc) {
        if acc.newest.is_none_or(|n| s.sent >= n.sent) {
            acc.newest = Some(NewestDelivered {
                sent: s.sent,
                ever_retrans: s.ever_retrans,
                prior_delivered: s.delivered,
                prior_time: s.delivered_time,
                send_interval: s.sent.saturating_sub(s.first_tx_time),
                app_limited: s.app_limited,
            });
        }
    }

    /// tcp_rate_gen: turn the newest delivered segment's snapshot into a rate sample.
    fn finish_rate_sample(&mut self, now: Time, acc: &RateAcc, rs: &mut RateSample) {
        let Some(n) = acc.newest else {
            rs.delivered = 0;
            rs.interval = 0;
            return;
        };
        // The next sampling interval starts at this segment's send time.
        self.first_tx_time = n.sent;
        rs.prior_delivered = n.prior_delivered;
        rs.is_app_limited = n.app_limited;
        rs.delivered = self.tcb.delivered - n.prior_delivered;
        rs.interval = n.send_interval.max(now.saturating_sub(n.prior_time));
        if self.rtt.has_sample() && rs.interval < self.rtt.min_rtt {
            // Linux discards samples shorter than min_rtt (ACK compression).
            rs.interval = 0;
        }
    }

    /// Marks newly SACKed segments; returns how many, and whether any of them was an original
    /// below the recovery point (`FLAG_ORIG_SACK_ACKED`).
    fn process_sacks(&mut self, now: Time, ack: &Packet, acc: &mut RateAcc, prior_fack: u64) -> (u32, bool) {
        let mut newly = 0;
        let mut orig = false;
        let rack_on = self.cfg.rack;
        let (blocks, n) = (ack.sack, ack.n_sack as usize);
        for &(mut start, end) in &blocks[..n] {
            if end <= self.snd_una || start >= end {
                continue;
            }
            // Skip what the previous ACK already reported (Linux recv_sack_cache idea).
            for &(cs, ce) in &self.sack_cache {
                if ce > cs && cs <= start && ce >= end {
                    start = end;
                } else if ce > cs && cs <= start && ce > start {
                    start = ce;
                }
            }
            if start >= end {
                continue;
            }
            let mut i = self.board.partition_point(|s| s.seq + s.len as u64 <= start);
            while i < self.board.len() {
                let (seq, len, sacked) = {
                    let s = &self.board[i];
                    (s.seq, s.len, s.sacked)
                };
                if seq >= end {
                    break;
                }
                if !sacked && seq >= start && seq + len as u64 <= end {
                    let s = self.board[i].clone();
                    {
                        let m = &mut self.board[i];
                        m.sacked = true;
                    }
                    self.sacked_out += 1;
                    if s.lost {
                        self.lost_out -= 1;
                        self.board[i].lost = false;
                    }
                    if s.retrans {
                        self.retrans_out -= 1;
                        self.board[i].retrans = false;
                    }
                    newly += 1;
                    Self::rate_on_delivered(&s, acc);
                    self.note_top_sacked(seq);
                    let s_end = seq + len as u64;
                    if rack_on {
                        self.rack_advance(now, s.sent, s.tx, s.ever_retrans);
                    }
                    if !s.ever_retrans {
                        if seq < prior_fack {
                            self.reord_seen = true;
                        }
                        if s_end <= self.recovery_point {
                            orig = true;
                        }
                    }
                    self.high_sacked = self.high_sacked.max(s_end);
                }
                i += 1;
            }
        }
        (newly, orig)
    }

    /// Linux `tcp_process_tlp_ack`: was the probe's episode a loss?
    fn process_tlp_ack(&mut self, now: Time, ack: u64, high: u64, advanced: bool, dupack: bool) {
        if ack < high {
            return;
        }
        if !self.tlp_retrans {
            self.tlp_high_seq = None; // a probe of new data was acknowledged
        } else if ack > high {
            // The probe repaired a loss: reduce as a CWR episode (tcp_init_cwnd_reduction, then
            // tcp_end_cwnd_reduction at once).
            self.tlp_high_seq = None;
            self.tcb.ssthresh = self.loss_ssthresh(now);
            if !self.cc_is_model_based() {
                self.tcb.cwnd = self.tcb.ssthresh.max(1);
            }
            self.tcb.cwnd_cnt = 0;
            self.cc.cwnd_event(&mut self.tcb, CwndEvent::CompleteCwr, now);
        } else if !advanced && dupack {
            // Original and probe both arrived: no loss.
            self.tlp_high_seq = None;
        }
    }

    fn note_top_sacked(&mut self, seq: u64) {
        // Keep the three highest SACKed sequence numbers, highest first.
        let t = &mut self.top_sacked;
        if seq > t[0] {
            *t = [seq, t[0], t[1]];
        } else if seq > t[1] && seq != t[0] {
            *t = [t[0], seq, t[1]];
        } else if seq > t[2] && seq != t[0] && seq != t[1] {
            t[2] = seq;
        }
    }

    /// RFC 6675 IsLost: an un-SACKed segment with at least DupThresh SACKed segments above it.
    fn mark_sack_losses(&mut self) {
        if self.sacked_out < DUP_THRESH {
            return;
        }
        let threshold = self.top_sacked[DUP_THRESH as usize - 1];
        if threshold <= self.snd_una {
            return;
        }
        let from = self.lost_scan_from.max(self.snd_una);
        if from >= threshold {
            return;
        }
        let mut i = self.board.partition_point(|s| s.seq < from);
        while i < self.board.len() && self.board[i].seq < threshold {
            let s = &mut self.board[i];
            if !s.sacked && !s.lost && !s.retrans {
                s.lost = true;
                self.lost_out += 1;
            }
            i += 1;
        }
        self.lost_scan_from = threshold;
    }

    fn update_state_on_ack(&mut self, now: Time, a: &AckInfo) {
        let advanced = a.advanced;
        let style = if self.cfg.sack && self.cc.recovery_style() != RecoveryStyle::Tahoe {
            RecoveryStyle::NewReno
        } else {
            self.cc.recovery_style()
        };
        match self.tcb.ca_state {
            CaState::Recovery => {
                let done = match style {
                    RecoveryStyle::Reno => advanced,
                    _ => self.snd_una >= self.recovery_point,
                };
                if done {
                    // Linux tcp_try_undo_recovery: the retransmissions were not needed.
                    if self.may_undo(a.ts_ecr) {
                        self.undo_cwnd_reduction(now, false);
                        self.open_after_undo(now);
                        self.dupacks = 0;
                        if !self.cfg.sack {
                            self.sacked_out = 0;
                        }
                    } else {
                        self.exit_recovery(now);
                    }
                } else if advanced && !self.cfg.sack {
                    // RFC 6582 §3.2 step 5: a partial ACK means the next segment is lost too.
                    self.mark_head_lost();
                } else if self.try_undo_dsack(now) {
                    // tcp_fastretrans_alert, Recovery: tcp_try_undo_dsack → tcp_try_to_open.
                    self.open_after_undo(now);
                    self.tcb.ca_state = if self.sacked_out > 0 || self.lost_out > 0 || self.retrans_out > 0 {
                        CaState::Disorder
                    } else {
                        CaState::Open
                    };
                    self.dupacks = 0;
                }
            }
            CaState::Loss => self.process_loss(now, a),
            CaState::Open | CaState::Disorder => {
                // tcp_fastretrans_alert: `if (icsk_ca_state <= TCP_CA_Disorder) tcp_try_undo_dsack`
                // (the DSACK of a spurious retransmission usually arrives after recovery ended).
                self.try_undo_dsack(now);
                // With SACK, RFC 6675's IsLost rule (mark_sack_losses) has already marked the
                // head lost once DupThresh segments above it are SACKed.
                let enter = if self.cfg.sack {
                    self.lost_out > 0
                } else {
                    // RFC 6582 §3.2 step 2: only if the cumulative ACK covers more than `recover`.
                    self.dupacks >= DUP_THRESH && self.recover.is_none_or(|r| self.snd_una > r)
                };
                if enter {
                    self.enter_recovery(now, style);
                } else if self.sacked_out > 0 || self.dupacks > 0 {
                    self.tcb.ca_state = CaState::Disorder;
                } else {
                    self.tcb.ca_state = CaState::Open;
                }
            }
        }
    }

    fn mark_head_lost(&mut self) {
        if let Some(s) = self.board.front_mut() {
            if !s.sacked && !s.lost {
                s.lost = true;
                s.retrans = false;
                self.lost_out += 1;
            } else if s.lost && s.retrans {
                // A partial ACK after the head was retransmitted: retransmit it again (NewReno).
            }
        }
    }

    /// Linux `tcp_process_loss`: the Loss state after an RTO, with F-RTO (RFC 5682 §3.1) and undo.
    fn process_loss(&mut self, now: Time, a: &AckInfo) {
        let recovered = self.snd_una >= self.recovery_point;
        if a.advanced && self.try_undo_loss(now, false, a.ts_ecr) {
            return;
        }
        if self.frto {
            // Step 3b: never-retransmitted data was delivered, so not everything was lost.
            if a.orig_acked && self.try_undo_loss(now, true, a.ts_ecr) {
                return;
            }
            if self.snd_nxt > self.recovery_point {
                if a.newly_sacked > 0 || a.dupack {
                    self.frto = false; // step 3a: the loss was real
                }
            } else if a.advanced && !recovered {
                // Step 2b: send new data and see what the next ACK says.
                self.recovery_point = self.snd_nxt;
                if self.new_segment_len().is_some() {
                    self.frto_send_new = true;
                    return;
                }
                self.frto = false;
            }
        }
        if recovered {
            if self.may_undo(a.ts_ecr) {
                self.undo_cwnd_reduction(now, false);
            }
            self.tcb.ca_state = CaState::Open;
            self.cc.set_state(&mut self.tcb, CaState::Open, now);
            self.lost_scan_from = self.snd_una;
            self.frto = false;
        }
    }

    /// The slow-start threshold on a loss: the algorithm's (Linux), or for tahoe/reno/newreno with
    /// `reno_ssthresh_from_flight` ns-3's `max(pipe / 2, 2)` (`TcpNewReno::GetSsThresh` is handed
    /// `BytesInFlight()`, the RFC 6675 pipe, where Linux's `tcp_reno_ssthresh` halves cwnd).
    fn loss_ssthresh(&mut self, now: Time) -> u32 {
        let from_cc = self.cc.ssthresh(&self.tcb, now);
        if self.cfg.reno_ssthresh_from_flight && matches!(self.cc.name(), "tahoe" | "reno" | "newreno") {
            (self.pipe() / 2).max(2)
        } else {
            from_cc
        }
    }

    fn enter_recovery(&mut self, now: Time, style: RecoveryStyle) {
        self.stats.fast_retransmits += 1;
        self.tlp_high_seq = None;
        self.tlp_deadline = NEVER;
        if style != RecoveryStyle::Tahoe {
            self.init_undo();
        }
        self.recovery_point = self.snd_nxt;
        if style != RecoveryStyle::Reno {
            // RFC 6582 `recover` (ns-2 Tahoe and NewReno with bugFix_): Reno (RFC 5681) has none
            // and may reduce again for a second loss in the same window.
            self.recover = Some(self.snd_nxt);
        }
        self.cc.set_state(&mut self.tcb, CaState::Recovery, now);
        self.tcb.ssthresh = self.loss_ssthresh(now);
        if style == RecoveryStyle::Tahoe {
            // Tahoe: fast retransmit, then slow start from one segment (go-back-N).
            self.tcb.ca_state = CaState::Loss;
            self.tcb.cwnd = 1;
            self.tcb.cwnd_cnt = 0;
            if !self.board.is_empty() {
                self.mark_head_lost();
            }
            self.mark_all_lost();
            return;
        }
        if !self.cfg.sack {
            self.mark_head_lost();
        }
        self.tcb.ca_state = CaState::Recovery;
        self.prr_delivered = 0;
        self.prr_out = 0;
        self.recover_fs = self.pipe().max(1);
    }

    fn exit_recovery(&mut self, now: Time) {
        self.tcb.ca_state = CaState::Open;
        self.cc.set_state(&mut self.tcb, CaState::Open, now);
        if !self.cc_is_model_based() {
            self.tcb.cwnd = self.cc.cwnd_after_recovery(&self.tcb).max(1);
        }
        self.tcb.cwnd_cnt = 0;
        self.cc.cwnd_event(&mut self.tcb, CwndEvent::CompleteCwr, now);
        self.lost_scan_from = self.snd_una;
        self.dupacks = 0;
        if !self.cfg.sack {
            self.sacked_out = 0;
        }
    }

    /// Whether the algorithm sets cwnd itself (Linux: `icsk_ca_ops->cong_control` exists, which
    /// skips `tcp_end_cwnd_reduction`); learnt from its `cong_control` answer.
    fn cc_is_model_based(&self) -> bool {
        self.model_based_cc
    }

    /// RFC 6937 PRR (Linux `tcp_cwnd_reduction`), conservative variant (PRR-SSRB).
    fn prr_update(&mut self, delivered: u32, newly_sacked: u32) {
        let _ = newly_sacked;
        self.prr_delivered += delivered;
        let pipe = self.pipe();
        let ssthresh = self.tcb.ssthresh;
        let sndcnt: i64 = if pipe > ssthresh {
            let dividend = ssthresh as u64 * self.prr_delivered as u64 + self.recover_fs as u64 - 1;
            (dividend / self.recover_fs as u64) as i64 - self.prr_out as i64
        } else {
            let lim = (self.prr_delivered as i64 - self.prr_out as i64).max(delivered as i64) + 1;
            lim.min(ssthresh as i64 - pipe as i64)
        };
        let sndcnt = sndcnt.max(if self.prr_out == 0 { 1 } else { 0 });
        self.tcb.cwnd = (pipe as i64 + sndcnt).max(1) as u32;
    }
}

#[derive(Clone, Copy)]
struct NewestDelivered {
    sent: Time,
    ever_retrans: bool,
    prior_delivered: u64,
    prior_time: Time,
    send_interval: Time,
    app_limited: bool,
}

/// What one ACK delivered, gathered while walking the scoreboard.
#[derive(Default)]
struct RateAcc {
    newest: Option<NewestDelivered>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::tcp::cc;

    fn sender(name: &str, sack: bool) -> TcpSender {
        let cfg = SenderConfig {
            sack,
            ..SenderConfig::default()
        };
        let mut s = TcpSender::new(cfg, cc::by_name(name).unwrap(), 0, 0);
        s.set_app_limit(u64::MAX);
        s
    }

    fn drain(s: &mut TcpSender, now: Time) -> Vec<Packet> {
        std::iter::from_fn(|| s.poll_transmit(now)).collect()
    }

    /// The engine hands `poll_transmit_into` a recycled box still holding an old packet: every
    /// field must be rewritten. Twin senders, one polled by value and one into boxes full of
    /// another packet's fields, through new data, a loss, its retransmission and a tail probe,
    /// must send identical packets.
    #[test]
    fn polling_into_a_used_box_writes_every_field() {
        let mut junk = ack(77, &[(1, 2), (3, 4), (5, 6)]);
        (
            junk.id,
            junk.flow,
            junk.subflow,
            junk.route,
            junk.hop,
            junk.ts_ecr,
            junk.dsn,
            junk.data_ack,
        ) = (9, 9, 9, 9, 9, 9, 9, 9);
        (
            junk.mp_prio,
            junk.dsn_first_sent,
            junk.dsn_first_seq,
            junk.retx_request,
            junk.handoff_id,
        ) = (2, 9, 9, 9, 9);
        (
            junk.rwnd,
            junk.retransmit,
            junk.retx_request_len,
            junk.dsn_first_subflow,
        ) = (9, true, 9, 9);
        let (mut a, mut b) = (sender("newreno", true), sender("newreno", true));
        let mss = a.cfg.mss as u64;
        let mut now = 0;
        let mut compared = 0;
        for step in 0..60u64 {
            loop {
                let by_value = a.poll_transmit(now);
                let mut boxed = junk.clone();
                let wrote = b.poll_transmit_into(now, &mut boxed);
                assert_eq!(by_value.is_some(), wrote, "step {step}");
                let Some(p) = by_value else { break };
                assert_eq!(format!("{p:?}"), format!("{boxed:?}"), "step {step}");
                compared += 1;
            }
            now += 1_000_000;
            // ACK everything but the third segment (a loss, then SACKs), later all of it.
            let una = a.snd_una;
            let hole = (2 * mss, 3 * mss);
            let pkt = if step < 30 && una <= hole.0 {
                ack(una.max(hole.0), &[(hole.1, a.snd_nxt.max(hole.1 + 1))])
            } else {
                ack(a.snd_nxt, &[])
            };
            a.on_ack(now, &pkt);
            b.on_ack(now, &pkt);
            if step % 7 == 6 {
                now = a.next_timeout().max(now);
                let (pa, pb) = (a.on_timer(now), b.on_timer(now));
                assert_eq!(format!("{pa:?}"), format!("{pb:?}"));
            }
        }
        assert!(
            compared > 100 && a.stats.segments_retransmitted > 0,
            "{compared} packets, {} retransmitted",
            a.stats.segments_retransmitted
        );
    }

    fn ack(n: u64, sacks: &[(u64, u64)]) -> Packet {
        let mut a = Packet::new(PacketKind::Ack);
        a.ack = n;
        a.rwnd = 1 << 30;
        for (i, b) in sacks.iter().enumerate() {
            a.sack[i] = *b;
        }
        a.n_sack = sacks.len() as u8;
        a
    }

    #[test]
    fn a_segment_pushed_to_the_front_goes_before_queued_data() {
        let mut s = TcpSender::new(SenderConfig::default(), cc::by_name("reno").unwrap(), 0, 0);
        let mss = s.cfg.mss as u64;
        for _ in 0..5 {
            s.push_segment(mss as u32);
        }
        assert_eq!(drain(&mut s, 0).len(), 5);
        // Two more are handed over (not sent yet), then a short one is put in front of them.
        s.push_segment(mss as u32);
        s.push_segment(mss as u32);
        assert_eq!(s.push_segment_front(500), 5 * mss);
        assert_eq!(s.queued_bytes(), 2 * mss + 500);
        let sent: Vec<(u64, u32)> = drain(&mut s, 0).iter().map(|p| (p.seq, p.len)).collect();
        assert_eq!(
            sent,
            vec![(5 * mss, 500), (5 * mss + 500, mss as u32), (6 * mss + 500, mss as u32)]
        );
    }

    #[test]
    fn initial_window_is_ten_segments() {
        let mut s = sender("reno", true);
        assert_eq!(drain(&mut s, 0).len(), 10);
    }

    #[test]
    fn rto_backs_off_exponentially_and_resets_on_new_ack() {
        let mut s = sender("reno", true);
        s.cfg.tlp = false; // before an RTT sample the probe timeout equals the RTO
        drain(&mut s, 0);
        // Before any RTT sample the RTO is 1 s (RFC 6298 §2.1).
        let mut expiries = vec![];
        let mut now = 0;
        for _ in 0..4 {
            now = s.next_timeout();
            s.on_timer(now);
            expiries.push(now);
            let re = drain(&mut s, now);
            assert_eq!(re.len(), 1, "one retransmission per expiry (cwnd = 1)");
            assert!(re[0].retransmit && re[0].seq == 0);
        }
        let gaps: Vec<Time> = expiries.windows(2).map(|w| w[1] - w[0]).collect();
        assert_eq!(gaps, vec![2 * NS_PER_S, 4 * NS_PER_S, 8 * NS_PER_S]);
        assert_eq!(s.stats.timeouts, 4);
        assert_eq!(s.tcb.cwnd, 1);
        s.on_ack(now + 1, &ack(1448, &[]));
        assert_eq!(s.backoff(), 0);
    }

    #[test]
    fn three_sacked_segments_above_a_hole_trigger_fast_retransmit_and_prr() {
        let mut s = sender("newreno", true);
        drain(&mut s, 0);
        let m = 1448u64;
        // Segment 0 lost; 1..=3 SACKed.
        s.on_ack(40 * NS_PER_MS, &ack(0, &[(m, 2 * m)]));
        s.on_ack(40 * NS_PER_MS, &ack(0, &[(m, 3 * m)]));
        assert_eq!(s.ca_state(), CaState::Disorder);
        s.on_ack(40 * NS_PER_MS, &ack(0, &[(m, 4 * m)]));
        assert_eq!(s.ca_state(), CaState::Recovery);
        assert_eq!(s.stats.fast_retransmits, 1);
        assert_eq!(s.tcb.ssthresh, 5);
        let out = drain(&mut s, 40 * NS_PER_MS);
        assert!(
            !out.is_empty() && out[0].retransmit && out[0].seq == 0,
            "the hole is retransmitted first"
        );
        // Full ACK of everything sent so far ends recovery with cwnd = ssthresh.
        let high = s.snd_nxt();
        s.on_ack(80 * NS_PER_MS, &ack(high, &[]));
        assert_eq!(s.ca_state(), CaState::Open);
        // cwnd = ssthresh on exit, then (as in Linux's tcp_ack, where tcp_cong_control runs
        // after tcp_fastretrans_alert) congestion avoidance counts this ACK's 9 segments: +1.
        assert_eq!(s.tcb.cwnd, 6);
    }

    /// ns-3 semantics (`reno_ssthresh_from_flight`): NewReno halves the pipe at the ACK that starts
    /// recovery (10 out, 3 SACKed, 1 lost → pipe 6 → 3), where Linux halves cwnd (10 → 5); CUBIC
    /// keeps 0.7 × cwnd either way.
    #[test]
    fn ns3_reno_ssthresh_halves_the_pipe_and_leaves_cubic_alone() {
        let m = 1448u64;
        for (name, expect) in [("newreno", 3), ("cubic", 7)] {
            let mut s = sender(name, true);
            s.cfg.reno_ssthresh_from_flight = true;
            drain(&mut s, 0);
            for k in 2..=4 {
                s.on_ack(40 * NS_PER_MS, &ack(0, &[(m, k * m)]));
            }
            assert_eq!(s.ca_state(), CaState::Recovery, "{name}");
            assert_eq!(s.tcb.ssthresh, expect, "{name}");
        }
    }

    fn ack_rwnd(n: u64, rwnd: u64) -> Packet {
        let mut a = ack(n, &[]);
        a.rwnd = rwnd;
        a
    }

    /// ns-3 semantics: `reno_increase_per_ack` counts an ACK of two segments once in slow start
    /// (Linux: twice); without `cwnd_validation` cwnd grows in congestion avoidance although the
    /// receive window (5 segments) and not cwnd (10) limits the flight (Linux: it stays).
    #[test]
    fn ns3_per_ack_growth_and_growth_without_cwnd_validation() {
        let m = 1448u64;
        for (per_ack, expect) in [(false, 12), (true, 11)] {
            let mut s = sender("newreno", true);
            s.cfg.reno_increase_per_ack = per_ack;
            drain(&mut s, 0);
            s.on_ack(40 * NS_PER_MS, &ack(2 * m, &[]));
            assert_eq!(s.tcb.cwnd, expect, "per ACK: {per_ack}");
        }
        for (validation, grows) in [(true, false), (false, true)] {
            let mut s = sender("newreno", true);
            s.cfg.cwnd_validation = validation;
            s.tcb.ssthresh = 5;
            s.on_ack(0, &ack_rwnd(0, 5 * m));
            let mut sent = drain(&mut s, 0).len() as u64;
            for k in 1..=30u64 {
                let now = k * 10 * NS_PER_MS;
                s.on_ack(now, &ack_rwnd(k * m, 5 * m));
                sent += drain(&mut s, now).len() as u64;
                assert!(s.snd_nxt() - k * m <= 5 * m, "the receive window limits the flight");
            }
            assert!(sent >= 30);
            assert_eq!(s.tcb.cwnd > 10, grows, "validation {validation}: cwnd {}", s.tcb.cwnd);
        }
    }

    #[test]
    fn newreno_without_sack_retransmits_after_partial_ack() {
        let mut s = sender("newreno", false);
        drain(&mut s, 0);
        let m = 1448u64;
        // Segment 0 arrives, segment 1 is lost: one new ACK then three duplicates.
        s.on_ack(40 * NS_PER_MS, &ack(m, &[]));
        for _ in 0..2 {
            s.on_ack(40 * NS_PER_MS, &ack(m, &[]));
        }
        assert_eq!(s.ca_state(), CaState::Disorder);
        s.on_ack(40 * NS_PER_MS, &ack(m, &[]));
        assert_eq!(s.ca_state(), CaState::Recovery);
        let r1 = drain(&mut s, 40 * NS_PER_MS);
        assert!(r1[0].retransmit && r1[0].seq == m);
        // Partial ACK: segment 3 was lost too.
        s.on_ack(80 * NS_PER_MS, &ack(3 * m, &[]));
        assert_eq!(
            s.ca_state(),
            CaState::Recovery,
            "NewReno stays in recovery on a partial ACK"
        );
        let r2 = drain(&mut s, 80 * NS_PER_MS);
        assert!(r2.iter().any(|p| p.retransmit && p.seq == 3 * m));
    }

    #[test]
    fn reno_leaves_recovery_on_partial_ack() {
        let mut s = sender("reno", false);
        drain(&mut s, 0);
        let m = 1448u64;
        for _ in 0..4 {
            s.on_ack(40 * NS_PER_MS, &ack(m, &[]));
        }
        assert_eq!(s.ca_state(), CaState::Recovery);
        drain(&mut s, 40 * NS_PER_MS);
        s.on_ack(80 * NS_PER_MS, &ack(3 * m, &[]));
        assert_eq!(s.ca_state(), CaState::Open);
    }

    #[test]
    fn zero_window_enters_persist_and_probes_with_backoff() {
        let mut s = sender("cubic", true);
        let first = drain(&mut s, 0);
        let high = first.last().map(|p| p.seq + p.len as u64).unwrap();
        let mut a = ack(high, &[]);
        a.rwnd = 0;
        s.on_ack(40 * NS_PER_MS, &a);
        assert!(drain(&mut s, 40 * NS_PER_MS).is_empty());
        assert!(s.in_persist());
        let t1 = s.next_timeout();
        let p1 = s.on_timer(t1).expect("probe");
        assert_eq!(p1.kind, PacketKind::WindowProbe);
        let t2 = s.next_timeout();
        s.on_timer(t2).expect("probe");
        let t3 = s.next_timeout();
        assert_eq!(t3 - t2, 2 * (t2 - t1), "persist timer backs off");
        assert_eq!(s.stats.timeouts, 0, "probes are not timeouts");
        let mut open = ack(high, &[]);
        open.rwnd = 1 << 20;
        s.on_ack(t3, &open);
        assert!(!s.in_persist());
        assert!(!drain(&mut s, t3).is_empty());
    }

    fn ack_ts(n: u64, sacks: &[(u64, u64)], ts_ecr: Time) -> Packet {
        let mut a = ack(n, sacks);
        a.ts_ecr = ts_ecr;
        a
    }

    const MS: Time = NS_PER_MS;
    const M: u64 = 1448;

    /// A sender with an RTT estimate (40 ms) and cwnd grown to 20, nothing outstanding, at 80 ms.
    fn warmed(name: &str) -> (TcpSender, Time) {
        let mut s = sender(name, true);
        drain(&mut s, 0);
        s.on_ack(40 * MS, &ack_ts(10 * M, &[], 1));
        let high = s.snd_nxt();
        // The ten segments sent at 40 ms are acknowledged at 80 ms.
        s.set_app_limit(high);
        drain(&mut s, 40 * MS);
        let high = s.snd_nxt();
        s.on_ack(80 * MS, &ack_ts(high, &[], 40 * MS));
        assert_eq!(s.pipe(), 0);
        (s, 80 * MS)
    }

    /// RFC 8985 §7 (and its §3.3 example): the last segments of a flight are lost, no ACK comes
    /// back; the probe timeout fires after about 2·SRTT, the probe is SACKed, RACK marks the
    /// earlier tail segments lost and fast recovery repairs them: no RTO.
    #[test]
    fn rack_tlp_recovers_a_tail_loss_without_an_rto() {
        let (mut s, t0) = warmed("cubic");
        s.set_app_limit(s.snd_nxt() + 10 * M);
        let base = s.snd_nxt();
        let sent = drain(&mut s, t0);
        assert_eq!(sent.len(), 10);
        // Segments 0..=7 arrive; 8 and 9 (the tail) are lost.
        s.on_ack(t0 + 40 * MS, &ack_ts(base + 8 * M, &[], t0));
        assert_eq!(s.ca_state(), CaState::Open);
        let pto_at = s.next_timeout();
        assert!(pto_at < t0 + 40 * MS + s.rto(), "the probe comes before the RTO");
        assert!(pto_at <= t0 + 40 * MS + 2 * s.rtt.srtt + TIMEOUT_MIN);
        assert!(s.on_timer(pto_at).is_none());
        let probe = drain(&mut s, pto_at);
        assert_eq!(probe.len(), 1, "one probe");
        assert!(
            probe[0].retransmit && probe[0].seq == base + 9 * M,
            "no new data: the last segment again"
        );
        assert_eq!(s.stats.tlp_probes, 1);
        // The probe's ACK SACKs segment 9: RACK finds 8 lost (sent long before the probe).
        let t1 = pto_at + 40 * MS;
        s.on_ack(t1, &ack_ts(base + 8 * M, &[(base + 9 * M, base + 10 * M)], pto_at));
        assert_eq!(s.ca_state(), CaState::Recovery);
        assert!(s.stats.rack_lost >= 1);
        let re = drain(&mut s, t1);
        assert!(re.iter().any(|p| p.retransmit && p.seq == base + 8 * M));
        s.on_ack(t1 + 40 * MS, &ack_ts(base + 10 * M, &[], t1));
        assert_eq!(s.ca_state(), CaState::Open);
        assert!(s.all_acked());
        assert_eq!(s.stats.timeouts, 0, "recovered without an RTO");
    }

    #[test]
    fn without_tlp_the_same_tail_loss_needs_an_rto() {
        let (mut s, t0) = warmed("cubic");
        s.cfg.tlp = false;
        s.set_app_limit(s.snd_nxt() + 10 * M);
        let base = s.snd_nxt();
        drain(&mut s, t0);
        s.on_ack(t0 + 40 * MS, &ack_ts(base + 8 * M, &[], t0));
        let t = s.next_timeout();
        assert_eq!(t, t0 + 40 * MS + s.rto());
        s.on_timer(t);
        assert_eq!(s.stats.timeouts, 1);
    }

    /// RFC 8985 §6: a retransmission that is lost again is found by RACK once a segment sent
    /// after it is delivered (the DupThresh rule never marks it: Linux without RACK needs the RTO).
    #[test]
    fn rack_detects_a_lost_retransmission() {
        let (mut s, t0) = warmed("newreno");
        s.set_app_limit(u64::MAX);
        let base = s.snd_nxt();
        drain(&mut s, t0); // 20 segments (cwnd grew to 20)
                           // Segment 0 lost; 1..=3 SACKed: recovery, retransmit 0.
        let t1 = t0 + 40 * MS;
        s.on_ack(t1, &ack_ts(base, &[(base + M, base + 4 * M)], t0));
        assert_eq!(s.ca_state(), CaState::Recovery);
        let out = drain(&mut s, t1);
        assert!(out[0].retransmit && out[0].seq == base);
        // The retransmission is lost too; segments sent after it (new data) are SACKed later.
        let t2 = t1 + 45 * MS;
        let last = out.last().unwrap();
        let sack_end = last.seq + last.len as u64;
        s.on_ack(t2, &ack_ts(base, &[(base + M, sack_end)], t1));
        let re = drain(&mut s, t2);
        assert!(
            re.iter().any(|p| p.retransmit && p.seq == base),
            "segment 0 sent a third time"
        );
        assert_eq!(s.stats.timeouts, 0);
    }

    /// RACK ranks transmissions by send order, not by (time, end sequence): new data sent on one
    /// event and a retransmission sent when the reordering timer fires at the same instant share
    /// a timestamp, but the retransmission went out *after* the new data. The new data's ACK must
    /// not mark the retransmission lost (it is still in flight behind it on a FIFO path); ranked
    /// by sequence it would be, and sent a third time (spurious: the receiver gets it twice).
    #[test]
    fn rack_ranks_same_instant_transmissions_by_send_order() {
        let (mut s, t0) = warmed("newreno");
        let base = s.snd_nxt();
        s.set_app_limit(base + 2 * M);
        assert_eq!(drain(&mut s, t0).len(), 2);
        // Segment 0 is lost, 1 arrives: one SACK, below DupThresh, so RACK waits reo_wnd.
        let t1 = t0 + 40 * MS;
        s.on_ack(t1, &ack_ts(base, &[(base + M, base + 2 * M)], t0));
        let t = s.next_timeout();
        assert!(t > t1 && t < t1 + 40 * MS, "the reordering timer");
        // At that instant the application writes more: new data goes out first...
        s.set_app_limit(base + 6 * M);
        let new = drain(&mut s, t);
        assert!(!new.is_empty() && new.iter().all(|p| !p.retransmit));
        // ...then the timer fires: segment 0 is lost and retransmitted, behind the new data.
        assert!(s.on_timer(t).is_none());
        let re = drain(&mut s, t);
        assert!(re.iter().any(|p| p.retransmit && p.seq == base));
        let lost = s.stats.rack_lost;
        // An RTT later the new data's ACK comes back (before the retransmission's).
        let end = new.last().map(|p| p.seq + p.len as u64).unwrap();
        s.on_ack(t + 40 * MS, &ack_ts(base, &[(base + M, end)], t));
        assert_eq!(
            s.stats.rack_lost, lost,
            "the retransmission in flight is not marked lost"
        );
        assert!(drain(&mut s, t + 40 * MS)
            .iter()
            .all(|p| !(p.retransmit && p.seq == base)));
        // Its own ACK follows: everything delivered, segment 0 sent twice only.
        s.on_ack(t + 41 * MS, &ack_ts(end, &[], t));
        assert!(s.all_acked());
        assert_eq!(s.stats.segments_retransmitted, 1);
    }

    /// TSO-like send quantum (Linux `bbr_tso_segs_goal`, fq pacing a GSO skb as a unit): once
    /// BBR paces (after the first ACK: 2.885 · cwnd / SRTT, 20 segments per 40 ms ≈ 2.1 MB/s),
    /// the pacer releases bursts of ≈ 1 ms of data (2 segments here) in one instant, and the next
    /// burst waits for the wire time of the whole burst; without TSO one segment at a time.
    #[test]
    fn tso_sends_paced_bursts_of_the_send_quantum() {
        for tso in [true, false] {
            let cfg = SenderConfig {
                tso,
                ..SenderConfig::default()
            };
            let mut s = TcpSender::new(cfg, cc::by_name("bbr").unwrap(), 0, 0);
            s.set_app_limit(u64::MAX);
            assert_eq!(drain(&mut s, 0).len(), 10, "unpaced before the first ACK");
            let t = 40 * MS;
            s.on_ack(t, &ack_ts(10 * M, &[], 1));
            let rate = s.tcb.pacing_rate_bps.expect("BBR paces after an ACK");
            let gap = tx_time((1448 + HEADER_BYTES) as u64, rate);
            let q = s.tcb.send_quantum;
            let burst = drain(&mut s, t);
            if tso {
                assert_eq!(q, 2, "pacing rate {rate} bit/s");
                assert_eq!(burst.len(), 2);
                assert_eq!(
                    s.next_send_time,
                    t + 2 * gap,
                    "the next burst after two segments' wire time"
                );
                assert!(drain(&mut s, t + 2 * gap - 1).is_empty());
                assert_eq!(drain(&mut s, t + 2 * gap).len(), 2);
            } else {
                assert_eq!(q, 1);
                assert_eq!(burst.len(), 1);
                assert_eq!(s.next_send_time, t + gap);
            }
        }
    }

    /// RFC 3708 §3 / Linux `tcp_try_undo_dsack`: reordering makes three SACKs start a fast
    /// retransmission; the original then arrives and the ACKs carry no timestamp evidence
    /// (TSecr 0, so Eifel cannot tell), so recovery ends with cwnd and ssthresh reduced. The
    /// retransmission reaches the receiver as a duplicate and its DSACK (RFC 2883, a block below
    /// the cumulative ACK) shows every retransmission of the episode spurious: the reduction is
    /// undone. With `dsack` off it stays.
    #[test]
    fn a_dsack_undoes_a_spurious_fast_retransmission() {
        for dsack in [true, false] {
            let (mut s, t0) = warmed("reno");
            s.cfg.dsack = dsack;
            s.set_app_limit(s.snd_nxt() + 20 * M);
            let base = s.snd_nxt();
            drain(&mut s, t0);
            let before = s.tcb.cwnd;
            let t1 = t0 + 40 * MS;
            s.on_ack(t1, &ack(base, &[(base + M, base + 4 * M)]));
            assert_eq!(s.ca_state(), CaState::Recovery);
            let reduced = s.tcb.ssthresh;
            assert!(reduced < before);
            let re = drain(&mut s, t1);
            assert!(re[0].retransmit && re[0].seq == base);
            // The reordered original: everything is acknowledged, recovery ends reduced.
            s.on_ack(t1 + 5 * MS, &ack(base + 20 * M, &[]));
            assert_eq!(s.ca_state(), CaState::Open);
            assert_eq!(s.tcb.ssthresh, reduced, "no timestamp evidence: not undone yet");
            let after_recovery = s.tcb.cwnd;
            assert!(after_recovery < before);
            // The retransmission arrives as a duplicate: DSACK [base, base + M).
            s.on_ack(t1 + 40 * MS, &ack(base + 20 * M, &[(base, base + M)]));
            if dsack {
                assert_eq!(s.stats.dsacks_received, 1);
                assert_eq!(s.stats.dsack_undos, 1);
                assert_eq!(
                    s.tcb.ssthresh,
                    u32::MAX,
                    "ssthresh restored (it was infinite, slow start)"
                );
                assert_eq!(s.tcb.cwnd, before, "cwnd restored to the prior window");
            } else {
                assert_eq!((s.stats.dsacks_received, s.stats.dsack_undos), (0, 0));
                assert_eq!(s.tcb.ssthresh, reduced);
                assert_eq!(s.tcb.cwnd, after_recovery);
            }
        }
    }

    /// Eifel (RFC 3522) / Linux tcp_try_undo_recovery: three SACKs start recovery, but the "lost"
    /// segment was only delayed: the ACK that covers it echoes its original timestamp, older than
    /// the retransmission, so the reduction is undone.
    #[test]
    fn undo_restores_cwnd_after_a_spurious_retransmission() {
        let (mut s, t0) = warmed("cubic");
        s.set_app_limit(s.snd_nxt() + 20 * M);
        let base = s.snd_nxt();
        drain(&mut s, t0);
        let before = s.tcb.cwnd;
        let t1 = t0 + 40 * MS;
        s.on_ack(t1, &ack_ts(base, &[(base + M, base + 4 * M)], t0));
        assert_eq!(s.ca_state(), CaState::Recovery);
        assert!(s.tcb.ssthresh < before);
        let re = drain(&mut s, t1);
        assert!(re[0].retransmit);
        // The delayed original arrives: the ACK echoes its timestamp (t0), before the retransmission.
        s.on_ack(t1 + 5 * MS, &ack_ts(base + 20 * M, &[], t0));
        assert_eq!(s.ca_state(), CaState::Open);
        // cwnd = max(cwnd, prior cwnd), then this ACK's 17 newly acknowledged segments count
        // (ssthresh is back at its prior value, infinite in slow start: Linux
        // tcp_undo_cwnd_reduction, then tcp_cong_control).
        assert_eq!(s.tcb.ssthresh, u32::MAX, "ssthresh restored");
        assert_eq!(s.tcb.cwnd, before + 17, "cwnd restored");
        assert_eq!(s.stats.undos, 1);
    }

    #[test]
    fn a_real_loss_is_not_undone() {
        let (mut s, t0) = warmed("cubic");
        s.set_app_limit(s.snd_nxt() + 20 * M);
        let base = s.snd_nxt();
        drain(&mut s, t0);
        let before = s.tcb.cwnd;
        let t1 = t0 + 40 * MS;
        s.on_ack(t1, &ack_ts(base, &[(base + M, base + 4 * M)], t0));
        drain(&mut s, t1);
        // The retransmission (sent at t1) filled the hole: its timestamp is echoed.
        s.on_ack(t1 + 40 * MS, &ack_ts(base + 20 * M, &[], t1));
        assert_eq!(s.ca_state(), CaState::Open);
        assert!(s.tcb.cwnd < before);
        assert_eq!(s.stats.undos, 0);
        // With undo switched off even a delayed original leaves the reduction in place.
        let (mut s, t0) = warmed("cubic");
        s.cfg.undo = false;
        s.set_app_limit(s.snd_nxt() + 20 * M);
        let base = s.snd_nxt();
        drain(&mut s, t0);
        s.on_ack(t0 + 40 * MS, &ack_ts(base, &[(base + M, base + 4 * M)], t0));
        drain(&mut s, t0 + 40 * MS);
        s.on_ack(t0 + 45 * MS, &ack_ts(base + 20 * M, &[], t0));
        assert!(s.tcb.cwnd < before);
        assert_eq!(s.stats.undos, 0);
    }

    /// A delay spike: the RTO fires although nothing was lost. The ACK of the original (echoing
    /// its timestamp) undoes the RTO's reduction (Linux tcp_try_undo_loss, Eifel).
    #[test]
    fn a_spurious_rto_is_undone_by_timestamps() {
        let (mut s, t0) = warmed("reno");
        s.cfg.tlp = false;
        s.set_app_limit(s.snd_nxt() + 20 * M);
        let base = s.snd_nxt();
        drain(&mut s, t0);
        let before = s.tcb.cwnd;
        let t = s.next_timeout();
        s.on_timer(t);
        assert_eq!(s.ca_state(), CaState::Loss);
        assert_eq!(s.tcb.cwnd, 1);
        let re = drain(&mut s, t);
        assert!(re[0].retransmit && re[0].seq == base);
        s.on_ack(t + 10 * MS, &ack_ts(base + 20 * M, &[], t0));
        assert_eq!(s.ca_state(), CaState::Open);
        assert_eq!(s.tcb.ssthresh, u32::MAX, "ssthresh restored");
        assert_eq!(s.tcb.cwnd, before + 20, "cwnd restored, then slow start counts the ACK");
        assert_eq!(s.stats.undos, 1);
    }

    /// RFC 5682 §3.1 (SACK-enhanced F-RTO), without timestamps: after the RTO the first ACK that
    /// advances snd_una sends new data (step 2b) instead of retransmitting; the next ACK
    /// acknowledges never-retransmitted segments, so the RTO was spurious (step 3b) and is undone.
    #[test]
    fn frto_detects_a_spurious_rto() {
        let (mut s, t0) = warmed("reno");
        s.cfg.tlp = false;
        s.set_app_limit(s.snd_nxt() + 20 * M);
        let base = s.snd_nxt();
        drain(&mut s, t0);
        let before = s.tcb.cwnd;
        s.set_app_limit(u64::MAX);
        let t = s.next_timeout();
        s.on_timer(t);
        let re = drain(&mut s, t);
        assert_eq!(re.len(), 1);
        // Step 2: an ACK of segment 0 only (the original or the retransmission? no timestamp to
        // tell; an ACK beyond it would already be proof, step 3b).
        s.on_ack(t + 10 * MS, &ack(base + M, &[]));
        assert_eq!(s.ca_state(), CaState::Loss);
        let out = drain(&mut s, t + 10 * MS);
        assert!(
            !out.is_empty() && out.iter().all(|p| !p.retransmit && p.seq >= base + 20 * M),
            "new data: {out:?}"
        );
        // Step 3b: more originals are acknowledged.
        s.on_ack(t + 12 * MS, &ack(base + 6 * M, &[]));
        assert_eq!(s.ca_state(), CaState::Open);
        assert_eq!(s.stats.spurious_rtos, 1);
        // undo_cwnd = max(cwnd, prior cwnd); the ACK then grows it (slow start: ssthresh is back
        // at its prior value, Linux tcp_undo_cwnd_reduction).
        assert!(s.tcb.cwnd >= before, "{} < {before}", s.tcb.cwnd);
        assert_eq!(s.lost_out, 0);
    }

    /// RFC 5682 §3.1 step 3a: the ACK after the new data is a duplicate (SACKing it): the loss
    /// was real, conventional recovery goes on.
    #[test]
    fn frto_keeps_a_real_rto() {
        let (mut s, t0) = warmed("reno");
        s.cfg.tlp = false;
        s.set_app_limit(s.snd_nxt() + 20 * M);
        let base = s.snd_nxt();
        drain(&mut s, t0);
        s.set_app_limit(u64::MAX);
        let t = s.next_timeout();
        s.on_timer(t);
        drain(&mut s, t);
        // The retransmission of segment 0 arrives; 1.. were lost too.
        s.on_ack(t + 40 * MS, &ack(base + M, &[]));
        let out = drain(&mut s, t + 40 * MS);
        assert!(out.iter().all(|p| !p.retransmit));
        let hi = out.last().unwrap().seq + M;
        s.on_ack(t + 80 * MS, &ack(base + M, &[(base + 20 * M, hi)]));
        assert_eq!(s.ca_state(), CaState::Loss);
        let re = drain(&mut s, t + 80 * MS);
        assert!(re.iter().any(|p| p.retransmit && p.seq == base + M));
        assert_eq!(s.stats.spurious_rtos, 0);
        assert_eq!(s.stats.undos, 0);
    }

    /// Linux tcp_cwnd_restart: idle for more than one RTO (but less than two) halves cwnd once.
    #[test]
    fn idle_between_one_and_two_rtos_halves_the_window() {
        let (mut s, t0) = warmed("reno");
        let cwnd = s.tcb.cwnd;
        assert!(cwnd >= 20);
        s.set_app_limit(u64::MAX);
        let rto = s.rto();
        let now = t0 + rto + rto / 2;
        let burst = drain(&mut s, now).len() as u32;
        assert_eq!(burst, cwnd / 2);
        // Switched off: the whole window goes out.
        let (mut s, t0) = warmed("reno");
        s.cfg.slow_start_after_idle = false;
        s.set_app_limit(u64::MAX);
        let now = t0 + 3 * s.rto();
        assert_eq!(drain(&mut s, now).len() as u32, cwnd);
    }

    #[test]
    fn idle_longer_than_rto_restarts_the_window() {
        let mut s = sender("reno", true);
        s.set_app_limit(200 * 1448);
        let mut now = 0;
        // Grow cwnd in slow start by acknowledging everything each RTT.
        for _ in 0..4 {
            drain(&mut s, now);
            now += 40 * NS_PER_MS;
            let high = s.snd_nxt();
            s.on_ack(now, &ack(high, &[]));
        }
        let grown = s.tcb.cwnd;
        assert!(grown > 40, "cwnd {grown}");
        s.set_app_limit(u64::MAX);
        now += 5 * NS_PER_S;
        let burst = drain(&mut s, now).len();
        assert_eq!(burst, 10, "after idle the window restarts at the initial window");
    }
}
