"""Peak memory of concurrent search_workspace calls on the worst workspaces, over stdio and HTTP.

    python bench/search_memory.py                     # ~100 MB tree, 9 MB .gitignore, 20 calls at once
    python bench/search_memory.py --smoke             # 0.5 MB, 200 KB, 4 calls: the script still works
    python bench/search_memory.py --formula-mib 1500  # also say whether each peak stayed within 1,500 MiB

Three workspaces, each a git repository with pinned commit dates, are built in a temporary folder:

* empty-match: about 100 MB of source-like lines in many files, searched with patterns that
  match the empty string (`^`, `x*`, `import|`, taken in turn by the calls), so that every
  line of every file is a match;
* big-gitignore: a tracked .gitignore of about 9 MB of distinct lines beside a few files,
  searched for an ordinary word;
* submodule-zero: a submodule whose tracked `.ignore` is a symbolic link to /dev/zero,
  searched for an ordinary word;
* heavy-rules: a tracked .gitignore of about 40 KB of rules with `*` and `**` in them, which
  takes ripgrep more memory to build than it may have (540 MiB unbounded): every ripgrep of
  every search runs to its bound, the case the formula's worst is made of.

For each workspace and transport a fresh server gets the calls at once: over stdio all of them
written on its stdin together after the handshake; over streamable HTTP one POST per thread,
protocol 2025-11-25, after an `initialize`. Every --interval seconds the resident memory of the
server and of everything it started is summed (descendants found through the ppid field of
/proc/*/stat, each one's VmRSS read from /proc/PID/status). Reported per run: that sum's peak,
the server's own high-water mark, the time until every answer came, how many answers were
results, tool errors, JSON-RPC errors or missing, and the first error's text.

The machine is protected three ways: each server runs under `prlimit --as` (an address-space
cap per process, which every process it starts inherits); a run is stopped, its whole tree
killed, once the sum passes --max-mib or the machine's available memory falls below
--min-available-mib, and after --timeout seconds. Whatever happened, a run ends by stopping
the server and every descendant it ever had (SIGSTOP, so none can start another) and killing
each one's process group (ripgrep and git run in groups of their own). Linux only: /proc and
prlimit.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import http.client
import json
import os
import queue
import random
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import IO, Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))  # the suite's helpers (tests/) serve here too

from tests.gitrepo import Repo, env_for

ROOT = Path(__file__).resolve().parent.parent

SERVER = str(Path(sys.executable).parent / "codescout-mcp")
PROTOCOL = "2025-11-25"
WORD = "needle"
EMPTY_PATTERNS = ("^", "x*", "import|")
# Lines such as a Python codebase holds; each file takes a run of them.
SOURCE_LINES = (
    "import os",
    "from pathlib import Path",
    "",
    "def handle_{n}(request, limit=10):",
    '    """Answer one request of kind {n}, at most `limit` items."""',
    "    total = sum(item.size for item in request.items)  # bytes",
    "    if total > limit * {n}:",
    "        raise ValueError(f'too large: {{total}}')",
    "    return Path(request.name).with_suffix('.json')",
    "class Record{n}:",
    "    __slots__ = ('name', 'size', 'owner')",
    "    def __init__(self, name, size=0):",
    "        self.name, self.size = name, size",
    "# TODO: split this module once kind {n} has a reader of its own",
)
KIB = 1024


# --- the workspaces --------------------------------------------------------------------------------


def day(n: int) -> str:
    """A pinned commit date, n days after 2025-01-01."""
    return datetime.fromtimestamp(1_735_732_800 + n * 86_400, timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")


def make_empty_match(root: Path, megabytes: float, seed: int = 5) -> str:
    """About `megabytes` of source-like text in files of ~20 KB, ten folders committed on ten dates."""
    rnd = random.Random(seed)
    blocks = []
    for _ in range(64):
        lines = []
        size = 0
        while size < 20_000:
            line = rnd.choice(SOURCE_LINES).format(n=rnd.randrange(1000))
            lines.append(line)
            size += len(line) + 1
        blocks.append("\n".join(lines) + "\n")
    files = max(10, int(megabytes * 1e6 / 20_000))
    repo = Repo(root)
    for n in range(files):
        repo.write(f"pkg_{n % 10}/module_{n:05d}.py", f"# module {n}\n{blocks[n % len(blocks)]}")
    for folder in range(10):
        repo.commit(day(30 * folder), f"pkg_{folder}")
    total = sum(path.stat().st_size for path in root.glob("pkg_*/*.py"))
    return f"{files:,} files, {total / 1e6:.1f} MB"


def make_big_gitignore(root: Path, megabytes: float) -> str:
    """A tracked .gitignore of about `megabytes` of distinct lines, and a few files holding WORD."""
    shapes = ("name_{n}/*.log", "*.tmp{n}", "/out_{n}/", "cache-{n}.bin", "build/{n}/**/*.o", "!keep_{n}.txt")
    lines = []
    size = 0
    n = 0
    while size < megabytes * 1e6:
        line = shapes[n % len(shapes)].format(n=n)
        lines.append(line)
        size += len(line) + 1
        n += 1
    repo = Repo(root)
    repo.write(".gitignore", "\n".join(lines) + "\n")
    repo.commit(day(0), ".gitignore")
    for k, name in enumerate(("src/search.py", "src/rank.py", "docs/guide.md", "README.md")):
        repo.write(name, f"{WORD} = {k}\n# the {WORD} is found here\n")
        repo.commit(day(10 + 20 * k), name)
    return f"{size / 1e6:.1f} MB .gitignore, {len(lines):,} lines"


def make_heavy_rules(root: Path, kilobytes: float, seed: int = 1) -> str:
    """A tracked .gitignore of about `kilobytes` of random rules with `*` and `**`, and a few files holding WORD."""
    rng = random.Random(seed)
    letters = "abcdefghijklmnopqrstuvwxyz"
    lines = []
    size = 0
    while size < kilobytes * 1000:
        line = "".join(rng.choice(letters) for _ in range(rng.randint(5, 25))) + "/"
        line += rng.choice(("*.log", "x*y", "**/z"))
        lines.append(line)
        size += len(line) + 1
    repo = Repo(root)
    repo.write(".gitignore", "\n".join(lines) + "\n")
    repo.write("src/search.py", f"{WORD} = 1\n")
    repo.commit(day(0), ".gitignore", "src/search.py")
    return f"{size / 1e3:.0f} KB .gitignore, {len(lines):,} rules"


def make_submodule_zero(root: Path, origin: Path) -> str:
    """A repository whose submodule `sub` tracks `.ignore` as a link to /dev/zero; `origin` is its source."""
    sub = Repo(origin)
    sub.write("lib/util.py", f"{WORD} = 'in the submodule'\n")
    (origin / ".ignore").symlink_to("/dev/zero")
    sub.commit(day(0), "lib/util.py", ".ignore")
    repo = Repo(root)
    repo.write("main.py", f"{WORD} = 'at the top'\n")
    repo.commit(day(5), "main.py")
    repo.git("-c", "protocol.file.allow=always", "submodule", "add", "-q", str(origin), "sub")
    repo.commit(day(9), message="add the submodule")
    if not (root / "sub" / ".ignore").is_symlink():
        raise SystemExit("the submodule's .ignore was not checked out as a link")
    return "a submodule whose .ignore links to /dev/zero"


# --- the processes: a server's tree, its memory, its end ------------------------------------------


def process_table() -> dict[int, tuple[int, int]]:
    """Every process's (ppid, start time in clock ticks), from /proc/*/stat."""
    table: dict[int, tuple[int, int]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            with open(f"/proc/{entry.name}/stat", "rb") as stat:
                fields = stat.read().rpartition(b")")[2].split()
        except OSError:
            continue  # gone since the listing
        # After the name: state, ppid, ... and the start time, field 22 of stat (index 19 here).
        table[int(entry.name)] = (int(fields[1]), int(fields[19]))
    return table


def tree(root: int, table: dict[int, tuple[int, int]]) -> list[int]:
    """`root` (if it still exists) and all its descendants."""
    children: dict[int, list[int]] = collections.defaultdict(list)
    for pid, (ppid, _) in table.items():
        children[ppid].append(pid)
    found = [root] if root in table else []
    for pid in found:  # grows as it is walked: breadth first
        found.extend(children.get(pid, []))
    return found


def memory_kib(pid: int) -> tuple[int, int]:
    """A process's resident memory and its high-water mark (VmRSS, VmHWM of /proc/PID/status) in
    KiB; 0 for one gone or without them (a zombie)."""
    found = {"VmRSS": 0, "VmHWM": 0}
    try:
        with open(f"/proc/{pid}/status", encoding="ascii", errors="replace") as status:
            for line in status:
                name = line.split(":", 1)[0]
                if name in found:
                    found[name] = int(line.split()[1])
    except OSError:
        pass
    return found["VmRSS"], found["VmHWM"]


def available_kib() -> int:
    with open("/proc/meminfo", encoding="ascii") as meminfo:
        return next(int(line.split()[1]) for line in meminfo if line.startswith("MemAvailable:"))


def command_name(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/comm").read_text(encoding="utf-8", errors="replace").strip()
    except OSError:
        return "?"


class Watch:
    """Samples the summed RSS of a server and its descendants in a thread; ends them all past a bound."""

    def __init__(self, root: int, *, interval: float, max_kib: int, min_available_kib: int) -> None:
        self.root = root
        self.interval = interval
        self.max_kib = max_kib
        self.min_available_kib = min_available_kib
        self.began = time.monotonic()
        self.peak_kib = 0
        self.server_hwm_kib = 0
        self.largest_child_kib = 0
        self.most_processes = 0
        self.stopped: str | None = None  # why the guard ended the run, if it did
        self.seen: dict[int, int] = {}  # every pid the tree ever held, with its start time
        self.lock = threading.Lock()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True, name="watch")
        self._thread.start()

    def _run(self) -> None:
        while True:
            self.sample()
            if self.stopped is not None or self._done.wait(self.interval):
                return

    def sample(self) -> int:
        """One reading of the summed RSS (KiB); past a bound, the tree is ended and `stopped` says why."""
        table = process_table()
        pids = tree(self.root, table)
        readings = [memory_kib(pid) for pid in pids]
        sizes = [rss for rss, _ in readings]
        total = sum(sizes)
        with self.lock:
            if pids and pids[0] == self.root:
                self.server_hwm_kib = max(self.server_hwm_kib, readings[0][1])
            for pid in pids:
                self.seen[pid] = table[pid][1]
            self.peak_kib = max(self.peak_kib, total)
            self.most_processes = max(self.most_processes, len(pids))
            if len(sizes) > 1:
                self.largest_child_kib = max(self.largest_child_kib, *sizes[1:])
        reason = None
        left = available_kib()
        if total > self.max_kib:
            reason = f"(--max-mib {self.max_kib / KIB:,.0f})"
        elif left < self.min_available_kib:
            reason = f"(the machine had {left / KIB:,.0f} MiB available)"
        if reason is not None and self.stopped is None:
            said = f"stopped at {total / KIB:,.0f} MiB after {self.age():.1f} s {reason}"
            end_tree(self.root, self.known())
            self.stopped = said  # said once the tree is ended: whoever reads it finds it gone
        return total

    def age(self) -> float:
        return time.monotonic() - self.began

    def known(self) -> dict[int, int]:
        with self.lock:
            return dict(self.seen)

    def finish(self) -> None:
        self._done.set()
        self._thread.join()


def end_tree(root: int, seen: dict[int, int]) -> set[int]:
    """Stop `root`, its descendants and every process of `seen` still alive as itself (the same start
    time), then kill each one and its process group; the pids ended."""
    if sys.platform == "win32":  # main() refuses any system but Linux; this tells the type checker
        raise SystemExit("no process groups to end on Windows")
    own_group = os.getpgrp()
    stopped: set[int] = set()
    while True:  # until a scan finds none not yet stopped: a stopped process starts nothing
        table = process_table()
        found = set(tree(root, table))
        found |= {pid for pid, started in seen.items() if pid in table and table[pid][1] == started}
        found -= stopped
        if not found:
            break
        for pid in found:
            with contextlib.suppress(OSError):
                os.kill(pid, signal.SIGSTOP)
        stopped |= found
    for pid in stopped:
        with contextlib.suppress(OSError):
            group = os.getpgid(pid)
            if group != own_group:
                os.killpg(group, signal.SIGKILL)
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)
    return stopped


