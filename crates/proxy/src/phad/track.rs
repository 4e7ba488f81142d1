//! The line's track, a `lat,lon` CSV polyline (WGS84 decimal degrees, header `lat,lon`), and the
//! projection of a GPS fix onto it: metres along the track and the cross-track distance. Same
//! format and arithmetic as the simulator's `GeoTrack` (crates/sim/src/hst/gps.rs: a local
//! equirectangular projection per segment on a sphere of radius 6 371 008.8 m), checked against
//! it in `tests/phad_vs_sim.rs`.
pub const EARTH_RADIUS_M: f64 = 6_371_008.8;

#[derive(Clone, Debug)]
pub struct Track {
    pts: Vec<(f64, f64)>,
    cum: Vec<f64>,
}

fn local_xy(origin: (f64, f64), p: (f64, f64), coslat: f64) -> (f64, f64) {
    let k = EARTH_RADIUS_M * std::f64::consts::PI / 180.0;
    ((p.1 - origin.1) * k * coslat, (p.0 - origin.0) * k)
}

impl Track {
    pub fn new(pts: Vec<(f64, f64)>) -> Track {
        let mut cum = vec![0.0];
        for w in pts.windows(2) {
            let c = ((w[0].0 + w[1].0) / 2.0).to_radians().cos();
            let (x, y) = local_xy(w[0], w[1], c);
            cum.push(cum.last().unwrap() + x.hypot(y));
        }
        Track { pts, cum }
    }

    /// Parses the CSV; errors `FILE: line N: FIELD = VALUE: why`.
    pub fn parse(text: &str, file: &str) -> Result<Track, Vec<String>> {
        let mut errs = Vec::new();
        let mut pts: Vec<(f64, f64)> = Vec::new();
        let mut header = false;
        for (i, l) in text.lines().enumerate() {
            let line = l.trim();
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            let at = |field: &str, v: &str, why: &str| format!("{file}: line {}: {field} = {v}: {why}", i + 1);
            if !header {
                if line.replace(' ', "") != "lat,lon" {
                    return Err(vec![at("header", line, "expected `lat,lon` (decimal degrees, WGS84)")]);
                }
                header = true;
                continue;
            }
            let c: Vec<&str> = line.split(',').map(str::trim).collect();
            if c.len() != 2 {
                errs.push(at("columns", line, &format!("expected 2 values (lat,lon), found {}", c.len())));
                continue;
            }
            let lat = c[0].parse::<f64>().ok().filter(|v| v.is_finite() && v.abs() <= 90.0);
            let lon = c[1].parse::<f64>().ok().filter(|v| v.is_finite() && v.abs() <= 180.0);
            if lat.is_none() {
                errs.push(at("lat", c[0], "must be a number in [-90, 90]"));
            }
            if lon.is_none() {
                errs.push(at("lon", c[1], "must be a number in [-180, 180]"));
            }
            if let (Some(a), Some(b)) = (lat, lon) {
                if pts.last() == Some(&(a, b)) {
                    errs.push(at("lat,lon", line, "repeats the previous point (zero-length segment)"));
                } else {
                    pts.push((a, b));
                }
            }
        }
        if !header {
            errs.push(format!("{file}: empty track: expected the header `lat,lon`"));
        } else if errs.is_empty() && pts.len() < 2 {
            errs.push(format!("{file}: a track needs at least 2 points, found {}", pts.len()));
        }
        if errs.is_empty() {
            Ok(Track::new(pts))
        } else {
            Err(errs)
        }
    }

    pub fn length_m(&self) -> f64 {
        *self.cum.last().unwrap_or(&0.0)
    }

    /// (metres along the track of the closest point, cross-track distance in metres).
    pub fn project(&self, lat: f64, lon: f64) -> (f64, f64) {
        let mut best = (0.0, f64::INFINITY);
        for i in 0..self.pts.len().saturating_sub(1) {
            let (a, b) = (self.pts[i], self.pts[i + 1]);
            let c = ((a.0 + b.0) / 2.0).to_radians().cos();
            let (bx, by) = local_xy(a, b, c);
            let (px, py) = local_xy(a, (lat, lon), c);
            let l2 = bx * bx + by * by;
            let t = if l2 > 0.0 { ((px * bx + py * by) / l2).clamp(0.0, 1.0) } else { 0.0 };
            let d = (px - t * bx).hypot(py - t * by);
            if d < best.1 {
                best = (self.cum[i] + t * (self.cum[i + 1] - self.cum[i]), d);
            }
        }
        best
    }

    /// The point `s` metres along the track (clamped), for tests and replay.
    pub fn point_at(&self, s: f64) -> (f64, f64) {
        let i = self.cum.partition_point(|&c| c <= s).clamp(1, self.pts.len() - 1) - 1;
        let seg = self.cum[i + 1] - self.cum[i];
        let t = if seg > 0.0 { ((s - self.cum[i]) / seg).clamp(0.0, 1.0) } else { 0.0 };
        let (a, b) = (self.pts[i], self.pts[i + 1]);
        (a.0 + t * (b.0 - a.0), a.1 + t * (b.1 - a.1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn projection_and_errors() {
        let t = Track::parse("lat,lon\n37.0,127.0\n37.0,127.1\n", "trk.csv").unwrap();
        assert!((t.length_m() - 8880.0).abs() < 20.0, "{}", t.length_m());
        let (s, d) = t.project(37.0, 127.05);
        assert!((s - t.length_m() / 2.0).abs() < 1.0 && d < 1.0);
        let (_, off) = t.project(37.01, 127.05);
        assert!((off - 1112.0).abs() < 5.0, "{off}");
        let (lat, lon) = t.point_at(1000.0);
        assert!((t.project(lat, lon).0 - 1000.0).abs() < 0.01);
        for (text, want) in [
            ("", "trk.csv: empty track"),
            ("x,y\n", "trk.csv: line 1: header"),
            ("lat,lon\n91,0\n0,0\n", "trk.csv: line 2: lat = 91"),
            ("lat,lon\n1,2\n1,2\n", "trk.csv: line 3: lat,lon"),
            ("lat,lon\n1,2\n", "trk.csv: a track needs at least 2 points"),
        ] {
            let e = Track::parse(text, "trk.csv").expect_err(text);
            assert!(e.iter().any(|e| e.starts_with(want)), "{text:?}: {e:?}");
        }
    }
}
