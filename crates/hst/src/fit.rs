//! PHA-D's position and speed (P0 §3.3 needs both to time MP_PRIO ahead of a handover range):
//! a least-squares line through the recent fixes. Single fixes carry metres of GPS error (5 m is
//! about 60 ms at 300 km/h, as much as an RTT); the fit averages the last second of them.

/// Nanoseconds.
pub type Time = u64;

/// How much time the fixes must span before a fit is trusted.
pub const MIN_SPAN: Time = 100_000_000;

/// Position (m) at `now` and speed (m/s) from the line through `fixes`, (time, metres along the
/// track) in time order; `None` with fewer than three fixes or while they span less than
/// [`MIN_SPAN`].
pub fn position_and_speed<'a>(
    fixes: impl DoubleEndedIterator<Item = &'a (Time, f64)> + ExactSizeIterator + Clone,
    now: Time,
) -> Option<(f64, f64)> {
    let n = fixes.len();
    let t0 = fixes.clone().next()?.0;
    let t1 = fixes.clone().next_back()?.0;
    if t1 < t0 + MIN_SPAN || n < 3 {
        return None;
    }
    let n = n as f64;
    let (mut sx, mut sy, mut sxx, mut sxy) = (0.0, 0.0, 0.0, 0.0);
    for &(t, p) in fixes {
        let x = (t - t0) as f64 / 1e9;
        sx += x;
        sy += p;
        sxx += x * x;
        sxy += x * p;
    }
    let speed = (n * sxy - sx * sy) / (n * sxx - sx * sx);
    let intercept = (sy - speed * sx) / n;
    Some((intercept + speed * (now - t0) as f64 / 1e9, speed))
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::VecDeque;

    #[test]
    fn recovers_a_straight_ride_through_noise() {
        // 80 m/s from 1000 m, fixes every 10 ms with ±2 m of alternating error.
        let fixes: VecDeque<(Time, f64)> = (0..100)
            .map(|i| {
                (
                    i * 10_000_000,
                    1000.0 + 80.0 * i as f64 * 0.01 + if i % 2 == 0 { 2.0 } else { -2.0 },
                )
            })
            .collect();
        let (pos, speed) = position_and_speed(fixes.iter(), 1_000_000_000).unwrap();
        assert!((speed - 80.0).abs() < 0.5, "{speed}");
        assert!((pos - 1080.0).abs() < 1.0, "{pos}");
    }

    #[test]
    fn needs_three_fixes_over_a_tenth_of_a_second() {
        let two: VecDeque<(Time, f64)> = [(0, 0.0), (200_000_000, 10.0)].into();
        assert_eq!(position_and_speed(two.iter(), 0), None);
        let short: VecDeque<(Time, f64)> = [(0, 0.0), (40_000_000, 1.0), (80_000_000, 2.0)].into();
        assert_eq!(position_and_speed(short.iter(), 0), None);
        assert_eq!(position_and_speed(VecDeque::new().iter(), 0), None);
    }
}