def still_alive(seen: dict[int, int]) -> list[str]:
    """Names of the processes of `seen` still running as themselves (zombies are not running)."""
    table = process_table()
    alive = []
    for pid, started in seen.items():
        if pid in table and table[pid][1] == started:
            try:
                state = Path(f"/proc/{pid}/stat").read_bytes().rpartition(b")")[2].split()[0]
            except OSError:
                continue
            if state != b"Z":
                alive.append(f"{command_name(pid)}[{pid}]")
    return alive


# --- one run: a server, the calls at once, the answers ------------------------------------------


@dataclass
class Outcome:
    """What one (workspace, transport) run measured."""

    calls: int
    answers: dict[int, dict[str, Any]] = field(default_factory=dict)  # by request id, as they came
    missing_reason: str | None = None  # why some calls got no answer, when they did not
    seconds: float | None = None  # from sending the calls to the last answer
    idle_mib: float = 0.0
    peak_mib: float = 0.0
    server_hwm_mib: float = 0.0
    largest_child_mib: float = 0.0
    most_processes: int = 0
    stopped: str | None = None
    lingering: list[str] = field(default_factory=list)  # descendants still running after every answer
    survivors: list[str] = field(default_factory=list)  # still running after the end: must stay empty

    def tally(self) -> tuple[int, int, int, int, str | None]:
        """(results, tool errors, JSON-RPC errors, missing, the first error's text)."""
        results = tool_errors = rpc_errors = 0
        first: str | None = None
        for answer in self.answers.values():
            if "error" in answer:
                rpc_errors += 1
                text = str(answer["error"].get("message")) if isinstance(answer["error"], dict) else str(answer)
            elif isinstance(answer.get("result"), dict) and answer["result"].get("isError"):
                tool_errors += 1
                content = answer["result"].get("content") or [{}]
                text = str(content[0].get("text", content))
            else:
                results += 1
                continue
            first = first or text
        return results, tool_errors, rpc_errors, self.calls - len(self.answers), first


