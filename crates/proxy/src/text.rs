//! Text that came from the network made safe for a log line, a terminal or a JSON line.
//!
//! A SOCKS5 client names its destination with up to 255 bytes of its choosing, the router tells
//! the server the same name, a peer proxy answers with an HTTP body, a GPS receiver sends NMEA
//! sentences: any of it may reach the journal or an operator's console. Raw, a line feed in it
//! forges a log line of its own and an escape sequence (ESC `[31m`, a C1 CSI, a bidi override)
//! drives the terminal. So every log line is written through [`escape_controls`] (the `log!`
//! macro does it), peer-supplied names are shown through [`Untrusted`] (which also escapes `\`,
//! so an escaped line cannot be mistaken for one that looked escaped), and JSON lines quote
//! strings with [`json_str`].
//!
//! Escaped: every Unicode control character (C0, DEL, C1: `char::is_control`), the line and
//! paragraph separators U+2028/U+2029 and the bidirectional formatting characters (U+200E,
//! U+200F, U+202A-U+202E, U+2066-U+2069), which reorder what a terminal shows. Written as `\n`,
//! `\r`, `\t` or `\u{XX}` (Rust's notation); everything else, non-ASCII letters included, is
//! kept as it is.
use std::borrow::Cow;
use std::fmt;

/// Whether `c` must not reach a log line or terminal as it is.
pub fn is_unsafe(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{2028}' | '\u{2029}' | '\u{200e}' | '\u{200f}' | '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

fn push_escaped(out: &mut String, c: char) {
    match c {
        '\n' => out.push_str("\\n"),
        '\r' => out.push_str("\\r"),
        '\t' => out.push_str("\\t"),
        c => out.push_str(&format!("\\u{{{:x}}}", c as u32)),
    }
}

/// `s` with every unsafe character (see the module doc) escaped; borrowed when there is none.
/// Backslashes are kept: this is for whole log lines, whose own text may hold them.
pub fn escape_controls(s: &str) -> Cow<'_, str> {
    if !s.chars().any(is_unsafe) {
        return Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(s.len() + 8);
    for c in s.chars() {
        if is_unsafe(c) {
            push_escaped(&mut out, c);
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// The line `log!` writes: the program's name, then `msg` with unsafe characters escaped.
pub fn log_line(msg: &str) -> String {
    format!("mobipath-proxy: {}", escape_controls(msg))
}

/// Displays text a peer chose (a destination name, a congestion-control name) with unsafe
/// characters and `\` escaped: what is shown is always one line, and a `\` in it was written by
/// this program.
#[derive(Debug, Clone, Copy)]
pub struct Untrusted<'a>(pub &'a str);

impl fmt::Display for Untrusted<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if !self.0.chars().any(|c| c == '\\' || is_unsafe(c)) {
            return f.write_str(self.0);
        }
        let mut out = String::with_capacity(self.0.len() + 8);
        for c in self.0.chars() {
            if c == '\\' {
                out.push_str("\\\\");
            } else if is_unsafe(c) {
                push_escaped(&mut out, c);
            } else {
                out.push(c);
            }
        }
        f.write_str(&out)
    }
}

/// `s` as a JSON string literal (RFC 8259 §7) in which every unsafe character is a `\uXXXX`
/// escape: JSON requires it only below U+0020, which would leave DEL, C1 and the bidi controls
/// raw on a terminal that shows the line.
pub fn json_str(s: &str) -> String {
    let mut o = String::with_capacity(s.len() + 2);
    o.push('"');
    for c in s.chars() {
        match c {
            '"' => o.push_str("\\\""),
            '\\' => o.push_str("\\\\"),
            '\n' => o.push_str("\\n"),
            '\r' => o.push_str("\\r"),
            '\t' => o.push_str("\\t"),
            c if is_unsafe(c) => {
                // Every unsafe character is in the Basic Multilingual Plane: one \u escape.
                o.push_str(&format!("\\u{:04x}", c as u32))
            }
            c => o.push(c),
        }
    }
    o.push('"');
    o
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The log line a SOCKS5 client tried to forge (a name with a line feed, a fake log line and
    /// an ANSI colour) stays one line, without ESC.
    #[test]
    fn forged_line_stays_one_line() {
        let name = "x\n mobipath-proxy: server: conn 999 FAKE relayed to 10.0.0.1:22\x1b[31m";
        let shown = Untrusted(name).to_string();
        assert!(!shown.contains('\n') && !shown.contains('\x1b'), "{shown}");
        assert_eq!(
            shown,
            "x\\n mobipath-proxy: server: conn 999 FAKE relayed to 10.0.0.1:22\\u{1b}[31m"
        );
        // Even a message that put the raw name in (an error text quoting it) is one line.
        let line = log_line(&format!("router: conn 1: server refused {name}:80"));
        assert!(!line.contains('\n') && !line.contains('\x1b'), "{line}");
        assert!(line.starts_with("mobipath-proxy: router: conn 1: server refused x\\n mobipath-proxy: "));
    }

    #[test]
    fn every_unsafe_class_is_escaped() {
        for c in [
            '\0', '\x07', '\x7f', '\u{85}', '\u{9b}', '\u{2028}', '\u{202e}', '\u{2066}',
        ] {
            let s = format!("a{c}b");
            let e = escape_controls(&s);
            assert!(!e.contains(c), "{c:?} kept: {e}");
            assert!(!Untrusted(&s).to_string().contains(c));
            let j = json_str(&s);
            assert!(!j.contains(c), "{c:?} kept in JSON: {j}");
            let back: String = serde_json::from_str(&j).unwrap();
            assert_eq!(back, s, "the JSON string reads back as the text");
        }
    }

    #[test]
    fn ordinary_text_is_untouched() {
        for s in ["example.org", "zürich.example", "日本.jp", "a b-c_d"] {
            assert!(matches!(escape_controls(s), Cow::Borrowed(_)));
            assert_eq!(Untrusted(s).to_string(), s);
            assert_eq!(json_str(s), serde_json::Value::String(s.into()).to_string());
        }
        assert_eq!(Untrusted("a\\n").to_string(), "a\\\\n", "a backslash is escaped");
        assert_eq!(escape_controls("C:\\x"), "C:\\x", "a whole line keeps its backslashes");
    }
}
