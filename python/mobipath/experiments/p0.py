"""P0 reproduction: proactive handover-aware (PHA) MPTCP scheduling on a high-speed train.

`reproduce()` learns a handover table from preliminary runs (seeds 100000.., disjoint from the
evaluation seeds 1..N), runs every (profile, scheduler, variant, seed) in parallel, and writes
``table.csv``, ``results.csv`` (one row per run), ``summary.json`` (aggregates), ``report.md`` and
the figures. Every run is deterministic and results are keyed by (profile, scheduler, variant,
seed), so the number of worker processes never changes a number.

Profiles: *paper* = {minrtt, ecf, blest, peekaboo} x {plain, pha} with LIA (the paper's setup);
*ns3* = the paper profile as ns-3 (P0's tool) runs it: the signalling handover model, ns-3's TCP
window rules and no receive-buffer optimisation, with its own table learned under that model;
*modern* = {linux-default} x {plain, pha} with CUBIC and a 6 MiB receive buffer (what Linux does today;
the paper profile keeps a 128 KiB socket buffer, see scenarios/p0/hst-minrtt.toml). `targets()`
checks mobipath's 12 acceptance ranges around P0's values on every profile that runs the paper's schedulers.

Each profile also runs one single-path TCP per operator (Fig. 6(a): NewReno in the paper profile,
the single-path form of LIA; CUBIC in the modern one) over the same links and seeds.

The table keeps the stretches of track seen in at least `table_min_support` of the `table_runs`
learning runs (default 10 %, at least 1): hst/table.rs.
"""

from __future__ import annotations

import functools
import json
import math
import re
import statistics
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Callable, Optional

from .common import RunCache, core_revision, mean_ci, run_all, write_csv, write_report

# The base scenario, shipped inside the package (mobipath.shipped), so an installed mobipath
# finds it from any directory.
BASE_SCENARIO = "scenarios/p0/hst-minrtt.toml"

PROFILES: dict[str, dict[str, Any]] = {
    # rcv_buf_bytes None = the base scenario's (ns-3's default 128 KiB socket buffer, see
    # scenarios/p0/hst-minrtt.toml); modern Linux autotunes up to tcp_rmem's maximum, 6 MiB.
    # handover_model / flow_tcp None = the base scenario's (the fixed interruption, Linux's TCP);
    # rcvbuf_optimisation True = Linux MPTCP's receive-buffer optimisation where the scheduler runs it.
    "paper": {
        "schedulers": ["minrtt", "ecf", "blest", "peekaboo"],
        "cc": "lia",
        "rcv_buf_bytes": None,
        "handover_model": None,
        "flow_tcp": None,
        "rcvbuf_optimisation": True,
    },
    "modern": {
        "schedulers": ["linux-default"],
        "cc": "cubic",
        "rcv_buf_bytes": 6 * 1024 * 1024,
        "handover_model": None,
        "flow_tcp": None,
        "rcvbuf_optimisation": True,
    },
    # P0's setup as ns-3 would run it (docs/handover-model.md §4.2, §5.3): the interruption comes out
    # of RRC/X2 signalling, TCP has ns-3's window semantics (NewReno halves the bytes in flight; cwnd
    # grows while the receive window limits the flight), and no receive-buffer optimisation (a Linux
    # MPTCP feature; P0 does not say its ns-3 MPTCP has it).
    "ns3": {
        "schedulers": ["minrtt", "ecf", "blest", "peekaboo"],
        "cc": "lia",
        "rcv_buf_bytes": None,
        "handover_model": "signalling",
        "flow_tcp": {"reno_ssthresh": "flight", "cwnd_validation": False},
        "rcvbuf_optimisation": False,
    },
}
# `--profile` names that stand for several profiles.
PROFILE_SETS = {"both": ("paper", "modern"), "all": tuple(PROFILES)}
# Schedulers that run Linux's receive-buffer optimisation and take `rcvbuf_optimisation`
# (crates/sim/src/mptcp/sched/config.rs); Peekaboo never runs it.
RCVBUF_OPTIMISERS = ("minrtt", "ecf", "blest", "delay-predictive")
VARIANTS = ("plain", "pha", "pha-d-paper", "pha-d-queue-aware", "pha-d-resend", "oracle", "blocking")
VARIANT_LABEL = {
    "plain": "existing (plain)",
    "pha": "PHA",
    "pha-d-paper": "PHA-D (1-RTT rule)",
    "pha-d-queue-aware": "PHA-D (queue-aware lead)",
    "pha-d-resend": "PHA-D (re-send B=0)",
    "oracle": "oracle (true handover times)",
    "blocking": "subflow blocking (Park et al.)",
}
# Extra B=1 lead of the queue-aware policy: twice the drain time of the 100-packet link queue at
# 25 Mbit/s (48 ms) — what the sender has already pushed still goes out after MP_PRIO.
QUEUE_AWARE_LEAD_MS = 100
TABLE_FIRST_SEED = 100000
QUICK_DURATION_S = 20
# Single-path TCP per operator (Fig. 6(a)); its runs are keyed (profile, SINGLE, "tcp-<op>", seed).
SINGLE = "tcp"
SINGLE_VARIANTS = {"tcp-A": "via-a", "tcp-B": "via-b"}
SINGLE_CC = {"lia": "newreno", "cubic": "cubic"}
# Fig. 6(a) as the paper states it (its unit is ambiguous; "2.4 Mbps" is most likely MB/s).
PAPER_SINGLE_DIP_PCT = -20.0


def default_min_support(table_runs: int) -> int:
    """10 % of the learning runs, at least 1: a stretch becomes a range when that many runs saw a
    handover there. Measured on the P0 train (50 runs): k = 5 keeps 95 % of held-out handovers
    inside the ranges while halving the union's coverage of the ride (k = 1)."""
    return max(1, round(table_runs / 10))


LABEL = {
    "minrtt": "minRTT",
    "ecf": "ECF",
    "blest": "BLEST",
    "peekaboo": "Peekaboo",
    "linux-default": "Linux default",
    SINGLE: "single TCP",
}

# The paper's published numbers (docs/papers.md, P0). Relative changes only are compared:
# the paper's absolute unit is ambiguous (most likely MB/s).
PAPER_T2_CHANGE = {"minrtt": 1.95, "ecf": 2.20, "blest": 1.87, "peekaboo": 1.64}
PAPER_T3_CHANGE = {"minrtt": 20.8, "ecf": 22.5, "blest": 19.1, "peekaboo": 17.9}
PAPER_T3_AVG = (2.37, 2.84)
PAPER_T4 = {"minrtt": (0.301, 0.243), "ecf": (0.267, 0.223), "blest": (0.269, 0.239), "peekaboo": (0.279, 0.243)}
# Profiles that run P0's own setup (its schedulers, LIA, 128 KiB), so the paper's numbers apply.
PAPER_SETUP = ("paper", "ns3")
# Variants compared row by row with the plain scheduler (the paper has no numbers for them).
PHA_D_VARIANTS = [v for v in VARIANTS if v not in ("plain", "pha")]

METRICS = [
    "goodput_mbps",
    "handover_goodput_mbps",
    "non_handover_goodput_mbps",
    "retransmission_ratio",
    "hol_delay_in_handover_p99_ms",
    "hol_delay_outside_handover_p99_ms",
    "hol_delay_in_handover_mean_ms",
    "hol_delay_outside_handover_mean_ms",
    "ofo_in_handover_mean_bytes",
    "ofo_outside_handover_mean_bytes",
    "subflow0_goodput_mbps",
    "subflow1_goodput_mbps",
    "penalisations",
]
CSV_FIELDS = [
    "profile",
    "scheduler",
    "variant",
    "seed",
    "duration_s",
    "handovers_A",
    "handovers_B",
    "handovers_in_ranges",
    "interruption_ms",
    "mp_prio_sent",
    "mp_prio_lost",
    *METRICS,
    "handover_metrics_source",
]


# ---------------------------------------------------------------------------------------------
# Scenarios


def _after_traffic(text: str, line: str) -> str:
    """The scenario with `line` added to the flow, right after its one `traffic = ...` line."""
    text, n = re.subn(r"(?m)^(\s*traffic\s*=.*)$", lambda m: f"{m.group(1)}\n{line}", text)
    if n != 1:
        raise ValueError("the base scenario must have exactly one `traffic = ...` line")
    return text


def make_scenario(
    base: str,
    scheduler: str,
    variant: str,
    cc: str,
    duration_s: Optional[float],
    table: Optional[str],
    rcv_buf_bytes: Optional[int] = None,
) -> str:
    """The base scenario text with the flow's scheduler and cc replaced, the duration optionally
    shortened, the receive buffer optionally replaced, and (for PHA) the `[hst]` table set."""
    sched = {"pha": f"pha({scheduler})", "oracle": f"oracle({scheduler})", "blocking": f"block({scheduler})"}.get(
        variant, scheduler
    )
    text, n = re.subn(r'(?m)^(\s*scheduler\s*=\s*)"[^"]*"', lambda m: f'{m.group(1)}"{sched}"', base)
    if n != 1:
        raise ValueError(f"the base scenario must have exactly one `scheduler = ...` line (found {n})")
    text, n = re.subn(r'(?m)^(\s*cc\s*=\s*)"[^"]*"', lambda m: f'{m.group(1)}"{cc}"', text)
    if n != 1:
        raise ValueError(f"the base scenario must have exactly one `cc = ...` line (found {n})")
    if duration_s is not None:
        text, n = re.subn(r"(?m)^duration_s\s*=.*$", f"duration_s = {duration_s:g}", text)
        if n != 1:
            raise ValueError("the base scenario must have a top-level `duration_s = ...` line")
    if rcv_buf_bytes is not None:
        text = re.sub(r"(?m)^\s*receiver\s*=.*\n?", "", text)
        text = _after_traffic(text, f"receiver = {{ rcv_buf_bytes = {rcv_buf_bytes} }}")
    text = re.sub(r"(?m)^\s*table\s*=.*\n?", "", text)
    if variant.startswith("pha-d-"):
        policy = variant[len("pha-d-") :]
        lead = QUEUE_AWARE_LEAD_MS if policy == "queue-aware" else 0
        text = _after_traffic(text, f'mptcp = {{ pha_d = {{ policy = "{policy}", lead_ms = {lead} }} }}')
    if variant != "plain":
        if table is None:
            raise ValueError("PHA needs a handover table")
        text, n = re.subn(r"(?m)^\[hst\]\s*$", lambda m: f'[hst]\ntable = "{table}"', text)
        if n != 1:
            raise ValueError("the base scenario must have an [hst] section")
    return text


