"""CODEOWNERS, read as GitHub reads it or as GitLab reads it.

GitHub: gitignore-style patterns, the last matching rule wins, a rule without owners
unowns, `docs/*` owns only the files directly in docs/; files of 3 MB or more are ignored.
Looked for in `.github/`, the root, `docs/` (the first found).

GitLab: the same rule within each section (`[Name]`, `^[Optional]`, `[Name][2]`, default
owners on the header line for the section's entries without owners; lines before the first
header form a section of their own); the owners of every section with a matching entry are
combined in file order, each owner once. Patterns are matched as Ruby's fnmatch does with
FNM_PATHNAME and FNM_DOTMATCH. Looked for in the root, `docs/`, `.gitlab/`.

Which one applies: `--codeowners github|gitlab`, else GitLab's when the file is
`.gitlab/CODEOWNERS` or holds section headers, else GitHub's. Lines a dialect does not
accept are skipped with one warning each.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from pathlib import Path
from typing import Final

from codescout_mcp.core.text import shown
from codescout_mcp.facts import Warn
from codescout_mcp.facts.globs import github_regex, gitlab_regex
from codescout_mcp.system.paths import MovedOutside, NotRegular, read_regular, relative_inside

# Whether a rule's pattern matches a path (a match object or None, as `re` answers).
Matcher = Callable[[str], object]

GITHUB_PLACES: Final = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
GITLAB_PLACES: Final = ("CODEOWNERS", "docs/CODEOWNERS", ".gitlab/CODEOWNERS")
CODEOWNERS_PLACES: Final = tuple(dict.fromkeys(GITHUB_PLACES + GITLAB_PLACES))  # every file either may read
GITHUB_MAX_BYTES: Final = 3 * 1024 * 1024

_GITHUB_OWNER: Final = re.compile(
    r"@[A-Za-z0-9][A-Za-z0-9-]*(?:_[A-Za-z0-9]+)?(?:/[A-Za-z0-9][\w.-]*)?|[^@\s]+@[^@\s]+\.[^@\s]+"
)
_GITLAB_OWNER: Final = re.compile(r"@@?[A-Za-z0-9_][\w.-]*(?:/[A-Za-z0-9_][\w.-]*)*|[^@\s]+@[^@\s]+\.[^@\s]+")
_TOKEN: Final = re.compile(r"(?:\\.|\S)+")
_SECTION: Final = re.compile(r"(\^)?\[([^\]]*)\](?:\[(\d+)\])?(?:\s+(.*))?")


class CodeOwners:
    """Owner lookups for one parsed CODEOWNERS file (or for none: nobody owns anything)."""

    def __init__(self, sections: list[list[tuple[Matcher, str | None]]]) -> None:
        # Each section: its rules in file order, as (matches path?, owners or None).
        self.sections = sections
        self._known: dict[str, str | None] = {}  # the rules never change: remember answers

    @classmethod
    def empty(cls) -> CodeOwners:
        return cls([])

    def owner_of(self, path: str) -> str | None:
        """The owners of `path`, joined by one space, or None if nobody owns it."""
        if path in self._known:
            return self._known[path]
        found = self._owner_of(path)
        if len(self._known) < 1_000_000:
            self._known[path] = found
        return found

    def _owner_of(self, path: str) -> str | None:
        owners: list[str] = []
        for rules in self.sections:
            for matches, rule_owners in reversed(rules):
                if matches(path):
                    for owner in (rule_owners or "").split():
                        if owner not in owners:
                            owners.append(owner)
                    break
        return " ".join(owners) or None


# Read no further than this in GitLab's dialect (GitLab names no limit; codescout keeps a
# hostile checkout from making it read without end).
GITLAB_MAX_BYTES: Final = 10 * 1024 * 1024

_PLACES_OF: Final = {"github": GITHUB_PLACES, "gitlab": GITLAB_PLACES}


def load_codeowners(root: Path, dialect: str | None, warn: Warn) -> CodeOwners:
    """The CODEOWNERS rules of the work tree at `root`, in the dialect given or detected.

    Only regular files inside the work tree are read (a committed symbolic link may point
    anywhere; a FIFO would block): anything else at a CODEOWNERS place is warned about and
    read as no rules.
    """
    read: dict[str, bytes | None] = {}
    real_root = os.path.realpath(root)

    def data_of(place: str) -> bytes | None:  # each file is read (and warned about) once
        if place not in read:
            read[place] = _read(real_root, place, GITLAB_MAX_BYTES, warn)
        return read[place]

    found = _first(root, GITHUB_PLACES if dialect != "gitlab" else GITLAB_PLACES)
    if dialect is None and found != ".github/CODEOWNERS":
        gitlab_found = _first(root, GITLAB_PLACES)
        if gitlab_found is not None and (
            gitlab_found == ".gitlab/CODEOWNERS" or _has_sections(data_of(gitlab_found) or b"")
        ):
            dialect, found = "gitlab", gitlab_found
    if found is None:
        if dialect is not None:
            _warn_none_in_places(root, dialect, warn)
        return CodeOwners.empty()
    data = data_of(found)
    if dialect == "gitlab":
        if data is None:
            warn(f"{found} is more than {GITLAB_MAX_BYTES} bytes, more than codescout reads; no owners are read")
            return CodeOwners.empty()
        return parse_gitlab(_text(data), found, warn)
    if data is None or len(data) >= GITHUB_MAX_BYTES:
        size = len(data) if data is not None else _size_of(root / found)
        warn(f"{found} is {size} bytes, over GitHub's 3 MB limit, so GitHub ignores it; no owners are read")
        return CodeOwners.empty()
    return parse_github(_text(data), found, warn)


def _size_of(path: Path) -> str:
    """A file's size in bytes, as text (the file was found too large to read whole)."""
    try:
        return str(os.stat(path).st_size)
    except OSError:
        return f"more than {GITLAB_MAX_BYTES}"


