"""P1 reproduction: delay-predictive scheduling and receiver-based loss recovery for MPTCP on
heterogeneous paths (J-KICS 2012; docs/papers.md, P1; docs/p1.md; Table 2 setup).

Scenario 1 (the paper's Figs. 8 and 9): path 1 100 Mbit/s, 3 ms; path 2 swept in rate, 15 ms,
1 % random loss; 1500-byte packets (MSS 1448), a 500-packet receive buffer. Variants: single-path
TCP on path 1 (same buffer), MPTCP with `minrtt` (Linux's default), `roundrobin` (the cwnd-spread
"standard MPTCP" of the paper's time) and `delay-predictive` (P1 §3.1). At a few rates also
`delay-predictive` with the paper's FIFO rule taken literally (`queue_on_slower_paths`), which
explains Fig. 9's gap (docs/p1.md).

Scenario 2 (Figs. 10 and 11): path 1 50 Mbit/s, 3 ms; path 2 50 Mbit/s with its delay swept,
1 % loss on path 2 only. Variants: standard MPTCP (`roundrobin`), the same with P1's
receiver-based recovery (isolates the recovery), and P1's whole proposal (`delay-predictive` +
receiver-based recovery). Loss-recovery times are those of segments first sent on path 2
(`subflows[1]`): each run's mean, then mean ± 95 % CI over seeds.

P1 names no congestion control. The headline uses uncoupled Reno (HEADLINE_CC, see `HEADLINE_WHY`);
a sensitivity block reruns a few points of both scenarios with CUBIC and coupled LIA.

Every comparison in the report is a difference paired by seed (`paired.py`): "higher"/"lower"
only when its 95 % CI excludes 0, "no difference" otherwise.

`reproduce()` runs every (scenario, variant, sweep value, congestion control, seed) in parallel
and writes ``results.csv`` (one row per run), ``summary.json``, ``report.md``, figures and the
generated scenario files. Each run is deterministic and keyed, so the number of workers never
changes a number.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, Optional

from .common import RunCache, fmt_ci, mean_ci, provenance_record, run_all, write_csv, write_outputs
from .paired import Paired, by_seed, field, minus, paired

MSS = 1448
RCV_BUF_PACKETS = 500
S1_RATES = [1, 2, 5, 10, 20, 30, 40, 50]
S2_DELAYS = [1, 5, 10, 25, 50, 75, 100, 150]
QUICK_S1_RATES = [1, 5, 50]
QUICK_S2_DELAYS = [5, 150]
DURATION = {"s1": 10.0, "s2": 15.0}
QUICK_DURATION = {"s1": 10.0, "s2": 30.0}
HEADLINE_CC = "reno"
HEADLINE_WHY = (
    "P1 names no congestion control. The headline uses uncoupled Reno on every subflow (and on "
    "single-path TCP): the loss-based controller of the paper's time whose single-path form is "
    "also what the coupled LIA of RFC 6356 (P1's reference [2]) reduces to, and one that keeps "
    "path 2 in use at 1 % loss (coupled LIA moves traffic off the lossy path by design; the "
    "sensitivity block compares the path-2 shares, paired by seed). At 1 % loss every loss-based controller caps path "
    "2 (Reno near 1.22·MSS/(RTT·√p)), so "
    "in scenario 2 path 2 carries 20 % of the data or more only at the shortest delays; BBR, which "
    "does not back off on random loss, keeps it loaded and is where the flatness claim can be "
    "tested (sensitivity block)."
)
SENS_CCS = ["cubic", "lia", "bbr"]
SENS_X = {"s1": [2, 50], "s2": [5, 150]}
QUICK_SENS_X: dict[str, list[float]] = {"s1": [5], "s2": []}
COUPLED = ("lia", "olia", "balia")
DIAG_X = [2, 10, 50]
QUICK_DIAG_X = [50]
MIN_SHARE = 0.20
FLAT_FACTOR = 0.25

FIFO = '{ name = "delay-predictive", queue_on_slower_paths = true }'
# variant -> (scheduler (TOML value) or None for single-path TCP, receiver-based recovery)
VARIANTS: dict[str, dict[str, tuple[Optional[str], bool]]] = {
    "s1": {
        "tcp": (None, False),
        "minrtt": ('"minrtt"', False),
        "roundrobin": ('"roundrobin"', False),
        "delay-predictive": ('"delay-predictive"', False),
        "delay-predictive-fifo": (FIFO, False),
    },
    "s2": {
        "standard": ('"roundrobin"', False),
        "standard+recovery": ('"roundrobin"', True),
        "proposed": ('"delay-predictive"', True),
    },
}
MAIN = {"s1": ["tcp", "minrtt", "roundrobin", "delay-predictive"], "s2": ["standard", "standard+recovery", "proposed"]}
SENS_VARIANTS = {"s1": ["tcp", "minrtt", "delay-predictive"], "s2": ["standard", "standard+recovery", "proposed"]}
LABEL = {
    "tcp": "TCP on path 1",
    "minrtt": "MPTCP minRTT",
    "roundrobin": "MPTCP round robin",
    "delay-predictive": "MPTCP delay-predictive",
    "delay-predictive-fifo": "delay-predictive, FIFO on every path (literal)",
    "standard": "standard (round robin)",
    "standard+recovery": "round robin + receiver-based recovery",
    "proposed": "proposed (delay-predictive + receiver-based recovery)",
}
CC_LABEL = {"reno": "Reno", "cubic": "CUBIC", "lia": "LIA (coupled)", "bbr": "BBR"}
X_NAME = {"s1": "path2_rate_mbps", "s2": "path2_delay_ms"}

CSV_FIELDS = [
    "scenario",
    "variant",
    "x",
    "cc",
    "seed",
    "duration_s",
    "goodput_mbps",
    "subflow0_goodput_mbps",
    "subflow1_goodput_mbps",
    "path2_share",
    "rcvbuf_mean_packets",
    "ofo_mean_packets",
    "ofo_behind_path2_late_packets",
    "ofo_behind_path2_copy_packets",
    "ofo_behind_path1_packets",
    "hol_delay_mean_ms",
    "retransmission_ratio",
    "retransmission_requests",
    "path2_losses",
    "path2_recovery_from_send_mean_ms",
    "path2_recovery_from_detection_mean_ms",
]
METRICS = [
    "goodput_mbps",
    "subflow0_goodput_mbps",
    "subflow1_goodput_mbps",
    "path2_share",
    "rcvbuf_mean_packets",
    "ofo_mean_packets",
    "ofo_behind_path2_late_packets",
    "ofo_behind_path2_copy_packets",
    "ofo_behind_path1_packets",
    "hol_delay_mean_ms",
    "retransmission_ratio",
    "retransmission_requests",
    "path2_losses",
    "path2_recovery_from_send_mean_ms",
    "path2_recovery_from_detection_mean_ms",
]

Key = tuple[str, str, float, str, int]


def scenario_text(part: str, variant: str, x: float, duration_s: float, cc: str = HEADLINE_CC) -> str:
    """The TOML scenario of one point (seed given at run time)."""
    sched, recovery = VARIANTS[part][variant]
    if part == "s1":
        p1 = "rate_mbps = 100\ndelay_ms = 3\nqueue_packets = 200"
        p2 = f'rate_mbps = {x:g}\ndelay_ms = 15\nqueue_packets = 100\nloss = {{ model = "bernoulli", p = 0.01 }}'
    else:
        p1 = "rate_mbps = 50\ndelay_ms = 3\nqueue_packets = 100"
        p2 = f'rate_mbps = 50\ndelay_ms = {x:g}\nqueue_packets = 100\nloss = {{ model = "bernoulli", p = 0.01 }}'
    head = (
        f"# P1 {'scenario 1' if part == 's1' else 'scenario 2'}: {LABEL[variant]}, "
        f"{X_NAME[part]} = {x:g}, {CC_LABEL.get(cc, cc)} (generated by `mobipath reproduce p1`)\n"
        f'name = "p1-{part}-{variant}-{x:g}-{cc}"\nseed = 1\nduration_s = {duration_s:g}\n\n'
        f'[[links]]\nname = "path1"\n{p1}\n\n[[links]]\nname = "path2"\n{p2}\n\n'
        '[[paths]]\nname = "p1"\nlinks = ["path1"]\n\n[[paths]]\nname = "p2"\nlinks = ["path2"]\n\n'
    )
    if sched is None:
        # A coupled controller on one path is Reno (RFC 6356 §3).
        tcp_cc = "reno" if cc in COUPLED else cc
        return head + (
            f'[[flows]]\nname = "f"\npath = "p1"\ncc = "{tcp_cc}"\ntraffic = {{ kind = "bulk" }}\n'
            f"receiver = {{ rcv_buf_bytes = {RCV_BUF_PACKETS * MSS} }}\n"
        )
    return head + (
        f'[[flows]]\nname = "f"\npaths = ["p1", "p2"]\ncc = "{cc}"\n'
        f'scheduler = {sched}\ntraffic = {{ kind = "bulk" }}\n'
        f"mptcp = {{ rcv_buf_packets = {RCV_BUF_PACKETS}, receiver_recovery = {str(recovery).lower()} }}\n"
    )


def run_one(key: Key, scenario_path: str) -> dict[str, Any]:
    import mobipath

    part, variant, x, cc, seed = key
    s = mobipath.run(scenario_path, seed=seed).summary
    f = s["flows"]["f"]
    row: dict[str, Any] = {
        "scenario": part,
        "variant": variant,
        "x": x,
        "cc": cc,
        "seed": seed,
        "duration_s": float(s["duration_s"]),
        "goodput_mbps": f["goodput_mbps"],
        "retransmission_ratio": f.get("retransmission_ratio"),
    }
    if f.get("protocol") == "mptcp":
        subs = f["subflows"]
        g = f["goodput_mbps"]
        row.update(
            {
                "subflow0_goodput_mbps": subs[0]["goodput_mbps"],
                "subflow1_goodput_mbps": subs[1]["goodput_mbps"],
                "path2_share": subs[1]["goodput_mbps"] / g if g > 0 else None,
                "rcvbuf_mean_packets": f["rcvbuf_mean_bytes"] / MSS,
                "ofo_mean_packets": f["ofo_mean_bytes"] / MSS,
                "ofo_behind_path2_late_packets": subs[1]["ofo_behind_late_original_mean_bytes"] / MSS,
                "ofo_behind_path2_copy_packets": subs[1]["ofo_behind_copy_mean_bytes"] / MSS,
                "ofo_behind_path1_packets": (
                    subs[0]["ofo_behind_late_original_mean_bytes"] + subs[0]["ofo_behind_copy_mean_bytes"]
                )
                / MSS,
                "hol_delay_mean_ms": f["hol_delay_mean_ms"],
                "retransmission_requests": f["retransmission_requests"],
                "path2_losses": subs[1]["loss_recovery_count"],
            }
        )
        if subs[1]["loss_recovery_count"] > 0:
            row["path2_recovery_from_send_mean_ms"] = subs[1]["loss_recovery_mean_ms"]
            row["path2_recovery_from_detection_mean_ms"] = subs[1]["loss_recovery_from_detection_mean_ms"]
    else:
        row["subflow0_goodput_mbps"] = f["goodput_mbps"]
    return row


def plan(parts: Sequence[str], seeds: int, quick: bool) -> list[Key]:
    """Main sweeps (headline controller), the Fig. 9 diagnosis points, then the sensitivity block."""
    xs = {"s1": QUICK_S1_RATES if quick else S1_RATES, "s2": QUICK_S2_DELAYS if quick else S2_DELAYS}
    sens_x = QUICK_SENS_X if quick else SENS_X
    sd = range(1, seeds + 1)
    keys: list[Key] = [(p, v, float(x), HEADLINE_CC, s) for p in parts for v in MAIN[p] for x in xs[p] for s in sd]
    if "s1" in parts:
        keys += [
            ("s1", "delay-predictive-fifo", float(x), HEADLINE_CC, s)
            for x in (QUICK_DIAG_X if quick else DIAG_X)
            for s in sd
        ]
    # Single-path TCP under a coupled controller is Reno: the headline's runs already have it.
    keys += [
        (p, v, float(x), cc, s)
        for p in parts
        for cc in SENS_CCS
        for v in SENS_VARIANTS[p]
        for x in sens_x[p]
        for s in sd
        if not (v == "tcp" and cc in COUPLED)
    ]
    return keys


def tcp_stand_ins(keys: Sequence[Key]) -> dict[Key, Key]:
    """Single-path TCP on path 1 is deterministic: path 1 has no random loss and path 2, whose rate
    and loss draws are all that the sweep value and the seed change, is unused. So one run (the
    lowest rate, seed 1) stands for every other (rate, seed) of its controller: key -> the key
    whose result it reuses. The quick run does not use this and its test checks the premise (every
    TCP rate and seed gives the same row)."""
    first: dict[tuple[str, str], Key] = {}
    for k in sorted(k for k in keys if k[1] == "tcp"):
        first.setdefault((k[0], k[3]), k)
    return {k: first[(k[0], k[3])] for k in keys if k[1] == "tcp" and k != first[(k[0], k[3])]}


# ---------------------------------------------------------------------------------------------
# Aggregation

Point = tuple[str, str, float, str]


def aggregate(rows: list[dict[str, Any]]) -> dict[Point, dict[str, Any]]:
    """(scenario, variant, x, cc) -> metric -> (mean, CI half-width, n) over seeds, of the values as
    written to results.csv (a run's recovery time is its mean over its path-2 losses; runs
    without any are left out), plus the total of path-2 losses."""
    groups: dict[Point, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["scenario"], r["variant"], r["x"], r["cc"]), []).append(r)
    agg: dict[Point, dict[str, Any]] = {}
    for g, rs in groups.items():
        a: dict[str, Any] = {}
        for m in METRICS:
            vals = [round(float(r[m]), 6) for r in rs if r.get(m) is not None]
            mean, ci = mean_ci(vals)
            a[m] = (mean, ci, len(vals))
        a["path2_losses_total"] = sum(int(r.get("path2_losses") or 0) for r in rs)
        agg[g] = a
    return agg


def agg_to_json(agg: dict[Point, dict[str, Any]]) -> list[dict[str, Any]]:
    out = []
    for (p, v, x, cc), ms in sorted(agg.items()):
        entry: dict[str, Any] = {"scenario": p, "variant": v, X_NAME[p]: x, "cc": cc}
        for m, val in ms.items():
            entry[m] = {"mean": val[0], "ci95": val[1], "n": val[2]} if isinstance(val, tuple) else val
        out.append(entry)
    return out


def _val(agg: dict[Point, dict[str, Any]], p: str, v: str, x: float, m: str, cc: str = HEADLINE_CC) -> Any:
    return agg.get((p, v, x, cc), {}).get(m)


def _getter(
    fci: Callable[..., str], agg: dict[Point, dict[str, Any]], p: str, v: str, x: float, cc: str = HEADLINE_CC
) -> Callable[..., str]:
    """A cell formatter for one point: metric name (and digits, scale) → `fci` of its aggregate."""

    def g(m: str, nd: int = 1, sc: float = 1.0) -> str:
        return fci(_val(agg, p, v, x, m, cc), nd, sc)

    return g


def _mean(agg: dict[Point, dict[str, Any]], p: str, v: str, x: float, m: str, cc: str = HEADLINE_CC) -> Optional[float]:
    val = _val(agg, p, v, x, m, cc)
    return val[0] if isinstance(val, tuple) else val


def diff(rows: list[dict[str, Any]], p: str, a: str, b: str, x: float, m: str, cc: str = HEADLINE_CC) -> Paired:
    """Metric `m` of variant a − variant b at (p, x, cc), paired by seed."""
    get = field(m)
    return paired(
        by_seed(rows, get, scenario=p, variant=a, x=x, cc=cc), by_seed(rows, get, scenario=p, variant=b, x=x, cc=cc)
    )


def flatness(
    rows: list[dict[str, Any]],
    variant: str,
    default: str = "standard",
    cc: str = HEADLINE_CC,
    min_share: float = MIN_SHARE,
    factor: float = FLAT_FACTOR,
) -> dict[str, Any]:
    """P1's flat recovery time (Fig. 10), tested where path 2 is really used: over the path-2 delays
    at which both `variant` and `default` carry at least `min_share` of the data on path 2 (mean
    over seeds), the growth of the mean recovery time from detection from the shortest to the
    longest such delay, per seed; the claim holds when growth(variant) − factor·growth(default),
    paired by seed, has its 95 % CI below 0. Returns the delays, both growths and the verdict."""
    s2 = [r for r in rows if r["scenario"] == "s2" and r["cc"] == cc]
    xs = sorted({r["x"] for r in s2})

    def share(v, x):
        return mean_ci([field("path2_share")(r) for r in s2 if r["variant"] == v and r["x"] == x])[0]

    ok = [x for x in xs if all((share(v, x) or 0.0) >= min_share for v in (variant, default))]
    out: dict[str, Any] = {"variant": variant, "default": default, "delays": ok, "holds": None}
    if len(ok) < 2:
        return out
    lo, hi = ok[0], ok[-1]
    det = field("path2_recovery_from_detection_mean_ms")

    def growth(v: str) -> dict[Any, Optional[float]]:
        return minus(by_seed(s2, det, variant=v, x=hi), by_seed(s2, det, variant=v, x=lo))

    gv, gd = growth(variant), growth(default)
    out["growth"] = paired(gv, {sd: 0.0 for sd in gv})
    out["default_growth"] = paired(gd, {sd: 0.0 for sd in gd})
    test = paired(minus(gv, gd, factor), {sd: 0.0 for sd in set(gv) & set(gd)})
    out["test"] = test
    out["holds"] = None if test.sign is None else test.sign < 0
    return out


# ---------------------------------------------------------------------------------------------
# Figures


def write_figures(out_dir: Path, agg: dict[Point, dict[str, Any]], parts: Sequence[str]) -> dict[str, str]:
    """Mean over seeds with the 95 % CI as error bars, headline controller."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs: dict[str, str] = {}

    def lines(part: str, metrics: Sequence[tuple[str, str]], xlabel: str, title: str, fname: str, log_x: bool) -> None:
        fig, axes = plt.subplots(1, len(metrics), figsize=(5.2 * len(metrics), 3.8), squeeze=False)
        for ax, (m, ylabel) in zip(axes[0], metrics):
            for v in MAIN[part]:
                xs = sorted(x for (p, vv, x, cc) in agg if p == part and vv == v and cc == HEADLINE_CC)
                pts = [(x, _val(agg, part, v, x, m)) for x in xs]
                pts = [(x, val) for x, val in pts if isinstance(val, tuple) and val[0] is not None]
                if pts:
                    ax.errorbar(
                        [x for x, _ in pts],
                        [val[0] for _, val in pts],
                        yerr=[val[1] or 0.0 for _, val in pts],
                        marker="o",
                        ms=3,
                        capsize=2,
                        label=LABEL[v],
                    )
            ax.set_xlabel(xlabel)
            ax.set_ylabel(ylabel)
            if log_x:
                ax.set_xscale("log")
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=7)
        fig.suptitle(title, fontsize=10)
        fig.tight_layout()
        fig.savefig(out_dir / fname, dpi=110)
        plt.close(fig)
        figs[fname.split("-")[0]] = fname

    bars = "mean ± 95 % CI over seeds"
    if "s1" in parts:
        lines(
            "s1",
            [("goodput_mbps", "goodput (Mbit/s)"), ("path2_share", "share of the data on path 2")],
            "path-2 rate (Mbit/s)",
            f"Fig. 8: throughput vs path-2 rate ({bars})",
            "fig8-throughput.png",
            True,
        )
        lines(
            "s1",
            [("rcvbuf_mean_packets", "receive-buffer occupancy (packets)")],
            "path-2 rate (Mbit/s)",
            f"Fig. 9: packets waiting in the receive buffer vs path-2 rate ({bars})",
            "fig9-rcvbuf.png",
            True,
        )
    if "s2" in parts:
        lines(
            "s2",
            [
                ("path2_recovery_from_send_mean_ms", "from the original send (ms)"),
                ("path2_recovery_from_detection_mean_ms", "from detection (ms)"),
                ("path2_share", "share of the data on path 2"),
            ],
            "path-2 one-way delay (ms)",
            f"Fig. 10: mean loss-recovery time of path-2 losses vs path-2 delay ({bars})",
            "fig10-recovery-time.png",
            False,
        )
        lines(
            "s2",
            [("rcvbuf_mean_packets", "receive-buffer occupancy (packets)")],
            "path-2 one-way delay (ms)",
            f"Fig. 11: packets waiting in the receive buffer vs path-2 delay ({bars})",
            "fig11-rcvbuf.png",
            False,
        )
    return figs


