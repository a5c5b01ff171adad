"""`codescout hits`: ripgrep's output, plus git's history and CODEOWNERS, into rank arguments.

It runs no search itself: the user runs ripgrep. For each matched file it works out
* matches: the submatches ripgrep reported (`rg --json`) or its count (`rg --count-matches`);
* last_modified_days: see `RepositoryFacts` (git history, or file times outside git);
* owner: from CODEOWNERS, read as GitHub or as GitLab reads it (`codeowners.py`).

`RepositoryFacts` is also what the MCP tool `rank_workspace_hits` asks, so a file's age and
owner are worked out by one piece of code whichever way they are requested.
"""

from __future__ import annotations

import base64
import json
import math
import os
import re
import subprocess
import time
from collections.abc import Callable, Iterable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any, Final

from codescout_mcp.codeowners import CODEOWNERS_PLACES, CodeOwners, load_codeowners
from codescout_mcp.contract import MAX_INTEGER_DIGITS
from codescout_mcp.jsontext import shown

SECONDS_PER_DAY: Final = 86_400
GIT_TIMEOUT: Final = 120.0
# A file whose inode changed less than this before its status was read is read again: file
# times can be coarse, and a change in the same instant as the snapshot must not be missed.
STATUS_SLACK_NS: Final = 1_000_000_000

Warn = Callable[[str], None]


class HitsError(Exception):
    """Input or a repository the companion cannot use; printed as one line, exit status 1."""


class NeedsGit(Exception):
    """Raised by `describe(..., offline=True)` when the answer needs a git process first."""


# --- what ripgrep printed ------------------------------------------------------------------


def read_match_counts(data: bytes, source: str) -> dict[str, int]:
    """Match counts per path, in first-seen order, from `rg --json` or `rg --count-matches` output."""
    lines = data.split(b"\n")
    first = next((line for line in lines if line.strip()), None)
    if first is None:
        raise HitsError(f"{source}: no input; pipe in the output of `rg --json PATTERN`")
    if _is_json_event(first):
        counts = _from_json_stream(lines, source)
    elif b"\0" in data:
        counts = _from_null_counts(data, source)
    else:
        counts = _from_count_lines(lines, source)
    if not counts:
        raise HitsError(f"{source}: the ripgrep output holds no matches, so there is nothing to rank")
    return counts


def _is_json_event(line: bytes) -> bool:
    """Whether a whole line is a ripgrep JSON event (not merely a line starting with `{`)."""
    try:
        event = json.loads(line)
    except (ValueError, RecursionError):
        return False
    return isinstance(event, dict) and isinstance(event.get("type"), str)


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
        path = _event_path(data.get("path") if isinstance(data, dict) else None, source, number)
        if path is None or not isinstance(submatches, list):
            raise HitsError(f"{source}: line {number}: a match event without a path and submatches")
        # A match event is one line; a line can hold several matches. An empty list still
        # means the line matched (ripgrep's multiline quirks), so it counts once.
        counts[path] = counts.get(path, 0) + max(1, len(submatches))
    return counts


def _event_path(value: object, source: str, number: int) -> str | None:
    if not isinstance(value, dict):
        return None
    if isinstance(value.get("text"), str):
        text: str = value["text"]
        try:
            text.encode("utf-8")
        except UnicodeEncodeError:
            raise HitsError(
                f"{source}: line {number}: the path holds an unpaired surrogate, which no file name can"
            ) from None
        return _checked_path(text, source, number)
    if isinstance(value.get("bytes"), str):
        # A path that is not UTF-8: ripgrep sends its bytes in base64.
        try:
            raw = base64.b64decode(value["bytes"], validate=True)
        except ValueError:
            return None
        return _checked_path(os.fsdecode(raw), source, number)
    return None


def _checked_path(path: str, source: str, number: int) -> str:
    if "\0" in path:
        raise HitsError(f"{source}: line {number}: the path holds a NUL character, which no file name can")
    if not path:
        raise HitsError(f"{source}: line {number}: an empty path")
    return path


