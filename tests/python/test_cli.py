"""The `mobipath` command line: validate, schema, version, and error handling (no simulator run)."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest
from conftest import INVALID, ROOT, run_cli
from mobipath.cli import app
from typer.testing import CliRunner

runner = CliRunner()

# Each invalid scenario and what its error line must name: the field and the offending value.
INVALID_CASES = {
    "negative-rate.toml": ["links[0].rate_mbps", "-5"],
    "unknown-cc.toml": ["flows[0].cc", "cubicc"],
    "missing-path.toml": ["flows[0].path", "p9"],
    "unknown-key.toml": ["links[0]", "rate_mpbs"],
    "malformed-trace.toml": ["links[0].trace.file", "malformed.trace", "line 2"],
}


def error_lines(output: str, path: Path) -> list:
    prefix = f"{path}: "
    return [line for line in output.splitlines() if line.startswith(prefix)]


@pytest.mark.parametrize("name", sorted(INVALID_CASES))
def test_validate_invalid_exits_1_without_traceback(name):
    path = INVALID / name
    proc = run_cli(["validate", path])
    assert proc.returncode == 1, proc.stdout + proc.stderr
    assert "Traceback" not in proc.stdout + proc.stderr
    lines = error_lines(proc.stdout, path)
    assert lines, f"no '{path}: ...' line in:\n{proc.stdout}"
    assert not any(line.endswith(": ok") for line in lines)


@pytest.mark.parametrize("name", sorted(INVALID_CASES))
def test_validate_invalid_names_field_and_value(name):
    path = INVALID / name
    proc = run_cli(["validate", path])
    assert proc.returncode == 1
    lines = error_lines(proc.stdout, path)
    assert any(all(s in line for s in INVALID_CASES[name]) for line in lines), (
        f"expected a line with {INVALID_CASES[name]}, got:\n{proc.stdout}"
    )


def test_validate_reports_every_error():
    path = INVALID / "two-errors.toml"
    proc = run_cli(["validate", path])
    assert proc.returncode == 1
    out = "\n".join(error_lines(proc.stdout, path))
    assert "links[0].rate_mbps" in out and "cubicc" in out, proc.stdout


def test_validate_error_format_is_field_value_message():
    proc = run_cli(["validate", INVALID / "negative-rate.toml"])
    line = next(ln for ln in proc.stdout.splitlines() if "rate_mbps" in ln)
    # "<file>: <field> = <value>: <message>"
    assert line.startswith(f"{INVALID / 'negative-rate.toml'}: links[0].rate_mbps = -5: "), line
    assert len(line.split(": ", 2)[2]) > 0


def test_validate_valid_example_prints_ok(example):
    proc = run_cli(["validate", example])
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout.strip() == f"{example}: ok"


def test_validate_mixed_valid_and_invalid(example):
    bad = INVALID / "unknown-cc.toml"
    proc = run_cli(["validate", example, bad])
    assert proc.returncode == 1
    assert f"{example}: ok" in proc.stdout
    assert error_lines(proc.stdout, bad)


def test_validate_unreadable_file(tmp_path):
    missing = tmp_path / "nope.toml"
    proc = run_cli(["validate", missing])
    assert proc.returncode == 1
    assert f"{missing}: cannot read" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_validate_not_utf8(tmp_path):
    f = tmp_path / "binary.toml"
    f.write_bytes(b"seed = 1\n\xff\xfe\n")
    proc = run_cli(["validate", f])
    assert proc.returncode == 1
    assert f"{f}: " in proc.stdout and "UTF-8" in proc.stdout
    assert "Traceback" not in proc.stdout + proc.stderr


def test_validate_requires_a_file():
    result = runner.invoke(app, ["validate"])
    assert result.exit_code == 2


def test_schema_is_json():
    proc = run_cli(["schema"])
    assert proc.returncode == 0, proc.stderr
    json.loads(proc.stdout)


def test_schema_describes_the_format():
    proc = run_cli(["schema"])
    schema = json.loads(proc.stdout)
    assert "properties" in schema
    for key in ("links", "paths", "flows"):
        assert key in schema["properties"], sorted(schema["properties"])


def test_version():
    import mobipath

    result = runner.invoke(app, ["version"])
    assert result.exit_code == 0
    assert result.stdout.startswith(f"mobipath {mobipath.__version__} (git ")


def test_help_lists_commands():
    result = runner.invoke(app, ["--help"])
    assert result.exit_code == 0
    for cmd in ("run", "validate", "schema", "bench", "version"):
        assert cmd in result.stdout


def test_bad_flag_exits_2():
    proc = run_cli(["run", INVALID / "negative-rate.toml", "--no-such-flag"])
    assert proc.returncode == 2
    assert "Traceback" not in proc.stdout + proc.stderr


def test_bad_seed_exits_2():
    proc = run_cli(["run", INVALID / "negative-rate.toml", "--seed", "-1"])
    assert proc.returncode == 2
    assert "Traceback" not in proc.stderr


def test_run_missing_file_exits_1(tmp_path):
    missing = tmp_path / "nope.toml"
    proc = run_cli(["run", missing], cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stderr.startswith("error: ") and "nope.toml" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "results").exists()


def test_run_invalid_scenario_exits_1(tmp_path):
    bad = INVALID / "unknown-cc.toml"
    proc = run_cli(["run", bad, "--json"], cwd=tmp_path)
    assert proc.returncode == 1
    assert proc.stdout == ""
    assert f"{bad}: " in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not (tmp_path / "results").exists()


def test_bench_without_scenarios_is_a_clear_error(tmp_path, monkeypatch):
    import mobipath.bench as bench
    import mobipath.shipped

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(bench.provenance, "source_tree", lambda: None)

    def broken_install():
        raise mobipath.shipped.ShippedError("missing")

    monkeypatch.setattr(mobipath.shipped, "root", broken_install)
    result = runner.invoke(app, ["bench"])
    assert result.exit_code == 1
    assert "no benchmark scenarios" in result.output


def test_bench_reports_failed_scenario():
    bad = INVALID / "unknown-cc.toml"
    proc = run_cli(["bench", "--json", bad])
    assert proc.returncode == 1
    data = json.loads(proc.stdout)
    assert data["results"][0]["scenario"] == str(bad)
    assert "error" in data["results"][0]
    assert "Traceback" not in proc.stderr


def test_python_dash_m_entry_point():
    import subprocess

    proc = subprocess.run([sys.executable, "-m", "mobipath", "version"], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    assert proc.returncode == 0 and proc.stdout.startswith("mobipath ")
