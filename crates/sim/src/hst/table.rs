//! Handover tables (P0 §3): per operator, the track ranges where handovers happen, learned from
//! GPS-tagged runs and accumulated over time.
//!
//! P0 (§3, Fig. 2) stores each handover location "as a range, to absorb the GPS error", sized "by
//! the handover procedure and the base stations' specification", and accumulates the table over
//! every run. Learning here follows that literally:
//! - each observed handover contributes its own span (the GPS positions when delivery stopped and
//!   resumed) widened by the GPS error margin on both sides;
//! - the table keeps the **support** of every stretch of track: how many learning runs saw a
//!   handover of that operator there (a run counts once where its own handovers overlap);
//! - the ranges PHA uses are the stretches seen in at least `min_support` runs (k of n), merged.
//!   With `min_support = 1` this is the union of every observation (the whole scatter between
//!   runs); a higher k keeps the positions where handovers recur and drops the rare ones.
//!
//! Accumulating runs (learning into an existing table, or [`HandoverTable::accumulate`]) adds
//! supports and run counts, so it is exact: learning 50 runs at once or in two batches gives the
//! same table.
//!
//! Deviation: the support is counted per stretch of track, not per handover "event"; two
//! handovers of different runs a few metres apart support the stretch where their widened spans
//! overlap. P0 does not say how its ranges were merged across runs.
//!
//! CSV format (documented in `hst/README.md`):
//! ```text
//! # mobipath handover table v2
//! # runs = 50
//! # min_support = 5
//! operator,start_m,end_m,count
//! A,1874.2,1880.3,3
//! A,1880.3,1902.9,7
//! ```
//! Each row says `count` runs saw a handover of `operator` over `[start_m, end_m)`; rows may
//! overlap (their counts add) or touch. `operator` is a non-empty name without commas;
//! `0 <= start_m <= end_m`, finite (a zero-width row stands for `[start_m, start_m + 0.1)`, the
//! format's resolution); `count >= 1`. The `# runs = N` and `# min_support = K` lines are
//! optional (a v1 table has neither: min_support 1, every row a range as before); other lines
//! starting with `#` and blank lines are ignored. Errors name the line and the field.
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

/// A stretch of track (metres along it) and a count: in [`HandoverTable::operators`] the
/// highest support inside the range (runs that saw a handover there); in
/// [`HandoverTable::support`] the support of the stretch. Shared with the router (crates/hst).
pub type Range = mobipath_hst::stretches::Stretch;

/// Per operator, sorted disjoint ranges (those PHA uses), and the support they come from.
#[derive(Clone, Debug, PartialEq)]
pub struct HandoverTable {
    /// The ranges PHA uses: stretches with support >= `min_support`, merged; sorted, disjoint.
    pub operators: BTreeMap<String, Vec<Range>>,
    /// Per operator, the support as sorted, non-overlapping stretches `[start_m, end_m)` with
    /// `count` >= 1 (what the CSV stores).
    pub support: BTreeMap<String, Vec<Range>>,
    /// Runs learned from (0 = unknown, a v1 table).
    pub runs: u64,
    /// A stretch is a range when at least this many runs saw a handover there (>= 1).
    pub min_support: u64,
}

impl Default for HandoverTable {
    fn default() -> Self {
        HandoverTable {
            operators: BTreeMap::new(),
            support: BTreeMap::new(),
            runs: 0,
            min_support: 1,
        }
    }
}

pub const HEADER: &str = "operator,start_m,end_m,count";
/// The CSV's resolution (decimetres): a zero-width row covers this much.
pub use mobipath_hst::stretches::RESOLUTION_M;
// Stretches are summed (`stretches::sum`) and the ranges PHA uses picked (`stretches::at_least`)
// by the rules the router shares (crates/hst).
use mobipath_hst::stretches;

