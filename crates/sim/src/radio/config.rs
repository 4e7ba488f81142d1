//! Configuration of the high-speed-train model: train (track, speed, GPS), radio (operators'
//! site layout, path loss, shadowing, capacity) and handover (A3 + X2 execution).
//!
//! Every struct is `deny_unknown_fields` and every field has a default, so `HstConfig::default()`
//! is the P0 setup (ns-3 study of the J-KICS 2024 paper: 300 km/h, eNBs every 1340 m, 300 m from
//! the track, A3 with 3 dB hysteresis and 256 ms TTT, X2 handover, 25 Mbit/s per link).
//! [`HstConfig::validate`] reports *every* bad value with its dotted field path and allowed range.
use crate::error::{fmt_num, ConfigError, Errors};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The time-to-trigger values 3GPP allows (TS 36.331 §6.3.5, `TimeToTrigger`), in ms.
pub const TTT_ALLOWED_MS: [u32; 16] = [
    0, 40, 64, 80, 100, 128, 160, 256, 320, 480, 512, 640, 1024, 1280, 2560, 5120,
];
/// Highest accepted train speed (km/h); the world record is 603 km/h (maglev).
pub const MAX_SPEED_KMH: f64 = 1000.0;
/// Two operators whose sites line up within this distance (mod the spacing) hand over at nearly
/// the same place; at 300 km/h 100 m is 1.2 s, about the spread of one handover's position
/// caused by shadowing, so such a layout is reported as forcing simultaneous handovers.
pub const MIN_OPERATOR_SEPARATION_M: f64 = 100.0;

/// Everything the high-speed-train model needs.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, default)]
pub struct HstConfig {
    /// Seed of the *environment*: site shadowing maps. Keep it fixed to ride the same line again;
    /// the run's own seed only drives the small run-to-run terms and GPS errors.
    pub environment_seed: u64,
    pub train: TrainConfig,
    pub radio: RadioConfig,
    pub handover: HandoverConfig,
}

/// The train: its track, speed profile and GPS receiver.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct TrainConfig {
    /// Track as a polyline of `[x, y]` points in metres (at least 2, no zero-length segment).
    /// Empty (default) = a straight track along the x axis. Beyond the last point the track
    /// continues straight along the last segment.
    pub track_xy_m: Vec<[f64; 2]>,
    /// Distance along the track (m) at t = 0, >= 0. Default 250 m: with the default layout
    /// operator B has a cell border at 0, and a train starting on a border would begin with a
    /// handover an ordinary ride would not have; 250 m puts it inside a cell of both operators.
    pub start_m: f64,
    /// Constant speed in km/h, in [0, 1000]; used when `speed_profile` is empty.
    pub speed_kmh: f64,
    /// Piecewise-constant speed: the first `from_s` must be 0, `from_s` strictly increasing,
    /// speeds in [0, 1000] km/h. The last speed holds until the end.
    pub speed_profile: Vec<SpeedStep>,
    pub gps: GpsConfig,
}

impl Default for TrainConfig {
    fn default() -> Self {
        TrainConfig {
            track_xy_m: Vec::new(),
            start_m: 250.0,
            speed_kmh: 300.0,
            speed_profile: Vec::new(),
            gps: GpsConfig::default(),
        }
    }
}

/// One step of a speed profile: from `from_s` seconds on, the train runs at `speed_kmh`.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SpeedStep {
    pub from_s: f64,
    pub speed_kmh: f64,
}

/// GPS receiver: along-track position samples with a Gaussian error.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct GpsConfig {
    /// Sampling period in ms, in [1, 10000] (P0: 10 ms).
    pub period_ms: f64,
    /// Standard deviation of the along-track error in metres, in [0, 1000].
    pub sigma_m: f64,
    /// Correlation time of the error in seconds, in [0, 3600]: 0 = independent samples, else
    /// a first-order Gauss–Markov process (consecutive fixes of real receivers are correlated).
    pub correlation_s: f64,
}

impl Default for GpsConfig {
    fn default() -> Self {
        GpsConfig {
            period_ms: 10.0,
            sigma_m: 5.0,
            correlation_s: 0.0,
        }
    }
}

/// Radio environment: operators' sites, path loss and shadowing, and per-UE capacity.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct RadioConfig {
    /// One entry per operator (one LTE modem each); 1 to 8 operators.
    pub operators: Vec<OperatorConfig>,
    /// Carrier frequency in MHz, in [100, 6000] (the path-loss formula's range of use).
    pub carrier_mhz: f64,
    /// Base-station antenna height above rooftop (Dhb in TR 36.942 §4.5), m, in [0, 50].
    pub bs_height_m: f64,
    /// eNB transmit power in dBm over the whole bandwidth, in [0, 60].
    pub tx_power_dbm: f64,
    /// Channel bandwidth in MHz: one of 1.4, 3, 5, 10, 15, 20 (sets the RSRP per-RE split and noise).
    pub bandwidth_mhz: f64,
    /// UE noise figure in dB, in [0, 20].
    pub noise_figure_db: f64,
    pub shadowing: ShadowingConfig,
    pub capacity: CapacityConfig,
}

