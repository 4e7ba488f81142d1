//! One direction's real-time loop: read frames from the input fd, run them through the
//! [`Line`](crate::line::Line), write each to the output fd at its model arrival time, and measure how late it was.
//!
//! Timing: `now` = ns since the shared start instant (monotonic clock). The thread sleeps in
//! `ppoll` on the input fd until `spin` before the next due event (timer slack is set to 1 ns),
//! then busy-waits while still draining input, so a release is not delayed by the wake-up
//! latency of the scheduler — within a CPU budget ([`SpinBudget`]) that also stretches sleeps
//! when wake-ups alone would keep the thread too busy; it wakes only for releases
//! ([`Chain::next_release_bound`]) and reads only the inputs `ppoll` reports ready. Model times
//! never depend on when the loop ran (a late release does not shift later ones): only the
//! release itself can be late, and that lateness is recorded.
use crate::chain::Chain;
use crate::STOP;
use mobipath_sim::core::Time;
use serde::Serialize;
use std::os::fd::RawFd;
use std::sync::atomic::Ordering;
use std::time::Instant;

/// Largest frame read (TUN MTU is 1500; headroom for bigger MTUs).
pub const MAX_FRAME: usize = 65536;
/// Frame buffers kept for reuse at most (beyond that, released ones are freed): more than the
/// frames in flight on a 1 Gbit/s, 10 ms path (~830), bounded so a burst does not pin memory.
pub const POOL_MAX: usize = 4096;
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
    /// The direction's packet capture, if taken (`crate::capture`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pcap: Option<serde_json::Value>,
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

/// Keeps the loop's busy share (its thread's CPU time over wall time) under the kernel's limits
/// for a real-time thread.
///
/// A `SCHED_FIFO` thread that runs more than `sched_rt_runtime_us` (950 ms) of a
/// `sched_rt_period_us` (1 s) is stopped for the rest of that second, and since Linux 6.12 the
/// fair-class deadline server likewise runs starved ordinary tasks on that CPU for up to 50 ms
/// of each second: every release due then is late by up to 50 ms (measured: `mobipath bench
/// --emulator --ceiling` showed 38–51 ms maxima from 600 Mbit/s up, and the kernel logged
/// "sched: RT throttling activated"). The busy-wait before each release is what fills the CPU
/// at high packet rates (at 1 Gbit/s events are ~12 µs apart, less than the 20 µs spin, so the
/// loop never sleeps). So the spin is allowed only while the last window's busy share stayed
/// within `max_share`; otherwise the next window waits in `ppoll` up to the event itself (timer
/// slack is 1 ns), trading a few µs of wake-up latency for being throttled far less often.
///
/// The share is the thread's CPU time (`CLOCK_THREAD_CPUTIME_ID`, clock_gettime(2)), read once
/// per window, which is what the kernel accounts. (Counting the wall time spent inside `ppoll`
/// as idle would be wrong: a `ppoll` of a few µs is mostly spent on the CPU, and with such a
/// budget the forwarding thread was on the CPU 95–98 % of the wall time from 600 to 1600 Mbit/s,
/// `/proc/…/schedstat`.)
///
/// Without the spin, each release still costs a timer wake-up, and on this VM those are dear
/// (`perf` at 600 Mbit/s, spin off: about half the thread's samples inside `ppoll`, mostly
/// arming the timer and switching tasks), so at ~50 k releases/s the thread stayed ~93 % busy
/// and was still stalled. A window over budget without the spin therefore *coalesces* wake-ups: a sleep lasts
/// at least a quantum, 10 µs, doubled after each further window over budget up to
/// [`MAX_QUANTUM_NS`] and halved after each window within it, and every release due by the
/// wake-up goes out in that pass. That makes releases late by at most the
/// quantum — never early, model times unchanged — instead of 50 ms late in a stall.
pub struct SpinBudget {
    window_ns: u64,
    max_share: f64,
    start: Time,
    cpu_start: Option<u64>,
    /// 0: spin; 1: no spin; k ≥ 2: no spin and sleeps of at least 10 µs · 2^(k−2).
    level: u32,
}

