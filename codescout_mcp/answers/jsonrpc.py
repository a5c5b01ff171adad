"""JSON-RPC 2.0, the vocabulary both transports share, without the SDK: envelopes, errors, batches
and the bytes of an answer. Each rule is written here once.

Used by the stdio transport from its first instant (before the SDK has finished importing)
and by the HTTP transport for the checks the SDK gets wrong:

* `read_json` reads a line or a body as JSON, as JSON.parse would (Refusal -32700 when it is not);
* `check_envelope` tells a request, a notification and a response apart, and refuses
  anything else with -32600, echoing the id whenever it can be read;
* `encode` writes an answer as one line of UTF-8 JSON; a lone surrogate (legal in JSON text
  as an escape, and echoed back in ids, paths and owners) goes out as the escape it came as.

Every transport reads a message the one way, `read_message`, and matches on what it gives:
`Refused` (answer its error), `Dropped` (nothing to answer), `Batch` (serve each member, read
the same way) or `Message` (a checked envelope, for the door). What the door leaves to the SDK
becomes the SDK's model through `sdk_message`, which gives `Refused` and `Dropped` the same way.
"""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any, Final

from codescout_mcp.answers.protocol import served_initialize_params
from codescout_mcp.core.fastpath import FAST_BYTES, Decoded
from codescout_mcp.core.jsontext import JsonTextError, decode_utf8, parse_json_text

PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

RequestId = int | str

if TYPE_CHECKING:
    from mcp_types import JSONRPCMessage


def is_request_id(value: object) -> bool:
    """Whether a JSON value can be a request id: a string, or an integer (not a boolean or a float)."""
    return (type(value) is int) or isinstance(value, str)


# --- reading one line into a message, or into the error that answers it ----------------


class Refusal(Exception):
    """A line that gets a JSON-RPC error reply instead of reaching the server."""

    def __init__(self, code: int, message: str, request_id: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id if is_request_id(request_id) else None

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


BLANK: Final = object()  # what read_json gives for a blank line (JSON's null is None)
BLANK_LINE: Final = "a blank line"  # why read_message drops one (nothing to answer, nothing to log)


def read_json(data: bytes, *, line: bool = False) -> object:
    """The JSON value in a stdio line or an HTTP body, read as JSON.parse reads it; Refusal -32700
    when it is not JSON. A line may end in `\r` and may be blank (BLANK: nothing to answer).

    (A caller that must not hold the bytes and the text at once calls the two steps itself.)
    """
    if line:
        data = data.removesuffix(b"\r")
        if not data.strip():
            return BLANK
    fast = fast_call(data)
    return fast if fast is not None else parsed(decoded(data))


def fast_call(data: bytes) -> dict[str, Any] | None:
    """A large `tools/call` of the rank tool as the fast path reads it (`fastpath.call_message`:
    its arguments decoded into checked structs, in a third of the precise path's memory); None for
    any other message, which the precise path reads."""
    if len(data) < FAST_BYTES:
        return None
    from codescout_mcp.core.fastpath import call_message

    return call_message(data)


def decoded(data: bytes) -> str:
    """The text of a message (UTF-8, a leading BOM skipped); Refusal -32700 naming the offset of
    the first bad byte, and the id when the rest of the message is sound."""
    try:
        return decode_utf8(data, "")
    except JsonTextError as error:
        raise Refusal(PARSE_ERROR, f"Parse error: {error}", _id_of(data.decode("utf-8", "surrogateescape"))) from None


def parsed(text: str) -> object:
    """The JSON value of a message's text, read as JSON.parse reads it; Refusal -32700 when it is not JSON."""
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
    return raw if is_request_id(raw) else None


def check_envelope(value: object, *, in_batch: bool = False) -> dict[str, Any]:
    """The message a parsed line (or batch member) holds, checked as JSON-RPC 2.0; Refusal if not.

    A request or notification needs `"jsonrpc": "2.0"`, a string `method`, an object
    `params` if any, and (a request) a string or integer id. A response needs an id and one
    of `result` and `error`. A response that is not sound is never answered (a server does
    not reply to responses): Unanswerable. `initialize` asking for a version the server does
    not serve is rewritten to the newest one.
    """
    if isinstance(value, list):
        raise Refusal(INVALID_REQUEST, "Invalid request: batches (JSON arrays) are served only at protocol 2025-03-26")
    if not isinstance(value, dict):
        raise Refusal(INVALID_REQUEST, "Invalid request: a JSON-RPC message is a JSON object")
    has_id = "id" in value
    raw_id = value.get("id")
    request_id = raw_id if is_request_id(raw_id) else None
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


# --- one read of a message, and what a transport does with it ----------------------------


class Refused:
    """A message answered with a JSON-RPC error instead of being served."""

    __slots__ = ("refusal",)

    def __init__(self, refusal: Refusal) -> None:
        self.refusal = refusal


class Dropped:
    """A message that gets no answer at all: a blank line, a malformed response."""

    __slots__ = ("reason",)

    def __init__(self, reason: str) -> None:
        self.reason = reason


class Batch:
    """A JSON-RPC batch where batches are served: its members, each to be read with `read_message`."""

    __slots__ = ("members",)

    def __init__(self, members: list[Any]) -> None:
        self.members = members


class Message:
    """One message, checked as JSON-RPC 2.0 (`check_envelope`): a request, a notification or a response."""

    __slots__ = ("envelope",)

    def __init__(self, envelope: dict[str, Any]) -> None:
        self.envelope = envelope


def read_message(
    source: object, *, batches: bool = False, line: bool = False, seen: set[tuple[type, RequestId]] | None = None
) -> Refused | Dropped | Batch | Message:
    """What a message is, read once: from its bytes (a stdio line, with `line`; an HTTP body), or
    from its JSON value (a batch member, or a message kept from before the SDK was up).

    A JSON array is a `Batch` where `batches` (the session's version serves them), and refused
    elsewhere. A batch member is read with `seen`, the ids its batch used so far.
    """
    try:
        if isinstance(source, bytes):
            value = read_json(source, line=line)
            if value is BLANK:
                return Dropped(BLANK_LINE)
        else:
            value = source
        if batches and isinstance(value, list):
            check_batch(value)
            return Batch(value)
        envelope = check_envelope(value, in_batch=seen is not None)
        if seen is not None and "id" in envelope and "method" in envelope:
            check_unique_id(envelope["id"], seen)
        return Message(envelope)
    except Refusal as refusal:
        return Refused(refusal)
    except Unanswerable as error:
        return Dropped(str(error))


def sdk_message(envelope: dict[str, Any]) -> JSONRPCMessage | Refused | Dropped:
    """A checked envelope (`read_message`) as the SDK's message model, or what to do when the SDK
    cannot take it: `Refused` for a request or notification, `Dropped` for a response.

    (The SDK is imported here, not above: the stdio transport uses this module before the SDK loads.)
    """
    import mcp_types as types
    from pydantic import ValidationError

    params = envelope.get("params")
    if isinstance(params, dict) and isinstance(params.get("arguments"), Decoded):  # the SDK reads JSON values
        envelope = {**envelope, "params": {**params, "arguments": params["arguments"].plain()}}
    try:
        message: JSONRPCMessage = types.jsonrpc_message_adapter.validate_python(envelope, by_name=False)
    except ValidationError:
        if "method" not in envelope:  # a response: never answered
            return Dropped("a response that is not a JSON-RPC 2.0 response")
        raw_id = envelope.get("id")
        request_id = raw_id if is_request_id(raw_id) else None
        return Refused(Refusal(INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message", request_id))
    return message
