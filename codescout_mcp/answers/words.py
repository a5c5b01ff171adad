"""The SDK's words and shapes, spelled once: what codescout says where it answers for the SDK.

codescout answers some messages itself (`door.py`: tool calls; a host's first requests before
the SDK has loaded) and leaves the rest to the SDK's `Server`, whose handlers (`server.py`)
build their results from these same pieces. So a wording or a shape changes in one place for
both paths; tests/stdio/test_direct_calls.py and tests/unit/test_early_answers.py hold what
codescout says to what the installed SDK says. Standard library only.
"""

from __future__ import annotations

import json
import logging

from codescout_mcp.answers.catalog import SERVER_INFO
from codescout_mcp.core.text import shown

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Final

logger = logging.getLogger("codescout")

# JSON-RPC error codes, as the SDK answers with them.
METHOD_NOT_FOUND: Final = -32601
INVALID_PARAMS: Final = -32602
INTERNAL_ERROR: Final = -32603

SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"
# What a 2026-07-28 result names of the server: the two fields the protocol requires of an
# Implementation. The icons (data URIs, most of the bytes) are in `server/discover` and
# `initialize`, where hosts show them; a tool result repeats only who answered.
SERVER_STAMP: Final = {"name": SERVER_INFO["name"], "version": SERVER_INFO["version"]}

INVALID_CURSOR: Final = "Invalid cursor: tools/list has one page and no cursors"


def compact(value: object) -> str:
    """JSON as a tool result's text block carries it: compact, characters as they are."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


def tool_result(value: dict[str, Any], notes: Sequence[str] = ()) -> dict[str, Any]:
    """A successful tool result: `value` as structured content and, compact, as the first text block;
    each note (something the caller should know about the answer) a text block of its own."""
    content = [{"type": "text", "text": compact(value)}]
    content += [{"type": "text", "text": f"Note: {note}"} for note in notes]
    return {"content": content, "isError": False, "structuredContent": value}


def tool_error(text: str) -> dict[str, Any]:
    """A tool error (`isError: true`) whose one text block says what went wrong."""
    return {"content": [{"type": "text", "text": text}], "isError": True}


def internal_error(tool: str, error: BaseException) -> dict[str, Any]:
    """The tool error for a bug: the caller still gets an answer, the log the details."""
    logger.error("tool %s failed: %s: %s", shown(tool), type(error).__name__, shown(str(error)))
    logger.debug("the failure in full", exc_info=error)
    return tool_error(f"internal error in {tool}: {type(error).__name__}; see the server's log")


def unknown_tool(name: object, offered: Sequence[str]) -> str:
    """The -32602 message for a call of a tool this server does not have."""
    names = " and ".join(repr(tool) for tool in offered)
    return f"Unknown tool: {name!r}; this server has {names}"


def stamped(result: dict[str, Any], *, modern: bool) -> dict[str, Any]:
    """A result as it goes out at its protocol version: at 2026-07-28 it says it is complete and
    who answered (the lean stamp); at the handshake versions it goes as it is."""
    if modern:
        result["resultType"] = "complete"
        meta = result.get("_meta")
        result["_meta"] = {**(meta if isinstance(meta, dict) else {}), SERVER_INFO_KEY: dict(SERVER_STAMP)}
    return result


def answer(request_id: object, result: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC answer carrying `result`."""
    return {"jsonrpc": "2.0", "id": request_id, "result": result}


def error_answer(request_id: object, error: dict[str, Any]) -> dict[str, Any]:
    """A JSON-RPC answer carrying `error`."""
    return {"jsonrpc": "2.0", "id": request_id, "error": error}


def method_not_found(method: str) -> dict[str, Any]:
    return {"code": METHOD_NOT_FOUND, "message": "Method not found", "data": method}


def invalid_params() -> dict[str, Any]:
    """What the SDK says of params its models refuse: it names nothing."""
    return {"code": INVALID_PARAMS, "message": "Invalid request parameters", "data": ""}


def invalid_cursor() -> dict[str, Any]:
    return {"code": INVALID_PARAMS, "message": INVALID_CURSOR}


def batch_too_large(bound: str) -> str:
    """The error a batch member gets once the batch's answers passed `bound` (the transport's words for it)."""
    return f"Internal error: this batch's answers passed {bound}; send its requests in smaller batches"


# A cancelled call's result: never sent (nobody reads it), but every call has one.
CANCELLED: Final = "cancelled before it finished; nothing was answered"
BATCH_OUT_OF_TIME: Final = (
    "not run: the calls before it in its batch used up the batch's time (one deadline covers every "
    "call in a batch); send it again, alone or in a smaller batch"
)


def progress_notification(token: str | int, progress: float, message: str) -> dict[str, Any]:
    """`notifications/progress` for the request whose progress token is `token`: how far it is, in words too."""
    params = {"progressToken": token, "progress": progress, "message": message}
    return {"jsonrpc": "2.0", "method": "notifications/progress", "params": params}
