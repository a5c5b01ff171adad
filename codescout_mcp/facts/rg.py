"""ripgrep run on a workspace nobody vetted: the pattern as data, a fixed argument list, nothing it configures.

The search tool (`rg.py`) asks ripgrep how many matches each file holds. Every rg started
here:

* is found as git is (`programs.find_program`: the one installed beside codescout first, then
  PATH's absolute folders, never the current folder) and run by its full path;
* gets `--no-config` (and no RIPGREP_CONFIG_PATH), so no config file adds options;
* gets the pattern as one `--regexp=...` argument and every path after `--`, so no pattern,
  glob or path can become an option; the three options that start programs (`--pre`,
  `--search-zip`, `--hostname-bin`) are never given, nor `--follow`;
* runs in the folder the caller checked (`Place`: on Linux by its open descriptor, so a name
  changed since leads nowhere else), confined by the caller's sandbox where there is one;
* is held to RIPGREP_DATA_BYTES of memory, with its regex and DFA size limits well inside it,
  and to a deadline, ended with whatever it started when either passes.

What is searched: files ripgrep's ignore rules let through, hidden ones included, without the
version-control folders (`--hidden` and a `!` glob for each of VCS_FOLDERS, as the hosts' own
grep tools search), binary files skipped, links not followed. The counts are those of `rg
--json` (what `codescout hits` reads: each matching line counts its submatches, or 1 when it
lists none), read as they stream (`ripgrep.JsonCounter`), never held whole. How many files were
searched comes from `rg --files` with the same filters, run beside the search: ripgrep's JSON
summary counts only the files that matched.
"""

from __future__ import annotations

import os
import sysconfig
import threading
from typing import Final

from codescout_mcp.facts.rgcounts import JsonCounter, RipgrepError, TooManyFiles
from codescout_mcp.system.platform import CURRENT, System, decode_name
from codescout_mcp.system.processes import ChildTimeout, StreamedChild
from codescout_mcp.system.programs import find_program
from codescout_mcp.system.sandbox import Confinement

# The folders of version-control systems: never searched, as the hosts' own grep leaves them out.
VCS_FOLDERS: Final = (".git", ".svn", ".hg", ".bzr", ".jj", ".sl")
# The most memory a ripgrep may take for its data; its compiled regex and each thread's DFA are
# held well inside it, so that a pattern too large is an error that names it, not a crash.
RIPGREP_DATA_BYTES: Final = 256 << 20
REGEX_SIZE_LIMIT: Final = "32M"
DFA_SIZE_LIMIT: Final = "8M"
# What a search holds of its matches: a count per file, for at most this many files and bytes of names.
MAX_FILES: Final = 50_000
MAX_NAME_BYTES: Final = 8 << 20
# How much of ripgrep's output is read at once.
READ_BYTES: Final = 1 << 20


class SearchError(Exception):
    """A search that cannot be made or did not finish; `where` names the argument at fault, if one is."""

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.where = where


class OutOfMemory(SearchError):
    """A ripgrep that needed more memory than a search may use."""


class Search:
    """What to search for, as the search tool's arguments say it."""

    __slots__ = ("fixed_strings", "glob", "ignore_case", "pattern")

    def __init__(
        self, pattern: str, *, fixed_strings: bool = False, ignore_case: bool = False, glob: str | None = None
    ) -> None:
        self.pattern = pattern
        self.fixed_strings = fixed_strings
        self.ignore_case = ignore_case
        self.glob = glob

    def matching(self) -> list[str]:
        """The options that say what to match, each one argument that cannot be read another way."""
        found = ["--fixed-strings"] if self.fixed_strings else []
        found += ["--ignore-case"] if self.ignore_case else []
        return [*found, f"--regexp={self.pattern}"]


class Place:
    """Where a search runs: the folder ripgrep works in (`cwd`), the path it searches relative to
    it (`where`), folders to leave out (relative to `cwd`, `/`-separated), and its sandbox."""

    __slots__ = ("confinement", "cwd", "excluded", "where")

    def __init__(
        self, cwd: str, where: str, *, excluded: tuple[str, ...] = (), confinement: Confinement | None = None
    ) -> None:
        self.cwd = cwd
        self.where = where
        self.excluded = excluded
        self.confinement = confinement


