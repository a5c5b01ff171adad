"""The workspace: one checkout the server was pointed at, and `rank_workspace_hits` over it.

For clients without a shell, which cannot run `rg --json | codescout hits | codescout rank`.
The caller gives each file's path and match count; the server fills in the age and owner
exactly as `codescout hits` does (`facts.checkout.Checkout`, one code path for both), then
ranks with the handler `rank_search_results` uses. It reads git metadata and CODEOWNERS,
never returns or interprets file contents; git runs with a fixed argument list, no shell, a
deadline, no GIT_* variables, and none of the commands a repository's config can name.

What was read is kept between calls (`Workspace`, shared by the tools that read the
checkout) and refreshed when HEAD, the index, a ref or CODEOWNERS changes, or when a file's
inode changed after its status was read, so repeated calls on an unchanged checkout cost a
few `stat` calls, and an edit or a commit shows in the next call. A workspace that was a
plain folder is looked at again on each call, so a `git init` (or a clone into it) shows at
once. Everything one call works out of its paths lives in a `callpaths.CallPaths` of its own.
Standard library only.
"""

from __future__ import annotations

import contextlib
import logging
import os
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from codescout_mcp.answers import catalog, words
from codescout_mcp.answers.protocol import CALL_SECONDS
from codescout_mcp.core.contract import WORKSPACE_INPUT_SCHEMA, WORKSPACE_TOOL_NAME
from codescout_mcp.core.ranking import rank, ranked
from codescout_mcp.core.text import quoted, shown
from codescout_mcp.core.validate import Checker, InvalidArguments
from codescout_mcp.facts import Warn
from codescout_mcp.facts.checkout import Checkout
from codescout_mcp.facts.git import GitError
from codescout_mcp.facts.gitfiles import RepositoryError
from codescout_mcp.facts.ignorefiles import IgnoreFiles
from codescout_mcp.facts.lookup import FileFacts, Lookup, NeedsWork
from codescout_mcp.system.paths import LinkOnTheWay, ancestors, pin
from codescout_mcp.system.processes import Cancelled, Stop, call_seconds, current_stop, take_lock, working_for
from codescout_mcp.tools.callpaths import CallPaths

if TYPE_CHECKING:
    from codescout_mcp.facts.cache import FolderCache

logger = logging.getLogger("codescout")

CHECKER: Final = Checker(WORKSPACE_INPUT_SCHEMA)
# The commits the background walk reads at a time, the workspace taken (about 0.1-0.2 s of git).
WARM_COMMITS: Final = 5_000
# A call of more paths than this goes to a worker thread at once; fewer are answered on the
# event loop when everything they need is known already (a few stat calls a path).
INLINE_HITS: Final = 1_000
# How long a cancelled call waits for its read-ahead thread, whose git the cancel has ended.
AHEAD_CANCEL_SECONDS: Final = 5.0
# A call with bad paths names them all, so that one call back can fix them; this many in
# full, and the rest as a count, so that the error stays small however many there are.
LISTED_PATHS: Final = 20


def _folder_cache() -> FolderCache | None:
    from codescout_mcp.facts.cache import user_folder_cache

    return user_folder_cache()


