//! Capacity trace parsers: mahimahi delivery-opportunity traces and per-second Mbit/s
//! traces (the HSR data in `data/hsr-traces/`).
//!
//! Both parsers take the file's text and return either a [`Capacity`] or every problem
//! found (up to [`MAX_REPORTED`] lines, then a count), each naming the line and what was
//! expected. They never panic, whatever the input (checked by a proptest below).
use super::capacity::Capacity;
use super::config::MissingPolicy;
use crate::core::time::{Time, NS_PER_MS, NS_PER_S};
use std::fmt;

/// At most this many line errors are reported per file (the rest are counted).
pub const MAX_REPORTED: usize = 10;
/// Largest timestamp/second accepted, so times in ns stay far from u64 overflow
/// (10^9 s ≈ 31.7 years; mahimahi: 10^12 ms, the same span).
pub const MAX_SECONDS: u64 = 1_000_000_000;
/// Largest rate accepted in a per-second trace (1 Tbit/s).
pub const MAX_TRACE_MBPS: f64 = 1_000_000.0;

/// One problem in a trace file: `line` is 1-based, `None` for whole-file problems.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TraceError {
    pub line: Option<usize>,
    pub message: String,
}

impl fmt::Display for TraceError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.line {
            Some(l) => write!(f, "line {}: {}", l, self.message),
            None => f.write_str(&self.message),
        }
    }
}

/// Collects line errors, keeping the first [`MAX_REPORTED`].
#[derive(Default)]
struct Collector {
    errs: Vec<TraceError>,
    more: usize,
}

impl Collector {
    fn line(&mut self, line: usize, message: String) {
        if self.errs.len() < MAX_REPORTED {
            self.errs.push(TraceError {
                line: Some(line),
                message,
            });
        } else {
            self.more += 1;
        }
    }
    fn file(&mut self, message: String) {
        self.errs.push(TraceError { line: None, message });
    }
    fn finish(mut self) -> Vec<TraceError> {
        if self.more > 0 {
            self.errs.push(TraceError {
                line: None,
                message: format!("... and {} more bad lines", self.more),
            });
        }
        self.errs
    }
}

/// Shows a token in an error message, shortened if huge.
fn shown(s: &str) -> String {
    let mut out: String = s.chars().take(40).collect();
    if out.len() < s.len() {
        out.push('…');
    }
    out
}

/// Parses an unsigned decimal integer token; Err(message) says why not.
fn parse_uint(tok: &str, what: &str) -> Result<u64, String> {
    if tok.len() > 1 && tok.starts_with('-') && tok[1..].parse::<f64>().is_ok() {
        return Err(format!("{what} must be >= 0, found `{}`", shown(tok)));
    }
    if !tok.is_empty() && tok.bytes().all(|b| b.is_ascii_digit()) {
        return tok
            .parse::<u64>()
            .map_err(|_| format!("{what} is too large, found `{}`", shown(tok)));
    }
    Err(format!("expected `{what}` integer, found `{}`", shown(tok)))
}

/// Parses a mahimahi trace: one integer millisecond timestamp per line, non-decreasing;
/// each line is one delivery opportunity of [`OPPORTUNITY_BYTES`](super::capacity::OPPORTUNITY_BYTES)
/// bytes. The trace repeats with period = the last timestamp, as mahimahi's
/// `LinkQueue` does (an opportunity at `t` recurs at `t + k·period`).
///
/// Accepted beyond mahimahi: surrounding whitespace, CRLF line ends and blank lines.
/// Rejected, like mahimahi: an empty trace, a last timestamp of 0 ("trace must last for a
/// nontrivial amount of time"), decreasing timestamps; and anything but a
/// non-negative integer on a line.
pub fn parse_mahimahi(text: &str) -> Result<Capacity, Vec<TraceError>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text); // tolerate a UTF-8 BOM
    let mut c = Collector::default();
    let mut times: Vec<Time> = Vec::new();
    let mut prev: Option<u64> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let tok = raw.trim();
        if tok.is_empty() {
            continue;
        }
        match parse_uint(tok, "<ms>") {
            Ok(ms) if ms > MAX_SECONDS * 1000 => c.line(
                line,
                format!("timestamp must be <= {} ms, found {ms}", MAX_SECONDS * 1000),
            ),
            Ok(ms) => {
                if let Some(p) = prev {
                    if ms < p {
                        c.line(line, format!("timestamps must be non-decreasing, found {ms} after {p}"));
                    }
                }
                prev = Some(prev.map_or(ms, |p| p.max(ms)));
                times.push(ms * NS_PER_MS);
            }
            Err(m) => c.line(line, m),
        }
    }
    if c.errs.is_empty() && c.more == 0 {
        match times.last() {
            None => c.file("empty trace: expected one `<ms>` timestamp per line".into()),
            Some(0) => c.file(
                "last timestamp is 0: the trace must last > 0 ms (it repeats with period = last timestamp)".into(),
            ),
            Some(&p) => return Ok(Capacity::Opportunities { period: p, times }),
        }
    }
    Err(c.finish())
}

