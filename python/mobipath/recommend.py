"""`mobipath recommend`: which MPTCP scheduler and congestion control to run on *your* paths.

The user describes two or more paths (rate/delay/loss, a capacity trace, or a measured profile)
and a goal; mobipath simulates every scheduler × controller pair over seeds on all cores (an MPTCP
connection straight over the paths: the router–proxy leg of P2's setup, where the choice is
made), ranks the pairs by the goal with 95 % CIs — pairs whose CIs overlap the best one's are ties,
not an order — and prints how to apply the recommendation on Linux, flagging pairs the stock
kernel cannot run.

Goals: `bulk` (goodput of a long transfer, higher is better), `file:SIZE` (completion time of a
SIZE-byte file, e.g. `file:20MB`, lower is better), `cbr:RATE` (p99 application delay of a
constant-bit-rate stream of RATE Mbit/s, lower is better; docs/metrics.md).
"""

from __future__ import annotations

import contextlib
import json
import math
import re
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import typer

SCHEDULERS = ["minrtt", "roundrobin", "redundant", "blest", "ecf", "linux-default"]
CCS = ["lia", "olia", "balia", "wvegas", "reno", "cubic", "bbr"]
# What the stock (upstream) Linux kernel runs: its one in-kernel MPTCP scheduler and per-subflow
# single-path controllers (no coupled ones). The others need the out-of-tree multipath-tcp.org
# kernel (v0.95: net.mptcp.mptcp_scheduler, coupled controllers as tcp_congestion_control).
UPSTREAM_SCHEDULERS, UPSTREAM_CCS = {"linux-default"}, {"reno", "cubic", "bbr"}
# Schedulers that exist as BPF struct_ops programs for the upstream MPTCP stack (net.mptcp.scheduler):
# round robin and redundant (bpf_rr, bpf_red) in the MPTCP maintainers' development tree
# (mptcp_net-next, tools/testing/selftests/bpf/progs/mptcp_bpf_*.c), not yet in a released kernel.
BPF_SCHEDULERS = {"roundrobin": "bpf_rr", "redundant": "bpf_red"}
# Where a pair runs, best first: the stock kernel; a BPF scheduler on it; the out-of-tree
# multipath-tcp.org kernel with its default scheduler (minRTT); with another of its schedulers.
RUNS_ON = {
    0: "upstream Linux kernel",
    1: "upstream Linux kernel with a BPF scheduler (MPTCP development tree)",
    2: "out-of-tree multipath-tcp.org kernel (its default scheduler)",
    3: "out-of-tree multipath-tcp.org kernel",
    4: "no shipped kernel (the upstream scheduler with a coupled controller only the out-of-tree kernel has)",
}

SHORT_RUNS_ON = {
    RUNS_ON[0]: "upstream kernel",
    RUNS_ON[1]: "upstream + BPF scheduler",
    RUNS_ON[2]: "multipath-tcp.org kernel",
    RUNS_ON[3]: "multipath-tcp.org kernel",
    RUNS_ON[4]: "none",
}


def deploy_tier(sched: str, cc: str) -> int:
    """How readily a pair deploys (a key of RUNS_ON, lower is readier). Coupled controllers exist
    only in the out-of-tree kernel, whatever the scheduler."""
    if cc in UPSTREAM_CCS:
        if sched in UPSTREAM_SCHEDULERS:
            return 0
        if sched in BPF_SCHEDULERS:
            return 1
    if sched in UPSTREAM_SCHEDULERS:
        return 4
    return 2 if sched == "minrtt" else 3


# Measured profiles: P2's operators (uplink; docs/papers.md).
PROFILES: dict[str, dict[str, float]] = {
    "p2-skt-up": {"rate": 15.94, "delay": 12.9},
    "p2-kt-up": {"rate": 38.17, "delay": 20.1},
    "p2-skt-down": {"rate": 18.89, "delay": 12.9},
    "p2-kt-down": {"rate": 37.45, "delay": 20.1},
}
# The simulator's own ranges for a link (crates/sim/src/link/config.rs: MIN_RATE_MBPS,
# MAX_RATE_MBPS, MAX_DELAY_MS, MAX_QUEUE_PACKETS; loss.p in [0, 1]): a path recommend accepts is
# one the simulator runs (tests/python/test_recommend.py checks each end against the simulator).
RATE_RANGE = (1e-6, 1e6)
DELAY_RANGE = (0.0, 3.6e6)
LOSS_RANGE = (0.0, 100.0)
QUEUE_MS_RANGE = (1.0, 1e4)
MAX_QUEUE_PACKETS = 100_000_000
PATH_KEYS = {
    "rate": "Mbit/s, [0.000001, 1000000]",
    "delay": "one-way ms, [0, 3600000]",
    "loss": "percent, [0, 100]",
    "queue_ms": "ms of queue at the rate, [1, 10000] (default 100)",
    "trace": "a per-second Mbit/s trace file",
    "profile": "one of " + ", ".join(PROFILES),
}
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
}


