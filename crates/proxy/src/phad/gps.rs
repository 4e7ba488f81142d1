//! GPS sources for the live PHA-D daemon. Each runs as a task that sends [`GpsEvent`]s and ends
//! with [`GpsEvent::Ended`] (the daemon then fails safe and starts the source again):
//!
//! | `gps =` | what |
//! |---|---|
//! | `gpsd:HOST:PORT` | gpsd's JSON protocol over TCP (`?WATCH={"enable":true,"json":true}`; `TPV` reports, gpsd.gitlab.io/gpsd/gpsd_json.html) |
//! | `nmea-serial:/dev/ttyUSB0@9600` | NMEA 0183 from a serial receiver (raw 8N1 at the given baud rate, default 4800 as NMEA 0183 specifies) |
//! | `nmea-file:PATH` | NMEA 0183 lines from a file or FIFO as they come (end of file ends the source) |
//! | `nmea-udp:IP:PORT` | NMEA 0183 datagrams (one or more sentences each) sent to this address |
//! | `replay:PATH` | a position trace CSV `time_s,position_m` (the simulator's `[hst.gps_trace]` format), replayed in real time from the source's start |
//!
//! Lines are bounded ([`MAX_LINE`]); anything unusable is a [`GpsEvent::Bad`] naming its kind,
//! never a panic.
use std::path::PathBuf;
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncReadExt, AsyncWriteExt};
use tokio::sync::mpsc;

use super::nmea;

/// Longest line accepted from any source (gpsd's reports are a few hundred bytes).
pub const MAX_LINE: usize = 16 * 1024;

#[derive(Clone, Debug, PartialEq)]
pub enum Source {
    Gpsd(String),
    NmeaSerial(PathBuf, u32),
    NmeaFile(PathBuf),
    NmeaUdp(std::net::SocketAddr),
    Replay(PathBuf),
}

impl Source {
    /// Parses the `gps` setting; `base` resolves relative paths.
    pub fn parse(s: &str, base: &std::path::Path) -> Result<Source, String> {
        let path = |p: &str| {
            if p.is_empty() {
                Err("a path is needed".to_string())
            } else {
                let p = PathBuf::from(p);
                Ok(if p.is_absolute() { p } else { base.join(p) })
            }
        };
        let (kind, rest) = s.split_once(':').ok_or_else(|| {
            format!("`{s}`: expected KIND:WHERE with KIND gpsd, nmea-serial, nmea-file, nmea-udp or replay")
        })?;
        match kind {
            "gpsd" => {
                let (h, p) = rest
                    .rsplit_once(':')
                    .ok_or_else(|| format!("`{s}`: expected gpsd:HOST:PORT"))?;
                if h.is_empty() || !p.parse::<u16>().is_ok_and(|p| p > 0) {
                    return Err(format!("`{s}`: expected gpsd:HOST:PORT with a port in 1..=65535"));
                }
                Ok(Source::Gpsd(rest.to_string()))
            }
            "nmea-serial" => {
                let (dev, baud) = match rest.rsplit_once('@') {
                    Some((d, b)) => (
                        d,
                        b.parse::<u32>()
                            .map_err(|_| format!("`{s}`: baud rate `{b}` is not a number"))?,
                    ),
                    None => (rest, 4800),
                };
                if baud_constant(baud).is_none() {
                    return Err(format!("`{s}`: baud rate {baud}: one of 4800, 9600, 19200, 38400, 57600, 115200, 230400, 460800, 921600"));
                }
                Ok(Source::NmeaSerial(path(dev)?, baud))
            }
            "nmea-file" => Ok(Source::NmeaFile(path(rest)?)),
            "nmea-udp" => rest
                .parse()
                .map(Source::NmeaUdp)
                .map_err(|_| format!("`{s}`: expected nmea-udp:IP:PORT")),
            "replay" => Ok(Source::Replay(path(rest)?)),
            _ => Err(format!(
                "`{s}`: unknown kind `{kind}` (gpsd, nmea-serial, nmea-file, nmea-udp or replay)"
            )),
        }
    }

