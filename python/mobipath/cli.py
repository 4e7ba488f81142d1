"""The `mobipath` command line (typer + rich). Thin: the work is done in the library modules.

Exit codes: 0 success; 1 an invalid scenario, an unreadable file or a failed run; 2 a bad
command-line flag (reported by typer); 130 interrupted. Errors are one clear line per problem,
never a traceback (set ``MOBIPATH_DEBUG=1`` to see one).
"""

from __future__ import annotations

import functools
import json
import os
import sys
from pathlib import Path
from typing import Any, Callable, Optional, TypeVar

import typer
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from . import api, jsonfmt, provenance, runcmd, shipped
from . import bench as bench_mod
from .display import fmt_value, print_summary

# Help texts are plain text, not rich markup: "[hst]" and "[default: ...]" must print as written.
# Every sub-command group (hotable, reproduce, router) sets the same.
RICH_MARKUP_MODE = None

app = typer.Typer(
    name="mobipath",
    help="Simulate multipath/mobile TCP scenarios and report their metrics.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
    rich_markup_mode=RICH_MARKUP_MODE,
)

F = TypeVar("F", bound=Callable[..., Any])


def _stdout() -> Console:
    return Console(highlight=False)


def _stderr() -> Console:
    return Console(stderr=True, highlight=False)


def _fail(message: str, code: int = 1) -> typer.Exit:
    typer.echo(f"error: {message}", err=True)
    return typer.Exit(code)


def input_file(path: Path, quiet: bool = False) -> Path:
    """`path`, or the file shipped with mobipath that it names when it does not exist here
    (``scenarios/examples/...``, ``data/...``): the documented commands then work from any
    directory. Says so on stderr unless `quiet`."""
    return Path(runcmd.resolve_input(path, quiet))


def out_dir_option(value: Optional[str], flag: str = "--out") -> Optional[Path]:
    """An output directory flag: None stays None (the default applies), an empty string is refused
    (it would silently mean the current directory)."""
    if value is None:
        return None
    if not value.strip():
        raise typer.BadParameter("must name a directory (got an empty string)", param_hint=f"'{flag}'")
    return Path(value)


