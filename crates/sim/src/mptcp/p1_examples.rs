//! P1's two worked examples (J-KICS 2012; papers.md §P1) replayed packet by packet through the
//! simulator's own pieces, so that the report can print them and tests can check them:
//!
//! - **Fig. 5** (§3.1): the delay-predictive scheduler assigns packets 1–3 to path 1, packet 4 to
//!   path 2 and packets 5… to path 1 again.
//! - **Fig. 6** (§3.2): DSN 7 is lost on path 2 (its subflow sequence 1); DSN 8 arrives on path 2
//!   (sequence 2) and the receiver starts watching the data level; after DSN 9 on path 1 and
//!   DSN 10 on path 2 it asks for DSN 7 on path 1, the better path.
//!
//! How a replay works ([`replay`]):
//! 1. Each packet in connection order is placed by [`DelayPredictive::schedule`] on views of the
//!    paths (RTT, `D_t` = [`SubflowView::tx_time_per_segment`], an open window); the chosen
//!    path's view then counts it as queued. The *predicted* arrival is the scheduler's own
//!    [`predicted_arrival`] at that moment: `(n − 1)·D_t + RTT/2`.
//! 2. Each path's FIFO send buffer is handed at time 0 to a [`LinkDir`] whose rate makes a
//!    1500-byte packet take `D_t` and whose propagation delay is `RTT/2 − D_t` (so a lone packet
//!    arrives `RTT/2` after it is sent, the paper's eq. (1)). The *actual* arrival is the link
//!    model's.
//! 3. The arrivals, in time order, feed an [`MptcpReceiver`] with receiver-based recovery on
//!    (packets marked lost are dropped). A retransmission request goes back over the requesting
//!    path (one-way `RTT/2`); the sender puts the copy on that path's link, which gives the copy's
//!    actual arrival.
//!
//! The paper's figures give the assignments but no delays or rates; the numbers below are ours,
//! chosen so that the paper's rule produces the paper's assignment (and each is checked to).
use super::receiver::MptcpReceiver;
use super::sched::delay_predictive::{predicted_arrival, DelayPredictive};
use super::sched::{ConnView, Decision, Scheduler, SegmentInfo, SubflowView};
use crate::core::time::{Time, NS_PER_US};
use crate::link::LinkDir;
use crate::packet::{Packet, PacketKind, HEADER_BYTES, NONE_U64};
use crate::tcp::receiver::{ReceiverConfig, TcpReceiver};

/// Payload bytes of the examples' 1500-byte packets.
pub const MSS: u32 = 1500 - HEADER_BYTES;

/// One path of an example: round-trip time and per-packet transmission delay `D_t` (µs).
#[derive(Clone, Copy, Debug)]
pub struct ExamplePath {
    pub rtt_us: u64,
    pub d_t_us: u64,
}

/// Fig. 5's paths: path 1 RTT 6 ms, `D_t` 1 ms (T = 3, 4, 5, 6, 7 … ms); path 2 RTT 11 ms,
/// `D_t` 2 ms (T = 5.5, 7.5 … ms).
pub const FIG5_PATHS: [ExamplePath; 2] = [
    ExamplePath {
        rtt_us: 6_000,
        d_t_us: 1_000,
    },
    ExamplePath {
        rtt_us: 11_000,
        d_t_us: 2_000,
    },
];
/// Fig. 6's paths: path 1 RTT 6 ms, `D_t` 1 ms (T = 3 … 9 ms); path 2 RTT 16.4 ms, `D_t` 0.6 ms
/// (T = 8.2, 8.8, 9.4 ms): DSNs 1–6 on path 1, 7 and 8 on path 2, 9 on path 1, 10 on path 2.
pub const FIG6_PATHS: [ExamplePath; 2] = [
    ExamplePath {
        rtt_us: 6_000,
        d_t_us: 1_000,
    },
    ExamplePath {
        rtt_us: 16_400,
        d_t_us: 600,
    },
];

/// One packet of a replay (paths, packets and subflow sequence numbers counted from 1, as in
/// the paper's figures).
#[derive(Clone, Debug, PartialEq)]
pub struct TraceRow {
    /// Connection-level (data) sequence number, in packets.
    pub packet: u64,
    pub path: usize,
    /// Subflow-level sequence number on that path, in packets.
    pub subflow_seq: u64,
    /// The scheduler's predicted arrival (µs from the start; for a requested copy, from the
    /// moment the request reaches the sender).
    pub predicted_us: f64,
    /// The link model's arrival (µs); None if the packet was lost.
    pub actual_us: Option<f64>,
    /// A retransmitted copy (a P1 request served), not an original.
    pub copy: bool,
    /// What the receiver did with it.
    pub receiver: String,
}

