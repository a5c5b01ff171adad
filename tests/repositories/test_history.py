"""The cached history held to a fresh walk, through the command line.

Every answer a cached history gives here is compared with the answer of the same question
asked with `--no-cache` in a fresh process (a walk from HEAD, no cache read or written): the
cache may only ever make codescout faster. The questions are `codescout hits --now NOW` fed
`rg --json` output of the tracked files (what a user pipes in), and `codescout search` where
it costs little; the warnings on stderr (a shallow clone's note) are part of the answer.

Each test gives its processes a cache folder of its own (CODESCOUT_CACHE_DIR), and the
oracle's run a folder that must still not exist afterwards. Where a test is about the cache
file itself it reads the file in process (`codescout_mcp.facts.cache._parse`); a well-formed
file with made-up dates (`forge`) shows whether a run read a file it must not read.
"""

from __future__ import annotations

import json
import os
import random
import re
import shutil
import subprocess
from collections import Counter
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from codescout_mcp.facts.cache import MAGIC, Snapshot, _parse, _written
from tests.gitrepo import DAY, NOW, NOW_SECONDS, Repo, env_for, rg_exe, run
from tests.helpers import codescout_exe
from tests.layouts import OTHER_UID
from tests.platforms import (
    AS_ROOT,
    BYTE_NAMES,
    CONTROL_NAMES,
    give_away,
    linux_only,
    posix_only,
    root_only,
    this_user,
)

OWNERS = "folder and file owners and modes (os.chown, st_uid)"
# What a run may say on stderr about a cache folder it will not use (one warning line).
REFUSED = re.compile(
    r"codescout: warning: the cache folder .+ (is a symbolic link|belongs to another user|can be written by other "
    r"users|is not a folder); it is not used, and histories are walked anew"
)


def stamp(days_ago: float) -> str:
    """A commit date `days_ago` days (and six hours) before NOW, as git takes it."""
    return datetime.fromtimestamp(NOW_SECONDS - days_ago * DAY - 6 * 3600, timezone.utc).isoformat()


# --- running codescout ----------------------------------------------------------------------


class Answer(NamedTuple):
    """What a user sees of one run: the JSON it printed, and its lines on stderr."""

    printed: Any
    said: list[str]


def rg_json(root: Path, pattern: str = "needle") -> bytes:
    done = run([rg_exe(), "--json", pattern], root)
    assert done.returncode == 0, done.stderr
    return done.stdout


def cli(
    argv: list[str], root: Path, cache: Path, *, stdin: bytes | None = None, extra: dict[str, str] | None = None
) -> Answer:
    done = run(argv, root, stdin=stdin, env=env_for(CODESCOUT_CACHE_DIR=str(cache), **(extra or {})))
    said = done.stderr.decode("utf-8", "backslashreplace").splitlines()
    assert done.returncode == 0, said
    return Answer(json.loads(done.stdout), said)


def hits(
    root: Path, cache: Path, *, pattern: str = "needle", no_cache: bool = False, trace: Path | None = None
) -> Answer:
    """`rg --json PATTERN | codescout hits --now NOW` in `root`, with `cache` as the cache folder;
    `trace`: a file where git notes each command it runs (GIT_TRACE)."""
    argv = [codescout_exe(), "hits", "--now", NOW, *(["--no-cache"] if no_cache else [])]
    extra = {"GIT_TRACE": str(trace)} if trace is not None else {}
    return cli(argv, root, cache, stdin=rg_json(root, pattern), extra=extra)


def search(root: Path, cache: Path, *, no_cache: bool = False) -> Answer:
    """`codescout search needle --workspace ROOT --now NOW`, every file listed."""
    argv = [codescout_exe(), "search", "needle", "--workspace", str(root), "--now", NOW, "--limit", "100000"]
    return cli([*argv, *(["--no-cache"] if no_cache else [])], root, cache)


def nowhere(root: Path) -> Path:
    """A cache folder for the oracle's runs, which must never come to exist."""
    return root.parent / f"{root.name}.no-cache"


def walked(root: Path, *, pattern: str = "needle") -> Answer:
    """The oracle: `codescout hits --no-cache` (which must leave its cache folder uncreated)."""
    answer = hits(root, nowhere(root), pattern=pattern, no_cache=True)
    assert not os.path.lexists(nowhere(root))
    return answer


def walked_search(root: Path) -> Answer:
    answer = search(root, nowhere(root), no_cache=True)
    assert not os.path.lexists(nowhere(root))
    return answer


def days(answer: Answer) -> dict[str, int]:
    return {hit["path"]: hit["last_modified_days"] for hit in answer.printed["hits"]}


def git_logs(trace: Path) -> int:
    """How many `git log` a traced run started (then forgets them, for the next run)."""
    text = trace.read_text(encoding="utf-8", errors="replace") if trace.exists() else ""
    trace.unlink(missing_ok=True)
    return len(re.findall(r"trace: built-in: git log ", text))


def head_of(repo: Repo) -> bytes:
    return repo.git("rev-parse", "HEAD").strip().encode()


# --- the cache file -------------------------------------------------------------------------

# The header's fields that describe the file itself; every other one is the key it was made for.
DESCRIPTION = frozenset({"commit", "next", "boundary_time", "made", "paths", "size", "sha256"})


def cache_files(cache: Path) -> list[Path]:
    folder = cache / "history"
    return sorted(folder.iterdir()) if folder.is_dir() else []


def only_file(cache: Path) -> Path:
    files = cache_files(cache)
    assert len(files) == 1, files
    return files[0]


def header_of(data: bytes) -> dict[str, Any]:
    assert data.startswith(MAGIC)
    header: dict[str, Any] = json.loads(data[len(MAGIC) : data.index(b"\n", len(MAGIC))])
    return header


