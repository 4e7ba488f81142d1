"""Checks of a generated report.html against its report.md (used where reports are generated:
test_golden_reports.py, test_report_html.py): the page stands alone, and it carries the same
numbers as the Markdown, each as often."""

from __future__ import annotations

import re
from collections import Counter
from html.parser import HTMLParser
from pathlib import Path

NUMBER = re.compile(r"\d+(?:\.\d+)?")


def md_numbers(markdown: str) -> Counter:
    """The numbers a reader sees in the Markdown: images' alt text and addresses and links'
    addresses are not text."""
    text = re.sub(r"!\[[^\]]*\]\([^)]*\)", " ", markdown)
    text = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", text)
    return Counter(NUMBER.findall(text))


class _Text(HTMLParser):
    """The page's visible report text: the body without the style sheet, the table of contents
    and the footer; an ordered list's item numbers included, as a browser shows them."""

    SKIP = {"style", "title", "nav", "footer", "head"}

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.parts: list[str] = []
        self.skip = 0
        self.lists: list[list[int]] = []  # [next number] per open <ol>, [] for <ul>

    def handle_starttag(self, tag: str, attrs: list) -> None:
        if tag in self.SKIP:
            self.skip += 1
        elif tag == "ol":
            self.lists.append([int(dict(attrs).get("start") or 1)])
        elif tag == "ul":
            self.lists.append([])
        elif tag == "li" and self.lists and self.lists[-1] and not self.skip:
            self.parts.append(f" {self.lists[-1][0]}. ")
            self.lists[-1][0] += 1

    def handle_endtag(self, tag: str) -> None:
        if tag in self.SKIP:
            self.skip -= 1
        elif tag in ("ol", "ul") and self.lists:
            self.lists.pop()

    def handle_data(self, data: str) -> None:
        if not self.skip:
            self.parts.append(data)


def html_text(html: str) -> str:
    parser = _Text()
    parser.feed(html)
    return " ".join(parser.parts)


def check_report_html(out: Path) -> None:
    """report.html beside report.md: self-contained (every image inlined, no file it needs beside
    it), a table of contents, and the same numbers as report.md."""
    md = (out / "report.md").read_text(encoding="utf-8")
    html = (out / "report.html").read_text(encoding="utf-8")
    srcs = re.findall(r'<img[^>]*\bsrc="([^"]*)"', html)
    assert len(srcs) == len(re.findall(r"!\[[^\]]*\]\(", md)), "every figure of report.md is in report.html"
    assert all(s.startswith("data:image/") for s in srcs), [s[:60] for s in srcs]
    assert not re.search(r'<link[^>]*rel="stylesheet"|<script[^>]*\bsrc=', html), "no external style or script"
    if md.count("\n## ") >= 2:
        assert '<nav class="toc">' in html and html.count('href="#') >= md.count("\n## ")
    want, got = md_numbers(md), Counter(NUMBER.findall(html_text(html)))
    missing, extra = want - got, got - want
    assert not missing and not extra, (
        f"{out}: numbers only in report.md: {dict(missing)}; only in report.html: {dict(extra)}"
    )
