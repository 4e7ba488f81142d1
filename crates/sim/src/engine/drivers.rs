//! Drivers: scheduled actions from outside the network and the endpoints — an MP_PRIO
//! schedule, subflow blocking at handovers, PHA-D's GPS fixes (`hst::phad`), later handoff
//! patterns. A driver names the times it needs ([`Schedule::at`]); when one comes the engine
//! calls [`Driver::fire`] with a [`World`] through which it reads ([`World::observe`]) and acts
//! on ([`World::act`]) endpoints. Packets an action produces leave at once. Drivers never read a
//! clock and draw randomness only from streams the builder gives them.
use crate::core::time::Time;
use crate::endpoint::{Action, Observation};
use serde_json::Value;

/// Which end of a flow.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Side {
    Sender,
    Receiver,
}

/// What a driver may do when it fires.
pub trait World {
    fn act(&mut self, flow: usize, side: Side, action: Action);
    fn observe(&self, flow: usize, side: Side) -> Observation;
}

/// Times a driver asks to fire at, each with a token it gets back; queued in the order given.
#[derive(Default)]
pub struct Schedule {
    pub(crate) items: Vec<(Time, u32)>,
}

impl Schedule {
    pub fn at(&mut self, t: Time, token: u32) {
        self.items.push((t, token));
    }
}

/// A scheduled outside action (see the module docs).
pub trait Driver {
    /// The flow it belongs to: its first times are queued right after that flow's start.
    fn flow(&self) -> usize;
    /// Names its first times.
    fn start(&mut self, q: &mut Schedule);
    /// One of its times has come.
    fn fire(&mut self, now: Time, token: u32, world: &mut dyn World, q: &mut Schedule);
    /// Fields it adds to its flow's summary.
    fn flow_summary(&self) -> Vec<(String, Value)> {
        Vec::new()
    }
}

/// `mptcp.mp_prio`: the data receiver sends MP_PRIO at chosen times.
pub struct MpPrioSchedule {
    pub flow: usize,
    /// (time, subflow, backup).
    pub events: Vec<(Time, usize, bool)>,
}

impl Driver for MpPrioSchedule {
    fn flow(&self) -> usize {
        self.flow
    }
    fn start(&mut self, q: &mut Schedule) {
        for (k, &(t, _, _)) in self.events.iter().enumerate() {
            q.at(t, k as u32);
        }
    }
    fn fire(&mut self, _now: Time, token: u32, world: &mut dyn World, _q: &mut Schedule) {
        let (_, subflow, backup) = self.events[token as usize];
        world.act(self.flow, Side::Receiver, Action::SetBackup { subflow, backup });
    }
}

/// Subflow blocking (Park et al. 2022): at the start of each handover of a subflow's operator,
/// its congestion window collapses (the `block(...)` wrapper keeps new data off it until the
/// handover ends).
pub struct Blocking {
    pub flow: usize,
    /// Per subflow, the handover intervals.
    pub windows: Vec<Vec<(Time, Time)>>,
}

impl Driver for Blocking {
    fn flow(&self) -> usize {
        self.flow
    }
    fn start(&mut self, q: &mut Schedule) {
        for (k, ws) in self.windows.iter().enumerate() {
            for &(s, _) in ws {
                q.at(s, k as u32);
            }
        }
    }
    fn fire(&mut self, _now: Time, token: u32, world: &mut dyn World, _q: &mut Schedule) {
        world.act(
            self.flow,
            Side::Sender,
            Action::CollapseCwnd {
                subflow: token as usize,
            },
        );
    }
}
