//! MPTCP as two [`Endpoint`]s: the connection-level data sender ([`MptcpSender`] with its
//! subflows, scheduler and coupled congestion control) and the data receiver ([`MptcpReceiver`]).
use super::{to_map, Action, Counters, Endpoint, EndpointSummary, Io, Observation, Sample};
use crate::core::rng::RngStreams;
use crate::core::time::{Time, NEVER};
use crate::metrics::round6;
use crate::mptcp::receiver::MptcpReceiver;
use crate::mptcp::sched;
use crate::mptcp::sender::MptcpSender;
use crate::packet::{Packet, PacketKind};
use crate::plan::{FlowPlan, MptcpPlan};
use crate::tcp::cc::coupled;
use crate::tcp::receiver::TcpReceiver;
use crate::tcp::sender::TcpSender;
use serde::Serialize;
use serde_json::json;

/// Label of the metric split windows in summary keys (`hol_delay_in_handover_mean_ms`, ...): the
/// windows a run's plan gives are P0's handover windows.
pub const SPLIT_LABEL: &str = "handover";

pub fn build(
    f: &FlowPlan,
    m: &MptcpPlan,
    flow: u32,
    rngs: &RngStreams,
    split_windows: &[(Time, Time)],
) -> (Box<dyn Endpoint>, Box<dyn Endpoint>) {
    let n = m.paths.len();
    let coupling = f.cc.coupled().then(|| coupled::new_coupling(n));
    let mut subs = Vec::with_capacity(n);
    let mut rcvs = Vec::with_capacity(n);
    for k in 0..n {
        let algo = match &coupling {
            Some(c) => f.cc.build_coupled(c.clone(), k),
            None => f.cc.build(rngs.seed_for(&format!("flow/{}/cc/{k}", f.name))),
        }
        .expect("the plan's controller fits the coupling");
        let mut tcp = TcpSender::new(f.sender.clone(), algo, flow, k as u16);
        tcp.set_app_limit(0);
        subs.push(MptcpSender::new_subflow(
            tcp,
            k == 0,
            m.backup[k],
            if k == 0 { NEVER } else { m.join_at },
        ));
        // Subflow-level buffers are not the limit: the connection-level window is. Quick ACKs
        // follow the window the connection-level buffer allows.
        let mut rcfg = f.receiver.clone();
        rcfg.rcv_buf = 1 << 40;
        rcfg.window_buf = m.rcv_buf;
        // Linux moves a subflow's data to the MPTCP socket as it arrives and sizes subflow
        // windows from the connection (`mptcp_space`, `mptcp_rcv_space_adjust`); neither the
        // per-subflow read model nor subflow auto-tuning applies.
        rcfg.ack_on_read = false;
        rcfg.autotune = false;
        rcvs.push(TcpReceiver::new(rcfg, flow, k as u16));
    }
    let inner = sched::build(&m.scheduler, rngs.seed_for(&format!("flow/{}/scheduler", f.name)))
        .expect("the plan's scheduler is checked");
    let scheduler = match &m.wrapper {
        Some(w) => w.wrap(inner),
        None => inner,
    };
    let mut receiver = MptcpReceiver::new(rcvs, m.rcv_buf, m.receiver_recovery);
    receiver.set_split_windows(split_windows.to_vec());
    (
        Box::new(MptcpSenderEnd {
            s: MptcpSender::new(flow, subs, scheduler, coupling, f.mss, m.rcv_buf),
            cc: f.cc.name(),
        }),
        Box::new(MptcpReceiverEnd {
            r: receiver,
            split: !split_windows.is_empty(),
        }),
    )
}

pub struct MptcpSenderEnd {
    pub s: MptcpSender,
    cc: &'static str,
}

pub struct MptcpReceiverEnd {
    pub r: MptcpReceiver,
    /// Whether the plan gave split windows (then the summary has the inside/outside keys).
    split: bool,
}