def guarded(argv: list[str], max_as_mib: int) -> list[str]:
    """`argv` under prlimit's address-space cap (each process it starts inherits it)."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        raise SystemExit("search_memory.py runs each server under prlimit (util-linux), which is not installed")
    return [prlimit, f"--as={max_as_mib * 2**20}", "--", *argv]


def call(n: int, pattern: str) -> dict[str, Any]:
    arguments = {"pattern": pattern}
    return {
        "jsonrpc": "2.0",
        "id": n,
        "method": "tools/call",
        "params": {"name": "search_workspace", "arguments": arguments},
    }


INITIALIZE = {
    "jsonrpc": "2.0",
    "id": 0,
    "method": "initialize",
    "params": {"protocolVersion": PROTOCOL, "capabilities": {}, "clientInfo": {"name": "bench", "version": "0"}},
}
INITIALIZED = {"jsonrpc": "2.0", "method": "notifications/initialized"}


@dataclass
class Settings:
    calls: int
    timeout: float
    interval: float
    max_mib: int
    max_as_mib: int
    min_available_mib: int
    scratch: Path


class Runner:
    """One server under watch: started, measured, and ended with all it started, whatever happens."""

    def __init__(self, argv: list[str], settings: Settings, log: IO[bytes], *, stdio: bool) -> None:
        """Over stdio the server's stdin and stdout are pipes and its stderr goes to `log`; over HTTP
        its stderr is a pipe (the banner names the port) and the rest is closed."""
        self.settings = settings
        self.deadline = time.monotonic() + settings.timeout
        environment = {**env_for(), "TMPDIR": str(settings.scratch)}  # what a killed server leaves goes too
        self.proc = subprocess.Popen(
            guarded(argv, settings.max_as_mib),
            stdin=subprocess.PIPE if stdio else subprocess.DEVNULL,
            stdout=subprocess.PIPE if stdio else subprocess.DEVNULL,
            stderr=log if stdio else subprocess.PIPE,
            env=environment,
            start_new_session=True,  # its group is its own: ending it never reaches the bench
        )
        self.watch = Watch(
            self.proc.pid,
            interval=settings.interval,
            max_kib=settings.max_mib * KIB,
            min_available_kib=settings.min_available_mib * KIB,
        )
        self.outcome = Outcome(settings.calls)
        # At the deadline the tree is ended, so that no read of its pipes or sockets blocks past it.
        self._alarm = threading.Timer(settings.timeout, lambda: end_tree(self.proc.pid, self.watch.known()))
        self._alarm.daemon = True
        self._alarm.start()

    def left(self) -> float:
        return self.deadline - time.monotonic()

    def over(self) -> bool:
        """Whether the run must stop now: the guard ended it, the time is up, or the server is gone."""
        if self.watch.stopped is not None:
            self.outcome.missing_reason = self.watch.stopped
            return True
        if self.left() <= 0:
            self.outcome.missing_reason = f"timed out after {self.settings.timeout:.0f} s"
            return True
        if self.proc.poll() is not None:
            self.outcome.missing_reason = f"the server exited with status {self.proc.returncode}"
            return True
        return False

    def ended(self, talk: Callable[[Runner], None]) -> Outcome:
        """The outcome of `talk` with the server, which is ended (with all it started) whatever happens."""
        try:
            talk(self)
        except BaseException:
            self.end()
            raise
        return self.end()

    def settle(self) -> None:
        """The tree's idle memory, read once the server has started."""
        self.outcome.idle_mib = self.watch.sample() / KIB

    def end(self) -> Outcome:
        """End the server and everything it started; the outcome with its memory figures."""
        self._alarm.cancel()
        outcome = self.outcome
        if self.watch.stopped is None and len(outcome.answers) == outcome.calls:
            time.sleep(0.5)  # what a call started should be gone by now
            table = process_table()
            outcome.lingering = [command_name(pid) for pid in tree(self.proc.pid, table)[1:]]
        self.watch.sample()  # the server's high-water mark, as late as it can be read
        self.watch.finish()
        outcome.stopped = self.watch.stopped
        seen = self.watch.known()
        end_tree(self.proc.pid, seen)
        with contextlib.suppress(subprocess.TimeoutExpired):
            self.proc.wait(timeout=10)
        for _ in range(50):  # the killed children are reaped by init
            outcome.survivors = still_alive(seen)
            if not outcome.survivors:
                break
            time.sleep(0.1)
        outcome.peak_mib = self.watch.peak_kib / KIB
        outcome.server_hwm_mib = self.watch.server_hwm_kib / KIB
        outcome.largest_child_mib = self.watch.largest_child_kib / KIB
        outcome.most_processes = self.watch.most_processes
        for pipe in (self.proc.stdin, self.proc.stdout, self.proc.stderr):
            if pipe is not None:
                with contextlib.suppress(OSError):
                    pipe.close()
        return outcome


