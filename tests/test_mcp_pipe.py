"""`codescout mcp` on a raw pipe: what a careless or hostile client can send it."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from typing import Any

import pytest

from tests.helpers import codescout_exe


def request(rid: int, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return json.dumps(message).encode() + b"\n"


def initialize(rid: int, version: str) -> bytes:
    return request(
        rid,
        "initialize",
        {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "pipe", "version": "0"}},
    )


INITIALIZED = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'
CALL = {"name": "rank_search_results", "arguments": {"hits": [{"path": "a.py", "matches": 3, "last_modified_days": 4}]}}


def converse(data: bytes, *args: str, timeout: float = 30) -> tuple[int, list[dict[str, Any]], str]:
    done = subprocess.run(
        [codescout_exe(), "mcp", *args], input=data, capture_output=True, timeout=timeout, check=False
    )
    replies = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]
    return done.returncode, replies, done.stderr.decode("utf-8", "replace")


@pytest.mark.parametrize("version", ["2025-06-18", "2025-11-25"])
def test_handshake_versions_are_served(version: str) -> None:
    status, replies, _ = converse(initialize(1, version) + INITIALIZED + request(2, "tools/call", CALL))
    assert status == 0
    assert replies[0]["result"]["protocolVersion"] == version
    assert replies[0]["result"]["serverInfo"]["name"] == "codescout"
    assert replies[1]["result"]["structuredContent"]["results"][0]["score"] == 296


def test_garbage_then_a_valid_call_is_still_answered_and_eof_exits_zero() -> None:
    data = (
        initialize(1, "2025-06-18")
        + INITIALIZED
        + b"this is not json\n"
        + b"\xff\xfe\xfd not utf-8 either\n"
        + b"{}\n"
        + b'{"jsonrpc": "2.0", "id": 2}\n'
        + b"[1, 2, 3]\n"
        + request(3, "no/such/method")
        + request(4, "tools/call", {"name": "rank_search_results", "arguments": "hits"})
        + request(5, "tools/call", {"name": "rank_search_results", "arguments": {"hits": "x"}})
        + request(6, "tools/call", {"name": 42})
        + request(7, "tools/call", CALL)
        + request(8, "ping")
    )
    status, replies, stderr = converse(data)
    assert status == 0, stderr
    assert "Traceback" not in stderr
    assert all(reply["jsonrpc"] == "2.0" for reply in replies)
    by_id = {reply.get("id"): reply for reply in replies}
    assert by_id[3]["error"]["code"] == -32601
    assert by_id[4]["error"]["code"] == -32602
    assert by_id[5]["result"]["isError"] is True
    assert by_id[5]["result"]["content"][0]["text"] == 'hits: expected a non-empty array, got "x"'
    assert by_id[6]["error"]["code"] == -32602
    assert by_id[7]["result"]["structuredContent"]["counts"] == {"hits": 1, "returned": 1}
    assert by_id[8]["result"] == {}


def test_every_request_piped_at_once_is_answered_before_exit() -> None:
    calls = b"".join(request(10 + n, "tools/call", CALL) for n in range(40))
    status, replies, _ = converse(initialize(1, "2025-11-25") + INITIALIZED + calls)
    assert status == 0
    assert sorted(reply["id"] for reply in replies) == [1, *range(10, 50)]


def test_log_level_debug_logs_to_stderr_only() -> None:
    status, replies, stderr = converse(
        initialize(1, "2025-06-18") + INITIALIZED + request(2, "ping"), "--log-level", "debug"
    )
    assert status == 0
    assert [reply["id"] for reply in replies] == [1, 2]
    assert "DEBUG" in stderr


@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_signal_stops_the_server_cleanly(signum: int) -> None:
    proc = subprocess.Popen(
        [codescout_exe(), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert proc.stdin is not None
    assert proc.stdout is not None
    proc.stdin.write(initialize(1, "2025-06-18"))
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1
    time.sleep(0.2)
    proc.send_signal(signum)
    _, stderr = proc.communicate(timeout=10)
    assert proc.returncode == 0
    assert b"Traceback" not in stderr
