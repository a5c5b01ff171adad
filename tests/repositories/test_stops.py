"""No git or ripgrep outlives codescout, however it stops.

git and ripgrep run in sessions of their own (so a deadline can end each with whatever it
started), which no signal to codescout reaches. Here a stand-in git that sleeps (and writes
its pid) is left running under `codescout hits`, `codescout search` and `codescout-mcp
--workspace`, and each is stopped in each way a user stops it: the stand-in must be gone
after, and the exit status the documented one.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.gitrepo import Repo, env_for
from tests.helpers import codescout_exe, installed
from tests.platforms import FAKE_GIT, posix_only

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


def as_a_user_starts_it() -> None:
    """For preexec_fn: SIGINT and SIGTERM at their defaults and unblocked, as a shell starts a
    command in the foreground, whatever the test process inherited or set (a command started
    with SIGINT ignored, as a background job is, rightly ignores Ctrl-C)."""
    if sys.platform == "win32":  # POSIX-only tests; said for the type checker
        return
    for signum in (signal.SIGINT, signal.SIGTERM):
        signal.signal(signum, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGINT, signal.SIGTERM})


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


@pytest.mark.parametrize("stop", [signal.SIGTERM, signal.SIGINT])
@pytest.mark.parametrize("command", ["hits", "search"])
def test_the_command_line_ends_its_git_when_stopped(repo: Repo, tmp_path: Path, command: str, stop: int) -> None:
    env, pids = sleepy_git(tmp_path)
    argv = [codescout_exe(), "hits"] if command == "hits" else [codescout_exe(), "search", "search"]
    proc = subprocess.Popen(
        argv,
        cwd=repo.root,
        env=env,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        preexec_fn=as_a_user_starts_it,
    )
    assert proc.stdin is not None
    if command == "hits":
        proc.stdin.write(b"a.py:1\n")
    proc.stdin.close()
    started = wait_for(pids)
    proc.send_signal(stop)
    try:
        proc.wait(timeout=20)
    except subprocess.TimeoutExpired:
        raise AssertionError(f"still running 20 s after {stop!r}: {signal_state(proc.pid)}") from None
    assert proc.stderr is not None
    err = proc.stderr.read()
    # Ended with the status a shell gives a command ended by the signal, and nothing said.
    assert (proc.returncode, err) == (130 if stop == signal.SIGINT else 143, b"")
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
        [installed("codescout-mcp"), "--workspace", str(repo.root)],
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
        [installed("codescout-mcp"), "--workspace", str(repo.root)],
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
