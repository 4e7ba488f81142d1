//! Turning off the window restart after idle while a proxy runs (RFC 5681 §4.1 / RFC 2861; Linux
//! `tcp_cwnd_restart` in net/ipv4/tcp_output.c), and putting the old value back.
use crate::text::json_str;

/// The sysctl behind the window restart after idle (RFC 5681 §4.1 / RFC 2861; Linux
/// `tcp_cwnd_restart` in net/ipv4/tcp_output.c, per network namespace).
pub const SSAI: &str = "/proc/sys/net/ipv4/tcp_slow_start_after_idle";

/// Avoiding the cost of idling a path past its RTO where the proxies can: a backup span (B=1 ahead
/// of a handover range until one RTT before its end) leaves the path without data for longer than
/// its RTO whenever the range is longer, and with `tcp_slow_start_after_idle = 1` the sender then
/// restarts that subflow from the initial window (`tcp_cwnd_restart`). Neither the span (the range
/// is the table's) nor the idle (a keep-alive would need data on the path, which B=1 exists to
/// stop; pure ACKs and MP_PRIO do not refresh `lsndtime`) can be shortened, but the restart can be
/// turned off where each proxy is the sender: the router's PHA-D for uploads, the server proxy
/// for downloads (`slow_start_after_idle = "off"` in `[pha_d]` and `[server]`). This guard writes 0
/// and puts the previous value back when dropped (stop, signal, error, panic unwinding). Linux
/// has the sysctl per network namespace only, so it applies to every TCP sender there.
pub struct IdleRestartGuard {
    path: &'static str,
    was: String,
}

impl IdleRestartGuard {
    pub fn turn_off(path: &'static str) -> Option<IdleRestartGuard> {
        let was = std::fs::read_to_string(path).ok()?.trim().to_string();
        if was == "0" {
            return None;
        }
        match std::fs::write(path, "0") {
            Ok(()) => {
                println!(
                    "{{\"pha_d\":\"slow_start_after_idle\",\"was\":{},\"now\":0}}",
                    json_str(&was)
                );
                Some(IdleRestartGuard { path, was })
            }
            Err(e) => {
                println!(
                    "{{\"pha_d\":\"note\",\"why\":{}}}",
                    json_str(&format!("cannot turn net.ipv4.tcp_slow_start_after_idle off: {e}"))
                );
                None
            }
        }
    }
}

impl Drop for IdleRestartGuard {
    fn drop(&mut self) {
        let _ = std::fs::write(self.path, &self.was);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The guard turns the restart off and puts the old value back when dropped; a value already
    /// 0 is left alone (nothing to put back).
    #[test]
    fn idle_restart_guard_turns_off_and_restores() {
        let path: &'static str = Box::leak(
            std::env::temp_dir()
                .join(format!("mobipath-ssai-{}", std::process::id()))
                .display()
                .to_string()
                .into_boxed_str(),
        );
        std::fs::write(path, "1\n").unwrap();
        {
            let g = IdleRestartGuard::turn_off(path);
            assert!(g.is_some());
            assert_eq!(std::fs::read_to_string(path).unwrap(), "0");
        }
        assert_eq!(std::fs::read_to_string(path).unwrap(), "1");
        std::fs::write(path, "0").unwrap();
        assert!(IdleRestartGuard::turn_off(path).is_none());
        std::fs::remove_file(path).unwrap();
        assert!(IdleRestartGuard::turn_off(path).is_none(), "no file: nothing to do");
    }
}
