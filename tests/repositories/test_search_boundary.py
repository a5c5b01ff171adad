"""The workspace folder is the boundary of a search, whatever happens to it while the server runs.

An outside review found that a workspace that became a symbolic link (a `git checkout` of a
commit where it is a tracked link) was then searched where the link points, and that a folder
swapped for a link while searches ran had ripgrep count files outside: match counts of chosen
patterns read a secret file outside back. Here, through a live server session and in process:
the folder the server was started on is searched or the call is a tool error, never a folder a
name leads to since; ripgrep itself cannot read outside it (Landlock, where Linux has it); and a
search whose folders changed while it ran is refused.
"""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp.facts.rg import Place, Search, count_matches, rg_program
from codescout_mcp.system import sandbox
from codescout_mcp.system.paths import pin
from codescout_mcp.tools.search import SearchTool
from codescout_mcp.tools.workspace import Workspace
from tests.gitrepo import Repo
from tests.platforms import linux_only, posix_only
from tests.stdio_session import LiveSession

pytestmark = posix_only("symbolic links made by git and by the test")

SECRET = "needle-secret-needle\n"


def text_of(result: dict[str, Any]) -> str:
    return "\n".join(block["text"] for block in result["content"])


@pytest.mark.parametrize("level", ["the workspace", "the folder above it"])
def test_a_workspace_that_becomes_a_link_is_never_searched_where_it_points(tmp_path: Path, level: str) -> None:
    """`--workspace repo/sub/inner` (or `repo/sub`); a checkout then makes the folder (or the one
    above it) a tracked link to a folder beside the repository, holding a secret."""
    outside = tmp_path / "outside"
    (outside / "inner").mkdir(parents=True)
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    (outside / "inner" / "secret.txt").write_text(SECRET, encoding="utf-8")
    repo = Repo(tmp_path / "repo")
    repo.write("sub/inner/a.py", "needle\n")
    repo.commit("2026-01-01T00:00:00Z", "sub/inner/a.py")
    repo.git("checkout", "-q", "-b", "linked")
    repo.git("rm", "-q", "-r", "sub")
    (repo.root / "sub").symlink_to(os.path.relpath(outside, repo.root))
    repo.commit("2026-01-02T00:00:00Z", "sub")
    repo.git("checkout", "-q", "main")
    workspace = repo.root / "sub" / "inner" if level == "the folder above it" else repo.root / "sub"
    session = LiveSession("--workspace", str(workspace))
    try:
        before = session.call("search_workspace", {"pattern": "needle"})
        assert before["isError"] is False and before["structuredContent"]["results"], before
        repo.git("checkout", "-q", "linked")  # `sub` is a link to ../outside now
        assert (repo.root / "sub").is_symlink()
        searched = session.call("search_workspace", {"pattern": "needle"})
        ranked = session.call("rank_workspace_hits", {"hits": [{"path": "secret.txt", "matches": 1}]})
        for result in (searched, ranked):
            assert result["isError"] is True, result
            assert text_of(result) == (
                f"the workspace {workspace} cannot be read: {repo.root / 'sub'} is a symbolic link now, not the "
                "folder the server was started on; to use where it leads, start the server on that folder"
            )
        repo.git("checkout", "-q", "main")  # the folder is back (a new one, made at the same place)
        after = session.call("search_workspace", {"pattern": "needle"})
        assert after["isError"] is False
        assert after["structuredContent"]["results"] == before["structuredContent"]["results"]
    finally:
        session.close()


