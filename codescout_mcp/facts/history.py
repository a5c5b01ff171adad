"""A repository's first-parent history, walked at most once, and kept between processes.

A file's age is the committer date of the first commit met walking the current branch's
first-parent history back from HEAD whose tree changed it relative to its first parent
(`repository.RepositoryFacts`). `History` walks that history for one HEAD commit:

* once: a walk stops as soon as every path asked for is found, at the end of a commit, and the
  next walk goes on from that commit's first parent, never from HEAD again; every path met on
  the way is kept, so a later question about it needs no git at all;
* in pieces (`step`), for the walk a server makes in the background while it waits for calls:
  a call that comes meanwhile goes on from where it stopped;
* across processes, through the user's cache folder (`cache.HistoryCache`): what each walk read
  is written there, with where it stopped, and a later process for the same repository reads
  it, walks only the first-parent commits made since, and goes on from there if it must. A
  HEAD whose first-parent line does not pass through the commit written (a rebase, a reset, a
  force pull, a merge that made it a second parent) is walked whole again, as is any file
  that does not read as written.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING, Any, Final

from codescout_mcp.core.text import shown
from codescout_mcp.facts.git import Git, GitError
from codescout_mcp.facts.lookup import NeedsWork
from codescout_mcp.system.platform import CURRENT, System, decode_name
from codescout_mcp.system.processes import report_progress

if TYPE_CHECKING:
    from codescout_mcp.facts.cache import HistoryCache, Snapshot
    from codescout_mcp.facts.lookup import Lookup


# The git log every walk reads: each first-parent commit's time, id and parents, and the paths it
# changed against its first parent (a merge: what it brought in), never renamed, never filtered.
LOG_ARGUMENTS: Final = (
    *("log", "--first-parent", "--diff-merges=first-parent", "--no-renames", "--no-ext-diff", "--no-textconv"),
    *("-z", "--format=%x00%ct %H %P", "--name-only"),
)
# How many commits a walk reads between two looks at whether it should say how far it is.
PROGRESS_COMMITS: Final = 1_000
# How often, at most, a walk that goes on in steps (a server's, in the background) is written again.
SAVE_SECONDS: Final = 5.0


class Commit:
    """One commit of a walk: its time, its id, its first parent's id (None: none), the paths it changed."""

    __slots__ = ("first_parent", "id", "names", "when")

    def __init__(self, when: int, commit_id: bytes, first_parent: bytes | None, names: list[str]) -> None:
        self.when = when
        self.id = commit_id
        self.first_parent = first_parent
        self.names = names


def commits_of(stream: Any, system: System = CURRENT) -> Iterator[Commit]:
    """The commits of `git log -z --format=%x00%ct %H %P --name-only`, a commit with no path included.

    Each commit reads NUL, its header (time, id, parents), NUL, then (after a newline) its
    paths, each ending in NUL. A path is never empty, so an empty field always announces a
    header. ValueError for output of another shape.
    """
    pending = b""
    current: Commit | None = None
    expect_header = False
    first_path = False
    for chunk in iter(lambda: stream.read(1 << 16), b""):
        fields = (pending + chunk).split(b"\0")
        pending = fields.pop()
        for field in fields:
            if expect_header:
                if current is not None:
                    yield current
                stamp, _, ids = field.partition(b" ")
                commit_id, _, parents = ids.partition(b" ")
                current = Commit(int(stamp), commit_id, parents.partition(b" ")[0] or None, [])
                expect_header = False
                first_path = True
            elif not field:
                expect_header = True
            else:
                if first_path:
                    field = field.removeprefix(b"\n")
                    first_path = False
                if field:
                    if current is None:
                        raise ValueError("a path before any commit")
                    current.names.append(decode_name(field, system))
    if pending.strip(b"\n"):
        raise ValueError("output that ends inside a commit")
    if current is not None:
        yield current


