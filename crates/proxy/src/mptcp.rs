//! MPTCP sockets (RFC 8684 as implemented by Linux ≥ 5.6) and what the kernel reports about
//! them. Constants and layouts follow the Linux uapi headers: `IPPROTO_MPTCP` = 262
//! (include/uapi/linux/in.h), `SOL_MPTCP` = 284 (include/linux/socket.h), `MPTCP_INFO` = 1,
//! `MPTCP_TCPINFO` = 2, `MPTCP_SUBFLOW_ADDRS` = 3, `struct mptcp_info`, `struct
//! mptcp_subflow_data` (include/uapi/linux/mptcp.h), and `struct tcp_info`
//! (include/uapi/linux/tcp.h). Fields a shorter (older) kernel struct lacks read as 0.
//!
//! `TCP_CONGESTION` on an MPTCP socket (Linux ≥ 5.17, net/mptcp/sockopt.c
//! `mptcp_setsockopt_sol_tcp_congestion`) applies to every current and future subflow of that
//! connection. The packet scheduler cannot be chosen per connection: upstream Linux selects it
//! per network namespace (`net.mptcp.scheduler`, ≥ 6.6, and only "default" unless BPF
//! schedulers are loaded); this proxy does not change it.
use std::io;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::os::fd::{AsRawFd, RawFd};
use std::time::Duration;

use socket2::{Domain, Protocol, Socket, Type};
use tokio::net::{TcpListener, TcpSocket, TcpStream};

pub const IPPROTO_MPTCP: i32 = 262;
pub const SOL_MPTCP: i32 = 284;
pub const MPTCP_INFO: i32 = 1;
pub const MPTCP_TCPINFO: i32 = 2;
pub const MPTCP_SUBFLOW_ADDRS: i32 = 3;
/// `MPTCP_INFO_FLAG_FALLBACK`: the connection fell back to plain TCP.
pub const MPTCP_INFO_FLAG_FALLBACK: u32 = 1;
const TCP_INFO_LEN: usize = 232;
const SUBFLOW_DATA_LEN: usize = 16;
const SUBFLOW_ADDRS_LEN: usize = 256;
pub const MAX_SUBFLOWS: usize = 8;

fn mptcp_socket(addr: &SocketAddr) -> io::Result<Socket> {
    Socket::new(
        Domain::for_address(*addr),
        Type::STREAM,
        Some(Protocol::from(IPPROTO_MPTCP)),
    )
    .map_err(|e| {
        io::Error::new(
            e.kind(),
            format!(
                "cannot open an MPTCP socket ({e}); the kernel needs MPTCP (Linux >= 5.6, sysctl net.mptcp.enabled=1)"
            ),
        )
    })
}

/// Sets `TCP_CONGESTION` (works on TCP and MPTCP sockets alike).
pub fn set_congestion(fd: RawFd, name: &str) -> io::Result<()> {
    let r = unsafe {
        libc::setsockopt(
            fd,
            libc::IPPROTO_TCP,
            libc::TCP_CONGESTION,
            name.as_ptr().cast(),
            name.len() as libc::socklen_t,
        )
    };
    if r != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            // The name may be a peer's (the router asks for the server's side): escaped.
            format!(
                "TCP_CONGESTION {}: {e} (see net.ipv4.tcp_allowed_congestion_control)",
                crate::text::Untrusted(name)
            ),
        ));
    }
    Ok(())
}

/// An MPTCP listener (server side of the proxy pair).
pub fn listen(addr: SocketAddr, backlog: i32) -> io::Result<TcpListener> {
    let s = mptcp_socket(&addr)?;
    s.set_reuse_address(true)?;
    if addr.is_ipv6() {
        // Accept IPv4 too on [::] (the usual server expectation).
        let _ = s.set_only_v6(false);
    }
    s.bind(&addr.into())
        .map_err(|e| io::Error::new(e.kind(), format!("bind {addr}: {e}")))?;
    s.listen(backlog)?;
    s.set_nonblocking(true)?;
    TcpListener::from_std(s.into())
}

/// Opens an MPTCP connection to `addr` with the given congestion control on its subflows.
pub async fn connect(addr: SocketAddr, congestion: Option<&str>, timeout: Duration) -> io::Result<TcpStream> {
    let s = mptcp_socket(&addr)?;
    if let Some(cc) = congestion {
        set_congestion(s.as_raw_fd(), cc)?;
    }
    s.set_nonblocking(true)?;
    let std: std::net::TcpStream = s.into();
    let sock = TcpSocket::from_std_stream(std);
    match tokio::time::timeout(timeout, sock.connect(addr)).await {
        Ok(r) => r,
        Err(_) => Err(io::Error::new(
            io::ErrorKind::TimedOut,
            format!("connect to {addr} timed out"),
        )),
    }
}

