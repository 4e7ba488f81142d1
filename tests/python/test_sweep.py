"""`mobipath sweep`: a declared grid into one Parquet dataset (readable without mobipath), cached
and resumable (also after SIGKILL), identical whatever the parallelism, broken combinations named
before anything runs, and `sweep report`."""

import contextlib
import json
import os
import signal
import statistics
import subprocess
import time
from pathlib import Path

import polars as pl
import pytest
from conftest import cli_env, mobipath_command, run_cli

BASE = """seed = 1
duration_s = {duration}
[[links]]
name = "l"
rate_mbps = 10
delay_ms = 20
queue_packets = 50
loss = {{ model = "bernoulli", p = 0.01 }}
[[paths]]
name = "p"
links = ["l"]
[[flows]]
name = "f"
path = "p"
cc = "cubic"
traffic = {{ kind = "bulk" }}
"""


def _sweep(tmp_path: Path, axes: str, seeds: int = 3, duration: float = 2.0, extra: str = "") -> Path:
    (tmp_path / "base.toml").write_text(BASE.format(duration=duration))
    f = tmp_path / "grid.toml"
    f.write_text(f'base = "base.toml"\nseeds = {seeds}\n{extra}\n[axes]\n{axes}\n')
    return f


AXES = '"flows.f.cc" = ["cubic", "bbr", "reno"]\n"links.l.rate_mbps" = [5, 10]\n'
EXCLUDE = '[[exclude]]\n"flows.f.cc" = "reno"\n"links.l.rate_mbps" = 5\n'


def _rows(out: Path) -> pl.DataFrame:
    # Plain polars, Hive partitions: no mobipath needed to read the dataset.
    return pl.read_parquet(out / "runs", hive_partitioning=True).sort(["flows.f.cc", "links.l.rate_mbps", "seed"])


def _results(out: Path) -> dict:
    """Each run's summary and time series as canonical JSON text, by the run's description."""
    found = {}
    for f in (out / "cache").glob("*.json"):
        d = json.loads(f.read_text())
        found[d["description"]] = json.dumps({k: v for k, v in d["result"].items() if k != "wall_s"}, sort_keys=True)
    return found


def test_dataset_cache_and_parallelism(tmp_path):
    f = _sweep(tmp_path, AXES + EXCLUDE)
    a, b = tmp_path / "a", tmp_path / "b"
    r = run_cli(["sweep", f, "--out", a, "-j", "2"], timeout=300)
    assert r.returncode == 0, r.stderr
    assert "15 runs (0 reused, 0 failed) of 5 combinations" in r.stdout
    df = _rows(a)
    assert df.height == 15 and df.select(["flows.f.cc", "links.l.rate_mbps", "seed"]).is_unique().all()
    assert ("reno", 5) not in set(zip(df["flows.f.cc"], df["links.l.rate_mbps"]))  # excluded
    assert df["flows.f.goodput_mbps"].min() > 0 and df["error"].null_count() == 15
    assert sorted(p.name for p in (a / "runs").iterdir()) == ["flows.f.cc=bbr", "flows.f.cc=cubic", "flows.f.cc=reno"]
    ts = pl.read_parquet(a / "timeseries", hive_partitioning=True)
    assert {"time_s", "metric", "value", "seed", "run_id"} <= set(ts.columns) and ts["run_id"].n_unique() == 15
    # Serially: the same per-run results, byte for byte (wall time aside).
    r = run_cli(["sweep", f, "--out", b, "-j", "1"], timeout=300)
    assert r.returncode == 0, r.stderr
    drop = ["wall_s"]
    assert _rows(a).drop(drop).equals(_rows(b).drop(drop))
    assert _results(a) == _results(b)  # the per-run summaries and series as JSON text, byte for byte
    # A finished sweep run again does nothing new.
    r = run_cli(["sweep", f, "--out", a], timeout=300)
    assert "15 runs (15 reused, 0 failed)" in r.stdout, r.stdout
    assert json.loads((a / "sweep.json").read_text())["reused_runs"] == 15
    # The report: mean over seeds of the dataset's values, and a plot.
    r = run_cli(["sweep", "report", a, "--metric", "flows.f.goodput_mbps", "--plot", tmp_path / "g.png"], timeout=120)
    assert r.returncode == 0, r.stderr
    vals = (
        _rows(a)
        .filter((pl.col("flows.f.cc") == "bbr") & (pl.col("links.l.rate_mbps") == 10))["flows.f.goodput_mbps"]
        .to_list()
    )
    line = next(ln for ln in r.stdout.splitlines() if "bbr" in ln and "│ 10 " in ln)
    assert f"{statistics.mean(vals):.4g}" in line, (line, vals)
    assert (tmp_path / "g.png").stat().st_size > 0


def _children(pid: int) -> set:
    found = set()
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if int(fields[1]) == pid:
            found.add(int(stat.parent.name))
    return found


def _gone(pids: set, timeout: float) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        alive = [
            p for p in pids if Path(f"/proc/{p}").exists() and " Z " not in Path(f"/proc/{p}/stat").read_text()[:80]
        ]
        if not alive:
            return True
        time.sleep(0.05)
    return False


