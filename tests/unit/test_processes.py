"""`system/processes.py` in process: children run with a deadline over their whole run, output held to
its bound, streamed children, a memory bound, programs found only where PATH names an absolute
folder, every child (and what it started) ended with its group, and a call's `Stop` ending
the children started for it, from whatever thread cancels it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp.system import processes, programs
from codescout_mcp.system.processes import (
    CHILD_DATA_BYTES,
    Cancelled,
    ChildOutputTooLarge,
    ChildTimeout,
    Stop,
    StreamedChild,
    call_seconds,
    current_stop,
    run_child,
    take_lock,
    working_for,
)
from codescout_mcp.system.programs import find_program
from tests.platforms import PROC, PROCESS_GROUPS, linux_only, posix_only

ENV = dict(os.environ)


@pytest.fixture(autouse=True)
def no_child_kept() -> Iterator[None]:
    """Each test's children are gone from the set of running children once it ends (set aside
    what other tests in this process may have left there)."""
    before = set(processes._RUNNING)
    yield
    assert not processes._RUNNING - before


def python(code: str) -> list[str]:
    return [sys.executable, "-c", code]


def alive(pid: int) -> bool:
    """Whether `pid` still runs (a zombie, ended but not yet reaped by its parent, does not)."""
    try:
        with open(f"/proc/{pid}/stat", encoding="ascii") as stat:
            return stat.read().rsplit(")", 1)[1].split()[0] != "Z"
    except FileNotFoundError:
        return False


def test_a_child_says_its_status_and_both_outputs(tmp_path: Path) -> None:
    code = "import os, sys; sys.stdout.write(os.getcwd()); sys.stderr.write('err'); sys.exit(3)"
    status, out, err = run_child(python(code), cwd=str(tmp_path), env=ENV, seconds=30)
    assert (status, out, err) == (3, os.fsencode(tmp_path), b"err")
    assert run_child(python("print(open(0).read() == '')"), cwd=".", env=ENV, seconds=30)[1].strip() == b"True"


def test_output_up_to_the_limit_is_kept_and_one_byte_more_is_too_large() -> None:
    for size in (0, 1, 100_000):
        code = f"import sys; sys.stdout.buffer.write(b'x' * {size})"
        assert run_child(python(code), cwd=".", env=ENV, seconds=30, limit=size)[1] == b"x" * size
        if size:
            with pytest.raises(ChildOutputTooLarge):
                run_child(python(code), cwd=".", env=ENV, seconds=30, limit=size - 1)
    # stderr: its first 64 KiB kept, the rest read and dropped (it never makes the child wait)
    code = "import sys; sys.stderr.buffer.write(b'e' * (1 << 20)); print('done')"
    status, out, err = run_child(python(code), cwd=".", env=ENV, seconds=30)
    assert (status, out.strip(), len(err)) == (0, b"done", 1 << 16)


def test_a_child_may_print_256_mib_and_no_more() -> None:
    """The bound on what a child prints when the caller names none (git log's, say)."""
    code = f"import sys; sys.stdout.buffer.write(bytes({(256 << 20) + 1}))"
    with pytest.raises(ChildOutputTooLarge):
        run_child(python(code), cwd=".", env=ENV, seconds=120)


def test_a_silent_child_is_ended_at_its_deadline() -> None:
    started = time.monotonic()
    with pytest.raises(ChildTimeout):
        run_child(python("import time; time.sleep(30)"), cwd=".", env=ENV, seconds=0.5)
    assert time.monotonic() - started < 10


@posix_only(PROCESS_GROUPS)
@linux_only(PROC)
@pytest.mark.parametrize("held", ["stdout", "stderr"])
def test_a_grandchild_holding_a_pipe_is_ended_at_the_deadline_with_its_group(tmp_path: Path, held: str) -> None:
    """The child exits at once; what it started keeps one of its pipes open. The deadline still
    holds, and the grandchild is ended with the child's group."""
    pid_file = tmp_path / "pid"
    other = "stderr" if held == "stdout" else "stdout"
    code = (
        "import subprocess, sys\n"
        "p = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'],"
        f" {other}=subprocess.DEVNULL)\n"
        f"open({str(pid_file)!r}, 'w').write(str(p.pid))\n"
    )
    started = time.monotonic()
    with pytest.raises(ChildTimeout):
        run_child(python(code), cwd=".", env=ENV, seconds=2)
    assert time.monotonic() - started < 10
    grandchild = int(pid_file.read_text())
    deadline = time.monotonic() + 5
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)


def test_a_streamed_childs_stderr_is_kept_to_its_first_64_kib() -> None:
    code = "import sys; sys.stderr.buffer.write(b'e' * (1 << 20)); print('done')"
    child = StreamedChild(python(code), cwd=".", env=ENV, seconds=30)
    try:
        assert child.read(100) == b"done\n"
        status, err = child.finish()
        assert (status, err) == (0, b"e" * (1 << 16))
    finally:
        child.close()


