"""The stdio session once the SDK is loaded: the wire's messages relayed to the SDK's `Server`.

`early.py` answers what the door lets it while this module imports; from here each message
read is put to the door (`answers/door.py`) too: the calls of codescout's tools are answered
by codescout, alone or in a batch, and everything else (the first requests answered early
included, in order) is handed to the SDK, and every answer is written back. The session keeps
these promises:

1. every request handed to the SDK or taken by the door has one `Pending` record, from the
   moment it is sent (or its call starts) until its answer is written or it is settled
   unanswered (`on_request_unanswered`, or a door's call cancelled: its children are ended
   at once, and its record is settled when its thread has returned, so a cancelled call
   holds its place among the MAX_IN_FLIGHT until its work is gone);
2. request ids are the client's to choose (and to reuse): each request goes to the SDK under
   an id of the session's own, and its answer gets the client's id back, so two requests
   with one id (in a batch and out of it, say) never swap answers. A cancellation names the
   newest pending request with that id;
3. at 2025-03-26 a batch is served member by member and answered with one array, holding at
   most `jsonrpc.MAX_BATCH` members and `records.MAX_BATCH_ANSWER_BYTES` of answers (past that, each
   further answer is an error saying so, rather than memory without bound); the array goes
   out when its last member settles. Its calls of codescout's tools share one deadline,
   CALL_SECONDS from when the batch is read: one that starts after it is a tool error;
4. no more requests are read while answers wait unsent beyond the writer's bounds, while
   MAX_IN_FLIGHT requests are pending, or while their bytes pass IN_FLIGHT_BYTES; waiting for
   room waits on an event, never a poll;
5. answers are written by `jsonrpc.encode` (a lone surrogate in an id, a path or an owner is
   written as its JSON escape: the SDK's own serializer would fail on it);
6. the SDK's answer to a request answered early is dropped, and compared with it as JSON:
   a difference is logged once (the early answers are codescout's, the SDK's would win);
7. when stdin ends, pending requests are waited for (DRAIN_SECONDS at most), unless nobody
   reads stdout any more.

Mirrors the SDK's own stdio loop (`mcp.server.stdio.stdio_server` and `Server.run`, mcp 2.3.0)
on the SDK's public streams; the gaps it works around are in docs/sdk-gaps.md.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import logging
import threading
import time
import warnings
from collections.abc import Awaitable, Callable
from typing import TYPE_CHECKING, Any, Final

import anyio
import anyio.abc
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import ServerMessageMetadata, SessionMessage

from codescout_mcp.answers.door import Call, Door, Session
from codescout_mcp.answers.jsonrpc import (
    BLANK_LINE,
    Batch,
    Dropped,
    Message,
    Refusal,
    Refused,
    RequestId,
    encode,
    read_message,
    sdk_message,
)
from codescout_mcp.answers.protocol import BATCH_VERSIONS, CALL_SECONDS
from codescout_mcp.server import build_server
from codescout_mcp.stdio.early import Backlogged, EarlyCall
from codescout_mcp.stdio.framing import Line, read_item
from codescout_mcp.stdio.pipes import DRAIN_SECONDS, EOF, Reader, Stopper, Writer
from codescout_mcp.stdio.records import BatchAnswers, Pending

if TYPE_CHECKING:
    from mcp.server.lowlevel import Server

    from codescout_mcp.tools.toolbox import Offer

logger = logging.getLogger("codescout")

MAX_IN_FLIGHT: Final = 64
# Bytes of requests being served at once; one request larger than this still runs, alone.
IN_FLIGHT_BYTES: Final = 64 * 1024 * 1024


class SdkSession:
    """One stdio session's SDK side: built (the SDK imported, the server made) in the loader thread."""

    def __init__(self, offer: Offer) -> None:
        self.server: Server[Any] = build_server(offer=offer)

    def serve(
        self,
        backlog: list[Backlogged | object],
        door: Door,
        session: Session,
        *,
        reader: Reader,
        writer: Writer,
        stopper: Stopper,
    ) -> None:
        """Serve until stdin ends and every request is answered, the client leaves, or a signal."""
        relay = _Relay(self.server, door, session, reader, writer, stopper)
        with contextlib.suppress(KeyboardInterrupt):
            anyio.run(relay.run, backlog)


