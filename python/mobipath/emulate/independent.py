"""The independent reference path: a kernel testbed that shares nothing with the
simulator's link model, for checking the *simulator* (the emulator mode checks the emulator).

::

    netns mp-<pid>-ic (sender)   netns mp-<pid>-ir (router)            netns mp-<pid>-id       netns mp-<pid>-is (receiver)
    10.79.1.1 ic0 ══ veth ══ ir0   ir1 [tbf: rate, burst, limit] ══ veth ══ id0   it0 ─TUN─► relay ─TUN─► is0 10.79.4.2
                                                                                      ◄── delay ◄──

- **Bottleneck:** the kernel's own ``tbf`` qdisc on the router's egress veth ``ir1`` (rate R,
  a stated burst, a byte limit of one BDP of frames). It sits in a router namespace, not on the
  sender's device, because on the sender's own device TCP Small Queues would keep the qdisc
  almost empty; the router's IP input orphans each skb, as on a real router. ``tbf`` counts
  Ethernet frames (a 1448-byte payload is a 1514-byte frame) and segments the sender's GSO
  packets that exceed its burst.
- **Delay and loss:** ``mobipath-emu --relay`` (``crates/emu/src/relay.rs``): a FIFO delay line
  of D ms each way and Bernoulli loss p on the data direction, drawn from its own ChaCha8
  stream; no rate, no queue limit, nothing from ``mobipath_sim::link``. Loss sits after the
  bottleneck, as in the simulator (a lost packet used the bucket's tokens).

The simulator models this path with a ``token_bucket`` link (same rate, burst, limit, 14 bytes
of frame overhead; ``delay_ms`` = D, Bernoulli p on the forward direction).

Cleanup as in ``topology.py``: the context manager deletes every namespace and stops the relay
on normal exit, errors, SIGINT and SIGTERM; the relay's TUNs vanish with it and it gets SIGTERM
when this process dies; ``netns.sweep_stale()`` removes the namespaces of a SIGKILLed run.
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import tempfile
import threading
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from .netns import (
    EmulateError,
    InNetns,
    Terminated,
    check_environment,
    delete_namespace,
    emulator_command,
    ip,
    ns_exec,
    stop_child,
    sweep_stale,
    sysctl,
)

#: The tbf burst the reference path states: ten full frames.
BURST_BYTES = 10 * 1514
#: Bytes tbf counts per packet beyond its IP size on a veth (the Ethernet header).
FRAME_OVERHEAD = 14


@dataclass
class IndependentPath:
    """Sender and receiver namespaces joined by router (tbf) → relay (delay, loss); see the module doc."""

    rate_mbps: float
    delay_ms: float
    limit_bytes: int
    burst_bytes: int = BURST_BYTES
    loss: float = 0.0
    seed: int = 1
    duration_s: float = 10.0
    spin_us: int = 100
    tag: str = "i"
    ns: dict[str, str] = field(default_factory=dict)
    relay: Optional[subprocess.Popen] = None
    relay_stats: Optional[dict[str, Any]] = None
    _tmp: Optional[tempfile.TemporaryDirectory] = None
    _old_handlers: dict[int, Any] = field(default_factory=dict)

    def __post_init__(self) -> None:
        pid = os.getpid()
        self.ns = {role: f"mp-{pid}-{self.tag}{role}" for role in ("c", "r", "d", "s")}

    # The interface bulk() uses (same as Topology's for a single TCP path).
    def addr(self, side: str, k: int = 0) -> str:
        return "10.79.1.1" if side == "a" else "10.79.4.2"

    def netns(self, side: str) -> InNetns:
        return InNetns(self.ns["c"] if side == "a" else self.ns["s"])

    def start_clock(self) -> None:
        """Nothing is scheduled on the path (no rate changes), so time zero is free."""

    def path_of_addr(self, address: str) -> Optional[int]:
        return 0

    def __enter__(self) -> IndependentPath:
        if threading.current_thread() is threading.main_thread():
            for sig in (signal.SIGTERM, signal.SIGHUP):
                self._old_handlers[sig] = signal.signal(sig, _on_signal)
        try:
            self._build()
        except BaseException:
            self.close()
            raise
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    def _build(self) -> None:
        c, r, d, s = (self.ns[k] for k in ("c", "r", "d", "s"))
        for n in (c, r, d, s):
            ip("netns", "add", n)
            ip("-n", n, "link", "set", "lo", "up")
            sysctl(
                n,
                "net.ipv6.conf.all.disable_ipv6=1",
                "net.ipv6.conf.default.disable_ipv6=1",
                "net.ipv4.conf.all.rp_filter=0",
                "net.ipv4.conf.default.rp_filter=0",
            )
        for n in (r, d):
            sysctl(n, "net.ipv4.ip_forward=1")
        ip("-n", c, "link", "add", "ic0", "type", "veth", "peer", "name", "ir0", "netns", r)
        ip("-n", r, "link", "add", "ir1", "type", "veth", "peer", "name", "id0", "netns", d)
        for n, dev, a in (
            (c, "ic0", "10.79.1.1/24"),
            (r, "ir0", "10.79.1.2/24"),
            (r, "ir1", "10.79.2.1/24"),
            (d, "id0", "10.79.2.2/24"),
        ):
            ip("-n", n, "addr", "add", a, "dev", dev)
            ip("-n", n, "link", "set", dev, "up")
        ip("-n", c, "route", "add", "default", "via", "10.79.1.2", "dev", "ic0")
        ip("-n", r, "route", "add", "10.79.4.0/24", "via", "10.79.2.2", "dev", "ir1")
        ip("-n", d, "route", "add", "10.79.1.0/24", "via", "10.79.2.1", "dev", "id0")
        # The bottleneck: tbf on the router's egress toward the relay (data direction only).
        ns_exec(
            r,
            "tc",
            "qdisc",
            "add",
            "dev",
            "ir1",
            "root",
            "tbf",
            "rate",
            f"{round(self.rate_mbps * 1e6)}bit",
            "burst",
            str(self.burst_bytes),
            "limit",
            str(self.limit_bytes),
        )
        # The relay: TUN it0 in d (data in) → delay, loss → TUN is0 in s.
        self._tmp = tempfile.TemporaryDirectory(prefix="mobipath-relay-")
        stats = Path(self._tmp.name) / "relay-stats.json"
        self.relay = subprocess.Popen(
            [
                *emulator_command(),
                "--relay",
                "--a",
                f"{d}:it0",
                "--b",
                f"{s}:is0",
                "--delay-ms",
                repr(self.delay_ms),
                "--loss",
                repr(self.loss),
                "--seed",
                str(self.seed),
                "--seconds",
                repr(self.duration_s + 5.0),
                "--spin-us",
                str(self.spin_us),
                "--stats",
                str(stats),
            ],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
        )
        line = _read_line(self.relay, 5.0)
        if line.strip() != "ready":
            err = self._stop_relay()
            hint = ""
            if "--relay" not in line + err:
                hint = (
                    f" ({' '.join(emulator_command())} has no --relay: an older build? Rebuild it with "
                    "`cargo build --release -p mobipath-emu` or point MOBIPATH_EMU at a current one)"
                )
            raise EmulateError(f"the relay did not start: {(line + err).strip()}{hint}")
        for n, dev, a in ((d, "it0", "10.79.3.1/24"), (s, "is0", "10.79.4.2/24")):
            ip("-n", n, "addr", "add", a, "dev", dev)
            ip("-n", n, "link", "set", dev, "up", "txqueuelen", "10000")
        ip("-n", d, "route", "add", "10.79.4.0/24", "dev", "it0")
        ip("-n", s, "route", "add", "default", "dev", "is0")

    def tbf_stats(self) -> dict[str, int]:
        """The tbf qdisc's counters: bytes and packets sent, drops, overlimits."""
        out = ns_exec(self.ns["r"], "tc", "-s", "qdisc", "show", "dev", "ir1").stdout
        m = re.search(r"Sent (\d+) bytes (\d+) pkt \(dropped (\d+), overlimits (\d+)", out)
        if not m:
            return {}
        return dict(zip(("sent_bytes", "sent_packets", "dropped", "overlimits"), map(int, m.groups())))

    def _stop_relay(self) -> str:
        if self.relay is None:
            return ""
        p, self.relay = self.relay, None
        err, stats = stop_child(p, Path(self._tmp.name) / "relay-stats.json" if self._tmp is not None else None)
        if stats is not None:
            self.relay_stats = stats
        return err

    def stop_relay(self) -> Optional[dict[str, Any]]:
        err = self._stop_relay()
        if self.relay_stats is None and err.strip():
            raise EmulateError(f"the relay failed: {err.strip()}")
        return self.relay_stats

    def close(self) -> None:
        try:
            self._stop_relay()
        finally:
            for n in self.ns.values():
                delete_namespace(n)
            if self._tmp is not None:
                self._tmp.cleanup()
                self._tmp = None
            for sig, h in self._old_handlers.items():
                signal.signal(sig, h)
            self._old_handlers.clear()


