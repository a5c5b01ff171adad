"""The HTTP server against greedy and odd clients, browsers and TLS: a real server subprocess and real sockets.

What is pinned here (issues 20, 21 and 22): the byte budget (--max-buffered-bytes) and the write
timeout (--write-timeout) that bound memory whatever clients do; a request framed two ways
refused and its connection closed; batch limits; -32600 for a body that is JSON but not
JSON-RPC; lone surrogates answered; CORS for --allow-origin (raw and from a real browser);
HTTPS; SO_REUSEADDR by system; a quiet stop at the descriptor limit.
"""

from __future__ import annotations

import html
import http.client
import http.server
import json
import shutil
import socket
import ssl
import struct
import subprocess
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp.core.contract import TOOL_NAME
from tests.debian import apt_install
from tests.helpers import as_json, codescout_exe, reference_rank
from tests.httpserver import CALL, RunningServer, serving
from tests.platforms import OPEN_FILES, PROC, linux_only, posix_only
from tests.tlscerts import make_certificates

GIB = 1024.0  # in MiB


def raw_exchange(port: int, data: bytes, *, wait: float = 3.0) -> tuple[bytes, bool]:
    """Send `data` on a fresh connection; what came back within `wait` s, and whether the server closed it."""
    sock = socket.create_connection(("127.0.0.1", port))
    sock.settimeout(wait)
    sock.sendall(data)
    received = b""
    closed = False
    try:
        while chunk := sock.recv(65536):
            received += chunk
        closed = True
    except ConnectionResetError:
        closed = True
    except TimeoutError:
        pass
    finally:
        sock.close()
    return received, closed


def request_bytes(body: bytes, version: str = "2025-11-25", extra: bytes = b"") -> bytes:
    """A whole POST to /mcp with Content-Length, as bytes on the wire."""
    return (
        b"POST /mcp HTTP/1.1\r\nHost: 127.0.0.1\r\nContent-Type: application/json\r\n"
        b"Accept: application/json, text/event-stream\r\nMCP-Protocol-Version: " + version.encode() + b"\r\n"
        b"Content-Length: " + str(len(body)).encode() + b"\r\n" + extra + b"\r\n" + body
    )


