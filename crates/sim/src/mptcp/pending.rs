//! TEMPORARY glue while the scheduler and coupled-CC modules are being written; replaced by
//! `sched::{SchedulerSpec, build}` and `coupled::build`.
use super::sched::Scheduler;
use crate::tcp::cc::coupled::Coupling;
use crate::tcp::cc::CongestionControl;

#[derive(Clone, Debug, serde::Deserialize, serde::Serialize, schemars::JsonSchema)]
#[serde(untagged)]
pub enum SchedulerSpec {
    Name(String),
}
pub struct SchedulerConfig;
impl SchedulerConfig {
    pub fn validate(&self, _prefix: &str, _errs: &mut crate::error::Errors) {}
}
impl SchedulerSpec {
    pub fn config(&self) -> SchedulerConfig {
        SchedulerConfig
    }
}
pub fn build(_cfg: &SchedulerConfig, _seed: u64) -> Result<Box<dyn Scheduler>, String> {
    Err("schedulers not yet available".into())
}
pub fn coupled_build(_name: &str, _c: Coupling, _i: usize) -> Option<Box<dyn CongestionControl>> {
    None
}
