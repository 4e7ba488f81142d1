"""The result of one run and how it is written to disk.

A `Result` holds the summary (dict), the time series (a polars DataFrame in long form: one row
per time bin, entity and metric), the resolved scenario, the event count and the provenance
record. `Result.write(out_dir)` writes ``summary.json`` (canonical JSON: the same scenario and
seed give byte-identical files), ``timeseries.parquet`` and ``provenance.json``.

The time series of a simulated run stays in the Rust core (`mobipath._core.TimeSeries`) until
someone reads `Result.timeseries`: `write` has the core write the Parquet file itself, so
`mobipath run` never imports polars (importing it costs more than a short run).
"""

from __future__ import annotations

import os
from _collections_abc import Mapping  # collections.abc without the collections package (start-up)

from . import jsonfmt, provenance
from .source import ScenarioSource

# Annotations only: importing typing costs ~4.5 ms of every `mobipath run`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any, Optional, Union

    import polars as pl

__all__ = ["Result", "TIMESERIES_COLUMNS", "timeseries_frame", "effective_seed"]

#: Columns of the long-form time series, in this order (extra columns follow).
TIMESERIES_COLUMNS = ("time_s", "kind", "name", "metric", "value")

SUMMARY_FILE = "summary.json"
TIMESERIES_FILE = "timeseries.parquet"
PROVENANCE_FILE = "provenance.json"


def timeseries_frame(columns: Mapping[str, Sequence[Any]]) -> pl.DataFrame:
    """Builds the long-form DataFrame from a column-name → values mapping."""
    import polars as pl

    dtypes = {"time_s": pl.Float64, "kind": pl.Utf8, "name": pl.Utf8, "metric": pl.Utf8, "value": pl.Float64}
    if not columns:
        return pl.DataFrame(schema=dtypes)
    order = [c for c in TIMESERIES_COLUMNS if c in columns] + sorted(c for c in columns if c not in dtypes)
    return pl.DataFrame([pl.Series(name, list(columns[name]), dtype=dtypes.get(name), strict=False) for name in order])


def effective_seed(seed: Optional[int], summary: Mapping[str, Any], resolved: Any) -> Optional[int]:
    """The seed a run used: the override if given, else what the summary or scenario says."""
    if seed is not None:
        return int(seed)
    for source in (summary, resolved):
        if isinstance(source, Mapping) and isinstance(source.get("seed"), int):
            return int(source["seed"])
    return None


