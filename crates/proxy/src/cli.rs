//! Command line: `router`, `server` (alias `serve`), `check-config`, `keygen`. Exit status 0 on a
//! clean stop (SIGTERM/SIGINT), 1 on a runtime error, 2 on a usage or configuration error.
//!
//! Shutdown: on SIGTERM or SIGINT the listeners close at once (no new connections), connections
//! in progress get `limits.shutdown_grace_s` to finish, then the rest are dropped (reset).
use std::path::PathBuf;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{watch, Semaphore};

use crate::config::{self, Config};
use crate::metrics::{self, Registry};
use crate::{router, server};

pub const USAGE: &str = "\
mobipath-proxy: TCP <-> MPTCP proxy pair for a multipath router

usage:
  mobipath-proxy router --config FILE      SOCKS5/transparent listener -> MPTCP to the server side
  mobipath-proxy server --config FILE      MPTCP from authenticated routers -> TCP to allowed destinations
  mobipath-proxy pha-d --config FILE       PHA-D ([pha_d]): GPS + handover table -> endpoint backup flags;
                                           with a [router] section the router proxy runs in the same
                                           process and PHA-D reads its connections' subflows
  mobipath-proxy check-config --config FILE [--side router|server|pha-d]
  mobipath-proxy uci --config /etc/config/mobipath [--out FILE] [--print-side]
                                           OpenWrt's UCI config -> this TOML (checked; to stdout
                                           without --out); --print-side prints `SIDE ENABLED`
  mobipath-proxy keygen                    print a new random pre-shared key (hex, 32 bytes)
  mobipath-proxy endpoints                 list MPTCP endpoints and flags (netlink)
  mobipath-proxy flags --endpoints 1,2 [--min-interval-ms 1000]
                                           apply `backup ID` / `regular ID` / `resend ID` lines from stdin to
                                           endpoint flags over netlink with PHA-D's fail-safe rules
  mobipath-proxy --version

The config (TOML): sections [router], [server], [limits], [metrics], [pha_d]; the format in brief
in `mobipath router proxy --help`, in full in the proxy's README in mobipath's source tree.
check-config names the field and the allowed values of anything it refuses.";

#[derive(Clone, Copy, PartialEq, Debug)]
enum Side {
    Router,
    Server,
    PhaD,
}

fn parse_opts(args: &[String]) -> Result<(PathBuf, Option<Side>), String> {
    let mut config = None;
    let mut side = None;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--config" | "-c" => config = Some(PathBuf::from(it.next().ok_or("--config needs a FILE")?)),
            "--side" => {
                side = Some(match it.next().map(String::as_str) {
                    Some("router") => Side::Router,
                    Some("server") => Side::Server,
                    Some("pha-d") => Side::PhaD,
                    other => return Err(format!("--side must be router, server or pha-d, got {other:?}")),
                })
            }
            other => return Err(format!("unknown argument {other:?}")),
        }
    }
    Ok((config.ok_or("--config FILE is required")?, side))
}

fn load_for(path: &std::path::Path, side: Option<Side>) -> Result<Config, String> {
    let cfg = config::load(path).map_err(|e| e.to_string())?;
    let file = path.display();
    match side {
        Some(Side::Router) if cfg.router.is_none() => Err(format!("{file}: router: missing [router] section")),
        Some(Side::Server) if cfg.server.is_none() => Err(format!("{file}: server: missing [server] section")),
        Some(Side::PhaD) if cfg.pha_d.is_none() => Err(format!("{file}: pha_d: missing [pha_d] section")),
        None if cfg.router.is_none() && cfg.server.is_none() && cfg.pha_d.is_none() => {
            Err(format!("{file}: neither [router], [server] nor [pha_d] section"))
        }
        _ => Ok(cfg),
    }
}

