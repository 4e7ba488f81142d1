"""Failover through the proxy pair on the real kernel: how long a download stops when one of its
two paths dies mid-transfer, and what PHA-D's backup flag and its fail-safe do to that.

Network namespaces router (``mp-<pid>-fr``) and server (``mp-<pid>-fs``), joined by path A
(through a forwarding namespace) and path B (a veth pair). The router has one MPTCP endpoint per
path (ids 1 and 2, ``subflow``), so every connection has a subflow on each. In the router
namespace a plain-TCP client reads through ``mobipath-proxy router`` (SOCKS5) from a source behind
``mobipath-proxy server``, which sends at a fixed pace (``pace_mbps``, far below what a veth
carries, so the pace is what the surviving path has to carry). At ``kill_s`` path A dies: every
packet on A is dropped in the middle (``blackhole`` routes in the forwarding namespace, so both
ends see silent loss, as from a dead radio link, not a link or route event). The *outage* is the time from
the kill to the end of the last stall (a silence at the client of at least 0.1 s; the kernel may
stall the transfer several times, once per retransmission timeout on the dead subflow); from then
on it runs without a stall, over path B alone, the backlog first (``rate_after_mbps``: 0.5 s from
0.25 s after the outage). ``stalled_s`` adds up the stalls.

Conditions (``CONDITIONS``):

- ``regular``: both endpoints regular, no PHA-D;
- ``backup-left``: B flagged backup (what PHA-D does ahead of B's handover) through
  ``mobipath-proxy flags`` (PHA-D's fail-safe actuator), left so when A dies: the server must fall
  back to the backup subflow by itself;
- ``backup-failsafe``: the same, and at the kill the actuator is stopped (SIGTERM), which restores
  every endpoint regular at once (its fail-safe; PHA-D does the same when its fixes go stale) — the
  quickest the fail-safe can act, not PHA-D's ``stale_s`` later.

The veth RTT is well under a millisecond, so the retransmission timeout is Linux's minimum
(200 ms, TCP_RTO_MIN in include/net/tcp.h) and the outages are the kernel's own reaction times;
on a cellular path the RTO, and the outage, grow with the RTT. Needs root, ``ip`` and MPTCP.

Run: ``python -m mobipath.emulate.failover --repeats 10 [--json FILE]``.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import signal
import socket
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any, Optional

from .netns import EmulateError, InNetns, check_environment, delete_namespace, ip, ns_exec, sweep_stale

CONDITIONS = ("regular", "backup-left", "backup-failsafe")
PORT_SERVER = 7000
PORT_SOCKS = 1080
PORT_SOURCE = 9000


def _t_quantile_975(n: int) -> float:
    """Student's t 97.5 % quantile for n-1 degrees of freedom (table; normal beyond 30)."""
    table = {1: 12.706, 2: 4.303, 3: 3.182, 4: 2.776, 5: 2.571, 6: 2.447, 7: 2.365, 8: 2.306, 9: 2.262}
    table.update({10: 2.228, 11: 2.201, 12: 2.179, 13: 2.160, 14: 2.145, 15: 2.131, 19: 2.093, 29: 2.045})
    df = n - 1
    if df in table:
        return table[df]
    if df < 30:
        return table[max(k for k in table if k <= df)]
    return 1.96


def mean_ci(xs: list[float]) -> tuple[float, float]:
    """Mean and the half-width of its 95 % confidence interval (Student's t; 0 for one value)."""
    m = statistics.fmean(xs)
    if len(xs) < 2:
        return m, 0.0
    return m, _t_quantile_975(len(xs)) * statistics.stdev(xs) / math.sqrt(len(xs))


STALL_S = 0.1
"""A silence at the client at least this long is a stall (the paced source's bytes otherwise
arrive every few milliseconds)."""


