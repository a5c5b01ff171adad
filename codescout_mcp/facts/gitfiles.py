"""The files git opens in a repository it reads, checked before it opens them.

git opens its config, its index, HEAD and the ref it names, `.gitattributes` files and the
like as it would any file: a FIFO there makes it wait for a writer that never comes, a
device (/dev/zero) makes it read without end, and the call lasts until its deadline while
holding the workspace for every other caller. So codescout looks first (one `stat` each)
and refuses such a repository at once, naming the file.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterable
from pathlib import Path
from typing import Final

from codescout_mcp.core.text import shown
from codescout_mcp.system.paths import NotRegular, ancestors, describe_kind, read_regular

# The most a `.git` file or a `commondir` file can sensibly hold.
POINTER_LIMIT: Final = 64 * 1024


class RepositoryError(Exception):
    """A repository (or folder) that cannot be read as asked; the message is one line."""


class BlockingFile(RepositoryError):
    """A file git would open is a FIFO or a device: git would wait on it (or read it) for ever."""


def check_for_git(paths: Iterable[Path | str], *, reader: str = "git") -> None:
    """BlockingFile for the first of `paths` (following links) that is a FIFO or a device.

    git opens such a file as it would any other and waits for a writer that never comes (a
    FIFO), or reads without end (/dev/zero): the call would last until its deadline, holding
    the workspace for every other caller. Missing files and folders are git's to judge.
    """
    for path in paths:
        stat_for_git(path, reader=reader)


def stat_for_git(path: Path | str, *, reader: str = "git") -> os.stat_result | None:
    """The stat of `path` (following links), None when it cannot be read; BlockingFile (see
    `check_for_git`) when it is a FIFO or a device."""
    try:
        info = os.stat(path)
    except (OSError, ValueError):
        return None
    mode = info.st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        raise BlockingFile(
            f"{shown(str(path))} is {describe_kind(mode)}, not a regular file, and {reader} would wait on it"
            + ("; the repository cannot be read" if reader == "git" else "")
        )
    return info


def git_files_around(folder: Path, *, ceilings: tuple[str, ...] = ()) -> list[Path]:
    """The files git opens first in the repository around `folder`: its config, index, HEAD,
    attributes and the like, found as git finds the nearest `.git` (not above `ceilings`).

    A `.git` file (a worktree's, a submodule's) is read for where the repository is; one that
    is not a regular file is itself what would block.
    """
    for candidate in [str(folder), *ancestors(str(folder))]:
        if candidate != str(folder) and candidate in ceilings:
            return []
        dot_git = Path(candidate) / ".git"
        if not os.path.lexists(dot_git):
            continue
        git_dir = dot_git
        if not dot_git.is_dir():
            try:
                text = (read_regular(str(dot_git), POINTER_LIMIT) or b"").decode("utf-8", "replace")
            except NotRegular:
                return [dot_git]
            except OSError:
                return []
            if not text.startswith("gitdir: "):
                return []
            git_dir = Path(candidate) / text[len("gitdir: ") :].strip()
        common = git_dir
        try:
            shared = (read_regular(str(git_dir / "commondir"), POINTER_LIMIT) or b"").decode("utf-8", "replace").strip()
        except NotRegular:
            return [git_dir / "commondir"]
        except OSError:
            shared = ""
        if shared:
            common = git_dir / shared
        files = [git_dir / name for name in ("HEAD", "config.worktree", "index")]
        files += [common / name for name in ("config", "packed-refs", "shallow")]
        files += [
            common / "info" / "attributes",
            common / "info" / "exclude",
            common / "info" / "sparse-checkout",
            common / "info" / "grafts",
            common / "objects" / "info" / "alternates",
            common / "objects" / "info" / "commit-graph",
        ]
        return [*files, Path(candidate) / ".gitattributes", Path(candidate) / ".gitmodules"]
    return []


def ceiling_folders(isolated: bool) -> tuple[str, ...]:
    """GIT_CEILING_DIRECTORIES as git reads it, unless the Git runs isolated from GIT_* variables."""
    if isolated:
        return ()
    return tuple(
        os.path.normpath(entry) for entry in os.environ.get("GIT_CEILING_DIRECTORIES", "").split(os.pathsep) if entry
    )
