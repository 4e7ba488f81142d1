//! The proxy pair on the real Linux stack, in network namespaces (root only; otherwise each test
//! prints why it skipped and passes). Topology, built per test and removed on drop:
//!
//! ```text
//!   mp-<pid>-r<tag> (router)                         mp-<pid>-s<tag> (server)
//!   client → 127.0.0.1:1080 SOCKS5                   127.0.0.1:9000.. sinks (destinations)
//!   mobipath-proxy router  vr1 10.1.0.1 ─── 10.1.0.2 vs1  mobipath-proxy server :7000
//!                          vr2 10.2.0.1 ─── 10.2.0.2 vs2  (MPTCP endpoint, signal)
//! ```
//! The rate is a tbf qdisc on the router's side of each link (there is no netem on the test
//! kernels, so no added delay). Namespace names follow the emulator's `mp-<pid>-<tag>` so
//! `mobipath.emulate.netns.sweep_stale()` removes any left by a killed run. The tests take a
//! global lock: the throughput test must not share the CPU with the others.
use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::os::fd::AsRawFd;
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

static SERIAL: Mutex<()> = Mutex::new(());
const KEY: &str = "6d6f62697061746820746573742070726f7879206b6579";
const BIN: &str = env!("CARGO_BIN_EXE_mobipath-proxy");

fn sh(args: &[&str]) -> Result<(), String> {
    let out = Command::new(args[0])
        .args(&args[1..])
        .output()
        .map_err(|e| format!("{}: {e}", args[0]))?;
    if !out.status.success() {
        return Err(format!(
            "`{}` failed: {}",
            args.join(" "),
            String::from_utf8_lossy(&out.stderr).trim()
        ));
    }
    Ok(())
}

