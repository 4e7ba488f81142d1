//! Handover tables (P0 §3): per operator, the track ranges where handovers happen, learned from
//! GPS-tagged runs and accumulated over time.
//!
//! Learning: each observed handover contributes the range between the GPS positions at its start
//! and end, widened on both sides by the GPS error margin; overlapping or touching ranges of the
//! same operator are merged, and `count` says how many observed handovers a range absorbed.
//! Accumulating new runs into an existing table is a union, so coverage never shrinks (P0: "the
//! table is accumulated over every run to follow changes in the environment").
//!
//! CSV format (documented in `hst/README.md`):
//! ```text
//! # mobipath handover table v1
//! operator,start_m,end_m,count
//! A,1874.2,2016.9,50
//! ```
//! `operator` is a non-empty name without commas; `0 <= start_m <= end_m`, finite (a zero-width range is a handover seen at one GPS position); `count >= 1`.
//! Lines starting with `#` and blank lines are ignored. Errors name the line and the field.
use crate::error::ConfigError;
use std::collections::BTreeMap;

/// One handover observed in a run: operator and the GPS positions (metres along the track) when
/// delivery stopped and when it resumed.
#[derive(Clone, Debug, PartialEq)]
pub struct ObservedHandover {
    pub operator: String,
    pub gps_start_m: f64,
    pub gps_end_m: f64,
}

#[derive(Clone, Debug, PartialEq)]
pub struct Range {
    pub start_m: f64,
    pub end_m: f64,
    /// Observed handovers merged into this range.
    pub count: u64,
}

/// Per operator, sorted disjoint ranges.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HandoverTable {
    pub operators: BTreeMap<String, Vec<Range>>,
}

pub const HEADER: &str = "operator,start_m,end_m,count";

