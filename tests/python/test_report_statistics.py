"""The reports' statistics on made-up rows, where the right answer is known: a CI counts seeds, not
runs that share a seed's random draws; an order is stated only where the difference paired by seed
excludes 0; a mean over fewer seeds than the run's says so; a band that is not a CI is not
reported as one. (The reproductions' own tests run them end to end; these pin the arithmetic.)"""

import pytest
from mobipath.experiments import p0, p1, p2
from mobipath.experiments.common import mean_ci
from mobipath.recommend import rank


def _p2_rows(values):
    """P2 matrix rows: values[cc][seed] = the ramp-up of every scheduler's run of that seed, spread
    by the scheduler so that a CI over runs would be narrower than one over seeds."""
    out = []
    for cc, per_seed in values.items():
        for seed, v in per_seed.items():
            for k, sched in enumerate(("minrtt", "blest", "ecf")):
                out.append(
                    {
                        "block": "matrix",
                        "scheduler": sched,
                        "cc": cc,
                        "operator": "both",
                        "seed": seed,
                        "ramp_up_s": v + 0.01 * (k - 1),
                        "goodput_mbps": 50.0 + v,
                    }
                )
    return out


def test_p2_seed_means_give_one_value_per_seed():
    rows = _p2_rows({"lia": {1: 1.0, 2: 3.0, 3: 2.0}})
    per = p2._seed_means(rows, "matrix", "lia", "ramp_up_s")
    assert list(per) == [1, 2, 3]
    assert per[1] == pytest.approx(1.0) and per[2] == pytest.approx(3.0)
    # Over seeds the CI is far wider than over the 9 pooled runs (the error the report used to make).
    over_seeds = mean_ci(list(per.values()))[1]
    pooled = mean_ci([r["ramp_up_s"] for r in rows])[1]
    assert over_seeds > 2 * pooled


def test_p2_ramp_up_verdict_is_paired_by_seed():
    # Coupled slower than uncoupled by 0.5 s on every seed, while the seeds themselves vary by
    # seconds: unpaired CIs overlap, the paired differences exclude 0.
    base = {1: 1.0, 2: 4.0, 3: 2.0, 4: 6.0, 5: 3.0}
    values = {c: {s: v + 0.5 for s, v in base.items()} for c in ("lia", "olia", "balia")}
    values.update({u: dict(base) for u in ("reno", "cubic", "bbr")})
    report = p2_ramp_section(_p2_rows(values))
    assert "holds here" in report, report
    # The same seeds with the coupled controllers no different: not decided.
    values.update({c: dict(base) for c in ("lia", "olia", "balia")})
    report = p2_ramp_section(_p2_rows(values))
    assert "not decided here" in report and "9 are not distinguishable" in report, report


def p2_ramp_section(rows):
    """The ramp-up section of P2's report for these rows (the rest of the report needs aggregates)."""
    agg = p2.aggregate(rows)
    prov = {
        "seeds": 5,
        "duration_s": 30.0,
        "command": "",
        "mobipath_version": "",
        "git_revision": "",
        "core_build_git_revision": "",
        "runs": len(rows),
        "reused_runs": 0,
        "jobs": 1,
        "wall_time_s": 0,
    }
    text = p2.render_report(rows, agg, prov, None)
    return text[text.index("## Ramp-up") : text.index("## Where mobipath differs")]


def _p0_rows(goodput):
    """P0 plain runs: goodput[sched][seed]."""
    return [
        {"profile": "paper", "scheduler": s, "variant": "plain", "seed": k, "goodput_mbps": v}
        for s, per in goodput.items()
        for k, v in per.items()
    ]


