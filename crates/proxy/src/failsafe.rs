//! The fail-safe rules of the Python PHA-D daemon's `FailSafeActuator`
//! (python/mobipath/router/phad.py), in Rust over netlink, and the `mobipath-proxy flags` command
//! that applies backup/regular decisions read from stdin with them:
//!
//! - `restore_all` sets every endpoint regular whatever this process believes — at start, on
//!   end of input, on garbage input, on any error, and on SIGTERM, SIGHUP and SIGINT; a failure on
//!   one endpoint does not stop the others;
//! - a B=1 that would leave no regular endpoint is refused (never every path backup at once);
//! - B=1 is rate-limited to one per endpoint per `min_interval_s` (B=0, the safe direction, never
//!   waits);
//! - a failed flag change restores every endpoint.
//!
//! Every refusal and restore is reported as a JSON line with a `failsafe` key, every change as a
//! JSON line with `endpoint_id` and `backup`. SIGKILL cannot be caught: run it under systemd with
//! `Restart=always` so the next start restores.
//!
//! Memory stays bounded: the PHA-D daemon runs for days and restores once per unusable GPS line
//! (one a second from a noisy serial receiver is ~86 000 a day), so the lines go to stdout and
//! only counts and the last [`RECENT_LINES`] of them stay in memory.
use std::collections::{BTreeMap, VecDeque};
use std::io;

use tokio::io::{AsyncBufReadExt, BufReader};

use crate::netlink::MptcpPm;
use crate::text::json_str;

/// What sets the flag (netlink in production, a recorder in tests).
pub trait Flags {
    fn set_backup(&mut self, id: u8, backup: bool) -> io::Result<()>;
}

impl Flags for MptcpPm {
    fn set_backup(&mut self, id: u8, backup: bool) -> io::Result<()> {
        MptcpPm::set_backup(self, id, backup)
    }
}

/// How many of the latest reported lines [`FailSafe::recent`] keeps.
pub const RECENT_LINES: usize = 32;

pub struct FailSafe<F: Flags> {
    pub inner: F,
    ids: Vec<u8>,
    min_interval_s: f64,
    backup: BTreeMap<u8, bool>,
    last_change: BTreeMap<u8, f64>,
    /// The latest lines reported (refusals, restores, echoed changes), oldest first, at most
    /// [`RECENT_LINES`]: what a test or a crash report wants is the last few, never the history.
    pub recent: VecDeque<String>,
    /// Refusals (a B=1 or a re-send that would leave no regular path, rate limit, unmanaged id)
    /// and restores ([`FailSafe::restore_all`]) since the start.
    pub refusals: u64,
    pub restores: u64,
    /// Print each applied change as a JSON line (the PHA-D daemon prints its own, richer line).
    pub echo_changes: bool,
}

impl<F: Flags> FailSafe<F> {
    pub fn new(inner: F, ids: Vec<u8>, min_interval_s: f64) -> Self {
        let backup = ids.iter().map(|&i| (i, false)).collect();
        FailSafe {
            inner,
            ids,
            min_interval_s,
            backup,
            last_change: BTreeMap::new(),
            recent: VecDeque::with_capacity(RECENT_LINES),
            refusals: 0,
            restores: 0,
            echo_changes: true,
        }
    }

    fn note(&mut self, line: String) {
        println!("{line}");
        if self.recent.len() == RECENT_LINES {
            self.recent.pop_front();
        }
        self.recent.push_back(line);
    }

    fn refuse(&mut self, line: String) {
        self.refusals += 1;
        self.note(line);
    }

    /// Applies a flag at time `now` (seconds, any monotonic clock); false if refused or failed.
    pub fn set_backup(&mut self, id: u8, backup: bool, now: f64) -> bool {
        if !self.ids.contains(&id) {
            self.refuse(format!("{{\"failsafe\":\"refused\",\"endpoint_id\":{id},\"backup\":{backup},\"why\":\"not a managed endpoint\"}}"));
            return false;
        }
        if backup {
            let others_regular = self.ids.iter().any(|&i| i != id && !self.backup[&i]);
            if !others_regular {
                self.refuse(format!("{{\"failsafe\":\"refused\",\"endpoint_id\":{id},\"backup\":true,\"why\":\"it would leave no regular path\"}}"));
                return false;
            }
            if let Some(&last) = self.last_change.get(&id) {
                if now - last < self.min_interval_s {
                    let why = format!("rate limit: one B=1 per {} s", self.min_interval_s);
                    self.refuse(format!(
                        "{{\"failsafe\":\"refused\",\"endpoint_id\":{id},\"backup\":true,\"why\":{}}}",
                        json_str(&why)
                    ));
                    return false;
                }
            }
        }
        if let Err(e) = self.inner.set_backup(id, backup) {
            self.restore_all(&format!(
                "setting endpoint {id} {} failed: {e}",
                if backup { "backup" } else { "regular" }
            ));
            return false;
        }
        self.backup.insert(id, backup);
        self.last_change.insert(id, now);
        if self.echo_changes {
            self.note(format!("{{\"endpoint_id\":{id},\"backup\":{backup}}}"));
        }
        true
    }

