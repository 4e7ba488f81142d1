//! `mobipath-emu`: see the crate README. Exit codes: 0 done, 1 runtime failure (e.g. cannot
//! create a TUN device), 2 bad arguments or configuration.
use mobipath_emu::config::EmuConfig;
use mobipath_emu::{bench, forward, line::Line, tun, STOP};
use std::io::{BufRead, Write};
use std::os::fd::AsRawFd;
use std::sync::atomic::Ordering;
use std::time::Instant;

const USAGE: &str = "usage: mobipath-emu CONFIG.json\n       mobipath-emu --bench [--offered-mbps R] [--rate-mbps R] [--delay-ms D] [--seconds S] [--spin-us U] [--no-realtime]";

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        None | Some("-h") | Some("--help") => {
            println!("{USAGE}");
            std::process::exit(if args.is_empty() { 2 } else { 0 });
        }
        Some("--bench") => bench_main(&args[1..]),
        Some(path) if args.len() == 1 => run_main(path),
        _ => {
            eprintln!("{USAGE}");
            std::process::exit(2);
        }
    }
}

fn bench_main(args: &[String]) {
    let (mut offered, mut rate, mut delay, mut secs, mut spin, mut rt) =
        (200.0, 1000.0, 10.0, 3.0, 100u64, true);
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
            _ => {
                eprintln!("mobipath-emu: bad flag or value: {flag} {v}\n{USAGE}");
                std::process::exit(2);
            }
        }
    }
    mobipath_emu::install_process_guards();
    let r = bench::run(offered, rate, delay, secs, spin, rt);
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
    mobipath_emu::install_process_guards();
    let (fwd, rev) = cfg.build_link().expect("checked");
    let make = |s: &mobipath_emu::config::Side| {
        tun::create_in_netns(&s.netns, &s.ifname).unwrap_or_else(|e| {
            eprintln!(
                "mobipath-emu: cannot create TUN {} in namespace {}: {e}",
                s.ifname, s.netns
            );
            std::process::exit(1);
        })
    };
    let fa = make(&cfg.a);
    let fb = make(&cfg.b);
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
    let t0 = Instant::now();
    let end_ns = (cfg.duration_s * 1e9) as u64;
    let spin = cfg.spin_us * 1000;
    let rt = cfg.realtime;
    let (a, b) = (fa.as_raw_fd(), fb.as_raw_fd());
    let tf = std::thread::spawn(move || forward::run(Line::new(fwd), a, b, t0, end_ns, spin, rt));
    let tr = std::thread::spawn(move || forward::run(Line::new(rev), b, a, t0, end_ns, spin, rt));
    let rf = tf.join().expect("forward thread");
    let rr = tr.join().expect("reverse thread");
    let elapsed = t0.elapsed().as_secs_f64();
    drop((fa, fb));
    let stats = serde_json::json!({
        "link": cfg.link.name,
        "elapsed_s": elapsed,
        "stopped_by_signal": STOP.load(Ordering::SeqCst),
        "forward": rf,
        "reverse": rr,
    });
    let text = serde_json::to_string_pretty(&stats).unwrap();
    if let Some(p) = &cfg.stats_path {
        if let Err(e) = std::fs::write(p, &text) {
            eprintln!("mobipath-emu: cannot write {}: {e}", p.display());
        }
    }
    println!("{text}");
}
