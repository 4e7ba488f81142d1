"""report.html, the browser form of a reproduction's report.md (mobipath/report_html.py): one
self-contained page with the figures inlined, styled tables and a table of contents, carrying the
same numbers as report.md; and it renders in a real browser (headless Chromium) to a page that is
not blank."""

from __future__ import annotations

import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from mobipath.report_html import render, write_html
from report_checks import check_report_html, html_text, md_numbers

BROWSERS = ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable")
# .ci/run installs Chromium and sets this, so CI cannot skip the rendering test.
REQUIRE_BROWSER = os.environ.get("MOBIPATH_REQUIRE_CHROMIUM") == "1"


def figure(path: Path) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(4, 2.5))
    ax.plot([0, 1, 2, 3], [3, 1, 4, 1], color="tab:blue", linewidth=3)
    fig.savefig(path, dpi=80)
    plt.close(fig)


SAMPLE = """# P9 reproduction: a sample

Setup: 2 paths of 25 Mbit/s, 10 seeds.

## Results (10 seeds)

| scheme | goodput (Mbit/s) | ratio |
|---|---:|---:|
| plain | 21.53 ± 0.27 | 1.000 |
| PHA | 23.68 ± 0.04 | 1.100 (+10.0 %) |

![Fig. 6](fig6.png)

1. first finding, 3 of 4 seeds
2. second finding

## Where mobipath differs from the paper, and why

- `rcvbuf_optimisation = false` runs 12 % faster; x < y & z > 2.
"""


@pytest.fixture
def sample(tmp_path: Path) -> Path:
    figure(tmp_path / "fig6.png")
    (tmp_path / "report.md").write_text(SAMPLE, encoding="utf-8")
    write_html(tmp_path / "report.md")
    return tmp_path


def test_page_is_self_contained_with_a_contents_and_styled_tables(sample):
    html = (sample / "report.html").read_text(encoding="utf-8")
    assert "<title>P9 reproduction: a sample</title>" in html
    assert re.search(r'<img src="data:image/png;base64,[A-Za-z0-9+/=]{200,}" alt="Fig. 6"', html)
    assert "fig6.png" not in html
    assert '<div class="table"><table>' in html and "<style>" in html
    # the contents link to the headings' anchors
    for anchor in re.findall(r'<nav class="toc">.*?</nav>', html, flags=re.S)[0].split('href="#')[1:]:
        assert f'id="{anchor.split(chr(34))[0]}"' in html
    assert "x &lt; y &amp; z &gt; 2" in html  # text is escaped, never interpreted
    check_report_html(sample)


def test_numbers_check_fails_when_the_page_loses_a_row(sample):
    html = (sample / "report.html").read_text(encoding="utf-8")
    row = re.search(r"<tr>\s*<td>PHA</td>.*?</tr>", html, flags=re.S)
    assert row
    (sample / "report.html").write_text(html.replace(row.group(0), ""), encoding="utf-8")
    with pytest.raises(AssertionError, match="only in report.md"):
        check_report_html(sample)


def test_ordered_lists_keep_their_numbers():
    md = "Intro 7.\n\n3. third\n4. fourth\n"
    assert md_numbers(md) == md_numbers(html_text(render(md, Path("."))).replace(". ", " "))


def browser() -> str:
    for name in BROWSERS:
        found = shutil.which(name)
        if found:
            return found
    if REQUIRE_BROWSER:
        pytest.fail(f"no browser found ({', '.join(BROWSERS)}), and MOBIPATH_REQUIRE_CHROMIUM=1")
    pytest.skip("no Chromium on this machine (.ci/run installs it)")


def test_reproduced_report_renders_in_headless_chromium(quick_report, tmp_path):
    """P3's quick report as a browser shows it: the screenshot has the page's text and figures,
    not a blank or an error page."""
    exe = browser()
    out = quick_report("p3-quick")
    check_report_html(out)
    shot = tmp_path / "shot.png"
    cmd = [
        exe,
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        f"--user-data-dir={tmp_path / 'profile'}",
        "--window-size=1200,1600",
        f"--screenshot={shot}",
        (out / "report.html").as_uri(),
    ]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL)
    assert r.returncode == 0 and shot.is_file(), r.stderr[-2000:]
    import matplotlib.image

    px = matplotlib.image.imread(str(shot))[..., :3]
    # Blank: one colour everywhere. The report has dark text on white, coloured figures and
    # shaded table headers: far more than 1 % of the pixels differ from the background.
    background = px[0, 0]
    differs = (abs(px - background).sum(axis=2) > 0.1).mean()
    assert differs > 0.01, f"only {differs:.2%} of the screenshot differs from its background"
    assert px.std() > 0.05, "the screenshot is nearly uniform"