/// The longest quantum a sleep is stretched to when the loop is over its CPU budget; keeps the
/// added lateness well under the emulator's p99 release-error target of 200 µs.
pub const MAX_QUANTUM_NS: u64 = 80_000;
const QUANTUM0_NS: u64 = 10_000;
const MAX_LEVEL: u32 = 2 + (MAX_QUANTUM_NS / QUANTUM0_NS).ilog2();

/// The calling thread's CPU time in ns (`CLOCK_THREAD_CPUTIME_ID`); `None` if unavailable.
pub fn thread_cpu_ns() -> Option<u64> {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    let r = unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut ts) };
    (r == 0).then(|| ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64)
}

impl SpinBudget {
    /// A budget whose first window starts at `now`, with the thread's CPU time then (`cpu`).
    pub fn new(now: Time, cpu: Option<u64>, window_ns: u64, max_share: f64) -> Self {
        Self {
            window_ns,
            max_share,
            start: now,
            cpu_start: cpu,
            level: 0,
        }
    }
    /// The spin (`spin_ns` or 0) and the shortest sleep (0 or a quantum) to use now. When
    /// `window_ns` has passed it closes the window, reading the thread's CPU time with `cpu`
    /// (called at most once per window, as the clock is a system call): one level more frugal
    /// if the window was more than `max_share` busy, one less otherwise. Without a CPU clock
    /// the last decision stands.
    pub fn pacing(&mut self, now: Time, spin_ns: u64, cpu: impl FnOnce() -> Option<u64>) -> (u64, u64) {
        let span = now.saturating_sub(self.start);
        if span >= self.window_ns {
            let c = cpu();
            if let (Some(c), Some(c0)) = (c, self.cpu_start) {
                let busy = c.saturating_sub(c0) as f64 / span as f64;
                self.level = if busy <= self.max_share {
                    self.level.saturating_sub(1)
                } else {
                    (self.level + 1).min(MAX_LEVEL)
                };
            }
            self.start = now;
            self.cpu_start = c;
        }
        match self.level {
            0 => (spin_ns, 0),
            1 => (0, 0),
            k => (0, QUANTUM0_NS << (k - 2)),
        }
    }
}

/// Window and busy-share budget of [`SpinBudget`]: 100 ms windows at most 80 % busy keep every
/// second well under the kernel's 95 %.
pub const SPIN_WINDOW_NS: u64 = 100_000_000;
pub const SPIN_MAX_SHARE: f64 = 0.8;

/// Reuses frame buffers: a released frame's `Vec` (after its bytes were written) becomes the
/// next read frame's buffer, so forwarding allocates nothing per frame once warm.
#[derive(Default)]
pub struct FramePool {
    free: Vec<Vec<u8>>,
}

impl FramePool {
    /// A buffer holding a copy of `bytes`.
    pub fn take(&mut self, bytes: &[u8]) -> Vec<u8> {
        let mut v = self.free.pop().unwrap_or_default();
        v.clear();
        v.extend_from_slice(bytes);
        v
    }
    /// Gives a buffer back for reuse (freed if the pool already holds [`POOL_MAX`]).
    pub fn give(&mut self, v: Vec<u8>) {
        if self.free.len() < POOL_MAX {
            self.free.push(v);
        }
    }
    pub fn len(&self) -> usize {
        self.free.len()
    }
    pub fn is_empty(&self) -> bool {
        self.free.is_empty()
    }
}

