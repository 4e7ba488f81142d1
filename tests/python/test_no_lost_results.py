"""Nothing finished is lost: results are written all or nothing (a full disk leaves what was
there, never a lone summary.json), a reproduction's report reaches its directory only whole, an
empty selection is an error, a finished report of another selection is not overwritten without
--fresh, and the counts a reproduction reports are of runs."""

from __future__ import annotations

import errno
import json
import re

import pytest
from conftest import run_cli, short_example

NO_SPACE = OSError(errno.ENOSPC, "No space left on device")


# --- one run's results ------------------------------------------------------------------------


def test_a_full_disk_leaves_no_lone_summary(tmp_path, monkeypatch):
    import mobipath
    from mobipath import results

    r = mobipath.run(short_example())
    out = tmp_path / "fresh"

    def full(path, text):
        if "provenance" in path:
            raise NO_SPACE
        with open(path, "w", encoding="utf-8") as f:
            f.write(text)

    monkeypatch.setattr(results, "_write_text", full)
    with pytest.raises(OSError, match="No space"):
        r.write(out)
    assert sorted(p.name for p in out.iterdir()) == [], "a failed write left files behind"
    # Over an earlier result: that one stays whole.
    monkeypatch.undo()
    old = tmp_path / "old"
    r.write(old)
    before = {p.name: p.read_bytes() for p in old.iterdir()}
    monkeypatch.setattr(results, "_write_text", full)
    r2 = mobipath.run(short_example(), seed=7)
    with pytest.raises(OSError):
        r2.write(old)
    assert {p.name: p.read_bytes() for p in old.iterdir()} == before


def test_a_full_disk_while_writing_the_time_series(tmp_path, monkeypatch):
    import mobipath
    from mobipath import results

    r = mobipath.run(short_example())
    real = results._write_text

    class Failing:
        def write_parquet(self, path):
            with open(path, "wb") as f:
                f.write(b"PAR1")  # part of a file, then the disk is full
            raise NO_SPACE

    object.__setattr__(r, "_ts_source", Failing())
    with pytest.raises(OSError):
        r.write(tmp_path / "o")
    assert list((tmp_path / "o").iterdir()) == []
    assert results._write_text is real


# --- a reproduction's report --------------------------------------------------------------------


def _fake_run(files: dict[str, str], fail_after: int | None = None):
    """An experiment's reproduce stand-in: writes `files` into the folder it is given (and a
    kept run), failing after `fail_after` files like a full disk."""

    def run(stage, bar):
        b = bar("runs", 2)
        (stage / "runs" / "kept.json").write_text("{}")
        b.advance()
        for i, (name, text) in enumerate(files.items()):
            if fail_after is not None and i == fail_after:
                raise NO_SPACE
            (stage / name).write_text(text)
        b.advance()
        return {"provenance": {"runs": 2, "wall_time_s": 0.1}}

    return run


def test_a_report_reaches_its_directory_whole_or_not_at_all(tmp_path):
    from mobipath.reproduce import SELECTION_FILE, _reproduce

    out = tmp_path / "r"
    sel = {"blocks": ["a", "b"], "seeds": 2, "quick": True}
    first = {"results.csv": "x\n1\n", "fig-a.png": "A", "fig-b.png": "B", "summary.json": "{}", "report.md": "# 1"}
    _reproduce(_fake_run(first), out, fresh=False, selection=sel)
    assert {p.name for p in out.iterdir()} == {*first, "runs", SELECTION_FILE}
    assert json.loads((out / SELECTION_FILE).read_text()) == {"selection": sel, "files": sorted(first)}
    before = {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()}
    # The same selection again, failing half way (a full disk): the first report is untouched.
    second = {"results.csv": "x\n2\n", "summary.json": '{"v": 2}', "report.md": "# 2"}
    with pytest.raises(OSError):
        _reproduce(_fake_run(second, fail_after=2), out, fresh=False, selection=sel)
    assert {p.name: p.read_bytes() for p in out.iterdir() if p.is_file()} == before
    assert not [p for p in out.iterdir() if p.name.startswith(".partial")], "the staging folder was left"
    assert (out / "runs" / "kept.json").is_file(), "a kept run was lost with the failed report"
    # --fresh with another selection replaces it, and the old report's other figures go with it.
    _reproduce(_fake_run(second), out, fresh=True, selection={**sel, "blocks": ["a"]})
    assert {p.name for p in out.iterdir()} == {*second, "runs", SELECTION_FILE}
    assert (out / "summary.json").read_text() == '{"v": 2}'


