"""`codescout mcp` on a raw pipe: what a careless or hostile client can send it, and signals."""

from __future__ import annotations

import contextlib
import json
import os
import select
import signal
import subprocess
import threading
import time
from typing import Any

import pytest

from codescout_mcp.answers.protocol import INSTRUCTIONS
from tests.helpers import busy_machine, codescout_exe, server_info_on_the_wire
from tests.platforms import PROC, SHELL, SIGNALS, linux_only, posix_only

CALL = {"name": "rank_search_results", "arguments": {"hits": [{"path": "a.py", "matches": 3, "last_modified_days": 4}]}}
INITIALIZED = b'{"jsonrpc": "2.0", "method": "notifications/initialized"}\n'


def request(rid: Any, method: str, params: dict[str, Any] | None = None) -> bytes:
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


def big_call(rid: int, size: int = 300_000) -> bytes:
    hits = [{"path": f"p/{i}", "matches": 1 + i % 30, "last_modified_days": i % 400} for i in range(size)]
    return request(rid, "tools/call", {"name": "rank_search_results", "arguments": {"hits": hits, "limit": 2}})


def converse(data: bytes, *args: str, timeout: float = 60) -> tuple[int, list[Any], str]:
    done = subprocess.run(
        [codescout_exe(), "mcp", *args], input=data, capture_output=True, timeout=timeout, check=False
    )
    replies = [json.loads(line) for line in done.stdout.decode("utf-8").splitlines()]
    return done.returncode, replies, done.stderr.decode("utf-8", "replace")


@pytest.mark.parametrize(
    ("asked", "served"),
    [
        ("2024-11-05", "2024-11-05"),
        ("2025-03-26", "2025-03-26"),
        ("2025-06-18", "2025-06-18"),
        ("2025-11-25", "2025-11-25"),
        ("2099-01-01", "2025-11-25"),
        ("2026-07-28", "2025-11-25"),  # not a handshake version
    ],
)
def test_handshake_serves_exactly_the_listed_versions(asked: str, served: str) -> None:
    status, replies, _ = converse(initialize(1, asked) + INITIALIZED + request(2, "tools/call", CALL))
    assert status == 0
    assert replies[0]["result"]["protocolVersion"] == served
    assert replies[0]["result"]["serverInfo"] == server_info_on_the_wire()
    result = replies[1]["result"]
    assert json.loads(result["content"][0]["text"])["results"][0]["score"] == 296
    if served != "2024-11-05":
        assert result["structuredContent"]["results"][0]["score"] == 296


def test_discover_names_every_served_version_newest_first() -> None:
    """The handshake versions too: the server still answers `initialize` at each of them."""
    meta = {"io.modelcontextprotocol/protocolVersion": "2026-07-28", "io.modelcontextprotocol/clientCapabilities": {}}
    status, replies, _ = converse(request(1, "server/discover", {"_meta": meta}))
    assert status == 0
    assert replies == [
        {
            "jsonrpc": "2.0",
            "id": 1,
            "result": {
                "cacheScope": "private",
                "capabilities": {"tools": {"listChanged": False}},
                "instructions": INSTRUCTIONS,
                "resultType": "complete",
                "supportedVersions": ["2026-07-28", "2025-11-25", "2025-06-18", "2025-03-26", "2024-11-05"],
                "ttlMs": 0,
                "_meta": {"io.modelcontextprotocol/serverInfo": server_info_on_the_wire()},
            },
        }
    ]


def batch_line(*members: Any) -> bytes:
    return json.dumps(list(members)).encode() + b"\n"