def run_stdio(workspace: Path, patterns: list[str], settings: Settings) -> Outcome:
    """All the calls written on one stdio server's stdin at once; their answers read as they come."""
    with open(settings.scratch / "stdio.log", "ab") as log:
        runner = Runner([SERVER, "--workspace", str(workspace)], settings, log, stdio=True)
    return runner.ended(lambda runner: talk_stdio(runner, patterns))


def talk_stdio(runner: Runner, patterns: list[str]) -> None:
    replies: queue.Queue[dict[str, Any] | None] = queue.Queue()

    def read() -> None:
        assert runner.proc.stdout is not None
        for line in runner.proc.stdout:
            with contextlib.suppress(ValueError):
                replies.put(json.loads(line))
        replies.put(None)

    threading.Thread(target=read, daemon=True, name="stdout").start()
    outcome = runner.outcome
    count = outcome.calls
    stdin = runner.proc.stdin
    assert stdin is not None
    try:
        stdin.write(json.dumps(INITIALIZE).encode() + b"\n")
        stdin.flush()
        if wait_for(runner, replies, {0}) is None:
            outcome.missing_reason = f"no answer to initialize ({outcome.missing_reason})"
            return
        runner.settle()
        lines = [INITIALIZED, *(call(n, patterns[(n - 1) % len(patterns)]) for n in range(1, count + 1))]
        started = time.monotonic()
        stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        stdin.flush()
    except OSError as error:  # the server went away while it was written to
        outcome.missing_reason = f"writing to the server failed: {error}"
        return
    wanted = set(range(1, count + 1))
    while wanted:
        reply = wait_for(runner, replies, wanted)
        if reply is None:
            return
        outcome.answers[reply["id"]] = reply
        wanted.discard(reply["id"])
        outcome.seconds = time.monotonic() - started


