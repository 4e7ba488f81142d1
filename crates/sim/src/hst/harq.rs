//! `[hst.harq]`: what the LTE radio does to packets outside handovers — HARQ retransmission delay
//! and a residual loss after HARQ — on both directions of every train link.
//!
//! Per transport block, i.e. for the packets that leave the link in the same 1 ms TTI (TS 36.211
//! §4.1), independently of other TTIs (seeded stream `hst/harq/<link>/<direction>`):
//! 1. with probability `residual_loss` it is lost (what HARQ and RLC do not recover; 3GPP
//!    TS 36.213 §7.2.3 link adaptation targets a 10 % first-transmission BLER, and what is left
//!    after HARQ reaches TCP as loss when RLC does not retransmit, e.g. RLC UM);
//! 2. otherwise each transmission fails with probability `bler`; every failure costs one HARQ
//!    round trip, `rtt_ms` (8 ms in LTE FDD: TS 36.213 §8, 4 subframes to the ACK/NACK and 4 to
//!    the retransmission). After `max_retx` failed retransmissions (TS 36.321 §5.4.2.1
//!    `maxHARQ-Tx`, here counted as retransmissions) the packet is lost.
//!
//! Delivery stays in order (the receiver's RLC reorders, TS 36.322 §5.1.2.2): a packet that
//! waits for a retransmission holds back the packets behind it, and a lost one holds them for
//! its `max_retx` round trips.
//!
//! Deviations: the transport block is the packets that finish serialisation in the same TTI (a
//! packet spanning two TTIs belongs to the one it ends in); attempts
//! fail independently with the same `bler` (no chase-combining gain); the retransmissions take
//! no capacity; the loss is a parameter, not derived from the SINR (the radio model's SINR only
//! sets the capacity, `radio.capacity = sinr`). Default: off (no `[hst.harq]`).
use crate::core::rng::Rng;
use crate::core::time::{from_ms_f64, Time, NS_PER_MS};

/// LTE's transmission time interval: one transport block per TTI and direction.
const TTI: Time = NS_PER_MS;
use crate::error::Errors;
use rand::Rng as _;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// `[hst.harq]` (see the module doc).
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct HarqConfig {
    /// Probability that one transmission of a packet fails, [0, 0.5] (LTE targets 0.1).
    #[serde(default = "d_bler")]
    pub bler: f64,
    /// HARQ retransmissions before the packet is given up, 0..=7 (LTE: 3).
    #[serde(default = "d_max_retx")]
    pub max_retx: u32,
    /// HARQ round trip (ms) each retransmission adds, [1, 100] (LTE FDD: 8).
    #[serde(default = "d_rtt")]
    pub rtt_ms: f64,
    /// Probability that a packet is lost after HARQ, [0, 0.1].
    #[serde(default)]
    pub residual_loss: f64,
}

fn d_bler() -> f64 {
    0.1
}
fn d_max_retx() -> u32 {
    3
}
fn d_rtt() -> f64 {
    8.0
}

impl Default for HarqConfig {
    fn default() -> Self {
        HarqConfig {
            bler: d_bler(),
            max_retx: d_max_retx(),
            rtt_ms: d_rtt(),
            residual_loss: 0.0,
        }
    }
}

/// What happens to one transport block: delivered after this extra delay, or lost (holding the packets
/// behind it for this long).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Outcome {
    Delivered(Time),
    Lost(Time),
}

impl HarqConfig {
    pub fn validate(&self, errs: &mut Errors) {
        errs.range("hst.harq.bler", self.bler, 0.0, 0.5);
        errs.range("hst.harq.rtt_ms", self.rtt_ms, 1.0, 100.0);
        errs.range("hst.harq.residual_loss", self.residual_loss, 0.0, 0.1);
        errs.check(
            self.max_retx <= 7,
            "hst.harq.max_retx",
            self.max_retx,
            "must be in [0, 7]",
        );
    }

    /// One packet's fate (see the module doc).
    pub fn draw(&self, rng: &mut Rng) -> Outcome {
        let rtt = from_ms_f64(self.rtt_ms);
        let give_up = rtt * self.max_retx as u64;
        if self.residual_loss > 0.0 && rng.gen::<f64>() < self.residual_loss {
            return Outcome::Lost(give_up);
        }
        let mut failures = 0u64;
        while self.bler > 0.0 && rng.gen::<f64>() < self.bler {
            if failures == self.max_retx as u64 {
                return Outcome::Lost(give_up);
            }
            failures += 1;
        }
        Outcome::Delivered(rtt * failures)
    }

