//! Train mobility along a track, and a GPS receiver that samples the train's position.
//!
//! Modelling choices:
//! - The train's state is its distance `s` along the track (m). Speed is piecewise constant in
//!   time (no acceleration phases: at 300 km/h a change of speed takes minutes, far longer than a
//!   handover, and P0 runs at a constant speed).
//! - The track is a straight line along x (default) or a polyline; beyond its last point it
//!   continues straight, so any run length is valid.
//! - GPS reports the along-track distance plus a Gaussian error with standard deviation `sigma_m`
//!   (default 5 m, a typical open-sky consumer receiver), either independent per fix or, with
//!   `correlation_s > 0`, a first-order Gauss–Markov process (real fixes drift slowly). Errors
//!   come from the run's named stream `radio/gps`, never a global RNG.
use super::config::{GpsConfig, TrainConfig};
use crate::core::rng::{Rng, RngStreams};
use crate::core::time::{from_ms_f64, from_secs_f64, to_secs_f64, Time};

/// A track: a polyline with cumulative lengths, or the x axis when straight.
#[derive(Clone, Debug)]
pub struct Track {
    pts: Vec<[f64; 2]>,
    /// `cum[i]` = distance along the track of `pts[i]`.
    cum: Vec<f64>,
}

impl Track {
    /// The x axis (`xy(s) = (s, 0)`).
    pub fn straight() -> Self {
        Track {
            pts: vec![[0.0, 0.0], [1.0, 0.0]],
            cum: vec![0.0, 1.0],
        }
    }

    /// A polyline; `pts` must have >= 2 points and no zero-length segment (see config checks).
    /// An empty list gives the straight track.
    pub fn polyline(pts: &[[f64; 2]]) -> Self {
        if pts.len() < 2 {
            return Self::straight();
        }
        let mut cum = vec![0.0];
        for w in pts.windows(2) {
            cum.push(cum.last().unwrap() + dist(w[0], w[1]));
        }
        Track { pts: pts.to_vec(), cum }
    }

    /// Index of the segment that holds distance `s` (the last one beyond the end).
    fn segment(&self, s: f64) -> usize {
        let i = self.cum.partition_point(|&c| c <= s);
        i.clamp(1, self.pts.len() - 1) - 1
    }

    /// Unit direction of segment `i`.
    fn dir(&self, i: usize) -> [f64; 2] {
        let (a, b) = (self.pts[i], self.pts[i + 1]);
        let l = dist(a, b);
        [(b[0] - a[0]) / l, (b[1] - a[1]) / l]
    }

    /// The point at distance `s` along the track (extrapolated before 0 and after the end).
    pub fn xy(&self, s: f64) -> [f64; 2] {
        let i = self.segment(s);
        let d = self.dir(i);
        let a = self.pts[i];
        let u = s - self.cum[i];
        [a[0] + u * d[0], a[1] + u * d[1]]
    }

    /// The point `lateral` metres to the left of the track at distance `s`.
    pub fn offset_xy(&self, s: f64, lateral: f64) -> [f64; 2] {
        let p = self.xy(s);
        let d = self.dir(self.segment(s));
        [p[0] - lateral * d[1], p[1] + lateral * d[0]]
    }
}

pub fn dist(a: [f64; 2], b: [f64; 2]) -> f64 {
    ((a[0] - b[0]).powi(2) + (a[1] - b[1]).powi(2)).sqrt()
}

/// The train: where it is at each instant.
#[derive(Clone, Debug)]
pub struct Mobility {
    track: Track,
    /// `(t_start, s_at_start, speed_mps)`, sorted by start time; `legs[0].0 == 0`.
    legs: Vec<(Time, f64, f64)>,
}

