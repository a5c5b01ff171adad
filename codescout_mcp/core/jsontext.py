"""Reading JSON text as JSON.parse does, with one-line errors that say where it broke.

Used by every front that reads JSON itself (the CLI's files, the stdio transport's lines),
so the same bytes are read the same way everywhere:

* UTF-8 only (a leading byte-order mark is skipped); invalid bytes are an error naming the
  byte offset, never replaced in silence;
* NaN and Infinity are not JSON;
* a number with a fraction or an exponent is a double; an integer literal is exact, and one
  too long to convert (more digits than MAX_INTEGER_DIGITS) is read as OversizedInteger,
  so that the contract can name its location, or ignore it in a field it does not read;
* duplicate keys keep the last value.
"""

from __future__ import annotations

import codecs
import json

from codescout_mcp.core.contract import MAX_INTEGER_DIGITS
from codescout_mcp.core.validate import OversizedInteger

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, NoReturn


class JsonTextError(ValueError):
    """Bytes that are not one JSON value; the message is one line and names the place."""


def _reject_constant(name: str) -> NoReturn:
    raise JsonTextError(f"{name} is not a JSON value")


def _bounded_int(text: str) -> int:
    digits = len(text) - (text[0] == "-")
    if digits > MAX_INTEGER_DIGITS:
        return OversizedInteger(text[0] == "-")
    return int(text)


def _at(source: str) -> str:
    return f"{source}: " if source else ""


def decode_utf8(data: bytes, source: str) -> str:
    """UTF-8 text, a leading BOM skipped; JsonTextError naming the first bad byte's offset.

    `source` names the input in messages (a file name, "stdin"); empty leaves it out.
    """
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return str(data[start:], "utf-8") if start else data.decode("utf-8")
    except UnicodeDecodeError as error:
        encoding = utf16_name(data) if source else None  # a file's mistake, not a message's
        said = f" (it is {encoding}; save it as UTF-8)" if encoding is not None else ""
        raise JsonTextError(f"{_at(source)}not valid UTF-8 at byte offset {error.start + start}{said}") from None


def utf16_name(data: bytes) -> str | None:
    """ "UTF-16LE" or "UTF-16BE" when `data` is plainly UTF-16 (a byte-order mark, or ASCII text
    with every other byte NUL, as Windows tools write it); else None."""
    if data.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return "UTF-16LE" if data.startswith(codecs.BOM_UTF16_LE) else "UTF-16BE"
    head = data[:64]
    if len(head) >= 4 and len(head) % 2 == 0:
        if head[1::2].count(0) == len(head) // 2 and 0 not in head[0::2]:
            return "UTF-16LE"
        if head[0::2].count(0) == len(head) // 2 and 0 not in head[1::2]:
            return "UTF-16BE"
    return None


def parse_json(data: bytes, source: str) -> Any:
    """The one JSON value in `data`, read as described above."""
    return parse_json_text(decode_utf8(data, source), source)


def parse_json_text(text: str, source: str) -> Any:
    """The one JSON value in `text`, read as described above."""
    try:
        try:
            return json.loads(text, parse_constant=_reject_constant)
        except ValueError as error:
            if isinstance(error, (json.JSONDecodeError, JsonTextError)):
                raise
            # Python's guard against converting huge integer literals: read again, this
            # time standing in for them (slower, so only when needed).
            return json.loads(text, parse_constant=_reject_constant, parse_int=_bounded_int)
    except json.JSONDecodeError as error:
        encoding = utf16_name(text[:64].encode("utf-8", "surrogatepass")) if source else None
        said = f" (it is {encoding}; save it as UTF-8)" if encoding is not None else ""
        raise JsonTextError(
            f"{_at(source)}invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}{said}"
        ) from None
    except JsonTextError as error:
        raise JsonTextError(f"{_at(source)}invalid JSON: {error}") from None
    except RecursionError:
        raise JsonTextError(f"{_at(source)}invalid JSON: nested too deeply") from None
