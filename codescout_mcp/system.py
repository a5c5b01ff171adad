"""What differs between the systems codescout runs on, kept in one place.

Each difference is a field of `System`, and code that depends on one takes the system as a
parameter whose default is the one running. Windows and macOS rules are then tested on
Linux by passing their flavour, the way the standard library tests `PureWindowsPath`
everywhere. What cannot be had by a parameter (a file system that ignores case, an event
loop without signal handlers) the test suite simulates or mounts for real.

Everything here is small and imports only the standard library: the CLI's `rank` path
must stay fast to start.
"""

from __future__ import annotations

import contextlib
import ntpath
import os
import posixpath
import stat
import sys
import time
import unicodedata

# Typing names are for the checker only: importing typing costs `codescout rank` start-up time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable
    from types import ModuleType
    from typing import IO, Any, Final


class System:
    """The rules of one operating system that codescout's behaviour depends on.

    (A plain class, not a dataclass: `dataclasses` would cost `codescout rank` ten
    milliseconds of start-up.)
    """

    __slots__ = (
        "broken_pipe_errnos",
        "child_creation_flags",
        "command_line_limit",
        "ctime_is_birth",
        "loop_signals",
        "name",
        "names_fold_case",
        "names_fold_unicode",
        "paths",
        "reuse_address_shares_port",
        "strict_surrogates",
    )

    def __init__(
        self,
        *,
        name: str,
        paths: ModuleType,
        names_fold_case: bool,
        names_fold_unicode: bool,
        strict_surrogates: bool,
        ctime_is_birth: bool,
        loop_signals: bool,
        reuse_address_shares_port: bool,
        command_line_limit: int,
        child_creation_flags: int,
        broken_pipe_errnos: frozenset[int],
    ) -> None:
        # "linux", "darwin" or "windows" (any other POSIX system behaves as "linux")
        self.name = name
        # posixpath or ntpath: separators, drives, joining
        self.paths = paths
        # The usual file system ignores letter case (NTFS; APFS and HFS+ as macOS formats them).
        self.names_fold_case = names_fold_case
        # The usual file system takes names in any Unicode normalisation as one (APFS, HFS+).
        self.names_fold_unicode = names_fold_unicode
        # os.fsdecode uses surrogatepass (Windows): bytes that are not UTF-8 raise instead of
        # becoming surrogate escapes.
        self.strict_surrogates = strict_surrogates
        # st_ctime is the creation time (Windows), not the time of the last change.
        self.ctime_is_birth = ctime_is_birth
        # asyncio's event loops implement add_signal_handler (not on Windows).
        self.loop_signals = loop_signals
        # SO_REUSEADDR lets another process bind the same port while we listen (Windows).
        self.reuse_address_shares_port = reuse_address_shares_port
        # The longest command line a child process can be given: in bytes on POSIX (ARG_MAX is
        # 2 MiB on Linux, 1 MiB on macOS, shared with the environment), in UTF-16 units on
        # Windows; the figures keep a margin.
        self.command_line_limit = command_line_limit
        # Process-creation flags that keep a console window from opening for each child (a
        # server started by a desktop host has no console; Windows would open one per git).
        self.child_creation_flags = child_creation_flags
        # A broken pipe is reported as EINVAL (Windows) as well as EPIPE.
        self.broken_pipe_errnos = broken_pipe_errnos

    def __repr__(self) -> str:
        return f"System({self.name!r})"

    @property
    def windows(self) -> bool:
        return self.name == "windows"


_EPIPE: Final = frozenset({32})  # errno.EPIPE on every system
_EINVAL: Final = 22