@pytest.mark.parametrize(
    "sig, jobs", [(signal.SIGKILL, "1"), (signal.SIGKILL, "2"), (signal.SIGINT, "2"), (signal.SIGINT, "1")]
)
def test_a_killed_sweep_resumes_with_only_the_missing_runs(tmp_path, sig, jobs):
    # 240 runs: the sweep must outlast the moment it takes this process to see three cached runs
    # and signal. Each run takes milliseconds, and on a 2-core machine whose cores the workers
    # keep busy that moment can stretch: with 24 runs a faster simulator finished them all first
    # (session 12).
    n = 240
    f = _sweep(tmp_path, '"links.l.rate_mbps" = [5, 10, 20, 40]\n', seeds=n // 4, duration=20.0)
    out = tmp_path / "o"
    proc = subprocess.Popen(
        [*mobipath_command(), "sweep", str(f), "--out", str(out), "-j", jobs],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(None),
    )
    try:
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and len(list((out / "cache").glob("*.json"))) < 3:
            time.sleep(0.05)
        workers = _children(proc.pid)
        assert len(workers) == int(jobs) - (jobs == "1"), workers  # -j 1 runs in the main process
        proc.send_signal(sig)  # the main process only, as `kill`; Ctrl-C would reach the workers too (they ignore it)
        _, err = proc.communicate(timeout=30)
    finally:
        proc.kill()
    # The workers (which write their runs' cache entries) die with the main process, even by
    # SIGKILL: nothing is written after it is gone.
    assert _gone(workers, 10), workers
    kept = len(list((out / "cache").glob("*.json")))
    assert 3 <= kept < n, kept
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err
        assert f"interrupted; {kept} finished runs are kept" in err and "Traceback" not in err, err
    else:
        assert proc.returncode == -signal.SIGKILL
    assert not (out / "runs").exists()  # stopped before writing the dataset
    r = run_cli(["sweep", f, "--out", out, "-j", "2"], timeout=600)
    assert r.returncode == 0, r.stderr
    assert f"{n} runs ({kept} reused, 0 failed)" in r.stdout, (kept, r.stdout)  # only the n - kept missing ones ran
    df = pl.read_parquet(out / "runs", hive_partitioning=True)
    assert df.height == n and df.select(["links.l.rate_mbps", "seed"]).is_unique().all()
    assert df["error"].null_count() == n and len(list((out / "cache").glob("*.json"))) == n
    ts = pl.read_parquet(out / "timeseries", hive_partitioning=True)
    assert ts["run_id"].n_unique() == n and set(ts["run_id"]) == set(df["run_id"])
    assert ts.select(["run_id", "time_s", "kind", "name", "metric"]).is_unique().all()  # no run's series twice


def test_a_broken_combination_is_named_before_anything_runs(tmp_path):
    f = _sweep(tmp_path, '"links.l.rate_mbps" = [10, 0]\n"flows.f.cc" = ["cubic", "bbr"]\n')
    r = run_cli(["sweep", f, "--out", tmp_path / "o"], timeout=120)
    assert r.returncode == 1, r.stderr
    bad = [ln for ln in r.stderr.splitlines() if "links.l.rate_mbps = 0" in ln]
    assert len(bad) == 2 and all("rate_mbps" in ln for ln in bad), r.stderr  # both cc values with rate 0
    assert "links.l.rate_mbps = 10" not in r.stderr
    assert not (tmp_path / "o" / "cache").exists()


@pytest.mark.parametrize(
    "text, needle",
    [
        ('base = "base.toml"\n[axes]\n"flows.f.cc" = ["cubic"]\nseedz = 3\n', "seedz"),
        ('base = "base.toml"\ncombine = "zip"\n[axes]\na = [1, 2]\nb = [1]\n', "equal length"),
        ('base = "base.toml"\n[axes]\n"flows.f.cc" = []\n', "non-empty list"),
        ('base = "nothere.toml"\n[axes]\n"flows.f.cc" = ["bbr"]\n', "no such file"),
        ('base = "base.toml"\n[axes]\n"flows.f.cc" = ["bbr"]\n[[exclude]]\nrate = 5\n', "not an axis"),
        ('base = "base.toml"\nseeds = 0\n[axes]\n"flows.f.cc" = ["bbr"]\n', "seeds"),
        ('base = "base.toml"\n[axes]\n"flows.nobody.cc" = ["bbr"]\n', "no entry named 'nobody'"),
        # [[exclude]] leaving nothing to run: an error, not a crash writing an empty dataset.
        (
            'base = "base.toml"\n[axes]\n"flows.f.cc" = ["bbr", "cubic"]\n'
            '[[exclude]]\n"flows.f.cc" = "bbr"\n[[exclude]]\n"flows.f.cc" = "cubic"\n',
            "exclude = 2 rule(s): removes every one of the 2 combinations: nothing would run",
        ),
        # The seed is not a scenario field an axis can set (each run's seed replaces it).
        (
            'base = "base.toml"\n[axes]\n"seed" = [5, 6]\n"flows.f.cc" = ["bbr"]\n',
            "axes.seed = [5, 6]: the seed is not an axis: each run's seed comes from `seeds` (write seeds = [5, 6])",
        ),
    ],
)
def test_bad_sweep_files_are_refused_precisely(tmp_path, text, needle):
    (tmp_path / "base.toml").write_text(BASE.format(duration=1))
    f = tmp_path / "s.toml"
    f.write_text(text)
    r = run_cli(["sweep", f, "--out", tmp_path / "o"], timeout=60)
    assert r.returncode != 0 and needle in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_a_failing_run_is_recorded_and_does_not_stop_the_sweep(tmp_path, monkeypatch):
    """In-process (CliRunner, -j 1) so the simulator can be made to fail one run: the others
    finish, the dataset holds the failure, the exit status counts it, and the next invocation
    runs only that one again."""
    import mobipath._core as core
    from mobipath.cli import app
    from typer.testing import CliRunner

    f = _sweep(tmp_path, '"flows.f.cc" = ["cubic", "bbr"]\n', seeds=3, duration=1.0)
    real = core.run

    class PanicException(BaseException):  # what pyo3 raises for a Rust panic: not an Exception
        pass

    def flaky(text, file, base_dir, seed, *rest):
        if 'cc = "bbr"' in text and seed == 2:
            raise RuntimeError("the machine ran out of something")
        if 'cc = "cubic"' in text and seed == 3:
            raise PanicException("index out of bounds")
        return real(text, file, base_dir, seed, *rest)

    monkeypatch.setattr(core, "run", flaky)
    out = tmp_path / "o"
    r = CliRunner().invoke(app, ["sweep", str(f), "--out", str(out), "-j", "1"])
    assert r.exit_code == 2, r.output
    assert "6 runs (0 reused, 2 failed)" in r.output
    assert 'failed: [flows.f.cc = "bbr"] seed 2: RuntimeError: the machine ran out of something' in r.output
    assert 'failed: [flows.f.cc = "cubic"] seed 3: PanicException: index out of bounds' in r.output
    df = pl.read_parquet(out / "runs", hive_partitioning=True)
    bad = df.filter(pl.col("error").is_not_null()).sort("flows.f.cc")
    assert bad.select("flows.f.cc", "seed").rows() == [("bbr", 2), ("cubic", 3)]
    assert bad["error"][0].startswith("RuntimeError") and bad["flows.f.goodput_mbps"].null_count() == 2
    assert df.filter(pl.col("error").is_null())["flows.f.goodput_mbps"].min() > 0
    info = json.loads((out / "sweep.json").read_text())
    assert info["failed"] == [
        {"combination": 'flows.f.cc = "cubic"', "seed": 3, "error": "PanicException: index out of bounds"},
        {"combination": 'flows.f.cc = "bbr"', "seed": 2, "error": "RuntimeError: the machine ran out of something"},
    ]
    monkeypatch.setattr(core, "run", real)
    r = CliRunner().invoke(app, ["sweep", str(f), "--out", str(out), "-j", "1"])
    assert r.exit_code == 0 and "6 runs (4 reused, 0 failed)" in r.output, r.output


TRACE_BASE = """seed = 1
duration_s = 3
[[links]]
name = "l"
delay_ms = 20
queue_packets = 50
trace = {{ format = "mbps-per-second", file = "{trace}" }}
[[paths]]
name = "p"
links = ["l"]
[[flows]]
name = "f"
path = "p"
cc = "cubic"
traffic = {{ kind = "bulk" }}
"""


def _trace_sweep(tmp_path: Path) -> Path:
    """A sweep whose base scenario reads a capacity trace from another folder."""
    (tmp_path / "traces").mkdir()
    (tmp_path / "traces" / "cap.txt").write_text("1 4\n2 12\n3 6\n")
    (tmp_path / "s").mkdir()
    (tmp_path / "s" / "base.toml").write_text(TRACE_BASE.format(trace="../traces/cap.txt"))
    f = tmp_path / "s" / "grid.toml"
    f.write_text('base = "base.toml"\nseeds = 2\n[axes]\n"flows.f.cc" = ["cubic", "bbr"]\n')
    return f


def test_tasks_carry_their_scenario_and_files(tmp_path):
    """What a Ray task gets: the scenario text with its files as bytes, nothing on this file
    system. Run from a fresh folder after the originals are gone, a run's summary is the same."""
    import shutil

    from mobipath import executor, sweep
    from mobipath.sweep import load_sweep, resolve, run_one

    r = resolve(load_sweep(_trace_sweep(tmp_path)))[0]
    here = run_one(r.text, r.file, r.base_dir, 2)
    assert "error" not in here, here
    shipped = executor.ship_args((r.text, r.file, r.base_dir, 2))
    assert isinstance(shipped[2], executor.ShippedDir) and list(shipped[2].files.values()) == [b"1 4\n2 12\n3 6\n"]
    assert "../traces" not in shipped[0]
    # A scenario file given by path travels the same way.
    by_path = executor.ship_args((str(tmp_path / "s" / "base.toml"),))[0]
    assert isinstance(by_path, executor.ShippedScenario) and list(by_path.files.values()) == [b"1 4\n2 12\n3 6\n"]
    shutil.rmtree(tmp_path / "traces")
    shutil.rmtree(tmp_path / "s")
    there = run_one(*executor.materialize(shipped, tmp_path / "task"))
    assert json.dumps(there["summary"], sort_keys=True) == json.dumps(here["summary"], sort_keys=True)
    assert there["timeseries"] == here["timeseries"]
    import mobipath

    path = executor.materialize((by_path,), tmp_path / "task2")[0]
    assert mobipath.run(path, seed=2).summary["flows"]["f"]["goodput_mbps"] == here["summary"]["flows.f.goodput_mbps"]
    # Nothing to ship: arguments travel unchanged.
    plain = ("seed = 1\nduration_s = 1\n", "x.toml", str(tmp_path), 1)
    assert executor.ship_args(plain) == plain
    assert callable(sweep)


def test_every_file_a_shipped_scenario_references_travels_with_it(tmp_path):
    """referenced_files must know every scenario field naming a file: each shipped scenario that
    validates where it lies also validates from a task-local copy made of what ship_args packs."""
    from conftest import ROOT
    from mobipath import _core, executor

    checked = 0
    for path in sorted((ROOT / "scenarios").rglob("*.toml")):
        if "sweeps" in path.parts:
            continue
        text = path.read_text()
        if _core.validate(text, str(path), str(path.parent)):
            continue  # an invalid example (e.g. a test input): nothing to compare
        shipped = executor.ship_args((str(path),))[0]
        local = executor.materialize((shipped,), tmp_path / path.stem)[0]
        errors = _core.validate(Path(local).read_text(), local, str(Path(local).parent))
        assert not errors, (path, errors)
        checked += bool(shipped.files)
    assert checked >= 3  # the HSR trace examples and the P0 train scenarios with a handover table


def test_a_trace_edit_invalidates_the_cached_runs(tmp_path):
    f = _trace_sweep(tmp_path)
    out = tmp_path / "o"
    assert "4 runs (0 reused" in run_cli(["sweep", f, "--out", out, "-j", "1"], timeout=120).stdout
    assert "4 runs (4 reused" in run_cli(["sweep", f, "--out", out, "-j", "1"], timeout=120).stdout
    (tmp_path / "traces" / "cap.txt").write_text("1 4\n2 2\n3 6\n")
    r = run_cli(["sweep", f, "--out", out, "-j", "1"], timeout=120)
    assert "4 runs (0 reused" in r.stdout, r.stdout


def test_backend_flags_are_checked(tmp_path):
    f = _sweep(tmp_path, '"flows.f.cc" = ["cubic"]\n', seeds=1, duration=1.0)
    r = run_cli(["sweep", f, "--out", tmp_path / "o", "--backend", "spark"], timeout=60)
    assert r.returncode == 2 and "--backend must be one of local, ray (got 'spark')" in r.stderr, r.stderr
    r = run_cli(["sweep", f, "--out", tmp_path / "o", "--ray-address", "auto"], timeout=60)
    assert r.returncode == 2 and "--ray-address needs --backend ray" in r.stderr, r.stderr
    r = run_cli(["reproduce", "p2", "--quick", "--out", tmp_path / "p", "--backend", "spark"], timeout=60)
    assert r.returncode == 2 and "--backend must be one of local, ray" in r.stderr, r.stderr


def test_without_ray_the_ray_backend_says_how_to_get_it(tmp_path):
    # A `ray` that cannot be imported, first on the path: as on a machine without the extra.
    fake = tmp_path / "noray" / "ray"
    fake.mkdir(parents=True)
    (fake / "__init__.py").write_text("raise ImportError(\"No module named 'ray'\")\n")
    f = _sweep(tmp_path, '"flows.f.cc" = ["cubic"]\n', seeds=1, duration=1.0)
    env = {
        "PYTHONPATH": os.pathsep.join(
            [str(tmp_path / "noray")] + [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
        )
    }
    for args in (["sweep", f, "--out", tmp_path / "o"], ["reproduce", "p2", "--quick", "--out", tmp_path / "p"]):
        r = run_cli([*args, "--backend", "ray"], timeout=60, env=env)
        assert r.returncode == 1, r.stderr
        assert "--backend ray needs Ray, an optional dependency: pip install 'mobipath[ray]'" in r.stderr
        assert "Traceback" not in r.stderr
    # A finished sweep needs no backend: run locally, then again "on Ray" without Ray.
    assert run_cli(["sweep", f, "--out", tmp_path / "o", "-j", "1"], timeout=60).returncode == 0
    r = run_cli(["sweep", f, "--out", tmp_path / "o", "--backend", "ray"], timeout=60, env=env)
    assert r.returncode == 0 and "1 runs (1 reused, 0 failed)" in r.stdout, r.stderr


# --- the Ray backend ----------------------------------------------------------------------------


def test_reproduce_on_ray_matches_the_golden_quick_results(tmp_path):
    """`mobipath reproduce p0 --quick --backend ray` (its own local Ray; the handover table travels
    with each task, as ../table.csv): results.csv and the aggregates are the golden ones, so the
    reproduce commands' grids run through the same engine on either backend. (Before the tests
    sharing one Ray instance below, so that two instances never run at once.)"""
    pytest.importorskip("ray", reason="Ray is not installed (pip install '.[ray]'); the Ray backend is untested here")
    from conftest import ROOT

    out = tmp_path / "p0"
    r = run_cli(["reproduce", "p0", "--quick", "--jobs", "2", "--backend", "ray", "--out", out], timeout=300)
    assert r.returncode == 0, r.stderr
    gold = ROOT / "tests" / "golden" / "reproduce" / "p0-quick"
    assert (out / "results.csv").read_text() == (gold / "results.csv").read_text()
    got = json.loads((out / "summary.json").read_text())
    assert json.dumps(got["aggregates"], indent=1, sort_keys=True) + "\n" == (gold / "aggregates.json").read_text()
    assert got["provenance"]["jobs"] == 2


# A local Ray instance of 2 CPUs, shared by the tests below.


@pytest.fixture(scope="module")
def local_ray():
    ray = pytest.importorskip(
        "ray", reason="Ray is not installed (pip install '.[ray]'); the Ray backend is untested here"
    )
    if not ray.is_initialized():
        # The workers import tests/python/sweep_hooks.py: a marked run kills its worker (the tests of a worker's death).
        ray.init(
            address="local",
            num_cpus=2,
            include_dashboard=False,
            log_to_driver=False,
            logging_level="ERROR",
            runtime_env={
                "env_vars": {"PYTHONPATH": str(Path(__file__).resolve().parent)},
                "worker_process_setup_hook": "sweep_hooks.doom_marked_runs",
            },
        )
    yield ray
    ray.shutdown()


def test_ray_backend_gives_the_serial_results_byte_for_byte(tmp_path, local_ray):
    """The same sweep serially (CLI, -j 1) and on Ray (tasks carry the scenario and its trace,
    the driver writes cache and dataset): the same summaries and series, byte for byte."""
    import mobipath

    f = _trace_sweep(tmp_path)
    r = run_cli(["sweep", f, "--out", tmp_path / "serial", "-j", "1"], timeout=120)
    assert r.returncode == 0, r.stderr
    info = mobipath.sweep(f, tmp_path / "ray", backend="ray")
    assert info["backend"] == "ray" and info["jobs"] == 2 and info["runs"] == 4 and not info["failed"]
    assert _results(tmp_path / "serial") == _results(tmp_path / "ray") and len(_results(tmp_path / "ray")) == 4
    a = pl.read_parquet(tmp_path / "serial" / "runs", hive_partitioning=True).sort("flows.f.cc", "seed").drop("wall_s")
    b = pl.read_parquet(tmp_path / "ray" / "runs", hive_partitioning=True).sort("flows.f.cc", "seed").drop("wall_s")
    assert a.equals(b)
    again = mobipath.sweep(f, tmp_path / "ray", backend="ray")
    assert again["reused_runs"] == 4


def test_referenced_files_covers_every_file_field():
    from mobipath import executor

    table = {
        "links": [
            {
                "name": "a",
                "trace": {"format": "mahimahi", "file": "up.trace"},
                "reverse": {"trace": {"format": "mahimahi", "file": "down.trace"}},
            },
            {"name": "b", "rate_mbps": 5},
        ],
        "cells": [{"ues": [{"name": "u", "cqi_trace": "cqi.csv"}, {"name": "v", "dl_cqi": 9}]}],
        "hst": {"links": ["a"], "table": "../table.csv", "gps_trace": {"file": "ride.nmea", "track": "track.csv"}},
    }
    refs = ["up.trace", "down.trace", "cqi.csv", "../table.csv", "ride.nmea", "track.csv"]
    assert executor.referenced_files(table) == refs
    executor._rewrite(table, {r: f"local-{i}" for i, r in enumerate(refs)})
    assert executor.referenced_files(table) == [f"local-{i}" for i in range(6)]


def test_the_sweep_benchmark_runs_and_reports_its_steps():
    """`mobipath bench --sweep` (a measurement, not a test of its numbers): every step timed over
    the same grid, the derived overheads computed from them."""
    from mobipath import sweepbench

    r = sweepbench.run(40, 2, ray=False, repeat=2)
    assert r["runs"] == 40 and set(r["steps"]) == {
        "simulation",
        "simulation x2",
        "local -j 1",
        "local -j 1, cached",
        "local -j 2",
    }
    assert r["speedup_ceiling"] == pytest.approx(
        r["steps"]["simulation x2"]["runs_per_s"] / r["steps"]["simulation"]["runs_per_s"], abs=0.02
    )
    s = r["steps"]
    for name in ("local -j 1", "local -j 2"):  # the fastest of the two repeats is reported
        assert len(s[name]["repeats"]) == 2 and s[name]["wall_s"] == min(x["wall_s"] for x in s[name]["repeats"])
        assert s[name]["driver_cpu_ms_per_run"] > 0
    assert (
        s["local -j 2"]["worker_cpu_ms_per_run"] > 0
        and s["local -j 1"]["worker_cpu_ms_per_run"] < 0.5 * s["local -j 1"]["driver_cpu_ms_per_run"]
    )
    expected = 1000 * (s["local -j 1"]["wall_s"] - s["simulation"]["wall_s"]) / 40
    assert s["local -j 1"]["overhead_ms_per_run"] == pytest.approx(expected, abs=0.05)
    assert s["local -j 1"]["cpu_ms_per_run"] > 0 and "cpu_overhead_ms_per_run" in s["local -j 2"]
    assert r["speedup_local"] == pytest.approx(s["local -j 2"]["runs_per_s"] / s["local -j 1"]["runs_per_s"], abs=0.02)
    assert sweepbench.rows(r)[0][0] == "simulation"


def _readme_sweeps_section() -> str:
    """The documentation's page on sweeps (docs/sweeps.md)."""
    from conftest import ROOT

    return (ROOT / "docs" / "sweeps.md").read_text()


def test_the_readme_shows_the_shipped_sweep_file_and_its_queries_run(tmp_path):
    """The sweeps page's sweep file is scenarios/sweeps/cc-by-loss.toml as shipped, and its DuckDB query
    runs on a dataset of that sweep's shape (the same axes, 2 s runs, 2 seeds) from the sweep's
    directory. (test_readme.py runs its Python block, polars, against the full sweep.)"""
    import re

    from conftest import ROOT

    section = _readme_sweeps_section()
    blocks = dict((lang, body) for lang, body in re.findall(r"```(\w+)\n(.*?)```", section, flags=re.S))
    shipped = ROOT / "scenarios" / "sweeps" / "cc-by-loss.toml"
    assert blocks["toml"] == shipped.read_text()
    base = (
        (ROOT / "scenarios" / "examples" / "lossy-newreno.toml")
        .read_text()
        .replace("duration_s = 60", "duration_s = 2")
    )
    (tmp_path / "base.toml").write_text(base)
    grid = tmp_path / "grid.toml"
    grid.write_text(
        shipped.read_text().replace('"../examples/lossy-newreno.toml"', '"base.toml"').replace("seeds = 5", "seeds = 2")
    )
    r = run_cli(["sweep", grid, "--out", tmp_path / "sweeps" / "cc-by-loss"], timeout=300)
    assert r.returncode == 0, r.stderr
    duckdb = pytest.importorskip("duckdb", reason="duckdb is not installed (pip install '.[test]')")
    cwd = os.getcwd()
    os.chdir(tmp_path)
    try:
        rows = duckdb.sql(blocks["sql"].strip().rstrip(";")).fetchall()
    finally:
        os.chdir(cwd)
    runs = _rows_of(tmp_path / "sweeps" / "cc-by-loss")
    assert len(rows) == 12 and all(n == 2 for *_, n in rows)
    for cc, loss, goodput, _ in rows:
        sel = runs.filter((pl.col("flows.newreno.cc") == cc) & (pl.col("links.wan.loss.p") == float(loss)))
        assert goodput == pytest.approx(sel["flows.newreno.goodput_mbps"].mean(), rel=1e-12)


def _rows_of(out: Path) -> pl.DataFrame:
    return pl.read_parquet(out / "runs", hive_partitioning=True)


# --- a worker killed by the system (the OOM killer, a signal) -------------------------------------


def _deaths(tmp_path, deaths_by_key):
    """Keys and the shell command each runs through os.system (see sweep_hooks.attempt)."""
    from sweep_hooks import attempt

    return {k: attempt(str(tmp_path / f"attempts-{k}"), d) for k, d in deaths_by_key.items()}


def _attempts(tmp_path, k):
    f = tmp_path / f"attempts-{k}"
    return len(f.read_text().splitlines()) if f.exists() else 0


def _execute_with_deaths(tmp_path, backend, on_death):
    """Eight runs of os.system (importable in any worker): run 3 kills its worker on every
    attempt, run 5 on its first attempt only, the others never."""
    from mobipath.executor import execute

    cmds = _deaths(tmp_path, {k: {3: 99, 5: 1}.get(k, 0) for k in range(8)})
    got = {}
    n = execute(
        list(range(8)),
        os.system,
        lambda k: (cmds[k],),
        lambda k, r: got.__setitem__(k, r),
        jobs=2,
        backend=backend,
        on_death=on_death,
    )
    return got, n


def test_a_killed_local_worker_costs_only_its_run():
    """The local pool knows which run each worker holds: a run whose worker dies is run again
    (twice), then recorded through on_death; a run whose worker died once finishes on its retry;
    the others are not disturbed. Without on_death the executor names the run and stops."""
    import tempfile

    from mobipath.executor import WorkerDied, execute

    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        t0 = time.monotonic()
        got, n = _execute_with_deaths(tmp, None, lambda k, why: f"died: {why}")
        assert time.monotonic() - t0 < 30 and n == 2
        assert (
            got[3]
            == "died: the worker process running this run died on each of its 3 attempts (killed by SIGKILL; e.g. the "
            "out-of-memory killer)"
        )
        assert _attempts(tmp, 3) == 3 and _attempts(tmp, 5) == 2 and _attempts(tmp, 0) == 1
        assert {k: v for k, v in got.items() if k != 3} == {k: 0 for k in range(8) if k != 3}  # os.system's exit status
    with tempfile.TemporaryDirectory() as d:
        cmds = _deaths(Path(d), {k: 99 if k == 3 else 0 for k in range(8)})
        got = {}
        with pytest.raises(
            WorkerDied,
            match=r"^run 3: the worker process running this run died on each of its 3 attempts \(killed by SIGKILL",
        ):
            execute(list(range(8)), os.system, lambda k: (cmds[k],), lambda k, r: got.__setitem__(k, r), jobs=2)
        assert 3 not in got and all(v == 0 for v in got.values())


def test_a_killed_ray_worker_costs_only_its_run(tmp_path, local_ray):
    """The same on Ray: its own retries (max_retries), then the run is recorded, not the sweep stopped."""
    from mobipath.executor import Backend

    got, n = _execute_with_deaths(tmp_path, Backend("ray"), lambda k, why: f"died: {why}")
    assert got[3].startswith(
        "died: the Ray worker running this run died on each of its 3 attempts (WorkerCrashedError: "
    ), got[3]
    assert _attempts(tmp_path, 3) == 3 and _attempts(tmp_path, 5) == 2 and _attempts(tmp_path, 0) == 1
    assert {k: v for k, v in got.items() if k != 3} == {k: 0 for k in range(8) if k != 3}


class _Keeper:
    """A stand-in cache: counts where put() runs (the process id) and keeps nothing on disk."""

    def __init__(self):
        self.calls = []

    def put(self, description, result):
        self.calls.append(os.getpid())
        return json.dumps(result)


@pytest.mark.parametrize("backend", ["local", "ray"])
def test_local_workers_keep_their_results_and_ray_workers_do_not(backend, request):
    """Local worker processes call keep.put themselves and hand back a Kept result; Ray workers
    (no shared file system) never get the keeper: the driver receives the plain results."""
    from mobipath.executor import Backend, Kept, execute

    if backend == "ray":
        request.getfixturevalue("local_ray")
    keeper, got = _Keeper(), {}
    execute(
        list(range(6)),
        os.getpid,
        lambda k: (),
        lambda k, r: got.__setitem__(k, r),
        jobs=2,
        backend=Backend(backend),
        keep=keeper,
        describe=str,
    )
    assert sorted(got) == list(range(6)) and not keeper.calls  # never called in this process
    if backend == "local":
        assert all(isinstance(r, Kept) and r.text is not None for r in got.values())
        assert {int(r.text) for r in got.values()} - {os.getpid()} and os.getpid() not in {
            int(r.text) for r in got.values()
        }
    else:
        assert all(isinstance(r, int) and r != os.getpid() for r in got.values()), got


def _doomed_sweep(tmp_path):
    """Six runs; the one with cc = bbr and seed 2 kills the worker process running it (sweep_hooks)."""
    from sweep_hooks import MARK

    f = _sweep(tmp_path, '"flows.f.cc" = ["cubic", "bbr"]\n', seeds=3, duration=1.0)
    base = tmp_path / "base.toml"
    base.write_text(base.read_text().replace("queue_packets = 50", MARK))
    return f


def test_a_sweep_whose_worker_is_killed_records_that_run_and_goes_on(tmp_path, monkeypatch):
    """Local pool (-j 2): the run that kills its worker is tried three times, then recorded as
    failed (the dataset, sweep.json, the exit status), the other runs finish; the next invocation
    tries only that run again."""
    import mobipath._core as core
    from mobipath.cli import app
    from sweep_hooks import doom_marked_runs
    from typer.testing import CliRunner

    f = _doomed_sweep(tmp_path)
    monkeypatch.setattr(core, "run", core.run)  # restored after the test
    real = doom_marked_runs()  # the forked workers inherit it
    out = tmp_path / "o"
    r = CliRunner().invoke(app, ["sweep", str(f), "--out", str(out), "-j", "2"])
    assert r.exit_code == 1, r.output
    assert "6 runs (0 reused, 1 failed)" in r.output, r.output
    why = (
        "WorkerDied: the worker process running this run died on each of its 3 attempts "
        "(killed by SIGKILL; e.g. the out-of-memory killer)"
    )
    assert f'failed: [flows.f.cc = "bbr"] seed 2: {why}' in r.output, r.output
    df = pl.read_parquet(out / "runs", hive_partitioning=True)
    assert df.filter(pl.col("error").is_not_null()).select("flows.f.cc", "seed", "error").rows() == [("bbr", 2, why)]
    assert df.filter(pl.col("error").is_null())["flows.f.goodput_mbps"].min() > 0 and df.height == 6
    assert json.loads((out / "sweep.json").read_text())["failed"] == [
        {"combination": 'flows.f.cc = "bbr"', "seed": 2, "error": why}
    ]
    assert len(list((out / "cache").glob("*.json"))) == 5  # the failure is not kept
    monkeypatch.setattr(core, "run", real)
    r = CliRunner().invoke(app, ["sweep", str(f), "--out", str(out), "-j", "2"])
    assert r.exit_code == 0 and "6 runs (5 reused, 0 failed)" in r.output, r.output


def test_a_ray_sweep_whose_worker_is_killed_records_that_run_and_goes_on(tmp_path, local_ray):
    """The same on Ray (the instance's workers run sweep_hooks.doom_marked_runs at start): the
    run is recorded as failed after Ray's retries, the others finish and are kept by the driver."""
    import mobipath

    f = _doomed_sweep(tmp_path)
    info = mobipath.sweep(f, tmp_path / "o", backend="ray")
    assert info["runs"] == 6 and [(x["combination"], x["seed"]) for x in info["failed"]] == [('flows.f.cc = "bbr"', 2)]
    assert info["failed"][0]["error"].startswith(
        "WorkerDied: the Ray worker running this run died on each of its 3 attempts (WorkerCrashedError"
    ), info
    df = pl.read_parquet(tmp_path / "o" / "runs", hive_partitioning=True)
    assert df.height == 6 and df["error"].null_count() == 5
    assert len(list((tmp_path / "o" / "cache").glob("*.json"))) == 5
    again = mobipath.sweep(f, tmp_path / "o", backend="ray")  # only the failed run is tried again (and dies again)
    assert again["reused_runs"] == 5 and len(again["failed"]) == 1


# --- --ray-address: a cluster of two Ray nodes on this machine -------------------------------------


def _free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("", 0))
        return s.getsockname()[1]


def _ray_start(
    ray_cli: Path, args: list, cpus: int, env: dict, timeout: float, ready: str = r"Ray runtime started"
) -> tuple:
    """`ray start ARGS --block` in a session of its own (so that every process it starts can be
    found and killed), once it prints a line matching `ready`; every port chosen free.
    Returns the process and the match."""
    import queue
    import re
    import threading

    ports = [
        a
        for flag in (
            "--metrics-export-port",
            "--dashboard-agent-listen-port",
            "--dashboard-agent-grpc-port",
            "--runtime-env-agent-port",
            "--node-manager-port",
            "--object-manager-port",
        )
        for a in (flag, str(_free_port()))
    ]
    proc = subprocess.Popen(
        [str(ray_cli), "start", *args, *ports, "--num-cpus", str(cpus), "--block", "--disable-usage-stats"],
        start_new_session=True,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env=env,
    )
    lines: queue.Queue[str] = queue.Queue()
    threading.Thread(target=lambda: [lines.put(line) for line in proc.stdout], daemon=True).start()
    seen, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            seen.append(lines.get(timeout=0.5))
        except queue.Empty:
            continue
        found = re.search(ready, seen[-1])
        if found:
            return proc, found
    for pid in _session_members({proc.pid}):  # what it started so far
        os.kill(pid, signal.SIGKILL)
    proc.wait()
    raise AssertionError("ray start did not come up:\n" + "".join(seen[-30:]))


def test_a_sweep_on_a_two_node_ray_cluster_through_ray_address(tmp_path):
    """`mobipath sweep --backend ray --ray-address HEAD` from a driver process outside the
    cluster: a head node of one CPU and a second node (`ray start --address`) of two, on this
    machine, with their own token (Ray >= 2.59 authenticates its clusters). The runs, which
    read a trace file the tasks carry, give the serial local results byte for byte. The
    cluster's processes are all ended (the sessions of the two `ray start`) and its directory removed."""
    import secrets
    import shutil
    import sys
    import tempfile

    pytest.importorskip("ray", reason="Ray is not installed (pip install '.[ray]'); the Ray backend is untested here")
    ray_cli = Path(sys.executable).with_name("ray")
    if not ray_cli.exists():
        pytest.skip(f"no `ray` command next to {sys.executable}")
    f = _trace_sweep(tmp_path)
    r = run_cli(["sweep", f, "--out", tmp_path / "serial", "-j", "1"], timeout=120)
    assert r.returncode == 0, r.stderr
    env = cli_env({"RAY_AUTH_MODE": "token", "RAY_AUTH_TOKEN": secrets.token_hex(16)})
    ray_tmp = Path(tempfile.mkdtemp(prefix="mp-ray-", dir="/tmp"))  # short: Ray's socket paths must fit
    nodes = []
    try:
        head_port = _free_port()
        # Up once it says how other nodes join it: "ray start --address='IP:PORT'".
        head, found = _ray_start(
            ray_cli,
            ["--head", "--port", str(head_port), "--include-dashboard", "false", "--temp-dir", str(ray_tmp)],
            1,
            env,
            90,
            ready=r"--address='([^']+)'",
        )
        nodes.append(head)
        address = found.group(1)
        assert address.endswith(f":{head_port}"), address
        nodes.append(_ray_start(ray_cli, ["--address", address], 2, env, 90)[0])
        r = run_cli(
            ["sweep", f, "--out", tmp_path / "cluster", "--backend", "ray", "--ray-address", address],
            timeout=300,
            env=env,
        )
        assert r.returncode == 0, r.stderr
        assert "4 runs (0 reused, 0 failed)" in r.stdout, r.stdout
        info = json.loads((tmp_path / "cluster" / "sweep.json").read_text())
        assert info["backend"] == "ray" and info["jobs"] == 3  # the cluster's CPUs (a local Ray here would have 2)
    finally:
        # Every process of the cluster is in the session of the `ray start` that made its node
        # (Ray's workers have process groups of their own, not sessions): kill those sessions.
        sessions = {proc.pid for proc in nodes}
        deadline = time.monotonic() + 10
        while True:
            left = _session_members(sessions)
            for pid in left:
                with contextlib.suppress(OSError):
                    os.kill(pid, signal.SIGKILL)
            if not left or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        for proc in nodes:
            proc.wait()
        shutil.rmtree(ray_tmp, ignore_errors=True)
    assert not left, f"processes of the test's Ray cluster survived SIGKILL for 10 s: {left}"
    assert _results(tmp_path / "serial") == _results(tmp_path / "cluster") and len(_results(tmp_path / "cluster")) == 4
    a = pl.read_parquet(tmp_path / "serial" / "runs", hive_partitioning=True).sort("flows.f.cc", "seed").drop("wall_s")
    b = pl.read_parquet(tmp_path / "cluster" / "runs", hive_partitioning=True).sort("flows.f.cc", "seed").drop("wall_s")
    assert a.equals(b)


def _session_members(sessions: set) -> list:
    """Live (not zombie) processes whose session is one of `sessions`."""
    found = []
    for stat in Path("/proc").glob("[0-9]*/stat"):
        try:
            fields = stat.read_text().rsplit(")", 1)[1].split()
        except OSError:
            continue
        if fields[0] != "Z" and int(fields[3]) in sessions:
            found.append(int(stat.parent.name))
    return found


def test_an_axis_of_tables_gives_a_readable_dataset(tmp_path):
    """Loss models as axis values: the dataset keeps each as JSON text in the axis's column and is
    partitioned by its position (`<axis>#`), so polars, DuckDB and `sweep report` read it."""
    import duckdb

    losses = '[{ model = "bernoulli", p = 0.01 }, { model = "bernoulli", p = 0.05 }]'
    f = _sweep(tmp_path, f'"flows.f.cc" = ["cubic", "reno"]\n"links.l.loss" = {losses}\n', seeds=2, duration=1.0)
    out = tmp_path / "o"
    r = run_cli(["sweep", f, "--out", out, "-j", "2"], timeout=300)
    assert r.returncode == 0, r.stderr
    assert sorted(p.name for p in (out / "runs" / "flows.f.cc=cubic").iterdir()) == [
        "links.l.loss#=0",
        "links.l.loss#=1",
    ]
    runs = pl.read_parquet(out / "runs", hive_partitioning=True)
    assert runs.height == 8 and runs["links.l.loss"].dtype == pl.Utf8
    by_pos = dict(zip(runs["links.l.loss#"].to_list(), runs["links.l.loss"].to_list()))
    assert {k: json.loads(v) for k, v in by_pos.items()} == {
        0: {"model": "bernoulli", "p": 0.01},
        1: {"model": "bernoulli", "p": 0.05},
    }
    series = pl.read_parquet(out / "timeseries", hive_partitioning=True)
    assert set(series["links.l.loss#"].unique().to_list()) == {0, 1}
    n = duckdb.sql(
        f"SELECT count(*) FROM read_parquet('{out}/runs/**/*.parquet', hive_partitioning = true) "
        'WHERE "links.l.loss#" = 1'
    ).fetchall()[0][0]
    assert n == 4
    # More loss, less goodput: the report tells the two tables apart.
    plot = tmp_path / "heat.png"
    r = run_cli(["sweep", "report", out, "--metric", "flows.f.goodput_mbps", "--plot", plot], timeout=120)
    assert r.returncode == 0, r.stderr
    assert plot.stat().st_size > 0 and '"p": 0.05' in r.stdout, r.stdout
    cells, _ = __import__("mobipath.sweep", fromlist=["report"]).report(out, "flows.f.goodput_mbps")
    assert all(c["n"] == 2 for c in cells)
    g = {(c["flows.f.cc"], c["links.l.loss"]["p"]): c["mean"] for c in cells}
    assert g[("cubic", 0.05)] < g[("cubic", 0.01)] and g[("reno", 0.05)] < g[("reno", 0.01)], g


def test_heatmap_numbers_contrast_with_their_cells(tmp_path, monkeypatch):
    """Each number on the sweep heatmap is black or white, whichever contrasts more with its cell:
    black on viridis's yellow end, white on its dark end (WCAG contrast >= 4.5 everywhere)."""
    import matplotlib
    from matplotlib.axes import Axes
    from mobipath.plot import contrasting_text
    from mobipath.sweep import _plot

    drawn = {}
    real = Axes.text

    def text(self, x, y, s, *a, **kw):
        drawn[s] = kw.get("color")
        return real(self, x, y, s, *a, **kw)

    monkeypatch.setattr(Axes, "text", text)
    cells = [{"a": a, "b": b, "mean": float(3 * a + b), "ci95": None, "n": 1} for a in range(3) for b in range(3)]
    _plot(cells, ["a", "b"], "m", tmp_path / "h.png")
    assert drawn["8"] == "black" and drawn["0"] == "white", drawn

    def luminance(rgb):
        lin = [c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in rgb[:3]]
        return 0.2126 * lin[0] + 0.7152 * lin[1] + 0.0722 * lin[2]

    cmap = matplotlib.colormaps["viridis"]
    for i in range(256):
        rgba = cmap(i)
        lum = luminance(rgba)
        text_lum = 0.0 if contrasting_text(rgba) == "black" else 1.0
        hi, lo = max(lum, text_lum), min(lum, text_lum)
        assert (hi + 0.05) / (lo + 0.05) >= 4.5, (i, rgba)
