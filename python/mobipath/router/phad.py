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
from collections import deque
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .. import _core

__all__ = [
    "RouterError",
    "SubflowSpec",
    "parse_subflow",
    "EndpointActuator",
    "RecordingActuator",
    "FailSafeActuator",
    "ip_rx_packets",
    "PhaDRouter",
]

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
        _ip(
            ["mptcp", "endpoint", "change", "id", str(endpoint_id), "backup" if backup else "nobackup"],
            self.netns,
            self.runner,
        )

    def flags(self) -> dict[int, list[str]]:
        """Endpoint id -> its flags, from `ip mptcp endpoint show`."""
        out: dict[int, list[str]] = {}
        for line in _ip(["mptcp", "endpoint", "show"], self.netns, self.runner).splitlines():
            words = line.split()
            if "id" in words:
                i = words.index("id")
                flags = [w for w in words[i + 2 :] if w in ("signal", "subflow", "backup", "fullmesh", "implicit")]
                out[int(words[i + 1])] = flags
        return out


class NetlinkActuator:
    """Sets MPTCP endpoints' backup flags over generic netlink from this process
    (``MPTCP_PM_CMD_SET_FLAGS``, crates/proxy/src/netlink.rs via the extension): no child
    process per change, and other flags (fullmesh) are kept. ``netns``: a namespace name."""

    _FLAG_NAMES = ((1, "signal"), (2, "subflow"), (4, "backup"), (8, "fullmesh"), (16, "implicit"))

    def __init__(self, netns: Optional[str] = None):
        from .. import _core

        self.netns, self._core = netns, _core

    def set_backup(self, endpoint_id: int, backup: bool) -> None:
        if not 0 < endpoint_id < 256:
            raise RouterError(f"endpoint id {endpoint_id}: must be 1..255")
        try:
            self._core.mptcp_set_backup(endpoint_id, backup, self.netns)
        except OSError as e:
            raise RouterError(f"netlink: {e}") from None

    def flags(self) -> dict[int, list[str]]:
        """Endpoint id -> its flags (the names `ip mptcp endpoint show` uses)."""
        try:
            eps = self._core.mptcp_endpoints(self.netns)
        except OSError as e:
            raise RouterError(f"netlink: {e}") from None
        return {i: [n for bit, n in self._FLAG_NAMES if f & bit] for i, f, _ in eps}

    def addresses(self) -> dict[int, str]:
        """Endpoint id -> its IP address."""
        try:
            return {i: a for i, _, a in self._core.mptcp_endpoints(self.netns) if a}
        except OSError as e:
            raise RouterError(f"netlink: {e}") from None


def default_actuator(netns: Optional[str] = None) -> Any:
    """Netlink from this process when the extension has it, else `ip` (EndpointActuator)."""
    from .. import _core

    return NetlinkActuator(netns) if hasattr(_core, "mptcp_set_backup") else EndpointActuator(netns)


_RTT_LINE = re.compile(r"^mobipath_proxy_subflow_rtt_seconds\{(?P<labels>[^}]*)\} (?P<v>\S+)$")
_LOCAL = re.compile(r'(?:^|,)local="(?P<addr>[^"]*)"')


def parse_subflow_rtts(text: str) -> dict[str, float]:
    """Local IP -> the largest smoothed RTT in seconds among the subflows the proxy's metrics
    list from that address (``mobipath_proxy_subflow_rtt_seconds{...,local="IP:PORT",...}``,
    crates/proxy/src/metrics.rs; ``tcpi_rtt`` from ``MPTCP_TCPINFO``). Zero RTTs (no sample yet)
    are skipped."""
    out: dict[str, float] = {}
    for line in text.splitlines():
        m = _RTT_LINE.match(line.strip())
        if not m:
            continue
        loc = _LOCAL.search(m.group("labels"))
        try:
            v = float(m.group("v"))
        except ValueError:
            continue
        if loc is None or not v > 0:
            continue
        ip = loc.group("addr").rsplit(":", 1)[0].strip("[]")
        out[ip] = max(out.get(ip, 0.0), v)
    return out


