"""`Record`: the base of mobipath's small immutable value classes (`ConfigError`, `ScenarioSource`).

A subclass lists its fields in `__slots__` and its `__init__` calls `_init(*values)` in that order;
it is then immutable, compared and hashed by its fields, picklable and printed as
``Name(field=value, ...)``: what a frozen dataclass gives, without importing `dataclasses`
(which imports `inspect`, about 8 ms of every `mobipath run`).
"""

from __future__ import annotations

# Annotations only: importing typing costs ~4.5 ms of every `mobipath run`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from typing import Any


class Record:
    __slots__: tuple[str, ...] = ()

    def _init(self, *values: Any) -> None:
        if len(values) != len(self.__slots__):  # zip(strict=True) needs Python 3.10; we support 3.9
            raise TypeError(f"{type(self).__name__} takes {len(self.__slots__)} fields, got {len(values)}")
        for name, v in zip(self.__slots__, values):
            object.__setattr__(self, name, v)

    def _key(self) -> tuple[Any, ...]:
        return tuple(getattr(self, n) for n in self.__slots__)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: {type(self).__name__} is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: {type(self).__name__} is immutable")

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._key() == other._key()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"{type(self).__name__}(" + ", ".join(f"{n}={getattr(self, n)!r}" for n in self.__slots__) + ")"

    def __reduce__(self):  # type: ignore[override]
        return (type(self), self._key())