def wait_for(runner: Runner, replies: queue.Queue[dict[str, Any] | None], ids: set[int]) -> dict[str, Any] | None:
    """The next reply to one of `ids`; None when the run must stop first (the outcome says why)."""
    while not runner.over():
        try:
            reply = replies.get(timeout=0.05)
        except queue.Empty:
            continue
        if reply is None:
            runner.proc.wait(timeout=5)
            runner.outcome.missing_reason = f"the server closed stdout (status {runner.proc.returncode})"
            return None
        if reply.get("id") in ids:
            return reply
    return None


def post(port: int, message: dict[str, Any], timeout: float) -> tuple[int, dict[str, Any] | None, str]:
    """One POST to /mcp: (status, the JSON-RPC answer if one came, what came instead)."""
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=max(1.0, timeout))
    headers = {
        "Content-Type": "application/json",
        "Accept": "application/json, text/event-stream",
        "MCP-Protocol-Version": PROTOCOL,
    }
    try:
        connection.request("POST", "/mcp", body=json.dumps(message).encode(), headers=headers)
        response = connection.getresponse()
        body = response.read()
    finally:
        connection.close()
    if response.getheader("Content-Type", "").startswith("text/event-stream"):
        data = [line[5:].strip() for line in body.splitlines() if line.startswith(b"data:")]
        body = data[-1] if data else b""
    try:
        answer = json.loads(body) if body else None
    except ValueError:
        answer = None
    if not isinstance(answer, dict):
        return response.status, None, f"HTTP {response.status}: {body[:120]!r}"
    return response.status, answer, ""


