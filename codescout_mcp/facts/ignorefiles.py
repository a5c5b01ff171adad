"""The ignore files a search's ripgrep would read, looked at before it runs.

ripgrep reads `.gitignore`, `.ignore` and `.rgignore` in every folder it walks into and in each
folder above the search, and git's exclude file of each repository it meets. One that is a FIFO
makes it wait for a writer that never comes; a device (/dev/zero) or a file of megabytes has it
read, or build rules, until it runs out of memory; a link to a file outside the workspace would
have it apply rules read from outside. So each one is looked at first (`IgnoreFiles.vet`):

* in the searched folder or above it, which ripgrep reads whatever it searches: a bad one is an
  error naming it (`BadIgnoreFile`);
* in a folder below: that folder is left out of the search (`Vetted.excluded`, which the search
  turns into a `!` glob, so ripgrep never walks into it nor reads the file), and the answer
  says so (`Vetted.notes`). A folder ripgrep would have skipped anyway loses nothing by it.

Folders an ignore rule leaves out are not walked into: ripgrep does not walk into them either,
and they are where trees are big (node_modules). git tells which (`git check-ignore`), a level
of folders at a time, once the ignore files it reads for them are checked: git opens them too,
and waits on a FIFO as ripgrep does. It is asked again only when an ignore file changed. What
was seen of each folder is kept while its stat says it is unchanged (in the cache folder too,
for the next process), so a repeated search costs one `lstat` per folder walked.
"""

from __future__ import annotations

import os
import re
import stat
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Final

from codescout_mcp.core.text import shown
from codescout_mcp.facts.git import GitError, Overrides
from codescout_mcp.facts.git import said as said_by_git
from codescout_mcp.facts.rg import VCS_FOLDERS, SearchError
from codescout_mcp.system.paths import ancestors, changed_ns, describe_kind, read_regular, relative_inside
from codescout_mcp.system.platform import decode_name
from codescout_mcp.system.processes import take_lock

if TYPE_CHECKING:
    from codescout_mcp.facts.cache import FolderCache
    from codescout_mcp.facts.lookup import Lookup
    from codescout_mcp.facts.repository import RepositoryFacts

IGNORE_FILES: Final = (".gitignore", ".ignore", ".rgignore")
# The most ignore rules, in bytes, one file may hold for ripgrep to read it: a few thousand
# lines take a few kilobytes; ripgrep building a 6 MB file's rules took 2 GiB.
MAX_IGNORE_BYTES: Final = 1 << 20
# A folder changed less than this before it was listed is listed again next time: file times
# can be coarse, and an entry added in the same instant must not be missed.
SLACK_NS: Final = 1_000_000_000
# The most folders whose listing is kept between searches.
MAX_FOLDERS: Final = 200_000
POINTER_LIMIT: Final = 64 * 1024
# Folders listed anew before what is kept is written to the cache again (or an eighth of them all).
SAVE_AFTER: Final = 16


class BadIgnoreFile(SearchError):
    """An ignore file ripgrep must read (in the searched folder or above) that it cannot read safely."""


class Vetted:
    """What a search may go ahead with: folders to leave out (relative to the workspace,
    `/`-separated), what to tell the caller of them, the files outside the workspace that
    ripgrep reads (for its sandbox), and the largest ignore file it reads (path, bytes), if any:
    the likely cause when ripgrep runs out of memory (a few kilobytes of `**` rules can take
    gigabytes to build)."""

    __slots__ = ("excluded", "largest", "notes", "outside")

    def __init__(
        self, excluded: list[str], notes: list[str], outside: list[str], largest: tuple[str, int] | None = None
    ) -> None:
        self.excluded = excluded
        self.notes = notes
        self.outside = outside
        self.largest = largest


class _Listing:
    """What one folder held when it was last listed, and its stat then."""

    __slots__ = ("folders", "git", "ignore_files", "mark")

    def __init__(self, mark: tuple[int, ...], folders: tuple[str, ...], ignore_files: tuple[str, ...], git: bool):
        self.mark = mark
        self.folders = folders
        self.ignore_files = ignore_files
        self.git = git


def _mark(status: os.stat_result) -> tuple[int, ...]:
    return (status.st_dev, status.st_ino, status.st_mtime_ns, status.st_ctime_ns)


