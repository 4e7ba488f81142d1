//! Frame timing: 1 ms TTIs (subframes), FDD or TDD with the UL/DL configurations 0–6, and the
//! uplink grant timing.
//!
//! Sources:
//! - 3GPP TS 36.211 Table 4.2-2 (uplink-downlink configurations): the subframe patterns below,
//!   checked against srsRAN `lib/src/phy/common/phy_common.c` (`tdd_sf`).
//! - TS 36.211 Table 4.2-1 (special subframe configurations) and TS 36.213 §7.1.7: the PDSCH
//!   of a special subframe's DwPTS is sized for N'_PRB = max(⌊0.75·N_PRB⌋, 1) resource blocks,
//!   none for special configurations 0 and 5 (normal cyclic prefix); configuration 9 (Rel-11)
//!   uses 0.375 (not checked against the specification text: from secondary descriptions).
//! - TS 36.213 §8 Table 8-2 (k for PUSCH transmission in subframe n + k after an uplink grant in
//!   subframe n; configuration 0 also uses the UL-index LSB, n + 7); FDD: k = 4.
//!
//! Deviations: UpPTS carries no PUSCH (SRS/PRACH only) and is counted as neither a downlink nor
//! an uplink TTI; a special subframe is a downlink TTI of reduced size. Normal cyclic prefix only.

/// What a subframe carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Subframe {
    /// Downlink.
    D,
    /// Special (DwPTS downlink, guard period, UpPTS).
    S,
    /// Uplink.
    U,
}

/// TS 36.211 Table 4.2-2: subframes 0–9 of each TDD uplink-downlink configuration.
pub const TDD_PATTERNS: [&str; 7] = [
    "DSUUUDSUUU", // 0 (5 ms switch-point periodicity)
    "DSUUDDSUUD", // 1 (5 ms)
    "DSUDDDSUDD", // 2 (5 ms)
    "DSUUUDDDDD", // 3 (10 ms)
    "DSUUDDDDDD", // 4 (10 ms)
    "DSUDDDDDDD", // 5 (10 ms)
    "DSUUUDSUUD", // 6 (5 ms)
];

/// TS 36.213 Table 8-2 read backwards: for each uplink subframe u of a configuration, the k such
/// that its grant is sent in subframe u − k (mod 10, in the previous frame if negative); 0 where
/// u is not an uplink subframe. Configuration 0 schedules subframes 3 and 8 with the UL-index
/// LSB (grant n → PUSCH n + 7: 6 → 3', 1 → 8); its other pairs are Table 8-2's (0 → 4, 1 → 7,
/// 5 → 9, 6 → 2').
pub const TDD_GRANT_K: [[u8; 10]; 7] = [
    [0, 0, 6, 7, 4, 0, 0, 6, 7, 4], // 0: 6→2', 6→3' (UL index), 0→4, 1→7, 1→8 (UL index), 5→9
    [0, 0, 6, 4, 0, 0, 0, 6, 4, 0], // 1: 6→2', 9→3', 1→7, 4→8
    [0, 0, 4, 0, 0, 0, 0, 4, 0, 0], // 2: 8→2', 3→7
    [0, 0, 4, 4, 4, 0, 0, 0, 0, 0], // 3: 8→2', 9→3', 0→4
    [0, 0, 4, 4, 0, 0, 0, 0, 0, 0], // 4: 8→2', 9→3'
    [0, 0, 4, 0, 0, 0, 0, 0, 0, 0], // 5: 8→2'
    [0, 0, 7, 7, 5, 0, 0, 7, 7, 0], // 6: 5→2', 6→3', 9→4', 0→7, 1→8
];

/// FDD grant delay (TS 36.213 §8): PUSCH in n + 4.
pub const FDD_GRANT_K: u8 = 4;

/// DwPTS PDSCH size factor of a special subframe configuration (normal CP; TS 36.213 §7.1.7).
pub fn special_dl_fraction(special_subframe: u8) -> f64 {
    match special_subframe {
        0 | 5 => 0.0,
        9 => 0.375,
        _ => 0.75,
    }
}

