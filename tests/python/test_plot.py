"""`mobipath plot RESULT_DIR` and the compact MPTCP summary on the terminal."""

from __future__ import annotations

import io
import json

import pytest
from conftest import ROOT, run_cli
from mobipath.display import print_summary, write_plain_summary
from mobipath.plot import PlotError, plot_result
from mobipath.results import timeseries_frame
from rich.console import Console

P0 = ROOT / "scenarios" / "p0" / "hst-minrtt.toml"


@pytest.fixture(scope="module")
def train_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("plot") / "train"
    r = run_cli(["run", P0, "--seed", "2", "--out", out, "-q"], timeout=120)
    assert r.returncode == 0, r.stderr
    return out


def test_plot_writes_png_and_svg_with_subflow_rows_and_handovers(train_run, tmp_path):
    r = run_cli(["plot", train_run])
    assert r.returncode == 0, r.stderr
    png = train_run / "flow-mptcp.png"
    assert r.stdout.split() == [str(png)]
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    r = run_cli(["plot", train_run, "--format", "svg", "--out", tmp_path / "figs"])
    assert r.returncode == 0, r.stderr
    svg = (tmp_path / "figs" / "flow-mptcp.svg").read_text()
    assert "<svg" in svg
    summary = json.loads((train_run / "summary.json").read_text())
    done = plot_result(train_run, fmt="svg", out_dir=tmp_path / "again")
    # one row for the connection and one per subflow; every handover of the summary marked
    assert done.rows["mptcp"] == ["flow mptcp"] + [
        f"subflow {s['path']}" for s in summary["flows"]["mptcp"]["subflows"]
    ]
    assert done.rows["mptcp"][1:] == ["subflow via-a", "subflow via-b"]  # named after their paths
    assert summary["handovers"] and done.handover_spans["mptcp"] == len(summary["handovers"])


def test_subflow_names_come_from_the_data(tmp_path):
    """Subflow series are named `<flow>/<anything>` (e.g. after their paths), not only by index."""
    t = [i / 10 for i in range(50)]
    cols = {"time_s": [], "kind": [], "name": [], "metric": [], "value": []}
    for kind, name in (("flow", "conn"), ("subflow", "conn/lte-a"), ("subflow", "conn/wifi")):
        for metric in ("goodput_mbps", "cwnd_segments", "srtt_ms"):
            for x in t:
                for k, v in zip(cols, (x, kind, name, metric, 1.0 + x)):
                    cols[k].append(v)
    timeseries_frame(cols).write_parquet(tmp_path / "timeseries.parquet")
    summary = {
        "duration_s": 5,
        "flows": {"conn": {"protocol": "mptcp", "subflows": [{"name": "lte-a"}, {"name": "wifi"}]}},
        "handovers": [
            {"start_s": 1.0, "end_s": 1.04, "operator": "A"},
            {"start_s": 3.0, "end_s": 3.05, "operator": "B"},
        ],
    }
    (tmp_path / "summary.json").write_text(json.dumps(summary))
    done = plot_result(tmp_path, fmt="svg")
    assert done.rows["conn"] == ["flow conn", "subflow lte-a", "subflow wifi"]
    assert done.handover_spans["conn"] == 2
    svg = (tmp_path / "flow-conn.svg").read_text()
    assert "subflow lte-a" in svg and "subflow wifi" in svg


def _one_flow_series(tmp_path, name):
    cols = {"time_s": [], "kind": [], "name": [], "metric": [], "value": []}
    for metric in ("goodput_mbps", "cwnd_segments", "srtt_ms"):
        for x in (0.0, 0.1, 0.2):
            for k, v in zip(cols, (x, "flow", name, metric, 1.0)):
                cols[k].append(v)
    timeseries_frame(cols).write_parquet(tmp_path / "timeseries.parquet")


def test_a_300_character_flow_name_plots(tmp_path):
    """validate and run accept any flow name; its figure's file name must still fit (255 bytes)."""
    long_a, long_b = "a" * 299 + "1", "a" * 299 + "2"
    cols = {"time_s": [], "kind": [], "name": [], "metric": [], "value": []}
    for name in (long_a, long_b, "x y", "x_y", "odd $\\frac$ name"):
        for metric in ("goodput_mbps", "cwnd_segments", "srtt_ms"):
            for x in (0.0, 0.1):
                for k, v in zip(cols, (x, "flow", name, metric, 1.0)):
                    cols[k].append(v)
    timeseries_frame(cols).write_parquet(tmp_path / "timeseries.parquet")
    (tmp_path / "summary.json").write_text(json.dumps({"duration_s": 0.2, "flows": {}}))
    done = plot_result(tmp_path)
    names = [p.name for p in done.files]
    assert len(set(names)) == 5, names  # distinct files, also for names alike after replacing characters
    assert all(len(n) <= 120 and (tmp_path / n).is_file() for n in names), names
    assert names[2] == "flow-x_y.png"


