"""Paths on file systems that ignore letter case and Unicode normalisation, and folder aliases.

On macOS and Windows, `Src/a.py` is git's `src/a.py`, a macOS name in NFD is git's NFC one,
and a workspace typed `.../Project` is the folder `.../project`. Here they run on a real
case-insensitive, case-preserving file system (`tests/casefold_fs.py`, a FUSE mount on Linux;
the system's own volume on macOS and Windows), through the installed `codescout hits` and
`codescout-mcp --workspace`, as users run them. The answer names a file as git does, once.

Folder aliases need no folding: a bind mount or a symbolic link to the workspace reaches the
same files, and a path through one is inside it.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import time
import unicodedata
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import pytest

from tests.casefold_fs import folding_folder
from tests.gitrepo import Repo, env_for, hits_of, rg_exe, run, workspace_call

DAY = 86_400
OWNERS = "/src/ @src-team\n"
CAFE_NFC = unicodedata.normalize("NFC", "café.py")
CAFE_NFD = unicodedata.normalize("NFD", "café.py")


def iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


@dataclass
class Project:
    repo: Repo
    now: float  # what ages are counted from: --now for `codescout hits`; the server's clock is within a day

    @property
    def root(self) -> Path:
        return self.repo.root


def make_project(folder: Path, *extra: str) -> Project:
    """`project/`: src/a.py last committed 30 days ago, the rest 90; /src/ owned by @src-team;
    every file's modification time 3 days ago, so an age from the file time is told apart."""
    now = time.time()
    repo = Repo(folder / "project")
    names = ["src/a.py", "src/b.py", "docs/guide.md", *extra]
    repo.write(".github/CODEOWNERS", OWNERS)
    for name in names:
        repo.write(name, "needle\n")
    repo.commit(iso(now - 90.5 * DAY), ".github/CODEOWNERS", *names[1:])
    repo.commit(iso(now - 30.5 * DAY), "src/a.py")
    for name in names:
        os.utime(repo.root / name, (now - 3.5 * DAY,) * 2)
    return Project(repo, now)


@pytest.fixture
def folding(tmp_path: Path) -> Iterator[Path]:
    with folding_folder(tmp_path) as folder:
        yield folder


@pytest.fixture
def project(folding: Path) -> Project:
    return make_project(folding)


def hits(project: Project, lines: str, cwd: Path | None = None) -> dict[str, Any]:
    """`codescout hits` (ages counted from the project's moment) on ripgrep-style `path:count` lines."""
    return hits_of(cwd or project.root, lines.encode(), "--now", iso(project.now))


def ranked(result: dict[str, Any]) -> Any:
    assert not result.get("isError"), result
    return result["structuredContent"]


def tool_error(result: dict[str, Any]) -> str:
    assert result.get("isError") is True, result
    return str(result["content"][0]["text"])


# NTFS tells a name in NFC from the same name in NFD: on Windows they are two files, no pair to test.
folds_normalisation = pytest.mark.skipif(sys.platform == "win32", reason="NTFS keeps NFC and NFD names apart")

A_PY = {"path": "src/a.py", "matches": 1, "last_modified_days": 30, "owner": "@src-team"}
A_PY_RANKED = {"results": [{**A_PY, "score": 70, "rank": 1}], "counts": {"hits": 1, "returned": 1}}


# --- the file system itself -----------------------------------------------------------------------


