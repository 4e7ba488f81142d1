"""The emulated train end to end through the real proxy pair: ``mobipath emulate --proxy``.

::

    mp-<pid>-l<tag> (LAN client, plain TCP)     10.79.0.2 ── veth ── 10.79.0.1 SOCKS5
    router namespace: mobipath-proxy router (+ PHA-D replaying the train's GPS fixes)
        endpoint k+1 = 10.77.<k+1>.x ── emulated path k (mobipath-emu, the train's handovers) ──┐
    server namespace: mobipath-proxy server (PSK auth, allow-list: the destination only)  ◄──┘
    mp-<pid>-d<tag> (destination, plain TCP)     10.80.0.2 ── veth ── 10.80.0.1

The two emulated-path namespaces are `Topology`'s (``mptcp=False``: the MPTCP endpoints, limits and
source rules are set here for whichever side holds the router). The data always takes the
emulated links' forward direction, as in ``mobipath emulate`` and in the simulator, where a path
runs from the data sender: for a download the server proxy sits on side a (the links' senders)
and the router on side b; for an upload the router sits on side a. So an upload crosses the
scenario's links as written, not an uplink model (the simulator's equivalent does the same).

PHA-D runs inside the router proxy (``[pha_d]``, crates/proxy/src/phad) with ``gps =
"replay:FILE"``: FILE holds the GPS fixes the simulator's PHA-D sees for this seed
(``_core.effective_links``'s ``gps``), shifted by ``LEAD_IN_S`` after one fix at the train's
starting position at replay time 0 (the train standing for ``LEAD_IN_S``, far from any handover
range; it pins the replay's origin); the emulator's clock (time zero
of the handovers) starts ``LEAD_IN_S`` after PHA-D's first line (its start-up restore, printed as
the replay starts), so the replay and the handovers share one time line to within a pipe's
latency and a scheduling delay (ms). The endpoints' flags are read from the kernel every ``POLL_S`` (``ip mptcp
endpoint show`` in the router namespace) and recorded with their times.

The in-order goodput is what the plain-TCP receiver (the LAN client for a download, the
destination for an upload) reads from its socket, binned from the emulator's time zero; the
handover metric follows docs/metrics.md ("throughput during handovers"): the 1 s windows,
aligned to whole seconds, that contain a handover's start (`window_goodput`, as
crates/sim/src/engine/report.rs computes it).
"""

from __future__ import annotations

import json
import os
import re
import secrets
import socket
import statistics
import struct
import subprocess
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Optional

from .netns import EmulateError, InNetns, check_environment, delete_namespace, ip, netstat_counters, sweep_stale, sysctl
from .plan import DEFAULT_MAX_DURATION_S, Plan, ensure_cc, plan
from .topology import MAX_PATHS, Topology

#: PHA-D policies `--proxy` runs ("off" = no `[pha_d]`; the others are crates/proxy's `pha_d.policy`).
POLICIES = ("off", "paper", "queue-aware", "resend")
DIRECTIONS = ("download", "upload")
#: Seconds between the router proxy's start and the emulator's time zero (the replay is shifted by it).
LEAD_IN_S = 0.5
#: Period of the kernel endpoint-flag observation.
POLL_S = 0.05
LAN_ROUTER, LAN_CLIENT = "10.79.0.1", "10.79.0.2"
DST_SERVER, DST_HOST = "10.80.0.1", "10.80.0.2"
SOCKS_PORT, PROXY_PORT, DST_PORT, METRICS_PORT = 1080, 7000, 5001, 9464


