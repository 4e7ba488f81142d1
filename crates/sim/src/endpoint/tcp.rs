//! Single-path TCP as two [`Endpoint`]s: the data sender ([`TcpSender`]) and the data receiver
//! ([`TcpReceiver`]).
use super::{to_map, Action, Counters, Endpoint, EndpointSummary, HandoffPhase, Io, Sample};
use crate::core::rng::{Rng, RngStreams};
use crate::core::time::{to_secs_f64, Time};
use crate::handoff::{FlowHandoffPlan, HandoffScheme};
use crate::metrics::round6;
use crate::packet::{Packet, PacketKind};
use crate::plan::FlowPlan;
use crate::tcp::receiver::TcpReceiver;
use crate::tcp::sender::TcpSender;
use rand::Rng as _;
use serde::Serialize;

pub fn build(f: &FlowPlan, flow: u32, rngs: &RngStreams) -> (Box<dyn Endpoint>, Box<dyn Endpoint>) {
    let cc =
        f.cc.build(rngs.seed_for(&format!("flow/{}/cc", f.name)))
            .expect("the plan holds an uncoupled controller for TCP");
    let handoff = f
        .handoff
        .clone()
        .filter(|h| h.scheme != HandoffScheme::None)
        .map(|plan| Handoffs {
            rng: rngs.stream(&format!("flow/{}/handoff", f.name)),
            plan,
            stats: HandoffStats::default(),
        });
    (
        Box::new(TcpSenderEnd(TcpSender::new(f.sender.clone(), cc, flow, 0))),
        Box::new(TcpReceiverEnd {
            r: TcpReceiver::new(f.receiver.clone(), flow, 0),
            handoff,
        }),
    )
}

pub struct TcpSenderEnd(pub TcpSender);

pub struct TcpReceiverEnd {
    pub r: TcpReceiver,
    /// The receiver's handoff scheme (P3), if any.
    handoff: Option<Handoffs>,
}

/// A mobile host's handoff scheme at work (`crate::handoff`).
struct Handoffs {
    plan: FlowHandoffPlan,
    rng: Rng,
    stats: HandoffStats,
}

#[derive(Clone, Debug, Default, Serialize)]
struct HandoffStats {
    handoff_scheme: &'static str,
    handoff_messages_sent: u64,
    handoff_messages_lost: u64,
}

impl Handoffs {
    /// Sends `p` unless it is lost (a `lose`-listed kind, or `message_loss`).
    fn send(&mut self, what: &str, p: Packet, io: &mut Io) {
        let lost = self.plan.lose.iter().any(|m| m == what)
            || (self.plan.message_loss > 0.0 && self.rng.gen::<f64>() < self.plan.message_loss);
        if lost {
            self.stats.handoff_messages_lost += 1;
        } else {
            self.stats.handoff_messages_sent += 1;
            io.out.push(0, p);
        }
    }
}

fn scheme_name(s: HandoffScheme) -> &'static str {
    match s {
        HandoffScheme::None => "none",
        HandoffScheme::Ehn => "ehn",
        HandoffScheme::FreezeTcp => "freeze-tcp",
        HandoffScheme::FrAfterHandoff => "fr-after-handoff",
    }
}

/// The sender's part of a TCP flow's summary.
#[derive(Serialize)]
struct SenderSummary {
    protocol: &'static str,
    cc: &'static str,
    segments_sent: u64,
    segments_retransmitted: u64,
    retransmission_ratio: f64,
    timeouts: u64,
    fast_retransmits: u64,
    window_probes: u64,
    mean_rtt_ms: Option<f64>,
    min_rtt_ms: Option<f64>,
    final_cwnd_segments: u32,
    /// Window reductions undone, of which on DSACKs.
    undos: u64,
    dsack_undos: u64,
    /// EHN senders only (P3).
    #[serde(skip_serializing_if = "Option::is_none")]
    ehn: Option<EhnSummary>,
}

#[derive(Serialize)]
struct EhnSummary {
    freezes: u64,
    resumes: u64,
    watchdog_resumes: u64,
    ignored_ehn: u64,
    probes: u64,
    go_back_segments: u64,
    frozen_s: f64,
}