impl Default for RadioConfig {
    fn default() -> Self {
        RadioConfig {
            operators: vec![OperatorConfig::named("A", 0.0), OperatorConfig::named("B", 670.0)],
            carrier_mhz: 2000.0,
            bs_height_m: 15.0,
            tx_power_dbm: 46.0,
            bandwidth_mhz: 10.0,
            noise_figure_db: 9.0,
            shadowing: ShadowingConfig::default(),
            capacity: CapacityConfig::default(),
        }
    }
}

/// One operator's sites: site `k` sits at distance `offset_m + k·spacing_m` along the track
/// and `lateral_m` to its left (negative = right).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct OperatorConfig {
    pub name: String,
    /// Site spacing along the track, m, in [100, 100000] (P0: 1340 m, suburban).
    #[serde(default = "default_spacing")]
    pub spacing_m: f64,
    /// Position of site 0 along the track, m, in [0, spacing_m).
    #[serde(default)]
    pub offset_m: f64,
    /// Distance of the sites from the track, m, |lateral_m| in [10, 10000] (P0: 300 m).
    #[serde(default = "default_lateral")]
    pub lateral_m: f64,
}

fn default_spacing() -> f64 {
    1340.0
}
fn default_lateral() -> f64 {
    300.0
}

impl OperatorConfig {
    pub fn named(name: &str, offset_m: f64) -> Self {
        OperatorConfig {
            name: name.into(),
            spacing_m: default_spacing(),
            offset_m,
            lateral_m: default_lateral(),
        }
    }
}

/// Log-normal shadowing: a spatially correlated environment part plus a run-to-run part.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ShadowingConfig {
    /// Standard deviation of the environment's shadowing, dB, in [0, 20]. Default 4 dB: TR 38.901
    /// Table 7.4.1-1 RMa LOS before the breakpoint (high-speed lines have line of sight to their
    /// masts). It puts the default environment at 3.9 / 3.6 handovers per minute per operator
    /// (P0: 3; ns-3's LTE model: 4 in 70 s); 6 dB gave 5.7 / 5.1 there and 8 dB (RMa NLOS) more,
    /// through ping-pong.
    pub sigma_db: f64,
    /// Gudmundson decorrelation distance (correlation e^-1), m, in [1, 10000]. Default 50 m
    /// (TR 36.942 / TR 25.942 macro cell).
    pub decorrelation_m: f64,
    /// Correlation of the shadowing seen from different sites, in [0, 1) (TR 36.942: 0.5).
    pub inter_site_correlation: f64,
    /// Standard deviation of the run-to-run term, dB, in [0, 10]. Default 1 dB: small enough that
    /// the environment decides where handovers happen (most runs within one measurement period).
    pub run_sigma_db: f64,
    /// Grid step of the precomputed maps, m, in [0.1, 100].
    pub grid_m: f64,
}

impl Default for ShadowingConfig {
    fn default() -> Self {
        ShadowingConfig {
            sigma_db: 4.0,
            decorrelation_m: 50.0,
            inter_site_correlation: 0.5,
            run_sigma_db: 1.0,
            grid_m: 1.0,
        }
    }
}

/// Per-UE downlink capacity of one operator's link.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, tag = "mode", rename_all = "snake_case")]
pub enum CapacityConfig {
    /// A constant rate (P0: 25 Mbit/s), in (0, 100000] Mbit/s.
    Constant { rate_mbps: f64 },
    /// Attenuated Shannon bound of the serving cell's SINR (TR 36.942 Annex A), capped at
    /// `max_mbps`, sampled every `period_ms`.
    Sinr {
        #[serde(default = "default_rate")]
        max_mbps: f64,
        #[serde(default = "default_cap_period")]
        period_ms: f64,
    },
}

fn default_rate() -> f64 {
    25.0
}
fn default_cap_period() -> f64 {
    100.0
}

impl Default for CapacityConfig {
    fn default() -> Self {
        CapacityConfig::Constant {
            rate_mbps: default_rate(),
        }
    }
}

