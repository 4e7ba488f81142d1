//! Recorded GPS input (P0): what a real train run gives — NMEA 0183 logs (as written by
//! a receiver or by `gpspipe -r` from gpsd), a track polyline in WGS84 latitude/longitude, and a
//! log of handover times — turned into positions along the track, so handover tables can be
//! learned from recorded runs and a scenario can replay a recorded GPS trace.
//!
//! Formats (also in `hst/README.md`):
//! - **NMEA 0183**: one sentence per line, `$<talker><type>,...*hh`. The checksum (XOR of the
//!   bytes between `$` and `*`, two hex digits) is required and verified. `GGA` (fix quality 0 =
//!   no fix, skipped) and `RMC` (status `V` = void, skipped) give fixes, from any talker (`GP`,
//!   `GN`, `GL`, `GA`, `BD`, ...); other sentence types (GSV, GSA, VTG, proprietary `$P...`) are
//!   ignored; blank lines and lines starting with `#` too. Times are UTC: `RMC` dates give
//!   absolute times (seconds since 1970-01-01); until the first date, and for logs without `RMC`,
//!   the day is counted from midnight rollovers (a time-of-day earlier than the previous one by
//!   more than 12 h starts a new day). Fixes must not go back in time; a `GGA` and an `RMC` of
//!   the same instant give one fix. Source: NMEA 0183 v4.10 sentence layouts as documented by
//!   gpsd (`www.catb.org/gpsd/NMEA.html`).
//! - **Track**: CSV `lat,lon` (decimal degrees, WGS84), at least two points in running order,
//!   no two consecutive points equal. Distances use a local equirectangular projection per
//!   segment on a sphere of radius 6 371 008.8 m (IUGG mean radius): along a segment of a few km
//!   the error against the ellipsoid is below 0.5 % (the flattening), far below GPS error at the
//!   scale of a handover range; deviation from a geodesic computation, chosen for simplicity.
//! - **Handover log**: CSV `operator,start,end`, times in UTC as Unix seconds (`1714566896.25`)
//!   or ISO 8601 (`2024-05-01T12:34:56.25Z`; no zone = UTC; `+00:00` accepted, other offsets
//!   rejected). `end >= start`.
//! - **Position trace** (for a scenario's `[hst.gps_trace]`): CSV `time_s,position_m`, time from
//!   the run's start, non-decreasing; metres along the track.
//!
//! Every malformed line is reported with the file, line number, field and value.
use super::table::{HandoverTable, ObservedHandover};
use crate::error::ConfigError;
// The field rules and the track's arithmetic are shared with the router (crates/hst).
use mobipath_hst::nmea::{checksum, days_in_month, parse_body, Fault};
pub use mobipath_hst::nmea::{civil_from_days, days_from_civil};
pub use mobipath_hst::track::EARTH_RADIUS_M;

/// One GPS fix from an NMEA log.
#[derive(Clone, Debug, PartialEq)]
pub struct GeoFix {
    /// UTC seconds (since 1970-01-01 when a date is known, else from day 0 of the log).
    pub time_s: f64,
    pub lat: f64,
    pub lon: f64,
    /// 1-based line of the sentence.
    pub line: usize,
}

fn err(file: &str, line: usize, field: &str, value: impl ToString, msg: impl Into<String>) -> ConfigError {
    ConfigError::new(format!("{file}: line {line}: {field}"), value, msg)
}

/// Walks the data rows of a small CSV whose first non-blank, non-`#` line must be `header`
/// (spaces ignored): `row(line_no, line, columns, errs)` sees every row with the header's column
/// count (rows with another count are reported here) and returns false to stop early. Returns
/// whether a header was seen; a wrong header is the only error, naming `header_hint`.
fn csv_rows<'a>(
    text: &'a str,
    file: &str,
    header: &str,
    header_hint: &str,
    errs: &mut Vec<ConfigError>,
    mut row: impl FnMut(usize, &'a str, &[&'a str], &mut Vec<ConfigError>) -> bool,
) -> Result<bool, Vec<ConfigError>> {
    let n = header.split(',').count();
    let mut seen = false;
    for (i, l) in text.lines().enumerate() {
        let line = l.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !seen {
            if line.replace(' ', "") != header {
                return Err(vec![err(file, i + 1, "header", line, header_hint)]);
            }
            seen = true;
            continue;
        }
        let c: Vec<&str> = line.split(',').map(str::trim).collect();
        if c.len() != n {
            errs.push(err(
                file,
                i + 1,
                "columns",
                line,
                format!("expected {n} values ({header}), found {}", c.len()),
            ));
            continue;
        }
        if !row(i + 1, line, &c, errs) {
            break;
        }
    }
    Ok(seen)
}

