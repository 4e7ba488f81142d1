//! PHA-D's fail-safe on the real kernel (root only; otherwise each test prints why it skipped and
//! passes). Each test builds one network namespace `mp-<pid>-p<tag>` with two MPTCP endpoints
//! (ids 1 and 2 on veth interfaces), runs `mobipath-proxy pha-d` in it fed by a GPS source the
//! test controls (a fake gpsd on TCP, or NMEA over UDP, inside the namespace), drives the train
//! into operator A's handover range until endpoint 1 is backup, then breaks the GPS in one way
//! and asserts, with `ip mptcp endpoint show`, that every endpoint is regular within the stated
//! time. Namespaces are removed on drop; every wait is bounded.
use std::io::{Read, Write};
use std::net::{TcpListener, UdpSocket};
use std::os::fd::AsRawFd;
use std::process::{Child, Command};
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use mobipath_proxy::phad::track::Track;

static SERIAL: Mutex<()> = Mutex::new(());
const BIN: &str = env!("CARGO_BIN_EXE_mobipath-proxy");
const TRACK: &str = "lat,lon\n37.0,127.0\n37.0,127.1\n";
/// Operator A hands over at [1000, 1100] m, B at [5000, 5100] m.
const TABLE: &str = "# mobipath handover table v2\n# runs = 1\n# min_support = 1\noperator,start_m,end_m,count\nA,1000,1100,1\nB,5000,5100,1\n";
const SPEED: f64 = 80.0;
const START_M: f64 = 930.0;

fn skip_reason() -> Option<String> {
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if !std::path::Path::new("/proc/sys/net/mptcp/enabled").exists() {
        return Some("no MPTCP in this kernel".into());
    }
    if Command::new("ip").arg("-V").output().is_err() {
        return Some("ip (iproute2) missing".into());
    }
    None
}

macro_rules! skip_unless_able {
    () => {
        if let Some(why) = skip_reason() {
            eprintln!("skipped: {why}");
            return;
        }
    };
}

