"""The user's cache folder: what was read of a repository, kept so that a new process need not read it again.

Where: `CODESCOUT_CACHE_DIR` when it is set, else the platform's cache folder
(`$XDG_CACHE_HOME/codescout`, or `~/.cache/codescout`, on Linux and the other POSIX systems;
`~/Library/Caches/codescout` on macOS; `%LOCALAPPDATA%\\codescout\\Cache` on Windows), as pip and uv
keep theirs. Each repository has one file under `history/`, named by a hash of its git folder
and work tree, holding for each path the commit time of the last first-parent commit that
changed it, as of one commit (docs/workspace.md says what that costs on disk). Each workspace
has one file under `folders/`, named by a hash of its path: what the vetting of its ignore files
saw of its folders (`ignorefiles.IgnoreFiles`), each folder's listing with its stat.

The cache is only ever a way to be faster: every doubt means it is not used (the history is
walked instead), and deleting the folder loses nothing. So a folder that is a symbolic link,
belongs to another user or can be written by others is not used; a file is opened without
following a link, and read only if it is a regular file of the user's whose header, size and
checksum agree; a file is written whole under another name, flushed to disk and renamed into
place, so that a reader (another server, another `codescout search`) finds the old file or the
new one, never a part of one, and two writers at once leave one of their files, both right.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import stat
import sys
from pathlib import Path
from typing import Any, Final, NamedTuple

logger = logging.getLogger("codescout")

CACHE_VARIABLE: Final = "CODESCOUT_CACHE_DIR"
MAGIC: Final = b"codescout history 1\n"
FOLDERS_MAGIC: Final = b"codescout folders 1\n"
# The largest file read back (a history of a million paths is about 60 MB).
MAX_FILE_BYTES: Final = 512 << 20


class Snapshot(NamedTuple):
    """A walk of the history behind `commit` (hex): each path's commit time, the paths dated by a
    shallow clone's boundary, that boundary's time, and the commit the walk would go on from
    (`next`; None: it reached the root); `made`: when it was written (POSIX seconds)."""

    commit: bytes
    times: dict[str, int]
    at_boundary: set[str]
    boundary_time: int | None
    next: bytes | None = None
    made: float = 0.0


_ENABLED = True
_USER_CACHE: list[HistoryCache | None] = []  # the process's one, once made
_USER_FOLDERS: list[FolderCache | None] = []


def disable() -> None:
    """No cache for this process (`--no-cache`): every history is walked anew."""
    global _ENABLED
    _ENABLED = False


def user_cache() -> HistoryCache | None:
    """The process's history cache in the user's cache folder (made once), or None: disabled,
    or no folder that is safe to use."""
    if not _ENABLED:
        return None
    if not _USER_CACHE:
        _USER_CACHE.append(HistoryCache.for_user())
    return _USER_CACHE[0]


def user_folder_cache() -> FolderCache | None:
    """The process's cache of folder listings in the user's cache folder (made once), or None:
    disabled, or no folder that is safe to use."""
    if not _ENABLED:
        return None
    if not _USER_FOLDERS:
        _USER_FOLDERS.append(FolderCache.for_user())
    return _USER_FOLDERS[0]


def cache_folder(environ: dict[str, str] | None = None, platform: str = sys.platform) -> Path | None:
    """Where codescout keeps its cache: CODESCOUT_CACHE_DIR, else the platform's cache folder."""
    env = os.environ if environ is None else environ
    named = env.get(CACHE_VARIABLE)
    if named:
        return Path(named)
    home = env.get("HOME") or env.get("USERPROFILE")
    if platform == "win32":
        local = env.get("LOCALAPPDATA")
        return Path(local) / "codescout" / "Cache" if local else None
    if platform == "darwin":
        return Path(home) / "Library" / "Caches" / "codescout" if home else None
    xdg = env.get("XDG_CACHE_HOME")
    if xdg and os.path.isabs(xdg):
        return Path(xdg) / "codescout"
    return Path(home) / ".cache" / "codescout" if home else None


def _folder_problem(path: Path) -> str | None:
    """Why `path` (a folder that exists) must not hold the cache; None when it may."""
    try:
        status = os.lstat(path)
    except OSError as error:
        return f"cannot be read ({error.strerror})"
    if stat.S_ISLNK(status.st_mode):
        return "is a symbolic link"
    if not stat.S_ISDIR(status.st_mode):
        return "is not a folder"
    if hasattr(os, "getuid"):  # (Windows keeps a user's folders to the user by their ACLs)
        if status.st_uid != os.getuid():
            return "belongs to another user"
        if status.st_mode & 0o022:
            return "can be written by other users"
    return None


