"""MCP over streamable HTTP: stateless, JSON responses, locked down by default.

The tool keeps no state, so every request is served on its own (no sessions): any replica
behind any load balancer can answer any request. The SDK's app serves `/mcp`; `Guard`
stands in front of it and answers everything the SDK should never see, in this order:

* anything but POST: 405 with `Allow: POST` (a stateless server has no event stream);
* a Host that is not loopback or allowed: 421; a browser Origin that is not allowed: 403
  (protection against DNS rebinding);
* a missing or wrong bearer token when CODESCOUT_AUTH_TOKEN is set: 401;
* an `MCP-Protocol-Version` the server knows but does not serve: 400;
* more than --max-concurrent requests at once: 503 with `Retry-After`;
* a request not complete within --request-timeout: 408 (headers: see `_TimedH11Protocol`);
  a body over --max-body-bytes: 413; both close the connection instead of reading on;
* a body that is not one JSON object: 400 with a JSON-RPC error (-32700 or -32600), except
  a batch (array) at protocol 2025-03-26 (or with no `MCP-Protocol-Version`, which means
  2025-03-26): its members are served one by one and answered in one array.
"""

from __future__ import annotations

import asyncio
import errno
import hmac
import ipaddress
import json
import logging
import os
import signal
import socket
import sys
import time
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from dataclasses import dataclass
from types import FrameType
from typing import Any, Final

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings
from mcp_types.version import KNOWN_PROTOCOL_VERSIONS
from uvicorn.protocols.http.h11_impl import H11Protocol

from codescout_mcp.protocol import BATCH_VERSIONS, SERVED_PROTOCOL_VERSIONS, served_initialize_params
from codescout_mcp.server import build_server

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


@dataclass(frozen=True)
class HttpSettings:
    """Everything `codescout mcp --transport streamable-http` can be told."""

    host: str = "127.0.0.1"
    port: int = 8000
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    max_body_bytes: int = 32 * 1024 * 1024
    request_timeout: float = 30.0
    max_concurrent: int = 32
    shutdown_timeout: float = 10.0
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


# --- the guard in front of the SDK's app --------------------------------------------------


def _error_dict(request_id: object, code: int, message: str) -> dict[str, Any]:
    valid = isinstance(request_id, (str, int)) and not isinstance(request_id, bool)
    return {"jsonrpc": "2.0", "id": request_id if valid else None, "error": {"code": code, "message": message}}


def _json_rpc_error(code: int, message: str) -> bytes:
    return json.dumps(_error_dict(None, code, message)).encode()


def _batch_version(scope: Scope) -> bool:
    """Whether a request may be a batch: protocol 2025-03-26, which a missing header also means."""
    version = _headers(scope).get(b"mcp-protocol-version")
    return version is None or version.decode("latin-1") in BATCH_VERSIONS


_UNSERVED_VERSIONS: Final = frozenset(KNOWN_PROTOCOL_VERSIONS) - frozenset(SERVED_PROTOCOL_VERSIONS)


