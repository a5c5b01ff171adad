"""Child processes (git, ripgrep, and on Windows taskkill; found by `system/programs.py`): run with a deadline over
their whole run and a bound on their memory, ended together with whatever they started, and
ended when codescout stops, however it stops (`end_all_children`).

Also each call's `Stop`: a child is started for a call (the thread that starts it works for
the call's stop, `working_for`), and when the call is cancelled or abandoned (nobody will read
its answer) the stop ends every child started for it, from whatever thread cancels it, so
that the call's thread returns at once (`Cancelled`) instead of waiting for git or ripgrep.
A stop may carry a deadline too (a batch's, shared by its members): `call_seconds` holds a
call's own bound to it.

subprocess is imported where it is used (it is the costly one to import); `codescout rank`
never loads this module.
"""

from __future__ import annotations

import contextlib
import os
import sys
import threading
import time

from codescout_mcp.system.platform import CURRENT, System
from codescout_mcp.system.programs import windows_system_program

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    import subprocess
    from collections.abc import Callable, Iterator
    from typing import IO, Any, Final, NoReturn

    from codescout_mcp.system.sandbox import Confinement


# Windows process-creation flags. A server started by a desktop host has no console, and
# Windows would open a console window for each child without CREATE_NO_WINDOW.
CREATE_NO_WINDOW: Final = 0x08000000
CREATE_NEW_PROCESS_GROUP: Final = 0x00000200


class ChildTimeout(Exception):
    """A child process that was still running (or still holding its output open) at its deadline."""


class ChildOutputTooLarge(Exception):
    """A child process that printed more than the caller will hold in memory."""


class Cancelled(Exception):
    """The call this work is for was cancelled or abandoned: nobody will read its answer."""


# A call that runs longer than this says how far it is, at most this often (`Stop.report`).
PROGRESS_AFTER: Final = 1.0
PROGRESS_EVERY: Final = 0.5


class Stop:
    """One call's stop: cancelled or not, and the moment (time.monotonic()) by which it must end (None: no bound).

    The children started while a thread works for it (`working_for`) are registered here until
    they are reaped, so that `cancel`, from any thread, ends them.
    """

    __slots__ = ("_cancelled", "_children", "_lock", "_reported", "_started", "deadline", "on_progress")

    def __init__(self, *, deadline: float | None = None) -> None:
        self.deadline = deadline
        self._cancelled = threading.Event()
        self._lock = threading.Lock()
        self._children: set[subprocess.Popen[bytes]] = set()
        # Where the call's progress goes (an MCP progress notification, a line on a terminal), if anywhere.
        self.on_progress: Callable[[float, str], None] | None = None
        self._started = time.monotonic()
        self._reported = 0.0

    def report(self, progress: float, message: str) -> None:
        """Tell whoever waits on the call how far it is (`progress` grows with each report): not in
        its first PROGRESS_AFTER seconds (a short call says nothing), then at most every PROGRESS_EVERY."""
        sink = self.on_progress
        if sink is None:
            return
        now = time.monotonic()
        if now - self._started < PROGRESS_AFTER or now - self._reported < PROGRESS_EVERY:
            return
        self._reported = now
        sink(progress, message)

    @property
    def cancelled(self) -> bool:
        return self._cancelled.is_set()

    def cancel(self) -> None:
        """Mark it cancelled, end every child started for it (with what each started), wake its waiters.

        Idempotent and thread-safe; a child registered after this is ended by `_spawn` itself.
        """
        with self._lock:
            if self._cancelled.is_set():
                return
            self._cancelled.set()
            children = list(self._children)
        for proc in children:
            if proc.poll() is None:
                end_child(proc)

    def seconds_left(self) -> float | None:
        """The seconds until its deadline (never negative); None when it has none."""
        if self.deadline is None:
            return None
        return max(0.0, self.deadline - time.monotonic())

    def wait(self, seconds: float) -> bool:
        """Sleep up to `seconds`; True (at once) when it is, or gets, cancelled."""
        return self._cancelled.wait(max(0.0, seconds))

    def check(self) -> None:
        """Cancelled if it was cancelled."""
        if self._cancelled.is_set():
            raise Cancelled

    def _register(self, proc: subprocess.Popen[bytes]) -> bool:
        """Hold `proc` to be ended by a cancel; False (not held) when cancelled already."""
        with self._lock:
            if self._cancelled.is_set():
                return False
            self._children.add(proc)
            return True

    def _unregister(self, proc: subprocess.Popen[bytes]) -> None:
        with self._lock:
            self._children.discard(proc)