def read_cache(path: Path) -> tuple[dict[str, str], Snapshot]:
    """The key a cache file was made for and what it holds; it must read whole."""
    header = header_of(path.read_bytes())
    key = {name: value for name, value in header.items() if name not in DESCRIPTION}
    snapshot = _parse(path.read_bytes(), key)
    assert snapshot is not None
    return key, snapshot


def forge(path: Path, days_ago: int) -> None:
    """Rewrite a good cache file, well-formed still, with every path dated `days_ago` days before
    NOW: a run that reads it says so in its ages."""
    key, snapshot = read_cache(path)
    when = int(NOW_SECONDS) - days_ago * DAY - 3600
    path.write_bytes(_written(snapshot._replace(times=dict.fromkeys(snapshot.times, when)), key))


def with_header(data: bytes, **changes: Any) -> bytes:
    """A cache file's bytes with some of its header's fields changed (its body, checksum included, kept)."""
    end = data.index(b"\n", len(MAGIC))
    header = {**header_of(data), **changes}
    return MAGIC + json.dumps(header, sort_keys=True).encode() + data[end:]


def state_of(folder: Path) -> dict[str, tuple[object, ...]]:
    """Everything under `folder` (not following links): each entry's kind and mode, owner,
    and bytes or link target; to show that a run created or changed nothing there."""
    found: dict[str, tuple[object, ...]] = {}
    if not os.path.lexists(folder):
        return found
    for place, folders, files in os.walk(folder):
        for name in [*folders, *files, "."] if place == str(folder) else [*folders, *files]:
            path = os.path.join(place, name)
            info = os.lstat(path)
            if os.path.islink(path):
                content: object = os.readlink(path)
            elif os.path.isfile(path):
                content = Path(path).read_bytes()
            else:
                content = None
            found[os.path.relpath(path, folder)] = (info.st_mode, info.st_uid, content)
    return found


# --- generated histories --------------------------------------------------------------------


def quoted(name: bytes) -> bytes:
    """A path as `git fast-import` reads it quoted, each byte it might misread escaped."""
    out = bytearray(b'"')
    for byte in name:
        if byte in b'"\\':
            out += b"\\" + bytes([byte])
        elif 0x20 <= byte < 0x7F:
            out.append(byte)
        else:
            out += b"\\%03o" % byte
    return bytes(out + b'"')


PLAIN_NAMES = [
    "README.md",
    "setup.cfg",
    "src/app.py",
    "src/util/helpers.py",
    "src/util/text.py",
    "docs/guide.md",
    "docs/deep/er/notes.txt",
    "name with spaces.txt",
    "dir with spaces/inner file.py",
    "\u00fcn\u00efcode/na\u00efve.md",
    "lib/a.rs",
    "lib/b.rs",
    "lib/c.rs",
    "tests/t1.py",
    "tests/t2.py",
]
# Names Windows forbids: a newline, a tab, a backslash, a quote, a trailing space, a colon and a star.
CONTROL = ["line\nbreak.txt", "tab\there.txt", "back\\slash.txt", 'quote".txt', "trailing space .txt", "co:lon*.txt"]
# Names that are not UTF-8, which only Linux keeps as they are.
BYTES = [b"caf\xe9.txt", b"bytes/\xff\xfe.txt"]

Entry = tuple[bytes, bytes]  # a file's mode and content
Tree = dict[bytes, Entry]


