"""Golden reproduce results: `reproduce p0/p1/p2/p3 --quick` must give the same
results.csv and the same summary.json aggregates (provenance aside) as the files in
tests/golden/reproduce/. A change that moves them must say which and why in its commit.
Regenerate after an intended change with MOBIPATH_BLESS=1 (then review `git diff tests/golden`)."""

import json
import os
from pathlib import Path

import pytest
from conftest import QUICK_REPRODUCE
from product_words import findings
from report_checks import check_report_html

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden" / "reproduce"


@pytest.mark.parametrize("name", sorted(QUICK_REPRODUCE))
def test_reproduce_results_match_golden(name, quick_report):
    out = quick_report(name)
    got_csv = (out / "results.csv").read_text()
    got_agg = json.dumps(json.loads((out / "summary.json").read_text())["aggregates"], indent=1, sort_keys=True) + "\n"
    gold = GOLDEN / name
    if os.environ.get("MOBIPATH_BLESS"):
        gold.mkdir(parents=True, exist_ok=True)
        (gold / "results.csv").write_text(got_csv)
        (gold / "aggregates.json").write_text(got_agg)
        return
    assert got_csv == (gold / "results.csv").read_text(), f"{name}: results.csv differs from {gold}"
    assert got_agg == (gold / "aggregates.json").read_text(), f"{name}: summary.json aggregates differ from {gold}"


@pytest.mark.parametrize("name", sorted(QUICK_REPRODUCE))
def test_reports_speak_of_the_product_and_render_as_html(name, quick_report):
    """The generated report says what mobipath measured and why, never how it was developed
    (product_words.py), and its report.html carries the same numbers (report_checks.py)."""
    out = quick_report(name)
    for f in ("report.md", "report.html"):
        bad = findings((out / f).read_text(encoding="utf-8"))
        assert not bad, f"{name}/{f}: development-history words: {bad}"
    check_report_html(out)
