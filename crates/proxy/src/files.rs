//! Reading the files a config names (the config itself, `key_file`, PHA-D's handover table,
//! track and replay trace) with a size limit, and only regular files: `/dev/zero`, a FIFO or a
//! directory named by mistake is refused at once with the reason, instead of being read until
//! memory runs out or waiting for a writer that never comes.
//!
//! Limits, each far above any real file of its kind: the config [`MAX_CONFIG_BYTES`], a key
//! file [`MAX_KEY_FILE_BYTES`] (a key is at most 128 hex digits), PHA-D's data files
//! [`MAX_DATA_FILE_BYTES`].
use std::path::Path;

pub const MAX_CONFIG_BYTES: u64 = 1 << 20;
pub const MAX_KEY_FILE_BYTES: u64 = 4096;
pub const MAX_DATA_FILE_BYTES: u64 = mobipath_hst::input::MAX_DATA_FILE_BYTES;

/// The text of the regular file `path`, if it holds at most `max` bytes of UTF-8. The error says
/// why (cannot open, not a regular file, too large, not UTF-8) without the path: callers name it.
/// The simulator reads its files through the same reader (`mobipath_hst::input`).
pub fn read_text(path: &Path, max: u64) -> Result<String, String> {
    mobipath_hst::input::read_text(path, max)
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
        assert!(read_text(&big, 4096).unwrap_err().starts_with("larger than 4096 bytes"));
        assert_eq!(read_text(&big, 5000).unwrap().len(), 5000);
        std::fs::write(&big, b"ab\xffc").unwrap();
        assert!(read_text(&big, 4096).unwrap_err().contains("not UTF-8"));
        assert!(read_text(&dir.join("missing"), 4096)
            .unwrap_err()
            .contains("No such file"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