class Guard:
    """ASGI middleware: the checks in the module docstring, then the SDK's app."""

    def __init__(self, app: ASGIApp, settings: HttpSettings, token: str | None) -> None:
        self.app = app
        self.settings = settings
        self.allowed = Allowed(settings.allow_hosts, settings.allow_origins)
        self.token = token.encode() if token is not None else None
        self.in_flight = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        recorder = _Recorder(send)
        try:
            status = await self._serve(scope, receive, recorder)
        except asyncio.CancelledError:
            # The shutdown timeout ran out while this request was still arriving or being
            # served: tell the client, rather than leave uvicorn to log a traceback.
            if recorder.status is not None:
                raise
            await _respond(recorder, 503, b"Service Unavailable: the server is shutting down\n", close=True)
            status = recorder.status
        if logger.isEnabledFor(logging.INFO):
            # The path only: a client may put a secret in the query string.
            elapsed = (time.monotonic() - started) * 1000
            logger.info("%s %s -> %s in %.1f ms", scope["method"], scope["path"], status, elapsed)

    async def _serve(self, scope: Scope, receive: Receive, send: _Recorder) -> int | None:
        headers = _headers(scope)
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await _respond(send, *refusal, close=True)
            return send.status
        if scope["path"] != ENDPOINT:
            await self.app(scope, receive, send)
            return send.status
        if self.in_flight >= self.settings.max_concurrent:
            await _respond(
                send,
                503,
                b"Busy: too many requests at once; retry shortly\n",
                linger=receive,
                linger_bytes=self.settings.max_body_bytes,
                extra=[RETRY_AFTER],
            )
            return send.status
        self.in_flight += 1
        try:
            body = await self._read_body(scope, receive, send)
            if body is None:
                return send.status
            if body.lstrip()[:1] == b"[" and _batch_version(scope):
                await self._serve_batch(scope, body, send)
                return send.status
            body = await self._checked_body(body, send)
            if body is None:
                return send.status
            await self.app(scope, _replay(body, receive), send)
        finally:
            self.in_flight -= 1
        return send.status

    def _refusal(self, scope: Scope, headers: dict[bytes, bytes]) -> tuple[int, bytes] | None:
        if scope["path"] == ENDPOINT and scope["method"] != "POST":
            return 405, b"Method Not Allowed: this stateless server takes POST only\n"
        host = headers.get(b"host", b"").decode("latin-1")
        if not self.allowed.host(host):
            return 421, b"Misdirected Request: Host not allowed (see --allow-host)\n"
        origin = headers.get(b"origin")
        if origin is not None and not self.allowed.origin(origin.decode("latin-1")):
            return 403, b"Forbidden: Origin not allowed (see --allow-origin)\n"
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
        limit = self.settings.max_body_bytes
        declared = _headers(scope).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > limit:
            await _respond(send, 413, TOO_LARGE, linger=receive, linger_bytes=limit)
            return None
        begun = scope.get(STARTED_KEY, time.monotonic())
        remaining = self.settings.request_timeout - (time.monotonic() - begun)
        parts: list[bytes] = []
        size = 0
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
                    parts.append(chunk)
                    if not message.get("more_body", False):
                        return b"".join(parts)
        except TimeoutError:
            await _respond(send, 408, b"Request Timeout: the body did not arrive in time\n", close=True)
            return None
        # Too large: answered outside the deadline, which must not cut the answer short.
        await _respond(send, 413, TOO_LARGE, linger=receive, linger_bytes=limit)
        return None

    async def _serve_batch(self, scope: Scope, body: bytes, send: _Recorder) -> None:
        """A JSON-RPC batch (protocol 2025-03-26): each member served in turn, answers in one array."""
        try:
            members = json.loads(body)
        except (ValueError, RecursionError):
            await _respond(send, 400, _json_rpc_error(-32700, "Parse error: the body is not JSON"), json_body=True)
            return
        if not members:
            await _respond(send, 400, _json_rpc_error(-32600, "Invalid request: an empty batch"), json_body=True)
            return
        answers: list[Any] = []
        for member in members:
            request_id = member.get("id") if isinstance(member, dict) else None
            if not isinstance(member, dict):
                answers.append(_error_dict(None, -32600, "Invalid request: a JSON-RPC message is a JSON object"))
            elif member.get("method") == "initialize":
                answers.append(
                    _error_dict(request_id, -32600, "Invalid request: initialize may not be part of a batch")
                )
            else:
                answer = await self._serve_one(scope, json.dumps(member).encode())
                if answer is not None:
                    answers.append(answer)
        if answers:
            await _respond(send, 200, json.dumps(answers).encode(), json_body=True)
        else:  # notifications only
            await _respond(send, 202, b"")

    async def _serve_one(self, scope: Scope, body: bytes) -> Any:
        """The SDK's answer to one message, as JSON (None for a notification's 202)."""
        status = 0
        parts: list[bytes] = []

        async def capture(message: Message) -> None:
            nonlocal status
            if message["type"] == "http.response.start":
                status = message["status"]
            elif message["type"] == "http.response.body":
                parts.append(message.get("body", b""))

        async def no_more() -> Message:
            return {"type": "http.disconnect"}

        headers = [(k, v) for k, v in scope.get("headers", ()) if k.lower() != b"content-length"]
        sub_scope = {**scope, "headers": [*headers, (b"content-length", str(len(body)).encode())]}
        await self.app(sub_scope, _replay(body, no_more), capture)
        if status == 202:
            return None
        try:
            return json.loads(b"".join(parts))
        except ValueError:
            return _error_dict(None, -32603, f"Internal error: HTTP {status} for a batch member")

    async def _checked_body(self, body: bytes, send: _Recorder) -> bytes | None:
        start = body.lstrip()[:1]
        if start != b"{":
            try:
                value = json.loads(body)
            except (ValueError, RecursionError):
                await _respond(send, 400, _json_rpc_error(-32700, "Parse error: the body is not JSON"), json_body=True)
                return None
            kind = (
                "a batch (JSON array), served only at protocol 2025-03-26"
                if isinstance(value, list)
                else "not a JSON object"
            )
            await _respond(send, 400, _json_rpc_error(-32600, f"Invalid request: the body is {kind}"), json_body=True)
            return None
        if len(body) < 65536 and b'"initialize"' in body:
            try:
                value = json.loads(body)
            except (ValueError, RecursionError):
                return body  # the SDK answers what is wrong with it
            if isinstance(value, dict) and value.get("method") == "initialize":
                params = served_initialize_params(value.get("params"))
                if params is not value.get("params"):
                    body = json.dumps({**value, "params": params}).encode()
        return body


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
    """The ASGI `send`, remembering the response status for the access log."""

    def __init__(self, send: Send) -> None:
        self.send = send
        self.status: int | None = None

    async def __call__(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = message["status"]
        await self.send(message)


def _headers(scope: Scope) -> dict[bytes, bytes]:
    return {name.lower(): value for name, value in scope.get("headers", ())}


TOO_LARGE: Final = b"Payload Too Large: see --max-body-bytes\n"
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
    app: ASGIApp = build_server(workspace=workspace).streamable_http_app(
        streamable_http_path=ENDPOINT,
        stateless_http=True,
        json_response=True,
        max_request_body_size=settings.max_body_bytes,
        # The Guard checks Host and Origin (also bare loopback names and any letter case).
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    return Guard(app, settings, token)


# --- the server: sockets, slow clients, signals --------------------------------------------


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, made here so that port 0 works and the real port can be announced."""
    name = host[1:-1] if host.startswith("[") and host.endswith("]") else host
    try:
        family, kind, proto, _, address = socket.getaddrinfo(name, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as error:
        raise ConfigurationError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def serve_http(settings: HttpSettings, *, workspace: str | None = None) -> int:
    """Serve streamable HTTP until SIGTERM or Ctrl-C; return the exit status."""
    try:
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
        http=_protocol_for(settings.request_timeout),
        log_config=None,  # our logging: stderr, at --log-level
        log_level=settings.log_level,
        access_log=False,  # the Guard logs requests, without their query strings
        lifespan="on",
        server_header=False,
        # uvicorn hands this to asyncio.wait_for, which takes any number of seconds.
        timeout_graceful_shutdown=settings.shutdown_timeout,  # type: ignore[arg-type]
    )
    server = _GracefulServer(config)
    # Stop cleanly on a signal from now on, even before uvicorn takes the signals over.
    for signum in (signal.SIGTERM, signal.SIGINT):
        signal.signal(signum, server.handle_exit)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    sys.stderr.write(
        f"codescout: serving MCP (streamable HTTP, stateless) at http://{shown}:{bound_port}{ENDPOINT}"
        f"{' with a bearer token' if token else ''}\n"
    )
    sys.stderr.flush()
    server.run(sockets=[sock])
    return 0


def _protocol_for(timeout: float) -> type[H11Protocol]:
    class Protocol(_TimedH11Protocol):
        request_timeout = timeout

    return Protocol


_TIMEOUT_TEXT: Final = b"Request Timeout: the headers did not arrive in time\n"
_TIMEOUT_RESPONSE: Final = (
    b"HTTP/1.1 408 Request Timeout\r\ncontent-type: text/plain; charset=utf-8\r\nconnection: close\r\n"
    + f"content-length: {len(_TIMEOUT_TEXT)}\r\n\r\n".encode()
    + _TIMEOUT_TEXT
)


class _TimedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with a deadline on each request's headers.

    The clock starts when a connection opens and again when the next request's first
    bytes arrive; if the headers are not all there by the deadline, the connection gets a
    408 and is closed. (The body's share of the deadline is the Guard's to enforce.)
    """

    request_timeout: float = 30.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._began = time.monotonic()
        self._deadline: asyncio.TimerHandle | None = self.loop.call_later(self.request_timeout, self._too_slow)

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
        super().connection_lost(exc)

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
    * Running out of file descriptors: one warning a second, not a traceback per attempt.
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
        loop.default_exception_handler(context)