def run_mcp(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [codescout_exe(), "mcp", "--transport", "streamable-http", "--port", "0", *args],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def call_body(arguments: dict[str, Any], request_id: object = 1) -> bytes:
    message = {"jsonrpc": "2.0", "id": request_id, "method": "tools/call", "params": {"name": TOOL_NAME}}
    message["params"]["arguments"] = arguments  # type: ignore[index]
    return json.dumps(message).encode()


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    yield from serving("--allow-origin", "http://page.example:8080")


# --- the byte budget ----------------------------------------------------------------------------


def held_request(running: RunningServer, size: int) -> socket.socket:
    """A request whose headers declare `size` bytes of body, of which only the first byte is sent."""
    sock = socket.create_connection(("127.0.0.1", running.port))
    sock.settimeout(30)
    sock.sendall(request_bytes(b"{" + b" " * (size - 1))[: -(size - 1)])
    return sock


def test_a_declared_body_that_never_comes_holds_no_room_after_a_second() -> None:
    """One client declaring a large body and sending nothing does not lock the budget: after
    STALL_SECONDS its reservation goes back, and the request waiting in line is served."""
    running = RunningServer("--max-body-bytes", "100000", "--max-buffered-bytes", "150000")
    try:
        first = held_request(running, 100_000)  # reserves 100,000 of the 150,000 bytes, sends one
        time.sleep(0.3)
        started = time.monotonic()
        status, _, body = running.request("POST", b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}' + b" " * 60_000)
        waited = time.monotonic() - started
        assert (status, body) == (200, b'{"jsonrpc":"2.0","id":1,"result":{}}')
        assert 0.4 < waited < 5, waited  # it waited its turn: until the silent body gave its room back
        assert running.call()[0] == 200  # a small request fits at once
        first.close()
    finally:
        status, log = running.stop()
    assert status == 0
    assert "Traceback" not in log


def test_a_request_waits_in_line_until_its_own_deadline_then_gets_503_and_a_true_retry_after() -> None:
    """The budget held by an answer nobody reads: a later request waits its turn until its own
    --request-timeout, then 503; Retry-After says when the holder must have let go."""
    running = RunningServer("--request-timeout", "3", "--write-timeout", "8")
    try:
        holder = never_reading(running.port, request_bytes(greedy_body(36)))  # its answer passes the 32 MiB budget
        time.sleep(2)
        started = time.monotonic()
        status, headers, body = running.request("POST", json.dumps(CALL).encode())
        waited = time.monotonic() - started
        assert (status, body) == (
            503,
            b"Busy: the server's buffers are full (see --max-buffered-bytes); retry after the time Retry-After gives\n",
        )
        assert 2.5 < waited < 6, waited
        assert 1 <= int(headers["retry-after"]) <= 8
        assert outcome(holder) in ("whole", "dropped")  # read at last, or dropped by now: its room is back
        assert running.call()[0] == 200
    finally:
        status, log = running.stop()
    assert status == 0
    assert "Traceback" not in log


def test_a_body_cap_over_the_budget_is_a_one_line_configuration_error() -> None:
    done = run_mcp("--max-body-bytes", "2000", "--max-buffered-bytes", "1000")
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        "codescout: --max-body-bytes 2000 is more than --max-buffered-bytes 1000: "
        "no body that large could ever be admitted\n"
    )
    # The default cap (32 MiB) against a smaller budget says so too.
    done = run_mcp("--max-buffered-bytes", "1000")
    assert done.returncode == 2
    assert done.stderr.startswith("codescout: --max-body-bytes 33554432 is more than --max-buffered-bytes 1000")


# --- the write timeout --------------------------------------------------------------------------


def greedy_body(answer_mib: int) -> bytes:
    """A call whose answer is about `answer_mib` MiB (about three times the body): long paths of quotes."""
    path = '"' * 5_000  # 10,000 bytes in the request; 10,000 in structuredContent and 20,000 in the text
    count = answer_mib * 1024 * 1024 // 30_000
    hits = [{"path": f"{i}{path}", "matches": 1, "last_modified_days": 0} for i in range(count)]
    return call_body({"hits": hits, "limit": count})