# ---------------------------------------------------------------------------------------------
# Report


def _xs(xs: Sequence[float]) -> str:
    return ", ".join(f"{x:g}" for x in xs) or "no delay"


def _verdicts(ds: dict[float, Paired], higher: str, lower: str) -> str:
    """ "higher at 1, 2; lower at 10; no difference at 5" over the sweep values."""
    groups: dict[str, list[float]] = {}
    for x, d in sorted(ds.items()):
        groups.setdefault(d.words(higher, lower, "no difference"), []).append(x)
    return "; ".join(f"{k} at {_xs(v)}" for k, v in groups.items()) or "not measured"


def _fci_seeds(val: Any, nd: int, sc: float, seeds: int) -> str:
    """`fmt_ci` of an aggregate (mean, CI, n), with "(n = k)" when fewer than `seeds` runs gave a value
    (a loss-recovery time exists only in runs with a path-2 loss): such a mean is not over every seed."""
    text = fmt_ci(val, nd, sc)
    if isinstance(val, tuple) and len(val) > 2 and val[0] is not None and val[2] < seeds:
        text += f" (n = {val[2]})"
    return text


def _points(d: Paired) -> str:
    """A paired difference of shares in percentage points."""
    if d.mean is None:
        return "n/a"
    # Two decimals where one would hide the verdict: a nonzero difference printed "-0.0 ± 0.0", or a
    # mean and CI that round alike ("-0.2 ± 0.2": is 0 inside?).
    m, ci = abs(100 * d.mean), None if d.ci is None else 100 * d.ci
    nd = 2 if m < 0.05 or (ci is not None and (ci < 0.05 or round(m, 1) == round(ci, 1))) else 1
    return f"{100 * d.mean:+.{nd}f}" + ("" if d.ci is None else f" ± {100 * d.ci:.{nd}f}") + f" points (n = {d.n})"