fn sh(args: &[&str]) {
    let out = Command::new(args[0]).args(&args[1..]).output().unwrap();
    assert!(
        out.status.success(),
        "`{}`: {}",
        args.join(" "),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// What the fake GPS sends next.
const SEND: u8 = 0;
const SILENT: u8 = 1;
const GARBAGE: u8 = 2;
const OFF_TRACK: u8 = 3;
const JUMP: u8 = 4;
const KILL: u8 = 5;

struct Ns {
    name: String,
    dir: std::path::PathBuf,
    child: Option<Child>,
    mode: Arc<AtomicU8>,
    feeder: Option<std::thread::JoinHandle<()>>,
}

impl Drop for Ns {
    fn drop(&mut self) {
        self.mode.store(KILL, Ordering::SeqCst);
        if let Some(mut c) = self.child.take() {
            let _ = c.kill();
            let _ = c.wait();
        }
        if let Some(f) = self.feeder.take() {
            let _ = f.join();
        }
        let _ = Command::new("ip").args(["netns", "del", &self.name]).output();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

fn in_ns<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<T> {
    let path = format!("/run/netns/{ns}");
    std::thread::spawn(move || {
        let fd = std::fs::File::open(&path).unwrap();
        assert_eq!(unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) }, 0);
        f()
    })
}

fn nmea_gga(lat: f64, lon: f64) -> String {
    let dm = |v: f64, w: usize| format!("{:0w$}{:09.6}", v.trunc() as u32, (v - v.trunc()) * 60.0, w = w);
    let body = format!(
        "GPGGA,120000.00,{},N,{},E,1,08,0.9,10.0,M,0.0,M,,",
        dm(lat, 2),
        dm(lon, 3)
    );
    format!("${body}*{:02X}\r\n", mobipath_hst::nmea::checksum(&body))
}

/// The fix to send at `t_s` into the ride in mode `m` (lat, lon).
fn fix_at(track: &Track, t_s: f64, m: u8) -> (f64, f64) {
    let s = START_M + SPEED * t_s;
    let (lat, lon) = track.point_at(if m == JUMP { s + 3000.0 } else { s });
    if m == OFF_TRACK {
        (lat + 0.005, lon) // ~556 m north of the track
    } else {
        (lat, lon)
    }
}

impl Ns {
    fn new(tag: &str) -> Ns {
        let pid = std::process::id();
        let ns = Ns {
            name: format!("mp-{pid}-p{tag}"),
            dir: std::env::temp_dir().join(format!("mobipath-phad-test-{pid}-{tag}")),
            child: None,
            mode: Arc::new(AtomicU8::new(SEND)),
            feeder: None,
        };
        std::fs::create_dir_all(&ns.dir).unwrap();
        let n = ns.name.as_str();
        sh(&["ip", "netns", "add", n]);
        sh(&["ip", "-n", n, "link", "set", "lo", "up"]);
        for i in 1..=2 {
            // A veth pair inside the namespace (the test kernels have no dummy driver).
            sh(&[
                "ip",
                "-n",
                n,
                "link",
                "add",
                &format!("d{i}"),
                "type",
                "veth",
                "peer",
                "name",
                &format!("e{i}"),
            ]);
            sh(&["ip", "-n", n, "link", "set", &format!("e{i}"), "up"]);
            sh(&[
                "ip",
                "-n",
                n,
                "addr",
                "add",
                &format!("10.{i}.0.1/24"),
                "dev",
                &format!("d{i}"),
            ]);
            sh(&["ip", "-n", n, "link", "set", &format!("d{i}"), "up"]);
            sh(&[
                "ip",
                "-n",
                n,
                "mptcp",
                "endpoint",
                "add",
                &format!("10.{i}.0.1"),
                "id",
                &i.to_string(),
                "subflow",
            ]);
        }
        std::fs::write(ns.dir.join("table.csv"), TABLE).unwrap();
        std::fs::write(ns.dir.join("track.csv"), TRACK).unwrap();
        ns
    }

    /// Starts the fake GPS (`gpsd` on 127.0.0.1:2947 or `udp` to 127.0.0.1:10110): a fix every
    /// 100 ms along the ride, or what `mode` says.
    fn feed(&mut self, kind: &'static str) {
        let mode = self.mode.clone();
        let track = Track::parse(TRACK, "t").unwrap();
        self.feeder = Some(in_ns(&self.name, move || {
            let t0 = Instant::now();
            let deadline = t0 + Duration::from_secs(30);
            let line = |m: u8| -> Vec<u8> {
                let (lat, lon) = fix_at(&track, t0.elapsed().as_secs_f64(), m);
                match (kind, m) {
                    ("gpsd", GARBAGE) => b"\x01\x02 not json at all\n".to_vec(),
                    ("gpsd", _) => {
                        format!("{{\"class\":\"TPV\",\"mode\":3,\"lat\":{lat},\"lon\":{lon}}}\n").into_bytes()
                    }
                    (_, GARBAGE) => b"$GPGGA,120000,3700.0,N,12700.0,E,1*00\r\n".to_vec(),
                    _ => nmea_gga(lat, lon).into_bytes(),
                }
            };
            if kind == "gpsd" {
                let l = TcpListener::bind("127.0.0.1:2947").unwrap();
                l.set_nonblocking(true).unwrap();
                let mut conn = None;
                while Instant::now() < deadline && mode.load(Ordering::SeqCst) != KILL {
                    if conn.is_none() {
                        if let Ok((mut s, _)) = l.accept() {
                            s.set_nonblocking(false).unwrap();
                            s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
                            let mut watch = [0u8; 256];
                            let _ = s.read(&mut watch); // ?WATCH={...}
                            let _ = s.write_all(b"{\"class\":\"VERSION\",\"release\":\"3.25\"}\n");
                            conn = Some(s);
                        }
                    }
                    let m = mode.load(Ordering::SeqCst);
                    if let (Some(s), true) = (conn.as_mut(), m != SILENT) {
                        if s.write_all(&line(m)).is_err() {
                            conn = None;
                        }
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
                // KILL: listener and connection close (gpsd gone).
            } else {
                let s = UdpSocket::bind("127.0.0.1:0").unwrap();
                while Instant::now() < deadline && mode.load(Ordering::SeqCst) != KILL {
                    let m = mode.load(Ordering::SeqCst);
                    if m != SILENT {
                        let _ = s.send_to(&line(m), "127.0.0.1:10110");
                    }
                    std::thread::sleep(Duration::from_millis(100));
                }
            }
        }));
    }

    fn start(&mut self, gps: &str, extra: &str) {
        let cfg = self.dir.join("phad.toml");
        std::fs::write(
            &cfg,
            format!("[pha_d]\ngps = \"{gps}\"\ntable = \"table.csv\"\ntrack = \"track.csv\"\nsubflows = [{{ operator = \"A\", endpoint = 1 }}, {{ operator = \"B\", endpoint = 2 }}]\npolicy = \"queue-aware\"\ngps_period_ms = 100\nmin_interval_ms = 0\nstale_s = 1.0\nretry_s = 0.3\n{extra}"),
        )
        .unwrap();
        let out = std::fs::File::create(self.dir.join("out.log")).unwrap();
        let err = std::fs::File::create(self.dir.join("err.log")).unwrap();
        self.child = Some(
            Command::new("ip")
                .args(["netns", "exec", &self.name, BIN, "pha-d", "--config"])
                .arg(&cfg)
                .stdout(out)
                .stderr(err)
                .spawn()
                .unwrap(),
        );
    }

    fn out(&self) -> String {
        std::fs::read_to_string(self.dir.join("out.log")).unwrap_or_default()
            + &std::fs::read_to_string(self.dir.join("err.log")).unwrap_or_default()
    }

    fn show(&self) -> String {
        let o = Command::new("ip")
            .args(["-n", &self.name, "mptcp", "endpoint", "show"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).into_owned()
    }

    /// Waits (at most `within`) until `cond(show)`; returns how long it took.
    fn wait(&self, what: &str, within: Duration, cond: impl Fn(&str) -> bool) -> Duration {
        let t = Instant::now();
        loop {
            let s = self.show();
            if cond(&s) {
                return t.elapsed();
            }
            assert!(
                t.elapsed() < within,
                "{what} not within {within:?}: `ip mptcp endpoint show`:\n{s}\noutput:\n{}",
                self.out()
            );
            std::thread::sleep(Duration::from_millis(20));
        }
    }
}

fn backup(show: &str, id: u8) -> bool {
    show.lines()
        .any(|l| l.contains(&format!(" id {id} ")) && l.split_whitespace().any(|w| w == "backup"))
}

fn all_regular(show: &str) -> bool {
    show.lines().filter(|l| l.contains(" id ")).count() == 2
        && !show.lines().any(|l| l.split_whitespace().any(|w| w == "backup"))
}

/// Starts PHA-D fed by `kind` and waits until the train approaching A's range made endpoint 1
/// backup (and only it).
fn ride_into_range(tag: &str, kind: &'static str) -> Option<Ns> {
    let mut ns = Ns::new(tag);
    // A backup flag left from an earlier, killed run: the start restores it.
    sh(&["ip", "-n", &ns.name, "mptcp", "endpoint", "change", "id", "2", "backup"]);
    ns.feed(kind);
    ns.start(
        if kind == "gpsd" {
            "gpsd:127.0.0.1:2947"
        } else {
            "nmea-udp:127.0.0.1:10110"
        },
        "",
    );
    ns.wait("endpoint 2 restored at start", Duration::from_secs(2), |s| {
        !backup(s, 2)
    });
    ns.wait("endpoint 1 backup ahead of A's range", Duration::from_secs(5), |s| {
        backup(s, 1) && !backup(s, 2)
    });
    Some(ns)
}

#[test]
fn gpsd_killed_restores_every_endpoint() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ns = ride_into_range("kill", "gpsd").unwrap();
    ns.mode.store(KILL, Ordering::SeqCst);
    let took = ns.wait(
        "every endpoint regular after gpsd was killed",
        Duration::from_millis(800),
        all_regular,
    );
    eprintln!("gpsd killed -> every endpoint regular after {took:?}");
    std::thread::sleep(Duration::from_millis(700)); // reconnects fail (refused): it stays regular
    assert!(all_regular(&ns.show()));
    let out = ns.out();
    assert!(out.contains("GPS source ended: gpsd 127.0.0.1:2947"), "{out}");
}

#[test]
fn fixes_stopping_restores_after_stale_s() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ns = ride_into_range("stale", "udp").unwrap();
    let t = Instant::now();
    ns.mode.store(SILENT, Ordering::SeqCst);
    // stale_s = 1.0 s; the check runs every tick (50 ms).
    ns.wait(
        "every endpoint regular after the fixes stopped",
        Duration::from_millis(1500),
        all_regular,
    );
    let took = t.elapsed();
    eprintln!("fixes stopped -> every endpoint regular after {took:?}");
    assert!(took >= Duration::from_millis(800), "restored before stale_s: {took:?}");
    assert!(ns.out().contains("no usable GPS fix for 1 s"), "{}", ns.out());
}

#[test]
fn garbage_on_the_gps_socket_restores_and_is_counted() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ns = ride_into_range("garb", "gpsd").unwrap();
    ns.mode.store(GARBAGE, Ordering::SeqCst);
    ns.wait(
        "every endpoint regular after garbage",
        Duration::from_millis(600),
        all_regular,
    );
    let out = ns.out();
    assert!(out.contains("\"gps_bad\":\"gpsd-json\""), "{out}");
    assert!(out.contains("unusable GPS input (gpsd-json)"), "{out}");
}

#[test]
fn position_off_the_track_or_jumping_restores() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let ns = ride_into_range("off", "udp").unwrap();
    ns.mode.store(OFF_TRACK, Ordering::SeqCst);
    ns.wait(
        "every endpoint regular after a fix off the track",
        Duration::from_millis(600),
        all_regular,
    );
    assert!(ns.out().contains("m off the track (max_offset_m = 50)"), "{}", ns.out());
    drop(ns);
    // Along the track: 3 km in 100 ms.
    let ns = ride_into_range("jump", "udp").unwrap();
    ns.mode.store(JUMP, Ordering::SeqCst);
    ns.wait(
        "every endpoint regular after a jump along the track",
        Duration::from_millis(600),
        all_regular,
    );
    assert!(ns.out().contains("GPS position jumped"), "{}", ns.out());
}

#[test]
fn sigterm_restores_and_exits_0() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut ns = ride_into_range("term", "udp").unwrap();
    let mut child = ns.child.take().unwrap();
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let t = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(
            t.elapsed() < Duration::from_secs(3),
            "pha-d did not exit within 3 s of SIGTERM"
        );
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(0), "{}", ns.out());
    assert!(all_regular(&ns.show()), "not restored on SIGTERM:\n{}", ns.show());
    let out = ns.out();
    assert!(
        out.lines()
            .any(|l| l.contains("\"pha_d\":\"stopped\"") && l.contains("\"reason\":\"stop\"")),
        "{out}"
    );
    // Never both backup: every applied change left one regular endpoint (the log has them all).
    assert!(
        out.contains("\"endpoint_id\":1,\"operator\":\"A\",\"backup\":true"),
        "{out}"
    );
}

