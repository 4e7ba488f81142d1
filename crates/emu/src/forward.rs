//! One direction's real-time loop: read frames from the input fd, run them through the
//! [`Line`], write each to the output fd at its model arrival time, and measure how late it was.
//!
//! Timing: `now` = ns since the shared start instant (monotonic clock). The thread sleeps in
//! `ppoll` on the input fd until `spin` before the next due event (timer slack is set to 1 ns),
//! then busy-waits while still draining input, so a release is not delayed by the wake-up
//! latency of the scheduler. Model times never depend on when the loop ran (a late release does
//! not shift later ones): only the release itself can be late, and that lateness is recorded.
use crate::chain::Chain;
use crate::STOP;
use mobipath_sim::core::Time;
use serde::Serialize;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Largest frame read (TUN MTU is 1500; headroom for bigger MTUs).
pub const MAX_FRAME: usize = 65536;
/// Longest single sleep, so STOP and the end of the run are noticed promptly.
const MAX_SLEEP_NS: u64 = 20_000_000;

/// Release-time errors (actual − intended), in ns. Keeps every sample up to a cap, then a
/// uniform reservoir, so p50/p99 stay exact for short runs and unbiased for long ones.
#[derive(Debug, Default)]
pub struct TimingErrors {
    samples: Vec<u64>,
    seen: u64,
    max: u64,
    sum: u128,
    rng: u64,
}

const RESERVOIR: usize = 1 << 20;

impl TimingErrors {
    pub fn record(&mut self, late_ns: u64) {
        self.seen += 1;
        self.max = self.max.max(late_ns);
        self.sum += late_ns as u128;
        if self.samples.len() < RESERVOIR {
            self.samples.push(late_ns);
        } else {
            // xorshift64: a cheap stream for reservoir sampling.
            self.rng ^= self.rng << 13;
            self.rng ^= self.rng >> 7;
            self.rng ^= self.rng << 17;
            let j = (self.rng % self.seen) as usize;
            if j < RESERVOIR {
                self.samples[j] = late_ns;
            }
        }
    }

    pub fn summary(&self) -> TimingSummary {
        let mut s = self.samples.clone();
        s.sort_unstable();
        let q = |p: f64| -> f64 {
            if s.is_empty() {
                return 0.0;
            }
            let i = ((p * s.len() as f64).ceil() as usize).clamp(1, s.len()) - 1;
            s[i] as f64 / 1e3
        };
        TimingSummary {
            packets: self.seen,
            p50_us: q(0.50),
            p90_us: q(0.90),
            p99_us: q(0.99),
            p999_us: q(0.999),
            max_us: self.max as f64 / 1e3,
            mean_us: if self.seen > 0 {
                self.sum as f64 / self.seen as f64 / 1e3
            } else {
                0.0
            },
        }
    }

    pub fn new(seed: u64) -> TimingErrors {
        TimingErrors {
            rng: seed | 1,
            ..Default::default()
        }
    }
}

/// Distribution of release lateness (actual − intended), in µs.
#[derive(Clone, Debug, Serialize, PartialEq)]
pub struct TimingSummary {
    pub packets: u64,
    pub p50_us: f64,
    pub p90_us: f64,
    pub p99_us: f64,
    pub p999_us: f64,
    pub max_us: f64,
    pub mean_us: f64,
}

/// What one path did in one direction.
#[derive(Clone, Debug, Serialize)]
pub struct PathReport {
    pub path: String,
    /// Each link's counters, in the order this direction crosses them.
    pub links: Vec<LinkReport>,
    /// Frames the output refused (EAGAIN/ENOBUFS), i.e. lost outside the model.
    pub write_errors: u64,
    pub frames_in: u64,
    pub frames_out: u64,
    pub bytes_out: u64,
    /// IP bytes released per bin of `bin_ms`, by intended arrival time.
    pub bin_bytes: Vec<u64>,
}

#[derive(Clone, Debug, Serialize)]
pub struct LinkReport {
    pub name: String,
    pub stats: mobipath_sim::link::LinkStats,
}

/// What one direction (one thread, every path) did.
#[derive(Clone, Debug, Serialize)]
pub struct DirReport {
    pub paths: Vec<PathReport>,
    /// Release lateness over every path of this direction.
    pub timing: TimingSummary,
    /// Whether the thread ran with `SCHED_FIFO`.
    pub realtime: bool,
}

/// One path's direction inside a forwarding thread: frames read from `input` cross `chain`
/// and are written to `output`.
pub struct Port {
    pub name: String,
    pub link_names: Vec<String>,
    pub chain: Chain,
    pub input: RawFd,
    pub output: RawFd,
}