/// A3-event handover decision and X2 handover execution.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct HandoverConfig {
    /// A3 hysteresis in dB, in [0, 30] (TS 36.331 `hysteresis` is 0..30 in 0.5 dB steps).
    pub hysteresis_db: f64,
    /// A3 offset in dB, in [-15, 15] (TS 36.331 `a3-Offset`).
    pub a3_offset_db: f64,
    /// Time to trigger in ms; one of the 3GPP values (TS 36.331 `TimeToTrigger`).
    pub time_to_trigger_ms: u32,
    /// RSRP measurement period in ms, in [1, 1000]. Default 200 ms: the intra-frequency
    /// measurement period of TS 36.133 §8.1.2.2 and ns-3's UE measurement period, which the
    /// L3 filter coefficient k = 4 assumes.
    pub measurement_period_ms: f64,
    /// L3 filter coefficient k (TS 36.331 §5.5.3.2, a = 1/2^(k/4)), in [0, 19]; 0 = no filter.
    pub l3_filter_k: u32,
    /// Interruption (detach from source to first delivery via target), ms, in [0, 10000].
    pub interruption_ms: f64,
    /// Extra delay of the downlink data forwarded over X2 from source to target, ms, in [0, 10000].
    pub forwarding_delay_ms: f64,
    /// Probability that a packet forwarded over X2 (one reaching the source during the
    /// interruption, or a source-buffer packet with `source_buffer = "forward"`) is lost, in [0, 1].
    pub forwarding_loss: f64,
    /// What happens to the downlink packets already in the source eNB's buffer at the detach.
    pub source_buffer: SourceBuffer,
    /// What happens to the uplink (ACKs, MP_PRIO) during the interruption.
    pub uplink: UplinkAtHandover,
    /// How the interruption comes about: `"fixed"` (default: `interruption_ms` after the A3
    /// trigger) or `"signalling"` (the X2 handover's RRC/X2 steps, RACH and radio-link failure
    /// of `radio/signalling.rs`; the interruption is then an output, reported per handover).
    pub model: HandoverModel,
    /// The step delays and RLF timers of `model = "signalling"` (ignored by `"fixed"`).
    pub signalling: SignallingConfig,
    /// The handover type (`radio/nr.rs`): `"hard"` (break before make, TS 38.300 §9.2.3.2),
    /// `"cho"` (conditional handover, TS 38.300 §9.2.3.4) or `"daps"` (dual active protocol
    /// stack, TS 38.300 §9.2.3.1 and §9.2.3.2). Absent = hard with the LTE model's
    /// outputs exactly as before; given (even `"hard"`), the summary lists each handover's type,
    /// failure and re-establishment, and `model = "signalling"` adds the target's Qout check at
    /// random access and a drawn re-establishment wait.
    #[serde(rename = "type", skip_serializing_if = "Option::is_none")]
    pub kind: Option<HandoverType>,
    /// Conditional handover's preparation condition (with `type = "cho"`).
    #[serde(skip_serializing_if = "ChoConfig::is_default")]
    pub cho: ChoConfig,
    /// DAPS handover's residual interruption (with `type = "daps"`).
    #[serde(skip_serializing_if = "DapsConfig::is_default")]
    pub daps: DapsConfig,
}

/// Handover type of `[hst.handover] type`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum HandoverType {
    /// Break before make: the UE leaves the source at the handover command and is served again
    /// when the target's random access completes (TS 38.300 §9.2.3.2.1). Default.
    #[default]
    Hard,
    /// Conditional handover (Rel-16, TS 38.300 §9.2.3.4; TS 38.331 §5.3.5.13): the target is
    /// prepared when the early condition holds, the UE executes on its own when the execution
    /// condition (the A3 event) holds, without a measurement report or a command at that moment.
    Cho,
    /// Dual active protocol stack handover (Rel-16, TS 38.300 §9.2.3.1 and §9.2.3.2): the UE keeps receiving
    /// from the source until it releases it after the target's random access; on a failed access
    /// it falls back to the source (TS 38.331 §5.3.5.8.3).
    Daps,
}

impl HandoverType {
    pub fn as_str(self) -> &'static str {
        match self {
            HandoverType::Hard => "hard",
            HandoverType::Cho => "cho",
            HandoverType::Daps => "daps",
        }
    }
}

/// `[hst.handover.cho]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct ChoConfig {
    /// Offset of the preparation condition relative to the execution condition, dB, in [-15, 0]:
    /// the source prepares a target once `Mn − Hys > Mp + Off + prepare_offset_db` has held for
    /// the time to trigger (an earlier A3 event; TS 38.300 §9.2.3.4.1 leaves the preparation
    /// trigger to the network). Default −3 dB.
    pub prepare_offset_db: f64,
}

impl Default for ChoConfig {
    fn default() -> Self {
        ChoConfig {
            prepare_offset_db: -3.0,
        }
    }
}

impl ChoConfig {
    fn is_default(&self) -> bool {
        *self == ChoConfig::default()
    }
}

/// `[hst.handover.daps]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(deny_unknown_fields, default)]
pub struct DapsConfig {
    /// Downlink interruption at the release of the source, ms, in [0, 100]. Default 0: TS 38.300
    /// §9.2.3.1 lets the UE receive on both links until it releases the source after the target's
    /// random access, so no interruption is left by the procedure (TS 38.133 §6.1.3 bounds the
    /// interruption a DAPS UE may cause on the source by the target's access; set it here to model
    /// that bound or a UE's switching time).
    pub interruption_ms: f64,
}

impl DapsConfig {
    fn is_default(&self) -> bool {
        *self == DapsConfig::default()
    }
}

/// Which handover execution model turns an A3 trigger into an interruption.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum HandoverModel {
    /// Detach at the trigger, resume `interruption_ms` later (the model calibrated before the
    /// signalling model existed; default).
    #[default]
    Fixed,
    /// RRC/X2 signalling steps with their delays, non-contention RACH with failures, and a
    /// radio-link failure when the source is already below Qout at the handover command.
    Signalling,
}