/// PHA-D alone, its GPS source unreachable and `max_retries = 0`: it gives up with exit 1, and
/// leaves every endpoint regular (a backup flag left from before included).
#[test]
fn giving_up_on_the_gps_exits_1_with_every_endpoint_regular() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut ns = Ns::new("gone");
    sh(&["ip", "-n", &ns.name, "mptcp", "endpoint", "change", "id", "1", "backup"]);
    ns.start("gpsd:127.0.0.1:2947", "max_retries = 0\n");
    let mut child = ns.child.take().unwrap();
    let t = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(t.elapsed() < Duration::from_secs(5), "pha-d did not give up");
        std::thread::sleep(Duration::from_millis(20));
    };
    assert_eq!(status.code(), Some(1), "{}", ns.out());
    assert!(all_regular(&ns.show()), "{}", ns.show());
    let out = ns.out();
    assert!(
        out.contains("the GPS source failed 1 times in a row") && out.contains("Connection refused"),
        "{out}"
    );
}

/// `slow_start_after_idle = "off"`: PHA-D turns the window restart after idle off in its
/// namespace while it runs (its backup spans idle a path past its RTO) and puts it back on
/// SIGTERM.
#[test]
fn idle_restart_turned_off_while_running_and_restored() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut ns = Ns::new("ssai");
    let get = |n: &str| {
        let o = Command::new("ip")
            .args(["netns", "exec", n, "sysctl", "-n", "net.ipv4.tcp_slow_start_after_idle"])
            .output()
            .unwrap();
        String::from_utf8_lossy(&o.stdout).trim().to_string()
    };
    sh(&[
        "ip",
        "netns",
        "exec",
        &ns.name,
        "sysctl",
        "-qw",
        "net.ipv4.tcp_slow_start_after_idle=1",
    ]);
    ns.feed("udp");
    ns.start("nmea-udp:127.0.0.1:10110", "slow_start_after_idle = \"off\"\n");
    let t = Instant::now();
    while get(&ns.name) != "0" {
        assert!(t.elapsed() < Duration::from_secs(3), "not turned off: {}", ns.out());
        std::thread::sleep(Duration::from_millis(20));
    }
    let mut child = ns.child.take().unwrap();
    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let status = child.wait().unwrap();
    assert_eq!(status.code(), Some(0), "{}", ns.out());
    assert_eq!(get(&ns.name), "1", "not restored: {}", ns.out());
    assert!(
        ns.out()
            .contains("\"pha_d\":\"slow_start_after_idle\",\"was\":\"1\",\"now\":0"),
        "{}",
        ns.out()
    );
}