fn skip_reason() -> Option<String> {
    if unsafe { libc::geteuid() } != 0 {
        return Some("not root".into());
    }
    if !std::path::Path::new("/proc/sys/net/mptcp/enabled").exists() {
        return Some("no MPTCP in this kernel".into());
    }
    if Command::new("ip").arg("-V").output().is_err() || Command::new("tc").arg("-V").output().is_err() {
        return Some("ip or tc (iproute2) missing".into());
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

struct Topo {
    r: String,
    s: String,
    dir: std::path::PathBuf,
    children: Vec<Child>,
}

impl Drop for Topo {
    fn drop(&mut self) {
        for c in &mut self.children {
            let _ = c.kill();
            let _ = c.wait();
        }
        for ns in [&self.r, &self.s] {
            let _ = Command::new("ip").args(["netns", "del", ns]).output();
        }
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

impl Topo {
    fn new(tag: &str, rate: Option<&str>, second_path: bool) -> Topo {
        let pid = std::process::id();
        let t = Topo {
            r: format!("mp-{pid}-r{tag}"),
            s: format!("mp-{pid}-s{tag}"),
            dir: std::env::temp_dir().join(format!("mobipath-proxy-test-{pid}-{tag}")),
            children: Vec::new(),
        };
        std::fs::create_dir_all(&t.dir).unwrap();
        let (r, s) = (t.r.as_str(), t.s.as_str());
        let mut cmds: Vec<Vec<String>> = vec![];
        let mut c = |v: &str| cmds.push(v.split_whitespace().map(String::from).collect());
        c(&format!("ip netns add {r}"));
        c(&format!("ip netns add {s}"));
        for ns in [r, s] {
            c(&format!("ip -n {ns} link set lo up"));
            c(&format!("ip netns exec {ns} sysctl -qw net.mptcp.enabled=1"));
            c(&format!("ip -n {ns} mptcp limits set subflow 4 add_addr_accepted 4"));
        }
        for i in 1..=2 {
            c(&format!("ip -n {r} link add vr{i} type veth peer name vs{i} netns {s}"));
            c(&format!("ip -n {r} addr add 10.{i}.0.1/24 dev vr{i}"));
            c(&format!("ip -n {s} addr add 10.{i}.0.2/24 dev vs{i}"));
            c(&format!("ip -n {r} link set vr{i} up"));
            c(&format!("ip -n {s} link set vs{i} up"));
            if let Some(rate) = rate {
                c(&format!(
                    "tc -n {r} qdisc add dev vr{i} root tbf rate {rate} burst 32kb latency 50ms"
                ));
            }
        }
        if second_path {
            // The server announces its second address (ADD_ADDR); the router opens a subflow to it.
            c(&format!("ip -n {s} mptcp endpoint add 10.2.0.2 dev vs2 signal"));
        }
        for cmd in cmds {
            let v: Vec<&str> = cmd.iter().map(String::as_str).collect();
            sh(&v).unwrap_or_else(|e| panic!("setting up namespaces: {e}"));
        }
        t
    }

    /// Runs `f` on a thread inside namespace `ns`: sockets it creates live there.
    fn inside<T: Send + 'static>(ns: &str, f: impl FnOnce() -> T + Send + 'static) -> std::thread::JoinHandle<T> {
        let path = format!("/run/netns/{ns}");
        std::thread::spawn(move || {
            let fd = std::fs::File::open(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
            assert_eq!(
                unsafe { libc::setns(fd.as_raw_fd(), libc::CLONE_NEWNET) },
                0,
                "setns {path}"
            );
            f()
        })
    }

    fn write(&self, name: &str, text: &str) -> String {
        let p = self.dir.join(name);
        std::fs::write(&p, text).unwrap();
        p.display().to_string()
    }

    fn start(&mut self, ns: &str, side: &str, config: &str, log_name: &str) -> u32 {
        let log = std::fs::File::create(self.dir.join(format!("{log_name}.log"))).unwrap();
        let out = std::fs::File::create(self.dir.join(format!("{log_name}.out"))).unwrap();
        let child = Command::new("ip")
            .args(["netns", "exec", ns, BIN, side, "--config", config])
            .stdout(out)
            .stderr(log)
            .spawn()
            .unwrap();
        let pid = child.id();
        self.children.push(child);
        pid
    }

    fn log(&self, side: &str) -> String {
        std::fs::read_to_string(self.dir.join(format!("{side}.log"))).unwrap_or_default()
    }

    /// Server proxy with `allow` rules, router proxy with `key`; waits until both listen.
    fn start_pair(&mut self, router_key: &str, buffer_bytes: usize) -> (u32, u32) {
        self.start_pair_with(router_key, buffer_bytes, "")
    }

    fn start_pair_with(&mut self, router_key: &str, buffer_bytes: usize, router_extra: &str) -> (u32, u32) {
        let lim = format!("[limits]\nbuffer_bytes = {buffer_bytes}\nidle_timeout_s = 30\nshutdown_grace_s = 1\n");
        let sc = self.write(
            "server.toml",
            &format!("[server]\nlisten = \"0.0.0.0:7000\"\nkey = \"{KEY}\"\n[[server.allow]]\ncidr = \"127.0.0.1\"\nports = [\"9000\"]\n[[server.allow]]\ncidr = \"192.0.2.0/24\"\nports = [\"9000\"]\n[metrics]\nlisten = \"0.0.0.0:9464\"\n{lim}"),
        );
        let rc = self.write(
            "router.toml",
            &format!("[router]\nserver = \"10.1.0.2:7000\"\nkey = \"{router_key}\"\nsocks_listen = \"127.0.0.1:1080\"\ncongestion = \"cubic\"\nserver_congestion = \"cubic\"\n{router_extra}[metrics]\nlisten = \"127.0.0.1:9465\"\n{lim}"),
        );
        let s = self.s.clone();
        let r = self.r.clone();
        let sp = self.start(&s, "server", &sc, "server");
        let rp = self.start(&r, "router", &rc, "router");
        wait_listening(&s, "127.0.0.1:9464");
        wait_listening(&r, "127.0.0.1:1080");
        (sp, rp)
    }
}

fn wait_listening(ns: &str, addr: &'static str) {
    let ok = Topo::inside(ns, move || {
        let deadline = Instant::now() + Duration::from_secs(10);
        while Instant::now() < deadline {
            if TcpStream::connect(addr).is_ok() {
                return true;
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        false
    })
    .join()
    .unwrap();
    assert!(ok, "nothing listens on {addr} in {ns}");
}

/// A destination in the server namespace: counts connections and bytes; `read` false = never reads.
struct Sink {
    conns: Arc<AtomicU64>,
    bytes: Arc<AtomicU64>,
}

fn sink(ns: &str, port: u16, read: bool) -> Sink {
    sink_at(ns, "127.0.0.1", port, read)
}

fn sink_at(ns: &str, ip: &'static str, port: u16, read: bool) -> Sink {
    let conns = Arc::new(AtomicU64::new(0));
    let bytes = Arc::new(AtomicU64::new(0));
    let (c2, b2) = (conns.clone(), bytes.clone());
    let (tx, rx) = std::sync::mpsc::channel();
    Topo::inside(ns, move || {
        let l = TcpListener::bind((ip, port)).unwrap();
        tx.send(()).unwrap();
        for s in l.incoming() {
            let Ok(mut s) = s else { break };
            c2.fetch_add(1, Ordering::SeqCst);
            let b = b2.clone();
            std::thread::spawn(move || {
                if !read {
                    std::thread::sleep(Duration::from_secs(3600));
                }
                let mut buf = vec![0u8; 65536];
                while let Ok(n) = s.read(&mut buf) {
                    if n == 0 {
                        break;
                    }
                    b.fetch_add(n as u64, Ordering::SeqCst);
                }
            });
        }
    });
    rx.recv().unwrap();
    Sink { conns, bytes }
}

/// SOCKS5 CONNECT to 127.0.0.1:`port` through the router proxy; returns the stream and REP.
fn socks_connect(port: u16) -> (TcpStream, u8) {
    let mut s = TcpStream::connect("127.0.0.1:1080").unwrap();
    s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
    s.write_all(&[5, 1, 0]).unwrap();
    let mut m = [0u8; 2];
    s.read_exact(&mut m).unwrap();
    assert_eq!(m, [5, 0]);
    let mut req = vec![5, 1, 0, 1, 127, 0, 0, 1];
    req.extend_from_slice(&port.to_be_bytes());
    s.write_all(&req).unwrap();
    let mut rep = [0u8; 10];
    s.read_exact(&mut rep).unwrap();
    (s, rep[1])
}

fn metrics(ns: &str) -> String {
    metrics_at(ns, "127.0.0.1:9464")
}

fn metrics_at(ns: &str, addr: &'static str) -> String {
    Topo::inside(ns, move || {
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n").unwrap();
        let mut out = String::new();
        s.read_to_string(&mut out).unwrap();
        out
    })
    .join()
    .unwrap()
}

fn metric(text: &str, prefix: &str) -> Option<f64> {
    text.lines()
        .find(|l| l.starts_with(prefix))
        .and_then(|l| l.rsplit(' ').next()?.parse().ok())
}

fn rss_kib(pid: u32) -> u64 {
    // `ip netns exec` execs the proxy in place, so the child's pid is the proxy's.
    let s = std::fs::read_to_string(format!("/proc/{pid}/status")).unwrap();
    s.lines()
        .find(|l| l.starts_with("VmRSS:"))
        .and_then(|l| l.split_whitespace().nth(1)?.parse().ok())
        .unwrap()
}

/// Upload goodput (bit/s) through the proxy pair, measured at the destination over `secs` after
/// one second of warm-up.
fn upload_goodput(t: &Topo, secs: f64) -> (f64, u32, String) {
    let sk = sink(&t.s, 9000, true);
    let r = t.r.clone();
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let sender = Topo::inside(&r, move || {
        let (mut s, rep) = socks_connect(9000);
        assert_eq!(rep, 0, "SOCKS reply");
        s.set_write_timeout(Some(Duration::from_millis(200))).unwrap();
        let buf = vec![0x5au8; 65536];
        while !stop2.load(Ordering::Relaxed) {
            let _ = s.write(&buf);
        }
        s
    });
    std::thread::sleep(Duration::from_secs(1));
    let b0 = sk.bytes.load(Ordering::SeqCst);
    let t0 = Instant::now();
    std::thread::sleep(Duration::from_secs_f64(secs));
    let b1 = sk.bytes.load(Ordering::SeqCst);
    let dt = t0.elapsed().as_secs_f64();
    let m = metrics(&t.s);
    let subflows = metric(&m, "mobipath_proxy_connection_subflows{").unwrap_or(-1.0);
    let router_metrics = metrics_at(&t.r, "127.0.0.1:9465");
    stop.store(true, Ordering::Relaxed);
    let s = sender.join().unwrap();
    let _ = s.shutdown(Shutdown::Both);
    ((b1 - b0) as f64 * 8.0 / dt, subflows as u32, router_metrics)
}

/// The router side's per-subflow RTT (s) by local IP, as PHA-D's `--rtt-from` reads it.
fn router_rtts(m: &str) -> Vec<(String, f64)> {
    m.lines()
        .filter(|l| l.starts_with("mobipath_proxy_subflow_rtt_seconds{"))
        .filter_map(|l| {
            let local = l.split("local=\"").nth(1)?.split(':').next()?.to_string();
            Some((local, l.rsplit(' ').next()?.parse().ok()?))
        })
        .collect()
}

#[test]
fn aggregation_over_two_20mbit_paths() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let secs = 4.0;
    let one = {
        let mut t = Topo::new("agg1", Some("20mbit"), false);
        t.start_pair(KEY, 65536);
        upload_goodput(&t, secs)
    };
    let two = {
        let mut t = Topo::new("agg2", Some("20mbit"), true);
        t.start_pair(KEY, 65536);
        upload_goodput(&t, secs)
    };
    eprintln!(
        "one path: {:.2} Mbit/s ({} extra subflows); two paths: {:.2} Mbit/s ({} extra subflows); ratio {:.2}",
        one.0 / 1e6,
        one.1,
        two.0 / 1e6,
        two.1,
        two.0 / one.0
    );
    assert_eq!(one.1, 0, "the one-path run must have no additional subflow");
    assert_eq!(two.1, 1, "the two-path run must have the second subflow");
    assert!(
        one.0 > 15e6,
        "one 20 Mbit/s path carried only {:.2} Mbit/s",
        one.0 / 1e6
    );
    assert!(
        two.0 >= 1.7 * one.0,
        "two paths {:.2} Mbit/s < 1.7 x one path {:.2} Mbit/s",
        two.0 / 1e6,
        one.0 / 1e6
    );
    // The router's metrics carry each subflow's kernel RTT under its local (modem) address.
    let rtts = router_rtts(&two.2);
    eprintln!("router subflow RTTs: {rtts:?}");
    for ip in ["10.1.0.1", "10.2.0.1"] {
        assert!(
            rtts.iter().any(|(l, r)| l == ip && *r > 0.0),
            "no RTT for local {ip}: {}",
            two.2
        );
    }
}

#[test]
fn unauthenticated_and_disallowed_are_refused_before_any_byte() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut t = Topo::new("ref", None, false);
    t.start_pair(KEY, 65536);
    let allowed = sink(&t.s, 9000, true);
    let forbidden = sink(&t.s, 9001, true);

    // 1. Not in the allow-list (port 9001): RFC 1928 X'02', no connection reaches the sink.
    let rep = Topo::inside(&t.r, || {
        let (mut s, rep) = socks_connect(9001);
        let _ = s.write_all(b"must never arrive");
        rep
    })
    .join()
    .unwrap();
    assert_eq!(rep, 2, "SOCKS reply for a destination outside the allow-list");

    // 2. A peer without the key speaking the protocol directly (MPTCP to the server), sending
    //    payload right behind its answer: status 1, nothing reaches the allowed sink.
    let status = Topo::inside(&t.r, || {
        let sock = socket2::Socket::new(
            socket2::Domain::IPV4,
            socket2::Type::STREAM,
            Some(socket2::Protocol::from(262)),
        )
        .unwrap();
        sock.connect(&"10.1.0.2:7000".parse::<std::net::SocketAddr>().unwrap().into())
            .unwrap();
        let mut s: TcpStream = sock.into();
        s.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut hello = [0u8; 36];
        s.read_exact(&mut hello).unwrap();
        assert_eq!(&hello[..4], b"MPX1");
        let mut answer = vec![0u8; 32]; // a MAC made without the key
        answer.extend_from_slice(&[0, 1, 127, 0, 0, 1, 0x23, 0x28]); // no cc, 127.0.0.1:9000
        answer.extend_from_slice(b"payload that must never arrive");
        s.write_all(&answer).unwrap();
        let mut st = [0u8; 1];
        s.read_exact(&mut st).unwrap();
        let mut rest = Vec::new();
        let _ = s.read_to_end(&mut rest); // the server closes
        st[0]
    })
    .join()
    .unwrap();
    assert_eq!(status, 1, "status for a wrong MAC");

    // 3. A router proxy with the wrong key: SOCKS general failure, nothing relayed.
    let wrong_key = "00".repeat(16);
    let rc = t.write(
        "router-wrong.toml",
        &format!("[router]\nserver = \"10.1.0.2:7000\"\nkey = \"{wrong_key}\"\nsocks_listen = \"127.0.0.1:1081\"\n"),
    );
    let r = t.r.clone();
    t.start(&r, "router", &rc, "router-wrong");
    wait_listening(&t.r, "127.0.0.1:1081");
    let rep = Topo::inside(&t.r, || {
        let mut s = TcpStream::connect("127.0.0.1:1081").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&[5, 1, 0]).unwrap();
        let mut m = [0u8; 2];
        s.read_exact(&mut m).unwrap();
        s.write_all(&[5, 1, 0, 1, 127, 0, 0, 1, 0x23, 0x28]).unwrap();
        let mut rep = [0u8; 10];
        s.read_exact(&mut rep).unwrap();
        rep[1]
    })
    .join()
    .unwrap();
    assert_eq!(rep, 1, "SOCKS reply when the server refuses the router's key");

    std::thread::sleep(Duration::from_millis(300));
    assert_eq!(
        forbidden.conns.load(Ordering::SeqCst),
        0,
        "a refused destination was connected to"
    );
    assert_eq!(
        allowed.conns.load(Ordering::SeqCst),
        0,
        "an unauthenticated peer got a connection to the destination"
    );
    assert_eq!(
        allowed.bytes.load(Ordering::SeqCst) + forbidden.bytes.load(Ordering::SeqCst),
        0
    );
    let m = metrics(&t.s);
    assert_eq!(
        metric(
            &m,
            "mobipath_proxy_connections_total{side=\"server\",result=\"refused_allowlist\"}"
        ),
        Some(1.0),
        "{m}"
    );
    assert_eq!(
        metric(
            &m,
            "mobipath_proxy_connections_total{side=\"server\",result=\"refused_auth\"}"
        ),
        Some(2.0),
        "{m}"
    );
    assert_eq!(
        metric(
            &m,
            "mobipath_proxy_connections_total{side=\"server\",result=\"relayed\"}"
        ),
        None,
        "{m}"
    );

    // The allowed destination does work with the right key (the refusals were not a broken setup).
    let rep = Topo::inside(&t.r, || {
        let (mut s, rep) = socks_connect(9000);
        s.write_all(b"hello").unwrap();
        s.shutdown(Shutdown::Write).unwrap();
        rep
    })
    .join()
    .unwrap();
    assert_eq!(rep, 0);
    let deadline = Instant::now() + Duration::from_secs(5);
    while allowed.bytes.load(Ordering::SeqCst) < 5 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(allowed.bytes.load(Ordering::SeqCst), 5);
}

/// A SOCKS5 client on the LAN chooses the destination name: one holding a line feed, a forged log
/// line and an ANSI escape is refused by the router (RFC 1928 X'01', nothing reaches the server)
/// and logged as one line naming the character, never as a line of its own or a raw ESC.
#[test]
fn hostile_domain_name_cannot_forge_log_lines() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut t = Topo::new("esc", None, false);
    t.start_pair(KEY, 65536);
    const NAME: &[u8] = b"x\n mobipath-proxy: server: conn 999 FAKE relayed to 10.0.0.1:22\x1b[31m";
    let rep = Topo::inside(&t.r, || {
        let mut s = TcpStream::connect("127.0.0.1:1080").unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s.write_all(&[5, 1, 0]).unwrap();
        let mut m = [0u8; 2];
        s.read_exact(&mut m).unwrap();
        let mut req = vec![5, 1, 0, 3, NAME.len() as u8];
        req.extend_from_slice(NAME);
        req.extend_from_slice(&9000u16.to_be_bytes());
        s.write_all(&req).unwrap();
        let mut rep = [0u8; 10];
        s.read_exact(&mut rep).unwrap();
        rep[1]
    })
    .join()
    .unwrap();
    assert_eq!(rep, 1, "SOCKS reply for a name with control characters");
    let deadline = Instant::now() + Duration::from_secs(5);
    while !t.log("router").contains("control character") && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(50));
    }
    let router = t.log("router");
    assert!(
        router.contains("domain name holds the control character U+000A"),
        "{router}"
    );
    for side in ["router", "server"] {
        let log = t.log(side);
        assert!(!log.contains('\x1b'), "raw ESC in the {side}'s log: {log:?}");
        assert!(!log.contains("FAKE"), "the {side} logged the forged text: {log}");
    }
}

