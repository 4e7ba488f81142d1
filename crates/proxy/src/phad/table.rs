//! The handover table (format v1/v2 of `mobipath hotable`, crates/sim/src/hst/table.rs and
//! crates/sim/src/hst/README.md), read for the live router: per operator the support stretches
//! `operator,start_m,end_m,count`, and the ranges PHA-D uses — stretches seen in at least
//! `min_support` runs, merged. Same rules as the simulator's reader (`tests/phad_vs_sim.rs`
//! checks both give the same ranges); errors name the file, the line and the field.
use std::collections::BTreeMap;

use mobipath_hst::stretches;

use super::controller::{Range, Ranges};

pub const HEADER: &str = "operator,start_m,end_m,count";

#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    pub ranges: BTreeMap<String, Vec<Range>>,
    /// Every operator with a row, also one none of whose stretches reaches `min_support`
    /// (it has no entry in `ranges`).
    pub operators: std::collections::BTreeSet<String>,
    pub runs: u64,
    pub min_support: u64,
}

/// The ranges PHA-D uses: stretches summed and those seen in at least `k` runs merged, by the
/// simulator's rules (the crate both use, crates/hst).
fn ranges_of(items: Vec<(f64, f64, u64)>, k: u64) -> Vec<Range> {
    stretches::at_least(&stretches::sum(items), k)
        .into_iter()
        .map(|s| Range {
            start_m: s.start_m,
            end_m: s.end_m,
        })
        .collect()
}

impl Ranges for Table {
    fn next_range(&self, operator: &str, pos_m: f64) -> Option<Range> {
        let rs = self.ranges.get(operator)?;
        let i = rs.partition_point(|r| r.end_m < pos_m);
        rs.get(i).copied()
    }
}

impl Table {
    /// Parses the CSV; every malformed line is an error `FILE: line N: FIELD = VALUE: why`.
    pub fn parse(text: &str, file: &str) -> Result<Table, Vec<String>> {
        let mut errs = Vec::new();
        let mut rows: BTreeMap<String, Vec<(f64, f64, u64)>> = BTreeMap::new();
        let (mut runs, mut min_support, mut saw_header) = (0u64, 1u64, false);
        for (n, raw) in text.lines().enumerate() {
            let line = raw.trim();
            let at = |field: &str, value: &str, why: &str| format!("{file}: line {}: {field} = {value}: {why}", n + 1);
            if let Some(meta) = line.strip_prefix('#') {
                if let Some((key, value)) = meta.split_once('=') {
                    let (key, value) = (key.trim(), value.trim());
                    match (key, value.parse::<u64>()) {
                        ("runs", Ok(v)) => runs = v,
                        ("min_support", Ok(v)) if v >= 1 => min_support = v,
                        ("runs", _) => errs.push(at(key, value, "must be an integer >= 0")),
                        ("min_support", _) => errs.push(at(key, value, "must be an integer >= 1")),
                        _ => {}
                    }
                }
                continue;
            }
            if line.is_empty() {
                continue;
            }
            if !saw_header {
                if line != HEADER {
                    errs.push(at("header", line, &format!("expected `{HEADER}`")));
                    return Err(errs);
                }
                saw_header = true;
                continue;
            }
            let cols: Vec<&str> = line.split(',').map(str::trim).collect();
            if cols.len() != 4 {
                errs.push(at(
                    "columns",
                    line,
                    &format!("expected 4 comma-separated values ({HEADER}), found {}", cols.len()),
                ));
                continue;
            }
            if cols[0].is_empty() {
                errs.push(at("operator", "", "must not be empty"));
            }
            let mut num = |i: usize, name: &str| match cols[i].parse::<f64>() {
                Ok(v) if v.is_finite() && (0.0..=1e12).contains(&v) => Some(v),
                _ => {
                    errs.push(at(name, cols[i], "must be a finite number in [0, 1e12] (metres)"));
                    None
                }
            };
            let (start, end) = (num(1, "start_m"), num(2, "end_m"));
            let count = match cols[3].parse::<u64>() {
                Ok(c) if (1..=1_000_000_000).contains(&c) => Some(c),
                _ => {
                    errs.push(at("count", cols[3], "must be an integer in [1, 1000000000]"));
                    None
                }
            };
            if let (Some(s), Some(e)) = (start, end) {
                if s > e {
                    errs.push(at(
                        "end_m",
                        cols[2],
                        &format!("must not be less than start_m ({})", cols[1]),
                    ));
                    continue;
                }
                if let (Some(c), false) = (count, cols[0].is_empty()) {
                    rows.entry(cols[0].to_string()).or_default().push((s, e, c));
                }
            }
        }
        if !saw_header {
            errs.push(format!("{file}: empty table: expected the header `{HEADER}`"));
        }
        if !errs.is_empty() {
            return Err(errs);
        }
        let operators = rows.keys().cloned().collect();
        let ranges = rows
            .into_iter()
            .map(|(op, items)| (op, ranges_of(items, min_support)))
            .filter(|(_, r)| !r.is_empty())
            .collect();
        Ok(Table {
            ranges,
            operators,
            runs,
            min_support,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn support_and_min_support() {
        let t = Table::parse("# mobipath handover table v2\n# runs = 3\n# min_support = 2\noperator,start_m,end_m,count\nA,100,110,1\nA,105,120,1\nA,300,310,1\nB,5,5,2\n", "t.csv").unwrap();
        assert_eq!(
            t.ranges["A"],
            vec![Range {
                start_m: 105.0,
                end_m: 110.0
            }]
        );
        assert_eq!(
            t.ranges["B"],
            vec![Range {
                start_m: 5.0,
                end_m: 5.1
            }]
        );
        assert_eq!(
            t.next_range("A", 0.0),
            Some(Range {
                start_m: 105.0,
                end_m: 110.0
            })
        );
        assert_eq!(t.next_range("A", 111.0), None);
        assert_eq!(t.next_range("C", 0.0), None);
    }

    #[test]
    fn errors_name_file_line_and_field() {
        let cases = [
            ("", "t.csv: empty table"),
            ("op,start,end\n", "t.csv: line 1: header"),
            (
                "operator,start_m,end_m,count\nA,10,5,1\n",
                "t.csv: line 2: end_m = 5: must not be less than start_m (10)",
            ),
            (
                "operator,start_m,end_m,count\nA,x,5,1\n",
                "t.csv: line 2: start_m = x: must be a finite number",
            ),
            ("operator,start_m,end_m,count\nA,1,5\n", "t.csv: line 2: columns"),
            ("operator,start_m,end_m,count\nA,1,5,0\n", "t.csv: line 2: count = 0"),
            ("operator,start_m,end_m,count\n,1,5,1\n", "t.csv: line 2: operator"),
            (
                "operator,start_m,end_m,count\nA,NaN,5,1\n",
                "t.csv: line 2: start_m = NaN",
            ),
            (
                "# min_support = 0\noperator,start_m,end_m,count\n",
                "t.csv: line 1: min_support = 0",
            ),
            (
                "# runs = many\noperator,start_m,end_m,count\n",
                "t.csv: line 1: runs = many",
            ),
        ];
        for (text, want) in cases {
            let errs = Table::parse(text, "t.csv").expect_err(text);
            assert!(errs.iter().any(|e| e.starts_with(want)), "{text:?}: {errs:?}");
        }
    }
}
