//! SOCKS version 5 (RFC 1928), server side, as much as the router needs: method negotiation with
//! "NO AUTHENTICATION REQUIRED" only (§3; the listener is meant for the train's LAN), the CONNECT
//! command (§4), address types IPv4, DOMAINNAME and IPv6 (§5), and the replies of §6.
//!
//! Deviations from RFC 1928: GSSAPI (which §3 says a compliant implementation MUST support) and
//! username/password are not offered; BIND and UDP ASSOCIATE are answered with X'07' "Command not
//! supported" (§6). The parsers are pure functions over a byte slice (unit-tested without sockets);
//! `negotiate` drives them over a stream with a fixed, small read buffer.
use std::net::{IpAddr, Ipv4Addr, SocketAddr};

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::dest::Dest;

pub const VERSION: u8 = 5;
pub const METHOD_NO_AUTH: u8 = 0x00;
pub const METHOD_NONE_ACCEPTABLE: u8 = 0xFF;
pub const CMD_CONNECT: u8 = 0x01;

/// Reply field REP (RFC 1928 §6).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Reply {
    Succeeded = 0x00,
    GeneralFailure = 0x01,
    NotAllowed = 0x02,
    NetworkUnreachable = 0x03,
    HostUnreachable = 0x04,
    ConnectionRefused = 0x05,
    TtlExpired = 0x06,
    CommandNotSupported = 0x07,
    AddressTypeNotSupported = 0x08,
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SocksError {
    #[error("not SOCKS version 5 (first byte {0:#04x})")]
    Version(u8),
    #[error("the client offers no method this proxy accepts (only 'no authentication', X'00')")]
    NoAcceptableMethod,
    #[error("NMETHODS is 0")]
    NoMethods,
    #[error("command {0:#04x} is not supported (only CONNECT, X'01')")]
    Command(u8),
    #[error("address type {0:#04x} is not supported (X'01' IPv4, X'03' domain, X'04' IPv6)")]
    AddressType(u8),
    #[error("reserved byte is {0:#04x}, must be X'00'")]
    Reserved(u8),
    #[error("empty domain name")]
    EmptyName,
    #[error("domain name is not UTF-8")]
    NameNotUtf8,
    /// A control or bidirectional formatting character (`text::is_unsafe`): no host name has one,
    /// and it would reach logs and terminals.
    #[error("domain name holds the control character U+{0:04X}")]
    NameControl(u32),
}

impl SocksError {
    /// The reply a request error is answered with (§6), if any (a bad greeting gets X'FF').
    pub fn reply(&self) -> Option<Reply> {
        match self {
            SocksError::Command(_) => Some(Reply::CommandNotSupported),
            SocksError::AddressType(_) => Some(Reply::AddressTypeNotSupported),
            SocksError::Version(_) | SocksError::NoAcceptableMethod | SocksError::NoMethods => None,
            _ => Some(Reply::GeneralFailure),
        }
    }
}

/// Outcome of a parser given a prefix of the input: more bytes needed, or done with the number
/// of bytes consumed.
#[derive(Debug, PartialEq, Eq)]
pub enum Parse<T> {
    Incomplete,
    Done(T, usize),
}

/// The version identifier/method selection message (§3): `VER NMETHODS METHODS...`. Returns the
/// method chosen (always `METHOD_NO_AUTH`) or an error if the client does not offer it.
pub fn parse_greeting(b: &[u8]) -> Result<Parse<u8>, SocksError> {
    if b.is_empty() {
        return Ok(Parse::Incomplete);
    }
    if b[0] != VERSION {
        return Err(SocksError::Version(b[0]));
    }
    if b.len() < 2 {
        return Ok(Parse::Incomplete);
    }
    let n = b[1] as usize;
    if n == 0 {
        return Err(SocksError::NoMethods);
    }
    if b.len() < 2 + n {
        return Ok(Parse::Incomplete);
    }
    if b[2..2 + n].contains(&METHOD_NO_AUTH) {
        Ok(Parse::Done(METHOD_NO_AUTH, 2 + n))
    } else {
        Err(SocksError::NoAcceptableMethod)
    }
}