def never_reading(port: int, request: bytes) -> socket.socket:
    """A connection that sends `request` and then reads nothing (a small receive window)."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
    sock.settimeout(120)
    sock.connect(("127.0.0.1", port))
    sock.sendall(request)
    return sock


def outcome(sock: socket.socket) -> str:
    """What a client that stopped reading finds when it reads at last: 503, its whole answer, or a dropped one.

    Reading at last, it opens its receive window too: through the 4 KiB one it was made with, the
    rest of a 36 MiB answer trickles for two minutes (the time went there, not to the server).
    """
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
    sock.settimeout(10)
    received = b""
    try:
        while chunk := sock.recv(1 << 20):
            received += chunk
    except (ConnectionResetError, TimeoutError):
        pass
    finally:
        sock.close()
    head, _, body = received.partition(b"\r\n\r\n")
    if head.startswith(b"HTTP/1.1 503 "):
        return "503"
    length = [line for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")]
    if head.startswith(b"HTTP/1.1 200 ") and length and len(body) == int(length[0].split(b":")[1]):
        return "whole"
    return "dropped"


def test_an_answer_its_client_never_reads_is_dropped_after_the_write_timeout() -> None:
    running = RunningServer("--write-timeout", "1", "--log-level", "info")
    try:
        sock = never_reading(running.port, request_bytes(greedy_body(24)))
        time.sleep(4)  # the answer (24 MiB) is made in well under a second; then 1 s without progress
        assert outcome(sock) == "dropped"
        assert running.call()[0] == 200
    finally:
        status, log = running.stop()
    assert status == 0
    assert "a client read none of its answer for 1 s; dropped the connection" in log
    assert "Traceback" not in log


@linux_only(PROC)
def test_sixty_clients_that_never_read_large_answers_keep_the_server_under_a_gib() -> None:
    # Room comes back in waves (answers dropped unread), so some requests are let in late in their
    # 10 s: their bodies must then still be read (the time in line does not count), not cut off by a 408.
    running = RunningServer("--write-timeout", "2", "--request-timeout", "10")
    request = request_bytes(greedy_body(20))
    sockets: list[socket.socket] = []
    lock = threading.Lock()

    def client() -> None:
        sock = never_reading(running.port, request)
        with lock:
            sockets.append(sock)

    try:
        threads = [threading.Thread(target=client) for _ in range(60)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(timeout=180)
        time.sleep(5)  # two write timeouts and more: whatever was admitted last is dropped by now
        outcomes = [outcome(sock) for sock in sockets]
        peak = running.peak_rss_mib()
        assert len(outcomes) == 60
        assert set(outcomes) <= {"503", "dropped", "whole"}, outcomes
        assert outcomes.count("dropped") >= 3, outcomes  # answers were made, then dropped unread
        assert peak < GIB, f"peak RSS {peak:.0f} MiB with 60 clients that never read ({outcomes})"
        assert running.call()[0] == 200
    finally:
        status, log = running.stop()
    assert status == 0
    assert "Traceback" not in log


# --- framing: Content-Length and Transfer-Encoding together -------------------------------------


def test_content_length_with_transfer_encoding_gets_400_and_the_connection_closed(server: RunningServer) -> None:
    smuggled = request_bytes(b'{"jsonrpc": "2.0", "id": 7, "method": "ping"}')
    ping = b'{"jsonrpc": "2.0", "id": 1, "method": "ping"}'
    chunked = b"%x\r\n" % len(ping) + ping + b"\r\n0\r\n\r\n"
    first = request_bytes(chunked, extra=b"Transfer-Encoding: chunked\r\n")
    received, closed = raw_exchange(server.port, first + smuggled)
    head, _, body = received.partition(b"\r\n\r\n")
    assert head.split(b"\r\n")[0] == b"HTTP/1.1 400 Bad Request"
    assert b"connection: close" in head.lower().split(b"\r\n")
    assert body == b"Bad Request: both Content-Length and Transfer-Encoding; send one (RFC 9112, section 6.3)\n"
    assert closed
    assert b"HTTP/1.1" not in body  # the smuggled request got no answer
    assert server.call()[0] == 200


# --- batches over HTTP ----------------------------------------------------------------------------


def test_a_batch_of_more_than_a_thousand_members_gets_32600_and_a_thousand_are_served(server: RunningServer) -> None:
    pings = [{"jsonrpc": "2.0", "id": i, "method": "ping"} for i in range(1001)]
    status, answer = server.post(json.dumps(pings).encode(), {"MCP-Protocol-Version": "2025-03-26"})
    assert (status, json.loads(answer)) == (
        400,
        {
            "jsonrpc": "2.0",
            "id": None,
            "error": {
                "code": -32600,
                "message": "Invalid request: a batch of 1001 messages; at most 1000 are served at once",
            },
        },
    )
    status, answer = server.post(json.dumps(pings[:1000]).encode(), {"MCP-Protocol-Version": "2025-03-26"})
    assert status == 200
    assert json.loads(answer) == [{"jsonrpc": "2.0", "id": i, "result": {}} for i in range(1000)]


@linux_only(PROC)
def test_a_30_mib_batch_of_numbers_is_refused_in_bounded_memory() -> None:
    running = RunningServer()
    try:
        body = b"[" + b",".join([b"1"] * (15 * 1024 * 1024)) + b"]"  # 30 MiB, under the 32 MiB cap
        status, answer = running.post(body, {"MCP-Protocol-Version": "2025-03-26"})
        assert (status, json.loads(answer)["error"]) == (
            400,
            {
                "code": -32600,
                "message": "Invalid request: a batch of 15728640 messages; at most 1000 are served at once",
            },
        )
        peak = running.peak_rss_mib()
        assert peak < GIB, f"peak RSS {peak:.0f} MiB for a 30 MiB batch"
        assert running.call()[0] == 200
    finally:
        status, log = running.stop()
    assert status == 0
    assert "Traceback" not in log


# --- JSON that is not JSON-RPC, and lone surrogates ------------------------------------------------


@pytest.mark.parametrize("version", ["2025-03-26", "2025-11-25", "2026-07-28"])
@pytest.mark.parametrize(
    ("body", "request_id", "message"),
    [
        (b'{"jsonrpc": "1.0", "id": 5, "method": "ping"}', 5, 'Invalid request: "jsonrpc" must be "2.0"'),
        (b'{"jsonrpc": "2.0", "id": "a", "method": 7}', "a", 'Invalid request: "method" must be a string'),
        (b'{"id": 5, "method": "ping"}', 5, 'Invalid request: "jsonrpc" must be "2.0"'),
    ],
    ids=["wrong-jsonrpc", "numeric-method", "no-jsonrpc"],
)
def test_json_that_is_not_json_rpc_gets_32600_with_its_id(
    server: RunningServer, version: str, body: bytes, request_id: object, message: str
) -> None:
    status, answer = server.post(body, {"MCP-Protocol-Version": version})
    assert (status, json.loads(answer)) == (
        400,
        {"jsonrpc": "2.0", "id": request_id, "error": {"code": -32600, "message": message}},
    )


def test_an_id_that_is_not_an_id_gets_32600_with_a_null_id(server: RunningServer) -> None:
    status, answer = server.post(b'{"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}')
    assert status == 400
    error = json.loads(answer)
    assert (error["id"], error["error"]["code"]) == (None, -32600)


@pytest.mark.parametrize("version", ["2025-03-26", "2025-11-25"])
def test_lone_surrogates_in_an_id_and_a_path_are_answered(server: RunningServer, version: str) -> None:
    headers = {"MCP-Protocol-Version": version}
    status, answer = server.post(b'{"jsonrpc": "2.0", "id": "\\ud800", "method": "ping"}', headers)
    assert (status, answer) == (200, b'{"jsonrpc":"2.0","id":"\\ud800","result":{}}')
    hit = {"path": "a\ud800", "matches": 1, "last_modified_days": 0, "owner": "\udfff"}
    status, answer = server.post(call_body({"hits": [hit]}, "\ud800"), headers)
    assert status == 200, answer
    reply = json.loads(answer)
    assert reply["id"] == "\ud800"
    assert reply["result"]["structuredContent"] == {
        "results": [{**hit, "score": 100, "rank": 1}],
        "counts": {"hits": 1, "returned": 1},
    }


# --- CORS ------------------------------------------------------------------------------------------

PAGE = "http://page.example:8080"


def test_a_preflight_from_an_allowed_origin_gets_204_with_the_allow_headers(server: RunningServer) -> None:
    status, headers, body = server.request(
        "OPTIONS",
        headers={
            "Origin": PAGE,
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "content-type, mcp-protocol-version",
        },
    )
    assert (status, body) == (204, b"")
    assert {k: v for k, v in headers.items() if k.startswith("access-control-")} == {
        "access-control-allow-origin": PAGE,
        "access-control-allow-methods": "POST",
        "access-control-allow-headers": "content-type, mcp-protocol-version",
        "access-control-expose-headers": "Retry-After, WWW-Authenticate",
        "access-control-max-age": "600",
    }


def test_answers_to_an_allowed_origin_carry_allow_origin_and_others_get_403(server: RunningServer) -> None:
    status, headers, body = server.request("POST", json.dumps(CALL).encode(), {"Origin": PAGE})
    assert status == 200
    assert (headers["access-control-allow-origin"], headers["vary"]) == (PAGE, "Origin")
    assert json.loads(body)["result"]["structuredContent"]["counts"] == {"hits": 3, "returned": 2}
    # A refusal an allowed page's script must be able to read carries the header too.
    status, headers, _ = server.request("POST", b"{not json", {"Origin": PAGE})
    assert (status, headers["access-control-allow-origin"]) == (400, PAGE)

    evil = "http://evil.example"
    status, headers, body = server.request("OPTIONS", headers={"Origin": evil, "Access-Control-Request-Method": "POST"})
    assert (status, body) == (403, b"Forbidden: Origin not allowed (see --allow-origin)\n")
    assert "access-control-allow-origin" not in headers
    status, headers, _ = server.request("POST", json.dumps(CALL).encode(), {"Origin": evil})
    assert status == 403
    assert "access-control-allow-origin" not in headers


@pytest.fixture(scope="session")
def chromium() -> str:
    """Debian's headless-capable chromium, installed with apt-get when it is missing."""
    found = shutil.which("chromium")
    if found is None:
        apt_install("chromium")
        found = shutil.which("chromium")
    assert found is not None, "apt-get install chromium did not provide a chromium command"
    return found


