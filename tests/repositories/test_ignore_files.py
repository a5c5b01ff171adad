"""Every ignore file a search's ripgrep would read is looked at first, wherever it comes from.

An outside review found the check missed ignore files in submodules, in nested repositories and
untracked ones in subfolders (a submodule's `.ignore -> /dev/zero`, which `clone --recursive`
brings, made every search allocate 2 GiB and fail; an untracked FIFO stalled every search for
60 s), neither message naming the file; and that a bad file ripgrep never reads (in a folder
outside the workspace) refused every search. Here, through the installed server: a bad ignore
file below the search leaves its folder out and a note names it, one the search must read is an
error naming it, and one ripgrep would not read (outside the workspace, in a folder git ignores)
changes nothing.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp.facts.ignorefiles import MAX_IGNORE_BYTES
from codescout_mcp.tools.search import SearchTool
from codescout_mcp.tools.workspace import Workspace
from tests.gitrepo import Repo
from tests.platforms import posix_only
from tests.repositories.test_search import session

pytestmark = posix_only("links to /dev/zero and FIFOs")

DAY = "2026-01-01T00:00:00Z"


def search(workspace: Path, **arguments: Any) -> dict[str, Any]:
    (result,) = session(workspace, [{"pattern": "needle", "limit": 100, **arguments}])
    return result


def found(result: dict[str, Any]) -> list[str]:
    assert result["isError"] is False, result
    return sorted(entry["path"] for entry in result["structuredContent"]["results"])


def notes(result: dict[str, Any]) -> list[str]:
    return [block["text"] for block in result["content"][1:]]


def test_a_submodules_ignore_file_that_is_a_device_leaves_the_submodule_out(tmp_path: Path) -> None:
    origin = Repo(tmp_path / "origin")
    origin.write("b.py", "needle\n")
    (origin.root / ".ignore").symlink_to("/dev/zero")
    origin.commit(DAY, "b.py", ".ignore")
    main = Repo(tmp_path / "main")
    main.write("a.py", "needle\n")
    main.commit(DAY, "a.py")
    main.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(origin.root), "mod", date=DAY)
    main.commit(DAY, message="add the submodule")
    started = time.monotonic()
    result = search(main.root)
    assert time.monotonic() - started < 30
    assert found(result) == ["a.py"]
    assert notes(result) == [
        f"Note: not searched: mod/, because {main.root}/mod/.ignore is a device, which ripgrep would read without end"
    ]


def test_a_nested_repositorys_exclude_file_that_is_a_fifo_leaves_it_out(tmp_path: Path) -> None:
    main = Repo(tmp_path / "main")
    main.write("a.py", "needle\n")
    main.commit(DAY, "a.py")
    nested = Repo(main.root / "nested")
    nested.write("b.py", "needle\n")
    nested.commit(DAY, "b.py")
    exclude = nested.root / ".git" / "info" / "exclude"
    exclude.unlink(missing_ok=True)
    if sys.platform == "win32":  # POSIX-only; for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(exclude)
    result = search(main.root)
    assert found(result) == ["a.py"]
    assert notes(result) == [f"Note: not searched: nested/, because {exclude} is a FIFO, which ripgrep would wait on"]


def test_a_bad_ignore_file_outside_the_workspace_changes_nothing(tmp_path: Path) -> None:
    """The workspace is repo/frontend; repo/backend's tracked .gitignore links to /dev/zero."""
    repo = Repo(tmp_path / "repo")
    repo.write("frontend/a.py", "needle\n")
    repo.write("backend/b.py", "needle\n")
    (repo.root / "backend" / ".gitignore").symlink_to("/dev/zero")
    repo.commit(DAY, "frontend/a.py", "backend/b.py", "backend/.gitignore")
    result = search(repo.root / "frontend")
    assert found(result) == ["a.py"]
    assert notes(result) == []


def test_a_bad_ignore_file_in_a_folder_git_ignores_changes_nothing(tmp_path: Path) -> None:
    """ripgrep does not walk into node_modules/ (ignored): its bad files are not read, nor said."""
    repo = Repo(tmp_path / "repo")
    repo.write("a.py", "needle\n")
    repo.write(".gitignore", "node_modules/\n")
    repo.commit(DAY, "a.py", ".gitignore")
    repo.write("node_modules/pkg/b.js", "needle\n")
    (repo.root / "node_modules" / "pkg" / ".gitignore").symlink_to("/dev/zero")
    result = search(repo.root)
    assert found(result) == ["a.py"]
    assert notes(result) == []