def make_single_scenario(
    base: str,
    path: str,
    cc: str,
    duration_s: Optional[float],
    rcv_buf_bytes: Optional[int] = None,
    profile: Optional[dict[str, Any]] = None,
) -> str:
    """The base scenario with its MPTCP flow turned into one single-path TCP flow over `path`
    (Fig. 6(a)): same links, train, handovers, receive buffer and (with `profile`) the profile's
    handover model and TCP semantics."""
    text = make_scenario(base, "minrtt", "plain", cc, duration_s, None, rcv_buf_bytes)
    text, n = re.subn(r"(?m)^(\s*)paths\s*=\s*\[[^\]]*\]\s*$", lambda m: f'{m.group(1)}path = "{path}"', text)
    if n != 1:
        raise ValueError("the base scenario must have exactly one `paths = [...]` line")
    text = re.sub(r"(?m)^\s*scheduler\s*=.*\n?", "", text)
    return apply_profile(text, profile or {}, scheduler=None)


def _toml_value(v: Any) -> str:
    if isinstance(v, bool):
        return "true" if v else "false"
    if isinstance(v, str):
        return json.dumps(v)
    return repr(v)


def apply_profile(text: str, profile: dict[str, Any], scheduler: Optional[str]) -> str:
    """A scenario made by `make_scenario` with a profile's handover model, the flow's `[flows.tcp]`
    switches and (for an MPTCP flow whose `scheduler` runs it) the receive-buffer optimisation
    switched off. A base scenario that already sets one of these is refused rather than silently
    overridden."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]

    parsed = tomllib.loads(text)
    model = profile.get("handover_model")
    if model is not None:
        ho = (parsed.get("hst") or {}).get("handover")
        if ho is None:
            raise ValueError("the base scenario must have an [hst.handover] section for a profile that sets its model")
        if "model" in ho:
            raise ValueError(
                f"the base scenario sets [hst.handover] model = {ho['model']!r}; the profile sets it "
                f"to {model!r} (remove it from the base scenario)"
            )
        text, n = re.subn(r"(?m)^\[hst\.handover\]\s*$", lambda m: f'[hst.handover]\nmodel = "{model}"', text)
        if n != 1:
            raise ValueError("the base scenario must have exactly one [hst.handover] section")
    tcp = profile.get("flow_tcp")
    if tcp:
        if any("tcp" in f for f in parsed.get("flows") or []):
            raise ValueError(
                "the base scenario's flow sets `tcp`; the profile sets it (remove it from the base scenario)"
            )
        # The reno_* switches act on tahoe/reno/newreno only, and a scenario refuses them on
        # another algorithm (a field that cannot take effect).
        ccs = {f.get("cc") for f in parsed.get("flows") or []}
        if not ccs <= {"tahoe", "reno", "newreno"}:
            tcp = {k: v for k, v in tcp.items() if not k.startswith("reno_")}
        inline = "{ " + ", ".join(f"{k} = {_toml_value(v)}" for k, v in tcp.items()) + " }"
        text = _after_traffic(text, f"tcp = {inline}")
    if not profile.get("rcvbuf_optimisation", True) and scheduler is not None and scheduler in RCVBUF_OPTIMISERS:
        text, n = re.subn(
            r'(?m)^(\s*scheduler\s*=\s*)"([^"]*)"',
            lambda m: f'{m.group(1)}{{ name = "{m.group(2)}", rcvbuf_optimisation = false }}',
            text,
        )
        if n != 1:
            raise ValueError(f"the base scenario must have exactly one `scheduler = ...` line (found {n})")
    return text


def profile_scenario(
    base: str, profile: str, scheduler: str, variant: str, duration_s: Optional[float], table: Optional[str]
) -> str:
    """The scenario of one (profile, scheduler, variant): `make_scenario` / `make_single_scenario`
    with the profile's settings."""
    prof = PROFILES[profile]
    if variant in SINGLE_VARIANTS:
        return make_single_scenario(
            base, SINGLE_VARIANTS[variant], SINGLE_CC[prof["cc"]], duration_s, prof["rcv_buf_bytes"], prof
        )
    text = make_scenario(base, scheduler, variant, prof["cc"], duration_s, table, prof["rcv_buf_bytes"])
    return apply_profile(text, prof, scheduler)


def learning_scenario(base: str, profile: str, duration_s: Optional[float]) -> str:
    """The table-learning scenario of a profile: plain minRTT with LIA under the profile's handover
    model (where the handovers happen depends on the radio and the handover model, not on the
    traffic, so profiles that share a handover model share a table)."""
    text = make_scenario(base, "minrtt", "plain", "lia", duration_s, None)
    return apply_profile(text, {"handover_model": PROFILES[profile]["handover_model"]}, scheduler=None)


# ---------------------------------------------------------------------------------------------
# One run (in a worker process)


def _second_windows(ts: Any, handovers: list[dict[str, Any]], duration_s: float, flow: str) -> dict[str, Any]:
    """Handover-window goodput and OFO from the time series, with the simulator's definition:
    1 s windows aligned to whole seconds; a window is a handover window if it contains a handover
    start. Used only when the summary lacks the handover metrics (an older extension build)."""
    import polars as pl

    f = ts.filter((pl.col("kind") == "flow") & (pl.col("name") == flow))
    starts = {int(math.floor(h["start_s"] + 1e-9)) for h in handovers}
    secs = int(duration_s + 1e-9)
    out: dict[str, Any] = {}
    for metric, key_in, key_out in (
        ("goodput_mbps", "handover_goodput_mbps", "non_handover_goodput_mbps"),
        ("ofo_bytes", "ofo_in_handover_mean_bytes", "ofo_outside_handover_mean_bytes"),
    ):
        rows = f.filter(pl.col("metric") == metric).select("time_s", "value").rows()
        per_s: dict[int, list[float]] = {}
        for t, v in rows:
            s = int(math.floor(t + 1e-9))
            if s < secs:
                per_s.setdefault(s, []).append(v)
        inside = [statistics.fmean(v) for s, v in per_s.items() if s in starts]
        outside = [statistics.fmean(v) for s, v in per_s.items() if s not in starts]
        out[key_in] = statistics.fmean(inside) if inside else None
        out[key_out] = statistics.fmean(outside) if outside else None
    return out


def in_ranges(table: dict[str, Any], handovers: list[dict[str, Any]]) -> int:
    """How many of a run's handovers start inside one of their operator's table ranges."""
    return sum(
        1 for h in handovers if any(a <= h["position_m"] <= b for a, b, _ in table["ranges"].get(h["operator"], []))
    )


def run_one(
    key: tuple[str, str, str, int], scenario_path: str, keep_series: bool, table_csv: str = ""
) -> dict[str, Any]:
    import polars as pl

    import mobipath

    from .. import hotable

    profile, scheduler, variant, seed = key
    r = mobipath.run(scenario_path, seed=seed)
    s = r.summary
    single = variant in SINGLE_VARIANTS
    flow_name, f = next((n, v) for n, v in s["flows"].items() if v.get("protocol") == ("tcp" if single else "mptcp"))
    handovers = s.get("handovers") or []
    dur = float(s["duration_s"])
    table = hotable.table_info(table_csv) if table_csv else {"ranges": {}}
    row: dict[str, Any] = {
        "profile": profile,
        "scheduler": scheduler,
        "variant": variant,
        "seed": seed,
        "duration_s": dur,
        "handovers_A": sum(1 for h in handovers if h["operator"] == "A"),
        "handovers_B": sum(1 for h in handovers if h["operator"] == "B"),
        "handovers_in_ranges": in_ranges(table, handovers),
        # The handover model's output (constant in the fixed model).
        "interruption_ms": (
            statistics.fmean(h["interruption_ms"] for h in handovers)
            if handovers and all("interruption_ms" in h for h in handovers)
            else None
        ),
        # MP_PRIO the receiver sent and the sender never got (lost in the uplink).
        "mp_prio_sent": f.get("mp_prio_sent", 0),
        "mp_prio_lost": f.get("mp_prio_sent", 0) - f.get("mp_prio_received", 0),
    }
    for m in METRICS:
        row[m] = f.get(m)
    subs = f.get("subflows") or []
    for i in range(2):
        row[f"subflow{i}_goodput_mbps"] = subs[i]["goodput_mbps"] if i < len(subs) else None
    if single:
        # The handover windows of a single TCP are those of its own operator's handovers.
        own = [h for h in handovers if h["operator"] == variant.split("-", 1)[1]]
        row.update(_second_windows(r.timeseries, own, dur, flow_name))
        row["handover_metrics_source"] = "timeseries (single TCP)"
    elif "handover_goodput_mbps" in f:
        row["handover_metrics_source"] = "summary"
    else:
        row.update(_second_windows(r.timeseries, handovers, dur, flow_name))
        row["handover_metrics_source"] = "timeseries"
    out: dict[str, Any] = {"row": row}
    if keep_series:
        ts = r.timeseries.filter(pl.col("metric") == "goodput_mbps")
        sub = ts.filter(pl.col("kind") == "subflow")
        # In subflow order (subflow k rides operator k's link in the P0 scenarios).
        names = [f"{flow_name}/{s['path']}" for s in subs]
        out["series"] = {
            name: sub.filter(pl.col("name") == name).sort("time_s").select("time_s", "value").rows() for name in names
        }
        out["total"] = (
            ts.filter((pl.col("kind") == "flow") & (pl.col("name") == flow_name))
            .sort("time_s")
            .select("time_s", "value")
            .rows()
        )
        out["handovers"] = handovers
    return out


# ---------------------------------------------------------------------------------------------
# The experiment


def plan(
    profiles: Sequence[str], schedulers: Optional[Sequence[str]], seeds: int, variants: Optional[Sequence[str]] = None
) -> list[tuple[str, str, str, int]]:
    keys = []
    for p in profiles:
        for sch in PROFILES[p]["schedulers"]:
            if schedulers is not None and sch not in schedulers:
                continue
            for v in VARIANTS:
                if variants is not None and v not in variants:
                    continue
                for seed in range(1, seeds + 1):
                    keys.append((p, sch, v, seed))
        for v in SINGLE_VARIANTS:
            if variants is not None and v not in variants:
                continue
            for seed in range(1, seeds + 1):
                keys.append((p, SINGLE, v, seed))
    return keys


