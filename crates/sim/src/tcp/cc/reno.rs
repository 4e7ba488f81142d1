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
        let Some(acked) = tcb.slow_start_leftover(acked) else {
            return;
        };
        let w = tcb.cwnd;
        tcb.cong_avoid_ai(w, acked);
    }
    fn ssthresh(&mut self, tcb: &Tcb, _now: Time) -> u32 {
        (tcb.cwnd / 2).max(2)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One RTT: one ACK per segment of the window at its start.
    fn round(cc: &mut Reno, tcb: &mut Tcb) {
        let n = tcb.cwnd;
        for _ in 0..n {
            tcb.delivered += 1;
            cc.cong_avoid(tcb, 1, 0);
        }
    }

    #[test]
    fn slow_start_doubles_per_rtt() {
        let mut cc = Reno::new(RecoveryStyle::NewReno);
        let mut tcb = Tcb::new(1448, 10);
        for expect in [20, 40, 80, 160] {
            round(&mut cc, &mut tcb);
            assert_eq!(tcb.cwnd, expect);
        }
    }

    #[test]
    fn slow_start_stops_at_ssthresh_then_one_per_rtt() {
        let mut cc = Reno::new(RecoveryStyle::NewReno);
        let mut tcb = Tcb::new(1448, 10);
        tcb.ssthresh = 30;
        round(&mut cc, &mut tcb); // 20
        round(&mut cc, &mut tcb); // 30 (capped), 10 ACKs left over count towards CA
        assert_eq!(tcb.cwnd, 30);
        assert!(!tcb.in_slow_start());
        let start = tcb.cwnd;
        for i in 1..=10 {
            round(&mut cc, &mut tcb);
            assert!(
                tcb.cwnd == start + i || tcb.cwnd == start + i + 1,
                "round {i}: {}",
                tcb.cwnd
            );
        }
        // Exactly +1 per window's worth of ACKs, over the long run.
        let before = tcb.cwnd;
        let mut acks = 0u32;
        while tcb.cwnd == before {
            tcb.delivered += 1;
            cc.cong_avoid(&mut tcb, 1, 0);
            acks += 1;
        }
        assert!(acks <= before);
    }

    #[test]
    fn congestion_avoidance_is_one_per_rtt_exactly() {
        let mut cc = Reno::new(RecoveryStyle::Reno);
        let mut tcb = Tcb::new(1448, 50);
        tcb.ssthresh = 50;
        for i in 1..=20 {
            round(&mut cc, &mut tcb);
            assert_eq!(tcb.cwnd, 50 + i);
        }
    }

    #[test]
    fn no_growth_when_not_cwnd_limited() {
        let mut cc = Reno::new(RecoveryStyle::NewReno);
        let mut tcb = Tcb::new(1448, 10);
        tcb.cwnd_limited = false;
        round(&mut cc, &mut tcb);
        assert_eq!(tcb.cwnd, 10);
    }

    #[test]
    fn ssthresh_halves_with_floor_two() {
        let mut cc = Reno::new(RecoveryStyle::NewReno);
        let mut tcb = Tcb::new(1448, 100);
        assert_eq!(cc.ssthresh(&tcb, 0), 50);
        tcb.cwnd = 101;
        assert_eq!(cc.ssthresh(&tcb, 0), 50);
        tcb.cwnd = 3;
        assert_eq!(cc.ssthresh(&tcb, 0), 2);
        assert_eq!(Reno::new(RecoveryStyle::Tahoe).recovery_style(), RecoveryStyle::Tahoe);
        assert_eq!(Reno::new(RecoveryStyle::Tahoe).name(), "tahoe");
    }
}
