//! NMEA 0183 sentences, one at a time, as a live receiver (serial device, file, UDP) sends them:
//! `$<talker><type>,...*hh`. Same rules as the simulator's log reader
//! (crates/sim/src/hst/gps.rs, NMEA 0183 v4.10 layouts as documented by gpsd,
//! www.catb.org/gpsd/NMEA.html), cross-checked in `tests/phad_vs_sim.rs`:
//! - the checksum (XOR of the bytes between `$` and `*`, two hex digits) is required and checked;
//! - `GGA` (fix quality 0 = no fix) and `RMC` (status `V` = void) carry fixes, from any talker;
//!   other sentences (GSV, GSA, VTG, proprietary `$P...`) are valid but carry none.
//!
//! A bad sentence is an [`NmeaError`] whose `kind` names what was wrong (a short stable word the
//! daemon counts per kind) and whose `detail` names the field and value; nothing here panics on
//! any input (`bad_input_never_panics`). A small parser rather than the `nmea` crate: the two
//! sentence types are all PHA-D needs, and it must reject exactly what the simulator rejects.
use std::fmt;

use mobipath_hst::nmea::{parse_body, CoordError, Fault};

/// A position fix from one sentence.
#[derive(Clone, Debug, PartialEq)]
pub struct NmeaFix {
    /// UTC seconds of the day.
    pub tod_s: f64,
    pub lat: f64,
    pub lon: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct NmeaError {
    pub kind: &'static str,
    pub detail: String,
}

impl fmt::Display for NmeaError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}: {}", self.kind, self.detail)
    }
}

fn bad(kind: &'static str, detail: impl Into<String>) -> NmeaError {
    NmeaError {
        kind,
        detail: detail.into(),
    }
}

/// The longest sentence accepted (NMEA 0183 allows 82 characters; receivers exceed it a little).
pub const MAX_LEN: usize = 256;

/// A coordinate's fault, naming the refused value first.
fn coord_detail(v: &str, e: CoordError) -> String {
    match e {
        CoordError::Value(m) => format!("`{v}`: {m}"),
        CoordError::Hemisphere(m) => m,
    }
}

/// Parses one sentence (trailing CR/LF allowed). `Ok(None)`: valid, but no fix in it.
pub fn parse_sentence(line: &str) -> Result<Option<NmeaFix>, NmeaError> {
    let line = line.trim_end_matches(['\r', '\n']);
    if line.len() > MAX_LEN {
        return Err(bad("too-long", format!("{} bytes (at most {MAX_LEN})", line.len())));
    }
    let Some(body) = line.strip_prefix('$') else {
        return Err(bad(
            "not-nmea",
            format!(
                "`{}`: a sentence starts with `$`",
                line.chars().take(24).collect::<String>()
            ),
        ));
    };
    if !line.is_ascii() {
        return Err(bad("not-ascii", "NMEA 0183 sentences are ASCII"));
    }
    // The rules are the simulator's (`mobipath_hst::nmea::parse_body`, the crate both use);
    // this words each fault as a kind the daemon counts and a detail naming the value.
    let fix = parse_body(body).map_err(|fault| match fault {
        Fault::ChecksumMissing => bad("checksum-missing", "no `*hh` checksum (required)"),
        Fault::ChecksumFormat(cks) => bad("checksum-format", format!("`{cks}`: two hex digits after `*`")),
        Fault::ChecksumMismatch { given, computed } => bad(
            "checksum-mismatch",
            format!("`{given}` given, the bytes give {computed:02X}"),
        ),
        Fault::TooFewFields { kind, fields, needs } => {
            bad("too-few-fields", format!("{kind}: {fields} fields, needs {needs}"))
        }
        Fault::FixQuality(v) => bad("fix-quality", format!("`{v}`: an integer 0-8")),
        Fault::Latitude(v, e) => bad("latitude", coord_detail(v, e)),
        Fault::Longitude(v, e) => bad("longitude", coord_detail(v, e)),
        Fault::Time(v) => bad("time", format!("`{v}`: expected hhmmss[.sss] (UTC)")),
        Fault::Status(v) => bad("status", format!("`{v}`: A (valid) or V (void)")),
        Fault::Date(v) => bad("date", format!("`{v}`: expected ddmmyy")),
    })?;
    Ok(fix.map(|f| NmeaFix {
        tod_s: f.tod_s,
        lat: f.lat,
        lon: f.lon,
    }))
}