/// The receiver's part.
#[derive(Serialize)]
struct ReceiverSummary {
    ofo_mean_bytes: f64,
    ofo_max_bytes: u64,
    duplicate_segments: u64,
    /// ACKs sent, of which by the delayed-ACK timer and at an application read.
    acks_sent: u64,
    delayed_acks: u64,
    read_acks: u64,
}

impl Endpoint for TcpSenderEnd {
    fn on_packet(&mut self, now: Time, p: &Packet, _io: &mut Io) {
        match p.kind {
            PacketKind::Ehn => self.0.on_ehn(now, p),
            PacketKind::Greet => {} // for the base station; a sender ignores it
            _ => self.0.on_ack(now, p),
        }
    }

    fn on_timeout(&mut self, now: Time, io: &mut Io) {
        if let Some(probe) = self.0.on_timer(now) {
            io.out.push(0, probe);
        }
    }

    fn poll_transmit(&mut self, now: Time, io: &mut Io) {
        if io.app_limit > self.0.app_limit() {
            self.0.set_app_limit(io.app_limit);
        }
        while io.out.push_with(0, |p| self.0.poll_transmit_into(now, p)) {}
    }

    fn poll_timeout(&self, _now: Time) -> Time {
        self.0.next_timeout()
    }

    fn app_position(&self) -> (u64, u64) {
        (self.0.snd_nxt(), self.0.app_limit())
    }

    fn acked_bytes(&self) -> u64 {
        self.0.snd_una()
    }

    fn counters(&self) -> Counters {
        Counters {
            sent: self.0.stats.bytes_sent,
            ..Default::default()
        }
    }

    fn record(&self, s: &mut Sample) {
        s.cwnd_segments = self.0.tcb.cwnd as f64;
        s.srtt_ms = self.0.rtt.srtt as f64 / 1e6;
        s.rto_ms = self.0.rto() as f64 / 1e6;
    }

    fn summary(&mut self, _end: Time, _since: Time) -> EndpointSummary {
        let s = &self.0;
        let st = &s.stats;
        let ratio = if st.segments_sent > 0 {
            st.segments_retransmitted as f64 / st.segments_sent as f64
        } else {
            0.0
        };
        let fields = to_map(&SenderSummary {
            protocol: "tcp",
            cc: s.cc_name(),
            segments_sent: st.segments_sent,
            segments_retransmitted: st.segments_retransmitted,
            retransmission_ratio: round6(ratio),
            timeouts: st.timeouts,
            fast_retransmits: st.fast_retransmits,
            window_probes: st.window_probes,
            mean_rtt_ms: s.rtt.mean_rtt().map(|x| round6(x / 1e6)),
            min_rtt_ms: s.rtt.has_sample().then(|| round6(s.rtt.min_rtt as f64 / 1e6)),
            final_cwnd_segments: s.tcb.cwnd,
            undos: st.undos,
            dsack_undos: st.dsack_undos,
            ehn: s.cfg.ehn.then(|| EhnSummary {
                freezes: s.ehn_stats.freezes,
                resumes: s.ehn_stats.resumes,
                watchdog_resumes: s.ehn_stats.watchdog,
                ignored_ehn: s.ehn_stats.ignored,
                probes: s.ehn_stats.probes,
                go_back_segments: s.ehn_stats.go_back_segments,
                frozen_s: round6(s.ehn_stats.frozen_ns as f64 / 1e9),
            }),
        });
        EndpointSummary {
            fields,
            subflows: Vec::new(),
        }
    }
}

impl Endpoint for TcpReceiverEnd {
    fn on_packet(&mut self, now: Time, p: &Packet, io: &mut Io) {
        let before = self.r.stats.bytes_delivered;
        let (range, ack_due) = self.r.on_segment_ack_due(now, p);
        io.read = self.r.stats.bytes_delivered - before;
        if ack_due {
            io.out.push_with(0, |a| {
                self.r.write_ack(now, a);
                true
            });
        }
        io.delivered = range;
    }

    fn on_timeout(&mut self, now: Time, io: &mut Io) {
        let before = self.r.stats.bytes_delivered;
        if let Some(a) = self.r.on_timer(now) {
            io.out.push(0, a);
        }
        io.read = self.r.stats.bytes_delivered - before;
    }

    fn poll_timeout(&self, now: Time) -> Time {
        self.r.next_timeout(now)
    }

