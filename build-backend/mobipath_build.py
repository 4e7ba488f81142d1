"""mobipath's PEP 517 build backend: maturin, with the simulator core profile-guided.

`pip install .` (a wheel) builds the extension twice: first an instrumented build of a scenario
runner (`crates/py/examples/pgo_train.rs`, `-Cprofile-generate`), which runs the shipped
benchmark, example and paper scenarios (`TRAINING`, a few seconds); `llvm-profdata` merges what
it counted; then maturin builds the extension with `-Cprofile-use`. The simulator is branchy
event-handling code, where knowing the hot paths lets LLVM lay out and inline better: the core
ran 1.18-1.26x faster on htsim's TCP and MPTCP workloads (docs/performance.md).

Profile-guided optimisation changes how the code is laid out, never what it computes: results
are byte-identical (`scripts/check-install` compares the installed wheel's summaries with the
golden files).

`MOBIPATH_PGO` chooses: unset or `auto` = wheels only, and only when an `llvm-profdata` of the
compiler's LLVM version is found (rustup: `rustup component add llvm-tools`); otherwise the
build goes on without it and says why. `0`/`off` = never. `1`/`on` = required, for editable
installs too; the build fails if it cannot be done. The extension records the outcome
(`mobipath version`, provenance `core_build.pgo`).

Everything else is maturin's backend, unchanged.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Optional

import maturin
from maturin import (  # noqa: F401  (re-exported: the rest of the PEP 517 interface)
    build_sdist,
    get_requires_for_build_editable,
    get_requires_for_build_sdist,
    get_requires_for_build_wheel,
    prepare_metadata_for_build_editable,
    prepare_metadata_for_build_wheel,
)

ROOT = Path(__file__).resolve().parent.parent
# Scenario files (globs under ROOT) the instrumented core runs: every model the simulator has
# (TCP variants, MPTCP schedulers and congestion controls, links with traces and loss, trains and
# handover tables, handoff notification, LTE cells, relays). Not the 2x400 Mbit/s benchmark
# (2.5 s instrumented, nothing the 2x100 one lacks) nor the long runs.
TRAINING = (
    "scenarios/bench/cubic-100mbps-60s.toml",
    "scenarios/bench/lte-p4-20ue-60s.toml",
    "scenarios/bench/mptcp-lia-minrtt-2x25mbps-70s.toml",
    "scenarios/bench/mptcp-lia-minrtt-2x100mbps-70s.toml",
    "scenarios/bench/mptcp-lia-minrtt-8x25mbps-70s.toml",
    "scenarios/examples/*.toml",
    "scenarios/p0/*.toml",
    "scenarios/p2/*.toml",
    "scenarios/p3/*.toml",
    "scenarios/p4/*.toml",
)


class PgoUnavailable(Exception):
    """Profile-guided optimisation cannot be done here; the message says why."""


def _say(msg: str) -> None:
    print(f"mobipath build: {msg}", file=sys.stderr, flush=True)


def _mode() -> str:
    v = os.environ.get("MOBIPATH_PGO", "auto").strip().lower()
    if v in ("", "auto"):
        return "auto"
    if v in ("0", "off", "no", "false"):
        return "off"
    if v in ("1", "on", "yes", "true"):
        return "on"
    raise SystemExit(f"mobipath build: MOBIPATH_PGO={os.environ['MOBIPATH_PGO']!r}: allowed are auto, on (1), off (0)")


def _llvm_major(text: str) -> Optional[str]:
    """The major version in an `LLVM version: 22.1.2` / `LLVM version 22.1.2` line."""
    for line in text.splitlines():
        if "LLVM version" in line:
            return line.split("version", 1)[1].strip(" :").split(".")[0] or None
    return None


def find_profdata() -> str:
    """An `llvm-profdata` that reads what this rustc writes (same LLVM major version)."""
    try:
        vv = subprocess.run(["rustc", "-vV"], capture_output=True, text=True, check=True).stdout
        sysroot = subprocess.run(
            ["rustc", "--print", "sysroot"], capture_output=True, text=True, check=True
        ).stdout.strip()
    except (OSError, subprocess.CalledProcessError) as e:
        raise PgoUnavailable(f"cannot ask rustc for its version ({e})") from None
    host = next((line.split(":", 1)[1].strip() for line in vv.splitlines() if line.startswith("host:")), "")
    want = _llvm_major(vv)
    candidates = [Path(sysroot) / "lib" / "rustlib" / host / "bin" / "llvm-profdata"]
    on_path = shutil.which(f"llvm-profdata-{want}") or shutil.which("llvm-profdata")
    if on_path:
        candidates.append(Path(on_path))
    seen = []
    for c in candidates:
        if not c.is_file():
            continue
        try:
            have = _llvm_major(subprocess.run([str(c), "--version"], capture_output=True, text=True).stdout)
        except OSError:
            continue
        if have == want:
            return str(c)
        seen.append(f"{c} is LLVM {have}")
    extra = f" ({'; '.join(seen)})" if seen else ""
    raise PgoUnavailable(
        f"no llvm-profdata for rustc's LLVM {want}{extra}: `rustup component add llvm-tools` provides one"
    )


def training_scenarios() -> list[Path]:
    """The `TRAINING` files: in the source tree, or in a source archive, the package's copy of
    them (`python/mobipath/share`; the archive has no top-level `scenarios/`)."""
    base = ROOT if (ROOT / "scenarios").is_dir() else ROOT / "python" / "mobipath" / "share"
    files: list[Path] = []
    for pattern in TRAINING:
        files += sorted(base.glob(pattern))
    return files


def _target_dir() -> Path:
    t = os.environ.get("CARGO_TARGET_DIR")
    return Path(t) if t else ROOT / "target"


def train(env: Mapping[str, str]) -> tuple[Path, int]:
    """Builds the instrumented runner, runs the training scenarios and merges their counts.
    Returns (path of the merged profile, number of scenarios run)."""
    profdata = find_profdata()
    scenarios = training_scenarios()
    if not scenarios:
        raise PgoUnavailable(f"none of the training scenarios is in {ROOT} (an incomplete source tree?)")
    work = _target_dir() / "pgo"
    raw = work / "profiles"
    shutil.rmtree(raw, ignore_errors=True)
    raw.mkdir(parents=True)
    # The instrumented build has its own target directory: different flags would otherwise
    # invalidate the normal build's cache every time.
    build_env = dict(env)
    build_env["RUSTFLAGS"] = (env.get("RUSTFLAGS", "") + f" -Cprofile-generate={raw}").strip()
    build_env["CARGO_TARGET_DIR"] = str(work / "instrumented")
    build_env["LLVM_PROFILE_FILE"] = str(raw / "build-%m-%p.profraw")
    _say(f"profile-guided build 1/3: instrumented core ({work / 'instrumented'})")
    # The extension's own crate and features (crates/py/examples/pgo_train.rs says why).
    cmd = [
        "cargo",
        "build",
        "--release",
        "--manifest-path",
        str(ROOT / "crates" / "py" / "Cargo.toml"),
        "--features",
        "pyo3/extension-module",
        "--example",
        "pgo_train",
    ]
    if subprocess.run(cmd, cwd=ROOT, env=build_env).returncode != 0:
        raise PgoUnavailable("the instrumented build failed")
    runner = work / "instrumented" / "release" / "examples" / "pgo_train"
    # Only the runner's own counts: the build scripts instrumented above wrote some too.
    for f in raw.glob("*.profraw"):
        f.unlink()
    _say(f"profile-guided build 2/3: training on {len(scenarios)} scenarios")
    run_env = dict(env)
    run_env["LLVM_PROFILE_FILE"] = str(raw / "run-%m-%p.profraw")
    r = subprocess.run(
        [str(runner)] + [str(s) for s in scenarios],
        cwd=ROOT,
        env=run_env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        timeout=600,
    )
    if r.returncode != 0:
        raise PgoUnavailable(f"a training scenario failed: {r.stderr.strip()[-400:]}")
    merged = work / "merged.profdata"
    files = sorted(raw.glob("*.profraw"))
    if not files:
        raise PgoUnavailable("the training runs wrote no profile")
    r = subprocess.run([profdata, "merge", "-o", str(merged)] + [str(f) for f in files], capture_output=True, text=True)
    if r.returncode != 0:
        raise PgoUnavailable(f"llvm-profdata merge failed: {r.stderr.strip()[-400:]}")
    return merged, len(scenarios)


def _with_pgo(build: Any, *args: Any, wheel: bool) -> str:
    mode = _mode()
    if mode == "off" or (mode == "auto" and not wheel):
        return build(*args)
    saved: dict[str, Optional[str]] = {k: os.environ.get(k) for k in ("RUSTFLAGS", "MOBIPATH_BUILD_PGO")}
    try:
        merged, n = train(os.environ)
    except PgoUnavailable as e:
        if mode == "on":
            raise SystemExit(
                f"mobipath build: MOBIPATH_PGO=on, but profile-guided optimisation is not possible: {e}"
            ) from None
        _say(f"building without profile-guided optimisation: {e}")
        return build(*args)
    _say("profile-guided build 3/3: the extension, optimised with the profile")
    try:
        # -Cprofile-use on every crate; functions the training never ran (the Python binding,
        # parsers' error paths) are optimised as without a profile.
        os.environ["RUSTFLAGS"] = (saved["RUSTFLAGS"] or "") + f" -Cprofile-use={merged}"
        os.environ["MOBIPATH_BUILD_PGO"] = f"trained on {n} scenarios"
        return build(*args)
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


def build_wheel(
    wheel_directory: str, config_settings: Optional[Mapping[str, Any]] = None, metadata_directory: Optional[str] = None
) -> str:
    return _with_pgo(maturin.build_wheel, wheel_directory, config_settings, metadata_directory, wheel=True)


def build_editable(
    wheel_directory: str, config_settings: Optional[Mapping[str, Any]] = None, metadata_directory: Optional[str] = None
) -> str:
    return _with_pgo(maturin.build_editable, wheel_directory, config_settings, metadata_directory, wheel=False)
