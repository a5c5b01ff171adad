"""MCP over streamable HTTP: stateless, JSON responses, locked down by default.

The tool keeps no state, so every request is served on its own (no sessions): any replica
behind any load balancer can answer any request. `Guard` stands in front of the SDK's app
and answers everything the SDK should never see, in this order:

* a request with both Content-Length and Transfer-Encoding: 400, and the connection closed
  (RFC 9112: its body could be framed two ways, so a second request could hide in it);
* a Host that is not loopback or allowed: 421; a browser Origin that is not allowed: 403
  (protection against DNS rebinding). A CORS preflight from an allowed Origin is answered
  with 204 and the allow headers; every answer to an allowed Origin carries
  `Access-Control-Allow-Origin`;
* anything but POST: 405 with `Allow: POST` (a stateless server has no event stream);
* a missing or wrong bearer token when CODESCOUT_AUTH_TOKEN is set: 401;
* an `MCP-Protocol-Version` the server knows but does not serve: 400;
* more than --max-concurrent requests at once: 503 with `Retry-After`;
* a body over --max-body-bytes: 413; a body the byte budget (--max-buffered-bytes) has no
  room for within ADMISSION_WAIT seconds: 503 with `Retry-After`; a request not complete
  within --request-timeout: 408 (headers: see `_TimedH11Protocol`). Each closes the
  connection instead of reading on.

The budget counts the bytes of request bodies being read or served and of answers not yet
written to the socket, so the memory any mix of clients can make the server hold is known
in advance (README, "Remote use"); an answer its client does not read for --write-timeout
seconds is dropped with its connection.

At the handshake-era versions (2025-03-26 to 2025-11-25, and a request with no
`MCP-Protocol-Version`, which means 2025-03-26) the Guard reads the body itself, as the
stdio transport reads a line (`wire.py`): what is not JSON gets -32700, what is not JSON-RPC
-32600 (with the id when it can be read), a malformed response 400 with no JSON-RPC answer
at all; a batch (at 2025-03-26 only) of at most `wire.MAX_BATCH` members is served member by member.
Each message then goes to the SDK's `Server` (`remote_exchange.py`). At 2026-07-28 the
SDK's own entry serves the request, and the Guard mends only its answers to invalid bodies.
"""

from __future__ import annotations

import asyncio
import collections
import errno
import hmac
import ipaddress
import json
import logging
import os
import signal
import socket
import ssl
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, Final

import mcp_types as types
import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import RequestBodyLimitMiddleware, TransportSecuritySettings
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS
from uvicorn.protocols.http.h11_impl import H11Protocol

from codescout_mcp.jsontext import JsonTextError, decode_utf8, parse_json_text
from codescout_mcp.protocol import BATCH_VERSIONS, HANDSHAKE_VERSIONS, SERVED_PROTOCOL_VERSIONS
from codescout_mcp.remote_exchange import as_message, encoded, exchange
from codescout_mcp.server import build_server
from codescout_mcp.system import CURRENT, System
from codescout_mcp.wire import (
    INVALID_REQUEST,
    PARSE_ERROR,
    Refusal,
    RequestId,
    Unanswerable,
    check_batch,
    check_envelope,
    check_unique_id,
    encode,
    is_request_id,
)

logger = logging.getLogger("codescout")

TOKEN_VARIABLE: Final = "CODESCOUT_AUTH_TOKEN"
ENDPOINT: Final = "/mcp"
LOOPBACK_NAMES: Final = ("localhost", "127.0.0.1", "[::1]")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Set on the scope by the protocol: when the request's first byte arrived (monotonic).
STARTED_KEY: Final = "codescout.request_started"

MIB: Final = 1024 * 1024
# How long a request waits for room in the byte budget before it gets 503.
ADMISSION_WAIT: Final = 2.0
# The version a request without MCP-Protocol-Version speaks (the streamable HTTP spec's rule).
DEFAULT_VERSION: Final = "2025-03-26"


@dataclass(frozen=True)
class HttpSettings:
    """Everything `codescout mcp --transport streamable-http` can be told."""

    host: str = "127.0.0.1"
    port: int = 8000
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    max_body_bytes: int = 32 * MIB
    max_buffered_bytes: int = 32 * MIB
    request_timeout: float = 30.0
    write_timeout: float = 30.0
    max_concurrent: int = 32
    shutdown_timeout: float = 10.0
    tls_certfile: str | None = None
    tls_keyfile: str | None = None
    log_level: str = "warning"


class ConfigurationError(Exception):
    """A setting that makes the server unsafe or unable to start; reported as one line."""


