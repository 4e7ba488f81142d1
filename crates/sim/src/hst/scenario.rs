//! The `[hst]` scenario section: a train whose handovers drive links, and the handover table PHA
//! schedulers consult.
use super::gps;
use super::table::{HandoverTable, ObservedHandover};
use crate::core::time::{from_secs_f64, to_secs_f64, Time};
use crate::core::RngStreams;
use crate::error::{ConfigError, Errors};
use crate::link::config::{ForwardingConfig, LinkConfig, OutageConfig, RateStep};
use crate::link::OutageQueued;
use crate::radio::config::{CapacityConfig, HandoverConfig, HstConfig, RadioConfig, TrainConfig, UplinkAtHandover};
use crate::radio::effect::{capacity_schedule, outages_and_spikes};
use crate::radio::handover::{HandoverEvent, HstRun};
use crate::radio::mobility::{gps_samples, Mobility};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::path::Path;

/// A high-speed train (P0): mobility, two or more operators' cells, handovers.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct HstScenario {
    /// Seed of the environment (shadowing map); keep it to ride the same line again.
    #[serde(default)]
    pub environment_seed: u64,
    #[serde(default)]
    pub train: TrainConfig,
    #[serde(default)]
    pub radio: RadioConfig,
    #[serde(default)]
    pub handover: HandoverConfig,
    /// `links[i]` follows the handovers of operator i (`radio.operators` order): delivery stops
    /// on it during each handover interruption, queued packets are held.
    pub links: Vec<String>,
    /// Handover table (CSV, relative to the scenario file) for `pha(...)` schedulers.
    #[serde(default)]
    pub table: Option<String>,
    /// A recorded GPS trace replacing the synthetic GPS sampler (`train.gps`) for PHA and PHA-D.
    #[serde(default)]
    pub gps_trace: Option<GpsTraceConfig>,
    /// HARQ delay and residual loss on the train links outside handovers (`hst/harq.rs`); off
    /// when absent.
    #[serde(default)]
    pub harq: Option<super::harq::HarqConfig>,
}

/// `[hst.gps_trace]`: the GPS fixes PHA and PHA-D see come from a file instead of the synthetic
/// sampler. The train itself (true position, handovers) still follows `train`, so the trace
/// should come from a ride at the same speed and starting point (e.g. to replay a receiver's
/// real error pattern). Formats in `hst/README.md`.
#[derive(Clone, Debug, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GpsTraceConfig {
    /// The trace, relative to the scenario file: CSV `time_s,position_m` (time from the run's
    /// start, metres along the track), or with `track` an NMEA 0183 log (GGA/RMC, checksums
    /// verified) whose first fix is t = 0.
    pub file: String,
    /// Track polyline CSV `lat,lon` (WGS84) onto which the NMEA fixes are projected; its first
    /// point is 0 m. Without it `file` is the `time_s,position_m` CSV.
    #[serde(default)]
    pub track: Option<String>,
    /// NMEA fixes farther than this from the track are dropped, m, in (0, 100000]. Default 50.
    #[serde(default = "default_max_offset")]
    pub max_offset_m: f64,
}

fn default_max_offset() -> f64 {
    50.0
}

impl GpsTraceConfig {
    /// Reads and parses the trace: fixes `(time, metres along the track)` sorted by time.
    pub fn load(&self, base_dir: &Path) -> Result<Vec<(Time, f64)>, Vec<ConfigError>> {
        let read = |field: &str, f: &str| {
            let path = base_dir.join(f);
            mobipath_hst::input::read_text(&path, mobipath_hst::input::MAX_DATA_FILE_BYTES).map_err(|e| {
                vec![ConfigError::new(
                    field,
                    f,
                    format!("cannot read {}: {e}", path.display()),
                )]
            })
        };
        if !(self.max_offset_m > 0.0 && self.max_offset_m <= 100_000.0) {
            return Err(vec![ConfigError::new(
                "hst.gps_trace.max_offset_m",
                crate::error::fmt_num(self.max_offset_m),
                "must be in (0, 100000]",
            )]);
        }
        let text = read("hst.gps_trace.file", &self.file)?;
        let pts: Vec<(f64, f64)> = match &self.track {
            None => gps::parse_position_trace(&text, &self.file)?,
            Some(t) => {
                let track = gps::GeoTrack::from_csv(&read("hst.gps_trace.track", t)?, t)?;
                let fixes = gps::parse_nmea(&text, &self.file)?;
                let (pos, _) = gps::positions_along(&fixes, &track, self.max_offset_m);
                let Some(&(t0, _)) = pos.first() else {
                    let msg = format!(
                        "no fix within {} m of the track {t}",
                        crate::error::fmt_num(self.max_offset_m)
                    );
                    return Err(vec![ConfigError::new("hst.gps_trace.file", &self.file, msg)]);
                };
                pos.into_iter().map(|(t, s)| (t - t0, s)).collect()
            }
        };
        Ok(pts.into_iter().map(|(t, s)| (from_secs_f64(t), s)).collect())
    }
}

