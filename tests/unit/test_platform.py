"""Windows and macOS rules, run on Linux by passing their flavour (as CPython tests PureWindowsPath).

What a parameter cannot give (a real case-insensitive file system, an event loop without
signal handlers) is mounted or simulated elsewhere: tests/repositories/test_casefold.py and
tests/stdio/test_stdio_start.py. Here: path containment and relative forms, names git and
ripgrep print as bytes, file times, command-line lengths, child-process flags, consoles and
broken pipes, and the same rules followed through RepositoryFacts, `codescout hits` and the CLI's writer.
"""

from __future__ import annotations

import errno
import json
import ntpath
import os
import posixpath
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp.cli import streams as cli_streams
from codescout_mcp.cli.streams import is_console
from codescout_mcp.facts import git as git_module
from codescout_mcp.facts.git import Git, chunks
from codescout_mcp.facts.lookup import FileFacts, Lookup
from codescout_mcp.facts.repository import STATUS_ARGUMENTS, RepositoryFacts
from codescout_mcp.facts.rgcounts import read_match_counts
from codescout_mcp.system import paths, platform, processes, programs
from codescout_mcp.system.paths import (
    ancestors,
    changed_ns,
    read_regular,
    relative_inside,
    relative_to,
    resolved_folder,
)
from codescout_mcp.system.platform import LINUX, MACOS, WINDOWS, decode_name, name_problem, stop_signals, system_for
from codescout_mcp.system.processes import child_options
from tests.gitrepo import NOW, NOW_SECONDS, Repo, env_for, run
from tests.helpers import codescout_exe, installed
from tests.platforms import linux_only


def test_the_running_system_is_known() -> None:
    assert system_for("win32") is WINDOWS and system_for("darwin") is MACOS and system_for("linux") is LINUX
    assert system_for("freebsd14") is LINUX  # any other POSIX system follows the POSIX rules


@pytest.mark.parametrize("system", [LINUX, MACOS, WINDOWS], ids=repr)
def test_each_system_is_found_by_the_platform_value_it_names(system: platform.System) -> None:
    assert system_for(system.name) is system
    assert repr(system) == f"System({system.name!r})"
    assert system.name in ("linux", "darwin", "win32")  # the sys.platform values
    assert system.windows is (system is WINDOWS)
    assert system.paths is (ntpath if system is WINDOWS else posixpath)


