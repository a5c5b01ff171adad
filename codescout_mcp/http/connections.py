"""The HTTP connections under the Guard: uvicorn's HTTP/1.1 protocol with deadlines on what a
client sends and on what it leaves unread, and a server that stops as a service should.

uvicorn has no deadline for a request's headers or body and none for an answer the client does
not read (its `limit_concurrency` counts connections, not requests; uvicorn 0.54.0): these
subclasses add them (docs/sdk-gaps.md).
"""

from __future__ import annotations

import asyncio
import errno
import functools
import logging
import socket
import time
from types import FrameType
from typing import Any, Final

import uvicorn
from uvicorn.protocols.http.flow_control import FlowControl
from uvicorn.protocols.http.h11_impl import H11Protocol

from codescout_mcp.http.asgi import STARTED_KEY
from codescout_mcp.system.processes import exit_now

logger = logging.getLogger("codescout")


def protocol_for(request_timeout: float, write_timeout: float) -> type[H11Protocol]:
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


# What a connection reads at a time until its request is let in: its headers, and little of
# its body. A request waiting in line for a slot or for room then costs its connection and this,
# not its body (uvicorn would read up to 256 KiB ahead and keep it).
HEADER_READ_BYTES: Final = 16 * 1024


class _Admitting(FlowControl):
    """uvicorn's flow control for one connection, reading at full size again once the app asks for the body."""

    def __init__(self, transport: asyncio.Transport, full_size: int | None) -> None:
        super().__init__(transport)
        self._full_size = full_size

    def resume_reading(self) -> None:
        if self._full_size is not None:
            self._transport.max_size = self._full_size  # type: ignore[attr-defined]
            self._full_size = None
        super().resume_reading()


class _TimedH11Protocol(H11Protocol):
    """uvicorn's HTTP/1.1 protocol, with a deadline on each request's headers and on unread answers,
    and nothing read of a body before the app asks for it.

    The clock starts when a connection opens and again when the next request's first
    bytes arrive; if the headers are not all there by the deadline, the connection gets a
    408 and is closed. (The body's share of the deadline is the Guard's to enforce.)

    While the write buffer is too full to take more (the client reads slower than the
    answer comes, or not at all), the buffer must shrink every `write_timeout` seconds;
    when it does not, the connection is dropped with whatever it still held.

    Once a request's headers are in, reading stops until the app first asks for the body (the
    Guard asks once the request is let in), and until then the connection reads at most
    HEADER_READ_BYTES at a time (on asyncio's own transports; over TLS and on other loops,
    its first read), so a request waiting in line holds almost nothing of its body.
    """

    request_timeout: float = 30.0
    write_timeout: float = 30.0

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        full_size = getattr(transport, "max_size", None)
        if isinstance(full_size, int) and full_size > HEADER_READ_BYTES:
            transport.max_size = HEADER_READ_BYTES  # type: ignore[attr-defined]
        else:
            full_size = None
        self.flow = _Admitting(transport, full_size)
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
            self.flow.pause_reading()  # the rest of the body waits in the socket until the app asks

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


class GracefulServer(uvicorn.Server):
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
            exit_now(0)  # a second signal: do not wait for anything
        self.should_exit = True

    # A TLS handshake must be over within --request-timeout, not asyncio's 60 s: uvicorn passes
    # no handshake timeout to `loop.create_server` (uvicorn 0.54.0, `Server.startup`), so the
    # loop's own method is given it for the start-up (docs/sdk-gaps.md).
    handshake_timeout: float = 30.0

    async def startup(self, sockets: list[socket.socket] | None = None) -> None:
        loop = asyncio.get_running_loop()
        loop.set_exception_handler(self._loop_exception)
        if not self.config.is_ssl:
            await super().startup(sockets)
            return
        create_server = loop.create_server
        loop.create_server = functools.partial(  # type: ignore[method-assign]
            create_server, ssl_handshake_timeout=self.handshake_timeout
        )
        try:
            await super().startup(sockets)
        finally:
            del loop.create_server  # the loop's own method again

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
