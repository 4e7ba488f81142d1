//! The server proxy's send queues, seen from the router: the queue-aware lead on downloads.
//!
//! On a download the sender is the server proxy: the data waiting to go out on the handing-over
//! path sits in the server's kernel, where the router's `MPTCP_TCPINFO` cannot see it. The server
//! proxy already exports each subflow's RTT and send-queue drain time on its Prometheus endpoint
//! (`mobipath_proxy_subflow_rtt_seconds`, `mobipath_proxy_subflow_drain_seconds`, labelled with
//! the subflow's `remote` address). With `peer_metrics` set, the router's PHA-D polls that
//! endpoint and, for each of its uplinks, takes the largest drain and RTT among the server's
//! subflows whose remote address is that uplink's address as the server sees it (the endpoint's
//! own address, or `peer_address` where NAT rewrites it). The lead of B=1 then covers the queue
//! on both ends: `max(router drain, server drain) + max(router RTT, server RTT)`.
//!
//! The peer's text is input from the network: the response is bounded (`MAX_RESPONSE`), every
//! request has a timeout, lines this module does not use are skipped, and a malformed line it
//! does use (a bad label set, an address or a value out of range) makes the whole response
//! unusable with an error naming the line; nothing panics. Stale or failed polls never turn a
//! flag on: after `peer_stale_ms` without a good response the peer's figures are dropped and the
//! lead falls back to the router's own measurements (what it was without `peer_metrics`), with one
//! `{"pha_d":"peer",...}` line on stdout each time the state changes.
use std::collections::BTreeMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::sync::watch;
use tokio::time::Instant;

use super::controller::{Time, NS_PER_S};

/// A response larger than this is refused (about 20 000 subflows' worth of our exporter's lines).
pub const MAX_RESPONSE: usize = 8 << 20;

/// Where and how often to poll.
#[derive(Debug, Clone, PartialEq)]
pub struct PeerSettings {
    /// `host:port` of the server proxy's metrics endpoint.
    pub authority: String,
    /// Request path, e.g. `/metrics`.
    pub path: String,
    pub poll: Duration,
    pub stale: Duration,
}

impl PeerSettings {
    /// `http://HOST:PORT[/PATH]` (no TLS, no credentials: bind the server's metrics endpoint
    /// where only the routers reach it).
    pub fn parse_url(url: &str) -> Result<(String, String), String> {
        let rest = url
            .strip_prefix("http://")
            .ok_or_else(|| format!("`{url}`: must start with http://"))?;
        let (authority, path) = match rest.find('/') {
            Some(i) => (&rest[..i], &rest[i..]),
            None => (rest, "/metrics"),
        };
        let port_ok = authority
            .rsplit_once(':')
            .is_some_and(|(h, p)| !h.is_empty() && p.parse::<u16>().is_ok_and(|p| p > 0));
        if !port_ok || authority.contains('@') {
            return Err(format!(
                "`{url}`: expected http://HOST:PORT/PATH with a port in 1..=65535"
            ));
        }
        if path.bytes().any(|b| b.is_ascii_whitespace() || b.is_ascii_control()) {
            return Err(format!(
                "`{url}`: the path must not contain spaces or control characters"
            ));
        }
        Ok((authority.to_string(), path.to_string()))
    }
}

/// One of the server's subflows: the address it sees for the router's end, its smoothed RTT and
/// its send-queue drain time.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct PeerSubflow {
    pub remote: IpAddr,
    pub rtt: Time,
    pub drain: Time,
}

/// The last good poll (and when), shared between the poller and the observer.
#[derive(Debug, Default)]
pub struct PeerView {
    pub at: Option<Instant>,
    pub subflows: Vec<PeerSubflow>,
}

pub type SharedView = Arc<Mutex<PeerView>>;

impl PeerView {
    /// The largest (RTT, drain) among the server's subflows towards `addr`, if the view is
    /// younger than `stale` at `now` and has such a subflow.
    pub fn towards(&self, addr: IpAddr, now: Instant, stale: Duration) -> Option<(Time, Time)> {
        let at = self.at?;
        if now.saturating_duration_since(at) > stale {
            return None;
        }
        self.subflows.iter().filter(|s| s.remote == addr).fold(None, |acc, s| {
            let (r, d) = acc.unwrap_or((0, 0));
            Some((r.max(s.rtt), d.max(s.drain)))
        })
    }
}

