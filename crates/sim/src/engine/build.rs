//! Plan → a ready-to-run `Sim`: link directions with their random streams, routes through
//! links and elements, the flows' endpoints, the drivers, and the report sections. This is the
//! one place where the generic engine meets the models that plug into it (the train's PHA-D
//! driver and handover report).
use super::drivers::{Blocking, Driver, MpPrioSchedule};
use super::flow::Flow;
use super::world::{ElementSlot, LinkSlot, Sim, ELEMENT_HOP, NO_HEAD};
use crate::core::time::NEVER;
use crate::core::{EventQueue, RngStreams, Tournament};
use crate::element::{ElementContext, RouteInfo};
use crate::endpoint;
use crate::handoff::driver::HandoffDriver;
use crate::handoff::HandoffScheme;
use crate::hst::phad::{PhaD, PhaDDriver};
use crate::plan::{Hop, Plan, Transport};
use std::collections::VecDeque;

pub(crate) fn build(plan: &Plan) -> Sim {
    let rngs = RngStreams::new(plan.seed);
    // Link directions: index 2i = forward direction of link i, 2i + 1 = reverse.
    let mut links = Vec::with_capacity(plan.links.len() * 2);
    for spec in &plan.links {
        let name = &spec.name;
        let (mut fwd, mut rev) = spec.build(&rngs);
        // The train's radio outside handovers (hst/harq.rs), on the links that follow an operator.
        if let Some(h) = plan
            .train
            .as_ref()
            .filter(|t| t.links.contains(name))
            .and_then(|t| t.harq.as_ref())
        {
            fwd.set_retransmission(h.process(rngs.stream(&format!("hst/harq/{name}/forward"))));
            rev.set_retransmission(h.process(rngs.stream(&format!("hst/harq/{name}/reverse"))));
        }
        links.push(LinkSlot {
            dir: fwd,
            name: format!("{name}.forward"),
            wake_at: NEVER,
            tapped: false,
            pipe: VecDeque::new(),
        });
        links.push(LinkSlot {
            dir: rev,
            name: format!("{name}.reverse"),
            wake_at: NEVER,
            tapped: false,
            pipe: VecDeque::new(),
        });
    }
    // Routes come in pairs per path: 2p = data direction, 2p + 1 = its reverse.
    let mut routes: Vec<Vec<u32>> = Vec::with_capacity(plan.paths.len() * 2);
    let mut route_reverse = Vec::with_capacity(plan.paths.len() * 2);
    for p in &plan.paths {
        let hop = |h: &Hop, reverse: bool| match *h {
            Hop::Link(i) => (2 * i + usize::from(reverse)) as u32,
            Hop::Element(e) => ELEMENT_HOP | e as u32,
        };
        routes.push(p.hops.iter().map(|h| hop(h, false)).collect());
        routes.push(p.hops.iter().rev().map(|h| hop(h, true)).collect());
        route_reverse.extend([false, true]);
    }
    let elements = plan
        .elements
        .iter()
        .enumerate()
        .map(|(e, (node, spec))| ElementSlot {
            node: node.clone(),
            element: spec.build(&element_context(plan, e)),
            wake_at: NEVER,
            dropped: 0,
        })
        .collect();
    let windows = plan.train.as_ref().map_or(&[][..], |t| t.windows.as_slice());
    let mut flows = Vec::with_capacity(plan.flows.len());
    let mut drivers: Vec<Option<Box<dyn Driver>>> = Vec::new();
    for (i, fp) in plan.flows.iter().enumerate() {
        let path_ids: Vec<usize> = match &fp.transport {
            Transport::Tcp { path } => vec![*path],
            Transport::Mptcp(m) => m.paths.clone(),
        };
        let flow_routes = path_ids.iter().map(|&p| ((2 * p) as u16, (2 * p + 1) as u16)).collect();
        let subflow_names = match &fp.transport {
            Transport::Mptcp(_) => {
                let mut names: Vec<String> = Vec::with_capacity(path_ids.len());
                for &p in &path_ids {
                    let base = &plan.paths[p].name;
                    let seen = names
                        .iter()
                        .filter(|n| *n == base || n.starts_with(&format!("{base}#")))
                        .count();
                    names.push(if seen == 0 {
                        base.clone()
                    } else {
                        format!("{base}#{}", seen + 1)
                    });
                }
                names
            }
            Transport::Tcp { .. } => Vec::new(),
        };
        let ends = endpoint::build(fp, i as u32, &rngs, windows);
        flows.push(Flow::new(
            fp.name.clone(),
            ends,
            flow_routes,
            subflow_names,
            fp.traffic.clone(),
            fp.start,
            fp.stop,
            fp.mss as u64,
            plan.bin,
            plan.n_bins,
            // The train's handover-window goodput reads the flow's goodput per bin.
            (plan.series.flows[i], plan.train.is_some()),
        ));
        if let Transport::Mptcp(m) = &fp.transport {
            if !m.mp_prio.is_empty() {
                drivers.push(Some(Box::new(MpPrioSchedule {
                    flow: i,
                    events: m.mp_prio.clone(),
                })));
            }
            if m.blocking.iter().any(|w| !w.is_empty()) {
                drivers.push(Some(Box::new(Blocking {
                    flow: i,
                    windows: m.blocking.clone(),
                })));
            }
            if let Some(p) = &m.pha_d {
                let ctl = PhaD::new(p.cfg.clone(), p.table.clone(), p.operators.clone(), p.gps_period);
                drivers.push(Some(Box::new(PhaDDriver {
                    flow: i,
                    ctl,
                    fixes: p.fixes.clone(),
                })));
            }
        }
        if let Some(h) = fp
            .handoff
            .as_ref()
            .filter(|h| h.scheme != HandoffScheme::None && !h.intervals.is_empty())
        {
            drivers.push(Some(Box::new(HandoffDriver {
                flow: i,
                plan: h.clone(),
            })));
        }
    }
    // Relays (P2): the output flow reads its input's receiver, at most `buffer` bytes ahead of
    // what it has had acknowledged.
    for (i, fp) in plan.flows.iter().enumerate() {
        flows[i].fct_bytes = fp.fct_bytes;
        if let Some(r) = fp.relay {
            flows[i].relay_from = Some((r.from as u32, r.buffer));
            flows[r.from].feeds = Some(i as u32);
            flows[r.from].receiver.init_read_limit(r.buffer);
        }
    }
    let n_links = links.len();
    let flows_len = flows.len() as u32;
    let total_bins = || {
        if plan.series.total {
            crate::metrics::Bins::new(plan.bin, plan.n_bins)
        } else {
            crate::metrics::Bins::off(plan.bin)
        }
    };
    Sim {
        now: 0,
        end: plan.duration,
        queue: EventQueue::new(),
        heads: Tournament::new(n_links, NO_HEAD),
        links,
        routes,
        route_reverse,
        elements,
        flows,
        drivers,
        slab: Vec::with_capacity(4096),
        free: Vec::new(),
        out: Vec::with_capacity(64),
        outbox: Default::default(),
        bin: plan.bin,
        n_bins: plan.n_bins,
        link_queue: vec![Vec::with_capacity(if plan.series.links { plan.n_bins } else { 0 }); n_links],
        keep_links: plan.series.links,
        sampled: 0,
        sampled_flows: (0..flows_len)
            .filter(|&i| plan.series.flows[i as usize] || plan.flows[i as usize].relay.is_some())
            .collect(),
        total_goodput: total_bins(),
        total_sent: total_bins(),
        capture: None,
    }
}

