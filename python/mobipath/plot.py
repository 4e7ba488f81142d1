"""`mobipath plot RESULT_DIR`: figures of one run's time series, one file per flow.

A flow's figure has a row of three panels — goodput, congestion window, smoothed RTT over time —
for the flow, and for an MPTCP flow one more row per subflow. Subflows are the time series of
kind ``subflow`` named ``<flow>/<subflow>``; the subflow names are taken from the data as they
are. Handovers listed in ``summary.json`` are marked on every panel as vertical spans from their
start to their end (colour = operator).

matplotlib is imported only here, through its object-oriented API (no pyplot state): PNG goes
through the Agg renderer, SVG through matplotlib's SVG writer.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

__all__ = ["plot_result", "PlotError", "Plotted", "FORMATS", "contrasting_text"]

FORMATS = ("png", "svg")
# (metric in the time series, axis label)
PANELS = (("goodput_mbps", "goodput (Mbit/s)"), ("cwnd_segments", "cwnd (segments)"), ("srtt_ms", "RTT (ms)"))
Series = tuple[list[float], list[float]]


class PlotError(Exception):
    """The directory does not hold a run's results, or they cannot be plotted."""


@dataclass
class Plotted:
    """What `plot_result` drew: the files written and, per file, its rows and handover spans."""

    files: list[Path] = field(default_factory=list)
    rows: dict[str, list[str]] = field(default_factory=dict)
    handover_spans: dict[str, int] = field(default_factory=dict)


def _load(result_dir: Path) -> tuple[dict[str, Any], Any]:
    import polars as pl

    summary_path, ts_path = result_dir / "summary.json", result_dir / "timeseries.parquet"
    for p in (summary_path, ts_path):
        if not p.is_file():
            raise PlotError(f"{p}: not found ({result_dir} is not a result directory of `mobipath run`)")
    try:
        summary = json.loads(summary_path.read_text(encoding="utf-8"))
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise PlotError(f"{summary_path}: not a summary ({e})") from None
    if not isinstance(summary, dict):
        raise PlotError(f"{summary_path}: not a summary (a JSON {type(summary).__name__}, not an object)")
    try:
        ts = pl.read_parquet(ts_path)
    except Exception as e:  # polars raises several types for a damaged file
        raise PlotError(f"{ts_path}: cannot read ({e})") from None
    missing = {"time_s", "kind", "name", "metric", "value"} - set(ts.columns)
    if missing:
        raise PlotError(f"{ts_path}: missing column(s) {', '.join(sorted(missing))}")
    return summary, ts


def _series(ts: Any, kind: str) -> dict[tuple[str, str], Series]:
    """(name, metric) -> (times, values) for the rows of `kind`, in time order."""
    import polars as pl

    out: dict[tuple[str, str], Series] = {}
    part = ts.filter(pl.col("kind") == kind).sort("time_s")
    for (name, metric), g in part.group_by(["name", "metric"], maintain_order=True):
        out[(str(name), str(metric))] = (g["time_s"].to_list(), g["value"].to_list())
    return out


def _flow_names(summary: Mapping[str, Any], flows: Mapping[tuple[str, str], Series]) -> list[str]:
    names = list((summary.get("flows") or {}).keys()) if isinstance(summary.get("flows"), Mapping) else []
    for name, _ in flows:
        if name not in names:
            names.append(name)
    return names


def subflows_of(flow: str, subflows: Mapping[tuple[str, str], Series]) -> list[str]:
    """The subflow names of `flow` in the data (``<flow>/<name>`` → ``<name>``), in order of
    first appearance."""
    prefix = flow + "/"
    out: list[str] = []
    for name, _ in subflows:
        if name.startswith(prefix) and len(name) > len(prefix) and name[len(prefix) :] not in out:
            out.append(name[len(prefix) :])
    return out


#: Longest flow name kept whole in a file name (a file name may have 255 bytes; `flow-`, the
#: extension and a digest must fit beside it).
MAX_NAME_IN_FILE = 100


