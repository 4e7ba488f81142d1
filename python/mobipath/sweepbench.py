"""`mobipath bench --sweep`: what the sweep engine costs beyond the simulations it runs.

A grid of `runs` one-second scenarios (one 10-100 Mbit/s link, one bulk flow, four congestion
controls x five rates x seeds) is timed five ways:

1. ``simulation``: the bare simulator calls for every run, in a loop in this process — the work
   itself, without the engine; and ``simulation xN``: the same calls split over N processes at
   once (no engine either): what N cores of this machine give at that moment, the ceiling of
   the engine's speed-up (`speedup_ceiling`; other programs' load lowers it);
2. ``local -j 1``: `mobipath.sweep` of the same grid, fresh, in this process (validation of every
   combination, the cache, flattening the summaries, the Parquet dataset with the time series);
   the overhead per run is (this - simulation) / runs;
3. ``local -j 1, cached``: the same sweep again: every run read back from the cache;
4. ``local -j N``: fresh on N worker processes; throughput (runs/s) against ``local -j 1``;
5. with Ray installed: ``ray -j 1`` and ``ray -j N`` on a local Ray instance of 1 and N CPUs
   (started before the timing; the start-up is reported apart), overhead per run likewise.

With `repeat` > 1 the fresh local steps alternate that many times and the fastest of each counts.
Wall times are of this machine as it is: the load average before and after, and at the start of
each step, is reported, as other programs' load slows the parallel steps most. The local steps
also report CPU time per run, of this process (the driver: validation, reading results, the
dataset; with -j 1 also the simulations) and of its worker processes apart: the engine's work per
run, which other programs' load changes less. The cache's salt (a hash of the 45 MB simulator
extension, once per process) is computed before the timed steps, so no step pays it.
"""

from __future__ import annotations

import functools
import os
import tempfile
import time
from pathlib import Path
from typing import Any, Callable, Optional

BASE = """seed = 1
duration_s = 1
[[links]]
name = "l"
rate_mbps = 10
delay_ms = 20
queue_packets = 100
[[paths]]
name = "p"
links = ["l"]
[[flows]]
name = "f"
path = "p"
cc = "cubic"
traffic = { kind = "bulk" }
"""
CCS = ["cubic", "newreno", "bbr", "reno"]
RATES = [10, 20, 30, 50, 100]


