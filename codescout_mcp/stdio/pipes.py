"""The wire's two ends and the stop: stdin and stdout in daemon threads, signals from the first instant.

Standard library only: these pieces work before the SDK has loaded (`early.py`) and after
(`relay.py`), and both import them from here.

* the reader hands on framed lines (`framing.py`) and at most INBOX_LINES of them ahead: past
  that it stops reading and the client's writes wait (backpressure through the pipe);
* the writer never blocks the session: it counts what waits unsent, and a write the client
  refuses (it closed its end) stops the session quietly;
* SIGTERM, SIGINT and SIGBREAK are Python's own handlers (`signal.signal`), never asyncio's
  `add_signal_handler`, which Windows lacks: a first signal asks for an orderly stop and ends
  the process STOP_SECONDS later whatever still runs; a second ends it at once.
"""

from __future__ import annotations

import logging
import os
import queue
import signal
import sys
import threading

from codescout_mcp.answers.protocol import CALL_SECONDS
from codescout_mcp.stdio.framing import LineFramer
from codescout_mcp.system.platform import CURRENT, stop_signals
from codescout_mcp.system.processes import exit_now

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final

logger = logging.getLogger("codescout")

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

EOF: Final = object()  # the end of stdin, as the reader hands it on


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
        for signum in stop_signals():
            signal.signal(signum, self._signalled)

    def _signalled(self, signum: int, frame: object) -> None:
        if self.stopped.is_set() and self.reason == "signal":
            exit_now(0)
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
    timer = threading.Timer(seconds, exit_now, args=(0,))
    timer.daemon = True
    timer.start()


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
        # Called (from the writer's thread) when the unsent answers fall back within bounds,
        # so that a session waiting for room need not poll.
        self.on_room: Callable[[], None] | None = None
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

    def reader_gone(self) -> bool:
        """Whether nobody reads stdout any more: a write failed, or (POSIX) the pipe's read end is closed.

        Asked when stdin ends with requests still unanswered: with no reader, no answer can be
        given, and waiting for them would only keep the process alive.
        """
        if self.gone:
            return True
        if sys.platform == "win32":  # no poll on pipes there: only a failed write tells
            return False
        import select

        poller = select.poll()
        poller.register(self.wire_out, select.POLLOUT)
        try:
            events = poller.poll(0)
        except OSError:
            return False
        return any(mask & (select.POLLERR | select.POLLHUP | select.POLLNVAL) for _, mask in events)

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
                was_congested = self.congested
                self.unsent_count -= 1
                self.unsent_bytes -= len(data)
                room = was_congested and not self.congested
            if room and self.on_room is not None:
                self.on_room()
        self.done.set()