LINUX: Final = System(
    name="linux",
    paths=posixpath,
    names_fold_case=False,
    names_fold_unicode=False,
    strict_surrogates=False,
    ctime_is_birth=False,
    loop_signals=True,
    reuse_address_shares_port=False,
    command_line_limit=1 << 20,
    child_creation_flags=0,
    broken_pipe_errnos=_EPIPE,
)
MACOS: Final = System(
    name="darwin",
    paths=posixpath,
    names_fold_case=True,
    names_fold_unicode=True,
    strict_surrogates=False,
    ctime_is_birth=False,
    loop_signals=True,
    reuse_address_shares_port=False,
    command_line_limit=1 << 19,
    child_creation_flags=0,
    broken_pipe_errnos=_EPIPE,
)
WINDOWS: Final = System(
    name="windows",
    paths=ntpath,
    names_fold_case=True,
    names_fold_unicode=False,
    strict_surrogates=True,
    ctime_is_birth=True,
    loop_signals=False,
    reuse_address_shares_port=True,
    command_line_limit=32_767 - 2_767,  # CreateProcess's limit, less room for git's own arguments
    child_creation_flags=0x08000000,  # CREATE_NO_WINDOW
    broken_pipe_errnos=_EPIPE | {_EINVAL},
)


def system_for(platform: str) -> System:
    """The rules for a `sys.platform` value."""
    if platform == "win32":
        return WINDOWS
    if platform == "darwin":
        return MACOS
    return LINUX


CURRENT: Final = system_for(sys.platform)


# --- names ----------------------------------------------------------------------------------


def decode_name(data: bytes, system: System = CURRENT) -> str:
    """A file name that git or ripgrep printed as bytes, as the str that names the same file.

    On POSIX that is os.fsdecode's answer, which gives back the same bytes when encoded. On
    Windows, git and ripgrep print UTF-8 (WTF-8 for a name holding an unpaired surrogate,
    which surrogatepass reads back); bytes that are not even that cannot name a file there,
    and become surrogate escapes instead of raising, so one odd name never stops the rest.
    """
    if not system.strict_surrogates:
        if system is CURRENT:
            return os.fsdecode(data)
        return data.decode("utf-8", "surrogateescape")
    try:
        return data.decode("utf-8", "surrogatepass")
    except UnicodeDecodeError:
        return data.decode("utf-8", "surrogateescape")


def name_problem(name: str) -> str | None:
    """Why `name` can name no file on this system (None when it can), in words for an error."""
    if "\0" in name:
        return "holds a NUL character, which no file name can"
    try:
        os.fsencode(name)
    except UnicodeEncodeError:
        return "holds an unpaired surrogate, which no file name here can"
    return None


def folded(name: str, system: System = CURRENT) -> str:
    """`name` as a file system that ignores case (and normalisation) compares it."""
    if system.names_fold_unicode or system.names_fold_case:
        name = unicodedata.normalize("NFC", name)
    return name.casefold() if system.names_fold_case else name


def loose_key(name: str) -> str:
    """`name` as the loosest file system compares it: without case, in one normalisation."""
    return unicodedata.normalize("NFC", name).casefold()


def windows_plain_name(name: str) -> str:
    """A `/`-separated name as Win32 opens it: each part without its trailing dots and spaces
    (`a.py.` and `a.py ` open a.py), and a last part's `::$DATA` (the file's own stream) gone."""
    parts = name.split("/")
    if parts[-1].lower().endswith("::$data"):
        parts[-1] = parts[-1][: -len("::$data")]
    return "/".join(part if part in (".", "..") else part.rstrip(". ") or part for part in parts)


# How a Windows path's short 8.3 parts are written out in full (GetLongPathNameW); set below on
# Windows, and by the tests that stand in for it elsewhere.
_long_path_of: Callable[[str], str] | None = None


def long_path(path: str, system: System = CURRENT) -> str:
    """`path` with each short 8.3 part (`PROGRA~1`) in its long form, on Windows; else as it is."""
    if not system.windows or _long_path_of is None:
        return path
    try:
        return _long_path_of(path)
    except OSError:
        return path


def _windows_long_path(path: str) -> str:  # pragma: no cover - Windows only
    import ctypes

    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined, unused-ignore]
    size = 32_768
    buffer = ctypes.create_unicode_buffer(size)
    written = kernel32.GetLongPathNameW(path, buffer, size)
    if not written or written >= size:
        raise OSError(0, "GetLongPathNameW failed")
    return str(buffer.value)


