"""One emulation run end to end (`run`), and the emulator benchmark through real TUN devices (`bench`)."""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from pathlib import Path
from typing import Any, Callable, Optional

from .. import jsonfmt, provenance
from ..results import Result, timeseries_frame
from .netns import EmulateError, check_environment, emulator_command, netstat_counters, sweep_stale
from .plan import DEFAULT_MAX_DURATION_S, ensure_cc, plan
from .topology import Topology
from .traffic import bulk


def describe_emulation(e: dict[str, Any]) -> str:
    """One line about how the run was emulated: kernel cc, substitutions, release-time errors."""
    parts = [f"kernel {e.get('kernel')}, cc {e.get('cc_kernel')}"]
    if e.get("substitutions"):
        parts.append("substituted: " + "; ".join(e["substitutions"]))
    for d in ("forward", "reverse"):
        t = (e.get("emulator", {}).get(d) or {}).get("timing") or {}
        if t:
            parts.append(f"{d} release error p50 {t['p50_us']:.0f} µs, p99 {t['p99_us']:.0f} µs")
    return "emulation: " + ", ".join(parts)


def _link_summary(stats: Optional[dict[str, Any]]) -> dict[str, Any]:
    """Per link and direction, the simulator's `links` block (`<link>.forward|reverse`)."""
    out: dict[str, Any] = {}
    for d in ("forward", "reverse"):
        for path in (stats or {}).get(d, {}).get("paths", []):
            for link in path.get("links", []):
                s = link["stats"]
                out[f"{link['name']}.{d}"] = {
                    "drops": s["drops_queue"] + s["drops_loss"] + s["drops_outage"],
                    "drops_loss": s["drops_loss"],
                    "drops_outage": s["drops_outage"],
                    "drops_queue": s["drops_queue"],
                    "max_queue_packets": s["max_queue_packets"],
                    "packets_delivered": s["delivered_packets"],
                }
    return dict(sorted(out.items()))


def _counter_diff(before: dict[str, int], after: dict[str, int]) -> dict[str, int]:
    return {k: v - before.get(k, 0) for k, v in sorted(after.items()) if v - before.get(k, 0) != 0}


