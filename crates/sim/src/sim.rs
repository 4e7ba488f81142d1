//! The event loop: owns virtual time, moves packets between endpoints and links, fires timers
//! and records metrics.
//!
//! Endpoints and links never read a clock; every call passes `now`. Timers are scheduled
//! lazily: each component has at most one pending wake-up event that is still current
//! (`*_at` fields); stale events are recognised by their time and skipped, and early wake-ups
//! are harmless because every handler re-checks its own deadlines.
use crate::api::RunOutput;
use crate::core::time::{from_ms_f64, from_secs_f64, to_secs_f64, Time, NEVER, NS_PER_MS, NS_PER_S};
use crate::core::{EventQueue, RngStreams};
use crate::hst::pha::pha;
use crate::hst::phad::PhaD;
use crate::hst::scenario::TrainRun;
use crate::link::LinkDir;
use crate::metrics::{round6, Bins, LongTable};
use crate::mptcp::receiver::MptcpReceiver;
use crate::mptcp::sched;
use crate::mptcp::sender::MptcpSender;
use crate::packet::{Packet, PacketKind};
use crate::scenario::{split_wrapper, FlowConfig, Scenario, Traffic, Wrapper};
use crate::tcp::cc::{self, coupled};
use crate::tcp::receiver::{ReceiverConfig, TcpReceiver};
use crate::tcp::sender::{SenderConfig, TcpSender};
use serde_json::{json, Map, Value};
use std::collections::{HashMap, VecDeque};

#[derive(Clone, Copy, Debug)]
enum Ev {
    LinkWake(u32),
    /// The head of a link's propagation pipe reaches the far end.
    PipeHead(u32),
    /// A packet that could not join its link's pipe (reordered: it arrives before the pipe's
    /// tail) reaches the far end; index into the slab.
    Arrive(u32),
    SenderTimer(u32),
    ReceiverTimer(u32),
    FlowStart(u32),
    MpPrio(u32, u32),
    /// A GPS fix for flow's PHA-D controller: (flow, index into the train's fixes).
    Gps(u32, u32),
    /// Subflow blocking: a handover starts on (flow, subflow).
    Block(u32, u32),
    Bin,
}

/// A packet in transit. Boxed so that links, pipes and events move a pointer, not the ~150-byte
/// header (each packet is moved through half a dozen queues between its endpoints).
type Pkt = Box<Packet>;
/// An empty pipe's head key (after every real one).
const NO_HEAD: (Time, u64) = (Time::MAX, u64::MAX);
/// At most this many boxes are kept for reuse.
const SPARE_BOXES: usize = 1024;

struct LinkSlot {
    dir: LinkDir<Pkt>,
    name: String,
    wake_at: Time,
    /// Packets on the wire after this link direction, in arrival order: (arrival time, event
    /// insertion number reserved when the packet left the link, packet). The event loop merges
    /// the pipes' heads ([`Sim::heads`]) with the event queue by (time, number), so events are
    /// processed in exactly the order one queued event per packet would give, without a heap
    /// push and pop per packet.
    pipe: VecDeque<(Time, u64, Pkt)>,
}

/// The two ends of a connection.
enum Conn {
    Tcp { sender: TcpSender, receiver: TcpReceiver },
    Mptcp {
        sender: MptcpSender,
        receiver: MptcpReceiver,
        mp_prio: Vec<(Time, usize, bool)>,
        pha_d: Option<PhaD>,
        /// Subflow blocking (Park et al.): per subflow, the handover intervals at whose start its
        /// cwnd collapses.
        blocking: Vec<Vec<(Time, Time)>>,
    },
}

/// Per-subflow time series (MPTCP) — for TCP the single "subflow" is the flow itself.
struct SubflowSeries {
    /// Bytes this subflow had delivered at the last look (for per-bin attribution).
    delivered_seen: u64,
    goodput: Bins,
    sent: Bins,
    cwnd: Vec<f64>,
    srtt_ms: Vec<f64>,
}

struct Flow {
    name: String,
    conn: Conn,
    /// (forward, reverse) route per subflow.
    routes: Vec<(u16, u16)>,
    traffic: Traffic,
    start: Time,
    stop: Time,
    mss: u64,
    started: bool,
    snd_timer_at: Time,
    rcv_timer_at: Time,
    // metrics
    goodput: Bins,
    sent: Bins,
    cwnd: Vec<f64>,
    srtt_ms: Vec<f64>,
    rto_ms: Vec<f64>,
    ofo_bytes: Vec<f64>,
    rcvbuf_bytes: Vec<f64>,
    sub: Vec<SubflowSeries>,
    app_next: u64,
    delivery_errors: u64,
    fct: Option<Time>,
    /// Last in-order delivery to the application, and the gaps between consecutive ones of
    /// at least [`STALL_MIN`] as `[from, to)` (for the per-handover application-level gap).
    last_delivery: Option<Time>,
    stalls: Vec<(Time, Time)>,
}

/// Shortest application delivery gap recorded as a stall.
const STALL_MIN: Time = NS_PER_MS;

impl Flow {
    fn sent_so_far(&self) -> u64 {
        match &self.conn {
            Conn::Tcp { sender, .. } => sender.snd_nxt(),
            Conn::Mptcp { sender, .. } => sender.next_dsn(),
        }
    }

    fn app_limit(&self) -> u64 {
        match &self.conn {
            Conn::Tcp { sender, .. } => sender.app_limit(),
            Conn::Mptcp { sender, .. } => sender.app_limit(),
        }
    }

    /// Bytes the application has written by `now` and when it writes more (NEVER if not).
    fn app_bytes(&self, now: Time) -> (u64, Time) {
        if !self.started {
            return (0, NEVER);
        }
        let until = now.min(self.stop);
        match &self.traffic {
            Traffic::Bulk => (if now < self.stop { u64::MAX } else { self.sent_so_far() }, NEVER),
            Traffic::File { bytes } => (*bytes, NEVER),
            Traffic::Cbr { rate_mbps } => {
                let elapsed = until.saturating_sub(self.start) as f64 / 1e9;
                let bytes = rate_mbps * 1e6 / 8.0 * elapsed;
                let chunks = (bytes / self.mss as f64).floor() as u64 + 1; // one chunk at start
                let next = if now >= self.stop {
                    NEVER
                } else {
                    let t = self.start as f64 + chunks as f64 * self.mss as f64 * 8.0 / (rate_mbps * 1e6) * 1e9;
                    (t.ceil() as Time).max(now + 1)
                };
                (chunks * self.mss, next)
            }
        }
    }

    /// Exactly-once, in-order check of what the application receives, and the completion time.
    fn note_delivery(&mut self, now: Time, start: u64, end: u64) {
        if start != self.app_next || end <= start {
            self.delivery_errors += 1;
        }
        self.app_next = end;
        if let Some(t) = self.last_delivery.filter(|&t| now >= t + STALL_MIN) {
            self.stalls.push((t, now));
        }
        self.last_delivery = Some(now);
        if let Traffic::File { bytes } = self.traffic {
            if end >= bytes && self.fct.is_none() {
                self.fct = Some(now - self.start);
            }
        }
    }
}

