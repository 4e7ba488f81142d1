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
  mobipath-proxy check-config --config FILE [--side router|server]
  mobipath-proxy keygen                    print a new random pre-shared key (hex, 32 bytes)
  mobipath-proxy endpoints                 list MPTCP endpoints and flags (netlink)
  mobipath-proxy flags --endpoints 1,2 [--min-interval-ms 1000]
                                           apply `backup ID` / `regular ID` lines from stdin to
                                           endpoint flags over netlink with PHA-D's fail-safe rules
  mobipath-proxy --version

The config format is described in crates/proxy/README.md.";

#[derive(Clone, Copy, PartialEq, Debug)]
enum Side {
    Router,
    Server,
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
                    other => return Err(format!("--side must be router or server, got {other:?}")),
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
        None if cfg.router.is_none() && cfg.server.is_none() => Err(format!("{file}: neither [router] nor [server] section")),
        _ => Ok(cfg),
    }
}

pub fn main(args: Vec<String>) -> i32 {
    let cmd = args.first().map(String::as_str);
    match cmd {
        None | Some("-h") | Some("--help") | Some("help") => {
            println!("{USAGE}");
            if args.is_empty() { 2 } else { 0 }
        }
        Some("--version") | Some("-V") => {
            println!("mobipath-proxy {}", env!("CARGO_PKG_VERSION"));
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
        Some("endpoints") => match crate::netlink::MptcpPm::open().and_then(|mut pm| pm.endpoints()) {
            Ok(eps) => {
                for e in eps {
                    let addr = e.addr.map(|a| a.to_string()).unwrap_or_default();
                    println!("id {} addr {addr} flags {:#x}{}", e.id, e.flags, if e.backup() { " backup" } else { "" });
                }
                0
            }
            Err(e) => {
                eprintln!("mobipath-proxy endpoints: {e}");
                1
            }
        },
        Some(c @ ("router" | "server" | "serve" | "check-config")) => {
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
    let rt = match tokio::runtime::Builder::new_multi_thread().worker_threads(cfg.limits.worker_threads).enable_all().build() {
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

async fn serve(cfg: Config, side: Side) -> i32 {
    use tokio::signal::unix::{signal, SignalKind};
    let (mut term, mut int) = match (signal(SignalKind::terminate()), signal(SignalKind::interrupt())) {
        (Ok(t), Ok(i)) => (t, i),
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
    let main = {
        let (reg, slots, limits) = (reg.clone(), slots.clone(), cfg.limits.clone());
        async move {
            match side {
                Side::Router => router::run(cfg.router.unwrap(), limits, reg, slots, stop_rx).await,
                Side::Server => server::run(cfg.server.unwrap(), limits, reg, slots, stop_rx).await,
            }
        }
    };
    let main = tokio::spawn(main);
    tokio::select! {
        r = main => {
            return match r {
                Ok(Ok(())) => 0,
                Ok(Err(e)) => { eprintln!("mobipath-proxy: {e}"); 1 }
                Err(e) => { eprintln!("mobipath-proxy: {e}"); 1 }
            };
        }
        _ = term.recv() => log!("SIGTERM: closing listeners"),
        _ = int.recv() => log!("SIGINT: closing listeners"),
    }
    let _ = stop_tx.send(true);
    let deadline = tokio::time::Instant::now() + grace;
    while slots.available_permits() < max && tokio::time::Instant::now() < deadline {
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    let left = max - slots.available_permits();
    if left > 0 {
        log!("shutdown: dropping {left} connection(s) still open after {}s", grace.as_secs());
    }
    0
}
