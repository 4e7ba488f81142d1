//! The TOML configuration. One file may hold both sides; `router` needs `[router]`, `server`
//! needs `[server]`. Every error names the field (dotted path) and the allowed values or range;
//! unknown fields are errors (a typo must not silently fall back to a default).
//!
//! ```toml
//! [router]
//! server = "198.51.100.7:7000"        # the server-side proxy (MPTCP)
//! key_file = "/etc/mobipath-proxy/key" # or key = "<hex>", 16..64 bytes
//! socks_listen = "192.168.1.1:1080"    # SOCKS5 for the LAN (optional)
//! transparent_listen = "0.0.0.0:7001"  # TPROXY target (optional; at least one listener)
//! congestion = "cubic"                 # TCP_CONGESTION of this side's subflows (optional)
//! server_congestion = "cubic"          # asked of the server for its sending direction (optional)
//!
//! [server]
//! listen = "0.0.0.0:7000"
//! key_file = "/etc/mobipath-proxy/key"
//! [[server.allow]]                     # nothing is relayed unless a rule allows it
//! cidr = "203.0.113.0/24"
//! ports = ["443", "8000-8100"]         # or "*"
//! # slow_start_after_idle = "off"      # net.ipv4.tcp_slow_start_after_idle = 0 while serving (downloads under PHA-D)
//!
//! [limits]                             # all optional, defaults shown
//! max_connections = 1024               # 1..=1000000
//! buffer_bytes = 65536                 # 1024..=16777216, per direction per connection
//! idle_timeout_s = 300                 # 1..=86400
//! connect_timeout_s = 10               # 1..=300
//! handshake_timeout_s = 10             # 1..=300
//! shutdown_grace_s = 5                 # 0..=300
//! worker_threads = 2                   # 1..=64
//!
//! [metrics]
//! listen = "127.0.0.1:9464"            # Prometheus text endpoint (optional)
//! ```
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use serde::Deserialize;

