//! Packet captures of a run: one pcapng file per captured link direction, as Wireshark and
//! tshark read them (docs/pcap.md is the user's guide).
//!
//! Design: a tap on a link direction, in the spirit of smoltcp's `PcapWriter` (a decorator
//! that sees every packet a device passes): the engine hands each packet that leaves a tapped
//! direction (at its far end, at the simulated time it arrives there) and each packet the
//! direction drops to [`Capture`]; only this module knows packet formats ([`wire`]: the model's
//! packets as IPv4/TCP/MPTCP headers; [`pcapng`]: the file blocks). With no capture, the engine
//! checks one flag per packet and the link directions keep no dropped packets.
//!
//! Files, under the run's output directory:
//! - `pcap/<link>.<forward|reverse>.pcapng`: every packet the direction delivered, stamped with
//!   its arrival time at the far end (simulated time since 1970-01-01, ns resolution), so its
//!   packet count is the summary's `packets_delivered` (packets still on the wire when the run
//!   ends are written with the time they would arrive) — plus, before a connection's first
//!   packet in the file, the three packets of the handshake the model leaves out (it starts
//!   connections established), at the connection's start, each with the comment
//!   [`HANDSHAKE_COMMENT`] so they can be told apart. Both directions' files get all three:
//!   Wireshark learns the window scales and the MPTCP keys only from the SYN and SYN/ACK
//!   together;
//! - `pcap/<link>.<dir>.drops.pcapng` (only if the direction dropped something): the packets it
//!   dropped, stamped with the simulated time of the drop, each with the comment
//!   `dropped: queue|loss|outage|forwarding`. A sibling file keeps the main file what a capture at
//!   the far end would see, so Wireshark's sequence analysis there is not confused by packets
//!   that never arrived.
//! - Where an outage of the direction starts (a train's handover, a P3 handoff, a configured
//!   outage), the first packet the file gets after its start carries a comment saying so; the
//!   outage itself is the gap before it.
//!
//! Bounded: at most `max_bytes` over all files of the run (`[output] pcap_max_mb`, default 100
//! MB); the block that would pass the limit is not written, every file stops there, and the
//! summary's `pcap.warning` says when. Packets are cut to `snaplen` bytes (default 128), their
//! original length recorded. Deterministic: the files depend only on the plan and its seed.
pub mod config;
pub mod mptcp;
pub mod pcapng;
pub mod wire;

use crate::core::time::{to_secs_f64, Time};
use crate::error::ConfigError;
use crate::link::DropCause;
use crate::metrics::round6;
use crate::packet::{Packet, PacketKind};
use crate::plan::Plan;
use serde_json::{json, Map, Value};
use std::fs::File;
use std::path::{Path, PathBuf};
use wire::{Handshake, Wire};

/// Default bytes of each packet kept (headers of any TCP/MPTCP packet fit).
pub const DEFAULT_SNAPLEN: u32 = 128;
/// Default limit on the bytes of all capture files of a run, in MB (10^6 bytes).
pub const DEFAULT_MAX_MB: f64 = 100.0;
/// The comment on the handshake packets the capture adds.
pub const HANDSHAKE_COMMENT: &str =
    "mobipath: handshake added by the capture (the model starts connections established)";
/// The subdirectory of the output directory that holds the captures.
pub const DIR: &str = "pcap";

/// What to capture (resolved from `[output]`): which link directions (indices as the engine
/// numbers them: 2i = link i forward, 2i + 1 = reverse; `None`: capture is off), the snap
/// length and the size limit.
#[derive(Clone, Debug, PartialEq)]
pub struct CaptureSpec {
    pub link_dirs: Option<Vec<usize>>,
    pub snaplen: u32,
    pub max_bytes: u64,
}

impl Default for CaptureSpec {
    fn default() -> Self {
        CaptureSpec {
            link_dirs: None,
            snaplen: DEFAULT_SNAPLEN,
            max_bytes: (DEFAULT_MAX_MB * 1e6) as u64,
        }
    }
}

/// One open pcapng file.
struct Out {
    file: pcapng::PcapngFile<File>,
    path: PathBuf,
}

