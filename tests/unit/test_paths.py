"""`system/paths.py` in process: folders around a path, a folder found again under another name, links
and `..` resolved as the system resolves them, the kinds of file never read, reads held to their
bound, and the open file checked to be the one inside (by /proc, by macOS's F_GETPATH and by
resolving again, the last two simulated here)."""

from __future__ import annotations

import errno
import os
import stat
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from codescout_mcp.system import paths
from codescout_mcp.system.paths import (
    MovedOutside,
    NotRegular,
    ancestors,
    describe_kind,
    folder_identity,
    is_link,
    located,
    read_regular,
    relative_to,
    resolved_folder,
    same_folder_inside,
)
from codescout_mcp.system.platform import LINUX, WINDOWS
from tests.platforms import FIFOS, PROC, linux_only, posix_only


def test_the_folders_around_a_path_nearest_first() -> None:
    assert ancestors("/a/b/c.py", LINUX) == ["/a/b", "/a", "/"]
    assert ancestors("/a/./b/../c", LINUX) == ["/a", "/"]  # as the spelling normalises
    assert ancestors("a/b", LINUX) == ["a"]  # a relative path ends at its first part
    assert ancestors("/", LINUX) == []
    assert ancestors("C:\\a\\b", WINDOWS) == ["C:\\a", "C:\\"]


def test_relative_forms_inside_and_out() -> None:
    assert relative_to("/w/src/a.py", "/w", LINUX) == "src/a.py"
    assert relative_to("/w", "/w", LINUX) == "."
    assert relative_to("/other/a.py", "/w/deep", LINUX) == "../../other/a.py"
    assert relative_to("C:\\other\\a.py", "C:\\w", WINDOWS) == "../other/a.py"
    assert relative_to("D:\\a\\b.py", "C:\\w", WINDOWS) == "D:/a/b.py"  # no relative form across drives


@posix_only("a symbolic link to a folder, made without privileges")
def test_a_folder_found_again_under_another_name(tmp_path: Path) -> None:
    root = tmp_path / "root"
    (root / "src").mkdir(parents=True)
    (tmp_path / "alias").symlink_to(root)
    alias = str(tmp_path / "alias")
    identities: dict[str, tuple[int, int] | None] = {}
    assert same_folder_inside(f"{alias}/src/a.py", str(root), identities) == "src/a.py"
    assert same_folder_inside(alias, str(root), identities) is None  # the root itself, only when asked
    assert same_folder_inside(alias, str(root), identities, itself=True) == ""
    assert same_folder_inside(str(tmp_path / "other" / "a.py"), str(root), identities) is None
    assert same_folder_inside(f"{alias}/a.py", str(tmp_path / "gone"), identities) is None  # no root to find
    # Each folder is read once: what is kept is what is compared.
    kept = {str(root): (1, 2), alias: (1, 2), "/": (7, 7), str(tmp_path): (7, 8)}
    assert same_folder_inside("/elsewhere/x/a.py", str(root), {**kept, "/elsewhere/x": (1, 2)}) == "a.py"