def _guarded(fn: F) -> F:
    """Turns every error of a command into a clear message and an exit code, never a traceback."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except (typer.Exit, typer.BadParameter):
            raise  # exit codes, and bad flags reported as usage errors (code 2)
        except BaseException as e:  # noqa: B902 - the same messages as the fast `run` path
            failure = runcmd.describe_failure(e)
            if failure is None:
                raise
            lines, code = failure
            for line in lines:
                typer.echo(line, err=True)
            raise typer.Exit(code) from None

    return wrapper  # type: ignore[return-value]


@app.command()
@_guarded
def run(
    scenario: Path = typer.Argument(
        ...,
        help="Scenario file (TOML); a shipped one also by its name, e.g. examples/single-cubic.toml.",
        show_default=False,
    ),
    seed: Optional[int] = typer.Option(None, "--seed", min=0, max=api.MAX_SEED, help="Override the scenario's seed."),
    out_arg: Optional[str] = typer.Option(
        None, "--out", help="Result directory [default: results/<scenario>-seed<N>].", show_default=False
    ),
    as_json: bool = typer.Option(False, "--json", help="Print only the summary as JSON on stdout."),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="No progress bar or messages on stderr."),
    pcap: bool = typer.Option(
        False,
        "--pcap",
        help="Write packet captures (pcapng, Wireshark) of every link direction to OUT/pcap/ "
        "(only the links [output] pcap lists, if it lists some); the documentation's Packet captures "
        "page explains them.",
    ),
    pcap_max_mb: Optional[float] = typer.Option(
        None,
        "--pcap-max-mb",
        help="Limit on all capture files together, MB; capture stops there with a warning "
        "[default: [output] pcap_max_mb, 100].",
        show_default=False,
    ),
) -> None:
    """Run a scenario, write its results and print a summary (plot them with `mobipath plot DIR`)."""
    # The same body as the console script's fast path (mobipath.runcmd), which handles the
    # well-formed command lines without importing typer.
    runcmd.execute(
        runcmd.RunOptions(scenario, seed, out_dir_option(out_arg), as_json, quiet, pcap=pcap, pcap_max_mb=pcap_max_mb)
    )


@app.command()
@_guarded
def validate(files: list[Path] = typer.Argument(..., help="Scenario files to check.", show_default=False)) -> None:
    """Check scenario files and report every error ("file: field = value: message")."""
    bad = 0
    for f in files:
        try:
            errors = api.validate(input_file(f))
        except OSError as e:
            typer.echo(f"{f}: cannot read: {e.strerror or e}")
            bad += 1
            continue
        if errors:
            bad += 1
            for err in errors:
                typer.echo(err.with_file())
        else:
            typer.echo(f"{f}: ok")
    if bad:
        raise typer.Exit(1)


@app.command()
@_guarded
def schema() -> None:
    """Print the JSON Schema of the scenario format."""
    sys.stdout.write(json.dumps(api.schema(), indent=2, ensure_ascii=False) + "\n")


@app.command()
@_guarded
def bench(
    files: Optional[list[Path]] = typer.Argument(
        None, help="Benchmark scenarios [default: scenarios/bench/*.toml].", show_default=False
    ),
    long: bool = typer.Option(
        False,
        "--long",
        help="Add the long runs of scenarios/bench/long/ (a 1-hour train ride, a 100-UE cell; about half a minute).",
    ),
    quick: bool = typer.Option(
        False,
        "--quick",
        help=f"Cap each scenario at {bench_mod.QUICK_DURATION_S:g} simulated seconds past its warm-up.",
    ),
    repeat: int = typer.Option(
        1,
        "--repeat",
        min=1,
        max=100,
        help="Runs per scenario; the fastest is reported. With --sweep: times the fresh local steps (alternately), the "
        "fastest of each reported.",
    ),
    as_json: bool = typer.Option(False, "--json", help="Print the measurements as JSON."),
    emulator: bool = typer.Option(
        False,
        "--emulator",
        help="Benchmark the link emulator instead: two paths, 200 Mbit/s offered (machinery; and through real TUN "
        "devices when root).",
    ),
    ceiling: bool = typer.Option(
        False,
        "--ceiling",
        help="With --emulator: step the offered load up (200 to 2000 Mbit/s) until delivery falls below 99 % or the "
        "p99 release error exceeds 200 µs, and report the highest load sustained (machinery; TUN when root).",
    ),
    process: bool = typer.Option(
        False,
        "--process",
        help="Time the whole `mobipath run` command as users run it (start-up and writing results included; a 10 ms "
        "scenario first), --repeat times each [default 10]; median and min wall, peak RSS.",
    ),
    sweep: bool = typer.Option(
        False,
        "--sweep",
        help="Benchmark the sweep engine instead: its overhead per run beyond the simulation and its throughput on -j "
        "cores vs one (local, and Ray when installed).",
    ),
    sweep_runs: int = typer.Option(
        1000, "--runs", min=20, max=100000, help="With --sweep: one-second runs in the grid."
    ),
    jobs: int = typer.Option(2, "--jobs", "-j", min=1, help="With --sweep: workers of the parallel steps."),
    flows: Optional[str] = typer.Option(
        None,
        "--flows",
        metavar="N,N,...",
        help="Instead of the scenario files: N NewReno bulk flows sharing a 1000 Mbit/s, 20 ms, 4000-packet "
        "bottleneck for 20 s, for each N given (e.g. 1,100,1000,10000; 10,000 flows take a minute and more). "
        "With --process: the whole command.",
    ),
) -> None:
    """Run the benchmark scenarios, each in a fresh process; report speed and peak memory."""
    if ceiling and not emulator:
        raise _fail("--ceiling goes with --emulator")
    if emulator:
        (_bench_emulator_ceiling if ceiling else _bench_emulator)(as_json)
        return
    counts: Optional[list[int]] = None
    if flows is not None:
        if files:
            raise _fail("--flows makes its own scenarios: give either scenario files or --flows")
        try:
            counts = bench_mod.parse_flow_counts(flows)
        except ValueError as e:
            raise _fail(str(e)) from None
    if process:
        _bench_process(files, repeat if repeat > 1 else 10, as_json, counts)
        return
    if counts is not None:
        import tempfile

        with tempfile.TemporaryDirectory(prefix="mobipath-bench-") as scratch:
            _bench_sim(bench_mod.flow_scenarios(counts, Path(scratch)), quick, repeat, as_json)
        return
    if sweep:
        _bench_sweep(sweep_runs, jobs, as_json, repeat)
        return
    try:
        paths = bench_mod.find_scenarios([input_file(f) for f in files] if files else None, long=long)
    except bench_mod.BenchError as e:
        raise _fail(str(e)) from None
    _bench_sim(paths, quick, repeat, as_json)


def _bench_sim(paths: list[Path], quick: bool, repeat: int, as_json: bool) -> None:
    """`mobipath bench`: the simulator call of each scenario in a fresh process."""
    err = _stderr()
    from . import _core

    if getattr(_core, "BUILD_PROFILE", "release") != "release":
        err.print(f"warning: the simulator is a {_core.BUILD_PROFILE} build; numbers are not representative")
    # Profile-guided wheels run the core ~1.2x faster than an editable build: say which this is.
    err.print(
        "core: "
        + (
            f"profile-guided release build ({_core.BUILD_PGO})"
            if getattr(_core, "BUILD_PGO", "")
            else "release build without profile-guided optimisation (an editable install, MOBIPATH_PGO=off, "
            "or no llvm-tools when it was built)"
        )
    )
    show = not as_json and sys.stderr.isatty()
    results = bench_mod.run_all(
        paths,
        quick=quick,
        repeat=repeat,
        on_start=(lambda p: err.print(f"running {escape(str(p))} …")) if show else None,
    )
    failed = [r for r in results if r.error is not None]
    if as_json:
        rows = [r.measurements if r.error is None else {"scenario": r.scenario, "error": r.error} for r in results]
        sys.stdout.write(
            jsonfmt.dumps(
                {
                    "quick": quick,
                    "repeat": repeat,
                    "version": provenance.version(),
                    "git_revision": provenance.git_revision(),
                    "results": rows,
                }
            )
        )
    else:
        table = Table(title="mobipath bench" + (" (quick)" if quick else ""), title_justify="left", show_edge=False)
        # "sim/wall": simulated seconds per wall-clock second.
        # "ns/pkt": wall time per packet a link delivered; "heap MiB": the simulator's peak heap;
        # "RSS MiB": the benchmark process's peak RSS (interpreter and module code included).
        for col in ("scenario", "sim s", "wall s", "events", "Mevents/s", "ns/pkt", "sim/wall", "heap MiB", "RSS MiB"):
            if col == "scenario":
                table.add_column(col, overflow="fold", min_width=22)
            else:
                table.add_column(col, justify="right", no_wrap=True)
        for r in results:
            if r.error is not None or r.measurements is None:
                table.add_row(escape(Path(r.scenario).stem), "[red]failed[/red]", "", "", "", "", "", "", "")
                continue
            m = r.measurements
            table.add_row(
                escape(Path(r.scenario).stem),
                fmt_value(m["sim_seconds"]),
                f"{m['wall_seconds']:.3f}",
                str(m["events"]),
                f"{m['events_per_second'] / 1e6:.2f}" if m.get("events_per_second") else "—",
                f"{m['ns_per_packet']:.0f}" if m.get("ns_per_packet") else "—",
                f"{m['sim_seconds_per_wall_second']:.1f}" if m.get("sim_seconds_per_wall_second") else "—",
                f"{m['sim_peak_heap_mib']:.2f}" if m.get("sim_peak_heap_mib") is not None else "—",
                f"{m['peak_rss_mib']:.1f}",
            )
        # Nine columns: a pipe or file gets the whole table instead of rich's 80 columns.
        Console(highlight=False, width=None if sys.stdout.isatty() else 160).print(table)
    for r in failed:
        typer.echo(f"{r.scenario}: {r.error}", err=True)
    if failed:
        raise typer.Exit(1)


def _bench_process(files: Optional[list[Path]], repeat: int, as_json: bool, counts: Optional[list[int]] = None) -> None:
    """`mobipath bench --process`: the whole command, as users and sweeps run it."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="mobipath-bench-") as scratch:
        try:
            if counts is not None:
                paths = bench_mod.flow_scenarios(counts, Path(scratch))
            else:
                paths = bench_mod.process_scenarios([input_file(f) for f in files] if files else None, Path(scratch))
        except bench_mod.BenchError as e:
            raise _fail(str(e)) from None
        rows = [bench_mod.run_process(p, repeat) for p in paths]
    failed = [r for r in rows if "error" in r]
    if as_json:
        sys.stdout.write(
            jsonfmt.dumps({"process": True, "repeat": repeat, "version": provenance.version(), "results": rows})
        )
    else:
        table = Table(title=f"mobipath run, whole process ({repeat} runs each)", title_justify="left", show_edge=False)
        for col in ("scenario", "median wall s", "min wall s", "peak RSS MiB"):
            table.add_column(col, justify="left" if col == "scenario" else "right")
        for r in rows:
            name = escape(Path(r["scenario"]).stem)
            if "error" in r:
                table.add_row(name, "[red]failed[/red]", "", "")
            else:
                table.add_row(
                    name,
                    f"{r['wall_median_s']:.3f}",
                    f"{r['wall_min_s']:.3f}",
                    "—" if r["peak_rss_mib"] is None else f"{r['peak_rss_mib']:.1f}",
                )
        Console(highlight=False, width=None if sys.stdout.isatty() else 160).print(table)
    for r in failed:
        typer.echo(f"{r['scenario']}: {r['error']}", err=True)
    if failed:
        raise typer.Exit(1)


