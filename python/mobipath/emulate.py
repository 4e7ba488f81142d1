"""Emulation: run a scenario through the real Linux TCP stack, across the simulator's link model.

First slice of issue 5: one single-path TCP flow over a one-link path.

Topology (all of it exists only while a run lasts)::

    netns mp-<pid>-c            mobipath-emu (root netns)            netns mp-<pid>-s
    sender 10.77.1.1  ── TUN mpa0 ──► forward LinkDir ──► TUN mpb0 ──  receiver 10.77.1.2
                       ◄──────────── reverse LinkDir ◄────────────

The emulator (``crates/emu``, binary ``mobipath-emu``) creates one TUN device inside each namespace
and forwards IP packets between them through ``mobipath_sim::link::LinkDir``, the simulator's own
link model, in real time. The sender sits at the path's ``from`` node, as in the simulator. Sockets
are opened from this process by switching one thread into a namespace (``setns``), so the only child
process is the emulator.

Cleanup: a ``Topology`` context manager removes namespaces and stops the emulator on normal exit,
errors, SIGINT and SIGTERM (a handler turns SIGTERM into an exception that unwinds through it). The
emulator gets SIGTERM when this process dies (``PR_SET_PDEATHSIG``) and its TUN devices vanish with
it. Namespaces left by a process that was SIGKILLed are removed by ``sweep_stale()``, which every run
calls first: ``mp-<pid>-*`` whose ``<pid>`` is not alive.

What the kernel / this slice cannot do is refused with a message naming it (MPTCP flows, several
links per path, several flows, non-bulk traffic, congestion controls the kernel lacks), unless
``substitute=True`` maps a controller to its nearest kernel equivalent (recorded in the summary and
the provenance).
"""
from __future__ import annotations

import ctypes
import json
import os
import re
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, List, Optional, Sequence, Tuple

from . import jsonfmt, provenance
from .results import Result, timeseries_frame
from .source import load_source

__all__ = [
    "EmulateError",
    "check_environment",
    "sweep_stale",
    "list_namespaces",
    "Topology",
    "plan",
    "run",
    "KERNEL_CC",
    "SUBSTITUTES",
]

NS_RE = re.compile(r"^mp-(\d+)-[a-z0-9]+$")
#: Congestion controls the kernel offers (loaded with modprobe when needed).
KERNEL_CC = ("reno", "cubic", "bbr")
#: Nearest kernel controller for simulator-only ones, used only with ``substitute=True``.
SUBSTITUTES = {"newreno": "reno", "tahoe": "reno"}
DEFAULT_MAX_DURATION_S = 300.0
PORT = 5001
CLONE_NEWNET = 0x40000000
TCP_CONGESTION = getattr(socket, "TCP_CONGESTION", 13)
TCP_INFO = getattr(socket, "TCP_INFO", 11)


class EmulateError(Exception):
    """A run cannot happen (environment, unsupported scenario feature) or failed."""


# --------------------------------------------------------------------------- environment


def check_environment() -> None:
    """Refuses clearly unless this process can build namespaces and the kernel has MPTCP."""
    if sys.platform != "linux":
        raise EmulateError("emulation needs Linux (network namespaces, TUN)")
    if os.geteuid() != 0:
        raise EmulateError("emulation needs root (it creates network namespaces and TUN devices); run it with sudo")
    if not Path("/proc/sys/net/mptcp/enabled").exists():
        raise EmulateError("this kernel has no MPTCP (/proc/sys/net/mptcp/enabled is absent); emulation needs it")
    if shutil.which("ip") is None:
        raise EmulateError("the `ip` command (iproute2) is not installed")
    if not Path("/dev/net/tun").exists():
        raise EmulateError("/dev/net/tun is absent (load the tun module)")


def emulator_binary() -> str:
    """``$MOBIPATH_EMU``, else the workspace build (release, then debug), else ``mobipath-emu`` on PATH."""
    env = os.environ.get("MOBIPATH_EMU")
    if env:
        return env
    root = provenance.source_tree() or Path(__file__).resolve().parents[2]
    for profile in ("release", "debug"):
        p = Path(root) / "target" / profile / "mobipath-emu"
        if p.exists():
            return str(p)
    found = shutil.which("mobipath-emu")
    if found:
        return found
    raise EmulateError("mobipath-emu not found: build it with `cargo build --release -p mobipath-emu` or set MOBIPATH_EMU")