def outage_s(arrivals: list[tuple[float, int]], kill_t: float) -> tuple[float, float]:
    """(outage, stalled): seconds from `kill_t` to the end of the last stall (a silence at the
    client of at least `STALL_S`) from the kill on, and the stalls' total length (`arrivals`:
    (time, bytes) at the client, in time order). After the outage the transfer runs without a
    stall to the end of the run. Both are 0 when nothing stalled, infinite when nothing arrived
    after the kill."""
    after = [kill_t] + [t for t, _ in arrivals if t > kill_t]
    if len(after) < 2:
        return math.inf, math.inf
    stalls = [(a, b) for a, b in zip(after, after[1:]) if b - a >= STALL_S]
    if not stalls:
        return 0.0, 0.0
    return stalls[-1][1] - kill_t, sum(b - a for a, b in stalls)


class _Topology:
    """The namespaces and their paths; removed on exit, also after an error.

    Path A runs through a forwarding namespace (``mp-<pid>-fm``) so that it can die silently: a
    blackhole route there drops what it would forward, and neither end's own routes change (a
    blackhole route at a sender fails its transmissions locally, which the kernel reacts to at
    once, unlike a dead radio link). Path B joins router and server directly."""

    def __init__(self) -> None:
        pid = os.getpid()
        self.r, self.m, self.s = f"mp-{pid}-fr", f"mp-{pid}-fm", f"mp-{pid}-fs"
        self.server_addr = "10.201.3.2"

    def __enter__(self) -> _Topology:
        sweep_stale()
        for ns in (self.r, self.m, self.s):
            ip("netns", "add", ns)
        tag = os.getpid() % 100000
        try:
            for ns in (self.r, self.m, self.s):
                ns_exec(ns, "ip", "link", "set", "lo", "up")
                for k in ("all", "default"):
                    ns_exec(ns, "sysctl", "-qw", f"net.ipv4.conf.{k}.rp_filter=0")

            def veth(a_ns: str, a_dev: str, a_addr: str, b_ns: str, b_dev: str, b_addr: str) -> None:
                ip("link", "add", a_dev, "netns", a_ns, "type", "veth", "peer", "name", b_dev, "netns", b_ns)
                for ns, dev, addr in ((a_ns, a_dev, a_addr), (b_ns, b_dev, b_addr)):
                    ns_exec(ns, "sysctl", "-qw", f"net.ipv4.conf.{dev}.rp_filter=0")
                    ns_exec(ns, "ip", "addr", "add", addr, "dev", dev)
                    ns_exec(ns, "ip", "link", "set", dev, "up")

            ra, ma1, ma2, sa = f"fra{tag}", f"fma{tag}", f"fmb{tag}", f"fsa{tag}"
            rb, sb = f"frb{tag}", f"fsb{tag}"
            veth(self.r, ra, "10.201.1.1/24", self.m, ma1, "10.201.1.254/24")
            veth(self.m, ma2, "10.201.3.254/24", self.s, sa, "10.201.3.2/24")
            veth(self.r, rb, "10.201.2.1/24", self.s, sb, "10.201.2.2/24")
            ns_exec(self.m, "sysctl", "-qw", "net.ipv4.ip_forward=1")
            ns_exec(self.s, "ip", "route", "add", "10.201.1.0/24", "via", "10.201.3.254")
            # Each router address leaves by its own path (source routing, as on a router with
            # one modem per operator).
            ns_exec(self.r, "ip", "route", "add", "default", "via", "10.201.1.254", "table", "101")
            ns_exec(self.r, "ip", "route", "add", "default", "dev", rb, "table", "102")
            ns_exec(self.r, "ip", "route", "add", "10.201.3.0/24", "via", "10.201.1.254")
            for n in (1, 2):
                ns_exec(self.r, "ip", "rule", "add", "from", f"10.201.{n}.1", "table", str(100 + n))
            ns_exec(self.r, "ip", "mptcp", "endpoint", "add", "10.201.1.1", "dev", ra, "id", "1", "subflow")
            ns_exec(self.r, "ip", "mptcp", "endpoint", "add", "10.201.2.1", "dev", rb, "id", "2", "subflow")
            for ns in (self.r, self.s):
                ns_exec(ns, "ip", "mptcp", "limits", "set", "subflows", "4", "add_addr_accepted", "4")
                ns_exec(ns, "sysctl", "-qw", "net.mptcp.enabled=1")
        except BaseException:
            self.__exit__()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        for ns in (self.r, self.m, self.s):
            delete_namespace(ns)

    def kill_path_a(self) -> None:
        """Path A drops everything from now on, silently, in both directions."""
        ns_exec(self.m, "ip", "route", "add", "blackhole", "10.201.1.1/32")
        ns_exec(self.m, "ip", "route", "add", "blackhole", "10.201.3.2/32")