/// A tapped link direction.
struct Tap {
    /// `<link>.<forward|reverse>`.
    name: String,
    main: Out,
    drops: Option<Out>,
    packets: u64,
    handshake_packets: u64,
    dropped: u64,
    /// Outage starts on this direction, sorted, with their comments; `next_gap` = first not
    /// yet announced.
    gaps: Vec<(Time, String)>,
    next_gap: usize,
    /// Connections (flow) whose first subflow already appeared in this file.
    seen: Vec<bool>,
}

/// A run's captures: the taps, the header model and the size budget.
pub struct Capture {
    dir: PathBuf,
    taps: Vec<Tap>,
    /// Per engine link direction: its tap, or `u32::MAX`.
    tap_of: Vec<u32>,
    wire: Wire,
    snaplen: u32,
    max_bytes: u64,
    written: u64,
    /// Set when the capture stopped early: (time, why).
    stopped: Option<(Time, String)>,
    /// Scratch: one packet's headers, and the blocks being assembled.
    hdr: Vec<u8>,
    blocks: Vec<u8>,
    header_cache: String,
    overtaking: std::collections::BTreeMap<u32, Time>,
}

fn io_error(path: &Path, e: std::io::Error) -> ConfigError {
    ConfigError::new(
        "output.pcap",
        path.display().to_string(),
        format!("cannot write the capture there: {e}"),
    )
}

impl Capture {
    /// Opens `out_dir/pcap/` and one file per captured link direction of `plan` (its
    /// `capture` spec must name some); every error, e.g. a directory that cannot be written,
    /// comes back before the run starts.
    pub fn open(plan: &Plan, out_dir: &Path) -> Result<Capture, ConfigError> {
        let spec = &plan.capture;
        let dirs = spec.link_dirs.clone().unwrap_or_default();
        let dir = out_dir.join(DIR);
        std::fs::create_dir_all(&dir).map_err(|e| io_error(&dir, e))?;
        let application = format!("mobipath {} (simulator)", env!("CARGO_PKG_VERSION"));
        let mut taps = Vec::with_capacity(dirs.len());
        let mut tap_of = vec![u32::MAX; plan.links.len() * 2];
        let mut written = 0;
        for &d in &dirs {
            let link = &plan.links[d / 2];
            let side = if d.is_multiple_of(2) { "forward" } else { "reverse" };
            let name = format!("{}.{side}", link.name);
            let path = dir.join(format!("{name}.pcapng"));
            let desc = format!("link {}, {side} direction, at its far end (simulated)", link.name);
            let header = pcapng::header(&application, &name, &desc, spec.snaplen);
            let file = File::create(&path).map_err(|e| io_error(&path, e))?;
            let file = pcapng::PcapngFile::new(file, &header).map_err(|e| io_error(&path, e))?;
            written += file.bytes;
            tap_of[d] = taps.len() as u32;
            taps.push(Tap {
                gaps: gaps(plan, d),
                next_gap: 0,
                name,
                main: Out { file, path },
                drops: None,
                packets: 0,
                handshake_packets: 0,
                dropped: 0,
                seen: vec![false; plan.flows.len()],
            });
        }
        Ok(Capture {
            dir,
            taps,
            tap_of,
            wire: Wire::new(plan),
            snaplen: spec.snaplen,
            max_bytes: spec.max_bytes,
            written,
            stopped: None,
            hdr: Vec::with_capacity(128),
            blocks: Vec::with_capacity(1024),
            header_cache: application,
            overtaking: Default::default(),
        })
    }

    /// Whether engine link direction `d` is tapped.
    pub fn taps(&self, d: usize) -> bool {
        self.tap_of.get(d).is_some_and(|&t| t != u32::MAX)
    }