pub fn main(args: Vec<String>) -> i32 {
    let cmd = args.first().map(String::as_str);
    match cmd {
        None | Some("-h") | Some("--help") | Some("help") => {
            println!("{USAGE}");
            if args.is_empty() {
                2
            } else {
                0
            }
        }
        Some("--version") | Some("-V") => {
            println!(
                "mobipath-proxy {} (commit {}, {})",
                env!("CARGO_PKG_VERSION"),
                env!("MOBIPATH_PROXY_COMMIT"),
                std::env::consts::ARCH
            );
            0
        }
        Some("keygen") => match crate::auth::fresh_nonce() {
            Ok(k) => {
                println!("{}", k.iter().map(|b| format!("{b:02x}")).collect::<String>());
                0
            }
            Err(e) => {
                eprintln!("mobipath-proxy: keygen: {e}");
                1
            }
        },
        Some("flags") => crate::failsafe::flags_main(&args[1..]),
        Some("uci") => crate::uci::uci_main(&args[1..]),
        Some("endpoints") => match crate::netlink::MptcpPm::open().and_then(|mut pm| pm.endpoints()) {
            Ok(eps) => {
                for e in eps {
                    let addr = e.addr.map(|a| a.to_string()).unwrap_or_default();
                    println!(
                        "id {} addr {addr} flags {:#x}{}",
                        e.id,
                        e.flags,
                        if e.backup() { " backup" } else { "" }
                    );
                }
                0
            }
            Err(e) => {
                eprintln!("mobipath-proxy endpoints: {e}");
                1
            }
        },
        Some(c @ ("router" | "server" | "serve" | "pha-d" | "check-config")) => {
            let (path, side) = match parse_opts(&args[1..]) {
                Ok(x) => x,
                Err(e) => {
                    eprintln!("mobipath-proxy {c}: {e}\n\n{USAGE}");
                    return 2;
                }
            };
            let side = match c {
                "router" => Some(Side::Router),
                "server" | "serve" => Some(Side::Server),
                "pha-d" => Some(Side::PhaD),
                _ => side,
            };
            let cfg = match load_for(&path, side) {
                Ok(c) => c,
                Err(e) => {
                    eprintln!("mobipath-proxy: config error: {e}");
                    return 2;
                }
            };
            if c == "check-config" {
                // A GPS source is opened when PHA-D starts (a bad one then fails safe and is
                // retried, without stopping the proxy); asked to check, say now what is wrong.
                if let Some((s, _)) = &cfg.pha_d {
                    if let Err(errs) = s.source.check_now() {
                        eprintln!("mobipath-proxy: config error: pha_d.gps: {}", errs.join("; "));
                        return 2;
                    }
                }
                println!("{}: ok", path.display());
                return 0;
            }
            run(cfg, side.unwrap())
        }
        Some(other) => {
            eprintln!("mobipath-proxy: unknown command {other:?}\n\n{USAGE}");
            2
        }
    }
}

fn run(cfg: Config, side: Side) -> i32 {
    let rt = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(cfg.limits.worker_threads)
        .enable_all()
        .build()
    {
        Ok(rt) => rt,
        Err(e) => {
            eprintln!("mobipath-proxy: cannot start the runtime: {e}");
            return 1;
        }
    };
    let code = rt.block_on(serve(cfg, side));
    // Connections still open after the grace period are dropped here.
    rt.shutdown_timeout(Duration::from_millis(200));
    code
}

/// Starts PHA-D (`[pha_d]`) on the router's registry: endpoint addresses from netlink, flags
/// through netlink. Errors before it starts (no netlink, a listed endpoint missing) are returned.
fn start_pha_d(
    settings: crate::phad::config::PhaDSettings,
    table: crate::phad::table::Table,
    reg: Arc<Registry>,
    stop: watch::Receiver<bool>,
) -> Result<tokio::task::JoinHandle<Result<(), String>>, String> {
    use crate::netlink::MptcpPm;
    let mut pm = MptcpPm::open().map_err(|e| format!("pha_d: netlink: {e}"))?;
    let eps = pm.endpoints().map_err(|e| format!("pha_d: netlink: {e}"))?;
    let mut addrs = Vec::new();
    for (i, (_, id)) in settings.subflows.iter().enumerate() {
        match eps.iter().find(|e| e.id == *id) {
            Some(e) => addrs.push(e.addr),
            None => {
                return Err(format!(
                    "pha_d.subflows[{i}].endpoint: no MPTCP endpoint with id {id} (`ip mptcp endpoint show`)"
                ))
            }
        }
    }
    let mut obs = crate::phad::daemon::Observer::new(reg, addrs.clone());
    if let Some(p) = &settings.peer {
        // The server sees each uplink by its own address unless NAT rewrites it (peer_address).
        let seen_as = p.seen_as.iter().zip(&addrs).map(|(over, own)| over.or(*own)).collect();
        let view = crate::phad::peer::SharedView::default();
        tokio::spawn(crate::phad::peer::poll(p.settings.clone(), view.clone(), stop.clone()));
        obs = obs.with_peer(crate::phad::daemon::PeerSide {
            view,
            seen_as,
            stale: p.settings.stale,
        });
        log!(
            "pha-d: server queues from http://{}{} every {} ms",
            p.settings.authority,
            p.settings.path,
            p.settings.poll.as_millis()
        );
    }
    log!(
        "pha-d: {} endpoint(s), GPS {:?}, table {}",
        settings.subflows.len(),
        settings.source,
        settings.table_file.display()
    );
    Ok(tokio::spawn(crate::phad::daemon::run(
        settings,
        table,
        pm,
        move || obs.observe(),
        stop,
    )))
}

/// Every listed endpoint regular, from a fresh netlink socket (after PHA-D's task failed).
fn restore_endpoints(ids: &[u8]) {
    if let Ok(mut pm) = crate::netlink::MptcpPm::open() {
        for &id in ids {
            if let Err(e) = pm.set_backup(id, false) {
                log!("pha-d: restoring endpoint {id}: {e}");
            }
        }
    }
}

