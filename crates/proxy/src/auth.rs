//! Router→server handshake on each MPTCP connection, before any byte is relayed: a
//! challenge-response with HMAC-SHA256 (RFC 2104 / FIPS 180-4) under a pre-shared key.
//!
//! ```text
//! server → router  "MPX1" nonce[32]                      fresh random nonce per connection
//! router → server  mac[32] cc_len cc[cc_len] ATYP DST.ADDR DST.PORT
//!                  mac = HMAC-SHA256(key, "mobipath-proxy/1\0" ‖ nonce ‖ everything after mac)
//! server → router  status                               0 ok, then the relay starts
//! ```
//! The destination (RFC 1928 §5 encoding) and the requested congestion control are inside the
//! MAC, so a man in the middle can neither replay a recorded handshake (the nonce differs) nor
//! redirect an authenticated one. The handshake authenticates the router; it does not encrypt
//! the relayed bytes (run it over a VPN or carry TLS end to end if the paths are untrusted).
//! The server answers an authentication failure with status 1 and closes; it reads at most
//! `MAX_BODY` bytes from an unauthenticated peer.
use hmac::{Hmac, Mac};
use sha2::Sha256;
use tokio::io::{AsyncRead, AsyncReadExt, AsyncWrite, AsyncWriteExt};

use crate::dest::{Dest, ATYP_DOMAIN, ATYP_IPV4, ATYP_IPV6};
use crate::socks5::Parse;

pub const MAGIC: &[u8; 4] = b"MPX1";
pub const NONCE_LEN: usize = 32;
pub const MAC_LEN: usize = 32;
const CONTEXT: &[u8] = b"mobipath-proxy/1\0";
/// Linux's TCP_CA_NAME_MAX (include/net/tcp.h) is 16 including the NUL.
pub const MAX_CC_LEN: usize = 15;
pub const MAX_BODY: usize = 1 + MAX_CC_LEN + 1 + 1 + 255 + 2;

/// The server's answer after the handshake.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Ok = 0,
    AuthFailed = 1,
    NotAllowed = 2,
    ConnectFailed = 3,
    BadRequest = 4,
}

impl Status {
    pub fn from_u8(b: u8) -> Status {
        match b {
            0 => Status::Ok,
            1 => Status::AuthFailed,
            2 => Status::NotAllowed,
            3 => Status::ConnectFailed,
            _ => Status::BadRequest,
        }
    }
}

/// What the router asks for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Request {
    pub dest: Dest,
    /// Congestion control for the server's side of this connection (its sending direction).
    pub congestion: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum HandshakeError {
    #[error("I/O during handshake: {0}")]
    Io(#[from] std::io::Error),
    #[error("peer is not a mobipath-proxy server (bad magic)")]
    Magic,
    #[error("authentication failed (wrong pre-shared key or tampered request)")]
    AuthFailed,
    #[error("malformed request: {0}")]
    Malformed(String),
}

type HmacSha256 = Hmac<Sha256>;

fn mac_for(key: &[u8], nonce: &[u8; NONCE_LEN], body: &[u8]) -> HmacSha256 {
    let mut m = HmacSha256::new_from_slice(key).expect("HMAC accepts any key length");
    m.update(CONTEXT);
    m.update(nonce);
    m.update(body);
    m
}

/// The MAC the router sends ahead of `body` for the challenge `nonce` (what `server` verifies).
pub fn tag(key: &[u8], nonce: &[u8; NONCE_LEN], body: &[u8]) -> [u8; MAC_LEN] {
    mac_for(key, nonce, body).finalize().into_bytes().into()
}

fn encode_body(req: &Request) -> Vec<u8> {
    let mut b = Vec::with_capacity(MAX_BODY);
    let cc = req.congestion.as_deref().unwrap_or("").as_bytes();
    let cc = &cc[..cc.len().min(MAX_CC_LEN)];
    b.push(cc.len() as u8);
    b.extend_from_slice(cc);
    req.dest.encode_socks(&mut b);
    b
}

/// A fresh nonce from the OS's CSPRNG.
pub fn fresh_nonce() -> std::io::Result<[u8; NONCE_LEN]> {
    let mut n = [0u8; NONCE_LEN];
    getrandom::getrandom(&mut n).map_err(|e| std::io::Error::other(format!("getrandom: {e}")))?;
    Ok(n)
}

/// Router side: answers the challenge with `req` and returns the server's status.
pub async fn client<S>(s: &mut S, key: &[u8], req: &Request) -> Result<Status, HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut hello = [0u8; 4 + NONCE_LEN];
    s.read_exact(&mut hello).await?;
    if &hello[..4] != MAGIC {
        return Err(HandshakeError::Magic);
    }
    let nonce: [u8; NONCE_LEN] = hello[4..].try_into().unwrap();
    let body = encode_body(req);
    let tag = mac_for(key, &nonce, &body).finalize().into_bytes();
    let mut msg = Vec::with_capacity(MAC_LEN + body.len());
    msg.extend_from_slice(&tag);
    msg.extend_from_slice(&body);
    s.write_all(&msg).await?;
    let mut st = [0u8; 1];
    s.read_exact(&mut st).await?;
    Ok(Status::from_u8(st[0]))
}