class RandomHistory:
    """A branch `main` grown in batches of seeded random commits, through `git fast-import`.

    Commits edit, add, delete, add back what was deleted, rename (what `git mv` records:
    one name gone, another with its content), change a mode only, or change nothing; and
    merges: a side branch forked from one of main's last commits (main's tip itself: a
    `--no-ff` merge) changes files main did not, then main merges it (two parents; the
    merge brings in what the side changed, or now and then nothing, as `-s ours` would).
    Side commits may be dated before main's, as rebased or cherry-picked commits are.
    """

    def __init__(self, repo: Repo, seed: int, names: list[bytes]) -> None:
        self.repo = repo
        self.rng = random.Random(seed)
        self.names = names
        self.tree: Tree = {}  # main's tip
        self.trees: dict[int, Tree] = {}  # each of main's commits (by mark): its tree
        self.line: list[int] = []  # main's first-parent line, oldest first
        self.gone: set[bytes] = set()  # names main deleted
        self.clock = int(NOW_SECONDS) - 900 * DAY
        self.mark = 0
        self.stream = bytearray()
        self.made: Counter[str] = Counter()  # how many commits of each kind were made
        self.written: set[bytes] = set()  # every name a commit wrote
        self.marks = repo.root.parent / f"{repo.root.name}.marks"

    def grow(self, commits: int) -> None:
        """`commits` more commits on main (a merge counts one, its side's commits none), then
        the work tree checked out at main's new tip."""
        for _ in range(commits):
            if self.line and self.rng.random() < 0.15:
                self._merge()
            else:
                self._on_main(self._changes(self.tree, self.gone))
        marks = (f"--import-marks-if-exists={self.marks}", f"--export-marks={self.marks}")
        subprocess.run(
            ["git", "fast-import", "--quiet", "--force", *marks],
            cwd=self.repo.root,
            input=bytes(self.stream),
            env=env_for(),
            check=True,
            capture_output=True,
        )
        self.stream.clear()
        self.repo.git("reset", "-q", "--hard", "main")

    def groups(self) -> list[str]:
        """The words (g0, g1, g2) that some file on main holds: each a pattern some file matches."""
        return sorted({content.split()[1].decode() for _, content in self.tree.values()})

    def _content(self) -> bytes:
        return b"needle g%d %d\n" % (self.rng.randrange(3), self.mark + 1)

    def _changes(self, tree: Tree, gone: set[bytes]) -> dict[bytes, Entry | None]:
        """One commit's changes to `tree` (None: deleted); names in `gone` may come back."""
        rng = self.rng
        free = [name for name in self.names if name not in tree and name not in gone]
        kind = rng.choices(
            ["edit", "add", "delete", "add back", "rename", "mode", "nothing"], weights=[30, 15, 8, 8, 10, 4, 6]
        )[0]
        present = sorted(tree)
        if (kind == "add" or not present) and free:
            return self._made("add", {rng.choice(free): (b"100644", self._content())})
        if kind == "delete" and len(present) > 3:
            return self._made(kind, {rng.choice(present): None})
        if kind == "add back" and gone:
            return self._made(kind, {rng.choice(sorted(gone)): (b"100644", self._content())})
        if kind == "rename" and free:
            old, new = rng.choice(present), rng.choice(free)
            mode, content = tree[old]
            return self._made(kind, {old: None, new: (mode, content if rng.random() < 0.7 else self._content())})
        if kind == "mode":
            name = rng.choice(present)
            mode, content = tree[name]
            return self._made(kind, {name: (b"100755" if mode == b"100644" else b"100644", content)})
        if kind == "nothing":
            return self._made(kind, {})
        chosen = rng.sample(present, min(len(present), rng.randint(1, 3)))
        return self._made("edit", {name: (tree[name][0], self._content()) for name in chosen})

    def _made(self, kind: str, changes: dict[bytes, Entry | None]) -> dict[bytes, Entry | None]:
        self.made[kind] += 1
        self.written.update(name for name, entry in changes.items() if entry is not None)
        return changes

    def _commit(self, branch: bytes, parents: list[int], changes: dict[bytes, Entry | None], when: int) -> int:
        self.mark += 1
        message = b"commit %d" % self.mark
        out = self.stream
        out += b"commit refs/heads/%s\nmark :%d\n" % (branch, self.mark)
        out += b"committer Test <test@example.com> %d +0000\n" % when
        out += b"data %d\n%s\n" % (len(message), message)
        if parents:
            out += b"from :%d\n" % parents[0]
        for parent in parents[1:]:
            out += b"merge :%d\n" % parent
        for name, entry in sorted(changes.items()):
            if entry is None:
                out += b"D %s\n" % quoted(name)
            else:
                out += b"M %s inline %s\ndata %d\n%s\n" % (entry[0], quoted(name), len(entry[1]), entry[1])
        out += b"\n"
        return self.mark

    def _on_main(self, changes: dict[bytes, Entry | None], merged: int | None = None) -> None:
        self.clock += self.rng.randint(12, 150) * 3600
        parents = self.line[-1:] + ([merged] if merged is not None else [])
        mark = self._commit(b"main", parents, changes, self.clock)
        for name, entry in changes.items():
            if entry is None:
                del self.tree[name]
                self.gone.add(name)
            else:
                self.tree[name] = entry
                self.gone.discard(name)
        self.line.append(mark)
        self.trees[mark] = dict(self.tree)

    def _merge(self) -> None:
        fork = self.rng.choice(self.line[-6:])
        start = self.trees[fork]
        side, tip = dict(start), fork
        for _ in range(self.rng.randint(1, 3)):
            changes = self._changes(side, set())
            when = self.clock - self.rng.randint(-2, 20) * 3600 * 6
            tip = self._commit(b"side", [tip], changes, when)
            for name, entry in changes.items():
                if entry is None:
                    del side[name]
                else:
                    side[name] = entry
        brought: dict[bytes, Entry | None] = {}
        if self.rng.random() > 0.15:  # else the merge keeps main's tree, as `-s ours` would
            for name in sorted(set(start) | set(side)):
                now = side.get(name)
                if now != start.get(name) and now != self.tree.get(name) and (now is not None or name in self.tree):
                    brought[name] = now
        self.made["merge"] += 1
        self.made["merge of main's tip (--no-ff)"] += fork == self.line[-1]
        self.made["merge bringing what main left alone"] += any(self.tree.get(n) == start.get(n) for n in brought)
        self.made["merge bringing nothing"] += not brought
        self._on_main(brought, merged=tip)


def utf8(name: bytes) -> bool:
    try:
        name.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


# What each generated history must hold at least one of.
KINDS = [
    "add",
    "edit",
    "delete",
    "add back",
    "rename",
    "mode",
    "nothing",
    "merge",
    "merge of main's tip (--no-ff)",
    "merge bringing what main left alone",
    "merge bringing nothing",
]


def names_for(pool: str) -> list[bytes]:
    names = [os.fsencode(name) for name in PLAIN_NAMES]
    if pool in ("control", "bytes"):
        names += [os.fsencode(name) for name in CONTROL]
    if pool == "bytes":
        names += BYTES
    return names


