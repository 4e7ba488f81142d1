"""`mobipath reproduce p2` (alias `aggregation`): P2's two-operator upload through an MPTCP router
and proxy, every scheduler against every congestion control, plus single-operator runs.

Setup (P2 §III as digested in docs/papers.md): client —LAN— MPTCP router (relay) —SKT, KT—
MPTCP proxy (relay) —Internet— server; iperf3-like bulk upload, 30 s per run, 10 repetitions per
pair. Operator uplinks as P2 measured them before its runs: SKT 15.94 Mbit/s, 25.8 ms; KT 38.17
Mbit/s, 40.2 ms (round trips; each link's one-way delay is half); the ACK direction carries P2's
downlink rates (18.89, 37.45 Mbit/s).

Variability (a choice, stated in the report): P2 reports only mean rates, so each operator's
uplink capacity follows a log-normal AR(1) process in 1 s steps around P2's mean (lag-1
correlation 0.7, log standard deviation 0.15, i.e. about 15 % variation), drawn per repetition
from the repetition's seed — so repetitions differ as measured LTE runs do, and a scheduler or
controller that copes badly with changing capacity shows it. No competing traffic is modelled
(P2's "SKT was more congested" is not reproduced by construction).

Ramp-up (P2's explanation for coupled < single): the time until the end-to-end goodput's 1 s
moving average first reaches 90 % of the run's final rate (the mean over its last third);
`experiments.common.ramp_up_time`, docs/metrics.md.
"""

from __future__ import annotations

import json
import math
import random
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, Optional

from .common import (
    RunCache,
    mean_ci,
    provenance_record,
    ramp_up_time,
    run_all,
    write_csv,
    write_outputs,
)
from .common import (
    fmt_ci as _fci,
)
from .paired import paired

SCHEDULERS = ["minrtt", "roundrobin", "redundant", "blest", "ecf", "linux-default"]
CCS = ["lia", "olia", "balia", "wvegas", "reno", "cubic", "bbr"]
COUPLED = ["lia", "olia", "balia", "wvegas"]
SINGLE_CCS = ["reno", "cubic", "bbr"]
QUICK_SCHEDULERS, QUICK_CCS = ["minrtt", "blest"], ["lia", "cubic", "bbr"]
# P2's measured links: uplink Mbit/s, downlink Mbit/s, round-trip ms.
OPERATORS: dict[str, tuple[float, float, float]] = {"skt": (15.94, 18.89, 25.8), "kt": (38.17, 37.45, 40.2)}
SUM_UP = round(sum(v[0] for v in OPERATORS.values()), 2)  # 54.11
# P2's published numbers (Mbit/s).
PAPER_BEST = ("blest", "bbr", 48.6)
PAPER_SINGLE = {("kt", "cubic"): 30.1, ("kt", "bbr"): 27.7, ("skt", "cubic"): 16.14, ("skt", "bbr"): 18.36}
DURATION_S, QUICK_DURATION_S = 30.0, 15.0
# The capacity process (see the module docs).
AR_PHI, AR_SIGMA = 0.7, 0.15
LABEL = {
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
    "skt": "SKT",
    "kt": "KT",
}

CSV_FIELDS = [
    "block",
    "scheduler",
    "cc",
    "operator",
    "seed",
    "duration_s",
    "goodput_mbps",
    "ramp_up_s",
    "skt_goodput_mbps",
    "kt_goodput_mbps",
    "retransmission_ratio",
    "relay_buffer_max_bytes",
]
# (block, scheduler, cc, operator, seed): block "matrix" (operator "both"), "congested" (the matrix's
# schedulers in CONGESTED_SCHEDULERS with a competing bulk TCP flow on SKT's uplink) or "single"
# (scheduler "").
CONGESTED_SCHEDULERS = ["minrtt", "blest"]
Key = tuple[str, str, str, str, int]


def capacity_schedule(operator: str, seed: int, duration_s: float) -> list[tuple[float, float]]:
    """The operator's uplink capacity for repetition `seed`: (start s, Mbit/s) in 1 s steps, a
    log-normal AR(1) process with mean P2's measured rate (module docs). Deterministic: the draws
    come from a generator seeded by (operator, seed) only."""
    mean = OPERATORS[operator][0]
    rng = random.Random(f"p2-capacity/{operator}/{seed}")
    x = rng.gauss(0.0, AR_SIGMA)
    out = []
    for t in range(int(math.ceil(duration_s))):
        out.append((float(t), round(mean * math.exp(x - AR_SIGMA**2 / 2), 3)))
        x = AR_PHI * x + math.sqrt(1 - AR_PHI**2) * rng.gauss(0.0, AR_SIGMA)
    return out


