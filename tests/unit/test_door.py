"""Where the door runs a call (`answers/door.py`: `Call.settled`, `in_worker`), in process.

Who answers each message is held to the SDK's own answers in tests/stdio/test_direct_calls.py
and tests/unit/test_early_answers.py; here, the one decision the answers do not show: a call
is run on the event loop only when it is light and its facts are known, and otherwise in a
daemon thread of its own, so that the loop keeps reading and answering while it runs. And a
call's stop: an awaiting task that is cancelled cancels the call's work and returns only once
it is gone; a cancelled call, or one whose batch's deadline passed, is a tool error.
"""

from __future__ import annotations

import threading
import time
from typing import Any

import anyio
import pytest

from codescout_mcp.answers import words
from codescout_mcp.answers.door import Call, in_worker
from codescout_mcp.system.processes import Cancelled, current_stop


class Recorder:
    """A tool that says where each of its runs took place, and whether it may only use what is known."""

    name = "recorder"

    def __init__(self, *, heavy: bool, known: bool) -> None:
        self.definition: dict[str, Any] = {}
        self._heavy = heavy
        self.known = known
        self.runs: list[tuple[str, bool, bool]] = []  # (thread name, daemon, cached_only)

    def heavy(self, arguments: dict[str, Any]) -> bool:
        return self._heavy

    def call(self, arguments: dict[str, Any], *, cached_only: bool = False) -> dict[str, Any] | None:
        thread = threading.current_thread()
        self.runs.append((thread.name, thread.daemon, cached_only))
        if cached_only and not self.known:
            return None
        return {"content": [], "isError": False}


def answered(tool: Recorder) -> tuple[dict[str, Any], str]:
    """The call's answer, and the name of the thread the event loop ran in."""

    async def run() -> tuple[dict[str, Any], str]:
        return await Call(tool, 7, {}, modern=False).answer(), threading.current_thread().name

    return anyio.run(run)


def test_a_light_call_whose_facts_are_known_runs_on_the_event_loop() -> None:
    tool = Recorder(heavy=False, known=True)
    answer, loop = answered(tool)
    assert answer == {"jsonrpc": "2.0", "id": 7, "result": {"content": [], "isError": False}}
    assert tool.runs == [(loop, threading.current_thread().daemon, True)]


def test_a_light_call_that_needs_work_first_is_run_again_in_a_daemon_thread() -> None:
    tool = Recorder(heavy=False, known=False)
    answer, loop = answered(tool)
    assert answer["result"] == {"content": [], "isError": False}
    assert tool.runs == [(loop, threading.current_thread().daemon, True), ("codescout-call", True, False)]


def test_a_heavy_call_goes_to_a_daemon_thread_at_once() -> None:
    tool = Recorder(heavy=True, known=True)
    answer, _ = answered(tool)
    assert answer["result"] == {"content": [], "isError": False}
    assert tool.runs == [("codescout-call", True, False)]


def test_what_a_worker_raises_is_raised_where_it_is_awaited() -> None:
    def fails() -> None:
        raise LookupError("inside the worker")

    async def run() -> None:
        await in_worker(fails)

    with pytest.raises(LookupError, match="inside the worker"):
        anyio.run(run)

    async def value() -> int:
        return await in_worker(lambda a, b: a * b, 6, 7)

    assert anyio.run(value) == 42


def test_the_sdks_handler_gets_the_tool_result_worked_out_in_full() -> None:
    """`server.py` asks `settled(call.result)`: a result, never None, however much work it needs."""
    tool = Recorder(heavy=False, known=False)

    async def run() -> dict[str, Any]:
        call = Call(tool, 7, {}, modern=False)
        return await call.settled(call.result)

    assert anyio.run(run) == {"content": [], "isError": False}
    assert [cached_only for _, _, cached_only in tool.runs] == [True, False]


class Waiter:
    """A heavy tool that works until its call is cancelled (as a git ended by the cancel returns)."""

    name = "waiter"

    def __init__(self) -> None:
        self.definition: dict[str, Any] = {}
        self.started = threading.Event()
        self.ended = threading.Event()

    def heavy(self, arguments: dict[str, Any]) -> bool:
        return True

    def call(self, arguments: dict[str, Any], *, cached_only: bool = False) -> dict[str, Any] | None:
        stop = current_stop()
        assert stop is not None
        self.started.set()
        try:
            if stop.wait(30):
                time.sleep(0.3)  # the last of its work, after the cancel
                stop.check()
            return {"content": [], "isError": False}
        finally:
            self.ended.set()


def test_an_awaiting_task_cancelled_cancels_the_call_and_waits_for_its_work_to_end() -> None:
    """The client left, or the server stops: the call's stop is cancelled, and the task is let
    go only once the call's thread has returned (the slot held for it is held until then)."""
    tool = Waiter()
    call = Call(tool, 7, {}, modern=False)

    async def run() -> bool:
        with anyio.move_on_after(30) as scope:
            async with anyio.create_task_group() as tasks:
                tasks.start_soon(call.answer)
                await anyio.to_thread.run_sync(tool.started.wait)
                tasks.cancel_scope.cancel()
        assert not scope.cancelled_caught
        return tool.ended.is_set()

    assert anyio.run(run) is True
    assert call.stop.cancelled


def test_a_cancelled_call_is_a_tool_error_and_a_cancelled_one_not_yet_run_is_never_run() -> None:
    tool = Waiter()
    call = Call(tool, 7, {}, modern=False)
    threading.Timer(0.2, call.cancel).start()
    assert call.result() == words.tool_error(words.CANCELLED)
    assert tool.ended.is_set()
    again = Waiter()
    cancelled = Call(again, 8, {}, modern=False)
    cancelled.cancel()
    assert cancelled.run() == words.answer(8, words.tool_error(words.CANCELLED))
    assert not again.started.is_set()


def test_a_batch_member_that_would_start_after_the_batchs_deadline_is_not_run() -> None:
    tool = Recorder(heavy=False, known=True)
    late = Call(tool, 7, {}, modern=False, deadline=time.monotonic() - 1)
    assert late.run() == words.answer(7, words.tool_error(words.BATCH_OUT_OF_TIME))
    assert tool.runs == []
    in_time = Call(tool, 8, {}, modern=False, deadline=time.monotonic() + 60)
    assert in_time.run() == words.answer(8, {"content": [], "isError": False})


def test_a_tool_sees_the_stop_of_the_call_it_works_for() -> None:
    seen: list[object] = []

    class Looker(Recorder):
        def call(self, arguments: dict[str, Any], *, cached_only: bool = False) -> dict[str, Any] | None:
            seen.append(current_stop())
            raise Cancelled  # as a child ended by a cancel makes it

    call = Call(Looker(heavy=True, known=True), 7, {}, modern=False)
    assert call.result() == words.tool_error(words.CANCELLED)
    assert seen == [call.stop] and current_stop() is None