class RecommendError(ValueError):
    """A bad `recommend` input; the message names the flag and the allowed values."""


@dataclass
class PathSpec:
    rate: Optional[float] = None
    delay: Optional[float] = None
    loss: float = 0.0
    queue_ms: float = 100.0
    trace: Optional[Path] = None
    text: str = ""


@dataclass
class Goal:
    kind: str  # bulk | file | cbr
    value: float = 0.0  # bytes (file) or Mbit/s (cbr)
    metric: str = "goodput_mbps"
    higher_is_better: bool = True
    unit: str = "Mbit/s"
    label: str = "goodput"


def _num(key: str, raw: str, bounds: tuple[float, float], where: str) -> float:
    lo, hi = bounds
    try:
        v = float(raw)
    except ValueError:
        raise RecommendError(f"{where}: {key} = {raw!r} is not a number ({PATH_KEYS.get(key, '')})") from None
    if not math.isfinite(v) or v > hi or v < lo:
        raise RecommendError(f"{where}: {key} = {raw} is out of range ({PATH_KEYS[key]})")
    return v


def parse_path(text: str, index: int) -> PathSpec:
    """`rate=20,delay=15,loss=0.1`, `trace=FILE,delay=20` or `profile=p2-kt-up` (keys may combine:
    a profile's values can be overridden). Each key at most once; a rate or a trace needs its
    delay (a profile has one)."""
    where = f"--path #{index + 1} ({text!r})"
    p = PathSpec(text=text)
    items = [i.strip() for i in text.split(",") if i.strip()]
    if not items:
        raise RecommendError(f"{where}: empty; give e.g. rate=20,delay=15")
    kv: dict[str, str] = {}
    for it in items:
        if "=" not in it:
            raise RecommendError(f"{where}: {it!r} is not key=value (keys: {', '.join(PATH_KEYS)})")
        k, v = (s.strip() for s in it.split("=", 1))
        if k not in PATH_KEYS:
            raise RecommendError(f"{where}: unknown key {k!r} (keys: {', '.join(PATH_KEYS)})")
        if k in kv:
            raise RecommendError(f"{where}: {k} is given twice ({k} = {kv[k]}, {k} = {v}); give each key once")
        kv[k] = v
    if "profile" in kv:
        prof = PROFILES.get(kv["profile"])
        if prof is None:
            raise RecommendError(f"{where}: profile = {kv['profile']!r} is unknown ({PATH_KEYS['profile']})")
        p.rate, p.delay = prof["rate"], prof["delay"]
    if "rate" in kv:
        p.rate = _num("rate", kv["rate"], RATE_RANGE, where)
    if "delay" in kv:
        p.delay = _num("delay", kv["delay"], DELAY_RANGE, where)
    if "loss" in kv:
        p.loss = _num("loss", kv["loss"], LOSS_RANGE, where)
    if "queue_ms" in kv:
        p.queue_ms = _num("queue_ms", kv["queue_ms"], QUEUE_MS_RANGE, where)
    if "trace" in kv:
        from .cli import input_file

        p.trace = input_file(Path(kv["trace"]), quiet=True)
        if not p.trace.is_file():
            what = "no such file" if not p.trace.exists() else "not a regular file"
            raise RecommendError(f"{where}: trace = {kv['trace']!r}: {what}")
        if "rate" in kv or "profile" in kv:
            raise RecommendError(f"{where}: give either a rate (or profile) or a trace, not both")
    elif p.rate is None:
        raise RecommendError(f"{where}: no capacity: give rate=, trace= or profile=")
    if p.delay is None:
        # A silent default would rank schedulers on a delay the user never chose.
        raise RecommendError(f"{where}: no delay: give delay=MS (one-way, {PATH_KEYS['delay']}) or a profile")
    return p


