//! The live PHA-D loop: GPS events and a tick drive the [`Controller`]; its decisions go to the
//! endpoints' flags through the [`FailSafe`] layer (netlink `MPTCP_PM_CMD_SET_FLAGS`); each
//! subflow's RTT, RTO, send-queue drain time and data counter come from the kernel
//! (`MPTCP_TCPINFO` / `MPTCP_SUBFLOW_ADDRS`) on the router proxy's own MPTCP connections, matched
//! to endpoints by local address.
//!
//! Fail-safe: every endpoint regular (and a fresh controller, so deciding restarts from the next
//! good fixes) at start; when no usable fix came for `stale_s`; when the GPS source ends (gpsd
//! gone, end of file, read error; it is started again after `retry_s`); on any unusable input
//! (a bad sentence or report, counted per kind); on a fix farther than `max_offset_m` from the
//! track or implying a speed above `max_speed_mps` along it; and on the way out (stop, signal,
//! error). The flags layer never lets every endpoint be backup at once and rate-limits B=1.
use std::collections::{BTreeMap, HashMap};
use std::net::IpAddr;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{mpsc, watch};
use tokio::time::Instant;

use super::config::PhaDSettings;
use super::controller::{Controller, Decision, Obs};
use super::gps::{self, GpsEvent};
use super::peer::SharedView;
use super::table::Table;
use crate::failsafe::{FailSafe, Flags};
use crate::idle::{IdleRestartGuard, SSAI};
use crate::metrics::Registry;
use crate::mptcp;
use crate::text::json_str;

/// Reads the kernel's view of the router proxy's subflows, per endpoint, and (with
/// `peer_metrics`) the server proxy's view of the same paths.
pub struct Observer {
    pub reg: Arc<Registry>,
    pub addrs: Vec<Option<IpAddr>>,
    last: HashMap<(u64, usize), u64>,
    acc: Vec<u64>,
    peer: Option<PeerSide>,
}

/// The server proxy's figures (phad/peer.rs) and, per endpoint, the address it sees for it.
pub struct PeerSide {
    pub view: SharedView,
    pub seen_as: Vec<Option<IpAddr>>,
    pub stale: Duration,
}

impl Observer {
    pub fn new(reg: Arc<Registry>, addrs: Vec<Option<IpAddr>>) -> Self {
        let n = addrs.len();
        Observer {
            reg,
            addrs,
            last: HashMap::new(),
            acc: vec![0; n],
            peer: None,
        }
    }

    /// Also take the server's RTT and drain towards each endpoint (the larger of the two ends).
    pub fn with_peer(mut self, peer: PeerSide) -> Self {
        self.peer = Some(peer);
        self
    }

    /// One observation per endpoint: the largest smoothed RTT and RTO among its subflows, the
    /// longest drain time (not-yet-sent bytes over max(delivery rate, cwnd·mss/RTT)), and a
    /// counter of the bytes the path carried (received + acked; it only grows, across
    /// connections that come and go).
    pub fn observe(&mut self) -> Vec<Obs> {
        let mut out = vec![Obs::default(); self.addrs.len()];
        let mut seen = HashMap::new();
        let (addrs, last, acc) = (&self.addrs, &mut self.last, &mut self.acc);
        self.reg.each_mptcp("router", |conn, fd| {
            for (i, s) in mptcp::subflows(fd).into_iter().enumerate() {
                let Some(k) = s.local.and_then(|l| addrs.iter().position(|a| *a == Some(l.ip()))) else {
                    continue;
                };
                let t = &s.info;
                let o = &mut out[k];
                o.has_subflows = true;
                o.rtt = o.rtt.max(t.rtt_us as u64 * 1000);
                o.rto = o.rto.max(t.rto_us as u64 * 1000);
                if let Some(d) = t.drain_ns() {
                    o.drain = o.drain.max(d);
                }
                let carried = t.bytes_received + t.bytes_acked;
                let prev = last.get(&(conn, i)).copied().unwrap_or(0);
                acc[k] += carried.saturating_sub(prev);
                seen.insert((conn, i), carried);
            }
        });
        self.last = seen;
        for (o, a) in out.iter_mut().zip(&self.acc) {
            o.rx = *a;
        }
        if let Some(p) = &self.peer {
            let view = p.view.lock().unwrap();
            let now = Instant::now();
            for (o, addr) in out.iter_mut().zip(&p.seen_as) {
                if let Some((rtt, drain)) = addr.and_then(|a| view.towards(a, now, p.stale)) {
                    o.rtt = o.rtt.max(rtt);
                    o.drain = o.drain.max(drain);
                    o.peer_drain = Some(drain);
                }
            }
        }
        out
    }
}

