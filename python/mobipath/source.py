"""Where a scenario comes from: a file path or inline TOML text.

`load_source` turns what the user handed us into the text, the name used in error messages and
the directory that relative paths inside the scenario (traces, tables) are resolved against.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import Optional, Union

from .errors import ConfigError, ScenarioError

ScenarioLike = Union[str, "os.PathLike[str]"]

INLINE_NAME = "<string>"


@dataclass(frozen=True)
class ScenarioSource:
    """A scenario's TOML text plus where it came from."""

    text: str
    file: str
    base_dir: Path
    path: Optional[Path] = None

    @property
    def stem(self) -> str:
        """File name without extension ("scenario" for inline text): names result directories."""
        return self.path.stem if self.path is not None else "scenario"


def looks_like_path(s: str) -> bool:
    """A string is a path if it is one line and names an existing file or ends in ``.toml``."""
    return "\n" not in s and (os.path.exists(s) or s.strip().endswith(".toml"))


def load_source(scenario: ScenarioLike) -> ScenarioSource:
    """Reads a scenario given as a path (str or PathLike) or as TOML text.

    Raises `OSError` if a path cannot be read and `ScenarioError` if the file is not UTF-8.
    """
    if isinstance(scenario, os.PathLike) or (isinstance(scenario, str) and looks_like_path(scenario)):
        path = Path(os.fspath(scenario))
        data = path.read_bytes()
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            err = ConfigError(str(path), "", f"not UTF-8 text ({e.reason} at byte {e.start})", str(path))
            raise ScenarioError([err], str(path)) from None
        return ScenarioSource(text, str(path), path.resolve().parent, path)
    if isinstance(scenario, str):
        return ScenarioSource(scenario, INLINE_NAME, Path.cwd())
    raise TypeError(f"scenario must be a path or TOML text, not {type(scenario).__name__}")