@pytest.mark.parametrize(
    "why",
    ["an untracked folder", "the repository's own excludes file", "core.ignoreCase", "every file in it ignored"],
)
def test_a_bad_ignore_file_git_would_read_or_skip_ripgrep_reads_is_looked_at(tmp_path: Path, why: str) -> None:
    """Which folders git ignores is asked only once the ignore files git reads for that are
    checked (a FIFO .gitignore in an untracked folder held `git ls-files --ignored` for the
    search's whole 60 s), and is only a shortcut where ripgrep skips the folder too. It did not
    in three cases, and an untracked FIFO there stalled each search as long: an excludes file
    named in the repository's own config (ripgrep reads only the global one), `core.ignoreCase`
    (ripgrep's rules keep case), and a folder git calls ignored because every file in it is
    (ripgrep walks in, and reads its ignore files)."""
    repo = Repo(tmp_path / "repo")
    repo.write("a.py", "needle\n")
    folder, rule = {
        "an untracked folder": ("sub", ""),
        "the repository's own excludes file": ("sub", ""),
        "core.ignoreCase": ("Build", "build/\n"),
        "every file in it ignored": ("logs", "*.log\n.rgignore\n"),
    }[why]
    bad = ".gitignore" if why == "an untracked folder" else ".rgignore"
    repo.write(".gitignore", rule or "# nothing\n")
    repo.commit(DAY, "a.py", ".gitignore")
    if why == "the repository's own excludes file":
        (tmp_path / "excludes").write_text("sub/\n")
        repo.git("config", "core.excludesFile", str(tmp_path / "excludes"))
    elif why == "core.ignoreCase":
        repo.git("config", "core.ignoreCase", "true")
    repo.write(f"{folder}/b.log", "needle\n")
    if sys.platform == "win32":  # POSIX-only; for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(repo.root / folder / bad)
    started = time.monotonic()
    result = search(repo.root)
    assert time.monotonic() - started < 30
    assert found(result) == ["a.py"]
    assert notes(result) == [
        f"Note: not searched: {folder}/, because {repo.root}/{folder}/{bad} is a FIFO, which ripgrep would wait on"
    ]


def test_a_folder_a_dot_ignore_lets_back_in_is_looked_at_too(tmp_path: Path) -> None:
    """`!node_modules/` in a .ignore has ripgrep walk into what git ignores: its ignore files count."""
    repo = Repo(tmp_path / "repo")
    repo.write("a.py", "needle\n")
    repo.write(".gitignore", "node_modules/\n")
    repo.write(".ignore", "!node_modules/\n")
    repo.commit(DAY, "a.py", ".gitignore", ".ignore")
    repo.write("node_modules/pkg/b.js", "needle\n")
    repo.write("node_modules/other/c.js", "needle\n")
    (repo.root / "node_modules" / "pkg" / ".gitignore").symlink_to("/dev/zero")
    result = search(repo.root)
    assert found(result) == ["a.py", "node_modules/other/c.js"]
    assert notes(result) == [
        f"Note: not searched: node_modules/pkg/, because {repo.root}/node_modules/pkg/.gitignore is a device, "
        "which ripgrep would read without end"
    ]


