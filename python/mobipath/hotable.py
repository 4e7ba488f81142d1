"""Handover tables (P0): `mobipath hotable learn` builds or accumulates a table from the
preliminary runs of a scenario's train; the CSV format is documented in crates/sim/src/hst/README.md."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import _core
from .api import _scenario_error
from .errors import ScenarioError
from .source import ScenarioLike, load_source

app = typer.Typer(help="Handover tables for PHA (learn from GPS-tagged runs).", no_args_is_help=True)


def learn(
    scenario: ScenarioLike,
    runs: int = 50,
    first_seed: int = 1,
    margin_m: Optional[float] = None,
    existing: Optional[str] = None,
) -> str:
    """Learns a table from `runs` runs of the scenario's train (seeds first_seed..) and returns the
    CSV text; `existing` (CSV text) is accumulated into, so coverage never shrinks."""
    src = load_source(scenario)
    try:
        return _core.learn_handover_table(src.text, src.file, str(src.base_dir), runs, first_seed, margin_m, existing)
    except ScenarioError:
        raise
    except _core.ScenarioError as e:
        raise _scenario_error(e, src) from None


@app.command("learn")
def learn_cmd(
    scenario: Path = typer.Argument(..., help="Scenario with an [hst] section.", show_default=False),
    runs: int = typer.Option(50, "--runs", min=1, max=100000, help="Preliminary runs to learn from."),
    out: Path = typer.Option(..., "-o", "--out", help="Table CSV to write; an existing file is accumulated into."),
    first_seed: int = typer.Option(1, "--first-seed", min=0, help="Seed of the first preliminary run."),
    margin_m: Optional[float] = typer.Option(None, "--margin-m", min=0.0, help="GPS error margin added on both sides (default 3 sigma of the GPS error)."),
    fresh: bool = typer.Option(False, "--fresh", help="Overwrite an existing table instead of accumulating into it."),
) -> None:
    """Learn (or accumulate) a handover table from preliminary runs of the scenario's train."""
    from .cli import _guarded  # late import: cli imports this module

    def go() -> None:
        existing = out.read_text(encoding="utf-8") if out.exists() and not fresh else None
        csv = learn(scenario, runs=runs, first_seed=first_seed, margin_m=margin_m, existing=existing)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(csv, encoding="utf-8")
        n = sum(1 for line in csv.splitlines() if line and not line.startswith("#")) - 1
        action = "accumulated into" if existing is not None else "written to"
        typer.echo(f"{n} handover ranges from {runs} runs {action} {out}")

    _guarded(go)()
