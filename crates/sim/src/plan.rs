//! The typed, resolved plan of one run: what the engine executes, built once from a checked
//! scenario and a seed.
//!
//! Everything is in simulation units (integer-ns [`Time`], bytes), every name is resolved to an
//! index or an enum ([`CcKind`], [`SchedulerConfig`] checked against the scheduler registry,
//! [`WrapperPlan`] instead of a `pha(...)` prefix), traces are parsed ([`LinkSpec`]), and the
//! train's run for this seed (handovers, GPS fixes, capacity) is computed and folded into the
//! links it drives. Nothing downstream re-validates or re-parses: the engine
//! ([`crate::engine`]), the emulator's link set ([`crate::api::effective_links_json`]) and the Python layer
//! (`_core.plan()`) all read this.
use crate::core::time::{from_ms_f64, from_secs_f64, Time, NEVER, NS_PER_MS, NS_PER_S};
use crate::element::ElementSpec;
use crate::error::{ConfigError, Errors};
use crate::handoff::{FlowHandoffPlan, HandoffPattern, HandoffPlan, HandoffPredict, HandoffScheme};
use crate::hst::phad::PhaDConfig;
use crate::hst::scenario::{train_link, TrainRun};
use crate::hst::table::HandoverTable;
use crate::hst::wrappers::{split_wrapper, Wrapper, WrapperPlan};
use crate::link::config::{LinkConfig, LinkSpec};
use crate::mptcp::sched::SchedulerConfig;
use crate::scenario::{FlowConfig, Scenario, Traffic};
use crate::tcp::bsd_timer::TimerProfile;
use crate::tcp::cc::CcKind;
use crate::tcp::receiver::ReceiverConfig;
use crate::tcp::sender::SenderConfig;
use std::collections::HashMap;
use std::path::Path;
use std::rc::Rc;

/// One run, resolved.
pub struct Plan {
    /// The scenario's `name`, or its file name.
    pub scenario_name: String,
    pub seed: u64,
    pub duration: Time,
    /// Time-series bin width and count (bins aligned to t = 0, the last one possibly partial).
    pub bin: Time,
    pub n_bins: usize,
    pub warmup: Time,
    /// `duration_s`, `output.warmup_s` and `output.bin_ms` as written (for the summary).
    pub duration_s: f64,
    pub warmup_s: f64,
    pub bin_ms: f64,
    /// Links with the train's handovers and capacity folded in (in scenario order).
    pub links: Vec<LinkSpec>,
    /// Elements, one per node that has one: (node name, element).
    pub elements: Vec<(String, ElementSpec)>,
    pub paths: Vec<PathPlan>,
    pub flows: Vec<FlowPlan>,
    /// The train (P0), if the scenario has one.
    pub train: Option<TrainPlan>,
    /// Handoffs of mobile hosts behind radio links (P3), one entry per link that has them.
    pub handoffs: Vec<HandoffPlan>,
    /// The scenario with every default filled in and the run's seed (for provenance).
    pub resolved: serde_json::Value,
    /// Packet captures asked for in `[output]` (`crate::capture`; off by default).
    pub capture: crate::capture::CaptureSpec,
    /// Which time series the run keeps (`[output] series`, resolved for these flows).
    pub series: crate::metrics::select::SeriesPlan,
}

