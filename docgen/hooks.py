"""MkDocs hooks (mkdocs.yml `hooks:`): the pages generated at build time, so they cannot go stale.

- reference/scenario.md: every field of the scenario format, from the schema `mobipath schema`
  prints (docgen/scenario_ref.py);
- reference/cli.md: every command and option, from the `mobipath` command's definitions
  (docgen/cli_ref.py);
- code.md: every folder's README (docgen/code_map.py);
- contributing.md, architecture.md, changelog.md: CONTRIBUTING.md, ARCHITECTURE.md and
  CHANGELOG.md of the repository root, as they are.

They need an installed mobipath (`pip install '.[docs]'`): the schema and the command tree come
from the package itself.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from docgen import cli_ref, code_map, scenario_ref  # noqa: E402


def generated_pages() -> dict[str, str]:
    """Site path -> Markdown of every generated page."""
    from mobipath import api

    root_file = {
        "contributing.md": "CONTRIBUTING.md",
        "architecture.md": "ARCHITECTURE.md",
        "changelog.md": "CHANGELOG.md",
    }
    pages = {
        "reference/scenario.md": scenario_ref.render(api.schema()),
        "reference/cli.md": cli_ref.render(),
        "code.md": code_map.render(ROOT),
    }
    for page, name in root_file.items():
        pages[page] = site_links((ROOT / name).read_text(encoding="utf-8"), root_file)
    return pages


def site_links(text: str, root_file: dict[str, str]) -> str:
    """A root file's links as the site sees them: `docs/x.md` is the page `x.md`, a root file
    shown as a page is that page; other repository files become plain text."""
    pages_of = {name: page for page, name in root_file.items()}

    def link(m: re.Match) -> str:
        label, target = m.group(1), m.group(2)
        if "://" in target or target.startswith("#"):
            return m.group(0)
        if target.startswith("docs/"):
            return f"[{label}]({target[len('docs/') :]})"
        if target in pages_of:
            return f"[{label}]({pages_of[target]})"
        return label if label.strip("`") == target else f"{label} (`{target}`)"

    return re.sub(r"(?<!!)\[([^\]]+)\]\(([^)\s]+)\)", link, text)


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    for path, text in generated_pages().items():
        files.append(File.generated(config, path, content=text))
    return files