/// A request (§4): `VER CMD RSV ATYP DST.ADDR DST.PORT`; only CONNECT is accepted.
pub fn parse_request(b: &[u8]) -> Result<Parse<Dest>, SocksError> {
    if b.is_empty() {
        return Ok(Parse::Incomplete);
    }
    if b[0] != VERSION {
        return Err(SocksError::Version(b[0]));
    }
    if b.len() < 4 {
        return Ok(Parse::Incomplete);
    }
    if b[1] != CMD_CONNECT {
        return Err(SocksError::Command(b[1]));
    }
    if b[2] != 0 {
        return Err(SocksError::Reserved(b[2]));
    }
    match Dest::parse_socks(&b[3..])? {
        Parse::Incomplete => Ok(Parse::Incomplete),
        Parse::Done(d, n) => Ok(Parse::Done(d, 3 + n)),
    }
}

/// A reply (§6) with BND.ADDR/BND.PORT = `bound` (0.0.0.0:0 when there is none to tell).
pub fn encode_reply(rep: Reply, bound: Option<SocketAddr>) -> Vec<u8> {
    let bound = bound.unwrap_or(SocketAddr::new(IpAddr::V4(Ipv4Addr::UNSPECIFIED), 0));
    let mut out = vec![VERSION, rep as u8, 0];
    Dest::Addr(bound).encode_socks(&mut out);
    out
}

/// Longest request: 4 header bytes + 1 length + 255 name bytes + 2 port bytes.
const MAX_REQUEST: usize = 4 + 1 + 255 + 2;
/// Longest greeting: 2 + 255 methods.
const MAX_GREETING: usize = 2 + 255;

async fn read_parsed<S, T>(
    s: &mut S,
    buf: &mut Vec<u8>,
    max: usize,
    parse: impl Fn(&[u8]) -> Result<Parse<T>, SocksError>,
) -> std::io::Result<Result<(T, usize), SocksError>>
where
    S: AsyncRead + Unpin,
{
    loop {
        match parse(buf) {
            Err(e) => return Ok(Err(e)),
            Ok(Parse::Done(v, n)) => return Ok(Ok((v, n))),
            Ok(Parse::Incomplete) => {}
        }
        if buf.len() >= max {
            // Unreachable by construction of the parsers; kept as a bound on the buffer.
            return Err(std::io::Error::new(
                std::io::ErrorKind::InvalidData,
                "SOCKS message too long",
            ));
        }
        let mut chunk = [0u8; 64];
        let want = (max - buf.len()).min(chunk.len());
        let n = s.read(&mut chunk[..want]).await?;
        if n == 0 {
            return Err(std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                "client closed during SOCKS negotiation",
            ));
        }
        buf.extend_from_slice(&chunk[..n]);
    }
}

