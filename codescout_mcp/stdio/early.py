"""The stdio server's first moments: what a host sends is read, and what codescout answers itself
is answered, while the SDK loads.

Importing the SDK takes most of a second (two or three on a busy machine), and hosts give up
on a server that does not answer their first requests in time: `codex exec` starts its turn
without the server's tools, `claude -p` marks it pending. The door (`answers/door.py`) says
what need not wait: a host's first requests, answered from the catalog (and kept for the SDK,
whose own answers are then dropped and compared), and the calls of codescout's own tools,
each run in a thread of its own and never handed to the SDK. Everything else is kept, in
order, for the SDK's `Server` (`relay.py`).

While the SDK loads, at most EARLY_BACKLOG messages and EARLY_BACKLOG_BYTES of them are held:
past either bound, stdin is not read until the SDK is up.
"""

from __future__ import annotations

import logging
import queue
import threading

from codescout_mcp.answers.door import Call, Early
from codescout_mcp.answers.jsonrpc import BLANK_LINE, Batch, Dropped, Refused, encode
from codescout_mcp.answers.protocol import BATCH_VERSIONS
from codescout_mcp.stdio.framing import Line, read_item
from codescout_mcp.stdio.pipes import EOF

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Any, Final

    from codescout_mcp.answers.door import Door, Session
    from codescout_mcp.stdio import Loader
    from codescout_mcp.stdio.pipes import Reader, Stopper, Writer

logger = logging.getLogger("codescout")

# Messages held while the SDK loads, by count and by their bytes on the wire (the bound the
# session keeps on requests being served); one message larger than that is still taken, alone.
EARLY_BACKLOG: Final = 64
EARLY_BACKLOG_BYTES: Final = 64 * 1024 * 1024


class EarlyCall:
    """A call of one of codescout's tools that came before the SDK was up, run in a daemon thread.

    Its answer is written when it is ready, unless the call was cancelled first (which also
    ends the children it started: the call's stop). Once the SDK is up, the relay adopts it
    (`adopt`) to count it as pending until its thread ends, and to cancel it.
    """

    def __init__(self, call: Call, writer: Writer) -> None:
        self.client_id = call.request_id
        self.stop = call.stop
        self.writer = writer
        self.done = threading.Event()
        self._lock = threading.Lock()
        self._cancelled = False
        self._on_done: Callable[[], None] | None = None
        call.report_to(self._notify)  # (its progress, when the client asked for it)
        threading.Thread(target=self._run, args=(call,), daemon=True, name="codescout-early-call").start()

    def _notify(self, notification: dict[str, Any]) -> None:
        if not self._cancelled and not self.writer.congested:
            self.writer.send(encode(notification))

    def _run(self, call: Call) -> None:
        answer = call.run()
        del call
        with self._lock:
            if not self._cancelled and answer is not None:
                self.writer.send(encode(answer))
            self.done.set()
            told = self._on_done
        if told is not None:
            told()

    @property
    def cancelled(self) -> bool:
        return self._cancelled

    def cancel(self) -> None:
        """Its answer, if not yet written, is never written; the children it started are ended."""
        with self._lock:
            self._cancelled = True
        self.stop.cancel()

    def adopt(self, on_done: Callable[[], None]) -> bool:
        """Have `on_done` called (from the call's thread) once it is done; False when it is done already."""
        with self._lock:
            if self.done.is_set():
                return False
            self._on_done = on_done
            return True


class Backlogged:
    """A message read before the SDK was up: its JSON value (checked, for an object), and what was
    done with it: an early answer already sent (`sent_early`), or a call of codescout's running (`call`)."""

    __slots__ = ("call", "sent_early", "value")

    def __init__(self, value: object, sent_early: bytes | None = None, call: EarlyCall | None = None) -> None:
        self.value = value
        self.sent_early = sent_early
        self.call = call


class EarlyAnswers:
    """Reads and answers what the door lets it until the SDK is up; keeps the rest, in order, for it."""

    def __init__(self, writer: Writer, max_message_bytes: int, door: Door, session: Session) -> None:
        self.writer = writer
        self.max_message_bytes = max_message_bytes
        self.door = door
        self.session = session
        self.backlog: list[Backlogged | object] = []
        self.backlog_bytes = 0
        self.calls: list[EarlyCall] = []
        self._waiting = False  # whether a request read must be answered by the SDK

    @property
    def full(self) -> bool:
        return len(self.backlog) >= EARLY_BACKLOG or self.backlog_bytes >= EARLY_BACKLOG_BYTES

    def run(self, reader: Reader, loader: Loader, stopper: Stopper) -> str:
        """ "session" once the SDK is up, "failed" if it could not load, "done" if stdin ended with
        nothing left to answer, "stopped" on a signal or once no client reads stdout."""
        ended = False
        while not stopper.stopped.is_set():
            if loader.ready.is_set():
                return "failed" if loader.error is not None else "session"
            if ended:
                if self.writer.reader_gone():
                    return "stopped" if self._waiting or self._calls_running() else "done"
                if not self._waiting and not self._calls_running():
                    return "done"
            if ended or self.full:
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
            del item  # (its bytes go now, not when the next line comes: see relay.py)
        return "stopped"

    def waiting_requests(self) -> list[dict[str, Any]]:
        """The requests held for the SDK that nothing here answered."""
        return [
            entry.value
            for entry in self.backlog
            if isinstance(entry, Backlogged)
            and entry.sent_early is None
            and entry.call is None
            and isinstance(entry.value, dict)
            and "id" in entry.value
            and "method" in entry.value
        ]

    def _calls_running(self) -> bool:
        return any(not call.done.is_set() for call in self.calls)

    def _take(self, item: object) -> None:
        if isinstance(item, Line):
            self.backlog_bytes += len(item.data)
        negotiated = self.session.negotiated
        # A JSON array may be a batch: whether it is one is for the session to say, once it is up.
        read = read_item(item, self.max_message_bytes, batches=negotiated is None or negotiated in BATCH_VERSIONS)  # type: ignore[arg-type]
        if isinstance(read, Refused):
            logger.info("refused a message: %s", read.refusal.message)
            self.writer.send(read.refusal.reply())
            return
        if isinstance(read, Dropped):
            if read.reason != BLANK_LINE:
                logger.info("dropped a message: %s", read.reason)
            return
        if isinstance(read, Batch):
            self.session.end_early()
            self._keep(Backlogged(read.members), request=True)
            return
        message = read.envelope
        del read
        route = self.door.route(message, self.session)
        if isinstance(route, Early):
            early = encode(route.reply)
            self.writer.send(early)
            logger.debug("answered %s before the SDK loaded", message["method"])
            self._keep(Backlogged(message, sent_early=early), request=False)
        elif isinstance(route, Call):
            call = EarlyCall(route, self.writer)
            del route
            self.calls.append(call)
            self._keep(Backlogged(message, call=call), request=False)
        else:
            if message.get("method") == "notifications/cancelled":
                self._cancel(message.get("params"))
            self._keep(Backlogged(message), request="id" in message and "method" in message)

    def _cancel(self, params: object) -> None:
        """A cancellation of a call running here (the newest with that id): its answer is never
        written, and the children it started are ended."""
        wanted = params.get("requestId") if isinstance(params, dict) else None
        for call in reversed(self.calls):
            if call.client_id == wanted and type(call.client_id) is type(wanted):
                call.cancel()
                return

    def _keep(self, entry: Backlogged, *, request: bool) -> None:
        self.backlog.append(entry)
        if request:
            self._waiting = True
