"""nginx, Caddy and HAProxy from Debian, run as the configurations in docs/proxies.md, in front of codescout.

The configurations are read out of the page (each fenced block follows a marker comment,
`<!-- proxies-test: NAME -->`), and only their ports and file paths are changed, each change
checked to apply, so the page and what the tests run cannot drift apart. Each proxy runs in
the foreground as a plain process on a free loopback port with its files in a folder of its
own: no system service, no file outside that folder.
"""

from __future__ import annotations

import http.client
import json
import os
import re
import shlex
import signal
import socket
import ssl
import subprocess
import sys
import threading
import time
from collections.abc import Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.debian import apt_install
from tests.helpers import ROOT
from tests.httpserver import RunningServer
from tests.tlscerts import make_certificates

DOC = ROOT / "docs" / "proxies.md"
PROXIES = ("nginx", "caddy", "haproxy")
# The Debian package and the command each proxy comes as.
PACKAGES = {"nginx": "nginx", "caddy": "caddy", "haproxy": "haproxy"}
COMMANDS = {"nginx": "/usr/sbin/nginx", "caddy": "/usr/bin/caddy", "haproxy": "/usr/sbin/haproxy"}
# What the page calls things, and what stands for each in a test.
DOC_REPLICAS = ("127.0.0.1:8101", "127.0.0.1:8102", "127.0.0.1:8103")
DOC_CERT, DOC_KEY, DOC_SITE_PEM = (f"/etc/ssl/codescout/{name}" for name in ("cert.pem", "key.pem", "site.pem"))
PUBLIC_NAME = "mcp.example.com"  # the Host clients send through the proxy, as on port 443
PING = {"jsonrpc": "2.0", "id": 0, "method": "ping"}
MCP_HEADERS = {
    "Content-Type": "application/json",
    "Accept": "application/json, text/event-stream",
    "MCP-Protocol-Version": "2025-11-25",
}


def doc_block(name: str, doc: Path = DOC) -> str:
    """The fenced block that follows `<!-- proxies-test: name -->` in the page."""
    marked = rf"<!-- proxies-test: {re.escape(name)} -->\n```[\w-]*\n(.*?)\n```\n"
    found = re.search(marked, doc.read_text("utf-8"), re.S)
    if found is None:
        raise AssertionError(f"{doc} has no block marked 'proxies-test: {name}'")
    return found.group(1) + "\n"


def substituted(text: str, changes: Mapping[str, str]) -> str:
    """`text` with each key replaced by its value; AssertionError if a key is not there to replace."""
    for old, new in changes.items():
        if old not in text:
            raise AssertionError(f"the configuration no longer holds {old!r}; update tests/proxies.py:\n{text}")
        text = text.replace(old, new)
    return text


def replica_arguments(doc: Path = DOC) -> list[list[str]]:
    """Each replica's arguments after `codescout mcp`, as the page's replicas block gives them, without --port."""
    replicas = []
    for line in doc_block("replicas", doc).splitlines():
        words = shlex.split(line.rstrip("& "))
        assert words[:2] == ["codescout", "mcp"], line
        port = words.index("--port")
        replicas.append(words[2:port] + words[port + 2 :])
    return replicas


def start_replicas(extra: Sequence[str] = (), doc: Path = DOC) -> list[RunningServer]:
    """The page's replicas, each on a free port (started at once: each takes a second to import the SDK)."""
    with ThreadPoolExecutor() as pool:
        return list(pool.map(lambda args: RunningServer(*args, *extra), replica_arguments(doc)))


def free_port() -> int:
    """A loopback port nothing listens on now (nginx and HAProxy cannot be told port 0 and report it)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def ensure_installed(proxy: str) -> str:
    """The proxy's command, installing its Debian package first when it is missing."""
    command = COMMANDS[proxy]
    if not Path(command).exists():
        apt_install(PACKAGES[proxy])
    return command