struct Loop<F: Flags> {
    s: PhaDSettings,
    table: Arc<Table>,
    fs: FailSafe<F>,
    ctl: Controller<Arc<Table>>,
    t0: Instant,
    failed_safe: bool,
    last_fix: Option<Instant>,
    last_pos: Option<(Instant, f64)>,
    bad: BTreeMap<&'static str, u64>,
    fixes: u64,
    changes: u64,
}

impl<F: Flags> Loop<F> {
    fn fresh(&self) -> Controller<Arc<Table>> {
        Controller::new(
            self.s.ctl,
            self.table.clone(),
            self.s.subflows.iter().map(|(op, _)| Some(op.clone())).collect(),
            self.s.gps_period,
        )
    }

    fn now_ns(&self) -> u64 {
        self.t0.elapsed().as_nanos() as u64
    }

    fn fail_safe(&mut self, reason: &str) {
        self.fs.restore_all(reason);
        self.ctl = self.fresh();
        self.failed_safe = true;
        self.last_pos = None;
    }

    fn apply(&mut self, ds: Vec<Decision>, pos_m: Option<f64>) {
        for d in ds {
            let id = self.s.subflows[d.subflow].1;
            let now_s = d.at as f64 / 1e9;
            let ok = if d.resend {
                self.fs.resend_regular(id)
            } else {
                self.fs.set_backup(id, d.backup, now_s)
            };
            if !ok {
                continue;
            }
            self.changes += 1;
            let pos = pos_m.map_or("null".to_string(), |p| format!("{p:.3}"));
            println!(
                "{{\"t_s\":{:.6},\"endpoint_id\":{id},\"operator\":{},\"backup\":{},\"resend\":{},\"pos_m\":{pos},\"predicted_lead_ms\":{:.3},\"rtt_ms\":{:.3},\"drain_ms\":{:.3},\"peer_drain_ms\":{},\"idle_past_rto\":{}}}",
                now_s,
                json_str(&self.s.subflows[d.subflow].0),
                d.backup,
                d.resend,
                d.predicted_lead_ns as f64 / 1e6,
                d.rtt as f64 / 1e6,
                d.drain as f64 / 1e6,
                d.peer_drain.map_or("null".to_string(), |p| format!("{:.3}", p as f64 / 1e6)),
                d.idle_past_rto
            );
        }
    }

    fn on_position(&mut self, pos_m: f64, observe: &mut dyn FnMut() -> Vec<Obs>) {
        let now = Instant::now();
        if let Some((t, p)) = self.last_pos {
            let dt = now
                .duration_since(t)
                .as_secs_f64()
                .max(self.s.gps_period as f64 / 1e9 / 2.0);
            if (pos_m - p).abs() / dt > self.s.max_speed_mps {
                self.fail_safe(&format!(
                    "GPS position jumped {:.0} m along the track in {:.3} s (more than max_speed_mps = {})",
                    (pos_m - p).abs(),
                    dt,
                    self.s.max_speed_mps
                ));
                self.last_pos = Some((now, pos_m));
                return;
            }
        }
        self.last_pos = Some((now, pos_m));
        self.last_fix = Some(now);
        self.failed_safe = false;
        self.fixes += 1;
        let obs = observe();
        let ds = self.ctl.on_fix(self.now_ns(), pos_m, &obs);
        self.apply(ds, Some(pos_m));
    }
}