/// Runs one direction of every path until `end_ns` (ns since `t0`) or [`STOP`]. One thread
/// serves all paths so that N paths cost no more spinning cores than one. Inputs must be
/// non-blocking.
///
/// System calls per pass: one `ppoll` over every input (zero timeout while
/// spinning), then reads only on the inputs it reports ready, each drained to `EAGAIN` (before,
/// every pass of the spin read every input: ~9 `read`s returning `EAGAIN` per forwarded packet
/// at 1000 Mbit/s). Frames keep one `read`/`write` each: `recvmmsg(2)`/`sendmmsg(2)` apply to
/// sockets only — the benchmark's socketpairs, never the TUN devices of a real run — and
/// measured no better than this on the benchmark (same CPU share and release errors, 5 pairs).
pub fn run(mut ports: Vec<Port>, t: Timing) -> DirReport {
    let realtime = t.realtime && try_realtime();
    let mut buf = vec![0u8; MAX_FRAME];
    let mut pool = FramePool::default();
    let seed = ports.first().map_or(1, |p| p.input as u64);
    let mut timing = TimingErrors::new(seed * 7919 + 1);
    let mut c: Vec<Counters> = ports.iter().map(|_| Counters::default()).collect();
    let max_bins = (t.end_ns / t.bin_ns.max(1) + 1) as usize;
    let mut pfds: Vec<libc::pollfd> = ports
        .iter()
        .map(|p| libc::pollfd {
            fd: p.input,
            events: libc::POLLIN,
            revents: 0,
        })
        .collect();
    let mut budget = SpinBudget::new(now_ns(t.t0), thread_cpu_ns(), SPIN_WINDOW_NS, SPIN_MAX_SHARE);
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
                pool.give(frame);
            }
        }
        // 2. Wait for input or the next release (sleep, then spin); while spinning, a
        // zero-timeout ppoll tells which inputs have frames. Only releases need a wake-up:
        // departures and hand-overs are applied at their model times by the next `advance`
        // (see `Chain::next_release_bound`).
        let next = ports
            .iter()
            .filter_map(|p| p.chain.next_release_bound())
            .min()
            .unwrap_or(Time::MAX)
            .min(t.end_ns);
        let now = now_ns(t.t0);
        let wait = next.saturating_sub(now);
        let (spin, quantum) = budget.pacing(now, t.spin_ns, thread_cpu_ns);
        let sleep = if wait > spin {
            (wait - spin).max(quantum).min(MAX_SLEEP_NS)
        } else {
            0
        };
        for p in pfds.iter_mut() {
            p.revents = 0;
        }
        let ts = libc::timespec {
            tv_sec: (sleep / 1_000_000_000) as _,
            tv_nsec: (sleep % 1_000_000_000) as _,
        };
        let r = unsafe { libc::ppoll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, &ts, std::ptr::null()) };
        // EINTR (a signal: STOP is checked at the top) or any other ppoll failure: try every
        // input rather than trust `revents`, so no input is ever left unread.
        let all = r < 0;
        // 3. Drain the inputs that have frames (non-blocking).
        'ports: for (i, (port, c)) in ports.iter_mut().zip(c.iter_mut()).enumerate() {
            if !all && pfds[i].revents == 0 {
                continue;
            }
            loop {
                let n = unsafe { libc::read(port.input, buf.as_mut_ptr().cast(), buf.len()) };
                if n <= 0 {
                    break;
                }
                c.frames_in += 1;
                let now = now_ns(t.t0);
                port.chain.offer(now, pool.take(&buf[..n as usize]));
                // Keep releases on time under a flood of input.
                if port.chain.next_release_bound().is_some_and(|e| e <= now) {
                    break 'ports;
                }
            }
        }
    }
    DirReport {
        paths: ports
            .iter_mut()
            .zip(c)
            .map(|(p, c)| PathReport {
                path: p.name.clone(),
                links: p
                    .link_names
                    .iter()
                    .zip(p.chain.stages_mut())
                    .map(|(n, l)| LinkReport {
                        name: n.clone(),
                        stats: l.link.stats().clone(),
                        pcap: l.tap_mut().map(|t| t.finish()),
                    })
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
        let cpu = |c: u64| move || Some(c);
        let mut b = SpinBudget::new(0, Some(0), 100 * ms, 0.8);
        let never = || -> Option<u64> { panic!("the CPU clock is read only when a window closes") };
        assert_eq!(b.pacing(0, 20_000, never), (20_000, 0));
        assert_eq!(
            b.pacing(50 * ms, 20_000, never),
            (20_000, 0),
            "a window is judged only when it ends"
        );
        assert_eq!(
            b.pacing(100 * ms, 20_000, cpu(90 * ms)),
            (0, 0),
            "90 % busy > 80 %: no spin next window"
        );
        assert_eq!(b.pacing(150 * ms, 20_000, never), (0, 0));
        assert_eq!(
            b.pacing(200 * ms, 20_000, cpu(140 * ms)),
            (20_000, 0),
            "50 % busy: spin again"
        );
        // Exactly 80 % busy is within the budget.
        assert_eq!(b.pacing(300 * ms, 20_000, cpu(220 * ms)), (20_000, 0));
        // No CPU clock: the last decision stands, and the next reading starts a fresh window.
        assert_eq!(b.pacing(400 * ms, 20_000, || None), (20_000, 0));
        assert_eq!(
            b.pacing(500 * ms, 20_000, cpu(500 * ms)),
            (20_000, 0),
            "no baseline: no verdict"
        );
        assert_eq!(b.pacing(600 * ms, 20_000, cpu(599 * ms)), (0, 0), "99 % busy");
    }

    /// Still over budget without the spin: sleeps are stretched to a quantum that doubles per
    /// busy window up to MAX_QUANTUM_NS, and shrinks back one step per window within budget.
    #[test]
    fn windows_over_budget_without_the_spin_coalesce_wake_ups_up_to_a_bound() {
        let ms = 1_000_000;
        let mut b = SpinBudget::new(0, Some(0), 100 * ms, 0.8);
        let mut t = 0;
        let mut cpu = 0;
        let mut window = |b: &mut SpinBudget, busy: u64| {
            t += 100 * ms;
            cpu += busy * ms;
            b.pacing(t, 20_000, || Some(cpu))
        };
        assert_eq!(window(&mut b, 100), (0, 0));
        assert_eq!(window(&mut b, 93), (0, 10_000));
        assert_eq!(window(&mut b, 90), (0, 20_000));
        assert_eq!(window(&mut b, 85), (0, 40_000));
        assert_eq!(window(&mut b, 85), (0, 80_000));
        assert_eq!(window(&mut b, 85), (0, MAX_QUANTUM_NS), "bounded");
        assert_eq!(MAX_QUANTUM_NS, 80_000);
        assert_eq!(window(&mut b, 60), (0, 40_000));
        assert_eq!(window(&mut b, 60), (0, 20_000));
        assert_eq!(window(&mut b, 60), (0, 10_000));
        assert_eq!(window(&mut b, 60), (0, 0));
        assert_eq!(window(&mut b, 60), (20_000, 0));
    }

    #[test]
    fn the_thread_cpu_clock_counts_work_not_sleep() {
        let c0 = thread_cpu_ns().expect("CLOCK_THREAD_CPUTIME_ID");
        std::thread::sleep(std::time::Duration::from_millis(30));
        let c1 = thread_cpu_ns().unwrap();
        assert!(c1 - c0 < 10_000_000, "sleeping 30 ms cost {} ns of CPU", c1 - c0);
        let t = Instant::now();
        let mut x = 0u64;
        while t.elapsed().as_millis() < 30 {
            x = x.wrapping_add(1);
            std::hint::black_box(x);
        }
        assert!(thread_cpu_ns().unwrap() - c1 >= 5_000_000, "30 ms of spinning counts");
    }

    #[test]
    fn the_pool_reuses_buffers_and_stays_bounded() {
        let mut p = FramePool::default();
        let v = p.take(&[1, 2, 3]);
        assert_eq!(v, vec![1, 2, 3]);
        let ptr = v.as_ptr();
        p.give(v);
        let w = p.take(&[9]);
        assert_eq!(w, vec![9]);
        assert_eq!(w.as_ptr(), ptr, "the released buffer is reused");
        for _ in 0..POOL_MAX + 10 {
            p.give(Vec::with_capacity(8));
        }
        assert_eq!(p.len(), POOL_MAX);
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