def test_an_empty_selection_is_an_error(tmp_path):
    for args in (
        ["p3", "--quick", "--blocks", ","],
        ["p3", "--quick", "--blocks", ""],
        ["p3", "--quick", "--blocks", "paper,paper"],
        ["p0", "--quick", "--schedulers", ",,"],
        ["p0", "--quick", "--variants", ","],
    ):
        out = tmp_path / "x"
        r = run_cli(["reproduce", *args, "--out", out], timeout=60)
        assert r.returncode == 2, (args, r.stderr)
        assert ("selects nothing" in r.stderr or "given twice" in r.stderr) and "Traceback" not in r.stderr, r.stderr
        assert not out.exists(), args


def test_a_finished_report_of_another_selection_is_kept_unless_fresh(tmp_path):
    """The reported case: `reproduce p3 --quick --blocks , -o r3` on a finished report printed
    "0 runs" and replaced report.md and results.csv. Another selection is refused before any run;
    the same selection resumes; --fresh replaces the report and removes its other figures."""
    from mobipath.experiments import p3

    out = tmp_path / "r3"
    out.mkdir()
    full = {"blocks": list(p3.BLOCKS), "seeds": 10, "quick": False}
    (out / "selection.json").write_text(json.dumps({"selection": full, "files": ["report.md", "old-fig.png"]}))
    (out / "report.md").write_text("the finished report\n")
    (out / "old-fig.png").write_text("a figure of a block the next run does not select")
    args = ["reproduce", "p3", "--quick", "--seeds", "1", "--blocks", "rtt", "--jobs", "2", "--out", out]
    r = run_cli(args, timeout=120)
    assert r.returncode == 1, r.stderr
    assert f"{out} holds a finished report of another selection" in r.stderr, r.stderr
    assert "blocks paper, det-duration" in r.stderr and "--fresh" in r.stderr, r.stderr
    assert (out / "report.md").read_text() == "the finished report\n" and not (out / "runs").exists()
    r = run_cli([*args, "--fresh"], timeout=300)
    assert r.returncode == 0, r.stderr
    assert "the finished report" not in (out / "report.md").read_text() and not (out / "old-fig.png").exists()
    assert json.loads((out / "selection.json").read_text())["selection"] == {
        "blocks": ["rtt"],
        "seeds": 1,
        "quick": True,
    }
    # The same selection again: every run reused, and the count says so exactly.
    r = run_cli(args, timeout=300)
    assert r.returncode == 0, r.stderr
    m = re.search(r"(\d+) runs \((\d+) reused\)", r.stderr)
    assert m and m.group(1) == m.group(2), r.stderr


def test_reused_counts_runs_only(tmp_path):
    """A resumed reproduction printed "1818 runs (1819 reused)": the learned handover table,
    kept in the same cache, was counted as a reused run."""
    from mobipath.experiments.common import RunCache, run_all

    cache = RunCache(tmp_path)
    cache.put("a table", "operator,start_m,end_m,count\n")
    for k in range(3):
        cache.put(f"run {k}", k)
    assert cache.get("a table") is not None  # read back, as p0 and p3 do before their runs
    results, _ = run_all(list(range(3)), str, lambda k: (k,), 1, cache=cache, describe=lambda k: f"run {k}")
    assert results == {0: 0, 1: 1, 2: 2} and cache.reused == 3
