"""The scenario-format reference page, generated from the scenario JSON Schema (`mobipath schema`,
written by the simulator's schemars derive), so it lists exactly the fields the loader accepts.

One section per table of the format, named by its dotted path as overrides and error messages
name fields (``links[].loss``: ``[]`` marks an array of tables); a table that is one of several
kinds (``loss``: ``model = "bernoulli"`` or ``"gilbert-elliott"``) gets a subsection per kind.
Each field: its type, unit (from the name's suffix, the format's convention), range (the schema's
bounds, else the one its description states), default (or *required*) and description.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional

# A field's unit, from its name's suffix (the format's naming convention).
UNITS = [
    ("_mbps", "Mbit/s"),
    ("_kbps", "kbit/s"),
    ("_ms", "ms"),
    ("_us", "µs"),
    ("_s", "s"),
    ("_bytes", "bytes"),
    ("_packets", "packets"),
    ("_segments", "segments"),
    ("_dbm", "dBm"),
    ("_db", "dB"),
    ("_mhz", "MHz"),
    ("_kmh", "km/h"),
    ("_m", "m"),
    ("_pct", "%"),
]
# A range stated in a description: "in [0, 1]", "in (0, 100000]", "(>= 1)", "(> 0)".
RANGE_TEXT = re.compile(
    r"\bin\s+[\[(]\s*[-+]?[\d.][\d.e+_ ]*,\s*[-+]?[\d.∞][\d.e+_ ]*[\])]|\((?:>=|>|≥)\s*[-+]?\d[\d.e+_]*\)"
)


class Walker:
    def __init__(self, schema: dict[str, Any]):
        self.schema = schema
        self.defs: dict[str, Any] = schema.get("definitions") or schema.get("$defs") or {}
        self.sections: list[tuple[str, str, Any]] = []  # (path, definition name, schema)
        self.seen: dict[str, str] = {}  # definition name -> the path it is described at
        self.paths: dict[str, list[str]] = {}  # definition name -> every path it is used at

    def resolve(self, node: dict[str, Any]) -> tuple[Optional[str], dict[str, Any]]:
        """(definition name, schema) of a $ref, or (None, node)."""
        ref = node.get("$ref")
        if ref:
            name = ref.rsplit("/", 1)[-1]
            return name, self.defs[name]
        return None, node

    def unwrap(self, node: dict[str, Any]) -> tuple[dict[str, Any], bool, bool]:
        """The value schema of a property: (schema, is an array of it, optional (may be null))."""
        optional = False
        if "allOf" in node and len(node["allOf"]) == 1:
            node = node["allOf"][0]
        if "anyOf" in node:
            alts = [a for a in node["anyOf"] if a.get("type") != "null"]
            optional = len(alts) < len(node["anyOf"])
            if len(alts) == 1:
                node = alts[0]
        types = node.get("type")
        if isinstance(types, list) and "null" in types:
            optional = True
            rest = [t for t in types if t != "null"]
            node = {**node, "type": rest[0] if len(rest) == 1 else rest}
        if node.get("type") == "array" and isinstance(node.get("items"), dict):
            return node["items"], True, optional
        return node, False, optional

    def table_of(self, node: dict[str, Any]) -> tuple[Optional[str], Optional[dict[str, Any]]]:
        """The definition a value refers to when it is a table (an object or a union of objects)."""
        if "allOf" in node and len(node["allOf"]) == 1:
            node = node["allOf"][0]
        name, target = self.resolve(node)
        if is_table(target):
            return name, target
        if "anyOf" in target:  # e.g. a bare name or a table of parameters
            for alt in target["anyOf"]:
                n, t = self.table_of(alt)
                if t is not None:
                    return n, t
        return None, None

    def walk(self, path: str, name: str, node: dict[str, Any]) -> None:
        """Every table reachable from `node`, breadth first, so that a table used in several places
        is described where it is shallowest (the others say "also at")."""
        queue = [(path, name, node)]
        while queue:
            path, name, node = queue.pop(0)
            self.paths.setdefault(name, []).append(path)
            first = name not in self.seen
            if first:
                self.seen[name] = path
                self.sections.append((path, name, node))
            # A table described elsewhere is still walked, so the tables inside it record this
            # path too ("also at"); the format has no recursive tables (the depth bounds it).
            if path.count(".") > 12:
                raise ValueError(f"{path}: the schema nests deeper than a scenario can")
            for variant in variants(node):
                for field, prop in sorted((variant.get("properties") or {}).items()):
                    value, is_array, _ = self.unwrap(prop)
                    sub, target = self.table_of(value)
                    if target is not None and sub is not None:
                        queue.append((join(path, field) + ("[]" if is_array else ""), sub, target))
        self.sections.sort(key=lambda s: s[0])


def is_table(node: dict[str, Any]) -> bool:
    if node.get("type") == "object" and "properties" in node:
        return True
    return "oneOf" in node and all(v.get("type") == "object" for v in node["oneOf"])


def variants(node: dict[str, Any]) -> list[dict[str, Any]]:
    return node.get("oneOf", [node])


def tag_of(variant: dict[str, Any]) -> Optional[tuple[str, str]]:
    """The field whose single allowed value names a variant of a union (`model = "bernoulli"`)."""
    for field, prop in (variant.get("properties") or {}).items():
        enum = prop.get("enum")
        if prop.get("type") == "string" and isinstance(enum, list) and len(enum) == 1:
            return field, enum[0]
    return None


def join(path: str, field: str) -> str:
    return f"{path}.{field}" if path else field


def anchor(path: str) -> str:
    return "top-level" if not path else re.sub(r"[^a-z0-9]+", "-", path.lower()).strip("-")


def unit_of(field: str) -> str:
    for suffix, unit in UNITS:
        if field.endswith(suffix):
            return unit
    return ""


def range_of(node: dict[str, Any], description: str) -> str:
    lo, hi = node.get("minimum"), node.get("maximum")
    xlo, xhi = node.get("exclusiveMinimum"), node.get("exclusiveMaximum")
    stated = RANGE_TEXT.findall(description)
    if stated:
        return ", ".join(s[2:].strip() if s.startswith("in") else s.strip()[1:-1] for s in stated)
    if lo is None and hi is None and xlo is None and xhi is None:
        return ""
    left = f"({num(xlo)}" if xlo is not None else (f"[{num(lo)}" if lo is not None else "(−∞")
    right = f"{num(xhi)})" if xhi is not None else (f"{num(hi)}]" if hi is not None else "∞)")
    return f"{left}, {right}"


def num(x: float) -> str:
    return f"{x:g}" if isinstance(x, float) else str(x)


def cell(text: str) -> str:
    """Text in a table cell: one line, pipes escaped."""
    return " ".join(text.split()).replace("|", "\\|")


def prose(text: str) -> str:
    """A description from the schema as table text: brackets escaped, so ranges (`[0, 1]`) and
    the source's cross-references (`[`Name`]`) stay text instead of Markdown links."""
    parts = cell(text).split("`")
    # Even pieces are text, odd ones code spans (shown as written, so never escaped).
    return "`".join(p if i % 2 else p.replace("[", "\\[").replace("]", "\\]") for i, p in enumerate(parts))


