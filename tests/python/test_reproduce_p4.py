"""`mobipath reproduce p4` (alias `tdlte`): a quick end-to-end run from a temporary directory
writes the report, the figures, the scenarios and one results row per run; the report's numbers
come from results.csv; reruns (other parallelism, the alias) are identical; the resume cache is
used and --fresh discards it."""

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
    base = tmp_path_factory.mktemp("p4")
    a, b = base / "a", base / "b"
    # From a temporary working directory, with a relative --out: nothing depends on the repository.
    r = run_cli(["reproduce", "p4", *ARGS, "--out", "a", "--jobs", "2"], cwd=base, timeout=180)
    assert r.returncode == 0, r.stderr
    r = run_cli(["reproduce", "tdlte", *ARGS, "--out", "b", "--jobs", "1"], cwd=base, timeout=180)
    assert r.returncode == 0, r.stderr
    return a, b


def rows(out: Path):
    with open(out / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def table(report: str, heading: str, first_col: str):
    """The rows of the first Markdown table after `heading`, keyed by (first cell, second cell)."""
    section = report.split(heading, 1)[1]
    lines = [ln for ln in section.splitlines() if ln.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[0] == first_col, header
    out = {}
    for ln in lines[1:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if cells[0] == first_col:
            break
        out[(cells[0], cells[1])] = dict(zip(header[2:], cells[2:]))
    return out


def test_outputs_exist(two_runs):
    out, _ = two_runs
    for name in [
        "report.md",
        "results.csv",
        "series.csv",
        "summary.json",
        "fig2-throughput.png",
        "sweep-p.png",
        "sweep-ues.png",
        "sweep-duplex.png",
        "sweep-gbr.png",
        "sweep-cw.png",
        "scenarios/none.toml",
        "scenarios/bsr-drop_p=0.031.toml",
    ]:
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    prov = summary["provenance"]
    assert prov["seeds"] == 2 and prov["runs"] == 2 * prov["configurations"]
    report = (out / "report.md").read_text()
    for needle in [
        "## Fig. 2 analogue",
        "## Baselines and schedulers",
        "## Sweeps",
        "## Provenance",
        "git revision",
        "0.029666",
        "0.237329",
        "red-large",
        "ack-prio",
        "tdd2",
        "fdd",
    ]:
        assert needle in report, needle


def test_computed_parameters_are_p4s(two_runs):
    params = json.loads((two_runs[0] / "summary.json").read_text())["aggregates"]["parameters"]
    p = params["bsr-drop_p=paper"]
    assert p["th_cell_n_ref_bytes"] == 438000 and p["th_ue_bytes"] == 4380 and p["m"] == 200
    assert p["p_paper"] == pytest.approx(0.029666) and p["p_consistent"] == pytest.approx(0.237329)
    assert params["bsr-drop_p=0.031"]["p"] == pytest.approx(0.031)


def test_one_row_per_configuration_and_seed(two_runs):
    rs = rows(two_runs[0])
    keys = {(r["config"], int(r["seed"])) for r in rs}
    assert len(keys) == len(rs)
    configs = {r["config"] for r in rs}
    assert {"none", "bsr-drop_p=0.031", "ack-prio", "red-large_p=0.031", "none_mixed=True_ul_sched=pf"} <= configs
    assert all({s for c, s in keys if c == cfg} == {1, 2} for cfg in configs)
    # Policies that never drop at the eNB drop nothing there.
    assert all(float(r["policy_drops"]) == 0 for r in rs if r["config"].startswith(("none", "ack-prio")))


def test_report_numbers_are_computed_from_results(two_runs):
    out, _ = two_runs
    rs = rows(out)
    report = (out / "report.md").read_text()
    t = table(report, "## Fig. 2 analogue", "setup")
    for (setup, variant), cfg in [
        (("p4", "none"), "none"),
        (("p4", "bsr-drop p=0.031"), "bsr-drop_p=0.031"),
        (("mixed-pf", "bsr-drop p=0.031"), "bsr-drop_p=0.031_mixed=True_ul_sched=pf"),
    ]:
        for col, metric in [("DL goodput (Mbit/s)", "dl_goodput_mbps"), ("UL goodput (Mbit/s)", "ul_goodput_mbps")]:
            vals = [float(r[metric]) for r in rs if r["config"] == cfg]
            assert len(vals) == 2
            shown = float(re.match(r"[\d.]+", t[(setup, variant)][col]).group())
            assert shown == pytest.approx(statistics.fmean(vals), abs=6e-3), (setup, variant, col)
    # The paired sentence: its seed count and the share of seeds where the downlink gained.
    m = re.search(
        r"\*\*p4\*\* — bsr-drop \(p = 0\.031\) against none, paired by seed: downlink goodput ([-\d.]+) ± [\d.]+ % "
        r"\((?:significant|not significant: the CI includes 0); 2 seeds\)",
        report,
    )
    assert m, report
    a = {int(r["seed"]): float(r["dl_goodput_mbps"]) for r in rs if r["config"] == "none"}
    b = {int(r["seed"]): float(r["dl_goodput_mbps"]) for r in rs if r["config"] == "bsr-drop_p=0.031"}
    rel = statistics.fmean((b[s] - a[s]) / a[s] for s in a) * 100
    assert float(m.group(1)) == pytest.approx(rel, abs=0.06)


def test_identical_invocations_give_identical_results(two_runs):
    a, b = two_runs
    assert (a / "results.csv").read_bytes() == (b / "results.csv").read_bytes()
    assert (a / "series.csv").read_bytes() == (b / "series.csv").read_bytes()


def test_resume_and_fresh(two_runs, tmp_path):
    import shutil

    out = tmp_path / "r"
    shutil.copytree(two_runs[0] / "runs", out / "runs")
    r = run_cli(["reproduce", "p4", *ARGS, "--out", out, "--jobs", "2"], timeout=180)
    assert r.returncode == 0, r.stderr
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provenance"]["reused_runs"] == summary["provenance"]["runs"]
    assert (out / "results.csv").read_bytes() == (two_runs[0] / "results.csv").read_bytes()
    r = run_cli(["reproduce", "p4", *ARGS, "--out", out, "--jobs", "2", "--fresh"], timeout=180)
    assert r.returncode == 0, r.stderr
    assert json.loads((out / "summary.json").read_text())["provenance"]["reused_runs"] == 0
    assert (out / "results.csv").read_bytes() == (two_runs[0] / "results.csv").read_bytes()


def test_bad_options_are_reported(tmp_path):
    r = run_cli(["reproduce", "p4", "--seeds", "0", "--out", tmp_path / "y"])
    assert r.returncode != 0 and "seeds" in (r.stderr + r.stdout).lower()
