//! Server side (`mobipath-proxy server`): accepts MPTCP from routers, authenticates each
//! connection (`auth`), checks the destination against the allow-list (after resolving a name, so
//! a name cannot smuggle a forbidden address in), opens plain TCP to it, and only then relays.
//! Every refusal happens before the first relayed byte and is counted by reason.
use std::io;
use std::net::SocketAddr;
use std::os::fd::AsRawFd;
use std::sync::Arc;

use tokio::net::TcpStream;
use tokio::sync::{watch, Semaphore};

use crate::auth::{self, HandshakeError, Status};
use crate::config::{Limits, ServerConfig};
use crate::dest::Dest;
use crate::metrics::{Conn, Registry};
use crate::mptcp;
use crate::relay::{relay, Counters};

const SIDE: &str = "server";

pub async fn run(
    cfg: ServerConfig,
    limits: Limits,
    reg: Arc<Registry>,
    slots: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) -> io::Result<()> {
    let listener = mptcp::listen(cfg.listen, 1024)?;
    log!(
        "server: listening (MPTCP) on {}, {} allow rule(s)",
        cfg.listen,
        cfg.allow.rules.len()
    );
    let cfg = Arc::new(cfg);
    loop {
        let (stream, peer) = tokio::select! {
            _ = stop.changed() => return Ok(()),
            r = listener.accept() => match r {
                Ok(x) => x,
                Err(e) => {
                    // EMFILE and the like: back off instead of spinning.
                    log!("server: accept: {e}");
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
            if let Err(e) = handle(id, stream, peer, &cfg, &limits, &reg).await {
                log!("server: conn {id} from {peer}: {e}");
            }
            drop(permit);
        });
    }
}

async fn resolve(dest: &Dest, limits: &Limits) -> io::Result<Vec<SocketAddr>> {
    match dest {
        Dest::Addr(a) => Ok(vec![*a]),
        Dest::Name(n, p) => {
            match tokio::time::timeout(limits.connect_timeout, tokio::net::lookup_host((n.as_str(), *p))).await {
                Ok(r) => Ok(r?.collect()),
                Err(_) => Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!("resolving {} timed out", crate::text::Untrusted(n)),
                )),
            }
        }
    }
}

async fn handle(
    id: u64,
    mut s: TcpStream,
    peer: SocketAddr,
    cfg: &ServerConfig,
    limits: &Limits,
    reg: &Arc<Registry>,
) -> io::Result<()> {
    let nonce = auth::fresh_nonce()?;
    let req = match tokio::time::timeout(limits.handshake_timeout, auth::server(&mut s, &cfg.key, &nonce)).await {
        Err(_) => {
            reg.event(SIDE, "handshake_timeout");
            return Err(io::Error::new(io::ErrorKind::TimedOut, "handshake timed out"));
        }
        Ok(Err(HandshakeError::AuthFailed)) => {
            reg.event(SIDE, "refused_auth");
            return Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                "refused: authentication failed",
            ));
        }
        Ok(Err(e)) => {
            reg.event(SIDE, "bad_request");
            let _ = auth::send_status(&mut s, Status::BadRequest).await;
            return Err(io::Error::new(io::ErrorKind::InvalidData, e.to_string()));
        }
        Ok(Ok(r)) => r,
    };
    let addrs = match resolve(&req.dest, limits).await {
        Ok(a) => a,
        Err(e) => {
            reg.event(SIDE, "connect_failed");
            let _ = auth::send_status(&mut s, Status::ConnectFailed).await;
            return Err(io::Error::new(e.kind(), format!("{}: {e}", req.dest)));
        }
    };
    let allowed: Vec<SocketAddr> = addrs
        .into_iter()
        .filter(|a| cfg.allow.allows(a.ip(), a.port()))
        .collect();
    if allowed.is_empty() {
        reg.event(SIDE, "refused_allowlist");
        let _ = auth::send_status(&mut s, Status::NotAllowed).await;
        return Err(io::Error::new(
            io::ErrorKind::PermissionDenied,
            format!("refused: {} is not in the allow-list", req.dest),
        ));
    }
    if let Some(cc) = &req.congestion {
        if let Err(e) = mptcp::set_congestion(s.as_raw_fd(), cc) {
            reg.event(SIDE, "bad_request");
            let _ = auth::send_status(&mut s, Status::BadRequest).await;
            return Err(e);
        }
    }
    let mut last_err = None;
    let mut out = None;
    for a in &allowed {
        match tokio::time::timeout(limits.connect_timeout, TcpStream::connect(a)).await {
            Ok(Ok(c)) => {
                out = Some(c);
                break;
            }
            Ok(Err(e)) => last_err = Some(format!("{a}: {e}")),
            Err(_) => last_err = Some(format!("{a}: connect timed out")),
        }
    }
    let Some(out) = out else {
        reg.event(SIDE, "connect_failed");
        let _ = auth::send_status(&mut s, Status::ConnectFailed).await;
        return Err(io::Error::other(last_err.unwrap_or_default()));
    };
    auth::send_status(&mut s, Status::Ok).await?;
    reg.event(SIDE, "relayed");
    let counters = Arc::new(Counters::default());
    let _guard = reg.register(Conn {
        id,
        side: SIDE,
        peer,
        dest: req.dest.to_string(),
        counters: counters.clone(),
        mptcp_fd: s.as_fd_dup(),
    });
    // The MPTCP side is the client of this relay; "up" is router → destination.
    relay(s, out, limits.buffer_bytes, limits.idle_timeout, counters).await
}