def _count(text: bytes, source: str, number: int) -> int:
    text = text.strip()
    if not text.isdigit():
        if text.startswith(b"-") and text[1:].isdigit():
            raise HitsError(f"{source}: line {number}: a negative match count")
        raise HitsError(f"{source}: line {number}: {shown(repr(text[:40]))} is not a match count")
    significant = text.lstrip(b"0") or b"0"  # leading zeros count towards Python's digit limit
    if len(significant) > MAX_INTEGER_DIGITS:
        raise HitsError(
            f"{source}: line {number}: a match count of more than {MAX_INTEGER_DIGITS} digits, too large to rank"
        )
    return int(significant)


def _from_count_lines(lines: list[bytes], source: str) -> dict[str, int]:
    counts: dict[str, int] = {}
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        path_bytes, sep, count_bytes = line.rpartition(b":")
        if not sep or not path_bytes:
            raise HitsError(
                f"{source}: line {number}: expected PATH:COUNT from `rg --count-matches` "
                "(with one file, add --with-filename)"
            )
        _add(counts, path_bytes, _count(count_bytes, source, number), source, number)
    return counts


# Anything but what bytes.strip() removes.
_NOT_BLANK: Final = re.compile(rb"[^ \t\n\r\x0b\x0c]")


def _from_null_counts(data: bytes, source: str) -> dict[str, int]:
    """`rg --count-matches --null`: PATH NUL COUNT newline, where PATH may hold newlines."""
    counts: dict[str, int] = {}
    position = 0
    line = 1
    # Stop where only blank space is left, found without copying the rest of the input.
    while _NOT_BLANK.search(data, position) is not None:
        nul = data.find(b"\0", position)
        if nul < 0:
            raise HitsError(f"{source}: line {line}: expected PATH, NUL, COUNT from `rg --count-matches --null`")
        end = data.find(b"\n", nul)
        end = len(data) if end < 0 else end
        path_bytes = data[position:nul]
        path_bytes = path_bytes.lstrip(b"\n") if position == 0 else path_bytes
        count_bytes = data[nul + 1 : end]
        if b"\0" in count_bytes:
            raise HitsError(f"{source}: line {line}: the path holds a NUL character, which no file name can")
        if not path_bytes:
            raise HitsError(f"{source}: line {line}: an empty path")
        _add(counts, path_bytes, _count(count_bytes, source, line), source, line)
        line += data.count(b"\n", position, end) + 1
        position = end + 1
    return counts


def _add(counts: dict[str, int], path_bytes: bytes, count: int, source: str, number: int) -> None:
    if count:
        path = os.fsdecode(path_bytes)
        counts[path] = counts.get(path, 0) + count


# --- git ------------------------------------------------------------------------------------


