"""P0's targets (issue 17) on the ns3 profile of `mobipath reproduce p0`, over 10 held-out seeds
(the handover table is learned from seeds 100000..100049): for each of minRTT, ECF, BLEST and
Peekaboo, PHA's average gain in [0, +5] %, its handover-window gain in [+10, +35] % and the plain
retransmission ratio in [0.1, 0.6] %, as the report's "P0's targets" table computes them.

Run as users run it (the CLI, full 70 s runs, `--variants plain,pha`); about 10 s on 2 workers.
A target the profile misses today is marked `xfail(strict=True)`: the test still asserts the
target, is reported as an expected failure, and fails the suite if the target starts to be met,
so the docs that state the miss cannot go stale."""

import json

import pytest
from conftest import run_cli

SCHEDULERS = ("minrtt", "ecf", "blest", "peekaboo")
TARGETS = ("average gain of PHA (%)", "handover-window gain of PHA (%)", "plain retransmission ratio (%)")
# Missed today, with the measured value and what is known of its cause (docs/handover-model.md §5.3).
KNOWN_MISSES = {
    (
        "blest",
        "handover-window gain of PHA (%)",
    ): "BLEST's handover-window gain on the ns3 profile is +9.36 ± 1.29 % (10 seeds), below +10 %: plain BLEST "
    "already keeps more goodput in the windows (its wait rule leaves more handovers hitting an idle subflow; "
    "traced in docs/handover-model.md §5.3, faithful to mptcp_blest.c)",
}


@pytest.fixture(scope="module")
def summary(tmp_path_factory):
    out = tmp_path_factory.mktemp("p0-ns3")
    r = run_cli(
        [
            "reproduce",
            "p0",
            "--profile",
            "ns3",
            "--seeds",
            "10",
            "--variants",
            "plain,pha",
            "--jobs",
            "2",
            "--out",
            out,
        ],
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    s = json.loads((out / "summary.json").read_text())
    s["report"] = (out / "report.md").read_text()
    return s


def _params():
    for sched in SCHEDULERS:
        for target in TARGETS:
            marks = (
                [pytest.mark.xfail(strict=True, reason=KNOWN_MISSES[(sched, target)])]
                if (sched, target) in KNOWN_MISSES
                else []
            )
            yield pytest.param(sched, target, marks=marks, id=f"{sched}-{target.split(' ')[0]}")


@pytest.mark.parametrize("sched,target", list(_params()))
def test_ns3_profile_meets_p0s_target(summary, sched, target):
    t = next(x for x in summary["targets"]["ns3"] if x["scheduler"] == sched and x["target"] == target)
    assert t["n"] == 10
    assert t["low"] <= t["mean"] <= t["high"], (
        f"{sched} {target}: {t['mean']:.3f} ± {t['ci95']:.3f} outside [{t['low']}, {t['high']}]"
    )


def test_the_targets_are_measured_on_held_out_seeds_and_reported(summary):
    prov = summary["provenance"]
    assert prov["evaluation_seeds"] == [1, 10] and prov["table_seeds"] == [100000, 100049]
    assert len(summary["targets"]["ns3"]) == 12
    report = summary["report"]
    assert "## P0's targets" in report
    met = sum(t["met"] for t in summary["targets"]["ns3"])
    assert f"- **ns3**: {met} of 12 targets met" in report
    # The differences section covers the ns3 profile when it runs alone.
    for needle in (
        "**Ranking without PHA, ns3 profile**",
        "**Retransmission ratio, ns3 profile**",
        "**Which scheduler PHA helps most, ns3 profile**",
        "**ns3 profile** (P0's setup as ns-3 runs it",
    ):
        assert needle in report, needle
    # The ns3 profile is what its name says: the signalling handover model (an interruption that is
    # a result, not 40 ms) and ns-3's window rules.
    assert prov["interruption_ms"] != pytest.approx(50.0)