def _link(name: str, seed: int, duration_s: float) -> str:
    up, down, rtt = OPERATORS[name]
    sched = ", ".join(f"{{ at_s = {t:g}, rate_mbps = {r:g} }}" for t, r in capacity_schedule(name, seed, duration_s))
    # About 100 ms of queue at the mean uplink rate (LTE buffers are deep).
    queue = max(20, round(up * 1e6 * 0.1 / 8 / 1500))
    return (
        f'[[links]]\nname = "{name}"\ndelay_ms = {rtt / 2:g}\nqueue_packets = {queue}\n'
        f"rate_schedule = [{sched}]\nreverse = {{ rate_mbps = {down:g} }}\n\n"
    )


def scenario_text(key: Key, duration_s: float) -> str:
    """The TOML scenario of one run (its capacity schedule depends on the seed)."""
    block, sched, cc, op, seed = key
    head = (
        f"# P2 {block}: {LABEL.get(sched, sched) + ' + ' if sched else ''}{LABEL[cc]}"
        f"{' over ' + LABEL[op] if block == 'single' else ''}, repetition {seed} (generated by `mobipath reproduce "
        "p2`)\n"
        f'name = "p2-{block}-{sched or op}-{cc}-{seed}"\nseed = {seed}\nduration_s = {duration_s:g}\n\n'
        '[[nodes]]\nname = "client"\n[[nodes]]\nname = "router"\n[[nodes]]\nname = "proxy"\n[[nodes]]\nname = '
        '"server"\n\n'
        '[[links]]\nname = "lan"\nrate_mbps = 100\ndelay_ms = 0.5\nqueue_packets = 200\n\n'
        '[[links]]\nname = "internet"\nrate_mbps = 1000\ndelay_ms = 1\nqueue_packets = 1000\n\n'
    )
    if block == "single":
        # Plain TCP over one operator, end to end (P2's single-operator runs).
        return (
            head
            + _link(op, seed, duration_s)
            + f'[[paths]]\nname = "{op}"\nfrom = "client"\nto = "server"\nlinks = ["lan", "{op}", "internet"]\n\n'
            + f'[[flows]]\nname = "server"\npath = "{op}"\ncc = "{cc}"\ntraffic = {{ kind = "bulk" }}\n'
        )
    background = ""
    if block == "congested":
        # P2: "SKT was more congested": one competing CUBIC bulk flow from another SKT user shares
        # the SKT uplink for the whole run.
        background = (
            '[[paths]]\nname = "skt-other-user"\nfrom = "router"\nto = "proxy"\nlinks = ["skt"]\n\n'
            '[[flows]]\nname = "other-user"\npath = "skt-other-user"\ncc = "cubic"\ntraffic = { kind = "bulk" }\n\n'
        )
    return (
        head
        + _link("skt", seed, duration_s)
        + _link("kt", seed, duration_s)
        + background
        + '[[paths]]\nname = "lan"\nfrom = "client"\nto = "router"\nlinks = ["lan"]\n\n'
        + '[[paths]]\nname = "skt"\nfrom = "router"\nto = "proxy"\nlinks = ["skt"]\n\n'
        + '[[paths]]\nname = "kt"\nfrom = "router"\nto = "proxy"\nlinks = ["kt"]\n\n'
        + '[[paths]]\nname = "internet"\nfrom = "proxy"\nto = "server"\nlinks = ["internet"]\n\n'
        + '[[flows]]\nname = "client"\npath = "lan"\ncc = "cubic"\ntraffic = { kind = "bulk" }\n\n'
        + f'[[flows]]\nname = "tunnel"\npaths = ["skt", "kt"]\ncc = "{cc}"\nscheduler = "{sched}"\n'
        + 'traffic = { kind = "relay", from = "client" }\n\n'
        + '[[flows]]\nname = "server"\npath = "internet"\ncc = "cubic"\ntraffic = { kind = "relay", from = "tunnel" }\n'
    )


