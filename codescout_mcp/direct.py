"""A `tools/call` of rank_search_results answered by codescout itself, in the words the SDK would use.

Through the SDK, a call's arguments are copied into its models twice on the way in and its
answer twice more on the way out: serving a call of tiny hits that returns every one took
about 32 times its body in memory, against 11 here, and twice the time. So the transports
hand a well-formed call of the ranking tool straight to `ranking.rank` and build the JSON-RPC
answer the SDK's `Server` would have sent (`tool_result` and `tool_error` of `results.py`, as
the SDK writes them), byte for byte the same as JSON: tests/stdio/test_direct_calls.py holds the two
to the same answers for whatever SDK is installed. Anything else (another tool, params of a
shape this module does not vouch for, a session not yet initialized) still goes to the SDK.
Standard library only.
"""

from __future__ import annotations

import json
import logging

from codescout_mcp import catalog
from codescout_mcp.contract import TOOL_NAME
from codescout_mcp.shapes import PROTOCOL_VERSION_KEY, modern_meta, request_meta
from codescout_mcp.text import shown

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

logger = logging.getLogger("codescout")

SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"


def answerable(message: dict[str, Any], *, modern: bool) -> bool:
    """Whether `message` (a checked envelope) is a call this module answers as the SDK would."""
    if message.get("method") != "tools/call" or "id" not in message:
        return False
    params = message.get("params")
    if not isinstance(params, dict) or not set(params) <= {"name", "arguments", "_meta"}:
        return False
    if params.get("name") != TOOL_NAME or not isinstance(params.get("arguments", {}), dict):
        return False
    if modern:
        return modern_meta(params.get("_meta"))
    # At a handshake version, a request carrying the 2026-07-28 envelope is the SDK's to refuse.
    return "_meta" not in params or (request_meta(params["_meta"]) and PROTOCOL_VERSION_KEY not in params["_meta"])


def size_of(message: dict[str, Any]) -> int:
    """How many hits an answerable call holds (for choosing where to rank it)."""
    hits = message["params"].get("arguments", {}).get("hits")
    return len(hits) if isinstance(hits, list) else 0


def answer(message: dict[str, Any], *, modern: bool) -> dict[str, Any]:
    """The JSON-RPC answer to an answerable call: its ranking, or the tool error naming the place."""
    from codescout_mcp.ranking import rank
    from codescout_mcp.validate import InvalidArguments

    arguments = message["params"].get("arguments", {})
    result: dict[str, Any]
    try:
        ranking = rank(arguments)
    except InvalidArguments as error:
        result = {"content": [{"type": "text", "text": str(error)}], "isError": True}
    except Exception as error:  # a bug: the caller still gets an answer, the log the details (as server.Tools)
        logger.error("tool %s failed: %s: %s", TOOL_NAME, type(error).__name__, shown(str(error)))
        logger.debug("the failure in full", exc_info=True)
        text = f"internal error in {TOOL_NAME}: {type(error).__name__}; see the server's log"
        result = {"content": [{"type": "text", "text": text}], "isError": True}
    else:
        text = json.dumps(ranking, ensure_ascii=False, separators=(",", ":"))
        result = {"content": [{"type": "text", "text": text}], "isError": False, "structuredContent": ranking}
    if modern:
        result["resultType"] = "complete"
        result["_meta"] = {SERVER_INFO_KEY: catalog.SERVER_INFO}
    return {"jsonrpc": "2.0", "id": message["id"], "result": result}
