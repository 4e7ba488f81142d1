//! Operators' sites along the track and the RSRP each site gives at each point of the track.
//!
//! Model (all choices are config defaults, see `config.rs`):
//! - **Sites**: operator `o`'s site `k` sits at distance `offset_m + k·spacing_m` along the track,
//!   `lateral_m` to its left (P0: every 1340 m, 300 m from the track; the second operator offset
//!   by half the spacing, 670 m, so its cell borders fall between the first operator's).
//! - **Path loss**: 3GPP TR 36.942 §4.5, macro cell in urban/suburban area:
//!   `L = 40(1 − 4·10⁻³·Dhb)·log10(R_km) − 18·log10(Dhb) + 21·log10(f_MHz) + 80` dB with
//!   Dhb = 15 m above rooftop (128.1 + 37.6·log10 R at 2 GHz). R is clamped to >= 10 m.
//! - **RSRP** = transmit power − 10·log10(12·N_RB) (power per resource element) − L − shadowing.
//!   No antenna pattern or gain: only RSRP *differences* drive A3, and sites are omni here.
//! - **Shadowing**, a property of the environment: Gudmundson (1991, Electronics Letters 27(23),
//!   "Correlation model for shadow fading in mobile radio systems") exponential autocorrelation
//!   `R(Δ) = σ²·exp(−Δ/d_corr)` along the track, realised as a first-order autoregression on a grid.
//!   Each site's shadowing is `√ρ·C(s) + √(1−ρ)·S_k(s)` with a common part `C` (obstacles near the
//!   train, seen by all sites) and a per-site part, ρ = 0.5 between sites (TR 36.942 §4.5 /
//!   TR 25.942 inter-site shadowing correlation). Both come from the *environment seed*, and each
//!   site's part starts at a fixed point (its own window start), so a place looks the same in every
//!   run, whatever the run's length or start.
//! - **Run-to-run variation**: a second, smaller Gudmundson process per site (σ = 1.5 dB by default,
//!   same decorrelation distance) from the *run* seed: foliage, other trains, weather.
//! - Each site is measured only within [`WINDOW_SPACINGS`] spacings of it (farther sites are 30 dB
//!   or more below the serving one and never become the best cell).
//! - Maps are sampled on a grid (default 1 m) so a lookup is O(1) (linear interpolation). A site's
//!   grid is made when a lookup first needs it and kept in a small per-operator cache (the sites
//!   around the last lookups); one that falls out is made again, from the same streams, if asked
//!   for again. So memory stays bounded whatever the ride's length (a 1-hour ride held every
//!   site's grid, ~35 MiB, before), and every value is the one a precomputed map would hold.
//!   Only the common shadowing part is kept whole (8 bytes per grid step of the ride).
use super::config::{HstConfig, OperatorConfig, RadioConfig};
use super::mobility::{dist, Track};
use crate::core::rng::{Rng, RngStreams};
use std::cell::RefCell;

/// A site is measured within this many spacings of it.
pub const WINDOW_SPACINGS: f64 = 3.0;
/// Thermal noise density, dBm/Hz.
const THERMAL_DBM_HZ: f64 = -174.0;

/// One eNB site (one cell per site in this model).
#[derive(Clone, Debug, PartialEq)]
pub struct Site {
    pub operator: usize,
    /// Site index `k` (position `offset + k·spacing`); may be negative.
    pub cell: i64,
    /// Distance along the track of the site's foot point, m.
    pub s_m: f64,
    pub xy: [f64; 2],
}

/// TR 36.942 §4.5 macro-cell path loss in dB at distance `r_m` metres.
pub fn path_loss_db(r_m: f64, carrier_mhz: f64, bs_height_m: f64) -> f64 {
    let r_km = r_m.max(10.0) / 1000.0;
    let dhb = bs_height_m.max(1e-3); // log10(0) is undefined; Dhb = 0 means "at rooftop"
    40.0 * (1.0 - 4e-3 * dhb) * r_km.log10() - 18.0 * dhb.log10() + 21.0 * carrier_mhz.log10() + 80.0
}