/// A duplicate descriptor for the metrics registry.
pub(crate) trait FdDup {
    fn as_fd_dup(&self) -> Option<std::os::fd::OwnedFd>;
}

impl FdDup for TcpStream {
    fn as_fd_dup(&self) -> Option<std::os::fd::OwnedFd> {
        use std::os::fd::AsFd;
        self.as_fd().try_clone_to_owned().ok()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::allow::AllowList;
    use tokio::io::AsyncReadExt;

    /// With `max_connections = 1`, a second connection while the first is open is closed at once
    /// (no challenge sent) and counted as `refused_limit`; after the first ends, a new one is served.
    #[tokio::test]
    async fn connection_limit_refuses_the_excess() {
        let Ok(probe) = mptcp::listen("127.0.0.1:0".parse().unwrap(), 1) else {
            eprintln!("skipped: no MPTCP in this kernel");
            return;
        };
        let addr = probe.local_addr().unwrap();
        drop(probe);
        let cfg = ServerConfig {
            listen: addr,
            key: vec![1; 16],
            allow: AllowList::default(),
            idle_restart_off: false,
        };
        let limits = Limits {
            max_connections: 1,
            ..Limits::default()
        };
        let reg = Arc::new(Registry::default());
        let slots = Arc::new(Semaphore::new(1));
        let (_stop_tx, stop_rx) = watch::channel(false);
        tokio::spawn(run(cfg, limits, reg.clone(), slots, stop_rx));
        tokio::time::sleep(std::time::Duration::from_millis(100)).await;

        let mut first = TcpStream::connect(addr).await.unwrap();
        let mut hello = [0u8; 36];
        first.read_exact(&mut hello).await.unwrap();
        assert_eq!(&hello[..4], auth::MAGIC);
        let mut second = TcpStream::connect(addr).await.unwrap();
        let mut buf = [0u8; 36];
        let n = tokio::time::timeout(std::time::Duration::from_secs(5), second.read(&mut buf))
            .await
            .unwrap()
            .unwrap_or(0);
        assert_eq!(n, 0, "the excess connection got bytes");
        assert_eq!(reg.event_count(SIDE, "refused_limit"), 1);

        drop(first);
        let deadline = tokio::time::Instant::now() + std::time::Duration::from_secs(5);
        loop {
            let mut third = TcpStream::connect(addr).await.unwrap();
            let mut h = [0u8; 4];
            if third.read_exact(&mut h).await.is_ok() {
                assert_eq!(&h, auth::MAGIC);
                break;
            }
            assert!(tokio::time::Instant::now() < deadline, "the slot was never freed");
            tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        }
    }
}
