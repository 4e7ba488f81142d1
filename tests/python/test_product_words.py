"""mobipath speaks of itself: no tracked file that ships or that a user reads carries words of how
it was developed (numbered sessions, tracker issues, helpers, reviewers, briefs, tickets, work
periods; product_words.py has the patterns and their allow-list). History lives in git and
CHANGELOG.md. Generated reports are checked where they are generated (test_golden_reports.py)."""

from __future__ import annotations

import subprocess

import pytest
from conftest import ROOT
from product_words import findings

# Test code may name what it guards against; the changelog is where history belongs; lock files
# and the fuzz corpus are not prose.
EXCLUDED_PREFIXES = ("tests/", "crates/sim/fuzz/corpus/", "CHANGELOG.md")
EXCLUDED_SUFFIXES = (".lock", ".parquet", ".png", ".svg", ".trace", ".csv", ".json")


def excluded(path: str) -> bool:
    parts = path.split("/")
    in_crate_tests = len(parts) > 2 and parts[0] == "crates" and "tests" in parts[1:-1]
    return path.startswith(EXCLUDED_PREFIXES) or path.endswith(EXCLUDED_SUFFIXES) or in_crate_tests


def tracked() -> list[str]:
    r = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True)
    if r.returncode != 0:
        pytest.skip("not a git checkout")
    return [p for p in r.stdout.decode().split("\0") if p and not excluded(p)]


def test_no_development_history_in_tracked_files():
    bad = []
    files = tracked()
    assert len(files) > 100, files
    for path in files:
        f = ROOT / path
        if not f.is_file() or f.stat().st_size > 2_000_000:
            continue
        try:
            text = f.read_text(encoding="utf-8")
        except UnicodeDecodeError:
            continue
        bad += [f"{path}:{n}: [{name}] {line[:160]}" for n, name, line in findings(text, path)]
    assert not bad, "development-history words in shipped text (say the reason instead):\n" + "\n".join(bad)


@pytest.mark.parametrize(
    "text",
    [
        "measured in session 9, after ACK on read",
        "sessions 7–11 reworked the loop",
        "the session-8 mechanisms",
        "built this session",
        "an earlier session's table",
        "blocked (issue 19, on the bar itself)",
        "issues 3, 20",
        "as in the issue's reading",
        "a helper's review found it",
        "a helper session building beside it",
        "reviewers asked for it",
        "pf subflows are excluded as the brief asks",
        "per the brief",
        "see ticket 12",
        "in the third work period",
    ],
)
def test_patterns_catch_history(text):
    assert findings(text), text


@pytest.mark.parametrize(
    "text",
    [
        "after --max-retries failed gpsd sessions in a row",
        "PHA-D's session loop restores every endpoint",
        "a TCP session between the proxies",
        "known_issue(text) skips inputs with a known issue",
        "see https://github.com/example/project/issues/12",
        "helper/lte-helper.cc of ns-3-dev",
        "one helper function computes the CI",
        "a brief outage of 40 ms",
        "the handover's issue of a command",
    ],
)
def test_patterns_pass_product_words(text):
    assert not findings(text), findings(text)
