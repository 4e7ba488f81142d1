"""The Python API: run, validate and describe scenarios (wraps the `_core` extension)."""
from __future__ import annotations

import json
from typing import Any, Callable, Dict, List, Optional

from . import _core
from .errors import ConfigError, ScenarioError
from .results import Result
from .source import ScenarioLike, ScenarioSource, load_source

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
    command: Optional[str] = None,
) -> Result:
    """Simulates a scenario and returns its `Result`.

    `scenario` is a path (str or Path) or TOML text; `seed` overrides the scenario's seed;
    `progress(fraction)` is called from the simulator as simulated time advances. `command`
    is recorded in the provenance (default: this process's command line).
    Raises `ScenarioError` (listing every problem) if the scenario is invalid and `OSError`
    if the file cannot be read.
    """
    seed = _check_seed(seed)
    src = load_source(scenario)
    try:
        raw = _core.run(src.text, src.file, str(src.base_dir), seed, progress)
    except ScenarioError:
        raise
    except _core.ScenarioError as e:
        raise _scenario_error(e, src) from None
    return Result.from_raw(raw, src, seed, command)


def validate(scenario: ScenarioLike) -> List[ConfigError]:
    """Checks a scenario (path or TOML text) and returns every error found ([] if valid)."""
    try:
        src = load_source(scenario)
    except ScenarioError as e:
        return list(e.errors)
    return [ConfigError.from_dict(d, src.file) for d in _core.validate(src.text, src.file, str(src.base_dir))]


def schema() -> Dict[str, Any]:
    """The JSON Schema of the scenario format."""
    return json.loads(_core.schema())
