"""What a search saw of the workspace's folders is kept in the cache folder for the next process.

Before each search every folder ripgrep would walk into is listed, to find the ignore files it
would read (tests/repositories/test_ignore_files.py). On rails that is 1,107 folders: about
60 ms, paid again by every `codescout search`. Each folder's listing is now kept in the user's
cache folder (`folders/`) with the folder's stat, and a new process lists again only the
folders whose stat changed; git's list of ignored folders is kept with the stat of every ignore
file, and asked again when one changed. Here each `Workspace` plays a new process, and its
answers are held to those of a workspace with no cache at all.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp.facts import cache, ignorefiles
from codescout_mcp.facts.cache import FolderCache
from codescout_mcp.tools import workspace
from codescout_mcp.tools.search import SearchTool
from codescout_mcp.tools.workspace import Workspace
from tests.gitrepo import Repo, env_for
from tests.helpers import installed
from tests.platforms import posix_only

pytestmark = posix_only("FIFOs, and folder modes")

DAY = "2026-01-01T00:00:00Z"
SLACK_NS = 100_000_000
WAITS = "which ripgrep would wait on"


@pytest.fixture(autouse=True)
def short_slack(monkeypatch: pytest.MonkeyPatch) -> None:
    """A folder changed less than SLACK_NS before it is listed is listed again next time: 100 ms here."""
    monkeypatch.setattr(ignorefiles, "SLACK_NS", SLACK_NS)


def repository(root: Path) -> Repo:
    """A repository of 3 folders with a match each, a .gitignore leaving `build/` out, all older
    than the slack within which a folder's listing is not kept."""
    repo = Repo(root)
    for name in ("a.py", "src/b.py", "src/deep/c.py"):
        repo.write(name, "needle\n")
    repo.write(".gitignore", "build/\n")
    repo.commit(DAY, "a.py", "src/b.py", "src/deep/c.py", ".gitignore")
    repo.write("build/d.py", "needle\n")
    time.sleep(SLACK_NS * 1.5 / 1e9)
    return repo


def fifo(path: Path) -> None:
    if sys.platform == "win32":  # POSIX-only; for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(path)