def reproduce(
    out_dir: Path,
    *,
    seeds: int = 10,
    table_runs: int = 50,
    profiles: Sequence[str] = ("paper", "modern", "ns3"),
    schedulers: Optional[Sequence[str]] = None,
    jobs: Optional[int] = None,
    quick: bool = False,
    base_scenario: Optional[Path] = None,
    command: str = "",
    progress: Optional[Callable[[str, int], Any]] = None,
    resume: bool = True,
    table_min_support: Optional[int] = None,
    variants: Optional[Sequence[str]] = None,
) -> dict[str, Any]:
    """Runs the whole P0 experiment and writes the report into `out_dir`; returns the aggregates.
    `progress(description, total)` returns an object with `advance()` (or None for silence).
    `variants` restricts the variants run (default: all of VARIANTS and the single TCPs).
    Finished runs (and the learned tables) are kept in ``out_dir/runs`` and reused by the next call;
    `resume=False` discards them first (RunCache)."""
    from .. import hotable, provenance

    t0 = time.monotonic()
    for p in profiles:
        if p not in PROFILES:
            raise ValueError(f"unknown profile {p!r} (choose from {', '.join(PROFILES)})")
    if schedulers is not None:
        known = {s for p in profiles for s in PROFILES[p]["schedulers"]}
        bad = [s for s in schedulers if s not in known]
        if bad:
            raise ValueError(
                f"scheduler(s) {', '.join(bad)} not in the selected profile(s) (known: {', '.join(sorted(known))})"
            )
    if variants is not None:
        bad = [v for v in variants if v not in VARIANTS and v not in SINGLE_VARIANTS]
        if bad:
            raise ValueError(f"variant(s) {', '.join(bad)} unknown (known: {', '.join([*VARIANTS, *SINGLE_VARIANTS])})")
    from .. import shipped

    base_path = Path(base_scenario) if base_scenario is not None else shipped.path(BASE_SCENARIO)
    base = base_path.read_text(encoding="utf-8")
    duration = QUICK_DURATION_S if quick else None
    out_dir.mkdir(parents=True, exist_ok=True)
    scen_dir = out_dir / "scenarios"
    scen_dir.mkdir(exist_ok=True)

    # 1. the handover tables, from preliminary runs disjoint from the evaluation seeds: one per
    # handover model among the profiles (table.csv for the first, table-<profile>.csv for others)
    t_table = time.monotonic()
    cache = RunCache(out_dir / "runs")
    if not resume:
        cache.clear()
    min_support = table_min_support if table_min_support is not None else default_min_support(table_runs)
    if min_support < 1:
        raise ValueError(f"table_min_support must be >= 1 (got {min_support})")
    learn_texts: dict[str, str] = {}  # profile -> learning scenario
    table_file: dict[str, str] = {}  # learning scenario -> table file name
    tables: dict[str, str] = {}  # learning scenario -> table CSV
    for p in profiles:
        text = learning_scenario(base, p, duration)
        learn_texts[p] = text
        if text in table_file:
            continue
        name = "table.csv" if not table_file else f"table-{p}.csv"
        table_file[text] = name
        learn_path = scen_dir / ("table-learning.toml" if name == "table.csv" else f"table-learning-{p}.toml")
        learn_path.write_text(text, encoding="utf-8")
        table_desc = json.dumps(["p0 table", text, table_runs, TABLE_FIRST_SEED, min_support])
        csv = cache.get(table_desc)
        if csv is None:
            csv = hotable.learn(str(learn_path), runs=table_runs, first_seed=TABLE_FIRST_SEED, min_support=min_support)
            cache.put(table_desc, csv)
        tables[text] = csv
        (out_dir / name).write_text(csv, encoding="utf-8")
    table_s = time.monotonic() - t_table
    main_learn = learn_texts[profiles[0]]
    table_csv = tables[main_learn]

    # 2. the runs
    paths: dict[tuple[str, str, str], str] = {}
    keys = plan(profiles, schedulers, seeds, variants)
    if not keys:
        raise ValueError("nothing to run: the selected profiles, schedulers and variants leave no run")
    for p, sch, v, _ in keys:
        if (p, sch, v) not in paths:
            path = scen_dir / f"{p}-{sch}-{v}.toml"
            text = profile_scenario(base, p, sch, v, duration, f"../{table_file[learn_texts[p]]}")
            path.write_text(text, encoding="utf-8")
            paths[(p, sch, v)] = str(path)
    fig6_sched = "minrtt" if any(k[1] == "minrtt" for k in keys) else (keys[0][1] if keys else None)
    fig6_profile = next((k[0] for k in keys if k[1] == fig6_sched), None)

    def keep(k: tuple[str, str, str, int]) -> bool:
        return k[0] == fig6_profile and k[1] in (fig6_sched, SINGLE) and k[3] == 1

    bar = progress("P0 runs", len(keys)) if progress else None
    t_runs = time.monotonic()
    texts = {pk: Path(p).read_text(encoding="utf-8") for pk, p in paths.items()}
    results, jobs = run_all(
        keys,
        run_one,
        lambda k: (k, paths[k[:3]], keep(k), tables[learn_texts[k[0]]]),
        jobs,
        bar,
        cache,
        lambda k: json.dumps(["p0 run", k, texts[k[:3]], tables[learn_texts[k[0]]], keep(k)]),
    )
    runs_s = time.monotonic() - t_runs
    rows = [results[k]["row"] for k in keys]  # plan order, independent of completion order

    # 3. outputs
    write_results_csv(out_dir / "results.csv", rows)
    agg = aggregate(rows)
    series = {k[2]: results[k] for k in keys if keep(k)}
    ride = _ride(base_path.parent, main_learn)
    figs = write_figures(out_dir, agg, series, fig6_sched)
    wall = time.monotonic() - t0
    per_table = {}
    for text, name in table_file.items():
        ps = [p for p in profiles if learn_texts[p] == text]
        per_table[name] = _table_stats(tables[text], [r for r in rows if r["profile"] in ps], text, ride, ps)
    main = per_table[table_file[main_learn]]
    prov = {
        "command": command or provenance.command_line(),
        "mobipath_version": provenance.version(),
        "git_revision": provenance.git_revision(),
        "core_build_git_revision": core_revision(),
        "base_scenario": str(base_path) if base_scenario is not None else f"{BASE_SCENARIO} (shipped with mobipath)",
        "duration_s": rows[0]["duration_s"] if rows else None,
        "evaluation_seeds": [1, seeds],
        "table_runs": table_runs,
        "table_seeds": [TABLE_FIRST_SEED, TABLE_FIRST_SEED + table_runs - 1],
        "profiles": list(profiles),
        "schedulers": sorted({k[1] for k in keys}),
        "jobs": jobs,
        "runs": len(rows),
        "reused_runs": cache.reused,
        "wall_time_s": round(wall, 2),
        "table_learning_s": round(table_s, 2),
        "runs_s": round(runs_s, 2),
        "table_min_support": min_support,
        "handovers_in_ranges": main["handovers_in_ranges"],
        "ride_m": ride,
        "table_coverage": main["coverage"],
        "interruption_ms": main["interruption_ms"],
        # Over every evaluation run (each table's own runs: `tables`).
        "handovers_per_min": _per_min(rows),
        "tables": per_table,
        "handover_metrics_source": sorted({r["handover_metrics_source"] for r in rows}),
        "fig6_profile": fig6_profile,
    }
    summary = {"provenance": prov, "aggregates": agg_to_json(agg), "targets": targets_json(rows, profiles)}
    (out_dir / "summary.json").write_text(json.dumps(summary, indent=2, sort_keys=True) + "\n", encoding="utf-8")
    write_report(out_dir, render_report(agg, prov, figs, table_csv, rows))
    return summary


def _per_min(rows: Sequence[dict[str, Any]]) -> dict[str, Optional[float]]:
    """Handovers per minute of ride, per operator, over `rows` (None without rows)."""
    minutes = sum(r["duration_s"] for r in rows) / 60.0
    return {op: (sum(r[f"handovers_{op}"] for r in rows) / minutes if minutes else None) for op in ("A", "B")}


def _main_hpm(prov: dict[str, Any]) -> dict[str, Optional[float]]:
    """Handovers per minute in the runs of the main table's profiles (those `table_coverage` and
    `interruption_ms` describe)."""
    return ((prov.get("tables") or {}).get("table.csv") or {}).get("handovers_per_min") or prov["handovers_per_min"]


def _table_stats(
    table_csv: str,
    rows: Sequence[dict[str, Any]],
    learn_text: str,
    ride: Optional[list[float]],
    profiles: Sequence[str],
) -> dict[str, Any]:
    """What one learned table does in the evaluation runs of the profiles that use it: the share
    of handovers it predicts, the ride it excludes, and the real interruption beside it."""
    from .. import hotable

    # Each seed's handovers once per profile (every variant of a seed rides the same train).
    first_of_seed = list({(r["profile"], r["seed"]): r for r in rows}.values())
    measured = {r["seed"]: float(r["interruption_ms"]) for r in rows if r.get("interruption_ms") is not None}
    n_ho = sum(r["handovers_A"] + r["handovers_B"] for r in first_of_seed)
    return {
        "profiles": list(profiles),
        "handover_model": PROFILES[profiles[0]]["handover_model"] or "the base scenario's",
        "ranges": sum(len(v) for v in hotable.table_info(table_csv)["ranges"].values()),
        "handovers_in_ranges": (sum(r["handovers_in_ranges"] for r in first_of_seed) / n_ho) if n_ho else None,
        "coverage": hotable.coverage(table_csv, (ride[0], ride[1])) if ride else None,
        "interruption_ms": _interruption_ms(learn_text, rows),
        # The spread of the measured interruption over seeds: each seed's train once (profiles that
        # share this table share its handover model and so its trains); the forwarding delay added
        # to every value is a constant. None where no run measures it (the gap is then the
        # scenario's setting).
        "interruption_ci_ms": mean_ci(list(measured.values()))[1],
        "interruption_seeds": len(measured),
        "handovers_per_min": _per_min(rows),
    }


def _ride(base_dir: Path, text: str) -> Optional[list[float]]:
    """[start_m, end_m] of the train's ride in the scenario (the simulator's plan)."""
    from .. import _core

    ride = json.loads(_core.effective_links(text, "p0.toml", str(base_dir), None)).get("ride")
    return [ride["start_m"], ride["end_m"]] if ride else None


