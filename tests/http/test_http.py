"""`codescout mcp --transport streamable-http`, started as a user would, on a free loopback port."""

from __future__ import annotations

import http.client
import json
import os
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from codescout_mcp.core.contract import INPUT_SCHEMA, TOOL_NAME
from tests.helpers import as_json, codescout_exe, reference_rank
from tests.httpserver import CALL, RunningServer, serving
from tests.platforms import OPEN_FILES, PROC, SIGNALS, linux_only, posix_only

TOKEN = "s3cret-token-for-tests"


@pytest.fixture
def server() -> Iterator[RunningServer]:
    yield from serving()


def listening_address(port: int) -> str:
    """The local address of the socket listening on `port`, from the kernel's table."""
    for table in ("/proc/net/tcp", "/proc/net/tcp6"):
        for line in Path(table).read_text().splitlines()[1:]:
            fields = line.split()
            address, hex_port = fields[1].split(":")
            if int(hex_port, 16) == port and fields[3] == "0A":  # 0A: LISTEN
                return address
    raise AssertionError(f"nothing listens on {port}")


# --- through the SDK's streamable HTTP client -------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("mode", ["legacy", "auto"])
async def test_sdk_client_session_lists_and_calls(server: RunningServer, mode: str) -> None:
    async with Client(server.url, mode=mode) as client:
        tools = await client.list_tools()
        assert tools.tools[0].input_schema == INPUT_SCHEMA
        result = await client.call_tool(TOOL_NAME, CALL["params"]["arguments"])  # type: ignore[index]
        assert as_json(result.structured_content) == as_json(reference_rank(CALL["params"]["arguments"]))  # type: ignore[index]
        bad = await client.call_tool(TOOL_NAME, {"hits": [{"path": "", "matches": 1, "last_modified_days": 0}]})
        assert bad.is_error


@pytest.mark.anyio
async def test_twenty_concurrent_clients_two_hundred_calls_all_correct(server: RunningServer) -> None:
    failures: list[str] = []
    answered = 0

    async def one_client(n: int) -> None:
        nonlocal answered
        async with Client(server.url, mode="legacy") as client:
            for k in range(10):
                hits = [
                    {"path": f"c{n}/f{i}", "matches": 1 + (i * (n + k)) % 13, "last_modified_days": (i * 7) % 50}
                    for i in range(100)
                ]
                arguments = {"hits": hits, "limit": 1 + (n + k) % 10}
                result = await client.call_tool(TOOL_NAME, arguments)
                if as_json(result.structured_content) != as_json(reference_rank(arguments)):
                    failures.append(f"client {n} call {k}")
                answered += 1

    async with anyio.create_task_group() as tasks:
        for n in range(20):
            tasks.start_soon(one_client, n)
    assert failures == []
    assert answered == 200


# --- raw HTTP: what the guards refuse -------------------------------------------------------


@linux_only(PROC)
def test_default_bind_is_loopback_only(server: RunningServer) -> None:
    assert "http://127.0.0.1:" in server.banner
    assert listening_address(server.port) == "0100007F"  # 127.0.0.1, not 0.0.0.0
    status, body = server.call()
    assert status == 200
    assert json.loads(body)["result"]["structuredContent"]["counts"] == {"hits": 3, "returned": 2}


def test_foreign_host_is_refused_with_421(server: RunningServer) -> None:
    assert server.call({"Host": "attacker.example:80"})[0] == 421
    assert server.call({"Host": f"localhost:{server.port}"})[0] == 200


def test_foreign_origin_is_refused_with_403(server: RunningServer) -> None:
    assert server.call({"Origin": "http://attacker.example"})[0] == 403
    assert server.call({"Origin": f"http://localhost:{server.port}"})[0] == 200