@pytest.mark.parametrize(
    ("seed", "pool"),
    [
        pytest.param(1, "bytes", marks=linux_only(BYTE_NAMES)),
        pytest.param(2, "control", marks=posix_only(CONTROL_NAMES)),
        pytest.param(3, "plain"),
    ],
)
def test_generated_histories_cached_as_walked_at_each_head(tmp_path: Path, seed: int, pool: str) -> None:
    """After each batch of new commits, the cached answer (catching up from the commit the
    cache was written at) is the walk's; at the last HEAD, a run from the cache alone (no
    `git log` at all) too, and `codescout search` with the cache the same as without. The
    history must have held each kind of commit, and the names the pool is for."""
    repo = Repo(tmp_path / "generated")
    history = RandomHistory(repo, seed, names_for(pool))
    cache, trace = tmp_path / "cache", tmp_path / "trace"
    for batch in range(4):
        # Every other time only some files are asked about: the walk stops early, and what it
        # wrote is a walk that the next run (after a few commits, which leave most files as
        # they were) catches up with, and then goes on from, to date the others.
        history.grow(history.rng.randint(30, 50) if batch == 0 else history.rng.randint(1, 6 if batch % 2 else 30))
        pattern = "needle" if batch % 2 else history.rng.choice(history.groups())
        assert hits(repo.root, cache, pattern=pattern) == walked(repo.root, pattern=pattern), (batch, pattern)
        _, snapshot = read_cache(only_file(cache))
        assert snapshot.commit == head_of(repo)
    assert all(history.made[kind] for kind in KINDS), history.made
    if pool != "plain":
        assert any(b"\n" in name for name in history.written)
    if pool == "bytes":
        assert any(not utf8(name) for name in history.written)
    truth = walked(repo.root)
    # (One more run first: the last may have left part of its walk unwritten, which the test
    # of a walk gone on from after catching up shows.)
    assert hits(repo.root, cache) == truth
    assert hits(repo.root, cache, trace=trace) == truth
    assert git_logs(trace) == 0  # (answered from the cache file alone)
    assert len(set(days(truth).values())) >= 4, "ages too alike for a stale answer to show"
    assert search(repo.root, cache) == walked_search(repo.root)


# --- a small repository for the other tests ------------------------------------------------


def small_repo(root: Path) -> Repo:
    """Files changed on different days; `a.txt` only in the root commit, so a walk that dates
    every file reaches the root and the cache file it writes is the whole history."""
    repo = Repo(root)
    for n, name in enumerate(["a.txt", "b.txt", "c.txt", "d.txt", "e.txt"]):
        repo.write(name, f"needle {name}\n")
        repo.commit(stamp(300 - 40 * n), name)
    for n, name in enumerate(["c.txt", "d.txt", "e.txt"]):
        repo.write(name, f"needle {name} changed\n")
        repo.commit(stamp(90 - 30 * n), name)
    return repo


class Template(NamedTuple):
    """The small repository, made once per worker and never changed (a test that commits works
    on a copy); the walk's answer there; and the cache file a first run wrote for it."""

    repo: Repo
    truth: Answer
    written: Path


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> Template:
    folder = tmp_path_factory.mktemp("template")
    repo = small_repo(folder / "repo")
    truth = walked(repo.root)
    assert hits(repo.root, folder / "cache") == truth  # (a cold run: it writes the cache file)
    written = only_file(folder / "cache")
    _, snapshot = read_cache(written)
    assert (snapshot.commit, snapshot.next) == (head_of(repo), None)
    return Template(repo, truth, written)


def copied(template: Template, root: Path) -> Repo:
    """A copy of the small repository (another git folder and work tree: another cache file)."""
    shutil.copytree(template.repo.root, root, symlinks=True)
    return Repo(root, init=False)


def test_a_cached_walk_is_caught_up_from_its_commit(template: Template, tmp_path: Path) -> None:
    """What the cache says of the history up to its commit is used, and only the commits made
    since are walked: a file the new commits changed gets their date, every other file the
    (forged) date the cache holds for it."""
    repo = copied(template, tmp_path / "repo")
    cache = tmp_path / "cache"
    assert hits(repo.root, cache) == template.truth
    forge(only_file(cache), 1000)
    repo.write("b.txt", "needle b again\n")
    repo.commit(stamp(3), "b.txt")
    repo.commit(stamp(2))  # (an empty commit)
    caught_up = days(hits(repo.root, cache))
    assert caught_up == {name: 3 if name == "b.txt" else 1000 for name in caught_up}
    _, snapshot = read_cache(only_file(cache))
    assert snapshot.commit == head_of(repo)


def test_a_walk_that_stopped_early_is_gone_on_from(template: Template, tmp_path: Path) -> None:
    """A run asked about one file stops its walk there and writes what it read; the next run,
    after a new commit and about every file, catches up with it and then walks on from where
    it stopped: the walk's answer, and a cache file that now reaches the root."""
    repo = copied(template, tmp_path / "repo")
    cache = tmp_path / "cache"
    assert hits(repo.root, cache, pattern="e.txt changed") == walked(repo.root, pattern="e.txt changed")
    _, stopped = read_cache(only_file(cache))
    assert stopped.next is not None
    repo.write("c.txt", "needle c.txt newer\n")
    repo.commit(stamp(2), "c.txt")
    assert hits(repo.root, cache) == walked(repo.root)
    _, whole = read_cache(only_file(cache))
    assert (whole.commit, whole.next) == (head_of(repo), None)


def test_a_walk_gone_on_from_after_catching_up_is_written(template: Template, tmp_path: Path) -> None:
    """A run that catches up with a walk that had stopped early, and then walks on (but not to
    the root), writes what it read: the same question next time needs no `git log`."""
    repo = copied(template, tmp_path / "repo")
    cache, trace = tmp_path / "cache", tmp_path / "trace"
    hits(repo.root, cache, pattern="e.txt changed")  # (stops at HEAD, which changed e.txt)
    repo.write("c.txt", "needle c.txt newer\n")
    repo.commit(stamp(2), "c.txt")
    asked = "c.txt newer|d.txt changed"  # (d.txt: the commit before the old HEAD)
    assert hits(repo.root, cache, pattern=asked) == walked(repo.root, pattern=asked)
    assert hits(repo.root, cache, pattern=asked, trace=trace) == walked(repo.root, pattern=asked)
    assert git_logs(trace) == 0


# --- a history rewritten under the cache ---------------------------------------------------


