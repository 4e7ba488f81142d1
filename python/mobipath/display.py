"""Terminal output for the CLI: summary tables and the run progress bar.

Tables show whatever scalar metrics the summary holds: the usual ones first, in a fixed order,
then any others alphabetically. MPTCP flows are shown compactly instead: a few connection-level
metrics in one table, then one table per flow with a row per subflow (subflow names come from the
summary, whatever they are). Everything else stays in ``summary.json``.

The tables are built as plain `Grid`s and drawn by rich on a terminal (`print_summary`), or as
aligned text when the output goes to a file or a pipe (`write_plain_summary`). Why two renderers:
importing `rich.console` costs about 33 ms, more than `mobipath run` spends on a short scenario, and
it buys nothing without a terminal (sweeps and shell loops call `mobipath run` thousands
of times with its output redirected). Both render the same cells (tested).
"""

from __future__ import annotations

import math
import os
import time
from _collections_abc import Mapping  # collections.abc without the collections package (start-up)

# Annotations only: importing typing costs ~4.5 ms of every `mobipath run`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterable
    from typing import IO, Any, Optional

    from rich.console import Console
    from rich.table import Table

FLOW_METRICS = (
    "goodput_mbps",
    "retransmission_ratio",
    "timeouts",
    "fast_retransmits",
    "mean_rtt_ms",
    "bytes_delivered",
)
LINK_METRICS = ("drops", "drop_ratio", "utilization", "mean_queue_packets", "bytes_sent")
# The compact view of an MPTCP connection and of its subflows: (summary key, column label);
# metrics absent from a summary are left out.
MPTCP_FLOW_METRICS = (
    ("goodput_mbps", "goodput Mbit/s"),
    ("retransmission_ratio", "retx ratio"),
    ("reinjections", "reinjections"),
    ("timeouts", "RTOs"),
    ("hol_delay_p99_ms", "HoL p99 ms"),
    ("ofo_mean_bytes", "OFO mean B"),
)
SUBFLOW_METRICS = (
    ("goodput_mbps", "goodput Mbit/s"),
    ("throughput_mbps", "throughput Mbit/s"),
    ("mean_rtt_ms", "mean RTT ms"),
    ("segments_retransmitted", "retransmitted"),
    ("timeouts", "RTOs"),
    ("scheduler_decisions", "decisions"),
    ("backup_at_end", "backup at end"),
)


def fmt_value(v: Any) -> str:
    """A compact, readable rendering of one metric value."""
    if v is None:
        return "—"
    if isinstance(v, bool):
        return "yes" if v else "no"
    if isinstance(v, int):
        return str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            return str(v)
        if v.is_integer() and abs(v) < 1e15:
            return str(int(v))
        if abs(v) >= 1000:
            return f"{v:.1f}"
        return f"{v:.4g}"
    return str(v)


def _is_scalar(v: Any) -> bool:
    return v is None or isinstance(v, (bool, int, float, str))


def entities(section: Any) -> list[tuple[str, Mapping[str, Any]]]:
    """(name, metrics) pairs from a summary section given as a dict or a list of dicts."""
    if isinstance(section, Mapping):
        return [(str(k), v) for k, v in section.items() if isinstance(v, Mapping)]
    if isinstance(section, list):
        out = []
        for i, item in enumerate(section):
            if isinstance(item, Mapping):
                out.append((str(item.get("name", i)), item))
        return out
    return []


def metric_columns(rows: Iterable[Mapping[str, Any]], preferred: Iterable[str]) -> list[str]:
    """Scalar keys present in any row: `preferred` ones first (in order), then the rest sorted."""
    present: dict[str, None] = {}
    for row in rows:
        for k, v in row.items():
            if k != "name" and _is_scalar(v):
                present[k] = None
    first = [k for k in preferred if k in present]
    return first + sorted(k for k in present if k not in first)


class Grid:
    """A table to show: a title, column labels, which columns are right-aligned, rows of cells
    (strings, the first one the row's name)."""

    __slots__ = ("title", "labels", "right", "rows")

    def __init__(self, title: str, labels: list[str], right: list[bool], rows: list[list[str]]):
        self.title = title
        self.labels = labels
        self.right = right
        self.rows = rows


