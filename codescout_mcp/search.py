"""`search_workspace` and `codescout search`: a pattern in, the workspace's matching files ranked out.

One call does what `rg --json PATTERN | codescout hits | codescout rank` does by hand in the
workspace, with the same results and counts: ripgrep counts each file's matches
(`facts/search.py`, at ripgrep's defaults), the workspace's facts give each file's age and
owner (`facts/hits.py`, `workspace.Workspace`, one code path with `codescout hits` and
rank_workspace_hits), and the ranking rule orders them. Paths come back relative to the
workspace. It adds what the pipeline does not say: how many files ripgrep searched. A
pattern that matches nothing gets an empty ranking, not an error.

Only the files that can still reach the first `limit` are dated (`hits.top_ranked`), and
ripgrep runs outside the workspace's lock, so a search never waits on another call's git.
Before ripgrep runs, the ignore files it will read that git tracks, and those in the folders
around the search, must be regular files: one that is a FIFO or a device (a link to
/dev/zero, say) is refused at once, naming it, as the files git opens are.
"""

from __future__ import annotations

import os
import time
from pathlib import Path
from typing import Any, Final

from codescout_mcp.answers import catalog, words
from codescout_mcp.contract import SEARCH_INPUT_SCHEMA, SEARCH_TOOL_NAME
from codescout_mcp.facts.checkout import Checkout
from codescout_mcp.facts.git import GitError
from codescout_mcp.facts.gitfiles import RepositoryError, check_for_git
from codescout_mcp.facts.hits import located_counts, top_ranked
from codescout_mcp.facts.repository import Lookup, NeedsWork
from codescout_mcp.facts.search import Search, SearchError, count_matches
from codescout_mcp.paths import ancestors
from codescout_mcp.protocol import CALL_SECONDS
from codescout_mcp.text import quoted
from codescout_mcp.validate import FlatChecker, InvalidArguments
from codescout_mcp.workspace import CallPaths, Workspace

CHECKER: Final = FlatChecker(SEARCH_INPUT_SCHEMA)
# The part of a call's time ripgrep may take; the rest is for git.
SEARCH_SECONDS: Final = 60.0
IGNORE_FILES: Final = (".gitignore", ".ignore", ".rgignore")


class SearchTool:
    """`search_workspace`: ripgrep's counts, the workspace's facts, the ranking rule."""

    name: Final = SEARCH_TOOL_NAME
    definition: Final = catalog.SEARCH_TOOL

    def __init__(self, workspace: Workspace, *, seconds: float = CALL_SECONDS) -> None:
        self.workspace = workspace
        self.seconds = seconds  # how long one call may take, ripgrep and git included

    def heavy(self, arguments: dict[str, Any]) -> bool:
        return True  # a search runs ripgrep: never on the event loop

    def call(self, arguments: dict[str, Any], *, cached_only: bool = False) -> dict[str, Any] | None:
        """The tool result: the ranking of the matching files, or a tool error naming the argument at fault."""
        if cached_only:
            return None
        try:
            return words.tool_result(self.search(arguments, Lookup(time.time(), seconds=self.seconds)))
        except InvalidArguments as error:
            return words.tool_error(str(error))
        except SearchError as error:
            return words.tool_error(f"{error.where}: {error}" if error.where else str(error))
        except (RepositoryError, GitError) as error:
            return self.workspace.unreadable(error)

    def search(self, arguments: object, lookup: Lookup) -> dict[str, Any]:
        """The answer for the search in `arguments`; InvalidArguments or SearchError naming what is wrong."""
        checked = CHECKER.validate(arguments)
        pattern: str = checked["pattern"]
        for name in ("pattern", "glob"):
            if isinstance(checked.get(name), str) and ("\0" in checked[name] or _unpaired(checked[name])):
                raise InvalidArguments(name, f"{quoted(checked[name])} holds a character no command line can carry")
        search = Search(
            pattern,
            fixed_strings=checked["fixed_strings"],
            ignore_case=checked["ignore_case"],
            glob=checked.get("glob"),
        )
        root = str(self.workspace.root)
        with self.workspace.turn(lookup) as checkout:
            where = (
                CallPaths(self.workspace.root, checkout).place(checked["path"], "path") if "path" in checked else "."
            )
            self._check_ignore_files(checkout, where, lookup)
        left = lookup.seconds_left(self.workspace.root)
        counted = count_matches(
            search, where, cwd=root, seconds=SEARCH_SECONDS if left is None else min(left, SEARCH_SECONDS)
        )
        with self.workspace.turn(lookup) as checkout:
            call = CallPaths(self.workspace.root, checkout)
            located, stats = located_counts(counted.counts, checkout, Path(root))
            ranking, notes = top_ranked(
                located, stats, checkout=checkout, lookup=lookup, limit=checked["limit"], name_of=call.inside
            )
        for note in notes:
            self.workspace.warn(note)
        ranking["search"] = {"files_searched": counted.files_searched}
        return ranking

    def _check_ignore_files(self, checkout: Checkout, where: str, lookup: Lookup) -> None:
        """BlockingFile for an ignore file ripgrep would read that is a FIFO or a device (links followed):
        those git tracks in the search, and those in the folders from the search up to the top."""
        start = os.path.normpath(os.path.join(str(self.workspace.root), where))
        folders = [start, *ancestors(start)] if os.path.isdir(start) else ancestors(start)
        places = [os.path.join(folder, name) for folder in folders for name in IGNORE_FILES]
        main = checkout.main
        if main is not None:
            try:
                tracked = main.tracked(lookup)
            except NeedsWork:  # pragma: no cover - a search never looks up from the cache only
                tracked = set()
            places += [
                os.path.join(main.base, *name.split("/")) for name in tracked if name.rpartition("/")[2] in IGNORE_FILES
            ]
        check_for_git(places, reader="ripgrep")


def _unpaired(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