@pytest.mark.parametrize(
    ("body", "code"),
    [
        (b"{not json", -32700),
        (b"", -32700),
        (b"\xff\xfe", -32700),
        (b"[]", -32600),
        (b"[1]", -32600),
        (b"null", -32600),
        (b"5", -32600),
        (b'"text"', -32600),
    ],
)
def test_malformed_bodies_get_400_with_a_one_line_json_rpc_error(server: RunningServer, body: bytes, code: int) -> None:
    status, answer = server.post(body)
    assert status == 400, answer
    assert b"\n" not in answer.strip()
    error = json.loads(answer)
    assert (error["jsonrpc"], error["id"], error["error"]["code"]) == ("2.0", None, code)
    assert "validation error" not in error["error"]["message"]  # no pydantic dump
    assert server.call()[0] == 200


def test_an_object_that_is_not_a_message_gets_400(server: RunningServer) -> None:
    status, _ = server.post(b'{"jsonrpc": "2.0"}')
    assert status == 400
    assert server.call()[0] == 200


def test_body_over_the_default_cap_gets_413(server: RunningServer) -> None:
    status, _ = server.post(b" " * (32 * 1024 * 1024 + 1))
    assert status == 413
    assert server.call()[0] == 200


def test_body_cap_is_configurable() -> None:
    running = RunningServer("--max-body-bytes", "2000")
    try:
        assert running.call()[0] == 200
        status, _ = running.post(json.dumps({**CALL, "pad": "x" * 3000}).encode())
        assert status == 413
    finally:
        assert running.stop()[0] == 0


def test_bearer_token_missing_wrong_right_and_never_logged() -> None:
    running = RunningServer("--log-level", "debug", token=TOKEN)
    try:
        assert "with a bearer token" in running.banner
        status, _ = running.call()
        assert status == 401
        assert running.call({"Authorization": "Bearer not-the-token"})[0] == 401
        assert running.call({"Authorization": TOKEN})[0] == 401
        status, body = running.call({"Authorization": f"Bearer {TOKEN}"})
        assert status == 200
        assert json.loads(body)["result"]["isError"] is False
    finally:
        status, log = running.stop()
    assert status == 0
    assert TOKEN not in log
    assert "DEBUG" in log


@pytest.mark.anyio
async def test_sdk_client_with_the_token(monkeypatch: pytest.MonkeyPatch) -> None:
    running = RunningServer(token=TOKEN)
    try:
        headers = {"Authorization": f"Bearer {TOKEN}"}
        async with httpx2.AsyncClient(headers=headers) as http_client:
            transport = streamable_http_client(running.url, http_client=http_client)
            async with Client(transport, mode="legacy") as client:
                result = await client.call_tool(TOOL_NAME, CALL["params"]["arguments"])  # type: ignore[index]
                assert result.structured_content is not None
    finally:
        assert running.stop()[0] == 0


def test_non_loopback_bind_without_allow_list_warns_and_serves_loopback_names_only() -> None:
    running = RunningServer("--host", "0.0.0.0")
    try:
        assert "warning: listening on 0.0.0.0 with no --allow-host" in running.banner
        assert running.call()[0] == 200
        assert running.call({"Host": f"codescout.internal:{running.port}"})[0] == 421
    finally:
        assert running.stop()[0] == 0


def test_allow_host_and_allow_origin_let_named_clients_in() -> None:
    running = RunningServer(
        "--host", "0.0.0.0", "--allow-host", "codescout.internal:*", "--allow-origin", "https://ide.example"
    )
    try:
        assert "warning" not in running.banner
        assert running.call({"Host": f"codescout.internal:{running.port}"})[0] == 200
        assert running.call({"Origin": "https://ide.example"})[0] == 200
        assert running.call({"Origin": "https://other.example"})[0] == 403
    finally:
        assert running.stop()[0] == 0


def run_mcp(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [codescout_exe(), "mcp", *args], capture_output=True, text=True, timeout=30, env=env, check=False
    )


def test_empty_token_is_refused_at_start() -> None:
    done = run_mcp("--transport", "streamable-http", "--port", "0", env={**os.environ, "CODESCOUT_AUTH_TOKEN": " "})
    assert done.returncode == 2
    assert done.stderr == "codescout: CODESCOUT_AUTH_TOKEN is set but empty; unset it or give it a value\n"


