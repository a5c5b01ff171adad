"""A call that takes a while says how far it is: MCP progress notifications, and a line on a terminal.

The long part of a first search is git's history; here a stand-in git waits two seconds before it
prints a 2,500-commit log, so that the walk is long on any machine. A client that gave a
`progressToken` gets `notifications/progress` for it before the answer (none when it gave none);
`codescout search` on a terminal writes one line over itself on stderr, and nothing otherwise.
"""

from __future__ import annotations

import json
import os
import select
import shutil
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import Repo, env_for
from tests.helpers import codescout_exe, installed
from tests.platforms import FAKE_GIT, posix_only

pytestmark = posix_only(FAKE_GIT)

COMMITS = 2_500


@pytest.fixture(scope="module")
def long_history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, str]]:
    """A repository of COMMITS commits (old.py only in the first), and a git that is slow to log."""
    root = tmp_path_factory.mktemp("progress")
    repo = Repo(root / "repo")
    stream = [b"blob\nmark :1\ndata 7\nneedle\n"]
    for number in range(COMMITS):
        name = "old.py" if number == 0 else f"new{number % 50}.py"
        stamp = 1_700_000_000 + number * 60
        message = b"c"
        stream.append(
            b"commit refs/heads/main\n"
            + b"committer T <t@example.com> %d +0000\ndata %d\n%s\n" % (stamp, len(message), message)
            + b"M 100644 :1 "
            + name.encode()
            + b"\n\n"
        )
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo.root, input=b"".join(stream), env=env_for(), check=True)
    repo.git("checkout", "-q", "-f", "main")
    shim = root / "shim"
    shim.mkdir()
    real = shutil.which("git")
    assert real is not None
    (shim / "git").write_text(
        f'#!/bin/sh\ncase " $* " in *" log "*) sleep 2;; esac\nexec "{real}" "$@"\n', encoding="utf-8"
    )
    (shim / "git").chmod(0o755)
    env = env_for(PATH=f"{shim}{os.pathsep}{env_for()['PATH']}")
    return repo.root, env


def converse(workspace: Path, env: dict[str, str], meta: dict[str, Any] | None) -> list[dict[str, Any]]:
    """Every message the server wrote for one search_workspace call (with `meta` as its `_meta`)."""
    params: dict[str, Any] = {"name": "search_workspace", "arguments": {"pattern": "needle", "limit": 100}}
    if meta is not None:
        params["_meta"] = meta
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params},
    ]  # fmt: skip
    done = subprocess.run(
        [installed("codescout-mcp"), "--workspace", str(workspace), "--no-warm", "--no-cache"],
        input="".join(json.dumps(line) + "\n" for line in lines).encode(),
        capture_output=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return [json.loads(line) for line in done.stdout.decode().splitlines()]


def test_a_long_search_sends_progress_for_its_token_before_its_answer(
    long_history: tuple[Path, dict[str, str]],
) -> None:
    workspace, env = long_history
    messages = converse(workspace, env, {"progressToken": "first-search"})
    answer = next(index for index, message in enumerate(messages) if message.get("id") == 2)
    progress = [message for message in messages if message.get("method") == "notifications/progress"]
    assert progress, messages
    assert all(messages.index(message) < answer for message in progress)
    steps = [message["params"]["progress"] for message in progress]
    assert steps == sorted(set(steps))  # growing, each report new
    for message in progress:
        assert message["params"]["progressToken"] == "first-search"
        assert message["params"]["message"] == f"read {message['params']['progress']:,} commits of git history"
    result = messages[answer]["result"]
    assert result["isError"] is False
    paths = {entry["path"]: entry["last_modified_days"] for entry in result["structuredContent"]["results"]}
    assert set(paths) >= {"old.py"}


def test_a_call_without_a_token_gets_no_progress(long_history: tuple[Path, dict[str, str]]) -> None:
    workspace, env = long_history
    messages = converse(workspace, env, None)
    assert [message.get("method") for message in messages if "method" in message] == []
    assert {message.get("id") for message in messages} == {1, 2}


def test_the_command_line_shows_progress_on_a_terminal_and_clears_it(long_history: tuple[Path, dict[str, str]]) -> None:
    workspace, env = long_history
    if sys.platform == "win32":  # POSIX-only; for the type checker
        raise AssertionError("no pseudo-terminals on Windows")
    import pty  # (POSIX's alone: not imported where the suite is collected as Windows would)

    leader, follower = pty.openpty()
    proc = subprocess.Popen(
        [codescout_exe(), "search", "needle", "--no-cache", "--limit", "1"],
        cwd=workspace,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=follower,
    )
    os.close(follower)
    seen = b""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        ready, _, _ = select.select([leader], [], [], 0.5)
        if ready:
            try:
                chunk = os.read(leader, 4096)
            except OSError:  # the last writer closed it
                break
            if not chunk:
                break
            seen += chunk
        elif proc.poll() is not None:
            break
    out, _ = proc.communicate(timeout=60)
    os.close(leader)
    assert proc.returncode == 0
    assert json.loads(out)["counts"]["hits"] == 51  # old.py and new0.py to new49.py
    assert b"\rcodescout: read 1,000 commits of git history" in seen or b"commits of git history" in seen, seen
    assert seen.endswith(b"\r"), seen  # the line is cleared: spaces over it, back to its start
    plain = subprocess.run(
        [codescout_exe(), "search", "needle", "--no-cache", "--limit", "1"],
        cwd=workspace,
        env=env,
        capture_output=True,
        check=False,
    )
    assert (plain.returncode, plain.stderr) == (0, b"")  # not a terminal: nothing said
