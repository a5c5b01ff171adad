"""`codescout mcp --transport streamable-http`, started as a user would, on a free loopback port."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx2
import pytest
from mcp import Client
from mcp.client.streamable_http import streamable_http_client

from codescout_mcp.contract import INPUT_SCHEMA, TOOL_NAME
from tests.helpers import as_json, codescout_exe, reference_rank
from tests.httpserver import CALL, RunningServer

TOKEN = "s3cret-token-for-tests"


@pytest.fixture
def server() -> Iterator[RunningServer]:
    running = RunningServer()
    yield running
    status, log = running.stop()
    assert status == 0, log
    assert "Traceback" not in log


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


def test_malformed_bodies_get_4xx_and_the_server_stays_up(server: RunningServer) -> None:
    for body in (b"{not json", b"", b"[]", b'{"jsonrpc": "2.0"}', b"\xff\xfe"):
        status, _ = server.post(body)
        assert 400 <= status < 500, body
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
