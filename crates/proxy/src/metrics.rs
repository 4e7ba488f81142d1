//! Live connections and event counters, and the Prometheus text exposition (format 0.0.4) over a
//! minimal HTTP/1.1 responder: any `GET` is answered with the metrics and the connection closed.
//!
//! Per connection: bytes each way (counted by the relay), and from `MPTCP_INFO` the subflow count
//! and MPTCP-level retransmissions. Per subflow (`MPTCP_TCPINFO` + `MPTCP_SUBFLOW_ADDRS`): bytes
//! sent/received/retransmitted, smoothed RTT, RTO, cwnd, unacked segments, the not-yet-sent
//! bytes queued on it and the time to send them (which a router's PHA-D reads: phad/peer.rs). The kernel values are read at scrape time.
use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::net::SocketAddr;
use std::os::fd::{AsRawFd, OwnedFd};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpListener;

use crate::mptcp;
use crate::relay::Counters;

pub struct Conn {
    pub id: u64,
    pub side: &'static str,
    pub peer: SocketAddr,
    pub dest: String,
    pub counters: Arc<Counters>,
    /// A duplicate of the MPTCP socket's descriptor, so a scrape never reads a closed or reused
    /// descriptor: it is closed only when the entry leaves the registry.
    pub mptcp_fd: Option<OwnedFd>,
}

#[derive(Default)]
pub struct Registry {
    next_id: AtomicU64,
    conns: Mutex<BTreeMap<u64, Arc<Conn>>>,
    events: Mutex<BTreeMap<(&'static str, &'static str), u64>>,
}

/// Removes its connection from the registry when dropped (however the connection task ends).
pub struct ConnGuard {
    reg: Arc<Registry>,
    pub id: u64,
}

impl Drop for ConnGuard {
    fn drop(&mut self) {
        self.reg.conns.lock().unwrap().remove(&self.id);
    }
}

impl Registry {
    pub fn next_id(&self) -> u64 {
        self.next_id.fetch_add(1, Ordering::Relaxed) + 1
    }

    pub fn event(&self, side: &'static str, result: &'static str) {
        *self.events.lock().unwrap().entry((side, result)).or_default() += 1;
    }

    pub fn event_count(&self, side: &'static str, result: &'static str) -> u64 {
        self.events.lock().unwrap().get(&(side, result)).copied().unwrap_or(0)
    }

    pub fn active(&self) -> usize {
        self.conns.lock().unwrap().len()
    }

    /// Calls `f(connection id, MPTCP socket)` for every live connection with an MPTCP socket
    /// of `side` (the descriptors stay open during the call).
    pub fn each_mptcp(&self, side: &str, mut f: impl FnMut(u64, std::os::fd::RawFd)) {
        let conns: Vec<Arc<Conn>> = self.conns.lock().unwrap().values().cloned().collect();
        for c in conns.iter().filter(|c| c.side == side) {
            if let Some(fd) = &c.mptcp_fd {
                f(c.id, fd.as_raw_fd());
            }
        }
    }

    pub fn register(self: &Arc<Self>, conn: Conn) -> ConnGuard {
        let id = conn.id;
        self.conns.lock().unwrap().insert(id, Arc::new(conn));
        ConnGuard { reg: self.clone(), id }
    }