/// A retransmission request of the receiver (Fig. 6).
#[derive(Clone, Debug, PartialEq)]
pub struct Request {
    pub packet: u64,
    pub path: usize,
    pub at_us: f64,
}

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Trace {
    /// In connection order (a requested copy follows the originals).
    pub rows: Vec<TraceRow>,
    pub requests: Vec<Request>,
    /// Packets delivered in order to the application at the end.
    pub delivered_packets: u64,
}

fn us(t: Time) -> f64 {
    t as f64 / NS_PER_US as f64
}

fn view(id: usize, p: &ExamplePath) -> SubflowView {
    let rtt = p.rtt_us * NS_PER_US;
    SubflowView {
        id,
        established: true,
        cwnd: 1000,
        ssthresh: u32::MAX,
        srtt: rtt,
        rttvar: rtt / 4,
        min_srtt: rtt,
        max_srtt: rtt,
        mss: MSS,
        tx_time_per_segment: p.d_t_us * NS_PER_US,
        ..Default::default()
    }
}

fn link(p: &ExamplePath) -> LinkDir {
    let rate_mbps = (MSS + HEADER_BYTES) as f64 * 8.0 / p.d_t_us as f64;
    LinkDir::constant(rate_mbps, (p.rtt_us / 2 - p.d_t_us) as f64 / 1000.0, 1_000)
}

/// Drains `l` completely; returns what arrived.
fn drain(l: &mut LinkDir) -> Vec<(Time, Packet)> {
    let mut out = Vec::new();
    while let Some(t) = l.next_wakeup() {
        l.wake(t, &mut out);
    }
    out
}

