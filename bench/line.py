"""Requests waiting in the HTTP server's line: what they cost it, against docs/http.md's formula.

    python bench/line.py            # 10,000 requests of 100 KB behind one slot
    python bench/line.py --smoke    # 200: the script still works

One request takes the one slot (`--max-concurrent 1`) and never finishes its body; the rest
send their whole request and wait. Reported: the server's resident memory before and after,
per waiting request, and the peak against the formula (80 MiB + 42 x --max-buffered-bytes +
32 KiB a waiting connection). Linux only (/proc); it raises its own limit on open files to the
hard one, which must allow the count.
"""

from __future__ import annotations

import argparse
import json
import resource
import socket
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench import report
from codescout_mcp import limits
from tests.httpserver import CALL, RunningServer


def request(body: bytes) -> bytes:
    head = (
        "POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json\r\n"
        f"Content-Length: {len(body)}\r\n\r\n"
    )
    return head.encode() + body


def resident_mib(pid: int) -> float:
    with open(f"/proc/{pid}/status", encoding="ascii") as status:
        return next(int(line.split()[1]) / 1024 for line in status if line.startswith("VmRSS:"))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="a small line: check the script runs")
    parser.add_argument("--count", type=int, help="requests waiting (default 10,000; smoke 200)")
    args = parser.parse_args()
    count = args.count or (200 if args.smoke else 10_000)
    if sys.platform == "win32":
        raise SystemExit("line: needs POSIX (resource limits, thousands of sockets)")
    hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    call: dict[str, Any] = json.loads(json.dumps(CALL))
    call["params"]["arguments"]["pad"] = "x" * 100_000
    body = json.dumps(call).encode()
    server = RunningServer("--max-concurrent", "1", "--request-timeout", "600", "--max-body-bytes", str(1 << 20))
    waiting: list[socket.socket] = []
    try:
        slow = socket.create_connection(("127.0.0.1", server.port))
        slow.sendall(request(body)[:-10])
        time.sleep(0.5)
        before = resident_mib(server.proc.pid)
        for _ in range(count):
            client = socket.create_connection(("127.0.0.1", server.port))
            client.sendall(request(body))
            waiting.append(client)
        time.sleep(2)
        after = resident_mib(server.proc.pid)
        peak = server.peak_rss_mib()
        formula = 80 + 42 * limits.MAX_BUFFERED_BYTES / limits.MIB + 32 * count / 1024
        each = (after - before) * 1024 / count
        print(
            f"{count:,} requests of {len(body):,} bytes waiting: {before:.0f} MiB -> {after:.0f} MiB, "
            f"{each:.1f} KiB each"
        )
        ok = report(
            f"{count:,} waiting: peak RSS / formula", peak / formula, 1.0, f"{peak:.0f} MiB against {formula:.0f} MiB"
        )
        slow.close()
    finally:
        for client in waiting:
            client.close()
        server.stop()
    return 0 if args.smoke or ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
