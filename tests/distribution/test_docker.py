"""The Docker image, built from this checkout and run the ways the README says.

A session fixture makes a Docker engine and the stand-in base image ready (`scripts/docker-ready`:
no container registry is reachable here, so the base is Debian bookworm's python3 made with
debootstrap and imported as `local/python-bookworm`), then builds the image as `codescout:test`
with the legacy builder. Each stage is tagged too (`codescout:test-build`, `codescout:test-tools`),
so that a rebuild reuses them and replaces, rather than piles up, what an older checkout built.
Containers are named and removed; none is left behind.
"""

from __future__ import annotations

import contextlib
import http.client
import json
import os
import re
import select
import shlex
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp import Client, StdioServerParameters

from codescout_mcp import __version__
from codescout_mcp.core.contract import SEARCH_TOOL_NAME, TOOL_NAME, WORKSPACE_TOOL_NAME
from tests.gitrepo import DAY, Repo, run, workspace_call
from tests.helpers import EXAMPLE, EXAMPLE_RESULT, ROOT, codescout_exe
from tests.interop.test_typescript_client import SDKS, check_report, gone, run_client
from tests.nodetools import NodeTools
from tests.platforms import linux_only, root_only

# The engine and the stand-in base are made by scripts/docker-ready: debootstrap, Debian's
# docker.io and dockerd, which need Linux and root; the image is a Linux one too.
pytestmark = [
    linux_only("the image is built on a Debian root made with debootstrap, and runs on a Linux engine"),
    root_only("scripts/docker-ready installs and starts the engine and runs debootstrap"),
]

IMAGE = "codescout:test"
BASE = "local/python-bookworm"
# What the image may add to its base, in bytes as docker counts them (decimal megabytes). It
# added 259 MB while it installed Debian's git package and kept pip in the venv; 46 MB now.
ADDED_BUDGET = 60_000_000
# `docker stop` waits 10 s before it kills; a server that heeds SIGTERM is gone well before.
STOP_SECONDS = 3.0
DESCRIPTION = "Ranks code-search hits by match count and recency (MCP server and CLI)"
README = (ROOT / "README.md").read_text(encoding="utf-8")
SERVER_JSON = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
BUILD_ENV = {**os.environ, "DOCKER_BUILDKIT": "0"}


def docker(*args: str, timeout: float = 120, check: bool = True) -> subprocess.CompletedProcess[str]:
    """Run the docker client; with `check`, a failure shows its output."""
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)
    if check:
        assert done.returncode == 0, f"docker {shlex.join(args)}:\n{done.stdout}{done.stderr}"
    return done


def image_id(tag: str) -> str | None:
    done = docker("image", "inspect", "-f", "{{.Id}}", tag, check=False)
    return done.stdout.strip() if done.returncode == 0 else None


@pytest.fixture(scope="session")
def image() -> str:
    """The image built from the checkout on the stand-in base, tagged IMAGE."""
    ready = subprocess.run(
        [str(ROOT / "scripts" / "docker-ready")], capture_output=True, text=True, timeout=1800, check=False
    )
    assert ready.returncode == 0, ready.stdout + ready.stderr
    for target, tag in (("build", f"{IMAGE}-build"), ("tools", f"{IMAGE}-tools"), (None, IMAGE)):
        before = image_id(tag)
        argv = ["docker", "build", "--force-rm", "-q", "--build-arg", f"PYTHON_IMAGE={BASE}", "-t", tag]
        argv += ["--target", target] if target else []
        built = subprocess.run(
            [*argv, str(ROOT)], capture_output=True, text=True, env=BUILD_ENV, timeout=1800, check=False
        )
        assert built.returncode == 0, built.stdout + built.stderr
        if before is not None and before != image_id(tag):
            docker("rmi", before, check=False)  # what an older checkout built; shared layers stay
    return IMAGE


def container_name() -> str:
    return f"codescout-test-{uuid.uuid4().hex[:12]}"


@contextlib.contextmanager
def removed_afterwards(name: str) -> Iterator[None]:
    try:
        yield
    finally:
        docker("rm", "-f", name, check=False)


def exit_code(name: str) -> int:
    return int(docker("inspect", "-f", "{{.State.ExitCode}}", name).stdout)


def timed_stop(name: str) -> float:
    """`docker stop NAME` as a user runs it (10 s grace); how long it took."""
    started = time.monotonic()
    docker("stop", name, timeout=60)
    return time.monotonic() - started


