"""A checkout nobody vetted: nothing it configures runs, nothing it holds blocks, nothing grows.

A repository's own config can name commands (filters, hooks, fsmonitor, a pager, a
transport for missing objects, a gpg program); each one here leaves a mark if it ever runs,
and `codescout hits` and `rank_workspace_hits` run on the repository as users run them.
Files codescout reads itself (HEAD, CODEOWNERS) may be links out, FIFOs or huge; git
children may print nothing or leave grandchildren behind.
"""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp.facts.git import Git, GitError
from tests.gitrepo import NOW, Repo, days_of, env_for, run, workspace_call
from tests.helpers import codescout_exe, installed
from tests.layouts import with_nested
from tests.platforms import FAKE_GIT, FIFOS, PROCESS_GROUPS, SIGNALS, alive, posix_only

# The traps below are sh commands and scripts that name POSIX paths: on Windows they would not
# leave their marks even if git ran them, so those tests could not fail there.
SH_TRAPS = "the repository's traps are sh commands naming POSIX paths"
LONG_PATHS = "a path of about 2,000 characters, past what Windows and its git accept by default"


def counts(*paths: str) -> bytes:
    return b"".join(f"{path}:1\n".encode() for path in paths)


def leaves(marks: Path, name: str) -> str:
    """A shell command that leaves a mark named `name` (and passes its input through)."""
    return f"touch {marks / name}; cat"


def signed_commit(repo: Repo) -> None:
    """Make HEAD a commit that carries a (fake) signature, so showing signatures would run gpg."""
    tree = repo.git("rev-parse", "HEAD^{tree}").strip()
    parent = repo.git("rev-parse", "HEAD").strip()
    body = (
        f"tree {tree}\nparent {parent}\nauthor T <t@example.com> 1767225600 +0000\n"
        "committer T <t@example.com> 1767225600 +0000\n"
        "gpgsig -----BEGIN PGP SIGNATURE-----\n \n iQEzBAABCAAdFiEE\n -----END PGP SIGNATURE-----\n\nsigned\n"
    )
    made = subprocess.run(
        ["git", "hash-object", "-t", "commit", "-w", "--stdin"],
        cwd=repo.root,
        input=body.encode(),
        capture_output=True,
        env=env_for(),
        check=True,
    )
    repo.git("update-ref", "refs/heads/main", made.stdout.decode().strip())


def booby_trapped(tmp_path: Path) -> tuple[Repo, Path]:
    """A repository whose config, attributes and hooks name a command for everything they can."""
    marks = tmp_path / "marks"
    marks.mkdir()
    r = Repo(tmp_path / "trap")
    r.write("src/a.py", "one\n")
    r.write("src/b.py", "one\n")
    r.write("deep/dir/c.py", "one\n")
    r.commit("2025-01-01T00:00:00Z", "src/a.py", "src/b.py", "deep/dir/c.py")
    r.write("src/b.py", "two\n")
    r.commit("2025-06-01T00:00:00Z", "src/b.py")
    signed_commit(r)
    hooks = tmp_path / "hooks"
    hooks.mkdir()
    for hook in ("post-index-change", "reference-transaction", "pre-auto-gc", "post-checkout", "fsmonitor-watchman"):
        for folder in (hooks, r.root / ".git" / "hooks"):
            (folder / hook).write_text(f"#!/bin/sh\ntouch {marks / ('hook-' + hook)}\n", encoding="utf-8")
            (folder / hook).chmod(0o755)
    included = tmp_path / "included.gitconfig"
    included.write_text(f'[filter "inc"]\n\tclean = {leaves(marks, "include-clean")}\n', encoding="utf-8")
    gpg = tmp_path / "fake-gpg"
    gpg.write_text(f"#!/bin/sh\ntouch {marks / 'gpg'}\nexit 1\n", encoding="utf-8")
    gpg.chmod(0o755)
    settings = {
        "filter.evil.clean": leaves(marks, "clean"),
        "filter.evil.smudge": leaves(marks, "smudge"),
        "filter.evil.process": f"touch {marks / 'process'}",
        "filter.evil.required": "true",
        "filter.dotted.name.clean": leaves(marks, "dotted-clean"),
        "diff.evil.textconv": leaves(marks, "textconv"),
        "diff.evil.command": leaves(marks, "diff-command"),
        "diff.external": leaves(marks, "diff-external"),
        "core.fsmonitor": leaves(marks, "fsmonitor"),
        "core.hooksPath": str(hooks),
        "core.pager": leaves(marks, "pager"),
        "pager.log": leaves(marks, "pager-log"),
        "pager.status": leaves(marks, "pager-status"),
        "core.sshCommand": leaves(marks, "ssh"),
        "core.gitProxy": leaves(marks, "proxy"),
        "core.alternateRefsCommand": leaves(marks, "alternate-refs"),
        "credential.helper": f"!touch {marks / 'credential'}",
        "gpg.program": str(gpg),
        "log.showSignature": "true",
        "gc.auto": "1",
        "maintenance.auto": "true",
        "include.path": str(included),
        "trace2.eventTarget": str(marks / "trace2"),
        # A partial clone whose missing objects would be fetched through a command.
        "core.repositoryFormatVersion": "1",
        "extensions.partialClone": "origin",
        "remote.origin.url": f"ext::sh -c touch% {marks / 'lazy-fetch'}",
        "remote.origin.promisor": "true",
        "protocol.ext.allow": "always",
        "protocol.file.allow": "always",
        "uploadpack.packObjectsHook": leaves(marks, "pack-objects"),
    }
    for key, value in settings.items():
        r.git("config", key, value)
    r.write(".gitattributes", "* filter=evil diff=evil merge=evil\n*.py filter=inc\ndeep/** filter=dotted.name\n")
    r.write("src/a.py", "edited, so status must look at it\n")
    r.write("deep/dir/c.py", "edited too\n")
    return r, marks