def _flat_sentence(fl: dict[str, Any]) -> str:
    v = LABEL[fl["variant"]]
    if fl["holds"] is None:
        where = f"at {_xs(fl['delays'])} ms only" if fl["delays"] else "at no delay of the sweep"
        return (
            f"Flatness of {v}: not testable — both it and standard carry ≥ {MIN_SHARE:.0%} of the data "
            f"on path 2 {where}."
        )
    return (
        f"Flatness of {v} where both it and standard carry ≥ {MIN_SHARE:.0%} on path 2 ({_xs(fl['delays'])} ms): "
        f"recovery from detection grows by {fl['growth'].text(1, 'ms')} from {fl['delays'][0]:g} to "
        f"{fl['delays'][-1]:g} ms, standard's by {fl['default_growth'].text(1, 'ms')}; growth − {FLAT_FACTOR:g} × "
        f"standard's = {fl['test'].text(1, 'ms')}: **{'holds' if fl['holds'] else 'does not hold'}** (the claim needs "
        "that CI below 0)."
    )


def worked_examples_section() -> list[str]:
    """P1's Figs. 5 and 6 replayed by the simulator's scheduler, link model and receiver."""
    from .. import _core

    out: list[str] = []
    w = out.append
    w("## Worked examples: Figs. 5 and 6 replayed packet by packet\n")
    w(
        "The delay-predictive scheduler places each packet, each path's FIFO drains through the simulator's link model "
        "(a 1500-byte packet takes `D_t`; a lone packet arrives `RTT/2` after it is sent), and the arrivals feed the "
        "MPTCP "
        "receiver with receiver-based recovery (`mptcp::p1_examples`, checked by `crates/sim/tests/p1_examples.rs`). "
        "The paper's figures give the assignments, not the delays: the path numbers are ours, chosen so that P1's rule "
        "gives the paper's assignment. Times in ms.\n"
    )
    for ex in json.loads(_core.p1_worked_examples()):
        paths = "; ".join(
            f"path {p['path']}: RTT {p['rtt_us'] / 1000:g} ms, D_t {p['d_t_us'] / 1000:g} ms" for p in ex["paths"]
        )
        what = (
            "Fig. 5 (scheduling)"
            if ex["figure"] == "fig5"
            else "Fig. 6 (receiver-based recovery; packet 7 is lost on path 2)"
        )
        w(f"**{what}** — {paths}.\n")
        w("| packet (DSN) | path | subflow seq | predicted arrival | actual arrival | receiver |")
        w("|---|---|---|---|---|---|")
        for r in ex["rows"]:
            actual = "lost" if r["actual_us"] is None else f"{r['actual_us'] / 1000:.3f}"
            w(
                f"| {r['packet']}{' (copy)' if r['copy'] else ''} | {r['path']} | {r['subflow_seq']} | "
                f"{r['predicted_us'] / 1000:.3f} | {actual} | {r['receiver']} |"
            )
        reqs = "; ".join(
            f"packet {q['packet']} asked for on path {q['path']} at {q['at_us'] / 1000:.3f} ms" for q in ex["requests"]
        )
        w(f"\nRequests: {reqs or 'none'}. Delivered in order at the end: {ex['delivered_packets']} packets.\n")
    return out