impl HandoverTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds observed handovers, each widened by `margin_m` on both sides, and merges.
    pub fn learn(&mut self, observed: &[ObservedHandover], margin_m: f64) {
        for h in observed {
            let (a, b) = if h.gps_start_m <= h.gps_end_m { (h.gps_start_m, h.gps_end_m) } else { (h.gps_end_m, h.gps_start_m) };
            let r = Range { start_m: (a - margin_m).max(0.0), end_m: b + margin_m, count: 1 };
            self.operators.entry(h.operator.clone()).or_default().push(r);
        }
        self.normalise();
    }

    /// Union with another table (accumulating runs learned elsewhere).
    pub fn accumulate(&mut self, other: &HandoverTable) {
        for (op, ranges) in &other.operators {
            self.operators.entry(op.clone()).or_default().extend(ranges.iter().cloned());
        }
        self.normalise();
    }

    fn normalise(&mut self) {
        for ranges in self.operators.values_mut() {
            ranges.sort_by(|x, y| x.start_m.total_cmp(&y.start_m));
            let mut merged: Vec<Range> = Vec::with_capacity(ranges.len());
            for r in ranges.drain(..) {
                match merged.last_mut() {
                    Some(last) if r.start_m <= last.end_m => {
                        last.end_m = last.end_m.max(r.end_m);
                        last.count += r.count;
                    }
                    _ => merged.push(r),
                }
            }
            *ranges = merged;
        }
    }

    /// Whether `position_m` lies in a handover range of `operator`.
    pub fn contains(&self, operator: &str, position_m: f64) -> bool {
        self.range_at(operator, position_m).is_some()
    }

    /// The range of `operator` containing `position_m`, if any (binary search).
    pub fn range_at(&self, operator: &str, position_m: f64) -> Option<&Range> {
        let ranges = self.operators.get(operator)?;
        let i = ranges.partition_point(|r| r.end_m < position_m);
        ranges.get(i).filter(|r| r.start_m <= position_m)
    }

    /// The next range of `operator` that starts at or after `position_m`, or contains it.
    pub fn next_range(&self, operator: &str, position_m: f64) -> Option<&Range> {
        let ranges = self.operators.get(operator)?;
        let i = ranges.partition_point(|r| r.end_m < position_m);
        ranges.get(i)
    }

    /// Errors for rows whose operator is not one of `operators` (a table learned for another
    /// network, or a typo), naming the file and the operators known.
    pub fn check_operators(&self, operators: &[String], file: &str) -> Vec<ConfigError> {
        self.operators
            .keys()
            .filter(|op| !operators.contains(op))
            .map(|op| ConfigError::new(file, op, format!("rows of an unknown operator; operators here: {}", operators.join(", "))))
            .collect()
    }

    /// Errors for ranges that end beyond a track of `length_m` metres (positions off the track).
    pub fn check_track_length(&self, length_m: f64, file: &str) -> Vec<ConfigError> {
        self.operators
            .iter()
            .flat_map(|(op, rs)| rs.iter().filter(|r| r.end_m > length_m).map(move |r| (op, r)))
            .map(|(op, r)| ConfigError::new(file, format!("{op},{:.1},{:.1}", r.start_m, r.end_m), format!("range ends beyond the track ({length_m:.1} m long)")))
            .collect()
    }

    pub fn to_csv(&self) -> String {
        let mut s = format!("# mobipath handover table v1\n{HEADER}\n");
        for (op, ranges) in &self.operators {
            for r in ranges {
                // Decimetres (format v1): a range narrower than that reads back with start == end,
                // which the reader accepts (a handover seen at one position).
                s.push_str(&format!("{op},{:.1},{:.1},{}\n", r.start_m, r.end_m, r.count));
            }
        }
        s
    }

    /// Parses the CSV format; every malformed line is reported (file, line, field, value).
    pub fn from_csv(text: &str, file: &str) -> Result<HandoverTable, Vec<ConfigError>> {
        let mut errs = Vec::new();
        let mut table = HandoverTable::new();
        let mut saw_header = false;
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim();
            let at = |field: &str| format!("{file}: line {}: {field}", n + 1);
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            if !saw_header {
                if line != HEADER {
                    errs.push(ConfigError::new(at("header"), line, format!("expected `{HEADER}`")));
                    return Err(errs);
                }
                saw_header = true;
                continue;
            }
            let cols: Vec<&str> = line.split(',').map(str::trim).collect();
            if cols.len() != 4 {
                errs.push(ConfigError::new(at("columns"), line, format!("expected 4 comma-separated values ({HEADER}), found {}", cols.len())));
                continue;
            }
            let op = cols[0];
            if op.is_empty() {
                errs.push(ConfigError::new(at("operator"), op, "must not be empty"));
            }
            let num = |i: usize, name: &str, errs: &mut Vec<ConfigError>| -> Option<f64> {
                match cols[i].parse::<f64>() {
                    Ok(v) if v.is_finite() && v >= 0.0 => Some(v),
                    _ => {
                        errs.push(ConfigError::new(at(name), cols[i], "must be a finite number >= 0 (metres)"));
                        None
                    }
                }
            };
            let start = num(1, "start_m", &mut errs);
            let end = num(2, "end_m", &mut errs);
            let count = match cols[3].parse::<u64>() {
                Ok(c) if c >= 1 => Some(c),
                _ => {
                    errs.push(ConfigError::new(at("count"), cols[3], "must be an integer >= 1"));
                    None
                }
            };
            if let (Some(s), Some(e)) = (start, end) {
                // A zero-width range is a handover seen at one GPS position, learned without a
                // margin (`--margin-m 0` and a handover shorter than the GPS period).
                if s > e {
                    errs.push(ConfigError::new(at("end_m"), cols[2], format!("must not be less than start_m ({})", cols[1])));
                    continue;
                }
                if let (Some(c), false) = (count, op.is_empty()) {
                    table.operators.entry(op.to_string()).or_default().push(Range { start_m: s, end_m: e, count: c });
                }
            }
        }
        if !saw_header {
            errs.push(ConfigError::new(file, "", format!("empty table: expected the header `{HEADER}`")));
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        table.normalise();
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(op: &str, a: f64, b: f64) -> ObservedHandover {
        ObservedHandover { operator: op.into(), gps_start_m: a, gps_end_m: b }
    }

    #[test]
    fn learning_widens_and_merges_per_operator() {
        let mut t = HandoverTable::new();
        t.learn(&[obs("A", 1000.0, 1004.0), obs("A", 1010.0, 1013.0), obs("A", 3000.0, 3004.0), obs("B", 1005.0, 1009.0)], 5.0);
        let a = &t.operators["A"];
        assert_eq!(a.len(), 2, "{a:?}");
        assert_eq!(a[0], Range { start_m: 995.0, end_m: 1018.0, count: 2 });
        assert_eq!(a[1].count, 1);
        assert!(t.contains("A", 1017.0) && !t.contains("A", 1019.0));
        assert!(t.contains("B", 1000.5) && !t.contains("C", 1000.5));
        assert_eq!(t.next_range("A", 1500.0).map(|r| r.start_m), Some(2995.0));
    }

    #[test]
    fn accumulating_never_shrinks_coverage() {
        let mut t = HandoverTable::new();
        t.learn(&[obs("A", 100.0, 110.0)], 2.0);
        let before = t.clone();
        let mut other = HandoverTable::new();
        other.learn(&[obs("A", 500.0, 510.0), obs("A", 105.0, 120.0)], 2.0);
        t.accumulate(&other);
        for r in &before.operators["A"] {
            for x in [r.start_m, (r.start_m + r.end_m) / 2.0, r.end_m] {
                assert!(t.contains("A", x));
            }
        }
        assert!(t.contains("A", 505.0) && t.contains("A", 121.0));
    }

    #[test]
    fn csv_round_trip() {
        let mut t = HandoverTable::new();
        t.learn(&[obs("A", 1000.0, 1004.5), obs("B", 2000.0, 2010.0)], 5.0);
        let back = HandoverTable::from_csv(&t.to_csv(), "t.csv").unwrap();
        assert_eq!(back, t);
    }

    #[test]
    fn malformed_tables_get_specific_errors() {
        let cases = [
            ("", "t.csv: empty table"),
            ("op,start,end\n", "t.csv: line 1: header"),
            ("operator,start_m,end_m,count\nA,10,5,1\n", "t.csv: line 2: end_m = 5: must not be less than start_m (10)"),
            ("operator,start_m,end_m,count\nA,x,5,1\n", "t.csv: line 2: start_m = x: must be a finite number >= 0"),
            ("operator,start_m,end_m,count\nA,1,5\n", "t.csv: line 2: columns"),
            ("operator,start_m,end_m,count\nA,1,5,0\n", "t.csv: line 2: count = 0: must be an integer >= 1"),
            ("operator,start_m,end_m,count\n,1,5,1\n", "t.csv: line 2: operator"),
            ("operator,start_m,end_m,count\nA,-3,5,1\n", "t.csv: line 2: start_m = -3"),
        ];
        for (text, want) in cases {
            let errs = HandoverTable::from_csv(text, "t.csv").expect_err(text);
            assert!(errs.iter().any(|e| e.to_string().starts_with(want)), "{text:?}: {errs:?}");
        }
    }
}
