"""`mobipath reproduce p3` (alias `handoff`): a quick end-to-end run writes the report, the
figures, the scenarios and one results row per run; the report's numbers come from results.csv;
the paper's shape holds (Tahoe times out in every handoff, EHN never); reruns with other
parallelism are identical."""

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
    base = tmp_path_factory.mktemp("p3")
    a, b = base / "a", base / "b"
    r = run_cli(["reproduce", "p3", *ARGS, "--out", a, "--jobs", "2"], timeout=300)
    assert r.returncode == 0, r.stderr
    r = run_cli(["reproduce", "handoff", *ARGS, "--out", b, "--jobs", "1"], timeout=300)
    assert r.returncode == 0, r.stderr
    return a, b


def rows(out: Path):
    with open(out / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def table(report: str, heading: str, first_col: str):
    """The rows of the first Markdown table after `heading` whose header starts with `first_col`."""
    section = report.split(heading, 1)[1]
    lines = [ln for ln in section.splitlines() if ln.startswith("| ")]
    start = next(i for i, ln in enumerate(lines) if ln.strip("| ").startswith(first_col))
    header = [c.strip() for c in lines[start].strip("|").split("|")]
    out = {}
    for ln in lines[start + 1 :]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if cells[0].startswith("---"):
            continue
        if cells[0] == first_col:
            break
        out[cells[0]] = dict(zip(header[1:], cells[1:]))
    return out


def test_outputs_exist(two_runs):
    out, _ = two_runs
    for name in [
        "report.md",
        "results.csv",
        "summary.json",
        "fig2-cwnd.png",
        "fig3-acks.png",
        "sweeps.png",
        "scenarios/paper-ehn-0.toml",
        "scenarios/paper-tahoe-0.toml",
    ]:
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provenance"]["seeds"] == 2
    assert summary["provenance"]["runs"] == len(rows(out))
    report = (out / "report.md").read_text()
    for needle in [
        "P3's experiment",
        "Why the ratio differs",
        "On the P0 train",
        "Where mobipath differs",
        "git revision",
        "EHN − Tahoe (paired over seeds)",
    ]:
        assert needle in report, needle


def test_one_row_per_point_and_seed(two_runs):
    rs = rows(two_runs[0])
    keys = [(r["block"], r["scheme"], float(r["x"]), int(r["seed"])) for r in rs]
    assert len(keys) == len(set(keys))
    blocks = {r["block"] for r in rs}
    assert blocks == {"paper", "det-duration", "duration", "rate", "rtt", "loss", "train"}
    # The deterministic blocks run once; the random ones once per seed.
    assert {k[3] for k in keys if k[0] == "paper"} == {1}
    assert {k[3] for k in keys if k[0] == "duration"} == {1, 2}
    # Every sweep point has every scheme.
    schemes = {r["scheme"] for r in rs if r["block"] == "duration"}
    assert {"tahoe", "ehn", "freeze-tcp", "buffer-freeze", "fr-after-handoff"} <= schemes


def test_the_paper_shape(two_runs):
    rs = {(r["scheme"]): r for r in rows(two_runs[0]) if r["block"] == "paper"}
    tahoe, ehn = rs["tahoe"], rs["ehn"]
    assert int(tahoe["handoffs"]) == 4 and int(ehn["handoffs"]) == 4
    # Tahoe times out in every handoff; EHN never does and gets more through.
    assert int(tahoe["timeouts"]) >= 4 and int(ehn["timeouts"]) == 0
    assert int(ehn["ehn_freezes"]) == 4 and int(ehn["ehn_resumes"]) == 4
    assert float(ehn["goodput_mbps"]) > float(tahoe["goodput_mbps"])
    # EHN's delivery gap is the handoff plus about a round trip; Tahoe's is longer.
    assert 4000 <= float(ehn["mean_handoff_gap_ms"]) < 4200 < float(tahoe["mean_handoff_gap_ms"])
    # Without handoffs Tahoe does better than with them and EHN stays below that bound.
    assert float(rs["tahoe-no-handoff"]["goodput_mbps"]) > float(ehn["goodput_mbps"])


def test_report_numbers_are_computed_from_results(two_runs):
    out, _ = two_runs
    rs = rows(out)
    report = (out / "report.md").read_text()
    paper = {r["scheme"]: r for r in rs if r["block"] == "paper"}
    t = table(report, "## P3's experiment", "scheme")
    assert float(t["Tahoe"]["goodput (Mbit/s)"]) == pytest.approx(float(paper["tahoe"]["goodput_mbps"]), abs=1e-4)
    assert float(t["EHN"]["goodput (Mbit/s)"]) == pytest.approx(float(paper["ehn"]["goodput_mbps"]), abs=1e-4)
    assert int(t["Tahoe"]["timeouts"]) == int(paper["tahoe"]["timeouts"])
    # A sweep cell: mean over seeds of the CSV values.
    t = table(report, "## Sweep: handoff duration", "scheme")
    for label, scheme in [("Tahoe", "tahoe"), ("EHN", "ehn")]:
        for x in ("0.5", "4"):
            vals = [
                float(r["goodput_mbps"])
                for r in rs
                if r["block"] == "duration" and r["scheme"] == scheme and float(r["x"]) == float(x)
            ]
            shown = float(re.match(r"[\d.]+", t[label][x]).group())
            assert shown == pytest.approx(statistics.mean(vals), abs=1e-3), (label, x)


def test_reruns_are_identical(two_runs):
    a, b = two_runs
    assert (a / "results.csv").read_text() == (b / "results.csv").read_text()

    def strip(s):
        return re.sub(r"(wall time s|jobs|command|reused runs)[^\n]*", "", s)

    assert strip((a / "report.md").read_text()) == strip((b / "report.md").read_text())


def test_blocks_flag_is_checked(tmp_path):
    r = run_cli(["reproduce", "p3", "--quick", "--blocks", "paper,nonsense", "--out", tmp_path / "x"], timeout=60)
    assert r.returncode != 0
    assert "nonsense" in r.stderr and "paper" in r.stderr


def test_tahoe_and_ehn_run_under_both_timers(two_runs):
    out, _ = two_runs
    rs = rows(out)
    for block in ("paper", "det-duration", "duration", "loss"):
        schemes = {r["scheme"] for r in rs if r["block"] == block}
        assert {"tahoe-bsd", "ehn-bsd"} <= schemes, block
    assert not any(r["scheme"].endswith("-bsd") for r in rs if r["block"] in ("rate", "rtt", "train"))
    assert 'timer = "bsd"' in (out / "scenarios" / "paper-tahoe-bsd-0.toml").read_text()
    assert "timer" not in (out / "scenarios" / "paper-tahoe-0.toml").read_text()
    paper = {r["scheme"]: r for r in rs if r["block"] == "paper"}
    # The shape holds under the BSD timer too: Tahoe times out in every handoff, EHN never.
    assert int(paper["tahoe-bsd"]["timeouts"]) >= 4 and int(paper["ehn-bsd"]["timeouts"]) == 0
    report = (out / "report.md").read_text()
    t = table(report, "## P3's experiment", "")
    bsd = t["mobipath, BSD timer, goodput (Mbit/s)"]
    ratio = float(paper["ehn-bsd"]["goodput_mbps"]) / float(paper["tahoe-bsd"]["goodput_mbps"])
    assert float(bsd["EHN / Tahoe"].split()[0]) == pytest.approx(ratio, abs=1e-3)
    assert "+8.1 %" in t["P3 §4.2.2 (unit not given)"]["EHN / Tahoe"]
    for heading in ("## Sweep: handoff duration", "## Sweep: random loss"):
        section = report.split(heading, 1)[1].split("\n## ", 1)[0]
        assert "| EHN / Tahoe, BSD timer (ratio of the means; P3: +8.1 %) |" in section, heading
        assert "| EHN / Tahoe (ratio of the means; P3: +8.1 %) |" in section, heading