/// Step delays of the LTE X2 handover (TS 36.300 §10.1.2.1.1 Figure 10.1.2.1.1-1) and the
/// radio-link-failure timers (TS 36.331 §5.3.11); sources and deviations: docs/handover-model.md.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize, JsonSchema)]
#[serde(deny_unknown_fields, default)]
pub struct SignallingConfig {
    /// Steps 2–3: the UE's measurement report to the source over SRB1 (scheduling request,
    /// uplink grant, transmission), ms, in [0, 1000].
    pub measurement_report_ms: f64,
    /// Step 3: the source's handover decision, ms, in [0, 1000].
    pub decision_ms: f64,
    /// Steps 4 and 6: one-way X2-C delay of the handover request and its acknowledgement, ms,
    /// in [0, 1000].
    pub x2_delay_ms: f64,
    /// Step 5: the target's admission control, ms, in [0, 1000].
    pub admission_ms: f64,
    /// Step 7: the RRC connection reconfiguration (handover command) from the source to the UE,
    /// ms, in [0, 1000]. The UE detaches from the source when it has it.
    pub command_ms: f64,
    /// UE processing of the command before it can access the target (TS 36.331 §11.2), ms, in
    /// [0, 1000].
    pub rrc_processing_ms: f64,
    /// PRACH occasion period, ms, in [1, 100]: the UE waits for the next occasion (uniform in
    /// [0, period), TS 36.133 §5.1.2.1's T_IU).
    pub prach_period_ms: f64,
    /// Step 9: dedicated preamble to random access response, ms, in [0, 1000].
    pub rach_ms: f64,
    /// Probability that one preamble attempt fails (no RAR in the window), in [0, 1).
    pub rach_failure: f64,
    /// Wait before the next preamble after a failed attempt (RAR window + backoff), ms, in
    /// [0, 1000].
    pub rach_retry_ms: f64,
    /// Preamble attempts before the handover fails (`preambleTransMax`), in [1, 200]; a failed
    /// handover is a radio-link failure.
    pub max_preambles: u32,
    /// Step 11: RRC connection reconfiguration complete to the target (msg3 on the RAR's grant),
    /// after which the target delivers downlink data, ms, in [0, 1000].
    pub complete_ms: f64,
    /// How RRC messages travel: `"ideal"` (default; ns-3 `LteHelper::UseIdealRrc` = true: never
    /// lost) or `"radio"` (the handover command is lost when the source's SINR is below
    /// `qout_db` when it is sent: a too-late handover).
    pub rrc: RrcTransport,
    /// Qout (dB), in [-20, 10]: below it the UE is out of sync with the source (TS 36.133 §7.6:
    /// 10 % PDCCH BLER; ns-3 `LteUePhy::Qout` = −5 dB).
    pub qout_db: f64,
    /// Length of one out-of-sync evaluation, ms, in [1, 1000] (ns-3 `NumQoutEvalSf` = 200
    /// subframes; TS 36.133 §7.6.2.1 evaluates over 200 ms).
    pub out_of_sync_ms: f64,
    /// N310 consecutive out-of-sync indications before T310 starts, in [1, 20] (ns-3: 6).
    pub n310: u32,
    /// T310 (TS 36.331 §5.3.11.1; NR: TS 38.331 §5.3.10.1 and `RLF-TimersAndConstants`, up to
    /// 6000 ms), ms, in [0, 6000]: radio-link failure at its expiry.
    pub t310_ms: f64,
    /// RRC connection re-establishment after a radio-link failure (cell selection, RACH,
    /// re-establishment request/response/complete, TS 36.331 §5.3.7), ms, in [0, 10000].
    pub reestablishment_ms: f64,
    /// The target's RLC AM transmit buffer of the bearer, bytes, in [0, 2^40]; 0 = unlimited
    /// (ns-3's convention). The packets forwarded over X2 reach it at once when the UE has
    /// attached; those beyond it are lost (ns-3 `LteRlcAm::MaxTxBufferSize`, default 10 KiB).
    pub rlc_buffer_bytes: u64,
}

/// Transport of the RRC messages in the signalling model.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum RrcTransport {
    /// Never lost (ns-3's default ideal RRC protocol): a radio-link failure needs the source to
    /// stay below Qout for N310 evaluations and T310 before the command.
    #[default]
    Ideal,
    /// Over the source's radio: lost when the source is below Qout as it is sent.
    Radio,
}

impl Default for SignallingConfig {
    fn default() -> Self {
        SignallingConfig {
            measurement_report_ms: 6.0,
            decision_ms: 0.0,
            x2_delay_ms: 5.0,
            admission_ms: 0.0,
            command_ms: 4.0,
            rrc_processing_ms: 15.0,
            prach_period_ms: 10.0,
            rach_ms: 4.0,
            rach_failure: 0.1,
            rach_retry_ms: 6.0,
            max_preambles: 10,
            complete_ms: 6.0,
            rrc: RrcTransport::Ideal,
            qout_db: -5.0,
            out_of_sync_ms: 200.0,
            n310: 6,
            t310_ms: 1000.0,
            reestablishment_ms: 100.0,
            rlc_buffer_bytes: 10 * 1024,
        }
    }
}