def run_http(workspace: Path, patterns: list[str], settings: Settings) -> Outcome:
    """An `initialize`, then all the calls at once, one POST from each of as many threads."""
    argv = [SERVER, "--transport", "streamable-http", "--port", "0", "--workspace", str(workspace)]
    with open(settings.scratch / "http.log", "ab") as log:
        runner = Runner(argv, settings, log, stdio=False)
    return runner.ended(lambda runner: talk_http(runner, patterns))


def talk_http(runner: Runner, patterns: list[str]) -> None:
    outcome = runner.outcome
    port = http_port(runner)
    if port is None:
        return
    try:
        status, answer, instead = post(port, INITIALIZE, runner.left())
        if status != 200 or answer is None or "result" not in answer:
            outcome.missing_reason = f"initialize failed: {instead or answer}"
            return
        post(port, INITIALIZED, runner.left())
    except (OSError, http.client.HTTPException) as error:
        outcome.missing_reason = f"initialize failed: {error!r}"
        return
    runner.settle()
    failures: list[str] = []
    lock = threading.Lock()
    barrier = threading.Barrier(outcome.calls + 1)
    counting = [True]  # answers that come once the run is over are not counted

    def one(n: int) -> None:
        barrier.wait()
        try:
            _, answer, instead = post(port, call(n, patterns[(n - 1) % len(patterns)]), runner.left())
        except (OSError, http.client.HTTPException) as error:  # reset, refused, cut short or timed out
            answer, instead = None, f"{type(error).__name__}: {error}"
        with lock:
            if answer is not None and counting[0]:
                outcome.answers[n] = answer
                outcome.seconds = time.monotonic() - started
            elif answer is None:
                failures.append(instead)

    threads = [threading.Thread(target=one, args=(n,), daemon=True) for n in range(1, outcome.calls + 1)]
    for thread in threads:
        thread.start()
    started = time.monotonic()
    barrier.wait()
    while any(thread.is_alive() for thread in threads) and not runner.over():
        time.sleep(0.05)
    runner.over()  # the deadline or the guard, if either is why a call went unanswered
    with lock:
        counting[0] = False
        if len(outcome.answers) < outcome.calls and failures and outcome.missing_reason is None:
            outcome.missing_reason = failures[0]