/// A path: its hops in the data direction (ACKs take them in reverse).
#[derive(Clone, Debug)]
pub struct PathPlan {
    pub name: String,
    pub hops: Vec<Hop>,
    /// The nodes where its data enters and leaves (a cell's UE, for paths through a cell).
    pub from: String,
    pub to: String,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hop {
    /// Index into [`Plan::links`].
    Link(usize),
    /// Index into [`Plan::elements`].
    Element(usize),
}

/// A connection and its application.
pub struct FlowPlan {
    pub name: String,
    pub cc: CcKind,
    pub traffic: Traffic,
    pub start: Time,
    /// When the application stops writing (`NEVER`: it does not).
    pub stop: Time,
    pub mss: u32,
    pub sender: SenderConfig,
    /// The receiver (for MPTCP: each subflow's, before the connection-level window is applied).
    pub receiver: ReceiverConfig,
    pub transport: Transport,
    /// The mobile host's handoff scheme and the handoffs on the flow's path (P3).
    pub handoff: Option<FlowHandoffPlan>,
    /// `traffic = { kind = "relay" }`: the flow it relays and the relay's buffer (P2).
    pub relay: Option<RelayPlan>,
    /// Bytes after which the flow is complete (its file, or the file at the head of its relay
    /// chain), for the completion time.
    pub fct_bytes: Option<u64>,
}

/// A split-connection relay between flow `from` (whose receiver it reads) and this flow (whose
/// sender it writes).
#[derive(Clone, Copy, Debug)]
pub struct RelayPlan {
    pub from: usize,
    pub buffer: u64,
}

// One per flow, built once before the run: its size costs nothing worth a box.
#[allow(clippy::large_enum_variant)]
pub enum Transport {
    /// Single-path TCP over one path (index into [`Plan::paths`]).
    Tcp {
        path: usize,
    },
    Mptcp(MptcpPlan),
}

/// An MPTCP connection's subflows and options.
pub struct MptcpPlan {
    /// One subflow per path, in this order (index into [`Plan::paths`]); subflow 0 is the initial one.
    pub paths: Vec<usize>,
    /// The scheduler (checked against the registry).
    pub scheduler: SchedulerConfig,
    /// A handover-aware wrapper around it.
    pub wrapper: Option<WrapperPlan>,
    /// Connection-level receive buffer, bytes.
    pub rcv_buf: u64,
    /// When the additional subflows start their join handshakes.
    pub join_at: Time,
    /// MP_JOIN B flag per subflow.
    pub backup: Vec<bool>,
    /// P1's receiver-based loss recovery.
    pub receiver_recovery: bool,
    /// MP_PRIO the receiver sends: (time, subflow, backup).
    pub mp_prio: Vec<(Time, usize, bool)>,
    /// PHA-D on the receiver side.
    pub pha_d: Option<PhaDPlan>,
    /// Subflow blocking (Park et al.): per subflow, the handover intervals at whose start its cwnd
    /// collapses (empty unless the wrapper is `block`).
    pub blocking: Vec<Vec<(Time, Time)>>,
}

/// PHA-D (P0): the receiver marks subflows backup around predicted handovers.
pub struct PhaDPlan {
    pub cfg: PhaDConfig,
    pub table: Rc<HandoverTable>,
    /// Each subflow's operator (`None`: not on a train link).
    pub operators: Vec<Option<String>>,
    pub gps_period: Time,
    /// The GPS fixes the controller receives: (time, metres along the track).
    pub fixes: Rc<[(Time, f64)]>,
}

/// The train of a scenario for this run (P0).
pub struct TrainPlan {
    pub run: TrainRun,
    /// Operator names, in `radio.operators` order.
    pub operators: Vec<String>,
    /// `hst.links`: the link that follows each operator.
    pub links: Vec<String>,
    /// X2 forwarding delay after each interruption (for the application-level gap).
    pub forwarding_delay: Time,
    /// The handover windows (metrics.md): the 1 s windows, aligned to whole seconds, that contain
    /// a handover start, sorted.
    pub windows: Vec<(Time, Time)>,
    /// `[hst.harq]`: HARQ delay and residual loss on both directions of every train link.
    pub harq: Option<crate::hst::harq::HarqConfig>,
}

impl Plan {
    /// Loads, checks and resolves scenario text; `seed` overrides the file's seed.
    pub fn load(text: &str, file: &str, base_dir: &Path, seed: Option<u64>) -> Result<Plan, Vec<ConfigError>> {
        let sc = Scenario::load(text, file, base_dir)?;
        Plan::new(&sc, seed.unwrap_or(sc.seed))
    }

