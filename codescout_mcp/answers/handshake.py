"""A host's first requests, answered from codescout's own definition in the SDK's words.

Importing the MCP SDK takes most of a second (two or three on a busy machine), and hosts give
up on a server that does not answer their first requests in time. So, on stdio, the requests
a host sends before its first tool call are answered before the SDK has loaded, from the
catalog, as the SDK's `Server` would answer them:

* the handshake era (2024-11-05 to 2025-11-25): `initialize` as the first request, then
  `ping`, `tools/list` (any `_meta`; a cursor is -32602, as the server's handler says) and the
  lists this server does not serve (`prompts/list`, `resources/list`,
  `resources/templates/list`: -32601). `initialize` with params the SDK would refuse gets the
  SDK's -32602;
* 2026-07-28, each request carrying its protocol version in `_meta`: `server/discover`,
  `tools/list`, and -32601 for `ping` and the unserved lists.

Only what the SDK is sure to answer the same way is answered (`accepted.py`); the door
(`door.py`) decides when. The suite holds each answer to the SDK's own, as JSON, for whatever
SDK is installed (tests/unit/test_early_answers.py), with the first messages real hosts send
(tests/data/first-messages/). Standard library only.
"""

from __future__ import annotations

from codescout_mcp.answers import catalog, words
from codescout_mcp.answers.accepted import initialize_params, list_params, opens_modern
from codescout_mcp.answers.protocol import DISCOVERED_VERSIONS

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, Final

UNSERVED_LISTS: Final = frozenset({"prompts/list", "resources/list", "resources/templates/list"})


class Reply:
    """An answer the SDK is sure to give, and what it settles in the session, for the door to
    apply: the version an `initialize` negotiated, or that no early answer may follow it."""

    __slots__ = ("ends_early", "message", "negotiated")

    def __init__(self, message: dict[str, Any], *, negotiated: str | None = None, ends_early: bool = False) -> None:
        self.message = message
        self.negotiated = negotiated
        self.ends_early = ends_early


class Handshake:
    """The answers to a host's first requests, for a server offering `tools` (their catalog entries)."""

    def __init__(self, tools: Sequence[dict[str, Any]], instructions: str) -> None:
        self.tools = list(tools)
        self.instructions = instructions

    def initialize(self, version: str) -> dict[str, Any]:
        return {
            "protocolVersion": version,
            "capabilities": catalog.CAPABILITIES,
            "serverInfo": catalog.SERVER_INFO,
            "instructions": self.instructions,
        }

    def tools_list(self, *, modern: bool) -> dict[str, Any]:
        if not modern:
            return {"tools": self.tools}
        result = {"tools": self.tools, "ttlMs": catalog.TOOLS_LIST_TTL_MS, "cacheScope": catalog.TOOLS_LIST_CACHE_SCOPE}
        return words.stamped(result, modern=True)

    def discover(self) -> dict[str, Any]:
        """`server/discover`: the whole identity, icons and all (what a 2026-07-28 host shows)."""
        return {
            "supportedVersions": list(DISCOVERED_VERSIONS),
            "capabilities": catalog.CAPABILITIES,
            "instructions": self.instructions,
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": {words.SERVER_INFO_KEY: catalog.SERVER_INFO},
        }

    def answer(self, message: dict[str, Any], era: str | None, negotiated: str | None) -> Reply | None:
        """The answer the SDK is sure to give `message` (a request) first thing in a session of
        `era` and `negotiated` version (the door's `Session`), or None to leave it to the SDK."""
        method, params = message["method"], message.get("params")
        reply: dict[str, Any]
        version: str | None = None  # what an `initialize` settles: the version, or no more early answers
        ends_early = False
        if method == "initialize":
            if era != "handshake" or negotiated is not None:
                return None
            sure = initialize_params(params)
            if sure is None:
                return None
            if not sure:
                ends_early = True  # the SDK's connection stays uninitialized: it answers the rest
                reply = {"error": words.invalid_params()}
            else:
                assert isinstance(params, dict)
                version = params["protocolVersion"]
                reply = {"result": self.initialize(params["protocolVersion"])}
        elif era == "handshake":
            if opens_modern(message) or negotiated is None or not list_params(params, modern=False):
                return None
            if method == "ping" and "cursor" not in (params or {}):
                reply = {"result": {}}
            elif method == "tools/list":
                reply = self._tools_list(params, modern=False)
            elif method in UNSERVED_LISTS:
                reply = {"error": words.method_not_found(method)}
            else:
                return None
        else:
            if not list_params(params, modern=True):
                return None
            assert isinstance(params, dict)
            if method == "server/discover" and "cursor" not in params:
                reply = {"result": self.discover()}
            elif method == "tools/list":
                reply = self._tools_list(params, modern=True)
            elif (method in UNSERVED_LISTS or method == "ping") and "cursor" not in params:
                reply = {"error": words.method_not_found(method)}
            else:
                return None
        return Reply({"jsonrpc": "2.0", "id": message["id"], **reply}, negotiated=version, ends_early=ends_early)

    def _tools_list(self, params: object, *, modern: bool) -> dict[str, Any]:
        if isinstance(params, dict) and "cursor" in params:
            return {"error": words.invalid_cursor()}
        return {"result": self.tools_list(modern=modern)}