impl HstScenario {
    pub fn model(&self) -> HstConfig {
        HstConfig {
            environment_seed: self.environment_seed,
            train: self.train.clone(),
            radio: self.radio.clone(),
            handover: self.handover.clone(),
        }
    }

    pub fn validate(&self, link_names: &[String], base_dir: &Path, errs: &mut Errors) {
        if let Err(e) = self.model().check() {
            errs.0.extend(e);
        }
        let n_ops = self.radio.operators.len();
        if self.links.len() > n_ops {
            errs.push(ConfigError::new(
                "hst.links",
                self.links.len(),
                format!("more links than operators ({n_ops})"),
            ));
        }
        for (i, l) in self.links.iter().enumerate() {
            if !link_names.contains(l) {
                errs.push(ConfigError::new(format!("hst.links[{i}]"), l, "no link with this name"));
            }
            if self.links[..i].contains(l) {
                errs.push(ConfigError::new(
                    format!("hst.links[{i}]"),
                    l,
                    "already follows another operator: each link follows one operator",
                ));
            }
        }
        if let Some(h) = &self.harq {
            h.validate(errs);
        }
        if let Some(g) = &self.gps_trace {
            if let Err(e) = g.load(base_dir) {
                errs.0.extend(e);
            }
        }
        if let Some(t) = &self.table {
            match self.load_table(base_dir) {
                Err(e) => errs.0.extend(e),
                Ok(_) if t.is_empty() => errs.push(ConfigError::new("hst.table", "", "must name a CSV file")),
                Ok(Some(table)) => {
                    let ops: Vec<String> = (0..n_ops).map(|i| self.operator_name(i)).collect();
                    errs.0.extend(table.check_operators(&ops, t));
                }
                Ok(None) => {}
            }
        }
    }

    pub fn load_table(&self, base_dir: &Path) -> Result<Option<HandoverTable>, Vec<ConfigError>> {
        let Some(t) = &self.table else { return Ok(None) };
        let path = base_dir.join(t);
        let text = mobipath_hst::input::read_text(&path, mobipath_hst::input::MAX_DATA_FILE_BYTES).map_err(|e| {
            vec![ConfigError::new(
                "hst.table",
                t,
                format!("cannot read {}: {e}", path.display()),
            )]
        })?;
        HandoverTable::from_csv(&text, t).map(Some)
    }

    /// Operator name of operator `i`.
    pub fn operator_name(&self, i: usize) -> String {
        self.radio
            .operators
            .get(i)
            .map(|o| o.name.clone())
            .unwrap_or_else(|| format!("op{i}"))
    }
}

/// One run of the train: its handovers and GPS fixes.
pub struct TrainRun {
    pub handovers: Vec<HandoverEvent>,
    pub mobility: Mobility,
    /// GPS fixes (time, metres along the track), every `train.gps.period_ms`.
    pub gps: Vec<(Time, f64)>,
    /// Per operator, the SINR capacity schedule `(from, bit/s)` when `radio.capacity` is
    /// `sinr` (the links then follow it); `None` for a constant capacity (the links keep their
    /// own configured rate).
    pub capacity: Option<Vec<Vec<(Time, u64)>>>,
    /// The radio run (RSRP maps, mobility) behind all of the above.
    pub radio: HstRun,
}

impl TrainRun {
    pub fn new(h: &HstScenario, seed: u64, duration: Time) -> Self {
        let model = h.model();
        let run = HstRun::new(&model, seed, duration);
        let handovers = run.handovers(&model.handover);
        let capacity = matches!(model.radio.capacity, CapacityConfig::Sinr { .. }).then(|| {
            (0..model.radio.operators.len())
                .map(|op| capacity_schedule(&run, &model, &handovers, op))
                .collect()
        });
        let mobility = run.mobility.clone();
        let streams = RngStreams::new(seed);
        let gps = gps_samples(&mobility, &model.train.gps, &streams, duration);
        TrainRun {
            handovers,
            mobility,
            gps,
            capacity,
            radio: run,
        }
    }