def _bench_sweep(runs: int, jobs: int, as_json: bool, repeat: int = 1) -> None:
    """The sweep engine's cost beyond the simulations (targets: < 20 ms per run on the
    local backend, >= 1.8x throughput on 2 cores vs 1); see mobipath/sweepbench.py."""
    from . import sweepbench

    err = _stderr()
    result = sweepbench.run(
        runs, jobs, log=None if as_json else (lambda s: err.print(f"timing {escape(s)} …")), repeat=repeat
    )
    if as_json:
        sys.stdout.write(
            jsonfmt.dumps({**result, "version": provenance.version(), "git_revision": provenance.git_revision()})
        )
        return
    table = Table(
        title=f"mobipath bench --sweep ({result['runs']} one-second runs; simulation "
        f"{result['simulation_ms_per_run']:.2f} ms per run)",
        title_justify="left",
        show_edge=False,
    )
    for col in sweepbench.COLUMNS:
        table.add_column(col, justify="left" if col == "step" else "right")
    for row in sweepbench.rows(result):
        table.add_row(*row)
    Console(highlight=False, width=None if sys.stdout.isatty() else 160).print(table)
    line = f"throughput -j {jobs} vs -j 1: {result['speedup_local']:.2f}x (local)"
    if "speedup_ceiling" in result:
        line += f" against {result['speedup_ceiling']:.2f}x of the bare simulator calls on {jobs} processes"
    if "speedup_ray" in result:
        line += f", {result['speedup_ray']:.2f}x (ray)"
    if "ray" in result:
        line += f"; ray: {result['ray']}"
    ray_start = ", ".join(
        f"{k.rsplit('_', 1)[1]} CPU(s) {v:.1f} s" for k, v in result.items() if k.startswith("ray_start_s_")
    )
    _stdout().print(line + (f"; Ray start-up (not in the steps): {ray_start}" if ray_start else ""))
    _stdout().print(
        f"load average before {result['load_average_before']}, after {result['load_average_after']} "
        f"on {result['cpus']} CPUs"
    )