    /// Resolves a checked scenario for `seed`.
    pub fn new(sc: &Scenario, seed: u64) -> Result<Plan, Vec<ConfigError>> {
        let f = &sc.file;
        let duration = from_secs_f64(f.duration_s);
        let bin = from_ms_f64(f.output.bin_ms).max(NS_PER_MS / 1000);
        let mut errs = Errors::default();

        // The train (P0): each handover of an operator is an outage of the link that follows it
        // (queued packets held), with X2 forwarding of the held downlink packets
        // (radio/effect.rs); with `radio.capacity = sinr` the link's downlink capacity follows
        // the serving cell's SINR.
        let train = f.hst.as_ref().map(|h| {
            let run = TrainRun::for_scenario(h, seed, duration, &sc.base_dir);
            let mut windows: Vec<(Time, Time)> = run
                .handovers
                .iter()
                .map(|e| (e.start / NS_PER_S * NS_PER_S, e.start / NS_PER_S * NS_PER_S + NS_PER_S))
                .collect();
            windows.sort_unstable();
            windows.dedup();
            TrainPlan {
                operators: (0..h.radio.operators.len()).map(|i| h.operator_name(i)).collect(),
                links: h.links.clone(),
                forwarding_delay: from_ms_f64(h.handover.forwarding_delay_ms),
                windows,
                harq: h.harq.clone(),
                run,
            }
        });
        let mut links: Vec<LinkSpec> = f
            .links
            .iter()
            .enumerate()
            .map(|(i, orig)| match train_config(sc, train.as_ref(), orig) {
                Some(cfg) => cfg
                    .resolve(&format!("links[{i}]"), &sc.base_dir, &mut errs)
                    .unwrap_or_else(|| sc.links[i].clone()),
                None => sc.links[i].clone(),
            })
            .collect();

        // Handoffs (P3): each link's intervals for this seed; except on a train's link (which the
        // train interrupts already), they stop its forward direction.
        let rngs = crate::core::RngStreams::new(seed);
        let mut handoffs = Vec::new();
        for h in &f.handoffs {
            let Some(li) = f.links.iter().position(|l| l.name == h.link) else {
                continue;
            };
            let intervals = match (&h.pattern, &train, f.hst.as_ref()) {
                (HandoffPattern::Train {}, Some(t), Some(hst)) => {
                    let op = hst.links.iter().position(|l| *l == h.link);
                    t.run
                        .handovers
                        .iter()
                        .filter(|e| Some(e.operator) == op)
                        .map(|e| (e.start, e.end))
                        .filter(|&(s, e)| e > s)
                        .collect()
                }
                _ => {
                    let iv = h.intervals(&rngs, duration);
                    let (outages, forwarding) = h.outages(&iv);
                    let spec = &mut links[li];
                    spec.forward_outages.extend(outages);
                    spec.forward_outages.sort_by_key(|o| o.start);
                    spec.forwarding.extend(forwarding);
                    spec.forwarding.sort_by_key(|x| x.start);
                    iv
                }
            };
            handoffs.push(HandoffPlan {
                link: li,
                link_name: h.link.clone(),
                intervals,
            });
        }

        let mut elements: Vec<(String, ElementSpec)> = f
            .nodes
            .iter()
            .filter_map(|n| n.element.clone().map(|e| (n.name.clone(), e)))
            .collect();
        // Cells are elements too; paths name them in `links` (each hop through one is the cell).
        let cell_index: HashMap<&str, usize> = sc
            .cells
            .iter()
            .enumerate()
            .map(|(i, c)| (c.name.as_str(), elements.len() + i))
            .collect();
        elements.extend(sc.cells.iter().map(|c| {
            let mut c = c.clone();
            // UEs on the train: CQIs from their operator's serving-cell SINR in this run.
            if let Some(t) = train.as_ref() {
                for u in &mut c.ues {
                    let Some(op) = u
                        .train_operator
                        .as_ref()
                        .and_then(|o| t.operators.iter().position(|x| x == o))
                    else {
                        continue;
                    };
                    u.cqi = crate::cell::config::cqi_from_sinr(&t.run.serving_sinr_db(op, 100 * NS_PER_MS));
                }
            }
            (c.name.clone(), ElementSpec::Cell(Box::new(c)))
        }));
        let link_index: HashMap<&str, usize> = f.links.iter().enumerate().map(|(i, l)| (l.name.as_str(), i)).collect();
        let element_index: HashMap<&str, usize> =
            elements.iter().enumerate().map(|(i, (n, _))| (n.as_str(), i)).collect();
        let paths: Vec<PathPlan> = f
            .paths
            .iter()
            .map(|p| {
                let mut hops = Vec::with_capacity(2 * p.links.len());
                for (k, l) in p.links.iter().enumerate() {
                    if k > 0 {
                        if let Some(&e) = p.via.get(k - 1).and_then(|n| element_index.get(n.as_str())) {
                            hops.push(Hop::Element(e));
                        }
                    }
                    match cell_index.get(l.as_str()) {
                        Some(&c) => hops.push(Hop::Element(c)),
                        None => hops.push(Hop::Link(link_index[l.as_str()])),
                    }
                }
                PathPlan {
                    name: p.name.clone(),
                    hops,
                    from: p.from.clone(),
                    to: p.to.clone(),
                }
            })
            .collect();
        let path_index: HashMap<&str, usize> = paths.iter().enumerate().map(|(i, p)| (p.name.as_str(), i)).collect();

        // What P0's wrappers and PHA-D need: the table, each path's operator, the true handovers.
        let table = match f.hst.as_ref().map(|h| h.load_table(&sc.base_dir)) {
            Some(Ok(t)) => t.map(Rc::new),
            Some(Err(e)) => return Err(e),
            None => None,
        };
        let fixes: Rc<[(Time, f64)]> = train
            .as_ref()
            .map_or_else(|| Rc::from(Vec::new()), |t| Rc::from(t.run.gps.clone()));
        let path_operator = |path: &str| -> Option<String> {
            let (h, t) = (f.hst.as_ref()?, train.as_ref()?);
            let p = f.paths.iter().find(|p| p.name == path)?;
            let op = h.links.iter().position(|l| p.links.contains(l))?;
            Some(t.operators[op].clone())
        };
        let true_handovers = |op: &Option<String>| -> Vec<(Time, Time)> {
            let (Some(op), Some(t)) = (op, train.as_ref()) else {
                return Vec::new();
            };
            t.run
                .handovers
                .iter()
                .filter(|e| t.operators.get(e.operator) == Some(op))
                .map(|e| (e.start, e.end))
                .collect()
        };

        let mut flows = Vec::with_capacity(f.flows.len());
        for (i, fc) in f.flows.iter().enumerate() {
            let pre = format!("flows[{i}]");
            let Some(cc) = CcKind::from_name(&fc.cc) else {
                errs.push(ConfigError::new(
                    format!("{pre}.cc"),
                    &fc.cc,
                    "unknown congestion control",
                ));
                continue;
            };
            let transport = match (&fc.path, &fc.paths) {
                (Some(p), None) => Transport::Tcp {
                    path: path_index[p.as_str()],
                },
                (None, Some(ps)) => {
                    let opts = fc.mptcp.clone().unwrap_or_default();
                    let spec = fc.scheduler.clone().unwrap_or_default().config();
                    let (wrapper, scheduler) = split_wrapper(&spec);
                    let operators: Vec<Option<String>> = ps.iter().map(|p| path_operator(p)).collect();
                    let windows: Vec<Vec<(Time, Time)>> = operators.iter().map(true_handovers).collect();
                    let needs = |what: &str| {
                        ConfigError::new(
                            format!("{pre}.scheduler"),
                            "",
                            format!("{what}: add an [hst] section with a `table`"),
                        )
                    };
                    let wrapper = match wrapper {
                        None => None,
                        Some(Wrapper::Pha) => match &table {
                            Some(t) => Some(WrapperPlan::Pha {
                                table: t.clone(),
                                operators: operators.clone(),
                                gps: fixes.clone(),
                                completions: windows.iter().map(|w| w.iter().map(|&(_, e)| e).collect()).collect(),
                            }),
                            None => {
                                errs.push(needs("PHA needs a train with a handover table"));
                                None
                            }
                        },
                        Some(Wrapper::Oracle) => Some(WrapperPlan::Oracle {
                            windows: windows.clone(),
                        }),
                        Some(Wrapper::Block) => Some(WrapperPlan::Block {
                            windows: windows.clone(),
                        }),
                    };
                    let blocking = if matches!(wrapper, Some(WrapperPlan::Block { .. })) {
                        windows
                    } else {
                        Vec::new()
                    };
                    let pha_d = match (&opts.pha_d, &table, &train) {
                        (None, _, _) => None,
                        (Some(cfg), Some(t), Some(tr)) => Some(PhaDPlan {
                            cfg: cfg.clone(),
                            table: t.clone(),
                            operators,
                            gps_period: f.hst.as_ref().map_or(0, |h| tr.run.gps_period(h)),
                            fixes: fixes.clone(),
                        }),
                        _ => {
                            errs.push(ConfigError::new(
                                format!("{pre}.mptcp.pha_d"),
                                "",
                                "PHA-D needs a train with a handover table",
                            ));
                            None
                        }
                    };
                    let start = from_secs_f64(fc.start_s);
                    Transport::Mptcp(MptcpPlan {
                        paths: ps.iter().map(|p| path_index[p.as_str()]).collect(),
                        scheduler,
                        wrapper,
                        rcv_buf: match (opts.rcv_buf_bytes, opts.rcv_buf_packets) {
                            (Some(b), _) => b,
                            (None, Some(p)) => p * fc.tcp.mss_bytes as u64,
                            _ => fc.receiver.rcv_buf_bytes,
                        },
                        join_at: start + from_ms_f64(opts.join_delay_ms),
                        backup: (0..ps.len())
                            .map(|k| opts.backup.get(k).copied().unwrap_or(false))
                            .collect(),
                        receiver_recovery: opts.receiver_recovery,
                        mp_prio: opts
                            .mp_prio
                            .iter()
                            .map(|e| (from_secs_f64(e.at_s), e.subflow, e.backup))
                            .collect(),
                        pha_d,
                        blocking,
                    })
                }
                _ => {
                    errs.push(ConfigError::new(
                        format!("{pre}.path"),
                        "",
                        "give `path` (TCP) or `paths` (MPTCP)",
                    ));
                    continue;
                }
            };
            let handoff = fc.handoff.as_ref().map(|h| {
                let path_links: &[String] = fc
                    .path
                    .as_ref()
                    .and_then(|p| f.paths.iter().find(|x| &x.name == p))
                    .map_or(&[], |p| &p.links);
                let mut iv: Vec<(Time, Time)> = handoffs
                    .iter()
                    .filter(|x| path_links.contains(&x.link_name))
                    .flat_map(|x| x.intervals.iter().copied())
                    .collect();
                iv.sort_unstable();
                let mut plan = h.plan(iv);
                if h.predict == HandoffPredict::Table {
                    let field = format!("{pre}.handoff.predict");
                    let op = fc.path.as_deref().and_then(&path_operator);
                    match (h.scheme, op, &table) {
                        (HandoffScheme::Ehn | HandoffScheme::FreezeTcp, Some(op), Some(t)) => {
                            let (eps, stats) = crate::handoff::predict::from_table(
                                t,
                                &op,
                                &fixes,
                                &plan.intervals,
                                h.scheme,
                                plan.ehn_delay,
                            );
                            plan.episodes = eps;
                            plan.prediction = Some(stats);
                        }
                        (HandoffScheme::Ehn | HandoffScheme::FreezeTcp, Some(_), None) => {
                            errs.push(ConfigError::new(
                                field,
                                "table",
                                "needs a handover table: add `table` to the [hst] section",
                            ));
                        }
                        (HandoffScheme::Ehn | HandoffScheme::FreezeTcp, None, _) => {
                            errs.push(ConfigError::new(
                                field,
                                "table",
                                "needs the flow's path to cross a train link (`[hst] links`)",
                            ));
                        }
                        _ => errs.push(ConfigError::new(
                            field,
                            "table",
                            "only the ehn and freeze-tcp schemes act on a prediction",
                        )),
                    }
                }
                plan
            });
            let mut sender = sender_config(fc);
            if let Some(h) = fc.handoff.as_ref().filter(|h| h.scheme == HandoffScheme::Ehn) {
                sender.ehn = true;
                sender.ehn_max_freeze = h.max_freeze();
            }
            flows.push(FlowPlan {
                name: fc.name.clone(),
                cc,
                traffic: fc.traffic.clone(),
                start: from_secs_f64(fc.start_s),
                stop: fc.stop_s.map(from_secs_f64).unwrap_or(NEVER),
                mss: fc.tcp.mss_bytes,
                sender,
                receiver: receiver_config(fc),
                transport,
                handoff,
                relay: match &fc.traffic {
                    Traffic::Relay { from, buffer_bytes } => {
                        f.flows.iter().position(|x| &x.name == from).map(|from| RelayPlan {
                            from,
                            buffer: *buffer_bytes,
                        })
                    }
                    _ => None,
                },
                fct_bytes: chain_file(&f.flows, i),
            });
        }
        if !errs.is_empty() {
            return Err(errs.0);
        }
        let mut resolved = serde_json::to_value(&sc.file).expect("scenario serialises");
        resolved["seed"] = serde_json::json!(seed);
        Ok(Plan {
            scenario_name: f.name.clone().unwrap_or_else(|| sc.source_name.clone()),
            seed,
            duration,
            bin,
            n_bins: duration.div_ceil(bin) as usize,
            warmup: from_secs_f64(f.output.warmup_s),
            duration_s: f.duration_s,
            warmup_s: f.output.warmup_s,
            bin_ms: f.output.bin_ms,
            links,
            elements,
            paths,
            flows,
            train,
            handoffs,
            resolved,
            capture: {
                let o = &f.output;
                let names: Vec<String> = f.links.iter().map(|l| l.name.clone()).collect();
                crate::capture::config::spec(&o.pcap, o.pcap_snaplen, o.pcap_max_mb, &names)
            },
            series: {
                let names: Vec<String> = f.flows.iter().map(|x| x.name.clone()).collect();
                crate::metrics::select::SeriesPlan::resolve(&f.output.series, &names)
            },
        })
    }

