"""Shared fixtures for the Python tests: repository paths and a helper to run the real CLI."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
INVALID = DATA / "invalid"
# Written by the simulator's author; the run-path tests need it.
EXAMPLE = ROOT / "scenarios" / "examples" / "single-cubic.toml"


def short_example() -> str:
    """The shipped CUBIC example cut to 10 ms without warm-up (a run that costs milliseconds).
    Each line is rewritten by pattern and must be there exactly once."""
    text = EXAMPLE.read_text()
    for key, value in (("duration_s", "0.01"), ("warmup_s", "0")):
        text, n = re.subn(rf"(?m)^{key} = .*$", f"{key} = {value}", text)
        assert n == 1, f"{EXAMPLE} sets {key} {n} times, not once"
    return text


def mobipath_command() -> list[str]:
    """The installed `mobipath` console script (next to this interpreter), else `python -m mobipath`."""
    script = Path(sys.executable).with_name("mobipath")
    if script.exists():
        return [str(script)]
    found = shutil.which("mobipath")
    return [found] if found else [sys.executable, "-m", "mobipath"]


def cli_env(extra: Optional[dict] = None) -> dict:
    """The environment for a CLI subprocess: no debug tracebacks, wide output, and PYTHONPATH
    entries made absolute (a relative one would break once the command runs in another cwd)."""
    env = dict(os.environ)
    env.pop("MOBIPATH_DEBUG", None)
    env["COLUMNS"] = "200"
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(str(Path(p).resolve()) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    env.update(extra or {})
    return env


def run_cli(
    args: list[str],
    cwd: Optional[Path] = None,
    timeout: float = 600,
    command: Optional[list[str]] = None,
    env: Optional[dict] = None,
) -> subprocess.CompletedProcess:
    """Runs the CLI in a subprocess (no TTY, so no progress bar) and captures text output."""
    return subprocess.run(
        (command or mobipath_command()) + [str(a) for a in args],
        cwd=str(cwd) if cwd else None,
        capture_output=True,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=timeout,
        env=cli_env(env),
    )


@pytest.fixture
def example() -> Path:
    assert EXAMPLE.is_file(), f"{EXAMPLE} is missing (the run-path tests need it)"
    return EXAMPLE


@pytest.fixture(scope="session")
def installed(tmp_path_factory):
    """How to run mobipath as a user's install would, outside the repository: the command named
    by MOBIPATH_INSTALLED_CLI (set by scripts/check-install to a wheel installed into a fresh
    venv), else `python -m mobipath` on a copy of the imported package (symlinks followed, as in
    a wheel) in a temporary site directory. Returns (command, env, a scratch directory)."""
    work = tmp_path_factory.mktemp("user")
    cli = os.environ.get("MOBIPATH_INSTALLED_CLI")
    if cli:
        return [cli], {}, work
    import mobipath

    site = tmp_path_factory.mktemp("site")
    shutil.copytree(
        Path(mobipath.__file__).resolve().parent, site / "mobipath", ignore=shutil.ignore_patterns("__pycache__")
    )
    return [sys.executable, "-m", "mobipath"], {"PYTHONPATH": str(site)}, work


# `mobipath reproduce ... --quick` of each paper, run at most once per test session (the golden
# results, the HTML report and its rendering all read the same output).
QUICK_REPRODUCE = {
    "p0-quick": ["reproduce", "p0", "--quick", "--jobs", "2"],
    "p1-quick": ["reproduce", "p1", "--quick", "--jobs", "2"],
    "p2-quick": ["reproduce", "p2", "--quick", "--jobs", "2"],
    "p3-quick": ["reproduce", "p3", "--quick", "--jobs", "2"],
}


@pytest.fixture(scope="session")
def quick_report(tmp_path_factory):
    """`quick_report(name)`: the output directory of QUICK_REPRODUCE[name], run on first use."""
    made: dict[str, Path] = {}

    def get(name: str) -> Path:
        if name not in made:
            out = tmp_path_factory.mktemp("reports") / name
            r = run_cli([*QUICK_REPRODUCE[name], "--out", out], timeout=300)
            assert r.returncode == 0, r.stderr
            made[name] = out
        return made[name]

    return get


def kernel_emulation_unavailable(*tools: str) -> str:
    """Why the real-kernel tests (network namespaces, TUN, the link emulator) cannot run here,
    or "" if they can: Linux, root, a working `ip netns`, /dev/net/tun, the emulator binary, and
    each of `tools` on PATH (e.g. "tc", "ss")."""
    if sys.platform != "linux":
        return "not Linux"
    if os.geteuid() != 0:
        return "needs root"
    if shutil.which("ip") is None or subprocess.run(["ip", "netns", "list"], capture_output=True).returncode != 0:
        return "`ip netns` unavailable"
    missing = [t for t in tools if shutil.which(t) is None]
    if missing:
        return f"no {', '.join(f'`{t}`' for t in missing)}"
    if not Path("/dev/net/tun").exists():
        return "no /dev/net/tun"
    from mobipath.emulate.netns import EmulateError, emulator_command

    try:
        emulator_command()
    except EmulateError as e:
        return str(e)
    return ""


def proxy_chain_unavailable() -> str:
    """Why the proxy pair cannot run on the real kernel here, or "" if it can: the real-kernel
    tests' needs with `ss`, and a mobipath-proxy binary."""
    why = kernel_emulation_unavailable("ss")
    if why:
        return why
    from mobipath.router.proxy import proxy_command

    try:
        # Passes over a workspace build older than its sources (provenance.workspace_build), as
        # the emulator command does.
        proxy_command()
    except FileNotFoundError as e:
        return str(e)
    return ""