@posix_only(SH_TRAPS)
def test_nothing_a_repository_configures_runs(tmp_path: Path) -> None:
    r, marks = booby_trapped(tmp_path)
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=counts("src/a.py", "src/b.py", "deep/dir/c.py"))
    assert done.returncode == 0, done.stderr
    assert {h["path"]: h["last_modified_days"] for h in json.loads(done.stdout)["hits"]} == {
        "deep/dir/c.py": 0,
        "src/a.py": 0,
        "src/b.py": 273,  # the signed commit on top changed nothing
    }
    result, _ = workspace_call(r.root, ["src/a.py", "src/b.py", "deep/dir/c.py"])
    assert not result.get("isError"), result
    assert sorted(p.name for p in marks.iterdir()) == []


@posix_only(SH_TRAPS)
def test_a_missing_object_is_not_fetched_through_the_repositorys_transport(tmp_path: Path) -> None:
    r, marks = booby_trapped(tmp_path)
    subtree = r.git("rev-parse", "HEAD~2^{tree}:deep").strip()  # the first commit's `deep/`
    (r.root / ".git" / "objects" / subtree[:2] / subtree[2:]).unlink()
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=counts("src/a.py", "deep/dir/c.py", "src/b.py"))
    # Nothing runs; whether git needed the object depends on how far the walk goes.
    assert sorted(p.name for p in marks.iterdir()) == []
    if done.returncode != 0:
        assert done.stderr.decode().startswith("codescout: git log failed in")


@posix_only(SH_TRAPS)
def test_a_submodules_own_config_runs_nothing_either(tmp_path: Path) -> None:
    marks = tmp_path / "marks"
    marks.mkdir()
    upstream = Repo(tmp_path / "upstream")
    upstream.write("lib.c", "one\n")
    upstream.commit("2025-01-01T00:00:00Z", "lib.c")
    top = Repo(tmp_path / "top")
    top.write("app.c", "one\n")
    top.commit("2025-01-01T00:00:00Z", "app.c")
    top.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream.root), "lib")
    top.commit("2025-02-01T00:00:00Z", message="add lib")
    lib = Repo(top.root / "lib", init=False)
    lib.git("config", "filter.sub.clean", leaves(marks, "submodule-clean"))
    lib.git("config", "core.fsmonitor", leaves(marks, "submodule-fsmonitor"))
    lib.write(".gitattributes", "* filter=sub\n")
    lib.write("lib.c", "edited\n")
    done = run([codescout_exe(), "hits", "--now", NOW], top.root, stdin=counts("lib/lib.c", "app.c"))
    assert done.returncode == 0, done.stderr
    assert {h["path"]: h["last_modified_days"] for h in json.loads(done.stdout)["hits"]} == {
        "app.c": 424,
        "lib/lib.c": 0,
    }
    workspace_call(top.root, ["lib/lib.c", "app.c"])
    assert sorted(p.name for p in marks.iterdir()) == []


