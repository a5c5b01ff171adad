"""ripgrep run on a workspace nobody vetted: the pattern as data, a fixed argument list, nothing it configures.

The search tool (`search.py`) asks ripgrep how many matches each file holds. Every rg started
here:

* is found as git is (`processes.find_program`: the one installed beside codescout first, then
  PATH's absolute folders, never the current folder) and run by its full path;
* gets `--no-config` (and no RIPGREP_CONFIG_PATH), so no config file adds options;
* gets the pattern as one `--regexp=...` argument and every path after `--`, so no pattern,
  glob or path can become an option; the three options that start programs (`--pre`,
  `--search-zip`, `--hostname-bin`) are never given, nor `--follow`;
* counts matches, not lines, and prints counts, not text (`--count-matches --null`), with
  `--stats` for how many files it searched;
* runs within a deadline and an output bound, ended with whatever it started when either
  passes (`processes.run_child`).

ripgrep's defaults decide what is searched: ignore files honoured, hidden and binary files
skipped, links not followed. Where `--count-matches` would count otherwise than `--json` (what
`codescout hits` reads), the search runs with `--json` instead, so the counts are always the
ones the pipeline would give: when `--stats` says more files matched than were printed (a file
that turned out binary after its first matches), and for a pattern that can match the empty
string (`--json` counts a matching line whose matches it cannot show once, `--count-matches`
not at all), which a probe of a few lines tells.
"""

from __future__ import annotations

import os
import re
import sysconfig
from typing import Final

from codescout_mcp.facts.ripgrep import RipgrepError, read_match_counts
from codescout_mcp.platform import CURRENT, System, decode_name
from codescout_mcp.processes import ChildOutputTooLarge, ChildTimeout, find_program, run_child

# The most ripgrep output read: counts are a path and a number each (95 KB for `the` on git's
# own repository); the --json fallback prints every matching line, so it gets more room.
COUNT_OUTPUT_BYTES: Final = 64 << 20
JSON_OUTPUT_BYTES: Final = 256 << 20
STATS: Final = re.compile(
    rb"(?:\A|\n)\n(\d+) matches\n(\d+) matched lines\n(\d+) files contained matches\n(\d+) files searched\n"
    rb"\d+ bytes printed\n\d+ bytes searched\n[\d.]+ seconds spent searching\n[\d.]+ seconds\n?\Z"
)


class SearchError(Exception):
    """A search that cannot be made or did not finish; `where` names the argument at fault, if one is."""

    def __init__(self, message: str, where: str | None = None) -> None:
        super().__init__(message)
        self.where = where


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

    def options(self) -> list[str]:
        """The options that say what to match, each one argument that cannot be read another way."""
        found = ["--fixed-strings"] if self.fixed_strings else []
        found += ["--ignore-case"] if self.ignore_case else []
        found += [f"--glob={self.glob}"] if self.glob is not None else []
        return [*found, f"--regexp={self.pattern}"]


class Counted:
    """What one search found: match counts by path (as ripgrep printed them) and how many files it searched."""

    __slots__ = ("counts", "files_searched")

    def __init__(self, counts: dict[str, int], files_searched: int) -> None:
        self.counts = counts
        self.files_searched = files_searched


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


def _environment() -> dict[str, str]:
    return {key: value for key, value in os.environ.items() if key != "RIPGREP_CONFIG_PATH"}


def count_matches(search: Search, where: str, *, cwd: str, seconds: float, system: System = CURRENT) -> Counted:
    """Match counts for `search` in `where` (a path relative to `cwd`), ripgrep's defaults deciding
    what is searched; SearchError when the search cannot be made or does not finish in `seconds`."""
    program = rg_program(system)
    base = [program, "--no-config", "--no-messages", "--color=never", "--with-filename", *search.options()]
    if not _matches_empty(base, seconds):
        argv = [*base, "--count-matches", "--null", "--stats", "--", where]
        out, files_searched, matched = _run(argv, cwd, seconds)
        counts = _counts(out, system)
        if matched == len(counts):
            return Counted(counts, files_searched)
    # Counted as --json counts (what `codescout hits` reads).
    out, files_searched, _ = _run([*base, "--json", "--", where], cwd, seconds, limit=JSON_OUTPUT_BYTES)
    return Counted(_counts(out, system), files_searched)


# Lines on which a pattern that can match the empty string does: line ends, word boundaries
# and the inside of a word.
PROBE: Final = b"\nab c\n_\n"
EMPTY_MATCH: Final = re.compile(rb'"start":(\d+),"end":\1[,}]')


def _matches_empty(base: list[str], seconds: float) -> bool:
    """Whether the pattern (and its options, in `base`) matches the empty string somewhere in PROBE."""
    import tempfile

    with tempfile.TemporaryDirectory(prefix="codescout-probe-") as folder:
        probe = os.path.join(folder, "probe.txt")
        with open(probe, "wb") as handle:
            handle.write(PROBE)
        out, _, _ = _run([*base, "--json", "--", probe], folder, seconds)
    return EMPTY_MATCH.search(out) is not None


def _run(argv: list[str], cwd: str, seconds: float, *, limit: int = COUNT_OUTPUT_BYTES) -> tuple[bytes, int, int]:
    """(output without its stats, files searched, files that matched) of one rg run."""
    try:
        status, out, err = run_child(argv, cwd=cwd, env=_environment(), seconds=seconds, limit=limit)
    except ChildTimeout:
        raise SearchError(f"the search did not finish within {seconds:.0f} s; narrow it with path or glob") from None
    except ChildOutputTooLarge:
        raise SearchError("the search matched more than codescout reads at once; narrow it with path or glob") from None
    except OSError as error:
        raise SearchError(f"cannot run ripgrep: {error.strerror or error}") from None
    if "--json" in argv:
        # The last event is the summary: {"type":"summary","data":{"stats":{"searches":N,...}}}.
        searched = _searched(out)
        if searched is None or status not in (0, 1, 2):
            raise _failure(err, status)
        return out, searched, 0
    stats = STATS.search(out)
    if stats is None or status not in (0, 1, 2):
        raise _failure(err, status)
    return out[: stats.start()], int(stats.group(4)), int(stats.group(3))


def _searched(out: bytes) -> int | None:
    """How many files a --json run searched, from its last event (the summary); None without one."""
    import json

    last = out.rstrip(b"\n").rpartition(b"\n")[2]
    try:
        summary = json.loads(last)
        searched = summary["data"]["stats"]["searches"] if summary.get("type") == "summary" else None
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
    return searched if type(searched) is int else None


def _counts(out: bytes, system: System) -> dict[str, int]:
    if not out.strip(b"\n"):
        return {}
    try:
        return read_match_counts(out, "ripgrep's output", system)
    except RipgrepError as error:
        raise SearchError(f"ripgrep printed what codescout cannot read: {error}") from None


def _failure(err: bytes, status: int) -> SearchError:
    """The error for an rg that did not search: a pattern or a glob it refused, or a failure."""
    text = decode_name(err).strip()
    last = next((line.strip() for line in reversed(text.splitlines()) if line.strip()), "")
    said = last.removeprefix("rg: ").removeprefix("error: ")
    if "regex parse error" in text or "the literal" in text:
        return SearchError(f"not a regular expression ripgrep reads ({said})", "pattern")
    if "error parsing glob" in text:
        return SearchError(f"not a glob ripgrep reads ({said.split(': ', 1)[-1]})", "glob")
    return SearchError(f"ripgrep failed (exit status {status}): {said or 'nothing said'}")


__all__ = ["Counted", "Search", "SearchError", "count_matches", "rg_program"]
