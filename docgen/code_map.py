"""The "Source tree" page: every folder's README (what the folder owns, its rules and its tests),
gathered from the repository at build time so the page is the READMEs themselves."""

from __future__ import annotations

import re
from pathlib import Path

# Folders in reading order (the simulator first, then what builds on it); a README found in no
# listed folder goes after them, so a new one appears without editing this list.
ORDER = [
    "crates/sim",
    "crates/sim/src/engine",
    "crates/sim/src/link",
    "crates/sim/src/endpoint",
    "crates/sim/src/element",
    "crates/sim/src/mptcp",
    "crates/sim/src/mptcp/sched",
    "crates/sim/src/radio",
    "crates/sim/src/hst",
    "crates/sim/src/cell",
    "crates/sim/fuzz",
    "crates/hst",
    "crates/emu",
    "crates/proxy",
    "crates/py",
    "python/mobipath/emulate",
    "python/mobipath/router",
    "build-backend",
    "data/hsr-traces",
    "data/sample-ride",
    "tests/golden",
    "tests/python",
]
# Not folder maps: the front page, the PyPI readme, the package's copies of data/, the docs.
SKIP = ("README.md", "python/mobipath/README.md")
SKIP_PREFIXES = ("python/mobipath/share/", "docs/", "target/", ".venv", "site/")


def readmes(root: Path) -> list[str]:
    found = sorted(
        str(p.relative_to(root).parent)
        for p in root.rglob("README.md")
        if not str(p.relative_to(root)).startswith(SKIP_PREFIXES) and str(p.relative_to(root)) not in SKIP
    )
    listed = [d for d in ORDER if d in found]
    return listed + [d for d in found if d not in listed]


def demote(text: str, levels: int) -> str:
    """Markdown headings `levels` deeper (outside fenced code)."""
    out, fenced = [], False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and re.match(r"#{1,5} ", line):
            line = "#" * levels + line
        out.append(line)
    return "\n".join(out)


def unlink(text: str, folder: str) -> str:
    """Relative links of a README made plain text naming the repository path (they point into the
    repository, not to pages); links to web addresses stay."""

    def plain(m: re.Match) -> str:
        label, target = m.group(1), m.group(2)
        if "://" in target or target.startswith("#"):
            return m.group(0)
        path = f"{folder}/{target}".replace("/./", "/")
        return label if label.strip("`") == target else f"{label} (`{path}`)"

    return re.sub(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)", plain, text)


def render(root: Path) -> str:
    out = [
        "# Source tree",
        "",
        "Each folder's README, as in the repository: what the folder owns, the rules its code keeps "
        "and where its tests are. The map of how the parts fit together and the recipes for common "
        "changes are on [Architecture](architecture.md).",
        "",
    ]
    for folder in readmes(root):
        text = (root / folder / "README.md").read_text(encoding="utf-8")
        # The README's own title becomes the section's; its other headings sit below it.
        lines = text.splitlines()
        title = lines[0].lstrip("# ").strip() if lines and lines[0].startswith("# ") else folder
        body = "\n".join(lines[1:]) if lines and lines[0].startswith("# ") else text
        out += [f"## {title}", "", f"`{folder}/README.md`", "", demote(unlink(body, folder), 2), ""]
    return "\n".join(out)
