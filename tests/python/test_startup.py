"""`mobipath run`'s fast start-up (issue 19): the console script runs well-formed `run` command
lines without typer, rich or polars, accepts exactly the command lines typer's `run` accepts
(anything else goes to typer), and writes the same files; `mobipath bench` measures the simulator."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import mobipath
import polars as pl
import pytest
import typer
from conftest import EXAMPLE, cli_env, run_cli, short_example
from mobipath.cli import app
from mobipath.display import fmt_value
from mobipath.runcmd import parse_fast
from typer.testing import CliRunner

HEAVY = ("typer", "click", "rich", "polars", "pydantic", "matplotlib", "numpy")
# Standard-library modules that cost a `mobipath run` milliseconds each (CPU time of a 10 ms run
# 59 -> 44 ms without them, perf stat): dataclasses (imports inspect), hashlib (loads OpenSSL),
# platform, shutil (compression modules), subprocess (only source trees run git), typing (~4.5 ms
# beside json and pathlib: the run path's annotations are never evaluated, see TYPE_CHECKING).
# pathlib with urllib.parse (which it imports in Python < 3.13) was about 4 ms of every run; re
# (imported by json, shlex and pathlib) with enum, functools and collections about 5 ms.
SLOW_STDLIB = (
    "dataclasses",
    "inspect",
    "hashlib",
    "platform",
    "shutil",
    "subprocess",
    "typing",
    "pathlib",
    "urllib.parse",
    "re",
    "json",
    "shlex",
    "enum",
    "functools",
    "collections",
)


def _imported(args, env=None):
    """Every module a process imports (`-X importtime`), by name."""
    proc = subprocess.run(
        [sys.executable, "-X", "importtime", *args],
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    return {line.rsplit("|", 1)[1].strip() for line in proc.stderr.splitlines() if line.startswith("import time:")}


def test_the_installed_command_imports_none_of_the_slow_modules(tmp_path):
    """The `mobipath` script itself (the wheel's, not one an installer generates from an entry
    point: that one imports re first) and everything it imports for a run."""
    script = Path(sys.executable).with_name("mobipath")
    if not script.exists():
        pytest.skip(f"no mobipath command beside {sys.executable}")
    assert "import re" not in script.read_text()
    (tmp_path / "s.toml").write_text(short_example())
    baseline = _imported(["-c", "pass"])  # site and .pth files: not the command's doing
    imported = _imported(
        [str(script), "run", str(tmp_path / "s.toml"), "--out", str(tmp_path / "r"), "-q"],
        {"MOBIPATH_GIT_REVISION": "test"},
    )
    assert "mobipath.results" in imported
    assert sorted((imported - baseline) & set(SLOW_STDLIB + HEAVY)) == []


@pytest.mark.parametrize(
    "args",
    [
        ["run", "x.toml"],
        ["run", "x.toml", "--seed", "7", "--out", "d", "--json", "-q"],
        ["run", "--seed=0", "--out=d", "--quiet", "x.toml"],
        ["run", "x.toml", "--seed", str(2**64 - 1)],
    ],
)
def test_fast_path_takes_well_formed_run_lines(args):
    opts = parse_fast(args)
    assert opts is not None and opts.scenario == "x.toml"


@pytest.mark.parametrize(
    "args",
    [
        [],
        ["run"],
        ["validate", "x.toml"],
        ["run", "x.toml", "--help"],
        ["run", "--help"],
        ["run", "x.toml", "-h"],
        ["run", "x.toml", "--seed"],
        ["run", "x.toml", "--seed", "-1"],
        ["run", "x.toml", "--seed", "seven"],
        ["run", "x.toml", "--seed", str(2**64)],
        ["run", "x.toml", "--seed", "1", "--seed", "2"],
        ["run", "x.toml", "--out", ""],
        ["run", "x.toml", "--json", "--json"],
        ["run", "x.toml", "y.toml"],
        ["run", "x.toml", "--frobnicate"],
        ["run", "--", "x.toml"],
    ],
)
def test_fast_path_leaves_everything_else_to_typer(args):
    assert parse_fast(args) is None


def test_fast_path_knows_exactly_typers_run_options():
    """If `cli.run` gains or renames an option, the fast parser must follow (or it would refuse
    nothing and silently hand the new option to typer, which is correct but slow: this test says
    which to update)."""
    command = typer.main.get_command(app).commands["run"]
    opts = {
        o
        for p in command.params
        if not getattr(p, "is_eager", False)
        for o in (*p.opts, *p.secondary_opts)
        if o.startswith("-")
    }
    assert opts == {"--seed", "--out", "--json", "--quiet", "-q", "--pcap", "--pcap-max-mb"}
    for o in opts:
        line = ["run", "x.toml", o] + ([] if o in ("--json", "--quiet", "-q", "--pcap") else ["5"])
        assert parse_fast(line) is not None, o


def _fast_run(args, cwd, heavy=HEAVY, env=None):
    """Runs the console script's entry in a fresh interpreter; returns (process, heavy modules imported)."""
    # Only what the command imports counts: `site` and `.pth` files (coverage, editable
    # installs) may load some of these before mobipath runs, and the command does not pay for them.
    code = (
        "import sys, atexit\n"
        "before = set(sys.modules)\n"
        f"heavy = {heavy!r}\n"
        "atexit.register(lambda: sys.stderr.write('\\nIMPORTED=' + ','.join(m for m in heavy if m in sys.modules and m "
        "not in before) + '\\n'))\n"
        "from mobipath.runcmd import entry\n"
        f"entry({args!r})\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=cwd,
        env=cli_env(env),
        capture_output=True,
        text=True,
        timeout=120,
    )
    marker = [line for line in proc.stderr.splitlines() if line.startswith("IMPORTED=")]
    assert marker, proc.stderr
    return proc, [m for m in marker[-1][len("IMPORTED=") :].split(",") if m]