def render_report(
    agg: dict[Point, dict[str, Any]],
    rows: list[dict[str, Any]],
    prov: dict[str, Any],
    figs: dict[str, str],
    parts: Sequence[str],
) -> str:
    out: list[str] = []
    w = out.append
    seeds = prov["seeds"]
    _fci = lambda val, nd=2, sc=1.0: _fci_seeds(val, nd, sc, seeds)  # noqa: E731 - says n where seeds are missing
    w("# P1 reproduction: delay-predictive scheduling and receiver-based recovery on heterogeneous paths\n")
    w(
        "Paper: *Packet Scheduling Scheme and Receiver-Based Recovery Scheme for MPTCP in Heterogeneous "
        "Networks* (J-KICS 2012), Table 2 setup: 1500-byte packets, 500-packet receive buffer, 1 % random loss "
        "on path 2 only. The paper publishes curves only (Figs. 8–11), so the comparison is of their shape. "
        f"Every number is the mean over {seeds} seeds ± the 95 % Student-t half-width over seeds, of the values in "
        "`results.csv` (a run's loss-recovery time is its own mean over its path-2 losses; a run without any has none, "
        f'and a cell over fewer than {seeds} seeds says how many: "(n = 3)"). Every comparison is the '
        'difference paired by seed (the same seed draws the same losses): "higher"/"lower" only where its 95 % CI '
        'excludes 0, "no difference" otherwise. Single-path TCP on path 1 depends on neither path 2 nor the seed '
        "(path 1 has no random loss), so in the full run one TCP run per controller stands for all its rates and seeds "
        "(`tcp runs reused` below; the quick run checks the premise). docs/p1.md explains the readings.\n"
    )
    w(f"**Congestion control.** {HEADLINE_WHY}\n")
    out.extend(worked_examples_section())
    if "s1" in parts:
        xs = sorted({x for (p, v, x, cc) in agg if p == "s1" and v == "minrtt" and cc == HEADLINE_CC})
        mp = [v for v in MAIN["s1"] if v != "tcp"]
        w(f"## Scenario 1 — path 2's rate swept (Figs. 8, 9; {prov['duration_s']['s1']:g} s runs)\n")
        w("Path 1 100 Mbit/s, 3 ms; path 2 15 ms. Goodput (Mbit/s):\n")
        w("| path-2 rate (Mbit/s) | " + " | ".join(LABEL[v] for v in MAIN["s1"]) + " |")
        w("|---|" + "---|" * len(MAIN["s1"]))
        for x in xs:
            w(f"| {x:g} | " + " | ".join(_fci(_val(agg, "s1", v, x, "goodput_mbps")) for v in MAIN["s1"]) + " |")
        w("\nShare of the data delivered over path 2 (%):\n")
        w("| path-2 rate (Mbit/s) | " + " | ".join(LABEL[v] for v in mp) + " |")
        w("|---|" + "---|" * len(mp))
        for x in xs:
            w(f"| {x:g} | " + " | ".join(_fci(_val(agg, "s1", v, x, "path2_share"), 1, 100.0) for v in mp) + " |")
        w("\nPackets waiting in the receive buffer (time-weighted mean, in MSS-sized packets):\n")
        w("| path-2 rate (Mbit/s) | " + " | ".join(LABEL[v] for v in mp) + " |")
        w("|---|" + "---|" * len(mp))
        for x in xs:
            w(f"| {x:g} | " + " | ".join(_fci(_val(agg, "s1", v, x, "rcvbuf_mean_packets"), 1) for v in mp) + " |")
        below = {x: diff(rows, "s1", "minrtt", "tcp", x, "goodput_mbps") for x in xs}
        dp_g = {x: diff(rows, "s1", "delay-predictive", "minrtt", x, "goodput_mbps") for x in xs}
        dp_b = {x: diff(rows, "s1", "delay-predictive", "minrtt", x, "rcvbuf_mean_packets") for x in xs}
        w(
            "\n**Against the paper's shape** (paired differences, path-2 rates in Mbit/s). The paper: standard MPTCP "
            "falls below single-path TCP on path 1 when path 2 is much slower; the proposed scheduler reduces that "
            "loss "
            "and holds fewer packets in the receive buffer."
        )
        w(f"- Goodput, minRTT − TCP on path 1: {_verdicts(below, 'above', 'below')}.")
        w(f"- Goodput, delay-predictive − minRTT: {_verdicts(dp_g, 'higher', 'lower')}.")
        w(f"- Receive buffer, delay-predictive − minRTT: {_verdicts(dp_b, 'more', 'fewer')}.")
        w(
            "\n| path-2 rate (Mbit/s) | goodput minRTT − TCP | goodput delay-predictive − minRTT | buffer "
            "delay-predictive − minRTT (packets) |"
        )
        w("|---|---|---|---|")
        for x in xs:
            w(f"| {x:g} | {below[x].text()} | {dp_g[x].text()} | {dp_b[x].text(1)} |")
        dx = sorted({x for (p, v, x, cc) in agg if p == "s1" and v == "delay-predictive-fifo"})
        if dx:
            w("\n### Where the receive buffer's packets come from (Fig. 9)\n")
            w(
                "Out-of-order packets (time-weighted mean) split by the hole they wait behind: a path-2 packet that "
                "arrives "
                "*late* (its original, overtaken by later data on path 1), a path-2 packet that was lost (filled by a "
                "copy), "
                "or a path-1 packet. `delay-predictive, FIFO on every path` is P1's rule taken literally: a segment is "
                "also "
                "queued behind a full window on the slower path (docs/p1.md).\n"
            )
            w(
                "| path-2 rate (Mbit/s) | variant | buffer | behind late path-2 originals | behind lost path-2 packets "
                "| behind path 1 | path-2 share (%) |"
            )
            w("|---|---|---|---|---|---|---|")
            for x in dx:
                for v in ("minrtt", "delay-predictive", "delay-predictive-fifo"):
                    g = _getter(_fci, agg, "s1", v, x)

                    w(
                        f"| {x:g} | {LABEL[v]} | {g('rcvbuf_mean_packets')} | {g('ofo_behind_path2_late_packets')} | "
                        f"{g('ofo_behind_path2_copy_packets')} | {g('ofo_behind_path1_packets')} | "
                        f"{g('path2_share', 1, 100.0)} |"
                    )
            lit = {
                x: diff(rows, "s1", "delay-predictive", "delay-predictive-fifo", x, "rcvbuf_mean_packets") for x in dx
            }
            late = {
                x: diff(rows, "s1", "delay-predictive", "delay-predictive-fifo", x, "ofo_behind_path2_late_packets")
                for x in dx
            }
            litm = {x: diff(rows, "s1", "delay-predictive-fifo", "minrtt", x, "rcvbuf_mean_packets") for x in dx}
            w(f"\n- Buffer, literal FIFO − minRTT: {_verdicts(litm, 'more', 'fewer')}.")
            w(
                f"- Buffer, delay-predictive − literal FIFO: {_verdicts(lit, 'more', 'fewer')}; packets behind late "
                f"path-2 originals: {_verdicts(late, 'more', 'fewer')}."
            )
        if "fig8" in figs:
            w(f"\n![Fig. 8]({figs['fig8']})\n\n![Fig. 9]({figs['fig9']})\n")
    if "s2" in parts:
        xs = sorted({x for (p, v, x, cc) in agg if p == "s2" and cc == HEADLINE_CC})
        w(f"## Scenario 2 — path 2's delay swept (Figs. 10, 11; {prov['duration_s']['s2']:g} s runs)\n")
        w(
            "Path 1 50 Mbit/s, 3 ms; path 2 50 Mbit/s. Each cell: mean loss-recovery time of path-2 losses from "
            "detection "
            "(docs/metrics.md) ± CI, ms / the same from the original send / path-2 losses per run / share of the data "
            "on "
            "path 2 (%):\n"
        )
        w("| path-2 delay (ms) | " + " | ".join(LABEL[v] for v in MAIN["s2"]) + " |")
        w("|---|" + "---|" * len(MAIN["s2"]))
        for x in xs:
            cells = []
            for v in MAIN["s2"]:
                g = _getter(_fci, agg, "s2", v, x)

                cells.append(
                    f"{g('path2_recovery_from_detection_mean_ms')} / {g('path2_recovery_from_send_mean_ms')} / "
                    f"{g('path2_losses', 1)} / {g('path2_share', 1, 100.0)} %"
                )
            w(f"| {x:g} | " + " | ".join(cells) + " |")
        w("\nPackets waiting in the receive buffer, and goodput (Mbit/s):\n")
        w("| path-2 delay (ms) | " + " | ".join(LABEL[v] for v in MAIN["s2"]) + " |")
        w("|---|" + "---|" * len(MAIN["s2"]))
        for x in xs:
            w(
                f"| {x:g} | "
                + " | ".join(
                    f"{_fci(_val(agg, 's2', v, x, 'rcvbuf_mean_packets'), 1)} pkts, "
                    f"{_fci(_val(agg, 's2', v, x, 'goodput_mbps'), 1)} Mbit/s"
                    for v in MAIN["s2"]
                )
                + " |"
            )
        w(
            "\n**Against the paper's shape.** The paper: with its recovery, the loss-recovery time stays constant as "
            "path-2 delay grows, while standard MPTCP's grows with it; the receive-buffer occupancy stays flat. From "
            "the "
            "original send no scheme can be flat (a path-2 loss shows one path-2 delay after the send), so the flat "
            "curve "
            "is looked for from detection, and only where path 2 carries a real share of the data."
        )
        for v in ("standard+recovery", "proposed"):
            rec = {x: diff(rows, "s2", v, "standard", x, "path2_recovery_from_detection_mean_ms") for x in xs}
            buf = {x: diff(rows, "s2", v, "standard", x, "rcvbuf_mean_packets") for x in xs}
            w(
                f"- {LABEL[v]} − standard, recovery from detection: {_verdicts(rec, 'longer', 'shorter')} ms delay; "
                f"receive buffer: {_verdicts(buf, 'more', 'fewer')} ms delay."
            )
            w(f"- {_flat_sentence(flatness(rows, v))}")
        if "fig10" in figs:
            w(f"\n![Fig. 10]({figs['fig10']})\n\n![Fig. 11]({figs['fig11']})\n")
    sens = sorted({(p, x) for (p, v, x, cc) in agg if cc != HEADLINE_CC})
    if sens:
        ccs = [HEADLINE_CC] + SENS_CCS
        w("## Sensitivity to the congestion control\n")
        w(
            "The same points with every subflow (and single-path TCP) under each controller; LIA is coupled (RFC "
            "6356), "
            f"and single-path TCP under it is Reno. The headline above uses {CC_LABEL[HEADLINE_CC]}.\n"
        )
        s1x = [x for p, x in sens if p == "s1"]
        if s1x:
            w("Scenario 1: goodput (Mbit/s) / receive buffer (packets) / path-2 share (%):\n")
            w(
                "| controller | path-2 rate (Mbit/s) | "
                + " | ".join(LABEL[v] for v in SENS_VARIANTS["s1"])
                + " | delay-predictive − minRTT: goodput / buffer |"
            )
            w("|---|---|" + "---|" * (len(SENS_VARIANTS["s1"]) + 1))
            for cc in ccs:
                for x in s1x:
                    cells = []
                    for v in SENS_VARIANTS["s1"]:
                        vcc = HEADLINE_CC if (v == "tcp" and cc in COUPLED) else cc

                        g = _getter(_fci, agg, "s1", v, x, vcc)

                        cells.append(
                            g("goodput_mbps")
                            if v == "tcp"
                            else f"{g('goodput_mbps')} / {g('rcvbuf_mean_packets')} / {g('path2_share', 1, 100.0)}"
                        )
                    dg = diff(rows, "s1", "delay-predictive", "minrtt", x, "goodput_mbps", cc)
                    db = diff(rows, "s1", "delay-predictive", "minrtt", x, "rcvbuf_mean_packets", cc)
                    w(
                        f"| {CC_LABEL[cc]} | {x:g} | "
                        + " | ".join(cells)
                        + f" | {dg.words()} ({dg.text(1)}) / {db.words('more', 'fewer')} ({db.text(1)}) |"
                    )
        s2x = [x for p, x in sens if p == "s2"]
        if s2x:
            w("\nScenario 2: recovery from detection (ms) / path-2 share (%) / receive buffer (packets):\n")
            w(
                "| controller | path-2 delay (ms) | "
                + " | ".join(LABEL[v] for v in SENS_VARIANTS["s2"])
                + " | receiver-based − standard, recovery |"
            )
            w("|---|---|" + "---|" * (len(SENS_VARIANTS["s2"]) + 1))
            for cc in ccs:
                for x in s2x:
                    cells = []
                    for v in SENS_VARIANTS["s2"]:
                        g = _getter(_fci, agg, "s2", v, x, cc)

                        cells.append(
                            f"{g('path2_recovery_from_detection_mean_ms')} / {g('path2_share', 1, 100.0)} / "
                            f"{g('rcvbuf_mean_packets')}"
                        )
                    d = diff(
                        rows, "s2", "standard+recovery", "standard", x, "path2_recovery_from_detection_mean_ms", cc
                    )
                    w(
                        f"| {CC_LABEL[cc]} | {x:g} | "
                        + " | ".join(cells)
                        + f" | {d.words('longer', 'shorter')} ({d.text(1)}) |"
                    )
            w("")
        share_lines = []
        for p, v, pxs in (("s1", "minrtt", s1x), ("s2", "standard", s2x)):
            for cc in SENS_CCS:
                get = field("path2_share")
                ds = {
                    x: paired(
                        by_seed(rows, get, scenario=p, variant=v, x=x, cc=cc),
                        by_seed(rows, get, scenario=p, variant=v, x=x, cc=HEADLINE_CC),
                    )
                    for x in pxs
                }
                if ds:
                    unit = "Mbit/s" if p == "s1" else "ms"
                    share_lines.append(
                        f"- Path-2 share of {LABEL[v]}, {CC_LABEL[cc]} − {CC_LABEL[HEADLINE_CC]}: "
                        f"{_verdicts(ds, 'higher', 'lower')} {unit} ("
                        + ", ".join(f"{x:g}: {_points(d)}" for x, d in sorted(ds.items()))
                        + ")."
                    )
        out.extend(share_lines)
        if s2x:
            w(
                "\nThe flatness claim under each controller (the rule of scenario 2: only delays at which both the "
                "scheme "
                f"and standard carry ≥ {MIN_SHARE:.0%} of the data on path 2):\n"
            )
            for cc in SENS_CCS:
                for v in ("standard+recovery", "proposed"):
                    w(f"- {CC_LABEL[cc]}: {_flat_sentence(flatness(rows, v, cc=cc))}")
        w("")
    w("## Provenance\n")
    for k in (
        "command",
        "mobipath_version",
        "git_revision",
        "core_build_git_revision",
        "seeds",
        "runs",
        "reused_runs",
        "tcp_runs_reused",
        "jobs",
        "wall_time_s",
    ):
        if k in prov:
            w(f"- {k.replace('_', ' ')}: `{prov[k]}`")
    w("- scenario files: `scenarios/` next to this report; one row per run in `results.csv`.")
    return "\n".join(out) + "\n"