def _trace_mean(path: Path) -> float:
    """A per-second trace's mean rate (Mbit/s; at least 1), read bounded (`files`): it sizes the
    path's queue. The simulator has read and checked the trace first (`check_paths`)."""
    from . import files

    total, n = 0.0, 0
    for line in files.read_text(path, errors="replace").splitlines():
        parts = line.split()
        if len(parts) >= 2:
            with contextlib.suppress(ValueError):
                v = float(parts[1])
                if math.isfinite(v):
                    total, n = total + v, n + 1
    return max(1.0, total / n) if n else 10.0


def _queue_packets(p: PathSpec) -> int:
    return max(10, round((p.rate or 10) * 1e6 * p.queue_ms / 1e3 / 8 / 1500))


#: What a `links[i].<field>` error of the simulator is about, as a --path key.
_FIELD_KEY = {"rate_mbps": "rate", "delay_ms": "delay", "loss": "loss", "queue_packets": "queue_ms", "trace": "trace"}


def check_paths(paths: Sequence[PathSpec], goal: Goal, duration_s: float) -> None:
    """Has the simulator check the scenario these paths and this goal make, before any run:
    a path it refuses (a trace it cannot read, a queue beyond its range) is a RecommendError
    naming the --path and the key, not a failure in every worker. Then sizes each traced path's
    queue by the trace's mean rate."""
    from . import _core

    for i, p in enumerate(paths):
        if _queue_packets(p) > MAX_QUEUE_PACKETS:
            raise RecommendError(
                f"--path #{i + 1} ({p.text!r}): queue_ms = {p.queue_ms:g} at rate = {p.rate:g} is a queue of "
                f"{_queue_packets(p)} packets, above the simulator's {MAX_QUEUE_PACKETS}; lower queue_ms"
            )
    text = scenario_text(paths, goal, SCHEDULERS[0], CCS[0], duration_s)
    problems: list[str] = []
    per_path: dict[int, list[str]] = {}
    for d in _core.validate(text, "recommend.toml", "."):
        field, value, message = str(d.get("field", "")), str(d.get("value", "")), str(d.get("message", ""))
        m = re.match(r"links\[(\d+)\]\.?([a-z_]*)", field)
        if m and int(m.group(1)) < len(paths):
            i = int(m.group(1))
            key = _FIELD_KEY.get(m.group(2), m.group(2) or "path")
            shown = f" = {value}" if value else ""
            per_path.setdefault(i, []).append(f"{key}{shown}: {message}")
        elif field.startswith("flows[0].traffic"):
            problems.append(f"--goal {goal.kind}: {field} = {value}: {message}")
        else:
            problems.append(f"{field} = {value}: {message}" if value else f"{field}: {message}")
    for i, msgs in sorted(per_path.items()):
        more = f"; and {len(msgs) - 3} more" if len(msgs) > 3 else ""
        problems.append(f"--path #{i + 1} ({paths[i].text!r}): " + "; ".join(msgs[:3]) + more)
    if problems:
        raise RecommendError("; ".join(problems))
    for p in paths:
        if p.trace is not None and p.rate is None:
            p.rate = _trace_mean(p.trace)


_SIZE = re.compile(r"^(\d+(?:\.\d+)?)\s*(b|kb|mb|gb|kib|mib|gib)?$", re.I)
_MULT = {"b": 1, "kb": 1e3, "mb": 1e6, "gb": 1e9, "kib": 1024, "mib": 1024**2, "gib": 1024**3}


