"""Pieces every paper reproduction shares: confidence intervals, the parallel run loop with its
cache of finished runs (resuming an interrupted reproduction), the results CSV and the provenance
block. Results are keyed, so the number of worker processes never changes a number."""

from __future__ import annotations

import contextlib
import csv
import hashlib
import io
import json
import math
import os
import statistics
from collections.abc import Hashable, Iterator, Sequence
from pathlib import Path
from typing import Any, Callable, Optional

# Two-sided 95 % Student-t quantiles t(0.975, df) for df = 1..30; 1.96 beyond.
T975 = [
    12.706,
    4.303,
    3.182,
    2.776,
    2.571,
    2.447,
    2.365,
    2.306,
    2.262,
    2.228,
    2.201,
    2.179,
    2.160,
    2.145,
    2.131,
    2.120,
    2.110,
    2.101,
    2.093,
    2.086,
    2.080,
    2.074,
    2.069,
    2.064,
    2.060,
    2.056,
    2.052,
    2.048,
    2.045,
    2.042,
]


def t975(n: int) -> float:
    df = n - 1
    return T975[df - 1] if 1 <= df <= len(T975) else 1.96


def mean_ci(values: Sequence[Optional[float]]) -> tuple[Optional[float], Optional[float]]:
    """Mean and half-width of the 95 % Student-t confidence interval over runs (None for < 2
    values); None and NaN values are left out."""
    vals = [v for v in values if v is not None and not (isinstance(v, float) and math.isnan(v))]
    if not vals:
        return None, None
    m = statistics.fmean(vals)
    if len(vals) < 2:
        return m, None
    return m, t975(len(vals)) * statistics.stdev(vals) / math.sqrt(len(vals))


_SALTS: dict[tuple[str, int, int, str], str] = {}


def _salt() -> str:
    """mobipath's version and a hash of the simulator extension's bytes (about 45 MB: 0.1 s),
    hashed once per process while the file stays the same size and age."""
    from .. import _core, provenance

    path = Path(_core.__file__)
    st = path.stat()
    key = (str(path), st.st_size, st.st_mtime_ns, provenance.version())
    if key not in _SALTS:
        h = hashlib.sha256(provenance.version().encode())
        h.update(path.read_bytes())
        _SALTS[key] = h.hexdigest()
    return _SALTS[key]