    /// Whether positions come as lat/lon (needing a track) rather than along the track.
    pub fn needs_track(&self) -> bool {
        !matches!(self, Source::Replay(_))
    }

    /// What `check-config` checks beyond the syntax, by reading what is there now: a replay
    /// trace is read (bounded) and parsed; an NMEA file must exist and be readable (a regular
    /// file, FIFO or character device; not read, as it may be a live stream). A running daemon
    /// instead fails safe and retries, so a source that appears later is not an error there.
    pub fn check_now(&self) -> Result<(), Vec<String>> {
        match self {
            Source::Replay(p) => {
                let text = crate::files::read_text(p, crate::files::MAX_DATA_FILE_BYTES)
                    .map_err(|e| vec![format!("{}: {e}", p.display())])?;
                parse_replay(&text, &p.display().to_string()).map(|_| ())
            }
            Source::NmeaFile(p) => {
                use std::os::unix::fs::{FileTypeExt, OpenOptionsExt};
                let f = std::fs::File::options()
                    .read(true)
                    .custom_flags(libc::O_NONBLOCK | libc::O_NOCTTY)
                    .open(p)
                    .map_err(|e| vec![format!("{}: {e}", p.display())])?;
                let t = f
                    .metadata()
                    .map_err(|e| vec![format!("{}: {e}", p.display())])?
                    .file_type();
                if t.is_file() || t.is_fifo() || t.is_char_device() {
                    Ok(())
                } else {
                    Err(vec![format!(
                        "{}: not a file, FIFO or character device to read NMEA lines from",
                        p.display()
                    )])
                }
            }
            _ => Ok(()),
        }
    }
}

fn baud_constant(b: u32) -> Option<libc::speed_t> {
    Some(match b {
        4800 => libc::B4800,
        9600 => libc::B9600,
        19200 => libc::B19200,
        38400 => libc::B38400,
        57600 => libc::B57600,
        115200 => libc::B115200,
        230400 => libc::B230400,
        460800 => libc::B460800,
        921600 => libc::B921600,
        _ => return None,
    })
}

#[derive(Clone, Debug, PartialEq)]
pub enum GpsEvent {
    /// A fix in WGS84 degrees.
    Fix { lat: f64, lon: f64 },
    /// A position along the track (replay).
    Position { pos_m: f64 },
    /// The receiver reports no fix (GGA quality 0, RMC void, gpsd mode < 2).
    NoFix,
    /// Unusable input: `kind` is a short stable name, `detail` says what.
    Bad { kind: &'static str, detail: String },
    /// The source ended (connection closed, end of file, error).
    Ended(String),
}

/// Splits a byte stream into bounded lines; an over-long line is reported and skipped.
struct Lines {
    buf: Vec<u8>,
    skipping: bool,
}

impl Lines {
    fn new() -> Self {
        Lines {
            buf: Vec::new(),
            skipping: false,
        }
    }