/// Resource blocks for an LTE channel bandwidth (TS 36.101 Table 5.6-1).
pub fn resource_blocks(bandwidth_mhz: f64) -> f64 {
    match bandwidth_mhz {
        b if b <= 1.4 => 6.0,
        b if b <= 3.0 => 15.0,
        b if b <= 5.0 => 25.0,
        b if b <= 10.0 => 50.0,
        b if b <= 15.0 => 75.0,
        _ => 100.0,
    }
}

/// `n` samples, `step_m` apart, of a stationary Gudmundson process with standard deviation `sigma`.
pub fn gudmundson(rng: &mut Rng, n: usize, step_m: f64, decorrelation_m: f64, sigma: f64) -> Vec<f64> {
    let rho = (-step_m / decorrelation_m).exp();
    let innov = (1.0 - rho * rho).sqrt() * sigma;
    let mut x = super::std_normal(rng) * sigma; // start in the stationary distribution
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        out.push(x);
        x = rho * x + innov * super::std_normal(rng);
    }
    out
}

/// Samples on a regular grid starting at `s0`.
#[derive(Clone, Debug)]
struct Grid {
    s0: f64,
    step: f64,
    vals: Vec<f64>,
}

impl Grid {
    /// Linear interpolation; `None` outside the grid.
    fn at(&self, s: f64) -> Option<f64> {
        let u = (s - self.s0) / self.step;
        if u.is_nan() || u < 0.0 || u > (self.vals.len() - 1) as f64 {
            return None;
        }
        let i = (u as usize).min(self.vals.len().saturating_sub(2));
        let f = u - i as f64;
        Some(self.vals[i] + f * (self.vals.get(i + 1).copied().unwrap_or(self.vals[i]) - self.vals[i]))
    }
}

/// One operator's sites and where their RSRP maps lie along the track.
#[derive(Clone, Debug)]
pub struct OperatorMap {
    pub sites: Vec<Site>,
    /// Per site, the extent of its RSRP grid: (first sample index in its window, samples in the
    /// window); the values are made on demand (`RadioMap::with_grid`).
    extents: Vec<(usize, usize)>,
    /// Sites whose grids are at hand: (site index, grid), at most `cache_cap`.
    cache: RefCell<Vec<(usize, Grid)>>,
    cache_cap: usize,
}

/// Every operator's RSRP maps for one run (environment + run-to-run terms).
#[derive(Clone, Debug)]
pub struct RadioMap {
    pub operators: Vec<OperatorMap>,
    /// Received-power offset from RSRP (per resource element) to the whole band, dB.
    re_to_band_db: f64,
    noise_dbm: f64,
    // What making a site's grid takes.
    radio: RadioConfig,
    track: Track,
    common: Grid,
    environment_seed: u64,
    run_seed: u64,
}

impl RadioMap {
    /// Maps for a train that stays within `[s_lo, s_hi]` along `track`.
    pub fn new(cfg: &HstConfig, run_seed: u64, track: &Track, s_lo: f64, s_hi: f64) -> Self {
        let env = RngStreams::new(cfg.environment_seed);
        let r = &cfg.radio;
        let common = common_shadowing(r, &env, s_hi);
        let operators = (r.operators.iter().enumerate())
            .map(|(o, op)| operator_map(r, o, op, track, (s_lo, s_hi)))
            .collect();
        let nrb = resource_blocks(r.bandwidth_mhz);
        let noise_dbm = THERMAL_DBM_HZ + 10.0 * (nrb * 180e3).log10() + r.noise_figure_db;
        RadioMap {
            operators,
            re_to_band_db: 10.0 * (12.0 * nrb).log10(),
            noise_dbm,
            radio: r.clone(),
            track: track.clone(),
            common,
            environment_seed: cfg.environment_seed,
            run_seed,
        }
    }

    /// RSRP (dBm) of site `i` of operator `op` at track position `s`; −∞ when not measured there.
    pub fn rsrp_dbm(&self, op: usize, i: usize, s: f64) -> f64 {
        let o = &self.operators[op];
        let (first, n) = o.extents[i];
        if first >= n {
            return f64::NEG_INFINITY;
        }
        // The grid's extent, as `site_grid` makes it: outside it there is nothing to make.
        let step = self.radio.shadowing.grid_m;
        let s0 = window_start(&o.sites[i], &self.radio.operators[op]) + first as f64 * step;
        let u = (s - s0) / step;
        if u.is_nan() || u < 0.0 || u > (n - first - 1) as f64 {
            return f64::NEG_INFINITY;
        }
        self.with_grid(op, i, s, |g| g.at(s)).unwrap_or(f64::NEG_INFINITY)
    }

