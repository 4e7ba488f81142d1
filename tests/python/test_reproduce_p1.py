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
    lines = [ln for ln in section.splitlines() if ln.startswith("| ")]
    header = [c.strip() for c in lines[0].strip("|").split("|")]
    assert header[0] == first_col, header
    out = {}
    for ln in lines[1:]:
        cells = [c.strip() for c in ln.strip("|").split("|")]
        if cells[0] == first_col:
            break  # the next table
        out[cells[0]] = dict(zip(header[1:], cells[1:]))
    return out


def test_outputs_exist(two_runs):
    out, _ = two_runs
    for name in [
        "report.md",
        "results.csv",
        "summary.json",
        "fig8-throughput.png",
        "fig9-rcvbuf.png",
        "fig10-recovery-time.png",
        "fig11-rcvbuf.png",
        "scenarios/s1-delay-predictive-1.toml",
        "scenarios/s2-proposed-150.toml",
        "scenarios/s1-delay-predictive-fifo-50.toml",
        "scenarios/s1-minrtt-5-lia.toml",
    ]:
        assert (out / name).is_file() and (out / name).stat().st_size > 0, name
    summary = json.loads((out / "summary.json").read_text())
    # 24 scenario-1 + 12 scenario-2 runs, 2 literal-FIFO runs, 16 sensitivity runs (CUBIC and BBR:
    # TCP, minRTT, delay-predictive; LIA: the two MPTCP ones).
    assert summary["provenance"]["seeds"] == 2 and summary["provenance"]["runs"] == 54
    assert summary["provenance"]["headline_cc"] == "reno"
    report = (out / "report.md").read_text()
    for needle in [
        "Scenario 1",
        "Scenario 2",
        "Against the paper's shape",
        "git revision",
        "from detection",
        "Worked examples",
        "Where the receive buffer's packets come from",
        "Sensitivity to the congestion control",
        "P1 names no congestion control",
        "Flatness of",
    ]:
        assert needle in report, needle


def test_one_row_per_point_and_seed(two_runs):
    rs = rows(two_runs[0])
    keys = {(r["scenario"], r["variant"], float(r["x"]), int(r["seed"])) for r in rs}
    keys = {(r["scenario"], r["variant"], float(r["x"]), r["cc"], int(r["seed"])) for r in rs}
    s1 = {
        ("s1", v, x, "reno", s)
        for v in ("tcp", "minrtt", "roundrobin", "delay-predictive")
        for x in (1, 5, 50)
        for s in (1, 2)
    }
    s2 = {
        ("s2", v, x, "reno", s) for v in ("standard", "standard+recovery", "proposed") for x in (5, 150) for s in (1, 2)
    }
    fifo = {("s1", "delay-predictive-fifo", 50.0, "reno", s) for s in (1, 2)}
    sens = {
        ("s1", v, 5.0, cc, s)
        for v in ("tcp", "minrtt", "delay-predictive")
        for cc in ("cubic", "lia", "bbr")
        for s in (1, 2)
        if not (v == "tcp" and cc == "lia")
    }
    assert keys == s1 | s2 | fifo | sens and len(rs) == len(keys)
    # Single-path TCP on path 1 does not depend on path 2's rate or the seed (the full run reuses
    # one TCP run per controller for every rate and seed: tcp_stand_ins).
    tcp = {}
    for r in rs:
        if r["variant"] == "tcp":
            tcp.setdefault(r["cc"], set()).add(tuple(v for k, v in r.items() if k not in ("x", "seed")))
    assert tcp and all(len(v) == 1 for v in tcp.values()), tcp
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
        vals = [
            float(r["goodput_mbps"])
            for r in rs
            if r["scenario"] == "s1" and r["variant"] == variant and float(r["x"]) == float(x) and r["cc"] == "reno"
        ]
        shown = float(re.match(r"[\d.]+", t[x][col]).group())
        assert shown == pytest.approx(statistics.fmean(vals), abs=6e-3), (x, col)
    # Scenario 2: recovery time from detection is the mean over seeds of each run's mean; the
    # path-2 share is subflow 1's goodput over the connection's.
    t = table(report, "## Scenario 2", "path-2 delay (ms)")
    for variant, col in [
        ("standard", "standard (round robin)"),
        ("standard+recovery", "round robin + receiver-based recovery"),
    ]:
        sel = [
            r
            for r in rs
            if r["scenario"] == "s2" and r["variant"] == variant and float(r["x"]) == 150.0 and r["cc"] == "reno"
        ]
        det = [
            float(r["path2_recovery_from_detection_mean_ms"]) for r in sel if r["path2_recovery_from_detection_mean_ms"]
        ]
        share = [float(r["subflow1_goodput_mbps"]) / float(r["goodput_mbps"]) for r in sel]
        cells = [c.strip() for c in t["150"][col].split(" / ")]
        assert float(re.match(r"[\d.]+", cells[0]).group()) == pytest.approx(statistics.fmean(det), abs=0.06), cells
        assert float(re.match(r"[\d.]+", cells[3]).group()) == pytest.approx(100 * statistics.fmean(share), abs=0.06), (
            cells
        )


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
    p = subprocess.Popen(
        cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=cli_env(), start_new_session=True
    )
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
    # The message counts runs as the bar does (it counted files: "1200 finished" beside a bar at
    # 1198); every one it counts is kept (a worker may have kept one more it never reported).
    said = re.search(r"interrupted; (\d+) of 54 runs finished and are kept", err)
    bar = re.findall(r"P1 runs\D*?(\d+)/54", err)
    assert said and bar and int(said.group(1)) == int(bar[-1]) <= kept, err
    assert 3 <= kept < 54 and not (out / "results.csv").exists()
    r = run_cli(["reproduce", "p1", *ARGS, "--out", out, "--jobs", "2"], timeout=180)
    assert r.returncode == 0, r.stderr
    assert f"resuming: up to {kept} finished results" in r.stderr and f"({kept} reused)" in r.stderr, r.stderr
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