/// Puts the calling thread in the `SCHED_FIFO` class (priority 10) so the forwarding loop is not
/// queued behind ordinary processes on a busy machine; false if not permitted. The busy-wait is
/// bounded (`spin_us` before each event) and the kernel's RT throttling still applies.
pub fn try_realtime() -> bool {
    let p = libc::sched_param { sched_priority: 10 };
    unsafe { libc::sched_setscheduler(0, libc::SCHED_FIFO, &p) == 0 }
}

pub fn now_ns(t0: Instant) -> Time {
    t0.elapsed().as_nanos() as Time
}

#[derive(Default)]
struct Counters {
    write_errors: u64,
    frames_in: u64,
    frames_out: u64,
    bytes_out: u64,
    bins: Vec<u64>,
}

/// Keeps the loop's busy share (wall time not asleep in `ppoll`) under the kernel's RT throttling.
///
/// A `SCHED_FIFO` thread that runs more than `sched_rt_runtime_us` (950 ms) of a
/// `sched_rt_period_us` (1 s) is stopped for the rest of that second: every release due then is
/// late by up to 50 ms (measured: `mobipath bench --emulator --ceiling` showed 38–51 ms maxima from
/// 600 Mbit/s up, and the kernel logged "sched: RT throttling activated"). The busy-wait before
/// each release is what fills the CPU at high packet rates (at 1 Gbit/s events are ~12 µs apart,
/// less than the 20 µs spin, so the loop never sleeps). So the spin is allowed only while the
/// last window's busy share stayed within `max_share`; otherwise the next window waits in
/// `ppoll` up to the event itself (timer slack is 1 ns), trading a few µs of wake-up latency for
/// being throttled far less often (maxima of tens of ms remain in some runs above 600 Mbit/s:
/// README, Performance, Emulator).
pub struct SpinBudget {
    window_ns: u64,
    max_share: f64,
    start: Time,
    slept: u64,
    spin: bool,
}

impl SpinBudget {
    pub fn new(now: Time, window_ns: u64, max_share: f64) -> Self {
        Self { window_ns, max_share, start: now, slept: 0, spin: true }
    }
    /// Time spent asleep in `ppoll`.
    pub fn slept(&mut self, ns: u64) {
        self.slept += ns;
    }
    /// The spin to use now (`spin_ns` or 0); closes a window when `window_ns` has passed.
    pub fn spin_ns(&mut self, now: Time, spin_ns: u64) -> u64 {
        let span = now.saturating_sub(self.start);
        if span >= self.window_ns {
            let busy = 1.0 - (self.slept.min(span) as f64 / span as f64);
            self.spin = busy <= self.max_share;
            self.start = now;
            self.slept = 0;
        }
        if self.spin {
            spin_ns
        } else {
            0
        }
    }
}

/// Window and busy-share budget of [`SpinBudget`]: 100 ms windows at most 80 % busy keep every
/// second well under the kernel's 95 %.
pub const SPIN_WINDOW_NS: u64 = 100_000_000;
pub const SPIN_MAX_SHARE: f64 = 0.8;