def touched(path: Path) -> None:
    """Give a file new stat data and the same content, as copying or extracting a checkout does."""
    info = path.stat()
    os.utime(path, ns=(info.st_atime_ns, info.st_mtime_ns + 5_000_000_000))


@posix_only(SH_TRAPS)
def test_a_filter_driver_whose_name_holds_an_equals_sign_never_runs(tmp_path: Path) -> None:
    """`-c filter.a=b.clean=` would set `filter.a`: the driver `a=b` is switched off another way."""
    marks = tmp_path / "marks"
    marks.mkdir()
    r = Repo(tmp_path / "r")
    r.write("eq/e.py", "one\n")
    r.write("plain.py", "one\n")
    r.commit("2026-01-01T00:00:00Z", "eq/e.py", "plain.py")
    r.write(".gitattributes", "eq/** filter=a=b\nplain.py filter==\n*.md filter=x==y.z\n")
    r.write("notes.md", "one\n")
    r.commit("2026-01-02T00:00:00Z", "notes.md", ".gitattributes")
    for name in ("a=b", "=", "x==y.z"):  # configured after the commits, which would have run them
        for key in ("clean", "smudge", "process"):
            r.git("config", f"filter.{name}.{key}", leaves(marks, f"{name}-{key}"))
        r.git("config", f"filter.{name}.required", "true")
    for name in ("eq/e.py", "plain.py", "notes.md"):
        touched(r.root / name)
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=counts("eq/e.py", "plain.py", "notes.md"))
    assert done.returncode == 0, done.stderr
    assert days_of(json.loads(done.stdout)) == {"eq/e.py": 59, "notes.md": 58, "plain.py": 59}
    for name in ("eq/e.py", "plain.py", "notes.md"):
        touched(r.root / name)
    result, _ = workspace_call(r.root, ["eq/e.py", "plain.py", "notes.md"])
    assert not result.get("isError"), result
    assert sorted(p.name for p in marks.iterdir()) == []


def test_more_filter_drivers_than_a_command_line_holds_are_refused_in_words(tmp_path: Path) -> None:
    """Each filter driver is turned off by settings on git's command line; 5,000 of them with
    long names will not fit one. The checkout is refused by name, not with the system's E2BIG."""
    r = Repo(tmp_path / "r")
    r.write("a.txt", "x\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    with (r.root / ".git" / "config").open("a", encoding="utf-8") as config:
        for number in range(5_000):
            config.write(f'[filter "d{number:04d}{"x" * 100}"]\n\tclean = false\n')
    said = (
        f"{r.root} defines more filter drivers than codescout can tell git to leave unused on one "
        "command line; its files are not read"
    )
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=counts("a.txt"))
    assert (done.returncode, done.stdout, done.stderr.decode()) == (1, b"", f"codescout: {said}\n")
    result, _ = workspace_call(r.root, ["a.txt"])
    assert result["isError"] is True
    assert result["content"][0]["text"] == f"the workspace {r.root} cannot be read: {said}"


@posix_only(FAKE_GIT)
def test_a_git_committed_at_the_checkout_root_is_never_the_git_that_runs(tmp_path: Path) -> None:
    """PATH may name the current folder (an empty entry, `.`, a relative one): it is never searched."""
    marks = tmp_path / "marks"
    marks.mkdir()
    r = Repo(tmp_path / "r")
    r.write("a.txt", "x\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    for name in ("git", "bin/git"):
        fake = r.write(name, f"#!/bin/sh\ntouch {marks / name.replace('/', '-')}\nexit 1\n")
        fake.chmod(0o755)
    path = os.pathsep.join(["", ".", "bin", env_for()["PATH"]])
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=counts("a.txt"), env=env_for(PATH=path))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hits"] == [{"path": "a.txt", "matches": 1, "last_modified_days": 59}]
    result, _ = workspace_call(Path("."), ["a.txt"], env=env_for(PATH=path), cwd=r.root)
    assert result["structuredContent"]["results"][0]["last_modified_days"] > 0, result
    assert sorted(p.name for p in marks.iterdir()) == []


# --- patterns that would freeze the whole process ----------------------------------------------------

# `*a` sixteen times, then `*b`: the usual glob translation backtracks through every way of
# sharing a name of forty `a`s between the stars (ten of them took 23 s; sixteen, for ever).
BACKTRACKING = "*a" * 16 + "*b"
LONG_NAME = "a" * 40