def _warn_none_in_places(root: Path, dialect: str, warn: Warn) -> None:
    places = _PLACES_OF[dialect]
    other = next((place for place in CODEOWNERS_PLACES if place not in places and os.path.lexists(root / place)), None)
    name = "GitHub" if dialect == "github" else "GitLab"
    found_else = f"; {other} is there, which {name} does not read" if other is not None else ""
    where = ", ".join(places)
    warn(f"--codeowners {dialect}: no CODEOWNERS in {name}'s places ({where}){found_else}; no owners are read")


def _first(root: Path, places: tuple[str, ...]) -> str | None:
    """The first place holding anything (a file, a link, a FIFO): what the host would read."""
    return next((place for place in places if os.path.lexists(root / place)), None)


def _read(real_root: str, place: str, limit: int, warn: Warn) -> bytes | None:
    """A CODEOWNERS file's bytes (None when over `limit`); b"" with a warning when it cannot be read."""
    real = os.path.realpath(os.path.join(real_root, place))
    if relative_inside(real, real_root) is None:
        warn(f"{place} is a link to {shown(real)}, outside the repository; it is not read, and no owners are read")
        return b""
    try:
        return read_regular(real, limit, inside=real_root)
    except MovedOutside as error:
        warn(f"{place} {error}; it is not read, and no owners are read")
    except NotRegular as error:
        warn(f"{place} is {error}; it is not read, and no owners are read")
    except OSError as error:
        warn(f"cannot read {place} ({error.strerror}); no owners are read")
    return b""


def _text(data: bytes) -> str:
    return data.decode("utf-8", "replace").removeprefix("\ufeff")


def _has_sections(data: bytes) -> bool:
    return any(_SECTION.fullmatch(line.strip()) for line in _text(data).splitlines())


def _tokens(line: str) -> tuple[str, list[str]]:
    """A rule's pattern and its owners; a `#` token starts a comment."""
    pattern, *rest = _TOKEN.findall(line)
    owners: list[str] = []
    for token in rest:
        if token.startswith("#"):
            break
        owners.append(token)
    return pattern, owners


# --- GitHub -----------------------------------------------------------------------------


