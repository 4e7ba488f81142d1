//! The event loop: owns virtual time, moves packets between endpoints and links, fires timers
//! and records metrics.
//!
//! Endpoints and links never read a clock; every call passes `now`. Timers are scheduled
//! lazily: each component has at most one pending wake-up event that is still current
//! (`*_at` fields); stale events are recognised by their time and skipped, and early wake-ups
//! are harmless because every handler re-checks its own deadlines.
use crate::api::RunOutput;
use crate::core::time::{from_ms_f64, from_secs_f64, to_secs_f64, Time, NEVER, NS_PER_MS};
use crate::core::{EventQueue, RngStreams};
use crate::link::LinkDir;
use crate::metrics::{round6, Bins, LongTable};
use crate::packet::{Packet, PacketKind};
use crate::scenario::{Scenario, Traffic};
use crate::tcp::cc;
use crate::tcp::receiver::{ReceiverConfig, TcpReceiver};
use crate::tcp::sender::{SenderConfig, TcpSender};
use serde_json::{json, Map, Value};
use std::collections::HashMap;

#[derive(Clone, Copy, Debug)]
enum Ev {
    LinkWake(u32),
    Arrive(u32),
    SenderTimer(u32),
    ReceiverTimer(u32),
    FlowStart(u32),
    Bin,
}

struct LinkSlot {
    dir: LinkDir,
    name: String,
    wake_at: Time,
}

struct Flow {
    name: String,
    sender: TcpSender,
    receiver: TcpReceiver,
    fwd_route: u16,
    rev_route: u16,
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
    app_next: u64,
    delivery_errors: u64,
    fct: Option<Time>,
}