    /// Whether anything in the run draws random numbers, so that another seed can change the
    /// result: random loss, reordering or forwarding loss on a link, BBR's random start phase,
    /// Peekaboo's exploration, or a train (GPS error, radio terms per run).
    pub fn seed_matters(&self) -> bool {
        use crate::link::config::{LossConfig, SojournConfig};
        let strictly_between = |p: f64| p > 0.0 && p < 1.0;
        let dir_random = |d: &crate::link::config::DirSpec| {
            let loss = match &d.loss {
                None => false,
                Some(LossConfig::Bernoulli { p }) => strictly_between(*p),
                Some(LossConfig::GilbertElliott {
                    p_good,
                    p_bad,
                    good,
                    bad,
                    ..
                }) => {
                    let random_sojourn = |s: &SojournConfig| !matches!(s, SojournConfig::Deterministic { .. });
                    strictly_between(*p_good) || strictly_between(*p_bad) || random_sojourn(good) || random_sojourn(bad)
                }
            };
            loss || d
                .reorder
                .as_ref()
                .is_some_and(|r| strictly_between(r.p) && r.extra_delay_ms > 0.0)
        };
        let links = self.links.iter().any(|l| {
            dir_random(&l.forward)
                || dir_random(&l.reverse)
                || l.forwarding
                    .iter()
                    .any(|f| strictly_between(f.loss_prob) || strictly_between(f.queued_loss))
        });
        let flows = self.flows.iter().any(|f| {
            f.cc == CcKind::Bbr
                || matches!(&f.transport, Transport::Mptcp(m) if m.scheduler.name == "peekaboo" && m.scheduler.epsilon.unwrap_or(0.05) > 0.0)
        });
        links || flows || self.train.is_some()
    }