def test_an_ignore_file_of_megabytes_is_not_read(tmp_path: Path) -> None:
    """ripgrep building the rules of a 6 MB .gitignore took 2 GiB; over 1 MiB, it is not read."""
    repo = Repo(tmp_path / "repo")
    repo.write("a.py", "needle\n")
    repo.write("sub/b.py", "needle\n")
    rules = "".join(f"folder{number}/*.log\n" for number in range(MAX_IGNORE_BYTES // 10))
    repo.write("sub/.gitignore", rules)
    repo.commit(DAY, "a.py", "sub/b.py", "sub/.gitignore")
    size = (repo.root / "sub" / ".gitignore").stat().st_size / (1 << 20)
    result = search(repo.root)
    assert found(result) == ["a.py"]
    assert notes(result) == [
        f"Note: not searched: sub/, because {repo.root}/sub/.gitignore is {size:.1f} MiB of ignore rules, more "
        "than the 1 MiB codescout lets ripgrep read"
    ]
    (repo.root / "sub" / ".gitignore").rename(repo.root / ".gitignore")
    refused = search(repo.root)
    assert refused["isError"] is True
    assert refused["content"][0]["text"] == (
        f"{repo.root}/.gitignore is {size:.1f} MiB of ignore rules, more than the 1 MiB codescout lets ripgrep "
        "read; every search here reads it, so none can run"
    )


def test_an_ignore_file_that_links_out_of_the_workspace_is_not_read(tmp_path: Path) -> None:
    """Its rules would be read from outside (and, by what they leave out, told back in counts)."""
    (tmp_path / "secret").write_text("a*\n", encoding="utf-8")
    repo = Repo(tmp_path / "repo")
    repo.write("a.py", "needle\n")
    repo.write("sub/b.py", "needle\n")
    (repo.root / "sub" / ".ignore").symlink_to(tmp_path / "secret")
    result = search(repo.root)
    assert found(result) == ["a.py"]
    assert notes(result) == [
        f"Note: not searched: sub/, because {repo.root}/sub/.ignore is a link to {tmp_path}/secret, outside the "
        "workspace"
    ]


def test_an_ignore_file_made_between_two_searches_is_seen_by_the_second(tmp_path: Path) -> None:
    """What was seen of a folder is kept while its stat is unchanged: a new entry changes it."""
    repo = Repo(tmp_path / "repo")
    repo.write("a.py", "needle\n")
    repo.write("sub/b.py", "needle\n")
    repo.commit(DAY, "a.py", "sub/b.py")
    long_ago = time.time() - 3600
    for folder in (repo.root, repo.root / "sub"):
        os.utime(folder, (long_ago, long_ago))
    tool = SearchTool(Workspace(str(repo.root)))
    first = tool.call({"pattern": "needle"})
    assert first is not None and [entry["path"] for entry in first["structuredContent"]["results"]] == [
        "a.py",
        "sub/b.py",
    ]
    if sys.platform == "win32":  # POSIX-only; for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(repo.root / "sub" / ".rgignore")
    second = tool.call({"pattern": "needle"})
    assert second is not None and [entry["path"] for entry in second["structuredContent"]["results"]] == ["a.py"]
    assert second["content"][1]["text"] == (
        f"Note: not searched: sub/, because {repo.root}/sub/.rgignore is a FIFO, which ripgrep would wait on"
    )


@pytest.mark.parametrize("name", [".gitignore", ".ignore", ".rgignore"])
def test_a_bad_ignore_file_in_the_searched_folder_is_an_error_naming_it(tmp_path: Path, name: str) -> None:
    repo = Repo(tmp_path / "repo")
    repo.write("sub/a.py", "needle\n")
    repo.commit(DAY, "sub/a.py")
    if sys.platform == "win32":  # POSIX-only; for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(repo.root / "sub" / name)
    result = search(repo.root, path="sub")
    assert result["isError"] is True
    assert result["content"][0]["text"] == (
        f"{repo.root}/sub/{name} is a FIFO, which ripgrep would wait on; every search here reads it, so none can run"
    )


def test_ignore_rules_ripgrep_cannot_build_in_its_memory_are_named(tmp_path: Path) -> None:
    """A few kilobytes of `**` rules take ripgrep gigabytes to build (a 32 KB file took 528 MiB, a
    64 KB one 2 GiB): it stops at its bound, and the error names the largest ignore file it reads."""
    import random

    rng = random.Random(1)
    letters = "abcdefghijklmnopqrstuvwxyz"
    rules = "".join(
        "".join(rng.choice(letters) for _ in range(rng.randint(5, 25)))
        + "/"
        + rng.choice(["*.log", "x*y", "**/z"])
        + "\n"
        for _ in range(3_000)
    )
    repo = Repo(tmp_path / "repo")
    repo.write("a.py", "needle\n")
    repo.write(".gitignore", rules)
    repo.commit(DAY, "a.py", ".gitignore")
    started = time.monotonic()
    result = search(repo.root)
    assert time.monotonic() - started < 60
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert text.startswith("ripgrep needed more than the 256 MiB of memory a search may use (memory allocation of ")
    size = (repo.root / ".gitignore").stat().st_size
    assert text.endswith(
        f"); narrow the pattern or glob, or look at {repo.root}/.gitignore, the largest ignore file it reads "
        f"({size:,} bytes of rules)"
    )


def test_ignore_rules_too_large_for_ripgrep_to_build_are_said_in_a_note(tmp_path: Path) -> None:
    """Half a megabyte of rules (24,000 lines) passes the size limit of ripgrep's glob matcher: it
    says "error building NFA" and searches on without them; the answer says so."""
    import random

    rng = random.Random(1)
    letters = "abcdefghijklmnopqrstuvwxyz"
    rules = []
    size = 0
    while size < 500_000:
        rule = "".join(rng.choice(letters) for _ in range(rng.randint(5, 25))) + "/"
        rule += rng.choice(["*.log", "build", "x*y", "**/z"]) + "\n"
        rules.append(rule)
        size += len(rule)
    repo = Repo(tmp_path / "repo")
    repo.write("a.py", "needle\n")
    repo.write(".gitignore", "".join(rules))
    repo.commit(DAY, "a.py", ".gitignore")
    result = search(repo.root)
    assert found(result) == ["a.py"]
    assert notes(result) == [
        "Note: ripgrep could not build the rules of an ignore file it reads (too many, or too large once "
        "compiled), and searched as if they were not there"
    ]


def test_git_is_asked_about_a_level_of_more_folders_than_a_pipe_holds(tmp_path: Path) -> None:
    """The names go to `git check-ignore` through a pipe (a container may have no folder to
    write a file in): 2,000 folders of 60-character names, about 128 KB, twice what a pipe holds."""
    repo = Repo(tmp_path / "repo")
    repo.write(".gitignore", "skip-*/\n")
    repo.write("a.py", "needle\n")
    repo.commit(DAY, "a.py", ".gitignore")
    for n in range(2_000):
        prefix = "skip" if n % 2 else "keep"
        repo.write(f"{prefix}-{n:04d}-{'x' * 50}/b.py", "needle\n" if n in (7, 8) else "other\n")
    tool = SearchTool(Workspace(str(repo.root)))
    result = tool.call({"pattern": "needle", "limit": 100})
    assert result is not None and result["isError"] is False, result
    assert sorted(entry["path"] for entry in result["structuredContent"]["results"]) == [
        "a.py",
        f"keep-0008-{'x' * 50}/b.py",
    ]
    assert tool.workspace.ignore_files._ignored == frozenset(
        str(repo.root / f"skip-{n:04d}-{'x' * 50}") for n in range(1, 2_000, 2)
    )
