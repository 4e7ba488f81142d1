//! `[[cells]]` in scenarios: the table, its checks (every error names the field, the value and
//! the allowed range) and its resolution into a [`CellSpec`] (what a run builds).
//!
//! A path names a cell in its `links` in place of a link, as its first entry (the path's `from`
//! node is a UE of the cell: data goes up) or its last (`to` is a UE: data comes down); the UE
//! is the flow's endpoint behind the cell.
use super::congestion::{BsrDropInputs, PChoice, UlPolicy};
use super::frame::Frame;
use super::phy::{bytes_for, dl_re_per_rb, resource_blocks, BANDWIDTHS, UL_RE_PER_RB};
use super::sched::SchedKind;
use crate::core::time::{from_secs_f64, Time};
use crate::error::{fmt_num, ConfigError, Errors};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};
use std::collections::HashSet;
use std::path::Path;

/// An LTE cell (one eNB) and the UEs it serves.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct CellConfig {
    /// Paths name the cell in `links` (first entry: uplink from the path's `from` UE; last:
    /// downlink to its `to` UE).
    pub name: String,
    /// "fdd" or "tdd".
    #[serde(default = "d_duplex")]
    pub duplex: String,
    /// TDD uplink-downlink configuration, 0–6 (TS 36.211 Table 4.2-2); required with
    /// `duplex = "tdd"`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tdd_config: Option<u8>,
    /// Special subframe configuration, 0–9 (TS 36.211 Table 4.2-1; sizes the DwPTS downlink).
    #[serde(default = "d_special")]
    pub special_subframe: u8,
    /// Channel bandwidth in MHz: 1.4, 3, 5, 10, 15 or 20 (6–100 resource blocks).
    #[serde(default = "d_bw")]
    pub bandwidth_mhz: f64,
    /// PDCCH symbols per subframe (control format indicator), 1–3.
    #[serde(default = "d_cfi")]
    pub cfi: u8,
    /// Uplink resource blocks kept for PUCCH (not usable for PUSCH).
    #[serde(default = "d_pucch")]
    pub pucch_rbs: u32,
    /// Highest uplink CQI the UEs can use, 1–15 (9 = 16QAM, UE categories ≤ 4).
    #[serde(default = "d_max_cqi")]
    pub ul_max_cqi: u8,
    /// MAC schedulers: `{ dl = "pf", ul = "pf" }`; names: rr, pf, bsr-proportional.
    #[serde(default)]
    pub scheduler: SchedulerPair,
    /// At most this many UEs get resources per TTI and direction (stands in for PDCCH capacity).
    #[serde(default)]
    pub max_ues_per_tti: PerDirection,
    /// Proportional fair averaging window in TTIs of the direction, in [1, 100000].
    #[serde(default = "d_pf_window")]
    pub pf_window_tti: f64,
    /// Buffer status reporting.
    #[serde(default)]
    pub bsr: BsrConfig,
    /// Scheduling requests.
    #[serde(default)]
    pub sr: SrConfig,
    /// TTIs between the eNB receiving a BSR or SR and a grant that can use it, in [0, 10].
    #[serde(default = "d_proc")]
    pub enb_processing_ms: u32,
    /// Each UE's uplink buffer (drop-tail).
    #[serde(default)]
    pub ue_ul_buffer: BufferLimit,
    /// The eNB's downlink buffer per UE (drop-tail).
    #[serde(default)]
    pub enb_dl_buffer: BufferLimit,
    /// Layer-2 (PDCP/RLC/MAC) header bytes added to every packet in the buffers, in [0, 100].
    #[serde(default)]
    pub l2_overhead_bytes: u32,
    /// Uplink congestion control at the eNB (`policy`: none, bsr-drop, red-large, ack-prio).
    #[serde(default)]
    pub ul_congestion: UlCongestionConfig,
    /// The UEs (flow endpoints behind the cell).
    pub ues: Vec<UeConfig>,
}

