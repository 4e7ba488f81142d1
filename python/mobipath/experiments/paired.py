"""Differences paired over seeds, for a report's comparison sentences.

Two variants run with the same seed see the same random draws of the scenario (link loss,
capacity schedule, handoff times), so their per-seed difference removes that shared noise: the
95 % Student-t interval of the mean difference over seeds decides whether a comparison may be
stated. A sentence says "higher"/"lower" only when that interval excludes 0, and "no
difference" otherwise.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Callable, Optional

from .common import mean_ci


@dataclass(frozen=True)
class Paired:
    """Mean and 95 % CI half-width of a − b over the `n` seeds both have (None if < 2)."""

    mean: Optional[float]
    ci: Optional[float]
    n: int

    @property
    def sign(self) -> Optional[int]:
        """+1 / −1 when the CI excludes 0, 0 when it does not, None when not measured."""
        if self.mean is None or self.ci is None:
            return None
        return 1 if self.mean - self.ci > 0 else (-1 if self.mean + self.ci < 0 else 0)

    def words(self, higher: str = "higher", lower: str = "lower", same: str = "no difference") -> str:
        """`higher`/`lower`/`same` by [`sign`], "not measured" when there is no CI."""
        s = self.sign
        return "not measured" if s is None else (higher if s > 0 else lower if s < 0 else same)

    def text(self, nd: int = 2, unit: str = "") -> str:
        """ "+1.23 ± 0.45 unit (n = 10)"; "n/a" when not measured."""
        if self.mean is None:
            return "n/a"
        ci = "" if self.ci is None else f" ± {self.ci:.{nd}f}"
        return f"{self.mean:+.{nd}f}{ci}{(' ' + unit) if unit else ''} (n = {self.n})"


def paired(a: Mapping[Hashable, Optional[float]], b: Mapping[Hashable, Optional[float]]) -> Paired:
    """a − b paired by seed: `a` and `b` map seed → value (None = not measured, left out)."""
    d = [x - y for x, y in ((a[s], b[s]) for s in sorted(set(a) & set(b), key=repr)) if x is not None and y is not None]
    m, ci = mean_ci(d)
    return Paired(m, ci, len(d))


def minus(
    a: Mapping[Hashable, Optional[float]], b: Mapping[Hashable, Optional[float]], factor: float = 1.0
) -> dict[Hashable, Optional[float]]:
    """seed → a − factor·b for the seeds both have (None where either is not measured)."""
    out: dict[Hashable, Optional[float]] = {}
    for s in set(a) & set(b):
        x, y = a[s], b[s]
        out[s] = None if x is None or y is None else x - factor * y
    return out


def by_seed(
    rows: Iterable[dict[str, Any]], value: Callable[[dict[str, Any]], Optional[float]], **match: Any
) -> dict[Any, Optional[float]]:
    """seed → value(row) for the rows whose fields equal `match` (one row per seed)."""
    out: dict[Any, Optional[float]] = {}
    for r in rows:
        if all(r.get(k) == v for k, v in match.items()):
            out[r["seed"]] = value(r)
    return out


def field(name: str) -> Callable[[dict[str, Any]], Optional[float]]:
    """A `value` for [`by_seed`]: the row's float field `name` (None if empty)."""

    def get(r: dict[str, Any]) -> Optional[float]:
        v = r.get(name)
        return None if v is None or v == "" else round(float(v), 6)

    return get


__all__ = ["Paired", "paired", "by_seed", "field"]