impl HandoverTable {
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds one run's observed handovers, each widened by `margin_m` on both sides: the run
    /// supports (once) every stretch one of its handovers covers.
    pub fn learn(&mut self, observed: &[ObservedHandover], margin_m: f64) {
        let mut per_op: BTreeMap<&str, Vec<(f64, f64, u64)>> = BTreeMap::new();
        for h in observed {
            let (a, b) = if h.gps_start_m <= h.gps_end_m {
                (h.gps_start_m, h.gps_end_m)
            } else {
                (h.gps_end_m, h.gps_start_m)
            };
            per_op
                .entry(&h.operator)
                .or_default()
                .push(((a - margin_m).max(0.0), b + margin_m, 1));
        }
        for (op, items) in per_op {
            // The run's own union first: overlapping handovers of one run count once.
            let union: Vec<(f64, f64, u64)> = stretches::at_least(&stretches::sum(items), 1)
                .into_iter()
                .map(|r| (r.start_m, r.end_m, 1))
                .collect();
            let entry = self.support.entry(op.to_string()).or_default();
            let old = std::mem::take(entry);
            *entry = stretches::sum(old.into_iter().map(|r| (r.start_m, r.end_m, r.count)).chain(union));
        }
        self.runs = self.runs.saturating_add(1);
        self.rebuild();
    }

    /// Adds another table's support and runs (accumulating runs learned elsewhere); this
    /// table's `min_support` stays.
    pub fn accumulate(&mut self, other: &HandoverTable) {
        for (op, rs) in &other.support {
            let entry = self.support.entry(op.clone()).or_default();
            let old = std::mem::take(entry);
            *entry = stretches::sum(
                old.into_iter()
                    .chain(rs.iter().cloned())
                    .map(|r| (r.start_m, r.end_m, r.count)),
            );
        }
        self.runs = self.runs.saturating_add(other.runs);
        self.rebuild();
    }

    /// Sets the minimum support k (>= 1) and recomputes the ranges.
    pub fn set_min_support(&mut self, k: u64) {
        self.min_support = k.max(1);
        self.rebuild();
    }

    fn rebuild(&mut self) {
        self.support.retain(|_, v| !v.is_empty());
        self.operators = self
            .support
            .iter()
            .map(|(op, s)| (op.clone(), stretches::at_least(s, self.min_support)))
            .filter(|(_, r)| !r.is_empty())
            .collect();
    }

    /// Metres of `operator`'s ranges inside `[from_m, to_m]` (the part of a ride PHA excludes).
    pub fn covered_m(&self, operator: &str, from_m: f64, to_m: f64) -> f64 {
        self.operators.get(operator).map_or(0.0, |rs| {
            rs.iter()
                .map(|r| (r.end_m.min(to_m) - r.start_m.max(from_m)).max(0.0))
                .sum()
        })
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
        self.support
            .keys()
            .filter(|op| !operators.contains(op))
            .map(|op| {
                ConfigError::new(
                    file,
                    op,
                    format!("rows of an unknown operator; operators here: {}", operators.join(", ")),
                )
            })
            .collect()
    }

    /// Errors for ranges that end beyond a track of `length_m` metres (positions off the track).
    pub fn check_track_length(&self, length_m: f64, file: &str) -> Vec<ConfigError> {
        self.support
            .iter()
            .flat_map(|(op, rs)| rs.iter().filter(|r| r.end_m > length_m).map(move |r| (op, r)))
            .map(|(op, r)| {
                ConfigError::new(
                    file,
                    format!("{op},{:.1},{:.1}", r.start_m, r.end_m),
                    format!("range ends beyond the track ({length_m:.1} m long)"),
                )
            })
            .collect()
    }

    pub fn to_csv(&self) -> String {
        let mut s = String::from("# mobipath handover table v2\n");
        if self.runs > 0 {
            s.push_str(&format!("# runs = {}\n", self.runs));
        }
        s.push_str(&format!("# min_support = {}\n{HEADER}\n", self.min_support));
        for (op, ranges) in &self.support {
            for r in ranges {
                // Decimetres: a stretch narrower than that reads back with start == end, which
                // the reader takes as one resolution step.
                s.push_str(&format!("{op},{:.1},{:.1},{}\n", r.start_m, r.end_m, r.count));
            }
        }
        s
    }