_WORK = threading.local()


def report_progress(progress: float, message: str) -> None:
    """Tell whoever waits on the call this thread works for how far it is (`Stop.report`), if anyone."""
    stop = current_stop()
    if stop is not None:
        stop.report(progress, message)


def current_stop() -> Stop | None:
    """The stop of the call this thread works for (None: no call's, as for the command line)."""
    stop: Stop | None = getattr(_WORK, "stop", None)
    return stop


@contextlib.contextmanager
def working_for(stop: Stop | None) -> Iterator[None]:
    """Within the block, this thread works for `stop`: the children it starts are ended by its cancel."""
    before = current_stop()
    _WORK.stop = stop
    try:
        yield
    finally:
        _WORK.stop = before


def call_seconds(limit: float) -> float:
    """`limit`, or what is left before the deadline of the call this thread works for, if less."""
    stop = current_stop()
    left = None if stop is None else stop.seconds_left()
    return limit if left is None else min(limit, left)


def take_lock(lock: threading.Lock | threading.Semaphore, seconds: float | None) -> bool:
    """Acquire `lock` (or a place in a semaphore) within `seconds` (None: no bound); False if it
    stayed held that long, and Cancelled once the call this thread works for is cancelled while it waits."""
    stop = current_stop()
    if stop is None:
        return lock.acquire(timeout=-1 if seconds is None else seconds)
    end = None if seconds is None else time.monotonic() + seconds
    while True:
        stop.check()
        step = _LOCK_STEP_SECONDS if end is None else min(_LOCK_STEP_SECONDS, end - time.monotonic())
        if lock.acquire(timeout=max(0.0, step)):
            return True
        if end is not None and time.monotonic() >= end:
            stop.check()
            return False


def child_options(system: System = CURRENT) -> dict[str, Any]:
    """Popen options that put a child in a group of its own (so it can be ended with its
    children) and, on Windows, keep it from opening a console window."""
    if system.windows:
        return {"creationflags": CREATE_NO_WINDOW | CREATE_NEW_PROCESS_GROUP}
    return {"start_new_session": True}


