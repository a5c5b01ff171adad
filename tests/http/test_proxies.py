"""codescout behind nginx, Caddy and HAProxy, each run as docs/proxies.md configures it.

The configurations are read out of the page (tests/proxies.py changes only ports and file
paths), so what the page tells operators is what runs here: three replicas behind each
proxy, over TLS, pass the official conformance suite and serve the TypeScript SDK client;
the Host, body-limit and forwarded-address settings do what the page says; and a short soak
(bench/proxy_soak.py, at its smallest) kills one replica and stops another while clients call.
The proxies come from Debian's packages, installed when missing.
"""

from __future__ import annotations

import contextlib
import json
import re
import shutil
import socket
import ssl
import subprocess
import time
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

import pytest

from bench.proxy_soak import CLOSED, CUT, soak
from tests.debian import apt_install
from tests.helpers import EXAMPLE_RESULT, ROOT
from tests.httpserver import CALL, RunningServer
from tests.interop.test_typescript_client import check_report, run_client
from tests.nodetools import NodeTools
from tests.platforms import AS_ROOT, linux_only
from tests.proxies import (
    COMMANDS,
    MCP_HEADERS,
    PING,
    PROXIES,
    PUBLIC_NAME,
    EchoUpstream,
    RunningProxy,
    Tls,
    doc_block,
    json_post,
    post,
    replica_arguments,
    start_proxy,
    start_replicas,
    substituted,
)

MISSING = [proxy for proxy in PROXIES if not Path(COMMANDS[proxy]).exists()]
pytestmark = [
    linux_only("the proxies are Debian's packages"),
    pytest.mark.skipif(
        bool(MISSING) and not AS_ROOT, reason=f"needs root: apt-get installs the missing {', '.join(MISSING)}"
    ),
]

MIB = 1024 * 1024
ERAS = ("2025-11-25", "2026-07-28")
# Over HTTPS the suite's rebinding check cannot run: its client sends a made-up Host
# (evil.example.com) and Node then checks the proxy's certificate against that name, failing
# before the request is sent. test_calls_with_the_public_name_... makes the same check here.
TLS_BASELINE = """\
  # Over HTTPS the client checks the certificate against the made-up Host and sends nothing.
  - dns-rebinding-protection:localhost-host-rebinding-rejected
"""


@dataclass
class Deployment:
    """Three replicas as the page starts them, behind one proxy as the page configures it."""

    proxy: RunningProxy
    replicas: list[RunningServer]
    tls: Tls

    @property
    def url(self) -> str:
        return f"https://localhost:{self.proxy.port}/mcp"


@pytest.fixture(scope="module")
def replicas() -> Iterator[list[RunningServer]]:
    """The page's three replicas, shared by every proxy in turn (each takes seconds to start)."""
    started = start_replicas(["--log-level", "info"])
    yield started
    logs = [replica.stop() for replica in started]
    assert [status for status, _ in logs] == [0, 0, 0], logs
    assert not any("Traceback" in log for _, log in logs), logs


@pytest.fixture(scope="module", params=PROXIES)
def deployment(
    request: pytest.FixtureRequest, replicas: list[RunningServer], tmp_path_factory: pytest.TempPathFactory
) -> Iterator[Deployment]:
    name: str = request.param
    folder = tmp_path_factory.mktemp(name)
    tls = Tls.make(folder / "tls")
    proxy = start_proxy(name, folder / name, [replica.port for replica in replicas], tls)
    yield Deployment(proxy, replicas, tls)
    proxy.stop()


def test_conformance_suite_passes_through_the_proxy(
    node_tools: NodeTools, deployment: Deployment, tmp_path: Path
) -> None:
    """Both protocol eras, run at once (each run waits mostly on the network)."""
    runs = {era: conformance(node_tools, deployment, era, tmp_path / era) for era in ERAS}
    outcomes = {era: run.communicate(timeout=300) for era, run in runs.items()}
    for era, run in runs.items():
        stdout, stderr = outcomes[era]
        assert (run.returncode, "Baseline check passed" in stdout) == (0, True), stdout[-4000:] + stderr[-2000:]
        passed = sum(
            check.get("status") == "SUCCESS"
            for checks in (tmp_path / era / "results").glob("*/checks.json")
            for check in json.loads(checks.read_text(encoding="utf-8"))
        )
        assert passed >= 30, era  # as many as straight to a replica (tests/interop/test_conformance.py)


