"""P3 reproduction: Explicit Handoff Notification (EHN) against Tahoe and the other handoff schemes
of its literature, on P3's model and on the P0 train (docs/papers.md, P3; docs/p3.md).

P3's model (§4.1): a fixed host sends bulk data to a mobile host over a wired hop, a base station
and a wireless hop; the mobile host hands off every 10 s for 4 s and the wireless hop delivers
nothing meanwhile. P3 gives no rates, delays or buffers: mobipath uses wired 10 Mbit/s / 10 ms,
wireless 2 Mbit/s / 5 ms with a 50-packet queue, a 64 KB receive window (no congestion loss, as
P3 requires), Tahoe without SACK and one ACK per segment (P3 Fig. 3 counts ACKs per packet).

Blocks (each a set of (block, scheme, x, seed) runs):
- ``paper``: the deterministic pattern (handoffs at 10-14, 24-28, 38-42, 52-56 s), every scheme,
  one run each (nothing random), plus Tahoe without handoffs; Figs. 2 and 3 come from these.
- ``det-duration``: the deterministic cycle with the handoff duration swept (Tahoe and EHN): shows
  how Tahoe's backed-off timer makes the gain jump.
- ``duration``, ``rate``, ``rtt``, ``loss``: handoffs at random times (exponential good periods),
  swept over the handoff duration, the handoffs per minute, the wired round-trip time and random
  loss on the wireless hop in good periods; every scheme, mean and 95 % CI over seeds.
- ``train``: one operator's link of the P0 high-speed train (A3/X2 handovers, 40-60 ms
  interruptions, 25 Mbit/s), CUBIC and Tahoe with and without the schemes.

Schemes: Tahoe (P3's baseline), Reno, NewReno, CUBIC, BBR; fast retransmission after handoff
(Caceres & Iftode 1995), Freeze-TCP (Goff et al. 2000), BUFFER+FREEZE (as P3 §2 describes it),
EHN (P3 §3). The last four run over Tahoe, as P3's EHN does.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, Optional

from .common import RunCache, fmt, fmt_ci, mean_ci, provenance_record, run_all, write_csv, write_outputs

PAPER_TAHOE, PAPER_EHN = 12.383, 13.383  # P3 §4.2.2 (no unit given)
PAPER_GOOD_S, PAPER_HANDOFF_S = 10.0, 4.0  # P3 §4.2.2: 10 s between handoffs of 4 s
SCHEMES = ["tahoe", "reno", "newreno", "cubic", "bbr", "fr-after-handoff", "freeze-tcp", "buffer-freeze", "ehn"]
# Tahoe and EHN again under 4.4BSD's retransmission timer (`[flows.tcp] timer = "bsd"`: 500 ms ticks,
# RTO >= 1 s), the timer of the BSD-derived stacks of P3's time; run in the paper, det-duration,
# duration and loss blocks.
BSD_SCHEMES = ["tahoe-bsd", "ehn-bsd"]
BSD_BLOCKS = ("paper", "det-duration", "duration", "loss")
TRAIN_SCHEMES = [
    "cubic",
    "cubic+ehn",
    "cubic+freeze-tcp",
    "cubic+fr-after-handoff",
    "cubic+ehn+table",
    "cubic+freeze-tcp+table",
    "tahoe",
    "tahoe+ehn",
]
# The handover table of the `+table` train schemes: learned from runs of the plain train scenario
# on seeds disjoint from the evaluated ones (as `reproduce p0`).
TABLE_FIRST_SEED, TABLE_RUNS, QUICK_TABLE_RUNS = 100000, 50, 10
LABEL = {
    "tahoe": "Tahoe",
    "reno": "Reno",
    "newreno": "NewReno",
    "cubic": "CUBIC",
    "bbr": "BBR",
    "fr-after-handoff": "fast retransmit after handoff",
    "freeze-tcp": "Freeze-TCP",
    "buffer-freeze": "BUFFER+FREEZE",
    "ehn": "EHN",
    "tahoe-bsd": "Tahoe (BSD timer)",
    "ehn-bsd": "EHN (BSD timer)",
    "tahoe-no-handoff": "Tahoe, no handoffs",
    "cubic+ehn": "CUBIC + EHN",
    "cubic+freeze-tcp": "CUBIC + Freeze-TCP",
    "cubic+fr-after-handoff": "CUBIC + FR after handoff",
    "tahoe+ehn": "Tahoe + EHN",
    "cubic+ehn+table": "CUBIC + EHN (table)",
    "cubic+freeze-tcp+table": "CUBIC + Freeze-TCP (table)",
}
# Sweeps: block -> (x values, x label, quick x values).
SWEEPS: dict[str, tuple[list[float], str, list[float]]] = {
    "duration": ([0.5, 1, 2, 4, 8], "handoff duration (s)", [0.5, 4]),
    "rate": ([1, 2, 4, 6, 8], "handoffs per minute", [2, 6]),
    "rtt": ([10, 30, 100, 200, 300], "round-trip propagation delay (ms)", [10, 300]),
    "loss": ([0, 0.1, 0.5, 1], "random loss on the wireless hop in good periods (%)", [0, 1]),
}
DET_DURATIONS = [0.5, 1, 2, 3, 4, 5, 6, 7, 8]
DURATION_S, TRAIN_DURATION_S = 60.0, 70.0
QUICK_DURATION_S = 30.0

CSV_FIELDS = [
    "block",
    "scheme",
    "x",
    "seed",
    "duration_s",
    "goodput_mbps",
    "timeouts",
    "fast_retransmits",
    "window_probes",
    "retransmission_ratio",
    "handoffs",
    "mean_handoff_gap_ms",
    "ehn_freezes",
    "ehn_resumes",
    "ehn_frozen_s",
    "predicted_episodes",
    "false_alarms",
    "missed_handovers",
]
METRICS = ["goodput_mbps", "timeouts", "fast_retransmits", "mean_handoff_gap_ms"]

Key = tuple[str, str, float, int]
Point = tuple[str, str, float]


def _scheme(scheme: str) -> tuple[str, str, bool]:
    """(cc, the flow's `handoff` table or "", BUFFER+FREEZE at the base station)."""
    base, _, extra = scheme.partition("+")
    if base in ("fr-after-handoff", "freeze-tcp", "ehn"):
        return "tahoe", f'handoff = {{ scheme = "{base}" }}', False
    if base == "buffer-freeze":
        return "tahoe", "", True
    if extra.endswith("+table"):
        return base, f'handoff = {{ scheme = "{extra[: -len("+table")]}", predict = "table" }}', False
    if extra:
        return base, f'handoff = {{ scheme = "{extra}" }}', False
    return base, "", False


def scenario_text(block: str, scheme: str, x: float, duration_s: float) -> str:
    """The TOML scenario of one point (the seed is given at run time)."""
    if block == "train":
        return _train_text(scheme, duration_s)
    bsd = scheme.endswith("-bsd")
    base = scheme[: -len("-bsd")] if bsd else scheme
    cc, handoff, buffer_freeze = _scheme("tahoe" if base == "tahoe-no-handoff" else base)
    tcp = '{ sack = false, timer = "bsd" }' if bsd else "{ sack = false }"
    wired_ms, loss, queued = 10.0, 0.0, "forward" if buffer_freeze else "lost"
    if block == "paper" or block == "det-duration":
        d = PAPER_HANDOFF_S if block == "paper" else x
        pattern = f'{{ kind = "deterministic", good_s = {PAPER_GOOD_S:g}, handoff_s = {d:g} }}'
    else:
        good_mean, d = 10.0, 4.0
        if block == "duration":
            d = x
        elif block == "rate":
            good_mean = 60.0 / x - d
        elif block == "rtt":
            wired_ms = x / 2 - 5.0  # the wireless hop adds 5 ms each way
        elif block == "loss":
            loss = x / 100.0
        pattern = (
            f'{{ kind = "random", good = {{ sojourn = "exponential", mean_s = {good_mean:g} }}, '
            f'handoff = {{ sojourn = "deterministic", mean_s = {d:g} }} }}'
        )
    if scheme == "tahoe-no-handoff":
        pattern = '{ kind = "list", intervals = [] }'
    loss_line = f'loss = {{ model = "bernoulli", p = {loss:g} }}\n' if loss > 0 else ""
    el = ", buffer_freeze = true" if buffer_freeze else ""
    return (
        f"# P3 {block}: {LABEL.get(scheme, scheme)}, x = {x:g} (generated by `mobipath reproduce p3`)\n"
        f'name = "p3-{block}-{scheme}-{x:g}"\nseed = 1\nduration_s = {duration_s:g}\n\n'
        '[[nodes]]\nname = "fh"\n[[nodes]]\nname = "mh"\n'
        f'[[nodes]]\nname = "bs"\nelement = {{ kind = "base-station"{el} }}\n\n'
        f'[[links]]\nname = "wired"\nrate_mbps = 10\ndelay_ms = {wired_ms:g}\nqueue_packets = 100\n\n'
        f'[[links]]\nname = "wireless"\nrate_mbps = 2\ndelay_ms = 5\nqueue_packets = 50\n{loss_line}\n'
        '[[paths]]\nname = "p"\nfrom = "fh"\nto = "mh"\nlinks = ["wired", "wireless"]\nvia = ["bs"]\n\n'
        f'[[handoffs]]\nlink = "wireless"\npattern = {pattern}\nqueued = "{queued}"\n\n'
        f'[[flows]]\nname = "tcp"\npath = "p"\ncc = "{cc}"\ntraffic = {{ kind = "bulk" }}\n'
        f"tcp = {tcp}\nreceiver = {{ rcv_buf_bytes = 65535, delayed_ack = false }}\n"
        + (handoff + "\n" if handoff else "")
    )


def _train_text(scheme: str, duration_s: float) -> str:
    """One operator of P0's train: server —wired— base station —LTE (A3/X2 handovers)— train."""
    cc, handoff, _ = _scheme(scheme)
    return (
        f"# P3 on the P0 train: {LABEL.get(scheme, scheme)} (generated by `mobipath reproduce p3`)\n"
        f'name = "p3-train-{scheme}"\nseed = 1\nduration_s = {duration_s:g}\n\n'
        '[[nodes]]\nname = "server"\n[[nodes]]\nname = "train"\n'
        '[[nodes]]\nname = "enb"\nelement = { kind = "base-station" }\n\n'
        '[[links]]\nname = "core"\nrate_mbps = 100\ndelay_ms = 10\nqueue_packets = 500\n\n'
        '[[links]]\nname = "lte-a"\nrate_mbps = 25\ndelay_ms = 10\nqueue_packets = 100\n\n'
        '[[paths]]\nname = "p"\nfrom = "server"\nto = "train"\nlinks = ["core", "lte-a"]\nvia = ["enb"]\n\n'
        '[[handoffs]]\nlink = "lte-a"\npattern = { kind = "train" }\n\n'
        f'[[flows]]\nname = "tcp"\npath = "p"\ncc = "{cc}"\ntraffic = {{ kind = "bulk" }}\n'
        + (handoff + "\n" if handoff else "")
        + '\n[hst]\nlinks = ["lte-a"]\n'
        + (
            'table = "../table.csv"  # learned by `mobipath reproduce p3` (see the report)\n'
            if "predict" in handoff
            else ""
        )
    )


def run_one(key: Key, text: str, file: str, keep_series: bool, base_dir: str = ".") -> dict[str, Any]:
    from .. import _core

    block, scheme, x, seed = key
    raw = _core.run(text, file, base_dir, seed, None)
    s = json.loads(raw["summary"]) if isinstance(raw["summary"], str) else raw["summary"]
    f = s["flows"]["tcp"]
    gaps = [h["app_gap_ms"]["tcp"] for h in s.get("handoffs", []) if "tcp" in h.get("app_gap_ms", {})]
    row: dict[str, Any] = {
        "block": block,
        "scheme": scheme,
        "x": x,
        "seed": seed,
        "duration_s": float(s["duration_s"]),
        "goodput_mbps": f["goodput_mbps"],
        "timeouts": f["timeouts"],
        "fast_retransmits": f["fast_retransmits"],
        "window_probes": f["window_probes"],
        "retransmission_ratio": f["retransmission_ratio"],
        "handoffs": len(s.get("handoffs", [])),
        "mean_handoff_gap_ms": sum(gaps) / len(gaps) if gaps else None,
        "ehn_freezes": (f.get("ehn") or {}).get("freezes"),
        "ehn_resumes": (f.get("ehn") or {}).get("resumes"),
        "ehn_frozen_s": (f.get("ehn") or {}).get("frozen_s"),
        "predicted_episodes": f.get("predicted_episodes"),
        "false_alarms": f.get("false_alarms"),
        "missed_handovers": f.get("missed_handovers"),
    }
    out: dict[str, Any] = {"row": row}
    if keep_series:
        ts = raw["timeseries"]
        series: dict[str, list[tuple[float, float]]] = {}
        for t, kind, _name, metric, v in zip(ts["time_s"], ts["kind"], ts["name"], ts["metric"], ts["value"]):
            if kind == "flow" and metric in ("cwnd_segments", "acks_per_s", "goodput_mbps"):
                series.setdefault(metric, []).append((t, v))
        out["series"] = series
        out["handoffs"] = [(h["start_s"], h["end_s"]) for h in s.get("handoffs", [])]
    return out


def plan(seeds: int, quick: bool, blocks: Sequence[str]) -> list[Key]:
    keys: list[Key] = []
    if "paper" in blocks:
        keys += [("paper", s, 0.0, 1) for s in ["tahoe-no-handoff"] + SCHEMES + BSD_SCHEMES]
    if "det-duration" in blocks:
        keys += [
            ("det-duration", s, float(d), 1)
            for s in ["tahoe", "ehn"] + BSD_SCHEMES
            for d in (([1, 4, 7]) if quick else DET_DURATIONS)
        ]
    for b, (xs, _, qxs) in SWEEPS.items():
        if b in blocks:
            schemes = SCHEMES + (BSD_SCHEMES if b in BSD_BLOCKS else [])
            keys += [
                (b, s, float(x), seed) for s in schemes for x in (qxs if quick else xs) for seed in range(1, seeds + 1)
            ]
    if "train" in blocks:
        keys += [("train", s, 0.0, seed) for s in TRAIN_SCHEMES for seed in range(1, seeds + 1)]
    return keys


BLOCKS = ["paper", "det-duration", "duration", "rate", "rtt", "loss", "train"]


# ---------------------------------------------------------------------------------------------
# Aggregation


def aggregate(rows: list[dict[str, Any]]) -> dict[Point, dict[str, Any]]:
    """(block, scheme, x) -> metric -> (mean, CI half-width, n) over seeds, of the values as
    written to results.csv."""
    groups: dict[Point, list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["block"], r["scheme"], r["x"]), []).append(r)
    agg: dict[Point, dict[str, Any]] = {}
    for g, rs in groups.items():
        agg[g] = {
            m: (
                *mean_ci([round(float(r[m]), 6) for r in rs if r.get(m) is not None]),
                sum(1 for r in rs if r.get(m) is not None),
            )
            for m in METRICS
        }
    return agg


