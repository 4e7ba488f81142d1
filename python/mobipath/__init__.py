"""mobipath: simulate, emulate and deploy multipath/mobile TCP from one scenario file.

    import mobipath
    result = mobipath.run("scenarios/examples/single-cubic.toml", seed=1)
    result.summary["flows"]            # per-flow metrics
    result.timeseries                  # polars DataFrame: time_s, kind, name, metric, value
    result.write("results/single-cubic-seed1")

    mobipath.validate("my.toml")       # -> list of ConfigError ([] when valid)
    mobipath.schema()                  # JSON Schema of the scenario format
    mobipath.sweep("grid.toml", "sweeps/grid")   # a declared grid into one Parquet dataset
"""
from __future__ import annotations

from .api import run, schema, validate
from .errors import ConfigError, InternalError, ScenarioError
from .provenance import git_revision
from .provenance import version as _version
from .results import Result
from . import sweep  # callable: mobipath.sweep(...) runs a sweep file (see mobipath.sweep.sweep)

__version__ = _version()

__all__ = [
    "run",
    "validate",
    "schema",
    "sweep",
    "Result",
    "ConfigError",
    "ScenarioError",
    "InternalError",
    "git_revision",
    "__version__",
]