class _Relay:
    def __init__(
        self, server: Server[Any], door: Door, session: Session, reader: Reader, writer: Writer, stopper: Stopper
    ):
        self.server = server
        self.door = door
        # The session's era and the protocol version the handshake settled on (an early
        # answer's, or the SDK's): what follows depends on them.
        self.session = session
        self.reader = reader
        self.writer = writer
        self.stopper = stopper
        self.pending: dict[int, Pending] = {}  # by the session's own id, oldest first
        self.pending_bytes = 0
        self.input_ended = False
        self.drained = anyio.Event()
        self.room = anyio.Event()
        self._ids = itertools.count(1)
        self._mismatch_told = False
        self.loop: asyncio.AbstractEventLoop | None = None
        self.tasks: anyio.abc.TaskGroup | None = None

    async def run(self, backlog: list[Backlogged | object]) -> None:
        to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](16)
        raw_send, raw_receive = anyio.create_memory_object_stream[object](4)
        loop = self.loop = asyncio.get_running_loop()
        token = anyio.lowlevel.current_token()
        async with anyio.create_task_group() as tasks:
            self.tasks = tasks
            scope = tasks.cancel_scope

            def cancel() -> None:
                with contextlib.suppress(RuntimeError):  # the loop has closed: nothing left to cancel
                    loop.call_soon_threadsafe(scope.cancel)

            def room() -> None:
                with contextlib.suppress(RuntimeError):
                    loop.call_soon_threadsafe(self.room.set)

            self.stopper.on_stop = cancel
            self.writer.on_room = room
            if self.stopper.stopped.is_set():
                scope.cancel()
            threading.Thread(target=self._pump, args=(raw_send, token), daemon=True, name="codescout-pump").start()
            tasks.start_soon(self._relay_requests, backlog, raw_receive, to_server)
            tasks.start_soon(self._relay_answers, from_server)
            await self.server.run(server_reads, server_writes, self.server.create_initialization_options())
            scope.cancel()
        self.writer.on_room = None
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
            except BaseException:
                # Whatever the loop says as it stops (a cancelled send, a closed loop, a finished
                # run), the session is over: this thread ends, and quietly.
                return
            if item is EOF:
                return

    async def _relay_requests(
        self,
        backlog: list[Backlogged | object],
        raw: MemoryObjectReceiveStream[object],
        to_server: MemoryObjectSendStream[SessionMessage | Exception],
    ) -> None:
        async with to_server:
            ended = False
            for entry in backlog:
                if entry is EOF:
                    ended = True
                    break
                assert isinstance(entry, Backlogged)
                if entry.call is not None:
                    self._adopt(entry.call)
                elif isinstance(entry.value, dict):  # (checked, and put to the door, when it was read)
                    await self._handle(Message(entry.value), to_server, sent_early=entry.sent_early)
                else:  # a batch, if the session's version serves them
                    await self._handle(read_message(entry.value, batches=self._batches()), to_server)
            if not ended:
                async for item in raw:
                    if item is EOF:
                        break
                    size = len(item.data) if isinstance(item, Line) else 0
                    read = read_item(item, self.reader.framer.limit, batches=self._batches())  # type: ignore[arg-type]
                    # The line's bytes go now, not when the next line comes: a call read from them
                    # holds none of them (a fast-path call's structs, a parsed value's strings).
                    del item
                    if isinstance(read, Message):
                        route = self.door.route(read.envelope, self.session)
                        if isinstance(route, Call):
                            del read
                            await self._direct_call(route, size)
                            continue
                        del route
                    await self._handle(read, to_server, size=size)
                    del read
            self.input_ended = True
            self._settle_check()
            if self.pending and self.writer.reader_gone():
                logger.info("stdin closed and nobody reads stdout: %d requests go unanswered", len(self.pending))
                self.stopper.stop("output")
                return
            with anyio.move_on_after(DRAIN_SECONDS) as waited:
                await self.drained.wait()
            if waited.cancelled_caught:
                logger.warning("stdin closed; gave up waiting for answers after %.0f s", DRAIN_SECONDS)

    def _batches(self) -> bool:
        """Whether a JSON array is a batch: only at the version that has them."""
        return self.session.negotiated in BATCH_VERSIONS

    def _refuse(self, refusal: Refusal) -> None:
        logger.info("refused a message: %s", refusal.message)
        self.writer.send(refusal.reply())

    async def _handle(
        self,
        read: Refused | Dropped | Batch | Message,
        to_server: MemoryObjectSendStream[SessionMessage | Exception],
        *,
        sent_early: bytes | None = None,
        size: int = 0,
    ) -> None:
        """A message the door left to the SDK (or one it refused, or a batch), relayed."""
        if isinstance(read, Batch):
            await self._relay_batch(read.members, to_server, size)
            return
        message = sdk_message(read.envelope) if isinstance(read, Message) else read
        del read
        if isinstance(message, Refused):
            self._refuse(message.refusal)
        elif isinstance(message, Dropped):
            if message.reason != BLANK_LINE:
                logger.info("dropped a message: %s", message.reason)
        else:
            await self._relay(message, to_server, None, sent_early=sent_early, size=size)

    async def _direct_call(self, call: Call, size: int) -> None:
        """A call of codescout's tools, answered in a task of its own."""
        await self._wait_for_room(size)
        self._start_direct(next(self._ids), call, size, None)

    def _start_direct(self, internal: int, call: Call, size: int, batch: BatchAnswers | None) -> None:
        call.report_to(self._notify)  # (its progress, when the client asked for it)
        record = Pending(call.request_id, size, batch, None)
        record.direct = True
        record.stop = call.stop
        self.pending[internal] = record
        self.pending_bytes += size
        assert self.tasks is not None
        self.tasks.start_soon(self._serve_direct, internal, call)

    async def _serve_direct(self, internal: int, call: Call) -> None:
        reply = await call.answer()
        del call
        record = self._settle(internal)
        if record is None or record.cancelled:  # the client cancelled it: its work is gone now
            return
        if record.batch is not None:
            record.batch.answer(internal, reply)
            self._send_batch(record.batch)
        else:
            self.writer.send(encode(reply))

    def _notify(self, notification: dict[str, Any]) -> None:
        """Send a notification (a call's progress: from the call's own thread) unless the client
        stopped reading: a progress report is worth less than room for the answers."""
        if not self.writer.congested:
            self.writer.send(encode(notification))

    def _adopt(self, call: EarlyCall) -> None:
        """A call that began before the SDK was up: pending until its thread is done (cancelled or
        not), and cancellable."""
        internal = next(self._ids)
        record = Pending(call.client_id, 0, None, None)
        record.direct = True
        record.early_call = call
        record.cancelled = call.cancelled
        loop = self.loop
        assert loop is not None

        def done() -> None:  # in the call's thread
            with contextlib.suppress(RuntimeError):  # the loop has closed: nothing left to settle
                loop.call_soon_threadsafe(self._settle, internal)

        if call.adopt(done):
            self.pending[internal] = record

    async def _wait_for_room(self, size: int) -> None:
        """Wait until another request may be served: answers are read, requests pending few."""
        while (
            self.writer.congested
            or len(self.pending) >= MAX_IN_FLIGHT
            or (self.pending_bytes and self.pending_bytes + size > IN_FLIGHT_BYTES)
        ):
            self.room = anyio.Event()
            # Checked again after the event is made: room that came in between is not missed.
            if (
                not self.writer.congested
                and len(self.pending) < MAX_IN_FLIGHT
                and not (self.pending_bytes and self.pending_bytes + size > IN_FLIGHT_BYTES)
            ):
                return
            await self.room.wait()

    async def _relay(
        self,
        message: types.JSONRPCMessage,
        to_server: MemoryObjectSendStream[SessionMessage | Exception],
        batch: BatchAnswers | None,
        *,
        sent_early: bytes | None = None,
        size: int = 0,
        internal: int | None = None,
    ) -> None:
        if isinstance(message, types.JSONRPCRequest):
            await self._wait_for_room(size)
            if internal is None:
                internal = next(self._ids)
            record = Pending(message.id, size, batch, sent_early)
            if batch is None and message.method == "initialize" and sent_early is None:
                record.handshake = anyio.Event()
            self.pending[internal] = record
            self.pending_bytes += size
            metadata = ServerMessageMetadata(on_request_unanswered=self._unanswered(internal))
            await to_server.send(SessionMessage(message.model_copy(update={"id": internal}), metadata=metadata))
            if record.handshake is not None:
                # What follows depends on the version it settles (a batch may be one only at
                # 2025-03-26); the SDK reads nothing else until it has answered, either.
                with anyio.move_on_after(DRAIN_SECONDS):
                    await record.handshake.wait()
            return
        if isinstance(message, types.JSONRPCNotification) and message.method == "notifications/cancelled":
            pointed = self._cancellation(message)
            if pointed is None:
                return
            message = pointed
        await to_server.send(SessionMessage(message))

    def _cancellation(self, message: types.JSONRPCNotification) -> types.JSONRPCNotification | None:
        """A cancellation, pointed at the session's id for the client's (None: nothing to cancel)."""
        params = dict(message.params or {})
        wanted = params.get("requestId")
        internal = next(
            (
                internal
                for internal, record in reversed(self.pending.items())
                if record.client_id == wanted and type(record.client_id) is type(wanted)
            ),
            None,
        )
        if internal is None:
            return None
        record = self.pending[internal]
        if record.direct:  # not the SDK's to cancel: its work ended, its answer never sent
            if record.cancelled:
                return None
            record.cancelled = True
            if record.early_call is not None:
                record.early_call.cancel()
            elif record.stop is not None:
                record.stop.cancel()
            if record.batch is not None:  # the batch's array goes without it
                record.batch.answer(internal, None)
                self._send_batch(record.batch)
            return None
        params["requestId"] = internal
        return message.model_copy(update={"params": params})

    def _settle(self, internal: int) -> Pending | None:
        """Forget a pending request (answered, or settled without an answer); its record, if it was pending."""
        record = self.pending.pop(internal, None)
        if record is not None:
            self.pending_bytes -= record.size
            if record.handshake is not None:
                record.handshake.set()
            self.room.set()
        self._settle_check()
        return record

    def _settle_check(self) -> None:
        if self.input_ended and not self.pending:
            self.drained.set()

    def _unanswered(self, internal: int) -> Callable[[], Awaitable[None]]:
        async def settled() -> None:  # the SDK calls this when it will never answer the request
            record = self._settle(internal)
            if record is not None and record.batch is not None:
                record.batch.answer(internal, None)
                self._send_batch(record.batch)

        return settled

    async def _relay_batch(
        self, members: list[object], to_server: MemoryObjectSendStream[SessionMessage | Exception], size: int
    ) -> None:
        """A JSON-RPC batch (protocol 2025-03-26): each member served (through the door, as alone),
        the answers in one array."""
        batch = BatchAnswers()
        deadline = time.monotonic() + CALL_SECONDS  # one for all its calls, which run at once
        served: list[tuple[types.JSONRPCMessage | Call, int | None]] = []
        ids: set[tuple[type, RequestId]] = set()  # a batch's answers are told apart by their ids
        for member in members:
            read = read_message(member, seen=ids)
            message: types.JSONRPCMessage | Call | Refused | Dropped
            if isinstance(read, Message):
                route = self.door.route(read.envelope, self.session, deadline=deadline)
                message = route if isinstance(route, Call) else sdk_message(read.envelope)
                del route
            else:
                assert not isinstance(read, Batch)  # (a batch within a batch is refused)
                message = read
            del read
            if isinstance(message, Refused):
                batch.refused(message.refusal)
                continue
            if isinstance(message, Dropped):
                logger.info("dropped a batch member: %s", message.reason)
                continue
            internal = None
            if isinstance(message, (Call, types.JSONRPCRequest)):
                internal = next(self._ids)
                batch.expect(internal)
            served.append((message, internal))
        del members
        share = size // max(1, len(served))
        for message, internal in served:
            if isinstance(message, Call):
                assert internal is not None
                await self._wait_for_room(share)
                self._start_direct(internal, message, share, batch)
            else:
                await self._relay(message, to_server, batch, size=share, internal=internal)
        self._send_batch(batch)

    def _send_batch(self, batch: BatchAnswers) -> None:
        line = batch.line()
        if line is not None:
            self.writer.send(line)

    # messages -> stdout

    async def _relay_answers(self, from_server: MemoryObjectReceiveStream[SessionMessage]) -> None:
        async with from_server:
            async for item in from_server:
                message = item.message
                record = None
                if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)) and isinstance(message.id, int):
                    record = self.pending.get(message.id)
                if record is None:  # not an answer to a request of ours: passed on as it is
                    self.writer.send(encode(_dumped(message)))
                    continue
                assert isinstance(message, (types.JSONRPCResponse, types.JSONRPCError))
                internal = message.id
                assert isinstance(internal, int)
                reply = _dumped(message)
                reply["id"] = record.client_id
                if record.handshake is not None and isinstance(message, types.JSONRPCResponse):
                    version = message.result.get("protocolVersion")
                    if isinstance(version, str):
                        self.session.negotiated_as(version)
                self._settle(internal)
                if record.sent_early is not None:
                    self._compare(record.sent_early, reply)
                elif record.batch is not None:
                    record.batch.answer(internal, reply)
                    self._send_batch(record.batch)
                else:
                    self.writer.send(encode(reply))

    def _compare(self, early: bytes, sdk: dict[str, Any]) -> None:
        if json.loads(early) != sdk and not self._mismatch_told:
            self._mismatch_told = True
            logger.warning(
                "an early answer differed from the SDK's; please report it with the SDK's version (early %s, SDK %s)",
                early.decode("utf-8", "replace")[:300],
                json.dumps(sdk)[:300],
            )


def _dumped(message: types.JSONRPCMessage) -> dict[str, Any]:
    dumped: dict[str, Any] = message.model_dump(by_alias=True, exclude_unset=True, mode="json")
    return dumped


__all__ = ["SdkSession"]