def test_a_streamed_child_is_read_as_it_comes_and_then_finished() -> None:
    code = "import sys; sys.stdout.write('abcdef'); sys.stderr.write('warned'); sys.exit(4)"
    child = StreamedChild(python(code), cwd=".", env=ENV, seconds=30)
    try:
        assert child.read(4) == b"abcd" and not child.ended_at_eof
        assert child.read(100) == b"ef" and not child.ended_at_eof
        assert child.read(100) == b"" and child.ended_at_eof
        assert child.finish() == (4, b"warned")
    finally:
        child.close()
    assert child.stdout.closed and child.proc.stderr is not None and child.proc.stderr.closed


def test_a_streamed_child_that_prints_nothing_ends_at_its_deadline() -> None:
    child = StreamedChild(python("import time; time.sleep(30)"), cwd=".", env=ENV, seconds=0.5)
    started = time.monotonic()
    try:
        with pytest.raises(ChildTimeout):
            child.read(10)
        assert child.expired
    finally:
        child.close()
    assert time.monotonic() - started < 10


def test_a_streamed_child_ended_by_its_deadline_is_a_timeout_when_finished() -> None:
    """The watchdog ended it before anything was read: finishing says so, not its -9 status."""
    child = StreamedChild(python("import time; time.sleep(30)"), cwd=".", env=ENV, seconds=0.3)
    try:
        child.proc.wait(10)
        with pytest.raises(ChildTimeout):
            child.finish()
    finally:
        child.close()


@posix_only(PROCESS_GROUPS)
def test_a_streamed_child_left_open_does_not_keep_the_process_from_ending() -> None:
    """Its watchdog and the thread that reads its stderr are daemon threads: a process that
    leaves without closing it ends at once, not at the child's deadline or its end."""
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no process groups to signal on Windows")
    probe = (
        "import os, sys\n"
        "from codescout_mcp.system.processes import StreamedChild\n"
        "child = StreamedChild([sys.executable, '-c', 'import time; time.sleep(30)'],"
        " cwd='.', env=dict(os.environ), seconds=30)\n"
        "print(child.proc.pid, flush=True)\n"
    )
    started = time.monotonic()
    proc = subprocess.Popen(python(probe), stdout=subprocess.PIPE)
    assert proc.stdout is not None
    child = int(proc.stdout.readline())
    try:
        assert proc.wait(20) == 0  # (a thread that kept it would hold it 30 s)
        assert time.monotonic() - started < 20
    finally:
        os.killpg(child, signal.SIGKILL)  # left running by the probe, on purpose
        proc.stdout.close()


@posix_only(PROCESS_GROUPS)
def test_leaving_ends_every_child_and_any_started_after(monkeypatch: pytest.MonkeyPatch) -> None:
    """exit_now ends the children and marks the process as leaving before os._exit, so a child
    another thread starts in between is ended at once."""
    exits: list[int] = []
    monkeypatch.setattr(processes, "_LEAVING", False)
    monkeypatch.setattr(os, "_exit", exits.append)
    children = [StreamedChild(python("import time; time.sleep(30)"), cwd=".", env=ENV, seconds=60)]
    try:
        processes.exit_now(3)
        children.append(StreamedChild(python("import time; time.sleep(30)"), cwd=".", env=ENV, seconds=60))
        assert exits == [3]
        assert [child.proc.wait(10) for child in children] == [-9, -9]
    finally:
        for child in children:
            child.close()


def test_a_streamed_child_that_will_not_finish_is_a_timeout() -> None:
    child = StreamedChild(python("import time; print(flush=True); time.sleep(30)"), cwd=".", env=ENV, seconds=30)
    try:
        assert child.read(1) == b"\n"
        started = time.monotonic()
        with pytest.raises(ChildTimeout):
            child.finish(seconds=0.3)
        assert time.monotonic() - started < 5
    finally:
        child.close()
    assert child.proc.poll() is not None  # close ended it


@posix_only(PROCESS_GROUPS)
def test_a_stop_ends_every_child_still_running() -> None:
    children = [StreamedChild(python("import time; time.sleep(30)"), cwd=".", env=ENV, seconds=60) for _ in range(3)]
    finished = StreamedChild(python("pass"), cwd=".", env=ENV, seconds=60)
    finished.proc.wait(10)
    try:
        processes.end_all_children()
        for child in children:
            assert child.proc.wait(10) == -9  # SIGKILL, sent to its group
        assert not processes._RUNNING  # and forgets them all
    finally:
        for child in [*children, finished]:
            child.close()


