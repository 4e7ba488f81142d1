"""The documentation site's generated reference pages (docgen/): the scenario-format page lists
every field the scenario schema has, and only those; the command-line page lists every command;
and every command is also described in a hand-written page or the README, so a user finds it
explained, not only listed. (`mkdocs build --strict`, run by scripts/test, checks the site's
links and navigation.)"""

from __future__ import annotations

import re
import sys
from typing import Any

from conftest import ROOT

sys.path.insert(0, str(ROOT))

import mobipath  # noqa: E402

from docgen import cli_ref, scenario_ref  # noqa: E402


def schema_fields(schema: dict[str, Any]) -> set[str]:
    """Every field of the schema as `path.field` (`[]` after an array of tables), walked here
    independently of the generator: through `$ref`, `allOf`, `anyOf` and every variant of a
    `oneOf`."""
    defs = schema.get("definitions") or schema.get("$defs") or {}
    out: set[str] = set()

    def tables(node: dict[str, Any]) -> list[dict[str, Any]]:
        """The object schemas a value may be (none for a scalar)."""
        if "$ref" in node:
            return tables(defs[node["$ref"].rsplit("/", 1)[-1]])
        found: list[dict[str, Any]] = []
        for key in ("allOf", "anyOf", "oneOf"):
            for alt in node.get(key, []):
                found += tables(alt)
        if node.get("type") == "object" or "properties" in node:
            found.append(node)
        return found

    def walk(path: str, node: dict[str, Any], depth: int) -> None:
        assert depth < 12, f"{path}: the schema nests deeper than any scenario table"
        for table in tables(node):
            for field, prop in (table.get("properties") or {}).items():
                out.add(f"{path}.{field}" if path else field)
                sub = f"{path}.{field}" if path else field
                items = prop.get("items")
                is_array = prop.get("type") == "array" or (
                    isinstance(prop.get("type"), list) and "array" in prop["type"]
                )
                if is_array and isinstance(items, dict):
                    walk(sub + "[]", items, depth + 1)
                else:
                    walk(sub, prop, depth + 1)

    walk("", schema, 0)
    return out


def test_scenario_reference_lists_every_schema_field():
    schema = mobipath.schema()
    want = schema_fields(schema)
    got = scenario_ref.field_paths(scenario_ref.render(schema))
    assert len(want) > 200, len(want)
    assert not want - got, f"fields of the schema missing from the reference page: {sorted(want - got)}"
    assert not got - want, f"fields on the reference page the schema does not have: {sorted(got - want)}"


def test_scenario_reference_gives_units_ranges_and_defaults():
    page = scenario_ref.render(mobipath.schema())
    # (brackets in ranges are escaped in the Markdown, so they show as text)
    assert re.search(r"\| `delay_ms` \| number \| ms \| \\\[0, 3600000\\\] \| \*required\* \|", page)
    assert re.search(r"\| `bin_ms` \| number \| ms \| \\\[1, 60000\\\] \| `100\.0` \|", page)
    assert '`model = "gilbert-elliott"`' in page  # a union's kinds each get their fields


def test_walker_sees_a_field_added_to_the_schema():
    """The comparison above can fail: a field the generator never shows is found missing."""
    schema = mobipath.schema()
    link = schema["definitions"]["LinkConfig"]
    extended = {**schema, "definitions": {**schema["definitions"]}}
    extended["definitions"]["LinkConfig"] = {
        **link,
        "properties": {**link["properties"], "jitter_ms": {"type": "number"}},
    }
    assert "links[].jitter_ms" in schema_fields(extended)
    assert "links[].jitter_ms" not in scenario_ref.field_paths(scenario_ref.render(schema))
    assert "links[].jitter_ms" in scenario_ref.field_paths(scenario_ref.render(extended))


def command_paths() -> list[str]:
    return [" ".join(path) for path, _, _ in cli_ref.commands()[1:]]


def test_cli_reference_lists_every_command_and_option():
    page = cli_ref.render()
    for path, cmd, _ in cli_ref.commands():
        name = " ".join(path)
        assert f"`{name}` {{#{cli_ref.anchor(path)}}}" in page, name
        for p in cmd.params:
            if p.param_type_name == "option" and not getattr(p, "hidden", False):
                assert any(o in page for o in p.opts), f"{name}: {p.opts}"


def test_every_command_is_described_in_a_page():
    """Each command appears, by its full name, in a hand-written page or the README (an alias
    of `reproduce pN` by its name beside it)."""
    text = "\n".join(
        f.read_text(encoding="utf-8") for f in [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
    )
    text = " ".join(text.split())
    missing = []
    for name in command_paths():
        words = name.split()
        alias = len(words) == 3 and words[1] == "reproduce" and not re.fullmatch(r"p\d", words[2])
        described = re.search(rf"`{re.escape(name)}(?:[ `]|$)", text) is not None
        # A study of its own (not pN) described by its name counts as described too.
        if not (described or (alias and f"alias `{words[2]}`" in text)):
            missing.append(name)
    assert not missing, f"commands no page describes: {missing}"
