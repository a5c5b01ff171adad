"""Real git repositories with controlled dates, and real ripgrep, for the tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import tempfile
from pathlib import Path
from typing import Any

from tests.helpers import BIN, codescout_exe, installed

NOW = "2026-03-01T00:00:00Z"
NOW_SECONDS = 1772323200.0  # NOW as POSIX seconds, worked out by hand
DAY = 86_400


def rg_exe() -> str:
    found = shutil.which("rg", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        raise RuntimeError("ripgrep is not installed; pip install -e .[test] brings it")
    return found


def env_for(**extra: str) -> dict[str, str]:
    # Keep git away from any repository around the temp dirs and from the user's settings.
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "GIT_CEILING_DIRECTORIES": tempfile.gettempdir(),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
        **extra,
    }


class Repo:
    """A git repository whose commits carry the dates the test gives them."""

    def __init__(self, root: Path, *, init: bool = True) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        if init:
            self.git("init", "-q", "-b", "main")

    def git(self, *args: str, date: str | None = None, author_date: str | None = None, check: bool = True) -> str:
        env = env_for()
        if date is not None:
            env.update(GIT_AUTHOR_DATE=author_date or date, GIT_COMMITTER_DATE=date)
        done = subprocess.run(
            ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
            cwd=self.root,
            env=env,
            check=check,
            capture_output=True,
        )
        return done.stdout.decode("utf-8", "surrogateescape")

    def write(self, name: str | bytes, text: str) -> Path:
        path = Path(os.fsdecode(self.root / os.fsdecode(name)))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def commit(self, date: str, *names: str, author_date: str | None = None, message: str | None = None) -> None:
        if names:
            self.git("add", "--", *names)
        self.git(
            "commit", "-q", "--allow-empty", "-m", message or f"change {' '.join(names)}",
            date=date, author_date=author_date,
        )  # fmt: skip


def run(
    argv: list[str], cwd: Path, stdin: bytes | None = None, env: dict[str, str] | None = None, timeout: float = 120
) -> subprocess.CompletedProcess[bytes]:
    """A command as a user runs it (a hang is a failure after `timeout` seconds, not a stuck suite)."""
    return subprocess.run(
        argv, cwd=cwd, input=stdin, capture_output=True, env=env or env_for(), timeout=timeout, check=False
    )


def hits_of(cwd: Path, stdin: bytes, *args: str, env: dict[str, str] | None = None) -> dict[str, Any]:
    """`codescout hits` (with --now NOW unless told otherwise) on some ripgrep output."""
    argv = [codescout_exe(), "hits", *(args or ("--now", NOW))]
    done = run(argv, cwd, stdin=stdin, env=env)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


def hits_from_rg(cwd: Path, *rg_args: str, hits_args: tuple[str, ...] = ("--now", NOW)) -> dict[str, Any]:
    rg = run([rg_exe(), *rg_args], cwd)
    assert rg.returncode == 0, rg.stderr
    return hits_of(cwd, rg.stdout, *hits_args)


def days_of(result: dict[str, Any]) -> dict[str, int]:
    return {hit["path"]: hit["last_modified_days"] for hit in result["hits"]}


def workspace_call(
    workspace: Path, hit_paths: list[str], *, env: dict[str, str] | None = None, cwd: Path | None = None
) -> tuple[dict[str, Any], str]:
    """One rank_workspace_hits call through `codescout-mcp --workspace` on a pipe: (result, stderr)."""
    lines = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
            "name": "rank_workspace_hits", "arguments": {"hits": [{"path": p, "matches": 1} for p in hit_paths]}}},
    ]  # fmt: skip
    data = "".join(json.dumps(line) + "\n" for line in lines).encode()
    done = subprocess.run(
        [installed("codescout-mcp"), "--workspace", str(workspace)],
        input=data,
        capture_output=True,
        env=env or env_for(),
        cwd=cwd,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.decode().splitlines())}
    result: dict[str, Any] = replies[2]["result"]
    return result, done.stderr.decode()
