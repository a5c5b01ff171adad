"""MCP over stdio: newline-delimited JSON-RPC on stdin and stdout, read and written here.

The SDK's own stdio reader replaces invalid UTF-8 in silence, ignores lines it cannot parse,
holds any line in memory however long, and reads in a worker thread that keeps the process
alive after a signal. This transport owns the wire instead and hands the SDK's `Server`
only well-formed messages:

* every line is answered: invalid UTF-8 or JSON -> -32700, anything that is not a JSON-RPC
  2.0 message (null, a number, a bad id, `params` that is not an object, a batch array
  unless protocol 2025-03-26 was negotiated) -> -32600, a line over --max-message-bytes
  -> -32600, read and dropped without keeping it whole; the id is echoed whenever it can
  be read from the line. At 2025-03-26 a batch is served member by member and answered
  with one array;
* an `initialize` asking for a protocol version the server does not serve is answered with
  the newest one it does (see server.SERVED_PROTOCOL_VERSIONS);
* when stdin ends, the server keeps going until every request read has been answered
  (or settled unanswered because the client cancelled it), then exits 0;
* SIGTERM or SIGINT stops it within a second, exit status 0, whatever the client does
  with its end of the pipes; the client closing stdout ends it quietly, exit status 0.

Reading and writing happen in daemon threads, so a read or write blocked on the client
never keeps the process from exiting.
"""

from __future__ import annotations

import contextlib
import json
import logging
import os
import signal
import threading
from collections.abc import Awaitable, Callable, Iterator
from dataclasses import dataclass
from typing import Any, Final

import anyio
import anyio.from_thread
import anyio.lowlevel
import mcp_types as types
from anyio.streams.memory import MemoryObjectReceiveStream, MemoryObjectSendStream
from mcp.shared.message import ServerMessageMetadata, SessionMessage
from pydantic import ValidationError

from codescout_mcp.jsontext import JsonTextError, decode_utf8, parse_json_text
from codescout_mcp.server import BATCH_VERSIONS, build_server, served_initialize_params

logger = logging.getLogger("codescout")

DEFAULT_MAX_MESSAGE_BYTES: Final = 32 * 1024 * 1024
PARSE_ERROR: Final = -32700
INVALID_REQUEST: Final = -32600

# How long, after stdin ends, answers to requests already read are waited for.
DRAIN_SECONDS: Final = 60.0
# How long a signal's orderly stop may take before the process leaves anyway.
STOP_SECONDS: Final = 0.8
_READ_CHUNK: Final = 64 * 1024


def serve_stdio(
    *, max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES, workspace: str | None = None, leave: bool = True
) -> int:
    """Serve MCP on stdin/stdout until stdin ends, the client leaves, or a signal; exit status.

    With `leave`, the process ends here once the session is over: every reply is already
    written (unbuffered) and the log is flushed, and tearing down the SDK's modules at
    interpreter exit would take about half a second more than a stop may.
    """
    # The wire gets private descriptors; fd 0 and fd 1 then point at the null device and at
    # stderr, so nothing else in the process (a child such as git above all) reads the
    # client's messages or writes into the replies.
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    for signum in (signal.SIGTERM, signal.SIGINT):  # until the session's own receiver is up
        signal.signal(signum, _exit_now)
    session = _Session(wire_in, wire_out, max_message_bytes, workspace)
    with contextlib.suppress(KeyboardInterrupt):  # a Ctrl-C before the signal receiver was up
        anyio.run(session.run)
    if leave:
        logging.shutdown()
        os._exit(0)
    return 0


# --- framing: bytes from stdin into lines, without ever holding an oversized one ----------


@dataclass(frozen=True, slots=True)
class Line:
    """One message's bytes, newline removed."""

    data: bytes


@dataclass(frozen=True, slots=True)
class Oversized:
    """A line longer than the limit: its size and its request id, if one could be read."""

    size: int
    request_id: types.RequestId | None


