//! OpenWrt's UCI config (`/etc/config/mobipath`) translated into the proxy's TOML (src/config.rs),
//! so a router is configured the OpenWrt way (`uci set`, LuCI) and the proxy still reads one
//! format.
//!
//! File syntax as OpenWrt's UCI documentation describes it (openwrt.org, "The UCI system",
//! docs/guide-user/base-system/uci): `config TYPE ['NAME']` opens a section, `option KEY 'VALUE'`
//! sets a value, `list KEY 'VALUE'` appends one; `#` starts a comment; values are single- or
//! double-quoted or bare words, and adjacent quoted parts join (`'it'\''s'`). Deviations: a
//! backslash escapes only outside single quotes (as in the shell, which uci's own parser follows
//! closely); `package` and `import` lines are refused.
//!
//! Sections (each option named as in the TOML, same ranges; the translated file is checked with
//! src/config.rs before it is written, and its errors are given back under the UCI name):
//!
//! | UCI section | TOML | |
//! |---|---|---|
//! | `mobipath` (one) | — | `enabled` (bool), `side` (`router`, `server`, `pha-d`): read by the init script |
//! | `router`, `server`, `limits`, `metrics`, `pha_d` (one each) | `[router]` ... `[pha_d]` | |
//! | `allow` (any number) | `[[server.allow]]` | `cidr`; `list ports` (or `option ports '80 443'`) |
//! | `subflow` (any number) | `[[pha_d.subflows]]` | `operator`, `endpoint`, `peer_address` |
//!
//! Errors name the option the way `uci show` does: `mobipath.@limits[0].max_connections`, or
//! `mobipath.NAME.OPTION` for a named section, with the line.
use std::fmt::Write as _;
use std::path::Path;

use crate::config;

#[derive(Clone, Copy, PartialEq, Debug)]
enum Kind {
    Str,
    Int,
    Float,
    Bool,
    /// `list X 'a'` lines, or one `option X 'a b'` split at whitespace.
    StrList,
}

/// (UCI section type, TOML section path, repeated, options).
type Schema = (&'static str, &'static str, bool, &'static [(&'static str, Kind)]);

const SCHEMA: &[Schema] = &[
    ("mobipath", "", false, &[("enabled", Kind::Bool), ("side", Kind::Str)]),
    (
        "router",
        "router",
        false,
        &[
            ("server", Kind::Str),
            ("key", Kind::Str),
            ("key_file", Kind::Str),
            ("socks_listen", Kind::Str),
            ("transparent_listen", Kind::Str),
            ("congestion", Kind::Str),
            ("server_congestion", Kind::Str),
        ],
    ),
    (
        "server",
        "server",
        false,
        &[
            ("listen", Kind::Str),
            ("key", Kind::Str),
            ("key_file", Kind::Str),
            ("slow_start_after_idle", Kind::Str),
        ],
    ),
    (
        "allow",
        "server.allow",
        true,
        &[("cidr", Kind::Str), ("ports", Kind::StrList)],
    ),
    (
        "limits",
        "limits",
        false,
        &[
            ("max_connections", Kind::Int),
            ("buffer_bytes", Kind::Int),
            ("idle_timeout_s", Kind::Int),
            ("connect_timeout_s", Kind::Int),
            ("handshake_timeout_s", Kind::Int),
            ("shutdown_grace_s", Kind::Int),
            ("worker_threads", Kind::Int),
        ],
    ),
    ("metrics", "metrics", false, &[("listen", Kind::Str)]),
    (
        "pha_d",
        "pha_d",
        false,
        &[
            ("gps", Kind::Str),
            ("table", Kind::Str),
            ("track", Kind::Str),
            ("policy", Kind::Str),
            ("lead_ms", Kind::Float),
            ("resend_b0", Kind::Bool),
            ("gps_period_ms", Kind::Float),
            ("tick_ms", Kind::Float),
            ("stale_s", Kind::Float),
            ("max_offset_m", Kind::Float),
            ("max_speed_mps", Kind::Float),
            ("min_interval_ms", Kind::Float),
            ("retry_s", Kind::Float),
            ("max_retries", Kind::Int),
            ("slow_start_after_idle", Kind::Str),
            ("peer_metrics", Kind::Str),
            ("peer_poll_ms", Kind::Float),
            ("peer_stale_ms", Kind::Float),
        ],
    ),
    (
        "subflow",
        "pha_d.subflows",
        true,
        &[
            ("operator", Kind::Str),
            ("endpoint", Kind::Int),
            ("peer_address", Kind::Str),
        ],
    ),
];

