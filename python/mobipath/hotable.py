"""Handover tables (P0): `mobipath hotable learn` builds a table from the preliminary runs of a
scenario's train; `mobipath hotable learn-recorded` from recorded runs (NMEA 0183 GPS logs,
handover logs and a lat/lon track). Both replace the output table unless `--accumulate` is given
(then supports and run counts add up, so accumulating the same runs twice counts them twice).
A table stores, per stretch of track, in how many runs a handover was seen there (its support);
PHA uses the stretches seen in at least `--min-support` runs (k of n, P0's "range sized by the
GPS error" around where handovers recur). The CSV formats are documented in
crates/sim/src/hst/README.md."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Optional

import typer

from . import _core, files
from .api import _scenario_error
from .errors import ConfigError, ScenarioError
from .source import load_source

if TYPE_CHECKING:  # pragma: no cover
    from .source import ScenarioLike

# rich_markup_mode=None: help texts are plain text ("[hst]" must print as written), as in cli.py.
app = typer.Typer(
    help="Handover tables for PHA (learn from GPS-tagged runs).", no_args_is_help=True, rich_markup_mode=None
)


OUT_HELP = "Table CSV to write (replaced if it exists, unless --accumulate)."
ACCUMULATE_HELP = (
    "Add to the table in -o instead of replacing it: supports and run counts add up, so run it "
    "only on new runs (learning the same seeds twice counts them twice)."
)
MIN_SUPPORT_HELP = (
    "Minimum support k: a stretch of track becomes a range when at least k learning runs saw a "
    "handover there (default: the accumulated table's, else 1 = every handover seen)."
)


def _existing(out: Path, accumulate: bool, fresh: bool) -> Optional[str]:
    """The table to accumulate into: the one in `out` with --accumulate, else none (overwrite)."""
    if accumulate and fresh:
        raise typer.BadParameter(
            "--fresh (overwrite) and --accumulate contradict each other", param_hint="'--accumulate'"
        )
    if accumulate and out.exists():
        return files.read_text(out)
    return None


def learn(
    scenario: ScenarioLike,
    runs: int = 50,
    first_seed: int = 1,
    margin_m: Optional[float] = None,
    existing: Optional[str] = None,
    min_support: Optional[int] = None,
) -> str:
    """Learns a table from `runs` runs of the scenario's train (seeds first_seed..) and returns the
    CSV text; `existing` (CSV text) is accumulated into. `min_support`: see MIN_SUPPORT_HELP."""
    src = load_source(scenario)
    try:
        return _core.learn_handover_table(
            src.text, src.file, str(src.base_dir), runs, first_seed, margin_m, existing, min_support
        )
    except ScenarioError:
        raise
    except _core.ScenarioError as e:
        raise _scenario_error(e, src) from None


@app.command("learn")
def learn_cmd(
    scenario: Path = typer.Argument(..., help="Scenario with an [hst] section.", show_default=False),
    runs: int = typer.Option(50, "--runs", min=1, max=100000, help="Preliminary runs to learn from."),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    first_seed: int = typer.Option(1, "--first-seed", min=0, help="Seed of the first preliminary run."),
    margin_m: Optional[float] = typer.Option(
        None, "--margin-m", min=0.0, help="GPS error margin added on both sides (default 3 sigma of the GPS error)."
    ),
    accumulate: bool = typer.Option(False, "--accumulate", help=ACCUMULATE_HELP),
    min_support: Optional[int] = typer.Option(None, "--min-support", min=1, max=1_000_000_000, help=MIN_SUPPORT_HELP),
    fresh: bool = typer.Option(False, "--fresh", hidden=True, help="Overwrite (the default; kept for old scripts)."),
) -> None:
    """Learn a handover table from preliminary runs of the scenario's train (overwrites -o unless --accumulate)."""
    from .cli import _guarded, input_file  # late import: cli imports this module

    def go() -> None:
        existing = _existing(out, accumulate, fresh)
        csv = learn(
            input_file(scenario),
            runs=runs,
            first_seed=first_seed,
            margin_m=margin_m,
            existing=existing,
            min_support=min_support,
        )
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(csv, encoding="utf-8")
        action = "accumulated into" if existing is not None else "written to"
        typer.echo(f"{describe(csv, str(out))} learned from {runs} runs, {action} {out}")

    _guarded(go)()


def learn_recorded(
    track: Path,
    runs: Sequence[tuple[Path, Path]],
    margin_m: Optional[float] = None,
    max_offset_m: Optional[float] = None,
    max_gap_s: Optional[float] = None,
    existing: Optional[str] = None,
    min_support: Optional[int] = None,
) -> tuple[str, str]:
    """Learns a table from recorded runs: `track` is a `lat,lon` CSV, `runs` pairs of (NMEA log,
    handover log `operator,start,end`). Returns (CSV text, summary). `existing` (CSV text) is
    accumulated into. Raises ScenarioError listing every malformed line (file and line number)."""
    texts = []
    for nmea, log in runs:
        texts.append(
            (
                files.read_text(nmea, errors="replace"),
                str(nmea),
                files.read_text(log),
                str(log),
            )
        )
    try:
        return _core.learn_handover_table_recorded(
            files.read_text(track),
            str(track),
            texts,
            margin_m,
            max_offset_m,
            max_gap_s,
            existing,
            min_support,
        )
    except _core.ScenarioError as e:
        errors = [ConfigError.from_dict(d) for d in getattr(e, "errors", None) or []]
        raise ScenarioError(errors or [ConfigError("recorded runs", "", str(e))]) from None