def parse_github(text: str, name: str, warn: Warn) -> CodeOwners:
    """Rules from a CODEOWNERS file as GitHub reads it."""
    rules: list[tuple[Matcher, str | None]] = []
    for number, raw in enumerate(text.removeprefix("\ufeff").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        pattern, owners = _tokens(line)
        bad = next((owner for owner in owners if not _GITHUB_OWNER.fullmatch(owner)), None)
        problem = _github_unsupported(pattern, line)
        if problem is None and bad is not None:
            problem = f"{bad!r} is not a @user, @org/team or email owner"
        regex: re.Pattern[str] | None = None
        if problem is None:
            try:
                regex = github_regex(pattern)
            except ValueError as error:
                problem = f"invalid pattern {_pattern_shown(pattern)} ({error})"
            else:
                if regex is None:
                    problem = f"pattern {pattern!r} matches nothing"
        if problem is not None or regex is None:
            warn(f"{name}:{number}: {problem}; line skipped")
            continue
        rules.append((regex.search, " ".join(owners) or None))
    return CodeOwners([rules])


def _pattern_shown(pattern: str) -> str:
    """A pattern quoted for a warning, cut short when it is too long to be worth reading whole."""
    return repr(pattern) if len(pattern) <= 200 else repr(pattern[:200]) + "..."


def _github_unsupported(pattern: str, line: str) -> str | None:
    if _SECTION.fullmatch(line):
        return "a GitLab section header, which GitHub does not read (see --codeowners gitlab)"
    if pattern.startswith("!"):
        return "negation (!) is not supported in CODEOWNERS"
    if pattern.startswith("\\#"):
        return "escaping # is not supported in CODEOWNERS"
    if re.search(r"(?<!\\)\[", pattern):
        return "character ranges ([...]) are not supported in CODEOWNERS"
    return None


# --- GitLab -----------------------------------------------------------------------------


def parse_gitlab(text: str, name: str, warn: Warn) -> CodeOwners:
    """Rules from a CODEOWNERS file as GitLab reads it, section by section."""
    sections: dict[str, list[tuple[Matcher, str | None]]] = {"": []}
    current = ""
    defaults: list[str] = []  # the default owners on the current section's header line
    for number, raw in enumerate(text.removeprefix("\ufeff").splitlines(), 1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        header = _SECTION.fullmatch(line)
        if header is not None:
            title = header.group(2).strip()
            owners = _TOKEN.findall(header.group(4) or "")
            bad = next((o for o in owners if not _GITLAB_OWNER.fullmatch(o)), None)
            if not title or bad is not None:
                problem = "a section needs a name" if not title else f"{bad!r} is not a GitLab owner"
                warn(f"{name}:{number}: {problem}; line skipped, and its entries count in the section before")
                continue
            # Section names are not case-sensitive; sections of one name are one section.
            current = next((key for key in sections if key.casefold() == title.casefold() and key), title)
            sections.setdefault(current, [])
            defaults = owners
            continue
        pattern, owners = _tokens(line)
        bad = next((o for o in owners if not _GITLAB_OWNER.fullmatch(o)), None)
        if bad is not None:
            warn(f"{name}:{number}: {bad!r} is not a @user, @group, @@role or email owner; line skipped")
            continue
        owners = owners or defaults
        if not owners:
            warn(f"{name}:{number}: no owners, and the section has no default owners; line skipped")
            continue
        try:
            regex = gitlab_regex(_gitlab_pattern(pattern))
        except (ValueError, re.error) as error:
            warn(f"{name}:{number}: invalid pattern {_pattern_shown(pattern)} ({error}); line skipped")
            continue
        sections[current].append((regex.fullmatch, " ".join(owners)))
    return CodeOwners([rules for rules in sections.values() if rules])


def _gitlab_pattern(pattern: str) -> str:
    """GitLab's normalisation: anchored at the root with `/`, else anywhere; `dir/` = all in it.

    (An escaped `#` or space needs nothing here: the matcher reads `\\x` as a literal x.)
    """
    if not pattern.startswith("/"):
        pattern = "/**/" + pattern
    if pattern.endswith("/"):
        pattern += "**/*"
    return pattern