    fn push(&mut self, data: &[u8], out: &mut Vec<Result<String, GpsEvent>>) {
        for &b in data {
            if b == b'\n' {
                if self.skipping {
                    self.skipping = false;
                } else {
                    let line = std::mem::take(&mut self.buf);
                    match String::from_utf8(line) {
                        Ok(s) => out.push(Ok(s.trim_end_matches('\r').to_string())),
                        Err(_) => out.push(Err(GpsEvent::Bad {
                            kind: "not-utf8",
                            detail: "a line that is not UTF-8 text".into(),
                        })),
                    }
                }
                self.buf.clear();
            } else if !self.skipping {
                self.buf.push(b);
                if self.buf.len() > MAX_LINE {
                    self.buf.clear();
                    self.skipping = true;
                    out.push(Err(GpsEvent::Bad {
                        kind: "too-long",
                        detail: format!("a line longer than {MAX_LINE} bytes"),
                    }));
                }
            }
        }
    }
}

fn nmea_event(line: &str) -> Option<GpsEvent> {
    if line.trim().is_empty() {
        return None;
    }
    Some(match nmea::parse_sentence(line.trim()) {
        Ok(Some(f)) => GpsEvent::Fix { lat: f.lat, lon: f.lon },
        Ok(None) => {
            // GGA without fix or void RMC: say so (other sentence types say nothing).
            let t = line.trim();
            if t.len() > 6 && (t.get(3..6) == Some("GGA") || t.get(3..6) == Some("RMC")) {
                GpsEvent::NoFix
            } else {
                return None;
            }
        }
        Err(e) => GpsEvent::Bad {
            kind: e.kind,
            detail: e.detail,
        },
    })
}

/// One gpsd JSON report → an event (`TPV` with mode >= 2 and lat/lon: a fix).
pub fn gpsd_event(line: &str) -> Option<GpsEvent> {
    if line.trim().is_empty() {
        return None;
    }
    let v: serde_json::Value = match serde_json::from_str(line) {
        Ok(v) => v,
        Err(e) => {
            return Some(GpsEvent::Bad {
                kind: "gpsd-json",
                detail: format!("not a JSON report: {e}"),
            })
        }
    };
    let Some(class) = v.get("class").and_then(|c| c.as_str()) else {
        return Some(GpsEvent::Bad {
            kind: "gpsd-json",
            detail: "a report without `class`".into(),
        });
    };
    if class != "TPV" {
        return None; // VERSION, DEVICES, WATCH, SKY, ...
    }
    let mode = v.get("mode").and_then(|m| m.as_i64()).unwrap_or(0);
    let (lat, lon) = (
        v.get("lat").and_then(|x| x.as_f64()),
        v.get("lon").and_then(|x| x.as_f64()),
    );
    match (mode >= 2, lat, lon) {
        (false, _, _) => Some(GpsEvent::NoFix),
        (true, Some(lat), Some(lon)) if lat.abs() <= 90.0 && lon.abs() <= 180.0 => Some(GpsEvent::Fix { lat, lon }),
        (true, Some(_), Some(_)) => Some(GpsEvent::Bad {
            kind: "gpsd-tpv",
            detail: "lat/lon out of range".into(),
        }),
        _ => Some(GpsEvent::NoFix),
    }
}

async fn pump<R: AsyncRead + Unpin>(
    mut r: R,
    tx: &mpsc::Sender<GpsEvent>,
    parse: fn(&str) -> Option<GpsEvent>,
) -> String {
    let mut lines = Lines::new();
    let mut chunk = vec![0u8; 4096];
    loop {
        let n = match r.read(&mut chunk).await {
            Ok(0) => return "end of input".into(),
            Ok(n) => n,
            Err(e) => return format!("read error: {e}"),
        };
        let mut out = Vec::new();
        lines.push(&chunk[..n], &mut out);
        for l in out {
            let ev = match l {
                Ok(s) => parse(&s),
                Err(e) => Some(e),
            };
            if let Some(ev) = ev {
                if tx.send(ev).await.is_err() {
                    return "stopped".into();
                }
            }
        }
    }
}

fn open_serial(dev: &std::path::Path, baud: u32) -> std::io::Result<std::fs::File> {
    use std::os::fd::AsRawFd;
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOCTTY)
        .open(dev)?;
    let fd = f.as_raw_fd();
    // Raw 8N1 at `baud` (termios(3)); a non-tty (a test's pipe) is read as it is.
    if unsafe { libc::isatty(fd) } == 1 {
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        if unsafe { libc::tcgetattr(fd, &mut t) } != 0 {
            return Err(std::io::Error::last_os_error());
        }
        unsafe { libc::cfmakeraw(&mut t) };
        t.c_cflag |= libc::CLOCAL | libc::CREAD;
        let sp = baud_constant(baud).unwrap_or(libc::B4800);
        if unsafe { libc::cfsetispeed(&mut t, sp) } != 0
            || unsafe { libc::cfsetospeed(&mut t, sp) } != 0
            || unsafe { libc::tcsetattr(fd, libc::TCSANOW, &t) } != 0
        {
            return Err(std::io::Error::last_os_error());
        }
    }
    Ok(f)
}

