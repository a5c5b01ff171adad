"""One JSON-RPC message of a handshake-era HTTP request, served by the SDK's `Server` from its parsed value.

The SDK's streamable HTTP transport (the 2025 protocol versions) reads the body with its
own JSON parser and writes the answer with its own serializer, and both refuse a lone
surrogate (`"\\ud800"`, legal JSON text, echoed back in ids, paths and owners): the
request gets a parse error, or the answer a 500. It also keeps three copies of the body
alive while the call runs. So `remote.py` reads each body itself (as `wire.py` reads a
stdio line: `check_envelope` refuses what is not JSON-RPC with -32600) and hands the
message to the SDK's request machinery the way the SDK's own stateless transport does
(a born-ready connection at the request's protocol version, `initialize` served inline,
no channel back to the client); the answer comes back as a plain value that
`encoded` writes.

The 2026-07-28 era keeps the SDK's own entry, which reads and writes JSON with Python's
`json` module and has none of these gaps.
"""

from __future__ import annotations

import math
from functools import partial
from typing import Any, Final

import anyio
import mcp_types as types
import pydantic_core
from mcp.server.connection import Connection
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_connection
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from mcp.shared.transport_context import TransportContext
from pydantic import ValidationError

from codescout_mcp.wire import INVALID_REQUEST, Refusal, Unanswerable, encode

INTERNAL_ERROR: Final = -32603

# What the SDK's stateless transport tells handlers: streamable HTTP, and no way to send the
# client a request (a JSON answer has room for one reply, and there is no session to reply on).
_TRANSPORT: Final = TransportContext(kind="streamable-http", can_send_request=False)


def as_message(value: dict[str, Any]) -> types.JSONRPCMessage:
    """A checked envelope (`wire.check_envelope`) as the SDK's message model; Refusal if the SDK cannot take it."""
    try:
        message: types.JSONRPCMessage = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError:
        if "method" not in value:
            raise Unanswerable("a response that is not a JSON-RPC 2.0 response") from None
        raw_id = value.get("id")
        request_id = raw_id if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else None
        raise Refusal(INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message", request_id) from None
    return message


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
    answer) refuses lone surrogates; an answer holding one is written by `wire.encode`.
    """
    try:
        return pydantic_core.to_json(answer)
    except pydantic_core.PydanticSerializationError:
        return encode(answer).removesuffix(b"\n")
