"""`mobipath reproduce p2` (alias `aggregation`): a quick end-to-end run writes the report, the
heatmap, one scenario and one results row per run; the report's numbers come from results.csv;
the capacity process is the seed's; reruns with other parallelism are identical."""

import csv
import json
import re
import statistics
from pathlib import Path

import pytest
from conftest import run_cli

ARGS = ["--quick", "--seeds", "2"]


@pytest.fixture(scope="module")
def two_runs(tmp_path_factory):
    base = tmp_path_factory.mktemp("p2")
    a, b = base / "a", base / "b"
    r = run_cli(["reproduce", "p2", *ARGS, "--out", a, "--jobs", "2"], timeout=300)
    assert r.returncode == 0, r.stderr
    r = run_cli(["reproduce", "aggregation", *ARGS, "--out", b, "--jobs", "1"], timeout=300)
    assert r.returncode == 0, r.stderr
    return a, b


def rows(out: Path):
    with open(out / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def test_outputs_exist(two_runs):
    out, _ = two_runs
    for name in [
        "report.md",
        "results.csv",
        "summary.json",
        "heatmap.png",
        "scenarios/matrix-blest-bbr-1.toml",
        "scenarios/single-kt-cubic-2.toml",
    ]:
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provenance"]["seeds"] == 2 and summary["provenance"]["runs"] == len(rows(out)) == 36
    report = (out / "report.md").read_text()
    for needle in [
        "Scheduler × congestion control",
        "Single operator",
        "P2's findings",
        "Ramp-up",
        "Where mobipath differs",
        "git revision",
    ]:
        assert needle in report, needle


def test_rows_and_physics(two_runs):
    rs = rows(two_runs[0])
    m = [r for r in rs if r["block"] == "matrix"]
    assert {(r["scheduler"], r["cc"], int(r["seed"])) for r in m} == {
        (s, c, k) for s in ("minrtt", "blest") for c in ("lia", "cubic", "bbr") for k in (1, 2)
    }
    for r in m:
        g, skt, kt = float(r["goodput_mbps"]), float(r["skt_goodput_mbps"]), float(r["kt_goodput_mbps"])
        # Both operators carry traffic, and the sum stays below the uplinks' sum plus the
        # capacity process's excursions (15 % log s.d.).
        assert skt > 5 and kt > 15 and g < 54.11 * 1.35, r
        assert 0 < float(r["ramp_up_s"]) < 15, r
    single = {(r["operator"], r["cc"], int(r["seed"])): float(r["goodput_mbps"]) for r in rs if r["block"] == "single"}
    for seed in (1, 2):
        # Aggregation: the two-operator tunnel beats the better operator alone in the same seed.
        best_single = max(v for (op, c, s), v in single.items() if s == seed)
        assert all(float(r["goodput_mbps"]) > 1.2 * best_single for r in m if int(r["seed"]) == seed)
    # Another user's flow on SKT takes part of SKT's uplink from the tunnel, in every pair.
    cong = {(r["scheduler"], r["cc"], int(r["seed"])): r for r in rs if r["block"] == "congested"}
    assert set(cong) == {(s, c, k) for s in ("minrtt", "blest") for c in ("lia", "cubic", "bbr") for k in (1, 2)}
    plain = {(r["scheduler"], r["cc"], int(r["seed"])): r for r in m}
    for k, r in cong.items():
        assert float(r["skt_goodput_mbps"]) < 0.8 * float(plain[k]["skt_goodput_mbps"]), (k, r)
    # The capacity process follows the seed: the two repetitions differ.
    assert single[("kt", "cubic", 1)] != single[("kt", "cubic", 2)]


def test_report_numbers_are_computed_from_results(two_runs):
    out, _ = two_runs
    rs = rows(out)
    report = (out / "report.md").read_text()
    section = report.split("## Scheduler × congestion control", 1)[1].split("##", 1)[0]
    line = next(ln for ln in section.splitlines() if ln.startswith("| BLEST |"))
    cells = [c.strip() for c in line.strip("|").split("|")]
    header = next(ln for ln in section.splitlines() if ln.startswith("| scheduler |"))
    cols = [c.strip() for c in header.strip("|").split("|")]
    shown = float(re.match(r"[\d.]+", cells[cols.index("BBR")]).group())
    vals = [
        float(r["goodput_mbps"])
        for r in rs
        if r["block"] == "matrix" and r["scheduler"] == "blest" and r["cc"] == "bbr"
    ]
    assert shown == pytest.approx(statistics.mean(vals), abs=0.006)


def test_reruns_are_identical(two_runs):
    a, b = two_runs
    assert (a / "results.csv").read_text() == (b / "results.csv").read_text()

    def strip(s):
        return re.sub(r"(wall time s|jobs|command|reused runs)[^\n]*", "", s)

    assert strip((a / "report.md").read_text()) == strip((b / "report.md").read_text())


def test_capacity_process_is_seeded_and_centred():
    from mobipath.experiments.p2 import OPERATORS, capacity_schedule

    a, b = capacity_schedule("kt", 1, 600), capacity_schedule("kt", 1, 600)
    assert a == b and capacity_schedule("kt", 2, 600) != a
    assert [t for t, _ in a] == [float(i) for i in range(600)]
    mean = statistics.mean(r for _, r in a)
    assert mean == pytest.approx(OPERATORS["kt"][0], rel=0.05)
    assert all(r > 0 for _, r in a)
