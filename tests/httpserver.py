"""`codescout mcp --transport streamable-http` as a subprocess on a free loopback port."""

from __future__ import annotations

import http.client
import json
import os
import re
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from typing import Any

from codescout_mcp.core.contract import TOOL_NAME
from tests.helpers import EXAMPLE, codescout_exe
from tests.platforms import ask_to_stop, stoppable

CALL = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "tools/call",
    "params": {"name": TOOL_NAME, "arguments": json.loads(EXAMPLE.read_text(encoding="utf-8"))},
}


def open_files_limit(count: int) -> Callable[[], None]:
    """For preexec_fn: the child may hold at most `count` descriptors (POSIX only)."""
    if sys.platform == "win32":
        raise RuntimeError("Windows has no descriptor limit to set (RLIMIT_NOFILE)")
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (count, count))

    return limit


def child_setup(nofile: int | None, hangup: Any) -> Callable[[], None] | None:
    """For preexec_fn: the descriptor limit and SIGHUP's disposition, each if asked for."""
    steps = [] if nofile is None else [open_files_limit(nofile)]
    if hangup is not None:
        import signal

        hup = signal.SIGHUP  # type: ignore[attr-defined, unused-ignore]  # POSIX-only
        steps.append(lambda: signal.signal(hup, hangup))  # type: ignore[arg-type, unused-ignore]
    if not steps:
        return None

    def setup() -> None:
        for step in steps:
            step()

    return setup


class RunningServer:
    """The HTTP server, started as a user would; its stderr is read all along (never blocks it)."""

    def __init__(
        self,
        *args: str,
        token: str | None = None,
        env: dict[str, str] | None = None,
        nofile: int | None = None,
        hangup: Any = None,
    ) -> None:
        """`hangup` (POSIX): SIGHUP's disposition for the server alone (signal.SIG_DFL, SIG_IGN as
        under `nohup`), whatever this run inherited; None leaves it as inherited."""
        environment = {k: v for k, v in os.environ.items() if k != "CODESCOUT_AUTH_TOKEN"}
        if token is not None:
            environment["CODESCOUT_AUTH_TOKEN"] = token
        environment.update(env or {})

        self.proc = subprocess.Popen(
            [codescout_exe(), "mcp", "--transport", "streamable-http", "--port", "0", *args],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=environment,
            preexec_fn=child_setup(nofile, hangup),
            **stoppable(),
        )
        assert self.proc.stderr is not None
        self.banner = ""
        while "serving MCP" not in self.banner:
            line = self.proc.stderr.readline().decode()
            if not line:
                raise AssertionError(f"server did not start: {self.banner}")
            self.banner += line
        found = re.search(r"(https?)://(\S+?):(\d+)/mcp", self.banner)
        assert found is not None
        self.scheme = found.group(1)
        self.host = found.group(2).strip("[]")
        self.port = int(found.group(3))
        self.url = f"{self.scheme}://127.0.0.1:{self.port}/mcp"
        self._log: list[bytes] = []
        self._reader = threading.Thread(target=self._drain, daemon=True)
        self._reader.start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for line in iter(self.proc.stderr.readline, b""):
            self._log.append(line)

    @property
    def log(self) -> str:
        return self.banner + b"".join(self._log).decode("utf-8", "replace")

    def post(self, body: bytes, headers: dict[str, str] | None = None, *, path: str = "/mcp") -> tuple[int, bytes]:
        status, _, data = self.request("POST", body, headers, path=path)
        return status, data

    def request(
        self, method: str, body: bytes = b"", headers: dict[str, str] | None = None, *, path: str = "/mcp"
    ) -> tuple[int, dict[str, str], bytes]:
        connection = http.client.HTTPConnection("127.0.0.1", self.port, timeout=30)
        try:
            sent = {
                "Content-Type": "application/json",
                "Accept": "application/json, text/event-stream",
                "MCP-Protocol-Version": "2025-11-25",
                **(headers or {}),
            }
            connection.putrequest(method, path, skip_host="Host" in sent)
            for name, value in sent.items():
                connection.putheader(name, value)
            connection.putheader("Content-Length", str(len(body)))
            connection.endheaders(body)
            response = connection.getresponse()
            return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
        finally:
            connection.close()

    def call(self, headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        return self.post(json.dumps(CALL).encode(), headers)

    def call_result(self) -> Any:
        status, body = self.call()
        assert status == 200, body
        return json.loads(body)["result"]

    def peak_rss_mib(self) -> float:
        """The server's peak resident memory so far, in MiB (Linux: /proc)."""
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024
        raise AssertionError("no VmHWM in /proc/PID/status")

    def stop(self, timeout: float = 20) -> tuple[int, str]:
        """Ask the server to stop as a user would (SIGTERM; Ctrl-Break on Windows); its status and log."""
        ask_to_stop(self.proc)
        self.proc.wait(timeout=timeout)
        self._reader.join(timeout=5)
        return self.proc.returncode, self.log


def serving(*args: str, **options: Any) -> Iterator[RunningServer]:
    """For fixtures: a running server, then a check that it stopped cleanly (status 0, no traceback)."""
    running = RunningServer(*args, **options)
    yield running
    status, log = running.stop()
    assert status == 0, log
    assert "Traceback" not in log