def _proxy() -> list[str]:
    from ..router.proxy import proxy_command

    return proxy_command()


def _source(ns: str, pace_bps: float, stop: threading.Event, ready: threading.Event) -> None:
    """In the server namespace: accepts one connection on 127.0.0.1:PORT_SOURCE and sends at
    `pace_bps` until `stop`."""
    with InNetns(ns):
        lsock = socket.socket()
    lsock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lsock.bind(("127.0.0.1", PORT_SOURCE))
    lsock.listen(1)
    lsock.settimeout(10)
    ready.set()
    try:
        c, _ = lsock.accept()
    except OSError:
        return
    chunk = b"\0" * 65536
    t0 = time.monotonic()
    sent = 0
    c.settimeout(0.5)
    with c, lsock:
        while not stop.is_set():
            due = int((time.monotonic() - t0) * pace_bps / 8) - sent
            while due > 0 and not stop.is_set():
                try:
                    n = c.send(chunk[: min(due, len(chunk))])
                except socket.timeout:
                    break
                except OSError:
                    return
                sent += n
                due -= n
            time.sleep(0.002)


def run_once(condition: str, pace_mbps: float = 40.0, kill_s: float = 1.5, after_s: float = 3.0) -> dict[str, Any]:
    """One transfer with path A killed at `kill_s`; returns the outage and what was seen."""
    if condition not in CONDITIONS:
        raise EmulateError(f"condition must be one of {', '.join(CONDITIONS)}, got {condition!r}")
    for name, v, lo, hi in (
        ("pace_mbps", pace_mbps, 1, 1000),
        ("kill_s", kill_s, 0.5, 30),
        ("after_s", after_s, 1, 60),
    ):
        if not (lo <= v <= hi):
            raise EmulateError(f"{name} must be in [{lo}, {hi}], got {v}")
    check_environment()
    proxy = _proxy()
    pace_bps = pace_mbps * 1e6
    procs: list[subprocess.Popen] = []
    stop = threading.Event()
    tmpdir = tempfile.TemporaryDirectory(prefix="mobipath-failover-")
    with tmpdir as tmp, _Topology() as topo, contextlib.ExitStack() as logs:
        d = Path(tmp)
        key = os.urandom(32).hex()
        (d / "server.toml").write_text(
            f'[server]\nlisten = "0.0.0.0:{PORT_SERVER}"\nkey = "{key}"\n'
            f'[[server.allow]]\ncidr = "127.0.0.1/32"\nports = ["{PORT_SOURCE}"]\n[limits]\nshutdown_grace_s = 0\n'
        )
        (d / "router.toml").write_text(
            f'[router]\nserver = "{topo.server_addr}:{PORT_SERVER}"\nkey = "{key}"\n'
            f'socks_listen = "127.0.0.1:{PORT_SOCKS}"\n'
            "[limits]\nshutdown_grace_s = 0\n"
        )
        try:
            procs.append(
                subprocess.Popen(
                    ["ip", "netns", "exec", topo.s, *proxy, "server", "--config", str(d / "server.toml")],
                    stdout=subprocess.DEVNULL,
                    stderr=logs.enter_context(open(d / "server.log", "w")),
                )
            )
            procs.append(
                subprocess.Popen(
                    ["ip", "netns", "exec", topo.r, *proxy, "router", "--config", str(d / "router.toml")],
                    stdout=subprocess.DEVNULL,
                    stderr=logs.enter_context(open(d / "router.log", "w")),
                )
            )
            flags = None
            if condition != "regular":
                flags = subprocess.Popen(
                    ["ip", "netns", "exec", topo.r, *proxy, "flags", "--endpoints", "1,2", "--min-interval-ms", "0"],
                    stdin=subprocess.PIPE,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.DEVNULL,
                    text=True,
                )
                procs.append(flags)
            ready = threading.Event()
            src = threading.Thread(target=_source, args=(topo.s, pace_bps, stop, ready), daemon=True)
            src.start()
            if not ready.wait(20):
                raise EmulateError("the source in the server namespace did not start listening")
            c = _socks_connect(topo.r, topo.s)
            if flags is not None:
                assert flags.stdin is not None and flags.stdout is not None
                flags.stdin.write("backup 2\n")
                flags.stdin.flush()
                # Its first line reports the restore at start, the next one the change.
                seen = []
                for _ in range(3):
                    line = _readline(flags, 5.0).replace(" ", "")
                    seen.append(line)
                    if '"endpoint_id":2' in line and '"backup":true' in line:
                        break
                else:
                    raise EmulateError(f"`mobipath-proxy flags` did not set endpoint 2 backup: {seen!r}")
            arrivals: list[tuple[float, int]] = []
            t0 = time.monotonic()
            killed_at = None
            c.settimeout(0.05)
            subflows_before = _subflows(topo.r)
            while time.monotonic() - t0 < kill_s + after_s:
                if killed_at is None and time.monotonic() - t0 >= kill_s:
                    topo.kill_path_a()
                    killed_at = time.monotonic()
                    if condition == "backup-failsafe" and flags is not None:
                        flags.send_signal(signal.SIGTERM)
                try:
                    b = c.recv(1 << 20)
                except socket.timeout:
                    continue
                if not b:
                    break
                arrivals.append((time.monotonic(), len(b)))
            c.close()
            assert killed_at is not None
            before = [a for a in arrivals if killed_at - 1.0 <= a[0] < killed_at]
            rate_before = sum(n for _, n in before) * 8 / 1e6
            out, gap = outage_s(arrivals, killed_at)
            # The rate over path B alone: 0.5 s from 0.25 s after the outage (past the backlog).
            w0 = killed_at + out + 0.25
            resumed = [n for t, n in arrivals if w0 <= t < w0 + 0.5]
            full = bool(arrivals) and arrivals[-1][0] >= w0 + 0.45
            rate_after = sum(resumed) * 8 / 1e6 / 0.5 if full else None
            end = killed_at + after_s
            rate_end = sum(n for t, n in arrivals if end - 0.5 <= t < end) * 8 / 1e6 / 0.5
            return {
                "stalled_s": gap,
                "rate_after_mbps": rate_after,
                "rate_end_mbps": rate_end,
                "condition": condition,
                "outage_s": out if math.isfinite(out) else None,
                "pace_mbps": pace_mbps,
                "rate_before_mbps": rate_before,
                "subflows_before": subflows_before,
                "bytes": sum(n for _, n in arrivals),
            }
        except EmulateError as e:
            logs.close()
            tails = {n: (d / f"{n}.log").read_text()[-600:] for n in ("server", "router")}
            raise EmulateError(f"{e}\n--- server side:\n{tails['server']}--- router side:\n{tails['router']}") from None
        finally:
            stop.set()
            for p in procs:
                if p.poll() is None:
                    p.send_signal(signal.SIGTERM)
            for p in procs:
                try:
                    p.wait(5)
                except subprocess.TimeoutExpired:
                    p.kill()
                    p.wait()


