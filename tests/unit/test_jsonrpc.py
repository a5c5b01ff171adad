"""JSON-RPC 2.0 as both transports read it (`answers/jsonrpc.py`), in process: every rule of a line or a
body, an envelope, a batch, and the bytes of an answer."""

from __future__ import annotations

import json
from typing import Any

import pytest

from codescout_mcp.answers.jsonrpc import (
    BLANK,
    INVALID_REQUEST,
    MAX_BATCH,
    PARSE_ERROR,
    Batch,
    Dropped,
    Message,
    Refusal,
    Refused,
    Unanswerable,
    check_batch,
    check_envelope,
    check_unique_id,
    encode,
    read_json,
    read_message,
    sdk_message,
)
from codescout_mcp.core.fastpath import FAST_BYTES, Decoded


def refusal_of(value: Any, **options: Any) -> tuple[int, str, object]:
    with pytest.raises(Refusal) as caught:
        check_envelope(value, **options)
    return caught.value.code, caught.value.message, caught.value.request_id


def test_a_line_is_read_as_json_parse_reads_it() -> None:
    assert read_json(b'{"a": [1, 2.5, "\\ud800"]}') == {"a": [1, 2.5, "\ud800"]}
    assert read_json(b"\xef\xbb\xbf[1]") == [1]  # a byte-order mark is skipped
    assert read_json(b'{"a": 1}\r', line=True) == {"a": 1}
    assert read_json(b"  \t", line=True) is BLANK
    assert read_json(b"null") is None


@pytest.mark.parametrize(
    ("data", "said", "request_id"),
    [
        (b'{"id": 4, "method": "x", "p": "\xff"}', "Parse error: not valid UTF-8 at byte offset 31", 4),
        (b'{"id": "s", "x": NaN}', "Parse error: invalid JSON: NaN is not a JSON value", None),
        (b'{"id": 1,', "Parse error: invalid JSON at line 1, column 10: Expecting property name enclosed", None),
        (b"", "Parse error: invalid JSON at line 1, column 1: Expecting value", None),
    ],
)
def test_what_is_not_json_is_refused_with_minus_32700(data: bytes, said: str, request_id: object) -> None:
    with pytest.raises(Refusal) as caught:
        read_json(data)
    assert caught.value.code == PARSE_ERROR
    assert caught.value.message.startswith(said)
    assert caught.value.request_id == request_id


def test_requests_notifications_and_responses_are_told_apart() -> None:
    request = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    assert check_envelope(request) is request
    notification = {"jsonrpc": "2.0", "method": "notifications/initialized"}
    assert check_envelope(notification) is notification
    response = {"jsonrpc": "2.0", "id": 1, "result": {}}
    assert check_envelope(response) is response
    assert check_envelope({"jsonrpc": "2.0", "id": None, "error": {"code": 1}})["id"] is None


@pytest.mark.parametrize(
    ("value", "message", "request_id"),
    [
        ([], "Invalid request: batches (JSON arrays) are served only at protocol 2025-03-26", None),
        ("x", "Invalid request: a JSON-RPC message is a JSON object", None),
        ({"id": 3, "method": "ping"}, 'Invalid request: "jsonrpc" must be "2.0"', 3),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, "Invalid request: an id is a string or an integer", None),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, "Invalid request: an id is a string or an integer", None),
        ({"jsonrpc": "2.0", "id": "a"}, "Invalid request: neither a request, a notification nor a response", "a"),
        ({"jsonrpc": "2.0", "id": 2, "method": 5}, 'Invalid request: "method" must be a string', 2),
        ({"jsonrpc": "2.0", "id": 2, "method": "x", "params": []}, 'Invalid request: "params" must be an object', 2),
    ],
)
def test_what_is_not_json_rpc_is_refused_with_minus_32600_and_its_id(
    value: Any, message: str, request_id: object
) -> None:
    assert refusal_of(value) == (INVALID_REQUEST, message, request_id)


