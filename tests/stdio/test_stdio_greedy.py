"""The stdio server against careless and greedy clients: every request answered, memory bounded.

Lone surrogates echoed back, ids reused across a batch and a line, responses sent to the
server, batches of a million members, a client that never reads its answers, a call that
outlasts the old drain limit, and the stop: quiet on stderr.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import codescout_exe
from tests.platforms import FAKE_GIT, PROC, SIGNALS, linux_only, posix_only

CALL = {"name": "rank_search_results", "arguments": {"hits": [{"path": "a.py", "matches": 3, "last_modified_days": 4}]}}


def line(message: object) -> bytes:
    return json.dumps(message).encode() + b"\n"


def request(rid: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return line(message)


def initialize(version: str = "2025-11-25") -> bytes:
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "greedy", "version": "0"}}
    return request(1, "initialize", params) + line({"jsonrpc": "2.0", "method": "notifications/initialized"})


def converse(data: bytes, *args: str, timeout: float = 120) -> tuple[int, list[Any], str]:
    done = subprocess.run(
        [codescout_exe(), "mcp", *args], input=data, capture_output=True, timeout=timeout, check=False
    )
    replies = [json.loads(raw) for raw in done.stdout.splitlines()]
    return done.returncode, replies, done.stderr.decode("utf-8", "replace")


def peak_rss_mib(pid: int) -> float:
    """The process's peak resident memory so far (Linux's VmHWM)."""
    for row in Path(f"/proc/{pid}/status").read_text(encoding="ascii").splitlines():
        if row.startswith("VmHWM:"):
            return int(row.split()[1]) / 1024
    raise AssertionError("no VmHWM")


# --- what the server echoes back ------------------------------------------------------------------


def test_lone_surrogates_echoed_back_are_written_as_escapes_and_everything_is_answered() -> None:
    raw_lines = [
        b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}',
        b'{"jsonrpc": "2.0", "id": 5, "method": "\\udfffx"}',
        b'{"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "rank_search_results", '
        b'"arguments": {"hits": [{"path": "a\\ud800b", "matches": 1, "last_modified_days": 0, "owner": "\\udc00"}]}}}',
        b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "\\ud834", "arguments": {}}}',
    ]
    data = initialize() + b"".join(raw + b"\n" for raw in raw_lines) + request(9, "ping")
    done = subprocess.run([codescout_exe(), "mcp"], input=data, capture_output=True, timeout=60, check=False)
    assert (done.returncode, done.stderr) == (0, b"")
    replies = {json.loads(raw)["id"]: json.loads(raw) for raw in done.stdout.splitlines()}
    assert set(replies) == {1, "\ud800", 5, 6, 7, 9}
    assert b'"id":"\\ud800"' in done.stdout  # the escape it came as: UTF-8 cannot hold a lone surrogate
    assert replies["\ud800"]["result"] == {} and replies[9]["result"] == {}
    assert replies[5]["error"]["code"] == -32601
    entry = replies[6]["result"]["structuredContent"]["results"][0]
    assert (entry["path"], entry["owner"]) == ("a\ud800b", "\udc00")
    assert replies[7]["error"]["code"] == -32602


def test_an_id_used_in_a_batch_and_on_a_line_keeps_each_answer_with_its_request() -> None:
    big = {
        "name": "rank_search_results",
        "arguments": {
            "hits": [{"path": f"p{i}", "matches": 1 + i % 7, "last_modified_days": i % 50} for i in range(100_000)],
            "limit": 1,
        },
    }
    data = initialize("2025-03-26")
    data += line([json.loads(request(7, "tools/call", big)), json.loads(request(8, "ping"))])
    data += request(7, "ping") + request(8, "tools/call", CALL)
    status, replies, stderr = converse(data)
    assert status == 0, stderr
    arrays = [reply for reply in replies if isinstance(reply, list)]
    singles = {reply["id"]: reply for reply in replies if isinstance(reply, dict) and reply["id"] != 1}
    assert len(arrays) == 1 and len(singles) == 2
    batch = {answer["id"]: answer for answer in arrays[0]}
    assert batch[7]["result"]["structuredContent"]["counts"] == {"hits": 100_000, "returned": 1}
    assert batch[8]["result"] == {}
    assert singles[7]["result"] == {}
    assert singles[8]["result"]["structuredContent"]["results"][0]["score"] == 296  # fmt: skip


@pytest.mark.parametrize(
    "response",
    [
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "you sent me something odd"}},
        {"jsonrpc": "2.0", "id": 77, "error": {"code": -1, "message": "no"}},
        {"jsonrpc": "2.0", "id": 78, "result": {}},
        {"jsonrpc": "2.0", "id": 79, "result": {}, "error": {"code": 1, "message": "both"}},
        {"jsonrpc": "1.0", "id": 80, "result": {}},
    ],
)
def test_a_response_sent_to_the_server_is_never_answered(response: dict[str, Any]) -> None:
    status, replies, stderr = converse(initialize() + line(response) + request(9, "ping"))
    assert status == 0, stderr
    assert [reply["id"] for reply in replies] == [1, 9]


# --- greedy batches -------------------------------------------------------------------------------------


@linux_only(PROC)
def test_a_batch_of_a_million_members_is_one_error_in_little_memory() -> None:
    server = subprocess.Popen([codescout_exe(), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE)
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(
            initialize("2025-03-26") + b"[" + b",".join([b"1"] * 1_000_000) + b"]\n" + request(9, "ping")
        )
        server.stdin.flush()
        replies = {reply["id"]: reply for reply in (json.loads(server.stdout.readline()) for _ in range(3))}
        assert set(replies) == {1, None, 9}  # answers to different lines come in any order
        assert replies[None]["error"] == {
            "code": -32600,
            "message": "Invalid request: a batch of 1000000 messages; at most 1000 are served at once",
        }
        assert peak_rss_mib(server.pid) < 400
    finally:
        server.kill()
        server.wait()


def test_a_batch_of_the_most_members_served_is_answered_whole() -> None:
    members = [json.loads(request(n, "tools/list")) for n in range(1000)]
    status, replies, stderr = converse(initialize("2025-03-26") + line(members))
    assert status == 0, stderr
    assert [answer["id"] for answer in replies[1]] == list(range(1000))
    assert all(answer["result"]["tools"][0]["name"] == "rank_search_results" for answer in replies[1])


# --- a client that never reads ----------------------------------------------------------------------------


def cpu_ticks(pid: int) -> int:
    """The CPU time a process has used, user and system, in clock ticks (Linux's /proc)."""
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


@linux_only(PROC)
def test_a_client_that_never_reads_its_answers_gets_no_more_of_them_made() -> None:
    server = subprocess.Popen(
        [codescout_exe(), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL
    )
    assert server.stdin is not None
    sent = [0]

    def flood() -> None:
        assert server.stdin is not None
        try:
            server.stdin.write(initialize())
            for n in range(1_000_000):
                server.stdin.write(request(n + 10, "tools/list"))
                server.stdin.flush()
                sent[0] = n
        except (BrokenPipeError, ValueError, OSError):
            pass

    writer = threading.Thread(target=flood, daemon=True)
    writer.start()
    try:
        time.sleep(8)
        first = sent[0]
        ticks = cpu_ticks(server.pid)
        time.sleep(4)
        assert sent[0] == first, "the server kept reading although no answer was read"
        assert first < 5_000
        assert peak_rss_mib(server.pid) < 400
        # Waiting for the client costs nothing: the session sleeps until the writer says there is
        # room (a poll every 5 ms would spend tens of ticks in these 4 s).
        assert cpu_ticks(server.pid) - ticks <= 4
    finally:
        server.kill()
        server.wait()
        writer.join(10)
        # What the writer still buffered can never be sent: close now, not in a finalizer later.
        with contextlib.suppress(OSError):
            server.stdin.close()


# --- how long answers are waited for after stdin closes ------------------------------------------------------


@posix_only(FAKE_GIT)
def test_after_stdin_closes_answers_are_waited_for_as_long_as_a_call_may_take(tmp_path: Path) -> None:
    """Both limits are one setting: a call that runs into the time allowed is an error, answered."""
    from codescout_mcp.answers.protocol import CALL_SECONDS
    from codescout_mcp.stdio.pipes import DRAIN_SECONDS

    assert DRAIN_SECONDS > CALL_SECONDS
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "git").write_text("#!/bin/sh\nexec sleep 30\n", encoding="utf-8")
    (shim / "git").chmod(0o755)
    folder = tmp_path / "w"
    folder.mkdir()
    (folder / ".git").mkdir()  # a repository, as far as a look at the folder can tell
    (folder / "a.txt").write_text("x\n", encoding="utf-8")
    wrapper = (
        "import sys\n"
        "import codescout_mcp.answers.protocol as protocol\n"
        "protocol.CALL_SECONDS = 3.0\n"  # both limits come from it: the tool's and the drain's
        "from codescout_mcp.cli.main import mcp_main\n"
        "sys.exit(mcp_main(sys.argv[1:]))\n"
    )
    call = {"name": "rank_workspace_hits", "arguments": {"hits": [{"path": "a.txt", "matches": 1}]}}
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-c", wrapper, "--workspace", str(folder)],
        input=initialize() + request(2, "tools/call", call),
        capture_output=True,
        env={**os.environ, "PATH": f"{shim}{os.pathsep}{os.environ['PATH']}"},
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    replies = {json.loads(raw)["id"]: json.loads(raw) for raw in done.stdout.splitlines()}
    assert replies[2]["result"]["isError"] is True
    assert "took longer than 3 s" in replies[2]["result"]["content"][0]["text"]
    assert time.monotonic() - started < 30


# --- stopping quietly ------------------------------------------------------------------------------------------


@posix_only(SIGNALS)
@pytest.mark.parametrize("attempt", range(5))
def test_a_stop_in_the_middle_of_things_says_nothing(attempt: int) -> None:
    server = subprocess.Popen(
        [codescout_exe(), "mcp"], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert server.stdin is not None and server.stdout is not None and server.stderr is not None
    big = {"name": "rank_search_results", "arguments": {"hits": [
        {"path": f"p{i}", "matches": 1, "last_modified_days": 0} for i in range(100_000)]}}  # fmt: skip
    server.stdin.write(initialize() + request(2, "tools/call", big) + request(3, "tools/list"))
    server.stdin.flush()
    server.stdout.readline()
    time.sleep(0.2 * attempt)
    if attempt % 2:
        server.stdout.close()  # the client goes away
        server.stdin.write(request(4, "ping") * 100)
        server.stdin.flush()
    else:
        server.send_signal(signal.SIGTERM)
    assert server.wait(timeout=10) == 0
    assert server.stderr.read() == b""
