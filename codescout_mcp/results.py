"""What both tools return over MCP: a result carrying the answer, or a tool error a model can read.

Below `server.py` and `workspace.py`, which both build on it, so that neither imports the other.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Sequence
from typing import Any

import mcp_types as types

from codescout_mcp.validate import InvalidArguments


def tool_error(message: str) -> types.CallToolResult:
    """A tool error (`isError: true`) whose one text block says what went wrong."""
    return types.CallToolResult(content=[types.TextContent(text=message)], is_error=True)


def tool_result(compute: Callable[[], dict[str, Any]], notes: Sequence[str] = ()) -> types.CallToolResult:
    """A successful result carrying `compute()`, or a tool error naming where the input is wrong.

    The answer is the structured content and, as compact JSON, the first text block; each
    note (something the caller should know about the answer) follows as a text block of its own.
    """
    try:
        result = compute()
    except InvalidArguments as error:
        return tool_error(str(error))
    text = json.dumps(result, ensure_ascii=False, separators=(",", ":"))
    blocks: list[types.ContentBlock] = [types.TextContent(text=text)]
    blocks += [types.TextContent(text=f"Note: {note}") for note in notes]
    return types.CallToolResult(content=blocks, structured_content=result)