# --- who may talk to it -------------------------------------------------------------------


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server reachable from this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def _split_host(value: str) -> tuple[str, str | None]:
    """`Host: name[:port]` (or `[v6]:port`) as (lower-case name, port or None)."""
    value = value.strip().lower()
    if value.startswith("["):
        end = value.find("]")
        name, rest = value[: end + 1], value[end + 1 :]
        return name, rest[1:] if rest.startswith(":") else None
    name, colon, port = value.rpartition(":")
    return (name, port) if colon else (value, None)


class Allowed:
    """Host and Origin values that may reach the server: loopback ones and those configured."""

    def __init__(self, hosts: Sequence[str], origins: Sequence[str]) -> None:
        self.hosts = [_split_host(entry) for entry in hosts]
        self.origins = [entry.strip().lower().rstrip("/") for entry in origins]

    def host(self, value: str) -> bool:
        name, port = _split_host(value)
        if name in LOOPBACK_NAMES:
            return True
        return any(name == n and (p == "*" or p == port) for n, p in self.hosts)

    def origin(self, value: str) -> bool:
        value = value.strip().lower().rstrip("/")
        scheme, sep, rest = value.partition("://")
        if sep and scheme == "http" and _split_host(rest)[0] in LOOPBACK_NAMES:
            return True
        for entry in self.origins:
            if entry == value:
                return True
            if entry.endswith(":*") and value.startswith(entry[:-1]) and value[len(entry) - 1 :].isdigit():
                return True
        return False


def token_from_environment() -> str | None:
    """The bearer token, if the operator set one; an empty or padded one is a mistake."""
    token = os.environ.get(TOKEN_VARIABLE)
    if token is None:
        return None
    if not token.strip():
        raise ConfigurationError(f"{TOKEN_VARIABLE} is set but empty; unset it or give it a value")
    if token != token.strip():
        raise ConfigurationError(
            f"{TOKEN_VARIABLE} starts or ends with whitespace, which no client can send in a header; remove it"
        )
    return token


def bearer_token(header: bytes) -> bytes | None:
    """The token in `Authorization: Bearer <token>` (scheme in any case, any run of spaces)."""
    scheme, _, rest = header.partition(b" ")
    if scheme.lower() != b"bearer":
        return None
    token = rest.lstrip(b" ")
    return token or None


# Response headers a page's script may read beyond the ones CORS always shows it.
CORS_EXPOSED: Final = b"Retry-After, WWW-Authenticate"
# How long a browser may keep a preflight's answer.
CORS_MAX_AGE: Final = b"600"


def cors_headers(origin: bytes) -> list[tuple[bytes, bytes]]:
    """The headers that let a page from `origin` (an allowed one) read an answer."""
    return [
        (b"access-control-allow-origin", origin),
        (b"access-control-expose-headers", CORS_EXPOSED),
        (b"vary", b"Origin"),
    ]


# --- the byte budget ------------------------------------------------------------------------


class Budget:
    """Bytes of request bodies and unsent answers held at once, against --max-buffered-bytes.

    Requests waiting for room are admitted in the order they came; bytes for work already
    admitted (the rest of a chunked body, a batch's answers) are taken at once or not at all.
    """

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self._waiting: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    def take_now(self, size: int) -> bool:
        """Take `size` bytes if they fit now."""
        if self.used + size > self.limit:
            return False
        self.used += size
        return True

    async def take(self, size: int, within: float) -> bool:
        """Take `size` bytes, waiting in line up to `within` seconds for room; False if none came."""
        if not self._waiting and self.take_now(size):
            return True
        turn: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        entry = (size, turn)
        self._waiting.append(entry)
        try:
            await asyncio.wait_for(asyncio.shield(turn), within)
        except asyncio.TimeoutError:
            self._withdraw(entry)
            return False
        except asyncio.CancelledError:
            self._withdraw(entry)
            raise
        return True

    def _withdraw(self, entry: tuple[int, asyncio.Future[None]]) -> None:
        size, turn = entry
        if turn.done():
            self.give(size)  # let in just as the wait ended: pass the room on
        else:
            self._waiting.remove(entry)
            self._admit()  # a large request leaving the head of the line may let smaller ones in

    def force(self, size: int) -> None:
        """Count bytes that are already held (an answer already made), room or not."""
        self.used += size

    def give(self, size: int) -> None:
        """Give bytes back, letting in whoever waits for room."""
        self.used -= size
        self._admit()

    def _admit(self) -> None:
        while self._waiting and self.used + self._waiting[0][0] <= self.limit:
            size, turn = self._waiting.popleft()
            self.used += size
            turn.set_result(None)


class _Held:
    """What one request holds of the budget; all of it is given back when the request ends."""

    def __init__(self, budget: Budget) -> None:
        self.budget = budget
        self.bytes = 0

    async def take(self, size: int, within: float) -> bool:
        taken = await self.budget.take(size, within)
        if taken:
            self.bytes += size
        return taken

    def take_now(self, size: int) -> bool:
        taken = self.budget.take_now(size)
        if taken:
            self.bytes += size
        return taken

    def force(self, size: int) -> None:
        self.budget.force(size)
        self.bytes += size

    def release(self) -> None:
        self.budget.give(self.bytes)
        self.bytes = 0


