"""One call's terms for what repositories say (`Lookup`), what a lookup that may answer only from
what is known raises when it cannot (`NeedsWork`), and what a lookup answers of each file
(`FileFacts`: its whole days and owner; `Described`: every file's, or its stat error).

A lookup is passed down through `checkout.Checkout`, `repository.RepositoryFacts` and
`history.History`, never kept on them: they are shared between calls, and a lookup is one call's.
"""

from __future__ import annotations

import math
import time
from functools import partial
from pathlib import Path
from typing import Final, NamedTuple

from codescout_mcp.core.text import shown
from codescout_mcp.facts.git import GitError

SECONDS_PER_DAY: Final = 86_400


class NeedsWork(Exception):
    """Raised by a lookup with `cached_only` when the answer needs git or a file read first."""


class Lookup:
    """One call's terms for a lookup: the moment ages count to, when it must be done, and whether
    it may only answer from what is known (NeedsWork otherwise, raised before anything changes).

    Passed down through `Checkout` and `RepositoryFacts`, never kept on them: they are shared
    between calls, and a lookup is one call's.
    """

    __slots__ = ("cached_only", "deadline", "now")

    def __init__(self, now: float, *, seconds: float | None = None, cached_only: bool = False) -> None:
        self.now = now
        self.deadline = math.inf if seconds is None else time.monotonic() + seconds  # monotonic
        self.cached_only = cached_only

    def seconds_left(self, where: Path | None = None) -> float | None:
        """What is left of the time allowed (None: no limit); GitError, naming `where`, once it is gone."""
        if self.deadline == math.inf:
            return None
        left = self.deadline - time.monotonic()
        if left <= 0:
            said = shown(str(where)) if where is not None else "the repository"
            raise GitError(f"reading {said} took longer than the time allowed")
        return left


class Described:
    """What one lookup found: each path's facts (or its stat error), the paths git tracks under
    another spelling (that spelling), and notes the caller should pass on."""

    __slots__ = ("facts", "notes", "spellings")

    def __init__(self, facts: dict[str, FileFacts | OSError], spellings: dict[str, str], notes: list[str]) -> None:
        self.facts = facts
        self.spellings = spellings
        self.notes = notes


class FileFacts(NamedTuple):
    """What is known of one file: whole days since it last changed, and its owners."""

    days: int
    owner: str | None


# FileFacts made without the Python frame of its `__new__` (one per file a call describes).
file_facts: Final = partial(tuple.__new__, FileFacts)


def whole_days(now: float, then: float) -> int:
    """Whole days from `then` to `now`; a time in the future counts as today."""
    return max(0, math.floor((now - then) / SECONDS_PER_DAY))
