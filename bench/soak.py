"""Soak the HTTP server: slow clients beside normal traffic, then large calls at the concurrency cap.

    python bench/soak.py            # 1,000 slow connections; 30 MiB calls at --max-concurrent 32
    python bench/soak.py --smoke    # 50 slow connections; 2 MiB calls at --max-concurrent 4

Phase 1: slow connections trickle request headers a byte a second while client threads send
100-hit calls. Reported: requests served, their p50 and p99 (against the same traffic with no
slow clients, measured first, in the same run), the server's peak RSS, and how many slow
connections are still open once --request-timeout has passed.
Phase 2: more large calls than --max-concurrent at once. Reported: how many were served and
how many got 503, and the server's peak RSS against its RSS when idle.
"""

from __future__ import annotations

import argparse
import http.client
import json
import re
import socket
import statistics
import subprocess
import sys
import threading
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import contextlib

from bench.bench import CODESCOUT, make_hits

HEADERS = {"Content-Type": "application/json", "Accept": "application/json, text/event-stream"}


class Server:
    def __init__(self, *args: str) -> None:
        self.proc = subprocess.Popen(
            [CODESCOUT, "mcp", "--transport", "streamable-http", "--port", "0", *args],
            stderr=subprocess.PIPE,
            stdout=subprocess.DEVNULL,
        )
        assert self.proc.stderr is not None
        line = self.proc.stderr.readline().decode()
        found = re.search(r":(\d+)/mcp", line)
        if found is None:
            raise SystemExit(f"server did not start: {line}")
        self.port = int(found.group(1))
        threading.Thread(target=self._drain, daemon=True).start()

    def _drain(self) -> None:
        assert self.proc.stderr is not None
        for _ in iter(self.proc.stderr.readline, b""):
            pass

    def memory_kib(self, field: str) -> int:
        with open(f"/proc/{self.proc.pid}/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field + ":"):
                    return int(line.split()[1])
        raise SystemExit(f"no {field}")

    def stop(self) -> int:
        self.proc.terminate()
        return self.proc.wait(timeout=60)


def post(port: int, body: bytes, timeout: float = 120) -> tuple[int, float]:
    start = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", "/mcp", body, {**HEADERS, "Content-Length": str(len(body))})
        response = connection.getresponse()
        response.read()
        return response.status, time.perf_counter() - start
    finally:
        connection.close()


def traffic(port: int, body: bytes, clients: int, seconds: float) -> list[tuple[int, float]]:
    results: list[tuple[int, float]] = []
    deadline = time.monotonic() + seconds

    def client() -> None:
        while time.monotonic() < deadline:
            try:
                results.append(post(port, body, timeout=30))
            except OSError:
                results.append((0, 0.0))

    threads = [threading.Thread(target=client) for _ in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return results


def summary(results: list[tuple[int, float]]) -> str:
    served = sorted(t for status, t in results if status == 200)
    if not served:
        return "nothing served"
    p99 = served[min(len(served) - 1, int(len(served) * 0.99))]
    p50 = statistics.median(served)
    return f"{len(served)} served ({len(results) - len(served)} not), p50 {p50 * 1000:.1f} ms, p99 {p99 * 1000:.1f} ms"


def call_body(hits: int) -> bytes:
    arguments = {"hits": make_hits(hits), "limit": 5}
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "rank_search_results", "arguments": arguments},
    }
    return json.dumps(message).encode()


def slow_clients(port: int, count: int, stop: threading.Event) -> list[socket.socket]:
    """`count` connections, each sending its headers a byte a second, until `stop` or closed."""
    sockets: list[socket.socket] = []
    for _ in range(count):
        sock = socket.create_connection(("127.0.0.1", port))
        sock.setblocking(False)
        sockets.append(sock)
    request = b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"

    def trickle() -> None:
        for position in range(len(request)):
            if stop.wait(1.0):
                return
            for sock in sockets:
                with contextlib.suppress(OSError):
                    sock.send(request[position : position + 1])

    threading.Thread(target=trickle, daemon=True).start()
    return sockets


def still_open(sockets: list[socket.socket]) -> int:
    open_count = 0
    for sock in sockets:
        try:
            data = sock.recv(65536)
            while data:
                data = sock.recv(65536)
        except BlockingIOError:
            open_count += 1  # nothing to read and not closed
        except OSError:
            pass
    return open_count


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true")
    args = parser.parse_args()
    if sys.platform != "linux":
        raise SystemExit("soak.py reads the server's memory from /proc and raises its descriptor limit: Linux only")
    import resource

    slow, seconds, timeout = (50, 4.0, 3) if args.smoke else (1_000, 20.0, 10)
    large_mib, cap = (2, 4) if args.smoke else (30, 32)
    _soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))  # the server inherits it

    server = Server("--request-timeout", str(timeout))
    body = call_body(100)
    try:
        print(f"phase 1: {slow} slow connections (timeout {timeout} s) beside 8 clients of 100-hit calls")
        quiet = traffic(server.port, body, clients=8, seconds=seconds / 2)
        print(f"  no slow clients:   {summary(quiet)}")
        stop = threading.Event()
        started = time.monotonic()
        sockets = slow_clients(server.port, slow, stop)
        loaded = traffic(server.port, body, clients=8, seconds=seconds)
        print(f"  with slow clients: {summary(loaded)}")
        time.sleep(max(0.0, timeout + 2 - (time.monotonic() - started)))
        stop.set()
        print(f"  slow connections still open {timeout + 2} s after they began: {still_open(sockets)} of {slow}")
        print(f"  server peak RSS: {server.memory_kib('VmHWM') / 1024:.0f} MiB")
        for sock in sockets:
            sock.close()
    finally:
        server.stop()

    server = Server("--max-concurrent", str(cap), "--request-timeout", "300")
    try:
        idle = server.memory_kib("VmRSS")
        hits = large_mib * 1024 * 1024 // 110
        big = call_body(hits)
        sending = cap + cap // 4
        print(f"phase 2: {sending} calls of {len(big) / 2**20:.0f} MiB ({hits:,} hits) at once, --max-concurrent {cap}")
        results: list[tuple[int, float]] = []
        barrier = threading.Barrier(sending)

        def one() -> None:
            barrier.wait()
            try:
                results.append(post(server.port, big, timeout=600))
            except OSError:
                results.append((0, 0.0))  # reset before an answer could be read

        threads = [threading.Thread(target=one) for _ in range(sending)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        statuses: dict[int, int] = {}
        for status, _ in results:
            statuses[status] = statuses.get(status, 0) + 1
        peak = server.memory_kib("VmHWM")
        print(f"  answers: {dict(sorted(statuses.items()))}")
        print(
            f"  server RSS idle {idle / 1024:.0f} MiB, peak {peak / 1024:.0f} MiB, "
            f"{(peak - idle) / 1024 / max(1, min(cap, statuses.get(200, 1))):.0f} MiB per call in flight"
        )
    finally:
        server.stop()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