# --- the guard in front of the SDK's app --------------------------------------------------


def _error_dict(request_id: object, code: int, message: str) -> dict[str, Any]:
    return {
        "jsonrpc": "2.0",
        "id": request_id if is_request_id(request_id) else None,
        "error": {"code": code, "message": message},
    }


def _version(scope: Scope) -> str | None:
    value = _headers(scope).get(b"mcp-protocol-version")
    return None if value is None else value.decode("latin-1")


_UNSERVED_VERSIONS: Final = frozenset(KNOWN_PROTOCOL_VERSIONS) - frozenset(SERVED_PROTOCOL_VERSIONS)


def _accepts_json(accept: bytes) -> bool:
    """Whether an Accept header admits application/json (wildcards included), as the SDK checks it."""
    kinds = {part.split(b";")[0].strip().lower() for part in accept.split(b",")}
    return bool(kinds & {b"application/json", b"application/*", b"*/*"})


def _is_json_content(content_type: bytes) -> bool:
    return content_type.split(b";")[0].strip().lower() == b"application/json"


def read_body(body: bytes) -> str:
    """A request body as text (UTF-8, a leading BOM skipped); Refusal -32700 when it is not UTF-8."""
    try:
        return decode_utf8(body, "")
    except JsonTextError as error:
        raise Refusal(PARSE_ERROR, f"Parse error: {error}", _id_in(body.decode("utf-8", "surrogateescape"))) from None


def parse_body(text: str) -> object:
    """A request body's JSON value, read as JSON.parse reads it; Refusal -32700 when it is not JSON."""
    try:
        return parse_json_text(text, "")
    except JsonTextError as error:
        raise Refusal(PARSE_ERROR, f"Parse error: {error}") from None


def _id_in(text: str) -> RequestId | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    raw = value.get("id") if isinstance(value, dict) else None
    return raw if is_request_id(raw) else None