    /// Packet `p` left link direction `d` at its far end at `t`.
    pub fn delivered(&mut self, d: usize, t: Time, p: &Packet) {
        let Some(ti) = self.tap_index(d) else { return };
        self.blocks.clear();
        let fi = p.flow as usize;
        let mut handshake = 0;
        if p.subflow == 0 && !self.taps[ti].seen[fi] && !matches!(p.kind, PacketKind::Ehn | PacketKind::Greet) {
            self.taps[ti].seen[fi] = true;
            // The whole handshake in every file: Wireshark learns the window scales and the
            // MPTCP keys of both directions only from the SYN and the SYN/ACK together.
            let which = [Handshake::Syn, Handshake::SynAck, Handshake::Ack];
            let at = self.wire.flow(fi).start.min(t);
            for h in which {
                let len = self.wire.encode_handshake(fi, h, at, &mut self.hdr);
                self.push_block(at, len, Some(HANDSHAKE_COMMENT));
                handshake += 1;
            }
        }
        let len = self.wire.encode(p, t, &mut self.hdr);
        let tap = &mut self.taps[ti];
        let mut comment = None;
        while tap.next_gap < tap.gaps.len() && tap.gaps[tap.next_gap].0 <= t {
            comment = Some(tap.next_gap);
            tap.next_gap += 1;
        }
        let text = comment.map(|g| std::mem::take(&mut self.taps[ti].gaps[g].1));
        self.push_block(t, len, text.as_deref());
        if self.flush_blocks(ti, false) {
            self.taps[ti].packets += 1;
            self.taps[ti].handshake_packets += handshake;
        }
    }

    /// A packet that overtook others on a tapped direction waits in the engine's slot `idx`
    /// to arrive at `t` (reordering); kept so that one still on its way at the end is written.
    pub fn note_overtaking(&mut self, idx: u32, t: Time) {
        self.overtaking.insert(idx, t);
    }

    /// The packet in slot `idx` arrived.
    pub fn arrived_overtaking(&mut self, idx: u32) {
        self.overtaking.remove(&idx);
    }

    /// The overtaking packets still on their way: (slot, arrival time).
    pub fn overtaking(&self) -> Vec<(u32, Time)> {
        self.overtaking.iter().map(|(&i, &t)| (i, t)).collect()
    }

    /// Link direction `d` dropped `p` at `t`.
    pub fn dropped(&mut self, d: usize, t: Time, p: &Packet, cause: DropCause) {
        let Some(ti) = self.tap_index(d) else { return };
        if self.taps[ti].drops.is_none() {
            let tap = &self.taps[ti];
            let path = self.dir.join(format!("{}.drops.pcapng", tap.name));
            let desc = format!("packets dropped by {} (simulated)", tap.name);
            let header = pcapng::header(&self.header_cache, &format!("{}.drops", tap.name), &desc, self.snaplen);
            let opened = File::create(&path).and_then(|f| pcapng::PcapngFile::new(f, &header));
            match opened {
                Ok(file) if self.written + file.bytes <= self.max_bytes => {
                    self.written += file.bytes;
                    self.taps[ti].drops = Some(Out { file, path });
                }
                Ok(_) => return self.stop(t, "size limit reached".into()),
                Err(e) => return self.stop(t, format!("cannot write {}: {e}", path.display())),
            }
        }
        self.blocks.clear();
        let len = self.wire.encode(p, t, &mut self.hdr);
        let comment = format!("dropped: {}", cause.name());
        self.push_block(t, len, Some(&comment));
        if self.flush_blocks(ti, true) {
            self.taps[ti].dropped += 1;
        }
    }

    fn tap_index(&self, d: usize) -> Option<usize> {
        if self.stopped.is_some() {
            return None;
        }
        match self.tap_of.get(d) {
            Some(&t) if t != u32::MAX => Some(t as usize),
            _ => None,
        }
    }

    /// Appends the header just encoded (`hdr`, for a packet of `len` bytes) as a block, with
    /// zero payload bytes up to the snap length.
    fn push_block(&mut self, t: Time, len: u32, comment: Option<&str>) {
        let cap = (len as usize).min(self.snaplen as usize);
        if self.hdr.len() > cap {
            self.hdr.truncate(cap);
        } else {
            self.hdr.resize(cap, 0);
        }
        pcapng::packet(&mut self.blocks, t, &self.hdr, len, comment);
    }

