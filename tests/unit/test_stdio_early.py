"""The stdio server's first moments in process (`stdio/early.py`): what it reads, keeps, answers and
cancels before the SDK is up, driven with stand-ins for stdin, the SDK's loader and the stop.

What it answers is held to the SDK's own answers in tests/unit/test_early_answers.py, and the
whole start through the real process in tests/stdio/test_stdio_start.py; here, the bounds of
what is held for the SDK, which requests it must answer, batches, and calls begun early.
"""

from __future__ import annotations

import json
import logging
import queue
import threading
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp.answers.door import Session
from codescout_mcp.stdio.early import EARLY_BACKLOG, EARLY_BACKLOG_BYTES, Backlogged, EarlyAnswers, EarlyCall
from codescout_mcp.stdio.framing import Line, Oversized
from codescout_mcp.stdio.pipes import EOF
from codescout_mcp.tools.toolbox import Offer

MIB = 1 << 20
INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
HITS = [
    {"path": "a.py", "matches": 2, "last_modified_days": 1},
    {"path": "b.py", "matches": 1, "last_modified_days": 9},
]


class Collected:
    """Stands in for the stdout writer: keeps what is sent, as JSON."""

    def __init__(self) -> None:
        self.sent: list[Any] = []
        self.gone = False

    def send(self, data: bytes) -> None:
        self.sent.append(json.loads(data))

    def reader_gone(self) -> bool:
        return self.gone


class Stand:
    """A reader (its queue of items), a loader and a stopper, as `EarlyAnswers.run` asks them."""

    def __init__(self, items: Sequence[object]) -> None:
        self.items: queue.Queue[object] = queue.Queue()
        for item in items:
            self.items.put(item)
        self.ready = threading.Event()
        self.error: BaseException | None = None
        self.stopped = threading.Event()


def line(message: object) -> Line:
    return Line(json.dumps(message).encode())


