"""No git or ripgrep outlives codescout, however it stops, nor the call it was started for.

git and ripgrep run in sessions of their own (so a deadline can end each with whatever it
started), which no signal to codescout reaches. Here a stand-in git that sleeps (and writes
its pid) is left running under `codescout hits`, `codescout search` and `codescout-mcp
--workspace`, and each is stopped in each way a user stops it: the stand-in must be gone
after, and the exit status the documented one.

Then the calls themselves: a call the client cancels (over stdio, before and after the SDK has
loaded, through the door and through the SDK's handler) or abandons (an HTTP client that
leaves) ends its git and its ripgrep at once, its thread with them, and gives its slot back
only then; and a batch's calls share one deadline.
"""

from __future__ import annotations

import http.client
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from codescout_mcp.answers import words
from codescout_mcp.facts.lookup import Lookup
from codescout_mcp.http.budget import Budget, Held
from codescout_mcp.http.exchange import batch_answer
from codescout_mcp.server import build_server
from codescout_mcp.system.processes import Cancelled, Stop, working_for
from codescout_mcp.tools.search import SEARCHES_AT_ONCE, SearchTool
from codescout_mcp.tools.toolbox import Offer
from codescout_mcp.tools.workspace import Workspace
from tests.gitrepo import Repo, env_for
from tests.helpers import codescout_exe, installed
from tests.httpserver import RunningServer
from tests.platforms import FAKE_GIT, LINUX, linux_only, posix_only

pytestmark = posix_only(FAKE_GIT)


def sleepy_git(tmp_path: Path) -> tuple[dict[str, str], Path]:
    """An environment whose git writes its pid into a file and then sleeps for a minute."""
    shim = tmp_path / "shim"
    shim.mkdir()
    pids = tmp_path / "pids"
    (shim / "git").write_text(f'#!/bin/sh\necho $$ >> "{pids}"\nexec sleep 60\n', encoding="utf-8")
    (shim / "git").chmod(0o755)
    env = env_for()
    env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
    return env, pids


def wait_for(path: Path, seconds: float = 20) -> list[int]:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text().strip():
            return [int(line) for line in path.read_text().split()]
        time.sleep(0.05)
    raise AssertionError(f"no git started within {seconds} s")


# By name, the same on every system: Windows has neither SIGHUP nor SIGQUIT.
CLI_STOPS = ["SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"]


def as_a_user_starts_it(*, ignoring: str | None = None) -> None:
    """For preexec_fn: the stop signals at their defaults and unblocked, as a shell starts a
    command in the foreground, whatever the test process inherited or set; but `ignoring`
    ignored (a command started with SIGINT ignored, as a background job is, rightly ignores
    Ctrl-C; one started under `nohup`, a hangup)."""
    if sys.platform == "win32":  # POSIX-only tests; said for the type checker
        return
    stops = {getattr(signal, name) for name in CLI_STOPS}
    for signum in stops:
        signal.signal(signum, signal.SIG_DFL)
    if ignoring is not None:
        signal.signal(getattr(signal, ignoring), signal.SIG_IGN)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)


def stopped_status(stop: str) -> int:
    """The status a shell reports for a command the signal `stop` ended: 128 and its number."""
    return 128 + int(getattr(signal, stop))


