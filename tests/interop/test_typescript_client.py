"""The official TypeScript SDK client lists and calls the tool, over stdio and HTTP.

Three versions: the latest 1.x; 1.22, which closes a stdio server with SIGTERM while its
stdin stays open (a server that ignores SIGTERM then hangs the host); and 1.12, whose Ajv
is set up for draft-07 and fails on an output schema naming the 2020-12 dialect, and which
speaks only protocol 2025-03-26.
"""

from __future__ import annotations

import json
import os
import subprocess
import time
from collections.abc import Iterator
from typing import Any

import pytest

from codescout_mcp.core.contract import INPUT_SCHEMA, OUTPUT_SCHEMA, TOOL_NAME
from tests.helpers import EXAMPLE, EXAMPLE_RESULT, installed
from tests.httpserver import RunningServer, serving
from tests.nodetools import NodeTools
from tests.platforms import alive

SDKS = {
    "latest": ("@modelcontextprotocol/sdk", "2025-11-25"),
    "1.22": ("ts-sdk-1.22", "2025-06-18"),
    "1.12": ("ts-sdk-1.12", None),  # it does not tell its transport the version (2025-03-26)
}


def run_client(tools: NodeTools, sdk: str, *target: str) -> dict[str, Any]:
    started = time.monotonic()
    done = subprocess.run(
        [*tools.script("client.mjs"), sdk, *target],
        capture_output=True,
        text=True,
        env=tools.env(EXAMPLE=str(EXAMPLE)),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    report: dict[str, Any] = json.loads(done.stdout)
    report["wallSeconds"] = time.monotonic() - started
    return report


def check_report(report: dict[str, Any]) -> None:
    (tool,) = report["tools"]
    assert tool["name"] == TOOL_NAME
    assert tool["inputSchema"] == INPUT_SCHEMA
    assert tool.get("outputSchema", OUTPUT_SCHEMA) == OUTPUT_SCHEMA
    assert report["valid"]["structuredContent"] == EXAMPLE_RESULT
    assert json.loads(report["valid"]["content"][0]["text"]) == EXAMPLE_RESULT
    assert report["invalid"] == {
        "content": [{"type": "text", "text": 'hits[0].matches: expected an integer >= 1, got "3"'}],
        "isError": True,
    }


def gone(pid: int) -> bool:
    """Whether the process has exited (a zombie has too)."""
    return not alive(pid)


@pytest.mark.parametrize("version", list(SDKS))
def test_typescript_client_over_stdio(node_tools: NodeTools, version: str) -> None:
    sdk, negotiated = SDKS[version]
    report = run_client(node_tools, sdk, "stdio", installed("codescout-mcp"))
    check_report(report)
    assert report["protocolVersion"] == negotiated
    # close() returns promptly and leaves no server behind, whichever way the SDK closes.
    assert report["closeMs"] < 1500
    assert report["wallSeconds"] < 30
    deadline = time.monotonic() + 2
    while not gone(report["serverPid"]) and time.monotonic() < deadline:
        time.sleep(0.02)
    assert gone(report["serverPid"])


@pytest.fixture(scope="module")
def http_server() -> Iterator[RunningServer]:
    yield from serving()


@pytest.mark.parametrize("version", list(SDKS))
def test_typescript_client_over_http(node_tools: NodeTools, http_server: RunningServer, version: str) -> None:
    sdk, _ = SDKS[version]
    report = run_client(node_tools, sdk, "http", http_server.url)
    check_report(report)
    assert report["closeMs"] < 1500


def test_the_node_used_is_22(node_tools: NodeTools) -> None:
    done = subprocess.run([str(node_tools.node), "--version"], capture_output=True, text=True, check=True)
    assert done.stdout.startswith("v22.")
    assert os.access(node_tools.node, os.X_OK)