def test_port_in_use_is_one_clear_line(server: RunningServer) -> None:
    done = run_mcp("--transport", "streamable-http", "--port", str(server.port))
    assert done.returncode == 2
    assert done.stderr.startswith(f"codescout: cannot listen on 127.0.0.1:{server.port}: ")
    assert done.stderr.count("\n") == 1


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (("--host", "0.0.0.0"), "--host only applies with --transport streamable-http"),
        (("--port", "8000"), "--port only applies with --transport streamable-http"),
        (("--transport", "streamable-http", "--port", "70000"), "is not a port"),
        (("--transport", "streamable-http", "--max-body-bytes", "0"), "is not a positive integer"),
        (("--transport", "carrier-pigeon"), "invalid choice"),
    ],
)
def test_http_usage_errors(args: tuple[str, ...], text: str) -> None:
    done = run_mcp(*args)
    assert done.returncode == 2
    assert text in done.stderr
    assert done.stderr.count("\n") == 1


def test_result_shape_over_http_matches_stdio(server: RunningServer) -> None:
    status, body = server.call()
    reply: dict[str, Any] = json.loads(body)
    assert status == 200
    content = reply["result"]["content"]
    assert json.loads(content[0]["text"]) == reply["result"]["structuredContent"]


# --- hardening: methods, slow and greedy clients, limits, signals -----------------------------


@pytest.mark.parametrize("method", ["GET", "DELETE", "PUT", "PATCH"])
def test_only_post_is_served_on_the_endpoint(server: RunningServer, method: str) -> None:
    status, headers, _ = server.request(method)
    assert (status, headers.get("allow")) == (405, "POST")


def slow_socket(server: RunningServer) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", server.port))
    sock.settimeout(30)
    return sock


def read_all(sock: socket.socket) -> bytes:
    data = b""
    try:
        while chunk := sock.recv(65536):
            data += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    return data


HEADERS = (
    b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
    b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n"
)


@pytest.mark.parametrize(
    "sent",
    [b"", b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\n", HEADERS + b'Content-Length: 100\r\n\r\n{"jsonrpc"'],
    ids=["nothing", "half the headers", "half the body"],
)
def test_a_request_not_complete_in_time_gets_408_and_is_closed(sent: bytes) -> None:
    running = RunningServer("--request-timeout", "1")
    try:
        sock = slow_socket(running)
        sock.sendall(sent)
        started = time.monotonic()
        answer = sock.recv(65536)
        answered = time.monotonic() - started
        answer += read_all(sock)
        closed = time.monotonic() - started
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:100]
        assert 0.8 < answered < 3
        # Half a body may still be coming: the rest is read for 2 s at most, then the connection closes.
        assert closed < answered + (2.5 if sent.endswith(b'{"jsonrpc"') else 0.5)
        assert running.call()[0] == 200
    finally:
        status, log = running.stop()
    assert status == 0
    assert "Traceback" not in log


def test_a_413_closes_the_connection_instead_of_reading_an_endless_body() -> None:
    running = RunningServer("--max-body-bytes", "100000")
    try:
        sock = slow_socket(running)
        sock.sendall(HEADERS + b"Transfer-Encoding: chunked\r\n\r\n")
        started = time.monotonic()
        chunk = b"10000\r\n" + b" " * 0x10000 + b"\r\n"
        try:
            while time.monotonic() - started < 20:
                sock.sendall(chunk)
        except (ConnectionResetError, BrokenPipeError):
            pass
        elapsed = time.monotonic() - started
        assert elapsed < 5, "the server kept reading an endless body"
        assert read_all(sock).startswith(b"HTTP/1.1 413 ")
        assert running.call()[0] == 200
    finally:
        status, log = running.stop()
    assert status == 0
    assert "Traceback" not in log


