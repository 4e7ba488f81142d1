"""PHA-D on a real train router (P0 §3.3): the router is the MPTCP client, and so the data
*receiver* of the downlink. Ahead of each handover range of the handover table it marks the
subflow of the operator about to hand over as backup (MP_PRIO B=1), and clears the mark before the
range ends; the unmodified sender (the MPTCP proxy or server) stops giving new data to a backup
subflow.

The decisions come from the simulator's own controller (`mobipath._core.PhaDController`, the code
in crates/sim/src/hst/phad.rs that PHA-D runs in simulation), fed with GPS positions along the
track from gpsd (`mobipath.gpsd`). The mark is the MPTCP endpoint's backup flag,
``ip mptcp endpoint change id K backup|nobackup`` — netlink ``MPTCP_PM_CMD_SET_FLAGS``; Linux then
sends MP_PRIO once, on a pure ACK, on every subflow using that endpoint.

RTT: the controller wants each subflow's RTT to lead by at least one RTT. A router does not own
the proxied connections, so it takes the path RTT it is given (``rtt_s``, e.g. measured with
ping to the proxy); the controller also keeps a slowly decaying maximum of it.
"""
from __future__ import annotations

import json
import queue
import re
import subprocess
import threading
import time
from dataclasses import dataclass
from typing import Any, Callable, Dict, Iterable, List, Optional, Sequence, Tuple

from .. import _core

__all__ = ["RouterError", "SubflowSpec", "parse_subflow", "EndpointActuator", "RecordingActuator",
           "ip_rx_packets", "PhaDRouter"]

POLICIES = ("paper", "queue-aware", "resend")


class RouterError(Exception):
    """A router component cannot do what it was asked (bad flag, `ip` failed, ...)."""


@dataclass(frozen=True)
class SubflowSpec:
    """One subflow of the router: the operator of its uplink (as named in the handover table),
    the MPTCP endpoint id it uses, and optionally its interface (for received-packet counts)."""
    operator: str
    endpoint_id: int
    iface: Optional[str] = None


_SUBFLOW = re.compile(r"^([^=:\s]+)=(\d+)(?::([A-Za-z0-9_.@-]{1,15}))?$")


def parse_subflow(text: str) -> SubflowSpec:
    """``OPERATOR=ENDPOINT_ID[:IFACE]``, e.g. ``A=1:wwan0``; endpoint ids are 1..255 (as
    `ip mptcp endpoint` numbers them)."""
    m = _SUBFLOW.match(text.strip())
    if not m:
        raise RouterError(f"--subflow {text!r}: expected OPERATOR=ENDPOINT_ID[:IFACE], e.g. A=1:wwan0")
    eid = int(m.group(2))
    if not 1 <= eid <= 255:
        raise RouterError(f"--subflow {text!r}: endpoint id {eid} is outside 1..255")
    return SubflowSpec(m.group(1), eid, m.group(3))


def _ip(args: Sequence[str], netns: Optional[str], runner: Callable[..., Any]) -> str:
    cmd = ["ip"] + (["-n", netns] if netns else []) + list(args)
    try:
        r = runner(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, timeout=5)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise RouterError(f"`{' '.join(cmd)}` failed: {e}") from None
    if r.returncode != 0:
        raise RouterError(f"`{' '.join(cmd)}` failed: {(r.stderr or '').strip() or f'exit {r.returncode}'}")
    return r.stdout


class EndpointActuator:
    """Sets MPTCP endpoints' backup flags on this host (or in network namespace `netns`)."""

    def __init__(self, netns: Optional[str] = None, runner: Callable[..., Any] = subprocess.run):
        self.netns, self.runner = netns, runner

    def set_backup(self, endpoint_id: int, backup: bool) -> None:
        _ip(["mptcp", "endpoint", "change", "id", str(endpoint_id), "backup" if backup else "nobackup"],
            self.netns, self.runner)

    def flags(self) -> Dict[int, List[str]]:
        """Endpoint id -> its flags, from `ip mptcp endpoint show`."""
        out: Dict[int, List[str]] = {}
        for line in _ip(["mptcp", "endpoint", "show"], self.netns, self.runner).splitlines():
            words = line.split()
            if "id" in words:
                i = words.index("id")
                flags = [w for w in words[i + 2:] if w in ("signal", "subflow", "backup", "fullmesh", "implicit")]
                out[int(words[i + 1])] = flags
        return out