def test_a_batch_at_2025_03_26_is_served_and_answered_in_one_array() -> None:
    notification = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {}}
    data = initialize(1, "2025-03-26") + INITIALIZED
    data += batch_line(
        json.loads(request(2, "tools/call", CALL)),
        json.loads(request(3, "ping")),
        notification,
        5,
        json.loads(request(3, "ping")),
        json.loads(initialize(4, "2025-03-26")),
    )
    data += batch_line(notification) + b"[]\n" + request(9, "ping")
    status, replies, _ = converse(data)
    assert status == 0
    assert replies[0]["id"] == 1 and len(replies) == 4
    # Answers to different lines may come in any order (the batch's call takes longer than
    # the lines after it): each is found by its shape.
    arrays = [reply for reply in replies if isinstance(reply, list)]
    assert len(arrays) == 1
    batch: list[dict[str, Any]] = arrays[0]
    assert [(a["id"], a.get("error", {}).get("code")) for a in batch] == [
        (2, None),
        (3, None),
        (None, -32600),
        (3, -32600),
        (4, -32600),
    ]
    assert batch[0]["result"]["structuredContent"]["counts"] == {"hits": 1, "returned": 1}
    assert batch[3]["error"]["message"] == "Invalid request: the id is used twice in this batch"
    assert batch[4]["error"]["message"] == "Invalid request: initialize may not be part of a batch"
    # A batch of notifications only gets no answer; an empty batch is one error.
    singles = [reply for reply in replies[1:] if isinstance(reply, dict)]
    assert sorted(singles, key=lambda reply: reply["id"] is None) == [
        {"jsonrpc": "2.0", "id": 9, "result": {}},
        {"jsonrpc": "2.0", "id": None, "error": {"code": -32600, "message": "Invalid request: an empty batch"}},
    ]


@pytest.mark.parametrize("version", ["2024-11-05", "2025-06-18", "2025-11-25"])
def test_a_batch_at_any_other_version_is_an_invalid_request(version: str) -> None:
    status, replies, _ = converse(initialize(1, version) + INITIALIZED + batch_line(json.loads(request(2, "ping"))))
    assert status == 0
    assert replies[1]["error"] == {
        "code": -32600,
        "message": "Invalid request: batches (JSON arrays) are served only at protocol 2025-03-26",
    }


def test_every_line_that_is_not_a_message_gets_an_error_answer() -> None:
    lines = [
        (b"this is not json", None, -32700),
        (b"{", None, -32700),
        (b"null", None, -32600),
        (b"5", None, -32600),
        (b'"text"', None, -32600),
        (b"[1, 2, 3]", None, -32600),
        (b"[]", None, -32600),
        (b"{}", None, -32600),
        (b'{"jsonrpc": "2.0", "id": 2.5, "method": "ping"}', None, -32600),
        (b'{"jsonrpc": "2.0", "id": null, "method": "ping"}', None, -32600),
        (b'{"jsonrpc": "2.0", "id": true, "method": "ping"}', None, -32600),
        (b'{"jsonrpc": "1.0", "id": 3, "method": "ping"}', 3, -32600),
        (b'{"id": 4, "method": "ping"}', 4, -32600),
        (b'{"jsonrpc": "2.0", "id": 5, "method": "ping", "params": [1]}', 5, -32600),
        (b'{"jsonrpc": "2.0", "id": "s", "method": 7}', "s", -32600),
        (b'{"jsonrpc": "2.0", "id": 6}', 6, -32600),
        (b'{"jsonrpc": "2.0", "method": "notifications/x", "params": "p"}', None, -32600),
    ]
    data = initialize(1, "2025-11-25") + INITIALIZED
    data += b"".join(line + b"\n" for line, _, _ in lines) + request(99, "ping")
    status, replies, stderr = converse(data)
    assert status == 0, stderr
    assert "Traceback" not in stderr
    errors = [(r["id"], r["error"]["code"]) for r in replies[1:-1]]
    assert errors == [(rid, code) for _, rid, code in lines]
    assert all(r["jsonrpc"] == "2.0" for r in replies)
    assert replies[-1] == {"jsonrpc": "2.0", "id": 99, "result": {}}


def test_invalid_utf8_is_refused_naming_the_byte_offset_never_replaced() -> None:
    bad_request = b'{"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": {"name": "rank_search_results", '
    bad_request += b'"arguments": {"hits": [{"path": "caf\xe9", "matches": 1, "last_modified_days": 0}]}}}\n'
    status, replies, _ = converse(initialize(1, "2025-11-25") + INITIALIZED + b"\xff\xfe{}\n" + bad_request)
    assert status == 0
    assert replies[1] == {
        "jsonrpc": "2.0",
        "id": None,
        "error": {"code": -32700, "message": "Parse error: not valid UTF-8 at byte offset 0"},
    }
    offset = bad_request.index(b"\xe9")
    assert replies[2] == {
        "jsonrpc": "2.0",
        "id": 7,
        "error": {"code": -32700, "message": f"Parse error: not valid UTF-8 at byte offset {offset}"},
    }


