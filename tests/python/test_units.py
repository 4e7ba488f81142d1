"""Library pieces that need no simulator run: JSON format, result files, provenance, bench helpers."""

from __future__ import annotations

import json
import math
import os
import shutil
import subprocess
from pathlib import Path

import polars as pl
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from mobipath import jsonfmt, provenance
from mobipath.bench import QUICK_DURATION_S, cap_duration, quick_cap
from mobipath.display import entities, fmt_value, metric_columns
from mobipath.results import TIMESERIES_COLUMNS, Result, effective_seed, timeseries_frame
from mobipath.source import load_source

RAW = {
    "summary": json.dumps(
        {
            "seed": 4,
            "duration_s": 10.0,
            "flows": {"f1": {"goodput_mbps": 93.12345678901234, "timeouts": 0, "retransmission_ratio": 1e-7}},
            "links": {"l1": {"drops": 12}},
        }
    ),
    "resolved_scenario": json.dumps({"seed": 4, "duration_s": 10.0, "links": [{"name": "l1"}]}),
    "timeseries": {
        "time_s": [0.0, 0.0, 0.1],
        "kind": ["flow", "link", "flow"],
        "name": ["f1", "l1", "f1"],
        "metric": ["goodput_mbps", "queue_packets", "goodput_mbps"],
        "value": [10.5, 3.0, 90.25],
    },
    "events": 1234,
}


def test_canonical_json_is_sorted_and_stable():
    a = jsonfmt.dumps({"b": 1.0, "a": {"y": 0.1, "x": [1, 2.5]}})
    b = jsonfmt.dumps({"a": {"x": [1, 2.5], "y": 0.1}, "b": 1.0})
    assert a == b and a.endswith("\n")
    assert list(json.loads(a)) == ["a", "b"]


def test_canonical_json_floats_round_trip_and_nonfinite_is_null():
    values = [0.1, 1 / 3, 1e-7, 123456789.123, 2.0**-1074]
    assert json.loads(jsonfmt.dumps(values)) == values
    assert json.loads(jsonfmt.dumps({"x": math.nan, "y": math.inf})) == {"x": None, "y": None}


def test_timeseries_frame_long_form():
    df = timeseries_frame(RAW["timeseries"])
    assert tuple(df.columns) == TIMESERIES_COLUMNS
    assert df.schema["time_s"] == pl.Float64 and df.schema["value"] == pl.Float64
    assert df.schema["kind"] == pl.Utf8
    assert df.height == 3
    empty = timeseries_frame({})
    assert tuple(empty.columns) == TIMESERIES_COLUMNS and empty.height == 0


def test_effective_seed():
    assert effective_seed(9, {"seed": 1}, {}) == 9
    assert effective_seed(None, {"seed": 1}, {"seed": 2}) == 1
    assert effective_seed(None, {}, {"seed": 2}) == 2
    assert effective_seed(None, {}, {}) is None


def test_result_write_is_deterministic(tmp_path):
    scenario = tmp_path / "s.toml"
    scenario.write_text("seed = 4\n")
    src = load_source(scenario)
    r1 = Result.from_raw(RAW, src, None, command="mobipath run s.toml")
    r2 = Result.from_raw(dict(RAW), src, None, command="mobipath run s.toml")
    d1, d2 = r1.write(tmp_path / "a"), r2.write(tmp_path / "b")
    for name in ("summary.json", "provenance.json"):
        assert (d1 / name).read_bytes() == (d2 / name).read_bytes()
    summary = json.loads((d1 / "summary.json").read_text())
    assert summary["flows"]["f1"]["goodput_mbps"] == 93.12345678901234
    assert pl.read_parquet(d1 / "timeseries.parquet").equals(r1.timeseries)
    prov = json.loads((d1 / "provenance.json").read_text())
    assert prov["seed"] == 4 and prov["events"] == 1234
    assert prov["command"] == "mobipath run s.toml"
    assert prov["reproduce"] == f"mobipath run {scenario} --seed 4"
    assert prov["resolved_scenario"] == json.loads(RAW["resolved_scenario"])
    for key in ("mobipath_version", "git_revision", "python", "platform", "scenario_sha256"):
        assert prov[key]
    assert not list(d1.glob("*.tmp"))


def test_result_seed_override_recorded(tmp_path):
    src = load_source("seed = 4\n")
    r = Result.from_raw(RAW, src, 77)
    assert r.seed == 77 and r.provenance["seed"] == 77 and r.provenance["reproduce"] is None


def test_command_line_names_the_cli():
    assert provenance.command_line(["/x/y/bin/mobipath", "run", "a b.toml"]) == "mobipath run 'a b.toml'"


def test_git_revision_env_override(monkeypatch):
    provenance.git_revision.cache_clear()
    monkeypatch.setenv("MOBIPATH_GIT_REVISION", "abc123")
    try:
        assert provenance.git_revision() == "abc123"
    finally:
        provenance.git_revision.cache_clear()


