"""`search_workspace` and `codescout search`: a pattern in, the workspace's matching files ranked out.

One call does what `rg --json --hidden --glob '!.git' ... PATTERN | codescout hits | codescout
rank` does by hand in the workspace (docs/workspace.md gives the whole command), with the same
results and counts: ripgrep counts each file's matches (`facts/rg.py`), the workspace's
facts give each file's age and owner (`facts/hits.py`, `workspace.Workspace`, one code path with
`codescout hits` and rank_workspace_hits), and the ranking rule orders them. Paths come back
relative to the workspace. It adds what the pipeline does not say: how many files the search
covered, and, when nothing matched, whether files the ignore rules leave out would have.

The folder is the boundary, whatever happens to it while a search runs:
* before ripgrep runs, the ignore files it will read are looked at (`facts/ignorefiles.py`): a
  bad one above the search is an error naming it, one below leaves its folder out, said in a note;
* ripgrep runs in the workspace folder as it was checked (`paths.pin`: by descriptor, where the
  system allows), confined by Linux's Landlock to reading beneath it (`system/sandbox.py`), and the
  folders from the workspace to the searched path are checked again after it ran: a search
  through a folder that became a link, or another folder, is refused, never answered.

At most SEARCHES_AT_ONCE searches run at once (the others wait in line, within their call's
time), each ripgrep held to its memory bound: what a server's searches can take is their product.
Only the files that can still reach the first `limit` are dated (`hits.top_ranked`). ripgrep runs
outside the workspace's lock, so a search never waits on another call's git; beside it, a thread
working for the same call reads what the dating will need (`Workspace.reading_ahead`: the index,
the status, a history kept by an earlier process), so that the two overlap.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Final

from codescout_mcp.answers import catalog, words
from codescout_mcp.answers.protocol import CALL_SECONDS
from codescout_mcp.core.contract import SEARCH_INPUT_SCHEMA, SEARCH_TOOL_NAME
from codescout_mcp.core.flatcheck import FlatChecker
from codescout_mcp.core.text import quoted, shown
from codescout_mcp.core.validate import InvalidArguments
from codescout_mcp.facts.git import GitError
from codescout_mcp.facts.gitfiles import RepositoryError
from codescout_mcp.facts.hits import located_counts, top_ranked
from codescout_mcp.facts.ignorefiles import Vetted
from codescout_mcp.facts.lookup import Lookup
from codescout_mcp.facts.rg import (
    Counted,
    OutOfMemory,
    Place,
    Search,
    SearchError,
    count_ignored,
    count_matches,
    rg_program,
)
from codescout_mcp.system.paths import LinkOnTheWay, Pin, pin
from codescout_mcp.system.platform import CURRENT, System
from codescout_mcp.system.processes import call_seconds, take_lock
from codescout_mcp.system.sandbox import Confinement, confine
from codescout_mcp.tools.callpaths import CallPaths
from codescout_mcp.tools.workspace import Workspace

logger = logging.getLogger("codescout")

CHECKER: Final = FlatChecker(SEARCH_INPUT_SCHEMA)
# The part of a call's time ripgrep may take; the rest is for git.
SEARCH_SECONDS: Final = 60.0
# How many searches run at once, in one server; more wait in line.
SEARCHES_AT_ONCE: Final = 4
# The longest pattern or glob, in bytes of UTF-8 (Windows: UTF-16 units, whose whole command
# line holds 32,767 of them).
MAX_ARGUMENT_BYTES: Final = 65_536
MAX_ARGUMENT_UNITS_WINDOWS: Final = 8_192
# Files outside the workspace a note names as matching, when the ignore rules left them out.
IGNORED_SHOWN: Final = 3


class SearchTool:
    """`search_workspace`: ripgrep's counts, the workspace's facts, the ranking rule."""

    name: Final = SEARCH_TOOL_NAME
    definition: Final = catalog.SEARCH_TOOL

    def __init__(self, workspace: Workspace, *, seconds: float = CALL_SECONDS, at_once: int = SEARCHES_AT_ONCE) -> None:
        self.workspace = workspace
        self.seconds = seconds  # how long one call may take, ripgrep and git included
        self.line = threading.BoundedSemaphore(at_once)

    def heavy(self, arguments: dict[str, Any]) -> bool:
        return True  # a search runs ripgrep: never on the event loop

    def call(self, arguments: dict[str, Any], *, cached_only: bool = False) -> dict[str, Any] | None:
        """The tool result: the ranking of the matching files, or a tool error naming the argument at fault."""
        if cached_only:
            return None
        try:
            answer, notes = self.search(arguments, Lookup(time.time(), seconds=call_seconds(self.seconds)))
        except InvalidArguments as error:
            return words.tool_error(str(error))
        except SearchError as error:
            return words.tool_error(f"{error.where}: {error}" if error.where else str(error))
        except (RepositoryError, GitError) as error:
            return self.workspace.unreadable(error)
        return words.tool_result(answer, notes)

    def search(self, arguments: object, lookup: Lookup) -> tuple[dict[str, Any], list[str]]:
        """The answer for the search in `arguments` and notes on it; InvalidArguments or SearchError
        naming what is wrong."""
        checked = CHECKER.validate(arguments)
        for name in ("pattern", "glob"):
            if isinstance(checked.get(name), str):
                _check_argument(name, checked[name], fixed=checked["fixed_strings"])
        check_confinable_ahead()
        search = Search(
            checked["pattern"],
            fixed_strings=checked["fixed_strings"],
            ignore_case=checked["ignore_case"],
            glob=checked.get("glob"),
        )
        root = str(self.workspace.root)
        with self.workspace.turn(lookup) as checkout:
            where = (
                CallPaths(self.workspace.root, checkout).place(checked["path"], "path") if "path" in checked else "."
            )
            main = checkout.main
            identity = self.workspace.identity
        with self.workspace.reading_ahead(lookup):
            vetted = self.workspace.ignore_files.vet(os.path.normpath(os.path.join(root, where)), main, lookup)
            with self._in_line(lookup), self._pinned(where, identity) as pinned:
                counted, ignored = self._count(search, where, vetted, pinned, lookup)
                _check_unchanged(root, where, pinned)
        with self.workspace.turn(lookup) as checkout:
            call = CallPaths(self.workspace.root, checkout)
            located, stats = located_counts(counted.counts, checkout, Path(root))
            ranking, dating_notes = top_ranked(
                located, stats, checkout=checkout, lookup=lookup, limit=checked["limit"], name_of=call.inside
            )
        for note in dating_notes:
            self.workspace.warn(note)
        ranking["search"] = {"files_searched": counted.files_searched}
        notes = list(vetted.notes) + [_ripgrep_said(line) for line in counted.said]
        if ignored is not None:
            ranking["search"]["ignored_files"] = len(ignored)
            notes += _ignored_note(ignored)
        elif not ranking["results"]:
            notes.append("Whether files the ignore rules leave out match could not be told in the time left.")
        return ranking, notes

    def _count(
        self, search: Search, where: str, vetted: Vetted, pinned: Pin, lookup: Lookup
    ) -> tuple[Counted, dict[str, int] | None]:
        """ripgrep's counts (confined, where the system allows), and when nothing matched, what the
        ignore rules left out that would (None: not known in the time left)."""
        confinement = _confinement(pinned, vetted)
        place = Place(
            f"/proc/self/fd/{pinned.fd}"
            if pinned.fd is not None and CURRENT.name == "linux"
            else str(self.workspace.root),
            where,
            excluded=tuple(vetted.excluded),
            confinement=confinement,
        )
        try:
            try:
                counted = count_matches(search, place, seconds=self._search_seconds(lookup))
            except OutOfMemory as error:
                raise SearchError(f"{error}; {_likely_cause(vetted)}") from None
            ignored = None
            if not counted.counts:
                with contextlib.suppress(SearchError):
                    ignored = {
                        _plain(path): count
                        for path, count in count_ignored(search, place, seconds=self._search_seconds(lookup)).items()
                    }
        finally:
            if confinement is not None:
                confinement.close()
        return counted, ignored

    def _search_seconds(self, lookup: Lookup) -> float:
        left = lookup.seconds_left(self.workspace.root)
        return SEARCH_SECONDS if left is None else min(left, SEARCH_SECONDS)

    @contextlib.contextmanager
    def _in_line(self, lookup: Lookup) -> Iterator[None]:
        """A turn among the searches that run at once, waited for within the call's time."""
        if not take_lock(self.line, lookup.seconds_left(self.workspace.root)):
            raise SearchError("other searches held every place for the whole time allowed; try again")
        try:
            yield
        finally:
            self.line.release()

    @contextlib.contextmanager
    def _pinned(self, where: str, identity: tuple[int, int] | None) -> Iterator[Pin]:
        """The workspace folder held open, checked to be the one the call looked at, and the path to search."""
        try:
            pinned = pin(str(self.workspace.root), where)
        except LinkOnTheWay as error:
            raise SearchError(f"{error} now; the search was not made", "path" if where != "." else None) from None
        except (OSError, ValueError):
            raise SearchError("the folder to search was moved or deleted as the search began; try again") from None
        try:
            root_steps = len(pinned.steps) - len([part for part in where.split("/") if part not in ("", ".")])
            if identity is not None and pinned.steps[root_steps - 1] != identity:
                raise SearchError("the workspace folder was replaced as the search began; try again")
            yield pinned
        finally:
            pinned.close()