    /// Re-sends B=0 on a regular endpoint. The in-kernel path manager sends MP_PRIO only when
    /// the flag changes (`mptcp_pm_nl_set_flags`, net/mptcp/pm_netlink.c, pm_kernel.c in newer
    /// kernels: MP_PRIO only for `changed & MPTCP_PM_ADDR_FLAG_BACKUP`; measured on this kernel
    /// by tests/netns.rs `b0_resend_sends_mp_prio_again`), so the re-send is B=1 immediately followed by B=0: two MP_PRIO on pure ACKs, in order.
    /// The peer ends regular if the second arrives, or if both are lost and the first B=0 had
    /// arrived; if only the first arrives it is backup as before, and the next re-send repairs
    /// it. Refused when it would leave no regular endpoint even for that instant; not
    /// rate-limited (it ends in the safe direction); a failure restores every endpoint.
    pub fn resend_regular(&mut self, id: u8) -> bool {
        if !self.ids.contains(&id) || self.backup.get(&id) == Some(&true) {
            return false;
        }
        if !self.ids.iter().any(|&i| i != id && !self.backup[&i]) {
            self.refuse(format!("{{\"failsafe\":\"refused\",\"endpoint_id\":{id},\"resend\":true,\"why\":\"it would leave no regular path\"}}"));
            return false;
        }
        let r = self
            .inner
            .set_backup(id, true)
            .and_then(|()| self.inner.set_backup(id, false));
        if let Err(e) = r {
            self.restore_all(&format!("re-sending B=0 on endpoint {id} failed: {e}"));
            return false;
        }
        true
    }