def test_an_oversized_message_is_answered_and_the_server_keeps_serving() -> None:
    padding = "x" * 5000
    oversized = json.dumps({"jsonrpc": "2.0", "method": "tools/call", "params": {"pad": padding}, "id": "big"})
    nested = json.dumps({"jsonrpc": "2.0", "params": {"id": 5, "pad": [padding]}, "id": 8, "method": "ping"})
    data = initialize(1, "2025-11-25") + INITIALIZED + oversized.encode() + b"\n" + nested.encode() + b"\n"
    data += b"[" + b" " * 6000 + b"]\n" + request(9, "ping")
    status, replies, _ = converse(data, "--max-message-bytes", "4096")
    assert status == 0
    assert [(r["id"], r.get("error", {}).get("code")) for r in replies[1:]] == [
        ("big", -32600),
        (8, -32600),
        (None, -32600),
        (9, None),
    ]
    assert replies[1]["error"]["message"] == (
        f"Invalid request: the message has {len(oversized)} bytes, more than the limit of 4096 (--max-message-bytes)"
    )


@linux_only(PROC)
def test_an_endless_line_is_not_held_in_memory() -> None:
    proc = subprocess.Popen(
        [codescout_exe(), "mcp", "--max-message-bytes", "1000000"],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    chunk = b"x" * (1 << 20)
    proc.stdin.write(b'{"jsonrpc": "2.0", "id": 3, "method": "ping", "pad": "')
    for _ in range(200):  # 200 MiB on one line
        proc.stdin.write(chunk)
    peak = _rss_kib(proc.pid)
    proc.stdin.write(b'"}\n' + request(4, "ping"))
    proc.stdin.close()
    replies = [json.loads(line) for line in proc.stdout.read().splitlines()]
    proc.wait(timeout=30)
    assert [(r["id"], "error" in r) for r in replies] == [(3, True), (4, False)]
    assert peak < 200 * 1024, f"{peak} KiB resident while reading a 200 MiB line"


def _rss_kib(pid: int) -> int:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        for line in status:
            if line.startswith("VmHWM:"):
                return int(line.split()[1])
    raise AssertionError("no VmHWM")


def test_every_request_piped_at_once_is_answered_before_exit() -> None:
    calls = b"".join(request(10 + n, "tools/call", CALL) for n in range(40))
    status, replies, _ = converse(initialize(1, "2025-11-25") + INITIALIZED + calls)
    assert status == 0
    assert sorted(reply["id"] for reply in replies) == [1, *range(10, 50)]


@pytest.mark.parametrize("request_id", [[1], {"id": 1}, True, 1.0, None, "x"])
def test_a_cancel_with_any_request_id_never_crashes_or_drops_answers(request_id: Any) -> None:
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
    data = initialize(1, "2025-11-25") + INITIALIZED + big_call(2, 50_000) + json.dumps(cancel).encode() + b"\n"
    data += request(3, "ping")
    started = time.monotonic()
    status, replies, stderr = converse(data)
    assert time.monotonic() - started < 30
    assert status == 0
    assert "Traceback" not in stderr
    by_id = {reply["id"]: reply for reply in replies}
    assert set(by_id) == {1, 2, 3}
    assert by_id[2]["result"]["structuredContent"]["counts"] == {"hits": 50_000, "returned": 2}


@pytest.mark.parametrize(("request_id", "answered"), [(2, [1]), ("2", [1, 2])])
def test_a_cancel_the_sdk_honours_is_not_waited_for(request_id: Any, answered: list[int]) -> None:
    """A cancel names its request by id, exactly: "2" is not the id 2, whose answer then comes."""
    cancel = {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": request_id}}
    data = initialize(1, "2025-11-25") + INITIALIZED + big_call(2) + json.dumps(cancel).encode() + b"\n"
    started = time.monotonic()
    status, replies, _ = converse(data)
    assert time.monotonic() - started < 20  # not the drain limit
    assert status == 0
    assert [reply["id"] for reply in replies] == answered


def test_log_level_debug_logs_to_stderr_only() -> None:
    status, replies, stderr = converse(
        initialize(1, "2025-06-18") + INITIALIZED + request(2, "ping"), "--log-level", "debug"
    )
    assert status == 0
    assert [reply["id"] for reply in replies] == [1, 2]
    assert "DEBUG" in stderr


def test_default_log_level_is_warning() -> None:
    status, _, stderr = converse(initialize(1, "2025-06-18") + b"garbage\n")
    assert status == 0
    assert stderr == ""  # the refused line is logged at INFO, below the default
    _, _, stderr = converse(initialize(1, "2025-06-18") + b"garbage\n", "--log-level", "info")
    assert "INFO codescout: refused a message" in stderr


# --- stopping -------------------------------------------------------------------------------


class Server:
    """`codescout mcp` with its pipes held open, as a client that never closes stdin."""

    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [codescout_exe(), "mcp", *args], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        assert self.proc.stdin is not None and self.proc.stdout is not None
        self.stdin = self.proc.stdin
        self.stdout = self.proc.stdout
        self.send(initialize(1, "2025-11-25") + INITIALIZED)
        assert json.loads(self.stdout.readline())["id"] == 1

    def send(self, data: bytes) -> None:
        self.stdin.write(data)
        self.stdin.flush()

    def send_until_closed(self, data: bytes) -> None:
        """Send, for as long as the server reads; it may stop reading, or exit, first."""
        with contextlib.suppress(BrokenPipeError, ValueError, OSError):
            self.send(data)

    def signal_and_wait(self, signum: int) -> tuple[int, float, bytes]:
        started = time.monotonic()
        self.proc.send_signal(signum)
        status = self.proc.wait(timeout=10)
        elapsed = time.monotonic() - started
        assert self.proc.stderr is not None
        return status, elapsed, self.proc.stderr.read()

    def wait_for_call_in_progress(self) -> None:
        """Until the server has read a big call and is working on it (CPU time, not sleep)."""
        deadline = time.monotonic() + 30
        before = _cpu_ticks(self.proc.pid)
        while _cpu_ticks(self.proc.pid) - before < 20 and time.monotonic() < deadline:
            select.select([], [], [], 0.01)


def _cpu_ticks(pid: int) -> int:
    with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
        fields = stat.read().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])


