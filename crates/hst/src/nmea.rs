//! NMEA 0183 sentences (v4.10 layouts as documented by gpsd, www.catb.org/gpsd/NMEA.html): the
//! body of one sentence ([`parse_body`]), its fields, and the civil-date arithmetic they need.
//! The simulator's log reader and the router's live reader both call [`parse_body`], so they
//! accept and reject the same sentences; each words a [`Fault`] its own way (the simulator's
//! `ConfigError` with file and line, the router's error kinds that its daemon counts).
//!
//! Rules: the checksum (XOR of the bytes between `$` and `*`, two hex digits) is required and
//! checked; `GGA` (fix quality 0 = no fix; 1-8 otherwise) and `RMC` (status `V` = void) carry
//! fixes, from any talker; other sentences (GSV, GSA, VTG, proprietary `$P...`) are valid and
//! carry none.

/// A position fix from one sentence.
#[derive(Clone, Debug, PartialEq)]
pub struct Fix {
    /// UTC seconds of the day.
    pub tod_s: f64,
    /// Days since 1970-01-01 (`RMC` carries the date; `GGA` does not).
    pub days: Option<i64>,
    pub lat: f64,
    pub lon: f64,
}

/// What is wrong with a sentence, with the offending text.
#[derive(Clone, Debug, PartialEq)]
pub enum Fault<'a> {
    /// No `*hh` at the end.
    ChecksumMissing,
    /// Not two hex digits after `*`.
    ChecksumFormat(&'a str),
    /// The checksum given and the one the bytes give.
    ChecksumMismatch {
        given: &'a str,
        computed: u8,
    },
    /// A `GGA` or `RMC` (`kind`) with fewer fields than its layout.
    TooFewFields {
        kind: &'a str,
        fields: usize,
        needs: usize,
    },
    /// `GGA` fix quality not an integer 0-8.
    FixQuality(&'a str),
    Latitude(&'a str, CoordError),
    Longitude(&'a str, CoordError),
    /// Not `hhmmss[.sss]`.
    Time(&'a str),
    /// `RMC` status neither `A` nor `V`.
    Status(&'a str),
    /// `RMC` date not a valid `ddmmyy`.
    Date(&'a str),
}

/// The checksum of a sentence's data (between `$` and `*`): the XOR of its bytes, written as
/// two hex digits after `*`.
pub fn checksum(data: &str) -> u8 {
    data.bytes().fold(0u8, |a, b| a ^ b)
}

/// Parses a sentence's body: what follows `$`, up to and including `*hh` (trailing spaces
/// allowed). The caller has checked the `$`, that the line is ASCII, and its length. `Ok(None)`:
/// a valid sentence without a fix.
pub fn parse_body(body: &str) -> Result<Option<Fix>, Fault<'_>> {
    let Some(star) = body.rfind('*') else {
        return Err(Fault::ChecksumMissing);
    };
    let (data, cks) = (&body[..star], body[star + 1..].trim_end());
    let computed = checksum(data);
    match u8::from_str_radix(cks, 16).ok().filter(|_| cks.len() == 2) {
        None => return Err(Fault::ChecksumFormat(cks)),
        Some(g) if g != computed => return Err(Fault::ChecksumMismatch { given: cks, computed }),
        _ => {}
    }
    let f: Vec<&str> = data.split(',').collect();
    let tag = f[0];
    if tag.starts_with('P') || tag.len() != 5 || !tag.bytes().all(|b| b.is_ascii_uppercase() || b.is_ascii_digit()) {
        return Ok(None); // proprietary or unknown address field: not ours
    }
    let kind = &tag[2..];
    let need = |k: usize| {
        if f.len() < k {
            Err(Fault::TooFewFields {
                kind,
                fields: f.len() - 1,
                needs: k - 1,
            })
        } else {
            Ok(())
        }
    };
    let coords = |i: usize| -> Result<(f64, f64), Fault<'_>> {
        let lat = parse_coord(f[i], f[i + 1], 2, 'N', 'S', 90.0).map_err(|e| Fault::Latitude(f[i], e))?;
        let lon = parse_coord(f[i + 2], f[i + 3], 3, 'E', 'W', 180.0).map_err(|e| Fault::Longitude(f[i + 2], e))?;
        Ok((lat, lon))
    };
    let time = |s| parse_hms(s).ok_or(Fault::Time(s));
    match kind {
        "GGA" => {
            need(7)?;
            if f[6].is_empty() || f[6] == "0" || f[2].is_empty() {
                return Ok(None); // no fix
            }
            f[6].parse::<u8>()
                .ok()
                .filter(|&q| q <= 8)
                .ok_or(Fault::FixQuality(f[6]))?;
            let (lat, lon) = coords(2)?;
            Ok(Some(Fix {
                tod_s: time(f[1])?,
                days: None,
                lat,
                lon,
            }))
        }
        "RMC" => {
            need(10)?;
            match f[2] {
                "A" => {}
                "V" => return Ok(None),
                s => return Err(Fault::Status(s)),
            }
            let (lat, lon) = coords(3)?;
            let d = f[9];
            let date = (d.len() == 6 && d.bytes().all(|b| b.is_ascii_digit()))
                .then(|| {
                    (
                        d[0..2].parse::<u32>().unwrap_or(0),
                        d[2..4].parse::<u32>().unwrap_or(0),
                        d[4..6].parse::<i64>().unwrap_or(0),
                    )
                })
                .map(|(dd, mm, yy)| (dd, mm, if yy < 80 { 2000 + yy } else { 1900 + yy }))
                .filter(|&(dd, mm, y)| (1..=12).contains(&mm) && dd >= 1 && dd <= days_in_month(y, mm))
                .ok_or(Fault::Date(d))?;
            Ok(Some(Fix {
                tod_s: time(f[1])?,
                days: Some(days_from_civil(date.2, date.1, date.0)),
                lat,
                lon,
            }))
        }
        _ => Ok(None),
    }
}

/// `hhmmss[.sss]` → seconds of the day; `None` unless hours < 24, minutes < 60 and seconds in
/// [0, 61) (a leap second).
pub fn parse_hms(s: &str) -> Option<f64> {
    if s.len() < 6 || !s.is_char_boundary(6) || !s.as_bytes()[..6].iter().all(u8::is_ascii_digit) {
        return None;
    }
    let (h, m): (u32, u32) = (s[0..2].parse().ok()?, s[2..4].parse().ok()?);
    let sec: f64 = s[4..].parse().ok()?;
    (h < 24 && m < 60 && (0.0..61.0).contains(&sec)).then_some(h as f64 * 3600.0 + m as f64 * 60.0 + sec)
}

/// Why a coordinate field was refused.
#[derive(Clone, Debug, PartialEq)]
pub enum CoordError {
    /// The value itself (format, degrees, minutes, range): the message says what it must be.
    Value(String),
    /// The hemisphere field.
    Hemisphere(String),
}

impl CoordError {
    pub fn message(&self) -> &str {
        match self {
            CoordError::Value(m) | CoordError::Hemisphere(m) => m,
        }
    }
}

/// NMEA `(d)ddmm.mmmm` (`deg_digits` degree digits, then minutes) and its hemisphere field →
/// signed degrees, at most `max` in magnitude; `pos` is the hemisphere of positive values.
pub fn parse_coord(v: &str, hemi: &str, deg_digits: usize, pos: char, neg: char, max: f64) -> Result<f64, CoordError> {
    let value = |m: String| CoordError::Value(m);
    let dot = v.find('.').unwrap_or(v.len());
    if dot != deg_digits + 2
        || !v
            .bytes()
            .enumerate()
            .all(|(i, b)| b.is_ascii_digit() || (i == dot && b == b'.'))
    {
        return Err(value(format!(
            "expected {}mm.mmmm (degrees and minutes)",
            "d".repeat(deg_digits)
        )));
    }
    let deg: f64 = v[..deg_digits].parse().map_err(|_| value("bad degrees".into()))?;
    let min: f64 = v[deg_digits..].parse().map_err(|_| value("bad minutes".into()))?;
    if min >= 60.0 {
        return Err(value("minutes must be < 60".into()));
    }
    let x = deg + min / 60.0;
    if x > max {
        return Err(value(format!("must be <= {max} degrees")));
    }
    match hemi.chars().next() {
        Some(c) if c == pos && hemi.len() == 1 => Ok(x),
        Some(c) if c == neg && hemi.len() == 1 => Ok(-x),
        _ => Err(CoordError::Hemisphere(format!(
            "hemisphere must be {pos} or {neg}, found `{hemi}`"
        ))),
    }
}

/// Days in month `m` (1-12) of year `y` (Gregorian).
pub fn days_in_month(y: i64, m: u32) -> u32 {
    match m {
        1 | 3 | 5 | 7 | 8 | 10 | 12 => 31,
        4 | 6 | 9 | 11 => 30,
        _ if (y % 4 == 0 && y % 100 != 0) || y % 400 == 0 => 29,
        _ => 28,
    }
}

/// Days since 1970-01-01 of a civil date (H. Hinnant, "chrono-Compatible Low-Level Date
/// Algorithms", `days_from_civil`).
pub fn days_from_civil(y: i64, m: u32, d: u32) -> i64 {
    let y = if m <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (m as i64 + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d as i64 - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    era * 146_097 + doe - 719_468
}

/// Inverse of [`days_from_civil`] (H. Hinnant, `civil_from_days`).
pub fn civil_from_days(z: i64) -> (i64, u32, u32) {
    let z = z + 719_468;
    let era = z.div_euclid(146_097);
    let doe = z - era * 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let y = yoe + era * 400;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = (doy - (153 * mp + 2) / 5 + 1) as u32;
    let m = if mp < 10 { mp + 3 } else { mp - 9 } as u32;
    (if m <= 2 { y + 1 } else { y }, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn body(data: &str) -> String {
        format!("{data}*{:02X}", checksum(data))
    }

    #[test]
    fn sentences() {
        // gpsd's documentation examples.
        let gga = parse_body(&body("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,"))
            .unwrap()
            .unwrap();
        assert_eq!(
            gga,
            Fix {
                tod_s: 45_319.0,
                days: None,
                lat: 48.0 + 7.038 / 60.0,
                lon: 11.0 + 31.0 / 60.0
            }
        );
        let rmc = parse_body(&body(
            "GPRMC,123519,A,4807.038,N,01131.000,E,022.4,084.4,230394,003.1,W",
        ))
        .unwrap()
        .unwrap();
        assert_eq!(rmc.days, Some(days_from_civil(1994, 3, 23)));
        for none in [
            "GPGGA,123519,,,,,0,00,,,M,,M,,",
            "GPRMC,123519,V,,,,,,,230394,,",
            "GPGSV,1,1,00",
            "PGRME,15.0,M,45.0,M,25.0,M",
        ] {
            assert_eq!(parse_body(&body(none)), Ok(None), "{none}");
        }
        let good = body("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,");
        let flipped = good.replace("4807.038", "4807.039");
        assert!(
            matches!(parse_body(&flipped), Err(Fault::ChecksumMismatch { given, computed }) if given == &good[good.len() - 2..] && computed != u8::from_str_radix(given, 16).unwrap())
        );
        let data = good.split_once('*').unwrap().0;
        assert_eq!(parse_body(data), Err(Fault::ChecksumMissing));
        assert_eq!(parse_body(&format!("{data}*4")), Err(Fault::ChecksumFormat("4")));
        type Is = fn(&Fault) -> bool;
        let faults: [(&str, Is); 7] = [
            ("GPGGA,123519,4807.038,N,01131.000,E,9,08", |f| {
                matches!(f, Fault::FixQuality("9"))
            }),
            ("GPGGA,123519,4807.038", |f| {
                matches!(
                    f,
                    Fault::TooFewFields {
                        kind: "GGA",
                        fields: 2,
                        needs: 6
                    }
                )
            }),
            ("GPGGA,123519,4867.038,N,01131.000,E,1,08", |f| {
                matches!(f, Fault::Latitude("4867.038", CoordError::Value(_)))
            }),
            ("GPGGA,123519,4807.038,N,01131.000,X,1,08", |f| {
                matches!(f, Fault::Longitude("01131.000", CoordError::Hemisphere(_)))
            }),
            ("GPGGA,25xx19,4807.038,N,01131.000,E,1,08", |f| {
                matches!(f, Fault::Time("25xx19"))
            }),
            ("GPRMC,123519,Q,4807.038,N,01131.000,E,0,0,230394,,", |f| {
                matches!(f, Fault::Status("Q"))
            }),
            ("GPRMC,123519,A,4807.038,N,01131.000,E,0,0,300294,,", |f| {
                matches!(f, Fault::Date("300294"))
            }),
        ];
        for (data, is) in faults {
            let sentence = body(data);
            let e = parse_body(&sentence).unwrap_err();
            assert!(is(&e), "{data}: {e:?}");
        }
    }

    #[test]
    fn times_of_day() {
        assert_eq!(parse_hms("123519"), Some(12.0 * 3600.0 + 35.0 * 60.0 + 19.0));
        assert_eq!(parse_hms("000000.25"), Some(0.25));
        assert_eq!(parse_hms("235960.5"), Some(23.0 * 3600.0 + 59.0 * 60.0 + 60.5));
        for bad in [
            "", "12351", "240000", "126000", "123561", "12a519", "1235é9", "123519.x",
        ] {
            assert_eq!(parse_hms(bad), None, "{bad}");
        }
    }

    #[test]
    fn coordinates() {
        let lat = |v, h| parse_coord(v, h, 2, 'N', 'S', 90.0);
        assert_eq!(lat("4807.038", "N"), Ok(48.0 + 7.038 / 60.0));
        assert_eq!(lat("4807.038", "S"), Ok(-(48.0 + 7.038 / 60.0)));
        assert_eq!(
            parse_coord("01131.000", "W", 3, 'E', 'W', 180.0),
            Ok(-(11.0 + 31.0 / 60.0))
        );
        assert!(matches!(lat("807.038", "N"), Err(CoordError::Value(m)) if m.contains("ddmm.mmmm")));
        assert!(matches!(lat("4860.000", "N"), Err(CoordError::Value(m)) if m.contains("< 60")));
        assert!(matches!(lat("9100.000", "N"), Err(CoordError::Value(m)) if m.contains("<= 90")));
        assert!(matches!(lat("4807.038", "E"), Err(CoordError::Hemisphere(m)) if m.contains("found `E`")));
        assert!(matches!(lat("4807.038", "NN"), Err(CoordError::Hemisphere(_))));
    }

    #[test]
    fn civil_dates_round_trip() {
        assert_eq!(days_from_civil(1970, 1, 1), 0);
        assert_eq!(days_from_civil(2000, 3, 1), 11_017);
        for z in [-800_000, -1, 0, 59, 10_957, 19_782, 2_000_000] {
            let (y, m, d) = civil_from_days(z);
            assert!(d >= 1 && d <= days_in_month(y, m));
            assert_eq!(days_from_civil(y, m, d), z);
        }
        assert_eq!(days_in_month(2024, 2), 29);
        assert_eq!(days_in_month(1900, 2), 28);
        assert_eq!(days_in_month(2000, 2), 29);
    }
}
