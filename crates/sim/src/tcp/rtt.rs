//! RTT estimation and the retransmission timeout (RFC 6298; Linux `tcp_rtt_estimator`, `tcp_set_rto`).
use crate::core::time::{Time, NS_PER_MS, NS_PER_S};

/// How the RTO is derived from the estimator.
#[derive(Clone, Copy, Debug, PartialEq, Eq, serde::Serialize, serde::Deserialize, schemars::JsonSchema)]
#[serde(rename_all = "kebab-case")]
pub enum RtoStyle {
    /// Linux: `RTO = SRTT + max(4·RTTVAR, min_rto)` — the variance term never falls below
    /// `tcp_rto_min` (Linux keeps `mdev_max >= rto_min`), so RTO ≥ SRTT + 200 ms by default.
    Linux,
    /// RFC 6298 §2: `RTO = max(min_rto, SRTT + max(G, 4·RTTVAR))` with clock granularity G = 1 ms.
    Rfc6298,
}

#[derive(Clone, Debug)]
pub struct RttEstimator {
    pub srtt: Time,
    pub rttvar: Time,
    pub latest: Time,
    pub min_rtt: Time,
    has_sample: bool,
    style: RtoStyle,
    min_rto: Time,
    max_rto: Time,
    initial_rto: Time,
    sum_ns: f64,
    samples: u64,
}

impl RttEstimator {
    pub fn new(style: RtoStyle, min_rto: Time, initial_rto: Time) -> Self {
        RttEstimator {
            srtt: 0,
            rttvar: 0,
            latest: 0,
            min_rtt: Time::MAX,
            has_sample: false,
            style,
            min_rto,
            max_rto: 120 * NS_PER_S,
            initial_rto,
            sum_ns: 0.0,
            samples: 0,
        }
    }

    /// RFC 6298 §2.2–2.3 with α = 1/8, β = 1/4.
    pub fn on_sample(&mut self, rtt: Time) {
        let rtt = rtt.max(1);
        self.latest = rtt;
        self.min_rtt = self.min_rtt.min(rtt);
        self.sum_ns += rtt as f64;
        self.samples += 1;
        if !self.has_sample {
            self.srtt = rtt;
            self.rttvar = rtt / 2;
            self.has_sample = true;
        } else {
            let err = self.srtt.abs_diff(rtt);
            self.rttvar = (3 * self.rttvar + err) / 4;
            self.srtt = (7 * self.srtt + rtt) / 8;
        }
    }

    pub fn has_sample(&self) -> bool {
        self.has_sample
    }

    /// The base RTO before exponential backoff.
    pub fn rto(&self) -> Time {
        if !self.has_sample {
            return self.initial_rto;
        }
        let rto = match self.style {
            RtoStyle::Linux => self.srtt + (4 * self.rttvar).max(self.min_rto),
            RtoStyle::Rfc6298 => (self.srtt + (4 * self.rttvar).max(NS_PER_MS)).max(self.min_rto),
        };
        rto.min(self.max_rto)
    }

    /// RTO after `backoff` doublings, capped at 120 s (Linux `TCP_RTO_MAX`).
    pub fn backed_off_rto(&self, backoff: u32) -> Time {
        let base = self.rto();
        base.saturating_mul(1u64 << backoff.min(20)).min(self.max_rto)
    }

    pub fn mean_rtt(&self) -> Option<f64> {
        (self.samples > 0).then(|| self.sum_ns / self.samples as f64)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    const MS: Time = NS_PER_MS;

    #[test]
    fn first_sample_sets_srtt_and_half_rttvar() {
        let mut e = RttEstimator::new(RtoStyle::Rfc6298, 1000 * MS, 1000 * MS);
        assert_eq!(e.rto(), 1000 * MS);
        e.on_sample(100 * MS);
        assert_eq!(e.srtt, 100 * MS);
        assert_eq!(e.rttvar, 50 * MS);
        // 100 + 4·50 = 300 ms, below the RFC's 1 s minimum.
        assert_eq!(e.rto(), 1000 * MS);
    }

    #[test]
    fn linux_style_rto_is_srtt_plus_at_least_min_rto() {
        let mut e = RttEstimator::new(RtoStyle::Linux, 200 * MS, 1000 * MS);
        for _ in 0..50 {
            e.on_sample(40 * MS);
        }
        assert_eq!(e.srtt, 40 * MS);
        assert_eq!(e.rto(), 240 * MS);
        assert_eq!(e.backed_off_rto(2), 960 * MS);
        assert_eq!(e.backed_off_rto(30), 120 * NS_PER_S);
    }

    #[test]
    fn smoothing_follows_rfc_gains() {
        let mut e = RttEstimator::new(RtoStyle::Rfc6298, 0, 1000 * MS);
        e.on_sample(80 * MS);
        e.on_sample(160 * MS);
        assert_eq!(e.srtt, 90 * MS); // 7/8·80 + 1/8·160
        assert_eq!(e.rttvar, 50 * MS); // 3/4·40 + 1/4·80
    }
}
