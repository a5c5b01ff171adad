"""MCP over streamable HTTP: stateless, JSON responses, locked down by default.

The tool keeps no state, so every request is served on its own (no sessions): any replica
behind any load balancer can answer any request (docs/proxies.md). The SDK's app serves the
requests (`Server.streamable_http_app`, stateless, JSON answers); in front of it the Guard
(`guard.py`) refuses what the SDK should never see, reads every body itself, and keeps what
all clients together can make the server hold within a bound known in advance (`budget.py`;
the formula: docs/http.md). The modules, each importing only those before it: `settings.py`,
`asgi.py`, `budget.py`, `access.py`, `admission.py`, `exchange.py`, `routing.py`, `guard.py`,
`connections.py`.

May import: core, system, answers, tools, server.
"""

from __future__ import annotations

import logging
import signal
import sys
from typing import Any

import uvicorn
from mcp.server.lowlevel import Server
from mcp.server.transport_security import RequestBodyLimitMiddleware, TransportSecuritySettings

from codescout_mcp.failure import ConfigurationError
from codescout_mcp.http.access import is_loopback
from codescout_mcp.http.asgi import ASGIApp
from codescout_mcp.http.connections import GracefulServer, protocol_for
from codescout_mcp.http.guard import Guard
from codescout_mcp.http.settings import (
    ENDPOINT,
    HttpSettings,
    bind,
    check_limits,
    check_tls,
    token_from_environment,
)
from codescout_mcp.server import build_server
from codescout_mcp.system.platform import stop_signals
from codescout_mcp.system.processes import end_all_children
from codescout_mcp.tools.toolbox import Offer

logger = logging.getLogger("codescout")


def build_app(
    settings: HttpSettings, *, token: str | None = None, workspace: str | None = None, warm: bool = False
) -> ASGIApp:
    """The ASGI app serving the tool at /mcp behind the Guard (`warm`: the workspace's history
    walked in the background from the start)."""
    offer = Offer(workspace, warm=warm)
    server = build_server(offer=offer)
    app: ASGIApp = server.streamable_http_app(
        streamable_http_path=ENDPOINT,
        stateless_http=True,
        json_response=True,
        max_request_body_size=settings.max_body_bytes,
        # The Guard checks Host and Origin (also bare loopback names and any letter case).
        transport_security=TransportSecuritySettings(enable_dns_rebinding_protection=False),
    )
    _without_body_copies(server)
    return Guard(app, server, offer.door(), settings, token)


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
    else:  # the SDK changed shape: the bodies are copied again, which costs memory, not correctness
        logger.warning("the MCP SDK's streamable HTTP app changed shape; request bodies are copied twice more")


def serve_http(settings: HttpSettings, *, workspace: str | None = None, warm: bool = False) -> int:
    """Serve streamable HTTP until SIGTERM or Ctrl-C; the exit status (ConfigurationError for a setting
    it cannot start with)."""
    check_limits(settings)
    check_tls(settings)
    token = token_from_environment()
    sock = bind(settings.host, settings.port)
    if not is_loopback(settings.host.strip("[]")) and not settings.allow_hosts:
        sys.stderr.write(
            f"codescout: warning: listening on {settings.host} with no --allow-host: only requests whose Host "
            "header is a loopback name will be served; add --allow-host NAME:PORT for the name clients use\n"
        )
    app = build_app(settings, token=token, workspace=workspace, warm=warm)
    config = uvicorn.Config(
        app,
        http=protocol_for(settings.request_timeout, settings.write_timeout),
        log_config=None,  # our logging: stderr, at --log-level
        log_level=settings.log_level,
        access_log=False,  # the Guard logs requests, without their query strings
        timeout_keep_alive=settings.keep_alive_timeout,  # type: ignore[arg-type]
        # X-Forwarded-For and -Proto are read only from the proxies named (uvicorn would trust
        # any loopback peer's by default): a client cannot make up its own address.
        proxy_headers=bool(settings.forwarded_allow_ips),
        forwarded_allow_ips=list(settings.forwarded_allow_ips) or None,
        lifespan="on",
        server_header=False,
        ssl_certfile=settings.tls_certfile,
        ssl_keyfile=settings.tls_keyfile,
        # uvicorn hands this to asyncio.wait_for, which takes any number of seconds.
        timeout_graceful_shutdown=settings.shutdown_timeout,  # type: ignore[arg-type]
    )
    server = GracefulServer(config)
    server.handshake_timeout = settings.request_timeout
    # Stop cleanly on a signal from now on, even before uvicorn takes the signals over
    # (Ctrl-Break, SIGBREAK, on Windows, where uvicorn handles it too).
    for signum in stop_signals():
        signal.signal(signum, server.handle_exit)
    bound_host, bound_port = sock.getsockname()[:2]
    address = f"[{bound_host}]" if ":" in bound_host else bound_host
    scheme = "https" if settings.tls_certfile is not None else "http"
    sys.stderr.write(
        f"codescout: serving MCP (streamable HTTP, stateless) at {scheme}://{address}:{bound_port}{ENDPOINT}"
        f"{' with a bearer token' if token else ''}\n"
    )
    sys.stderr.flush()
    server.run(sockets=[sock])
    end_all_children(leaving=True)  # a git a call left running in a worker thread: the process is leaving
    return 0


__all__ = ["ConfigurationError", "HttpSettings", "build_app", "serve_http"]