class Guard:
    """ASGI middleware: the checks in the module docstring, then the SDK's app."""

    def __init__(self, app: ASGIApp, server: Server[Any], settings: HttpSettings, token: str | None) -> None:
        self.app = app
        self.server = server
        self.settings = settings
        self.allowed = Allowed(settings.allow_hosts, settings.allow_origins)
        self.token = token.encode() if token is not None else None
        self.budget = Budget(settings.max_buffered_bytes)
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        held = _Held(self.budget)
        recorder = _Recorder(send, held)
        try:
            await self._serve(scope, receive, recorder)
        except asyncio.CancelledError:
            # The shutdown timeout ran out while this request was still arriving or being
            # served: tell the client, rather than leave uvicorn to log a traceback.
            if recorder.status is not None:
                raise
            await _respond(recorder, 503, b"Service Unavailable: the server is shutting down\n", close=True)
        finally:
            held.release()
        if logger.isEnabledFor(logging.INFO):
            # The path only: a client may put a secret in the query string.
            elapsed = (time.monotonic() - started) * 1000
            logger.info("%s %s -> %s in %.1f ms", scope["method"], scope["path"], recorder.status, elapsed)

    async def _serve(self, scope: Scope, receive: Receive, send: _Recorder) -> None:
        headers = _headers(scope)
        if b"transfer-encoding" in headers and b"content-length" in headers:
            body = b"Bad Request: both Content-Length and Transfer-Encoding; send one (RFC 9112, section 6.3)\n"
            await _respond(send, 400, body, close=True)
            return
        origin = headers.get(b"origin")
        if origin is not None and self.allowed.origin(origin.decode("latin-1")):
            send.extra = cors_headers(origin)
        if scope["method"] == "OPTIONS" and origin is not None and b"access-control-request-method" in headers:
            await self._preflight(headers, send)
            return
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _respond(send, *refusal, close=True)
            return
        if scope["path"] != ENDPOINT:
            await self.app(scope, receive, send)
            return
        if self.in_flight >= self.settings.max_concurrent:
            await _respond(
                send, 503, BUSY, linger=receive, linger_bytes=self.settings.max_body_bytes, extra=[RETRY_AFTER]
            )
            return
        self.in_flight += 1
        try:
            version = _version(scope)
            if version is not None and version not in HANDSHAKE_VERSIONS:
                modern_body = await self._read_body(scope, receive, send)
                if modern_body is not None:
                    await self._serve_modern(scope, modern_body, receive, send)
                return
            unacceptable = _unacceptable(headers)
            if unacceptable is not None:
                status, text = unacceptable
                answer = encode(_error_dict(None, INVALID_REQUEST, text))
                limit = self.settings.max_body_bytes
                await _respond(send, status, answer, json_body=True, linger=receive, linger_bytes=limit)
                return
            await self._serve_handshake_era(scope, receive, send, version or DEFAULT_VERSION)
        finally:
            self.in_flight -= 1

    async def _preflight(self, headers: dict[bytes, bytes], send: _Recorder) -> None:
        """A CORS preflight: 204 with what the page may send, if its Origin and the Host are allowed."""
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.allowed.host(host):
            send.extra = []
            await _respond(send, 421, MISDIRECTED, close=True)
            return
        if not send.extra:
            await _respond(send, 403, FORBIDDEN_ORIGIN, close=True)
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

    def _refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[int, bytes] | None:
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.allowed.host(host):
            return 421, MISDIRECTED
        origin = headers.get(b"origin")
        if origin is not None and not self.allowed.origin(origin.decode("latin-1")):
            return 403, FORBIDDEN_ORIGIN
        if scope["path"] == ENDPOINT and scope["method"] != "POST":
            return 405, b"Method Not Allowed: this stateless server takes POST only\n"
        if self.token is not None:
            supplied = bearer_token(headers.get(b"authorization", b""))
            if supplied is None or not hmac.compare_digest(supplied, self.token):
                return 401, b"Unauthorized: a valid bearer token is required\n"
        version = headers.get(b"mcp-protocol-version", b"").decode("latin-1")
        if version in _UNSERVED_VERSIONS:
            served = ", ".join(SERVED_PROTOCOL_VERSIONS)
            return 400, f"Bad Request: protocol version {version} is not served (served: {served})\n".encode()
        return None

    async def _read_body(self, scope: Scope, receive: Receive, send: _Recorder) -> bytes | None:
        """The whole body, admitted into the budget; None when it was refused (and answered)."""
        limit = self.settings.max_body_bytes
        declared = _headers(scope).get(b"content-length")
        if declared is not None and declared.isdigit():
            size = int(declared)
            if size > limit:
                await _respond(send, 413, TOO_LARGE, linger=receive, linger_bytes=limit)
                return None
            if not await send.held.take(size, ADMISSION_WAIT):
                await _respond(send, 503, BUFFERS_FULL, linger=receive, linger_bytes=limit, extra=[RETRY_AFTER])
                return None
        begun = scope.get(STARTED_KEY, time.monotonic())
        remaining = self.settings.request_timeout - (time.monotonic() - begun)
        parts: list[bytes] = []
        size = 0
        refusal = TOO_LARGE
        try:
            async with _Deadline(remaining):
                while True:
                    message = await receive()
                    if message["type"] == "http.disconnect":
                        logger.debug("client left before sending the whole body")
                        return None
                    chunk = message.get("body", b"")
                    size += len(chunk)
                    if size > limit:
                        break
                    # A body without Content-Length (chunked) is admitted as it arrives: its
                    # first part waits in line for room as any request does, the rest must fit.
                    if declared is None:
                        if parts:
                            admitted = send.held.take_now(len(chunk))
                        else:
                            admitted = await send.held.take(len(chunk), ADMISSION_WAIT)
                        if not admitted:
                            refusal = BUFFERS_FULL
                            break
                    parts.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(parts)
        except TimeoutError:
            await _respond(send, 408, b"Request Timeout: the body did not arrive in time\n", close=True)
            return None
        # Refused part way: answered outside the deadline, which must not cut the answer short.
        del parts
        extra = [RETRY_AFTER] if refusal is BUFFERS_FULL else []
        await _respond(
            send, 413 if refusal is TOO_LARGE else 503, refusal, linger=receive, linger_bytes=limit, extra=extra
        )
        return None

    async def _serve_handshake_era(self, scope: Scope, receive: Receive, send: _Recorder, version: str) -> None:
        """A request at a 2025 version: one message, or a batch of them at 2025-03-26."""
        body = await self._read_body(scope, receive, send)
        if body is None:
            return
        # The body's bytes, its text and its parsed value are never all alive at once: each
        # goes as soon as the next is made (this frame holds the only references to them).
        try:
            text = read_body(body)
            del body
            value = parse_body(text)
            del text
        except Refusal as refusal:
            await _respond(send, 400, refusal.reply(), json_body=True)
            return
        if isinstance(value, list) and version in BATCH_VERSIONS:
            await self._serve_batch(value, version, send)
            return
        try:
            message = as_message(check_envelope(value))
        except Refusal as refusal:
            await _respond(send, 400, refusal.reply(), json_body=True)
            return
        except Unanswerable:
            await _respond(send, 400, MALFORMED_RESPONSE)
            return
        del value
        if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
            await _respond(send, 202, b"")  # a response to a request this server never sends: nothing to do
            return
        answer = await exchange(self.server, message, version)
        del message  # the call's arguments: no longer needed while the answer is written
        if answer is None:
            await _respond(send, 202, b"")
            return
        body = encoded(answer)
        del answer
        await _respond(send, 200, body, json_body=True)

    async def _serve_batch(self, members: list[Any], version: str, send: _Recorder) -> None:
        """A JSON-RPC batch (protocol 2025-03-26): each member served in turn, the answers in one array.

        The answers wait in the budget until the batch is done; one that finds no room there
        becomes an error saying so.
        """
        try:
            check_batch(members)
        except Refusal as refusal:
            await _respond(send, 400, refusal.reply(), json_body=True)
            return
        parts: list[bytes] = []
        seen: set[tuple[type, RequestId]] = set()  # a batch's answers are told apart by their ids
        for index in range(len(members)):
            member, members[index] = members[index], None  # each member's value goes once it is served
            answer = await self._batch_member(member, version, seen)
            del member
            if answer is None:
                continue
            part = encoded(answer)
            if not send.held.take_now(len(part)):
                text = (
                    "Internal error: this batch's answers passed the server's buffer (--max-buffered-bytes); "
                    "send its requests in smaller batches"
                )
                part = encoded(_error_dict(answer.get("id"), -32603, text))
                send.held.force(len(part))
            parts.append(part)
        if not parts:  # notifications and responses only
            await _respond(send, 202, b"")
            return
        body = b"[" + b",".join(parts) + b"]"
        del parts
        await _respond(send, 200, body, json_body=True)

    async def _batch_member(
        self, member: object, version: str, seen: set[tuple[type, RequestId]]
    ) -> dict[str, Any] | None:
        try:
            message = as_message(check_envelope(member, in_batch=True))
            if isinstance(message, types.JSONRPCRequest):
                check_unique_id(message.id, seen)
        except Refusal as refusal:
            return refusal.as_dict()
        except Unanswerable as error:
            logger.info("dropped a batch member: %s", error)
            return None
        if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
            return None
        return await exchange(self.server, message, version)

    async def _serve_modern(self, scope: Scope, body: bytes, receive: Receive, send: _Recorder) -> None:
        """A 2026-07-28 request: the SDK's own entry serves it; its answers to invalid bodies are mended."""
        mend = _Mender(send, body)
        await self.app(scope, _replay(body, receive), mend)
        await mend.finish()


