"""`codescout hits`: turn what ripgrep printed, plus git's history and CODEOWNERS, into arguments.

It runs no search itself: the user runs ripgrep. For each matched file it works out
* matches: the submatches ripgrep reported (from `rg --json`) or its count (`rg --count-matches`);
* last_modified_days: whole days since the file's last commit (one `git log` pass for all
  files); 0 when it has uncommitted changes; its filesystem time when git does not track it;
* owner: the owners of the last CODEOWNERS rule matching it, as GitHub reads that file.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any, Final

if TYPE_CHECKING:
    from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

    Rule = tuple[GitIgnoreSpecPattern, bool, str | None]

SECONDS_PER_DAY: Final = 86_400
CODEOWNERS_LOCATIONS: Final = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")

Warn = Callable[[str], None]


class HitsError(Exception):
    """Input or a repository the companion cannot use; printed as one line, exit status 1."""


# --- what ripgrep printed ------------------------------------------------------------------


def read_match_counts(data: bytes, source: str) -> dict[str, int]:
    """Match counts per path, in first-seen order, from `rg --json` or `rg --count-matches` output."""
    lines = data.splitlines()
    first = next((line.strip() for line in lines if line.strip()), b"")
    if not first:
        raise HitsError(f"{source}: no input; pipe in the output of `rg --json PATTERN`")
    counts = _from_json_stream(lines, source) if first.startswith(b"{") else _from_count_lines(lines, source)
    if not counts:
        raise HitsError(f"{source}: the ripgrep output holds no matches, so there is nothing to rank")
    return counts


def _from_json_stream(lines: list[bytes], source: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            event = json.loads(line)
        except (ValueError, RecursionError):
            raise HitsError(f"{source}: line {number}: not a ripgrep --json event (invalid JSON)") from None
        if not isinstance(event, dict) or not isinstance(event.get("type"), str):
            raise HitsError(f'{source}: line {number}: not a ripgrep --json event (no "type")')
        if event["type"] != "match":
            continue  # begin, end, context and summary carry nothing the ranking needs
        data = event.get("data")
        submatches = data.get("submatches") if isinstance(data, dict) else None
        path = _event_path(data.get("path") if isinstance(data, dict) else None)
        if path is None or not isinstance(submatches, list):
            raise HitsError(f"{source}: line {number}: a match event without a path and submatches")
        # A match event is one line; a line can hold several matches. An empty list still
        # means the line matched (ripgrep's multiline quirks), so it counts once.
        counts[path] = counts.get(path, 0) + max(1, len(submatches))
    return counts


def _event_path(value: object) -> str | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("text"), str):
        text: str = value["text"]
        return text
    if isinstance(value.get("bytes"), str):
        # A path that is not UTF-8: ripgrep sends its bytes in base64.
        try:
            return os.fsdecode(base64.b64decode(value["bytes"], validate=True))
        except ValueError:
            return None
    return None


def _from_count_lines(lines: list[bytes], source: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for number, raw in enumerate(lines, 1):
        line = raw.rstrip(b"\r")
        if not line.strip():
            continue
        # `--null` puts a NUL after the path; otherwise the count follows the last colon.
        path_bytes, sep, count_bytes = line.rpartition(b"\0") if b"\0" in line else line.rpartition(b":")
        if not sep or not path_bytes:
            raise HitsError(
                f"{source}: line {number}: expected PATH:COUNT from `rg --count-matches` "
                "(with one file, add --with-filename)"
            )
        try:
            count = int(count_bytes)
        except ValueError:
            raise HitsError(f"{source}: line {number}: {count_bytes[:40]!r} is not a match count") from None
        if count < 0:
            raise HitsError(f"{source}: line {number}: a negative match count")
        if count:
            path = os.fsdecode(path_bytes)
            counts[path] = counts.get(path, 0) + count
    return counts


# --- git ------------------------------------------------------------------------------------


def _git(root: Path, *args: str) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        ["git", "--no-optional-locks", "-c", "core.quotepath=off", "-C", str(root), *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
    )


def repository_root(repo: str | None) -> Path | None:
    """The git work tree to use: --repo's (which must be one), else the current one, else None."""
    where = Path(repo) if repo is not None else Path.cwd()
    if repo is not None and not where.is_dir():
        raise HitsError(f"--repo {repo}: no such directory")
    try:
        proc = _git(where, "rev-parse", "--show-toplevel")
        out, _ = proc.communicate()
    except FileNotFoundError:
        if repo is not None:
            raise HitsError("git is not installed, and --repo needs it") from None
        return None
    if proc.returncode != 0:
        if repo is not None:
            raise HitsError(f"--repo {repo}: not a git repository")
        return None
    return Path(os.fsdecode(out.rstrip(b"\n")))


