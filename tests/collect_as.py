"""Collect the test suite as Windows or macOS would, on Linux: `python -m tests.collect_as SYSTEM REPORT`.

SYSTEM is win32, darwin or linux (linux: as it is). Windows and macOS are simulated where a
test module could notice them while it loads: the modules and names POSIX has and they lack
are taken away (`import fcntl` fails, `signal.SIGKILL` and `os.mkfifo` are gone), and the
markers of tests/platforms.py are worked out for that system, not signed in as root (as on
GitHub's runners). The libraries the suite uses are imported first, as they are: they choose
their own platform code, and what is checked is the suite's own. REPORT gets, as JSON, every
test collected, the reason of each that would be skipped, and each module that failed to
load; the exit status is pytest's.
"""

from __future__ import annotations

import ast
import importlib
import json
import os
import select
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parent.parent
OURS = ("tests", "bench", "bundle")  # the packages whose loading is checked
# What the simulated system does not have, in modules the suite imports.
MISSING: dict[str, dict[str, list[str]]] = {
    "win32": {
        "modules": ["fcntl", "resource", "termios", "pwd", "grp", "pty", "tty", "syslog", "curses"],
        "os": [
            "fork", "forkpty", "mkfifo", "mknod", "killpg", "getpgid", "setpgid", "getpgrp", "setsid",
            "getsid", "getuid", "geteuid", "getgid", "getegid", "getgroups", "setuid", "setgid", "chown",
            "lchown", "fchown", "chroot", "nice", "getloadavg", "wait3", "wait4", "waitid", "WNOHANG",
            "sync", "pipe2", "openpty", "sched_getaffinity", "uname", "sysconf", "statvfs", "ttyname",
            "posix_spawn", "getresuid", "initgroups", "sendfile",
        ],
        "signal": [
            "SIGHUP", "SIGQUIT", "SIGTRAP", "SIGKILL", "SIGBUS", "SIGUSR1", "SIGUSR2", "SIGPIPE", "SIGALRM",
            "SIGCHLD", "SIGCONT", "SIGSTOP", "SIGTSTP", "SIGTTIN", "SIGTTOU", "SIGURG", "SIGXCPU", "SIGXFSZ",
            "SIGVTALRM", "SIGPROF", "SIGWINCH", "SIGIO", "SIGPOLL", "SIGPWR", "SIGSYS", "SIGRTMIN",
            "SIGRTMAX", "SIGIOT", "SIGCLD", "alarm", "pause", "setitimer", "getitimer", "siginterrupt",
            "pthread_kill", "pthread_sigmask", "sigpending", "sigwait", "sigtimedwait", "SIG_BLOCK",
        ],
        "select": ["poll", "epoll"],
    },
    "darwin": {
        "modules": [],
        "os": ["pipe2", "sched_getaffinity", "sched_setaffinity", "memfd_create", "eventfd", "posix_fallocate"],
        "signal": ["SIGRTMIN", "SIGRTMAX", "SIGPWR", "SIGSTKFLT", "SIGPOLL", "SIGCLD"],
        "select": ["epoll"],
    },
    "linux": {"modules": [], "os": [], "signal": [], "select": []},
}  # fmt: skip


def their_imports() -> list[str]:
    """The modules our own code imports when it loads, other than our own: imported first, as they are."""
    found: set[str] = set()
    for package in OURS:
        for source in sorted((ROOT / package).glob("*.py")):
            for node in ast.parse(source.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.Import):
                    found.update(alias.name for alias in node.names)
                elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                    found.add(node.module)
    return sorted(name for name in found if name.split(".")[0] not in {*OURS, "__future__", "codescout_mcp"})


def pretend(system: str) -> None:
    """Take away what `system` lacks, and work out the suite's markers as on `system`."""
    if sys.platform == "win32":
        raise SystemExit("collect_as simulates Windows and macOS on POSIX; on Windows, run the suite itself")
    missing = MISSING[system]
    for name in [*their_imports(), "codescout_mcp.cli.main", "codescout_mcp.server"]:
        if name.split(".")[0] not in missing["modules"]:
            importlib.import_module(name)
    for name in missing["modules"]:
        sys.modules[name] = None  # type: ignore[assignment, unused-ignore]  # `import name` now raises ImportError
    for module, names in ((os, missing["os"]), (signal, missing["signal"]), (select, missing["select"])):
        for name in names:
            if hasattr(module, name):
                delattr(module, name)
    real_platform, real_geteuid = sys.platform, getattr(os, "geteuid", None)
    sys.platform = system
    if real_geteuid is not None and system != "linux":
        os.geteuid = lambda: 501  # the runners' user, not root
    try:
        importlib.import_module("tests.platforms")
    finally:
        sys.platform = real_platform
        if real_geteuid is not None and system != "linux":
            os.geteuid = real_geteuid


class Recorder:
    """Notes each collected test, the reason of each skip its markers would make, and what failed to load."""

    def __init__(self) -> None:
        self.collected: list[str] = []
        self.skipped: dict[str, str] = {}
        self.errors: dict[str, str] = {}

    def pytest_collectreport(self, report: pytest.CollectReport) -> None:
        if report.failed:
            self.errors[report.nodeid] = str(report.longrepr).strip().splitlines()[-1]

    def pytest_collection_modifyitems(self, items: list[pytest.Item]) -> None:
        for item in items:
            self.collected.append(item.nodeid)
            for mark in item.iter_markers(name="skipif"):
                if mark.args and mark.args[0] is True:
                    self.skipped[item.nodeid] = str(mark.kwargs["reason"])
                    break
            for mark in item.iter_markers(name="skip"):
                self.skipped.setdefault(item.nodeid, str(mark.kwargs.get("reason", mark.args)))


def main(argv: list[str]) -> int:
    system, report = argv
    os.chdir(ROOT)
    pretend(system)
    recorder = Recorder()
    for module in ("bench.bench", "bench.soak", "bench.workspace", "bench.mutation", "bundle.build"):
        try:
            importlib.import_module(module)  # scripts the suite runs, loaded as modules here
        except Exception as error:
            recorder.errors[module] = f"{type(error).__name__}: {error}"
    status = pytest.main(["--collect-only", "-q", "-n", "0", "-p", "no:cacheprovider", "tests"], plugins=[recorder])
    result: dict[str, Any] = {"collected": recorder.collected, "skipped": recorder.skipped, "errors": recorder.errors}
    Path(report).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return int(status)


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