struct Sim {
    now: Time,
    end: Time,
    queue: EventQueue<Ev>,
    links: Vec<LinkSlot>,
    /// Per link direction: (time, insertion number) of its pipe's head, [`NO_HEAD`] if empty.
    heads: Vec<(Time, u64)>,
    routes: Vec<Vec<u32>>,
    flows: Vec<Flow>,
    slab: Vec<Option<Pkt>>,
    free: Vec<u32>,
    out: Vec<(Time, Pkt)>,
    /// Boxes of delivered packets, reused for new ones.
    spare: Vec<Pkt>,
    pkts: Vec<(usize, Packet)>,
    bin: Time,
    n_bins: usize,
    link_queue: Vec<Vec<f64>>,
    train: Option<TrainRun>,
    handover_windows: Vec<(Time, Time)>,
}

fn sender_config(fc: &FlowConfig) -> SenderConfig {
    let t = &fc.tcp;
    SenderConfig {
        mss: t.mss_bytes,
        initial_cwnd: t.initial_cwnd,
        sack: t.sack,
        rto_style: t.rto_style,
        min_rto: from_ms_f64(t.min_rto_ms),
        initial_rto: from_ms_f64(t.initial_rto_ms),
        slow_start_after_idle: t.slow_start_after_idle,
    }
}

fn receiver_config(fc: &FlowConfig, rcv_buf: u64) -> ReceiverConfig {
    let r = &fc.receiver;
    ReceiverConfig {
        sack: fc.tcp.sack,
        delayed_ack: r.delayed_ack,
        quickack: true,
        window_buf: r.rcv_buf_bytes,
        delack_timeout: from_ms_f64(r.delack_ms),
        rcv_buf,
        read_pauses: r.read_pauses.iter().map(|p| (from_secs_f64(p.start_s), from_secs_f64(p.start_s + p.duration_s))).collect(),
    }
}

/// What a PHA scheduler needs from the scenario: the table and each subflow's operator.
struct PhaContext {
    table: Option<std::rc::Rc<crate::hst::table::HandoverTable>>,
    /// True handover intervals per operator name.
    handovers: HashMap<String, Vec<(Time, Time)>>,
    gps_period: Time,
    /// Operator name per path name (paths containing a link that follows an operator).
    path_operator: HashMap<String, String>,
}

fn build_conn(fc: &FlowConfig, i: u32, rngs: &RngStreams, pha_ctx: Option<&PhaContext>) -> Conn {
    let cc_seed = |k: usize| rngs.seed_for(&format!("flow/{}/cc/{k}", fc.name));
    let Some(paths) = &fc.paths else {
        let algo = cc::by_name_seeded(&fc.cc, rngs.seed_for(&format!("flow/{}/cc", fc.name))).expect("validated");
        return Conn::Tcp {
            sender: TcpSender::new(sender_config(fc), algo, i, 0),
            receiver: TcpReceiver::new(receiver_config(fc, fc.receiver.rcv_buf_bytes), i, 0),
        };
    };
    let n = paths.len();
    let opts = fc.mptcp.clone().unwrap_or_default();
    let mss = fc.tcp.mss_bytes;
    let coupling = coupled::NAMES.contains(&fc.cc.as_str()).then(|| coupled::new_coupling(n));
    let start = from_secs_f64(fc.start_s);
    let join_at = start + from_ms_f64(opts.join_delay_ms);
    let mut subs = Vec::with_capacity(n);
    let mut rcvs = Vec::with_capacity(n);
    let conn_rcv_buf = match (opts.rcv_buf_bytes, opts.rcv_buf_packets) {
        (Some(b), _) => b,
        (None, Some(p)) => p * mss as u64,
        _ => fc.receiver.rcv_buf_bytes,
    };
    for k in 0..n {
        let algo = match &coupling {
            Some(c) => coupled::build(&fc.cc, c.clone(), k).expect("validated"),
            None => cc::by_name_seeded(&fc.cc, cc_seed(k)).expect("validated"),
        };
        let mut tcp = TcpSender::new(sender_config(fc), algo, i, k as u16);
        tcp.set_app_limit(0);
        let backup = opts.backup.get(k).copied().unwrap_or(false);
        subs.push(MptcpSender::new_subflow(tcp, k == 0, backup, if k == 0 { NEVER } else { join_at }));
        // Subflow-level buffers are not the limit: the connection-level window is.
        // Quick ACKs follow the window the connection-level buffer allows.
        let mut rcfg = receiver_config(fc, 1 << 40);
        rcfg.window_buf = conn_rcv_buf;
        rcvs.push(TcpReceiver::new(rcfg, i, k as u16));
    }
    let sched_cfg = fc.scheduler.as_ref().map(|s| s.config()).unwrap_or_else(|| sched::SchedulerSpec::Name("minrtt".into()).config());
    let (wrapper, inner_cfg) = split_wrapper(&sched_cfg);
    let mut scheduler = sched::build(&inner_cfg, rngs.seed_for(&format!("flow/{}/scheduler", fc.name))).expect("validated");
    let mut blocking = Vec::new();
    if let Some(w) = wrapper {
        let ctx = pha_ctx.expect("validated: the wrapper has a train");
        let ops: Vec<Option<String>> = paths.iter().map(|p| ctx.path_operator.get(p).cloned()).collect();
        // True handover intervals per subflow (for the oracle and for blocking).
        let windows: Vec<Vec<(Time, Time)>> =
            ops.iter().map(|op| op.as_ref().and_then(|o| ctx.handovers.get(o)).cloned().unwrap_or_default()).collect();
        scheduler = match w {
            Wrapper::Pha => pha(scheduler, ctx.table.clone().expect("validated: PHA has a table"), ops),
            Wrapper::Oracle => Box::new(sched::Filtered::new("oracle", scheduler, move |conn: &sched::ConnView, views: &mut [sched::SubflowView]| {
                for v in views.iter_mut() {
                    let lead = v.srtt.max(NS_PER_MS);
                    if windows[v.id].iter().any(|&(s, e)| conn.now + lead >= s && conn.now < e) {
                        v.established = false;
                    }
                }
            })),
            Wrapper::Block => {
                blocking = windows.clone();
                Box::new(sched::Filtered::new("block", scheduler, move |conn: &sched::ConnView, views: &mut [sched::SubflowView]| {
                    for v in views.iter_mut() {
                        if windows[v.id].iter().any(|&(s, e)| conn.now >= s && conn.now < e) {
                            v.established = false;
                        }
                    }
                }))
            }
        };
    }
    let rcv_buf = conn_rcv_buf;
    let mp_prio = opts.mp_prio.iter().map(|e| (from_secs_f64(e.at_s), e.subflow, e.backup)).collect();
    let pha_d = opts.pha_d.as_ref().map(|cfg| {
        let ctx = pha_ctx.expect("validated: PHA-D has a table");
        let ops = paths.iter().map(|p| ctx.path_operator.get(p).cloned()).collect();
        PhaD::new(cfg.clone(), ctx.table.clone().expect("validated: PHA-D has a table"), ops, ctx.gps_period)
    });
    Conn::Mptcp {
        sender: MptcpSender::new(i, subs, scheduler, coupling, mss, rcv_buf),
        receiver: MptcpReceiver::new(rcvs, rcv_buf, opts.receiver_recovery),
        mp_prio,
        pha_d,
        blocking,
    }
}

