"""What `codescout mcp --transport streamable-http` can be told, with each default stated once,
and the checks that refuse a setting the server could not keep (one line each, exit status 2)."""

from __future__ import annotations

import os
import socket
import ssl
from dataclasses import dataclass, fields
from typing import Any, Final

from codescout_mcp import limits
from codescout_mcp.failure import ConfigurationError
from codescout_mcp.system.platform import CURRENT, System

TOKEN_VARIABLE: Final = "CODESCOUT_AUTH_TOKEN"
ENDPOINT: Final = "/mcp"


@dataclass(frozen=True)
class HttpSettings:
    """Everything `codescout mcp --transport streamable-http` can be told; the defaults are the CLI's."""

    host: str = limits.HOST
    port: int = limits.PORT
    allow_hosts: tuple[str, ...] = ()
    allow_origins: tuple[str, ...] = ()
    max_body_bytes: int = limits.MAX_BODY_BYTES
    max_buffered_bytes: int = limits.MAX_BUFFERED_BYTES
    request_timeout: float = limits.REQUEST_TIMEOUT
    write_timeout: float = limits.WRITE_TIMEOUT
    max_concurrent: int = limits.MAX_CONCURRENT
    shutdown_timeout: float = limits.SHUTDOWN_TIMEOUT
    keep_alive_timeout: float = limits.KEEP_ALIVE_TIMEOUT
    forwarded_allow_ips: tuple[str, ...] = ()
    tls_certfile: str | None = None
    tls_keyfile: str | None = None
    log_level: str = limits.LOG_LEVEL

    @classmethod
    def given(cls, **options: Any) -> HttpSettings:
        """Settings from options of which those left out (None) keep their defaults."""
        names = {field.name for field in fields(cls)}
        return cls(**{name: value for name, value in options.items() if name in names and value is not None})


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
