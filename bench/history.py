"""The history walk behind a search's ages: a new process's first search, and the ones after it, in one run.

    python bench/history.py                       # a generated history: 40,000 first-parent commits, 5,000 files
    python bench/history.py --repo ~/src/rails    # a real checkout (cloned into a scratch folder first)
    python bench/history.py --before OLD/bin/codescout   # also the cold search of an older codescout
    python bench/history.py --smoke               # tiny sizes: the script still works

Two searches, each in turns with its baselines (medians of alternating runs): one whose files
changed in the newest commits, and one that finds a file untouched since near the root, whose
age needs a walk of almost the whole first-parent history.

* cold: `codescout search` in a new process with an empty cache folder, against one whole
  `git log --first-parent --no-renames --name-only HEAD` plus `codescout --version` (target 1.0x);
* warm: the same in a new process whose cache folder one cold search filled, against
  `rg -c PATTERN` (the search's own filters) plus `codescout --version` (target 1.5x);
* after 100 new commits on HEAD: the same cache as warm, the new commits still to walk, against
  the same baseline (target 1.5x);
* server: `codescout mcp --workspace` with an empty cache, its first search_workspace call some
  seconds after `initialize` (the history walked meanwhile), against repeats of the call in the
  same session (target 1.5x); beside it, the same first call to a server started with
  --no-warm, on an empty cache (what the warm-up saves) and on a filled one (what it cannot).

Every answer is checked against the cold answer of the same state (after the update: of the new
state), and so are those with a cache folder that cannot be written and with `--no-cache`: the
bench stops at the first that differs. The commits each new process walked are counted in a
separate, untimed run of the same command (`History.commits_walked`).
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench import CODESCOUT, PYTHON, PipeSession, compile_package, make_history, report
from codescout_mcp.facts.rg import VCS_FOLDERS, rg_program

CACHE_VARIABLE = "CODESCOUT_CACHE_DIR"
NEW_COMMITS = 100
# ripgrep as search_workspace runs it: hidden files searched, version-control folders left out.
RG_FILTERS = ["--hidden", *(f"--glob=!{name}" for name in VCS_FOLDERS)]

# Runs `codescout` in this interpreter and says on stderr how many first-parent commits its
# history walks read (History.commits_walked, summed over every History the process made).
_COUNTING = """
import sys
from codescout_mcp.facts import history

made = []
plain_init = history.History.__init__

def counted_init(self, *args, **kwargs):
    plain_init(self, *args, **kwargs)
    made.append(self)

history.History.__init__ = counted_init
from codescout_mcp.cli.main import main