async fn serve(mut cfg: Config, side: Side) -> i32 {
    use tokio::signal::unix::{signal, SignalKind};
    let (mut term, mut int, mut hup, mut quit) = match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
        signal(SignalKind::hangup()),
        signal(SignalKind::quit()),
    ) {
        (Ok(t), Ok(i), Ok(h), Ok(q)) => (t, i, h, q),
        _ => {
            eprintln!("mobipath-proxy: cannot install signal handlers");
            return 1;
        }
    };
    let reg = Arc::new(Registry::default());
    let max = cfg.limits.max_connections;
    let slots = Arc::new(Semaphore::new(max));
    let (stop_tx, stop_rx) = watch::channel(false);
    if let Some(addr) = cfg.metrics_listen {
        match crate::mptcp::listen_tcp(addr, 64) {
            Ok(l) => {
                log!("metrics on http://{addr}/metrics");
                tokio::spawn(metrics::serve(l, reg.clone()));
            }
            Err(e) => {
                eprintln!("mobipath-proxy: metrics.listen: {e}");
                return 1;
            }
        }
    }
    let grace = cfg.limits.shutdown_grace;
    let mut pha_d_ids = Vec::new();
    let has_router;
    let mut pha_d = match (side, cfg.pha_d.take()) {
        (Side::Router | Side::PhaD, Some((settings, table))) => {
            pha_d_ids = settings.subflows.iter().map(|s| s.1).collect();
            match start_pha_d(settings, table, reg.clone(), stop_rx.clone()) {
                Ok(h) => Some(h),
                Err(e) if side == Side::PhaD && cfg.router.is_none() => {
                    eprintln!("mobipath-proxy: {e}");
                    restore_endpoints(&pha_d_ids);
                    return 1;
                }
                Err(e) => {
                    // The router proxy still serves (PHA-D never takes it down).
                    log!("{e}; PHA-D not started, the router proxy serves without it");
                    restore_endpoints(&pha_d_ids);
                    None
                }
            }
        }
        _ => None,
    };
    // The server proxy is the sender of downloads: with `slow_start_after_idle = "off"` its
    // subflows keep their window across a router's backup span (src/idle.rs). Held until `serve`
    // returns (signals, errors) or unwinds, then the old value is put back.
    let _idle_guard = match (side, &cfg.server) {
        (Side::Server, Some(s)) if s.idle_restart_off => crate::idle::IdleRestartGuard::turn_off(crate::idle::SSAI),
        _ => None,
    };
    let main = {
        let (reg, slots, limits) = (reg.clone(), slots.clone(), cfg.limits.clone());
        let router_cfg = cfg.router.take();
        has_router = router_cfg.is_some() && side != Side::Server;
        async move {
            match (side, router_cfg) {
                (Side::Server, _) => server::run(cfg.server.unwrap(), limits, reg, slots, stop_rx).await,
                (_, Some(r)) => router::run(r, limits, reg, slots, stop_rx).await,
                // PHA-D alone: nothing to serve; run until a signal.
                (_, None) => std::future::pending().await,
            }
        }
    };
    let mut main = tokio::spawn(main);
    // PHA-D ending on its own (the GPS source gave up, a panic) never takes the router proxy
    // down: every endpoint is regular (its own restore, or a fresh one after a panic) and the
    // proxy keeps serving; `pha-d` without `[router]` exits 1.
    let code = loop {
        let pha_d_done = async {
            match pha_d.as_mut() {
                Some(h) => h.await,
                None => std::future::pending().await,
            }
        };
        tokio::select! {
            r = &mut main => {
                break match r {
                    Ok(Ok(())) => 0,
                    Ok(Err(e)) => { eprintln!("mobipath-proxy: {e}"); 1 }
                    Err(e) => { eprintln!("mobipath-proxy: {e}"); 1 }
                };
            }
            r = pha_d_done => {
                pha_d = None;
                let code = match r {
                    Ok(Ok(())) => 0,
                    Ok(Err(e)) => { eprintln!("mobipath-proxy: pha-d: {e}"); 1 }
                    Err(e) => {
                        // A panic in PHA-D: its own restore did not run.
                        eprintln!("mobipath-proxy: pha-d: {e}");
                        restore_endpoints(&pha_d_ids);
                        1
                    }
                };
                if !has_router {
                    break code;
                }
                log!("pha-d stopped; every endpoint regular; the router proxy keeps serving");
            }
            _ = term.recv() => { log!("SIGTERM: closing listeners"); break 0 }
            _ = int.recv() => { log!("SIGINT: closing listeners"); break 0 }
            _ = hup.recv() => { log!("SIGHUP: closing listeners"); break 0 }
            _ = quit.recv() => { log!("SIGQUIT: closing listeners"); break 0 }
        }
    };
    let _ = stop_tx.send(true);
    if let Some(h) = pha_d {
        // PHA-D sets every endpoint regular on stop; wait for it (bounded).
        match tokio::time::timeout(Duration::from_secs(5), h).await {
            Ok(Ok(_)) => {}
            _ => restore_endpoints(&pha_d_ids),
        }
    }
    let deadline = tokio::time::Instant::now() + grace;
    while slots.available_permits() < max && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = max - slots.available_permits();
    if left > 0 {
        log!(
            "shutdown: dropping {left} connection(s) still open after {}s",
            grace.as_secs()
        );
    }
    code
}
