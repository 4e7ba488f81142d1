//! The independent reference relay (`mobipath-emu --relay`, for `mobipath fidelity --independent`): a minimal forwarder that
//! adds a fixed one-way delay and, on the forward direction, Bernoulli loss between two TUN
//! devices — and nothing else. It shares no code with the simulator's link model
//! (`mobipath_sim::link::LinkDir`): no rate, no queue limit, no reordering; its loss stream is
//! its own (ChaCha8 seeded from `--seed` with a relay-specific constant, so it never draws the
//! simulator's `link/<name>/forward` stream). The bottleneck of the reference path is the
//! kernel's own `tbf` qdisc on a veth (set up by `python/mobipath/emulate/independent.py`).
//!
//! Each direction is one thread: it reads every waiting frame from its input TUN, stamps it with
//! the read time, draws its loss (forward only), and appends it to a FIFO delay line; a frame is
//! written to the output TUN at `read time + delay` (`ppoll` until shortly before, then a
//! bounded busy-wait). The delay is constant, so the FIFO order is the release order.
use crate::forward::{now_ns, try_realtime};
use crate::STOP;
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use serde::Serialize;
use std::collections::VecDeque;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Mixed into the seed so the relay's loss draws are unrelated to any other stream.
const RELAY_STREAM: u64 = 0x7265_6c61_792f_6c6f; // "relay/lo"

/// A FIFO delay line with Bernoulli loss: the relay's whole model.
pub struct DelayLine {
    delay_ns: u64,
    loss: f64,
    rng: ChaCha8Rng,
    /// (release time, frame), in arrival order.
    q: VecDeque<(u64, Vec<u8>)>,
    pub stats: LineStats,
}

/// What one direction did.
#[derive(Clone, Debug, Default, Serialize)]
pub struct LineStats {
    pub frames_in: u64,
    pub frames_lost: u64,
    pub frames_out: u64,
    pub write_errors: u64,
    /// Release time minus due time, µs (p50 / p99 / max over every released frame).
    pub late_p50_us: f64,
    pub late_p99_us: f64,
    pub late_max_us: f64,
}

impl DelayLine {
    /// `delay_ns` one way; `loss` in [0, 1]; `seed` and `dir` (0 forward, 1 reverse) pick the stream.
    pub fn new(delay_ns: u64, loss: f64, seed: u64, dir: u64) -> DelayLine {
        let rng = ChaCha8Rng::seed_from_u64(seed ^ RELAY_STREAM ^ dir.wrapping_mul(0x9e37_79b9_7f4a_7c15));
        DelayLine {
            delay_ns,
            loss,
            rng,
            q: VecDeque::new(),
            stats: LineStats::default(),
        }
    }

    /// A frame read at `now`: dropped with probability `loss`, else released at `now + delay`.
    /// Returns whether it was kept.
    pub fn push(&mut self, now: u64, frame: Vec<u8>) -> bool {
        self.stats.frames_in += 1;
        if self.loss > 0.0 && self.rng.gen::<f64>() < self.loss {
            self.stats.frames_lost += 1;
            return false;
        }
        self.q.push_back((now + self.delay_ns, frame));
        true
    }

    /// When the next frame is due (None if empty).
    pub fn next_due(&self) -> Option<u64> {
        self.q.front().map(|(t, _)| *t)
    }

    /// The next frame if due at `now`, with its due time.
    pub fn pop_due(&mut self, now: u64) -> Option<(u64, Vec<u8>)> {
        if self.q.front().is_some_and(|(t, _)| *t <= now) {
            self.q.pop_front()
        } else {
            None
        }
    }
}

