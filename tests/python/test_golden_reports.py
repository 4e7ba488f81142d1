"""Golden reproduce results: `reproduce p0/p1/p2/p3 --quick` must give the same
results.csv and the same summary.json aggregates (provenance aside) as the files in
tests/golden/reproduce/. A change that moves them must say which and why in its commit.
Regenerate after an intended change with MOBIPATH_BLESS=1 (then review `git diff tests/golden`)."""

import json
import os
from pathlib import Path

import pytest
from conftest import run_cli

GOLDEN = Path(__file__).resolve().parents[2] / "tests" / "golden" / "reproduce"
CASES = {
    "p0-quick": ["reproduce", "p0", "--quick", "--jobs", "2"],
    "p1-quick": ["reproduce", "p1", "--quick", "--jobs", "2"],
    "p2-quick": ["reproduce", "p2", "--quick", "--jobs", "2"],
    "p3-quick": ["reproduce", "p3", "--quick", "--jobs", "2"],
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_reproduce_results_match_golden(name, tmp_path):
    out = tmp_path / name
    r = run_cli([*CASES[name], "--out", out], timeout=300)
    assert r.returncode == 0, r.stderr
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
