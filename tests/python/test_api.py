"""The Python API and the bindings, without running a simulation."""

from __future__ import annotations

import json

import mobipath
import pytest
from conftest import INVALID
from hypothesis import given, settings
from hypothesis import strategies as st
from mobipath import _core
from mobipath.source import INLINE_NAME, load_source


def test_core_validate_returns_dicts():
    errs = _core.validate((INVALID / "unknown-cc.toml").read_text(), "x.toml", str(INVALID))
    assert isinstance(errs, list) and errs
    for e in errs:
        assert set(e) == {"field", "value", "message"}
        assert all(isinstance(v, str) for v in e.values())


def test_core_run_raises_scenario_error_with_errors():
    with pytest.raises(_core.ScenarioError) as info:
        _core.run("seed = 1\nlinks = 3\n", "inline.toml", ".")
    assert info.value.file == "inline.toml"
    assert info.value.errors and {"field", "value", "message"} <= set(info.value.errors[0])
    assert "inline.toml: " in str(info.value)


def test_core_schema_is_json():
    json.loads(_core.schema())


def test_core_metadata():
    assert _core.__version__ == mobipath.__version__
    assert isinstance(_core.GIT_REVISION, str) and _core.GIT_REVISION
    assert _core.BUILD_PROFILE in ("release", "debug")


def test_validate_returns_config_errors_with_file():
    path = INVALID / "negative-rate.toml"
    errs = mobipath.validate(path)
    assert errs and all(isinstance(e, mobipath.ConfigError) for e in errs)
    assert all(e.file == str(path) for e in errs)


def test_validate_accepts_str_path_and_text():
    path = INVALID / "negative-rate.toml"
    assert mobipath.validate(str(path)) == mobipath.validate(path)
    inline = mobipath.validate(path.read_text())
    assert inline and all(e.file == INLINE_NAME for e in inline)


def test_validate_missing_file_raises_oserror(tmp_path):
    with pytest.raises(FileNotFoundError):
        mobipath.validate(tmp_path / "missing.toml")


def test_run_invalid_raises_scenario_error():
    path = INVALID / "two-errors.toml"
    with pytest.raises(mobipath.ScenarioError) as info:
        mobipath.run(path)
    err = info.value
    assert isinstance(err, _core.ScenarioError)
    assert err.file == str(path) and err.errors
    assert all(isinstance(e, mobipath.ConfigError) for e in err.errors)
    assert str(err).splitlines()[0].startswith(f"{path}: ")


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, True])
def test_run_rejects_bad_seed(seed):
    with pytest.raises((ValueError, TypeError)):
        mobipath.run(INVALID / "negative-rate.toml", seed=seed)


def test_schema_is_dict():
    assert isinstance(mobipath.schema(), dict)


def test_config_error_str_matches_rust_display():
    assert (
        str(mobipath.ConfigError("links[0].rate_mbps", "-5", "must be > 0")) == "links[0].rate_mbps = -5: must be > 0"
    )
    assert str(mobipath.ConfigError("duration_s", "", "missing")) == "duration_s: missing"
    assert mobipath.ConfigError("a", "1", "m", "f.toml").with_file() == "f.toml: a = 1: m"


def test_load_source_path_vs_text(tmp_path):
    f = tmp_path / "s.toml"
    f.write_text("seed = 3\n")
    by_path = load_source(f)
    assert by_path.path == f and by_path.base_dir == tmp_path.resolve() and by_path.stem == "s"
    assert load_source(str(f)).text == "seed = 3\n"
    inline = load_source("seed = 3\n")
    assert inline.path is None and inline.file == INLINE_NAME and inline.stem == "scenario"
    with pytest.raises(FileNotFoundError):
        load_source(str(tmp_path / "missing.toml"))
    with pytest.raises(TypeError):
        load_source(3)  # type: ignore[arg-type]


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=400))
def test_validate_never_crashes_on_arbitrary_text(text):
    errs = _core.validate(text, "fuzz.toml", ".")
    assert isinstance(errs, list)
    for e in errs:
        assert isinstance(e["field"], str) and isinstance(e["message"], str) and e["message"]


SCENARIO_TEMPLATE = """
seed = 1
duration_s = 1
[[links]]
name = "l1"
rate_mbps = {rate!r}
delay_ms = 20
queue_packets = 167
[[paths]]
name = "p1"
links = ["l1"]
[[flows]]
name = "f1"
path = "p1"
cc = "cubic"
traffic = {{ kind = "bulk" }}
"""


@settings(max_examples=50, deadline=None)
@given(st.floats(max_value=-1e-6, allow_nan=False, allow_infinity=False))
def test_negative_rates_are_rejected_by_field(rate):
    errs = mobipath.validate(SCENARIO_TEMPLATE.format(rate=rate))
    assert any(e.field == "links[0].rate_mbps" for e in errs), [str(e) for e in errs]


def test_shipped_paths_resolve_as_on_the_command_line(tmp_path, monkeypatch):
    """From a directory without scenarios/, `mobipath.run("scenarios/examples/...")` and
    `validate` read the copy shipped with mobipath (its trace beside it), as `mobipath run` does."""
    import mobipath

    monkeypatch.chdir(tmp_path)
    assert mobipath.validate("scenarios/examples/file-over-trace.toml") == []
    assert mobipath.validate("examples/file-over-trace.toml") == []
    r = mobipath.run("scenarios/examples/single-cubic.toml", overrides={"duration_s": 0.05, "output.warmup_s": 0})
    assert r.summary["flows"] and r.scenario_file.endswith("scenarios/examples/single-cubic.toml")
    assert "share" in r.scenario_file  # the shipped copy, not a file here
    # A file here wins over the shipped one.
    (tmp_path / "scenarios" / "examples").mkdir(parents=True)
    (tmp_path / "scenarios" / "examples" / "single-cubic.toml").write_text("not = [valid")
    with pytest.raises(mobipath.ScenarioError):
        mobipath.run("scenarios/examples/single-cubic.toml")