def backtracking_checkout(tmp_path: Path, codeowners: str) -> Repo:
    r = Repo(tmp_path / "r")
    r.write(LONG_NAME, "x\n")
    r.write("CODEOWNERS", codeowners)
    r.commit("2026-01-01T00:00:00Z", LONG_NAME, "CODEOWNERS")
    return r


@pytest.mark.parametrize(
    ("dialect", "codeowners"),
    [
        ("github", f"* @all\n{BACKTRACKING} @never\n**/{BACKTRACKING}/** @never\n"),
        ("gitlab", f"[S]\n* @all\n{BACKTRACKING} @never\n" + "**/a" * 12 + "/b @never\n"),
    ],
)
def test_a_codeowners_pattern_that_backtracks_answers_at_once(tmp_path: Path, dialect: str, codeowners: str) -> None:
    r = backtracking_checkout(tmp_path, codeowners)
    started = time.monotonic()
    done = run(
        [codescout_exe(), "hits", "--now", NOW, "--codeowners", dialect], r.root, stdin=counts(LONG_NAME), timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hits"] == [
        {"path": LONG_NAME, "matches": 1, "last_modified_days": 59, "owner": "@all"}
    ]
    assert time.monotonic() - started < 10


@posix_only(SIGNALS)
def test_a_server_reading_a_backtracking_codeowners_still_answers_pings_and_stops(tmp_path: Path) -> None:
    r = backtracking_checkout(tmp_path, f"* @all\n{BACKTRACKING} @never\n")
    server = subprocess.Popen(
        [installed("codescout-mcp"), "--workspace", str(r.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_for(),
    )
    assert server.stdin is not None and server.stdout is not None
    try:
        for message in (
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            {"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
                "name": "rank_workspace_hits", "arguments": {"hits": [{"path": LONG_NAME, "matches": 1}]}}},
            {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        ):  # fmt: skip
            server.stdin.write(json.dumps(message).encode() + b"\n")
        server.stdin.flush()
        answers: dict[object, dict[str, Any]] = {}
        deadline = time.monotonic() + 30
        while len(answers) < 3 and time.monotonic() < deadline:
            ready, _, _ = select.select([server.stdout], [], [], deadline - time.monotonic())
            if ready:
                answer = json.loads(server.stdout.readline())
                answers[answer["id"]] = answer
        assert set(answers) == {1, 2, 3}, answers
        assert answers[2]["result"]["structuredContent"]["results"][0]["owner"] == "@all"
        started = time.monotonic()
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=10) == 0
        assert time.monotonic() - started < 2
    finally:
        server.kill()
        server.wait()


# --- files codescout reads itself ------------------------------------------------------------------


def test_a_codeowners_link_out_of_the_repository_is_not_followed(tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("* @leaked-secret\n", encoding="utf-8")
    r = Repo(tmp_path / "r")
    r.write("a.txt", "x\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    (r.root / ".github").mkdir()
    (r.root / ".github" / "CODEOWNERS").symlink_to(secret)
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=counts("a.txt"))
    assert json.loads(done.stdout)["hits"] == [{"path": "a.txt", "matches": 1, "last_modified_days": 59}]
    assert done.stderr.decode() == (
        f"codescout: warning: .github/CODEOWNERS is a link to {secret}, outside the repository; it is not read, "
        "and no owners are read\n"
    )
    result, _ = workspace_call(r.root, ["a.txt"])
    assert result["structuredContent"]["results"][0]["owner"] is None
    assert "leaked" not in json.dumps(result)
    inside = r.root / "docs-owners"
    inside.write_text("* @inside\n", encoding="utf-8")
    (r.root / ".github" / "CODEOWNERS").unlink()
    (r.root / ".github" / "CODEOWNERS").symlink_to(inside)  # a link within the repository is fine
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=counts("a.txt"))
    assert json.loads(done.stdout)["hits"][0]["owner"] == "@inside" and done.stderr == b""


@posix_only("a symbolic link made without privileges")
@pytest.mark.parametrize("swapped", ["the file", "its folder"])
def test_a_codeowners_swapped_for_a_link_out_between_check_and_open_is_not_read(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, swapped: str
) -> None:
    """The race a process beside the server could win: the place is checked (a regular file
    inside), then made a link out of the repository, then opened. What is opened is checked."""
    from codescout_mcp.facts.codeowners import load_codeowners

    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "CODEOWNERS").write_text("* @leaked-secret\n", encoding="utf-8")
    root = tmp_path / "r"
    (root / ".github").mkdir(parents=True)
    (root / ".github" / "CODEOWNERS").write_text("* @inside\n", encoding="utf-8")
    real_realpath = os.path.realpath

    def swap() -> None:
        if swapped == "the file":
            (root / ".github" / "CODEOWNERS").unlink()
            (root / ".github" / "CODEOWNERS").symlink_to(outside / "CODEOWNERS")
        else:
            (root / ".github").rename(tmp_path / "was-github")
            (root / ".github").symlink_to(outside)

    def realpath_then_swap(path: Any, *args: Any, **kwargs: Any) -> Any:
        resolved = real_realpath(path, *args, **kwargs)
        if str(path).endswith("CODEOWNERS") and not (root / ".github").is_symlink() and not swapped_yet:
            swapped_yet.append(True)
            swap()
        return resolved

    swapped_yet: list[bool] = []
    monkeypatch.setattr(os.path, "realpath", realpath_then_swap)
    warnings: list[str] = []
    owners = load_codeowners(root, None, warnings.append)
    monkeypatch.undo()
    assert swapped_yet, "the swap never happened"
    assert owners.owner_of("a.txt") is None
    assert warnings == [
        ".github/CODEOWNERS was replaced by a link as it was opened; it is not read, and no owners are read"
    ]