@pytest.mark.skipif(shutil.which("git") is None, reason="git not installed")
def test_revision_of_git_tree(tmp_path):
    env = dict(
        os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@e", GIT_COMMITTER_NAME="t", GIT_COMMITTER_EMAIL="t@e"
    )

    def run(*a):
        return subprocess.run(["git", "-C", str(tmp_path), *a], check=True, env=env, stdout=subprocess.PIPE, text=True)

    run("init", "-q")
    (tmp_path / "f").write_text("1")
    run("add", "f")
    run("commit", "-qm", "x")
    head = run("rev-parse", "HEAD").stdout.strip()
    assert provenance.revision_of(tmp_path) == head
    (tmp_path / "f").write_text("2")
    assert provenance.revision_of(tmp_path) == head + "-dirty"
    assert provenance.revision_of(tmp_path / "missing") is None


def test_git_revision_of_this_checkout():
    root = provenance.source_tree()
    rev = provenance.git_revision()
    assert isinstance(rev, str) and rev
    if root is not None and shutil.which("git") and not os.environ.get("MOBIPATH_GIT_REVISION"):
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], stdout=subprocess.PIPE, text=True)
        if head.returncode == 0:
            assert rev.startswith(head.stdout.strip())


def test_cap_duration():
    text = "seed = 1\nduration_s = 60\n[[flows]]\nduration_s = 90\n"
    new, changed = cap_duration(text, 2.0)
    assert changed and new == "seed = 1\nduration_s = 2\n[[flows]]\nduration_s = 90\n"
    assert cap_duration("duration_s = 1.5\n", 2.0) == ("duration_s = 1.5\n", False)
    assert cap_duration("duration_s = 1_000.0 # long\n", 0.5)[0] == "duration_s = 0.5 # long\n"
    assert cap_duration("[[links]]\nduration_s = 9\n", 2.0)[1] is False


def test_quick_cap_keeps_warmup():
    assert quick_cap("duration_s = 60\n") == QUICK_DURATION_S
    assert quick_cap("duration_s = 60\n[output]\nwarmup_s = 5\n") == 5 + QUICK_DURATION_S
    assert quick_cap("not toml [") == QUICK_DURATION_S


def test_display_helpers():
    assert fmt_value(0.0123456) == "0.01235" and fmt_value(3.0) == "3" and fmt_value(12345.678) == "12345.7"
    assert fmt_value(None) == "—" and fmt_value(7) == "7"
    flows = {"f1": {"timeouts": 1, "goodput_mbps": 2.0, "zz": 1, "nested": {"a": 1}}}
    assert entities(flows) == [("f1", flows["f1"])]
    assert entities([{"name": "f2", "x": 1}]) == [("f2", {"name": "f2", "x": 1})]
    assert metric_columns([flows["f1"]], ["goodput_mbps", "timeouts"]) == ["goodput_mbps", "timeouts", "zz"]


def test_ramp_up_time_on_synthetic_series():
    from mobipath.experiments.common import ramp_up_time

    t = [i * 0.1 for i in range(300)]  # 30 s in 100 ms bins
    # Linear ramp to 50 over the first 10 s, then flat: final 50, 90 % = 45; the 1 s moving
    # average of a ramp reaches 45 when its window is centred on 9 s, i.e. ends at 9.5 s.
    ramp = [min(50.0, 5.0 * (x + 0.05)) for x in t]
    assert ramp_up_time(t, ramp) == pytest.approx(9.5, abs=0.11)
    # A step at 4 s: the average over [3.0, 4.0) is 0, over [3.1, 4.1) a tenth... reaches 90 % at 4.9 s.
    step = [0.0 if x < 4.0 - 1e-9 else 20.0 for x in t]
    assert ramp_up_time(t, step) == pytest.approx(4.9, abs=1e-6)
    # A faster ramp reaches it earlier; no traffic at all has no ramp-up: None.
    fast = [min(50.0, 25.0 * (x + 0.05)) for x in t]
    assert ramp_up_time(t, fast) < ramp_up_time(t, ramp)
    assert ramp_up_time(t, [0.0] * 300) is None
    assert ramp_up_time([], []) is None


@settings(max_examples=300, deadline=None)
@given(st.text() | st.text(alphabet="ab _-'\"$@%+=:,./\\\n"))
def test_quote_is_shlex_quote(arg):
    """provenance.quote stands in for shlex.quote on `mobipath run`'s path (shlex imports re)."""
    import shlex

    assert provenance.quote(arg) == shlex.quote(arg)


def test_write_returns_a_path_and_write_files_a_string(tmp_path, monkeypatch):
    r = Result.from_raw(RAW, load_source("seed = 4\n"), 4)
    assert r.write(tmp_path / "a") == tmp_path / "a" and isinstance(r.write(str(tmp_path / "a")), Path)
    assert r.write_files(str(tmp_path / "b")) == str(tmp_path / "b")
    monkeypatch.chdir(tmp_path)
    assert r.write("") == Path(".") and (tmp_path / "summary.json").read_text() == r.summary_json()
    assert sorted(p.name for p in (tmp_path / "b").iterdir()) == [
        "provenance.json",
        "summary.json",
        "timeseries.parquet",
    ]