def http_port(runner: Runner) -> int | None:
    """The port the server's banner names, its stderr drained from then on; None when it did not start."""
    stderr = runner.proc.stderr
    assert stderr is not None
    banner = b""
    found = None
    while found is None:  # the banner comes within a second or two; EOF if the server dies
        line = stderr.readline()
        if not line:
            runner.outcome.missing_reason = f"the server did not start: {banner.decode(errors='replace')[-200:]}"
            return None
        banner += line
        found = re.search(rb"http://127\.0\.0\.1:(\d+)/mcp", banner)

    def drain() -> None:
        with open(runner.settings.scratch / "http.log", "ab") as log:
            for line in iter(stderr.readline, b""):
                log.write(line)

    threading.Thread(target=drain, daemon=True, name="stderr").start()
    return int(found.group(1))


# --- the report ---------------------------------------------------------------------------------------


def line_for(workspace: str, transport: str, outcome: Outcome, formula_mib: float | None) -> str:
    results, tool_errors, rpc_errors, missing, first = outcome.tally()
    answered = outcome.calls - missing
    took = f"{outcome.seconds:.1f} s" if outcome.seconds is not None else "-"
    parts = [
        f"{workspace:<14} {transport:<5} peak {outcome.peak_mib:7,.0f} MiB",
        f"{outcome.idle_mib:,.0f} MiB after initialize, server's own high-water {outcome.server_hwm_mib:,.0f} MiB, "
        f"largest child {outcome.largest_child_mib:,.0f} MiB, {outcome.most_processes} processes at most",
        f"{'all ' if not missing else ''}{answered} of {outcome.calls} answered in {took}",
        f"{results} results, {tool_errors} tool errors, {rpc_errors} JSON-RPC errors, {missing} missing",
    ]
    if formula_mib is not None:
        within = outcome.peak_mib <= formula_mib and not outcome.stopped
        parts.append(f"within {formula_mib:,.0f} MiB: {'yes' if within else 'NO'}")
    if outcome.stopped:
        parts.append(outcome.stopped)
    elif missing and outcome.missing_reason:
        parts.append(f"missing: {outcome.missing_reason}")
    if outcome.lingering:
        parts.append(f"still running after the answers: {', '.join(outcome.lingering)}")
    if outcome.survivors:
        parts.append(f"LEFT RUNNING: {', '.join(outcome.survivors)}")
    if first is not None:
        text = first if len(first) <= 200 else first[:197] + "..."
        parts.append(f"first error: {json.dumps(text)}")
    return " | ".join(parts)


