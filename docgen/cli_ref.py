"""The command-line reference page, generated from the `mobipath` command's own definitions (the
typer app, through click's command tree), so every command, argument and option is listed with the
help text, default and range that `--help` prints."""

from __future__ import annotations

import re
from typing import Any


def tree() -> Any:
    """The click command behind `mobipath`."""
    import typer
    from mobipath.cli import app

    return typer.main.get_command(app)


def commands(root: Any = None) -> list[tuple[list[str], Any, Any]]:
    """(path, command, click context) of every command and group, depth first, names sorted."""
    import click

    root = root or tree()
    out: list[tuple[list[str], Any, Any]] = []

    def walk(cmd: Any, path: list[str], parent: Any) -> None:
        ctx = click.Context(cmd, info_name=path[-1], parent=parent, terminal_width=100, max_content_width=100)
        out.append((path, cmd, ctx))
        for name, sub in sorted((getattr(cmd, "commands", None) or {}).items()):
            if not getattr(sub, "hidden", False):
                walk(sub, path + [name], ctx)

    walk(root, ["mobipath"], None)
    return out


def anchor(path: list[str]) -> str:
    return "-".join(path)


def cell(text: str) -> str:
    """Help text in a table cell: one line, pipes and brackets escaped (option syntax such as
    `[,loss=PCT]` is text, not a Markdown link)."""
    parts = " ".join(text.split()).replace("|", "\\|").split("`")
    # Even pieces are text, odd ones code spans (shown as written, so never escaped).
    return "`".join(p if i % 2 else p.replace("[", "\\[").replace("]", "\\]") for i, p in enumerate(parts))


def render() -> str:
    out = [
        "# Command-line reference",
        "",
        "Every `mobipath` command with its arguments and options, generated from the command's own "
        "definitions: what `mobipath COMMAND --help` prints. Exit codes: 0 success; 1 an invalid "
        "scenario, an unreadable file or a failed run (`sweep`: the number of failed runs); 2 a bad "
        "command-line flag; 130 interrupted (Ctrl-C). Errors are one line per problem, naming the "
        "field or flag and the allowed range.",
        "",
    ]
    entries = commands()
    out += ["| Command | What it does |", "|---|---|"]
    for path, cmd, _ in entries[1:]:
        first = (cmd.help or "").strip().split("\n\n")[0]
        out.append(f"| [`{' '.join(path)}`](#{anchor(path)}) | {cell(first)} |")
    out.append("")
    for path, cmd, ctx in entries:
        level = "#" * min(len(path) + 1, 4)
        out += [f"{level} `{' '.join(path)}` {{#{anchor(path)}}}", ""]
        usage = cmd.get_usage(ctx).replace("Usage: ", "", 1)
        out += ["```text", usage, "```", ""]
        if cmd.help:
            out += [paragraphs(cmd.help), ""]
        subs = getattr(cmd, "commands", None)
        if subs:
            out += ["Commands: " + ", ".join(f"[`{n}`](#{anchor(path + [n])})" for n in sorted(subs)), ""]
        rows = params(cmd, ctx)
        if rows:
            out += ["| Argument or option | Description |", "|---|---|", *rows, ""]
    return "\n".join(out)


def paragraphs(text: str) -> str:
    """A help text's paragraphs as Markdown (click's "\\b" no-rewrap markers dropped, brackets
    escaped as in `cell`)."""
    parts = [p.replace("\b\n", "").strip() for p in text.strip().split("\n\n")]
    return "\n\n".join(cell(p) for p in parts if p)


def params(cmd: Any, ctx: Any) -> list[str]:
    rows = []
    for p in cmd.params:
        if getattr(p, "hidden", False):
            continue
        if p.param_type_name == "argument":
            name = (p.metavar or p.name or "").upper()
            help_text = getattr(p, "help", None) or ""
            if not p.required:
                name = f"[{name}]"
            if getattr(p, "nargs", 1) == -1:
                name += "..."
            rows.append(f"| `{name}` | {cell(help_text)} |")
            continue
        record = p.get_help_record(ctx)
        if record is None:
            continue
        flags, help_text = record
        rows.append(f"| `{flags}` | {cell(re.sub(r'  +', ' ', help_text))} |")
    return rows
