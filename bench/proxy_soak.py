"""Soak three codescout replicas behind nginx, Caddy or HAProxy, configured as docs/proxies.md says.

    python bench/proxy_soak.py                          # every proxy, 20 s a phase, 8 client threads
    python bench/proxy_soak.py --proxy nginx --seconds 60 --threads 16

For each proxy, three phases of the same traffic (client threads sending the example
tools/call over and over on kept-alive connections, each answer checked against the example's
ranking), each `--seconds` long:

1. direct: straight to one replica, no proxy (the baseline for latency);
2. steady: through the proxy (over TLS) to three replicas;
3. faults: through the proxy while one replica is killed with SIGKILL a third of the way in
   and another stopped with SIGTERM at two thirds (it must finish what it holds and exit 0).

Reported for each phase: calls, answers by kind, p50 and p99 latency of the calls answered
200. The kinds a client may retry (the tools are read-only) are 502, 503 and 504, a
connection closed before an answer and an answer cut short; anything else (another status,
a 200 with a ranking that is not the example's) is lost. For the faults phase also: the
failures after each fault, and the stopped replica's exit status and the calls it finished
after the signal. The proxies are installed from Debian when missing (as root).
"""

from __future__ import annotations

import argparse
import collections
import http.client
import json
import re
import ssl
import statistics
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from tests.helpers import EXAMPLE_RESULT
from tests.httpserver import CALL, RunningServer
from tests.proxies import MCP_HEADERS, PROXIES, PUBLIC_NAME, RunningProxy, Tls, start_proxy, start_replicas

RETRYABLE_STATUSES = ("502", "503", "504")
# A connection that failed without a whole answer: the call may or may not have run, and since
# the tools are read-only a client may send it again, as it may after 502, 503 and 504.
CLOSED = "closed before an answer"
CUT = "answer cut short"
RETRYABLE = (*RETRYABLE_STATUSES, CLOSED, CUT)
BODY = json.dumps(CALL).encode()


@dataclass
class Tally:
    """What the clients of one phase saw."""

    seconds: float = 0.0
    started: float = 0.0  # time.monotonic() when the phase began
    answers: collections.Counter[str] = field(default_factory=collections.Counter)  # by kind
    latencies: list[float] = field(default_factory=list)  # seconds, of calls answered 200 with the right ranking
    failures: list[tuple[float, str]] = field(default_factory=list)  # (seconds into the phase, kind), all but 200
    # The first body of each status other than 200, which says who answered it (the proxy or a replica).
    bodies: dict[str, str] = field(default_factory=dict)

    @property
    def calls(self) -> int:
        return sum(self.answers.values())

    @property
    def retryable(self) -> int:
        return sum(self.answers[kind] for kind in RETRYABLE)

    @property
    def lost(self) -> int:
        """Calls answered neither 200 with the example's ranking nor in a way a client may retry."""
        return self.calls - self.answers["200"] - self.retryable

    def percentile_ms(self, share: float) -> float:
        if len(self.latencies) < 2:
            return self.latencies[0] * 1000 if self.latencies else float("nan")
        cuts = statistics.quantiles(self.latencies, n=100, method="inclusive")
        return cuts[round(share * 100) - 1] * 1000

    def summary(self) -> str:
        kinds = ", ".join(f"{kind}: {count}" for kind, count in sorted(self.answers.items()))
        return (
            f"{self.calls} calls in {self.seconds:.1f} s ({kinds}); retryable {self.retryable}, lost {self.lost}; "
            f"p50 {self.percentile_ms(0.5):.1f} ms, p99 {self.percentile_ms(0.99):.1f} ms"
        )


class Client(threading.Thread):
    """One client: the example call again and again on one kept-alive connection, reopened after a failure."""

    def __init__(self, port: int, tls: ssl.SSLContext | None, host: str, until: float, tally: Tally) -> None:
        super().__init__(daemon=True)
        self.port, self.tls, self.host, self.until, self.tally = port, tls, host, until, tally
        self.connection: http.client.HTTPConnection | None = None

    def connect(self) -> http.client.HTTPConnection:
        if self.tls is None:
            return http.client.HTTPConnection("127.0.0.1", self.port, timeout=60)
        return http.client.HTTPSConnection("localhost", self.port, timeout=60, context=self.tls)

    def run(self) -> None:
        while time.monotonic() < self.until:
            kind, took = self.call()
            with LOCK:
                self.tally.answers[kind] += 1
                if kind == "200":
                    self.tally.latencies.append(took)
                else:
                    self.tally.failures.append((time.monotonic() - self.tally.started, kind))
        if self.connection is not None:
            self.connection.close()

    def call(self) -> tuple[str, float]:
        """One call's kind of answer, and how long it took."""
        if self.connection is None:
            self.connection = self.connect()
        started = time.perf_counter()
        try:
            self.connection.request("POST", "/mcp", BODY, {**MCP_HEADERS, "Host": self.host})
            response = self.connection.getresponse()
            body = response.read()
        except http.client.IncompleteRead:
            kind = CUT
        except (OSError, http.client.HTTPException):  # reset, refused, closed with no status line
            kind = CLOSED
        else:
            took = time.perf_counter() - started
            if response.will_close:
                self.connection.close()
                self.connection = None
            if response.status != 200:
                with LOCK:
                    self.tally.bodies.setdefault(str(response.status), body[:120].decode("utf-8", "replace").strip())
                return str(response.status), took
            right = json.loads(body).get("result", {}).get("structuredContent") == EXAMPLE_RESULT
            return ("200" if right else "200 with a wrong answer"), took
        self.connection.close()
        self.connection = None
        return kind, 0.0


