//! The line's track, a `lat,lon` CSV polyline (WGS84 decimal degrees, header `lat,lon`), and the
//! projection of a GPS fix onto it: metres along the track and the cross-track distance. Same
//! format as the simulator's `GeoTrack` (crates/sim/src/hst/gps.rs) and the same arithmetic, from
//! the crate both use (crates/hst: a local equirectangular projection per segment on a sphere of
//! radius 6 371 008.8 m); the reader is checked against the simulator's in `tests/phad_vs_sim.rs`.
pub use mobipath_hst::track::EARTH_RADIUS_M;

/// The projection itself is `mobipath_hst::track::Track`, the simulator's arithmetic (shared
/// crate, crates/hst); this adds the router's CSV reader and error strings.
#[derive(Clone, Debug)]
pub struct Track(mobipath_hst::track::Track);

impl Track {
    pub fn new(pts: Vec<(f64, f64)>) -> Track {
        Track(mobipath_hst::track::Track::new(pts))
    }

    /// Parses the CSV; errors `FILE: line N: FIELD = VALUE: why`.
    pub fn parse(text: &str, file: &str) -> Result<Track, Vec<String>> {
        let mut pts: Vec<(f64, f64)> = Vec::new();
        let mut errs = super::twocol::walk(
            text,
            file,
            "track",
            "lat,lon",
            " (decimal degrees, WGS84)",
            |r, errs| {
                let [lat_s, lon_s] = r.cols;
                let lat = lat_s.parse::<f64>().ok().filter(|v| v.is_finite() && v.abs() <= 90.0);
                let lon = lon_s.parse::<f64>().ok().filter(|v| v.is_finite() && v.abs() <= 180.0);
                if lat.is_none() {
                    errs.push(r.err("lat", lat_s, "must be a number in [-90, 90]"));
                }
                if lon.is_none() {
                    errs.push(r.err("lon", lon_s, "must be a number in [-180, 180]"));
                }
                if let (Some(a), Some(b)) = (lat, lon) {
                    if pts.last() == Some(&(a, b)) {
                        errs.push(r.err("lat,lon", r.line, "repeats the previous point (zero-length segment)"));
                    } else {
                        pts.push((a, b));
                    }
                }
            },
        );
        // A header error stands alone; otherwise a track needs two points.
        if errs.is_empty() && pts.len() < 2 {
            errs.push(format!("{file}: a track needs at least 2 points, found {}", pts.len()));
        }
        if errs.is_empty() {
            Ok(Track::new(pts))
        } else {
            Err(errs)
        }
    }
}

/// `length_m`, `project` and `point_at` are the shared track's.
impl std::ops::Deref for Track {
    type Target = mobipath_hst::track::Track;
    fn deref(&self) -> &Self::Target {
        &self.0
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