class RecordingActuator:
    """Records the decisions instead of applying them (``--dry-run``)."""

    def __init__(self) -> None:
        self.calls: List[Tuple[int, bool]] = []

    def set_backup(self, endpoint_id: int, backup: bool) -> None:
        self.calls.append((endpoint_id, backup))


def ip_rx_packets(iface: str, netns: Optional[str] = None, runner: Callable[..., Any] = subprocess.run) -> int:
    """Packets received so far on `iface`: from sysfs on this host, `ip -j -s link show` in a
    network namespace."""
    if netns is None:
        try:
            with open(f"/sys/class/net/{iface}/statistics/rx_packets", encoding="ascii") as f:
                return int(f.read().strip())
        except (OSError, ValueError):
            raise RouterError(f"no receive statistics for interface {iface!r}") from None
    data = json.loads(_ip(["-j", "-s", "link", "show", "dev", iface], netns, runner) or "[]")
    try:
        stats = data[0].get("stats64") or data[0]["stats"]
        return int(stats["rx"]["packets"])
    except (IndexError, KeyError, TypeError, ValueError):
        raise RouterError(f"no receive statistics for interface {iface!r}") from None


class PhaDRouter:
    """Feeds fixes to the controller and applies its decisions.

    `on_fix(t, pos_m)` takes a fix time in seconds on any non-decreasing clock (gpsd's UTC is fine)
    and the position along the track in metres; `on_tick()` decides between fixes at the current
    time on `clock` mapped onto the fixes' clock. Both return the events applied, also passed to
    `log` as dicts (JSON-ready)."""

    def __init__(self, table_csv: str, subflows: Sequence[SubflowSpec], actuator: Any, *, policy: str = "paper",
                 lead_ms: float = 0.0, gps_period_s: float = 0.1, rtt_s: float = 0.1,
                 rx_packets: Optional[Callable[[SubflowSpec], int]] = None,
                 log: Optional[Callable[[Dict[str, Any]], None]] = None, table_file: str = "table",
                 clock: Callable[[], float] = time.monotonic):
        if policy not in POLICIES:
            raise RouterError(f"--policy {policy!r}: must be one of {', '.join(POLICIES)}")
        if not subflows:
            raise RouterError("at least one --subflow is needed")
        ids = [s.endpoint_id for s in subflows]
        if len(set(ids)) != len(ids):
            raise RouterError(f"--subflow: endpoint ids must differ (got {ids})")
        if not (rtt_s > 0 and rtt_s <= 10):
            raise RouterError(f"--rtt-ms {rtt_s * 1e3:g}: must be in (0, 10000]")
        if policy == "resend" and rx_packets is None:
            raise RouterError("--policy resend needs each --subflow's interface (A=1:wwan0) to see data arrive again")
        self.subflows = list(subflows)
        # Only `resend` looks at received packets; the others never read them (a modem's
        # interface may vanish during a reset without stopping PHA-D).
        self.actuator, self.log, self.rtt_s = actuator, log, rtt_s
        self.rx_packets = rx_packets if policy == "resend" else None
        self.rx_last = [0] * len(self.subflows)
        self.clock = clock
        try:
            self.ctl = _core.PhaDController(table_csv, [s.operator for s in self.subflows], policy, lead_ms,
                                            gps_period_s, table_file)
        except _core.ScenarioError as e:
            raise RouterError(str(e)) from None
        except ValueError as e:
            raise RouterError(str(e)) from None
        self.t0: Optional[float] = None
        self.last_t = 0.0  # controller time of the last call (seconds since the first fix)
        self.last_fix_t: Optional[float] = None
        # clock() − fix time for the recent fixes: their minimum is the fix-to-clock offset
        # (the clock's offset from GPS time plus the shortest delivery delay).
        self.offsets: List[float] = []
        self.events: List[Dict[str, Any]] = []

    def on_fix(self, t: float, pos_m: float) -> List[Dict[str, Any]]:
        if self.t0 is None:
            self.t0 = t
        self.offsets = (self.offsets + [self.clock() - (t - self.t0)])[-20:]
        # A fix stamped before the last tick is taken as of that tick: the controller's clock
        # never goes back.
        now = max(t - self.t0, self.last_t)
        if self.rx_packets is not None:
            # Read at fixes only (once per period is enough to see data flow again).
            self.rx_last = [self.rx_packets(s) if s.iface else 0 for s in self.subflows]
        try:
            decisions = self.ctl.on_fix(now, pos_m, [self.rtt_s] * len(self.subflows), self.rx_last)
        except ValueError as e:
            raise RouterError(f"GPS fix at {t}: {e}") from None
        self.last_t, self.last_fix_t = now, now
        return self._apply(decisions, t, pos_m)

    def on_tick(self) -> List[Dict[str, Any]]:
        """A decision now, between fixes: now = clock() − the fix-to-clock offset (so a fix's
        delivery delay does not make ticks lag). The controller ignores ticks more than 2 s after
        the last fix (GPS lost)."""
        if self.last_fix_t is None or self.t0 is None:
            return []
        now = self.clock() - min(self.offsets)
        if now <= self.last_t:
            return []
        try:
            decisions = self.ctl.on_tick(now, [self.rtt_s] * len(self.subflows), self.rx_last)
        except ValueError as e:
            raise RouterError(f"tick at {now}: {e}") from None
        self.last_t = now
        return self._apply(decisions, self.t0 + now, None)

    def _apply(self, decisions: List[Tuple[int, bool]], t: float, pos_m: Optional[float]) -> List[Dict[str, Any]]:
        applied = []
        for k, backup in decisions:
            s = self.subflows[k]
            self.actuator.set_backup(s.endpoint_id, backup)
            ev = {"t": round(t, 6), "pos_m": None if pos_m is None else round(pos_m, 3), "operator": s.operator,
                  "endpoint_id": s.endpoint_id, "backup": backup, "at": "fix" if pos_m is not None else "tick"}
            applied.append(ev)
            self.events.append(ev)
            if self.log is not None:
                self.log(ev)
        return applied

    def run(self, positions: Iterable[Tuple[float, float]], max_fixes: Optional[int] = None,
            tick_s: Optional[float] = 0.05) -> int:
        """Consumes (t, pos_m) fixes until they end or `max_fixes` were used, deciding also every
        `tick_s` seconds between fixes (None: at fixes only); returns the number of fixes. The
        fixes are read in a thread, so a blocking source (gpsd) does not hold the ticks back; its
        errors are raised here."""
        if tick_s is None:
            n = 0
            for t, pos in positions:
                self.on_fix(t, pos)
                n += 1
                if max_fixes is not None and n >= max_fixes:
                    break
            return n
        q: "queue.Queue[Any]" = queue.Queue(maxsize=1000)
        end = object()
        stop = threading.Event()

        def read() -> None:
            try:
                for item in positions:
                    if stop.is_set():
                        return
                    q.put(item)
                q.put(end)
            except BaseException as e:  # handed to the main loop
                q.put(e)

        threading.Thread(target=read, daemon=True, name="gps-reader").start()
        n = 0
        try:
            while max_fixes is None or n < max_fixes:
                try:
                    item = q.get(timeout=tick_s)
                except queue.Empty:
                    self.on_tick()
                    continue
                if item is end:
                    break
                if isinstance(item, BaseException):
                    raise item
                self.on_fix(*item)
                n += 1
        finally:
            stop.set()
        return n