/// Lazy timers: an event is current only if it fires at the time its owner last asked for; a
/// current one is consumed (the owner re-arms), a stale one is skipped.
fn take_if_current(scheduled_at: &mut Time, t: Time) -> bool {
    if *scheduled_at != t {
        return false;
    }
    *scheduled_at = NEVER;
    true
}

/// `orig` as the train changes it, if it follows an operator (`[hst] links`): each handover is
/// an outage with X2 forwarding of the held downlink packets (radio/effect.rs), and with
/// `radio.capacity = sinr` the downlink capacity follows the serving cell's SINR.
fn train_link(sc: &Scenario, train: Option<&TrainRun>, orig: &crate::link::LinkConfig) -> Option<crate::link::LinkConfig> {
    let (Some(h), Some(run)) = (&sc.file.hst, train) else { return None };
    let op = h.links.iter().position(|l| *l == orig.name)?;
    Some(crate::hst::scenario::train_link(orig, &run.handovers, op, &h.handover, run.capacity.as_ref().map(|c| c[op].as_slice())))
}

/// The scenario's links exactly as [`run`] builds them (the train's handovers and capacity
/// folded in), and the train's true handovers `(operator, start, end)`: what the emulator
/// needs to apply the same model to the real kernel.
pub fn effective_links(sc: &Scenario) -> (Vec<crate::link::LinkConfig>, Vec<(usize, Time, Time)>) {
    let end = from_secs_f64(sc.file.duration_s);
    let train = sc.file.hst.as_ref().map(|h| TrainRun::for_scenario(h, sc.seed, end, &sc.base_dir));
    let links = sc.file.links.iter().map(|l| train_link(sc, train.as_ref(), l).unwrap_or_else(|| l.clone())).collect();
    let handovers = train.map(|t| t.handovers.iter().map(|e| (e.operator, e.start, e.end)).collect()).unwrap_or_default();
    (links, handovers)
}