class RunCache:
    """Finished runs of a reproduction, one JSON file each in `directory` (``<report>/runs/``), so
    an interrupted ``mobipath reproduce`` resumes where it stopped. A run's file name is a hash of
    what determines its result: the experiment's description of the run (scenario text, seed,
    ...), mobipath's version and the simulator extension's bytes; anything else changed means
    another name, so a stale result is never reused."""

    def __init__(self, directory: Path, enabled: bool = True) -> None:
        self.directory, self.enabled = Path(directory), enabled
        # Runs `run_all` took from here instead of running them; other entries read back (a
        # learned handover table) are not runs and are not counted.
        self.reused = 0
        self._salt: Optional[str] = None
        # The file names present (listed once): a run not in the cache costs no failed open.
        # This process is the cache's only writer, so put() keeps the set current.
        self._names: Optional[set] = None
        self._made = False

    def salt(self) -> str:
        if self._salt is None:
            self._salt = _salt()
        return self._salt

    def path(self, description: str) -> Path:
        h = hashlib.sha256(self.salt().encode())
        h.update(description.encode("utf-8"))
        return self.directory / f"{h.hexdigest()[:32]}.json"

    def get(self, description: str) -> Any:
        """The kept result of the run `description` describes, or None."""
        if not self.enabled:
            return None
        path = self.path(description)
        if self._names is None:
            self._names = set(os.listdir(self.directory)) if self.directory.is_dir() else set()
        if path.name not in self._names:
            return None
        try:
            data = json.loads(path.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        if data.get("description") != description:  # a hash collision, or a damaged file
            return None
        return data["result"]

    def put(self, description: str, result: Any) -> Optional[str]:
        """Keeps `result`; returns its JSON text (None when disabled)."""
        if not self.enabled:
            return None
        if not self._made:
            self.directory.mkdir(parents=True, exist_ok=True)
            self._made = True
        path = self.path(description)
        # Worker processes write their runs' entries too (mobipath.executor): a name of its own.
        tmp = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        text = json.dumps(result)
        # The bytes json.dumps({"description": ..., "result": ...}) gives, the result encoded once.
        tmp.write_text('{"description": ' + json.dumps(description) + ', "result": ' + text + "}", encoding="utf-8")
        tmp.replace(path)  # a reader never sees half a file, even after Ctrl-C
        if self._names is not None:
            self._names.add(path.name)
        return text

    def noted(self, description: str) -> None:
        """Another process (a local worker) put `description`'s result: `get` finds it."""
        if self._names is not None:
            self._names.add(self.path(description).name)

    def clear(self) -> None:
        """Forgets every kept result (``--fresh``)."""
        for f in self.directory.glob("*.json*") if self.directory.is_dir() else []:
            f.unlink()
        self._names, self._made = None, False

    def count(self) -> int:
        return len(list(self.directory.glob("*.json"))) if self.directory.is_dir() else 0


#: The backend `run_all` uses when its caller names none: `mobipath reproduce ... --backend ray`
#: sets it (use_backend) around an experiment, so the experiments need no backend argument.
_BACKEND: Optional[Any] = None


@contextlib.contextmanager
def use_backend(name: str = "local", address: Optional[str] = None) -> Iterator[None]:
    """Within the block, run_all runs on `name` (``local`` or ``ray``; see mobipath.executor)."""
    global _BACKEND
    from ..executor import Backend

    before, _BACKEND = _BACKEND, Backend(name, address)
    try:
        yield
    finally:
        _BACKEND = before


def run_all(
    keys: Sequence[Hashable],
    job: Callable[..., Any],
    args: Callable[[Any], tuple[Any, ...]],
    jobs: Optional[int],
    bar: Any = None,
    cache: Optional[RunCache] = None,
    describe: Optional[Callable[[Any], str]] = None,
    backend: Optional[Any] = None,
    on_death: Optional[Callable[[Any, str], Any]] = None,
    native: bool = False,
) -> tuple[dict[Any, Any], int]:
    """Runs `job(*args(key))` for every key through the sweep engine's executor
    (mobipath.executor): on `backend` (default: the one use_backend set, else local worker
    processes), `jobs` workers (default: all cores; 1 = in this process). `job` must be a
    module-level function (it is pickled) and its results JSON-serialisable when a `cache` is
    given: runs whose `describe(key)` is in the cache are not run again, and each finished run is
    put there at once (by the local worker process that ran it, else by this process: Ray
    workers need no shared file system). Returns the results by key and the number of workers
    used; `bar.advance()` is called after each run. `on_death(key, why)`: the result recorded
    for a run whose worker process died on every attempt (default: the run raises WorkerDied).
    `native`: `job`'s results are JSON-native (mobipath.executor.Kept), so a result a worker
    kept need not be parsed back here.

    On KeyboardInterrupt the workers are stopped at once and the interrupt propagates; what
    finished is in the cache."""
    from ..executor import Kept, execute

    results: dict[Any, Any] = {}
    todo = []
    for k in keys:
        kept = cache.get(describe(k)) if cache is not None and describe is not None else None
        if kept is not None:
            cache.reused += 1  # type: ignore[union-attr]
            results[k] = kept
            if bar is not None:
                bar.advance()
        else:
            todo.append(k)

    def done(k: Any, result: Any) -> None:
        if isinstance(result, Kept):  # a local worker kept it: only read it
            if cache is not None and describe is not None:
                cache.noted(describe(k))
            result = json.loads(result.text) if result.text is not None else result.value
        elif cache is not None and describe is not None:
            text = cache.put(describe(k), result)
            if text is not None:
                result = json.loads(text)  # the same types a resumed run reads back
        results[k] = result
        if bar is not None:
            bar.advance()

    keep = cache if cache is not None and cache.enabled and describe is not None else None
    n = execute(
        todo, job, args, done, jobs, backend or _BACKEND, keep=keep, describe=describe, native=native, on_death=on_death
    )
    return results, n


def write_csv(path: Path, rows: list[dict[str, Any]], fields: Sequence[str]) -> None:
    """One row per run; floats with 6 decimals (aggregates are taken of these written values, so a
    report's numbers can be recomputed from the CSV), None as an empty cell."""
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=list(fields), lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow(
            {k: ("" if r.get(k) is None else (f"{r[k]:.6f}" if isinstance(r[k], float) else r[k])) for k in fields}
        )
    path.write_text(buf.getvalue(), encoding="utf-8")


def core_revision() -> str:
    """The git revision the Rust core was built from."""
    return str(getattr(__import__("mobipath._core", fromlist=["x"]), "GIT_REVISION", "unknown"))


def ramp_up_time(
    times: Sequence[float], rates: Sequence[float], window_s: float = 1.0, frac: float = 0.9
) -> Optional[float]:
    """Ramp-up time of a rate series (docs/metrics.md): the first time at which the moving
    average over the last `window_s` reaches `frac` of the final rate, the mean over the series'
    last third. `times` are the bins' start times (equally spaced), `rates` their values. None if
    the series is empty, the final rate is not positive, or the average never gets there."""
    n = len(rates)
    if n == 0 or len(times) != n:
        return None
    final = statistics.fmean(rates[n - max(1, n // 3) :])
    if not final > 0:
        return None
    step = (times[1] - times[0]) if n > 1 else window_s
    k = max(1, int(round(window_s / step)))
    total = 0.0
    for i, r in enumerate(rates):
        total += r
        if i >= k:
            total -= rates[i - k]
        if i + 1 >= k and total / k >= frac * final:
            return round(times[i] + step, 6)
    return None


def provenance_record(
    command: Optional[str], *, seeds: int, runs: int, reused: int, jobs: int, t0: float, **extra: Any
) -> dict[str, Any]:
    """The provenance block every reproduction report ends with: command, versions, seeds,
    the experiment's own `extra` fields, run counts and wall time (from `t0`, time.monotonic)."""
    import time

    from .. import provenance

    return {
        "command": command or provenance.command_line(),
        "mobipath_version": provenance.version(),
        "git_revision": provenance.git_revision(),
        "core_build_git_revision": core_revision(),
        "seeds": seeds,
        **extra,
        "runs": runs,
        "reused_runs": reused,
        "jobs": jobs,
        "wall_time_s": round(time.monotonic() - t0, 2),
    }


def write_outputs(out_dir: Path, prov: dict[str, Any], aggregates: Any, report: str) -> dict[str, Any]:
    """Writes summary.json (provenance + aggregates, sorted keys), report.md and report.html (the same
    report for a browser); returns the summary."""
    summary = {"provenance": prov, "aggregates": aggregates}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    write_report(out_dir, report)
    return summary


def write_report(out_dir: Path, report: str) -> None:
    """report.md, and report.html beside it: the same text and numbers with the figures inlined."""
    from ..report_html import write_html

    (out_dir / "report.md").write_text(report, encoding="utf-8")
    write_html(out_dir / "report.md")


def fmt(x: Optional[float], nd: int = 2) -> str:
    """A report number with `nd` decimals, "n/a" when not measured."""
    return "n/a" if x is None else f"{x:.{nd}f}"


def fmt_ci(val: Any, nd: int = 2, scale: float = 1.0) -> str:
    """A (mean, CI half-width, ...) tuple as "mean ± ci" (just the mean without a CI), scaled by
    `scale`; "n/a" when not measured."""
    if not isinstance(val, tuple) or val[0] is None:
        return "n/a"
    return fmt(val[0] * scale, nd) + ("" if val[1] is None else f" ± {val[1] * scale:.{nd}f}")