    /// The exposition text.
    pub fn render(&self) -> String {
        let conns: Vec<Arc<Conn>> = self.conns.lock().unwrap().values().cloned().collect();
        let mut fam: BTreeMap<&'static str, (&'static str, &'static str, Vec<String>)> = BTreeMap::new();
        let mut add = |name: &'static str, kind: &'static str, help: &'static str, labels: String, v: f64| {
            fam.entry(name)
                .or_insert((kind, help, Vec::new()))
                .2
                .push(format!("{name}{{{labels}}} {v}"));
        };
        for ((side, result), n) in self.events.lock().unwrap().iter() {
            add(
                "mobipath_proxy_connections_total",
                "counter",
                "Connections by outcome (relayed or the reason for refusal)",
                format!("side=\"{side}\",result=\"{result}\""),
                *n as f64,
            );
        }
        let mut active: BTreeMap<&'static str, u64> = BTreeMap::new();
        for c in &conns {
            *active.entry(c.side).or_default() += 1;
            let l = format!(
                "side=\"{}\",conn=\"{}\",peer=\"{}\",dest=\"{}\"",
                c.side,
                c.id,
                c.peer,
                esc(&c.dest)
            );
            add(
                "mobipath_proxy_connection_bytes_total",
                "counter",
                "Bytes relayed per connection (up = client to destination)",
                format!("{l},direction=\"up\""),
                c.counters.up.load(Ordering::Relaxed) as f64,
            );
            add(
                "mobipath_proxy_connection_bytes_total",
                "counter",
                "Bytes relayed per connection (up = client to destination)",
                format!("{l},direction=\"down\""),
                c.counters.down.load(Ordering::Relaxed) as f64,
            );
            let Some(fd) = c.mptcp_fd.as_ref().map(|f| f.as_raw_fd()) else {
                continue;
            };
            if let Some(mi) = mptcp::mptcp_info(fd) {
                add(
                    "mobipath_proxy_connection_subflows",
                    "gauge",
                    "Subflows besides the initial one (mptcpi_subflows)",
                    l.clone(),
                    mi.subflows as f64,
                );
                add(
                    "mobipath_proxy_connection_fallback",
                    "gauge",
                    "1 if the MPTCP connection fell back to plain TCP",
                    l.clone(),
                    (mi.flags & mptcp::MPTCP_INFO_FLAG_FALLBACK != 0) as u8 as f64,
                );
                add(
                    "mobipath_proxy_connection_retransmits_total",
                    "counter",
                    "MPTCP-level retransmissions (mptcpi_retransmits)",
                    l.clone(),
                    mi.retransmits as f64,
                );
                add(
                    "mobipath_proxy_connection_bytes_retrans_total",
                    "counter",
                    "MPTCP-level bytes retransmitted (mptcpi_bytes_retrans)",
                    l.clone(),
                    mi.bytes_retrans as f64,
                );
            }
            for (i, s) in mptcp::subflows(fd).iter().enumerate() {
                let sl = format!(
                    "{l},subflow=\"{i}\",local=\"{}\",remote=\"{}\"",
                    s.local.map(|a| a.to_string()).unwrap_or_default(),
                    s.remote.map(|a| a.to_string()).unwrap_or_default()
                );
                let t = &s.info;
                add(
                    "mobipath_proxy_subflow_rtt_seconds",
                    "gauge",
                    "Smoothed RTT of the subflow (tcpi_rtt)",
                    sl.clone(),
                    t.rtt_us as f64 / 1e6,
                );
                add(
                    "mobipath_proxy_subflow_rto_seconds",
                    "gauge",
                    "Retransmission timeout of the subflow (tcpi_rto)",
                    sl.clone(),
                    t.rto_us as f64 / 1e6,
                );
                add(
                    "mobipath_proxy_subflow_cwnd_segments",
                    "gauge",
                    "Congestion window (tcpi_snd_cwnd)",
                    sl.clone(),
                    t.snd_cwnd as f64,
                );
                add(
                    "mobipath_proxy_subflow_unacked_segments",
                    "gauge",
                    "Segments in flight (tcpi_unacked)",
                    sl.clone(),
                    t.unacked as f64,
                );
                add(
                    "mobipath_proxy_subflow_notsent_bytes",
                    "gauge",
                    "Bytes queued but not yet sent (tcpi_notsent_bytes)",
                    sl.clone(),
                    t.notsent_bytes as f64,
                );
                add("mobipath_proxy_subflow_drain_seconds", "gauge", "Time to send the not-yet-sent bytes: tcpi_notsent_bytes over max(tcpi_delivery_rate, cwnd*mss/rtt); 0 when no rate is known",
                    sl.clone(), t.drain_ns().unwrap_or(0) as f64 / 1e9);
                add(
                    "mobipath_proxy_subflow_bytes_sent_total",
                    "counter",
                    "Bytes sent including retransmissions (tcpi_bytes_sent)",
                    sl.clone(),
                    t.bytes_sent as f64,
                );
                add(
                    "mobipath_proxy_subflow_bytes_received_total",
                    "counter",
                    "Bytes received (tcpi_bytes_received)",
                    sl.clone(),
                    t.bytes_received as f64,
                );
                add(
                    "mobipath_proxy_subflow_bytes_retrans_total",
                    "counter",
                    "Bytes retransmitted (tcpi_bytes_retrans)",
                    sl.clone(),
                    t.bytes_retrans as f64,
                );
                add(
                    "mobipath_proxy_subflow_retransmits_total",
                    "counter",
                    "Segments retransmitted (tcpi_total_retrans)",
                    sl,
                    t.total_retrans as f64,
                );
            }
        }
        for (side, n) in active {
            add(
                "mobipath_proxy_connections_active",
                "gauge",
                "Connections being relayed",
                format!("side=\"{side}\""),
                n as f64,
            );
        }
        let mut out = String::new();
        for (name, (kind, help, lines)) in fam {
            let _ = writeln!(out, "# HELP {name} {help}\n# TYPE {name} {kind}");
            for line in lines {
                out.push_str(&line);
                out.push('\n');
            }
        }
        out
    }
}