impl SignallingConfig {
    pub fn validate(&self, p: &str, errs: &mut Errors) {
        for (k, v) in [
            ("measurement_report_ms", self.measurement_report_ms),
            ("decision_ms", self.decision_ms),
            ("x2_delay_ms", self.x2_delay_ms),
            ("admission_ms", self.admission_ms),
            ("command_ms", self.command_ms),
            ("rrc_processing_ms", self.rrc_processing_ms),
            ("rach_ms", self.rach_ms),
            ("rach_retry_ms", self.rach_retry_ms),
            ("complete_ms", self.complete_ms),
        ] {
            errs.range(format!("{p}.{k}"), v, 0.0, 1000.0);
        }
        errs.range(format!("{p}.prach_period_ms"), self.prach_period_ms, 1.0, 100.0);
        errs.check(
            (0.0..1.0).contains(&self.rach_failure),
            format!("{p}.rach_failure"),
            fmt_num(self.rach_failure),
            "must be in [0, 1)",
        );
        errs.check(
            (1..=200).contains(&self.max_preambles),
            format!("{p}.max_preambles"),
            self.max_preambles,
            "must be in [1, 200]",
        );
        errs.range(format!("{p}.qout_db"), self.qout_db, -20.0, 10.0);
        errs.range(format!("{p}.out_of_sync_ms"), self.out_of_sync_ms, 1.0, 1000.0);
        errs.check(
            (1..=20).contains(&self.n310),
            format!("{p}.n310"),
            self.n310,
            "must be in [1, 20]",
        );
        errs.range(format!("{p}.t310_ms"), self.t310_ms, 0.0, 6000.0);
        errs.range(
            format!("{p}.reestablishment_ms"),
            self.reestablishment_ms,
            0.0,
            10_000.0,
        );
        errs.check(
            self.rlc_buffer_bytes <= 1 << 40,
            format!("{p}.rlc_buffer_bytes"),
            self.rlc_buffer_bytes,
            "must be in [0, 2^40] (0 = unlimited)",
        );
    }
}

/// The uplink (UE → eNB: ACKs and MP_PRIO) during a handover interruption.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum UplinkAtHandover {
    /// Held in the UE and sent to the target afterwards (3GPP lossless: the UE retransmits
    /// its un-acknowledged PDCP SDUs to the target, TS 36.300 §10.1.2.3). Default (the model
    /// before `discard` existed).
    #[default]
    Hold,
    /// Lost: what waits in the UE's uplink buffer at the detach and what the UE sends before it
    /// is attached to the target. ns-3 LENA re-creates the UE's radio bearers at the handover
    /// command (`LteUeRrc` clears its data radio bearers), so its uplink buffer is lost. This is
    /// what makes a B=0 MP_PRIO sent during the interruption disappear — Linux never repeats it
    /// (`mptcp_pm_nl_mp_prio_send_ack`).
    Discard,
}

/// The source eNB's buffered downlink packets at a handover.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema, Default)]
#[serde(rename_all = "snake_case")]
pub enum SourceBuffer {
    /// Lost: only packets reaching the source after the handover command are forwarded over
    /// X2-U. This is ns-3 LENA's X2 handover (`UeManager::SendData` forwards in state
    /// `HANDOVER_LEAVING`; the source's RLC buffers go with the UE context), the model behind the
    /// ns-3 reference values: 40–60 ms IP-level gap and ~100 ms in-order gap per handover (the lost
    /// packets cost the transport one more round trip). Default.
    #[default]
    Discard,
    /// Forwarded (3GPP lossless handover for RLC AM bearers: the source forwards its
    /// un-acknowledged PDCP SDUs, TS 36.300 §10.1.2.3): the in-order gap then equals the
    /// IP-level gap.
    Forward,
}

impl Default for HandoverConfig {
    fn default() -> Self {
        HandoverConfig {
            hysteresis_db: 3.0,
            a3_offset_db: 0.0,
            time_to_trigger_ms: 256,
            measurement_period_ms: 200.0,
            l3_filter_k: 4,
            interruption_ms: 40.0,
            forwarding_delay_ms: 10.0,
            forwarding_loss: 0.0,
            source_buffer: SourceBuffer::Discard,
            uplink: UplinkAtHandover::Hold,
            model: HandoverModel::Fixed,
            signalling: SignallingConfig::default(),
            kind: None,
            cho: ChoConfig::default(),
            daps: DapsConfig::default(),
        }
    }
}

