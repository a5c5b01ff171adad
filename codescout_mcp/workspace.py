"""`rank_workspace_hits`: rank paths an agent found, with ages and owners read from the checkout.

For clients without a shell, which cannot run `rg --json | codescout hits | codescout rank`.
The caller gives each file's path and match count; the server fills in the age and owner
exactly as `codescout hits` does (`RepositoryFacts`, one code path for both), then ranks with
the handler `rank_search_results` uses. It reads git metadata and CODEOWNERS, never file
contents; git runs with a fixed argument list, no shell, a timeout, and no GIT_* variables.

What was read is kept between calls and refreshed when HEAD, the index, a ref or CODEOWNERS
changes, or when a file's inode changed after its status was read, so repeated calls on an
unchanged checkout cost a few `stat` calls, and an edit or a commit shows in the next call.
"""

from __future__ import annotations

import errno
import logging
import os
import stat
import threading
import time
from pathlib import Path
from typing import Any, Final

import mcp_types as types

from codescout_mcp.contract import (
    OUTPUT_SCHEMA,
    WORKSPACE_INPUT_SCHEMA,
    WORKSPACE_TOOL_DESCRIPTION,
    WORKSPACE_TOOL_NAME,
    WORKSPACE_TOOL_TITLE,
)
from codescout_mcp.hits import FileFacts, HitsError, NeedsGit, RepositoryFacts, resolved_folder
from codescout_mcp.jsontext import shown
from codescout_mcp.server import read_only, tool_result
from codescout_mcp.tool import rank
from codescout_mcp.validate import Checker, InvalidArguments

logger = logging.getLogger("codescout")

CHECKER: Final = Checker(WORKSPACE_INPUT_SCHEMA)

DEFINITION: Final = types.Tool(
    name=WORKSPACE_TOOL_NAME,
    title=WORKSPACE_TOOL_TITLE,
    description=WORKSPACE_TOOL_DESCRIPTION,
    input_schema=WORKSPACE_INPUT_SCHEMA,
    output_schema=OUTPUT_SCHEMA,
    annotations=read_only(WORKSPACE_TOOL_TITLE),
)


class WorkspaceTool:
    """The tool for one workspace folder; safe to call from several threads."""

    name: Final = WORKSPACE_TOOL_NAME
    definition: Final = DEFINITION

    def __init__(self, folder: str) -> None:
        self.root = Path(os.path.realpath(folder))
        self._prefix = os.path.join(self.root, "")  # the root and a separator: what paths inside start with
        self._lock = threading.Lock()
        self._facts: RepositoryFacts | None = None
        self._warned: set[str] = set()

    def answer(self, arguments: dict[str, Any] | None, *, offline: bool = False) -> types.CallToolResult:
        """The tool's result: the ranking, or a tool error naming the location.

        With `offline`, NeedsGit when git must run first (see RepositoryFacts.describe).
        """
        try:
            return tool_result(lambda: self.rank({} if arguments is None else arguments, offline=offline))
        except HitsError as error:  # git failed or timed out: not the caller's doing
            text = f"the workspace {shown(str(self.root))} cannot be read: {error}"
            return types.CallToolResult(content=[types.TextContent(text=text)], is_error=True)

    def rank(self, arguments: object, now: float | None = None, *, offline: bool = False) -> dict[str, Any]:
        """Rank the hits in `arguments`; InvalidArguments names a bad one by its index."""
        checked = CHECKER.validate(arguments)
        with self._lock:  # one call at a time reads and updates what is kept
            if offline and self._facts is None:
                raise NeedsGit
            facts = self._repository()
            folders: dict[str, str] = {str(self.root): str(self.root)}
            stats: dict[str, os.stat_result] = {}
            files = [self._file(index, hit["path"], facts, folders, stats) for index, hit in enumerate(checked.hits)]
            seen: dict[str, int] = {}
            for index, (shown_path, _) in enumerate(files):
                if shown_path in seen:
                    raise InvalidArguments(
                        f"hits[{index}].path",
                        f"names the same file as hits[{seen[shown_path]}] ({_quoted(shown_path)})",
                    )
                seen[shown_path] = index
            facts.refresh()
            names = [name for _, name in files]
            described = facts.describe(names, time.time() if now is None else now, stats=stats, offline=offline)
        hits = []
        for index, (shown_path, name) in enumerate(files):
            fact = described[name]
            if not isinstance(fact, FileFacts):  # it vanished after the check above
                raise InvalidArguments(f"hits[{index}].path", f"cannot read {_quoted(shown_path)} ({fact.strerror})")
            hit: dict[str, Any] = {
                "path": shown_path,
                "matches": checked.hits[index]["matches"],
                "last_modified_days": fact.days,
            }
            if fact.owner is not None:
                hit["owner"] = fact.owner
            hits.append(hit)
        return rank({"hits": hits, "limit": checked.limit})

    def _repository(self) -> RepositoryFacts:
        if self._facts is None:
            self._facts = RepositoryFacts.open(None, cwd=self.root, warn=self._warn, isolated=True)
        return self._facts

    def _warn(self, message: str) -> None:
        if message not in self._warned:  # each distinct warning once per server
            self._warned.add(message)
            logger.warning("workspace: %s", message)

    def _file(
        self,
        index: int,
        given: str,
        facts: RepositoryFacts,
        folders: dict[str, str],
        stats: dict[str, os.stat_result],
    ) -> tuple[str, str]:
        """(path relative to the workspace, path relative to the repository) for one hit.

        The folders on the way are resolved (`..` and links, as the system would), each
        folder once per call (`folders` remembers them); the file keeps its own name, as git
        tracks a link by it, but a link must point inside the workspace too.
        """
        where = f"hits[{index}].path"
        joined = os.path.join(self.root, given)
        folder, name = os.path.split(joined)
        if name in ("", ".", ".."):
            folder, name = joined, ""
        located = os.path.join(resolved_folder(folder, folders), name) if name else resolved_folder(folder, folders)
        if not self._inside(located):
            raise InvalidArguments(where, "outside the workspace")
        try:
            status = os.lstat(located)
            if stat.S_ISLNK(status.st_mode):
                if not self._inside(os.path.realpath(located)):
                    raise InvalidArguments(where, "outside the workspace")
                status = os.stat(located)
            mode = status.st_mode
        except OSError as error:
            if error.errno in (errno.ENOENT, errno.ENOTDIR):
                raise InvalidArguments(where, f"no such file in the workspace: {_quoted(given)}") from None
            raise InvalidArguments(where, f"cannot read {_quoted(given)} ({error.strerror})") from None
        if not stat.S_ISREG(mode):
            raise InvalidArguments(where, f"{_quoted(given)} is {_kind(mode)}, not a regular file")
        relative = facts.relative(located)
        stats[relative] = status
        return located[len(self._prefix) :], relative

    def _inside(self, path: str) -> bool:
        return path.startswith(self._prefix)


def _kind(mode: int) -> str:
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    return "a device"


def _quoted(path: str) -> str:
    text = shown(path)
    return f'"{text[:200]}"'