    fn read_bytes(&self) -> u64 {
        self.r.stats.bytes_delivered
    }

    fn set_read_limit(&mut self, now: Time, limit: u64, io: &mut Io) {
        let (n, update) = self.r.set_read_limit(now, limit);
        io.read = n;
        if let Some(a) = update {
            io.out.push(0, a);
        }
    }

    fn init_read_limit(&mut self, limit: u64) {
        self.r.init_read_limit(limit);
    }

    fn act(&mut self, now: Time, action: &Action, io: &mut Io) {
        let (Action::Handoff { phase, id }, Some(h)) = (action, self.handoff.as_mut()) else {
            return;
        };
        let (phase, id) = (*phase, *id);
        let r = &mut self.r;
        match (h.plan.scheme, phase) {
            // EHN (P3 §3): Greet to the new base station and the notification to the fixed host
            // at the start; at the end an ACK of everything received, window reopened.
            (HandoffScheme::Ehn, HandoffPhase::Start) => {
                // The EHN advertises a zero window; ACKs of data still arriving from before the
                // handoff must say the same, or they would end the freeze at once.
                r.zero_window = true;
                let mut g = control(PacketKind::Greet, r, id);
                g.ack = r.rcv_nxt();
                h.send("greet", g, io);
            }
            (HandoffScheme::Ehn, HandoffPhase::SendEhn) => {
                let mut e = control(PacketKind::Ehn, r, id);
                e.ack = r.rcv_nxt();
                e.ts_val = now;
                h.send("ehn", e, io);
            }
            (HandoffScheme::Ehn, HandoffPhase::End) => {
                r.zero_window = false;
                for _ in 0..h.plan.resume_copies {
                    let mut a = r.force_ack(now);
                    a.handoff_id = id;
                    h.send("resume", a, io);
                }
            }
            // Freeze-TCP (Goff et al. 2000): a zero window ahead of the handoff, three ACKs with
            // the window reopened after it.
            (HandoffScheme::FreezeTcp, HandoffPhase::Warn) => {
                r.zero_window = true;
                let a = r.force_ack(now);
                h.send("ehn", a, io);
            }
            (HandoffScheme::FreezeTcp, HandoffPhase::End) => {
                r.zero_window = false;
                for _ in 0..3 {
                    let a = r.force_ack(now);
                    h.send("resume", a, io);
                }
            }
            // Caceres & Iftode 1995: three duplicate ACKs when the handoff completes.
            (HandoffScheme::FrAfterHandoff, HandoffPhase::End) => {
                for _ in 0..3 {
                    let a = r.force_ack(now);
                    h.send("resume", a, io);
                }
            }
            _ => {}
        }
    }

    fn counters(&self) -> Counters {
        Counters {
            delivered: self.r.stats.bytes_delivered,
            ..Default::default()
        }
    }

    fn record(&self, s: &mut Sample) {
        s.ofo_bytes = self.r.ofo_bytes() as f64;
        s.rcvbuf_bytes = self.r.buffered() as f64;
        s.acks_sent = self.r.stats.acks_sent;
    }

    fn summary(&mut self, end: Time, since: Time) -> EndpointSummary {
        self.r.finish(end);
        let r = &self.r.stats;
        let active_s = to_secs_f64(end.saturating_sub(since)).max(1e-9);
        let mut fields = to_map(&ReceiverSummary {
            ofo_mean_bytes: round6(r.ofo_byte_ns / (active_s * 1e9)),
            ofo_max_bytes: r.max_ofo_bytes,
            duplicate_segments: r.duplicate_segments,
            acks_sent: r.acks_sent,
            delayed_acks: r.delayed_acks,
            read_acks: r.read_acks,
        });
        if let Some(h) = &mut self.handoff {
            h.stats.handoff_scheme = scheme_name(h.plan.scheme);
            fields.extend(to_map(&h.stats));
            if let Some(p) = &h.plan.prediction {
                fields.extend(to_map(p));
            }
        }
        EndpointSummary {
            fields,
            subflows: Vec::new(),
        }
    }
}

/// A handoff control packet of the receiver's connection.
fn control(kind: PacketKind, r: &TcpReceiver, id: u32) -> Packet {
    let mut p = Packet::new(kind);
    p.flow = r.flow();
    p.handoff_id = id;
    p
}
