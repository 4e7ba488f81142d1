//! Network elements: behaviour at a node between two links (design note: ARCHITECTURE.md).
//!
//! A path is a chain of links; the nodes between consecutive links forward packets unchanged
//! unless the scenario puts an element there (`[[nodes]] element = { kind = ... }` and the path's
//! `via`). An element sees every packet that crosses its node, in both directions, and for each
//! one decides: forward it now ([`ElementOut::forward`]), hold it and forward it later from its
//! timer, drop it ([`ElementOut::drop`]), rewrite it (e.g. the advertised window of an ACK), or
//! send packets of its own ([`ElementOut::send`]) along a route it has seen. It owns its timers
//! ([`Element::next_timer`]); like every protocol component it never reads a clock — each call
//! carries `now` — and draws randomness only from the stream the builder gives it.
//!
//! How the network mechanisms of the papers fit (each one element, nothing else in the core):
//! - P2's split-connection relay: terminates the incoming connection (it owns a receiving
//!   [`Endpoint`](crate::endpoint::Endpoint) for it) and writes what it reads into an outgoing one
//!   (a sending endpoint); packets of both connections end at the element instead of passing it.
//! - P3's base station: forwards to the mobile host while attached, holds or drops during a
//!   handoff (driven by a handoff driver), answers the mobile's Greet, zeroes the advertised
//!   window of ACKs it forwards (BUFFER+FREEZE).
//! - P4's cell: one element in place of the radio link, holding per-UE uplink and downlink
//!   queues and releasing packets per TTI from its MAC scheduler (its timer fires every TTI).
use crate::core::time::{Time, NEVER};
use crate::error::{ConfigError, Errors};
use crate::packet::Pkt;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub mod base_station;
pub mod delay_every_nth;

/// Behaviour at a node (see the module docs).
pub trait Element {
    /// The registry name (`kind` in scenarios).
    fn kind(&self) -> &'static str;
    /// A packet reached the node; `reverse`: it travels against its path's data direction (ACKs
    /// of a download). `p.route` and `p.hop` tell where it is.
    fn on_packet(&mut self, now: Time, p: Pkt, reverse: bool, out: &mut ElementOut);
    /// The element's timer fired (possibly late or early: re-check deadlines).
    fn on_timer(&mut self, now: Time, out: &mut ElementOut);
    /// When it next needs [`on_timer`](Self::on_timer); `NEVER` if not.
    fn next_timer(&self) -> Time {
        NEVER
    }
    /// Counters for the run summary (`elements.<node>`).
    fn summary(&self) -> serde_json::Value;
}

/// What an element does with packets in one call.
#[derive(Default)]
pub struct ElementOut {
    /// Packets that continue along their route from this node, in this order.
    pub forward: Vec<Pkt>,
    /// New packets; each must carry the `route` and `hop` (the index of the next hop after this
    /// node) to travel, e.g. copied from a packet seen on that route.
    pub send: Vec<Pkt>,
    /// Packets dropped here (counted; the boxes are reused).
    pub drop: Vec<Pkt>,
    /// Packets that end here by design (e.g. a message addressed to this element; not counted
    /// as drops).
    pub absorb: Vec<Pkt>,
    /// Answers to a packet: each carries the `route` and `hop` of the packet it answers (as it
    /// arrived here), and the engine sends it back along the reverse route from this node.
    pub reply: Vec<Pkt>,
}

/// What an element knows of the scenario around its node (built by `engine/build.rs`).
#[derive(Clone, Debug, Default)]
pub struct ElementContext {
    /// The element's name (its node, or its cell) and its index among the run's elements (the
    /// `Some(index)` hops of [`RouteInfo::hops`]).
    pub name: String,
    pub index: usize,
    /// The run's seed: an element draws from `RngStreams::new(seed)` streams named after itself.
    pub seed: u64,
    /// Every route of the run, indexed like `Packet::route`.
    pub routes: Vec<RouteInfo>,
    /// Flow names, indexed like `Packet::flow`.
    pub flows: Vec<String>,
    /// The handoffs of the links adjacent to the node (`[[handoffs]]`), sorted.
    pub handoffs: Vec<(Time, Time)>,
}

/// One route: a path in its data direction (`reverse` false) or against it.
#[derive(Clone, Debug, Default)]
pub struct RouteInfo {
    pub path: String,
    pub reverse: bool,
    /// The node where the route's packets enter it, and the one where they leave it.
    pub from: String,
    pub to: String,
    /// Hops in travel order: `Some(element index)` for an element, `None` for a link.
    pub hops: Vec<Option<usize>>,
}

/// An element as written in a scenario: the registry of element kinds. Adding one: a variant
/// here, its module, an arm in [`ElementSpec::build`] and [`ElementSpec::check`].
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "kind", rename_all = "kebab-case", deny_unknown_fields)]
pub enum ElementSpec {
    /// Holds every `n`-th packet crossing the node (per direction) for `delay_ms` and lets the
    /// others pass: a test element that reorders.
    DelayEveryNth {
        /// Every n-th packet, n in [1, 1000000].
        n: u64,
        /// Extra delay in ms, in [0, 3600000].
        delay_ms: f64,
    },
    /// A base station that takes part in its mobile hosts' handoffs (P3; see
    /// `element::base_station`): answers window probes for greeted hosts during a handoff.
    BaseStation {
        /// BUFFER+FREEZE (P3 §2): send the latest relayed ACK with a zero window when a handoff
        /// starts (default false).
        #[serde(default)]
        buffer_freeze: bool,
    },
    /// An LTE cell (`[[cells]]`, crate::cell): not written at nodes, paths name it in `links`.
    #[serde(skip)]
    #[schemars(skip)]
    Cell(Box<crate::cell::CellSpec>),
}

impl ElementSpec {
    /// Registry names, as written in `kind`.
    pub const NAMES: &'static [&'static str] = &["delay-every-nth", "base-station"];

    pub fn check(&self, prefix: &str, errs: &mut Errors) {
        match self {
            ElementSpec::DelayEveryNth { n, delay_ms } => {
                if !(1..=1_000_000).contains(n) {
                    errs.push(ConfigError::new(format!("{prefix}.n"), n, "must be in [1, 1000000]"));
                }
                errs.range(format!("{prefix}.delay_ms"), *delay_ms, 0.0, 3_600_000.0);
            }
            ElementSpec::BaseStation { .. } => {}
            // Checked as `cells[i]` (crate::cell::config).
            ElementSpec::Cell(_) => {}
        }
    }

    pub fn build(&self, ctx: &ElementContext) -> Box<dyn Element> {
        match self {
            ElementSpec::DelayEveryNth { n, delay_ms } => Box::new(delay_every_nth::DelayEveryNth::new(
                *n,
                crate::core::time::from_ms_f64(*delay_ms),
            )),
            ElementSpec::BaseStation { buffer_freeze } => {
                Box::new(base_station::BaseStation::new(*buffer_freeze, ctx.handoffs.clone()))
            }
            ElementSpec::Cell(spec) => Box::new(crate::cell::element::Cell::new(spec, ctx)),
        }
    }
}