def request(rid: object, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return message


def run(items: Sequence[object], *, stop_after: float = 0.5, early: Any = None) -> tuple[str, Any]:
    """Run the early phase on `items` until it returns, or stop it after `stop_after` seconds."""
    stand = Stand(items)
    early = early or fresh()
    timer = threading.Timer(stop_after, stand.stopped.set)
    timer.start()
    try:
        outcome: str = early.run(stand, stand, stand)
    finally:
        timer.cancel()
    early.left = stand.items.qsize()  # (what was not read)
    return outcome, early


def fresh() -> Any:
    """An early phase whose writer keeps what it is sent (`Collected`)."""
    return EarlyAnswers(Collected(), 32 * MIB, Offer().door(enabled=True), Session(sdk_ready=False))  # type: ignore[arg-type]


def answers(early: Any) -> dict[Any, Any]:
    return {answer.get("id"): answer for answer in early.writer.sent}


def test_at_most_so_many_messages_are_held_for_the_sdk() -> None:
    notes = [line({"jsonrpc": "2.0", "method": f"notifications/n{n}"}) for n in range(EARLY_BACKLOG + 5)]
    outcome, early = run(notes)
    assert outcome == "stopped"
    assert (len(early.backlog), early.left) == (64, 5)


def test_at_most_so_many_bytes_are_held_for_the_sdk() -> None:
    """Counted as read, blank lines too; the message that crosses the bound is still taken."""
    blank = Line(b" " * (16 * MIB))
    outcome, early = run([blank] * 6)
    assert (outcome, early.backlog_bytes, early.left) == ("stopped", 64 * MIB, 2)
    assert EARLY_BACKLOG_BYTES == 64 * MIB
    _, early = run([Line(b" " * (16 * MIB - 1))] * 6)
    assert (early.backlog_bytes, early.left) == (5 * (16 * MIB - 1), 1)


def test_stdin_ending_with_nothing_for_the_sdk_is_done_at_once() -> None:
    outcome, early = run([line(request(0, "initialize", INITIALIZE)), line(request(1, "ping")), EOF], stop_after=5)
    assert outcome == "done"
    assert sorted(answers(early)) == [0, 1]
    assert early.waiting_requests() == []


def test_a_request_for_the_sdk_keeps_it_waiting_after_stdin_ends() -> None:
    """The SDK must answer it: the early phase waits for the SDK (here: until stopped)."""
    unknown = request(2, "prompts/get", {"name": "x"})
    outcome, early = run([line(request(0, "initialize", INITIALIZE)), line(unknown), EOF], stop_after=0.5)
    assert outcome == "stopped"
    assert early.waiting_requests() == [unknown]


def test_nobody_reading_the_answers_ends_the_wait() -> None:
    early = fresh()
    early.writer.gone = True
    outcome, _ = run([line(request(1, "prompts/get", {"name": "x"})), EOF], stop_after=5, early=early)
    assert outcome == "stopped"  # a request left unanswered: not "done"
    early = fresh()
    early.writer.gone = True
    outcome, _ = run([line({"jsonrpc": "2.0", "method": "notifications/initialized"}), EOF], stop_after=5, early=early)
    assert outcome == "done"


def test_the_sdk_up_or_failed_ends_the_early_phase() -> None:
    stand = Stand([])
    stand.ready.set()
    early = fresh()
    assert early.run(stand, stand, stand) == "session"
    stand.error = ImportError("no SDK")
    assert early.run(stand, stand, stand) == "failed"


def test_only_requests_wait_for_the_sdk() -> None:
    items = [
        line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
        line({"jsonrpc": "2.0", "id": 5, "result": {}}),  # a response
        line(request(7, "prompts/get", {"name": "x"})),
        line(request(8, "resources/read", {"uri": "x"})),
    ]
    _, early = run(items)
    assert early.waiting_requests() == [
        request(7, "prompts/get", {"name": "x"}),
        request(8, "resources/read", {"uri": "x"}),
    ]
    assert [type(entry) for entry in early.backlog] == [Backlogged] * 4


def test_a_batch_waits_for_the_sdk_and_ends_the_early_answers() -> None:
    """Whether it may be a batch is the session's to say, so from there on the SDK answers."""
    batch = [request(1, "ping")]
    _, early = run([line(batch), line(request(2, "initialize", INITIALIZE))])
    assert answers(early) == {}  # neither answered early
    assert early.session.answering_early is False
    kept = [entry.value for entry in early.backlog if isinstance(entry, Backlogged)]
    assert kept == [batch, request(2, "initialize", INITIALIZE)]


def test_a_batch_keeps_the_early_phase_waiting_for_the_sdk_after_stdin_ends() -> None:
    """Its members are the SDK's to answer (here: it never loads, so the phase is stopped)."""
    outcome, early = run([line([request(1, "ping")]), EOF], stop_after=0.5)
    assert (outcome, answers(early)) == ("stopped", {})


def test_a_call_answered_early_needs_no_sdk_after_stdin_ends() -> None:
    opening = [
        line(request(0, "initialize", INITIALIZE)),
        line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
    call = request(3, "tools/call", {"name": "rank_search_results", "arguments": {"hits": HITS}})
    outcome, early = run([*opening, line(call), EOF], stop_after=5)
    assert outcome == "done"
    assert answers(early)[3]["result"]["isError"] is False


def test_a_line_too_long_is_refused_and_holds_no_bytes() -> None:
    outcome, early = run([Oversized(40 * MIB, 7), EOF], stop_after=5)
    assert outcome == "done"
    assert (early.backlog_bytes, answers(early)[7]["error"]["code"]) == (0, -32600)


def test_an_array_where_no_batch_is_served_is_refused_at_once() -> None:
    opening = [
        line(request(0, "initialize", INITIALIZE)),
        line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
    _, early = run([*opening, line([request(1, "ping")])])
    assert answers(early)[None]["error"]["code"] == -32600
    assert len(early.backlog) == 2  # the array is not kept


def test_a_refused_message_is_said_in_the_log(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.INFO, logger="codescout"):
        run([Line(b"{not json")])
    assert [record.name for record in caplog.records if "refused a message" in record.getMessage()] == ["codescout"]


def test_a_call_begun_early_runs_in_a_daemon_thread_and_a_cancel_stops_its_answer(tmp_path: Path) -> None:
    opening = [
        line(request(0, "initialize", INITIALIZE)),
        line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
    call = request(3, "tools/call", {"name": "rank_search_results", "arguments": {"hits": HITS}})
    threads: list[tuple[str, bool]] = []
    real_start = threading.Thread.start

    def start(thread: threading.Thread) -> None:
        threads.append((thread.name, thread.daemon))
        real_start(thread)

    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(threading.Thread, "start", start)
        _, early = run([*opening, line(call)])
    assert ("codescout-early-call", True) in threads
    assert answers(early)[3]["result"]["structuredContent"]["counts"] == {"hits": 2, "returned": 2}
    assert early.waiting_requests() == []  # answered here: nothing for the SDK

    # The same call cancelled as soon as it is read (by the same id, of the same type): no answer.
    held = threading.Event()
    cancels = [
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "3"}},  # another id: "3"
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 3}},
    ]
    with pytest.MonkeyPatch.context() as patch:
        original = EarlyCall._run
        patch.setattr(EarlyCall, "_run", lambda self, c: (held.wait(5), original(self, c)))
        stand_items = [*opening, line(call), *map(line, cancels)]
        early = fresh()
        threading.Timer(0.3, held.set).start()
        run(stand_items, stop_after=1, early=early)
    assert 3 not in answers(early)
    assert early.calls[0].done.is_set()