/// Parses a replay trace `time_s,position_m` (header required, at least one row), by the
/// simulator's `[hst.gps_trace]` rules (`mobipath_hst::fixes`: times strictly increasing, both
/// fields in [0, 1e9]), so a trace either accepts the other accepts too.
pub fn parse_replay(text: &str, file: &str) -> Result<Vec<(f64, f64)>, Vec<String>> {
    use mobipath_hst::fixes;
    let mut out: Vec<(f64, f64)> = Vec::new();
    let mut errs = super::twocol::walk(text, file, "trace", fixes::HEADER, "", |r, errs| {
        let [t_s, p_s] = r.cols;
        match fixes::fix(t_s, p_s, out.last().map(|&(t, _)| t)) {
            Ok(f) => out.push(f),
            Err(faults) => {
                for f in faults {
                    let value = if f == fixes::Fault::Position { p_s } else { t_s };
                    errs.push(r.err(f.field(), value, f.rule()));
                }
            }
        }
    });
    // A header alone is refused as the simulator refuses it (`[hst.gps_trace]`: "no fixes"):
    // replayed, it would end at once and look like a ride that ended, restarted every `retry_s`.
    if errs.is_empty() && out.is_empty() {
        errs.push(format!(
            "{file}: no fixes: expected rows `time_s,position_m` after the header"
        ));
    }
    if errs.is_empty() {
        Ok(out)
    } else {
        Err(errs)
    }
}

/// Runs `src` until it ends or the receiver is dropped; always sends `Ended` last (if it can).
pub async fn run(src: Source, tx: mpsc::Sender<GpsEvent>) {
    let why = match &src {
        Source::Gpsd(addr) => {
            match tokio::time::timeout(Duration::from_secs(5), tokio::net::TcpStream::connect(addr.as_str())).await {
                Err(_) => format!("gpsd {addr}: connect timed out"),
                Ok(Err(e)) => format!("gpsd {addr}: {e}"),
                Ok(Ok(mut s)) => match s.write_all(b"?WATCH={\"enable\":true,\"json\":true};\n").await {
                    Err(e) => format!("gpsd {addr}: {e}"),
                    Ok(()) => format!("gpsd {addr}: {}", pump(s, &tx, gpsd_event).await),
                },
            }
        }
        Source::NmeaSerial(dev, baud) => {
            let (dev2, baud) = (dev.clone(), *baud);
            match tokio::task::spawn_blocking(move || open_serial(&dev2, baud)).await {
                Ok(Ok(f)) => format!(
                    "{}: {}",
                    dev.display(),
                    pump(tokio::fs::File::from_std(f), &tx, nmea_event).await
                ),
                Ok(Err(e)) => format!("{}: {e}", dev.display()),
                Err(e) => format!("{}: {e}", dev.display()),
            }
        }
        Source::NmeaFile(p) => match tokio::fs::File::open(p).await {
            Ok(f) => format!("{}: {}", p.display(), pump(f, &tx, nmea_event).await),
            Err(e) => format!("{}: {e}", p.display()),
        },
        Source::NmeaUdp(addr) => match tokio::net::UdpSocket::bind(addr).await {
            Err(e) => format!("nmea-udp {addr}: {e}"),
            Ok(sock) => {
                let mut buf = vec![0u8; 65536];
                loop {
                    let n = match sock.recv(&mut buf).await {
                        Ok(n) => n,
                        Err(e) => break format!("nmea-udp {addr}: {e}"),
                    };
                    // Each datagram is whole lines; a last line without newline counts too.
                    let mut lines = Lines::new();
                    let mut out = Vec::new();
                    lines.push(&buf[..n], &mut out);
                    lines.push(b"\n", &mut out);
                    let mut closed = false;
                    for l in out {
                        let ev = match l {
                            Ok(s) => nmea_event(&s),
                            Err(e) => Some(e),
                        };
                        if let Some(ev) = ev {
                            closed |= tx.send(ev).await.is_err();
                        }
                    }
                    if closed {
                        break "stopped".into();
                    }
                }
            }
        },
        Source::Replay(p) => match read_replay_text(p.clone()).await {
            Err(e) => format!("{}: {e}", p.display()),
            Ok(text) => match parse_replay(&text, &p.display().to_string()) {
                Err(errs) => format!("replay: {}", errs.join("; ")),
                Ok(rows) => {
                    let start = tokio::time::Instant::now();
                    let t0 = rows.first().map_or(0.0, |r| r.0);
                    let mut why = format!("{}: end of replay", p.display());
                    for (t, pos) in rows {
                        tokio::time::sleep_until(start + Duration::from_secs_f64(t - t0)).await;
                        if tx.send(GpsEvent::Position { pos_m: pos }).await.is_err() {
                            why = "stopped".into();
                            break;
                        }
                    }
                    why
                }
            },
        },
    };
    let _ = tx.send(GpsEvent::Ended(why)).await;
}