def run_one(key: Key, text: str, file: str) -> dict[str, Any]:
    from .. import _core

    block, sched, cc, op, seed = key
    raw = _core.run(text, file, ".", seed, None)
    s = json.loads(raw["summary"]) if isinstance(raw["summary"], str) else raw["summary"]
    ts = raw["timeseries"]
    pts = [
        (t, v)
        for t, kind, name, metric, v in zip(ts["time_s"], ts["kind"], ts["name"], ts["metric"], ts["value"])
        if kind == "flow" and name == "server" and metric == "goodput_mbps"
    ]
    srv = s["flows"]["server"]
    row: dict[str, Any] = {
        "block": block,
        "scheduler": sched,
        "cc": cc,
        "operator": op,
        "seed": seed,
        "duration_s": float(s["duration_s"]),
        "goodput_mbps": srv["goodput_mbps"],
        "ramp_up_s": ramp_up_time([t for t, _ in pts], [v for _, v in pts]),
    }
    if block in ("matrix", "congested"):
        tun = s["flows"]["tunnel"]
        per = {sf["path"]: sf["goodput_mbps"] for sf in tun["subflows"]}
        row.update(
            skt_goodput_mbps=per.get("skt"),
            kt_goodput_mbps=per.get("kt"),
            retransmission_ratio=tun["retransmission_ratio"],
            relay_buffer_max_bytes=tun["relay_buffer_max_bytes"],
        )
    else:
        row.update(retransmission_ratio=srv["retransmission_ratio"])
    return {"row": row}


def plan(seeds: int, quick: bool) -> list[Key]:
    scheds, ccs = (QUICK_SCHEDULERS, QUICK_CCS) if quick else (SCHEDULERS, CCS)
    keys: list[Key] = [("matrix", s, c, "both", seed) for s in scheds for c in ccs for seed in range(1, seeds + 1)]
    keys += [("single", "", c, op, seed) for op in OPERATORS for c in SINGLE_CCS for seed in range(1, seeds + 1)]
    cs = [x for x in CONGESTED_SCHEDULERS if x in scheds]
    keys += [("congested", s, c, "both", seed) for s in cs for c in ccs for seed in range(1, seeds + 1)]
    return keys


def _seed_means(rows: list[dict[str, Any]], block: str, cc: str, metric: str) -> dict[Any, Optional[float]]:
    """seed → the mean of `metric` over the runs of controller `cc` in `block` with that seed (one per
    scheduler): the runs of one seed share its capacity schedule, so a CI over controllers' runs must
    count seeds, not runs (docs/metrics.md: over seeds, one value per seed)."""
    per: dict[Any, list[Optional[float]]] = {}
    for r in rows:
        if r["block"] == block and r["cc"] == cc:
            v = r.get(metric)
            per.setdefault(r["seed"], []).append(None if v in (None, "") else float(v))
    # A seed counts only where every scheduler's run has a value (a run that never ramps up has
    # none): else its mean would be over the faster schedulers only, unlike the other seeds'.
    out: dict[Any, Optional[float]] = {}
    for sd, v in sorted(per.items(), key=lambda kv: repr(kv[0])):
        vals = [x for x in v if x is not None]
        if v and len(vals) == len(v):
            out[sd] = sum(vals) / len(vals)
    return out


# ---------------------------------------------------------------------------------------------
# Aggregation

Point = tuple[str, str, str, str]
METRICS = ["goodput_mbps", "ramp_up_s", "skt_goodput_mbps", "kt_goodput_mbps"]


def aggregate(rows: list[dict[str, Any]]) -> dict[Point, dict[str, Any]]:
    """(block, scheduler, cc, operator) -> metric -> (mean, CI half-width, n) over repetitions, of
    the values as written to results.csv."""
    groups: dict[Point, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["block"], r["scheduler"], r["cc"], r["operator"]), []).append(r)
    return {
        g: {
            m: (*mean_ci([float(r[m]) for r in rs if r.get(m) is not None]), sum(1 for r in rs if r.get(m) is not None))
            for m in METRICS
        }
        for g, rs in groups.items()
    }


