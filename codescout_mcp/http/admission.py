"""The Guard's second layer, admission: a slot, room in the byte budget, and the whole body.

In this order, for a request at the endpoint that the access layer let through:

* at the handshake-era versions, an Accept or Content-Type that rules out JSON: 406 or 415 (as
  the SDK answers);
* no slot (--max-concurrent) or no room in the byte budget (--max-buffered-bytes) before the
  request's own deadline: 503 with a Retry-After that tells when room must come back; until
  then the request waits in line (`budget.py`);
* a body over --max-body-bytes: 413; a body not complete within --request-timeout (not
  counting its time in line): 408 (headers: see `connections.py`).

A refusal sent while the body is still arriving (406, 408, 413, 415, 503) reads and drops the
rest first, for LINGER_SECONDS at most in all and without a slot, so the client sees the
answer instead of a reset. An admitted body goes to the router (`routing.py`) while the
request holds its slot; what it holds of the budget travels with it in `send.held`, and is
given back by the Guard when the request ends.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable
from typing import Final

import anyio

from codescout_mcp.answers.jsonrpc import INVALID_REQUEST, Refusal, encode
from codescout_mcp.http.access import requested_version
from codescout_mcp.http.asgi import (
    BUFFERS_FULL,
    BUSY,
    TIMED_OUT,
    TOO_LARGE,
    Headers,
    Receive,
    Scope,
    respond,
    retry_after,
)
from codescout_mcp.http.budget import MIN_UPLOAD_RATE, STALL_SECONDS, Budget, BudgetedSend, Slots
from codescout_mcp.http.settings import HttpSettings

logger = logging.getLogger("codescout")

# What an admitted request is handed to: its scope, headers, body, receive (for what comes after
# the body: a client leaving) and send.
Route = Callable[[Scope, Headers, bytes, Receive, BudgetedSend], Awaitable[None]]


class Refusing:
    """A refusal to answer once the request's slot is given back (its body is then read and dropped)."""

    __slots__ = ("body", "extra", "status")

    def __init__(self, status: int, body: bytes, extra: list[tuple[bytes, bytes]] | None = None) -> None:
        self.status = status
        self.body = body
        self.extra = extra or []


class Admission:
    """The admission layer: slots and the byte budget shared by every request of one server."""

    def __init__(self, settings: HttpSettings) -> None:
        self.max_body_bytes: Final = settings.max_body_bytes
        self.budget = Budget(settings.max_buffered_bytes)
        self.slots = Slots(settings.max_concurrent)

    async def serve(self, scope: Scope, headers: Headers, receive: Receive, send: BudgetedSend, route: Route) -> None:
        """Admit the request (the module docstring), then hand its body to `route` while it holds a slot."""
        if requested_version(headers) is not None:
            unacceptable = _unacceptable(headers)
            if unacceptable is not None:
                status, text = unacceptable
                answer = encode(Refusal(INVALID_REQUEST, text).as_dict())
                await respond(send, status, answer, json_body=True, linger=receive, linger_bytes=self.max_body_bytes)
                return
        if not await send.held.slot(self.slots):
            extra = [retry_after(self.slots.holders.retry_after())]
            await respond(send, 503, BUSY, linger=receive, linger_bytes=self.max_body_bytes, extra=extra)
            return
        self.slots.holders.deadlines[id(send)] = send.held.body_deadline
        refusing: Refusing | None = None
        try:
            read = await self._read_body(headers, receive, send)
            if isinstance(read, Refusing):
                refusing = read
            elif read is not None:
                await route(scope, headers, read, receive, send)
        finally:
            self.slots.holders.deadlines.pop(id(send), None)
            self.slots.give()
        if refusing is not None:  # the rest of the body is read and dropped without a slot
            await respond(
                send,
                refusing.status,
                refusing.body,
                linger=receive,
                linger_bytes=self.max_body_bytes,
                extra=refusing.extra,
            )

    async def _read_body(self, headers: Headers, receive: Receive, send: BudgetedSend) -> bytes | Refusing | None:
        """The whole body, admitted into the budget; a refusal to answer once the slot is free
        (413, 503, or 408 for a body not there by its deadline); None when the client left.

        A declared body reserves its size, waiting in line for room until the deadline; a body
        that stalls (fewer than MIN_UPLOAD_RATE bytes a second over STALL_SECONDS) gives back
        what it has not filled, and its bytes are then charged as they come, as a chunked one's.
        Time spent in line does not count against the body's own deadline (`Held.body_deadline`).
        """
        limit = self.max_body_bytes
        held = send.held
        declared_text = headers.get(b"content-length")
        declared = int(declared_text) if declared_text is not None and declared_text.isdigit() else None
        if declared is not None and declared > limit:
            return Refusing(413, TOO_LARGE)
        if declared is not None and not await held.reserve(declared):
            return self._budget_refusal()
        parts: list[bytes] = []
        size = 0
        window_start, window_size = time.monotonic(), 0
        while True:
            left = held.body_deadline - time.monotonic()
            if left <= 0:
                del parts
                return Refusing(408, TIMED_OUT)
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
        return Refusing(413, TOO_LARGE)

    def _budget_refusal(self) -> Refusing:
        """503: no room came before the request's deadline; Retry-After says when it must."""
        return Refusing(503, BUFFERS_FULL, [retry_after(self.budget.holders.retry_after())])


def _accepts_json(accept: bytes) -> bool:
    """Whether an Accept header admits application/json (wildcards included), as the SDK checks it."""
    kinds = {part.split(b";")[0].strip().lower() for part in accept.split(b",")}
    return bool(kinds & {b"application/json", b"application/*", b"*/*"})


def _unacceptable(headers: Headers) -> tuple[int, str] | None:
    """406 or 415 for a POST whose Accept or Content-Type rules out JSON (as the SDK answers)."""
    if not _accepts_json(headers.get(b"accept", b"") or b""):
        return 406, "Not Acceptable: Client must accept application/json"
    content_type = headers.get(b"content-type", b"") or b""
    if content_type.split(b";")[0].strip().lower() != b"application/json":
        return 415, "Unsupported Media Type: Content-Type must be application/json"
    return None


def rules_out_json(headers: Headers) -> bool:
    """Whether Accept or Content-Type rules out JSON (at 2026-07-28 the SDK's entry then answers)."""
    return _unacceptable(headers) is not None