@posix_only(SIGNALS)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_an_idle_server_with_stdin_open_within_a_second(signum: int) -> None:
    server = Server()
    status, elapsed, stderr = server.signal_and_wait(signum)
    assert (status, b"Traceback" in stderr) == (0, False)
    assert elapsed < 1.0


# The call in progress: 150,000 hits (9 MB), ranked in a worker thread. (A single message of
# tens of MB is another matter: CPython runs no signal handler while its C parser reads one,
# about 30 ms a MB here; docs/stdio.md says so.)
IN_PROGRESS_HITS = 150_000


@posix_only(SIGNALS)
@linux_only(PROC)
@pytest.mark.parametrize("load", [0, 2], ids=["idle", "busy"])
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_stops_a_server_in_the_middle_of_a_call_within_a_second(signum: int, load: int) -> None:
    with busy_machine(load, seconds=60):  # a stop must be as prompt on a busy machine
        server = Server()
        server.send(big_call(2, IN_PROGRESS_HITS))
        server.wait_for_call_in_progress()
        status, elapsed, stderr = server.signal_and_wait(signum)
    assert (status, b"Traceback" in stderr) == (0, False)
    assert elapsed < 1.0


@posix_only(SIGNALS)
@linux_only(PROC)
@pytest.mark.parametrize("load", [0, 2], ids=["idle", "busy"])
def test_a_second_signal_never_leaves_it_hanging(load: int) -> None:
    with busy_machine(load, seconds=60):  # a stop must be as prompt on a busy machine
        server = Server()
        server.send(big_call(2, IN_PROGRESS_HITS))
        server.wait_for_call_in_progress()
        started = time.monotonic()
        server.proc.send_signal(signal.SIGTERM)
        server.proc.send_signal(signal.SIGINT)
        assert server.proc.wait(timeout=10) == 0
        assert time.monotonic() - started < 1.0


