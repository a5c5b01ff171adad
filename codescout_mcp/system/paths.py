"""Where a path is: inside a folder or not, however it is spelled; resolved folders; file times;
the few files codescout reads itself (never a FIFO or a device).

The rules that differ by system come from `platform.System`, passed in (default: this one).
"""

from __future__ import annotations

import contextlib
import errno
import os
import stat

from codescout_mcp.system.platform import CURRENT, System, posix_form

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from pathlib import Path


# --- where a path is ------------------------------------------------------------------------


def relative_inside(path: str, root: str, system: System = CURRENT) -> str | None:
    """`path` relative to `root` with `/` separators, if it is inside by spelling; else None.

    Both are absolute and already resolved. The spelling is compared as written after the
    system's own normalisation (on Windows: `/` and `\\` alike, drive letters and the rest
    compared without case), so only a real difference of folder makes it outside; the root
    itself is inside, as "".
    """
    paths = system.paths
    path, root = paths.normpath(path), paths.normpath(root)
    if system.windows:
        path_key, root_key = path.casefold(), root.casefold()
    else:
        path_key, root_key = path, root
    if path_key == root_key:
        return ""
    prefix = root_key if root_key.endswith(paths.sep) else root_key + paths.sep
    if path_key.startswith(prefix):
        return posix_form(path[len(prefix) :], system)
    return None


def ancestors(path: str, system: System = CURRENT) -> list[str]:
    """The folders that hold `path`, nearest first, up to the top of its drive or share."""
    paths = system.paths
    found: list[str] = []
    current = paths.normpath(path)
    while True:
        parent = paths.dirname(current)
        if parent == current or not parent:
            return found
        found.append(parent)
        current = parent


def same_folder_inside(
    path: str, root: str, identities: dict[str, tuple[int, int] | None], *, itself: bool = False
) -> str | None:
    """`path` relative to `root` when one of its folders IS the root, however it is spelled
    (`itself`: or `path` is the root, "" then).

    For the paths `relative_inside` calls outside: another letter case or normalisation on
    a file system that ignores them, another mount or drive letter (a bind mount, a SUBST
    drive) of the same folder. Folders are compared by device and inode, as `samefile`
    does; `identities` caches each folder's (None: cannot be read, or no inode number).
    """

    wanted = folder_identity(root, identities)
    if wanted is None:
        return None
    for folder in [path, *ancestors(path)] if itself else ancestors(path):
        if folder_identity(folder, identities) == wanted:
            return relative_inside(path, folder)
    return None


def folder_identity(folder: str, identities: dict[str, tuple[int, int] | None]) -> tuple[int, int] | None:
    """A folder's (device, inode), kept in `identities`; None when it cannot be read or has no inode number."""
    if folder not in identities:
        try:
            info = os.stat(folder)
        except (OSError, ValueError):
            identities[folder] = None
        else:
            identities[folder] = (info.st_dev, info.st_ino) if info.st_ino else None
    return identities[folder]


def relative_to(path: str, base: str, system: System = CURRENT) -> str:
    """`path` relative to `base`, `/`-separated (`../` when outside); absolute if no such path.

    A path on another drive than `base` (Windows) has no relative form: it is given whole,
    with `/` separators, rather than raising as `relpath` does.
    """
    inside = relative_inside(path, base, system)
    if inside is not None:
        return inside or "."
    try:
        return posix_form(system.paths.relpath(path, base), system)
    except ValueError:
        return posix_form(path, system)


def is_link(path: str) -> bool:
    """Whether `path` is a symbolic link or (Windows) a junction: something to resolve."""
    if os.path.islink(path):
        return True
    isjunction: Callable[[str], bool] | None = getattr(os.path, "isjunction", None)  # Python 3.12
    if isjunction is not None:
        return isjunction(path)
    if CURRENT.windows:  # Windows before Python 3.12 (simulated in the tests elsewhere)
        try:
            tag = os.lstat(path).st_reparse_tag  # type: ignore[attr-defined, unused-ignore]
        except (OSError, AttributeError):
            return False
        return bool(tag == 0xA0000003)  # IO_REPARSE_TAG_MOUNT_POINT (only Windows' stat has the name)
    return False


def real_path(path: str) -> str:
    """`os.path.realpath(path)`, tried again when a link on the way was swapped for a folder (or
    back) as it was read, which makes it raise (EINVAL, ENOTDIR); OSError if it keeps changing."""
    for _ in range(2):
        try:
            return os.path.realpath(path)
        except OSError:
            continue
    return os.path.realpath(path)