if sys.platform == "win32":  # pragma: no cover - Windows only
    _long_path_of = _windows_long_path


def posix_form(path: str, system: System = CURRENT) -> str:
    """A relative path with `/` between its parts, whatever the system's separator."""
    return path.replace("\\", "/") if system.windows else path


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


def same_folder_inside(path: str, root: str, identities: dict[str, tuple[int, int] | None]) -> str | None:
    """`path` relative to `root` when one of its folders IS the root, however it is spelled.

    For the paths `relative_inside` calls outside: another letter case or normalisation on
    a file system that ignores them, another mount or drive letter (a bind mount, a SUBST
    drive) of the same folder. Folders are compared by device and inode, as `samefile`
    does; `identities` caches each folder's (None: cannot be read, or no inode number).
    """

    wanted = folder_identity(root, identities)
    if wanted is None:
        return None
    for folder in ancestors(path):
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
    if CURRENT.windows:  # pragma: no cover - Windows before Python 3.12
        try:
            tag = os.lstat(path).st_reparse_tag  # type: ignore[attr-defined, unused-ignore]
        except (OSError, AttributeError):
            return False
        return bool(tag == getattr(stat, "IO_REPARSE_TAG_MOUNT_POINT", 0xA0000003))
    return False


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
        if parent == current:  # the file system's root (or a drive's)
            known[current] = current
            break
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
            real = os.path.realpath(candidate) if is_link(candidate) else candidate
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


# --- child processes ------------------------------------------------------------------------
# subprocess and threading are imported where they are used: `codescout rank` imports this
# module for its output rules and must not pay for them.

# What a program found on PATH may be called on Windows. CreateProcess runs these itself; a
# `.bat` or `.cmd` would run through cmd.exe, whose reading of arguments no quoting makes safe
# for file names, so such a file is never taken for the program.
WINDOWS_PROGRAM_SUFFIXES: Final = (".exe", ".com")


def find_program(
    name: str,
    system: System = CURRENT,
    *,
    path: str | None = None,
    is_program: Callable[[str], bool] | None = None,
) -> str | None:
    """The program `name` as an absolute path, from PATH's absolute folders only; None if none has it.

    Unlike `shutil.which`, the current folder is never searched, whether Windows would search
    it first or PATH names it (an empty entry, `.`, any relative folder): codescout runs in
    checkouts nobody vetted, and a `git` committed at a checkout's root must not be what runs.
    """
    paths = system.paths
    entries = (os.environ.get("PATH", "") if path is None else path).split(paths.pathsep)
    suffixes = WINDOWS_PROGRAM_SUFFIXES if system.windows else ("",)
    if system.windows and name.lower().endswith(suffixes):
        suffixes = ("",)
    check = is_program if is_program is not None else _is_program
    for entry in entries:
        if system.windows:
            entry = entry.strip().strip('"')
            if not paths.splitdrive(entry)[0]:  # `\bin` is relative to the current drive
                continue
        if not entry or not paths.isabs(entry):
            continue
        for suffix in suffixes:
            candidate: str = paths.join(entry, name + suffix)
            if check(candidate):
                return candidate
    return None


def _is_program(candidate: str) -> bool:
    return os.path.isfile(candidate) and os.access(candidate, os.X_OK)


def windows_system_program(name: str) -> str:  # pragma: no cover - Windows only
    """A program of Windows' own (taskkill.exe), by its full path in System32, never by PATH."""
    root = os.environ.get("SYSTEMROOT") or os.environ.get("WINDIR") or "C:\\Windows"  # any case, on Windows
    return ntpath.join(root, "System32", name)


class ChildTimeout(Exception):
    """A child process that was still running (or still holding its output open) at its deadline."""


class ChildOutputTooLarge(Exception):
    """A child process that printed more than the caller will hold in memory."""