def _interruption_ms(text: str, rows: Sequence[dict[str, Any]] = ()) -> Optional[float]:
    """Interruption + X2 forwarding delay of the handovers (the IP-level gap), ms: the mean
    interruption the runs report (an output of the handover model) plus the scenario's forwarding
    delay; from the scenario alone (the simulator's defaults, 40 + 10 ms, when it does not set
    them) if no run reports it."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]

    ho = (tomllib.loads(text).get("hst") or {}).get("handover") or {}
    measured = [float(r["interruption_ms"]) for r in rows if r.get("interruption_ms") is not None]
    interruption = statistics.fmean(measured) if measured else float(ho.get("interruption_ms", 40.0))
    return interruption + float(ho.get("forwarding_delay_ms", 10.0))


def write_results_csv(path: Path, rows: list[dict[str, Any]]) -> None:
    write_csv(path, rows, CSV_FIELDS)


# ---------------------------------------------------------------------------------------------
# Aggregation

Agg = dict[tuple[str, str, str], dict[str, tuple[Optional[float], Optional[float], int]]]


def aggregate(rows: list[dict[str, Any]]) -> Agg:
    """(profile, scheduler, variant) -> metric -> (mean, CI half-width, n). The means are taken of
    the values as written to results.csv (rounded to 6 decimals), so the report matches the CSV."""
    groups: dict[tuple[str, str, str], list[dict[str, Any]]] = {}
    for r in rows:
        groups.setdefault((r["profile"], r["scheduler"], r["variant"]), []).append(r)
    agg: Agg = {}
    for g, rs in groups.items():
        agg[g] = {}
        for m in METRICS:
            vals = [round(float(r[m]), 6) for r in rs if r.get(m) is not None]
            mean, ci = mean_ci(vals)
            agg[g][m] = (mean, ci, len(vals))
    return agg


def agg_to_json(agg: Agg) -> list[dict[str, Any]]:
    out = []
    for (p, s, v), ms in sorted(agg.items()):
        out.append(
            {
                "profile": p,
                "scheduler": s,
                "variant": v,
                **{m: {"mean": a, "ci95": b, "n": n} for m, (a, b, n) in ms.items()},
            }
        )
    return out


def _times(v: Optional[float], k: float) -> Optional[float]:
    """v·k, None when v is not measured."""
    return None if v is None else v * k


def _labelled_ci(values: dict[str, Any], s: str) -> str:
    """ "minRTT 21.61 ± 0.14": scheduler `s`'s label and its (mean, CI, ...) from `values`."""
    return f"{LABEL[s]} {_ci(*values[s][:2])}"


def pct(new: Optional[float], old: Optional[float]) -> Optional[float]:
    if new is None or old is None or old == 0:
        return None
    return (new - old) / old * 100.0


# ---------------------------------------------------------------------------------------------
# Figures


def write_figures(
    out_dir: Path, agg: Agg, series: dict[str, dict[str, Any]], fig6_sched: Optional[str]
) -> dict[str, str]:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    figs: dict[str, str] = {}
    variants = [v for v in VARIANTS if v in series]
    if variants:
        fig, axes = plt.subplots(len(variants), 1, figsize=(10, 3.2 * len(variants)), sharex=True, squeeze=False)
        for ax, v in zip(axes[:, 0], variants):
            data = series[v]
            for k, (name, pts) in enumerate(data["series"].items()):
                t = [p[0] for p in pts]
                y = [p[1] for p in pts]
                w = 5  # 0.5 s moving average of the 100 ms bins
                ys = [statistics.fmean(y[max(0, i - w + 1) : i + 1]) for i in range(len(y))]
                op = "AB"[k] if k < 2 else "?"
                ax.plot(t, ys, lw=0.9, label=f"subflow {name} (operator {op})")
            for h in data["handovers"]:
                ax.axvline(h["start_s"], color="C0" if h["operator"] == "A" else "C1", ls="--", lw=0.8, alpha=0.7)
            name = LABEL.get(fig6_sched or "", fig6_sched)
            ax.set_title(f"{name}, {VARIANT_LABEL[v]}, seed 1 (dashed: handover starts, colour = operator)")
            ax.set_ylabel("goodput (Mbit/s)")
            ax.legend(loc="lower right", fontsize=8)
        axes[-1, 0].set_xlabel("time (s)")
        fig.tight_layout()
        fig.savefig(out_dir / "fig6-subflow-throughput.png", dpi=110)
        plt.close(fig)
        figs["fig6"] = "fig6-subflow-throughput.png"

    if "tcp-A" in series or "tcp-B" in series:
        # Fig. 6(a): single TCP per operator over time.
        fig, ax = plt.subplots(figsize=(10, 3.4))
        for v, colour in (("tcp-A", "C0"), ("tcp-B", "C1")):
            if v not in series:
                continue
            pts = series[v]["total"]
            t = [p[0] for p in pts]
            y = [p[1] for p in pts]
            ys = [statistics.fmean(y[max(0, i - 4) : i + 1]) for i in range(len(y))]  # 0.5 s moving average
            ax.plot(t, ys, lw=0.9, color=colour, label=f"single TCP, operator {v[-1]}")
            for h in series[v]["handovers"]:
                if h["operator"] == v[-1]:
                    ax.axvline(h["start_s"], color=colour, ls="--", lw=0.8, alpha=0.7)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("goodput (Mbit/s)")
        ax.set_title("Fig. 6(a) analogue: single TCP per operator, seed 1 (dashed: that operator's handover starts)")
        ax.legend(loc="lower right", fontsize=8)
        fig.tight_layout()
        fig.savefig(out_dir / "fig6a-single-tcp.png", dpi=110)
        plt.close(fig)
        figs["fig6a"] = "fig6a-single-tcp.png"
    if "plain" in series and "pha" in series:
        # Fig. 6(d): total throughput over time, existing scheduler vs PHA.
        fig, ax = plt.subplots(figsize=(10, 3.4))
        for v, colour in (("plain", "C3"), ("pha", "C2")):
            pts = series[v]["total"]
            t = [p[0] for p in pts]
            y = [p[1] for p in pts]
            ys = [statistics.fmean(y[max(0, i - 4) : i + 1]) for i in range(len(y))]
            ax.plot(t, ys, lw=0.9, color=colour, label=VARIANT_LABEL[v])
        for h in series["plain"]["handovers"]:
            ax.axvline(h["start_s"], color="C0" if h["operator"] == "A" else "C1", ls="--", lw=0.8, alpha=0.6)
        name = LABEL.get(fig6_sched or "", fig6_sched)
        ax.set_xlabel("time (s)")
        ax.set_ylabel("total goodput (Mbit/s)")
        ax.set_title(f"Fig. 6(d) analogue: MPTCP total throughput, {name} vs PHA({name}), seed 1")
        ax.legend(loc="lower right", fontsize=8)
        fig.tight_layout()
        fig.savefig(out_dir / "fig6d-total-throughput.png", dpi=110)
        plt.close(fig)
        figs["fig6d"] = "fig6d-total-throughput.png"

    scheds = sorted(
        {(p, s) for p, s, _ in agg if s != SINGLE},
        key=lambda x: (list(PROFILES).index(x[0]), PROFILES[x[0]]["schedulers"].index(x[1])),
    )

    def bars(metric: str, ylabel: str, title: str, fname: str) -> None:
        fig, ax = plt.subplots(figsize=(max(5, 1.6 * len(scheds) + 2), 3.8))
        w = 0.8 / len(VARIANTS)
        for j, v in enumerate(VARIANTS):
            xs, ys, es = [], [], []
            for i, (p, s) in enumerate(scheds):
                m, ci, _ = agg.get((p, s, v), {}).get(metric, (None, None, 0))
                if m is None:
                    continue
                xs.append(i + (j - (len(VARIANTS) - 1) / 2) * w)
                ys.append(m)
                es.append(ci or 0.0)
            ax.bar(xs, ys, w, yerr=es, capsize=3, label=VARIANT_LABEL[v])
        ax.set_xticks(range(len(scheds)))
        ax.set_xticklabels([f"{LABEL.get(s, s)}\n({p})" for p, s in scheds], fontsize=8)
        ax.set_ylabel(ylabel)
        ax.set_title(title)
        ax.legend(fontsize=8)
        fig.tight_layout()
        fig.savefig(out_dir / fname, dpi=110)
        plt.close(fig)
        figs[fname.split("-")[0]] = fname

    bars(
        "goodput_mbps", "mean goodput (Mbit/s)", "Average throughput, 95 % CI over seeds", "fig7-average-throughput.png"
    )
    bars(
        "handover_goodput_mbps",
        "goodput in handover windows (Mbit/s)",
        "Instantaneous throughput during handovers, 95 % CI",
        "fig8-handover-throughput.png",
    )
    return figs


# ---------------------------------------------------------------------------------------------
# Report


def f3(x: Optional[float], signed: bool = False) -> str:
    if x is None:
        return "n/a"
    return f"{x:+.3f}" if signed else f"{x:.3f}"


def f2p(x: Optional[float]) -> str:
    return "n/a" if x is None else f"{x:+.2f} %"


def _ci(m: Optional[float], ci: Optional[float]) -> str:
    return f3(m) + ("" if ci is None else f" ± {ci:.3f}")


def _verdict(ours: dict[str, tuple[Optional[float], Optional[float], int]], paper: dict[str, float], what: str) -> str:
    """One plain sentence comparing our per-seed paired changes (mean, CI, n) with the paper's,
    claiming a direction only where the CI excludes 0."""
    common = [s for s in paper if ours.get(s) and ours[s][0] is not None]
    if not common:
        return f"None of the paper's schedulers were run, so {what} cannot be compared with the paper."
    parts = ", ".join(f"{LABEL[s]} {_pm(ours[s][0], ours[s][1])}" for s in common)
    paper_s = "/".join(f"{paper[s]:+.2f}" for s in common)
    clear = [s for s in common if _distinct(ours[s][0], ours[s][1])]
    unclear = [s for s in common if s not in clear]
    same = [s for s in clear if ((ours[s][0] or 0.0) > 0) == (paper[s] > 0)]
    n = ours[common[0]][2]
    out = (
        f"PHA changed {what} by {parts} here (paired by seed, 95 % CI over {n} seeds); the paper reports "
        f"{paper_s} % ({'/'.join(LABEL[s] for s in common)}). "
    )
    if clear:
        out += (
            f"Where the CI excludes 0 ({', '.join(LABEL[s] for s in clear)}) the direction agrees with the paper for "
            f"{len(same)} of {len(clear)}. "
        )
    if unclear:
        out += f"For {', '.join(LABEL[s] for s in unclear)} the change is not distinguishable from 0 with these seeds."
    return out.strip()


def paired_change(
    rows: Sequence[dict[str, Any]], profile: str, scheduler: str, variant: str, metric: str, base_variant: str = "plain"
) -> tuple[Optional[float], Optional[float], int]:
    """Mean and 95 % CI of the per-seed relative change (%) of `metric` from `base_variant` to
    `variant` (the same seed rides the same train, so the pairs share their handovers)."""
    ch = list(per_seed_changes(rows, profile, scheduler, variant, metric, base_variant).values())
    m, ci = mean_ci(ch)
    return m, ci, len(ch)


