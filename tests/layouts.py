"""Checkout layouts met in the wild, made from scratch for the tests.

* a superproject with a submodule (each with its own history and CODEOWNERS), a repository
  nested inside without being a submodule, and a sibling repository beside it;
* a checkout that belongs to another user (chown when the suite runs as root; otherwise a
  git on PATH that believes so, through git's own GIT_TEST_ASSUME_DIFFERENT_OWNER);
* a shallow clone whose history ends at several boundaries (a merge's two sides);
* a hostile global git config: every setting that shapes what git prints, set the wrong way.

Each file's true age comes from plain git asked about that one file inside the repository
that holds it (`truth`), an oracle independent of codescout.
"""

from __future__ import annotations

import os
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.gitrepo import NOW_SECONDS, Repo, env_for

OTHER_UID = 12345


def git_age_days(repo: Path, name: str, now: float = NOW_SECONDS) -> int:
    """Whole days since `name` last changed on `repo`'s first-parent line, as plain git says."""
    out = subprocess.run(
        ["git", "-c", "log.showRoot=true", "log", "-1", "--first-parent", "--format=%ct", "--", name],
        cwd=repo,
        env=env_for(),
        capture_output=True,
        check=True,
        text=True,
    ).stdout.strip()
    return int((now - int(out)) // 86_400)


def long_history(root: Path, commits: int, *, start: int, step: int = 3600) -> None:
    """A repository whose `main` has `commits` commits, each changing one of many files (fast-import);
    `history/first.txt` is only in the first.

    Its `git log --name-only` is far longer than a pipe holds, so a walk that stops early
    leaves git blocked on its output, and a walk that runs to the end can be seen to.
    """
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], env=env_for(), check=True)
    chunks = []
    for n in range(commits):
        message = f"commit {n}".encode()
        chunks.append(
            f"commit refs/heads/main\ncommitter T <t@example.com> {start + n * step} +0000\n".encode()
            + b"data %d\n%s\n" % (len(message), message)
            + f"M 100644 inline history/a-rather-long-folder-name/file-number-{n % 500:04d}.txt\n".encode()
            + b"data %d\n%s\n" % (len(message), message)
            + (b"M 100644 inline history/first.txt\ndata 6\nfirst\n" if n == 0 else b"")
        )
    stream = b"".join(chunks)
    subprocess.run(["git", "-C", str(root), "fast-import", "--quiet"], input=stream, env=env_for(), check=True)
    subprocess.run(["git", "-C", str(root), "reset", "-q", "--hard", "main"], env=env_for(), check=True)


def walk_recorder(folder: Path, marks: Path) -> dict[str, str]:
    """An environment whose `git` notes in `marks` each `git log` that ran to its end."""
    real = shutil.which("git")
    assert real is not None
    folder.mkdir(parents=True, exist_ok=True)
    script = (
        "#!/bin/sh\n"
        f'case " $* " in *" log "*) "{real}" "$@"; status=$?; echo finished >> "{marks}"; exit $status;; esac\n'
        f'exec "{real}" "$@"\n'
    )
    (folder / "git").write_text(script, encoding="utf-8")
    (folder / "git").chmod(0o755)
    env = env_for()
    env["PATH"] = f"{folder}{os.pathsep}{env['PATH']}"
    return env


@dataclass
class Superproject:
    """A superproject with a submodule at `lib/`, a nested repository, and a sibling beside it."""

    top: Path  # holds `project/` and `sibling/`
    project: Repo
    lib: Repo  # the submodule, as checked out inside the project
    nested: Repo  # a repository inside the project's folder that is not a submodule
    sibling: Repo


def make_superproject(tmp: Path) -> Superproject:
    """The layout above, each repository with its own dates and owners."""
    upstream = Repo(tmp / "upstream-lib")
    upstream.write("core.c", "needle\n")
    upstream.write("util/helper.c", "needle\n")
    upstream.write("CODEOWNERS", "* @lib-team\n/util/ @lib-util\n")
    upstream.commit("2024-05-01T12:00:00Z", "core.c", "util/helper.c", "CODEOWNERS")
    upstream.write("core.c", "needle\nneedle\n")
    upstream.commit("2025-11-15T12:00:00Z", "core.c")

    project = Repo(tmp / "top" / "project")
    project.write("app.py", "needle\n")
    project.write("CODEOWNERS", "* @app-team\n/lib/ @should-not-own-lib\n")
    project.commit("2025-01-10T12:00:00Z", "app.py", "CODEOWNERS")
    project.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(upstream.root), "lib")
    project.commit("2026-02-20T12:00:00Z", message="add lib")
    lib = Repo(project.root / "lib", init=False)

    nested = Repo(project.root / "vendor" / "nested")
    nested.write("nested.c", "needle\n")
    nested.commit("2023-03-03T12:00:00Z", "nested.c")
    with open(project.root / ".git" / "info" / "exclude", "a", encoding="utf-8") as exclude:
        exclude.write("vendor/\n")

    sibling = Repo(tmp / "top" / "sibling")
    sibling.write("other.py", "needle\n")
    sibling.write(".github/CODEOWNERS", "* @sibling-team\n")
    sibling.commit("2025-08-08T12:00:00Z", "other.py", ".github/CODEOWNERS")
    return Superproject(tmp / "top", project, lib, nested, sibling)


