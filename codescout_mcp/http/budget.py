"""What the HTTP server holds for its clients, and the line each request waits in for it.

Two things are bounded: requests served at once (`Slots`, --max-concurrent) and bytes held
(`Budget`, --max-buffered-bytes: request bodies being read or served, and answers not yet
written to the socket). A request that finds no room waits its turn, first come first served,
until its own deadline (--request-timeout after its first byte), and is refused (503) only
then, with a Retry-After that says when the first request holding room must have let it go.
While it waits nothing of its body is read: waiting costs a connection, not memory.

A declared body (Content-Length) is admitted by reserving its size; a body that does not keep
coming at MIN_UPLOAD_RATE gives back the part of its reservation it has not filled (one client
declaring 32 MiB and sending nothing holds nothing after STALL_SECONDS), and from then on its
bytes are charged as they arrive, as a chunked body's always are. Bytes for work already
admitted (the rest of a body, a batch's answers) go ahead of requests still waiting to start.
"""

from __future__ import annotations

import asyncio
import collections
import time
from collections.abc import Awaitable
from typing import Final

from codescout_mcp.http.asgi import Message, Send

# A body that brings fewer bytes than this a second, measured over STALL_SECONDS, gives back
# the reservation it is not filling.
MIN_UPLOAD_RATE: Final = 64 * 1024
STALL_SECONDS: Final = 1.0


class _Line:
    """Waiters in arrival order; `urgent` ones (work already admitted) go ahead of the rest."""

    def __init__(self) -> None:
        self.waiting: collections.deque[tuple[int, asyncio.Future[None]]] = collections.deque()

    def join(self, size: int, *, urgent: bool) -> tuple[int, asyncio.Future[None]]:
        entry = (size, asyncio.get_running_loop().create_future())
        if urgent:
            self.waiting.appendleft(entry)
        else:
            self.waiting.append(entry)
        return entry


class _Holders:
    """The deadlines of the requests holding something: when room must come back at the latest."""

    def __init__(self) -> None:
        self.deadlines: dict[int, float] = {}

    def retry_after(self) -> float:
        """Seconds until the first holder must have let go (its deadline); at least one."""
        if not self.deadlines:
            return 1.0
        return max(1.0, min(self.deadlines.values()) - time.monotonic())


class Budget:
    """Bytes of request bodies and unsent answers held at once, against --max-buffered-bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.line = _Line()
        self.holders = _Holders()

    def take_now(self, size: int) -> bool:
        """Take `size` bytes if they fit now and nobody waits ahead."""
        if self.line.waiting or self.used + size > self.limit:
            return False
        self.used += size
        return True

    async def take(self, size: int, until: float, *, urgent: bool = False) -> bool:
        """Take `size` bytes, waiting in line until `until` (monotonic) for room; False if none came."""
        if (urgent or not self.line.waiting) and self.used + size <= self.limit:
            self.used += size
            return True
        entry = self.line.join(size, urgent=urgent)
        size, turn = entry
        try:
            await asyncio.wait_for(asyncio.shield(turn), max(0.0, until - time.monotonic()))
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
            self.line.waiting.remove(entry)
            self._admit()  # a large request leaving the head of the line may let smaller ones in

    def force(self, size: int) -> None:
        """Count bytes that are already held (an answer already made), room or not."""
        self.used += size

    def give(self, size: int) -> None:
        """Give bytes back, letting in whoever waits for room."""
        self.used -= size
        self._admit()

    def _admit(self) -> None:
        while self.line.waiting and self.used + self.line.waiting[0][0] <= self.limit:
            size, turn = self.line.waiting.popleft()
            self.used += size
            turn.set_result(None)


class Slots:
    """Requests served at once, against --max-concurrent; the rest wait in line for a slot."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.used = 0
        self.line = _Line()
        self.holders = _Holders()

    async def take(self, until: float) -> bool:
        """A slot, waiting in line until `until` (monotonic); False if none came."""
        if not self.line.waiting and self.used < self.limit:
            self.used += 1
            return True
        entry = self.line.join(1, urgent=False)
        try:
            await asyncio.wait_for(asyncio.shield(entry[1]), max(0.0, until - time.monotonic()))
        except (asyncio.TimeoutError, asyncio.CancelledError) as error:
            if entry[1].done():
                self.give()
            else:
                self.line.waiting.remove(entry)
            if isinstance(error, asyncio.CancelledError):
                raise
            return False
        return True

    def give(self) -> None:
        self.used -= 1
        if self.line.waiting and self.used < self.limit:
            _, turn = self.line.waiting.popleft()
            self.used += 1
            turn.set_result(None)


class Held:
    """What one request holds of the budget; all of it is given back when the request ends."""

    def __init__(self, budget: Budget, deadline: float) -> None:
        self.budget = budget
        self.deadline = deadline  # waiting in line ends here
        self.waited = 0.0  # seconds spent in line (for a slot or for room) so far
        self.bytes = 0
        self.unfilled = 0  # reserved for a declared body and not yet arrived

    @property
    def body_deadline(self) -> float:
        """When the body must have arrived: the deadline, moved on by the time spent in line
        (while a request waits, the server reads none of its body)."""
        return self.deadline + self.waited

    async def slot(self, slots: Slots) -> bool:
        """One of `slots`, waiting in line until the deadline."""
        return await self._in_line(slots.take(self.deadline))

    async def reserve(self, size: int) -> bool:
        """Room for a declared body of `size` bytes, waiting in line until the deadline."""
        if not await self._in_line(self.budget.take(size, self.deadline)):
            return False
        self.bytes += size
        self.unfilled = size
        self._track()
        return True

    async def charge(self, size: int) -> bool:
        """Count `size` bytes of body that arrived: from the reservation, else from the budget
        (ahead of requests waiting to start, until the deadline); False if no room came."""
        from_reservation = min(size, self.unfilled)
        self.unfilled -= from_reservation
        rest = size - from_reservation
        if rest and not await self._in_line(self.budget.take(rest, self.deadline, urgent=True)):
            return False
        self.bytes += rest
        self._track()
        return True

    async def _in_line(self, turn: Awaitable[bool]) -> bool:
        """Await a turn in a line, counting the time it took as time waited."""
        began = time.monotonic()
        try:
            return await turn
        finally:
            self.waited += time.monotonic() - began

    def give_back_unfilled(self) -> None:
        """The body is not coming at the pace its reservation asked for: free what it has not filled."""
        if self.unfilled:
            self.bytes -= self.unfilled
            self.budget.give(self.unfilled)
            self.unfilled = 0

    def force(self, size: int) -> None:
        self.budget.force(size)
        self.bytes += size
        self._track()

    def take_now(self, size: int) -> bool:
        if not self.budget.take_now(size):
            return False
        self.bytes += size
        self._track()
        return True

    def release(self) -> None:
        self.budget.give(self.bytes)
        self.bytes = self.unfilled = 0
        self.budget.holders.deadlines.pop(id(self), None)

    def _track(self) -> None:
        if self.bytes:
            self.budget.holders.deadlines[id(self)] = self.body_deadline


class BudgetedSend:
    """The ASGI `send` of one request: it notes the status, adds CORS headers, and holds each
    answer in the budget until it has left for the socket.

    The last part of an answer is sent apart, and uvicorn waits for its write buffer to drain
    before taking it (or for the connection to drop, which the write timeout sees to).
    """

    def __init__(self, send: Send, held: Held) -> None:
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
