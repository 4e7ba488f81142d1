"""The Python API takes a scenario as a path, text or dict, with dotted-path overrides and a
base folder for relative files; bad input is a ScenarioError/ValueError, never a bare
OverflowError; the CLI warns when the seed cannot matter."""

import shutil

import mobipath
import pytest
from conftest import ROOT, run_cli
from mobipath.errors import ScenarioError
from mobipath.source import load_source, parse_toml

EXAMPLES = ROOT / "scenarios" / "examples"


def test_dict_and_overrides_by_name_and_index():
    base = parse_toml((EXAMPLES / "mptcp-two-paths.toml").read_text(), "x")
    a = mobipath.run(base, seed=2)
    b = mobipath.run(EXAMPLES / "mptcp-two-paths.toml", seed=2)
    assert a.summary["flows"] == b.summary["flows"]
    flow = base["flows"][0]["name"]
    link = base["links"][0]["name"]
    c = mobipath.run(base, seed=2, overrides={f"flows.{flow}.cc": "olia", "links[0].rate_mbps": 5})
    assert c.summary["flows"][flow]["cc"] == "olia"
    assert c.resolved_scenario["links"][0]["rate_mbps"] == 5
    d = mobipath.run(base, seed=2, overrides={"flows[0].cc": "olia", f"links.{link}.rate_mbps": 5})
    assert d.summary == c.summary


def test_bad_overrides_name_the_override():
    with pytest.raises(ScenarioError) as e:
        mobipath.run(EXAMPLES / "single-cubic.toml", overrides={"links.nosuch.rate_mbps": 5})
    assert "links.nosuch.rate_mbps" in str(e.value) and "no entry named 'nosuch'" in str(e.value)
    with pytest.raises(ScenarioError) as e:
        mobipath.run(EXAMPLES / "single-cubic.toml", overrides={"flows[7].cc": "bbr"})
    assert "index 7 is out of range" in str(e.value)
    # An override to a value the scenario refuses is the scenario's error, with the field.
    errs = mobipath.validate(EXAMPLES / "single-cubic.toml", overrides={"flows[0].cc": "nosuch"})
    assert any(e.field == "flows[0].cc" for e in errs), errs


def test_base_dir_resolves_relative_traces(tmp_path):
    text = (EXAMPLES / "file-over-trace.toml").read_text()
    with pytest.raises(ScenarioError):  # from text, relative to the current directory: not found
        mobipath.run(text)
    r = mobipath.run(text, base_dir=EXAMPLES)
    assert r.summary["flows"]["download"]["bytes_delivered"] > 0
    copy = tmp_path / "elsewhere.toml"
    shutil.copy(EXAMPLES / "file-over-trace.toml", copy)
    assert load_source(copy, base_dir=EXAMPLES).base_dir == EXAMPLES.resolve()


def test_huge_numbers_are_value_errors_not_overflow():
    with pytest.raises(ValueError):
        mobipath.run(EXAMPLES / "single-cubic.toml", seed=2**70)
    errs = mobipath.validate(EXAMPLES / "single-cubic.toml", overrides={"links[0].queue_packets": 2**62})
    assert errs and errs[0].field.startswith("links[0].queue_packets"), errs
    with pytest.raises(ScenarioError):
        mobipath.run(EXAMPLES / "single-cubic.toml", overrides={"links[0].queue_packets": 2**70})


def test_cli_warns_when_no_seed_can_change_the_result(tmp_path):
    r = run_cli(["run", EXAMPLES / "single-cubic.toml", "--seed", "7", "--out", tmp_path / "a"])
    assert r.returncode == 0, r.stderr
    assert "nothing in this scenario is random" in r.stderr
    r = run_cli(["run", EXAMPLES / "lossy-newreno.toml", "--seed", "7", "--out", tmp_path / "b"])
    assert r.returncode == 0, r.stderr
    assert "nothing in this scenario is random" not in r.stderr
    assert mobipath.run(EXAMPLES / "lossy-newreno.toml").seed_matters
    assert not mobipath.run(EXAMPLES / "single-cubic.toml").seed_matters


def test_emulator_maps_or_refuses_every_registered_controller():
    """A new congestion control in the simulator's registry must be placed here: run by the
    kernel, substituted, or refused (ARCHITECTURE.md, 'A congestion control')."""
    import json

    from mobipath import _core
    from mobipath.emulate.plan import KERNEL_CC, NO_KERNEL_EQUIVALENT, SUBSTITUTES

    names = json.loads(_core.names())
    for cc in names["cc"] + names["coupled_cc"]:
        assert cc in KERNEL_CC or cc in SUBSTITUTES or cc in NO_KERNEL_EQUIVALENT, cc