def test_p0_ranking_says_approximately_where_the_paired_difference_includes_0():
    seeds = range(1, 9)
    noise = {k: (k % 3) * 0.4 for k in seeds}  # shared by every scheduler on a seed (the same train)
    goodput = {
        "blest": {k: 24.0 + noise[k] + 0.05 * (k % 2) for k in seeds},  # +0.5 over minRTT on every seed
        "minrtt": {k: 23.5 + noise[k] + 0.05 * (k % 2) for k in seeds},
        # minRTT's twin up or down by 0.03 on alternate seeds: the paired difference's mean is 0.
        "ecf": {k: 23.5 + noise[k] + 0.05 * (k % 2) + (0.03 if k % 2 else -0.03) for k in seeds},
    }
    rows = _p0_rows(goodput)
    text = p0._ranking(rows, "paper", ["blest", "minrtt", "ecf"], lambda s: s)
    assert text == "blest > minrtt ≈ ecf", text


def test_p0_mean_over_schedulers_is_per_seed_and_skips_incomplete_seeds():
    rows = _p0_rows({"minrtt": {1: 10.0, 2: 20.0, 3: 30.0}, "ecf": {1: 12.0, 2: 22.0}})
    per = p0._mean_over_schedulers(rows, "paper", ["minrtt", "ecf"], "plain", "goodput_mbps")
    assert per == {1: 11.0, 2: 21.0}


def test_p1_cells_say_n_when_fewer_seeds_gave_a_value():
    assert p1._fci_seeds((11.4, 24.4, 3), 1, 1.0, 10) == "11.4 ± 24.4 (n = 3)"
    assert p1._fci_seeds((11.4, 24.4, 10), 1, 1.0, 10) == "11.4 ± 24.4"
    assert p1._fci_seeds((None, None, 0), 1, 1.0, 10) == "n/a"


def test_p1_points_show_a_small_nonzero_difference():
    small = p1.Paired(-0.00036, 0.00029, 10)
    assert p1._points(small) == "-0.04 ± 0.03 points (n = 10)"
    assert p1._points(p1.Paired(-0.01, 0.001, 10)) == "-1.0 ± 0.1 points (n = 10)"
    # A mean and CI that round alike at one decimal get two, so the reader sees whether 0 is inside.
    assert p1._points(p1.Paired(-0.0021, 0.0018, 10)) == "-0.21 ± 0.18 points (n = 10)"


def test_recommend_reports_no_ci_for_one_run_per_pair_but_still_ties_within_1_percent():
    results = {("minrtt", "lia"): [100.0], ("blest", "lia"): [99.6], ("ecf", "lia"): [90.0]}
    ranked = rank(results, higher_is_better=True, deterministic=True)
    assert all(r.ci is None for r in ranked)
    ties = {r.sched for r in ranked if r.tie_with_best}
    assert ties == {"minrtt", "blest"}
    assert [r.rank for r in ranked] == [1, 1, 3]
    # With seeds, the CI is the one over runs.
    results = {("minrtt", "lia"): [100.0, 102.0, 98.0], ("ecf", "lia"): [90.0, 91.0, 89.0]}
    ranked = rank(results, higher_is_better=True, deterministic=False)
    assert ranked[0].ci == pytest.approx(mean_ci([100.0, 102.0, 98.0])[1]) and ranked[0].tie_band is None


def test_recommend_refuses_one_seed_on_a_random_path():
    from mobipath.recommend import RecommendError, parse_goal, parse_path, recommend

    paths = [parse_path("rate=10,delay=20,loss=1", 0), parse_path("rate=10,delay=20", 1)]
    with pytest.raises(RecommendError, match="--seeds 1: a path has random loss, so give at least 2 seeds"):
        recommend(paths, parse_goal("bulk"), seeds=1, duration_s=1, jobs=1)