def resolved_folder(folder: str, known: dict[str, str]) -> str:
    """`folder` with `..`, links and junctions resolved as the system would, reusing `known`.

    Each folder is resolved from its (resolved) parent with one `lstat`, so paths that share
    folders share the work; `known` may start with folders already known to be resolved. It
    walks the path instead of recursing, so a thousand folders deep is as good as one.
    """
    pending: list[str] = []
    current = folder
    while current not in known:
        parent, _ = os.path.split(current)
        if parent == current:  # the file system's root (or a drive's): known now, the walk ends
            known[current] = current
        else:
            pending.append(current)
            current = parent
    for path in reversed(pending):
        parent, name = os.path.split(path)
        resolved_parent = known[parent]
        if name in ("", "."):
            real = resolved_parent
        elif name == "..":
            real = os.path.dirname(resolved_parent)
        else:
            candidate = os.path.join(resolved_parent, name)
            real = real_path(candidate) if is_link(candidate) else candidate
        known[path] = real
    return known[folder]


# --- file times -----------------------------------------------------------------------------


def changed_ns(status: os.stat_result, system: System = CURRENT) -> int:
    """When a file last changed, content or inode, as far as its stat tells (nanoseconds).

    On POSIX, st_ctime moves with every change (and st_mtime can be set back by anyone);
    on Windows st_ctime is the creation time, which an edit leaves alone, so only st_mtime
    tells there.
    """
    if system.ctime_is_birth:
        return status.st_mtime_ns
    return max(status.st_mtime_ns, status.st_ctime_ns)


# --- files codescout reads itself -----------------------------------------------------------


class NotRegular(OSError):
    """A file that is not a regular file (a FIFO, a device, a folder): never read. Its words say
    what the file is ("a FIFO, not a regular file"); it has no errno."""


def describe_kind(mode: int) -> str:
    """What a non-regular file is, in words: "a directory", "a FIFO", ..."""
    if stat.S_ISDIR(mode):
        return "a directory"
    if stat.S_ISFIFO(mode):
        return "a FIFO"
    if stat.S_ISSOCK(mode):
        return "a socket"
    if stat.S_ISLNK(mode):
        return "a symbolic link"
    return "a device"


class MovedOutside(OSError):
    """A file found inside a folder that was somewhere else by the time it was opened (a link
    swapped in between): never read."""