def _bench_emulator(as_json: bool) -> None:
    """Emulator throughput and release-time accuracy over two paths (target: ≥ 200
    Mbit/s in total with p99 timing error ≤ 0.5 ms)."""
    import subprocess

    from . import emulate as emu

    rows = []
    try:
        command = emu.emulator_command()
    except emu.EmulateError as e:
        raise _fail(str(e)) from None
    r = subprocess.run(
        [*command, "--bench", "--paths", "2", "--offered-mbps", "200", "--rate-mbps", "150", "--seconds", "3"],
        capture_output=True,
        text=True,
        timeout=60,
    )
    if r.returncode != 0:
        raise _fail(f"mobipath-emu --bench failed: {r.stderr.strip()}")
    m = json.loads(r.stdout)
    t = m["emulator"]["timing"]
    rows.append(
        {
            "what": "machinery (socketpairs)",
            "paths": 2,
            "offered_mbps": 200.0,
            "received_mbps": m["received_mbps"],
            "received_pps": m["received_pps"],
            "p50_us": t["p50_us"],
            "p99_us": t["p99_us"],
            "max_us": t["max_us"],
            "realtime": m["emulator"]["realtime"],
        }
    )
    if os.geteuid() == 0:
        b = emu.bench(offered_mbps=200.0, rate_mbps=150.0, delay_ms=10.0, seconds=3.0, paths=2)
        t = b["timing_us"] or {}
        rows.append(
            {
                "what": "real TUN devices, UDP",
                "paths": 2,
                "offered_mbps": 200.0,
                "received_mbps": b["received_mbps"],
                "received_pps": b["received_pps"],
                "p50_us": t.get("p50_us"),
                "p99_us": t.get("p99_us"),
                "max_us": t.get("max_us"),
                "realtime": b["realtime"],
            }
        )
    else:
        _stderr().print("not root: the end-to-end TUN benchmark is skipped")
    if as_json:
        sys.stdout.write(jsonfmt.dumps({"emulator": rows}))
        return
    table = Table(
        title="mobipath bench --emulator (2 paths × 150 Mbit/s, 10 ms)", title_justify="left", show_edge=False
    )
    for col in ("what", "offered Mbit/s", "delivered Mbit/s", "packets/s", "p50 µs", "p99 µs", "max µs", "SCHED_FIFO"):
        table.add_column(col, justify="left" if col == "what" else "right")
    f = lambda v, d=1: "—" if v is None else f"{v:.{d}f}"  # noqa: E731
    for x in rows:
        table.add_row(
            x["what"],
            f(x["offered_mbps"], 0),
            f(x["received_mbps"]),
            f(x["received_pps"], 0),
            f(x["p50_us"]),
            f(x["p99_us"]),
            f(x["max_us"]),
            "yes" if x["realtime"] else "no",
        )
    _stdout().print(table)


def _bench_emulator_ceiling(as_json: bool) -> None:
    """The emulator's ceiling: the highest offered load over two paths that it
    delivers (≥ 99 %) with a p99 release error ≤ 200 µs; for the machinery (socketpairs, native
    generator) and, as root, through real TUN devices (Python generator: it may limit first)."""
    import subprocess

    from . import bench as bench_mod
    from . import emulate as emu

    try:
        command = emu.emulator_command()
    except emu.EmulateError as e:
        raise _fail(str(e)) from None

    def machinery(offered: float) -> dict[str, Any]:
        rate = offered / 2 * 1.1  # each path 10 % above its share: the links never queue for long
        r = subprocess.run(
            [
                *command,
                "--bench",
                "--paths",
                "2",
                "--offered-mbps",
                f"{offered:g}",
                "--rate-mbps",
                f"{rate:g}",
                "--seconds",
                "3",
            ],
            capture_output=True,
            text=True,
            timeout=120,
        )
        if r.returncode != 0:
            raise _fail(f"mobipath-emu --bench failed: {r.stderr.strip()}")
        m = json.loads(r.stdout)
        t = m["emulator"]["timing"]
        return {
            "sent_packets": m["sent_packets"],
            "offered_packets": round(offered * 1e6 / 8 / m["frame_bytes"] * m["seconds"]),
            "received_packets": m["received_packets"],
            "received_mbps": m["received_mbps"],
            "p50_us": t.get("p50_us"),
            "p99_us": t.get("p99_us"),
            "max_us": t.get("max_us"),
            "realtime": m["emulator"]["realtime"],
        }

    def tun(offered: float) -> dict[str, Any]:
        b = emu.bench(offered_mbps=offered, rate_mbps=offered / 2 * 1.1, delay_ms=10.0, seconds=3.0, paths=2)
        t = b["timing_us"] or {}
        return {
            "sent_packets": b["sent_packets"],
            "offered_packets": round(offered * 1e6 / 8 / 1500 * 3.0),
            "received_packets": b["received_packets"],
            "received_mbps": b["received_mbps"],
            "p50_us": t.get("p50_us"),
            "p99_us": t.get("p99_us"),
            "max_us": t.get("max_us"),
            "realtime": b["realtime"],
        }

    results = {"machinery (socketpairs)": bench_mod.emulator_ceiling(machinery)}
    if os.geteuid() == 0:
        results["real TUN devices, UDP"] = bench_mod.emulator_ceiling(tun)
    else:
        _stderr().print("not root: the TUN ceiling is skipped")
    load = os.getloadavg()[0]
    if as_json:
        sys.stdout.write(jsonfmt.dumps({"emulator_ceiling": results, "load_average": load}))
        return
    for what, res in results.items():
        c = res["ceiling_mbps"]
        ceiling_text = "none" if c is None else f"{c:g} Mbit/s"
        table = Table(
            title=f"{what}: ceiling {ceiling_text} (stopped: {res['stopped']})", title_justify="left", show_edge=False
        )
        for col in ("offered Mbit/s", "sent", "delivered", "p50 µs", "p99 µs", "max µs", "sustained"):
            table.add_column(col, justify="right")
        f = lambda v, d=1: "—" if v is None else f"{v:.{d}f}"  # noqa: E731
        for x in res["rows"]:
            table.add_row(
                f(x["offered_mbps"], 0),
                f"{100 * x['generator_share']:.1f} %",
                f"{100 * x['delivered_share']:.1f} %",
                f(x["p50_us"]),
                f(x["p99_us"]),
                f(x["max_us"]),
                "yes" if x["sustained"] else "no",
            )
        _stdout().print(table)
    _stdout().print(f"load average {load:.2f}; criteria: delivered ≥ 99 %, p99 release error ≤ 200 µs")