use crate::allow::{AllowList, Cidr, Ports, Rule};
use crate::auth::{parse_hex_key, MAX_CC_LEN};

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
#[error("{file}: {field}: {msg}")]
pub struct ConfigError {
    pub file: String,
    pub field: String,
    pub msg: String,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawFile {
    router: Option<RawRouter>,
    server: Option<RawServer>,
    limits: Option<RawLimits>,
    metrics: Option<RawMetrics>,
    pha_d: Option<toml::Value>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRouter {
    server: Option<String>,
    key: Option<String>,
    key_file: Option<PathBuf>,
    socks_listen: Option<String>,
    transparent_listen: Option<String>,
    congestion: Option<String>,
    server_congestion: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawServer {
    listen: Option<String>,
    key: Option<String>,
    key_file: Option<PathBuf>,
    #[serde(default)]
    allow: Vec<RawRule>,
    slow_start_after_idle: Option<String>,
}

#[derive(Debug, Deserialize)]
#[serde(untagged)]
enum RawPort {
    Num(i64),
    Text(String),
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawRule {
    cidr: Option<String>,
    ports: Option<Vec<RawPort>>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawLimits {
    max_connections: Option<i64>,
    buffer_bytes: Option<i64>,
    idle_timeout_s: Option<i64>,
    connect_timeout_s: Option<i64>,
    handshake_timeout_s: Option<i64>,
    shutdown_grace_s: Option<i64>,
    worker_threads: Option<i64>,
}

#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct RawMetrics {
    listen: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct RouterConfig {
    pub server: SocketAddr,
    pub key: Vec<u8>,
    pub socks_listen: Option<SocketAddr>,
    pub transparent_listen: Option<SocketAddr>,
    pub congestion: Option<String>,
    pub server_congestion: Option<String>,
}

#[derive(Debug, Clone, PartialEq)]
pub struct ServerConfig {
    pub listen: SocketAddr,
    pub key: Vec<u8>,
    pub allow: AllowList,
    /// `slow_start_after_idle = "off"`: `net.ipv4.tcp_slow_start_after_idle` = 0 in this
    /// namespace while the server runs (src/idle.rs), so a download subflow kept idle by a
    /// router's B=1 longer than its RTO keeps its window.
    pub idle_restart_off: bool,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Limits {
    pub max_connections: usize,
    pub buffer_bytes: usize,
    pub idle_timeout: Duration,
    pub connect_timeout: Duration,
    pub handshake_timeout: Duration,
    pub shutdown_grace: Duration,
    pub worker_threads: usize,
}

impl Default for Limits {
    fn default() -> Self {
        Limits {
            max_connections: 1024,
            buffer_bytes: 65536,
            idle_timeout: Duration::from_secs(300),
            connect_timeout: Duration::from_secs(10),
            handshake_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(5),
            worker_threads: 2,
        }
    }
}

#[derive(Debug, Clone)]
pub struct Config {
    pub router: Option<RouterConfig>,
    pub server: Option<ServerConfig>,
    pub limits: Limits,
    pub metrics_listen: Option<SocketAddr>,
    /// `[pha_d]`: PHA-D inside the router process (crates/proxy/src/phad).
    pub pha_d: Option<(crate::phad::config::PhaDSettings, crate::phad::table::Table)>,
}

struct Ctx<'a> {
    file: &'a str,
    base: &'a Path,
}

impl Ctx<'_> {
    fn err(&self, field: &str, msg: impl Into<String>) -> ConfigError {
        ConfigError {
            file: self.file.to_string(),
            field: field.to_string(),
            msg: msg.into(),
        }
    }

    fn addr(&self, field: &str, v: &Option<String>) -> Result<Option<SocketAddr>, ConfigError> {
        match v {
            None => Ok(None),
            Some(s) => s.parse().map(Some).map_err(|_| {
                self.err(
                    field,
                    format!("`{s}` is not IP:PORT (e.g. \"0.0.0.0:7000\" or \"[::]:7000\")"),
                )
            }),
        }
    }

    fn required_addr(&self, field: &str, v: &Option<String>) -> Result<SocketAddr, ConfigError> {
        self.addr(field, v)?.ok_or_else(|| self.err(field, "missing (IP:PORT)"))
    }

    fn range(&self, field: &str, v: Option<i64>, lo: i64, hi: i64, default: i64) -> Result<i64, ConfigError> {
        match v {
            None => Ok(default),
            Some(x) if (lo..=hi).contains(&x) => Ok(x),
            Some(x) => Err(self.err(field, format!("{x} is out of range {lo}..={hi}"))),
        }
    }

    fn key(&self, section: &str, key: &Option<String>, file: &Option<PathBuf>) -> Result<Vec<u8>, ConfigError> {
        match (key, file) {
            (Some(_), Some(_)) => Err(self.err(&format!("{section}.key"), "give either key or key_file, not both")),
            (None, None) => Err(self.err(
                &format!("{section}.key_file"),
                "missing: the pre-shared key (key_file = PATH or key = \"<hex>\"; `mobipath-proxy keygen` makes one)",
            )),
            (Some(k), None) => parse_hex_key(k).map_err(|m| self.err(&format!("{section}.key"), m)),
            (None, Some(p)) => {
                let field = format!("{section}.key_file");
                let p = if p.is_absolute() { p.clone() } else { self.base.join(p) };
                let text = crate::files::read_text(&p, crate::files::MAX_KEY_FILE_BYTES)
                    .map_err(|e| self.err(&field, format!("cannot read {}: {e}", p.display())))?;
                parse_hex_key(&text).map_err(|m| self.err(&field, format!("{}: {m}", p.display())))
            }
        }
    }

    fn congestion(&self, field: &str, v: &Option<String>) -> Result<Option<String>, ConfigError> {
        match v {
            None => Ok(None),
            Some(c) if !c.is_empty() && c.len() <= MAX_CC_LEN && c.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') => Ok(Some(c.clone())),
            Some(c) => Err(self.err(field, format!("`{c}` is not a congestion control name (1..={MAX_CC_LEN} of a-z, 0-9, _; see /proc/sys/net/ipv4/tcp_available_congestion_control)"))),
        }
    }
}

/// Parses and validates a config file's text; `file` names it in errors and `base` resolves
/// relative `key_file` paths.
pub fn parse(text: &str, file: &str, base: &Path) -> Result<Config, ConfigError> {
    let cx = Ctx { file, base };
    let raw: RawFile = toml::from_str(text).map_err(|e| {
        // toml's message already names the key (unknown field, wrong type) and the line.
        cx.err("(syntax)", e.to_string().trim().replace('\n', " "))
    })?;
    let limits = match raw.limits {
        None => Limits::default(),
        Some(l) => {
            let d = Limits::default();
            Limits {
                max_connections: cx.range(
                    "limits.max_connections",
                    l.max_connections,
                    1,
                    1_000_000,
                    d.max_connections as i64,
                )? as usize,
                buffer_bytes: cx.range(
                    "limits.buffer_bytes",
                    l.buffer_bytes,
                    1024,
                    16 << 20,
                    d.buffer_bytes as i64,
                )? as usize,
                idle_timeout: Duration::from_secs(
                    cx.range("limits.idle_timeout_s", l.idle_timeout_s, 1, 86400, 300)? as u64
                ),
                connect_timeout: Duration::from_secs(cx.range(
                    "limits.connect_timeout_s",
                    l.connect_timeout_s,
                    1,
                    300,
                    10,
                )? as u64),
                handshake_timeout: Duration::from_secs(cx.range(
                    "limits.handshake_timeout_s",
                    l.handshake_timeout_s,
                    1,
                    300,
                    10,
                )? as u64),
                shutdown_grace: Duration::from_secs(cx.range(
                    "limits.shutdown_grace_s",
                    l.shutdown_grace_s,
                    0,
                    300,
                    5,
                )? as u64),
                worker_threads: cx.range("limits.worker_threads", l.worker_threads, 1, 64, 2)? as usize,
            }
        }
    };
    let router = match raw.router {
        None => None,
        Some(r) => {
            let socks_listen = cx.addr("router.socks_listen", &r.socks_listen)?;
            let transparent_listen = cx.addr("router.transparent_listen", &r.transparent_listen)?;
            if socks_listen.is_none() && transparent_listen.is_none() {
                return Err(cx.err(
                    "router.socks_listen",
                    "the router needs a listener: socks_listen and/or transparent_listen",
                ));
            }
            let server = cx.required_addr("router.server", &r.server)?;
            if server.port() == 0 || server.ip().is_unspecified() {
                return Err(cx.err(
                    "router.server",
                    format!(
                        "`{server}`: the server proxy's address and port to connect to (not port 0 or 0.0.0.0 / ::)"
                    ),
                ));
            }
            Some(RouterConfig {
                server,
                key: cx.key("router", &r.key, &r.key_file)?,
                socks_listen,
                transparent_listen,
                congestion: cx.congestion("router.congestion", &r.congestion)?,
                server_congestion: cx.congestion("router.server_congestion", &r.server_congestion)?,
            })
        }
    };
    let server = match raw.server {
        None => None,
        Some(s) => {
            let mut rules = Vec::new();
            for (i, r) in s.allow.iter().enumerate() {
                let f = |name: &str| format!("server.allow[{i}].{name}");
                let cidr = r
                    .cidr
                    .as_deref()
                    .ok_or_else(|| cx.err(&f("cidr"), "missing (e.g. \"203.0.113.0/24\")"))?;
                let cidr = Cidr::parse(cidr).map_err(|m| cx.err(&f("cidr"), m))?;
                let ports = r
                    .ports
                    .as_ref()
                    .ok_or_else(|| cx.err(&f("ports"), "missing (e.g. [\"443\", \"8000-8100\"] or [\"*\"])"))?;
                if ports.is_empty() {
                    return Err(cx.err(&f("ports"), "empty: list at least one port, range or \"*\""));
                }
                let mut ps = Vec::new();
                for (j, p) in ports.iter().enumerate() {
                    let text = match p {
                        RawPort::Num(n) => n.to_string(),
                        RawPort::Text(t) => t.clone(),
                    };
                    ps.push(Ports::parse(&text).map_err(|m| cx.err(&format!("server.allow[{i}].ports[{j}]"), m))?);
                }
                rules.push(Rule { cidr, ports: ps });
            }
            Some(ServerConfig {
                listen: cx.required_addr("server.listen", &s.listen)?,
                key: cx.key("server", &s.key, &s.key_file)?,
                allow: AllowList { rules },
                idle_restart_off: match s.slow_start_after_idle.as_deref() {
                    None | Some("leave") => false,
                    Some("off") => true,
                    Some(v) => return Err(cx.err("server.slow_start_after_idle", format!("`{v}`: one of leave, off"))),
                },
            })
        }
    };
    let metrics_listen = match raw.metrics {
        None => None,
        Some(m) => Some(cx.required_addr("metrics.listen", &m.listen)?),
    };
    let pha_d = match raw.pha_d {
        None => None,
        Some(v) => Some(
            crate::phad::config::parse(v, base).map_err(|m| match m.split_once(": ") {
                Some((field, msg)) if field.starts_with("pha_d") => cx.err(field, msg),
                _ => cx.err("pha_d", m),
            })?,
        ),
    };
    Ok(Config {
        router,
        server,
        limits,
        metrics_listen,
        pha_d,
    })
}

/// Reads and validates `path`.
pub fn load(path: &Path) -> Result<Config, ConfigError> {
    let file = path.display().to_string();
    let text = crate::files::read_text(path, crate::files::MAX_CONFIG_BYTES).map_err(|e| ConfigError {
        file: file.clone(),
        field: "(file)".into(),
        msg: format!("cannot read: {e}"),
    })?;
    parse(&text, &file, path.parent().unwrap_or(Path::new(".")))
}

#[cfg(test)]
mod tests {
    use super::*;

    const KEY: &str = "00112233445566778899aabbccddeeff";

    fn p(text: &str) -> Result<Config, ConfigError> {
        parse(text, "test.toml", Path::new("/nonexistent"))
    }

    fn field_of(text: &str) -> String {
        p(text).unwrap_err().field
    }

    #[test]
    fn full_config_parses() {
        let c = p(&format!(
            r#"
[router]
server = "10.0.0.1:7000"
key = "{KEY}"
socks_listen = "127.0.0.1:1080"
congestion = "cubic"
[server]
listen = "[::]:7000"
key = "{KEY}"
[[server.allow]]
cidr = "10.0.0.0/8"
ports = [443, "8000-8100", "*"]
[limits]
buffer_bytes = 4096
[metrics]
listen = "127.0.0.1:9464"
"#
        ))
        .unwrap();
        let r = c.router.unwrap();
        assert_eq!(r.server, "10.0.0.1:7000".parse().unwrap());
        assert_eq!(r.key.len(), 16);
        assert_eq!(r.congestion.as_deref(), Some("cubic"));
        let s = c.server.unwrap();
        assert_eq!(s.allow.rules[0].ports.len(), 3);
        assert!(s.allow.allows("10.1.2.3".parse().unwrap(), 8050));
        assert_eq!(c.limits.buffer_bytes, 4096);
        assert_eq!(c.limits.max_connections, 1024, "default kept");
    }

    #[test]
    fn errors_name_the_field_and_range() {
        let e = p("[limits]\nbuffer_bytes = 10\n").unwrap_err();
        assert_eq!(e.field, "limits.buffer_bytes");
        assert!(e.msg.contains("1024..=16777216"), "{e}");
        assert!(
            e.to_string()
                .starts_with("test.toml: limits.buffer_bytes: 10 is out of range"),
            "{e}"
        );
        assert_eq!(field_of("[limits]\nmax_connections = 0\n"), "limits.max_connections");
        assert_eq!(field_of("[limits]\nidle_timeout_s = -1\n"), "limits.idle_timeout_s");
        assert_eq!(
            field_of("[limits]\nshutdown_grace_s = 301\n"),
            "limits.shutdown_grace_s"
        );
        assert_eq!(field_of("[metrics]\nlisten = \"localhost\"\n"), "metrics.listen");
        assert_eq!(field_of(&format!("[server]\nlisten = \"0.0.0.0:1\"\nkey = \"{KEY}\"\n[[server.allow]]\ncidr = \"10.0.0.1/8\"\nports = [\"1\"]\n")), "server.allow[0].cidr");
        assert_eq!(field_of(&format!("[server]\nlisten = \"0.0.0.0:1\"\nkey = \"{KEY}\"\n[[server.allow]]\ncidr = \"10.0.0.0/8\"\nports = [\"1\", 0]\n")), "server.allow[0].ports[1]");
        assert_eq!(field_of(&format!("[server]\nlisten = \"0.0.0.0:1\"\nkey = \"{KEY}\"\n[[server.allow]]\ncidr = \"10.0.0.0/8\"\nports = []\n")), "server.allow[0].ports");
        assert_eq!(
            field_of("[server]\nlisten = \"0.0.0.0:1\"\nkey = \"abc\"\n"),
            "server.key"
        );
        assert_eq!(field_of("[server]\nlisten = \"0.0.0.0:1\"\n"), "server.key_file");
        assert_eq!(
            field_of("[server]\nlisten = \"0.0.0.0:1\"\nkey_file = \"missing.key\"\n"),
            "server.key_file"
        );
        assert_eq!(field_of(&format!("[server]\nkey = \"{KEY}\"\n")), "server.listen");
        let srv = |v: &str| {
            p(&format!(
                "[server]\nlisten = \"0.0.0.0:1\"\nkey = \"{KEY}\"\nslow_start_after_idle = \"{v}\"\n"
            ))
        };
        assert!(
            srv("off").unwrap().server.unwrap().idle_restart_off
                && !srv("leave").unwrap().server.unwrap().idle_restart_off
        );
        let e = srv("no").unwrap_err();
        assert_eq!(
            (e.field.as_str(), e.msg.as_str()),
            ("server.slow_start_after_idle", "`no`: one of leave, off")
        );
        assert_eq!(
            field_of(&format!("[router]\nserver = \"1.2.3.4:5\"\nkey = \"{KEY}\"\n")),
            "router.socks_listen"
        );
        assert_eq!(field_of(&format!("[router]\nserver = \"1.2.3.4:5\"\nkey = \"{KEY}\"\nsocks_listen = \"127.0.0.1:1\"\ncongestion = \"no such!\"\n")), "router.congestion");
    }

    #[test]
    fn unknown_fields_and_types_are_errors() {
        let e = p("[limits]\nbuffer_byte = 4096\n").unwrap_err();
        assert!(e.msg.contains("buffer_byte"), "{e}");
        let e = p("[limits]\nbuffer_bytes = \"big\"\n").unwrap_err();
        assert!(e.msg.contains("buffer_bytes"), "{e}");
    }

    #[test]
    fn key_file_relative_to_config() {
        let dir = std::env::temp_dir().join(format!("mobipath-proxy-cfg-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        std::fs::write(dir.join("k"), format!("{KEY}\n")).unwrap();
        std::fs::write(
            dir.join("c.toml"),
            "[server]\nlisten = \"0.0.0.0:7000\"\nkey_file = \"k\"\n",
        )
        .unwrap();
        let c = load(&dir.join("c.toml")).unwrap();
        assert_eq!(c.server.unwrap().key.len(), 16);
        std::fs::remove_dir_all(&dir).unwrap();
    }

    /// A key_file (or the config itself) naming a device is refused at once, not read until memory
    /// runs out.
    #[test]
    fn key_file_of_a_device_is_refused_at_once() {
        let e = p("[server]\nlisten = \"0.0.0.0:7000\"\nkey_file = \"/dev/zero\"\n").unwrap_err();
        assert_eq!(e.field, "server.key_file");
        assert!(e.msg.contains("/dev/zero: is a device, not a regular file"), "{e}");
        let e = load(Path::new("/dev/zero")).unwrap_err();
        assert!(e.msg.contains("a device"), "{e}");
    }

    /// The router connects to `router.server`: port 0 or an unspecified address cannot be reached.
    #[test]
    fn router_server_must_be_connectable() {
        for bad in ["127.0.0.1:0", "0.0.0.0:7000", "[::]:7000"] {
            let e = p(&format!(
                "[router]\nserver = \"{bad}\"\nkey = \"{KEY}\"\nsocks_listen = \"127.0.0.1:1080\"\n"
            ))
            .unwrap_err();
            assert_eq!(e.field, "router.server", "{bad}: {e}");
            assert!(e.msg.contains("not port 0"), "{e}");
        }
    }
}