@pytest.mark.parametrize(
    ("call_id", "cancelled_id"),
    [(3, "3"), (3, 3.0), (1, True), (3, 4), ("a", "b")],
    ids=["a string for a number", "a float for an integer", "true for 1", "another number", "another string"],
)
def test_a_cancel_naming_another_id_leaves_the_call_answered(call_id: object, cancelled_id: object) -> None:
    """Only the same id, of the same type, cancels: 3 == 3.0 and 1 == True in Python, not in JSON-RPC."""
    opening = [
        line(request(0, "initialize", INITIALIZE)),
        line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
    call = request(call_id, "tools/call", {"name": "rank_search_results", "arguments": {"hits": HITS}})
    held = threading.Event()
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": cancelled_id}}
    with pytest.MonkeyPatch.context() as patch:
        original = EarlyCall._run
        patch.setattr(EarlyCall, "_run", lambda self, c: (held.wait(5), original(self, c)))
        early = fresh()
        threading.Timer(0.3, held.set).start()
        run([*opening, line(call), line(cancel)], stop_after=1, early=early)
    assert answers(early)[call_id]["result"]["isError"] is False


def test_a_call_is_adopted_only_while_it_runs() -> None:
    opening = [
        line(request(0, "initialize", INITIALIZE)),
        line({"jsonrpc": "2.0", "method": "notifications/initialized"}),
    ]
    call = request(3, "tools/call", {"name": "rank_search_results", "arguments": {"hits": HITS}})
    held = threading.Event()
    told: list[str] = []
    with pytest.MonkeyPatch.context() as patch:
        original = EarlyCall._run
        patch.setattr(EarlyCall, "_run", lambda self, c: (held.wait(5), original(self, c)))
        _, early = run([*opening, line(call)], stop_after=0.2)
        running = early.calls[0]
        assert running.adopt(lambda: told.append("done")) is True
        held.set()
        assert running.done.wait(5)
    time.sleep(0.05)
    assert told == ["done"]
    assert running.adopt(lambda: told.append("again")) is False  # done already