    /// The train's true handovers `(operator, start, end)`.
    pub fn handovers(&self) -> Vec<(usize, Time, Time)> {
        self.train
            .as_ref()
            .map(|t| t.run.handovers.iter().map(|e| (e.operator, e.start, e.end)).collect())
            .unwrap_or_default()
    }
}

/// The scenario's links exactly as a run builds them (the train's handovers and capacity folded
/// into each train link), as scenario tables: what the emulator applies to the real kernel.
pub fn effective_link_configs(sc: &Scenario, seed: u64) -> Vec<LinkConfig> {
    let duration = from_secs_f64(sc.file.duration_s);
    let train = sc
        .file
        .hst
        .as_ref()
        .map(|h| TrainRun::for_scenario(h, seed, duration, &sc.base_dir));
    sc.file
        .links
        .iter()
        .map(|l| train_link_config(sc, train.as_ref(), l).unwrap_or_else(|| l.clone()))
        .collect()
}

fn train_config(sc: &Scenario, train: Option<&TrainPlan>, orig: &LinkConfig) -> Option<LinkConfig> {
    train_link_config(sc, train.map(|t| &t.run), orig)
}

/// `orig` as the train changes it, if it follows an operator (`[hst] links`).
fn train_link_config(sc: &Scenario, run: Option<&TrainRun>, orig: &LinkConfig) -> Option<LinkConfig> {
    let (Some(h), Some(run)) = (&sc.file.hst, run) else {
        return None;
    };
    let op = h.links.iter().position(|l| *l == orig.name)?;
    Some(train_link(
        orig,
        &run.handovers,
        op,
        &h.handover,
        run.capacity.as_ref().map(|c| c[op].as_slice()),
    ))
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
        rack: t.rack.unwrap_or(t.sack),
        tlp: t.tlp.unwrap_or(t.sack),
        frto: t.frto,
        undo: t.undo,
        dsack: t.dsack.unwrap_or(t.sack),
        tso: t.tso,
        reno_ssthresh_from_flight: t.reno_ssthresh == crate::scenario::RenoSsthresh::Flight,
        reno_increase_per_ack: t.reno_increase == crate::scenario::RenoIncrease::PerAck,
        cwnd_validation: t.cwnd_validation,
        timer: t.timer,
        ..SenderConfig::default()
    }
}