def signal_state(pid: int) -> str:
    """A process's blocked, ignored and caught signals, as /proc gives them (Linux)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError as error:
        return f"no /proc status ({error})"
    return " ".join(line for line in status.splitlines() if line.startswith(("SigBlk", "SigIgn", "SigCgt", "State")))


def alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    # A zombie of a child already ended counts as gone.
    try:
        return Path(f"/proc/{pid}/stat").read_text().split()[2] != "Z"
    except OSError:
        return True


def gone(pids: list[int], seconds: float = 5) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if not any(alive(pid) for pid in pids):
            return True
        time.sleep(0.05)
    return False


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "r")
    r.write("a.py", "search\n")
    r.commit("2026-01-01T00:00:00Z", "a.py")
    return r


def command_waiting_on_git(
    repo: Repo, tmp_path: Path, command: str, *, ignoring: str | None = None
) -> tuple[subprocess.Popen[bytes], list[int]]:
    """`codescout hits` or `codescout search` in a git call that sleeps, started as a user starts it."""
    env, pids = sleepy_git(tmp_path)
    argv = [codescout_exe(), "hits"] if command == "hits" else [codescout_exe(), "search", "search"]
    proc = subprocess.Popen(
        argv,
        cwd=repo.root,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: as_a_user_starts_it(ignoring=ignoring),
    )
    assert proc.stdin is not None
    if command == "hits":
        proc.stdin.write(b"a.py:1\n")
    proc.stdin.close()
    return proc, wait_for(pids)


def stop_and_wait(proc: subprocess.Popen[bytes], stop: str) -> tuple[int, bytes]:
    """Send `stop`; the exit status and all said on stderr."""
    proc.send_signal(getattr(signal, stop))
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running 20 s after {stop}: {signal_state(proc.pid)}") from None
    assert proc.stderr is not None
    return proc.returncode, proc.stderr.read()


@pytest.mark.parametrize("stop", CLI_STOPS)
@pytest.mark.parametrize("command", ["hits", "search"])
def test_the_command_line_ends_its_git_when_stopped(repo: Repo, tmp_path: Path, command: str, stop: str) -> None:
    proc, started = command_waiting_on_git(repo, tmp_path, command)
    # Ended with the status a shell gives a command ended by the signal, and nothing said.
    assert stop_and_wait(proc, stop) == (stopped_status(stop), b"")
    assert gone(started), f"git left running: {started}"


@pytest.mark.parametrize("ignored", ["SIGINT", "SIGHUP", "SIGQUIT"])
def test_the_command_line_started_ignoring_a_stop_ignores_it(repo: Repo, tmp_path: Path, ignored: str) -> None:
    """Started with SIGHUP ignored (`nohup`), or SIGINT and SIGQUIT (a script's background job),
    the command keeps that choice and goes on; SIGTERM still stops it, and its git."""
    proc, started = command_waiting_on_git(repo, tmp_path, "hits", ignoring=ignored)
    proc.send_signal(getattr(signal, ignored))
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=1.5)
    assert not gone(started, seconds=0.1)
    assert stop_and_wait(proc, "SIGTERM") == (stopped_status("SIGTERM"), b"")
    assert gone(started), f"git left running: {started}"


# `codescout` as its console script runs it, but with a stop signal raised inside Popen once the
# stand-in git has written its pid: what a loaded machine does when the signal comes after the
# child runs and before Popen, waiting to hear that the exec went well, has returned.
STOP_INSIDE_POPEN = """
import os, signal, subprocess, sys, time

stop, pids = getattr(signal, sys.argv[1]), sys.argv[2]
real_popen = subprocess.Popen

def popen(*args, **kwargs):
    proc = real_popen(*args, **kwargs)
    while not (os.path.exists(pids) and open(pids).read().strip()):
        time.sleep(0.01)
    signal.raise_signal(stop)  # its handler runs here
    return proc

subprocess.Popen = popen
sys.argv = ["codescout", *sys.argv[3:]]
from codescout_mcp.cli.entry import codescout
codescout()
"""


@pytest.mark.parametrize("stop", CLI_STOPS)
def test_a_stop_while_git_starts_ends_that_git_too(repo: Repo, tmp_path: Path, stop: str) -> None:
    env, pids = sleepy_git(tmp_path)
    proc = subprocess.run(
        [sys.executable, "-c", STOP_INSIDE_POPEN, stop, str(pids), "hits"],
        cwd=repo.root,
        env=env,
        input=b"a.py:1\n",
        capture_output=True,
        timeout=60,
        preexec_fn=as_a_user_starts_it,
        check=False,
    )
    assert (proc.returncode, proc.stderr) == (stopped_status(stop), b"")
    started = [int(line) for line in pids.read_text().split()]
    assert gone(started), f"git left running: {started}"


CALL_LINES = [
    {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
    {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "name": "rank_workspace_hits", "arguments": {"hits": [{"path": "a.py", "matches": 1}]}}},
]  # fmt: skip


def server_waiting_on_git(repo: Repo, tmp_path: Path, *, hangup: object) -> tuple[subprocess.Popen[bytes], list[int]]:
    """`codescout-mcp --workspace` in a call that waits on git, started with SIGHUP set to `hangup`.

    The disposition is set for the child alone, whatever this run inherited: a suite started
    under `nohup` (or by a hook in the background) hands its children SIGHUP ignored.
    """
    env, pids = sleepy_git(tmp_path)
    hup = signal.SIGHUP  # type: ignore[attr-defined, unused-ignore]  # POSIX-only module
    proc = subprocess.Popen(
        [installed("codescout-mcp"), "--workspace", str(repo.root), "--no-warm"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=lambda: signal.signal(hup, hangup),  # type: ignore[arg-type]
    )
    assert proc.stdin is not None
    proc.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in CALL_LINES))
    proc.stdin.flush()
    return proc, wait_for(pids)


# By name, the same on every system: Windows has no SIGHUP (this module is POSIX-only there).
SERVER_STOPS = ["SIGTERM", "SIGINT", "SIGHUP"]


@pytest.mark.parametrize("stop", SERVER_STOPS)
def test_the_server_ends_its_git_when_stopped(repo: Repo, tmp_path: Path, stop: str) -> None:
    proc, started = server_waiting_on_git(repo, tmp_path, hangup=signal.SIG_DFL)
    proc.send_signal(getattr(signal, stop))
    _, err = proc.communicate(timeout=20)
    assert proc.returncode == 0, err
    assert b"Traceback" not in err
    assert gone(started), f"git left running: {started}"


def test_a_server_started_under_nohup_outlives_a_hangup(repo: Repo, tmp_path: Path) -> None:
    """Started with SIGHUP ignored (`nohup`), the server keeps serving through one; SIGTERM still stops it."""
    proc, started = server_waiting_on_git(repo, tmp_path, hangup=signal.SIG_IGN)
    proc.send_signal(signal.SIGHUP)  # type: ignore[attr-defined, unused-ignore]
    with pytest.raises(subprocess.TimeoutExpired):
        proc.wait(timeout=1.5)
    assert not gone(started, seconds=0.1)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=20)
    assert (proc.returncode, b"Traceback" in err) == (0, False), err
    assert gone(started), f"git left running: {started}"


def test_the_server_ends_its_git_when_stdin_ends_and_nobody_reads(repo: Repo, tmp_path: Path) -> None:
    """The client leaves (both pipes closed) while a call waits on git: the server leaves, and so does git."""
    env, pids = sleepy_git(tmp_path)
    proc = subprocess.Popen(
        [installed("codescout-mcp"), "--workspace", str(repo.root), "--no-warm"],
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )
    assert proc.stdin is not None and proc.stdout is not None
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "rank_workspace_hits", "arguments": {"hits": [{"path": "a.py", "matches": 1}]}}},
    ]  # fmt: skip
    proc.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
    proc.stdin.flush()
    started = wait_for(pids)
    proc.stdout.close()
    proc.stdin.close()
    assert proc.wait(timeout=20) == 0
    assert gone(started), f"git left running: {started}"


# --- a call cancelled or abandoned ends its work ---------------------------------------------

OPENING = [
    {"jsonrpc": "2.0", "id": "open", "method": "initialize", "params": {
        "protocolVersion": "2025-03-26", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
    {"jsonrpc": "2.0", "method": "notifications/initialized"},
]  # fmt: skip
# A request only the SDK answers: its answer says the SDK is up.
SDK_UP = {"jsonrpc": "2.0", "id": "up", "method": "codescout/no-such-method"}
WORKSPACE_CALL = {"name": "rank_workspace_hits", "arguments": {"hits": [{"path": "a.py", "matches": 1}]}}
RANK_CALL = {
    "name": "rank_search_results",
    "arguments": {"hits": [{"path": "a.py", "matches": 1, "last_modified_days": 2}]},
}


def call(rid: object, params: dict[str, Any], *, shape: str = "door") -> dict[str, Any]:
    """A tools/call; of the "sdk" shape, one the door leaves to the SDK's handler (a key it does not vouch for)."""
    if shape == "sdk":
        params = {**params, "unvouched": True}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def cancel(rid: object) -> dict[str, Any]:
    return {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": rid}}


class Stdio:
    """A stdio server over pipes: messages written, answers collected by a thread as they come."""

    def __init__(self, argv: list[str], env: dict[str, str]) -> None:
        self.proc = subprocess.Popen(
            argv, env=env, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE
        )
        self.answers: dict[str, dict[str, Any]] = {}
        self.lock = threading.Condition()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            value = json.loads(line)
            with self.lock:
                for answer in value if isinstance(value, list) else [value]:
                    self.answers[json.dumps(answer.get("id"))] = answer
                self.lock.notify_all()

    def send(self, *messages: object) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(b"".join(json.dumps(message).encode() + b"\n" for message in messages))
        self.proc.stdin.flush()

    def answer(self, rid: object, seconds: float = 30) -> dict[str, Any]:
        key = json.dumps(rid)
        with self.lock:
            if not self.lock.wait_for(lambda: key in self.answers, timeout=seconds):
                raise AssertionError(f"no answer to {rid!r} within {seconds} s")
            return self.answers[key]

    def threads(self) -> int:
        """How many threads the server runs (Linux: /proc; elsewhere 0, nothing to compare)."""
        return len(os.listdir(f"/proc/{self.proc.pid}/task")) if LINUX else 0

    def close(self) -> str:
        assert self.proc.stdin is not None and self.proc.stderr is not None
        self.proc.stdin.close()
        try:
            self.proc.wait(timeout=30)
        finally:
            if self.proc.poll() is None:
                self.proc.kill()
        return self.proc.stderr.read().decode("utf-8", "replace")


def threads_back_to(server: Stdio, baseline: int, seconds: float = 10) -> int:
    deadline = time.monotonic() + seconds
    while server.threads() > baseline and time.monotonic() < deadline:
        time.sleep(0.05)
    return server.threads()


CALLS = 12


@pytest.mark.parametrize("shape", ["door", "sdk"])
def test_cancelled_calls_end_their_git_and_their_threads_and_the_session_goes_on(
    repo: Repo, tmp_path: Path, shape: str
) -> None:
    """Calls each waiting on a git that sleeps a minute (one runs it, the others wait for the
    workspace), then each cancelled: git is gone at once, so are the threads, nothing is
    answered for them, and the next call is answered. Through the door, and through the SDK's
    own handler (an odd shape the door leaves to it)."""
    env, pids = sleepy_git(tmp_path)
    server = Stdio([installed("codescout-mcp"), "--workspace", str(repo.root), "--no-warm"], env)
    try:
        server.send(*OPENING, SDK_UP)
        server.answer("up")
        baseline = server.threads()
        server.send(*(call(n, WORKSPACE_CALL, shape=shape) for n in range(CALLS)))
        started = wait_for(pids)
        server.send(*(cancel(n) for n in range(CALLS)))
        assert gone(started), f"git left running: {started}"
        assert threads_back_to(server, baseline) <= baseline
        server.send(call("next", RANK_CALL))
        assert server.answer("next")["result"]["isError"] is False
        assert not set(server.answers) & {json.dumps(n) for n in range(CALLS)}
        assert len(pids.read_text().split()) < CALLS  # the cancelled calls waiting for the workspace never ran git
    finally:
        err = server.close()
    assert "Traceback" not in err, err


@posix_only(FAKE_GIT)
def test_a_cancelled_search_ends_the_git_it_reads_ahead_with(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A search reads the status beside its ripgrep, for the same call: cancelled while that
    git sleeps, the call ends within seconds, and so do the git and the thread."""
    real = shutil.which("git")
    shim, pids = tmp_path / "shim", tmp_path / "pids"
    shim.mkdir()
    (shim / "git").write_text(
        f'#!/bin/sh\ncase " $* " in *" status "*) echo $$ >> "{pids}"; exec sleep 60;; esac\nexec "{real}" "$@"\n',
        encoding="utf-8",
    )
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")
    tool, stop, ended = SearchTool(Workspace(str(repo.root))), Stop(), []

    def call() -> None:
        with working_for(stop):
            try:
                tool.search({"pattern": "search"}, Lookup(time.time(), seconds=120))
            except Cancelled:
                ended.append("cancelled")

    thread = threading.Thread(target=call)
    thread.start()
    started = wait_for(pids)
    stop.cancel()
    thread.join(10)
    assert not thread.is_alive() and ended == ["cancelled"]
    assert gone(started), f"git left running: {started}"
    assert not [ahead for ahead in threading.enumerate() if ahead.name == "codescout-ahead"]


def ripgreps_in(folder: Path, *, searching: bool = False) -> list[int]:
    """The ripgrep processes working in `folder` (Linux: /proc); with `searching`, only those
    that search (not the listing of files beside each search)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cwd = os.readlink(f"/proc/{entry}/cwd")
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cwd == str(folder) and os.path.basename(argv[0]) == b"rg" and (not searching or b"--json" in argv):
                found.append(int(entry))
    return found


@linux_only("/proc to see what runs")
@pytest.mark.parametrize("shape", ["door", "sdk"])
def test_cancelled_searches_end_their_ripgreps(repo: Repo, tmp_path: Path, shape: str) -> None:
    """Searches that take ripgrep many seconds (a pattern that matches the empty string, over
    2,000 files), as many as may run at once and two more waiting in line, then cancelled:
    every ripgrep is gone within seconds, and so is every thread the calls took."""
    for number in range(2_000):
        (repo.root / f"text{number}.txt").write_text("some words on a line of text\n" * 200, encoding="utf-8")
    server = Stdio([installed("codescout-mcp"), "--workspace", str(repo.root)], env_for())
    searches = SEARCHES_AT_ONCE + 2
    try:
        server.send(*OPENING, SDK_UP)
        server.answer("up")
        baseline = server.threads()
        server.send(
            *(
                call(n, {"name": "search_workspace", "arguments": {"pattern": "x*"}}, shape=shape)
                for n in range(searches)
            )
        )
        deadline = time.monotonic() + 40
        while len(ripgreps_in(repo.root, searching=True)) < SEARCHES_AT_ONCE and time.monotonic() < deadline:
            time.sleep(0.05)
        running = ripgreps_in(repo.root)
        assert len(ripgreps_in(repo.root, searching=True)) == SEARCHES_AT_ONCE
        server.send(*(cancel(n) for n in range(searches)))
        assert gone(running), f"ripgrep left running: {running}"
        assert threads_back_to(server, baseline) <= baseline
        server.send(call("next", RANK_CALL))
        assert server.answer("next")["result"]["isError"] is False
    finally:
        err = server.close()
    assert "Traceback" not in err, err


# The stdio server with the SDK's import held back `sys.argv[2]` seconds.
LATE_SDK = (
    "import sys, time\nfrom codescout_mcp import stdio\n"
    "run = stdio.Loader._run\nstdio.Loader._run = lambda self: (time.sleep(float(sys.argv[2])), run(self))\n"
    "sys.exit(stdio.serve_stdio(workspace=sys.argv[1]))\n"
)


@pytest.mark.parametrize("cancelled", ["before the SDK is up", "once the SDK is up"])
def test_a_call_begun_before_the_sdk_loaded_ends_its_git_when_cancelled(
    repo: Repo, tmp_path: Path, cancelled: str
) -> None:
    """A call answered before the SDK loaded (a thread of its own), cancelled while the SDK still
    loads, or once it is up (the session adopted the call): its git is gone at once."""
    env, pids = sleepy_git(tmp_path)
    late = "60" if cancelled == "before the SDK is up" else "2"
    server = Stdio([sys.executable, "-c", LATE_SDK, str(repo.root), late], env)
    try:
        server.send(*OPENING, call(1, WORKSPACE_CALL))
        started = wait_for(pids)
        if cancelled == "once the SDK is up":
            server.send(SDK_UP)
            server.answer("up")
        server.send(cancel(1))
        assert gone(started), f"git left running: {started}"
        server.send(call("next", RANK_CALL))
        assert server.answer("next")["result"]["isError"] is False
        assert "1" not in server.answers
    finally:
        err = server.close()
    assert "Traceback" not in err, err


# The stdio server with a batch's time cut to 3 s.
SHORT_BATCHES = (
    "import sys\nfrom codescout_mcp.stdio import relay\nrelay.CALL_SECONDS = 3.0\n"
    "from codescout_mcp import stdio\nsys.exit(stdio.serve_stdio(workspace=sys.argv[1]))\n"
)
BATCH = [*(call(n, WORKSPACE_CALL) for n in range(3)), {"jsonrpc": "2.0", "id": "ping", "method": "ping"}]


def test_a_stdio_batchs_calls_share_one_deadline(repo: Repo, tmp_path: Path) -> None:
    """Three calls in a 2025-03-26 batch, each waiting on a git that sleeps a minute: the batch is
    answered once its one deadline (3 s here, CALL_SECONDS in use) has passed, not 3 calls' worth
    later; the calls past it are tool errors, and the ping is answered as ever."""
    env, pids = sleepy_git(tmp_path)
    server = Stdio([sys.executable, "-c", SHORT_BATCHES, str(repo.root)], env)
    try:
        server.send(*OPENING, SDK_UP)
        server.answer("up")
        started = time.monotonic()
        server.send(BATCH)
        answers = [server.answer(n, seconds=60) for n in range(3)]
        elapsed = time.monotonic() - started
        assert server.answer("ping")["result"] == {}
    finally:
        err = server.close()
    assert elapsed < 20, elapsed  # (3 s, on a busy machine; a minute or more a call before)
    assert [answer["result"]["isError"] for answer in answers] == [True, True, True]
    assert gone(wait_for(pids)), "git left running"
    assert "Traceback" not in err, err


def test_an_http_batchs_calls_share_one_deadline(repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Over HTTP a batch's members run one after another: the first is held to the batch's
    deadline (3 s here), and those after it are not run, each a tool error saying why; the ping
    after them is answered as ever."""
    env, pids = sleepy_git(tmp_path)
    monkeypatch.setenv("PATH", env["PATH"])
    offer = Offer(str(repo.root))
    server, door = build_server(offer=offer), offer.door()

    async def serve() -> bytes | None:
        held = Held(Budget(1 << 20), time.monotonic() + 60)
        return await batch_answer(server, door, [*BATCH], "2025-03-26", held, seconds=3.0)

    started = time.monotonic()
    data = anyio.run(serve)
    elapsed = time.monotonic() - started
    assert data is not None
    answers = {json.dumps(answer["id"]): answer for answer in json.loads(data)}
    assert elapsed < 15, elapsed
    first = answers["0"]["result"]
    assert first["isError"] is True and "took longer than" in first["content"][0]["text"], first
    late = words.tool_error(words.BATCH_OUT_OF_TIME)
    assert (answers["1"]["result"], answers["2"]["result"]) == (late, late)
    assert answers['"ping"']["result"] == {}
    assert len(wait_for(pids)) == 1 and gone(wait_for(pids))


@pytest.mark.parametrize("sent", ["a call", "an odd call", "a batch"])
def test_an_http_client_that_leaves_ends_its_call_and_its_slot_comes_back(
    repo: Repo, tmp_path: Path, sent: str
) -> None:
    """A client leaves while its call waits on a git that sleeps a minute: git is gone at once,
    and the one slot (--max-concurrent 1) serves the next request. A call the door answers, one
    of a shape it leaves to the SDK's handler, and a batch's."""
    env, pids = sleepy_git(tmp_path)
    server = RunningServer("--workspace", str(repo.root), "--no-warm", "--max-concurrent", "1", env=env)
    try:
        if sent != "a batch":
            shape = "sdk" if sent == "an odd call" else "door"
            body, version = json.dumps(call(1, WORKSPACE_CALL, shape=shape)), "2025-06-18"
        else:
            body, version = json.dumps([call(1, WORKSPACE_CALL), call(2, WORKSPACE_CALL)]), "2025-03-26"
        connection = http.client.HTTPConnection("127.0.0.1", server.port, timeout=30)
        headers = {
            "Content-Type": "application/json",
            "Accept": "application/json, text/event-stream",
            "MCP-Protocol-Version": version,
        }
        connection.request("POST", "/mcp", body.encode(), headers)
        started = wait_for(pids)
        assert connection.sock is not None
        connection.sock.shutdown(socket.SHUT_RDWR)
        connection.close()
        assert gone(started), f"git left running: {started}"
        began = time.monotonic()
        status, data = server.post(json.dumps(call(3, RANK_CALL)).encode(), {"MCP-Protocol-Version": "2025-06-18"})
        assert (status, json.loads(data)["result"]["isError"]) == (200, False)
        assert time.monotonic() - began < 10
        assert len(pids.read_text().split()) == 1  # the batch's second call never ran
    finally:
        status, log = server.stop()
    assert status == 0, log
    assert "Traceback" not in log, log