def test_a_client_that_leaves_mid_body_leaves_no_traceback() -> None:
    running = RunningServer("--log-level", "debug")
    try:
        for _ in range(5):
            sock = slow_socket(running)
            sock.sendall(HEADERS + b'Content-Length: 1000\r\n\r\n{"jsonrpc": ')
            sock.close()
        assert running.call()[0] == 200
    finally:
        status, log = running.stop()
    assert status == 0
    assert "Traceback" not in log and "Exception" not in log


def test_beyond_max_concurrent_a_request_waits_for_a_slot_and_is_served() -> None:
    running = RunningServer("--max-concurrent", "2")
    held = []
    try:
        for _ in range(2):  # two requests in flight, their bodies never finished
            sock = slow_socket(running)
            sock.sendall(HEADERS + b"Content-Length: 1000\r\n\r\n{")
            held.append(sock)
        time.sleep(0.3)
        answers: list[tuple[int, bytes]] = []
        waiter = threading.Thread(target=lambda: answers.append(running.call()))
        waiter.start()
        time.sleep(1.0)
        assert answers == []  # waiting in line: not refused
        for sock in held:
            sock.close()
        waiter.join(timeout=10)
        assert [status for status, _ in answers] == [200]
    finally:
        status, _ = running.stop()
    assert status == 0


def test_beyond_max_concurrent_a_request_is_refused_at_its_own_deadline() -> None:
    running = RunningServer("--max-concurrent", "1", "--request-timeout", "1.5")
    try:
        sock = slow_socket(running)
        sock.sendall(HEADERS + b"Content-Length: 1000\r\n\r\n{")  # holds the slot until its 408
        time.sleep(0.3)
        started = time.monotonic()
        status, _, _ = running.request("POST", json.dumps(CALL).encode(), {"Connection": "close"})
        waited = time.monotonic() - started
        # The holder's deadline comes first and frees the slot: the waiter, behind it, is served.
        assert status == 200 and waited < 3, (status, waited)
        sock.close()
    finally:
        status, _ = running.stop()
    assert status == 0


def test_time_waiting_in_line_does_not_count_against_the_bodys_request_timeout() -> None:
    running = RunningServer("--max-concurrent", "1", "--request-timeout", "3")
    try:
        holder = slow_socket(running)
        holder.sendall(HEADERS + b"Content-Length: 1000\r\n\r\n{")  # holds the slot until its 408, 3 s on
        time.sleep(0.3)
        body = json.dumps(CALL).encode()
        waiter = slow_socket(running)
        started = time.monotonic()
        waiter.sendall(HEADERS + b"Content-Length: %d\r\n\r\n" % len(body) + body[:20])
        # In line until about 2.7 s from now, when the holder's slot comes free; the rest of the
        # body follows 1.3 s after that: 4 s after the first byte, yet 1.3 s of reading time.
        time.sleep(max(0.0, 4.0 - (time.monotonic() - started)))
        waiter.sendall(body[20:])
        answer = read_all(waiter)
        assert answer.startswith(b"HTTP/1.1 200 "), answer[:200]
        assert read_all(holder).startswith(b"HTTP/1.1 408 ")
    finally:
        status, log = running.stop()
    assert status == 0
    assert "Traceback" not in log


def test_a_408_sent_while_the_body_is_still_arriving_is_seen_by_a_client_that_writes_it_all_first() -> None:
    running = RunningServer("--request-timeout", "1")
    size = 16 * 1024 * 1024
    try:
        sock = slow_socket(running)
        sock.sendall(HEADERS + b"Content-Length: %d\r\n\r\n" % size + b"{")
        time.sleep(1.5)  # the 408 is sent at 1 s; then the rest of the body comes, all at once
        sock.sendall(b" " * (size - 1))  # read and dropped, not met with a reset
        answer = read_all(sock)
        assert answer.startswith(b"HTTP/1.1 408 "), answer[:200]
        assert b"\r\nconnection: close\r\n" in answer.lower()
        assert running.call()[0] == 200
    finally:
        status, log = running.stop()
    assert status == 0
    assert "Traceback" not in log