def value(v: Any) -> str:
    return "`" + json.dumps(v, ensure_ascii=False) + "`"


class Page:
    def __init__(self, schema: dict[str, Any]):
        self.w = Walker(schema)
        self.w.walk("", "ScenarioFile", schema)

    def type_text(self, prop: dict[str, Any]) -> str:
        node, is_array, optional = self.w.unwrap(prop)
        name, target = self.w.table_of(node)
        if target is not None and name is not None:
            path = self.w.seen[name]
            kinds = [t for t in (tag_of(v) for v in variants(target)) if t]
            text = f"[table](#{anchor(path)})" + (" (one of several kinds)" if len(kinds) > 1 else "")
            if "anyOf" in (self.w.resolve(node)[1]):
                text = "name or " + text
        else:
            text = self.scalar(node)
        if is_array:
            text = f"array of {text}"
        return text + (", optional" if optional else "")

    def scalar(self, node: dict[str, Any]) -> str:
        name, node = self.w.resolve(node)
        if "enum" in node:
            return "one of " + ", ".join(value(v) for v in node["enum"])
        if "oneOf" in node and all("enum" in v or "const" in v for v in node["oneOf"]):
            vals = [v.get("const", (v.get("enum") or [None])[0]) for v in node["oneOf"]]
            return "one of " + ", ".join(value(v) for v in vals)
        if "anyOf" in node:
            return " or ".join(self.scalar(a) for a in node["anyOf"] if a.get("type") != "null")
        t = node.get("type", "any")
        if isinstance(t, list):
            t = " or ".join(t)
        return {"number": "number", "integer": "integer", "string": "string", "boolean": "boolean"}.get(t, t)

    def table(self, variant: dict[str, Any], skip: Optional[str]) -> list[str]:
        required = set(variant.get("required") or [])
        rows = ["| Field | Type | Unit | Range | Default | Description |", "|---|---|---|---|---|---|"]
        props = sorted((variant.get("properties") or {}).items(), key=lambda kv: (kv[0] != skip, kv[0]))
        for field, prop in props:
            desc = prop.get("description", "")
            node, _, _ = self.w.unwrap(prop)
            rng = range_of(node, desc)
            if "default" in prop:
                default = value(prop["default"])
            elif field in required:
                default = "*required*"
            else:
                default = "—"
            rows.append(
                f"| `{field}` | {cell(self.type_text(prop))} | {unit_of(field)} | {prose(rng)} | {cell(default)} | "
                f"{prose(desc)} |"
            )
        return rows if len(rows) > 2 else []

    def render(self) -> str:
        out = [
            "# Scenario format reference",
            "",
            "Every field a scenario file (TOML) may hold, generated from the scenario schema that "
            "`mobipath schema` prints (the simulator's own definition of the format), so it lists "
            "exactly what `mobipath validate` and `mobipath run` accept. Field paths are written as "
            "overrides and error messages write them (`links[].loss.p`; `[]` marks an array of tables, "
            "`[[links]]` in TOML). Units follow from each name's suffix (`_ms`, `_mbps`, `_bytes`, ...); "
            "a range in square brackets includes its bound, in round ones excludes it. Unknown keys are "
            "refused. A guided tour with examples is on [Writing scenarios](../scenarios.md).",
            "",
        ]
        for path, name, node in self.w.sections:
            title = "Top level" if not path else f"`{path}`"
            out += [f"## {title} {{#{anchor(path)}}}", ""]
            also = sorted(set(self.w.paths.get(name, [])) - {path})
            if node.get("description") and path:
                out += [prose(node["description"]), ""]
            if also:
                out += ["Also at: " + ", ".join(f"`{p}`" for p in also), ""]
            vs = variants(node)
            if len(vs) == 1:
                out += self.table(vs[0], None) + [""]
                continue
            tags = {t[0] for t in (tag_of(v) for v in vs) if t}
            out += [f"One of {len(vs)} kinds, chosen by `{', '.join(sorted(tags))}`:", ""]
            for v in vs:
                tag = tag_of(v)
                label = f'`{tag[0]} = "{tag[1]}"`' if tag else "other"
                out += [f"### {title}: {label}", ""]
                if v.get("description"):
                    out += [prose(v["description"]), ""]
                rows = self.table(v, tag[0] if tag else None)
                out += (rows if rows else ["No other fields."]) + [""]
        return "\n".join(out)


def render(schema: dict[str, Any]) -> str:
    """The Markdown page for `schema` (the scenario JSON Schema)."""
    return Page(schema).render()


def field_paths(markdown: str) -> set[str]:
    """Every field the page lists, as `path.field` (each path a section is at, its own and its
    "also at" ones, and the table row's field): what tests compare with the schema's fields."""
    out: set[str] = set()
    paths: list[str] = []
    for line in markdown.splitlines():
        m = re.match(r"(#{2,3}) (?:Top level|`([^`]+)`)", line)
        if m:
            if m.group(1) == "##" or (m.group(2) or "") not in paths:
                paths = [m.group(2) or ""]
            continue
        if line.startswith("Also at: "):
            paths += re.findall(r"`([^`]+)`", line)
            continue
        m = re.match(r"\| `([^`]+)` \|", line)
        if m:
            out.update(join(p, m.group(1)) for p in paths)
    return out