impl HstConfig {
    /// Checks every field; errors carry `prefix` + the field path (e.g. `hst.train.speed_kmh`).
    pub fn validate(&self, prefix: &str, errs: &mut Errors) {
        self.train.validate(&format!("{prefix}.train"), errs);
        self.radio.validate(&format!("{prefix}.radio"), errs);
        self.handover.validate(&format!("{prefix}.handover"), errs);
    }

    /// Convenience: validate with prefix `hst` and return every error.
    pub fn check(&self) -> Result<(), Vec<ConfigError>> {
        let mut errs = Errors::default();
        self.validate("hst", &mut errs);
        errs.into_result()
    }
}

impl TrainConfig {
    pub fn validate(&self, p: &str, errs: &mut Errors) {
        validate_track(&self.track_xy_m, &format!("{p}.track_xy_m"), errs);
        errs.range(format!("{p}.start_m"), self.start_m, 0.0, 1e9);
        errs.range(format!("{p}.speed_kmh"), self.speed_kmh, 0.0, MAX_SPEED_KMH);
        validate_profile(&self.speed_profile, &format!("{p}.speed_profile"), errs);
        let g = &self.gps;
        errs.range(format!("{p}.gps.period_ms"), g.period_ms, 1.0, 10_000.0);
        errs.range(format!("{p}.gps.sigma_m"), g.sigma_m, 0.0, 1000.0);
        errs.range(format!("{p}.gps.correlation_s"), g.correlation_s, 0.0, 3600.0);
    }
}

fn validate_track(pts: &[[f64; 2]], f: &str, errs: &mut Errors) {
    if pts.is_empty() {
        return; // straight default track
    }
    errs.check(
        pts.len() >= 2,
        f,
        pts.len(),
        "a polyline needs at least 2 points (or none for a straight track)",
    );
    for (i, w) in pts.iter().enumerate() {
        let ok = w[0].is_finite() && w[1].is_finite() && w[0].abs() <= 1e9 && w[1].abs() <= 1e9;
        errs.check(
            ok,
            format!("{f}[{i}]"),
            format!("{:?}", w),
            "coordinates must be finite, |v| <= 1e9",
        );
    }
    for i in 1..pts.len() {
        let d = ((pts[i][0] - pts[i - 1][0]).powi(2) + (pts[i][1] - pts[i - 1][1]).powi(2)).sqrt();
        errs.check(
            d > 1e-6 || !d.is_finite(),
            format!("{f}[{i}]"),
            format!("{:?}", pts[i]),
            "repeats the previous point (zero-length segment)",
        );
    }
}

fn validate_profile(steps: &[SpeedStep], f: &str, errs: &mut Errors) {
    for (i, s) in steps.iter().enumerate() {
        let fi = format!("{f}[{i}]");
        errs.range(format!("{fi}.speed_kmh"), s.speed_kmh, 0.0, MAX_SPEED_KMH);
        errs.range(format!("{fi}.from_s"), s.from_s, 0.0, 1e9);
        if i == 0 {
            errs.check(
                s.from_s == 0.0,
                format!("{fi}.from_s"),
                fmt_num(s.from_s),
                "the first step must start at 0",
            );
        } else {
            let prev = steps[i - 1].from_s;
            let msg = format!("must be greater than the previous step's from_s ({})", fmt_num(prev));
            errs.check(
                s.from_s > prev || !s.from_s.is_finite(),
                format!("{fi}.from_s"),
                fmt_num(s.from_s),
                &msg,
            );
        }
    }
}

impl RadioConfig {
    pub fn validate(&self, p: &str, errs: &mut Errors) {
        let n = self.operators.len();
        errs.check(
            (1..=8).contains(&n),
            format!("{p}.operators"),
            n,
            "needs 1 to 8 operators",
        );
        for (i, op) in self.operators.iter().enumerate() {
            op.validate(&format!("{p}.operators[{i}]"), errs);
        }
        self.validate_names(p, errs);
        self.validate_separation(p, errs);
        errs.range(format!("{p}.carrier_mhz"), self.carrier_mhz, 100.0, 6000.0);
        errs.range(format!("{p}.bs_height_m"), self.bs_height_m, 0.0, 50.0);
        errs.range(format!("{p}.tx_power_dbm"), self.tx_power_dbm, 0.0, 60.0);
        let bw_ok = [1.4, 3.0, 5.0, 10.0, 15.0, 20.0].contains(&self.bandwidth_mhz);
        errs.check(
            bw_ok,
            format!("{p}.bandwidth_mhz"),
            fmt_num(self.bandwidth_mhz),
            "must be one of 1.4, 3, 5, 10, 15, 20",
        );
        errs.range(format!("{p}.noise_figure_db"), self.noise_figure_db, 0.0, 20.0);
        let s = &self.shadowing;
        errs.range(format!("{p}.shadowing.sigma_db"), s.sigma_db, 0.0, 20.0);
        errs.range(
            format!("{p}.shadowing.decorrelation_m"),
            s.decorrelation_m,
            1.0,
            10_000.0,
        );
        let rho_ok = s.inter_site_correlation >= 0.0 && s.inter_site_correlation < 1.0;
        errs.check(
            rho_ok,
            format!("{p}.shadowing.inter_site_correlation"),
            fmt_num(s.inter_site_correlation),
            "must be in [0, 1)",
        );
        errs.range(format!("{p}.shadowing.run_sigma_db"), s.run_sigma_db, 0.0, 10.0);
        errs.range(format!("{p}.shadowing.grid_m"), s.grid_m, 0.1, 100.0);
        match &self.capacity {
            CapacityConfig::Constant { rate_mbps } => errs.check(
                rate_mbps.is_finite() && *rate_mbps > 0.0 && *rate_mbps <= 100_000.0,
                format!("{p}.capacity.rate_mbps"),
                fmt_num(*rate_mbps),
                "must be in (0, 100000]",
            ),
            CapacityConfig::Sinr { max_mbps, period_ms } => {
                let ok = max_mbps.is_finite() && *max_mbps > 0.0 && *max_mbps <= 100_000.0;
                errs.check(
                    ok,
                    format!("{p}.capacity.max_mbps"),
                    fmt_num(*max_mbps),
                    "must be in (0, 100000]",
                );
                errs.range(format!("{p}.capacity.period_ms"), *period_ms, 1.0, 60_000.0);
            }
        }
    }