def readme_docker_argv(anchor: str) -> list[str]:
    """The argv of the first JSON server config after `anchor` in the README."""
    found = re.search(r"```json\n(.*?)```", README[README.index(anchor) :], flags=re.DOTALL)
    assert found is not None, anchor
    (server,) = json.loads(found.group(1))["mcpServers"].values()
    argv = [server["command"], *server["args"]]
    assert argv[0] == "docker" and "codescout" in argv, argv
    return argv


def with_image(argv: list[str], name: str) -> list[str]:
    """The README's argv with its image name `codescout` replaced by `name`."""
    assert argv.count("codescout") == 1, argv
    return [name if word == "codescout" else word for word in argv]


# --- the image itself ---------------------------------------------------------------------------


@pytest.mark.parametrize("init", [[], ["--init"]], ids=["own-init", "docker-init"])
def test_the_image_reports_the_package_version(image: str, init: list[str]) -> None:
    # Under docker's own init (--init), tini is not PID 1, and says nothing about it.
    done = docker("run", "--rm", *init, image, "--version")
    assert (done.stdout, done.stderr) == (f"codescout {__version__}\n", "")


def test_the_labels_name_the_version_the_source_and_the_registry_entry(image: str) -> None:
    labels = json.loads(docker("image", "inspect", "-f", "{{json .Config.Labels}}", image).stdout)
    assert labels == {
        "io.modelcontextprotocol.server.name": SERVER_JSON["name"],
        "org.opencontainers.image.title": "codescout",
        "org.opencontainers.image.description": DESCRIPTION,
        "org.opencontainers.image.licenses": "MIT",
        "org.opencontainers.image.version": __version__,
        "org.opencontainers.image.source": SERVER_JSON["repository"]["url"],
    }


def test_the_image_adds_less_than_the_budget_to_its_base(image: str) -> None:
    sizes = [int(docker("image", "inspect", "-f", "{{.Size}}", tag).stdout) for tag in (image, BASE)]
    added = sizes[0] - sizes[1]
    assert 0 < added < ADDED_BUDGET, f"the image adds {added / 1e6:.1f} MB to its base of {sizes[1] / 1e6:.1f} MB"


def test_the_runtime_has_no_pip_setuptools_or_wheel_and_runs_as_10001(image: str) -> None:
    script = (
        "import importlib.util, os; "
        "print([m for m in ('pip', 'setuptools', 'wheel', 'pkg_resources') if importlib.util.find_spec(m)], "
        "sorted(n for n in os.listdir('/opt/codescout/bin') if n.startswith(('pip', 'wheel', 'easy_install'))), "
        "os.getuid(), os.getgid(), os.getcwd())"
    )
    done = docker("run", "--rm", "--entrypoint", "/opt/codescout/bin/python", image, "-c", script)
    assert done.stdout == "[] [] 10001 10001 /w\n"


# --- the CLI on mounted files -------------------------------------------------------------------


def readable_folder(tmp_path: Path, files: dict[str, str]) -> Path:
    """A folder the container's user (uid 10001) can read, holding `files`."""
    folder = tmp_path / "w"
    folder.mkdir()
    folder.chmod(0o755)
    for name, text in files.items():
        (folder / name).write_text(text, encoding="utf-8")
        (folder / name).chmod(0o644)
    return folder


def test_rank_on_a_mounted_file_prints_the_worked_example(image: str, tmp_path: Path) -> None:
    folder = readable_folder(tmp_path, {"args.json": EXAMPLE.read_text(encoding="utf-8")})
    done = docker("run", "--rm", "-v", f"{folder}:/w", image, "rank", "--input", "/w/args.json", check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, json.dumps(EXAMPLE_RESULT, indent=2) + "\n", "")


def test_rank_on_a_bad_mounted_file_is_one_line_and_status_1(image: str, tmp_path: Path) -> None:
    bad = {"hits": [{"path": "a.py", "matches": 0, "last_modified_days": 1}]}
    folder = readable_folder(tmp_path, {"bad.json": json.dumps(bad)})
    done = docker("run", "--rm", "-v", f"{folder}:/w", image, "rank", "--input", "/w/bad.json", check=False)
    assert (done.returncode, done.stdout, done.stderr) == (
        1,
        "",
        "codescout: hits[0].matches: expected an integer >= 1, got 0\n",
    )