class Counted:
    """What one search found: match counts by path (as ripgrep printed them), how many files it
    searched, and what ripgrep said of trouble it searched past (an ignore file whose rules it
    could not build, say), a line each."""

    __slots__ = ("counts", "files_searched", "said")

    def __init__(self, counts: dict[str, int], files_searched: int, said: list[str] | None = None) -> None:
        self.counts = counts
        self.files_searched = files_searched
        self.said = said or []


def rg_program(system: System = CURRENT) -> str:
    """The rg to run, as a full path; SearchError naming what to install when there is none."""
    bundled = os.path.join(sysconfig.get_path("scripts"), "rg.exe" if system.windows else "rg")
    if os.path.isfile(bundled) and os.access(bundled, os.X_OK):
        return bundled
    found = find_program("rg", system)
    if found is None:
        raise SearchError(
            "ripgrep is not installed: install it (`pip install ripgrep`, or your system's `ripgrep` package) "
            "and start the server again"
        )
    return found


def glob_literal(path: str) -> str:
    """`path` as a glob that matches it alone: each character a glob reads specially in a class of its own."""
    return "".join(f"[{char}]" if char in "[]*?{}\\" else char for char in path)


def filters(search: Search, place: Place, *, ignore_rules: bool = True) -> list[str]:
    """The options that say which files are searched: hidden ones too, the caller's glob, never
    a version-control folder nor a folder left out; the ignore rules, unless `ignore_rules` is False."""
    found = ["--hidden"] + ([] if ignore_rules else ["--no-ignore"])
    found += [f"--glob={search.glob}"] if search.glob is not None else []
    # After the caller's glob: a later glob outranks an earlier one.
    found += [f"--glob=!{name}" for name in VCS_FOLDERS]
    found += [f"--glob=!/{glob_literal(folder)}/" for folder in place.excluded]
    return found


def command(program: str, search: Search, place: Place, *, ignore_rules: bool = True) -> list[str]:
    """The search's rg command line: JSON events for the matches."""
    return [
        *(program, "--no-config", "--color=never", "--json"),
        *(f"--regex-size-limit={REGEX_SIZE_LIMIT}", f"--dfa-size-limit={DFA_SIZE_LIMIT}"),
        *filters(search, place, ignore_rules=ignore_rules),
        *search.matching(),
        *("--", place.where),
    ]


def listing(program: str, search: Search, place: Place) -> list[str]:
    """The rg command line that lists the files the search covers (one NUL after each)."""
    return [program, "--no-config", "--no-messages", "--files", "--null", *filters(search, place), "--", place.where]


def _environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "RIPGREP_CONFIG_PATH"}


def count_matches(search: Search, place: Place, *, seconds: float, system: System = CURRENT) -> Counted:
    """Match counts for `search` in `place`, and how many files it covered; SearchError when the
    search cannot be made, matches more files than are held at once, or does not finish in `seconds`."""
    program = rg_program(system)
    files = _FileCount(listing(program, search, place), place, seconds)
    said: list[str] = []
    try:
        counts = _run(command(program, search, place), place, seconds, system, said)
        searched = files.result()
    finally:
        files.close()
    return Counted(counts, searched, said)


def count_ignored(search: Search, place: Place, *, seconds: float, system: System = CURRENT) -> dict[str, int]:
    """Match counts for `search` in `place` with no ignore rules at all (hidden files and the
    folders left out stay out): what a search that found nothing would find if they were off."""
    return _run(command(rg_program(system), search, place, ignore_rules=False), place, seconds, system)


def _start(argv: list[str], place: Place, seconds: float) -> StreamedChild:
    try:
        return StreamedChild(
            argv,
            cwd=place.cwd,
            env=_environment(),
            seconds=seconds,
            data_bytes=RIPGREP_DATA_BYTES,
            confinement=place.confinement,
        )
    except OSError as error:
        raise SearchError(f"cannot run ripgrep: {error.strerror or error}") from None


