"""What differs between the systems the suite runs on, said once: markers, stopping a child, a lock.

The suite runs on Linux, macOS and Windows. Nothing POSIX-only is imported or named when a test
module loads, so every module collects everywhere; a test of behaviour only some systems have
carries one of the markers below, with its reason. Each marker is false on Linux as root, where
the suite skips nothing; `tests/distribution/test_platforms.py` collects the suite as Windows and macOS would.
"""

from __future__ import annotations

import contextlib
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

WINDOWS = sys.platform == "win32"
LINUX = sys.platform.startswith("linux")
if sys.platform == "win32":
    AS_ROOT = False
else:
    AS_ROOT = os.geteuid() == 0

# The reasons tests give, so that the same limit reads the same everywhere.
FAKE_GIT = "the stand-in git is a #!/bin/sh script, which Windows cannot run"
SHELL = "a bash command line (its redirections and pipes are the test)"
SIGNALS = "sends SIGTERM or SIGINT to one process, which Windows cannot (SIGTERM there is TerminateProcess)"
FIFOS = "FIFOs (os.mkfifo)"
PROCESS_GROUPS = "process groups ended by a signal"
CONTROL_NAMES = "file names holding newlines or carriage returns, which Windows forbids"
BYTE_NAMES = "file names that are not UTF-8 (Windows names are UTF-16; macOS refuses them)"
DELETED_CWD = "a process whose current folder was removed (Windows cannot remove it)"
PROC = "reads a process's memory or CPU time, or the socket table, from /proc"
DEV_FULL = "/dev/full (a device that is always full)"
ADDRESS_SPACE = "an address-space limit (RLIMIT_AS), which only Linux enforces"
OPEN_FILES = "a limit on open descriptors (RLIMIT_NOFILE, the resource module)"


def posix_only(reason: str) -> pytest.MarkDecorator:
    """Skip on Windows, saying why: the test needs something only POSIX systems have."""
    return pytest.mark.skipif(WINDOWS, reason=f"POSIX only: {reason}")


def linux_only(reason: str) -> pytest.MarkDecorator:
    """Skip on every system but Linux, saying why."""
    return pytest.mark.skipif(not LINUX, reason=f"Linux only: {reason}")


def root_only(reason: str) -> pytest.MarkDecorator:
    """Skip unless the suite runs as root, saying why."""
    return pytest.mark.skipif(not AS_ROOT, reason=f"needs root: {reason}")


def give_away(path: Path, uid: int) -> None:
    """Make `uid` the owner of `path` (and its group `uid`); only POSIX systems have owners."""
    if sys.platform == "win32":
        pytest.fail("Windows has no POSIX owners to give a file to")
    else:
        os.chown(path, uid, uid)


def this_user() -> int:
    """The user id the suite runs as (-1 on Windows, which has none)."""
    if sys.platform == "win32":
        return -1
    return os.getuid()


# --- children that can be asked to stop -------------------------------------------------------


def stoppable() -> dict[str, Any]:
    """Popen options a child needs so that `ask_to_stop` reaches it alone.

    On Windows only a process group can be sent Ctrl-Break, and a child in the suite's own
    group would take the suite down with it; POSIX children are signalled by pid, as they are.
    """
    if sys.platform == "win32":
        return {"creationflags": subprocess.CREATE_NEW_PROCESS_GROUP}
    return {}


def ask_to_stop(proc: subprocess.Popen[Any]) -> None:
    """What stops a server politely: SIGTERM on POSIX, Ctrl-Break on Windows (started `stoppable`)."""
    if sys.platform == "win32":
        proc.send_signal(signal.CTRL_BREAK_EVENT)
    else:
        proc.send_signal(signal.SIGTERM)


def alive(pid: int) -> bool:
    """Whether a process runs; one that exited and waits to be reaped (a zombie) does not."""
    if sys.platform == "win32":
        import ctypes

        kernel32 = ctypes.windll.kernel32
        handle = kernel32.OpenProcess(0x00100000 | 0x1000, False, pid)  # SYNCHRONIZE | QUERY_LIMITED_INFORMATION
        if not handle:
            return False
        try:
            return bool(kernel32.WaitForSingleObject(handle, 0) == 0x102)  # WAIT_TIMEOUT: still running
        finally:
            kernel32.CloseHandle(handle)
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process, alive
    stat = Path(f"/proc/{pid}/stat")
    if not stat.exists():
        return True  # no /proc (macOS): a zombie cannot be told apart, and counts as running
    return stat.read_text(encoding="utf-8").rsplit(")", 1)[1].split()[0] != "Z"


# --- one process at a time ----------------------------------------------------------------------


@contextlib.contextmanager
def exclusive(path: Path) -> Iterator[None]:
    """Hold an exclusive lock on `path` (created if missing) while the block runs.

    Parallel workers install the Node tools and mcpscore once: the first holds the lock while it
    installs, the others wait for it. The system drops the lock when its holder dies.
    """
    with open(path, "a+b") as handle:
        if sys.platform == "win32":
            import msvcrt

            handle.seek(0)
            while True:  # LK_LOCK gives up after ten seconds; an install takes minutes
                try:
                    msvcrt.locking(handle.fileno(), msvcrt.LK_NBLCK, 1)
                    break
                except OSError:
                    time.sleep(0.2)
            try:
                yield
            finally:
                handle.seek(0)
                msvcrt.locking(handle.fileno(), msvcrt.LK_UNLCK, 1)
        else:
            import fcntl

            fcntl.flock(handle, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(handle, fcntl.LOCK_UN)