/// What element `e` knows of its surroundings: its name and index, the run's seed, every route
/// (so a cell knows which UE and direction a packet belongs to), the flow names, and the handoffs
/// of the links next to its node on any path.
fn element_context(plan: &Plan, e: usize) -> ElementContext {
    let mut adjacent = Vec::new();
    for p in &plan.paths {
        for (k, h) in p.hops.iter().enumerate() {
            if *h == Hop::Element(e) {
                for n in [k.checked_sub(1), Some(k + 1)].into_iter().flatten() {
                    if let Some(Hop::Link(l)) = p.hops.get(n) {
                        adjacent.push(*l);
                    }
                }
            }
        }
    }
    let mut handoffs: Vec<_> = plan
        .handoffs
        .iter()
        .filter(|h| adjacent.contains(&h.link))
        .flat_map(|h| h.intervals.iter().copied())
        .collect();
    handoffs.sort_unstable();
    handoffs.dedup();
    let hop = |h: &Hop| match *h {
        Hop::Link(_) => None,
        Hop::Element(e) => Some(e),
    };
    // Routes come in pairs per path: 2p = data direction, 2p + 1 = its reverse (as `build`).
    let routes = plan
        .paths
        .iter()
        .flat_map(|p| {
            [
                RouteInfo {
                    path: p.name.clone(),
                    reverse: false,
                    from: p.from.clone(),
                    to: p.to.clone(),
                    hops: p.hops.iter().map(hop).collect(),
                },
                RouteInfo {
                    path: p.name.clone(),
                    reverse: true,
                    from: p.to.clone(),
                    to: p.from.clone(),
                    hops: p.hops.iter().rev().map(hop).collect(),
                },
            ]
        })
        .collect();
    ElementContext {
        name: plan.elements[e].0.clone(),
        index: e,
        seed: plan.seed,
        routes,
        flows: plan.flows.iter().map(|f| f.name.clone()).collect(),
        handoffs,
    }
}