def _unacceptable(headers: dict[bytes, bytes]) -> tuple[int, str] | None:
    """406 or 415 for a handshake-era POST whose Accept or Content-Type rules out JSON (as the SDK answers)."""
    if not _accepts_json(headers.get(b"accept", b"")):
        return 406, "Not Acceptable: Client must accept application/json"
    if not _is_json_content(headers.get(b"content-type", b"")):
        return 415, "Unsupported Media Type: Content-Type must be application/json"
    return None


class _Mender:
    """The `send` for the SDK's 2026-07-28 entry: its 400 answer to an invalid body says why, with the id.

    The SDK answers every body that is not a request or notification with one -32600 error
    and `id: null`. Here such a body is judged by `check_envelope`, as at the other
    versions: a malformed message gets its own error and its id, and a response (which
    this server never asked for) gets 400 with no JSON-RPC answer at all.
    """

    def __init__(self, send: _Recorder, body: bytes) -> None:
        self.send = send
        self.body = body
        self.start: Message | None = None
        self.parts: list[bytes] = []

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start" and message["status"] == 400:
            self.start = message
            return
        if self.start is None:
            await self.send(message)
            return
        self.parts.append(message.get("body", b""))
        if not message.get("more_body", False):
            await self.finish()

    async def finish(self) -> None:
        if self.start is None:
            return
        start, self.start = self.start, None
        answer = b"".join(self.parts)
        mended = self._mended(answer)
        if mended is not None:
            await _respond(self.send, 400, mended[0], json_body=mended[1])
            return
        await self.send(start)
        await self.send({"type": "http.response.body", "body": answer})

    def _mended(self, answer: bytes) -> tuple[bytes, bool] | None:
        try:
            error = json.loads(answer)
        except ValueError:
            return None
        if not (isinstance(error, dict) and error.get("id") is None and error.get("error", {}).get("code") == -32600):
            return None
        try:
            value = parse_body(read_body(self.body))
            checked = check_envelope(value)
        except Refusal as refusal:
            return refusal.reply(), True
        except Unanswerable:
            return MALFORMED_RESPONSE, False
        if "method" not in checked:
            return RESPONSE_REFUSED, False
        return None  # a message the SDK refused for reasons of its own: its answer stands