    /// Runs `f` on site `i`'s grid, making it (and evicting the cached site farthest from `s`)
    /// if it is not at hand.
    fn with_grid<T>(&self, op: usize, i: usize, s: f64, f: impl FnOnce(&Grid) -> T) -> T {
        let o = &self.operators[op];
        let mut cache = o.cache.borrow_mut();
        if let Some(k) = cache.iter().position(|(j, _)| *j == i) {
            return f(&cache[k].1);
        }
        let env = RngStreams::new(self.environment_seed);
        let run = RngStreams::new(self.run_seed);
        let grid = site_grid(
            &self.radio,
            &self.radio.operators[op],
            &o.sites[i],
            &self.track,
            &self.common,
            &env,
            &run,
        );
        if cache.len() >= o.cache_cap {
            let far = (0..cache.len())
                .max_by(|&a, &b| {
                    let (da, db) = ((o.sites[cache[a].0].s_m - s).abs(), (o.sites[cache[b].0].s_m - s).abs());
                    da.total_cmp(&db)
                })
                .expect("a full cache is not empty");
            cache.swap_remove(far);
        }
        cache.push((i, grid));
        let last = cache.len() - 1;
        f(&cache[last].1)
    }

    /// RSRP of every site of `op` at `s` (same order as `sites`).
    pub fn rsrp_all(&self, op: usize, s: f64, out: &mut Vec<f64>) {
        out.clear();
        out.extend((0..self.operators[op].sites.len()).map(|i| self.rsrp_dbm(op, i, s)));
    }

    /// Downlink SINR (dB) from serving site `i` of `op` at `s`, with every other measured site of
    /// the same operator fully loaded (worst case; the operators use different carriers).
    pub fn sinr_db(&self, op: usize, i: usize, s: f64) -> f64 {
        let mut interf_mw = 10f64.powf(self.noise_dbm / 10.0);
        for j in 0..self.operators[op].sites.len() {
            let p = self.rsrp_dbm(op, j, s);
            if j != i && p.is_finite() {
                interf_mw += 10f64.powf((p + self.re_to_band_db) / 10.0);
            }
        }
        self.rsrp_dbm(op, i, s) + self.re_to_band_db - 10.0 * interf_mw.log10()
    }

    /// Site grids at hand now, over all operators (for tests).
    #[cfg(test)]
    fn cached(&self) -> usize {
        self.operators.iter().map(|o| o.cache.borrow().len()).sum()
    }
}

/// Where site `site`'s window starts (`s − W`; it may be before the track's start).
fn window_start(site: &Site, op: &OperatorConfig) -> f64 {
    site.s_m - WINDOW_SPACINGS * op.spacing_m
}

/// The shadowing part common to all sites, on `[0, s_hi + margin]` from the environment seed.
fn common_shadowing(r: &RadioConfig, env: &RngStreams, s_hi: f64) -> Grid {
    let sh = &r.shadowing;
    let max_spacing = r.operators.iter().map(|o| o.spacing_m).fold(0.0, f64::max);
    let n = ((s_hi.max(0.0) + WINDOW_SPACINGS * max_spacing) / sh.grid_m).ceil() as usize + 2;
    let mut rng = env.stream("radio/shadow/common");
    Grid {
        s0: 0.0,
        step: sh.grid_m,
        vals: gudmundson(&mut rng, n, sh.grid_m, sh.decorrelation_m, sh.sigma_db),
    }
}