@linux_only("Landlock")
def test_a_confined_ripgrep_cannot_read_outside_the_workspace_even_through_a_link(tmp_path: Path) -> None:
    """Given a path through a link that leads out (as a folder swapped after the check would be),
    a confined ripgrep is refused every read outside: nothing there is counted. Unconfined, it would."""
    if not sandbox.abi_version():
        pytest.fail("this Linux has no Landlock: the search falls back to checking its folders after the run")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    workspace = tmp_path / "workspace"
    (workspace / "sub").mkdir(parents=True)
    (workspace / "sub" / "a.txt").write_text("needle\n", encoding="utf-8")
    (workspace / "out").symlink_to(outside)
    pinned = pin(str(workspace))
    try:
        assert pinned.fd is not None
        for confined in (False, True):
            confinement = (
                sandbox.confine(read_beneath=[pinned.fd], read_files=[], run=[rg_program()]) if confined else None
            )
            place = Place(f"/proc/self/fd/{pinned.fd}", "out", confinement=confinement)
            counted = count_matches(Search("needle"), place, seconds=30)
            assert counted.counts == ({} if confined else {"out/secret.txt": 2}), confined
            if confinement is not None:
                confinement.close()
    finally:
        pinned.close()


def test_a_search_whose_folder_changed_while_it_ran_is_refused(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The folder searched is swapped for a link while ripgrep runs (here: just as it ends), and
    back is not needed: the folders on the way are looked at again after, and differ."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "secret.txt").write_text(SECRET, encoding="utf-8")
    repo = Repo(tmp_path / "repo")
    repo.write("sub/a.py", "needle\n")
    repo.commit("2026-01-01T00:00:00Z", "sub/a.py")
    tool = SearchTool(Workspace(str(repo.root)))
    real = count_matches

    def swapping(search: Search, place: Place, *, seconds: float) -> Any:
        counted = real(search, place, seconds=seconds)
        os.rename(repo.root / "sub", tmp_path / "moved")
        (repo.root / "sub").symlink_to(outside)
        return counted

    monkeypatch.setattr("codescout_mcp.tools.search.count_matches", swapping)
    result = tool.call({"pattern": "needle", "path": "sub"})
    assert result is not None and result["isError"] is True
    assert text_of(result) == (
        f"{repo.root / 'sub'} changed while it was searched (a folder on the way was moved, or replaced by a "
        "link); nothing is answered from it: try again"
    )


@linux_only("Landlock")
def test_searches_while_a_folder_is_swapped_with_a_link_never_count_outside(tmp_path: Path) -> None:
    """A thread swaps `sub` with a link to a folder outside and back, as fast as it can, while
    searches of the whole workspace and of `path: sub` run: no answer names or counts a file
    outside, and every answer is a result or a tool error (never an internal error). (Where
    Landlock is missing, a swap made and undone while ripgrep walks is not seen: docs/platforms.md.)"""
    if not sandbox.abi_version():
        pytest.fail("this Linux has no Landlock: the search falls back to checking its folders after the run")
    outside = tmp_path / "outside"
    outside.mkdir()
    for number in range(20):
        (outside / f"secret{number}.txt").write_text(SECRET, encoding="utf-8")
    repo = Repo(tmp_path / "repo")
    repo.write("sub/a.py", "needle\n")
    repo.write("b.py", "needle\n")
    repo.commit("2026-01-01T00:00:00Z", "sub/a.py", "b.py")
    tool = SearchTool(Workspace(str(repo.root)))
    stop = threading.Event()

    def swap() -> None:
        real, link, spare = repo.root / "sub", repo.root / "sub-link", tmp_path / "sub-real"
        link.symlink_to(outside)
        while not stop.is_set():
            os.rename(real, spare)
            os.rename(link, real)  # `sub` is the link now
            os.rename(real, link)
            os.rename(spare, real)  # and the folder again

    swapper = threading.Thread(target=swap, daemon=True)
    swapper.start()
    answers: list[dict[str, Any]] = []
    try:
        deadline = time.monotonic() + 20
        while len(answers) < 60 and time.monotonic() < deadline:
            for arguments in ({"pattern": "needle"}, {"pattern": "needle", "path": "sub"}):
                result = tool.call(arguments)
                assert result is not None
                answers.append(result)
    finally:
        stop.set()
        swapper.join(timeout=10)
    assert answers
    for result in answers:
        text = text_of(result)
        assert "internal error" not in text, text
        assert "secret" not in text, text
        if not result["isError"]:
            # Inside, at most two files can match and three be searched (sub/a.py, b.py, .gitignore-free).
            assert result["structuredContent"]["search"]["files_searched"] <= 2, result