@posix_only(SIGNALS)
def test_a_client_that_stops_reading_cannot_hold_it_after_a_signal() -> None:
    server = Server()
    flood = b"".join(request(10 + n, "tools/list") for n in range(200)) + big_call(2, 100_000)
    # ~200 answers of ~3 KB and one large one, never read: the pipe fills up, and the server
    # then stops reading, so the client's own writes wait (in a thread, here).
    threading.Thread(target=server.send_until_closed, args=(flood,), daemon=True).start()
    time.sleep(0.5)
    status, elapsed, _ = server.signal_and_wait(signal.SIGTERM)
    assert status == 0
    assert elapsed < 1.0


def test_the_client_closing_stdout_ends_it_quietly() -> None:
    server = Server()
    server.stdout.close()
    server.send(request(2, "ping") + request(3, "tools/list"))
    assert server.proc.wait(timeout=10) == 0
    assert server.proc.stderr is not None
    assert server.proc.stderr.read() == b""


@posix_only(SHELL)
def test_a_closed_stdout_at_start_is_one_line_and_exit_one() -> None:
    done = subprocess.run(
        ["bash", "-c", f'"{codescout_exe()}" mcp >&-'], capture_output=True, text=True, timeout=30, check=False
    )
    assert (done.returncode, done.stderr) == (
        1,
        "codescout: stdout is closed, and the MCP server writes its replies there\n",
    )


def test_children_cannot_read_the_clients_messages() -> None:
    # The server moves the wire off fd 0 and fd 1: anything that inherits them sees nothing.
    probe = (
        "import os, sys; from codescout_mcp.stdio import serve_stdio\n"
        "import threading\n"
        "def peek():\n"
        "    sys.stderr.write(repr(os.read(0, 100)) + '\\n'); sys.stderr.flush()\n"
        "threading.Timer(0.5, peek).start()\n"
        "serve_stdio()\n"
    )
    proc = subprocess.Popen(
        [os.path.join(os.path.dirname(codescout_exe()), "python"), "-c", probe],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None and proc.stderr is not None
    proc.stdin.write(initialize(1, "2025-11-25"))
    proc.stdin.flush()
    assert json.loads(proc.stdout.readline())["id"] == 1  # serving: the peek is 0.5 s away
    assert proc.stderr.readline() == b"b''\n"
    proc.stdin.close()
    assert proc.wait(timeout=20) == 0


def test_a_large_call_runs_beside_the_loop_so_a_ping_is_answered_first() -> None:
    # Over 5,000 hits, ranking runs in a worker thread: the loop keeps reading and answering.
    status, replies, _ = converse(initialize(1, "2025-11-25") + INITIALIZED + big_call(2, 400_000) + request(3, "ping"))
    assert status == 0
    assert [reply["id"] for reply in replies] == [1, 3, 2]


def test_integer_literals_too_long_to_convert_are_named_or_ignored_over_mcp() -> None:
    big = "9" * 5000
    call = (
        '{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {"name": "rank_search_results", '
        f'"arguments": {{"note": {big}, "hits": [{{"path": "a", "matches": {big}, "last_modified_days": 0}}]}}}}}}\n'
    )
    ignored = call.replace(f'"matches": {big}', '"matches": 1').replace('"id": 2', '"id": 3')
    status, replies, _ = converse(initialize(1, "2025-11-25") + INITIALIZED + call.encode() + ignored.encode())
    assert status == 0
    by_id = {reply["id"]: reply for reply in replies}  # calls are answered as each is done
    assert by_id[2]["result"]["isError"] is True
    assert by_id[2]["result"]["content"][0]["text"] == (
        "hits[0].matches: expected an integer of at most 4000 digits, got a larger one"
    )
    assert by_id[3]["result"]["structuredContent"]["counts"] == {"hits": 1, "returned": 1}
