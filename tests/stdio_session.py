"""`codescout-mcp` on a pipe, initialized, one request at a time: for tests that hold a session
open between steps (a checkout changed under it, a background walk waited for)."""

from __future__ import annotations

import json
import select
import subprocess
import sys
import time
from typing import Any

from tests.gitrepo import env_for
from tests.helpers import installed


class LiveSession:
    """`codescout-mcp *ARGS` over stdio; each request waits at most `seconds` for its answer."""

    def __init__(self, *args: str, env: dict[str, str] | None = None, seconds: float = 60) -> None:
        self.seconds = seconds
        self.proc = subprocess.Popen(
            [installed("codescout-mcp"), *args],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
            env=env_for() if env is None else env,
        )
        self.next_id = 1
        self.request(
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        )
        self.send({"jsonrpc": "2.0", "method": "notifications/initialized"})

    def send(self, message: dict[str, Any]) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps(message).encode() + b"\n")
        self.proc.stdin.flush()

    def request(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        rid = self.next_id
        self.next_id += 1
        self.send({"jsonrpc": "2.0", "id": rid, "method": method, "params": params})
        assert self.proc.stdout is not None
        deadline = time.monotonic() + self.seconds
        while True:
            if sys.platform != "win32":  # (a pipe cannot be waited on with select on Windows)
                ready, _, _ = select.select([self.proc.stdout], [], [], max(0.0, deadline - time.monotonic()))
                assert ready, f"no answer to {method} in {self.seconds} s"
            line = self.proc.stdout.readline()
            assert line, "the server closed its output"
            reply: dict[str, Any] = json.loads(line)
            if reply.get("id") == rid:
                return reply

    def call(self, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = self.request("tools/call", {"name": name, "arguments": arguments})["result"]
        return result

    def close(self) -> int:
        """Close its input and wait for it to end: its exit status."""
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        return self.proc.wait(timeout=60)
