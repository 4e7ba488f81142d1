//! A destination as a SOCKS5 request names it (RFC 1928 §5: ATYP, DST.ADDR, DST.PORT); the
//! router→server handshake (`auth`) carries it in the same encoding.
use std::fmt;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};

use crate::socks5::{Parse, SocksError};

pub const ATYP_IPV4: u8 = 0x01;
pub const ATYP_DOMAIN: u8 = 0x03;
pub const ATYP_IPV6: u8 = 0x04;

#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Dest {
    Addr(SocketAddr),
    /// A name the server side resolves; the allow-list is checked on the resolved addresses.
    Name(String, u16),
}

impl Dest {
    pub fn port(&self) -> u16 {
        match self {
            Dest::Addr(a) => a.port(),
            Dest::Name(_, p) => *p,
        }
    }

    /// Appends `ATYP DST.ADDR DST.PORT`.
    pub fn encode_socks(&self, out: &mut Vec<u8>) {
        match self {
            Dest::Addr(SocketAddr::V4(a)) => {
                out.push(ATYP_IPV4);
                out.extend_from_slice(&a.ip().octets());
            }
            Dest::Addr(SocketAddr::V6(a)) => {
                out.push(ATYP_IPV6);
                out.extend_from_slice(&a.ip().octets());
            }
            Dest::Name(n, _) => {
                // Names longer than 255 bytes cannot be encoded; `parse_socks` never yields one.
                let b = &n.as_bytes()[..n.len().min(255)];
                out.push(ATYP_DOMAIN);
                out.push(b.len() as u8);
                out.extend_from_slice(b);
            }
        }
        out.extend_from_slice(&self.port().to_be_bytes());
    }

    /// Parses `ATYP DST.ADDR DST.PORT` from the start of `b`.
    pub fn parse_socks(b: &[u8]) -> Result<Parse<Dest>, SocksError> {
        let Some(&atyp) = b.first() else {
            return Ok(Parse::Incomplete);
        };
        let (addr_len, start) = match atyp {
            ATYP_IPV4 => (4, 1),
            ATYP_IPV6 => (16, 1),
            ATYP_DOMAIN => match b.get(1) {
                None => return Ok(Parse::Incomplete),
                Some(0) => return Err(SocksError::EmptyName),
                Some(&n) => (n as usize, 2),
            },
            other => return Err(SocksError::AddressType(other)),
        };
        let end = start + addr_len + 2;
        if b.len() < end {
            return Ok(Parse::Incomplete);
        }
        let a = &b[start..start + addr_len];
        let port = u16::from_be_bytes([b[end - 2], b[end - 1]]);
        let d = match atyp {
            ATYP_IPV4 => Dest::Addr(SocketAddr::new(IpAddr::V4(Ipv4Addr::new(a[0], a[1], a[2], a[3])), port)),
            ATYP_IPV6 => {
                let mut o = [0u8; 16];
                o.copy_from_slice(a);
                Dest::Addr(SocketAddr::new(IpAddr::V6(Ipv6Addr::from(o)), port))
            }
            _ => {
                let name = std::str::from_utf8(a).map_err(|_| SocksError::NameNotUtf8)?;
                if let Some(c) = name.chars().find(|&c| crate::text::is_unsafe(c)) {
                    return Err(SocksError::NameControl(c as u32));
                }
                Dest::Name(name.to_string(), port)
            }
        };
        Ok(Parse::Done(d, end))
    }
}

impl fmt::Display for Dest {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Dest::Addr(a) => write!(f, "{a}"),
            // The name is the client's choice (up to 255 bytes of anything UTF-8): escaped.
            Dest::Name(n, p) => write!(f, "{}:{p}", crate::text::Untrusted(n)),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip() {
        for d in [
            Dest::Addr("10.1.2.3:443".parse().unwrap()),
            Dest::Addr("[fe80::1]:22".parse().unwrap()),
            Dest::Name("a.example".into(), 8080),
        ] {
            let mut b = Vec::new();
            d.encode_socks(&mut b);
            assert_eq!(Dest::parse_socks(&b), Ok(Parse::Done(d.clone(), b.len())));
        }
    }

    /// A name holding a line feed and an escape sequence is shown on one line without ESC
    /// (it reaches the router's and the server's logs and the metrics' `dest` label).
    #[test]
    fn display_escapes_a_hostile_name() {
        let d = Dest::Name("x\n mobipath-proxy: server: conn 999 FAKE\x1b[31m".into(), 80);
        let shown = d.to_string();
        assert!(!shown.contains('\n') && !shown.contains('\x1b'), "{shown}");
        assert!(shown.ends_with("\\u{1b}[31m:80"), "{shown}");
    }
}
