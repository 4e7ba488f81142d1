//! Placeholder: replaced by the BBR implementation.
use super::*;
pub struct Bbr(reno::Reno);
impl Bbr { pub fn new() -> Self { Bbr(reno::Reno::new(RecoveryStyle::NewReno)) } }
impl CongestionControl for Bbr {
    fn name(&self) -> &'static str { "bbr" }
    fn cong_avoid(&mut self, tcb: &mut Tcb, acked: u32, now: Time) { self.0.cong_avoid(tcb, acked, now) }
    fn ssthresh(&mut self, tcb: &Tcb, now: Time) -> u32 { self.0.ssthresh(tcb, now) }
}
