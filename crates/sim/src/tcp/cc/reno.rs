//! Tahoe, Reno and NewReno window response (RFC 5681, RFC 6582; Linux `tcp_reno_*` in net/ipv4/tcp_cong.c).
use super::*;

pub struct Reno {
    style: RecoveryStyle,
}

impl Reno {
    pub fn new(style: RecoveryStyle) -> Self {
        Reno { style }
    }
}

impl CongestionControl for Reno {
    fn name(&self) -> &'static str {
        match self.style {
            RecoveryStyle::Tahoe => "tahoe",
            RecoveryStyle::Reno => "reno",
            RecoveryStyle::NewReno => "newreno",
        }
    }
    fn recovery_style(&self) -> RecoveryStyle {
        self.style
    }
    fn cong_avoid(&mut self, tcb: &mut Tcb, acked: u32, _now: Time) {
        if !tcb.cwnd_limited {
            return;
        }
        let mut acked = acked;
        if tcb.in_slow_start() {
            acked = tcb.slow_start(acked);
            if acked == 0 {
                return;
            }
        }
        let w = tcb.cwnd;
        tcb.cong_avoid_ai(w, acked);
    }
    fn ssthresh(&mut self, tcb: &Tcb, _now: Time) -> u32 {
        (tcb.cwnd / 2).max(2)
    }
}
