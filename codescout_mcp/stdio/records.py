"""What the stdio relay (`relay.py`) keeps of each request until it is settled (`Pending`), and
of each 2025-03-26 batch until its last member is (`BatchAnswers`, whose answers go out as one array).
"""

from __future__ import annotations

from codescout_mcp.answers import words
from codescout_mcp.answers.jsonrpc import INTERNAL_ERROR, Refusal, encode

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

    import anyio

    from codescout_mcp.stdio.early import EarlyCall
    from codescout_mcp.system.processes import Stop

# The most bytes of answers one batch's array holds; each answer past it is an error saying so.
MAX_BATCH_ANSWER_BYTES: Final = 64 * 1024 * 1024


class BatchAnswers:
    """The answers to one JSON-RPC batch, sent as one array once every request is settled."""

    def __init__(self) -> None:
        self.answers: list[dict[str, Any] | None] = []  # in the order of the batch's members
        self.slots: dict[int, int] = {}
        self.waiting = 0
        self.bytes = 0
        self.sent = False

    def refused(self, refusal: Refusal) -> None:
        self.answers.append(refusal.as_dict())

    def expect(self, internal: int) -> None:
        self.slots[internal] = len(self.answers)
        self.answers.append(None)
        self.waiting += 1

    def answer(self, internal: int, reply: dict[str, Any] | None) -> None:
        """One request's answer (None: settled without one, as when cancelled)."""
        index = self.slots.pop(internal, None)
        if index is None:
            return
        if reply is not None:
            size = len(encode(reply))
            if self.bytes + size > MAX_BATCH_ANSWER_BYTES:
                message = words.batch_too_large(f"{MAX_BATCH_ANSWER_BYTES} bytes")
                reply = Refusal(INTERNAL_ERROR, message, reply.get("id")).as_dict()
                size = len(encode(reply))
            self.bytes += size
        self.answers[index] = reply
        self.waiting -= 1

    def line(self) -> bytes | None:
        """The batch's answer, once complete (and only once); None while waiting, or for notifications only."""
        if self.waiting or self.sent:
            return None
        self.sent = True
        replies = [answer for answer in self.answers if answer is not None]
        return encode(replies) if replies else None


class Pending:
    """One request handed to the SDK and not yet settled."""

    __slots__ = ("batch", "cancelled", "client_id", "direct", "early_call", "handshake", "sent_early", "size", "stop")

    def __init__(self, client_id: object, size: int, batch: BatchAnswers | None, sent_early: bytes | None) -> None:
        self.client_id = client_id
        self.size = size
        self.batch = batch
        self.sent_early = sent_early  # the answer already sent for it, if any
        self.direct = False  # answered by codescout (the door), not handed to the SDK
        self.stop: Stop | None = None  # a door's call's stop
        self.cancelled = False  # a door's call the client cancelled: its answer is dropped
        self.early_call: EarlyCall | None = None  # the call that began before the SDK was up
        # For an `initialize` the SDK must answer: set once it has (what follows depends on it).
        self.handshake: anyio.Event | None = None
