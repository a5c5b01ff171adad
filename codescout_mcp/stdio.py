"""MCP over stdio: newline-delimited JSON-RPC on stdin and stdout, read and written here.

The SDK's own stdio reader replaces invalid UTF-8 in silence, ignores lines it cannot parse,
holds any line in memory however long, and reads in a worker thread that keeps the process
alive after a signal. This transport owns the wire instead and hands the SDK's `Server`
only well-formed messages (see `stdio_session.py` for what it does once the SDK is up):

* every line is answered: invalid UTF-8 or JSON -> -32700, anything that is not a JSON-RPC
  2.0 message -> -32600, a line over --max-message-bytes -> -32600, read and dropped
  without keeping it whole; the id is echoed whenever it can be read. A response the
  client sends is never answered, however malformed;
* it answers `initialize`, `ping` and `tools/list` at once, from the SDK's own recorded
  answers (`handshake.py`), while the SDK imports in a thread: a host gets the handshake
  in tens of milliseconds instead of a second. Everything is still handed to the SDK, in
  order, once it is up; its answers to what was answered early are dropped;
* when stdin ends, it keeps going until every request read has been answered (a call may
  take up to `CALL_SECONDS`), then exits 0;
* SIGTERM, SIGINT (Ctrl-C) and, on Windows, SIGBREAK (Ctrl-Break) stop it within a second,
  exit status 0, whatever the client does with its end of the pipes. The handlers are
  Python's own (`signal.signal`), installed before anything heavy is imported; asyncio's
  `add_signal_handler`, which Windows lacks, is never used. The client closing stdout ends
  it quietly, exit status 0;
* memory stays bounded whatever the client does: reading stops while answers wait unsent
  beyond a bound (a client that never reads its answers gets no more of them made).

Reading and writing happen in daemon threads, so a read or write blocked on the client
never keeps the process from exiting.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import threading

from codescout_mcp.protocol import BATCH_VERSIONS, CALL_SECONDS
from codescout_mcp.system import CURRENT
from codescout_mcp.wire import (
    BLANK,
    INVALID_REQUEST,
    Line,
    LineFramer,
    Oversized,
    Refusal,
    Unanswerable,
    check_envelope,
    encode,
    read_line,
)

# Typing names are for the checker only: importing typing costs start-up time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Final

    from codescout_mcp.handshake import Handshake

logger = logging.getLogger("codescout")

DEFAULT_MAX_MESSAGE_BYTES: Final = 32 * 1024 * 1024
# How long, after stdin ends, answers to requests already read are waited for: as long as
# the longest call may run, and a little more.
DRAIN_SECONDS: Final = CALL_SECONDS + 10.0
# How long a signal's orderly stop may take before the process leaves anyway: half a second,
# which leaves room, on a busy machine, for the process to be gone within the second promised.
STOP_SECONDS: Final = 0.5
READ_CHUNK: Final = 64 * 1024
# Lines read but not yet taken up (the reader stops reading stdin beyond this).
INBOX_LINES: Final = 16
# Answers made but not yet written to stdout: past either bound, no more requests are read
# until the client reads what waits for it.
UNSENT_ANSWERS: Final = 64
UNSENT_BYTES: Final = 64 * 1024 * 1024
# Messages held while the SDK loads.
EARLY_BACKLOG: Final = 64

EOF: Final = object()  # the end of stdin, as the reader hands it on


def serve_stdio(
    *,
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES,
    workspace: str | None = None,
    leave: bool = True,
    early_answers: bool = True,
) -> int:
    """Serve MCP on stdin/stdout until stdin ends, the client leaves, or a signal; exit status.

    With `leave`, the process ends here once the session is over: every reply is already
    written (unbuffered) and the log is flushed, and tearing down the SDK's modules at
    interpreter exit would take about half a second more than a stop may. Without
    `early_answers`, the SDK answers the handshake too (how `handshake.py` records it).
    """
    # The wire gets private descriptors; fd 0 and fd 1 then point at the null device and at
    # stderr, so nothing else in the process (a child such as git above all) reads the
    # client's messages or writes into the replies.
    wire_in, wire_out = os.dup(0), os.dup(1)
    null = os.open(os.devnull, os.O_RDONLY)
    os.dup2(null, 0)
    os.close(null)
    os.dup2(2, 1)
    stopper = Stopper()
    writer = Writer(wire_out, stopper)
    reader = Reader(wire_in, max_message_bytes)
    loader = Loader(workspace)
    handshake = None
    if early_answers:
        from codescout_mcp.handshake import load

        handshake = load(workspace=workspace is not None)
        if handshake is None:
            logger.debug("no recorded handshake for this SDK and this codescout: the SDK answers it")
    early = EarlyAnswers(handshake, writer, max_message_bytes)
    outcome = early.run(reader, loader, stopper)
    if outcome == "session":
        assert loader.session is not None
        loader.session.serve(
            early.backlog, reader=reader, writer=writer, stopper=stopper, negotiated=early.negotiated, early=early.sent
        )
    writer.close(STOP_SECONDS if stopper.stopped.is_set() else DRAIN_SECONDS)
    if leave:
        logging.shutdown()
        os._exit(0)
    return 0


# --- stopping -------------------------------------------------------------------------------


class Stopper:
    """SIGTERM, SIGINT and SIGBREAK, handled from the first instant with Python's own handlers.

    A first signal asks for an orderly stop (the session is cancelled through `on_stop`,
    which the event loop sets once it runs) and starts a timer that ends the process after
    STOP_SECONDS whatever is still running, even a loop stuck in a system call; a second
    signal ends it at once.
    """

    def __init__(self) -> None:
        self.stopped = threading.Event()
        self.reason: str | None = None
        self.on_stop: Callable[[], None] | None = None
        for name in ("SIGTERM", "SIGINT", "SIGBREAK"):  # SIGBREAK: Ctrl-Break, on Windows only
            signum = getattr(signal, name, None)
            if signum is not None:
                signal.signal(signum, self._signalled)

    def _signalled(self, signum: int, frame: object) -> None:
        if self.stopped.is_set() and self.reason == "signal":
            os._exit(0)
        logger.info("received %s, stopping", signal.Signals(signum).name)
        leave_after(STOP_SECONDS)
        self.stop("signal")

    def stop(self, reason: str) -> None:
        """Ask for the session to end (a signal, or the client closing stdout)."""
        if self.reason is None:
            self.reason = reason
        self.stopped.set()
        if self.on_stop is not None:
            self.on_stop()


def leave_after(seconds: float) -> None:
    """End the process after `seconds`, whatever is still running."""
    timer = threading.Timer(seconds, os._exit, args=(0,))
    timer.daemon = True
    timer.start()


# --- the wire's two ends ---------------------------------------------------------------------


class Reader:
    """Reads stdin in a daemon thread and hands on Line, Oversized and finally EOF items.

    It holds at most INBOX_LINES items not taken up: past that, it stops reading, and the
    client's writes wait (backpressure reaches the client through the pipe).
    """

    def __init__(self, wire_in: int, limit: int) -> None:
        self.wire_in = wire_in
        self.items: queue.Queue[object] = queue.Queue(INBOX_LINES)
        self.framer = LineFramer(limit)
        threading.Thread(target=self._run, daemon=True, name="codescout-stdin").start()

    def _run(self) -> None:
        while True:
            try:
                chunk = os.read(self.wire_in, READ_CHUNK)
            except OSError as error:
                logger.warning("cannot read stdin (%s); treating it as closed", error.strerror)
                chunk = b""
            if not chunk:
                break
            for item in self.framer.feed(chunk):
                self.items.put(item)
        for item in self.framer.finish():
            self.items.put(item)
        self.items.put(EOF)


class Writer:
    """Writes answers to stdout in a daemon thread, counting what waits unsent.

    `send` never blocks; the session asks `congested` before reading more requests. A
    write that fails (the client closed its end: EPIPE, or EINVAL on Windows) stops the
    session quietly.
    """

    def __init__(self, wire_out: int, stopper: Stopper) -> None:
        self.wire_out = wire_out
        self.stopper = stopper
        self._items: queue.Queue[bytes | None] = queue.Queue()
        self._lock = threading.Lock()
        self.unsent_count = 0
        self.unsent_bytes = 0
        self.gone = False
        self.done = threading.Event()
        threading.Thread(target=self._run, daemon=True, name="codescout-stdout").start()

    def send(self, data: bytes) -> None:
        """Queue one line (or batch) for stdout."""
        if self.gone:
            return
        with self._lock:
            self.unsent_count += 1
            self.unsent_bytes += len(data)
        self._items.put(data)

    @property
    def congested(self) -> bool:
        return self.unsent_count >= UNSENT_ANSWERS or self.unsent_bytes >= UNSENT_BYTES

    def close(self, seconds: float) -> None:
        """Let everything queued reach stdout (for at most `seconds`), then stop."""
        self._items.put(None)
        self.done.wait(seconds)

    def _run(self) -> None:
        while True:
            data = self._items.get()
            if data is None:
                break
            view = memoryview(data)
            try:
                while view:
                    view = view[os.write(self.wire_out, view) :]
            except OSError as error:
                if error.errno not in CURRENT.broken_pipe_errnos:
                    logger.warning("cannot write to stdout (%s); stopping", error.strerror)
                else:
                    logger.info("stdout closed by the client (%s); stopping", error.strerror)
                self.gone = True
                self.stopper.stop("output")
                break
            with self._lock:
                self.unsent_count -= 1
                self.unsent_bytes -= len(data)
        self.done.set()


# --- the SDK, loaded in a thread ---------------------------------------------------------------


class Loader:
    """Imports the SDK and builds the session in a daemon thread, while the handshake is answered."""

    def __init__(self, workspace: str | None) -> None:
        self.workspace = workspace
        self.session: Any = None
        self.error: BaseException | None = None
        self.ready = threading.Event()
        threading.Thread(target=self._run, daemon=True, name="codescout-load").start()

    def _run(self) -> None:
        try:
            from codescout_mcp.stdio_session import Session

            self.session = Session(self.workspace)
        except BaseException as error:  # handed to the main thread, which reports it
            self.error = error
        self.ready.set()


# --- the first moments ------------------------------------------------------------------------


class Entry:
    """A message read before the SDK was up: its JSON value (checked, for an object), and the
    answer already sent for it, if any."""

    __slots__ = ("early", "value")

    def __init__(self, value: object, early: bytes | None = None) -> None:
        self.value = value
        self.early = early


class EarlyAnswers:
    """Reads and answers what it can until the SDK is up; keeps the rest, in order, for it."""

    def __init__(self, handshake: Handshake | None, writer: Writer, max_message_bytes: int) -> None:
        self.handshake = handshake
        self.writer = writer
        self.max_message_bytes = max_message_bytes
        self.backlog: list[Entry | object] = []
        self.negotiated: str | None = None  # the version an early `initialize` settled on
        self.sent: int = 0  # early answers given
        self._forwarded = False  # whether a message other than a refusal came before
        self._waiting = 0  # requests read that the SDK must answer

    def run(self, reader: Reader, loader: Loader, stopper: Stopper) -> str:
        """ "session" once the SDK is up, "done" if stdin ended with nothing left to answer,
        "stopped" on a signal or a closed stdout."""
        ended = False
        while not stopper.stopped.is_set():
            if loader.ready.is_set():
                if loader.error is not None:
                    raise loader.error
                return "session"
            if ended and not self._waiting:
                return "done"
            if ended or len(self.backlog) >= EARLY_BACKLOG:
                loader.ready.wait(0.05)
                continue
            try:
                item = reader.items.get(timeout=0.05)
            except queue.Empty:
                continue
            if item is EOF:
                ended = True
                self.backlog.append(EOF)
                continue
            self._take(item)
        return "stopped"

    def _take(self, item: object) -> None:
        try:
            value = self._value_of(item)
            if value is BLANK:
                return
            if isinstance(value, list) and (self.negotiated is None or self.negotiated in BATCH_VERSIONS):
                # A batch, perhaps: whether it may be one is for the session to say.
                self.backlog.append(Entry(value))
                self._waiting += 1
                self._forwarded = True
                return
            message = check_envelope(value)
        except Refusal as refusal:
            logger.info("refused a message: %s", refusal.message)
            self.writer.send(refusal.reply())
            return
        except Unanswerable as error:
            logger.info("dropped a message: %s", error)
            return
        early = self._early_answer(message)
        if early is not None:
            self.writer.send(early)
            self.sent += 1
            logger.debug("answered %s from the recorded handshake", message["method"])
        elif "id" in message and "method" in message:
            self._waiting += 1
        self._forwarded = True
        self.backlog.append(Entry(message, early))

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

    def _early_answer(self, message: dict[str, Any]) -> bytes | None:
        """The recorded answer to `message`, when the SDK is sure to give exactly that one."""
        if self.handshake is None or "id" not in message or "method" not in message:
            return None
        method, params = message["method"], message.get("params")
        if method == "initialize":
            if self._forwarded or self.negotiated is not None:  # only as the first message
                return None
            found = self.handshake.initialize_result(params)
            if found is None:
                return None
            self.negotiated, result = found
        elif self.negotiated is None or params not in (None, {}):
            return None
        elif method == "ping":
            result = {}
        elif method == "tools/list":
            result = self.handshake.tools_list_result(self.negotiated)
            if result is None:
                return None
        else:
            return None
        return encode({"jsonrpc": "2.0", "id": message["id"], "result": result})


__all__ = ["BATCH_VERSIONS", "DEFAULT_MAX_MESSAGE_BYTES", "serve_stdio"]