/// What the init script needs besides the TOML.
#[derive(Debug, Clone, PartialEq)]
pub struct Translated {
    pub toml: String,
    pub enabled: bool,
    /// `router`, `server` or `pha-d`.
    pub side: String,
}

#[derive(Debug)]
struct Section {
    ty: String,
    name: Option<String>,
    line: usize,
    /// Index among the sections of its type (`@TYPE[i]`).
    index: usize,
    options: Vec<(String, Vec<String>, bool, usize)>, // key, values, is_list, line
}

impl Section {
    fn label(&self) -> String {
        match &self.name {
            Some(n) => format!("mobipath.{n}"),
            None => format!("mobipath.@{}[{}]", self.ty, self.index),
        }
    }
}

/// Splits a line into words: bare, '...' or "..." parts, joined when adjacent.
fn words(line: &str) -> Result<Vec<String>, String> {
    let mut out = Vec::new();
    let mut cur = String::new();
    let mut in_word = false;
    let mut it = line.chars().peekable();
    while let Some(c) = it.next() {
        match c {
            '#' if !in_word => break,
            c if c.is_whitespace() => {
                if in_word {
                    out.push(std::mem::take(&mut cur));
                    in_word = false;
                }
            }
            '\'' => {
                in_word = true;
                loop {
                    match it.next() {
                        Some('\'') => break,
                        Some(ch) => cur.push(ch),
                        None => return Err("unterminated ' quote".into()),
                    }
                }
            }
            '"' => {
                in_word = true;
                loop {
                    match it.next() {
                        Some('"') => break,
                        Some('\\') => match it.next() {
                            Some(ch) => cur.push(ch),
                            None => return Err("unterminated \" quote".into()),
                        },
                        Some(ch) => cur.push(ch),
                        None => return Err("unterminated \" quote".into()),
                    }
                }
            }
            '\\' => {
                in_word = true;
                match it.next() {
                    Some(ch) => cur.push(ch),
                    None => return Err("a line may not end in a backslash".into()),
                }
            }
            c => {
                in_word = true;
                cur.push(c);
            }
        }
    }
    if in_word {
        out.push(cur);
    }
    Ok(out)
}

