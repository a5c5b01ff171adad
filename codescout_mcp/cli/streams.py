"""The command line's standard streams, whatever state it finds them in, and how failures end it.

Every failure is one line on stderr and a non-zero exit status, whether the streams are
closed, full, or a pipe whose reader went away; each failure's exception carries its exit
status (as click's do). Standard library only: `codescout rank` starts with it.
"""

from __future__ import annotations

import os
import sys

from codescout_mcp.failure import Failure
from codescout_mcp.system.platform import CURRENT, System

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import NoReturn

EXIT_OK = 0
EXIT_INTERRUPTED = 130


class Terminated(BaseException):
    """SIGTERM, SIGHUP or SIGQUIT, in a command that starts children (`end_children_on_signals`):
    they are ended, then it is, with the status a shell reports for a command the signal ended."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.exit_status = 128 + signum


def end_children_on_signals() -> None:
    """From now on SIGTERM, SIGHUP (the terminal closed), SIGQUIT and Ctrl-C end this command's
    children too, then the command, with the status a shell reports (143, 129, 131; Ctrl-C 130):
    git and ripgrep run in sessions of their own, which no signal reaches.

    A signal the command was started ignoring stays ignored, SIGTERM aside: SIGHUP under `nohup`
    (as the server keeps it, `platform.stop_signals`), SIGINT and SIGQUIT in a script's
    background job. Windows has no SIGHUP or SIGQUIT; there only SIGTERM and Ctrl-C are taken.
    """
    import signal

    def stopped(signum: int, frame: object) -> None:
        stop = KeyboardInterrupt() if signum == signal.SIGINT else Terminated(signum)
        processes = sys.modules.get("codescout_mcp.system.processes")
        if processes is None:  # no child was ever started
            raise stop
        processes.raise_stop(stop)  # not while Popen starts one: it would be left running

    for name in ("SIGTERM", "SIGINT", "SIGHUP", "SIGQUIT"):
        signum = getattr(signal, name, None)
        if signum is not None and (name == "SIGTERM" or signal.getsignal(signum) is not signal.SIG_IGN):
            signal.signal(signum, stopped)


def _end_children(*, leaving: bool = False) -> None:
    """End the children still running, if this command ever started one (processes.py loaded)."""
    processes = sys.modules.get("codescout_mcp.system.processes")
    if processes is not None:
        processes.end_all_children(leaving=leaving)


class ProgressOnTerminal:
    """While the block runs, work that takes more than a second says how far it is on stderr, in
    one line written over itself, when stderr is a terminal (nothing otherwise); the line is
    cleared at the end. (A class, not contextlib's: importing that would slow `rank`'s start.)"""

    def __init__(self) -> None:
        from codescout_mcp.system.processes import Stop, working_for

        self.stop = Stop()
        self.widest = 0
        if 2 not in State.closed and is_console(2):
            self.stop.on_progress = self._line
        self._working = working_for(self.stop)

    def _line(self, progress: float, message: str) -> None:
        text = f"codescout: {message}"
        write_all(2, f"\r{text}".encode("utf-8", "backslashreplace"))
        self.widest = max(self.widest, len(text))

    def __enter__(self) -> None:
        self._working.__enter__()

    def __exit__(self, *exc: object) -> None:
        self._working.__exit__(None, None, None)
        if self.widest:
            write_all(2, b"\r" + b" " * self.widest + b"\r")


class CliError(Failure):
    """A runtime failure the user can act on: one line on stderr, exit status 1."""


class ReaderGone(Exception):
    """stdout is a pipe whose reader has gone (`| head`): stop quietly."""

    exit_status = 1


class State:
    """The standard descriptors that were closed when the command started. They are reopened on
    the null device at once (so no file opened later lands on them), but stay "closed" here:
    output meant for a closed stdout is an error, not something to throw away."""

    closed: frozenset[int] = frozenset()


def _reserve_standard_descriptors() -> frozenset[int]:
    closed = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.add(fd)
    for fd in sorted(closed):
        opened = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
        if opened != fd:
            os.dup2(opened, fd)
            os.close(opened)
    return frozenset(closed)


def fail(message: str) -> None:
    """One line on stderr, if stderr can take it."""
    write_all(2, f"codescout: {message}\n".encode("utf-8", "backslashreplace"))


def write_all(fd: int, data: bytes) -> None:
    """All of `data` to `fd`, or nothing said (stderr itself is gone: the exit status is all that is left)."""
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        pass


def write_stdout(data: bytes) -> None:
    """All of `data` to stdout, or CliError / ReaderGone: a short write never passes as done."""
    if 1 in State.closed:
        raise CliError("cannot write the output: stdout is closed")
    if os.name == "nt" and is_console(1):  # pragma: no cover - Windows: a console takes text, not UTF-8 bytes
        write_console(data)
        return
    view = memoryview(data)
    while view:
        try:
            written = os.write(1, view)
        except OSError as error:
            from codescout_mcp.system import platform

            if error.errno in platform.CURRENT.broken_pipe_errnos:  # EPIPE; on Windows also EINVAL
                raise ReaderGone from None
            raise CliError(f"cannot write to stdout: {error.strerror or error}") from None
        view = view[written:]


def read_input(name: str, source: str, limit: int) -> bytes:
    """The whole of a file, or of stdin for `-`, up to `limit` bytes; CliError naming `source`
    (made one line) if it cannot be read or holds more (an endless source like /dev/zero too)."""
    if name == "-" and 0 in State.closed:
        raise CliError("cannot read stdin: it is closed")
    try:
        if name == "-":
            return _read_bounded(0, source, limit)
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            return _read_bounded(fd, source, limit)
        finally:
            os.close(fd)
    except OSError as error:
        raise CliError(f"cannot read {source}: {error.strerror or error}") from None
    except MemoryError:
        raise CliError(f"not enough memory to read {source}") from None


def _read_bounded(fd: int, source: str, limit: int) -> bytes:
    status = os.fstat(fd)
    if status.st_size > limit:  # a regular file says its size: refused before a byte is read
        raise CliError(f"{source} holds more than {limit} bytes, more than --max-input-bytes allows")
    chunks = []
    size = 0
    # A regular file in one read (then no copy joins its parts); anything else in pieces.
    want = status.st_size + 1 if status.st_size and (status.st_mode & 0o170000) == 0o100000 else 1 << 20
    while chunk := os.read(fd, want):
        size += len(chunk)
        if size > limit:
            raise CliError(f"{source} holds more than {limit} bytes, more than --max-input-bytes allows")
        chunks.append(chunk)
        want = 1 << 20
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


class _ClosedStream:
    """Stands in for sys.stdout or sys.stderr when Python found the descriptor closed."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def guarded(run: Callable[[], int]) -> int:
    """Run a command with the standard descriptors made safe; its status, or the failure's."""
    State.closed = _reserve_standard_descriptors()
    # Python sets a stream it found closed to None; give each one an identity of its own, so
    # that help text meant for stdout is never taken for an error meant for stderr.
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, _ClosedStream())
    try:
        return run()
    except Failure as error:
        write_all(2, f"{error.line()}\n".encode("utf-8", "backslashreplace"))
        return error.exit_status
    except ReaderGone as error:
        _silence_stdout()
        return error.exit_status
    except KeyboardInterrupt:
        _end_children()
        return EXIT_INTERRUPTED
    except Terminated as stop:
        _end_children()
        return stop.exit_status
    except MemoryError:  # an input under --max-input-bytes can still be more than a memory cap allows
        fail("not enough memory for this input")
        return CliError.exit_status


def leave(status: int) -> NoReturn:
    """End the command now: everything is written (unbuffered), and tearing down what it read
    (a million hits are a million objects to free one by one) would only delay the exit."""
    for stream in (sys.stdout, sys.stderr):
        try:  # noqa: SIM105 - importing contextlib would cost `rank` start-up time
            stream.flush()
        except (OSError, ValueError):
            pass
    _end_children(leaving=True)
    os._exit(status)


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)


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