#[derive(Serialize)]
struct SenderSummary {
    protocol: &'static str,
    cc: &'static str,
    scheduler: String,
    segments_sent: u64,
    segments_retransmitted: u64,
    retransmission_ratio: f64,
    reinjections: u64,
    connection_timeouts: u64,
    opportunistic_retransmissions: u64,
    penalisations: u64,
    scheduler_waits: u64,
    timeouts: u64,
    fast_retransmits: u64,
    mp_prio_received: u64,
}

#[derive(Serialize)]
struct SubflowSenderSummary {
    segments_sent: u64,
    segments_retransmitted: u64,
    timeouts: u64,
    fast_retransmits: u64,
    reinjected_from: u64,
    scheduler_decisions: u64,
    mean_rtt_ms: Option<f64>,
    established: bool,
    stale_at_end: bool,
    backup_at_end: bool,
}

#[derive(Serialize)]
struct ReceiverSummary {
    retransmission_requests: u64,
    ofo_mean_bytes: f64,
    ofo_p95_bytes: f64,
    rcvbuf_mean_bytes: f64,
    rcvbuf_p95_bytes: f64,
    hol_delay_mean_ms: f64,
    hol_delay_p95_ms: f64,
    hol_delay_p99_ms: f64,
    loss_recovery_count: u64,
    loss_recovery_mean_ms: f64,
    loss_recovery_p95_ms: f64,
    loss_recovery_from_detection_mean_ms: f64,
    loss_recovery_from_detection_p95_ms: f64,
    duplicate_bytes: u64,
    mp_prio_sent: u64,
}

#[derive(Serialize)]
struct SubflowReceiverSummary {
    bytes_delivered: u64,
    loss_recovery_count: u64,
    loss_recovery_mean_ms: f64,
    loss_recovery_p95_ms: f64,
    loss_recovery_from_detection_mean_ms: f64,
    loss_recovery_from_detection_p95_ms: f64,
    /// Mean out-of-order bytes held behind connection-level holes that data first sent on this
    /// subflow filled: arriving late as the original, or as a copy (its original lost or
    /// overtaken). Where the receive buffer's occupancy comes from (P1's Fig. 9).
    ofo_behind_late_original_mean_bytes: f64,
    ofo_behind_copy_mean_bytes: f64,
}

impl Endpoint for MptcpSenderEnd {
    fn on_packet(&mut self, now: Time, p: &Packet, _io: &mut Io) {
        let i = p.subflow as usize;
        if matches!(p.kind, PacketKind::Ehn | PacketKind::Greet) {
            return; // P3's handoff messages are for single-path TCP
        }
        if p.kind == PacketKind::SynAck {
            self.s.on_syn_ack(i, now, p);
        } else {
            self.s.on_ack(i, now, p);
        }
    }

    fn on_timeout(&mut self, now: Time, io: &mut Io) {
        self.s.on_timer(now, io.out);
    }

    fn poll_transmit(&mut self, now: Time, io: &mut Io) {
        self.s.set_app_limit(io.app_limit);
        self.s.push_and_send(now, io.out);
    }

    fn poll_timeout(&self, _now: Time) -> Time {
        self.s.next_timeout()
    }

    fn act(&mut self, _now: Time, action: &Action, _io: &mut Io) {
        if let Action::CollapseCwnd { subflow } = *action {
            // Park et al.: cwnd to (almost) zero when the handover is detected; one segment keeps
            // the subflow's ACK clock alive so it recovers by slow start afterwards.
            self.s.collapse_cwnd(subflow);
        }
    }

    fn app_position(&self) -> (u64, u64) {
        (self.s.next_dsn(), self.s.app_limit())
    }

    fn acked_bytes(&self) -> u64 {
        self.s.data_ack()
    }

    fn counters(&self) -> Counters {
        Counters {
            sent: self.s.subflows().iter().map(|s| s.tcp.stats.bytes_sent).sum(),
            subflows: self.s.subflows().iter().map(|s| (0, s.tcp.stats.bytes_sent)).collect(),
            ..Default::default()
        }
    }

