"""The stdio relay driven in process (`stdio/relay.py`): lines written into a pipe, answers read
from another, the SDK's `Server` behind it as in a session. What a host relies on: its own ids on
its answers, a batch answered as one array, a cancelled call never answered, no more requests
served at once than the bound, and every answer written before input that ended ends the session.
"""

from __future__ import annotations

import json
import os
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from codescout_mcp.answers.door import Session
from codescout_mcp.stdio import relay
from codescout_mcp.stdio.pipes import Reader, Stopper, Writer
from codescout_mcp.tools.toolbox import Offer, RankTool

HITS = {"hits": [{"path": "a.py", "matches": 2, "last_modified_days": 1}]}


class HeldRank(RankTool):
    """The rank tool, in a worker thread, that answers only once the test lets it."""

    def __init__(self) -> None:
        self.go = threading.Event()
        self.started = threading.Event()

    def heavy(self, arguments: Any) -> bool:
        return True  # (never on the event loop, which it would hold)

    def call(self, arguments: Any, *, cached_only: bool = False) -> dict[str, Any]:
        self.started.set()
        assert self.go.wait(30), "the test never let the call answer"
        return super().call(arguments, cached_only=cached_only)


class Wire:
    """A relay serving one session on two pipes, in a thread."""

    def __init__(self, tool: RankTool | None = None) -> None:
        offer = Offer()
        if tool is not None:
            offer.tools[0] = tool
        in_read, self.client_out = os.pipe()
        self.client_in, self.out_write = os.pipe()
        stopper = Stopper()
        self.writer = Writer(self.out_write, stopper)
        reader = Reader(in_read, 1 << 20)
        session = Session(sdk_ready=False)
        session.sdk_loaded()
        sdk = relay.SdkSession(offer)
        self.served = threading.Thread(
            target=sdk.serve,
            args=([], offer.door(), session),
            kwargs={"reader": reader, "writer": self.writer, "stopper": stopper},
            daemon=True,
        )
        self.served.start()
        self._lines = self._read()

    def send(self, *messages: object) -> None:
        for message in messages:
            os.write(self.client_out, json.dumps(message).encode() + b"\n")

    def end_input(self) -> None:
        os.close(self.client_out)

    def answer(self) -> Any:
        return json.loads(next(self._lines))

    def rest(self) -> list[Any]:
        """Every answer still to come, once input has ended and the session is over."""
        self.served.join(30)
        assert not self.served.is_alive(), "the session did not end"
        self.writer.close(5)
        assert self.writer.done.is_set()
        os.close(self.out_write)  # (the process would end here: no more answers can come)
        return [json.loads(line) for line in self._lines]

    def _read(self) -> Iterator[bytes]:
        with os.fdopen(self.client_in, "rb") as answers:
            yield from answers


def initialize(version: str = "2025-06-18") -> list[dict[str, Any]]:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    return [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]


def call(request_id: object) -> dict[str, Any]:
    params = {"name": "rank_search_results", "arguments": HITS}
    return {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": params}


def ping(request_id: object) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": request_id, "method": "ping"}


def test_each_answer_carries_the_id_the_client_chose() -> None:
    wire = Wire()
    wire.send(*initialize())
    assert wire.answer()["id"] == 0
    # The SDK sees ids of the relay's own; "7" and 7 are two requests, and so are their answers.
    wire.send(ping("7"), ping(7), call("7"), {"jsonrpc": "2.0", "id": -1, "method": "tools/list"})
    answers = [wire.answer() for _ in range(4)]
    assert sorted((type(a["id"]).__name__, a["id"]) for a in answers) == [
        ("int", -1),
        ("int", 7),
        ("str", "7"),
        ("str", "7"),
    ]
    assert any("result" in a and "structuredContent" in a["result"] for a in answers)
    wire.end_input()
    assert wire.rest() == []


def test_a_batch_is_answered_in_one_array_member_by_member() -> None:
    wire = Wire()
    wire.send(*initialize("2025-03-26"))
    assert wire.answer()["result"]["protocolVersion"] == "2025-03-26"
    broken = {"jsonrpc": "2.0", "id": 3}  # neither a request nor a response
    wire.send([ping(1), call(2), {"jsonrpc": "2.0", "method": "notifications/progress"}, broken, ping(1)])
    answers = wire.answer()
    assert isinstance(answers, list)
    by_id: dict[object, list[dict[str, Any]]] = {}
    for answer in answers:
        by_id.setdefault(answer["id"], []).append(answer)
    assert sorted(by_id, key=str) == [1, 2, 3]
    assert [a.get("result") for a in by_id[1]][:1] == [{}]  # the first ping; the second is refused
    assert by_id[1][1]["error"]["message"] == "Invalid request: the id is used twice in this batch"
    assert by_id[2][0]["result"]["structuredContent"]["results"][0]["path"] == "a.py"
    assert by_id[3][0]["error"]["code"] == -32600
    wire.end_input()
    assert wire.rest() == []


def holding(*messages: object) -> tuple[Wire, HeldRank]:
    """A session past its handshake whose rank tool holds its answer, sent `messages` (the
    first a call, which has begun by the time this returns)."""
    held = HeldRank()
    wire = Wire(held)
    wire.send(*initialize())
    wire.answer()
    wire.send(*messages)
    assert held.started.wait(30)
    return wire, held


def test_a_cancelled_call_is_never_answered() -> None:
    wire, held = holding(call(5))
    wire.send({"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 5}}, ping(6))
    assert wire.answer()["id"] == 6
    held.go.set()  # the call's thread returns now, to nobody
    wire.end_input()
    assert wire.rest() == []


def test_input_that_ends_waits_for_the_answers_still_due() -> None:
    wire, held = holding(call(9))
    wire.end_input()
    threading.Timer(0.3, held.go.set).start()
    rest = wire.rest()
    assert [a["id"] for a in rest] == [9] and "result" in rest[0]


def test_no_more_requests_are_served_at_once_than_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(relay, "MAX_IN_FLIGHT", 1)
    wire, held = holding(call(1), ping(2))
    threading.Timer(0.3, held.go.set).start()
    # The ping, quick as it is, waits for the call's place: the call is answered first.
    assert [wire.answer()["id"], wire.answer()["id"]] == [1, 2]
    wire.end_input()
    assert wire.rest() == []
