//! A minimal pcapng writer: one section, one interface, enhanced packet blocks with an optional
//! comment, little-endian, nanosecond timestamps.
//!
//! Format: the PCAP Next Generation capture file format (IETF draft
//! draft-ietf-opsawg-pcapng-01):
//! §4.1 Section Header Block (byte-order magic 0x1A2B3C4D, version 1.0, section length −1 =
//! unknown), §4.2 Interface Description Block (`if_name`, `if_description`, `if_tsresol` = 9:
//! timestamps count nanoseconds), §4.3 Enhanced Packet Block (64-bit timestamp split high/low,
//! captured and original lengths, data padded to 32 bits), §3.5 options (`opt_comment` = 1,
//! `opt_endofopt` = 0). Link type 101 (`LINKTYPE_RAW`): every packet starts with its IP header.
//!
//! Why not a crate: the writers on crates.io (pcap-file 2, its 3.0 release candidates) carry a
//! reader, async variants and a byte-order layer; what a capture needs is these three blocks, and
//! writing them here keeps the bytes (hence same seed ⇒ same file) under our control.
use std::io::{self, Write};

/// `LINKTYPE_RAW`: raw IPv4/IPv6, no link-layer header.
pub const LINKTYPE_RAW: u16 = 101;

const SHB: u32 = 0x0A0D_0D0A;
const IDB: u32 = 0x0000_0001;
const EPB: u32 = 0x0000_0006;
const OPT_END: u16 = 0;
const OPT_COMMENT: u16 = 1;
const SHB_USERAPPL: u16 = 4;
const IF_NAME: u16 = 2;
const IF_DESCRIPTION: u16 = 3;
const IF_TSRESOL: u16 = 9;

/// Bytes of padding after `n` bytes so the next item starts on 32 bits.
fn pad(n: usize) -> usize {
    (4 - n % 4) % 4
}

/// Bytes an option with a `len`-byte value takes (header + value + padding).
fn option_len(len: usize) -> usize {
    4 + len + pad(len)
}

fn put_option(b: &mut Vec<u8>, code: u16, value: &[u8]) {
    b.extend_from_slice(&code.to_le_bytes());
    b.extend_from_slice(&(value.len() as u16).to_le_bytes());
    b.extend_from_slice(value);
    b.resize(b.len() + pad(value.len()), 0);
}