fn valid_name(s: &str) -> bool {
    !s.is_empty() && s.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

fn parse_sections(text: &str, file: &str) -> Result<Vec<Section>, String> {
    let mut sections: Vec<Section> = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let ln = i + 1;
        let at = |m: String| format!("{file}: line {ln}: {m}");
        let w = words(line).map_err(at)?;
        let Some(first) = w.first() else { continue };
        match first.as_str() {
            "config" => {
                let (ty, name) = match w.len() {
                    2 => (w[1].clone(), None),
                    3 => (w[1].clone(), Some(w[2].clone())),
                    _ => return Err(at("expected `config TYPE ['NAME']`".into())),
                };
                if !SCHEMA.iter().any(|s| s.0 == ty) {
                    let types: Vec<&str> = SCHEMA.iter().map(|s| s.0).collect();
                    return Err(at(format!(
                        "unknown section type {ty:?}; allowed: {}",
                        types.join(", ")
                    )));
                }
                if let Some(n) = &name {
                    if !valid_name(n) {
                        return Err(at(format!("section name {n:?}: letters, digits and _ only")));
                    }
                    if let Some(prev) = sections.iter().find(|s| s.name.as_deref() == Some(n)) {
                        return Err(at(format!("section name {n:?} already used on line {}", prev.line)));
                    }
                }
                let index = sections.iter().filter(|s| s.ty == ty).count();
                sections.push(Section {
                    ty,
                    name,
                    line: ln,
                    index,
                    options: Vec::new(),
                });
            }
            kw @ ("option" | "list") => {
                if w.len() != 3 {
                    return Err(at(format!("expected `{kw} NAME 'VALUE'`")));
                }
                let Some(sec) = sections.last_mut() else {
                    return Err(at(format!("`{kw}` before any `config` line")));
                };
                let key = &w[1];
                let is_list = kw == "list";
                let label = sec.label();
                match sec.options.iter_mut().find(|o| &o.0 == key) {
                    Some(o) if is_list && o.2 => o.1.push(w[2].clone()),
                    Some(o) => {
                        return Err(at(format!(
                            "{label}.{key}: set twice (also on line {}){}",
                            o.3,
                            if is_list { "; use `list` for every value" } else { "" }
                        )))
                    }
                    None => sec.options.push((key.clone(), vec![w[2].clone()], is_list, ln)),
                }
            }
            other => {
                return Err(at(format!(
                    "unknown keyword {other:?}; expected config, option or list"
                )))
            }
        }
    }
    Ok(sections)
}

fn uci_bool(v: &str) -> Option<bool> {
    match v {
        "1" | "yes" | "on" | "true" | "enabled" => Some(true),
        "0" | "no" | "off" | "false" | "disabled" => Some(false),
        _ => None,
    }
}