def parse_goal(text: str) -> Goal:
    t = text.strip().lower()
    if t == "bulk":
        return Goal("bulk")
    if t.startswith("file:"):
        m = _SIZE.match(t[5:].strip())
        if not m:
            raise RecommendError(f"--goal {text!r}: file:SIZE needs a size such as 20MB or 500KiB")
        size = float(m.group(1)) * _MULT[(m.group(2) or "b").lower()]
        if not 1e3 <= size <= 1e11:
            raise RecommendError(f"--goal {text!r}: the file size must be in [1 KB, 100 GB]")
        return Goal("file", size, "fct_s", False, "s", "completion time")
    if t.startswith("cbr:"):
        try:
            rate = float(t[4:])
        except ValueError:
            raise RecommendError(f"--goal {text!r}: cbr:RATE needs a rate in Mbit/s, e.g. cbr:5") from None
        if not 0 < rate <= 1e4:
            raise RecommendError(f"--goal {text!r}: the CBR rate must be in (0, 10000] Mbit/s")
        return Goal("cbr", rate, "app_delay_p99_ms", False, "ms", "p99 application delay")
    raise RecommendError(f"--goal {text!r}: unknown goal (bulk, file:SIZE, cbr:RATE)")


def scenario_text(paths: Sequence[PathSpec], goal: Goal, sched: str, cc: str, duration_s: float) -> str:
    out = [f'name = "recommend-{sched}-{cc}"\nseed = 1\nduration_s = {duration_s:g}\n']
    for i, p in enumerate(paths):
        queue = _queue_packets(p)
        cap = (
            f'trace = {{ format = "mbps-per-second", file = "{p.trace.resolve().as_posix()}", missing = "zero" }}'
            if p.trace
            else f"rate_mbps = {p.rate:g}"
        )
        loss = f'\nloss = {{ model = "bernoulli", p = {p.loss / 100:g} }}' if p.loss > 0 else ""
        out.append(f'[[links]]\nname = "l{i}"\n{cap}\ndelay_ms = {p.delay or 0:g}\nqueue_packets = {queue}{loss}\n')
        out.append(f'[[paths]]\nname = "p{i}"\nlinks = ["l{i}"]\n')
    traffic = {
        "bulk": '{ kind = "bulk" }',
        "file": f'{{ kind = "file", bytes = {int(goal.value)} }}',
        "cbr": f'{{ kind = "cbr", rate_mbps = {goal.value:g} }}',
    }[goal.kind]
    names = ", ".join(f'"p{i}"' for i in range(len(paths)))
    out.append(
        f'[[flows]]\nname = "mptcp"\npaths = [{names}]\ncc = "{cc}"\nscheduler = "{sched}"\ntraffic = {traffic}\n'
    )
    return "\n".join(out)


def run_pair(key: tuple[str, str, int], text: str, metric: str) -> Optional[float]:
    from . import _core

    raw = _core.run(text, "recommend.toml", ".", key[2], None)
    s = json.loads(raw["summary"]) if isinstance(raw["summary"], str) else raw["summary"]
    v = s["flows"]["mptcp"].get(metric)
    return None if v is None else float(v)


@dataclass
class Ranked:
    sched: str
    cc: str
    mean: Optional[float]
    ci: Optional[float]
    n: int
    failed: int
    rank: int = 0
    tie_with_best: bool = False
    upstream: bool = False
    tier: int = 3
    # Deterministic runs (one run per pair, no CI): half of the 1 % within which two pairs tie.
    tie_band: Optional[float] = None


def rank(
    results: dict[tuple[str, str], list[Optional[float]]], higher_is_better: bool, deterministic: bool
) -> list[Ranked]:
    """Ranks pairs: a pair's rank is 1 + the number of pairs that are better with CIs apart;
    pairs whose CI overlaps the best pair's are ties with it. Deterministic runs (one seed: no
    random element) count differences under 1 % as ties."""
    from .experiments.common import mean_ci  # late: `mobipath run` does not pay for it

    rows = []
    for (s, c), vals in results.items():
        ok = [v for v in vals if v is not None]
        m, ci = mean_ci(ok)
        # One run per pair has no CI: a tie band stands in for it when comparing, and is not reported as one.
        band = abs(m) * 0.005 if deterministic and m is not None else None
        rows.append(
            Ranked(
                s,
                c,
                m,
                None if deterministic else ci,
                len(ok),
                len(vals) - len(ok),
                upstream=s in UPSTREAM_SCHEDULERS and c in UPSTREAM_CCS,
                tier=deploy_tier(s, c),
                tie_band=band,
            )
        )
    sign = 1.0 if higher_is_better else -1.0

    def better(a: Ranked, b: Ranked) -> bool:  # a better than b, CIs apart
        if a.mean is None or b.mean is None:
            return a.mean is not None and b.mean is None
        return sign * (a.mean - b.mean) > (a.ci or a.tie_band or 0.0) + (b.ci or b.tie_band or 0.0)

    for r in rows:
        r.rank = 1 + sum(1 for o in rows if o is not r and better(o, r))
    rows.sort(key=lambda r: (r.rank, -sign * (r.mean if r.mean is not None else -sign * math.inf), r.sched, r.cc))
    best = rows[0]
    for r in rows:
        r.tie_with_best = r is best or not (better(best, r) or better(r, best))
    return rows


