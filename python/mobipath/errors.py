"""Errors raised by mobipath's Python API.

`ConfigError` is one problem in a scenario (the field, the value found, what is allowed);
`ScenarioError` carries every `ConfigError` of an invalid scenario; `InternalError` means the
simulator itself failed (a bug to report, never the user's fault).
"""
from __future__ import annotations

from typing import Iterable, List, Mapping, Optional

from . import _core

__all__ = ["ConfigError", "ScenarioError", "InternalError"]


class ConfigError:
    """One problem in a scenario file.

    `field` is a dotted path such as ``links[0].rate_mbps`` (or a file name for trace errors),
    `value` the value as written (empty when the field is missing), `message` what is wrong and
    what is allowed, and `file` the scenario it was found in. Immutable, compared and hashed by
    its four fields.
    """

    # A plain immutable record rather than a frozen dataclass: `dataclasses` imports `inspect`,
    # about 8 ms of every `mobipath run` (issue 19).
    __slots__ = ("field", "value", "message", "file")
    field: str
    value: str
    message: str
    file: Optional[str]

    def __init__(self, field: str, value: str, message: str, file: Optional[str] = None):
        for name, v in zip(self.__slots__, (field, value, message, file)):
            object.__setattr__(self, name, v)

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"cannot assign to field {name!r}: ConfigError is immutable")

    def __delattr__(self, name: str) -> None:
        raise AttributeError(f"cannot delete field {name!r}: ConfigError is immutable")

    def _key(self) -> tuple:
        return (self.field, self.value, self.message, self.file)

    def __eq__(self, other: object) -> bool:
        if other.__class__ is self.__class__:
            return self._key() == other._key()  # type: ignore[attr-defined]
        return NotImplemented

    def __hash__(self) -> int:
        return hash(self._key())

    def __repr__(self) -> str:
        return f"ConfigError(field={self.field!r}, value={self.value!r}, message={self.message!r}, file={self.file!r})"

    def __reduce__(self):  # type: ignore[override]
        return (type(self), self._key())

    def __str__(self) -> str:
        # Same format as the Rust `Display` of `ConfigError`.
        if not self.field:
            return self.message
        if self.value:
            return f"{self.field} = {self.value}: {self.message}"
        return f"{self.field}: {self.message}"

    def with_file(self) -> str:
        """The error prefixed with its file, as the CLI prints it."""
        return f"{self.file}: {self}" if self.file else str(self)

    @classmethod
    def from_dict(cls, d: Mapping[str, str], file: Optional[str] = None) -> "ConfigError":
        return cls(str(d.get("field", "")).strip(), str(d.get("value", "")), str(d.get("message", "")).strip(), file)


class ScenarioError(_core.ScenarioError):
    """A scenario is invalid; `errors` lists every problem found, `file` names the scenario."""

    def __init__(self, errors: Iterable[ConfigError], file: Optional[str] = None):
        self.errors: List[ConfigError] = list(errors)
        self.file = file
        super().__init__("\n".join(e.with_file() for e in self.errors) or "invalid scenario")

    def __reduce__(self):  # type: ignore[override]
        # Picklable with its errors (a worker process's error reaches the parent intact; the
        # default would call __init__ with the message and fail inside multiprocessing's result
        # thread, leaving the pool waiting forever).
        return (type(self), (self.errors, self.file))


InternalError = _core.InternalError