class Workspace:
    """One workspace folder and what was read of it; safe to use from several threads, one call at a time."""

    def __init__(self, folder: str, *, warn: Warn | None = None) -> None:
        self.root = Path(os.path.realpath(folder))
        self._say = warn
        self._lock = threading.Lock()
        self._checkout: Checkout | None = None
        self._git_entries: tuple[bool, ...] = ()  # which folders around the root had a .git when opened
        self._identity: tuple[int, int] | None = None  # the root folder's (device, inode) when opened
        self._warned: set[str] = set()
        self._waiting = 0  # calls waiting for the workspace
        self._warm_stop: Stop | None = None  # the background walk's, while it holds the workspace
        self.ignore_files = IgnoreFiles(str(self.root), cache=_folder_cache)  # vetted before each search

    @contextlib.contextmanager
    def turn(self, lookup: Lookup) -> Iterator[Checkout]:
        """This call's turn at the workspace, and its checkout, fresh: at once with `cached_only`
        (NeedsWork, so that the event loop never waits), or within the call's time (else
        RepositoryError, not a wait on another call's git without end)."""
        if lookup.cached_only:
            taken = self._lock.acquire(blocking=False)
        else:
            warming = self._warm_stop
            calling = warming is None or current_stop() is not warming  # (not the background walk itself)
            self._waiting += calling  # (the background walk gives way while a call waits)
            if warming is not None and calling:
                warming.cancel()  # the background walk's piece ends (what it read is kept)
            try:
                taken = take_lock(self._lock, lookup.seconds_left(self.root))  # (Cancelled if the call is)
            finally:
                self._waiting -= calling
        if not taken:
            if lookup.cached_only:
                raise NeedsWork
            raise RepositoryError(
                "another call was reading it for the whole time allowed (git may be stuck); try again"
            )
        try:
            self._check_root()
            checkout = self._current_checkout(lookup)
            checkout.refresh()
            yield checkout
        finally:
            self._lock.release()

    def warm(self) -> threading.Thread:
        """Walk the workspace's history in the background, so that the first search need not: a
        piece at a time (WARM_COMMITS commits, the workspace taken for each and given back), at a
        lower priority, and never while a call waits for the workspace. A call that comes first
        uses what is walked and walks on from there itself; each commit is read once either way."""
        thread = threading.Thread(target=self._warm, daemon=True, name="codescout-warm")
        thread.start()
        return thread

    def _warm(self) -> None:
        _lower_this_threads_priority()
        primed = False
        while True:
            while self._waiting:
                time.sleep(0.05)
            stop = Stop()
            lookup = Lookup(time.time(), seconds=CALL_SECONDS)
            try:
                with working_for(stop), self._turn_to_warm(stop, lookup) as checkout:
                    if not primed:
                        self._prime(checkout, lookup)
                        primed = True
                    main = checkout.main
                    if main is None or not main.in_git or main.warm(lookup, WARM_COMMITS):
                        return
            except Cancelled:  # a call came: it goes first, and the walk goes on after it
                continue
            except Exception as error:  # (a call will meet and say whatever this is)
                logger.debug("the background walk of %s stopped: %s", self.root, error)
                return
            time.sleep(0)  # a call that came meanwhile may take the workspace first

    @contextlib.contextmanager
    def reading_ahead(self, lookup: Lookup) -> Iterator[None]:
        """Within the block, a thread of its own reads what dating the call's files will need
        (`RepositoryFacts.ready`), taking its turn at the workspace as a call does, while the
        caller works on without it (a search's ripgrep); the block's end waits for it. It works
        for the same call: cancelling the call ends its git, and its time bounds it. A block
        that fails does not wait (what the thread reads is kept for the next call), unless the
        call was cancelled: then its git is ending, and the call ends only once the thread has
        (for at most AHEAD_CANCEL_SECONDS). What goes wrong in it is left for the call to meet
        and say."""
        stop = current_stop()
        thread = threading.Thread(target=self._read_ahead, args=(stop, lookup), daemon=True, name="codescout-ahead")
        thread.start()
        try:
            yield
        except BaseException:
            if stop is not None and stop.cancelled:
                thread.join(AHEAD_CANCEL_SECONDS)
            raise
        thread.join()

    def _read_ahead(self, stop: Stop | None, lookup: Lookup) -> None:
        try:
            with working_for(stop), self.turn(lookup) as checkout:
                if checkout.main is not None:
                    checkout.main.ready(lookup)
        except Exception as error:
            logger.debug("reading %s ahead of a call stopped: %s", self.root, error)

    def _prime(self, checkout: Checkout, lookup: Lookup) -> None:
        """Read first what every first call reads besides the history, which is walked after: the
        ignore files under the workspace, the index, the status and CODEOWNERS. What goes wrong
        is left for a call to meet and say (Cancelled aside: a call came first)."""
        main = checkout.main
        try:
            self.ignore_files.vet(str(self.root), main, lookup)
            if main is not None:
                main.ready(lookup)
        except Cancelled:
            raise
        except Exception as error:
            logger.debug("reading %s ahead of its first call stopped: %s", self.root, error)

    @contextlib.contextmanager
    def _turn_to_warm(self, stop: Stop, lookup: Lookup) -> Iterator[Checkout]:
        """A turn for the background walk, which a call that comes to wait cancels (`turn`), from
        before it is taken (the git that opening the checkout runs included)."""
        self._warm_stop = stop
        try:
            if self._waiting:
                stop.cancel()
            with self.turn(lookup) as checkout:
                yield checkout
        finally:
            self._warm_stop = None

    def _check_root(self) -> None:
        """RepositoryError if the workspace's folder is gone (deleted or moved while the server runs),
        or is now reached through a link (it, or a folder above it, became one): the folder the
        server was started on is the boundary, never where a name leads since. A folder made anew
        at the same place, with no link on the way, is opened afresh."""
        try:
            pinned = pin(str(self.root))
        except LinkOnTheWay as error:
            raise RepositoryError(
                f"{error} now, not the folder the server was started on; to use where it leads, start the server "
                "on that folder"
            ) from None
        except (OSError, ValueError):
            raise RepositoryError(f"{shown(str(self.root))} no longer exists (deleted or moved)") from None
        pinned.close()
        identity = pinned.steps[-1]
        if identity != self._identity:
            self._checkout = None
            self._identity = identity

    @property
    def identity(self) -> tuple[int, int] | None:
        """The workspace folder's (device, inode) when it was last looked at."""
        return self._identity

    def unreadable(self, error: Exception) -> dict[str, Any]:
        """The tool error for a workspace that cannot be read (not the caller's doing)."""
        return words.tool_error(f"the workspace {shown(str(self.root))} cannot be read: {error}")

    def _current_checkout(self, lookup: Lookup) -> Checkout:
        """The checkout, opened again when the workspace was a plain folder and a .git appeared."""
        if self._checkout is not None and self._checkout.main is not None:
            return self._checkout
        entries = self._git_entries_around()
        if self._checkout is None or entries != self._git_entries:
            if lookup.cached_only:
                raise NeedsWork
            from codescout_mcp.facts.cache import user_cache

            self._checkout = Checkout.open(
                None,
                cwd=self.root,
                warn=self.warn,
                isolated=True,
                strict=True,
                seconds=lookup.seconds_left(self.root),
                cache=user_cache(),
            )
            self._git_entries = entries
        return self._checkout

    def _git_entries_around(self) -> tuple[bool, ...]:
        return tuple(
            os.path.lexists(os.path.join(folder, ".git")) for folder in [str(self.root), *ancestors(str(self.root))]
        )

    def warn(self, message: str) -> None:
        """Tell the user of something off in the checkout: each distinct warning once, in the log
        (or to the `warn` given: `codescout search` says it on stderr)."""
        if message not in self._warned:
            self._warned.add(message)
            if self._say is not None:
                self._say(message)
            else:
                logger.warning("workspace: %s", message)


