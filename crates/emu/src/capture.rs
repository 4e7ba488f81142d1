//! Packet captures of the emulated paths, in the simulator's layout (`mobipath_sim::capture`,
//! docs/pcap.md): `<dir>/<link>.<forward|reverse>.pcapng` holds every frame a link direction
//! delivered, at the time it left the direction's far end (the emulator's model time on the
//! wall clock: the run's start plus the model's ns), and `<link>.<dir>.drops.pcapng` the frames
//! it dropped, each with the comment `dropped: <cause>`. The frames are the kernel's own IP
//! packets (cut to the snap length), so a capture of a run on the kernel opens beside the
//! simulator's capture of the same scenario.
//!
//! One tap per [`crate::line::Line`], owned by that line's direction thread; the size limit is
//! shared by all of them ([`Budget`]). Frames still propagating when the emulator stops are not
//! written.
use mobipath_sim::capture::pcapng::{self, PcapngFile};
use mobipath_sim::core::Time;
use mobipath_sim::link::DropCause;
use serde::{Deserialize, Serialize};
use std::fs::File;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The run description's `pcap` entry.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PcapConfig {
    /// Directory for the files (created if missing).
    pub dir: PathBuf,
    /// Links to capture (both directions); every link when left out.
    #[serde(default)]
    pub links: Option<Vec<String>>,
    /// Bytes kept of each frame, in [80, 262144].
    #[serde(default = "default_snaplen")]
    pub snaplen: u32,
    /// Limit on all files together, bytes (> 0).
    pub max_bytes: u64,
}

fn default_snaplen() -> u32 {
    mobipath_sim::capture::DEFAULT_SNAPLEN
}

impl PcapConfig {
    /// Every problem, one line each, naming the field; `links` are the run's link names.
    pub fn check(&self, links: &[String]) -> Vec<String> {
        let mut errs = Vec::new();
        let (lo, hi) = mobipath_sim::capture::config::SNAPLEN_RANGE;
        if !(lo..=hi).contains(&self.snaplen) {
            errs.push(format!("pcap.snaplen = {}: must be in [{lo}, {hi}]", self.snaplen));
        }
        if self.max_bytes == 0 {
            errs.push("pcap.max_bytes = 0: must be > 0 (a limit of 0 would capture nothing)".into());
        }
        for (i, n) in self.links.iter().flatten().enumerate() {
            if !links.contains(n) {
                errs.push(format!(
                    "pcap.links[{i}] = {n:?}: unknown link; links: {}",
                    links.join(", ")
                ));
            }
        }
        errs
    }

    pub fn wants(&self, link: &str) -> bool {
        self.links.as_ref().is_none_or(|l| l.iter().any(|n| n == link))
    }
}

/// The size limit shared by every tap of a run, and why capture stopped, if it did.
#[derive(Debug)]
pub struct Budget {
    used: AtomicU64,
    max: u64,
    stopped: Mutex<Option<String>>,
}

impl Budget {
    pub fn new(max: u64) -> Arc<Budget> {
        Arc::new(Budget {
            used: AtomicU64::new(0),
            max,
            stopped: Mutex::new(None),
        })
    }

    /// Takes `n` bytes; false (and capture stops everywhere) if they would pass the limit.
    fn take(&self, n: u64) -> bool {
        if self.stopped().is_some() {
            return false;
        }
        let before = self.used.fetch_add(n, Ordering::SeqCst);
        if before + n > self.max {
            self.used.fetch_sub(n, Ordering::SeqCst);
            self.stop(format!("size limit of {} bytes reached", self.max));
            return false;
        }
        true
    }

    fn stop(&self, why: String) {
        let mut s = self.stopped.lock().expect("not poisoned");
        if s.is_none() {
            *s = Some(why);
        }
    }

    pub fn stopped(&self) -> Option<String> {
        self.stopped.lock().expect("not poisoned").clone()
    }

    pub fn used(&self) -> u64 {
        self.used.load(Ordering::SeqCst)
    }
}