def test_worked_examples_are_in_the_report(two_runs):
    """Figs. 5 and 6 as replayed by the simulator: the paper's assignments and the request."""
    report = (two_runs[0] / "report.md").read_text()
    fig5, fig6 = report.split("**Fig. 5")[1].split("**Fig. 6")
    fig6 = fig6.split("## Scenario 1")[0]

    def rows_of(section):
        return [[c.strip() for c in ln.strip("|").split("|")] for ln in section.splitlines() if re.match(r"\| \d", ln)]

    assert [r[1] for r in rows_of(fig5)][:5] == ["1", "1", "1", "2", "1"]
    r6 = {r[0]: r for r in rows_of(fig6)}
    assert [r6[str(k)][1] for k in range(1, 11)] == ["1"] * 6 + ["2", "2", "1", "2"]
    assert r6["7"][4] == "lost" and "asks for packet 7 on path 1" in r6["10"][5]
    assert r6["7 (copy)"][1] == "1" and r6["7 (copy)"][3] == r6["7 (copy)"][4]


def test_comparisons_are_paired_differences(two_runs):
    """The scenario-1 comparison table shows delay-predictive − minRTT paired by seed, and the verdict
    words follow the CI: 'no difference' exactly when it contains 0."""
    from mobipath.experiments.common import mean_ci

    out, _ = two_runs
    rs = rows(out)
    report = (out / "report.md").read_text()
    by = {
        (r["variant"], float(r["x"]), int(r["seed"])): float(r["rcvbuf_mean_packets"] or "nan")
        for r in rs
        if r["scenario"] == "s1" and r["cc"] == "reno"
    }
    m, ci = mean_ci([by[("delay-predictive", 5.0, s)] - by[("minrtt", 5.0, s)] for s in (1, 2)])
    t = table(report, "**Against the paper's shape** (paired", "path-2 rate (Mbit/s)")
    cell = t["5"]["buffer delay-predictive − minRTT (packets)"]
    shown = re.match(r"([+-][\d.]+) ± ([\d.]+)", cell)
    assert (
        shown
        and float(shown.group(1)) == pytest.approx(m, abs=0.06)
        and float(shown.group(2)) == pytest.approx(ci, abs=0.06)
    )
    line = next(ln for ln in report.splitlines() if ln.startswith("- Receive buffer, delay-predictive − minRTT"))
    word = "no difference" if m - ci <= 0 <= m + ci else ("more" if m > 0 else "fewer")
    assert re.search(rf"{word} at [^;]*\b5\b", line), line


