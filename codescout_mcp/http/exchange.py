"""One handshake-era message of an HTTP request, served by the SDK's `Server` from its parsed value;
and a 2025-03-26 batch, member by member.

The SDK's streamable HTTP transport (the 2025 protocol versions) reads the body with its own
JSON parser and writes the answer with its own serializer, and both refuse a lone surrogate
(`"\\ud800"`, legal JSON text, echoed back in ids, paths and owners): the request gets a parse
error, or the answer a 500. It also keeps three copies of the body alive while the call runs
(mcp 2.3.0, `mcp/server/streamable_http.py`; docs/sdk-gaps.md). So the Guard reads each body
itself (as the stdio transport reads a line) and hands the message to the SDK's request
machinery the way the SDK's own stateless transport does: `exchange` mirrors
`StreamableHTTPSessionManager._handle_stateless_request` (mcp 2.3.0,
`mcp/server/streamable_http_manager.py`): a born-ready connection at the request's protocol
version (`Connection.from_envelope`), `initialize` served inline, no channel back to the client.
The answer comes back as a plain value that `encoded` writes. tests/unit/test_sdk_gaps.py holds
the SDK to the shape this relies on.

A batch's calls of codescout's tools share one deadline (`batch_answer`), so that a batch of
many slow calls holds its slot for CALL_SECONDS, not for CALL_SECONDS a member.

The 2026-07-28 era keeps the SDK's own entry, which reads and writes JSON with Python's `json`
module and has none of these gaps.
"""

from __future__ import annotations

import math
import time
from functools import partial
from typing import Any, Final

import anyio
import mcp_types as types
import pydantic_core
from mcp.server.connection import Connection
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_connection
from mcp.shared.inbound import InboundModernRoute, classify_inbound_request, find_duplicated_routing_header
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp.shared.transport_context import TransportContext

from codescout_mcp.answers import jsonrpc, words
from codescout_mcp.answers.door import Call, Door, Session
from codescout_mcp.answers.jsonrpc import INTERNAL_ERROR, Refusal, RequestId, encode
from codescout_mcp.answers.protocol import CALL_SECONDS
from codescout_mcp.http.budget import Held

# What the SDK's stateless transport tells handlers: streamable HTTP, and no way to send the
# client a request (a JSON answer has room for one reply, and there is no session to reply on).
_TRANSPORT: Final = TransportContext(kind="streamable-http", can_send_request=False)

BATCH_TOO_LARGE: Final = words.batch_too_large("the server's buffer (--max-buffered-bytes)")


async def exchange(server: Server[Any], message: types.JSONRPCMessage, version: str) -> dict[str, Any] | None:
    """The answer to one message at protocol `version`, as a JSON value (None for a notification or a response).

    The answer's `result` is the dictionary the SDK built for the wire (shared, not copied).
    """
    request = message if isinstance(message, types.JSONRPCRequest) else None
    to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](1)
    # Unbounded: the server may say something the request never waits for (a log message,
    # say), and must never block on it while the request waits for its answer.
    server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](math.inf)
    dispatcher: JSONRPCDispatcher[TransportContext] = JSONRPCDispatcher(
        server_reads,
        server_writes,
        inline_methods=frozenset({"initialize"}),
        transport_builder=lambda _metadata: _TRANSPORT,
    )
    connection = Connection.from_envelope(version, None, None)
    answer: types.JSONRPCMessage | None = None
    async with anyio.create_task_group() as tasks:
        tasks.start_soon(partial(serve_connection, server, dispatcher, connection=connection, lifespan_state={}))
        async with to_server, from_server:
            if request is None:
                await to_server.send(SessionMessage(message))
                return None
            async with anyio.create_task_group() as waiting:

                async def unanswered() -> None:  # the SDK settled the request without an answer
                    waiting.cancel_scope.cancel()

                metadata = ServerMessageMetadata(on_request_unanswered=unanswered)
                await to_server.send(SessionMessage(request, metadata=metadata))
                async for item in from_server:
                    sent = item.message
                    if isinstance(sent, (types.JSONRPCResponse, types.JSONRPCError)) and sent.id == request.id:
                        answer = sent
                        break
                waiting.cancel_scope.cancel()
    assert request is not None  # a notification was answered above
    return _answer(request.id, answer)