class History:
    """What the first-parent history behind one HEAD commit says of each path (see the module docstring)."""

    def __init__(
        self,
        git: Git,
        base: Path,
        head: bytes,
        *,
        boundary: frozenset[bytes] = frozenset(),
        cache: HistoryCache | None = None,
        key: dict[str, str] | None = None,
        system: System = CURRENT,
    ) -> None:
        self.git = git
        self.base = base
        self.head = head  # the commit the history is behind
        self.boundary = boundary  # a shallow clone's boundary commits
        self.cache = cache
        self.key = key or {}  # what a cached walk must have been made for
        self.system = system
        self.times: dict[str, int] = {}
        self.at_boundary: set[str] = set()  # paths dated by the shallow boundary commit
        self.boundary_time: int | None = None
        self.complete = False
        self._next: bytes | None = head  # the commit the next walk starts at
        self._cached: Snapshot | None = None  # a walk read from the cache, for older commits
        self._looked_in_cache = cache is None
        self._from_cache = False  # whether what is known came (in part) from the cache
        self._saved_at: float | None = None  # (time.monotonic())
        self.commits_walked = 0  # (for the figures of bench/history.py)

    # -- questions

    def times_of(self, names: Iterable[str], lookup: Lookup) -> dict[str, int]:
        """The commit time of each of `names` that the history holds, walking as far as they need."""
        names = list(names)
        wanted = {name for name in names if name not in self.times}
        while wanted and not self.complete:
            if lookup.cached_only:
                raise NeedsWork
            if not self._looked_in_cache:
                self.read_cache()
            else:
                self._walk_or_start_again(lookup, wanted=wanted)
            wanted = {name for name in wanted if name not in self.times}
        return {name: self.times[name] for name in names if name in self.times}

    def step(self, lookup: Lookup, commits: int) -> bool:
        """Walk on for about `commits` commits (the background walk); whether the history is complete now."""
        if not self.complete:
            self.read_cache()
        if not self.complete:
            self._walk_or_start_again(lookup, commits=commits)
        return self.complete

    def _walk_or_start_again(
        self, lookup: Lookup, *, wanted: set[str] | None = None, commits: int | None = None
    ) -> None:
        """`walk`; where a walk taken from the cache cannot go on (git knows no such commit), all
        that came from the cache is dropped and the history is walked from HEAD."""
        try:
            self.walk(lookup, wanted=wanted, commits=commits)
        except GitError:
            if not self._from_cache:
                raise
            self._start_again()
            self.walk(lookup, wanted=wanted, commits=commits)

    def _start_again(self) -> None:
        self.times = {}
        self.at_boundary = set()
        self.boundary_time = None
        self.complete = False
        self._next = self.head
        self._cached = None
        self._from_cache = False

    # -- walking

    def walk(self, lookup: Lookup, *, wanted: set[str] | None = None, commits: int | None = None) -> None:
        """Walk from where the last walk stopped: until every path in `wanted` is found, `commits`
        commits are read, or the history ends, or (when a cached walk waits to be caught up with)
        until the walk meets that walk's commit, whose history is then the cached walk's."""
        assert self._next is not None and not self.complete
        remaining = set(wanted) if wanted is not None else None
        read = 0
        stop_at = self._cached.commit if self._cached is not None else None
        args = (*LOG_ARGUMENTS, self._next.decode("ascii"), "--")
        try:
            with self.git.stream(*args, seconds=lookup.seconds_left(self.base)) as out:
                for commit in _read(commits_of(out, self.system), self.base):
                    if commit.id == stop_at:
                        self._take_cached()
                        return
                    self._record(commit, remaining)
                    read += 1
                    if read % PROGRESS_COMMITS == 0:
                        report_progress(self.commits_walked, f"read {self.commits_walked:,} commits of git history")
                    self._next = commit.first_parent
                    if self._next is None:  # the root (a shallow clone's boundary has no parent either)
                        break
                    if (remaining is not None and not remaining) or (commits is not None and read >= commits):
                        return  # (closing the stream ends git)
            self._next = None
            self.complete = True
            self._cached = None  # (its commit was not on the line walked: the whole history is here)
        finally:
            if read:
                self._save(now_or_later=commits is not None)

    def _record(self, commit: Commit, remaining: set[str] | None) -> None:
        self.commits_walked += 1
        times = self.times
        at_boundary = commit.id in self.boundary
        for name in commit.names:
            if name not in times:
                times[name] = commit.when
                if at_boundary:
                    self.at_boundary.add(name)
                    self.boundary_time = commit.when
                if remaining is not None:
                    remaining.discard(name)

    # -- the cache

    def read_cache(self) -> None:
        """Take a walk written by an earlier process: at once when it was made behind HEAD, else as
        the older part of the history, which the next walk catches up with (`_take_cached`)."""
        if self._looked_in_cache:
            return
        self._looked_in_cache = True
        assert self.cache is not None
        snapshot = self.cache.load(self.key)
        if snapshot is None:
            return
        self._cached = snapshot
        if snapshot.commit == self.head and not self.times:
            self._take_cached()

    def _take_cached(self) -> None:
        """The walk is at the cached walk's commit: what that walk found is the history from there
        on, and the next walk goes on from where it stopped."""
        snapshot = self._cached
        assert snapshot is not None
        self._cached = None
        self._from_cache = True
        times = self.times
        for name, when in snapshot.times.items():
            if name not in times:
                times[name] = when
                if name in snapshot.at_boundary:
                    self.at_boundary.add(name)
        if self.boundary_time is None:
            self.boundary_time = snapshot.boundary_time
        self._next = snapshot.next
        self.complete = snapshot.next is None
        if snapshot.commit != self.head:
            self._save()

    def _save(self, *, now_or_later: bool = False) -> None:
        """Write what is known for a later process (the whole walk each time): after each walk a
        call makes; for the background walk's pieces (`now_or_later`), at its first, at its end,
        and otherwise at most every SAVE_SECONDS."""
        if self.cache is None:
            return
        now = time.monotonic()
        if now_or_later and not self.complete and self._saved_at is not None and now - self._saved_at < SAVE_SECONDS:
            return
        self._saved_at = now
        from codescout_mcp.facts.cache import Snapshot

        snapshot = Snapshot(
            self.head, self.times, self.at_boundary, self.boundary_time, next=self._next, made=time.time()
        )
        self.cache.save(self.key, snapshot)


def _read(commits: Iterator[Commit], base: Path) -> Iterator[Commit]:
    """`commits_of`, with output that is not what was asked for (a setting no pin knows of) a GitError."""
    try:
        yield from commits
    except ValueError:
        raise GitError(f"git log printed what codescout cannot read in {shown(str(base))}") from None
