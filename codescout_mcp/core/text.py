"""Text made safe to show in one line of an error or a log: user-given names may hold anything."""

from __future__ import annotations

_ESCAPES = {"\n": "\\n", "\r": "\\r", "\t": "\\t", "\\": "\\\\"}


def shown(text: str) -> str:
    """`text` on one line: control characters, lone surrogates and backslashes escaped.

    Names coming from users (file names above all) may hold a newline; an error message
    that quotes one must still be one line.
    """
    if text.isprintable() and "\\" not in text:
        return text
    out = []
    for char in text:
        if char in _ESCAPES:
            out.append(_ESCAPES[char])
        elif char.isprintable() or char == " ":
            out.append(char)
        elif ord(char) < 0x100:
            out.append(f"\\x{ord(char):02x}")
        elif ord(char) < 0x10000:
            out.append(f"\\u{ord(char):04x}")
        else:
            out.append(f"\\U{ord(char):08x}")
    return "".join(out)


def quoted(text: str, limit: int = 200) -> str:
    """`text` shown on one line, in double quotes, cut at `limit` characters."""
    return f'"{shown(text)[:limit]}"'