def test_sigterm_lets_a_request_in_flight_finish_then_exits_zero() -> None:
    running = RunningServer()
    hits = [{"path": f"p/{i}", "matches": 1 + i % 9, "last_modified_days": i % 50} for i in range(150_000)]
    body = json.dumps({**CALL, "params": {"name": TOOL_NAME, "arguments": {"hits": hits, "limit": 3}}}).encode()
    answers: list[tuple[int, bytes]] = []
    worker = threading.Thread(target=lambda: answers.append(running.post(body)))
    worker.start()
    time.sleep(0.5)  # the call is being read or ranked
    status, log = running.stop()
    worker.join(timeout=30)
    assert status == 0, log
    assert answers and answers[0][0] == 200
    assert json.loads(answers[0][1])["result"]["structuredContent"]["counts"] == {"hits": 150_000, "returned": 3}
    assert "Traceback" not in log


@posix_only(SIGNALS)
def test_sigterm_waits_at_most_the_shutdown_timeout_for_slow_clients_and_a_second_signal_exits() -> None:
    running = RunningServer("--shutdown-timeout", "1", "--request-timeout", "60")
    sock = slow_socket(running)
    sock.sendall(HEADERS + b"Content-Length: 1000\r\n\r\n{")
    time.sleep(0.3)
    started = time.monotonic()
    status, log = running.stop()
    assert status == 0
    assert time.monotonic() - started < 4
    assert "Traceback" not in log

    again = RunningServer("--shutdown-timeout", "30", "--request-timeout", "60")
    sock = slow_socket(again)
    sock.sendall(HEADERS + b"Content-Length: 1000\r\n\r\n{")
    time.sleep(0.3)
    again.proc.send_signal(signal.SIGTERM)
    time.sleep(0.3)
    started = time.monotonic()
    again.proc.send_signal(signal.SIGINT)
    assert again.proc.wait(timeout=5) == 0
    assert time.monotonic() - started < 1
    assert "Traceback" not in again.stop()[1]


@posix_only(SIGNALS)
def test_a_hangup_stops_it_like_sigterm_unless_it_was_started_ignoring_one() -> None:
    """SIGHUP stops the HTTP server with status 0, as SIGTERM does; under `nohup` it serves on."""
    hup = signal.SIGHUP  # type: ignore[attr-defined, unused-ignore]  # POSIX-only
    running = RunningServer(hangup=signal.SIG_DFL)
    assert running.call()[0] == 200
    running.proc.send_signal(hup)
    assert running.proc.wait(timeout=10) == 0
    assert "Traceback" not in running.log

    ignoring = RunningServer(hangup=signal.SIG_IGN)
    ignoring.proc.send_signal(hup)
    with pytest.raises(subprocess.TimeoutExpired):
        ignoring.proc.wait(timeout=1)
    assert ignoring.call()[0] == 200
    status, log = ignoring.stop()
    assert (status, "Traceback" in log) == (0, False)


@posix_only(OPEN_FILES)
def test_at_the_descriptor_limit_it_warns_once_a_second_and_recovers() -> None:
    running = RunningServer("--log-level", "info", nofile=64)
    held = []
    try:
        for _ in range(200):  # far more than 64 descriptors
            try:
                held.append(socket.create_connection(("127.0.0.1", running.port), timeout=1))
            except OSError:
                break
        time.sleep(3)
        for sock in held:
            sock.close()
        time.sleep(1.5)
        assert running.call()[0] == 200
    finally:
        status, log = running.stop()
    assert status == 0
    warnings = [line for line in log.splitlines() if "cannot accept connections" in line]
    stamps = [datetime.strptime(line[:23], "%Y-%m-%d %H:%M:%S,%f") for line in warnings]
    assert warnings, log[-3000:]
    # At most one a second, however long a loaded machine took (one more for the second they began in).
    assert len(warnings) <= (stamps[-1] - stamps[0]).total_seconds() + 1, log[-3000:]
    assert "Traceback" not in log


@pytest.mark.parametrize("host", ["127.0.0.1", "localhost", "LOCALHOST", "LocalHost:1234", "[::1]", "127.0.0.1:80"])
def test_loopback_host_headers_with_or_without_a_port_are_accepted(server: RunningServer, host: str) -> None:
    assert server.call({"Host": host})[0] == 200


