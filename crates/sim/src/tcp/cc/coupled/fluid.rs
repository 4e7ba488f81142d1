//! Test harness: a small synthetic model that drives congestion-control instances through the
//! [`CongestionControl`] trait the way the sender and the MPTCP core do, without packets.
//!
//! Time advances in steps of 1 ms. Subflow k receives ACKs (one segment each) at `cwnd_k/rtt_k`;
//! before every ACK the table is refreshed from all Tcbs (as the MPTCP core does). Loss comes
//! from a per-path loss probability p as a deterministic counter (one loss every 1/p ACKed
//! segments); a loss is an instantaneous fast recovery (cwnd = ssthresh) when cwnd ≥ 4, else an
//! RTO (cwnd = 1, too few segments for three duplicate ACKs). Optionally all subflows share one
//! bottleneck of `capacity` segments/s: the segments beyond the bandwidth-delay product queue
//! there and add `queue/capacity` to every RTT (for the delay-based algorithms).
use super::{new_coupling, Coupling};
use crate::core::time::{NS_PER_MS, NS_PER_S};
use crate::core::Time;
use crate::tcp::cc::{by_name, CaState, CongestionControl, CwndEvent, RateSample, Tcb};

const MSS: u32 = 1448;
const DT: Time = NS_PER_MS;

pub struct Sub {
    pub cc: Box<dyn CongestionControl>,
    pub tcb: Tcb,
    base_rtt: Time,
    loss_p: f64,
    ack_credit: f64,
    loss_credit: f64,
    bytes_acked: u64,
}

pub struct Fluid {
    pub coupling: Coupling,
    pub subs: Vec<Sub>,
    pub now: Time,
    /// Shared bottleneck rate in segments/s (`None`: no queueing).
    capacity: Option<f64>,
}

impl Fluid {
    /// Instances built by `make(coupling, index)` on paths `(base RTT, loss probability)`.
    pub fn new(paths: &[(Time, f64)], make: impl Fn(Coupling, usize) -> Box<dyn CongestionControl>) -> Self {
        let coupling = new_coupling(paths.len());
        let subs = paths
            .iter()
            .enumerate()
            .map(|(i, &(base_rtt, loss_p))| Sub {
                cc: make(coupling.clone(), i),
                tcb: Tcb::new(MSS, 10),
                base_rtt,
                loss_p,
                ack_credit: 0.0,
                loss_credit: 0.0,
                bytes_acked: 0,
            })
            .collect();
        Fluid {
            coupling,
            subs,
            now: 0,
            capacity: None,
        }
    }

    /// Coupled algorithm `name` on the given paths.
    pub fn lossy(name: &str, paths: &[(Time, f64)]) -> Self {
        Self::new(paths, |c, i| super::build(name, c, i).unwrap())
    }

    /// One uncoupled single-path algorithm instance per path.
    pub fn uncoupled(name: &str, paths: &[(Time, f64)]) -> Self {
        Self::new(paths, |_, _| by_name(name).unwrap())
    }

    /// All subflows through one bottleneck of `capacity` segments/s.
    pub fn with_bottleneck(mut self, capacity: f64) -> Self {
        self.capacity = Some(capacity);
        self
    }

    /// Changes path `k`'s loss probability from now on.
    pub fn set_loss(&mut self, k: usize, p: f64) {
        self.subs[k].loss_p = p;
    }

    fn rtt(&self, k: usize) -> Time {
        let base = self.subs[k].base_rtt;
        match self.capacity {
            None => base,
            Some(c) => {
                let total: f64 = self.subs.iter().map(|s| s.tcb.cwnd as f64).sum();
                let queue = (total - c * base as f64 / NS_PER_S as f64).max(0.0);
                base + (queue / c * NS_PER_S as f64) as Time
            }
        }
    }

    fn refresh_table(&self) {
        let mut t = self.coupling.borrow_mut();
        for (e, s) in t.iter_mut().zip(&self.subs) {
            e.active = true;
            e.cwnd = s.tcb.cwnd;
            e.ssthresh = s.tcb.ssthresh;
            e.srtt = s.tcb.srtt;
            e.min_rtt = s.tcb.min_rtt;
            e.mss = s.tcb.mss;
            e.bytes_acked = s.bytes_acked;
        }
    }

