"""Deterministic JSON: the same data always gives the same bytes.

Keys are sorted, indentation is fixed, floats use Python's shortest round-trip representation
(`repr`, exact and platform independent), integral values stay integers, and non-finite floats
(which JSON cannot hold) become ``null``. Every file mobipath writes goes through `dumps`.

The text is written by the extension (`_core.canonical_json`), byte for byte what
``json.dumps(..., sort_keys=True, indent=2, ensure_ascii=False)`` writes
(tests/python/test_jsonfmt.py), because the `json` module imports `re`: about 5 ms of every
`mobipath run`.
"""

from __future__ import annotations

import math

from . import _core

# Annotations only: importing typing costs ~4.5 ms of every `mobipath run`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any


def normalize(obj: Any) -> Any:
    """Converts `obj` into plain JSON types (dict with str keys, list, str, int, float, bool, None)."""
    if isinstance(obj, dict):
        return {str(k): normalize(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [normalize(v) for v in obj]
    if isinstance(obj, bool) or obj is None or isinstance(obj, str):
        return obj
    if isinstance(obj, int):
        return int(obj)
    if isinstance(obj, float):
        return obj if math.isfinite(obj) else None
    # numpy scalars and similar
    if hasattr(obj, "item"):
        return normalize(obj.item())
    if hasattr(obj, "__fspath__"):
        return str(obj)
    raise TypeError(f"cannot write {type(obj).__name__} as JSON")


def dumps(obj: Any) -> str:
    """Canonical, human-readable JSON text ending in a newline."""
    plain = normalize(obj)
    try:
        return _core.canonical_json(plain) + "\n"
    except UnicodeEncodeError:
        # A lone surrogate (a non-UTF-8 file name under surrogateescape) cannot cross into Rust;
        # Python's json writes it as is.
        import json

        return json.dumps(plain, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False) + "\n"
