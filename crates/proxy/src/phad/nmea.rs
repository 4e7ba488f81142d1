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

use mobipath_hst::nmea::{days_in_month, parse_hms, CoordError};

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
    NmeaError { kind, detail: detail.into() }
}

/// The longest sentence accepted (NMEA 0183 allows 82 characters; receivers exceed it a little).
pub const MAX_LEN: usize = 256;

/// The field rules are the simulator's, from the crate both use (crates/hst). The router's
/// messages name the refused value first.
fn parse_coord(v: &str, hemi: &str, deg_digits: usize, pos: char, neg: char, max: f64) -> Result<f64, String> {
    mobipath_hst::nmea::parse_coord(v, hemi, deg_digits, pos, neg, max).map_err(|e| match e {
        CoordError::Value(m) => format!("`{v}`: {m}"),
        CoordError::Hemisphere(m) => m,
    })
}

/// Parses one sentence (trailing CR/LF allowed). `Ok(None)`: valid, but no fix in it.
pub fn parse_sentence(line: &str) -> Result<Option<NmeaFix>, NmeaError> {
    let line = line.trim_end_matches(['\r', '\n']);
    if line.len() > MAX_LEN {
        return Err(bad("too-long", format!("{} bytes (at most {MAX_LEN})", line.len())));
    }
    let Some(body) = line.strip_prefix('$') else {
        return Err(bad("not-nmea", format!("`{}`: a sentence starts with `$`", line.chars().take(24).collect::<String>())));
    };
    if !line.is_ascii() {
        return Err(bad("not-ascii", "NMEA 0183 sentences are ASCII"));
    }
    let Some(star) = body.rfind('*') else {
        return Err(bad("checksum-missing", "no `*hh` checksum (required)"));
    };
    let (data, cks) = (&body[..star], body[star + 1..].trim_end());
    let computed = data.bytes().fold(0u8, |a, b| a ^ b);
    match u8::from_str_radix(cks, 16).ok().filter(|_| cks.len() == 2) {
        None => return Err(bad("checksum-format", format!("`{cks}`: two hex digits after `*`"))),
        Some(g) if g != computed => return Err(bad("checksum-mismatch", format!("`{cks}` given, the bytes give {computed:02X}"))),
        _ => {}
    }
    let f: Vec<&str> = data.split(',').collect();
    let tag = f[0];
    if tag.starts_with('P') || tag.len() != 5 || !tag.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()) {
        return Ok(None);
    }
    let kind = &tag[2..];
    let need = |k: usize| if f.len() < k { Err(bad("too-few-fields", format!("{kind}: {} fields, needs {}", f.len() - 1, k - 1))) } else { Ok(()) };
    let coords = |i: usize| -> Result<(f64, f64), NmeaError> {
        let lat = parse_coord(f[i], f[i + 1], 2, 'N', 'S', 90.0).map_err(|m| bad("latitude", m))?;
        let lon = parse_coord(f[i + 2], f[i + 3], 3, 'E', 'W', 180.0).map_err(|m| bad("longitude", m))?;
        Ok((lat, lon))
    };
    let time = |s: &str| parse_hms(s).ok_or_else(|| bad("time", format!("`{s}`: expected hhmmss[.sss] (UTC)")));
    match kind {
        "GGA" => {
            need(7)?;
            if f[6].is_empty() || f[6] == "0" || f[2].is_empty() {
                return Ok(None);
            }
            f[6].parse::<u8>().ok().filter(|&q| q <= 8).ok_or_else(|| bad("fix-quality", format!("`{}`: an integer 0-8", f[6])))?;
            let (lat, lon) = coords(2)?;
            Ok(Some(NmeaFix { tod_s: time(f[1])?, lat, lon }))
        }
        "RMC" => {
            need(10)?;
            match f[2] {
                "A" => {}
                "V" => return Ok(None),
                s => return Err(bad("status", format!("`{s}`: A (valid) or V (void)"))),
            }
            let (lat, lon) = coords(3)?;
            let d = f[9];
            let valid_date = d.len() == 6 && d.bytes().all(|b| b.is_ascii_digit()) && {
                let (dd, mm, yy) = (d[0..2].parse::<u32>().unwrap_or(0), d[2..4].parse::<u32>().unwrap_or(0), d[4..6].parse::<i64>().unwrap_or(0));
                let y = if yy < 80 { 2000 + yy } else { 1900 + yy };
                (1..=12).contains(&mm) && dd >= 1 && dd <= days_in_month(y, mm)
            };
            if !valid_date {
                return Err(bad("date", format!("`{d}`: expected ddmmyy")));
            }
            Ok(Some(NmeaFix { tod_s: time(f[1])?, lat, lon }))
        }
        _ => Ok(None),
    }
}

#[cfg(test)]
pub(crate) fn with_checksum(body: &str) -> String {
    format!("${body}*{:02X}", body.bytes().fold(0u8, |a, b| a ^ b))
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
        for body in ["GPGGA,123519,,,,,0,00,,,M,,M,,", "GPRMC,123519,V,4807.038,N,01131.000,E,0,0,230394,,", "GPGSV,1,1,00", "PGRME,15.0,M,45.0,M,25.0,M"] {
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
        assert_eq!(parse_sentence(&format!("{head}*G1")).unwrap_err().kind, "checksum-format");
        assert_eq!(parse_sentence(&format!("{head}*1")).unwrap_err().kind, "checksum-format");
        assert_eq!(parse_sentence(&good.to_lowercase()).unwrap_err().kind, "checksum-mismatch", "the data's case is part of the sum");
    }

    #[test]
    fn bad_fields_are_named() {
        let cases = [
            ("GPGGA,123519,4807.038,X,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", "latitude"),
            ("GPGGA,123519,9907.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", "latitude"),
            ("GPGGA,123519,4807.038,N,1131.000,E,1,08,0.9,545.4,M,46.9,M,,", "longitude"),
            ("GPGGA,123519,4867.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,", "latitude"),
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
        assert_eq!(parse_sentence(&format!("${}", "A".repeat(300))).unwrap_err().kind, "too-long");
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
                b.push(if x.is_multiple_of(3) { b"$GPRMC,*0123456789.NSEWAV"[(x >> 8) as usize % 25] } else { (x >> 16) as u8 });
            }
            let _ = parse_sentence(&String::from_utf8_lossy(&b));
        }
        for s in ["$GPGGA,12é519,4807.038,N,01131.000,E,1*00", "$é*00", "$GPGGA,ééé519*00", "$*00", "$"] {
            let s2 = format!("{}*{:02X}", &s[..s.rfind('*').unwrap_or(s.len())], s[1..s.rfind('*').unwrap_or(s.len()).max(1)].bytes().fold(0u8, |a, b| a ^ b));
            let _ = parse_sentence(s);
            let _ = parse_sentence(&s2);
        }
    }
}