def run(
    scenario: Any,
    *,
    substitute: bool = False,
    max_duration_s: float = DEFAULT_MAX_DURATION_S,
    command: Optional[str] = None,
    router: bool = False,
    progress: Optional[Callable[[str, Optional[float]], Any]] = None,
    pcap_dir: Optional[Path] = None,
    pcap_max_mb: float = 100.0,
) -> Result:
    """Emulates `scenario` on the real kernel; returns a `Result` in the simulator's schema
    (plus an ``emulation`` block: kernel, cc used, substitutions, emulator timing, MPTcpExt).
    `router` puts the receiver behind a forwarding router namespace (`Topology`).
    `progress(stage, fraction)` is told each stage as it begins and, while the transfer runs in
    real time, the fraction of the scenario's duration done (display.StageProgress shows it). With
    `pcap_dir`, every link direction's packets go to ``<pcap_dir>/<link>.<forward|reverse>.pcapng``
    as in the simulator (docs/pcap.md), at most `pcap_max_mb` MB in all."""
    if pcap_dir is not None and not (0 < pcap_max_mb <= 1e6):
        raise EmulateError(f"--pcap-max-mb = {pcap_max_mb:g}: must be in (0, 1000000] MB")

    def say(stage: str, fraction: Optional[float] = None) -> None:
        if progress is not None:
            progress(stage, fraction)

    check_environment()
    p = plan(scenario, substitute=substitute, max_duration_s=max_duration_s)
    emulator_command()
    ensure_cc(p.cc)
    sweep_stale()
    wall0 = time.time()
    mptcp = p.protocol == "mptcp"
    topo_args = dict(
        paths=p.paths,
        seed=p.seed,
        duration_s=p.duration_s,
        base_dir=p.base_dir,
        bin_ms=p.bin_s * 1000.0,
        mptcp=mptcp,
        backup=p.backup,
        router=router,
        pcap=None if pcap_dir is None else {"dir": str(pcap_dir), "max_bytes": int(round(pcap_max_mb * 1e6))},
    )
    say("building the namespaces and emulated paths")
    with Topology(**topo_args) as topo:  # type: ignore[arg-type]
        before = {ns: netstat_counters(ns) for ns in (topo.ns_a, topo.ns_b)}
        stage = f"emulating {p.duration_s:g} s on Linux {os.uname().release} in real time"
        say(stage, 0.0)
        m = bulk(topo, p, on_tick=lambda t: say(stage, t / p.duration_s))
        say("collecting the kernel's counters and removing the namespaces")
        after = {ns: netstat_counters(ns) for ns in (topo.ns_a, topo.ns_b)}
        stats = topo.stop_emulator()
        counters = {
            "sender": _counter_diff(before[topo.ns_a], after[topo.ns_a]),
            "receiver": _counter_diff(before[topo.ns_b], after[topo.ns_b]),
        }
    flow = m.flow
    if mptcp:
        flow["mp_prio_sent"] = counters["receiver"].get("MPPrioTx", 0)
        flow["mp_prio_received"] = counters["sender"].get("MPPrioRx", 0)
    n = len(m.series["goodput_mbps"])
    cols: dict[str, list[Any]] = {"time_s": [], "kind": [], "name": [], "metric": [], "value": []}

    def push(kind: str, name: str, metric: str, vals: list[Any]) -> None:
        for k in range(n):
            cols["time_s"].append(round(k * p.bin_s, 9))
            cols["kind"].append(kind)
            cols["name"].append(name)
            cols["metric"].append(metric)
            v = vals[k] if k < len(vals) else None
            cols["value"].append(float(v) if v is not None else None)

    for metric in ("goodput_mbps", "throughput_mbps", "cwnd_segments", "srtt_ms", "rto_ms"):
        push("flow", p.flow, metric, m.series.get(metric, []))
    for k, ss in sorted(m.subflow_series.items()):
        for metric in ("goodput_mbps", "throughput_mbps", "cwnd_segments", "srtt_ms"):
            push("subflow", f"{p.flow}/{p.paths[k]['name']}", metric, ss[metric])
    emulation: dict[str, Any] = {
        "mode": "emulation",
        "kernel": os.uname().release,
        "cc_requested": p.cc_requested,
        "cc_kernel": p.cc,
        "scheduler_requested": p.scheduler_requested,
        "scheduler_kernel": "default" if mptcp else None,
        "substitutions": p.substitutions,
        "topology": "sender - emulated paths - router - receiver" if router else "sender - emulated paths - receiver",
        "wall_start_unix_s": round(wall0, 3),
        "mp_prio_events": m.mp_prio_events,
        "netstat": counters if mptcp else {"sender": {}, "receiver": {}},
        "emulator": {
            d: {
                "timing": (stats or {}).get(d, {}).get("timing"),
                "realtime": (stats or {}).get(d, {}).get("realtime"),
                "write_errors": sum(x.get("write_errors", 0) for x in (stats or {}).get(d, {}).get("paths", [])),
            }
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
        "links": _link_summary(stats),
        "handovers": p.handovers,
        "emulation": emulation,
    }
    if pcap_dir is not None:
        summary["pcap"] = _pcap_summary(stats, pcap_dir)
    prov = provenance.collect(
        resolved_scenario=p.resolved_scenario,
        seed=p.seed,
        scenario_file=p.scenario_file,
        scenario_text=p.scenario_text,
        command=command,
    )
    if p.scenario_file:
        prov["reproduce"] = (
            f"mobipath emulate {p.scenario_file}"
            + (" --substitute" if substitute else "")
            + (" --router" if router else "")
        )
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


def _pcap_summary(stats: Optional[dict[str, Any]], pcap_dir: Path) -> dict[str, Any]:
    """The summary's ``pcap`` section from the emulator's stats (as the simulator's)."""
    files: dict[str, Any] = {}
    for d in ("forward", "reverse"):
        for path in (stats or {}).get(d, {}).get("paths", []):
            for ln in path.get("links", []):
                tap = ln.get("pcap")
                if tap:
                    files[tap["name"]] = {k: v for k, v in tap.items() if k != "name"}
    top = (stats or {}).get("pcap") or {}
    out: dict[str, Any] = {
        "directory": str(pcap_dir.name),
        "bytes_written": top.get("bytes_written", 0),
        "files": dict(sorted(files.items())),
    }
    if top.get("warning"):
        out["warning"] = f"capture stopped: {top['warning']}; the files hold the packets before it"
    return out


def bench(
    offered_mbps: float = 200.0,
    rate_mbps: float = 1000.0,
    delay_ms: float = 10.0,
    seconds: float = 3.0,
    payload: int = 1472,
    paths: int = 1,
) -> dict[str, Any]:
    """End-to-end emulator benchmark through real TUN devices: UDP offered at `offered_mbps` in
    total, spread evenly over `paths` emulated paths of `rate_mbps` each, from the sender
    namespace to the receiver namespace. Returns the delivered packets/s and Mbit/s (IP bytes)
    and the emulator's release-time error distribution. The Python sender itself limits the
    offered rate (~100k datagrams/s at best); the emulator's own ceiling is measured by
    `mobipath-emu --bench` (socketpairs, no kernel TUN cost)."""
    check_environment()
    sweep_stale()
    path_list = [
        {
            "name": f"bench{k}",
            "links": [{"name": f"bench{k}", "rate_mbps": rate_mbps, "delay_ms": delay_ms, "queue_packets": 10000}],
        }
        for k in range(paths)
    ]
    with Topology(paths=path_list, seed=1, duration_s=seconds + 2.0, base_dir=Path("."), tag="b") as topo:
        rxs, txs = [], []
        for k in range(paths):
            with topo.netns("b"):
                rx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            rx.bind((topo.addr("b", k), 6001))
            rx.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 32 << 20)
            rx.settimeout(0.5)
            with topo.netns("a"):
                tx = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
            tx.setsockopt(socket.SOL_SOCKET, socket.SO_SNDBUF, 32 << 20)
            tx.connect((topo.addr("b", k), 6001))
            rxs.append(rx)
            txs.append(tx)
        counts = [0, 0]
        lock = threading.Lock()
        stop = threading.Event()

        def sink(rx: socket.socket) -> None:
            buf = bytearray(65536)
            n_pk = n_b = 0
            while True:
                try:
                    n = rx.recv_into(buf)
                except socket.timeout:
                    if stop.is_set():
                        break
                    continue
                n_pk += 1
                n_b += n + 28
            with lock:
                counts[0] += n_pk
                counts[1] += n_b

        sinks = [threading.Thread(target=sink, args=(rx,), daemon=True) for rx in rxs]
        for t in sinks:
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
                with contextlib.suppress(OSError):
                    txs[sent % paths].send(body)
                sent += 1
            time.sleep(0.0005)
        time.sleep(delay_ms / 1000 + 0.3)
        stop.set()
        for t in sinks:
            t.join(2)
        stats = topo.stop_emulator() or {}
    fwd = stats.get("forward", {})
    return {
        "paths": paths,
        "offered_mbps": offered_mbps,
        "sent_packets": sent,
        "received_packets": counts[0],
        "received_mbps": counts[1] * 8 / seconds / 1e6,
        "received_pps": counts[0] / seconds,
        "timing_us": fwd.get("timing"),
        "realtime": fwd.get("realtime"),
        "links": [ln["stats"] for path in fwd.get("paths", []) for ln in path.get("links", [])],
    }
