//! Resources: channel bandwidth → resource blocks, and channel quality (CQI) → bytes per
//! resource block per TTI.
//!
//! Sources:
//! - TS 36.101 Table 5.6-1: 1.4 / 3 / 5 / 10 / 15 / 20 MHz → 6 / 15 / 25 / 50 / 75 / 100 RBs.
//! - TS 36.213 Table 7.2.3-1 (4-bit CQI table): modulation, code rate × 1024 and efficiency
//!   (bits per resource element) of CQI 1–15; checked in two independent copies and against
//!   ns-3 `lte-amc.cc` (`SpectralEfficiencyForCqi`).
//! - Resource elements per RB pair and TTI, normal cyclic prefix (12 subcarriers × 14 symbols =
//!   168): downlink 168 − 12·CFI (PDCCH region) − 12 (cell-specific reference signals of two
//!   antenna ports outside the control region) = 144 / 132 / 120 for CFI 1 / 2 / 3; uplink 168
//!   − 24 (DMRS, one symbol per slot) = 144.
//!
//! Bytes for k RBs at efficiency e: ⌊k · RE · e / 8⌋, in integers (e × 10⁴ from the table), so
//! there is no per-RB rounding loss. Deviations: the transport block is not looked up in TS
//! 36.213 Table 7.1.7.2.1-1 (our 100-RB CQI-15 block is 2.7 % below TBS(100, I_TBS 26));
//! PBCH/PSS/SSS and SRS overhead (< 2 %) are ignored; one spatial layer (no MIMO); the uplink
//! uses the same CQI table (LTE reports no uplink CQI; the eNB's link adaptation is assumed to
//! reach the same efficiency); PUSCH sizes need not be 2^a·3^b·5^c RBs.

/// TS 36.101 Table 5.6-1: (bandwidth in MHz, resource blocks).
pub const BANDWIDTHS: [(f64, u32); 6] = [(1.4, 6), (3.0, 15), (5.0, 25), (10.0, 50), (15.0, 75), (20.0, 100)];

/// Resource blocks of a channel bandwidth, `None` if it is not one of [`BANDWIDTHS`].
pub fn resource_blocks(bandwidth_mhz: f64) -> Option<u32> {
    BANDWIDTHS
        .iter()
        .find(|(b, _)| (b - bandwidth_mhz).abs() < 1e-9)
        .map(|&(_, n)| n)
}

/// TS 36.213 Table 7.2.3-1: per CQI (0–15) the modulation order, code rate × 1024 and
/// efficiency × 10 000 (bits per resource element). CQI 0 is "out of range": nothing is sent.
pub const CQI_TABLE: [(u8, u32, u64); 16] = [
    (0, 0, 0),
    (2, 78, 1523),
    (2, 120, 2344),
    (2, 193, 3770),
    (2, 308, 6016),
    (2, 449, 8770),
    (2, 602, 11758),
    (4, 378, 14766),
    (4, 490, 19141),
    (4, 616, 24063),
    (6, 466, 27305),
    (6, 567, 33223),
    (6, 666, 39023),
    (6, 772, 45234),
    (6, 873, 51152),
    (6, 948, 55547),
];

/// The CQI for a downlink SINR in dB: ns-3 `lte-amc.cc`'s PiroEW2010 rule (`GetCqiFromSpectralEfficiency`
/// after `CreateCqiFeedbacks`): spectral efficiency s = log2(1 + SINR / Γ), Γ = −ln(5·BER) / 1.5,
/// BER = 5·10⁻⁵; the CQI is the highest whose Table 7.2.3-1 efficiency is below s (0 when even
/// CQI 1's is not; NaN or −∞ give 0). Deviation: ns-3 averages the SINR over the RBs; here the
/// channel is flat.
pub fn cqi_from_sinr_db(sinr_db: f64) -> u8 {
    if sinr_db.is_nan() {
        return 0;
    }
    let gamma = -(5.0 * 5e-5f64).ln() / 1.5;
    let s = (1.0 + 10f64.powf(sinr_db / 10.0) / gamma).log2();
    let mut cqi = 0;
    while cqi < 15 && (CQI_TABLE[cqi + 1].2 as f64 / 1e4) < s {
        cqi += 1;
    }
    cqi as u8
}

/// Uplink resource elements per RB and TTI (DMRS removed).
pub const UL_RE_PER_RB: u64 = 144;

/// Downlink resource elements per RB and TTI for a control format indicator (1–3).
pub fn dl_re_per_rb(cfi: u8) -> u64 {
    168 - 12 * cfi as u64 - 12
}