@pytest.mark.parametrize(
    "value",
    [
        {"id": 1, "result": {}},  # no jsonrpc
        {"jsonrpc": "2.0", "result": {}},  # no id
        {"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}},  # both
    ],
)
def test_a_malformed_response_is_never_answered(value: dict[str, Any]) -> None:
    with pytest.raises(Unanswerable):
        check_envelope(value)


def test_initialize_is_served_at_a_version_the_server_has_and_never_in_a_batch() -> None:
    params = {"protocolVersion": "1999-01-01", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    checked = check_envelope({"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": params})
    assert checked["params"]["protocolVersion"] == "2025-11-25"
    kept = check_envelope(
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {**params, "protocolVersion": "2024-11-05"}}
    )
    assert kept["params"]["protocolVersion"] == "2024-11-05"
    assert refusal_of({"jsonrpc": "2.0", "id": 9, "method": "initialize", "params": params}, in_batch=True) == (
        INVALID_REQUEST,
        "Invalid request: initialize may not be part of a batch",
        9,
    )


def test_batches_are_bounded_and_their_ids_unique() -> None:
    with pytest.raises(Refusal, match="an empty batch"):
        check_batch([])
    check_batch([{}] * MAX_BATCH)
    with pytest.raises(Refusal, match=f"a batch of {MAX_BATCH + 1} messages; at most {MAX_BATCH}"):
        check_batch([{}] * (MAX_BATCH + 1))
    seen: set[tuple[type, int | str]] = set()
    check_unique_id(1, seen)
    check_unique_id("1", seen)  # another id: a string is not an integer
    with pytest.raises(Refusal) as caught:
        check_unique_id(1, seen)
    assert (caught.value.message, caught.value.request_id) == ("Invalid request: the id is used twice in this batch", 1)


def test_an_answer_is_one_line_of_utf8_with_lone_surrogates_escaped() -> None:
    line = encode({"jsonrpc": "2.0", "id": "\ud800", "result": {"path": "é"}})
    assert line.endswith(b"\n") and line.count(b"\n") == 1
    assert line == b'{"jsonrpc":"2.0","id":"\\ud800","result":{"path":"\xc3\xa9"}}\n'
    assert json.loads(line)["id"] == "\ud800"


def test_a_message_the_sdks_models_refuse_is_refused_in_its_words() -> None:
    assert type(sdk_message({"jsonrpc": "2.0", "id": 1, "method": "ping"})).__name__ == "JSONRPCRequest"
    dropped = sdk_message({"jsonrpc": "2.0", "id": 1, "result": 5})  # a result that is not an object
    assert isinstance(dropped, Dropped) and dropped.reason == "a response that is not a JSON-RPC 2.0 response"
    refused = sdk_message({"jsonrpc": "2.0", "id": 7, "method": 5})  # (what check_envelope would refuse first)
    assert isinstance(refused, Refused)
    assert (refused.refusal.code, refused.refusal.request_id) == (INVALID_REQUEST, 7)


def test_a_message_is_read_once_into_what_a_transport_does_with_it() -> None:
    ping = {"jsonrpc": "2.0", "id": 1, "method": "ping"}
    read = read_message(json.dumps(ping).encode())
    assert isinstance(read, Message) and read.envelope == ping
    assert isinstance(read_message(ping), Message)  # a value already parsed (a batch member, a kept message)
    blank = read_message(b" \r", line=True)
    assert isinstance(blank, Dropped) and blank.reason == "a blank line"
    not_json = read_message(b'{"id": 4,')
    assert isinstance(not_json, Refused) and not_json.refusal.code == PARSE_ERROR
    response = read_message(b'{"jsonrpc": "2.0", "id": 1, "result": 1, "error": {}}')
    assert isinstance(response, Dropped)  # a response is never answered, not even with an error
    # An array is a batch only where the version serves them, and then never an empty one.
    array = json.dumps([ping]).encode()
    batch = read_message(array, batches=True)
    assert isinstance(batch, Batch) and batch.members == [ping]
    refused = read_message(array)
    assert isinstance(refused, Refused) and "2025-03-26" in refused.refusal.message
    empty = read_message(b"[]", batches=True)
    assert isinstance(empty, Refused) and empty.refusal.message == "Invalid request: an empty batch"
    # A batch member: no initialize, no batch inside it, and no id twice.
    seen: set[tuple[type, int | str]] = set()
    assert isinstance(read_message(ping, seen=seen), Message)
    again = read_message(ping, seen=seen)
    assert isinstance(again, Refused) and again.refusal.request_id == 1
    assert isinstance(read_message({**ping, "id": "1"}, seen=seen), Message)  # "1" is not 1
    initialize = read_message({"jsonrpc": "2.0", "id": 2, "method": "initialize", "params": {}}, seen=seen)
    assert isinstance(initialize, Refused) and "batch" in initialize.refusal.message
    assert isinstance(read_message([ping], seen=seen), Refused)


def test_a_large_call_of_the_rank_tool_is_read_by_the_fast_path_and_given_to_the_sdk_as_json() -> None:
    hits = [{"path": f"p/{n}", "matches": 1 + n % 9, "last_modified_days": n % 300} for n in range(40_000)]
    params: dict[str, Any] = {"name": "rank_search_results", "arguments": {"hits": hits}}
    line = json.dumps({"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": params}).encode()
    assert len(line) >= FAST_BYTES
    value = read_json(line + b"\r", line=True)
    assert isinstance(value, dict) and isinstance(value["params"]["arguments"], Decoded)
    # The SDK reads JSON values: the same message as the precise path reads it (limit at its default).
    model = sdk_message(check_envelope(value))
    assert not isinstance(model, (Refused, Dropped))
    sdk = model.model_dump(by_alias=True, exclude_unset=True)
    assert sdk["params"]["arguments"] == {**params["arguments"], "limit": 10}
    # Whatever the fast path does not read, the precise path reads: here, an integral float.
    floats = line.replace(b'"matches": 1,', b'"matches": 1.0,', 1)
    value = read_json(floats, line=True)
    assert isinstance(value, dict) and value["params"]["arguments"]["hits"][0]["matches"] == 1.0
    with pytest.raises(Refusal, match="Parse error"):
        read_json(line[:-1])