class _Deadline:
    """TimeoutError when the block overruns (`asyncio.timeout`, which Python 3.10 lacks)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.handle: asyncio.TimerHandle | None = None
        self.task: asyncio.Task[Any] | None = None
        self.expired = False

    async def __aenter__(self) -> None:
        self.task = asyncio.current_task()
        self.handle = asyncio.get_running_loop().call_later(max(self.seconds, 0), self._expire)

    def _expire(self) -> None:
        self.expired = True
        assert self.task is not None
        self.task.cancel()

    async def __aexit__(self, kind: type[BaseException] | None, *rest: object) -> None:
        assert self.handle is not None
        self.handle.cancel()
        if self.expired and kind is asyncio.CancelledError:
            assert self.task is not None
            if hasattr(self.task, "uncancel"):
                self.task.uncancel()
            raise TimeoutError


class _Recorder:
    """The ASGI `send`: it records the status, adds CORS headers, and holds an answer in the budget until sent.

    An answer's bytes count against the budget from the moment they are handed over until
    they have left for the socket: the last part of each answer is sent apart, and uvicorn
    waits for its write buffer to drain before taking it (or for the connection to drop,
    which the write timeout sees to).
    """

    def __init__(self, send: Send, held: _Held) -> None:
        self.send = send
        self.held = held
        self.status: int | None = None
        self.extra: list[tuple[bytes, bytes]] = []

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
            if self.extra:
                message = {**message, "headers": [*message.get("headers", ()), *self.extra]}
        elif message["type"] == "http.response.body":
            body = message.get("body", b"")
            if body:
                self.held.force(len(body))
                if not message.get("more_body", False):
                    await self.send({**message, "more_body": True})
                    message = {"type": "http.response.body", "body": b""}
        await self.send(message)


def _headers(scope: Scope) -> dict[bytes, bytes]:
    return {name.lower(): value for name, value in scope.get("headers", ())}


TOO_LARGE: Final = b"Payload Too Large: see --max-body-bytes\n"
BUSY: Final = b"Busy: too many requests at once; retry shortly\n"
BUFFERS_FULL: Final = b"Busy: the server's buffers are full (see --max-buffered-bytes); retry shortly\n"
MISDIRECTED: Final = b"Misdirected Request: Host not allowed (see --allow-host)\n"
FORBIDDEN_ORIGIN: Final = b"Forbidden: Origin not allowed (see --allow-origin)\n"
MALFORMED_RESPONSE: Final = b"Bad Request: a malformed JSON-RPC response; responses get no JSON-RPC answer\n"
RESPONSE_REFUSED: Final = b"Bad Request: a JSON-RPC response, but this server sends no requests at this version\n"
RETRY_AFTER: Final = (b"retry-after", b"1")
# After refusing a request whose body is still arriving, the server reads (and drops) what
# keeps coming, so that a client that writes its whole body before reading gets the answer
# instead of a reset connection; it closes once the body is over, after a pause this long,
# or after as many bytes as --max-body-bytes (so an endless body is cut off).
LINGER_SECONDS: Final = 2.0


async def _respond(
    send: Send,
    status: int,
    body: bytes,
    *,
    close: bool = False,
    json_body: bool = False,
    extra: Sequence[tuple[bytes, bytes]] = (),
    linger: Receive | None = None,
    linger_bytes: int = 0,
) -> None:
    close = close or linger is not None
    headers = [(b"content-type", b"application/json" if json_body else b"text/plain; charset=utf-8")]
    if status == 405:
        headers.append((b"allow", b"POST"))
    if status == 401:
        headers.append((b"www-authenticate", b'Bearer realm="codescout"'))
    if close:
        headers.append((b"connection", b"close"))
    headers.extend(extra)
    headers.append((b"content-length", str(len(body)).encode()))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    if linger is None:
        await send({"type": "http.response.body", "body": body})
        return
    # The whole answer goes out now; the response ends (and the connection closes) once the
    # rest of the body is read and dropped, within the bounds above.
    await send({"type": "http.response.body", "body": body, "more_body": True})
    drained = 0
    while drained <= linger_bytes:
        try:
            async with _Deadline(LINGER_SECONDS):
                message = await linger()
        except TimeoutError:
            break
        drained += len(message.get("body", b""))
        if message["type"] == "http.disconnect" or not message.get("more_body", False):
            break
    await send({"type": "http.response.body", "body": b""})


def _replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the app the body already read, then passes on what follows."""
    sent = False

    async def replay() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay


def build_app(settings: HttpSettings, *, token: str | None = None, workspace: str | None = None) -> ASGIApp:
    """The ASGI app serving the tool at /mcp behind the Guard."""
    server = build_server(workspace=workspace)
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=ENDPOINT,
        stateless_http=True,
        json_response=True,
        max_request_body_size=settings.max_body_bytes,
        # The Guard checks Host and Origin (also bare loopback names and any letter case).
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    _without_body_copies(server)
    return Guard(app, server, settings, token)


