//! Reading the files a config names (the config itself, `key_file`, PHA-D's handover table,
//! track and replay trace) with a size limit, and only regular files: `/dev/zero`, a FIFO or a
//! directory named by mistake is refused at once with the reason, instead of being read until
//! memory runs out or waiting for a writer that never comes.
//!
//! Limits, each far above any real file of its kind: the config [`MAX_CONFIG_BYTES`], a key
//! file [`MAX_KEY_FILE_BYTES`] (a key is at most 128 hex digits), PHA-D's data files
//! [`MAX_DATA_FILE_BYTES`].
use std::fs::File;
use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;

pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
pub const MAX_KEY_FILE_BYTES: u64 = 4096;
pub const MAX_DATA_FILE_BYTES: u64 = 256 << 20;

/// The text of the regular file `path`, if it holds at most `max` bytes of UTF-8. The error says
/// why (cannot open, not a regular file, too large, not UTF-8) without the path: callers name it.
pub fn read_text(path: &Path, max: u64) -> Result<String, String> {
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
    let mut bytes = Vec::new();
    (&mut f)
        .take(max + 1)
        .read_to_end(&mut bytes)
        .map_err(|e| e.to_string())?;
    if bytes.len() as u64 > max {
        return Err(format!("larger than {max} bytes"));
    }
    String::from_utf8(bytes).map_err(|e| format!("not UTF-8 text (byte {})", e.utf8_error().valid_up_to()))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn refuses_devices_fifos_directories_and_large_files() {
        let dir = std::env::temp_dir().join(format!("mobipath-proxy-files-{}", std::process::id()));
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
        assert_eq!(read_text(&big, 4096).unwrap_err(), "larger than 4096 bytes");
        assert_eq!(read_text(&big, 5000).unwrap().len(), 5000);
        std::fs::write(&big, b"ab\xffc").unwrap();
        assert!(read_text(&big, 4096).unwrap_err().contains("not UTF-8"));
        assert!(read_text(&dir.join("missing"), 4096)
            .unwrap_err()
            .contains("No such file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