def rebased(template: Template, tmp_path: Path, cache: Path) -> Repo:
    """Cache written at the tip of `topic`; then `git rebase main` (main moved on) rewrites it."""
    repo = copied(template, tmp_path / "repo")
    repo.git("checkout", "-q", "-b", "topic", "HEAD~2")
    for n, name in enumerate(["b.txt", "c.txt"]):
        repo.write(name, f"needle {name} on topic\n")
        repo.commit(stamp(40 - n), name)
    hits(repo.root, cache)
    repo.git("checkout", "-q", "main")
    repo.write("a.txt", "needle a.txt on main\n")
    repo.commit(stamp(20), "a.txt")
    repo.git("checkout", "-q", "topic")
    repo.git("rebase", "-q", "main", date=stamp(10))
    return repo


def reset_and_redone(template: Template, tmp_path: Path, cache: Path) -> Repo:
    """Cache written at main's tip; then `git reset --hard HEAD~2` and other commits."""
    repo = copied(template, tmp_path / "repo")
    hits(repo.root, cache)
    repo.git("reset", "-q", "--hard", "HEAD~2")
    repo.write("b.txt", "needle b.txt redone\n")
    repo.commit(stamp(15), "b.txt")
    repo.commit(stamp(12))
    return repo


def force_pulled(template: Template, tmp_path: Path, cache: Path) -> Repo:
    """Cache written in a clone; upstream then rewrites its last two commits, and the clone
    takes the new history (`git fetch`, `git reset --hard origin/main`: a forced pull)."""
    upstream = copied(template, tmp_path / "upstream")
    run(["git", "clone", "-q", upstream.root.as_uri(), "clone"], tmp_path).check_returncode()
    repo = Repo(tmp_path / "clone", init=False)
    hits(repo.root, cache)
    upstream.git("reset", "-q", "--hard", "HEAD~2")
    for n, name in enumerate(["d.txt", "a.txt"]):
        upstream.write(name, f"needle {name} upstream again\n")
        upstream.commit(stamp(8 - n), name)
    repo.git("fetch", "-q", "origin")
    repo.git("reset", "-q", "--hard", "origin/main")
    return repo


def made_a_second_parent(template: Template, tmp_path: Path, cache: Path) -> Repo:
    """Cache written at main's tip A; then `other` from main~3 merges main (--no-ff), so that A
    is the merge's second parent, and `other` is checked out."""
    repo = copied(template, tmp_path / "repo")
    hits(repo.root, cache)
    repo.git("checkout", "-q", "-b", "other", "main~3")
    repo.write("a.txt", "needle a.txt on other\n")
    repo.commit(stamp(25), "a.txt")
    repo.git("merge", "-q", "--no-ff", "-m", "merge main", "main", date=stamp(5))
    return repo


