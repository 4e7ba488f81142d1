"""Terminal output for the CLI: summary tables and the run progress bar (rich).

Tables show whatever scalar metrics the summary holds: the usual ones first, in a fixed order,
then any others alphabetically. Nested values (e.g. per-subflow breakdowns) stay in
``summary.json``.
"""
from __future__ import annotations

import math
import time
from typing import Any, Dict, Iterable, List, Mapping, Optional, Tuple

from rich.console import Console
from rich.markup import escape
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


def entities(section: Any) -> List[Tuple[str, Mapping[str, Any]]]:
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


def metric_columns(rows: Iterable[Mapping[str, Any]], preferred: Iterable[str]) -> List[str]:
    """Scalar keys present in any row: `preferred` ones first (in order), then the rest sorted."""
    present: Dict[str, None] = {}
    for row in rows:
        for k, v in row.items():
            if k != "name" and _is_scalar(v):
                present[k] = None
    first = [k for k in preferred if k in present]
    return first + sorted(k for k in present if k not in first)


def entity_table(title: str, section: Any, preferred: Iterable[str], width: int = 80) -> Optional[Table]:
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
    table = Table(title=title, title_justify="left")
    if wide <= width:
        table.add_column(label, style="bold")
        for c in cols:
            table.add_column(escape(c), justify="right")
        for (name, _), row in zip(items, cells):
            table.add_row(escape(name), *(escape(v) for v in row))
    else:
        table.add_column("metric", style="bold")
        for name, _ in items:
            table.add_column(escape(name), justify="right")
        for i, c in enumerate(cols):
            table.add_row(escape(c), *(escape(row[i]) for row in cells))
    return table


def print_summary(console: Console, summary: Mapping[str, Any], header: Optional[str] = None) -> None:
    """Prints a run summary: top-level scalars, then a flow table and a link table."""
    if header:
        console.print(header)
    scalars = {k: v for k, v in sorted(summary.items()) if _is_scalar(v)}
    if scalars:
        console.print(escape("  ".join(f"{k}: {fmt_value(v)}" for k, v in scalars.items())))
    for title, key, preferred in (("Flows", "flows", FLOW_METRICS), ("Links", "links", LINK_METRICS)):
        table = entity_table(title, summary.get(key), preferred, console.width)
        if table is not None:
            console.print(table)
    for key, value in sorted(summary.items()):
        if key in ("flows", "links") or _is_scalar(value):
            continue
        table = entity_table(key.capitalize(), value, (), console.width)
        if table is not None:
            console.print(table)


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
            from rich.progress import BarColumn, Progress, TaskProgressColumn, TextColumn, TimeElapsedColumn, TimeRemainingColumn

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

    def __enter__(self) -> "RunProgress":
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()
