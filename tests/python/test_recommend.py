"""`mobipath recommend`: ranks scheduler x congestion control on the user's paths by a goal, ties
pairs whose CIs overlap, says when the scheduler does not matter, prints how to apply the choice,
and refuses bad input precisely."""

import json

import pytest
from conftest import run_cli
from mobipath.recommend import RecommendError, parse_goal, parse_path, recommend


def _json(args, timeout=120):
    r = run_cli(["recommend", *args, "--json"], timeout=timeout)
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_bulk_on_deterministic_paths_says_the_scheduler_does_not_matter():
    res = _json(["--path", "profile=p2-skt-up", "--path", "profile=p2-kt-up"])
    assert res["deterministic"] and res["seeds"] == 1 and res["runs"] == 42
    assert res["scheduler_matters"] is False
    # Every scheduler ties with the others under each controller: one rank per controller.
    by_cc = {}
    for r in res["ranking"]:
        by_cc.setdefault(r["cc"], set()).add(r["rank"])
    assert all(len(v) == 1 for v in by_cc.values()), by_cc
    # The recommendation ties with the best and runs on the stock kernel when such a pair ties.
    rec = res["recommended"]
    assert f"{rec['scheduler']}+{rec['cc']}" in res["ties_with_best"]
    assert rec["stock_kernel"] and rec["scheduler"] == "linux-default" and rec["cc"] in ("reno", "cubic", "bbr")
    assert any(c.startswith("sysctl -w net.ipv4.tcp_congestion_control=") for c in rec["commands"])
    # wVegas is last here (delay-based on deep queues).
    assert res["ranking"][-1]["cc"] == "wvegas"


def test_a_goal_that_separates_schedulers_ranks_them():
    # A CBR stream over a fast and a slow path: where packets go decides their delay.
    res = _json(["--path", "rate=20,delay=10", "--path", "rate=5,delay=40", "--goal", "cbr:8"])
    assert res["scheduler_matters"] is True
    best, worst = res["ranking"][0], res["ranking"][-1]
    assert best["mean"] < 0.5 * worst["mean"], (best, worst)
    assert res["goal"]["metric"] == "app_delay_p99_ms" and not res["goal"]["higher_is_better"]


def test_ties_are_exactly_the_pairs_whose_ci_overlaps_the_best():
    # Two identical lossy paths, a few seeds: random results, CIs.
    paths = [parse_path("rate=10,delay=20,loss=1", 0), parse_path("rate=10,delay=20,loss=1", 1)]
    res = recommend(
        paths,
        parse_goal("bulk"),
        seeds=4,
        duration_s=10,
        jobs=2,
        schedulers=["minrtt", "roundrobin", "linux-default"],
        ccs=["lia", "cubic", "reno"],
    )
    assert res["seeds"] == 4 and not res["deterministic"]
    rows = res["ranking"]
    best = next(r for r in rows if r["rank"] == 1)
    for r in rows:
        overlap = abs(r["mean"] - best["mean"]) <= r["ci95"] + best["ci95"]
        assert r["tie_with_best"] == overlap, (r, best)
    assert sum(r["tie_with_best"] for r in rows) >= 2  # identical paths: not a strict order


def test_json_and_table_agree(tmp_path):
    args = ["--path", "rate=20,delay=10", "--path", "rate=10,delay=30", "--goal", "file:2MB"]
    res = _json(args)
    r = run_cli(["recommend", *args], timeout=120)
    assert r.returncode == 0, r.stderr
    rec = res["recommended"]
    labels = {
        "minrtt": "minRTT",
        "roundrobin": "round robin",
        "redundant": "redundant",
        "blest": "BLEST",
        "ecf": "ECF",
        "linux-default": "Linux default",
        "lia": "LIA",
        "olia": "OLIA",
        "balia": "Balia",
        "wvegas": "wVegas",
        "reno": "Reno",
        "cubic": "CUBIC",
        "bbr": "BBR",
    }
    assert f"Recommended: {labels[rec['scheduler']]} + {labels[rec['cc']]}" in r.stdout
    assert "To apply on Linux:" in r.stdout and "fct_s" in r.stdout