/// Translates UCI text. `file` names it in errors; `base` is where the TOML will be read from
/// (relative `key_file`, `table` and `track` paths resolve against it), for the check.
pub fn translate(text: &str, file: &str, base: &Path) -> Result<Translated, String> {
    let sections = parse_sections(text, file)?;
    let mut root = toml::Table::new();
    let mut enabled = true;
    let mut side: Option<String> = None;
    // TOML section path + index -> the UCI section, to name options in config errors.
    let mut origin: Vec<(String, usize, usize)> = Vec::new(); // (toml path, index, sections idx)
    for (si, sec) in sections.iter().enumerate() {
        let &(ty, path, repeated, opts) = SCHEMA.iter().find(|s| s.0 == sec.ty).expect("checked");
        let label = sec.label();
        let at = |ln: usize, m: String| format!("{file}: line {ln}: {m}");
        if !repeated && sec.index > 0 {
            let first = sections.iter().find(|s| s.ty == sec.ty).expect("exists");
            return Err(at(
                sec.line,
                format!(
                    "a second `config {ty}` section; only one (first on line {})",
                    first.line
                ),
            ));
        }
        let mut table = toml::Table::new();
        for (key, values, is_list, ln) in &sec.options {
            let Some(&(_, kind)) = opts.iter().find(|o| o.0 == key) else {
                let names: Vec<&str> = opts.iter().map(|o| o.0).collect();
                return Err(at(
                    *ln,
                    format!("{label}.{key}: unknown option; allowed: {}", names.join(", ")),
                ));
            };
            if *is_list && kind != Kind::StrList {
                return Err(at(
                    *ln,
                    format!("{label}.{key}: takes one value (`option`), not a `list`"),
                ));
            }
            let v = &values[0];
            let value = match kind {
                Kind::Str => toml::Value::String(v.clone()),
                Kind::StrList => toml::Value::Array(
                    if *is_list {
                        values.clone()
                    } else {
                        v.split_whitespace().map(str::to_string).collect()
                    }
                    .into_iter()
                    .map(toml::Value::String)
                    .collect(),
                ),
                Kind::Int => toml::Value::Integer(
                    v.trim()
                        .parse::<i64>()
                        .map_err(|_| at(*ln, format!("{label}.{key}: {v:?} is not a whole number")))?,
                ),
                Kind::Float => {
                    let f = v.trim().parse::<f64>().ok().filter(|f| f.is_finite());
                    toml::Value::Float(f.ok_or_else(|| at(*ln, format!("{label}.{key}: {v:?} is not a number")))?)
                }
                Kind::Bool => toml::Value::Boolean(uci_bool(v.trim()).ok_or_else(|| {
                    at(
                        *ln,
                        format!("{label}.{key}: {v:?} is not a boolean (1/0, yes/no, on/off, true/false)"),
                    )
                })?),
            };
            if ty == "mobipath" {
                match key.as_str() {
                    "enabled" => enabled = value.as_bool().expect("bool"),
                    _ => {
                        if !matches!(v.as_str(), "router" | "server" | "pha-d") {
                            return Err(at(*ln, format!("{label}.side: {v:?}; allowed: router, server, pha-d")));
                        }
                        side = Some(v.clone());
                    }
                }
                continue;
            }
            table.insert(key.clone(), value);
        }
        if ty == "mobipath" {
            continue;
        }
        // Place the table at its TOML path.
        let (parent, leaf) = match path.split_once('.') {
            Some((p, l)) => (Some(p), l),
            None => (None, path),
        };
        let dest = match parent {
            None => &mut root,
            Some(p) => {
                let owner = sections.iter().position(|s| s.ty == p);
                if owner.is_none() {
                    return Err(at(sec.line, format!("`config {ty}` needs a `config {p}` section")));
                }
                root.entry(p.to_string())
                    .or_insert_with(|| toml::Value::Table(toml::Table::new()))
                    .as_table_mut()
                    .expect("a table")
            }
        };
        if repeated {
            let arr = dest
                .entry(leaf.to_string())
                .or_insert_with(|| toml::Value::Array(Vec::new()));
            let arr = arr.as_array_mut().expect("an array");
            origin.push((path.to_string(), arr.len(), si));
            arr.push(toml::Value::Table(table));
        } else {
            origin.push((path.to_string(), 0, si));
            // A parent table may already hold children (`allow` before `server`).
            match dest.get_mut(leaf).and_then(|v| v.as_table_mut()) {
                Some(t) => t.extend(table),
                None => {
                    dest.insert(leaf.to_string(), toml::Value::Table(table));
                }
            }
        }
    }
    let side = match side {
        Some(s) => s,
        None if root.contains_key("router") => "router".into(),
        None if root.contains_key("server") => "server".into(),
        None if root.contains_key("pha_d") => "pha-d".into(),
        None => {
            return Err(format!(
                "{file}: no `config router`, `config server` or `config pha_d` section"
            ))
        }
    };
    let wanted = match side.as_str() {
        "router" => "router",
        "server" => "server",
        _ => "pha_d",
    };
    if !root.contains_key(wanted) {
        return Err(format!(
            "{file}: mobipath.side is {side:?} but there is no `config {wanted}` section"
        ));
    }
    let mut toml = String::new();
    let _ = writeln!(
        toml,
        "# Translated from {file} by `mobipath-proxy uci`; edit that file, not this one."
    );
    toml.push_str(&toml::to_string(&root).map_err(|e| format!("{file}: cannot write TOML: {e}"))?);
    // The proxy's own checks, their field names given back as UCI option names.
    if let Err(e) = config::parse(&toml, file, base) {
        return Err(format!("{file}: {}", uci_field(&e.field, &sections, &origin, &e.msg)));
    }
    Ok(Translated { toml, enabled, side })
}