@folds_normalisation
def test_the_mount_finds_every_spelling_of_a_name_and_keeps_the_one_it_was_made_with(folding: Path) -> None:
    (folding / "Src").mkdir()
    (folding / "Src" / "Mixed.TXT").write_text("needle\n", encoding="utf-8")
    (folding / "SRC" / CAFE_NFD).write_text("needle\n", encoding="utf-8")
    spellings = [folding / "src" / "mixed.txt", folding / "SRC" / "MIXED.txt", folding / "Src" / "Mixed.TXT"]
    identities = {(os.stat(path).st_dev, os.stat(path).st_ino) for path in spellings}
    assert len(identities) == 1
    assert os.lstat(folding / "sRc" / CAFE_NFC).st_ino == os.lstat(folding / "Src" / CAFE_NFD).st_ino
    assert sorted(os.listdir(folding / "src")) == sorted(["Mixed.TXT", CAFE_NFD])
    assert sorted(entry.name for entry in os.scandir(folding / "SRC")) == sorted(["Mixed.TXT", CAFE_NFD])
    assert os.path.realpath(folding / "src" / "mixed.txt") == str(folding / "src" / "mixed.txt")  # as typed
    with pytest.raises(FileExistsError):
        (folding / "SRC").mkdir()
    os.rename(folding / "src" / "mixed.txt", folding / "src" / "MIXED.TXT")  # a change of case only
    os.rename(folding / "src" / CAFE_NFD, folding / "src" / CAFE_NFC)  # of normalisation only
    assert sorted(os.listdir(folding / "Src")) == sorted(["MIXED.TXT", CAFE_NFC])
    rg = run([rg_exe(), "--count-matches", "needle"], folding)
    assert sorted(rg.stdout.decode().splitlines()) == sorted([f"Src/{CAFE_NFC}:1", "Src/MIXED.TXT:1"])


def test_git_works_on_the_mount(folding: Path) -> None:
    repo = Repo(folding / "Repo")
    assert repo.git("config", "core.ignorecase") == "true\n"  # git init probed the file system and saw it fold
    repo.write("Docs/Guide.md", "one\n")
    repo.commit("2026-01-01T00:00:00Z", "Docs/Guide.md")
    repo.write("docs/GUIDE.md", "two\n")  # the same file
    assert repo.git("status", "--porcelain") == " M Docs/Guide.md\n"
    repo.commit("2026-01-02T00:00:00Z", "Docs/Guide.md")
    assert repo.git("status", "--porcelain") == ""
    assert repo.git("log", "--format=%cs %s", "--name-only") == (
        "2026-01-02 change Docs/Guide.md\n\nDocs/Guide.md\n2026-01-01 change Docs/Guide.md\n\nDocs/Guide.md\n"
    )
    # git finds the repository from a folder typed in any case (and on Linux names it as typed).
    if not sys.platform.startswith("linux"):
        return
    inside = repo.git("-C", str(folding / "REPO" / "docs"), "rev-parse", "--show-prefix", "--show-toplevel")
    assert inside == f"docs/\n{folding}/REPO\n"


# --- item 7: a file named in another case or normalisation ------------------------------------------


def test_hits_a_path_in_another_case_gets_gits_age_and_owner_under_gits_spelling(project: Project) -> None:
    assert hits(project, "Src/a.py:1\n") == {"hits": [A_PY]}
    assert hits(project, "SRC/A.PY:1\n") == {"hits": [A_PY]}


def test_hits_one_file_given_in_two_spellings_is_one_hit_with_all_its_matches(project: Project) -> None:
    assert hits(project, "src/a.py:1\nSRC/A.PY:2\n") == {"hits": [{**A_PY, "matches": 3}]}
    assert hits(project, "Src/A.py:2\nsrc/b.py:1\nsrc/a.py:4\n") == {
        "hits": [{**A_PY, "matches": 6}, {**A_PY, "path": "src/b.py", "last_modified_days": 90}]
    }


def test_workspace_a_path_in_another_case_gets_gits_age_and_owner_under_gits_spelling(project: Project) -> None:
    result, _ = workspace_call(project.root, ["Src/a.py"])
    assert ranked(result) == A_PY_RANKED


@pytest.mark.parametrize(
    ("first", "second"),
    [
        ("src/a.py", "SRC/A.PY"),
        ("Src/A.py", "src/a.py"),
        pytest.param(f"src/{CAFE_NFC}", f"SRC/{CAFE_NFD}", marks=folds_normalisation),
    ],
    ids=["case", "case-first-not-gits", "normalisation"],
)
def test_workspace_one_file_in_two_spellings_is_an_error_naming_the_first(
    folding: Path, first: str, second: str
) -> None:
    project = make_project(folding, f"src/{CAFE_NFC}")
    result, _ = workspace_call(project.root, [first, "docs/guide.md", second])
    assert tool_error(result) == f'hits[2].path: "{second}" names the same file as hits[0] ("{first}")'