# Options shared by `emulate` and `compare` (typer allows one OptionInfo as several defaults).
_SCENARIO_EMU = typer.Argument(..., help="Scenario file (TOML): one TCP or MPTCP bulk flow.", show_default=False)
_SUBSTITUTE = typer.Option(
    False,
    "--substitute",
    help="Replace what the kernel lacks by its nearest equivalent (recorded; compare simulates the same).",
)
_MAX_DURATION = typer.Option(
    300.0, "--max-duration", min=1.0, max=86400.0, help="Refuse scenarios longer than this (s)."
)
_ROUTER = typer.Option(
    False, "--router", help="Put the receiver behind a forwarding router namespace (one uplink per path)."
)


@app.command()
@_guarded
def emulate(
    scenario: Path = _SCENARIO_EMU,
    out_arg: Optional[str] = typer.Option(
        None, "--out", help="Result directory [default: results/<scenario>-emulated].", show_default=False
    ),
    substitute: bool = _SUBSTITUTE,
    max_duration: float = _MAX_DURATION,
    router: bool = _ROUTER,
    proxy: bool = typer.Option(
        False,
        "--proxy",
        help="The train end to end: plain-TCP client, router proxy with PHA-D "
        "replaying the train's GPS, the emulated paths, server proxy, plain-TCP server; "
        "each PHA-D policy beside the simulator's relay chain (same seed).",
    ),
    pha_d: Optional[list[str]] = typer.Option(
        None,
        "--pha-d",
        help="With --proxy: PHA-D policy (off, paper, queue-aware, resend); repeatable [default: all four].",
        show_default=False,
    ),
    direction: Optional[list[str]] = typer.Option(
        None, "--direction", help="With --proxy: download or upload; repeatable [default: both].", show_default=False
    ),
    repeat: int = typer.Option(
        1, "--repeat", min=1, max=30, help="With --proxy: kernel runs per direction and policy."
    ),
    no_idle_restart: bool = typer.Option(
        False,
        "--no-idle-restart",
        help="With --proxy: PHA-D turns "
        'tcp_slow_start_after_idle off on the router (slow_start_after_idle = "off"), '
        'and the server proxy too ([server] slow_start_after_idle = "off"; kernel side only).',
    ),
    as_json: bool = typer.Option(False, "--json", help="Print only the summary as JSON on stdout."),
    pcap: bool = typer.Option(
        False,
        "--pcap",
        help="Capture every emulated link direction's packets (pcapng, Wireshark) to OUT/pcap/, "
        "in the layout `mobipath run --pcap` uses (the documentation's Packet captures page).",
    ),
    pcap_max_mb: float = typer.Option(
        100.0, "--pcap-max-mb", help="With --pcap: limit on all capture files together, MB (> 0)."
    ),
) -> None:
    """Run a scenario on the real Linux TCP/MPTCP stack through the emulated paths (root; real time)."""
    from . import emulate as emu

    out = out_dir_option(out_arg)
    scenario = input_file(scenario)
    if proxy:
        if pcap:
            raise _fail("--pcap does not go with --proxy")
        _emulate_proxy(scenario, out, substitute, max_duration, pha_d, direction, repeat, as_json, no_idle_restart)
        return
    if pha_d or direction or repeat != 1 or no_idle_restart:
        raise _fail("--pha-d, --direction, --repeat and --no-idle-restart go with --proxy")
    if not 0 < pcap_max_mb <= 1e6:
        raise typer.BadParameter("must be in (0, 1000000] MB", param_hint="'--pcap-max-mb'")

    from .display import StageProgress

    out_dir = out if out is not None else Path("results") / f"{scenario.stem}-emulated"
    try:
        with StageProgress(_stderr()) as stage:
            result = emu.run(
                scenario,
                substitute=substitute,
                max_duration_s=max_duration,
                command=provenance.command_line(),
                router=router,
                progress=stage,
                pcap_dir=out_dir / "pcap" if pcap else None,
                pcap_max_mb=pcap_max_mb,
            )
    except emu.EmulateError as e:
        raise _fail(str(e)) from None
    result.write(out_dir)
    if as_json:
        sys.stdout.write(result.summary_json())
    else:
        shown = {k: v for k, v in result.summary.items() if k != "emulation"}
        print_summary(
            _stdout(),
            shown,
            header=f"[bold]{escape(str(scenario))}[/bold]  emulated on Linux {escape(os.uname().release)}",
        )
        _stderr().print(emu.describe_emulation(result.summary["emulation"]))
    if "pcap" in result.summary:
        if result.summary["pcap"].get("warning"):
            _stderr().print(f"warning: {escape(result.summary['pcap']['warning'])}")
        _stderr().print(f"packet captures written to {escape(str(out_dir / 'pcap'))}")
    _stderr().print(f"results written to {escape(str(out_dir))}")