class Git:
    """Runs git in one repository: fixed argument lists, no shell, a timeout.

    `isolated` clears every GIT_* variable from the environment, so that the caller's
    environment cannot point git at another repository or change how it reads this one.
    """

    def __init__(self, where: Path, *, isolated: bool = False, timeout: float = GIT_TIMEOUT) -> None:
        self.where = where
        self.timeout = timeout
        env = dict(os.environ)
        if isolated:
            env = {k: v for k, v in env.items() if not k.startswith("GIT_")}
        self.env = env

    def command(self, *args: str) -> list[str]:
        # No locks taken, pathspecs matched literally, and no fsmonitor daemon started on the
        # user's behalf. (Paths are read with -z everywhere, so they are never quoted.)
        return ["git", "--no-optional-locks", "--literal-pathspecs", "-c", "core.fsmonitor=false", *args]

    def run(self, *args: str, check: bool = True) -> tuple[int, bytes, bytes]:
        """(status, stdout, stderr) of one git command; HitsError if it cannot run or overruns."""
        try:
            done = subprocess.run(
                self.command(*args),
                cwd=self.where,
                env=self.env,
                stdin=subprocess.DEVNULL,
                capture_output=True,
                timeout=self.timeout,
                check=False,
            )
        except subprocess.TimeoutExpired:
            raise HitsError(f"git {args[0]} took longer than {self.timeout:.0f} s in {self.where}") from None
        if check and done.returncode != 0:
            said = os.fsdecode(done.stderr).strip().splitlines()
            why = shown(said[-1]) if said else f"exit status {done.returncode}, and nothing said"
            raise HitsError(f"git {args[0]} failed in {self.where}: {why}")
        return done.returncode, done.stdout, done.stderr

    @contextmanager
    def stream(self, *args: str) -> Iterator[_Deadlined]:
        """git's stdout as it is produced; the process is ended when the block ends."""
        proc = subprocess.Popen(
            self.command(*args),
            cwd=self.where,
            env=self.env,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert proc.stdout is not None
        deadline = time.monotonic() + self.timeout
        try:
            yield _Deadlined(proc.stdout, deadline, f"git {args[0]} took longer than {self.timeout:.0f} s")
        finally:
            # Not communicate(): a child git started would keep the pipe open and make us wait.
            proc.kill()
            proc.stdout.close()
            proc.wait()


class _Deadlined:
    """A read stream that raises HitsError once a deadline has passed (checked per read)."""

    def __init__(self, stream: IO[bytes], deadline: float, message: str) -> None:
        self.stream = stream
        self.deadline = deadline
        self.message = message

    def read(self, size: int) -> bytes:
        if time.monotonic() > self.deadline:
            raise HitsError(self.message)
        return self.stream.read(size)


def log_entries(stream: Any) -> Iterator[tuple[int, str]]:
    """(commit time, path) pairs from `git log -z --format=%x00%ct --name-only`.

    Each commit reads NUL, its time, NUL, then (after a newline) its paths, each ending in
    NUL. A path is never empty, so an empty field always announces the next commit's time.
    """
    pending = b""
    when = 0
    expect_time = False
    first_path = False
    for chunk in iter(lambda: stream.read(1 << 16), b""):
        fields = (pending + chunk).split(b"\0")
        pending = fields.pop()
        for field in fields:
            if expect_time:
                when = int(field)
                expect_time = False
                first_path = True
            elif not field:
                expect_time = True
            else:
                if first_path:
                    field = field.removeprefix(b"\n")
                    first_path = False
                if field:
                    yield when, os.fsdecode(field)


@dataclass(frozen=True)
class FileFacts:
    """What is known of one file: whole days since it last changed, and its owners."""

    days: int
    owner: str | None


class RepositoryFacts:
    """Ages and owners of files in one git work tree (or, outside git, one plain folder).

    A file's age is the committer date of the first commit met walking the current branch's
    first-parent history back from HEAD whose tree changed the file relative to its first
    parent (a merge counts the changes it brought in). A file with uncommitted changes was
    changed now; a file git does not track uses its modification time, as does every file
    outside a git repository. In a shallow clone, files last changed beyond the boundary get
    the boundary commit's date, and a warning says so.

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
    ) -> None:
        self.base = base  # the work tree root, or the plain folder
        self.git = git
        self.git_dir = git_dir
        self.common_dir = common_dir
        self.shallow = shallow
        self.dialect = codeowners
        self.warn = warn
        self._signature: tuple[object, ...] | None = None
        self._owners: CodeOwners | None = None
        self._owners_signature: tuple[object, ...] | None = None
        self._forget()

    @property
    def in_git(self) -> bool:
        return self.git is not None

    def _forget(self) -> None:
        self._status: dict[str, str] = {}  # path -> "changed" | "untracked"
        self._status_read_at: int | None = None  # wall clock (ns) when the snapshot was taken
        self._status_reused = False
        self._rechecked: dict[str, tuple[int, str | None]] = {}
        self._commit_time: dict[str, int] = {}
        self._walk_complete = False
        self._boundary_time: int | None = None

    @classmethod
    def open(
        cls,
        repo: str | None,
        *,
        cwd: Path | None = None,
        codeowners: str | None = None,
        warn: Warn,
        isolated: bool = False,
    ) -> RepositoryFacts:
        """The facts for --repo's work tree (which must be one), else the one around `cwd`."""
        if cwd is None:
            try:
                cwd = Path.cwd()
            except OSError as error:
                raise HitsError(f"cannot read the current directory: {error.strerror}") from None
        where = Path(repo) if repo is not None else cwd
        named = f"--repo {shown(repo)}" if repo is not None else shown(str(cwd))
        if repo is not None and not where.is_dir():
            raise HitsError(f"{named}: no such directory")
        git = Git(where, isolated=isolated)
        try:
            status, out, _ = git.run(
                "rev-parse",
                "--is-bare-repository",
                "--is-shallow-repository",
                "--path-format=absolute",
                "--git-dir",
                "--git-common-dir",
                "--show-toplevel",
                check=False,
            )
        except FileNotFoundError:
            if repo is not None:
                raise HitsError("git is not installed, and --repo needs it") from None
            warn("git is not installed; ages come from file modification times and there are no owners")
            return cls(_real(cwd), git=None, codeowners=codeowners, warn=warn)
        answers = os.fsdecode(out).split("\n")
        if answers[0] == "true" or (status != 0 and answers[0] == "false"):
            raise HitsError(f"{named}: a bare git repository (or a .git folder) has no work tree; use a checkout")
        if status != 0:
            if repo is not None:
                raise HitsError(f"{named}: not a git repository")
            return cls(_real(cwd), git=None, codeowners=codeowners, warn=warn)
        root = _real(Path(answers[4]))
        return cls(
            root,
            git=Git(root, isolated=isolated),
            git_dir=Path(answers[2]),
            common_dir=Path(answers[3]),
            shallow=answers[1] == "true",
            codeowners=codeowners,
            warn=warn,
        )

    # -- where a path is

    def locate(self, given: str, cwd: Path, folders: dict[str, str] | None = None) -> str:
        """`given` (relative to `cwd`, or absolute) as a `/`-separated path relative to the base.

        Folders on the way are resolved (`..` and links, as the system would), so a path
        through a symbolic link (a temporary folder that is a link, say) still lands in the
        repository; the file's own name is kept, as git tracks a link by its own name.
        Outside the base it starts with `../`. `folders` caches resolved folders across calls.
        """
        joined = os.path.join(cwd, given)
        folder, name = os.path.split(joined)
        if name in ("", ".", ".."):
            folder, name = joined, ""
        real_folder = resolved_folder(folder, folders if folders is not None else {})
        return self.relative(os.path.join(real_folder, name) if name else real_folder)

    def relative(self, real_path: str) -> str:
        """An absolute, resolved path as `locate` gives it: relative to the base, `/`-separated."""
        prefix = os.path.join(self.base, "")
        if real_path.startswith(prefix) and os.sep == "/":
            return real_path[len(prefix) :]
        return Path(os.path.relpath(real_path, self.base)).as_posix()

    # -- freshness

    def refresh(self) -> None:
        """Drop what is stale: all of it after a commit, a checkout or an index change."""
        signature = self._repository_signature()
        if signature != self._signature:
            self._signature = signature
            self._forget()
        else:
            self._status_reused = True

    def _repository_signature(self) -> tuple[object, ...]:
        if self.git_dir is None or self.common_dir is None:
            return ()
        head = self.git_dir / "HEAD"
        try:
            target = head.read_text(encoding="utf-8", errors="replace").strip()
        except OSError:
            target = ""
        ref = target[5:].strip() if target.startswith("ref: ") else None
        # A branch that lives only in packed-refs is written back to its own file when it
        # moves, so packed-refs itself need not be watched; reftable repositories keep all
        # their refs in tables that tables.list names.
        paths = [head, self.git_dir / "index", self.common_dir / "shallow"]
        paths += [self.common_dir / "reftable" / "tables.list"]
        if ref is not None:
            paths += [self.common_dir / ref, self.git_dir / ref]
        return (target, *(_stat_signature(path) for path in paths))

    # -- the facts

    def describe(
        self,
        names: Iterable[str],
        now: float,
        *,
        stats: dict[str, os.stat_result] | None = None,
        offline: bool = False,
    ) -> dict[str, FileFacts | OSError]:
        """Days and owner for each path (relative to the base), or the error reading its time.

        `stats` may hold what `os.stat` already said of some of the paths. With `offline`,
        NeedsGit is raised (before anything is changed) if git would have to run: the caller
        can then ask again where a slow answer does no harm.
        """
        wanted = list(dict.fromkeys(names))
        inside = [name for name in wanted if not name.startswith("../") and name != ".."]
        inside_set = set(inside)
        known: dict[str, os.stat_result | OSError] = dict(stats or {})
        base = os.path.join(self.base, "")
        for name in wanted:
            if name in known:
                continue
            try:
                known[name] = os.stat(base + name)
            except OSError as error:
                known[name] = error
        stats_of = known
        if offline and self.shallow and self.in_git and self._boundary_time is None:
            raise NeedsGit
        states = self._states(inside, stats_of, offline) if self.in_git else {}
        tracked = [name for name in inside if states.get(name) is None and not isinstance(stats_of[name], OSError)]
        commit_times = self._commit_times(tracked, offline) if self.in_git else {}
        owners = self.codeowners()
        facts: dict[str, FileFacts | OSError] = {}
        for name in wanted:
            stat = stats_of[name]
            if isinstance(stat, OSError):
                facts[name] = stat
                continue
            if states.get(name) == "changed":
                days = 0
            elif name in commit_times:
                days = whole_days(now, commit_times[name])
            else:
                days = whole_days(now, stat.st_mtime)
            owner = owners.owner_of(name) if name in inside_set else None
            facts[name] = FileFacts(days, owner)
        if self.shallow and self.in_git:
            self.warn(self._shallow_warning())
        return facts

    def codeowners(self) -> CodeOwners:
        """The CODEOWNERS rules, read again only when a CODEOWNERS file changed."""
        if not self.in_git:
            return CodeOwners.empty()
        signature = tuple(_stat_signature(self.base / place) for place in CODEOWNERS_PLACES)
        if self._owners is None or signature != self._owners_signature:
            self._owners = load_codeowners(self.base, self.dialect, self.warn)
            self._owners_signature = signature
        return self._owners

    def _states(
        self, names: list[str], stats: dict[str, os.stat_result | OSError], offline: bool
    ) -> dict[str, str | None]:
        """Each path's uncommitted state: "changed", "untracked" or None (as committed)."""
        assert self.git is not None
        if self._status_read_at is None:
            if offline:
                raise NeedsGit
            self._status_read_at = time.time_ns()
            self._status = self._read_status(())
            self._status_reused = False
        states: dict[str, str | None] = {}
        again: list[str] = []
        for name in names:
            stat = stats[name]
            read_at, state = self._rechecked.get(name, (self._status_read_at, self._status.get(name)))
            if self._status_reused and (isinstance(stat, OSError) or stat.st_ctime_ns >= read_at - STATUS_SLACK_NS):
                again.append(name)
            states[name] = state
        if again:
            if offline:
                raise NeedsGit
            read_at = time.time_ns()
            fresh = self._read_status(again)
            for name in again:
                states[name] = fresh.get(name)
                self._rechecked[name] = (read_at, fresh.get(name))
        return states

    def _read_status(self, names: Iterable[str]) -> dict[str, str]:
        assert self.git is not None
        names = list(names)
        _, out, _ = self.git.run(
            "status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames", "--", *names
        )
        status: dict[str, str] = {}
        for field in out.split(b"\0"):
            if len(field) < 4:
                continue
            state, name = field[:2], os.fsdecode(field[3:])
            if state == b"??":
                status[name] = "untracked"
            elif state != b"!!":
                status[name] = "changed"
        return status

    def _commit_times(self, names: list[str], offline: bool) -> dict[str, int]:
        """Each tracked path's commit time by the rule in the class docstring."""
        missing = {name for name in names if name not in self._commit_time}
        if missing and not self._walk_complete:
            if offline:
                raise NeedsGit
            self._walk(missing if not self._commit_time else None)
        return {name: self._commit_time[name] for name in names if name in self._commit_time}

    def _walk(self, wanted: set[str] | None) -> None:
        """One pass over first-parent history; stops once every wanted path is found."""
        assert self.git is not None
        found = self._commit_time
        remaining = set(wanted) if wanted is not None else None
        args = ("log", "--first-parent", "--diff-merges=first-parent", "--no-renames", "-z")
        with self.git.stream(*args, "--format=%x00%ct", "--name-only", "HEAD", "--") as out:
            for when, name in log_entries(out):
                if name not in found:
                    found[name] = when
                    if remaining is not None:
                        remaining.discard(name)
                        if not remaining:
                            return
        self._walk_complete = True

    def _shallow_warning(self) -> str:
        if self._boundary_time is None:
            self._boundary_time = self._read_boundary_time()
        when = datetime.fromtimestamp(self._boundary_time, timezone.utc).strftime("%Y-%m-%d")
        return (
            f"this is a shallow clone: history before {when} (its oldest commit here) is missing, so files "
            "last changed earlier show that date; run `git fetch --unshallow` for their real ages"
        )

    def _read_boundary_time(self) -> int:
        assert self.git is not None and self.common_dir is not None
        try:
            boundary = (self.common_dir / "shallow").read_text(encoding="ascii").split()
        except OSError:
            boundary = []
        if not boundary:
            return 0
        _, out, _ = self.git.run("log", "--no-walk=unsorted", "--format=%ct", *boundary, "--")
        times = [int(line) for line in out.split() if line.isdigit()]
        return max(times, default=0)


def resolved_folder(folder: str, known: dict[str, str]) -> str:
    """`folder` with `..` and links resolved as the system would, reusing folders seen before.

    Each folder is resolved from its (resolved) parent with one `lstat`, so paths that share
    folders share the work; `known` may start with folders already known to be resolved.
    """
    found = known.get(folder)
    if found is not None:
        return found
    parent, name = os.path.split(folder)
    if parent == folder:  # the file system's root
        real = folder
    elif name in ("", "."):
        real = resolved_folder(parent, known)
    elif name == "..":
        real = os.path.dirname(resolved_folder(parent, known))
    else:
        candidate = os.path.join(resolved_folder(parent, known), name)
        real = os.path.realpath(candidate) if os.path.islink(candidate) else candidate
    known[folder] = real
    return real


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _stat_signature(path: Path) -> tuple[int, int, int] | None:
    try:
        stat = os.stat(path)
    except OSError:
        return None
    return (stat.st_mtime_ns, stat.st_size, stat.st_ino)


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
    facts: RepositoryFacts,
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
    located: dict[str, int] = {}
    folders: dict[str, str] = {}
    for given, count in counts.items():
        name = facts.locate(given, cwd, folders)
        located[name] = located.get(name, 0) + count
    facts.refresh()
    described = facts.describe(sorted(located), now)
    hits: list[dict[str, Any]] = []
    for name in sorted(located):
        fact = described[name]
        if isinstance(fact, OSError):
            facts.warn(f"{shown(name)}: left out, cannot read its modification time ({fact.strerror})")
            continue
        hit: dict[str, Any] = {"path": name, "matches": located[name], "last_modified_days": fact.days}
        if fact.owner is not None:
            hit["owner"] = fact.owner
        hits.append(hit)
    if not hits:
        raise HitsError("no hits are left to rank")
    return {"hits": hits, **({"limit": limit} if limit is not None else {})}
