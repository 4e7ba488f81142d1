//! Placeholder: replaced by the CUBIC implementation.
use super::*;
pub struct Cubic(reno::Reno);
impl Cubic { pub fn new() -> Self { Cubic(reno::Reno::new(RecoveryStyle::NewReno)) } }
impl CongestionControl for Cubic {
    fn name(&self) -> &'static str { "cubic" }
    fn cong_avoid(&mut self, tcb: &mut Tcb, acked: u32, now: Time) { self.0.cong_avoid(tcb, acked, now) }
    fn ssthresh(&mut self, tcb: &Tcb, now: Time) -> u32 { self.0.ssthresh(tcb, now) }
}
