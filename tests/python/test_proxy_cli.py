"""`mobipath router proxy` and `mobipath proxy serve|keygen`: the Python entry points exec the
mobipath-proxy binary (crates/proxy; its behaviour is tested by `cargo test -p mobipath-proxy`,
on the real kernel in crates/proxy/tests/netns.rs). Here: the copy shipped inside the extension
runs, config errors come back naming the field with exit 2, and SIGTERM sent to the `mobipath`
process reaches the proxy (exec, not a child) and stops it with exit 0."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

KEY = "00112233445566778899aabbccddeeff"


def mobipath(*args: str, **kw) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "mobipath", *args], capture_output=True, text=True, timeout=60, **kw)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_extension_ships_the_proxy():
    r = subprocess.run(
        [sys.executable, "-m", "mobipath.router.proxy_process", "--version"], capture_output=True, text=True, timeout=60
    )
    assert r.returncode == 0, r.stderr
    assert r.stdout.startswith("mobipath-proxy ")


def test_keygen_prints_a_fresh_key():
    a, b = mobipath("proxy", "keygen"), mobipath("proxy", "keygen")
    assert a.returncode == 0, a.stderr
    assert re.fullmatch(r"[0-9a-f]{64}\n", a.stdout)
    assert a.stdout != b.stdout


def test_check_accepts_a_valid_config(tmp_path: Path):
    (tmp_path / "key").write_text(KEY + "\n")
    cfg = tmp_path / "router.toml"
    cfg.write_text('[router]\nserver = "192.0.2.1:7000"\nkey_file = "key"\nsocks_listen = "127.0.0.1:1080"\n')
    r = mobipath("router", "proxy", "--config", str(cfg), "--check")
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


@pytest.mark.parametrize(
    "text,field,allowed",
    [
        (
            f'[server]\nlisten = "0.0.0.0:7000"\nkey = "{KEY}"\n[limits]\nbuffer_bytes = 10\n',
            "limits.buffer_bytes",
            "1024..=16777216",
        ),
        (
            f'[server]\nlisten = "0.0.0.0:7000"\nkey = "{KEY}"\n[[server.allow]]\ncidr = "10.0.0.0/8"\nports = ["0"]\n',
            "server.allow[0].ports[0]",
            "1..=65535",
        ),
        ('[server]\nlisten = "0.0.0.0:7000"\nkey = "abcd"\n', "server.key", "32..=128 hex digits"),
    ],
)
def test_check_names_the_bad_field(tmp_path: Path, text: str, field: str, allowed: str):
    cfg = tmp_path / "server.toml"
    cfg.write_text(text)
    r = mobipath("proxy", "serve", "--config", str(cfg), "--check")
    assert r.returncode == 2, r.stderr
    assert f"{field}:" in r.stderr and allowed in r.stderr, r.stderr


def test_router_side_needs_its_section(tmp_path: Path):
    cfg = tmp_path / "server-only.toml"
    cfg.write_text(f'[server]\nlisten = "0.0.0.0:7000"\nkey = "{KEY}"\n')
    r = mobipath("router", "proxy", "--config", str(cfg), "--check")
    assert r.returncode == 2 and "[router]" in r.stderr, r.stderr


@pytest.mark.skipif(not Path("/proc/sys/net/mptcp/enabled").exists(), reason="no MPTCP in this kernel")
def test_serve_runs_and_stops_on_sigterm(tmp_path: Path):
    port, mport = free_port(), free_port()
    cfg = tmp_path / "server.toml"
    cfg.write_text(
        f'[server]\nlisten = "127.0.0.1:{port}"\nkey = "{KEY}"\n[metrics]\nlisten = "127.0.0.1:{mport}"\n'
        "[limits]\nshutdown_grace_s = 1\n"
    )
    p = subprocess.Popen(
        [sys.executable, "-m", "mobipath", "proxy", "serve", "--config", str(cfg)],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                with socket.create_connection(("127.0.0.1", mport), timeout=1) as s:
                    s.sendall(b"GET /metrics HTTP/1.1\r\n\r\n")
                    assert b"200 OK" in s.recv(4096)
                break
            except OSError:
                assert p.poll() is None, p.communicate()[1]
                assert time.monotonic() < deadline, "the proxy did not start listening"
                time.sleep(0.1)
        os.kill(p.pid, signal.SIGTERM)
        _, err = p.communicate(timeout=10)
        assert p.returncode == 0, err
        assert "SIGTERM" in err
    finally:
        if p.poll() is None:
            p.kill()
            p.wait()


def _pha_d_files(tmp_path: Path, table_row: str = "A,1000,1100,1") -> None:
    (tmp_path / "table.csv").write_text(
        f"# mobipath handover table v2\noperator,start_m,end_m,count\n{table_row}\nB,5000,5100,1\n"
    )
    (tmp_path / "track.csv").write_text("lat,lon\n37.0,127.0\n37.0,127.1\n")


PHA_D = (
    '[pha_d]\ngps = "nmea-udp:127.0.0.1:10110"\ntable = "table.csv"\ntrack = "track.csv"\n'
    'subflows = [{ operator = "A", endpoint = 1 }, { operator = "B", endpoint = 2 }]\n'
)


def test_router_pha_d_config_runs_the_rust_daemon_check(tmp_path: Path):
    """`mobipath router pha-d --config FILE --check` validates [pha_d] in mobipath-proxy."""
    _pha_d_files(tmp_path)
    cfg = tmp_path / "router.toml"
    cfg.write_text(PHA_D)
    r = mobipath("router", "pha-d", "--config", str(cfg), "--check")
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


@pytest.mark.parametrize(
    "row,extra,want",
    [
        ("A,1000,x,1", "", "table.csv: line 3: end_m = x: must be a finite number"),
        ("A,1000,1100,1", 'policy = "fastest"\n', "pha_d.policy"),
        ("A,1000,1100,1", "stale_s = 0.0\n", "pha_d.stale_s: 0 is out of range [0.1, 60]"),
    ],
)
def test_router_pha_d_config_errors_name_file_line_field(tmp_path: Path, row: str, extra: str, want: str):
    _pha_d_files(tmp_path, row)
    cfg = tmp_path / "router.toml"
    cfg.write_text(PHA_D + extra)
    r = mobipath("router", "pha-d", "--config", str(cfg), "--check")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert want in r.stderr, r.stderr


@pytest.mark.parametrize(
    "subflows,gps,want",
    [
        (
            '[{ operator = "A", endpoint = 1 }, { operator = "Z", endpoint = 2 }]',
            "nmea-udp:127.0.0.1:10110",
            "pha_d.subflows[1].operator: `Z` has no row in the handover table",
        ),
        (
            '[{ operator = "A", endpoint = 1 }, { operator = "A", endpoint = 2 }]',
            "nmea-udp:127.0.0.1:10110",
            "pha_d.subflows[1].operator: `A` is also subflows[0]'s: one subflow per operator",
        ),
        (
            '[{ operator = "A", endpoint = 1 }, { operator = "B", endpoint = 2 }]',
            "nmea-file:/nonexistent",
            "pha_d.gps: /nonexistent: No such file",
        ),
    ],
)
def test_router_pha_d_check_refuses_what_cannot_work(tmp_path: Path, subflows: str, gps: str, want: str):
    _pha_d_files(tmp_path)
    cfg = tmp_path / "router.toml"
    cfg.write_text(f'[pha_d]\ngps = "{gps}"\ntable = "table.csv"\ntrack = "track.csv"\nsubflows = {subflows}\n')
    r = mobipath("router", "pha-d", "--config", str(cfg), "--check")
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert want in r.stderr, r.stderr


@pytest.mark.parametrize(
    "router,want",
    [
        ('server = "127.0.0.1:0"\nkey = "KEY"', "router.server: `127.0.0.1:0`: the server proxy's address and port"),
        ('server = "192.0.2.1:7000"\nkey_file = "/dev/zero"', "router.key_file: cannot read /dev/zero: is a device"),
    ],
)
def test_router_proxy_check_refuses_an_unreachable_server_and_reads_the_key_bounded(tmp_path, router, want):
    cfg = tmp_path / "router.toml"
    cfg.write_text(f'[router]\n{router.replace("KEY", KEY)}\nsocks_listen = "127.0.0.1:1080"\n')
    r = mobipath("router", "proxy", "--config", str(cfg), "--check")  # 60 s timeout: /dev/zero hung before
    assert r.returncode == 2, (r.stdout, r.stderr)
    assert want in r.stderr, r.stderr


@pytest.mark.parametrize(
    "trace,want",
    [
        ("time_s,position_m\n0,10\n0.5,20\n", None),
        ("time_s,position_m\n", "replay.csv: no fixes"),
        ("time_s,position_m\n1,2\n0,3\n", "replay.csv: line 3: time_s = 0"),
        (None, "replay.csv: No such file"),
    ],
)
def test_router_pha_d_check_reads_the_replay_trace(tmp_path: Path, trace, want):
    """--check validates a replay source's trace too (the daemon reads it only when the source
    starts, and then fails safe and retries): a good trace is ok, a bad or missing one is named."""
    _pha_d_files(tmp_path)
    if trace is not None:
        (tmp_path / "replay.csv").write_text(trace)
    cfg = tmp_path / "router.toml"
    cfg.write_text(PHA_D.replace('gps = "nmea-udp:127.0.0.1:10110"', 'gps = "replay:replay.csv"'))
    r = mobipath("router", "pha-d", "--config", str(cfg), "--check")
    if want is None:
        assert r.returncode == 0 and "ok" in r.stdout, (r.stdout, r.stderr)
    else:
        assert r.returncode == 2, (r.stdout, r.stderr)
        assert "pha_d.gps" in r.stderr and want in r.stderr, r.stderr


def test_router_pha_d_needs_config_or_the_python_options():
    r = mobipath("router", "pha-d")
    assert r.returncode == 2
    assert "--config" in r.stderr and "--table" in r.stderr


def test_router_pha_d_config_execs_the_daemon(tmp_path: Path):
    """Without --check, `mobipath router pha-d --config` runs mobipath-proxy pha-d itself: here it
    stops at start-up because endpoint 200 does not exist (exit 1, the field named)."""
    _pha_d_files(tmp_path)
    cfg = tmp_path / "router.toml"
    cfg.write_text(PHA_D.replace("endpoint = 2", "endpoint = 200"))
    r = mobipath("router", "pha-d", "--config", str(cfg))
    assert r.returncode == 1, (r.stdout, r.stderr)
    assert "pha_d" in r.stderr, r.stderr  # no endpoint 200, or no netlink/MPTCP on this kernel
