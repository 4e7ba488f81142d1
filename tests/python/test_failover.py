"""Failover through the proxy pair on the real kernel (mobipath.emulate.failover): path A of two
dies mid-download; the transfer must carry on over path B in every condition, and the namespaces
must be gone afterwards. One run of each condition, ~20 s in all; the figures with CIs come from
`python -m mobipath.emulate.failover --repeats 10` (the router guide). Skipped when not root,
without `ip netns` or `ss`, or without a current `mobipath-proxy` build. The outage arithmetic
runs everywhere."""

from __future__ import annotations

import os

import pytest
from conftest import proxy_chain_unavailable
from mobipath.emulate import failover as fo
from mobipath.emulate.netns import list_namespaces

_why = proxy_chain_unavailable()


def test_outage_ends_with_the_last_stall() -> None:
    # 10 kB every 10 ms; killed at t=1.0; two in-flight arrivals, a stall to 1.3, a few bytes,
    # a second stall to 1.8, then steady again.
    before = [(i / 100, 10_000) for i in range(100)]
    in_flight = [(1.01, 10_000), (1.02, 10_000)]
    burst = [(1.3, 10_000), (1.31, 10_000)]
    after = [(1.8 + i / 100, 10_000) for i in range(100)]
    out, stalled = fo.outage_s(before + in_flight + burst + after, 1.0)
    assert out == pytest.approx(0.8) and stalled == pytest.approx(0.28 + 0.49)
    # Nothing lost: no stall, no outage.
    assert fo.outage_s(before + [(1.0 + i / 100, 10_000) for i in range(1, 100)], 1.0) == (0.0, 0.0)
    # Nothing after the kill: never resumed.
    assert fo.outage_s(before, 1.0) == (float("inf"), float("inf"))


def test_mean_ci_uses_student_t() -> None:
    m, h = fo.mean_ci([1.0, 2.0, 3.0])
    assert m == 2.0 and h == pytest.approx(4.303 * 1.0 / 3**0.5)
    assert fo.mean_ci([0.5]) == (0.5, 0.0)


def test_bad_arguments_are_refused_by_name() -> None:
    with pytest.raises(fo.EmulateError, match="condition must be one of regular"):
        fo.run_once("both-dead")
    with pytest.raises(fo.EmulateError, match=r"pace_mbps must be in \[1, 1000\]"):
        fo.run_once("regular", pace_mbps=0)
    with pytest.raises(fo.EmulateError, match=r"repeats must be in \[1, 100\]"):
        fo.measure(0)


@pytest.mark.skipif(bool(_why), reason=_why or "ok")
def test_transfer_carries_on_over_the_surviving_path() -> None:
    res = fo.measure(1, kill_s=1.0, after_s=3.5)
    for cond in fo.CONDITIONS:
        (run,) = res["runs"][cond]
        assert run["subflows_before"] == 2, run  # both paths carried the connection
        assert run["rate_before_mbps"] > 0.5 * run["pace_mbps"], run
        # Carrying on over path B alone by the end of the run, at half the pace at least; the
        # outage ended within the run and includes every stall.
        assert run["rate_end_mbps"] > 0.5 * run["pace_mbps"], run
        assert run["outage_s"] is not None and 0 < run["stalled_s"] <= run["outage_s"] < 3.0, run
    assert not [n for n in list_namespaces(f"mp-{os.getpid()}-")], "namespaces left behind"