def child_options(system: System = CURRENT) -> dict[str, Any]:
    """Popen options that put a child in a group of its own (so it can be ended with its
    children) and, on Windows, keep it from opening a console window."""
    if system.windows:
        return {"creationflags": system.child_creation_flags | 0x00000200}  # CREATE_NEW_PROCESS_GROUP
    return {"start_new_session": True}


def end_child(proc: subprocess.Popen[bytes]) -> None:
    """End a child and whatever it started, now (its output pipes then close)."""
    import subprocess

    if sys.platform == "win32":  # pragma: no cover - Windows: no process groups to signal
        subprocess.run(
            [windows_system_program("taskkill.exe"), "/F", "/T", "/PID", str(proc.pid)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            creationflags=CURRENT.child_creation_flags,
            check=False,
        )
        with contextlib.suppress(OSError):
            proc.kill()
        return
    import signal

    with contextlib.suppress(OSError):  # the group is gone already
        os.killpg(proc.pid, signal.SIGKILL)


class _Drain:
    """Reads one of a child's pipes to its end in a daemon thread, keeping at most `limit` bytes."""

    def __init__(self, pipe: IO[bytes], limit: int) -> None:
        import threading

        self.pipe = pipe
        self.limit = limit
        self.chunks: list[bytes] = []
        self.size = 0
        self.thread = threading.Thread(target=self._run, daemon=True, name="codescout-child-output")
        self.thread.start()

    def _run(self) -> None:
        try:
            while chunk := self.pipe.read1(1 << 16):  # type: ignore[attr-defined]
                self.size += len(chunk)
                if self.size <= self.limit:
                    self.chunks.append(chunk)
        except (OSError, ValueError):
            pass  # the pipe was closed under us: the child was ended

    def wait(self, seconds: float) -> bool:
        """Whether the pipe reached its end within `seconds`."""
        self.thread.join(max(0.0, seconds))
        return not self.thread.is_alive()

    @property
    def too_large(self) -> bool:
        return self.size > self.limit

    def data(self) -> bytes:
        return b"".join(self.chunks)


def _spawn(argv: list[str], cwd: str, env: dict[str, str]) -> subprocess.Popen[bytes]:
    import subprocess

    return subprocess.Popen(
        argv,
        cwd=cwd,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        **child_options(),
    )


def _close_pipes(proc: subprocess.Popen[bytes]) -> None:
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def run_child(
    argv: list[str], *, cwd: str, env: dict[str, str], seconds: float, limit: int = 256 << 20
) -> tuple[int, bytes, bytes]:
    """(status, stdout, stderr) of a child given no stdin, ended with its children at the deadline.

    Unlike `subprocess.run(timeout=)`, the deadline covers the whole run: a child that
    prints nothing, and a grandchild that keeps the pipes open after the child exits (on
    Windows `run` then waits for it without end). ChildTimeout when it passes;
    ChildOutputTooLarge past `limit` bytes of stdout.
    """
    import subprocess

    deadline = time.monotonic() + seconds
    proc = _spawn(argv, cwd, env)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Drain(proc.stdout, limit), _Drain(proc.stderr, 1 << 16)
    try:
        try:
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise ChildTimeout from None
        # The child is gone; something it started may still hold its pipes open.
        if not (out.wait(deadline - time.monotonic()) and err.wait(deadline - time.monotonic())):
            raise ChildTimeout
        if out.too_large:
            raise ChildOutputTooLarge
        return proc.returncode, out.data(), err.data()
    finally:
        _reap(proc, out, err)


def _reap(proc: subprocess.Popen[bytes], *drains: _Drain) -> None:
    import subprocess

    if proc.poll() is None or any(drain.thread.is_alive() for drain in drains):
        end_child(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):  # killed; nothing more to wait for
            proc.wait(timeout=1.0)
    _close_pipes(proc)


class StreamedChild:
    """A child whose stdout is read as it comes, ended with its children at a deadline.

    A watchdog thread ends the child when the deadline passes, so a read blocked on a child
    that prints nothing returns (at end of file) instead of waiting for ever; `read` then
    raises ChildTimeout. Its stderr is kept (the first 64 KiB) for an error message.
    """

    def __init__(self, argv: list[str], *, cwd: str, env: dict[str, str], seconds: float) -> None:
        import threading

        self.proc = _spawn(argv, cwd, env)
        assert self.proc.stdout is not None and self.proc.stderr is not None
        self.stdout = self.proc.stdout
        self.stderr = _Drain(self.proc.stderr, 1 << 16)
        self.expired = False
        self.ended_at_eof = False  # the whole of stdout was read
        self._watchdog = threading.Timer(seconds, self._expire)
        self._watchdog.daemon = True
        self._watchdog.start()

    def _expire(self) -> None:
        self.expired = True
        end_child(self.proc)

    def read(self, size: int) -> bytes:
        data = self.stdout.read(size)
        if self.expired:
            raise ChildTimeout
        if not data:
            self.ended_at_eof = True
        return data

    def finish(self, seconds: float = 5.0) -> tuple[int, bytes]:
        """After the last read: the exit status and what it said on stderr."""
        import subprocess

        try:
            status = self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            raise ChildTimeout from None
        if not self.stderr.wait(seconds) or self.expired:
            raise ChildTimeout
        return status, self.stderr.data()

    def close(self) -> None:
        """End the child (and its children) if it still runs, and free its pipes."""
        self._watchdog.cancel()
        _reap(self.proc, self.stderr)


# --- files codescout reads itself -----------------------------------------------------------


class NotRegular(OSError):
    """A file that is not a regular file (a FIFO, a device, a folder): never read."""


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


def read_regular(path: str, limit: int) -> bytes | None:
    """The bytes of a regular file, or None when it holds more than `limit` bytes.

    A FIFO or device is never read (opening it does not wait for a writer, and reading it
    could last forever): NotRegular. OSError for a file that cannot be opened.
    """
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_BINARY", 0) | getattr(os, "O_NOCTTY", 0)
    fd = os.open(path, flags)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            raise NotRegular(0, f"{describe_kind(info.st_mode)}, not a regular file")
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


# --- consoles -------------------------------------------------------------------------------


def is_console(fd: int, system: System = CURRENT, console_mode: Callable[[int], bool] | None = None) -> bool:
    """Whether `fd` is an interactive console (a person typing, a screen to write to).

    On Windows `isatty` is also true of the NUL device (`< NUL`), which is no console:
    only a handle GetConsoleMode accepts is one (`console_mode`, for the tests).
    """
    if not os.isatty(fd):
        return False
    if not system.windows:
        return True
    if console_mode is None:  # pragma: no cover - Windows only
        console_mode = _windows_console_mode
    return console_mode(fd)


def _windows_console_mode(fd: int) -> bool:  # pragma: no cover - Windows only
    import ctypes
    import msvcrt

    mode = ctypes.c_uint32()
    handle = msvcrt.get_osfhandle(fd)  # type: ignore[attr-defined, unused-ignore]
    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined, unused-ignore]
    return bool(kernel32.GetConsoleMode(ctypes.c_void_p(handle), ctypes.byref(mode)))


def write_console(data: bytes) -> None:  # pragma: no cover - Windows only
    """UTF-8 output written to a Windows console as text, through Python's console writer
    (os.write would put the UTF-8 bytes on screen as code-page characters)."""
    import sys

    sys.stdout.write(data.decode("utf-8"))
    sys.stdout.flush()


# --- the server's log ---------------------------------------------------------------------


def configure_logging(level: str) -> None:
    """Log to stderr only (on stdio, stdout carries nothing but JSON-RPC), always in UTF-8.

    The MCP spec asks for UTF-8 on stderr too; Windows would write the console's code page.
    A name holding a lone surrogate (a client can send one) is written as its escape
    instead of failing the log line.
    """
    import logging

    stream = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)  # noqa: SIM115
    logging.basicConfig(
        stream=stream,
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
