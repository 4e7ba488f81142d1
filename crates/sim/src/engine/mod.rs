//! The engine: runs a [`Plan`] to completion (design: ARCHITECTURE.md at the repository root).
//!
//! - [`build`]: plan → links, routes, elements, endpoints, drivers;
//! - `world` (crate-private): the event loop proper (time, packets along routes, timers);
//! - `flow` (crate-private): each flow's application and time series;
//! - [`drivers`]: scheduled outside actions;
//! - [`report`]: the summary and the time series at the end.
pub mod build;
pub mod drivers;
pub(crate) mod flow;
pub mod report;
pub mod timer;
pub(crate) mod world;

use crate::capture::Capture;
use crate::core::time::to_secs_f64;
use crate::endpoint::Counters;
use crate::handoff::report::HandoffSection;
use crate::hst::report::HandoverSection;
use crate::metrics::RunOutput;
use crate::plan::Plan;
use report::Section;
use world::Ev;

/// Progress callback: called with the fraction of simulated time done, a few hundred times per
/// run and at least every [`PROGRESS_EVENTS`] events (a few ms of wall time), so a caller can stop a
/// long run promptly; returning `false` stops the run there (the output is then marked `partial`).
pub type Progress<'a> = &'a mut dyn FnMut(f64) -> bool;

/// Events between two progress calls at most (2^16: a few milliseconds of wall time).
pub const PROGRESS_EVENTS: u64 = 1 << 16;

/// Runs a plan to its end (or until `progress` asks to stop).
pub fn run(plan: &Plan, progress: Option<Progress<'_>>) -> RunOutput {
    run_with_capture(plan, progress, None)
}

/// [`run`], with packet captures of the link directions `capture` taps; the summary then has
/// a `pcap` section (`crate::capture`).
pub fn run_with_capture(plan: &Plan, mut progress: Option<Progress<'_>>, capture: Option<Capture>) -> RunOutput {
    let mut sim = build::build(plan);
    if let Some(c) = capture {
        for (d, slot) in sim.links.iter_mut().enumerate() {
            if c.taps(d) {
                slot.tapped = true;
                slot.dir.keep_drops();
            }
        }
        sim.capture = Some(Box::new(c));
    }
    let end = plan.duration;
    for i in 0..sim.flows.len() {
        sim.queue.push(sim.flows[i].start, Ev::FlowStart(i as u32));
        for d in 0..sim.drivers.len() {
            let mut drv = sim.drivers[d].take().expect("drivers are in place between events");
            if drv.flow() == i {
                let mut q = drivers::Schedule::default();
                drv.start(&mut q);
                sim.queue_driver(d, q);
            }
            sim.drivers[d] = Some(drv);
        }
    }
    sim.queue.push(plan.bin.min(end), Ev::Bin);
    let counters = |sim: &world::Sim| -> Vec<Counters> { sim.flows.iter().map(flow::Flow::counters).collect() };
    let mut warm_snapshot: Option<Vec<Counters>> = if plan.warmup == 0 { Some(counters(&sim)) } else { None };
    let mut bins_done = 0usize;
    let progress_every = (plan.n_bins / 200).max(1);
    let mut stopped = None;
    let mut next_check = PROGRESS_EVENTS;

    while let Some((t, ev)) = sim.next_event() {
        if t > end {
            break;
        }
        if sim.queue.popped() >= next_check {
            next_check = sim.queue.popped() + PROGRESS_EVENTS;
            if let Some(cb) = progress.as_deref_mut() {
                if !cb(to_secs_f64(t) / to_secs_f64(end)) {
                    stopped = Some(t);
                    break;
                }
            }
        }
        if warm_snapshot.is_none() && t >= plan.warmup {
            warm_snapshot = Some(counters(&sim));
        }
        sim.now = t;
        if let Ev::Bin = ev {
            sim.sample();
            bins_done += 1;
            if let Some(cb) = progress.as_deref_mut() {
                if bins_done.is_multiple_of(progress_every) && !cb(to_secs_f64(t) / to_secs_f64(end)) {
                    stopped = Some(t);
                    break;
                }
            }
            let next = t + sim.bin;
            if next <= end {
                sim.queue.push(next, Ev::Bin);
            }
        } else {
            sim.handle(t, ev);
        }
    }
    if let Some(t) = stopped {
        // Stopped early: the results cover [0, t); the series end with the last whole bin.
        sim.end = t;
        sim.n_bins = bins_done;
        sim.sampled = sim.sampled.min(bins_done);
        for v in [&mut sim.total_goodput.values, &mut sim.total_sent.values] {
            v.truncate(bins_done);
        }
        for f in &mut sim.flows {
            f.truncate_series(bins_done);
        }
        for q in &mut sim.link_queue {
            q.truncate(bins_done);
        }
    }
    sim.now = sim.end;
    // Pad the last (partial) bin so every series has one value per bin.
    while !sim.flows.is_empty() && sim.sampled < sim.n_bins {
        sim.sample();
    }
    if stopped.is_none() {
        if let Some(cb) = progress {
            cb(1.0);
        }
    }
    let warm = warm_snapshot.unwrap_or_else(|| counters(&sim));
    let extras = flow_extras(&sim);
    let windows = plan.train.as_ref().map(|t| t.windows.clone()).unwrap_or_default();
    let handovers = plan.train.as_ref().map(HandoverSection);
    let handoffs = (!plan.handoffs.is_empty()).then(|| HandoffSection(&plan.handoffs));
    let sections: Vec<&dyn Section> = handovers
        .iter()
        .map(|s| s as &dyn Section)
        .chain(handoffs.iter().map(|s| s as &dyn Section))
        .collect();
    sim.capture_in_flight();
    let pcap = sim.capture.take().map(|c| c.finish());
    let mut out = report::finish(sim, plan, &warm, &windows, extras, &sections, stopped);
    if let Some(v) = pcap {
        out.summary["pcap"] = v;
    }
    out
}

/// Per flow, the summary fields its drivers add.
fn flow_extras(sim: &world::Sim) -> report::FlowExtras {
    let mut extras = vec![Vec::new(); sim.flows.len()];
    for d in sim.drivers.iter().flatten() {
        extras[d.flow()].extend(d.flow_summary());
    }
    extras
}