status = main(sys.argv[1:])
sys.stdout.flush()
print("walked", sum(h.commits_walked for h in made), file=sys.stderr)
raise SystemExit(status)
"""


class Search(NamedTuple):
    label: str  # "recent files" or "old file"
    pattern: str  # a regular expression, as ripgrep reads it
    note: str  # what it finds, for the output


def loadavg() -> str:
    return " ".join(f"{value:.2f}" for value in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def git(repo: Path, *args: str, text: bool = True) -> Any:
    return subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=text, check=True).stdout


# --- the repositories ------------------------------------------------------------------------------


def _blob(text: str) -> bytes:
    data = text.encode()
    return b"data %d\n%s\n" % (len(data), data)


def last_changes(repo: Path) -> tuple[dict[str, int], int]:
    """For each path, how many first-parent commits back from HEAD it last changed (0: in HEAD);
    and how many first-parent commits there are."""
    out = git(repo, "log", "--first-parent", "--no-renames", "-z", "--format=%x00%H", "--name-only", "HEAD", text=False)
    back: dict[str, int] = {}
    commit = -1
    header = False
    for field in out.split(b"\0"):
        if header:
            commit += 1
            header = False
        elif not field:
            header = True
        else:
            name = field.removeprefix(b"\n").decode("utf-8", "surrogateescape")
            if name:
                back.setdefault(name, commit)
    return back, commit + 1


def regex_escaped(text: str) -> str:
    """`text` as a regular expression ripgrep reads as exactly that text."""
    return "".join(f"\\{char}" if char in "\\.+*?()|[]{}^$#&-~" else char for char in text)


def files_matching(repo: Path, literal: str) -> int:
    done = subprocess.run(
        [rg_program(), "-c", *RG_FILTERS, "-F", "-e", literal], cwd=repo, capture_output=True, text=True, check=False
    )
    return len(done.stdout.splitlines())


def rare_line(repo: Path, name: str) -> tuple[str, int] | None:
    """The line of `name` (plain ASCII, 8 to 60 characters) found in the fewest files, and how many."""
    try:
        data = (repo / name).read_bytes()
    except OSError:
        return None
    if b"\0" in data or len(data) > 1 << 20:
        return None
    lines = {line.strip() for line in data.decode("ascii", "replace").splitlines()}
    fit = sorted(
        (line for line in lines if 8 <= len(line) <= 60 and line.isprintable() and "\ufffd" not in line),
        key=lambda line: (-len(line), line),
    )
    best: tuple[str, int] | None = None
    for line in fit[:8]:
        found = files_matching(repo, line)
        if found and (best is None or found < best[1]):
            best = (line, found)
        if found == 1:
            break
    return best


def pick_searches(repo: Path, back: dict[str, int]) -> tuple[Search, Search]:
    """For a real checkout: a line of each of the five most recently changed files, and one line of
    the file that has not changed for longest, each a line found in as few files as may be."""
    tracked = [name for name in git(repo, "ls-files", "-z").split("\0") if name in back]
    tracked = [name for name in tracked if (repo / name).is_file() and not (repo / name).is_symlink()]
    newest = sorted(tracked, key=lambda name: (back[name], name))
    recent: list[str] = []
    for name in newest[:40]:
        found = rare_line(repo, name)
        if found is not None:
            recent.append(regex_escaped(found[0]))
        if len(recent) == 5:
            break
    old = None
    for name in sorted(tracked, key=lambda name: (-back[name], name))[:10]:
        found = rare_line(repo, name)
        if found is not None:
            old = (name, found)
            break
    if not recent or old is None:
        raise SystemExit("found no line of text to search for; give --recent and --old")
    name, (line, _) = old
    return (
        Search("recent files", "|".join(recent), "a line of each of the 5 most recently changed files"),
        Search("old file", regex_escaped(line), f"a line of {name}, last changed {back[name]:,} commits back"),
    )


def add_commits(repo: Path, count: int, *, now: int, touch: list[str], avoid: set[str], seed: int = 23) -> None:
    """`count` commits on top of HEAD (fast-import), a minute apart up to `now`, each
    appending a line to one or two tracked files: five of `touch` (the recent search's files, whose
    ages change) and twenty others, none of `avoid` (the old search's files, which stay old); the
    work tree is then checked out."""
    rnd = random.Random(seed)
    branch = git(repo, "symbolic-ref", "HEAD").strip()
    head = git(repo, "rev-parse", "HEAD").strip()
    when = max(int(git(repo, "log", "-1", "--format=%ct", "HEAD")), now - 60 * (count + 1))
    modes = {}
    for entry in git(repo, "ls-tree", "-r", "-z", "HEAD").split("\0"):
        if entry:
            info, name = entry.split("\t", 1)
            if info.split()[0] in ("100644", "100755"):
                modes[name] = info.split()[0]
    touched = sorted(set(touch) & set(modes) - avoid)
    touched = rnd.sample(touched, min(5, len(touched)))
    others = sorted(set(modes) - avoid - set(touched))
    pool = touched + rnd.sample(others, min(20, len(others)))
    contents = {name: git(repo, "cat-file", "blob", f"HEAD:{name}", text=False) for name in pool}
    chunks: list[bytes] = []
    for n in range(count):
        chunks.append(f"commit {branch}\ncommitter Bench <bench@example.com> {when + 60 * (n + 1)} +0000\n".encode())
        chunks.append(_blob(f"bench update {n}"))
        if n == 0:
            chunks.append(f"from {head}\n".encode())
        for name in rnd.sample(pool, rnd.randint(1, 2)):
            contents[name] += f"\n# codescout bench update {n}\n".encode()
            data = contents[name]
            chunks.append(f"M {modes[name]} inline {name}\n".encode() + b"data %d\n%s\n" % (len(data), data))
    subprocess.run(["git", "-C", str(repo), "fast-import", "--quiet"], input=b"".join(chunks), check=True)
    subprocess.run(["git", "-C", str(repo), "reset", "-q", "--hard", "HEAD"], check=True)


# --- running the commands ----------------------------------------------------------------------------


class Bench:
    """One repository's runs: the commands, their cache folders, and the answers to check."""

    def __init__(self, repo: Path, scratch: Path, now: datetime) -> None:
        self.repo = repo
        self.scratch = scratch
        self.now = now.isoformat().replace("+00:00", "Z")  # what every search counts ages to
        self.now_ts = int(now.timestamp())
        self.made = 0
        self.blocked = scratch / "a-file"
        self.blocked.write_text("a cache folder cannot be made under a regular file\n", encoding="utf-8")
        self.compared = 0

    def fresh_folder(self) -> Path:
        """A cache folder path not made yet (codescout makes it, as it would the user's)."""
        self.made += 1
        return self.scratch / f"cache-{self.made}"

    def copy_of(self, folder: Path) -> Path:
        copy = self.fresh_folder()
        shutil.copytree(folder, copy)
        return copy

    def search_argv(self, command: str, search: Search, *extra: str) -> list[str]:
        return [command, "search", search.pattern, "--workspace", str(self.repo), "--now", self.now, *extra]

    def timed(self, argv: list[str], cache: Path | None = None) -> tuple[float, bytes]:
        env = dict(os.environ)
        if cache is not None:
            env[CACHE_VARIABLE] = str(cache)
        started = time.perf_counter()
        done = subprocess.run(argv, capture_output=True, env=env, check=False)
        elapsed = time.perf_counter() - started
        if done.returncode != 0:
            raise SystemExit(f"{argv} failed ({done.returncode}): {done.stderr.decode(errors='replace')}")
        return elapsed, done.stdout

    def counted(self, search: Search, cache: Path | None, *extra: str) -> tuple[dict[str, Any], int]:
        """The answer of `codescout search` and the commits its walk read, in an untimed run."""
        env = dict(os.environ)
        if cache is not None:
            env[CACHE_VARIABLE] = str(cache)
        argv = [PYTHON, "-c", _COUNTING, *self.search_argv("codescout", search, *extra)[1:]]
        done = subprocess.run(argv, capture_output=True, env=env, check=False)
        said = done.stderr.decode(errors="replace")
        if done.returncode != 0 or "walked " not in said:
            raise SystemExit(f"codescout search {search.pattern!r} failed: {said}")
        return json.loads(done.stdout), int(said.rsplit("walked ", 1)[1].split()[0])

    def check(self, what: str, answer: dict[str, Any], expected: dict[str, Any]) -> None:
        self.compared += 1
        if answer != expected:
            raise SystemExit(
                f"{what}: the answer differs from the cold answer\n  got      {json.dumps(answer)[:2000]}\n"
                f"  expected {json.dumps(expected)[:2000]}"
            )

    def baseline_log(self) -> float:
        argv = ["git", "-C", str(self.repo), "log", "--first-parent", "--no-renames", "--name-only", "HEAD"]
        started = time.perf_counter()
        subprocess.run(argv, stdout=subprocess.PIPE, check=True)
        return time.perf_counter() - started

    def baseline_rg(self, search: Search) -> float:
        started = time.perf_counter()
        done = subprocess.run(
            [rg_program(), "-c", *RG_FILTERS, "-e", search.pattern], cwd=self.repo, capture_output=True
        )
        if done.returncode not in (0, 1):
            raise SystemExit(f"rg -c {search.pattern!r} failed: {done.stderr.decode(errors='replace')}")
        return time.perf_counter() - started

    def version(self) -> float:
        return self.timed([CODESCOUT, "--version"])[0]


def cache_bytes(folder: Path) -> int:
    return sum(path.stat().st_size for path in (folder / "history").glob("*")) if folder.exists() else 0


def median(values: list[float]) -> float:
    return statistics.median(values)


@contextlib.contextmanager
def cache_folder(folder: Path) -> Iterator[None]:
    """CODESCOUT_CACHE_DIR set for what this process starts meanwhile (PipeSession's server)."""
    before = os.environ.get(CACHE_VARIABLE)
    os.environ[CACHE_VARIABLE] = str(folder)
    try:
        yield
    finally:
        if before is None:
            del os.environ[CACHE_VARIABLE]
        else:
            os.environ[CACHE_VARIABLE] = before


def close_days(answer: dict[str, Any], expected: dict[str, Any]) -> bool:
    """The same counts, and rank by rank the same matches with an age within a day of the
    expected one. A server counts ages to its own now, so a file's age may have gone up by a day
    since the cold answer, and files of equal matches whose ages straddle that day may trade
    places at the end of the list: a file named in both answers must still agree in both."""
    got, wanted = answer["results"], expected["results"]
    if answer["counts"] != expected["counts"] or len(got) != len(wanted):
        return False
    if any(
        a["matches"] != b["matches"] or abs(a["last_modified_days"] - b["last_modified_days"]) > 1
        for a, b in zip(got, wanted, strict=True)
    ):
        return False
    known = {r["path"]: r for r in wanted}
    return all(
        r["matches"] == known[r["path"]]["matches"]
        and abs(r["last_modified_days"] - known[r["path"]]["last_modified_days"]) <= 1
        for r in got
        if r["path"] in known
    )


# --- the measurements --------------------------------------------------------------------------------


def bench_cold(
    bench: Bench,
    searches: tuple[Search, ...],
    expected: dict[str, dict[str, Any]],
    walked: dict[str, int],
    commits: int,
    rounds: int,
    before: str | None,
) -> bool:
    log: list[float] = []
    start: list[float] = []
    ours: dict[str, list[float]] = {s.label: [] for s in searches}
    old: dict[str, list[float]] = {s.label: [] for s in searches}
    old_same: dict[str, bool] = {}
    for _ in range(rounds):
        log.append(bench.baseline_log())
        start.append(bench.version())
        for search in searches:
            elapsed, out = bench.timed(bench.search_argv(CODESCOUT, search), bench.fresh_folder())
            bench.check(f"cold, {search.label}", json.loads(out), expected[search.label])
            ours[search.label].append(elapsed)
            if before is not None:
                elapsed, out = bench.timed(bench.search_argv(before, search), bench.fresh_folder())
                answer = json.loads(out)
                same = {k: answer.get(k) for k in ("results", "counts")}
                old_same[search.label] = same == {k: expected[search.label][k] for k in ("results", "counts")}
                old[search.label].append(elapsed)
    baseline = median([a + b for a, b in zip(log, start, strict=True)])
    print(f"baseline: whole git log {median(log):.2f} s + codescout --version {median(start):.3f} s = {baseline:.2f} s")
    ok = True
    for search in searches:
        took = median(ours[search.label])
        ok &= report(
            f"history cold: {search.label} / git log + start",
            took / baseline,
            1.0,
            f"{took:.2f} s vs {baseline:.2f} s; walked {walked[search.label]:,} of {commits:,} commits",
        )
    if before is not None:
        for search in searches:
            took, now = median(old[search.label]), median(ours[search.label])
            report(  # not judged: the figure to compare with
                f"history cold, before: {search.label} / git log + start",
                took / baseline,
                1.0,
                f"{took:.2f} s vs {baseline:.2f} s; now / before {now / took:.2f}x; "
                f"{'the same' if old_same[search.label] else 'NOT the same'} results",
            )
    return ok


def bench_warm(
    bench: Bench,
    searches: tuple[Search, ...],
    filled: dict[str, Path],
    expected: dict[str, dict[str, Any]],
    walked: dict[str, int],
    rounds: int,
    label: str,
) -> bool:
    """Each search in a new process on a copy of the cache one earlier process left, against
    `rg -c` and the command's start."""
    base: dict[str, list[float]] = {s.label: [] for s in searches}
    ours: dict[str, list[float]] = {s.label: [] for s in searches}
    for _ in range(rounds):
        for search in searches:
            base[search.label].append(bench.baseline_rg(search) + bench.version())
            elapsed, out = bench.timed(bench.search_argv(CODESCOUT, search), bench.copy_of(filled[search.label]))
            bench.check(f"{label}, {search.label}", json.loads(out), expected[search.label])
            ours[search.label].append(elapsed)
    ok = True
    for search in searches:
        took, baseline = median(ours[search.label]), median(base[search.label])
        ok &= report(
            f"history {label}: {search.label} / rg -c + start",
            took / baseline,
            1.5,
            f"{took:.3f} s vs {baseline:.3f} s; walked {walked[search.label]:,} commits",
        )
    return ok


def server_calls(
    bench: Bench,
    search: Search,
    expected: dict[str, Any],
    wait: float,
    calls: int,
    *options: str,
    cache: Path | None = None,
) -> list[float]:
    """Seconds of each of `calls` search_workspace calls to a fresh server (an empty cache folder,
    or `cache`), the first `wait` seconds after initialize; every answer checked."""
    with cache_folder(cache or bench.fresh_folder()):
        session = PipeSession("--workspace", str(bench.repo), *options)
    times = []
    answers = []
    try:
        time.sleep(wait)
        for _ in range(calls):
            line = session.encode("tools/call", {"name": "search_workspace", "arguments": {"pattern": search.pattern}})
            elapsed, reply = session.round_trip(line)
            result = reply.get("result", {})
            if "error" in reply or result.get("isError"):
                raise SystemExit(f"search_workspace failed: {reply}")
            answers.append(result["structuredContent"])
            times.append(elapsed)
    finally:
        session.close()
    if not all(close_days(answer, expected) for answer in answers):
        got = json.dumps(answers)[:3000]
        raise SystemExit(
            f"server, {search.label}: the answer differs from the cold answer\n  got      {got}\n"
            f"  expected {json.dumps(expected)[:2000]}"
        )
    bench.compared += len(answers)
    return times


def bench_server(
    bench: Bench,
    searches: tuple[Search, ...],
    filled: dict[str, Path],
    expected: dict[str, dict[str, Any]],
    rounds: int,
    wait: float,
) -> bool:
    """A fresh server (empty cache) whose first search comes `wait` seconds after initialize,
    against repeats of the same call in the same session. Besides, the same first call to a
    server started with --no-warm: with an empty cache (what the warm-up saved), and with the
    cache a cold search filled (a first call whose history needs no walk: what it cannot save)."""
    first: dict[str, list[float]] = {s.label: [] for s in searches}
    again: dict[str, list[float]] = {s.label: [] for s in searches}
    unwarmed: dict[str, list[float]] = {s.label: [] for s in searches}
    known: dict[str, list[float]] = {s.label: [] for s in searches}
    for _ in range(rounds):
        for search in searches:
            answer = expected[search.label]
            times = server_calls(bench, search, answer, wait, 4)
            first[search.label].append(times[0])
            again[search.label] += times[1:]
            unwarmed[search.label] += server_calls(bench, search, answer, wait, 1, "--no-warm")
            copy = bench.copy_of(filled[search.label])
            known[search.label] += server_calls(bench, search, answer, wait, 1, "--no-warm", cache=copy)
    ok = True
    for search in searches:
        took, repeat = median(first[search.label]), median(again[search.label])
        ok &= report(
            f"history server: {search.label}, first call / repeat",
            took / repeat,
            1.5,
            f"{took * 1000:.0f} ms vs {repeat * 1000:.0f} ms; first call {wait:g} s after initialize, empty cache; "
            f"with --no-warm {median(unwarmed[search.label]) * 1000:.0f} ms, "
            f"and on a filled cache {median(known[search.label]) * 1000:.0f} ms",
        )
    return ok


def run(repo: Path, scratch: Path, searches: tuple[Search, ...], args: argparse.Namespace, rounds: int) -> bool:
    bench = Bench(repo, scratch, datetime.now(timezone.utc).replace(microsecond=0))
    back, commits = last_changes(repo)
    tracked = len([name for name in git(repo, "ls-files", "-z").split("\0") if name])
    counted = int(git(repo, "rev-list", "--count", "--first-parent", "HEAD"))
    print(
        f"first-parent commits {counted:,} (git rev-list --count --first-parent HEAD); files tracked {tracked:,}; "
        f"paths in the first-parent history {len(back):,}"
    )
    for search in searches:
        matched = len(files_matching_regex(repo, search.pattern))
        print(f"search {search.label}: '{search.pattern}', {search.note}; {matched:,} files match")

    # The cold answers, and caches each filled by one cold search (untimed, walks counted).
    expected: dict[str, dict[str, Any]] = {}
    filled: dict[str, Path] = {}
    walked: dict[str, dict[str, int]] = {"cold": {}, "warm": {}, "after": {}}
    for search in searches:
        filled[search.label] = bench.fresh_folder()
        expected[search.label], walked["cold"][search.label] = bench.counted(search, filled[search.label])
        if walked["cold"][search.label] > commits:
            raise SystemExit(f"cold, {search.label}: walked {walked['cold'][search.label]:,} of {commits:,} commits")
        answer, walked["warm"][search.label] = bench.counted(search, bench.copy_of(filled[search.label]))
        bench.check(f"warm, {search.label}", answer, expected[search.label])
        check_unusual_caches(bench, search, expected[search.label])
    sizes = ", ".join(f"{s.label} {cache_bytes(filled[s.label]) / 1024:,.0f} KiB" for s in searches)
    print(f"cache file after one cold search: {sizes}")

    ok = bench_cold(bench, searches, expected, walked["cold"], commits, rounds, args.before)
    ok &= bench_warm(bench, searches, filled, expected, walked["warm"], rounds, "warm")
    ok &= bench_server(bench, searches, filled, expected, rounds, args.wait)

    # 100 commits on top of HEAD: the caches filled before it are a walk of an older HEAD.
    add_commits(
        repo,
        NEW_COMMITS,
        now=bench.now_ts,
        touch=files_matching_regex(repo, searches[0].pattern),
        avoid=set(files_matching_regex(repo, searches[1].pattern)),
    )
    git(repo, "status", "--porcelain")  # the index refreshed, as after a pull
    after = int(git(repo, "rev-list", "--count", "--first-parent", "HEAD"))
    changed = []
    for search in searches:
        answer, _ = bench.counted(search, bench.fresh_folder())
        changed.append(f"{search.label} {'changed' if answer != expected[search.label] else 'the same'}")
        expected[search.label] = answer
    print(f"after {NEW_COMMITS} new commits: {after:,} first-parent commits; cold answers {', '.join(changed)}")
    for search in searches:
        answer, walked["after"][search.label] = bench.counted(search, bench.copy_of(filled[search.label]))
        bench.check(f"after the update, {search.label}", answer, expected[search.label])
        check_unusual_caches(bench, search, expected[search.label])
    ok &= bench_warm(bench, searches, filled, expected, walked["after"], rounds, f"after {NEW_COMMITS} commits")
    print(
        f"answers: {bench.compared} compared (cold, warm, server, after the update, unwritable cache, --no-cache), "
        "all the same"
    )
    return ok


def files_matching_regex(repo: Path, pattern: str) -> list[str]:
    done = subprocess.run(
        [rg_program(), "-l", *RG_FILTERS, "-e", pattern], cwd=repo, capture_output=True, text=True, check=False
    )
    return done.stdout.splitlines()


def check_unusual_caches(bench: Bench, search: Search, expected: dict[str, Any]) -> None:
    """The answer with a cache folder that cannot be made (under a regular file) and with --no-cache."""
    _, out = bench.timed(bench.search_argv(CODESCOUT, search), bench.blocked / "cache")
    bench.check(f"unwritable cache, {search.label}", json.loads(out), expected)
    _, out = bench.timed(bench.search_argv(CODESCOUT, search, "--no-cache"), bench.fresh_folder())
    bench.check(f"--no-cache, {search.label}", json.loads(out), expected)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes and a short wait: check the script runs")
    parser.add_argument("--repo", type=Path, help="a checkout to measure, cloned first (default: a generated one)")
    parser.add_argument("--recent", help="the recent files' search (default: picked from the history)")
    parser.add_argument("--old", help="the old file's search (default: picked from the history)")
    parser.add_argument("--before", help="an older `codescout` whose cold search to measure too")
    parser.add_argument("--rounds", type=int, help="alternating runs (default 5, smoke 1)")
    parser.add_argument("--wait", type=float, help="seconds from initialize to the server's first call (default 10)")
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.smoke else 5)
    if args.wait is None:
        args.wait = 0.5 if args.smoke else 10.0
    compile_package()
    print(
        f"python {sys.version.split()[0]}, {os.cpu_count()} cores; medians of {rounds} alternating runs; "
        f"{datetime.now(timezone.utc):%Y-%m-%d %H:%M} UTC; load average {loadavg()} at start"
    )
    with tempfile.TemporaryDirectory(prefix="codescout-bench-") as tmp:
        scratch = Path(tmp)
        repo = scratch / "repo"
        if args.repo is None:
            files, commits = (50, 300) if args.smoke else (5_000, 40_000)
            started = time.perf_counter()
            fresh = 10 if args.smoke else 50
            make_history(repo, files, commits, old=max(2, files // 100), fresh=fresh)
            searches = (
                Search("recent files", "^# fresh$", f"the files the last {fresh} commits changed"),
                Search("old file", "^# old$", f"the {max(2, files // 100)} files changed only near the root"),
            )
            print(
                f"repository: generated, {files:,} files, {commits:,} commits "
                f"(built in {time.perf_counter() - started:.0f} s)"
            )
        else:
            subprocess.run(["git", "clone", "--no-hardlinks", "-q", str(args.repo), str(repo)], check=True)
            print(
                f"repository: {args.repo} at {git(repo, 'rev-parse', '--short', 'HEAD').strip()}, "
                "measured in a clone in a scratch folder"
            )
            searches = pick_searches(repo, last_changes(repo)[0])
        recent, old = searches
        if args.recent:
            recent = Search("recent files", args.recent, "given")
        if args.old:
            old = Search("old file", args.old, "given")
        git(repo, "status", "--porcelain")  # the index refreshed once, before anything is timed
        ok = run(repo, scratch, (recent, old), args, rounds)
    print(f"load average {loadavg()} at the end")
    print("\nall targets met" if ok else "\nsome targets missed")
    # Smoke runs are too small to judge speed; they only prove the benchmark still works.
    return 0 if args.smoke or ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