#[test]
fn slow_reader_cannot_grow_proxy_memory() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut t = Topo::new("mem", None, true);
    let buffer = 65536;
    let (sp, rp) = t.start_pair(KEY, buffer);
    let _sink = sink(&t.s, 9000, false); // accepts, never reads
                                         // Warm up: one relayed connection so the runtime's threads and allocator pools exist.
    Topo::inside(&t.r, || {
        let (mut s, rep) = socks_connect(9000);
        assert_eq!(rep, 0);
        s.write_all(&[1u8; 1 << 20]).unwrap();
    })
    .join()
    .unwrap();
    std::thread::sleep(Duration::from_millis(300));
    let (s0, r0) = (rss_kib(sp), rss_kib(rp));
    // Push up to 256 MiB at a destination that never reads, until writes stall for 1 s.
    let limit: u64 = 256 << 20;
    let pushed = Topo::inside(&t.r, move || {
        let (mut s, rep) = socks_connect(9000);
        assert_eq!(rep, 0);
        s.set_write_timeout(Some(Duration::from_secs(1))).unwrap();
        let buf = vec![7u8; 65536];
        let mut total = 0u64;
        let deadline = Instant::now() + Duration::from_secs(20);
        while total < limit && Instant::now() < deadline {
            match s.write(&buf) {
                Ok(n) => total += n as u64,
                Err(_) => break, // stalled for 1 s: back-pressure reached the sender
            }
        }
        (total, s)
    })
    .join()
    .unwrap();
    let (s1, r1) = (rss_kib(sp), rss_kib(rp));
    let bound_kib = 4 * buffer as u64 / 1024 + 8 * 1024; // this connection's buffers + 8 MiB slack
    eprintln!(
        "pushed {} KiB before the sender stalled; RSS growth: server {} KiB, router {} KiB (bound {bound_kib} KiB)",
        pushed.0 / 1024,
        s1 as i64 - s0 as i64,
        r1 as i64 - r0 as i64
    );
    assert!(
        pushed.0 < limit,
        "the sender never stalled: no back-pressure ({} MiB accepted)",
        pushed.0 >> 20
    );
    assert!(s1 <= s0 + bound_kib, "server proxy RSS grew from {s0} to {s1} KiB");
    assert!(r1 <= r0 + bound_kib, "router proxy RSS grew from {r0} to {r1} KiB");
    drop(pushed);
}

