//! `mobipath-proxy`: the train router's TCP↔MPTCP proxy pair (see README.md).
//!
//! | module | owns |
//! |---|---|
//! | `cli` | command line, runtime, signals and graceful shutdown |
//! | `config` | TOML config and its validation |
//! | `files` | reading the files a config names: regular files only, size-limited |
//! | `socks5` | RFC 1928 negotiation (router side) |
//! | `dest` | destination encoding (RFC 1928 §5) |
//! | `auth` | router→server HMAC challenge-response |
//! | `allow` | server allow-list (CIDR + ports) |
//! | `mptcp` | MPTCP sockets, TCP_CONGESTION, MPTCP_INFO / MPTCP_TCPINFO |
//! | `relay` | bounded two-way copy with half-close and idle timeout |
//! | `metrics` | live connections, counters, Prometheus text endpoint |
//! | `router`, `server` | the two sides |
//! | `netlink` | MPTCP endpoint flags over generic netlink (`mptcp_pm`, MPTCP_PM_CMD_SET_FLAGS) |
//! | `failsafe` | PHA-D's fail-safe flag rules and the `flags` command |
//! | `idle` | `tcp_slow_start_after_idle` off while a proxy runs, restored after |
//! | `text` | peer-supplied text escaped for logs, terminals and JSON lines |
//! | `phad` | PHA-D in the router process: controller, GPS sources, handover table, the loop |
//! | `uci` | OpenWrt's UCI config (`/etc/config/mobipath`) translated into the TOML |

/// One line on stderr (the journal under systemd). Always one line: control characters in the
/// text (a peer's domain name inside an error, say) are escaped (`text::escape_controls`).
#[macro_export]
macro_rules! log {
    ($($t:tt)*) => { eprintln!("{}", $crate::text::log_line(&format!($($t)*))) };
}

pub mod allow;
pub mod auth;
pub mod cli;
pub mod config;
pub mod dest;
pub mod failsafe;
pub mod files;
pub mod idle;
pub mod metrics;
pub mod mptcp;
pub mod netlink;
pub mod phad;
pub mod relay;
pub mod router;
pub mod server;
pub mod socks5;
pub mod text;
pub mod uci;