/// Runs PHA-D until `stop` turns true (then every endpoint is set regular and `Ok` returned), or
/// until the GPS source has failed more than `max_retries` times in a row (`Err`, after the
/// same restore).
pub async fn run<F: Flags>(
    s: PhaDSettings,
    table: Table,
    flags: F,
    mut observe: impl FnMut() -> Vec<Obs>,
    mut stop: watch::Receiver<bool>,
) -> Result<(), String> {
    let ids: Vec<u8> = s.subflows.iter().map(|x| x.1).collect();
    let mut fs = FailSafe::new(flags, ids, s.min_interval_s);
    fs.echo_changes = false;
    let table = Arc::new(table);
    let ctl = Controller::new(
        s.ctl,
        table.clone(),
        s.subflows.iter().map(|(op, _)| Some(op.clone())).collect(),
        s.gps_period,
    );
    let mut lp = Loop {
        s,
        table,
        fs,
        ctl,
        t0: Instant::now(),
        failed_safe: true,
        last_fix: None,
        last_pos: None,
        bad: BTreeMap::new(),
        fixes: 0,
        changes: 0,
    };
    lp.fs.restore_all("start");
    // A backup episode longer than the RTO idles the path; with slow start after idle (RFC 5681
    // §4.1, the Linux default) its sender then restarts from the initial window. The router can
    // only speak for its own (upload) side: say so once when it is on.
    // With `slow_start_after_idle = "off"` PHA-D turns it off in its namespace while it runs
    // (the guard puts the old value back when `run` returns or unwinds).
    let _idle_guard = if lp.s.idle_restart_off {
        IdleRestartGuard::turn_off(SSAI)
    } else {
        None
    };
    if std::fs::read_to_string(SSAI).is_ok_and(|v| v.trim() == "1") {
        println!("{{\"pha_d\":\"note\",\"why\":\"net.ipv4.tcp_slow_start_after_idle = 1: after a backup longer than the RTO this router's subflows restart from the initial window; set it to 0 here (upload; or slow_start_after_idle = \\\"off\\\" in [pha_d]) and on the server side (download) to keep the window\"}}");
    }
    let (mut tx, mut rx) = mpsc::channel::<GpsEvent>(256);
    let mut source = tokio::spawn(gps::run(lp.s.source.clone(), tx.clone()));
    let mut restart_at: Option<Instant> = None;
    let mut failures = 0u32;
    let tick_every =
        lp.s.tick
            .unwrap_or(Duration::from_millis(100))
            .max(Duration::from_millis(5));
    let mut tick = tokio::time::interval(tick_every);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let result: Result<String, String> = loop {
        tokio::select! {
            r = stop.changed() => {
                if r.is_err() || *stop.borrow() {
                    break Ok("stop".into());
                }
            }
            ev = rx.recv() => {
                let Some(ev) = ev else { continue };
                match ev {
                    GpsEvent::Fix { lat, lon } => {
                        let Some(track) = &lp.s.track else { continue };
                        let (pos, off) = track.project(lat, lon);
                        if off > lp.s.max_offset_m {
                            if !lp.failed_safe {
                                lp.fail_safe(&format!("GPS position {off:.0} m off the track (max_offset_m = {})", lp.s.max_offset_m));
                            }
                            continue;
                        }
                        failures = 0;
                        lp.on_position(pos, &mut observe);
                    }
                    GpsEvent::Position { pos_m } => {
                        failures = 0;
                        lp.on_position(pos_m, &mut observe);
                    }
                    GpsEvent::NoFix => {}
                    GpsEvent::Bad { kind, detail } => {
                        let n = lp.bad.entry(kind).or_default();
                        *n += 1;
                        println!("{{\"gps_bad\":{},\"detail\":{},\"count\":{n}}}", json_str(kind), json_str(&detail));
                        // Every bad line restores, also when already failed safe: it re-asserts
                        // B=0 on every endpoint (and retries one that failed). What stays in
                        // memory per line is a count (`bad`, FailSafe's counters and last lines).
                        lp.fail_safe(&format!("unusable GPS input ({kind})"));
                    }
                    GpsEvent::Ended(why) => {
                        lp.fail_safe(&format!("GPS source ended: {why}"));
                        failures += 1;
                        if lp.s.max_retries.is_some_and(|m| failures > m) {
                            break Err(format!("the GPS source failed {failures} times in a row: {why}"));
                        }
                        restart_at = Some(Instant::now() + lp.s.retry);
                    }
                }
            }
            _ = tick.tick() => {
                let now = Instant::now();
                if let Some(at) = restart_at {
                    if now >= at {
                        restart_at = None;
                        source.abort();
                        // A fresh channel: events of the old source must not arrive after its end.
                        (tx, rx) = mpsc::channel(256);
                        source = tokio::spawn(gps::run(lp.s.source.clone(), tx.clone()));
                    }
                }
                if lp.failed_safe {
                    continue;
                }
                if lp.last_fix.is_some_and(|l| now.duration_since(l) > lp.s.stale) {
                    let why = format!("no usable GPS fix for {} s", lp.s.stale.as_secs_f64());
                    lp.fail_safe(&why);
                    continue;
                }
                if lp.s.tick.is_some() {
                    let obs = observe();
                    let ds = lp.ctl.on_tick(lp.now_ns(), &obs);
                    lp.apply(ds, None);
                }
            }
        }
    };
    source.abort();
    let reason = match &result {
        Ok(r) => r.clone(),
        Err(e) => format!("error: {e}"),
    };
    lp.fs.restore_all(&reason);
    let bad = lp
        .bad
        .iter()
        .map(|(k, v)| format!("{}:{v}", json_str(k)))
        .collect::<Vec<_>>()
        .join(",");
    println!(
        "{{\"pha_d\":\"stopped\",\"reason\":{},\"fixes\":{},\"changes\":{},\"restores\":{},\"refusals\":{},\"bad\":{{{bad}}}}}",
        json_str(&reason),
        lp.fixes,
        lp.changes,
        lp.fs.restores,
        lp.fs.refusals
    );
    result.map(|_| ())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phad::config::PhaDSettings;
    use crate::phad::controller::{Config, Policy, NS_PER_MS};
    use crate::phad::gps::Source;

    #[derive(Default)]
    struct Rec(Vec<(u8, bool)>);
    impl Flags for Rec {
        fn set_backup(&mut self, id: u8, backup: bool) -> std::io::Result<()> {
            self.0.push((id, backup));
            Ok(())
        }
    }

    fn settings() -> PhaDSettings {
        PhaDSettings {
            source: Source::Replay("none".into()),
            table_file: "t.csv".into(),
            track: None,
            subflows: vec![("A".into(), 1), ("B".into(), 2)],
            ctl: Config {
                policy: Policy::QueueAware,
                lead_ms: 0.0,
                resend_b0: true,
            },
            gps_period: 100 * NS_PER_MS,
            tick: None,
            stale: Duration::from_secs(3),
            max_offset_m: 50.0,
            max_speed_mps: 150.0,
            min_interval_s: 0.0,
            retry: Duration::from_secs(1),
            max_retries: None,
            idle_restart_off: false,
            peer: None,
        }
    }

    /// Flags recorded where the test can still read them after `run` has taken the recorder.
    #[derive(Clone, Default)]
    struct Shared(Arc<std::sync::Mutex<Vec<(u8, bool)>>>);
    impl Flags for Shared {
        fn set_backup(&mut self, id: u8, backup: bool) -> std::io::Result<()> {
            self.0.lock().unwrap().push((id, backup));
            Ok(())
        }
    }

    /// A replay trace with a header and no rows is refused with the file named (as the simulator
    /// refuses it), not replayed as a ride that ends at once; refusing it goes through the
    /// fail-safe path: every endpoint regular, nothing ever backup, and (max_retries = 0) `run`
    /// gives up with the reason.
    #[tokio::test]
    async fn a_header_only_replay_is_refused_naming_the_file() {
        let dir = std::env::temp_dir().join(format!("phad-replay-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let file = dir.join("header-only.csv");
        std::fs::write(&file, "# recorded nothing\ntime_s,position_m\n\n").unwrap();
        let s = PhaDSettings {
            source: Source::Replay(file.clone()),
            max_retries: Some(0),
            ..settings()
        };
        let table = Table::parse("operator,start_m,end_m,count\nA,1000,1100,1\n", "t.csv").unwrap();
        let flags = Shared::default();
        let (_stop_tx, stop) = watch::channel(false);
        let r = tokio::time::timeout(
            Duration::from_secs(10),
            run(s, table, flags.clone(), || vec![Obs::default(); 2], stop),
        )
        .await
        .expect("run did not give up");
        let e = r.expect_err("a header-only replay must not be accepted");
        assert!(e.contains(&format!("{}: no fixes", file.display())), "{e}");
        let calls = flags.0.lock().unwrap().clone();
        // Restores at start, when the source ended, and on the way out; nothing else.
        assert_eq!(calls, [(1, false), (2, false)].repeat(3), "{calls:?}");
        let _ = std::fs::remove_dir_all(&dir);
    }

    /// With the server's figures, each endpoint takes the larger RTT and drain of the two ends
    /// for the address the server sees; figures older than `stale` are dropped.
    #[tokio::test(start_paused = true)]
    async fn observer_takes_the_server_queue_towards_each_endpoint() {
        use crate::phad::peer::{PeerSubflow, PeerView};
        let ip = |s: &str| s.parse::<IpAddr>().unwrap();
        let view: SharedView = Default::default();
        *view.lock().unwrap() = PeerView {
            at: Some(Instant::now()),
            subflows: vec![
                PeerSubflow {
                    remote: ip("10.1.0.1"),
                    rtt: 40 * NS_PER_MS,
                    drain: 180 * NS_PER_MS,
                },
                PeerSubflow {
                    remote: ip("10.1.0.1"),
                    rtt: 45 * NS_PER_MS,
                    drain: 20 * NS_PER_MS,
                },
                PeerSubflow {
                    remote: ip("192.0.2.7"),
                    rtt: 70 * NS_PER_MS,
                    drain: 5 * NS_PER_MS,
                },
            ],
        };
        let peer = PeerSide {
            view: view.clone(),
            seen_as: vec![Some(ip("10.1.0.1")), Some(ip("10.2.0.1"))],
            stale: Duration::from_secs(1),
        };
        let mut o = Observer::new(
            Arc::new(Registry::default()),
            vec![Some(ip("10.1.0.1")), Some(ip("10.2.0.1"))],
        )
        .with_peer(peer);
        let got = o.observe();
        assert_eq!(
            (got[0].rtt, got[0].drain, got[0].peer_drain),
            (45 * NS_PER_MS, 180 * NS_PER_MS, Some(180 * NS_PER_MS))
        );
        assert_eq!(got[1], Obs::default(), "no server subflow towards 10.2.0.1");
        tokio::time::advance(Duration::from_millis(1001)).await;
        assert_eq!(o.observe()[0], Obs::default(), "stale figures are not used");
    }

    /// Both operators hand over at the same place: the controller asks B=1 for both, the flags
    /// layer lets only the first through — never every endpoint backup at once — and a jump
    /// along the track restores every endpoint.
    #[tokio::test(start_paused = true)]
    async fn overlapping_ranges_never_make_every_endpoint_backup() {
        let table = Table::parse("operator,start_m,end_m,count\nA,1000,1100,1\nB,1000,1100,1\n", "t.csv").unwrap();
        let s = settings();
        let table = Arc::new(table);
        let ctl = Controller::new(
            s.ctl,
            table.clone(),
            vec![Some("A".into()), Some("B".into())],
            s.gps_period,
        );
        let mut fs = FailSafe::new(Rec::default(), vec![1, 2], 0.0);
        fs.echo_changes = false;
        let mut lp = Loop {
            s,
            table,
            fs,
            ctl,
            t0: Instant::now(),
            failed_safe: true,
            last_fix: None,
            last_pos: None,
            bad: BTreeMap::new(),
            fixes: 0,
            changes: 0,
        };
        let mut backups_seen = Vec::new();
        for i in 0..20 {
            lp.on_position(950.0 + 8.0 * i as f64, &mut || {
                vec![
                    Obs {
                        rtt: 20 * NS_PER_MS,
                        has_subflows: true,
                        ..Default::default()
                    };
                    2
                ]
            });
            let mut state = [false; 2];
            for &(id, b) in &lp.fs.inner.0 {
                state[id as usize - 1] = b;
            }
            assert!(
                !(state[0] && state[1]),
                "both endpoints backup after fix {i}: {:?}",
                lp.fs.inner.0
            );
            backups_seen.push(state);
            tokio::time::advance(Duration::from_millis(100)).await;
        }
        assert!(
            backups_seen.iter().any(|s| s[0] || s[1]),
            "one endpoint went backup: {:?}",
            lp.fs.inner.0
        );
        assert!(
            lp.fs
                .recent
                .iter()
                .any(|l| l.contains("it would leave no regular path")),
            "{:?}",
            lp.fs.recent
        );
        assert!(lp.fs.refusals > 0);
        // 500 m in 100 ms: untrustworthy, every endpoint regular.
        lp.on_position(1600.0, &mut || vec![Obs::default(); 2]);
        assert!(lp.failed_safe && lp.fs.recent.back().unwrap().contains("jumped"));
        assert_eq!(&lp.fs.inner.0[lp.fs.inner.0.len() - 2..], &[(1, false), (2, false)]);
    }
}
