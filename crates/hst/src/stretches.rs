//! A handover table's support (format of `mobipath hotable`, crates/sim/src/hst/README.md): per
//! operator, the stretches of track where runs saw a handover, each with the number of runs.
//! Learning and merging tables add stretches up ([`sum`]); PHA-D uses the ranges seen in at
//! least `min_support` runs ([`at_least`]).

/// Stretches shorter than this are widened to it (a handover seen at one point).
pub const RESOLUTION_M: f64 = 0.1;

/// A stretch of track, metres along it, and a count: the runs that saw a handover there (in a
/// table's support), or the highest such count inside (in the ranges PHA-D uses).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Stretch {
    pub start_m: f64,
    pub end_m: f64,
    pub count: u64,
}

/// Adds stretches `(start_m, end_m, count)` up into sorted, non-overlapping stretches of
/// constant count (adjacent ones with equal counts joined). Empty or reversed stretches count
/// as [`RESOLUTION_M`] long.
pub fn sum(items: impl IntoIterator<Item = (f64, f64, u64)>) -> Vec<Stretch> {
    let mut ev: Vec<(f64, i128)> = Vec::new();
    for (a, b, c) in items {
        let b = if b > a { b } else { a + RESOLUTION_M };
        ev.push((a, c as i128));
        ev.push((b, -(c as i128)));
    }
    ev.sort_by(|x, y| x.0.total_cmp(&y.0));
    let mut out: Vec<Stretch> = Vec::new();
    let mut level: i128 = 0;
    let mut i = 0;
    while i < ev.len() {
        let x = ev[i].0;
        while i < ev.len() && ev[i].0 == x {
            level += ev[i].1;
            i += 1;
        }
        let Some(&(next, _)) = ev.get(i) else { break };
        if level <= 0 || next <= x {
            continue;
        }
        let c = level as u64;
        match out.last_mut() {
            Some(last) if last.end_m == x && last.count == c => last.end_m = next,
            _ => out.push(Stretch {
                start_m: x,
                end_m: next,
                count: c,
            }),
        }
    }
    out
}

/// The stretches of `support` (sorted, as [`sum`] gives them) with count >= `k`, touching ones
/// merged; each keeps the highest count inside it.
pub fn at_least(support: &[Stretch], k: u64) -> Vec<Stretch> {
    let mut out: Vec<Stretch> = Vec::new();
    for s in support.iter().filter(|s| s.count >= k) {
        match out.last_mut() {
            Some(last) if s.start_m <= last.end_m => {
                last.end_m = last.end_m.max(s.end_m);
                last.count = last.count.max(s.count);
            }
            _ => out.push(*s),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    fn s(start_m: f64, end_m: f64, count: u64) -> Stretch {
        Stretch { start_m, end_m, count }
    }

    #[test]
    fn overlaps_add_up() {
        let got = sum([(100.0, 200.0, 1), (150.0, 250.0, 2), (400.0, 400.0, 1)]);
        assert_eq!(
            got,
            vec![
                s(100.0, 150.0, 1),
                s(150.0, 200.0, 3),
                s(200.0, 250.0, 2),
                s(400.0, 400.0 + RESOLUTION_M, 1)
            ]
        );
        // Equal counts side by side join; order of input does not matter.
        assert_eq!(sum([(10.0, 20.0, 1), (20.0, 30.0, 1)]), vec![s(10.0, 30.0, 1)]);
        assert_eq!(
            sum([(150.0, 250.0, 2), (100.0, 200.0, 1)]),
            sum([(100.0, 200.0, 1), (150.0, 250.0, 2)])
        );
    }

    #[test]
    fn ranges_with_enough_support() {
        let support = sum([(100.0, 200.0, 1), (150.0, 250.0, 2), (400.0, 410.0, 1)]);
        assert_eq!(at_least(&support, 1), vec![s(100.0, 250.0, 3), s(400.0, 410.0, 1)]);
        assert_eq!(at_least(&support, 2), vec![s(150.0, 250.0, 3)]);
        assert_eq!(at_least(&support, 4), vec![]);
    }
}
