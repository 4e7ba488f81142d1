"""The build backend (build-backend/mobipath_build.py): when it builds profile-guided, and that
it refuses what it cannot do with a clear message. The profile-guided build itself is checked by
scripts/check-install (a wheel; its summaries against the golden files, test_shipped.py)."""

from __future__ import annotations

import importlib.util
import os
import stat
import sys

import pytest
from conftest import ROOT


@pytest.fixture(scope="module")
def backend():
    spec = importlib.util.spec_from_file_location("mobipath_build", ROOT / "build-backend" / "mobipath_build.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_pyproject_uses_the_backend():
    text = (ROOT / "pyproject.toml").read_text()
    assert 'build-backend = "mobipath_build"' in text and 'backend-path = ["build-backend"]' in text


def test_llvm_versions_are_read_from_rustc_and_llvm_profdata(backend):
    assert backend._llvm_major("rustc 1.95.0\nhost: x\nLLVM version: 22.1.2\n") == "22"
    assert backend._llvm_major("LLVM (http://llvm.org/):\n  LLVM version 19.1.7\n  Optimized build.\n") == "19"
    assert backend._llvm_major("no version here") is None


@pytest.mark.parametrize(
    "value, mode", [("", "auto"), ("auto", "auto"), ("0", "off"), ("OFF", "off"), ("1", "on"), ("on", "on")]
)
def test_pgo_mode(backend, monkeypatch, value, mode):
    monkeypatch.setenv("MOBIPATH_PGO", value)
    assert backend._mode() == mode


def test_a_bad_pgo_mode_names_the_variable_and_the_choices(backend, monkeypatch):
    monkeypatch.setenv("MOBIPATH_PGO", "fast")
    with pytest.raises(SystemExit, match="MOBIPATH_PGO='fast'.*auto, on.*off"):
        backend._mode()


def test_training_covers_every_kind_of_model_and_every_file_exists(backend):
    files = [p.relative_to(ROOT).as_posix() for p in backend.training_scenarios()]
    for pattern in backend.TRAINING:
        assert any(f == pattern or f.startswith(pattern.split("*")[0]) for f in files), f"{pattern} matches nothing"
    assert "scenarios/bench/mptcp-lia-minrtt-2x400mbps-70s.toml" not in files
    assert all((ROOT / f).is_file() for f in files)


def test_editable_builds_and_off_skip_the_profile(backend, monkeypatch):
    calls = []
    monkeypatch.setattr(backend, "train", lambda env: calls.append("train") or (ROOT / "x.profdata", 1))
    build = lambda *a: os.environ.get("RUSTFLAGS", "")  # noqa: E731
    monkeypatch.delenv("RUSTFLAGS", raising=False)
    monkeypatch.setenv("MOBIPATH_PGO", "auto")
    assert backend._with_pgo(build, wheel=False) == "" and calls == []
    assert "-Cprofile-use=" in backend._with_pgo(build, wheel=True) and calls == ["train"]
    assert "RUSTFLAGS" not in os.environ, "the backend must restore the environment"
    monkeypatch.setenv("MOBIPATH_PGO", "off")
    assert backend._with_pgo(build, wheel=True) == "" and calls == ["train"]
    monkeypatch.setenv("MOBIPATH_PGO", "on")
    assert "-Cprofile-use=" in backend._with_pgo(build, wheel=False)


def test_without_a_matching_llvm_profdata_auto_builds_plainly_and_on_fails(backend, monkeypatch, tmp_path):
    # A fake llvm-profdata of another LLVM version on PATH and an empty sysroot: no profile.
    fake = tmp_path / "llvm-profdata"
    fake.write_text("#!/bin/sh\necho 'LLVM version 3.0.0'\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    rustc = tmp_path / "rustc"
    rustc.write_text(
        f"#!/bin/sh\ncase \"$1\" in --print) echo {tmp_path} ;; *) echo 'host: x86_64\nLLVM version: 22.1.2' ;; esac\n"
    )
    rustc.chmod(rustc.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", f"{tmp_path}{os.pathsep}{os.environ['PATH']}")
    with pytest.raises(backend.PgoUnavailable, match="LLVM 22.*is LLVM 3.*rustup component add llvm-tools"):
        backend.find_profdata()
    monkeypatch.setenv("MOBIPATH_PGO", "auto")
    assert backend._with_pgo(lambda: "plain", wheel=True) == "plain"
    monkeypatch.setenv("MOBIPATH_PGO", "on")
    with pytest.raises(SystemExit, match="MOBIPATH_PGO=on.*llvm-profdata"):
        backend._with_pgo(lambda: "plain", wheel=True)


def test_the_backend_imports_under_the_interpreter_pip_uses():
    # pip imports the backend with build-backend/ on sys.path; maturin must be importable there.
    import subprocess

    r = subprocess.run(
        [sys.executable, "-c", "import mobipath_build; print(mobipath_build.build_wheel.__name__)"],
        cwd=ROOT / "build-backend",
        capture_output=True,
        text=True,
    )
    assert r.returncode == 0 and r.stdout.strip() == "build_wheel", r.stderr