def test_a_search_in_a_read_only_container_needs_no_temporary_file(image: str, tmp_path: Path) -> None:
    """`docker run --read-only`: no folder in the container can be written, /tmp and the cache
    folder included; a search still answers (it once printed a traceback: its probe file)."""
    repo = Repo(tmp_path / "project")
    repo.write("src/a.py", "needle\n")
    repo.commit(ago(3), "src/a.py")
    if sys.platform == "win32":  # the module runs on Linux only; this is for the type checker
        raise AssertionError("Linux only")
    for folder, dirs, files in os.walk(repo.root):
        for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.chmod(entry, 0o755 if os.path.isdir(entry) else 0o644)
    done = docker(
        *("run", "--rm", "--read-only", "-v", f"{repo.root}:/w:ro", image),
        *("search", "needle", "--workspace", "/w"),
        check=False,
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    answer = json.loads(done.stdout)
    assert [(entry["path"], entry["matches"], entry["last_modified_days"]) for entry in answer["results"]] == [
        ("src/a.py", 1, 3)
    ]


# --- MCP over `docker run -i`, as the README configures it ----------------------------------------


@pytest.mark.parametrize("version", ["latest", "1.22"])
def test_the_readme_docker_config_serves_the_typescript_client(node_tools: NodeTools, image: str, version: str) -> None:
    argv = with_image(readme_docker_argv("**Docker**, for any"), image)
    assert argv == ["docker", "run", "-i", "--rm", image]
    before = docker("ps", "-aq", "--filter", f"ancestor={image}").stdout.split()
    sdk, negotiated = SDKS[version]
    report = run_client(node_tools, sdk, "stdio", *argv)
    check_report(report)
    assert report["protocolVersion"] == negotiated
    # close() ends the docker client (1.22 by SIGTERM, which docker passes on to the server),
    # and --rm then removes the container.
    assert report["closeMs"] < STOP_SECONDS * 1000
    deadline = time.monotonic() + 10
    left = before
    while time.monotonic() < deadline:
        left = docker("ps", "-aq", "--filter", f"ancestor={image}").stdout.split()
        if left == before and gone(report["serverPid"]):
            break
        time.sleep(0.1)
    assert (left, gone(report["serverPid"])) == (before, True)


# --- the workspace tool on a read-only checkout that belongs to someone else --------------------


def ago(days: float) -> str:
    """A date `days` days and six hours before now, away from day boundaries."""
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - days * DAY - 6 * 3600))


def test_the_workspace_tool_reads_a_read_only_checkout_owned_by_another_uid(image: str, tmp_path: Path) -> None:
    repo = Repo(tmp_path / "project")
    repo.write(".github/CODEOWNERS", "* @org/everyone\n/src/search/ @alice @bob\n")
    repo.write("src/legacy/old.py", "x\n")
    repo.write("src/search/rank.py", "x\n")
    repo.write("docs/guide.md", "x\n")
    repo.commit(ago(300), ".github/CODEOWNERS", "src/legacy/old.py")
    repo.commit(ago(40), "src/search/rank.py", "docs/guide.md")
    repo.write("src/search/rank.py", "y\n")
    repo.commit(ago(2), "src/search/rank.py")
    repo.write("docs/guide.md", "edited, not committed\n")
    untracked = repo.write("notes/todo.txt", "x\n")
    os.utime(untracked, (time.time() - 7 * DAY - 6 * 3600,) * 2)
    counts = {"src/search/rank.py": 3, "src/legacy/old.py": 9, "docs/guide.md": 1, "notes/todo.txt": 2}

    # `codescout hits` on the host, for the same files, before the checkout changes hands.
    made = run([codescout_exe(), "hits"], repo.root, stdin="".join(f"{p}:{n}\n" for p, n in counts.items()).encode())
    assert made.returncode == 0, made.stderr
    ranked = run([codescout_exe(), "rank", "--input", "-"], repo.root, stdin=made.stdout)
    assert ranked.returncode == 0, ranked.stderr
    expected = json.loads(ranked.stdout)
    searched = run([codescout_exe(), "search", "[a-z]", "--limit", "3"], repo.root)
    assert searched.returncode == 0, searched.stderr
    expected_search = json.loads(searched.stdout)
    assert expected_search["counts"]["hits"] == 5  # the four files and .github/CODEOWNERS (hidden, searched)
    assert [(r["path"], r["last_modified_days"], r["owner"]) for r in expected["results"]] == [
        ("src/legacy/old.py", 300, "@org/everyone"),
        ("src/search/rank.py", 2, "@alice @bob"),
        ("notes/todo.txt", 7, "@org/everyone"),
        ("docs/guide.md", 0, "@org/everyone"),
    ]

    if sys.platform == "win32":  # the module runs on Linux only; this is for the type checker
        raise AssertionError("Linux only")
    for folder, dirs, files in os.walk(repo.root):
        for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.lchown(entry, 20001, 20001)
    readme = readme_docker_argv("Docker (the checkout mounted read-only at `/w`")
    argv = with_image([f"{repo.root}:/w:ro" if word.endswith(":/w:ro") else word for word in readme], image)
    assert argv == ["docker", "run", "-i", "--rm", "-v", f"{repo.root}:/w:ro", image, "mcp", "--workspace", "/w"]

    async def ask() -> Any:
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            names = [tool.name for tool in (await client.list_tools()).tools]
            assert names == [TOOL_NAME, WORKSPACE_TOOL_NAME, SEARCH_TOOL_NAME]
            hits = [{"path": path, "matches": n} for path, n in counts.items()]
            result = await client.call_tool(WORKSPACE_TOOL_NAME, {"hits": hits})
            assert not result.is_error, result.content
            # The image's own ripgrep (from the package's wheel) searches the mounted checkout.
            searched = await client.call_tool(SEARCH_TOOL_NAME, {"pattern": "[a-z]", "limit": 3})
            assert not searched.is_error, searched.content
            return result.structured_content, searched.structured_content

    assert anyio.run(ask) == (expected, expected_search)


