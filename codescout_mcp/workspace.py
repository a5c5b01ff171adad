"""`rank_workspace_hits`: rank paths an agent found, with ages and owners read from the checkout.

For clients without a shell, which cannot run `rg --json | codescout hits | codescout rank`.
The caller gives each file's path and match count; the server fills in the age and owner
exactly as `codescout hits` does (`repository.Checkout`, one code path for both), then ranks
with the handler `rank_search_results` uses. It reads git metadata and CODEOWNERS, never
returns or interprets file contents; git runs with a fixed argument list, no shell, a
deadline, no GIT_* variables, and none of the commands a repository's config can name.

What was read is kept between calls and refreshed when HEAD, the index, a ref or CODEOWNERS
changes, or when a file's inode changed after its status was read, so repeated calls on an
unchanged checkout cost a few `stat` calls, and an edit or a commit shows in the next call.
A workspace that was a plain folder is looked at again on each call, so a `git init` (or a
clone into it) shows at once.
"""

from __future__ import annotations

import contextlib
import errno
import logging
import os
import stat
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

import mcp_types as types

from codescout_mcp.contract import (
    WORKSPACE_INPUT_SCHEMA,
    WORKSPACE_TOOL_NAME,
)
from codescout_mcp.facts.checkout import Checkout
from codescout_mcp.facts.git import GitError
from codescout_mcp.facts.gitfiles import RepositoryError
from codescout_mcp.facts.repository import FileFacts, NeedsWork
from codescout_mcp.paths import ancestors, describe_kind, located, relative_inside, same_folder_inside
from codescout_mcp.platform import name_problem
from codescout_mcp.protocol import CALL_SECONDS
from codescout_mcp.ranking import rank
from codescout_mcp.results import tool_error, tool_result
from codescout_mcp.text import quoted, shown
from codescout_mcp.validate import Checker, InvalidArguments

logger = logging.getLogger("codescout")

CHECKER: Final = Checker(WORKSPACE_INPUT_SCHEMA)