def _confinement(pinned: Pin, vetted: Vetted) -> Confinement | None:
    """The search's sandbox: reads beneath the workspace, and the few files outside it ripgrep needs
    (None where there is none, or where ripgrep does not start in one: `confinable`)."""
    program = rg_program()
    if pinned.fd is None or not confinable(program):
        return None
    return confine(read_beneath=[pinned.fd], read_files=vetted.outside, run=[program])


_CONFINABLE: dict[str, bool] = {}
_CONFINABLE_LOCK = threading.Lock()


def check_confinable_ahead() -> None:
    """Start `confinable`'s one check of this process's ripgrep in a thread of its own, so that
    it overlaps the work a search does before ripgrep runs (the search waits for its answer)."""
    try:
        program = rg_program()
    except SearchError:
        return  # (the search says so itself)
    if program not in _CONFINABLE:
        threading.Thread(target=confinable, args=(program,), daemon=True, name="codescout-sandbox-check").start()


def confinable(program: str) -> bool:
    """Whether `program` starts and answers in a sandbox that lets it read nothing of the workspace
    (its libraries may be where the sandbox does not look: then searches run unconfined, and the
    check of their folders after each run is what guards them). Asked once per program, by one
    thread at a time."""
    with _CONFINABLE_LOCK:
        return _confinable(program)