    /// Parses the CSV format; every malformed line is reported (file, line, field, value).
    pub fn from_csv(text: &str, file: &str) -> Result<HandoverTable, Vec<ConfigError>> {
        let mut errs = Vec::new();
        let mut rows: BTreeMap<String, Vec<(f64, f64, u64)>> = BTreeMap::new();
        let (mut runs, mut min_support) = (0u64, 1u64);
        let mut saw_header = false;
        // Where `# min_support` was set: checked against `# runs` at the end.
        let mut min_support_line = 0;
        // A byte-order mark (a spreadsheet's "CSV UTF-8") is not part of the text.
        let text = text.strip_prefix('\u{feff}').unwrap_or(text);
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim();
            let at = |field: &str| format!("{file}: line {}: {field}", n + 1);
            if let Some(version) = line.strip_prefix("# mobipath handover table v") {
                if !matches!(version.trim(), "1" | "2") {
                    errs.push(ConfigError::new(
                        at("version"),
                        line,
                        "unknown table version: this mobipath reads v1 and v2 tables",
                    ));
                    return Err(errs);
                }
                continue;
            }
            if let Some(meta) = line.strip_prefix('#') {
                // `# runs = N`, `# min_support = K`; any other comment is ignored.
                if let Some((key, value)) = meta.split_once('=') {
                    let (key, value) = (key.trim(), value.trim());
                    if key == "runs" || key == "min_support" {
                        match value.parse::<u64>() {
                            Ok(v) if key == "runs" => runs = v,
                            Ok(v) if v >= 1 => {
                                min_support = v;
                                min_support_line = n + 1;
                            }
                            _ => errs.push(ConfigError::new(
                                at(key),
                                value,
                                if key == "runs" {
                                    "must be an integer >= 0"
                                } else {
                                    "must be an integer >= 1"
                                },
                            )),
                        }
                    }
                }
                continue;
            }
            if line.is_empty() {
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
                errs.push(ConfigError::new(
                    at("columns"),
                    line,
                    format!("expected 4 comma-separated values ({HEADER}), found {}", cols.len()),
                ));
                continue;
            }
            let op = cols[0];
            if op.is_empty() {
                errs.push(ConfigError::new(at("operator"), op, "must not be empty"));
            }
            let num = |i: usize, name: &str, errs: &mut Vec<ConfigError>| -> Option<f64> {
                match cols[i].parse::<f64>() {
                    // Bounded so that sums of positions stay finite.
                    Ok(v) if v.is_finite() && (0.0..=1e12).contains(&v) => Some(v),
                    _ => {
                        errs.push(ConfigError::new(
                            at(name),
                            cols[i],
                            "must be a finite number in [0, 1e12] (metres)",
                        ));
                        None
                    }
                }
            };
            let start = num(1, "start_m", &mut errs);
            let end = num(2, "end_m", &mut errs);
            let count = match cols[3].parse::<u64>() {
                Ok(c) if (1..=1_000_000_000).contains(&c) => Some(c),
                _ => {
                    errs.push(ConfigError::new(
                        at("count"),
                        cols[3],
                        "must be an integer in [1, 1000000000]",
                    ));
                    None
                }
            };
            if let (Some(s), Some(e)) = (start, end) {
                // A zero-width row is a handover seen at one GPS position, learned without a
                // margin (`--margin-m 0` and a handover shorter than the GPS period).
                if s > e {
                    errs.push(ConfigError::new(
                        at("end_m"),
                        cols[2],
                        format!("must not be less than start_m ({})", cols[1]),
                    ));
                    continue;
                }
                if let (Some(c), false) = (count, op.is_empty()) {
                    rows.entry(op.to_string()).or_default().push((s, e, c));
                }
            }
        }
        if !saw_header {
            errs.push(ConfigError::new(
                file,
                "",
                format!("empty table: expected the header `{HEADER}`"),
            ));
        }
        // `# runs = N` (N > 0) bounds the support threshold: above it no range could reach it.
        if runs > 0 && min_support > runs {
            errs.push(ConfigError::new(
                format!("{file}: line {min_support_line}: min_support"),
                min_support,
                format!("must be in [1, runs = {runs}]: no range could reach it, the table would have none"),
            ));
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        let support = rows
            .into_iter()
            .map(|(op, items)| (op, stretches::sum(items)))
            .collect();
        let mut table = HandoverTable {
            operators: BTreeMap::new(),
            support,
            runs,
            min_support,
        };
        table.rebuild();
        Ok(table)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn obs(op: &str, a: f64, b: f64) -> ObservedHandover {
        ObservedHandover {
            operator: op.into(),
            gps_start_m: a,
            gps_end_m: b,
        }
    }

    #[test]
    fn learning_widens_and_merges_per_operator() {
        let mut t = HandoverTable::new();
        // Four runs; the first two overlap at 1005..1009.
        for o in [
            obs("A", 1000.0, 1004.0),
            obs("A", 1010.0, 1013.0),
            obs("A", 3000.0, 3004.0),
            obs("B", 1005.0, 1009.0),
        ] {
            t.learn(&[o], 5.0);
        }
        assert_eq!(t.runs, 4);
        let a = &t.operators["A"];
        assert_eq!(a.len(), 2, "{a:?}");
        assert_eq!(
            a[0],
            Range {
                start_m: 995.0,
                end_m: 1018.0,
                count: 2
            }
        );
        assert_eq!(a[1].count, 1);
        assert!(t.contains("A", 1017.0) && !t.contains("A", 1019.0));
        assert!(t.contains("B", 1000.5) && !t.contains("C", 1000.5));
        assert_eq!(t.next_range("A", 1500.0).map(|r| r.start_m), Some(2995.0));
    }

    #[test]
    fn one_run_supports_a_stretch_once() {
        let mut t = HandoverTable::new();
        t.learn(&[obs("A", 1000.0, 1004.0), obs("A", 1002.0, 1006.0)], 5.0);
        assert_eq!(
            t.support["A"],
            vec![Range {
                start_m: 995.0,
                end_m: 1011.0,
                count: 1
            }]
        );
    }

    /// k of n: with min_support k only the stretches that k runs saw stay, so the range is the
    /// handover's own span plus the GPS margin where handovers recur, not the scatter of rare
    /// ones; k = 1 is the union of everything seen.
    #[test]
    fn minimum_support_keeps_recurring_positions_only() {
        let mut t = HandoverTable::new();
        // Eight runs hand over at 1000..1003 (± a metre), one at 1100 (a rare outlier).
        for i in 0..8 {
            let x = 1000.0 + (i % 3) as f64 - 1.0;
            t.learn(&[obs("A", x, x + 3.0)], 5.0);
        }
        t.learn(&[obs("A", 1100.0, 1103.0)], 5.0);
        assert_eq!(t.runs, 9);
        assert!(t.contains("A", 1100.0), "k = 1 keeps the outlier");
        let union = t.covered_m("A", 0.0, 5000.0);
        t.set_min_support(3);
        assert!(!t.contains("A", 1100.0), "seen in 1 of 9 runs");
        let r = &t.operators["A"];
        assert_eq!(r.len(), 1, "{r:?}");
        // Every run's span 1000..1003 widened by 5 m; the three positions differ by a metre.
        assert!(
            r[0].start_m >= 993.0 && r[0].start_m <= 995.0 && r[0].end_m >= 1007.0 && r[0].end_m <= 1009.0,
            "{r:?}"
        );
        assert_eq!(r[0].count, 8);
        assert!(
            union > 27.0 && t.covered_m("A", 0.0, 5000.0) < 16.0,
            "{union} {}",
            t.covered_m("A", 0.0, 5000.0)
        );
        assert_eq!(t.covered_m("A", 1000.0, 1001.0), 1.0);
        // The support survives the CSV, and so does k.
        let back = HandoverTable::from_csv(&t.to_csv(), "t.csv").unwrap();
        assert_eq!(back, t);
    }

    /// Accumulating is exact: two batches of runs give the table of all the runs at once.
    #[test]
    fn accumulating_batches_equals_learning_at_once() {
        let runs: Vec<Vec<ObservedHandover>> = (0..10)
            .map(|i| {
                vec![
                    obs("A", 1000.0 + 2.0 * i as f64, 1003.0 + 2.0 * i as f64),
                    obs("B", 2000.0 - i as f64, 2001.0),
                ]
            })
            .collect();
        let mut all = HandoverTable::new();
        runs.iter().for_each(|r| all.learn(r, 4.0));
        let (mut first, mut second) = (HandoverTable::new(), HandoverTable::new());
        runs[..6].iter().for_each(|r| first.learn(r, 4.0));
        runs[6..].iter().for_each(|r| second.learn(r, 4.0));
        // Through the CSV, as `hotable learn --accumulate` does.
        let mut acc = HandoverTable::from_csv(&first.to_csv(), "first.csv").unwrap();
        acc.accumulate(&second);
        assert_eq!(acc, all);
        assert_eq!(acc.runs, 10);
        acc.set_min_support(5);
        all.set_min_support(5);
        assert_eq!(acc.operators, all.operators);
        assert!(acc.operators["A"][0].end_m - acc.operators["A"][0].start_m < 30.0);
    }

    /// A v1 table (no metadata, merged ranges with counts of handovers) reads as before: every
    /// row is a range.
    #[test]
    fn v1_tables_read_as_before() {
        let v1 =
            "# mobipath handover table v1\noperator,start_m,end_m,count\nA,608.4,679.7,24\nA,705.6,750.2,2\nB,5,5,1\n";
        let t = HandoverTable::from_csv(v1, "v1.csv").unwrap();
        assert_eq!((t.runs, t.min_support), (0, 1));
        assert_eq!(t.operators["A"].len(), 2);
        assert!(t.contains("A", 608.4) && t.contains("A", 679.7) && t.contains("A", 750.2) && !t.contains("A", 690.0));
        assert!(t.contains("B", 5.0), "a zero-width row is a range");
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
    fn tables_that_cannot_be_right_are_refused_and_a_bom_is_read() {
        let e = |csv: &str| match HandoverTable::from_csv(csv, "t.csv") {
            Ok(_) => vec![],
            Err(e) => e.iter().map(|e| e.to_string()).collect::<Vec<_>>(),
        };
        let v3 = e("# mobipath handover table v3\noperator,start_m,end_m,count\nA,1,5,1\n");
        assert!(v3[0].starts_with("t.csv: line 1: version"), "{v3:?}");
        let over = e("# runs = 3\n# min_support = 5\noperator,start_m,end_m,count\nA,1,5,3\n");
        assert_eq!(over.len(), 1, "{over:?}");
        assert!(
            over[0].starts_with("t.csv: line 2: min_support = 5: must be in [1, runs = 3]"),
            "{over:?}"
        );
        // Without `# runs` (unknown) the threshold is not bounded by it.
        assert!(e("# min_support = 5\noperator,start_m,end_m,count\nA,1,5,4\n").is_empty());
        let bom =
            HandoverTable::from_csv("\u{feff}# runs = 2\noperator,start_m,end_m,count\nA,1,5,2\n", "t.csv").unwrap();
        assert_eq!(bom.runs, 2);
        assert!(bom.contains("A", 3.0));
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
            (
                "operator,start_m,end_m,count\nA,10,5,1\n",
                "t.csv: line 2: end_m = 5: must not be less than start_m (10)",
            ),
            (
                "operator,start_m,end_m,count\nA,x,5,1\n",
                "t.csv: line 2: start_m = x: must be a finite number in [0, 1e12]",
            ),
            ("operator,start_m,end_m,count\nA,1,5\n", "t.csv: line 2: columns"),
            (
                "operator,start_m,end_m,count\nA,1,5,0\n",
                "t.csv: line 2: count = 0: must be an integer in [1, 1000000000]",
            ),
            ("operator,start_m,end_m,count\n,1,5,1\n", "t.csv: line 2: operator"),
            (
                "operator,start_m,end_m,count\nA,-3,5,1\n",
                "t.csv: line 2: start_m = -3",
            ),
            (
                "# min_support = 0\noperator,start_m,end_m,count\n",
                "t.csv: line 1: min_support = 0: must be an integer >= 1",
            ),
            (
                "# runs = many\noperator,start_m,end_m,count\n",
                "t.csv: line 1: runs = many: must be an integer >= 0",
            ),
        ];
        for (text, want) in cases {
            let errs = HandoverTable::from_csv(text, "t.csv").expect_err(text);
            assert!(
                errs.iter().any(|e| e.to_string().starts_with(want)),
                "{text:?}: {errs:?}"
            );
        }
    }
}
