//! MPTCP endpoint flags over generic netlink, without child processes: the in-kernel path
//! manager's family "mptcp_pm" (include/uapi/linux/mptcp_pm.h, net/mptcp/pm_netlink.c),
//! commands `MPTCP_PM_CMD_GET_ADDR` (dump every endpoint) and `MPTCP_PM_CMD_SET_FLAGS` (the
//! same request `ip mptcp endpoint change id K backup|nobackup` sends). Setting or clearing
//! `MPTCP_PM_ADDR_FLAG_BACKUP` makes the kernel send MP_PRIO (RFC 8684 §3.3.8) on the
//! endpoint's subflows. The netlink socket acts in the caller's network namespace.
//!
//! Message layout: `struct nlmsghdr` (16 bytes), `struct genlmsghdr` (4), then attributes
//! (`struct nlattr`, 4-byte aligned; include/uapi/linux/netlink.h, genetlink.h).
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd};

const NETLINK_GENERIC: i32 = 16;
const GENL_ID_CTRL: u16 = 0x10;
const CTRL_CMD_GETFAMILY: u8 = 3;
const CTRL_ATTR_FAMILY_ID: u16 = 1;
const CTRL_ATTR_FAMILY_NAME: u16 = 2;
const NLM_F_REQUEST: u16 = 1;
const NLM_F_ACK: u16 = 4;
const NLM_F_DUMP: u16 = 0x300;
const NLMSG_ERROR: u16 = 2;
const NLMSG_DONE: u16 = 3;
const NLA_F_NESTED: u16 = 0x8000;
const NLA_TYPE_MASK: u16 = 0x3fff;

pub const MPTCP_PM_NAME: &str = "mptcp_pm";
const MPTCP_PM_VER: u8 = 1;
const MPTCP_PM_CMD_GET_ADDR: u8 = 3;
const MPTCP_PM_CMD_SET_FLAGS: u8 = 7;
const MPTCP_PM_ATTR_ADDR: u16 = 1;
const MPTCP_PM_ADDR_ATTR_ID: u16 = 2;
const MPTCP_PM_ADDR_ATTR_ADDR4: u16 = 3;
const MPTCP_PM_ADDR_ATTR_ADDR6: u16 = 4;
const MPTCP_PM_ADDR_ATTR_FLAGS: u16 = 6;
pub const FLAG_SIGNAL: u32 = 1;
pub const FLAG_SUBFLOW: u32 = 2;
pub const FLAG_BACKUP: u32 = 4;
pub const FLAG_FULLMESH: u32 = 8;

/// One endpoint as `MPTCP_PM_CMD_GET_ADDR` reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Endpoint {
    pub id: u8,
    pub flags: u32,
    pub addr: Option<std::net::IpAddr>,
}

impl Endpoint {
    pub fn backup(&self) -> bool {
        self.flags & FLAG_BACKUP != 0
    }
}

pub struct MptcpPm {
    fd: OwnedFd,
    family: u16,
    seq: u32,
}

fn push_attr(buf: &mut Vec<u8>, ty: u16, payload: &[u8]) {
    let len = 4 + payload.len();
    buf.extend_from_slice(&(len as u16).to_ne_bytes());
    buf.extend_from_slice(&ty.to_ne_bytes());
    buf.extend_from_slice(payload);
    while !buf.len().is_multiple_of(4) {
        buf.push(0);
    }
}

/// Attributes in `b` as (type without flags, payload).
pub fn attrs(mut b: &[u8]) -> Vec<(u16, &[u8])> {
    let mut out = Vec::new();
    while b.len() >= 4 {
        let len = u16::from_ne_bytes([b[0], b[1]]) as usize;
        let ty = u16::from_ne_bytes([b[2], b[3]]) & NLA_TYPE_MASK;
        if len < 4 || len > b.len() {
            break;
        }
        out.push((ty, &b[4..len]));
        let adv = (len + 3) & !3;
        b = &b[adv.min(b.len())..];
    }
    out
}

