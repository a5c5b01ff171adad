"""The stdio session once the SDK is loaded: the wire's messages relayed to the SDK's `Server`.

`stdio.py` reads and writes the wire and answers the handshake while this module imports;
here every message read is handed to the SDK in order, and every answer is written back:

* request ids are the client's to choose (and to reuse): each request gets an id of the
  session's own on its way to the SDK, and its answer gets the client's id back, so two
  requests with one id (in a batch and out of it, say) never swap answers. A cancellation
  names the newest unanswered request with that id;
* at 2025-03-26 a batch is served member by member and answered with one array, holding at
  most `wire.MAX_BATCH` members and MAX_BATCH_ANSWER_BYTES of answers (past that, each further
  answer is an error saying so, rather than memory without bound);
* no more requests are read while answers wait unsent beyond the writer's bounds, while
  MAX_IN_FLIGHT requests are being served, or while their bytes pass the budget;
* answers are written by `wire.encode` (a lone surrogate in an id, a path or an owner is
  written as its JSON escape: the SDK's own serializer would fail on it);
* answers the SDK gives to what `stdio.py` answered early are dropped (and compared).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import threading
import warnings
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from pydantic import ValidationError

from codescout_mcp.protocol import BATCH_VERSIONS
from codescout_mcp.server import build_server
from codescout_mcp.stdio import DRAIN_SECONDS, EOF, Entry, Reader, Stopper, Writer
from codescout_mcp.wire import (
    BLANK,
    INVALID_REQUEST,
    Line,
    Oversized,
    Refusal,
    RequestId,
    Unanswerable,
    check_batch,
    check_envelope,
    check_unique_id,
    encode,
    read_line,
)

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

logger = logging.getLogger("codescout")

MAX_BATCH_ANSWER_BYTES: Final = 64 * 1024 * 1024
MAX_IN_FLIGHT: Final = 64
# Bytes of requests being served at once; one request larger than this still runs, alone.
IN_FLIGHT_BYTES: Final = 64 * 1024 * 1024


class Session:
    """One stdio session: built (the SDK imported, the server made) in the loader thread."""

    def __init__(self, workspace: str | None) -> None:
        self.server: Server[Any] = build_server(workspace=workspace)

    def serve(
        self,
        backlog: list[Entry | object],
        *,
        reader: Reader,
        writer: Writer,
        stopper: Stopper,
        negotiated: str | None,
        early: int,
    ) -> None:
        """Serve until stdin ends and every request is answered, the client leaves, or a signal."""
        relay = _Relay(self.server, reader, writer, stopper, negotiated)
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(relay.run, backlog)


class _Outstanding:
    """Requests handed to the SDK and not yet answered (or settled unanswered)."""

    def __init__(self) -> None:
        self.client_id: dict[int, RequestId] = {}  # the session's id -> the client's
        self.size: dict[int, int] = {}
        self.bytes = 0
        self.input_ended = False
        self.drained = anyio.Event()

    def add(self, internal: int, client_id: RequestId, size: int) -> None:
        self.client_id[internal] = client_id
        self.size[internal] = size
        self.bytes += size

    def settle(self, internal: int) -> RequestId | None:
        client_id = self.client_id.pop(internal, None)
        self.bytes -= self.size.pop(internal, 0)
        self._check()
        return client_id

    def newest(self, client_id: object) -> int | None:
        """The newest outstanding request the client gave this id."""
        for internal in reversed(self.client_id):
            found = self.client_id[internal]
            if found == client_id and type(found) is type(client_id):
                return internal
        return None

    def end_of_input(self) -> None:
        self.input_ended = True
        self._check()

    def _check(self) -> None:
        if self.input_ended and not self.client_id:
            self.drained.set()


class _Batch:
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
                reply = {
                    "jsonrpc": "2.0",
                    "id": reply.get("id"),
                    "error": {
                        "code": -32603,
                        "message": f"Internal error: this batch's answers passed {MAX_BATCH_ANSWER_BYTES} bytes; "
                        "send its requests in smaller batches",
                    },
                }
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


class _Relay:
    def __init__(self, server: Server[Any], reader: Reader, writer: Writer, stopper: Stopper, negotiated: str | None):
        self.server = server
        self.reader = reader
        self.writer = writer
        self.stopper = stopper
        self.negotiated = negotiated  # the protocol version the handshake settled on
        self.outstanding = _Outstanding()
        self._ids = itertools.count(1)
        self._early: dict[int, bytes] = {}  # the session's id -> the answer already sent
        self._initialize: dict[int, anyio.Event] = {}  # initialize requests the SDK has yet to answer
        self._batches: dict[int, _Batch] = {}
        self._mismatch_told = False

    async def run(self, backlog: list[Entry | object]) -> None:
        to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](16)
        raw_send, raw_receive = anyio.create_memory_object_stream[object](4)
        loop = asyncio.get_running_loop()
        token = anyio.lowlevel.current_token()
        async with anyio.create_task_group() as tasks:
            scope = tasks.cancel_scope

            def cancel() -> None:
                loop.call_soon_threadsafe(scope.cancel)

            self.stopper.on_stop = cancel
            if self.stopper.stopped.is_set():
                scope.cancel()
            threading.Thread(target=self._pump, args=(raw_send, token), daemon=True, name="codescout-pump").start()
            tasks.start_soon(self._relay_requests, backlog, raw_receive, to_server)
            tasks.start_soon(self._relay_answers, from_server)
            await self.server.run(server_reads, server_writes, self.server.create_initialization_options())
            scope.cancel()
        # Quiet from here: what the SDK's cancelled tasks may still say is not the user's business.
        warnings.simplefilter("ignore")
        logging.getLogger("asyncio").setLevel(logging.CRITICAL)

    # stdin -> messages

    def _pump(self, raw_send: MemoryObjectSendStream[object], token: Any) -> None:
        """Moves what the reader read into the event loop, one item at a time (it waits there when full)."""
        while True:
            item = self.reader.items.get()
            try:
                anyio.from_thread.run(raw_send.send, item, token=token)
            except (anyio.RunFinishedError, anyio.BrokenResourceError, anyio.ClosedResourceError, RuntimeError):
                return  # the session is over
            if item is EOF:
                return

    async def _relay_requests(
        self,
        backlog: list[Entry | object],
        raw: MemoryObjectReceiveStream[object],
        to_server: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        async with to_server:
            ended = False
            for entry in backlog:
                if entry is EOF:
                    ended = True
                    break
                assert isinstance(entry, Entry)
                await self._handle(entry.value, to_server, checked=True, early=entry.early)
            if not ended:
                async for item in raw:
                    if item is EOF:
                        break
                    try:
                        value = self._value_of(item)
                    except Refusal as refusal:
                        self._refuse(refusal)
                        continue
                    if value is not BLANK:
                        await self._handle(value, to_server, size=_size_of(item))
            self.outstanding.end_of_input()
            with anyio.move_on_after(DRAIN_SECONDS) as waited:
                await self.outstanding.drained.wait()
            if waited.cancelled_caught:
                logger.warning("stdin closed; gave up waiting for answers after %.0f s", DRAIN_SECONDS)

    def _value_of(self, item: object) -> object:
        if isinstance(item, Oversized):
            limit = self.reader.framer.limit
            raise Refusal(
                INVALID_REQUEST,
                f"Invalid request: the message has {item.size} bytes, more than the limit of {limit} "
                "(--max-message-bytes)",
                item.request_id,
            )
        assert isinstance(item, Line)
        return read_line(item.data)

    def _refuse(self, refusal: Refusal) -> None:
        logger.info("refused a message: %s", refusal.message)
        self.writer.send(refusal.reply())

    async def _handle(
        self,
        value: object,
        to_server: MemoryObjectSendStream[SessionMessage | Exception],
        *,
        checked: bool = False,
        early: bytes | None = None,
        size: int = 0,
    ) -> None:
        try:
            if isinstance(value, list) and self.negotiated in BATCH_VERSIONS:
                check_batch(value)
                await self._relay_batch(value, to_server, size)
                return
            message = self._as_message(value if checked and isinstance(value, dict) else check_envelope(value))
        except Refusal as refusal:
            self._refuse(refusal)
            return
        except Unanswerable as error:
            logger.info("dropped a message: %s", error)
            return
        await self._relay(message, to_server, None, early=early, size=size)

    @staticmethod
    def _as_message(value: dict[str, Any]) -> types.JSONRPCMessage:
        try:
            message: types.JSONRPCMessage = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
        except ValidationError:
            if "method" not in value:  # a response: never answered
                raise Unanswerable("a response that is not a JSON-RPC 2.0 response") from None
            raw_id = value.get("id")
            request_id = raw_id if isinstance(raw_id, (str, int)) and not isinstance(raw_id, bool) else None
            raise Refusal(INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message", request_id) from None
        return message

    async def _room(self, size: int) -> None:
        """Wait until another request may be served: answers are read, requests in flight few."""
        outstanding = self.outstanding
        while (
            self.writer.congested
            or len(outstanding.client_id) >= MAX_IN_FLIGHT
            or (outstanding.bytes and outstanding.bytes + size > IN_FLIGHT_BYTES)
        ):
            await anyio.sleep(0.005)

    async def _relay(
        self,
        message: types.JSONRPCMessage,
        to_server: MemoryObjectSendStream[SessionMessage | Exception],
        batch: _Batch | None,
        *,
        early: bytes | None = None,
        size: int = 0,
        internal: int | None = None,
    ) -> None:
        metadata = None
        if isinstance(message, types.JSONRPCRequest):
            await self._room(size)
            if internal is None:
                internal = next(self._ids)
            self.outstanding.add(internal, message.id, size)
            if batch is not None:
                self._batches[internal] = batch
            elif message.method == "initialize":
                self._initialize[internal] = anyio.Event()
            if early is not None:
                self._early[internal] = early
            handshake = self._initialize.get(internal) if early is None else None
            message = message.model_copy(update={"id": internal})
            metadata = ServerMessageMetadata(on_request_unanswered=self._settled(internal))
            await to_server.send(SessionMessage(message, metadata=metadata))
            if handshake is not None:
                # What follows depends on the version it settles (a batch may be one only at
                # 2025-03-26); the SDK reads nothing else until it has answered, either.
                with anyio.move_on_after(DRAIN_SECONDS):
                    await handshake.wait()
            return
        if isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            pointed = self._cancellation(message)
            if pointed is None:
                return
            message = pointed
        await to_server.send(SessionMessage(message, metadata=metadata))

    def _cancellation(self, message: types.JSONRPCNotification) -> types.JSONRPCNotification | None:
        """A cancellation, pointed at the session's id for the client's (None: nothing to cancel)."""
        params = dict(message.params or {})
        internal = self.outstanding.newest(params.get("requestId"))
        if internal is None:
            return None
        params["requestId"] = internal
        return message.model_copy(update={"params": params})

    def _settled(self, internal: int) -> Callable[[], Awaitable[None]]:
        async def settled() -> None:  # the SDK calls this when it will never answer the request
            self._early.pop(internal, None)
            handshake = self._initialize.pop(internal, None)
            if handshake is not None:
                handshake.set()
            batch = self._batches.pop(internal, None)
            if batch is not None:
                batch.answer(internal, None)
                self._send_batch(batch)
            self.outstanding.settle(internal)

        return settled

    async def _relay_batch(
        self, members: list[object], to_server: MemoryObjectSendStream[SessionMessage | Exception], size: int
    ) -> None:
        """A JSON-RPC batch (protocol 2025-03-26): each member served, the answers in one array."""
        batch = _Batch()
        messages: list[tuple[types.JSONRPCMessage, int | None]] = []
        ids: set[tuple[type, RequestId]] = set()  # a batch's answers are told apart by their ids
        for member in members:
            try:
                message = self._as_message(check_envelope(member, in_batch=True))
                if isinstance(message, types.JSONRPCRequest):
                    check_unique_id(message.id, ids)
            except Refusal as refusal:
                batch.refused(refusal)
                continue
            except Unanswerable as error:
                logger.info("dropped a batch member: %s", error)
                continue
            internal = None
            if isinstance(message, types.JSONRPCRequest):
                internal = next(self._ids)
                batch.expect(internal)
            messages.append((message, internal))
        share = size // max(1, len(members))
        for message, internal in messages:
            await self._relay(message, to_server, batch, size=share, internal=internal)
        self._send_batch(batch)

    def _send_batch(self, batch: _Batch) -> None:
        line = batch.line()
        if line is not None:
            self.writer.send(line)

    # messages -> stdout

    async def _relay_answers(self, from_server: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async with from_server:
            async for item in from_server:
                message = item.message
                if not isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)) or not isinstance(
                    message.id, int
                ):
                    self.writer.send(encode(_dumped(message)))
                    continue
                internal = message.id
                client_id = self.outstanding.client_id.get(internal)
                if internal not in self.outstanding.client_id:  # not ours (cannot happen): pass it on
                    self.writer.send(encode(_dumped(message)))
                    continue
                reply = _dumped(message)
                reply["id"] = client_id
                handshake = self._initialize.pop(internal, None)
                if handshake is not None:
                    handshake.set()
                    version = (
                        message.result.get("protocolVersion") if isinstance(message, types.JSONRPCResponse) else None
                    )
                    self.negotiated = version if isinstance(version, str) else self.negotiated
                early = self._early.pop(internal, None)
                batch = self._batches.pop(internal, None)
                if early is not None:
                    self._compare(early, encode(reply))
                elif batch is not None:
                    batch.answer(internal, reply)
                    self._send_batch(batch)
                else:
                    self.writer.send(encode(reply))
                self.outstanding.settle(internal)

    def _compare(self, early: bytes, sdk: bytes) -> None:
        if early != sdk and not self._mismatch_told:
            self._mismatch_told = True
            logger.warning("an early answer differed from the SDK's (run `python -m codescout_mcp.handshake`)")


def _dumped(message: types.JSONRPCMessage) -> dict[str, Any]:
    dumped: dict[str, Any] = message.model_dump(by_alias=True, exclude_unset=True, mode="json")
    return dumped


def _size_of(item: object) -> int:
    return len(item.data) if isinstance(item, Line) else 0


__all__ = ["Session"]
