"""MCP over stdio: newline-delimited JSON-RPC on stdin and stdout, read and written here.

The SDK's own stdio reader replaces invalid UTF-8 in silence, ignores lines it cannot parse,
holds any line in memory however long, and reads in a worker thread that keeps the process
alive after a signal (gaps checked against mcp 2.3.0: docs/sdk-gaps.md). This transport
owns the wire instead and hands the SDK's `Server` only well-formed messages. The modules:
`framing.py` (lines), `pipes.py` (the two ends and the stop), `early.py` (before the SDK),
`relay.py` (the session once it is up). Each imports only those listed before it.

May import: core, system, answers, tools, server.

* every line is answered: invalid UTF-8 or JSON -> -32700, anything that is not a JSON-RPC
  2.0 message -> -32600, a line over --max-message-bytes -> -32600, read and dropped
  without keeping it whole; the id is echoed whenever it can be read. A response the
  client sends is never answered, however malformed;
* it answers a host's first requests at once, from the server's own definition, and the
  calls of its own tools (the door, `answers/door.py`; `early.py` before the SDK is up), while
  the SDK imports in a thread: a host gets them in tens of milliseconds
  instead of a second or more. The rest is handed to the SDK, in order, once it is up, and
  so are the first requests answered early; its answers to those are dropped (and compared). An SDK that fails
  to load is one line on stderr, every request read gets an error, and the exit status is 1;
* when stdin ends, it keeps going until every request read has been answered (a call may
  take up to `CALL_SECONDS`), then exits 0;
* SIGTERM, SIGINT (Ctrl-C) and, on Windows, SIGBREAK (Ctrl-Break) stop it within a second,
  exit status 0, whatever the client does with its end of the pipes. The handlers are
  Python's own (`signal.signal`), installed before anything heavy is imported; asyncio's
  `add_signal_handler`, which Windows lacks, is never used. The client closing stdout ends
  it quietly, exit status 0, and so does stdin ending when no client reads stdout any more;
* memory stays bounded whatever the client does: reading stops while answers wait unsent
  beyond a bound (a client that never reads its answers gets no more of them made).

Reading and writing happen in daemon threads, so a read or write blocked on the client
never keeps the process from exiting.
"""

from __future__ import annotations

import logging
import os
import threading

from codescout_mcp import limits
from codescout_mcp.answers.door import Session
from codescout_mcp.answers.jsonrpc import INTERNAL_ERROR, Refusal
from codescout_mcp.stdio.early import EarlyAnswers
from codescout_mcp.stdio.pipes import DRAIN_SECONDS, STOP_SECONDS, Reader, Stopper, Writer
from codescout_mcp.system.processes import exit_now
from codescout_mcp.tools.toolbox import Offer

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

logger = logging.getLogger("codescout")


def serve_stdio(
    *,
    max_message_bytes: int = limits.MAX_MESSAGE_BYTES,
    workspace: str | None = None,
    leave: bool = True,
    early_answers: bool = True,
    warm: bool = False,
) -> int:
    """Serve MCP on stdin/stdout until stdin ends, the client leaves, or a signal; exit status.

    With `leave`, the process ends here once the session is over: every reply is already
    written (unbuffered) and the log is flushed, and tearing down the SDK's modules at
    interpreter exit would take about half a second more than a stop may. Without
    `early_answers`, the door is shut: the SDK answers everything (how the suite compares the two).
    `warm`: the workspace's history is walked in the background from the start.
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
    offer = Offer(workspace, warm=warm)
    door = offer.door(enabled=early_answers)
    session = Session(sdk_ready=False)
    loader = Loader(offer)
    early = EarlyAnswers(writer, max_message_bytes, door, session)
    outcome = early.run(reader, loader, stopper)
    status = 0
    if outcome == "session":
        assert loader.session is not None
        session.sdk_loaded()
        loader.session.serve(early.backlog, door, session, reader=reader, writer=writer, stopper=stopper)
    elif outcome == "failed":
        status = _unable_to_serve(loader.error, early, writer)
    writer.close(STOP_SECONDS if stopper.stopped.is_set() else DRAIN_SECONDS)
    if leave:
        logging.shutdown()
        exit_now(status)
    return status


def _unable_to_serve(error: BaseException | None, early: EarlyAnswers, writer: Writer) -> int:
    """The SDK did not load: each request read gets an error saying so, and the status is 1."""
    said = f"{type(error).__name__}: {error}" if error is not None else "unknown error"
    logger.error("cannot serve MCP: the MCP SDK failed to load (%s)", said)
    for request in early.waiting_requests():
        refusal = Refusal(INTERNAL_ERROR, f"Internal error: the server cannot load the MCP SDK ({said})", request["id"])
        writer.send(refusal.reply())
    return 1


class Loader:
    """Imports the SDK and builds the session in a daemon thread, while the first requests are answered."""

    def __init__(self, offer: Offer) -> None:
        self.offer = offer
        self.session: Any = None
        self.error: BaseException | None = None
        self.ready = threading.Event()
        threading.Thread(target=self._run, daemon=True, name="codescout-load").start()

    def _run(self) -> None:
        try:
            from codescout_mcp.stdio.relay import SdkSession

            self.session = SdkSession(self.offer)
        except BaseException as error:  # handed to the main thread, which reports it
            self.error = error
        self.ready.set()


__all__ = ["serve_stdio"]