class ProxyRtt:
    """Each subflow's RTT as the kernel measures it on the proxy's own MPTCP connections
    (`mobipath router proxy` with ``[metrics] listen``): for each ``--subflow``, the largest
    smoothed RTT among the proxy's subflows whose local address is that endpoint's address.
    ``None`` for an endpoint with no such subflow, and for all when the scrape fails (the caller
    then uses the given RTT). One local HTTP GET per call (PHA-D calls it at each fix)."""

    def __init__(
        self,
        url: str,
        addresses: dict[int, str],
        endpoint_ids: Sequence[int],
        fetch: Optional[Callable[[str], str]] = None,
    ):
        self.url, self.addresses, self.ids = url, addresses, list(endpoint_ids)
        self.fetch = fetch or self._get
        self.failures = 0

    @staticmethod
    def _get(url: str) -> str:
        import urllib.request

        with urllib.request.urlopen(url, timeout=0.5) as r:  # noqa: S310 (a configured local URL)
            return r.read().decode("utf-8", "replace")

    def __call__(self) -> list[Optional[float]]:
        try:
            rtts = parse_subflow_rtts(self.fetch(self.url))
        except Exception:  # the proxy restarting must not stop PHA-D: fall back to the given RTT
            self.failures += 1
            return [None] * len(self.ids)
        return [rtts.get(self.addresses.get(i, "")) for i in self.ids]


# How many of the latest calls / applied events the Python router keeps for a reader: `mobipath
# router pha-d` runs for days (a `--dry-run` too) and prints each as it happens, so it keeps
# counts and the last few, never the history.
KEEP = 1000


class RecordingActuator:
    """Records the decisions instead of applying them (``--dry-run``): `calls` holds the last
    `keep` (endpoint id, backup) pairs, oldest first; `count` counts them all."""

    def __init__(self, keep: int = KEEP) -> None:
        self.calls: deque[tuple[int, bool]] = deque(maxlen=keep)
        self.count = 0

    def set_backup(self, endpoint_id: int, backup: bool) -> None:
        self.calls.append((endpoint_id, backup))
        self.count += 1