/// The capture of one link direction.
pub struct LineTap {
    name: String,
    dir: PathBuf,
    main: PcapngFile<File>,
    drops: Option<PcapngFile<File>>,
    snaplen: u32,
    /// Wall-clock ns since 1970 at model time 0 (set when the clock starts).
    pub epoch_ns: u64,
    budget: Arc<Budget>,
    packets: u64,
    dropped: u64,
    block: Vec<u8>,
}

fn application() -> String {
    format!(
        "mobipath {} (emulator, Linux kernel traffic)",
        env!("CARGO_PKG_VERSION")
    )
}

impl LineTap {
    /// Opens `<dir>/<name>.pcapng` (`name` = `<link>.<forward|reverse>`).
    pub fn open(dir: &Path, name: &str, snaplen: u32, budget: Arc<Budget>) -> std::io::Result<LineTap> {
        std::fs::create_dir_all(dir)?;
        let desc = format!("{name} at its far end (emulated, real kernel packets)");
        let header = pcapng::header(&application(), name, &desc, snaplen);
        let main = PcapngFile::new(File::create(dir.join(format!("{name}.pcapng")))?, &header)?;
        budget.used.fetch_add(main.bytes, Ordering::SeqCst);
        Ok(LineTap {
            name: name.to_string(),
            dir: dir.to_path_buf(),
            main,
            drops: None,
            snaplen,
            epoch_ns: 0,
            budget,
            packets: 0,
            dropped: 0,
            block: Vec::with_capacity(256),
        })
    }

    fn block_for(&mut self, at: Time, frame: &[u8], comment: Option<&str>) -> bool {
        self.block.clear();
        let cap = frame.len().min(self.snaplen as usize);
        pcapng::packet(
            &mut self.block,
            self.epoch_ns.saturating_add(at),
            &frame[..cap],
            frame.len() as u32,
            comment,
        );
        self.budget.take(self.block.len() as u64)
    }

    /// `frame` left the direction's far end at model time `at`.
    pub fn delivered(&mut self, at: Time, frame: &[u8]) {
        if !self.block_for(at, frame, None) {
            return;
        }
        match self.main.write_blocks(&self.block) {
            Ok(()) => self.packets += 1,
            Err(e) => self.budget.stop(format!("cannot write {}.pcapng: {e}", self.name)),
        }
    }

    /// The direction dropped `frame` at model time `at`.
    pub fn dropped(&mut self, at: Time, frame: &[u8], cause: DropCause) {
        if self.drops.is_none() {
            let name = format!("{}.drops", self.name);
            let header = pcapng::header(
                &application(),
                &name,
                &format!("frames dropped by {}", self.name),
                self.snaplen,
            );
            if !self.budget.take(header.len() as u64) {
                return;
            }
            match File::create(self.dir.join(format!("{name}.pcapng"))).and_then(|f| PcapngFile::new(f, &header)) {
                Ok(f) => self.drops = Some(f),
                Err(e) => return self.budget.stop(format!("cannot write {name}.pcapng: {e}")),
            }
        }
        let comment = format!("dropped: {}", cause.name());
        if !self.block_for(at, frame, Some(&comment)) {
            return;
        }
        if let Some(d) = self.drops.as_mut() {
            match d.write_blocks(&self.block) {
                Ok(()) => self.dropped += 1,
                Err(e) => self
                    .budget
                    .stop(format!("cannot write {}.drops.pcapng: {e}", self.name)),
            }
        }
    }

    /// Flushes the files; what the stats report of this tap.
    pub fn finish(&mut self) -> serde_json::Value {
        let mut err = self.main.flush().err();
        if let Some(d) = self.drops.as_mut() {
            err = err.or(d.flush().err());
        }
        if let Some(e) = err {
            self.budget.stop(format!("cannot write {}: {e}", self.name));
        }
        serde_json::json!({
            "name": self.name,
            "file": format!("{}.pcapng", self.name),
            "packets": self.packets,
            "drops": self.dropped,
            "drops_file": self.drops.as_ref().map(|_| format!("{}.drops.pcapng", self.name)),
        })
    }
}
