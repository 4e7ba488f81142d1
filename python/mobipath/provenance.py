"""Provenance: what produced a result, so anyone can reproduce it.

`version()` and `git_revision()` name the code; `collect()` builds the ``provenance.json``
record (resolved scenario, seed, versions, git revision, platform, the command line and a
command that reproduces the run).

The git revision is looked up, in order: the ``MOBIPATH_GIT_REVISION`` environment variable;
the source tree this package is imported from, when that is a git checkout of mobipath (an
editable install — this sees uncommitted edits as "-dirty"); the revision recorded when the
extension module was built; otherwise ``"unknown"``.
"""

from __future__ import annotations

import os
import sys

from . import _core

# Annotations only: importing typing costs ~4.5 ms of every `mobipath run`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence
    from pathlib import Path
    from typing import Any, Optional

__all__ = ["version", "git_revision", "command_line", "collect", "quote"]


def _memo(f):  # type: ignore[no-untyped-def]
    """`functools.lru_cache(maxsize=None)` for a function without arguments, `cache_clear`
    included, without importing functools (with collections, ~1.5 ms of every `mobipath run`)."""
    missing = object()
    box = [missing]

    def cached():  # type: ignore[no-untyped-def]
        if box[0] is missing:
            box[0] = f()
        return box[0]

    def cache_clear() -> None:
        box[0] = missing

    cached.cache_clear = cache_clear  # type: ignore[attr-defined]
    cached.__name__, cached.__doc__, cached.__wrapped__ = f.__name__, f.__doc__, f  # type: ignore[attr-defined]
    return cached


@_memo
def version() -> str:
    """mobipath's version. The package takes its version from the Rust workspace (maturin,
    `dynamic = ["version"]`), so the extension module's is the installed distribution's; reading
    it there avoids importing `importlib.metadata` (~30 ms of every command's start-up)."""
    return str(getattr(_core, "__version__", "unknown"))