class _Page(http.server.BaseHTTPRequestHandler):
    page = b""

    def do_GET(self) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/html; charset=utf-8")
        self.send_header("Content-Length", str(len(self.page)))
        self.end_headers()
        self.wfile.write(self.page)

    def log_message(self, format: str, *args: Any) -> None:
        pass


PAGE_SCRIPT = """<!doctype html><html><body><pre id="out">waiting</pre><script>
const out = document.getElementById("out");
fetch(SERVER, {method: "POST", headers: {"Content-Type": "application/json",
    "Accept": "application/json, text/event-stream", "MCP-Protocol-Version": "2025-11-25"}, body: BODY})
  .then(async (r) => { out.textContent = "status " + r.status + " " + await r.text(); })
  .catch((e) => { out.textContent = "failed " + e; });
</script></body></html>"""


def test_a_real_browser_page_from_an_allowed_origin_calls_the_server(chromium: str, tmp_path: Path) -> None:
    pages = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    origin = f"http://127.0.0.1:{pages.server_address[1]}"
    running = RunningServer("--allow-origin", origin)
    _Page.page = (
        PAGE_SCRIPT.replace("SERVER", json.dumps(running.url)).replace("BODY", json.dumps(json.dumps(CALL)))
    ).encode()
    threading.Thread(target=pages.serve_forever, daemon=True).start()
    try:
        done = subprocess.run(
            [
                chromium,
                "--headless",
                "--no-sandbox",
                "--disable-gpu",
                "--no-proxy-server",
                "--no-first-run",
                f"--user-data-dir={tmp_path / 'profile'}",
                "--virtual-time-budget=10000",
                "--dump-dom",
                origin + "/",
            ],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stderr[-3000:]
        shown = done.stdout.split('<pre id="out">', 1)[1].split("</pre>", 1)[0]
        word, answered, text = html.unescape(shown).split(" ", 2)
        assert (word, answered) == ("status", "200"), shown
        reply = json.loads(text)
        assert as_json(reply["result"]["structuredContent"]) == as_json(reference_rank(CALL["params"]["arguments"]))  # type: ignore[index]
    finally:
        pages.shutdown()
        code, log = running.stop()
    assert code == 0
    assert "Traceback" not in log


# --- HTTPS ---------------------------------------------------------------------------------------


def test_https_with_a_certificate_and_key_serves_a_client_that_trusts_the_ca(tmp_path: Path) -> None:
    ca, cert, key = make_certificates(tmp_path)
    running = RunningServer("--tls-certfile", str(cert), "--tls-keyfile", str(key))
    try:
        assert f"at https://127.0.0.1:{running.port}/mcp" in running.banner
        context = ssl.create_default_context(cafile=str(ca))
        connection = http.client.HTTPSConnection("127.0.0.1", running.port, timeout=30, context=context)
        body = json.dumps(CALL).encode()
        connection.request(
            "POST",
            "/mcp",
            body,
            {"Content-Type": "application/json", "Accept": "application/json", "MCP-Protocol-Version": "2025-11-25"},
        )
        response = connection.getresponse()
        assert response.status == 200
        assert json.loads(response.read())["result"]["structuredContent"]["counts"] == {"hits": 3, "returned": 2}
        connection.close()
        # Without the CA the certificate is not trusted: it is TLS, not plain HTTP.
        untrusting = http.client.HTTPSConnection(
            "127.0.0.1", running.port, timeout=30, context=ssl.create_default_context()
        )
        with pytest.raises(ssl.SSLCertVerificationError):
            untrusting.request("POST", "/mcp", body)
    finally:
        status, log = running.stop()
    assert status == 0
    assert "Traceback" not in log


def test_a_bad_tls_key_file_is_one_line_and_a_key_alone_is_a_usage_error(tmp_path: Path) -> None:
    _, cert, _ = make_certificates(tmp_path)
    bad = tmp_path / "bad-key.pem"
    bad.write_text("-----BEGIN PRIVATE KEY-----\nnot a key\n-----END PRIVATE KEY-----\n", encoding="ascii")
    done = run_mcp("--tls-certfile", str(cert), "--tls-keyfile", str(bad))
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.startswith(f"codescout: cannot use --tls-certfile {cert} and --tls-keyfile {bad}: ")
    assert done.stderr.count("\n") == 1 and "Traceback" not in done.stderr

    missing = tmp_path / "missing.pem"
    done = run_mcp("--tls-certfile", str(missing))
    assert done.returncode == 2
    assert done.stderr == f"codescout: cannot use --tls-certfile {missing}: No such file or directory\n"

    done = run_mcp("--tls-keyfile", str(bad))
    assert done.returncode == 2
    assert done.stderr.splitlines()[-1] == (
        "codescout mcp: usage error: --tls-keyfile needs --tls-certfile (the certificate the key belongs to) "
        "(see 'codescout mcp --help')"
    )


# --- sockets: SO_REUSEADDR by system, and a stop at the descriptor limit ----------------------------


def test_so_reuseaddr_is_set_on_posix_and_left_off_on_windows() -> None:
    from codescout_mcp.http.settings import bind
    from codescout_mcp.system.platform import LINUX, MACOS, WINDOWS

    for system, expected in ((LINUX, True), (MACOS, True), (WINDOWS, False)):
        sock = bind("127.0.0.1", 0, system)
        try:
            assert bool(sock.getsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR)) is expected, system
        finally:
            sock.close()