def last_commit_times(root: Path, wanted: set[str]) -> dict[str, int]:
    """Commit time of the newest commit touching each wanted path: one `git log`, stopped early."""
    found: dict[str, int] = {}
    if not wanted:
        return found
    proc = _git(root, "log", "-z", "--format=%x00%ct", "--name-only", "--no-renames", "HEAD", "--")
    assert proc.stdout is not None
    try:
        for when, name in _log_entries(proc.stdout):
            if name in wanted and when > found.get(name, -1):
                found[name] = when
                if len(found) == len(wanted):
                    break
    finally:
        proc.kill()
        proc.communicate()
    return found


def _log_entries(stream: IO[bytes]) -> Iterator[tuple[int, str]]:
    """(commit time, path) pairs from `git log -z --format=%x00%ct --name-only`.

    Each commit reads NUL, its time, NUL, newline, then its paths, each ending in NUL. A path
    is never empty, so an empty field always announces the next commit's time.
    """
    pending = b""
    when = 0
    expect_time = False
    for chunk in iter(lambda: stream.read(1 << 16), b""):
        fields = (pending + chunk).split(b"\0")
        pending = fields.pop()
        for field in fields:
            if expect_time:
                when = int(field)
                expect_time = False
            elif not field:
                expect_time = True
            else:
                yield when, os.fsdecode(field.removeprefix(b"\n"))


def uncommitted_paths(root: Path) -> tuple[set[str], set[str]]:
    """(paths with uncommitted changes, untracked paths), from one `git status`."""
    proc = _git(root, "status", "--porcelain=v1", "-z", "--untracked-files=all")
    out, err = proc.communicate()
    if proc.returncode != 0:
        raise HitsError(f"git status failed in {root}: {os.fsdecode(err).strip()}")
    changed: set[str] = set()
    untracked: set[str] = set()
    fields = iter(out.split(b"\0"))
    for field in fields:
        if len(field) < 4:
            continue
        state, name = field[:2], os.fsdecode(field[3:])
        if state == b"??":
            untracked.add(name)
        elif state != b"!!":
            changed.add(name)
            if state[:1] in b"RC":
                next(fields, None)  # the rename's or copy's source path
    return changed, untracked


# --- CODEOWNERS -----------------------------------------------------------------------------

_OWNER = re.compile(r"@[A-Za-z0-9][A-Za-z0-9-]*(?:/[A-Za-z0-9][\w.-]*)?|[^@\s]+@[^@\s]+\.[^@\s]+")
_TOKEN = re.compile(r"(?:\\.|\S)+")


class CodeOwners:
    """GitHub's reading of a CODEOWNERS file: gitignore-style patterns, the last match wins."""

    def __init__(self, rules: list[Rule]) -> None:
        self.rules = rules

    @classmethod
    def parse(cls, text: str, name: str, warn: Warn) -> CodeOwners:
        from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

        rules: list[Rule] = []
        for number, raw in enumerate(text.splitlines(), 1):
            line = raw.strip()
            if not line or line.startswith("#"):
                continue
            pattern, *rest = _TOKEN.findall(line)
            owners: list[str] = []
            for token in rest:
                if token.startswith("#"):
                    break  # the rest of the line is a comment
                owners.append(token)
            problem = _unsupported(pattern) or next(
                (
                    f"{owner!r} is not a @user, @org/team or email owner"
                    for owner in owners
                    if not _OWNER.fullmatch(owner)
                ),
                None,
            )
            compiled: GitIgnoreSpecPattern | None = None
            if problem is None:
                try:
                    compiled = GitIgnoreSpecPattern(pattern)
                except ValueError as error:
                    problem = f"invalid pattern {pattern!r} ({error})"
                else:
                    if compiled.include is None:
                        problem = f"pattern {pattern!r} matches nothing"
            if problem is not None or compiled is None:
                warn(f"{name}:{number}: {problem}; line skipped")
                continue
            # GitHub: `docs/*` owns the files directly in docs/, not those in its subfolders.
            direct_children_only = pattern.endswith("/*")
            rules.append((compiled, direct_children_only, " ".join(owners) or None))
        return cls(rules)

    def owner_of(self, path: str) -> str | None:
        """The owners of the last rule matching `path`, joined by a space; None if unowned."""
        parent = path.rsplit("/", 1)[0] if "/" in path else ""
        for compiled, direct_children_only, owners in reversed(self.rules):
            if compiled.match_file(path) is None:
                continue
            if direct_children_only and parent and compiled.match_file(parent) is not None:
                continue  # matched through a subfolder, not directly
            return owners
        return None


