"""Two namespaces joined by N emulated paths, with addresses, routes and (optionally) MPTCP.

::

    netns mp-<pid>-c<tag> (side a, data sender)          netns mp-<pid>-s<tag> (side b, receiver)
    10.77.1.1 mpa0 ── TUN ──► path 0 links ──► TUN ── mpb0 10.77.1.2
    10.77.2.1 mpa1 ── TUN ──► path 1 links ──► TUN ── mpb1 10.77.2.2     (one /24 per path)
                       ◄──── reverse directions ◄────

One ``mobipath-emu`` process (root namespace) creates every TUN device inside its namespace and
forwards all paths, one thread per direction. Data flows a → b (the forward direction of every
link), as in the simulator where the sender sits at the path's ``from`` node.

MPTCP (``mptcp=True``): side b is the *client* — it opens the connection to 10.77.1.1 from
10.77.1.2 and owns one endpoint per path, ``subflow`` for paths 1.. (MP_JOIN from 10.77.k.2,
routed out of mpb<k-1> by a source-address rule) and a flag-less endpoint for path 0 so that it
too can be marked backup later. Side a is the server (listener, data sender). This is the P0
downlink: the train's router connects, the server sends, and the receiver-side MP_PRIO of PHA-D
is ``ip mptcp endpoint change id K backup`` on side b. Endpoint ids are ``path index + 1``.

Router (``router=True``): the receiver sits behind a third namespace, ``mp-<pid>-r<tag>``, which
holds the b-side TUNs of every path and forwards between them and the receiver over a veth pair
(not emulated). The receiver's address for path k is 10.78.<k+1>.2 on that veth; the router sends
traffic from 10.78.<k+1>.0/24 out of path k (source-address rules) — a multi-WAN router with one
uplink per operator, MPTCP running end to end between receiver and sender.

Cleanup: the context manager removes namespaces and stops the emulator on normal exit, errors,
SIGINT and SIGTERM (a handler turns SIGTERM into an exception that unwinds through it). The
emulator gets SIGTERM when this process dies (``PR_SET_PDEATHSIG``) and its TUN devices vanish
with it. Namespaces of a SIGKILLed run are removed by ``netns.sweep_stale()``.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .netns import EmulateError, InNetns, Terminated, delete_namespace, emulator_command, ip, stop_child, sysctl

#: Most paths one topology builds (one /24 and one endpoint each).
MAX_PATHS = 8


@dataclass
class Topology:
    """Namespaces a (sender) and b (receiver) joined by one emulated path per entry of `paths`
    (``{"name": ..., "links": [<[[links]] table>, ...]}``); removed on exit however the block ends.
    ``link=`` is a shorthand for one path over one link."""

    paths: list[dict[str, Any]] = field(default_factory=list)
    seed: int = 1
    duration_s: float = 10.0
    base_dir: Path = Path(".")
    tag: str = ""
    spin_us: int = 20  # see crates/emu config.rs DEFAULT_SPIN_US
    bin_ms: float = 100.0
    link: Optional[dict[str, Any]] = None
    mptcp: bool = False
    #: Put the receiver behind a forwarding router namespace (see the module doc).
    router: bool = False
    #: MP_JOIN backup flag per path (MPTCP only; path 0 is the initial subflow and cannot be).
    backup: list[bool] = field(default_factory=list)
    #: Packet captures of every link direction (the emulator's ``pcap`` entry: ``dir``,
    #: ``max_bytes``, optional ``snaplen`` and ``links``), or None.
    pcap: Optional[dict[str, Any]] = None
    ns_a: str = ""
    ns_b: str = ""
    ns_r: str = ""
    emu: Optional[subprocess.Popen] = None
    emu_stats: Optional[dict[str, Any]] = None
    _tmp: Optional[tempfile.TemporaryDirectory] = None
    _old_handlers: dict[int, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if self.link is not None:
            self.paths = [{"name": self.link["name"], "links": [self.link]}]
        if not 1 <= len(self.paths) <= MAX_PATHS:
            raise EmulateError(f"a topology has 1..{MAX_PATHS} paths, not {len(self.paths)}")
        if self.backup[:1] == [True]:
            raise EmulateError(
                "path 0 carries the initial subflow, which cannot join as backup; mark it later with MP_PRIO"
            )
        pid = os.getpid()
        self.ns_a = f"mp-{pid}-c{self.tag}"
        self.ns_b = f"mp-{pid}-s{self.tag}"
        self.ns_r = f"mp-{pid}-r{self.tag}" if self.router else ""

    @property
    def namespaces(self) -> list[str]:
        return [ns for ns in (self.ns_a, self.ns_b, self.ns_r) if ns]

    # Addresses: path k uses 10.77.<k+1>.0/24 between the emulator's TUNs, .1 on side a, .2 on
    # side b (or on the router); behind a router the receiver uses 10.78.<k+1>.2.
    def addr(self, side: str, k: int = 0) -> str:
        if side == "b" and self.router:
            return f"10.78.{k + 1}.2"
        return f"10.77.{k + 1}.{1 if side == 'a' else 2}"

    @property
    def addr_a(self) -> str:
        return self.addr("a")

    @property
    def addr_b(self) -> str:
        return self.addr("b")

    def dev(self, side: str, k: int) -> str:
        return f"mp{side}{k}"

    def path_of_addr(self, address: str) -> Optional[int]:
        """Which path an address of side a or b belongs to."""
        parts = address.split(".")
        if len(parts) == 4 and parts[:2] in (["10", "77"], ["10", "78"]) and parts[2].isdigit():
            k = int(parts[2]) - 1
            return k if 0 <= k < len(self.paths) else None
        return None

    def __enter__(self) -> Topology:
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
        raise Terminated(f"signal {signum}")

    def _build(self) -> None:
        for ns in self.namespaces:
            ip("netns", "add", ns)
            ip("-n", ns, "link", "set", "lo", "up")
            # No IPv6 on the emulated links: its router/multicast solicitations would be extra
            # traffic the simulator does not have. No reverse-path filtering: MPTCP subflows
            # reach side a's single address over every path.
            sysctl(
                ns,
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
                "net.ipv4.conf.all.rp_filter=0",
                "net.ipv4.conf.default.rp_filter=0",
            )
        self._tmp = tempfile.TemporaryDirectory(prefix="mobipath-emu-")
        tmp = Path(self._tmp.name)
        cfg = {
            "paths": [
                {
                    "name": p["name"],
                    "links": p["links"],
                    "a": {"netns": self.ns_a, "ifname": self.dev("a", k)},
                    "b": {"netns": self.ns_r or self.ns_b, "ifname": self.dev("b", k)},
                }
                for k, p in enumerate(self.paths)
            ],
            "seed": self.seed,
            "base_dir": str(self.base_dir),
            # The emulator ends by itself shortly after the run, whatever happens here.
            "duration_s": self.duration_s + 5.0,
            "spin_us": self.spin_us,
            "bin_ms": self.bin_ms,
            "stats_path": str(tmp / "emu-stats.json"),
            "wait_for_start": True,
        }
        if self.pcap is not None:
            cfg["pcap"] = self.pcap
        (tmp / "emu.json").write_text(json.dumps(cfg))
        self.emu = subprocess.Popen(
            [*emulator_command(), str(tmp / "emu.json")],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = self._read_line(5.0)
        if line.strip() != "ready":
            err = self._stop_emulator()
            raise EmulateError(f"the emulator did not start: {(line + err).strip()}")
        for k in range(len(self.paths)):
            for side, ns in (("a", self.ns_a), ("b", self.ns_r or self.ns_b)):
                dev = self.dev(side, k)
                ip("-n", ns, "addr", "add", f"10.77.{k + 1}.{1 if side == 'a' else 2}/24", "dev", dev)
                ip("-n", ns, "link", "set", dev, "up", "txqueuelen", "10000")
        if self.router:
            self._setup_router()
        if self.mptcp:
            self._setup_mptcp()

    def _setup_router(self) -> None:
        r, b = self.ns_r, self.ns_b
        ip("-n", r, "link", "add", "mpr0", "type", "veth", "peer", "name", "mpc0", "netns", b)
        sysctl(r, "net.ipv4.ip_forward=1")
        for k in range(len(self.paths)):
            ip("-n", r, "addr", "add", f"10.78.{k + 1}.1/24", "dev", "mpr0")
            ip("-n", b, "addr", "add", f"10.78.{k + 1}.2/24", "dev", "mpc0")
            # Side a reaches the receiver's path-k address over path k.
            ip("-n", self.ns_a, "route", "add", f"10.78.{k + 1}.0/24", "dev", self.dev("a", k))
        for ns, dev in ((r, "mpr0"), (b, "mpc0")):
            ip("-n", ns, "link", "set", dev, "up")
        ip("-n", b, "route", "add", "default", "via", "10.78.1.1", "dev", "mpc0")
        for k in range(1, len(self.paths)):
            table = str(100 + k)
            ip("-n", r, "rule", "add", "from", f"10.78.{k + 1}.0/24", "table", table)
            ip("-n", r, "route", "add", "default", "dev", self.dev("b", k), "table", table)

    def _setup_mptcp(self) -> None:
        n = len(self.paths)
        for ns in (self.ns_a, self.ns_b):
            sysctl(ns, "net.mptcp.enabled=1")
            ip("-n", ns, "mptcp", "endpoint", "flush")
            ip("-n", ns, "mptcp", "limits", "set", "subflows", str(MAX_PATHS), "add_addr_accepted", str(MAX_PATHS))
        for k in range(n):
            flags = [] if k == 0 else ["subflow"] + (["backup"] if k < len(self.backup) and self.backup[k] else [])
            ip(
                "-n",
                self.ns_b,
                "mptcp",
                "endpoint",
                "add",
                self.addr("b", k),
                "dev",
                "mpc0" if self.router else self.dev("b", k),
                "id",
                str(k + 1),
                *flags,
            )
            if k > 0 and not self.router:
                # Joins from 10.77.<k+1>.2 to side a's 10.77.1.1 leave through path k.
                table = str(100 + k)
                ip("-n", self.ns_b, "rule", "add", "from", self.addr("b", k), "table", table)
                ip("-n", self.ns_b, "route", "add", f"{self.addr('a', 0)}/32", "dev", self.dev("b", k), "table", table)

    def set_backup(self, k: int, backup: bool) -> None:
        """Marks side b's endpoint of path `k` backup (or not): the kernel sends MP_PRIO on every
        subflow using that address (``ip mptcp endpoint change``, netlink MPTCP_PM_CMD_SET_FLAGS)."""
        if not self.mptcp:
            raise EmulateError("MP_PRIO needs an MPTCP topology")
        ip("-n", self.ns_b, "mptcp", "endpoint", "change", "id", str(k + 1), "backup" if backup else "nobackup")

    def _read_line(self, timeout_s: float) -> str:
        assert self.emu is not None and self.emu.stdout is not None
        out: list[str] = []
        t = threading.Thread(target=lambda: out.append(self.emu.stdout.readline()), daemon=True)  # type: ignore[union-attr]
        t.start()
        t.join(timeout_s)
        return out[0] if out else ""

    def start_clock(self) -> None:
        """Time zero of the link model (rate schedules, outages): now."""
        assert self.emu is not None and self.emu.stdin is not None
        self.emu.stdin.write("start\n")
        self.emu.stdin.flush()

    def netns(self, side: str) -> InNetns:
        return InNetns(self.ns_a if side == "a" else self.ns_b)

    def _stop_emulator(self) -> str:
        if self.emu is None:
            return ""
        p, self.emu = self.emu, None
        err, stats = stop_child(p, Path(self._tmp.name) / "emu-stats.json" if self._tmp is not None else None)
        if stats is not None:
            self.emu_stats = stats
        return err

    def stop_emulator(self) -> Optional[dict[str, Any]]:
        """Stops the emulator and returns its stats (per direction and path: link counters,
        delivered bytes per bin; per direction: release timing)."""
        err = self._stop_emulator()
        if self.emu_stats is None and err.strip():
            raise EmulateError(f"the emulator failed: {err.strip()}")
        return self.emu_stats

    def close(self) -> None:
        try:
            self._stop_emulator()
        finally:
            for ns in self.namespaces:
                delete_namespace(ns)
            if self._tmp is not None:
                self._tmp.cleanup()
                self._tmp = None
            for sig, h in self._old_handlers.items():
                signal.signal(sig, h)
            self._old_handlers.clear()
