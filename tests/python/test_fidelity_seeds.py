"""The many-seed comparison of `mobipath fidelity --seeds N` (issue 18), with stand-in runners:
seeds on each side, means and 95 % CIs, the report's counts. No root or kernel needed."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from mobipath.emulate import fidelity as fid


def test_mean_ci_uses_student_t() -> None:
    m, h = fid.mean_ci([1.0, 2.0, 3.0])
    assert m == pytest.approx(2.0)
    assert h == pytest.approx(4.303 * 1.0 / 3**0.5, rel=1e-6)
    assert fid.mean_ci([5.0]) == (5.0, 0.0)
    # Beyond the table the next listed quantile (more conservative) is used, then 1.96.
    assert fid.mean_ci([0.0, 1.0] * 100)[1] == pytest.approx(1.96 * 0.50125 / 200**0.5, rel=1e-3)


def _seed_of(text: str) -> int:
    return int(re.search(r"^seed = (\d+)$", text, re.M).group(1))


def test_lossy_rows_use_other_seeds_on_the_kernel_side(tmp_path: Path) -> None:
    seen = {"sim": [], "emu": []}

    def sim(text: str) -> dict:
        seen["sim"].append(_seed_of(text))
        return {"goodput_mbps": 2.0 + 0.1 * _seed_of(text), "segments_retransmitted": 10, "mean_rtt_ms": 50.0}

    def emu(text: str) -> dict:
        k = _seed_of(text) - fid.KERNEL_SEED_BASE
        seen["emu"].append(_seed_of(text))
        return {
            "goodput_mbps": 2.0 + 0.1 * k,
            "segments_retransmitted": 12,
            "mean_rtt_ms": 52.0,
            "_release_p99_us": 40.0 + k,
        }

    c = fid.Config(20, 50, 0.005, "reno")
    r = fid.run_row(c, 15.0, 3.0, reduced=False, seeds=4, sim_run=sim, emu_run=emu)
    assert seen == {"sim": [1, 2, 3, 4], "emu": [1001, 1002, 1003, 1004]}
    assert r.seeds == 4 and r.sim_goodput_mbps == pytest.approx(2.25) and r.emu_goodput_mbps == pytest.approx(2.25)
    assert r.difference == pytest.approx(0.0) and r.cis_overlap
    assert r.sim_ci_mbps == pytest.approx(3.182 * 0.1290994 / 2, rel=1e-4)
    assert r.emu_release_p99_us == 44.0
    # A row whose kernel mean is far off: outside ±10 %, CIs apart; the report counts it.
    far = fid.run_row(
        c,
        15.0,
        3.0,
        reduced=False,
        seeds=4,
        sim_run=sim,
        emu_run=lambda t: {"goodput_mbps": 3.0 + 0.001 * (_seed_of(t) % 7)},
    )
    assert not far.cis_overlap and abs(far.difference) > 0.10
    fid._plot = lambda rows, path, title: path.write_bytes(b"png")  # no matplotlib needed here
    fid.report([r, far], tmp_path, title="t", seconds=15.0, warmup_s=3.0, kernel="k")
    md = (tmp_path / "fidelity.md").read_text()
    assert "over 4 runs on each side" in md
    assert "Of these 2 rows, 1 are within ±5 %, 1 within ±10 %, and the CIs overlap on 1." in md
    assert "2.25 ± 0.21" in md and "(CIs apart)" in md
