"""`mobipath router handover-log`: serving-cell changes (a cell-id log, or ModemManager's mmcli
output recorded with a time line before each) -> the handover log `operator,start,end` that
`mobipath hotable learn-recorded` reads. The mmcli samples below follow the output format of
mmcli 1.20 (`--location-get`, human and `-K` forms); they are constructed, not recorded on a drive."""

from __future__ import annotations

import datetime as dt
import subprocess
import sys
from pathlib import Path

import pytest
from mobipath.errors import ScenarioError
from mobipath.router import holog

ROOT = Path(__file__).resolve().parents[2]
RIDE = ROOT / "data" / "sample-ride"
T0 = dt.datetime(2024, 5, 1, 12, 0, tzinfo=dt.timezone.utc).timestamp()

MMCLI_HUMAN = """{t}
  --------------------------
  3GPP |      operator mcc: 450
       |      operator mnc: 05
       | location area code: 0000
       | tracking area code: 1A2B
       |            cell id: {cell}
  --------------------------
  GPS  |      nmea: --
"""
MMCLI_KEYS = """{t}
modem.location.3gpp.mcc                         : 450
modem.location.3gpp.mnc                         : 08
modem.location.3gpp.lac                         : 0000
modem.location.3gpp.tac                         : 2B3C
modem.location.3gpp.cid                         : {cell}
"""


def true_handovers():
    rows = []
    for line in (RIDE / "handovers.csv").read_text().splitlines()[1:]:
        op, a, b = line.split(",")
        rows.append((op, holog.parse_time(a), holog.parse_time(b)))
    return rows


def cell_at(op: str, t: float, rows) -> str:
    """The serving cell of `op` at `t`: one more after each of its handovers' end."""
    return f"{0x1A2B300 + sum(1 for o, _, b in rows if o == op and b <= t):08X}"


def test_cell_log_changes_become_intervals_containing_the_handovers():
    rows = true_handovers()
    lines = ["time,operator,cell"]
    for k in range(75):  # polled every second
        for op in ("A", "B"):
            lines.append(f"{T0 + k:.3f},{op},{cell_at(op, T0 + k, rows) if k != 40 else '--'}")
    got = holog.handovers(holog.parse_cell_log("\n".join(lines) + "\n", "cells.csv"))
    assert len(got) == len(rows), got
    for (op, a, b), (op2, s, e) in zip(sorted(rows, key=lambda r: r[1]), got):
        assert op == op2 and s <= a and e >= b and e - s <= 2.0 + 1e-9, ((op, a, b), (op2, s, e))


