//! Single-path TCP as two [`Endpoint`]s: the data sender ([`TcpSender`]) and the data receiver
//! ([`TcpReceiver`]).
use super::{to_map, Counters, Endpoint, EndpointSummary, Io, Sample};
use crate::core::rng::RngStreams;
use crate::core::time::{to_secs_f64, Time};
use crate::metrics::round6;
use crate::packet::Packet;
use crate::plan::FlowPlan;
use crate::tcp::receiver::TcpReceiver;
use crate::tcp::sender::TcpSender;
use serde::Serialize;

pub fn build(f: &FlowPlan, flow: u32, rngs: &RngStreams) -> (Box<dyn Endpoint>, Box<dyn Endpoint>) {
    let cc = f.cc.build(rngs.seed_for(&format!("flow/{}/cc", f.name))).expect("the plan holds an uncoupled controller for TCP");
    (
        Box::new(TcpSenderEnd(TcpSender::new(f.sender.clone(), cc, flow, 0))),
        Box::new(TcpReceiverEnd(TcpReceiver::new(f.receiver.clone(), flow, 0))),
    )
}

pub struct TcpSenderEnd(pub TcpSender);
pub struct TcpReceiverEnd(pub TcpReceiver);

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
}

/// The receiver's part.
#[derive(Serialize)]
struct ReceiverSummary {
    ofo_mean_bytes: f64,
    ofo_max_bytes: u64,
    duplicate_segments: u64,
}

impl Endpoint for TcpSenderEnd {
    fn on_packet(&mut self, now: Time, p: &Packet, _io: &mut Io) {
        self.0.on_ack(now, p);
    }

    fn on_timeout(&mut self, now: Time, io: &mut Io) {
        if let Some(probe) = self.0.on_timer(now) {
            io.out.push((0, probe));
        }
    }

    fn poll_transmit(&mut self, now: Time, io: &mut Io) {
        if io.app_limit > self.0.app_limit() {
            self.0.set_app_limit(io.app_limit);
        }
        while let Some(p) = self.0.poll_transmit(now) {
            io.out.push((0, p));
        }
    }

    fn poll_timeout(&self, _now: Time) -> Time {
        self.0.next_timeout()
    }

    fn app_position(&self) -> (u64, u64) {
        (self.0.snd_nxt(), self.0.app_limit())
    }

    fn counters(&self) -> Counters {
        Counters { sent: self.0.stats.bytes_sent, ..Default::default() }
    }

    fn record(&self, s: &mut Sample) {
        s.cwnd_segments = self.0.tcb.cwnd as f64;
        s.srtt_ms = self.0.rtt.srtt as f64 / 1e6;
        s.rto_ms = self.0.rto() as f64 / 1e6;
    }

    fn summary(&mut self, _end: Time, _since: Time) -> EndpointSummary {
        let s = &self.0;
        let st = &s.stats;
        let ratio = if st.segments_sent > 0 { st.segments_retransmitted as f64 / st.segments_sent as f64 } else { 0.0 };
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
        });
        EndpointSummary { fields, subflows: Vec::new() }
    }
}

impl Endpoint for TcpReceiverEnd {
    fn on_packet(&mut self, now: Time, p: &Packet, io: &mut Io) {
        let before = self.0.stats.bytes_delivered;
        let (range, ack) = self.0.on_segment(now, p);
        io.read = self.0.stats.bytes_delivered - before;
        if let Some(a) = ack {
            io.out.push((0, a));
        }
        io.delivered = range;
    }

    fn on_timeout(&mut self, now: Time, io: &mut Io) {
        let before = self.0.stats.bytes_delivered;
        if let Some(a) = self.0.on_timer(now) {
            io.out.push((0, a));
        }
        io.read = self.0.stats.bytes_delivered - before;
    }

    fn poll_timeout(&self, now: Time) -> Time {
        self.0.next_timeout(now)
    }

    fn counters(&self) -> Counters {
        Counters { delivered: self.0.stats.bytes_delivered, ..Default::default() }
    }

    fn record(&self, s: &mut Sample) {
        s.ofo_bytes = self.0.ofo_bytes() as f64;
        s.rcvbuf_bytes = self.0.buffered() as f64;
    }

    fn summary(&mut self, end: Time, since: Time) -> EndpointSummary {
        self.0.finish(end);
        let r = &self.0.stats;
        let active_s = to_secs_f64(end.saturating_sub(since)).max(1e-9);
        let fields = to_map(&ReceiverSummary {
            ofo_mean_bytes: round6(r.ofo_byte_ns / (active_s * 1e9)),
            ofo_max_bytes: r.max_ofo_bytes,
            duplicate_segments: r.duplicate_segments,
        });
        EndpointSummary { fields, subflows: Vec::new() }
    }
}