#[test]
fn sigterm_stops_cleanly() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut t = Topo::new("term", None, false);
    let (sp, rp) = t.start_pair(KEY, 65536);
    for pid in [sp, rp] {
        unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    }
    let deadline = Instant::now() + Duration::from_secs(5);
    for c in &mut t.children {
        let st = loop {
            if let Some(st) = c.try_wait().unwrap() {
                break Some(st);
            }
            if Instant::now() > deadline {
                break None;
            }
            std::thread::sleep(Duration::from_millis(20));
        };
        assert_eq!(
            st.and_then(|s| s.code()),
            Some(0),
            "proxy did not exit 0 within 5 s of SIGTERM: {}",
            t.log("server") + &t.log("router")
        );
    }
}

#[test]
fn transparent_listener_relays_to_the_original_destination() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut t = Topo::new("tp", None, false);
    // The router treats 192.0.2.0/24 as local (a `local` route, as TPROXY's policy route does), so
    // a connection to 192.0.2.7:9000 lands on the transparent listener with that local address;
    // the server side has 192.0.2.7 on its loopback, where the destination listens.
    sh(&["ip", "-n", &t.r, "route", "add", "local", "192.0.2.0/24", "dev", "lo"]).unwrap();
    sh(&["ip", "-n", &t.s, "addr", "add", "192.0.2.7/32", "dev", "lo"]).unwrap();
    t.start_pair_with(KEY, 65536, "transparent_listen = \"0.0.0.0:9000\"\n");
    let dest = sink_at(&t.s, "192.0.2.7", 9000, true);
    Topo::inside(&t.r, || {
        let mut s = TcpStream::connect("192.0.2.7:9000").unwrap();
        s.write_all(b"through the transparent proxy").unwrap();
        s.shutdown(Shutdown::Write).unwrap();
    })
    .join()
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(5);
    while dest.bytes.load(Ordering::SeqCst) < 29 && Instant::now() < deadline {
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(dest.bytes.load(Ordering::SeqCst), 29, "router log: {}", t.log("router"));
    let m = metrics(&t.s);
    assert_eq!(
        metric(
            &m,
            "mobipath_proxy_connections_total{side=\"server\",result=\"relayed\"}"
        ),
        Some(1.0),
        "{m}"
    );
}

