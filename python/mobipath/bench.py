"""Benchmarks: run fixed scenarios and report speed and memory.

Each benchmark runs in a fresh Python subprocess (``python -m mobipath.bench --child FILE``) so
its peak memory (``ru_maxrss``) is its own; the child imports only the extension module, times
the simulator call alone and prints one JSON line. Reported per scenario: simulated seconds,
wall seconds, events, events per wall second, simulated seconds per wall second, packets carried
by the links and the wall time per packet, the simulator's peak heap (bytes its Rust code held
at most during the run, counted by the extension module's allocator: the process's RSS is mostly
the interpreter and the module's code, the same for every scenario), and the process's peak
RSS and its RSS before the run, for reference.

`--quick` caps each scenario's simulated duration at `QUICK_DURATION_S` past its warm-up (by
rewriting its top-level ``duration_s``) so the whole set runs in seconds, e.g. as a CI smoke
test; the numbers are then only indicative.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import resource
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

from . import provenance

__all__ = [
    "BenchError",
    "find_scenarios",
    "cap_duration",
    "run_one",
    "run_all",
    "QUICK_DURATION_S",
    "FLOW_COUNTS",
    "nflows_scenario",
    "parse_flow_counts",
    "flow_scenarios",
]

#: Simulated-duration cap used by ``mobipath bench --quick``.
QUICK_DURATION_S = 2.0

BENCH_DIR = Path("scenarios") / "bench"


class BenchError(Exception):
    """A benchmark could not be set up (no scenarios found, ...)."""


def find_scenarios(files: Optional[Sequence[Path]] = None, long: bool = False) -> list[Path]:
    """The benchmark scenarios: `files` if given, else ``scenarios/bench/*.toml`` found in the
    current directory, the mobipath source tree or the scenarios shipped with mobipath; with
    `long` also ``scenarios/bench/long/*.toml`` (long runs: cost against run length and size)."""
    if files and not long:
        return [Path(f) for f in files]
    from . import shipped

    candidates = [Path.cwd() / BENCH_DIR]
    root = provenance.source_tree()
    if root is not None:
        candidates.append(root / BENCH_DIR)
    with contextlib.suppress(shipped.ShippedError):
        candidates.append(shipped.root() / BENCH_DIR)
    for d in dict.fromkeys(c.resolve() for c in candidates):
        default = sorted(d.glob("*.toml"))
        if default:
            extra = sorted(d.glob("long/*.toml")) if long else []
            chosen = [Path(f) for f in files] if files else [_relative(p) for p in default]
            return chosen + [_relative(p) for p in extra]
    where = " or ".join(dict.fromkeys(str(c.resolve()) for c in candidates))
    raise BenchError(f"no benchmark scenarios in {where}: pass scenario files or run from the repository root")


def _relative(p: Path) -> Path:
    """`p` relative to the current directory when it lies below it (shorter to read)."""
    try:
        return p.relative_to(Path.cwd().resolve())
    except ValueError:
        return p


_TABLE_HEADER = re.compile(r"^[ \t]*\[", re.M)
_DURATION = re.compile(r"^([ \t]*duration_s[ \t]*=[ \t]*)([0-9][0-9_]*(?:\.[0-9_]+)?(?:[eE][+-]?[0-9]+)?)", re.M)


def quick_cap(text: str) -> float:
    """The simulated-duration cap for a quick run of `text`: `QUICK_DURATION_S` past its
    warm-up (``output.warmup_s``), so the capped scenario stays valid and measures something."""
    try:
        import tomllib  # type: ignore[import-not-found]
    except ImportError:  # Python < 3.11
        import tomli as tomllib  # type: ignore[no-redef]
    try:
        warmup = tomllib.loads(text).get("output", {}).get("warmup_s", 0)
    except (tomllib.TOMLDecodeError, AttributeError):
        warmup = 0
    warmup = float(warmup) if isinstance(warmup, (int, float)) and not isinstance(warmup, bool) else 0.0
    return warmup + QUICK_DURATION_S


def cap_duration(text: str, max_s: float) -> tuple[str, bool]:
    """Lowers the top-level ``duration_s`` of TOML `text` to at most `max_s`.

    Returns the (possibly) new text and whether it was changed. Only a ``duration_s`` before the
    first table header is touched (that is the top-level key).
    """
    header = _TABLE_HEADER.search(text)
    end = header.start() if header else len(text)
    m = _DURATION.search(text, 0, end)
    if m is None:
        return text, False
    value = float(m.group(2).replace("_", ""))
    if value <= max_s:
        return text, False
    new = str(int(max_s)) if float(max_s).is_integer() else repr(float(max_s))
    return text[: m.start(2)] + new + text[m.end(2) :], True


def _rss_mib() -> float:
    """This process's peak RSS in MiB: its own VmHWM where Linux has it (`runcmd.peak_rss_kib`
    says why not ru_maxrss), else ru_maxrss."""
    from .runcmd import peak_rss_kib

    kib = peak_rss_kib()
    if kib is not None:
        return kib / 1024
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # Linux reports KiB, macOS bytes.
    return rss / (1024 * 1024) if sys.platform == "darwin" else rss / 1024


def child_main(path: str, quick: bool) -> dict[str, Any]:
    """Runs one benchmark in this process and returns its measurements."""
    from . import _core

    p = Path(path)
    text = p.read_text(encoding="utf-8")
    capped = False
    if quick:
        text, capped = cap_duration(text, quick_cap(text))
    baseline = _rss_mib()
    heap_before, _ = _core.heap_bytes(True)
    t0 = time.perf_counter()
    raw = _core.run(text, str(p), str(p.resolve().parent), None, None)
    wall = time.perf_counter() - t0
    _, heap_peak = _core.heap_bytes()
    peak = _rss_mib()
    resolved = json.loads(raw["resolved_scenario"])
    summary = json.loads(raw["summary"])
    sim_s = None
    for src in (resolved, summary):
        if isinstance(src, dict) and isinstance(src.get("duration_s"), (int, float)):
            sim_s = float(src["duration_s"])
            break
    events = int(raw["events"])
    # Every packet a link direction delivered (data and ACKs, every hop): the unit of work.
    packets = sum(
        int(v.get("packets_delivered", 0)) for v in (summary.get("links") or {}).values() if isinstance(v, dict)
    )
    return {
        "scenario": str(p),
        "sim_seconds": sim_s,
        "wall_seconds": wall,
        "events": events,
        "events_per_second": events / wall if wall > 0 else None,
        "sim_seconds_per_wall_second": (sim_s / wall) if (sim_s is not None and wall > 0) else None,
        "packets": packets,
        "ns_per_packet": wall * 1e9 / packets if packets else None,
        "sim_peak_heap_mib": max(heap_peak - heap_before, 0) / (1024 * 1024),
        "peak_rss_mib": peak,
        "baseline_rss_mib": baseline,
        "duration_capped": capped,
        "build_profile": str(getattr(_core, "BUILD_PROFILE", "unknown")),
        "build_pgo": str(getattr(_core, "BUILD_PGO", "")) or None,
    }


@dataclass
class BenchResult:
    scenario: str
    measurements: Optional[dict[str, Any]] = None
    error: Optional[str] = None


def run_one(path: Path, quick: bool = False, timeout_s: Optional[float] = None) -> BenchResult:
    """Runs one benchmark in a fresh subprocess."""
    cmd = [sys.executable, "-m", "mobipath.bench", "--child", str(path)]
    if quick:
        cmd.append("--quick")
    try:
        proc = subprocess.run(
            cmd,
            capture_output=True,
            stdin=subprocess.DEVNULL,
            timeout=timeout_s,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return BenchResult(str(path), error=f"timed out after {timeout_s} s")
    out = proc.stdout.decode("utf-8", "replace").strip().splitlines()
    data: Optional[dict[str, Any]] = None
    if out:
        try:
            data = json.loads(out[-1])
        except ValueError:
            data = None
    if isinstance(data, dict) and "error" in data:
        return BenchResult(str(path), error=str(data["error"]))
    if proc.returncode != 0 or not isinstance(data, dict):
        err = proc.stderr.decode("utf-8", "replace").strip()
        lines = [line for line in err.splitlines() if line.strip()]
        return BenchResult(str(path), error=lines[-1] if lines else f"exit code {proc.returncode}")
    return BenchResult(str(path), measurements=data)


def run_all(files: Sequence[Path], quick: bool = False, repeat: int = 1, on_start: Any = None) -> list[BenchResult]:
    """Runs every benchmark `repeat` times; keeps the fastest wall time and the largest peak RSS."""
    results = []
    for path in files:
        if on_start is not None:
            on_start(path)
        best: Optional[BenchResult] = None
        for _ in range(max(1, repeat)):
            r = run_one(path, quick)
            if r.error is not None:
                best = r
                break
            if best is None or best.measurements is None:
                best = r
            else:
                assert r.measurements is not None
                peak = max(best.measurements["peak_rss_mib"], r.measurements["peak_rss_mib"])
                if r.measurements["wall_seconds"] < best.measurements["wall_seconds"]:
                    best = r
                best.measurements["peak_rss_mib"] = peak  # type: ignore[index]
        assert best is not None
        results.append(best)
    return results


def _child_cli(argv: Sequence[str]) -> int:
    import argparse

    parser = argparse.ArgumentParser(prog="python -m mobipath.bench", description="Run one benchmark (internal).")
    parser.add_argument("--child", required=True, metavar="FILE")
    parser.add_argument("--quick", action="store_true")
    args = parser.parse_args(argv)
    try:
        data = child_main(args.child, args.quick)
    except Exception as e:  # reported by the parent as this benchmark's error
        from . import _core
        from .errors import ConfigError

        if isinstance(e, _core.ScenarioError):
            msg = "; ".join(str(ConfigError.from_dict(d)) for d in getattr(e, "errors", [])) or str(e)
        elif isinstance(e, OSError):
            msg = e.strerror or str(e)
        else:
            msg = f"{type(e).__name__}: {e}"
        data = {"error": msg.strip().replace("\n", "; ")}
    sys.stdout.write(json.dumps(data) + "\n")
    return 0 if "error" not in data else 1


if __name__ == "__main__":
    sys.exit(_child_cli(sys.argv[1:]))


# --- Many flows (`mobipath bench --flows 1,100,1000,10000`) ---------------------------------

#: The flow counts of the scaling rows (`--flows` without a list of its own in the docs).
FLOW_COUNTS = (1, 100, 1000, 10000)
#: The largest flow count `--flows` accepts.
MAX_FLOWS = 100_000


def nflows_scenario(n: int, duration_s: float = 20.0) -> str:
    """`n` NewReno bulk flows sharing one bottleneck: 1000 Mbit/s, 20 ms one way, a 4000-packet
    queue, `duration_s` seconds (htsim's `speed_tcpn 1000 20 4000 20 0 N` is the same workload).
    The flows' own time series follow ``[output] series``'s default."""
    lines = [
        f"# mobipath bench --flows: {n} NewReno bulk flows through one 1000 Mbit/s bottleneck.",
        f'name = "nflows-{n}"',
        "seed = 1",
        f"duration_s = {duration_s:g}",
        "",
        "[[links]]",
        'name = "bottleneck"',
        "rate_mbps = 1000",
        "delay_ms = 20",
        "queue_packets = 4000",
        "",
        "[[paths]]",
        'name = "p"',
        'links = ["bottleneck"]',
    ]
    for i in range(n):
        lines += ["", "[[flows]]", f'name = "f{i}"', 'path = "p"', 'cc = "newreno"', 'traffic = { kind = "bulk" }']
    return "\n".join(lines) + "\n"


def parse_flow_counts(text: str) -> list[int]:
    """`1,100,1000` → [1, 100, 1000]; raises ValueError naming what is allowed."""
    counts: list[int] = []
    for part in text.split(","):
        part = part.strip()
        if not part.isdigit() or not 1 <= int(part) <= MAX_FLOWS:
            raise ValueError(
                f"--flows: {part!r} is not a flow count; give whole numbers in [1, {MAX_FLOWS}] separated by commas"
            )
        counts.append(int(part))
    return counts


def flow_scenarios(counts: Sequence[int], scratch: Path) -> list[Path]:
    """Writes the many-flow scenarios for `counts` into `scratch` and returns their paths."""
    paths = []
    for n in counts:
        p = scratch / f"nflows-{n}.toml"
        p.write_text(nflows_scenario(n), encoding="utf-8")
        paths.append(p)
    return paths


# --- Whole-process benchmark (`mobipath bench --process`) ------------------------------------

#: A 10 ms scenario: what `mobipath run` costs beyond the simulation (start-up, writing results).
STARTUP_SCENARIO = """# mobipath bench --process: a 10 ms run, so the wall time is start-up and writing results.
name = "startup-10ms"
seed = 1
duration_s = 0.01
output = { bin_ms = 1 }

[[links]]
name = "bottleneck"
rate_mbps = 100
delay_ms = 20
queue_packets = 333

[[paths]]
name = "p1"
links = ["bottleneck"]

[[flows]]
name = "cubic"
path = "p1"
cc = "cubic"
traffic = { kind = "bulk" }
"""


def mobipath_command() -> list[str]:
    """The `mobipath` console script next to this interpreter (what users run), else
    `python -m mobipath`."""
    script = Path(sys.executable).with_name("mobipath")
    return [str(script)] if script.exists() else [sys.executable, "-m", "mobipath"]


def run_process(path: Path, repeat: int = 10, workdir: Optional[Path] = None) -> dict[str, Any]:
    """Runs ``mobipath run PATH --json -q`` `repeat` times as a user would (a new process each
    time, results written to a scratch folder) and returns the median and minimum wall time and
    the largest peak RSS of the process: its own VmHWM, which it writes at exit when
    MOBIPATH_PEAK_RSS_FILE is set (ru_maxrss from wait4 would include this parent's RSS)."""
    import statistics
    import tempfile

    walls: list[float] = []
    rss: list[float] = []
    with tempfile.TemporaryDirectory(prefix="mobipath-bench-", dir=workdir) as tmp:
        cmd = [*mobipath_command(), "run", str(path), "--json", "-q", "--out", str(Path(tmp) / "out")]
        peak_file = Path(tmp) / "peak-rss"
        env = {**os.environ, "MOBIPATH_PEAK_RSS_FILE": str(peak_file)}
        for _ in range(max(1, repeat)):
            peak_file.unlink(missing_ok=True)
            t0 = time.perf_counter()
            proc = subprocess.run(
                cmd,
                stdout=subprocess.DEVNULL,
                stderr=subprocess.PIPE,
                stdin=subprocess.DEVNULL,
                cwd=tmp,
                env=env,
                check=False,
            )
            walls.append(time.perf_counter() - t0)
            if proc.returncode != 0:
                lines = [ln for ln in proc.stderr.decode("utf-8", "replace").splitlines() if ln.strip()]
                return {"scenario": str(path), "error": lines[-1] if lines else f"exit code {proc.returncode}"}
            with contextlib.suppress(OSError, ValueError):  # not Linux: no VmHWM
                rss.append(int(peak_file.read_text().strip()) / 1024)
    return {
        "scenario": str(path),
        "runs": len(walls),
        "wall_median_s": statistics.median(walls),
        "wall_min_s": min(walls),
        "peak_rss_mib": max(rss) if rss else None,
        "command": " ".join(cmd[:-2] + ["--out", "DIR"]),
    }


def process_scenarios(files: Optional[Sequence[Path]], scratch: Path) -> list[Path]:
    """The whole-process set: the 10 ms start-up scenario, then `files` or the default set."""
    startup = scratch / "startup-10ms.toml"
    startup.write_text(STARTUP_SCENARIO, encoding="utf-8")
    return [startup, *find_scenarios(files)]


# ---------------------------------------------------------------------------------------------
# The emulator's ceiling

#: Offered loads (Mbit/s, in total over the paths) the ceiling search steps through.
CEILING_STEPS_MBPS = (200.0, 400.0, 600.0, 800.0, 1000.0, 1200.0, 1600.0, 2000.0)
#: A load is sustained when at least this share of the offered packets is delivered ...
CEILING_MIN_DELIVERED = 0.99
#: ... and the emulator's p99 release-time error stays at or below this (the emulator's target).
CEILING_MAX_P99_US = 200.0


def emulator_ceiling(measure: Any, steps: Sequence[float] = CEILING_STEPS_MBPS) -> dict[str, Any]:
    """Steps the offered load up until the emulator stops sustaining it; returns every step
    measured and the ceiling (the highest load sustained below the first that was not; None if
    the first already failed).

    `measure(offered_mbps)` returns a row with `sent_packets`, `received_packets` and `p99_us`
    (None when nothing was timed). A step whose generator could not even send what was offered
    (sent < 99 % of what the offered rate asks for, reported by the row's `offered_packets`)
    ends the search as *generator-limited*: the emulator was not the bottleneck there, so no
    ceiling above the last sustained step can be claimed."""
    rows: list[dict[str, Any]] = []
    ceiling: Optional[float] = None
    stopped = "every step sustained"
    for offered in steps:
        r = dict(measure(offered))
        r["offered_mbps"] = offered
        want = r.get("offered_packets") or r["sent_packets"]
        r["generator_share"] = r["sent_packets"] / want if want else 0.0
        r["delivered_share"] = r["received_packets"] / r["sent_packets"] if r["sent_packets"] else 0.0
        p99 = r.get("p99_us")
        r["sustained"] = (
            r["generator_share"] >= CEILING_MIN_DELIVERED
            and r["delivered_share"] >= CEILING_MIN_DELIVERED
            and p99 is not None
            and p99 <= CEILING_MAX_P99_US
        )
        rows.append(r)
        if r["generator_share"] < CEILING_MIN_DELIVERED:
            stopped = f"the traffic generator sent only {100 * r['generator_share']:.1f} % of {offered:g} Mbit/s"
            break
        if not r["sustained"]:
            why = []
            if r["delivered_share"] < CEILING_MIN_DELIVERED:
                why.append(f"delivered {100 * r['delivered_share']:.1f} %")
            if p99 is None or p99 > CEILING_MAX_P99_US:
                why.append(f"p99 release error {'n/a' if p99 is None else f'{p99:.0f} µs'}")
            stopped = f"{offered:g} Mbit/s: " + ", ".join(why)
            break
        ceiling = offered
    return {
        "rows": rows,
        "ceiling_mbps": ceiling,
        "stopped": stopped,
        "criteria": {"min_delivered": CEILING_MIN_DELIVERED, "max_p99_us": CEILING_MAX_P99_US},
    }