# A child that starts a grandchild in its own group, writes the grandchild's pid, then waits on it.
WITH_GRANDCHILD = (
    "import subprocess, sys, time\n"
    "grandchild = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)'])\n"
    "open(sys.argv[1], 'w').write(str(grandchild.pid))\n"
    "grandchild.wait()\n"
)


def pid_in(path: Path, seconds: float = 20) -> int:
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        if path.exists() and path.read_text():
            return int(path.read_text())
        time.sleep(0.02)
    raise AssertionError(f"nothing written to {path} within {seconds} s")


def in_thread(stop: Stop, work: Any) -> tuple[threading.Thread, list[object]]:
    """`work()` in a thread working for `stop`; what it returned or raised."""
    box: list[object] = []

    def run() -> None:
        with working_for(stop):
            try:
                box.append(work())
            except BaseException as error:
                box.append(error)

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    return thread, box


@posix_only(PROCESS_GROUPS)
def test_a_cancel_from_another_thread_ends_the_childs_group_and_the_run_returns_cancelled(tmp_path: Path) -> None:
    stop = Stop()
    pid_file = tmp_path / "pid"
    argv = [sys.executable, "-c", WITH_GRANDCHILD, str(pid_file)]
    thread, box = in_thread(stop, lambda: run_child(argv, cwd=".", env=ENV, seconds=60))
    grandchild = pid_in(pid_file)
    started = time.monotonic()
    stop.cancel()
    thread.join(10)
    assert not thread.is_alive() and time.monotonic() - started < 5
    assert [type(outcome) for outcome in box] == [Cancelled]  # not a ChildTimeout: its deadline was 60 s off
    deadline = time.monotonic() + 5  # (killed at once; a loaded machine may take a moment to run its end)
    while alive(grandchild) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(grandchild)
    assert not stop._children  # reaped, and forgotten by the stop


def test_a_streamed_child_ended_by_a_cancel_reads_as_cancelled() -> None:
    stop = Stop()

    def read() -> bytes:
        child = StreamedChild(python("import time; time.sleep(30)"), cwd=".", env=ENV, seconds=60)
        try:
            return child.read(10)
        finally:
            child.close()

    thread, box = in_thread(stop, read)
    deadline = time.monotonic() + 20
    while not stop._children and time.monotonic() < deadline:
        time.sleep(0.02)
    stop.cancel()
    thread.join(10)
    assert [type(outcome) for outcome in box] == [Cancelled]
    assert not stop._children


def test_nothing_is_started_for_a_stop_cancelled_already(tmp_path: Path) -> None:
    stop = Stop()
    stop.cancel()
    marker = tmp_path / "ran"
    with working_for(stop), pytest.raises(Cancelled):
        run_child(python(f"open({str(marker)!r}, 'w')"), cwd=".", env=ENV, seconds=30)
    assert not marker.exists()


def test_a_child_whose_stop_is_cancelled_while_it_starts_is_ended_at_once(monkeypatch: pytest.MonkeyPatch) -> None:
    """The cancel lands between the child's start and its registration: `_spawn` ends it itself."""
    stop = Stop()
    started: list[int] = []

    def cancel_meanwhile(pid: int, *limits: int) -> None:
        started.append(pid)
        stop.cancel()

    monkeypatch.setattr(processes, "_bound_memory", cancel_meanwhile)
    with working_for(stop), pytest.raises(Cancelled):
        StreamedChild(python("import time; time.sleep(30)"), cwd=".", env=ENV, seconds=60)
    assert len(started) == 1 and not alive(started[0])
    assert not stop._children


def test_a_stop_is_cancelled_once_whoever_asks_and_however_often() -> None:
    stop = Stop()
    assert (stop.cancelled, stop.wait(0.01)) == (False, False)
    stop.check()
    waiter, box = in_thread(Stop(), lambda: stop.wait(30))
    stop.cancel()
    stop.cancel()
    waiter.join(5)
    assert box == [True]  # woken at once
    assert (stop.cancelled, stop.wait(30)) == (True, True)
    with pytest.raises(Cancelled):
        stop.check()


def test_what_is_left_of_a_stops_time_bounds_a_calls_seconds() -> None:
    now = time.monotonic()
    assert Stop().seconds_left() is None
    assert 99 < (Stop(deadline=now + 100).seconds_left() or 0) <= 100
    assert Stop(deadline=now - 5).seconds_left() == 0.0
    assert current_stop() is None and call_seconds(120) == 120
    with working_for(Stop(deadline=now + 10)):
        assert 9 < call_seconds(120) <= 10
        assert call_seconds(5) == 5
        with working_for(None):
            assert call_seconds(120) == 120
        assert current_stop() is not None
    assert current_stop() is None


