"""Pieces every paper reproduction shares: confidence intervals, the parallel run loop, the
results CSV and the provenance block. Results are keyed, so the number of worker processes never
changes a number."""
from __future__ import annotations

import csv
import io
import math
import os
import statistics
from concurrent.futures import ProcessPoolExecutor, as_completed
from pathlib import Path
from typing import Any, Callable, Dict, Hashable, List, Optional, Sequence, Tuple

# Two-sided 95 % Student-t quantiles t(0.975, df) for df = 1..30; 1.96 beyond.
T975 = [12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228, 2.201, 2.179, 2.160, 2.145,
        2.131, 2.120, 2.110, 2.101, 2.093, 2.086, 2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048,
        2.045, 2.042]


def t975(n: int) -> float:
    df = n - 1
    return T975[df - 1] if 1 <= df <= len(T975) else 1.96


def mean_ci(values: Sequence[Optional[float]]) -> Tuple[Optional[float], Optional[float]]:
    """Mean and half-width of the 95 % Student-t confidence interval over runs (None for < 2
    values); None and NaN values are left out."""
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return None, None
    m = statistics.fmean(vals)
    if len(vals) < 2:
        return m, None
    return m, t975(len(vals)) * statistics.stdev(vals) / math.sqrt(len(vals))


def run_all(keys: Sequence[Hashable], job: Callable[..., Any], args: Callable[[Any], Tuple[Any, ...]],
            jobs: Optional[int], bar: Any = None) -> Tuple[Dict[Any, Any], int]:
    """Runs `job(*args(key))` for every key, in `jobs` worker processes (default: all cores; 1 =
    in this process). `job` must be a module-level function (it is pickled). Returns the results
    by key and the number of workers used; `bar.advance()` is called after each run."""
    n = max(1, jobs or os.cpu_count() or 1)
    results: Dict[Any, Any] = {}
    if n == 1:
        for k in keys:
            results[k] = job(*args(k))
            if bar is not None:
                bar.advance()
        return results, n
    with ProcessPoolExecutor(max_workers=n) as ex:
        futs = {ex.submit(job, *args(k)): k for k in keys}
        for fut in as_completed(futs):
            results[futs[fut]] = fut.result()
            if bar is not None:
                bar.advance()
    return results, n


def write_csv(path: Path, rows: List[Dict[str, Any]], fields: Sequence[str]) -> None:
    """One row per run; floats with 6 decimals (aggregates are taken of these written values, so a
    report's numbers can be recomputed from the CSV), None as an empty cell."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: ("" if r.get(k) is None else (f"{r[k]:.6f}" if isinstance(r[k], float) else r[k])) for k in fields})
    path.write_text(buf.getvalue(), encoding="utf-8")


def core_revision() -> str:
    """The git revision the Rust core was built from."""
    return str(getattr(__import__("mobipath._core", fromlist=["x"]), "GIT_REVISION", "unknown"))