def paired_diff(
    rows: list[dict[str, Any]], block: str, a: str, b: str, x: float
) -> tuple[Optional[float], Optional[float], int]:
    """Mean and 95 % CI of goodput(a) − goodput(b) over the seeds both ran (same seed = the same
    handoff times), as written to results.csv."""
    by = {
        (r["scheme"], r["seed"]): round(float(r["goodput_mbps"]), 6)
        for r in rows
        if r["block"] == block and r["x"] == x
    }
    d = [by[(a, s)] - by[(b, s)] for (sch, s) in by if sch == a and (b, s) in by]
    m, ci = mean_ci(d)
    return m, ci, len(d)


def agg_to_json(agg: dict[Point, dict[str, Any]]) -> list[dict[str, Any]]:
    return [
        {"block": b, "scheme": s, "x": x, **{m: {"mean": v[0], "ci95": v[1], "n": v[2]} for m, v in ms.items()}}
        for (b, s, x), ms in sorted(agg.items())
    ]


# ---------------------------------------------------------------------------------------------
# Figures and report


def _gain_by_seed(rows: list[dict[str, Any]], x: float) -> dict[Any, float]:
    """seed → EHN − Tahoe goodput at handoff duration `x` of the random-time sweep."""
    by = {
        (r["scheme"], r["seed"]): round(float(r["goodput_mbps"]), 6)
        for r in rows
        if r["block"] == "duration" and r["x"] == x
    }
    return {sd: by[("ehn", sd)] - by[("tahoe", sd)] for (sch, sd) in by if sch == "ehn" and ("tahoe", sd) in by}


