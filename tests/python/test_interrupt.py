"""Ctrl-C during `mobipath run` stops the simulation within a second and writes the results so
far, marked partial; the Python API raises KeyboardInterrupt unless asked for partial results."""

import json
import signal
import subprocess
import time

import polars as pl
from conftest import cli_env, mobipath_command

# Long enough that it cannot finish in the test's time (~100 s of wall time at 1 Gbit/s).
LONG = """
seed = 1
duration_s = 3000
[[links]]
name = "l"
rate_mbps = 1000
delay_ms = 5
queue_packets = 1000
[[paths]]
name = "p"
links = ["l"]
[[flows]]
name = "f"
path = "p"
cc = "cubic"
traffic = { kind = "bulk" }
"""


def test_sigint_stops_the_run_and_writes_partial_results(tmp_path):
    sc = tmp_path / "long.toml"
    sc.write_text(LONG)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        mobipath_command() + ["run", str(sc), "--out", str(out), "-q"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=cli_env(),
    )
    time.sleep(3.0)  # start-up and a few simulated seconds
    assert proc.poll() is None, proc.communicate()
    t0 = time.monotonic()
    proc.send_signal(signal.SIGINT)
    _, err = proc.communicate(timeout=30)
    waited = time.monotonic() - t0
    assert proc.returncode == 130, err
    assert waited < 3.0, f"took {waited:.1f} s to stop (writing results included)"  # < 1 s unloaded
    assert "interrupted" in err and "partial" in err
    summary = json.loads((out / "summary.json").read_text())
    stopped = summary["partial"]["stopped_at_s"]
    assert 0 < stopped < 3000
    assert summary["flows"]["f"]["bytes_delivered"] > 0
    assert summary["flows"]["f"]["delivery_errors"] == 0
    ts = pl.read_parquet(out / "timeseries.parquet")
    # Every series ends with the last whole bin before the stop.
    lengths = ts.group_by(["kind", "name", "metric"]).len()["len"].unique().to_list()
    assert len(lengths) == 1 and abs(lengths[0] * 0.1 - stopped) < 0.11, (lengths, stopped)
