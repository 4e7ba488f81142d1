//! The end of a run: the summary (flows, links, elements, report sections) and the time series.
use super::flow::Flow;
use super::world::Sim;
use crate::core::time::{to_secs_f64, Time, NS_PER_S};
use crate::endpoint::Counters;
use crate::metrics::{round6, Bins, LongTable, RunOutput};
use crate::plan::Plan;
use serde_json::{json, Map, Value};

/// What report sections may read of a finished run.
pub trait RunView {
    /// IP-level delivery gap (ms) of link direction `name` (`<link>.forward`) at the outage
    /// with forwarding that starts at `start`: its last departure before the start to its first
    /// one after. `None` without traffic on both sides.
    fn ip_gap_ms(&self, name: &str, start: Time) -> Option<f64>;
    /// Each flow's application-level delivery stalls `[from, to)`.
    fn flow_stalls(&self) -> Vec<(&str, &[(Time, Time)])>;
}

/// A top-level part of the summary contributed by a model outside the generic core (the
/// train's `handovers`, later P3's handoffs or P4's cell).
pub trait Section {
    fn name(&self) -> &str;
    fn render(&self, view: &dyn RunView) -> Value;
    /// Another summary key beside the section (e.g. the totals of a list cut short).
    fn extra(&self) -> Option<(&'static str, Value)> {
        None
    }
}

impl RunView for Sim {
    fn ip_gap_ms(&self, name: &str, start: Time) -> Option<f64> {
        let l = self.links.iter().find(|l| l.name == name)?;
        // Outage times went through seconds (f64): match within a microsecond.
        let g = l
            .dir
            .forwarding_gaps()
            .iter()
            .find(|g| g.start.abs_diff(start) <= 1_000)?;
        Some((g.first_after? - g.last_before?) as f64 / 1e6)
    }

    fn flow_stalls(&self) -> Vec<(&str, &[(Time, Time)])> {
        self.flows
            .iter()
            .map(|f| (f.name.as_str(), f.stalls.as_slice()))
            .collect()
    }
}

/// Extra summary fields per flow from drivers (e.g. PHA-D's MP_PRIO log).
pub(crate) type FlowExtras = Vec<Vec<(String, Value)>>;