def _duration_trend(rows: list[dict[str, Any]], agg: dict[Point, dict[str, Any]]) -> str:
    """What the random-time duration sweep says about EHN − Tahoe against the handoff duration:
    each step between neighbouring durations, the change of the gain paired by seed (the same seed
    draws the same handoff times at every duration), called growing or shrinking only where its
    CI excludes 0."""
    pts = sorted({x for (b, _, x) in agg if b == "duration"})
    gains = {x: _gain_by_seed(rows, x) for x in pts}
    steps = []
    for a, b in zip(pts, pts[1:]):
        m, ci = mean_ci([gains[b][sd] - gains[a][sd] for sd in sorted(set(gains[a]) & set(gains[b]), key=repr)])
        if m is not None and ci is not None:
            steps.append((a, b, m, ci))
    if not steps:
        return "the gain's trend with the duration is not measured"
    word = lambda m, ci: "grows" if m - ci > 0 else ("shrinks" if m + ci < 0 else "not established")  # noqa: E731
    parts = [f"{a:g} → {b:g} s {m:+.3f} ± {ci:.3f} ({word(m, ci)})" for a, b, m, ci in steps]
    grows = all(m - ci > 0 for _, _, m, ci in steps)
    return (
        "EHN − Tahoe "
        + ("grows at every step" if grows else "does not grow at every step")
        + " of the duration (each step's change of the gain, Mbit/s, paired by seed: "
        + "; ".join(parts)
        + ")"
    )