def per_seed_changes(
    rows: Sequence[dict[str, Any]], profile: str, scheduler: str, variant: str, metric: str, base_variant: str = "plain"
) -> dict[int, float]:
    """Seed -> relative change (%) of `metric` from `base_variant` to `variant` on that seed (seeds
    where either value is missing, or the base is 0, are left out)."""
    by = {(r["variant"], r["seed"]): r for r in rows if r["profile"] == profile and r["scheduler"] == scheduler}
    ch: dict[int, float] = {}
    for (v, seed), r in by.items():
        b = by.get((base_variant, seed))
        if v == variant and b is not None and r.get(metric) is not None and b.get(metric):
            ch[seed] = (float(r[metric]) - float(b[metric])) / float(b[metric]) * 100.0
    return ch


def _by_seed(
    rows: Sequence[dict[str, Any]], profile: str, scheduler: str, variant: str, metric: str
) -> dict[int, float]:
    """Seed -> `metric` of the run (profile, scheduler, variant, seed), where measured."""
    return {
        r["seed"]: float(r[metric])
        for r in rows
        if r["profile"] == profile
        and r["scheduler"] == scheduler
        and r["variant"] == variant
        and r.get(metric) is not None
    }


def _mean_over_schedulers(
    rows: Sequence[dict[str, Any]], profile: str, schedulers: Sequence[str], variant: str, metric: str
) -> dict[int, float]:
    """Seed -> the mean of `metric` over `schedulers` on that seed (seeds where each has a value): one value per
    seed, since the schedulers of one seed ride the same train and are not independent samples."""
    per = [_by_seed(rows, profile, s, variant, metric) for s in schedulers]
    seeds = set.intersection(*(set(p) for p in per)) if per else set()
    return {k: statistics.fmean(p[k] for p in per) for k in sorted(seeds)}


def _ranking(rows: Sequence[dict[str, Any]], profile: str, order: Sequence[str], value: Callable[[str], str]) -> str:
    """`order` (highest mean first) joined by ">" where the plain goodput difference of neighbours, paired by
    seed, excludes 0, and by "≈" where it does not."""
    out = value(order[0])
    for hi, lo in zip(order, order[1:]):
        a_, b_ = (
            _by_seed(rows, profile, hi, "plain", "goodput_mbps"),
            _by_seed(rows, profile, lo, "plain", "goodput_mbps"),
        )
        d, c = mean_ci([a_[k] - b_[k] for k in sorted(set(a_) & set(b_))])
        out += (" > " if d is not None and c is not None and d - c > 0 else " ≈ ") + value(lo)
    return out


def _pm(m: Optional[float], ci: Optional[float], unit: str = " %") -> str:
    if m is None:
        return "n/a"
    return f"{m:+.2f}{unit}" + ("" if ci is None else f" ± {ci:.2f}")


def _distinct(m: Optional[float], ci: Optional[float]) -> Optional[bool]:
    """Whether a paired change's CI excludes 0 (None: unknown)."""
    if m is None or ci is None:
        return None
    return abs(m) > ci


# mobipath's acceptance ranges around P0's published values: PHA's average gain (paper +1.64 to
# +2.20 %), its handover-window gain (paper +17.9 to +22.5 %), and the plain scheduler's
# retransmission ratio (paper 0.267–0.301 %), per scheduler of the paper's four.
TARGETS = (
    ("average gain of PHA (%)", "goodput_mbps", "pha", (0.0, 5.0), PAPER_T2_CHANGE),
    ("handover-window gain of PHA (%)", "handover_goodput_mbps", "pha", (10.0, 35.0), PAPER_T3_CHANGE),
    (
        "plain retransmission ratio (%)",
        "retransmission_ratio",
        "plain",
        (0.1, 0.6),
        {s: v[0] for s, v in PAPER_T4.items()},
    ),
)


def targets(rows: Sequence[dict[str, Any]], profile: str) -> list[dict[str, Any]]:
    """Each of P0's targets for each of the paper's schedulers run in `profile`: the measured mean,
    its 95 % CI and seed count, and whether the mean (`met`) and the whole CI (`ci_inside`) lie in
    the range. Gains are paired by seed."""
    out = []
    for sched in PROFILES["paper"]["schedulers"]:
        if not any(r["profile"] == profile and r["scheduler"] == sched for r in rows):
            continue
        for what, metric, variant, (lo, hi), paper in TARGETS:
            if variant == "plain":
                vals = [
                    float(r[metric]) * 100.0
                    for r in rows
                    if r["profile"] == profile
                    and r["scheduler"] == sched
                    and r["variant"] == "plain"
                    and r.get(metric) is not None
                ]
                m, ci = mean_ci(vals)
                n = len(vals)
            else:
                m, ci, n = paired_change(rows, profile, sched, variant, metric)
            if not n:
                continue
            out.append(
                {
                    "scheduler": sched,
                    "target": what,
                    "low": lo,
                    "high": hi,
                    "paper": paper[sched],
                    "mean": m,
                    "ci95": ci,
                    "n": n,
                    "met": m is not None and lo <= m <= hi,
                    "ci_inside": m is not None and ci is not None and lo <= m - ci and m + ci <= hi,
                }
            )
    return out


def targets_json(rows: Sequence[dict[str, Any]], profiles: Sequence[str]) -> dict[str, list[dict[str, Any]]]:
    return {
        p: t
        for p in profiles
        if PROFILES[p]["schedulers"] == PROFILES["paper"]["schedulers"]
        for t in [targets(rows, p)]
        if t
    }


def _tv(t: dict[str, Any]) -> str:
    """A target's measured value: gains signed, the ratio plain."""
    if t["target"].startswith("plain"):
        return _ci(t["mean"], t["ci95"])
    return _pm(t["mean"], t["ci95"], "")


def render_targets(a: Callable[[str], None], rows: Sequence[dict[str, Any]], prov: dict[str, Any]) -> None:
    """P0's targets per profile that runs the paper's schedulers, met or missed, with CIs."""
    per = targets_json(rows, prov["profiles"])
    if not per:
        return
    a("## P0's targets\n")
    a(
        "mobipath's acceptance ranges around P0's published values: PHA's average gain in [0, +5] % (paper +1.64 to "
        "+2.20 %), its handover-window gain in [+10, +35] % (paper +17.9 to +22.5 %), and the plain scheduler's "
        "retransmission ratio in [0.1, 0.6] % (paper 0.267–0.301 %). *Met* = the mean lies in the range; the CI "
        "column says whether the whole 95 % CI does too.\n"
    )
    a("| profile | scheduler | target | range | paper | here (mean ± 95 % CI, seeds) | met | CI inside |")
    a("|---|---|---|---|---|---|---|---|")
    for p, ts in per.items():
        for t in ts:
            a(
                f"| {p} | {LABEL[t['scheduler']]} | {t['target']} | [{t['low']:g}, {t['high']:g}] | {t['paper']:g} | "
                f"{_tv(t)} ({t['n']}) | {'yes' if t['met'] else '**no**'} | {'yes' if t['ci_inside'] else 'no'} |"
            )
    a("")
    for p, ts in per.items():
        missed = [t for t in ts if not t["met"]]
        a(
            f"- **{p}**: {len(ts) - len(missed)} of {len(ts)} targets met"
            + (
                ": missed " + "; ".join(f"{LABEL[t['scheduler']]} {t['target']} {_tv(t)}" for t in missed)
                if missed
                else ""
            )
            + "."
        )
    a("")


def render_single_tcp(
    a: Callable[[str], None], agg: Agg, prov: dict[str, Any], figs: dict[str, str], rows: Sequence[dict[str, Any]] = ()
) -> None:
    """Fig. 6(a): single TCP per operator, its dip at its own handovers, and MPTCP / single TCP."""
    profiles = [p for p in PROFILES if (p, SINGLE, "tcp-A") in agg or (p, SINGLE, "tcp-B") in agg]
    if not profiles:
        return
    a("## Fig. 6(a) — single TCP per operator\n")
    a(
        "One single-path TCP over one operator's link (NewReno in the paper profile, the single-path form of LIA; "
        "CUBIC in the modern one), same seeds and train. Dip = goodput in that operator's handover windows "
        "relative to its goodput outside them. The goodputs are means over seeds; the dip and the ratio are computed "
        "per "
        "seed (the TCP and the MPTCP run of a seed ride the same train); every column gives mean ± 95 % CI over seeds "
        "(per-seed values in `results.csv`). "
        f"The paper: both operators ~2.4 (MB/s, most likely) on average, about {PAPER_SINGLE_DIP_PCT:+.0f} % at a "
        "handover.\n"
    )
    a("| profile | operator | goodput (Mbit/s) | in handover windows | outside | dip | plain MPTCP / this TCP |")
    a("|---|---|---|---|---|---|---|")
    for p in profiles:
        scheds = [s for s in PROFILES[p]["schedulers"] if (p, s, "plain") in agg]
        for v in SINGLE_VARIANTS:
            g = agg.get((p, SINGLE, v))
            if not g:
                continue
            m, c, n = g["goodput_mbps"]
            hi, hc, _ = g["handover_goodput_mbps"]
            ho, oc, _ = g["non_handover_goodput_mbps"]
            tcp = _by_seed(rows, p, SINGLE, v, "goodput_mbps")
            tin = _by_seed(rows, p, SINGLE, v, "handover_goodput_mbps")
            tout = _by_seed(rows, p, SINGLE, v, "non_handover_goodput_mbps")
            dip = mean_ci([(tin[k] - tout[k]) / tout[k] * 100.0 for k in sorted(set(tin) & set(tout)) if tout[k]])
            ratios = []
            for s in scheds:
                mp = _by_seed(rows, p, s, "plain", "goodput_mbps")
                ratios.append(_ci(*mean_ci([mp[k] / tcp[k] for k in sorted(set(mp) & set(tcp)) if tcp[k]])))
            ratio = (
                ("/".join(ratios) + f" ({'/'.join(LABEL[s] for s in scheds)})")
                if ratios
                else "n/a (no plain MPTCP run)"
            )
            a(f"| {p} | {v[-1]} | {_ci(m, c)} | {_ci(hi, hc)} | {_ci(ho, oc)} | {_pm(*dip)} | {ratio} |")
    a("")
    if figs.get("fig6a"):
        a(f"![Fig. 6(a) analogue]({figs['fig6a']})\n")
    if figs.get("fig6d"):
        a("## Fig. 6(d) — MPTCP total throughput over time\n")
        a(f"![Fig. 6(d) analogue]({figs['fig6d']})\n")


