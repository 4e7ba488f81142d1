"""`mobipath hotable learn`: writes a table, accumulates into an existing one, rejects bad input."""
from pathlib import Path

from typer.testing import CliRunner

from mobipath.cli import app

ROOT = Path(__file__).resolve().parents[2]
P0 = ROOT / "scenarios" / "p0" / "hst-minrtt.toml"
runner = CliRunner()


def ranges(path: Path):
    rows = [l.split(",") for l in path.read_text().splitlines() if l and not l.startswith("#")][1:]
    return [(r[0], float(r[1]), float(r[2]), int(r[3])) for r in rows]


def covered(table, op, x):
    return any(o == op and a <= x <= b for o, a, b, _ in table)


def test_learn_writes_then_accumulates_without_shrinking(tmp_path):
    out = tmp_path / "table.csv"
    r = runner.invoke(app, ["hotable", "learn", str(P0), "--runs", "5", "-o", str(out)])
    assert r.exit_code == 0, r.output
    first = ranges(out)
    assert first and {op for op, *_ in first} == {"A", "B"}
    r = runner.invoke(app, ["hotable", "learn", str(P0), "--runs", "5", "--first-seed", "100", "-o", str(out)])
    assert r.exit_code == 0 and "accumulated" in r.output, r.output
    second = ranges(out)
    alone = tmp_path / "alone.csv"
    r = runner.invoke(app, ["hotable", "learn", str(P0), "--runs", "5", "--first-seed", "100", "-o", str(alone)])
    assert r.exit_code == 0, r.output
    assert sum(c for *_, c in second) == sum(c for *_, c in first) + sum(c for *_, c in ranges(alone))
    for op, a, b, _ in first:
        assert covered(second, op, a) and covered(second, op, b) and covered(second, op, (a + b) / 2)


def test_malformed_existing_table_is_reported(tmp_path):
    out = tmp_path / "table.csv"
    out.write_text("operator,start_m,end_m,count\nA,10,5,1\n")
    r = runner.invoke(app, ["hotable", "learn", str(P0), "--runs", "2", "-o", str(out)])
    assert r.exit_code == 1
    assert "end_m = 5: must be greater than start_m (10)" in r.output
    assert "Traceback" not in r.output


def test_scenario_without_train_is_rejected(tmp_path):
    r = runner.invoke(app, ["hotable", "learn", str(ROOT / "scenarios/examples/single-cubic.toml"), "-o", str(tmp_path / "t.csv")])
    assert r.exit_code == 1
    assert "no [hst] section" in r.output
