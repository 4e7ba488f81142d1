"""Errors raised by mobipath's Python API.

`ConfigError` is one problem in a scenario (the field, the value found, what is allowed);
`ScenarioError` carries every `ConfigError` of an invalid scenario; `InternalError` means the
simulator itself failed (a bug to report, never the user's fault).
"""

from __future__ import annotations

from . import _core
from ._record import Record

# Annotations only: importing typing costs ~4.5 ms of every `mobipath run`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Iterable, Mapping
    from typing import Optional

__all__ = ["ConfigError", "ScenarioError", "InternalError"]


class ConfigError(Record):
    """One problem in a scenario file.

    `field` is a dotted path such as ``links[0].rate_mbps`` (or a file name for trace errors),
    `value` the value as written (empty when the field is missing), `message` what is wrong and
    what is allowed, and `file` the scenario it was found in. Immutable, compared and hashed by
    its four fields.
    """

    __slots__ = ("field", "value", "message", "file")
    field: str
    value: str
    message: str
    file: Optional[str]

    def __init__(self, field: str, value: str, message: str, file: Optional[str] = None):
        self._init(field, value, message, file)

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
    def from_dict(cls, d: Mapping[str, str], file: Optional[str] = None) -> ConfigError:
        return cls(str(d.get("field", "")).strip(), str(d.get("value", "")), str(d.get("message", "")).strip(), file)


class ScenarioError(_core.ScenarioError):
    """A scenario is invalid; `errors` lists every problem found, `file` names the scenario."""

    def __init__(self, errors: Iterable[ConfigError], file: Optional[str] = None):
        # Typed errors here; the extension's own ScenarioError carries plain dicts.
        self.errors: list[ConfigError] = list(errors)  # type: ignore[assignment]
        self.file = file
        super().__init__("\n".join(e.with_file() for e in self.errors) or "invalid scenario")

    def __reduce__(self):  # type: ignore[override]
        # Picklable with its errors (a worker process's error reaches the parent intact; the
        # default would call __init__ with the message and fail inside multiprocessing's result
        # thread, leaving the pool waiting forever).
        return (type(self), (self.errors, self.file))


InternalError = _core.InternalError