def preferred(ranked: Sequence[Ranked]) -> Ranked:
    """The pair to recommend: among the pairs tied with the best (equal within the statistics,
    so the order among them is noise), the one that deploys most readily (`deploy_tier`), then
    the better mean, then the name (for determinism only)."""
    ties = [r for r in ranked if r.tie_with_best] or list(ranked[:1])
    order = {id(r): i for i, r in enumerate(ranked)}  # ranked order: better mean first
    return min(ties, key=lambda r: (r.tier, order[id(r)]))


def apply_commands(sched: str, cc: str, n_paths: int) -> list[str]:
    if cc in UPSTREAM_CCS and sched in BPF_SCHEDULERS:
        return [
            "sysctl -w net.mptcp.enabled=1",
            f"sysctl -w net.ipv4.tcp_congestion_control={cc}" + ("   # modprobe tcp_bbr first" if cc == "bbr" else ""),
            f"# a kernel built from the MPTCP development tree (mptcp_net-next), then: "
            f"bpftool struct_ops register mptcp_{BPF_SCHEDULERS[sched]}.bpf.o",
            f"sysctl -w net.mptcp.scheduler={BPF_SCHEDULERS[sched]}",
            f"ip mptcp limits set subflow {n_paths} add_addr_accepted {n_paths}",
            "ip mptcp endpoint add <ADDRESS> dev <IFACE> subflow   # once per extra interface",
        ]
    if sched in UPSTREAM_SCHEDULERS and cc in UPSTREAM_CCS:
        return [
            "sysctl -w net.mptcp.enabled=1",
            f"sysctl -w net.ipv4.tcp_congestion_control={cc}" + ("   # modprobe tcp_bbr first" if cc == "bbr" else ""),
            f"ip mptcp limits set subflow {n_paths} add_addr_accepted {n_paths}",
            "ip mptcp endpoint add <ADDRESS> dev <IFACE> subflow   # once per extra interface",
        ]
    oot = {"minrtt": "default", "linux-default": "default"}.get(sched, sched)
    return [
        "# needs the out-of-tree multipath-tcp.org kernel (v0.95): the stock kernel has no such "
        + ("scheduler" if sched not in UPSTREAM_SCHEDULERS else "congestion control"),
        "sysctl -w net.mptcp.mptcp_enabled=1",
        f"sysctl -w net.mptcp.mptcp_scheduler={oot}",
        f"sysctl -w net.ipv4.tcp_congestion_control={cc}",
    ] + (
        ["# the upstream scheduler is not in that kernel: its default (minRTT) is the nearest, not the same"]
        if sched in UPSTREAM_SCHEDULERS
        else []
    )