class Result:
    """Everything one simulation run produced.

    `timeseries` may be given as a polars DataFrame, a column-name → values mapping, or the
    core's `TimeSeries`; reading the attribute always gives the DataFrame (built on first use).
    """

    # A plain class rather than a dataclass: `dataclasses` imports `inspect`, about 8 ms of every
    # `mobipath run`.
    summary: dict[str, Any]
    timeseries: pl.DataFrame
    resolved_scenario: Any
    events: int
    provenance: dict[str, Any]
    seed: Optional[int]
    scenario_file: Optional[str]
    extra: dict[str, Any]

    def __init__(
        self,
        summary: dict[str, Any],
        timeseries: Any,
        resolved_scenario: Any,
        events: int,
        provenance: dict[str, Any],
        seed: Optional[int] = None,
        scenario_file: Optional[str] = None,
        extra: Optional[dict[str, Any]] = None,
    ):
        self.summary = summary
        self.timeseries = timeseries
        self.resolved_scenario = resolved_scenario
        self.events = events
        self.provenance = provenance
        self.seed = seed
        self.scenario_file = scenario_file
        self.extra = {} if extra is None else extra

    def __repr__(self) -> str:
        return (
            f"Result(scenario_file={self.scenario_file!r}, seed={self.seed!r}, events={self.events!r}, "
            f"flows={sorted((self.summary.get('flows') or {}) if isinstance(self.summary, Mapping) else [])!r})"
        )

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "timeseries":
            # Kept as given; the DataFrame is built when `timeseries` is first read.
            object.__setattr__(self, "_ts_source", value)
            object.__setattr__(self, "_ts_frame", None)
            return
        object.__setattr__(self, name, value)

    def __getattribute__(self, name: str) -> Any:
        if name == "timeseries":
            frame = object.__getattribute__(self, "_ts_frame")
            if frame is None:
                frame = _as_frame(object.__getattribute__(self, "_ts_source"))
                object.__setattr__(self, "_ts_frame", frame)
            return frame
        return object.__getattribute__(self, name)

    @classmethod
    def from_raw(
        cls,
        raw: Mapping[str, Any],
        source: ScenarioSource,
        seed: Optional[int] = None,
        command: Optional[str] = None,
    ) -> Result:
        """Builds a Result from the dict returned by `mobipath._core.run`."""
        summary = _json_value(raw.get("summary", {}))
        resolved = _json_value(raw.get("resolved_scenario", {}))
        events = int(raw.get("events", 0))
        extra = {"seed_matters": bool(raw.get("seed_matters", True))}
        used_seed = effective_seed(seed, summary, resolved)
        scenario_file = source.path_text
        prov = provenance.collect(
            resolved_scenario=resolved,
            seed=used_seed,
            scenario_file=scenario_file,
            scenario_text=source.text,
            events=events,
            command=command,
        )
        return cls(
            summary=summary,
            timeseries=raw.get("timeseries") or {},
            resolved_scenario=resolved,
            events=events,
            provenance=prov,
            seed=used_seed,
            scenario_file=scenario_file,
            extra=extra,
        )

    @property
    def seed_matters(self) -> bool:
        """False if nothing in the scenario is random: every seed gives this same result."""
        return bool(self.extra.get("seed_matters", True))

    @property
    def partial(self) -> bool:
        """True if the run was interrupted: the results cover ``summary["partial"]["stopped_at_s"]``
        seconds instead of the scenario's duration."""
        return isinstance(self.summary, Mapping) and "partial" in self.summary

    def summary_json(self) -> str:
        """The summary as canonical JSON text (exactly what ``summary.json`` holds)."""
        return jsonfmt.dumps(self.summary)

    def write(self, out_dir: Union[str, os.PathLike]) -> Path:
        """Writes summary.json, timeseries.parquet and provenance.json into `out_dir`; returns
        it as a Path."""
        from pathlib import Path

        return Path(self.write_files(out_dir))

    def write_files(self, out_dir: Union[str, os.PathLike]) -> str:
        """`write`, returning the directory as given (a string): `mobipath run` never imports
        pathlib (with `urllib.parse`, which it imports, about 4 ms of every run).

        All or nothing: the three files are written under temporary names first and renamed
        into place only when all three are complete, summary.json last. A write that fails (a
        full disk) removes what it wrote and raises; the directory keeps what it held before,
        never a lone new summary.json beside an old or missing time series."""
        out = os.fspath(out_dir) or "."  # as Path("") is
        os.makedirs(out, exist_ok=True)
        tmp = f".{os.getpid()}.tmp"
        names = (TIMESERIES_FILE, PROVENANCE_FILE, SUMMARY_FILE)
        staged = [os.path.join(out, name + tmp) for name in names]
        try:
            source = object.__getattribute__(self, "_ts_source")
            if (
                object.__getattribute__(self, "_ts_frame") is None
                and hasattr(source, "write_parquet")
                and not _is_frame(source)
            ):
                source.write_parquet(staged[0])  # the core writes it: no polars needed
            else:
                self.timeseries.write_parquet(staged[0])
            _write_text(staged[1], jsonfmt.dumps(self.provenance))
            _write_text(staged[2], self.summary_json())
        except BaseException:
            for path in staged:
                if os.path.exists(path):
                    os.unlink(path)
            raise
        for name, path in zip(names, staged):
            os.replace(path, os.path.join(out, name))  # renames need no space
        return out


def _is_frame(v: Any) -> bool:
    return type(v).__module__.startswith("polars")


def _as_frame(source: Any) -> pl.DataFrame:
    if _is_frame(source):
        return source
    return timeseries_frame(dict(source.items()) if hasattr(source, "items") else source)


def _json_value(v: Any) -> Any:
    if isinstance(v, (str, bytes)):
        import json  # `mobipath run` asks the core for objects (json imports re)

        return json.loads(v)
    return v


def _write_text(path: str, text: str) -> None:
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write(text)
