//! What a SOCKS5 client on the train's LAN sends the router proxy (RFC 1928 §3-§5): the greeting
//! and the CONNECT request, as pure parsers and through `negotiate` over an in-memory stream.
//! Beyond "no panic, no hang": a parser's verdict on a prefix never contradicts its verdict on
//! the whole (Incomplete until the message is whole, then the same answer); a parsed destination
//! encodes back to the bytes it was read from; its display (what the logs and the metrics show)
//! holds no control character; every error has a message.
#![no_main]
use libfuzzer_sys::fuzz_target;
use mobipath_proxy::dest::Dest;
use mobipath_proxy::socks5::{negotiate, parse_greeting, parse_request, Parse, SocksError};
use mobipath_proxy::text::is_unsafe;

/// The parser's verdicts on every prefix of `b` agree with its verdict on `b`.
fn prefixes_agree<T: PartialEq + std::fmt::Debug>(b: &[u8], parse: impl Fn(&[u8]) -> Result<Parse<T>, SocksError>) {
    let whole = parse(b);
    if let Ok(Parse::Done(_, n)) = &whole {
        assert!(*n <= b.len(), "consumed {n} of {} bytes", b.len());
        assert_eq!(parse(&b[..*n]), whole, "the message alone parses differently");
        for k in 0..*n {
            assert!(
                matches!(parse(&b[..k]), Ok(Parse::Incomplete)) || parse(&b[..k]) == whole,
                "prefix {k} of a complete message: {:?}",
                parse(&b[..k])
            );
        }
    }
    if let Err(e) = &whole {
        assert!(!e.to_string().is_empty());
    }
}

/// One runtime for every input (building one per input would dominate the run time).
fn runtime() -> &'static tokio::runtime::Runtime {
    static RT: std::sync::OnceLock<tokio::runtime::Runtime> = std::sync::OnceLock::new();
    RT.get_or_init(|| tokio::runtime::Builder::new_current_thread().build().unwrap())
}

fuzz_target!(|data: &[u8]| {
    prefixes_agree(data, parse_greeting);
    prefixes_agree(data, parse_request);
    if let Ok(Parse::Done(d, n)) = parse_request(data) {
        let mut enc = Vec::new();
        d.encode_socks(&mut enc);
        assert_eq!(&enc[..], &data[3..n], "{d:?} encodes to other bytes");
        let shown = d.to_string();
        assert!(!shown.chars().any(is_unsafe), "{shown:?}");
        if let Dest::Name(name, _) = &d {
            assert!(!name.is_empty() && name.len() <= 255);
        }
    }
    // The whole exchange over a stream: the input is everything the client sends, then EOF.
    let mut stream = tokio::io::join(data, tokio::io::sink());
    if let Ok(d) = runtime().block_on(negotiate(&mut stream)) {
        assert!(!d.to_string().chars().any(is_unsafe));
    }
});