def _readline(p: subprocess.Popen, timeout: float) -> str:
    out: list[str] = []

    def rd() -> None:
        assert p.stdout is not None
        out.append(p.stdout.readline())

    t = threading.Thread(target=rd, daemon=True)
    t.start()
    t.join(timeout)
    return out[0] if out else ""


def _subflows(ns: str) -> int:
    """Established TCP subflows of MPTCP connections to the server port in `ns`."""
    r = ns_exec(ns, "ss", "-Htn", "state", "established", f"( dport = :{PORT_SERVER} )", check=False)
    return len([x for x in r.stdout.splitlines() if x.strip()])


def _connect_when_listening(ns: str, port: int, what: str) -> socket.socket:
    """A TCP connection to 127.0.0.1:`port` in `ns`, retried for 20 s while nothing listens
    (a proxy started through Python takes a moment on a busy machine)."""
    deadline = time.monotonic() + 20
    while True:
        with InNetns(ns):
            s = socket.socket()
        s.settimeout(5)
        try:
            s.connect(("127.0.0.1", port))
            return s
        except OSError:
            s.close()
            if time.monotonic() > deadline:
                raise EmulateError(f"the {what} did not start listening") from None
            time.sleep(0.05)


def _socks_connect(r_ns: str, s_ns: str) -> socket.socket:
    """A SOCKS5 CONNECT from the router namespace through the router proxy to the source, once
    both proxies listen."""
    _connect_when_listening(s_ns, PORT_SERVER, "server proxy").close()
    s = _connect_when_listening(r_ns, PORT_SOCKS, "router proxy")
    s.sendall(b"\x05\x01\x00")
    if s.recv(2) != b"\x05\x00":
        raise EmulateError("SOCKS5 method refused")
    s.sendall(b"\x05\x01\x00\x01" + socket.inet_aton("127.0.0.1") + struct.pack(">H", PORT_SOURCE))
    rep = b""
    while len(rep) < 10:
        b = s.recv(10 - len(rep))
        if not b:
            break
        rep += b
    if len(rep) < 10 or rep[1] != 0:
        raise EmulateError(f"SOCKS5 CONNECT refused: {rep!r}")
    # Both subflows up before the measurement starts.
    deadline = time.monotonic() + 5
    while _subflows(r_ns) < 2 and time.monotonic() < deadline:
        time.sleep(0.05)
    return s


