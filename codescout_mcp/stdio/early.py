"""The stdio server's first moments: a host's opening requests are answered while the SDK loads.

Importing the MCP SDK takes most of a second (two or three on a busy machine), and hosts give
up on a server that does not answer their first requests in time: `codex exec` starts its
turn without the server's tools, `claude -p` marks it pending. So the requests a host sends
before its first tool call are answered here, from the server's own definition
(`catalog.py`), in the same words the SDK's `Server` uses:

* the handshake era (2024-11-05 to 2025-11-25): `initialize` as the first request, then
  `ping`, `tools/list` (any `_meta`; a cursor is -32602, as the server's handler says) and the
  lists this server does not serve (`prompts/list`, `resources/list`,
  `resources/templates/list`: -32601). `initialize` with params the SDK would refuse gets the
  SDK's -32602;
* 2026-07-28, each request carrying its protocol version in `_meta`: `server/discover`,
  `tools/list`, and -32601 for `ping` and the unserved lists.

Only what the SDK is sure to answer the same way is answered: params of a shape the checks
below do not vouch for, any other method, or anything after a request left for the SDK, wait
for it. Everything read is kept, in order, for the SDK's `Server`, which answers the rest once
it is up; its answers to what was answered here are dropped and compared (`relay.py`: a
difference is logged once). The suite holds each early answer to the SDK's own, as JSON, for
whatever SDK is installed (tests/stdio/test_stdio_start.py), with the first messages real hosts
send (tests/data/first-messages/).

While the SDK loads, at most EARLY_BACKLOG messages and EARLY_BACKLOG_BYTES of them are held:
past either bound, stdin is not read until the SDK is up.
"""

from __future__ import annotations

import logging
import queue

from codescout_mcp import catalog
from codescout_mcp.jsonrpc import (
    BLANK,
    INVALID_PARAMS,
    METHOD_NOT_FOUND,
    Refusal,
    Unanswerable,
    check_envelope,
    encode,
)
from codescout_mcp.protocol import BATCH_VERSIONS, DISCOVERED_VERSIONS
from codescout_mcp.shapes import (
    PROTOCOL_VERSION_KEY,
    client_capabilities,
    implementation,
    is_str,
    modern_meta,
    optional,
    request_meta,
)
from codescout_mcp.stdio.framing import Line, value_of
from codescout_mcp.stdio.pipes import EOF

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

    from codescout_mcp.stdio import Loader
    from codescout_mcp.stdio.pipes import Reader, Stopper, Writer

logger = logging.getLogger("codescout")

# Messages held while the SDK loads, by count and by their bytes on the wire (the bound the
# session keeps on requests being served); one message larger than that is still taken, alone.
EARLY_BACKLOG: Final = 64
EARLY_BACKLOG_BYTES: Final = 64 * 1024 * 1024

SERVER_INFO_KEY: Final = "io.modelcontextprotocol/serverInfo"

UNSERVED_LISTS: Final = frozenset({"prompts/list", "resources/list", "resources/templates/list"})
INVALID_CURSOR: Final = "Invalid cursor: tools/list has one page and no cursors"


# --- what the SDK would say -------------------------------------------------------------------


class Answers:
    """The answers, built from the catalog, for a server with or without the workspace tool."""

    def __init__(self, *, workspace: bool) -> None:
        self.instructions = catalog.instructions(workspace=workspace)
        self.tools = catalog.tools(workspace=workspace)

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
        return {
            "tools": self.tools,
            "resultType": "complete",
            "ttlMs": catalog.TOOLS_LIST_TTL_MS,
            "cacheScope": catalog.TOOLS_LIST_CACHE_SCOPE,
            "_meta": {SERVER_INFO_KEY: catalog.SERVER_INFO},
        }

    def discover(self) -> dict[str, Any]:
        return {
            "supportedVersions": list(DISCOVERED_VERSIONS),
            "capabilities": catalog.CAPABILITIES,
            "instructions": self.instructions,
            "resultType": "complete",
            "ttlMs": 0,
            "cacheScope": "private",
            "_meta": {SERVER_INFO_KEY: catalog.SERVER_INFO},
        }


