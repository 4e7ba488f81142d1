//! A track polyline in latitude/longitude (WGS84 decimal degrees) with cumulative lengths, and
//! the projection of a position onto it: a local equirectangular projection per segment, on a
//! sphere of radius [`EARTH_RADIUS_M`] (the IUGG mean radius). Over a segment of a few hundred
//! metres the error against the ellipsoid is far below GPS noise.

/// Mean Earth radius in metres (IUGG).
pub const EARTH_RADIUS_M: f64 = 6_371_008.8;

#[derive(Clone, Debug)]
pub struct Track {
    pts: Vec<(f64, f64)>,
    cum: Vec<f64>,
}

/// Local metres of `(lat, lon)` relative to `origin`, with `coslat` of the segment's middle.
fn local_xy(origin: (f64, f64), p: (f64, f64), coslat: f64) -> (f64, f64) {
    let k = EARTH_RADIUS_M * std::f64::consts::PI / 180.0;
    ((p.1 - origin.1) * k * coslat, (p.0 - origin.0) * k)
}

impl Track {
    /// A track through `pts`, (lat, lon) each; the caller has validated them (in range, no
    /// point repeated, at least two).
    pub fn new(pts: Vec<(f64, f64)>) -> Self {
        let mut cum = vec![0.0];
        for w in pts.windows(2) {
            let c = ((w[0].0 + w[1].0) / 2.0).to_radians().cos();
            let (x, y) = local_xy(w[0], w[1], c);
            cum.push(cum.last().unwrap() + x.hypot(y));
        }
        Track { pts, cum }
    }

    pub fn length_m(&self) -> f64 {
        *self.cum.last().unwrap_or(&0.0)
    }

    /// Distance along the track of the closest point to `(lat, lon)`, and the distance from it
    /// (cross-track), both in metres. Ends are clamped (positions before the first point are 0).
    pub fn project(&self, lat: f64, lon: f64) -> (f64, f64) {
        let mut best = (0.0, f64::INFINITY);
        for i in 0..self.pts.len().saturating_sub(1) {
            let (a, b) = (self.pts[i], self.pts[i + 1]);
            let c = ((a.0 + b.0) / 2.0).to_radians().cos();
            let (bx, by) = local_xy(a, b, c);
            let (px, py) = local_xy(a, (lat, lon), c);
            let l2 = bx * bx + by * by;
            let t = if l2 > 0.0 {
                ((px * bx + py * by) / l2).clamp(0.0, 1.0)
            } else {
                0.0
            };
            let d = (px - t * bx).hypot(py - t * by);
            if d < best.1 {
                best = (self.cum[i] + t * (self.cum[i + 1] - self.cum[i]), d);
            }
        }
        best
    }

    /// The point at distance `s` along the track (clamped to its ends).
    pub fn point_at(&self, s: f64) -> (f64, f64) {
        let i = self.cum.partition_point(|&c| c <= s).clamp(1, self.pts.len() - 1) - 1;
        let seg = self.cum[i + 1] - self.cum[i];
        let t = if seg > 0.0 {
            ((s - self.cum[i]) / seg).clamp(0.0, 1.0)
        } else {
            0.0
        };
        let (a, b) = (self.pts[i], self.pts[i + 1]);
        (a.0 + t * (b.0 - a.0), a.1 + t * (b.1 - a.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projection_along_and_across() {
        // 0.1° of longitude at 37° N: 8 880 m.
        let t = Track::new(vec![(37.0, 127.0), (37.0, 127.1)]);
        assert!((t.length_m() - 8880.0).abs() < 20.0, "{}", t.length_m());
        let (s, d) = t.project(37.0, 127.05);
        assert!((s - t.length_m() / 2.0).abs() < 1.0 && d < 1.0);
        // 0.01° of latitude off the track: 1 112 m across.
        let (_, off) = t.project(37.01, 127.05);
        assert!((off - 1112.0).abs() < 5.0, "{off}");
        // Before the start and past the end: clamped.
        assert_eq!(t.project(37.0, 126.9).0, 0.0);
        assert_eq!(t.project(37.0, 127.3).0, t.length_m());
    }

    #[test]
    fn a_segment_is_measured_at_its_middle_latitude() {
        // One degree north and one east from 60° N: east-west metres scale with cos(60.5°).
        let t = Track::new(vec![(60.0, 0.0), (61.0, 1.0)]);
        let k = EARTH_RADIUS_M * std::f64::consts::PI / 180.0;
        let want = k * (60.5f64.to_radians().cos().powi(2) + 1.0).sqrt();
        assert!((t.length_m() - want).abs() < 1e-6, "{} vs {want}", t.length_m());
        // Half a degree north of the start lies 0.5·k/√(cos²+1) along the segment.
        let c2 = 60.5f64.to_radians().cos().powi(2);
        let (s, _) = t.project(60.5, 0.0);
        assert!((s - 0.5 * k / (c2 + 1.0).sqrt()).abs() < 1e-6, "{s}");
    }

    #[test]
    fn point_at_inverts_project() {
        let t = Track::new(vec![(37.0, 127.0), (37.05, 127.08), (37.06, 127.2)]);
        for s in [0.0, 10.0, 1000.0, 9000.0, t.length_m()] {
            let (lat, lon) = t.point_at(s);
            assert!((t.project(lat, lon).0 - s).abs() < 0.01, "{s}");
        }
        assert_eq!(t.point_at(-5.0), (37.0, 127.0));
        assert_eq!(t.point_at(1e9), (37.06, 127.2));
    }
}
