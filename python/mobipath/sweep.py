"""`mobipath sweep SWEEP.toml` / `mobipath.sweep(...)`: a declared grid of scenarios, run on all
local cores or on a Ray cluster (`--backend ray`, mobipath.executor), cached and resumable, into
one Parquet dataset; `mobipath sweep report DIR` summarises it.

A sweep file::

    base = "scenarios/examples/single-cubic.toml"   # relative to the sweep file
    seeds = 5                                        # seeds 1..5, or a list [1, 7, 9]
    combine = "product"                              # or "zip" (axes of equal length)
    [axes]
    "flows[0].cc" = ["cubic", "bbr"]
    "links.l.rate_mbps" = [5, 10, 20]
    [[exclude]]                                      # drop matching combinations
    "flows[0].cc" = "bbr"
    "links.l.rate_mbps" = 5

Axes name any scenario field by its dotted path (as `mobipath.run(overrides=...)`). Every
combination is validated before the first run; an error names the combination. Runs are kept in
``DIR/cache`` keyed by the resolved scenario text, the files it references (traces, tables),
the seed and mobipath's version (and the simulator's build), so an interrupted sweep resumes and a
finished one does nothing. A run that fails is recorded with its error and does not stop the
others (and is not cached: the next invocation runs it again); the exit status is the number of
failed runs (at most 100).

Output (readable without mobipath: polars, pandas, DuckDB, Arrow): ``DIR/runs/`` — one row per
run (axes, seed, every summary scalar flattened to dotted names such as
``flows.f.goodput_mbps``, wall time, error), Hive-partitioned by the axes — and ``DIR/timeseries/``
(the long-form series with the axes and seed), partitioned the same way. An axis of tables or lists
(or of long strings) keeps each value as JSON text in its column and partitions by its position,
``<axis>#`` (docs/outputs.md); ``DIR/sweep.json`` says
what ran. Only this process writes the dataset. Local worker processes write their runs' cache
entries themselves (atomically, by rename: the driver's work per run is only reading the result);
on Ray this process writes them too, as workers there share no file system: they get each run's
scenario text and referenced files with the task and return the results. A run whose worker
process dies (the OOM killer, a crash) is run again twice, then recorded as failed ("WorkerDied:
..."), and the sweep goes on.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import shutil
import sys
import time
import types
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

from . import files
from .errors import ConfigError, ScenarioError
from .experiments.common import RunCache

MAX_RUNS = 1_000_000
SWEEP_KEYS = {"base", "seeds", "combine", "axes", "exclude", "name"}


@dataclass
class Sweep:
    file: str
    base_path: Path
    axes: dict[str, list[Any]]
    seeds: list[int]
    combine: str = "product"
    exclude: list[dict[str, Any]] = field(default_factory=list)
    name: str = "sweep"


def _err(file: str, key: str, value: Any, msg: str) -> ScenarioError:
    return ScenarioError([ConfigError(key, str(value)[:80], msg, file)], file)


def load_sweep(path: Path) -> Sweep:
    """Parses and checks a sweep file (errors name the key and the allowed values)."""
    from .source import parse_toml

    file = str(path)
    table = parse_toml(files.read_text(path, files.MAX_CONFIG_FILE_BYTES), file)
    errors: list[ConfigError] = []
    for k in table:
        if k not in SWEEP_KEYS:
            errors.append(ConfigError(k, "", f"unknown key; allowed: {', '.join(sorted(SWEEP_KEYS))}", file))
    base = table.get("base")
    if not isinstance(base, str) or not base:
        errors.append(
            ConfigError("base", str(base or ""), "give the base scenario's path (relative to the sweep file)", file)
        )
        base_path = Path()
    else:
        base_path = Path(path).resolve().parent / base
        if not base_path.is_file():
            from . import shipped

            found = shipped.find(Path(base))
            if found is None:
                errors.append(ConfigError("base", base, "no such file", file))
            else:
                base_path = found
    seeds_raw = table.get("seeds", 1)
    if isinstance(seeds_raw, bool) or not (isinstance(seeds_raw, int) or (isinstance(seeds_raw, list) and seeds_raw)):
        errors.append(ConfigError("seeds", str(seeds_raw), "a count N (seeds 1..N) or a non-empty list of seeds", file))
        seeds: list[int] = [1]
    elif isinstance(seeds_raw, int):
        if not 1 <= seeds_raw <= 100_000:
            errors.append(ConfigError("seeds", str(seeds_raw), "must be in [1, 100000]", file))
        seeds = list(range(1, max(1, min(seeds_raw, 100_000)) + 1))
    else:
        seeds = [s for s in seeds_raw if isinstance(s, int) and not isinstance(s, bool) and 0 <= s < 2**63]
        if len(seeds) != len(seeds_raw) or len(set(seeds)) != len(seeds):
            errors.append(ConfigError("seeds", str(seeds_raw), "seeds must be distinct integers in [0, 2^63)", file))
    combine = table.get("combine", "product")
    if combine not in ("product", "zip"):
        errors.append(ConfigError("combine", str(combine), 'must be "product" or "zip"', file))
    axes = table.get("axes", {})
    if not isinstance(axes, dict) or not axes:
        errors.append(
            ConfigError("axes", str(axes), 'give at least one axis: [axes] "links.a.rate_mbps" = [5, 10]', file)
        )
        axes = {}
    for k, v in axes.items():
        if not isinstance(v, list) or not v:
            errors.append(ConfigError(f"axes.{k}", str(v), "must be a non-empty list of values", file))
        if k == "seed":
            # The scenario's `seed` is replaced by each run's own seed: as an axis it would do nothing.
            errors.append(
                ConfigError(
                    "axes.seed",
                    str(v)[:80],
                    f"the seed is not an axis: each run's seed comes from `seeds` (write seeds = {json.dumps(v)})",
                    file,
                )
            )
    if combine == "zip" and axes and len({len(v) for v in axes.values() if isinstance(v, list)}) > 1:
        errors.append(
            ConfigError(
                "axes",
                ", ".join(f"{k}: {len(v)}" for k, v in axes.items()),
                'combine = "zip" needs axes of equal length',
                file,
            )
        )
    exclude = table.get("exclude", [])
    if not isinstance(exclude, list) or not all(isinstance(e, dict) and e for e in exclude):
        errors.append(ConfigError("exclude", str(exclude), "a list of tables of axis values ([[exclude]])", file))
        exclude = []
    for i, e in enumerate(exclude):
        for k in e:
            if k not in axes:
                errors.append(ConfigError(f"exclude[{i}].{k}", "", f"not an axis; axes: {', '.join(axes)}", file))
    if errors:
        raise ScenarioError(errors, file)
    sw = Sweep(
        file,
        base_path,
        {k: list(v) for k, v in axes.items()},
        seeds,
        combine,
        exclude,
        str(table.get("name", Path(path).stem)),
    )
    combos = combinations(sw)
    if not combos:
        every = (
            math.prod(len(v) for v in sw.axes.values())
            if sw.combine == "product"
            else len(next(iter(sw.axes.values())))
        )
        raise _err(
            file,
            "exclude",
            f"{len(sw.exclude)} rule(s)",
            f"removes every one of the {every} combinations: nothing would run",
        )
    n = len(combos) * len(seeds)
    if n > MAX_RUNS:
        raise _err(file, "axes", n, f"{n} runs: more than {MAX_RUNS}")
    return sw


def combinations(sw: Sweep) -> list[dict[str, Any]]:
    keys = list(sw.axes)
    rows = zip(*sw.axes.values()) if sw.combine == "zip" else itertools.product(*sw.axes.values())
    out = []
    for values in rows:
        combo = dict(zip(keys, values))
        if any(all(combo.get(k) == v for k, v in e.items()) for e in sw.exclude):
            continue
        out.append(combo)
    return out


def _label(combo: dict[str, Any]) -> str:
    return ", ".join(f"{k} = {json.dumps(v)}" for k, v in combo.items())


#: Longest text of an axis value that names a Hive partition folder (`axis=value`, percent-encoded,
#: must fit a file name's 255 bytes).
MAX_PARTITION_TEXT = 64


def axis_cell(v: Any) -> Any:
    """An axis value as the dataset holds it: a number, string or bool as it is; a table or list
    as its JSON text (keys sorted), which every reader can filter on and parse back."""
    if isinstance(v, (dict, list)):
        return json.dumps(v, sort_keys=True, separators=(", ", ": "))
    return v


def partition_column(axis: str, values: list[Any]) -> str:
    """The column an axis partitions the dataset by: the axis itself when its values are scalars
    short enough for a folder name, else `<axis>#`, the value's position in the sweep file's list
    (0, 1, ...; the value itself stays in the axis's column)."""
    if all(isinstance(v, (int, float, str, bool)) and len(str(v)) <= MAX_PARTITION_TEXT for v in values):
        return axis
    return f"{axis}#"


@dataclass(frozen=True)
class Resolved:
    """One combination, validated: its scenario text, name, base directory and the digest of the
    files it references (traces, tables: part of the cache key, so an edited trace reruns)."""

    combo: dict[str, Any]
    text: str
    file: str
    base_dir: str
    files_digest: str


def resolve(sw: Sweep) -> list[Resolved]:
    """Every combination, validated first: a ScenarioError lists every broken combination's
    errors, each naming the combination."""
    from . import _core
    from .executor import files_digest
    from .source import load_source

    out, errors = [], []
    for combo in combinations(sw):
        try:
            src = load_source(sw.base_path, overrides=combo)
            found = [ConfigError.from_dict(d, src.file) for d in _core.validate(src.text, src.file, str(src.base_dir))]
        except ScenarioError as e:
            found = list(e.errors)
        if found:
            errors += [ConfigError(f"[{_label(combo)}] {e.field}", e.value, e.message, sw.file) for e in found]
            continue
        out.append(
            Resolved(combo, src.text, src.file, str(src.base_dir), files_digest(src.text, src.base_dir, src.file))
        )
    if errors:
        raise ScenarioError(errors, sw.file)
    return out


def _flatten(prefix: str, v: Any, out: dict[str, Any]) -> None:
    if isinstance(v, dict):
        for k, x in v.items():
            _flatten(f"{prefix}.{k}" if prefix else str(k), x, out)
    elif isinstance(v, list):
        if all(isinstance(x, dict) and ("path" in x or "name" in x) for x in v) and v:
            for x in v:
                _flatten(
                    f"{prefix}.{x.get('path', x.get('name'))}",
                    {k: y for k, y in x.items() if k not in ("path", "name")},
                    out,
                )
    elif isinstance(v, (int, float, str, bool)) or v is None:
        out[prefix] = float(v) if isinstance(v, int) and not isinstance(v, bool) else v


def run_one(text: str, file: str, base_dir: str, seed: int) -> dict[str, Any]:
    """One run in a worker: the flattened summary and the series, or the error. JSON-native
    (str keys, lists, str, float, bool, None), so its JSON text reads back as the same value
    (run_all(native=True))."""
    from . import _core

    t0 = time.perf_counter()
    try:
        raw = _core.run(text, file, base_dir, seed, None)
    except (KeyboardInterrupt, SystemExit):
        raise
    except BaseException as e:  # recorded, the sweep goes on; BaseException: a Rust panic is pyo3's PanicException
        return {"error": f"{type(e).__name__}: {e}", "wall_s": time.perf_counter() - t0}
    s = json.loads(raw["summary"]) if isinstance(raw["summary"], str) else raw["summary"]
    flat: dict[str, Any] = {}
    for part in ("flows", "links", "elements"):
        if part in s:
            _flatten(part, s[part], flat)
    flat["events"] = float(s.get("events", 0))
    ts = raw.get("timeseries") or {}
    return {"summary": flat, "timeseries": {k: list(v) for k, v in ts.items()}, "wall_s": time.perf_counter() - t0}


class _SweepCache(RunCache):
    """The run cache, less failed runs: a failure is recorded in the dataset but run again by the
    next invocation (it may have been the machine's, not the scenario's)."""

    def put(self, description: str, result: Any) -> Optional[str]:
        if isinstance(result, dict) and result.get("error"):
            return None
        return super().put(description, result)


def _axis_columns(combo: dict[str, Any], axes: dict[str, list[Any]], parts: dict[str, str]) -> dict[str, Any]:
    """A run's axis columns: each axis's value (`axis_cell`), and for an axis partitioned by
    position, that position."""
    out: dict[str, Any] = {}
    for a, v in combo.items():
        out[a] = axis_cell(v)
        if parts[a] != a:
            out[parts[a]] = next(i for i, x in enumerate(axes[a]) if x == v)
    return out


def sweep(
    path: Any,
    out_dir: Optional[Any] = None,
    *,
    jobs: Optional[int] = None,
    backend: str = "local",
    ray_address: Optional[str] = None,
    progress: Any = None,
    resume: bool = True,
    timeseries: bool = True,
) -> dict[str, Any]:
    """Runs the sweep file `path` into `out_dir` (default ``sweeps/<file name>``) and returns what
    sweep.json holds. `backend` is ``local`` (`jobs` worker processes, default all cores) or
    ``ray`` (on the cluster at `ray_address`, or a local Ray instance of `jobs` CPUs when None);
    this process writes the dataset (and, on Ray, the cache). `progress(description, total)`
    returns an object with `advance()`."""
    import polars as pl

    from . import provenance
    from .executor import Backend
    from .experiments.common import run_all

    t0 = time.monotonic()
    path = Path(path)
    out_dir = Path(out_dir) if out_dir is not None else Path("sweeps") / path.stem
    chosen = Backend(backend, ray_address)
    sw = load_sweep(path)
    resolved = resolve(sw)
    keys = [(i, seed) for i in range(len(resolved)) for seed in sw.seeds]
    out_dir.mkdir(parents=True, exist_ok=True)
    cache = _SweepCache(out_dir / "cache")
    if not resume:
        cache.clear()
    bar = progress("sweep runs", len(keys)) if progress else None

    descriptions: dict[tuple[int, int], str] = {}

    def describe(k: tuple[int, int]) -> str:
        d = descriptions.get(k)
        if d is None:
            r = resolved[k[0]]
            # The referenced files' digest only when there are any: run ids of trace-free sweeps stay put.
            d = descriptions[k] = json.dumps(
                ["sweep run", r.text, r.file, k[1]] + ([r.files_digest] if r.files_digest else [])
            )
        return d

    def died(k: tuple[int, int], why: str) -> dict[str, Any]:
        return {"error": f"WorkerDied: {why}", "wall_s": 0.0}  # recorded, not cached: the next invocation tries again

    results, n_jobs = run_all(
        keys,
        run_one,
        lambda k: (resolved[k[0]].text, resolved[k[0]].file, resolved[k[0]].base_dir, k[1]),
        jobs,
        bar,
        cache,
        describe,
        backend=chosen,
        on_death=died,
        native=True,
    )
    axes = list(sw.axes)
    parts = {a: partition_column(a, sw.axes[a]) for a in axes}
    rows, failed = [], []
    series: dict[str, list[Any]] = {}  # the long-form series of every run, column by column
    n_series = 0
    for i, seed in keys:
        combo = resolved[i].combo
        r = results[(i, seed)]
        run_id = hashlib.sha256(describe((i, seed)).encode()).hexdigest()[:16]
        labels = _axis_columns(combo, sw.axes, parts)
        row = {
            **labels,
            "seed": seed,
            "run_id": run_id,
            "wall_s": round(float(r.get("wall_s", 0.0)), 6),
            "error": r.get("error"),
        }
        if r.get("error"):
            failed.append({"combination": _label(combo), "seed": seed, "error": r["error"]})
        row.update(r.get("summary", {}))
        rows.append(row)
        if timeseries and r.get("timeseries"):
            ts = r["timeseries"]
            n = len(ts.get("time_s", []))
            cols = {**{a: [v] * n for a, v in labels.items()}, "seed": [seed] * n, "run_id": [run_id] * n, **ts}
            for c in cols:
                if c not in series:  # a column earlier runs lack: None for their rows
                    series[c] = [None] * n_series
            for c, column in series.items():
                column.extend(cols[c] if c in cols else [None] * n)
            n_series += n
    for sub in ("runs", "timeseries"):
        shutil.rmtree(out_dir / sub, ignore_errors=True)
    runs = pl.DataFrame(rows, infer_schema_length=None, strict=False)
    by = list(parts.values())
    runs.write_parquet(out_dir / "runs", partition_by=by)
    if n_series:
        pl.DataFrame(series, strict=False).write_parquet(out_dir / "timeseries", partition_by=by)
    info = {
        "sweep_file": str(path),
        "name": sw.name,
        "base": str(sw.base_path),
        "axes": sw.axes,
        "partition_by": by,
        "combine": sw.combine,
        "exclude": sw.exclude,
        "seeds": sw.seeds,
        "combinations": len(resolved),
        "runs": len(keys),
        "reused_runs": cache.reused,
        "failed": failed,
        "backend": chosen.name,
        "jobs": n_jobs,
        "wall_time_s": round(time.monotonic() - t0, 2),
        "mobipath_version": provenance.version(),
        "git_revision": provenance.git_revision(),
    }
    (out_dir / "sweep.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    return info


def report(out_dir: Path, metric: str, plot: Optional[Path] = None) -> tuple[list[dict[str, Any]], Optional[Path]]:
    """Mean and 95 % CI of `metric` per combination of the axes (over seeds), and a plot: a line
    plot with error bars for one axis, a heatmap for two (none for more)."""
    import polars as pl

    from .experiments.common import mean_ci

    info = json.loads((out_dir / "sweep.json").read_text(encoding="utf-8"))
    axes = list(info["axes"])
    df = pl.read_parquet(out_dir / "runs", hive_partitioning=True)
    if metric not in df.columns:
        near = [c for c in df.columns if metric.split(".")[-1] in c][:8]
        raise ValueError(
            f"--metric {metric!r}: not a column of the dataset" + (f"; e.g. {', '.join(near)}" if near else "")
        )
    cells = []
    for combo in info_combos(info):
        sel = df
        for a in axes:
            cell = axis_cell(combo[a])
            sel = sel.filter(pl.col(a).cast(pl.Utf8) == (cell if isinstance(cell, str) else str(combo[a])))
        vals = [
            float(v) for v in sel[metric].to_list() if v is not None and not (isinstance(v, float) and math.isnan(v))
        ]
        m, ci = mean_ci(vals)
        cells.append({**combo, "mean": m, "ci95": ci, "n": len(vals)})
    written = None
    if plot is not None and len(axes) <= 2:
        written = _plot(cells, axes, metric, plot)
    return cells, written


def info_combos(info: dict[str, Any]) -> list[dict[str, Any]]:
    sw = Sweep(info["sweep_file"], Path(info["base"]), info["axes"], info["seeds"], info["combine"], info["exclude"])
    return combinations(sw)


def _plot(cells: list[dict[str, Any]], axes: list[str], metric: str, path: Path) -> Path:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7, 4.5))
    if len(axes) == 2:
        xs = _distinct(c[axes[1]] for c in cells)
        ys = _distinct(c[axes[0]] for c in cells)
        grid = [[next((c["mean"] for c in cells if c[axes[0]] == y and c[axes[1]] == x), None) for x in xs] for y in ys]
        im = ax.imshow([[float("nan") if v is None else v for v in row] for row in grid], aspect="auto", cmap="viridis")
        ax.set_xticks(range(len(xs)), [_tick(x) for x in xs])
        ax.set_yticks(range(len(ys)), [_tick(y) for y in ys])
        ax.set_xlabel(axes[1])
        ax.set_ylabel(axes[0])
        from .plot import contrasting_text

        for i, row in enumerate(grid):
            for j, v in enumerate(row):
                if v is not None:
                    colour = contrasting_text(im.cmap(im.norm(v)))
                    ax.text(j, i, f"{v:.3g}", ha="center", va="center", fontsize=8, color=colour)
        fig.colorbar(im, ax=ax, label=f"{metric} (mean over seeds)")
    else:
        x = axes[0]
        numeric = all(isinstance(c[x], (int, float)) and not isinstance(c[x], bool) for c in cells)
        pts = [(c[x], c["mean"], c["ci95"] or 0.0) for c in cells if c["mean"] is not None]
        xs = [p[0] if numeric else _tick(p[0]) for p in pts]
        ax.errorbar(xs, [p[1] for p in pts], yerr=[p[2] for p in pts], marker="o", capsize=3)
        ax.set_xlabel(x)
        ax.set_ylabel(f"{metric} (mean ± 95 % CI)")
        ax.grid(alpha=0.3)
    ax.set_title(metric, fontsize=9)
    fig.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path


def _distinct(values: Any) -> list[Any]:
    """Distinct values in first-seen order (tables and lists too, which cannot be dict keys)."""
    out: list[Any] = []
    for v in values:
        if not any(v == o for o in out):
            out.append(v)
    return out


def _tick(v: Any) -> str:
    """An axis value as a plot label: its dataset text, shortened past 40 characters."""
    t = str(axis_cell(v))
    return t if len(t) <= 40 else t[:39] + "…"


class _CallableModule(types.ModuleType):
    """`mobipath.sweep(...)` runs a sweep (this module's `sweep`), while `mobipath.sweep.report`,
    `load_sweep` etc. stay reachable as the module's attributes."""

    def __call__(self, *args: Any, **kwargs: Any) -> dict[str, Any]:
        return sweep(*args, **kwargs)


sys.modules[__name__].__class__ = _CallableModule
