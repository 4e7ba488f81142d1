//! The `mobipath-emu` command line (see the crate README), shared by the standalone binary and
//! the Python extension (`mobipath._core.emulator_main`, so a plain `pip install` ships the
//! emulator). Exit codes: 0 done, 1 runtime failure (e.g. cannot create a TUN device), 2 bad
//! arguments or configuration. Meant to own its process: it installs signal handlers and may
//! call `std::process::exit`.
use crate::config::EmuConfig;
use crate::{bench, chain::Chain, forward, tun, STOP};
use std::io::{BufRead, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::Instant;

const USAGE: &str = "usage: mobipath-emu CONFIG.json\n       mobipath-emu --bench [--paths N] [--offered-mbps R] [--rate-mbps R] [--delay-ms D] [--seconds S] [--spin-us U] [--no-realtime]\n       mobipath-emu --relay --a NETNS:IF --b NETNS:IF --delay-ms D [--loss P] [--seed N] [--seconds S] [--spin-us U] [--stats PATH] [--no-realtime]";

/// Runs the command line `args` (without the program name); returns the exit code.
pub fn main(args: Vec<String>) -> i32 {
    match args.first().map(String::as_str) {
        None | Some("-h") | Some("--help") => {
            println!("{USAGE}");
            if args.is_empty() {
                2
            } else {
                0
            }
        }
        Some("--bench") => {
            bench_main(&args[1..]);
            0
        }
        Some("--relay") => relay_main(&args[1..]),
        Some(path) if args.len() == 1 => {
            run_main(path);
            0
        }
        _ => {
            eprintln!("{USAGE}");
            2
        }
    }
}

fn bench_main(args: &[String]) {
    let (mut offered, mut rate, mut delay, mut secs, mut spin, mut rt, mut paths) =
        (200.0, 1000.0, 10.0, 3.0, 20u64, true, 1usize);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--no-realtime" {
            rt = false;
            continue;
        }
        let v = it.next().and_then(|v| v.parse::<f64>().ok());
        let Some(v) = v.filter(|v| v.is_finite() && *v >= 0.0) else {
            eprintln!("mobipath-emu: {flag} needs a non-negative number\n{USAGE}");
            std::process::exit(2);
        };
        match flag.as_str() {
            "--offered-mbps" if v > 0.0 => offered = v,
            "--rate-mbps" if v > 0.0 => rate = v,
            "--delay-ms" => delay = v,
            "--seconds" if v > 0.0 && v <= 600.0 => secs = v,
            "--spin-us" if v <= 2000.0 => spin = v as u64,
            "--paths" if (1.0..=64.0).contains(&v) && v.fract() == 0.0 => paths = v as usize,
            _ => {
                eprintln!("mobipath-emu: bad flag or value: {flag} {v}\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    crate::install_process_guards();
    let r = bench::run(paths, offered, rate, delay, secs, spin, rt);
    println!("{}", serde_json::to_string_pretty(&r).unwrap());
}

fn run_main(path: &str) {
    let text = match std::fs::read_to_string(path) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("mobipath-emu: cannot read {path}: {e}");
            std::process::exit(2);
        }
    };
    let cfg = match EmuConfig::from_json(&text, path) {
        Ok(c) => c,
        Err(errs) => {
            for e in errs {
                eprintln!("{e}");
            }
            std::process::exit(2);
        }
    };
    crate::install_process_guards();
    let built = cfg.build_paths().expect("checked");
    let make = |s: &crate::config::Side| {
        tun::create_in_netns(&s.netns, &s.ifname).unwrap_or_else(|e| {
            eprintln!(
                "mobipath-emu: cannot create TUN {} in namespace {}: {e}",
                s.ifname, s.netns
            );
            std::process::exit(1);
        })
    };
    let mut fds = Vec::new();
    let (mut fwd, mut rev) = (Vec::new(), Vec::new());
    for (spec, b) in cfg.paths.iter().zip(built) {
        let fa = make(&spec.a);
        let fb = make(&spec.b);
        let names: Vec<String> = spec.links.iter().map(|l| l.name.clone()).collect();
        let mut rnames = names.clone();
        rnames.reverse();
        fwd.push(forward::Port {
            name: spec.name.clone(),
            link_names: names,
            chain: Chain::new(b.forward),
            input: fa.as_raw_fd(),
            output: fb.as_raw_fd(),
        });
        rev.push(forward::Port {
            name: spec.name.clone(),
            link_names: rnames,
            chain: Chain::new(b.reverse),
            input: fb.as_raw_fd(),
            output: fa.as_raw_fd(),
        });
        fds.push((fa, fb));
    }
    // Captures: every file opened before "ready", so a directory that cannot be written stops
    // the run before it starts.
    let budget = cfg.pcap.as_ref().map(|pc| crate::capture::Budget::new(pc.max_bytes));
    if let (Some(pc), Some(budget)) = (&cfg.pcap, &budget) {
        for (ports, side) in [(&mut fwd, "forward"), (&mut rev, "reverse")] {
            for port in ports.iter_mut() {
                for (name, line) in port.link_names.iter().zip(port.chain.stages_mut()) {
                    if !pc.wants(name) {
                        continue;
                    }
                    let tap_name = format!("{name}.{side}");
                    match crate::capture::LineTap::open(&pc.dir, &tap_name, pc.snaplen, budget.clone()) {
                        Ok(t) => line.set_tap(t),
                        Err(e) => {
                            eprintln!(
                                "mobipath-emu: pcap.dir = {}: cannot write the capture there: {e}",
                                pc.dir.display()
                            );
                            std::process::exit(2);
                        }
                    }
                }
            }
        }
    }
    println!("ready");
    std::io::stdout().flush().ok();
    if cfg.wait_for_start {
        // The caller configures addresses, then writes a line: time zero is the traffic start.
        let mut line = String::new();
        let n = std::io::stdin().lock().read_line(&mut line).unwrap_or(0);
        if n == 0 || STOP.load(Ordering::SeqCst) {
            eprintln!("mobipath-emu: stopped before start");
            std::process::exit(0);
        }
    }
    let timing = forward::Timing {
        t0: Instant::now(),
        end_ns: (cfg.duration_s * 1e9) as u64,
        spin_ns: cfg.spin_us * 1000,
        bin_ns: (cfg.bin_ms * 1e6) as u64,
        realtime: cfg.realtime,
    };
    // Capture timestamps: the wall clock at model time 0.
    let epoch = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    for port in fwd.iter_mut().chain(rev.iter_mut()) {
        for line in port.chain.stages_mut() {
            if let Some(t) = line.tap_mut() {
                t.epoch_ns = epoch;
            }
        }
    }
    let tf = std::thread::spawn(move || forward::run(fwd, timing));
    let tr = std::thread::spawn(move || forward::run(rev, timing));
    let rf = tf.join().expect("forward thread");
    let rr = tr.join().expect("reverse thread");
    let elapsed = timing.t0.elapsed().as_secs_f64();
    drop(fds);
    let stats = serde_json::json!({
        "paths": cfg.paths.iter().map(|p| p.name.clone()).collect::<Vec<_>>(),
        "bin_ms": cfg.bin_ms,
        "elapsed_s": elapsed,
        "stopped_by_signal": STOP.load(Ordering::SeqCst),
        "forward": rf,
        "reverse": rr,
        "pcap": budget.as_ref().map(|b| serde_json::json!({
            "bytes_written": b.used(),
            "warning": b.stopped(),
        })),
    });
    let text = serde_json::to_string_pretty(&stats).unwrap();
    if let Some(p) = &cfg.stats_path {
        if let Err(e) = std::fs::write(p, &text) {
            eprintln!("mobipath-emu: cannot write {}: {e}", p.display());
        }
    }
    println!("{text}");
}

/// `--relay`: the independent reference forwarder ([`crate::relay`]): TUN `--a` (data in) →
/// delay (+ loss) → TUN `--b`, and `--b` → delay → `--a`. Prints "ready" once both TUNs exist,
/// its stats as JSON at the end (also to `--stats`).
fn relay_main(args: &[String]) -> i32 {
    let bad = |m: String| -> i32 {
        eprintln!("mobipath-emu --relay: {m}\n{USAGE}");
        2
    };
    let (mut a, mut b, mut stats_path) = (None, None, None);
    let (mut delay_ms, mut loss, mut seed, mut secs, mut spin_us, mut rt) = (None, 0.0f64, 1u64, 60.0f64, 100u64, true);
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        if flag == "--no-realtime" {
            rt = false;
            continue;
        }
        let Some(v) = it.next() else {
            return bad(format!("{flag} needs a value"));
        };
        let num = |lo: f64, hi: f64| v.parse::<f64>().ok().filter(|x| x.is_finite() && (lo..=hi).contains(x));
        match flag.as_str() {
            "--a" | "--b" => {
                let Some((ns, ifname)) = v
                    .split_once(':')
                    .filter(|(n, i)| !n.is_empty() && !i.is_empty() && i.len() < 16)
                else {
                    return bad(format!(
                        "{flag} = {v}: expected NETNS:IFNAME (IFNAME at most 15 characters)"
                    ));
                };
                let side = Some((ns.to_string(), ifname.to_string()));
                if flag == "--a" {
                    a = side
                } else {
                    b = side
                }
            }
            "--delay-ms" => match num(0.0, 10_000.0) {
                Some(x) => delay_ms = Some(x),
                None => return bad(format!("--delay-ms = {v}: must be in [0, 10000]")),
            },
            "--loss" => match num(0.0, 1.0) {
                Some(x) => loss = x,
                None => return bad(format!("--loss = {v}: must be in [0, 1]")),
            },
            "--seed" => match v.parse::<u64>() {
                Ok(x) => seed = x,
                Err(_) => return bad(format!("--seed = {v}: must be an integer in [0, 2^64)")),
            },
            "--seconds" => match num(0.001, 3600.0) {
                Some(x) => secs = x,
                None => return bad(format!("--seconds = {v}: must be in [0.001, 3600]")),
            },
            "--spin-us" => match num(0.0, 2000.0) {
                Some(x) => spin_us = x as u64,
                None => return bad(format!("--spin-us = {v}: must be in [0, 2000]")),
            },
            "--stats" => stats_path = Some(v.clone()),
            _ => return bad(format!("unknown flag {flag}")),
        }
    }
    let (Some(a), Some(b), Some(delay_ms)) = (a, b, delay_ms) else {
        return bad("--a, --b and --delay-ms are required".into());
    };
    crate::install_process_guards();
    let make = |(ns, ifname): &(String, String)| {
        tun::create_in_netns(ns, ifname)
            .map_err(|e| eprintln!("mobipath-emu: cannot create TUN {ifname} in namespace {ns}: {e}"))
    };
    let (Ok(fa), Ok(fb)) = (make(&a), make(&b)) else {
        return 1;
    };
    println!("ready");
    std::io::stdout().flush().ok();
    let t0 = Instant::now();
    let end_ns = (secs * 1e9) as u64;
    let delay_ns = (delay_ms * 1e6).round() as u64;
    let (ia, ib) = (fa.as_raw_fd(), fb.as_raw_fd());
    let fwd = crate::relay::DelayLine::new(delay_ns, loss, seed, 0);
    let rev = crate::relay::DelayLine::new(delay_ns, 0.0, seed, 1);
    let spin_ns = spin_us * 1000;
    let tf = std::thread::spawn(move || crate::relay::run(fwd, ia, ib, t0, end_ns, spin_ns, rt));
    let tr = std::thread::spawn(move || crate::relay::run(rev, ib, ia, t0, end_ns, spin_ns, rt));
    let (sf, rtf) = tf.join().expect("forward thread");
    let (sr, _) = tr.join().expect("reverse thread");
    drop((fa, fb));
    let stats = serde_json::json!({
        "delay_ms": delay_ms, "loss": loss, "seed": seed, "realtime": rtf,
        "elapsed_s": t0.elapsed().as_secs_f64(), "forward": sf, "reverse": sr,
    });
    let text = serde_json::to_string_pretty(&stats).unwrap();
    if let Some(p) = stats_path {
        if let Err(e) = std::fs::write(&p, &text) {
            eprintln!("mobipath-emu: cannot write {p}: {e}");
        }
    }
    println!("{text}");
    0
}