def _emulate_proxy(
    scenario: Path,
    out: Optional[Path],
    substitute: bool,
    max_duration: float,
    pha_d: Optional[list[str]],
    direction: Optional[list[str]],
    repeat: int,
    as_json: bool,
    no_idle_restart: bool = False,
) -> None:
    """`emulate --proxy` (emulate/proxychain.py): runs, prints the table, writes proxy-chain.json."""
    from . import emulate as emu
    from .emulate import proxychain as pc

    for name, given, allowed in (("--pha-d", pha_d, pc.POLICIES), ("--direction", direction, pc.DIRECTIONS)):
        for v in given or []:
            if v not in allowed:
                raise _fail(f"{name} {v}: one of {', '.join(allowed)}")
    from .display import StageProgress

    try:
        with StageProgress(_stderr()) as stage:
            r = pc.side_by_side(
                scenario,
                directions=tuple(direction or pc.DIRECTIONS),
                policies=tuple(pha_d or pc.POLICIES),
                repeat=repeat,
                substitute=substitute,
                max_duration_s=max_duration,
                no_idle_restart=no_idle_restart,
                progress=stage,
            )
    except emu.EmulateError as e:
        raise _fail(str(e)) from None
    out_dir = out if out is not None else Path("results") / f"{scenario.stem}-proxy"
    out_dir.mkdir(parents=True, exist_ok=True)
    (out_dir / "proxy-chain.json").write_text(jsonfmt.dumps(r))
    if as_json:
        sys.stdout.write(jsonfmt.dumps(r))
    else:
        title = (
            f"{escape(str(scenario))} through the proxy pair: Linux {escape(r['kernel'])} vs simulator (seed "
            f"{r['seed']}, "
            f"{len(r['handovers'])} handovers in {r['duration_s']:g} s, {repeat} kernel run(s) each"
            + (", kernel without the window restart after idle" if no_idle_restart else "")
            + ")"
        )
        table = Table(title=title, title_justify="left")
        for col in (
            "direction",
            "PHA-D",
            "in handovers, kernel",
            "in handovers, sim",
            "all, kernel",
            "all, sim",
            "MP_PRIO sent",
            "load 1 min",
        ):
            table.add_column(col, justify="left" if col in ("direction", "PHA-D") else "right")

        def f(v: Optional[float], ci: Optional[float] = None) -> str:
            if v is None:
                return "-"
            return f"{v:.2f}" + (f" ± {ci:.2f}" if ci is not None else "")

        for x in r["rows"]:
            table.add_row(
                x["direction"],
                x["policy"],
                f(x["kernel_handover_goodput_mbps"], x["kernel_handover_goodput_ci95"]),
                f(x["sim_handover_goodput_mbps"]),
                f(x["kernel_goodput_mbps"], x["kernel_goodput_ci95"]),
                f(x["sim_goodput_mbps"]),
                f(x["kernel_mp_prio_sent"], None),
                ", ".join(f"{ln:.1f}" for ln in x["load_average_1min"]),
            )
        _stdout().print(table)
        _stderr().print(
            "in-order goodput at the plain-TCP receiver, Mbit/s (docs/metrics.md: 1 s windows holding a handover "
            "start); "
            "kernel ± 95 % CI over the repeats"
        )
    _stderr().print(f"results written to {escape(str(out_dir / 'proxy-chain.json'))}")


@app.command()
@_guarded
def compare(
    scenario: Path = _SCENARIO_EMU,
    out_arg: Optional[str] = typer.Option(
        None, "--out", help="Result directory [default: results/<scenario>-compare].", show_default=False
    ),
    substitute: bool = _SUBSTITUTE,
    max_duration: float = _MAX_DURATION,
    router: bool = _ROUTER,
    as_json: bool = typer.Option(False, "--json", help="Print only the comparison as JSON on stdout."),
) -> None:
    """Simulate and emulate a scenario (same seed), print both side by side and plot the goodput overlaid."""
    from . import emulate as emu
    from .emulate import compare as cmp

    out = out_dir_option(out_arg)
    scenario = input_file(scenario)

    from .display import StageProgress

    try:
        with StageProgress(_stderr()) as stage:
            c = cmp.compare(
                scenario,
                substitute=substitute,
                max_duration_s=max_duration,
                command=provenance.command_line(),
                router=router,
                progress=stage,
            )
    except emu.EmulateError as e:
        raise _fail(str(e)) from None
    out_dir = out if out is not None else Path("results") / f"{scenario.stem}-compare"
    c.write(out_dir)
    if as_json:
        sys.stdout.write(jsonfmt.dumps(c.to_json()))
    else:
        table = Table(
            title=f"{escape(str(scenario))}: simulation vs Linux {escape(os.uname().release)} (seed {c.plan.seed})"
        )
        for col, just in (("metric", "left"), ("simulation", "right"), ("emulation", "right"), ("difference", "right")):
            table.add_column(col, justify=just)  # type: ignore[arg-type]
        fmt = lambda v: "-" if v is None else (f"{v:.4g}" if isinstance(v, float) else str(v))  # noqa: E731
        for m, a, b, d in c.rows:
            table.add_row(m, fmt(a), fmt(b), "-" if d is None else f"{d * 100:+.1f} %")
        _stdout().print(table)
        if c.plan.substitutions:
            _stderr().print("substituted (both runs): " + "; ".join(c.plan.substitutions))
        _stderr().print(emu.describe_emulation(c.emulation.summary["emulation"]))
    _stderr().print(f"results and compare.png written to {escape(str(out_dir))}")