/// `limits.max_connections` -> `line 7: mobipath.@limits[0].max_connections: MSG`.
fn uci_field(field: &str, sections: &[Section], origin: &[(String, usize, usize)], msg: &str) -> String {
    // The longest TOML section path that prefixes the field, with its index for arrays.
    let mut best: Option<(&Section, &str)> = None;
    let mut best_len = 0;
    for (path, idx, si) in origin {
        let repeated = SCHEMA.iter().any(|s| s.1 == path && s.2);
        let prefix = if repeated {
            format!("{path}[{idx}]")
        } else {
            path.clone()
        };
        if let Some(rest) = field.strip_prefix(&prefix) {
            if (rest.is_empty() || rest.starts_with('.')) && prefix.len() > best_len {
                best_len = prefix.len();
                best = Some((&sections[*si], rest.trim_start_matches('.')));
            }
        }
    }
    match best {
        Some((sec, rest)) => {
            let opt = rest.split(['.', '[']).next().unwrap_or("");
            let line = sec.options.iter().find(|o| o.0 == opt).map(|o| o.3).unwrap_or(sec.line);
            let name = if opt.is_empty() {
                sec.label()
            } else {
                format!("{}.{rest}", sec.label())
            };
            format!("line {line}: {name}: {msg}")
        }
        None => format!("{field}: {msg}"),
    }
}

/// `mobipath-proxy uci --config FILE [--out FILE] [--print-side]`.
pub fn uci_main(args: &[String]) -> i32 {
    let mut input = None;
    let mut out = None;
    let mut print_side = false;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--config" | "-c" => input = it.next().cloned(),
            "--out" | "-o" => out = it.next().cloned(),
            "--print-side" => print_side = true,
            other => {
                eprintln!(
                    "mobipath-proxy uci: unknown argument {other:?}\n\n{}",
                    crate::cli::USAGE
                );
                return 2;
            }
        }
    }
    let Some(input) = input else {
        eprintln!("mobipath-proxy uci: --config FILE is required (e.g. /etc/config/mobipath)");
        return 2;
    };
    let text = match crate::files::read_text(Path::new(&input), crate::files::MAX_DATA_FILE_BYTES) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("mobipath-proxy: config error: {input}: {e}");
            return 2;
        }
    };
    let base = match &out {
        Some(o) => Path::new(o).parent().map(Path::to_path_buf).unwrap_or_default(),
        None => std::env::current_dir().unwrap_or_default(),
    };
    let base = if base.as_os_str().is_empty() {
        std::path::PathBuf::from(".")
    } else {
        base
    };
    let t = match translate(&text, &input, &base) {
        Ok(t) => t,
        Err(e) => {
            eprintln!("mobipath-proxy: config error: {e}");
            return 2;
        }
    };
    if print_side {
        println!("{} {}", t.side, if t.enabled { 1 } else { 0 });
    }
    match out {
        Some(o) => {
            // Written next to the target and renamed, so a running reader never sees half a file.
            let tmp = format!("{o}.tmp{}", std::process::id());
            let r = std::fs::write(&tmp, &t.toml).and_then(|_| std::fs::rename(&tmp, &o));
            if let Err(e) = r {
                let _ = std::fs::remove_file(&tmp);
                eprintln!("mobipath-proxy uci: cannot write {o}: {e}");
                return 1;
            }
        }
        None if !print_side => print!("{}", t.toml),
        None => {}
    }
    0
}

#[cfg(test)]
mod tests {
    use super::*;

    const SAMPLE: &str = include_str!("../openwrt/mobipath.config");
    const KEY: &str = "00112233445566778899aabbccddeeff";
    const TABLE: &str = "# mobipath handover table v2\n# runs = 1\n# min_support = 1\noperator,start_m,end_m,count\nA,1000,1100,1\nB,5000,5100,1\n";
    const TRACK: &str = "lat,lon\n37.0,127.0\n37.0,127.1\n";