@dataclass(frozen=True)
class Tls:
    """A test CA and the certificate the proxies serve (for localhost and 127.0.0.1)."""

    ca: Path
    cert: Path
    key: Path
    site_pem: Path  # certificate then key, in one file, as HAProxy takes them

    @classmethod
    def make(cls, folder: Path) -> Tls:
        folder.mkdir(parents=True, exist_ok=True)
        ca, cert, key = make_certificates(folder)
        site_pem = folder / "site.pem"
        site_pem.write_bytes(cert.read_bytes() + key.read_bytes())
        return cls(ca, cert, key, site_pem)

    def client_context(self) -> ssl.SSLContext:
        return ssl.create_default_context(cafile=str(self.ca))


def program(block: str) -> str:
    """The proxy a block of the page configures: `nginx-upstream-name` is nginx's."""
    return block.split("-", 1)[0]


def configuration(block: str, port: int, upstreams: Sequence[int], tls: Tls) -> str:
    """The page's configuration `block`, listening on `port` in front of replicas on `upstreams`.

    Only what a test must change is changed: the ports, the certificate's files, and the
    address listened on (loopback only, except Caddy's, whose site address would otherwise
    become a Host matcher).
    """
    text = doc_block(block)
    in_use = DOC_REPLICAS[: text.count("127.0.0.1:81")]
    changes = {doc: f"127.0.0.1:{real}" for doc, real in zip(in_use, upstreams, strict=True)}
    if block == "nginx":
        changes |= {"listen 443 ssl;": f"listen 127.0.0.1:{port} ssl;", DOC_CERT: str(tls.cert), DOC_KEY: str(tls.key)}
    elif block == "nginx-upstream-name":
        changes |= {"listen 8080;": f"listen 127.0.0.1:{port};"}
    elif block == "caddy":
        changes |= {"\n:443 {": f"\n:{port} {{", DOC_CERT: str(tls.cert), DOC_KEY: str(tls.key)}
    elif block == "haproxy":
        changes |= {"bind :443 ": f"bind 127.0.0.1:{port} ", DOC_SITE_PEM: str(tls.site_pem)}
    else:
        raise AssertionError(f"no test knows how to run the block {block!r}")
    return substituted(text, changes)


# nginx reads this around the page's block, which is written for nginx's http context; it
# holds only what a process outside the system service needs (its own pid file, logs, temp
# folders), and the access log in nginx's default format.
NGINX_MAIN = """\
{user}daemon off;
worker_processes 1;
pid {folder}/nginx.pid;
error_log {folder}/error.log notice;
events {{
    worker_connections 512;
}}
http {{
    access_log {folder}/access.log combined;
    client_body_temp_path {folder}/client_body;
    proxy_temp_path {folder}/proxy;
    fastcgi_temp_path {folder}/fastcgi;
    uwsgi_temp_path {folder}/uwsgi;
    scgi_temp_path {folder}/scgi;
    include {folder}/site.conf;
}}
"""


