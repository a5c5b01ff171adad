"""One canary per gap in docs/sdk-gaps.md: each passes while the gap is there.

When an upgrade of the SDK (or uvicorn) closes or moves a gap, its canary fails and names the
codescout code that pays for it, so that code can be deleted or moved with the gap. Each is
behavioural where the SDK can be driven in process, and reads the SDK's source where the
gap is in how a transport is built.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import anyio
import mcp_types as types
import pydantic
import pydantic_core
import pytest
import uvicorn
from mcp.server import stdio as sdk_stdio
from mcp.server import streamable_http, streamable_http_manager
from mcp.server.connection import Connection
from mcp.server.lowlevel import Server
from mcp.server.runner import serve_connection
from mcp.server.transport_security import (
    RequestBodyLimitMiddleware,
    TransportSecurityMiddleware,
    TransportSecuritySettings,
)
from mcp.shared.jsonrpc_dispatcher import JSONRPCDispatcher
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from codescout_mcp.server import build_server


def sdk_source(module: Any) -> str:
    return inspect.getsource(module)


def test_gap_1_the_sdk_stdio_reader_replaces_invalid_utf8() -> None:
    """Paid for by stdio/framing.py and jsonrpc.read_json (-32700 naming the byte offset)."""
    assert 'errors="replace"' in sdk_source(sdk_stdio)


def test_gap_2_a_line_that_is_not_json_rpc_is_dropped_unanswered() -> None:
    """Paid for by jsonrpc.check_envelope and the stdio relay: every line is answered."""

    async def run() -> list[Any]:
        server = build_server()
        to_server, reads = anyio.create_memory_object_stream[SessionMessage | Exception](4)
        writes, from_server = anyio.create_memory_object_stream[SessionMessage](4)
        answers: list[Any] = []
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.run, reads, writes, server.create_initialization_options())
            await to_server.send(ValueError("a line that is not JSON"))  # what the SDK's reader hands on
            ping = types.JSONRPCRequest(jsonrpc="2.0", id=7, method="ping")
            await to_server.send(SessionMessage(ping))
            with anyio.fail_after(10):
                answers.append(await from_server.receive())
            with anyio.move_on_after(0.3):
                answers.append(await from_server.receive())
            tasks.cancel_scope.cancel()
        return answers

    answers = anyio.run(run)
    assert [answer.message.id for answer in answers] == [7]  # the ping only: the bad line got nothing


def test_gap_3_and_4_the_sdk_stdio_reader_holds_any_line_on_a_worker_thread() -> None:
    """Paid for by stdio/framing.py (bounded lines) and stdio/pipes.py (daemon threads)."""
    source = sdk_source(sdk_stdio)
    assert "anyio.wrap_file" in source and "async for line in stdin" in source
    assert "max_message" not in source and "limit" not in inspect.signature(sdk_stdio.stdio_server).parameters


def test_gap_6_a_json_rpc_batch_is_no_message_to_the_sdk() -> None:
    """Paid for by jsonrpc.check_batch, the stdio relay's batches and http/exchange.batch_answer."""
    batch = [{"jsonrpc": "2.0", "id": 1, "method": "ping"}]
    with pytest.raises(pydantic.ValidationError):
        types.jsonrpc_message_adapter.validate_python(batch, by_name=False)


def test_gap_7_and_8_pydantic_refuses_lone_surrogates_both_ways() -> None:
    """Paid for by jsonrpc.encode, http/exchange.encoded, and the Guard reading bodies itself."""
    with pytest.raises(pydantic_core.PydanticSerializationError):
        pydantic_core.to_json({"path": "\ud800"})
    with pytest.raises(ValueError, match="escape"):  # a lone surrogate escape, legal JSON
        pydantic_core.from_json(b'{"path": "\\ud800"}')
    post = sdk_source(streamable_http.StreamableHTTPServerTransport._handle_post_request)
    assert "pydantic_core.from_json(body)" in post and "INVALID_PARAMS" in post


def test_gap_8_exchange_mirrors_the_sdks_stateless_handler_on_these_internals() -> None:
    """http/exchange.exchange builds on these SDK internals as `_handle_stateless_request` does."""
    handler = sdk_source(streamable_http_manager.StreamableHTTPSessionManager._handle_stateless_request)
    assert "Connection.from_envelope(" in handler and "serve_connection(" in handler
    assert {"connection", "lifespan_state"} <= set(inspect.signature(serve_connection).parameters)
    assert {"inline_methods", "transport_builder"} <= set(inspect.signature(JSONRPCDispatcher).parameters)
    assert Connection.from_envelope("2025-11-25", None, None) is not None
    assert "on_request_unanswered" in inspect.signature(ServerMessageMetadata).parameters


