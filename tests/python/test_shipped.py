"""Files shipped inside the package (mobipath.shipped) and the commands that use them from outside
the repository: `mobipath examples`, scenario/data arguments named as in the docs, `reproduce p0`
and `bench` without a checkout."""

from __future__ import annotations

import subprocess

from conftest import ROOT, run_cli
from mobipath import shipped


def repository_files():
    out = subprocess.run(
        ["git", "-C", str(ROOT), "ls-files", "--cached", "--others", "--exclude-standard", "scenarios", "data"],
        stdout=subprocess.PIPE,
        text=True,
        check=True,
    ).stdout.split()
    return sorted(p for p in out if (ROOT / p).is_file())


def test_the_package_ships_every_scenario_and_data_file():
    """python/mobipath/share mirrors scenarios/ and data/ (run scripts/sync-package-data after
    adding or removing a file there)."""
    shipped_files = [str(p) for p in shipped.files()]
    repo = repository_files()
    assert shipped_files == repo, (
        f"run scripts/sync-package-data: missing from the package {sorted(set(repo) - set(shipped_files))}, "
        f"extra {sorted(set(shipped_files) - set(repo))}"
    )
    for rel in (
        "scenarios/p0/hst-minrtt.toml",
        "scenarios/p0/table.csv",
        "scenarios/examples/single-cubic.toml",
        "scenarios/bench/cubic-100mbps-60s.toml",
        "data/hsr-traces/LICENSE",
    ):
        assert (shipped.root() / rel).read_bytes() == (ROOT / rel).read_bytes(), rel


def test_find_resolves_documented_names_only_when_absent(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    assert (
        shipped.find("scenarios/examples/single-cubic.toml") == shipped.root() / "scenarios/examples/single-cubic.toml"
    )
    assert shipped.find("examples/single-cubic.toml") == shipped.root() / "scenarios/examples/single-cubic.toml"
    assert shipped.find("data/hsr-traces/LICENSE") == shipped.root() / "data/hsr-traces/LICENSE"
    for name in ("nope.toml", "", "../scenarios/examples/single-cubic.toml", str(ROOT / "nope.toml")):
        assert shipped.find(name) is None, name
    own = tmp_path / "scenarios" / "examples" / "single-cubic.toml"
    own.parent.mkdir(parents=True)
    own.write_text("# mine\n")
    assert shipped.find("scenarios/examples/single-cubic.toml") is None  # a user's own file wins


def test_examples_copies_a_tree_whose_relative_paths_work(installed):
    cmd, env, work = installed
    dest = work / "ex"
    r = run_cli(["examples", dest], command=cmd, env=env, cwd=work)
    assert r.returncode == 0, r.stderr
    assert (dest / "scenarios/examples/single-cubic.toml").is_file() and (dest / "data/hsr-traces/LICENSE").is_file()
    # The trace scenario names its trace by a relative path (../../data/...): it must run from the copy.
    r = run_cli(["run", "scenarios/examples/file-over-trace.toml", "--out", "r", "-q"], command=cmd, env=env, cwd=dest)
    assert r.returncode == 0, r.stderr
    assert (dest / "r/summary.json").is_file() and "note:" not in r.stderr
    # A second copy changes nothing; an edited file is kept unless --force.
    r = run_cli(["examples", dest], command=cmd, env=env, cwd=work)
    assert r.returncode == 0 and "0 files copied" in r.stdout, r.stdout
    edited = dest / "scenarios/examples/single-cubic.toml"
    edited.write_text(edited.read_text() + "# edited\n")
    r = run_cli(["examples", dest], command=cmd, env=env, cwd=work)
    assert r.returncode == 1 and "--force" in r.stderr and edited.read_text().endswith("# edited\n")
    r = run_cli(["examples", dest, "--force"], command=cmd, env=env, cwd=work)
    assert r.returncode == 0 and not edited.read_text().endswith("# edited\n")


def test_documented_scenario_paths_work_from_any_directory(installed):
    cmd, env, work = installed
    r = run_cli(
        ["validate", "scenarios/examples/single-cubic.toml", "examples/mptcp-two-paths.toml"],
        command=cmd,
        env=env,
        cwd=work,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert "scenarios/examples/single-cubic.toml: ok" in r.stdout and "examples/mptcp-two-paths.toml: ok" in r.stdout
    assert "using the copy shipped with mobipath" in r.stderr
    r = run_cli(
        ["run", "scenarios/examples/file-over-trace.toml", "--out", "trace", "--json"], command=cmd, env=env, cwd=work
    )
    assert r.returncode == 0, r.stderr
    assert (work / "trace/summary.json").is_file()
    r = run_cli(["validate", "scenarios/examples/no-such.toml"], command=cmd, env=env, cwd=work)
    assert r.returncode == 1 and "cannot read" in r.stdout


def test_reproduce_p0_and_bench_run_outside_the_repository(installed):
    """After `pip install .`, `reproduce p0` looked for its base scenario next to site-packages."""
    cmd, env, work = installed
    r = run_cli(
        [
            "reproduce",
            "p0",
            "--quick",
            "--seeds",
            "1",
            "--profile",
            "paper",
            "--schedulers",
            "minrtt",
            "--table-runs",
            "2",
            "--jobs",
            "2",
            "--out",
            "p0",
        ],
        command=cmd,
        env=env,
        cwd=work,
        timeout=300,
    )
    assert r.returncode == 0, r.stderr
    assert (work / "p0/report.md").is_file()
    r = run_cli(["bench", "--quick", "--json"], command=cmd, env=env, cwd=work, timeout=300)
    assert r.returncode == 0, r.stderr
    assert '"results"' in r.stdout


def test_run_refuses_an_empty_out_dir(installed):
    """`--out ""` used to write the results into the current directory."""
    cmd, env, work = installed
    d = work / "empty-out"
    d.mkdir()
    r = run_cli(["run", "scenarios/examples/single-cubic.toml", "--out", ""], command=cmd, env=env, cwd=d)
    assert r.returncode == 2 and "--out" in r.stderr and "empty" in r.stderr, r.stderr
    assert list(d.iterdir()) == []


# Golden scenarios the installed command re-runs: one per kind of model (single-path TCP, an
# LTE cell, MPTCP at 2 and 8 subflows, a train with handovers, handoff notification).
GOLDEN_RERUN = (
    "bench/cubic-100mbps-60s",
    "bench/lte-p4-20ue-60s",
    "bench/mptcp-lia-minrtt-2x25mbps-70s",
    "bench/mptcp-lia-minrtt-8x25mbps-70s",
    "p0/hst-pha-minrtt",
    "p3/ehn",
)


def test_the_installed_core_reproduces_the_golden_summaries(installed):
    """A wheel's core is built profile-guided (build-backend/): laid out differently, it must
    compute exactly the same. Under scripts/check-install this runs the installed wheel."""
    import json

    cmd, env, work = installed
    for name in GOLDEN_RERUN:
        golden = json.loads((ROOT / "tests/golden/sim/scenarios" / name / "seed1.json").read_text())["summary"]
        r = run_cli(
            ["run", f"scenarios/{name}.toml", "--seed", "1", "--json", "-q", "--out", work / name],
            cwd=work,
            command=cmd,
            env=env,
        )
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout) == golden, f"{name}: the installed core's summary differs from the golden file"
