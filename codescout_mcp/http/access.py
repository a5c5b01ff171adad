"""Who may talk to the HTTP server: Host and Origin (against DNS rebinding), the bearer token, CORS.

The SDK's own Host check is case-sensitive and refuses a bare loopback name (mcp 2.3.0,
`mcp.server.transport_security`; docs/sdk-gaps.md), so the Guard makes this one instead.
"""

from __future__ import annotations

import ipaddress
from collections.abc import Sequence
from typing import Final

LOOPBACK_NAMES: Final = ("localhost", "127.0.0.1", "[::1]")
# The ports a Host header may name or leave out and mean the same server (RFC 9110, section 4.2).
DEFAULT_PORTS: Final = ("80", "443")


def is_loopback(host: str) -> bool:
    """Whether binding `host` keeps the server reachable from this machine only."""
    if host.lower() == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def split_host(value: str) -> tuple[str, str | None]:
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
        self.hosts = [split_host(entry) for entry in hosts]
        self.origins = [entry.strip().lower().rstrip("/") for entry in origins]

    def host(self, value: str) -> bool:
        """An allowed entry names a port, any port (`NAME:*`), or none: then the bare name and
        the default ports (`NAME:80`, `NAME:443`), as proxies and clients may write either."""
        name, port = split_host(value)
        if name in LOOPBACK_NAMES:
            return True
        return any(
            name == n and (p == "*" or p == port or (p is None and port in DEFAULT_PORTS)) for n, p in self.hosts
        )

    def origin(self, value: str) -> bool:
        value = value.strip().lower().rstrip("/")
        scheme, sep, rest = value.partition("://")
        if sep and scheme == "http" and split_host(rest)[0] in LOOPBACK_NAMES:
            return True
        for entry in self.origins:
            if entry == value:
                return True
            if entry.endswith(":*") and value.startswith(entry[:-1]) and value[len(entry) - 1 :].isdigit():
                return True
        return False


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
