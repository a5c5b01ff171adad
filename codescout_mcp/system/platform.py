"""What differs between the systems codescout runs on, and how each names files.

Each difference is a field of `System`, and code that depends on one takes the system as a
parameter whose default is the one running. Windows and macOS rules are then tested on
Linux by passing their flavour, the way the standard library tests `PureWindowsPath`
everywhere. What cannot be had by a parameter (a file system that ignores case, an event
loop without signal handlers) the test suite simulates or mounts for real.

Standard library only, and small: the CLI's `rank` path must stay fast to start.
"""

from __future__ import annotations

import errno
import ntpath
import os
import posixpath
import sys
import unicodedata

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from types import ModuleType
    from typing import Final


class System:
    """The rules of one operating system that codescout's behaviour depends on.

    (A plain class, not a dataclass: `dataclasses` would cost `codescout rank` ten
    milliseconds of start-up.)
    """

    __slots__ = (
        "broken_pipe_errnos",
        "command_line_limit",
        "ctime_is_birth",
        "name",
        "paths",
        "reuse_address_shares_port",
        "strict_surrogates",
    )

    def __init__(
        self,
        *,
        name: str,
        paths: ModuleType,
        strict_surrogates: bool,
        ctime_is_birth: bool,
        reuse_address_shares_port: bool,
        command_line_limit: int,
        broken_pipe_errnos: frozenset[int],
    ) -> None:
        # The `sys.platform` value: "linux", "darwin" or "win32" (any other POSIX system behaves
        # as "linux")
        self.name = name
        # posixpath or ntpath: separators, drives, joining
        self.paths = paths
        # os.fsdecode uses surrogatepass (Windows): bytes that are not UTF-8 raise instead of
        # becoming surrogate escapes.
        self.strict_surrogates = strict_surrogates
        # st_ctime is the creation time (Windows), not the time of the last change.
        self.ctime_is_birth = ctime_is_birth
        # SO_REUSEADDR lets another process bind the same port while we listen (Windows).
        self.reuse_address_shares_port = reuse_address_shares_port
        # The longest command line a child process can be given: in bytes on POSIX (ARG_MAX is
        # 2 MiB on Linux, 1 MiB on macOS, shared with the environment), in UTF-16 units on
        # Windows; the figures keep a margin.
        self.command_line_limit = command_line_limit
        # A broken pipe is reported as EINVAL (Windows) as well as EPIPE.
        self.broken_pipe_errnos = broken_pipe_errnos

    def __repr__(self) -> str:
        return f"System({self.name!r})"

    @property
    def windows(self) -> bool:
        return self.name == "win32"


def _posix(name: str, command_line_limit: int) -> System:
    """Linux or macOS: the two differ here only in their name and their command-line limit."""
    return System(
        name=name,
        paths=posixpath,
        strict_surrogates=False,
        ctime_is_birth=False,
        reuse_address_shares_port=False,
        command_line_limit=command_line_limit,
        broken_pipe_errnos=frozenset({errno.EPIPE}),
    )


LINUX: Final = _posix("linux", 1 << 20)
MACOS: Final = _posix("darwin", 1 << 19)
WINDOWS: Final = System(
    name="win32",
    paths=ntpath,
    strict_surrogates=True,
    ctime_is_birth=True,
    reuse_address_shares_port=True,
    command_line_limit=32_767 - 2_767,  # CreateProcess's limit, less a margin (what git is given is counted)
    broken_pipe_errnos=frozenset({errno.EPIPE, errno.EINVAL}),
)


def system_for(platform: str) -> System:
    """The rules for a `sys.platform` value (any other POSIX system follows Linux's)."""
    return {MACOS.name: MACOS, WINDOWS.name: WINDOWS}.get(platform, LINUX)


CURRENT: Final = system_for(sys.platform)


def stop_signals() -> tuple[int, ...]:
    """The signals that stop a server, the same on every transport: SIGTERM, SIGINT (Ctrl-C), SIGHUP
    (the terminal or the session that started it went away) unless it was started to ignore it
    (`nohup`), and on Windows SIGBREAK (Ctrl-Break); those of them this system has."""
    import signal  # here, not above: `codescout rank` never needs it

    found = [getattr(signal, name) for name in ("SIGTERM", "SIGINT", "SIGBREAK") if hasattr(signal, name)]
    hangup = getattr(signal, "SIGHUP", None)
    if hangup is not None and signal.getsignal(hangup) is not signal.SIG_IGN:
        found.append(hangup)
    return tuple(found)


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


_FS_ENCODING: Final = sys.getfilesystemencoding()
_FS_ERRORS: Final = sys.getfilesystemencodeerrors()


def name_problem(name: str) -> str | None:
    """Why `name` can name no file on this system (None when it can), in words for an error."""
    if "\0" in name:
        return "holds a NUL character, which no file name can"
    try:
        name.encode(_FS_ENCODING, _FS_ERRORS)  # (os.fsencode, without its two Python frames)
    except UnicodeEncodeError:
        return "holds an unpaired surrogate, which no file name here can"
    return None


def loose_key(name: str) -> str:
    """`name` as the loosest file system compares it: without case, in one normalisation."""
    return unicodedata.normalize("NFC", name).casefold()


def windows_plain_name(name: str) -> str:
    """A `/`-separated name as Win32 opens it: each part without its trailing dots and spaces
    (`a.py.` and `a.py ` open a.py), and a last part's `::$DATA` (the file's own stream) gone."""
    parts = name.split("/")
    if parts[-1].lower().endswith("::$data"):
        parts[-1] = parts[-1][: -len("::$data")]
    return "/".join(part.rstrip(". ") or part for part in parts)  # (`.`, `..` and `...` stay)


def long_path(path: str, system: System = CURRENT) -> str:
    """`path` with each short 8.3 part (`PROGRA~1`) in its long form, on Windows; else as it is."""
    if not system.windows or _long_path_of is None:
        return path
    return _long_path_of(path)


def _windows_long_path(path: str) -> str:
    """GetLongPathNameW's answer, on Windows (the tests stand in for the API elsewhere)."""
    import ctypes

    kernel32 = ctypes.windll.kernel32  # type: ignore[attr-defined, unused-ignore]
    size = 32_768  # the longest Windows path, 32,767 units, and its NUL
    buffer = ctypes.create_unicode_buffer(size)
    # The length written; 0 when it fails (no such file); the size needed when there is no room.
    written = kernel32.GetLongPathNameW(path, buffer, size)
    return str(buffer.value) if 0 < written < size else path


# How a Windows path's short 8.3 parts are written out in full, giving the path back as it is
# where that cannot be done (the tests stand in for it on other systems).
_long_path_of: Callable[[str], str] | None = _windows_long_path if CURRENT.windows else None


def posix_form(path: str, system: System = CURRENT) -> str:
    """A relative path with `/` between its parts, whatever the system's separator."""
    return path.replace("\\", "/") if system.windows else path
