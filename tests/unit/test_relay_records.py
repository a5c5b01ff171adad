"""The stdio relay's records of a batch (`stdio/records.py`), in process: one array, in the
batch's order, sent once, after its last member settles, and held to its byte bound."""

from __future__ import annotations

import json
from typing import Any

import pytest

from codescout_mcp.answers.jsonrpc import INVALID_REQUEST, Refusal
from codescout_mcp.stdio import records
from codescout_mcp.stdio.records import BatchAnswers


def answer(rid: int, text: str = "ok") -> dict[str, Any]:
    return {"jsonrpc": "2.0", "id": rid, "result": {"text": text}}


def test_answers_go_out_in_the_batchs_order_once_the_last_member_settles() -> None:
    batch = BatchAnswers()
    batch.expect(10)
    batch.refused(Refusal(INVALID_REQUEST, "Invalid Request", None))
    batch.expect(11)
    batch.expect(12)
    batch.answer(12, answer(3))
    batch.answer(10, answer(1))
    assert batch.line() is None  # one member still pending
    batch.answer(11, None)  # settled without an answer (cancelled)
    line = batch.line()
    assert line is not None
    assert [reply.get("id") for reply in json.loads(line)] == [1, None, 3]
    assert batch.line() is None  # sent once


def test_a_batch_of_notifications_only_sends_nothing() -> None:
    batch = BatchAnswers()
    assert batch.line() is None
    batch.expect(1)
    batch.answer(1, None)
    assert batch.line() is None


def test_an_answer_for_no_member_changes_nothing() -> None:
    batch = BatchAnswers()
    batch.expect(1)
    batch.answer(2, answer(2))  # not one of this batch's
    assert batch.line() is None and batch.waiting == 1
    batch.answer(1, answer(1))
    batch.answer(1, answer(9))  # twice: the first stands
    line = batch.line()
    assert line is not None and json.loads(line) == [answer(1)]


def test_answers_past_the_byte_bound_are_errors_saying_so(monkeypatch: pytest.MonkeyPatch) -> None:
    first, second = answer(1, "x" * 100), answer(2, "y" * 100)
    monkeypatch.setattr(records, "MAX_BATCH_ANSWER_BYTES", len(json.dumps(first, separators=(",", ":"))) + 10)
    batch = BatchAnswers()
    batch.expect(1)
    batch.expect(2)
    batch.answer(1, first)
    batch.answer(2, second)
    line = batch.line()
    assert line is not None
    sent = json.loads(line)
    assert sent[0] == first
    assert sent[1]["id"] == 2 and "smaller batches" in sent[1]["error"]["message"]
