"""The Guard: ASGI middleware in front of the SDK's app, answering everything the SDK should never see.

In this order:

* a request with both Content-Length and Transfer-Encoding: 400, and the connection closed
  (RFC 9112: its body could be framed two ways, so a second request could hide in it); a
  header the Guard reads given twice (Host, Origin, Authorization, ...): 400 (which one would
  count is not for a proxy and the server to disagree on);
* a Host that is not loopback or allowed: 421; a browser Origin that is not allowed: 403
  (protection against DNS rebinding). A CORS preflight from an allowed Origin is answered
  with 204 and the allow headers; every answer to an allowed Origin carries
  `Access-Control-Allow-Origin`;
* anything but POST: 405 with `Allow: POST` (a stateless server has no event stream);
* a missing or wrong bearer token when CODESCOUT_AUTH_TOKEN is set: 401;
* an `MCP-Protocol-Version` the server knows but does not serve: 400; at the handshake-era
  versions, an Accept or Content-Type that rules out JSON: 406 or 415;
* a body over --max-body-bytes: 413;
* no slot (--max-concurrent) or no room in the byte budget (--max-buffered-bytes) before the
  request's own deadline: 503 with a Retry-After that tells when room must come back; until
  then the request waits in line (`budget.py`); a body not complete within --request-timeout
  (not counting its time in line): 408 (headers: see `connections.py`).

Each refusal closes the connection; one sent while the body is still arriving (406, 408, 413,
415, 503) reads and drops the rest first, for LINGER_SECONDS at most in all and without a slot,
so the client sees the answer instead of a reset.

Then every body is read here, as the stdio transport reads a line (`jsonrpc.py`): what is not
JSON gets -32700 (naming the byte offset, with the id when it can be read), what is not
JSON-RPC -32600, a malformed response 400 with no JSON-RPC answer at all, at every protocol
version. At the handshake-era versions (2025-03-26 to 2025-11-25, and a request with no
`MCP-Protocol-Version`, which means 2025-03-26) each message then goes to the SDK's `Server`
(`exchange.py`), and a batch (2025-03-26 only) is served member by member; at 2026-07-28 the
SDK's own entry serves the request from the body already read.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
import logging
import time
from typing import Any, Final

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from codescout_mcp.answers.door import Call, Door, Session
from codescout_mcp.http.access import CORS_MAX_AGE, Allowed, bearer_token, cors_headers
from codescout_mcp.http.asgi import (
    BUFFERS_FULL,
    BUSY,
    FORBIDDEN_ORIGIN,
    MALFORMED_RESPONSE,
    MISDIRECTED,
    RESPONSE_REFUSED,
    STARTED_KEY,
    TIMED_OUT,
    TOO_LARGE,
    ASGIApp,
    Headers,
    Receive,
    Scope,
    Send,
    replay,
    respond,
    retry_after,
)
from codescout_mcp.http.budget import MIN_UPLOAD_RATE, STALL_SECONDS, Budget, BudgetedSend, Held, Slots
from codescout_mcp.http.exchange import batch_answer, encoded, exchange, modern_checks_pass
from codescout_mcp.http.settings import ENDPOINT, HttpSettings
from codescout_mcp.jsonrpc import (
    INVALID_REQUEST,
    Refusal,
    Unanswerable,
    check_batch,
    check_envelope,
    decoded,
    encode,
    parsed,
    to_message,
)
from codescout_mcp.protocol import BATCH_VERSIONS, HANDSHAKE_VERSIONS, SERVED_PROTOCOL_VERSIONS

logger = logging.getLogger("codescout")

# The version a request without MCP-Protocol-Version speaks (the streamable HTTP spec's rule).
DEFAULT_VERSION: Final = "2025-03-26"
_UNSERVED_VERSIONS: Final = frozenset(KNOWN_PROTOCOL_VERSIONS) - frozenset(SERVED_PROTOCOL_VERSIONS)
# The headers the Guard reads whose every copy would have to agree.
SINGLE_HEADERS: Final = (
    b"host", b"origin", b"authorization", b"mcp-protocol-version", b"content-length", b"content-type",
    b"transfer-encoding", b"access-control-request-method",
)  # fmt: skip


class Guard:
    """ASGI middleware: the checks in the module docstring, then the SDK's app."""

    def __init__(
        self, app: ASGIApp, server: Server[Any], door: Door, settings: HttpSettings, token: str | None
    ) -> None:
        self.app = app
        self.server = server
        self.door = door
        self.settings = settings
        self.allowed = Allowed(settings.allow_hosts, settings.allow_origins)
        self.token = token.encode() if token is not None else None
        self.budget = Budget(settings.max_buffered_bytes)
        self.slots = Slots(settings.max_concurrent)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        deadline = scope.get(STARTED_KEY, started) + self.settings.request_timeout
        held = Held(self.budget, deadline)
        budgeted = BudgetedSend(send, held)
        try:
            await self._serve(scope, receive, budgeted)
        except asyncio.CancelledError:
            # The shutdown timeout ran out while this request was still arriving or being
            # served: tell the client, rather than leave uvicorn to log a traceback.
            if budgeted.status is not None:
                raise
            await respond(budgeted, 503, b"Service Unavailable: the server is shutting down\n", close=True)
        finally:
            held.release()
        if logger.isEnabledFor(logging.INFO):
            # The path only: a client may put a secret in the query string.
            elapsed = (time.monotonic() - started) * 1000
            client = scope.get("client")
            who = f"{client[0]}:{client[1]}" if client else "-"
            logger.info("%s %s %s -> %s in %.1f ms", who, scope["method"], scope["path"], budgeted.status, elapsed)

    async def _serve(self, scope: Scope, receive: Receive, send: BudgetedSend) -> None:
        headers = Headers(scope)
        if b"transfer-encoding" in headers and b"content-length" in headers:
            body = b"Bad Request: both Content-Length and Transfer-Encoding; send one (RFC 9112, section 6.3)\n"
            await respond(send, 400, body, close=True)
            return
        if headers.repeated in SINGLE_HEADERS:
            name = headers.repeated.decode("latin-1")
            await respond(send, 400, f"Bad Request: the {name} header is given more than once\n".encode(), close=True)
            return
        origin = headers.get(b"origin")
        if origin is not None and self.allowed.origin(origin.decode("latin-1")):
            send.extra = cors_headers(origin)
        if scope["method"] == "OPTIONS" and origin is not None and b"access-control-request-method" in headers:
            await self._preflight(headers, send)
            return
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await respond(send, *refusal, close=True)
            return
        if scope["path"] != ENDPOINT:
            await self.app(scope, receive, send)
            return
        version = headers.text(b"mcp-protocol-version") or None
        modern = version is not None and version not in HANDSHAKE_VERSIONS
        unacceptable = None if modern else _unacceptable(headers)
        if unacceptable is not None:
            status, text = unacceptable
            answer = encode(Refusal(INVALID_REQUEST, text).as_dict())
            await respond(send, status, answer, json_body=True, linger=receive, linger_bytes=self._linger_bytes)
            return
        if not await send.held.slot(self.slots):
            extra = [retry_after(self.slots.holders.retry_after())]
            await respond(send, 503, BUSY, linger=receive, linger_bytes=self._linger_bytes, extra=extra)
            return
        self.slots.holders.deadlines[id(send)] = send.held.body_deadline
        refusing: _Refusing | None = None
        try:
            read = await self._read_body(headers, receive, send)
            if isinstance(read, _Refusing):
                refusing = read
            elif read is not None:
                if modern:
                    await self._serve_modern(scope, headers, read, receive, send)
                else:
                    await self._serve_handshake_era(read, receive, send, version or DEFAULT_VERSION)
        finally:
            self.slots.holders.deadlines.pop(id(send), None)
            self.slots.give()
        if refusing is not None:  # the rest of the body is read and dropped without a slot
            await respond(
                send,
                refusing.status,
                refusing.body,
                linger=receive,
                linger_bytes=self._linger_bytes,
                extra=refusing.extra,
            )

    @property
    def _linger_bytes(self) -> int:
        return self.settings.max_body_bytes

    async def _preflight(self, headers: Headers, send: BudgetedSend) -> None:
        """A CORS preflight: 204 with what the page may send, if its Origin and the Host are allowed."""
        if not self.allowed.host(headers.text(b"host")):
            send.extra = []
            await respond(send, 421, MISDIRECTED, close=True)
            return
        if not send.extra:
            await respond(send, 403, FORBIDDEN_ORIGIN, close=True)
            return
        allow = [
            (b"access-control-allow-methods", b"POST"),
            (b"access-control-max-age", CORS_MAX_AGE),
            (b"vary", b"Access-Control-Request-Method, Access-Control-Request-Headers"),
        ]
        requested = headers.get(b"access-control-request-headers")
        if requested:
            # Any header the page asks for: what it may reach is decided by Origin, Host and token.
            allow.append((b"access-control-allow-headers", requested))
        await send({"type": "http.response.start", "status": 204, "headers": allow})
        await send({"type": "http.response.body", "body": b""})

    def _refusal(self, scope: Scope, headers: Headers) -> tuple[int, bytes] | None:
        if not self.allowed.host(headers.text(b"host")):
            return 421, MISDIRECTED
        origin = headers.get(b"origin")
        if origin is not None and not self.allowed.origin(origin.decode("latin-1")):
            return 403, FORBIDDEN_ORIGIN
        if scope["path"] == ENDPOINT and scope["method"] != "POST":
            return 405, b"Method Not Allowed: this stateless server takes POST only\n"
        if self.token is not None:
            supplied = bearer_token(headers.get(b"authorization", b"") or b"")
            if supplied is None or not hmac.compare_digest(supplied, self.token):
                return 401, b"Unauthorized: a valid bearer token is required\n"
        version = headers.text(b"mcp-protocol-version")
        if version in _UNSERVED_VERSIONS:
            served = ", ".join(SERVED_PROTOCOL_VERSIONS)
            return 400, f"Bad Request: protocol version {version} is not served (served: {served})\n".encode()
        return None

    async def _read_body(self, headers: Headers, receive: Receive, send: BudgetedSend) -> bytes | _Refusing | None:
        """The whole body, admitted into the budget; a refusal to answer once the slot is free
        (413, 503, or 408 for a body not there by its deadline); None when the client left.

        A declared body reserves its size, waiting in line for room until the deadline; a body
        that stalls (fewer than MIN_UPLOAD_RATE bytes a second over STALL_SECONDS) gives back
        what it has not filled, and its bytes are then charged as they come, as a chunked one's.
        Time spent in line does not count against the body's own deadline (`Held.body_deadline`).
        """
        limit = self.settings.max_body_bytes
        held = send.held
        declared_text = headers.get(b"content-length")
        declared = int(declared_text) if declared_text is not None and declared_text.isdigit() else None
        if declared is not None and declared > limit:
            return _Refusing(413, TOO_LARGE)
        if declared is not None and not await held.reserve(declared):
            return self._budget_refusal()
        parts: list[bytes] = []
        size = 0
        window_start, window_size = time.monotonic(), 0
        while True:
            left = held.body_deadline - time.monotonic()
            if left <= 0:
                del parts
                return _Refusing(408, TIMED_OUT)
            message = None
            with anyio.move_on_after(min(STALL_SECONDS, left)):
                message = await receive()
            now = time.monotonic()
            if now - window_start >= STALL_SECONDS:
                if window_size < MIN_UPLOAD_RATE * (now - window_start):
                    held.give_back_unfilled()
                window_start, window_size = now, 0
            if message is None:
                continue
            if message["type"] == "http.disconnect":
                logger.debug("client left before sending the whole body")
                return None
            chunk = message.get("body", b"")
            size += len(chunk)
            window_size += len(chunk)
            if size > limit:
                break
            waited = held.waited
            if not await held.charge(len(chunk)):
                del parts
                return self._budget_refusal()
            if held.waited > waited:  # time in line is not time the client was slow
                window_start, window_size = time.monotonic(), 0
            parts.append(chunk)
            if not message.get("more_body", False):
                return b"".join(parts)
        del parts  # refused part way: answered once the slot is given back, with the rest of the body read
        return _Refusing(413, TOO_LARGE)

    def _budget_refusal(self) -> _Refusing:
        """503: no room came before the request's deadline; Retry-After says when it must."""
        return _Refusing(503, BUFFERS_FULL, [retry_after(self.budget.holders.retry_after())])

    async def _serve_handshake_era(self, body: bytes, receive: Receive, send: BudgetedSend, version: str) -> None:
        """A request at a 2025 version: one message, or a batch of them at 2025-03-26."""
        # The body's bytes, its text and its parsed value are never all alive at once: each
        # goes as soon as the next is made (this frame holds the only references to them).
        try:
            text = decoded(body)
            del body
            value = parsed(text)
            del text
        except Refusal as refusal:
            await respond(send, 400, refusal.reply(), json_body=True)
            return
        if isinstance(value, list) and version in BATCH_VERSIONS:
            await self._serve_batch(value, version, receive, send)
            return
        try:
            envelope = check_envelope(value)
            del value
            route = self.door.route(envelope, Session.stateless(version))
            call = route if isinstance(route, Call) else None
            del route
            message = None if call is not None else to_message(envelope)
            del envelope
        except Refusal as refusal:
            await respond(send, 400, refusal.reply(), json_body=True)
            return
        except Unanswerable:
            await respond(send, 400, MALFORMED_RESPONSE)
            return
        if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
            await respond(send, 202, b"")  # a response to a request this server never sends: nothing to do
            return
        # The call's arguments go before its answer is written.
        if call is not None:
            answer: dict[str, Any] | None = await call.answer()
            del call
        else:
            assert message is not None
            answer = await exchange(self.server, message, version)
            del message
        if answer is None:
            await respond(send, 202, b"")
            return
        body = encoded(answer)
        del answer
        await respond(send, 200, body, json_body=True)

    async def _serve_batch(self, members: list[Any], version: str, receive: Receive, send: BudgetedSend) -> None:
        """A JSON-RPC batch: served until its client leaves (a reset connection stops it)."""
        try:
            check_batch(members)
        except Refusal as refusal:
            await respond(send, 400, refusal.reply(), json_body=True)
            return
        gone = anyio.Event()

        async def watch() -> None:  # the body is read: what receive says next is the client leaving
            with contextlib.suppress(Exception):
                while (await receive())["type"] != "http.disconnect":
                    pass
            gone.set()

        async with anyio.create_task_group() as tasks:
            tasks.start_soon(watch)
            answers = await batch_answer(self.server, self.door, members, version, send.held, gone)
            tasks.cancel_scope.cancel()
        if gone.is_set():
            logger.info("a batch's client left; the rest of the batch was not served")
            return
        if answers is None:  # notifications and responses only
            await respond(send, 202, b"")
            return
        await respond(send, 200, answers, json_body=True)

    async def _serve_modern(
        self, scope: Scope, headers: Headers, body: bytes, receive: Receive, send: BudgetedSend
    ) -> None:
        """A 2026-07-28 request: read as at the other versions, then answered through the door when
        it is a call of codescout's tools the SDK's own checks pass, else served by the SDK's own entry.

        (The SDK reads NaN and Infinity as numbers and answers every invalid body with one
        -32600 and `id: null`; here such a body gets its own error, as at the other versions.)
        """
        try:
            checked = check_envelope(parsed(decoded(body)))
        except Refusal as refusal:
            await respond(send, 400, refusal.reply(), json_body=True)
            return
        except Unanswerable:
            await respond(send, 400, MALFORMED_RESPONSE)
            return
        if "method" not in checked:
            await respond(send, 400, RESPONSE_REFUSED)
            return
        route = self.door.route(checked, Session.stateless(None))
        if isinstance(route, Call) and _unacceptable(headers) is None and modern_checks_pass(scope, checked):
            del checked, body
            answer = await route.answer()
            del route
            data = encoded(answer)
            del answer
            await respond(send, 200, data, json_body=True)
            return
        del checked, route
        await self.app(scope, replay(body, receive), send)


class _Refusing:
    """A refusal to answer once the request's slot is given back (its body is then read and dropped)."""

    def __init__(self, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None) -> None:
        self.status = status
        self.body = body
        self.extra = extra or []


def _accepts_json(accept: bytes) -> bool:
    """Whether an Accept header admits application/json (wildcards included), as the SDK checks it."""
    kinds = {part.split(b";")[0].strip().lower() for part in accept.split(b",")}
    return bool(kinds & {b"application/json", b"application/*", b"*/*"})


def _unacceptable(headers: Headers) -> tuple[int, str] | None:
    """406 or 415 for a handshake-era POST whose Accept or Content-Type rules out JSON (as the SDK answers)."""
    if not _accepts_json(headers.get(b"accept", b"") or b""):
        return 406, "Not Acceptable: Client must accept application/json"
    content_type = headers.get(b"content-type", b"") or b""
    if content_type.split(b";")[0].strip().lower() != b"application/json":
        return 415, "Unsupported Media Type: Content-Type must be application/json"
    return None