@pytest.mark.parametrize(
    "summary",
    [
        "[]",
        '"text"',
        "3",
        '{"flows": 3}',
        '{"handovers": 5}',
        '{"handovers": [{"start_s": "a"}, 7]}',
        '{"duration_s": "long"}',
        '{"flows": {"f": 1}, "handovers": [{"start_s": 1e400, "operator": []}]}',
    ],
)
def test_a_malformed_summary_is_refused_or_ignored_in_one_line(tmp_path, summary):
    _one_flow_series(tmp_path, "f")
    (tmp_path / "summary.json").write_text(summary)
    if summary.startswith("{"):
        assert plot_result(tmp_path).files  # the malformed parts are ignored
    else:
        with pytest.raises(PlotError, match="summary.json: not a summary \\(a JSON"):
            plot_result(tmp_path)
    if summary == "[]":  # the reported case, through the command: one line, no traceback
        r = run_cli(["plot", tmp_path])
        assert r.returncode == 1 and "summary.json: not a summary (a JSON list" in r.stderr, r.stderr
        assert "Traceback" not in r.stderr and "AttributeError" not in r.stderr, r.stderr


def test_plot_errors_are_one_line(tmp_path):
    r = run_cli(["plot", tmp_path])
    assert r.returncode == 1 and "summary.json: not found" in r.stderr and "Traceback" not in r.stderr
    with pytest.raises(PlotError, match="--format"):
        plot_result(tmp_path, fmt="jpg")


def test_mptcp_summary_is_compact_with_a_subflow_table():
    summary = {
        "duration_s": 10,
        "flows": {
            "tcp": {"protocol": "tcp", "goodput_mbps": 9.5, "timeouts": 0},
            "mp": {
                "protocol": "mptcp",
                "scheduler": "minrtt",
                "cc": "lia",
                "goodput_mbps": 40.25,
                "reinjections": 3,
                "penalisations": 77,
                "scheduler_waits": 12345,
                "subflows": [
                    {"name": "mp/via-a", "goodput_mbps": 30.5, "mean_rtt_ms": 41.5},
                    {"name": "via-b", "goodput_mbps": 9.75, "mean_rtt_ms": 80.25},
                ],
            },
        },
    }
    console = Console(width=120, record=True, file=io.StringIO())
    print_summary(console, summary)
    text = console.export_text()
    assert "MPTCP flows" in text and "Subflows of mp" in text
    sub = text.split("Subflows of mp")[1]
    assert "via-a" in sub and "30.5" in sub and "via-b" in sub and "80.25" in sub
    # the connection table is the compact one: no rarely read counters
    assert "40.25" in text and "scheduler_waits" not in text and "12345" not in text
    # single-path flows keep their own table
    assert "Flows" in text.split("MPTCP flows")[0] and "9.5" in text


def test_plain_summary_shows_what_rich_shows():
    # `mobipath run` into a file or pipe writes the tables as plain text (no rich import): the
    # same titles, labels and cells, in the same order, as rich draws on a terminal of that width.
    summary = {
        "duration_s": 10,
        "seed": 3,
        "flows": {
            "tcp": {"protocol": "tcp", "goodput_mbps": 9.5, "timeouts": 0, "mean_rtt_ms": 41.25},
            "mp": {
                "protocol": "mptcp",
                "scheduler": "minrtt",
                "cc": "lia",
                "goodput_mbps": 40.25,
                "reinjections": 3,
                "subflows": [
                    {"name": "mp/via-a", "goodput_mbps": 30.5, "mean_rtt_ms": 41.5},
                    {"name": "via-b", "goodput_mbps": 9.75, "mean_rtt_ms": 80.25},
                ],
            },
        },
        "links": {
            f"l{i}": {
                "drops": i,
                "utilization": 0.5 + i / 100,
                "bytes_sent": 10**9 + i,
                "drop_ratio": 0.001 * i,
                "mean_queue_packets": 12.5,
            }
            for i in range(3)
        },
    }
    for width in (200, 76):  # wide: a row per link; narrower: the links table turns to a row per metric
        console = Console(width=width, record=True, file=io.StringIO())
        print_summary(console, summary)
        rich_words = [w for w in console.export_text().split() if any(c.isalnum() for c in w)]
        out = io.StringIO()
        write_plain_summary(out, summary, width=width)
        plain_words = out.getvalue().split()
        assert plain_words == rich_words, (width, plain_words, rich_words)
    # the narrow layout really is the transposed one
    assert "metric" in plain_words and "l2" in plain_words
