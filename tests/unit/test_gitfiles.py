"""facts/gitfiles.py: the files git opens in a repository, found as git finds them and checked first."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path

import pytest

from codescout_mcp.facts.gitfiles import POINTER_LIMIT, BlockingFile, ceiling_folders, check_for_git, git_files_around
from tests.platforms import FIFOS, posix_only

# What git opens in a repository's own folder (`.git`, or a worktree's folder) and in the shared one.
OWN = ["HEAD", "config.worktree", "index"]
SHARED = [
    *("config", "packed-refs", "shallow", "info/attributes", "info/exclude", "info/sparse-checkout"),
    *("info/grafts", "objects/info/alternates", "objects/info/commit-graph"),
]


def expected(top: Path, own: Path, shared: Path) -> list[Path]:
    return [*(own / n for n in OWN), *(shared / n for n in SHARED), top / ".gitattributes", top / ".gitmodules"]


def test_a_plain_repository_names_every_file_git_opens_first(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    assert git_files_around(tmp_path) == expected(tmp_path, tmp_path / ".git", tmp_path / ".git")


def test_a_folder_inside_finds_the_repository_above_it(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    inner = tmp_path / "a" / "b"
    inner.mkdir(parents=True)
    assert git_files_around(inner) == expected(tmp_path, tmp_path / ".git", tmp_path / ".git")


def test_a_ceiling_stops_the_walk_above_the_folder_but_never_at_it(tmp_path: Path) -> None:
    (tmp_path / ".git").mkdir()
    inner = tmp_path / "a"
    inner.mkdir()
    assert git_files_around(inner, ceilings=(str(tmp_path),)) == []
    # git's ceilings stop the search for a parent; the folder named is looked at whatever they say.
    assert git_files_around(tmp_path, ceilings=(str(tmp_path),)) == expected(
        tmp_path, tmp_path / ".git", tmp_path / ".git"
    )
    assert git_files_around(inner, ceilings=(str(inner / "x"),)) != []


def test_no_repository_anywhere_names_nothing(tmp_path: Path) -> None:
    assert git_files_around(tmp_path, ceilings=(str(tmp_path.parent),)) == []


def test_a_worktree_names_its_own_files_and_the_shared_ones(tmp_path: Path) -> None:
    main = tmp_path / "main" / ".git"
    own = main / "worktrees" / "wt"
    own.mkdir(parents=True)
    (own / "commondir").write_text("../..\n", encoding="utf-8")
    checkout = tmp_path / "wt"
    checkout.mkdir()
    (checkout / ".git").write_text(f"gitdir: {own}\n", encoding="utf-8")
    found = git_files_around(checkout)
    assert found == expected(checkout, own, own / "../..")
    assert [os.path.normpath(p) for p in found[3:12]] == [str(main / n) for n in SHARED]


def test_a_relative_gitdir_is_read_from_the_folder_holding_the_file(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    (tmp_path / ".git").write_text("gitdir: real\n", encoding="utf-8")
    assert git_files_around(tmp_path) == expected(tmp_path, tmp_path / "real", tmp_path / "real")


def test_a_git_file_that_is_no_pointer_names_nothing(tmp_path: Path) -> None:
    (tmp_path / ".git").write_text("this is not a gitdir line\n", encoding="utf-8")
    assert git_files_around(tmp_path) == []


def test_a_pointer_is_read_up_to_its_limit_and_no_further(tmp_path: Path) -> None:
    (tmp_path / "real").mkdir()
    line = b"gitdir: real"
    (tmp_path / ".git").write_bytes(line + b" " * (POINTER_LIMIT - len(line)))
    assert git_files_around(tmp_path) == expected(tmp_path, tmp_path / "real", tmp_path / "real")
    (tmp_path / ".git").write_bytes(line + b" " * (POINTER_LIMIT + 1 - len(line)))
    assert git_files_around(tmp_path) == []
    assert POINTER_LIMIT == 64 * 1024


@posix_only(FIFOS)
def test_a_git_file_or_commondir_that_is_a_fifo_is_itself_what_blocks(tmp_path: Path) -> None:
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(tmp_path / ".git")
    assert git_files_around(tmp_path) == [tmp_path / ".git"]
    os.unlink(tmp_path / ".git")
    (tmp_path / ".git").mkdir()
    os.mkfifo(tmp_path / ".git" / "commondir")
    assert git_files_around(tmp_path) == [tmp_path / ".git" / "commondir"]


def test_ceilings_come_from_the_environment_unless_git_runs_isolated(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", os.pathsep.join(["/a/b/", "", "/c/./d"]))
    assert ceiling_folders(False) == (os.path.normpath("/a/b/"), os.path.normpath("/c/./d"))
    assert ceiling_folders(True) == ()
    monkeypatch.delenv("GIT_CEILING_DIRECTORIES")
    assert ceiling_folders(False) == ()  # none set: no ceiling at all


@posix_only(FIFOS)
def test_the_first_fifo_or_device_after_missing_files_is_named(tmp_path: Path) -> None:
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "plain").write_text("x", encoding="utf-8")
    with pytest.raises(BlockingFile) as raised:
        check_for_git([tmp_path / "absent", tmp_path / "plain", tmp_path / "fifo", "/dev/null"])
    assert str(raised.value) == (
        f"{tmp_path / 'fifo'} is a FIFO, not a regular file, and git would wait on it; the repository cannot be read"
    )
    with pytest.raises(BlockingFile) as raised:
        check_for_git([tmp_path / "absent", "/dev/null"], reader="ripgrep")
    assert str(raised.value) == "/dev/null is a device, not a regular file, and ripgrep would wait on it"
    check_for_git([tmp_path / "absent", tmp_path / "plain", tmp_path])  # a folder is git's to judge


@pytest.mark.parametrize("kind", [stat.S_IFIFO, stat.S_IFCHR, stat.S_IFBLK])
def test_each_kind_that_would_block_is_refused_and_no_other(monkeypatch: pytest.MonkeyPatch, kind: int) -> None:
    """A FIFO, a character device and a block device (as os.stat reports them, on any system)."""
    modes = {"blocking": kind | 0o600, "regular": stat.S_IFREG | 0o644, "folder": stat.S_IFDIR | 0o755}

    def fake_stat(path: object) -> os.stat_result:
        return os.stat_result((modes[str(path)], 0, 0, 1, 0, 0, 0, 0, 0, 0))

    monkeypatch.setattr("codescout_mcp.facts.gitfiles.os.stat", fake_stat)
    check_for_git(["regular", "folder"])
    with pytest.raises(BlockingFile, match=r"^blocking is a (FIFO|device), not a regular file"):
        check_for_git(["regular", "blocking"])


def test_pointers_that_are_not_utf8_are_read_with_replacements(tmp_path: Path) -> None:
    (tmp_path / ".git").write_bytes(b"gitdir: real\xff\n")
    own = tmp_path / "real\ufffd"
    assert git_files_around(tmp_path) == expected(tmp_path, own, own)
    (tmp_path / ".git").unlink()
    (tmp_path / ".git").mkdir()
    (tmp_path / ".git" / "commondir").write_bytes(b"shared\xfe\n")
    assert git_files_around(tmp_path)[3] == tmp_path / ".git" / "shared\ufffd" / "config"