fn d_duplex() -> String {
    "fdd".into()
}
fn d_special() -> u8 {
    7
}
fn d_bw() -> f64 {
    20.0
}
fn d_cfi() -> u8 {
    2
}
fn d_pucch() -> u32 {
    4
}
fn d_max_cqi() -> u8 {
    15
}
fn d_pf_window() -> f64 {
    99.0
}
fn d_proc() -> u32 {
    3
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SchedulerPair {
    #[serde(default = "d_sched")]
    pub dl: String,
    #[serde(default = "d_sched")]
    pub ul: String,
}
fn d_sched() -> String {
    "pf".into()
}
impl Default for SchedulerPair {
    fn default() -> Self {
        SchedulerPair {
            dl: d_sched(),
            ul: d_sched(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct PerDirection {
    #[serde(default = "d_max_ues")]
    pub dl: u32,
    #[serde(default = "d_max_ues")]
    pub ul: u32,
}
fn d_max_ues() -> u32 {
    10
}
impl Default for PerDirection {
    fn default() -> Self {
        PerDirection {
            dl: d_max_ues(),
            ul: d_max_ues(),
        }
    }
}

/// TS 36.321 §5.4.5.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BsrConfig {
    /// A BSR in every uplink transport block (default; as ns-3 LENA's ideal reporting). Off:
    /// only Regular (new data into an empty buffer, or into a higher-priority group), Periodic
    /// and Padding BSRs.
    #[serde(default = "d_true")]
    pub every_tb: bool,
    /// periodicBSR-Timer in ms: 5, 10, 16, 20, 32, 40, 64, 80, 128, 160, 320, 640, 1280, 2560,
    /// or 0 (infinity).
    #[serde(default = "d_bsr_period")]
    pub periodic_ms: u32,
}
fn d_true() -> bool {
    true
}
fn d_bsr_period() -> u32 {
    10
}
impl Default for BsrConfig {
    fn default() -> Self {
        BsrConfig {
            every_tb: true,
            periodic_ms: d_bsr_period(),
        }
    }
}
/// srsRAN RRC ASN.1 `periodic_bsr_timer_r12_opts` (0 = infinity).
pub const BSR_PERIODS_MS: [u32; 15] = [0, 5, 10, 16, 20, 32, 40, 64, 80, 128, 160, 320, 640, 1280, 2560];

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct SrConfig {
    /// SR periodicity in ms: 1, 2, 5, 10, 20, 40 or 80 (TS 36.213 Table 10.1.5-1); in TDD an
    /// opportunity falls on an uplink subframe.
    #[serde(default = "d_sr_period")]
    pub period_ms: u32,
    /// Resource blocks of the grant that answers an SR (implementation-defined), ≥ 1.
    #[serde(default = "d_sr_rbs")]
    pub grant_rbs: u32,
}
fn d_sr_period() -> u32 {
    10
}
fn d_sr_rbs() -> u32 {
    2
}
impl Default for SrConfig {
    fn default() -> Self {
        SrConfig {
            period_ms: d_sr_period(),
            grant_rbs: d_sr_rbs(),
        }
    }
}
pub const SR_PERIODS_MS: [u32; 7] = [1, 2, 5, 10, 20, 40, 80];

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct BufferLimit {
    /// At most this many packets, in [1, 1000000] (default 1000).
    #[serde(default = "d_buf_pkts")]
    pub packets: u64,
    /// At most this many bytes, in [1, 1073741824] (default: no byte limit).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub bytes: Option<u64>,
}
fn d_buf_pkts() -> u64 {
    1000
}
impl Default for BufferLimit {
    fn default() -> Self {
        BufferLimit {
            packets: d_buf_pkts(),
            bytes: None,
        }
    }
}

/// `p` of bsr-drop: "paper", "consistent" or a probability.
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(untagged)]
pub enum PValue {
    Number(f64),
    Reading(String),
}
fn d_p() -> PValue {
    PValue::Reading("paper".into())
}

/// Uplink congestion control at the eNB (see `cell/congestion.rs`).
#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(tag = "policy", rename_all = "kebab-case", deny_unknown_fields)]
pub enum UlCongestionConfig {
    /// No control. (Struct variants, so that unknown keys are refused.)
    None {},
    /// P4's scheme; every parameter can be given, the rest is computed (P4 §2.3).
    BsrDrop {
        /// N, the UE count of the congestion reference, ≥ 2.
        #[serde(default = "d_n_ref")]
        n_ref: u32,
        /// CW_target in segments: even, in [2, 1000].
        #[serde(default = "d_cw")]
        cw_target: u32,
        /// MSS in bytes, in [64, 9000].
        #[serde(default = "d_mss")]
        mss_bytes: u32,
        /// RTT_target in ms (TH_Cell_1), in (0, 10000].
        #[serde(default = "d_rtt")]
        rtt_target_ms: f64,
        /// Packets larger than this (IP bytes) can be dropped, in [52, mss_bytes + 51].
        #[serde(default = "d_th_packet")]
        th_packet_bytes: u32,
        /// "paper" (default), "consistent" or a number in [0, 1] (see congestion.rs).
        #[serde(default = "d_p")]
        p: PValue,
        /// n (default: the cell's UE count).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        n_ues: Option<u32>,
        /// T_peak in Mbit/s (default: the cell's uplink peak at `ul_max_cqi`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        t_peak_mbps: Option<f64>,
        /// T_1 in Mbit/s (default: T_peak).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        t1_mbps: Option<f64>,
        /// M, uplink TTIs per second (default: the frame's).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        m: Option<u32>,
        /// Threshold overrides in bytes: TH_Cell_1, TH_Cell_N (at n_ref), TH_UE.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        th_cell_1_bytes: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        th_cell_n_bytes: Option<u64>,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        th_ue_bytes: Option<u64>,
    },
    /// Random early drop of large uplink packets, without P4's thresholds.
    RedLarge {
        /// Probability per uplink TTI, in [0, 1].
        p: f64,
        /// In [52, 9051].
        #[serde(default = "d_th_packet")]
        th_packet_bytes: u32,
    },
    /// Pure ACKs ahead of data in each UE's uplink buffer.
    AckPrio {},
}

impl Default for UlCongestionConfig {
    fn default() -> Self {
        UlCongestionConfig::None {}
    }
}
fn d_n_ref() -> u32 {
    50
}
fn d_cw() -> u32 {
    6
}
fn d_mss() -> u32 {
    1460
}
fn d_rtt() -> f64 {
    100.0
}
fn d_th_packet() -> u32 {
    100
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct UeConfig {
    /// The UE's node name: the `from` (uplink) or `to` (downlink) of the paths through the cell.
    pub name: String,
    /// Downlink CQI, 0–15 (0: out of range, nothing is sent).
    #[serde(default = "d_cqi")]
    pub dl_cqi: u8,
    /// Uplink CQI, 0–15 (capped at the cell's `ul_max_cqi`).
    #[serde(default = "d_cqi")]
    pub ul_cqi: u8,
    /// CSV `time_s,dl_cqi,ul_cqi` (a header line is allowed): the CQIs from each time on
    /// (before the first row: `dl_cqi`, `ul_cqi`). Relative to the scenario's folder.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cqi_trace: Option<String>,
    /// The UE rides the scenario's train (`[hst]`): its downlink and uplink CQIs follow the
    /// downlink SINR of this operator's serving cell (`hst.radio.operators[].name`), sampled
    /// every 100 ms and mapped by ns-3's rule (`phy::cqi_from_sinr_db`); the uplink CQI is capped
    /// at the cell's `ul_max_cqi`. Not with `cqi_trace`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cqi_train: Option<String>,
    /// Flows on a GBR bearer of this UE, with their guaranteed rate in each direction.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub gbr: Vec<GbrConfig>,
}
fn d_cqi() -> u8 {
    15
}

#[derive(Clone, Debug, PartialEq, Deserialize, Serialize, JsonSchema)]
#[serde(deny_unknown_fields)]
pub struct GbrConfig {
    /// A flow through this UE: its packets (both directions) use the GBR bearer.
    pub flow: String,
    /// Guaranteed bit rate per direction in kbit/s, > 0.
    pub kbps: f64,
}

/// A UE as a run builds it.
#[derive(Clone, Debug, PartialEq)]
pub struct UeSpec {
    pub name: String,
    /// (from time, dl CQI, ul CQI), the first at time 0, times increasing.
    pub cqi: Vec<(Time, u8, u8)>,
    /// The train operator whose serving-cell SINR sets `cqi` in each run (`cqi_train`).
    pub train_operator: Option<String>,
    /// (flow name, guaranteed bytes per second).
    pub gbr: Vec<(String, f64)>,
}

/// A cell as a run builds it (checked, units resolved, P4's parameters computed).
#[derive(Clone, Debug, PartialEq)]
pub struct CellSpec {
    pub name: String,
    pub frame: Frame,
    pub special_subframe: u8,
    pub bandwidth_mhz: f64,
    pub dl_rbs: u32,
    /// PUSCH resource blocks (the band minus PUCCH).
    pub ul_rbs: u32,
    pub dl_re: u64,
    pub ul_max_cqi: u8,
    pub dl_sched: SchedKind,
    pub ul_sched: SchedKind,
    pub max_ues_dl: u32,
    pub max_ues_ul: u32,
    pub pf_window: f64,
    pub bsr_every_tb: bool,
    /// 0: infinity.
    pub bsr_periodic_ms: u32,
    pub sr_period_ms: u32,
    pub sr_grant_rbs: u32,
    pub processing_ttis: u32,
    pub ul_buf: (u64, u64),
    pub dl_buf: (u64, u64),
    pub l2_overhead: u32,
    pub policy: UlPolicy,
    pub ues: Vec<UeSpec>,
}

impl CellSpec {
    /// Uplink peak of the cell in bit/s: M · PUSCH bytes per TTI at `ul_max_cqi` · 8.
    pub fn ul_peak_bps(&self) -> f64 {
        self.frame.ul_ttis_per_second() as f64 * bytes_for(self.ul_rbs, UL_RE_PER_RB, self.ul_max_cqi) as f64 * 8.0
    }

    /// Downlink peak of the cell in bit/s at CQI 15 (special subframes at their DwPTS size).
    pub fn dl_peak_bps(&self) -> f64 {
        let full = bytes_for(self.dl_rbs, self.dl_re, 15) as f64;
        let special = dl_bytes(self.dl_rbs, self.dl_re, 15, self.frame.special_fraction) as f64;
        let (d, s) = if self.frame.is_fdd() {
            (1000.0, 0.0)
        } else {
            let n_s = (0..10)
                .filter(|&t| self.frame.subframe(t) == super::frame::Subframe::S)
                .count() as f64;
            let n_d = (0..10)
                .filter(|&t| self.frame.subframe(t) == super::frame::Subframe::D)
                .count() as f64;
            (100.0 * n_d, 100.0 * n_s)
        };
        (d * full + s * special) * 8.0
    }
}

/// Downlink bytes of `rbs` RBs in a subframe of size factor `f` (1: D; DwPTS: TS 36.213 §7.1.7,
/// the block of max(⌊f·rbs⌋, 1) RBs; 0: none).
pub fn dl_bytes(rbs: u32, re: u64, cqi: u8, f: f64) -> u64 {
    if f >= 1.0 {
        bytes_for(rbs, re, cqi)
    } else if f <= 0.0 || rbs == 0 {
        0
    } else {
        bytes_for(((rbs as f64 * f).floor() as u32).max(1), re, cqi)
    }
}

impl CellConfig {
    /// Checks the cell on its own (paths and flows: [`check_references`]) and resolves it;
    /// `None` if it has errors (reported into `errs`).
    pub fn resolve(&self, pre: &str, base_dir: &Path, duration_s: f64, errs: &mut Errors) -> Option<CellSpec> {
        let n0 = errs.0.len();
        errs.check(
            !self.name.trim().is_empty(),
            format!("{pre}.name"),
            "\"\"",
            "must not be empty",
        );
        let frame = match (self.duplex.as_str(), self.tdd_config) {
            ("fdd", None) => Some(Frame::fdd()),
            ("fdd", Some(c)) => {
                errs.push(ConfigError::new(
                    format!("{pre}.tdd_config"),
                    c,
                    "only for duplex = \"tdd\" (FDD has no uplink-downlink configuration)",
                ));
                None
            }
            ("tdd", Some(c)) if c <= 6 => Some(Frame::tdd(c, self.special_subframe.min(9))),
            ("tdd", Some(c)) => {
                errs.push(ConfigError::new(
                    format!("{pre}.tdd_config"),
                    c,
                    "unknown TDD uplink-downlink configuration: must be in [0, 6] (TS 36.211 Table 4.2-2)",
                ));
                None
            }
            ("tdd", None) => {
                errs.push(ConfigError::new(
                    format!("{pre}.tdd_config"),
                    "",
                    "missing: duplex = \"tdd\" needs a configuration in [0, 6] (TS 36.211 Table 4.2-2)",
                ));
                None
            }
            (d, _) => {
                errs.push(ConfigError::new(
                    format!("{pre}.duplex"),
                    format!("\"{d}\""),
                    "must be \"fdd\" or \"tdd\"",
                ));
                None
            }
        };
        errs.check(
            self.special_subframe <= 9,
            format!("{pre}.special_subframe"),
            self.special_subframe,
            "must be in [0, 9] (TS 36.211 Table 4.2-1)",
        );
        let dl_rbs = resource_blocks(self.bandwidth_mhz);
        if dl_rbs.is_none() {
            let allowed: Vec<String> = BANDWIDTHS.iter().map(|(b, _)| fmt_num(*b)).collect();
            errs.push(ConfigError::new(
                format!("{pre}.bandwidth_mhz"),
                fmt_num(self.bandwidth_mhz),
                format!("must be one of {} (TS 36.101 Table 5.6-1)", allowed.join(", ")),
            ));
        }
        errs.check(
            (1..=3).contains(&self.cfi),
            format!("{pre}.cfi"),
            self.cfi,
            "must be in [1, 3]",
        );
        let dl_rbs = dl_rbs.unwrap_or(0);
        if dl_rbs > 0 && self.pucch_rbs >= dl_rbs {
            errs.push(ConfigError::new(
                format!("{pre}.pucch_rbs"),
                self.pucch_rbs,
                format!(
                    "leaves zero uplink resource blocks for PUSCH: must be in [0, {}] at {} MHz ({dl_rbs} RBs)",
                    dl_rbs - 1,
                    fmt_num(self.bandwidth_mhz)
                ),
            ));
        }
        let ul_rbs = dl_rbs.saturating_sub(self.pucch_rbs);
        errs.check(
            (1..=15).contains(&self.ul_max_cqi),
            format!("{pre}.ul_max_cqi"),
            self.ul_max_cqi,
            "must be in [1, 15]",
        );
        let dl_sched = SchedKind::from_name(&self.scheduler.dl);
        let ul_sched = SchedKind::from_name(&self.scheduler.ul);
        for (d, s, k) in [
            ("dl", &self.scheduler.dl, dl_sched),
            ("ul", &self.scheduler.ul, ul_sched),
        ] {
            if k.is_none() {
                errs.push(ConfigError::new(
                    format!("{pre}.scheduler.{d}"),
                    format!("\"{s}\""),
                    format!("unknown MAC scheduler; allowed: {}", SchedKind::names().join(", ")),
                ));
            }
        }
        for (d, v) in [("dl", self.max_ues_per_tti.dl), ("ul", self.max_ues_per_tti.ul)] {
            errs.check(
                (1..=10_000).contains(&v),
                format!("{pre}.max_ues_per_tti.{d}"),
                v,
                "must be in [1, 10000]",
            );
        }
        errs.range(format!("{pre}.pf_window_tti"), self.pf_window_tti, 1.0, 100_000.0);
        if !BSR_PERIODS_MS.contains(&self.bsr.periodic_ms) {
            errs.push(ConfigError::new(format!("{pre}.bsr.periodic_ms"), self.bsr.periodic_ms, "must be one of 0 (infinity), 5, 10, 16, 20, 32, 40, 64, 80, 128, 160, 320, 640, 1280, 2560 (periodicBSR-Timer, TS 36.331)"));
        }
        if !SR_PERIODS_MS.contains(&self.sr.period_ms) {
            errs.push(ConfigError::new(
                format!("{pre}.sr.period_ms"),
                self.sr.period_ms,
                "must be one of 1, 2, 5, 10, 20, 40, 80 (TS 36.213 Table 10.1.5-1)",
            ));
        }
        if ul_rbs > 0 && !(1..=ul_rbs).contains(&self.sr.grant_rbs) {
            errs.push(ConfigError::new(
                format!("{pre}.sr.grant_rbs"),
                self.sr.grant_rbs,
                format!("must be in [1, {ul_rbs}] (the PUSCH resource blocks)"),
            ));
        }
        errs.check(
            self.enb_processing_ms <= 10,
            format!("{pre}.enb_processing_ms"),
            self.enb_processing_ms,
            "must be in [0, 10]",
        );
        for (f, b) in [
            ("ue_ul_buffer", &self.ue_ul_buffer),
            ("enb_dl_buffer", &self.enb_dl_buffer),
        ] {
            errs.check(
                (1..=1_000_000).contains(&b.packets),
                format!("{pre}.{f}.packets"),
                b.packets,
                "must be in [1, 1000000]",
            );
            if let Some(x) = b.bytes {
                errs.check(
                    (1..=1 << 30).contains(&x),
                    format!("{pre}.{f}.bytes"),
                    x,
                    "must be in [1, 1073741824]",
                );
            }
        }
        errs.check(
            self.l2_overhead_bytes <= 100,
            format!("{pre}.l2_overhead_bytes"),
            self.l2_overhead_bytes,
            "must be in [0, 100]",
        );

        // UEs
        if self.ues.is_empty() {
            errs.push(ConfigError::new(
                format!("{pre}.ues"),
                "[]",
                "a cell needs at least one UE",
            ));
        }
        let mut names = HashSet::new();
        let mut ues = Vec::with_capacity(self.ues.len());
        for (j, u) in self.ues.iter().enumerate() {
            let upre = format!("{pre}.ues[{j}]");
            if !names.insert(u.name.as_str()) {
                errs.push(ConfigError::new(
                    format!("{upre}.name"),
                    &u.name,
                    "duplicate UE name in this cell",
                ));
            }
            errs.check(
                !u.name.trim().is_empty(),
                format!("{upre}.name"),
                "\"\"",
                "must not be empty",
            );
            errs.check(
                u.dl_cqi <= 15,
                format!("{upre}.dl_cqi"),
                u.dl_cqi,
                "must be in [0, 15] (TS 36.213 Table 7.2.3-1)",
            );
            errs.check(
                u.ul_cqi <= 15,
                format!("{upre}.ul_cqi"),
                u.ul_cqi,
                "must be in [0, 15] (TS 36.213 Table 7.2.3-1)",
            );
            let mut cqi = vec![(0, u.dl_cqi.min(15), u.ul_cqi.min(15))];
            if let (Some(file), Some(_)) = (&u.cqi_trace, &u.cqi_train) {
                errs.push(ConfigError::new(
                    format!("{upre}.cqi_train"),
                    "",
                    format!("not with cqi_trace = {file}: the CQIs come from one source"),
                ));
            }
            if let Some(file) = &u.cqi_trace {
                match read_cqi_trace(&base_dir.join(file), duration_s) {
                    Ok(rows) => {
                        for r in rows {
                            if r.0 == 0 {
                                cqi[0] = r;
                            } else {
                                cqi.push(r);
                            }
                        }
                    }
                    Err(msg) => errs.push(ConfigError::new(format!("{upre}.cqi_trace"), file, msg)),
                }
            }
            let mut gbr = Vec::new();
            for (k, g) in u.gbr.iter().enumerate() {
                if !(g.kbps.is_finite() && g.kbps > 0.0) {
                    errs.push(ConfigError::new(
                        format!("{upre}.gbr[{k}].kbps"),
                        fmt_num(g.kbps),
                        "must be > 0",
                    ));
                }
                gbr.push((g.flow.clone(), g.kbps * 1000.0 / 8.0));
            }
            ues.push(UeSpec {
                name: u.name.clone(),
                cqi,
                train_operator: u.cqi_train.clone(),
                gbr,
            });
        }
        if errs.0.len() > n0 {
            return None;
        }
        let frame = frame?;
        let mut spec = CellSpec {
            name: self.name.clone(),
            frame,
            special_subframe: self.special_subframe,
            bandwidth_mhz: self.bandwidth_mhz,
            dl_rbs,
            ul_rbs,
            dl_re: dl_re_per_rb(self.cfi),
            ul_max_cqi: self.ul_max_cqi,
            dl_sched: dl_sched?,
            ul_sched: ul_sched?,
            max_ues_dl: self.max_ues_per_tti.dl,
            max_ues_ul: self.max_ues_per_tti.ul,
            pf_window: self.pf_window_tti,
            bsr_every_tb: self.bsr.every_tb,
            bsr_periodic_ms: self.bsr.periodic_ms,
            sr_period_ms: self.sr.period_ms,
            sr_grant_rbs: self.sr.grant_rbs,
            processing_ttis: self.enb_processing_ms,
            ul_buf: (self.ue_ul_buffer.packets, self.ue_ul_buffer.bytes.unwrap_or(u64::MAX)),
            dl_buf: (self.enb_dl_buffer.packets, self.enb_dl_buffer.bytes.unwrap_or(u64::MAX)),
            l2_overhead: self.l2_overhead_bytes,
            policy: UlPolicy::None,
            ues,
        };
        // GBR load against the direction's peak (at the UE's initial CQI).
        for (j, u) in spec.ues.iter().enumerate() {
            let rate: f64 = u.gbr.iter().map(|g| g.1 * 8.0).sum();
            let ul_peak = spec.frame.ul_ttis_per_second() as f64
                * bytes_for(spec.ul_rbs, UL_RE_PER_RB, u.cqi[0].2.min(spec.ul_max_cqi)) as f64
                * 8.0;
            if rate > ul_peak {
                errs.push(ConfigError::new(
                    format!("{pre}.ues[{j}].gbr"),
                    format!("{} kbit/s", fmt_num(rate / 1000.0)),
                    format!(
                        "exceeds the UE's uplink peak ({} kbit/s at CQI {})",
                        fmt_num((ul_peak / 1000.0).floor()),
                        u.cqi[0].2.min(spec.ul_max_cqi)
                    ),
                ));
            }
        }
        let total_gbr: f64 = spec.ues.iter().flat_map(|u| u.gbr.iter().map(|g| g.1 * 8.0)).sum();
        if total_gbr > spec.ul_peak_bps() {
            errs.push(ConfigError::new(
                format!("{pre}.ues"),
                format!("{} kbit/s of GBR", fmt_num(total_gbr / 1000.0)),
                format!(
                    "exceeds the cell's uplink peak ({} kbit/s)",
                    fmt_num((spec.ul_peak_bps() / 1000.0).floor())
                ),
            ));
        }
        spec.policy = self
            .ul_congestion
            .resolve(&format!("{pre}.ul_congestion"), &spec, errs)?;
        (errs.0.len() == n0).then_some(spec)
    }
}

impl UlCongestionConfig {
    fn resolve(&self, pre: &str, cell: &CellSpec, errs: &mut Errors) -> Option<UlPolicy> {
        let n0 = errs.0.len();
        let policy = match self {
            UlCongestionConfig::None {} => UlPolicy::None,
            UlCongestionConfig::AckPrio {} => UlPolicy::AckPrio,
            UlCongestionConfig::RedLarge { p, th_packet_bytes } => {
                errs.range(format!("{pre}.p"), *p, 0.0, 1.0);
                errs.check(
                    (52..=9051).contains(th_packet_bytes),
                    format!("{pre}.th_packet_bytes"),
                    th_packet_bytes,
                    "must be in [52, 9051] (a pure ACK is 52 bytes; larger packets can be dropped)",
                );
                UlPolicy::RedLarge {
                    p: *p,
                    th_packet: *th_packet_bytes,
                }
            }
            UlCongestionConfig::BsrDrop {
                n_ref,
                cw_target,
                mss_bytes,
                rtt_target_ms,
                th_packet_bytes,
                p,
                n_ues,
                t_peak_mbps,
                t1_mbps,
                m,
                th_cell_1_bytes,
                th_cell_n_bytes,
                th_ue_bytes,
            } => {
                errs.check(
                    *n_ref >= 2 && *n_ref <= 100_000,
                    format!("{pre}.n_ref"),
                    n_ref,
                    "must be in [2, 100000] (TH_Cell_n interpolates between 1 and N UEs)",
                );
                errs.check(
                    *cw_target >= 2 && *cw_target <= 1000 && cw_target % 2 == 0,
                    format!("{pre}.cw_target"),
                    cw_target,
                    "must be even and in [2, 1000] (P4: CW_target/2 is an integer)",
                );
                errs.check(
                    (64..=9000).contains(mss_bytes),
                    format!("{pre}.mss_bytes"),
                    mss_bytes,
                    "must be in [64, 9000]",
                );
                if !(rtt_target_ms.is_finite() && *rtt_target_ms > 0.0 && *rtt_target_ms <= 10_000.0) {
                    errs.push(ConfigError::new(
                        format!("{pre}.rtt_target_ms"),
                        fmt_num(*rtt_target_ms),
                        "must be in (0, 10000]",
                    ));
                }
                let max_th = mss_bytes + 51;
                errs.check(
                    *th_packet_bytes >= 52 && *th_packet_bytes <= max_th,
                    format!("{pre}.th_packet_bytes"),
                    th_packet_bytes,
                    &format!(
                        "must be in [52, {max_th}] (a pure ACK is 52 bytes; a full segment {} bytes)",
                        mss_bytes + 52
                    ),
                );
                if let Some(n) = n_ues {
                    errs.check(
                        (1..=100_000).contains(n),
                        format!("{pre}.n_ues"),
                        n,
                        "must be in [1, 100000]",
                    );
                }
                for (f, v) in [("t_peak_mbps", t_peak_mbps), ("t1_mbps", t1_mbps)] {
                    if let Some(v) = v {
                        if !(v.is_finite() && *v > 0.0 && *v <= 100_000.0) {
                            errs.push(ConfigError::new(
                                format!("{pre}.{f}"),
                                fmt_num(*v),
                                "must be in (0, 100000]",
                            ));
                        }
                    }
                }
                if let Some(m) = m {
                    errs.check(
                        (1..=1000).contains(m),
                        format!("{pre}.m"),
                        m,
                        "must be in [1, 1000] (uplink TTIs per second)",
                    );
                }
                let pchoice = match p {
                    PValue::Number(x) => {
                        errs.range(format!("{pre}.p"), *x, 0.0, 1.0);
                        PChoice::Fixed(*x)
                    }
                    PValue::Reading(s) if s == "paper" => PChoice::Paper,
                    PValue::Reading(s) if s == "consistent" => PChoice::Consistent,
                    PValue::Reading(s) => {
                        errs.push(ConfigError::new(
                            format!("{pre}.p"),
                            format!("\"{s}\""),
                            "must be \"paper\", \"consistent\" or a number in [0, 1]",
                        ));
                        PChoice::Paper
                    }
                };
                if errs.0.len() > n0 {
                    return None;
                }
                let t_peak = t_peak_mbps.map_or(cell.ul_peak_bps(), |v| v * 1e6);
                let inputs = BsrDropInputs {
                    n_ref: *n_ref,
                    n_ues: n_ues.unwrap_or(cell.ues.len() as u32),
                    cw_target: *cw_target,
                    mss: *mss_bytes,
                    rtt_target_s: rtt_target_ms / 1000.0,
                    t1_bps: t1_mbps.map_or(t_peak, |v| v * 1e6),
                    t_peak_bps: t_peak,
                    m: m.unwrap_or(cell.frame.ul_ttis_per_second()),
                    th_packet: *th_packet_bytes,
                    p: pchoice,
                    th_cell_1: *th_cell_1_bytes,
                    th_cell_n_ref: *th_cell_n_bytes,
                    th_ue: *th_ue_bytes,
                };
                let params = inputs.compute();
                if !(0.0..=1.0).contains(&params.p) {
                    let how = match pchoice {
                        PChoice::Consistent => "consistent",
                        _ => "paper",
                    };
                    errs.push(ConfigError::new(format!("{pre}.p"), format!("\"{how}\""), format!("gives p = {:.4} from T_peak = {} Mbit/s, MSS = {mss_bytes}, CW_target = {cw_target}, M = {}: must be in [0, 1]; give p as a number, or a larger cw_target", params.p, fmt_num(t_peak / 1e6), inputs.m)));
                }
                // P4 §2.3.1 design (i)/(ii): TH_UE < TH_Cell_1 ≤ TH_Cell_N.
                if params.th_cell_1 > params.th_cell_n_ref {
                    let field = if th_cell_1_bytes.is_some() {
                        "th_cell_1_bytes"
                    } else if th_cell_n_bytes.is_some() {
                        "th_cell_n_bytes"
                    } else {
                        "rtt_target_ms"
                    };
                    errs.push(ConfigError::new(format!("{pre}.{field}"), "", format!("thresholds in the wrong order: TH_Cell_1 = {:.0} B (one UE) exceeds TH_Cell_N = {:.0} B ({n_ref} UEs); need TH_Cell_1 ≤ TH_Cell_N", params.th_cell_1, params.th_cell_n_ref)));
                }
                if params.th_ue >= params.th_cell_1.min(params.th_cell_n_ref) {
                    let field = if th_ue_bytes.is_some() {
                        "th_ue_bytes"
                    } else {
                        "cw_target"
                    };
                    errs.push(ConfigError::new(format!("{pre}.{field}"), "", format!("thresholds in the wrong order: TH_UE = {:.0} B must be below TH_Cell_1 = {:.0} B and TH_Cell_N = {:.0} B", params.th_ue, params.th_cell_1, params.th_cell_n_ref)));
                }
                UlPolicy::BsrDrop { inputs, params }
            }
        };
        (errs.0.len() == n0).then_some(policy)
    }
}

/// Reads a CQI trace: `time_s,dl_cqi,ul_cqi` rows (header allowed), times non-decreasing in
/// [0, duration]; returns (time, dl, ul).
/// A CQI schedule `(from, dl, ul)` from a SINR schedule `(from, dB)` (phy::cqi_from_sinr_db; the
/// same CQI both ways, the cell caps the uplink at `ul_max_cqi`), one row per change, starting at 0.
pub fn cqi_from_sinr(sinr: &[(Time, f64)]) -> Vec<(Time, u8, u8)> {
    let mut out: Vec<(Time, u8, u8)> = Vec::new();
    for &(t, db) in sinr {
        let c = super::phy::cqi_from_sinr_db(db);
        if out.last().is_none_or(|l| l.1 != c) {
            out.push((if out.is_empty() { 0 } else { t }, c, c));
        }
    }
    if out.is_empty() {
        out.push((0, 0, 0));
    }
    out
}

fn read_cqi_trace(path: &Path, duration_s: f64) -> Result<Vec<(Time, u8, u8)>, String> {
    let text = mobipath_hst::input::read_text(path, mobipath_hst::input::MAX_DATA_FILE_BYTES)
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    parse_cqi_trace(&text, duration_s)
}

/// Parses a UE's CQI trace (`time_s,dl_cqi,ul_cqi` rows, an optional header, `#` comments):
/// rows with times that never decrease and CQIs in [0, 15], at least one; else the first bad
/// line.
pub fn parse_cqi_trace(text: &str, duration_s: f64) -> Result<Vec<(Time, u8, u8)>, String> {
    let mut rows: Vec<(Time, u8, u8)> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty()
            || line.starts_with('#')
            || (i == 0 && line.chars().next().is_some_and(|c| c.is_alphabetic()))
        {
            continue;
        }
        let cols: Vec<&str> = line.split(',').map(str::trim).collect();
        let bad = || {
            format!(
                "line {}: expected `time_s,dl_cqi,ul_cqi` with CQIs in [0, 15], got {line:?}",
                i + 1
            )
        };
        if cols.len() != 3 {
            return Err(bad());
        }
        let t: f64 = cols[0].parse().map_err(|_| bad())?;
        let dl: u8 = cols[1].parse().map_err(|_| bad())?;
        let ul: u8 = cols[2].parse().map_err(|_| bad())?;
        if dl > 15 || ul > 15 {
            return Err(bad());
        }
        if !(t.is_finite() && t >= 0.0 && t <= duration_s.max(0.0) + 1e9) {
            return Err(format!("line {}: time {t} must be ≥ 0", i + 1));
        }
        let t = from_secs_f64(t);
        if rows.last().is_some_and(|r| r.0 > t) {
            return Err(format!("line {}: times must not decrease", i + 1));
        }
        rows.push((t, dl, ul));
    }
    if rows.is_empty() {
        return Err("no rows".into());
    }
    Ok(rows)
}

/// The checks that involve paths and flows: every path that names a cell has it first (its
/// `from` a UE of the cell) or last (`to` a UE), each GBR flow exists and runs through its UE,
/// and names are unique across links, cells and nodes.
pub fn check_references(
    cells: &[CellConfig],
    links: &[String],
    nodes: &[String],
    paths: &[crate::scenario::PathConfig],
    flows: &[crate::scenario::FlowConfig],
    errs: &mut Errors,
) {
    let mut seen_ue: HashSet<&str> = HashSet::new();
    let mut cell_names: HashSet<&str> = HashSet::new();
    for (i, c) in cells.iter().enumerate() {
        if !cell_names.insert(&c.name) {
            errs.push(ConfigError::new(
                format!("cells[{i}].name"),
                &c.name,
                "duplicate cell name",
            ));
        }
        if links.contains(&c.name) {
            errs.push(ConfigError::new(
                format!("cells[{i}].name"),
                &c.name,
                "a link has this name: paths name links and cells alike, so names must differ",
            ));
        }
        if nodes.contains(&c.name) {
            errs.push(ConfigError::new(
                format!("cells[{i}].name"),
                &c.name,
                "a node has this name: the summary lists cells and node elements together, so names must differ",
            ));
        }
        for (j, u) in c.ues.iter().enumerate() {
            if !seen_ue.insert(&u.name) && c.ues.iter().filter(|x| x.name == u.name).count() == 1 {
                errs.push(ConfigError::new(
                    format!("cells[{i}].ues[{j}].name"),
                    &u.name,
                    "this UE is already served by another cell",
                ));
            }
        }
    }
    for (pi, p) in paths.iter().enumerate() {
        for (j, l) in p.links.iter().enumerate() {
            let Some((ci, c)) = cells.iter().enumerate().find(|(_, c)| &c.name == l) else {
                continue;
            };
            let ue_names = || c.ues.iter().map(|u| u.name.as_str()).collect::<Vec<_>>().join(", ");
            let first = j == 0;
            let last = j + 1 == p.links.len();
            if !first && !last {
                errs.push(ConfigError::new(format!("paths[{pi}].links[{j}]"), l, "a cell must be the first entry of a path (uplink from its `from` UE) or the last (downlink to its `to` UE)"));
                continue;
            }
            let ue_ok = |n: &str| c.ues.iter().any(|u| u.name == n);
            let ok = (first && ue_ok(&p.from)) || (last && ue_ok(&p.to));
            if !ok {
                let (field, node) = if first { ("from", &p.from) } else { ("to", &p.to) };
                errs.push(ConfigError::new(
                    format!("paths[{pi}].{field}"),
                    node,
                    format!(
                        "must be a UE of cell `{}` (cells[{ci}]), which this path {} it; UEs: {}",
                        c.name,
                        if first { "starts at" } else { "ends at" },
                        ue_names()
                    ),
                ));
            }
            if p.links.iter().filter(|x| *x == l).count() > 1 {
                errs.push(ConfigError::new(
                    format!("paths[{pi}].links"),
                    l,
                    "names the cell twice",
                ));
            }
        }
    }
    // GBR flows: exist, and run through the UE that lists them.
    for (i, c) in cells.iter().enumerate() {
        for (j, u) in c.ues.iter().enumerate() {
            for (k, g) in u.gbr.iter().enumerate() {
                let Some(f) = flows.iter().find(|f| f.name == g.flow) else {
                    errs.push(ConfigError::new(
                        format!("cells[{i}].ues[{j}].gbr[{k}].flow"),
                        &g.flow,
                        "no flow with this name",
                    ));
                    continue;
                };
                let fpaths: Vec<&String> = f.path.iter().chain(f.paths.iter().flatten()).collect();
                let through = paths
                    .iter()
                    .filter(|p| fpaths.contains(&&p.name))
                    .any(|p| p.links.iter().any(|l| l == &c.name) && (p.from == u.name || p.to == u.name));
                if !through {
                    errs.push(ConfigError::new(
                        format!("cells[{i}].ues[{j}].gbr[{k}].flow"),
                        &g.flow,
                        format!("does not run through UE `{}` of cell `{}`", u.name, c.name),
                    ));
                }
            }
        }
    }
}