def test_run_json_imports_nothing_heavy_and_matches_the_typer_path(tmp_path):
    fast_dir, slow_dir = tmp_path / "fast", tmp_path / "slow"
    # A set revision stands for an installed mobipath, which never runs git.
    proc, heavy = _fast_run(
        ["run", str(EXAMPLE), "--seed", "4", "--out", str(fast_dir), "--json", "-q"],
        tmp_path,
        HEAVY + SLOW_STDLIB,
        {"MOBIPATH_GIT_REVISION": "test"},
    )
    assert proc.returncode == 0, proc.stderr
    assert heavy == [], f"`mobipath run --json` imported {heavy}"
    prov = json.loads((fast_dir / "provenance.json").read_text())
    import hashlib
    import platform

    assert prov["scenario_sha256"] == hashlib.sha256(Path(EXAMPLE).read_bytes()).hexdigest()
    assert prov["python"]["version"] == platform.python_version()
    assert prov["python"]["implementation"] == platform.python_implementation()
    slow = CliRunner().invoke(app, ["run", str(EXAMPLE), "--seed", "4", "--out", str(slow_dir), "--json", "-q"])
    assert slow.exit_code == 0, slow.output
    assert json.loads(proc.stdout) == json.loads(slow.stdout)
    assert (fast_dir / "summary.json").read_bytes() == (slow_dir / "summary.json").read_bytes()
    fast_ts = pl.read_parquet(fast_dir / "timeseries.parquet")
    assert fast_ts.height > 0
    assert fast_ts.equals(pl.read_parquet(slow_dir / "timeseries.parquet"))
    # ... and equal to the API's DataFrame, column types included.
    assert fast_ts.equals(mobipath.run(EXAMPLE, seed=4).timeseries)
    assert fast_ts.schema == {
        "time_s": pl.Float64,
        "kind": pl.String,
        "name": pl.String,
        "metric": pl.String,
        "value": pl.Float64,
    }


def test_run_into_a_pipe_prints_the_tables_without_rich(tmp_path):
    # The default output, redirected as sweeps and shell loops redirect it: the summary tables
    # as plain text, and none of the heavy modules (rich.console alone costs ~33 ms).
    # COLUMNS as a terminal would set it: wide enough for a row per flow
    proc, heavy = _fast_run(
        ["run", str(EXAMPLE), "--out", str(tmp_path / "r")],
        tmp_path,
        HEAVY + SLOW_STDLIB,
        {"MOBIPATH_GIT_REVISION": "test", "COLUMNS": "1000"},
    )
    assert proc.returncode == 0, proc.stderr
    assert heavy == [], f"`mobipath run > file` imported {heavy}"
    summary = json.loads((tmp_path / "r" / "summary.json").read_text())
    lines = proc.stdout.splitlines()
    assert lines[0].startswith(f"{EXAMPLE}  seed {summary['seed']}  ·  {summary['events']} events in ")
    flows = lines.index("Flows")
    assert lines[flows + 1].split()[:2] == ["flow", "goodput_mbps"]
    for name, flow in summary["flows"].items():
        row = next(line.split() for line in lines[flows + 2 :] if line.split()[:1] == [name])
        assert row[1] == fmt_value(flow["goodput_mbps"])


