"""ASGI's vocabulary as the HTTP transport uses it: the message types, the request's headers read
once (a repeated one the Guard relies on is an error, not "the last one wins"), short answers
that close the connection, and a body handed on after it was read.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, MutableMapping, Sequence
from typing import Any, Final

import anyio

Scope = MutableMapping[str, Any]
Message = MutableMapping[str, Any]
Receive = Callable[[], Awaitable[Message]]
Send = Callable[[Message], Awaitable[None]]
ASGIApp = Callable[[Scope, Receive, Send], Awaitable[None]]

# Set on the scope by the protocol (`connections.py`): when the request's first byte arrived (monotonic).
STARTED_KEY: Final = "codescout.request_started"

# Headers that may come as several lines of one list (RFC 9110, section 5.3): joined with ", ".
LIST_HEADERS: Final = frozenset({b"accept", b"access-control-request-headers", b"vary"})

TOO_LARGE: Final = b"Payload Too Large: see --max-body-bytes\n"
BUSY: Final = b"Busy: too many requests at once; retry after the time Retry-After gives\n"
BUFFERS_FULL: Final = (
    b"Busy: the server's buffers are full (see --max-buffered-bytes); retry after the time Retry-After gives\n"
)
MISDIRECTED: Final = b"Misdirected Request: Host not allowed (see --allow-host)\n"
FORBIDDEN_ORIGIN: Final = b"Forbidden: Origin not allowed (see --allow-origin)\n"
MALFORMED_RESPONSE: Final = b"Bad Request: a malformed JSON-RPC response; responses get no JSON-RPC answer\n"
RESPONSE_REFUSED: Final = b"Bad Request: a JSON-RPC response, but this server sends no requests at this version\n"
TIMED_OUT: Final = b"Request Timeout: the body did not arrive in time\n"

# After refusing a request whose body is still arriving, the server reads (and drops) what
# keeps coming, so that a client that writes its whole body before reading gets the answer
# instead of a reset connection; it closes once the body is over, after this long in all, or
# after as many bytes as --max-body-bytes (so an endless or a trickling body is cut off).
LINGER_SECONDS: Final = 2.0


class Headers:
    """A request's headers by lower-case name; `repeated` names the first singleton given twice."""

    def __init__(self, scope: Scope) -> None:
        self.values: dict[bytes, bytes] = {}
        self.repeated: bytes | None = None
        for raw_name, value in scope.get("headers", ()):
            name = raw_name.lower()
            if name not in self.values:
                self.values[name] = value
            elif name in LIST_HEADERS:
                self.values[name] += b", " + value
            elif self.repeated is None:
                self.repeated = name

    def get(self, name: bytes, default: bytes | None = None) -> bytes | None:
        return self.values.get(name, default)

    def text(self, name: bytes) -> str:
        return self.values.get(name, b"").decode("latin-1")

    def __contains__(self, name: bytes) -> bool:
        return name in self.values


def retry_after(seconds: float) -> tuple[bytes, bytes]:
    """The Retry-After header for a wait of `seconds` (whole seconds, at least one)."""
    return (b"retry-after", str(max(1, int(seconds + 0.999))).encode())


async def respond(
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
    """A whole answer; with `linger`, what is left of the request's body is read and dropped first
    (within LINGER_SECONDS in all and `linger_bytes`), and the connection closes after it."""
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
    with anyio.move_on_after(LINGER_SECONDS):
        while drained <= linger_bytes:
            message = await linger()
            drained += len(message.get("body", b""))
            if message["type"] == "http.disconnect" or not message.get("more_body", False):
                break
    await send({"type": "http.response.body", "body": b""})


def replay(body: bytes, receive: Receive) -> Receive:
    """A `receive` that gives the app the body already read, then passes on what follows."""
    sent = False

    async def replayed() -> Message:
        nonlocal sent
        if not sent:
            sent = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replayed