fn esc(s: &str) -> String {
    s.replace('\\', "\\\\").replace('"', "\\\"").replace('\n', "\\n")
}

/// Serves the metrics on `listener` until the task is dropped.
pub async fn serve(listener: TcpListener, reg: Arc<Registry>) {
    loop {
        let Ok((mut s, _)) = listener.accept().await else {
            tokio::time::sleep(Duration::from_millis(100)).await;
            continue;
        };
        let reg = reg.clone();
        tokio::spawn(async move {
            let mut head = Vec::with_capacity(1024);
            let mut chunk = [0u8; 1024];
            let read = async {
                while !head.windows(4).any(|w| w == b"\r\n\r\n") && head.len() < 8192 {
                    let n = s.read(&mut chunk).await?;
                    if n == 0 {
                        break;
                    }
                    head.extend_from_slice(&chunk[..n]);
                }
                Ok::<_, std::io::Error>(())
            };
            if tokio::time::timeout(Duration::from_secs(5), read).await.is_err() {
                return;
            }
            let (status, body) = if head.starts_with(b"GET ") {
                ("200 OK", reg.render())
            } else {
                ("405 Method Not Allowed", "only GET\n".to_string())
            };
            let resp = format!(
                "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
                body.len()
            );
            let _ = s.write_all(resp.as_bytes()).await;
            let _ = s.shutdown().await;
        });
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn render_groups_families_with_one_type_line() {
        let reg = Arc::new(Registry::default());
        reg.event("server", "refused_auth");
        reg.event("server", "refused_auth");
        let c = Arc::new(Counters::default());
        c.up.store(42, Ordering::Relaxed);
        let _g1 = reg.register(Conn {
            id: 1,
            side: "server",
            peer: "10.0.0.1:5".parse().unwrap(),
            dest: "a\"b:1".into(),
            counters: c.clone(),
            mptcp_fd: None,
        });
        let g2 = reg.register(Conn {
            id: 2,
            side: "server",
            peer: "10.0.0.1:6".parse().unwrap(),
            dest: "x:1".into(),
            counters: c,
            mptcp_fd: None,
        });
        let text = reg.render();
        assert!(
            text.contains("mobipath_proxy_connections_total{side=\"server\",result=\"refused_auth\"} 2\n"),
            "{text}"
        );
        assert_eq!(
            text.matches("# TYPE mobipath_proxy_connection_bytes_total counter")
                .count(),
            1
        );
        assert!(
            text.contains("conn=\"1\",peer=\"10.0.0.1:5\",dest=\"a\\\"b:1\",direction=\"up\"} 42\n"),
            "{text}"
        );
        assert!(text.contains("mobipath_proxy_connections_active{side=\"server\"} 2\n"));
        drop(g2);
        assert_eq!(reg.active(), 1);
    }
}