def test_fast_path_errors_match_the_typer_path(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("seed = 1\nduration_s = -3\n")
    proc, _ = _fast_run(["run", str(bad), "--out", str(tmp_path / "o"), "-q"], tmp_path)
    slow = CliRunner().invoke(app, ["run", str(bad), "--out", str(tmp_path / "o2"), "-q"])
    assert proc.returncode == slow.exit_code == 1
    fast_lines = [line for line in proc.stderr.splitlines() if line and not line.startswith("IMPORTED=")]
    assert fast_lines and fast_lines == [line for line in slow.stderr.splitlines() if line]
    missing = tmp_path / "missing.toml"
    proc, _ = _fast_run(["run", str(missing), "-q"], tmp_path)
    assert proc.returncode == 1 and f"error: {missing}" in proc.stderr


def test_usage_errors_still_come_from_typer(tmp_path):
    proc = run_cli(["run", str(EXAMPLE), "--seed", "minus-one"], cwd=tmp_path)
    assert proc.returncode == 2
    assert "--seed" in proc.stderr


def test_result_written_before_reading_uses_the_core_writer(tmp_path):
    r = mobipath.run(EXAMPLE, seed=2)
    r.write(tmp_path / "a")  # the core writes the Parquet file: the frame is not built yet
    frame = r.timeseries
    frame.write_parquet(tmp_path / "b.parquet")
    assert pl.read_parquet(tmp_path / "a" / "timeseries.parquet").equals(pl.read_parquet(tmp_path / "b.parquet"))


def test_bench_measures_the_simulator_not_the_interpreter(tmp_path):
    """The heap column follows the scenario: a full 100 Mbit/s run holds a 1-BDP queue and
    window in flight, its 10 ms prefix only the initial window."""
    short = tmp_path / "short.toml"
    short.write_text(short_example())
    proc = run_cli(["bench", "--json", str(EXAMPLE), str(short)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    full, tiny = json.loads(proc.stdout)["results"]
    for m in (full, tiny):
        assert m["packets"] > 0 and m["ns_per_packet"] > 0
        assert m["sim_peak_heap_mib"] > 0
    assert full["packets"] > 100 * tiny["packets"]
    assert full["sim_peak_heap_mib"] > 2 * tiny["sim_peak_heap_mib"]
    # Each row says which build measured it; an editable install is not profile-guided
    # (build-backend/: only wheels are, unless MOBIPATH_PGO=on).
    from mobipath import _core

    assert full["build_pgo"] == (_core.BUILD_PGO or None)
    assert "core: " in proc.stderr and ("profile-guided release build" in proc.stderr) == bool(_core.BUILD_PGO)


def test_bench_long_adds_the_long_runs_only_when_asked():
    from mobipath import bench

    default = bench.find_scenarios()
    long = bench.find_scenarios(long=True)
    assert default and not any("long" in p.parts for p in default)
    extra = [p for p in long if p not in default]
    assert {p.name for p in extra} == {"hst-1h-two-operators.toml", "lte-100ue-60s.toml"}
    assert bench.find_scenarios([EXAMPLE]) == [EXAMPLE]
    assert bench.find_scenarios([EXAMPLE], long=True) == [EXAMPLE] + extra


def test_bench_process_times_the_whole_command(tmp_path):
    """`bench --process` runs `mobipath run` as users do and reads each run's own peak RSS: a
    run holding a full window must show more than the 10 ms start-up run, which ru_maxrss (the
    parent's RSS leaks into it) could not show."""
    proc = run_cli(["bench", "--process", "--repeat", "2", "--json", str(EXAMPLE)], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    startup, full = json.loads(proc.stdout)["results"]
    assert Path(startup["scenario"]).name == "startup-10ms.toml" and startup["runs"] == 2
    assert 0 < startup["wall_min_s"] <= startup["wall_median_s"]
    assert full["wall_median_s"] > startup["wall_median_s"]
    assert 0 < startup["peak_rss_mib"] < 200 and full["peak_rss_mib"] > 0


def test_the_command_script_ends_without_teardown_but_runs_atexit_handlers(tmp_path):
    """The installed command ends a run with os._exit (the interpreter's teardown was ~3.5 ms of
    every run): atexit handlers still run and the output is flushed; a failing handler is reported,
    not turned into a failure."""
    (tmp_path / "s.toml").write_text(short_example())
    code = (
        "import atexit, sys\n"
        "atexit.register(lambda: sys.stderr.write('HANDLER RAN\\n'))\n"
        "atexit.register(lambda: 1 / 0)\n"
        "from mobipath.runcmd import entry\n"
        f"entry({['run', str(tmp_path / 's.toml'), '--out', str(tmp_path / 'r')]!r}, fast_exit=True)\n"
    )
    proc = subprocess.run(
        [sys.executable, "-c", code],
        cwd=tmp_path,
        env=cli_env({"MOBIPATH_GIT_REVISION": "test"}),
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert proc.returncode == 0, proc.stderr
    assert "HANDLER RAN" in proc.stderr and "ZeroDivisionError" in proc.stderr
    assert "Flows" in proc.stdout and (tmp_path / "r" / "summary.json").exists()