def entity_grid(title: str, section: Any, preferred: Iterable[str], width: int = 80) -> Optional[Grid]:
    """A table of metrics per entity (flow, link).

    One row per entity and one column per metric when that fits in `width`; otherwise (many
    metrics, few entities) one row per metric and one column per entity.
    """
    items = entities(section)
    if not items:
        return None
    cols = metric_columns((m for _, m in items), preferred)
    label = title.rstrip("s").lower()
    cells = [[fmt_value(m.get(c)) for c in cols] for _, m in items]
    col_widths = [max([len(c)] + [len(row[i]) for row in cells]) for i, c in enumerate(cols)]
    name_width = max([len(label)] + [len(n) for n, _ in items])
    wide = name_width + sum(w + 3 for w in col_widths) + 4
    if wide <= width:
        labels = [label] + list(cols)
        rows = [[name] + row for (name, _), row in zip(items, cells)]
    else:
        labels = ["metric"] + [name for name, _ in items]
        rows = [[c] + [row[i] for row in cells] for i, c in enumerate(cols)]
    return Grid(title, labels, [False] + [True] * (len(labels) - 1), rows)


def rich_table(grid: Grid) -> Table:
    """A grid as a rich table: the name column bold; a narrow terminal wraps a number rather
    than cutting it to "12…" (overflow="fold")."""
    from rich.markup import escape
    from rich.table import Table

    table = Table(title=grid.title, title_justify="left")
    for i, (label, right) in enumerate(zip(grid.labels, grid.right)):
        table.add_column(
            escape(label), justify="right" if right else "left", style="bold" if i == 0 else None, overflow="fold"
        )
    for row in grid.rows:
        table.add_row(*(escape(v) for v in row))
    return table


def plain_lines(grid: Grid) -> list[str]:
    """A grid as aligned text: the title, the labels, then the rows; columns two spaces apart,
    numbers right-aligned."""
    widths = [max([len(grid.labels[i])] + [len(r[i]) for r in grid.rows]) for i in range(len(grid.labels))]

    def line(cells: list[str]) -> str:
        return "  ".join(c.rjust(w) if right else c.ljust(w) for c, w, right in zip(cells, widths, grid.right)).rstrip()

    return [grid.title, line(grid.labels)] + [line(r) for r in grid.rows]


def is_mptcp(flow: Mapping[str, Any]) -> bool:
    return flow.get("protocol") == "mptcp" or isinstance(flow.get("subflows"), list)


def subflow_name(flow: str, index: int, sub: Mapping[str, Any]) -> str:
    """A subflow's name as the summary gives it (``name``, else ``path``), without a leading
    ``<flow>/``; its position when the summary names it neither way."""
    name = sub.get("name") or sub.get("path")
    if not isinstance(name, str) or not name:
        return str(index)
    return name[len(flow) + 1 :] if name.startswith(flow + "/") and len(name) > len(flow) + 1 else name


def compact_grid(
    title: str, label: str, rows: list[tuple[str, Mapping[str, Any]]], metrics: Iterable[tuple[str, str]]
) -> Optional[Grid]:
    """One row per entity; as columns only `metrics` ((key, label) pairs) present in some row."""
    if not rows:
        return None
    cols = [(k, lab) for k, lab in metrics if any(k in r for _, r in rows)]
    return Grid(
        title,
        [label] + [lab for _, lab in cols],
        [False] + [True] * len(cols),
        [[name] + [fmt_value(r.get(k)) for k, _ in cols] for name, r in rows],
    )


def mptcp_grids(flows: list[tuple[str, Mapping[str, Any]]]) -> list[Grid]:
    """The MPTCP flows' compact table, then a subflow table per flow."""
    out: list[Grid] = []
    labelled = []
    for name, f in flows:
        how = ", ".join(str(f[k]) for k in ("scheduler", "cc") if isinstance(f.get(k), str))
        labelled.append((f"{name} ({how})" if how else name, f))
    grid = compact_grid("MPTCP flows", "flow", labelled, MPTCP_FLOW_METRICS)
    if grid is not None:
        out.append(grid)
    for name, f in flows:
        subs = [s for s in f.get("subflows") or [] if isinstance(s, Mapping)]
        rows = [(subflow_name(name, i, s), s) for i, s in enumerate(subs)]
        grid = compact_grid(f"Subflows of {name}", "subflow", rows, SUBFLOW_METRICS)
        if grid is not None:
            out.append(grid)
    return out