def test_gap_9_the_sdk_app_copies_each_body_in_front_of_its_transport() -> None:
    """Paid for by http._without_body_copies (which takes the middleware out)."""
    server = build_server()
    server.streamable_http_app(stateless_http=True, json_response=True)
    assert isinstance(server.session_manager.asgi_app, RequestBodyLimitMiddleware)
    assert "bytearray" in sdk_source(RequestBodyLimitMiddleware)


def test_gap_10_the_sdk_host_check_is_case_sensitive_and_refuses_a_bare_name() -> None:
    """Paid for by http/access.py."""
    check = TransportSecurityMiddleware(TransportSecuritySettings(allowed_hosts=["localhost:*"]))
    assert check._validate_host("localhost:8000")
    assert not check._validate_host("LOCALHOST:8000")
    assert not check._validate_host("localhost")


def test_gap_11_discover_names_only_the_modern_versions() -> None:
    """Paid for by server._discover_every_served_version."""
    plain: Server[Any] = Server("plain")
    entry = plain.get_request_handler("server/discover")
    assert entry is not None
    assert "MODERN_PROTOCOL_VERSIONS" in sdk_source(entry.handler) or "supported_versions" in sdk_source(entry.handler)


def test_gap_12_the_modern_http_entry_reads_json_as_python_does() -> None:
    """Paid for by Guard._serve_modern (NaN refused; each invalid body its own error)."""
    from mcp.server import _streamable_http_modern as modern

    source = sdk_source(modern)
    assert "json.loads(body)" in source and "id=None" in source
    assert json.loads("NaN") != json.loads("NaN")  # what json.loads makes of NaN: a float, not an error


def test_gap_13_the_low_level_server_passes_arguments_unchecked() -> None:
    """Paid for by validate.py: the handler checks the arguments against the contract."""
    seen: list[Any] = []

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        seen.append(params.arguments)
        return types.CallToolResult(content=[])

    async def list_tools(ctx: Any, params: Any) -> types.ListToolsResult:
        schema = {"type": "object", "properties": {"n": {"type": "integer"}}, "required": ["n"]}
        return types.ListToolsResult(tools=[types.Tool(name="t", input_schema=schema)])

    async def run() -> None:
        server: Server[Any] = Server("t", on_call_tool=call_tool, on_list_tools=list_tools)
        to_server, reads = anyio.create_memory_object_stream[SessionMessage | Exception](4)
        writes, from_server = anyio.create_memory_object_stream[SessionMessage](4)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.run, reads, writes, server.create_initialization_options())
            for message in (
                {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                    "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}},
                {"jsonrpc": "2.0", "method": "notifications/initialized"},
                {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "t", "arguments": {"n": "x"}}},
            ):  # fmt: skip
                await to_server.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(message)))
            with anyio.fail_after(10):
                while not seen:
                    await from_server.receive()
            tasks.cancel_scope.cancel()

    anyio.run(run)
    assert seen == [{"n": "x"}]  # the handler got what the schema refuses


def test_gap_14_uvicorn_passes_no_tls_handshake_timeout() -> None:
    """Paid for by http/connections.GracefulServer.startup."""
    assert "ssl_handshake_timeout" not in inspect.getsource(uvicorn.Server.startup)


def test_gap_16_a_call_through_the_sdk_copies_its_arguments_in_and_its_answer_out() -> None:
    """Paid for by the door (answers/door.py): codescout's own calls never go through the SDK."""
    hits = [{"path": "a.py", "matches": 1, "last_modified_days": 0}]
    arguments = {"hits": hits}
    seen: list[Any] = []
    structured = {"results": [], "counts": {"hits": 1, "returned": 0}}

    async def call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        seen.append(params.arguments)
        return types.CallToolResult(content=[], structured_content=structured)

    async def run() -> Any:
        server: Server[Any] = Server("t", on_call_tool=call_tool)
        to_server, reads = anyio.create_memory_object_stream[SessionMessage | Exception](4)
        writes, from_server = anyio.create_memory_object_stream[SessionMessage](4)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.run, reads, writes, server.create_initialization_options())
            client = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "c", "version": "1"}}
            opening = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": client}
            await to_server.send(SessionMessage(types.jsonrpc_message_adapter.validate_python(opening)))
            await to_server.send(
                SessionMessage(
                    types.jsonrpc_message_adapter.validate_python(
                        {"jsonrpc": "2.0", "method": "notifications/initialized"}
                    )
                )
            )
            call = types.JSONRPCRequest(
                jsonrpc="2.0", id=2, method="tools/call", params={"name": "t", "arguments": arguments}
            )
            await to_server.send(SessionMessage(call))
            with anyio.fail_after(10):
                while True:
                    item = await from_server.receive()
                    if getattr(item.message, "id", None) == 2:
                        tasks.cancel_scope.cancel()
                        return item.message

    answer = anyio.run(run)
    assert seen == [arguments] and seen[0] is not arguments  # copied in
    assert answer.result["structuredContent"] == structured
    assert answer.result["structuredContent"] is not structured  # and dumped out again