def window_goodput(
    goodput_mbps: list[float], bin_s: float, handover_starts: list[float], start_s: float, duration_s: float
) -> tuple[Optional[float], Optional[float]]:
    """Mean goodput (Mbit/s) over the whole seconds that contain a handover start, and over the
    other whole seconds from ``ceil(start_s)`` on (docs/metrics.md; report.rs `window_goodput`)."""
    secs = int(duration_s + 1e-9)
    per_s = [0.0] * secs
    for i, v in enumerate(goodput_mbps):
        s = int(i * bin_s + 1e-9)
        if s < secs and v is not None:
            per_s[s] += v * bin_s  # Mbit in this bin
    windows = {int(h) for h in handover_starts}
    first = int(-(-start_s // 1))
    inside = [per_s[s] for s in range(first, secs) if s in windows]
    outside = [per_s[s] for s in range(first, secs) if s not in windows]
    return (statistics.fmean(inside) if inside else None, statistics.fmean(outside) if outside else None)


@dataclass
class ChainResult:
    """One run of the chain: one direction, one PHA-D policy."""

    direction: str
    policy: str
    seed: int
    duration_s: float
    bin_s: float
    bytes_received: int
    goodput_mbps: float
    series_mbps: list[float]
    handover_goodput_mbps: Optional[float]
    non_handover_goodput_mbps: Optional[float]
    handovers: list[dict[str, Any]]
    #: Kernel-observed endpoint flag changes: {"t_s", "endpoint_id", "backup"}.
    flags: list[dict[str, Any]] = field(default_factory=list)
    #: PHA-D's own JSON lines (MP_PRIO decisions, fail-safe) from the router proxy's stdout.
    pha_d: list[dict[str, Any]] = field(default_factory=list)
    netstat: dict[str, dict[str, int]] = field(default_factory=dict)
    #: How late the emulator's time zero came after the replay's (s): the replay/handover skew.
    clock_late_s: float = 0.0
    #: tcp_slow_start_after_idle turned off on both sides (`no_idle_restart`).
    no_idle_restart: bool = False
    load_average: tuple[float, float, float] = (0.0, 0.0, 0.0)

    def to_json(self) -> dict[str, Any]:
        d = dict(self.__dict__)
        d["load_average"] = list(self.load_average)
        return d


def _mptcp_router(ns: str, topo: Topology, side: str, server: str) -> None:
    """The router's endpoints (id k+1 on path k; `subflow` from path 1 on) and source rules."""
    sysctl(ns, "net.mptcp.enabled=1")
    ip("-n", ns, "mptcp", "endpoint", "flush")
    ip("-n", ns, "mptcp", "limits", "set", "subflows", str(MAX_PATHS), "add_addr_accepted", str(MAX_PATHS))
    for k in range(len(topo.paths)):
        addr, dev = topo.addr(side, k), topo.dev(side, k)
        ip("-n", ns, "mptcp", "endpoint", "add", addr, "dev", dev, "id", str(k + 1), *([] if k == 0 else ["subflow"]))
        if k > 0:
            ip("-n", ns, "rule", "add", "from", addr, "table", str(100 + k))
            ip("-n", ns, "route", "add", f"{server}/32", "dev", dev, "table", str(100 + k))


def _veth(ns_a: str, dev_a: str, addr_a: str, ns_b: str, dev_b: str, addr_b: str) -> None:
    ip("-n", ns_a, "link", "add", dev_a, "type", "veth", "peer", "name", dev_b, "netns", ns_b)
    for ns, dev, addr in ((ns_a, dev_a, addr_a), (ns_b, dev_b, addr_b)):
        ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
        ip("-n", ns, "link", "set", dev, "up")


def operators_of_paths(p: Plan) -> list[str]:
    """Operator name of each path (the operator whose handovers its link follows, `hst.links`)."""
    hst = p.resolved_scenario.get("hst") or {}
    ops = [o.get("name") for o in (hst.get("radio") or {}).get("operators", [])]
    links = list(hst.get("links") or [])
    out = []
    for path in p.paths:
        names = [ln["name"] for ln in path["links"]]
        j = next((i for i, ln in enumerate(links) if ln in names), None)
        if j is None or j >= len(ops) or not ops[j]:
            raise EmulateError(
                f"path {path['name']!r} follows no operator of [hst]; --proxy needs every path on a train link"
            )
        out.append(str(ops[j]))
    return out


def train_gps(p: Plan) -> list[tuple[float, float]]:
    """The GPS fixes the simulator's PHA-D sees in this run (time_s, position_m)."""
    from .. import _core

    eff = json.loads(_core.effective_links(p.scenario_text, p.scenario_file or "<string>", str(p.base_dir), p.seed))
    return [(float(t), float(x)) for t, x in eff.get("gps", [])]


def _router_config(
    tmp: Path, p: Plan, key: str, server: str, policy: str, table: Optional[Path], no_idle_restart: bool = False
) -> Path:
    lines = [
        "[router]",
        f'server = "{server}:{PROXY_PORT}"',
        f'key = "{key}"',
        f'socks_listen = "{LAN_ROUTER}:{SOCKS_PORT}"',
        f'congestion = "{p.cc}"',
        f'server_congestion = "{p.cc}"',
        "[limits]",
        "shutdown_grace_s = 1",
    ]
    if policy != "off":
        if table is None:
            raise EmulateError("hst.table: PHA-D needs the scenario's handover table")
        gps = train_gps(p)
        if len(gps) < 2:
            raise EmulateError("the scenario's train gives no GPS fixes; PHA-D cannot be replayed")
        # The replay's clock starts at its first line (gps.rs: fix i at start + t_i - t_0): a first
        # fix of the train at its starting position LEAD_IN_S before the ride pins that origin.
        (tmp / "gps.csv").write_text(
            "time_s,position_m\n" + f"0,{gps[0][1]:.6f}\n" + "".join(f"{t + LEAD_IN_S:.6f},{x:.6f}\n" for t, x in gps)
        )
        period_ms = statistics.median(b[0] - a[0] for a, b in zip(gps, gps[1:]) if b[0] > a[0]) * 1000.0
        subs = ", ".join(f'{{ operator = "{op}", endpoint = {k + 1} }}' for k, op in enumerate(operators_of_paths(p)))
        lines += [
            "[pha_d]",
            f'gps = "replay:{tmp / "gps.csv"}"',
            f'table = "{table}"',
            f"subflows = [{subs}]",
            f'policy = "{policy}"',
            f"gps_period_ms = {period_ms:g}",
            "min_interval_ms = 0",
            # The daemon re-sends B=0 under every policy by default; the simulator's
            # paper and queue-aware policies do not, its resend policy does.
            f"resend_b0 = {'true' if policy == 'resend' else 'false'}",
            # Decide at fixes only, as the simulator's PHA-D does (crates/sim/src/hst/phad.rs
            # `fire` runs at each fix), so both sides decide at the same instants.
            "tick_ms = 0",
            # On a download the queue sits in the server proxy: PHA-D reads its drain time
            # and RTT towards each uplink from the server's metrics endpoint (phad/peer.rs).
            f'peer_metrics = "http://{server}:{METRICS_PORT}/metrics"',
            "peer_poll_ms = 100",
        ]
        if no_idle_restart:
            lines.append('slow_start_after_idle = "off"')
    path = tmp / "router.toml"
    path.write_text("\n".join(lines) + "\n")
    return path


def _server_config(tmp: Path, key: str, server: str, no_idle_restart: bool = False) -> Path:
    path = tmp / "server.toml"
    path.write_text(
        "\n".join(
            [
                "[server]",
                f'listen = "{server}:{PROXY_PORT}"',
                f'key = "{key}"',
                # The server proxy sends the downloads: it turns the window restart after idle off in
                # its namespace while it serves (crates/proxy/src/idle.rs), as an operator would.
                *(['slow_start_after_idle = "off"'] if no_idle_restart else []),
                "[[server.allow]]",
                f'cidr = "{DST_HOST}/32"',
                f'ports = ["{DST_PORT}"]',
                "[limits]",
                "shutdown_grace_s = 1",
                # Read by the router's PHA-D (peer_metrics); reachable only inside the emulation.
                "[metrics]",
                f'listen = "{server}:{METRICS_PORT}"',
            ]
        )
        + "\n"
    )
    return path


def _in_ns(ns: str, cmd: list[str], **kw: Any) -> subprocess.Popen:
    return subprocess.Popen(["ip", "netns", "exec", ns, *cmd], **kw)


def _wait_listen(ns: str, addr: str, port: int, proc: subprocess.Popen, timeout_s: float = 10.0) -> None:
    t_end = time.monotonic() + timeout_s
    while time.monotonic() < t_end:
        if proc.poll() is not None:
            raise EmulateError(
                f"the proxy exited with status {proc.returncode}: {proc.stderr.read() if proc.stderr else ''}"
            )
        r = subprocess.run(
            ["ip", "netns", "exec", ns, "ss", "-Hltn", "sport", "=", f":{port}"], capture_output=True, text=True
        )
        if r.stdout.strip():
            return
        time.sleep(0.02)
    raise EmulateError(f"the proxy did not listen on {addr}:{port} within {timeout_s:g} s")


def _socks_connect(sock: socket.socket, host: str, port: int) -> None:
    """RFC 1928: no authentication, CONNECT to an IPv4 address."""
    sock.sendall(b"\x05\x01\x00")
    if sock.recv(2) != b"\x05\x00":
        raise EmulateError("SOCKS5: the router proxy refused the no-authentication method")
    sock.sendall(b"\x05\x01\x00\x01" + socket.inet_aton(host) + struct.pack("!H", port))
    rep = b""
    while len(rep) < 10:
        chunk = sock.recv(10 - len(rep))
        if not chunk:
            break
        rep += chunk
    if len(rep) < 2 or rep[1] != 0:
        raise EmulateError(f"SOCKS5: CONNECT to {host}:{port} refused (reply {rep[1] if len(rep) > 1 else None})")


def _flags(ns: str) -> dict[int, bool]:
    r = subprocess.run(["ip", "-n", ns, "mptcp", "endpoint", "show"], capture_output=True, text=True)
    out = {}
    for line in r.stdout.splitlines():
        m = re.search(r"\bid (\d+)", line)
        if m:
            out[int(m.group(1))] = " backup" in line
    return out


class _Proc:
    """A child process whose stdout lines are collected by a thread."""

    def __init__(self, ns: str, cmd: list[str]) -> None:
        self.p = _in_ns(ns, cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        self.lines: list[str] = []
        #: time.monotonic() at the arrival of each line of `lines`.
        self.arrivals: list[float] = []
        self.t = threading.Thread(target=self._read, daemon=True)
        self.t.start()

    def _read(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            self.arrivals.append(time.monotonic())
            self.lines.append(line.rstrip("\n"))

    def wait_line(self, needle: str, timeout_s: float) -> float:
        """Arrival time of the first stdout line containing `needle`."""
        t_end = time.monotonic() + timeout_s
        while time.monotonic() < t_end:
            for t, line in zip(list(self.arrivals), list(self.lines)):
                if needle in line:
                    return t
            if self.p.poll() is not None:
                break
            time.sleep(0.005)
        raise EmulateError(f"the router proxy did not print {needle!r} within {timeout_s:g} s (status {self.p.poll()})")

    def stop(self) -> str:
        if self.p.poll() is None:
            self.p.terminate()
        try:
            _, err = self.p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            self.p.kill()
            _, err = self.p.communicate()
        self.t.join(2)
        return err or ""


def run_chain(
    p: Plan,
    direction: str,
    policy: str,
    *,
    tag: str = "",
    duration_s: Optional[float] = None,
    no_idle_restart: bool = False,
) -> ChainResult:
    """One transfer through the chain (module doc). `p` from ``plan(..., proxy=True)``;
    `duration_s` cuts the ride short (the scenario's by default). `no_idle_restart`: PHA-D turns
    ``tcp_slow_start_after_idle`` off in the router's namespace (``slow_start_after_idle = "off"``)
    and the server proxy does the same in its namespace (`[server] slow_start_after_idle = "off"`)."""
    import dataclasses

    from ..router.proxy import proxy_command

    if duration_s is not None:
        p = dataclasses.replace(p, duration_s=min(p.duration_s, duration_s))

    if direction not in DIRECTIONS:
        raise EmulateError(f"direction = {direction!r}: one of {', '.join(DIRECTIONS)}")
    if policy not in POLICIES:
        raise EmulateError(f"pha_d policy = {policy!r}: one of {', '.join(POLICIES)}")
    try:
        proxy = proxy_command()
    except FileNotFoundError as e:
        raise EmulateError(str(e)) from None
    hst = p.resolved_scenario.get("hst") or {}
    table = (p.base_dir / hst["table"]).resolve() if hst.get("table") else None
    r_side, s_side = ("b", "a") if direction == "download" else ("a", "b")
    topo = Topology(
        paths=p.paths,
        seed=p.seed,
        duration_s=p.duration_s + LEAD_IN_S + 2.0,
        base_dir=p.base_dir,
        bin_ms=p.bin_s * 1000.0,
        tag=tag,
    )
    pid = os.getpid()
    ns_l, ns_d = f"mp-{pid}-l{tag}", f"mp-{pid}-d{tag}"
    procs: list[_Proc] = []
    created: list[str] = []
    with topo, tempfile.TemporaryDirectory(prefix="mobipath-chain-") as tmpname:
        try:
            tmp = Path(tmpname)
            ns_r = topo.ns_b if r_side == "b" else topo.ns_a
            ns_s = topo.ns_a if r_side == "b" else topo.ns_b
            server = topo.addr(s_side, 0)
            for ns in (ns_l, ns_d):
                ip("netns", "add", ns)
                created.append(ns)
                ip("-n", ns, "link", "set", "lo", "up")
                sysctl(ns, "net.ipv6.conf.all.disable_ipv6=1", "net.ipv6.conf.default.disable_ipv6=1")
            _veth(ns_r, "mpl0", LAN_ROUTER, ns_l, "mpl1", LAN_CLIENT)
            _veth(ns_s, "mpd0", DST_SERVER, ns_d, "mpd1", DST_HOST)
            _mptcp_router(ns_r, topo, r_side, server)
            sysctl(ns_s, "net.mptcp.enabled=1")
            ip("-n", ns_s, "mptcp", "limits", "set", "subflows", str(MAX_PATHS), "add_addr_accepted", str(MAX_PATHS))
            key = secrets.token_hex(32)
            srv = _Proc(ns_s, [*proxy, "server", "--config", str(_server_config(tmp, key, server, no_idle_restart))])
            procs.append(srv)
            _wait_listen(ns_s, server, PROXY_PORT, srv.p)
            before = {"router": netstat_counters(ns_r), "server": netstat_counters(ns_s)}
            rtr = _Proc(
                ns_r,
                [
                    *proxy,
                    "router",
                    "--config",
                    str(_router_config(tmp, p, key, server, policy, table, no_idle_restart)),
                ],
            )
            procs.append(rtr)
            _wait_listen(ns_r, LAN_ROUTER, SOCKS_PORT, rtr.p)
            # PHA-D starts its replay as it restores every endpoint at start (daemon.rs `run`),
            # the line it prints first: the replay's time zero, to within the pipe's latency.
            t_proxy = rtr.wait_line('"reason":"start"', 10.0) if policy != "off" else time.monotonic()
            # The destination's listener and the client's socket, made inside their namespaces.
            with InNetns(ns_d):
                lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            lst.bind((DST_HOST, DST_PORT))
            lst.listen(4)
            with InNetns(ns_l):
                cli = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            ensure_cc(p.cc)
            for s in (lst, cli):
                s.setsockopt(socket.IPPROTO_TCP, socket.TCP_CONGESTION, p.cc.encode())
            time.sleep(max(0.0, t_proxy + LEAD_IN_S - time.monotonic()))
            topo.start_clock()
            t0 = time.monotonic()
            clock_late_s = t0 - (t_proxy + LEAD_IN_S)
            cli.settimeout(10)
            cli.connect((LAN_ROUTER, SOCKS_PORT))
            _socks_connect(cli, DST_HOST, DST_PORT)
            lst.settimeout(10)
            dst, _ = lst.accept()
            sender, receiver = (dst, cli) if direction == "download" else (cli, dst)
            n_bins = int(round(p.duration_s / p.bin_s))
            bins = [0] * n_bins
            stop = threading.Event()
            flag_log: list[dict[str, Any]] = []

            def send() -> None:
                body = b"\0" * 65536
                sender.settimeout(0.5)
                while not stop.is_set():
                    try:
                        sender.send(body)
                    except socket.timeout:
                        continue
                    except OSError:
                        return

            def recv() -> None:
                buf = bytearray(262144)
                receiver.settimeout(0.2)
                while not stop.is_set():
                    try:
                        n = receiver.recv_into(buf)
                    except socket.timeout:
                        continue
                    except OSError:
                        return
                    if n == 0:
                        return
                    k = int((time.monotonic() - t0) / p.bin_s)
                    if 0 <= k < n_bins:
                        bins[k] += n

            def poll() -> None:
                last: dict[int, bool] = {}
                while not stop.is_set():
                    now = time.monotonic() - t0
                    for eid, b in sorted(_flags(ns_r).items()):
                        if last.get(eid) != b:
                            flag_log.append({"t_s": round(now, 3), "endpoint_id": eid, "backup": b})
                            last[eid] = b
                    time.sleep(POLL_S)

            threads = [threading.Thread(target=f, daemon=True) for f in (send, recv, poll)]
            for t in threads:
                t.start()
            time.sleep(max(0.0, t0 + p.duration_s - time.monotonic()))
            stop.set()
            for t in threads:
                t.join(3)
            for s in (sender, receiver, lst):
                s.close()
            after = {"router": netstat_counters(ns_r), "server": netstat_counters(ns_s)}
            netstat = {
                side: {
                    k: v - before[side].get(k, 0) for k, v in sorted(after[side].items()) if v != before[side].get(k, 0)
                }
                for side in after
            }
            for pr in reversed(procs):
                pr.stop()
            pha = []
            for line in rtr.lines:
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue
                if isinstance(obj, dict) and ("endpoint_id" in obj or "pha_d" in obj or "failsafe" in obj):
                    pha.append(obj)
            series = [b * 8 / p.bin_s / 1e6 for b in bins]
            starts = [float(h["start_s"]) for h in p.handovers if float(h["start_s"]) < p.duration_s]
            hin, hout = window_goodput(series, p.bin_s, starts, p.warmup_s, p.duration_s)
            total = sum(bins)
            return ChainResult(
                direction=direction,
                policy=policy,
                seed=p.seed,
                duration_s=p.duration_s,
                bin_s=p.bin_s,
                bytes_received=total,
                goodput_mbps=total * 8 / p.duration_s / 1e6,
                series_mbps=series,
                handover_goodput_mbps=hin,
                non_handover_goodput_mbps=hout,
                handovers=[h for h in p.handovers if float(h["start_s"]) < p.duration_s],
                flags=flag_log,
                pha_d=pha,
                netstat=netstat,
                clock_late_s=round(clock_late_s, 4),
                no_idle_restart=no_idle_restart,
                load_average=os.getloadavg(),
            )
        finally:
            for pr in procs:
                pr.stop()
            for ns in created:
                delete_namespace(ns)


def check(p: Plan) -> None:
    """What `--proxy` needs beyond `plan`: an MPTCP flow over train links."""
    if p.protocol != "mptcp":
        raise EmulateError("--proxy: the scenario's flow must be MPTCP (the proxy pair carries it over every path)")
    if not p.resolved_scenario.get("hst"):
        raise EmulateError("--proxy: the scenario needs an [hst] train (PHA-D replays its GPS fixes)")
    operators_of_paths(p)


# --------------------------------------------------------------------------- the simulator's side

#: The veth hops of the chain (LAN client ↔ router, server proxy ↔ destination) in the simulator:
#: far faster than the train links and ~0 delay, so they never limit (veth has no rate limit).
FAST_LINK = {"rate_mbps": 1000.0, "delay_ms": 0.05, "queue_packets": 1000}


def relay_scenario(p: Plan, direction: str, policy: str) -> str:
    """The chain in the simulator (TOML text): plain TCP client ↔ router, the scenario's MPTCP flow
    as a relay (P2's `traffic = { kind = "relay" }`) over its train paths, plain TCP proxy ↔
    server; the kernel's cc on all three, `linux-default` scheduler, what the kernel does not run
    removed (as `compare` does), PHA-D's policy set or removed."""
    import copy

    import tomli_w

    from .plan import load_toml

    sc = copy.deepcopy(load_toml(p.scenario_text))
    fl = sc["flows"][0]
    fl["cc"] = p.cc
    fl["scheduler"] = "linux-default"
    for field_ in p.not_applied:
        parts = field_.split(".")[1:]
        node: Any = fl
        for key in parts[:-1]:
            node = node.get(key, {})
        if isinstance(node, dict) and parts and parts[-1] != "scheduler":
            node.pop(parts[-1], None)
    m = fl.setdefault("mptcp", {})
    if policy == "off":
        m.pop("pha_d", None)
    else:
        m["pha_d"] = {**(m.get("pha_d") or {}), "policy": policy}
    up = direction == "upload"
    sc["nodes"] = [{"name": n} for n in ("client", "router", "proxy", "server")]
    sc["links"] = list(sc["links"]) + [{"name": "chain-lan", **FAST_LINK}, {"name": "chain-wan", **FAST_LINK}]
    names = [str(x) for x in (fl.get("paths") or [])]
    paths = []
    for pa in sc["paths"]:
        if pa["name"] in names:
            paths.append({**pa, "from": "router" if up else "proxy", "to": "proxy" if up else "router"})
    paths.append(
        {
            "name": "chain-lan",
            "from": "client" if up else "router",
            "to": "router" if up else "client",
            "links": ["chain-lan"],
        }
    )
    paths.append(
        {
            "name": "chain-wan",
            "from": "proxy" if up else "server",
            "to": "server" if up else "proxy",
            "links": ["chain-wan"],
        }
    )
    sc["paths"] = paths
    first, last = ("client", "server") if up else ("server", "client")
    tunnel = {**fl, "name": "tunnel", "traffic": {"kind": "relay", "from": first}}
    head = {"name": first, "path": "chain-lan" if up else "chain-wan", "cc": p.cc, "traffic": {"kind": "bulk"}}
    tail = {
        "name": last,
        "path": "chain-wan" if up else "chain-lan",
        "cc": p.cc,
        "traffic": {"kind": "relay", "from": "tunnel"},
    }
    sc["flows"] = [head, tunnel, tail]
    sc["name"] = f"{p.name}-proxy-{direction}-{policy}"
    return tomli_w.dumps(sc)


def simulate_chain(p: Plan, direction: str, policy: str) -> dict[str, Any]:
    """The simulator's figures for one (direction, policy), same seed, measured like the chain's:
    the in-order goodput of the last flow (the one ending at the plain-TCP receiver)."""
    from .. import _core
    from ..results import Result
    from ..source import ScenarioSource

    text = relay_scenario(p, direction, policy)
    src = ScenarioSource(text, p.scenario_file or "<string>", p.base_dir)
    raw = _core.run(text, src.file, str(src.base_dir), p.seed, None)
    res = Result.from_raw(raw, src, p.seed)
    last = "server" if direction == "upload" else "client"
    ts = res.timeseries
    rows = ts.filter((ts["kind"] == "flow") & (ts["name"] == last) & (ts["metric"] == "goodput_mbps")).sort("time_s")
    series = [float(v or 0.0) for v in rows["value"].to_list()]
    bin_s = float(res.summary.get("bin_ms", p.bin_s * 1000.0)) / 1000.0
    hos = [h for h in res.summary.get("handovers", []) if float(h["start_s"]) < p.duration_s]
    hin, hout = window_goodput(series, bin_s, [float(h["start_s"]) for h in hos], p.warmup_s, p.duration_s)
    tunnel = res.summary["flows"]["tunnel"]
    return {
        "direction": direction,
        "policy": policy,
        "seed": p.seed,
        "goodput_mbps": res.summary["flows"][last]["goodput_mbps"],
        "handover_goodput_mbps": hin,
        "non_handover_goodput_mbps": hout,
        "mp_prio_sent": tunnel.get("mp_prio_sent"),
        "handovers": len(hos),
    }


# --------------------------------------------------------------------------- both, side by side


def side_by_side(
    scenario: Any,
    *,
    directions: tuple[str, ...] = DIRECTIONS,
    policies: tuple[str, ...] = POLICIES,
    repeat: int = 1,
    substitute: bool = False,
    max_duration_s: float = DEFAULT_MAX_DURATION_S,
    no_idle_restart: bool = False,
    progress: Optional[Callable[[str, Optional[float]], Any]] = None,
) -> dict[str, Any]:
    """Every (direction, policy): `repeat` kernel runs through the chain and the simulator's relay
    chain for the same seed; rows with the kernel's mean and 95 % CI over the repeats.
    `progress(stage)` is told each run as it begins."""
    from ..experiments.common import mean_ci

    check_environment()
    p = plan(scenario, substitute=substitute, max_duration_s=max_duration_s, proxy=True)
    check(p)
    sweep_stale()
    rows = []
    runs: list[dict[str, Any]] = []
    n, i = len(directions) * len(policies), 0
    for d in directions:
        for pol in policies:
            i += 1
            ks = []
            for r in range(repeat):
                if progress is not None:
                    rep = f", kernel run {r + 1} of {repeat}" if repeat > 1 else ""
                    progress(f"[{i}/{n}] {d}, PHA-D {pol}: {p.duration_s:g} s on the kernel in real time{rep}", None)
                ks.append(run_chain(p, d, pol, no_idle_restart=no_idle_restart))
            runs += [k.to_json() for k in ks]
            if progress is not None:
                progress(f"[{i}/{n}] {d}, PHA-D {pol}: simulating the same chain", None)
            sim = simulate_chain(p, d, pol)
            kin, kin_ci = mean_ci([k.handover_goodput_mbps for k in ks])
            kall, kall_ci = mean_ci([k.goodput_mbps for k in ks])
            rows.append(
                {
                    "direction": d,
                    "policy": pol,
                    "runs": repeat,
                    "kernel_handover_goodput_mbps": kin,
                    "kernel_handover_goodput_ci95": kin_ci,
                    "sim_handover_goodput_mbps": sim["handover_goodput_mbps"],
                    "kernel_goodput_mbps": kall,
                    "kernel_goodput_ci95": kall_ci,
                    "sim_goodput_mbps": sim["goodput_mbps"],
                    "kernel_mp_prio_sent": mean_ci([float(k.netstat.get("router", {}).get("MPPrioTx", 0)) for k in ks])[
                        0
                    ],
                    "load_average_1min": [round(k.load_average[0], 2) for k in ks],
                }
            )
    return {
        "scenario": p.name,
        "seed": p.seed,
        "duration_s": p.duration_s,
        "kernel": os.uname().release,
        "cc": p.cc,
        "substitutions": p.substitutions,
        "no_idle_restart": no_idle_restart,
        "handovers": [h for h in p.handovers if float(h["start_s"]) < p.duration_s],
        "rows": rows,
        "runs": runs,
    }
