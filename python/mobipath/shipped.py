"""Files shipped inside the package: the example, P0 and benchmark scenarios, the HSR traces and
a sample recorded ride, under ``mobipath/share/`` with the repository's layout (``scenarios/...``,
``data/...``), so relative paths inside the scenarios (``../../data/hsr-traces/...``) still work.

In the repository, ``python/mobipath/share/`` holds one symlink per file of ``scenarios/`` and
``data/`` (``scripts/sync-package-data``); in a wheel they are plain files.

- `root()`: the shipped tree (a directory on disk).
- `find(path)`: the shipped file a relative path names when it does not exist here, so the
  documented commands (``mobipath run scenarios/examples/single-cubic.toml``) work from any
  directory; ``examples/single-cubic.toml`` (below ``scenarios/``) works too.
- `copy_to(dest)`: copies the tree out (``mobipath examples DIR``).
"""

from __future__ import annotations

import os

# Annotations only: importing typing costs ~4.5 ms of every `mobipath run`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from pathlib import Path
    from typing import Optional, Union

__all__ = ["root", "path", "find", "files", "copy_to", "ShippedError"]

SHARE = "share"
TOP = ("scenarios", "data")


class ShippedError(Exception):
    """The shipped files are missing (a broken install) or cannot be copied."""


def root() -> Path:
    """The directory holding the shipped ``scenarios/`` and ``data/``."""
    from pathlib import Path

    try:
        from importlib.resources import files

        base = Path(str(files("mobipath") / SHARE))
    except (ImportError, TypeError):  # pragma: no cover - Python < 3.9 or an unusual loader
        base = Path(__file__).resolve().parent / SHARE
    if not (base / "scenarios").is_dir():
        raise ShippedError(f"mobipath's shipped scenarios are missing ({base}): reinstall mobipath")
    return base


def path(relative: Union[str, Path]) -> Path:
    """The shipped file at `relative` (e.g. ``scenarios/p0/hst-minrtt.toml``); ShippedError if
    there is none."""
    p = root() / relative
    if not p.is_file():
        raise ShippedError(f"{relative} is not shipped with mobipath (see `mobipath examples --list`)")
    return p


def find(given: Union[str, os.PathLike[str]]) -> Optional[Path]:
    """The shipped file that `given` names, if `given` is a relative path that does not exist
    here: ``scenarios/...`` and ``data/...`` as in the repository, or a path below
    ``scenarios/`` (``examples/single-cubic.toml``). None otherwise."""
    # os.path first: `mobipath run` on a file that exists here never imports pathlib (with
    # urllib.parse, which it imports, about 4 ms of every run).
    g = os.fspath(given)
    if g == "" or os.path.isabs(g) or os.path.exists(g) or ".." in g.split("/"):
        return None
    try:
        base = root()
    except ShippedError:
        return None
    for candidate in (base / g, base / "scenarios" / g):
        if candidate.is_file():
            return candidate
    return None


def files() -> list[Path]:
    """Every shipped file, relative to `root()`, sorted."""
    base = root()
    out: list[Path] = []
    for top in TOP:
        d = base / top
        if d.is_dir():
            out.extend(p.relative_to(base) for p in d.rglob("*") if p.is_file())
    return sorted(out)


def copy_to(dest: Union[str, Path], overwrite: bool = False) -> tuple[list[Path], list[Path]]:
    """Copies the shipped tree into `dest` (created if needed), keeping its layout. Returns
    (copied, unchanged) relative paths. A file that exists in `dest` with other contents is
    left alone and reported in ShippedError, unless `overwrite`."""
    # Imported here: `mobipath run` imports this module to find shipped scenarios, and shutil
    # pulls in the compression modules (start-up).
    import filecmp
    import shutil
    from pathlib import Path

    base, out = root(), Path(dest)
    todo = files()
    clashes = [r for r in todo if (out / r).exists() and not (out / r).is_file()]
    clashes += [
        r for r in todo if (out / r).is_file() and not overwrite and not filecmp.cmp(base / r, out / r, shallow=False)
    ]
    if clashes:
        shown = ", ".join(str(out / r) for r in clashes[:3]) + (" ..." if len(clashes) > 3 else "")
        raise ShippedError(
            f"{len(clashes)} file(s) already exist with other contents: {shown} (--force overwrites them)"
        )
    copied, unchanged = [], []
    for r in todo:
        target = out / r
        if target.is_file() and filecmp.cmp(base / r, target, shallow=False):
            unchanged.append(r)
            continue
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(base / r, target)
        copied.append(r)
    return copied, unchanged