def most_helped(rows: Sequence[dict[str, Any]], profile: str, metric: str) -> Optional[str]:
    """Which scheduler's `metric` PHA raises most in `profile`, as a sentence: the largest mean
    paired gain, and whether it is distinguishable from the runner-up's (their per-seed gains
    differ seed by seed on the same trains, so the difference is paired by seed too)."""
    gains = {
        s: g for s in PROFILES[profile]["schedulers"] for g in [per_seed_changes(rows, profile, s, "pha", metric)] if g
    }
    if len(gains) < 2:
        return None
    order = sorted(gains, key=lambda s: -statistics.fmean(gains[s].values()))
    first, second = order[0], order[1]
    seeds = sorted(set(gains[first]) & set(gains[second]))
    d, c = mean_ci([gains[first][k] - gains[second][k] for k in seeds])
    gain_first, gain_second = _pm(*mean_ci(list(gains[first].values()))), _pm(*mean_ci(list(gains[second].values())))
    head = f"{LABEL[first]} ({gain_first}) over {LABEL[second]} ({gain_second})"
    if _distinct(d, c):
        return f"{head}, by {_pm(d, c, ' pp')} paired by seed"
    return (
        f"{head}; the difference ({_pm(d, c, ' pp')}, paired by seed) is not distinguishable from 0, "
        "so no scheduler is shown to gain most"
    )


def _ns3_retx_text(agg: Agg) -> str:
    """The ns3 profile's plain retransmission ratios, as a bullet of the differences section."""
    rr = {
        s: agg.get(("ns3", s, "plain"), {}).get("retransmission_ratio", (None, None, 0))
        for s in PROFILES["ns3"]["schedulers"]
    }
    rr = {s: v for s, v in rr.items() if v[0] is not None}
    if not rr:
        return ""
    return (
        "- **Retransmission ratio, ns3 profile** (paper Table 4: 0.27–0.30 % without PHA): "
        + ", ".join(f"{LABEL[s]} {_ci(_times(v[0], 100), _times(v[1], 100))} %" for s, v in rr.items())
        + ". This profile has no residual radio loss either, so its losses too happen at handovers; how much of "
        "its ratio comes from the signalling model's handling of packets and how much from ns-3's window rules "
        "(a larger flight when a handover hits) is not separated by this run."
    )


def render_differences(
    a: Callable[[str], None], agg: Agg, prov: dict[str, Any], rows: Sequence[dict[str, Any]]
) -> None:
    """Every difference from the paper this run shows, with its cause (or "not established")."""
    a("## Differences from the paper and their causes\n")
    a(
        "Changes are paired by seed (same train, same handovers): mean ± 95 % CI over the seeds; a change whose "
        "CI contains 0 is reported as not distinguishable from no change.\n"
    )
    paper = [s for s in PROFILES["paper"]["schedulers"] if (("paper", s, "plain") in agg)]
    # 1. average gain
    if paper:
        ch = {s: paired_change(rows, "paper", s, "pha", "goodput_mbps") for s in paper}
        out = {s: paired_change(rows, "paper", s, "pha", "non_handover_goodput_mbps") for s in paper}
        a(
            "- **Average throughput gain of PHA** (paper: +1.64 to +2.20 %): here "
            + ", ".join(f"{LABEL[s]} {_pm(*ch[s][:2])}" for s in paper)
            + ". Outside the handover windows PHA changes goodput by "
            + ", ".join(f"{LABEL[s]} {_pm(*out[s][:2])}" for s in paper)
            + ", where P0 says both behave alike. Cause (measured, not proven): minRTT, ECF and BLEST run Linux's "
            "receive-buffer optimisation (`mptcp_rcv_buf_optimization`: when the shared window blocks, halve the "
            "cwnd of the subflow holding the oldest data), Peekaboo does not, and the gain follows that split. "
            "Cwnd halvings per run without / with PHA: "
            + ", ".join(
                f"{LABEL[s]} {_ci(*agg[('paper', s, 'plain')]['penalisations'][:2])} / "
                f"{_ci(*agg[('paper', s, 'pha')]['penalisations'][:2])}"
                for s in paper
                if ("paper", s, "pha") in agg
            )
            + " (where these CIs overlap, the count alone does not explain the difference: when the halvings hit "
            "may matter more than how many there are; not established). Fig. 6(d) shows seed 1's plain total "
            "goodput over time beside PHA's. P0 does not say whether its ns-3 MPTCP penalises. "
            '`scheduler = { name = "minrtt", rcvbuf_optimisation = false }` runs a scheduler without it '
            "(crates/sim/tests/hst_behaviour.rs checks that plain minRTT then gains > 2 Mbit/s on this profile); "
            "this report does not run that variant. docs/p0-calibration.md runs it over 10 seeds "
            "(`scripts/p0-rcvbuf-ablation`): without the optimisation plain minRTT and ECF gain goodput, PHA does "
            "not, and PHA's average gain over them turns slightly negative while their handover-window gain falls "
            "below +10 %."
        )
        # 3. retransmissions
        rr = {s: agg[("paper", s, "plain")]["retransmission_ratio"] for s in paper}
        a(
            "- **Retransmission ratio** (paper Table 4: 0.27–0.30 % without PHA): on the paper profile "
            + ", ".join(f"{LABEL[s]} {_ci(_times(rr[s][0], 100), _times(rr[s][1], 100))} %" for s in paper)
            + ". Cause: the P0 scenarios have no residual radio loss or HARQ failure outside handovers, so the only "
            "losses are the packets discarded at handovers. `[hst.harq]` adds both, but on this profile the residual "
            "loss that brings the ratio into the paper's range cuts goodput far below the paper's "
            "(docs/p0-calibration.md), so these scenarios leave it off."
        )
    # 2. ranking
    for prof in [p for p in PAPER_SETUP if p in prov["profiles"]]:
        ss = [s for s in PROFILES[prof]["schedulers"] if (prof, s, "plain") in agg]
        if not ss:
            continue
        plain = {s: agg[(prof, s, "plain")]["goodput_mbps"] for s in ss}
        order = sorted(ss, key=lambda s: -(plain[s][0] or 0))
        a(
            f"- **Ranking without PHA, {prof} profile** (paper: minRTT > ECF > BLEST > Peekaboo, spread ≈ 0.5 %): here "
            + _ranking(rows, prof, order, functools.partial(_labelled_ci, plain))
            + " Mbit/s"
            + (f", spread {pct(plain[order[0]][0], plain[order[-1]][0]):.1f} %." if plain[order[-1]][0] else ".")
            + ' Each sign compares two neighbours only: ">" where their goodput difference, paired by seed, is above 0 '
            'with its CI, "≈" where their order is not established. Cause of the spread and of the order: not '
            "established by this run."
        )
    # 3. retransmissions on the ns3 profile (run with or without the paper profile)
    ns3_rr = _ns3_retx_text(agg)
    if ns3_rr:
        a(ns3_rr)
    # 3b. which scheduler PHA helps most (P0: ECF, on both measures)
    for prof in [p for p in PAPER_SETUP if p in prov["profiles"]]:
        parts = []
        for metric, what in (
            ("goodput_mbps", "average throughput"),
            ("handover_goodput_mbps", "handover-window throughput"),
        ):
            best = most_helped(rows, prof, metric)
            if best is not None:
                parts.append(f"{what}: {best}")
        if parts:
            a(
                f"- **Which scheduler PHA helps most, {prof} profile** (paper: ECF, on both measures): "
                + "; ".join(parts)
                + "."
            )
    # 4. MPTCP vs single TCP
    a(
        "- **MPTCP vs single TCP** (paper Fig. 6: MPTCP above one TCP, about 1.18× as read off the figure): see the "
        "Fig. 6(a) table. Cause of a ratio near or below 1 in the paper profile: the 131072 B receive buffer, shared "
        "by the subflows, bounds the whole connection at about 131072 B / RTT (≈ 24 Mbit/s at the ~43 ms RTT here), "
        "which one 25 Mbit/s path nearly fills. P0 does not state its buffer; 131072 B is ns-3's "
        "`TcpSocket::RcvBufSize` default, assumed because P0 does not say it changed it. The modern profile (6 MiB) "
        "shows the unconstrained ratio."
    )
    a(
        "- **Handovers**: the interruption is a fixed 40 ms + 10 ms X2 forwarding (ns-3 LENA-like, source buffer "
        'discarded, uplink lost). `[hst.handover] model = "signalling"` derives it from RRC/X2 steps, RACH and '
        "radio-link failure instead; with Linux's TCP it meets the ns-3 in-order gap and CUBIC dip but not NewReno's "
        "dip, like the fixed model. The conflict comes from ns-3's TCP (NewReno halves the flight, CUBIC 0.7 × a cwnd "
        'that grows while the receive window limits the flight); `[flows.tcp] reno_ssthresh = "flight", '
        "cwnd_validation = false` models it and meets both, read against the second before each handover "
        "(docs/handover-model.md §4.2). The paper and modern profiles keep the fixed model and Linux's TCP"
        + (
            "; the ns3 profile runs the signalling model with ns-3's window rules (its rows above)."
            if "ns3" in prov["profiles"]
            else "; `--profile ns3` runs the signalling model with ns-3's window rules."
        )
    )
    if "modern" in prov["profiles"]:
        ms = [s for s in PROFILES["modern"]["schedulers"] if ("modern", s, "plain") in agg]
        for s in ms:
            parts = []
            for v in ("pha", "pha-d-paper", "pha-d-resend"):
                m, ci, n = paired_change(rows, "modern", s, v, "goodput_mbps")
                if n:
                    parts.append(f"{VARIANT_LABEL[v]} {_pm(m, ci)}")
            a(
                f"- **Modern profile ({LABEL[s]}, 6 MiB buffer)**: average goodput change "
                + ", ".join(parts)
                + f". P0 has no such profile. Cause of the losses: not established by this run; the exclusion covers "
                f"{_cov_text(prov)} of the ride against {_real_text(prov)} of real interruption, and its HoL table "
                "above shows "
                "how little the handovers block with this buffer."
            )
    ns3 = targets(rows, "ns3") if "ns3" in prov["profiles"] else []
    if ns3:
        missed = [t for t in ns3 if not t["met"]]
        text = (
            f"- **ns3 profile** (P0's setup as ns-3 runs it; see Profiles above): {len(ns3) - len(missed)} of "
            f"{len(ns3)} "
            "of P0's targets met (table *P0's targets*)."
        )
        for t in missed:
            s, cause = t["scheduler"], "not established by this run."
            if s == "blest" and t["target"].startswith("handover-window") and t["mean"] < t["low"]:
                plain_ho = {
                    x: agg.get(("ns3", x, "plain"), {}).get("handover_goodput_mbps", (None, None, 0))
                    for x in PROFILES["ns3"]["schedulers"]
                }
                others = [x for x in plain_ho if x != s and plain_ho[x][0] is not None]
                lo = lambda v: v[0] - (v[1] or 0.0)  # noqa: E731
                hi = lambda v: v[0] + (v[1] or 0.0)  # noqa: E731
                # The traced cause is claimed only when plain BLEST's window goodput is above every
                # other scheduler's with separate CIs, as in the run it was traced on.
                if plain_ho[s][0] is not None and others and all(lo(plain_ho[s]) > hi(plain_ho[x]) for x in others):
                    cause = (
                        "plain " + LABEL[s] + " already keeps more goodput in the handover windows than the other "
                        "schedulers ("
                        + ", ".join(f"{LABEL[x]} {_ci(*plain_ho[x][:2])}" for x in [s, *others])
                        + " Mbit/s), so PHA has less to add. Traced (docs/handover-model.md §5.3): with the "
                        "window-limited connection on one subflow, BLEST's wait rule keeps its traffic on the "
                        "subflow that handed over more often than minRTT does, so more of its handovers hit an "
                        "idle subflow and cost nothing; no deviation from mptcp_blest.c explains it."
                    )
            text += (
                f" Missed: {LABEL[s]}'s {t['target']} {_tv(t)} (range [{t['low']:g}, {t['high']:g}]); cause: {cause}"
            )
        a(text)
    for prof in [p for p in PAPER_SETUP if p in prov["profiles"]]:
        pd, losses = [], []
        for s in PROFILES[prof]["schedulers"]:
            for v in ("pha-d-paper", "pha-d-resend"):
                m, ci, n = paired_change(rows, prof, s, v, "goodput_mbps")
                if n:
                    pd.append(f"{LABEL[s]} + {VARIANT_LABEL[v]} {_pm(m, ci)}")
                    if m is not None and m < 0 and _distinct(m, ci):
                        losses.append(f"{LABEL[s]} + {VARIANT_LABEL[v]}")
        if not pd:
            continue
        lost = {
            v: (
                sum(int(r["mp_prio_lost"]) for r in rows if r["variant"] == v and r["profile"] == prof),
                sum(int(r["mp_prio_sent"]) for r in rows if r["variant"] == v and r["profile"] == prof),
            )
            for v in ("pha-d-paper", "pha-d-resend")
        }
        a(
            f"- **PHA-D, {prof} profile** (no numbers in the paper): average goodput change "
            + "; ".join(pd)
            + ". A B=1 MP_PRIO keeps the sender off the subflow over the whole range plus the lead (the receiver "
            "does not tell it when the handover completes, unlike PHA). MP_PRIO lost in the uplink (sent in a "
            "handover interruption): "
            + ", ".join(f"{VARIANT_LABEL[v]} {ln} of {n}" for v, (ln, n) in lost.items())
            + "; where none was lost the re-send policy behaves exactly as the 1-RTT rule (a lost B=0 under the 1-RTT "
            "rule leaves the subflow backup for the rest of the run: tests/hst_behaviour.rs). "
            + (
                (
                    "Losses distinguishable from 0: "
                    + ", ".join(losses)
                    + "; their cause is not established by this run."
                )
                if losses
                else "No PHA-D variant loses average goodput distinguishably from 0 with these seeds."
            )
        )
    a("")


