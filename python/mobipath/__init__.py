"""mobipath: simulate, emulate and deploy multipath/mobile TCP from one scenario file.

    import mobipath
    result = mobipath.run("scenarios/examples/single-cubic.toml", seed=1)
    result.summary["flows"]            # per-flow metrics
    result.timeseries                  # polars DataFrame: time_s, kind, name, metric, value
    result.write("results/single-cubic-seed1")

    mobipath.validate("my.toml")       # -> list of ConfigError ([] when valid)
    mobipath.schema()                  # JSON Schema of the scenario format
    mobipath.sweep("grid.toml", "sweeps/grid")   # a declared grid into one Parquet dataset

The names below are imported on first use (PEP 562), so ``import mobipath`` and every command
start fast: a command pays only for the modules it uses.
"""

from __future__ import annotations

# Annotations only: importing typing costs ~4.5 ms of every `mobipath run`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any

    from .api import run, schema, validate
    from .errors import ConfigError, InternalError, ScenarioError
    from .provenance import git_revision
    from .results import Result

# name -> (module, attribute)
_LAZY = {
    "run": ("api", "run"),
    "validate": ("api", "validate"),
    "schema": ("api", "schema"),
    "Result": ("results", "Result"),
    "ConfigError": ("errors", "ConfigError"),
    "ScenarioError": ("errors", "ScenarioError"),
    "InternalError": ("errors", "InternalError"),
    "git_revision": ("provenance", "git_revision"),
}

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


def __getattr__(name: str) -> Any:
    if name == "sweep":
        # The submodule itself: it is callable, mobipath.sweep(...) runs a sweep file (see
        # mobipath.sweep.sweep); importing it also binds the attribute, as for any submodule.
        import importlib

        value: Any = importlib.import_module(".sweep", __name__)
    elif name == "__version__":
        from .provenance import version

        value = version()
    elif name in _LAZY:
        import importlib

        module, attr = _LAZY[name]
        value = getattr(importlib.import_module(f".{module}", __name__), attr)
    else:
        raise AttributeError(f"module 'mobipath' has no attribute {name!r}")
    globals()[name] = value
    return value


def __dir__() -> list:
    return sorted(set(globals()) | set(__all__))
