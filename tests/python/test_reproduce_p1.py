"""`mobipath reproduce p1` (alias `heterogeneous`): a quick end-to-end run writes the report, the
figures, the scenarios and one results row per run; the report's numbers come from results.csv;
reruns with other parallelism are identical."""
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
    base = tmp_path_factory.mktemp("p1")
    a, b = base / "a", base / "b"
    r = run_cli(["reproduce", "p1", *ARGS, "--out", a, "--jobs", "2"], timeout=180)
    assert r.returncode == 0, r.stderr
    r = run_cli(["reproduce", "heterogeneous", *ARGS, "--out", b, "--jobs", "1"], timeout=180)
    assert r.returncode == 0, r.stderr
    return a, b


def rows(out: Path):
    with open(out / "results.csv", newline="") as f:
        return list(csv.DictReader(f))


def table(report: str, heading: str, first_col: str):
    """The rows of the first Markdown table after `heading`, keyed by their first cell."""
    section = report.split(heading, 1)[1]
    lines = [l for l in section.splitlines() if l.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[0] == first_col, header
    out = {}
    for l in lines[1:]:
        cells = [c.strip() for c in l.strip("|").split("|")]
        if cells[0] == first_col:
            break  # the next table
        out[cells[0]] = dict(zip(header[1:], cells[1:]))
    return out


def test_outputs_exist(two_runs):
    out, _ = two_runs
    for name in ["report.md", "results.csv", "summary.json", "fig8-throughput.png", "fig9-rcvbuf.png",
                 "fig10-recovery-time.png", "fig11-rcvbuf.png", "scenarios/s1-delay-predictive-1.toml",
                 "scenarios/s2-proposed-150.toml"]:
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    assert summary["provenance"]["seeds"] == 2 and summary["provenance"]["runs"] == 36
    report = (out / "report.md").read_text()
    for needle in ["Scenario 1", "Scenario 2", "Against the paper's shape", "git revision", "from detection"]:
        assert needle in report, needle


def test_one_row_per_point_and_seed(two_runs):
    rs = rows(two_runs[0])
    keys = {(r["scenario"], r["variant"], float(r["x"]), int(r["seed"])) for r in rs}
    s1 = {("s1", v, x, s) for v in ("tcp", "minrtt", "roundrobin", "delay-predictive") for x in (1, 5, 50) for s in (1, 2)}
    s2 = {("s2", v, x, s) for v in ("standard", "standard+recovery", "proposed") for x in (5, 150) for s in (1, 2)}
    assert keys == s1 | s2 and len(rs) == len(keys)
    # TCP rows have no MPTCP metrics; every MPTCP row has its buffer occupancy.
    assert all(r["rcvbuf_mean_packets"] == "" for r in rs if r["variant"] == "tcp")
    assert all(float(r["rcvbuf_mean_packets"]) > 0 for r in rs if r["variant"] != "tcp")


def test_report_numbers_are_computed_from_results(two_runs):
    out, _ = two_runs
    rs = rows(out)
    report = (out / "report.md").read_text()
    # Scenario 1 goodput: mean over seeds of the CSV values.
    t = table(report, "## Scenario 1", "path-2 rate (Mbit/s)")
    for x, col, variant in [("1", "MPTCP minRTT", "minrtt"), ("5", "MPTCP delay-predictive", "delay-predictive")]:
        vals = [float(r["goodput_mbps"]) for r in rs if r["scenario"] == "s1" and r["variant"] == variant and float(r["x"]) == float(x)]
        shown = float(re.match(r"[\d.]+", t[x][col]).group())
        assert shown == pytest.approx(statistics.fmean(vals), abs=6e-3), (x, col)
    # Scenario 2 recovery time from detection: pooled over losses (weighted by their number).
    t = table(report, "## Scenario 2", "path-2 delay (ms)")
    for variant, col in [("standard", "standard (round robin)"), ("standard+recovery", "round robin + receiver-based recovery")]:
        sel = [r for r in rs if r["scenario"] == "s2" and r["variant"] == variant and float(r["x"]) == 150.0]
        n = sum(int(r["path2_losses"]) for r in sel)
        pooled = sum(float(r["path2_recovery_from_detection_mean_ms"]) * int(r["path2_losses"]) for r in sel if r["path2_losses"] != "0") / n
        m = re.match(r"([\d.]+) / ([\d.]+) \((\d+)\)", t["150"][col])
        assert m, t["150"][col]
        assert float(m.group(2)) == pytest.approx(pooled, abs=0.06) and int(m.group(3)) == n


def test_identical_invocations_give_identical_results(two_runs):
    a, b = two_runs
    assert (a / "results.csv").read_bytes() == (b / "results.csv").read_bytes()


def test_bad_options_are_reported(tmp_path):
    r = run_cli(["reproduce", "p1", "--scenario", "s3", "--out", tmp_path / "x"])
    assert r.returncode != 0 and "--scenario" in (r.stderr + r.stdout)
    r = run_cli(["reproduce", "p1", "--seeds", "0", "--out", tmp_path / "y"])
    assert r.returncode != 0 and "seeds" in (r.stderr + r.stdout).lower()


def test_ctrl_c_stops_at_once_and_the_next_invocation_resumes(two_runs, tmp_path):
    """Ctrl-C (SIGINT to the process group, as a terminal sends it) exits within a second with
    code 130 and keeps the finished runs; the same command then reuses them, and the results
    equal an uninterrupted run's."""
    import os
    import signal
    import subprocess
    import time

    from conftest import cli_env, mobipath_command

    out = tmp_path / "r"
    cmd = mobipath_command() + ["reproduce", "p1", *ARGS, "--out", str(out), "--jobs", "2"]
    p = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(),
                         start_new_session=True)
    deadline = time.monotonic() + 120
    while len(list((out / "runs").glob("*.json"))) < 3 and time.monotonic() < deadline and p.poll() is None:
        time.sleep(0.05)
    assert p.poll() is None, "finished before it could be interrupted"
    t0 = time.monotonic()
    os.killpg(p.pid, signal.SIGINT)
    _, err = p.communicate(timeout=30)
    assert time.monotonic() - t0 < 1.5
    assert p.returncode == 130, err
    assert "interrupted" in err and "run the same command again to resume" in err and "Traceback" not in err, err
    kept = len(list((out / "runs").glob("*.json")))
    assert 3 <= kept < 36 and not (out / "results.csv").exists()
    r = run_cli(["reproduce", "p1", *ARGS, "--out", out, "--jobs", "2"], timeout=180)
    assert r.returncode == 0, r.stderr
    assert f"resuming: {kept} finished results" in r.stderr and f"({kept} reused)" in r.stderr, r.stderr
    assert json.loads((out / "summary.json").read_text())["provenance"]["reused_runs"] == kept
    assert (out / "results.csv").read_bytes() == (two_runs[0] / "results.csv").read_bytes()
    # --fresh discards them
    r = run_cli(["reproduce", "p1", *ARGS, "--out", out, "--jobs", "2", "--fresh"], timeout=180)
    assert r.returncode == 0 and "reused" not in r.stderr, r.stderr
    assert (out / "results.csv").read_bytes() == (two_runs[0] / "results.csv").read_bytes()


def test_kept_runs_are_keyed_by_what_determines_them(tmp_path, monkeypatch):
    from mobipath import provenance
    from mobipath.experiments.common import RunCache

    c = RunCache(tmp_path)
    c.put("scenario A, seed 1", {"goodput": 1.5})
    assert c.get("scenario A, seed 1") == {"goodput": 1.5}
    assert c.get("scenario A, seed 2") is None and c.get("scenario B, seed 1") is None
    monkeypatch.setattr(provenance, "version", lambda: "99.0")  # another mobipath: nothing reused
    assert RunCache(tmp_path).get("scenario A, seed 1") is None
