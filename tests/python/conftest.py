"""Shared fixtures for the Python tests: repository paths and a helper to run the real CLI."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import List, Optional

import pytest

ROOT = Path(__file__).resolve().parents[2]
DATA = Path(__file__).resolve().parent / "data"
INVALID = DATA / "invalid"
# Written by the simulator's author; the run-path tests need it.
EXAMPLE = ROOT / "scenarios" / "examples" / "single-cubic.toml"


def mobipath_command() -> List[str]:
    """The installed `mobipath` console script (next to this interpreter), else `python -m mobipath`."""
    script = Path(sys.executable).with_name("mobipath")
    if script.exists():
        return [str(script)]
    found = shutil.which("mobipath")
    return [found] if found else [sys.executable, "-m", "mobipath"]


def run_cli(args: List[str], cwd: Optional[Path] = None, timeout: float = 600) -> subprocess.CompletedProcess:
    """Runs the CLI in a subprocess (no TTY, so no progress bar) and captures text output."""
    env = dict(os.environ)
    env.pop("MOBIPATH_DEBUG", None)
    env["COLUMNS"] = "200"
    return subprocess.run(
        mobipath_command() + [str(a) for a in args],
        cwd=str(cwd) if cwd else None,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        stdin=subprocess.DEVNULL,
        text=True,
        timeout=timeout,
        env=env,
    )


@pytest.fixture
def example() -> Path:
    assert EXAMPLE.is_file(), f"{EXAMPLE} is missing (the run-path tests need it)"
    return EXAMPLE