/// Wraps a block body: type, total length, body, total length again.
fn block(kind: u32, body: &[u8], out: &mut Vec<u8>) {
    let total = (12 + body.len()) as u32;
    out.extend_from_slice(&kind.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(body);
    out.extend_from_slice(&total.to_le_bytes());
}

/// The file header: a Section Header Block naming the writing application and one Interface
/// Description Block (`name`, `description`, raw IP, `snaplen`, nanosecond timestamps).
pub fn header(application: &str, name: &str, description: &str, snaplen: u32) -> Vec<u8> {
    let mut out = Vec::with_capacity(256);
    let mut b = Vec::with_capacity(64);
    b.extend_from_slice(&0x1A2B_3C4Du32.to_le_bytes());
    b.extend_from_slice(&1u16.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&u64::MAX.to_le_bytes()); // section length unknown
    put_option(&mut b, SHB_USERAPPL, application.as_bytes());
    put_option(&mut b, OPT_END, &[]);
    block(SHB, &b, &mut out);
    b.clear();
    b.extend_from_slice(&LINKTYPE_RAW.to_le_bytes());
    b.extend_from_slice(&0u16.to_le_bytes());
    b.extend_from_slice(&snaplen.to_le_bytes());
    put_option(&mut b, IF_NAME, name.as_bytes());
    put_option(&mut b, IF_DESCRIPTION, description.as_bytes());
    put_option(&mut b, IF_TSRESOL, &[9]);
    put_option(&mut b, OPT_END, &[]);
    block(IDB, &b, &mut out);
    out
}

/// Bytes [`packet`] appends for `captured` bytes of data and a comment of `comment_len` bytes.
pub fn packet_block_len(captured: usize, comment_len: Option<usize>) -> usize {
    let opts = match comment_len {
        Some(n) => option_len(n) + 4,
        None => 0,
    };
    12 + 20 + captured + pad(captured) + opts
}

/// Appends an Enhanced Packet Block on interface 0: `data` (the captured bytes), the packet's
/// `original_len` on the wire, its time in ns since 1970-01-01 (simulated time for the
/// simulator), and an optional comment.
pub fn packet(out: &mut Vec<u8>, ts_ns: u64, data: &[u8], original_len: u32, comment: Option<&str>) {
    let start = out.len();
    let total = packet_block_len(data.len(), comment.map(str::len)) as u32;
    out.extend_from_slice(&EPB.to_le_bytes());
    out.extend_from_slice(&total.to_le_bytes());
    out.extend_from_slice(&0u32.to_le_bytes());
    out.extend_from_slice(&((ts_ns >> 32) as u32).to_le_bytes());
    out.extend_from_slice(&(ts_ns as u32).to_le_bytes());
    out.extend_from_slice(&(data.len() as u32).to_le_bytes());
    out.extend_from_slice(&original_len.to_le_bytes());
    out.extend_from_slice(data);
    out.resize(out.len() + pad(data.len()), 0);
    if let Some(c) = comment {
        put_option(out, OPT_COMMENT, c.as_bytes());
        put_option(out, OPT_END, &[]);
    }
    out.extend_from_slice(&total.to_le_bytes());
    debug_assert_eq!(out.len() - start, total as usize);
}

/// A pcapng file being written: the header first, then blocks as they come, buffered.
pub struct PcapngFile<W: Write> {
    w: io::BufWriter<W>,
    /// Bytes written so far (header included).
    pub bytes: u64,
}

impl<W: Write> PcapngFile<W> {
    /// Starts a file on `w` with [`header`]'s blocks.
    pub fn new(w: W, header_bytes: &[u8]) -> io::Result<PcapngFile<W>> {
        let mut w = io::BufWriter::with_capacity(1 << 16, w);
        w.write_all(header_bytes)?;
        Ok(PcapngFile {
            w,
            bytes: header_bytes.len() as u64,
        })
    }

    /// Appends ready-made blocks (from [`packet`]).
    pub fn write_blocks(&mut self, blocks: &[u8]) -> io::Result<()> {
        self.w.write_all(blocks)?;
        self.bytes += blocks.len() as u64;
        Ok(())
    }

    pub fn flush(&mut self) -> io::Result<()> {
        self.w.flush()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn u32_at(b: &[u8], i: usize) -> u32 {
        u32::from_le_bytes(b[i..i + 4].try_into().unwrap())
    }

    #[test]
    fn blocks_are_padded_and_lengths_repeat() {
        let h = header("mobipath test", "a.forward", "link a", 128);
        // SHB then IDB, each with its total length at both ends, all on 32-bit boundaries.
        let shb_len = u32_at(&h, 4) as usize;
        assert_eq!(u32_at(&h, 0), SHB);
        assert_eq!(u32_at(&h, shb_len - 4) as usize, shb_len);
        assert_eq!(shb_len % 4, 0);
        assert_eq!(u32_at(&h, shb_len), IDB);
        let idb_len = u32_at(&h, shb_len + 4) as usize;
        assert_eq!(shb_len + idb_len, h.len());
        assert_eq!(u16::from_le_bytes([h[shb_len + 8], h[shb_len + 9]]), LINKTYPE_RAW);
        assert_eq!(u32_at(&h, shb_len + 12), 128);

        let mut b = Vec::new();
        packet(&mut b, 5_000_000_123, &[0x45; 41], 1500, Some("dropped: queue"));
        assert_eq!(b.len(), packet_block_len(41, Some(14)));
        assert_eq!(u32_at(&b, 0), EPB);
        assert_eq!(u32_at(&b, 4) as usize, b.len());
        assert_eq!(u32_at(&b, b.len() - 4) as usize, b.len());
        let ts = ((u32_at(&b, 12) as u64) << 32) | u32_at(&b, 16) as u64;
        assert_eq!(ts, 5_000_000_123);
        assert_eq!(u32_at(&b, 20), 41);
        assert_eq!(u32_at(&b, 24), 1500);
        // 41 data bytes padded to 44, then the comment option (code 1, length 14).
        assert_eq!(u16::from_le_bytes([b[28 + 44], b[29 + 44]]), OPT_COMMENT);
        assert_eq!(u16::from_le_bytes([b[30 + 44], b[31 + 44]]), 14);
        let mut c = Vec::new();
        packet(&mut c, 1, &[1, 2, 3, 4], 4, None);
        assert_eq!(c.len(), packet_block_len(4, None));
        assert_eq!(c.len(), 36);
    }
}