/// Forwards `input` → `output` through `line` until `end_ns` or [`STOP`]; returns its stats.
pub fn run(
    mut line: DelayLine,
    input: RawFd,
    output: RawFd,
    t0: Instant,
    end_ns: u64,
    spin_ns: u64,
    realtime: bool,
) -> (LineStats, bool) {
    let rt = realtime && try_realtime();
    let mut late: Vec<u32> = Vec::new();
    let mut buf = vec![0u8; 65536];
    loop {
        let now = now_ns(t0);
        if now >= end_ns || STOP.load(Ordering::Relaxed) {
            break;
        }
        // Read everything waiting, stamped with its read time.
        loop {
            let n = unsafe { libc::read(input, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
            if n <= 0 {
                break;
            }
            line.push(now_ns(t0), buf[..n as usize].to_vec());
        }
        let now = now_ns(t0);
        while let Some((due, f)) = line.pop_due(now) {
            let w = unsafe { libc::write(output, f.as_ptr() as *const libc::c_void, f.len()) };
            if w < 0 {
                line.stats.write_errors += 1;
            } else {
                line.stats.frames_out += 1;
            }
            late.push(((now - due) / 1000).min(u32::MAX as u64) as u32);
        }
        let now = now_ns(t0);
        let due = line.next_due().unwrap_or(now + 10_000_000).min(end_ns);
        if due <= now {
            continue;
        }
        if due - now > spin_ns {
            // Sleep until a frame arrives or shortly before the next release.
            let wait = due - now - spin_ns;
            let ts = libc::timespec {
                tv_sec: (wait / 1_000_000_000) as libc::time_t,
                tv_nsec: (wait % 1_000_000_000) as libc::c_long,
            };
            let mut pfd = libc::pollfd {
                fd: input,
                events: libc::POLLIN,
                revents: 0,
            };
            unsafe { libc::ppoll(&mut pfd, 1, &ts, std::ptr::null()) };
        } else {
            std::hint::spin_loop();
        }
    }
    late.sort_unstable();
    let q = |p: f64| {
        if late.is_empty() {
            0.0
        } else {
            late[((late.len() - 1) as f64 * p).round() as usize] as f64
        }
    };
    line.stats.late_p50_us = q(0.5);
    line.stats.late_p99_us = q(0.99);
    line.stats.late_max_us = q(1.0);
    (line.stats, rt)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every kept frame is released exactly `delay` after it was read, in FIFO order.
    #[test]
    fn frames_leave_exactly_one_delay_after_arrival_in_order() {
        let mut l = DelayLine::new(20_000_000, 0.0, 1, 0);
        for (i, t) in [0u64, 5, 5, 1_000_000, 19_999_999].iter().enumerate() {
            assert!(l.push(*t, vec![i as u8]));
        }
        assert!(l.pop_due(19_999_999).is_none());
        let mut out = Vec::new();
        let mut now = 0;
        while let Some(d) = l.next_due() {
            now = now.max(d);
            while let Some((due, f)) = l.pop_due(now) {
                out.push((due, f[0]));
            }
        }
        assert_eq!(
            out,
            vec![
                (20_000_000, 0),
                (20_000_005, 1),
                (20_000_005, 2),
                (21_000_000, 3),
                (39_999_999, 4)
            ]
        );
    }

    /// Bernoulli loss: over 200 000 frames at p = 1 % the count lost is inside the binomial
    /// 99.9 % interval (mean 2000, sd 44.5 → ±147); same seed ⇒ same drops; another seed or
    /// the other direction ⇒ other drops.
    #[test]
    fn loss_rate_is_bernoulli_p_and_seeded() {
        let drops = |seed: u64, dir: u64| {
            let mut l = DelayLine::new(0, 0.01, seed, dir);
            (0..200_000).map(|i| !l.push(i, Vec::new())).collect::<Vec<bool>>()
        };
        let a = drops(7, 0);
        let n = a.iter().filter(|&&x| x).count();
        assert!((1853..=2147).contains(&n), "lost {n} of 200000 at p = 0.01");
        assert_eq!(a, drops(7, 0));
        assert_ne!(a, drops(8, 0));
        assert_ne!(a, drops(7, 1));
        let mut none = DelayLine::new(0, 0.0, 7, 0);
        assert!((0..10_000).all(|i| none.push(i, Vec::new())));
    }
}