def recommend(
    paths: Sequence[PathSpec],
    goal: Goal,
    *,
    seeds: int = 5,
    duration_s: float = 20.0,
    jobs: Optional[int] = None,
    schedulers: Sequence[str] = SCHEDULERS,
    ccs: Sequence[str] = CCS,
    progress: Any = None,
) -> dict[str, Any]:
    from .experiments.common import run_all

    if len(paths) < 2:
        raise RecommendError(f"--path: give at least two paths (got {len(paths)}): MPTCP needs two to choose between")
    random_paths = any(p.loss > 0 for p in paths)
    if random_paths and seeds < 2:
        # One run of a random path has no CI: a ranking from it would order noise.
        raise RecommendError(
            f"--seeds {seeds}: a path has random loss, so give at least 2 seeds (one run per pair "
            "has no confidence interval to rank by)"
        )
    n_seeds = seeds if random_paths else 1
    t0 = time.monotonic()
    check_paths(paths, goal, duration_s)
    if goal.kind == "file" and goal.value * 8 / 1e6 / max(0.001, sum(p.rate or 0 for p in paths)) > duration_s:
        raise RecommendError(
            f"--duration {duration_s:g}: too short for the file even at the paths' summed rate; raise it"
        )
    texts = {(s, c): scenario_text(paths, goal, s, c, duration_s) for s in schedulers for c in ccs}
    keys = [(s, c, seed) for s in schedulers for c in ccs for seed in range(1, n_seeds + 1)]
    bar = progress("recommend runs", len(keys)) if progress else None
    results, n_jobs = run_all(keys, run_pair, lambda k: (k, texts[k[:2]], goal.metric), jobs, bar)
    per: dict[tuple[str, str], list[Optional[float]]] = {}
    for k in keys:
        per.setdefault(k[:2], []).append(results[k])
    if all(v is None for vals in per.values() for v in vals):
        hint = " (no file finished: raise --duration)" if goal.kind == "file" else ""
        raise RecommendError(f"--goal {goal.kind}: no run produced {goal.metric}{hint}")
    ranked = rank(per, goal.higher_is_better, deterministic=not random_paths)
    # Among the pairs tied with the best, the one that deploys most readily is the practical choice.
    best = preferred(ranked)
    # Does the scheduler matter? Per controller, all schedulers tied.
    sched_matters = any(len({r.rank for r in ranked if r.cc == c}) > 1 for c in ccs)
    best_upstream = next((r for r in ranked if r.upstream), None)
    return {
        "goal": {
            "kind": goal.kind,
            "value": goal.value,
            "metric": goal.metric,
            "unit": goal.unit,
            "higher_is_better": goal.higher_is_better,
        },
        "paths": [p.text for p in paths],
        "seeds": n_seeds,
        "deterministic": not random_paths,
        "duration_s": duration_s,
        "runs": len(keys),
        "jobs": n_jobs,
        "wall_time_s": round(time.monotonic() - t0, 2),
        "ranking": [
            {
                "scheduler": r.sched,
                "cc": r.cc,
                "mean": r.mean,
                "ci95": r.ci,
                "runs": r.n,
                "failed": r.failed,
                "rank": r.rank,
                "tie_with_best": r.tie_with_best,
                "stock_kernel": r.upstream,
                "runs_on": RUNS_ON[r.tier],
            }
            for r in ranked
        ],
        "recommended": {
            "scheduler": best.sched,
            "cc": best.cc,
            "stock_kernel": best.upstream,
            "runs_on": RUNS_ON[best.tier],
            "commands": apply_commands(best.sched, best.cc, len(paths)),
        },
        "ties_with_best": [f"{r.sched}+{r.cc}" for r in ranked if r.tie_with_best],
        # The tied pairs by how readily they deploy, each with where it runs.
        "ties_by_deployment": [
            {"scheduler": r.sched, "cc": r.cc, "runs_on": RUNS_ON[r.tier]}
            for r in sorted((r for r in ranked if r.tie_with_best), key=lambda r: r.tier)
        ],
        "scheduler_matters": sched_matters,
        "best_on_stock_kernel": None
        if best_upstream is None
        else {
            "scheduler": best_upstream.sched,
            "cc": best_upstream.cc,
            "tie_with_best": best_upstream.tie_with_best,
            "runs_on": RUNS_ON[best_upstream.tier],
            "commands": apply_commands(best_upstream.sched, best_upstream.cc, len(paths)),
        },
    }