/// A plain TCP listener with `IP_TRANSPARENT` (needs CAP_NET_ADMIN), so it accepts connections
/// that TPROXY (or a local route) steers to it whatever their destination address; the original
/// destination is then the accepted socket's local address (Documentation/networking/tproxy.rst).
pub fn listen_transparent(addr: SocketAddr, backlog: i32) -> io::Result<TcpListener> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    let one: libc::c_int = 1;
    let (level, opt) = if addr.is_ipv4() {
        (libc::SOL_IP, libc::IP_TRANSPARENT)
    } else {
        (libc::SOL_IPV6, libc::IPV6_TRANSPARENT)
    };
    let r = unsafe { libc::setsockopt(s.as_raw_fd(), level, opt, (&one as *const libc::c_int).cast(), 4) };
    if r != 0 {
        let e = io::Error::last_os_error();
        return Err(io::Error::new(
            e.kind(),
            format!("IP_TRANSPARENT on {addr}: {e} (needs CAP_NET_ADMIN)"),
        ));
    }
    s.bind(&addr.into())
        .map_err(|e| io::Error::new(e.kind(), format!("bind {addr}: {e}")))?;
    s.listen(backlog)?;
    s.set_nonblocking(true)?;
    TcpListener::from_std(s.into())
}

/// Plain TCP listener (SOCKS side).
pub fn listen_tcp(addr: SocketAddr, backlog: i32) -> io::Result<TcpListener> {
    let s = Socket::new(Domain::for_address(addr), Type::STREAM, Some(Protocol::TCP))?;
    s.set_reuse_address(true)?;
    s.bind(&addr.into())
        .map_err(|e| io::Error::new(e.kind(), format!("bind {addr}: {e}")))?;
    s.listen(backlog)?;
    s.set_nonblocking(true)?;
    TcpListener::from_std(s.into())
}

fn u32_at(b: &[u8], off: usize) -> u32 {
    b.get(off..off + 4)
        .map(|s| u32::from_ne_bytes(s.try_into().unwrap()))
        .unwrap_or(0)
}

fn u64_at(b: &[u8], off: usize) -> u64 {
    b.get(off..off + 8)
        .map(|s| u64::from_ne_bytes(s.try_into().unwrap()))
        .unwrap_or(0)
}

/// The `struct mptcp_info` fields the metrics use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct MptcpInfo {
    pub subflows: u8,
    pub flags: u32,
    pub retransmits: u32,
    pub bytes_retrans: u64,
    pub bytes_sent: u64,
    pub bytes_received: u64,
    pub bytes_acked: u64,
}

impl MptcpInfo {
    pub fn parse(b: &[u8]) -> MptcpInfo {
        MptcpInfo {
            subflows: b.first().copied().unwrap_or(0),
            flags: u32_at(b, 8),
            retransmits: u32_at(b, 44),
            bytes_retrans: u64_at(b, 48),
            bytes_sent: u64_at(b, 56),
            bytes_received: u64_at(b, 64),
            bytes_acked: u64_at(b, 72),
        }
    }
}

/// The `struct tcp_info` fields the metrics (and a queue-aware PHA-D) use.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct TcpInfo {
    pub rto_us: u32,
    pub snd_mss: u32,
    pub unacked: u32,
    pub rtt_us: u32,
    pub rttvar_us: u32,
    pub snd_cwnd: u32,
    pub total_retrans: u32,
    pub bytes_acked: u64,
    pub bytes_received: u64,
    pub notsent_bytes: u32,
    /// Bytes per second (tcpi_delivery_rate).
    pub delivery_rate: u64,
    pub bytes_sent: u64,
    pub bytes_retrans: u64,
}

impl TcpInfo {
    pub fn parse(b: &[u8]) -> TcpInfo {
        TcpInfo {
            rto_us: u32_at(b, 8),
            snd_mss: u32_at(b, 16),
            unacked: u32_at(b, 24),
            rtt_us: u32_at(b, 68),
            rttvar_us: u32_at(b, 72),
            snd_cwnd: u32_at(b, 80),
            total_retrans: u32_at(b, 100),
            bytes_acked: u64_at(b, 120),
            bytes_received: u64_at(b, 128),
            notsent_bytes: u32_at(b, 144),
            delivery_rate: u64_at(b, 160),
            bytes_sent: u64_at(b, 200),
            bytes_retrans: u64_at(b, 208),
        }
    }

    /// Time to send the not-yet-sent bytes, ns: `tcpi_notsent_bytes` over the larger of the
    /// delivery rate and cwnd·mss/RTT (the rate the window allows); `None` when neither rate is
    /// known. One formula for the router's PHA-D and the exported `drain_seconds` gauge.
    pub fn drain_ns(&self) -> Option<u64> {
        let cwnd_rate = if self.rtt_us > 0 {
            self.snd_cwnd as u64 * self.snd_mss as u64 * 1_000_000 / self.rtt_us as u64
        } else {
            0
        };
        let rate = self.delivery_rate.max(cwnd_rate);
        (self.notsent_bytes as u64 * 1_000_000_000).checked_div(rate)
    }
}

#[derive(Debug, Clone, PartialEq)]
pub struct Subflow {
    pub local: Option<SocketAddr>,
    pub remote: Option<SocketAddr>,
    pub info: TcpInfo,
}