def problem(path: str, root: str | None) -> str | None:
    """Why ripgrep must not read the ignore file at `path`, in words ("a FIFO, ..."); None when
    it may (or there is none). With `root`, a link out of that folder is a problem too."""
    try:
        found = os.lstat(path)
        status = os.stat(path) if stat.S_ISLNK(found.st_mode) else found
    except (OSError, ValueError):
        return None  # gone, or a link to nothing: ripgrep reads nothing
    mode = status.st_mode
    if stat.S_ISFIFO(mode) or stat.S_ISSOCK(mode):
        return f"{describe_kind(mode)}, which ripgrep would wait on"
    if stat.S_ISCHR(mode) or stat.S_ISBLK(mode):
        return f"{describe_kind(mode)}, which ripgrep would read without end"
    if root is not None and stat.S_ISLNK(found.st_mode):
        target = os.path.realpath(path)
        if relative_inside(target, root) is None:
            return f"a link to {shown(target)}, outside the workspace"
    if stat.S_ISREG(mode) and status.st_size > MAX_IGNORE_BYTES:
        return (
            f"{status.st_size / (1 << 20):.1f} MiB of ignore rules, more than the {MAX_IGNORE_BYTES >> 20} MiB "
            "codescout lets ripgrep read"
        )
    return None


def git_exclude_files(folder: str) -> list[str]:
    """The files ripgrep reads to find the exclude file of the repository whose `.git` is in
    `folder`: the `.git` file and `commondir` where there are such, and `info/exclude`."""
    dot_git = os.path.join(folder, ".git")
    found = []
    git_dir = dot_git
    if os.path.isfile(dot_git):
        found.append(dot_git)
        try:
            text = (read_regular(dot_git, POINTER_LIMIT) or b"").decode("utf-8", "replace")
        except OSError:
            return found
        if not text.startswith("gitdir: "):
            return found
        git_dir = os.path.join(folder, text[len("gitdir: ") :].strip())
    common = git_dir
    commondir = os.path.join(git_dir, "commondir")
    if os.path.lexists(commondir):
        found.append(commondir)
        try:
            shared = (read_regular(commondir, POINTER_LIMIT) or b"").decode("utf-8", "replace").strip()
        except OSError:
            shared = ""
        if shared:
            common = os.path.join(git_dir, shared)
    found.append(os.path.join(common, "info", "exclude"))
    return found