def _verdict(m: Optional[float], ci: Optional[float]) -> str:
    if m is None or ci is None:
        return "not measured"
    if m - ci > 0:
        return "higher"
    if m + ci < 0:
        return "lower"
    return "no difference within the 95 % CI"


def write_figures(out_dir: Path, series: dict[str, dict[str, Any]], agg: dict[Point, dict[str, Any]]) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs: dict[str, str] = {}
    runs = [("tahoe-no-handoff", "Tahoe, no handoffs"), ("tahoe", "Tahoe with handoffs"), ("ehn", "EHN")]
    if all(s in series for s, _ in runs):
        fig, axes = plt.subplots(3, 1, figsize=(10, 8), sharex=True)
        for ax, (s, title) in zip(axes, runs):
            pts = series[s]["series"].get("cwnd_segments", [])
            ax.plot([t for t, _ in pts], [v for _, v in pts], lw=0.9)
            for a, b in series[s]["handoffs"]:
                ax.axvspan(a, b, color="grey", alpha=0.2)
            ax.set_title(title, fontsize=9)
            ax.set_ylabel("cwnd (segments)")
        axes[-1].set_xlabel("time (s); grey: handoffs")
        fig.suptitle("Fig. 2 analogue: congestion window over time (P3's deterministic pattern)", fontsize=10)
        fig.tight_layout()
        fig.savefig(out_dir / "fig2-cwnd.png", dpi=110)
        plt.close(fig)
        figs["fig2"] = "fig2-cwnd.png"
        fig, ax = plt.subplots(figsize=(10, 3.5))
        for s, title in runs[1:]:
            pts = series[s]["series"].get("acks_per_s", [])
            per_s: dict[int, list[float]] = {}
            for t, v in pts:
                per_s.setdefault(int(t), []).append(v)
            secs = sorted(per_s)
            ax.step(secs, [sum(per_s[x]) / len(per_s[x]) for x in secs], where="post", label=title)
        for a, b in series["tahoe"]["handoffs"]:
            ax.axvspan(a, b, color="grey", alpha=0.2)
        ax.set_xlabel("time (s); grey: handoffs")
        ax.set_ylabel("ACKs sent per second")
        ax.legend(fontsize=8)
        ax.set_title("Fig. 3 analogue: ACKs the mobile host sends per second (1 s bins)", fontsize=10)
        fig.tight_layout()
        fig.savefig(out_dir / "fig3-acks.png", dpi=110)
        plt.close(fig)
        figs["fig3"] = "fig3-acks.png"
    sweep_blocks = [b for b in SWEEPS if any(k[0] == b for k in agg)]
    if sweep_blocks:
        fig, axes = plt.subplots(1, len(sweep_blocks), figsize=(4.6 * len(sweep_blocks), 3.8), squeeze=False)
        for ax, b in zip(axes[0], sweep_blocks):
            for s in SCHEMES:
                xs: list[float] = sorted(x for (bb, ss, x) in agg if bb == b and ss == s)
                ys = [agg[(b, s, x)]["goodput_mbps"] for x in xs]
                if xs:
                    ax.errorbar(
                        xs,
                        [y[0] for y in ys],
                        yerr=[y[1] or 0 for y in ys],
                        marker="o",
                        ms=3,
                        lw=1,
                        capsize=2,
                        label=LABEL[s],
                    )
            ax.set_xlabel(SWEEPS[b][1])
            ax.set_ylabel("goodput (Mbit/s)")
            ax.grid(alpha=0.3)
        axes[0][0].legend(fontsize=6)
        fig.suptitle("Sweeps: mean goodput ± 95 % CI over seeds (handoffs at random times)", fontsize=10)
        fig.tight_layout()
        fig.savefig(out_dir / "sweeps.png", dpi=110)
        plt.close(fig)
        figs["sweeps"] = "sweeps.png"
    return figs