/// One sentence's fix: (seconds of day, optional days since epoch, lat, lon); `Ok(None)` for a
/// valid sentence that carries no fix.
type SentenceFix = Option<(f64, Option<i64>, f64, f64)>;

/// One sentence (starting with `$`, ASCII): the rules are `mobipath_hst::nmea::parse_body`, the
/// router's too; this words its faults as errors naming the line, the field and the value.
fn parse_sentence(line: &str, file: &str, n: usize) -> Result<SentenceFix, ConfigError> {
    let fix = parse_body(&line[1..]).map_err(|fault| match fault {
        Fault::ChecksumMissing => err(file, n, "checksum", line, "missing `*hh` checksum (required)"),
        Fault::ChecksumFormat(cks) => err(file, n, "checksum", cks, "must be two hex digits after `*`"),
        Fault::ChecksumMismatch { given, computed } => err(
            file,
            n,
            "checksum",
            given,
            format!("mismatch: the sentence's bytes give {computed:02X}"),
        ),
        Fault::TooFewFields { kind, fields, needs } => {
            err(file, n, kind, fields, format!("{kind} needs at least {needs} fields"))
        }
        Fault::FixQuality(v) => err(file, n, "fix quality", v, "must be an integer 0-8"),
        Fault::Latitude(v, e) => err(file, n, "latitude", v, e.message()),
        Fault::Longitude(v, e) => err(file, n, "longitude", v, e.message()),
        Fault::Time(v) => err(file, n, "time", v, "expected hhmmss[.sss] (UTC)"),
        Fault::Status(v) => err(file, n, "status", v, "must be A (valid) or V (void)"),
        Fault::Date(v) => err(file, n, "date", v, "expected ddmmyy"),
    })?;
    Ok(fix.map(|f| (f.tod_s, f.days, f.lat, f.lon)))
}

