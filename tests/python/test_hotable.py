"""`mobipath hotable learn`: writes a table, accumulates into an existing one, rejects bad input."""

from pathlib import Path

from mobipath import hotable
from mobipath.cli import app
from typer.testing import CliRunner

ROOT = Path(__file__).resolve().parents[2]
P0 = ROOT / "scenarios" / "p0" / "hst-minrtt.toml"
runner = CliRunner()


def ranges_of(text: str):
    """The CSV's rows: (operator, start_m, end_m, count) — the support stretches."""
    rows = [ln.split(",") for ln in text.splitlines() if ln and not ln.startswith("#")][1:]
    return [(r[0], float(r[1]), float(r[2]), int(r[3])) for r in rows]


def ranges(path: Path):
    return ranges_of(path.read_text())


def covered(table, op, x):
    return any(o == op and a <= x <= b for o, a, b, _ in table)


def test_learn_writes_then_accumulates_without_shrinking(tmp_path):
    out = tmp_path / "table.csv"
    r = runner.invoke(app, ["hotable", "learn", str(P0), "--runs", "5", "-o", str(out)])
    assert r.exit_code == 0, r.output
    first = ranges(out)
    assert first and {op for op, *_ in first} == {"A", "B"}
    r = runner.invoke(
        app, ["hotable", "learn", str(P0), "--runs", "5", "--first-seed", "100", "-o", str(out), "--accumulate"]
    )
    assert r.exit_code == 0 and "accumulated" in r.output, r.output
    second = ranges(out)
    alone = tmp_path / "alone.csv"
    r = runner.invoke(app, ["hotable", "learn", str(P0), "--runs", "5", "--first-seed", "100", "-o", str(alone)])
    assert r.exit_code == 0, r.output

    # Supports add up (metres x runs, to the CSV's decimetre rounding) and so do the runs.
    def integral(t):
        return sum((b - a) * c for _, a, b, c in t)

    assert abs(integral(second) - integral(first) - integral(ranges(alone))) < 0.1 * len(second)
    assert hotable.table_info(out.read_text())["runs"] == 10
    info = hotable.table_info(out.read_text())
    for op, a, b, _ in first:
        for x in (a, b - 0.05, (a + b) / 2):
            assert any(s <= x <= e for s, e, _ in info["ranges"][op]), (op, x)


def test_learning_twice_into_the_same_file_overwrites_unless_accumulating(tmp_path):
    """Run twice, `-o t.csv` used to double every count silently; now it replaces the table, and
    adding to it takes --accumulate."""
    out = tmp_path / "t.csv"
    args = ["hotable", "learn", str(P0), "--runs", "3", "-o", str(out)]
    assert runner.invoke(app, args).exit_code == 0
    once = out.read_text()
    r = runner.invoke(app, args)
    assert r.exit_code == 0 and "written to" in r.output and "accumulated" not in r.output, r.output
    assert out.read_text() == once
    r = runner.invoke(app, args + ["--accumulate"])
    assert r.exit_code == 0 and "accumulated into" in r.output, r.output

    # Every stretch's support doubled (metres x runs, to the CSV's decimetre rounding).
    def integral(t):
        return sum((b - a) * c for _, a, b, c in t)

    assert abs(integral(ranges(out)) - 2 * integral(ranges_of(once))) < 0.1 * len(ranges(out))
    assert hotable.table_info(out.read_text())["runs"] == 6
    r = runner.invoke(app, args + ["--accumulate", "--fresh"])
    assert r.exit_code == 2 and "contradict" in r.output


def test_min_support_narrows_the_ranges_and_is_kept_when_accumulating(tmp_path):
    """P0's ranges: a stretch is a range when >= k of the n learning runs saw a handover there;
    k = 1 is the union of every observation. The table keeps k, accumulating keeps it."""
    out = tmp_path / "t.csv"
    ride = (250.0, 250.0 + 70 * 300 / 3.6)
    r = runner.invoke(app, ["hotable", "learn", str(P0), "--runs", "20", "-o", str(out)])
    assert r.exit_code == 0 and "seen in >= 1 of 20 runs" in r.output, r.output
    union = hotable.coverage(out.read_text(), ride)
    r = runner.invoke(app, ["hotable", "learn", str(P0), "--runs", "20", "--min-support", "4", "-o", str(out)])
    assert r.exit_code == 0 and "seen in >= 4 of 20 runs" in r.output, r.output
    k4 = hotable.coverage(out.read_text(), ride)
    assert set(k4) == {"A", "B"}
    for op in ("A", "B"):
        assert 0 < k4[op] < 0.8 * union[op], (op, k4, union)
    r = runner.invoke(
        app, ["hotable", "learn", str(P0), "--runs", "5", "--first-seed", "50", "-o", str(out), "--accumulate"]
    )
    assert r.exit_code == 0 and "seen in >= 4 of 25 runs" in r.output, r.output
    r = runner.invoke(app, ["hotable", "learn", str(P0), "--runs", "5", "-o", str(out), "--min-support", "0"])
    assert r.exit_code == 2 and "--min-support" in r.output


def test_malformed_tables_are_named_by_table_info(tmp_path):
    import pytest
    from mobipath.errors import ScenarioError

    with pytest.raises(ScenarioError) as e:
        hotable.table_info("# min_support = 0\noperator,start_m,end_m,count\nA,1,x,1\n", "bad.csv")
    msg = str(e.value)
    assert "bad.csv: line 1: min_support" in msg and "bad.csv: line 3: end_m" in msg, msg


