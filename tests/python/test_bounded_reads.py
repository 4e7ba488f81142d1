"""Every file a command reads is read bounded, and only if it is a regular file: `/dev/zero`, a
FIFO or a directory is refused at once with a clear reason (it used to be read until memory ran
out, or to wait forever for a writer)."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest
from conftest import run_cli
from mobipath import files

GOOD = """duration_s = 1
[[links]]
name = "l"
TRACE
delay_ms = 10
[[paths]]
name = "p"
links = ["l"]
[[flows]]
name = "f"
path = "p"
cc = "cubic"
traffic = { kind = "bulk" }
"""


def test_the_reader_refuses_devices_fifos_directories_and_large_files(tmp_path: Path):
    with pytest.raises(files.FileReadError, match="is a device, not a regular file"):
        files.read_bytes("/dev/zero")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    with pytest.raises(files.FileReadError, match="is a FIFO"):
        files.read_text(fifo)
    with pytest.raises(files.FileReadError, match="is a directory"):
        files.read_text(tmp_path)
    big = tmp_path / "big"
    big.write_bytes(b"a" * 5000)
    with pytest.raises(files.FileReadError, match="larger than 4096 bytes, the limit for this file") as e:
        files.read_bytes(big, 4096)
    assert str(e.value).startswith(f"{big}: ")
    assert files.read_bytes(big, 5000) == b"a" * 5000
    with pytest.raises(FileNotFoundError):
        files.read_text(tmp_path / "missing")


def test_validate_refuses_a_device_or_fifo_at_once(tmp_path: Path):
    fifo = tmp_path / "fifo.toml"
    os.mkfifo(fifo)
    t0 = time.monotonic()
    for name, why in (("/dev/zero", "is a device"), (str(fifo), "is a FIFO")):
        proc = run_cli(["validate", name], timeout=60)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert f"{name}: cannot read: {why}, not a regular file" in proc.stdout, proc.stdout + proc.stderr
        assert "Traceback" not in proc.stdout + proc.stderr
    assert time.monotonic() - t0 < 30


def test_a_trace_of_dev_zero_is_refused_naming_it(tmp_path: Path):
    sc = tmp_path / "s.toml"
    sc.write_text(GOOD.replace("TRACE", 'trace = { format = "mahimahi", file = "/dev/zero" }'))
    proc = run_cli(["validate", sc], timeout=60)
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "links[0].trace.file = /dev/zero" in proc.stdout, proc.stdout
    assert "is a device, not a regular file" in proc.stdout, proc.stdout


def test_learn_recorded_refuses_a_device_as_a_gps_log(tmp_path: Path):
    track = tmp_path / "track.csv"
    track.write_text("lat,lon\n37.0,127.0\n37.0,127.2\n")
    log = tmp_path / "run1.csv"
    log.write_text("operator,start,end\nA,1714564810,1714564810.04\n")
    args = ["hotable", "learn-recorded", "--track", track, "--gps", "/dev/zero", "--handovers", log]
    proc = run_cli([*args, "-o", tmp_path / "t.csv"], timeout=60)
    assert proc.returncode != 0, proc.stdout + proc.stderr
    assert "/dev/zero" in proc.stdout + proc.stderr and "is a device" in proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    assert not (tmp_path / "t.csv").exists()