class Counted:
    """How many folders the vetting listed, and how often git was asked which it ignores."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.listed = 0
        self.asked = 0
        scandir, ignored = os.scandir, ignorefiles._ignored_among

        def counted_scandir(path: Any) -> Any:
            self.listed += sys._getframe(1).f_code.co_filename == ignorefiles.__file__
            return scandir(path)

        def counted_ignored(repository: Any, folders: list[str], *rest: Any) -> set[str]:
            self.asked += bool(folders)
            return ignored(repository, folders, *rest)

        monkeypatch.setattr(os, "scandir", counted_scandir)
        monkeypatch.setattr(ignorefiles, "_ignored_among", counted_ignored)


def answer(root: Path, kept: Path | None) -> tuple[list[str], list[str]]:
    """The paths a search for `needle` finds and its notes, from a new Workspace (a new process)
    whose cache folder is `kept` (None: no cache)."""
    tool = SearchTool(Workspace(str(root)))
    tool.workspace.ignore_files._cache = (lambda: FolderCache.for_user(kept)) if kept is not None else None
    result = tool.call({"pattern": "needle", "limit": 100})
    assert result is not None and result["isError"] is False, result
    return (
        sorted(entry["path"] for entry in result["structuredContent"]["results"]),
        [block["text"] for block in result["content"][1:]],
    )


def test_a_new_process_lists_no_folder_that_did_not_change(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    repo = repository(tmp_path / "repo")
    kept = tmp_path / "cache"
    counted = Counted(monkeypatch)
    assert answer(repo.root, kept) == (["a.py", "src/b.py", "src/deep/c.py"], [])
    assert (counted.listed, counted.asked) == (3, 2)  # (git asked of a level at a time: 2 with folders)
    assert len(list((kept / "folders").iterdir())) == 1
    assert answer(repo.root, kept) == (["a.py", "src/b.py", "src/deep/c.py"], [])
    assert (counted.listed, counted.asked) == (3, 2)  # nothing listed, git not asked
    assert answer(repo.root, None) == (["a.py", "src/b.py", "src/deep/c.py"], [])
    assert (counted.listed, counted.asked) == (6, 4)  # (the control: no cache lists all again)


def test_a_bad_ignore_file_made_after_the_cache_was_written_is_seen(tmp_path: Path) -> None:
    """The folder that gained a FIFO changed its stat, so it is listed again; the others are not."""
    repo = repository(tmp_path / "repo")
    kept = tmp_path / "cache"
    answer(repo.root, kept)
    fifo(repo.root / "src" / "deep" / ".rgignore")
    expected = (
        ["a.py", "src/b.py"],
        [f"Note: not searched: src/deep/, because {repo.root}/src/deep/.rgignore is a FIFO, {WAITS}"],
    )
    assert answer(repo.root, kept) == expected
    assert answer(repo.root, None) == expected


def test_an_ignore_file_edited_in_place_has_git_asked_again(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """An ignore file rewritten keeps its folder's stat; its own stat changed, so git is asked
    again which folders it ignores: build/ is searched once the rule is gone."""
    repo = repository(tmp_path / "repo")
    kept = tmp_path / "cache"
    answer(repo.root, kept)
    counted = Counted(monkeypatch)
    before = os.stat(repo.root)
    with open(repo.root / ".gitignore", "r+b") as gitignore:  # (the same inode, the folder untouched)
        gitignore.write(b"other/")
    assert os.stat(repo.root).st_mtime_ns == before.st_mtime_ns
    expected: tuple[list[str], list[str]] = (["a.py", "build/d.py", "src/b.py", "src/deep/c.py"], [])
    assert answer(repo.root, kept) == expected
    assert counted.asked == 2
    assert answer(repo.root, None) == expected


@pytest.mark.parametrize("damage", ["truncated", "a byte changed", "another workspace's", "not JSON inside"])
def test_a_damaged_cache_file_is_not_used(tmp_path: Path, damage: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file that does not read whole, or was made for another workspace, is left unused: every
    folder is listed again, git is asked again, and the answer is the one with no cache (the
    file taken as it is, only the folder the FIFO changed would be listed, and git not asked)."""
    repo = repository(tmp_path / "repo")
    kept = tmp_path / "cache"
    answer(repo.root, kept)
    (path,) = (kept / "folders").iterdir()
    data = path.read_bytes()
    if damage == "truncated":
        data = data[: len(data) // 2]
    elif damage == "a byte changed":
        index = data.index(b'/build"') + 1  # (git's ignored folder: without the checksum, build/ is searched)
        data = data[:index] + b"x" + data[index + 1 :]
    elif damage == "another workspace's":
        other = repository(tmp_path / "other")
        answer(other.root, kept)
        data = FolderCache(kept / "folders").path_for(str(other.root)).read_bytes()
    else:
        body = b"[1, 2"
        header = {"root": str(repo.root), "size": len(body)}
        header["sha256"] = cache._checksum(header, body)
        data = cache.FOLDERS_MAGIC + json.dumps(header).encode() + b"\n" + body
    path.write_bytes(data)
    # A FIFO made meanwhile in a folder whose listing the damaged file would hold as empty.
    fifo(repo.root / "src" / ".ignore")
    counted = Counted(monkeypatch)
    expected = (
        ["a.py"],
        [f"Note: not searched: src/, because {repo.root}/src/.ignore is a FIFO, {WAITS}"],
    )
    assert answer(repo.root, kept) == expected
    assert (counted.listed, counted.asked) == (2, 1)  # the root and src/ (left out, with src/deep/); git asked
    assert answer(repo.root, None) == expected


def test_listings_that_do_not_fit_their_form_are_not_taken(tmp_path: Path) -> None:
    files = ignorefiles.IgnoreFiles(str(tmp_path))
    good: dict[str, Any] = {
        "listings": {str(tmp_path): [1, 2, 3, 4, False, [], ["a"]]},
        "ignored": [],
        "ignored_key": None,
    }
    bad: object
    for bad in (
        {**good, "listings": {str(tmp_path): [1, 2, 3, "4", False, [], []]}},
        {**good, "listings": {str(tmp_path): [1, 2, 3, 4, 0, [], []]}},
        {**good, "listings": {str(tmp_path): [1, 2, 3, 4, False, [7], []]}},
        {**good, "listings": {str(tmp_path): [1, 2, 3, 4, False, []]}},
        {**good, "ignored": [None]},
        {"listings": []},
        [],
    ):
        files._restore(bad)
        assert files._listings == {}, bad
    files._restore(good)
    assert list(files._listings) == [str(tmp_path)]


def test_the_command_keeps_the_folders_and_no_cache_keeps_none(tmp_path: Path) -> None:
    repo = repository(tmp_path / "repo")
    kept = tmp_path / "cache"
    for extra in (["--no-cache"], []):
        done = subprocess.run(
            [installed("codescout"), "search", "needle", "--workspace", str(repo.root), *extra],
            capture_output=True,
            env=env_for(CODESCOUT_CACHE_DIR=str(kept)),
            timeout=60,
            check=False,
        )
        assert done.returncode == 0, done.stderr
        assert [entry["path"] for entry in json.loads(done.stdout)["results"]] == ["a.py", "src/b.py", "src/deep/c.py"]
        files = sorted(path.name for path in (kept / "folders").iterdir()) if (kept / "folders").exists() else []
        assert len(files) == (0 if extra else 1)
        if not extra:
            assert oct(os.stat(kept / "folders" / files[0]).st_mode & 0o777) == "0o600"


def test_a_cache_folder_others_can_write_is_not_used(tmp_path: Path) -> None:
    kept = tmp_path / "cache"
    kept.mkdir()
    os.chmod(kept, 0o777)
    assert FolderCache.for_user(kept) is None
    os.chmod(kept, 0o700)
    (kept / "folders").symlink_to(tmp_path)
    assert FolderCache.for_user(kept) is None
    assert cache.user_folder_cache is not None and workspace._folder_cache is not None