def render_table_section(a: Callable[[str], None], prov: dict[str, Any], table_csv: str) -> None:
    """The handover table: how it was learned, how much of the ride it excludes, how many of the
    evaluation handovers it predicts, beside the real interruption time."""
    from .. import hotable

    info = hotable.table_info(table_csv)
    n = sum(len(v) for v in info["ranges"].values())
    a("## Handover table\n")
    widths = [e - s for rs in info["ranges"].values() for s, e, _ in rs]
    a(
        f"{n} ranges: the stretches of track where at least {info['min_support']} of the {info['runs']} learning runs "
        "saw a handover (each handover's own GPS span widened by 3 σ of the GPS error, 15 m; P0 §3). "
        + (f"Widths {min(widths):.0f}–{max(widths):.0f} m. " if widths else "")
        + "PHA excludes an operator's subflow from entering one of its ranges until that operator's handover "
        "completes (P0 Algorithm 1); PHA-D's MP_PRIO covers the whole range.\n"
    )
    cov = prov.get("table_coverage") or {}
    hpm = _main_hpm(prov)
    interrupt = prov.get("interruption_ms")
    a("| operator | ride inside ranges | real interruption time (handovers/min × interruption) |")
    a("|---|---|---|")
    for op in sorted(cov):
        real = None if hpm.get(op) is None or interrupt is None else hpm[op] * interrupt / 60000.0
        a(f"| {op} | {100 * cov[op]:.2f} % | {'n/a' if real is None else f'{100 * real:.2f} %'} |")
    share = prov.get("handovers_in_ranges")
    a("")
    a(
        f"Evaluation handovers starting inside a range of their operator: "
        f"{'n/a' if share is None else f'{100 * share:.1f} %'} (the rest are not predicted; PHA then behaves as the "
        "plain scheduler). The ranges are wider than the interruptions because handover positions scatter between "
        "runs (run-to-run shadowing, 200 ms measurement period, time-to-trigger), by ±tens of metres.\n"
    )
    for name, t in (prov.get("tables") or {}).items():
        if name == "table.csv":
            continue
        cov = t.get("coverage") or {}
        share = t.get("handovers_in_ranges")
        a(
            f"Profile(s) {', '.join(t['profiles'])} use their own table, `{name}`, learned the same way under their "
            f"handover model ({t['handover_model']}): {t['ranges']} ranges covering "
            + (" / ".join(f"{100 * v:.2f} % ({op})" for op, v in sorted(cov.items())) or "n/a")
            + " of the ride; evaluation handovers inside a range "
            + ("n/a" if share is None else f"{100 * share:.1f} %")
            + "; mean IP-level gap (interruption + X2 forwarding) "
            + (
                "n/a"
                if t.get("interruption_ms") is None
                else f"{t['interruption_ms']:.1f} ms"
                + (
                    " (the scenario's setting: no run measures it)"
                    if not t.get("interruption_seeds")
                    else ("" if t.get("interruption_ci_ms") is None else f" ± {t['interruption_ci_ms']:.1f}")
                    + f" (mean over {t['interruption_seeds']} evaluation rides"
                    + (", ± 95 % CI)" if t.get("interruption_ci_ms") is not None else ")")
                )
            )
            + ".\n"
        )


def _real_text(prov: dict[str, Any]) -> str:
    """Per operator, the share of the ride spent in handover interruptions (handovers/min x gap)."""
    hpm, gap = _main_hpm(prov), prov.get("interruption_ms")
    parts = [f"{100 * h * gap / 60000.0:.2f} % ({op})" for op, h in sorted(hpm.items()) if h is not None and gap]
    return " / ".join(parts) or "n/a"


def _cov_text(prov: dict[str, Any]) -> str:
    cov = prov.get("table_coverage") or {}
    return " / ".join(f"{100 * v:.1f} % ({op})" for op, v in sorted(cov.items())) or "n/a"