@app.command()
@_guarded
def fidelity(
    full: bool = typer.Option(
        False, "--full", help="The full grid (12 links × reno/cubic/bbr + two-path MPTCP) instead of the reduced one."
    ),
    seconds: float = typer.Option(15.0, "--seconds", min=3.0, max=600.0, help="Length of each run (s)."),
    warmup: float = typer.Option(
        3.0, "--warmup", min=0.0, max=60.0, help="Excluded from goodput at the start of each run (s)."
    ),
    out_arg: str = typer.Option("results/fidelity", "--out", help="Report directory."),
    seeds: int = typer.Option(
        1,
        "--seeds",
        min=1,
        max=100,
        help="Runs per side of each row with random loss (simulator seeds 1..N, kernel 1001..1000+N), compared as "
        "means with 95 % CIs.",
    ),
    lossy_only: bool = typer.Option(False, "--lossy-only", help="Only the rows with random loss."),
    independent: bool = typer.Option(
        False,
        "--independent",
        help="Check the simulator against an independent kernel path (the kernel's tbf bottleneck + a delay/loss "
        "relay, no mobipath link model) instead of checking the emulator.",
    ),
) -> None:
    """Simulator vs Linux kernel goodput over a grid of emulated links (root; real time).

    Default mode checks the emulator (the kernel's traffic crosses mobipath's own link model);
    --independent checks the simulator against the kernel's tbf qdisc and a separate relay."""
    out = out_dir_option(out_arg)
    assert out is not None
    from . import emulate as emu
    from .emulate import fidelity as fid

    if warmup >= seconds:
        raise _fail(f"--warmup = {warmup:g}: must be shorter than --seconds ({seconds:g})")
    emu.check_environment()
    configs = fid.FULL if full else fid.REDUCED
    if independent:
        configs = [c for c in configs if c.paths == 1]  # the reference path is single-path TCP
    if lossy_only:
        configs = [c for c in configs if c.loss > 0]
        if not configs:
            raise _fail("--lossy-only: the reduced grid has no rows with random loss; add --full")

    def starting(i: int, n: int, c: fid.Config) -> None:
        per_side = f"{seconds:g} s" + (f" x {seeds} seeds" if seeds > 1 and c.loss > 0 else "")
        _stderr().print(
            f"[{i}/{n}] {escape(c.label)} {c.cc}: simulating, then {per_side} on the kernel in real time …",
            highlight=False,
        )

    def progress(i: int, n: int, r: fid.Row) -> None:
        _stderr().print(
            f"[{i}/{n}] {r.config.label} {r.config.cc}: simulator {r.sim_goodput_mbps:.2f}, "
            f"kernel {r.emu_goodput_mbps:.2f} Mbit/s ({r.difference * 100:+.1f} %)"
            + ("" if r.within else " [bold red]outside target[/bold red]")
        )

    try:
        rows = fid.run_grid(
            configs,
            seconds=seconds,
            warmup_s=warmup,
            reduced=not full,
            progress=progress,
            seeds=seeds,
            independent=independent,
            on_start=starting,
        )
    except emu.EmulateError as e:
        raise _fail(str(e)) from None
    title = ("Fidelity grid (full)" if full else "Fidelity grid (reduced)") + (
        ", independent reference" if independent else ""
    )
    fid.report(
        rows, out, title=title, seconds=seconds, warmup_s=warmup, kernel=os.uname().release, independent=independent
    )
    _stdout().print((out / "fidelity.md").read_text())
    _stderr().print(f"report written to {escape(str(out))} (fidelity.md, fidelity.json, fidelity.png)")


@app.command()
@_guarded
def examples(
    dest: Path = typer.Argument(Path("mobipath-examples"), help="Directory to copy them into (created if needed)."),
    list_only: bool = typer.Option(False, "--list", help="Only list the shipped files."),
    force: bool = typer.Option(False, "--force", help="Overwrite files that exist with other contents."),
) -> None:
    """Copy the scenarios and data shipped with mobipath (scenarios/, data/) into a directory."""
    if list_only:
        for f in shipped.files():
            typer.echo(str(f))
        return
    if not str(dest).strip():
        raise typer.BadParameter("must name a directory (got an empty string)", param_hint="'DEST'")
    try:
        copied, unchanged = shipped.copy_to(dest, overwrite=force)
    except shipped.ShippedError as e:
        raise _fail(str(e)) from None
    typer.echo(f"{len(copied)} files copied into {dest}" + (f" ({len(unchanged)} already there)" if unchanged else ""))
    typer.echo(
        f"next: cd {dest} && mobipath run scenarios/examples/single-cubic.toml --out results/cubic && mobipath plot "
        "results/cubic"
    )


@app.command()
@_guarded
def plot(
    result_dir: Path = typer.Argument(
        ..., help="Result directory of `mobipath run` (summary.json, timeseries.parquet).", show_default=False
    ),
    fmt: str = typer.Option("png", "--format", "-f", help="png or svg."),
    out_arg: Optional[str] = typer.Option(
        None, "--out", help="Directory for the figures [default: RESULT_DIR].", show_default=False
    ),
    flow: Optional[list[str]] = typer.Option(
        None, "--flow", help="Only this flow (repeat for several) [default: every flow].", show_default=False
    ),
) -> None:
    """Plot a run: goodput, cwnd and RTT over time per flow (and per subflow for MPTCP), handovers marked."""
    from .plot import PlotError, plot_result

    out = out_dir_option(out_arg)
    try:
        done = plot_result(result_dir, fmt=fmt.lower(), out_dir=out, flows=flow)
    except PlotError as e:
        raise _fail(str(e)) from None
    for path in done.files:
        typer.echo(str(path))


@app.command()
@_guarded
def version() -> None:
    """Print mobipath's version and git revision."""
    from . import _core

    typer.echo(
        f"mobipath {provenance.version()} (git {provenance.git_revision()}, "
        f"core {getattr(_core, 'BUILD_PROFILE', 'unknown')} build"
        + (f", profile-guided, {_core.BUILD_PGO})" if getattr(_core, "BUILD_PGO", "") else ")")
    )


