"""What repositories say about files: each file's age and owner, from the repository holding it.

`RepositoryFacts` answers for one git work tree (or, outside git, one plain folder).
`Checkout` answers for files wherever they are: each from the innermost repository that
holds it (a submodule's files from the submodule, a nested repository's from itself, a file
beside the repository from whatever holds it there), so one `git log` runs per repository
involved, never one per file. Both `codescout hits` and the MCP tool `rank_workspace_hits`
ask a `Checkout`, so a file's age and owner are worked out by one piece of code.

git runs through `git.Git` (nothing a repository configures is run); the files read here
(HEAD, CODEOWNERS) are read only when they are regular files, and only up to a size.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import time
from collections.abc import Iterable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from codescout_mcp.core.text import shown
from codescout_mcp.facts import Warn
from codescout_mcp.facts.codeowners import CODEOWNERS_PLACES, CodeOwners, load_codeowners
from codescout_mcp.facts.git import Git, GitError, chunks, command_cost, open_failure
from codescout_mcp.facts.gitconfig import check_includes, check_objects, check_values
from codescout_mcp.facts.gitfiles import RepositoryError, ceiling_folders, check_for_git, git_files_around, stat_for_git
from codescout_mcp.facts.history import History
from codescout_mcp.facts.lookup import Described, FileFacts, Lookup, NeedsWork, file_facts, whole_days
from codescout_mcp.system.paths import NotRegular, read_regular, relative_inside, signature, stat_signature
from codescout_mcp.system.platform import CURRENT, System, decode_name, long_path, loose_key, windows_plain_name

if TYPE_CHECKING:
    from codescout_mcp.facts.cache import HistoryCache

# A file whose inode changed less than this before its status was read is read again: file
# times can be coarse, and a change in the same instant as the snapshot must not be missed.
STATUS_SLACK_NS: Final = 1_000_000_000
# The most a HEAD file can sensibly hold ("ref: refs/heads/<name>" or a commit id).
HEAD_LIMIT: Final = 64 * 1024
# git status as codescout runs it, before `--` and the names it asks about.
STATUS_ARGUMENTS: Final = (
    "status",
    "--porcelain=v1",
    "-z",
    "--untracked-files=no",
    "--ignore-submodules=all",
    "--no-renames",
)


class RepositoryFacts:
    """Ages and owners of files in one git work tree (or, outside git, one plain folder).

    A file's age is the committer date of the first commit met walking the current branch's
    first-parent history back from HEAD whose tree changed the file relative to its first
    parent (a merge counts the changes it brought in). A file with uncommitted changes was
    changed now; a file git does not track (not in the index: untracked, ignored, inside
    `.git`) uses its modification time, as does every file outside a git repository. In a
    shallow clone, files last changed beyond the boundary get the date of the oldest commit
    on the branch's first-parent line, and a note says so.

    The object keeps what it read, so that asking again is cheap; `refresh()` drops what a
    new commit, a checkout, a change to the index or CODEOWNERS has made stale, and files
    whose inode changed since their status was read are asked about again.
    """

    def __init__(
        self,
        base: Path,
        *,
        git: Git | None,
        git_dir: Path | None = None,
        common_dir: Path | None = None,
        shallow: bool = False,
        codeowners: str | None = None,
        warn: Warn,
        cache: HistoryCache | None = None,
        system: System = CURRENT,
    ) -> None:
        self.base = base  # the work tree root, or the plain folder
        self.git = git
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.shallow = shallow
        self.cache = cache
        self._history: History | None = None  # kept while HEAD's commit is the same
        self.dialect = codeowners
        self.warn = warn
        self.system = system
        self._signature: tuple[object, ...] | None = None
        self._owners: CodeOwners | None = None
        self._owners_signature: tuple[object, ...] | None = None
        self._config_keys: list[str] = []  # every setting's key, as the last check read them
        self._watched: dict[str, tuple[str, ...]] = {}  # HEAD's text -> the files `refresh` watches
        self._codeowners_files = tuple(os.path.join(base, *place.split("/")) for place in CODEOWNERS_PLACES)
        self._forget()

    @property
    def in_git(self) -> bool:
        return self.git is not None

    def _forget(self) -> None:
        self._index: set[str] | None = None  # the paths git tracks
        self._attributes_checked: set[str] | None = None  # the index whose folders were checked
        self._folded_index: dict[str, list[str]] | None = None
        self._changed: set[str] = set()  # tracked paths with uncommitted changes
        self._status_read_at: int | None = None  # wall clock (ns) when the snapshot was taken
        self._status_reused = False
        self._rechecked: dict[str, tuple[int, bool]] = {}
        self._signatures: dict[str, tuple[int, ...]] = {}  # each file's stat data when last judged
        self._head_checked = False  # whether `_history` was checked to be for HEAD's commit since
        self._boundary_time: int | None = None

    @classmethod
    def open(
        cls,
        folder: Path,
        *,
        codeowners: str | None = None,
        warn: Warn,
        isolated: bool,
        named: str | None = None,
        seconds: float | None = None,
        cache: HistoryCache | None = None,
        system: System = CURRENT,
    ) -> RepositoryFacts:
        """The facts for the work tree around `folder`.

        NotARepository when there is none, GitRefused when git will not open it, GitMissing
        without git, GitError when git fails, RepositoryError for a bare repository.
        """
        around = git_files_around(folder, ceilings=ceiling_folders(isolated))
        check_for_git(around)
        git = Git(folder, isolated=isolated)
        check_includes([path for path in around if path.name in ("config", "config.worktree")], git, seconds)
        status, out, err = git.run(
            "rev-parse",
            "--is-bare-repository",
            "--is-shallow-repository",
            "--path-format=absolute",
            "--git-dir",
            "--git-common-dir",
            "--show-toplevel",
            check=False,
            seconds=seconds,
        )
        answers = decode_name(out, system).split("\n")
        if answers[0] == "true" or (status != 0 and answers[0] == "false"):
            where = named or shown(str(folder))
            raise RepositoryError(f"{where}: a bare git repository (or a .git folder) has no work tree; use a checkout")
        if status != 0:
            raise open_failure(str(folder), err, status)
        root = Path(os.path.realpath(answers[4]))
        return cls(
            root,
            git=Git(root, isolated=isolated),
            git_dir=Path(answers[2]),
            common_dir=Path(answers[3]),
            shallow=answers[1] == "true",
            codeowners=codeowners,
            warn=warn,
            cache=cache,
            system=system,
        )

    def _check_what_git_reads(self, seconds: float | None = None, *, includes: bool) -> None:
        """BlockingFile for what the config names, or git reads under objects/, that would hold git
        (`gitconfig.py`); the keys of the settings are kept, for the filter drivers to switch off."""
        assert self.git is not None and self.git_dir is not None and self.common_dir is not None
        if includes:
            check_includes([self.common_dir / "config", self.git_dir / "config.worktree"], self.git, seconds)
        self._config_keys = check_values(self.git, seconds)
        check_objects(self.common_dir)

    # -- freshness

    def refresh(self) -> None:
        """Drop what is stale: all of it after a commit, a checkout or an index change."""
        signature = self._repository_signature()
        if signature != self._signature:
            if self.git is not None:  # (the includes were checked at open, before git first ran)
                self._check_what_git_reads(includes=self._signature is not None)
            self._signature = signature
            self._forget()
        else:
            self._status_reused = True

    def _repository_signature(self) -> tuple[object, ...]:
        if self.git_dir is None or self.common_dir is None:
            return ()
        head = os.path.join(self.git_dir, "HEAD")
        try:
            data = read_regular(head, HEAD_LIMIT)
        except NotRegular as error:
            raise RepositoryError(f"{shown(head)} is {error}; the repository cannot be read") from None
        except OSError:
            data = b""
        target = (data or b"").decode("utf-8", "replace").strip()
        paths = self._watched.get(target)
        if paths is None:
            paths = self._watched_files(head, target)
            self._watched = {target: paths}
        return (target, *(signature(stat_for_git(path)) for path in paths))

    def _watched_files(self, head: str, target: str) -> tuple[str, ...]:
        """The files whose change says the repository moved on, while HEAD holds `target`."""
        assert self.git_dir is not None and self.common_dir is not None
        git_dir, common_dir = str(self.git_dir), str(self.common_dir)
        ref = target[5:].strip() if target.startswith("ref: ") else None
        # A branch that lives only in packed-refs is written back to its own file when it
        # moves, so packed-refs itself need not be watched; reftable repositories keep all
        # their refs in tables that tables.list names.
        paths = [head, os.path.join(git_dir, "index"), os.path.join(common_dir, "shallow")]
        paths += [os.path.join(common_dir, "reftable", "tables.list")]
        if ref is not None:
            paths += [str(Path(common_dir) / ref), str(Path(git_dir) / ref)]
        paths += [os.path.join(git_dir, "config.worktree"), os.path.join(common_dir, "config")]
        paths += [os.path.join(common_dir, "packed-refs")]
        return tuple(paths)

    # -- the facts

    def describe(
        self, names: Iterable[str], lookup: Lookup, *, stats: dict[str, os.stat_result] | None = None
    ) -> Described:
        """Days and owner for each path (relative to the base, `/`-separated), or its stat error.

        `stats` may hold what `os.stat` already said of some of the paths; the lookup says when
        ages count to, the time git gets in all, and whether only what is known may answer.
        """
        given = stats or {}
        known: dict[str, os.stat_result | OSError] = {}
        base = os.path.join(self.base, "")
        for name in names:
            if name in known:
                continue
            found = given.get(name)
            if found is None:
                try:
                    found = os.stat(os.path.join(base, name))
                except (OSError, ValueError) as error:
                    known[name] = error if isinstance(error, OSError) else OSError(0, str(error))
                    continue
            known[name] = found
        owners = self.codeowners(lookup.cached_only)
        spelled: dict[str, str] = {}
        changed: set[str] = set()
        commit_times: dict[str, int] = {}
        if self.in_git:
            if lookup.cached_only and self._index is None:
                raise NeedsWork
            index = self._tracked(lookup)
            tracked: dict[str, os.stat_result] = {}  # by git's name
            for name, known_status in known.items():
                if isinstance(known_status, OSError):
                    continue
                if name in index:
                    tracked[name] = known_status
                else:
                    spelling = self._index_spelling(name, known_status)
                    if spelling is not None:
                        spelled[name] = spelling
                        tracked[spelling] = known_status
            changed = self._states(tracked, lookup)
            history = self._current_history(lookup)
            unchanged = [name for name in tracked if name not in changed]
            commit_times = history.times_of(unchanged, lookup) if history is not None else {}
            at_boundary_names = history.at_boundary if history is not None else set()
            self._boundary_time = history.boundary_time if history is not None else None
        facts: dict[str, FileFacts | OSError] = {}
        at_boundary = 0
        if not self.in_git:
            at_boundary_names = set()
        now = lookup.now
        owner_of = owners.owner_of
        for name, status in known.items():
            if isinstance(status, OSError):
                facts[name] = status
                continue
            tracked_name = spelled.get(name, name)
            if tracked_name in changed:
                facts[name] = file_facts((0, owner_of(tracked_name)))
            elif tracked_name in commit_times:
                facts[name] = file_facts((whole_days(now, commit_times[tracked_name]), owner_of(tracked_name)))
                at_boundary += tracked_name in at_boundary_names
            elif name == ".." or name.startswith("../") or os.path.isabs(name):  # not in this work tree
                facts[name] = file_facts((whole_days(now, status.st_mtime), None))
            else:
                facts[name] = file_facts((whole_days(now, status.st_mtime), owner_of(tracked_name)))
        return Described(facts, spelled, [self._shallow_note(at_boundary)] if at_boundary else [])

    def codeowners(self, cached_only: bool) -> CodeOwners:
        """The CODEOWNERS rules, read again only when a CODEOWNERS file changed."""
        if not self.in_git:
            return CodeOwners.empty()
        signature = tuple(stat_signature(path) for path in self._codeowners_files)
        if self._owners is None or signature != self._owners_signature:
            if cached_only:
                raise NeedsWork
            self._owners = load_codeowners(self.base, self.dialect, self.warn)
            self._owners_signature = signature
        return self._owners

    def tracked(self, lookup: Lookup) -> set[str]:
        """The paths git tracks here (relative to the base); none outside git."""
        if not self.in_git:
            return set()
        if lookup.cached_only and self._index is None:
            raise NeedsWork
        return self._tracked(lookup)

    def _tracked(self, lookup: Lookup) -> set[str]:
        """The paths in the index (what git tracks), read once per index."""
        assert self.git is not None
        if self._index is None:
            _, out, _ = self.git.run(
                "ls-files", "-z", "--cached", "--full-name", seconds=lookup.seconds_left(self.base)
            )
            self._index = {decode_name(field, self.system) for field in out.split(b"\0") if field}
            self._folded_index = None
        return self._index

    def _index_spelling(self, name: str, status: os.stat_result) -> str | None:
        """The index's spelling of `name`, when the file system takes both for the same file.

        On a file system that ignores case or normalisation (macOS, Windows), `Src/a.py` may
        name git's `src/a.py`; the two are one when `stat` finds the same file for both.
        """
        assert self._index is not None
        if self._folded_index is None:
            self._folded_index = {}
            for tracked in self._index:
                self._folded_index.setdefault(loose_key(tracked), []).append(tracked)
        keys = [loose_key(name)]
        if self.system.windows:
            # Win32 drops trailing dots and spaces and reads `::$DATA` as the file itself, and a
            # short 8.3 name (PROGRA~1) is the long one's alias: each is looked up as git's name.
            keys += [loose_key(windows_plain_name(name))]
            long = long_path(os.path.join(self.base, name), self.system)
            inside = relative_inside(long, str(self.base), self.system)
            if inside:
                keys.append(loose_key(windows_plain_name(inside)))
        candidates = dict.fromkeys(found for key in keys for found in self._folded_index.get(key, ()))
        for candidate in candidates:
            try:
                other = os.stat(os.path.join(self.base, candidate))
            except OSError:
                continue
            if (other.st_dev, other.st_ino) == (status.st_dev, status.st_ino) and status.st_ino:
                return candidate
        return None

    def _states(self, tracked: dict[str, os.stat_result], lookup: Lookup) -> set[str]:
        """Which of these tracked paths (with their stat data) have uncommitted changes (staged or not)."""
        assert self.git is not None
        if self._status_read_at is None:
            if lookup.cached_only:
                raise NeedsWork
            read_at = time.time_ns()
            # (Both are set once the read stands: one cut short leaves the status unread.)
            self._changed = self._read_status((), lookup)
            self._status_read_at, self._status_reused = read_at, False
        changed: set[str] = set()
        again: list[str] = []
        signatures: dict[str, tuple[int, ...]] = {}
        reused, rechecked, earlier = self._status_reused, self._rechecked, self._signatures
        # A file that changed within the slack of the status read is asked about again.
        since = self._status_read_at - STATUS_SLACK_NS
        ctime_tells = not self.system.ctime_is_birth  # (as `paths.changed_ns` reads a stat)
        for name, status in tracked.items():
            # What git itself compares: an edit that puts the old modification time back still
            # changes the size or the inode (and where st_ctime is the creation time, Windows,
            # the times alone would miss it).
            signature = signatures[name] = (status.st_size, status.st_mtime_ns, status.st_ino, status.st_dev)
            read_again = rechecked.get(name)
            if reused:
                after = since if read_again is None else read_again[0] - STATUS_SLACK_NS
                if (
                    status.st_mtime_ns >= after
                    or (ctime_tells and status.st_ctime_ns >= after)
                    or earlier.get(name, signature) != signature
                ):
                    again.append(name)
                    continue
            if name in self._changed if read_again is None else read_again[1]:
                changed.add(name)
        if again:
            if lookup.cached_only:
                raise NeedsWork
            read_at = time.time_ns()
            fresh = self._read_status(again, lookup)
            for name in again:
                self._rechecked[name] = (read_at, name in fresh)
                if name in fresh:
                    changed.add(name)
        self._signatures.update(signatures)  # only once the answer stands (NeedsWork keeps the old)
        return changed

    def _read_status(self, names: Iterable[str], lookup: Lookup) -> set[str]:
        """The tracked paths with changes, among `names` (all of them when empty).

        Untracked files are not looked for (`-uno`): a path outside the index is untracked
        by definition, and looking for them would walk the whole work tree.
        """
        assert self.git is not None
        self._check_attributes()
        filters = self.git.filter_overrides(self._config_keys)
        # What every run carries besides the names: git's own arguments, and on POSIX the
        # settings given through the environment, which shares the same limit.
        fixed = self.git.command(*STATUS_ARGUMENTS, "--", extra=filters.arguments)
        if not self.system.windows:
            fixed += [f"{key}={value}" for key, value in filters.environment.items()]
        if command_cost(fixed, self.system) > self.system.command_line_limit // 2:
            raise GitError(
                f"{shown(str(self.base))} defines more filter drivers than codescout can tell git to "
                "leave unused on one command line; its files are not read"
            )
        changed: set[str] = set()
        for chunk in chunks(list(names), self.system, fixed) if names else [[]]:
            _, out, _ = self.git.run(
                *STATUS_ARGUMENTS, "--", *chunk, overrides=filters, seconds=lookup.seconds_left(self.base)
            )
            for field in out.split(b"\0"):
                if len(field) >= 4 and field[:2] not in (b"??", b"!!"):
                    changed.add(decode_name(field[3:], self.system))
        return changed

    def _check_attributes(self) -> None:
        """BlockingFile if a `.gitattributes` that `git status` may open is a FIFO or a device.

        git reads the attributes of the folders holding each file whose stat data changed;
        every folder holding a tracked file is looked at (one `stat` each, once per index).
        """
        assert self._index is not None
        if self._attributes_checked is self._index:
            return
        folders = {name.rpartition("/")[0] for name in self._index}
        base = str(self.base)  # (strings: a Path a folder costs several times the stat)
        for folder in sorted(folders):
            parts = [part for part in folder.split("/") if part]
            check_for_git([os.path.join(base, *parts, ".gitattributes")])
        check_for_git([self.base / ".gitattributes"])  # (info/attributes: with all of info/, at refresh)
        self._attributes_checked = self._index

    def ready(self, lookup: Lookup) -> None:
        """Read what dating any of its files needs but the walk: the index, the status, CODEOWNERS
        and the history an earlier process kept (read ahead of a call: `Workspace.reading_ahead`)."""
        self.describe((), lookup)
        history = self._current_history(lookup) if self.in_git else None
        if history is not None:
            history.read_cache()

    def warm(self, lookup: Lookup, commits: int) -> bool:
        """Walk on about `commits` commits of the history (the background walk); whether it is all walked."""
        if not self.in_git:
            return True
        history = self._current_history(lookup)
        return history is None or history.step(lookup, commits)

    def _current_history(self, lookup: Lookup) -> History | None:
        """The history behind HEAD's commit (None on a branch with no commit yet): the one kept,
        while HEAD names the same commit (an index change, a refresh, leaves it as it is)."""
        assert self.git is not None
        if self._head_checked and self._history is not None:
            return self._history
        if lookup.cached_only:
            raise NeedsWork
        status, out, _ = self.git.run(
            "rev-parse", "--verify", "-q", "HEAD^{commit}", check=False, seconds=lookup.seconds_left(self.base)
        )
        head = out.strip()
        self._head_checked = True
        if status != 0 or not head:
            self._history = None
            return None
        boundary, key = self._boundary_commits(), self._cache_key()
        kept = self._history
        if kept is None or (kept.head, kept.boundary, kept.key) != (head, boundary, key):
            # Grafts and replacements change what history says, by settings and variables too: such a
            # repository's history is walked each time, never kept (a rare thing; the answer is the walk).
            cache = None if self._history_rewritten(lookup) else self.cache
            self._history = History(
                self.git, self.base, head, boundary=boundary, cache=cache, key=key, system=self.system
            )
        return self._history

    def _cache_key(self) -> dict[str, str]:
        """What a cached walk must have been made for: this repository (its git folder and work
        tree) and its shallow boundary."""
        common = self.common_dir if self.common_dir is not None else self.base
        shallow = b""
        with contextlib.suppress(OSError):
            shallow = read_regular(str(common / "shallow"), 64 << 20) or b""
        return {"git_dir": str(common), "base": str(self.base), "shallow": hashlib.sha256(shallow).hexdigest()}

    def _history_rewritten(self, lookup: Lookup) -> bool:
        """Whether the repository has grafts or replacement refs, which make git show another history:
        read from its files (a loose ref under refs/replace/, one in packed-refs), and from git for
        a repository that keeps its refs in reftables."""
        assert self.git is not None
        common = self.common_dir if self.common_dir is not None else self.base
        if stat_for_git(common / "info" / "grafts") is not None:
            return True
        if os.path.isdir(common / "reftable"):
            _, out, _ = self.git.run(
                "for-each-ref",
                "--count=1",
                "--format=%(refname)",
                "refs/replace/",
                seconds=lookup.seconds_left(self.base),
            )
            return bool(out.strip())
        with contextlib.suppress(OSError):
            if any(os.scandir(common / "refs" / "replace")):
                return True
        try:
            packed = read_regular(str(common / "packed-refs"), 256 << 20)
        except OSError:
            return False
        return packed is None or b" refs/replace/" in packed  # (a file too large to read: taken as one)

    def _boundary_commits(self) -> frozenset[bytes]:
        """The commits a shallow clone ends at (from `shallow`, read as a regular file)."""
        if not self.shallow or self.common_dir is None:
            return frozenset()
        try:
            data = read_regular(str(self.common_dir / "shallow"), 64 << 20) or b""
        except OSError:
            data = b""
        return frozenset(data.split())

    def _shallow_note(self, count: int) -> str:
        assert self._boundary_time is not None
        from datetime import datetime, timezone  # (here: only a shallow clone's note needs it)

        when = datetime.fromtimestamp(self._boundary_time, timezone.utc).strftime("%Y-%m-%d")
        files = "1 file shows" if count == 1 else f"{count} files show"
        return (
            f"{shown(str(self.base))} is a shallow clone: {files} {when}, the date of the oldest commit it has on "
            "this branch, because they were last changed then or before; run `git fetch --unshallow` for their "
            "real ages"
        )