LOCK = threading.Lock()


def hammer(
    port: int,
    tls: ssl.SSLContext | None,
    host: str,
    seconds: float,
    threads: int,
    during: threading.Thread | None = None,
) -> Tally:
    """`threads` clients calling for `seconds`, with `during` (the faults) started alongside."""
    started = time.monotonic()
    tally = Tally(seconds=seconds, started=started)
    clients = [Client(port, tls, host, started + seconds, tally) for _ in range(threads)]
    for client in clients:
        client.start()
    if during is not None:
        during.start()
    for client in clients:
        client.join()
    if during is not None:
        during.join()
    return tally


@dataclass
class GracefulStop:
    """When the faults came (seconds into the phase), and what the replica stopped with SIGTERM did after it."""

    killed_at: float = 0.0
    stopped_at: float = 0.0
    status: int | None = None
    finished: collections.Counter[str] = field(default_factory=collections.Counter)  # its answers logged after it

    def summary(self) -> str:
        finished = ", ".join(f"{status}: {count}" for status, count in sorted(self.finished.items())) or "none"
        return f"exit status {self.status}; calls it finished after SIGTERM ({finished})"


def faults(killed: RunningServer, stopped: RunningServer, seconds: float, outcome: GracefulStop) -> threading.Thread:
    """A thread that kills one replica a third of the way into `seconds` and stops another at two thirds."""

    def run() -> None:
        started = time.monotonic()
        time.sleep(seconds / 3)
        outcome.killed_at = time.monotonic() - started
        killed.proc.kill()  # SIGKILL
        killed.proc.wait()
        time.sleep(max(0.0, started + 2 * seconds / 3 - time.monotonic()))
        outcome.stopped_at = time.monotonic() - started
        outcome.status, log = stopped.stop()
        after = log.split("Shutting down", 1)[1] if "Shutting down" in log else ""
        for line in after.splitlines():
            served = re.search(r"codescout: \S+ \S+ -> (\S+) in ", line)
            if served is not None:
                outcome.finished[served.group(1)] += 1

    return threading.Thread(target=run, daemon=True)


@dataclass
class Soak:
    """One proxy's three phases."""

    proxy: str
    direct: Tally
    steady: Tally
    faulty: Tally
    stop: GracefulStop

    def failures_after(self, moment: float, until: float = float("inf")) -> collections.Counter[str]:
        """The faults phase's failures, by kind, from `moment` (seconds into it) until `until`."""
        return collections.Counter(kind for at, kind in self.faulty.failures if moment <= at < until)

    def report(self) -> str:
        def kinds(counts: collections.Counter[str]) -> str:
            return ", ".join(f"{kind}: {count}" for kind, count in sorted(counts.items())) or "none"

        after_kill = kinds(self.failures_after(self.stop.killed_at, self.stop.stopped_at))
        after_stop = kinds(self.failures_after(self.stop.stopped_at))
        said = "".join(f"\n    a {status} said: {body!r}" for status, body in sorted(self.faulty.bodies.items()))
        return (
            f"{self.proxy}:\n  direct to one replica: {self.direct.summary()}\n"
            f"  through {self.proxy}: {self.steady.summary()}\n"
            f"  through {self.proxy}, one replica killed, one stopped: {self.faulty.summary()}\n"
            f"    failures after the SIGKILL ({self.stop.killed_at:.1f} s): {after_kill}; "
            f"after the SIGTERM ({self.stop.stopped_at:.1f} s): {after_stop}\n"
            f"  the replica stopped with SIGTERM: {self.stop.summary()}{said}"
        )


def soak(proxy: str, folder: Path, seconds: float, threads: int, replicas: list[RunningServer] | None = None) -> Soak:
    """Run the three phases through `proxy` (its files in `folder`) in front of three replicas, then stop it.

    The replicas are started here unless given; the first is killed and the second stopped,
    the third (measured alone first) is left running.
    """
    tls = Tls.make(folder / "tls")
    replicas = replicas if replicas is not None else start_replicas(["--log-level", "info"])
    running: RunningProxy | None = None
    try:
        direct = hammer(replicas[2].port, None, "localhost", seconds, threads)
        running = start_proxy(proxy, folder / proxy, [replica.port for replica in replicas], tls)
        context = tls.client_context()
        steady = hammer(running.port, context, PUBLIC_NAME, seconds, threads)
        stop = GracefulStop()
        faulty = hammer(
            running.port, context, PUBLIC_NAME, seconds, threads, faults(replicas[0], replicas[1], seconds, stop)
        )
        return Soak(proxy, direct, steady, faulty, stop)
    finally:
        if running is not None:
            running.stop()
        for replica in replicas[:2]:
            if replica.proc.poll() is None:
                replica.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--proxy", choices=[*PROXIES, "all"], default="all")
    parser.add_argument("--seconds", type=float, default=20.0, help="length of each phase (default 20)")
    parser.add_argument("--threads", type=int, default=8, help="client threads (default 8)")
    options = parser.parse_args()
    proxies = PROXIES if options.proxy == "all" else (options.proxy,)
    with tempfile.TemporaryDirectory(prefix="proxy-soak-") as folder:
        for proxy in proxies:
            replicas = start_replicas(["--log-level", "info"])
            try:
                print(
                    soak(proxy, Path(folder) / proxy, options.seconds, options.threads, replicas).report(), flush=True
                )
            finally:
                replicas[2].stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
