"""Where a scenario comes from: a file path or inline TOML text.

`load_source` turns what the user handed us into the text, the name used in error messages and
the directory that relative paths inside the scenario (traces, tables) are resolved against.
"""

from __future__ import annotations

import os
from _collections_abc import Mapping  # collections.abc without the collections package (start-up)

from ._record import Record
from .errors import ConfigError, ScenarioError

# Annotations only: importing typing costs ~4.5 ms of every `mobipath run`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path
    from typing import Any, Optional, Union

    #: A scenario: a path (str or PathLike), TOML text, or the parsed table as a dict. For type
    #: checkers only (`from mobipath.source import ScenarioLike` under `TYPE_CHECKING`): it is
    #: not defined at run time, where building it would import typing.
    ScenarioLike = Union[str, os.PathLike, Mapping[str, Any]]

INLINE_NAME = "<string>"


def path_text(p: Union[str, os.PathLike]) -> str:
    """``str(pathlib.PurePosixPath(p))`` without importing pathlib (with `urllib.parse`, which it
    imports, about 4 ms of every `mobipath run`): repeated slashes and ``.`` parts
    dropped, no trailing slash, ``"."`` for the empty path."""
    s = os.fspath(p)
    root = "//" if s.startswith("//") and not s.startswith("///") else "/" if s.startswith("/") else ""
    return root + "/".join(part for part in s.split("/") if part and part != ".") or "."


def path_stem(p: str) -> str:
    """`pathlib.PurePath.stem` of a path string: its last part without the last suffix."""
    name = p.rstrip("/").rpartition("/")[2]
    if name == ".":
        return ""  # the current directory has no name
    i = name.rfind(".")
    return name[:i] if 0 < i < len(name) - 1 else name


class FilePath:
    """A path string marked as a path (`os.PathLike`), without pathlib: `load_source` reads it
    as a file even when it does not end in ``.toml``."""

    __slots__ = ("text",)

    def __init__(self, text: str):
        self.text = text

    def __fspath__(self) -> str:
        return self.text

    def __str__(self) -> str:
        return self.text


class ScenarioSource(Record):
    """A scenario's TOML text plus where it came from (immutable).

    `base_dir` and `path` are `pathlib.Path`s; they are kept as strings (`base_dir_text`,
    `path_text`) and built on access, so that `mobipath run` never imports pathlib."""

    __slots__ = ("text", "file", "base_dir_text", "path_text")
    text: str
    file: str
    base_dir_text: str
    path_text: Optional[str]

    def __init__(
        self, text: str, file: str, base_dir: Union[str, os.PathLike], path: Optional[Union[str, os.PathLike]] = None
    ):
        self._init(text, file, path_text(base_dir), None if path is None else path_text(path))

    @property
    def base_dir(self) -> Path:
        """The folder relative paths inside the scenario resolve against."""
        from pathlib import Path

        return Path(self.base_dir_text)

    @property
    def path(self) -> Optional[Path]:
        """The scenario file (None for inline text)."""
        from pathlib import Path

        return None if self.path_text is None else Path(self.path_text)

    @property
    def stem(self) -> str:
        """File name without extension ("scenario" for inline text): names result directories."""
        return path_stem(self.path_text) if self.path_text is not None else "scenario"

    def __repr__(self) -> str:
        return f"ScenarioSource(text={self.text!r}, file={self.file!r}, base_dir={self.base_dir!r}, path={self.path!r})"


def looks_like_path(s: str) -> bool:
    """A string is a path if it is one line and names an existing file or ends in ``.toml``."""
    return "\n" not in s and (os.path.exists(s) or s.strip().endswith(".toml"))


def load_source(
    scenario: ScenarioLike,
    *,
    overrides: Optional[Mapping[str, Any]] = None,
    base_dir: Optional[Union[str, os.PathLike[str]]] = None,
) -> ScenarioSource:
    """Reads a scenario given as a path (str or PathLike), as TOML text or as a dict. A relative
    path that does not exist here but names a file shipped with mobipath (``scenarios/...``,
    ``examples/...``) reads that file, as the command line does.

    `overrides` maps dotted field paths to new values (see `apply_overrides`); `base_dir` is the
    folder relative trace and table paths resolve against (default: the file's folder, or the
    current directory for text and dicts).
    Raises `OSError` if a path cannot be read and `ScenarioError` if the file is not UTF-8, is
    not TOML (when overrides must be applied) or an override names no field.
    """
    if isinstance(scenario, os.PathLike) or (isinstance(scenario, str) and looks_like_path(scenario)):
        path = path_text(scenario)
        if not os.path.exists(path):
            # As the CLI does: `scenarios/examples/...` names the copy shipped with mobipath when
            # there is no such file here (its traces and tables resolve beside it).
            from . import shipped

            found = shipped.find(path)
            if found is not None:
                path = str(found)
        from .files import MAX_CONFIG_FILE_BYTES, read_bytes

        data = read_bytes(path, MAX_CONFIG_FILE_BYTES)
        try:
            text = data.decode("utf-8")
        except UnicodeDecodeError as e:
            err = ConfigError(path, "", f"not UTF-8 text ({e.reason} at byte {e.start})", path)
            raise ScenarioError([err], path) from None
        src = ScenarioSource(text, path, os.path.dirname(os.path.realpath(path)), path)
    elif isinstance(scenario, str):
        src = ScenarioSource(scenario, INLINE_NAME, os.getcwd())
    elif isinstance(scenario, Mapping):
        src = ScenarioSource(_dump_toml(dict(scenario), INLINE_NAME), INLINE_NAME, os.getcwd())
    else:
        raise TypeError(f"scenario must be a path, TOML text or a dict, not {type(scenario).__name__}")
    if overrides:
        table = parse_toml(src.text, src.file)
        apply_overrides(table, overrides, src.file)
        src = ScenarioSource(_dump_toml(table, src.file), src.file, src.base_dir_text, src.path_text)
    if base_dir is not None:
        src = ScenarioSource(src.text, src.file, os.path.realpath(os.fspath(base_dir)), src.path_text)
    return src