def test_paired_difference_and_its_verdict():
    from mobipath.experiments.paired import paired

    same = paired({1: 10.0, 2: 12.0, 3: 11.0}, {1: 10.0, 2: 12.0, 3: 11.0})
    assert same.mean == 0 and same.sign == 0 and same.words() == "no difference"
    up = paired({1: 11.0, 2: 13.1, 3: 12.0, 4: None}, {1: 10.0, 2: 12.0, 3: 11.0, 4: 5.0})
    assert up.n == 3 and up.sign == 1 and up.words("more", "fewer") == "more"
    # A large mean difference with a CI that contains 0 is not a difference.
    noisy = paired({1: 30.0, 2: -10.0}, {1: 0.0, 2: 0.0})
    assert noisy.mean == 10.0 and noisy.sign == 0
    assert paired({1: 1.0}, {1: 0.0}).sign is None  # one seed: no CI, no verdict


def _s2_rows(det_by_variant, share_by_variant, seeds=4):
    """Synthetic scenario-2 rows: det[v][x] = (mean, per-seed step), share[v][x]."""
    out = []
    for v, per_x in det_by_variant.items():
        for x, (mean, step) in per_x.items():
            for s in range(1, seeds + 1):
                out.append(
                    {
                        "scenario": "s2",
                        "variant": v,
                        "x": x,
                        "cc": "reno",
                        "seed": s,
                        "path2_share": share_by_variant[v][x],
                        "path2_recovery_from_detection_mean_ms": mean + step * (s - (seeds + 1) / 2),
                    }
                )
    return out


def test_flatness_is_judged_only_where_path_2_carries_its_share():
    from mobipath.experiments.p1 import flatness

    share = {"standard": {5.0: 0.5, 50.0: 0.4, 150.0: 0.1}, "standard+recovery": {5.0: 0.5, 50.0: 0.3, 150.0: 0.05}}
    # Recovery grows by 10 ms from 5 to 50 ms, the default by 100: 10 < 0.25 × 100 -> holds. The
    # 150 ms point (path 2 nearly idle) would make it look flatter still, and is left out.
    rows = _s2_rows(
        {
            "standard": {5.0: (10, 1), 50.0: (110, 1), 150.0: (400, 1)},
            "standard+recovery": {5.0: (10, 1), 50.0: (20, 1), 150.0: (10, 1)},
        },
        share,
    )
    f = flatness(rows, "standard+recovery")
    assert f["delays"] == [5.0, 50.0] and f["holds"] is True
    assert f["growth"].mean == pytest.approx(10) and f["default_growth"].mean == pytest.approx(100)
    # Growing by 40 ms against the default's 100 fails (40 > 25).
    rows = _s2_rows(
        {
            "standard": {5.0: (10, 1), 50.0: (110, 1), 150.0: (400, 1)},
            "standard+recovery": {5.0: (10, 1), 50.0: (50, 1), 150.0: (10, 1)},
        },
        share,
    )
    assert flatness(rows, "standard+recovery")["holds"] is False
    # Path 2 below 20 % everywhere but one delay: not testable.
    rows = _s2_rows(
        {"standard": {5.0: (10, 1), 50.0: (110, 1)}, "standard+recovery": {5.0: (10, 1), 50.0: (20, 1)}},
        {v: {5.0: 0.5, 50.0: 0.1} for v in share},
    )
    assert flatness(rows, "standard+recovery")["holds"] is None


def test_tcp_stand_ins_reuse_one_run_per_controller():
    from mobipath.experiments.p1 import plan, tcp_stand_ins

    keys = plan(("s1", "s2"), 10, quick=False)
    st = tcp_stand_ins(keys)
    tcp = [k for k in keys if k[1] == "tcp"]
    assert len(tcp) == 80 + 2 * 2 * 10 and len(st) == len(tcp) - 3  # Reno, CUBIC, BBR: one run each
    assert all(st[k][1] == "tcp" and st[k][3] == k[3] and st[k][4] == 1 for k in st)
    assert not any(k[1] != "tcp" for k in st)
