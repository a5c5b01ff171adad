"""What ripgrep printed: match counts per path, from `rg --json` or `rg --count-matches`.

Both formats are recognised by their first non-blank line. Paths stay as ripgrep printed
them (relative to where it ran, or absolute); bytes that are not UTF-8 are read as the
system names files (see `system.decode_name`), so that one odd name never stops the rest.
"""

from __future__ import annotations

import base64
import json
import re
from typing import Final

from codescout_mcp.core.contract import MAX_INTEGER_DIGITS
from codescout_mcp.core.jsontext import utf16_name
from codescout_mcp.core.text import shown
from codescout_mcp.system.platform import CURRENT, System, decode_name


class RipgrepError(Exception):
    """Input that is not ripgrep output (or holds a path no file could have); one line."""


def read_match_counts(data: bytes, source: str, system: System = CURRENT) -> dict[str, int]:
    """Match counts per path, in first-seen order, from `rg --json` or `rg --count-matches` output."""
    encoding = utf16_name(data)
    if encoding is not None:
        raise RipgrepError(
            f"{source}: the input is {encoding} (as PowerShell's `>` saves it), not ripgrep's own output; pipe "
            "ripgrep into codescout hits, or save its output as UTF-8 (`| Out-File -Encoding utf8`)"
        )
    lines = data.split(b"\n")
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        raise RipgrepError(f"{source}: no input; pipe in the output of `rg --json PATTERN`")
    if _is_json_event(first):
        counts = _from_json_stream(lines, source, system)
    elif b"\0" in data:
        counts = _from_null_counts(data, source, system)
    else:
        counts = _from_count_lines(lines, source, system)
    if not counts:
        raise RipgrepError(f"{source}: the ripgrep output holds no matches, so there is nothing to rank")
    return counts


def _is_json_event(line: bytes) -> bool:
    """Whether a whole line is a ripgrep JSON event (not merely a line starting with `{`)."""
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(event, dict) and isinstance(event.get("type"), str)


def _from_json_stream(lines: list[bytes], source: str, system: System) -> dict[str, int]:
    counts: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            raise RipgrepError(f"{source}: line {number}: not a ripgrep --json event (invalid JSON)") from None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise RipgrepError(f'{source}: line {number}: not a ripgrep --json event (no "type")')
        if event["type"] != "match":
            continue  # begin, end, context and summary carry nothing the ranking needs
        data = event.get("data")
        submatches = data.get("submatches") if isinstance(data, dict) else None
        path = _event_path(data.get("path") if isinstance(data, dict) else None, source, number, system)
        if path is None or not isinstance(submatches, list):
            raise RipgrepError(f"{source}: line {number}: a match event without a path and submatches")
        # A match event is one line; a line can hold several matches. An empty list still
        # means the line matched (ripgrep's multiline quirks), so it counts once.
        counts[path] = counts.get(path, 0) + max(1, len(submatches))
    return counts


def _event_path(value: object, source: str, number: int, system: System) -> str | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("text"), str):
        text: str = value["text"]
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise RipgrepError(
                f"{source}: line {number}: the path holds an unpaired surrogate, which no file name can"
            ) from None
        return _checked_path(text, source, number)
    if isinstance(value.get("bytes"), str):
        # A path that is not UTF-8: ripgrep sends its bytes in base64.
        try:
            raw = base64.b64decode(value["bytes"], validate=True)
        except ValueError:
            return None
        return _checked_path(decode_name(raw, system), source, number)
    return None


def _checked_path(path: str, source: str, number: int) -> str:
    if "\0" in path:
        raise RipgrepError(f"{source}: line {number}: the path holds a NUL character, which no file name can")
    if not path:
        raise RipgrepError(f"{source}: line {number}: an empty path")
    return path


def _count(text: bytes, source: str, number: int) -> int:
    text = text.removesuffix(b"\r")  # a file saved with Windows line ends; ripgrep writes no other space
    if not text.isdigit():
        if text.startswith(b"-") and text[1:].isdigit():
            raise RipgrepError(f"{source}: line {number}: a negative match count")
        raise RipgrepError(f"{source}: line {number}: {shown(repr(text[:40]))} is not a match count")
    significant = text.lstrip(b"0") or b"0"  # leading zeros count towards Python's digit limit
    if len(significant) > MAX_INTEGER_DIGITS:
        raise RipgrepError(
            f"{source}: line {number}: a match count of more than {MAX_INTEGER_DIGITS} digits, too large to rank"
        )
    return int(significant)


def _from_count_lines(lines: list[bytes], source: str, system: System) -> dict[str, int]:
    counts: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        path_bytes, sep, count_bytes = line.rpartition(b":")
        if not sep or not path_bytes:
            raise RipgrepError(
                f"{source}: line {number}: expected PATH:COUNT from `rg --count-matches` "
                "(with one file, add --with-filename)"
            )
        _add(counts, path_bytes, _count(count_bytes, source, number), system)
    return counts


# Anything but what bytes.strip() removes.
_NOT_BLANK: Final = re.compile(rb"[^ \t\n\r\x0b\x0c]")


def _from_null_counts(data: bytes, source: str, system: System) -> dict[str, int]:
    """`rg --count-matches --null`: PATH NUL COUNT newline, where PATH may hold newlines."""
    counts: dict[str, int] = {}
    position = 0
    line = 1
    # Stop where only blank space is left, found without copying the rest of the input.
    while _NOT_BLANK.search(data, position) is not None:
        nul = data.find(b"\0", position)
        if nul < 0:
            raise RipgrepError(f"{source}: line {line}: expected PATH, NUL, COUNT from `rg --count-matches --null`")
        end = data.find(b"\n", nul)
        end = len(data) if end < 0 else end
        path_bytes = data[position:nul]
        path_bytes = path_bytes.lstrip(b"\n") if position == 0 else path_bytes
        count_bytes = data[nul + 1 : end]
        if b"\0" in count_bytes:
            raise RipgrepError(f"{source}: line {line}: the path holds a NUL character, which no file name can")
        if not path_bytes:
            raise RipgrepError(f"{source}: line {line}: an empty path")
        _add(counts, path_bytes, _count(count_bytes, source, line), system)
        line += data.count(b"\n", position, end) + 1
        position = end + 1
    return counts


