"""Soak the HTTP server: slow clients beside normal traffic, then the worst the default limits admit.

    python bench/soak.py            # 1,000 slow connections; 40 clients x 2 waves of 29.5 MiB calls
    python bench/soak.py --smoke    # 50 slow connections; 5 clients x 2 waves of 2 MiB calls

Phase 1: slow connections trickle request headers a byte a second while client threads send
100-hit calls. Reported: requests served, their p50 and p99 (against the same traffic with no
slow clients, measured first, in the same run), the server's peak RSS, and how many slow
connections are still open once --request-timeout has passed.
Phase 2: more large calls than --max-concurrent at once, in two waves (the second starts as
the first ends); a call refused with 503 is sent again after its Retry-After, within
RETRY_FOR seconds. Reported: every call's first answer in both waves (how many 200, how
many 503: served without a retry), every attempt's status (none may be lost or reset), how
many calls were served in the end, and the server's peak RSS against docs/http.md's formula
(`peak_budget_mib`) and against 1.5 GiB.
Phase 3: the largest answers for the bytes: calls of tiny hits whose limit returns every
hit, first the largest the limits admit alone, then as many smaller ones at once as the byte
budget admits. Reported: peak RSS against the formula.
Before both, one call alone gives the server's memory per MiB of body (peak less idle).
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

# The peak-memory formula of docs/http.md: the idle server plus, for each byte the
# budget (--max-buffered-bytes) admits, what serving it may cost at worst (tiny hits, every
# one returned: the parsed hits, their copies, the results and the answer's text and bytes).
IDLE_MIB = 80
WORST_PER_MIB = 42
# How long a client keeps sending a call refused with 503 again.
RETRY_FOR = 300.0


def peak_budget_mib(max_buffered_bytes: int) -> float:
    """The most memory docs/http.md says the server may use with this --max-buffered-bytes."""
    return IDLE_MIB + WORST_PER_MIB * max_buffered_bytes / 2**20


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
    status, elapsed, _ = post_read(port, body, timeout)
    return status, elapsed


def post_read(port: int, body: bytes, timeout: float = 120) -> tuple[int, float, str | None]:
    """A POST's status, its time, and its Retry-After header."""
    start = time.perf_counter()
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        connection.request("POST", "/mcp", body, {**HEADERS, "Content-Length": str(len(body))})
        response = connection.getresponse()
        response.read()
        return response.status, time.perf_counter() - start, response.getheader("Retry-After")
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
    return call_for({"hits": make_hits(hits), "limit": 5})


def tiny_hits_body(size: int) -> bytes:
    """A call of about `size` bytes of the smallest hits there are, every one of them returned."""
    count = size // 50
    body = b""
    for _ in range(3):  # the hits' size varies with their number: scale to fit under `size`
        hits = [{"path": str(i), "matches": 1 + i % 7, "last_modified_days": i % 11} for i in range(count)]
        body = call_for({"hits": hits, "limit": count})
        if len(body) <= size:
            break
        count = int(count * size / len(body) * 0.999)
    return body


def call_for(arguments: dict[str, object]) -> bytes:
    message = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": "rank_search_results", "arguments": arguments},
    }
    return json.dumps(message, separators=(",", ":")).encode()


def calling(port: int, body: bytes, attempts: list[int], served: list[bool]) -> None:
    """One client's call: sent again after Retry-After while it gets 503, within RETRY_FOR seconds."""
    deadline = time.monotonic() + RETRY_FOR
    while True:
        try:
            status, _, retry_after = post_read(port, body, timeout=600)
        except OSError:
            attempts.append(0)  # reset, or closed before an answer could be read
            served.append(False)
            return
        attempts.append(status)
        if status != 503 or time.monotonic() > deadline:
            served.append(status == 200)
            return
        time.sleep(float(retry_after or 1))


def at_once(limits: list[str], body: bytes, count: int) -> tuple[list[int], float]:
    """`count` copies of one call sent at once to a fresh server: their statuses, and its peak RSS in MiB."""
    server = Server("--request-timeout", "300", *limits)
    try:
        answers: list[int] = []
        threads = [
            threading.Thread(target=lambda: answers.append(post(server.port, body, timeout=600)[0]))
            for _ in range(count)
        ]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return answers, server.memory_kib("VmHWM") / 1024
    finally:
        server.stop()


