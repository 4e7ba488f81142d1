//! What a router sends the server proxy after its challenge (crates/proxy/src/auth.rs): the MAC
//! and the request body `cc_len cc ATYP DST.ADDR DST.PORT`. The body is fuzzed twice: through the
//! pure `decode_body`, and through the server side of the handshake over an in-memory stream,
//! once under a MAC made with the right key over the bytes the server will read (so fuzzed
//! bodies get past authentication to the decoding) and once with a wrong MAC.
//! Beyond "no panic, no hang": an accepted body encodes back to itself; the server's verdict
//! under a right MAC is `decode_body`'s, under a wrong one never a request; the destination's
//! display and the congestion name hold no control character.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mobipath_proxy::auth::{self, decode_body, encode_request, HandshakeError, MAX_CC_LEN, NONCE_LEN};
use mobipath_proxy::dest::{ATYP_DOMAIN, ATYP_IPV4, ATYP_IPV6};
use mobipath_proxy::text::is_unsafe;

const KEY: &[u8] = b"fuzzing key of 32 bytes, no more";
const NONCE: [u8; NONCE_LEN] = [7; NONCE_LEN];

/// How many bytes of `b` the server reads as the body (field by field), or None when it stops
/// before the MAC check (cc_len too large) or the input ends first.
fn framed_len(b: &[u8]) -> Option<usize> {
    let cc_len = *b.first()? as usize;
    if cc_len > MAX_CC_LEN {
        return None;
    }
    let atyp_at = 1 + cc_len;
    let rest = match *b.get(atyp_at)? {
        ATYP_IPV4 => 4 + 2,
        ATYP_IPV6 => 16 + 2,
        ATYP_DOMAIN => *b.get(atyp_at + 1)? as usize + 3,
        _ => 0,
    };
    let n = atyp_at + 1 + rest;
    (n <= b.len()).then_some(n)
}

fn serve(stream_bytes: &[u8]) -> Result<auth::Request, HandshakeError> {
    let mut stream = tokio::io::join(stream_bytes, tokio::io::sink());
    runtime().block_on(auth::server(&mut stream, KEY, &NONCE))
}

/// One runtime for every input (building one per input would dominate the run time).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().build().unwrap())
}

fuzz_target!(|data: &[u8]| {
    match decode_body(data) {
        Ok(req) => {
            assert_eq!(encode_request(&req), data, "{req:?} encodes to other bytes");
            assert!(!req.dest.to_string().chars().any(is_unsafe));
            if let Some(cc) = &req.congestion {
                assert!(!cc.is_empty() && cc.len() <= MAX_CC_LEN && !cc.chars().any(is_unsafe));
            }
        }
        Err(e) => assert!(!e.to_string().is_empty()),
    }
    // Under the right MAC over what the server reads: the same verdict as decode_body.
    if let Some(n) = framed_len(data) {
        let mut msg = auth::tag(KEY, &NONCE, &data[..n]).to_vec();
        msg.extend_from_slice(data);
        match (serve(&msg), decode_body(&data[..n])) {
            (Ok(a), Ok(b)) => assert_eq!(a, b),
            (Err(HandshakeError::Malformed(_)), Err(_)) => {}
            (a, b) => panic!("server {a:?} but decode_body {b:?}"),
        }
    }
    // Under a wrong MAC: never a request.
    let mut msg = vec![0u8; 32];
    msg.extend_from_slice(data);
    assert!(serve(&msg).is_err());
});
