"""The MCP server: the tool `rank_search_results` (and, with a workspace, `rank_workspace_hits`).

This module defines what the server offers; the transports that carry it are `stdio/` and
`http/`. The handler checks arguments itself (the SDK's low-level Server does
not): it calls the same `rank` the CLI calls, and turns InvalidArguments into a tool error
the model can read.
"""

from __future__ import annotations

import contextlib
import logging
import threading
from collections.abc import Callable, Mapping
from functools import partial
from typing import TYPE_CHECKING, Any, Final, TypeVar

import anyio
import anyio.lowlevel
import mcp_types as types
from mcp.server.caching import CacheHint
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from codescout_mcp import catalog, direct
from codescout_mcp.contract import TOOL_NAME
from codescout_mcp.limits import OFFLOAD_HITS
from codescout_mcp.protocol import DISCOVERED_VERSIONS, SERVED_PROTOCOL_VERSIONS
from codescout_mcp.ranking import rank
from codescout_mcp.results import tool_error, tool_result
from codescout_mcp.text import shown

if TYPE_CHECKING:
    from codescout_mcp.workspace import WorkspaceTool

logger = logging.getLogger("codescout")

# The tools as the SDK's models, made from the catalog's JSON (the one place they are written).
TOOL: Final = types.Tool.model_validate(catalog.RANK_TOOL, by_name=False)
WORKSPACE_TOOL: Final = types.Tool.model_validate(catalog.WORKSPACE_TOOL, by_name=False)
TOOLS_LIST_CACHE: Final = CacheHint(ttl_ms=catalog.TOOLS_LIST_TTL_MS, scope=catalog.TOOLS_LIST_CACHE_SCOPE)


# rank_workspace_hits answers this many paths on the loop when no git process is needed.
WORKSPACE_INLINE_HITS: Final = 1_000


def answer(arguments: Mapping[str, Any] | None) -> types.CallToolResult:
    """The tool's result for some arguments: the ranking, or a tool error naming the location."""
    return tool_result(lambda: rank({} if arguments is None else arguments))


def _size(arguments: Mapping[str, Any] | None) -> int:
    hits = arguments.get("hits") if arguments else None
    return len(hits) if isinstance(hits, list) else 0


T = TypeVar("T")


async def in_worker(function: Callable[..., T], *args: object) -> T:
    """Run `function(*args)` in a daemon thread; a stop never waits for it to finish."""
    done = anyio.Event()
    box: dict[str, Any] = {}
    token = anyio.lowlevel.current_token()

    def work() -> None:
        try:
            box["value"] = function(*args)
        except BaseException as error:  # handed back to the awaiting task below
            box["error"] = error
        with contextlib.suppress(anyio.RunFinishedError, RuntimeError):  # the server may have stopped
            anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=work, daemon=True, name="codescout-rank").start()
    await done.wait()
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value


async def direct_answer(envelope: dict[str, Any], *, modern: bool) -> dict[str, Any]:
    """`direct.answer` for a call `direct.answerable` took, in a worker thread when it is large."""
    if direct.size_of(envelope) > OFFLOAD_HITS:
        return await in_worker(partial(direct.answer, envelope, modern=modern))
    return direct.answer(envelope, modern=modern)


class Tools:
    """The tools one server offers, and the handlers for `tools/list` and `tools/call`."""

    def __init__(self, workspace: str | None = None) -> None:
        self.listed = [TOOL]
        self.workspace_tool: WorkspaceTool | None = None
        if workspace is not None:
            from codescout_mcp.workspace import WorkspaceTool

            self.workspace_tool = WorkspaceTool(workspace)
            self.listed.append(WORKSPACE_TOOL)

    async def list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        # One page holds every tool, so this server never hands out a cursor: any cursor is
        # one it did not issue, which the spec answers with -32602 rather than a page.
        if params is not None and params.cursor is not None:
            raise MCPError(code=types.INVALID_PARAMS, message="Invalid cursor: tools/list has one page and no cursors")
        return types.ListToolsResult(tools=self.listed)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        try:
            return await self._call_tool(params)
        except MCPError:
            raise
        except Exception as error:  # a bug: the caller still gets an answer, the log the details
            logger.error("tool %s failed: %s: %s", shown(params.name), type(error).__name__, shown(str(error)))
            logger.debug("the failure in full", exc_info=True)
            return tool_error(f"internal error in {params.name}: {type(error).__name__}; see the server's log")

    async def _call_tool(self, params: types.CallToolRequestParams) -> types.CallToolResult:
        arguments = params.arguments
        if params.name == TOOL_NAME:
            if _size(arguments) > OFFLOAD_HITS:
                return await in_worker(answer, arguments)
            return answer(arguments)
        if self.workspace_tool is not None and params.name == self.workspace_tool.name:
            # What is already known is answered on the spot (a few stat calls a path); when git
            # or a file read must come first, the call goes to a worker thread and the loop
            # keeps serving.
            if _size(arguments) <= WORKSPACE_INLINE_HITS:
                from codescout_mcp.facts.repository import NeedsWork

                try:
                    return self.workspace_tool.answer(arguments, offline=True)
                except NeedsWork:
                    pass
            result: types.CallToolResult = await in_worker(self.workspace_tool.answer, arguments)
            return result
        names = " and ".join(repr(tool.name) for tool in self.listed)
        message = f"Unknown tool: {params.name!r}; this server has {names}"
        raise MCPError(code=types.INVALID_PARAMS, message=message)


def build_server(workspace: str | None = None) -> Server[Any]:
    """A fresh low-level Server offering the tool (and the workspace tool, given a workspace)."""
    tools = Tools(workspace)
    info = catalog.SERVER_INFO
    server: Server[Any] = Server(
        info["name"],
        version=info["version"],
        title=info["title"],
        description=info["description"],
        instructions=catalog.instructions(workspace=workspace is not None),
        website_url=info["websiteUrl"],
        icons=[types.Icon.model_validate(icon, by_name=False) for icon in info["icons"]],
        cache_hints={"tools/list": TOOLS_LIST_CACHE},
        on_list_tools=tools.list_tools,
        on_call_tool=tools.call_tool,
    )
    _discover_every_served_version(server)
    return server


def _discover_every_served_version(server: Server[Any]) -> None:
    """Let `server/discover` name every served version; the rest of its answer stays the SDK's.

    The low-level Server takes no versions to discover: its own handler names the modern
    ones only. This wraps that handler and replaces the list alone.
    """
    entry = server.get_request_handler("server/discover")
    assert entry is not None  # the SDK registers it in every Server
    sdk_discover = entry.handler

    async def discover(ctx: Any, params: types.RequestParams) -> types.DiscoverResult:
        result = await sdk_discover(ctx, params)
        assert isinstance(result, types.DiscoverResult)  # what the SDK's handler returns
        return result.model_copy(update={"supported_versions": list(DISCOVERED_VERSIONS)})

    server.add_request_handler("server/discover", types.RequestParams, discover)


__all__ = ["SERVED_PROTOCOL_VERSIONS", "Tools", "build_server"]