def _without_body_copies(server: Server[Any]) -> None:
    """Take the SDK's body-size check out from in front of its transport: the Guard has made it already.

    That check (`RequestBodyLimitMiddleware`) gathers the body into a bytearray and hands
    on a bytes copy of it, keeping both for the whole call: two more copies of every body
    beside the one being served.
    """
    manager = server.session_manager
    if isinstance(manager.asgi_app, RequestBodyLimitMiddleware):
        # Typed as the middleware it was built with; any ASGI app takes its place.
        manager.asgi_app = manager.asgi_app.app  # type: ignore[assignment]


# --- the server: sockets, TLS, slow clients, signals ----------------------------------------


def bind(host: str, port: int, system: System = CURRENT) -> socket.socket:
    """A listening socket, made here so that port 0 works and the real port can be announced."""
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        family, kind, proto, _, address = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        # Restarting on a port whose old connections linger in TIME_WAIT; but on Windows the
        # option lets another process bind the port while this one listens (and steal its
        # connections), so there the default (exclusive) binding stays, as asyncio does it.
        if not system.reuse_address_shares_port:
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as error:
        raise ConfigurationError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def check_tls(settings: HttpSettings) -> None:
    """ConfigurationError (one line) unless the certificate and key load as uvicorn will load them."""
    if settings.tls_certfile is None:
        return
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    try:
        context.load_cert_chain(settings.tls_certfile, settings.tls_keyfile)
    except (OSError, ssl.SSLError, ValueError) as error:
        files = f"--tls-certfile {settings.tls_certfile}"
        if settings.tls_keyfile is not None:
            files += f" and --tls-keyfile {settings.tls_keyfile}"
        reason = getattr(error, "strerror", None) or getattr(error, "reason", None) or str(error)
        raise ConfigurationError(f"cannot use {files}: {reason}") from None


def check_limits(settings: HttpSettings) -> None:
    """ConfigurationError when a body the server accepts could never fit in its byte budget."""
    if settings.max_body_bytes > settings.max_buffered_bytes:
        raise ConfigurationError(
            f"--max-body-bytes {settings.max_body_bytes} is more than --max-buffered-bytes "
            f"{settings.max_buffered_bytes}: no body that large could ever be admitted"
        )


def serve_http(settings: HttpSettings, *, workspace: str | None = None) -> int:
    """Serve streamable HTTP until SIGTERM or Ctrl-C; return the exit status."""
    try:
        check_limits(settings)
        check_tls(settings)
        token = token_from_environment()
        sock = bind(settings.host, settings.port)
    except ConfigurationError as error:
        sys.stderr.write(f"codescout: {error}\n")
        return 2
    if not is_loopback(settings.host.strip("[]")) and not settings.allow_hosts:
        sys.stderr.write(
            f"codescout: warning: listening on {settings.host} with no --allow-host: only requests whose Host "
            "header is a loopback name will be served; add --allow-host NAME:PORT for the name clients use\n"
        )
    app = build_app(settings, token=token, workspace=workspace)
    config = uvicorn.Config(
        app,
        http=_protocol_for(settings.request_timeout, settings.write_timeout),
        log_config=None,  # our logging: stderr, at --log-level
        log_level=settings.log_level,
        access_log=False,  # the Guard logs requests, without their query strings
        lifespan="on",
        server_header=False,
        ssl_certfile=settings.tls_certfile,
        ssl_keyfile=settings.tls_keyfile,
        # uvicorn hands this to asyncio.wait_for, which takes any number of seconds.
        timeout_graceful_shutdown=settings.shutdown_timeout,  # type: ignore[arg-type]
    )
    server = _GracefulServer(config)
    # Stop cleanly on a signal from now on, even before uvicorn takes the signals over
    # (Ctrl-Break, SIGBREAK, on Windows, where uvicorn handles it too).
    for name in ("SIGTERM", "SIGINT", "SIGBREAK"):
        signum = getattr(signal, name, None)
        if signum is not None:
            signal.signal(signum, server.handle_exit)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    scheme = "https" if settings.tls_certfile is not None else "http"
    sys.stderr.write(
        f"codescout: serving MCP (streamable HTTP, stateless) at {scheme}://{shown}:{bound_port}{ENDPOINT}"
        f"{' with a bearer token' if token else ''}\n"
    )
    sys.stderr.flush()
    server.run(sockets=[sock])
    return 0


def _protocol_for(request_timeout: float, write_timeout: float) -> type[H11Protocol]:
    class Protocol(_TimedH11Protocol):
        pass

    Protocol.request_timeout = request_timeout
    Protocol.write_timeout = write_timeout
    return Protocol


_TIMEOUT_TEXT: Final = b"Request Timeout: the headers did not arrive in time\n"
_TIMEOUT_RESPONSE: Final = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    + f"content-length: {len(_TIMEOUT_TEXT)}\r\n\r\n".encode()
    + _TIMEOUT_TEXT
)


