"""scripts/bench-vs-htsim (docs/performance.md): runs every workload through each mobipath given
and the htsim stand-ins, and reports a median, a minimum and a ratio per command. htsim is not
packaged, so `true` stands in for its drivers, and three 10 ms scenarios for its workloads."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from conftest import ROOT, cli_env, short_example


def test_bench_vs_htsim_reports_every_workload_and_command(tmp_path):
    tiny = short_example()
    for name in ("tiny-0.01s.toml", "tcp-newreno-100m-60s.toml", "mptcp-lia-2x25-70s.toml"):
        (tmp_path / name).write_text(tiny)
    mobipath = Path(sys.executable).parent / "mobipath"
    assert mobipath.exists(), mobipath
    env = cli_env({"HTSIM_SCENARIOS": str(tmp_path)})
    r = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench-vs-htsim"), "true", "true", str(mobipath), "--pairs", "2"],
        capture_output=True,
        text=True,
        env=env,
        timeout=300,
        cwd=tmp_path,
    )
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    titles = [ln for ln in lines if ln.endswith("(2 rounds)")]
    assert len(titles) == 3, r.stdout
    rows = [ln for ln in lines if "ratio to htsim" in ln]
    assert len(rows) == 6, r.stdout
    assert sum(1 for ln in rows if ln.strip().startswith(str(mobipath)[:50])) == 3, r.stdout
    assert all(" ms (min " in ln for ln in rows), r.stdout
    # A bad count is refused with the option's name.
    bad = subprocess.run(
        [sys.executable, str(ROOT / "scripts" / "bench-vs-htsim"), "true", "true", "--pairs", "0"],
        capture_output=True,
        text=True,
        env=env,
        timeout=60,
    )
    assert bad.returncode != 0 and "--pairs" in bad.stderr
    assert not any(p.name.startswith("r") for p in tmp_path.iterdir() if p.is_dir()), (
        "results left in the working directory"
    )