fn endpoint_show(ns: &str) -> String {
    let out = Command::new("ip")
        .args(["-n", ns, "mptcp", "endpoint", "show"])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).into_owned()
}

fn is_backup(show: &str, id: u8) -> bool {
    show.lines()
        .any(|l| l.contains(&format!(" id {id} ")) && l.split_whitespace().any(|w| w == "backup"))
}

fn wait_for(ns: &str, what: &str, cond: impl Fn(&str) -> bool) {
    let deadline = Instant::now() + Duration::from_secs(3);
    loop {
        let s = endpoint_show(ns);
        if cond(&s) {
            return;
        }
        assert!(Instant::now() < deadline, "{what}: `ip mptcp endpoint show` says\n{s}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn netlink_flags_show_in_ip_and_fail_safe_on_garbage_and_sigterm() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let t = Topo::new("nl", None, false);
    sh(&[
        "ip", "-n", &t.r, "mptcp", "endpoint", "add", "10.1.0.1", "id", "1", "subflow",
    ])
    .unwrap();
    sh(&[
        "ip", "-n", &t.r, "mptcp", "endpoint", "add", "10.2.0.1", "id", "2", "subflow", "fullmesh",
    ])
    .unwrap();
    // A backup flag left over from an earlier (killed) run: the start restores it.
    sh(&["ip", "-n", &t.r, "mptcp", "endpoint", "change", "id", "1", "backup"]).unwrap();
    let mut child = Command::new("ip")
        .args([
            "netns",
            "exec",
            &t.r,
            BIN,
            "flags",
            "--endpoints",
            "1,2",
            "--min-interval-ms",
            "0",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    wait_for(&t.r, "restored at start", |s| !is_backup(s, 1) && !is_backup(s, 2));

    stdin.write_all(b"backup 2\n").unwrap();
    wait_for(&t.r, "endpoint 2 backup via netlink", |s| {
        is_backup(s, 2) && !is_backup(s, 1)
    });
    assert!(
        endpoint_show(&t.r)
            .lines()
            .any(|l| l.contains(" id 2 ") && l.contains("fullmesh")),
        "fullmesh kept"
    );
    stdin.write_all(b"backup 1\n").unwrap(); // would leave no regular path: refused
    stdin.write_all(b"\x01\x02 garbage\n").unwrap(); // fail safe: every endpoint regular
    wait_for(&t.r, "garbage restores", |s| !is_backup(s, 1) && !is_backup(s, 2));
    stdin.write_all(b"backup 1\n").unwrap();
    wait_for(&t.r, "endpoint 1 backup", |s| is_backup(s, 1));

    unsafe { libc::kill(child.id() as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(3);
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        assert!(Instant::now() < deadline, "flags did not exit within 3 s of SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    };
    let mut out = String::new();
    child.stdout.take().unwrap().read_to_string(&mut out).unwrap();
    assert_eq!(status.code(), Some(0), "{out}");
    let show = endpoint_show(&t.r);
    assert!(
        !is_backup(&show, 1) && !is_backup(&show, 2),
        "not restored on SIGTERM:\n{show}"
    );
    let lines: Vec<&str> = out.lines().collect();
    assert!(
        lines
            .iter()
            .any(|l| l.contains("\"failsafe\":\"refused\"") && l.contains("no regular path")),
        "{out}"
    );
    assert!(lines.iter().any(|l| l.contains("garbage input")), "{out}");
    assert!(lines.last().unwrap().contains("\"reason\":\"signal SIGTERM\""), "{out}");
    drop(stdin);

    // The decision source goes away (stdin closes, as when the feeding daemon dies): restored, exit 0.
    let mut child = Command::new("ip")
        .args(["netns", "exec", &t.r, BIN, "flags", "--endpoints", "1,2"])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"backup 2\n").unwrap();
    wait_for(&t.r, "endpoint 2 backup", |s| is_backup(s, 2));
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert_eq!(out.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&out.stdout)
        .lines()
        .last()
        .unwrap()
        .contains("end of input"));
    let show = endpoint_show(&t.r);
    assert!(
        !is_backup(&show, 1) && !is_backup(&show, 2),
        "not restored at end of input:\n{show}"
    );
}

/// `MPTcpExt` counters of namespace `ns` (/proc/net/netstat there).
fn mptcp_mib(ns: &str, name: &str) -> u64 {
    let out = Command::new("ip")
        .args(["netns", "exec", ns, "cat", "/proc/net/netstat"])
        .output()
        .unwrap();
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    let lines: Vec<&str> = text.lines().filter(|l| l.starts_with("MPTcpExt:")).collect();
    let (Some(h), Some(v)) = (lines.first(), lines.get(1)) else {
        return 0;
    };
    h.split_whitespace()
        .zip(v.split_whitespace())
        .find(|(k, _)| *k == name)
        .and_then(|(_, v)| v.parse().ok())
        .unwrap_or(0)
}

const TRACK_CSV: &str = "lat,lon\n37.0,127.0\n37.0,127.1\n";

/// A `[pha_d]` section (queue-aware, NMEA over UDP at 127.0.0.1:10110, fixes every 100 ms) with
/// operator A's range at [1000, 1100] m and B's far away; `more` is appended.
fn pha_d_section(t: &Topo, more: &str) -> String {
    let table = t.write(
        "table.csv",
        "operator,start_m,end_m,count\nA,1000,1100,1\nB,5000,5100,1\n",
    );
    let track = t.write("track.csv", TRACK_CSV);
    format!("[pha_d]\ngps = \"nmea-udp:127.0.0.1:10110\"\ntable = \"{table}\"\ntrack = \"{track}\"\nsubflows = [{{ operator = \"A\", endpoint = 1 }}, {{ operator = \"B\", endpoint = 2 }}]\npolicy = \"queue-aware\"\ngps_period_ms = 100\nmin_interval_ms = 0\nstale_s = 5.0\n{more}")
}

/// Feeds GGA sentences over UDP inside `ns` for 4 s: 80 m/s from 900 m along `track_csv`.
fn ride_80mps_from_900m(ns: &str, track_csv: &'static str) {
    Topo::inside(ns, move || {
        let trk = mobipath_proxy::phad::track::Track::parse(track_csv, "t").unwrap();
        let u = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let t0 = Instant::now();
        while t0.elapsed() < Duration::from_secs(4) {
            let (lat, lon) = trk.point_at(900.0 + 80.0 * t0.elapsed().as_secs_f64());
            let dm = |v: f64, w: usize| format!("{:0w$}{:09.6}", v.trunc() as u32, (v - v.trunc()) * 60.0, w = w);
            let body = format!(
                "GPGGA,120000.00,{},N,{},E,1,08,0.9,10.0,M,0.0,M,,",
                dm(lat, 2),
                dm(lon, 3)
            );
            let _ = u.send_to(
                format!("${body}*{:02X}\r\n", mobipath_hst::nmea::checksum(&body)).as_bytes(),
                "127.0.0.1:10110",
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    })
    .join()
    .unwrap();
}

/// SIGTERM to the router proxy (pid `rp`); asserts it exits within 5 s leaving both endpoints
/// regular; returns its stdout and the PHA-D decision lines in it.
fn stop_router_and_read_decisions(t: &Topo, rp: u32) -> (String, Vec<serde_json::Value>) {
    unsafe { libc::kill(rp as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::path::Path::new(&format!("/proc/{rp}")).exists()
        && std::fs::read_to_string(format!("/proc/{rp}/stat")).is_ok_and(|s| !s.contains(") Z "))
    {
        assert!(Instant::now() < deadline, "router did not exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    let show = endpoint_show(&t.r);
    assert!(
        !is_backup(&show, 1) && !is_backup(&show, 2),
        "not regular after SIGTERM:\n{show}"
    );
    let out = std::fs::read_to_string(t.dir.join("router.out")).unwrap();
    let events = out
        .lines()
        .filter_map(|l| serde_json::from_str(l).ok())
        .filter(|v: &serde_json::Value| v.get("t_s").is_some())
        .collect();
    (out, events)
}

/// PHA-D inside the router proxy process (`[pha_d]` in the router's config) reads the RTT of the
/// proxy's own subflows from the kernel, and its flag changes make the kernel send MP_PRIO on
/// them (`MPTcpExtMPPrioTx`); SIGTERM leaves every endpoint regular.
#[test]
fn pha_d_in_the_router_reads_its_subflows_and_sends_mp_prio() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut t = Topo::new("pd", Some("20mbit"), true);
    // Endpoints for the flags (no signal/subflow role: the server's ADD_ADDR makes the second subflow).
    sh(&["ip", "-n", &t.r, "mptcp", "endpoint", "add", "10.1.0.1", "id", "1"]).unwrap();
    sh(&["ip", "-n", &t.r, "mptcp", "endpoint", "add", "10.2.0.1", "id", "2"]).unwrap();
    let extra = pha_d_section(&t, "");
    let (_, rp) = t.start_pair_with(KEY, 65536, &extra);
    // An upload through the proxy keeps both subflows busy.
    let sk = sink(&t.s, 9000, true);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let stop2 = stop.clone();
    let sender = Topo::inside(&t.r, move || {
        let (mut s, rep) = socks_connect(9000);
        assert_eq!(rep, 0);
        s.set_write_timeout(Some(Duration::from_millis(200))).unwrap();
        let buf = vec![0x5au8; 65536];
        while !stop2.load(Ordering::Relaxed) {
            let _ = s.write(&buf);
        }
    });
    std::thread::sleep(Duration::from_millis(1500));
    let prio_before = mptcp_mib(&t.r, "MPPrioTx");
    // The ride: 80 m/s from 900 m, a GGA every 100 ms; A's range [1000, 1100] is 1.25-2.5 s ahead.
    ride_80mps_from_900m(&t.r, TRACK_CSV);
    let prio_sent = mptcp_mib(&t.r, "MPPrioTx") - prio_before;
    stop.store(true, Ordering::Relaxed);
    sender.join().unwrap();
    assert!(sk.bytes.load(Ordering::SeqCst) > 1_000_000, "the upload ran");
    let (out, events) = stop_router_and_read_decisions(&t, rp);
    let b1 = events
        .iter()
        .find(|e| e["backup"] == true)
        .unwrap_or_else(|| panic!("no B=1:\n{out}\n{}", t.log("router")));
    assert_eq!(b1["endpoint_id"], 1);
    let rtt = b1["rtt_ms"].as_f64().unwrap();
    // Measured by the kernel on the proxy's subflow (no added delay: well below the 100 ms assumed without one).
    assert!(rtt > 0.0 && rtt < 60.0, "B=1 used RTT {rtt} ms: {b1}");
    let lead = b1["predicted_lead_ms"].as_f64().unwrap();
    let drain = b1["drain_ms"].as_f64().unwrap();
    // B=1 at the first decision where the time to the range is within RTT + drain + 3 GPS periods
    // (the drain measured then; it moves between decisions, so the lead may fall below the
    // threshold by what it grew, but never below RTT + 3 periods by more than a tick, 50 ms).
    assert!(
        lead <= rtt + drain + 300.0 + 1.0 && lead > rtt + 300.0 - 60.0,
        "lead {lead} vs RTT {rtt} + drain {drain} + 3 GPS periods: {b1}"
    );
    assert!(
        events
            .iter()
            .any(|e| e["backup"] == false && e["endpoint_id"] == 1 && e["resend"] == false),
        "no B=0:\n{out}"
    );
    assert!(
        !events.iter().any(|e| e["backup"] == true && e["endpoint_id"] == 2),
        "B's range is far away:\n{out}"
    );
    // B=1 and B=0 each went out as MP_PRIO on endpoint 1's subflow(s), plus one pair per re-send.
    let resends = events.iter().filter(|e| e["resend"] == true).count() as u64;
    assert!(
        prio_sent >= 2 + 2 * resends,
        "MPTcpExtMPPrioTx +{prio_sent}, {resends} re-sends:\n{out}"
    );
    eprintln!("B=1 {b1}; MP_PRIO sent {prio_sent}; re-sends {resends}");
}

/// A destination in `ns` at 127.0.0.1:`port` that writes to every connection until it closes.
fn source_at(ns: &str, port: u16) {
    let (tx, rx) = std::sync::mpsc::channel();
    Topo::inside(ns, move || {
        let l = TcpListener::bind(("127.0.0.1", port)).unwrap();
        tx.send(()).unwrap();
        for s in l.incoming() {
            let Ok(mut s) = s else { break };
            std::thread::spawn(move || {
                let buf = vec![0x5au8; 65536];
                while s.write_all(&buf).is_ok() {}
            });
        }
    });
    rx.recv().unwrap();
}

/// Downloads: the queue waiting for the handing-over path sits in the server proxy's kernel,
/// out of the router's sight. With `peer_metrics`, the router's PHA-D reads the server's drain
/// time and RTT towards each uplink from the server proxy's metrics endpoint, and its B=1 leads
/// by the server's queue too.
#[test]
fn queue_aware_lead_on_download_includes_the_server_queue() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut t = Topo::new("pq", Some("20mbit"), true);
    // The download's bottleneck: 20 Mbit/s on the server's side of each link.
    for i in 1..=2 {
        sh(&[
            "tc",
            "-n",
            &t.s,
            "qdisc",
            "add",
            "dev",
            &format!("vs{i}"),
            "root",
            "tbf",
            "rate",
            "20mbit",
            "burst",
            "32kb",
            "latency",
            "50ms",
        ])
        .unwrap();
    }
    sh(&["ip", "-n", &t.r, "mptcp", "endpoint", "add", "10.1.0.1", "id", "1"]).unwrap();
    sh(&["ip", "-n", &t.r, "mptcp", "endpoint", "add", "10.2.0.1", "id", "2"]).unwrap();
    let extra = pha_d_section(
        &t,
        "peer_metrics = \"http://10.1.0.2:9464/metrics\"\npeer_poll_ms = 50\n",
    );
    let (_, rp) = t.start_pair_with(KEY, 65536, &extra);
    source_at(&t.s, 9000);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let got = Arc::new(AtomicU64::new(0));
    let (stop2, got2) = (stop.clone(), got.clone());
    let receiver = Topo::inside(&t.r, move || {
        let (mut s, rep) = socks_connect(9000);
        assert_eq!(rep, 0);
        s.set_read_timeout(Some(Duration::from_millis(200))).unwrap();
        let mut buf = vec![0u8; 65536];
        while !stop2.load(Ordering::Relaxed) {
            match s.read(&mut buf) {
                Ok(0) => break,
                Ok(n) => {
                    got2.fetch_add(n as u64, Ordering::Relaxed);
                }
                Err(_) => {}
            }
        }
    });
    std::thread::sleep(Duration::from_millis(1500));
    let server_metrics = metrics(&t.s);
    ride_80mps_from_900m(&t.r, TRACK_CSV);
    stop.store(true, Ordering::Relaxed);
    receiver.join().unwrap();
    assert!(
        got.load(Ordering::Relaxed) > 2_000_000,
        "the download ran: {} bytes",
        got.load(Ordering::Relaxed)
    );
    assert!(
        server_metrics.lines().any(
            |l| l.starts_with("mobipath_proxy_subflow_drain_seconds{side=\"server\"")
                && l.contains("remote=\"10.1.0.1:")
        ),
        "{server_metrics}"
    );
    let (out, events) = stop_router_and_read_decisions(&t, rp);
    assert!(
        out.contains("{\"pha_d\":\"peer\",\"ok\":true"),
        "the router never read the server's metrics:\n{out}\n{}",
        t.log("router")
    );
    let b1 = events
        .iter()
        .find(|e| e["backup"] == true)
        .unwrap_or_else(|| panic!("no B=1:\n{out}\n{}", t.log("router")));
    assert_eq!(b1["endpoint_id"], 1);
    let f = |k: &str| b1[k].as_f64().unwrap_or_else(|| panic!("{k} missing: {b1}"));
    let (rtt, drain, peer, lead) = (f("rtt_ms"), f("drain_ms"), f("peer_drain_ms"), f("predicted_lead_ms"));
    // The server had data queued for path 1 when B=1 went out, and the lead counted it.
    assert!(peer > 0.0 && drain >= peer, "B=1 without the server's queue: {b1}");
    assert!(
        lead <= rtt + drain + 300.0 + 1.0 && lead > rtt + 300.0 - 60.0,
        "lead {lead} vs RTT {rtt} + drain {drain} + 3 GPS periods: {b1}"
    );
    eprintln!("download B=1 {b1}");
}

fn slow_start_after_idle(ns: &str) -> String {
    let out = Command::new("ip")
        .args([
            "netns",
            "exec",
            ns,
            "cat",
            "/proc/sys/net/ipv4/tcp_slow_start_after_idle",
        ])
        .output()
        .unwrap();
    String::from_utf8_lossy(&out.stdout).trim().to_string()
}

/// `[server] slow_start_after_idle = "off"`: the server proxy (the sender of downloads) turns the
/// window restart after idle off in its namespace while it serves and puts it back on SIGTERM.
#[test]
fn server_turns_idle_restart_off_while_serving() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut t = Topo::new("si", None, false);
    let s = t.s.clone();
    assert_eq!(
        slow_start_after_idle(&s),
        "1",
        "a new namespace starts with Linux's default"
    );
    let cfg = t.write("server-si.toml", &format!("[server]\nlisten = \"0.0.0.0:7000\"\nkey = \"{KEY}\"\nslow_start_after_idle = \"off\"\n[metrics]\nlisten = \"127.0.0.1:9464\"\n[limits]\nshutdown_grace_s = 0\n"));
    let pid = t.start(&s, "server", &cfg, "server");
    wait_listening(&s, "127.0.0.1:9464");
    assert_eq!(slow_start_after_idle(&s), "0", "{}", t.log("server"));
    unsafe { libc::kill(pid as i32, libc::SIGTERM) };
    let deadline = Instant::now() + Duration::from_secs(5);
    while std::fs::read_to_string(format!("/proc/{pid}/stat")).is_ok_and(|st| !st.contains(") Z ")) {
        assert!(Instant::now() < deadline, "server did not exit after SIGTERM");
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(slow_start_after_idle(&s), "1", "restored on exit: {}", t.log("server"));
}

/// The in-kernel path manager sends MP_PRIO only when an endpoint's backup flag changes: a
/// `regular` on a regular endpoint sends none, so PHA-D re-sends B=0 as B=1 then B=0 — two
/// MP_PRIO on the connection's subflow from that endpoint (`MPTcpExtMPPrioTx` +2), ending regular.
#[test]
fn b0_resend_sends_mp_prio_again() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut t = Topo::new("rs", Some("20mbit"), true);
    sh(&["ip", "-n", &t.r, "mptcp", "endpoint", "add", "10.1.0.1", "id", "1"]).unwrap();
    sh(&["ip", "-n", &t.r, "mptcp", "endpoint", "add", "10.2.0.1", "id", "2"]).unwrap();
    t.start_pair(KEY, 65536);
    let _sk = sink(&t.s, 9000, true);
    let conn = Topo::inside(&t.r, || socks_connect(9000)).join().unwrap();
    assert_eq!(conn.1, 0);
    std::thread::sleep(Duration::from_millis(500));
    let mut child = Command::new("ip")
        .args([
            "netns",
            "exec",
            &t.r,
            BIN,
            "flags",
            "--endpoints",
            "1,2",
            "--min-interval-ms",
            "0",
        ])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    std::thread::sleep(Duration::from_millis(300)); // its start-up restore (no change: nothing sent)
    let mut step = |cmd: &str| {
        let before = mptcp_mib(&t.r, "MPPrioTx");
        stdin.write_all(format!("{cmd}\n").as_bytes()).unwrap();
        std::thread::sleep(Duration::from_millis(300));
        mptcp_mib(&t.r, "MPPrioTx") - before
    };
    assert_eq!(step("regular 1"), 0, "no change, no MP_PRIO");
    assert_eq!(step("resend 1"), 2, "B=1 then B=0");
    assert!(!is_backup(&endpoint_show(&t.r), 1));
    assert_eq!(step("backup 1"), 1);
    assert_eq!(step("regular 1"), 1);
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(String::from_utf8_lossy(&out.stdout).contains("\"resend\":true"));
    drop(conn);
}

/// A `[pha_d]` that cannot start (its endpoint does not exist) never takes the router proxy down:
/// it serves, and says why PHA-D is not running.
#[test]
fn router_serves_when_pha_d_cannot_start() {
    skip_unless_able!();
    let _g = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let mut t = Topo::new("pm", None, false);
    let table = t.write("table.csv", "operator,start_m,end_m,count\nA,1000,1100,1\n");
    let track = t.write("track.csv", "lat,lon\n37.0,127.0\n37.0,127.1\n");
    let extra = format!("[pha_d]\ngps = \"nmea-udp:127.0.0.1:10110\"\ntable = \"{table}\"\ntrack = \"{track}\"\nsubflows = [{{ operator = \"A\", endpoint = 9 }}]\n");
    t.start_pair_with(KEY, 65536, &extra); // waits until the SOCKS listener accepts
    let log = t.log("router");
    assert!(
        log.contains("no MPTCP endpoint with id 9") && log.contains("the router proxy serves without it"),
        "{log}"
    );
}