def render_report(
    rows: list[dict[str, Any]], agg: dict[Point, dict[str, Any]], prov: dict[str, Any], figs: dict[str, str]
) -> str:
    out: list[str] = []
    w = out.append
    seeds = prov["seeds"]
    w("# P3 reproduction: Explicit Handoff Notification and its rivals\n")
    w(
        "Paper: *Explicit Handoff Notification* (P3, docs/papers.md): the mobile host tells the fixed host that a "
        "handoff starts; the fixed host waits in persist mode instead of timing out. Model and choices: docs/p3.md "
        "(P3 gives no rates, delays, buffers or timer values). Wired 10 Mbit/s / 10 ms, base station, wireless "
        "2 Mbit/s / 5 ms, 50-packet queue, 64 KB receive window, Tahoe without SACK, one ACK per segment; packets at "
        "the old base station are lost (BUFFER+FREEZE: forwarded).\n"
    )
    pt = {s: agg.get(("paper", s, 0.0), {}).get("goodput_mbps") for s in ["tahoe-no-handoff"] + SCHEMES + BSD_SCHEMES}
    tahoe_p, ehn_p = pt.get("tahoe"), pt.get("ehn")
    if tahoe_p and ehn_p:
        t, e = tahoe_p[0], ehn_p[0]
        row = {r["scheme"]: r for r in rows if r["block"] == "paper"}
        w("## P3's experiment (deterministic: handoffs at 10-14, 24-28, 38-42, 52-56 s; one run each)\n")
        w("| | Tahoe | EHN | EHN / Tahoe |")
        w("|---|---:|---:|---:|")
        w(
            f"| P3 §4.2.2 (unit not given) | {PAPER_TAHOE} | {PAPER_EHN} | {PAPER_EHN / PAPER_TAHOE:.3f} "
            f"(+{(PAPER_EHN / PAPER_TAHOE - 1) * 100:.1f} %) |"
        )
        w(f"| mobipath, Linux timer, goodput (Mbit/s) | {t:.4f} | {e:.4f} | {e / t:.3f} ({(e / t - 1) * 100:+.1f} %) |")
        tb, eb = pt.get("tahoe-bsd"), pt.get("ehn-bsd")
        if tb and eb:
            w(
                f"| mobipath, BSD timer, goodput (Mbit/s) | {tb[0]:.4f} | {eb[0]:.4f} | {eb[0] / tb[0]:.3f} "
                f"({(eb[0] / tb[0] - 1) * 100:+.1f} %) |"
            )
        tr, er = row["tahoe"], row["ehn"]
        n_ho = max(1, int(tr["handoffs"] or 4))
        w(
            f"\nTahoe without handoffs: {fmt((pt['tahoe-no-handoff'] or (None,))[0], 4)} Mbit/s. Tahoe timed out "
            f"{tr['timeouts']} times ({tr['timeouts'] / n_ho:g} per handoff) and restarted from cwnd 1 in every "
            "handoff; "
            f"EHN timed out {er['timeouts']} times and kept its window (Fig. 2). Mean gap in delivery per handoff: "
            "Tahoe "
            f"{fmt(tr['mean_handoff_gap_ms'], 0)} ms, EHN {fmt(er['mean_handoff_gap_ms'], 0)} ms "
            f"(the handoff itself lasts {PAPER_HANDOFF_S * 1000:.0f} ms).\n"
        )
        idle = (tr["mean_handoff_gap_ms"] or 0.0) - PAPER_HANDOFF_S * 1000
        trb = row.get("tahoe-bsd")
        bsd_line = ""
        if trb and tb and eb:
            idle_b = (trb["mean_handoff_gap_ms"] or 0.0) - PAPER_HANDOFF_S * 1000
            bsd_line = (
                "Under 4.4BSD's timer (500 ms ticks, RTO at least 1 s, 64 s at most, doubling) Tahoe's first "
                f"expiry after the handoff comes on average {idle_b:.0f} ms after its end and EHN gains "
                f"{(eb[0] / tb[0] - 1) * 100:+.1f} % against P3's +8.1 % (one run; the sweeps below give the "
                "gain over random handoff times with CIs). "
            )
        w(
            "**Why the ratio differs from the paper's.** EHN loses what it must (the handoff plus about one round "
            "trip), as in P3. Tahoe resumes only when its backed-off retransmission timer fires after the "
            "handoff, so the size of EHN's gain is set by where that expiry falls. Under Linux's timer (smoothed RTT "
            "+ max(4 x RTTVAR, 200 ms), doubling at each expiry inside the handoff) the expiry that gets through "
            f"comes on average {idle:.0f} ms after the handoff ends (the gaps above). "
            + bsd_line
            + "P3 does not say which timer its Netsim Tahoe had. The shape holds under both timers "
            "(Tahoe times out in every handoff and restarts from cwnd 1, EHN never does and keeps its window); the "
            "size of the gain depends on where Tahoe's timer falls (det-duration below).\n"
        )
        bf = row.get("buffer-freeze")
        if bf and bf["goodput_mbps"] < tr["goodput_mbps"]:
            w(
                f"**BUFFER+FREEZE below Tahoe** ({bf['timeouts']} timeouts, {bf['fast_retransmits']} fast "
                "retransmits): its zero window stops new data but not the unmodified sender's retransmission "
                "timer, so the sender still times out in the handoff, and its go-back-N retransmissions follow the "
                "packets the old base station holds (a 50-packet queue, forwarded after the handoff). P3 describes "
                "BUFFER+FREEZE with a sender that does not time out under a zero window; see the differences "
                "below.\n"
            )
        fz = row.get("freeze-tcp")
        if fz:
            w(
                f"Freeze-TCP here: {fz['goodput_mbps']:.4f} Mbit/s against Tahoe's {tr['goodput_mbps']:.4f}, "
                f"{fz['timeouts']} timeouts, {fz['fast_retransmits']} fast retransmits. In these runs the old base "
                "station's queue is lost in each handoff; when it is forwarded instead (nothing lost), the "
                "simulator's tests check that Freeze-TCP over Tahoe does at least as well as Tahoe and that the "
                "forwarded segments set off no chain of fast retransmits.\n"
            )
        w("| scheme | goodput (Mbit/s) | timeouts | fast retransmits | mean gap per handoff (ms) |")
        w("|---|---:|---:|---:|---:|")
        for s in ["tahoe-no-handoff"] + SCHEMES + BSD_SCHEMES:
            r = row.get(s)
            if r:
                w(
                    f"| {LABEL[s]} | {r['goodput_mbps']:.4f} | {r['timeouts']} | {r['fast_retransmits']} | "
                    f"{fmt(r['mean_handoff_gap_ms'], 0)} |"
                )
        w("")
        if "fig2" in figs:
            w(f"![Fig. 2]({figs['fig2']})\n\n![Fig. 3]({figs['fig3']})\n")
    det = sorted(x for (b, s, x) in agg if b == "det-duration" and s == "tahoe")
    if det:
        has_bsd = all(("det-duration", "tahoe-bsd", x) in agg and ("det-duration", "ehn-bsd", x) in agg for x in det)
        w("## Handoff duration on the deterministic cycle (one run each)\n")
        if has_bsd:
            w(
                "| handoff (s) | Tahoe (Mbit/s) | EHN (Mbit/s) | EHN / Tahoe | Tahoe, BSD | EHN, BSD "
                "| EHN / Tahoe, BSD |"
            )
            w("|---:|---:|---:|---:|---:|---:|---:|")
        else:
            w("| handoff (s) | Tahoe (Mbit/s) | EHN (Mbit/s) | EHN / Tahoe |")
            w("|---:|---:|---:|---:|")
        for x in det:
            t, e = (
                agg[("det-duration", "tahoe", x)]["goodput_mbps"][0],
                agg[("det-duration", "ehn", x)]["goodput_mbps"][0],
            )
            cells = f"| {x:g} | {t:.4f} | {e:.4f} | {e / t:.3f} |"
            if has_bsd:
                tb_, eb_ = (
                    agg[("det-duration", "tahoe-bsd", x)]["goodput_mbps"][0],
                    agg[("det-duration", "ehn-bsd", x)]["goodput_mbps"][0],
                )
                cells += f" {tb_:.4f} | {eb_:.4f} | {eb_ / tb_:.3f} |"
            w(cells)
        w(
            "\nWith handoffs on a fixed cycle the ratio jumps with the phase of Tahoe's backed-off timer against the "
            f"handoff's end (P3's 4 s handoff: EHN / Tahoe = {PAPER_EHN / PAPER_TAHOE:.3f}); averaged over random "
            f"handoff times (next section) {_duration_trend(rows, agg)}.\n"
        )
    for b, (_xs, xlabel, _) in SWEEPS.items():
        pts = sorted({x for (bb, _, x) in agg if bb == b})
        if not pts:
            continue
        w(f"## Sweep: {xlabel} (handoffs at random times, {seeds} seeds; goodput Mbit/s, mean ± 95 % CI)\n")
        w("| scheme | " + " | ".join(f"{x:g}" for x in pts) + " |")
        w("|---|" + "---:|" * len(pts))
        bsd_here = all((b, s, x) in agg for s in BSD_SCHEMES for x in pts)
        for s in SCHEMES + (BSD_SCHEMES if bsd_here else []):
            w(
                f"| {LABEL[s]} | "
                + " | ".join(fmt_ci(agg.get((b, s, x), {}).get("goodput_mbps"), 3) for x in pts)
                + " |"
            )
        pairs = [("", "ehn", "tahoe")] + ([(", BSD timer", "ehn-bsd", "tahoe-bsd")] if bsd_here else [])
        for tag, a_s, b_s in pairs:
            diffs = [paired_diff(rows, b, a_s, b_s, x) for x in pts]
            w(
                f"| EHN − Tahoe{tag} (paired over seeds) | "
                + " | ".join(
                    "n/a" if m is None else f"{m:+.3f}" + ("" if ci is None else f" ± {ci:.3f}") for m, ci, _ in diffs
                )
                + " |"
            )
            ratios = []
            for x in pts:
                ta, ea = agg.get((b, b_s, x), {}).get("goodput_mbps"), agg.get((b, a_s, x), {}).get("goodput_mbps")
                ratios.append("n/a" if not ta or not ea or not ta[0] else f"{(ea[0] / ta[0] - 1) * 100:+.1f} %")
            w(f"| EHN / Tahoe{tag} (ratio of the means; P3: +8.1 %) | " + " | ".join(ratios) + " |")
        for tag, a_s, b_s in pairs:
            diffs = [paired_diff(rows, b, a_s, b_s, x) for x in pts]
            verdicts = [f"{x:g}: {_verdict(m, ci)}" for x, (m, ci, _) in zip(pts, diffs)]
            w(f"\nEHN against Tahoe{tag} at each point: {'; '.join(verdicts)}.")
        w("")
    if "sweeps" in figs:
        w(f"![Sweeps]({figs['sweeps']})\n")
    on_train = [s for s in TRAIN_SCHEMES if ("train", s, 0.0) in agg]
    if on_train:
        w(f"## On the P0 train (one operator's 25 Mbit/s LTE link, A3/X2 handovers, 70 s, {seeds} seeds)\n")
        w("| scheme | goodput (Mbit/s) | timeouts | mean gap per handover (ms) |")
        w("|---|---:|---:|---:|")
        for s in on_train:
            a = agg[("train", s, 0.0)]
            w(
                f"| {LABEL[s]} | {fmt_ci(a['goodput_mbps'], 3)} | {fmt_ci(a['timeouts'], 1)} | "
                f"{fmt_ci(a['mean_handoff_gap_ms'], 1)} |"
            )
        lines = []
        for s in on_train:
            if s.startswith("cubic+"):
                m, ci, n = paired_diff(rows, "train", s, "cubic", 0.0)
                lines.append(f"{LABEL[s]} − CUBIC: {fmt(m, 3)} ± {fmt(ci, 3)} Mbit/s ({_verdict(m, ci)})")
        m, ci, n = paired_diff(rows, "train", "tahoe+ehn", "tahoe", 0.0)
        lines.append(f"Tahoe + EHN − Tahoe: {fmt(m, 3)} ± {fmt(ci, 3)} Mbit/s ({_verdict(m, ci)})")
        w("\nPaired over seeds (the same train rides): " + "; ".join(lines) + ".")
        w(
            "\n**Does EHN help when the interruption is shorter than an RTO?** The answer the numbers give is in the "
            "verdicts above: a train handover interrupts delivery for 40-60 ms, while the retransmission timer is at "
            "least 200 ms + the smoothed RTT, so plain TCP does not time out and there is no timeout for EHN to "
            "avoid; what EHN can change is the freeze and resume around each handover. Without `(table)` Freeze-TCP "
            "and EHN act at the true handover start (the schedule is known to the driver; Freeze-TCP's warning "
            "300 ms before it); with `(table)` they act when the train's GPS position enters a handover range of a "
            f'table learned from {prov.get("table_runs", 0)} runs on other seeds (`handoff.predict = "table"`), '
            "before the interruption.\n"
        )
        tab = [s for s in tr if s.endswith("+table")]
        if tab:
            w(
                "| with the table | episodes per run | false alarms per run | missed handovers per run | frozen s per "
                "run (EHN) |"
            )
            w("|---|---:|---:|---:|---:|")
            for s in tab:
                rs = [r for r in rows if r["block"] == "train" and r["scheme"] == s]

                def cell(f, nd, rs=rs):
                    return fmt_ci(
                        mean_ci([float(r[f]) for r in rs])
                        if rs and all(r.get(f) is not None for r in rs)
                        else (None, None),
                        nd,
                    )

                w(
                    f"| {LABEL[s]} | {cell('predicted_episodes', 1)} | {cell('false_alarms', 1)} | "
                    f"{cell('missed_handovers', 1)} | {cell('ehn_frozen_s', 2)} |"
                )
            w(
                f"\n(mean ± 95 % CI over {seeds} seeds, one run each; a false alarm is a range the train crossed "
                "without a "
                "handover, a freeze for nothing; the ranges, learned with a GPS error margin, are far wider than the "
                "interruptions they hold.)\n"
            )
    w("## Where mobipath differs from the paper, and why\n")
    w(
        "- Link rates, delays, buffers, packet size and the throughput unit are not in P3: mobipath's are stated above "
        "and compared by ratio only."
    )
    w(
        "- Tahoe runs under two retransmission timers: Linux's (RTO = SRTT + max(4·RTTVAR, 200 ms)) and 4.4BSD's "
        '(`timer = "bsd"`: 500 ms ticks, Jacobson\'s estimator in ticks, RTO within [1 s, 64 s], doubling); P3 '
        "does not say which its Netsim Tahoe had. Both keep Linux's zero-window probe schedule. The timer sets how "
        "long Tahoe idles after a handoff and so the size of the gain (see above)."
    )
    w(
        "- Tahoe's fast retransmit is followed by go-back-N, as in 4.3BSD-Tahoe and ns-2; a new fast retransmit "
        "waits until the cumulative ACK passes the highest segment sent when the last one started (RFC 6582's "
        "`recover`, ns-2's `bugFix_`), so the copies the receiver already holds do not set off a chain of them."
    )
    w(
        "- Both base stations share the wired hop and radio parameters (one path stands for old and new); the new base "
        "station (the base-station element) answers the fixed host's window probes during the handoff, as P3 says."
    )
    w(
        "- Freeze-TCP and BUFFER+FREEZE run on an unmodified sender: with data outstanding under a zero window its "
        "retransmission timer keeps running (Linux and BSD both do this), so they can still time out, unlike P3's "
        "description of BUFFER+FREEZE."
    )
    w(
        "- On P3's model Freeze-TCP's warning comes from the true schedule (an oracle `warning_ms` ahead); on the "
        "train the `(table)` variants predict from the handover table instead.\n"
    )
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
    blocks: Sequence[str] = tuple(BLOCKS),
    jobs: Optional[int] = None,
    quick: bool = False,
    command: str = "",
    progress: Optional[Callable[[str, int], Any]] = None,
    resume: bool = True,
) -> dict[str, Any]:
    """Runs P3's experiment, the sweeps and the train runs, and writes the report into `out_dir`;
    returns the summary. `progress(description, total)` returns an object with `advance()`.
    Finished runs are kept in ``out_dir/runs`` and reused by the next call (`resume=False`
    discards them first)."""
    for b in blocks:
        if b not in BLOCKS:
            raise ValueError(f"unknown block {b!r} (choose from {', '.join(BLOCKS)})")
    if seeds < 1:
        raise ValueError(f"seeds must be at least 1 (got {seeds})")
    t0 = time.monotonic()
    out_dir.mkdir(parents=True, exist_ok=True)
    scen_dir = out_dir / "scenarios"
    scen_dir.mkdir(exist_ok=True)
    keys = plan(seeds, quick, blocks)
    texts: dict[Point, str] = {}
    for b, s, x, _ in keys:
        if (b, s, x) not in texts:
            dur = TRAIN_DURATION_S if b == "train" else (QUICK_DURATION_S if quick and b != "paper" else DURATION_S)
            texts[(b, s, x)] = scenario_text(b, s, x, dur)
            (scen_dir / f"{b}-{s}-{x:g}.toml").write_text(texts[(b, s, x)], encoding="utf-8")
    keep = {k for k in keys if k[0] == "paper" and k[1] in ("tahoe-no-handoff", "tahoe", "ehn")}
    cache = RunCache(out_dir / "runs")
    if not resume:
        cache.clear()
    # The handover table of the `+table` train schemes (cached like a run).
    table_csv, table_runs = "", 0
    if any(k[0] == "train" and k[1].endswith("+table") for k in keys):
        from .. import hotable

        table_runs = QUICK_TABLE_RUNS if quick else TABLE_RUNS
        learn_text = scenario_text("train", "cubic", 0.0, TRAIN_DURATION_S)
        learn_path = scen_dir / "table-learning.toml"
        learn_path.write_text(learn_text, encoding="utf-8")
        desc = json.dumps(["p3 table", learn_text, table_runs, TABLE_FIRST_SEED])
        table_csv = cache.get(desc)
        if table_csv is None:
            table_csv = hotable.learn(str(learn_path), runs=table_runs, first_seed=TABLE_FIRST_SEED)
            cache.put(desc, table_csv)
        (out_dir / "table.csv").write_text(table_csv, encoding="utf-8")
    bar = progress("P3 runs", len(keys)) if progress else None

    def args(k: Key):
        uses_table = k[0] == "train" and k[1].endswith("+table")
        return (k, texts[k[:3]], f"{k[0]}-{k[1]}-{k[2]:g}.toml", k in keep, str(scen_dir) if uses_table else ".")

    def cache_key(k: Key) -> str:
        uses_table = k[0] == "train" and k[1].endswith("+table")
        return json.dumps(["p3 run", k, texts[k[:3]], k in keep] + ([table_csv] if uses_table else []))

    results, n_jobs = run_all(keys, run_one, args, jobs, bar, cache, cache_key)
    rows = [results[k]["row"] for k in keys]
    write_csv(out_dir / "results.csv", rows, CSV_FIELDS)
    written = [{k: (round(v, 6) if isinstance(v, float) else v) for k, v in r.items()} for r in rows]
    agg = aggregate(written)
    series = {k[1]: results[k] for k in keep}
    figs = write_figures(out_dir, series, agg)
    prov = provenance_record(
        command,
        seeds=seeds,
        runs=len(rows),
        reused=cache.reused,
        jobs=n_jobs,
        t0=t0,
        blocks=list(blocks),
        table_runs=table_runs,
    )
    return write_outputs(out_dir, prov, agg_to_json(agg), render_report(written, agg, prov, figs))