def _unsupported(pattern: str) -> str | None:
    if pattern.startswith("!"):
        return "negation (!) is not supported in CODEOWNERS"
    if pattern.startswith("\\#"):
        return "escaping # is not supported in CODEOWNERS"
    if re.search(r"(?<!\\)\[", pattern):
        return "character ranges ([...]) are not supported in CODEOWNERS"
    return None


def load_codeowners(root: Path | None, warn: Warn) -> CodeOwners:
    """The first CODEOWNERS file found in GitHub's order, or one that owns nothing."""
    if root is None:
        return CodeOwners([])
    for location in CODEOWNERS_LOCATIONS:
        candidate = root / location
        if candidate.is_file():
            try:
                text = candidate.read_text(encoding="utf-8", errors="replace")
            except OSError as error:
                raise HitsError(f"cannot read {candidate}: {error.strerror}") from None
            return CodeOwners.parse(text, location, warn)
    return CodeOwners([])


# --- putting it together --------------------------------------------------------------------


def parse_now(text: str) -> float:
    """An ISO 8601 timestamp as POSIX seconds; one without a zone is taken as UTC."""
    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def whole_days(now: float, then: float) -> int:
    """Whole days from `then` to `now`; a time in the future counts as today."""
    return max(0, math.floor((now - then) / SECONDS_PER_DAY))


def build_arguments(
    counts: dict[str, int],
    *,
    root: Path | None,
    cwd: Path,
    now: float | None = None,
    limit: int | None = None,
    warn: Warn,
) -> dict[str, Any]:
    """The rank tool's arguments for ripgrep's counts: hits sorted by path, then `limit`."""
    now = time.time() if now is None else now
    base = root if root is not None else cwd
    located: dict[str, tuple[Path, int]] = {}
    for given, count in counts.items():
        absolute = Path(os.path.normpath(cwd / given))
        name = Path(os.path.relpath(absolute, base)).as_posix()
        previous = located.get(name)
        located[name] = (absolute, count + (previous[1] if previous else 0))

    committed: dict[str, int] = {}
    changed: set[str] = set()
    untracked: set[str] = set()
    if root is not None:
        changed, untracked = uncommitted_paths(root)
        tracked = {name for name in located if name not in changed and name not in untracked}
        committed = last_commit_times(root, tracked)
    owners = load_codeowners(root, warn)

    hits: list[dict[str, Any]] = []
    for name in sorted(located):
        absolute, count = located[name]
        if name in changed:
            days = 0
        elif name in committed:
            days = whole_days(now, committed[name])
        else:
            try:
                days = whole_days(now, absolute.stat().st_mtime)
            except OSError as error:
                warn(f"{name}: left out, cannot read its modification time ({error.strerror})")
                continue
        hit: dict[str, Any] = {"path": name, "matches": count, "last_modified_days": days}
        # Outside a repository `owners` is empty; a path above the root cannot match a rule.
        owner = None if name.startswith("../") else owners.owner_of(name)
        if owner is not None:
            hit["owner"] = owner
        hits.append(hit)
    if not hits:
        raise HitsError("no hits are left to rank")
    return {"hits": hits, **({"limit": limit} if limit is not None else {})}