def read_regular(path: str, limit: int, *, inside: str | None = None) -> bytes | None:
    """The bytes of a regular file, or None when it holds more than `limit` bytes.

    A FIFO or device is never read (opening it does not wait for a writer, and reading it
    could last forever): NotRegular. OSError for a file that cannot be opened. With `inside`
    (a resolved folder; `path` resolved too, and checked to be in it), the file opened must be
    the one inside: a link put at its place or at one of its folders after the check is
    MovedOutside, whatever it points to.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOCTTY", 0)
    if inside is not None:
        flags |= getattr(os, "O_NOFOLLOW", 0)  # `path` is resolved: a link at its end came since
    try:
        fd = os.open(path, flags)
    except OSError as error:
        if inside is not None and error.errno in (errno.ELOOP, errno.EMLINK):  # (EMLINK: the BSDs')
            raise MovedOutside("was replaced by a link as it was opened") from None
        raise
    try:
        if inside is not None and not _opened_inside(fd, path, inside):
            raise MovedOutside("was replaced by a link as it was opened")
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(f"{describe_kind(info.st_mode)}, not a regular file")
        if info.st_size > limit:
            return None
        chunks = []
        size = 0
        while size <= limit:
            chunk = os.read(fd, min(1 << 20, limit + 1 - size))
            if not chunk:
                break
            chunks.append(chunk)
            size += len(chunk)
        return None if size > limit else b"".join(chunks)
    finally:
        os.close(fd)


def _opened_inside(fd: int, path: str, root: str) -> bool:
    """Whether the file open as `fd` is inside `root`: by the path the system gives for the open
    file (Linux's /proc, macOS's F_GETPATH); elsewhere, by `path` resolved again naming it still."""
    import sys

    opened: str | None = None
    if sys.platform == "linux":
        with contextlib.suppress(OSError):
            # (a file removed since it was opened has " (deleted)" after its name: still inside)
            opened = os.readlink(f"/proc/self/fd/{fd}")
    elif sys.platform == "darwin":
        import fcntl

        with contextlib.suppress(OSError):  # (1024: MAXPATHLEN, the longest path F_GETPATH gives)
            opened = os.fsdecode(fcntl.fcntl(fd, fcntl.F_GETPATH, bytes(1024)).partition(b"\0")[0])
    if opened is None:
        try:
            again = real_path(path)
        except OSError:
            return False
        try:
            named, held = os.stat(again), os.fstat(fd)
        except OSError:
            return False
        if (named.st_dev, named.st_ino) != (held.st_dev, held.st_ino):
            return False
        opened = again
    return relative_inside(opened, root) is not None


def located(base: str, given: str, folders: dict[str, str]) -> str:
    """`given` (relative to `base`, or absolute) as a resolved absolute path.

    Folders on the way are resolved (`..`, links, junctions, as the system would), so a path
    through a symbolic link (a temporary folder that is a link, say) still lands where the
    system would take it; the file's own name is kept, as git tracks a link by its own name.
    `folders` caches resolved folders across calls.
    """
    joined = os.path.join(base, given)
    folder, name = os.path.split(joined)
    if name in (".", ".."):  # (a name ending in a separator has the name "", and is its folder)
        folder, name = joined, ""
    real_folder = resolved_folder(folder, folders)
    return os.path.join(real_folder, name) if name else real_folder


# --- folders held by what they are, not by their names --------------------------------------


class LinkOnTheWay(OSError):
    """A step of a path that is a symbolic link (or, between folders, no folder) where none may be.
    Its words name the step."""


class Pin:
    """A folder reached with no link on the way: a descriptor of it (None where the system opens
    no folders by descriptor: Windows), and the (device, inode) of every step from the top."""

    __slots__ = ("fd", "steps")

    def __init__(self, fd: int | None, steps: tuple[tuple[int, int], ...]) -> None:
        self.fd = fd
        self.steps = steps

    def close(self) -> None:
        if self.fd is not None:
            with contextlib.suppress(OSError):
                os.close(self.fd)
            self.fd = None


def _folder_flags() -> int:
    names = ("O_DIRECTORY", "O_NOFOLLOW", "O_CLOEXEC", "O_PATH")  # (POSIX's; Windows opens no folder)
    # Linux opens a folder for its place alone (O_PATH), which needs no right to list it.
    return int(os.O_RDONLY | sum(int(getattr(os, name, 0)) for name in names))


def pin(root: str, relative: str = "") -> Pin:
    """The folder `root` (absolute, resolved) reached with no link on the way, and the steps of
    `relative` below it (`/`-separated; the last may be a file): LinkOnTheWay naming the first
    step that is a link; OSError (ENOENT, ENOTDIR) when a step is gone. The descriptor is root's."""
    parts = [part for part in root.split(os.sep) if part]
    below = [part for part in relative.split("/") if part not in ("", ".")]
    if os.open not in os.supports_dir_fd or os.stat not in os.supports_dir_fd:
        return Pin(None, _steps_by_name(root, below))
    flags = _folder_flags()
    fd = os.open(os.sep, flags & ~int(getattr(os, "O_NOFOLLOW", 0)))
    kept: int | None = None
    steps = [_identity(os.fstat(fd))]
    try:
        for index, part in enumerate([*parts, *below]):
            status = os.stat(part, dir_fd=fd, follow_symlinks=False)
            where = os.path.join(os.sep, *[*parts, *below][: index + 1])
            if stat.S_ISLNK(status.st_mode):
                raise LinkOnTheWay(f"{where} is a symbolic link")
            steps.append(_identity(status))
            if index == len(parts) + len(below) - 1 and not stat.S_ISDIR(status.st_mode):
                break  # a file at the end: its identity is all a search needs
            if not stat.S_ISDIR(status.st_mode):
                raise LinkOnTheWay(f"{where} is not a folder")
            opened = os.open(part, flags, dir_fd=fd)
            os.close(fd)
            fd = opened
            if _identity(os.fstat(fd)) != steps[-1]:  # swapped between the look and the open
                raise LinkOnTheWay(f"{where} changed as it was opened")
            if index == len(parts) - 1:
                kept = os.dup(fd)
        if not parts:
            kept = os.dup(fd)
    except BaseException:
        if kept is not None:
            os.close(kept)
        raise
    finally:
        os.close(fd)
    return Pin(kept, tuple(steps))


def _identity(status: os.stat_result) -> tuple[int, int]:
    return (status.st_dev, status.st_ino)


def _steps_by_name(root: str, below: list[str]) -> tuple[tuple[int, int], ...]:
    """`pin`'s steps where folders cannot be opened by descriptor: each step looked at by name."""
    paths = [*reversed(ancestors(root)), root]
    for part in below:
        paths.append(os.path.join(paths[-1], part))
    steps = []
    for path in paths:
        status = os.lstat(path)
        if stat.S_ISLNK(status.st_mode) or is_link(path):
            raise LinkOnTheWay(f"{path} is a symbolic link")
        steps.append(_identity(status))
    return tuple(steps)


def stat_signature(path: Path | str) -> tuple[int, int, int] | None:
    """`signature` of the file at `path` (None: no such file, or it cannot be read)."""
    try:
        info = os.stat(path)
    except OSError:
        return None
    return signature(info)


def signature(info: os.stat_result | None) -> tuple[int, int, int] | None:
    """What says a file changed: its modification time, size and inode (None: no such file)."""
    return None if info is None else (info.st_mtime_ns, info.st_size, info.st_ino)
