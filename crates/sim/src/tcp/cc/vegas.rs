//! Placeholder: replaced by the Vegas implementation.
use super::*;
pub struct Vegas(reno::Reno);
impl Vegas { pub fn new() -> Self { Vegas(reno::Reno::new(RecoveryStyle::NewReno)) } }
impl CongestionControl for Vegas {
    fn name(&self) -> &'static str { "vegas" }
    fn cong_avoid(&mut self, tcb: &mut Tcb, acked: u32, now: Time) { self.0.cong_avoid(tcb, acked, now) }
    fn ssthresh(&mut self, tcb: &Tcb, now: Time) -> u32 { self.0.ssthresh(tcb, now) }
}