    fn validate_names(&self, p: &str, errs: &mut Errors) {
        for (i, op) in self.operators.iter().enumerate() {
            let dup = self.operators[..i].iter().any(|o| o.name == op.name);
            errs.check(
                !dup,
                format!("{p}.operators[{i}].name"),
                &op.name,
                "operator names must be unique",
            );
        }
    }

    /// Reports pairs of operators whose sites line up (same spacing, offsets equal modulo the
    /// spacing within [`MIN_OPERATOR_SEPARATION_M`]): their handovers would coincide.
    fn validate_separation(&self, p: &str, errs: &mut Errors) {
        for (j, b) in self.operators.iter().enumerate() {
            for (i, a) in self.operators[..j].iter().enumerate() {
                if let Some(sep) = aligned_separation(a, b) {
                    let msg = format!(
                        "sites of operators {:?} and {:?} line up ({} m apart modulo the spacing, need >= {} m): the layout forces simultaneous handovers",
                        a.name, b.name, fmt_num((sep * 10.0).round() / 10.0), fmt_num(MIN_OPERATOR_SEPARATION_M)
                    );
                    errs.push(ConfigError::new(
                        format!("{p}.operators[{j}].offset_m"),
                        fmt_num(b.offset_m),
                        msg,
                    ));
                    let _ = i;
                }
            }
        }
    }
}

/// `Some(separation)` when two operators with the same spacing have sites closer than
/// [`MIN_OPERATOR_SEPARATION_M`] modulo the spacing. Different spacings drift in and out of
/// alignment; only the handover events can tell (see `handover::simultaneous_handovers`).
pub fn aligned_separation(a: &OperatorConfig, b: &OperatorConfig) -> Option<f64> {
    if a.spacing_m != b.spacing_m || a.spacing_m.is_nan() || a.spacing_m <= 0.0 {
        return None;
    }
    let d = (a.offset_m - b.offset_m).rem_euclid(a.spacing_m);
    let sep = d.min(a.spacing_m - d);
    (sep < MIN_OPERATOR_SEPARATION_M).then_some(sep)
}

impl OperatorConfig {
    pub fn validate(&self, p: &str, errs: &mut Errors) {
        errs.check(
            !self.name.trim().is_empty(),
            format!("{p}.name"),
            &self.name,
            "must not be empty",
        );
        errs.range(format!("{p}.spacing_m"), self.spacing_m, 100.0, 100_000.0);
        let off_ok = self.offset_m.is_finite() && self.offset_m >= 0.0 && self.offset_m < self.spacing_m;
        let msg = format!("must be in [0, spacing_m) = [0, {})", fmt_num(self.spacing_m));
        errs.check(off_ok, format!("{p}.offset_m"), fmt_num(self.offset_m), &msg);
        let lat_ok = self.lateral_m.is_finite() && (10.0..=10_000.0).contains(&self.lateral_m.abs());
        errs.check(
            lat_ok,
            format!("{p}.lateral_m"),
            fmt_num(self.lateral_m),
            "|lateral_m| must be in [10, 10000]",
        );
    }
}