def test_a_folders_identity_is_kept_and_none_when_it_has_none(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    identities: dict[str, tuple[int, int] | None] = {}
    info = os.stat(tmp_path)
    assert folder_identity(str(tmp_path), identities) == (info.st_dev, info.st_ino)
    assert folder_identity(str(tmp_path / "gone"), identities) is None
    assert folder_identity("a\0b", identities) is None  # a name no folder can have: ValueError
    assert set(identities) == {str(tmp_path), str(tmp_path / "gone"), "a\0b"}
    real_stat = os.stat
    monkeypatch.setattr(os, "stat", lambda path: SimpleNamespace(st_dev=real_stat(path).st_dev, st_ino=0))
    assert folder_identity(str(tmp_path / "fat"), identities) is None  # a file system without inode numbers
    assert folder_identity(str(tmp_path), identities) == (info.st_dev, info.st_ino)  # kept: not read again


@posix_only("symbolic links made without privileges")
def test_links_are_found_and_other_files_are_not(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / "link").symlink_to(tmp_path / "real")
    assert is_link(str(tmp_path / "link"))
    assert not is_link(str(tmp_path / "real"))
    assert not is_link(str(tmp_path / "gone"))


def test_a_junction_is_a_link_to_resolve_on_windows_before_python_3_12(monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulated: no os.path.isjunction, and lstat's st_reparse_tag as Windows gives it."""
    tags = {"junction": 0xA0000003, "plain": 0}

    def lstat(path: str) -> Any:
        if path not in tags:
            raise FileNotFoundError(errno.ENOENT, "gone", path)
        return SimpleNamespace(st_reparse_tag=tags[path])

    monkeypatch.delattr(os.path, "isjunction", raising=False)
    monkeypatch.setattr(os.path, "islink", lambda path: False)
    monkeypatch.setattr(os, "lstat", lstat)
    monkeypatch.setattr(paths, "CURRENT", WINDOWS)
    assert [is_link(name) for name in ("junction", "plain", "gone")] == [True, False, False]
    monkeypatch.setattr(os, "lstat", lambda path: SimpleNamespace())  # no reparse tags: not Windows
    assert not is_link("junction")
    monkeypatch.setattr(os, "lstat", lstat)
    monkeypatch.setattr(paths, "CURRENT", LINUX)
    assert not is_link("junction")
    monkeypatch.setattr(os.path, "isjunction", lambda path: path == "junction", raising=False)  # Python 3.12
    assert is_link("junction") and not is_link("plain")


@posix_only("symbolic links made without privileges")
def test_folders_resolve_as_the_system_resolves_them(tmp_path: Path) -> None:
    base = str(tmp_path)
    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    known: dict[str, str] = {}
    assert resolved_folder(f"{base}/link/deep/", known) == f"{base}/real/deep"
    assert resolved_folder(f"{base}/link/..", known) == base  # `..` after the link: its target's parent
    assert resolved_folder(f"{base}/link/./deep/.", known) == f"{base}/real/deep"
    assert known[f"{base}/link"] == f"{base}/real" and known["/"] == "/"
    # What is known is used as it is, and a folder under it is resolved from it.
    assert resolved_folder("/nowhere/a", {"/nowhere": f"{base}/real"}) == f"{base}/real/a"
    assert located(base, "link/deep/x.py", known) == f"{base}/real/deep/x.py"
    assert located(base, "link", known) == f"{base}/link"  # a file's own name is kept, as git tracks a link
    for folder_named in ("link/deep/..", "link/deep/.", "link/deep/"):
        assert located(base, folder_named, known) == (
            f"{base}/real" if folder_named.endswith("..") else f"{base}/real/deep"
        )
    assert located(base, f"{base}/real/deep", known) == f"{base}/real/deep"  # absolute, as given


def test_what_a_file_that_is_not_regular_is_called() -> None:
    assert describe_kind(stat.S_IFDIR) == "a directory"
    assert describe_kind(stat.S_IFIFO) == "a FIFO"
    assert describe_kind(stat.S_IFSOCK) == "a socket"
    assert describe_kind(stat.S_IFLNK) == "a symbolic link"
    assert describe_kind(stat.S_IFCHR) == "a device"
    assert describe_kind(stat.S_IFBLK) == "a device"


def test_a_file_is_read_whole_up_to_its_bound_and_not_past_it(tmp_path: Path) -> None:
    target = tmp_path / "a.bin"
    data = bytes(range(256)) * 10_000  # 2.4 MiB: more than one read
    target.write_bytes(data)
    assert read_regular(str(target), len(data)) == data
    assert read_regular(str(target), len(data) - 1) is None
    assert read_regular(str(target), len(data) + 1) == data
    (tmp_path / "empty").write_bytes(b"")
    assert read_regular(str(tmp_path / "empty"), 0) == b""
    with pytest.raises(NotRegular, match="a directory, not a regular file"):
        read_regular(str(tmp_path), 100)
    with pytest.raises(FileNotFoundError):
        read_regular(str(tmp_path / "gone"), 100)


@linux_only(PROC)
def test_a_file_larger_than_its_size_says_is_held_to_the_bound(monkeypatch: pytest.MonkeyPatch) -> None:
    """Files in /proc say they hold 0 bytes (as a file still being written may say less than it
    will hold): the bound is kept by what is read, however short each read is. (Its limits, which
    stay as they are while it runs: its status counts the switches between reads.)"""
    assert os.stat("/proc/self/limits").st_size == 0
    limits = read_regular("/proc/self/limits", 1 << 20)
    assert limits is not None and limits.startswith(b"Limit")
    assert read_regular("/proc/self/limits", 10) is None
    assert read_regular("/proc/self/limits", len(limits) - 1) is None
    real_read = os.read
    taken: list[int] = []

    def short_read(fd: int, size: int) -> bytes:
        data = real_read(fd, min(size, 7))
        taken.append(len(data))
        return data

    monkeypatch.setattr(os, "read", short_read)
    assert read_regular("/proc/self/limits", 70) is None  # ten reads reach the bound exactly: one more
    assert sum(taken) == 71  # and never more than one byte past it
    assert read_regular("/proc/self/limits", 1 << 20) == limits


@posix_only("a terminal (a pseudo-terminal pair)")
def test_a_terminal_opened_as_a_file_never_becomes_the_controlling_terminal() -> None:
    """A session leader without a terminal that opens one (say, a link in a checkout to
    /dev/pts/N) would take it as its controlling terminal, unless it opens with O_NOCTTY."""
    probe = (
        "import os, pty\n"
        "from codescout_mcp.system.paths import NotRegular, read_regular\n"
        "os.setsid()\n"
        "leader, follower = pty.openpty()\n"
        "try:\n"
        "    read_regular(os.ttyname(follower), 10)\n"
        "except NotRegular as error:\n"
        "    print(error)\n"
        "try:\n"
        "    os.close(os.open('/dev/tty', os.O_RDONLY))\n"
        "    print('has a terminal')\n"
        "except OSError:\n"
        "    print('has none')\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=60)
    assert done.stdout.splitlines() == ["a device, not a regular file", "has none"]


def test_a_file_is_read_as_its_bytes_where_files_open_as_text_by_default(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Simulated: Windows' C runtime opens a file in text mode unless told O_BINARY, and then
    reads CR LF as LF."""
    text_mode: set[int] = set()
    real_open, real_read, real_close = os.open, os.read, os.close

    def opened(path: str, flags: int, *args: Any) -> int:
        fd = real_open(path, flags & ~0x8000, *args)
        if not flags & 0x8000:
            text_mode.add(fd)
        return fd

    def read(fd: int, size: int) -> bytes:
        data = real_read(fd, size)
        return data.replace(b"\r\n", b"\n") if fd in text_mode else data

    def closed(fd: int) -> None:
        text_mode.discard(fd)
        real_close(fd)

    monkeypatch.setattr(os, "O_BINARY", 0x8000, raising=False)
    monkeypatch.setattr(os, "open", opened)
    monkeypatch.setattr(os, "read", read)
    monkeypatch.setattr(os, "close", closed)
    (tmp_path / "CODEOWNERS").write_bytes(b"* @a\r\n")
    assert read_regular(str(tmp_path / "CODEOWNERS"), 100) == b"* @a\r\n"


def test_a_file_is_opened_read_only_where_the_optional_flags_are_missing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Simulated: a system without O_NONBLOCK, O_NOCTTY or O_NOFOLLOW (Windows has none of them)
    still opens the file only to read it."""
    for flag in ("O_NONBLOCK", "O_NOCTTY", "O_NOFOLLOW", "O_BINARY"):
        monkeypatch.delattr(os, flag, raising=False)
    (tmp_path / "a.txt").write_bytes(b"a")
    assert read_regular(str(tmp_path / "a.txt"), 10) == b"a"
    assert read_regular(str(tmp_path / "a.txt"), 10, inside=str(tmp_path)) == b"a"


@posix_only(FIFOS)
def test_a_fifo_is_named_not_read(tmp_path: Path) -> None:
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(tmp_path / "fifo")
    with pytest.raises(NotRegular) as caught:
        read_regular(str(tmp_path / "fifo"), 10)
    assert str(caught.value) == "a FIFO, not a regular file"


@posix_only("symbolic links made without privileges")
def test_a_link_put_where_a_checked_file_was_is_never_followed(tmp_path: Path) -> None:
    root = tmp_path / "root"
    root.mkdir()
    (tmp_path / "secret").write_bytes(b"s")
    (root / "a.txt").write_bytes(b"a")
    assert read_regular(str(root / "a.txt"), 10, inside=str(root)) == b"a"
    (root / "a.txt").unlink()
    (root / "a.txt").symlink_to(tmp_path / "secret")
    with pytest.raises(MovedOutside, match="was replaced by a link as it was opened"):
        read_regular(str(root / "a.txt"), 10, inside=str(root))
    assert read_regular(str(root / "a.txt"), 10) == b"s"  # without `inside`, links are followed
    (root / "b.txt").write_bytes(b"b")
    (root / "a.txt").unlink()
    (root / "a.txt").symlink_to(root / "b.txt")  # whatever it points to, even a file inside
    with pytest.raises(MovedOutside):
        read_regular(str(root / "a.txt"), 10, inside=str(root))
    with pytest.raises(FileNotFoundError):  # a file gone is gone, inside or not
        read_regular(str(root / "gone.txt"), 10, inside=str(root))
    (root / "loop").symlink_to(root / "loop")
    with pytest.raises(OSError, match="Too many levels of symbolic links") as caught:  # no `inside`: as it is
        read_regular(str(root / "loop"), 10)
    assert not isinstance(caught.value, MovedOutside)
    (root / "sub").symlink_to(tmp_path)  # a folder on the way swapped for a link outside
    with pytest.raises(MovedOutside):
        read_regular(str(root / "sub" / "secret"), 10, inside=str(root))


@posix_only("an open file removed, and a file in place of another")
@pytest.mark.parametrize("platform_name", [sys.platform, "darwin", "win32"])
def test_the_open_file_is_checked_to_be_the_one_inside(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, platform_name: str
) -> None:
    """By what the system says of the open file (Linux's /proc, macOS's F_GETPATH, simulated
    here with the real path), or else by the path resolved again naming the same file."""
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no fcntl on Windows")
    import fcntl

    root = tmp_path / "root"
    root.mkdir()
    (root / "a.txt").write_bytes(b"a")
    (tmp_path / "outside.txt").write_bytes(b"o")
    real_realpath = os.path.realpath
    if platform_name == "darwin":
        real_fcntl = fcntl.fcntl
        open_paths: dict[int, str] = {}
        real_open = os.open

        def opened(path: str, flags: int, *args: Any) -> int:
            fd = real_open(path, flags, *args)
            open_paths[fd] = real_realpath(path)
            return fd

        def get_path(fd: int, op: int, arg: Any = 0) -> Any:
            if op != -1:
                return real_fcntl(fd, op, arg)
            return os.fsencode(open_paths[fd]).ljust(len(arg), b"\0")

        monkeypatch.setattr(fcntl, "F_GETPATH", -1, raising=False)
        monkeypatch.setattr(fcntl, "fcntl", get_path)
        monkeypatch.setattr(os, "open", opened)
    monkeypatch.setattr(sys, "platform", platform_name)
    assert read_regular(str(root / "a.txt"), 10, inside=str(root)) == b"a"
    # The path, resolved again, names another file than the one open: only the fallback is fooled.
    outside = str(tmp_path / "outside.txt")
    monkeypatch.setattr(os.path, "realpath", lambda path: outside if path.endswith("a.txt") else real_realpath(path))
    if platform_name == "win32":
        with pytest.raises(MovedOutside):
            read_regular(str(root / "a.txt"), 10, inside=str(root))
    else:
        assert read_regular(str(root / "a.txt"), 10, inside=str(root)) == b"a"
    monkeypatch.setattr(os.path, "realpath", lambda path: str(tmp_path / "gone.txt"))
    if platform_name == "win32":
        with pytest.raises(MovedOutside):
            read_regular(str(root / "a.txt"), 10, inside=str(root))
    monkeypatch.setattr(os.path, "realpath", real_realpath)
    with pytest.raises(MovedOutside):  # a file outside, asked for as inside
        read_regular(str(tmp_path / "outside.txt"), 10, inside=str(root))
