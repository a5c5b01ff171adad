"""The stdio server's first moments, through the installed command: a host's first requests at once,
the SDK's own answers, any event loop, a signal at any moment, an SDK that will not load.

* the early answers on the wire are the SDK's (in process, for every host and every shape of
  params: tests/unit/test_early_answers.py);
* the first requests of Codex and Claude Code are answered while the SDK is still loading (made
  to load slowly here), and the call after them once it is up;
* an event loop without `add_signal_handler` (as on Windows) changes nothing: the server
  starts, answers and stops on stdin's end and on Ctrl-C.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp.answers.protocol import HANDSHAKE_VERSIONS
from tests.helpers import installed
from tests.platforms import SIGNALS, posix_only

CALL = {"name": "rank_search_results", "arguments": {"hits": [{"path": "a.py", "matches": 3, "last_modified_days": 4}]}}


def line(message: dict[str, Any]) -> bytes:
    return json.dumps(message).encode() + b"\n"


def handshake_lines(version: str, *, call: bool = False) -> bytes:
    data = line(
        {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "initialize",
            "params": {
                "protocolVersion": version,
                "capabilities": {"roots": {}},
                "clientInfo": {"name": "t", "version": "1"},
            },
        }
    )
    data += line({"jsonrpc": "2.0", "method": "notifications/initialized"})
    data += line({"jsonrpc": "2.0", "id": "list", "method": "tools/list"})
    data += line({"jsonrpc": "2.0", "id": 3, "method": "ping"})
    if call:
        data += line({"jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": CALL})
    return data  # fmt: skip


SDK_ONLY = (
    "import sys\nfrom codescout_mcp.stdio import serve_stdio\n"
    "serve_stdio(workspace=sys.argv[1] or None, early_answers=False)\n"
)


def answers(argv: list[str], data: bytes, env: dict[str, str] | None = None) -> dict[object, Any]:
    """Each answer, by id."""
    done = subprocess.run(argv, input=data, capture_output=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    return {json.loads(raw)["id"]: json.loads(raw) for raw in done.stdout.splitlines()}


@pytest.mark.parametrize("workspace", [False, True])
@pytest.mark.parametrize("version", [*HANDSHAKE_VERSIONS, "2099-01-01"])
def test_early_answers_are_the_sdks_on_the_wire(version: str, workspace: bool, tmp_path: Path) -> None:
    folder = str(tmp_path) if workspace else ""
    early = answers(
        [installed("codescout-mcp"), *(["--workspace", folder] if workspace else [])], handshake_lines(version)
    )
    sdk = answers([sys.executable, "-c", SDK_ONLY, folder], handshake_lines(version))
    assert early == sdk
    assert set(early) == {1, "list", 3}


def slow_sdk(tmp_path: Path, seconds: float) -> dict[str, str]:
    """An environment in which importing the SDK takes `seconds` longer (a busy, slow machine)."""
    (tmp_path / "sitecustomize.py").write_text(
        "import builtins, time\n"
        "_real = builtins.__import__\n"
        "_slept = []\n"
        "def _import(name, *args, **kwargs):\n"
        "    if name.split('.')[0] in ('mcp', 'mcp_types') and not _slept:\n"
        f"        _slept.append(1); time.sleep({seconds})\n"
        "    return _real(name, *args, **kwargs)\n"
        "builtins.__import__ = _import\n",
        encoding="utf-8",
    )
    return {**os.environ, "PYTHONPATH": str(tmp_path)}


class Lines:
    """A server's stdout, line by line, with a time limit on each wait (read in a thread)."""

    def __init__(self, stream: Any) -> None:
        self.lines: queue.Queue[bytes] = queue.Queue()
        threading.Thread(target=self._read, args=(stream,), daemon=True).start()

    def _read(self, stream: Any) -> None:
        for raw in stream:
            self.lines.put(raw)

    def next(self, seconds: float) -> dict[str, Any]:
        try:
            raw = self.lines.get(timeout=seconds)
        except queue.Empty:
            raise AssertionError(f"no answer within {seconds} s") from None
        answer: dict[str, Any] = json.loads(raw)
        return answer