@pytest.mark.parametrize(
    "args, needle",
    [
        (["--path", "rate=20,delay=10"], "give at least two paths"),
        (["--path", "rate=20,delay=10", "--path", "trace=missing.csv,delay=10"], "trace = 'missing.csv': no such file"),
        (
            ["--path", "rate=20,delay=10", "--path", "rate=20,delay=10", "--goal", "fast"],
            "unknown goal (bulk, file:SIZE, cbr:RATE)",
        ),
        (["--path", "rate=20,delay=10", "--path", "rat=20"], "unknown key 'rat'"),
        (["--path", "rate=20,delay=10", "--path", "rate=-3,delay=10"], "rate = -3 is out of range"),
        (
            ["--path", "rate=20,delay=10", "--path", "rate=20,delay=10,loss=120"],
            "loss = 120 is out of range (percent, [0, 100])",
        ),
        (["--path", "rate=20,delay=10", "--path", "profile=nope"], "profile = 'nope' is unknown"),
        (["--path", "rate=20,delay=10", "--path", "rate=20,delay=10", "--goal", "file:lots"], "file:SIZE needs a size"),
        (
            ["--path", "rate=1,delay=10", "--path", "rate=1,delay=10", "--goal", "file:1GB", "--duration", "5"],
            "too short for the file",
        ),
        # Below the simulator's 1e-6 Mbit/s: refused here, not a failure in every worker.
        (
            ["--path", "rate=1e-9,delay=10", "--path", "rate=10,delay=10"],
            "--path #1 ('rate=1e-9,delay=10'): rate = 1e-9 is out of range (Mbit/s, [0.000001, 1000000])",
        ),
        # A file the simulator cannot read as a trace: its own error, naming the path.
        (
            ["--path", "trace=/etc/passwd,delay=10", "--path", "rate=10,delay=10"],
            "--path #1 ('trace=/etc/passwd,delay=10'): trace = /etc/passwd: line 1: expected",
        ),
        (["--path", "rate=10", "--path", "rate=10,delay=10"], "--path #1 ('rate=10'): no delay: give delay=MS"),
        (
            ["--path", "rate=10,rate=20,delay=5", "--path", "rate=10,delay=10"],
            "rate is given twice (rate = 10, rate = 20)",
        ),
        (
            ["--path", "rate=1000000,delay=1,queue_ms=10000", "--path", "rate=10,delay=10"],
            "queue_ms = 10000 at rate = 1e+06 is a queue of 833333333 packets",
        ),
    ],
)
def test_bad_inputs_are_refused_precisely(args, needle):
    r = run_cli(["recommend", *args], timeout=60)
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert needle in r.stderr, r.stderr
    assert "Traceback" not in r.stderr


def test_parse_units():
    assert parse_goal("file:20MB").value == 20e6 and parse_goal("file:1KiB").value == 1024
    with pytest.raises(RecommendError):
        parse_goal("cbr:0")
    p = parse_path("profile=p2-kt-up,delay=5", 0)
    assert (p.rate, p.delay) == (38.17, 5.0)


def test_path_ranges_are_the_simulators():
    """Each end of recommend's range for a key is accepted by the simulator, and just outside
    it recommend refuses what the simulator would refuse too."""
    from mobipath import _core
    from mobipath.recommend import DELAY_RANGE, LOSS_RANGE, RATE_RANGE, check_paths, scenario_text

    goal = parse_goal("bulk")

    def simulator_errors(text):
        paths = [parse_path(text, 0), parse_path("rate=10,delay=10", 1)]
        return _core.validate(scenario_text(paths, goal, "minrtt", "lia", 1.0), "t.toml", ".")

    for key, (lo, hi) in (("rate", RATE_RANGE), ("delay", DELAY_RANGE), ("loss", LOSS_RANGE)):
        base = {"rate": "10", "delay": "10"}
        for v in (lo, hi):
            text = ",".join(f"{k}={x}" for k, x in {**base, key: repr(v)}.items())
            assert simulator_errors(text) == [], (key, v)
            check_paths([parse_path(text, 0), parse_path("rate=10,delay=10", 1)], goal, 1.0)
        for v in (lo - max(abs(lo), 1e-7) * 0.5, hi * 1.5):
            text = ",".join(f"{k}={x}" for k, x in {**base, key: repr(v)}.items())
            with pytest.raises(RecommendError, match=f"{key} = .* is out of range"):
                parse_path(text, 0)
    # The simulator refuses beyond the rate and delay ends itself (the ranges are not narrower).
    for field, value in (("rate_mbps", 0.5e-6), ("rate_mbps", 1.5e6), ("delay_ms", 3.7e6)):
        cap = f"rate_mbps = {value!r}" if field == "rate_mbps" else "rate_mbps = 10"
        delay = value if field == "delay_ms" else 10
        text = (
            f'name = "x"\nduration_s = 1\n[[links]]\nname = "l"\n{cap}\ndelay_ms = {delay!r}\n'
            '[[paths]]\nname = "p"\nlinks = ["l"]\n[[flows]]\nname = "f"\npaths = ["p"]\ncc = "cubic"\n'
            'traffic = { kind = "bulk" }\n'
        )
        assert any(e["field"] == f"links[0].{field}" for e in _core.validate(text, "t.toml", ".")), (field, value)