def counted(statuses: list[int]) -> dict[int, int]:
    found: dict[int, int] = {}
    for status in statuses:
        found[status] = found.get(status, 0) + 1
    return dict(sorted(found.items()))


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

    slow, seconds, timeout = (50, 2.0, 2) if args.smoke else (1_000, 20.0, 10)
    large_mib, cap = (2.0, 4) if args.smoke else (29.5, 32)
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

    budget = 32 * 2**20  # the default --max-buffered-bytes
    formula = peak_budget_mib(budget)
    server = Server("--max-concurrent", str(cap), "--request-timeout", "300")
    try:
        idle = server.memory_kib("VmRSS")
        hits = int(large_mib * 2**20 // 105)
        big = call_body(hits)
        hits = int(hits * large_mib * 2**20 / len(big))  # the hits' size varies: scale to the size asked for
        big = call_body(hits)
        status, _ = post(server.port, big, timeout=600)
        alone = server.memory_kib("VmHWM")
        per_mib = (alone - idle) / 1024 / (len(big) / 2**20)
        print(f"one call of {len(big) / 2**20:.1f} MiB alone: {status}, {per_mib:.2f} MiB of memory per MiB of body")
        sending = cap + cap // 4
        print(
            f"phase 2: {sending} clients x 2 waves of {len(big) / 2**20:.1f} MiB calls ({hits:,} hits), "
            f"--max-concurrent {cap}, --max-buffered-bytes {budget}"
        )
        first: list[int] = []
        attempts: list[int] = []
        served: list[bool] = []
        for _wave in range(2):
            barrier = threading.Barrier(sending)
            wave_attempts: list[list[int]] = [[] for _ in range(sending)]

            def one(mine: list[int], barrier: threading.Barrier) -> None:
                barrier.wait()
                calling(server.port, big, mine, served)

            threads = [threading.Thread(target=one, args=(mine, barrier)) for mine in wave_attempts]
            for thread in threads:
                thread.start()
            for thread in threads:
                thread.join()
            first += [mine[0] for mine in wave_attempts if mine]
            attempts += [status for mine in wave_attempts for status in mine]
        peak = server.memory_kib("VmHWM") / 1024
        print(f"  first attempts, both waves: {counted(first)}")
        share = first.count(200) / len(first)
        print(f"  served without a retry: {first.count(200)} of {len(first)} calls ({share:.0%})")
        print(f"  every attempt: {counted(attempts)}; lost or reset: {attempts.count(0)}")
        print(f"  served in the end: {sum(served)} of {len(served)} calls")
        print(
            f"  server RSS idle {idle / 1024:.0f} MiB, peak {peak:.0f} MiB; formula {formula:.0f} MiB "
            f"({'under' if peak < formula else 'OVER'}), 1.5 GiB ({'under' if peak < 1536 else 'OVER'})"
        )
    finally:
        server.stop()

    # The smoke keeps this phase small: a 4 MiB budget (and body cap) instead of the default.
    tiny_budget = 4 * 2**20 if args.smoke else budget
    formula = peak_budget_mib(tiny_budget)
    limits = ["--max-body-bytes", str(tiny_budget), "--max-buffered-bytes", str(tiny_budget)]
    # The largest such call the limits admit, alone; then four or five smaller ones at once.
    for size in (tiny_budget - 2**16, tiny_budget // 5):
        tiny = tiny_hits_body(size)
        together = tiny_budget // len(tiny)
        print(
            f"phase 3: {together} call{'s' if together > 1 else ''} of {len(tiny) / 2**20:.1f} MiB of tiny hits, "
            f"every hit returned, at once, --max-buffered-bytes {tiny_budget}"
        )
        answers, peak = at_once(limits, tiny, together)
        print(f"  answers: {counted(answers)}")
        print(f"  server peak RSS {peak:.0f} MiB; formula {formula:.0f} MiB ({'under' if peak < formula else 'OVER'})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