class LineFramer:
    """Splits a byte stream into Line and Oversized items, keeping at most `limit` bytes."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self._parts: list[bytes] = []
        self._size = 0
        self._sniffer: IdSniffer | None = None  # set while inside an oversized line

    def feed(self, chunk: bytes) -> Iterator[Line | Oversized]:
        start = 0
        while True:
            end = chunk.find(b"\n", start)
            piece = chunk[start:] if end < 0 else chunk[start:end]
            self._add(piece)
            if end < 0:
                return
            yield self._finish_line()
            start = end + 1

    def finish(self) -> Iterator[Line | Oversized]:
        """What is left at end of input: a last line without its newline."""
        if self._size or self._sniffer is not None:
            yield self._finish_line()

    def _add(self, piece: bytes) -> None:
        if not piece:
            return
        self._size += len(piece)
        if self._sniffer is not None:
            self._sniffer.feed(piece)
            return
        self._parts.append(piece)
        if self._size > self.limit:
            self._sniffer = IdSniffer()
            for part in self._parts:
                self._sniffer.feed(part)
            self._parts = []

    def _finish_line(self) -> Line | Oversized:
        item: Line | Oversized
        if self._sniffer is not None:
            item = Oversized(self._size, self._sniffer.request_id())
        else:
            item = Line(b"".join(self._parts))
        self._parts, self._size, self._sniffer = [], 0, None
        return item


class IdSniffer:
    """Finds the top-level `"id"` member of a JSON object seen as a stream of bytes.

    For lines too long to keep: it follows strings, escapes and nesting byte by byte and
    remembers only the (short) id value, so the error reply can still name the request.
    """

    _VALUE_LIMIT: Final = 256

    def __init__(self) -> None:
        self._depth = 0
        self._in_string = False
        self._escaped = False
        self._expect_key = False
        self._key: bytearray | None = None  # the top-level key being read, if short
        self._last_key: bytes | None = None
        self._capture: bytearray | None = None  # the id's value being read
        self._found: bytes | None = None
        self._failed = False

    def feed(self, data: bytes) -> None:
        if self._found is not None or self._failed:
            return
        for byte in data:
            self._step(byte)
            if self._found is not None or self._failed:
                return

    def _step(self, byte: int) -> None:
        capture = self._capture
        if self._in_string:
            if capture is not None:
                capture.append(byte)
            elif self._key is not None and len(self._key) < 8:
                self._key.append(byte)
            if self._escaped:
                self._escaped = False
            elif byte == 0x5C:  # backslash
                self._escaped = True
            elif byte == 0x22:  # closing quote
                self._in_string = False
                if capture is not None:
                    self._found = bytes(capture)
                elif self._key is not None:
                    self._last_key = bytes(self._key[:-1])
                    self._key = None
            return
        if capture is not None:
            if byte in b",}] \t\r\n":
                if capture:
                    self._found = bytes(capture)
                elif byte not in b" \t\r\n":
                    self._failed = True
                return
            if byte == 0x22 and not capture:
                capture.append(byte)
                self._in_string = True
                return
            capture.append(byte)
            if len(capture) > self._VALUE_LIMIT:
                self._failed = True
            return
        if byte == 0x22:
            self._in_string = True
            if self._depth == 1 and self._expect_key:
                self._key = bytearray()
        elif byte in b"{[":
            if self._depth == 0 and byte != 0x7B:
                self._failed = True  # not an object: no id to find
            self._depth += 1
            self._expect_key = byte == 0x7B
        elif byte in b"}]":
            self._depth -= 1
            if self._depth <= 0:
                self._failed = True
        elif self._depth == 1:
            if byte == 0x3A:  # colon: a value follows its key
                self._expect_key = False
                if self._last_key == b"id":
                    self._capture = bytearray()
                self._last_key = None
            elif byte == 0x2C:
                self._expect_key = True

    def request_id(self) -> types.RequestId | None:
        """The id, if it was found and is a valid request id (a string or an integer)."""
        if self._found is None:
            return None
        try:
            value = json.loads(self._found)
        except ValueError:
            return None
        return value if _is_request_id(value) else None


def _is_request_id(value: object) -> bool:
    return (type(value) is int) or isinstance(value, str)


# --- reading one line into a message, or into the error that answers it ----------------


class Refusal(Exception):
    """A line that gets a JSON-RPC error reply instead of reaching the server."""

    def __init__(self, code: int, message: str, request_id: types.RequestId | None = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.request_id = request_id

    def as_dict(self) -> dict[str, Any]:
        error = {"code": self.code, "message": self.message}
        return {"jsonrpc": "2.0", "id": self.request_id, "error": error}

    def reply(self) -> bytes:
        return _line(self.as_dict())


def _line(message: dict[str, Any] | list[dict[str, Any]]) -> bytes:
    return json.dumps(message, ensure_ascii=False, separators=(",", ":")).encode("utf-8", "backslashreplace") + b"\n"


BLANK: Final = object()  # what read_line gives for a blank line (JSON's null is None)


def read_line(data: bytes) -> object:
    """The JSON value in one line (BLANK for a blank line); Refusal when it is not JSON."""
    data = data.removesuffix(b"\r")
    if not data.strip():
        return BLANK
    try:
        text = decode_utf8(data, "")
    except JsonTextError as error:
        # Find the id if the rest of the line is sound, so the client knows which request failed.
        request_id = _id_of(data.decode("utf-8", "surrogateescape"))
        raise Refusal(PARSE_ERROR, f"Parse error: {error}", request_id) from None
    try:
        return parse_json_text(text, "")
    except JsonTextError as error:
        raise Refusal(PARSE_ERROR, f"Parse error: {error}") from None


def _id_of(text: str) -> types.RequestId | None:
    try:
        value = json.loads(text)
    except (ValueError, RecursionError):
        return None
    raw = value.get("id") if isinstance(value, dict) else None
    return raw if _is_request_id(raw) else None


def as_message(value: object, *, in_batch: bool = False) -> types.JSONRPCMessage:
    """The JSON-RPC message a parsed line (or batch member) holds; Refusal when it is not one."""
    if isinstance(value, list):
        raise Refusal(INVALID_REQUEST, "Invalid request: batches (JSON arrays) are served only at protocol 2025-03-26")
    if not isinstance(value, dict):
        raise Refusal(INVALID_REQUEST, "Invalid request: a JSON-RPC message is a JSON object")
    has_id = "id" in value
    raw_id = value.get("id")
    request_id = raw_id if _is_request_id(raw_id) else None
    if value.get("jsonrpc") != "2.0":
        raise Refusal(INVALID_REQUEST, 'Invalid request: "jsonrpc" must be "2.0"', request_id)
    if has_id and request_id is None:
        raise Refusal(INVALID_REQUEST, "Invalid request: an id is a string or an integer")
    if "method" in value:
        if not isinstance(value["method"], str):
            raise Refusal(INVALID_REQUEST, 'Invalid request: "method" must be a string', request_id)
        if "params" in value and not isinstance(value["params"], dict):
            raise Refusal(INVALID_REQUEST, 'Invalid request: "params" must be an object', request_id)
        if value["method"] == "initialize" and has_id:
            if in_batch:
                raise Refusal(INVALID_REQUEST, "Invalid request: initialize may not be part of a batch", request_id)
            value = {**value, "params": served_initialize_params(value.get("params"))}
    elif not has_id or ("result" in value) == ("error" in value):
        raise Refusal(INVALID_REQUEST, "Invalid request: neither a request, a notification nor a response", request_id)
    try:
        message: types.JSONRPCMessage = types.jsonrpc_message_adapter.validate_python(value, by_name=False)
    except ValidationError:
        raise Refusal(INVALID_REQUEST, "Invalid request: not a JSON-RPC 2.0 message", request_id) from None
    return message


# --- the session: threads on the wire, the SDK's server in between ------------------------


class _Unanswered:
    """Requests read from the client that are not yet answered or settled."""

    def __init__(self) -> None:
        self._count: dict[tuple[type, types.RequestId], int] = {}
        self.input_ended = False
        self.drained = anyio.Event()

    def add(self, request_id: types.RequestId) -> Callable[[], Awaitable[None]]:
        key = _key(request_id)
        self._count[key] = self._count.get(key, 0) + 1

        async def settled() -> None:  # the SDK calls this when it will never answer it
            self.discard(request_id)

        return settled

    def discard(self, request_id: types.RequestId) -> None:
        key = _key(request_id)
        left = self._count.pop(key, 0) - 1
        if left > 0:
            self._count[key] = left
        self._check()

    def _check(self) -> None:
        if self.input_ended and not self._count:
            self.drained.set()

    def end_of_input(self) -> None:
        self.input_ended = True
        self._check()


def _key(request_id: types.RequestId) -> tuple[type, types.RequestId]:
    return (type(request_id), request_id)


class _Batch:
    """The answers to one JSON-RPC batch, sent as one array once every request is settled."""

    def __init__(self, out: MemoryObjectSendStream[bytes]) -> None:
        self.out = out
        self.answers: list[dict[str, Any] | None] = []  # in the order of the batch's members
        self.slots: dict[tuple[type, types.RequestId], int] = {}
        self.waiting = 0
        self.sent = False

    def refused(self, refusal: Refusal) -> None:
        self.answers.append(refusal.as_dict())

    def expect(self, request_id: types.RequestId) -> None:
        key = _key(request_id)
        if key in self.slots:
            raise Refusal(INVALID_REQUEST, "Invalid request: the id is used twice in this batch", request_id)
        self.slots[key] = len(self.answers)
        self.answers.append(None)
        self.waiting += 1

    def answer(self, request_id: types.RequestId, reply: dict[str, Any] | None) -> None:
        """One request's answer (None: settled without one, as when cancelled)."""
        index = self.slots.pop(_key(request_id), None)
        if index is not None:
            self.answers[index] = reply
            self.waiting -= 1

    async def send_if_complete(self, out: MemoryObjectSendStream[bytes] | None = None) -> None:
        if self.waiting or self.sent:
            return
        self.sent = True
        replies = [answer for answer in self.answers if answer is not None]
        if replies:  # a batch of notifications only gets no answer at all
            await (out or self.out).send(_line(replies))