def with_nested(folder: Path, outer_date: str, inner_date: str) -> tuple[Repo, Repo]:
    """A repository at `folder` holding a.txt, and one inside it at vendor/lib holding b.txt (not
    a submodule), each file committed at its date."""
    outer = Repo(folder)
    outer.write("a.txt", "x\n")
    outer.commit(outer_date, "a.txt")
    inner = Repo(folder / "vendor" / "lib")
    inner.write("b.txt", "x\n")
    inner.commit(inner_date, "b.txt")
    return outer, inner


def owned_by_another_user(root: Path, shim_folder: Path) -> dict[str, str]:
    """Make `root` another user's checkout, as git judges it; the environment to run under.

    As root the files are handed to another uid (git then refuses them, as it would a bind
    mount from another user). Otherwise a `git` first on PATH sets git's own test switch
    that makes it believe the same.
    """
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        subprocess.run(["chown", "-R", f"{OTHER_UID}:{OTHER_UID}", str(root)], check=True)
        return env_for()
    real = shutil.which("git")
    assert real is not None
    shim_folder.mkdir(parents=True, exist_ok=True)
    shim = shim_folder / "git"
    shim.write_text(f'#!/bin/sh\nGIT_TEST_ASSUME_DIFFERENT_OWNER=1 exec "{real}" "$@"\n', encoding="utf-8")
    shim.chmod(0o755)
    env = env_for()
    env["PATH"] = f"{shim_folder}{os.pathsep}{env['PATH']}"
    return env


def make_shallow_with_two_boundaries(tmp: Path) -> tuple[Repo, Path]:
    """A history with a merge, and a depth-3 clone of it whose `shallow` names two commits.

    First-parent line: root (2020) - main1 (2025-06-01) - merge (2026-02-10) with the side
    branch's side1 (2025-12-24). The clone keeps merge, main1 and side1, whose parents are
    cut: main1 is the boundary on the first-parent line, side1 the newer one beside it.
    """
    r = Repo(tmp / "deep")
    r.write("ancient.txt", "1\n")
    r.write("main.txt", "1\n")
    r.write("side.txt", "1\n")
    r.commit("2020-01-01T00:00:00Z", "ancient.txt", "main.txt", "side.txt")
    r.git("branch", "side")
    r.write("main.txt", "2\n")
    r.commit("2025-06-01T00:00:00Z", "main.txt")
    r.git("checkout", "-q", "side")
    r.write("side.txt", "2\n")
    r.commit("2025-12-24T00:00:00Z", "side.txt")
    r.git("checkout", "-q", "main")
    r.git("merge", "-q", "--no-ff", "-m", "merge side", "side", date="2026-02-10T00:00:00Z")
    clone = tmp / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{r.root}", str(clone)], env=env_for(), check=True)
    return r, clone


# Settings that change what git prints or walks, each set the way that would break codescout
# if it were read. (core.excludesFile and friends are here too: what is tracked must not move.)
HOSTILE_SETTINGS = {
    "log.showRoot": "false",
    "log.follow": "true",
    "log.decorate": "full",
    "log.abbrevCommit": "true",
    "log.date": "relative",
    "log.showSignature": "true",
    "log.mailmap": "true",
    "log.diffMerges": "separate",
    "format.pretty": "oneline",
    "diff.relative": "true",
    "diff.renames": "copies",
    "diff.noprefix": "true",
    "diff.mnemonicPrefix": "true",
    "diff.ignoreSubmodules": "none",
    "diff.external": "false",
    "color.ui": "always",
    "color.diff": "always",
    "color.status": "always",
    "core.quotePath": "true",
    "core.abbrev": "4",
    "core.pager": "cat",
    "core.ignoreCase": "true",
    "status.relativePaths": "true",
    "status.short": "true",
    "status.branch": "true",
    "status.showStash": "true",
    "status.showUntrackedFiles": "no",
    "status.submoduleSummary": "true",
    "status.renames": "copies",
    "submodule.recurse": "true",
    "grep.fullName": "false",
}


def write_hostile_config(path: Path, excludes: Path) -> Path:
    """A git config file with every setting in HOSTILE_SETTINGS, and an excludes file hiding *.py."""
    excludes.write_text("*.py\n*.md\n", encoding="utf-8")
    lines = []
    for key, value in {**HOSTILE_SETTINGS, "core.excludesFile": str(excludes)}.items():
        section, _, name = key.rpartition(".")
        lines.append(f"[{section}]\n\t{name} = {value}\n")
    path.write_text("".join(lines), encoding="utf-8")
    return path