    /// The run of a scenario's train: as [`TrainRun::new`], with the GPS fixes of
    /// `[hst.gps_trace]` (those before `duration`) when the scenario gives one.
    pub fn for_scenario(h: &HstScenario, seed: u64, duration: Time, base_dir: &Path) -> Self {
        let mut run = TrainRun::new(h, seed, duration);
        if let Some(Ok(fixes)) = h.gps_trace.as_ref().map(|g| g.load(base_dir)) {
            run.gps = fixes.into_iter().filter(|&(t, _)| t < duration).collect();
        }
        run
    }

    /// Operator `op`'s serving-cell downlink SINR (dB) every `period` (radio/effect.rs).
    pub fn serving_sinr_db(&self, op: usize, period: Time) -> Vec<(Time, f64)> {
        crate::radio::effect::sinr_db_schedule(&self.radio, &self.handovers, op, period)
    }

    /// The GPS sampling period: the median spacing of the fixes (a recorded trace), else the
    /// configured `train.gps.period_ms`.
    pub fn gps_period(&self, h: &HstScenario) -> Time {
        let mut d: Vec<Time> = self
            .gps
            .windows(2)
            .map(|w| w[1].0 - w[0].0)
            .filter(|&x| x > 0)
            .collect();
        if h.gps_trace.is_none() || d.is_empty() {
            return crate::core::time::from_ms_f64(h.train.gps.period_ms);
        }
        d.sort_unstable();
        d[d.len() / 2]
    }

    /// The latest GPS fix at or before `t`.
    pub fn gps_at(&self, t: Time) -> Option<f64> {
        let i = self.gps.partition_point(|&(ts, _)| ts <= t);
        (i > 0).then(|| self.gps[i - 1].1)
    }

    /// Handovers as a GPS-tagged observer sees them (for learning tables).
    pub fn observed(&self, h: &HstScenario) -> Vec<ObservedHandover> {
        self.handovers
            .iter()
            .filter_map(|e| {
                Some(ObservedHandover {
                    operator: h.operator_name(e.operator),
                    gps_start_m: self.gps_at(e.start)?,
                    gps_end_m: self.gps_at(e.end)?,
                })
            })
            .collect()
    }
}

/// Learns a table from `runs` preliminary runs (seeds `first_seed..first_seed+runs`), each
/// handover widened by `margin_m` (default: 3 σ of the GPS error), accumulated into `table` run by
/// run (the table's `min_support` decides which stretches become ranges).
pub fn learn_table(
    h: &HstScenario,
    duration_s: f64,
    first_seed: u64,
    runs: u64,
    margin_m: Option<f64>,
    table: &mut HandoverTable,
) {
    let margin = margin_m.unwrap_or(3.0 * h.train.gps.sigma_m);
    let duration = from_secs_f64(duration_s);
    for seed in first_seed..first_seed + runs {
        let run = TrainRun::new(h, seed, duration);
        table.learn(&run.observed(h), margin);
    }
}