fn receiver_config(fc: &FlowConfig) -> ReceiverConfig {
    let r = &fc.receiver;
    ReceiverConfig {
        sack: fc.tcp.sack,
        dsack: fc.tcp.dsack.unwrap_or(fc.tcp.sack),
        delayed_ack: r.delayed_ack,
        // 4.4BSD has no quick-ACK mode; its delayed ACKs leave on the 200 ms fast timer.
        quickack: fc.tcp.timer != TimerProfile::Bsd,
        window_buf: r.rcv_buf_bytes,
        delack_timeout: from_ms_f64(r.delack_ms),
        fast_timer: fc.tcp.timer == TimerProfile::Bsd,
        rcv_buf: r.rcv_buf_bytes,
        read_pauses: r
            .read_pauses
            .iter()
            .map(|p| (from_secs_f64(p.start_s), from_secs_f64(p.start_s + p.duration_s)))
            .collect(),
        ack_on_read: r.ack_on_read,
        read_delay: (r.read_delay_us * 1e3).round() as Time,
        autotune: r.autotune,
    }
}

/// The file size at the head of flow `i`'s relay chain (its own for a file transfer).
fn chain_file(flows: &[FlowConfig], mut i: usize) -> Option<u64> {
    for _ in 0..=flows.len() {
        match &flows[i].traffic {
            Traffic::File { bytes } => return Some(*bytes),
            Traffic::Relay { from, .. } => i = flows.iter().position(|x| &x.name == from)?,
            _ => return None,
        }
    }
    None
}