def table_info(csv: str, file: str = "table.csv") -> dict[str, Any]:
    """A table's content: `runs` (0 = unknown), `min_support`, `ranges` (those PHA uses) and
    `support`, each {operator: [(start_m, end_m, count), ...]}. Raises ScenarioError for a
    malformed table (every bad line named)."""
    try:
        return json.loads(_core.handover_table_json(csv, file))
    except _core.ScenarioError as e:
        errors = [ConfigError.from_dict(d) for d in getattr(e, "errors", None) or []]
        raise ScenarioError(errors or [ConfigError(file, "", str(e))]) from None


def describe(csv: str, file: str = "table.csv") -> str:
    """One line: how many ranges, the support threshold and the runs behind them."""
    t = table_info(csv, file)
    n = sum(len(v) for v in t["ranges"].values())
    runs = f" of {t['runs']}" if t["runs"] else ""
    return f"{n} handover ranges (stretches seen in >= {t['min_support']}{runs} runs)"


def coverage(csv: str, ride_m: tuple[float, float], file: str = "table.csv") -> dict[str, float]:
    """Per operator, the fraction of the ride [from_m, to_m] inside the table's ranges: the part
    of the ride on which PHA excludes that operator's subflow."""
    a, b = min(ride_m), max(ride_m)
    t = table_info(csv, file)
    out = {}
    for op, rs in t["ranges"].items():
        inside = sum(max(0.0, min(e, b) - max(s, a)) for s, e, _ in rs)
        out[op] = inside / (b - a) if b > a else 0.0
    return out


def check_log_operators(logs: Sequence[Path], allowed: Sequence[str]) -> None:
    """Refuses handover-log rows whose operator is not one of `allowed` (each named by file and
    line), so a table never gets ranges for an operator its scenario does not have."""
    errors = []
    for log in logs:
        for n, line in enumerate(files.read_text(log, errors="replace").splitlines(), 1):
            cells = line.split(",")
            op = cells[0].strip()
            if not op or op.startswith("#") or (n == 1 and op == "operator") or len(cells) < 3:
                continue  # header, comments, blank lines; malformed rows are the parser's to name
            if op not in allowed:
                errors.append(
                    ConfigError(
                        f"{log}: line {n}: operator",
                        op[:40],
                        f"not an operator of the table (--operators {','.join(allowed)})",
                    )
                )
    if errors:
        raise ScenarioError(errors)


@app.command("learn-recorded")
def learn_recorded_cmd(
    track: Path = typer.Option(
        ..., "--track", help="Track polyline CSV `lat,lon` (WGS84), in running order.", show_default=False
    ),
    gps: list[Path] = typer.Option(
        ...,
        "--gps",
        help="NMEA 0183 log of a run (GGA/RMC); repeat, paired in order with --handovers.",
        show_default=False,
    ),
    handovers: list[Path] = typer.Option(
        ..., "--handovers", help="Handover log `operator,start,end` (UTC) of the same run; repeat.", show_default=False
    ),
    out: Path = typer.Option(..., "-o", "--out", help=OUT_HELP),
    margin_m: Optional[float] = typer.Option(
        None, "--margin-m", min=0.0, help="GPS error margin added on both sides (default 15 m)."
    ),
    max_offset_m: Optional[float] = typer.Option(
        None, "--max-offset-m", min=0.0, help="Drop fixes farther than this from the track (default 50 m)."
    ),
    max_gap_s: Optional[float] = typer.Option(
        None, "--max-gap-s", min=0.0, help="Interpolate handover positions only between fixes this close (default 2 s)."
    ),
    accumulate: bool = typer.Option(False, "--accumulate", help=ACCUMULATE_HELP),
    min_support: Optional[int] = typer.Option(None, "--min-support", min=1, max=1_000_000_000, help=MIN_SUPPORT_HELP),
    operators: Optional[str] = typer.Option(
        None,
        "--operators",
        help="Comma list of the operator names the table is for (the scenario's `[hst] radio.operators`, default A,B): "
        "a handover log row naming another operator is refused.",
    ),
    fresh: bool = typer.Option(False, "--fresh", hidden=True, help="Overwrite (the default; kept for old scripts)."),
) -> None:
    """Learn a handover table from recorded runs, GPS logs + handover logs (overwrites -o unless --accumulate)."""
    from .cli import _guarded, input_file  # late import: cli imports this module

    def go() -> None:
        if len(gps) != len(handovers):
            raise ScenarioError(
                [ConfigError("--handovers", str(len(handovers)), f"give one handover log per --gps log ({len(gps)})")]
            )
        existing = _existing(out, accumulate, fresh)
        runs = [(input_file(g), input_file(h)) for g, h in zip(gps, handovers)]
        allowed = [o.strip() for o in (operators or "A,B").split(",") if o.strip()]
        if not allowed:
            raise ScenarioError([ConfigError("--operators", operators or "", "give at least one operator name")])
        check_log_operators([h for _, h in runs], allowed)
        csv, summary = learn_recorded(input_file(track), runs, margin_m, max_offset_m, max_gap_s, existing, min_support)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(csv, encoding="utf-8")
        action = "accumulated into" if existing is not None else "written to"
        typer.echo(f"{summary}; {describe(csv, str(out))}, {action} {out}")

    _guarded(go)()
