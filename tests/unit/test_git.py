"""git run in process (`facts/git.py`): deadlines, failures named in one line, the caller's GIT_* variables."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import pytest

from codescout_mcp.facts.git import PINNED, UNPINNED, Git, GitError
from codescout_mcp.facts.repository import Lookup, RepositoryFacts
from codescout_mcp.processes import CHILD_DATA_BYTES, run_child
from tests.gitrepo import NOW_SECONDS
from tests.platforms import FAKE_GIT, linux_only, posix_only


def facts_of(root: Path, **options: object) -> tuple[RepositoryFacts, list[str]]:
    warnings: list[str] = []
    facts = RepositoryFacts.open(root, warn=warnings.append, isolated=True, **options)  # type: ignore[arg-type]
    return facts, warnings


def days(facts: RepositoryFacts, *names: str, cached_only: bool = False, notes: list[str] | None = None) -> list[int]:
    facts.refresh()
    looked_up = facts.describe(names, Lookup(NOW_SECONDS, cached_only=cached_only))
    if notes is not None:
        notes[:] = looked_up.notes
    found = []
    for name in names:
        fact = looked_up.facts[name]
        assert not isinstance(fact, OSError), fact
        found.append(fact.days)
    return found


def fake_git(script: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A `git` on PATH that runs this shell script instead."""
    shim = tmp_path / "shim"
    shim.mkdir()
    (shim / "git").write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")


@posix_only(FAKE_GIT)
def test_git_that_overruns_its_timeout_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_git("sleep 5", tmp_path, monkeypatch)
    git = Git(tmp_path, timeout=0.2)
    started = time.monotonic()
    with pytest.raises(GitError) as caught:
        git.run("status")
    assert str(caught.value) == f"git status took longer than 0 s in {tmp_path}"
    with git.stream("log") as out:
        time.sleep(0.3)
        with pytest.raises(GitError, match=rf"^git log took longer than 0 s in {tmp_path}$"):
            out.read(10)
    assert time.monotonic() - started < 4


def test_git_failures_name_the_command_and_its_last_line(tmp_path: Path) -> None:
    with pytest.raises(GitError) as caught:
        Git(tmp_path).run("status")
    assert str(caught.value).startswith(f"git status failed in {tmp_path}: fatal: not a git repository")
    assert Git(tmp_path).run("status", check=False)[0] != 0


@posix_only(FAKE_GIT)
def test_git_that_fails_without_a_word_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_git("exit 3", tmp_path, monkeypatch)
    with pytest.raises(GitError) as caught:
        Git(tmp_path).run("status")
    assert str(caught.value) == f"git status failed in {tmp_path}: exit status 3, and nothing said"


def test_git_keeps_or_clears_the_callers_git_variables(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_DIR", "/nowhere")
    assert Git(tmp_path).env["GIT_DIR"] == "/nowhere"
    assert "GIT_DIR" not in Git(tmp_path, isolated=True).env
    command = Git(tmp_path).command("log")
    assert command[0] == shutil.which("git") and command[-1] == "log"
    assert command[1:4] == ["--no-pager", "--no-optional-locks", "--literal-pathspecs"]
    assert command[4:6] == ["-c", "core.fsmonitor=false"] and "log.showRoot=true" in command


def test_every_setting_that_changes_what_git_prints_is_pinned_or_named_harmless() -> None:
    """Each of git's log.*, status.*, diff.* and i18n.* settings that this git lists is pinned on
    every command line or named, with its reason, as one that changes nothing read here."""
    listed = subprocess.run(["git", "help", "--config"], capture_output=True, text=True, check=True).stdout.split()
    families = ("log.", "status.", "diff.", "i18n.")
    settings = {name for name in listed if name.startswith(families) and "<" not in name}
    pinned = {key for key, _ in PINNED}
    assert settings - pinned - set(UNPINNED) == set()
    assert not pinned & set(UNPINNED)
    assert all(reason for reason in UNPINNED.values())


@linux_only("RLIMIT_DATA, set on a running child through prlimit")
def test_a_child_that_would_take_more_memory_than_the_bound_fails_instead() -> None:
    """git reading /dev/zero (or ripgrep an endless ignore file) fails at CHILD_DATA_BYTES, not the machine's end."""
    grab = f"import sys, time; time.sleep(0.3); b = bytearray({CHILD_DATA_BYTES + (256 << 20)}); sys.exit(0)"
    status, _, err = run_child([sys.executable, "-c", grab], cwd=".", env=dict(os.environ), seconds=30)
    assert status != 0 and b"MemoryError" in err
    fits = f"import sys, time; time.sleep(0.3); b = bytearray({64 << 20}); sys.exit(0)"
    assert run_child([sys.executable, "-c", fits], cwd=".", env=dict(os.environ), seconds=30)[0] == 0