_EOF: Final = object()


class _Session:
    def __init__(self, wire_in: int, wire_out: int, max_message_bytes: int, workspace: str | None) -> None:
        self.wire_in = wire_in
        self.wire_out = wire_out
        self.max_message_bytes = max_message_bytes
        self.workspace = workspace
        self.unanswered = _Unanswered()
        self.output_gone = anyio.Event()
        self.flushed = anyio.Event()  # the writer wrote everything and stopped
        self.negotiated: str | None = None  # the protocol version the handshake settled on
        self._initialize_ids: set[tuple[type, types.RequestId]] = set()
        self._batches: dict[tuple[type, types.RequestId], _Batch] = {}

    async def run(self) -> None:
        server = build_server(workspace=self.workspace)
        to_server, server_reads = anyio.create_memory_object_stream[SessionMessage | Exception](16)
        server_writes, from_server = anyio.create_memory_object_stream[SessionMessage](16)
        raw_send, raw_receive = anyio.create_memory_object_stream[object](4)
        out_send, out_receive = anyio.create_memory_object_stream[bytes](64)
        token = anyio.lowlevel.current_token()
        _daemon(self._read_wire, raw_send, token)
        _daemon(self._write_wire, out_receive, token)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(self._stop_on_signal, tasks.cancel_scope)
            tasks.start_soon(self._stop_when_output_gone, tasks.cancel_scope)
            tasks.start_soon(self._relay_requests, raw_receive, to_server, out_send.clone())
            tasks.start_soon(self._relay_answers, from_server, out_send)
            await server.run(server_reads, server_writes, server.create_initialization_options())
            # The server closed its side; let the last replies reach the wire before leaving.
            with anyio.move_on_after(DRAIN_SECONDS):
                await self.flushed.wait()
            tasks.cancel_scope.cancel()

    # stdin -> messages

    def _read_wire(self, raw_send: MemoryObjectSendStream[object], token: Any) -> None:
        framer = LineFramer(self.max_message_bytes)

        def deliver(item: object) -> None:
            anyio.from_thread.run(raw_send.send, item, token=token)

        try:
            while True:
                try:
                    chunk = os.read(self.wire_in, _READ_CHUNK)
                except OSError as error:
                    logger.warning("cannot read stdin (%s); treating it as closed", error.strerror)
                    chunk = b""
                if not chunk:
                    break
                for item in framer.feed(chunk):
                    deliver(item)
            for item in framer.finish():
                deliver(item)
            deliver(_EOF)
        except (anyio.RunFinishedError, anyio.BrokenResourceError, anyio.ClosedResourceError, RuntimeError):
            pass  # the session is over

    async def _relay_requests(
        self,
        raw: MemoryObjectReceiveStream[object],
        to_server: MemoryObjectSendStream[SessionMessage | Exception],
        out: MemoryObjectSendStream[bytes],
    ) -> None:
        async with to_server, out:
            async for item in raw:
                if item is _EOF:
                    break
                try:
                    value = self._value_of(item)
                    if isinstance(value, list) and self.negotiated in BATCH_VERSIONS:
                        if not value:
                            raise Refusal(INVALID_REQUEST, "Invalid request: an empty batch")
                        await self._relay_batch(value, to_server, out)
                        continue
                    message = None if value is BLANK else as_message(value)
                except Refusal as refusal:
                    logger.info("refused a message: %s", refusal.message)
                    await out.send(refusal.reply())
                    continue
                if message is not None:
                    await self._relay(message, to_server, None)
            self.unanswered.end_of_input()
            with anyio.move_on_after(DRAIN_SECONDS) as waited:
                await self.unanswered.drained.wait()
            if waited.cancelled_caught:
                logger.warning("stdin closed; gave up waiting for answers after %.0f s", DRAIN_SECONDS)

    async def _relay(
        self,
        message: types.JSONRPCMessage,
        to_server: MemoryObjectSendStream[SessionMessage | Exception],
        batch: _Batch | None,
    ) -> None:
        metadata = None
        if isinstance(message, types.JSONRPCRequest):
            key = _key(message.id)
            settled = self.unanswered.add(message.id)
            if batch is not None:
                self._batches[key] = batch
                settled = self._settled_in_batch(message.id, settled)
            elif message.method == "initialize":
                self._initialize_ids.add(key)
            metadata = ServerMessageMetadata(on_request_unanswered=settled)
        await to_server.send(SessionMessage(message, metadata=metadata))

    async def _relay_batch(
        self,
        members: list[object],
        to_server: MemoryObjectSendStream[SessionMessage | Exception],
        out: MemoryObjectSendStream[bytes],
    ) -> None:
        """A JSON-RPC batch (protocol 2025-03-26): each member served, the answers in one array."""
        batch = _Batch(out)
        messages = []
        for member in members:
            try:
                message = as_message(member, in_batch=True)
                if isinstance(message, types.JSONRPCRequest):
                    batch.expect(message.id)
            except Refusal as refusal:
                batch.refused(refusal)
                continue
            messages.append(message)
        for message in messages:
            await self._relay(message, to_server, batch)
        await batch.send_if_complete()

    def _settled_in_batch(
        self, request_id: types.RequestId, settled: Callable[[], Awaitable[None]]
    ) -> Callable[[], Awaitable[None]]:
        async def also_in_batch() -> None:
            batch = self._batches.pop(_key(request_id), None)
            if batch is not None:
                batch.answer(request_id, None)
                await batch.send_if_complete()
            await settled()

        return also_in_batch

    def _value_of(self, item: object) -> object:
        if isinstance(item, Oversized):
            raise Refusal(
                INVALID_REQUEST,
                f"Invalid request: the message has {item.size} bytes, more than the limit of "
                f"{self.max_message_bytes} (--max-message-bytes)",
                item.request_id,
            )
        assert isinstance(item, Line)
        return read_line(item.data)

    # messages -> stdout

    async def _relay_answers(
        self, from_server: MemoryObjectReceiveStream[SessionMessage], out: MemoryObjectSendStream[bytes]
    ) -> None:
        async with from_server, out:
            async for item in from_server:
                message = item.message
                if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)) and message.id is not None:
                    key = _key(message.id)
                    if key in self._initialize_ids:
                        self._initialize_ids.discard(key)
                        if isinstance(message, types.JSONRPCResponse):
                            version = message.result.get("protocolVersion")
                            self.negotiated = version if isinstance(version, str) else None
                    batch = self._batches.pop(key, None)
                    if batch is not None:
                        batch.answer(message.id, message.model_dump(by_alias=True, exclude_unset=True, mode="json"))
                        await batch.send_if_complete(out)
                        self.unanswered.discard(message.id)
                        continue
                data = message.model_dump_json(by_alias=True, exclude_unset=True).encode("utf-8", "backslashreplace")
                await out.send(data + b"\n")
                if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)) and message.id is not None:
                    self.unanswered.discard(message.id)

    def _write_wire(self, out: MemoryObjectReceiveStream[bytes], token: Any) -> None:
        done = self.flushed
        try:
            while True:
                try:
                    data = anyio.from_thread.run(out.receive, token=token)
                except (anyio.EndOfStream, anyio.ClosedResourceError):
                    break
                view = memoryview(data)
                while view:
                    view = view[os.write(self.wire_out, view) :]
        except OSError as error:
            logger.info("stdout closed by the client (%s); stopping", error.strerror)
            done = self.output_gone
        except (anyio.RunFinishedError, RuntimeError):
            return  # the session is over
        with contextlib.suppress(anyio.RunFinishedError, RuntimeError):
            anyio.from_thread.run_sync(done.set, token=token)

    async def _stop_when_output_gone(self, scope: anyio.CancelScope) -> None:
        await self.output_gone.wait()
        scope.cancel()

    async def _stop_on_signal(self, scope: anyio.CancelScope) -> None:
        try:
            with anyio.open_signal_receiver(signal.SIGTERM, signal.SIGINT) as signals:
                async for signum in signals:
                    logger.info("received %s, stopping", signal.Signals(signum).name)
                    # An orderly stop that overruns ends the process anyway.
                    _leave_after(STOP_SECONDS)
                    scope.cancel()
                    return
        finally:
            # From here on (the receiver is gone), a signal ends the process at once.
            for signum in (signal.SIGTERM, signal.SIGINT):
                signal.signal(signum, _exit_now)


def _exit_now(signum: int, frame: object) -> None:
    os._exit(0)


def _leave_after(seconds: float) -> None:
    timer = threading.Timer(seconds, os._exit, args=(0,))
    timer.daemon = True
    timer.start()


def _daemon(target: Callable[..., None], *args: object) -> None:
    threading.Thread(target=target, args=args, daemon=True, name=f"codescout-{target.__name__}").start()