    fn record(&self, smp: &mut Sample) {
        let subs = self.s.subflows();
        smp.cwnd_segments = subs.iter().map(|s| s.tcp.tcb.cwnd).sum::<u32>() as f64;
        smp.srtt_ms = subs.iter().map(|s| s.tcp.rtt.srtt).min().unwrap_or(0) as f64 / 1e6;
        smp.rto_ms = subs.iter().map(|s| s.tcp.rto()).max().unwrap_or(0) as f64 / 1e6;
        smp.subflows = subs
            .iter()
            .map(|s| (s.tcp.tcb.cwnd as f64, s.tcp.rtt.srtt as f64 / 1e6))
            .collect();
    }

    fn summary(&mut self, _end: Time, _since: Time) -> EndpointSummary {
        let s = &self.s;
        let subs = s.subflows();
        let segs: u64 = subs.iter().map(|x| x.tcp.stats.segments_sent).sum();
        let retx: u64 = subs.iter().map(|x| x.tcp.stats.segments_retransmitted).sum();
        let reinj = s.stats.reinjections + s.stats.opportunistic_retransmissions + s.stats.retx_requests_served;
        let ratio = if segs > 0 {
            (retx + reinj) as f64 / segs as f64
        } else {
            0.0
        };
        let fields = to_map(&SenderSummary {
            protocol: "mptcp",
            cc: self.cc,
            scheduler: s.scheduler_name(),
            segments_sent: segs,
            segments_retransmitted: retx + reinj,
            retransmission_ratio: round6(ratio),
            reinjections: s.stats.reinjections,
            connection_timeouts: s.stats.conn_timeouts,
            opportunistic_retransmissions: s.stats.opportunistic_retransmissions,
            penalisations: s.stats.penalisations,
            scheduler_waits: s.stats.waits,
            timeouts: subs.iter().map(|x| x.tcp.stats.timeouts).sum(),
            fast_retransmits: subs.iter().map(|x| x.tcp.stats.fast_retransmits).sum(),
            mp_prio_received: s.stats.mp_prio_received,
        });
        let subflows = subs
            .iter()
            .map(|x| {
                let st = &x.tcp.stats;
                to_map(&SubflowSenderSummary {
                    segments_sent: st.segments_sent,
                    segments_retransmitted: st.segments_retransmitted,
                    timeouts: st.timeouts,
                    fast_retransmits: st.fast_retransmits,
                    reinjected_from: x.reinjected_segments,
                    scheduler_decisions: x.decisions,
                    mean_rtt_ms: x.tcp.rtt.mean_rtt().map(|v| round6(v / 1e6)),
                    established: x.established,
                    stale_at_end: x.stale,
                    backup_at_end: x.local_backup || x.peer_backup,
                })
            })
            .collect();
        EndpointSummary { fields, subflows }
    }
}

impl Endpoint for MptcpReceiverEnd {
    fn on_packet(&mut self, now: Time, p: &Packet, io: &mut Io) {
        let before = self.r.data_rcv_nxt();
        io.read = self.r.on_packet(p.subflow as usize, now, p, io.out);
        let after = self.r.data_rcv_nxt();
        if after > before {
            io.delivered = Some((before, after));
        }
    }

    fn on_timeout(&mut self, now: Time, io: &mut Io) {
        self.r.on_timer(now, io.out);
    }

    fn poll_timeout(&self, now: Time) -> Time {
        self.r.next_timeout(now)
    }

    fn act(&mut self, now: Time, action: &Action, io: &mut Io) {
        if let Action::SetBackup { subflow, backup } = *action {
            if let Some(a) = self.r.request_mp_prio(subflow, backup, now) {
                io.out.push(subflow, a);
            }
        }
    }

    fn observe(&self) -> Observation {
        let n = self.r.subflows.len();
        Observation {
            rtt: (0..n).map(|i| self.r.rtt_estimate(i)).collect(),
            segments_received: self.r.subflows.iter().map(|s| s.stats.segments_received).collect(),
        }
    }

    fn delivered_per_subflow(&self) -> &[u64] {
        &self.r.stats.delivered_per_subflow
    }

    fn read_bytes(&self) -> u64 {
        self.r.stats.bytes_delivered
    }