def conformance(node_tools: NodeTools, deployment: Deployment, era: str, folder: Path) -> subprocess.Popen[str]:
    """The conformance suite started against the proxy, with the TLS entry added to the era's baseline."""
    folder.mkdir()
    baseline = folder / "baseline.yml"
    baseline.write_text(
        (ROOT / "tests" / "conformance" / f"baseline-{era}.yml").read_text(encoding="utf-8") + TLS_BASELINE,
        encoding="utf-8",
    )
    command = ["server", "--url", deployment.url, "--requirements", era, "--expected-failures", str(baseline)]
    return subprocess.Popen(
        [*node_tools.command("conformance"), *command, "-o", str(folder / "results")],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=node_tools.env(NODE_EXTRA_CA_CERTS=str(deployment.tls.ca)),
    )


def test_typescript_client_lists_and_calls_through_the_proxy(
    node_tools: NodeTools, deployment: Deployment, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("NODE_EXTRA_CA_CERTS", str(deployment.tls.ca))
    check_report(run_client(node_tools, "@modelcontextprotocol/sdk", "http", deployment.url))


def test_calls_with_the_public_name_are_served_and_other_names_refused_by_the_replicas(
    deployment: Deployment,
) -> None:
    """The proxy passes the client's Host on, so the replicas' own DNS-rebinding check still works."""
    context = deployment.tls.client_context()
    status, answer = json_post(deployment.proxy.port, CALL, tls=context)
    assert (status, answer["result"]["structuredContent"]) == (200, EXAMPLE_RESULT)
    refused = post(deployment.proxy.port, json.dumps(PING).encode(), tls=context, headers={"Host": "rebound.example"})
    assert refused[0::2] == (421, b"Misdirected Request: Host not allowed (see --allow-host)\n")


def test_a_body_over_one_mib_passes_and_one_over_the_limit_gets_413(deployment: Deployment) -> None:
    """nginx alone refuses bodies over 1 MiB; the page raises every proxy's limit to codescout's 32 MiB.

    A declared length over the limit is refused as soon as the headers arrive: by nginx and
    HAProxy themselves, and behind Caddy (whose limit counts the bytes it reads) by the replica.
    """
    context = deployment.tls.client_context()
    padded = json.dumps(CALL).encode() + b" " * (2 * MIB)
    status, _, body = post(deployment.proxy.port, padded, tls=context, headers={"Host": PUBLIC_NAME})
    assert (status, json.loads(body)["result"]["structuredContent"]) == (200, EXAMPLE_RESULT)
    before = sum(replica.log.count(" -> 413 ") for replica in deployment.replicas)
    assert declared_too_long(deployment.proxy.port, 32 * MIB + 1, context) == 413
    time.sleep(0.2)  # the replica logs after it answers
    refused_by_replicas = sum(replica.log.count(" -> 413 ") for replica in deployment.replicas) - before
    assert refused_by_replicas == (1 if deployment.proxy.proxy == "caddy" else 0)


def declared_too_long(port: int, length: int, context: ssl.SSLContext) -> int:
    """The status answered to a POST of `length` bytes, read even when the proxy answers and closes mid-body.

    A proxy may refuse as soon as it has judged the headers and close the connection while
    the body is still on its way; a client then finds the answer after its writes failed.
    """
    head = "".join(f"{name}: {value}\r\n" for name, value in {**MCP_HEADERS, "Host": PUBLIC_NAME}.items())
    request = f"POST /mcp HTTP/1.1\r\n{head}Content-Length: {length}\r\n\r\n".encode()
    with (
        socket.create_connection(("127.0.0.1", port), timeout=30) as raw,
        context.wrap_socket(raw, server_hostname="localhost") as tls,
    ):
        tls.sendall(request)
        chunk, sent = b" " * (1024 * 1024), 0
        with contextlib.suppress(OSError):
            while sent < length:
                sent += tls.send(chunk[: length - sent])
        answer = b""
        with contextlib.suppress(OSError):
            while b"\r\n" not in answer and (data := tls.recv(65536)):
                answer += data
    return int(answer.split(b" ", 2)[1])


def test_the_replicas_log_the_proxys_address_and_the_proxy_the_clients(deployment: Deployment) -> None:
    """A replica believes no X-Forwarded-For unless told to (--forwarded-allow-ip): it logs its peer, the proxy.

    The proxy's log is shared with the module's other clients (Node's, which reach "localhost" at ::1
    first where the system says so), so only the lines written for this test's own calls count. Where
    the proxy listens on ::1 too (Caddy listens on every address), a call from there comes first and
    must be logged with its own address.
    """
    if answers_at(deployment.proxy.port, "::1"):
        written = len(deployment.proxy.access_log())
        context = deployment.tls.client_context()
        context.check_hostname = False  # the certificate names 127.0.0.1 and localhost, not ::1
        status, _, _ = post(deployment.proxy.port, json.dumps(PING).encode(), tls=context, address="::1")
        other = proxy_lines_after(deployment.proxy, written)
        assert status == 200 and other and all("::1" in line for line in other), other
    written = len(deployment.proxy.access_log())
    status, _ = json_post(deployment.proxy.port, PING, tls=deployment.tls.client_context())
    assert status == 200
    proxy_lines = proxy_lines_after(deployment.proxy, written)
    assert proxy_lines and all("127.0.0.1" in line and "::1" not in line for line in proxy_lines), proxy_lines
    served = [line for replica in deployment.replicas for line in replica.log.splitlines() if "POST /mcp" in line]
    assert served
    pattern = r"\S+ \S+ INFO codescout: 127\.0\.0\.1:\d+ POST /mcp -> \d{3} in [\d.]+ ms"
    assert all(re.fullmatch(pattern, line) for line in served), served


def answers_at(port: int, address: str) -> bool:
    """Whether something accepts connections at address:port (False where the address does not exist)."""
    try:
        with socket.create_connection((address, port), timeout=5):
            return True
    except OSError:
        return False


def proxy_lines_after(proxy: RunningProxy, offset: int) -> list[str]:
    """The proxy's POST /mcp log lines written after offset characters, waiting up to 10 s for the first.

    A proxy may write its line after the client has read the answer.
    """
    deadline = time.monotonic() + 10
    while True:
        lines = [line for line in proxy.access_log()[offset:].splitlines() if "/mcp" in line and "POST" in line]
        if lines or time.monotonic() > deadline:
            return lines
        time.sleep(0.05)


@pytest.mark.parametrize("proxy", PROXIES)
def test_the_proxy_sends_the_client_host_and_only_the_address_it_saw(proxy: str, tmp_path: Path) -> None:
    """What reaches a replica, seen by a stand-in that echoes its headers: a made-up X-Forwarded-For is dropped."""
    tls = Tls.make(tmp_path / "tls")
    echoes = [EchoUpstream() for _ in range(3)]
    running = start_proxy(proxy, tmp_path / proxy, [echo.port for echo in echoes], tls)
    try:
        headers = {"Host": PUBLIC_NAME, "X-Forwarded-For": "203.0.113.7"}
        status, _, body = post(running.port, json.dumps(PING).encode(), tls=tls.client_context(), headers=headers)
    finally:
        running.stop()
        for echo in echoes:
            echo.close()
    assert status == 200, body
    seen = json.loads(body)["result"]["headers"]
    assert {"host": seen["host"], "x-forwarded-for": seen["x-forwarded-for"]} == {
        "host": PUBLIC_NAME,
        "x-forwarded-for": "127.0.0.1",
    }


def test_the_common_nginx_upstream_block_is_refused_until_the_replicas_allow_its_name(
    replicas: list[RunningServer], tmp_path: Path
) -> None:
    """The issue: nginx sends the upstream's name as Host, 421 on every call; --allow-host that name serves them.

    The page's replicas (which allow only the public name) stand for the first; one replica
    allowing `codescout` stands behind both of the block's servers for the second.
    """
    tls = Tls.make(tmp_path / "tls")
    allowing = RunningServer("--allow-host", "codescout")
    answers = []
    try:
        for index, ports in enumerate(([r.port for r in replicas[:2]], [allowing.port] * 2)):
            running = start_proxy("nginx-upstream-name", tmp_path / f"nginx{index}", ports, tls)
            try:
                answers.append(json_post(running.port, PING, tls=None, host="localhost"))
            finally:
                running.stop()
    finally:
        allowing.stop()
    assert answers == [
        (421, "Misdirected Request: Host not allowed (see --allow-host)\n"),
        (200, {"jsonrpc": "2.0", "id": 0, "result": {}}),
    ]


def test_the_page_s_probe_and_answers_are_what_a_replica_gives(replicas: list[RunningServer]) -> None:
    """The health-check table in the page, request by request, and its curl probe run as written."""
    replica = replicas[0]
    probe = substituted(doc_block("probe"), {"127.0.0.1:8101": f"127.0.0.1:{replica.port}"})
    if shutil.which("curl") is None:  # the probe is curl's, as the page gives it (a bare Debian root lacks it)
        apt_install("curl")
    curl = subprocess.run(["sh", "-c", probe], capture_output=True, text=True, timeout=30, check=False)
    ping = json.dumps(PING).encode()
    modern = {"MCP-Protocol-Version": "2026-07-28"}
    seen = {
        "curl probe": (curl.returncode, curl.stdout),
        "GET /mcp": replica.request("GET")[0],
        "HEAD /mcp": replica.request("HEAD")[0],
        "GET /healthz": replica.request("GET", path="/healthz")[0],
        "ping at 2026-07-28": replica.post(ping, modern)[0],
        "ping with no Accept": replica.post(ping, {"Accept": "text/html"})[0],
        "ping with another Host": replica.post(ping, {"Host": "elsewhere.example"})[0],
    }
    assert seen == {
        "curl probe": (0, '{"jsonrpc":"2.0","id":0,"result":{}}'),
        "GET /mcp": 405,
        "HEAD /mcp": 405,
        "GET /healthz": 404,
        "ping at 2026-07-28": 400,
        "ping with no Accept": 406,
        "ping with another Host": 421,
    }


@pytest.mark.parametrize("proxy", PROXIES)
def test_a_short_soak_survives_a_replica_killed_and_another_stopped(
    proxy: str, replicas: list[RunningServer], tmp_path: Path
) -> None:
    """Every call is answered 200 or in a way a client may retry; the replica stopped with SIGTERM finishes its calls.

    nginx and HAProxy, which the page has retry a failed call on another replica, leave no
    failure after the SIGTERM at all. Caddy 2.6 cannot send a POST's body again (see the
    page), so a call sent to the stopping replica as it closes comes back 502.
    """
    # Two fresh replicas to kill and stop, and a shared one that carries on.
    result = soak(proxy, tmp_path, seconds=1.0, threads=4, replicas=[*start_replicas_pair(), replicas[2]])
    print(result.report())
    for phase in (result.direct, result.steady):
        assert (phase.calls > 20, set(phase.answers)) == (True, {"200"}), result.report()
    assert result.faulty.lost == 0, result.report()
    assert result.faulty.answers["200"] > 20, result.report()
    assert (result.stop.status, set(result.stop.finished) <= {"200"}) == (0, True), result.report()
    after_kill = set(result.failures_after(result.stop.killed_at, result.stop.stopped_at))
    after_stop = set(result.failures_after(result.stop.stopped_at))
    if proxy == "caddy":
        # The killed replica's call may also come back as a connection closed before an answer
        # (seen once under Python 3.14 on a loaded machine): retryable, as proxies.md says.
        assert (after_kill <= {"502", CUT, CLOSED}, after_stop <= {"502", CUT}) == (True, True), result.report()
    else:
        # A replica killed between writing its answer's headers and its body leaves that one
        # answer cut short: nothing can retry what the client has begun to read.
        assert (after_kill <= {CUT}, after_stop) == (True, set()), result.report()


def start_replicas_pair() -> list[RunningServer]:
    """Two replicas as the page starts them, for a soak to kill one and stop the other."""
    with ThreadPoolExecutor() as pool:
        return list(pool.map(lambda args: RunningServer(*args, "--log-level", "info"), replica_arguments()[:2]))