def respelled(folding: Path, index_form: str, disk_form: str) -> Project:
    """The project with `src/café.py` in git's index in `index_form` and on disk in `disk_form`
    (as when a checkout is copied between macOS HFS+, which stores NFD, and other systems)."""
    project = make_project(folding, f"src/{index_form}")
    os.rename(project.root / "src" / index_form, project.root / "src" / disk_form)
    assert os.listdir(project.root / "src").count(disk_form) == 1
    assert project.repo.git("ls-files", "-z", "src").split("\0").count(f"src/{index_form}") == 1
    return project


FORMS = [(CAFE_NFC, CAFE_NFD), (CAFE_NFD, CAFE_NFC)]
FORM_IDS = ["nfc-in-git-nfd-on-disk", "nfd-in-git-nfc-on-disk"]


@folds_normalisation
@pytest.mark.parametrize(("index_form", "disk_form"), FORMS, ids=FORM_IDS)
def test_hits_a_name_on_disk_in_another_normalisation_than_gits_is_gits_file(
    folding: Path, index_form: str, disk_form: str
) -> None:
    project = respelled(folding, index_form, disk_form)
    rg = run([rg_exe(), "--count-matches", "needle", "src"], project.root)
    assert sorted(rg.stdout.decode().splitlines()) == sorted([f"src/{disk_form}:1", "src/a.py:1", "src/b.py:1"])
    assert hits_of(project.root, rg.stdout, "--now", iso(project.now)) == {
        "hits": [
            A_PY,
            {**A_PY, "path": "src/b.py", "last_modified_days": 90},
            {**A_PY, "path": f"src/{index_form}", "last_modified_days": 90},
        ]
    }


@folds_normalisation
@pytest.mark.parametrize(("index_form", "disk_form"), FORMS, ids=FORM_IDS)
def test_workspace_a_name_in_another_normalisation_than_gits_is_gits_file(
    folding: Path, index_form: str, disk_form: str
) -> None:
    project = respelled(folding, index_form, disk_form)
    result, _ = workspace_call(project.root, [f"src/{disk_form}"])
    assert ranked(result) == {
        "results": [{**A_PY, "path": f"src/{index_form}", "last_modified_days": 90, "score": 10, "rank": 1}],
        "counts": {"hits": 1, "returned": 1},
    }


# --- item 3: the workspace folder typed in another case, or reached by another name -----------------


def test_a_workspace_typed_in_another_case_holds_paths_typed_in_any_case(project: Project, folding: Path) -> None:
    typed = folding / "Project"  # the folder on disk is "project"
    for path in ["src/a.py", f"{folding}/project/src/a.py", f"{folding}/PROJECT/src/a.py", f"{typed}/src/a.py"]:
        result, _ = workspace_call(typed, [path])
        assert ranked(result) == A_PY_RANKED, path


def test_hits_from_a_folder_typed_in_another_case_takes_absolute_paths_in_any_case(
    project: Project, folding: Path
) -> None:
    typed = folding / "Project"
    lines = f"{folding}/PROJECT/src/a.py:1\n{folding}/project/src/b.py:1\n"
    assert hits(project, lines, cwd=typed) == {"hits": [A_PY, {**A_PY, "path": "src/b.py", "last_modified_days": 90}]}


@pytest.mark.skipif(sys.platform == "win32", reason="the git that records its calls is a shell script")
def test_hits_reads_the_repository_once_however_its_folder_is_typed(
    project: Project, folding: Path, tmp_path: Path
) -> None:
    env, calls = git_recorder(tmp_path / "shim")
    lines = f"{folding}/PROJECT/src/a.py:1\n{folding}/project/src/b.py:1\nsrc/A.PY:1\n"
    found = hits_of(folding / "Project", lines.encode(), "--now", iso(project.now), env=env)
    assert found == {"hits": [{**A_PY, "matches": 2}, {**A_PY, "path": "src/b.py", "last_modified_days": 90}]}
    # Each spelling of the folder is asked once what it is; the repository is read once.
    # (Before each, its config is read as a plain file, from /proc, which no repository holds.)
    assert calls.read_text(encoding="utf-8").splitlines() == [
        "proc config",
        "Project rev-parse",
        "Project config",
        "proc config",
        "PROJECT rev-parse",
        "proc config",
        "project rev-parse",
        "Project ls-files",
        "Project status",
        "Project rev-parse",
        "Project log",
    ]