def _confinable(program: str) -> bool:
    if program not in _CONFINABLE:
        import subprocess

        confinement = confine(read_beneath=[], read_files=[], run=[program])
        works = False
        if confinement is not None:
            try:
                done = subprocess.run(
                    [program, "--version"],
                    stdin=subprocess.DEVNULL,
                    capture_output=True,
                    preexec_fn=confinement.apply,
                    timeout=30,
                    check=False,
                )
                works = done.returncode == 0
            except (OSError, subprocess.SubprocessError):
                works = False
            finally:
                confinement.close()
            if not works:
                logger.warning("ripgrep does not start in a Landlock sandbox here; searches run without one")
        _CONFINABLE[program] = works
    return _CONFINABLE[program]


def _check_unchanged(root: str, where: str, pinned: Pin) -> None:
    """SearchError if a folder from the top to the searched path is not what it was when ripgrep
    started (a link now, or another folder): then ripgrep may have searched somewhere else."""
    try:
        again = pin(root, where)
    except OSError:
        again = None
    if again is not None:
        again.close()
    if again is None or again.steps != pinned.steps:
        raise SearchError(
            f"{shown(os.path.join(root, where))} changed while it was searched (a folder on the way was moved, "
            "or replaced by a link); nothing is answered from it: try again"
        )


def _ripgrep_said(line: str) -> str:
    """A note for what ripgrep said of trouble it searched past."""
    if "error building NFA" in line:
        return (
            "ripgrep could not build the rules of an ignore file it reads (too many, or too large once compiled), "
            "and searched as if they were not there"
        )
    return f"ripgrep said: {line}"


def _likely_cause(vetted: Vetted) -> str:
    """What to do when ripgrep ran out of memory: the pattern and glob are what the caller can
    change; the largest ignore file it reads is named, since a few kilobytes of rules can take
    gigabytes to build."""
    said = "narrow the pattern or glob"
    if vetted.largest is not None and vetted.largest[1] >= 4096:
        path, size = vetted.largest
        said += f", or look at {shown(path)}, the largest ignore file it reads ({size:,} bytes of rules)"
    return said


def _plain(path: str) -> str:
    return path[2:] if path.startswith("./") else path


def _ignored_note(ignored: dict[str, int]) -> list[str]:
    """What to tell of the files the ignore rules left out, when none they let through matched."""
    if not ignored:
        return []
    top = sorted(ignored, key=lambda path: (-ignored[path], path))[:IGNORED_SHOWN]
    named = ", ".join(f"{shown(path)} ({ignored[path]})" for path in top)
    files = "1 file" if len(ignored) == 1 else f"{len(ignored):,} files"
    return [
        f"No file the ignore rules let through matches, but {files} they leave out "
        f"{'does' if len(ignored) == 1 else 'do'}: {named}. To search one, pass it (or its folder) as path."
    ]


def _check_argument(name: str, value: str, *, fixed: bool, system: System = CURRENT) -> None:
    """InvalidArguments for a pattern or glob no search can take: a NUL or a lone surrogate (no
    command line carries them), a line break in the pattern, more than a command line holds."""
    if "\0" in value or _unpaired(value):
        raise InvalidArguments(name, f"{quoted(value)} holds a character no command line can carry")
    if name == "pattern" and ("\n" in value):
        said = "text" if fixed else "a pattern"
        raise InvalidArguments(name, f"holds a line break, and a search matches {said} within one line at a time")
    if system.windows:
        size, limit, unit = (
            len(value.encode("utf-16-le", "surrogatepass")) // 2,
            MAX_ARGUMENT_UNITS_WINDOWS,
            "characters",
        )
    else:
        size, limit, unit = len(value.encode("utf-8", "surrogatepass")), MAX_ARGUMENT_BYTES, "bytes"
    if size > limit:
        raise InvalidArguments(name, f"{size:,} {unit} long, more than the {limit:,} a search takes")


def _unpaired(text: str) -> bool:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False
