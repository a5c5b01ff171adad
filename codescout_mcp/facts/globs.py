"""CODEOWNERS patterns as regular expressions that cannot backtrack: a lookup is never slow.

The usual translation of a glob (`[^/]*` for each `*`, `(?:.+/)?` for `**`) lets `re` try
every way of sharing a name out between the wildcards: `*a*a*a*a*a*a*a*a*a*a*b` against a
40-character name takes seconds, a few more stars take hours, and `re` holds the GIL all the
while (no other thread, no signal handler runs). Here each wildcard takes the leftmost fit
of what follows it and never gives it back. For globs that loses nothing: the text between
two wildcards has a fixed width, so if it fits anywhere it fits leftmost, leaving the most
room for the rest. `re` has no atomic groups before Python 3.11; a lookahead with a group
and a backreference to it, `(?=(X))\\1`, is one in every version.

With nothing given back, a lookup costs at most about len(path) x len(pattern) steps, and
MAX_PATTERN_CHARACTERS bounds the pattern: a whole CODEOWNERS of the worst patterns costs
milliseconds a path (bench: `codeowners`).

Two readings, one per host:

* `github_regex`: gitignore's rules as GitHub applies them (pathspec's GitIgnoreSpecPattern,
  which the tests keep as the oracle): a pattern without a slash but at its end matches at
  any depth, a match also owns everything below it, `**` spans folders; and GitHub's own
  rule that `docs/*` owns only the files directly in docs/. Search with `.search(path)`.
* `gitlab_regex`: Ruby's `File.fnmatch` with FNM_PATHNAME and FNM_DOTMATCH, after GitLab's
  normalisation (see `codeowners._gitlab_pattern`): `**/` spans folders only as a whole
  segment, character sets `[...]`, the whole path matched. Match with `.fullmatch(path)`.
"""

from __future__ import annotations

import itertools
import re
from typing import Final

# A pattern longer than this is not matched (a warning says so): no real path pattern is
# this long, and the bound keeps the worst lookup within milliseconds.
MAX_PATTERN_CHARACTERS: Final = 4096

_ANY_SEGMENTS: Final = object()  # `**` as a whole segment: zero or more folders


class _Groups:
    """Names the capture groups that the atomic lookaheads use (named, since the groups of
    inner pieces are made before those of the runs around them)."""

    def __init__(self) -> None:
        self._numbers = itertools.count(1)

    def atomic(self, inner: str) -> str:
        """`inner`, matched at its first fit and never tried another way."""
        name = f"a{next(self._numbers)}"
        return f"(?=(?P<{name}>{inner}))(?P={name})"


_NEVER: Final = "(?!)"  # what a set that can match nothing becomes


def _github_atoms(glob: str) -> list[str | None]:
    """A GitHub segment glob's atoms: a regex per character matched, None per `*`."""
    atoms: list[str | None] = []
    i = 0
    while i < len(glob):
        char = glob[i]
        if char == "\\":
            if i + 1 == len(glob):
                raise ValueError("it ends in an escape (\\) with nothing to escape")
            i += 1
            atoms.append(re.escape(glob[i]))
        else:
            atoms.append(None if char == "*" else "[^/]" if char == "?" else re.escape(char))
        i += 1
    return atoms


def _gitlab_segments(pattern: str) -> list[tuple[str, list[str | None]]]:
    """A GitLab pattern's segments as (text, atoms), read as Ruby's `File.fnmatch` reads them.

    `\\` makes the next character literal (`\\/` still separates folders, and a `\\` at the
    very end is dropped); a `[...]` set may hold a `/` and is one atom (`_ruby_set`). The
    text is the segment as written, escapes and all.
    """
    segments: list[tuple[str, list[str | None]]] = []
    atoms: list[str | None] = []
    start = i = 0
    while i < len(pattern):
        char = pattern[i]
        if char == "/" or (char == "\\" and pattern[i + 1 : i + 2] == "/"):
            segments.append((pattern[start:i], atoms))
            atoms = []
            i += 1 if char == "/" else 2
            start = i
        elif char == "\\":
            if i + 1 < len(pattern):
                atoms.append(re.escape(pattern[i + 1]))
            i += 2
        elif char == "[":
            regex, i = _ruby_set(pattern, i + 1)
            atoms.append(regex)
        else:
            atoms.append(None if char == "*" else "[^/]" if char == "?" else re.escape(char))
            i += 1
    segments.append((pattern[start:], atoms))
    return segments


def _ruby_set(pattern: str, start: int) -> tuple[str, int]:
    """The `[...]` set whose members start at `start`: (its regex, the index after its `]`).

    As Ruby reads one: `!` or `^` first negates it; `\\` makes the next character a member;
    `a-z` is a range, and one whose ends are the wrong way round holds just its two ends; `[]`
    is empty (it matches nothing; `[!]`, anything); a set with no `]` matches nothing (nor,
    then, does the pattern). It never matches `/`.
    """
    end = len(pattern)
    i = start
    negate = pattern[i : i + 1] in ("!", "^")
    i += negate
    members: list[str] = []
    while True:
        if i >= end:
            return _NEVER, end
        if pattern[i] == "]":
            break
        first = i + 1 if pattern[i] == "\\" else i
        if first + 1 >= end:  # no `]` can follow
            return _NEVER, end
        low, i = pattern[first], first + 1
        if pattern[i] == "-" and pattern[i + 1 : i + 2] != "]":
            last = i + 2 if pattern[i + 1 : i + 2] == "\\" else i + 1
            if last >= end:
                return _NEVER, end
            high, i = pattern[last], last + 1
            if low <= high:
                members.append(f"{re.escape(low)}-{re.escape(high)}")
            else:
                members += [re.escape(low), re.escape(high)]
        else:
            members.append(re.escape(low))
    if not members:
        return ("[^/]" if negate else _NEVER), i + 1
    return f"(?!/)[{'^' if negate else ''}{''.join(members)}]", i + 1