def render_report(
    agg: Agg,
    prov: dict[str, Any],
    figs: dict[str, str],
    table_csv: str,
    rows: Optional[Sequence[dict[str, Any]]] = None,
) -> str:
    L: list[str] = []
    a = L.append
    groups = sorted(
        {(p, s) for p, s, _ in agg if s != SINGLE},
        key=lambda x: (list(PROFILES).index(x[0]), PROFILES[x[0]]["schedulers"].index(x[1])),
    )

    def get(p: str, s: str, v: str, m: str) -> tuple[Optional[float], Optional[float], int]:
        return agg.get((p, s, v), {}).get(m, (None, None, 0))

    n_seeds = prov["evaluation_seeds"][1]
    a("# P0 reproduction: proactive handover-aware MPTCP scheduling on a high-speed train\n")
    a(
        f"Generated by `{prov['command']}`. {prov['runs']} runs of {prov['duration_s']:g} s "
        f"(seeds 1..{n_seeds} per scheduler and variant), handover table learned from {prov['table_runs']} "
        f"preliminary runs (seeds {prov['table_seeds'][0]}..{prov['table_seeds'][1]}, disjoint from the evaluation "
        "seeds). "
        "Means over seeds with 95 % Student-t confidence intervals. The paper's absolute throughput unit is "
        "ambiguous (it writes Mbps; with 25 Mbit/s links it is most likely MB/s), so only *relative* changes are "
        "compared.\n"
    )
    a(
        "Receive buffer: P0 does not state it. The *paper* profile assumes ns-3's `TcpSocket::RcvBufSize` default "
        "(131072 B, as P0 does not say it changed it), the *modern* profile Linux's 6 MiB. This decides much of the "
        "result: PHA gains only when head-of-line blocking would otherwise fill the shared receive buffer and stall "
        "the healthy subflow too, which a 6 MiB buffer never lets happen.\n"
    )
    a(
        "Profiles: *paper* runs P0's setup (minRTT/ECF/BLEST/Peekaboo, LIA, 128 KiB) with Linux's behaviour (the fixed "
        "40 + 10 ms interruption, Linux's TCP window rules, Linux MPTCP's receive-buffer optimisation); *ns3* runs the "
        "same "
        "setup as ns-3 would (P0's tool): the interruption comes out of RRC/X2 signalling (`[hst.handover] model = "
        '"signalling"`), TCP follows ns-3\'s window rules (`[flows.tcp] reno_ssthresh = "flight", cwnd_validation = '
        "false`: NewReno halves the bytes in flight, cwnd grows while the receive window limits the flight) and the "
        "receive-buffer optimisation is off (a Linux MPTCP feature P0 does not mention); *modern* is today's Linux "
        "(linux-default, CUBIC, 6 MiB). docs/handover-model.md §4–5 measures each of these choices.\n"
    )
    render_table_section(a, prov, table_csv)
    if "timeseries" in prov["handover_metrics_source"]:
        a(
            "> **Note.** The installed simulator extension predates the handover metrics in the summary "
            f"(core built from `{prov['core_build_git_revision']}`): instantaneous handover throughput and OFO "
            "inside/outside handovers were computed from the 100 ms time series with the same window definition, "
            "and HoL delay inside/outside handovers is unavailable (n/a). Rebuild the extension "
            "(`.venv/bin/pip install -e .` / `maturin develop --release`) to get them from the simulator.\n"
        )

    def pha_d_rows(metric: str, columns: int, scale: float = 1.0) -> None:
        """Rows comparing each PHA-D timing policy with the plain scheduler (the paper has no
        PHA-D numbers, so the paper columns stay empty)."""
        for v in PHA_D_VARIANTS:
            for p, s in groups:
                m0, c0, _ = get(p, s, "plain", metric)
                m1, c1, n1 = get(p, s, v, metric)
                if not n1:
                    continue
                sc0 = None if c0 is None else c0 * scale
                sm0 = None if m0 is None else m0 * scale
                sm1 = None if m1 is None else m1 * scale
                sc1 = None if c1 is None else c1 * scale
                empty = " — |" * (columns - 5)
                a(
                    f"| {LABEL.get(s, s)} + {VARIANT_LABEL[v]} | {p} | {_ci(sm0, sc0)} | {_ci(sm1, sc1)} | "
                    f"{_pm(*paired_change(rows or [], p, s, v, metric)[:2])} |{empty}"
                )

    def plain_vs_pha_rows(
        metric: str, paper_change: dict[str, float]
    ) -> dict[str, tuple[Optional[float], Optional[float], int]]:
        """One row per (profile, scheduler): plain vs PHA on `metric`, beside the paper's change;
        returns the paper profile's changes by scheduler."""
        changes: dict[str, tuple[Optional[float], Optional[float], int]] = {}
        for p, s in groups:
            m0, c0, _ = get(p, s, "plain", metric)
            m1, c1, _ = get(p, s, "pha", metric)
            pc = paired_change(rows or [], p, s, "pha", metric)
            ch = pc[0]
            if p == "paper":
                changes[s] = pc
            paper = paper_change.get(s) if p in PAPER_SETUP else None
            diff = None if ch is None or paper is None else ch - paper
            a(
                f"| {LABEL.get(s, s)} | {p} | {_ci(m0, c0)} | {_ci(m1, c1)} | {_pm(pc[0], pc[1])} | "
                f"{f2p(paper) if paper is not None else '—'} | {f3(diff, True) if diff is not None else '—'} |"
            )
        return changes

    # Table 2
    a("## Table 2 — average throughput (goodput, Mbit/s)\n")
    a("| scheduler | profile | existing | PHA | change by PHA (paired by seed) | paper change | difference (pp) |")
    a("|---|---|---|---|---|---|---|")
    t2 = plain_vs_pha_rows("goodput_mbps", PAPER_T2_CHANGE)
    pha_d_rows("goodput_mbps", 7)
    a("")
    a(_verdict(t2, PAPER_T2_CHANGE, "average throughput") + "\n")
    if figs.get("fig7"):
        a(f"![Fig. 7 analogue]({figs['fig7']})\n")

    # Table 3
    a("## Table 3 — instantaneous throughput during handovers (Mbit/s)\n")
    a("Definition: the mean goodput of the 1 s windows, aligned to whole seconds, that contain a handover start.\n")
    a("| scheduler | profile | existing | PHA | change by PHA (paired by seed) | paper change | difference (pp) |")
    a("|---|---|---|---|---|---|---|")
    t3 = plain_vs_pha_rows("handover_goodput_mbps", PAPER_T3_CHANGE)
    paper_sched = [s for p, s in groups if p == "paper"]
    if paper_sched:
        # Per seed, the mean over the schedulers (they ride the same train), then mean ± CI over seeds.
        avg0 = _mean_over_schedulers(rows or [], "paper", paper_sched, "plain", "handover_goodput_mbps")
        avg1 = _mean_over_schedulers(rows or [], "paper", paper_sched, "pha", "handover_goodput_mbps")
        change = mean_ci([(avg1[k] - avg0[k]) / avg0[k] * 100.0 for k in sorted(set(avg0) & set(avg1)) if avg0[k]])
        pc = pct(PAPER_T3_AVG[1], PAPER_T3_AVG[0])
        a(
            f"| average over the {len(paper_sched)} schedulers (paper profile) | paper | "
            f"{_ci(*mean_ci(list(avg0.values())))} | "
            f"{_ci(*mean_ci(list(avg1.values())))} | {_pm(*change)} | "
            f"{f2p(pc)} (2.37 → 2.84) | {f3(None if change[0] is None or pc is None else change[0] - pc, True)} |"
        )
    pha_d_rows("handover_goodput_mbps", 7)
    a("")
    a(_verdict(t3, PAPER_T3_CHANGE, "instantaneous handover throughput") + "\n")
    if figs.get("fig8"):
        a(f"![Fig. 8 analogue]({figs['fig8']})\n")

    # Table 4
    a("## Table 4 — retransmission ratio (%)\n")
    a(
        "| scheduler | profile | existing | PHA | change by PHA (paired by seed) | paper existing → PHA | paper change "
        "| difference (pp) |"
    )
    a("|---|---|---|---|---|---|---|---|")
    t4: dict[str, tuple[Optional[float], Optional[float], int]] = {}
    paper_t4 = {s: pct(b, a_) for s, (a_, b) in PAPER_T4.items()}
    for p, s in groups:
        m0, c0, _ = get(p, s, "plain", "retransmission_ratio")
        m1, c1, _ = get(p, s, "pha", "retransmission_ratio")
        m0p = None if m0 is None else _ci(m0 * 100, None if c0 is None else c0 * 100)
        m1p = None if m1 is None else _ci(m1 * 100, None if c1 is None else c1 * 100)
        pch = paired_change(rows or [], p, s, "pha", "retransmission_ratio")
        ch = pch[0]
        if p == "paper":
            t4[s] = pch
        pp = PAPER_T4.get(s) if p in PAPER_SETUP else None
        pc = paper_t4.get(s) if p in PAPER_SETUP else None
        diff = None if ch is None or pc is None else ch - pc
        a(
            f"| {LABEL.get(s, s)} | {p} | {m0p or 'n/a'} | {m1p or 'n/a'} | {_pm(pch[0], pch[1])} | "
            f"{f'{pp[0]:.3f} → {pp[1]:.3f}' if pp else '—'} | {f2p(pc) if pc is not None else '—'} | "
            f"{f3(diff, True) if diff is not None else '—'} |"
        )
    pha_d_rows("retransmission_ratio", 8, scale=100.0)
    a("")
    a(_verdict(t4, {s: v for s, v in paper_t4.items() if v is not None}, "the retransmission ratio") + "\n")

    # HoL
    a("## Head-of-line blocking inside vs outside handover windows\n")
    a(f"Each run's own p99 and mean, then mean ± 95 % CI over its {n_seeds} seeds.\n")
    a(
        "| scheduler | profile | variant | HoL p99 in handover (ms) | HoL p99 outside (ms) | HoL mean in / outside "
        "(ms) | OFO mean in / outside (KB) |"
    )
    a("|---|---|---|---|---|---|---|")
    kb = lambda x: x if x[0] is None else (x[0] / 1000, None if x[1] is None else x[1] / 1000, x[2])  # noqa: E731
    for p, s in groups:
        for v in VARIANTS:
            if (p, s, v) not in agg:
                continue
            hi = get(p, s, v, "hol_delay_in_handover_p99_ms")
            ho = get(p, s, v, "hol_delay_outside_handover_p99_ms")
            mi = get(p, s, v, "hol_delay_in_handover_mean_ms")
            mo = get(p, s, v, "hol_delay_outside_handover_mean_ms")
            oi = kb(get(p, s, v, "ofo_in_handover_mean_bytes"))
            oo = kb(get(p, s, v, "ofo_outside_handover_mean_bytes"))
            a(
                f"| {LABEL.get(s, s)} | {p} | {v} | {_ci(*hi[:2])} | {_ci(*ho[:2])} | {_ci(*mi[:2])} / {_ci(*mo[:2])} "
                "| "
                f"{_ci(*oi[:2])} / {_ci(*oo[:2])} |"
            )
    a("")
    hol_changes = {(p, s): paired_change(rows or [], p, s, "pha", "hol_delay_in_handover_p99_ms") for p, s in groups}
    known = {k: c for k, c in hol_changes.items() if c[0] is not None}
    if known:
        a(
            "PHA changed the p99 HoL delay inside handover windows by "
            + ", ".join(f"{_pm(*c[:2])} ({LABEL.get(s, s)}, {p}, n = {c[2]})" for (p, s), c in known.items())
            + " (per-seed change, paired by seed; seeds whose plain p99 is 0 are left out); the paper reports no HoL "
            "numbers, only that PHA avoids the HoL blocking.\n"
        )
    else:
        a("HoL delay inside/outside handovers is not available from this simulator build.\n")

    # Fig 6
    if figs.get("fig6"):
        a("## Fig. 6 analogue — per-subflow throughput over time\n")
        a(
            "0.5 s moving average of 100 ms goodput bins, seed 1; dashed lines mark handover starts "
            "(blue: operator A, orange: operator B).\n"
        )
        a(f"![Fig. 6 analogue]({figs['fig6']})\n")

    render_targets(a, rows or [], prov)
    render_single_tcp(a, agg, prov, figs, rows or [])
    render_differences(a, agg, prov, rows or [])

    # provenance
    hpm = prov["handovers_per_min"]
    a("## Provenance\n")
    a(f"- command: `{prov['command']}`")
    a(
        f"- mobipath {prov['mobipath_version']}, git revision `{prov['git_revision']}` "
        f"(simulator core built from `{prov['core_build_git_revision']}`)"
    )
    a(f"- base scenario: `{prov['base_scenario']}`, run duration {prov['duration_s']:g} s")
    a(f"- profiles: {', '.join(prov['profiles'])}; schedulers: {', '.join(prov['schedulers'])}")
    a(
        f"- evaluation seeds 1..{n_seeds}; table runs {prov['table_runs']} (seeds "
        f"{prov['table_seeds'][0]}..{prov['table_seeds'][1]})"
    )
    per_min = lambda x: "n/a" if x is None else f"{x:.2f}/min"  # noqa: E731
    a(
        f"- handovers measured in the evaluation runs: operator A {per_min(hpm['A'])}, operator B {per_min(hpm['B'])} "
        "(paper: 3 per operator per minute)"
    )
    # The table file is a support histogram (operator, stretch, runs that saw a handover there); a
    # range is a run of stretches with at least min_support runs (hotable.table_info).
    for name, t in (prov.get("tables") or {"table.csv": {"ranges": "?", "profiles": prov["profiles"]}}).items():
        a(f"- handover table `{name}` ({', '.join(t['profiles'])}): {t['ranges']} ranges")
    a(f"- handover metrics from: {', '.join(prov['handover_metrics_source'])}")
    a(
        f"- wall time {prov['wall_time_s']:.1f} s (table learning {prov['table_learning_s']:.1f} s, "
        f"runs {prov['runs_s']:.1f} s on {prov['jobs']} worker processes"
        + (
            f"; {prov['reused_runs']} results reused from `runs/`, kept by an earlier invocation)"
            if prov.get("reused_runs")
            else ")"
        )
    )
    a("- per-run numbers: `results.csv`; aggregates: `summary.json`")
    return "\n".join(L) + "\n"