@pytest.mark.parametrize("rewrite", [rebased, reset_and_redone, force_pulled, made_a_second_parent])
def test_a_history_rewritten_under_the_cache(
    template: Template, tmp_path: Path, rewrite: Callable[[Template, Path, Path], Repo]
) -> None:
    """The commit the cache was written at is no longer on HEAD's first-parent line: the cached
    answer is the walk's (which differs from what the cache held), and so is the next run's,
    `codescout search`, which reads the cache file the first wrote."""
    cache = tmp_path / "cache"
    repo = rewrite(template, tmp_path, cache)
    _, before = read_cache(only_file(cache))
    truth = walked(repo.root)
    assert hits(repo.root, cache) == truth
    # What the cache held would have answered otherwise (so a cache used stale would show).
    held = {name: int((NOW_SECONDS - before.times[name]) // DAY) for name in days(truth) if name in before.times}
    assert held != {name: age for name, age in days(truth).items() if name in held}
    _, after = read_cache(only_file(cache))
    assert after.commit == head_of(repo) != before.commit
    assert search(repo.root, cache) == walked_search(repo.root)


def test_replacements_added_packed_and_deleted_under_the_cache(template: Template, tmp_path: Path) -> None:
    """`git replace --graft` gives a commit another parent (the history git walks changes with
    no new commit); then the replacement is packed (`git pack-refs`), then deleted: after each,
    the cached answer is the walk's."""
    repo = copied(template, tmp_path / "repo")
    cache = tmp_path / "cache"
    assert hits(repo.root, cache) == template.truth
    skipped = repo.git("rev-parse", "HEAD~5").strip()  # (c.txt's first commit gets the root for parent)
    seen = []
    for step in (["replace", "--graft", skipped, "HEAD~7"], ["pack-refs", "--all"], ["replace", "-d", skipped]):
        repo.git(*step)
        truth = walked(repo.root)
        assert hits(repo.root, cache) == truth, step
        seen.append(truth)
    assert seen[0] == seen[1] != seen[2] == template.truth


def test_replacements_switched_off_under_the_cache(template: Template, tmp_path: Path) -> None:
    repo = copied(template, tmp_path / "repo")
    cache = tmp_path / "cache"
    repo.git("replace", "--graft", repo.git("rev-parse", "HEAD~5").strip(), "HEAD~7")
    replaced = walked(repo.root)
    assert hits(repo.root, cache) == replaced != template.truth
    repo.git("config", "core.useReplaceRefs", "false")
    assert walked(repo.root) == template.truth
    assert hits(repo.root, cache) == template.truth


# --- shallow clones ------------------------------------------------------------------------


def test_a_shallow_clone_then_pulled_deepened_and_made_whole(tmp_path: Path) -> None:
    """A depth-3 clone: cached (cold, then from the cache) and walked agree, the shallow
    boundary's note included. A pull of a new commit keeps the boundary (the cache is caught up,
    and what it says of the boundary's files still counts); `git fetch --deepen=2` and then
    `--unshallow` change the answer and the note, and the cached answer follows each time,
    never the cache written before."""
    upstream = Repo(tmp_path / "upstream")
    for n in range(6):
        upstream.write(f"f{n}.txt", f"needle {n}\n")
        upstream.commit(stamp(400 - 30 * n), f"f{n}.txt")
    for n in range(4):
        upstream.write(f"f{n}.txt", f"needle {n} again\n")
        upstream.commit(stamp(100 - 20 * n), f"f{n}.txt")
    run(["git", "clone", "-q", "--depth", "3", upstream.root.as_uri(), "clone"], tmp_path).check_returncode()
    clone = Repo(tmp_path / "clone", init=False)
    shallow = clone.root / ".git" / "shallow"
    cache = tmp_path / "cache"
    seen: dict[str, Answer] = {}
    for state in ("cloned", "pulled", "deepened", "whole"):
        if state == "pulled":
            boundary = shallow.read_bytes()
            upstream.write("f2.txt", "needle 2 once more\n")
            upstream.commit(stamp(10), "f2.txt")
            clone.git("fetch", "-q", "origin")
            clone.git("reset", "-q", "--hard", "origin/main")
            assert shallow.read_bytes() == boundary
        elif state != "cloned":
            clone.git("fetch", "-q", "--deepen=2" if state == "deepened" else "--unshallow", "origin")
        truth = walked(clone.root)
        assert hits(clone.root, cache) == truth, state
        if state in ("cloned", "deepened"):  # (and from the cache file alone, its boundary's note too)
            assert hits(clone.root, cache) == truth, state
        seen[state] = truth
    assert search(clone.root, cache) == walked_search(clone.root)
    notes = {state: [line for line in answer.said if "shallow clone" in line] for state, answer in seen.items()}
    assert len(notes["cloned"]) == len(notes["deepened"]) == 1 and notes["whole"] == []
    assert notes["cloned"] == notes["pulled"] != notes["deepened"]
    assert days(seen["cloned"]) != days(seen["deepened"]) != days(seen["whole"])


# --- writers at once -----------------------------------------------------------------------


def start_hits(root: Path, cache: Path) -> subprocess.Popen[bytes]:
    return subprocess.Popen(
        [codescout_exe(), "hits", "--now", NOW],
        cwd=root,
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        env=env_for(CODESCOUT_CACHE_DIR=str(cache)),
    )


def all_at_once(work_trees: list[Path], cache: Path) -> list[tuple[Path, Answer]]:
    """One `codescout hits` per entry, all started before any is fed its input."""
    inputs = [rg_json(root) for root in work_trees]
    started = [start_hits(root, cache) for root in work_trees]
    answers = []
    for root, data, proc in zip(work_trees, inputs, started, strict=True):
        out, err = proc.communicate(data, timeout=120)
        assert proc.returncode == 0, err
        answers.append((root, Answer(json.loads(out), err.decode().splitlines())))
    return answers


def test_writers_at_once_on_one_repository(template: Template, tmp_path: Path) -> None:
    """Six processes on one repository and one empty cache folder at the same moment: each
    answer is the walk's, one whole file is left (no temporary one), and a later run takes
    its answer from that file alone."""
    cache, trace = tmp_path / "cache", tmp_path / "trace"
    root = template.repo.root
    for _, answer in all_at_once([root] * 6, cache):
        assert answer == template.truth
    _, snapshot = read_cache(only_file(cache))
    assert (snapshot.commit, snapshot.next) == (head_of(template.repo), None)
    assert hits(root, cache, trace=trace) == template.truth
    assert git_logs(trace) == 0


def test_writers_at_once_in_work_trees_of_one_repository(template: Template, tmp_path: Path) -> None:
    """Work trees of one repository (one git folder) at different HEADs, three processes each,
    all at once into one cache folder: the cache keys them apart (by work tree), so each gets
    a file of its own, made for its HEAD, and later runs in each answer from it alone."""
    repo = copied(template, tmp_path / "repo")
    repo.git("worktree", "add", "-q", "-b", "side", str(tmp_path / "side"), "HEAD~3")
    side = Repo(tmp_path / "side", init=False)
    side.write("b.txt", "needle b.txt on side\n")
    side.commit(stamp(7), "b.txt")
    cache, trace = tmp_path / "cache", tmp_path / "trace"
    truths = {repo.root: template.truth, side.root: walked(side.root)}
    assert truths[repo.root] != truths[side.root]
    for root, answer in all_at_once([repo.root, side.root] * 3, cache):
        assert answer == truths[root]
    files = cache_files(cache)
    assert len(files) == 2, files
    made_for = {key["base"]: snapshot.commit for key, snapshot in map(read_cache, files)}
    assert made_for == {os.path.realpath(repo.root): head_of(repo), os.path.realpath(side.root): head_of(side)}
    for root, truth in truths.items():
        assert hits(root, cache, trace=trace) == truth
        assert git_logs(trace) == 0


# --- damaged cache files --------------------------------------------------------------------


def prepared(template: Template, cache: Path) -> Path:
    """`cache` holding the small repository's cache file, forged to date every file 1000 days
    back (it is well-formed: a run that reads it says so); the file's path."""
    (cache / "history").mkdir(mode=0o700, parents=True)
    path = cache / "history" / template.written.name
    shutil.copyfile(template.written, path)
    forge(path, 1000)
    return path


def test_a_well_formed_cache_file_is_trusted(template: Template, tmp_path: Path) -> None:
    """The control for the tests below: a forged file that reads whole is used as it is, so
    that an answer equal to the walk's shows that a file was not used."""
    prepared(template, tmp_path / "cache")
    assert set(days(hits(template.repo.root, tmp_path / "cache")).values()) == {1000}
    assert 1000 not in days(template.truth).values()


def body_byte_changed(data: bytes) -> bytes:
    digit = data.index(b"0", data.index(b"\n", len(MAGIC)) + 1)
    return data[:digit] + b"1" + data[digit + 1 :]


DAMAGES: dict[str, Callable[[bytes], bytes]] = {
    "truncated": lambda data: data[:-5],
    "cut in its header": lambda data: data[: len(MAGIC) + 20],
    "a byte changed in its body": body_byte_changed,
    "a header that miscounts its paths": lambda data: with_header(data, paths=header_of(data)["paths"] + 1),
    "a header that lies about its size": lambda data: with_header(data, size=header_of(data)["size"] - 1),
    "a header naming no commit": lambda data: with_header(data, commit="0" * 40),
    "a header whose next commit is no id": lambda data: with_header(data, next="not a commit"),
    "a header that is no JSON": lambda data: MAGIC + b"{oops\n" + data.split(b"\n", 2)[2],
    "a header made for another work tree": lambda data: with_header(data, base="/elsewhere"),
    "not a history file": lambda data: b'{"hits": []}\n',
    "another version's": lambda data: data.replace(b"history 1\n", b"history 2\n", 1),
    "empty": lambda data: b"",
}


@pytest.mark.parametrize("damage", DAMAGES)
def test_a_damaged_cache_file_is_not_used_and_is_written_again(template: Template, tmp_path: Path, damage: str) -> None:
    path = prepared(template, tmp_path / "cache")
    path.write_bytes(DAMAGES[damage](path.read_bytes()))
    assert hits(template.repo.root, tmp_path / "cache") == template.truth
    # Written again: the walk's, as the first run wrote it.
    (_, again), (_, first) = read_cache(path), read_cache(template.written)
    assert (again.commit, again.next, again.times) == (first.commit, first.next, first.times)


@pytest.mark.parametrize("header", [b"[]", b'"text"'])
def test_a_cache_file_whose_header_is_no_object_is_not_used(template: Template, tmp_path: Path, header: bytes) -> None:
    path = prepared(template, tmp_path / "cache")
    path.write_bytes(MAGIC + header + b"\n")
    assert hits(template.repo.root, tmp_path / "cache") == template.truth


def test_a_byte_changed_in_the_commit_to_go_on_from(template: Template, tmp_path: Path) -> None:
    cache = tmp_path / "cache"
    hits(template.repo.root, cache, pattern="e.txt changed")  # (one file: the walk stops after one commit)
    path = only_file(cache)
    following = header_of(path.read_bytes())["next"]
    assert isinstance(following, str)
    changed = following[:-1] + ("1" if following[-1] == "0" else "0")
    path.write_bytes(with_header(path.read_bytes(), next=changed))
    assert hits(template.repo.root, cache) == template.truth


def test_a_header_naming_head_for_an_older_walk(template: Template, tmp_path: Path) -> None:
    repo = copied(template, tmp_path / "repo")
    cache = tmp_path / "cache"
    hits(repo.root, cache)
    repo.write("b.txt", "needle b.txt again\n")
    repo.commit(stamp(4), "b.txt")
    path = only_file(cache)
    path.write_bytes(with_header(path.read_bytes(), commit=head_of(repo).decode()))
    assert hits(repo.root, cache) == walked(repo.root)


# --- cache folders and files that are not safe to use ------------------------------------------


def another_users_folder(folder: Path) -> Path:
    """A folder that belongs to another user: `folder` given to uid OTHER_UID as root; otherwise
    one of the system's folders owned by another user that this one cannot write."""
    if AS_ROOT:
        folder.mkdir()
        give_away(folder, OTHER_UID)
        return folder
    for candidate in ("/", "/usr", "/etc"):
        if os.stat(candidate).st_uid != this_user() and not os.access(candidate, os.W_OK):
            return Path(candidate)
    pytest.fail("no folder of another user that this user cannot write")


def unsafe_folder(kind: str, tmp_path: Path) -> tuple[Path, Path]:
    """A cache folder of the `kind` asked for, and the folder that must not change: for a link,
    the folder it points to."""
    if kind == "a symbolic link":
        target = tmp_path / "target"
        target.mkdir(mode=0o700)
        (tmp_path / "link").symlink_to(target, target_is_directory=True)
        return tmp_path / "link", target
    if kind == "another user's":
        folder = another_users_folder(tmp_path / "theirs")
        return folder, folder
    folder = tmp_path / "open"
    folder.mkdir()
    folder.chmod(0o777)
    return folder, folder


FOLDER_KINDS = ["a symbolic link", "another user's", "writable by others"]


def looked_at(kind: str, kept: Path) -> object:
    """What must not change in the folder kept: all of it, or (another user's system folder,
    when not root) only the names at its top."""
    if kind == "another user's" and not AS_ROOT:
        return sorted(os.listdir(kept))
    return state_of(kept)


def quiet_but_for_refusal(said: list[str]) -> list[str]:
    """stderr without the one line that says a cache folder is not used (see REFUSED)."""
    return [line for line in said if not REFUSED.fullmatch(line)]


@posix_only(OWNERS)
@pytest.mark.parametrize("kind", FOLDER_KINDS)
def test_an_unsafe_cache_folder_holding_a_file_is_neither_read_nor_written(
    template: Template, tmp_path: Path, kind: str
) -> None:
    """The folder holds a well-formed file (forged: read, it would show): the answer is the
    walk's, nothing there changes, and stderr says nothing more than that the folder is not
    used. (Another user's folder holds the file only when the test runs as root; otherwise it
    is a system folder this user cannot write, and only the answer and its names are checked.)"""
    folder, kept = unsafe_folder(kind, tmp_path)
    if kind != "another user's" or AS_ROOT:
        prepared(template, kept)
    before = looked_at(kind, kept)
    answer = hits(template.repo.root, folder)
    assert answer.printed == template.truth.printed
    assert quiet_but_for_refusal(answer.said) == template.truth.said
    assert looked_at(kind, kept) == before


@posix_only(OWNERS)
@pytest.mark.parametrize(
    "kind",
    [
        "a symbolic link",
        # (As another user than root, the folder is one it cannot write: nothing can be made.)
        "another user's",
        "writable by others",
    ],
)
def test_an_empty_unsafe_cache_folder_is_left_empty(template: Template, tmp_path: Path, kind: str) -> None:
    """Nothing is made in (or through) a cache folder that is not used, and the answer is the walk's."""
    folder, kept = unsafe_folder(kind, tmp_path)
    before = looked_at(kind, kept)
    answer = hits(template.repo.root, folder)
    assert answer.printed == template.truth.printed
    assert quiet_but_for_refusal(answer.said) == template.truth.said
    assert looked_at(kind, kept) == before


@posix_only(OWNERS)
@pytest.mark.parametrize(
    "kind",
    [
        pytest.param(kind, marks=root_only("only root can give a folder to another user"))
        if kind == "another user's"
        else kind
        for kind in FOLDER_KINDS
    ],
)
def test_an_unsafe_history_folder_is_neither_read_nor_written(template: Template, tmp_path: Path, kind: str) -> None:
    """The cache folder is fine, but its `history/` is a link, another user's or writable by
    others, and holds a forged file: not read, nothing changed, only the refusal said."""
    cache, elsewhere = tmp_path / "cache", tmp_path / "elsewhere"
    prepared(template, elsewhere)
    cache.mkdir(mode=0o700)
    if kind == "a symbolic link":
        (cache / "history").symlink_to(elsewhere / "history", target_is_directory=True)
    else:
        os.replace(elsewhere / "history", cache / "history")
        if kind == "another user's":
            give_away(cache / "history", OTHER_UID)
        else:
            (cache / "history").chmod(0o777)
    before = state_of(cache), state_of(elsewhere)
    answer = hits(template.repo.root, cache)
    assert answer.printed == template.truth.printed
    assert quiet_but_for_refusal(answer.said) == template.truth.said
    assert (state_of(cache), state_of(elsewhere)) == before


@posix_only(OWNERS)
def test_a_cache_file_that_is_a_link_is_not_followed(template: Template, tmp_path: Path) -> None:
    """The cache file is a link to a forged file outside the cache folder: it is not read (the
    answer is the walk's), the file it points to is not written, and nothing is said."""
    path = prepared(template, tmp_path / "cache")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.replace(path, elsewhere / "forged")
    path.symlink_to(elsewhere / "forged")
    before = state_of(elsewhere)
    assert hits(template.repo.root, tmp_path / "cache") == template.truth
    assert state_of(elsewhere) == before


@root_only("only root can give a file to another user")
@posix_only(OWNERS)
def test_a_cache_file_of_another_user_is_not_read(template: Template, tmp_path: Path) -> None:
    path = prepared(template, tmp_path / "cache")
    give_away(path, OTHER_UID)
    assert hits(template.repo.root, tmp_path / "cache") == template.truth


# --- cache folders that cannot be written -------------------------------------------------


def test_a_cache_folder_under_a_regular_file(template: Template, tmp_path: Path) -> None:
    """The cache folder cannot be made (its parent is a file): the answers are the walk's, and
    nothing is said; it only costs speed."""
    blocker = tmp_path / "a-file"
    blocker.write_bytes(b"not a folder\n")
    assert hits(template.repo.root, blocker / "cache") == template.truth
    assert search(template.repo.root, blocker / "cache") == walked_search(template.repo.root)
    assert blocker.read_bytes() == b"not a folder\n"


def test_a_history_folder_that_is_a_regular_file(template: Template, tmp_path: Path) -> None:
    """`history` in the cache folder is a file: the answer is the walk's; the file is left as
    it is, and stderr holds only the line saying the folder is not used."""
    cache = tmp_path / "cache"
    cache.mkdir(mode=0o700)
    (cache / "history").write_bytes(b"a file\n")
    answer = hits(template.repo.root, cache)
    assert answer.printed == template.truth.printed
    assert quiet_but_for_refusal(answer.said) == template.truth.said
    assert (cache / "history").read_bytes() == b"a file\n"


def test_a_cache_file_whose_place_is_taken_by_a_folder(template: Template, tmp_path: Path) -> None:
    """The cache file cannot be written (a folder has its name): the answer is the walk's,
    nothing is said, and no temporary file is left behind."""
    path = prepared(template, tmp_path / "cache")
    path.unlink()
    path.mkdir()
    assert hits(template.repo.root, tmp_path / "cache") == template.truth
    assert cache_files(tmp_path / "cache") == [path] and path.is_dir() and not any(path.iterdir())


# --- --no-cache ---------------------------------------------------------------------------


@pytest.mark.parametrize("command", ["hits", "search"])
def test_no_cache_neither_reads_nor_writes_the_cache(template: Template, tmp_path: Path, command: str) -> None:
    """With --no-cache a forged file in the cache folder is not read (the answer is the
    walk's) and nothing in the folder changes; a folder that does not exist is not made."""
    cache, absent = tmp_path / "cache", tmp_path / "absent"
    prepared(template, cache)
    before = state_of(cache)
    root = template.repo.root
    if command == "hits":
        truth = hits(root, absent, no_cache=True)
        assert truth == template.truth
        assert hits(root, cache, no_cache=True) == truth
    else:
        truth = search(root, absent, no_cache=True)
        assert search(root, cache, no_cache=True) == truth
        assert 1000 not in {result["last_modified_days"] for result in truth.printed["results"]}
    assert state_of(cache) == before
    assert not os.path.lexists(absent)