    /// The per-packet process a link direction applies ([`crate::link::LinkDir::set_retransmission`]):
    /// `Ok(extra delay)` or `Err(hold)` for a lost packet; one draw per TTI, shared by the packets
    /// that depart in it.
    pub fn process(&self, mut rng: Rng) -> crate::link::Retransmission {
        let cfg = self.clone();
        let mut last: Option<(u64, Outcome)> = None;
        Box::new(move |departure: Time| {
            let tti = departure / TTI;
            let o = match last {
                Some((t, o)) if t == tti => o,
                _ => {
                    let o = cfg.draw(&mut rng);
                    last = Some((tti, o));
                    o
                }
            };
            match o {
                Outcome::Delivered(d) => Ok(d),
                Outcome::Lost(h) => Err(h),
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::time::NS_PER_MS;
    use crate::core::RngStreams;

    #[test]
    fn delays_are_whole_harq_round_trips_with_geometric_counts_and_exhaustion_loses() {
        let cfg = HarqConfig {
            bler: 0.2,
            max_retx: 3,
            rtt_ms: 8.0,
            residual_loss: 0.0,
        };
        let mut rng = RngStreams::new(7).stream("t");
        let n = 200_000;
        let mut counts = [0u64; 5];
        for _ in 0..n {
            match cfg.draw(&mut rng) {
                Outcome::Delivered(d) => {
                    assert_eq!(d % (8 * NS_PER_MS), 0);
                    counts[(d / (8 * NS_PER_MS)) as usize] += 1;
                }
                Outcome::Lost(h) => {
                    assert_eq!(h, 24 * NS_PER_MS);
                    counts[4] += 1;
                }
            }
        }
        // P(k failures) = 0.8 * 0.2^k for k <= 3, lost = 0.2^4.
        let expect = [0.8, 0.16, 0.032, 0.0064, 0.0016];
        for (k, (&c, &e)) in counts.iter().zip(&expect).enumerate() {
            let got = c as f64 / n as f64;
            let sd = (e * (1.0 - e) / n as f64).sqrt();
            assert!((got - e).abs() < 5.0 * sd, "k = {k}: {got} vs {e}");
        }
    }

    #[test]
    fn residual_loss_is_the_configured_fraction_and_off_means_untouched() {
        let cfg = HarqConfig {
            bler: 0.0,
            residual_loss: 0.003,
            ..HarqConfig::default()
        };
        let mut rng = RngStreams::new(1).stream("t");
        let n = 400_000;
        let lost = (0..n)
            .filter(|_| matches!(cfg.draw(&mut rng), Outcome::Lost(_)))
            .count() as f64
            / n as f64;
        let sd = (0.003f64 * 0.997 / n as f64).sqrt();
        assert!((lost - 0.003).abs() < 5.0 * sd, "{lost}");
        let off = HarqConfig {
            bler: 0.0,
            residual_loss: 0.0,
            ..HarqConfig::default()
        };
        assert!((0..1000).all(|_| off.draw(&mut rng) == Outcome::Delivered(0)));
    }

    /// On a link, a packet waiting for HARQ retransmissions holds back the ones behind it, and a
    /// lost one holds them for its round trips (in-order delivery, as RLC does); the loss counts
    /// as a link loss.
    #[test]
    fn a_link_delivers_in_order_behind_a_retransmitted_or_lost_packet() {
        use crate::link::LinkDir;
        use crate::packet::{Packet, PacketKind};
        let ms = NS_PER_MS;
        let mut dir: LinkDir<Packet> = LinkDir::constant(100.0, 10.0, 100);
        // Packet 0: two retransmissions (16 ms); packet 2: lost after 3 (24 ms); others clean.
        let mut k = 0;
        dir.set_retransmission(Box::new(move |_| {
            k += 1;
            match k {
                1 => Ok(16 * ms),
                3 => Err(24 * ms),
                _ => Ok(0),
            }
        }));
        for seq in 0..5u64 {
            let mut p = Packet::new(PacketKind::Data);
            p.seq = seq;
            p.len = 1000;
            dir.enqueue(0, p).unwrap();
        }
        let mut out = Vec::new();
        dir.wake(Time::MAX / 2, &mut out);
        let got: Vec<(u64, Time)> = out.iter().map(|(t, p)| (p.seq, *t)).collect();
        assert_eq!(
            got.iter().map(|g| g.0).collect::<Vec<_>>(),
            vec![0, 1, 3, 4],
            "packet 2 lost"
        );
        let tx = (1000 + 40) * 8 * 10; // ns per packet at 100 Mbit/s (wire bytes >= payload)
        let (t0, t1, t3) = (got[0].1, got[1].1, got[2].1);
        assert!(t0 >= 26 * ms && t0 < 26 * ms + 2 * tx as Time, "packet 0 at {t0}");
        assert_eq!(t1, t0, "packet 1 waits behind packet 0");
        assert!(
            t3 >= 10 * ms + 24 * ms,
            "packet 3 waits for packet 2's last attempt: {t3}"
        );
        assert_eq!(dir.stats().drops_loss, 1);
        assert_eq!(dir.stats().delivered_packets, 4);
    }

    /// Packets leaving in the same 1 ms TTI share one transport block's fate; the next TTI draws
    /// afresh.
    #[test]
    fn packets_of_one_tti_share_their_transport_blocks_fate() {
        let cfg = HarqConfig {
            bler: 0.5,
            max_retx: 7,
            rtt_ms: 8.0,
            residual_loss: 0.0,
        };
        let mut p = cfg.process(RngStreams::new(3).stream("t"));
        let ms = NS_PER_MS;
        let mut differ = 0;
        for k in 0..200u64 {
            let a = p(k * ms + 100);
            assert_eq!(p(k * ms + 900_000), a, "TTI {k}");
            let b = p((k + 1) * ms - 1);
            assert_eq!(b, a);
            differ += (p((k + 1) * ms) != a) as u32;
        }
        assert!(differ > 50, "{differ} of 200 TTIs differ from the previous one");
    }

    #[test]
    fn out_of_range_fields_are_named() {
        let mut errs = Errors::default();
        HarqConfig {
            bler: 0.9,
            max_retx: 9,
            rtt_ms: 0.0,
            residual_loss: 0.5,
        }
        .validate(&mut errs);
        let fields: Vec<String> = errs.0.iter().map(|e| e.to_string()).collect();
        for f in [
            "hst.harq.bler",
            "hst.harq.max_retx",
            "hst.harq.rtt_ms",
            "hst.harq.residual_loss",
        ] {
            assert!(fields.iter().any(|e| e.contains(f)), "{f} not in {fields:?}");
        }
        let mut ok = Errors::default();
        HarqConfig::default().validate(&mut ok);
        assert!(ok.is_empty());
    }
}
