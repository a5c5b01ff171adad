"""Where each path one call names is, held to the workspace folder (`CallPaths`).

A path comes relative to the workspace, absolute, through `..` or through links; whatever the
spelling, the file it names must be inside the workspace folder as the system resolves it,
and a folder the call searches must be one (`place`). What one call works out (resolved
folders, their identities, each file's stat) is kept for that call only. Standard library only.
"""

from __future__ import annotations

import errno
import os
import stat
from pathlib import Path

from codescout_mcp.core.text import quoted, shown
from codescout_mcp.core.validate import InvalidArguments
from codescout_mcp.facts.checkout import Checkout
from codescout_mcp.system.paths import (
    describe_kind,
    located,
    real_path,
    relative_inside,
    same_folder_inside,
)
from codescout_mcp.system.platform import name_problem


class CallPaths:
    """What one call works out about the paths it was given: folders resolved, folder identities,
    each file's stat, and which file each earlier hit named."""

    def __init__(self, root: Path, checkout: Checkout) -> None:
        self.root = str(root)
        self.repository = checkout.main.base if checkout.main is not None else None
        self.folders: dict[str, str] = {self.root: self.root}
        self.plain_folders: dict[str, bool] = {}  # relative folder -> whether `_plain` takes it
        self.folder_stats: dict[str, os.stat_result] = {}  # the lstat of each folder `_plain` looked at
        # Where `_plain` applies: systems whose one separator is `/` (Windows takes the long way,
        # for its drives, `\\` and its other spellings).
        self.prefix = os.path.join(self.root, "") if os.sep == "/" and os.altsep is None else None
        self.identities: dict[str, tuple[int, int] | None] = {}
        self.stats: dict[str, os.stat_result] = {}
        self.seen: dict[tuple[int, int], tuple[int, str]] = {}

    def file(self, index: int, given: str) -> tuple[str, str]:
        """(resolved absolute path, path as answered) for one hit; InvalidArguments if it is unfit.

        The workspace folder is the one boundary, for every spelling of a path: relative to
        it, absolute, through `..` or links (the folders on the way are resolved as the system
        would, each once per call; the file keeps its own name, as git tracks a link by it,
        and a link must point inside too), or in another case where the file system ignores it.
        """
        problem = name_problem(given)
        if problem is not None:
            raise InvalidArguments(f"hits[{index}].path", f"{quoted(given)} {problem}")
        path = self._plain(given)
        if path is not None:  # the common case: a plain relative path, no link on its way
            answered_as = given
            try:
                status = os.lstat(path)
            except OSError:
                status = None
            if status is None or not stat.S_ISREG(status.st_mode):  # (each case worded there)
                status = self._regular_file(f"hits[{index}].path", given, path)
        else:
            where = f"hits[{index}].path"
            try:
                path = located(self.root, given, self.folders)
            except OSError:  # (a link on the way swapped for a folder as it was read)
                raise InvalidArguments(where, f"{quoted(given)} kept changing as it was looked at; try again") from None
            inside = self.inside(path)
            if inside is None:
                raise InvalidArguments(where, self._outside(path))
            answered_as = inside
            status = self._regular_file(where, given, path)
            if self._ends_as_folder(given):
                raise InvalidArguments(where, self._not_a_folder(given))
        identity = (status.st_dev, status.st_ino)
        if status.st_ino and identity in self.seen:
            first, first_given = self.seen[identity]
            raise InvalidArguments(
                f"hits[{index}].path", f"{quoted(given)} names the same file as hits[{first}] ({quoted(first_given)})"
            )
        self.seen[identity] = (index, given)
        self.stats[path] = status
        return path, answered_as

    def _plain(self, given: str) -> str | None:
        """The absolute path of `given` when it is plainly inside: relative, `/`-separated, with
        no empty, `.` or `..` part, and no link among its folders (each looked at once a call);
        else None, for `located` and the boundary checks to work out."""
        if self.prefix is None:
            return None
        folder, _, name = given.rpartition("/")
        if name in ("", ".", "..") or given.startswith("/"):
            return None
        if folder and not (self.plain_folders.get(folder) or self._plain_folder(self.prefix, folder)):
            return None
        return self.prefix + given

    def _plain_folder(self, prefix: str, folder: str) -> bool:
        """Whether each part of the relative `folder` is a name (no `.`, `..` or empty part) and
        no link; the nearest folder already known is found first, then each one below it once."""
        known = self.plain_folders
        pending: list[str] = []
        current = folder
        while current and current not in known:
            pending.append(current)
            current = current.rpartition("/")[0]
        plain = known.get(current, True)
        for below in reversed(pending):
            if plain:
                plain = below.rpartition("/")[2] not in ("", ".", "..")
            if plain:
                path = prefix + below
                try:
                    status = os.lstat(path)
                except (OSError, ValueError):  # (the file's own lstat will say what is wrong)
                    pass
                else:
                    plain = not stat.S_ISLNK(status.st_mode)
                    self.folder_stats[path] = status
            known[below] = plain
        return known[folder]

    def place(self, given: str, where: str) -> str:
        """A folder or file to search, as `given` (relative to the workspace, or absolute inside
        it), resolved (links too: ripgrep is given the real place) and relative to the workspace;
        InvalidArguments naming `where` when it is not a folder or a regular file inside, or is a
        file written as a folder (`a.py/`, which ripgrep could not open)."""
        problem = name_problem(given)
        if problem is not None:
            raise InvalidArguments(where, f"{quoted(given)} {problem}")
        try:
            path = real_path(os.path.join(self.root, given))
        except OSError:
            raise InvalidArguments(where, f"{quoted(given)} kept changing as it was looked at; try again") from None
        inside = self._relative(path, self.root)
        if inside is None:
            raise InvalidArguments(where, self._outside(path))
        try:
            status = os.stat(path)
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ENOTDIR):
                raise InvalidArguments(where, self._missing(given, "file or folder")) from None
            raise InvalidArguments(where, f"cannot read {quoted(given)} ({error.strerror})") from None
        if not (stat.S_ISDIR(status.st_mode) or stat.S_ISREG(status.st_mode)):
            kind = describe_kind(status.st_mode)
            raise InvalidArguments(where, f"{quoted(given)} is {kind}, not a folder or a regular file")
        if stat.S_ISREG(status.st_mode) and self._ends_as_folder(given):  # (resolving took the ending away)
            raise InvalidArguments(where, self._not_a_folder(given))
        return inside or "."

    def inside(self, path: str) -> str | None:
        """`path` relative to the workspace, `/`-separated, as the answer shows it; None when outside."""
        inside = self._relative(path, self.root)
        return inside or None  # (the workspace itself is no file)

    def _regular_file(self, where: str, given: str, path: str) -> os.stat_result:
        """The stat of the regular file at `path` (a link followed, if it stays inside)."""
        try:
            status = os.lstat(path)
            if stat.S_ISLNK(status.st_mode):
                target = real_path(path)
                if self.inside(target) is None:
                    raise InvalidArguments(where, f"{quoted(given)} is a link to {self._outside(target)}")
                status = os.stat(path)
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ENOTDIR):
                raise InvalidArguments(where, self._missing(given, "file")) from None
            if error.errno == errno.ENAMETOOLONG:
                raise InvalidArguments(where, f"{quoted(given)} is longer than a path can be") from None
            raise InvalidArguments(where, f"cannot read {quoted(given)} ({error.strerror})") from None
        if not stat.S_ISREG(status.st_mode):
            raise InvalidArguments(where, f"{quoted(given)} is {describe_kind(status.st_mode)}, not a regular file")
        return status

    def _ends_as_folder(self, given: str) -> bool:
        """Whether `given` ends as only a folder's path can (`a.txt/`, `a.txt/.`): the system
        refuses such a path to a file (ENOTDIR), though resolving it gives the file's."""
        return os.path.split(os.path.join(self.root, given))[1] in ("", ".", "..")

    @staticmethod
    def _not_a_folder(given: str) -> str:
        return f"{quoted(given)} is not a folder, and a path that ends so names one"

    def _outside(self, path: str) -> str:
        """Words for a path outside the workspace; naming the fix when it is in the repository around it."""
        said = f"outside the workspace {shown(self.root)}"
        if self._in_enclosing() and self._relative(path, str(self.repository)) is not None:
            said += f"; the workspace is a folder inside the repository {shown(str(self.repository))}: "
            said += f"pass --workspace {shown(str(self.repository))}"
        return said

    def _missing(self, given: str, kind: str) -> str:
        """Words for a path the workspace does not hold; when the workspace is a folder inside a
        repository, naming the fix for a path given from that repository's root. Nothing outside
        the workspace is looked at for it: the words are the same whether such a file exists or not."""
        said = f"no such {kind} in the workspace {shown(self.root)}: {quoted(given)}"
        if self._in_enclosing() and not os.path.isabs(given):
            repository = shown(str(self.repository))
            said += (
                f"; the workspace is a folder inside the repository {repository}: for a path from its root, "
                f"pass --workspace {repository}"
            )
        return said

    def _in_enclosing(self) -> bool:
        return self.repository is not None and str(self.repository) != self.root

    def _relative(self, path: str, root: str) -> str | None:
        inside = relative_inside(path, root)
        return inside if inside is not None else same_folder_inside(path, root, self.identities)
