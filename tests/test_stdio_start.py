"""The stdio server's first moments: the handshake at once, the SDK's own bytes, any event loop.

* `handshake.json` holds exactly what the SDK answers (recorded again here and compared),
  and the early answers on the wire are byte for byte the SDK's;
* the handshake is answered while the SDK is still loading (made to load slowly here);
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

from codescout_mcp.handshake import DATA, fingerprint, record
from codescout_mcp.protocol import HANDSHAKE_VERSIONS
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


def answers(argv: list[str], data: bytes, env: dict[str, str] | None = None) -> dict[object, bytes]:
    """Each answer's bytes, by id."""
    done = subprocess.run(argv, input=data, capture_output=True, timeout=120, env=env, check=False)
    assert done.returncode == 0, done.stderr
    return {json.loads(raw)["id"]: raw for raw in done.stdout.splitlines()}


def test_the_recorded_handshake_is_what_the_sdk_answers_now() -> None:
    stored = json.loads(Path(DATA).read_text(encoding="utf-8"))
    assert stored["fingerprint"] == fingerprint(), "run `python -m codescout_mcp.handshake`"
    assert record() == stored


@pytest.mark.parametrize("workspace", [False, True])
@pytest.mark.parametrize("version", [*HANDSHAKE_VERSIONS, "2099-01-01"])
def test_early_answers_are_the_sdks_byte_for_byte(version: str, workspace: bool, tmp_path: Path) -> None:
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
        call = lines.next(60.0)  # the call waits for the SDK
        assert call["id"] == 4 and call["result"]["structuredContent"]["results"][0]["score"] == 296
        assert handshake_done < 5.0 <= time.monotonic() - started
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
    "from codescout_mcp.cli import mcp_main\n"
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
