//! The walk shared by the router's two-column CSV files (the track `lat,lon`, a replay trace
//! `time_s,position_m`): blank lines and `#` comments skipped, a header first (spaces ignored),
//! then rows of exactly two comma-separated values, trimmed. Errors read
//! `FILE: line N: FIELD = VALUE: why`; what a row's values mean is the caller's.

/// One data row: its two values, and the line to name in an error.
pub struct Row<'a> {
    pub cols: [&'a str; 2],
    pub line: &'a str,
    line_no: usize,
    file: &'a str,
}

impl Row<'_> {
    /// `FILE: line N: FIELD = VALUE: why`.
    pub fn err(&self, field: &str, value: &str, why: &str) -> String {
        format!("{}: line {}: {field} = {value}: {why}", self.file, self.line_no)
    }
}

/// Calls `row` with each data row of `text` (a file of `what`, e.g. "track", whose header is
/// `header`) and the error list it may add to. A wrong header ends the walk with that error
/// alone (`header_note` says what was expected); a row without exactly two values is an error
/// and skipped; a file without a header is an error. Returns the errors, in line order.
pub fn walk<'a>(
    text: &'a str,
    file: &'a str,
    what: &str,
    header: &str,
    header_note: &str,
    mut row: impl FnMut(Row<'a>, &mut Vec<String>),
) -> Vec<String> {
    let mut errs = Vec::new();
    let mut seen_header = false;
    for (i, l) in text.lines().enumerate() {
        let line = l.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |field: &str, v: &str, why: &str| format!("{file}: line {}: {field} = {v}: {why}", i + 1);
        if !seen_header {
            if line.replace(' ', "") != header {
                return vec![at("header", line, &format!("expected `{header}`{header_note}"))];
            }
            seen_header = true;
            continue;
        }
        let c: Vec<&str> = line.split(',').map(str::trim).collect();
        if c.len() != 2 {
            errs.push(at(
                "columns",
                line,
                &format!("expected 2 values ({header}), found {}", c.len()),
            ));
            continue;
        }
        row(
            Row {
                cols: [c[0], c[1]],
                line,
                line_no: i + 1,
                file,
            },
            &mut errs,
        );
    }
    if !seen_header {
        errs.push(format!("{file}: empty {what}: expected the header `{header}`"));
    }
    errs
}

#[cfg(test)]
mod tests {
    use super::walk;

    fn rows(text: &str) -> (Vec<[String; 2]>, Vec<String>) {
        let mut got = Vec::new();
        let errs = walk(text, "f.csv", "table", "a,b", " (two numbers)", |r, errs| {
            if r.cols[0] == "bad" {
                errs.push(r.err("a", r.cols[0], "not a number"));
            } else {
                got.push([r.cols[0].to_string(), r.cols[1].to_string()]);
            }
        });
        (got, errs)
    }

    #[test]
    fn comments_blanks_and_spaces_are_skipped() {
        let (got, errs) = rows("# note\n\n a , b \n1, 2\n  # again\n3,4\n");
        assert!(errs.is_empty(), "{errs:?}");
        assert_eq!(
            got,
            [["1".to_string(), "2".to_string()], ["3".to_string(), "4".to_string()]]
        );
    }

    #[test]
    fn errors_name_the_line_and_field_in_order() {
        let (got, errs) = rows("a,b\n1,2,3\nbad,2\n5,6\n");
        assert_eq!(got.len(), 1);
        assert_eq!(
            errs,
            [
                "f.csv: line 2: columns = 1,2,3: expected 2 values (a,b), found 3",
                "f.csv: line 3: a = bad: not a number"
            ]
        );
    }

    #[test]
    fn a_wrong_or_missing_header_is_an_error() {
        assert_eq!(
            rows("x,y\n1,2\n").1,
            ["f.csv: line 1: header = x,y: expected `a,b` (two numbers)"]
        );
        assert_eq!(
            rows("# only a comment\n").1,
            ["f.csv: empty table: expected the header `a,b`"]
        );
    }
}
