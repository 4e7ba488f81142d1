"""NR handover types on the train: `mobipath reproduce nr --quick` writes its report from its
results; DAPS leaves the links uninterrupted where hard handovers stop them; a declared type adds
the per-handover fields; bad types and out-of-range values are refused naming the field."""

import csv
import json
from pathlib import Path

import pytest
from conftest import run_cli
from mobipath import api

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("nr") / "q"
    r = run_cli(["reproduce", "nr", "--quick", "--jobs", "2", "--out", out], timeout=120)
    assert r.returncode == 0, r.stderr
    with open(out / "results.csv", newline="") as f:
        return out, list(csv.DictReader(f))


def test_one_row_per_type_variant_seed_and_a_report_with_cis(quick):
    out, rows = quick
    keys = {(r["type"], r["variant"], r["seed"]) for r in rows}
    assert len(keys) == len(rows) == 3 * 2 * 2
    report = (out / "report.md").read_text()
    assert " ± " in report and "seeds" in report and "What the result depends on" in report
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provenance"]["seeds"] == 2


def test_daps_leaves_no_interruption_where_hard_stops_the_link(quick):
    _, rows = quick
    by = {
        t: [float(r["mean_interruption_ms"]) for r in rows if r["type"] == t and r["mean_interruption_ms"]]
        for t in ("hard", "daps")
    }
    assert by["hard"] and by["daps"]
    assert max(by["daps"]) < 5.0 < min(by["hard"])
    # No IP-level gap is measured on a DAPS link: it never stops.
    assert all(r["mean_ip_gap_ms"] == "" for r in rows if r["type"] == "daps")


def _scenario(kind: str) -> str:
    text = (ROOT / "scenarios/nr/hst-daps-minrtt.toml").read_text()
    return text.replace('type = "daps"', kind).replace("duration_s = 20", "duration_s = 5")


def test_declared_types_add_the_handover_fields_and_undeclared_ones_do_not():
    res = api.run(_scenario('type = "hard"'), base_dir=ROOT / "scenarios/nr")
    hos = res.summary["handovers"]
    assert hos and all({"type", "failed", "rlf", "reestablishment_ms"} <= set(h) for h in hos)
    assert {h["type"] for h in hos} == {"hard"}
    plain = api.run(_scenario(""), base_dir=ROOT / "scenarios/nr").summary["handovers"]
    assert plain and not any("type" in h for h in plain)
    # Same handovers otherwise (an explicit "hard" is the default's timing).
    assert [(h["start_s"], h["end_s"]) for h in plain] == [(h["start_s"], h["end_s"]) for h in hos]


@pytest.mark.parametrize(
    "change, field",
    [
        ('type = "make-before-break"', "hst.handover.type"),
        ('type = "daps"\n[hst.handover.daps]\ninterruption_ms = 200', "hst.handover.daps.interruption_ms"),
        ('type = "cho"\n[hst.handover.cho]\nprepare_offset_db = 3', "hst.handover.cho.prepare_offset_db"),
    ],
)
def test_bad_handover_input_names_the_field(change, field):
    text = _scenario(change)
    if "[hst.handover." in change:  # the sub-table must follow the signalling table
        head, sub = change.split("\n", 1)
        text = _scenario(head) + "\n" + sub + "\n"
    with pytest.raises(Exception) as e:
        api.run(text, base_dir=ROOT / "scenarios/nr")
    assert field in str(e.value), str(e.value)


def test_the_emulator_gets_the_types_links_daps_uninterrupted_hard_interrupted():
    """The emulator applies the links as a run builds them (`_core.effective_links`): a DAPS
    ride's links keep carrying the flow through every successful handover, a hard ride's stop."""
    from mobipath import _core

    def outages(kind: str) -> int:
        text = _scenario(f'type = "{kind}"')
        eff = json.loads(_core.effective_links(text, "nr.toml", str(ROOT / "scenarios/nr"), 1))
        assert eff["handovers"], "the ride hands over"
        return sum(len(link.get("outages", [])) for link in eff["links"])

    assert outages("hard") > 0
    assert outages("daps") == 0


def test_plot_marks_failed_handovers_apart():
    from mobipath.plot import _handovers

    summary = {
        "handovers": [
            {"start_s": 1.0, "end_s": 1.03, "operator": "A", "failed": False},
            {"start_s": 2.0, "end_s": 3.2, "operator": "B", "failed": True, "rlf": True},
            {"start_s": 4.0, "end_s": 4.04, "operator": "A"},
        ]
    }
    assert [h[3] for h in _handovers(summary)] == [False, True, False]