def parse_toml(text: str, file: str) -> dict[str, Any]:
    """The scenario's TOML table (a `ScenarioError` naming the file if it is not TOML)."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # pragma: no cover - Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as e:
        raise ScenarioError([ConfigError(file, "", f"not valid TOML: {e}", file)], file) from None


def _dump_toml(table: dict[str, Any], file: str) -> str:
    import tomli_w

    try:
        return tomli_w.dumps(table)
    except (TypeError, ValueError, OverflowError) as e:
        raise ScenarioError([ConfigError("scenario", "", f"cannot be written as TOML: {e}", file)], file) from None


def _segments(path: str) -> list[Union[str, int]]:
    """`flows[0].cc` / `flows.0.cc` / `flows.mptcp.cc` → ["flows", 0, "cc"] / [..., "mptcp", ...]."""
    import re  # overrides only: `mobipath run` does not import re for them

    out: list[Union[str, int]] = []
    pos = 0
    for m in re.finditer(r"([^.\[\]]+)|\[(\d+)\]", path):
        gap = path[pos : m.start()].strip(".")
        if gap:
            raise ValueError(gap)
        out.append(
            int(m.group(2)) if m.group(2) is not None else (int(m.group(1)) if m.group(1).isdigit() else m.group(1))
        )
        pos = m.end()
    if not out or path[pos:].strip("."):
        raise ValueError(path)
    return out


def apply_overrides(table: dict[str, Any], overrides: Mapping[str, Any], file: str = INLINE_NAME) -> None:
    """Sets each dotted field path of `overrides` in the parsed scenario `table`, in place.

    A path walks tables by key and arrays of tables by index (`links[0]`, `links.0`) or by the
    entry's `name` (`flows.mptcp.scheduler`, `links.a.rate_mbps`); the last key may be new (a
    field left at its default), everything before it must exist. Raises `ScenarioError` naming
    the override that does not fit.
    """
    errors: list[ConfigError] = []
    for path, value in overrides.items():
        try:
            segs = _segments(str(path))
        except ValueError:
            errors.append(
                ConfigError(str(path), "", "not a dotted field path (e.g. links.a.rate_mbps or flows[0].cc)", file)
            )
            continue
        cur: Any = table
        done: list[str] = []
        for i, seg in enumerate(segs):
            last = i == len(segs) - 1
            where = ".".join(done) or "the scenario"
            if isinstance(cur, list):
                if isinstance(seg, int):
                    if not 0 <= seg < len(cur):
                        errors.append(
                            ConfigError(
                                str(path), "", f"{where} has {len(cur)} entries; index {seg} is out of range", file
                            )
                        )
                        break
                    idx = seg
                else:
                    names = [e.get("name") for e in cur if isinstance(e, dict)]
                    if seg not in names:
                        errors.append(
                            ConfigError(
                                str(path),
                                "",
                                f"{where} has no entry named {seg!r}; names: {', '.join(map(str, names)) or '(none)'}",
                                file,
                            )
                        )
                        break
                    idx = names.index(seg)
                if last:
                    cur[idx] = value
                else:
                    cur = cur[idx]
            elif isinstance(cur, dict):
                key = str(seg)
                if last:
                    cur[key] = value
                elif key not in cur:
                    nxt = segs[i + 1]
                    if isinstance(nxt, str) and not nxt.isdigit():
                        cur[key] = {}
                        cur = cur[key]
                    else:
                        errors.append(ConfigError(str(path), "", f"{where} has no field {key!r}", file))
                        break
                else:
                    cur = cur[key]
            else:
                errors.append(ConfigError(str(path), "", f"{where} is a value, not a table or an array", file))
                break
            done.append(str(seg))
    if errors:
        raise ScenarioError(errors, file)