fn getsockopt_buf(fd: RawFd, level: i32, opt: i32, buf: &mut [u8]) -> io::Result<usize> {
    let mut len = buf.len() as libc::socklen_t;
    let r = unsafe { libc::getsockopt(fd, level, opt, buf.as_mut_ptr().cast(), &mut len) };
    if r != 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(len as usize)
}

/// `MPTCP_INFO`; `None` if the socket is not MPTCP or has fallen back to TCP.
pub fn mptcp_info(fd: RawFd) -> Option<MptcpInfo> {
    let mut b = [0u8; 96];
    let n = getsockopt_buf(fd, SOL_MPTCP, MPTCP_INFO, &mut b).ok()?;
    Some(MptcpInfo::parse(&b[..n]))
}

/// One of the subflow arrays (`MPTCP_TCPINFO`, `MPTCP_SUBFLOW_ADDRS`): a `struct
/// mptcp_subflow_data` header the caller fills with the element size it wants, then the array.
fn subflow_array(fd: RawFd, opt: i32, elem: usize) -> io::Result<Vec<Vec<u8>>> {
    let mut buf = vec![0u8; SUBFLOW_DATA_LEN + MAX_SUBFLOWS * elem];
    buf[0..4].copy_from_slice(&(SUBFLOW_DATA_LEN as u32).to_ne_bytes());
    buf[12..16].copy_from_slice(&(elem as u32).to_ne_bytes());
    let n = getsockopt_buf(fd, SOL_MPTCP, opt, &mut buf)?;
    let num = u32_at(&buf, 4) as usize;
    let step = match u32_at(&buf, 12) as usize {
        0 => elem,
        s => s,
    };
    Ok((0..num.min(MAX_SUBFLOWS))
        .map(|i| SUBFLOW_DATA_LEN + i * step)
        .take_while(|off| off + step.min(elem) <= n)
        .map(|off| buf[off..(off + step).min(n)].to_vec())
        .collect())
}

fn sockaddr(b: &[u8]) -> Option<SocketAddr> {
    let family = u16::from_ne_bytes([*b.first()?, *b.get(1)?]) as i32;
    let port = u16::from_be_bytes([*b.get(2)?, *b.get(3)?]);
    match family {
        libc::AF_INET => {
            let a = b.get(4..8)?;
            Some(SocketAddr::new(IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3])), port))
        }
        libc::AF_INET6 => {
            let a: [u8; 16] = b.get(8..24)?.try_into().ok()?;
            Some(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(a)), port))
        }
        _ => None,
    }
}

/// Every subflow's addresses and `tcp_info` (empty if the socket is not MPTCP).
pub fn subflows(fd: RawFd) -> Vec<Subflow> {
    let infos = subflow_array(fd, MPTCP_TCPINFO, TCP_INFO_LEN).unwrap_or_default();
    let addrs = subflow_array(fd, MPTCP_SUBFLOW_ADDRS, SUBFLOW_ADDRS_LEN).unwrap_or_default();
    infos
        .iter()
        .enumerate()
        .map(|(i, inf)| {
            let a = addrs.get(i);
            Subflow {
                local: a.and_then(|a| sockaddr(a)),
                remote: a.and_then(|a| a.get(128..).and_then(sockaddr)),
                info: TcpInfo::parse(inf),
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parse_tolerates_short_structs() {
        assert_eq!(MptcpInfo::parse(&[]), MptcpInfo::default());
        let mut b = vec![0u8; 80];
        b[0] = 2;
        b[56..64].copy_from_slice(&1234u64.to_ne_bytes());
        let i = MptcpInfo::parse(&b);
        assert_eq!((i.subflows, i.bytes_sent, i.bytes_acked), (2, 1234, 0));
    }

    #[test]
    fn sockaddr_v4() {
        let mut b = vec![0u8; 128];
        b[0..2].copy_from_slice(&(libc::AF_INET as u16).to_ne_bytes());
        b[2..4].copy_from_slice(&7000u16.to_be_bytes());
        b[4..8].copy_from_slice(&[10, 0, 1, 2]);
        assert_eq!(sockaddr(&b), Some("10.0.1.2:7000".parse().unwrap()));
    }

    /// On a kernel with MPTCP, a loopback MPTCP connection reports one subflow with an RTT.
    #[tokio::test]
    async fn loopback_connection_reports_subflows() {
        let Ok(l) = listen("127.0.0.1:0".parse().unwrap(), 8) else {
            eprintln!("skipped: no MPTCP in this kernel");
            return;
        };
        let addr = l.local_addr().unwrap();
        let acc = tokio::spawn(async move { l.accept().await.unwrap().0 });
        let c = connect(addr, Some("cubic"), Duration::from_secs(5)).await.unwrap();
        let _s = acc.await.unwrap();
        let info = mptcp_info(c.as_raw_fd()).expect("MPTCP_INFO on an MPTCP socket");
        assert_eq!(info.flags & MPTCP_INFO_FLAG_FALLBACK, 0);
        let subs = subflows(c.as_raw_fd());
        assert_eq!(subs.len(), 1);
        assert_eq!(subs[0].remote, Some(addr));
    }
}