class RunningProxy:
    """A proxy in the foreground, its output kept in a file; ready once its port accepts connections."""

    def __init__(self, proxy: str, folder: Path, config: str, port: int) -> None:
        self.proxy, self.folder, self.port = proxy, folder, port
        folder.mkdir(parents=True, exist_ok=True)
        command = ensure_installed(proxy)
        env = {**os.environ, "HOME": str(folder), "XDG_DATA_HOME": str(folder), "XDG_CONFIG_HOME": str(folder)}
        if proxy == "nginx":
            (folder / "site.conf").write_text(config, encoding="utf-8")
            # workers as root may write the temp folders here
            user = "user root;\n" if sys.platform != "win32" and os.geteuid() == 0 else ""
            (folder / "nginx.conf").write_text(NGINX_MAIN.format(user=user, folder=folder), encoding="utf-8")
            argv = [command, "-p", str(folder), "-e", str(folder / "error.log"), "-c", str(folder / "nginx.conf")]
        elif proxy == "caddy":
            (folder / "Caddyfile").write_text(config, encoding="utf-8")
            argv = [command, "run", "--adapter", "caddyfile", "--config", str(folder / "Caddyfile")]
        else:
            (folder / "haproxy.cfg").write_text(config, encoding="utf-8")
            argv = [command, "-db", "-f", str(folder / "haproxy.cfg")]
        self.output_path = folder / "output.log"
        with open(self.output_path, "wb") as output:
            self.proc = subprocess.Popen(argv, stdout=output, stderr=subprocess.STDOUT, env=env, cwd=folder)
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if self.proc.poll() is not None or time.monotonic() > deadline:
                    self.stop()
                    raise AssertionError(f"{proxy} did not start:\n{self.log}") from None
                time.sleep(0.05)

    @property
    def log(self) -> str:
        """Everything the proxy wrote: its output, and for nginx its error and access logs."""
        parts = [self.output_path] + [self.folder / name for name in ("error.log", "access.log")]
        return "".join(p.read_text("utf-8", "replace") for p in parts if p.exists())

    def access_log(self) -> str:
        """The proxy's access log: nginx's own file; Caddy and HAProxy write theirs to the output."""
        path = self.folder / "access.log" if self.proxy == "nginx" else self.output_path
        return path.read_text("utf-8", "replace") if path.exists() else ""

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def start_proxy(block: str, folder: Path, upstreams: Sequence[int], tls: Tls) -> RunningProxy:
    """The proxy the page's `block` configures, on a free port, in front of the replicas on `upstreams`."""
    port = free_port()
    return RunningProxy(program(block), folder, configuration(block, port, upstreams, tls), port)


def post(
    port: int,
    body: bytes,
    *,
    tls: ssl.SSLContext | None,
    headers: Mapping[str, str] | None = None,
    timeout: float = 30,
    address: str = "127.0.0.1",
) -> tuple[int, dict[str, str], bytes]:
    """One POST /mcp to address:port, 127.0.0.1 unless told (over TLS when given a context, the certificate checked
    for that address; "localhost" may be ::1 first, where a proxy listening on every address sees another client)."""
    connection: http.client.HTTPConnection
    if tls is None:
        connection = http.client.HTTPConnection(address, port, timeout=timeout)
    else:
        connection = http.client.HTTPSConnection(address, port, timeout=timeout, context=tls)
    try:
        sent = {**MCP_HEADERS, **(headers or {})}
        connection.putrequest("POST", "/mcp", skip_host="Host" in sent, skip_accept_encoding=True)
        for name, value in sent.items():
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, {k.lower(): v for k, v in response.getheaders()}, response.read()
    finally:
        connection.close()


def json_post(port: int, message: Any, *, tls: ssl.SSLContext | None, host: str = PUBLIC_NAME) -> tuple[int, Any]:
    """A JSON-RPC message POSTed with the Host clients of the public name send; the status and the parsed answer."""
    status, _, body = post(port, json.dumps(message).encode(), tls=tls, headers={"Host": host})
    return status, json.loads(body) if body.startswith(b"{") else body.decode("utf-8", "replace")


class EchoUpstream:
    """A stand-in replica that answers every POST with the headers it received, as JSON.

    It shows what a proxy's configuration sends on (Host, X-Forwarded-*), which a real
    replica never reports.
    """

    def __init__(self) -> None:
        import http.server

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                self.rfile.read(int(self.headers.get("Content-Length", "0")))
                headers = {name.lower(): value for name, value in self.headers.items()}
                seen = json.dumps({"jsonrpc": "2.0", "id": 0, "result": {"headers": headers}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(seen)))
                self.end_headers()
                self.wfile.write(seen)

            def do_GET(self) -> None:
                self.send_response(405)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port: int = self.server.server_address[1]
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()
