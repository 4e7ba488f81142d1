"""`mobipath run` without the start-up cost of the full command line.

`mobipath run` is the command sweeps and shell loops call thousands of times, so it must not pay
for what it does not use. typer imports click, rich and pydantic (~80 ms), polars ~70 ms: more
than a short simulation. So:

- `entry()` is the console script. For a `run` command line it recognises (the scenario and
  `--seed N`, `--out DIR`, `--json`, `-q/--quiet`, `--pcap`, `--pcap-max-mb MB`, each at most
  once) it runs `execute` directly;
  anything else (`--help`, another command, a flag it does not know, a value out of range) goes to
  the typer application in `mobipath.cli`, which reports usage errors as before. The fast path
  never decides an error itself, so both paths accept and refuse the same command lines.
- `execute` is the body of `mobipath run` for both paths (`cli.run` calls it too). rich is
  imported only to draw the human-readable summary or a progress bar; `--json` needs neither.
- `describe_failure` turns an exception into the lines and exit code every command prints, for
  both paths (`cli._guarded` uses it).
"""

from __future__ import annotations

import os
import sys
import time

# Annotations only: importing typing costs ~4.5 ms of every `mobipath run`.
TYPE_CHECKING = False
if TYPE_CHECKING:  # pragma: no cover
    from collections.abc import Sequence
    from typing import Optional, Union

__all__ = [
    "entry",
    "exit_now",
    "execute",
    "describe_failure",
    "parse_fast",
    "RunOptions",
    "CommandFailed",
    "resolve_input",
]

MAX_SEED = 2**64 - 1