def git_recorder(folder: Path) -> tuple[dict[str, str], Path]:
    """An environment whose git writes each command it runs (after git's own options) to a file."""
    folder.mkdir()
    calls = folder / "calls"
    real = shutil.which("git")
    script = (
        "#!/bin/sh\n"
        'for a; do case "$skip$a" in 1*) skip= ;; -c|-C) skip=1 ;; -*) ;; *) break ;; esac; done\n'
        f'echo "${{PWD##*/}} $a" >> "{calls}"\n'
        f'exec "{real}" "$@"\n'
    )
    (folder / "git").write_text(script, encoding="utf-8")
    (folder / "git").chmod(0o755)
    env = env_for()
    env["PATH"] = f"{folder}{os.pathsep}{env['PATH']}"
    return env, calls


@contextlib.contextmanager
def bind_mounted(folder: Path, alias: Path) -> Iterator[Path]:
    """`folder` bind-mounted at `alias` (root on Linux): one folder, two names, two mounts."""
    alias.mkdir()
    subprocess.run(["mount", "--bind", str(folder), str(alias)], check=True, capture_output=True)
    try:
        yield alias
    finally:
        subprocess.run(["umount", str(alias)], check=True, capture_output=True)


def plain_project(tmp_path: Path) -> Project:
    project = make_project(tmp_path / "disk")
    project.repo.root = project.root.resolve()
    return project


@contextlib.contextmanager
def alias_of(kind: str, folder: Path, alias: Path) -> Iterator[Path]:
    if kind == "symlink":
        alias.symlink_to(folder, target_is_directory=True)
        yield alias
    else:
        with bind_mounted(folder, alias) as mounted:
            yield mounted


needs_linux = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="a bind mount is Linux's (as root)")


@pytest.mark.parametrize("kind", [pytest.param("bind-mount", marks=needs_linux), "symlink"])
def test_workspace_paths_through_an_alias_of_the_workspace_are_inside(kind: str, tmp_path: Path) -> None:
    project = plain_project(tmp_path)
    with alias_of(kind, project.root, tmp_path / "alias") as alias:
        result, _ = workspace_call(project.root, [f"{alias}/src/a.py"])
        assert ranked(result) == A_PY_RANKED
        result, _ = workspace_call(alias, [f"{project.root}/src/a.py"])
        assert ranked(result) == A_PY_RANKED


@pytest.mark.parametrize("kind", [pytest.param("bind-mount", marks=needs_linux), "symlink"])
def test_a_file_at_the_top_of_the_workspace_reached_through_an_alias_is_gits(kind: str, tmp_path: Path) -> None:
    """The alias is the workspace itself, not a folder in it: its files' names have no folder part.
    (Through a bind mount, such a file once got its file time, not git's age.)"""
    project = make_project(tmp_path / "disk", "top.py")
    project.repo.root = project.root.resolve()
    with alias_of(kind, project.root, tmp_path / "alias") as alias:
        result, _ = workspace_call(project.root, [f"{alias}/top.py"])
        (row,) = ranked(result)["results"]
        assert (row["path"], row["last_modified_days"], row["owner"]) == ("top.py", 90, None)
        top = {"path": "top.py", "matches": 1, "last_modified_days": 90}  # (no owner: none is named)
        assert hits(project, f"{alias}/top.py:1\n") == {"hits": [top]}


@pytest.mark.parametrize("kind", [pytest.param("bind-mount", marks=needs_linux), "symlink"])
def test_hits_paths_through_an_alias_of_the_repository_are_inside(kind: str, tmp_path: Path) -> None:
    project = plain_project(tmp_path)
    with alias_of(kind, project.root, tmp_path / "alias") as alias:
        assert hits(project, f"{alias}/src/a.py:1\n") == {"hits": [A_PY]}
        assert hits(project, f"{project.root}/src/a.py:1\n", cwd=alias) == {"hits": [A_PY]}
        both = f"{alias}/src/a.py:1\n{project.root}/src/a.py:2\n"  # one file, so one hit
        assert hits(project, both) == {"hits": [{**A_PY, "matches": 3}]}
