"""The Python API: run, validate and describe scenarios (wraps the `_core` extension)."""

from __future__ import annotations

import os

from . import _core
from .errors import ConfigError, ScenarioError
from .results import Result
from .source import ScenarioSource, load_source

# Annotations only: importing typing costs ~4.5 ms of every `mobipath run`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Mapping
    from typing import Any, Callable, Optional, Union

    from .source import ScenarioLike

__all__ = ["run", "validate", "schema"]

MAX_SEED = 2**64 - 1


def _check_seed(seed: Optional[int]) -> Optional[int]:
    if seed is None:
        return None
    if isinstance(seed, bool) or not isinstance(seed, int):
        raise TypeError(f"seed must be an integer, not {type(seed).__name__}")
    if not 0 <= seed <= MAX_SEED:
        raise ValueError(f"seed = {seed}: must be in [0, {MAX_SEED}]")
    return seed


def _scenario_error(e: BaseException, src: ScenarioSource) -> ScenarioError:
    errors = [ConfigError.from_dict(d, src.file) for d in getattr(e, "errors", None) or []]
    if not errors:
        errors = [ConfigError("scenario", "", str(e), src.file)]
    return ScenarioError(errors, src.file)


def run(
    scenario: ScenarioLike,
    seed: Optional[int] = None,
    progress: Optional[Callable[[float], Any]] = None,
    *,
    overrides: Optional[Mapping[str, Any]] = None,
    base_dir: Optional[Union[str, os.PathLike[str]]] = None,
    allow_partial: bool = False,
    command: Optional[str] = None,
    out_dir: Optional[Union[str, os.PathLike[str]]] = None,
    pcap: bool = False,
    pcap_max_mb: Optional[float] = None,
) -> Result:
    """Simulates a scenario and returns its `Result`.

    `scenario` is a path (str or Path; ``scenarios/examples/...`` names the copy shipped with
    mobipath when there is no such file here, as on the command line), TOML text or a dict (the
    parsed TOML table);
    `overrides` sets fields by dotted path first (``{"links.a.rate_mbps": 20, "flows[0].cc":
    "bbr"}``; arrays of tables by index or by `name`); `base_dir` is where relative trace and
    table paths resolve (default: the file's folder, else the current directory); `seed`
    overrides the scenario's seed; `progress(fraction)` is called as simulated time advances.
    Ctrl-C stops the simulation within a few hundred progress steps: with `allow_partial` the
    result so far comes back with ``result.partial`` set (and ``summary["partial"]``), else
    `KeyboardInterrupt` is raised. `command` is recorded in the provenance (default: this
    process's command line).
    Packet captures go to ``<out_dir>/pcap/`` while the simulation runs: those the
    scenario asks for (``[output] pcap``), or every link's with `pcap`; `pcap_max_mb` replaces the
    size limit (``[output] pcap_max_mb``). A scenario that asks for captures without an `out_dir`
    is refused, and so is an `out_dir` that cannot be written (before the run starts).
    Raises `ScenarioError` (listing every problem) if the scenario or an override is invalid,
    `ValueError`/`TypeError` for bad arguments and `OSError` if a file cannot be read.
    """
    seed = _check_seed(seed)
    src = load_source(scenario, overrides=overrides, base_dir=base_dir)
    try:
        # objects: the summary as dicts, not JSON text (`json` imports re: ~5 ms)
        raw = _core.run(
            src.text,
            src.file,
            src.base_dir_text,
            seed,
            progress,
            allow_partial,
            True,
            None if out_dir is None else os.fspath(out_dir),
            pcap,
            pcap_max_mb,
        )
    except ScenarioError:
        raise
    except _core.ScenarioError as e:
        raise _scenario_error(e, src) from None
    except OverflowError as e:  # a value beyond what the simulator's integer types hold
        raise ValueError(f"a value is out of range: {e}") from None
    return Result.from_raw(raw, src, seed, command)


def validate(
    scenario: ScenarioLike,
    *,
    overrides: Optional[Mapping[str, Any]] = None,
    base_dir: Optional[Union[str, os.PathLike[str]]] = None,
) -> list[ConfigError]:
    """Checks a scenario (path, TOML text or dict; `overrides` and `base_dir` as for `run`) and
    returns every error found ([] if valid)."""
    try:
        src = load_source(scenario, overrides=overrides, base_dir=base_dir)
    except ScenarioError as e:
        return list(e.errors)
    return [ConfigError.from_dict(d, src.file) for d in _core.validate(src.text, src.file, src.base_dir_text)]


def schema() -> dict[str, Any]:
    """The JSON Schema of the scenario format."""
    import json

    return json.loads(_core.schema())