class _TimedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with a deadline on each request's headers and on unread answers.

    The clock starts when a connection opens and again when the next request's first
    bytes arrive; if the headers are not all there by the deadline, the connection gets a
    408 and is closed. (The body's share of the deadline is the Guard's to enforce.)

    While the write buffer is too full to take more (the client reads slower than the
    answer comes, or not at all), the buffer must shrink every `write_timeout` seconds;
    when it does not, the connection is dropped with whatever it still held.
    """

    request_timeout: float = 30.0
    write_timeout: float = 30.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._began = time.monotonic()
        self._deadline: asyncio.TimerHandle | None = self.loop.call_later(self.request_timeout, self._too_slow)
        self._write_check: asyncio.TimerHandle | None = None
        self._unsent = 0

    def data_received(self, data: bytes) -> None:
        if self._deadline is None and (self.cycle is None or self.cycle.response_complete):
            self._began = time.monotonic()
            self._deadline = self.loop.call_later(self.request_timeout, self._too_slow)
        previous = self.cycle
        super().data_received(data)
        if self.cycle is not previous and self.cycle is not None:
            scope: dict[str, Any] = self.cycle.scope  # type: ignore[assignment]
            scope[STARTED_KEY] = self._began
            self._disarm()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm()
        self._stop_write_check()
        super().connection_lost(exc)

    def pause_writing(self) -> None:
        super().pause_writing()
        if self._write_check is None:
            self._unsent = self.transport.get_write_buffer_size()
            self._write_check = self.loop.call_later(self.write_timeout, self._check_writing)

    def resume_writing(self) -> None:
        self._stop_write_check()
        super().resume_writing()

    def _check_writing(self) -> None:
        self._write_check = None
        unsent = self.transport.get_write_buffer_size()
        if unsent >= self._unsent:
            logger.info("a client read none of its answer for %.0f s; dropped the connection", self.write_timeout)
            self.transport.abort()
            return
        self._unsent = unsent
        self._write_check = self.loop.call_later(self.write_timeout, self._check_writing)

    def _stop_write_check(self) -> None:
        if self._write_check is not None:
            self._write_check.cancel()
            self._write_check = None

    def _disarm(self) -> None:
        if self._deadline is not None:
            self._deadline.cancel()
            self._deadline = None

    def _too_slow(self) -> None:
        self._deadline = None
        if self.transport.is_closing():
            return
        if self.cycle is None or self.cycle.response_complete:
            self.transport.write(_TIMEOUT_RESPONSE)
        self.transport.close()


_ACCEPT_WARNING_INTERVAL: Final = 1.0


class _GracefulServer(uvicorn.Server):
    """uvicorn, with the stop and the failures a service needs.

    * SIGTERM or Ctrl-C: stop accepting, let requests in flight finish within the
      shutdown timeout, exit status 0 (uvicorn would raise the signal again and end
      "killed by SIGTERM"); a second signal exits at once.
    * Running out of file descriptors: one warning a second, not a traceback per attempt;
      and asyncio's retry of `accept`, a second later, finding the listening socket closed
      by a stop in that second is no error.
    """

    _last_accept_warning = 0.0
    _suppressed = 0

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit:
            os._exit(0)  # a second signal: do not wait for anything
        self.should_exit = True

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        asyncio.get_running_loop().set_exception_handler(self._loop_exception)
        await super().startup(sockets)

    def _loop_exception(self, loop: asyncio.AbstractEventLoop, context: dict[str, Any]) -> None:
        error = context.get("exception")
        if isinstance(error, OSError) and error.errno in (errno.EMFILE, errno.ENFILE, errno.ENOBUFS, errno.ENOMEM):
            now = time.monotonic()
            if now - self._last_accept_warning >= _ACCEPT_WARNING_INTERVAL:
                more = f" ({self._suppressed} more since the last warning)" if self._suppressed else ""
                logger.warning("cannot accept connections: %s%s", error.strerror, more)
                self._last_accept_warning = now
                self._suppressed = 0
            else:
                self._suppressed += 1
            return
        if is_accept_retry_after_close(context):
            logger.debug("the listening socket closed before asyncio retried accepting on it")
            return
        loop.default_exception_handler(context)


def is_accept_retry_after_close(context: dict[str, Any]) -> bool:
    """Whether a loop error is asyncio's delayed `accept` retry (after EMFILE) meeting a socket closed since.

    asyncio's selector loop retries one second later by calling `_start_serving` again,
    which raises ValueError for the closed socket's descriptor (-1) from a timer callback.
    """
    error = context.get("exception")
    return isinstance(error, ValueError) and "_start_serving" in str(context.get("message", ""))