def write_grid(directory: Path, runs: int) -> Path:
    """The benchmark's sweep file (and base scenario) in `directory`: 20 combinations x seeds."""
    seeds = max(1, runs // (len(CCS) * len(RATES)))
    (directory / "base.toml").write_text(BASE, encoding="utf-8")
    f = directory / "bench-grid.toml"
    grid = f'base = "base.toml"\nseeds = {seeds}\n[axes]\n"flows.f.cc" = {CCS!r}\n"links.l.rate_mbps" = {RATES!r}\n'
    f.write_text(grid.replace("'", '"'), encoding="utf-8")
    return f


def run(
    runs: int = 1000, jobs: int = 2, ray: Optional[bool] = None, log: Any = None, repeat: int = 1
) -> dict[str, Any]:
    """Runs the benchmark; returns the measurements (seconds, runs/s, ms per run). `ray`: None =
    when installed. `log(str)` is told what is being timed. `repeat`: the fresh local steps
    (-j 1 and -j N, alternately) are timed that many times and the fastest of each is reported
    (the least disturbed by other programs); every repeat's wall time and load is kept too."""
    from . import _core
    from .experiments.common import _salt
    from .sweep import load_sweep, resolve
    from .sweep import sweep as run_sweep

    say = log or (lambda s: None)
    load_before = os.getloadavg()
    out: dict[str, Any] = {"runs": 0, "jobs": jobs, "cpus": os.cpu_count(), "steps": {}}
    with tempfile.TemporaryDirectory(prefix="mobipath-bench-sweep-") as tmp:
        d = Path(tmp)
        grid = write_grid(d, runs)
        sw = load_sweep(grid)
        resolved = resolve(sw)
        todo = [(r, s) for r in resolved for s in sw.seeds]
        n = out["runs"] = len(todo)

        def step(
            name: str, seconds: float, workers: int, load: float, cpu: Optional[tuple[float, float]] = None
        ) -> None:
            before = out["steps"].get(name)
            tried = (before or {}).get("repeats", []) + [
                {"wall_s": round(seconds, 3), "load_average_1min": round(load, 2)}
            ]
            if before is not None and before["wall_s"] <= seconds:  # an earlier repeat was faster: keep it
                before["repeats"] = tried
                return
            v = out["steps"][name] = {
                "wall_s": round(seconds, 3),
                "runs_per_s": round(n / seconds, 1),
                "workers": workers,
                "load_average_1min": round(load, 2),
                "repeats": tried,
            }
            if cpu is not None:
                v["driver_cpu_ms_per_run"] = round(1000 * cpu[0] / n, 3)
                v["worker_cpu_ms_per_run"] = round(1000 * cpu[1] / n, 3)
                v["cpu_ms_per_run"] = round(1000 * (cpu[0] + cpu[1]) / n, 3)

        def timed(name: str, workers: int, fn: Callable[[], Any]) -> float:
            # CPU time of this process and of its (finished) worker processes: unlike wall time,
            # changed less by other programs' load.
            say(name)
            load = os.getloadavg()[0]
            c0, t0 = _cpu(), time.perf_counter()
            fn()
            wall = time.perf_counter() - t0
            c1 = _cpu()
            step(name.split(" (")[0], wall, workers, load, (c1[0] - c0[0], c1[1] - c0[1]))
            return wall

        def bare(part: int = 0, parts: int = 1) -> None:
            for r, seed in todo[part::parts]:
                _core.run(r.text, r.file, r.base_dir, seed, None)

        def bare_parallel() -> None:
            import multiprocessing

            procs = [multiprocessing.Process(target=bare, args=(i, jobs)) for i in range(jobs)]
            for p in procs:
                p.start()
            for p in procs:
                p.join()

        _salt()  # once per process, whichever step comes first: paid by none
        for i in range(repeat):
            of = f", {i + 1} of {repeat}" if repeat > 1 else ""
            sim = timed(f"simulation ({n} bare simulator calls{of})", 1, bare)
            if jobs > 1:
                timed(f"simulation x{jobs} (the same calls on {jobs} processes at once{of})", jobs, bare_parallel)
        sim = out["steps"]["simulation"]["wall_s"]  # the fastest repeat
        for i in range(repeat):
            timed(
                f"local -j 1 (fresh{f', {i + 1} of {repeat}' if repeat > 1 else ''})",
                1,
                functools.partial(run_sweep, grid, d / f"j1-{i}", jobs=1),
            )
            if i == 0:
                timed("local -j 1, cached (everything read back)", 1, lambda: run_sweep(grid, d / "j1-0", jobs=1))
            timed(
                f"local -j {jobs} (fresh{f', {i + 1} of {repeat}' if repeat > 1 else ''})",
                jobs,
                functools.partial(run_sweep, grid, d / f"jN-{i}", jobs=jobs),
            )
        if ray is not False:
            ray_mod: Any
            try:
                import ray as ray_mod
            except ImportError:
                if ray:
                    raise
                ray_mod = None
                out["ray"] = "not installed (pip install 'mobipath[ray]')"
            if ray_mod is not None:
                import logging

                for w in sorted({1, jobs}):
                    say(f"ray -j {w}: starting a local Ray instance of {w} CPUs")
                    t = time.perf_counter()
                    ray_mod.init(
                        address="local",
                        num_cpus=w,
                        include_dashboard=False,
                        log_to_driver=False,
                        logging_level=logging.ERROR,
                    )
                    out[f"ray_start_s_{w}"] = round(time.perf_counter() - t, 2)
                    try:
                        say(f"ray -j {w} (fresh)")
                        load = os.getloadavg()[0]
                        t = time.perf_counter()
                        run_sweep(grid, d / f"ray{w}", jobs=w, backend="ray")
                        step(f"ray -j {w}", time.perf_counter() - t, w, load)
                    finally:
                        ray_mod.shutdown()
    out["load_average_before"] = [round(x, 2) for x in load_before]
    out["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    s = out["steps"]
    per_sim_ms = 1000 * sim / n
    out["simulation_ms_per_run"] = round(per_sim_ms, 3)
    # Overhead per run: the engine's extra wall time per run; on W workers the wall time is
    # shared by W runs at once, so W x wall is the time spent per run set against the simulation.
    for name, v in s.items():
        if not name.startswith("simulation") and "cached" not in name:
            v["overhead_ms_per_run"] = round(1000 * (v["wall_s"] * v["workers"] - sim) / n, 3)
    sim_cpu = s["simulation"]["cpu_ms_per_run"]
    for name, v in s.items():
        if "cpu_ms_per_run" in v and not name.startswith("simulation") and "cached" not in name:
            v["cpu_overhead_ms_per_run"] = round(v["cpu_ms_per_run"] - sim_cpu, 3)
    s["local -j 1, cached"]["ms_per_run"] = round(1000 * s["local -j 1, cached"]["wall_s"] / n, 3)
    out["speedup_local"] = round(s[f"local -j {jobs}"]["runs_per_s"] / s["local -j 1"]["runs_per_s"], 2)
    if f"simulation x{jobs}" in s:
        out["speedup_ceiling"] = round(s[f"simulation x{jobs}"]["runs_per_s"] / s["simulation"]["runs_per_s"], 2)
    if f"ray -j {jobs}" in s and jobs != 1:
        out["speedup_ray"] = round(s[f"ray -j {jobs}"]["runs_per_s"] / s["ray -j 1"]["runs_per_s"], 2)
    return out


def _cpu() -> tuple[float, float]:
    """CPU seconds (user + system) of this process and of its finished, waited-for children."""
    import resource

    me, kids = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return me.ru_utime + me.ru_stime, kids.ru_utime + kids.ru_stime


COLUMNS = (
    "step",
    "workers",
    "load avg",
    "wall s",
    "runs/s",
    "overhead ms/run",
    "driver CPU ms/run",
    "worker CPU ms/run",
    "CPU ms/run",
    "CPU overhead ms/run",
)


def rows(result: dict[str, Any]) -> list[list[str]]:
    """Table rows (COLUMNS): step, workers, the 1-minute load average at its start, wall s,
    runs/s, overhead ms per run (wall), CPU ms per run of the driver, of the workers and in all,
    and the CPU overhead per run."""

    def ms(x: Optional[float]) -> str:
        return "—" if x is None else f"{x:.2f}"

    out = []
    for name, v in result["steps"].items():
        over = v.get("overhead_ms_per_run")
        out.append(
            [
                name,
                str(v["workers"]),
                f"{v['load_average_1min']:.1f}",
                f"{v['wall_s']:.2f}",
                f"{v['runs_per_s']:.0f}",
                "—"
                if name.startswith("simulation")
                else (f"{v['ms_per_run']:.2f} (read back)" if over is None else f"{over:.2f}"),
                ms(v.get("driver_cpu_ms_per_run")),
                ms(v.get("worker_cpu_ms_per_run")),
                ms(v.get("cpu_ms_per_run")),
                ms(v.get("cpu_overhead_ms_per_run")),
            ]
        )
    return out
