//! The handoff driver: tells a flow's mobile host (its data receiver) when each handoff is about
//! to start (`Warn`: Freeze-TCP's zero window), starts (`Start`), when its EHN leaves
//! (`SendEhn`, `ehn_delay` after the start) and when it ends (`End`), at the times of its episodes (`super::predict`: the true
//! schedule, or a prediction from the train's handover table). The receiver endpoint reacts
//! according to its scheme (`endpoint::tcp`).
use super::{FlowHandoffPlan, HandoffScheme};
use crate::core::time::Time;
use crate::endpoint::{Action, HandoffPhase};
use crate::engine::drivers::{Driver, Schedule, Side, World};

pub struct HandoffDriver {
    pub flow: usize,
    pub plan: FlowHandoffPlan,
}

const PHASES: [HandoffPhase; 4] = [
    HandoffPhase::Warn,
    HandoffPhase::Start,
    HandoffPhase::SendEhn,
    HandoffPhase::End,
];

impl Driver for HandoffDriver {
    fn flow(&self) -> usize {
        self.flow
    }

    fn start(&mut self, q: &mut Schedule) {
        let p = &self.plan;
        for (i, ep) in p.episodes.iter().enumerate() {
            let token = |phase: usize| (4 * i + phase) as u32;
            if p.scheme == HandoffScheme::FreezeTcp {
                match ep.warn {
                    Some(w) => q.at(w, token(0)),
                    None => continue, // not predicted: Freeze-TCP does nothing
                }
            }
            q.at(ep.start, token(1));
            if p.scheme == HandoffScheme::Ehn {
                q.at(ep.ehn, token(2));
            }
            q.at(ep.end, token(3));
        }
    }

    fn fire(&mut self, _now: Time, token: u32, world: &mut dyn World, _q: &mut Schedule) {
        let (i, phase) = (token / 4, PHASES[(token % 4) as usize]);
        // Handoff ids start at 1 (0 = none on the wire).
        world.act(self.flow, Side::Receiver, Action::Handoff { phase, id: i + 1 });
    }
}
