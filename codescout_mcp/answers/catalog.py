"""What the server says of itself, as plain JSON data: its identity, its capabilities and its tools.

Written once, here, in the form MCP puts on the wire. The SDK's `Server` is built from it
(`server.py`), and the stdio transport answers a host's first requests from it before the SDK
has loaded (`stdio/early.py`); the test suite holds the two to the same answers, for whatever
SDK is installed. Standard library only.
"""

from __future__ import annotations

import base64
import os

from codescout_mcp.answers.protocol import WEBSITE_URL
from codescout_mcp.core.contract import (
    INPUT_SCHEMA,
    OUTPUT_SCHEMA,
    SEARCH_INPUT_SCHEMA,
    SEARCH_OUTPUT_SCHEMA,
    SEARCH_TOOL_DESCRIPTION,
    SEARCH_TOOL_NAME,
    SEARCH_TOOL_TITLE,
    TOOL_DESCRIPTION,
    TOOL_NAME,
    TOOL_TITLE,
    WORKSPACE_INPUT_SCHEMA,
    WORKSPACE_TOOL_DESCRIPTION,
    WORKSPACE_TOOL_NAME,
    WORKSPACE_TOOL_TITLE,
)
from codescout_mcp.version import __version__

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

ICONS_FOLDER: Final = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "icons")


def _icon(name: str, mime_type: str, size: str) -> dict[str, Any]:
    """An icon shipped in the package, inlined as a data: URI: a client need fetch nothing to show it."""
    with open(os.path.join(ICONS_FOLDER, name), "rb") as handle:
        data = base64.b64encode(handle.read()).decode("ascii")
    return {"src": f"data:{mime_type};base64,{data}", "mimeType": mime_type, "sizes": [size]}


# The same picture twice: SVG scales, and PNG is the one format every client that shows icons
# must support (SVG is only recommended). Both are small: on 2026-07-28 every answer repeats them.
ICONS: Final = [_icon("codescout.svg", "image/svg+xml", "any"), _icon("codescout.png", "image/png", "64x64")]

SERVER_INFO: Final[dict[str, Any]] = {
    "name": "codescout",
    "title": "codescout",
    "version": __version__,
    "description": "Ranks code-search hits by matches and recency.",
    "websiteUrl": WEBSITE_URL,
    "icons": ICONS,
}

# The tool list never changes while the server runs (the --workspace setting is fixed for
# its life), so none is announced.
CAPABILITIES: Final[dict[str, Any]] = {"tools": {"listChanged": False}}

# The tool list changes only with the version: clients may keep it for a day and share it
# between users (2026-07-28's cache hints).
TOOLS_LIST_TTL_MS: Final = 24 * 60 * 60 * 1000
TOOLS_LIST_CACHE_SCOPE: Final = "public"


def read_only(title: str) -> dict[str, Any]:
    """What every tool is: it changes nothing, answers the same to the same, reaches nothing outside."""
    return {
        "title": title,
        "readOnlyHint": True,
        "destructiveHint": False,
        "idempotentHint": True,
        "openWorldHint": False,
    }


RANK_TOOL: Final[dict[str, Any]] = {
    "name": TOOL_NAME,
    "title": TOOL_TITLE,
    "description": TOOL_DESCRIPTION,
    "inputSchema": INPUT_SCHEMA,
    "outputSchema": OUTPUT_SCHEMA,
    "annotations": read_only(TOOL_TITLE),
}

WORKSPACE_TOOL: Final[dict[str, Any]] = {
    "name": WORKSPACE_TOOL_NAME,
    "title": WORKSPACE_TOOL_TITLE,
    "description": WORKSPACE_TOOL_DESCRIPTION,
    "inputSchema": WORKSPACE_INPUT_SCHEMA,
    "outputSchema": OUTPUT_SCHEMA,
    "annotations": read_only(WORKSPACE_TOOL_TITLE),
}


SEARCH_TOOL: Final[dict[str, Any]] = {
    "name": SEARCH_TOOL_NAME,
    "title": SEARCH_TOOL_TITLE,
    "description": SEARCH_TOOL_DESCRIPTION,
    "inputSchema": SEARCH_INPUT_SCHEMA,
    "outputSchema": SEARCH_OUTPUT_SCHEMA,
    "annotations": read_only(SEARCH_TOOL_TITLE),
}


__all__ = ["CAPABILITIES", "RANK_TOOL", "SEARCH_TOOL", "SERVER_INFO", "TOOLS_LIST_TTL_MS", "WORKSPACE_TOOL"]