/// Sites of one operator that can serve a train within `[s_lo, s_hi]`, with their grids' extents.
fn operator_map(
    r: &RadioConfig,
    o: usize,
    op: &OperatorConfig,
    track: &Track,
    (s_lo, s_hi): (f64, f64),
) -> OperatorMap {
    let w = WINDOW_SPACINGS * op.spacing_m;
    let k_lo = ((s_lo - w - op.offset_m) / op.spacing_m).ceil() as i64;
    let k_hi = ((s_hi + w - op.offset_m) / op.spacing_m).floor() as i64;
    let sites: Vec<Site> = (k_lo..=k_hi)
        .map(|k| {
            let s_m = op.offset_m + k as f64 * op.spacing_m;
            Site {
                operator: o,
                cell: k,
                s_m,
                xy: track.offset_xy(s_m, op.lateral_m),
            }
        })
        .collect();
    let extents = sites.iter().map(|site| grid_extent(r, op, site)).collect();
    // Every point lies in the windows of at most 2W/spacing + 1 sites; two more let a lookup a
    // little ahead (signalling steps) and the next point share the cache without making grids again.
    let cache_cap = (2.0 * WINDOW_SPACINGS).ceil() as usize + 3;
    OperatorMap {
        sites,
        extents,
        cache: RefCell::new(Vec::with_capacity(cache_cap)),
        cache_cap,
    }
}

/// (first sample, samples) of site `site`'s window grid: `site_grid` makes samples first..n.
fn grid_extent(r: &RadioConfig, op: &OperatorConfig, site: &Site) -> (usize, usize) {
    let step = r.shadowing.grid_m;
    let w = WINDOW_SPACINGS * op.spacing_m;
    let n = (2.0 * w / step).ceil() as usize + 1;
    let s0 = window_start(site, op);
    let first = if s0 < 0.0 { (-s0 / step).ceil() as usize } else { 0 };
    (first, n)
}

