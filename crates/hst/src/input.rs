//! Reading the files a scenario or a config names (traces, handover tables, tracks, GPS logs,
//! the router's config and `key_file`) with a size limit, and only regular files: `/dev/zero`, a
//! FIFO or a directory named by mistake is refused at once with the reason, instead of being read
//! until memory runs out or waiting for a writer that never comes. The simulator and the router
//! both read through [`read_text`] (one reader, one set of rules).
//!
//! [`MAX_DATA_FILE_BYTES`] bounds a data file (a trace, table, track or log): far above any real
//! one (a day of per-millisecond Mahimahi trace is about 600 MB of timestamps only at 10 Gbit/s;
//! the shipped ones are below 1 MB).
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

/// Largest data file (trace, table, track, GPS log) read: 256 MiB.
pub const MAX_DATA_FILE_BYTES: u64 = 256 << 20;

/// The bytes of the regular file `path`, if it holds at most `max` bytes. The error says why
/// (cannot open, not a regular file, larger than the limit) without the path: callers name it.
pub fn read_bytes(path: &Path, max: u64) -> Result<Vec<u8>, String> {
    // O_NONBLOCK: opening a FIFO for reading would otherwise wait for a writer; the type check
    // is on the open descriptor, so the file cannot be swapped between check and read.
    let mut f = File::options()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| e.to_string())?;
    let meta = f.metadata().map_err(|e| e.to_string())?;
    if !meta.is_file() {
        let what = if meta.is_dir() {
            "a directory"
        } else {
            use std::os::unix::fs::FileTypeExt;
            let t = meta.file_type();
            if t.is_fifo() {
                "a FIFO"
            } else if t.is_char_device() || t.is_block_device() {
                "a device"
            } else {
                "a socket or other special file"
            }
        };
        return Err(format!("is {what}, not a regular file"));
    }
    if meta.len() > max {
        return Err(too_large(max));
    }
    let mut bytes = Vec::new();
    (&mut f)
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(too_large(max));
    }
    Ok(bytes)
}

fn too_large(max: u64) -> String {
    if max >= 1 << 20 && max.is_multiple_of(1 << 20) {
        format!("larger than {} MiB ({max} bytes), the limit for this file", max >> 20)
    } else {
        format!("larger than {max} bytes, the limit for this file")
    }
}

/// The text of the regular file `path`, if it holds at most `max` bytes of UTF-8 (see
/// [`read_bytes`]).
pub fn read_text(path: &Path, max: u64) -> Result<String, String> {
    let bytes = read_bytes(path, max)?;
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_devices_fifos_directories_and_large_files() {
        let dir = std::env::temp_dir().join(format!("mobipath-hst-input-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let e = read_text(Path::new("/dev/zero"), 4096).unwrap_err();
        assert!(e.contains("a device"), "{e}");
        let fifo = dir.join("fifo");
        let c = std::ffi::CString::new(fifo.to_str().unwrap()).unwrap();
        assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o600) }, 0);
        assert!(read_text(&fifo, 4096).unwrap_err().contains("a FIFO"));
        assert!(read_text(&dir, 4096).unwrap_err().contains("a directory"));
        let big = dir.join("big");
        std::fs::write(&big, vec![b'a'; 5000]).unwrap();
        assert_eq!(
            read_text(&big, 4096).unwrap_err(),
            "larger than 4096 bytes, the limit for this file"
        );
        assert_eq!(read_text(&big, 5000).unwrap().len(), 5000);
        std::fs::write(&big, b"ab\xffc").unwrap();
        assert!(read_text(&big, 4096).unwrap_err().contains("not UTF-8"));
        assert_eq!(read_bytes(&big, 4096).unwrap(), b"ab\xffc");
        assert!(read_text(&dir.join("missing"), 4096)
            .unwrap_err()
            .contains("No such file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