def test_the_running_systems_rules_are_what_this_machine_does(tmp_path: Path) -> None:
    """Each field of the running system's rules, checked against the system itself (so on Linux
    LINUX's; macOS and Windows check theirs where the suite runs there)."""
    system = platform.CURRENT
    assert system.paths is os.path
    try:
        os.fsdecode(b"caf\xe9")
    except UnicodeDecodeError:
        refused = True
    else:
        refused = False
    assert refused is system.strict_surrogates
    # st_ctime after a change of mode: the time of that change, or (Windows) still the creation
    target = tmp_path / "a.txt"
    target.write_bytes(b"x")
    before = os.stat(target).st_ctime_ns
    time.sleep(0.05)  # past the coarse clock file times are taken from
    os.chmod(target, 0o600)
    assert (os.stat(target).st_ctime_ns == before) is system.ctime_is_birth
    # SO_REUSEADDR on both: may a second socket bind the port the first listens on?
    with socket.socket() as first, socket.socket() as second:
        for sock in (first, second):
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        first.bind(("127.0.0.1", 0))
        first.listen()
        try:
            second.bind(first.getsockname())
        except OSError:
            shared = False
        else:
            shared = True
    assert shared is system.reuse_address_shares_port
    # A child given the longest run of names the limit lets through starts.
    names = ["n" * 999] * (3 * system.command_line_limit // 1000)
    longest = chunks(names, system, [])[0]
    assert len(longest) < len(names)
    subprocess.run([sys.executable, "-c", "", *longest], check=True)
    # Writing to a pipe whose reader has gone fails with one of the broken-pipe numbers.
    reader, writer = os.pipe()
    os.close(reader)
    try:
        with pytest.raises(OSError) as caught:  # noqa: PT011 - its number is what is checked, below
            os.write(writer, b"x")
    finally:
        os.close(writer)
    assert caught.value.errno in system.broken_pipe_errnos


def test_the_signals_that_stop_a_server_by_each_systems_rules(monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulated: the signal module as POSIX and as Windows have it, and a SIGHUP ignored (nohup)."""
    import signal

    ignored: set[int] = set()
    monkeypatch.setattr(signal, "getsignal", lambda number: signal.SIG_IGN if number in ignored else signal.SIG_DFL)
    monkeypatch.setattr(signal, "SIGHUP", 1, raising=False)
    monkeypatch.delattr(signal, "SIGBREAK", raising=False)
    assert stop_signals() == (signal.SIGTERM, signal.SIGINT, 1)
    ignored.add(1)
    assert stop_signals() == (signal.SIGTERM, signal.SIGINT)
    monkeypatch.delattr(signal, "SIGHUP")
    monkeypatch.setattr(signal, "SIGBREAK", 21, raising=False)
    assert stop_signals() == (signal.SIGTERM, signal.SIGINT, 21)


# --- where a path is (item 2, 3, 4) ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("path", "root", "inside"),
    [
        ("C:\\Work\\repo\\src\\a.py", "C:\\Work\\repo", "src/a.py"),  # always / between parts
        ("c:\\work\\REPO\\src\\a.py", "C:\\Work\\repo", "src/a.py"),  # a lower-case drive, another case
        ("C:/Work/repo/src/a.py", "C:\\Work\\repo", "src/a.py"),  # forward slashes
        ("C:\\Work\\repo", "C:\\Work\\repo\\", ""),  # the root itself
        ("C:\\Work\\repository\\a.py", "C:\\Work\\repo", None),  # a longer name is another folder
        ("D:\\Work\\repo\\a.py", "C:\\Work\\repo", None),  # another drive
        ("\\\\server\\share\\repo\\a.py", "\\\\SERVER\\share\\repo", "a.py"),  # a UNC path
    ],
)
def test_containment_by_windows_rules(path: str, root: str, inside: str | None) -> None:
    assert relative_inside(path, root, WINDOWS) == inside


@pytest.mark.parametrize(
    ("path", "root", "inside"),
    [
        ("/w/repo/src/a.py", "/w/repo", "src/a.py"),
        ("/w/repo", "/w/repo/", ""),
        ("/w/repository/a.py", "/w/repo", None),
        ("/w/Repo/a.py", "/w/repo", None),  # by spelling, another folder (identity is asked separately)
        ("/", "/", ""),
        ("/etc/hosts", "/", "etc/hosts"),
    ],
)
def test_containment_by_posix_rules(path: str, root: str, inside: str | None) -> None:
    assert relative_inside(path, root, LINUX) == inside == relative_inside(path, root, MACOS)


def test_relative_forms_never_raise_across_drives() -> None:
    assert relative_to("C:\\w\\repo\\a.py", "C:\\w\\repo", WINDOWS) == "a.py"
    assert relative_to("C:\\w\\other\\a.py", "C:\\w\\repo", WINDOWS) == "../other/a.py"
    # relpath raises ValueError across drives (and between a drive and a share): the path is whole.
    assert relative_to("D:\\data\\a.py", "C:\\w\\repo", WINDOWS) == "D:/data/a.py"
    assert relative_to("\\\\host\\share\\a.py", "C:\\w\\repo", WINDOWS) == "//host/share/a.py"
    assert relative_to("/w/repo", "/w/repo", LINUX) == "."
    assert relative_to("/w/elsewhere/a.py", "/w/repo", LINUX) == "../elsewhere/a.py"


def test_the_folders_around_a_path_end_at_its_drive_or_share() -> None:
    assert ancestors("C:\\a\\b\\c.txt", WINDOWS) == ["C:\\a\\b", "C:\\a", "C:\\"]
    assert ancestors("\\\\host\\share\\d\\f.txt", WINDOWS) == ["\\\\host\\share\\d", "\\\\host\\share\\"]
    assert ancestors("/a/b/c.txt", LINUX) == ["/a/b", "/a", "/"]


def test_a_path_a_thousand_folders_deep_is_resolved_without_recursion(tmp_path: Path) -> None:
    deep = str(tmp_path) + "/d" * 3000  # never created: resolving needs only the links on the way
    (tmp_path / "link").symlink_to(tmp_path)
    assert resolved_folder(deep, {}) == deep
    assert resolved_folder(str(tmp_path / "link") + "/x/..", {}) == str(tmp_path)


# --- names printed as bytes (item 6) -----------------------------------------------------------------------


def test_names_that_are_not_utf8_decode_by_each_systems_rules() -> None:
    assert decode_name(b"caf\xe9.txt", LINUX) == "caf\udce9.txt"  # surrogateescape: the same bytes back
    assert os.fsencode(decode_name(b"caf\xe9.txt", LINUX)) == b"caf\xe9.txt"
    # Windows: its file-system codec is surrogatepass, which raises here; an unpaired surrogate in
    # a name (WTF-8 from git for Windows) is still read back as that surrogate.
    with pytest.raises(UnicodeDecodeError):
        b"caf\xe9.txt".decode("utf-8", "surrogatepass")
    assert decode_name(b"caf\xe9.txt", WINDOWS) == "caf\udce9.txt"
    assert decode_name(b"a\xed\xa0\x80b", WINDOWS) == "a\ud800b"
    assert decode_name("é".encode(), WINDOWS) == "é"
    assert decode_name(b"caf\xe9.txt", MACOS) == "caf\udce9.txt"  # macOS's file-system codec is UTF-8
    assert decode_name(b"a\xed\xa0\x80b", MACOS) == "a\udced\udca0\udc80b"  # escaped, as a POSIX name


@linux_only("a file-system encoding other than UTF-8 (macOS's and Windows' are always UTF-8)")
def test_names_decode_as_the_running_system_does_in_an_ascii_locale() -> None:
    """Under the C locale with Python's UTF-8 mode off, file names are ASCII with escapes."""
    probe = (
        "import os\n"
        "from codescout_mcp.system.platform import decode_name\n"
        "print(ascii(decode_name(b'caf\\xc3\\xa9')), ascii(os.fsdecode(b'caf\\xc3\\xa9')))\n"
    )
    env = {**os.environ, "LC_ALL": "C", "PYTHONCOERCECLOCALE": "0", "PYTHONUTF8": "0"}
    done = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.split() == ["'caf\\udcc3\\udca9'"] * 2


def windows_fsdecode(monkeypatch: pytest.MonkeyPatch) -> None:
    """os.fsdecode as Windows has it: UTF-8 with surrogatepass, which fails on bytes that are not UTF-8."""
    real = os.fsdecode
    monkeypatch.setattr(
        os, "fsdecode", lambda data: real(data) if isinstance(data, str) else data.decode("utf-8", "surrogatepass")
    )


def test_ripgreps_paths_that_are_not_utf8_never_stop_the_rest_on_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    import base64

    windows_fsdecode(monkeypatch)
    event = (
        b'{"type":"match","data":{"path":{"bytes":"' + base64.b64encode(b"caf\xe9.py") + b'"},"submatches":[{}]}}\n'
        b'{"type":"match","data":{"path":{"text":"b.py"},"submatches":[{}]}}\n'
    )
    assert read_match_counts(event, "stdin", WINDOWS) == {"caf\udce9.py": 1, "b.py": 1}
    assert read_match_counts(b"caf\xe9.py:2\nb.py:1\n", "stdin", WINDOWS) == {"caf\udce9.py": 2, "b.py": 1}


def test_gits_names_that_are_not_utf8_never_break_a_repository_on_windows(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    r = Repo(tmp_path / "r")
    (r.root / os.fsdecode(b"caf\xe9.txt")).write_text("x\n", encoding="utf-8")
    r.write("plain.txt", "x\n")
    r.git("add", "--", os.fsdecode(b"caf\xe9.txt"), "plain.txt")
    r.commit("2026-01-01T00:00:00Z")
    windows_fsdecode(monkeypatch)
    facts = RepositoryFacts.open(r.root, warn=lambda _: None, isolated=True, system=WINDOWS)
    facts.refresh()
    described = facts.describe(["plain.txt", "caf\udce9.txt"], Lookup(NOW_SECONDS)).facts
    assert {name: getattr(fact, "days", None) for name, fact in described.items()} == {
        "plain.txt": 59,
        "caf\udce9.txt": 59,
    }


# --- file times (item 5) ------------------------------------------------------------------------------------


def stat_with(status: os.stat_result, **changes: int) -> os.stat_result:
    fields = list(status)
    extra = {name: getattr(status, name) for name in ("st_atime_ns", "st_mtime_ns", "st_ctime_ns")}
    extra.update(changes)
    return os.stat_result(
        (*fields[:7], extra["st_atime_ns"] / 1e9, extra["st_mtime_ns"] / 1e9, extra["st_ctime_ns"] / 1e9), extra
    )


def test_what_a_file_time_says_of_a_change_by_each_systems_rules(tmp_path: Path) -> None:
    target = tmp_path / "a.txt"
    target.write_text("x", encoding="utf-8")
    base = os.stat(target)
    created, edited = 1_000_000_000_000_000_000, 1_700_000_000_000_000_000
    as_windows_sees_it = stat_with(base, st_mtime_ns=edited, st_ctime_ns=created)  # ctime: the creation
    assert changed_ns(as_windows_sees_it, WINDOWS) == edited
    copied = stat_with(base, st_mtime_ns=created, st_ctime_ns=edited)  # a copy keeps its source's mtime
    assert changed_ns(copied, WINDOWS) == created
    assert changed_ns(stat_with(base, st_mtime_ns=created, st_ctime_ns=edited), LINUX) == edited
    assert changed_ns(stat_with(base, st_mtime_ns=edited, st_ctime_ns=created), LINUX) == edited  # mtime set ahead
    assert changed_ns(stat_with(base, st_mtime_ns=created, st_ctime_ns=edited), MACOS) == edited


def test_an_edit_is_seen_where_st_ctime_is_the_creation_time(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows: an edit leaves st_ctime (the creation time) alone; the next call must still see it."""
    r = Repo(tmp_path / "r")
    r.write("a.txt", "1\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    time.sleep(1.1)
    created = os.stat(r.root / "a.txt").st_ctime_ns
    real_stat = os.stat

    def windows_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        status = real_stat(path, *args, **kwargs)
        if str(path).startswith(str(r.root)) and not str(path).startswith(str(r.root / ".git")):
            return stat_with(status, st_ctime_ns=created)
        return status

    monkeypatch.setattr(os, "stat", windows_stat)
    facts = RepositoryFacts.open(r.root, warn=lambda _: None, isolated=True, system=WINDOWS)

    def days() -> int:
        facts.refresh()
        fact = facts.describe(["a.txt"], Lookup(NOW_SECONDS)).facts["a.txt"]
        assert not isinstance(fact, OSError)
        return fact.days

    assert days() == 59
    r.write("a.txt", "2\n")  # edited: a new mtime, the same creation time
    assert days() == 0


# --- names no file can have ---------------------------------------------------------------------------------


def test_names_no_file_can_have() -> None:
    assert name_problem("a\0b") == "holds a NUL character, which no file name can"
    assert name_problem("a\ud800") == "holds an unpaired surrogate, which no file name here can"
    assert name_problem("caf\udce9") is None  # an escaped byte is a POSIX name
    assert name_problem("plain/name.txt") is None


# --- child processes (item 10) ------------------------------------------------------------------------------


def test_long_path_lists_are_split_to_fit_the_command_line() -> None:
    names = [f"src/module_{i:04d}/file.py" for i in range(5000)]
    runs = chunks(names, WINDOWS, [])
    assert [name for run in runs for name in run] == names
    assert len(runs) > 1
    assert all(sum(len(name) + 3 for name in run) <= WINDOWS.command_line_limit for run in runs)
    assert chunks(names, LINUX, []) == [names]


def test_path_lists_are_measured_as_each_system_measures_a_command_line() -> None:
    """Bytes on POSIX (a CJK character is three), UTF-16 units on Windows (an emoji is two)."""
    cjk = ["\u6f22" * 80 + f"/{i}" for i in range(20_000)]
    for flavour in (LINUX, MACOS):
        runs = chunks(cjk, flavour, [])
        assert [name for run in runs for name in run] == cjk
        sizes = [sum(len(os.fsencode(name)) + 1 for name in run) for run in runs]
        assert max(sizes) <= flavour.command_line_limit < sizes[0] + len(os.fsencode(runs[1][0])) + 1
    emoji = ["\U0001f600" * 50 + f"{i}" for i in range(2_000)]
    runs = chunks(emoji, WINDOWS, [])
    assert all(
        sum(len(name.encode("utf-16-le")) // 2 + 3 for name in run) <= WINDOWS.command_line_limit for run in runs
    )
    assert len(runs) > len(chunks([name.replace("\U0001f600", "a") for name in emoji], WINDOWS, []))


def test_the_longest_git_command_line_fits_what_windows_starts() -> None:
    """CreateProcess takes 32,767 UTF-16 units with the NUL: the git status run on the longest
    run of names, with git's own settings and a long path to git, must be shorter."""
    program = "C:\\" + "\\".join(["Program Files (x86)"] * 12) + "\\Git\\cmd\\git.exe"  # 250 units
    fixed = Git(Path(".")).command(*STATUS_ARGUMENTS, "--")
    names = [f"src/\U0001f600 folder {i}/a file {i}.py" for i in range(5_000)]
    for run_ in chunks(names, WINDOWS, fixed):
        line = subprocess.list2cmdline([program, *fixed[1:], *run_])
        assert len(line.encode("utf-16-le")) // 2 < 32_767


@pytest.mark.parametrize(
    ("system", "arg_max"),
    [(LINUX, 2 << 20), (MACOS, 1 << 20)],  # Linux's with the usual 8 MiB stack; macOS's sys/syslimits.h
    ids=repr,
)
def test_the_longest_git_command_line_leaves_room_for_an_environment(system: platform.System, arg_max: int) -> None:
    """ARG_MAX holds the arguments and the environment together, each string with its NUL and a
    pointer to it: the git status run on the longest run of names leaves 256 KiB for the rest."""
    fixed = Git(Path(".")).command(*STATUS_ARGUMENTS, "--")
    names = [f"src/\u6f22 folder {i}/a file {i}.py" for i in range(100_000)]
    argv = [*fixed, *chunks(names, system, fixed)[0]]
    assert sum(len(os.fsencode(arg)) + 1 + 8 for arg in argv) + (256 << 10) <= arg_max


def test_a_repository_asked_about_more_paths_than_a_command_line_holds(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The names asked about go in runs that, with git's arguments and the settings that turn
    the checkout's filters off (`-c`, and the environment for a name holding '='), fit the limit."""
    r = Repo(tmp_path / "r")
    names = [f"n{i:03d}" + "x" * 246 + ".txt" for i in range(60)]  # 255 bytes, the most most systems allow
    for name in names:
        r.write(name, "1\n")
    r.commit("2026-01-01T00:00:00Z", *names)
    for driver in ["lfs", *(f"{letter}=1" for letter in "abcdefghij")]:  # more in the environment than a name
        r.git("config", f"filter.{driver}.clean", "false")
    time.sleep(1.1)
    limit = 8_000
    tiny = platform.System(
        **{slot: getattr(LINUX, slot) for slot in platform.System.__slots__ if slot != "command_line_limit"},
        command_line_limit=limit,
    )
    facts = RepositoryFacts.open(r.root, warn=lambda _: None, isolated=True, system=tiny)
    facts.refresh()
    assert {getattr(f, "days", None) for f in facts.describe(names, Lookup(NOW_SECONDS)).facts.values()} == {59}
    for name in names[::2]:
        r.write(name, "2\n")  # changed after the first status read: asked about again, in short runs
    runs: list[list[str]] = []
    costs: list[int] = []
    real_run_child = processes.run_child

    def counted(argv: list[str], *, env: dict[str, str], **options: Any) -> Any:
        if "status" in argv:
            settings = [
                f"{key}={value}"
                for key, value in env.items()
                if re.fullmatch(r"GIT_CONFIG_\w+_\d+|GIT_CONFIG_COUNT", key)
            ]
            costs.append(sum(len(os.fsencode(arg)) + 1 for arg in [*argv, *settings]))
            runs.append(argv[argv.index("--") + 1 :])
        return real_run_child(argv, env=env, **options)

    monkeypatch.setattr(git_module, "run_child", counted)
    facts.refresh()
    described = facts.describe(names, Lookup(NOW_SECONDS)).facts
    days = {name: getattr(fact, "days", None) for name, fact in described.items()}
    assert days == {name: 0 if index % 2 == 0 else 59 for index, name in enumerate(names)}
    assert len(runs) > 1 and sorted(name for run_ in runs for name in run_) == names[::2]
    assert max(costs) <= limit
    for cost, following in zip(costs[:-1], runs[1:], strict=True):  # each run as full as it may be
        assert cost + len(following[0]) + 1 > limit  # (one name more would not fit)


def test_children_get_a_group_of_their_own_and_no_window() -> None:
    assert child_options(LINUX) == {"start_new_session": True}
    assert child_options(MACOS) == {"start_new_session": True}
    # CREATE_NO_WINDOW | CREATE_NEW_PROCESS_GROUP, as Win32 numbers them
    assert child_options(WINDOWS) == {"creationflags": 0x08000000 | 0x00000200}


# --- git found, or said to be missing (item 8) --------------------------------------------------------------


def shim(folder: Path, script: str) -> dict[str, str]:
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "git").write_text(f"#!/bin/sh\n{script}\n", encoding="utf-8")
    (folder / "git").chmod(0o755)
    env = env_for()
    env["PATH"] = f"{folder}{os.pathsep}{env['PATH']}"
    return env


STAND_IN_WORDS = [
    "xcrun: error: invalid active developer path (/Library/Developer/CommandLineTools), missing xcrun at: "
    "/Library/Developer/CommandLineTools/usr/bin/xcrun",
    "xcode-select: note: No developer tools were found, requesting install.",
]


@pytest.mark.skipif(sys.platform == "win32", reason="a shell script stands in for git")
@pytest.mark.parametrize("words", STAND_IN_WORDS, ids=["xcrun", "xcode-select"])
def test_macos_gits_stand_in_without_the_command_line_tools_is_named(tmp_path: Path, words: str) -> None:
    r = Repo(tmp_path / "r")
    r.write("a.txt", "x\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    env = shim(tmp_path / "shim", f"echo '{words}' >&2\nexit 1")
    done = run([codescout_exe(), "hits", "--now", NOW, "--repo", str(r.root)], tmp_path, stdin=b"r/a.txt:1\n", env=env)
    assert (done.returncode, done.stdout) == (1, b"")
    said = done.stderr.decode()
    assert said.startswith(f"codescout: git cannot run: {words}")
    assert "xcode-select --install" in said and said.count("\n") == 1


def test_git_missing_is_said_once(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "a.txt").write_text("x", encoding="utf-8")
    no_git = env_for(PATH=str(Path(codescout_exe()).parent))
    done = run([codescout_exe(), "hits", "--now", NOW], folder, stdin=b"a.txt:1\n", env=no_git)
    assert done.returncode == 0
    assert done.stderr == (
        b"codescout: warning: git is not installed; ages come from file modification times and there are no owners\n"
    )


# --- files codescout reads itself ---------------------------------------------------------------------------


def test_only_regular_files_are_read_and_only_so_far(tmp_path: Path) -> None:
    small = tmp_path / "small"
    small.write_bytes(b"abc")
    assert read_regular(str(small), 3) == b"abc"
    assert read_regular(str(small), 2) is None
    with pytest.raises(paths.NotRegular, match="a directory"):
        read_regular(str(tmp_path), 10)
    if hasattr(os, "mkfifo"):
        os.mkfifo(tmp_path / "fifo")
        with pytest.raises(paths.NotRegular, match="a FIFO"):
            read_regular(str(tmp_path / "fifo"), 10)  # opened without waiting for a writer


# --- consoles and pipes (item 11) ---------------------------------------------------------------------------


def test_the_nul_device_is_no_console_on_windows(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "isatty", lambda fd: True)  # as Windows says of NUL
    assert is_console(0, WINDOWS, console_mode=lambda fd: False) is False
    assert is_console(0, WINDOWS, console_mode=lambda fd: True) is True
    assert is_console(0, LINUX) is True


def test_a_reader_gone_on_windows_is_einval_and_quiet(monkeypatch: pytest.MonkeyPatch) -> None:
    def refused(fd: int, data: object) -> int:
        raise OSError(errno.EINVAL, "Invalid argument")

    monkeypatch.setattr(os, "write", refused)
    monkeypatch.setattr(platform, "CURRENT", WINDOWS)
    with pytest.raises(cli_streams.ReaderGone):
        cli_streams.write_stdout(b"x")
    monkeypatch.setattr(platform, "CURRENT", LINUX)
    with pytest.raises(cli_streams.CliError, match="cannot write to stdout: Invalid argument"):
        cli_streams.write_stdout(b"x")


def test_reuse_address_follows_the_system() -> None:
    assert WINDOWS.reuse_address_shares_port and not LINUX.reuse_address_shares_port
    assert not MACOS.reuse_address_shares_port


def test_the_log_is_utf8_whatever_the_locale(tmp_path: Path) -> None:
    probe = (
        "import logging\n"
        "from codescout_mcp.cli.main import configure_logging\n"
        "configure_logging('warning')\n"
        "logging.getLogger('codescout').warning('caf\\u00e9 \\ud800 done')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", probe],
        capture_output=True,
        env={**os.environ, "PYTHONIOENCODING": "latin-1", "LC_ALL": "C"},
        timeout=30,
        check=False,
    )
    assert done.returncode == 0
    assert done.stderr.endswith("café \\ud800 done\n".encode())


# --- finding programs ---------------------------------------------------------------------------


def test_a_program_is_found_on_path_but_never_in_the_current_folder_on_windows() -> None:
    """Windows searches the current folder before PATH, and runs .bat and .cmd files through
    cmd.exe: only PATH's folders with a drive or share count, and only .exe and .com files."""
    present = {"C:\\Tools\\git.bat", "C:\\Git\\cmd\\git.exe", ".\\git.exe", "bin\\git.exe", "\\git\\git.exe"}
    path = '.;bin;\\git;;C:\\Tools;"C:\\Git\\cmd";D:\\Other'
    found = programs.find_program("git", WINDOWS, path=path, is_program=present.__contains__)
    assert found == "C:\\Git\\cmd\\git.exe"
    assert programs.find_program("git.exe", WINDOWS, path="C:\\Git\\cmd", is_program=present.__contains__) == found
    assert programs.find_program("git", WINDOWS, path=".;bin;C:\\Tools", is_program=present.__contains__) is None
    quoted = {"D:\\X\\git.exe"}  # a folder whose name ends in a letter, quoted, with spaces around
    assert programs.find_program("git", WINDOWS, path=' "D:\\X" ', is_program=quoted.__contains__) == "D:\\X\\git.exe"
    share = {"\\\\server\\tools\\git.com"}
    assert programs.find_program("git", WINDOWS, path="\\\\server\\tools", is_program=share.__contains__) == (
        "\\\\server\\tools\\git.com"
    )


@pytest.mark.parametrize("flavour", [LINUX, MACOS])
def test_a_program_is_found_in_absolute_path_folders_only_on_posix(flavour: platform.System) -> None:
    present = {"git", "./git", "bin/git", "/usr/bin/git"}
    found = programs.find_program("git", flavour, path=":.:bin:/usr/bin", is_program=present.__contains__)
    assert found == "/usr/bin/git"
    assert programs.find_program("git", flavour, path="::.:bin", is_program=present.__contains__) is None


def test_a_workspace_asked_again_about_thousands_of_long_names_fits_each_git_command_line(tmp_path: Path) -> None:
    """Linux counts a command line in bytes: 3,200 names of CJK characters are 2.3 MB, past ARG_MAX
    (2 MiB), though only 0.8 million characters. The second call asks git about each of them again."""
    r = Repo(tmp_path / "r")
    top, middle, stem = "\u6f22" * 80, "\u5b57" * 80, "\u540d" * 76  # 240 and 228 bytes: under NAME_MAX
    folder = r.root / top / middle
    folder.mkdir(parents=True)
    names = []
    for i in range(3200):
        (folder / f"{stem}{i:04d}").write_text("x\n", encoding="utf-8")
        names.append(f"{top}/{middle}/{stem}{i:04d}")
    r.commit("2026-01-01T00:00:00Z", ".")
    assert sum(len(os.fsencode(name)) + 1 for name in names) > 2 * 1024 * 1024
    call = {"name": "rank_workspace_hits", "arguments": {"hits": [{"path": n, "matches": 1} for n in names]}}
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
        server.stdin.write(json.dumps({"jsonrpc": "2.0", "id": rid, "method": method, "params": params}).encode())
        server.stdin.write(b"\n")
        server.stdin.flush()
        answer: dict[str, Any] = json.loads(server.stdout.readline())
        return answer

    try:
        ask(
            1,
            "initialize",
            {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}},
        )
        first = ask(2, "tools/call", call)["result"]
        assert first["structuredContent"]["counts"] == {"hits": 3200, "returned": 10}, first
        later = time.time() + 5
        for name in names:
            os.utime(r.root / name, (later, later))  # new stat data: each is asked about again
        second = ask(3, "tools/call", call)["result"]
        assert not second.get("isError"), second["content"][0]["text"]
        assert second["structuredContent"]["counts"] == {"hits": 3200, "returned": 10}
        server.stdin.close()
        assert server.wait(timeout=60) == 0
    finally:
        server.kill()
        server.wait()


# --- names Windows opens as another (item 10 of the third hostile pass) -----------------------------------------


@pytest.mark.parametrize("alias", ["a.py.", "a.py  ", "a.py. .", "a.py::$DATA", "A.PY::$data", "AB0~1.PY"])
def test_a_name_windows_opens_as_gits_file_is_answered_as_that_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, alias: str
) -> None:
    """Simulated on Linux: the alias is a hard link to git's file (so it is the same file, as on
    Windows), and the WINDOWS flavour's rules map it to git's name; GetLongPathNameW is stood in for."""
    r = Repo(tmp_path / "r")
    r.write("a.py", "x\n")
    r.write("CODEOWNERS", "a.py @owner\n")
    r.commit("2026-01-01T00:00:00Z", "a.py", "CODEOWNERS")
    os.link(r.root / "a.py", r.root / alias)
    short = {str(r.root / "AB0~1.PY"): str(r.root / "a.py")}
    monkeypatch.setattr(platform, "_long_path_of", lambda path: short.get(path, path))
    facts = RepositoryFacts.open(r.root, warn=lambda _: None, isolated=True, system=WINDOWS)
    facts.refresh()
    looked_up = facts.describe([alias], Lookup(NOW_SECONDS))
    described = looked_up.facts
    assert described[alias] == FileFacts(59, "@owner")
    assert looked_up.spellings == {alias: "a.py"}


def test_windows_plain_names() -> None:
    assert platform.windows_plain_name("src./a.py. ") == "src/a.py"
    assert platform.windows_plain_name("a.py::$DATA") == "a.py"
    assert platform.windows_plain_name("src/a.py.::$data") == "src/a.py"
    assert platform.windows_plain_name("a.py::$DATA/b") == "a.py::$DATA/b"  # a folder's name is not a stream
    assert platform.windows_plain_name("../x/./a") == "../x/./a"
    assert platform.windows_plain_name("...") == "..."  # a name of dots only is left as it is
    assert platform.windows_plain_name("MATRIX/SAX") == "MATRIX/SAX"  # only dots and spaces are taken off
    assert platform.long_path("C:\\PROGRA~1\\x", LINUX) == "C:\\PROGRA~1\\x"


def test_short_names_are_written_out_in_full_on_windows_only(monkeypatch: pytest.MonkeyPatch) -> None:
    short = "C:\\PROGRA~1\\x.py"
    assert platform.long_path("C:\\NO-SUCH~1\\x.py", WINDOWS) == "C:\\NO-SUCH~1\\x.py"  # here, or no such file
    asked: list[str] = []

    def long_form(path: str) -> str:
        asked.append(path)
        return path.replace("PROGRA~1", "Program Files")

    monkeypatch.setattr(platform, "_long_path_of", long_form)
    assert platform.long_path(short, WINDOWS) == "C:\\Program Files\\x.py"
    assert platform.long_path(short, LINUX) == short and platform.long_path(short, MACOS) == short
    assert asked == [short]


def test_the_long_form_is_asked_of_windows_as_its_api_answers(monkeypatch: pytest.MonkeyPatch) -> None:
    """GetLongPathNameW, simulated: it returns the length written, 0 on failure, or, when the buffer
    is too small, the size the answer needs (its NUL counted), writing nothing."""
    import ctypes

    answers = {"C:\\PROGRA~1": "C:\\Program Files", "C:\\DEEP~1": "C:\\" + "d" * 40_000, "A": "a"}
    sizes: list[int] = []

    class Kernel32:
        @staticmethod
        def GetLongPathNameW(path: str, buffer: Any, size: int) -> int:
            sizes.append(size)
            assert len(buffer) == size
            answer = answers.get(path)
            if answer is None:
                return 0
            if len(answer) >= size:
                return len(answer) + 1
            buffer.value = answer
            return len(answer)

    class WinDLL:
        kernel32 = Kernel32()

    monkeypatch.setattr(ctypes, "windll", WinDLL(), raising=False)
    assert platform._windows_long_path("C:\\PROGRA~1") == "C:\\Program Files"
    assert platform._windows_long_path("A") == "a"  # a relative name of one letter: one unit written
    for failing in ("C:\\GONE~1", "C:\\DEEP~1"):  # no such file; a long form with no room for it
        assert platform._windows_long_path(failing) == failing
    assert sizes == [32_768] * 4  # the longest Windows path, 32,767 units, and its NUL


def test_an_edit_that_puts_the_modification_time_back_is_seen(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """Windows' st_ctime is the creation time: only the size (and the other fields git compares) tell."""
    r = Repo(tmp_path / "r")
    r.write("a.txt", "1\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    time.sleep(1.1)
    created = os.stat(r.root / "a.txt").st_ctime_ns
    real_stat = os.stat

    def windows_stat(path: Any, *args: Any, **kwargs: Any) -> os.stat_result:
        status = real_stat(path, *args, **kwargs)
        if str(path).startswith(str(r.root)) and not str(path).startswith(str(r.root / ".git")):
            return stat_with(status, st_ctime_ns=created)
        return status

    monkeypatch.setattr(os, "stat", windows_stat)
    facts = RepositoryFacts.open(r.root, warn=lambda _: None, isolated=True, system=WINDOWS)

    def days() -> int:
        facts.refresh()
        fact = facts.describe(["a.txt"], Lookup(NOW_SECONDS)).facts["a.txt"]
        assert not isinstance(fact, OSError)
        return fact.days

    assert days() == 59
    before = real_stat(r.root / "a.txt")
    r.write("a.txt", "edited\n")
    os.utime(r.root / "a.txt", ns=(before.st_atime_ns, before.st_mtime_ns))  # as `touch -r` or an unzip does
    assert days() == 0


def _slow_popen(monkeypatch: pytest.MonkeyPatch, pause: float) -> None:
    """Popen that starts the child at once but returns `pause` seconds later, as under load."""
    real = subprocess.Popen

    def slow(*args: Any, **kwargs: Any) -> subprocess.Popen[bytes]:
        proc = real(*args, **kwargs)
        time.sleep(pause)
        return proc

    monkeypatch.setattr(subprocess, "Popen", slow)


def _child_gone(pid: int, seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        try:
            if Path(f"/proc/{pid}/stat").read_text().split()[2] == "Z":
                return True
        except OSError:
            pass
        time.sleep(0.02)
    return False


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc for the child's state")
def test_a_stop_while_a_child_is_starting_ends_that_child_too(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stop that comes after the child runs but before Popen has returned in the thread that started
    it (a loaded machine) waits for that start, and ends the child with the rest."""
    import threading

    _slow_popen(monkeypatch, 0.5)
    started: list[int] = []
    thread = threading.Thread(
        target=lambda: started.append(processes._spawn(["sleep", "30"], os.getcwd(), dict(os.environ)).pid)
    )
    thread.start()
    time.sleep(0.2)  # the child runs; Popen has not returned
    processes.end_all_children()
    thread.join()
    assert started and _child_gone(started[0]), "the child started during the stop is still running"


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc for the child's state")
def test_a_child_started_after_the_last_stop_is_ended_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """Once the process is leaving (exit_now ends the children, then os._exit), a worker thread that
    starts one more child gets it ended at once: nothing would be left to end it."""
    monkeypatch.setattr(processes, "_LEAVING", False)
    processes.end_all_children(leaving=True)
    proc = processes._spawn(["sleep", "30"], os.getcwd(), dict(os.environ))
    assert _child_gone(proc.pid)
    proc.wait(timeout=5)
