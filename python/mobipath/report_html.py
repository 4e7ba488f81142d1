"""report.html beside report.md: the same report as one self-contained page for a browser.

The Markdown is converted with markdown-it-py (CommonMark plus tables; the library rich already
depends on). The page needs nothing beside it: every figure the report shows is inlined as a
``data:`` URI, the style sheet is in the page, and a table of contents (the report's ``##`` and
``###`` headings) links to each section. Text and numbers are those of report.md, escaped as
HTML (raw HTML in the Markdown is shown as text, not interpreted).
"""

from __future__ import annotations

import base64
import html
import re
from pathlib import Path
from typing import Any

# Figure files a report may show, by suffix, and their media types.
IMAGE_TYPES = {".png": "image/png", ".svg": "image/svg+xml", ".jpg": "image/jpeg", ".jpeg": "image/jpeg"}

STYLE = """
:root { color-scheme: light; }
body { font: 15px/1.5 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: #1d2127;
       margin: 0; background: #fff; }
main { max-width: 1180px; margin: 0 auto; padding: 1.5rem 2rem 4rem; }
h1 { font-size: 1.7rem; margin: .5rem 0 1rem; }
h2 { font-size: 1.3rem; margin-top: 2.2rem; padding-bottom: .2rem; border-bottom: 1px solid #d8dee4; }
h3 { font-size: 1.1rem; margin-top: 1.6rem; }
a { color: #0b5cad; }
code { font: .9em ui-monospace, SFMono-Regular, Menlo, Consolas, monospace; background: #f2f4f7;
       padding: .05em .3em; border-radius: 3px; }
pre { background: #f2f4f7; padding: .7rem 1rem; overflow-x: auto; border-radius: 4px; }
pre code { background: none; padding: 0; }
.table { overflow-x: auto; margin: 1rem 0; }
table { border-collapse: collapse; font-size: .92em; }
th, td { border: 1px solid #d0d7de; padding: .3rem .6rem; vertical-align: top; }
th { background: #eef2f6; text-align: left; }
tbody tr:nth-child(even) { background: #f8fafc; }
td[style*="right"], th[style*="right"] { font-variant-numeric: tabular-nums; }
img { max-width: 100%; height: auto; border: 1px solid #e4e8ec; }
nav.toc { background: #f6f8fa; border: 1px solid #d8dee4; border-radius: 6px; padding: .6rem 1.2rem;
          margin: 1rem 0 1.5rem; }
nav.toc p { margin: .2rem 0 .4rem; font-weight: 600; }
nav.toc ul { margin: 0; padding-left: 1.2rem; }
nav.toc li { margin: .1rem 0; }
footer { color: #57606a; font-size: .85em; margin-top: 3rem; }
"""


def _parser() -> Any:
    from markdown_it import MarkdownIt

    # html=False: the report's text is shown as written, never interpreted as markup.
    return MarkdownIt("commonmark", {"html": False}).enable("table")


def _slug(text: str, taken: set[str]) -> str:
    """A heading's anchor: lower case, words joined by '-', unique on the page."""
    base = re.sub(r"[^\w]+", "-", text.lower(), flags=re.UNICODE).strip("-") or "section"
    slug, n = base, 2
    while slug in taken:
        slug, n = f"{base}-{n}", n + 1
    taken.add(slug)
    return slug


def _data_uri(path: Path) -> str:
    kind = IMAGE_TYPES[path.suffix.lower()]
    return f"data:{kind};base64," + base64.b64encode(path.read_bytes()).decode("ascii")


def render(markdown: str, base_dir: Path) -> str:
    """The report's Markdown as one HTML page; figures referenced by a relative path are read from
    `base_dir` and inlined (a figure that is missing there stays a relative link)."""
    md = _parser()
    tokens = md.parse(markdown)
    taken: set[str] = set()
    toc: list[tuple[int, str, str]] = []
    title = ""
    for i, tok in enumerate(tokens):
        if tok.type == "heading_open":
            text = "".join(c.content for c in (tokens[i + 1].children or []) if c.type in ("text", "code_inline"))
            slug = _slug(text, taken)
            tok.attrSet("id", slug)
            level = int(tok.tag[1])
            if level == 1 and not title:
                title = text
            elif level in (2, 3):
                toc.append((level, text, slug))
        if tok.type == "inline":
            for child in tok.children or []:
                if child.type != "image":
                    continue
                src = str(child.attrGet("src") or "")
                f = base_dir / src
                if "://" not in src and not src.startswith("data:") and f.suffix.lower() in IMAGE_TYPES and f.is_file():
                    child.attrSet("src", _data_uri(f))
    body = md.renderer.render(tokens, md.options, {})
    body = body.replace("<table>", '<div class="table"><table>').replace("</table>", "</table></div>")
    return _page(title or "mobipath report", _toc(toc), body)


def _toc(entries: list[tuple[int, str, str]]) -> str:
    if not entries:
        return ""
    out = ['<nav class="toc"><p>Contents</p><ul>']
    open_sub = False
    for level, text, slug in entries:
        link = f'<a href="#{slug}">{html.escape(text)}</a>'
        if level == 3:
            if not open_sub:
                out.append("<ul>")
                open_sub = True
            out.append(f"<li>{link}</li>")
            continue
        if open_sub:
            out.append("</ul>")
            open_sub = False
        out.append(f"<li>{link}</li>")
    if open_sub:
        out.append("</ul>")
    out.append("</ul></nav>")
    return "".join(out)


def _page(title: str, toc: str, body: str) -> str:
    # The table of contents goes after the report's title (the first <h1>), before its text.
    head, sep, rest = body.partition("</h1>\n")
    content = head + sep + toc + "\n" + rest if sep else toc + "\n" + body
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n<style>{STYLE}</style>\n</head>\n"
        f"<body>\n<main>\n{content}"
        "<footer>Written by mobipath from report.md in the same folder (same text and numbers; "
        "figures inlined).</footer>\n</main>\n</body>\n</html>\n"
    )


def write_html(report_md: Path) -> Path:
    """Writes report.html beside `report_md` (same stem) and returns its path."""
    out = report_md.with_suffix(".html")
    out.write_text(render(report_md.read_text(encoding="utf-8"), report_md.parent), encoding="utf-8")
    return out