class CommandFailed(Exception):
    """A command ends with `message` (printed as ``error: message``) and exit `code`."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.message = message
        self.code = code


class RunOptions:
    """The options of `mobipath run` (the same as `cli.run`'s parameters). Paths are kept as
    strings: `mobipath run` never imports pathlib (with `urllib.parse`, which it imports, about
    4 ms of every run)."""

    __slots__ = ("scenario", "seed", "out", "as_json", "quiet", "pcap", "pcap_max_mb")

    def __init__(
        self,
        scenario: Union[str, os.PathLike],
        seed: Optional[int] = None,
        out: Optional[Union[str, os.PathLike]] = None,
        as_json: bool = False,
        quiet: bool = False,
        pcap: bool = False,
        pcap_max_mb: Optional[float] = None,
    ):
        self.scenario = os.fspath(scenario)
        self.seed = seed
        self.out = None if out is None else os.fspath(out)
        self.as_json = as_json
        self.quiet = quiet
        self.pcap = pcap
        self.pcap_max_mb = pcap_max_mb


def parse_fast(args: Sequence[str]) -> Optional[RunOptions]:
    """The options of a well-formed ``run`` command line (`args` without the program name), or
    None when typer must handle it (help, another command, an unknown or repeated flag, a bad
    value): the fast path never reports a usage error itself."""
    if len(args) < 2 or args[0] != "run":
        return None
    scenario: Optional[str] = None
    values = {}
    flags = set()
    i = 1
    while i < len(args):
        a = args[i]
        if a in ("--seed", "--out", "--pcap-max-mb") or a.startswith(("--seed=", "--out=", "--pcap-max-mb=")):
            name, eq, value = a.partition("=")
            if not eq:
                if i + 1 >= len(args):
                    return None
                i += 1
                value = args[i]
            if name in values:
                return None
            values[name] = value
        elif a in ("--json", "-q", "--quiet", "--pcap"):
            key = "quiet" if a in ("-q", "--quiet") else a
            if key in flags:
                return None
            flags.add(key)
        elif a.startswith("-") and a != "-":
            return None  # --help, -h, unknown flags, "--" (typer decides)
        elif scenario is None:
            scenario = a
        else:
            return None  # an extra argument: typer's error message
        i += 1
    if scenario is None:
        return None
    seed = None
    if "--seed" in values:
        text = values["--seed"].strip()
        if not text.isdigit():
            return None
        seed = int(text)
        if seed > MAX_SEED:
            return None
    out = None
    if "--out" in values:
        if not values["--out"].strip():
            return None  # typer says why an empty directory is refused
        out = values["--out"]
    pcap_max_mb = None
    if "--pcap-max-mb" in values:
        try:
            pcap_max_mb = float(values["--pcap-max-mb"])
        except ValueError:
            return None  # typer says why
    return RunOptions(
        scenario, seed, out, "--json" in flags, "quiet" in flags, pcap="--pcap" in flags, pcap_max_mb=pcap_max_mb
    )


def _err(line: str) -> None:
    sys.stderr.write(line + "\n")
    sys.stderr.flush()


def resolve_input(path: Union[str, os.PathLike[str]], quiet: bool = False) -> str:
    """`path`, or the file shipped with mobipath that it names when it does not exist here
    (``scenarios/examples/...``, ``data/...``): the documented commands then work from any
    directory. Says so on stderr unless `quiet`."""
    from . import shipped

    found = shipped.find(path)
    if found is None:
        return os.fspath(path)
    if not quiet:
        _err(f"note: {os.fspath(path)} is not in this directory; using the copy shipped with mobipath ({found})")
    return str(found)


def execute(opts: RunOptions) -> None:
    """Runs a scenario, writes its results and prints a summary. Raises `CommandFailed`."""
    from . import api, provenance
    from .source import FilePath, path_stem, path_text

    scenario = path_text(resolve_input(opts.scenario, opts.quiet))
    # The result directory is known before the run: packet captures are written into it while
    # the simulation runs (OUT/pcap/).
    if opts.out is not None:
        out_dir = path_text(opts.out)
    else:
        from . import _core, files

        seed = opts.seed
        if seed is None:
            try:  # noqa: SIM105 (contextlib is not imported on this fast path)
                seed = _core.scenario_seed(files.read_text(scenario, files.MAX_CONFIG_FILE_BYTES))
            except OSError:
                pass  # the run itself says what is wrong with the file
        out_dir = os.path.join("results", f"{path_stem(scenario)}-seed{seed if seed is not None else 'default'}")
    show_progress = not opts.quiet and sys.stderr.isatty()
    t0 = time.perf_counter()
    # FilePath: read as a file even without a .toml ending (a str could be taken for TOML text).
    if show_progress:
        from rich.console import Console

        from .display import RunProgress

        with RunProgress(f"simulating {scenario.rpartition('/')[2]}", Console(stderr=True, highlight=False)) as bar:
            result = api.run(
                FilePath(scenario),
                seed=opts.seed,
                progress=bar,
                allow_partial=True,
                command=provenance.command_line(),
                out_dir=out_dir,
                pcap=opts.pcap,
                pcap_max_mb=opts.pcap_max_mb,
            )
    else:
        result = api.run(
            FilePath(scenario),
            seed=opts.seed,
            allow_partial=True,
            command=provenance.command_line(),
            out_dir=out_dir,
            pcap=opts.pcap,
            pcap_max_mb=opts.pcap_max_mb,
        )
    wall = time.perf_counter() - t0
    try:
        result.write_files(out_dir)
    except OSError as e:
        raise CommandFailed(f"cannot write results to {out_dir}: {e.strerror or e}") from None
    if opts.seed is not None and not result.seed_matters and not opts.quiet:
        _err(
            "warning: nothing in this scenario is random (no random loss, reordering, BBR, Peekaboo or train), "
            "so every seed gives the same result"
        )
    pcap = result.summary.get("pcap")
    if pcap is not None and not opts.quiet:
        if pcap.get("warning"):
            _err(f"warning: {pcap['warning']}")
        _err(f"packet captures written to {os.path.join(out_dir, pcap['directory'])}")
    if result.partial:
        stopped = result.summary["partial"]["stopped_at_s"]
        raise CommandFailed(
            f'interrupted at {stopped:g} s of simulated time; partial results (marked "partial" in '
            f"summary.json) written to {out_dir}",
            130,
        )
    if opts.as_json:
        sys.stdout.write(result.summary_json())
        sys.stdout.flush()
    else:
        details = f"  seed {result.seed}  ·  {result.events} events in {wall:.2f} s"
        if sys.stdout.isatty():
            from rich.console import Console
            from rich.markup import escape

            from .display import print_summary

            print_summary(
                Console(highlight=False), result.summary, header=f"[bold]{escape(str(scenario))}[/bold]{details}"
            )
        else:
            # Redirected (a sweep, a shell loop, a pipe): the same tables as text, without
            # rich's import (about 33 ms, more than a short run; see display.py).
            from .display import write_plain_summary

            write_plain_summary(sys.stdout, result.summary, header=f"{scenario}{details}")
            sys.stdout.flush()
    if not opts.quiet:
        _err(f"results written to {out_dir}")


def describe_failure(e: BaseException) -> Optional[tuple[list[str], int]]:
    """The lines to print on stderr and the exit code for an exception a command raised, or None
    if it must propagate (MOBIPATH_DEBUG=1 asks for tracebacks of unexpected errors). Control
    characters in them (a file name, a peer's text inside a message) are escaped: one line each,
    no escape sequence reaches the terminal."""
    found = _describe_failure(e)
    if found is None:
        return None
    from .text import escape_controls

    lines, code = found
    return [escape_controls(line) for line in lines], code


def _describe_failure(e: BaseException) -> Optional[tuple[list[str], int]]:
    from .errors import InternalError, ScenarioError

    if isinstance(e, CommandFailed):
        return [f"error: {e.message}"], e.code
    if isinstance(e, ScenarioError):
        return [err.with_file() for err in e.errors], 1
    if isinstance(e, OSError):
        name = f"{e.filename}: " if e.filename else ""
        return [f"error: {name}{e.strerror or e}"], 1
    if isinstance(e, KeyboardInterrupt):
        return ["error: interrupted"], 130
    if os.environ.get("MOBIPATH_DEBUG"):
        return None
    if isinstance(e, InternalError):
        return [f"error: {e}"], 1
    if isinstance(e, Exception):
        return [f"error: {type(e).__name__}: {e} (set MOBIPATH_DEBUG=1 for a traceback)"], 1
    return None


def run_fast(opts: RunOptions) -> int:
    """`execute` with the CLI's error handling; returns the exit code."""
    try:
        execute(opts)
    except BaseException as e:  # noqa: B902 - every failure becomes a message and an exit code
        failure = describe_failure(e)
        if failure is None:
            raise
        lines, code = failure
        for line in lines:
            _err(line)
        return code
    return 0


def peak_rss_kib() -> Optional[int]:
    """This process's peak RSS in KiB: VmHWM of its own address space (Linux), else None.

    Not ru_maxrss: Linux's ru_maxrss of a process also counts the RSS of the parent it was forked
    from (the address space replaced at exec), so every child of a 35 MiB Python process
    reported at least 35 MiB. `mobipath bench` uses this too."""
    try:
        with open("/proc/self/status", encoding="ascii") as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return None


def _write_peak_rss(path: str) -> None:
    """Writes `peak_rss_kib()` to `path` at exit, for `mobipath bench --process` (a parent cannot
    measure its child's own peak, see `peak_rss_kib`)."""
    kib = peak_rss_kib()
    if kib is None:
        return
    try:
        with open(path, "w", encoding="ascii") as f:
            f.write(f"{kib}\n")
    except OSError:
        pass


def exit_now(code: int) -> None:
    """Ends the process with `code`, skipping the interpreter's teardown: freeing every module and
    object one by one, which the operating system does at once. That teardown was about 3.5 ms of
    every `mobipath run` (13 % of a 10 ms scenario's whole process). What it does that
    matters is done first: the `atexit` handlers run (MOBIPATH_PEAK_RSS_FILE's writer among them)
    and stdout and stderr are flushed; every result file is already closed (`Result.write` writes
    each whole and renames it into place). A failed flush (a closed pipe) turns success into
    status 120, as CPython's own teardown does."""
    import atexit

    try:
        atexit._run_exitfuncs()
    except BaseException:  # noqa: B902 - Python 3.9 re-raises a failing handler's; later ones report it and go on
        import traceback

        traceback.print_exc()
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):  # a closed pipe or stream
            code = code or 120
    os._exit(code)


def entry(argv: Optional[Sequence[str]] = None, fast_exit: bool = False) -> None:
    """The `mobipath` command (and `python -m mobipath`). With `fast_exit` (the installed command
    script only) a fast-path run ends the process with `exit_now`; otherwise with `SystemExit`, so
    that a caller (`runpy`, IPython's `%run -m`, `python -m cProfile -m mobipath`) keeps control."""
    args = list(sys.argv[1:] if argv is None else argv)
    peak_file = os.environ.get("MOBIPATH_PEAK_RSS_FILE")
    if peak_file:
        import atexit

        atexit.register(_write_peak_rss, peak_file)
    opts = parse_fast(args)
    if opts is not None:
        code = run_fast(opts)
        if fast_exit:
            exit_now(code)
        sys.exit(code)
    from .cli import app

    app(args=args, prog_name="mobipath")
