"""Words about how mobipath was developed, which must not appear in what ships or what a user
reads (README, docs, code comments and docstrings, CLI help, generated reports): history lives in
git and CHANGELOG.md. Used by test_product_words.py (tracked files) and by the tests that
generate reports (test_golden_reports.py, test_report_html.py).

Each pattern names one kind of development-history reference. They are written so that the same
words in their product meaning pass: a TCP or gpsd "session", a "known issue", a GitHub URL
(".../issues/12"), ns-3's "helper/lte-helper.cc", a "brief outage". ALLOWED lists the few
remaining phrases that match a pattern but are product text, each with the file it is in and why.
"""

from __future__ import annotations

import re

PATTERNS: dict[str, str] = {
    # "session 9", "sessions 7-11", "session-8"
    "numbered session": r"\bsessions?[ -]\d",
    # "this session", "an earlier session's", "helper sessions"
    "a session of work": r"\b(?:this|that|earlier|previous|next|later|helper|other|each|whose)\s+sessions?\b",
    # "issue 17", "issues 3, 20", "issue #5" (a URL's "issues/12" has a slash, not a space)
    "tracker number": r"\bissues?\s*#?\d+",
    # "the reading", "this issue asks"
    "the tracker's issue": r"\b(?:the|this|that)\s+issue(?:'s)?\b",
    "tracker": r"\b(?:issue\s+tracker|tracker\s+(?:issue|number)s?)\b",
    # "a helper's review", "helper session" (a helper function is fine)
    "helper (a person)": r"\bhelper(?:'s|s'|\s+sessions?)\b",
    "reviewer": r"\breviewers?\b|\b(?:a|the)\s+review's\b",
    # "per the brief", "as the brief asks" (a brief outage is fine)
    "brief": r"\b(?:per|as|in|by)\s+the\s+brief\b|\bthe\s+brief\s+(?:asks|says|names|wants)\b|\bbriefs\b",
    "ticket": r"\btickets?\b",
    "work period": r"\bwork\s+periods?\b",
}
COMPILED = {name: re.compile(rx, re.IGNORECASE) for name, rx in PATTERNS.items()}

# (file, phrase): product text that matches a pattern. The phrase is a regular expression that must
# match the whole hit's surroundings on that line.
ALLOWED: list[tuple[str, str]] = []


def findings(text: str, path: str = "") -> list[tuple[int, str, str]]:
    """(line number, pattern name, line) for each line of `text` with a development-history word,
    except the ALLOWED phrases of `path`."""
    allowed = [re.compile(rx, re.IGNORECASE) for f, rx in ALLOWED if f == path]
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        for name, rx in COMPILED.items():
            if rx.search(line) and not any(a.search(line) for a in allowed):
                out.append((n, name, line.strip()))
                break
    return out