/// The link that follows operator `op` on the train: `orig` with one `hold` outage per handover
/// (the interruption) carrying X2 forwarding of the held downlink packets (`forwarding_delay_ms`,
/// `forwarding_loss`; semantics in `radio/effect.rs` and `link::Forwarding`), appended to the
/// link's own outages (a handover overlapping one of those is left out), the uplink held or
/// dropped during it (`handover.uplink`); and, when `capacity` is given (`radio.capacity = sinr`), the forward
/// capacity replaced by that schedule while the reverse (uplink, ACKs) keeps the configured
/// capacity. Handovers with a zero interruption change nothing.
pub fn train_link(
    orig: &LinkConfig,
    events: &[HandoverEvent],
    op: usize,
    ho: &HandoverConfig,
    capacity: Option<&[(Time, u64)]>,
) -> LinkConfig {
    let mut l = orig.clone();
    let (outages, spikes) = outages_and_spikes(events, op, ho);
    for (o, sp) in outages.iter().zip(&spikes) {
        let (a, b) = (to_secs_f64(o.start), to_secs_f64(o.end));
        // The link's own outages win over a handover that overlaps one (they must not overlap).
        let clash = orig
            .outages
            .iter()
            .any(|u| u.start_s < b && a < u.start_s + u.duration_s);
        if o.end <= o.start || clash {
            continue;
        }
        l.outages.push(OutageConfig {
            start_s: to_secs_f64(o.start),
            duration_s: to_secs_f64(o.end - o.start),
            queued: OutageQueued::Hold,
            forwarding: Some(ForwardingConfig {
                delay_ms: sp.extra_delay as f64 / 1e6,
                loss: sp.loss_prob,
                queued_loss: sp.queued_loss,
                buffer_bytes: sp.buffer_bytes,
            }),
            reverse_queued: (ho.uplink == UplinkAtHandover::Discard).then_some(OutageQueued::Drop),
        });
    }
    if let Some(points) = capacity {
        let mut rev = l.reverse.clone().unwrap_or_default();
        if rev.rate_mbps.is_none() && rev.rate_schedule.is_none() && rev.trace.is_none() {
            (rev.rate_mbps, rev.rate_schedule, rev.trace) = (l.rate_mbps, l.rate_schedule.clone(), l.trace.clone());
        }
        l.reverse = Some(rev);
        l.rate_mbps = None;
        l.trace = None;
        l.rate_schedule = Some(
            points
                .iter()
                .map(|&(t, bps)| RateStep {
                    at_s: to_secs_f64(t),
                    rate_mbps: bps as f64 / 1e6,
                })
                .collect(),
        );
    }
    l
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::time::{NS_PER_MS, NS_PER_S};
    use crate::core::RngStreams;

    fn link() -> LinkConfig {
        toml::from_str("name = \"lte\"\nrate_mbps = 25\ndelay_ms = 20\nqueue_packets = 100\noutages = [ { start_s = 0.5, duration_s = 0.2 } ]").unwrap()
    }

    fn hst(capacity: &str) -> HstScenario {
        toml::from_str(&format!("links = [\"lte\"]\n[radio.capacity]\n{capacity}")).unwrap()
    }

    #[test]
    fn train_link_adds_forwarding_outages_and_keeps_the_links_own() {
        let h = hst("mode = \"constant\"\nrate_mbps = 25");
        let run = TrainRun::new(&h, 1, 70 * NS_PER_S);
        assert!(run.capacity.is_none());
        let mine: Vec<&HandoverEvent> = run.handovers.iter().filter(|e| e.operator == 0).collect();
        let mut l = train_link(&link(), &run.handovers, 0, &h.handover, None);
        assert_eq!(l.outages.len(), 1 + mine.len());
        assert_eq!(l.outages[0], link().outages[0]);
        let f = l.outages[1].forwarding.clone().unwrap();
        assert_eq!((f.delay_ms, f.loss, f.queued_loss), (10.0, 0.0, 1.0));
        assert_eq!(l.rate_mbps, Some(25.0));
        // A handover overlapping one of the link's own outages is left out (no overlap error).
        l.outages.truncate(1);
        l.outages[0].start_s = to_secs_f64(mine[0].start) - 0.01;
        let l2 = train_link(&l, &run.handovers, 0, &h.handover, None);
        assert_eq!(l2.outages.len(), mine.len());
        assert!(l2
            .build::<crate::packet::Packet>(Path::new("."), &RngStreams::new(1))
            .is_ok());
    }

    #[test]
    fn sinr_capacity_varies_along_the_track_bounded_by_max_and_spares_the_uplink() {
        let h = hst("mode = \"sinr\"\nmax_mbps = 20\nperiod_ms = 100");
        let run = TrainRun::new(&h, 1, 70 * NS_PER_S);
        let sched = &run.capacity.as_ref().unwrap()[0];
        let l = train_link(&link(), &run.handovers, 0, &h.handover, Some(sched));
        let s = RngStreams::new(1);
        let (fwd, rev) = l.build::<crate::packet::Packet>(Path::new("."), &s).unwrap();
        let rates: Vec<f64> = (0..700).map(|i| fwd.rate_bps_at(i * 100 * NS_PER_MS + 1)).collect();
        let (lo, hi) = rates
            .iter()
            .fold((f64::INFINITY, 0.0f64), |(a, b), &r| (a.min(r), b.max(r)));
        assert!(hi <= 20e6 && hi == 20e6, "max {hi}");
        assert!(lo < 10e6, "never dips at a cell edge: min {lo}");
        let distinct: std::collections::BTreeSet<u64> = rates.iter().map(|&r| r as u64).collect();
        assert!(distinct.len() > 10, "{distinct:?}");
        // The uplink keeps the configured 25 Mbit/s (outside outages).
        assert_eq!(rev.rate_bps_at(100 * NS_PER_MS), 25e6);
        // Deterministic: same run seed, same schedule.
        assert_eq!(TrainRun::new(&h, 1, 70 * NS_PER_S).capacity.unwrap()[0], *sched);
    }
}