@pytest.mark.parametrize("host", ["::1", "[::1]"])
def test_ipv6_loopback_binds_written_either_way(host: str) -> None:
    running = RunningServer("--host", host)
    try:
        assert "http://[::1]:" in running.banner
        connection = socket.create_connection(("::1", running.port), timeout=5)
        connection.close()
    finally:
        status, log = running.stop()
    assert status == 0, log


@pytest.mark.parametrize("scheme", ["Bearer", "bearer", "BEARER", "Bearer  ", "bEaReR\t"])
def test_the_authorization_scheme_is_case_insensitive_with_any_spaces(scheme: str) -> None:
    running = RunningServer(token=TOKEN)
    try:
        separator = "" if scheme.endswith((" ", "\t")) else " "
        assert running.call({"Authorization": f"{scheme}{separator}{TOKEN}"})[0] == (401 if "\t" in scheme else 200)
        assert running.call({"Authorization": f"Basic {TOKEN}"})[0] == 401
    finally:
        assert running.stop()[0] == 0


@pytest.mark.parametrize("token", [" padded", "padded ", "\tpadded"])
def test_a_token_with_surrounding_whitespace_refuses_to_start(token: str) -> None:
    done = run_mcp("--transport", "streamable-http", "--port", "0", env={**os.environ, "CODESCOUT_AUTH_TOKEN": token})
    assert done.returncode == 2
    assert done.stderr == (
        "codescout: CODESCOUT_AUTH_TOKEN starts or ends with whitespace, which no client can send in a header; "
        "remove it\n"
    )


def test_query_strings_never_reach_the_access_log() -> None:
    running = RunningServer("--log-level", "info")
    try:
        assert running.post(json.dumps(CALL).encode(), path="/mcp?token=hunter2")[0] == 200
    finally:
        status, log = running.stop()
    assert status == 0
    assert "POST /mcp -> 200" in log
    assert "hunter2" not in log


def test_protocol_versions_over_http(server: RunningServer) -> None:
    def initialize(version: str) -> str:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        }
        status, answer = server.post(json.dumps(body).encode(), {"MCP-Protocol-Version": version})
        assert status == 200, answer
        served: str = json.loads(answer)["result"]["protocolVersion"]
        return served

    assert [initialize(v) for v in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")] == [
        "2024-11-05",
        "2025-03-26",
        "2025-06-18",
        "2025-11-25",
    ]
    status, _ = server.post(b"{}", {"MCP-Protocol-Version": "2026-07-28"})
    assert status == 400  # not an enveloped request: the SDK's modern entry refuses it


def test_a_batch_is_served_at_2025_03_26_and_refused_after_it(server: RunningServer) -> None:
    batch = json.dumps([CALL, {"jsonrpc": "2.0", "id": 2, "method": "ping"}, {"jsonrpc": "2.0", "method": "x"}])
    status, answer = server.post(batch.encode(), {"MCP-Protocol-Version": "2025-03-26"})
    assert status == 200, answer
    replies = json.loads(answer)
    assert [r["id"] for r in replies] == [1, 2]
    assert replies[0]["result"]["structuredContent"]["counts"] == {"hits": 3, "returned": 2}
    status, answer = server.post(batch.encode(), {"MCP-Protocol-Version": "2025-06-18"})
    assert status == 400
    assert json.loads(answer)["error"]["code"] == -32600


def test_http_defaults_port_8000_and_its_limits(monkeypatch: pytest.MonkeyPatch) -> None:
    from codescout_mcp import http as transport
    from codescout_mcp.cli import main as cli

    seen: list[transport.HttpSettings] = []

    def serve_http(settings: transport.HttpSettings, workspace: str | None = None, warm: bool = False) -> int:
        seen.append(settings)
        return 0

    monkeypatch.setattr(transport, "serve_http", serve_http)
    assert cli.main(["mcp", "--transport", "streamable-http"]) == 0
    assert seen == [
        transport.HttpSettings(
            host="127.0.0.1",
            port=8000,
            allow_hosts=(),
            allow_origins=(),
            max_body_bytes=32 * 1024 * 1024,
            max_buffered_bytes=32 * 1024 * 1024,
            request_timeout=30.0,
            write_timeout=30.0,
            max_concurrent=32,
            shutdown_timeout=10.0,
            tls_certfile=None,
            tls_keyfile=None,
            log_level="warning",
        )
    ]