/// One exposition line: name, labels, value text.
type Sample<'a> = (&'a str, BTreeMap<String, String>, &'a str);

/// Per (connection, subflow): the remote address, RTT and drain, as far as read.
type Partial = (Option<IpAddr>, Option<Time>, Option<Time>);

/// Splits `name{labels} value [timestamp]` into its parts; `None` for comments and blank lines.
fn split_sample(line: &str) -> Option<Result<Sample<'_>, String>> {
    let line = line.trim_end_matches('\r');
    if line.trim().is_empty() || line.starts_with('#') {
        return None;
    }
    let name_end = line.find(['{', ' ']).unwrap_or(line.len());
    let name = &line[..name_end];
    let mut labels = BTreeMap::new();
    let mut rest = &line[name_end..];
    if let Some(body) = rest.strip_prefix('{') {
        // label="value" pairs; values may hold \\, \" and \n escapes.
        let mut chars = body.char_indices().peekable();
        let mut end = None;
        loop {
            while chars.peek().is_some_and(|&(_, c)| c == ',' || c == ' ') {
                chars.next();
            }
            match chars.peek() {
                Some(&(i, '}')) => {
                    end = Some(i + 1);
                    break;
                }
                None => break,
                _ => {}
            }
            let mut key = String::new();
            while let Some(&(_, c)) = chars.peek() {
                if c == '=' {
                    break;
                }
                if !(c.is_ascii_alphanumeric() || c == '_') {
                    return Some(Err(format!("bad label name character {c:?}")));
                }
                key.push(c);
                chars.next();
            }
            if key.is_empty() || chars.next().map(|x| x.1) != Some('=') || chars.next().map(|x| x.1) != Some('"') {
                return Some(Err("expected label=\"value\"".into()));
            }
            let mut value = String::new();
            let mut closed = false;
            while let Some((_, c)) = chars.next() {
                match c {
                    '"' => {
                        closed = true;
                        break;
                    }
                    '\\' => match chars.next().map(|x| x.1) {
                        Some('n') => value.push('\n'),
                        Some(e @ ('\\' | '"')) => value.push(e),
                        _ => return Some(Err("bad escape in a label value".into())),
                    },
                    c => value.push(c),
                }
            }
            if !closed {
                return Some(Err("unterminated label value".into()));
            }
            labels.insert(key, value);
        }
        let Some(end) = end else {
            return Some(Err("unterminated label set".into()));
        };
        rest = &body[end..];
    }
    let mut fields = rest.split_whitespace();
    let Some(value) = fields.next() else {
        return Some(Err("no value".into()));
    };
    Some(Ok((name, labels, value)))
}

/// The server proxy's subflows from its exposition text (crates/proxy/src/metrics.rs): per
/// (connection, subflow) of `side="server"`, the `remote` address with the RTT and drain
/// gauges. Subflows missing either gauge or an address are left out (a connection closing
/// between the two reads of one scrape).
pub fn parse_exposition(text: &str) -> Result<Vec<PeerSubflow>, String> {
    const RTT: &str = "mobipath_proxy_subflow_rtt_seconds";
    const DRAIN: &str = "mobipath_proxy_subflow_drain_seconds";
    let mut by_key: BTreeMap<(String, String), Partial> = BTreeMap::new();
    for (n, line) in text.lines().enumerate() {
        // Only the two families are parsed; everything else (other families, other exporters'
        // lines) is skipped unread.
        if !(line.starts_with(RTT) || line.starts_with(DRAIN)) {
            continue;
        }
        let (name, labels, value) = match split_sample(line) {
            None => continue,
            Some(Ok(s)) => s,
            Some(Err(e)) => return Err(format!("line {}: {e}", n + 1)),
        };
        if (name != RTT && name != DRAIN) || labels.get("side").map(String::as_str) != Some("server") {
            continue;
        }
        let secs: f64 = value
            .parse()
            .map_err(|_| format!("line {}: {name} = {value}: not a number", n + 1))?;
        if !(secs.is_finite() && (0.0..=3600.0).contains(&secs)) {
            return Err(format!("line {}: {name} = {value}: out of range [0, 3600] s", n + 1));
        }
        let key = (
            labels.get("conn").cloned().unwrap_or_default(),
            labels.get("subflow").cloned().unwrap_or_default(),
        );
        let remote = match labels.get("remote").map(String::as_str) {
            None | Some("") => None,
            Some(r) => Some(
                r.parse::<std::net::SocketAddr>()
                    .map(|a| a.ip())
                    .or_else(|_| r.parse::<IpAddr>())
                    .map_err(|_| format!("line {}: remote = {r:?}: not an address", n + 1))?,
            ),
        };
        let e = by_key.entry(key).or_default();
        e.0 = e.0.or(remote);
        let ns = (secs * NS_PER_S as f64).round() as Time;
        if name == RTT {
            e.1 = Some(ns);
        } else {
            e.2 = Some(ns);
        }
    }
    Ok(by_key
        .into_values()
        .filter_map(|(remote, rtt, drain)| {
            Some(PeerSubflow {
                remote: remote?,
                rtt: rtt?,
                drain: drain?,
            })
        })
        .collect())
}

