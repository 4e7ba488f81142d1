//! The rules of a `time_s,position_m` trace of fixes along the track: the simulator's
//! `[hst.gps_trace]` and the router's `replay:` GPS source read the same format, so a trace one
//! accepts the other accepts too. Each reader keeps its own CSV walk and error type; this module
//! decides what a row may hold and says why not.

/// The header line both readers require.
pub const HEADER: &str = "time_s,position_m";
/// Largest time (seconds from the trace's start) and position (metres along the track).
pub const MAX_TIME_S: f64 = 1e9;
pub const MAX_POSITION_M: f64 = 1e9;

/// What is wrong with one row: the field, and the rule it breaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Fault {
    /// Not a finite number in [0, `MAX_TIME_S`].
    Time,
    /// Not a finite number in [0, `MAX_POSITION_M`].
    Position,
    /// Not after the previous row's time: one fix per time, in order.
    NotAfterPrevious,
}

impl Fault {
    /// The field the fault is in.
    pub fn field(self) -> &'static str {
        match self {
            Fault::Time | Fault::NotAfterPrevious => "time_s",
            Fault::Position => "position_m",
        }
    }

    /// The rule, as the error messages state it (after "FIELD = VALUE: ").
    pub fn rule(self) -> &'static str {
        match self {
            Fault::Time => "must be a number in [0, 1e9] (seconds from the start)",
            Fault::Position => "must be a number in [0, 1e9] (metres along the track, which starts at 0)",
            Fault::NotAfterPrevious => "must be greater than the previous line's (one fix per time)",
        }
    }
}

/// One row `(time, position)` as text, after the row before it (its time, if any): the fix, or
/// every fault it has (both fields can be wrong; order is only checked on a valid time).
pub fn fix(time: &str, position: &str, previous_time: Option<f64>) -> Result<(f64, f64), Vec<Fault>> {
    let in_range = |s: &str, max: f64| {
        s.trim()
            .parse::<f64>()
            .ok()
            .filter(|v| v.is_finite() && (0.0..=max).contains(v))
    };
    let t = in_range(time, MAX_TIME_S);
    let p = in_range(position, MAX_POSITION_M);
    let mut faults = Vec::new();
    match t {
        None => faults.push(Fault::Time),
        Some(t) if previous_time.is_some_and(|pt| t <= pt) => faults.push(Fault::NotAfterPrevious),
        Some(_) => {}
    }
    if p.is_none() {
        faults.push(Fault::Position);
    }
    match (t, p) {
        (Some(t), Some(p)) if faults.is_empty() => Ok((t, p)),
        _ => Err(faults),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_row_is_a_fix_or_names_every_fault() {
        assert_eq!(fix("0", "10", None), Ok((0.0, 10.0)));
        assert_eq!(fix(" 1.5", "20 ", Some(1.0)), Ok((1.5, 20.0)));
        assert_eq!(fix("1e9", "1e9", None), Ok((1e9, 1e9)));
        assert_eq!(
            fix("1", "2", Some(1.0)),
            Err(vec![Fault::NotAfterPrevious]),
            "one fix per time"
        );
        assert_eq!(fix("0.5", "2", Some(1.0)), Err(vec![Fault::NotAfterPrevious]));
        assert_eq!(fix("-1", "x", None), Err(vec![Fault::Time, Fault::Position]));
        for bad in ["nan", "inf", "1e9.5", "1000000001", ""] {
            assert_eq!(fix(bad, "1", None), Err(vec![Fault::Time]), "{bad:?}");
            assert_eq!(fix("1", bad, None), Err(vec![Fault::Position]), "{bad:?}");
        }
        // An invalid time is not compared with the previous one.
        assert_eq!(fix("x", "1", Some(5.0)), Err(vec![Fault::Time]));
    }
}