    /// Every endpoint regular; returns the errors, if any (also logged).
    pub fn restore_all(&mut self, reason: &str) -> Vec<String> {
        self.restores += 1;
        self.last_change.clear();
        let mut errors = Vec::new();
        for i in self.ids.clone() {
            match self.inner.set_backup(i, false) {
                Ok(()) => {
                    self.backup.insert(i, false);
                }
                Err(e) => errors.push(format!("endpoint {i}: {e}")),
            }
        }
        let ids = self.ids.iter().map(|i| i.to_string()).collect::<Vec<_>>().join(",");
        let errs = if errors.is_empty() {
            String::new()
        } else {
            format!(
                ",\"errors\":[{}]",
                errors.iter().map(|e| json_str(e)).collect::<Vec<_>>().join(",")
            )
        };
        self.note(format!(
            "{{\"failsafe\":\"restored\",\"reason\":{},\"endpoint_ids\":[{ids}],\"backup\":false{errs}}}",
            json_str(reason)
        ));
        errors
    }
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Command {
    Set(u8, bool),
    /// Re-send B=0 ([`FailSafe::resend_regular`]).
    Resend(u8),
}

/// One stdin command: `backup ID`, `regular ID` or `resend ID`.
pub fn parse_line(line: &str) -> Result<Command, String> {
    match line.split_whitespace().next() {
        Some("resend") => {
            let (id, _) = parse_command(&line.trim_start().replacen("resend", "regular", 1))?;
            Ok(Command::Resend(id))
        }
        _ => parse_command(line).map(|(id, b)| Command::Set(id, b)),
    }
}

/// `backup ID` or `regular ID`.
pub fn parse_command(line: &str) -> Result<(u8, bool), String> {
    let mut w = line.split_whitespace();
    let backup = match w.next() {
        Some("backup") => true,
        Some("regular") => false,
        other => {
            return Err(format!(
                "expected `backup ID`, `regular ID` or `resend ID`, got {other:?}"
            ))
        }
    };
    let id = w
        .next()
        .and_then(|s| s.parse::<u8>().ok())
        .filter(|&i| i > 0)
        .ok_or("endpoint id must be 1..=255")?;
    if w.next().is_some() {
        return Err("trailing words".into());
    }
    Ok((id, backup))
}

/// `mobipath-proxy flags --endpoints 1,2 [--min-interval-ms N]`: restores, then applies stdin
/// commands until end of input or a signal, then restores again. Exit 0, or 1 if the final
/// restore failed on some endpoint.
pub fn flags_main(args: &[String]) -> i32 {
    let mut ids: Option<Vec<u8>> = None;
    let mut min_ms = 1000u64;
    let mut it = args.iter();
    while let Some(a) = it.next() {
        match a.as_str() {
            "--endpoints" => {
                let v = it.next().map(|s| {
                    s.split(',')
                        .map(|x| x.trim().parse::<u8>())
                        .collect::<Result<Vec<_>, _>>()
                });
                match v {
                    Some(Ok(v)) if !v.is_empty() && v.iter().all(|&i| i > 0) => ids = Some(v),
                    _ => {
                        eprintln!("mobipath-proxy flags: --endpoints: a comma-separated list of endpoint ids 1..=255");
                        return 2;
                    }
                }
            }
            "--min-interval-ms" => match it.next().and_then(|s| s.parse::<u64>().ok()).filter(|&v| v <= 60000) {
                Some(v) => min_ms = v,
                None => {
                    eprintln!("mobipath-proxy flags: --min-interval-ms: 0..=60000");
                    return 2;
                }
            },
            other => {
                eprintln!("mobipath-proxy flags: unknown argument {other:?}");
                return 2;
            }
        }
    }
    let Some(ids) = ids else {
        eprintln!("mobipath-proxy flags: --endpoints is required");
        return 2;
    };
    let pm = match MptcpPm::open() {
        Ok(p) => p,
        Err(e) => {
            eprintln!("mobipath-proxy flags: {e}");
            return 1;
        }
    };
    let rt = match tokio::runtime::Builder::new_current_thread().enable_all().build() {
        Ok(r) => r,
        Err(e) => {
            eprintln!("mobipath-proxy flags: {e}");
            return 1;
        }
    };
    let mut fs = FailSafe::new(pm, ids, min_ms as f64 / 1e3);
    let reason = rt.block_on(async {
        use tokio::signal::unix::{signal, SignalKind};
        let (Ok(mut term), Ok(mut hup), Ok(mut int)) = (
            signal(SignalKind::terminate()),
            signal(SignalKind::hangup()),
            signal(SignalKind::interrupt()),
        ) else {
            return "cannot install signal handlers".to_string();
        };
        fs.restore_all("start");
        let start = tokio::time::Instant::now();
        let mut lines = BufReader::new(tokio::io::stdin()).lines();
        loop {
            tokio::select! {
                _ = term.recv() => return "signal SIGTERM".into(),
                _ = hup.recv() => return "signal SIGHUP".into(),
                _ = int.recv() => return "signal SIGINT".into(),
                l = lines.next_line() => match l {
                    Ok(None) => return "end of input".into(),
                    Err(e) => return format!("error: reading stdin: {e}"),
                    Ok(Some(line)) if line.trim().is_empty() => {}
                    Ok(Some(line)) => match parse_line(&line) {
                        Ok(Command::Set(id, backup)) => {
                            fs.set_backup(id, backup, start.elapsed().as_secs_f64());
                        }
                        Ok(Command::Resend(id)) => {
                            if fs.resend_regular(id) {
                                println!("{{\"endpoint_id\":{id},\"backup\":false,\"resend\":true}}");
                            }
                        }
                        Err(e) => {
                            fs.restore_all(&format!("garbage input: {e}"));
                        }
                    },
                },
            }
        }
    });
    let code = if fs.restore_all(&reason).is_empty() { 0 } else { 1 };
    // The stdin reader blocks in tokio's blocking pool; a graceful runtime drop would wait for
    // the next input line, so the exit does not wait for it.
    rt.shutdown_background();
    code
}

#[cfg(test)]
mod tests {
    use super::*;

    #[derive(Default)]
    struct Rec {
        calls: Vec<(u8, bool)>,
        fail_on: Option<(u8, bool)>,
    }

    impl Flags for Rec {
        fn set_backup(&mut self, id: u8, backup: bool) -> io::Result<()> {
            self.calls.push((id, backup));
            if self.fail_on == Some((id, backup)) {
                return Err(io::Error::other("injected"));
            }
            Ok(())
        }
    }

    #[test]
    fn never_every_endpoint_backup() {
        let mut f = FailSafe::new(Rec::default(), vec![1, 2], 0.0);
        assert!(f.set_backup(1, true, 0.0));
        assert!(!f.set_backup(2, true, 1.0), "second backup would leave no regular path");
        assert!(f.recent.back().unwrap().contains("no regular path"));
        assert_eq!(f.refusals, 1);
        assert!(f.set_backup(1, false, 2.0));
        assert!(f.set_backup(2, true, 3.0));
        let mut single = FailSafe::new(Rec::default(), vec![1], 0.0);
        assert!(!single.set_backup(1, true, 0.0));
    }