class IgnoreFiles:
    """The ignore files of one workspace, vetted before each search (see the module docstring);
    one vet at a time, outside the workspace's turn (a search's reading ahead goes on meanwhile)."""

    def __init__(self, root: str, cache: Callable[[], FolderCache | None] | None = None) -> None:
        self.root = root
        self._lock = threading.Lock()
        self._listings: dict[str, _Listing] = {}
        self._ignored: frozenset[str] = frozenset()  # absolute folders git reports as ignored
        self._ignored_key: object = None  # the ignore files' stat data when git was asked
        # Where what was seen is kept between processes (found at the first vet), and how much
        # was learnt since it was last read or written there.
        self._cache = cache
        self._kept: FolderCache | None = None
        self._listed_since = 0
        self._asked_since = False

    def vet(self, start: str, repository: RepositoryFacts | None, lookup: Lookup) -> Vetted:
        """What a search of `start` (an absolute folder or file inside the workspace) may go ahead
        with; BadIgnoreFile naming a file ripgrep must read and cannot."""
        if not take_lock(self._lock, lookup.seconds_left(Path(self.root))):
            raise SearchError("another search was looking at the ignore files for the whole time allowed; try again")
        try:
            if self._cache is not None:
                self._kept, self._cache = self._cache(), None
                if self._kept is not None:
                    self._restore(self._kept.load(self.root))
            vetted = self._vet(start, repository, lookup)
            if self._kept is not None and (
                self._asked_since or self._listed_since > max(SAVE_AFTER, len(self._listings) // 8)
            ):
                self._kept.save(self.root, self._state())
                self._listed_since, self._asked_since = 0, False
            return vetted
        finally:
            self._lock.release()

    def _state(self) -> dict[str, object]:
        """What is kept between processes: each folder's listing, and what git said is ignored."""
        return {
            "listings": {
                folder: [*listing.mark, listing.git, listing.ignore_files, listing.folders]
                for folder, listing in self._listings.items()
            },
            "ignored": sorted(self._ignored),
            "ignored_key": self._ignored_key,
        }

    def _restore(self, state: object) -> None:
        """Take up a `_state` read back from the cache; anything in it not as written, and none of it is taken."""
        if not isinstance(state, dict):
            return
        try:
            listings = {}
            for folder, (dev, ino, mtime, ctime, git, ignore_files, folders) in state["listings"].items():
                mark = (dev, ino, mtime, ctime)
                if not all(type(number) is int for number in mark) or type(git) is not bool:
                    return
                if not all(isinstance(name, str) for name in (folder, *ignore_files, *folders)):
                    return
                listings[folder] = _Listing(mark, tuple(folders), tuple(ignore_files), git)
            ignored = state["ignored"]
            if len(listings) > MAX_FOLDERS or not all(isinstance(folder, str) for folder in ignored):
                return
            ignored_key = _tupled(state["ignored_key"])
        except (KeyError, TypeError, ValueError, AttributeError):
            return
        self._listings, self._ignored, self._ignored_key = listings, frozenset(ignored), ignored_key

    def _vet(self, start: str, repository: RepositoryFacts | None, lookup: Lookup) -> Vetted:
        global_files = global_ignore_files()  # (read once: every walk and every level of it uses them)
        outside, negated = self._above(start, global_files)
        in_git = repository is not None and repository.in_git
        for _ in range(3):
            seen: list[tuple[str, tuple[int, ...] | None]] = []
            # A `!` rule in a .ignore or .rgignore can have ripgrep walk into a folder git ignores:
            # then every folder is walked. Else the folders git ignored when the ignore files last
            # stood as they do are left out; with no such answer, git is asked as the walk goes.
            pruning = in_git and not negated
            asking = repository if pruning and self._ignored_key is None else None
            pruned = self._ignored if pruning and asking is None else frozenset()
            excluded, notes, negation_below, ignored = self._below(
                start, seen, lookup, pruned, asking, global_files[-1]
            )
            if negation_below and not negated:
                negated = True
                continue
            if not pruning:
                break
            key = (tuple(seen), tuple(_signature(path) for path in outside))
            if asking is not None:
                self._ignored, self._ignored_key, self._asked_since = frozenset(ignored), key, True
                break
            if key == self._ignored_key:
                break
            self._ignored_key = None  # an ignore file changed since git was asked: walk again, asking it
        sizes = [(path, signature[1]) for path, signature in seen if signature is not None]
        sizes += [(path, os.path.getsize(path)) for path in outside if os.path.isfile(path)]
        largest = max(sizes, key=lambda entry: entry[1], default=None)
        return Vetted(excluded, notes, outside, largest)

    def _above(self, start: str, global_files: list[str]) -> tuple[list[str], bool]:
        """Check what ripgrep reads in the searched folder and those above it: (the files among them
        outside the workspace, which ripgrep may read as the pipeline's would; whether a .ignore or
        .rgignore among them holds a `!` rule)."""
        folders = [start, *ancestors(start)] if os.path.isdir(start) else ancestors(start)
        places: list[tuple[str, str | None]] = []  # (path, the folder a link there must stay in)
        for folder in folders:
            inside = self.root if relative_inside(folder, self.root) is not None else None
            places += [(os.path.join(folder, name), inside) for name in IGNORE_FILES]
            if os.path.lexists(os.path.join(folder, ".git")):
                places += [(path, None) for path in git_exclude_files(folder)]
        places += [(path, None) for path in global_files]
        outside = []
        negated = False
        for path, within in places:
            if not os.path.lexists(path):
                continue
            said = problem(path, within)
            if said is not None:
                raise BadIgnoreFile(f"{shown(path)} is {said}; every search here reads it, so none can run")
            if relative_inside(os.path.realpath(path), self.root) is None:
                outside.append(path)
            negated = negated or _negates(path)
        return outside, negated

    def _below(
        self,
        start: str,
        seen: list[tuple[str, tuple[int, ...] | None]],
        lookup: Lookup,
        pruned: frozenset[str],
        asking: RepositoryFacts | None,
        excludes: str,
    ) -> tuple[list[str], list[str], bool, set[str]]:
        """Walk the folders under `start` but those `pruned`, a level at a time, checking each one's
        ignore files: (folders to leave out, notes, whether a .ignore or .rgignore holds a `!`
        rule, the folders git ignores). With `asking`, git is asked which folders of each level
        its ignore rules leave out (`excludes`: the global excludes file ripgrep reads), once
        the ignore files it reads for them are checked; those are not walked."""
        excluded: list[str] = []
        notes: list[str] = []
        negated = False
        ignored: set[str] = set()
        if not os.path.isdir(start):
            return excluded, notes, negated, ignored
        recent = time.time_ns() - SLACK_NS
        base = os.path.normpath(asking.base) if asking is not None else None
        level = [(start, False)]  # (a folder, whether it is in a repository nested in this one)
        walked = 0
        while level:
            below: list[tuple[str, bool]] = []
            for folder, nested in level:
                listing = self._listing(folder, recent)
                if listing is None:
                    continue
                said = None
                for name in listing.ignore_files:
                    path = os.path.join(folder, name)
                    seen.append((path, _signature(path)))
                    said = said or _named(path, problem(path, self.root))
                    negated = negated or (said is None and _negates(path))
                if listing.git and said is None:
                    for path in git_exclude_files(folder):
                        if os.path.lexists(path):
                            seen.append((path, _signature(path)))
                            said = said or _named(path, problem(path, None))
                if said is not None:
                    if folder == start:  # (checked above: only a change since could bring this)
                        raise BadIgnoreFile(f"{said}; every search here reads it, so none can run")
                    name = relative_inside(folder, self.root) or "."
                    excluded.append(name)
                    notes.append(f"not searched: {shown(name + '/')}, because {said}")
                    continue
                # git's rules in this repository say nothing of a nested one's folders.
                inner = nested or (listing.git and os.path.normpath(folder) != base)
                below += [
                    (path, inner)
                    for path in (os.path.join(folder, name) for name in listing.folders)
                    if path not in pruned
                ]
                walked += 1
                if walked % 1024 == 0:
                    lookup.seconds_left(Path(self.root))  # (GitError once the call's time is up)
            if asking is not None:
                found = _ignored_among(asking, [path for path, inner in below if not inner], lookup, excludes)
                ignored |= found
                below = [(path, inner) for path, inner in below if path not in found]
            level = below
        return excluded, notes, negated, ignored

    def _listing(self, folder: str, recent: int) -> _Listing | None:
        """What `folder` holds (kept from last time while its stat is unchanged); None if it is no folder now."""
        try:
            status = os.lstat(folder)
        except (OSError, ValueError):
            return None
        if not stat.S_ISDIR(status.st_mode):
            return None
        mark = _mark(status)
        kept = self._listings.get(folder)
        if kept is not None and kept.mark == mark:
            return kept
        folders: list[str] = []
        ignore_files: list[str] = []
        git = False
        try:
            with os.scandir(folder) as entries:
                for entry in entries:
                    name = entry.name
                    if name == ".git":
                        git = True
                    elif name in IGNORE_FILES:
                        ignore_files.append(name)
                    elif name not in VCS_FOLDERS and entry.is_dir(follow_symlinks=False):
                        folders.append(name)
        except OSError:
            return None  # (ripgrep cannot list it either)
        listing = _Listing(mark, tuple(folders), tuple(ignore_files), git)
        if changed_ns(status) < recent:
            if len(self._listings) >= MAX_FOLDERS:
                self._listings.clear()
            self._listings[folder] = listing
            self._listed_since += 1
        return listing


def _tupled(value: object) -> object:
    """`value` read back from JSON with each list a tuple again, as the key it was written from."""
    return tuple(_tupled(item) for item in value) if isinstance(value, list) else value


def _negates(path: str) -> bool:
    """Whether the .ignore or .rgignore at `path` holds a `!` rule (one that lets files back in)."""
    if not path.endswith((".ignore", ".rgignore")) or path.endswith(".gitignore"):
        return False
    try:
        data = read_regular(path, MAX_IGNORE_BYTES) or b""
    except OSError:
        return False
    return any(line.startswith(b"!") for line in data.splitlines())


def _named(path: str, said: str | None) -> str | None:
    return None if said is None else f"{shown(path)} is {said}"


def _signature(path: str) -> tuple[int, ...] | None:
    try:
        status = os.stat(path)
    except (OSError, ValueError):
        return None
    return (status.st_ino, status.st_size, status.st_mtime_ns, status.st_ctime_ns)


def _ignored_among(repository: RepositoryFacts, folders: list[str], lookup: Lookup, excludes: str) -> set[str]:
    """Those of `folders` (absolute, in `repository`'s work tree, their ignore files and those
    above checked) that git's ignore rules leave out as ripgrep reads the rules: a rule that
    names the folder itself or one above it (where `ls-files --ignored --directory` also names a
    folder each file of which is ignored, into which ripgrep still walks and reads its ignore
    files), letter case kept (whatever core.ignoreCase says), and as the excludes file the
    global one ripgrep reads, `excludes` (not one the repository's own config names)."""
    assert repository.git is not None
    if not folders:
        return set()
    base = str(repository.base)
    names = [relative_inside(folder, base) or "." for folder in folders]
    overrides = Overrides(("-c", "core.ignoreCase=false", "-c", f"core.excludesFile={excludes}"))
    # "./" first, so that a name that starts with ":" is not read as pathspec magic; no "/" last,
    # which would have git read the folder's own .gitignore (git finds it a folder). Through a
    # pipe, not a temporary file: a container may have no folder it can write.
    reading, writing = os.pipe()
    feeder = threading.Thread(
        target=_feed, args=(writing, b"".join(b"./" + _git_name(name) + b"\0" for name in names)), daemon=True
    )
    feeder.start()
    try:
        status, out, err = repository.git.run(
            "check-ignore", "--stdin", "-z", "--verbose", "--non-matching", "--no-index",
            check=False, overrides=overrides, stdin=reading, literal=False,
            seconds=lookup.seconds_left(repository.base),
        )  # fmt: skip
    finally:
        os.close(reading)  # (a git that read nothing leaves the feeder's write failing, and ended)
        feeder.join()
    if status not in (0, 1):
        raise GitError(f"git check-ignore failed in {shown(base)}: {said_by_git(err, status)}")
    fields = out.split(b"\0")
    # Each folder's record: the rule's file (empty when none matched), line, rule, the name.
    if len(fields) != 4 * len(folders) + 1:
        raise GitError(f"git check-ignore answered {len(fields) // 4} of {len(folders)} folders in {shown(base)}")
    return {
        folder
        for index, folder in enumerate(folders)
        if fields[4 * index] and not fields[4 * index + 2].startswith(b"!")
    }


def _feed(fd: int, data: bytes) -> None:
    """Write `data` to the pipe `fd`, then close it; a reader that went away ends the writing."""
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        pass
    finally:
        os.close(fd)


def _git_name(name: str) -> bytes:
    """A `/`-separated name as git reads it on this system."""
    return name.encode("utf-8", "surrogatepass") if os.name == "nt" else os.fsencode(name)


# How a git config names the global excludes file (as ripgrep looks for it: the setting on a line of its own).
_EXCLUDES_FILE: Final = re.compile(rb'(?im)^\s*excludesfile\s*=\s*"?\s*(\S+?)\s*"?\s*$')


def global_ignore_files() -> list[str]:
    """The user's git config files ripgrep reads for `core.excludesFile`, and the file it names
    (else git's default place for it), as ripgrep finds them."""
    home = os.path.expanduser("~")
    config_home = os.environ.get("XDG_CONFIG_HOME") or os.path.join(home, ".config")
    configs = [os.path.join(home, ".gitconfig"), os.path.join(config_home, "git", "config")]
    for config in configs:
        try:
            data = read_regular(config, MAX_IGNORE_BYTES) or b""
        except OSError:
            continue
        named = _EXCLUDES_FILE.search(data)
        if named is not None:
            path = decode_name(named.group(1))
            path = os.path.join(home, path[2:]) if path.startswith("~/") else path
            return [*configs, path]
    return [*configs, os.path.join(config_home, "git", "ignore")]
