"""Reading the files a user names (scenarios, sweep files, traces, handover tables and logs,
tracks, NMEA logs) with a size limit, and only regular files: ``/dev/zero``, a FIFO or a
directory named by mistake is refused at once with the reason, instead of being read until
memory runs out or waiting for a writer that never comes. The simulator's own reader
(``mobipath_hst::input``) follows the same rules and the same limit.
"""

from __future__ import annotations

import os
import stat

# No typing import: `mobipath run` reads its scenario through this module on the fast path,
# which imports nothing slow (tests/python/test_startup.py).

#: Largest data file read (a trace, table, track or log): 256 MiB, as in the simulator.
MAX_DATA_FILE_BYTES = 256 << 20
#: Largest scenario or sweep file read: 16 MiB (the shipped ones are below 20 KB).
MAX_CONFIG_FILE_BYTES = 16 << 20


class FileReadError(OSError):
    """A file that cannot be read: `filename` names it, `strerror` says why; ``str()`` says both."""

    def __init__(self, name: str, reason: str, errno: int = 0) -> None:
        super().__init__(errno, reason, name)

    def __str__(self) -> str:
        return f"{self.filename}: {self.strerror}"


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return "a device"
    return "a socket or other special file"


def read_bytes(path: str | os.PathLike[str], max_bytes: int = MAX_DATA_FILE_BYTES) -> bytes:
    """The bytes of the regular file `path`, if it holds at most `max_bytes`. Raises
    `FileReadError` (an `OSError`) naming the file and why: cannot open, not a regular file, or
    larger than the limit (the limit is stated)."""
    name = os.fspath(path)
    # O_NONBLOCK: opening a FIFO would otherwise wait for a writer; the type is checked on the
    # open descriptor, so the file cannot be swapped between the check and the read. A file that
    # cannot be opened raises the usual OSError (FileNotFoundError, PermissionError, ...).
    fd = os.open(name, os.O_RDONLY | getattr(os, "O_NONBLOCK", 0))
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise FileReadError(name, f"is {_kind(st.st_mode)}, not a regular file")
        if st.st_size > max_bytes:
            raise FileReadError(name, f"larger than {_size(max_bytes)}, the limit for this file")
        chunks, n = [], 0
        while n <= max_bytes:
            b = os.read(fd, min(1 << 20, max_bytes + 1 - n))
            if not b:
                break
            chunks.append(b)
            n += len(b)
        if n > max_bytes:
            raise FileReadError(name, f"larger than {_size(max_bytes)}, the limit for this file")
        return b"".join(chunks)
    finally:
        os.close(fd)


def read_text(path: str | os.PathLike[str], max_bytes: int = MAX_DATA_FILE_BYTES, errors: str = "strict") -> str:
    """The UTF-8 text of the regular file `path` (see `read_bytes`). With ``errors="strict"`` a
    file that is not UTF-8 raises `FileReadError` naming the byte."""
    data = read_bytes(path, max_bytes)
    try:
        return data.decode("utf-8", errors)
    except UnicodeDecodeError as e:
        raise FileReadError(os.fspath(path), f"not UTF-8 text ({e.reason} at byte {e.start})") from None


def _size(n: int) -> str:
    if n >= 1 << 20 and n % (1 << 20) == 0:
        return f"{n >> 20} MiB ({n} bytes)"
    return f"{n} bytes"


__all__ = ["MAX_CONFIG_FILE_BYTES", "MAX_DATA_FILE_BYTES", "FileReadError", "read_bytes", "read_text"]
