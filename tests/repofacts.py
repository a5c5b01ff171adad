"""One repository's facts read in process, as the unit tests ask for them."""

from __future__ import annotations

from pathlib import Path

from codescout_mcp.facts.lookup import Lookup
from codescout_mcp.facts.repository import RepositoryFacts
from tests.gitrepo import NOW_SECONDS


def facts_of(root: Path, **options: object) -> tuple[RepositoryFacts, list[str]]:
    """One repository's facts in process (git's caller variables cleared), and the warnings said."""
    warnings: list[str] = []
    facts = RepositoryFacts.open(root, warn=warnings.append, isolated=True, **options)  # type: ignore[arg-type]
    return facts, warnings


def days(facts: RepositoryFacts, *names: str, cached_only: bool = False, notes: list[str] | None = None) -> list[int]:
    """Each name's whole days as of NOW, after a refresh; the lookup's notes into `notes`."""
    facts.refresh()
    looked_up = facts.describe(names, Lookup(NOW_SECONDS, cached_only=cached_only))
    if notes is not None:
        notes[:] = looked_up.notes
    found = []
    for name in names:
        fact = looked_up.facts[name]
        assert not isinstance(fact, OSError), fact
        found.append(fact.days)
    return found