def _add(counts: dict[str, int], path_bytes: bytes, count: int, system: System) -> None:
    if count:
        path = decode_name(path_bytes, system)
        counts[path] = counts.get(path, 0) + count


# --- counting a ripgrep --json stream as it comes ---------------------------------------------
#
# A search's own ripgrep prints every matching line in full (for a pattern that matches the
# empty string: every line, and a submatch at every position of it), so its output can be
# gigabytes. `JsonCounter` sums each file's matches from the bytes as they arrive, holding only
# the file names and their counts. It relies on how serde writes ripgrep's events (compact, one
# per line, a file's events together from its "begin" to its "end"): inside a JSON string every
# `"` is escaped, so the byte runs below, which hold an unescaped `"`, are always structure.
# The counts are those `read_match_counts` reads from the same output (a match event counts its
# submatches, or 1 when it lists none); tests/unit/test_ripgrep.py holds the two together.

_BEGIN: Final = b'\n{"type":"begin"'
_END: Final = b'\n{"type":"end"'
_SUBMATCH: Final = b'{"match":'
_NO_SUBMATCH: Final = b'"submatches":[]'
# The most of a chunk's tail that may hold the start of one of the runs above.
_TAIL: Final = max(len(_BEGIN), len(_END), len(_SUBMATCH), len(_NO_SUBMATCH)) - 1
# The longest "begin" event read: a path of the longest a system allows, every byte escaped.
BEGIN_EVENT_BYTES: Final = 1 << 20


class TooManyFiles(RipgrepError):
    """More matching files, or more bytes of their names, than a search holds at once."""


class JsonCounter:
    """Match counts per path from `rg --json` output fed in pieces of any size (`feed`, then
    `counts()`); memory bounded by `max_files` files of at most `max_name_bytes` bytes of names."""

    def __init__(self, *, max_files: int, max_name_bytes: int, system: System = CURRENT) -> None:
        self.max_files = max_files
        self.max_name_bytes = max_name_bytes
        self.system = system
        self._counts: dict[str, int] = {}
        self._name_bytes = 0
        self._carry = b"\n"  # as if a line ended before the first event
        self._path: str | None = None  # the file whose events are being read
        self._count = 0
        self._events = 0  # "begin" events read, to say which one an error is in
        self._tail = b""  # the output's last bytes, to see its summary

    @property
    def summarised(self) -> bool:
        """Whether the output ended with ripgrep's summary: the search ran to its end."""
        return self._tail.rstrip(b"\n").endswith(b'"type":"summary"}')

    def feed(self, data: bytes) -> None:
        """Count what `data` completes; RipgrepError for output that is not ripgrep's."""
        self._tail = (self._tail + data)[-64:] if len(data) < 64 else data[-64:]
        data = self._carry + data if self._carry else data
        position = 0
        while True:
            if self._path is not None:
                end = data.find(_END, position)
                if end < 0:
                    # Runs that start before `cut` lie whole in `data`; the rest wait for more.
                    cut = max(position, len(data) - _TAIL)
                    self._count += data.count(_SUBMATCH, position, cut + len(_SUBMATCH) - 1)
                    self._count += data.count(_NO_SUBMATCH, position, cut + len(_NO_SUBMATCH) - 1)
                    self._carry = data[cut:]
                    return
                self._count += data.count(_SUBMATCH, position, end) + data.count(_NO_SUBMATCH, position, end)
                self._close()
                position = end + 1
                continue
            begin = data.find(_BEGIN, position)
            if begin < 0:
                self._carry = data[max(position, len(data) - _TAIL) :]
                return
            line_end = data.find(b"\n", begin + 1)
            if line_end < 0:
                if len(data) - begin > BEGIN_EVENT_BYTES:
                    raise RipgrepError("ripgrep's output: a begin event longer than any path")
                self._carry = data[begin:]
                return
            self._open(data[begin + 1 : line_end])
            position = line_end

    def counts(self) -> dict[str, int]:
        """The counts, once the whole output was fed; RipgrepError if it stopped inside a file."""
        if self._path is not None:
            raise RipgrepError("ripgrep's output ended inside a file's events")
        return self._counts

    def _open(self, line: bytes) -> None:
        self._events += 1
        where = f"ripgrep's output: begin event {self._events}"
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            raise RipgrepError(f"{where}: not JSON") from None
        data = event.get("data") if isinstance(event, dict) else None
        path = _event_path(
            data.get("path") if isinstance(data, dict) else None, "ripgrep's output", self._events, self.system
        )
        if path is None:
            raise RipgrepError(f"{where}: no path")
        self._path = path
        self._count = 0

    def _close(self) -> None:
        path, count = self._path, self._count
        assert path is not None
        self._path = None
        if not count:
            return
        if path not in self._counts:
            self._name_bytes += len(path.encode("utf-8", "surrogatepass"))
            if len(self._counts) >= self.max_files or self._name_bytes > self.max_name_bytes:
                raise TooManyFiles(
                    f"more than {self.max_files:,} files (or {self.max_name_bytes >> 20} MiB of their names)"
                )
            self._counts[path] = count
        else:
            self._counts[path] += count