impl Flow {
    /// Bytes the application has written by `now` and when it writes more (NEVER if not).
    fn app_bytes(&self, now: Time) -> (u64, Time) {
        if !self.started {
            return (0, NEVER);
        }
        let until = now.min(self.stop);
        match &self.traffic {
            Traffic::Bulk => (if now < self.stop { u64::MAX } else { self.sender.snd_nxt() }, NEVER),
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
}

struct Sim {
    now: Time,
    end: Time,
    queue: EventQueue<Ev>,
    links: Vec<LinkSlot>,
    routes: Vec<Vec<u32>>,
    flows: Vec<Flow>,
    slab: Vec<Option<Packet>>,
    free: Vec<u32>,
    out: Vec<(Time, Packet)>,
    bin: Time,
    n_bins: usize,
    link_queue: Vec<Vec<f64>>,
}

/// Runs a checked scenario to completion.
pub fn run(sc: &Scenario, mut progress: Option<&mut dyn FnMut(f64)>) -> RunOutput {
    let f = &sc.file;
    let rngs = RngStreams::new(sc.seed);
    let end = from_secs_f64(f.duration_s);
    let bin = from_ms_f64(f.output.bin_ms).max(NS_PER_MS / 1000);
    let n_bins = end.div_ceil(bin) as usize;

    // Links: index 2i = forward direction, 2i+1 = reverse.
    let mut links = Vec::with_capacity(f.links.len() * 2);
    let mut link_index: HashMap<&str, u32> = HashMap::new();
    for l in &f.links {
        let (fwd, rev) = l
            .build(&sc.base_dir, rngs.stream(&format!("link/{}/forward", l.name)), rngs.stream(&format!("link/{}/reverse", l.name)))
            .expect("scenario was validated");
        link_index.insert(&l.name, links.len() as u32);
        links.push(LinkSlot { dir: fwd, name: format!("{}.forward", l.name), wake_at: NEVER });
        links.push(LinkSlot { dir: rev, name: format!("{}.reverse", l.name), wake_at: NEVER });
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
    let mut flows = Vec::new();
    for (i, fc) in f.flows.iter().enumerate() {
        let t = &fc.tcp;
        let scfg = SenderConfig {
            mss: t.mss_bytes,
            initial_cwnd: t.initial_cwnd,
            sack: t.sack,
            rto_style: t.rto_style,
            min_rto: from_ms_f64(t.min_rto_ms),
            initial_rto: from_ms_f64(t.initial_rto_ms),
            slow_start_after_idle: t.slow_start_after_idle,
        };
        let r = &fc.receiver;
        let rcfg = ReceiverConfig {
            sack: t.sack,
            delayed_ack: r.delayed_ack,
            delack_timeout: from_ms_f64(r.delack_ms),
            rcv_buf: r.rcv_buf_bytes,
            read_pauses: r
                .read_pauses
                .iter()
                .map(|p| (from_secs_f64(p.start_s), from_secs_f64(p.start_s + p.duration_s)))
                .collect(),
        };
        let algo = cc::by_name_seeded(&fc.cc, rngs.seed_for(&format!("flow/{}/cc", fc.name))).expect("validated");
        let (fwd_route, rev_route) = path_routes[fc.path.as_str()];
        flows.push(Flow {
            name: fc.name.clone(),
            sender: TcpSender::new(scfg, algo, i as u32, 0),
            receiver: TcpReceiver::new(rcfg, i as u32, 0),
            fwd_route,
            rev_route,
            traffic: fc.traffic.clone(),
            start: from_secs_f64(fc.start_s),
            stop: fc.stop_s.map(from_secs_f64).unwrap_or(NEVER),
            mss: t.mss_bytes as u64,
            started: false,
            snd_timer_at: NEVER,
            rcv_timer_at: NEVER,
            goodput: Bins::new(bin, n_bins),
            sent: Bins::new(bin, n_bins),
            cwnd: Vec::with_capacity(n_bins),
            srtt_ms: Vec::with_capacity(n_bins),
            rto_ms: Vec::with_capacity(n_bins),
            ofo_bytes: Vec::with_capacity(n_bins),
            app_next: 0,
            delivery_errors: 0,
            fct: None,
        });
    }
    let n_links = links.len();
    let mut sim = Sim {
        now: 0,
        end,
        queue: EventQueue::new(),
        links,
        routes,
        flows,
        slab: Vec::with_capacity(4096),
        free: Vec::new(),
        out: Vec::with_capacity(64),
        bin,
        n_bins,
        link_queue: vec![Vec::with_capacity(n_bins); n_links],
    };
    for (i, fl) in sim.flows.iter().enumerate() {
        sim.queue.push(fl.start, Ev::FlowStart(i as u32));
    }
    sim.queue.push(bin.min(end), Ev::Bin);
    let warmup = from_secs_f64(f.output.warmup_s);
    let mut warm_snapshot: Option<Vec<(u64, u64, u64)>> = if warmup == 0 { Some(sim.counters()) } else { None };
    let mut bins_done = 0usize;
    let progress_every = (n_bins / 200).max(1);

    while let Some((t, ev)) = sim.queue.pop() {
        if t > end {
            break;
        }
        if warm_snapshot.is_none() && t >= warmup {
            sim.now = warmup;
            warm_snapshot = Some(sim.counters());
        }
        sim.now = t;
        match ev {
            Ev::Arrive(idx) => {
                let p = sim.slab[idx as usize].take().expect("live packet");
                sim.free.push(idx);
                sim.forward(p);
            }
            Ev::LinkWake(l) => {
                let slot = &mut sim.links[l as usize];
                if slot.wake_at != t {
                    continue;
                }
                slot.wake_at = NEVER;
                sim.wake_link(l);
            }
            Ev::SenderTimer(fi) => {
                let fl = &mut sim.flows[fi as usize];
                if fl.snd_timer_at != t {
                    continue;
                }
                fl.snd_timer_at = NEVER;
                if let Some(probe) = fl.sender.on_timer(t) {
                    sim.inject(fi, probe, true);
                }
                sim.pump(fi);
            }
            Ev::ReceiverTimer(fi) => {
                let fl = &mut sim.flows[fi as usize];
                if fl.rcv_timer_at != t {
                    continue;
                }
                fl.rcv_timer_at = NEVER;
                let before = fl.receiver.stats.bytes_delivered;
                let ack = fl.receiver.on_timer(t);
                let read = fl.receiver.stats.bytes_delivered - before;
                fl.goodput.add(t, read as f64);
                if let Some(a) = ack {
                    sim.inject(fi, a, false);
                }
                sim.arm_receiver(fi);
            }
            Ev::FlowStart(fi) => {
                sim.flows[fi as usize].started = true;
                sim.pump(fi);
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
    fn alloc(&mut self, p: Packet) -> u32 {
        if let Some(i) = self.free.pop() {
            self.slab[i as usize] = Some(p);
            i
        } else {
            self.slab.push(Some(p));
            (self.slab.len() - 1) as u32
        }
    }

    /// Moves a packet to its next hop, or hands it to its endpoint at the end of the route.
    fn forward(&mut self, mut p: Packet) {
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
            PacketKind::Data | PacketKind::WindowProbe => self.to_receiver(fi, p),
            PacketKind::Ack => {
                let now = self.now;
                self.flows[fi as usize].sender.on_ack(now, &p);
                self.pump(fi);
            }
        }
    }

    fn to_receiver(&mut self, fi: u32, p: Packet) {
        let now = self.now;
        let fl = &mut self.flows[fi as usize];
        let before = fl.receiver.stats.bytes_delivered;
        let (range, ack) = fl.receiver.on_segment(now, &p);
        if let Some((s, e)) = range {
            // Exactly-once, in-order check against what the application has seen so far.
            if s != fl.app_next || e <= s {
                fl.delivery_errors += 1;
            }
            fl.app_next = e;
            if let Traffic::File { bytes } = fl.traffic {
                if e >= bytes && fl.fct.is_none() {
                    fl.fct = Some(now - fl.start);
                }
            }
        }
        let read = fl.receiver.stats.bytes_delivered - before;
        fl.goodput.add(now, read as f64);
        if let Some(a) = ack {
            self.inject(fi, a, false);
        }
        self.arm_receiver(fi);
    }

    /// Puts a packet from an endpoint onto its route: data/probes forward, ACKs reverse.
    fn inject(&mut self, fi: u32, mut p: Packet, from_sender: bool) {
        let fl = &self.flows[fi as usize];
        p.route = if from_sender { fl.fwd_route } else { fl.rev_route };
        p.hop = 0;
        self.forward(p);
    }

    fn wake_link(&mut self, l: u32) {
        let now = self.now;
        let mut out = std::mem::take(&mut self.out);
        self.links[l as usize].dir.wake(now, &mut out);
        for (t, p) in out.drain(..) {
            let idx = self.alloc(p);
            self.queue.push(t, Ev::Arrive(idx));
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

    /// Lets the application write, sends what the sender allows and re-arms its timer.
    fn pump(&mut self, fi: u32) {
        let now = self.now;
        let (limit, app_next) = self.flows[fi as usize].app_bytes(now);
        {
            let fl = &mut self.flows[fi as usize];
            if limit > fl.sender.app_limit() {
                fl.sender.set_app_limit(limit);
            }
        }
        loop {
            let fl = &mut self.flows[fi as usize];
            let Some(p) = fl.sender.poll_transmit(now) else { break };
            fl.sent.add(now, p.wire_bytes() as f64);
            self.inject(fi, p, true);
        }
        let fl = &mut self.flows[fi as usize];
        let mut t = fl.sender.next_timeout();
        if fl.sender.snd_nxt() >= fl.sender.app_limit() {
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
        let t = fl.receiver.next_timeout(now);
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
            fl.cwnd.push(fl.sender.tcb.cwnd as f64);
            fl.srtt_ms.push(fl.sender.rtt.srtt as f64 / 1e6);
            fl.rto_ms.push(fl.sender.rto() as f64 / 1e6);
            fl.ofo_bytes.push(fl.receiver.ofo_bytes() as f64);
        }
        for (i, l) in self.links.iter().enumerate() {
            if self.link_queue[i].len() < self.n_bins {
                self.link_queue[i].push(l.dir.queue_packets() as f64);
            }
        }
    }

    /// (bytes delivered, segments sent, bytes sent) per flow, for the warm-up cut.
    fn counters(&self) -> Vec<(u64, u64, u64)> {
        self.flows
            .iter()
            .map(|f| (f.receiver.stats.bytes_delivered, f.sender.stats.segments_sent, f.sender.stats.bytes_sent))
            .collect()
    }

    fn finish(mut self, sc: &Scenario, warmup: Time, warm: &[(u64, u64, u64)]) -> RunOutput {
        let end = self.end;
        let bin_s = to_secs_f64(self.bin);
        let mut table = LongTable::default();
        let mut flows_json = Map::new();
        for (i, fl) in self.flows.iter_mut().enumerate() {
            fl.receiver.finish(end);
            let s = &fl.sender.stats;
            let r = &fl.receiver.stats;
            let from = warmup.max(fl.start);
            let until = match fl.fct {
                Some(fct) => fl.start + fct,
                None => end,
            };
            let window_s = to_secs_f64(until.saturating_sub(from)).max(1e-9);
            let delivered_in_window = r.bytes_delivered - warm[i].0.min(r.bytes_delivered);
            let ratio = if s.segments_sent > 0 { s.segments_retransmitted as f64 / s.segments_sent as f64 } else { 0.0 };
            let mean_rtt = fl.sender.rtt.mean_rtt().map(|x| round6(x / 1e6));
            let active_s = to_secs_f64(end.saturating_sub(fl.start)).max(1e-9);
            let mut m = Map::new();
            m.insert("cc".into(), json!(fl.sender.cc_name()));
            m.insert("goodput_mbps".into(), json!(round6(delivered_in_window as f64 * 8.0 / window_s / 1e6)));
            m.insert("throughput_mbps".into(), json!(round6((s.bytes_sent - warm[i].2.min(s.bytes_sent)) as f64 * 8.0 / window_s / 1e6)));
            m.insert("bytes_delivered".into(), json!(r.bytes_delivered));
            m.insert("bytes_sent".into(), json!(s.bytes_sent));
            m.insert("segments_sent".into(), json!(s.segments_sent));
            m.insert("segments_retransmitted".into(), json!(s.segments_retransmitted));
            m.insert("retransmission_ratio".into(), json!(round6(ratio)));
            m.insert("timeouts".into(), json!(s.timeouts));
            m.insert("fast_retransmits".into(), json!(s.fast_retransmits));
            m.insert("window_probes".into(), json!(s.window_probes));
            m.insert("mean_rtt_ms".into(), json!(mean_rtt));
            m.insert("min_rtt_ms".into(), json!(fl.sender.rtt.has_sample().then(|| round6(fl.sender.rtt.min_rtt as f64 / 1e6))));
            m.insert("fct_s".into(), json!(fl.fct.map(|t| round6(to_secs_f64(t)))));
            m.insert("ofo_mean_bytes".into(), json!(round6(r.ofo_byte_ns / (active_s * 1e9))));
            m.insert("ofo_max_bytes".into(), json!(r.max_ofo_bytes));
            m.insert("duplicate_segments".into(), json!(r.duplicate_segments));
            m.insert("delivery_errors".into(), json!(fl.delivery_errors));
            m.insert("final_cwnd_segments".into(), json!(fl.sender.tcb.cwnd));
            flows_json.insert(fl.name.clone(), Value::Object(m));

            table.push_series(bin_s, "flow", &fl.name, "goodput_mbps", &fl.goodput.as_mbps());
            table.push_series(bin_s, "flow", &fl.name, "throughput_mbps", &fl.sent.as_mbps());
            table.push_series(bin_s, "flow", &fl.name, "cwnd_segments", &fl.cwnd);
            table.push_series(bin_s, "flow", &fl.name, "srtt_ms", &fl.srtt_ms);
            table.push_series(bin_s, "flow", &fl.name, "rto_ms", &fl.rto_ms);
            table.push_series(bin_s, "flow", &fl.name, "ofo_bytes", &fl.ofo_bytes);
        }
        let mut links_json = Map::new();
        for (i, l) in self.links.iter().enumerate() {
            let st = l.dir.stats();
            links_json.insert(
                l.name.clone(),
                json!({
                    "drops": st.drops_queue + st.drops_loss + st.drops_outage,
                    "drops_queue": st.drops_queue,
                    "drops_loss": st.drops_loss,
                    "drops_outage": st.drops_outage,
                    "packets_delivered": st.delivered_packets,
                    "max_queue_packets": st.max_queue_packets,
                }),
            );
            table.push_series(bin_s, "link", &l.name, "queue_packets", &self.link_queue[i]);
        }
        let summary = json!({
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