def git_head() -> str:
    done = subprocess.run(["git", "-C", str(ROOT), "log", "-1", "--format=%h %s"], capture_output=True, text=True)
    dirty = subprocess.run(
        ["git", "-C", str(ROOT), "status", "--porcelain", "--", "codescout_mcp"], capture_output=True
    )
    return done.stdout.strip() + (" (codescout_mcp/ changed since)" if dirty.stdout.strip() else "")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes and a low --max-mib: check the script runs")
    parser.add_argument("--tree-mb", type=float, help="empty-match's tree in MB (default 100; smoke 0.5)")
    parser.add_argument("--gitignore-mb", type=float, help="big-gitignore's .gitignore in MB (default 9; smoke 0.2)")
    parser.add_argument("--calls", type=int, help="calls at once (default 20; smoke 4)")
    parser.add_argument("--timeout", type=float, help="seconds a run may take (default 180; smoke 60)")
    parser.add_argument("--max-mib", type=int, help="stop a run once its summed RSS passes this (default 12,000)")
    parser.add_argument("--max-as-mib", type=int, default=16_384, help="prlimit --as for each process, in MiB")
    parser.add_argument("--min-available-mib", type=int, default=2_048, help="stop a run when the machine has less")
    parser.add_argument("--interval", type=float, default=0.025, help="seconds between samples (default 0.025)")
    parser.add_argument("--formula-mib", type=float, help="say whether each peak stayed within this many MiB")
    parser.add_argument(
        "--only", help="these workspaces, comma-separated: empty-match, big-gitignore, submodule-zero, heavy-rules"
    )
    parser.add_argument("--transports", default="stdio,http", help="comma-separated: stdio, http (default both)")
    args = parser.parse_args()
    if not sys.platform.startswith("linux"):
        raise SystemExit("search_memory.py reads processes' memory from /proc and caps them with prlimit: Linux only")
    smoke = args.smoke
    tree_mb = args.tree_mb or (0.5 if smoke else 100.0)
    gitignore_mb = args.gitignore_mb or (0.2 if smoke else 9.0)
    calls = args.calls or (4 if smoke else 20)
    max_mib = args.max_mib or (768 if smoke else 12_000)
    chosen = args.only.split(",") if args.only else ["empty-match", "big-gitignore", "submodule-zero", "heavy-rules"]
    transports = args.transports.split(",")
    load = " ".join(f"{value:.2f}" for value in os.getloadavg())
    print(
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC, load average {load} at start, {os.cpu_count()} cores, "
        f"{available_kib() / KIB**2:.1f} GiB available; commit {git_head()}"
    )
    print(
        f"{calls} calls at once per run; a run stops at {max_mib:,} MiB summed, below {args.min_available_mib:,} MiB "
        f"available or after {args.timeout or (60 if smoke else 180):.0f} s; prlimit --as {args.max_as_mib:,} MiB "
        f"a process; sampled every {args.interval * 1000:.0f} ms"
    )
    over = False
    with tempfile.TemporaryDirectory(prefix="codescout-search-memory-") as tmp:
        scratch = Path(tmp)
        (scratch / "tmp").mkdir()
        settings = Settings(
            calls=calls,
            timeout=args.timeout or (60.0 if smoke else 180.0),
            interval=args.interval,
            max_mib=max_mib,
            max_as_mib=args.max_as_mib,
            min_available_mib=args.min_available_mib,
            scratch=scratch / "tmp",
        )
        builders: dict[str, tuple[Callable[[Path], str], list[str]]] = {
            "empty-match": (lambda root: make_empty_match(root, tree_mb), list(EMPTY_PATTERNS)),
            "big-gitignore": (lambda root: make_big_gitignore(root, gitignore_mb), [WORD]),
            "submodule-zero": (lambda root: make_submodule_zero(root, scratch / "sub-origin"), [WORD]),
            "heavy-rules": (lambda root: make_heavy_rules(root, 8 if smoke else 40), [WORD]),
        }
        for name in chosen:
            build, patterns = builders[name]
            root = scratch / name
            began = time.perf_counter()
            shape = build(root)
            print(f"{name}: {shape}, built in {time.perf_counter() - began:.0f} s; patterns {', '.join(patterns)}")
            for transport in transports:
                run = run_stdio if transport == "stdio" else run_http
                outcome = run(root, patterns, settings)
                print(line_for(name, transport, outcome, args.formula_mib), flush=True)
                over |= args.formula_mib is not None and (outcome.peak_mib > args.formula_mib or bool(outcome.stopped))
                if outcome.survivors:
                    raise SystemExit(f"processes left running after the {name} {transport} run: {outcome.survivors}")
            shutil.rmtree(root)  # the next workspace's run has the disk's cache to itself
    return 1 if over and not smoke else 0


if __name__ == "__main__":
    raise SystemExit(main())