/// A cell's frame structure.
#[derive(Clone, Debug, PartialEq)]
pub struct Frame {
    /// `None`: FDD (every subframe carries both directions).
    pub tdd_config: Option<u8>,
    pattern: [Subframe; 10],
    grant_k: [u8; 10],
    /// DwPTS size factor (TDD).
    pub special_fraction: f64,
}

impl Frame {
    pub fn fdd() -> Frame {
        Frame {
            tdd_config: None,
            pattern: [Subframe::D; 10],
            grant_k: [FDD_GRANT_K; 10],
            special_fraction: 1.0,
        }
    }

    /// TDD configuration `cfg` (0–6) with special subframe configuration `special` (0–9).
    pub fn tdd(cfg: u8, special: u8) -> Frame {
        let mut pattern = [Subframe::D; 10];
        for (i, c) in TDD_PATTERNS[cfg as usize].chars().enumerate() {
            pattern[i] = match c {
                'D' => Subframe::D,
                'S' => Subframe::S,
                _ => Subframe::U,
            };
        }
        Frame {
            tdd_config: Some(cfg),
            pattern,
            grant_k: TDD_GRANT_K[cfg as usize],
            special_fraction: special_dl_fraction(special),
        }
    }

    pub fn is_fdd(&self) -> bool {
        self.tdd_config.is_none()
    }

    /// The subframe type of TTI `tti` (TTI n spans [n, n + 1) ms; subframe n mod 10). In FDD
    /// every subframe is `D` for the downlink and an uplink subframe as well.
    pub fn subframe(&self, tti: u64) -> Subframe {
        self.pattern[(tti % 10) as usize]
    }

    /// Whether TTI `tti` carries PUSCH.
    pub fn is_ul(&self, tti: u64) -> bool {
        self.is_fdd() || self.subframe(tti) == Subframe::U
    }

    /// The downlink size factor of TTI `tti`: 1 for a D subframe (and FDD), the DwPTS factor for
    /// S, 0 for U.
    pub fn dl_fraction(&self, tti: u64) -> f64 {
        if self.is_fdd() {
            return 1.0;
        }
        match self.subframe(tti) {
            Subframe::D => 1.0,
            Subframe::S => self.special_fraction,
            Subframe::U => 0.0,
        }
    }