def test_the_handshake_is_answered_while_the_sdk_is_still_loading(tmp_path: Path) -> None:
    server = subprocess.Popen(
        [installed("codescout-mcp")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=slow_sdk(tmp_path, 6.0),
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        started = time.monotonic()
        server.stdin.write(handshake_lines("2025-06-18", call=True))
        server.stdin.flush()
        lines = Lines(server.stdout)
        got = [lines.next(5.0) for _ in range(3)]
        handshake_done = time.monotonic() - started
        assert [answer["id"] for answer in got] == [1, "list", 3]
        assert [tool["name"] for tool in got[1]["result"]["tools"]] == ["rank_search_results"]
        call = lines.next(5.0)  # the door answers the call too: it does not wait for the SDK
        assert call["id"] == 4 and call["result"]["structuredContent"]["results"][0]["score"] == 296
        assert handshake_done < 5.0 and time.monotonic() - started < 5.0
        server.stdin.close()
        assert server.wait(timeout=30) == 0
    finally:
        server.kill()
        server.wait()


def test_stdin_ending_before_the_sdk_loads_needs_no_sdk(tmp_path: Path) -> None:
    """Everything read was answered early: the server leaves without waiting for the SDK."""
    started = time.monotonic()
    done = subprocess.run(
        [installed("codescout-mcp")],
        input=handshake_lines("2025-11-25"),
        capture_output=True,
        env=slow_sdk(tmp_path, 30.0),
        timeout=60,
        check=False,
    )
    assert done.returncode == 0 and done.stderr == b""
    assert [json.loads(raw)["id"] for raw in done.stdout.splitlines()] == [1, "list", 3]
    assert time.monotonic() - started < 20


# An event loop without signal handlers, as every asyncio loop on Windows is.
NO_LOOP_SIGNALS = (
    "import asyncio, sys\n"
    "def refuse(*args, **kwargs):\n"
    "    raise NotImplementedError\n"
    "for cls in (asyncio.AbstractEventLoop, asyncio.BaseEventLoop, asyncio.SelectorEventLoop):\n"
    "    cls.add_signal_handler = refuse\n"
    "import asyncio.unix_events as unix\n"
    "unix._UnixSelectorEventLoop.add_signal_handler = refuse\n"
    "from codescout_mcp.cli.main import mcp_main\n"
    "sys.exit(mcp_main(sys.argv[1:]))\n"
)


def test_a_loop_without_signal_handlers_starts_answers_and_stops_at_the_end_of_stdin() -> None:
    done = subprocess.run(
        [sys.executable, "-c", NO_LOOP_SIGNALS],
        input=handshake_lines("2025-11-25", call=True),
        capture_output=True,
        timeout=60,
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, b"")
    replies = {json.loads(raw)["id"]: json.loads(raw) for raw in done.stdout.splitlines()}
    assert set(replies) == {1, "list", 3, 4}
    assert replies[4]["result"]["structuredContent"]["results"][0]["score"] == 296


@posix_only(SIGNALS)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_loop_without_signal_handlers_still_stops_on_a_signal(signum: int) -> None:
    server = subprocess.Popen(
        [sys.executable, "-c", NO_LOOP_SIGNALS], stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        server.stdin.write(handshake_lines("2025-11-25", call=True))
        server.stdin.flush()
        lines = Lines(server.stdout)
        for _ in range(4):
            lines.next(60.0)  # the SDK is up and served the call
        started = time.monotonic()
        server.send_signal(signum)
        assert server.wait(timeout=10) == 0
        assert time.monotonic() - started < 2.0
        assert server.stderr is not None and b"Traceback" not in server.stderr.read()
    finally:
        server.kill()
        server.wait()


# --- what hosts send first, while the SDK loads ---------------------------------------------------------

FIRST_MESSAGES = Path(__file__).resolve().parent.parent / "data" / "first-messages"


@pytest.mark.parametrize("recording", ["codex-exec-turn", "claude-p-turn", "qwen-p-turn", "gemini-p-turn"])
def test_a_hosts_first_requests_are_answered_while_the_sdk_is_still_loading(tmp_path: Path, recording: str) -> None:
    sent = json.loads((FIRST_MESSAGES / f"{recording}.json").read_text(encoding="utf-8"))["sent"]
    first = []
    for message in sent:
        if message.get("method") in ("tools/call", "notifications/cancelled"):
            break
        first.append(message)
    call = {"jsonrpc": "2.0", "id": "the-call", "method": "tools/call", "params": CALL}
    if first[0].get("method") == "server/discover":
        call["params"] = {**CALL, "_meta": first[0]["params"]["_meta"]}
    server = subprocess.Popen(
        [installed("codescout-mcp")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=slow_sdk(tmp_path, 6.0),
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        started = time.monotonic()
        server.stdin.write(b"".join(line(message) for message in [*first, call]))
        server.stdin.flush()
        lines = Lines(server.stdout)
        wanted = [m["id"] for m in first if "id" in m]
        got = [lines.next(5.0)["id"] for _ in wanted]
        answer = lines.next(5.0)  # the door answers the call: it does not wait for the SDK either
        assert got == wanted and time.monotonic() - started < 5.0
        assert answer["id"] == "the-call" and answer["result"]["structuredContent"]["results"][0]["score"] == 296
        server.stdin.close()
        assert server.wait(timeout=30) == 0
    finally:
        server.kill()
        server.wait()


def broken_sdk(tmp_path: Path) -> dict[str, str]:
    """An environment in which the SDK cannot be imported (a broken install)."""
    (tmp_path / "sitecustomize.py").write_text(
        "import builtins\n"
        "_real = builtins.__import__\n"
        "def _import(name, *args, **kwargs):\n"
        "    if name.split('.')[0] in ('mcp', 'mcp_types'):\n"
        "        raise ImportError('No module named ' + repr(name) + ' (a broken install)')\n"
        "    return _real(name, *args, **kwargs)\n"
        "builtins.__import__ = _import\n",
        encoding="utf-8",
    )
    return {**os.environ, "PYTHONPATH": str(tmp_path)}


def test_an_sdk_that_will_not_load_answers_every_request_and_exits_1(tmp_path: Path) -> None:
    only_the_sdk = line({"jsonrpc": "2.0", "id": 5, "method": "prompts/get", "params": {"name": "x"}})
    done = subprocess.run(
        [installed("codescout-mcp")],
        input=handshake_lines("2025-11-25", call=True) + only_the_sdk,
        capture_output=True,
        env=broken_sdk(tmp_path),
        timeout=60,
        check=False,
    )
    assert done.returncode == 1
    replies = {json.loads(raw)["id"]: json.loads(raw) for raw in done.stdout.splitlines()}
    assert set(replies) == {1, "list", 3, 4, 5}  # answered early, the door's call, and one that waited for the SDK
    assert replies[4]["result"]["structuredContent"]["counts"] == {"hits": 1, "returned": 1}
    assert replies[5]["error"]["code"] == -32603
    assert replies[5]["error"]["message"].startswith("Internal error: the server cannot load the MCP SDK (ImportError:")
    stderr = done.stderr.decode()
    assert "Traceback" not in stderr and stderr.count("\n") == 1
    assert "cannot serve MCP: the MCP SDK failed to load (ImportError: No module named" in stderr


# --- a signal at any moment -----------------------------------------------------------------------------


def slow_start(tmp_path: Path, marker: Path) -> dict[str, str]:
    """An environment in which the server's start pauses (at argparse's import) after saying so."""
    (tmp_path / "sitecustomize.py").write_text(
        "import builtins, time\n"
        "_real = builtins.__import__\n"
        "_done = []\n"
        "def _import(name, *args, **kwargs):\n"
        "    if name == 'argparse' and not _done:\n"
        f"        _done.append(1); open({str(marker)!r}, 'w').close(); time.sleep(5)\n"
        "    return _real(name, *args, **kwargs)\n"
        "builtins.__import__ = _import\n",
        encoding="utf-8",
    )
    return {**os.environ, "PYTHONPATH": str(tmp_path)}


@posix_only(SIGNALS)
@pytest.mark.parametrize("signum", [signal.SIGTERM, signal.SIGINT])
def test_a_signal_while_the_server_is_still_starting_stops_it_at_once(tmp_path: Path, signum: int) -> None:
    marker = tmp_path / "starting"
    server = subprocess.Popen(
        [installed("codescout-mcp")],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=slow_start(tmp_path, marker),
    )
    try:
        deadline = time.monotonic() + 30
        while not marker.exists():
            assert time.monotonic() < deadline and server.poll() is None, "the server never started"
            time.sleep(0.01)
        started = time.monotonic()
        server.send_signal(signum)
        assert server.wait(timeout=10) == 0
        assert time.monotonic() - started < 1.0
        assert server.stderr is not None and server.stderr.read() == b""
    finally:
        server.kill()
        server.wait()


def test_stdin_ending_while_nobody_reads_stdout_leaves_at_once(tmp_path: Path) -> None:
    """The client closed its end of stdout, then stdin, while the SDK loads: nothing can be answered."""
    read_end, write_end = os.pipe()
    server = subprocess.Popen(
        [installed("codescout-mcp")],
        stdin=subprocess.PIPE,
        stdout=write_end,
        stderr=subprocess.PIPE,
        env=slow_sdk(tmp_path, 20.0),
    )
    os.close(write_end)
    os.close(read_end)  # nobody reads the answers
    assert server.stdin is not None
    try:
        server.stdin.write(handshake_lines("2025-11-25", call=True))
        server.stdin.close()
        started = time.monotonic()
        assert server.wait(timeout=15) == 0
        assert time.monotonic() - started < 5
        assert server.stderr is not None and b"Traceback" not in server.stderr.read()
    finally:
        server.kill()
        server.wait()
