"""`mobipath reproduce`: re-run a paper's experiments and write a report (Markdown and HTML, PNG, CSV)."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Sequence
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
    def __init__(self, progress: Any, task: Any, total: int = 0) -> None:
        self.progress, self.task = progress, task
        self.total, self.completed = total, 0

    def advance(self) -> None:
        self.completed += 1
        self.progress.advance(self.task)


#: The record of what a finished report covers, written with it (and last): a later invocation
#: with another selection into the same directory is refused unless --fresh.
SELECTION_FILE = "selection.json"


def _selection_text(sel: dict[str, Any]) -> str:
    return "; ".join(f"{k} {', '.join(map(str, v)) if isinstance(v, list) else v}" for k, v in sel.items())


def check_selection(out: Path, selection: dict[str, Any], fresh: bool) -> Optional[dict[str, Any]]:
    """Refuses to overwrite a finished report of another selection (an empty or smaller run
    would replace its report and results, and leave its figures beside them): `out` may hold a
    report of this selection (resumed or redone), or none. Returns the finished report's record
    (None when there is none or --fresh)."""
    import json

    path = out / SELECTION_FILE
    if fresh or not path.is_file():
        return None
    try:
        record = json.loads(path.read_text(encoding="utf-8"))
        before = record["selection"]
        if not isinstance(before, dict):
            raise TypeError
    except (OSError, ValueError, KeyError, TypeError):
        raise CommandError(
            f"{path} cannot be read, so what the report in {out} covers is unknown: give another --out, or "
            "--fresh to replace that report (its kept runs are discarded too)"
        ) from None
    if before != selection:
        changed = {k: v for k, v in before.items() if selection.get(k) != v}
        now = {k: selection.get(k) for k in changed}
        raise CommandError(
            f"{out} holds a finished report of another selection ({_selection_text(changed)}; this run: "
            f"{_selection_text(now)}): give another --out, or --fresh to replace that report "
            "(its kept runs are discarded too)"
        )
    return record


class CommandError(Exception):
    """A reproduction that must not start; the message says why and what to do."""


@contextmanager
def staged(out: Path) -> Iterator[Path]:
    """A folder inside `out` that an experiment writes its report into: the kept runs are
    `out/runs` itself (a link), everything else is written here and moved into `out` by
    `commit` once all of it is written. A run that fails half way (a full disk, Ctrl-C) leaves
    the report that was there, never a mix or a lone summary.json."""
    import os
    import shutil
    import tempfile

    out.mkdir(parents=True, exist_ok=True)
    (out / "runs").mkdir(exist_ok=True)
    stage = Path(tempfile.mkdtemp(prefix=".partial-", dir=out))
    os.symlink("../runs", stage / "runs")
    try:
        yield stage
    finally:
        if stage.exists():
            shutil.rmtree(stage, ignore_errors=True)


def commit(stage: Path, out: Path, selection: dict[str, Any], previous: Optional[dict[str, Any]]) -> None:
    """Moves a finished report from `stage` into `out` (renames: they need no space), drops the
    files of the previous report that this one does not have (its figures of other blocks), and
    writes the selection record last."""
    import json
    import os
    import shutil

    names = sorted(p.name for p in stage.iterdir() if p.name != "runs")
    record = json.dumps({"selection": selection, "files": names}, indent=2, sort_keys=True) + "\n"
    (stage / SELECTION_FILE).write_text(record, encoding="utf-8")
    for name in names:
        src, dst = stage / name, out / name
        if src.is_dir():
            shutil.rmtree(dst, ignore_errors=True)
        os.replace(src, dst)
    for name in (previous or {}).get("files", []):
        if isinstance(name, str) and name not in names and "/" not in name and name not in ("runs", SELECTION_FILE):
            target = out / name
            if target.is_dir() and not target.is_symlink():
                shutil.rmtree(target, ignore_errors=True)
            elif target.exists() or target.is_symlink():
                target.unlink()
    os.replace(stage / SELECTION_FILE, out / SELECTION_FILE)


def selected(flag: str, value: Optional[str], known: Sequence[str]) -> Optional[list[str]]:
    """A comma-list flag: None when not given; else its items, which must be known, distinct and
    at least one (`--blocks ,` selects nothing: an error, not a run of nothing)."""
    if value is None:
        return None
    items = [v.strip() for v in value.split(",") if v.strip()]
    if not items:
        raise typer.BadParameter(f"{flag} {value!r} selects nothing; give one or more of {', '.join(known)}")
    bad = [v for v in items if v not in known]
    if bad:
        raise typer.BadParameter(f"{flag}: {', '.join(bad)} unknown (choose from {', '.join(known)})")
    repeated = sorted({v for v in items if items.count(v) > 1})
    if repeated:
        raise typer.BadParameter(f"{flag}: {', '.join(repeated)} given twice")
    return items


def _reproduce(
    run: Callable[[Path, Callable[[str, int], _Bar]], Any],
    out: Path,
    fresh: bool,
    backend: str = "local",
    ray_address: Optional[str] = None,
    selection: Optional[dict[str, Any]] = None,
) -> None:
    """Runs `run(stage, bar)` (an experiment's reproduce, writing its report into `stage`) under a
    progress display, turns its ValueErrors into flag errors and says where the report went. The
    report reaches `out` only when all of it is written (`staged`, `commit`); a finished report
    of another `selection` there is refused unless `fresh` (`check_selection`). The runs execute
    on `backend` (mobipath.executor: local processes or Ray). Ctrl-C stops it at once (exit 130)
    and says how many runs finished (as the bar counts them: each is kept for the next
    invocation)."""
    from .cli import _fail
    from .executor import Backend, BackendError, WorkerDied
    from .experiments.common import RunCache, use_backend

    try:
        Backend(backend, ray_address)
    except BackendError as e:
        raise typer.BadParameter(str(e)) from None
    selection = selection or {}
    try:
        previous = check_selection(out, selection, fresh)
    except CommandError as e:
        raise _fail(str(e)) from None
    if fresh and (out / SELECTION_FILE).is_file():
        import json

        with contextlib.suppress(OSError, ValueError, AttributeError):
            previous = json.loads((out / SELECTION_FILE).read_text(encoding="utf-8"))

    kept = RunCache(out / "runs")
    bars: list[_Bar] = []

    def finished() -> str:
        done, total = sum(b.completed for b in bars), sum(b.total for b in bars)
        return f"{done} of {total} runs finished" if bars else "no run finished"

    with _progress() as (err, make_bar):

        def bar(description: str, total: int) -> _Bar:
            b = make_bar(description, total)
            bars.append(b)
            return b

        if kept.count() and not fresh:
            # The count is of files: results kept by another mobipath build or experiment
            # description are never reused (RunCache's key), so say "up to".
            err.print(
                f"resuming: up to {kept.count()} finished results kept in {escape(str(kept.directory))} are reused "
                "where this build made them (--fresh to discard them)"
            )
        try:
            with use_backend(backend, ray_address), staged(out) as stage:
                summary = run(stage, bar)
                commit(stage, out, selection, previous)
        except BackendError as e:
            raise _fail(str(e)) from None
        except WorkerDied as e:
            raise _fail(
                f"{e}; {finished()} and are kept in {kept.directory}: run the same command again to resume"
            ) from None
        except ValueError as e:
            raise typer.BadParameter(str(e)) from None
        except KeyboardInterrupt:
            raise _fail(
                f"interrupted; {finished()} and are kept in {kept.directory}: run the same command again to resume",
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
        yield err, lambda desc, total: _Bar(prog, prog.add_task(desc, total=total), total)


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
        known_sched = sorted({x for p in profiles for x in exp.PROFILES[p]["schedulers"]})
        sched = selected("--schedulers", schedulers, known_sched)
        var = selected("--variants", variants, [*exp.VARIANTS, *exp.SINGLE_VARIANTS])
        n_seeds = seeds if seeds is not None else (3 if quick else 10)
        n_table = table_runs if table_runs is not None else (10 if quick else 50)
        selection = {
            "profiles": list(profiles),
            "schedulers": sched or "all",
            "variants": var or "all",
            "seeds": n_seeds,
            "table_runs": n_table,
            "quick": quick,
        }
        _reproduce(
            lambda stage, bar: exp.reproduce(
                stage,
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
            selection,
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
            lambda stage, bar: exp.reproduce(
                stage, seeds=n_seeds, parts=parts, jobs=jobs, quick=quick, progress=bar, resume=not fresh
            ),
            out,
            fresh,
            backend,
            ray_address,
            {"scenario": list(parts), "seeds": n_seeds, "quick": quick},
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

        chosen = selected("--blocks", blocks, list(exp.BLOCKS)) or list(exp.BLOCKS)
        n_seeds = seeds if seeds is not None else (2 if quick else 10)
        _reproduce(
            lambda stage, bar: exp.reproduce(
                stage, seeds=n_seeds, blocks=chosen, jobs=jobs, quick=quick, progress=bar, resume=not fresh
            ),
            out,
            fresh,
            backend,
            ray_address,
            {"blocks": chosen, "seeds": n_seeds, "quick": quick},
        )

    _guarded(go)()


app.command("p3")(p3)
app.command("handoff", help="Alias of `p3`.")(p3)


def nr(
    seeds: Optional[int] = typer.Option(
        None, "--seeds", min=1, max=100000, help="Seeds 1..N per cell [default: 10, 2 with --quick]."
    ),
    out_arg: str = typer.Option(
        "reports/nr",
        "--out",
        "-o",
        help="Report directory; finished runs are kept in its runs/ to resume after an interruption.",
    ),
    schedulers: Optional[str] = typer.Option(
        None, "--schedulers", help="Comma list restricting the schedulers: minrtt, ecf, blest, peekaboo [default: all]."
    ),
    jobs: Optional[int] = typer.Option(None, "--jobs", "-j", min=1, help="Worker processes [default: all cores]."),
    quick: bool = typer.Option(
        False, "--quick", help="500 km/h only, minRTT plain and PHA, 10 s runs, 2 seeds (for tests and smoke checks)."
    ),
    fresh: bool = _FRESH,
    backend: str = _BACKEND,
    ray_address: Optional[str] = _RAY_ADDRESS,
) -> None:
    """5G NR handovers on the train: P0's schedulers plain, with PHA and with PHA-D under hard,
    conditional (CHO) and DAPS handovers at 300 and 500 km/h; writes report.md and report.html,
    results.csv and summary.json (the documentation's NR handover page describes the model)."""
    from .cli import _guarded  # late import: cli imports this module

    out = _out(out_arg)

    def go() -> None:
        from .experiments import nr as exp

        sched = selected("--schedulers", schedulers, list(exp.SCHEDULERS))
        n_seeds = seeds if seeds is not None else (2 if quick else 10)
        _reproduce(
            lambda stage, bar: exp.reproduce(
                stage, seeds=n_seeds, schedulers=sched, jobs=jobs, quick=quick, progress=bar, resume=not fresh
            ),
            out,
            fresh,
            backend,
            ray_address,
            {"schedulers": sched or "all", "seeds": n_seeds, "quick": quick},
        )

    _guarded(go)()


app.command("nr")(nr)


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
            lambda stage, bar: exp.reproduce(
                stage, seeds=n_seeds, jobs=jobs, quick=quick, progress=bar, resume=not fresh
            ),
            out,
            fresh,
            backend,
            ray_address,
            {"seeds": n_seeds, "quick": quick},
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
            lambda stage, bar: exp.reproduce(
                stage, seeds=n_seeds, jobs=jobs, quick=quick, progress=bar, resume=not fresh
            ),
            out,
            fresh,
            backend,
            ray_address,
            {"seeds": n_seeds, "quick": quick},
        )

    _guarded(go)()


app.command("p4")(p4)
app.command("tdlte", help="Alias of `p4`.")(p4)