def method_not_found(method: str) -> dict[str, Any]:
    return {"code": METHOD_NOT_FOUND, "message": "Method not found", "data": method}


def invalid_params() -> dict[str, Any]:
    """What the SDK says of params its models refuse: it names nothing."""
    return {"code": INVALID_PARAMS, "message": "Invalid request parameters", "data": ""}


def initialize_params(params: object) -> bool | None:
    """True for `initialize` params the SDK accepts, False for ones it refuses (-32602), None when unsure."""
    if not isinstance(params, dict):
        return None
    required = ("protocolVersion", "capabilities", "clientInfo")
    if any(key not in params for key in required) or not is_str(params["protocolVersion"]):
        return False
    if not isinstance(params["capabilities"], dict) or not isinstance(params["clientInfo"], dict):
        return False
    client = params["clientInfo"]
    if not (is_str(client.get("name")) and is_str(client.get("version"))):
        return False
    sure = (
        implementation(client)
        and client_capabilities(params["capabilities"])
        and optional(params, "_meta", request_meta)
    )
    return True if sure else None


def list_params(params: object, *, modern: bool) -> bool:
    """Params a list request may carry whatever the SDK: `_meta`, and a string cursor."""
    if params is None:
        return not modern
    if not isinstance(params, dict) or not set(params) <= {"_meta", "cursor"}:
        return False
    return optional(params, "cursor", is_str) and (
        modern_meta(params.get("_meta")) if modern else optional(params, "_meta", request_meta)
    )


def opens_modern(message: dict[str, Any]) -> bool:
    """Whether a request carries the 2026-07-28 envelope (as the SDK tells the eras apart)."""
    params = message.get("params")
    meta = params.get("_meta") if isinstance(params, dict) else None
    return message["method"] != "initialize" and isinstance(meta, dict) and PROTOCOL_VERSION_KEY in meta


# --- the first moments ----------------------------------------------------------------------------


class Entry:
    """A message read before the SDK was up: its JSON value (checked, for an object), and the
    answer already sent for it, if any."""

    __slots__ = ("early", "value")

    def __init__(self, value: object, early: bytes | None = None) -> None:
        self.value = value
        self.early = early


