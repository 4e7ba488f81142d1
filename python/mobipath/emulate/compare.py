"""Simulation and emulation of one scenario, side by side.

The simulator runs what the kernel runs: the scenario with every emulation substitution applied
(the kernel's congestion control; for MPTCP our ``linux-default`` scheduler; options the kernel
does not have removed), same seed, same links. The comparison lists each metric both ways and the
relative difference ``(simulation − emulation) / emulation``, and plots the goodput time series
(flow and, for MPTCP, each subflow) overlaid.
"""

from __future__ import annotations

import copy
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Optional

from .. import jsonfmt
from ..results import Result
from ..source import ScenarioSource
from .plan import DEFAULT_MAX_DURATION_S, Plan, load_toml, plan

#: Flow metrics compared, in report order.
FLOW_METRICS = ("goodput_mbps", "throughput_mbps", "retransmission_ratio", "segments_retransmitted", "mean_rtt_ms")


def kernel_equivalent(p: Plan) -> str:
    """The scenario as the kernel runs it (TOML text), for the simulator."""
    import tomli_w

    sc = copy.deepcopy(load_toml(p.scenario_text))
    fl = sc["flows"][0]
    fl["cc"] = p.cc
    if p.protocol == "mptcp":
        fl["scheduler"] = "linux-default"
    for field_ in p.not_applied:
        parts = field_.split(".")[1:]  # "flows[0].mptcp.rcv_buf_bytes" -> ["mptcp", "rcv_buf_bytes"]
        node: Any = fl
        for key in parts[:-1]:
            node = node.get(key, {})
        if isinstance(node, dict) and parts and parts[-1] != "scheduler":
            node.pop(parts[-1], None)
    return tomli_w.dumps(sc)


def simulate_equivalent(p: Plan) -> Result:
    """Runs the kernel-equivalent scenario in the simulator (same seed, same base folder)."""
    from .. import _core

    text = kernel_equivalent(p)
    src = ScenarioSource(text, p.scenario_file or "<string>", p.base_dir)
    raw = _core.run(text, src.file, str(src.base_dir), p.seed, None)
    return Result.from_raw(raw, src, p.seed)


def rel_diff(sim: Optional[float], emu: Optional[float]) -> Optional[float]:
    """(sim − emu) / emu; None when either is missing or emu is 0."""
    if sim is None or emu is None or emu == 0 or (isinstance(emu, float) and math.isnan(emu)):
        return None
    return (sim - emu) / emu


@dataclass
class Comparison:
    plan: Plan
    simulation: Result
    emulation: Result
    #: (metric, simulation, emulation, relative difference)
    rows: list[tuple[str, Optional[float], Optional[float], Optional[float]]]

    def to_json(self) -> dict[str, Any]:
        return {
            "scenario": self.plan.name,
            "seed": self.plan.seed,
            "substitutions": self.plan.substitutions,
            "simulated_as": {
                "cc": self.plan.cc,
                "scheduler": "linux-default" if self.plan.protocol == "mptcp" else None,
            },
            "kernel": self.emulation.summary.get("emulation", {}).get("kernel"),
            "rows": [
                {"metric": m, "simulation": s, "emulation": e, "relative_difference": d} for m, s, e, d in self.rows
            ],
        }

    def write(self, out: Path) -> Path:
        out.mkdir(parents=True, exist_ok=True)
        self.simulation.write(out / "simulation")
        self.emulation.write(out / "emulation")
        (out / "compare.json").write_text(jsonfmt.dumps(self.to_json()))
        plot(self, out / "compare.png")
        return out


def _rows(
    p: Plan, sim: dict[str, Any], emu: dict[str, Any]
) -> list[tuple[str, Optional[float], Optional[float], Optional[float]]]:
    fs = sim["flows"][p.flow]
    fe = emu["flows"][p.flow]
    rows = []
    for m in FLOW_METRICS:
        a, b = fs.get(m), fe.get(m)
        if a is None and b is None:
            continue
        rows.append((m, a, b, rel_diff(a, b)))
    for k, (ss, se) in enumerate(zip(fs.get("subflows", []), fe.get("subflows", []))):
        for m in ("goodput_mbps", "throughput_mbps"):
            a, b = ss.get(m), se.get(m)
            rows.append((f"subflow {k} ({p.paths[k]['name']}) {m}", a, b, rel_diff(a, b)))
    return rows


def compare(
    scenario: Any,
    *,
    substitute: bool = False,
    max_duration_s: float = DEFAULT_MAX_DURATION_S,
    command: Optional[str] = None,
    router: bool = False,
    progress: Optional[Callable[[str, Optional[float]], Any]] = None,
) -> Comparison:
    """Simulates and emulates `scenario` (same seed); see the module doc. `progress(stage,
    fraction)` as for `runner.run`."""
    from .runner import run

    p = plan(scenario, substitute=substitute, max_duration_s=max_duration_s)
    if progress is not None:
        progress(f"simulating {p.duration_s:g} s", None)
    sim = simulate_equivalent(p)
    emu = run(
        scenario,
        substitute=substitute,
        max_duration_s=max_duration_s,
        command=command,
        router=router,
        progress=progress,
    )
    return Comparison(plan=p, simulation=sim, emulation=emu, rows=_rows(p, sim.summary, emu.summary))


def _series(r: Result, kind: str, name: str, metric: str) -> tuple[list[float], list[float]]:
    import polars as pl

    ts = r.timeseries.filter((pl.col("kind") == kind) & (pl.col("name") == name) & (pl.col("metric") == metric)).sort(
        "time_s"
    )
    return ts["time_s"].to_list(), [v if v is not None else float("nan") for v in ts["value"].to_list()]


def plot(c: Comparison, path: Path) -> None:
    """Goodput over time, simulation vs emulation: the flow, then each subflow (MPTCP)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    panels = [("flow", c.plan.flow, f"flow {c.plan.flow}")]
    if c.plan.protocol == "mptcp":
        panels += [
            ("subflow", f"{c.plan.flow}/{p['name']}", f"subflow {k} ({p['name']})") for k, p in enumerate(c.plan.paths)
        ]
    fig, axes = plt.subplots(len(panels), 1, figsize=(8, 2.4 * len(panels)), sharex=True, squeeze=False)
    for ax, (kind, name, title) in zip(axes[:, 0], panels):
        for r, label, style in ((c.simulation, "simulation", "-"), (c.emulation, "emulation (Linux)", "--")):
            t, v = _series(r, kind, name, "goodput_mbps")
            ax.plot(t, v, style, label=label, linewidth=1.2)
        ax.set_title(title, fontsize=10)
        ax.set_ylabel("goodput (Mbit/s)")
        ax.grid(alpha=0.3)
    axes[0, 0].legend(loc="lower right", fontsize=8)
    axes[-1, 0].set_xlabel("time (s)")
    fig.suptitle(f"{c.plan.name}: simulation vs emulation (seed {c.plan.seed})", fontsize=11)
    fig.tight_layout()
    fig.savefig(path, dpi=120)
    plt.close(fig)
