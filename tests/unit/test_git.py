"""git run in process (`facts/git.py`): deadlines, failures named in one line, the caller's GIT_* variables."""

from __future__ import annotations

import os
import shutil
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from codescout_mcp.facts import git as git_module
from codescout_mcp.facts.git import (
    PINNED,
    UNPINNED,
    Git,
    GitError,
    GitMissing,
    GitRefused,
    NotARepository,
    _refused_folder,
    config_environment,
    open_failure,
    said,
)
from codescout_mcp.system.processes import CHILD_DATA_BYTES, ChildOutputTooLarge, run_child
from tests.gitrepo import Repo
from tests.platforms import FAKE_GIT, linux_only, posix_only


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


# The words of each failure, and the overrides for filter drivers, held exactly: the repository
# tests see them through the CLI only in part.


def test_what_git_said_is_its_first_fatal_or_error_line_else_its_last_line() -> None:
    assert said(b"hint: a\nfatal: first\nerror: second\n", 128) == "fatal: first"
    assert said(b"warning: a\nerror: it broke\nfatal: then this\n", 1) == "error: it broke"
    assert said(b"one\n  \ntwo\n\n", 1) == "two"
    assert said(b"first\n  fatal: indented is not a fatal line\nlast", 1) == "last"
    assert said(b"\n \n", 7) == "exit status 7, and nothing said"
    assert said(b"fatal: a\tname\\x", 1) == "fatal: a\\tname\\\\x"  # one line, escaped
    assert said(b"last\\line", 1) == "last\\\\line"


@pytest.mark.parametrize(
    ("stderr", "kind", "words"),
    [
        (
            b"fatal: not a git repository (or any of the parent directories): .git\n",
            NotARepository,
            "/w\\nx is not in a git repository",
        ),
        (
            b"fatal: detected dubious ownership in repository at '/r/a b'\nTo add an exception...\n",
            GitRefused,
            "git refuses to read /w\\nx: detected dubious ownership in repository at '/r/a b' (it belongs to "
            "another user); if you trust it, run `git config --global --add safe.directory /r/a b`",
        ),
        (
            b"fatal: detected dubious ownership in repository\n",  # no folder named: the one asked about
            GitRefused,
            "git refuses to read /w\\nx: detected dubious ownership in repository (it belongs to another user); "
            "if you trust it, run `git config --global --add safe.directory /w\\nx`",
        ),
        *(
            (
                words,
                GitError,
                f"git cannot run: {said(words, 1)} (on macOS, install the command line tools: "
                "`xcode-select --install`)",
            )
            for words in (
                b"xcrun: error: invalid active developer path\n",
                b"xcode-select: note: install requested\n",
                b"No developer tools were found, requesting install.\n",
            )
        ),
        (b"fatal: unknown index entry format 0x61000000\n", GitError, "git cannot read /w\\nx: fatal: unknown index"),
    ],
    ids=["not-a-repository", "refused", "refused-unnamed", "xcrun", "xcode-select", "no-tools", "other"],
)
def test_a_failed_open_is_named_for_what_git_said(stderr: bytes, kind: type[GitError], words: str) -> None:
    error = open_failure("/w\nx", stderr, 128)
    assert type(error) is kind
    assert str(error).startswith(words) and "\n" not in str(error)


def test_the_refused_folder_is_read_from_between_the_quotes() -> None:
    assert _refused_folder("repository at '/a/b'\n") == "/a/b"
    assert _refused_folder("at '/a/b'") is None  # no space before "at": not git's words
    assert _refused_folder("repository at '/a/b") is None  # no closing quote
    assert _refused_folder("repository at ''") == ""
    assert _refused_folder("it's repository at '/x'") == "/x"
    assert _refused_folder(" at '/y' and at '/z'") == "/y"  # the first, even at the very start


def test_settings_by_environment_are_numbered_after_those_already_set() -> None:
    settings = [("filter.a=b.clean", ""), ("filter.a=b.required", "false")]
    assert config_environment(settings, {}) == {
        "GIT_CONFIG_KEY_0": "filter.a=b.clean",
        "GIT_CONFIG_KEY_1": "filter.a=b.required",
        "GIT_CONFIG_VALUE_0": "",
        "GIT_CONFIG_VALUE_1": "false",
        "GIT_CONFIG_COUNT": "2",
    }
    after = config_environment(settings[:1], {"GIT_CONFIG_COUNT": "3"})
    assert after == {"GIT_CONFIG_KEY_3": "filter.a=b.clean", "GIT_CONFIG_VALUE_3": "", "GIT_CONFIG_COUNT": "4"}
    for count in ("", "x", "1.5"):  # git refuses such a count itself: counted from 0 here
        assert config_environment(settings[:1], {"GIT_CONFIG_COUNT": count})["GIT_CONFIG_COUNT"] == "1"