/// Runs a checked scenario to completion.
pub fn run(sc: &Scenario, mut progress: Option<&mut dyn FnMut(f64)>) -> RunOutput {
    let f = &sc.file;
    let rngs = RngStreams::new(sc.seed);
    let end = from_secs_f64(f.duration_s);
    let bin = from_ms_f64(f.output.bin_ms).max(NS_PER_MS / 1000);
    let n_bins = end.div_ceil(bin) as usize;

    // The train (P0): each handover of an operator is an outage of the link that follows it
    // (queued packets held), with X2 forwarding of the held downlink packets (radio/effect.rs);
    // with `radio.capacity = sinr` the link's downlink capacity follows the serving cell's SINR.
    let train = f.hst.as_ref().map(|h| TrainRun::for_scenario(h, sc.seed, end, &sc.base_dir));

    // Links: index 2i = forward direction, 2i+1 = reverse.
    let mut links = Vec::with_capacity(f.links.len() * 2);
    let mut link_index: HashMap<&str, u32> = HashMap::new();
    for orig in &f.links {
        let with_train = train_link(sc, train.as_ref(), orig);
        let l = with_train.as_ref().unwrap_or(orig);
        let (fwd, rev) = l
            .build(&sc.base_dir, rngs.stream(&format!("link/{}/forward", l.name)), rngs.stream(&format!("link/{}/reverse", l.name)))
            .expect("scenario was validated");
        link_index.insert(&orig.name, links.len() as u32);
        links.push(LinkSlot { dir: fwd, name: format!("{}.forward", l.name), wake_at: NEVER, pipe: VecDeque::new() });
        links.push(LinkSlot { dir: rev, name: format!("{}.reverse", l.name), wake_at: NEVER, pipe: VecDeque::new() });
    }
    let mut routes: Vec<Vec<u32>> = Vec::new();
    let mut path_routes: HashMap<&str, (u16, u16)> = HashMap::new();
    for p in &f.paths {
        let fwd: Vec<u32> = p.links.iter().map(|n| link_index[n.as_str()]).collect();
        let rev: Vec<u32> = fwd.iter().rev().map(|i| i + 1).collect();
        routes.push(fwd);
        routes.push(rev);
        path_routes.insert(&p.name, ((routes.len() - 2) as u16, (routes.len() - 1) as u16));
    }
    let pha_ctx = f.hst.as_ref().map(|h| {
        let table = h.load_table(&sc.base_dir).expect("validated").map(std::rc::Rc::new);
        let mut path_operator = HashMap::new();
        for p in &f.paths {
            if let Some(op) = h.links.iter().position(|l| p.links.contains(l)) {
                path_operator.insert(p.name.clone(), h.operator_name(op));
            }
        }
        let mut handovers: HashMap<String, Vec<(Time, Time)>> = HashMap::new();
        for e in train.as_ref().map(|t| t.handovers.as_slice()).unwrap_or(&[]) {
            handovers.entry(h.operator_name(e.operator)).or_default().push((e.start, e.end));
        }
        let gps_period = train.as_ref().map_or(from_ms_f64(h.train.gps.period_ms), |t| t.gps_period(h));
        PhaContext { table, handovers, gps_period, path_operator }
    });
    let mut flows = Vec::new();
    for (i, fc) in f.flows.iter().enumerate() {
        let names: Vec<&str> = match (&fc.path, &fc.paths) {
            (Some(p), _) => vec![p.as_str()],
            (None, Some(ps)) => ps.iter().map(|s| s.as_str()).collect(),
            _ => unreachable!("validated"),
        };
        let flow_routes: Vec<(u16, u16)> = names.iter().map(|n| path_routes[n]).collect();
        let n_sub = if fc.paths.is_some() { flow_routes.len() } else { 0 };
        let series = || SubflowSeries { delivered_seen: 0, goodput: Bins::new(bin, n_bins), sent: Bins::new(bin, n_bins), cwnd: Vec::new(), srtt_ms: Vec::new() };
        flows.push(Flow {
            name: fc.name.clone(),
            conn: build_conn(fc, i as u32, &rngs, pha_ctx.as_ref()),
            routes: flow_routes,
            traffic: fc.traffic.clone(),
            start: from_secs_f64(fc.start_s),
            stop: fc.stop_s.map(from_secs_f64).unwrap_or(NEVER),
            mss: fc.tcp.mss_bytes as u64,
            started: false,
            snd_timer_at: NEVER,
            rcv_timer_at: NEVER,
            goodput: Bins::new(bin, n_bins),
            sent: Bins::new(bin, n_bins),
            cwnd: Vec::with_capacity(n_bins),
            srtt_ms: Vec::with_capacity(n_bins),
            rto_ms: Vec::with_capacity(n_bins),
            ofo_bytes: Vec::with_capacity(n_bins),
            rcvbuf_bytes: Vec::with_capacity(n_bins),
            sub: (0..n_sub).map(|_| series()).collect(),
            app_next: 0,
            delivery_errors: 0,
            fct: None,
            last_delivery: None,
            stalls: Vec::new(),
        });
    }
    // Handover windows (metrics.md): the 1 s windows, aligned to whole seconds, that contain a
    // handover start.
    let handover_windows: Vec<(Time, Time)> = match &train {
        Some(t) => {
            let mut w: Vec<(Time, Time)> = t.handovers.iter().map(|e| (e.start / NS_PER_S * NS_PER_S, e.start / NS_PER_S * NS_PER_S + NS_PER_S)).collect();
            w.sort_unstable();
            w.dedup();
            w
        }
        None => vec![],
    };
    for fl in flows.iter_mut() {
        if let Conn::Mptcp { receiver, .. } = &mut fl.conn {
            receiver.set_handover_windows(handover_windows.clone());
        }
    }
    let n_links = links.len();
    let mut sim = Sim {
        now: 0,
        end,
        queue: EventQueue::new(),
        heads: vec![NO_HEAD; n_links],
        links,
        routes,
        flows,
        slab: Vec::with_capacity(4096),
        free: Vec::new(),
        out: Vec::with_capacity(64),
        spare: Vec::with_capacity(SPARE_BOXES),
        pkts: Vec::with_capacity(64),
        bin,
        n_bins,
        link_queue: vec![Vec::with_capacity(n_bins); n_links],
        train,
        handover_windows,
    };
    for (i, fl) in sim.flows.iter().enumerate() {
        sim.queue.push(fl.start, Ev::FlowStart(i as u32));
        if let Conn::Mptcp { mp_prio, pha_d, .. } = &fl.conn {
            for (k, &(t, _, _)) in mp_prio.iter().enumerate() {
                sim.queue.push(t, Ev::MpPrio(i as u32, k as u32));
            }
            if let Conn::Mptcp { blocking, .. } = &fl.conn {
                for (k, ws) in blocking.iter().enumerate() {
                    for &(s, _) in ws {
                        sim.queue.push(s, Ev::Block(i as u32, k as u32));
                    }
                }
            }
            if let (Some(_), Some(train)) = (pha_d, &sim.train) {
                if let Some(&(t, _)) = train.gps.first() {
                    sim.queue.push(t, Ev::Gps(i as u32, 0));
                }
            }
        }
    }
    sim.queue.push(bin.min(end), Ev::Bin);
    let warmup = from_secs_f64(f.output.warmup_s);
    let mut warm_snapshot: Option<Vec<Counters>> = if warmup == 0 { Some(sim.counters()) } else { None };
    let mut bins_done = 0usize;
    let progress_every = (n_bins / 200).max(1);

    while let Some((t, ev)) = sim.next_event() {
        if t > end {
            break;
        }
        if warm_snapshot.is_none() && t >= warmup {
            warm_snapshot = Some(sim.counters());
        }
        sim.now = t;
        match ev {
            Ev::PipeHead(l) => {
                let slot = &mut sim.links[l as usize];
                let Some((_, _, p)) = slot.pipe.pop_front() else { continue };
                sim.heads[l as usize] = slot.pipe.front().map_or(NO_HEAD, |&(t, seq, _)| (t, seq));
                sim.forward(p);
            }
            Ev::Arrive(idx) => {
                let p = sim.slab[idx as usize].take().expect("live packet");
                sim.free.push(idx);
                sim.forward(p);
            }
            Ev::LinkWake(l) => {
                if take_if_current(&mut sim.links[l as usize].wake_at, t) {
                    sim.wake_link(l);
                }
            }
            Ev::SenderTimer(fi) => {
                if take_if_current(&mut sim.flows[fi as usize].snd_timer_at, t) {
                    sim.sender_timer(fi);
                }
            }
            Ev::ReceiverTimer(fi) => {
                if take_if_current(&mut sim.flows[fi as usize].rcv_timer_at, t) {
                    sim.receiver_timer(fi);
                }
            }
            Ev::FlowStart(fi) => {
                sim.flows[fi as usize].started = true;
                sim.pump(fi);
            }
            Ev::MpPrio(fi, k) => sim.send_mp_prio(fi, k as usize),
            Ev::Gps(fi, k) => sim.pha_d_fix(fi, k as usize),
            Ev::Block(fi, k) => {
                // Park et al.: cwnd to (almost) zero when the handover is detected; one segment
                // keeps the subflow's ACK clock alive so it recovers by slow start afterwards.
                if let Conn::Mptcp { sender, .. } = &mut sim.flows[fi as usize].conn {
                    if let Some(sf) = sender.subflows.get_mut(k as usize) {
                        sf.tcp.tcb.cwnd = 1;
                        sf.tcp.tcb.cwnd_cnt = 0;
                    }
                }
            }
            Ev::Bin => {
                sim.sample();
                bins_done += 1;
                if let Some(cb) = progress.as_deref_mut() {
                    if bins_done % progress_every == 0 {
                        cb(to_secs_f64(t) / to_secs_f64(end));
                    }
                }
                let next = t + sim.bin;
                if next <= end {
                    sim.queue.push(next, Ev::Bin);
                }
            }
        }
    }
    sim.now = end;
    // Pad the last (partial) bin so every series has one value per bin.
    while sim.flows.first().is_some_and(|f| f.cwnd.len() < sim.n_bins) {
        sim.sample();
    }
    if let Some(cb) = progress.as_deref_mut() {
        cb(1.0);
    }
    let warm = warm_snapshot.unwrap_or_else(|| sim.counters());
    sim.finish(sc, warmup, &warm)
}

impl Sim {
    /// IP-level delivery gap (ms) of link direction `name` at the handover starting at `start`:
    /// its last departure before the detach to its first one after (arrivals differ by the
    /// same propagation delay). `None` without traffic on both sides.
    fn ip_gap_ms(&self, name: &str, start: Time) -> Option<f64> {
        let l = self.links.iter().find(|l| l.name == name)?;
        // Outage times went through seconds (f64): match within a microsecond.
        let g = l.dir.forwarding_gaps().iter().find(|g| g.start.abs_diff(start) <= 1_000)?;
        Some((g.first_after? - g.last_before?) as f64 / 1e6)
    }

    /// The next event: the earliest pipe head or the event queue's next, by (time, insertion
    /// number).
    fn next_event(&mut self) -> Option<(Time, Ev)> {
        let (mut best, mut key) = (0, NO_HEAD);
        for (l, &h) in self.heads.iter().enumerate() {
            if h < key {
                (best, key) = (l, h);
            }
        }
        if key != NO_HEAD && self.queue.peek_key().is_none_or(|q| key < q) {
            self.queue.note_popped();
            return Some((key.0, Ev::PipeHead(best as u32)));
        }
        self.queue.pop()
    }

    fn recycle(&mut self, p: Pkt) {
        if self.spare.len() < SPARE_BOXES {
            self.spare.push(p);
        }
    }

    fn alloc(&mut self, p: Pkt) -> u32 {
        if let Some(i) = self.free.pop() {
            self.slab[i as usize] = Some(p);
            i
        } else {
            self.slab.push(Some(p));
            (self.slab.len() - 1) as u32
        }
    }

