"""Facts for files wherever they are: each from the innermost repository that holds it.

A submodule's files come from the submodule, a nested repository's from itself, a file
beside the repository from whatever holds it there, so one `git log` runs per repository
involved, never one per file. Both `codescout hits` and `rank_workspace_hits` ask a
`Checkout`, so a file's age and owner are worked out by one piece of code.
"""

from __future__ import annotations

import os
from collections.abc import Iterable
from pathlib import Path

from codescout_mcp.facts import Warn
from codescout_mcp.facts.git import GitError, GitMissing, NotARepository
from codescout_mcp.facts.gitfiles import BlockingFile, RepositoryError
from codescout_mcp.facts.repository import Described, FileFacts, Lookup, NeedsWork, RepositoryFacts
from codescout_mcp.paths import ancestors, folder_identity, located, relative_inside, relative_to, same_folder_inside
from codescout_mcp.platform import CURRENT, System
from codescout_mcp.text import shown


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
        strict: bool = False,
        system: System = CURRENT,
    ) -> None:
        self.base = base
        self.main = main
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
                where, codeowners=codeowners, warn=warn, isolated=isolated, named=named, seconds=seconds
            )
        except NotARepository:
            if repo is not None:
                raise RepositoryError(f"{named}: not a git repository") from None
            main = None
        except GitMissing:
            if repo is not None:
                raise RepositoryError("git is not installed, and --repo needs it") from None
            warn("git is not installed; ages come from file modification times and there are no owners")
            return cls(Path(os.path.realpath(cwd)), None, codeowners=codeowners, warn=warn, isolated=isolated)
        except GitError as error:
            if repo is not None or strict:
                raise RepositoryError(str(error)) from None
            main = None  # said when a file in it is asked about (the folder's .git is met then)
        base = main.base if main is not None else Path(os.path.realpath(cwd))
        return cls(base, main, codeowners=codeowners, warn=warn, isolated=isolated, strict=strict)

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
        self, paths: Iterable[str], lookup: Lookup, *, stats: dict[str, os.stat_result] | None = None
    ) -> Described:
        """Days and owner for each resolved absolute path (see RepositoryFacts.describe); the
        spellings are absolute paths too."""
        groups: dict[RepositoryFacts, dict[str, str]] = {}
        holders: dict[str, RepositoryFacts] = {}  # folder -> the facts for files in it
        for path in dict.fromkeys(paths):
            facts = self._holder(os.path.dirname(path), holders, lookup)
            name = relative_inside(path, str(facts.base), self.system)
            if name is None and facts.in_git:
                name = same_folder_inside(path, str(facts.base), self._identities)
            if name is None:  # the plain folder answers for files anywhere, by their own times
                name = relative_to(path, str(facts.base), self.system)
            groups.setdefault(facts, {})[path] = name
        answers: dict[str, FileFacts | OSError] = {}
        notes: list[str] = []
        spellings: dict[str, str] = {}
        for facts, names in groups.items():
            given = {name: stats[path] for path, name in names.items() if stats and path in stats}
            described = facts.describe(names.values(), lookup, stats=given)
            for path, name in names.items():
                answers[path] = described.facts[name]
                if name in described.spellings:
                    spellings[path] = os.path.join(facts.base, *described.spellings[name].split("/"))
            notes += described.notes
        return Described(answers, spellings, notes)

    def _holder(self, folder: str, holders: dict[str, RepositoryFacts], lookup: Lookup) -> RepositoryFacts:
        """The facts for files in `folder`: those of the innermost repository around it."""
        if folder in holders:
            return holders[folder]
        found: RepositoryFacts | None = None
        passed: list[str] = []
        for candidate in [folder, *ancestors(folder, self.system)]:
            if candidate in holders:
                found = holders[candidate]
                break
            passed.append(candidate)
            if candidate in self._repositories:
                found = self._repositories[candidate]
            elif os.path.lexists(os.path.join(candidate, ".git")):
                found = self._open_inner(candidate, lookup)
            if found is not None:
                break
        holder = found if found is not None else self._plain
        for candidate in passed:
            holders[candidate] = holder
        return holder

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
                Path(folder), codeowners=self.dialect, warn=self.warn, isolated=True, seconds=seconds
            )
        except BlockingFile as error:
            if self.strict:
                raise
            self.warn(f"{error}; its files keep their file modification times and have no owners")
            facts = None
        except (NotARepository, RepositoryError):  # a .git git will not take (a bare one, a stray file)
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