def _git(root: Path, *args: str) -> Optional[str]:
    import subprocess  # only source trees run git; an installed mobipath never imports it here

    try:
        out = subprocess.run(
            ["git", "--no-optional-locks", "-C", str(root), *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            stdin=subprocess.DEVNULL,
            timeout=10,
            check=False,
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if out.returncode != 0:
        return None
    return out.stdout.decode("utf-8", "replace").strip()


def source_tree() -> Optional[Path]:
    """The mobipath checkout this package is imported from, if any (editable installs)."""
    # os.path first: an installed mobipath never imports pathlib here (start-up).
    root = os.path.dirname(os.path.dirname(os.path.dirname(os.path.realpath(__file__))))
    if os.path.isfile(os.path.join(root, "crates", "py", "Cargo.toml")) and os.path.exists(os.path.join(root, ".git")):
        from pathlib import Path

        return Path(root)
    return None


def workspace_build(root: Path, binary: str, crates: Sequence[str]) -> Optional[str]:
    """The current build of ``binary`` in a source tree's ``target/`` (release, then debug), or
    None. A build older than any ``.rs`` file of the crates it is made of (``crates/<name>/src``)
    is not used: it would run older code than the rest of the tree, silently. A warning names
    the rebuild command."""
    candidates = [p for p in (root / "target" / profile / binary for profile in ("release", "debug")) if p.exists()]
    if not candidates:
        return None
    newest_source = 0.0
    for crate in crates:
        for dirpath, _, files in os.walk(root / "crates" / crate / "src"):
            for f in files:
                if f.endswith(".rs"):
                    newest_source = max(newest_source, os.stat(os.path.join(dirpath, f)).st_mtime)
    for p in candidates:
        if p.stat().st_mtime >= newest_source:
            return str(p)
    print(
        f"warning: {candidates[0]} is older than the sources it is built from; not using it "
        f"(rebuild it with `cargo build --release -p {binary}`)",
        file=sys.stderr,
    )
    return None


def revision_of(root: Path) -> Optional[str]:
    """HEAD of the git work tree at `root`, with "-dirty" if tracked files were modified."""
    from pathlib import Path

    top = _git(root, "rev-parse", "--show-toplevel")
    if top is None or Path(top).resolve() != root.resolve():
        return None
    rev = _git(root, "rev-parse", "HEAD")
    if not rev:
        return None
    status = _git(root, "status", "--porcelain", "--untracked-files=no")
    return f"{rev}-dirty" if status else rev


@_memo
def git_revision() -> str:
    """The git revision of the code that runs (see the module docs for where it comes from)."""
    env = os.environ.get("MOBIPATH_GIT_REVISION")
    if env:
        return env
    root = source_tree()
    if root is not None:
        rev = revision_of(root)
        if rev:
            return rev
    built = str(getattr(_core, "GIT_REVISION", "") or "")
    return built or "unknown"


@_memo
def _platform() -> dict[str, str]:
    """The operating system, from os.uname(): `platform.platform()` would run `uname -p` in a
    subprocess (platform.uname()'s lazy processor field) and scan the interpreter binary for its
    libc, several ms of every `mobipath run`. Same strings on glibc Linux."""
    if not hasattr(os, "uname"):  # pragma: no cover - Windows
        import platform

        return {
            "system": platform.system(),
            "release": platform.release(),
            "machine": platform.machine(),
            "platform": platform.platform(),
        }
    u = os.uname()
    text = f"{u.sysname}-{u.release}-{u.machine}"
    try:
        libc = os.confstr("CS_GNU_LIBC_VERSION") or ""  # "glibc 2.35"
    except (AttributeError, ValueError, OSError):
        libc = ""
    if libc:
        text += "-with-" + libc.replace(" ", "")
    return {"system": u.sysname, "release": u.release, "machine": u.machine, "platform": text}


# `platform.python_implementation()`'s names for `sys.implementation.name`.
_IMPLEMENTATION = {"cpython": "CPython", "pypy": "PyPy", "ironpython": "IronPython", "jython": "Jython"}


def python_version() -> str:
    """`platform.python_version()` without importing `platform`: the version number
    that opens `sys.version` ("3.11.2")."""
    return sys.version.split()[0]


def _sha256():  # type: ignore[no-untyped-def]
    """The SHA-256 constructor. `hashlib` loads OpenSSL's libcrypto (about 6 ms of every `mobipath
    run`); CPython's built-in implementation, which hashlib itself falls back to, gives
    the same digest."""
    try:
        from _sha2 import sha256  # type: ignore[import-not-found]  # CPython >= 3.12
    except ImportError:
        try:
            from _sha256 import sha256  # type: ignore[import-not-found]  # CPython <= 3.11
        except ImportError:  # pragma: no cover - other interpreters
            from hashlib import sha256
    return sha256


# shlex's safe characters: `[\w@%+=:,./-]` with re.ASCII.
_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_@%+=:,./-")


def quote(arg: str) -> str:
    """`shlex.quote` without importing shlex, which imports re (start-up)."""
    if not arg:
        return "''"
    if all(c in _SAFE for c in arg):
        return arg
    return "'" + arg.replace("'", "'\"'\"'") + "'"


def command_line(argv: Optional[Sequence[str]] = None) -> str:
    """The command line as a shell would need it; the CLI's own name replaces its full path (also
    for ``python -m mobipath``, whose argv[0] is the package's ``__main__.py``)."""
    args = list(sys.argv if argv is None else argv)
    parts = [p for p in args[0].split("/") if p] if args else []
    if parts[-1:] == ["mobipath"] or parts[-2:] == ["mobipath", "__main__.py"]:
        args[0] = "mobipath"
    return " ".join(quote(a) for a in args)


def collect(
    *,
    resolved_scenario: Any,
    seed: Optional[int],
    scenario_file: Optional[str],
    scenario_text: str,
    events: Optional[int] = None,
    command: Optional[str] = None,
) -> dict[str, Any]:
    """The provenance record of one run (written as ``provenance.json``)."""
    reproduce = None
    if scenario_file is not None:
        reproduce = f"mobipath run {quote(scenario_file)}"
        if seed is not None:
            reproduce += f" --seed {seed}"
    return {
        "mobipath_version": version(),
        "git_revision": git_revision(),
        "core_build": {
            "version": str(getattr(_core, "__version__", "unknown")),
            "git_revision": str(getattr(_core, "GIT_REVISION", "unknown")),
            "profile": str(getattr(_core, "BUILD_PROFILE", "unknown")),
            # profile-guided optimisation (build-backend/): what it was trained on, or None
            "pgo": str(getattr(_core, "BUILD_PGO", "")) or None,
        },
        "seed": seed,
        "scenario_file": scenario_file,
        "scenario_sha256": _sha256()(scenario_text.encode("utf-8")).hexdigest(),
        "resolved_scenario": resolved_scenario,
        "events": events,
        "command": command if command is not None else command_line(),
        "reproduce": reproduce,
        "python": {
            "version": python_version(),
            "implementation": _IMPLEMENTATION.get(sys.implementation.name, sys.implementation.name),
            "executable": sys.executable,
        },
        "platform": _platform(),
    }