    /// Moves a packet to its next hop, or hands it to its endpoint at the end of the route.
    fn forward(&mut self, mut p: Pkt) {
        let route = &self.routes[p.route as usize];
        if (p.hop as usize) < route.len() {
            let l = route[p.hop as usize];
            p.hop += 1;
            let now = self.now;
            let _ = self.links[l as usize].dir.enqueue(now, p);
            self.arm_link(l);
            return;
        }
        let fi = p.flow;
        match p.kind {
            PacketKind::Data | PacketKind::WindowProbe | PacketKind::Syn => self.to_receiver(fi, p),
            PacketKind::Ack | PacketKind::SynAck => self.to_sender(fi, p),
        }
    }

    fn to_sender(&mut self, fi: u32, p: Pkt) {
        let now = self.now;
        match &mut self.flows[fi as usize].conn {
            Conn::Tcp { sender, .. } => sender.on_ack(now, &p),
            Conn::Mptcp { sender, .. } => {
                let i = p.subflow as usize;
                if p.kind == PacketKind::SynAck {
                    sender.on_syn_ack(i, now, &p);
                } else {
                    sender.on_ack(i, now, &p);
                }
            }
        }
        self.recycle(p);
        self.pump(fi);
    }

    fn to_receiver(&mut self, fi: u32, p: Pkt) {
        let now = self.now;
        let mut pkts = std::mem::take(&mut self.pkts);
        let fl = &mut self.flows[fi as usize];
        match &mut fl.conn {
            Conn::Tcp { receiver, .. } => {
                let before = receiver.stats.bytes_delivered;
                let (range, ack) = receiver.on_segment(now, &p);
                let read = receiver.stats.bytes_delivered - before;
                if let Some(a) = ack {
                    pkts.push((0, a));
                }
                fl.goodput.add(now, read as f64);
                if let Some((s, e)) = range {
                    fl.note_delivery(now, s, e);
                }
            }
            Conn::Mptcp { receiver, .. } => {
                let i = p.subflow as usize;
                let before = receiver.data_rcv_nxt();
                let read = receiver.on_packet(i, now, &p, &mut pkts);
                let after = receiver.data_rcv_nxt();
                fl.goodput.add(now, read as f64);
                if read > 0 {
                    for (k, s) in fl.sub.iter_mut().enumerate() {
                        let b = receiver.stats.delivered_per_subflow[k];
                        if b > s.delivered_seen {
                            s.goodput.add(now, (b - s.delivered_seen) as f64);
                            s.delivered_seen = b;
                        }
                    }
                }
                if after > before {
                    fl.note_delivery(now, before, after);
                }
            }
        }
        self.recycle(p);
        for (i, a) in pkts.drain(..) {
            self.inject(fi, i, a, false);
        }
        self.pkts = pkts;
        self.arm_receiver(fi);
    }

    /// Puts a packet from an endpoint onto its subflow's route: data forward, ACKs reverse.
    fn inject(&mut self, fi: u32, subflow: usize, mut p: Packet, from_sender: bool) {
        let fl = &self.flows[fi as usize];
        let (fwd, rev) = fl.routes[subflow.min(fl.routes.len() - 1)];
        p.route = if from_sender { fwd } else { rev };
        p.hop = 0;
        p.flow = fi;
        p.subflow = subflow as u16;
        let b = match self.spare.pop() {
            Some(mut b) => {
                *b = p;
                b
            }
            None => Box::new(p),
        };
        self.forward(b);
    }