from . import hotable as _hotable  # noqa: E402  (sub-commands register after the app exists)

app.add_typer(_hotable.app, name="hotable")
from . import reproduce as _reproduce  # noqa: E402

app.add_typer(_reproduce.app, name="reproduce")
from . import router as _router  # noqa: E402

app.add_typer(_router.app, name="router")
from .router import proxy as _proxy  # noqa: E402

app.add_typer(_proxy.app, name="proxy")
from . import recommend as _recommend  # noqa: E402

app.command("recommend")(_recommend.recommend_cmd)


@app.command("sweep")
@_guarded
def sweep_cmd(
    target: str = typer.Argument(
        ..., help="A sweep file (TOML), or `report` to summarise a finished sweep's directory.", show_default=False
    ),
    directory: Optional[str] = typer.Argument(
        None, help="With `report`: the sweep's output directory.", show_default=False
    ),
    out: Optional[str] = typer.Option(
        None, "--out", "-o", help="Output directory [default: sweeps/<sweep file name>]."
    ),
    jobs: Optional[int] = typer.Option(
        None,
        "--jobs",
        "-j",
        min=1,
        help="Worker processes [default: all cores]; with --backend ray, runs at a time [default: the cluster's CPUs].",
    ),
    backend: str = typer.Option(
        "local", "--backend", help="local (worker processes here) or ray (a Ray cluster; pip install 'mobipath[ray]')."
    ),
    ray_address: Optional[str] = typer.Option(
        None,
        "--ray-address",
        help="With --backend ray: the cluster (e.g. ray://head:10001 or auto) [default: start a local Ray].",
    ),
    fresh: bool = typer.Option(
        False, "--fresh", help="Discard the finished runs kept in DIR/cache and run everything again."
    ),
    no_timeseries: bool = typer.Option(False, "--no-timeseries", help="Do not write the time-series dataset."),
    metric: Optional[str] = typer.Option(
        None, "--metric", help="With `report`: the column to summarise, e.g. flows.f.goodput_mbps."
    ),
    plot: Optional[Path] = typer.Option(
        None, "--plot", help="With `report`: write a line plot (one axis) or heatmap (two) here."
    ),
) -> None:
    """Run a declared grid of scenarios (axes over any field, seeds) on all cores into one Parquet
    dataset, cached and resumable; or `mobipath sweep report DIR --metric M` for mean and 95 % CI
    per combination. Exit status: the number of failed runs (at most 100)."""
    from . import sweep as sw

    if target == "report":
        if directory is None or not metric:
            raise typer.BadParameter(
                "give the sweep's directory and --metric: mobipath sweep report DIR --metric flows.f.goodput_mbps"
            )
        try:
            cells, written = sw.report(Path(directory), metric, plot)
        except (FileNotFoundError, ValueError) as e:
            raise typer.BadParameter(str(e)) from None
        table = Table(title=f"{metric}: mean ± 95 % CI over seeds")
        axes = [k for k in cells[0] if k not in ("mean", "ci95", "n")] if cells else []
        for name in axes + ["mean ± 95 % CI", "seeds"]:
            table.add_column(name)
        for c in cells:
            v = (
                "n/a"
                if c["mean"] is None
                else f"{c['mean']:.4g}" + ("" if c["ci95"] is None else f" ± {c['ci95']:.2g}")
            )
            table.add_row(*[escape(str(sw.axis_cell(c[a]))) for a in axes], v, str(c["n"]))
        _stdout().print(table)
        if written:
            typer.echo(f"plot written to {written}")
        return
    if directory is not None:
        raise typer.BadParameter(f"unexpected extra argument {directory!r} (only `report` takes a directory)")
    path = input_file(Path(target))
    out_dir = out_dir_option(out) or Path("sweeps") / path.stem
    from .executor import Backend, BackendError, WorkerDied
    from .reproduce import _progress

    try:
        Backend(backend, ray_address)
    except BackendError as e:
        raise typer.BadParameter(str(e)) from None
    with _progress() as (_, bar):
        try:
            info = sw.sweep(
                path,
                out_dir,
                jobs=jobs,
                backend=backend,
                ray_address=ray_address,
                progress=bar,
                resume=not fresh,
                timeseries=not no_timeseries,
            )
        except BackendError as e:
            raise _fail(str(e)) from None
        except (KeyboardInterrupt, WorkerDied) as e:
            from .experiments.common import RunCache

            n = RunCache(out_dir / "cache").count()
            why, code = ("interrupted", 130) if isinstance(e, KeyboardInterrupt) else (str(e), 1)
            raise _fail(
                f"{why}; {n} finished runs are kept in {out_dir / 'cache'}: run the same command again to resume", code
            ) from None
    n_failed = len(info["failed"])
    typer.echo(
        f"{info['runs']} runs ({info['reused_runs']} reused, {n_failed} failed) of {info['combinations']} "
        f"combinations in {info['wall_time_s']:.1f} s; dataset in {out_dir / 'runs'}"
    )
    for f in info["failed"][:20]:
        typer.echo(f"failed: [{f['combination']}] seed {f['seed']}: {f['error']}", err=True)
    if n_failed:
        raise typer.Exit(min(n_failed, 100))


def main() -> None:
    """The typer application alone (the console script and `python -m mobipath` use
    `runcmd.entry`, which runs well-formed `run` command lines without typer)."""
    app()