def test_mmcli_human_and_key_value_forms_and_errors():
    human = "".join(MMCLI_HUMAN.format(t=f"{T0 + k:.6f}", cell=("01A2B301" if k < 3 else "01A2B302")) for k in range(6))
    human += f"{T0 + 6:.6f}\nerror: couldn't find modem\n" + MMCLI_HUMAN.format(t=f"{T0 + 7:.6f}", cell="01A2B302")
    obs = holog.parse_mmcli(human, "a.log", "A")
    assert [o.cell for o in obs] == ["01A2B301"] * 3 + ["01A2B302"] * 3 + [None, "01A2B302"]
    assert holog.handovers(obs) == [("A", T0 + 2, T0 + 3)]

    def iso(k):
        return dt.datetime.fromtimestamp(T0 + k, tz=dt.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")

    keys = "".join(
        MMCLI_KEYS.format(t=iso(k), cell=("2B3C01" if k < 2 else "--" if k < 4 else "2B3C02")) for k in range(6)
    )
    assert holog.handovers(holog.parse_mmcli(keys, "b.log", "B")) == [("B", T0 + 1, T0 + 4)]
    # A re-attach to the same cell after no service is not a handover.
    same = "".join(MMCLI_KEYS.format(t=f"{T0 + k}", cell=("2B3C01" if k != 2 else "--")) for k in range(5))
    assert holog.handovers(holog.parse_mmcli(same, "b.log", "B")) == []
    with pytest.raises(ScenarioError, match=r"a\.log: line 1: time"):
        holog.parse_mmcli("       |            cell id: 01\n", "a.log", "A")
    with pytest.raises(ScenarioError, match=r"a\.log: line 7: cell"):
        holog.parse_mmcli(MMCLI_HUMAN.format(t="1714564800", cell="01-A2"), "a.log", "A")
    with pytest.raises(ScenarioError, match="no time lines"):
        holog.parse_mmcli("nothing here\n", "a.log", "A")


@pytest.mark.parametrize(
    "text,want",
    [
        ("when,who,cell\n", "c.csv: line 1: header"),
        ("time,operator,cell\nnoon,A,01\n", "c.csv: line 2: time"),
        ("time,operator,cell\n1,,01\n", "c.csv: line 2: operator"),
        ("time,operator,cell\n1,A\n", "c.csv: line 2: columns"),
        ("time,operator,cell\n1,A,0x!\n", "c.csv: line 2: cell"),
        ("time,operator,cell\n5,A,01\n4,A,02\n", "c.csv: line 3: time"),
        ("", "c.csv: empty log"),
    ],
)
def test_cell_log_errors_name_file_line_field(text, want):
    with pytest.raises(ScenarioError) as e:
        holog.handovers(holog.parse_cell_log(text, "c.csv"))
    assert any(want in err.with_file() or want in str(err) for err in e.value.errors) or want in str(e.value), str(
        e.value
    )


def test_cli_writes_what_learn_recorded_learns_from(tmp_path: Path):
    """Two drives (the sample ride's cells, polled every second) appended into one handover log per
    drive, then `hotable learn-recorded` with the ride's NMEA log: the learned ranges cover the
    positions where the sample ride's real handovers happened."""
    rows = true_handovers()
    for op in ("A", "B"):
        (tmp_path / f"mm-{op}.log").write_text(
            "".join(
                (MMCLI_HUMAN if op == "A" else MMCLI_KEYS).format(t=f"{T0 + k:.3f}", cell=cell_at(op, T0 + k, rows))
                for k in range(75)
            )
        )
    out = tmp_path / "handovers.csv"

    def run(*a):
        return subprocess.run(
            [sys.executable, "-m", "mobipath", *map(str, a)], capture_output=True, text=True, timeout=120
        )

    r = run(
        "router",
        "handover-log",
        "--mmcli",
        f"A={tmp_path / 'mm-A.log'}",
        "--mmcli",
        f"B={tmp_path / 'mm-B.log'}",
        "-o",
        out,
    )
    assert r.returncode == 0, r.stderr
    assert f"{len(rows)} handovers (A, B)" in r.stdout
    text = out.read_text()
    assert text.startswith("operator,start,end\n") and len(text.splitlines()) == len(rows) + 1
    r = run("router", "handover-log", "--mmcli", f"A={tmp_path / 'mm-A.log'}", "-o", out, "--append")
    assert r.returncode == 0 and len(out.read_text().splitlines()) == len(rows) + 1 + sum(
        1 for o, *_ in rows if o == "A"
    )
    table = tmp_path / "table.csv"
    exact = tmp_path / "exact.csv"
    for log, dest in ((out, table), (RIDE / "handovers.csv", exact)):
        r = run(
            "hotable",
            "learn-recorded",
            "--track",
            RIDE / "track.csv",
            "--gps",
            RIDE / "ride.nmea",
            "--handovers",
            log,
            "-o",
            dest,
        )
        assert r.returncode == 0, r.stderr
    from mobipath.hotable import table_info

    ours, truth = table_info(table.read_text()), table_info(exact.read_text())
    for op, ranges in truth["ranges"].items():
        for s, e, _ in ranges:
            assert any(a <= s and e <= b for a, b, _ in ours["ranges"][op]), (op, s, e, ours["ranges"][op])
    r = run("router", "handover-log", "--mmcli", "A", "-o", out)
    assert r.returncode != 0 and "OPERATOR=FILE" in r.stderr