def agg_to_json(agg: dict[Point, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {
            "block": b,
            "scheduler": s,
            "cc": c,
            "operator": o,
            **{m: {"mean": v[0], "ci95": v[1], "n": v[2]} for m, v in ms.items()},
        }
        for (b, s, c, o), ms in sorted(agg.items())
    ]


def _paired(
    rows: list[dict[str, Any]], block: str, a: tuple[str, str], b: tuple[str, str]
) -> tuple[Optional[float], Optional[float]]:
    """Mean and 95 % CI over seeds of goodput(a) − goodput(b), a and b = (scheduler, cc) in the same
    block: the same seed means the same capacity schedule, so the difference is paired."""
    by = {(r["scheduler"], r["cc"], r["seed"]): float(r["goodput_mbps"]) for r in rows if r["block"] == block}
    seeds = sorted({sd for (_, _, sd) in by})
    d = [by[(a[0], a[1], sd)] - by[(b[0], b[1], sd)] for sd in seeds if (*a, sd) in by and (*b, sd) in by]
    return mean_ci(d)


def _sign(m: Optional[float], ci: Optional[float]) -> Optional[int]:
    """+1 / −1 when the paired difference's CI excludes 0, else 0; None if not measured."""
    if m is None or ci is None:
        return None
    return 1 if m - ci > 0 else (-1 if m + ci < 0 else 0)


def _coupled_verdict(rows: list[dict[str, Any]], block: str, s: str, unc: Sequence[str], cou: Sequence[str]) -> str:
    """Every uncoupled controller against every coupled one under scheduler `s`, paired by seed."""
    signs = {(u, c): _sign(*_paired(rows, block, (s, u), (s, c))) for u in unc for c in cou}
    if any(v is None for v in signs.values()) or not signs:
        return "not measured"
    if all(v == 1 for v in signs.values()):
        return f"holds (all {len(signs)} pairs: uncoupled above, paired CIs exclude 0)"
    above = sum(1 for v in signs.values() if v == 1)
    below = [f"{LABEL[u]} < {LABEL[c]}" for (u, c), v in signs.items() if v == -1]
    ties = sum(1 for v in signs.values() if v == 0)
    parts = [f"uncoupled above in {above} of {len(signs)} pairs"]
    if below:
        parts.append("reversed for " + ", ".join(below))
    if ties:
        parts.append(f"{ties} not distinguishable")
    # Refuted only by a pair the other way round; pairs that are merely not distinguishable leave
    # the finding not established.
    return ("does not hold: " if below else "not established: ") + ", ".join(parts)


def _lo_hi(v: Any) -> tuple[float, float]:
    m, ci = v[0], (v[1] or 0.0)
    return m - ci, m + ci


def _below(a: Any, b: Any) -> Optional[bool]:
    """True if a's CI lies entirely below b's, False if entirely above, None if they overlap or
    either has no CI (one seed: nothing can be said)."""
    if a[0] is None or b[0] is None or a[1] is None or b[1] is None:
        return None
    (alo, ahi), (blo, bhi) = _lo_hi(a), _lo_hi(b)
    if ahi < blo:
        return True
    if alo > bhi:
        return False
    return None


# ---------------------------------------------------------------------------------------------
# Figures and report


def write_heatmap(
    out_dir: Path, agg: dict[Point, dict[str, Any]], scheds: Sequence[str], ccs: Sequence[str]
) -> Optional[str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    grid = [[(agg.get(("matrix", s, c, "both"), {}).get("goodput_mbps") or (None,))[0] for c in ccs] for s in scheds]
    if all(v is None for row in grid for v in row):
        return None
    fig, ax = plt.subplots(figsize=(1.2 * len(ccs) + 2, 0.6 * len(scheds) + 1.6))
    im = ax.imshow([[float("nan") if v is None else v for v in row] for row in grid], cmap="viridis", aspect="auto")
    from ..plot import contrasting_text

    ax.set_xticks(range(len(ccs)), [LABEL[c] for c in ccs])
    ax.set_yticks(range(len(scheds)), [LABEL[s] for s in scheds])
    for i, row in enumerate(grid):
        for j, v in enumerate(row):
            if v is not None:
                ax.text(
                    j,
                    i,
                    f"{v:.1f}",
                    ha="center",
                    va="center",
                    fontsize=8,
                    color=contrasting_text(im.cmap(im.norm(v))),
                )
    fig.colorbar(im, ax=ax, label="end-to-end goodput (Mbit/s)")
    ax.set_title(
        f"P2 upload through router and proxy: mean goodput over repetitions (links sum {SUM_UP} Mbit/s)", fontsize=9
    )
    fig.tight_layout()
    fig.savefig(out_dir / "heatmap.png", dpi=110)
    plt.close(fig)
    return "heatmap.png"


def render_report(
    rows: list[dict[str, Any]], agg: dict[Point, dict[str, Any]], prov: dict[str, Any], fig: Optional[str]
) -> str:
    out: list[str] = []
    w = out.append
    seeds, dur = prov["seeds"], prov["duration_s"]
    scheds = [s for s in SCHEDULERS if any(k[1] == s for k in agg)]
    ccs = [c for c in CCS if any(k[0] == "matrix" and k[2] == c for k in agg)]

    def cell(s, c):
        return agg.get(("matrix", s, c, "both"), {}).get("goodput_mbps", (None, None, 0))

    w("# P2 reproduction: two LTE operators through an MPTCP router and proxy\n")
    w(
        "Paper: *Aggregating two LTE operators with an MPTCP router and an MPTCP proxy* (P2, docs/papers.md). "
        "Setup: client —LAN— router (split-connection relay) —SKT, KT— proxy (relay) —Internet— server, bulk upload, "
        f"{dur:g} s per run, {seeds} repetitions per pair (seeds 1..{seeds}). Operator uplinks as P2 measured them "
        f"(SKT {OPERATORS['skt'][0]} Mbit/s / {OPERATORS['skt'][2]} ms, KT {OPERATORS['kt'][0]} Mbit/s / "
        f"{OPERATORS['kt'][2]} ms; sum {SUM_UP} Mbit/s), each following a log-normal AR(1) capacity process around its "
        f"mean (lag-1 correlation {AR_PHI}, log s.d. {AR_SIGMA}; a choice: P2 reports means only). Numbers are the "
        "server's goodput, mean ± 95 % CI over repetitions.\n"
    )
    w("## Scheduler × congestion control (end-to-end goodput, Mbit/s)\n")
    w("| scheduler | " + " | ".join(LABEL[c] for c in ccs) + " |")
    w("|---|" + "---:|" * len(ccs))
    for s in scheds:
        w(f"| {LABEL[s]} | " + " | ".join(_fci(cell(s, c)) for c in ccs) + " |")
    w("")
    # The schedulers of one seed share its capacity schedule, so they are compared paired by seed.
    differ: dict[str, list[tuple[str, str, float, float]]] = {}
    same = []
    # Per controller, the largest |mean| + CI of any two schedulers' paired difference, as a share of
    # its goodput: how far apart two schedulers could be, given the seeds.
    bound: dict[str, float] = {}
    for c in ccs:
        pairs: list[tuple[str, str, float, float]] = []
        for i, a in enumerate(scheds):
            for b in scheds[i + 1 :]:
                m, h = _paired(rows, "matrix", (a, c), (b, c))
                if m is not None and h is not None:
                    pairs.append((a, b, m, h))
        gp = max((cell(s_, c)[0] or 0.0) for s_ in scheds)
        if not pairs or gp <= 0:
            continue
        bound[c] = max(abs(m) + h for _, _, m, h in pairs) / gp
        apart = [x for x in pairs if _sign(x[2], x[3]) != 0]
        if apart:
            differ[c] = sorted(apart, key=lambda x: -abs(x[2]))
        else:
            same.append(c)
    if bound:
        parts = []
        if same:
            parts.append(
                f"no scheduler's goodput differs from another's under "
                f"{'every controller' if len(same) == len(ccs) else ', '.join(LABEL[c] for c in same)}"
                " (every pair's difference includes 0)"
            )
        for c, xs in differ.items():
            top = max(abs(x[2]) for x in xs)
            gp = max((cell(s_, c)[0] or 0.0) for s_ in scheds)
            parts.append(
                f"under {LABEL[c]} {len(xs)} of {len(scheds) * (len(scheds) - 1) // 2} pairs differ, by at most "
                f"{top:.3f} Mbit/s ({100 * top / gp:.2f} % of its goodput): "
                + ", ".join(f"{LABEL[a]} − {LABEL[b]} {m:+.3f} ± {h:.3f}" for a, b, m, h in xs[:3])
                + (f" and {len(xs) - 3} more" if len(xs) > 3 else "")
            )
        # Only a small bound supports "changes little"; a wide one (few seeds, a noisy controller)
        # says nothing either way.
        little = [c for c in bound if bound[c] < 0.01]
        wide = [c for c in bound if bound[c] >= 0.01]
        text = "Paired by seed, " + "; ".join(parts) + ". "
        if little:
            text += (
                f"Under {', '.join(LABEL[c] for c in little)} every such difference, with its CI, lies within "
                f"±{100 * max(bound[c] for c in little):.2f} % of the goodput: the scheduler changes little there. "
                "With a "
                "bulk upload the relay always has data, both operators' uplinks are the bottlenecks and the proxy's "
                "receive buffer never fills, so every scheduler keeps both subflows' windows full; a scheduler only "
                "decides where each packet goes, not how much gets through. The differences P2 measured between "
                "schedulers need what this model leaves out (below): competing traffic, radio loss and the kernel's "
                "timing. "
            )
        if wide:
            text += (
                f"Under {', '.join(f'{LABEL[c]} (±{100 * bound[c]:.1f} %)' for c in wide)} the differences' CIs are "
                "too "
                f"wide, with {seeds} seeds, to say how much the scheduler matters."
            )
        w(text.rstrip() + "\n")
    if fig:
        w(f"![Heatmap]({fig})\n")
    w("## Single operator (plain TCP over one operator, Mbit/s)\n")
    w("| operator | " + " | ".join(LABEL[c] for c in SINGLE_CCS) + " | P2 (CUBIC / BBR) |")
    w("|---|" + "---:|" * len(SINGLE_CCS) + "---:|")

    def single(op, c):
        return agg.get(("single", "", c, op), {}).get("goodput_mbps", (None, None, 0))

    for op in OPERATORS:
        paper = f"{PAPER_SINGLE.get((op, 'cubic'), 'n/a')} / {PAPER_SINGLE.get((op, 'bbr'), 'n/a')}"
        w(f"| {LABEL[op]} | " + " | ".join(_fci(single(op, c)) for c in SINGLE_CCS) + f" | {paper} |")
    w("")

    # Shapes, each judged from the CIs.
    w("## P2's findings, one by one\n")
    filled = [(s, c, cell(s, c)) for s in scheds for c in ccs if cell(s, c)[0] is not None]
    if filled:
        bs, bc, bv = max(filled, key=lambda x: x[2][0])
        ties = [f"{LABEL[s]} + {LABEL[c]}" for s, c, v in filled if (s, c) != (bs, bc) and _below(v, bv) is None]
        pb = cell(PAPER_BEST[0], PAPER_BEST[1])
        # A best pair is named only when no other pair's CI overlaps it; otherwise only the highest mean.
        here = f"{LABEL[bs]} + {LABEL[bc]}, {_fci(bv)} Mbit/s = {bv[0] / SUM_UP * 100:.1f} %"
        if bv[1] is None:
            verdict = f"Here the highest mean is {here}; with one seed there are no CIs, so no pair is shown to be best"
        elif ties:
            verdict = (
                f"Here which pair is best is not established: the highest mean, {here}, has a CI that overlaps those "
                "of " + (", ".join(ties) if len(ties) <= 8 else f"{len(ties)} other pairs")
            )
        else:
            verdict = f"Here: {here}; no other pair's CI overlaps it"
        w(
            f"- **Best pair.** P2: BLEST + BBR, {PAPER_BEST[2]} Mbit/s = {PAPER_BEST[2] / SUM_UP * 100:.1f} % of the "
            f"uplinks' sum. "
            + verdict
            + (f". BLEST + BBR here: {_fci(pb)} Mbit/s ({pb[0] / SUM_UP * 100:.1f} %)." if pb[0] is not None else ".")
        )
        unc_ccs = [c for c in ccs if c not in COUPLED]
        cou_ccs = [c for c in ccs if c in COUPLED]
        verdicts = (
            [f"{LABEL[s]}: {_coupled_verdict(rows, 'matrix', s, unc_ccs, cou_ccs)}" for s in scheds]
            if unc_ccs and cou_ccs
            else []
        )
        if verdicts:
            w(
                "- **Uncoupled above coupled in every scheduler** (P2; here each uncoupled controller against each "
                "coupled "
                "one under the same scheduler, goodput difference paired by seed — the same capacity schedule): "
                + "; ".join(verdicts)
                + "."
            )
        kt = max(
            (single("kt", c) for c in SINGLE_CCS if single("kt", c)[0] is not None), key=lambda v: v[0], default=None
        )
        if kt is not None:
            below = [
                f"{LABEL[s]} + {LABEL[c]}"
                for s in scheds
                for c in ("lia", "olia", "balia")
                if cell(s, c)[0] is not None and _below(cell(s, c), kt) is True
            ]
            n = sum(1 for s in scheds for c in ("lia", "olia", "balia") if cell(s, c)[0] is not None)
            w(
                "- **LIA, OLIA and Balia below the better single operator** (P2: KT alone, here the best "
                "single-operator "
                f"KT run, {_fci(kt)} Mbit/s): {len(below)} of {n} coupled pairs lie entirely below it"
                + (f" ({', '.join(below)})." if below else ".")
            )
        if "wvegas" in ccs:
            lowest = []
            for s in scheds:
                vals = {c: cell(s, c) for c in ccs if cell(s, c)[0] is not None}
                if "wvegas" in vals and all(
                    _below(vals["wvegas"], v) is True for c, v in vals.items() if c != "wvegas"
                ):
                    lowest.append(LABEL[s])
            w(
                f"- **wVegas lowest** (P2): below every other controller (CIs apart) with {len(lowest)} of "
                f"{len(scheds)} "
                f"schedulers{' (' + ', '.join(lowest) + ')' if lowest else ''}."
            )
        order = []
        rel = {1: ">", -1: "<", 0: "≈"}
        for s in scheds:
            if all(c in ccs for c in ("bbr", "cubic", "reno")):
                bbr_cubic = _sign(*_paired(rows, "matrix", (s, "bbr"), (s, "cubic")))
                cubic_reno = _sign(*_paired(rows, "matrix", (s, "cubic"), (s, "reno")))
                if bbr_cubic is not None and cubic_reno is not None:
                    order.append(f"{LABEL[s]}: BBR {rel[bbr_cubic]} CUBIC {rel[cubic_reno]} Reno")
        if order:
            w(
                "- **Uncoupled ranking BBR > CUBIC > Reno** (P2; '>' or '<' only where the difference paired by seed "
                "excludes 0): " + "; ".join(order) + "."
            )
    w("")
    cong = [s for s in scheds if any(k[0] == "congested" and k[1] == s for k in agg)]
    if cong:

        def ccell(s, c):
            return agg.get(("congested", s, c, "both"), {}).get("goodput_mbps", (None, None, 0))

        w("## With another user's bulk TCP flow on SKT's uplink (P2: \"SKT was more congested\")\n")
        w("| scheduler | " + " | ".join(LABEL[c] for c in ccs) + " |")
        w("|---|" + "---:|" * len(ccs))
        for s in cong:
            w(f"| {LABEL[s]} | " + " | ".join(_fci(ccell(s, c)) for c in ccs) + " |")
        unc_ccs = [c for c in ccs if c not in COUPLED]
        cou_ccs = [c for c in ccs if c in COUPLED and c != "wvegas"]
        verdicts = (
            [f"{LABEL[s]}: {_coupled_verdict(rows, 'congested', s, unc_ccs, cou_ccs)}" for s in cong]
            if unc_ccs and cou_ccs
            else []
        )
        if verdicts:
            w(
                "\nCoupled controllers (LIA, OLIA, Balia) give way to the competing flow by design (RFC 6356: no more "
                "than one "
                "TCP flow on its best path); uncoupled ones take a full share on each path. Here (LIA, OLIA, Balia "
                "against "
                "Reno, CUBIC, BBR, paired by seed): " + "; ".join(verdicts) + ".\n"
            )
    w("## Ramp-up (P2's explanation for coupled below single)\n")
    w(
        "Time until the end-to-end goodput's 1 s moving average first reaches 90 % of the run's final rate (mean over "
        "its last third). The schedulers' runs of one seed share its capacity schedule, so they are not independent: "
        "each seed gives one value, the mean over the schedulers' runs, and the table shows mean ± 95 % CI over "
        "seeds:\n"
    )
    w("| controller | ramp-up (s) | goodput (Mbit/s) | seeds |")
    w("|---|---:|---:|---:|")
    ramp: dict[str, dict[Any, Optional[float]]] = {}
    for c in ccs:
        ramp[c] = _seed_means(rows, "matrix", c, "ramp_up_s")
        ru = mean_ci(list(ramp[c].values()))
        gp = mean_ci(list(_seed_means(rows, "matrix", c, "goodput_mbps").values()))
        w(f"| {LABEL[c]} | {_fci(ru)} | {_fci(gp)} | {sum(1 for v in ramp[c].values() if v is not None)} |")
    cou = [c for c in ("lia", "olia", "balia") if c in ramp]
    unc = [c for c in ("reno", "cubic", "bbr") if c in ramp]
    if cou and unc:
        # Coupled minus uncoupled ramp-up, paired by seed, for every such pair of controllers.
        signs = {(c, u): paired(ramp[c], ramp[u]) for c in cou for u in unc}
        if any(d.sign is None for d in signs.values()):
            verdict = "not decided here — too few seeds for a paired comparison."
        elif all(d.sign == 1 for d in signs.values()):
            verdict = (
                f"holds here — each of {', '.join(LABEL[c] for c in cou)} takes longer than each of "
                f"{', '.join(LABEL[u] for u in unc)} (all {len(signs)} differences paired by seed exclude 0)."
            )
        else:
            faster = [f"{LABEL[c]} before {LABEL[u]} ({d.text(2, 's')})" for (c, u), d in signs.items() if d.sign == -1]
            slower = sum(1 for d in signs.values() if d.sign == 1)
            n_ties = sum(1 for d in signs.values() if d.sign == 0)
            verdict = (
                "does not hold here — a coupled controller ramps up first: " + "; ".join(faster) + "."
                if faster
                else f"not decided here — of {len(signs)} coupled–uncoupled pairs (paired by seed), {slower} ramp up "
                f"more slowly and {n_ties} are not distinguishable."
            )
        w("\nP2's explanation (coupled controllers ramp up more slowly): " + verdict)
    w("")
    w("## Where mobipath differs from P2, and why\n")
    w(
        "- P2 ran the Linux MPTCP v0.9x kernel on a Raspberry Pi with phones tethered; mobipath simulates the "
        "schedulers and "
        "controllers as `docs`/README describe (Linux-like, not the kernel itself), the relays as ideal split "
        "connections "
        "with 4 MiB buffers, and the LAN and Internet legs as clean 100 / 1000 Mbit/s links."
    )
    w(
        "- Capacity: a stated stochastic process around P2's means, not measured traces. Competing traffic only in the "
        "congested block (one bulk CUBIC flow of another user on SKT's uplink, a stand-in: P2 does not measure the "
        "load)."
    )
    w("- Deep (≈100 ms) drop-tail queues at each operator's uplink: P2 does not state the operators' buffering.")
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
        "jobs",
        "wall_time_s",
    ):
        w(f"- {k.replace('_', ' ')}: `{prov.get(k)}`")
    w(
        "- scenario files: `scenarios/` next to this report (one per run: the capacity schedule depends on the seed); "
        "one "
        "row per run in `results.csv`."
    )
    return "\n".join(out) + "\n"


def reproduce(
    out_dir: Path,
    *,
    seeds: int = 10,
    jobs: Optional[int] = None,
    quick: bool = False,
    progress: Optional[Callable[[str, int], Any]] = None,
    resume: bool = True,
    command: Optional[str] = None,
) -> dict[str, Any]:
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1 (got {seeds})")
    t0 = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    scen_dir = out_dir / "scenarios"
    scen_dir.mkdir(exist_ok=True)
    duration = QUICK_DURATION_S if quick else DURATION_S
    keys = plan(seeds, quick)
    texts: dict[Key, str] = {}

    def name(k):
        return f"{k[0]}-{k[1] or k[3]}-{k[2]}-{k[4]}.toml"

    for k in keys:
        texts[k] = scenario_text(k, duration)
        (scen_dir / name(k)).write_text(texts[k], encoding="utf-8")
    cache = RunCache(out_dir / "runs")
    if not resume:
        cache.clear()
    bar = progress("P2 runs", len(keys)) if progress else None
    results, n_jobs = run_all(
        keys, run_one, lambda k: (k, texts[k], name(k)), jobs, bar, cache, lambda k: json.dumps(["p2 run", k, texts[k]])
    )
    rows = [results[k]["row"] for k in keys]
    write_csv(out_dir / "results.csv", rows, CSV_FIELDS)
    written = [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()} for r in rows]
    agg = aggregate(written)
    scheds, ccs = (QUICK_SCHEDULERS, QUICK_CCS) if quick else (SCHEDULERS, CCS)
    fig = write_heatmap(out_dir, agg, scheds, ccs)
    prov = provenance_record(
        command, seeds=seeds, runs=len(rows), reused=cache.reused, jobs=n_jobs, t0=t0, duration_s=duration
    )
    return write_outputs(out_dir, prov, agg_to_json(agg), render_report(written, agg, prov, fig))
