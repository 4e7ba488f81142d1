"""Text from outside made safe for a log line or a terminal (as crates/proxy/src/text.rs does for
the proxy): a line feed in it would forge a log line of its own, an escape sequence (ESC, a C1
control, a bidi override) would drive the operator's terminal. `escape_controls` writes every
Unicode control character, U+2028/U+2029 and the bidirectional formatting characters as
``\\n``, ``\\r``, ``\\t`` or ``\\xNN`` / ``\\uNNNN``; everything else stays as it is."""

from __future__ import annotations

_FORMATTING = {0x2028, 0x2029, 0x200E, 0x200F, *range(0x202A, 0x202F), *range(0x2066, 0x206A)}
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def is_unsafe(c: str) -> bool:
    o = ord(c)
    return o < 0x20 or 0x7F <= o <= 0x9F or o in _FORMATTING


def escape_controls(s: str) -> str:
    """`s` with every unsafe character escaped (see the module doc)."""
    if not any(is_unsafe(c) for c in s):
        return s
    return "".join(
        (_NAMED.get(c) or (f"\\x{ord(c):02x}" if ord(c) < 0x100 else f"\\u{ord(c):04x}")) if is_unsafe(c) else c
        for c in s
    )
