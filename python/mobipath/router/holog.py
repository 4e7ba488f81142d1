"""The handover logger: a modem's serving-cell changes, as recorded on the train, turned into the
handover log ``operator,start,end`` (UTC) that ``mobipath hotable learn-recorded`` reads beside the
run's NMEA log (positions come from there: learn-recorded places each handover on the track by
the GPS fixes around it).

Inputs (pluggable: each is a parser producing (time, operator, cell) observations):

- **cell-id log**, CSV ``time,operator,cell``: one row per observation of a modem's serving cell
  (time as Unix seconds or ISO 8601 UTC, as the handover log; ``cell`` empty or ``--`` = no
  service), e.g. written by a script polling the modem;
- **mmcli log**: the output of ModemManager's ``mmcli -m N --location-get`` (or ``-K`` key-value
  form) repeated, each preceded by a line holding only its time, as a loop like
  ``while :; do date -u +%s.%N; mmcli -m 0 --location-get; sleep 1; done`` writes it; one log per
  modem, named with its operator (``A=mmcli-a.log``). The cell is the 3GPP ``cell id`` (``--``
  = none).

A handover is a change of serving cell between two observations of the same operator: its
interval is from the last observation of the old cell to the first of the new one, so it
contains the handover (the real interruption is shorter; the polling period bounds the error).
Observations without service in between are skipped over (the same cell before and after:
a re-attach, not a handover). Times must not go back; errors name the file, the line and the field.
"""

from __future__ import annotations

import datetime as dt
import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Optional

from ..errors import ConfigError, ScenarioError

__all__ = ["Observation", "parse_time", "parse_cell_log", "parse_mmcli", "handovers", "to_csv"]


@dataclass(frozen=True)
class Observation:
    t: float
    operator: str
    cell: Optional[str]
    file: str
    line: int


_ISO = re.compile(r"^(\d{4})-(\d{2})-(\d{2})[T ](\d{2}):(\d{2}):(\d{2}(?:\.\d+)?)(Z|\+00:00)?$")


def parse_time(s: str) -> Optional[float]:
    """Unix seconds or ISO 8601 UTC (``Z``, ``+00:00`` or no zone), as the handover log's times."""
    s = s.strip()
    try:
        v = float(s)
        return v if v == v and abs(v) != float("inf") else None
    except ValueError:
        pass
    m = _ISO.match(s)
    if not m:
        return None
    try:
        sec = float(m.group(6))
        d = dt.datetime(
            int(m.group(1)), int(m.group(2)), int(m.group(3)), int(m.group(4)), int(m.group(5)), tzinfo=dt.timezone.utc
        )
    except ValueError:
        return None
    if not 0 <= sec < 61:
        return None
    return d.timestamp() + sec


_CELL = re.compile(r"^[0-9A-Za-z]{1,16}$")
_NONE = ("", "--", "unknown")


def _cell(v: str, file: str, n: int, errs: list[ConfigError]) -> Optional[str]:
    v = v.strip().strip("'\"")
    if v.lower() in _NONE:
        return None
    if not _CELL.match(v):
        errs.append(
            ConfigError(f"{file}: line {n}: cell", v[:40], "a cell id of 1-16 letters or digits (empty or -- for none)")
        )
        return None
    return v.upper()


def parse_cell_log(text: str, file: str) -> list[Observation]:
    """The ``time,operator,cell`` CSV (header required)."""
    out: list[Observation] = []
    errs: list[ConfigError] = []
    header = False
    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        if not header:
            if line.replace(" ", "") != "time,operator,cell":
                raise ScenarioError(
                    [ConfigError(f"{file}: line {n}: header", line[:60], "expected `time,operator,cell`")]
                )
            header = True
            continue
        c = [x.strip() for x in line.split(",")]
        if len(c) != 3:
            errs.append(
                ConfigError(
                    f"{file}: line {n}: columns", line[:60], f"expected 3 values (time,operator,cell), found {len(c)}"
                )
            )
            continue
        t = parse_time(c[0])
        if t is None:
            errs.append(
                ConfigError(
                    f"{file}: line {n}: time",
                    c[0][:40],
                    "a UTC time: Unix seconds or ISO 8601 (2024-05-01T12:34:56.25Z)",
                )
            )
        if not c[1]:
            errs.append(ConfigError(f"{file}: line {n}: operator", "", "must not be empty"))
        cell = _cell(c[2], file, n, errs)
        if t is not None and c[1]:
            out.append(Observation(t, c[1], cell, file, n))
    if not header:
        errs.append(ConfigError(file, "", "empty log: expected the header `time,operator,cell`"))
    if errs:
        raise ScenarioError(errs)
    return out