/// One HTTP/1.1 GET with `Connection: close`; the body of a 200 response, bounded.
pub async fn fetch(authority: &str, path: &str, timeout: Duration) -> Result<String, String> {
    let get = async {
        let mut s = TcpStream::connect(authority)
            .await
            .map_err(|e| format!("connect {authority}: {e}"))?;
        let req =
            format!("GET {path} HTTP/1.1\r\nHost: {authority}\r\nAccept: text/plain\r\nConnection: close\r\n\r\n");
        s.write_all(req.as_bytes()).await.map_err(|e| format!("request: {e}"))?;
        let mut buf = Vec::with_capacity(16 << 10);
        let mut chunk = [0u8; 16 << 10];
        loop {
            let n = s.read(&mut chunk).await.map_err(|e| format!("response: {e}"))?;
            if n == 0 {
                break;
            }
            if buf.len() + n > MAX_RESPONSE + 4096 {
                return Err(format!("response larger than {MAX_RESPONSE} bytes"));
            }
            buf.extend_from_slice(&chunk[..n]);
        }
        Ok::<_, String>(buf)
    };
    let buf = tokio::time::timeout(timeout, get)
        .await
        .map_err(|_| format!("no complete response within {} ms", timeout.as_millis()))??;
    let head_end = buf
        .windows(4)
        .position(|w| w == b"\r\n\r\n")
        .ok_or("no end of the response head")?;
    let head = String::from_utf8_lossy(&buf[..head_end]);
    let status = head.lines().next().unwrap_or_default();
    if !(status.starts_with("HTTP/1.") && status.split_whitespace().nth(1) == Some("200")) {
        return Err(format!("status {status:?}"));
    }
    if head
        .lines()
        .any(|l| l.to_ascii_lowercase().starts_with("transfer-encoding:"))
    {
        return Err("chunked responses are not read (expected mobipath-proxy's metrics endpoint)".into());
    }
    String::from_utf8(buf[head_end + 4..].to_vec()).map_err(|_| "the body is not UTF-8".into())
}