def modern_checks_pass(scope: dict[str, Any] | Any, message: dict[str, Any]) -> bool:
    """Whether the SDK's 2026-07-28 entry would serve this request (a checked envelope) as it is:
    no routing header given twice, and headers and envelope that agree (`classify_inbound_request`,
    mcp 2.3.0, `mcp/shared/inbound.py`, as `handle_modern_request` asks it). Where they do not,
    the SDK's entry answers, in its words. (Its last check, `Mcp-Param-*` headers against the
    tool's input schema, holds nothing for codescout's tools, which declare none.)
    """
    raw = [(name.decode("latin-1"), value.decode("latin-1")) for name, value in scope.get("headers", ())]
    if find_duplicated_routing_header(raw) is not None:
        return False
    folded = {name.lower(): value for name, value in raw}
    return isinstance(classify_inbound_request(message, headers=folded), InboundModernRoute)


def _answer(request_id: types.RequestId, answer: types.JSONRPCMessage | None) -> dict[str, Any]:
    if isinstance(answer, types.JSONRPCResponse):
        return {"jsonrpc": "2.0", "id": request_id, "result": answer.result}
    if isinstance(answer, types.JSONRPCError):
        error = answer.error.model_dump(by_alias=True, exclude_unset=True, mode="json")
        return {"jsonrpc": "2.0", "id": request_id, "error": error}
    error = {"code": INTERNAL_ERROR, "message": "Internal error: the request ended without an answer"}
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def encoded(answer: dict[str, Any]) -> bytes:
    """An answer as compact UTF-8 JSON, as the SDK would write it; a lone surrogate as the escape it came as.

    pydantic's serializer (the SDK's own, and several times faster than `json` on a large
    answer) refuses lone surrogates; an answer holding one is written by `jsonrpc.encode`.
    """
    try:
        written: bytes = pydantic_core.to_json(answer)
        return written
    except pydantic_core.PydanticSerializationError:
        return encode(answer).removesuffix(b"\n")


async def batch_answer(
    server: Server[Any], door: Door, members: list[Any], version: str, held: Held, *, seconds: float = CALL_SECONDS
) -> bytes | None:
    """The answers to a JSON-RPC batch (protocol 2025-03-26) as one array; None when it holds only
    notifications and responses. Each member is served in turn and its value dropped once served;
    the answers wait in the budget until the batch is done, and one that finds no room becomes an
    error saying so. The calls of codescout's tools share one deadline, `seconds` from now: one
    running when it passes is held to it, and one that would start after it is a tool error
    saying it was not run. (A client that leaves cancels the task awaiting this, `routing.py`.)"""
    deadline = time.monotonic() + seconds
    parts: list[bytes] = []
    seen: set[tuple[type, RequestId]] = set()  # a batch's answers are told apart by their ids
    for index in range(len(members)):
        member, members[index] = members[index], None  # each member's value goes once it is served
        answer = await _batch_member(server, door, member, version, seen, deadline)
        del member
        if answer is None:
            continue
        part = encoded(answer)
        if not held.take_now(len(part)):
            part = encoded(Refusal(INTERNAL_ERROR, BATCH_TOO_LARGE, answer.get("id")).as_dict())
            held.force(len(part))
        parts.append(part)
    if not parts:
        return None
    return b"[" + b",".join(parts) + b"]"


async def _batch_member(
    server: Server[Any], door: Door, member: object, version: str, seen: set[tuple[type, RequestId]], deadline: float
) -> dict[str, Any] | None:
    read = jsonrpc.read_message(member, seen=seen)
    if not isinstance(read, jsonrpc.Message):
        assert not isinstance(read, jsonrpc.Batch)  # (a batch within a batch is refused)
        return read.refusal.as_dict() if isinstance(read, jsonrpc.Refused) else None
    route = door.route(read.envelope, Session.stateless(version), deadline=deadline)
    if isinstance(route, Call):
        del read
        return await route.answer()
    message = jsonrpc.sdk_message(read.envelope)
    del read, route
    if isinstance(message, jsonrpc.Refused):
        return message.refusal.as_dict()
    if isinstance(message, (jsonrpc.Dropped, types.JSONRPCResponse, types.JSONRPCError)):
        return None
    return await exchange(server, message, version)