impl HandoverConfig {
    pub fn validate(&self, p: &str, errs: &mut Errors) {
        errs.range(format!("{p}.hysteresis_db"), self.hysteresis_db, 0.0, 30.0);
        errs.range(format!("{p}.a3_offset_db"), self.a3_offset_db, -15.0, 15.0);
        let ttt_ok = TTT_ALLOWED_MS.contains(&self.time_to_trigger_ms);
        let msg = format!("must be one of the 3GPP values {:?} ms", TTT_ALLOWED_MS);
        errs.check(ttt_ok, format!("{p}.time_to_trigger_ms"), self.time_to_trigger_ms, &msg);
        errs.range(
            format!("{p}.measurement_period_ms"),
            self.measurement_period_ms,
            1.0,
            1000.0,
        );
        errs.check(
            self.l3_filter_k <= 19,
            format!("{p}.l3_filter_k"),
            self.l3_filter_k,
            "must be in [0, 19]",
        );
        errs.range(format!("{p}.interruption_ms"), self.interruption_ms, 0.0, 10_000.0);
        errs.range(
            format!("{p}.forwarding_delay_ms"),
            self.forwarding_delay_ms,
            0.0,
            10_000.0,
        );
        errs.range(format!("{p}.forwarding_loss"), self.forwarding_loss, 0.0, 1.0);
        self.signalling.validate(&format!("{p}.signalling"), errs);
        errs.range(
            format!("{p}.cho.prepare_offset_db"),
            self.cho.prepare_offset_db,
            -15.0,
            0.0,
        );
        errs.range(
            format!("{p}.daps.interruption_ms"),
            self.daps.interruption_ms,
            0.0,
            100.0,
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn errors_of(c: &HstConfig) -> Vec<ConfigError> {
        c.check().err().unwrap_or_default()
    }

    fn has(errs: &[ConfigError], field: &str, needle: &str) -> bool {
        errs.iter().any(|e| e.field == field && e.message.contains(needle))
    }

    #[test]
    fn defaults_are_valid() {
        assert_eq!(errors_of(&HstConfig::default()), vec![]);
    }

    #[test]
    fn each_bad_value_gets_its_own_error() {
        let mut c = HstConfig::default();
        c.train.speed_kmh = -10.0;
        c.radio.operators[0].spacing_m = 0.0;
        c.handover.hysteresis_db = 31.0;
        c.handover.time_to_trigger_ms = 250;
        c.train.gps.sigma_m = -1.0;
        c.radio.shadowing.inter_site_correlation = 1.0;
        let e = errors_of(&c);
        assert!(has(&e, "hst.train.speed_kmh", "[0, 1000]"), "{e:?}");
        assert!(has(&e, "hst.radio.operators[0].spacing_m", "[100, 100000]"), "{e:?}");
        assert!(has(&e, "hst.handover.hysteresis_db", "[0, 30]"), "{e:?}");
        assert!(has(&e, "hst.handover.time_to_trigger_ms", "3GPP"), "{e:?}");
        assert!(has(&e, "hst.train.gps.sigma_m", "[0, 1000]"), "{e:?}");
        assert!(has(&e, "hst.radio.shadowing.inter_site_correlation", "[0, 1)"), "{e:?}");
        assert_eq!(
            e.iter().find(|e| e.field == "hst.train.speed_kmh").unwrap().value,
            "-10"
        );
    }

    #[test]
    fn bad_speed_profile_and_track_are_reported() {
        let mut c = HstConfig::default();
        c.train.speed_profile = vec![
            SpeedStep {
                from_s: 1.0,
                speed_kmh: 300.0,
            },
            SpeedStep {
                from_s: 0.5,
                speed_kmh: -5.0,
            },
        ];
        c.train.track_xy_m = vec![[0.0, 0.0], [0.0, 0.0]];
        let e = errors_of(&c);
        assert!(has(&e, "hst.train.speed_profile[0].from_s", "start at 0"), "{e:?}");
        assert!(has(&e, "hst.train.speed_profile[1].from_s", "greater than"), "{e:?}");
        assert!(has(&e, "hst.train.speed_profile[1].speed_kmh", "[0, 1000]"), "{e:?}");
        assert!(has(&e, "hst.train.track_xy_m[1]", "zero-length"), "{e:?}");
    }

    #[test]
    fn aligned_operators_are_reported_as_forcing_simultaneous_handovers() {
        let mut c = HstConfig::default();
        c.radio.operators[1].offset_m = 0.0;
        let e = errors_of(&c);
        assert!(
            has(&e, "hst.radio.operators[1].offset_m", "simultaneous handovers"),
            "{e:?}"
        );
        c.radio.operators[1].offset_m = 1300.0; // 40 m from the next site of A
        assert!(has(&errors_of(&c), "hst.radio.operators[1].offset_m", "simultaneous"));
        c.radio.operators[1].offset_m = 400.0;
        assert_eq!(errors_of(&c), vec![]);
    }

    #[test]
    fn unknown_fields_and_offset_range_are_rejected() {
        let bad: Result<HstConfig, _> = serde_json::from_str(r#"{"handover": {"ttt_ms": 256}}"#);
        assert!(bad.unwrap_err().to_string().contains("unknown field"));
        let mut c = HstConfig::default();
        c.radio.operators[1].offset_m = 1340.0;
        assert!(has(&errors_of(&c), "hst.radio.operators[1].offset_m", "[0, spacing_m)"));
        let cap: HstConfig = serde_json::from_str(r#"{"radio": {"capacity": {"mode": "sinr"}}}"#).unwrap();
        assert_eq!(
            cap.radio.capacity,
            CapacityConfig::Sinr {
                max_mbps: 25.0,
                period_ms: 100.0
            }
        );
    }
}