class WorkspaceTool:
    """The tool for one workspace folder; safe to call from several threads."""

    name: Final = WORKSPACE_TOOL_NAME

    def __init__(self, folder: str) -> None:
        self.root = Path(os.path.realpath(folder))
        self._lock = threading.Lock()
        self._checkout: Checkout | None = None
        self._git_entries: tuple[bool, ...] = ()  # which folders around the root had a .git when opened
        self._warned: set[str] = set()

    def answer(self, arguments: dict[str, Any] | None, *, offline: bool = False) -> types.CallToolResult:
        """The tool's result: the ranking, or a tool error naming the location.

        With `offline`, NeedsWork when git or a file read must come first.
        """
        notes: list[str] = []
        try:
            return tool_result(
                lambda: self.rank({} if arguments is None else arguments, offline=offline, notes=notes), notes
            )
        except (RepositoryError, GitError) as error:  # not the caller's doing
            return tool_error(f"the workspace {shown(str(self.root))} cannot be read: {error}")

    def rank(
        self, arguments: object, now: float | None = None, *, offline: bool = False, notes: list[str] | None = None
    ) -> dict[str, Any]:
        """Rank the hits in `arguments`; InvalidArguments names a bad one by its index."""
        checked = CHECKER.validate(arguments)
        with self._turn(offline):  # one call at a time reads and updates what is kept
            checkout = self._current_checkout(offline)
            repository = checkout.main.base if checkout.main is not None else None
            folders: dict[str, str] = {str(self.root): str(self.root)}
            identities: dict[str, tuple[int, int] | None] = {}
            stats: dict[str, os.stat_result] = {}
            seen: dict[tuple[int, int], tuple[int, str]] = {}
            files = []
            for index, given in enumerate(checked.hits):
                path, shown_path = self._file(index, given["path"], repository, folders, identities, stats, seen)
                files.append((path, shown_path))
            checkout.refresh()
            described = checkout.describe(
                [path for path, _ in files],
                time.time() if now is None else now,
                stats=stats,
                offline=offline,
                seconds=CALL_SECONDS,
            )
            if notes is not None:
                notes.extend(checkout.notes)
            # A file typed in another case or normalisation than git's (where the file system
            # takes both for one) is answered under git's spelling, as git and its other hits name it.
            for index, (path, _) in enumerate(files):
                spelled = checkout.spellings.get(path)
                shown_spelled = None if spelled is None else self._inside(spelled, identities)
                if shown_spelled is not None:
                    files[index] = (path, shown_spelled)
        hits = []
        for index, (path, shown_path) in enumerate(files):
            fact = described[path]
            if not isinstance(fact, FileFacts):  # it vanished after the check above
                raise InvalidArguments(f"hits[{index}].path", f"cannot read {quoted(shown_path)} ({fact.strerror})")
            hit: dict[str, Any] = {
                "path": shown_path,
                "matches": checked.hits[index]["matches"],
                "last_modified_days": fact.days,
            }
            if fact.owner is not None:
                hit["owner"] = fact.owner
            hits.append(hit)
        return rank({"hits": hits, "limit": checked.limit})

    @contextlib.contextmanager
    def _turn(self, offline: bool) -> Iterator[None]:
        """This call's turn at the workspace: at once (offline: NeedsWork, so that the event
        loop never waits), or within the call's time (else RepositoryError, not a wait on
        another call's git without end)."""
        if not self._lock.acquire(blocking=not offline, timeout=-1 if offline else CALL_SECONDS):
            if offline:
                raise NeedsWork
            raise RepositoryError(
                f"another call has been reading it for more than {CALL_SECONDS:.0f} s (git may be stuck); try again"
            )
        try:
            yield
        finally:
            self._lock.release()

    def _current_checkout(self, offline: bool) -> Checkout:
        """The checkout, opened again when the workspace was a plain folder and a .git appeared."""
        entries = self._git_entries_around()
        if self._checkout is None or (self._checkout.main is None and entries != self._git_entries):
            if offline:
                raise NeedsWork
            self._checkout = Checkout.open(
                None, cwd=self.root, warn=self._warn, isolated=True, strict=True, seconds=CALL_SECONDS
            )
            self._git_entries = entries
        return self._checkout

    def _git_entries_around(self) -> tuple[bool, ...]:
        return tuple(
            os.path.lexists(os.path.join(folder, ".git")) for folder in [str(self.root), *ancestors(str(self.root))]
        )

    def _warn(self, message: str) -> None:
        if message not in self._warned:  # each distinct warning once per server
            self._warned.add(message)
            logger.warning("workspace: %s", message)

    def _file(
        self,
        index: int,
        given: str,
        repository: Path | None,
        folders: dict[str, str],
        identities: dict[str, tuple[int, int] | None],
        stats: dict[str, os.stat_result],
        seen: dict[tuple[int, int], tuple[int, str]],
    ) -> tuple[str, str]:
        """(resolved absolute path, path as shown) for one hit; InvalidArguments if it is unfit.

        The workspace folder is the one boundary, for every spelling of a path: relative to
        it, absolute, through `..` or links (the folders on the way are resolved as the system
        would, each once per call; the file keeps its own name, as git tracks a link by it,
        and a link must point inside too), or in another case where the file system ignores it.
        """
        where = f"hits[{index}].path"
        problem = name_problem(given)
        if problem is not None:
            raise InvalidArguments(where, f"{quoted(given)} {problem}")
        located_path = located(str(self.root), given, folders)
        shown_path = self._inside(located_path, identities)
        if shown_path is None:
            raise InvalidArguments(where, self._outside(located_path, repository, identities))
        status = self._regular_file(where, given, located_path, repository, identities)
        identity = (status.st_dev, status.st_ino)
        if status.st_ino and identity in seen:
            first, first_given = seen[identity]
            raise InvalidArguments(
                where, f"{quoted(given)} names the same file as hits[{first}] ({quoted(first_given)})"
            )
        seen[identity] = (index, given)
        stats[located_path] = status
        return located_path, shown_path

    def _regular_file(
        self,
        where: str,
        given: str,
        located: str,
        repository: Path | None,
        identities: dict[str, tuple[int, int] | None],
    ) -> os.stat_result:
        """The stat of the regular file at `located` (a link followed, if it stays inside)."""
        try:
            status = os.lstat(located)
            if stat.S_ISLNK(status.st_mode):
                target = os.path.realpath(located)
                if self._inside(target, identities) is None:
                    raise InvalidArguments(
                        where, f"{quoted(given)} is a link to {self._outside(target, repository, identities)}"
                    )
                status = os.stat(located)
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ENOTDIR):
                raise InvalidArguments(where, self._missing(given, repository)) from None
            if error.errno == errno.ENAMETOOLONG:
                raise InvalidArguments(where, f"{quoted(given)} is longer than a path can be") from None
            raise InvalidArguments(where, f"cannot read {quoted(given)} ({error.strerror})") from None
        if not stat.S_ISREG(status.st_mode):
            raise InvalidArguments(where, f"{quoted(given)} is {describe_kind(status.st_mode)}, not a regular file")
        return status

    def _outside(self, path: str, repository: Path | None, identities: dict[str, tuple[int, int] | None]) -> str:
        """Words for a path outside the workspace; naming the fix when it is in the repository around it."""
        said = f"outside the workspace {shown(str(self.root))}"
        if self._in_enclosing(repository) and self._relative(path, str(repository), identities) is not None:
            said += f"; the workspace is a folder inside the repository {shown(str(repository))}: "
            said += f"pass --workspace {shown(str(repository))}"
        return said

    def _missing(self, given: str, repository: Path | None) -> str:
        """Words for a path the workspace does not hold; naming the fix when the repository around it does."""
        said = f"no such file in the workspace {shown(str(self.root))}: {quoted(given)}"
        if self._in_enclosing(repository) and not os.path.isabs(given):
            assert repository is not None
            if os.path.isfile(os.path.join(repository, given)):
                said += (
                    f"; the workspace is a folder inside the repository {shown(str(repository))}, which has it: "
                    f"pass --workspace {shown(str(repository))}"
                )
        return said

    def _in_enclosing(self, repository: Path | None) -> bool:
        return repository is not None and repository != self.root

    def _inside(self, path: str, identities: dict[str, tuple[int, int] | None]) -> str | None:
        """`path` relative to the workspace, `/`-separated, as the answer shows it; None when outside."""
        inside = self._relative(path, str(self.root), identities)
        return inside or None  # (the workspace itself is no file)

    @staticmethod
    def _relative(path: str, root: str, identities: dict[str, tuple[int, int] | None]) -> str | None:
        inside = relative_inside(path, root)
        return inside if inside is not None else same_folder_inside(path, root, identities)