def test_p2_says_nothing_is_best_or_lowest_from_one_seed():
    # One seed: no CIs. The highest mean is not called best, wVegas is not called lowest.
    rows = [
        {
            "block": "matrix",
            "scheduler": s,
            "cc": c,
            "operator": "both",
            "seed": 1,
            "ramp_up_s": 1.0,
            "goodput_mbps": {"cubic": 51.0, "lia": 50.0, "wvegas": 26.0}[c] + (0.5 if s == "ecf" else 0.0),
        }
        for s in ("minrtt", "ecf")
        for c in ("lia", "cubic", "wvegas")
    ]
    prov = {
        "seeds": 1,
        "duration_s": 30.0,
        "command": "",
        "mobipath_version": "",
        "git_revision": "",
        "core_build_git_revision": "",
        "runs": len(rows),
        "reused_runs": 0,
        "jobs": 1,
        "wall_time_s": 0,
    }
    text = p2.render_report(rows, p2.aggregate(rows), prov, None)
    assert "with one seed there are no CIs, so no pair is shown to be best" in text, text
    assert "below every other controller (CIs apart) with 0 of 2 schedulers" in text, text


def test_p2_schedulers_are_compared_paired_by_seed():
    # Goodput varies by seconds' worth between seeds (the capacity schedule); ECF is 0.05 Mbit/s
    # below the others on every seed: unpaired CIs overlap, the paired differences do not.
    base = {1: 50.0, 2: 53.0, 3: 51.0, 4: 54.0, 5: 52.0}
    rows = [
        {
            "block": "matrix",
            "scheduler": s,
            "cc": "cubic",
            "operator": "both",
            "seed": k,
            "ramp_up_s": 1.0,
            "goodput_mbps": v - (0.05 if s == "ecf" else 0.0),
        }
        for s in ("minrtt", "blest", "ecf")
        for k, v in base.items()
    ]
    agg = p2.aggregate(rows)
    prov = {
        "seeds": 5,
        "duration_s": 30.0,
        "command": "",
        "mobipath_version": "",
        "git_revision": "",
        "core_build_git_revision": "",
        "runs": len(rows),
        "reused_runs": 0,
        "jobs": 1,
        "wall_time_s": 0,
    }
    text = p2.render_report(rows, agg, prov, None)
    assert "under CUBIC 2 of 3 pairs differ, by at most 0.050 Mbit/s" in text, text
    # Without the offset nothing differs.
    for r in rows:
        r["goodput_mbps"] = base[r["seed"]]
    text = p2.render_report(rows, p2.aggregate(rows), prov, None)
    assert "no scheduler's goodput differs from another's under every controller" in text, text


def test_p0_ranking_never_prints_greater_for_a_negative_difference():
    # The order given puts the lower scheduler first: its paired difference is clearly negative,
    # which is not "greater".
    rows = _p0_rows(
        {"ecf": {k: 23.0 + 0.1 * k for k in range(1, 6)}, "minrtt": {k: 24.0 + 0.1 * k for k in range(1, 6)}}
    )
    assert p0._ranking(rows, "paper", ["ecf", "minrtt"], lambda s: s) == "ecf ≈ minrtt"


def test_p3_duration_steps_are_paired_by_seed():
    from mobipath.experiments import p3

    # EHN − Tahoe per seed: the seeds differ by a lot, the step from 1 s to 2 s is +0.1 on every
    # seed (grows), from 2 s to 4 s it is +0.1 or −0.1 by seed (not established).
    gain = {
        1.0: {1: 0.0, 2: 1.0, 3: 2.0, 4: 0.5},
        2.0: {1: 0.1, 2: 1.1, 3: 2.1, 4: 0.6},
        4.0: {1: 0.2, 2: 1.0, 3: 2.2, 4: 0.5},
    }
    rows = []
    for x, per in gain.items():
        for seed, g in per.items():
            rows.append({"block": "duration", "scheme": "tahoe", "x": x, "seed": seed, "goodput_mbps": 1.0})
            rows.append({"block": "duration", "scheme": "ehn", "x": x, "seed": seed, "goodput_mbps": 1.0 + g})
    agg = {("duration", s, x): {} for x in gain for s in ("ehn", "tahoe")}
    text = p3._duration_trend(rows, agg)
    assert "does not grow at every step" in text, text
    assert "1 → 2 s +0.100 ± 0.000 (grows)" in text and "2 → 4 s" in text and "(not established)" in text, text
