"""Bytes from stdin into lines, never holding one longer than the limit (stdio only).

A line over --max-message-bytes is read and dropped as it comes; `IdSniffer` follows it byte
by byte to find its id, so the error reply can still name the request.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Final

from codescout_mcp.answers.jsonrpc import INVALID_REQUEST, Refusal, Refused, RequestId, is_request_id, read_message

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from codescout_mcp.answers.jsonrpc import Batch, Dropped, Message


class Line:
    """One message's bytes, newline removed."""

    __slots__ = ("data",)

    def __init__(self, data: bytes) -> None:
        self.data = data


class Oversized:
    """A line longer than the limit: its size and its request id, if one could be read."""

    __slots__ = ("request_id", "size")

    def __init__(self, size: int, request_id: RequestId | None) -> None:
        self.size = size
        self.request_id = request_id


class LineFramer:
    """Splits a byte stream into Line and Oversized items, keeping at most `limit` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._sniffer: IdSniffer | None = None  # set while inside an oversized line

    def feed(self, chunk: bytes) -> Iterator[Line | Oversized]:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            self._add(piece)
            if end < 0:
                return
            yield self._finish_line()
            start = end + 1

    def finish(self) -> Iterator[Line | Oversized]:
        """What is left at end of input: a last line without its newline."""
        if self._size or self._sniffer is not None:
            yield self._finish_line()

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        self._size += len(piece)
        if self._sniffer is not None:
            self._sniffer.feed(piece)
            return
        self._parts.append(piece)
        if self._size > self.limit:
            self._sniffer = IdSniffer()
            for part in self._parts:
                self._sniffer.feed(part)
            self._parts = []

    def _finish_line(self) -> Line | Oversized:
        item: Line | Oversized
        if self._sniffer is not None:
            item = Oversized(self._size, self._sniffer.request_id())
        else:
            item = Line(b"".join(self._parts))
        self._parts, self._size, self._sniffer = [], 0, None
        return item


class IdSniffer:
    """Finds the top-level `"id"` member of a JSON object seen as a stream of bytes.

    For lines too long to keep: it follows strings, escapes and nesting byte by byte and
    remembers only the (short) id value, so the error reply can still name the request.
    """

    _VALUE_LIMIT: Final = 256

    def __init__(self) -> None:
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self._expect_key = False
        self._key: bytearray | None = None  # the top-level key being read, if short
        self._last_key: bytes | None = None
        self._capture: bytearray | None = None  # the id's value being read
        self._found: bytes | None = None
        self._failed = False

    def feed(self, data: bytes) -> None:
        if self._found is not None or self._failed:
            return
        for byte in data:
            self._step(byte)
            if self._found is not None or self._failed:
                return

    def _step(self, byte: int) -> None:
        capture = self._capture
        if self._in_string:
            if capture is not None:
                capture.append(byte)
            elif self._key is not None and len(self._key) < 8:
                self._key.append(byte)
            if self._escaped:
                self._escaped = False
            elif byte == 0x5C:  # backslash
                self._escaped = True
            elif byte == 0x22:  # closing quote
                self._in_string = False
                if capture is not None:
                    self._found = bytes(capture)
                elif self._key is not None:
                    self._last_key = bytes(self._key[:-1])
                    self._key = None
            return
        if capture is not None:
            if byte in b",}] \t\r\n":
                if capture:
                    self._found = bytes(capture)
                elif byte not in b" \t\r\n":
                    self._failed = True
                return
            if byte == 0x22 and not capture:
                capture.append(byte)
                self._in_string = True
                return
            capture.append(byte)
            if len(capture) > self._VALUE_LIMIT:
                self._failed = True
            return
        if byte == 0x22:
            self._in_string = True
            if self._depth == 1 and self._expect_key:
                self._key = bytearray()
        elif byte in b"{[":
            if self._depth == 0 and byte != 0x7B:
                self._failed = True  # not an object: no id to find
            self._depth += 1
            self._expect_key = byte == 0x7B
        elif byte in b"}]":
            self._depth -= 1
            if self._depth <= 0:
                self._failed = True
        elif self._depth == 1:
            if byte == 0x3A:  # colon: a value follows its key
                self._expect_key = False
                if self._last_key == b"id":
                    self._capture = bytearray()
                self._last_key = None
            elif byte == 0x2C:
                self._expect_key = True

    def request_id(self) -> RequestId | None:
        """The id, if it was found and is a valid request id (a string or an integer)."""
        if self._found is None:
            return None
        try:
            value = json.loads(self._found)
        except ValueError:
            return None
        return value if is_request_id(value) else None


def read_item(item: Line | Oversized, limit: int, *, batches: bool) -> Refused | Dropped | Batch | Message:
    """What a framed item holds (`jsonrpc.read_message`); an oversized one is refused (-32600)."""
    if isinstance(item, Oversized):
        return Refused(
            Refusal(
                INVALID_REQUEST,
                f"Invalid request: the message has {item.size} bytes,"
                f" more than the limit of {limit} (--max-message-bytes)",
                item.request_id,
            )
        )
    return read_message(item.data, batches=batches, line=True)
