"""`mobipath reproduce`: re-run a paper's experiments and write a report (Markdown and HTML, PNG, CSV)."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Optional

import typer
from rich.markup import escape

# rich_markup_mode=None: help texts are plain text ("[default: ...]" must print as written), as in cli.py.
app = typer.Typer(
    help="Reproduce a paper's experiments and write a report.", no_args_is_help=True, rich_markup_mode=None
)


class _Bar:
    def __init__(self, progress: Any, task: Any) -> None:
        self.progress, self.task = progress, task

    def advance(self) -> None:
        self.progress.advance(self.task)


def _reproduce(
    run: Callable[[Callable[[str, int], _Bar]], Any],
    out: Path,
    fresh: bool,
    backend: str = "local",
    ray_address: Optional[str] = None,
) -> None:
    """Runs `run(bar)` (an experiment's reproduce) under a progress display, turns its
    ValueErrors into flag errors and says where the report went. The runs execute on `backend`
    (mobipath.executor: local processes or Ray). Ctrl-C stops it at once (exit 130) and says how
    many finished runs are kept for the next invocation."""
    from .cli import _fail
    from .executor import Backend, BackendError, WorkerDied
    from .experiments.common import RunCache, use_backend

    try:
        Backend(backend, ray_address)
    except BackendError as e:
        raise typer.BadParameter(str(e)) from None

    kept = RunCache(out / "runs")
    with _progress() as (err, bar):
        if kept.count() and not fresh:
            # The count is of files: results kept by another mobipath build or experiment
            # description are never reused (RunCache's key), so say "up to".
            err.print(
                f"resuming: up to {kept.count()} finished results kept in {escape(str(kept.directory))} are reused "
                "where this build made them (--fresh to discard them)"
            )
        try:
            with use_backend(backend, ray_address):
                summary = run(bar)
        except BackendError as e:
            raise _fail(str(e)) from None
        except WorkerDied as e:
            raise _fail(
                f"{e}; {kept.count()} finished results are kept in {kept.directory}: run the same command "
                "again to resume"
            ) from None
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
        except KeyboardInterrupt:
            n = kept.count()
            raise _fail(
                f"interrupted; {n} finished results are kept in {kept.directory}: run the same command again to resume",
                130,
            ) from None
    prov = summary["provenance"]
    reused = f" ({prov['reused_runs']} reused)" if prov.get("reused_runs") else ""
    report = escape(str(out / "report.md"))
    err.print(
        f"{prov['runs']} runs{reused} in {prov['wall_time_s']:.1f} s; report written to {report} (and report.html)"
    )


def _out(value: str) -> Path:
    from .cli import out_dir_option

    out = out_dir_option(value, "--out")
    assert out is not None
    return out


_FRESH = typer.Option(
    False,
    "--fresh",
    help="Discard the finished runs kept in OUT/runs by an earlier (interrupted) invocation and run everything again.",
)
_BACKEND = typer.Option(
    "local", "--backend", help="local (worker processes here) or ray (a Ray cluster; pip install 'mobipath[ray]')."
)
_RAY_ADDRESS = typer.Option(
    None,
    "--ray-address",
    help="With --backend ray: the cluster (e.g. ray://head:10001 or auto) [default: start a local Ray].",
)


@contextmanager
def _progress() -> Iterator[tuple[Any, Callable[[str, int], _Bar]]]:
    """A rich progress display on stderr; yields (console, bar) where `bar(description, total)`
    adds a bar with an `advance()` method."""
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
        TimeRemainingColumn,
    )

    err = Console(stderr=True)
    with Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TimeElapsedColumn(),
        TimeRemainingColumn(),
        console=err,
        transient=False,
    ) as prog:
        yield err, lambda desc, total: _Bar(prog, prog.add_task(desc, total=total))


def p0(
    seeds: Optional[int] = typer.Option(
        None,
        "--seeds",
        min=1,
        max=100000,
        help="Evaluation seeds 1..N per scheduler and variant [default: 10, 3 with --quick].",
    ),
    table_runs: Optional[int] = typer.Option(
        None,
        "--table-runs",
        min=1,
        max=100000,
        help="Preliminary runs the handover table is learned from [default: 50, 10 with --quick].",
    ),
    out_arg: str = typer.Option(
        "reports/p0",
        "--out",
        "-o",
        help="Report directory; finished runs are kept in its runs/ to resume after an interruption.",
    ),
    profile: str = typer.Option(
        "all",
        "--profile",
        help="paper (minRTT/ECF/BLEST/Peekaboo, LIA, Linux's behaviour), ns3 (the same setup with ns-3's handover "
        "signalling and TCP window rules), modern (linux-default, CUBIC, 6 MiB), a comma list of these, both "
        "(paper,modern) or all.",
    ),
    schedulers: Optional[str] = typer.Option(
        None, "--schedulers", help="Comma list restricting the schedulers, e.g. minrtt,ecf."
    ),
    variants: Optional[str] = typer.Option(
        None,
        "--variants",
        help="Comma list restricting the variants: plain, pha, pha-d-paper, pha-d-queue-aware, pha-d-resend, oracle, "
        "blocking, tcp-A, tcp-B (single TCP) [default: all].",
    ),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes [default: all cores]."),
    quick: bool = typer.Option(False, "--quick", help="20 s runs and fewer seeds (for tests and smoke checks)."),
    fresh: bool = _FRESH,
    backend: str = _BACKEND,
    ray_address: Optional[str] = _RAY_ADDRESS,
) -> None:
    """P0 (high-speed train, PHA): learn the handover table, run every scheduler plain and with PHA
    over the seeds in parallel, and write report.md and report.html, figures, results.csv and
    summary.json."""
    from .cli import _guarded  # late import: cli imports this module

    out = _out(out_arg)

    def go() -> None:
        from .experiments import p0 as exp

        profiles = exp.PROFILE_SETS.get(profile) or tuple(p.strip() for p in profile.split(",") if p.strip())
        bad = [p for p in profiles if p not in exp.PROFILES]
        if not profiles or bad or len(set(profiles)) != len(profiles):
            raise typer.BadParameter(
                f"--profile must be one or a comma list of {', '.join(exp.PROFILES)} without repeats, "
                f"or {' / '.join(exp.PROFILE_SETS)} (got {profile!r})"
            )
        sched = [s.strip() for s in schedulers.split(",") if s.strip()] if schedulers else None
        var = [v.strip() for v in variants.split(",") if v.strip()] if variants else None
        n_seeds = seeds if seeds is not None else (3 if quick else 10)
        n_table = table_runs if table_runs is not None else (10 if quick else 50)
        _reproduce(
            lambda bar: exp.reproduce(
                out,
                seeds=n_seeds,
                table_runs=n_table,
                profiles=profiles,
                schedulers=sched,
                variants=var,
                jobs=jobs,
                quick=quick,
                progress=bar,
                resume=not fresh,
            ),
            out,
            fresh,
            backend,
            ray_address,
        )

    _guarded(go)()


app.command("p0")(p0)
app.command("hst", help="Alias of `p0`.")(p0)


def p1(
    seeds: Optional[int] = typer.Option(
        None, "--seeds", min=1, max=100000, help="Seeds 1..N per point [default: 10, 2 with --quick]."
    ),
    out_arg: str = typer.Option(
        "reports/p1",
        "--out",
        "-o",
        help="Report directory; finished runs are kept in its runs/ to resume after an interruption.",
    ),
    scenario: str = typer.Option(
        "both", "--scenario", help="s1 (path-2 rate swept: Figs. 8, 9), s2 (path-2 delay swept: Figs. 10, 11) or both."
    ),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes [default: all cores]."),
    quick: bool = typer.Option(
        False, "--quick", help="Fewer sweep points, shorter runs and 2 seeds (for tests and smoke checks)."
    ),
    fresh: bool = _FRESH,
    backend: str = _BACKEND,
    ray_address: Optional[str] = _RAY_ADDRESS,
) -> None:
    """P1 (heterogeneous paths): delay-predictive vs minRTT/round robin/TCP over path-2 rates, and
    receiver-based recovery over path-2 delays; writes report.md and report.html, figures,
    results.csv and summary.json."""
    from .cli import _guarded  # late import: cli imports this module

    out = _out(out_arg)

    def go() -> None:
        from .experiments import p1 as exp

        if scenario not in ("s1", "s2", "both"):
            raise typer.BadParameter(f"--scenario must be s1, s2 or both (got {scenario!r})")
        parts = ("s1", "s2") if scenario == "both" else (scenario,)
        n_seeds = seeds if seeds is not None else (2 if quick else 10)
        _reproduce(
            lambda bar: exp.reproduce(
                out, seeds=n_seeds, parts=parts, jobs=jobs, quick=quick, progress=bar, resume=not fresh
            ),
            out,
            fresh,
            backend,
            ray_address,
        )

    _guarded(go)()


app.command("p1")(p1)
app.command("heterogeneous", help="Alias of `p1`.")(p1)


def p3(
    seeds: Optional[int] = typer.Option(
        None,
        "--seeds",
        min=1,
        max=100000,
        help="Seeds 1..N per point of the random-handoff sweeps and the train [default: 10, 2 with --quick].",
    ),
    out_arg: str = typer.Option(
        "reports/p3",
        "--out",
        "-o",
        help="Report directory; finished runs are kept in its runs/ to resume after an interruption.",
    ),
    blocks: Optional[str] = typer.Option(
        None,
        "--blocks",
        help="Comma list of blocks: paper, det-duration, duration, rate, rtt, loss, train [default: all].",
    ),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes [default: all cores]."),
    quick: bool = typer.Option(
        False, "--quick", help="Fewer sweep points, 30 s sweep runs and 2 seeds (for tests and smoke checks)."
    ),
    fresh: bool = _FRESH,
    backend: str = _BACKEND,
    ray_address: Optional[str] = _RAY_ADDRESS,
) -> None:
    """P3 (Explicit Handoff Notification): Tahoe vs EHN on P3's handoff pattern (Figs. 2, 3 and the
    throughput table), every handoff scheme over swept handoff durations, rates, RTTs and losses, and
    on the P0 train; writes report.md and report.html, figures, results.csv and summary.json."""
    from .cli import _guarded  # late import: cli imports this module

    out = _out(out_arg)

    def go() -> None:
        from .experiments import p3 as exp

        chosen = [b.strip() for b in blocks.split(",") if b.strip()] if blocks else list(exp.BLOCKS)
        n_seeds = seeds if seeds is not None else (2 if quick else 10)
        _reproduce(
            lambda bar: exp.reproduce(
                out, seeds=n_seeds, blocks=chosen, jobs=jobs, quick=quick, progress=bar, resume=not fresh
            ),
            out,
            fresh,
            backend,
            ray_address,
        )

    _guarded(go)()


app.command("p3")(p3)
app.command("handoff", help="Alias of `p3`.")(p3)


def p2(
    seeds: Optional[int] = typer.Option(
        None, "--seeds", min=1, max=100000, help="Repetitions (seeds 1..N) per pair [default: 10, 2 with --quick]."
    ),
    out_arg: str = typer.Option(
        "reports/p2",
        "--out",
        "-o",
        help="Report directory; finished runs are kept in its runs/ to resume after an interruption.",
    ),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes [default: all cores]."),
    quick: bool = typer.Option(
        False,
        "--quick",
        help="Two schedulers x three controllers, 15 s runs and 2 repetitions (for tests and smoke checks).",
    ),
    fresh: bool = _FRESH,
    backend: str = _BACKEND,
    ray_address: Optional[str] = _RAY_ADDRESS,
) -> None:
    """P2 (two operators through an MPTCP router and proxy): every scheduler x congestion control
    on P2's upload, plus single-operator runs; writes report.md and report.html, heatmap.png,
    results.csv and summary.json."""
    from .cli import _guarded  # late import: cli imports this module

    out = _out(out_arg)

    def go() -> None:
        from .experiments import p2 as exp

        n_seeds = seeds if seeds is not None else (2 if quick else 10)
        _reproduce(
            lambda bar: exp.reproduce(out, seeds=n_seeds, jobs=jobs, quick=quick, progress=bar, resume=not fresh),
            out,
            fresh,
            backend,
            ray_address,
        )

    _guarded(go)()


app.command("p2")(p2)
app.command("aggregation", help="Alias of `p2`.")(p2)


def p4(
    seeds: Optional[int] = typer.Option(
        None, "--seeds", min=1, max=100000, help="Seeds 1..N per configuration [default: 10, 2 with --quick]."
    ),
    out_arg: str = typer.Option(
        "reports/p4",
        "--out",
        "-o",
        help="Report directory; finished runs are kept in its runs/ to resume after an interruption.",
    ),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes [default: all cores]."),
    quick: bool = typer.Option(
        False, "--quick", help="10 s runs, fewer sweep points and 2 seeds (for tests and smoke checks)."
    ),
    fresh: bool = _FRESH,
    backend: str = _BACKEND,
    ray_address: Optional[str] = _RAY_ADDRESS,
) -> None:
    """P4 (TD-LTE uplink congestion, bsr-drop at the eNB): Fig. 2 analogue with and without the scheme,
    every baseline, the uplink schedulers, and sweeps of p, CW_target, UEs, TDD configuration/FDD and
    GBR load; writes report.md and report.html, figures, results.csv, series.csv and summary.json."""
    from .cli import _guarded  # late import: cli imports this module

    out = _out(out_arg)

    def go() -> None:
        from .experiments import p4 as exp

        n_seeds = seeds if seeds is not None else (2 if quick else 10)
        _reproduce(
            lambda bar: exp.reproduce(out, seeds=n_seeds, jobs=jobs, quick=quick, progress=bar, resume=not fresh),
            out,
            fresh,
            backend,
            ray_address,
        )

    _guarded(go)()


app.command("p4")(p4)
app.command("tdlte", help="Alias of `p4`.")(p4)