class WorkspaceTool:
    """`rank_workspace_hits`: the caller's paths and match counts, with ages and owners read here."""

    name: Final = WORKSPACE_TOOL_NAME
    definition: Final = catalog.WORKSPACE_TOOL

    def __init__(self, workspace: Workspace, *, seconds: float = CALL_SECONDS) -> None:
        self.workspace = workspace
        self.seconds = seconds  # how long one call may take, git included

    def heavy(self, arguments: dict[str, Any]) -> bool:
        hits = arguments.get("hits")
        return isinstance(hits, list) and len(hits) > INLINE_HITS

    def call(self, arguments: dict[str, Any], *, cached_only: bool = False) -> dict[str, Any] | None:
        """The tool result: the ranking (and its notes), or a tool error; with `cached_only`, None
        when git or a file read must come first."""
        lookup = Lookup(time.time(), seconds=call_seconds(self.seconds), cached_only=cached_only)
        try:
            ranking, notes = self.rank(arguments, lookup)
        except NeedsWork:
            return None
        except InvalidArguments as error:
            return words.tool_error(str(error))
        except (RepositoryError, GitError) as error:
            return self.workspace.unreadable(error)
        return words.tool_result(ranking, notes)

    def rank(self, arguments: object, lookup: Lookup) -> tuple[dict[str, Any], list[str]]:
        """The ranking of the hits in `arguments`, and notes on it; InvalidArguments names the
        first hit that breaks the schema, else every hit whose path is bad (`Refusals`)."""
        checked = CHECKER.validate(arguments)
        refused = Refusals()
        with self.workspace.turn(lookup) as checkout:  # one call at a time reads and updates what is kept
            call = CallPaths(self.workspace.root, checkout)
            files = []
            for index, hit in enumerate(checked.hits):
                try:
                    files.append(call.file(index, hit["path"]))
                except InvalidArguments as error:
                    refused.add(error)
            refused.check()
            described = checkout.describe(
                [path for path, _ in files], lookup, stats=call.stats, folders=call.folder_stats
            )
            # A file typed in another case or normalisation than git's (where the file system
            # takes both for one) is answered under git's spelling, as git and its other hits name it.
            for index, (path, _) in enumerate(files) if described.spellings else ():
                spelled = described.spellings.get(path)
                answered_as = None if spelled is None else call.inside(spelled)
                if answered_as is not None:
                    files[index] = (path, answered_as)
        hits = []
        found = described.facts
        for index, (path, answered_as) in enumerate(files):
            fact = found[path]
            if not isinstance(fact, FileFacts):  # it vanished after the check above
                refused.add(
                    InvalidArguments(f"hits[{index}].path", f"cannot read {quoted(answered_as)} ({fact.strerror})")
                )
                continue
            days, owner = fact
            hit = {"path": answered_as, "matches": checked.hits[index]["matches"], "last_modified_days": days}
            if owner is not None:
                hit["owner"] = owner
            hits.append(hit)
        refused.check()
        if len({hit["path"] for hit in hits}) < len(hits):  # (never, the checks above say; if so, worded)
            return rank({"hits": hits, "limit": checked.limit}), described.notes
        return ranked(hits, checked.limit, has_integral_floats=checked.has_integral_floats), described.notes