# --- HTTP behind -p, with a token ---------------------------------------------------------------


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def post(port: int, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    """POST /mcp to the published port, naming the host as `localhost:PORT`."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=30)
    try:
        sent = {
            "Host": f"localhost:{port}",
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": "2025-11-25",
            **headers,
        }
        connection.putrequest("POST", "/mcp", skip_host=True)
        for name, value in sent.items():
            connection.putheader(name, value)
        connection.putheader("Content-Length", str(len(body)))
        connection.endheaders(body)
        response = connection.getresponse()
        return response.status, response.read()
    finally:
        connection.close()


def test_http_behind_p_needs_the_token_and_stops_on_docker_stop(image: str) -> None:
    token = uuid.uuid4().hex
    port = free_port()
    name = container_name()
    call = {
        "jsonrpc": "2.0",
        "id": 1,
        "method": "tools/call",
        "params": {"name": TOOL_NAME, "arguments": json.loads(EXAMPLE.read_text(encoding="utf-8"))},
    }
    body = json.dumps(call).encode()
    # The README's command, on a free port of the loopback address, without --rm (so that the
    # exit status can be read after the stop).
    argv = ["docker", "run", "--name", name, "-p", f"127.0.0.1:{port}:8000", "-e", f"CODESCOUT_AUTH_TOKEN={token}"]
    argv += [image, "mcp", "--transport", "streamable-http", "--host", "0.0.0.0", "--allow-host", f"localhost:{port}"]
    with removed_afterwards(name):
        server = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        try:
            deadline = time.monotonic() + 60
            while True:
                try:
                    status, answer = post(port, body, {})
                    break
                except (OSError, http.client.HTTPException):
                    assert time.monotonic() < deadline and server.poll() is None, "the server did not come up"
                    time.sleep(0.1)
            assert status == 401, answer
            status, answer = post(port, body, {"Authorization": f"Bearer {token}"})
            assert status == 200, answer
            assert json.loads(answer)["result"]["structuredContent"] == EXAMPLE_RESULT
            elapsed = timed_stop(name)
            _, stderr = server.communicate(timeout=30)
        finally:
            if server.poll() is None:
                server.kill()
                server.communicate()
        assert (elapsed < STOP_SECONDS, exit_code(name), server.returncode) == (True, 0, 0), (elapsed, stderr)
        assert b"Traceback" not in stderr


# --- docker stop of the stdio server --------------------------------------------------------------


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 1,
    "method": "initialize",
    "params": {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "stop", "version": "0"}},
}


def seconds_until_running(name: str, launched: float, server: subprocess.Popen[bytes]) -> float:
    """Wait until the container runs (PID 1 started); seconds since `docker run` was launched."""
    deadline = launched + 60
    while docker("inspect", "-f", "{{.State.Running}}", name, check=False).stdout.strip() != "true":
        assert time.monotonic() < deadline and server.poll() is None, "the container did not start"
        time.sleep(0.01)
    return time.monotonic() - launched


@pytest.mark.parametrize("when", ["as soon as it runs", "0.3 s after docker run", "3 s after docker run", "idle"])
def test_docker_stop_ends_the_stdio_server_at_once_with_status_0(image: str, when: str) -> None:
    name = container_name()
    with removed_afterwards(name):
        launched = time.monotonic()
        server = subprocess.Popen(
            ["docker", "run", "-i", "--name", name, image],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        assert server.stdin is not None and server.stdout is not None
        try:
            if when == "idle":  # started and answering, then left waiting with stdin open
                server.stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
                server.stdin.flush()
                assert select.select([server.stdout], [], [], 60)[0], "no answer to initialize"
                assert json.loads(server.stdout.readline())["result"]["serverInfo"]["version"] == __version__
            elif when != "as soon as it runs":
                time.sleep(max(0.0, launched + float(when.split()[0]) - time.monotonic()))
            running_after = seconds_until_running(name, launched, server)
            stopped_after = time.monotonic() - launched
            elapsed = timed_stop(name)
            _, stderr = server.communicate(timeout=30)
        finally:
            if server.poll() is None:
                server.kill()
                server.communicate()
        shown = f"running at {running_after:.2f} s, stopped at {stopped_after:.2f} s, took {elapsed:.2f} s"
        assert (elapsed < STOP_SECONDS, exit_code(name), server.returncode) == (True, 0, 0), (shown, stderr)
        assert b"Traceback" not in stderr


# --- a checkout nobody vetted, mounted at the trusted /w ------------------------------------------


def test_a_booby_trapped_checkout_at_w_runs_nothing_in_the_image(image: str, tmp_path: Path) -> None:
    """The image trusts /w (safe.directory), so git there reads the checkout's own config.

    Every command the repository configures (filters, textconv, hooks, fsmonitor, pager, gpg,
    a transport for missing objects: tests/repositories/test_hostile_checkouts.py) leaves a mark when it
    runs. A plain `git status` in the image shows the traps are armed and reachable; the
    README's workspace command answers from the same mount and leaves no mark.
    """
    from tests.repositories.test_hostile_checkouts import booby_trapped

    repo, marks = booby_trapped(tmp_path)
    paths = ["src/a.py", "src/b.py", "deep/dir/c.py"]
    expected, _ = workspace_call(repo.root, paths)  # on the host, for the same files
    assert not expected.get("isError"), expected
    assert sorted(p.name for p in marks.iterdir()) == []

    if sys.platform == "win32":  # the module runs on Linux only; this is for the type checker
        raise AssertionError("Linux only")
    # The checkout belongs to someone else, as a mounted one does; the traps' scripts and files
    # sit at the same paths inside the container, and the marks folder takes anyone's mark.
    for folder, dirs, files in os.walk(repo.root):
        for entry in [folder, *(os.path.join(folder, n) for n in dirs + files)]:
            os.lchown(entry, 20001, 20001)
    tmp_path.chmod(0o755)
    marks.chmod(0o777)
    mounts = ["-v", f"{tmp_path}:{tmp_path}:ro", "-v", f"{marks}:{marks}"]

    armed = docker(
        "run", "--rm", *mounts, "-v", f"{repo.root}:/w:ro", "--entrypoint", "git", image, "status", "--short",
        timeout=120, check=False,
    )  # fmt: skip
    # git's own status there runs the checkout's fsmonitor and its (included) clean filter.
    assert {"fsmonitor", "include-clean"} <= {p.name for p in marks.iterdir()}, armed.stdout + armed.stderr
    for mark in marks.iterdir():
        mark.unlink()

    readme = readme_docker_argv("Docker (the checkout mounted read-only at `/w`")
    argv = with_image([f"{repo.root}:/w:ro" if word.endswith(":/w:ro") else word for word in readme], image)
    argv[argv.index("--rm") + 1 : argv.index("--rm") + 1] = mounts

    async def ask() -> Any:
        params = StdioServerParameters(command=argv[0], args=argv[1:])
        async with Client(params, mode="legacy", read_timeout_seconds=60) as client:
            result = await client.call_tool(WORKSPACE_TOOL_NAME, {"hits": [{"path": p, "matches": 1} for p in paths]})
            assert not result.is_error, result.content
            return result.structured_content

    assert anyio.run(ask) == expected["structuredContent"]
    assert sorted(p.name for p in marks.iterdir()) == []
