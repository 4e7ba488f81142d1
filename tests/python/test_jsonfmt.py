"""mobipath's canonical JSON is written by the extension (`_core.canonical_json`) and the run's
summary comes back as Python objects (`_core.run(..., objects=True)`), so that `mobipath run`
never imports `json` (which imports `re`; issue 19). Both must be exactly what Python's `json`
gives: every file mobipath writes, and every golden file, depends on it."""

import json
import math
import re

import pytest
from conftest import ROOT
from hypothesis import given, settings
from hypothesis import strategies as st
from mobipath import _core, jsonfmt


def python_dumps(value):
    return json.dumps(value, sort_keys=True, indent=2, ensure_ascii=False, allow_nan=False)


scalars = (
    st.none()
    | st.booleans()
    | st.integers()
    | st.integers(min_value=-(2**200), max_value=2**200)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.sampled_from([0.0, -0.0, 1e16, 1e-5, 1e-4, 123456789012345680.0, 5e-324, 1.7976931348623157e308, 0.1, 100.0])
    | st.text()
    | st.text(alphabet=st.characters(max_codepoint=0x7F))
)
values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5)
        | st.tuples(children, children)
        | st.dictionaries(st.text(max_size=8), children, max_size=5)
    ),
    max_leaves=30,
)


@settings(max_examples=400, deadline=None)
@given(values)
def test_canonical_json_is_pythons_json(value):
    assert _core.canonical_json(value) == python_dumps(value)


def test_canonical_json_edge_cases():
    for value in [
        '\x00\x1f\x7f"\\\b\f\n\r\t/é€😀',
        {"b": 1, "a": {}, "A": [], "é": [[]], "": None},
        [1.0, -0.0, 1e22, 1e-7, 2**64, -(2**63) - 1, True, False],
        {},
        [],
        (),
        3,
        "x",
    ]:
        assert _core.canonical_json(value) == python_dumps(value), value
    with pytest.raises(ValueError):
        _core.canonical_json([math.nan])
    with pytest.raises(ValueError):
        _core.canonical_json({"x": math.inf})
    with pytest.raises(TypeError):
        _core.canonical_json({1: "not a str key"})
    with pytest.raises(TypeError):
        _core.canonical_json({"x": object()})


def test_jsonfmt_writes_what_python_json_writes():
    value = {"z": [1, 2.5, float("nan")], "a": (True, None), "m": {"k": math.inf}}
    assert jsonfmt.dumps(value) == python_dumps(jsonfmt.normalize(value)) + "\n"


@pytest.mark.parametrize(
    "scenario",
    [
        "scenarios/examples/single-cubic.toml",
        "scenarios/bench/mptcp-lia-minrtt-2x25mbps-70s.toml",
        "scenarios/p0/hst-minrtt.toml",
    ],
)
def test_run_objects_are_what_json_loads_makes_of_the_text(scenario):
    path = ROOT / scenario
    # Two seconds of each (a train's ride included): summaries with every kind of field.
    text, n = re.subn(r"(?m)^duration_s = .*$", "duration_s = 2", path.read_text(encoding="utf-8"))
    assert n == 1
    text = re.sub(r"(?m)^warmup_s = .*$", "warmup_s = 0", text)
    as_text = _core.run(text, str(path), str(path.parent), 3, None)
    as_objects = _core.run(text, str(path), str(path.parent), 3, None, False, True)
    for key in ("summary", "resolved_scenario"):
        loaded = json.loads(as_text[key])
        assert as_objects[key] == loaded
        # Same types (1 is not 1.0 in a JSON file) and the same key order, all the way down.
        assert python_dumps(as_objects[key]) == python_dumps(loaded)
        assert json.dumps(as_objects[key]) == json.dumps(loaded)


def test_jsonfmt_writes_lone_surrogates_as_python_does():
    value = {"command": "mobipath run caf\udce9.toml"}  # a non-UTF-8 file name (surrogateescape)
    assert jsonfmt.dumps(value) == python_dumps(value) + "\n"