class EarlyAnswers:
    """Reads and answers what it can until the SDK is up; keeps the rest, in order, for it."""

    def __init__(self, writer: Writer, max_message_bytes: int, *, workspace: bool, enabled: bool = True) -> None:
        self.answers = Answers(workspace=workspace) if enabled else None
        self.writer = writer
        self.max_message_bytes = max_message_bytes
        self.backlog: list[Entry | object] = []
        self.backlog_bytes = 0
        self.negotiated: str | None = None  # the version an early `initialize` settled on
        self.sent: int = 0  # early answers given
        self.era: str | None = None  # "handshake" or "modern", once the first request settled it
        self._waiting = 0  # requests read that the SDK must answer

    @property
    def full(self) -> bool:
        return len(self.backlog) >= EARLY_BACKLOG or self.backlog_bytes >= EARLY_BACKLOG_BYTES

    def run(self, reader: Reader, loader: Loader, stopper: Stopper) -> str:
        """ "session" once the SDK is up, "failed" if it could not load, "done" if stdin ended with
        nothing left to answer, "stopped" on a signal or once no client reads stdout."""
        ended = False
        while not stopper.stopped.is_set():
            if loader.ready.is_set():
                return "failed" if loader.error is not None else "session"
            if ended and (not self._waiting or self.writer.reader_gone()):
                return "done" if not self._waiting else "stopped"
            if ended or self.full:
                loader.ready.wait(0.05)
                continue
            try:
                item = reader.items.get(timeout=0.05)
            except queue.Empty:
                continue
            if item is EOF:
                ended = True
                self.backlog.append(EOF)
                continue
            self._take(item)
        return "stopped"

    def waiting_requests(self) -> list[dict[str, Any]]:
        """The requests held for the SDK that no early answer went to."""
        return [
            entry.value
            for entry in self.backlog
            if isinstance(entry, Entry)
            and entry.early is None
            and isinstance(entry.value, dict)
            and "id" in entry.value
            and "method" in entry.value
        ]

    def _take(self, item: object) -> None:
        self.backlog_bytes += len(item.data) if isinstance(item, Line) else 0
        try:
            value = value_of(item, self.max_message_bytes)  # type: ignore[arg-type]
            if value is BLANK:
                return
            if isinstance(value, list) and (self.negotiated is None or self.negotiated in BATCH_VERSIONS):
                # A batch, perhaps: whether it may be one is for the session to say.
                self._keep(Entry(value), request=True)
                return
            message = check_envelope(value)
        except Refusal as refusal:
            logger.info("refused a message: %s", refusal.message)
            self.writer.send(refusal.reply())
            return
        except Unanswerable as error:
            logger.info("dropped a message: %s", error)
            return
        is_request = "id" in message and "method" in message
        early = self._early_answer(message) if is_request else None
        if early is not None:
            self.writer.send(early)
            self.sent += 1
            logger.debug("answered %s before the SDK loaded", message["method"])
        self._keep(Entry(message, early), request=is_request and early is None)

    def _keep(self, entry: Entry, *, request: bool) -> None:
        self.backlog.append(entry)
        if request:
            self._waiting += 1
            self.answers_stop(entry.value)

    def answers_stop(self, value: object) -> None:
        """After a request left for the SDK, nothing more is answered early (it may change what
        the SDK would say), except that a tool call changes nothing the handshake depends on."""
        if not (isinstance(value, dict) and value.get("method") == "tools/call"):
            self.answers = None

    def _early_answer(self, message: dict[str, Any]) -> bytes | None:
        """The answer the SDK is sure to give `message`, or None to leave it to the SDK."""
        answers = self.answers
        if answers is None:
            return None
        method, params = message["method"], message.get("params")
        reply: dict[str, Any]
        if self.era is None:
            if method == "initialize":
                sure = initialize_params(params)
                if sure is None:
                    return None
                self.era = "handshake"
                if not sure:
                    self.answers = None  # the SDK's connection is not initialized: it answers the rest
                    reply = {"error": invalid_params()}
                else:
                    assert isinstance(params, dict)
                    self.negotiated = params["protocolVersion"]
                    reply = {"result": answers.initialize(params["protocolVersion"])}
            elif opens_modern(message):
                self.era = "modern"
                return self._early_answer(message)
            else:
                return None
        elif self.era == "handshake":
            if opens_modern(message) or self.negotiated is None:
                return None
            if method == "ping" and list_params(params, modern=False) and "cursor" not in (params or {}):
                reply = {"result": {}}
            elif method == "tools/list" and list_params(params, modern=False):
                reply = self._tools_list(answers, params, modern=False)
            elif method in UNSERVED_LISTS and list_params(params, modern=False):
                reply = {"error": method_not_found(method)}
            else:
                return None
        else:
            if not (method != "initialize" and list_params(params, modern=True)):
                return None
            assert isinstance(params, dict)
            if method == "server/discover" and "cursor" not in params:
                reply = {"result": answers.discover()}
            elif method == "tools/list":
                reply = self._tools_list(answers, params, modern=True)
            elif (method in UNSERVED_LISTS or method == "ping") and "cursor" not in params:
                reply = {"error": method_not_found(method)}
            else:
                return None
        return encode({"jsonrpc": "2.0", "id": message["id"], **reply})

    @staticmethod
    def _tools_list(answers: Answers, params: object, *, modern: bool) -> dict[str, Any]:
        if isinstance(params, dict) and "cursor" in params:
            return {"error": {"code": INVALID_PARAMS, "message": INVALID_CURSOR}}
        return {"result": answers.tools_list(modern=modern)}