def limited_memory(megabytes: int) -> Callable[[], None] | None:
    """For preexec_fn: a cap on the child's address space, where the system enforces one (Linux).

    Elsewhere the test runs uncapped: the warning still shows the size was refused, and the
    cap, which proves the file was never read, is Linux's alone.
    """
    if sys.platform != "linux":
        return None
    import resource

    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_AS, (megabytes << 20, megabytes << 20))

    return limit


def test_a_huge_codeowners_is_refused_by_its_size_before_it_is_read(tmp_path: Path) -> None:
    r = Repo(tmp_path / "r")
    r.write("a.txt", "x\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    with open(r.root / "CODEOWNERS", "wb") as huge:
        huge.truncate(1 << 30)  # 1 GiB, sparse: reading it whole would need 1 GiB of memory
    done = subprocess.run(
        [codescout_exe(), "hits", "--now", NOW],
        cwd=r.root,
        input=counts("a.txt"),
        capture_output=True,
        env=env_for(),
        preexec_fn=limited_memory(768),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hits"] == [{"path": "a.txt", "matches": 1, "last_modified_days": 59}]
    assert done.stderr.decode() == (
        "codescout: warning: CODEOWNERS is 1073741824 bytes, over GitHub's 3 MB limit, so GitHub ignores it; "
        "no owners are read\n"
    )


@posix_only(FIFOS)
def test_fifos_where_files_should_be_never_block(tmp_path: Path) -> None:
    r = Repo(tmp_path / "r")
    r.write("a.txt", "x\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(r.root / "CODEOWNERS")
    os.mkfifo(r.root / ".mailmap")
    started = time.monotonic()
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=counts("a.txt"), timeout=20)
    assert json.loads(done.stdout)["hits"] == [{"path": "a.txt", "matches": 1, "last_modified_days": 59}]
    assert (
        done.stderr.decode()
        == "codescout: warning: CODEOWNERS is a FIFO, not a regular file; it is not read, and no owners are read\n"
    )
    assert time.monotonic() - started < 20


GIT_OPENS = [".gitattributes", "sub/.gitattributes", ".git/config", ".git/index", ".git/info/attributes"]


@posix_only(FIFOS)
@pytest.mark.parametrize("name", GIT_OPENS)
def test_a_fifo_where_git_reads_a_file_is_an_error_at_once(tmp_path: Path, name: str) -> None:
    """git itself would open it and wait for a writer: the repository is refused, naming the file."""
    r = Repo(tmp_path / "r")
    r.write("a.txt", "x\n")
    r.write("sub/b.txt", "x\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt", "sub/b.txt")
    touched(r.root / "a.txt")  # so that git status must look further than the stat data
    target = r.root / name
    target.parent.mkdir(parents=True, exist_ok=True)
    target.unlink(missing_ok=True)
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(target)
    said = f"{target} is a FIFO, not a regular file, and git would wait on it; the repository cannot be read"
    started = time.monotonic()
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=counts("a.txt", "sub/b.txt"), timeout=60)
    assert (done.returncode, done.stdout) == (1, b""), done.stderr
    assert done.stderr.decode() == f"codescout: {said}\n"
    result, _ = workspace_call(r.root, ["a.txt", "sub/b.txt"])
    assert result["isError"] is True
    assert result["content"][0]["text"] == f"the workspace {r.root} cannot be read: {said}"
    assert time.monotonic() - started < 20


@posix_only(FIFOS)
@posix_only(SIGNALS)
def test_a_head_that_turns_into_a_fifo_leaves_the_server_answering_and_stoppable(tmp_path: Path) -> None:
    r = Repo(tmp_path / "r")
    r.write("a.txt", "x\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    server = subprocess.Popen(
        [installed("codescout-mcp"), "--workspace", str(r.root)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_for(),
    )
    assert server.stdin is not None and server.stdout is not None

    def ask(rid: int, method: str, params: dict[str, Any]) -> dict[str, Any]:
        assert server.stdin is not None and server.stdout is not None
        server.stdin.write(
            json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode() + b"\n"
        )
        server.stdin.flush()
        ready, _, _ = select.select([server.stdout], [], [], 15)
        assert ready, f"no answer to {method} within 15 s"
        reply: dict[str, Any] = json.loads(server.stdout.readline())
        return reply

    call = {"name": "rank_workspace_hits", "arguments": {"hits": [{"path": "a.txt", "matches": 1}]}}
    try:
        ask(
            1,
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        )
        assert not ask(2, "tools/call", call)["result"].get("isError")
        head = r.root / ".git" / "HEAD"
        head.unlink()
        if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
            raise AssertionError("no FIFOs on Windows")
        os.mkfifo(head)
        started = time.monotonic()
        answer = ask(3, "tools/call", call)["result"]
        assert answer["isError"] is True and "HEAD is a FIFO, not a regular file" in answer["content"][0]["text"]
        assert ask(4, "ping", {})["result"] == {}
        assert time.monotonic() - started < 10
        server.send_signal(signal.SIGTERM)
        assert server.wait(timeout=5) == 0
    finally:
        server.kill()
        server.wait()


# --- git children -----------------------------------------------------------------------------------


def fake_git(script: str, folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    shim = folder / "shim"
    shim.mkdir()
    (shim / "git").write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    (shim / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{shim}{os.pathsep}{os.environ['PATH']}")


@posix_only(FAKE_GIT)
@posix_only(PROCESS_GROUPS)
def test_a_git_whose_children_keep_its_output_open_is_ended_with_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pidfile = tmp_path / "grandchild"
    fake_git(f"sleep 30 &\necho $! > {pidfile}\nexit 0", tmp_path, monkeypatch)
    started = time.monotonic()
    with pytest.raises(GitError, match="took longer than 1 s"):
        Git(tmp_path, timeout=1.0).run("status")
    assert time.monotonic() - started < 5
    time.sleep(0.2)
    assert not alive(int(pidfile.read_text(encoding="utf-8")))


@posix_only(FAKE_GIT)
@posix_only(PROCESS_GROUPS)
def test_a_git_that_prints_nothing_is_ended_at_its_deadline(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    fake_git("exec sleep 30", tmp_path, monkeypatch)
    started = time.monotonic()
    with pytest.raises(GitError, match="git log took longer than 1 s"), Git(tmp_path, timeout=1.0).stream("log") as out:
        out.read(1 << 16)
    assert time.monotonic() - started < 5


# --- paths no file can have, and paths deeper than recursion goes ---------------------------------------------


def test_names_no_file_can_have_are_located_errors(tmp_path: Path) -> None:
    r = Repo(tmp_path / "r")
    r.write("a.txt", "x\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    for bad, words in (("a\u0000b", "holds a NUL character"), ("x\ud800y", "holds an unpaired surrogate")):
        result, stderr = workspace_call(r.root, ["a.txt", bad])
        assert result["isError"] is True, result
        assert result["content"][0]["text"].startswith("hits[1].path: ") and words in result["content"][0]["text"]
        assert "Traceback" not in stderr


@pytest.fixture
def deep_repo(tmp_path: Path) -> Iterator[tuple[Repo, str]]:
    """A repository holding one file 990 folders deep; removed again one folder at a time
    (pathlib and shutil would recurse as deep, and so would pytest's own clean-up later)."""
    r = Repo(tmp_path / "r")
    chain = []
    folder = r.root
    for _ in range(990):
        folder = folder / "d"
        folder.mkdir()
        chain.append(folder)
    (folder / "f.txt").write_text("x\n", encoding="utf-8")
    deep = "/".join(["d"] * 990) + "/f.txt"
    r.commit("2026-01-01T00:00:00Z", deep)
    yield r, deep
    (folder / "f.txt").unlink()
    for each in reversed(chain):
        each.rmdir()


@posix_only(LONG_PATHS)
def test_a_file_a_thousand_folders_deep_is_ranked(deep_repo: tuple[Repo, str]) -> None:
    r, deep = deep_repo
    result, stderr = workspace_call(r.root, [deep])
    assert not result.get("isError"), result
    assert result["structuredContent"]["results"][0]["path"] == deep and "Traceback" not in stderr
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=counts(deep))
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hits"] == [{"path": deep, "matches": 1, "last_modified_days": 59}]


# --- fourth pass: what a repository's config names, and what git reads under objects/ --------

# Each (setting, value) points git at a FIFO or a device: git would wait, or read without end.
NAMED_BY_SETTINGS = ["core.attributesFile", "core.excludesFile", "diff.orderFile", "core.sparseCheckoutFile"]


def repository_with(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "r")
    r.write("a.txt", "x\n")
    r.write("sub/b.txt", "x\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt", "sub/b.txt")
    touched(r.root / "a.txt")  # so that git status must look further than the stat data
    return r


def refused_at_once(r: Repo, said: str) -> None:
    """Both `codescout hits` and rank_workspace_hits refuse the repository at once, saying `said`."""
    started = time.monotonic()
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=counts("a.txt", "sub/b.txt"), timeout=60)
    assert (done.returncode, done.stdout) == (1, b""), done.stderr
    assert done.stderr.decode() == f"codescout: {said}\n"
    result, _ = workspace_call(r.root, ["a.txt", "sub/b.txt"])
    assert result["isError"] is True
    assert result["content"][0]["text"] == f"the workspace {r.root} cannot be read: {said}"
    assert time.monotonic() - started < 20


@posix_only(FIFOS)
@pytest.mark.parametrize("setting", NAMED_BY_SETTINGS)
@pytest.mark.parametrize("kind", ["fifo", "device"])
def test_a_setting_naming_a_fifo_or_a_device_is_refused_at_once(tmp_path: Path, setting: str, kind: str) -> None:
    r = repository_with(tmp_path)
    if kind == "fifo":
        target = tmp_path / "fifo"
        if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
            raise AssertionError("no FIFOs on Windows")
        os.mkfifo(target)
        what = "a FIFO"
    else:
        target, what = Path("/dev/zero"), "a device"
    r.git("config", setting, str(target))
    said = (
        f"the setting {setting.lower()} (in .git/config) names {target}, {what}, which git would wait on; "
        "the repository cannot be read"
    )
    refused_at_once(r, said)


@posix_only(FIFOS)
@pytest.mark.parametrize("key", ["include.path", "includeIf.onbranch:**.path", "includeIf.gitdir:/.path"])
def test_a_config_that_includes_a_fifo_is_refused_before_git_runs(tmp_path: Path, key: str) -> None:
    r = repository_with(tmp_path)
    fifo = tmp_path / "included"
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(fifo)
    # Written by hand: git config itself would follow the include and wait.
    with (r.root / ".git" / "config").open("a", encoding="utf-8") as config:
        section, _, rest = key.partition(".")
        condition, _, name = rest.rpartition(".")
        config.write(
            f'[{section} "{condition}"]\n\t{name} = {fifo}\n' if condition else f"[{section}]\n\t{name} = {fifo}\n"
        )
    refused_at_once(r, f"{fifo} is a FIFO, not a regular file, and git would wait on it; the repository cannot be read")


@posix_only(FIFOS)
def test_an_include_of_an_include_is_followed_and_checked(tmp_path: Path) -> None:
    r = repository_with(tmp_path)
    fifo = tmp_path / "deeper"
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(fifo)
    (tmp_path / "first.inc").write_text("[include]\n\tpath = deeper\n", encoding="utf-8")  # relative to itself
    with (r.root / ".git" / "config").open("a", encoding="utf-8") as config:
        config.write(f"[include]\n\tpath = {tmp_path / 'first.inc'}\n")
    refused_at_once(r, f"{fifo} is a FIFO, not a regular file, and git would wait on it; the repository cannot be read")


@posix_only(FIFOS)
@pytest.mark.parametrize("place", ["commit-graph", "loose-object", "pack", "sparse-checkout"])
def test_a_fifo_git_reads_under_objects_or_info_is_refused_at_once(tmp_path: Path, place: str) -> None:
    r = repository_with(tmp_path)
    git_dir = r.root / ".git"
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no FIFOs on Windows")
    if place == "commit-graph":
        target = git_dir / "objects" / "info" / "commit-graph"
        os.mkfifo(target)
    elif place == "sparse-checkout":
        r.git("config", "core.sparseCheckout", "true")
        target = git_dir / "info" / "sparse-checkout"
        target.parent.mkdir(exist_ok=True)
        os.mkfifo(target)
    elif place == "pack":
        r.git("gc", "-q")
        target = git_dir / "objects" / "pack" / "pack-0000.keep"
        os.mkfifo(target)
    else:  # a loose object that is a link to a FIFO elsewhere
        blob = r.git("rev-parse", "HEAD:a.txt").strip()
        loose = git_dir / "objects" / blob[:2] / blob[2:]
        fifo = tmp_path / "object-fifo"
        os.mkfifo(fifo)
        loose.unlink()
        loose.symlink_to(fifo)
        target = loose
    refused_at_once(
        r, f"{target} is a FIFO, not a regular file, and git would wait on it; the repository cannot be read"
    )


def test_a_log_output_encoding_changes_no_answer(tmp_path: Path) -> None:
    """`i18n.logOutputEncoding = UTF-16` would make git log print UTF-16: it is pinned to UTF-8."""
    r = repository_with(tmp_path)
    r.write("café.txt", "x\n")
    r.commit("2026-02-01T00:00:00Z", "café.txt")
    before = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=counts("a.txt", "café.txt"))
    r.git("config", "i18n.logOutputEncoding", "UTF-16")
    after = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=counts("a.txt", "café.txt"))
    assert (after.returncode, after.stderr) == (0, b""), after.stderr
    assert json.loads(after.stdout) == json.loads(before.stdout)
    result, _ = workspace_call(r.root, ["a.txt", "café.txt"])
    assert result.get("isError") is False, result


@pytest.mark.parametrize("given", ["a.txt/", "a.txt/.", "./a.txt/"])
def test_a_file_named_as_a_folder_is_refused_as_the_system_refuses_it(tmp_path: Path, given: str) -> None:
    """`open("a.txt/")` fails with ENOTDIR: such a path names a folder, and no file answers for it."""
    r = Repo(tmp_path / "r")
    r.write("a.txt", "x\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    result, _ = workspace_call(r.root, [given])
    assert result["isError"] is True, result
    assert result["content"][0]["text"] == (
        f'hits[0].path: "{given}" is not a folder, and a path that ends so names one'
    )


@posix_only(FIFOS)
def test_a_fifo_in_a_nested_repository_costs_it_its_history_not_the_call(tmp_path: Path) -> None:
    """`codescout hits` warns and gives the nested repository's files their file times; the workspace
    tool, which answers for the whole workspace, says it cannot be read."""
    r, inner = with_nested(tmp_path / "r", "2026-01-01T00:00:00Z", "2026-01-01T00:00:00Z")
    head = inner.root / ".git" / "index"
    head.unlink()
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(head)
    said = f"{head} is a FIFO, not a regular file, and git would wait on it; the repository cannot be read"
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=counts("a.txt", "vendor/lib/b.txt"), timeout=60)
    assert done.returncode == 0, done.stderr
    assert [hit["path"] for hit in json.loads(done.stdout)["hits"]] == ["a.txt", "vendor/lib/b.txt"]
    assert done.stderr.decode() == (
        f"codescout: warning: {said}; its files keep their file modification times and have no owners\n"
    )
    result, _ = workspace_call(r.root, ["a.txt", "vendor/lib/b.txt"])
    assert result["isError"] is True
    assert result["content"][0]["text"] == f"the workspace {r.root} cannot be read: {said}"


def test_without_git_a_nested_repository_is_a_folder_like_any_other(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    (folder / "vendor" / ".git").mkdir(parents=True)  # a repository's mark, and no git to read it
    (folder / "vendor" / "b.txt").write_text("x", encoding="utf-8")
    no_git = env_for(PATH=str(Path(codescout_exe()).parent))  # the venv only: no git on it
    done = run([codescout_exe(), "hits", "--now", NOW], folder, stdin=b"vendor/b.txt:1\n", env=no_git)
    assert done.returncode == 0, done.stderr
    assert [hit["path"] for hit in json.loads(done.stdout)["hits"]] == ["vendor/b.txt"]
    assert done.stderr.decode().splitlines() == [
        "codescout: warning: git is not installed; ages come from file modification times and there are no owners",
    ]