    fn set_read_limit(&mut self, now: Time, limit: u64, io: &mut Io) {
        let (n, update) = self.r.set_read_limit(now, limit);
        io.read = n;
        if let Some((i, a)) = update {
            io.out.push(i, a);
        }
    }

    fn init_read_limit(&mut self, limit: u64) {
        self.r.init_read_limit(limit);
    }

    fn counters(&self) -> Counters {
        Counters {
            delivered: self.r.stats.bytes_delivered,
            subflows: self.r.stats.delivered_per_subflow.iter().map(|&d| (d, 0)).collect(),
            ..Default::default()
        }
    }

    fn record(&self, s: &mut Sample) {
        s.ofo_bytes = self.r.ofo_bytes() as f64;
        s.rcvbuf_bytes = self.r.buffered() as f64;
        s.acks_sent = self.r.subflows.iter().map(|x| x.stats.acks_sent).sum();
    }

    fn summary(&mut self, end: Time, since: Time) -> EndpointSummary {
        let (ofo_mean, buf_mean) = self.r.finish(end, since);
        let r = &self.r;
        let ms = |x: f64| round6(x * 1e3);
        let mut fields = to_map(&ReceiverSummary {
            retransmission_requests: r.stats.retx_requests,
            ofo_mean_bytes: round6(ofo_mean),
            ofo_p95_bytes: round6(r.ofo_hist.quantile(0.95)),
            rcvbuf_mean_bytes: round6(buf_mean),
            rcvbuf_p95_bytes: round6(r.buf_hist.quantile(0.95)),
            hol_delay_mean_ms: ms(r.hol.mean()),
            hol_delay_p95_ms: ms(r.hol.quantile(0.95)),
            hol_delay_p99_ms: ms(r.hol.quantile(0.99)),
            loss_recovery_count: r.recovery_hist.total_weight() as u64,
            loss_recovery_mean_ms: ms(r.recovery_hist.mean()),
            loss_recovery_p95_ms: ms(r.recovery_hist.quantile(0.95)),
            loss_recovery_from_detection_mean_ms: ms(r.recovery_detect_hist.mean()),
            loss_recovery_from_detection_p95_ms: ms(r.recovery_detect_hist.quantile(0.95)),
            duplicate_bytes: r.stats.duplicate_bytes,
            mp_prio_sent: r.stats.mp_prio_sent,
        });
        if self.split {
            for (k, tag) in [(1usize, "in"), (0usize, "outside")] {
                fields.insert(
                    format!("hol_delay_{tag}_{SPLIT_LABEL}_mean_ms"),
                    json!(ms(r.hol_split[k].mean())),
                );
                fields.insert(
                    format!("hol_delay_{tag}_{SPLIT_LABEL}_p99_ms"),
                    json!(ms(r.hol_split[k].quantile(0.99))),
                );
                fields.insert(
                    format!("ofo_{tag}_{SPLIT_LABEL}_mean_bytes"),
                    json!(round6(r.ofo_split[k].mean())),
                );
            }
        }
        let subflows = (0..r.subflows.len())
            .map(|k| {
                to_map(&SubflowReceiverSummary {
                    bytes_delivered: r.stats.delivered_per_subflow[k],
                    loss_recovery_count: r.recovery_by_subflow[k].total_weight() as u64,
                    loss_recovery_mean_ms: ms(r.recovery_by_subflow[k].mean()),
                    loss_recovery_p95_ms: ms(r.recovery_by_subflow[k].quantile(0.95)),
                    loss_recovery_from_detection_mean_ms: ms(r.recovery_detect_by_subflow[k].mean()),
                    loss_recovery_from_detection_p95_ms: ms(r.recovery_detect_by_subflow[k].quantile(0.95)),
                    ofo_behind_late_original_mean_bytes: round6(r.ofo_cause_mean_bytes(k, end, since)[0]),
                    ofo_behind_copy_mean_bytes: round6(r.ofo_cause_mean_bytes(k, end, since)[1]),
                })
            })
            .collect();
        EndpointSummary { fields, subflows }
    }
}