def summary_grids(summary: Mapping[str, Any], width: int) -> tuple[Optional[str], list[Grid]]:
    """What a run summary shows: a line of its top-level scalars (None if there are none), then
    the tables: single-path flows, MPTCP flows and their subflows, links, any other section, and
    the packet captures' files."""
    scalars = {k: v for k, v in sorted(summary.items()) if _is_scalar(v)}
    line = "  ".join(f"{k}: {fmt_value(v)}" for k, v in scalars.items()) if scalars else None
    flows = entities(summary.get("flows"))
    mptcp = [(n, f) for n, f in flows if is_mptcp(f)]
    single = {n: f for n, f in flows if not is_mptcp(f)}
    grids = [entity_grid("Flows", single, FLOW_METRICS, width)] + list(mptcp_grids(mptcp))
    grids.append(entity_grid("Links", summary.get("links"), LINK_METRICS, width))
    for key, value in sorted(summary.items()):
        if key in ("flows", "links", "pcap") or _is_scalar(value):
            continue
        grids.append(entity_grid(key.capitalize(), value, (), width))
    pcap = summary.get("pcap")
    if isinstance(pcap, Mapping) and isinstance(pcap.get("files"), Mapping):
        grids.append(entity_grid("Packet captures (pcap/)", pcap["files"], (), width))
    return line, [g for g in grids if g is not None]


def print_summary(console: Console, summary: Mapping[str, Any], header: Optional[str] = None) -> None:
    """Prints a run summary with rich (`header` is rich markup)."""
    from rich.markup import escape

    if header:
        console.print(header)
    line, grids = summary_grids(summary, console.width)
    if line is not None:
        console.print(escape(line))
    for grid in grids:
        console.print(rich_table(grid))


def plain_width() -> int:
    """The width plain output is laid out for: $COLUMNS, else 80 (what rich assumes without a
    terminal)."""
    try:
        return max(int(os.environ.get("COLUMNS", "")), 20)
    except ValueError:
        return 80


def write_plain_summary(
    out: IO[str], summary: Mapping[str, Any], header: Optional[str] = None, width: Optional[int] = None
) -> None:
    """Writes a run summary as plain text (`header` is plain text), tables a blank line apart."""
    lines = [header] if header else []
    line, grids = summary_grids(summary, plain_width() if width is None else width)
    if line is not None:
        lines.append(line)
    for grid in grids:
        lines += [""] + plain_lines(grid)
    out.write("\n".join(lines) + "\n")


class RunProgress:
    """A progress bar on stderr that appears only once a run has lasted `delay_s` seconds.

    Call the object with the fraction done (it is the `progress` callback of `mobipath.run`).
    """

    def __init__(self, label: str, console: Console, delay_s: float = 0.5):
        self.label = label
        self.console = console
        self.delay_s = delay_s
        self._start = time.monotonic()
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, fraction: float) -> None:
        if self._progress is None:
            if time.monotonic() - self._start < self.delay_s:
                return
            from rich.progress import (
                BarColumn,
                Progress,
                TaskProgressColumn,
                TextColumn,
                TimeElapsedColumn,
                TimeRemainingColumn,
            )

            self._progress = Progress(
                TextColumn("{task.description}"),
                BarColumn(),
                TaskProgressColumn(),
                TimeElapsedColumn(),
                TimeRemainingColumn(),
                console=self.console,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(self.label, total=1.0)
        self._progress.update(self._task, completed=min(max(float(fraction), 0.0), 1.0))

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self) -> RunProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()


class StageProgress:
    """What a long command is doing, on stderr, from its first second: on a terminal a live line
    with the stage, a bar when the stage's share done is known (an emulation's real time) and
    the time elapsed; elsewhere (a log, a pipe) one line per stage as it begins.

    Call the object with the stage's text and, optionally, the fraction of it done (the
    `progress` callback of `mobipath.emulate.run`, `compare` and the fidelity grid)."""

    def __init__(self, console: Console, live: Optional[bool] = None):
        self.console = console
        self.live = console.is_terminal if live is None else live
        self._stage: Optional[str] = None
        self._progress: Any = None
        self._task: Any = None

    def __call__(self, stage: str, fraction: Optional[float] = None) -> None:
        if not self.live:
            if stage != self._stage:
                self.console.print(f"{stage} …", markup=False, highlight=False)
            self._stage = stage
            return
        if self._progress is None:
            from rich.progress import BarColumn, Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

            self._progress = Progress(
                SpinnerColumn(),
                TextColumn("{task.description}", markup=False),
                BarColumn(),
                TimeElapsedColumn(),
                console=self.console,
                transient=True,
            )
            self._progress.start()
            self._task = self._progress.add_task(stage, total=None)
        done = None if fraction is None else min(max(float(fraction), 0.0), 1.0)
        self._progress.update(self._task, description=stage, total=None if done is None else 1.0, completed=done or 0)
        self._stage = stage

    def close(self) -> None:
        if self._progress is not None:
            self._progress.stop()
            self._progress = None

    def __enter__(self) -> StageProgress:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
