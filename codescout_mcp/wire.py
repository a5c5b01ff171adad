"""JSON-RPC 2.0 on the wire, without the SDK: lines, envelopes, errors and the bytes of an answer.

Used by the stdio transport from its first instant (before the SDK has finished importing)
and by the HTTP transport for the checks the SDK gets wrong:

* `LineFramer` splits stdin into lines, never holding one longer than the limit;
* `read_line` reads one line as JSON, as JSON.parse would (Refusal -32700 when it is not);
* `check_envelope` tells a request, a notification and a response apart, and refuses
  anything else with -32600, echoing the id whenever it can be read;
* `encode` writes an answer as one line of UTF-8 JSON; a lone surrogate (legal in JSON text
  as an escape, and echoed back in ids, paths and owners) goes out as the escape it came as.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, Final

from codescout_mcp.jsontext import JsonTextError, decode_utf8, parse_json_text
from codescout_mcp.protocol import served_initialize_params

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600

RequestId = int | str


# --- framing: bytes from stdin into lines, without ever holding an oversized one ----------


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
        return value if _is_request_id(value) else None


def is_request_id(value: object) -> bool:
    """Whether a JSON value can be a request id: a string, or an integer (not a boolean or a float)."""
    return _is_request_id(value)


def _is_request_id(value: object) -> bool:
    return (type(value) is int) or isinstance(value, str)


# --- reading one line into a message, or into the error that answers it ----------------


class Refusal(Exception):
    """A line that gets a JSON-RPC error reply instead of reaching the server."""

    def __init__(self, code: int, message: str, request_id: RequestId | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id

    def as_dict(self) -> dict[str, Any]:
        error = {"code": self.code, "message": self.message}
        return {"jsonrpc": "2.0", "id": self.request_id, "error": error}

    def reply(self) -> bytes:
        return encode(self.as_dict())


# A batch (protocol 2025-03-26) holds at most this many messages, on every transport.
MAX_BATCH: Final = 1_000


def check_batch(members: list[Any]) -> None:
    """Refusal (-32600) for a batch no transport serves: an empty one, or one over MAX_BATCH."""
    if not members:
        raise Refusal(INVALID_REQUEST, "Invalid request: an empty batch")
    if len(members) > MAX_BATCH:
        raise Refusal(
            INVALID_REQUEST,
            f"Invalid request: a batch of {len(members)} messages; at most {MAX_BATCH} are served at once",
        )


def check_unique_id(request_id: RequestId, seen: set[tuple[type, RequestId]]) -> None:
    """Refusal (-32600) for a request id used before in the same batch (1 and "1" are two ids); else note it."""
    key = (type(request_id), request_id)
    if key in seen:
        raise Refusal(INVALID_REQUEST, "Invalid request: the id is used twice in this batch", request_id)
    seen.add(key)


def encode(message: object) -> bytes:
    """One message (or batch of them) as a line of compact UTF-8 JSON, newline included.

    Characters stay as they are (no \\u escapes), except that a lone surrogate, which UTF-8
    cannot hold, is written as the JSON escape it came in as.
    """
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace") + b"\n"


BLANK: Final = object()  # what read_line gives for a blank line (JSON's null is None)


def read_line(data: bytes) -> object:
    """The JSON value in one line (BLANK for a blank line); Refusal when it is not JSON."""
    data = data.removesuffix(b"\r")
    if not data.strip():
        return BLANK
    try:
        text = decode_utf8(data, "")
    except JsonTextError as error:
        # Find the id if the rest of the line is sound, so the client knows which request failed.
        request_id = _id_of(data.decode("utf-8", "surrogateescape"))
        raise Refusal(PARSE_ERROR, f"Parse error: {error}", request_id) from None
    try:
        return parse_json_text(text, "")
    except JsonTextError as error:
        raise Refusal(PARSE_ERROR, f"Parse error: {error}") from None


def _id_of(text: str) -> RequestId | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    raw = value.get("id") if isinstance(value, dict) else None
    return raw if _is_request_id(raw) else None


def check_envelope(value: object, *, in_batch: bool = False) -> dict[str, Any]:
    """The message a parsed line (or batch member) holds, checked as JSON-RPC 2.0; Refusal if not.

    A request or notification needs `"jsonrpc": "2.0"`, a string `method`, an object
    `params` if any, and (a request) a string or integer id. A response needs an id and one
    of `result` and `error`. A response that is not sound is never answered (a server does
    not reply to responses): it is refused with `request_id` None and `answerable` False.
    `initialize` asking for a version the server does not serve is rewritten to the newest one.
    """
    if isinstance(value, list):
        raise Refusal(INVALID_REQUEST, "Invalid request: batches (JSON arrays) are served only at protocol 2025-03-26")
    if not isinstance(value, dict):
        raise Refusal(INVALID_REQUEST, "Invalid request: a JSON-RPC message is a JSON object")
    has_id = "id" in value
    raw_id = value.get("id")
    request_id = raw_id if _is_request_id(raw_id) else None
    if "method" not in value and ("result" in value or "error" in value):
        if value.get("jsonrpc") != "2.0" or not has_id or ("result" in value) == ("error" in value):
            raise Unanswerable("a response that is not a JSON-RPC 2.0 response")
        return value
    if value.get("jsonrpc") != "2.0":
        raise Refusal(INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"', request_id)
    if has_id and request_id is None:
        raise Refusal(INVALID_REQUEST, "Invalid request: an id is a string or an integer")
    if "method" not in value:
        raise Refusal(INVALID_REQUEST, "Invalid request: neither a request, a notification nor a response", request_id)
    if not isinstance(value["method"], str):
        raise Refusal(INVALID_REQUEST, 'Invalid request: "method" must be a string', request_id)
    if "params" in value and not isinstance(value["params"], dict):
        raise Refusal(INVALID_REQUEST, 'Invalid request: "params" must be an object', request_id)
    if value["method"] == "initialize" and has_id:
        if in_batch:
            raise Refusal(INVALID_REQUEST, "Invalid request: initialize may not be part of a batch", request_id)
        value = {**value, "params": served_initialize_params(value.get("params"))}
    return value


class Unanswerable(Exception):
    """A message that gets no answer at all (a malformed response): logged and dropped."""
