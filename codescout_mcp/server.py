"""The MCP front: one tool, `rank_search_results`, on the SDK's low-level Server.

The handler checks arguments itself (the low-level Server does not): it calls the same
`rank` the CLI calls, and turns InvalidArguments into a tool error the model can read.
"""

from __future__ import annotations

import json
import logging
import signal
import sys
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp.server.stdio import stdio_server
from mcp.shared.exceptions import MCPError
from mcp.shared.message import SessionMessage

from codescout_mcp import __version__
from codescout_mcp.contract import INPUT_SCHEMA, OUTPUT_SCHEMA, TOOL_DESCRIPTION, TOOL_NAME, TOOL_TITLE
from codescout_mcp.tool import rank
from codescout_mcp.validate import InvalidArguments

logger = logging.getLogger("codescout")

INSTRUCTIONS: Final = (
    "codescout ranks code-search hits you already have. After a search (ripgrep, grep, an IDE) "
    "returns many files, call rank_search_results with each file's path, match count and days "
    "since it last changed, and open the files in the order it returns. It never searches or "
    "reads files itself."
)

TOOL: Final = types.Tool(
    name=TOOL_NAME,
    title=TOOL_TITLE,
    description=TOOL_DESCRIPTION,
    input_schema=INPUT_SCHEMA,
    output_schema=OUTPUT_SCHEMA,
    annotations=types.ToolAnnotations(
        title=TOOL_TITLE,
        read_only_hint=True,
        destructive_hint=False,
        idempotent_hint=True,
        open_world_hint=False,
    ),
)

# Ranking is CPU work on the event loop's thread. Large calls go to a worker thread so the
# loop keeps answering pings and reading other requests while they run.
_OFFLOAD_HITS: Final = 5_000


async def _list_tools(ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
    return types.ListToolsResult(tools=[TOOL])


def answer(arguments: dict[str, Any] | None) -> types.CallToolResult:
    """The tool's result for some arguments: the ranking, or a tool error naming the location."""
    try:
        result = rank({} if arguments is None else arguments)
    except InvalidArguments as error:
        return types.CallToolResult(content=[types.TextContent(text=str(error))], is_error=True)
    text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    return types.CallToolResult(content=[types.TextContent(text=text)], structured_content=result)


async def _call_tool(ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
    if params.name != TOOL_NAME:
        message = f"Unknown tool: {params.name!r}; this server has {TOOL_NAME!r}"
        raise MCPError(code=types.INVALID_PARAMS, message=message)
    arguments = params.arguments
    hits = arguments.get("hits") if arguments else None
    if isinstance(hits, list) and len(hits) > _OFFLOAD_HITS:
        return await anyio.to_thread.run_sync(answer, arguments)
    return answer(arguments)


def build_server() -> Server[Any]:
    """A fresh low-level Server offering the one tool."""
    return Server(
        "codescout",
        version=__version__,
        title="codescout",
        description="Ranks code-search hits by matches and recency.",
        instructions=INSTRUCTIONS,
        on_list_tools=_list_tools,
        on_call_tool=_call_tool,
    )


async def _serve_stdio() -> None:
    server = build_server()
    async with stdio_server() as (stdin, stdout), anyio.create_task_group() as tasks:
        tasks.start_soon(_stop_on_signal, tasks.cancel_scope)
        to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception]()
        server_writes, from_server = anyio.create_memory_object_stream[SessionMessage]()
        unanswered = _Unanswered()
        tasks.start_soon(_relay_requests, stdin, to_server, unanswered)
        tasks.start_soon(_relay_answers, from_server, stdout, unanswered)
        await server.run(server_reads, server_writes, server.create_initialization_options())
        tasks.cancel_scope.cancel()


# The SDK's loop stops serving as soon as its input ends, dropping answers still being
# worked on, so `printf '...' | codescout mcp` would lose the last replies. The relays below
# hold the end of input back until every request read so far has been answered.
_DRAIN_SECONDS: Final = 60.0


class _Unanswered:
    """Request ids read from the client that have no response written yet."""

    def __init__(self) -> None:
        self.ids: dict[types.RequestId, int] = {}
        self.input_ended = False
        self.drained = anyio.Event()

    def add(self, request_id: types.RequestId) -> None:
        self.ids[request_id] = self.ids.get(request_id, 0) + 1

    def discard(self, request_id: types.RequestId) -> None:
        left = self.ids.pop(request_id, 0) - 1
        if left > 0:
            self.ids[request_id] = left
        if self.input_ended and not self.ids:
            self.drained.set()


async def _relay_requests(stdin: Any, to_server: Any, unanswered: _Unanswered) -> None:
    async with to_server:
        async for item in stdin:
            if isinstance(item, SessionMessage):
                message = item.message
                if isinstance(message, types.JSONRPCRequest):
                    unanswered.add(message.id)
                elif isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
                    # A cancelled request may never be answered; do not wait for it.
                    unanswered.discard((message.params or {}).get("requestId", ""))
            await to_server.send(item)
        unanswered.input_ended = True
        if unanswered.ids:
            with anyio.move_on_after(_DRAIN_SECONDS):
                await unanswered.drained.wait()


async def _relay_answers(from_server: Any, stdout: Any, unanswered: _Unanswered) -> None:
    async with from_server, stdout:
        async for item in from_server:
            await stdout.send(item)
            message = item.message
            if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)) and message.id is not None:
                unanswered.discard(message.id)


async def _stop_on_signal(scope: anyio.CancelScope) -> None:
    with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
        async for signum in signals:
            logger.info("received %s, stopping", signal.Signals(signum).name)
            scope.cancel()
            return


def configure_logging(level: str) -> None:
    """Log to stderr only: on stdio, stdout carries nothing but JSON-RPC."""
    logging.basicConfig(
        stream=sys.stderr,
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )


def serve(*, log_level: str = "warning") -> int:
    """Serve MCP over stdio until stdin closes or a signal arrives; return the exit status."""
    configure_logging(log_level)
    try:
        anyio.run(_serve_stdio)
    except KeyboardInterrupt:  # a second Ctrl-C while stopping
        return 130
    return 0