def _run(
    argv: list[str], place: Place, seconds: float, system: System, said: list[str] | None = None
) -> dict[str, int]:
    """The match counts of one `rg --json` run, read as they stream; what ripgrep said of trouble
    it searched past (it then ends with status 2) goes to `said`."""
    child = _start(argv, place, seconds)
    counter = JsonCounter(max_files=MAX_FILES, max_name_bytes=MAX_NAME_BYTES, system=system)
    try:
        try:
            while chunk := child.read(READ_BYTES):
                counter.feed(chunk)
            status, err = child.finish()
            counts = counter.counts()
        except ChildTimeout:
            raise SearchError(
                f"the search did not finish within {seconds:.0f} s; narrow it with path or glob"
            ) from None
        except TooManyFiles as error:
            raise SearchError(
                f"the search matched {error}, more than codescout ranks at once; narrow it with path or glob"
            ) from None
        except RipgrepError as error:
            raise SearchError(f"ripgrep printed what codescout cannot read: {error}") from None
    finally:
        child.close()
    if status not in (0, 1) and not (status == 2 and counter.summarised):
        raise failure(err, status)
    if said is not None:
        said += [line for line in _messages(err) if not line.startswith(QUIET_MESSAGES)][:SAID_LINES]
    return counts


# What ripgrep says that the answer says already (no file searched: files_searched is 0).
QUIET_MESSAGES: Final = ("No files were searched", "Running with --debug")
# The most lines of what ripgrep said that an answer passes on.
SAID_LINES: Final = 3


def _messages(err: bytes) -> list[str]:
    return [line.strip().removeprefix("rg: ") for line in decode_name(err).splitlines() if line.strip()]


class _FileCount:
    """`rg --files` beside the search, counting the files it lists as they come (a thread of its own)."""

    def __init__(self, argv: list[str], place: Place, seconds: float) -> None:
        self.child = _start(argv, place, seconds)
        self.count = 0
        self.error: BaseException | None = None
        self.status: int | None = None
        self.err = b""
        self.thread = threading.Thread(target=self._read, daemon=True, name="codescout-rg-files")
        self.thread.start()

    def _read(self) -> None:
        try:
            while chunk := self.child.read(READ_BYTES):
                self.count += chunk.count(b"\0")
            self.status, self.err = self.child.finish()
        except BaseException as error:  # handed to the caller by `result`
            self.error = error

    def result(self) -> int:
        """How many files the listing named; SearchError if it did not finish."""
        self.thread.join()
        if isinstance(self.error, ChildTimeout):
            raise SearchError("the search did not finish within the time allowed; narrow it with path or glob")
        if self.error is not None:
            raise self.error
        if self.status not in (0, 1, 2):
            raise failure(self.err, self.status or 0)
        return self.count

    def close(self) -> None:
        self.child.close()
        self.thread.join()


def failure(err: bytes, status: int) -> SearchError:
    """The error for an rg that did not search: a pattern or a glob it refused, or a failure."""
    text = decode_name(err).strip()
    last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
    said = last.removeprefix("rg: ").removeprefix("error: ")
    first = next((line.strip() for line in text.splitlines() if line.strip()), "").removeprefix("rg: ")
    if 'the literal "\\n" is not allowed' in text:
        return SearchError("matches a line break, and a search matches within one line at a time", "pattern")
    if "compiled regex exceeds size limit" in text:
        return SearchError(
            f"too large a regular expression: compiled, it passes ripgrep's {REGEX_SIZE_LIMIT}B limit; use fewer "
            "alternatives or repetitions",
            "pattern",
        )
    if "regex parse error" in text or "the literal" in text:
        return SearchError(f"not a regular expression ripgrep reads ({said})", "pattern")
    if "error parsing glob" in text:
        return SearchError(f"not a glob ripgrep reads ({said.split(': ', 1)[-1]})", "glob")
    if "error building NFA" in text:  # the globs (the caller's, and the ignore files') built too large
        return SearchError(
            "ripgrep could not build its globs (the glob given, or the rules of the ignore files it reads, "
            "are too many or too large once compiled); use a simpler glob"
        )
    if "memory allocation" in text or status in (-6, 134):
        return OutOfMemory(
            f"ripgrep needed more than the {RIPGREP_DATA_BYTES >> 20} MiB of memory a search may use "
            f"({first or 'it was stopped'})"
        )
    return SearchError(f"ripgrep failed (exit status {status}): {said or 'nothing said'}")


__all__ = [
    "VCS_FOLDERS",
    "Counted",
    "OutOfMemory",
    "Place",
    "Search",
    "SearchError",
    "count_ignored",
    "count_matches",
    "rg_program",
]