/// Parses an NMEA 0183 log into fixes (see the module docs); every bad line is reported.
pub fn parse_nmea(text: &str, file: &str) -> Result<Vec<GeoFix>, Vec<ConfigError>> {
    let mut errs = Vec::new();
    // (seconds of day, date if the sentence had one, lat, lon, line)
    let mut raw: Vec<(f64, Option<i64>, f64, f64, usize)> = Vec::new();
    for (i, l) in text.lines().enumerate() {
        let line = l.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        if !line.starts_with('$') || !line.is_ascii() {
            errs.push(err(
                file,
                i + 1,
                "sentence",
                line.chars().take(40).collect::<String>(),
                "not an NMEA 0183 sentence (ASCII, starting with `$`)",
            ));
            continue;
        }
        match parse_sentence(line, file, i + 1) {
            Ok(Some((sod, date, lat, lon))) => raw.push((sod, date, lat, lon, i + 1)),
            Ok(None) => {}
            Err(e) => errs.push(e),
        }
        if errs.len() >= 20 {
            errs.push(ConfigError::new(file, "", "too many errors; stopped after 20"));
            return Err(errs);
        }
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    // Days: count midnight rollovers; anchor them to the first RMC date when there is one.
    let mut day = 0i64;
    let mut days = Vec::with_capacity(raw.len());
    let mut anchor: Option<i64> = None;
    for (k, r) in raw.iter().enumerate() {
        if k > 0 && r.0 < raw[k - 1].0 - 43_200.0 {
            day += 1;
        }
        if let (None, Some(d)) = (anchor, r.1) {
            anchor = Some(d - day);
        }
        days.push(day);
    }
    let base = anchor.unwrap_or(0);
    let mut out: Vec<GeoFix> = Vec::with_capacity(raw.len());
    for (r, d) in raw.iter().zip(days) {
        let t = (base + d) as f64 * 86_400.0 + r.0;
        if let Some(prev) = out.last() {
            if t == prev.time_s {
                continue; // GGA + RMC of the same instant
            }
            if t < prev.time_s {
                errs.push(err(
                    file,
                    r.4,
                    "time",
                    format!("{:.3}", r.0),
                    format!("goes back in time (previous fix at line {})", prev.line),
                ));
                continue;
            }
        }
        out.push(GeoFix {
            time_s: t,
            lat: r.2,
            lon: r.3,
            line: r.4,
        });
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    if out.is_empty() {
        return Err(vec![ConfigError::new(
            file,
            "",
            "no GGA or RMC sentence with a valid fix",
        )]);
    }
    Ok(out)
}

/// A track polyline in latitude/longitude with cumulative lengths (the arithmetic is
/// [`mobipath_hst::track::Track`], shared with the router).
#[derive(Clone, Debug)]
pub struct GeoTrack(mobipath_hst::track::Track);

impl GeoTrack {
    /// A track from its points (validated).
    pub fn new(pts: Vec<(f64, f64)>) -> Self {
        GeoTrack(mobipath_hst::track::Track::new(pts))
    }

    /// Parses the `lat,lon` CSV (header required; errors per line).
    pub fn from_csv(text: &str, file: &str) -> Result<GeoTrack, Vec<ConfigError>> {
        let mut errs = Vec::new();
        let mut pts: Vec<(f64, f64)> = Vec::new();
        let header = csv_rows(
            text,
            file,
            "lat,lon",
            "expected `lat,lon` (decimal degrees, WGS84)",
            &mut errs,
            |n, line, c, errs| {
                let lat = c[0].parse::<f64>().ok().filter(|v| v.is_finite() && v.abs() <= 90.0);
                let lon = c[1].parse::<f64>().ok().filter(|v| v.is_finite() && v.abs() <= 180.0);
                if lat.is_none() {
                    errs.push(err(file, n, "lat", c[0], "must be a number in [-90, 90]"));
                }
                if lon.is_none() {
                    errs.push(err(file, n, "lon", c[1], "must be a number in [-180, 180]"));
                }
                if let (Some(a), Some(b)) = (lat, lon) {
                    if pts.last() == Some(&(a, b)) {
                        errs.push(err(
                            file,
                            n,
                            "lat,lon",
                            line,
                            "repeats the previous point (zero-length segment)",
                        ));
                    } else {
                        pts.push((a, b));
                    }
                }
                true
            },
        )?;
        if !header {
            errs.push(ConfigError::new(file, "", "empty track: expected the header `lat,lon`"));
        } else if errs.is_empty() && pts.len() < 2 {
            errs.push(ConfigError::new(file, pts.len(), "a track needs at least 2 points"));
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        Ok(GeoTrack::new(pts))
    }
}

/// `length_m`, `project` and `point_at` are the shared track's.
impl std::ops::Deref for GeoTrack {
    type Target = mobipath_hst::track::Track;
    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

/// Fixes projected onto the track: `(time_s, metres along)`; fixes farther than `max_offset_m`
/// from the track are dropped (returned as a count: tunnels, stations, multipath).
pub fn positions_along(fixes: &[GeoFix], track: &GeoTrack, max_offset_m: f64) -> (Vec<(f64, f64)>, usize) {
    let mut out = Vec::with_capacity(fixes.len());
    let mut dropped = 0;
    for f in fixes {
        let (s, d) = track.project(f.lat, f.lon);
        if d <= max_offset_m {
            out.push((f.time_s, s));
        } else {
            dropped += 1;
        }
    }
    (out, dropped)
}

/// Position at `t` by linear interpolation between the fixes around it, if both are within
/// `max_gap_s` of `t` (no extrapolation).
pub fn position_at(track: &[(f64, f64)], t: f64, max_gap_s: f64) -> Option<f64> {
    let i = track.partition_point(|&(ts, _)| ts <= t);
    if i > 0 && track[i - 1].0 == t {
        return Some(track[i - 1].1);
    }
    let (a, b) = (track.get(i.checked_sub(1)?)?, track.get(i)?);
    if t - a.0 > max_gap_s || b.0 - t > max_gap_s {
        return None;
    }
    let w = (t - a.0) / (b.0 - a.0);
    Some(a.1 + w * (b.1 - a.1))
}

/// A UTC time: Unix seconds or ISO 8601 `YYYY-MM-DDTHH:MM:SS[.fff][Z|+00:00]`.
pub fn parse_utc(s: &str) -> Option<f64> {
    if let Ok(v) = s.parse::<f64>() {
        return v.is_finite().then_some(v);
    }
    let s = s.strip_suffix('Z').or_else(|| s.strip_suffix("+00:00")).unwrap_or(s);
    let (date, time) = s.split_once(['T', ' '])?;
    let d: Vec<&str> = date.split('-').collect();
    let t: Vec<&str> = time.split(':').collect();
    if d.len() != 3
        || t.len() != 3
        || d[0].len() != 4
        || d[1].len() != 2
        || d[2].len() != 2
        || t[0].len() != 2
        || t[1].len() != 2
    {
        return None;
    }
    let (y, mo, da): (i64, u32, u32) = (d[0].parse().ok()?, d[1].parse().ok()?, d[2].parse().ok()?);
    let (h, mi): (u32, u32) = (t[0].parse().ok()?, t[1].parse().ok()?);
    let sec: f64 = t[2]
        .parse()
        .ok()
        .filter(|_| t[2].len() >= 2 && t[2].as_bytes()[..2].iter().all(u8::is_ascii_digit))?;
    if !(1..=12).contains(&mo)
        || da < 1
        || da > days_in_month(y, mo)
        || h > 23
        || mi > 59
        || !(0.0..61.0).contains(&sec)
    {
        return None;
    }
    Some(days_from_civil(y, mo, da) as f64 * 86_400.0 + h as f64 * 3600.0 + mi as f64 * 60.0 + sec)
}

/// One handover from a recorded run's log.
#[derive(Clone, Debug, PartialEq)]
pub struct LoggedHandover {
    pub operator: String,
    pub start_s: f64,
    pub end_s: f64,
    pub line: usize,
}

/// Parses the `operator,start,end` handover log.
pub fn parse_handover_log(text: &str, file: &str) -> Result<Vec<LoggedHandover>, Vec<ConfigError>> {
    let mut errs = Vec::new();
    let mut out = Vec::new();
    let header = csv_rows(
        text,
        file,
        "operator,start,end",
        "expected `operator,start,end`",
        &mut errs,
        |n, _, c, errs| {
            if c[0].is_empty() {
                errs.push(err(file, n, "operator", c[0], "must not be empty"));
            }
            const TIME: &str = "must be a UTC time: Unix seconds or ISO 8601 (2024-05-01T12:34:56.25Z)";
            let s = parse_utc(c[1]);
            let e = parse_utc(c[2]);
            if s.is_none() {
                errs.push(err(file, n, "start", c[1], TIME));
            }
            if e.is_none() {
                errs.push(err(file, n, "end", c[2], TIME));
            }
            if let (Some(s), Some(e), false) = (s, e, c[0].is_empty()) {
                if e < s {
                    errs.push(err(
                        file,
                        n,
                        "end",
                        c[2],
                        format!("must not be before start ({})", c[1]),
                    ));
                } else {
                    out.push(LoggedHandover {
                        operator: c[0].to_string(),
                        start_s: s,
                        end_s: e,
                        line: n,
                    });
                }
            }
            true
        },
    )?;
    if !header {
        errs.push(ConfigError::new(
            file,
            "",
            "empty log: expected the header `operator,start,end`",
        ));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(out)
}

/// Parses a `time_s,position_m` trace (time from the run's start, strictly increasing; positions
/// on the track, >= 0). The row rules are `mobipath_hst::fixes`, shared with the router's replay
/// source, so both accept the same traces.
pub fn parse_position_trace(text: &str, file: &str) -> Result<Vec<(f64, f64)>, Vec<ConfigError>> {
    use mobipath_hst::fixes;
    let mut errs = Vec::new();
    let mut out: Vec<(f64, f64)> = Vec::new();
    let hint = format!("expected `{}`", fixes::HEADER);
    let header = csv_rows(text, file, fixes::HEADER, &hint, &mut errs, |n, _, c, errs| {
        match fixes::fix(c[0], c[1], out.last().map(|&(t, _)| t)) {
            Ok(f) => out.push(f),
            Err(faults) => {
                for f in faults {
                    let value = if f == fixes::Fault::Position { c[1] } else { c[0] };
                    errs.push(err(file, n, f.field(), value, f.rule()));
                }
            }
        }
        errs.len() < 20
    })?;
    if !header {
        errs.push(ConfigError::new(
            file,
            "",
            "empty trace: expected the header `time_s,position_m`",
        ));
    } else if errs.is_empty() && out.is_empty() {
        errs.push(ConfigError::new(file, "", "no fixes"));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    Ok(out)
}

/// What learning from recorded runs did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RecordedLearnReport {
    pub runs: usize,
    pub fixes: usize,
    /// Fixes farther than `max_offset_m` from the track.
    pub fixes_off_track: usize,
    pub handovers_used: usize,
    /// Handovers whose start or end has no fix within `max_gap_s` on both sides: (file, line).
    pub handovers_skipped: Vec<(String, usize)>,
    /// Rows that repeat an earlier row of the same log (operator, start and end): counted once.
    pub duplicates: Vec<(String, usize)>,
}

/// One recorded run: its NMEA log and its handover log (text and file name of each).
pub struct RecordedRun<'a> {
    pub nmea: &'a str,
    pub nmea_file: &'a str,
    pub handovers: &'a str,
    pub handovers_file: &'a str,
}

/// Learns (accumulates into `table`) from recorded runs: each logged handover's start and end
/// are placed on the track by interpolating the run's projected GPS fixes (only between fixes at
/// most `max_gap_s` away), then widened by `margin_m` and added run by run as in [`HandoverTable::learn`].
pub fn learn_from_recordings(
    track: &GeoTrack,
    runs: &[RecordedRun<'_>],
    margin_m: f64,
    max_offset_m: f64,
    max_gap_s: f64,
    table: &mut HandoverTable,
) -> Result<RecordedLearnReport, Vec<ConfigError>> {
    let mut errs = Vec::new();
    let mut rep = RecordedLearnReport {
        runs: runs.len(),
        ..Default::default()
    };
    let mut observed: Vec<Vec<ObservedHandover>> = Vec::new();
    for r in runs {
        let fixes = parse_nmea(r.nmea, r.nmea_file);
        let log = parse_handover_log(r.handovers, r.handovers_file);
        let (fixes, log) = match (fixes, log) {
            (Ok(f), Ok(l)) => (f, l),
            (f, l) => {
                errs.extend(f.err().unwrap_or_default());
                errs.extend(l.err().unwrap_or_default());
                continue;
            }
        };
        let (pos, off) = positions_along(&fixes, track, max_offset_m);
        rep.fixes += fixes.len();
        rep.fixes_off_track += off;
        if pos.is_empty() {
            errs.push(ConfigError::new(
                r.nmea_file,
                "",
                format!("no fix within {max_offset_m} m of the track (wrong track file?)"),
            ));
            continue;
        }
        let mut run = Vec::new();
        let mut seen = std::collections::HashSet::new();
        for h in &log {
            if !seen.insert((h.operator.clone(), h.start_s.to_bits(), h.end_s.to_bits())) {
                rep.duplicates.push((r.handovers_file.to_string(), h.line));
                continue;
            }
            match (
                position_at(&pos, h.start_s, max_gap_s),
                position_at(&pos, h.end_s, max_gap_s),
            ) {
                (Some(a), Some(b)) => {
                    run.push(ObservedHandover {
                        operator: h.operator.clone(),
                        gps_start_m: a,
                        gps_end_m: b,
                    });
                    rep.handovers_used += 1;
                }
                _ => rep.handovers_skipped.push((r.handovers_file.to_string(), h.line)),
            }
        }
        observed.push(run);
    }
    if errs.is_empty() && rep.handovers_used == 0 {
        // An empty table would pass for a learned one.
        errs.push(ConfigError::new(
            "handover logs",
            "",
            format!(
                "no handover falls within the GPS logs ({} skipped: each needs a fix within {max_gap_s} s of its start and of its end); no table written",
                rep.handovers_skipped.len()
            ),
        ));
    }
    if !errs.is_empty() {
        return Err(errs);
    }
    // One run at a time: the table counts in how many runs each stretch saw a handover.
    for run in &observed {
        table.learn(run, margin_m);
    }
    Ok(rep)
}

/// Writes NMEA sentences (GGA + RMC per fix) — for tests and for turning simulated runs into
/// recorded-looking logs.
pub fn nmea_sentences(time_s: f64, lat: f64, lon: f64) -> String {
    let days = (time_s / 86_400.0).floor();
    let sod = time_s - days * 86_400.0;
    let (h, m, s) = ((sod / 3600.0).floor(), ((sod % 3600.0) / 60.0).floor(), sod % 60.0);
    let hms = format!("{:02}{:02}{:06.3}", h as u32, m as u32, s);
    let dm = |v: f64, w: usize| {
        let a = v.abs();
        let (mut d, mut min) = (a.floor(), ((a - a.floor()) * 60.0 * 1e4).round() / 1e4);
        if min >= 60.0 {
            (d, min) = (d + 1.0, min - 60.0);
        }
        format!("{:0w$}{:07.4}", d as u32, min, w = w)
    };
    let (ns, ew) = (if lat >= 0.0 { 'N' } else { 'S' }, if lon >= 0.0 { 'E' } else { 'W' });
    let (y, mo, d) = civil_from_days(days as i64);
    let date = format!("{:02}{:02}{:02}", d, mo, y.rem_euclid(100));
    let gga = format!(
        "GPGGA,{hms},{},{ns},{},{ew},1,10,0.9,30.0,M,20.0,M,,",
        dm(lat, 2),
        dm(lon, 3)
    );
    let rmc = format!(
        "GPRMC,{hms},A,{},{ns},{},{ew},162.0,90.0,{date},,,A",
        dm(lat, 2),
        dm(lon, 3)
    );
    format!("${gga}*{:02X}\n${rmc}*{:02X}\n", checksum(&gga), checksum(&rmc))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn with_ck(body: &str) -> String {
        format!("${body}*{:02X}", checksum(body))
    }

    #[test]
    fn parses_gga_and_rmc_with_checksums() {
        // gpsd's documentation example sentences.
        let text = "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*47\n\
                    $GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W*6A\n\
                    $GPGSV,2,1,08,01,40,083,46,02,17,308,41,12,07,344,39,14,22,228,45*75\n";
        let f = parse_nmea(text, "a.nmea").unwrap();
        assert_eq!(f.len(), 1, "GGA and RMC of the same instant are one fix: {f:?}");
        let want_t = days_from_civil(1994, 3, 23) as f64 * 86_400.0 + 12.0 * 3600.0 + 35.0 * 60.0 + 19.0;
        assert_eq!(f[0].time_s, want_t);
        assert!((f[0].lat - (48.0 + 7.038 / 60.0)).abs() < 1e-12);
        assert!((f[0].lon - (11.0 + 31.0 / 60.0)).abs() < 1e-12);
        assert_eq!(f[0].line, 1);
    }

    #[test]
    fn southern_western_talkers_void_and_rollover() {
        let text = [
            with_ck("GNGGA,235959.50,3351.000,S,15112.000,W,1,08,0.9,5.0,M,0,M,,"),
            with_ck("GNRMC,235959.90,V,,,,,,,010124,,,N"),
            with_ck("GNGGA,000000.50,3351.001,S,15112.001,W,1,08,0.9,5.0,M,0,M,,"),
            with_ck("GNGGA,000001.50,,,,,0,00,,,M,,M,,"),
        ]
        .join("\n");
        let f = parse_nmea(&text, "b.nmea").unwrap();
        assert_eq!(f.len(), 2);
        assert!(f[0].lat < 0.0 && f[0].lon < 0.0);
        assert!(
            (f[1].time_s - f[0].time_s - 1.0).abs() < 1e-9,
            "midnight rollover: {f:?}"
        );
    }

    #[test]
    fn malformed_sentences_get_line_numbered_errors() {
        let cases = [
            (
                "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*48",
                "a: line 1: checksum = 48: mismatch",
            ),
            (
                "$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
                "a: line 1: checksum",
            ),
            ("GPGGA,1", "a: line 1: sentence"),
            (
                &with_ck("GPGGA,123519,4807.038,X,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"),
                "a: line 1: latitude = 4807.038: hemisphere",
            ),
            (
                &with_ck("GPGGA,126519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"),
                "a: line 1: time = 126519",
            ),
            (
                &with_ck("GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,320394,003.1,W"),
                "a: line 1: date = 320394",
            ),
            (&with_ck("GPRMC,123519,A,4807.038,N"), "a: line 1: RMC"),
            (
                &with_ck("GPGGA,123519,9107.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"),
                "a: line 1: latitude = 9107.038: must be <= 90",
            ),
            // Qualities above 8 were accepted before the router's rules and these became one.
            (
                &with_ck("GPGGA,123519,4807.038,N,01131.000,E,9,08,0.9,545.4,M,46.9,M,,"),
                "a: line 1: fix quality = 9: must be an integer 0-8",
            ),
            ("", "a: no GGA or RMC"),
        ];
        for (text, want) in cases {
            let e = parse_nmea(text, "a").expect_err(text);
            assert!(e.iter().any(|x| x.to_string().starts_with(want)), "{text}: {e:?}");
        }
        let back = [
            with_ck("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"),
            with_ck("GPGGA,123518,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"),
        ]
        .join("\n");
        let e = parse_nmea(&back, "a").unwrap_err();
        assert!(e[0].to_string().starts_with("a: line 2: time"), "{e:?}");
    }

    #[test]
    fn projection_onto_a_latlon_track() {
        // Straight east along the equator-ish at 37.5° N: 1° of longitude = R·π/180·cos(lat).
        let t = GeoTrack::from_csv("lat,lon\n37.5,127.0\n37.5,127.1\n37.6,127.1\n", "t.csv").unwrap();
        let k = EARTH_RADIUS_M * std::f64::consts::PI / 180.0;
        let leg1 = 0.1 * k * 37.5f64.to_radians().cos();
        assert!((t.length_m() - (leg1 + 0.1 * k)).abs() < 1e-6);
        let (s, d) = t.project(37.5 + 50.0 / k, 127.05); // 50 m north of the first leg's middle
        assert!((s - leg1 / 2.0).abs() < 0.5, "{s}");
        assert!((d - 50.0).abs() < 0.5, "{d}");
        let (s, _) = t.project(37.55, 127.1);
        assert!((s - (leg1 + 0.05 * k)).abs() < 0.5);
        let p = t.point_at(1000.0);
        assert!((t.project(p.0, p.1).0 - 1000.0).abs() < 1e-6);
        let e = GeoTrack::from_csv("lat,lon\n95,1\n1,1\n1,1\n", "t.csv").unwrap_err();
        assert!(
            e.iter().any(|x| x.to_string().starts_with("t.csv: line 2: lat = 95")),
            "{e:?}"
        );
        assert!(
            e.iter().any(|x| x.to_string().starts_with("t.csv: line 4: lat,lon")),
            "{e:?}"
        );
        assert!(GeoTrack::from_csv("x,y\n", "t.csv").is_err());
    }

    #[test]
    fn utc_times_and_handover_logs() {
        assert_eq!(parse_utc("1714566896.25"), Some(1714566896.25));
        assert_eq!(parse_utc("2024-05-01T12:34:56.25Z"), Some(1714566896.25));
        assert_eq!(parse_utc("2024-05-01 12:34:56.25+00:00"), Some(1714566896.25));
        assert_eq!(parse_utc("2024-02-30T00:00:00Z"), None);
        assert_eq!(parse_utc("2024-05-01T12:34:56+09:00"), None);
        assert_eq!(civil_from_days(days_from_civil(2024, 2, 29)), (2024, 2, 29));
        let log = parse_handover_log(
            "operator,start,end\nA,2024-05-01T12:34:56Z,2024-05-01T12:34:56.04Z\n",
            "h.csv",
        )
        .unwrap();
        assert!((log[0].end_s - log[0].start_s - 0.04).abs() < 1e-6);
        let e = parse_handover_log("operator,start,end\nA,5,4\n,x,1\nA,1\n", "h.csv").unwrap_err();
        let s: Vec<String> = e.iter().map(|x| x.to_string()).collect();
        assert!(
            s.iter()
                .any(|x| x.starts_with("h.csv: line 2: end = 4: must not be before start")),
            "{s:?}"
        );
        assert!(s.iter().any(|x| x.starts_with("h.csv: line 3: operator")), "{s:?}");
        assert!(s.iter().any(|x| x.starts_with("h.csv: line 3: start = x")), "{s:?}");
        assert!(s.iter().any(|x| x.starts_with("h.csv: line 4: columns")), "{s:?}");
        let e = parse_position_trace("time_s,position_m\n0,10\n-1,x\n0.5,2\n0.2,3\n", "g.csv").unwrap_err();
        let s: Vec<String> = e.iter().map(|x| x.to_string()).collect();
        assert!(s.iter().any(|x| x.starts_with("g.csv: line 3: time_s = -1")), "{s:?}");
        assert!(
            s.iter().any(|x| x.starts_with("g.csv: line 3: position_m = x")),
            "{s:?}"
        );
        assert!(s.iter().any(|x| x.starts_with("g.csv: line 5: time_s = 0.2")), "{s:?}");
    }

    /// A recorded run written as NMEA from known positions: the learned ranges contain the true
    /// handover positions, fixes off the track are dropped, uncovered handovers skipped.
    #[test]
    fn learning_from_a_recorded_run() {
        let track = GeoTrack::from_csv("lat,lon\n37.0,127.0\n37.0,127.3\n37.2,127.4\n", "t.csv").unwrap();
        let t0 = days_from_civil(2024, 5, 1) as f64 * 86_400.0 + 3600.0;
        let mut nmea = String::new();
        for i in 0..600 {
            // 0.1 s fixes at 83.33 m/s starting 100 m down the track.
            let (lat, lon) = track.point_at(100.0 + 8.333 * i as f64);
            nmea.push_str(&nmea_sentences(t0 + 0.1 * i as f64, lat, lon));
        }
        nmea.push_str(&nmea_sentences(t0 + 60.5, 38.0, 127.0)); // far off the track
        let log = format!(
            "operator,start,end\nA,{},{}\nB,{},{}\nA,{},{}\n",
            t0 + 10.0,
            t0 + 10.04,
            t0 + 30.0,
            t0 + 30.04,
            t0 + 90.0,
            t0 + 90.04
        );
        let mut table = HandoverTable::new();
        let runs = [RecordedRun {
            nmea: &nmea,
            nmea_file: "r.nmea",
            handovers: &log,
            handovers_file: "h.csv",
        }];
        let rep = learn_from_recordings(&track, &runs, 15.0, 50.0, 2.0, &mut table).unwrap();
        assert_eq!(rep.fixes_off_track, 1);
        assert_eq!(rep.handovers_used, 2);
        assert_eq!(rep.handovers_skipped, vec![("h.csv".to_string(), 4)]);
        // True position at 10 s: 100 + 83.33 m/s × 10 s (NMEA keeps 4 decimals of minutes ≈ 0.2 m).
        assert!(table.contains("A", 100.0 + 833.3), "{table:?}");
        assert!(table.contains("B", 100.0 + 2499.9));
        let r = &table.operators["A"][0];
        assert!((r.end_m - r.start_m - (30.0 + 3.33)).abs() < 1.0, "{r:?}");

        // A repeated row is counted once, and said so.
        let dup = format!("{log}A,{},{}\n", t0 + 10.0, t0 + 10.04);
        let runs = [RecordedRun {
            handovers: &dup,
            ..runs[0]
        }];
        let mut t2 = HandoverTable::new();
        let rep = learn_from_recordings(&track, &runs, 15.0, 50.0, 2.0, &mut t2).unwrap();
        assert_eq!(rep.handovers_used, 2);
        assert_eq!(rep.duplicates, vec![("h.csv".to_string(), 5)]);
        assert_eq!(t2, table);

        // No handover inside the GPS log: an error, not an empty table.
        let outside = format!("operator,start,end\nA,{},{}\n", t0 + 90.0, t0 + 90.04);
        let runs = [RecordedRun {
            handovers: &outside,
            ..runs[0]
        }];
        let e = learn_from_recordings(&track, &runs, 15.0, 50.0, 2.0, &mut HandoverTable::new()).unwrap_err();
        assert!(
            e[0].to_string().contains("no handover falls within the GPS logs"),
            "{e:?}"
        );
    }
}