/// Builds the run's output. `warm` holds each flow's counters at the end of the warm-up;
/// `windows` are the metric split windows (P0's handover windows), `sections` the extra
/// top-level parts.
pub(crate) fn finish(
    mut sim: Sim,
    plan: &Plan,
    warm: &[Counters],
    windows: &[(Time, Time)],
    extras: FlowExtras,
    sections: &[&dyn Section],
    partial: Option<Time>,
) -> RunOutput {
    let end = sim.end;
    let bin_s = to_secs_f64(sim.bin);
    let mut table = LongTable::default();
    let mut flows_json = Map::new();
    let counters: Vec<Counters> = sim.flows.iter().map(Flow::counters).collect();
    for (i, (fl, extra)) in sim.flows.iter_mut().zip(extras).enumerate() {
        let from = plan.warmup.max(fl.start);
        let until = match fl.fct {
            Some(fct) => fl.start + fct,
            None => end,
        };
        let window_s = to_secs_f64(until.saturating_sub(from)).max(1e-9);
        let (delivered, sent) = (counters[i].delivered, counters[i].sent);
        let mut m = Map::new();
        m.insert(
            "goodput_mbps".into(),
            json!(round6(
                (delivered - warm[i].delivered.min(delivered)) as f64 * 8.0 / window_s / 1e6
            )),
        );
        m.insert(
            "throughput_mbps".into(),
            json!(round6((sent - warm[i].sent.min(sent)) as f64 * 8.0 / window_s / 1e6)),
        );
        m.insert("bytes_delivered".into(), json!(delivered));
        m.insert("bytes_sent".into(), json!(sent));
        m.insert("fct_s".into(), json!(fl.fct.map(|t| round6(to_secs_f64(t)))));
        m.insert("delivery_errors".into(), json!(fl.delivery_errors));
        let snd = fl.sender.summary(end, fl.start);
        let rcv = fl.receiver.summary(end, fl.start);
        m.extend(snd.fields);
        m.extend(rcv.fields);
        let is_multipath = !snd.subflows.is_empty();
        if is_multipath && !windows.is_empty() {
            let (inside, outside) = window_goodput(&fl.goodput, sim.bin, windows, fl.start, end);
            m.insert("handover_goodput_mbps".into(), json!(round6(inside)));
            m.insert("non_handover_goodput_mbps".into(), json!(round6(outside)));
        }
        m.extend(extra);
        if let Some(h) = fl.app_delay.as_ref().filter(|h| h.total_weight() > 0.0) {
            m.insert("app_delay_mean_ms".into(), json!(round6(h.mean() * 1e3)));
            m.insert("app_delay_p99_ms".into(), json!(round6(h.quantile(0.99) * 1e3)));
        }
        if let Some((inn, buffer)) = fl.relay_from {
            let n = fl.relay_buffer_n.max(1) as f64;
            m.insert("relay_from".into(), json!(plan.flows[inn as usize].name));
            m.insert("relay_buffer_bytes".into(), json!(buffer));
            m.insert("relay_buffer_max_bytes".into(), json!(fl.relay_buffer_max));
            m.insert("relay_buffer_mean_bytes".into(), json!(round6(fl.relay_buffer_sum / n)));
        }
        if is_multipath {
            let mut subs = Vec::new();
            for (k, (mut s, r)) in snd.subflows.into_iter().zip(rcv.subflows).enumerate() {
                let (g, st) = counters[i].subflows.get(k).copied().unwrap_or((0, 0));
                // Over the same window as the flow: minus what was counted by the end of the warm-up.
                let (g0, s0) = warm[i].subflows.get(k).copied().unwrap_or((0, 0));
                s.insert(
                    "goodput_mbps".into(),
                    json!(round6((g - g0.min(g)) as f64 * 8.0 / window_s / 1e6)),
                );
                s.insert(
                    "throughput_mbps".into(),
                    json!(round6((st - s0.min(st)) as f64 * 8.0 / window_s / 1e6)),
                );
                s.extend(r);
                s.insert("path".into(), json!(fl.subflow_names[k]));
                subs.push(Value::Object(s));
                if !fl.keep_series {
                    continue;
                }
                let name = format!("{}/{}", fl.name, fl.subflow_names[k]);
                let ss = &fl.sub[k];
                table.push_series(bin_s, "subflow", &name, "goodput_mbps", &ss.goodput.as_mbps());
                table.push_series(bin_s, "subflow", &name, "throughput_mbps", &ss.sent.as_mbps());
                table.push_series(bin_s, "subflow", &name, "cwnd_segments", &ss.cwnd);
                table.push_series(bin_s, "subflow", &name, "srtt_ms", &ss.srtt_ms);
            }
            m.insert("subflows".into(), Value::Array(subs));
        }
        flows_json.insert(fl.name.clone(), Value::Object(m));
        if !fl.keep_series {
            continue;
        }
        table.push_series(bin_s, "flow", &fl.name, "goodput_mbps", &fl.goodput.as_mbps());
        table.push_series(bin_s, "flow", &fl.name, "throughput_mbps", &fl.sent.as_mbps());
        table.push_series(bin_s, "flow", &fl.name, "cwnd_segments", &fl.cwnd);
        table.push_series(bin_s, "flow", &fl.name, "srtt_ms", &fl.srtt_ms);
        table.push_series(bin_s, "flow", &fl.name, "rto_ms", &fl.rto_ms);
        table.push_series(bin_s, "flow", &fl.name, "ofo_bytes", &fl.ofo_bytes);
        table.push_series(bin_s, "flow", &fl.name, "rcvbuf_bytes", &fl.rcvbuf_bytes);
        table.push_series(bin_s, "flow", &fl.name, "acks_per_s", &fl.acks_per_s);
        if fl.relay_from.is_some() {
            table.push_series(bin_s, "flow", &fl.name, "relay_buffer_bytes", &fl.relay_buffer);
        }
    }
    let mut links_json = Map::new();
    for (i, l) in sim.links.iter().enumerate() {
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
        if sim.keep_links {
            table.push_series(bin_s, "link", &l.name, "queue_packets", &sim.link_queue[i]);
        }
    }
    if plan.series.total {
        let (g, s) = (sim.total_goodput.as_mbps(), sim.total_sent.as_mbps());
        table.push_series(bin_s, "total", "flows", "goodput_mbps", &g);
        table.push_series(bin_s, "total", "flows", "throughput_mbps", &s);
    }
    let events = sim.queue.popped();
    let mut summary = json!({
        // The schema keeps a `handovers` list in every summary (empty without a train).
        "handovers": [],
        "scenario": plan.scenario_name,
        "seed": plan.seed,
        "duration_s": plan.duration_s,
        "warmup_s": plan.warmup_s,
        "bin_ms": plan.bin_ms,
        "flows": flows_json,
        "links": links_json,
        "events": events,
    });
    if !sim.elements.is_empty() {
        let el: Map<String, Value> = sim
            .elements
            .iter()
            .map(|e| {
                let mut v = e.element.summary();
                v["dropped"] = json!(e.dropped);
                (e.node.clone(), v)
            })
            .collect();
        summary["elements"] = Value::Object(el);
    }
    for s in sections {
        summary[s.name()] = s.render(&sim);
        if let Some((k, v)) = s.extra() {
            summary[k] = v;
        }
    }
    if let Some(t) = partial {
        summary["partial"] = json!({ "stopped_at_s": round6(to_secs_f64(t)) });
    }
    RunOutput {
        summary,
        resolved_scenario: plan.resolved.clone(),
        timeseries: table.finish(),
        events,
        seed_matters: plan.seed_matters(),
    }
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
    (
        if n_in > 0 { inside / n_in as f64 } else { 0.0 },
        if n_out > 0 { outside / n_out as f64 } else { 0.0 },
    )
}
