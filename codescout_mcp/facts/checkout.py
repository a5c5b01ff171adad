"""Facts for files wherever they are: each from the innermost repository that holds it.

A submodule's files come from the submodule, a nested repository's from itself, a file
beside the repository from whatever holds it there, so one `git log` runs per repository
involved, never one per file. Both `codescout hits` and `rank_workspace_hits` ask a
`Checkout`, so a file's age and owner are worked out by one piece of code.
"""

from __future__ import annotations

import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from codescout_mcp.core.text import shown
from codescout_mcp.facts import Warn
from codescout_mcp.facts.git import GitError, GitMissing, NotARepository
from codescout_mcp.facts.gitfiles import BlockingFile, RepositoryError
from codescout_mcp.facts.lookup import Described, FileFacts, Lookup, NeedsWork
from codescout_mcp.facts.repository import STATUS_SLACK_NS, RepositoryFacts
from codescout_mcp.system.paths import (
    changed_ns,
    folder_identity,
    located,
    relative_inside,
    relative_to,
    same_folder_inside,
)
from codescout_mcp.system.platform import CURRENT, System

if TYPE_CHECKING:
    from codescout_mcp.facts.cache import HistoryCache


class Checkout:
    """Facts for files anywhere, each from the repository that holds it, paths relative to `base`.

    `base` is what the caller's paths are relative to: the main repository's root, or the
    plain folder when the caller is in none. A file's holder is the innermost folder around
    it with a `.git` (the main repository, a submodule, a repository nested inside or beside
    it); a file with no such folder around it keeps its file time and has no owner.

    With `strict`, a repository git refuses or fails to open is an error (GitRefused,
    GitError); otherwise it is one warning, and its files keep their file times.
    """

    def __init__(
        self,
        base: Path,
        main: RepositoryFacts | None,
        *,
        codeowners: str | None,
        warn: Warn,
        isolated: bool,
        strict: bool,
        cache: HistoryCache | None = None,
        system: System = CURRENT,
    ) -> None:
        self.base = base
        self.main = main
        self.cache = cache  # where the repositories met keep their walked histories (None: nowhere)
        self.dialect = codeowners
        self.warn = warn
        self.isolated = isolated
        self.strict = strict
        self.system = system
        # Repositories found so far, by the folder their .git is in and by their root (None:
        # a .git that is no repository git will read; its files belong to the folder around).
        self._repositories: dict[str, RepositoryFacts | None] = {}
        if main is not None:
            self._repositories[str(main.base)] = main
        self._plain = RepositoryFacts(base, git=None, warn=warn, system=system)
        self._identities: dict[str, tuple[int, int] | None] = {}
        # Folders seen to hold no `.git`, with their stat data then (device, inode, modification
        # and change times): while a folder's stat says the same, no `.git` came into it, for
        # adding or removing an entry changes both times. Kept only for folders last changed
        # long enough before the look (STATUS_SLACK_NS) that a coarse clock cannot hide a change.
        self._without_git: dict[str, tuple[int, int, int, int]] = {}
        # Each folder's name relative to a repository's base, as a prefix ("" for the base),
        # where that is a matter of spelling alone.
        self._prefixes: dict[tuple[str, str], str] = {}

    @classmethod
    def open(
        cls,
        repo: str | None,
        *,
        cwd: Path | None = None,
        codeowners: str | None = None,
        warn: Warn,
        isolated: bool = False,
        strict: bool = False,
        seconds: float | None = None,
        cache: HistoryCache | None = None,
    ) -> Checkout:
        """The checkout at --repo (which must be a git work tree), else the one around `cwd`.

        Outside any repository the base is `cwd` itself, a plain folder. git refusing to
        open the repository (or failing) is an error with --repo or `strict`, else a warning.
        """
        if cwd is None:
            try:
                cwd = Path.cwd()
            except OSError as error:
                raise RepositoryError(f"cannot read the current directory: {error.strerror}") from None
        where = Path(repo) if repo is not None else cwd
        named = f"--repo {shown(repo)}" if repo is not None else shown(str(cwd))
        if repo is not None and not where.is_dir():
            raise RepositoryError(f"{named}: no such directory")
        try:
            main = RepositoryFacts.open(
                where, codeowners=codeowners, warn=warn, isolated=isolated, named=named, seconds=seconds, cache=cache
            )
        except NotARepository:
            if repo is not None:
                raise RepositoryError(f"{named}: not a git repository") from None
            main = None
        except GitMissing:
            if repo is not None:
                raise RepositoryError("git is not installed, and --repo needs it") from None
            warn("git is not installed; ages come from file modification times and there are no owners")
            return cls(
                Path(os.path.realpath(cwd)),
                None,
                codeowners=codeowners,
                warn=warn,
                isolated=isolated,
                strict=strict,
                cache=cache,
            )
        except GitError as error:
            if repo is not None or strict:
                raise RepositoryError(str(error)) from None
            main = None  # said when a file in it is asked about (the folder's .git is met then)
        base = main.base if main is not None else Path(os.path.realpath(cwd))
        return cls(base, main, codeowners=codeowners, warn=warn, isolated=isolated, strict=strict, cache=cache)

    # -- where a path is

    def locate(self, given: str, cwd: Path, folders: dict[str, str] | None = None) -> str:
        """`given` (relative to `cwd`, or absolute) as a resolved absolute path (`paths.located`)."""
        return located(str(cwd), given, folders if folders is not None else {})

    def name_of(self, path: str) -> str:
        """A resolved path as the caller sees it: relative to the base, `/`-separated."""
        inside = relative_inside(path, str(self.base), self.system)
        if inside is None:
            inside = same_folder_inside(path, str(self.base), self._identities)
        if inside is None:
            return relative_to(path, str(self.base), self.system)
        return inside or "."

    # -- freshness

    def refresh(self) -> None:
        """Drop what is stale in every repository met so far."""
        for facts in dict.fromkeys(self._repositories.values()):
            if facts is not None:
                facts.refresh()

    # -- the facts

    def describe(
        self,
        paths: Iterable[str],
        lookup: Lookup,
        *,
        stats: dict[str, os.stat_result] | None = None,
        folders: dict[str, os.stat_result] | None = None,
    ) -> Described:
        """Days and owner for each resolved absolute path (see RepositoryFacts.describe); the
        spellings are absolute paths too. `stats` may hold the paths' stat data, `folders` that
        of their folders (`lstat`, taken in this call)."""
        # For each repository involved: the name of each path in it, and the stat data given.
        groups: dict[RepositoryFacts, tuple[dict[str, str], dict[str, os.stat_result]]] = {}
        holders: dict[str, RepositoryFacts] = {}  # folder -> the facts for files in it
        prefixes: dict[str, str] = {}  # folder -> its name relative to their base, as a prefix
        given = stats or {}
        split = self.system.paths.split
        for path in paths:
            folder, file_name = split(path)
            facts = holders.get(folder) or self._holder(folder, holders, lookup, folders or {})
            if not file_name:  # (a path that ends in a separator: named whole)
                name = self._name_in(facts, path)
            else:
                prefix = prefixes.get(folder)
                if prefix is None:
                    prefix = prefixes[folder] = self._prefix_in(facts, folder)
                name = prefix + file_name
            group = groups.get(facts)
            if group is None:
                group = groups[facts] = ({}, {})
            group[0][path] = name
            status = given.get(path)
            if status is not None:
                group[1][name] = status
        answers: dict[str, FileFacts | OSError] = {}
        notes: list[str] = []
        spellings: dict[str, str] = {}
        for facts, (names, known) in groups.items():
            described = facts.describe(names.values(), lookup, stats=known)
            found = described.facts
            for path, name in names.items():
                answers[path] = found[name]
            for path, name in names.items() if described.spellings else ():
                if name in described.spellings:
                    spellings[path] = os.path.join(facts.base, *described.spellings[name].split("/"))
            notes += described.notes
        return Described(answers, spellings, notes)

    def _prefix_in(self, facts: RepositoryFacts, folder: str) -> str:
        """`folder`'s name relative to the base of `facts`, as the start of its files' names."""
        key = (str(facts.base), folder)
        prefix = self._prefixes.get(key)
        if prefix is None:
            by_spelling = relative_inside(folder, key[0], self.system)
            prefix = _as_prefix(self._name_in(facts, folder) if by_spelling is None else by_spelling or ".")
            if by_spelling is not None:  # (the rest depend on what the folders are now)
                _make_room(self._prefixes)
                self._prefixes[key] = prefix
        return prefix

    def _name_in(self, facts: RepositoryFacts, path: str) -> str:
        """`path` relative to the base of `facts`, `/`-separated ("." for the base; `../`, or
        absolute, outside it)."""
        name = relative_inside(path, str(facts.base), self.system)
        if name is None and facts.in_git:
            name = same_folder_inside(path, str(facts.base), self._identities, itself=True)
        if name is None:  # the plain folder answers for files anywhere, by their own times
            return relative_to(path, str(facts.base), self.system)
        return name or "."

    def _holder(
        self, folder: str, holders: dict[str, RepositoryFacts], lookup: Lookup, folders: dict[str, os.stat_result]
    ) -> RepositoryFacts:
        """The facts for files in `folder`: those of the innermost repository around it. The
        walk out stops at the first folder `holders` (this call's) or a repository knows."""
        found: RepositoryFacts | None = None
        passed: list[str] = []
        dirname = self.system.paths.dirname
        candidate = self.system.paths.normpath(folder)
        while True:
            if candidate in holders:
                found = holders[candidate]
                break
            passed.append(candidate)
            if candidate in self._repositories:
                found = self._repositories[candidate]
            elif self._has_git(candidate, folders.get(candidate)):
                found = self._open_inner(candidate, lookup)
            parent = dirname(candidate)
            if found is not None or parent == candidate or not parent:
                break
            candidate = parent
        holder = found if found is not None else self._plain
        holders[folder] = holder
        for candidate in passed:
            holders[candidate] = holder
        return holder

    def _has_git(self, folder: str, status: os.stat_result | None) -> bool:
        """Whether `folder` holds a `.git`; `status`, the folder's `lstat` in this call, if known,
        spares the look when it says the folder is as it was when none was there."""
        mark = None if status is None else (status.st_dev, status.st_ino, status.st_mtime_ns, status.st_ctime_ns)
        if mark is not None and self._without_git.get(folder) == mark:
            return False
        if os.path.lexists(os.path.join(folder, ".git")):
            return True
        if (
            mark is not None
            and status is not None
            and changed_ns(status, self.system) < time.time_ns() - STATUS_SLACK_NS
        ):
            _make_room(self._without_git)
            self._without_git[folder] = mark
        return False

    def _met_before(self, root: Path) -> RepositoryFacts | None:
        """A repository met before whose root is the folder `root` under another name: another
        case or normalisation where the file system ignores them, a bind mount, another drive."""
        wanted = folder_identity(str(root), self._identities)
        if wanted is None:
            return None
        for facts in self._repositories.values():
            if facts is not None and folder_identity(str(facts.base), self._identities) == wanted:
                return facts
        return None

    def _open_inner(self, folder: str, lookup: Lookup) -> RepositoryFacts | None:
        """The repository whose work tree holds `folder` (a submodule, a nested or sibling one)."""
        if lookup.cached_only:
            raise NeedsWork
        facts: RepositoryFacts | None
        seconds = lookup.seconds_left(Path(folder))
        try:
            facts = RepositoryFacts.open(
                Path(folder), codeowners=self.dialect, warn=self.warn, isolated=True, seconds=seconds, cache=self.cache
            )
        except BlockingFile as error:
            if self.strict:
                raise
            self.warn(f"{error}; its files keep their file modification times and have no owners")
            facts = None
        except (NotARepository, RepositoryError):  # a .git git will not take (a bare one, a stray file)
            facts = None
        except GitMissing:  # (said once, when the checkout was opened)
            facts = None
        except GitError as error:
            if self.strict:
                raise
            self.warn(f"{error}; its files keep their file modification times and have no owners")
            facts = None
        if facts is not None:
            # The same repository reached by another spelling, or through core.worktree.
            known = self._repositories.get(str(facts.base)) or self._met_before(facts.base)
            if known is not None:
                facts = known
            else:
                self._repositories[str(facts.base)] = facts
                facts.refresh()
        self._repositories[folder] = facts
        return facts


def _as_prefix(folder_name: str) -> str:
    """A folder's name as the start of the names of the files in it ("" for the base itself)."""
    if folder_name == ".":
        return ""
    return folder_name if folder_name.endswith("/") else folder_name + "/"


# The most entries a cache kept between calls holds before it starts afresh.
CACHE_ENTRIES: Final = 200_000


def _make_room(cache: dict[Any, Any]) -> None:
    """Empty `cache` when it is full: a checkout's folders are many, but not without end."""
    if len(cache) >= CACHE_ENTRIES:
        cache.clear()