/// A replay trace's text, read off the runtime's threads with the size limit of every data file.
async fn read_replay_text(p: PathBuf) -> Result<String, String> {
    tokio::task::spawn_blocking(move || crate::files::read_text(&p, crate::files::MAX_DATA_FILE_BYTES))
        .await
        .map_err(|e| e.to_string())?
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::phad::nmea::with_checksum;

    /// check-config reads what is there now: a missing NMEA file is an error like a missing
    /// replay trace; a FIFO is a fine NMEA source (not opened for long, never waited on); a
    /// replay trace of /dev/zero is refused at once.
    #[test]
    fn check_now_refuses_what_cannot_be_read() {
        let d = std::env::temp_dir().join(format!("phad-gps-check-{}", std::process::id()));
        std::fs::create_dir_all(&d).unwrap();
        let e = Source::parse("nmea-file:/nonexistent", &d)
            .unwrap()
            .check_now()
            .unwrap_err();
        assert!(e[0].starts_with("/nonexistent: No such file"), "{e:?}");
        let e = Source::parse("replay:/nonexistent.csv", &d)
            .unwrap()
            .check_now()
            .unwrap_err();
        assert!(e[0].starts_with("/nonexistent.csv: No such file"), "{e:?}");
        let e = Source::parse("replay:/dev/zero", &d).unwrap().check_now().unwrap_err();
        assert!(e[0].contains("is a device"), "{e:?}");
        let fifo = d.join("gps.fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(Source::parse("nmea-file:gps.fifo", &d).unwrap().check_now().is_ok());
        let e = Source::parse("nmea-file:.", &d).unwrap().check_now().unwrap_err();
        assert!(e[0].contains("not a file, FIFO or character device"), "{e:?}");
        std::fs::write(d.join("r.csv"), "time_s,position_m\n0,10\n1,20\n").unwrap();
        assert!(Source::parse("replay:r.csv", &d).unwrap().check_now().is_ok());
        std::fs::remove_dir_all(&d).unwrap();
    }

    #[test]
    fn sources_parse() {
        let b = std::path::Path::new("/etc/x");
        assert_eq!(
            Source::parse("gpsd:127.0.0.1:2947", b),
            Ok(Source::Gpsd("127.0.0.1:2947".into()))
        );
        assert_eq!(
            Source::parse("nmea-serial:/dev/ttyUSB0@9600", b),
            Ok(Source::NmeaSerial("/dev/ttyUSB0".into(), 9600))
        );
        assert_eq!(
            Source::parse("nmea-serial:/dev/ttyS0", b),
            Ok(Source::NmeaSerial("/dev/ttyS0".into(), 4800))
        );
        assert_eq!(
            Source::parse("replay:trace.csv", b),
            Ok(Source::Replay("/etc/x/trace.csv".into()))
        );
        assert_eq!(
            Source::parse("nmea-udp:0.0.0.0:10110", b),
            Ok(Source::NmeaUdp("0.0.0.0:10110".parse().unwrap()))
        );
        for bad in [
            "gpsd:host",
            "gpsd::1",
            "nmea-serial:/dev/x@1234",
            "nmea-udp:nowhere",
            "nmea-file:",
            "serial:/dev/x",
            "x",
        ] {
            assert!(Source::parse(bad, b).is_err(), "{bad}");
        }
    }

    #[test]
    fn gpsd_reports() {
        assert_eq!(
            gpsd_event(r#"{"class":"TPV","mode":3,"lat":37.5,"lon":127.0}"#),
            Some(GpsEvent::Fix { lat: 37.5, lon: 127.0 })
        );
        assert_eq!(gpsd_event(r#"{"class":"TPV","mode":1}"#), Some(GpsEvent::NoFix));
        assert_eq!(gpsd_event(r#"{"class":"SKY"}"#), None);
        assert!(matches!(
            gpsd_event("\u{1}garbage"),
            Some(GpsEvent::Bad { kind: "gpsd-json", .. })
        ));
        assert!(matches!(
            gpsd_event(r#"{"mode":3}"#),
            Some(GpsEvent::Bad { kind: "gpsd-json", .. })
        ));
        assert!(matches!(
            gpsd_event(r#"{"class":"TPV","mode":2,"lat":99,"lon":0}"#),
            Some(GpsEvent::Bad { kind: "gpsd-tpv", .. })
        ));
    }

    #[test]
    fn lines_are_bounded_and_split() {
        let mut l = Lines::new();
        let mut out = Vec::new();
        l.push(b"ab\r\ncd", &mut out);
        l.push(b"e\n", &mut out);
        l.push(&vec![b'x'; MAX_LINE + 10], &mut out);
        l.push(b"\nok\n\xff\xfe\n", &mut out);
        let kinds: Vec<String> = out
            .iter()
            .map(|r| match r {
                Ok(s) => s.clone(),
                Err(GpsEvent::Bad { kind, .. }) => format!("!{kind}"),
                Err(e) => format!("{e:?}"),
            })
            .collect();
        assert_eq!(kinds, vec!["ab", "cde", "!too-long", "ok", "!not-utf8"]);
    }

    #[test]
    fn nmea_events() {
        let good = with_checksum("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,");
        assert!(matches!(nmea_event(&good), Some(GpsEvent::Fix { .. })));
        assert_eq!(
            nmea_event(&with_checksum("GPGGA,123519,,,,,0,00,,,M,,M,,")),
            Some(GpsEvent::NoFix)
        );
        assert_eq!(nmea_event(&with_checksum("GPGSV,1,1,00")), None);
        assert!(matches!(
            nmea_event("$GPGGA,1*00"),
            Some(GpsEvent::Bad {
                kind: "checksum-mismatch",
                ..
            })
        ));
    }

    #[test]
    fn replay_trace() {
        assert_eq!(
            parse_replay("time_s,position_m\n0,10\n0.5,20\n", "r.csv"),
            Ok(vec![(0.0, 10.0), (0.5, 20.0)])
        );
        for (t, want) in [
            ("x\n", "r.csv: line 1: header"),
            ("time_s,position_m\n1,2\n0,3\n", "r.csv: line 3: time_s = 0"),
            ("time_s,position_m\n1,-2\n", "r.csv: line 2: position_m = -2"),
            ("", "r.csv: empty trace"),
            ("time_s,position_m\n", "r.csv: no fixes"),
            (
                "# recorded 2024-05-01\ntime_s, position_m\n\n# nothing\n",
                "r.csv: no fixes",
            ),
        ] {
            let e = parse_replay(t, "r.csv").unwrap_err();
            assert!(e[0].starts_with(want), "{t:?}: {e:?}");
        }
    }

    #[tokio::test]
    async fn udp_source_delivers_fixes_and_counts_garbage() {
        let sock = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let addr = sock.local_addr().unwrap();
        drop(sock);
        let (tx, mut rx) = mpsc::channel(16);
        let h = tokio::spawn(run(Source::NmeaUdp(addr), tx));
        tokio::time::sleep(Duration::from_millis(100)).await;
        let s = std::net::UdpSocket::bind("127.0.0.1:0").unwrap();
        let good = with_checksum("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,");
        s.send_to(format!("{good}\r\n$GPGGA,x*00").as_bytes(), addr).unwrap();
        assert!(matches!(rx.recv().await, Some(GpsEvent::Fix { .. })));
        assert!(matches!(
            rx.recv().await,
            Some(GpsEvent::Bad {
                kind: "checksum-mismatch",
                ..
            })
        ));
        h.abort();
    }

    /// The serial source on a real tty: a pseudo-terminal's slave side stands in for the
    /// receiver's device (`/dev/ttyUSB0`), so the termios set-up (raw 8N1 at the given rate)
    /// runs on a real terminal device, and a receiver unplugged (the master closed) ends the
    /// source.
    #[tokio::test]
    async fn serial_source_on_a_pseudo_terminal() {
        use std::io::Write;
        use std::os::fd::FromRawFd;
        let (mut master, mut slave) = (-1, -1);
        let mut name = [0 as libc::c_char; 128];
        let ok = unsafe {
            libc::openpty(
                &mut master,
                &mut slave,
                name.as_mut_ptr(),
                std::ptr::null(),
                std::ptr::null(),
            )
        };
        assert_eq!(ok, 0, "openpty: {}", std::io::Error::last_os_error());
        let dev = unsafe { std::ffi::CStr::from_ptr(name.as_ptr()) }
            .to_str()
            .unwrap()
            .to_string();
        let (tx, mut rx) = mpsc::channel(16);
        let h = tokio::spawn(run(Source::NmeaSerial(dev.clone().into(), 9600), tx));
        // The source has opened and configured the device once its speed reads 9600.
        let mut t: libc::termios = unsafe { std::mem::zeroed() };
        let deadline = std::time::Instant::now() + Duration::from_secs(5);
        loop {
            assert_eq!(unsafe { libc::tcgetattr(slave, &mut t) }, 0);
            if unsafe { libc::cfgetispeed(&t) } == libc::B9600 {
                break;
            }
            assert!(std::time::Instant::now() < deadline, "{dev} was never set to 9600 baud");
            tokio::time::sleep(Duration::from_millis(20)).await;
        }
        assert_eq!(
            t.c_lflag & (libc::ICANON | libc::ECHO),
            0,
            "raw mode: no line editing, no echo"
        );
        assert_eq!(t.c_cflag & libc::CSIZE, libc::CS8, "8 data bits");
        assert_eq!(t.c_cflag & (libc::PARENB | libc::CSTOPB), 0, "no parity, one stop bit");
        unsafe { libc::close(slave) };
        let mut m = unsafe { std::fs::File::from_raw_fd(master) };
        let good = with_checksum("GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,");
        // Split mid-sentence, as a serial line delivers bytes.
        let (a, b) = good.split_at(20);
        m.write_all(a.as_bytes()).unwrap();
        m.flush().unwrap();
        tokio::time::sleep(Duration::from_millis(50)).await;
        m.write_all(format!("{b}\r\n").as_bytes()).unwrap();
        match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
            Ok(Some(GpsEvent::Fix { lat, lon })) => assert!(
                (lat - 48.1173).abs() < 1e-4 && (lon - 11.5167).abs() < 1e-4,
                "{lat} {lon}"
            ),
            other => panic!("expected a fix, got {other:?}"),
        }
        drop(m); // the receiver unplugged
        match tokio::time::timeout(Duration::from_secs(5), rx.recv()).await {
            Ok(Some(GpsEvent::Ended(why))) => assert!(why.starts_with(&dev), "{why}"),
            other => panic!("expected the source to end, got {other:?}"),
        }
        h.abort();
    }
}
