//! Machinery benchmark: the forwarding loop between `AF_UNIX` datagram socketpairs (one pair per path) (no
//! namespaces, no root), fed by a paced generator and drained by a sink. It measures what the
//! emulator itself sustains (packets/s, Mbit/s) and its release-time error distribution; the
//! kernel's TUN path adds its own cost on top (measured end to end by the Python tests).
use crate::chain::Chain;
use crate::forward::{self, DirReport};
use mobipath_sim::link::LinkDir;
use serde::Serialize;
use std::os::fd::RawFd;
use std::time::{Duration, Instant};

#[derive(Debug, Serialize)]
pub struct BenchReport {
    pub paths: usize,
    pub offered_mbps: f64,
    pub link_rate_mbps: f64,
    pub delay_ms: f64,
    pub seconds: f64,
    pub frame_bytes: usize,
    pub sent_packets: u64,
    pub received_packets: u64,
    pub received_mbps: f64,
    pub received_pps: f64,
    pub emulator: DirReport,
}

fn socketpair() -> (RawFd, RawFd) {
    let mut fds = [0; 2];
    let r = unsafe {
        libc::socketpair(
            libc::AF_UNIX,
            libc::SOCK_DGRAM | libc::SOCK_CLOEXEC,
            0,
            fds.as_mut_ptr(),
        )
    };
    assert_eq!(r, 0, "socketpair: {}", std::io::Error::last_os_error());
    for fd in fds {
        let big: libc::c_int = 8 << 20;
        unsafe {
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_SNDBUF,
                (&big as *const libc::c_int).cast(),
                4,
            );
            libc::setsockopt(
                fd,
                libc::SOL_SOCKET,
                libc::SO_RCVBUF,
                (&big as *const libc::c_int).cast(),
                4,
            );
        }
    }
    (fds[0], fds[1])
}

/// Offers `offered_mbps` in total, spread evenly over `paths` paths, of 1500-byte frames for
/// `seconds`; each path is a link of `link_rate_mbps` and `delay_ms`, all served by one
/// forwarding thread as in a real run. Reports what came out.
pub fn run(
    paths: usize,
    offered_mbps: f64,
    link_rate_mbps: f64,
    delay_ms: f64,
    seconds: f64,
    spin_us: u64,
    realtime: bool,
) -> BenchReport {
    const FRAME: usize = 1500;
    let t0 = Instant::now();
    let run_ns = (seconds * 1e9) as u64;
    let end_ns = run_ns + (delay_ms * 1e6) as u64 + 200_000_000;
    let mut ports = Vec::new();
    let mut gens = Vec::new();
    let mut sinks = Vec::new();
    let mut fds = Vec::new();
    for i in 0..paths.max(1) {
        let (gen_w, emu_r) = socketpair();
        let (emu_w, sink_r) = socketpair();
        unsafe { libc::fcntl(emu_r, libc::F_SETFL, libc::O_NONBLOCK) };
        ports.push(forward::Port {
            name: format!("bench-{i}"),
            link_names: vec![format!("bench-{i}")],
            chain: Chain::new(vec![LinkDir::constant(link_rate_mbps, delay_ms, 100_000)]),
            input: emu_r,
            output: emu_w,
        });
        gens.push(gen_w);
        fds.extend([gen_w, emu_r, emu_w, sink_r]);
        sinks.push(std::thread::spawn(move || sink(sink_r, t0, end_ns)));
    }
    let timing = forward::Timing {
        t0,
        end_ns,
        spin_ns: spin_us * 1000,
        bin_ns: 1_000_000_000,
        realtime,
    };
    let emu = std::thread::spawn(move || forward::run(ports, timing));
    // Paced generator: every 100 µs, send what the offered rate allows so far, round robin.
    let frame = vec![0x45u8; FRAME];
    let per_ns = offered_mbps * 1e6 / 8.0 / FRAME as f64 / 1e9;
    let mut sent = 0u64;
    // Frames due by the last tick before `run_ns`; a backlog (the generator starved of CPU) is
    // still sent after `run_ns`, as a blocking write used to, but only until `give_up`, well
    // before the emulator stops reading at `end_ns`.
    let mut target = 0u64;
    let give_up = run_ns + 100_000_000;
    loop {
        let now = forward::now_ns(t0);
        if crate::STOP.load(std::sync::atomic::Ordering::Relaxed) {
            break;
        }
        if now < run_ns {
            target = (now as f64 * per_ns) as u64;
        } else if sent >= target || now >= give_up {
            break;
        }
        while sent < target {
            let fd = gens[(sent % gens.len() as u64) as usize];
            // Never block: a blocking write could outlive the emulator thread (a generator
            // starved of CPU on a loaded machine, still catching up when the emulator stopped
            // reading), and the bench then hung for good (seen once in 25 runs at 1600 Mbit/s,
            // load average 4.5). A full input is retried on the next tick; frames never sent
            // are not counted, so `sent_packets` shows any shortfall.
            let r = unsafe { libc::send(fd, frame.as_ptr().cast(), FRAME, libc::MSG_DONTWAIT) };
            if r < 0 {
                break;
            }
            sent += 1;
        }
        std::thread::sleep(Duration::from_micros(100));
    }
    let report = emu.join().expect("emulator thread");
    let received: u64 = sinks.into_iter().map(|s| s.join().expect("sink thread")).sum();
    for fd in fds {
        unsafe { libc::close(fd) };
    }
    BenchReport {
        paths: paths.max(1),
        offered_mbps,
        link_rate_mbps,
        delay_ms,
        seconds,
        frame_bytes: FRAME,
        sent_packets: sent,
        received_packets: received,
        received_mbps: received as f64 * FRAME as f64 * 8.0 / seconds / 1e6,
        received_pps: received as f64 / seconds,
        emulator: report,
    }
}

fn sink(fd: RawFd, t0: Instant, end_ns: u64) -> u64 {
    let mut buf = vec![0u8; 65536];
    let mut n = 0u64;
    let tv = libc::timeval {
        tv_sec: 0,
        tv_usec: 200_000,
    };
    unsafe {
        libc::setsockopt(
            fd,
            libc::SOL_SOCKET,
            libc::SO_RCVTIMEO,
            (&tv as *const libc::timeval).cast(),
            16,
        )
    };
    loop {
        let r = unsafe { libc::read(fd, buf.as_mut_ptr().cast(), buf.len()) };
        if r > 0 {
            n += 1;
        } else if forward::now_ns(t0) > end_ns {
            return n;
        }
    }
}