/// Replays `packets` packets over `paths` (see the module doc); the packets numbered in `lost`
/// (from 1) are dropped on their path.
pub fn replay(paths: &[ExamplePath], packets: u64, lost: &[u64]) -> Trace {
    assert!(
        !paths.is_empty() && paths.iter().all(|p| p.d_t_us > 0 && p.rtt_us / 2 > p.d_t_us),
        "bad example paths"
    );
    let mss = MSS as u64;
    // 1. Assignment.
    let mut sched = DelayPredictive::new(false);
    let mut views: Vec<SubflowView> = paths.iter().enumerate().map(|(i, p)| view(i, p)).collect();
    let mut rows: Vec<TraceRow> = Vec::new();
    for n in 1..=packets {
        let conn = ConnView {
            now: 0,
            send_window_left: 1 << 30,
            send_window: 1 << 30,
            unsent_bytes: (packets - n + 1) * mss,
            segment: SegmentInfo {
                dsn: (n - 1) * mss,
                len: MSS,
                reinjection: false,
                sent_on: 0,
            },
        };
        let Decision::Send(i) = sched.schedule(&conn, &views) else {
            panic!("the example's windows are open")
        };
        let predicted = predicted_arrival(&views[i]);
        views[i].queued += 1;
        views[i].queued_bytes += mss;
        let seq = views[i].queued as u64;
        rows.push(TraceRow {
            packet: n,
            path: i + 1,
            subflow_seq: seq,
            predicted_us: us(predicted),
            actual_us: None,
            copy: false,
            receiver: String::new(),
        });
    }
    // 2. Each path's FIFO through its link, all handed over at time 0.
    let mut links: Vec<LinkDir> = paths.iter().map(link).collect();
    let mut arrivals: Vec<(Time, Packet)> = Vec::new();
    for (i, l) in links.iter_mut().enumerate() {
        for r in rows.iter().filter(|r| r.path == i + 1) {
            let mut p = Packet::new(PacketKind::Data);
            p.subflow = i as u16;
            p.seq = (r.subflow_seq - 1) * mss;
            p.len = MSS;
            p.dsn = (r.packet - 1) * mss;
            p.dsn_first_subflow = i as u16;
            p.dsn_first_seq = p.seq;
            l.enqueue(0, p).expect("the example's queues are long enough");
        }
        for (t, mut p) in drain(l) {
            // Stamped when it leaves the send buffer for the wire: arrival − RTT/2.
            p.ts_val = t - paths[i].rtt_us * NS_PER_US;
            p.dsn_first_sent = p.ts_val;
            let k = (p.dsn / mss) as usize;
            if lost.contains(&(k as u64 + 1)) {
                rows[k].receiver = "lost on its path".into();
                continue;
            }
            rows[k].actual_us = Some(us(t));
            arrivals.push((t, p));
        }
    }
    // 3. The receiver, in arrival order; requested copies join the arrivals as they are sent.
    let cfg = || ReceiverConfig {
        delayed_ack: false,
        rcv_buf: 1 << 40,
        ..Default::default()
    };
    let subs = (0..paths.len()).map(|i| TcpReceiver::new(cfg(), 0, i as u16)).collect();
    let mut rx = MptcpReceiver::new(subs, 1 << 30, true);
    let mut requests = Vec::new();
    let mut outbox = crate::endpoint::Outbox::default();
    while let Some(k) = (0..arrivals.len()).min_by_key(|&k| (arrivals[k].0, arrivals[k].1.dsn)) {
        let (t, p) = arrivals.swap_remove(k);
        let before = rx.data_rcv_nxt();
        rx.on_packet(p.subflow as usize, t, &p, &mut outbox);
        let out = outbox.drain_values();
        let after = rx.data_rcv_nxt();
        let n = p.dsn / mss + 1;
        let row = rows
            .iter()
            .rposition(|r| r.packet == n && r.actual_us == Some(us(t)))
            .expect("a row per arrival");
        let mut note = if p.dsn > before {
            format!("held: waits for packet {}", before / mss + 1)
        } else if after > p.dsn + mss {
            format!("delivered with packets up to {}", after / mss)
        } else {
            "delivered in order".to_string()
        };
        for (j, a) in out.iter().filter(|(_, a)| a.retx_request != NONE_U64) {
            let want = a.retx_request / mss + 1;
            note += &format!("; asks for packet {want} on path {}", j + 1);
            requests.push(Request {
                packet: want,
                path: j + 1,
                at_us: us(t),
            });
            // The request reaches the sender RTT/2 later; the copy goes first on that path.
            let at_sender = t + paths[*j].rtt_us * NS_PER_US / 2;
            let mut v = view(*j, &paths[*j]);
            v.queued = links[*j].queue_packets() as u32;
            let predicted = at_sender + predicted_arrival(&v);
            let orig = rows
                .iter()
                .find(|r| r.packet == want && !r.copy)
                .expect("the requested packet was sent");
            let mut c = Packet::new(PacketKind::Data);
            c.subflow = *j as u16;
            c.seq = views[*j].queued as u64 * mss;
            views[*j].queued += 1;
            c.len = MSS;
            c.dsn = a.retx_request;
            c.retransmit = true;
            c.ts_val = at_sender;
            c.dsn_first_sent = 0;
            c.dsn_first_subflow = (orig.path - 1) as u16;
            c.dsn_first_seq = (orig.subflow_seq - 1) * mss;
            links[*j]
                .enqueue(at_sender, c)
                .expect("the example's queues are long enough");
            for (ta, cp) in drain(&mut links[*j]) {
                rows.push(TraceRow {
                    packet: want,
                    path: j + 1,
                    subflow_seq: cp.seq / mss + 1,
                    predicted_us: us(predicted),
                    actual_us: Some(us(ta)),
                    copy: true,
                    receiver: String::new(),
                });
                arrivals.push((ta, cp));
            }
        }
        rows[row].receiver = note;
    }
    let delivered_packets = rx.data_rcv_nxt() / mss;
    Trace {
        rows,
        requests,
        delivered_packets,
    }
}

/// Fig. 5: eight packets over [`FIG5_PATHS`], none lost.
pub fn fig5() -> Trace {
    replay(&FIG5_PATHS, 8, &[])
}

/// Fig. 6: ten packets over [`FIG6_PATHS`], packet (DSN) 7 lost on path 2.
pub fn fig6() -> Trace {
    replay(&FIG6_PATHS, 10, &[7])
}

/// Both traces as JSON (for `mobipath reproduce p1`'s report).
pub fn worked_examples_json() -> String {
    let trace = |name: &str, paths: &[ExamplePath], t: &Trace| {
        serde_json::json!({
            "figure": name,
            "paths": paths.iter().enumerate().map(|(i, p)| serde_json::json!({"path": i + 1, "rtt_us": p.rtt_us, "d_t_us": p.d_t_us})).collect::<Vec<_>>(),
            "rows": t.rows.iter().map(|r| serde_json::json!({
                "packet": r.packet, "path": r.path, "subflow_seq": r.subflow_seq, "predicted_us": r.predicted_us,
                "actual_us": r.actual_us, "copy": r.copy, "receiver": r.receiver,
            })).collect::<Vec<_>>(),
            "requests": t.requests.iter().map(|q| serde_json::json!({"packet": q.packet, "path": q.path, "at_us": q.at_us})).collect::<Vec<_>>(),
            "delivered_packets": t.delivered_packets,
        })
    };
    serde_json::json!([trace("fig5", &FIG5_PATHS, &fig5()), trace("fig6", &FIG6_PATHS, &fig6())]).to_string()
}
