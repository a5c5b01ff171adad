"""The Guard's first layer, access: who may talk to the server, and refusals that need no body.

In this order (each refusal closes the connection):

* a request with both Content-Length and Transfer-Encoding: 400 (RFC 9112: its body could be
  framed two ways, so a second request could hide in it); a header the Guard reads given
  twice (Host, Origin, Authorization, ...): 400 (which one would count is not for a proxy and
  the server to disagree on);
* a Host that is not loopback or allowed: 421; a browser Origin that is not allowed: 403
  (protection against DNS rebinding). A CORS preflight from an allowed Origin is answered
  with 204 and the allow headers; every answer to an allowed Origin carries
  `Access-Control-Allow-Origin`;
* anything but POST at the endpoint: 405 with `Allow: POST` (a stateless server has no event
  stream);
* a missing or wrong bearer token when CODESCOUT_AUTH_TOKEN is set: 401;
* an `MCP-Protocol-Version` the server knows but does not serve: 400.

The SDK's own Host check is case-sensitive and refuses a bare loopback name (mcp 2.3.0,
`mcp.server.transport_security`; docs/sdk-gaps.md), so this layer makes its own.
"""

from __future__ import annotations

import hmac
import ipaddress
from collections.abc import Sequence
from typing import Final

from mcp_types.version import KNOWN_PROTOCOL_VERSIONS

from codescout_mcp.answers.protocol import HANDSHAKE_VERSIONS, SERVED_PROTOCOL_VERSIONS
from codescout_mcp.http.asgi import FORBIDDEN_ORIGIN, MISDIRECTED, Headers, Scope, respond
from codescout_mcp.http.budget import BudgetedSend
from codescout_mcp.http.settings import ENDPOINT, HttpSettings

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


_UNSERVED_VERSIONS: Final = frozenset(KNOWN_PROTOCOL_VERSIONS) - frozenset(SERVED_PROTOCOL_VERSIONS)
# The headers the Guard reads whose every copy would have to agree.
SINGLE_HEADERS: Final = (
    b"host", b"origin", b"authorization", b"mcp-protocol-version", b"content-length", b"content-type",
    b"transfer-encoding", b"access-control-request-method",
)  # fmt: skip


def requested_version(headers: Headers) -> str | None:
    """The handshake-era version a request names (none named means 2025-03-26, as the streamable
    HTTP spec says), or None for 2026-07-28 (any version the handshake did not know)."""
    version = headers.text(b"mcp-protocol-version") or "2025-03-26"
    return version if version in HANDSHAKE_VERSIONS else None


class Access:
    """The access layer: `admits` answers what needs no body (the module docstring) and says whether to go on."""

    def __init__(self, settings: HttpSettings, token: str | None) -> None:
        self.allowed = Allowed(settings.allow_hosts, settings.allow_origins)
        self.token = token.encode() if token is not None else None

    async def admits(self, scope: Scope, headers: Headers, send: BudgetedSend) -> bool:
        """True when the request may go on; False once it has been answered (a refusal, a preflight)."""
        if b"transfer-encoding" in headers and b"content-length" in headers:
            body = b"Bad Request: both Content-Length and Transfer-Encoding; send one (RFC 9112, section 6.3)\n"
            await respond(send, 400, body, close=True)
            return False
        if headers.repeated in SINGLE_HEADERS:
            name = headers.repeated.decode("latin-1")
            await respond(send, 400, f"Bad Request: the {name} header is given more than once\n".encode(), close=True)
            return False
        origin = headers.get(b"origin")
        if origin is not None and self.allowed.origin(origin.decode("latin-1")):
            send.extra = cors_headers(origin)
        if scope["method"] == "OPTIONS" and origin is not None and b"access-control-request-method" in headers:
            await self._preflight(headers, send)
            return False
        refusal = self._refusal(scope, headers)
        if refusal is not None:
            await respond(send, *refusal, close=True)
            return False
        return True

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