    /// A directory holding the sample's key, table and track; the sample with its paths there.
    struct Dir(std::path::PathBuf);
    impl Drop for Dir {
        fn drop(&mut self) {
            let _ = std::fs::remove_dir_all(&self.0);
        }
    }
    fn sample_dir(tag: &str) -> (Dir, String) {
        let d = std::env::temp_dir().join(format!("mobipath-uci-{tag}-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        std::fs::write(d.join("key"), format!("{KEY}\n")).unwrap();
        std::fs::write(d.join("table.csv"), TABLE).unwrap();
        std::fs::write(d.join("track.csv"), TRACK).unwrap();
        let text = SAMPLE.replace("/etc/mobipath/", &format!("{}/", d.display()));
        (Dir(d), text)
    }

    fn err(text: &str) -> String {
        translate(text, "mobipath", Path::new("/nonexistent")).unwrap_err()
    }

    const ROUTER: &str = "config router\n\toption server '10.0.0.1:7000'\n\toption key '00112233445566778899aabbccddeeff'\n\toption socks_listen '127.0.0.1:1080'\n";

    #[test]
    fn the_shipped_sample_translates_to_the_same_config_as_its_toml() {
        let (dir, text) = sample_dir("sample");
        let t = translate(&text, "mobipath", &dir.0).unwrap();
        assert_eq!((t.side.as_str(), t.enabled), ("router", true));
        let from_uci = config::parse(&t.toml, "t.toml", &dir.0).unwrap();
        let hand = r#"[router]
server = "198.51.100.7:7000"
key_file = "key"
socks_listen = "192.168.1.1:1080"
transparent_listen = "0.0.0.0:7001"
congestion = "cubic"
server_congestion = "cubic"
[limits]
max_connections = 1024
buffer_bytes = 65536
worker_threads = 2
[metrics]
listen = "127.0.0.1:9464"
[pha_d]
gps = "gpsd:127.0.0.1:2947"
table = "table.csv"
track = "track.csv"
policy = "queue-aware"
resend_b0 = true
gps_period_ms = 1000.0
stale_s = 3.0
subflows = [{ operator = "A", endpoint = 1 }, { operator = "B", endpoint = 2 }]
"#;
        let from_toml = config::parse(hand, "h.toml", &dir.0).unwrap();
        assert_eq!(from_uci.router, from_toml.router);
        assert_eq!(from_uci.limits, from_toml.limits);
        assert_eq!(from_uci.metrics_listen, from_toml.metrics_listen);
        let (a, b) = (from_uci.pha_d.unwrap(), from_toml.pha_d.unwrap());
        assert_eq!(a.0.subflows, b.0.subflows);
        assert_eq!(format!("{:?}", a.0.ctl), format!("{:?}", b.0.ctl));
        assert_eq!(a.1, b.1);
    }

    #[test]
    fn disabled_and_side_are_read_not_passed_on() {
        let t = translate(
            &format!("config mobipath 'main'\n\toption enabled 'no'\n\toption side \"router\"\n{ROUTER}"),
            "m",
            Path::new("/"),
        )
        .unwrap();
        assert_eq!((t.side.as_str(), t.enabled), ("router", false));
        assert!(!t.toml.contains("enabled") && !t.toml.contains("side"), "{}", t.toml);
    }

    #[test]
    fn allow_lists_and_quoting() {
        let text = format!(
            "config server\n option listen '0.0.0.0:7000'\n option key {KEY} # bare word, then a comment\n\
             config allow\n option cidr '10.0.0.0/8'\n list ports '80'\n list ports 8000-8100\n\
             config allow\n option cidr \"192.0.2.0/24\"\n option ports '443 8443'\n"
        );
        let t = translate(&text, "m", Path::new("/")).unwrap();
        assert_eq!(t.side, "server");
        let c = config::parse(&t.toml, "t", Path::new("/")).unwrap();
        let allow = c.server.unwrap().allow;
        assert!(allow.allows("10.1.2.3".parse().unwrap(), 8050));
        assert!(allow.allows("192.0.2.1".parse().unwrap(), 8443));
        assert!(!allow.allows("192.0.2.1".parse().unwrap(), 80));
        assert_eq!(words("a'b'\"c\\\"d\"  'it'\\''s' # x").unwrap(), ["abc\"d", "it's"]);
    }

    #[test]
    fn bad_values_name_the_option_and_line() {
        // A type the translation refuses.
        let e = err(&format!("{ROUTER}config limits\n\toption max_connections 'lots'\n"));
        assert!(
            e.contains("line 6: mobipath.@limits[0].max_connections: \"lots\" is not a whole number"),
            "{e}"
        );
        // A range the proxy's own check refuses, given back under the UCI name.
        let e = err(&format!("{ROUTER}config limits 'lim'\n\toption buffer_bytes '10'\n"));
        assert!(
            e.contains("line 6: mobipath.lim.buffer_bytes:") && e.contains("1024"),
            "{e}"
        );
        let e = err(&format!("{ROUTER}config pha_d\n\toption gps 'gpsd:127.0.0.1:2947'\n\toption table '/nonexistent/t.csv'\n\toption tick_ms 'fast'\n"));
        assert!(
            e.contains("mobipath.@pha_d[0].tick_ms: \"fast\" is not a number"),
            "{e}"
        );
        let e = err(&format!("{ROUTER}config pha_d\n\toption resend_b0 'maybe'\n"));
        assert!(
            e.contains("mobipath.@pha_d[0].resend_b0: \"maybe\" is not a boolean"),
            "{e}"
        );
        let e = err(&format!("{ROUTER}config pha_d\n\toption gps 'gpsd:127.0.0.1:2947'\n\toption table '/nonexistent/t.csv'\nconfig subflow\n\toption operator 'A'\n\toption endpoint '1'\nconfig subflow\n\toption operator 'B'\n\toption endpoint '300'\n"));
        assert!(e.contains("line 13: mobipath.@subflow[1].endpoint:"), "{e}");
        let e = err("config server\n option listen '0.0.0.0:7000'\n option key '00112233445566778899aabbccddeeff'\nconfig allow\n option cidr '10.0.0.0/33'\n");
        assert!(e.contains("line 5: mobipath.@allow[0].cidr:"), "{e}");
        let e = err("config server\n option listen '0.0.0.0:7000'\n option key '00112233445566778899aabbccddeeff'\nconfig allow\n option cidr '10.0.0.0/8'\n list ports '80'\n list ports '99999'\n");
        assert!(e.contains("line 6: mobipath.@allow[0].ports[1]:"), "{e}");
        let e = err(&format!("{ROUTER}\toption server 'nowhere'\n").replace("\toption server '10.0.0.1:7000'\n", ""));
        assert!(e.contains("mobipath.@router[0].server:"), "{e}");
    }

    #[test]
    fn bad_structure_is_refused() {
        let e = err(&format!("{ROUTER}\toption sever 'x'\n"));
        assert!(
            e.contains("line 5: mobipath.@router[0].sever: unknown option; allowed: server,"),
            "{e}"
        );
        let e = err(&format!("{ROUTER}{ROUTER}"));
        assert!(e.contains("a second `config router` section"), "{e}");
        let e = err(&format!("config mobipath\n\toption side 'client'\n{ROUTER}"));
        assert!(
            e.contains("mobipath.@mobipath[0].side: \"client\"; allowed: router, server, pha-d"),
            "{e}"
        );
        let e = err(&format!("config mobipath\n\toption side 'server'\n{ROUTER}"));
        assert!(e.contains("no `config server` section"), "{e}");
        let e = err("config proxy\n");
        assert!(e.contains("line 1: unknown section type \"proxy\""), "{e}");
        let e = err("option server 'x'\n");
        assert!(e.contains("before any `config` line"), "{e}");
        let e = err(&format!("{ROUTER}\toption congestion 'cubic\n"));
        assert!(e.contains("line 5: unterminated ' quote"), "{e}");
        let e = err(&format!("{ROUTER}\tlist congestion 'cubic'\n"));
        assert!(e.contains("congestion: takes one value"), "{e}");
        let e = err(&format!("{ROUTER}\toption server '10.0.0.2:7000'\n"));
        assert!(e.contains("server: set twice (also on line 2)"), "{e}");
        let e = err("config allow\n option cidr '10.0.0.0/8'\n");
        assert!(e.contains("`config allow` needs a `config server` section"), "{e}");
        let e = err("# nothing\n");
        assert!(e.contains("no `config router`"), "{e}");
    }
}
