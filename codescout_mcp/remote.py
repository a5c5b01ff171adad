"""The MCP streamable HTTP transport: stateless, JSON responses, locked down by default.

The tool keeps no state, so every request is served on its own (no sessions): any replica
behind any load balancer can answer any request.

Protection, outermost first:
* a bearer token when CODESCOUT_AUTH_TOKEN is set (401 without it, compared in constant time);
* the SDK's request body cap (413) and its Host/Origin checks against DNS rebinding
  (421 for a Host, 403 for an Origin that is not allowed), always on.
"""

from __future__ import annotations

import hmac
import ipaddress
import logging
import os
import signal
import socket
import sys
from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from types import FrameType
from typing import Any, Final

import uvicorn
from mcp.server.transport_security import TransportSecuritySettings

from codescout_mcp.server import build_server

logger = logging.getLogger("codescout")

TOKEN_VARIABLE: Final = "CODESCOUT_AUTH_TOKEN"
DEFAULT_MAX_BODY_BYTES: Final = 32 * 1024 * 1024
ENDPOINT: Final = "/mcp"

LOOPBACK_HOSTS: Final = ("127.0.0.1:*", "localhost:*", "[::1]:*")
LOOPBACK_ORIGINS: Final = ("http://127.0.0.1:*", "http://localhost:*", "http://[::1]:*")

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]


class ConfigurationError(Exception):
    """A setting that makes the server unsafe or unable to start; reported as one line."""


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server reachable from this machine only."""
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def security_settings(allow_hosts: Sequence[str], allow_origins: Sequence[str]) -> TransportSecuritySettings:
    """DNS-rebinding protection, always on: loopback names plus what the operator allows."""
    return TransportSecuritySettings(
        enable_dns_rebinding_protection=True,
        allowed_hosts=[*LOOPBACK_HOSTS, *allow_hosts],
        allowed_origins=[*LOOPBACK_ORIGINS, *allow_origins],
    )


class BearerTokenGuard:
    """ASGI middleware: every HTTP request must carry `Authorization: Bearer <token>`."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not self._authorized(scope):
            await send(
                {
                    "type": "http.response.start",
                    "status": 401,
                    "headers": [
                        (b"content-type", b"text/plain; charset=utf-8"),
                        (b"www-authenticate", b'Bearer realm="codescout"'),
                    ],
                }
            )
            await send({"type": "http.response.body", "body": b"Unauthorized: a valid bearer token is required\n"})
            return
        await self.app(scope, receive, send)

    def _authorized(self, scope: Scope) -> bool:
        supplied = b""
        for name, value in scope.get("headers", ()):
            if name.lower() == b"authorization":
                supplied = value
                break
        return hmac.compare_digest(supplied, self.expected)


def build_app(
    *,
    allow_hosts: Sequence[str] = (),
    allow_origins: Sequence[str] = (),
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES,
    token: str | None = None,
) -> ASGIApp:
    """The ASGI app serving the tool at /mcp, guarded as the module docstring says."""
    app: ASGIApp = build_server().streamable_http_app(
        streamable_http_path=ENDPOINT,
        stateless_http=True,
        json_response=True,
        max_request_body_size=max_body_bytes,
        transport_security=security_settings(allow_hosts, allow_origins),
    )
    return BearerTokenGuard(app, token) if token is not None else app


def token_from_environment() -> str | None:
    """The bearer token, if the operator set one; an empty one is a mistake, not 'no token'."""
    token = os.environ.get(TOKEN_VARIABLE)
    if token is None:
        return None
    if not token.strip():
        raise ConfigurationError(f"{TOKEN_VARIABLE} is set but empty; unset it or give it a value")
    return token


def bind(host: str, port: int) -> socket.socket:
    """A listening socket, made here so that port 0 works and the real port can be announced."""
    try:
        family, kind, proto, _, address = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)[0]
        sock = socket.socket(family, kind, proto)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind(address)
    except OSError as error:
        raise ConfigurationError(f"cannot listen on {host}:{port}: {error.strerror or error}") from None
    sock.listen(1024)
    sock.set_inheritable(True)
    return sock


def serve_http(
    *,
    host: str,
    port: int,
    allow_hosts: Sequence[str],
    allow_origins: Sequence[str],
    max_body_bytes: int,
    log_level: str,
) -> int:
    """Serve streamable HTTP until SIGTERM or Ctrl-C; return the exit status."""
    try:
        token = token_from_environment()
        if max_body_bytes < 1:
            raise ConfigurationError("--max-body-bytes must be at least 1")
        sock = bind(host, port)
    except ConfigurationError as error:
        sys.stderr.write(f"codescout: {error}\n")
        return 2
    if not is_loopback(host) and not allow_hosts:
        sys.stderr.write(
            f"codescout: warning: listening on {host} with no --allow-host: only requests whose Host "
            "header is a loopback name will be served; add --allow-host NAME:PORT for the name clients use\n"
        )
    app = build_app(allow_hosts=allow_hosts, allow_origins=allow_origins, max_body_bytes=max_body_bytes, token=token)
    bound_host, bound_port = sock.getsockname()[:2]
    shown = f"[{bound_host}]" if ":" in bound_host else bound_host
    sys.stderr.write(
        f"codescout: serving MCP (streamable HTTP, stateless) at http://{shown}:{bound_port}{ENDPOINT}"
        f"{' with a bearer token' if token else ''}\n"
    )
    sys.stderr.flush()
    config = uvicorn.Config(
        app,
        log_config=None,  # our logging: stderr, at --log-level
        log_level=log_level,
        access_log=log_level in ("debug", "info"),
        lifespan="on",
        server_header=False,
    )
    _GracefulServer(config).run(sockets=[sock])
    return 0


class _GracefulServer(uvicorn.Server):
    """uvicorn, except that a SIGTERM or Ctrl-C after a clean shutdown exits with status 0.

    uvicorn records the signal and raises it again once it has shut down, so the process
    would end "killed by SIGTERM"; for a service asked to stop, that is a normal exit.
    """

    def handle_exit(self, sig: int, frame: FrameType | None) -> None:
        if self.should_exit and sig == signal.SIGINT:
            self.force_exit = True  # a second Ctrl-C: stop waiting for open connections
        else:
            self.should_exit = True