def print_report(res: dict[str, Any]) -> None:
    from rich.console import Console
    from rich.table import Table

    con = Console(highlight=False, width=max(100, Console().width))
    g = res["goal"]
    stat = (
        "deterministic paths (no random loss): one run per pair; pairs within 1 % are ties"
        if res["deterministic"]
        else f"mean ± 95 % CI over {res['seeds']} seeds"
    )
    con.print(
        f"Goal: {g['kind']}{'' if g['kind'] == 'bulk' else ':' + format(g['value'], 'g')} — "
        f"{'higher' if g['higher_is_better'] else 'lower'} {g['metric']} is better; {stat}; "
        f"{res['runs']} runs of {res['duration_s']:g} s in {res['wall_time_s']:.1f} s"
    )
    t = Table(title="scheduler × congestion control, ranked")
    for col in ("rank", "scheduler", "cc", f"{g['metric']} ({g['unit']})", "tie with best", "runs on"):
        t.add_column(col, no_wrap=True)
    for r in res["ranking"]:
        v = (
            "did not finish"
            if r["mean"] is None
            else f"{r['mean']:.3f}" + ("" if r["ci95"] is None else f" ± {r['ci95']:.3f}")
        )
        t.add_row(
            str(r["rank"]),
            LABEL[r["scheduler"]],
            LABEL[r["cc"]],
            v,
            "yes" if r["tie_with_best"] else "",
            SHORT_RUNS_ON[r["runs_on"]],
        )
    con.print(t)
    rec = res["recommended"]
    n_ties = len(res["ties_with_best"])
    con.print(
        f"Recommended: {LABEL[rec['scheduler']]} + {LABEL[rec['cc']]}, runs on the {rec['runs_on']}"
        + (
            f"; {n_ties} pairs tie for the best ({'within 1 %' if res['deterministic'] else 'CIs overlap'})"
            if n_ties > 1
            else "; better than every other pair"
        )
    )
    if n_ties > 1:
        con.print("Tied pairs, most readily deployed first (where each runs):")
        shown = res["ties_by_deployment"][:10]
        for t in shown:
            con.print(f"  {LABEL[t['scheduler']]} + {LABEL[t['cc']]}: {t['runs_on']}")
        if n_ties > len(shown):
            con.print(f"  … and {n_ties - len(shown)} more (all in --json)")
    if not res["scheduler_matters"]:
        con.print(
            "The scheduler makes no measurable difference for this goal on these paths (all schedulers tie for each "
            "controller): choose the controller; to separate schedulers, rank by a goal they affect "
            "(--goal file:SIZE or --goal cbr:RATE)."
        )
    up = res["best_on_stock_kernel"]
    if up and not rec["stock_kernel"]:
        con.print(
            f"Best on a stock kernel: {LABEL[up['scheduler']]} + {LABEL[up['cc']]}"
            + (" (tied with the best)" if up["tie_with_best"] else " (worse than the best, CIs apart)")
        )
    con.print("To apply on Linux:")
    for c in rec["commands"]:
        con.print(f"  {c}", markup=False)
    if not res["deterministic"]:
        con.print(f"Tighter CIs: more seeds (--seeds {res['seeds'] * 4} halves them) or longer runs (--duration).")


def recommend_cmd(
    path: list[str] = typer.Option(
        ...,
        "--path",
        help="A path: rate=MBIT,delay=MS[,loss=PCT][,queue_ms=MS], trace=FILE,delay=MS (per-second Mbit/s) or "
        "profile=NAME (p2-skt-up, p2-kt-up, p2-skt-down, p2-kt-down); each key once; repeat, at least twice.",
        show_default=False,
    ),
    goal: str = typer.Option(
        "bulk",
        "--goal",
        help="bulk (goodput), file:SIZE (completion time, e.g. file:20MB) or cbr:RATE (p99 application delay of a RATE "
        "Mbit/s stream).",
    ),
    seeds: int = typer.Option(
        5, "--seeds", min=1, max=1000, help="Seeds per pair when a path is random (loss); deterministic paths run once."
    ),
    duration: float = typer.Option(20.0, "--duration", min=1.0, max=3600.0, help="Simulated seconds per run."),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes [default: all cores]."),
    as_json: bool = typer.Option(False, "--json", help="Print the result as JSON (for scripts)."),
) -> None:
    """Rank every MPTCP scheduler x congestion control on your paths for a goal, with CIs, and say how
    to apply the best on Linux."""
    from .cli import _guarded

    def go() -> None:
        try:
            specs = [parse_path(p, i) for i, p in enumerate(path)]
            g = parse_goal(goal)
        except RecommendError as e:
            raise typer.BadParameter(str(e)) from None
        try:
            if as_json:
                res = recommend(specs, g, seeds=seeds, duration_s=duration, jobs=jobs)
                typer.echo(json.dumps(res, indent=2, sort_keys=True))
            else:
                from .reproduce import _progress

                with _progress() as (_, bar):
                    res = recommend(specs, g, seeds=seeds, duration_s=duration, jobs=jobs, progress=bar)
                print_report(res)
        except RecommendError as e:
            raise typer.BadParameter(str(e)) from None

    _guarded(go)()