/// Parses a per-second rate trace: lines `<second> <Mbit/s>` (whitespace-separated, CRLF
/// allowed, blank lines ignored), integer seconds from 1, strictly increasing; line `s`
/// is the rate over `[s−1, s)` (format of the HSR traces in `data/hsr-traces/README.md`).
/// Seconds with no line are filled by `missing`: `Zero` gives 0 Mbit/s, `Hold` repeats
/// the previous second's rate (before the first line: the last line's, because the trace
/// wraps). The result repeats with period = the last second.
///
/// Rejected: non-numeric, negative or non-finite rates, non-integer or zero seconds,
/// non-increasing seconds, an empty trace, and a trace whose every second is 0 (it could
/// never deliver anything, and would wrap forever).
pub fn parse_mbps_per_second(text: &str, missing: MissingPolicy) -> Result<Capacity, Vec<TraceError>> {
    let text = text.strip_prefix('\u{feff}').unwrap_or(text); // tolerate a UTF-8 BOM
    let mut c = Collector::default();
    let mut rows: Vec<(u64, u64)> = Vec::new(); // (second, bit/s)
    let mut prev_s: Option<u64> = None;
    for (n, raw) in text.lines().enumerate() {
        let line = n + 1;
        let mut fields = raw.split_whitespace();
        let (Some(s_tok), r_tok, extra) = (fields.next(), fields.next(), fields.next()) else {
            continue; // blank line
        };
        let Some(r_tok) = r_tok else {
            c.line(
                line,
                format!("expected `<second> <Mbit/s>`, found `{}` alone", shown(s_tok)),
            );
            continue;
        };
        if extra.is_some() {
            c.line(
                line,
                format!("expected 2 fields `<second> <Mbit/s>`, found {}", 3 + fields.count()),
            );
            continue;
        }
        let sec = match parse_uint(s_tok, "<second>") {
            Ok(0) => {
                c.line(line, "second must be >= 1 (line `s` covers [s-1, s)), found 0".into());
                None
            }
            Ok(s) if s > MAX_SECONDS => {
                c.line(line, format!("second must be <= {MAX_SECONDS}, found {s}"));
                None
            }
            Ok(s) => {
                if let Some(p) = prev_s {
                    if s <= p {
                        c.line(
                            line,
                            format!("seconds must be strictly increasing, found {s} after {p}"),
                        );
                    }
                }
                prev_s = Some(prev_s.map_or(s, |p| p.max(s)));
                Some(s)
            }
            Err(m) => {
                c.line(line, m);
                None
            }
        };
        let rate = match r_tok.parse::<f64>() {
            Ok(v) if v.is_finite() && (0.0..=MAX_TRACE_MBPS).contains(&v) => Some(v),
            Ok(v) if v < 0.0 => {
                c.line(line, format!("rate must be >= 0 Mbit/s, found `{}`", shown(r_tok)));
                None
            }
            Ok(_) => {
                c.line(
                    line,
                    format!("rate must be in [0, {MAX_TRACE_MBPS}] Mbit/s, found `{}`", shown(r_tok)),
                );
                None
            }
            Err(_) => {
                c.line(line, format!("expected `<Mbit/s>` number, found `{}`", shown(r_tok)));
                None
            }
        };
        if let (Some(s), Some(r)) = (sec, rate) {
            rows.push((s, (r * 1e6).round() as u64));
        }
    }
    if !(c.errs.is_empty() && c.more == 0) {
        return Err(c.finish());
    }
    let Some(&(last_s, last_bps)) = rows.last() else {
        c.file("empty trace: expected lines `<second> <Mbit/s>`".into());
        return Err(c.finish());
    };
    // Build pieces, one per row plus one per gap; merge equal neighbours.
    let mut points: Vec<(Time, u64)> = Vec::with_capacity(rows.len() + 1);
    let mut push = |t: Time, bps: u64| {
        if points.last().is_none_or(|p: &(Time, u64)| p.1 != bps) {
            points.push((t, bps));
        }
    };
    let mut prev_end_s = 0u64; // end of the previous covered second
    let mut prev_bps = last_bps; // for Hold before the first row: wrap around
    for &(s, bps) in &rows {
        if s - 1 > prev_end_s {
            let fill = match missing {
                MissingPolicy::Zero => 0,
                MissingPolicy::Hold => prev_bps,
            };
            push(prev_end_s * NS_PER_S, fill);
        }
        push((s - 1) * NS_PER_S, bps);
        prev_end_s = s;
        prev_bps = bps;
    }
    if points.iter().all(|p| p.1 == 0) {
        c.file("trace has no capacity: every second is 0 Mbit/s".into());
        return Err(c.finish());
    }
    Ok(Capacity::Schedule {
        points,
        period: Some(last_s * NS_PER_S),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::core::time::NS_PER_S;

    fn err_text(r: Result<Capacity, Vec<TraceError>>) -> String {
        r.expect_err("expected an error")
            .iter()
            .map(|e| e.to_string())
            .collect::<Vec<_>>()
            .join("; ")
    }

    #[test]
    fn mahimahi_parses_and_wraps() {
        let c = parse_mahimahi("0\r\n5\n5\n\n12\n").unwrap();
        assert_eq!(
            c,
            Capacity::Opportunities {
                times: vec![0, 5 * NS_PER_MS, 5 * NS_PER_MS, 12 * NS_PER_MS],
                period: 12 * NS_PER_MS
            }
        );
    }

    #[test]
    fn per_second_fills_gaps_and_wraps() {
        let text = "1 1.0\r\n2 2.0\r\n5 3.0\r\n";
        let z = parse_mbps_per_second(text, MissingPolicy::Zero).unwrap();
        assert_eq!(
            z,
            Capacity::Schedule {
                points: vec![
                    (0, 1_000_000),
                    (NS_PER_S, 2_000_000),
                    (2 * NS_PER_S, 0),
                    (4 * NS_PER_S, 3_000_000)
                ],
                period: Some(5 * NS_PER_S)
            }
        );
        let h = parse_mbps_per_second(text, MissingPolicy::Hold).unwrap();
        assert_eq!(
            h,
            Capacity::Schedule {
                points: vec![(0, 1_000_000), (NS_PER_S, 2_000_000), (4 * NS_PER_S, 3_000_000)],
                period: Some(5 * NS_PER_S)
            }
        );
        // A leading gap under Hold takes the last value (the trace wraps).
        let h = parse_mbps_per_second("3 4\n4 5\n", MissingPolicy::Hold).unwrap();
        assert_eq!(
            h,
            Capacity::Schedule {
                points: vec![(0, 5_000_000), (2 * NS_PER_S, 4_000_000), (3 * NS_PER_S, 5_000_000)],
                period: Some(4 * NS_PER_S)
            }
        );
    }

    /// Each malformed trace yields its own specific message.
    #[test]
    fn malformed_traces_table() {
        let mm: &[(&str, &str)] = &[
            ("", "empty trace: expected one `<ms>` timestamp per line"),
            ("\n \n", "empty trace"),
            ("0\n0\n", "last timestamp is 0"),
            ("5\n-3\n", "line 2: <ms> must be >= 0, found `-3`"),
            ("5\n7.5\n", "line 2: expected `<ms>` integer, found `7.5`"),
            ("1\n2\nabc\n", "line 3: expected `<ms>` integer, found `abc`"),
            ("10\n9\n", "line 2: timestamps must be non-decreasing, found 9 after 10"),
            ("99999999999999999999999\n", "line 1: <ms> is too large"),
            ("1 2\n", "line 1: expected `<ms>` integer, found `1 2`"),
        ];
        for (text, want) in mm {
            let got = err_text(parse_mahimahi(text));
            assert!(got.contains(want), "mahimahi {text:?}: got {got:?}, want {want:?}");
        }
        let ps: &[(&str, &str)] = &[
            ("", "empty trace: expected lines `<second> <Mbit/s>`"),
            ("1 0\n2 0\n", "trace has no capacity"),
            ("1\n", "line 1: expected `<second> <Mbit/s>`, found `1` alone"),
            ("1 2 3\n", "line 1: expected 2 fields `<second> <Mbit/s>`, found 3"),
            ("1 -2\n", "line 1: rate must be >= 0 Mbit/s, found `-2`"),
            ("1 fast\n", "line 1: expected `<Mbit/s>` number, found `fast`"),
            ("1 NaN\n", "line 1: rate must be in [0, 1000000] Mbit/s, found `NaN`"),
            ("1 inf\n", "line 1: rate must be in [0, 1000000] Mbit/s"),
            ("0 1\n", "line 1: second must be >= 1"),
            ("1.5 1\n", "line 1: expected `<second>` integer, found `1.5`"),
            ("-1 1\n", "line 1: <second> must be >= 0, found `-1`"),
            (
                "1 1\n3 1\n3 2\n",
                "line 3: seconds must be strictly increasing, found 3 after 3",
            ),
            (
                "2 1\n1 1\n",
                "line 2: seconds must be strictly increasing, found 1 after 2",
            ),
            ("2000000000 1\n", "line 1: second must be <= 1000000000"),
        ];
        for (text, want) in ps {
            let got = err_text(parse_mbps_per_second(text, MissingPolicy::Zero));
            assert!(got.contains(want), "per-second {text:?}: got {got:?}, want {want:?}");
        }
    }

    #[test]
    fn many_bad_lines_are_capped() {
        let text = "x\n".repeat(25);
        let errs = parse_mahimahi(&text).unwrap_err();
        assert_eq!(errs.len(), MAX_REPORTED + 1);
        assert_eq!(errs.last().unwrap().message, "... and 15 more bad lines");
    }

    /// The shipped HSR traces parse, and their means match the README's table.
    #[test]
    fn shipped_hsr_traces_match_readme_means() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../../data/hsr-traces");
        for (file, mean_zero, secs) in [
            ("hsr-1529470787-lia-wlan16-U4.trace", 16.72, 300),
            ("hsr-1529470787-lia-wlan3-M3.trace", 1.40, 294),
            ("hsr-1529470904-reno-wlan16-U4.trace", 15.34, 300),
            ("hsr-1529470904-reno-wlan3-M3.trace", 4.82, 294),
        ] {
            let text = std::fs::read_to_string(dir.join(file)).unwrap();
            assert!(text.contains("\r\n"), "CRLF kept in {file}");
            let cap = parse_mbps_per_second(&text, MissingPolicy::Zero).unwrap();
            let tl = super::super::capacity::Timeline { cap, outages: vec![] };
            let mean = tl.capacity_bits(0, secs * NS_PER_S) / secs as f64 / 1e6;
            assert!(
                (mean - mean_zero).abs() < 0.006,
                "{file}: mean {mean} vs README {mean_zero}"
            );
            let Capacity::Schedule { period, .. } = &tl.cap else {
                panic!()
            };
            assert_eq!(*period, Some(secs * NS_PER_S));
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        #[test]
        fn parsers_never_panic(text in "\\PC*") {
            let _ = parse_mahimahi(&text);
            let _ = parse_mbps_per_second(&text, MissingPolicy::Zero);
            let _ = parse_mbps_per_second(&text, MissingPolicy::Hold);
        }

        #[test]
        fn parsers_never_panic_on_trace_like_text(
            lines in proptest::collection::vec("(-?[0-9]{0,22}(\\.[0-9]{0,3})?)( +-?[0-9]{0,12}(\\.[0-9]{0,8})?(e[0-9]{1,3})?)?\r?", 0..30)
        ) {
            let text = lines.join("\n");
            if let Ok(Capacity::Opportunities { times, period }) = parse_mahimahi(&text) {
                proptest::prop_assert!(period > 0 && *times.last().unwrap() == period);
                proptest::prop_assert!(times.windows(2).all(|w| w[0] <= w[1]));
            }
            for m in [MissingPolicy::Zero, MissingPolicy::Hold] {
                if let Ok(Capacity::Schedule { points, period: Some(p) }) = parse_mbps_per_second(&text, m) {
                    proptest::prop_assert_eq!(points[0].0, 0);
                    proptest::prop_assert!(points.windows(2).all(|w| w[0].0 < w[1].0));
                    proptest::prop_assert!(points.last().unwrap().0 < p);
                    proptest::prop_assert!(points.iter().any(|q| q.1 > 0));
                }
            }
        }
    }
}