/// Server side: sends the challenge, reads and verifies the answer. On success the caller checks
/// the destination and sends a status (`send_status`); on a MAC mismatch this sends
/// `Status::AuthFailed` itself and returns `AuthFailed`.
pub async fn server<S>(s: &mut S, key: &[u8], nonce: &[u8; NONCE_LEN]) -> Result<Request, HandshakeError>
where
    S: AsyncRead + AsyncWrite + Unpin,
{
    let mut hello = Vec::with_capacity(4 + NONCE_LEN);
    hello.extend_from_slice(MAGIC);
    hello.extend_from_slice(nonce);
    s.write_all(&hello).await?;
    let mut tag = [0u8; MAC_LEN];
    s.read_exact(&mut tag).await?;
    // The body is read field by field so no read goes past it (the relay's first bytes follow).
    let mut body = Vec::with_capacity(MAX_BODY);
    let cc_len = read_into(s, &mut body, 1).await?[0] as usize;
    if cc_len > MAX_CC_LEN {
        return Err(HandshakeError::Malformed(format!(
            "congestion name of {cc_len} bytes (max {MAX_CC_LEN})"
        )));
    }
    read_into(s, &mut body, cc_len).await?;
    let atyp = read_into(s, &mut body, 1).await?[0];
    let rest = match atyp {
        ATYP_IPV4 => 4 + 2,
        ATYP_IPV6 => 16 + 2,
        ATYP_DOMAIN => read_into(s, &mut body, 1).await?[0] as usize + 2,
        // Unknown type: still verify the MAC first, so a stranger learns nothing from the answer.
        _ => 0,
    };
    read_into(s, &mut body, rest).await?;
    if mac_for(key, nonce, &body).verify_slice(&tag).is_err() {
        let _ = s.write_all(&[Status::AuthFailed as u8]).await;
        return Err(HandshakeError::AuthFailed);
    }
    decode_body(&body)
}

