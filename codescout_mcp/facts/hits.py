"""`codescout hits`: ripgrep's output, plus git's history and CODEOWNERS, into rank arguments.

It runs no search itself: the user runs ripgrep. For each matched file it works out
* matches: the submatches ripgrep reported (`rg --json`) or its count (`rg --count-matches`),
  read by `rgcounts.py`;
* last_modified_days and owner: from the repository holding the file (`repository.py`:
  git history, or file times outside git; CODEOWNERS read as GitHub or GitLab reads it).
"""

from __future__ import annotations

import os
import stat
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from codescout_mcp.core.text import shown
from codescout_mcp.facts import Warn
from codescout_mcp.facts.checkout import Checkout
from codescout_mcp.facts.git import GitError
from codescout_mcp.facts.gitfiles import RepositoryError
from codescout_mcp.facts.lookup import FileFacts, Lookup
from codescout_mcp.facts.rgcounts import RipgrepError, read_match_counts


class HitsError(Exception):
    """What keeps `codescout hits` from answering: printed as one line, exit status 1."""


def parse_now(text: str) -> float:
    """An ISO 8601 timestamp as POSIX seconds; one without a zone is taken as UTC."""
    from datetime import datetime, timezone  # (here: only a given --now reads a date)

    moment = datetime.fromisoformat(text.strip().replace("Z", "+00:00").replace("z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=timezone.utc)
    return moment.timestamp()


def hits_arguments(
    data: bytes,
    source: str,
    *,
    repo: str | None,
    codeowners: str | None,
    warn: Warn,
    now: float | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """The rank tool's arguments for ripgrep's output in `data`; HitsError when there are none."""
    try:
        counts = read_match_counts(data, source)
        from codescout_mcp.facts.cache import user_cache

        checkout = Checkout.open(repo, codeowners=codeowners, warn=warn, cache=user_cache())
        return build_arguments(counts, checkout=checkout, now=now, limit=limit)
    except (RipgrepError, RepositoryError, GitError) as error:
        raise HitsError(str(error)) from None


def build_arguments(
    counts: dict[str, int],
    *,
    checkout: Checkout,
    cwd: Path | None = None,
    now: float | None = None,
    limit: int | None = None,
) -> dict[str, Any]:
    """The rank tool's arguments for ripgrep's counts: hits sorted by path, then `limit`."""
    now = time.time() if now is None else now
    if cwd is None:
        try:
            cwd = Path.cwd()
        except OSError as error:
            raise HitsError(f"cannot read the current directory: {error.strerror}") from None
    located, stats = located_counts(counts, checkout, cwd)
    checkout.refresh()
    described = checkout.describe(located, Lookup(now), stats=stats)
    for note in described.notes:
        checkout.warn(note)
    # One file given under two names (`src/a.py` and `SRC/A.PY` where the file system ignores
    # case; the repository and an alias of it) is one hit, named as git names it.
    merged: dict[str, tuple[int, FileFacts | OSError]] = {}
    for path, count in located.items():
        name = checkout.name_of(described.spellings.get(path, path))
        merged[name] = (merged[name][0] + count if name in merged else count, described.facts[path])
    hits: list[dict[str, Any]] = []
    for name in sorted(merged):
        matches, fact = merged[name]
        if isinstance(fact, OSError):
            checkout.warn(f"{shown(name)}: left out, cannot read its modification time ({fact.strerror})")
            continue
        hits.append(hit_of(name, matches, fact))
    if not hits:
        raise HitsError("no hits are left to rank")
    return {"hits": hits, **({"limit": limit} if limit is not None else {})}


def hit_of(name: str, matches: int, fact: FileFacts) -> dict[str, Any]:
    """One hit as the rank tool takes it (the owner left out when there is none)."""
    hit: dict[str, Any] = {"path": name, "matches": matches, "last_modified_days": fact.days}
    if fact.owner is not None:
        hit["owner"] = fact.owner
    return hit


def located_counts(
    counts: dict[str, int], checkout: Checkout, cwd: Path
) -> tuple[dict[str, int], dict[str, os.stat_result]]:
    """Each path ripgrep named (relative to `cwd`, or absolute) resolved, with its match count (one
    file under two names counted once) and its stat; what is no hit to rank (a folder, a file of
    git's own) left out with a warning. A path that cannot be stat'ed is kept, without a stat."""
    located: dict[str, int] = {}
    folders: dict[str, str] = {}
    for given, count in counts.items():
        try:
            path = checkout.locate(given, cwd, folders)
        except OSError:  # a folder on its way changed as it was resolved: the file is not where it was
            continue
        located[path] = located.get(path, 0) + count
    stats: dict[str, os.stat_result] = {}
    gits_own: list[str] = []
    for path in list(located):
        try:
            status = os.stat(path)
        except (OSError, ValueError):
            continue  # said later, with the rest of what cannot be read
        name = checkout.name_of(path)
        if stat.S_ISDIR(status.st_mode):
            checkout.warn(f"{shown(name)}: left out, a directory, not a file")
            del located[path]
        elif ".git" in name.split("/"):
            gits_own.append(name)
            del located[path]
        else:
            stats[path] = status
    if gits_own:  # (`rg --hidden` lists every one: one line says it of them all)
        said = (
            f"{shown(gits_own[0])} is"
            if len(gits_own) == 1
            else f"{len(gits_own)} files (the first {shown(gits_own[0])}) are"
        )
        checkout.warn(f"left out: {said} git's own (inside .git), not the repository's")
    return located, stats


def top_ranked(
    located: dict[str, int],
    stats: dict[str, os.stat_result],
    *,
    checkout: Checkout,
    lookup: Lookup,
    limit: int,
    name_of: Callable[[str], str | None],
) -> tuple[dict[str, Any], list[str]]:
    """The ranking of located hits (`located_counts`) and the notes on it, the same as ranking every
    hit, with only the files that can still reach the first `limit` dated.

    A file scores at most 100 times its matches. So the files with the most matches are dated
    first; a file whose matches times 100 falls below the `limit`-th best score found among them
    cannot reach the first `limit` whatever its age, and needs none: one old file then does not
    force a walk of the whole history. `name_of` names a resolved path as the answer gives it
    (None: left out); files that vanished before they could be dated are left out, as
    `build_arguments` leaves them.
    """
    from codescout_mcp.core.ranking import rank

    order = sorted(located, key=lambda path: (-located[path], path))
    hits: dict[str, tuple[int, FileFacts]] = {}  # by the name the answer gives
    gone = 0
    notes: list[str] = []

    def date(paths: list[str]) -> None:
        nonlocal gone
        described = checkout.describe(paths, lookup, stats={path: stats[path] for path in paths if path in stats})
        notes.extend(note for note in described.notes if note not in notes)
        for path in paths:
            fact = described.facts[path]
            name = name_of(described.spellings.get(path, path))
            if isinstance(fact, OSError) or name is None:
                gone += 1
            elif name in hits:  # one file under two names: one hit, as build_arguments merges them
                hits[name] = (hits[name][0] + located[path], fact)
                gone += 1
            else:
                hits[name] = (located[path], fact)

    date(order[:limit])
    scores = sorted((100 * matches - fact.days for matches, fact in hits.values()), reverse=True)
    floor = scores[limit - 1] if len(scores) >= limit else None
    rest = [path for path in order[limit:] if floor is None or 100 * located[path] >= floor]
    if rest:
        date(rest)
    if not hits:
        return {"results": [], "counts": {"hits": 0, "returned": 0}}, notes
    ranking = rank({"hits": [hit_of(name, *hit) for name, hit in hits.items()], "limit": limit})
    ranking["counts"]["hits"] = len(located) - gone
    return ranking, notes