def test_help_says_what_happens_to_an_existing_table():
    for cmd in ("learn", "learn-recorded"):
        r = runner.invoke(app, ["hotable", cmd, "--help"], terminal_width=200)
        text = " ".join(r.output.split())
        assert "replaced if it exists, unless --accumulate" in text and "--accumulate" in text, r.output


def test_malformed_existing_table_is_reported(tmp_path):
    out = tmp_path / "table.csv"
    out.write_text("operator,start_m,end_m,count\nA,10,5,1\n")
    r = runner.invoke(app, ["hotable", "learn", str(P0), "--runs", "2", "-o", str(out), "--accumulate"])
    assert r.exit_code == 1
    assert "end_m = 5: must not be less than start_m (10)" in r.output
    assert "Traceback" not in r.output


def test_scenario_without_train_is_rejected(tmp_path):
    r = runner.invoke(
        app, ["hotable", "learn", str(ROOT / "scenarios/examples/single-cubic.toml"), "-o", str(tmp_path / "t.csv")]
    )
    assert r.exit_code == 1
    assert "no [hst] section" in r.output


def _nmea(t_s: float, lat: float, lon: float) -> str:
    """GGA + RMC sentences (with checksums) for a fix at Unix time t_s."""
    import datetime as dt

    d = dt.datetime.fromtimestamp(t_s, dt.timezone.utc)
    hms = d.strftime("%H%M%S") + f".{d.microsecond // 1000:03d}"

    def dm(v: float, w: int) -> str:
        a = abs(v)
        deg = int(a)
        return f"{deg:0{w}d}{(a - deg) * 60:07.4f}"

    ns, ew = ("N" if lat >= 0 else "S"), ("E" if lon >= 0 else "W")
    out = ""
    for body in (
        f"GPGGA,{hms},{dm(lat, 2)},{ns},{dm(lon, 3)},{ew},1,10,0.9,30.0,M,20.0,M,,",
        f"GPRMC,{hms},A,{dm(lat, 2)},{ns},{dm(lon, 3)},{ew},162.0,90.0,{d.strftime('%d%m%y')},,,A",
    ):
        ck = 0
        for ch in body.encode():
            ck ^= ch
        out += f"${body}*{ck:02X}\n"
    return out


def test_learn_recorded_from_nmea_and_handover_logs(tmp_path):
    import math

    from mobipath.gpsd import EARTH_RADIUS_M

    track = tmp_path / "track.csv"
    track.write_text("lat,lon\n37.0,127.0\n37.0,127.2\n")
    k = EARTH_RADIUS_M * math.pi / 180 * math.cos(math.radians(37.0))
    t0 = 1714564800.0  # 2024-05-01T12:00:00Z
    nmea = tmp_path / "run1.nmea"
    # 1 Hz fixes at 83.33 m/s from 0 m.
    nmea.write_text("".join(_nmea(t0 + i, 37.0, 127.0 + 83.33 * i / k) for i in range(60)))
    log = tmp_path / "run1.csv"
    log.write_text(
        f"operator,start,end\nA,2024-05-01T12:00:10Z,2024-05-01T12:00:10.04Z\nB,{t0 + 20.5:.2f},{t0 + 20.54:.2f}\n"
    )
    out = tmp_path / "table.csv"
    r = runner.invoke(
        app,
        [
            "hotable",
            "learn-recorded",
            "--track",
            str(track),
            "--gps",
            str(nmea),
            "--handovers",
            str(log),
            "-o",
            str(out),
        ],
    )
    assert r.exit_code == 0, r.output
    assert "2 handovers from 1 runs" in r.output
    t = ranges(out)
    assert covered(t, "A", 833.3) and covered(t, "B", 83.33 * 20.5) and not covered(t, "A", 83.33 * 20.5)
    # Malformed input: errors name the file and the line, exit code 1, no traceback.
    bad = tmp_path / "bad.nmea"
    bad.write_text("$GPGGA,123519,4807.038,N,01131.000,E,1,08,0.9,545.4,M,46.9,M,,*48\n")
    r = runner.invoke(
        app,
        [
            "hotable",
            "learn-recorded",
            "--track",
            str(track),
            "--gps",
            str(bad),
            "--handovers",
            str(log),
            "-o",
            str(out),
        ],
    )
    assert r.exit_code == 1 and "bad.nmea: line 1: checksum = 48: mismatch" in r.output, r.output
    assert "Traceback" not in r.output
    r = runner.invoke(
        app,
        [
            "hotable",
            "learn-recorded",
            "--track",
            str(track),
            "--gps",
            str(nmea),
            "--gps",
            str(nmea),
            "--handovers",
            str(log),
            "-o",
            str(out),
        ],
    )
    assert r.exit_code == 1 and "one handover log per --gps log" in r.output, r.output
    # A log row for an operator the table is not for is refused, naming file and line; the
    # operators can be given.
    r = runner.invoke(
        app,
        [
            "hotable",
            "learn-recorded",
            "--track",
            str(track),
            "--gps",
            str(nmea),
            "--handovers",
            str(log),
            "-o",
            str(out),
            "--operators",
            "A,C",
        ],
    )
    assert r.exit_code == 1 and "run1.csv: line 3: operator" in r.output and "--operators A,C" in r.output, r.output
    r = runner.invoke(
        app,
        [
            "hotable",
            "learn-recorded",
            "--track",
            str(track),
            "--gps",
            str(nmea),
            "--handovers",
            str(log),
            "-o",
            str(out),
            "--operators",
            "A, B",
        ],
    )
    assert r.exit_code == 0, r.output