/// Runs one direction of every path until `end_ns` (ns since `t0`) or [`STOP`]. One thread
/// serves all paths so that N paths cost no more spinning cores than one. Inputs must be
/// non-blocking.
pub fn run(mut ports: Vec<Port>, t: Timing) -> DirReport {
    let realtime = t.realtime && try_realtime();
    let mut buf = vec![0u8; MAX_FRAME];
    let seed = ports.first().map_or(1, |p| p.input as u64);
    let mut timing = TimingErrors::new(seed * 7919 + 1);
    let mut c: Vec<Counters> = ports.iter().map(|_| Counters::default()).collect();
    let max_bins = (t.end_ns / t.bin_ns.max(1) + 1) as usize;
    let mut pfds: Vec<libc::pollfd> = ports
        .iter()
        .map(|p| libc::pollfd { fd: p.input, events: libc::POLLIN, revents: 0 })
        .collect();
    let mut budget = SpinBudget::new(now_ns(t.t0), SPIN_WINDOW_NS, SPIN_MAX_SHARE);
    loop {
        let now = now_ns(t.t0);
        if now >= t.end_ns || STOP.load(Ordering::Relaxed) {
            break;
        }
        // 1. Releases due by now.
        for (port, c) in ports.iter_mut().zip(c.iter_mut()) {
            port.chain.advance(now);
            while let Some((at, frame)) = port.chain.pop_due(now) {
                let n = unsafe { libc::write(port.output, frame.as_ptr().cast(), frame.len()) };
                let done = now_ns(t.t0);
                if n < 0 {
                    c.write_errors += 1;
                } else {
                    c.frames_out += 1;
                    c.bytes_out += frame.len() as u64;
                    let k = (at / t.bin_ns.max(1)) as usize;
                    if k < max_bins {
                        if c.bins.len() <= k {
                            c.bins.resize(k + 1, 0);
                        }
                        c.bins[k] += frame.len() as u64;
                    }
                    timing.record(done.saturating_sub(at));
                }
            }
        }
        // 2. Wait for input or the next event (sleep, then spin).
        let next = ports
            .iter()
            .filter_map(|p| p.chain.next_event())
            .min()
            .unwrap_or(Time::MAX)
            .min(t.end_ns);
        let now = now_ns(t.t0);
        let wait = next.saturating_sub(now);
        let spin = budget.spin_ns(now, t.spin_ns);
        let sleep = if wait > spin {
            (wait - spin).min(MAX_SLEEP_NS)
        } else {
            0
        };
        if sleep > 0 {
            let ts = libc::timespec {
                tv_sec: (sleep / 1_000_000_000) as _,
                tv_nsec: (sleep % 1_000_000_000) as _,
            };
            unsafe {
                libc::ppoll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, &ts, std::ptr::null())
            };
            budget.slept(now_ns(t.t0).saturating_sub(now));
        }
        // 3. Drain the inputs (non-blocking).
        'ports: for (port, c) in ports.iter_mut().zip(c.iter_mut()) {
            loop {
                let n = unsafe { libc::read(port.input, buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    break;
                }
                c.frames_in += 1;
                let now = now_ns(t.t0);
                port.chain.offer(now, buf[..n as usize].to_vec());
                // Keep releases on time under a flood of input.
                if port.chain.next_event().is_some_and(|e| e <= now) {
                    break 'ports;
                }
            }
        }
        for p in pfds.iter_mut() {
            p.revents = 0;
        }
    }
    DirReport {
        paths: ports
            .iter()
            .zip(c)
            .map(|(p, c)| PathReport {
                path: p.name.clone(),
                links: p
                    .link_names
                    .iter()
                    .zip(p.chain.stages())
                    .map(|(n, l)| LinkReport { name: n.clone(), stats: l.link.stats().clone() })
                    .collect(),
                write_errors: c.write_errors,
                frames_in: c.frames_in,
                frames_out: c.frames_out,
                bytes_out: c.bytes_out,
                bin_bytes: c.bins,
            })
            .collect(),
        timing: timing.summary(),
        realtime,
    }
}

/// The clock and pacing shared by the direction threads.
#[derive(Clone, Copy)]
pub struct Timing {
    pub t0: Instant,
    pub end_ns: Time,
    pub spin_ns: u64,
    pub bin_ns: u64,
    pub realtime: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_spin_stops_for_a_window_after_a_busy_one_and_resumes_after_an_idle_one() {
        let ms = 1_000_000;
        let mut b = SpinBudget::new(0, 100 * ms, 0.8);
        assert_eq!(b.spin_ns(0, 20_000), 20_000);
        b.slept(10 * ms); // 90 % busy
        assert_eq!(b.spin_ns(50 * ms, 20_000), 20_000, "a window is judged only when it ends");
        assert_eq!(b.spin_ns(100 * ms, 20_000), 0, "90 % busy > 80 %: no spin next window");
        b.slept(50 * ms); // 50 % busy
        assert_eq!(b.spin_ns(150 * ms, 20_000), 0);
        assert_eq!(b.spin_ns(200 * ms, 20_000), 20_000, "50 % busy: spin again");
        b.slept(20 * ms); // exactly 80 % busy is within the budget
        assert_eq!(b.spin_ns(300 * ms, 20_000), 20_000);
        // Slept time beyond the window (a long ppoll) counts as an idle window, not a negative share.
        b.slept(500 * ms);
        assert_eq!(b.spin_ns(400 * ms, 20_000), 20_000);
    }

    #[test]
    fn percentiles_are_nearest_rank() {
        let mut t = TimingErrors::new(1);
        for i in 1..=100u64 {
            t.record(i * 1000);
        }
        let s = t.summary();
        assert_eq!(s.packets, 100);
        assert_eq!(s.p50_us, 50.0);
        assert_eq!(s.p99_us, 99.0);
        assert_eq!(s.max_us, 100.0);
        assert!((s.mean_us - 50.5).abs() < 1e-9);
        assert_eq!(TimingErrors::new(1).summary().p99_us, 0.0);
    }
}