def end_child(proc: subprocess.Popen[bytes]) -> None:
    """End a child and whatever it started, now (its output pipes then close)."""
    import subprocess

    if sys.platform == "win32":  # no process groups to signal (simulated in the tests elsewhere)
        subprocess.run(
            [windows_system_program("taskkill.exe"), "/F", "/T", "/PID", str(proc.pid)],
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            creationflags=CREATE_NO_WINDOW,
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


# The most memory a child may take for its data (Linux: RLIMIT_DATA, which counts what it
# allocates, not the files it maps, so a large repository's packs do not count). git reading
# /dev/zero, or ripgrep an endless ignore file, fails at this instead of filling the machine.
CHILD_DATA_BYTES: Final = 2 << 30

# Every child still running, so that a stop can end them all: they run in sessions (process
# groups) of their own, which no signal to codescout reaches.
# A child runs before Popen returns in the thread that started it (it has to exec first), so a
# stop must not look at _RUNNING while a start is under way: _STARTING covers both, and a stop
# waits for a start in another thread to register its child. (It is reentrant for a signal
# handler that interrupts a start in its own thread: that child is not in the set yet, and
# `_spawn` ends it after, if the process is leaving and still there to do so.) After a stop
# for good, every child started is ended at once: nothing would be left to end it.
_RUNNING: set[subprocess.Popen[bytes]] = set()
_STARTING = threading.RLock()
_LEAVING = False
_STOP_WAIT_SECONDS: Final = 5.0
# How often a thread waiting for a lock looks whether its call was cancelled meanwhile.
_LOCK_STEP_SECONDS: Final = 0.1
# A stop whose signal handler raises (the command line's) runs in the main thread between any two
# steps, Popen's own included: raised there, after the fork, it would leave the child running
# where no stop can see it. So while a thread starts a child, a stop its handler hands to
# `raise_stop` is held, and raised as soon as the child is in _RUNNING.
_STARTING_THREAD: int | None = None
_HELD_STOP: BaseException | None = None


def raise_stop(stop: BaseException) -> None:
    """For a signal handler that stops the process by raising `stop`: raise it now or, if this
    thread is starting a child, as soon as that child is in _RUNNING."""
    global _HELD_STOP
    if threading.get_ident() != _STARTING_THREAD:
        raise stop
    _HELD_STOP = stop


@contextlib.contextmanager
def _stops_held() -> Iterator[None]:
    global _STARTING_THREAD, _HELD_STOP
    _STARTING_THREAD = threading.get_ident()
    try:
        yield
    finally:
        _STARTING_THREAD = None
        stop, _HELD_STOP = _HELD_STOP, None
        if stop is not None:
            raise stop


def _spawn(
    argv: list[str],
    cwd: str,
    env: dict[str, str],
    *,
    data_bytes: int = CHILD_DATA_BYTES,
    confinement: Confinement | None = None,
    stdin: int | None = None,
) -> subprocess.Popen[bytes]:
    import subprocess

    stop = current_stop()
    if stop is not None:
        stop.check()
    before_exec = None if confinement is None else _confined_start(confinement, data_bytes)
    with _STARTING, _stops_held():
        proc = subprocess.Popen(
            argv,
            cwd=cwd,
            env=env,
            stdin=subprocess.DEVNULL if stdin is None else stdin,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            preexec_fn=before_exec,
            **child_options(),
        )
        _RUNNING.add(proc)
        if _LEAVING:
            end_child(proc)
    if before_exec is None:
        _bound_memory(proc.pid, data_bytes)
    if stop is not None and not stop._register(proc):  # cancelled while it started
        _reap(proc)
        raise Cancelled
    return proc


def _confined_start(confinement: Confinement, data_bytes: int) -> Callable[[], None]:
    """What a confined child does before exec: its memory bound, then the sandbox's rules
    (`system/sandbox.py`; Linux, where `preexec_fn` is the one way to act between fork and exec)."""
    if sys.platform == "win32":  # (a confinement is Linux's alone)
        raise OSError("no confinement on Windows")
    import resource

    setrlimit, data, limit = resource.setrlimit, resource.RLIMIT_DATA, (data_bytes, data_bytes)
    apply = confinement.apply

    def before_exec() -> None:
        setrlimit(data, limit)
        apply()

    return before_exec


def _bound_memory(pid: int, data_bytes: int = CHILD_DATA_BYTES) -> None:
    """Hold a child to `data_bytes` of data (Linux; elsewhere only its deadline bounds it).

    Set from outside as soon as the child exists (Python offers no thread-safe way to set it
    before the child runs): the first instants are unbounded, far too short to matter.
    """
    if sys.platform != "linux":  # prlimit is Linux's alone (and resource is not on Windows)
        return
    import resource

    prlimit = resource.prlimit
    with contextlib.suppress(OSError, ValueError):  # the child is gone already, or the limit is lower
        prlimit(pid, resource.RLIMIT_DATA, (data_bytes, data_bytes))


def end_all_children(*, leaving: bool = False) -> None:
    """End every child still running (and what each started): for a stop that will not wait for them.

    A child being started in another thread is waited for (a few seconds at most) and ended
    too. `leaving`: the process is about to go, and any child started from now on is ended at once.
    """
    global _LEAVING
    waited = _STARTING.acquire(timeout=_STOP_WAIT_SECONDS)
    try:
        _LEAVING = _LEAVING or leaving
        for proc in list(_RUNNING):
            if proc.poll() is None:
                end_child(proc)
        _RUNNING.clear()
    finally:
        if waited:
            _STARTING.release()


def exit_now(status: int) -> NoReturn:
    """End the process now, its children first (they are in sessions of their own: nothing else ends them)."""
    end_all_children(leaving=True)
    os._exit(status)


def _close_pipes(proc: subprocess.Popen[bytes]) -> None:
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            with contextlib.suppress(OSError):
                pipe.close()


def run_child(
    argv: list[str],
    *,
    cwd: str,
    env: dict[str, str],
    seconds: float,
    limit: int = 256 << 20,
    stdin: int | None = None,
) -> tuple[int, bytes, bytes]:
    """(status, stdout, stderr) of a child given no stdin (or the file open at descriptor `stdin`),
    ended with its children at the deadline.

    Unlike `subprocess.run(timeout=)`, the deadline covers the whole run: a child that
    prints nothing, and a grandchild that keeps the pipes open after the child exits (on
    Windows `run` then waits for it without end). ChildTimeout when it passes;
    ChildOutputTooLarge past `limit` bytes of stdout.
    """
    import subprocess

    deadline = time.monotonic() + seconds
    stop = current_stop()
    proc = _spawn(argv, cwd, env, stdin=stdin)
    assert proc.stdout is not None and proc.stderr is not None
    out, err = _Drain(proc.stdout, limit), _Drain(proc.stderr, 1 << 16)
    try:
        try:
            # Its pipes first: their end is waited for without polling, where Popen.wait with a
            # timeout sleeps in steps of up to 50 ms. A child that exits with a child of its own
            # still holding the pipes runs into the deadline either way.
            if not (out.wait(deadline - time.monotonic()) and err.wait(deadline - time.monotonic())):
                raise ChildTimeout
            proc.wait(timeout=max(0.0, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            raise ChildTimeout from None
        finally:
            if stop is not None:
                stop.check()  # ended by the cancel, not by its deadline
        if out.too_large:
            raise ChildOutputTooLarge
        return proc.returncode, out.data(), err.data()
    finally:
        _reap(proc, out, err, stop=stop)


def _reap(proc: subprocess.Popen[bytes], *drains: _Drain, stop: Stop | None = None) -> None:
    import subprocess

    if proc.poll() is None or any(drain.thread.is_alive() for drain in drains):
        end_child(proc)
        with contextlib.suppress(subprocess.TimeoutExpired):  # killed; nothing more to wait for
            proc.wait(timeout=1.0)
    _close_pipes(proc)
    _RUNNING.discard(proc)
    if stop is not None:
        stop._unregister(proc)


class StreamedChild:
    """A child whose stdout is read as it comes, ended with its children at a deadline.

    A watchdog thread ends the child when the deadline passes, so a read blocked on a child
    that prints nothing returns (at end of file) instead of waiting for ever; `read` then
    raises ChildTimeout (Cancelled, when the call's stop ended it). Its stderr is kept (the
    first 64 KiB) for an error message.
    """

    def __init__(
        self,
        argv: list[str],
        *,
        cwd: str,
        env: dict[str, str],
        seconds: float,
        data_bytes: int = CHILD_DATA_BYTES,
        confinement: Confinement | None = None,
    ) -> None:
        self.stop = current_stop()
        self.proc = _spawn(argv, cwd, env, data_bytes=data_bytes, confinement=confinement)
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
        self._check()
        if self.expired:
            raise ChildTimeout
        if not data:
            self.ended_at_eof = True
        return data

    def finish(self, seconds: float = 5.0) -> tuple[int, bytes]:
        """After the last read: the exit status and what it said on stderr."""
        import subprocess

        try:
            if not self.stderr.wait(seconds):  # (waited for without polling, unlike Popen.wait)
                raise ChildTimeout
            status = self.proc.wait(timeout=seconds)
        except subprocess.TimeoutExpired:
            raise ChildTimeout from None
        finally:
            self._check()
        if self.expired:
            raise ChildTimeout
        return status, self.stderr.data()

    def _check(self) -> None:
        if self.stop is not None:
            self.stop.check()

    def close(self) -> None:
        """End the child (and its children) if it still runs, and free its pipes."""
        self._watchdog.cancel()
        _reap(self.proc, self.stderr, stop=self.stop)