#[cfg(test)]
pub(crate) fn with_checksum(body: &str) -> String {
    format!("${body}*{:02X}", mobipath_hst::nmea::checksum(body))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gga_and_rmc_fields() {
        let gga = with_checksum("GPGGA,123519.50,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,");
        let f = parse_sentence(&gga).unwrap().unwrap();
        assert!((f.tod_s - (12.0 * 3600.0 + 35.0 * 60.0 + 19.5)).abs() < 1e-9);
        assert!((f.lat - (48.0 + 7.038 / 60.0)).abs() < 1e-12 && (f.lon - (11.0 + 31.0 / 60.0)).abs() < 1e-12);
        let rmc = with_checksum("GNRMC,000001,A,3345.000,S,15112.000,W,80.0,90.0,010524,,,A");
        let f = parse_sentence(&format!("{rmc}\r\n")).unwrap().unwrap();
        assert!(f.lat < -33.7 && f.lon < -151.1 && f.tod_s == 1.0);
        // No fix, void, other sentences, proprietary: valid, nothing in them.
        for body in [
            "GPGGA,123519,,,,,0,00,,,M,,M,,",
            "GPRMC,123519,V,4807.038,N,01131.000,E,0,0,230394,,",
            "GPGSV,1,1,00",
            "PGRME,15.0,M,45.0,M,25.0,M",
        ] {
            assert_eq!(parse_sentence(&with_checksum(body)), Ok(None), "{body}");
        }
    }

    #[test]
    fn checksums_are_required_and_checked() {
        let good = with_checksum("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,");
        let flipped = good.replace("4807.038", "4807.039");
        assert_eq!(parse_sentence(&flipped).unwrap_err().kind, "checksum-mismatch");
        let (head, _) = good.split_once('*').unwrap();
        assert_eq!(parse_sentence(head).unwrap_err().kind, "checksum-missing");
        assert_eq!(
            parse_sentence(&format!("{head}*G1")).unwrap_err().kind,
            "checksum-format"
        );
        assert_eq!(
            parse_sentence(&format!("{head}*1")).unwrap_err().kind,
            "checksum-format"
        );
        assert_eq!(
            parse_sentence(&good.to_lowercase()).unwrap_err().kind,
            "checksum-mismatch",
            "the data's case is part of the sum"
        );
    }

    #[test]
    fn bad_fields_are_named() {
        let cases = [
            (
                "GPGGA,123519,4807.038,X,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
                "latitude",
            ),
            (
                "GPGGA,123519,9907.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
                "latitude",
            ),
            (
                "GPGGA,123519,4807.038,N,1131.000,E,1,08,0.9,545.4,M,46.9,M,,",
                "longitude",
            ),
            (
                "GPGGA,123519,4867.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,",
                "latitude",
            ),
            ("GPGGA,25xx19,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", "time"),
            ("GPGGA,123519,4807.038,N,01131.000,E,9,08", "fix-quality"),
            ("GPGGA,123519,4807.038", "too-few-fields"),
            ("GPRMC,123519,Q,4807.038,N,01131.000,E,0,0,230394,,", "status"),
            ("GPRMC,123519,A,4807.038,N,01131.000,E,0,0,300294,,", "date"),
        ];
        for (body, kind) in cases {
            let e = parse_sentence(&with_checksum(body)).unwrap_err();
            assert_eq!(e.kind, kind, "{body}: {e}");
        }
        assert_eq!(parse_sentence("hello").unwrap_err().kind, "not-nmea");
        assert_eq!(
            parse_sentence(&format!("${}", "A".repeat(300))).unwrap_err().kind,
            "too-long"
        );
    }

    /// Arbitrary bytes (as lossy text), truncations of good sentences and multi-byte characters
    /// give an error or a fix, never a panic.
    #[test]
    fn bad_input_never_panics() {
        let good = with_checksum("GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W");
        for i in 0..good.len() {
            let _ = parse_sentence(&good[..i]);
            let _ = parse_sentence(&good[i..]);
        }
        let mut x: u64 = 0x9e3779b97f4a7c15;
        for _ in 0..20000 {
            let mut b = Vec::new();
            for _ in 0..(x % 90) {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                b.push(if x.is_multiple_of(3) {
                    b"$GPRMC,*0123456789.NSEWAV"[(x >> 8) as usize % 25]
                } else {
                    (x >> 16) as u8
                });
            }
            let _ = parse_sentence(&String::from_utf8_lossy(&b));
        }
        for s in [
            "$GPGGA,12é519,4807.038,N,01131.000,E,1*00",
            "$é*00",
            "$GPGGA,ééé519*00",
            "$*00",
            "$",
        ] {
            let s2 = format!(
                "{}*{:02X}",
                &s[..s.rfind('*').unwrap_or(s.len())],
                s[1..s.rfind('*').unwrap_or(s.len()).max(1)]
                    .bytes()
                    .fold(0u8, |a, b| a ^ b)
            );
            let _ = parse_sentence(s);
            let _ = parse_sentence(&s2);
        }
    }
}
