//! The event loop (placeholder).
use crate::api::RunOutput;
use crate::scenario::Scenario;
pub fn run(_sc: &Scenario, _progress: Option<&mut dyn FnMut(f64)>) -> RunOutput { unimplemented!() }