class _KeptFiles:
    """One folder of the cache, and what was said of it in the log (each thing once)."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self._said: set[str] = set()

    def _say(self, message: str) -> None:
        if message not in self._said:
            self._said.add(message)
            logger.info("%s", message)


class HistoryCache(_KeptFiles):
    """The `history/` folder of the cache: one walk per repository (see the module docstring)."""

    @classmethod
    def for_user(cls, folder: Path | None = None) -> HistoryCache | None:
        """The cache in the user's folder (made if missing), or None, said once in the log, where
        there is none or it is not safe to use."""
        history = _kept_folder("history", folder, "histories are walked anew")
        return None if history is None else cls(history)

    def path_for(self, key: dict[str, str]) -> Path:
        """The file of the repository `key` names (its git folder and work tree)."""
        name = hashlib.sha256(f"{key.get('git_dir', '')}\0{key.get('base', '')}".encode(errors="surrogatepass"))
        return self.folder / name.hexdigest()[:40]

    def load(self, key: dict[str, str]) -> Snapshot | None:
        """The walk written for `key`, if there is one that reads whole and was made for it; else None."""
        path = self.path_for(key)
        data = _read_kept(path)
        if data is None:
            return None
        try:
            return _parse(data, key)
        except (ValueError, KeyError, TypeError, AttributeError, UnicodeDecodeError):
            self._say(f"the cached history {path} does not read as written; the history is walked anew")
            return None

    def save(self, key: dict[str, str], snapshot: Snapshot) -> None:
        """Write `snapshot` for `key`, whole or not at all (a failure is said once, and costs only speed)."""
        path = self.path_for(key)
        problem = _write_whole(path, _written(snapshot, key))
        if problem is not None:
            self._say(f"cannot write the cached history {path} ({problem}); it is walked anew next time")


class FolderCache(_KeptFiles):
    """The `folders/` folder of the cache: for each workspace, what its folders held when last
    listed (`ignorefiles.IgnoreFiles` keeps it), one file per workspace named by a hash of its path."""

    @classmethod
    def for_user(cls, folder: Path | None = None) -> FolderCache | None:
        """The cache in the user's folder (made if missing), or None, said once in the log, where
        there is none or it is not safe to use."""
        folders = _kept_folder("folders", folder, "the workspace's folders are listed anew")
        return None if folders is None else cls(folders)

    def path_for(self, root: str) -> Path:
        return self.folder / hashlib.sha256(root.encode(errors="surrogatepass")).hexdigest()[:40]

    def load(self, root: str) -> object:
        """What was written for the workspace `root` (a JSON value), if it reads whole; else None."""
        path = self.path_for(root)
        data = _read_kept(path)
        if data is None:
            return None
        try:
            header, body = _unframed(data, FOLDERS_MAGIC)
            return json.loads(bytes(body)) if header["root"] == root else None
        except (ValueError, KeyError, TypeError, UnicodeDecodeError):
            self._say(f"the cached folders {path} do not read as written; they are listed anew")
            return None

    def save(self, root: str, state: object) -> None:
        """Write `state` (a JSON value) for the workspace `root`, whole or not at all."""
        path = self.path_for(root)
        problem = _write_whole(
            path, _framed(FOLDERS_MAGIC, {"root": root}, json.dumps(state, separators=(",", ":")).encode())
        )
        if problem is not None:
            self._say(f"cannot write the cached folders {path} ({problem}); they are listed anew next time")


def _kept_folder(kind: str, folder: Path | None, otherwise: str) -> Path | None:
    """The cache's folder `kind` (the cache folder itself is `folder`, else the user's), both made
    if missing; None, said in the log with `otherwise`, where there is none or it is not safe to use."""
    root = folder if folder is not None else cache_folder()
    if root is None:
        return None
    kept = root / kind
    # Each folder is looked at before anything is made in it: nothing is made through a link,
    # nor in a folder of another user's or one others can write to.
    for path in (root, kept):
        try:
            if not os.path.lexists(path):
                if path == root:
                    os.makedirs(path, mode=0o700, exist_ok=True)
                else:
                    os.mkdir(path, 0o700)
        except OSError as error:
            logger.info("the cache folder %s cannot be made (%s); %s", path, error.strerror, otherwise)
            return None
        problem = _folder_problem(path)
        if problem is not None:
            logger.warning("the cache folder %s %s; it is not used, and %s", path, problem, otherwise)
            return None
    return kept


def _write_whole(path: Path, data: bytes) -> str | None:
    """Write `data` to `path` whole or not at all: under another name, flushed to disk, then
    renamed into place. None when written; else why not, in words."""
    temporary = path.with_name(f".{path.name}.{os.getpid()}.{os.urandom(4).hex()}.tmp")
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_BINARY", 0)
    try:
        fd = os.open(temporary, flags, 0o600)
        try:
            view = memoryview(data)
            while view:
                view = view[os.write(fd, view) :]
            os.fsync(fd)
        finally:
            os.close(fd)
        os.replace(temporary, path)
    except OSError as error:
        with contextlib.suppress(OSError):
            os.unlink(temporary)
        return error.strerror or str(error)
    return None


def _read_own_file(path: Path) -> bytes | None:
    """The bytes of the user's own regular file at `path`, opened without following a link; None
    for anything else (a link, another user's file, a FIFO, one too large)."""
    flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0) | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0)
    fd = os.open(path, flags)
    try:
        status = os.fstat(fd)
        if not stat.S_ISREG(status.st_mode) or status.st_size > MAX_FILE_BYTES:
            return None
        if hasattr(os, "getuid") and status.st_uid != os.getuid():
            return None
        chunks = []
        size = 0
        while chunk := os.read(fd, 1 << 20):
            size += len(chunk)
            if size > MAX_FILE_BYTES:
                return None
            chunks.append(chunk)
        return b"".join(chunks)
    finally:
        os.close(fd)