impl Mobility {
    /// Builds the train from a validated config.
    pub fn new(cfg: &TrainConfig) -> Self {
        let steps: Vec<(f64, f64)> = if cfg.speed_profile.is_empty() {
            vec![(0.0, cfg.speed_kmh)]
        } else {
            cfg.speed_profile.iter().map(|s| (s.from_s, s.speed_kmh)).collect()
        };
        let mut legs: Vec<(Time, f64, f64)> = Vec::with_capacity(steps.len());
        for (from_s, kmh) in steps {
            let t = from_secs_f64(from_s);
            let s = legs
                .last()
                .map_or(cfg.start_m, |&(t0, s0, v)| s0 + v * to_secs_f64(t - t0));
            legs.push((t, s, kmh / 3.6));
        }
        Mobility {
            track: Track::polyline(&cfg.track_xy_m),
            legs,
        }
    }

    /// Distance along the track (m) at time `t`.
    pub fn position_at(&self, t: Time) -> f64 {
        let i = self.legs.partition_point(|l| l.0 <= t).max(1) - 1;
        let (t0, s0, v) = self.legs[i];
        s0 + v * to_secs_f64(t - t0)
    }

    /// Speed (m/s) at time `t`.
    pub fn speed_at(&self, t: Time) -> f64 {
        let i = self.legs.partition_point(|l| l.0 <= t).max(1) - 1;
        self.legs[i].2
    }

    /// The train's map position at time `t`.
    pub fn xy_at(&self, t: Time) -> [f64; 2] {
        self.track.xy(self.position_at(t))
    }

    pub fn track(&self) -> &Track {
        &self.track
    }
}

/// A GPS receiver: an iterator of `(time, measured along-track distance)` fixes.
pub struct GpsSampler<'a> {
    mobility: &'a Mobility,
    rng: Rng,
    period: Time,
    sigma: f64,
    /// Gauss–Markov coefficient per fix (0 = independent errors).
    rho: f64,
    err: Option<f64>,
    next: Time,
    end: Time,
}

impl<'a> GpsSampler<'a> {
    /// Fixes at `0, period, 2·period, ...` while `< duration`; errors from the run's `radio/gps` stream.
    pub fn new(mobility: &'a Mobility, cfg: &GpsConfig, streams: &RngStreams, duration: Time) -> Self {
        let period = from_ms_f64(cfg.period_ms).max(1);
        let rho = if cfg.correlation_s > 0.0 {
            (-(cfg.period_ms / 1000.0) / cfg.correlation_s).exp()
        } else {
            0.0
        };
        let rng = streams.stream("radio/gps");
        GpsSampler {
            mobility,
            rng,
            period,
            sigma: cfg.sigma_m,
            rho,
            err: None,
            next: 0,
            end: duration,
        }
    }

    fn next_error(&mut self) -> f64 {
        let w = super::std_normal(&mut self.rng) * self.sigma;
        let e = match self.err {
            None => w,
            Some(prev) => self.rho * prev + (1.0 - self.rho * self.rho).sqrt() * w,
        };
        self.err = Some(e);
        e
    }
}

impl Iterator for GpsSampler<'_> {
    type Item = (Time, f64);
    fn next(&mut self) -> Option<(Time, f64)> {
        if self.next >= self.end {
            return None;
        }
        let t = self.next;
        self.next += self.period;
        let e = self.next_error();
        Some((t, self.mobility.position_at(t) + e))
    }
}