    fn ack(&mut self, k: usize, rtt: Time) {
        self.refresh_table();
        let now = self.now;
        let s = &mut self.subs[k];
        let tcb = &mut s.tcb;
        tcb.delivered += 1;
        s.bytes_acked += tcb.mss as u64;
        tcb.in_flight = tcb.cwnd;
        tcb.srtt = rtt;
        tcb.min_rtt = tcb.min_rtt.min(rtt);
        s.cc.pkts_acked(tcb, 1, rtt, now);
        if !s.cc.cong_control(tcb, &RateSample::default(), now) && tcb.ca_state != CaState::Recovery {
            s.cc.cong_avoid(tcb, 1, now);
        }
        if tcb.ca_state == CaState::Loss {
            s.cc.set_state(tcb, CaState::Open, now);
            tcb.ca_state = CaState::Open;
        }
        s.loss_credit += s.loss_p;
        if s.loss_credit >= 1.0 {
            s.loss_credit -= 1.0;
            if tcb.cwnd >= 4 {
                s.cc.set_state(tcb, CaState::Recovery, now);
                tcb.ssthresh = s.cc.ssthresh(tcb, now);
                tcb.ca_state = CaState::Open;
                s.cc.set_state(tcb, CaState::Open, now);
                tcb.cwnd = s.cc.cwnd_after_recovery(tcb).max(1);
                s.cc.cwnd_event(tcb, CwndEvent::CompleteCwr, now);
            } else {
                s.cc.cwnd_event(tcb, CwndEvent::Loss, now);
                s.cc.set_state(tcb, CaState::Loss, now);
                tcb.ssthresh = s.cc.ssthresh(tcb, now);
                tcb.ca_state = CaState::Loss;
                tcb.cwnd = 1;
            }
            tcb.cwnd_cnt = 0;
        }
    }

    /// One 1 ms step.
    pub fn step(&mut self) {
        let rtts: Vec<Time> = (0..self.subs.len()).map(|k| self.rtt(k)).collect();
        for (s, &rtt) in self.subs.iter_mut().zip(&rtts) {
            s.ack_credit += s.tcb.cwnd as f64 * DT as f64 / rtt as f64;
        }
        // ACKs of the subflows interleaved, one at a time.
        loop {
            let mut any = false;
            for (k, &rtt) in rtts.iter().enumerate() {
                if self.subs[k].ack_credit >= 1.0 {
                    self.subs[k].ack_credit -= 1.0;
                    self.ack(k, rtt);
                    any = true;
                }
            }
            if !any {
                break;
            }
        }
        self.now += DT;
    }

    /// Runs until `warmup_s` (simulated time since the start), then returns the time-averaged
    /// cwnd of each subflow over the next `measure_s` seconds.
    pub fn run_avg(&mut self, warmup_s: u64, measure_s: u64) -> Vec<f64> {
        while self.now < warmup_s * NS_PER_S {
            self.step();
        }
        let mut sum = vec![0.0; self.subs.len()];
        let mut n = 0u64;
        while self.now < (warmup_s + measure_s) * NS_PER_S {
            self.step();
            for (a, s) in sum.iter_mut().zip(&self.subs) {
                *a += s.tcb.cwnd as f64;
            }
            n += 1;
        }
        sum.iter().map(|a| a / n as f64).collect()
    }

    /// Average total window over 400 s after 100 s of warm-up.
    pub fn run_avg_total(&mut self) -> f64 {
        self.run_avg(100, 400).iter().sum()
    }
}

/// Average window of one Reno flow with loss probability `p` and RTT `rtt` in this model
/// (≈ √(3/(2p)) segments for a deterministic sawtooth).
pub fn single_reno(p: f64, rtt: Time) -> f64 {
    Fluid::uncoupled("reno", &[(rtt, p)]).run_avg_total()
}

#[test]
fn reno_in_the_model_follows_the_sawtooth_formula() {
    let p = 1e-3;
    let w = single_reno(p, 100 * NS_PER_MS);
    let expect = (1.5 / p).sqrt();
    assert!((w / expect - 1.0).abs() < 0.1, "{w:.1} vs {expect:.1}");
}