def measure(repeats: int, conditions: tuple[str, ...] = CONDITIONS, **kw: Any) -> dict[str, Any]:
    """`repeats` runs of each condition, interleaved; per condition the outages and mean ± 95 % CI."""
    if not (1 <= repeats <= 100):
        raise EmulateError(f"repeats must be in [1, 100], got {repeats}")
    runs: dict[str, list[dict[str, Any]]] = {c: [] for c in conditions}
    for _ in range(repeats):
        for c in conditions:
            runs[c].append(run_once(c, **kw))
    summary = {}
    for c, rs in runs.items():
        row: dict[str, Any] = {"n": len(rs)}
        for key in ("outage_s", "stalled_s", "rate_after_mbps"):
            xs = [r[key] for r in rs if r[key] is not None]
            m, h = mean_ci(xs) if xs else (float("nan"), float("nan"))
            row[key] = {"mean": m, "ci95": h, "n": len(xs)}
        summary[c] = row
    return {"summary": summary, "runs": runs}


def main(argv: Optional[list[str]] = None) -> int:
    ap = argparse.ArgumentParser(prog="python -m mobipath.emulate.failover", description=__doc__.split("\n\n")[0])
    ap.add_argument("--repeats", type=int, default=10)
    ap.add_argument("--pace-mbps", type=float, default=40.0)
    ap.add_argument("--condition", action="append", choices=CONDITIONS, help="default: all three")
    ap.add_argument("--json", type=Path, help="also write every run and the summary here")
    a = ap.parse_args(argv)
    try:
        res = measure(a.repeats, tuple(a.condition or CONDITIONS), pace_mbps=a.pace_mbps)
    except EmulateError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    print(f"{a.repeats} runs per condition; mean ± 95 % CI (Student's t)")
    for c, row in res["summary"].items():
        o, g, r = row["outage_s"], row["stalled_s"], row["rate_after_mbps"]
        print(
            f"{c:16s} outage {o['mean']:.3f} ± {o['ci95']:.3f} s (resumed in {o['n']}), "
            f"stalled {g['mean']:.3f} ± {g['ci95']:.3f} s, "
            f"then {r['mean']:.1f} ± {r['ci95']:.1f} Mbit/s"
        )
    if a.json:
        a.json.write_text(json.dumps(res, indent=1))
    return 0


if __name__ == "__main__":
    with contextlib.suppress(KeyboardInterrupt):
        sys.exit(main())