/// Decodes an authenticated request body, `cc_len cc[cc_len] ATYP DST.ADDR DST.PORT`, which must
/// be exactly `body` (nothing after the port). The congestion-control name must be what the
/// router's own config allows (1..=15 of a-z, A-Z, 0-9, `_`), or empty for none: it is passed
/// to TCP_CONGESTION and may reach the log.
pub fn decode_body(body: &[u8]) -> Result<Request, HandshakeError> {
    let malformed = |why: &str| HandshakeError::Malformed(why.to_string());
    let (&cc_len, rest) = body.split_first().ok_or_else(|| malformed("empty request"))?;
    let cc_len = cc_len as usize;
    if cc_len > MAX_CC_LEN {
        return Err(HandshakeError::Malformed(format!(
            "congestion name of {cc_len} bytes (max {MAX_CC_LEN})"
        )));
    }
    let (cc, dest) = (
        rest.get(..cc_len)
            .ok_or_else(|| malformed("truncated congestion name"))?,
        &rest[cc_len..],
    );
    if !cc.iter().all(|b| b.is_ascii_alphanumeric() || *b == b'_') {
        return Err(malformed("congestion name is not 1..=15 of a-z, A-Z, 0-9, _"));
    }
    // ASCII by the check above.
    let congestion = (!cc.is_empty()).then(|| String::from_utf8_lossy(cc).into_owned());
    let dest = match Dest::parse_socks(dest) {
        Ok(Parse::Done(d, n)) if n == dest.len() => d,
        Ok(Parse::Done(..)) => return Err(malformed("bytes after the destination")),
        Ok(Parse::Incomplete) => return Err(malformed("truncated destination")),
        Err(e) => return Err(HandshakeError::Malformed(e.to_string())),
    };
    Ok(Request { dest, congestion })
}

/// The body `client` sends for `req` (what `decode_body` reads back).
pub fn encode_request(req: &Request) -> Vec<u8> {
    encode_body(req)
}

pub async fn send_status<S: AsyncWrite + Unpin>(s: &mut S, st: Status) -> std::io::Result<()> {
    s.write_all(&[st as u8]).await
}

async fn read_into<'a, S: AsyncRead + Unpin>(s: &mut S, buf: &'a mut Vec<u8>, n: usize) -> std::io::Result<&'a [u8]> {
    let start = buf.len();
    buf.resize(start + n, 0);
    s.read_exact(&mut buf[start..]).await?;
    Ok(&buf[start..])
}