/// Bytes that `rbs` resource blocks carry in one TTI at `cqi` with `re` resource elements each.
pub fn bytes_for(rbs: u32, re: u64, cqi: u8) -> u64 {
    rbs as u64 * re * CQI_TABLE[cqi.min(15) as usize].2 / 80_000
}

/// The fewest resource blocks (up to `max`) that carry `bytes`; `max` if even all of them do
/// not; 0 for 0 bytes. `None` at CQI 0.
pub fn rbs_for(bytes: u64, re: u64, cqi: u8, max: u32) -> Option<u32> {
    let eff = CQI_TABLE[cqi.min(15) as usize].2;
    if eff == 0 {
        return None;
    }
    if bytes == 0 {
        return Some(0);
    }
    // Smallest k with ⌊k·re·eff/80000⌋ ≥ bytes, i.e. k·re·eff ≥ bytes·80000.
    let per_rb = re * eff;
    let k = (bytes * 80_000).div_ceil(per_rb);
    Some(k.min(max as u64) as u32)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sinr_maps_to_cqi_as_ns3_piro() {
        // Γ = −ln(2.5e-4)/1.5 = 5.5299; s = log2(1 + SINR/Γ).
        assert_eq!(cqi_from_sinr_db(f64::NEG_INFINITY), 0);
        assert_eq!(cqi_from_sinr_db(f64::NAN), 0);
        assert_eq!(cqi_from_sinr_db(-10.0), 0); // s = 0.026 < 0.1523
        assert_eq!(cqi_from_sinr_db(0.0), 2); // s = 0.2398 > 0.2344 (CQI 2), < 0.3770
        assert_eq!(cqi_from_sinr_db(10.0), 7); // s = 1.4898 > 1.4766 (CQI 7), < 1.9141
        assert_eq!(cqi_from_sinr_db(20.0), 12); // s = 4.2544 > 3.9023, < 4.5234
        assert_eq!(cqi_from_sinr_db(40.0), 15);
        // Monotone in SINR.
        let mut last = 0;
        for i in -200..400 {
            let c = cqi_from_sinr_db(i as f64 / 10.0);
            assert!(c >= last);
            last = c;
        }
    }

    #[test]
    fn bandwidths_map_to_36_101_resource_blocks() {
        let rbs: Vec<u32> = [1.4, 3.0, 5.0, 10.0, 15.0, 20.0]
            .iter()
            .map(|&b| resource_blocks(b).unwrap())
            .collect();
        assert_eq!(rbs, [6, 15, 25, 50, 75, 100]);
        assert_eq!(resource_blocks(7.0), None);
    }

    #[test]
    fn efficiency_is_modulation_times_code_rate() {
        for (cqi, &(qm, rate, eff)) in CQI_TABLE.iter().enumerate().skip(1) {
            let exact = qm as f64 * rate as f64 / 1024.0;
            assert!((eff as f64 / 1e4 - exact).abs() < 6e-5, "CQI {cqi}: {eff} vs {exact}");
        }
    }

    #[test]
    fn bytes_per_tti_at_full_band() {
        assert_eq!(dl_re_per_rb(1), 144);
        assert_eq!(dl_re_per_rb(2), 132);
        assert_eq!(dl_re_per_rb(3), 120);
        assert_eq!(bytes_for(100, dl_re_per_rb(2), 15), 9165);
        assert_eq!(bytes_for(96, UL_RE_PER_RB, 9), 4158);
        assert_eq!(bytes_for(96, UL_RE_PER_RB, 15), 9598);
        assert_eq!(bytes_for(100, dl_re_per_rb(2), 0), 0);
        assert_eq!(bytes_for(2, UL_RE_PER_RB, 9), 86);
    }

    #[test]
    fn rbs_for_is_the_inverse_of_bytes_for() {
        for cqi in 1..=15u8 {
            for bytes in [1u64, 52, 100, 1512, 4158, 9000, 20000] {
                let k = rbs_for(bytes, UL_RE_PER_RB, cqi, 100_000).unwrap();
                assert!(
                    bytes_for(k, UL_RE_PER_RB, cqi) >= bytes,
                    "cqi {cqi} bytes {bytes} k {k}"
                );
                assert!(
                    k == 0 || bytes_for(k - 1, UL_RE_PER_RB, cqi) < bytes,
                    "cqi {cqi} bytes {bytes} k {k}"
                );
            }
        }
        assert_eq!(rbs_for(10, UL_RE_PER_RB, 0, 96), None);
        assert_eq!(rbs_for(1_000_000, UL_RE_PER_RB, 9, 96), Some(96));
    }
}