def _written(snapshot: Snapshot, key: dict[str, str]) -> bytes:
    """The file for `snapshot`: the magic line, a JSON header (what it was made for, its size and
    checksum), then for each path `time flag NUL path NUL` (flag 1: dated by a shallow boundary)."""
    at_boundary = snapshot.at_boundary
    body = b"".join(
        b"%d %d\0%s\0" % (when, name in at_boundary, name.encode("utf-8", "surrogatepass"))
        for name, when in snapshot.times.items()
    )
    header: dict[str, object] = {
        **key,
        "commit": snapshot.commit.decode("ascii"),
        "next": snapshot.next.decode("ascii") if snapshot.next is not None else None,
        "boundary_time": snapshot.boundary_time,
        "made": snapshot.made,
        "paths": len(snapshot.times),
    }
    return _framed(MAGIC, header, body)


def _framed(magic: bytes, header: dict[str, object], body: bytes) -> bytes:
    """A cache file: the magic line, the JSON `header` with the body's size and checksum added, the body."""
    header = {**header, "size": len(body)}
    header["sha256"] = _checksum(header, body)
    return magic + json.dumps(header, sort_keys=True).encode() + b"\n" + body


def _unframed(data: bytes, magic: bytes) -> tuple[dict[str, Any], memoryview]:
    """The header and body of a `_framed` file; ValueError (and the like) if it does not read whole."""
    if not data.startswith(magic):
        raise ValueError("not a file of this kind")
    header_end = data.index(b"\n", len(magic))
    header = json.loads(data[len(magic) : header_end])
    if not isinstance(header, dict):
        raise ValueError("a header that is no object")
    body = memoryview(data)[header_end + 1 :]
    if len(body) != header["size"] or _checksum(header, body) != header["sha256"]:
        raise ValueError("its size or checksum does not agree")
    return header, body


def _read_kept(path: Path) -> bytes | None:
    """`_read_own_file`, with None for a file that cannot be opened (none yet, say)."""
    try:
        return _read_own_file(path)
    except OSError:
        return None


def _checksum(header: dict[str, object], body: bytes | memoryview) -> str:
    """The SHA-256 of the header (but its checksum) and the body: one changed byte anywhere shows."""
    digest = hashlib.sha256(json.dumps({k: v for k, v in header.items() if k != "sha256"}, sort_keys=True).encode())
    digest.update(b"\n")
    digest.update(body)
    return digest.hexdigest()


def _parse(data: bytes, key: dict[str, str]) -> Snapshot | None:
    """The snapshot in `data`, if it was made for `key`; ValueError (and the like) if it does not read."""
    header, body = _unframed(data, MAGIC)
    if any(header.get(name) != value for name, value in key.items()):
        return None  # another repository's, or another state of its shallow boundary
    fields = bytes(body).split(b"\0")
    if fields.pop() != b"" or len(fields) != 2 * header["paths"]:
        raise ValueError("its paths do not agree with its header")
    times: dict[str, int] = {}
    at_boundary: set[str] = set()
    for index in range(0, len(fields), 2):
        stamp, _, flag = fields[index].partition(b" ")
        name = fields[index + 1].decode("utf-8", "surrogatepass")
        times[name] = int(stamp)
        if flag == b"1":
            at_boundary.add(name)
    commit, then = _commit_id(header["commit"]), header["next"]
    boundary_time = header["boundary_time"]
    if boundary_time is not None and not isinstance(boundary_time, int):
        raise ValueError("a boundary time that is no number")
    return Snapshot(
        commit,
        times,
        at_boundary,
        boundary_time,
        next=None if then is None else _commit_id(then),
        made=float(header.get("made", 0)),
    )


def _commit_id(value: object) -> bytes:
    if not isinstance(value, str) or not value or not all(char in "0123456789abcdef" for char in value):
        raise ValueError("no commit id")
    return value.encode("ascii")