class Refusals:
    """The bad paths of one call, in input order: the first LISTED_PATHS kept, the rest counted."""

    def __init__(self) -> None:
        self.listed: list[InvalidArguments] = []
        self.unlisted = 0
        self.first_unlisted = ""

    def add(self, error: InvalidArguments) -> None:
        """One more bad path, after those added before it."""
        if len(self.listed) < LISTED_PATHS:
            self.listed.append(error)
        else:
            if not self.unlisted:
                self.first_unlisted = error.location
            self.unlisted += 1

    def check(self) -> None:
        """InvalidArguments naming every bad path so far, one line each, when there is one.

        One bad path is said exactly as it is alone; the lines after the first are in the
        message, so that the error's text is the lines and nothing else."""
        if not self.listed:
            return
        first, *others = self.listed
        lines = [first.message, *map(str, others)]
        if self.unlisted == 1:
            lines.append(f"... and 1 more bad path not listed: {self.first_unlisted}")
        elif self.unlisted:
            lines.append(f"... and {self.unlisted} more bad paths not listed, the first of them {self.first_unlisted}")
        raise InvalidArguments(first.location, "\n".join(lines))


def _lower_this_threads_priority() -> None:
    """Run this thread (and the gits it starts, which inherit it) at a lower priority, where the
    system allows one thread's to be set (Linux)."""
    if sys.platform == "linux":
        with contextlib.suppress(OSError, AttributeError):
            os.setpriority(os.PRIO_PROCESS, threading.get_native_id(), 10)
