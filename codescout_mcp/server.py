"""The SDK's low-level `Server`, built from the catalog and the toolbox.

The door (`answers/door.py`) answers the well-formed calls of codescout's tools itself; the
SDK's `Server` answers everything else (the handshake once it is up, odd-shaped calls, unknown
tools, methods this server does not serve). Its handlers run the same tool objects as the
door and build their results from the same words (`answers/words.py`), as the SDK's models.
The low-level Server does not check arguments against the input schema; each tool does.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

import mcp_types as types
from mcp.server.caching import CacheHint
from mcp.server.lowlevel import Server
from mcp.shared.exceptions import MCPError

from codescout_mcp.answers import catalog, words
from codescout_mcp.answers.door import Call
from codescout_mcp.answers.protocol import DISCOVERED_VERSIONS, MODERN_VERSIONS, SERVED_PROTOCOL_VERSIONS
from codescout_mcp.tools.toolbox import Offer

if TYPE_CHECKING:
    from codescout_mcp.answers.door import Tool

logger = logging.getLogger("codescout")

TOOLS_LIST_CACHE: Final = CacheHint(ttl_ms=catalog.TOOLS_LIST_TTL_MS, scope=catalog.TOOLS_LIST_CACHE_SCOPE)


def _modern(ctx: Any) -> bool:
    return getattr(ctx, "protocol_version", None) in MODERN_VERSIONS


class Tools:
    """The handlers for `tools/list` and `tools/call`, over the tools one server offers."""

    def __init__(self, tools: Sequence[Tool]) -> None:
        self.by_name = {tool.name: tool for tool in tools}
        # The tools as the SDK's models, made from the catalog's JSON (the one place they are written).
        self.listed = [types.Tool.model_validate(tool.definition, by_name=False) for tool in tools]

    async def list_tools(self, ctx: Any, params: types.PaginatedRequestParams | None) -> types.ListToolsResult:
        # One page holds every tool, so this server never hands out a cursor: any cursor is
        # one it did not issue, which the spec answers with -32602 rather than a page.
        if params is not None and params.cursor is not None:
            raise MCPError(code=types.INVALID_PARAMS, message=words.INVALID_CURSOR)
        if _modern(ctx):  # the lean stamp, as the door's early answer gives it
            stamp = {"_meta": {words.SERVER_INFO_KEY: dict(words.SERVER_STAMP)}}
            return types.ListToolsResult.model_validate({"tools": self.listed, **stamp}, by_name=False)
        return types.ListToolsResult(tools=self.listed)

    async def call_tool(self, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        tool = self.by_name.get(params.name)
        if tool is None:
            raise MCPError(code=types.INVALID_PARAMS, message=words.unknown_tool(params.name, list(self.by_name)))
        call = Call(tool, None, dict(params.arguments or {}), modern=_modern(ctx))
        result = await call.settled(call.result)
        return types.CallToolResult.model_validate(result, by_name=False)


def build_server(workspace: str | None = None, *, offer: Offer | None = None) -> Server[Any]:
    """A fresh low-level Server making `offer` (by default, the one for `workspace`)."""
    offer = offer if offer is not None else Offer(workspace)
    handlers = Tools(offer.tools)
    info = catalog.SERVER_INFO
    server: Server[Any] = Server(
        info["name"],
        version=info["version"],
        title=info["title"],
        description=info["description"],
        instructions=offer.instructions,
        website_url=info["websiteUrl"],
        icons=[types.Icon.model_validate(icon, by_name=False) for icon in info["icons"]],
        cache_hints={"tools/list": TOOLS_LIST_CACHE},
        on_list_tools=handlers.list_tools,
        on_call_tool=handlers.call_tool,
    )
    _discover_every_served_version(server)
    return server


def _discover_every_served_version(server: Server[Any]) -> None:
    """Let `server/discover` name every served version; the rest of its answer stays the SDK's.

    The low-level Server takes no versions to discover: its own handler names the modern
    ones only. This wraps that handler and replaces the list alone.
    """
    registered = server.get_request_handler("server/discover")
    assert registered is not None  # the SDK registers it in every Server
    sdk_discover = registered.handler

    async def discover(ctx: Any, params: types.RequestParams) -> types.DiscoverResult:
        result = await sdk_discover(ctx, params)
        assert isinstance(result, types.DiscoverResult)  # what the SDK's handler returns
        return result.model_copy(update={"supported_versions": list(DISCOVERED_VERSIONS)})

    server.add_request_handler("server/discover", types.RequestParams, discover)


__all__ = ["SERVED_PROTOCOL_VERSIONS", "Tools", "build_server"]