    /// The uplink TTIs whose grants are sent in TTI `tti`: `tti + k` for each such k (at most two,
    /// configuration 0), in increasing order.
    pub fn grant_targets(&self, tti: u64) -> impl Iterator<Item = u64> + '_ {
        (1..=7u64).filter_map(move |k| {
            let u = tti + k;
            let carries_pdcch = self.is_fdd() || self.subframe(tti) != Subframe::U;
            (carries_pdcch && self.is_ul(u) && self.grant_k[(u % 10) as usize] as u64 == k).then_some(u)
        })
    }

    /// M: uplink TTIs per second.
    pub fn ul_ttis_per_second(&self) -> u32 {
        if self.is_fdd() {
            1000
        } else {
            100 * self.pattern.iter().filter(|s| **s == Subframe::U).count() as u32
        }
    }

    /// Uplink TTIs in [from, to).
    pub fn count_ul(&self, from: u64, to: u64) -> u64 {
        self.count(from, to, |s| s == Subframe::U)
    }

    /// Downlink-carrying TTIs (D or S with a DwPTS PDSCH) in [from, to).
    pub fn count_dl(&self, from: u64, to: u64) -> u64 {
        let sf = self.special_fraction;
        self.count(from, to, |s| s == Subframe::D || (s == Subframe::S && sf > 0.0))
    }

    fn count(&self, from: u64, to: u64, pred: impl Fn(Subframe) -> bool) -> u64 {
        if to <= from {
            return 0;
        }
        if self.is_fdd() {
            return to - from;
        }
        let per_frame = self.pattern.iter().filter(|s| pred(**s)).count() as u64;
        let upto = |t: u64| {
            (t / 10) * per_frame + self.pattern[..(t % 10) as usize].iter().filter(|s| pred(**s)).count() as u64
        };
        upto(to) - upto(from)
    }

    /// The pattern as letters ("DSUDDDSUDD"; FDD: "FFFFFFFFFF").
    pub fn pattern_string(&self) -> String {
        if self.is_fdd() {
            return "F".repeat(10);
        }
        self.pattern
            .iter()
            .map(|s| match s {
                Subframe::D => 'D',
                Subframe::S => 'S',
                Subframe::U => 'U',
            })
            .collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uplink_ttis_per_second_per_configuration() {
        let m: Vec<u32> = (0..7).map(|c| Frame::tdd(c, 7).ul_ttis_per_second()).collect();
        assert_eq!(m, [600, 400, 200, 300, 200, 100, 500]);
        assert_eq!(Frame::fdd().ul_ttis_per_second(), 1000);
        for c in 0..7 {
            let f = Frame::tdd(c, 7);
            assert_eq!(f.count_ul(0, 1000), f.ul_ttis_per_second() as u64);
            assert_eq!((0..1000).filter(|&t| f.is_ul(t)).count() as u64, f.count_ul(0, 1000));
            assert_eq!(f.count_ul(3, 1003), f.count_ul(0, 1000));
            assert_eq!(f.count_dl(0, 1000), 1000 - f.count_ul(0, 1000));
        }
    }

    #[test]
    fn patterns_match_36_211_table_4_2_2() {
        for c in 0..7u8 {
            assert_eq!(Frame::tdd(c, 7).pattern_string(), TDD_PATTERNS[c as usize]);
            let p = TDD_PATTERNS[c as usize].as_bytes();
            assert_eq!((p[0], p[1], p[2]), (b'D', b'S', b'U'));
        }
    }

    /// Every uplink subframe has exactly one grant subframe, which carries downlink control
    /// (D or S), and the pairs are TS 36.213 Table 8-2's.
    #[test]
    fn grant_timing_is_table_8_2() {
        let expected: [&[(u64, u64)]; 7] = [
            &[(0, 4), (1, 7), (1, 8), (5, 9), (6, 12), (6, 13)],
            &[(1, 7), (4, 8), (6, 12), (9, 13)],
            &[(3, 7), (8, 12)],
            &[(0, 4), (8, 12), (9, 13)],
            &[(8, 12), (9, 13)],
            &[(8, 12)],
            &[(0, 7), (1, 8), (5, 12), (6, 13), (9, 14)],
        ];
        for c in 0..7u8 {
            let f = Frame::tdd(c, 7);
            let pairs: Vec<(u64, u64)> = (0..10).flat_map(|n| f.grant_targets(n).map(move |u| (n, u))).collect();
            assert_eq!(pairs, expected[c as usize], "configuration {c}");
            let mut targets: Vec<u64> = (10..20)
                .flat_map(|n| f.grant_targets(n).collect::<Vec<_>>())
                .map(|u| u % 10)
                .collect();
            targets.sort_unstable();
            let ul: Vec<u64> = (0..10).filter(|&u| f.is_ul(u)).collect();
            assert_eq!(targets, ul, "configuration {c}: each UL subframe granted once");
        }
        let f = Frame::fdd();
        for n in 0..20 {
            assert_eq!(f.grant_targets(n).collect::<Vec<_>>(), vec![n + 4]);
        }
    }

    #[test]
    fn special_subframe_fraction() {
        assert_eq!(special_dl_fraction(0), 0.0);
        assert_eq!(special_dl_fraction(5), 0.0);
        assert_eq!(special_dl_fraction(7), 0.75);
        assert_eq!(Frame::tdd(2, 7).dl_fraction(1), 0.75);
        assert_eq!(Frame::tdd(2, 7).dl_fraction(2), 0.0);
        assert_eq!(Frame::tdd(2, 0).count_dl(0, 1000), 600);
    }
}