_MM_HUMAN = re.compile(r"^\s*(?:.*\|)?\s*cell id:\s*(\S*)\s*$")
_MM_KEY = re.compile(r"^\s*modem\.location\.3gpp\.cid\s*:\s*(\S*)\s*$")


def parse_mmcli(text: str, file: str, operator: str) -> list[Observation]:
    """Repeated ``mmcli --location-get`` outputs, each after a line holding only its time."""
    if not operator or "," in operator:
        raise ScenarioError(
            [ConfigError("--mmcli", operator, "OPERATOR=FILE: a non-empty operator name without commas")]
        )
    out: list[Observation] = []
    errs: list[ConfigError] = []
    t: Optional[float] = None
    t_line = 0
    found: Optional[tuple[Optional[str], int]] = None

    def close() -> None:
        if t is not None:
            # A record without a 3GPP cell id: no service (or location not enabled).
            cell, n = found if found is not None else (None, t_line)
            out.append(Observation(t, operator, cell, file, n))

    for n, raw in enumerate(text.splitlines(), 1):
        line = raw.strip()
        if not line:
            continue
        ts = parse_time(line) if "|" not in line else None
        if ts is not None:
            close()
            t, t_line, found = ts, n, None
            continue
        m = _MM_HUMAN.match(raw) or _MM_KEY.match(raw)
        if m:
            if t is None:
                errs.append(
                    ConfigError(
                        f"{file}: line {n}: time",
                        "",
                        "a cell id before any time line (each mmcli output must follow a line with its time)",
                    )
                )
                continue
            found = (_cell(m.group(1), file, n, errs), n)
        elif line.lower().startswith("error") and t is not None:
            found = (None, n)  # mmcli failed (modem gone): no service
    close()
    if not out and not errs:
        errs.append(
            ConfigError(file, "", "no time lines: each mmcli output must follow a line with its time (date -u +%s.%N)")
        )
    if errs:
        raise ScenarioError(errs)
    return out


def handovers(obs: Iterable[Observation]) -> list[tuple[str, float, float]]:
    """(operator, start, end) of every serving-cell change, sorted by start."""
    by_op: dict = {}
    for o in obs:
        by_op.setdefault(o.operator, []).append(o)
    errs: list[ConfigError] = []
    rows: list[tuple[str, float, float]] = []
    for op, os_ in by_op.items():
        last: Optional[Observation] = None  # the last observation with a cell
        prev_t: Optional[Observation] = None
        for o in os_:
            if prev_t is not None and o.t < prev_t.t:
                errs.append(
                    ConfigError(
                        f"{o.file}: line {o.line}: time",
                        f"{o.t:.3f}",
                        f"goes back in time (operator {op}: line {prev_t.line} was later)",
                    )
                )
                continue
            prev_t = o
            if o.cell is None:
                continue
            if last is not None and last.cell != o.cell:
                rows.append((op, last.t, o.t))
            last = o
    if errs:
        raise ScenarioError(errs)
    return sorted(rows, key=lambda r: (r[1], r[0]))


def _iso(t: float) -> str:
    sec, ms = divmod(int(round(t * 1000)), 1000)
    return dt.datetime.fromtimestamp(sec, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.") + f"{ms:03d}Z"


def to_csv(rows: Sequence[tuple[str, float, float]], header: bool = True) -> str:
    """The handover log ``operator,start,end`` (ISO 8601 UTC, milliseconds)."""
    return ("operator,start,end\n" if header else "") + "".join(f"{op},{_iso(a)},{_iso(b)}\n" for op, a, b in rows)
