"""`[output] series` (which time series a run keeps) and `mobipath bench --flows` (runs of many
flows through one bottleneck)."""

from __future__ import annotations

import json

import mobipath
import pytest
from conftest import run_cli
from mobipath import bench


def _flows(n: int, series: str | None = None, duration_s: float = 0.5) -> str:
    text = bench.nflows_scenario(n, duration_s=duration_s)
    if series is not None:
        text = text.replace("\n[[links]]", f"\n[output]\nseries = {series}\n\n[[links]]", 1)
    return text


def _kinds(result: mobipath.Result) -> set[tuple[str, str]]:
    ts = result.timeseries
    return set(zip(ts["kind"].to_list(), ts["name"].to_list()))


def test_a_few_flows_keep_every_series_and_many_keep_the_aggregate():
    few = mobipath.run(_flows(3))
    assert {("flow", "f0"), ("flow", "f2"), ("link", "bottleneck.forward")} <= _kinds(few)
    many = mobipath.run(_flows(101))
    assert _kinds(many) == {("link", "bottleneck.forward"), ("link", "bottleneck.reverse"), ("total", "flows")}
    # The summary is complete either way, and the same as when every series is kept.
    kept = mobipath.run(_flows(101, '"all"'))
    assert many.summary == kept.summary and len(many.summary["flows"]) == 101
    total = many.timeseries.filter(many.timeseries["metric"] == "goodput_mbps")["value"].sum()
    flows = kept.timeseries.filter((kept.timeseries["kind"] == "flow") & (kept.timeseries["metric"] == "goodput_mbps"))[
        "value"
    ].sum()
    assert total == pytest.approx(flows, rel=1e-9) and total > 0


def test_a_list_keeps_those_flows_and_none_nothing(tmp_path):
    some = mobipath.run(_flows(4, '["f1", "f3"]'))
    assert {n for k, n in _kinds(some) if k == "flow"} == {"f1", "f3"}
    none = mobipath.run(_flows(4, '"none"'))
    assert none.timeseries.height == 0
    none.write(tmp_path / "out")
    assert (tmp_path / "out" / "timeseries.parquet").exists()


@pytest.mark.parametrize(
    ("value", "field", "says"),
    [
        ('"some"', "output.series", '"aggregate"'),
        ("[]", "output.series", "non-empty list of flow names"),
        ('["f0", "nope"]', "output.series[1]", "unknown flow"),
    ],
)
def test_a_bad_series_value_names_the_field_and_what_is_allowed(value, field, says):
    errors = mobipath.validate(_flows(2, value))
    assert [e.field for e in errors] == [field]
    assert says in str(errors[0])


def test_bench_flows_writes_and_measures_each_flow_count(tmp_path):
    proc = run_cli(["bench", "--flows", "1,120", "--quick", "--json"], cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    one, many = json.loads(proc.stdout)["results"]
    assert one["scenario"].endswith("nflows-1.toml") and many["scenario"].endswith("nflows-120.toml")
    for m in (one, many):
        assert m["sim_seconds"] == bench.QUICK_DURATION_S and m["duration_capped"]
        assert m["packets"] > 0 and m["events"] > 0
    assert many["events"] > one["events"]


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--flows", "0"], "whole numbers in [1, 100000]"),
        (["--flows", "10,x"], "'x' is not a flow count"),
        (["--flows", "10", "some.toml"], "either scenario files or --flows"),
    ],
)
def test_bench_flows_refuses_bad_counts(tmp_path, args, says):
    proc = run_cli(["bench", *args], cwd=tmp_path)
    assert proc.returncode != 0
    assert says in proc.stderr
