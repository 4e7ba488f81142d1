"""Running scenarios end to end (needs a working simulator and scenarios/examples/single-cubic.toml)."""

from __future__ import annotations

import json
import shutil
import subprocess

import mobipath
import polars as pl
import pytest
from conftest import ROOT, run_cli
from mobipath.results import TIMESERIES_COLUMNS


def flow_names(resolved):
    names = [f["name"] for f in resolved["flows"]]
    assert names
    return names


def test_api_run(example):
    r = mobipath.run(example, seed=7)
    assert r.seed == 7 and r.provenance["seed"] == 7
    assert r.events > 0
    assert isinstance(r.summary, dict) and r.summary.get("flows")
    for name in flow_names(r.resolved_scenario):
        assert name in json.dumps(r.summary["flows"])
    assert isinstance(r.timeseries, pl.DataFrame)
    assert tuple(r.timeseries.columns[:5]) == TIMESERIES_COLUMNS
    assert r.timeseries.height > 0
    assert r.resolved_scenario


def test_api_run_is_deterministic(example):
    a = mobipath.run(example, seed=3)
    b = mobipath.run(example, seed=3)
    assert a.summary_json() == b.summary_json()
    assert a.events == b.events
    assert a.timeseries.equals(b.timeseries)


def test_api_run_inline_text(example):
    a = mobipath.run(example.read_text(), seed=2)
    b = mobipath.run(example, seed=2)
    assert a.summary_json() == b.summary_json()
    assert a.provenance["scenario_file"] is None


def test_progress_callback(example):
    seen = []
    mobipath.run(example, seed=1, progress=seen.append)
    assert seen, "progress was never called"
    assert all(0.0 <= f <= 1.0 for f in seen)
    assert seen == sorted(seen)


def test_progress_callback_error_propagates(example):
    def boom(fraction):
        raise ZeroDivisionError("from callback")

    with pytest.raises(ZeroDivisionError, match="from callback"):
        mobipath.run(example, seed=1, progress=boom)


def test_cli_run_same_seed_byte_identical(example, tmp_path):
    for d in ("a", "b"):
        proc = run_cli(["run", example, "--seed", "5", "--out", tmp_path / d, "--quiet"])
        assert proc.returncode == 0, proc.stderr
    a, b = tmp_path / "a", tmp_path / "b"
    assert (a / "summary.json").read_bytes() == (b / "summary.json").read_bytes()
    assert pl.read_parquet(a / "timeseries.parquet").equals(pl.read_parquet(b / "timeseries.parquet"))


def test_cli_run_default_out_dir_and_table(example, tmp_path):
    proc = run_cli(["run", example, "--seed", "2"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    out = tmp_path / "results" / f"{example.stem}-seed2"
    for name in ("summary.json", "timeseries.parquet", "provenance.json"):
        assert (out / name).is_file(), name
    prov = json.loads((out / "provenance.json").read_text())
    for name in flow_names(prov["resolved_scenario"]):
        assert name in proc.stdout
    assert "goodput_mbps" in proc.stdout
    assert "results written to" in proc.stderr


def test_cli_run_json(example, tmp_path):
    proc = run_cli(["run", example, "--seed", "2", "--json", "--out", tmp_path / "r"])
    assert proc.returncode == 0, proc.stderr
    summary = json.loads(proc.stdout)
    assert summary == json.loads((tmp_path / "r" / "summary.json").read_text())
    assert proc.stdout == (tmp_path / "r" / "summary.json").read_text()
    assert summary["flows"]


def test_cli_run_provenance(example, tmp_path):
    proc = run_cli(["run", example, "--seed", "11", "--out", tmp_path / "r", "--quiet"])
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    prov = json.loads((tmp_path / "r" / "provenance.json").read_text())
    assert prov["seed"] == 11
    assert prov["mobipath_version"] == mobipath.__version__
    assert isinstance(prov["git_revision"], str) and prov["git_revision"]
    assert prov["command"].startswith("mobipath run ") and "--seed 11" in prov["command"]
    assert prov["reproduce"] == f"mobipath run {example} --seed 11"
    assert prov["resolved_scenario"]
    assert prov["python"]["version"] and prov["platform"]["system"]
    if shutil.which("git") and (ROOT / ".git").exists() and mobipath.provenance.source_tree() is not None:
        head = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], stdout=subprocess.PIPE, text=True)
        if head.returncode == 0:
            assert prov["git_revision"].startswith(head.stdout.strip())


def test_validate_example_api(example):
    assert mobipath.validate(example) == []


def test_bench_quick_on_example(example):
    proc = run_cli(["bench", "--quick", "--json", example])
    assert proc.returncode == 0, proc.stderr
    data = json.loads(proc.stdout)
    (m,) = data["results"]
    assert m["events"] > 0 and m["wall_seconds"] > 0 and m["peak_rss_mib"] > 0
    assert m["sim_seconds"] is not None and m["sim_seconds"] > 0


def test_bench_default_scenarios_quick():
    if not list((ROOT / "scenarios" / "bench").glob("*.toml")):
        pytest.fail("scenarios/bench/*.toml is missing")
    proc = run_cli(["bench", "--quick"], cwd=ROOT)
    assert proc.returncode == 0, proc.stderr
    assert "Mevents/s" in proc.stdout