@posix_only(OPEN_FILES)
def test_a_stop_while_out_of_descriptors_prints_no_error_from_the_accept_retry() -> None:
    # A request in flight keeps the server running a while after SIGTERM closes the listening
    # socket: long enough for asyncio's accept retry (a second after EMFILE) to find it closed.
    for _ in range(2):
        running = RunningServer("--shutdown-timeout", "3", "--request-timeout", "60", nofile=64)
        slow = socket.create_connection(("127.0.0.1", running.port), timeout=5)
        slow.sendall(request_bytes(b"{" + b" " * 999)[:-999])
        time.sleep(0.2)
        held = []
        for _ in range(200):
            try:
                held.append(socket.create_connection(("127.0.0.1", running.port), timeout=1))
            except OSError:
                break
        time.sleep(0.3)
        started = time.monotonic()
        status, log = running.stop()
        for sock in [slow, *held]:
            sock.close()
        assert status == 0, log
        assert time.monotonic() - started > 1.2  # the retry had time to run
        assert "Traceback" not in log and "ValueError" not in log and "Exception in callback" not in log, log[-3000:]


def test_a_stalled_tls_handshake_is_dropped_at_the_request_timeout(tmp_path: Path) -> None:
    """asyncio would hold a handshake that never starts for 60 s, whatever --request-timeout says."""
    _, cert, key = make_certificates(tmp_path)
    running = RunningServer("--tls-certfile", str(cert), "--tls-keyfile", str(key), "--request-timeout", "2")
    try:
        sock = socket.create_connection(("127.0.0.1", running.port), timeout=30)
        started = time.monotonic()
        assert sock.recv(1) == b""  # the server gave up on the silent client and closed
        assert time.monotonic() - started < 10
        sock.close()
    finally:
        status, log = running.stop()
    assert status == 0
    assert "Traceback" not in log


