"""Every command's `--help` prints its help texts as written: square brackets ("[hst]",
"[default: all cores]") are text, not rich markup to be swallowed."""

from __future__ import annotations

import re
from collections.abc import Iterator

import pytest
import typer
from mobipath.cli import app
from typer.testing import CliRunner

runner = CliRunner()
BRACKETED = re.compile(r"\[[^\[\]]+\]")


def walk(cmd, path: tuple[str, ...] = ()) -> Iterator[tuple[tuple[str, ...], object]]:
    yield path, cmd
    for name, sub in sorted((getattr(cmd, "commands", None) or {}).items()):
        yield from walk(sub, path + (name,))


COMMANDS = list(walk(typer.main.get_command(app)))


def help_strings(cmd) -> list[str]:
    texts = [getattr(cmd, "help", None) or ""]
    texts += [getattr(p, "help", None) or "" for p in getattr(cmd, "params", [])]
    return [t for t in texts if t]


def normalized(text: str) -> str:
    """Whitespace collapsed and table borders dropped, so wrapping does not matter."""
    return " ".join(re.sub(r"[│╭╮╰╯─┃━]", " ", text).split())


def test_the_tree_has_every_command_group():
    names = {" ".join(p) for p, _ in COMMANDS}
    for expected in (
        "run",
        "plot",
        "examples",
        "hotable learn",
        "hotable learn-recorded",
        "reproduce p0",
        "reproduce p1",
        "router pha-d",
    ):
        assert expected in names, sorted(names)


@pytest.mark.parametrize("path", [p for p, _ in COMMANDS], ids=lambda p: " ".join(p) or "mobipath")
def test_help_keeps_bracketed_text(path):
    cmd = dict(COMMANDS)[path]
    r = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "100"}, terminal_width=100)
    assert r.exit_code == 0, r.output
    out = normalized(r.output)
    for text in help_strings(cmd):
        for bracketed in BRACKETED.findall(text):
            assert normalized(bracketed) in out, f"{' '.join(path)} --help lost {bracketed!r}:\n{r.output}"


def test_the_reported_cases():
    r = runner.invoke(app, ["hotable", "learn", "--help"])
    assert "Scenario with an [hst] section." in normalized(r.output)
    r = runner.invoke(app, ["reproduce", "p0", "--help"])
    assert "Worker processes [default: all cores]." in normalized(r.output)


#: A file a help text names: a path with a folder and one of the repository's file types.
FILE_REF = re.compile(r"(?<![\w/.-])((?:[\w.-]+/)+[\w.-]+\.(?:md|rs|toml|csv|py|json|nmea|trace))\b")


def test_help_names_only_files_an_installed_package_has():
    """An installed mobipath has no crates/ or docs/: a help text may name a file only if the
    package ships it (a shipped scenario or data file, found as the CLI finds it)."""
    from mobipath import shipped

    package = __import__("mobipath").__file__.rsplit("/", 1)[0]
    bad = []
    for path, _ in COMMANDS:
        r = runner.invoke(app, [*path, "--help"], env={"COLUMNS": "400"}, terminal_width=400)
        for ref in FILE_REF.findall(r.output):
            found = shipped.find(__import__("pathlib").Path(ref))
            if found is None and not __import__("os").path.exists(f"{package}/{ref}"):
                bad.append(f"mobipath {' '.join(path)} --help: {ref}")
    assert not bad, "\n".join(bad)