/// All GPS fixes of a run of length `duration`.
pub fn gps_samples(mobility: &Mobility, cfg: &GpsConfig, streams: &RngStreams, duration: Time) -> Vec<(Time, f64)> {
    GpsSampler::new(mobility, cfg, streams, duration).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::time::NS_PER_S;
    use crate::radio::config::SpeedStep;

    #[test]
    fn constant_speed_covers_300_kmh() {
        let m = Mobility::new(&TrainConfig {
            start_m: 0.0,
            ..Default::default()
        });
        assert!((m.position_at(36 * NS_PER_S) - 3000.0).abs() < 1e-6);
        assert_eq!(m.xy_at(36 * NS_PER_S), [3000.0, 0.0]);
    }

    #[test]
    fn speed_profile_integrates_piecewise() {
        let cfg = TrainConfig {
            start_m: 100.0,
            speed_profile: vec![
                SpeedStep {
                    from_s: 0.0,
                    speed_kmh: 360.0,
                },
                SpeedStep {
                    from_s: 10.0,
                    speed_kmh: 0.0,
                },
                SpeedStep {
                    from_s: 20.0,
                    speed_kmh: 36.0,
                },
            ],
            ..Default::default()
        };
        let m = Mobility::new(&cfg);
        assert!((m.position_at(5 * NS_PER_S) - 600.0).abs() < 1e-9);
        assert!((m.position_at(15 * NS_PER_S) - 1100.0).abs() < 1e-9);
        assert!((m.position_at(30 * NS_PER_S) - 1200.0).abs() < 1e-9);
    }

    #[test]
    fn polyline_turns_and_extrapolates() {
        let t = Track::polyline(&[[0.0, 0.0], [100.0, 0.0], [100.0, 50.0]]);
        let p = t.xy(120.0);
        assert!((p[0] - 100.0).abs() < 1e-9 && (p[1] - 20.0).abs() < 1e-9);
        let q = t.xy(200.0); // 50 m past the end, straight on
        assert!((q[0] - 100.0).abs() < 1e-9 && (q[1] - 100.0).abs() < 1e-9);
        let left = t.offset_xy(50.0, 10.0); // heading +x: left is +y
        assert!((left[0] - 50.0).abs() < 1e-9 && (left[1] - 10.0).abs() < 1e-9);
    }

    fn error_stats(cfg: &GpsConfig, seed: u64) -> (f64, f64, usize) {
        let m = Mobility::new(&TrainConfig::default());
        let fixes = gps_samples(&m, cfg, &RngStreams::new(seed), 100 * NS_PER_S);
        let errs: Vec<f64> = fixes.iter().map(|&(t, s)| s - m.position_at(t)).collect();
        let n = errs.len() as f64;
        let mean = errs.iter().sum::<f64>() / n;
        let sd = (errs.iter().map(|e| (e - mean).powi(2)).sum::<f64>() / (n - 1.0)).sqrt();
        (mean, sd, errs.len())
    }

    #[test]
    fn gps_error_matches_sigma() {
        let cfg = GpsConfig::default();
        let (mean, sd, n) = error_stats(&cfg, 3);
        assert_eq!(n, 10_000); // every 10 ms for 100 s
                               // With 10 000 independent fixes, sd's standard error is 5/sqrt(2e4) = 0.035 m.
        assert!(mean.abs() < 0.2, "mean {mean}");
        assert!((sd - 5.0).abs() < 0.15, "sd {sd}");
        let (_, sd20, _) = error_stats(
            &GpsConfig {
                sigma_m: 20.0,
                ..cfg.clone()
            },
            4,
        );
        assert!((sd20 - 20.0).abs() < 0.6, "sd {sd20}");
    }

    #[test]
    fn correlated_gps_error_keeps_sigma_and_is_reproducible() {
        let cfg = GpsConfig {
            correlation_s: 0.5,
            ..Default::default()
        };
        let m = Mobility::new(&TrainConfig::default());
        let a = gps_samples(&m, &cfg, &RngStreams::new(9), 2 * NS_PER_S);
        let b = gps_samples(&m, &cfg, &RngStreams::new(9), 2 * NS_PER_S);
        assert_eq!(a, b);
        let e: Vec<f64> = a.iter().map(|&(t, s)| s - m.position_at(t)).collect();
        // Neighbouring fixes 10 ms apart with a 0.5 s correlation time differ by far less than sigma.
        let step = e.windows(2).map(|w| (w[1] - w[0]).abs()).fold(0.0, f64::max);
        assert!(step < 5.0, "largest step {step}");
    }
}