impl MptcpPm {
    /// Opens a generic netlink socket and resolves the "mptcp_pm" family.
    pub fn open() -> io::Result<MptcpPm> {
        let fd = unsafe { libc::socket(libc::AF_NETLINK, libc::SOCK_RAW | libc::SOCK_CLOEXEC, NETLINK_GENERIC) };
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let fd = unsafe { OwnedFd::from_raw_fd(fd) };
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        let r = unsafe {
            libc::bind(
                fd.as_raw_fd(),
                (&sa as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if r != 0 {
            return Err(io::Error::last_os_error());
        }
        // A reply must come: bound the wait so a broken kernel cannot hang a fail-safe path.
        let tv = libc::timeval { tv_sec: 2, tv_usec: 0 };
        unsafe {
            libc::setsockopt(
                fd.as_raw_fd(),
                libc::SOL_SOCKET,
                libc::SO_RCVTIMEO,
                (&tv as *const libc::timeval).cast(),
                std::mem::size_of::<libc::timeval>() as u32,
            )
        };
        let mut pm = MptcpPm { fd, family: 0, seq: 0 };
        let mut a = Vec::new();
        push_attr(&mut a, CTRL_ATTR_FAMILY_NAME, b"mptcp_pm\0");
        let replies = pm.request(GENL_ID_CTRL, CTRL_CMD_GETFAMILY, 1, NLM_F_REQUEST, &a)?;
        let id = replies
            .iter()
            .flat_map(|m| attrs(m))
            .find(|(t, p)| *t == CTRL_ATTR_FAMILY_ID && p.len() >= 2)
            .map(|(_, p)| u16::from_ne_bytes([p[0], p[1]]))
            .ok_or_else(|| {
                io::Error::new(
                    io::ErrorKind::NotFound,
                    "generic netlink family mptcp_pm not found (kernel without MPTCP?)",
                )
            })?;
        pm.family = id;
        Ok(pm)
    }

    /// Opens the socket inside network namespace `netns` (a name under /run/netns), or in this
    /// process's namespace if `None`. A netlink socket stays in the namespace it was created in,
    /// so a short-lived thread enters the namespace, creates it and exits; the caller's threads
    /// never change namespace.
    pub fn open_in(netns: Option<&str>) -> io::Result<MptcpPm> {
        let Some(ns) = netns else { return MptcpPm::open() };
        if ns.is_empty() || ns.contains('/') {
            return Err(io::Error::new(
                io::ErrorKind::InvalidInput,
                format!("network namespace name {ns:?}"),
            ));
        }
        let path = format!("/run/netns/{ns}");
        std::thread::spawn(move || {
            let f = std::fs::File::open(&path).map_err(|e| io::Error::new(e.kind(), format!("{path}: {e}")))?;
            if unsafe { libc::setns(f.as_raw_fd(), libc::CLONE_NEWNET) } != 0 {
                let e = io::Error::last_os_error();
                return Err(io::Error::new(e.kind(), format!("setns {path}: {e}")));
            }
            MptcpPm::open()
        })
        .join()
        .map_err(|_| io::Error::other("namespace thread panicked"))?
    }

    /// Sends one request and collects the attribute parts of the replies (until the ACK, the
    /// dump's DONE, or the single reply of a plain request). A netlink error becomes an `Err`.
    fn request(&mut self, ty: u16, cmd: u8, version: u8, flags: u16, attrs_buf: &[u8]) -> io::Result<Vec<Vec<u8>>> {
        self.seq = self.seq.wrapping_add(1);
        let len = 16 + 4 + attrs_buf.len();
        let mut m = Vec::with_capacity(len);
        m.extend_from_slice(&(len as u32).to_ne_bytes());
        m.extend_from_slice(&ty.to_ne_bytes());
        m.extend_from_slice(&flags.to_ne_bytes());
        m.extend_from_slice(&self.seq.to_ne_bytes());
        m.extend_from_slice(&0u32.to_ne_bytes());
        m.extend_from_slice(&[cmd, version, 0, 0]);
        m.extend_from_slice(attrs_buf);
        let mut sa: libc::sockaddr_nl = unsafe { std::mem::zeroed() };
        sa.nl_family = libc::AF_NETLINK as u16;
        let r = unsafe {
            libc::sendto(
                self.fd.as_raw_fd(),
                m.as_ptr().cast(),
                m.len(),
                0,
                (&sa as *const libc::sockaddr_nl).cast(),
                std::mem::size_of::<libc::sockaddr_nl>() as u32,
            )
        };
        if r < 0 {
            return Err(io::Error::last_os_error());
        }
        let dump = flags & NLM_F_DUMP == NLM_F_DUMP;
        let ack = flags & NLM_F_ACK != 0;
        let mut out = Vec::new();
        let mut buf = vec![0u8; 32768];
        loop {
            let n = unsafe { libc::recv(self.fd.as_raw_fd(), buf.as_mut_ptr().cast(), buf.len(), 0) };
            if n < 0 {
                return Err(io::Error::last_os_error());
            }
            let mut b = &buf[..n as usize];
            while b.len() >= 16 {
                let mlen = u32::from_ne_bytes(b[0..4].try_into().unwrap()) as usize;
                let mty = u16::from_ne_bytes([b[4], b[5]]);
                let mseq = u32::from_ne_bytes(b[8..12].try_into().unwrap());
                if mlen < 16 || mlen > b.len() {
                    return Err(io::Error::new(io::ErrorKind::InvalidData, "truncated netlink message"));
                }
                let body = &b[16..mlen];
                b = &b[((mlen + 3) & !3).min(b.len())..];
                if mseq != self.seq {
                    continue;
                }
                match mty {
                    NLMSG_ERROR => {
                        let err = i32::from_ne_bytes(body.get(0..4).unwrap_or(&[0; 4]).try_into().unwrap());
                        if err != 0 {
                            return Err(io::Error::from_raw_os_error(-err));
                        }
                        return Ok(out); // the ACK
                    }
                    NLMSG_DONE => return Ok(out),
                    _ => {
                        out.push(body.get(4..).unwrap_or(&[]).to_vec());
                        if !dump && !ack {
                            return Ok(out);
                        }
                    }
                }
            }
        }
    }

    /// Every endpoint of the in-kernel path manager (`ip mptcp endpoint show`).
    pub fn endpoints(&mut self) -> io::Result<Vec<Endpoint>> {
        let replies = self.request(
            self.family,
            MPTCP_PM_CMD_GET_ADDR,
            MPTCP_PM_VER,
            NLM_F_REQUEST | NLM_F_DUMP,
            &[],
        )?;
        let mut out = Vec::new();
        for r in &replies {
            for (t, nested) in attrs(r) {
                if t != MPTCP_PM_ATTR_ADDR {
                    continue;
                }
                let mut ep = Endpoint {
                    id: 0,
                    flags: 0,
                    addr: None,
                };
                for (at, p) in attrs(nested) {
                    match at {
                        MPTCP_PM_ADDR_ATTR_ID if !p.is_empty() => ep.id = p[0],
                        MPTCP_PM_ADDR_ATTR_FLAGS if p.len() >= 4 => {
                            ep.flags = u32::from_ne_bytes(p[..4].try_into().unwrap())
                        }
                        // Network byte order (struct in_addr / in6_addr).
                        MPTCP_PM_ADDR_ATTR_ADDR4 if p.len() >= 4 => {
                            ep.addr = Some(std::net::Ipv4Addr::new(p[0], p[1], p[2], p[3]).into())
                        }
                        MPTCP_PM_ADDR_ATTR_ADDR6 if p.len() >= 16 => {
                            ep.addr = Some(std::net::Ipv6Addr::from(<[u8; 16]>::try_from(&p[..16]).unwrap()).into())
                        }
                        _ => {}
                    }
                }
                out.push(ep);
            }
        }
        out.sort_by_key(|e| e.id);
        Ok(out)
    }

    /// Sets or clears the backup flag of endpoint `id`, keeping its other changeable flag
    /// (fullmesh) as it is; the kernel sends MP_PRIO on its subflows if the flag changed.
    pub fn set_backup(&mut self, id: u8, backup: bool) -> io::Result<()> {
        let current = self
            .endpoints()?
            .into_iter()
            .find(|e| e.id == id)
            .ok_or_else(|| io::Error::new(io::ErrorKind::NotFound, format!("no MPTCP endpoint with id {id}")))?;
        let flags = if backup {
            current.flags | FLAG_BACKUP
        } else {
            current.flags & !FLAG_BACKUP
        };
        // Only BACKUP and FULLMESH may be changed by SET_FLAGS; send those bits.
        let flags = flags & (FLAG_BACKUP | FLAG_FULLMESH);
        let mut nested = Vec::new();
        push_attr(&mut nested, MPTCP_PM_ADDR_ATTR_ID, &[id]);
        push_attr(&mut nested, MPTCP_PM_ADDR_ATTR_FLAGS, &flags.to_ne_bytes());
        let mut a = Vec::new();
        push_attr(&mut a, MPTCP_PM_ATTR_ADDR | NLA_F_NESTED, &nested);
        self.request(
            self.family,
            MPTCP_PM_CMD_SET_FLAGS,
            MPTCP_PM_VER,
            NLM_F_REQUEST | NLM_F_ACK,
            &a,
        )
        .map(|_| ())
        .map_err(|e| {
            io::Error::new(
                e.kind(),
                format!(
                    "MPTCP_PM_CMD_SET_FLAGS id {id} {}: {e}",
                    if backup { "backup" } else { "regular" }
                ),
            )
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn attributes_round_trip_with_padding() {
        let mut b = Vec::new();
        push_attr(&mut b, 2, &[7]);
        push_attr(&mut b, 6 | NLA_F_NESTED, &4u32.to_ne_bytes());
        assert_eq!(b.len(), 8 + 8);
        let a = attrs(&b);
        assert_eq!(a, vec![(2, &[7u8][..]), (6, &4u32.to_ne_bytes()[..])]);
        assert!(attrs(&[0xff, 0, 1, 0]).is_empty(), "a length past the end is ignored");
    }
}
