//! Virtual time as integer nanoseconds.
//!
//! Integer time keeps runs bit-for-bit reproducible (no floating-point drift in
//! the event order) and 64 bits hold ~584 years.

/// A point in simulated time or a duration, in nanoseconds.
pub type Time = u64;

pub const NS_PER_US: Time = 1_000;
pub const NS_PER_MS: Time = 1_000_000;
pub const NS_PER_S: Time = 1_000_000_000;
/// A time that never comes.
pub const NEVER: Time = Time::MAX;

pub fn from_secs_f64(s: f64) -> Time {
    (s * NS_PER_S as f64).round() as Time
}
pub fn from_ms_f64(ms: f64) -> Time {
    (ms * NS_PER_MS as f64).round() as Time
}
pub fn to_secs_f64(t: Time) -> f64 {
    t as f64 / NS_PER_S as f64
}
pub fn to_ms_f64(t: Time) -> f64 {
    t as f64 / NS_PER_MS as f64
}

/// Time to serialise `bytes` at `rate_bps` bits per second (rounded up to a whole ns).
pub fn tx_time(bytes: u64, rate_bps: f64) -> Time {
    debug_assert!(rate_bps > 0.0);
    ((bytes as f64 * 8.0 * NS_PER_S as f64) / rate_bps).ceil() as Time
}