class FailSafeActuator:
    """The actuator PHA-D drives, made safe for a router that must never lose a path:

    - `restore_all(reason)` sets every endpoint regular (B=0) — at start, on a stale or
      off-track fix, when gpsd goes away or sends garbage, on any error, on exit and on every
      catchable signal (`mobipath router pha-d` calls it); a failure on one endpoint does not stop
      the others;
    - a B=1 that would leave no regular endpoint is refused (never every path backup at once);
    - B=1 changes are rate-limited: at most one per endpoint per `min_interval_s` of `clock`
      (PHA-D's decision time, which follows the GPS fixes; B=0 never is: it is the safe
      direction);
    - a failed B=1 restores every endpoint.

    Each refusal and restore is passed to `log` as a JSON-ready dict with a `failsafe` key."""

    def __init__(
        self,
        inner: Any,
        endpoint_ids: Sequence[int],
        *,
        min_interval_s: float = 1.0,
        clock: Callable[[], float] = time.monotonic,
        log: Optional[Callable[[dict[str, Any]], None]] = None,
    ):
        self.inner, self.ids, self.min_interval_s, self.clock, self.log = (
            inner,
            list(endpoint_ids),
            min_interval_s,
            clock,
            log,
        )
        self.backup: dict[int, bool] = {i: False for i in self.ids}
        self.last_change: dict[int, float] = {}
        self.restores = 0

    def _note(self, ev: dict[str, Any]) -> None:
        if self.log is not None:
            self.log(ev)

    def set_backup(self, endpoint_id: int, backup: bool) -> bool:
        """Applies the flag; returns False if refused (would leave no regular path, rate limit)."""
        now = self.clock()
        if backup:
            others = [i for i in self.ids if i != endpoint_id]
            if not others or all(self.backup.get(i, False) for i in others):
                self._note(
                    {
                        "failsafe": "refused",
                        "endpoint_id": endpoint_id,
                        "backup": True,
                        "why": "it would leave no regular path",
                    }
                )
                return False
            last = self.last_change.get(endpoint_id)
            if last is not None and now - last < self.min_interval_s:
                self._note(
                    {
                        "failsafe": "refused",
                        "endpoint_id": endpoint_id,
                        "backup": True,
                        "why": f"rate limit: one B=1 per {self.min_interval_s:g} s",
                    }
                )
                return False
        try:
            self.inner.set_backup(endpoint_id, backup)
        except Exception as e:  # any failure: back to every path regular
            self.restore_all(f"setting endpoint {endpoint_id} {'backup' if backup else 'regular'} failed: {e}")
            return False
        self.backup[endpoint_id] = backup
        self.last_change[endpoint_id] = now
        return True

    def restore_all(self, reason: str) -> list[str]:
        """Every endpoint regular, whatever this process believes their state is; returns the
        errors (also logged), if any."""
        self.restores += 1
        self.last_change.clear()  # a fresh start: the rate limit counts from here
        errors = []
        for i in self.ids:
            try:
                self.inner.set_backup(i, False)
                self.backup[i] = False
            except Exception as e:
                errors.append(f"endpoint {i}: {e}")
        self._note(
            {
                "failsafe": "restored",
                "reason": reason,
                "endpoint_ids": list(self.ids),
                "backup": False,
                **({"errors": errors} if errors else {}),
            }
        )
        return errors


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
    `log` as dicts (JSON-ready); `events` keeps the last `keep_events` of them, `applied` counts
    them all."""

    def __init__(
        self,
        table_csv: str,
        subflows: Sequence[SubflowSpec],
        actuator: Any,
        *,
        policy: str = "paper",
        lead_ms: float = 0.0,
        gps_period_s: float = 0.1,
        rtt_s: float = 0.1,
        rx_packets: Optional[Callable[[SubflowSpec], int]] = None,
        log: Optional[Callable[[dict[str, Any]], None]] = None,
        table_file: str = "table",
        clock: Callable[[], float] = time.monotonic,
        rtt_source: Optional[Callable[[], list[Optional[float]]]] = None,
        keep_events: int = KEEP,
    ):
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
        # Per-subflow RTT measured by the kernel (ProxyRtt), read at each fix; `rtt_s` where none.
        self.rtt_source = rtt_source
        self.rtt_last = [rtt_s] * len(self.subflows)
        try:
            self.ctl = _core.PhaDController(
                table_csv, [s.operator for s in self.subflows], policy, lead_ms, gps_period_s, table_file
            )
        except _core.ScenarioError as e:
            raise RouterError(str(e)) from None
        except ValueError as e:
            raise RouterError(str(e)) from None
        self.ctl_args = (table_csv, [s.operator for s in self.subflows], policy, lead_ms, gps_period_s, table_file)
        self.stale_s: Optional[float] = None  # set by the caller: see `check_stale`
        self.failed_safe = False
        self.t0: Optional[float] = None
        self.last_fix_clock: Optional[float] = None
        self.last_t = 0.0  # controller time of the last call (seconds since the first fix)
        self.last_fix_t: Optional[float] = None
        # clock() − fix time for the recent fixes: their minimum is the fix-to-clock offset
        # (the clock's offset from GPS time plus the shortest delivery delay).
        self.offsets: list[float] = []
        self.events: deque[dict[str, Any]] = deque(maxlen=keep_events)
        self.applied = 0

    def reset(self, reason: str) -> None:
        """Fail safe: every endpoint regular (when the actuator can restore) and a fresh
        controller, so deciding starts again from the next good fix with a known state."""
        if hasattr(self.actuator, "restore_all"):
            self.actuator.restore_all(reason)
        self.ctl = _core.PhaDController(*self.ctl_args)
        self.t0, self.last_t, self.last_fix_t, self.offsets = None, 0.0, None, []
        self.failed_safe = True

    def check_stale(self) -> bool:
        """Fail safe when no usable fix came for `stale_s` seconds (on `clock`); True if it did."""
        if self.stale_s is None or self.last_fix_clock is None or self.failed_safe:
            return False
        if self.clock() - self.last_fix_clock > self.stale_s:
            self.reset(f"no usable GPS fix for {self.stale_s:g} s")
            return True
        return False

    def on_off_track(self, t: float, offset_m: float) -> None:
        """A fix too far from the track: the position is not trustworthy — fail safe."""
        if not self.failed_safe:
            self.reset(f"GPS position {offset_m:.0f} m off the track at {t}")

    def on_fix(self, t: float, pos_m: float) -> list[dict[str, Any]]:
        self.last_fix_clock = self.clock()
        self.failed_safe = False
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
            if self.rtt_source is not None:
                self.rtt_last = [r if r is not None and 0 < r <= 10 else self.rtt_s for r in self.rtt_source()]
            decisions = self.ctl.on_fix(now, pos_m, self.rtt_last, self.rx_last)
        except ValueError as e:
            raise RouterError(f"GPS fix at {t}: {e}") from None
        self.last_t, self.last_fix_t = now, now
        return self._apply(decisions, t, pos_m)

    def on_tick(self) -> list[dict[str, Any]]:
        """A decision now, between fixes: now = clock() − the fix-to-clock offset (so a fix's
        delivery delay does not make ticks lag). The controller ignores ticks more than 2 s after
        the last fix (GPS lost)."""
        if self.check_stale() or self.last_fix_t is None or self.t0 is None:
            return []
        now = self.clock() - min(self.offsets)
        if now <= self.last_t:
            return []
        try:
            decisions = self.ctl.on_tick(now, self.rtt_last, self.rx_last)
        except ValueError as e:
            raise RouterError(f"tick at {now}: {e}") from None
        self.last_t = now
        return self._apply(decisions, self.t0 + now, None)

    def _apply(self, decisions: list[tuple[int, bool]], t: float, pos_m: Optional[float]) -> list[dict[str, Any]]:
        applied = []
        for k, backup in decisions:
            s = self.subflows[k]
            if self.actuator.set_backup(s.endpoint_id, backup) is False:
                continue  # refused by the fail-safe layer (logged there)
            ev = {
                "t": round(t, 6),
                "pos_m": None if pos_m is None else round(pos_m, 3),
                "operator": s.operator,
                "endpoint_id": s.endpoint_id,
                "backup": backup,
                "at": "fix" if pos_m is not None else "tick",
            }
            applied.append(ev)
            self.events.append(ev)
            self.applied += 1
            if self.log is not None:
                self.log(ev)
        return applied

    def run(
        self, positions: Iterable[tuple[float, float]], max_fixes: Optional[int] = None, tick_s: Optional[float] = 0.05
    ) -> int:
        """Consumes (t, pos_m) fixes until they end or `max_fixes` were used, deciding also every
        `tick_s` seconds between fixes (None: at fixes only); returns the number of fixes. The
        fixes are read in a thread, so a blocking source (gpsd) does not hold the ticks back; its
        errors are raised here."""
        if tick_s is None:
            n = 0
            for item in positions:
                if len(item) == 3 and item[2] is not None:
                    self.on_off_track(item[0], item[2])
                    continue
                self.on_fix(item[0], item[1])
                n += 1
                if max_fixes is not None and n >= max_fixes:
                    break
            return n
        q: queue.Queue[Any] = queue.Queue(maxsize=1000)
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
                if len(item) == 3 and item[2] is not None:  # (t, pos, offset beyond the limit)
                    self.on_off_track(item[0], item[2])
                    continue
                self.on_fix(item[0], item[1])
                n += 1
        finally:
            stop.set()
        return n