# --- the third hostile pass: 2026-07-28 bodies, repeated headers, trickles, a client that leaves -----


@pytest.mark.parametrize(
    ("body", "error"),
    [
        (
            b'{"jsonrpc": "2.0", "id": 7, "method": "ping", "params": {"x": NaN}}',
            {"code": -32700, "message": "Parse error: invalid JSON: NaN is not a JSON value"},
        ),
        (
            b'{"jsonrpc": "2.0", "id": 8, "method": "tools/call", "params": {"name": "\xff"}}',
            {"code": -32700, "message": "Parse error: not valid UTF-8 at byte offset 72"},
        ),
        (
            b'{"jsonrpc": "2.0", "id": 9, "method": 5}',
            {"code": -32600, "message": 'Invalid request: "method" must be a string'},
        ),
    ],
)
def test_a_2026_body_is_read_as_at_the_other_versions(
    server: RunningServer, body: bytes, error: dict[str, Any]
) -> None:
    status, _, answer = server.request("POST", body, {"MCP-Protocol-Version": "2026-07-28"})
    assert status == 400
    reply = json.loads(answer)
    assert reply["error"] == error
    assert reply["id"] in (None, 7, 8, 9) and (reply["id"] is not None or error["code"] == -32700)


@pytest.mark.parametrize("header", ["Origin", "Host", "Authorization", "MCP-Protocol-Version", "Content-Type"])
def test_a_header_the_server_reads_given_twice_is_refused(server: RunningServer, header: str) -> None:
    values = {
        "Origin": ("http://localhost", "http://evil.example"),
        "Host": ("localhost", "evil.example"),
        "Authorization": ("Bearer a", "Bearer b"),
        "MCP-Protocol-Version": ("2025-11-25", "2025-06-18"),
        "Content-Type": ("application/json", "text/plain"),
    }[header]
    body = json.dumps(CALL).encode()
    lines = [b"POST /mcp HTTP/1.1", b"Accept: application/json"]
    if header != "Host":
        lines.append(b"Host: localhost")
    if header != "Content-Type":
        lines.append(b"Content-Type: application/json")
    lines += [f"{header}: {value}".encode() for value in values]
    lines += [f"Content-Length: {len(body)}".encode(), b"Connection: close", b"", b""]
    with socket.create_connection(("127.0.0.1", server.port), timeout=30) as sock:
        sock.sendall(b"\r\n".join(lines) + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, text = answer.partition(b"\r\n\r\n")
    assert head.startswith(b"HTTP/1.1 400 "), head
    if header != "Host":  # (two Hosts h11 refuses itself, before the Guard sees them)
        assert text == f"Bad Request: the {header.lower()} header is given more than once\n".encode()


def test_a_refused_body_that_trickles_is_cut_off_and_holds_no_slot() -> None:
    """After a 413 the rest of the body is read and dropped for 2 s in all, not for as long as it trickles."""
    running = RunningServer("--max-concurrent", "1", "--max-body-bytes", "1000", "--max-buffered-bytes", "2000")
    try:
        sock = socket.create_connection(("127.0.0.1", running.port), timeout=30)
        sock.sendall(request_bytes(b"x" * 5000)[:-4990])  # declares 5,000 bytes: 413 at once
        started = time.monotonic()
        head = sock.recv(4096)
        assert head.startswith(b"HTTP/1.1 413 "), head
        assert running.call()[0] == 200  # the one slot is free while the refused body still trickles
        closed = False
        for _ in range(20):
            try:
                sock.sendall(b"x")
                if sock.recv(4096) == b"":
                    closed = True
                    break
            except OSError:
                closed = True
                break
            time.sleep(0.5)
        assert closed and time.monotonic() - started < 6, "the trickling body kept its connection"
        sock.close()
    finally:
        status, _ = running.stop()
    assert status == 0


def read_by_peer(sock: socket.socket) -> None:
    """Return once the loopback peer of `sock` has read all it was sent (in /proc/net/tcp, our
    send queue and its receive queue are empty); where there is no /proc, after a short sleep."""
    if not Path("/proc/net/tcp").exists():
        time.sleep(0.3)
        return
    ours = f":{sock.getsockname()[1]:04X}"
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        queued = 0
        for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
            fields = line.split()
            local, remote, queues = fields[1], fields[2], fields[4]
            sending, receiving = (int(part, 16) for part in queues.split(":"))
            if local.endswith(ours):
                queued += sending
            if remote.endswith(ours):  # the server's end
                queued += receiving
        if queued == 0:
            return
        time.sleep(0.005)
    raise AssertionError("the server did not read the body within 30 s")


def test_a_batch_whose_client_left_is_served_no_further() -> None:
    running = RunningServer("--log-level", "info")
    try:
        hits = [{"path": f"p/{i}", "matches": 1, "last_modified_days": 0} for i in range(12_000)]
        call = {"name": "rank_search_results", "arguments": {"hits": hits, "limit": 1}}
        members = [{"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": call} for n in range(25)]
        body = json.dumps(members).encode()
        sock = socket.create_connection(("127.0.0.1", running.port), timeout=30)
        sock.sendall(request_bytes(body, version="2025-03-26"))
        # The reset comes once the server has read the whole body and before it could have
        # parsed and served it (25 rankings of 12,000 hits: a fraction of a second on any machine).
        read_by_peer(sock)
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        sock.close()  # a reset: the client is gone
        deadline = time.monotonic() + 60
        while "the rest of the batch was not served" not in running.log and time.monotonic() < deadline:
            time.sleep(0.2)
        assert running.call()[0] == 200
    finally:
        status, log = running.stop()
    assert status == 0
    assert "a batch's client left; the rest of the batch was not served" in log


@linux_only(PROC)
def test_requests_waiting_in_line_hold_their_connections_not_their_bodies() -> None:
    """With the one slot taken, 1,500 requests of 100 KB bodies wait in line: they cost the server
    their connections (under 40 KiB each), not their bodies (uvicorn alone read 110 KiB of each
    ahead); once the slot is free, every one is served, its body read then."""
    count, pad = 1_500, "x" * 100_000
    call: dict[str, Any] = json.loads(json.dumps(CALL))
    call["params"]["arguments"]["pad"] = pad  # a field the tool ignores
    body = json.dumps(call)
    running = RunningServer("--max-concurrent", "1", "--request-timeout", "120", "--max-body-bytes", str(1 << 20))
    waiting: list[socket.socket] = []
    try:
        slow = socket.create_connection(("127.0.0.1", running.port))
        slow.sendall(request_bytes(body.encode())[:-10])  # holds the slot: its body stops short
        time.sleep(0.5)
        before = running.peak_rss_mib()
        for _ in range(count):
            client = socket.create_connection(("127.0.0.1", running.port))
            client.sendall(request_bytes(body.encode()))
            waiting.append(client)
        time.sleep(2)
        grown = (running.peak_rss_mib() - before) * 1024 / count
        assert grown < 40, f"{grown:.1f} KiB of server memory for each request waiting in line"
        slow.close()  # the slot comes back: the line is served, one at a time
        answered = 0
        for client in waiting:
            client.settimeout(60)
            reply = b""
            while b"\r\n\r\n" not in reply:
                reply += client.recv(65536)
            answered += reply.startswith(b"HTTP/1.1 200")
        assert answered == count
    finally:
        for client in waiting:
            client.close()
        status, log = running.stop()
    assert status == 0 and "Traceback" not in log