def test_each_filter_driver_is_switched_off_once_whatever_its_name(tmp_path: Path) -> None:
    git = Git(tmp_path)
    keys = ["filter.lfs.clean", "filter.lfs.smudge", "filter.x.y.process", "filter.only", "core.filter.z.clean"]
    overrides = git.filter_overrides(keys)
    expected = [
        f"filter.{driver}.{key}={value}"
        for driver in ("lfs", "x.y")
        for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false"))
    ]
    assert overrides.arguments == tuple(item for setting in expected for item in ("-c", setting))
    assert overrides.environment == {}
    assert git.filter_overrides(["user.name", "filter.none"]).arguments == ()


def test_a_driver_holding_an_equals_sign_is_switched_off_through_the_environment(tmp_path: Path) -> None:
    git = Git(tmp_path, isolated=True)
    overrides = git.filter_overrides(["filter.a=b.clean", "filter.c.smudge"])
    switched_off = ("clean=", "smudge=", "process=", "required=false")
    assert overrides.arguments == tuple(item for key in switched_off for item in ("-c", f"filter.c.{key}"))
    assert overrides.environment == config_environment(
        [
            ("filter.a=b.clean", ""),
            ("filter.a=b.smudge", ""),
            ("filter.a=b.process", ""),
            ("filter.a=b.required", "false"),
        ],
        git.env,
    )
    status, out, _ = git.run("config", "--get", "filter.a=b.required", check=False, overrides=overrides)
    assert (status, out) == (0, b"false\n")


@posix_only(FAKE_GIT)
def test_a_git_that_cannot_read_settings_from_the_environment_is_asked_once_and_named(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    log = tmp_path / "asked"
    # Asked first, it says "no"; asked again, it fails without a word: the same refusal each time.
    script = f'echo asked >> "{log}"; [ "$(wc -l < "{log}")" -ge 2 ] && exit 1; [ "$GIT_CONFIG_COUNT" = 1 ] && echo no'
    fake_git(script, tmp_path, monkeypatch)
    git = Git(tmp_path)
    for _ in range(2):
        with pytest.raises(GitError) as caught:
            git.filter_overrides(["filter.a=b.clean"])
        assert str(caught.value) == (
            f"{tmp_path} defines a filter driver whose name holds '=', which this git cannot be told to leave "
            "unused (git 2.31 or newer can); its files are not read"
        )
    assert log.read_text(encoding="utf-8") == "asked\nasked\n"  # a refusal is not remembered
    fake_git(f'echo asked >> "{log}"; echo yes', tmp_path / "shim", monkeypatch)
    git = Git(tmp_path)
    assert git.filter_overrides(["filter.a=b.clean"]).environment["GIT_CONFIG_COUNT"] == "4"
    assert Git(tmp_path).filter_overrides(["filter.a=b.clean"]).environment["GIT_CONFIG_COUNT"] == "4"
    assert log.read_text(encoding="utf-8") == "asked\nasked\nasked\n"  # a yes is, for that program


def test_git_missing_or_failing_to_start_is_one_error(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    git = Git(tmp_path)

    def raises(error: BaseException) -> Callable[..., object]:
        def run(*_args: object, **_kwargs: object) -> object:
            raise error

        return run

    missing = "git is not installed (no `git` on PATH)"
    for error, kind, words in (
        (FileNotFoundError(2, "No such file"), GitMissing, missing),
        (PermissionError(13, "Permission denied"), GitError, f"cannot run git in {tmp_path}: Permission denied"),
        (ChildOutputTooLarge(), GitError, f"git log printed more than codescout will read in {tmp_path}"),
    ):
        monkeypatch.setattr(git_module, "run_child", raises(error))
        with pytest.raises(GitError) as caught:
            git.run("log")
        assert (type(caught.value), str(caught.value)) == (kind, words)
    monkeypatch.setattr(git_module, "StreamedChild", raises(FileNotFoundError(2, "No such file")))
    with pytest.raises(GitMissing, match=r"^git is not installed \(no `git` on PATH\)$"), git.stream("log"):
        pass
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))
    with pytest.raises(GitMissing, match=r"^git is not installed \(no `git` on PATH\)$"):
        Git(tmp_path)


def test_the_deadline_is_the_shorter_of_the_call_and_the_folder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    given: list[float] = []

    def run_child(
        argv: list[str], *, cwd: str, env: dict[str, str], seconds: float, stdin: int | None
    ) -> tuple[int, bytes, bytes]:
        given.append(seconds)
        return 0, b"", b""

    monkeypatch.setattr(git_module, "run_child", run_child)
    git = Git(tmp_path, timeout=30)
    git.run("log")
    git.run("log", seconds=5)
    git.run("log", seconds=50)
    assert given == [30, 5, 30]


