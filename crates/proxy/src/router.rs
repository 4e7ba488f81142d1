//! Router side (`mobipath-proxy router`): plain TCP from the train's LAN — as SOCKS5 (RFC 1928)
//! or transparently (TPROXY / IP_TRANSPARENT, destination = the accepted socket's local address)
//! — and one MPTCP connection per client connection to the server side, authenticated there
//! (`auth`) before any byte flows.
use std::io;
use std::net::SocketAddr;
use std::sync::Arc;

use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{watch, Semaphore};

use crate::auth::{self, Request, Status};
use crate::config::{Limits, RouterConfig};
use crate::dest::Dest;
use crate::metrics::{Conn, Registry};
use crate::mptcp;
use crate::relay::{relay, Counters};
use crate::server::FdDup;
use crate::socks5::{self, Reply};

const SIDE: &str = "router";

#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Socks,
    Transparent,
}

pub async fn run(
    cfg: RouterConfig,
    limits: Limits,
    reg: Arc<Registry>,
    slots: Arc<Semaphore>,
    stop: watch::Receiver<bool>,
) -> io::Result<()> {
    let cfg = Arc::new(cfg);
    let mut tasks = Vec::new();
    if let Some(a) = cfg.socks_listen {
        let l = mptcp::listen_tcp(a, 1024)?;
        log!("router: SOCKS5 on {a} -> {} (MPTCP)", cfg.server);
        tasks.push(tokio::spawn(accept_loop(
            l,
            Mode::Socks,
            cfg.clone(),
            limits.clone(),
            reg.clone(),
            slots.clone(),
            stop.clone(),
        )));
    }
    if let Some(a) = cfg.transparent_listen {
        let l = mptcp::listen_transparent(a, 1024)?;
        log!("router: transparent on {a} -> {} (MPTCP)", cfg.server);
        tasks.push(tokio::spawn(accept_loop(
            l,
            Mode::Transparent,
            cfg.clone(),
            limits.clone(),
            reg.clone(),
            slots.clone(),
            stop.clone(),
        )));
    }
    for t in tasks {
        let _ = t.await;
    }
    Ok(())
}

async fn accept_loop(
    l: TcpListener,
    mode: Mode,
    cfg: Arc<RouterConfig>,
    limits: Limits,
    reg: Arc<Registry>,
    slots: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) {
    let listen_addr = l.local_addr().ok();
    loop {
        let (stream, peer) = tokio::select! {
            _ = stop.changed() => return,
            r = l.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    log!("router: accept: {e}");
                    tokio::time::sleep(std::time::Duration::from_millis(100)).await;
                    continue;
                }
            },
        };
        let Ok(permit) = slots.clone().try_acquire_owned() else {
            reg.event(SIDE, "refused_limit");
            drop(stream);
            continue;
        };
        let (cfg, limits, reg) = (cfg.clone(), limits.clone(), reg.clone());
        tokio::spawn(async move {
            let id = reg.next_id();
            if let Err(e) = handle(id, stream, peer, mode, listen_addr, &cfg, &limits, &reg).await {
                log!("router: conn {id} from {peer}: {e}");
            }
            drop(permit);
        });
    }
}

fn reply_for(st: Status) -> Reply {
    match st {
        Status::Ok => Reply::Succeeded,
        Status::NotAllowed => Reply::NotAllowed,
        Status::ConnectFailed => Reply::HostUnreachable,
        Status::AuthFailed | Status::BadRequest => Reply::GeneralFailure,
    }
}

#[allow(clippy::too_many_arguments)]
async fn handle(
    id: u64,
    mut c: TcpStream,
    peer: SocketAddr,
    mode: Mode,
    listen_addr: Option<SocketAddr>,
    cfg: &RouterConfig,
    limits: &Limits,
    reg: &Arc<Registry>,
) -> io::Result<()> {
    let dest = match mode {
        Mode::Socks => match tokio::time::timeout(limits.handshake_timeout, socks5::negotiate(&mut c)).await {
            Ok(Ok(d)) => d,
            Ok(Err(e)) => {
                reg.event(SIDE, "bad_request");
                return Err(e);
            }
            Err(_) => {
                reg.event(SIDE, "handshake_timeout");
                return Err(io::Error::new(io::ErrorKind::TimedOut, "SOCKS negotiation timed out"));
            }
        },
        Mode::Transparent => {
            let local = c.local_addr()?;
            // A connection addressed to the listener itself would loop back into the proxy.
            if Some(local) == listen_addr {
                reg.event(SIDE, "bad_request");
                return Err(io::Error::new(
                    io::ErrorKind::InvalidInput,
                    "connected to the transparent port directly (no TPROXY redirect)",
                ));
            }
            Dest::Addr(local)
        }
    };
    let fail = |st: Status| async move {
        if mode == Mode::Socks {
            Some(socks5::encode_reply(reply_for(st), None))
        } else {
            None
        }
    };
    let mut up = match mptcp::connect(cfg.server, cfg.congestion.as_deref(), limits.connect_timeout).await {
        Ok(s) => s,
        Err(e) => {
            reg.event(SIDE, "server_unreachable");
            if let Some(r) = fail(Status::ConnectFailed).await {
                let _ = c.write_all(&r).await;
            }
            return Err(io::Error::new(e.kind(), format!("server {}: {e}", cfg.server)));
        }
    };
    let req = Request {
        dest: dest.clone(),
        congestion: cfg.server_congestion.clone(),
    };
    let st = match tokio::time::timeout(limits.handshake_timeout, auth::client(&mut up, &cfg.key, &req)).await {
        Ok(Ok(st)) => st,
        Ok(Err(e)) => {
            reg.event(SIDE, "handshake_failed");
            if let Some(r) = fail(Status::BadRequest).await {
                let _ = c.write_all(&r).await;
            }
            return Err(io::Error::other(format!("handshake with {}: {e}", cfg.server)));
        }
        Err(_) => {
            reg.event(SIDE, "handshake_timeout");
            return Err(io::Error::new(
                io::ErrorKind::TimedOut,
                "handshake with the server timed out",
            ));
        }
    };
    if st != Status::Ok {
        reg.event(
            SIDE,
            match st {
                Status::NotAllowed => "refused_allowlist",
                Status::AuthFailed => "refused_auth",
                Status::ConnectFailed => "connect_failed",
                _ => "bad_request",
            },
        );
        if let Some(r) = fail(st).await {
            let _ = c.write_all(&r).await;
        }
        return Err(io::Error::other(format!("server refused {dest}: {st:?}")));
    }
    if mode == Mode::Socks {
        c.write_all(&socks5::encode_reply(Reply::Succeeded, up.local_addr().ok()))
            .await?;
    }
    reg.event(SIDE, "relayed");
    let counters = Arc::new(Counters::default());
    let _guard = reg.register(Conn {
        id,
        side: SIDE,
        peer,
        dest: dest.to_string(),
        counters: counters.clone(),
        mptcp_fd: up.as_fd_dup(),
    });
    relay(c, up, limits.buffer_bytes, limits.idle_timeout, counters).await
}