/// Runs the server side of the negotiation up to (not including) the reply to the request, and
/// returns the CONNECT destination. On a protocol error it sends the reply §3/§6 prescribe and
/// returns an `InvalidData` error. Reads never go past the request (a client that pipelines data
/// after it would lose nothing: SOCKS clients wait for the reply before sending).
pub async fn negotiate<S>(s: &mut S) -> std::io::Result<Dest>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut buf = Vec::with_capacity(MAX_REQUEST);
    match read_parsed(s, &mut buf, MAX_GREETING, parse_greeting).await? {
        Ok((method, n)) => {
            s.write_all(&[VERSION, method]).await?;
            buf.drain(..n);
        }
        Err(e) => {
            if e != SocksError::Version(buf[0]) {
                let _ = s.write_all(&[VERSION, METHOD_NONE_ACCEPTABLE]).await;
            }
            return Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()));
        }
    }
    match read_parsed(s, &mut buf, MAX_REQUEST, parse_request).await? {
        Ok((dest, n)) => {
            if buf.len() > n {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::InvalidData,
                    "data sent before the SOCKS reply",
                ));
            }
            Ok(dest)
        }
        Err(e) => {
            if let Some(rep) = e.reply() {
                let _ = s.write_all(&encode_reply(rep, None)).await;
            }
            Err(std::io::Error::new(std::io::ErrorKind::InvalidData, e.to_string()))
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::Ipv6Addr;
    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    #[test]
    fn greeting_picks_no_auth_and_counts_bytes() {
        assert_eq!(parse_greeting(&[5, 2, 2, 0]), Ok(Parse::Done(0, 4)));
        assert_eq!(parse_greeting(&[5, 2, 2]), Ok(Parse::Incomplete));
        assert_eq!(parse_greeting(&[5]), Ok(Parse::Incomplete));
        assert_eq!(parse_greeting(&[]), Ok(Parse::Incomplete));
    }

    #[test]
    fn greeting_errors() {
        assert_eq!(parse_greeting(&[4, 1, 0]), Err(SocksError::Version(4)));
        assert_eq!(parse_greeting(&[5, 0]), Err(SocksError::NoMethods));
        assert_eq!(parse_greeting(&[5, 1, 2]), Err(SocksError::NoAcceptableMethod));
    }

    #[test]
    fn request_ipv4_ipv6_domain() {
        let v4 = [5, 1, 0, 1, 10, 0, 0, 7, 0x1f, 0x90];
        assert_eq!(
            parse_request(&v4),
            Ok(Parse::Done(Dest::Addr("10.0.0.7:8080".parse().unwrap()), 10))
        );
        for cut in 0..v4.len() {
            assert_eq!(parse_request(&v4[..cut]), Ok(Parse::Incomplete), "prefix {cut}");
        }
        let mut v6 = vec![5, 1, 0, 4];
        v6.extend_from_slice(&"2001:db8::1".parse::<Ipv6Addr>().unwrap().octets());
        v6.extend_from_slice(&443u16.to_be_bytes());
        assert_eq!(
            parse_request(&v6),
            Ok(Parse::Done(Dest::Addr("[2001:db8::1]:443".parse().unwrap()), 22))
        );
        let mut dn = vec![5, 1, 0, 3, 11];
        dn.extend_from_slice(b"example.org");
        dn.extend_from_slice(&80u16.to_be_bytes());
        assert_eq!(
            parse_request(&dn),
            Ok(Parse::Done(Dest::Name("example.org".into(), 80), dn.len()))
        );
        assert_eq!(parse_request(&dn[..dn.len() - 1]), Ok(Parse::Incomplete));
    }

    #[test]
    fn request_errors_map_to_rfc_replies() {
        let e = parse_request(&[5, 2, 0, 1]).unwrap_err();
        assert_eq!(e, SocksError::Command(2));
        assert_eq!(e.reply(), Some(Reply::CommandNotSupported));
        let e = parse_request(&[5, 1, 0, 9]).unwrap_err();
        assert_eq!(e.reply(), Some(Reply::AddressTypeNotSupported));
        assert_eq!(parse_request(&[5, 1, 1, 1]).unwrap_err(), SocksError::Reserved(1));
        assert_eq!(
            parse_request(&[5, 1, 0, 3, 0, 0, 80]).unwrap_err(),
            SocksError::EmptyName
        );
        assert_eq!(
            parse_request(&[5, 1, 0, 3, 1, 0xff, 0, 80]).unwrap_err(),
            SocksError::NameNotUtf8
        );
        let mut forged = vec![5, 1, 0, 3, 5];
        forged.extend_from_slice(b"a\nb\x1bc");
        forged.extend_from_slice(&[0, 80]);
        assert_eq!(parse_request(&forged).unwrap_err(), SocksError::NameControl(0x0a));
        assert_eq!(parse_request(&forged).unwrap_err().reply(), Some(Reply::GeneralFailure));
    }

    #[test]
    fn reply_encoding() {
        assert_eq!(
            encode_reply(Reply::Succeeded, Some("1.2.3.4:258".parse().unwrap())),
            vec![5, 0, 0, 1, 1, 2, 3, 4, 1, 2]
        );
        assert_eq!(
            encode_reply(Reply::NotAllowed, None),
            vec![5, 2, 0, 1, 0, 0, 0, 0, 0, 0]
        );
    }

    #[tokio::test]
    async fn negotiate_over_a_stream() {
        let (mut c, mut s) = tokio::io::duplex(1024);
        let server = tokio::spawn(async move { negotiate(&mut s).await });
        c.write_all(&[5, 1, 0]).await.unwrap();
        let mut m = [0u8; 2];
        c.read_exact(&mut m).await.unwrap();
        assert_eq!(m, [5, 0]);
        c.write_all(&[5, 1, 0, 1, 127, 0, 0, 1, 0, 80]).await.unwrap();
        assert_eq!(
            server.await.unwrap().unwrap(),
            Dest::Addr("127.0.0.1:80".parse().unwrap())
        );
    }

    #[tokio::test]
    async fn negotiate_refuses_auth_only_clients() {
        let (mut c, mut s) = tokio::io::duplex(1024);
        let server = tokio::spawn(async move { negotiate(&mut s).await });
        c.write_all(&[5, 1, 2]).await.unwrap();
        let mut m = [0u8; 2];
        c.read_exact(&mut m).await.unwrap();
        assert_eq!(m, [5, 0xFF]);
        assert!(server.await.unwrap().is_err());
    }
}
