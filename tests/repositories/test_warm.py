"""A server started on a workspace reads it before the first call: `codescout-mcp --workspace`.

In the background it reads what every first call reads (the ignore files, the index, the status,
CODEOWNERS) and then walks the history into the cache folder, so that a first call some seconds
after `initialize` runs no `git log`, `git status` or `git check-ignore` of its own and
answers what a server that read nothing ahead answers. A git that writes each of its command
lines to a log is what tells, here and in the control case (`--no-warm`, where the first call
runs them all: the test can see them).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import Repo, env_for
from tests.platforms import FAKE_GIT, posix_only
from tests.stdio_session import LiveSession

pytestmark = posix_only(FAKE_GIT)

COMMITS = 600


@pytest.fixture(scope="module")
def logged(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, dict[str, str]]:
    """A repository of COMMITS commits (old.py only in the first), and a git that logs its arguments."""
    root = tmp_path_factory.mktemp("warm")
    repo = Repo(root / "repo")
    stream = [b"blob\nmark :1\ndata 7\nneedle\n"]
    start = int(time.time()) - 400 * 86_400
    for number in range(COMMITS):
        name = "old.py" if number == 0 else f"src/new{number % 40}.py"
        stream.append(
            b"commit refs/heads/main\ncommitter T <t@example.com> %d +0000\ndata 1\nc\n" % (start + number * 3_600)
            + b"M 100644 :1 "
            + name.encode()
            + b"\n\n"
        )
    subprocess.run(["git", "fast-import", "--quiet"], cwd=repo.root, input=b"".join(stream), env=env_for(), check=True)
    repo.git("checkout", "-q", "-f", "main")
    (repo.root / ".gitignore").write_text("build/\n", encoding="utf-8")
    (repo.root / "build").mkdir()
    (repo.root / "build" / "out.py").write_text("needle\n", encoding="utf-8")
    shim, log = root / "shim", root / "git.log"
    shim.mkdir()
    real = shutil.which("git")
    assert real is not None
    (shim / "git").write_text(f'#!/bin/sh\nprintf "%s\\n" "$*" >> "{log}"\nexec "{real}" "$@"\n', encoding="utf-8")
    (shim / "git").chmod(0o755)
    # A file changed within a second of a status read is asked about again (file times can be
    # coarse): the checkout is made older than that before any server reads it.
    time.sleep(1.2)
    return repo.root, log, env_for(PATH=f"{shim}{os.pathsep}{env_for()['PATH']}")


def search(server: LiveSession) -> dict[str, Any]:
    result = server.call("search_workspace", {"pattern": "needle", "limit": 50})
    assert result["isError"] is False, result
    return dict(result["structuredContent"])


def lines_of(log: Path) -> list[str]:
    return log.read_text(encoding="utf-8").splitlines() if log.exists() else []


def read_ahead(lines: list[str]) -> dict[str, bool]:
    """Which of what a first call reads these git command lines include."""
    return {
        "history": any(" log " in f" {line} " for line in lines),
        "status": any(" status " in f" {line} " for line in lines),
        "ignored folders": any(" check-ignore " in f" {line} " for line in lines),
    }


def first_call(
    workspace: Path, log: Path, env: dict[str, str], cache: Path, *options: str
) -> tuple[dict[str, Any], list[str]]:
    """A fresh server's first search (once the background walk wrote its cache, when there is
    one), and the git command lines that call ran."""
    log.unlink(missing_ok=True)
    server = LiveSession("--workspace", str(workspace), *options, env=env)
    try:
        if "--no-warm" not in options:
            deadline = time.monotonic() + 60
            while not any((cache / "history").glob("*")):
                assert time.monotonic() < deadline, "the background walk wrote nothing in 60 s"
                time.sleep(0.05)
            time.sleep(0.5)  # (the walk's last git exits after the file is written)
        before = len(lines_of(log))
        answer = search(server)
        during = lines_of(log)[before:]
    finally:
        assert server.close() == 0
    return answer, during


def same_files(answer: dict[str, Any], expected: dict[str, Any]) -> None:
    """The same files, counts and ranks, each age within a day (the two servers count to their own now)."""
    assert answer["counts"] == expected["counts"]
    assert answer["search"] == expected["search"]
    assert [(r["path"], r["matches"], r["rank"]) for r in answer["results"]] == [
        (r["path"], r["matches"], r["rank"]) for r in expected["results"]
    ]
    for got, wanted in zip(answer["results"], expected["results"], strict=True):
        assert abs(got["last_modified_days"] - wanted["last_modified_days"]) <= 1


def test_a_first_call_after_the_warm_up_reads_nothing_again(
    logged: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    workspace, log, env = logged
    env = {**env, "CODESCOUT_CACHE_DIR": str(tmp_path / "cache")}
    expected, cold = first_call(workspace, log, env, tmp_path / "cache", "--no-warm", "--no-cache")
    assert read_ahead(cold) == {"history": True, "status": True, "ignored folders": True}, cold  # (the control)
    answer, during = first_call(workspace, log, env, tmp_path / "cache")
    assert read_ahead(during) == {"history": False, "status": False, "ignored folders": False}, during
    same_files(answer, expected)
    assert {r["path"] for r in answer["results"]} >= {"old.py", "src/new1.py"}


def test_a_warm_up_without_a_cache_folder_still_reads_the_checkout_ahead(
    logged: tuple[Path, Path, dict[str, str]], tmp_path: Path
) -> None:
    """With `--no-cache` the walk is kept in the server alone: the first call, once it has run,
    walks nothing either."""
    workspace, log, env = logged
    env = {**env, "CODESCOUT_CACHE_DIR": str(tmp_path / "cache")}
    log.unlink(missing_ok=True)
    server = LiveSession("--workspace", str(workspace), "--no-cache", env=env)
    try:
        deadline = time.monotonic() + 60
        while not any(" log " in f" {line} " for line in lines_of(log)):
            assert time.monotonic() < deadline, "no background walk began in 60 s"
            time.sleep(0.05)
        time.sleep(3)  # (600 commits: walked in well under a second)
        before = len(lines_of(log))
        answer = search(server)
        during = lines_of(log)[before:]
    finally:
        assert server.close() == 0
    assert read_ahead(during) == {"history": False, "status": False, "ignored folders": False}, during
    assert not (tmp_path / "cache").exists()
    assert answer["counts"]["hits"] == 41  # old.py and src/new1.py to src/new39.py, src/new0.py; not build/