def test_a_wait_for_a_lock_ends_when_the_call_is_cancelled() -> None:
    lock = threading.Lock()
    lock.acquire()
    try:
        assert take_lock(lock, 0.1) is False  # no call's: a plain wait
        stop = Stop()
        waiter, box = in_thread(stop, lambda: take_lock(lock, None))
        time.sleep(0.2)
        started = time.monotonic()
        stop.cancel()
        waiter.join(5)
        assert [type(outcome) for outcome in box] == [Cancelled]
        assert time.monotonic() - started < 1
        with working_for(Stop()):
            assert take_lock(lock, 0.15) is False  # its own bound still holds
    finally:
        lock.release()
    with working_for(Stop()):
        assert take_lock(lock, 1) is True
    lock.release()


@linux_only("RLIMIT_DATA set from outside with prlimit, read back from /proc")
def test_a_child_is_held_to_the_memory_bound() -> None:
    page = (Path(__file__).parents[2] / "docs" / "cli.md").read_text(encoding="utf-8")
    assert f"at most {CHILD_DATA_BYTES >> 30} GiB of memory for its data" in " ".join(page.split())
    child = StreamedChild(python("import time; time.sleep(30)"), cwd=".", env=ENV, seconds=60)
    try:
        with open(f"/proc/{child.proc.pid}/limits", encoding="ascii") as limits:
            line = next(line for line in limits if line.startswith("Max data size"))
        assert line.split()[3:5] == [str(CHILD_DATA_BYTES)] * 2
        processes._bound_memory(child.proc.pid + 10_000_000)  # no such child: nothing is said
    finally:
        child.close()


@posix_only("a POSIX default search path")
def test_without_path_programs_are_looked_for_where_the_system_would(monkeypatch: pytest.MonkeyPatch) -> None:
    """As exec does, and shutil.which: no PATH at all means the system's default folders."""
    monkeypatch.delenv("PATH")
    found = find_program("sh")
    assert found is not None and os.path.dirname(found) in os.defpath.split(os.pathsep)


@posix_only("executable bits")
def test_a_program_is_a_file_that_may_be_run(tmp_path: Path) -> None:
    for name, mode in (("runs", 0o755), ("readable", 0o644)):
        (tmp_path / name).write_text("#!/bin/sh\n", encoding="utf-8")
        (tmp_path / name).chmod(mode)
    (tmp_path / "folder").mkdir()
    (tmp_path / "folder").chmod(0o755)
    assert find_program("runs", path=str(tmp_path)) == str(tmp_path / "runs")
    for name in ("readable", "folder", "gone"):
        assert find_program(name, path=str(tmp_path)) is None
    assert find_program("runs", path=f"{tmp_path / 'gone'}{os.pathsep}{tmp_path}") == str(tmp_path / "runs")


def test_windows_own_programs_are_found_in_its_system_folder(monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulated: the variables Windows sets (SYSTEMROOT, and WINDIR as older tools read it)."""
    for name in ("SYSTEMROOT", "WINDIR"):
        monkeypatch.delenv(name, raising=False)
    assert programs.windows_system_program("taskkill.exe") == "C:\\Windows\\System32\\taskkill.exe"
    monkeypatch.setenv("WINDIR", "E:\\Win")
    assert programs.windows_system_program("taskkill.exe") == "E:\\Win\\System32\\taskkill.exe"
    monkeypatch.setenv("SYSTEMROOT", "D:\\Windows")
    assert programs.windows_system_program("taskkill.exe") == "D:\\Windows\\System32\\taskkill.exe"


def test_a_child_is_ended_on_windows_with_its_tree_by_taskkill(monkeypatch: pytest.MonkeyPatch) -> None:
    """Simulated: Windows has no process groups to signal, so taskkill ends the child's tree,
    run without a console window; the child is then killed itself, in case taskkill could not."""
    import subprocess

    ran: list[tuple[list[str], dict[str, Any]]] = []
    killed: list[int] = []

    class Child:
        pid = 4321

        def kill(self) -> None:
            killed.append(self.pid)
            raise ProcessLookupError(3, "gone already")  # quietly: it may have ended

    monkeypatch.setenv("SYSTEMROOT", "C:\\Windows")
    monkeypatch.setattr(sys, "platform", "win32")
    monkeypatch.setattr(subprocess, "run", lambda argv, **options: ran.append((argv, options)))
    processes.end_child(Child())  # type: ignore[arg-type]
    assert ran == [
        (
            ["C:\\Windows\\System32\\taskkill.exe", "/F", "/T", "/PID", "4321"],
            {
                "stdin": subprocess.DEVNULL,
                "stdout": subprocess.DEVNULL,
                "stderr": subprocess.DEVNULL,
                "creationflags": 0x08000000,  # CREATE_NO_WINDOW
                "check": False,
            },
        )
    ]
    assert killed == [4321]