    /// Writes the blocks assembled to tap `ti`'s main or drops file, within the budget; false
    /// if the capture stopped instead.
    fn flush_blocks(&mut self, ti: usize, drops: bool) -> bool {
        let n = self.blocks.len() as u64;
        if self.written + n > self.max_bytes {
            let t = self.last_time();
            self.stop(t, "size limit reached".into());
            return false;
        }
        let tap = &mut self.taps[ti];
        let out = if drops { tap.drops.as_mut() } else { Some(&mut tap.main) };
        let Some(out) = out else { return false };
        if let Err(e) = out.file.write_blocks(&self.blocks) {
            let why = format!("cannot write {}: {e}", out.path.display());
            let t = self.last_time();
            self.stop(t, why);
            return false;
        }
        self.written += n;
        true
    }

    /// The timestamp of the block being written (for the stop message).
    fn last_time(&self) -> Time {
        // The first EPB in `blocks` holds it at bytes 12..20 (high, low).
        if self.blocks.len() >= 20 {
            let hi = u32::from_le_bytes(self.blocks[12..16].try_into().expect("4 bytes")) as u64;
            let lo = u32::from_le_bytes(self.blocks[16..20].try_into().expect("4 bytes")) as u64;
            return (hi << 32) | lo;
        }
        0
    }

    fn stop(&mut self, t: Time, why: String) {
        if self.stopped.is_none() {
            self.stopped = Some((t, why));
        }
    }

    /// Flushes every file and returns the summary's `pcap` section.
    pub fn finish(mut self) -> Value {
        let mut files = Map::new();
        for tap in &mut self.taps {
            let mut flush = |o: &mut Out| {
                if let Err(e) = o.file.flush() {
                    Some(format!("cannot write {}: {e}", o.path.display()))
                } else {
                    None
                }
            };
            let err = flush(&mut tap.main).or_else(|| tap.drops.as_mut().and_then(&mut flush));
            if let (Some(e), None) = (err, &self.stopped) {
                self.stopped = Some((0, e));
            }
            let file_name = |o: &Out| o.path.file_name().map(|n| n.to_string_lossy().into_owned());
            files.insert(
                tap.name.clone(),
                json!({
                    "file": file_name(&tap.main),
                    "packets": tap.packets,
                    "handshake_packets": tap.handshake_packets,
                    "drops": tap.dropped,
                    "drops_file": tap.drops.as_ref().and_then(file_name),
                }),
            );
        }
        let mut v = json!({
            "directory": DIR,
            "snaplen": self.snaplen,
            "max_bytes": self.max_bytes,
            "bytes_written": self.written,
            "files": files,
        });
        if let Some((t, why)) = &self.stopped {
            v["stopped_at_s"] = json!(round6(to_secs_f64(*t)));
            v["warning"] = json!(format!(
                "capture stopped at {:.6} s of simulated time: {why}; the files hold the packets before it",
                to_secs_f64(*t)
            ));
        }
        v
    }
}

/// The outage starts of engine link direction `d`, with the comment for the first packet after
/// each.
fn gaps(plan: &Plan, d: usize) -> Vec<(Time, String)> {
    let link = &plan.links[d / 2];
    let forward = d.is_multiple_of(2);
    let mut outages: Vec<_> = if forward {
        link.outages.iter().chain(&link.forward_outages).collect()
    } else {
        link.reverse_outages.as_ref().unwrap_or(&link.outages).iter().collect()
    };
    outages.sort_by_key(|o| o.start);
    let on_train = plan.train.as_ref().is_some_and(|t| t.links.contains(&link.name));
    let handoffs: Vec<(Time, Time)> = plan
        .handoffs
        .iter()
        .filter(|h| h.link_name == link.name)
        .flat_map(|h| h.intervals.iter().copied())
        .collect();
    outages
        .iter()
        .map(|o| {
            let what = if handoffs.iter().any(|&(s, _)| s.abs_diff(o.start) <= 1_000) {
                "handoff"
            } else if on_train {
                "handover"
            } else {
                "outage"
            };
            let text = format!(
                "mobipath: {what} on link {} from {:.6} s to {:.6} s (no delivery in between)",
                link.name,
                to_secs_f64(o.start),
                to_secs_f64(o.end)
            );
            (o.start, text)
        })
        .collect()
}