/// Polls the peer every `poll` until `stop`, keeping `view` at the last good response.
pub async fn poll(s: PeerSettings, view: SharedView, mut stop: watch::Receiver<bool>) {
    let mut tick = tokio::time::interval(s.poll);
    tick.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
    let mut ok: Option<bool> = None;
    let timeout = s.poll.max(Duration::from_millis(200)).min(s.stale);
    loop {
        tokio::select! {
            r = stop.changed() => {
                if r.is_err() || *stop.borrow() {
                    return;
                }
            }
            _ = tick.tick() => {
                let got = fetch(&s.authority, &s.path, timeout).await.and_then(|t| parse_exposition(&t));
                let good = got.is_ok();
                match got {
                    Ok(subflows) => *view.lock().unwrap() = PeerView { at: Some(Instant::now()), subflows },
                    Err(e) if ok != Some(false) => {
                        let why = crate::text::json_str(&format!("http://{}{}: {e}; after peer_stale_ms the lead uses this router's own queues only", s.authority, s.path));
                        println!("{{\"pha_d\":\"peer\",\"ok\":false,\"why\":{why}}}");
                    }
                    Err(_) => {}
                }
                if good && ok != Some(true) {
                    println!("{{\"pha_d\":\"peer\",\"ok\":true,\"url\":{}}}", crate::text::json_str(&format!("http://{}{}", s.authority, s.path)));
                }
                ok = Some(good);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const TEXT: &str = "# HELP mobipath_proxy_subflow_rtt_seconds Smoothed RTT\n\
# TYPE mobipath_proxy_subflow_rtt_seconds gauge\n\
mobipath_proxy_subflow_rtt_seconds{side=\"server\",conn=\"1\",peer=\"10.1.0.1:4\",dest=\"a\\\"b:1\",subflow=\"0\",local=\"10.1.0.2:7000\",remote=\"10.1.0.1:4\"} 0.041\n\
mobipath_proxy_subflow_rtt_seconds{side=\"server\",conn=\"1\",peer=\"10.1.0.1:4\",dest=\"x\",subflow=\"1\",local=\"10.2.0.2:7000\",remote=\"10.2.0.1:5\"} 0.06\n\
mobipath_proxy_subflow_rtt_seconds{side=\"server\",conn=\"2\",peer=\"10.1.0.1:9\",dest=\"x\",subflow=\"0\",local=\"10.1.0.2:7000\",remote=\"10.1.0.1:9\"} 0.02\n\
mobipath_proxy_subflow_drain_seconds{side=\"server\",conn=\"1\",peer=\"10.1.0.1:4\",dest=\"a\\\"b:1\",subflow=\"0\",local=\"10.1.0.2:7000\",remote=\"10.1.0.1:4\"} 0.125\n\
mobipath_proxy_subflow_drain_seconds{side=\"server\",conn=\"1\",peer=\"10.1.0.1:4\",dest=\"x\",subflow=\"1\",local=\"10.2.0.2:7000\",remote=\"10.2.0.1:5\"} 0\n\
mobipath_proxy_subflow_drain_seconds{side=\"server\",conn=\"2\",peer=\"10.1.0.1:9\",dest=\"x\",subflow=\"0\",local=\"10.1.0.2:7000\",remote=\"10.1.0.1:9\"} 0.3\n\
mobipath_proxy_subflow_drain_seconds{side=\"router\",conn=\"7\",subflow=\"0\",remote=\"10.1.0.1:9\"} 9\n\
mobipath_proxy_connections_active{side=\"server\"} 2\n";

    fn ip(s: &str) -> IpAddr {
        s.parse().unwrap()
    }

    #[test]
    fn exposition_gives_each_server_subflow_its_address_rtt_and_drain() {
        let mut v = parse_exposition(TEXT).unwrap();
        v.sort_by_key(|s| (s.remote, s.rtt));
        assert_eq!(
            v,
            vec![
                PeerSubflow {
                    remote: ip("10.1.0.1"),
                    rtt: 20_000_000,
                    drain: 300_000_000
                },
                PeerSubflow {
                    remote: ip("10.1.0.1"),
                    rtt: 41_000_000,
                    drain: 125_000_000
                },
                PeerSubflow {
                    remote: ip("10.2.0.1"),
                    rtt: 60_000_000,
                    drain: 0
                },
            ]
        );
        let now = Instant::now();
        let view = PeerView {
            at: Some(now),
            subflows: v,
        };
        // The largest RTT and the largest drain towards the address (not one subflow's pair).
        assert_eq!(
            view.towards(ip("10.1.0.1"), now, Duration::from_secs(1)),
            Some((41_000_000, 300_000_000))
        );
        assert_eq!(view.towards(ip("10.9.9.9"), now, Duration::from_secs(1)), None);
        assert_eq!(
            view.towards(
                ip("10.1.0.1"),
                now + Duration::from_millis(1500),
                Duration::from_secs(1)
            ),
            None,
            "stale"
        );
    }

    #[test]
    fn malformed_lines_name_the_line_and_never_panic() {
        for (text, want) in [
            (
                "mobipath_proxy_subflow_rtt_seconds{side=\"server\",remote=\"10.1.0.1:4\"} -1\n",
                "line 1: mobipath_proxy_subflow_rtt_seconds = -1: out of range",
            ),
            (
                "\nmobipath_proxy_subflow_rtt_seconds{side=\"server\",remote=\"10.1.0.1:4\"} NaN\n",
                "line 2:",
            ),
            (
                "mobipath_proxy_subflow_rtt_seconds{side=\"server\",remote=\"nowhere\"} 0.1\n",
                "remote = \"nowhere\": not an address",
            ),
            (
                "mobipath_proxy_subflow_rtt_seconds{side=\"server\",remote=\"10.1.0.1:4\" 0.1\n",
                "line 1:",
            ),
            (
                "mobipath_proxy_subflow_rtt_seconds{side=\"ser\\qver\"} 0.1\n",
                "bad escape",
            ),
            ("mobipath_proxy_subflow_drain_seconds{side=\"server\"}\n", "no value"),
            (
                "mobipath_proxy_subflow_drain_seconds{side=\"server\",remote=\"10.1.0.1:4\"} 1e400\n",
                "out of range",
            ),
        ] {
            let e = parse_exposition(text).unwrap_err();
            assert!(e.contains(want), "{text:?}: {e}");
        }
        // Every prefix of a good text and arbitrary bytes: an error or a result, never a panic.
        for cut in 0..TEXT.len() {
            if TEXT.is_char_boundary(cut) {
                let _ = parse_exposition(&TEXT[..cut]);
            }
        }
        let mut x: u32 = 7;
        for _ in 0..2000 {
            let s: String = (0..60)
                .map(|_| {
                    x = x.wrapping_mul(1_103_515_245).wrapping_add(12_345);
                    b"mobipath_proxy_subflow_rtt_seconds{}=\",\\ 0.1\nremote:side"[(x >> 16) as usize % 56] as char
                })
                .collect();
            let _ = parse_exposition(&format!("mobipath_proxy_subflow_rtt_seconds{s}"));
        }
        // A subflow with only one of the two gauges is left out, not guessed.
        let half =
            "mobipath_proxy_subflow_rtt_seconds{side=\"server\",conn=\"1\",subflow=\"0\",remote=\"10.1.0.1:4\"} 0.1\n";
        assert_eq!(parse_exposition(half).unwrap(), vec![]);
    }

    #[test]
    fn url_errors_name_the_form() {
        assert_eq!(
            PeerSettings::parse_url("http://10.1.0.2:9464/metrics").unwrap(),
            ("10.1.0.2:9464".into(), "/metrics".into())
        );
        assert_eq!(
            PeerSettings::parse_url("http://proxy.example:9464").unwrap(),
            ("proxy.example:9464".into(), "/metrics".into())
        );
        for bad in [
            "https://x:1/",
            "http://x/metrics",
            "http://x:0/",
            "http://:80/",
            "http://u@x:1/",
            "http://x:1/a b",
        ] {
            assert!(PeerSettings::parse_url(bad).is_err(), "{bad}");
        }
    }

    /// The poller keeps the last good response, timestamps it, and a refused connection leaves
    /// the view to go stale rather than emptying it.
    #[tokio::test]
    async fn poll_reads_a_live_endpoint() {
        let l = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap();
        let server = tokio::spawn(async move {
            for _ in 0..2 {
                let (mut s, _) = l.accept().await.unwrap();
                let mut b = [0u8; 1024];
                let _ = s.read(&mut b).await.unwrap();
                let resp = format!(
                    "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{TEXT}",
                    TEXT.len()
                );
                s.write_all(resp.as_bytes()).await.unwrap();
            }
        });
        let view: SharedView = Default::default();
        let (tx, rx) = watch::channel(false);
        let s = PeerSettings {
            authority: addr.to_string(),
            path: "/metrics".into(),
            poll: Duration::from_millis(20),
            stale: Duration::from_secs(1),
        };
        let task = tokio::spawn(poll(s, view.clone(), rx));
        let t0 = std::time::Instant::now();
        while view.lock().unwrap().at.is_none() {
            assert!(t0.elapsed() < Duration::from_secs(5), "no poll reached the endpoint");
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
        server.await.unwrap();
        // The listener is gone: polls now fail, the last good view stays (and will go stale).
        tokio::time::sleep(Duration::from_millis(100)).await;
        assert_eq!(view.lock().unwrap().subflows.len(), 3);
        tx.send(true).unwrap();
        task.await.unwrap();
        assert!(fetch(&addr.to_string(), "/metrics", Duration::from_millis(200))
            .await
            .is_err());
    }
}