def _ranked(values, deterministic=True):
    from mobipath.recommend import rank

    return rank({k: [v] for k, v in values.items()}, True, deterministic)


def test_ties_prefer_what_deploys_and_say_where_it_runs():
    from mobipath.recommend import RUNS_ON, deploy_tier, preferred

    # Bit-identical goodput for every scheduler under a coupled controller: the out-of-tree
    # kernel is needed anyway, and its default scheduler (minRTT) wins over alphabetical BLEST.
    same = {(s, "lia"): 10.0 for s in ["blest", "ecf", "minrtt", "redundant", "roundrobin"]}
    best = preferred(_ranked(same))
    assert (best.sched, best.cc) == ("minrtt", "lia")
    assert RUNS_ON[best.tier] == "out-of-tree multipath-tcp.org kernel (its default scheduler)"
    # With an uncoupled controller a BPF scheduler on the upstream kernel beats the out-of-tree one.
    same = {(s, "cubic"): 10.0 for s in ["blest", "ecf", "minrtt", "roundrobin"]}
    best = preferred(_ranked(same))
    assert (best.sched, best.cc) == ("roundrobin", "cubic") and best.tier == 1
    # The stock kernel's pair wins any tie it is part of, even with a (tied) lower mean.
    same = {("blest", "lia"): 10.02, ("linux-default", "cubic"): 10.0, ("minrtt", "cubic"): 10.01}
    best = preferred(_ranked(same))
    assert (best.sched, best.cc) == ("linux-default", "cubic") and best.tier == 0
    # A pair better beyond the tie band is recommended even if it needs the out-of-tree kernel.
    apart = {("blest", "lia"): 12.0, ("linux-default", "cubic"): 10.0}
    best = preferred(_ranked(apart))
    assert (best.sched, best.cc) == ("blest", "lia") and best.tier == 3
    pairs = [
        ("linux-default", "bbr"),
        ("redundant", "reno"),
        ("minrtt", "olia"),
        ("ecf", "reno"),
        ("linux-default", "lia"),
    ]
    assert [deploy_tier(s, c) for s, c in pairs] == [0, 1, 2, 3, 4]
    assert RUNS_ON[4].startswith("no shipped kernel")


def test_the_report_says_where_the_recommended_and_tied_pairs_run():
    res = _json(["--path", "profile=p2-skt-up", "--path", "profile=p2-kt-up"])
    rec = res["recommended"]
    assert rec["runs_on"] == "upstream Linux kernel"
    ties = res["ties_by_deployment"]
    assert {f"{t['scheduler']}+{t['cc']}" for t in ties} == set(res["ties_with_best"])
    tiers = [t["runs_on"] for t in ties]
    assert tiers[0] == "upstream Linux kernel" and any(t.startswith("out-of-tree") for t in tiers)
    assert all("runs_on" in r for r in res["ranking"])
    r = run_cli(["recommend", "--path", "profile=p2-skt-up", "--path", "profile=p2-kt-up"], timeout=120)
    assert r.returncode == 0, r.stderr
    assert "runs on the upstream Linux kernel" in r.stdout
    assert "Tied pairs, most readily deployed first" in r.stdout