    fn wake_link(&mut self, l: u32) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.out);
        self.links[l as usize].dir.wake(now, &mut out);
        for (t, p) in out.drain(..) {
            let pipe = &mut self.links[l as usize].pipe;
            match pipe.back() {
                Some(&(last, _, _)) if t < last => {
                    // Overtakes packets already on the wire (reordering): an event of its own.
                    let idx = self.alloc(p);
                    self.queue.push(t, Ev::Arrive(idx));
                }
                _ => {
                    let seq = self.queue.reserve();
                    if pipe.is_empty() {
                        self.heads[l as usize] = (t, seq);
                    }
                    pipe.push_back((t, seq, p));
                }
            }
        }
        self.out = out;
        self.arm_link(l);
    }

    fn arm_link(&mut self, l: u32) {
        let slot = &mut self.links[l as usize];
        if let Some(t) = slot.dir.next_wakeup() {
            let t = t.max(self.now);
            if t < slot.wake_at {
                slot.wake_at = t;
                self.queue.push(t, Ev::LinkWake(l));
            }
        }
    }

    fn sender_timer(&mut self, fi: u32) {
        let now = self.now;
        let mut pkts = std::mem::take(&mut self.pkts);
        match &mut self.flows[fi as usize].conn {
            Conn::Tcp { sender, .. } => {
                if let Some(probe) = sender.on_timer(now) {
                    pkts.push((0, probe));
                }
            }
            Conn::Mptcp { sender, .. } => sender.on_timer(now, &mut pkts),
        }
        for (i, p) in pkts.drain(..) {
            self.inject(fi, i, p, true);
        }
        self.pkts = pkts;
        self.pump(fi);
    }

    fn receiver_timer(&mut self, fi: u32) {
        let now = self.now;
        let mut pkts = std::mem::take(&mut self.pkts);
        let fl = &mut self.flows[fi as usize];
        match &mut fl.conn {
            Conn::Tcp { receiver, .. } => {
                let before = receiver.stats.bytes_delivered;
                if let Some(a) = receiver.on_timer(now) {
                    pkts.push((0, a));
                }
                let read = receiver.stats.bytes_delivered - before;
                fl.goodput.add(now, read as f64);
            }
            Conn::Mptcp { receiver, .. } => receiver.on_timer(now, &mut pkts),
        }
        for (i, a) in pkts.drain(..) {
            self.inject(fi, i, a, false);
        }
        self.pkts = pkts;
        self.arm_receiver(fi);
    }

    /// Feeds GPS fix `k` to the flow's PHA-D controller and sends what it asks for.
    fn pha_d_fix(&mut self, fi: u32, k: usize) {
        let now = self.now;
        let Some(train) = &self.train else { return };
        let Some(&(_, pos)) = train.gps.get(k) else { return };
        let next = train.gps.get(k + 1).map(|&(t, _)| t);
        let Conn::Mptcp { receiver, pha_d: Some(ctl), .. } = &mut self.flows[fi as usize].conn else { return };
        let n = receiver.subflows.len();
        let rtt: Vec<Time> = (0..n).map(|i| receiver.rtt_estimate(i)).collect();
        let rx: Vec<u64> = receiver.subflows.iter().map(|s| s.stats.segments_received).collect();
        let mut acks = Vec::new();
        for (sub, backup) in ctl.on_fix(now, pos, &rtt, &rx) {
            if let Some(a) = receiver.request_mp_prio(sub, backup, now) {
                acks.push((sub, a));
            }
        }
        for (sub, a) in acks {
            self.inject(fi, sub, a, false);
        }
        if let Some(t) = next {
            self.queue.push(t, Ev::Gps(fi, (k + 1) as u32));
        }
    }

    fn send_mp_prio(&mut self, fi: u32, k: usize) {
        let now = self.now;
        let Conn::Mptcp { receiver, mp_prio, .. } = &mut self.flows[fi as usize].conn else { return };
        let (_, sub, backup) = mp_prio[k];
        if let Some(a) = receiver.request_mp_prio(sub, backup, now) {
            self.inject(fi, sub, a, false);
        }
    }

    /// Lets the application write, sends what the sender allows and re-arms its timer.
    fn pump(&mut self, fi: u32) {
        let now = self.now;
        let (limit, app_next) = self.flows[fi as usize].app_bytes(now);
        let mut pkts = std::mem::take(&mut self.pkts);
        let fl = &mut self.flows[fi as usize];
        match &mut fl.conn {
            Conn::Tcp { sender, .. } => {
                if limit > sender.app_limit() {
                    sender.set_app_limit(limit);
                }
                while let Some(p) = sender.poll_transmit(now) {
                    pkts.push((0, p));
                }
            }
            Conn::Mptcp { sender, .. } => {
                sender.set_app_limit(limit);
                sender.position_m = self.train.as_ref().and_then(|t| t.gps_at(now));
                sender.push_and_send(now, &mut pkts);
            }
        }
        for (i, p) in pkts.iter() {
            if p.kind == PacketKind::Data {
                fl.sent.add(now, p.wire_bytes() as f64);
                if let Some(s) = fl.sub.get_mut(*i) {
                    s.sent.add(now, p.wire_bytes() as f64);
                }
            }
        }
        for (i, p) in pkts.drain(..) {
            self.inject(fi, i, p, true);
        }
        self.pkts = pkts;
        let fl = &mut self.flows[fi as usize];
        let (mut t, waiting_for_app) = match &fl.conn {
            Conn::Tcp { sender, .. } => (sender.next_timeout(), sender.snd_nxt() >= sender.app_limit()),
            Conn::Mptcp { sender, .. } => (sender.next_timeout(), sender.next_dsn() >= sender.app_limit()),
        };
        if waiting_for_app || fl.app_limit() < limit {
            t = t.min(app_next);
        }
        if t < fl.snd_timer_at {
            let t = t.max(now);
            fl.snd_timer_at = t;
            self.queue.push(t, Ev::SenderTimer(fi));
        }
    }

    fn arm_receiver(&mut self, fi: u32) {
        let now = self.now;
        let fl = &mut self.flows[fi as usize];
        let t = match &fl.conn {
            Conn::Tcp { receiver, .. } => receiver.next_timeout(now),
            Conn::Mptcp { receiver, .. } => receiver.next_timeout(now),
        };
        if t < fl.rcv_timer_at {
            let t = t.max(now);
            fl.rcv_timer_at = t;
            self.queue.push(t, Ev::ReceiverTimer(fi));
        }
    }

    fn sample(&mut self) {
        for fl in &mut self.flows {
            if fl.cwnd.len() >= self.n_bins {
                continue;
            }
            match &fl.conn {
                Conn::Tcp { sender, receiver } => {
                    fl.cwnd.push(sender.tcb.cwnd as f64);
                    fl.srtt_ms.push(sender.rtt.srtt as f64 / 1e6);
                    fl.rto_ms.push(sender.rto() as f64 / 1e6);
                    fl.ofo_bytes.push(receiver.ofo_bytes() as f64);
                    fl.rcvbuf_bytes.push(receiver.buffered() as f64);
                }
                Conn::Mptcp { sender, receiver, .. } => {
                    let total: u32 = sender.subflows.iter().map(|s| s.tcp.tcb.cwnd).sum();
                    fl.cwnd.push(total as f64);
                    let srtt = sender.subflows.iter().map(|s| s.tcp.rtt.srtt).min().unwrap_or(0);
                    fl.srtt_ms.push(srtt as f64 / 1e6);
                    fl.rto_ms.push(sender.subflows.iter().map(|s| s.tcp.rto()).max().unwrap_or(0) as f64 / 1e6);
                    fl.ofo_bytes.push(receiver.ofo_bytes() as f64);
                    fl.rcvbuf_bytes.push(receiver.buffered() as f64);
                    for (k, s) in sender.subflows.iter().enumerate() {
                        fl.sub[k].cwnd.push(s.tcp.tcb.cwnd as f64);
                        fl.sub[k].srtt_ms.push(s.tcp.rtt.srtt as f64 / 1e6);
                    }
                }
            }
        }
        for (i, l) in self.links.iter().enumerate() {
            if self.link_queue[i].len() < self.n_bins {
                self.link_queue[i].push(l.dir.queue_packets() as f64);
            }
        }
    }

    /// (bytes delivered, bytes sent) per flow, for the warm-up cut.
    fn counters(&self) -> Vec<Counters> {
        self.flows
            .iter()
            .map(|f| match &f.conn {
                Conn::Tcp { sender, receiver } => Counters {
                    delivered: receiver.stats.bytes_delivered,
                    sent: sender.stats.bytes_sent,
                    subflows: Vec::new(),
                },
                Conn::Mptcp { sender, receiver, .. } => Counters {
                    delivered: receiver.stats.bytes_delivered,
                    sent: sender.subflows.iter().map(|s| s.tcp.stats.bytes_sent).sum(),
                    subflows: sender
                        .subflows
                        .iter()
                        .enumerate()
                        .map(|(k, s)| (receiver.stats.delivered_per_subflow.get(k).copied().unwrap_or(0), s.tcp.stats.bytes_sent))
                        .collect(),
                },
            })
            .collect()
    }

    fn finish(mut self, sc: &Scenario, warmup: Time, warm: &[Counters]) -> RunOutput {
        let end = self.end;
        let bin_s = to_secs_f64(self.bin);
        let mut table = LongTable::default();
        let mut flows_json = Map::new();
        let counters = self.counters();
        for (i, fl) in self.flows.iter_mut().enumerate() {
            let from = warmup.max(fl.start);
            let until = match fl.fct {
                Some(fct) => fl.start + fct,
                None => end,
            };
            let window_s = to_secs_f64(until.saturating_sub(from)).max(1e-9);
            let (delivered, sent) = (counters[i].delivered, counters[i].sent);
            let mut m = Map::new();
            m.insert("goodput_mbps".into(), json!(round6((delivered - warm[i].delivered.min(delivered)) as f64 * 8.0 / window_s / 1e6)));
            m.insert("throughput_mbps".into(), json!(round6((sent - warm[i].sent.min(sent)) as f64 * 8.0 / window_s / 1e6)));
            m.insert("bytes_delivered".into(), json!(delivered));
            m.insert("bytes_sent".into(), json!(sent));
            m.insert("fct_s".into(), json!(fl.fct.map(|t| round6(to_secs_f64(t)))));
            m.insert("delivery_errors".into(), json!(fl.delivery_errors));
            match &mut fl.conn {
                Conn::Tcp { sender, receiver } => {
                    receiver.finish(end);
                    let s = &sender.stats;
                    let r = &receiver.stats;
                    let ratio = if s.segments_sent > 0 { s.segments_retransmitted as f64 / s.segments_sent as f64 } else { 0.0 };
                    let active_s = to_secs_f64(end.saturating_sub(fl.start)).max(1e-9);
                    m.insert("protocol".into(), json!("tcp"));
                    m.insert("cc".into(), json!(sender.cc_name()));
                    m.insert("segments_sent".into(), json!(s.segments_sent));
                    m.insert("segments_retransmitted".into(), json!(s.segments_retransmitted));
                    m.insert("retransmission_ratio".into(), json!(round6(ratio)));
                    m.insert("timeouts".into(), json!(s.timeouts));
                    m.insert("fast_retransmits".into(), json!(s.fast_retransmits));
                    m.insert("window_probes".into(), json!(s.window_probes));
                    m.insert("mean_rtt_ms".into(), json!(sender.rtt.mean_rtt().map(|x| round6(x / 1e6))));
                    m.insert("min_rtt_ms".into(), json!(sender.rtt.has_sample().then(|| round6(sender.rtt.min_rtt as f64 / 1e6))));
                    m.insert("ofo_mean_bytes".into(), json!(round6(r.ofo_byte_ns / (active_s * 1e9))));
                    m.insert("ofo_max_bytes".into(), json!(r.max_ofo_bytes));
                    m.insert("duplicate_segments".into(), json!(r.duplicate_segments));
                    m.insert("final_cwnd_segments".into(), json!(sender.tcb.cwnd));
                }
                Conn::Mptcp { sender, receiver, pha_d, .. } => {
                    let (ofo_mean, buf_mean) = receiver.finish(end, fl.start);
                    let segs: u64 = sender.subflows.iter().map(|s| s.tcp.stats.segments_sent).sum();
                    let retx: u64 = sender.subflows.iter().map(|s| s.tcp.stats.segments_retransmitted).sum();
                    let reinj = sender.stats.reinjections + sender.stats.opportunistic_retransmissions + sender.stats.retx_requests_served;
                    let ratio = if segs > 0 { (retx + reinj) as f64 / segs as f64 } else { 0.0 };
                    m.insert("protocol".into(), json!("mptcp"));
                    m.insert("cc".into(), json!(sc.file.flows[i].cc));
                    m.insert("scheduler".into(), json!(sender.scheduler_name()));
                    m.insert("segments_sent".into(), json!(segs));
                    m.insert("segments_retransmitted".into(), json!(retx + reinj));
                    m.insert("retransmission_ratio".into(), json!(round6(ratio)));
                    m.insert("reinjections".into(), json!(sender.stats.reinjections));
                    m.insert("connection_timeouts".into(), json!(sender.stats.conn_timeouts));
                    m.insert("opportunistic_retransmissions".into(), json!(sender.stats.opportunistic_retransmissions));
                    m.insert("penalisations".into(), json!(sender.stats.penalisations));
                    m.insert("scheduler_waits".into(), json!(sender.stats.waits));
                    m.insert("retransmission_requests".into(), json!(receiver.stats.retx_requests));
                    m.insert("timeouts".into(), json!(sender.subflows.iter().map(|s| s.tcp.stats.timeouts).sum::<u64>()));
                    m.insert("fast_retransmits".into(), json!(sender.subflows.iter().map(|s| s.tcp.stats.fast_retransmits).sum::<u64>()));
                    m.insert("ofo_mean_bytes".into(), json!(round6(ofo_mean)));
                    m.insert("ofo_p95_bytes".into(), json!(round6(receiver.ofo_hist.quantile(0.95))));
                    m.insert("rcvbuf_mean_bytes".into(), json!(round6(buf_mean)));
                    m.insert("rcvbuf_p95_bytes".into(), json!(round6(receiver.buf_hist.quantile(0.95))));
                    m.insert("hol_delay_mean_ms".into(), json!(round6(receiver.hol.mean() * 1e3)));
                    m.insert("hol_delay_p95_ms".into(), json!(round6(receiver.hol.quantile(0.95) * 1e3)));
                    m.insert("hol_delay_p99_ms".into(), json!(round6(receiver.hol.quantile(0.99) * 1e3)));
                    m.insert("loss_recovery_count".into(), json!(receiver.recovery_hist.total_weight() as u64));
                    m.insert("loss_recovery_mean_ms".into(), json!(round6(receiver.recovery_hist.mean() * 1e3)));
                    m.insert("loss_recovery_p95_ms".into(), json!(round6(receiver.recovery_hist.quantile(0.95) * 1e3)));
                    m.insert("loss_recovery_from_detection_mean_ms".into(), json!(round6(receiver.recovery_detect_hist.mean() * 1e3)));
                    m.insert("loss_recovery_from_detection_p95_ms".into(), json!(round6(receiver.recovery_detect_hist.quantile(0.95) * 1e3)));
                    m.insert("duplicate_bytes".into(), json!(receiver.stats.duplicate_bytes));
                    if !self.handover_windows.is_empty() {
                        let (inside, outside) = window_goodput(&fl.goodput, self.bin, &self.handover_windows, fl.start, end);
                        m.insert("handover_goodput_mbps".into(), json!(round6(inside)));
                        m.insert("non_handover_goodput_mbps".into(), json!(round6(outside)));
                        for (k, tag) in [(1usize, "in_handover"), (0usize, "outside_handover")] {
                            m.insert(format!("hol_delay_{tag}_mean_ms"), json!(round6(receiver.hol_split[k].mean() * 1e3)));
                            m.insert(format!("hol_delay_{tag}_p99_ms"), json!(round6(receiver.hol_split[k].quantile(0.99) * 1e3)));
                            m.insert(format!("ofo_{tag}_mean_bytes"), json!(round6(receiver.ofo_split[k].mean())));
                        }
                    }
                    m.insert("mp_prio_sent".into(), json!(receiver.stats.mp_prio_sent));
                    m.insert("mp_prio_received".into(), json!(sender.stats.mp_prio_received));
                    if let Some(ctl) = pha_d {
                        let log: Vec<Value> = ctl
                            .log
                            .iter()
                            .map(|p| json!({"t_s": round6(to_secs_f64(p.at)), "subflow": p.subflow, "backup": p.backup, "predicted_lead_ms": round6(p.predicted_lead_ns as f64 / 1e6), "rtt_ms": round6(p.rtt as f64 / 1e6)}))
                            .collect();
                        m.insert("pha_d_mp_prio".into(), Value::Array(log));
                    }
                    let mut subs = Vec::new();
                    for (k, s) in sender.subflows.iter().enumerate() {
                        let st = &s.tcp.stats;
                        let g = receiver.stats.delivered_per_subflow[k];
                        // Over the same window as the flow: minus what was counted by the end of the warm-up.
                        let (g0, s0) = warm[i].subflows.get(k).copied().unwrap_or((0, 0));
                        subs.push(json!({
                            "goodput_mbps": round6((g - g0.min(g)) as f64 * 8.0 / window_s / 1e6),
                            "throughput_mbps": round6((st.bytes_sent - s0.min(st.bytes_sent)) as f64 * 8.0 / window_s / 1e6),
                            "bytes_delivered": g,
                            "segments_sent": st.segments_sent,
                            "segments_retransmitted": st.segments_retransmitted,
                            "timeouts": st.timeouts,
                            "fast_retransmits": st.fast_retransmits,
                            "reinjected_from": s.reinjected_segments,
                            "loss_recovery_count": receiver.recovery_by_subflow[k].total_weight() as u64,
                            "loss_recovery_mean_ms": round6(receiver.recovery_by_subflow[k].mean() * 1e3),
                            "loss_recovery_p95_ms": round6(receiver.recovery_by_subflow[k].quantile(0.95) * 1e3),
                            "loss_recovery_from_detection_mean_ms": round6(receiver.recovery_detect_by_subflow[k].mean() * 1e3),
                            "loss_recovery_from_detection_p95_ms": round6(receiver.recovery_detect_by_subflow[k].quantile(0.95) * 1e3),
                            "scheduler_decisions": s.decisions,
                            "mean_rtt_ms": s.tcp.rtt.mean_rtt().map(|x| round6(x / 1e6)),
                            "established": s.established,
                            "stale_at_end": s.stale,
                            "backup_at_end": s.local_backup || s.peer_backup,
                        }));
                        let name = format!("{}/{}", fl.name, k);
                        table.push_series(bin_s, "subflow", &name, "goodput_mbps", &fl.sub[k].goodput.as_mbps());
                        table.push_series(bin_s, "subflow", &name, "throughput_mbps", &fl.sub[k].sent.as_mbps());
                        table.push_series(bin_s, "subflow", &name, "cwnd_segments", &fl.sub[k].cwnd);
                        table.push_series(bin_s, "subflow", &name, "srtt_ms", &fl.sub[k].srtt_ms);
                    }
                    m.insert("subflows".into(), Value::Array(subs));
                }
            }
            flows_json.insert(fl.name.clone(), Value::Object(m));
            table.push_series(bin_s, "flow", &fl.name, "goodput_mbps", &fl.goodput.as_mbps());
            table.push_series(bin_s, "flow", &fl.name, "throughput_mbps", &fl.sent.as_mbps());
            table.push_series(bin_s, "flow", &fl.name, "cwnd_segments", &fl.cwnd);
            table.push_series(bin_s, "flow", &fl.name, "srtt_ms", &fl.srtt_ms);
            table.push_series(bin_s, "flow", &fl.name, "rto_ms", &fl.rto_ms);
            table.push_series(bin_s, "flow", &fl.name, "ofo_bytes", &fl.ofo_bytes);
            table.push_series(bin_s, "flow", &fl.name, "rcvbuf_bytes", &fl.rcvbuf_bytes);
        }
        let mut links_json = Map::new();
        for (i, l) in self.links.iter().enumerate() {
            let st = l.dir.stats();
            links_json.insert(
                l.name.clone(),
                json!({
                    "drops": st.drops_queue + st.drops_loss + st.drops_outage + st.drops_forwarding,
                    "drops_queue": st.drops_queue,
                    "drops_loss": st.drops_loss,
                    "drops_outage": st.drops_outage,
                    "drops_forwarding": st.drops_forwarding,
                    "forwarded": st.forwarded,
                    "packets_delivered": st.delivered_packets,
                    "max_queue_packets": st.max_queue_packets,
                }),
            );
            table.push_series(bin_s, "link", &l.name, "queue_packets", &self.link_queue[i]);
        }
        let handovers: Vec<Value> = match (&self.train, &sc.file.hst) {
            (Some(t), Some(h)) => t
                .handovers
                .iter()
                .map(|e| {
                    let mut j = json!({
                        "operator": h.operator_name(e.operator),
                        "start_s": round6(to_secs_f64(e.start)),
                        "end_s": round6(to_secs_f64(e.end)),
                        "position_m": round6(e.position_m),
                        "from_cell": e.from_cell,
                        "to_cell": e.to_cell,
                    });
                    let fwd_end = e.end + from_ms_f64(h.handover.forwarding_delay_ms);
                    if let Some(ms) = h.links.get(e.operator).and_then(|l| self.ip_gap_ms(&format!("{l}.forward"), e.start)) {
                        j["ip_gap_ms"] = json!(round6(ms));
                    }
                    let app: Map<String, Value> = self
                        .flows
                        .iter()
                        .filter_map(|fl| stall_over(&fl.stalls, e.start, fwd_end).map(|ms| (fl.name.clone(), json!(round6(ms)))))
                        .collect();
                    j["app_gap_ms"] = Value::Object(app);
                    j
                })
                .collect(),
            _ => vec![],
        };
        let summary = json!({
            "handovers": handovers,
            "scenario": sc.file.name.clone().unwrap_or_else(|| sc.source_name.clone()),
            "seed": sc.seed,
            "duration_s": sc.file.duration_s,
            "warmup_s": sc.file.output.warmup_s,
            "bin_ms": sc.file.output.bin_ms,
            "flows": flows_json,
            "links": links_json,
            "events": self.queue.popped(),
        });
        let mut resolved = serde_json::to_value(&sc.file).expect("scenario serialises");
        resolved["seed"] = json!(sc.seed);
        RunOutput { summary, resolved_scenario: resolved, timeseries: table.finish(), events: self.queue.popped() }
    }
}