def _on_signal(signum: int, frame: Any) -> None:
    raise Terminated(f"signal {signum}")


def _read_line(p: subprocess.Popen, timeout_s: float) -> str:
    out: list[str] = []
    t = threading.Thread(target=lambda: out.append(p.stdout.readline()), daemon=True)  # type: ignore[union-attr]
    t.start()
    t.join(timeout_s)
    return out[0] if out else ""


def run(text: str) -> dict[str, Any]:
    """Runs scenario `text` (one bulk TCP flow over one ``token_bucket`` link) on the reference
    path; returns the flow summary (the simulator's keys) plus ``reference``: the tbf and relay
    counters."""
    from .plan import ensure_cc, plan
    from .traffic import bulk

    check_environment()
    if shutil.which("tc") is None:
        raise EmulateError("the independent reference needs the `tc` command (iproute2) for its tbf bottleneck")
    p = plan(text)
    if p.protocol != "tcp" or len(p.paths) != 1 or len(p.paths[0]["links"]) != 1:
        raise EmulateError("the independent reference runs one TCP flow over one link")
    link = p.paths[0]["links"][0]
    tb = link.get("token_bucket")
    if not tb:
        raise EmulateError(
            f"links[{link['name']!r}]: the independent reference needs a token_bucket link (the tbf it builds)"
        )
    if int(tb.get("frame_overhead_bytes", FRAME_OVERHEAD)) != FRAME_OVERHEAD:
        raise EmulateError(
            f"token_bucket.frame_overhead_bytes = {tb['frame_overhead_bytes']}: tbf on a veth counts {FRAME_OVERHEAD}"
        )
    loss = link.get("loss") or {}
    if loss and loss.get("model") != "bernoulli":
        raise EmulateError("the independent reference's relay draws Bernoulli loss only")
    if link.get("reorder") or link.get("outages") or link.get("reverse"):
        raise EmulateError("the independent reference has no reorder, outages or reverse overrides")
    ensure_cc(p.cc)
    sweep_stale()
    path = IndependentPath(
        rate_mbps=float(tb["rate_mbps"]),
        delay_ms=float(link["delay_ms"]),
        limit_bytes=int(tb["limit_bytes"]),
        burst_bytes=int(tb["burst_bytes"]),
        loss=float(loss.get("p", 0.0)),
        seed=p.seed,
        duration_s=p.duration_s,
    )
    with path:
        m = bulk(path, p)  # type: ignore[arg-type]
        tbf = path.tbf_stats()
        relay = path.stop_relay() or {}
    flow = dict(m.flow)
    flow["reference"] = {"tbf": tbf, "relay": relay}
    return flow