# ---------------------------------------------------------------------------------------------
# The experiment


def reproduce(
    out_dir: Path,
    *,
    seeds: int = 10,
    parts: Sequence[str] = ("s1", "s2"),
    jobs: Optional[int] = None,
    quick: bool = False,
    command: str = "",
    progress: Optional[Callable[[str, int], Any]] = None,
    resume: bool = True,
) -> dict[str, Any]:
    """Runs P1's two scenarios and writes the report into `out_dir`; returns the summary.
    `progress(description, total)` returns an object with `advance()` (or None for silence).
    Finished runs are kept in ``out_dir/runs`` and reused by the next call; `resume=False`
    discards them first (RunCache)."""
    for p in parts:
        if p not in VARIANTS:
            raise ValueError(f"unknown scenario {p!r} (choose from s1, s2)")
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1 (got {seeds})")
    t0 = time.monotonic()
    durations = QUICK_DURATION if quick else DURATION
    out_dir.mkdir(parents=True, exist_ok=True)
    scen_dir = out_dir / "scenarios"
    scen_dir.mkdir(exist_ok=True)
    keys = plan(parts, seeds, quick)
    paths: dict[Point, str] = {}
    for p, v, x, cc, _ in keys:
        if (p, v, x, cc) not in paths:
            suffix = "" if cc == HEADLINE_CC else f"-{cc}"
            path = scen_dir / f"{p}-{v}-{x:g}{suffix}.toml"
            path.write_text(scenario_text(p, v, x, durations[p], cc), encoding="utf-8")
            paths[(p, v, x, cc)] = str(path)
    bar = progress("P1 runs", len(keys)) if progress else None
    cache = RunCache(out_dir / "runs")
    if not resume:
        cache.clear()
    texts = {pk: Path(p).read_text(encoding="utf-8") for pk, p in paths.items()}
    stand_in = tcp_stand_ins(keys) if not quick else {}
    todo = [k for k in keys if k not in stand_in]
    if bar is not None and stand_in:
        for _ in stand_in:
            bar.advance()
    results, n_jobs = run_all(
        todo, run_one, lambda k: (k, paths[k[:4]]), jobs, bar, cache, lambda k: json.dumps(["p1 run", k, texts[k[:4]]])
    )
    for k, c in stand_in.items():
        results[k] = {**results[c], "x": k[2], "seed": k[4]}
    rows = [results[k] for k in keys]  # plan order, independent of completion order
    write_csv(out_dir / "results.csv", rows, CSV_FIELDS)
    written = [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()} for r in rows]
    agg = aggregate(written)
    figs = write_figures(out_dir, agg, parts)
    prov = provenance_record(
        command,
        seeds=seeds,
        runs=len(rows),
        reused=cache.reused,
        jobs=n_jobs,
        t0=t0,
        scenarios=list(parts),
        duration_s={p: durations[p] for p in parts},
        headline_cc=HEADLINE_CC,
        sensitivity_ccs=SENS_CCS,
        tcp_runs_reused=len(stand_in),
    )
    return write_outputs(out_dir, prov, agg_to_json(agg), render_report(agg, written, prov, figs, parts))