    #[test]
    fn backup_is_rate_limited_regular_is_not() {
        let mut f = FailSafe::new(Rec::default(), vec![1, 2], 1.0);
        assert!(f.set_backup(1, true, 10.0));
        assert!(f.set_backup(1, false, 10.1), "B=0 never waits");
        assert!(!f.set_backup(1, true, 10.5), "B=1 within 1 s of the last change");
        assert!(f.set_backup(1, true, 11.2));
    }

    #[test]
    fn failure_restores_every_endpoint() {
        let mut f = FailSafe::new(
            Rec {
                fail_on: Some((1, true)),
                ..Default::default()
            },
            vec![1, 2],
            0.0,
        );
        assert!(!f.set_backup(1, true, 0.0));
        assert_eq!(f.inner.calls, vec![(1, true), (1, false), (2, false)]);
        assert!(f.recent.back().unwrap().contains("\"failsafe\":\"restored\""));
        assert_eq!(f.restores, 1);
    }

    #[test]
    fn restore_continues_past_a_failing_endpoint() {
        let mut f = FailSafe::new(
            Rec {
                fail_on: Some((1, false)),
                ..Default::default()
            },
            vec![1, 2],
            0.0,
        );
        let errs = f.restore_all("test");
        assert_eq!(errs.len(), 1);
        assert_eq!(f.inner.calls, vec![(1, false), (2, false)]);
    }

    #[test]
    fn resend_toggles_and_never_leaves_all_backup() {
        let mut f = FailSafe::new(Rec::default(), vec![1, 2], 10.0);
        assert!(f.resend_regular(1));
        assert_eq!(f.inner.calls, vec![(1, true), (1, false)]);
        assert!(f.set_backup(2, true, 0.0));
        assert!(
            !f.resend_regular(1),
            "endpoint 2 is backup: a transient B=1 on 1 would leave none regular"
        );
        assert!(!f.resend_regular(2), "a backup endpoint is not re-sent B=0");
        let mut g = FailSafe::new(
            Rec {
                fail_on: Some((1, false)),
                ..Default::default()
            },
            vec![1, 2],
            0.0,
        );
        assert!(!g.resend_regular(1));
        assert!(g.recent.back().unwrap().contains("restored"));
    }

    /// A daemon fed one bad GPS line a second restores ~86 000 times a day: what stays in memory
    /// is the counts and the last few lines (10 000 rounds here stand for the day), and every
    /// restore still sets every endpoint regular.
    #[test]
    fn memory_stays_bounded_over_many_restores() {
        let mut f = FailSafe::new(Rec::default(), vec![1, 2], 1.0);
        for i in 0..10_000u64 {
            f.restore_all(&format!("unusable GPS input #{i}"));
            f.set_backup(1, true, i as f64);
            f.set_backup(2, true, i as f64); // refused: 1 is backup
            f.inner.calls.clear();
        }
        f.restore_all("stop");
        assert_eq!(
            f.inner.calls,
            vec![(1, false), (2, false)],
            "the last restore still reaches every endpoint"
        );
        assert_eq!((f.restores, f.refusals), (10_001, 10_000));
        assert_eq!(f.recent.len(), RECENT_LINES);
        assert!(
            f.recent.capacity() < 4 * RECENT_LINES,
            "capacity {}",
            f.recent.capacity()
        );
        // Oldest first, newest last: the final restore, after the last round's refusal.
        assert!(
            f.recent.back().unwrap().contains("\"reason\":\"stop\""),
            "{:?}",
            f.recent.back()
        );
        assert!(
            f.recent[RECENT_LINES - 2].contains("it would leave no regular path"),
            "{:?}",
            f.recent
        );
        assert!(f.recent.iter().any(|l| l.contains("unusable GPS input #9999")));
        assert!(!f.recent.iter().any(|l| l.contains("unusable GPS input #0\"")));
    }

    #[test]
    fn commands() {
        assert_eq!(parse_command("backup 2"), Ok((2, true)));
        assert_eq!(parse_command(" regular 1 "), Ok((1, false)));
        assert!(parse_command("backup 0").is_err());
        assert!(parse_command("backup").is_err());
        assert!(parse_command("\u{1}\u{2}garbage").is_err());
        assert!(parse_command("backup 1 2").is_err());
        assert_eq!(parse_line("resend 3"), Ok(Command::Resend(3)));
        assert_eq!(parse_line("backup 3"), Ok(Command::Set(3, true)));
        assert!(parse_line("resend").is_err() && parse_line("resend 0").is_err());
    }
}