def _ip(*args: str, check: bool = True) -> subprocess.CompletedProcess:
    r = subprocess.run(["ip", *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    if check and r.returncode != 0:
        raise EmulateError(f"`ip {' '.join(args)}` failed: {r.stderr.strip()}")
    return r


def list_namespaces(prefix: str = "mp-") -> List[str]:
    """Names of network namespaces starting with ``prefix``."""
    r = _ip("netns", "list", check=False)
    return [line.split()[0] for line in r.stdout.splitlines() if line.split() and line.split()[0].startswith(prefix)]


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def _delete_namespace(name: str) -> None:
    # Processes still inside (should be none: the emulator lives in the root namespace).
    r = _ip("netns", "pids", name, check=False)
    for tok in r.stdout.split():
        if tok.isdigit() and int(tok) != os.getpid():
            try:
                os.kill(int(tok), signal.SIGKILL)
            except ProcessLookupError:
                pass
    _ip("netns", "del", name, check=False)


def sweep_stale() -> List[str]:
    """Deletes ``mp-<pid>-*`` namespaces whose owning process is gone; returns their names."""
    removed = []
    for name in list_namespaces():
        m = NS_RE.match(name)
        if m and not _pid_alive(int(m.group(1))):
            _delete_namespace(name)
            removed.append(name)
    return removed


_libc = ctypes.CDLL(None, use_errno=True)


class _InNetns:
    """``with _InNetns(name):`` — the calling thread is inside namespace ``name``; sockets made
    there stay there after the thread returns to its own namespace."""

    def __init__(self, name: str) -> None:
        self.name = name

    def __enter__(self) -> None:
        self.home = os.open("/proc/thread-self/ns/net", os.O_RDONLY)
        target = os.open(f"/run/netns/{self.name}", os.O_RDONLY)
        try:
            if _libc.setns(target, CLONE_NEWNET) != 0:
                e = ctypes.get_errno()
                raise EmulateError(f"setns into {self.name}: {os.strerror(e)}")
        finally:
            os.close(target)

    def __exit__(self, *exc: Any) -> None:
        if _libc.setns(self.home, CLONE_NEWNET) != 0:  # pragma: no cover - never seen
            os._exit(3)  # never go on in the wrong namespace
        os.close(self.home)


class _Terminated(BaseException):
    """Raised in the main thread by SIGTERM so `with Topology(...)` unwinds and cleans up."""


# --------------------------------------------------------------------------- topology


@dataclass
class Topology:
    """Two namespaces joined by one emulated link; removed on exit however the block ends."""

    link: Dict[str, Any]
    seed: int
    duration_s: float
    base_dir: Path
    tag: str = ""
    spin_us: int = 100
    ns_a: str = ""
    ns_b: str = ""
    addr_a: str = "10.77.1.1"
    addr_b: str = "10.77.1.2"
    emu: Optional[subprocess.Popen] = None
    emu_stats: Optional[Dict[str, Any]] = None
    _tmp: Optional[tempfile.TemporaryDirectory] = None
    _old_handlers: Dict[int, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        pid = os.getpid()
        self.ns_a = f"mp-{pid}-c{self.tag}"
        self.ns_b = f"mp-{pid}-s{self.tag}"

    def __enter__(self) -> "Topology":
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self._old_handlers[sig] = signal.signal(sig, self._on_signal)
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    @staticmethod
    def _on_signal(signum: int, frame: Any) -> None:
        raise _Terminated(f"signal {signum}")

    def _build(self) -> None:
        for ns in (self.ns_a, self.ns_b):
            _ip("netns", "add", ns)
            _ip("-n", ns, "link", "set", "lo", "up")
            # No IPv6 on the emulated link: its router/multicast solicitations would be extra
            # traffic the simulator does not have.
            subprocess.run(["ip", "netns", "exec", ns, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                            "net.ipv6.conf.default.disable_ipv6=1"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self._tmp = tempfile.TemporaryDirectory(prefix="mobipath-emu-")
        tmp = Path(self._tmp.name)
        cfg = {
            "link": self.link,
            "seed": self.seed,
            "base_dir": str(self.base_dir),
            # The emulator ends by itself shortly after the run, whatever happens here.
            "duration_s": self.duration_s + 5.0,
            "a": {"netns": self.ns_a, "ifname": "mpa0"},
            "b": {"netns": self.ns_b, "ifname": "mpb0"},
            "spin_us": self.spin_us,
            "stats_path": str(tmp / "emu-stats.json"),
            "wait_for_start": True,
        }
        (tmp / "emu.json").write_text(json.dumps(cfg))
        self.emu = subprocess.Popen(
            [emulator_binary(), str(tmp / "emu.json")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self._read_line(5.0)
        if line.strip() != "ready":
            err = self._stop_emulator()
            raise EmulateError(f"the emulator did not start: {(line + err).strip()}")
        for ns, dev, addr in ((self.ns_a, "mpa0", self.addr_a), (self.ns_b, "mpb0", self.addr_b)):
            _ip("-n", ns, "addr", "add", f"{addr}/24", "dev", dev)
            _ip("-n", ns, "link", "set", dev, "up", "txqueuelen", "10000")

    def _read_line(self, timeout_s: float) -> str:
        assert self.emu is not None and self.emu.stdout is not None
        out: List[str] = []
        t = threading.Thread(target=lambda: out.append(self.emu.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        t.start()
        t.join(timeout_s)
        return out[0] if out else ""

    def start_clock(self) -> None:
        """Time zero of the link model (rate schedules, outages): now."""
        assert self.emu is not None and self.emu.stdin is not None
        self.emu.stdin.write("start\n")
        self.emu.stdin.flush()

    def netns(self, side: str) -> _InNetns:
        return _InNetns(self.ns_a if side == "a" else self.ns_b)

    def _stop_emulator(self) -> str:
        if self.emu is None:
            return ""
        p, self.emu = self.emu, None
        if p.poll() is None:
            p.send_signal(signal.SIGTERM)
        try:
            _, err = p.communicate(timeout=5)
        except subprocess.TimeoutExpired:
            p.kill()
            _, err = p.communicate()
        if self._tmp is not None:
            f = Path(self._tmp.name) / "emu-stats.json"
            if f.exists():
                try:
                    self.emu_stats = json.loads(f.read_text())
                except ValueError:
                    pass
        return err or ""

    def stop_emulator(self) -> Optional[Dict[str, Any]]:
        """Stops the emulator and returns its stats (per direction: link counters, timing)."""
        err = self._stop_emulator()
        if self.emu_stats is None and err.strip():
            raise EmulateError(f"the emulator failed: {err.strip()}")
        return self.emu_stats

    def close(self) -> None:
        try:
            self._stop_emulator()
        finally:
            for ns in (self.ns_a, self.ns_b):
                _delete_namespace(ns)
            if self._tmp is not None:
                self._tmp.cleanup()
                self._tmp = None
            for sig, h in self._old_handlers.items():
                signal.signal(sig, h)
            self._old_handlers.clear()


# --------------------------------------------------------------------------- scenario plan


@dataclass
class Plan:
    """What one emulation run does, resolved from the scenario."""

    name: str
    seed: int
    duration_s: float
    bin_s: float
    warmup_s: float
    flow: str
    cc_requested: str
    cc: str
    start_s: float
    stop_s: Optional[float]
    link: Dict[str, Any]
    base_dir: Path
    substitutions: List[str]
    not_applied: List[str]
    scenario_text: str
    scenario_file: Optional[str]


def _load_toml(text: str) -> Dict[str, Any]:
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    return tomllib.loads(text)


def plan(scenario: Any, *, substitute: bool = False, max_duration_s: float = DEFAULT_MAX_DURATION_S) -> Plan:
    """Checks the scenario (with the simulator's own validation) and what this slice supports."""
    from . import api
    from .errors import ScenarioError

    src = load_source(scenario)
    where = src.file or "scenario"
    try:
        sc = _load_toml(src.text)
    except ValueError:
        sc = None  # the simulator's validation names the syntax error
    # What this slice cannot do is said first (also for scenarios only a newer simulator accepts).
    flows = sc.get("flows") if isinstance(sc, dict) else None
    if isinstance(flows, list) and len(flows) != 1:
        raise EmulateError(f"{where}: this slice of emulate runs exactly one flow; the scenario has {len(flows)}")
    if isinstance(flows, list) and isinstance(flows[0], dict) and flows[0].get("paths") is not None:
        raise EmulateError(f"{where}: flows[0] ({flows[0].get('name')}) is an MPTCP flow (paths = {flows[0]['paths']}); "
                           "MPTCP emulation is not in this slice yet (single-path TCP only)")
    errors = api.validate(scenario)
    if errors:
        raise ScenarioError(errors, src.file)
    assert isinstance(sc, dict)
    fl = sc["flows"][0]
    fname = fl["name"]
    kind = fl.get("traffic", {}).get("kind")
    if kind != "bulk":
        raise EmulateError(f"{where}: flows[0].traffic.kind = {kind!r}: this slice emulates only bulk transfers")
    path = next((p for p in sc.get("paths", []) if p["name"] == fl["path"]), None)
    assert path is not None  # validated
    if len(path["links"]) != 1:
        raise EmulateError(f"{where}: path {path['name']} has {len(path['links'])} links; this slice emulates one-link paths only")
    link = next(l for l in sc.get("links", []) if l["name"] == path["links"][0])
    cc_req = str(fl["cc"]).lower()
    subs: List[str] = []
    if cc_req in KERNEL_CC:
        cc = cc_req
    elif cc_req in SUBSTITUTES and substitute:
        cc = SUBSTITUTES[cc_req]
        subs.append(f"flows[0].cc: {cc_req} -> kernel {cc}")
    elif cc_req in SUBSTITUTES:
        raise EmulateError(f"{where}: flows[0].cc = {cc_req!r}: the Linux kernel has no {cc_req}; "
                           f"pass --substitute to run kernel {SUBSTITUTES[cc_req]} instead (recorded in the results)")
    else:
        raise EmulateError(f"{where}: flows[0].cc = {cc_req!r}: not available in the Linux kernel "
                           f"(emulate supports {', '.join(KERNEL_CC)})")
    not_applied = [f"flows[0].{k}" for k in ("tcp", "receiver", "scheduler", "mptcp") if fl.get(k)]
    if not_applied and not substitute:
        raise EmulateError(f"{where}: {', '.join(not_applied)}: the emulator uses the kernel's own TCP settings; "
                           "pass --substitute to run with kernel defaults (recorded in the results)")
    subs += [f"{k}: kernel defaults" for k in not_applied]
    duration = float(sc["duration_s"])
    if duration > max_duration_s:
        raise EmulateError(f"{where}: duration_s = {duration:g}: emulation runs in real time; the limit is "
                           f"{max_duration_s:g} s (raise it with --max-duration)")
    out = sc.get("output", {})
    base_dir = Path(src.base_dir).resolve()
    return Plan(
        name=str(sc.get("name", Path(src.file).stem if src.file else "scenario")),
        seed=int(sc.get("seed", 1)),
        duration_s=duration,
        bin_s=float(out.get("bin_ms", 100.0)) / 1000.0,
        warmup_s=float(out.get("warmup_s", 0.0)),
        flow=fname,
        cc_requested=cc_req,
        cc=cc,
        start_s=float(fl.get("start_s", 0.0)),
        stop_s=fl.get("stop_s"),
        link=link,
        base_dir=base_dir,
        substitutions=subs,
        not_applied=not_applied,
        scenario_text=src.text,
        scenario_file=src.file,
    )


def ensure_cc(cc: str) -> None:
    """Loads the kernel module of `cc` if the kernel does not list it yet."""
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    if cc in avail:
        return
    subprocess.run(["modprobe", f"tcp_{cc}"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    avail = Path("/proc/sys/net/ipv4/tcp_available_congestion_control").read_text().split()
    if cc not in avail:
        raise EmulateError(f"the kernel cannot load congestion control {cc!r} (available: {' '.join(avail)})")


# --------------------------------------------------------------------------- traffic


@dataclass
class TcpInfo:
    rto_ms: float
    snd_mss: int
    rtt_ms: float
    cwnd: int
    total_retrans: int
    min_rtt_ms: float
    data_segs_out: int
    bytes_sent: int
    bytes_acked: int


def tcp_info(sock: socket.socket) -> TcpInfo:
    """The fields of `struct tcp_info` (include/uapi/linux/tcp.h) this module uses."""
    b = sock.getsockopt(socket.IPPROTO_TCP, TCP_INFO, 232)
    u32 = lambda off: struct.unpack_from("I", b, off)[0] if len(b) >= off + 4 else 0  # noqa: E731
    u64 = lambda off: struct.unpack_from("Q", b, off)[0] if len(b) >= off + 8 else 0  # noqa: E731
    return TcpInfo(
        rto_ms=u32(8) / 1000.0,
        snd_mss=u32(16),
        rtt_ms=u32(68) / 1000.0,
        cwnd=u32(80),
        total_retrans=u32(100),
        min_rtt_ms=u32(148) / 1000.0,
        data_segs_out=u32(156),
        bytes_sent=u64(200),
        bytes_acked=u64(120),
    )


def _bulk_tcp(topo: Topology, p: Plan) -> Tuple[Dict[str, Any], Dict[str, List[float]]]:
    """Runs the bulk transfer; returns the flow's summary entry and its per-bin series."""
    n_bins = max(1, int(round(p.duration_s / p.bin_s)))
    rx_bins = [0] * n_bins
    with topo.netns("b"):
        lst = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    lst.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    lst.bind((topo.addr_b, PORT))
    lst.listen(1)
    lst.settimeout(10.0)
    with topo.netns("a"):
        snd = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    snd.setsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, p.cc.encode())
    got_cc = snd.getsockopt(socket.IPPROTO_TCP, TCP_CONGESTION, 16).split(b"\0")[0].decode()
    if got_cc != p.cc:
        raise EmulateError(f"could not set congestion control {p.cc} (socket has {got_cc})")
    t0 = time.monotonic()
    topo.start_clock()
    stop = threading.Event()
    errors: List[BaseException] = []
    rx_total = [0]

    def receiver() -> None:
        try:
            conn, _ = lst.accept()
            conn.settimeout(0.5)
            buf = bytearray(1 << 18)
            while True:
                try:
                    n = conn.recv_into(buf)
                except socket.timeout:
                    if stop.is_set():
                        break
                    continue
                if n == 0:
                    break
                k = int((time.monotonic() - t0) / p.bin_s)
                if 0 <= k < n_bins:
                    rx_bins[k] += n
                rx_total[0] += n
            conn.close()
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    def sender() -> None:
        try:
            delay = p.start_s - (time.monotonic() - t0)
            if delay > 0:
                time.sleep(delay)
            snd.settimeout(10.0)
            snd.connect((topo.addr_b, PORT))
            snd.settimeout(0.2)
            chunk = b"\0" * (1 << 16)
            stop_at = p.stop_s if p.stop_s is not None else p.duration_s
            while not stop.is_set() and time.monotonic() - t0 < stop_at:
                try:
                    snd.send(chunk)
                except socket.timeout:
                    continue
        except BaseException as e:
            if not stop.is_set():  # errors after the end (shutdown under a send) are expected
                errors.append(e)

    rt = threading.Thread(target=receiver, daemon=True)
    st = threading.Thread(target=sender, daemon=True)
    rt.start()
    st.start()
    series: Dict[str, List[float]] = {"cwnd_segments": [], "srtt_ms": [], "rto_ms": [], "throughput_mbps": []}
    last_sent = 0
    info: Optional[TcpInfo] = None
    rtts: List[float] = []
    warm_rx = warm_sent = None
    for k in range(n_bins):
        target = t0 + (k + 1) * p.bin_s
        while True:
            d = target - time.monotonic()
            if d <= 0:
                break
            time.sleep(min(d, 0.05))
        if errors:
            break
        info = tcp_info(snd)
        series["cwnd_segments"].append(float(info.cwnd))
        series["srtt_ms"].append(info.rtt_ms)
        series["rto_ms"].append(info.rto_ms)
        series["throughput_mbps"].append((info.bytes_sent - last_sent) * 8 / p.bin_s / 1e6)
        last_sent = info.bytes_sent
        if (k + 1) * p.bin_s > p.warmup_s and info.rtt_ms > 0:
            rtts.append(info.rtt_ms)
        if warm_sent is None and (k + 1) * p.bin_s >= p.warmup_s - 1e-9:
            # Counters at the end of the warm-up (or at the first bin end if there is none).
            warm_sent = info.bytes_sent if p.warmup_s > 0 else 0
            warm_rx = sum(rx_bins[: k + 1]) if p.warmup_s > 0 else 0
    stop.set()
    final = tcp_info(snd)
    try:
        snd.shutdown(socket.SHUT_RDWR)
    except OSError:
        pass
    st.join(2.0)
    rt.join(2.0)
    snd.close()
    lst.close()
    if errors:
        e = errors[0]
        raise EmulateError(f"the transfer failed: {type(e).__name__}: {e}")
    delivered = sum(rx_bins)
    window = max(p.duration_s - max(p.warmup_s, p.start_s), 1e-9)
    sent = final.bytes_sent
    flow = {
        "protocol": "tcp",
        "cc": p.cc,
        "goodput_mbps": round((delivered - (warm_rx or 0)) * 8 / window / 1e6, 6),
        "throughput_mbps": round((sent - (warm_sent or 0)) * 8 / window / 1e6, 6),
        "bytes_delivered": delivered,
        "bytes_sent": sent,
        "fct_s": None,
        "segments_sent": final.data_segs_out,
        "segments_retransmitted": final.total_retrans,
        "retransmission_ratio": round(final.total_retrans / final.data_segs_out, 6) if final.data_segs_out else 0.0,
        "mean_rtt_ms": round(sum(rtts) / len(rtts), 6) if rtts else None,
        "min_rtt_ms": round(final.min_rtt_ms, 6) if final.min_rtt_ms > 0 else None,
        "final_cwnd_segments": final.cwnd,
    }
    series["goodput_mbps"] = [b * 8 / p.bin_s / 1e6 for b in rx_bins]
    return flow, series


def describe_emulation(e: Dict[str, Any]) -> str:
    """One line about how the run was emulated: kernel cc, substitutions, release-time errors."""
    parts = [f"kernel {e.get('kernel')}, cc {e.get('cc_kernel')}"]
    if e.get("substitutions"):
        parts.append("substituted: " + "; ".join(e["substitutions"]))
    for d in ("forward", "reverse"):
        t = (e.get("emulator", {}).get(d) or {}).get("timing") or {}
        if t:
            parts.append(f"{d} release error p50 {t['p50_us']:.0f} µs, p99 {t['p99_us']:.0f} µs")
    return "emulation: " + ", ".join(parts)


def _link_summary(name: str, stats: Optional[Dict[str, Any]]) -> Dict[str, Any]:
    out: Dict[str, Any] = {}
    for d in ("forward", "reverse"):
        s = (stats or {}).get(d, {}).get("link", {})
        if not s:
            continue
        out[f"{name}.{d}"] = {
            "drops": s["drops_queue"] + s["drops_loss"] + s["drops_outage"],
            "drops_loss": s["drops_loss"],
            "drops_outage": s["drops_outage"],
            "drops_queue": s["drops_queue"],
            "max_queue_packets": s["max_queue_packets"],
            "packets_delivered": s["delivered_packets"],
        }
    return out


def run(
    scenario: Any,
    *,
    substitute: bool = False,
    max_duration_s: float = DEFAULT_MAX_DURATION_S,
    command: Optional[str] = None,
) -> Result:
    """Emulates `scenario` on the real kernel; returns a `Result` in the simulator's schema
    (plus an ``emulation`` block: kernel, cc used, substitutions, emulator timing)."""
    check_environment()
    p = plan(scenario, substitute=substitute, max_duration_s=max_duration_s)
    emulator_binary()
    ensure_cc(p.cc)
    sweep_stale()
    wall0 = time.time()
    with Topology(link=p.link, seed=p.seed, duration_s=p.duration_s, base_dir=p.base_dir) as topo:
        flow, series = _bulk_tcp(topo, p)
        stats = topo.stop_emulator()
    n = len(series["goodput_mbps"])
    cols: Dict[str, List[Any]] = {"time_s": [], "kind": [], "name": [], "metric": [], "value": []}
    for metric in ("goodput_mbps", "throughput_mbps", "cwnd_segments", "srtt_ms", "rto_ms"):
        vals = series.get(metric, [])
        for k in range(n):
            cols["time_s"].append(round(k * p.bin_s, 9))
            cols["kind"].append("flow")
            cols["name"].append(p.flow)
            cols["metric"].append(metric)
            cols["value"].append(float(vals[k]) if k < len(vals) else None)
    emulation = {
        "mode": "emulation",
        "kernel": os.uname().release,
        "cc_requested": p.cc_requested,
        "cc_kernel": p.cc,
        "substitutions": p.substitutions,
        "wall_start_unix_s": round(wall0, 3),
        "emulator": {
            d: {"timing": (stats or {}).get(d, {}).get("timing"), "realtime": (stats or {}).get(d, {}).get("realtime"),
                "write_errors": (stats or {}).get(d, {}).get("write_errors")}
            for d in ("forward", "reverse")
        },
    }
    summary = {
        "scenario": p.name,
        "seed": p.seed,
        "duration_s": p.duration_s,
        "bin_ms": p.bin_s * 1000.0,
        "warmup_s": p.warmup_s,
        "flows": {p.flow: flow},
        "links": _link_summary(p.link["name"], stats),
        "emulation": emulation,
    }
    prov = provenance.collect(
        resolved_scenario=_load_toml(p.scenario_text),
        seed=p.seed,
        scenario_file=p.scenario_file,
        scenario_text=p.scenario_text,
        command=command,
    )
    if p.scenario_file:
        prov["reproduce"] = f"mobipath emulate {p.scenario_file}" + (" --substitute" if substitute else "")
    prov["emulation"] = emulation
    return Result(
        summary=json.loads(jsonfmt.dumps(summary)),
        timeseries=timeseries_frame(cols),
        resolved_scenario=prov["resolved_scenario"],
        events=0,
        provenance=prov,
        seed=p.seed,
        scenario_file=p.scenario_file,
        extra={"emulator_stats": stats},
    )


def bench(offered_mbps: float = 200.0, rate_mbps: float = 1000.0, delay_ms: float = 10.0, seconds: float = 3.0,
          payload: int = 1472) -> Dict[str, Any]:
    """End-to-end emulator benchmark through the real TUN path: UDP offered at `offered_mbps`
    from the client namespace to the server namespace across a `rate_mbps` link. Returns the
    delivered packets/s and Mbit/s (IP bytes) and the emulator's release-time error distribution.
    The Python sender itself limits the offered rate (~100k datagrams/s at best); the emulator's
    own ceiling is measured by `mobipath-emu --bench` (socketpairs, no kernel TUN cost)."""
    check_environment()
    sweep_stale()
    link = {"name": "bench", "rate_mbps": rate_mbps, "delay_ms": delay_ms, "queue_packets": 10000}
    with Topology(link=link, seed=1, duration_s=seconds + 2.0, base_dir=Path("."), tag="b") as topo:
        with topo.netns("b"):
            rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        rx.bind((topo.addr_b, 6001))
        rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
        rx.settimeout(0.5)
        with topo.netns("a"):
            tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        tx.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 << 20)
        tx.connect((topo.addr_b, 6001))
        counts = [0, 0]
        stop = threading.Event()

        def sink() -> None:
            buf = bytearray(65536)
            while True:
                try:
                    n = rx.recv_into(buf)
                except socket.timeout:
                    if stop.is_set():
                        return
                    continue
                counts[0] += 1
                counts[1] += n + 28

        t = threading.Thread(target=sink, daemon=True)
        t.start()
        topo.start_clock()
        pps = offered_mbps * 1e6 / 8 / (payload + 28)
        body = b"\0" * payload
        sent = 0
        t0 = time.monotonic()
        while True:
            el = time.monotonic() - t0
            if el >= seconds:
                break
            due = int(el * pps)
            while sent < due:
                try:
                    tx.send(body)
                except OSError:
                    pass
                sent += 1
            time.sleep(0.0005)
        time.sleep(delay_ms / 1000 + 0.3)
        stop.set()
        t.join(2)
        stats = topo.stop_emulator() or {}
    return {
        "offered_mbps": offered_mbps,
        "sent_packets": sent,
        "received_packets": counts[0],
        "received_mbps": counts[1] * 8 / seconds / 1e6,
        "received_pps": counts[0] / seconds,
        "timing_us": stats.get("forward", {}).get("timing"),
        "link": stats.get("forward", {}).get("link"),
    }


def _main(argv: Optional[Sequence[str]] = None) -> int:  # pragma: no cover - debugging aid
    args = list(sys.argv[1:] if argv is None else argv)
    r = run(args[0])
    r.write(args[1] if len(args) > 1 else "results/emulate")
    print(r.summary_json())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(_main())