/// Parses a key given as hex (at least 16 bytes = 32 hex digits, at most 64 bytes).
pub fn parse_hex_key(s: &str) -> Result<Vec<u8>, String> {
    let s = s.trim();
    if !s.len().is_multiple_of(2) || !s.bytes().all(|c| c.is_ascii_hexdigit()) {
        return Err("must be hex digits (an even number of 0-9, a-f)".into());
    }
    if !(32..=128).contains(&s.len()) {
        return Err(format!("must be 32..=128 hex digits (16 to 64 bytes), got {}", s.len()));
    }
    Ok((0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &[u8] = b"0123456789abcdef0123456789abcdef";

    fn req() -> Request {
        Request {
            dest: Dest::Addr("10.9.0.2:5201".parse().unwrap()),
            congestion: Some("cubic".into()),
        }
    }

    #[tokio::test]
    async fn right_key_passes_and_carries_request() {
        let (mut c, mut s) = tokio::io::duplex(4096);
        let nonce = [7u8; NONCE_LEN];
        let srv = tokio::spawn(async move {
            let r = server(&mut s, KEY, &nonce).await.unwrap();
            send_status(&mut s, Status::Ok).await.unwrap();
            r
        });
        assert_eq!(client(&mut c, KEY, &req()).await.unwrap(), Status::Ok);
        assert_eq!(srv.await.unwrap(), req());
    }

    #[tokio::test]
    async fn wrong_key_is_refused_with_status() {
        let (mut c, mut s) = tokio::io::duplex(4096);
        let srv = tokio::spawn(async move { server(&mut s, KEY, &[1u8; NONCE_LEN]).await });
        assert_eq!(
            client(&mut c, b"another key of enough bytes....!", &req())
                .await
                .unwrap(),
            Status::AuthFailed
        );
        assert!(matches!(srv.await.unwrap(), Err(HandshakeError::AuthFailed)));
    }

    #[tokio::test]
    async fn replayed_answer_fails_under_a_new_nonce() {
        // Record an honest answer to nonce A, replay it against nonce B.
        let (mut c, mut s) = tokio::io::duplex(4096);
        let srv = tokio::spawn(async move {
            let _ = server(&mut s, KEY, &[1u8; NONCE_LEN]).await.unwrap();
        });
        let mut hello = [0u8; 36];
        c.read_exact(&mut hello).await.unwrap();
        let body = encode_body(&req());
        let tag = mac_for(KEY, &[1u8; NONCE_LEN], &body).finalize().into_bytes();
        let mut answer = tag.to_vec();
        answer.extend_from_slice(&body);
        c.write_all(&answer).await.unwrap();
        srv.await.unwrap();

        let (mut c, mut s) = tokio::io::duplex(4096);
        let srv = tokio::spawn(async move { server(&mut s, KEY, &[2u8; NONCE_LEN]).await });
        c.read_exact(&mut hello).await.unwrap();
        c.write_all(&answer).await.unwrap();
        assert!(matches!(srv.await.unwrap(), Err(HandshakeError::AuthFailed)));
    }

    #[tokio::test]
    async fn tampered_destination_fails() {
        let (mut c, mut s) = tokio::io::duplex(4096);
        let srv = tokio::spawn(async move { server(&mut s, KEY, &[3u8; NONCE_LEN]).await });
        let mut hello = [0u8; 36];
        c.read_exact(&mut hello).await.unwrap();
        let body = encode_body(&req());
        let tag = mac_for(KEY, &[3u8; NONCE_LEN], &body).finalize().into_bytes();
        let mut answer = tag.to_vec();
        answer.extend_from_slice(&body);
        let n = answer.len();
        answer[n - 3] ^= 1; // change the last address byte
        c.write_all(&answer).await.unwrap();
        assert!(matches!(srv.await.unwrap(), Err(HandshakeError::AuthFailed)));
    }

    #[tokio::test]
    async fn garbage_is_bounded_and_refused() {
        let (mut c, mut s) = tokio::io::duplex(4096);
        let srv = tokio::spawn(async move { server(&mut s, KEY, &[4u8; NONCE_LEN]).await });
        let mut hello = [0u8; 36];
        c.read_exact(&mut hello).await.unwrap();
        c.write_all(&[0xAB; 200]).await.unwrap();
        assert!(srv.await.unwrap().is_err());
    }

    #[tokio::test]
    async fn client_rejects_non_proxy_peer() {
        let (mut c, mut s) = tokio::io::duplex(4096);
        s.write_all(b"HTTP/1.1 400 Bad Request\r\nContent-Length: 0\r\n\r\n")
            .await
            .unwrap();
        assert!(matches!(client(&mut c, KEY, &req()).await, Err(HandshakeError::Magic)));
    }

    #[test]
    fn decode_body_reads_what_encode_writes_and_refuses_the_rest() {
        for r in [
            req(),
            Request {
                dest: Dest::Name("a.example".into(), 443),
                congestion: None,
            },
        ] {
            assert_eq!(decode_body(&encode_request(&r)).unwrap(), r);
        }
        let good = encode_request(&req());
        for (bad, why) in [
            (vec![], "empty request"),
            (vec![3, b'a'], "truncated congestion name"),
            (vec![16], "congestion name of 16 bytes"),
            (vec![2, b'a', b'\n', 1, 1, 2, 3, 4, 0, 80], "congestion name is not"),
            ([&good[..], &[0][..]].concat(), "bytes after the destination"),
            (good[..good.len() - 1].to_vec(), "truncated destination"),
            (vec![0, 9], "address type 0x09"),
        ] {
            let e = decode_body(&bad).unwrap_err().to_string();
            assert!(e.contains(why), "{bad:?}: {e}");
        }
    }

    #[test]
    fn hex_keys() {
        assert_eq!(parse_hex_key(&"ab".repeat(16)).unwrap(), vec![0xab; 16]);
        assert!(parse_hex_key("abc").unwrap_err().contains("hex"));
        assert!(parse_hex_key(&"ab".repeat(8)).unwrap_err().contains("32..=128"));
        assert!(parse_hex_key(&"zz".repeat(16)).is_err());
    }
}