def _segment(atoms: list[str | None], groups: _Groups) -> str:
    """A regex for one path segment, ending at the segment's end."""
    pieces: list[list[str]] = [[]]
    for atom in atoms:
        if atom is None:
            if pieces[-1] or len(pieces) == 1:  # stars in a row are one star
                pieces.append([])
        else:
            pieces[-1].append(atom)
    if len(pieces) == 1:
        return "".join(pieces[0]) + "(?![^/])"
    out = ["".join(pieces[0])]
    for middle in pieces[1:-1]:
        out.append(groups.atomic("[^/]*?" + "".join(middle)))
    # The last piece ends where the segment does: one place only, found once.
    out.append(groups.atomic("[^/]*?" + "".join(pieces[-1]) + "(?![^/])"))
    return "".join(out)


def _runs(segments: list[list[str | None] | object], groups: _Groups) -> list[str | object]:
    """Segments (atoms, or `**`) as regexes, with the segments between `**`s joined into runs by `/`."""
    runs: list[str | object] = []
    current: list[str] = []
    for segment in segments:
        if segment is _ANY_SEGMENTS:
            if current:
                runs.append("/".join(current))
                current = []
            runs.append(_ANY_SEGMENTS)  # two in a row are one: `_sequence` reads only the runs between
        else:
            assert isinstance(segment, list)
            current.append(_segment(segment, groups))
    if current:
        runs.append("/".join(current))
    return runs


def _sequence(runs: list[str | object], groups: _Groups, *, end: str) -> str:
    """The regex for runs separated by `**`, from the path's start; `end` follows the last run.

    Every run but the last takes its leftmost place (atomically); the last tries each place it
    fits, right to left, until `end` holds too: one level of trying, so still no blow-up.
    """
    out = ["^"]
    leading = bool(runs) and runs[0] is _ANY_SEGMENTS
    body = [run for run in runs if run is not _ANY_SEGMENTS]
    for index, run in enumerate(body):
        assert isinstance(run, str)
        if index == 0 and not leading:
            out.append(run)
        elif index == len(body) - 1:
            out.append(("(?:[^/]*/)*" if index == 0 else "(?:/[^/]*)*/") + run)
        else:
            out.append(groups.atomic(("(?:[^/]*/)*?" if index == 0 else "(?:/[^/]*)*?/") + run))
    out.append(end)
    return "".join(out)


def _check_length(pattern: str) -> None:
    if len(pattern) > MAX_PATTERN_CHARACTERS:
        raise ValueError(f"longer than {MAX_PATTERN_CHARACTERS} characters, more than codescout matches")


def github_regex(pattern: str) -> re.Pattern[str] | None:
    """The regex (for `.search`) of a GitHub CODEOWNERS pattern; None if it matches nothing.

    ValueError when the pattern is invalid. Character sets are not GitHub's: `[` is a
    literal here (the caller warns about such patterns before they get this far).
    """
    _check_length(pattern)
    if pattern == "/":
        return None
    segments: list[str | object] = list(pattern.split("/"))
    folder_only = segments[-1] == ""
    original = pattern.rstrip("/").split("/")
    # After `**` the rule changes nothing: that `*` can always take the path's last segment.
    direct_children_only = len(original) >= 2 and original[-1] == "*"
    if segments[0] == "":
        del segments[0]  # anchored at the root
    elif len(segments) == 1 or (len(segments) == 2 and segments[1] == ""):
        segments.insert(0, "**")  # a bare name matches at any depth (`**` twice is `**` once)
    if not segments:
        raise ValueError("it is empty once its slashes are read")
    if segments[-1] == "":
        segments[-1] = "**"
    parsed = [_ANY_SEGMENTS if segment == "**" else _github_atoms(str(segment)) for segment in segments]
    groups = _Groups()
    runs = _runs(parsed, groups)
    if all(run is _ANY_SEGMENTS for run in runs):  # `**` alone, or `**/`: everything (below the root, for `**/`)
        return re.compile("/" if folder_only else "")
    if direct_children_only:
        end = "/[^/]+$" if folder_only else "$"
    elif runs[-1] is _ANY_SEGMENTS:
        end = "/"  # something below must follow
    else:
        end = "(?:/|$)"  # the file itself, or anything below it
    return re.compile(_sequence(runs, groups, end=end), re.DOTALL)


def gitlab_regex(pattern: str) -> re.Pattern[str]:
    """The regex (for `.fullmatch`) of a normalised GitLab pattern, which starts with `/`.

    ValueError when the pattern is invalid. `**` spans folders only as a whole segment with
    a `/` after it; anywhere else it is `*`.
    """
    _check_length(pattern)
    found = _gitlab_segments(pattern.removeprefix("/"))
    segments: list[list[str | None] | object] = [
        _ANY_SEGMENTS if text == "**" and index < len(found) - 1 else atoms for index, (text, atoms) in enumerate(found)
    ]
    groups = _Groups()
    runs = _runs(segments, groups)
    return re.compile(_sequence(runs, groups, end="$"), re.DOTALL)
