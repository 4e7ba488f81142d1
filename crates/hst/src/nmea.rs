//! NMEA 0183 fields (v4.10 layouts as documented by gpsd, www.catb.org/gpsd/NMEA.html) and the
//! civil-date arithmetic the sentences need. The sentence readers themselves stay with their
//! users (the simulator's log reader and the router's live reader differ in what they return
//! and how they report errors); the field rules here are what makes them accept and reject the
//! same sentences.

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
    if dot != deg_digits + 2 || !v.bytes().enumerate().all(|(i, b)| b.is_ascii_digit() || (i == dot && b == b'.')) {
        return Err(value(format!("expected {}mm.mmmm (degrees and minutes)", "d".repeat(deg_digits))));
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
        _ => Err(CoordError::Hemisphere(format!("hemisphere must be {pos} or {neg}, found `{hemi}`"))),
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

    #[test]
    fn times_of_day() {
        assert_eq!(parse_hms("123519"), Some(12.0 * 3600.0 + 35.0 * 60.0 + 19.0));
        assert_eq!(parse_hms("000000.25"), Some(0.25));
        assert_eq!(parse_hms("235960.5"), Some(23.0 * 3600.0 + 59.0 * 60.0 + 60.5));
        for bad in ["", "12351", "240000", "126000", "123561", "12a519", "1235é9", "123519.x"] {
            assert_eq!(parse_hms(bad), None, "{bad}");
        }
    }

    #[test]
    fn coordinates() {
        let lat = |v, h| parse_coord(v, h, 2, 'N', 'S', 90.0);
        assert_eq!(lat("4807.038", "N"), Ok(48.0 + 7.038 / 60.0));
        assert_eq!(lat("4807.038", "S"), Ok(-(48.0 + 7.038 / 60.0)));
        assert_eq!(parse_coord("01131.000", "W", 3, 'E', 'W', 180.0), Ok(-(11.0 + 31.0 / 60.0)));
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