def _file_name(flow: str, fmt: str) -> str:
    """`flow-<name>.<fmt>` with the name's unsafe characters replaced; a longer name is cut and
    gets 12 hex digits of its SHA-256, so long names that share a beginning stay apart."""
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", flow).strip("._") or "flow"
    if len(safe) > MAX_NAME_IN_FILE:
        import hashlib

        digest = hashlib.sha256(flow.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        safe = f"{safe[: MAX_NAME_IN_FILE - 13].rstrip('._')}-{digest}"
    return f"flow-{safe}.{fmt}"


def _shown(name: str) -> str:
    """A name as a figure shows it: long ones cut (the layout has room for about 100 characters);
    `parse_math=False` where it is drawn keeps `$...$` in a name from being read as TeX."""
    return name if len(name) <= 100 else name[:99] + "…"


def _handovers(summary: Mapping[str, Any]) -> list[tuple[float, float, str, bool]]:
    """(start, end, operator, failed) of each handover; `failed` when a declared handover type
    reports a radio-link failure, a failed access or a DAPS fallback."""
    out = []
    listed = summary.get("handovers")
    for h in listed if isinstance(listed, list) else []:
        if isinstance(h, Mapping) and isinstance(h.get("start_s"), (int, float)):
            end = float(h["end_s"]) if isinstance(h.get("end_s"), (int, float)) else float(h["start_s"])
            if not (math.isfinite(h["start_s"]) and math.isfinite(end)):
                continue
            out.append((float(h["start_s"]), float(end), str(h.get("operator", "")), h.get("failed") is True))
    return out


def plot_result(
    result_dir: Path,
    fmt: str = "png",
    out_dir: Optional[Path] = None,
    flows: Optional[Sequence[str]] = None,
    dpi: int = 110,
) -> Plotted:
    """Writes one figure per flow of the run in `result_dir` into `out_dir` (default:
    `result_dir`) and returns what was drawn."""
    if fmt not in FORMATS:
        raise PlotError(f"--format {fmt!r}: must be one of {', '.join(FORMATS)}")
    result_dir = Path(result_dir)
    summary, ts = _load(result_dir)
    flow_series, sub_series = _series(ts, "flow"), _series(ts, "subflow")
    names = _flow_names(summary, flow_series)
    # `[output] series` may keep some flows' series or none (large runs): plot those it kept.
    kept = {name for name, _ in flow_series}
    names = [n for n in names if n in kept]
    if flows:
        unknown = [f for f in flows if f not in names]
        if unknown:
            raise PlotError(f"--flow {', '.join(unknown)}: no such flow (the run has {', '.join(names) or 'none'})")
        names = [n for n in names if n in flows]
    if not names:
        raise PlotError(
            f"{result_dir}: the run has no flow time series to plot (the scenario's [output] series keeps them: "
            '"all", or a list of flow names)'
        )
    out = Path(out_dir) if out_dir is not None else result_dir
    out.mkdir(parents=True, exist_ok=True)
    handovers = _handovers(summary)
    d = summary.get("duration_s")
    duration = float(d) if isinstance(d, (int, float)) and not isinstance(d, bool) and math.isfinite(d) else None
    done = Plotted()
    used: set[str] = set()
    for flow in names:
        rows = [("flow " + flow, {m: flow_series.get((flow, m)) for m, _ in PANELS})]
        for sub in subflows_of(flow, sub_series):
            rows.append((f"subflow {sub}", {m: sub_series.get((f"{flow}/{sub}", m)) for m, _ in PANELS}))
        name = _file_name(flow, fmt)
        if name in used:  # two names that differ only in replaced characters
            import hashlib

            digest = hashlib.sha256(flow.encode("utf-8", "surrogatepass")).hexdigest()[:12]
            name = f"{name[: -len(fmt) - 1]}-{digest}.{fmt}"
        used.add(name)
        path = out / name
        spans = _draw(path, fmt, flow, rows, handovers, duration, dpi)
        done.files.append(path)
        done.rows[flow] = [label for label, _ in rows]
        done.handover_spans[flow] = spans
    return done


def _draw(
    path: Path,
    fmt: str,
    flow: str,
    rows: list[tuple[str, dict[str, Optional[Series]]]],
    handovers: list[tuple[float, float, str, bool]],
    duration: Optional[float],
    dpi: int,
) -> int:
    """Draws one flow's figure; returns the number of handovers marked (each once, on all panels)."""
    from matplotlib.figure import Figure

    fig = Figure(figsize=(12, 2.3 * len(rows) + 0.6))
    axes = fig.subplots(len(rows), len(PANELS), sharex=True, squeeze=False)
    operators = sorted({op for _, _, op, _ in handovers})
    colours = {op: f"C{(i + 3) % 10}" for i, op in enumerate(operators)}
    for r, (label, series) in enumerate(rows):
        for c, (metric, ylabel) in enumerate(PANELS):
            ax = axes[r][c]
            s = series.get(metric)
            if s is not None and s[0]:
                ax.plot(s[0], s[1], lw=0.8, color="C0" if r == 0 else f"C{r % 10}")
            else:
                ax.text(0.5, 0.5, "no data", ha="center", va="center", transform=ax.transAxes, color="0.5")
            for start, end, op, failed in handovers:
                # edge line: a 40 ms interruption is thinner than a pixel on a long run; a failed
                # handover (radio-link failure, failed access, DAPS fallback) is hatched
                ax.axvspan(start, end, color=colours[op], alpha=0.35, lw=0.8, hatch="//" if failed else None)
            ax.set_ylabel(ylabel, fontsize=8)
            ax.tick_params(labelsize=7)
            ax.grid(alpha=0.3)
            if c == 0:
                ax.set_title(_shown(label), fontsize=9, loc="left", parse_math=False)
            if duration:
                ax.set_xlim(0, duration)
    for c in range(len(PANELS)):
        axes[-1][c].set_xlabel("time (s)", fontsize=8)
    if handovers:
        from matplotlib.patches import Patch

        handles = [Patch(color=colours[op], alpha=0.5, label=f"handover, operator {op}") for op in operators]
        if any(failed for *_, failed in handovers):
            handles.append(Patch(facecolor="none", edgecolor="0.3", hatch="//", label="failed handover"))
        axes[0][0].legend(
            handles=handles,
            fontsize=7,
            loc="lower right",
        )
    fig.suptitle(_shown(flow), fontsize=10, parse_math=False)
    fig.tight_layout()
    metadata: dict[str, Any] = {"Date": None} if fmt == "svg" else {}
    fig.savefig(path, format=fmt, dpi=dpi, metadata=metadata)
    return len(handovers)


def contrasting_text(rgba: Any) -> str:
    """Black or white, whichever contrasts more with a cell of colour `rgba` (WCAG 2.1 relative
    luminance and contrast ratio): a heatmap's numbers stay readable on every colour of the map,
    the light end of viridis included."""

    def linear(c: float) -> float:
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4

    r, g, b = (linear(float(c)) for c in rgba[:3])
    lum = 0.2126 * r + 0.7152 * g + 0.0722 * b
    return "black" if (lum + 0.05) / 0.05 >= 1.05 / (lum + 0.05) else "white"