/// RSRP map of one site over its window `[s − W, s + W]` (clipped at 0, where the track starts).
fn site_grid(
    r: &RadioConfig,
    op: &OperatorConfig,
    site: &Site,
    track: &Track,
    common: &Grid,
    env: &RngStreams,
    run: &RngStreams,
) -> Grid {
    let sh = &r.shadowing;
    let (first, n) = grid_extent(r, op, site);
    let s0 = window_start(site, op);
    let tag = format!("{}/{}", op.name, site.cell);
    // Generated over the whole window (even before s = 0) so values never depend on the run.
    let own = gudmundson(
        &mut env.stream(&format!("radio/shadow/{tag}")),
        n,
        sh.grid_m,
        sh.decorrelation_m,
        sh.sigma_db,
    );
    let var = gudmundson(
        &mut run.stream(&format!("radio/run_shadow/{tag}")),
        n,
        sh.grid_m,
        sh.decorrelation_m,
        sh.run_sigma_db,
    );
    let (a, b) = (
        sh.inter_site_correlation.sqrt(),
        (1.0 - sh.inter_site_correlation).sqrt(),
    );
    let p_re = r.tx_power_dbm - 10.0 * (12.0 * resource_blocks(r.bandwidth_mhz)).log10();
    let vals = (first..n)
        .map(|i| {
            let s = s0 + i as f64 * sh.grid_m;
            let pl = path_loss_db(dist(track.xy(s), site.xy), r.carrier_mhz, r.bs_height_m);
            let shadow = a * common.at(s).unwrap_or(0.0) + b * own[i] + var[i];
            p_re - pl - shadow
        })
        .collect();
    Grid {
        s0: s0 + first as f64 * sh.grid_m,
        step: sh.grid_m,
        vals,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn path_loss_matches_tr36942_at_2ghz() {
        // 128.1 + 37.6 log10(R_km) for Dhb = 15 m, f = 2000 MHz (TR 36.942 §4.5 worked value).
        let l = path_loss_db(1000.0, 2000.0, 15.0);
        assert!((l - 128.1).abs() < 0.1, "{l}");
        let slope = path_loss_db(10_000.0, 2000.0, 15.0) - l;
        assert!((slope - 37.6).abs() < 1e-9, "{slope}");
    }

    #[test]
    fn gudmundson_has_sigma_and_exponential_correlation() {
        let mut rng = RngStreams::new(1).stream("t");
        let x = gudmundson(&mut rng, 400_000, 1.0, 50.0, 8.0);
        let n = x.len() as f64;
        let var = x.iter().map(|v| v * v).sum::<f64>() / n;
        assert!((var.sqrt() - 8.0).abs() < 0.4, "sd {}", var.sqrt());
        let c50 = x.windows(51).map(|w| w[0] * w[50]).sum::<f64>() / (n - 50.0) / var;
        assert!((c50 - (-1f64).exp()).abs() < 0.05, "corr at 50 m {c50}");
    }

    #[test]
    fn grids_are_made_on_demand_in_bounded_memory_with_the_same_values_in_any_order() {
        let cfg = HstConfig::default();
        let t = Track::straight();
        let a = RadioMap::new(&cfg, 7, &t, 0.0, 60_000.0);
        let b = RadioMap::new(&cfg, 7, &t, 0.0, 60_000.0);
        let cap: usize = a.operators.iter().map(|o| o.cache_cap).sum();
        let sites: usize = a.operators.iter().map(|o| o.sites.len()).sum();
        assert!(
            sites > 4 * cap,
            "the ride must have many more sites ({sites}) than the cache holds ({cap})"
        );
        let points: Vec<f64> = (0..6000).map(|k| k as f64 * 10.0 + 0.37).collect();
        let mut rsrp = Vec::new();
        // a forward along the ride, b backward and then forward again: every grid b needs twice
        // is made twice, and must come out the same.
        let fwd: Vec<Vec<f64>> = points
            .iter()
            .map(|&s| {
                a.rsrp_all(0, s, &mut rsrp);
                rsrp.clone()
            })
            .collect();
        assert!(a.cached() <= cap, "{} grids held, cap {cap}", a.cached());
        for (k, &s) in points.iter().enumerate().rev() {
            b.rsrp_all(0, s, &mut rsrp);
            assert_eq!(rsrp, fwd[k], "at {s} (backward)");
        }
        for (k, &s) in points.iter().enumerate() {
            b.rsrp_all(0, s, &mut rsrp);
            assert_eq!(rsrp, fwd[k], "at {s} (forward again)");
            assert_eq!(a.sinr_db(0, 3, s).to_bits(), b.sinr_db(0, 3, s).to_bits());
        }
        assert!(b.cached() <= cap);
        assert!(
            fwd.iter().all(|v| v.iter().any(|p| p.is_finite())),
            "every point is measured by some site"
        );
    }

    #[test]
    fn lookups_equal_the_precomputed_grid_at_its_edges_and_outside() {
        let cfg = HstConfig::default();
        let t = Track::straight();
        let map = RadioMap::new(&cfg, 3, &t, 0.0, 20_000.0);
        let (env, run) = (RngStreams::new(cfg.environment_seed), RngStreams::new(3));
        let (r, op) = (&cfg.radio, &cfg.radio.operators[0]);
        for (i, site) in map.operators[0].sites.iter().enumerate() {
            let g = site_grid(r, op, site, &t, &map.common, &env, &run);
            let last = g.s0 + (g.vals.len() - 1) as f64 * g.step;
            for s in [
                g.s0,
                g.s0 + 0.5 * g.step,
                (g.s0 + last) / 2.0,
                last,
                last + 1e-9,
                g.s0 - 1e-9,
                f64::NAN,
                f64::INFINITY,
            ] {
                let want = g.at(s).unwrap_or(f64::NEG_INFINITY);
                let got = map.rsrp_dbm(0, i, s);
                assert!(want.to_bits() == got.to_bits(), "site {i} at {s}: {got} vs {want}");
            }
        }
    }

    #[test]
    fn environment_maps_do_not_depend_on_run_length_or_start() {
        let mut cfg = HstConfig::default();
        cfg.radio.shadowing.run_sigma_db = 0.0;
        let t = Track::straight();
        let a = RadioMap::new(&cfg, 1, &t, 0.0, 3000.0);
        let b = RadioMap::new(&cfg, 2, &t, 1000.0, 9000.0);
        let site_a = a.operators[0].sites.iter().position(|s| s.cell == 2).unwrap();
        let site_b = b.operators[0].sites.iter().position(|s| s.cell == 2).unwrap();
        for s in [1500.0, 2000.0, 2680.5, 2999.0] {
            assert_eq!(a.rsrp_dbm(0, site_a, s), b.rsrp_dbm(0, site_b, s), "at {s}");
        }
    }
}