@posix_only(SIGNALS)
def test_ctrl_break_stops_the_http_server_as_ctrl_c_does() -> None:
    """Windows's Ctrl-Break (SIGBREAK) stops the server cleanly, from its first moment.

    Linux has no SIGBREAK: here SIGUSR1 stands in for it, named SIGBREAK before the server
    starts. Without a handler for it, the signal's default action would end the process.
    """
    if sys.platform == "win32":  # the mark skips it there; said so for mypy judging the suite as Windows
        raise AssertionError("POSIX only")
    wrapper = (
        "import signal, sys\n"
        "signal.SIGBREAK = signal.SIGUSR1\n"
        "from codescout_mcp.cli.main import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    server = subprocess.Popen(
        [sys.executable, "-c", wrapper, "mcp", "--transport", "streamable-http", "--port", "0"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    assert server.stderr is not None
    banner = server.stderr.readline()
    assert b"serving MCP" in banner, banner
    started = time.monotonic()
    server.send_signal(signal.SIGUSR1)
    try:
        status = server.wait(timeout=15)
    finally:
        server.kill()
    rest = server.stderr.read()
    assert (status, rest) == (0, b"")
    assert time.monotonic() - started < 5


# --- behind a proxy (docs/proxies.md) -------------------------------------------------------------


def test_an_allowed_name_without_a_port_also_matches_it_on_the_default_ports() -> None:
    running = RunningServer(
        "--host", "127.0.0.1", "--allow-host", "mcp.example.com", "--allow-host", "alt.example:9000"
    )
    try:
        for host, status in [
            ("mcp.example.com", 200),
            ("mcp.example.com:443", 200),
            ("MCP.example.com:80", 200),
            ("mcp.example.com:8443", 421),
            ("alt.example:9000", 200),
            ("alt.example", 421),
            ("alt.example:443", 421),
        ]:
            assert running.call({"Host": host})[0] == status, host
    finally:
        running.stop()


def test_the_access_log_names_the_client_and_believes_forwarded_addresses_only_from_named_proxies() -> None:
    spoofed = {"X-Forwarded-For": "203.0.113.9"}
    running = RunningServer("--log-level", "info")
    try:
        assert running.call(spoofed)[0] == 200
    finally:
        _, log = running.stop()
    lines = [line for line in log.splitlines() if "POST /mcp -> 200" in line]
    assert len(lines) == 1 and " 127.0.0.1:" in lines[0] and "203.0.113.9" not in log
    trusting = RunningServer("--log-level", "info", "--forwarded-allow-ip", "127.0.0.1")
    try:
        assert trusting.call(spoofed)[0] == 200
    finally:
        _, log = trusting.stop()
    assert [line for line in log.splitlines() if "203.0.113.9:" in line and "POST /mcp -> 200" in line]


def test_an_idle_connection_is_closed_after_the_keep_alive_timeout() -> None:
    running = RunningServer("--keep-alive-timeout", "1")
    try:
        connection = http.client.HTTPConnection("127.0.0.1", running.port, timeout=10)
        body = json.dumps(CALL).encode()
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json",
            "MCP-Protocol-Version": "2025-11-25",
        }
        connection.request("POST", "/mcp", body, headers)
        assert connection.getresponse().read()
        sock = connection.sock
        assert sock is not None
        started = time.monotonic()
        sock.settimeout(10)
        assert sock.recv(1) == b""  # the server closed the idle connection
        assert 0.5 < time.monotonic() - started < 4
        connection.close()
    finally:
        running.stop()