def test_the_environment_is_the_callers_with_git_told_to_stay_quiet_and_plain(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("GIT_TERMINAL_PROMPT", "1")
    monkeypatch.setenv("LC_ALL", "de_DE.UTF-8")
    monkeypatch.setenv("GIT_ALLOW_PROTOCOL", "ext:file")
    monkeypatch.setenv("NOT_GIT_X", "kept")
    told = {"LC_ALL": "C", "LANGUAGE": "C", "GIT_TERMINAL_PROMPT": "0"}
    told |= {"GIT_ALLOW_PROTOCOL": "", "GIT_NO_LAZY_FETCH": "1"}
    for isolated in (False, True):
        env = Git(tmp_path, isolated=isolated).env
        assert env["NOT_GIT_X"] == "kept"
        assert {name: env[name] for name in told} == told


@posix_only(FAKE_GIT)
def test_a_stream_read_to_its_end_checks_how_git_ended_and_one_left_early_does_not(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    fake_git("echo out; echo 'fatal: bad object' >&2; exit 128", tmp_path, monkeypatch)
    git = Git(tmp_path)

    def read_all() -> None:
        with git.stream("log") as out:
            while out.read(4):
                pass

    with pytest.raises(GitError) as caught:
        read_all()
    assert str(caught.value) == f"git log failed in {tmp_path}: fatal: bad object"
    with git.stream("log") as out:
        assert out.read(2) == b"ou"  # left before the end: git's status is not asked
    fake_git("echo out; exit 0", tmp_path / "shim", monkeypatch)
    with Git(tmp_path).stream("log") as out:
        assert out.read(100) == b"out\n" and out.read(100) == b""


class Listener:
    """A TCP server here that counts the connections made to it, closing each at once."""

    def __init__(self) -> None:
        self.server = socket.create_server(("127.0.0.1", 0))
        self.server.settimeout(0.05)
        self.port = self.server.getsockname()[1]
        self.connections = 0
        self.stopping = threading.Event()
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def _serve(self) -> None:
        while not self.stopping.is_set():
            try:
                connection, _ = self.server.accept()
            except TimeoutError:
                continue
            self.connections += 1
            connection.close()

    def close(self) -> int:
        self.stopping.set()
        self.thread.join()
        self.server.close()
        return self.connections


def connecting_ssh(folder: Path) -> Path:
    """An `ssh` program that opens a TCP connection to the port git names with -p, then fails."""
    program = folder / "bin" / "ssh"
    program.parent.mkdir()
    program.write_text(
        f"#!{sys.executable}\n"
        "import socket, sys\n"
        "port = int(sys.argv[sys.argv.index('-p') + 1])\n"
        "socket.create_connection(('127.0.0.1', port)).close()\n"
        "sys.exit('ssh: the connection was closed')\n",
        encoding="utf-8",
    )
    program.chmod(0o755)
    return program


@pytest.mark.parametrize("guard", ["both", "allow-list", "lazy-fetch", "neither"])
@pytest.mark.parametrize("scheme", ["http", "https", "ftp", "ftps", "git", "ssh"])
def test_a_missing_object_is_not_fetched_from_a_server_the_repository_names(
    tmp_path: Path, scheme: str, guard: str
) -> None:
    """A partial clone whose promisor remote is a server here, with its transport allowed by the
    checkout's own `protocol.<name>.allow`, which outranks `protocol.allow` even on a command
    line. Either guard alone keeps git from connecting: GIT_ALLOW_PROTOCOL naming no transport,
    and GIT_NO_LAZY_FETCH (known to git 2.39.4, 2.44 and newer; older gits rely on the first).
    With neither, git connects: that case shows the test can see it."""
    r = Repo(tmp_path / "r")
    r.write("deep/a.py", "one\n")
    r.commit("2025-01-01T00:00:00Z", "deep/a.py")
    r.write("b.py", "two\n")
    r.commit("2025-06-01T00:00:00Z", "b.py")
    subtree = r.git("rev-parse", "HEAD~1^{tree}:deep").strip()
    (r.root / ".git" / "objects" / subtree[:2] / subtree[2:]).unlink()
    listener = Listener()
    try:
        settings = {
            "core.repositoryFormatVersion": "1",
            "extensions.partialClone": "origin",
            "remote.origin.url": f"{scheme}://127.0.0.1:{listener.port}/x",
            "remote.origin.promisor": "true",
            "protocol.allow": "always",
            f"protocol.{scheme}.allow": "always",
        }
        for key, value in settings.items():
            r.git("config", key, value)
        git = Git(r.root, isolated=True, timeout=30)
        if scheme == "ssh":  # not every machine has an ssh client; this one only connects
            git.env["GIT_SSH"] = str(connecting_ssh(tmp_path))
        if guard in ("lazy-fetch", "neither"):
            del git.env["GIT_ALLOW_PROTOCOL"]
        if guard in ("allow-list", "neither"):
            del git.env["GIT_NO_LAZY_FETCH"]  # as a git that does not know the variable reads it
        status, _, err = git.run("log", "-z", "--format=%x00%ct %H", "--name-only", "HEAD", "--", check=False)
    finally:
        connections = listener.close()
    # git log fails: it says it cannot read the tree (in words that differ between gits), or it is
    # ended by SIGPIPE first, when the fetch it started exits before reading what git writes to it.
    assert status != 0, err
    assert b"unable to read tree" in err or status == -13, (status, err)  # -13: SIGPIPE
    assert connections == (1 if guard == "neither" else 0), err