/// The longest application-level delivery gap (ms) among `stalls` that overlaps `[a, b]`.
fn stall_over(stalls: &[(Time, Time)], a: Time, b: Time) -> Option<f64> {
    let i = stalls.partition_point(|&(_, to)| to < a);
    stalls[i..].iter().take_while(|&&(from, _)| from <= b).map(|&(from, to)| (to - from) as f64 / 1e6).reduce(f64::max)
}

/// Instantaneous throughput during handovers (metrics.md): the mean over handover windows of the
/// goodput in each window, and the same over the other whole-second windows after `start`.
/// Windows are 1 s, aligned to whole seconds; bins are attributed by their start time.
fn window_goodput(goodput: &Bins, bin: Time, windows: &[(Time, Time)], start: Time, end: Time) -> (f64, f64) {
    let secs = (end / NS_PER_S) as usize;
    let mut per_second = vec![0.0; secs];
    for (i, b) in goodput.values.iter().enumerate() {
        let s = (i as u64 * bin / NS_PER_S) as usize;
        if s < secs {
            per_second[s] += b;
        }
    }
    let first = start.div_ceil(NS_PER_S) as usize;
    let (mut inside, mut n_in, mut outside, mut n_out) = (0.0, 0usize, 0.0, 0usize);
    for (s, bytes) in per_second.iter().enumerate().skip(first) {
        let t = s as u64 * NS_PER_S;
        let mbps = bytes * 8.0 / 1e6;
        if windows.iter().any(|&(ws, _)| ws == t) {
            inside += mbps;
            n_in += 1;
        } else {
            outside += mbps;
            n_out += 1;
        }
    }
    (if n_in > 0 { inside / n_in as f64 } else { 0.0 }, if n_out > 0 { outside / n_out as f64 } else { 0.0 })
}

/// What a flow has delivered and sent so far (the warm-up snapshot and the end of the run):
/// bytes delivered in order to the application, bytes sent; per subflow (MPTCP) the bytes
/// delivered that came over it and the bytes it sent.
#[derive(Clone, Debug, Default)]
struct Counters {
    delivered: u64,
    sent: u64,
    subflows: Vec<(u64, u64)>,
}
