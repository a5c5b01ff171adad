"""The parts of `facts/repository.py` that need no settled checkout: git log's output read in
any chunks, whole days, command lines cut to the system's limit, deadlines, the shallow note,
the files watched for a move, and a bare repository named as the user named it."""

from __future__ import annotations

import io
import os
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from codescout_mcp.facts import repository
from codescout_mcp.facts.git import Git, GitError, chunks, command_cost
from codescout_mcp.facts.gitfiles import BlockingFile, RepositoryError
from codescout_mcp.facts.history import LOG_ARGUMENTS, _read, commits_of
from codescout_mcp.facts.lookup import SECONDS_PER_DAY, FileFacts, Lookup, whole_days
from codescout_mcp.facts.repository import RepositoryFacts
from codescout_mcp.system.platform import LINUX, WINDOWS, System, loose_key
from tests.gitrepo import NOW_SECONDS, Repo
from tests.platforms import CONTROL_NAMES, FIFOS, posix_only
from tests.repofacts import days, facts_of


class Trickle(io.RawIOBase):
    """A stream that hands out at most `size` bytes a read, whatever is asked for."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data = data
        self.size = size

    def read(self, size: int = -1) -> bytes:
        piece, self.data = self.data[: self.size], self.data[self.size :]
        return piece


def with_limit(system: System, limit: int) -> System:
    fields = {name: getattr(system, name) for name in System.__slots__}
    return System(**{**fields, "command_line_limit": limit})


@posix_only(CONTROL_NAMES)
def test_git_log_is_read_the_same_in_chunks_of_any_size(tmp_path: Path) -> None:
    r = Repo(tmp_path / "r")
    r.write("a", "1\n")
    r.commit("2025-01-01T00:00:00Z", "a")
    r.commit("2025-02-01T00:00:00Z")  # no files
    r.write("\nlead", "1\n")  # a name that starts with a newline, first and later in its commit
    r.write("b", "1\n")
    r.commit("2025-03-01T00:00:00Z", "\nlead", "b")
    r.write("\nlast", "1\n")
    r.write("\x01", "1\n")  # sorts before the newline: "\nlast" is not its commit's first name
    r.commit("2025-04-01T00:00:00Z", "\x01", "\nlast")
    output = Git(r.root).run(*LOG_ARGUMENTS, "HEAD", "--")[1]
    ids = [commit.encode() for commit in r.git("log", "--format=%H").split()]
    expected = [
        (1743465600, ids[0], ids[1], ["\x01", "\nlast"]),
        (1740787200, ids[1], ids[2], ["\nlead", "b"]),
        (1738368000, ids[2], ids[3], []),  # a commit with no path is a commit all the same
        (1735689600, ids[3], None, ["a"]),
    ]
    for size in (*range(1, 90), len(output)):
        got = [(c.when, c.id, c.first_parent, c.names) for c in commits_of(Trickle(output, size), LINUX)]
        assert got == expected, size


def test_a_log_that_is_not_what_was_asked_for_is_one_error(tmp_path: Path) -> None:
    for output in (b"\0soon abc\0\nx\0", b"x\0", b"\0123 abc\0\nx"):
        commits = commits_of(Trickle(output, 100), LINUX)
        with pytest.raises(GitError) as caught:
            list(_read(commits, tmp_path / "a\nb"))
        assert str(caught.value) == f"git log printed what codescout cannot read in {tmp_path}/a\\nb"


def test_whole_days_are_counted_down_and_the_future_is_today() -> None:
    now = 1_000 * SECONDS_PER_DAY
    assert whole_days(now, now) == 0
    assert whole_days(now, now - SECONDS_PER_DAY) == 1
    assert whole_days(now, now - SECONDS_PER_DAY + 1) == 0
    assert whole_days(now, now - 2.5 * SECONDS_PER_DAY) == 2
    assert whole_days(now, now + 5 * SECONDS_PER_DAY) == 0
    assert whole_days(now, now + 0.5) == 0


def test_names_are_cut_into_command_lines_that_fit_as_each_system_counts() -> None:
    assert chunks([], LINUX, []) == []
    posix = with_limit(LINUX, 8)  # each name costs its UTF-8 bytes and a NUL
    assert chunks(["abc", "def"], posix, []) == [["abc", "def"]]  # 4 + 4: exactly the limit
    assert chunks(["abc", "defg"], posix, []) == [["abc"], ["defg"]]
    assert chunks(["abc", "defg", "hi"], posix, []) == [["abc"], ["defg", "hi"]]  # counted afresh after a cut
    assert chunks(["\u00e9", "abcde"], posix, []) == [["\u00e9"], ["abcde"]]  # bytes, not characters: 3 + 6
    assert chunks(["\udcff", "abcde"], posix, []) == [["\udcff", "abcde"]]  # a byte that is not UTF-8 is one
    assert chunks(["abcdefghij", "a"], posix, []) == [["abcdefghij"], ["a"]]  # too long alone: sent alone
    windows = with_limit(WINDOWS, 8)  # UTF-16 units, a separator and two quotes
    assert chunks(["a", "b"], windows, []) == [["a", "b"]]
    assert chunks(["ab", "c"], windows, []) == [["ab"], ["c"]]
    assert chunks(["\U0001f600", "a"], windows, []) == [["\U0001f600"], ["a"]]  # two units: 5 + 4
    assert chunks(["\u00e9", "a"], windows, []) == [["\u00e9", "a"]]  # one unit, though two UTF-8 bytes
    assert chunks(["\udc80", "abcd"], windows, []) == [["\udc80"], ["abcd"]]  # a lone surrogate is one unit: 4 + 7
    # The arguments every run carries count as the names do: "git" takes 4 bytes, or 6 units.
    assert chunks(["abc", "def"], with_limit(LINUX, 12), ["git"]) == [["abc", "def"]]
    assert chunks(["abc", "def"], with_limit(LINUX, 11), ["git"]) == [["abc"], ["def"]]
    assert chunks(["a", "b"], with_limit(WINDOWS, 14), ["git"]) == [["a", "b"]]
    assert chunks(["a", "b"], with_limit(WINDOWS, 13), ["git"]) == [["a"], ["b"]]


def test_git_arguments_past_half_the_command_line_limit_are_refused(tmp_path: Path) -> None:
    """Half the limit is kept for the names: a checkout whose settings take more is refused."""
    r = Repo(tmp_path / "r")
    r.write("a.txt", "1\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    cost = command_cost(Git(r.root, isolated=True).command(*repository.STATUS_ARGUMENTS, "--"), LINUX)
    fits = RepositoryFacts.open(r.root, warn=print, isolated=True, system=with_limit(LINUX, 2 * cost))
    fits.refresh()
    assert fits.describe(["a.txt"], Lookup(NOW_SECONDS)).facts["a.txt"] == FileFacts(59, None)
    facts = RepositoryFacts.open(r.root, warn=print, isolated=True, system=with_limit(LINUX, 2 * cost - 1))
    facts.refresh()
    with pytest.raises(GitError, match=r"r defines more filter drivers than codescout can tell git to leave unused"):
        facts.describe(["a.txt"], Lookup(NOW_SECONDS))


def test_a_deadline_is_counted_from_the_lookup_and_named_where_it_ran_out(monkeypatch: pytest.MonkeyPatch) -> None:
    assert Lookup(0).seconds_left(Path("/r")) is None
    clock = [100.0]
    monkeypatch.setattr(time, "monotonic", lambda: clock[0])
    lookup = Lookup(0, seconds=5)
    assert lookup.seconds_left() == 5
    clock[0] = 104.5
    assert lookup.seconds_left(Path("/r")) == 0.5
    clock[0] = 105.0  # none left, to the instant
    with pytest.raises(GitError) as caught:
        lookup.seconds_left(Path("/r/a\nb"))
    assert str(caught.value) == "reading /r/a\\nb took longer than the time allowed"
    with pytest.raises(GitError, match=r"^reading the repository took longer than the time allowed$"):
        lookup.seconds_left()
    assert Lookup(7, cached_only=True).now == 7 and Lookup(7).cached_only is False


def test_the_shallow_note_counts_the_files_and_dates_the_boundary(tmp_path: Path) -> None:
    facts = RepositoryFacts(tmp_path / "a\nb", git=None, warn=print)
    facts._boundary_time = 1_764_547_200  # 2025-12-01 00:00:00 UTC
    tail = (
        ", the date of the oldest commit it has on this branch, because they were last changed then or before; "
        "run `git fetch --unshallow` for their real ages"
    )
    assert facts._shallow_note(1) == f"{tmp_path}/a\\nb is a shallow clone: 1 file shows 2025-12-01{tail}"
    assert facts._shallow_note(2) == f"{tmp_path}/a\\nb is a shallow clone: 2 files show 2025-12-01{tail}"
    facts._boundary_time -= 1  # a second before: the day before, in UTC whatever the local zone
    assert "1 file shows 2025-11-30," in facts._shallow_note(1)


def test_the_boundary_commits_are_read_only_in_a_shallow_clone(tmp_path: Path) -> None:
    (tmp_path / "shallow").write_bytes(b"abc\ndef\n")
    shallow = RepositoryFacts(tmp_path, git=None, common_dir=tmp_path, shallow=True, warn=print)
    assert shallow._boundary_commits() == frozenset({b"abc", b"def"})
    assert RepositoryFacts(tmp_path, git=None, common_dir=tmp_path, warn=print)._boundary_commits() == frozenset()
    assert RepositoryFacts(tmp_path, git=None, shallow=True, warn=print)._boundary_commits() == frozenset()
    (tmp_path / "shallow").unlink()
    assert shallow._boundary_commits() == frozenset()  # gone since: no boundary, not a failure
    (tmp_path / "shallow").write_bytes(b"")
    assert shallow._boundary_commits() == frozenset()
    with open(tmp_path / "shallow", "wb") as file:  # a sparse file: read up to 64 MiB, not past
        file.write(b"abc\n")
        file.truncate(64 << 20)
    assert b"abc" in shallow._boundary_commits()
    os.truncate(tmp_path / "shallow", (64 << 20) + 1)
    assert shallow._boundary_commits() == frozenset()


def test_the_files_watched_for_a_move_follow_what_head_names(tmp_path: Path) -> None:
    git_dir, common = tmp_path / "wt", tmp_path / "common"
    facts = RepositoryFacts(tmp_path, git=None, git_dir=git_dir, common_dir=common, warn=print)
    head = str(git_dir / "HEAD")
    always = (head, f"{git_dir}/index", f"{common}/shallow", f"{common}/reftable/tables.list")
    last = (f"{git_dir}/config.worktree", f"{common}/config", f"{common}/packed-refs")
    branch = (f"{common}/refs/heads/main", f"{git_dir}/refs/heads/main")
    assert facts._watched_files(head, "ref: refs/heads/main") == (*always, *branch, *last)
    assert facts._watched_files(head, "ref:  refs/heads/main ") == (*always, *branch, *last)
    assert facts._watched_files(head, "0123456789abcdef0123456789abcdef01234567") == (*always, *last)
    assert facts._watched_files(head, "ref:refs/heads/main") == (*always, *last)  # not git's form
    assert RepositoryFacts(tmp_path, git=None, warn=print)._repository_signature() == ()


@posix_only(CONTROL_NAMES)
def test_a_bare_repository_is_named_as_the_user_named_it(tmp_path: Path) -> None:
    bare = tmp_path / "b\nare.git"
    Repo(bare, init=False).git("init", "-q", "--bare")
    words = "a bare git repository (or a .git folder) has no work tree; use a checkout"
    for folder in (bare, bare / "objects"):
        with pytest.raises(RepositoryError) as caught:
            RepositoryFacts.open(folder, warn=print, isolated=True)
        assert str(caught.value) == f"{str(folder).replace(chr(10), chr(92) + 'n')}: {words}"
    with pytest.raises(RepositoryError) as caught:
        RepositoryFacts.open(bare, warn=print, isolated=True, named="--repo x")
    assert str(caught.value) == f"--repo x: {words}"


def test_a_head_is_read_up_to_its_bound_and_one_larger_is_not(tmp_path: Path) -> None:
    """HEAD says which branch the signature watches; one larger than any sensible HEAD (64 KiB) is
    read as empty, which no branch is, rather than read whole."""
    git_dir = tmp_path / "git"
    git_dir.mkdir()
    facts = RepositoryFacts(tmp_path, git=None, git_dir=git_dir, common_dir=git_dir, warn=print)
    prefix = "ref: refs/heads/"
    for size, target in ((64 * 1024, None), (64 * 1024 + 1, "")):
        text = prefix + "b" * (size - len(prefix))
        (git_dir / "HEAD").write_text(text, encoding="ascii")
        assert facts._repository_signature()[0] == (text if target is None else target), size


def test_an_edit_that_keeps_size_and_time_is_seen_after_the_status_was_read(tmp_path: Path) -> None:
    """After git's status was read, a file is asked about again when its time falls within a second
    of that read (a coarse clock shows an edit in the same instant with the same time) or, where
    st_ctime is the last change (not Windows), when that change came since. Here each edit keeps
    the size and the inode and puts the modification time back, so nothing else would tell."""
    r = Repo(tmp_path / "r")
    r.write("racy.txt", "1\n")
    r.write("old.txt", "1\n")
    r.commit("2026-01-01T00:00:00Z", "racy.txt", "old.txt")
    r.write("racy.txt", "1\n")  # the same, rewritten just before the read: within the second
    r.write("old.txt", "1\n")
    a_week = 7 * SECONDS_PER_DAY * 10**9
    os.utime(r.root / "old.txt", ns=(time.time_ns() - a_week, time.time_ns() - a_week))  # long before it
    facts, _ = facts_of(r.root)
    assert days(facts, "racy.txt", "old.txt") == [59, 59]
    for name in ("racy.txt", "old.txt"):
        before = os.stat(r.root / name)
        r.write(name, "2\n")
        os.utime(r.root / name, ns=(before.st_atime_ns, before.st_mtime_ns))
        assert os.stat(r.root / name).st_ino == before.st_ino
    assert days(facts, "racy.txt", "old.txt") == [0, 0]


def test_a_name_asked_twice_is_described_once_and_the_rest_still_are(tmp_path: Path) -> None:
    for name in ("a.txt", "b.txt"):
        (tmp_path / name).write_text("x\n", encoding="utf-8")
    facts = RepositoryFacts(tmp_path, git=None, warn=print)
    described = facts.describe(["a.txt", "a.txt", "b.txt", "gone.txt"], Lookup(NOW_SECONDS))
    assert list(described.facts) == ["a.txt", "b.txt", "gone.txt"]
    assert isinstance(described.facts["gone.txt"], FileNotFoundError)


def test_gits_spelling_of_a_name_is_the_candidate_that_is_the_same_file(tmp_path: Path) -> None:
    """Among the index's names that fold to the one asked about, the one `stat` finds to be the
    same file: one that is gone is passed over, another file is not taken, and a file system
    without inode numbers (0) gives no answer rather than a wrong one."""
    (tmp_path / "a.txt").write_text("x\n", encoding="utf-8")
    (tmp_path / "a.Txt").write_text("another file\n", encoding="utf-8")
    os.link(tmp_path / "a.txt", tmp_path / "a.TXT")  # what a folding file system shows: one file
    facts = RepositoryFacts(tmp_path, git=None, warn=print, system=LINUX)
    facts._index = {"A.txt", "a.Txt", "a.txt"}
    facts._folded_index = {loose_key("a.txt"): ["A.txt", "a.Txt", "a.txt"]}  # the gone one first
    asked = os.stat(tmp_path / "a.TXT")
    assert facts._index_spelling("a.TXT", asked) == "a.txt"
    facts._folded_index = {loose_key("a.txt"): ["A.txt", "a.Txt"]}
    assert facts._index_spelling("a.TXT", asked) is None
    no_inode = os.stat_result((asked.st_mode, 0, asked.st_dev, *asked[3:]))
    facts._folded_index = {loose_key("a.txt"): ["a.txt"]}
    assert facts._index_spelling("a.TXT", asked) == "a.txt"
    real_stat = os.stat
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(os, "stat", lambda path, *a, **k: no_inode if str(path).endswith("a.txt") else real_stat(path))
        assert facts._index_spelling("a.TXT", no_inode) is None


def test_a_file_asked_about_again_does_not_keep_the_next_from_its_known_change(tmp_path: Path) -> None:
    r = Repo(tmp_path / "r")
    r.write("racy.txt", "1\n")
    r.write("edited.txt", "1\n")
    r.commit("2026-01-01T00:00:00Z", "racy.txt", "edited.txt")
    r.write("racy.txt", "1\n")  # within the second of the read: asked about again next time
    r.write("edited.txt", "changed\n")
    a_week_ago = time.time_ns() - 7 * SECONDS_PER_DAY * 10**9
    os.utime(r.root / "edited.txt", ns=(a_week_ago, a_week_ago))  # settled: its change is known
    facts, _ = facts_of(r.root)
    for _ in range(2):
        assert days(facts, "racy.txt", "edited.txt") == [59, 0]


@posix_only(FIFOS)
@pytest.mark.parametrize("name", [".gitattributes", ".git/info/attributes"])
def test_attributes_that_turn_into_a_fifo_after_the_open_are_refused_before_git_waits(
    tmp_path: Path, name: str
) -> None:
    """git status reads the attributes of a file it must look into: the top folder's and the
    repository's own, even when every tracked file is deeper down. One made a FIFO while the
    facts are kept (a server's) is refused once the index changes, not waited on."""
    r = Repo(tmp_path / "r")
    r.write("sub/a.txt", "1\n")
    r.commit("2026-01-01T00:00:00Z", "sub/a.txt")
    facts = RepositoryFacts.open(r.root, warn=print, isolated=True)
    facts.refresh()
    assert facts.describe(["sub/a.txt"], Lookup(NOW_SECONDS, seconds=30)).facts["sub/a.txt"].days == 59  # type: ignore[union-attr]
    r.write("sub/b.txt", "1\n")
    r.git("add", "sub/b.txt")  # a new index: what git may open is looked at again
    r.write("sub/a.txt", "2\n")  # so that status must look into it
    target = r.root / name
    target.parent.mkdir(parents=True, exist_ok=True)
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(target)
    started = time.monotonic()

    def look() -> None:
        facts.refresh()  # a FIFO in info/ is refused here, with the rest of info/
        facts.describe(["sub/a.txt"], Lookup(NOW_SECONDS, seconds=10))

    with pytest.raises(BlockingFile) as caught:
        look()
    assert str(caught.value) == f"{target} is a FIFO, not a regular file, and git would wait on it; " + (
        "the repository cannot be read"
    )
    assert time.monotonic() - started < 5


@posix_only(FIFOS)
@pytest.mark.parametrize("when", ["at the open", "while kept"])
@pytest.mark.parametrize("config", ["config", "config.worktree"])
def test_a_config_including_a_fifo_is_refused_before_git_runs(tmp_path: Path, config: str, when: str) -> None:
    """Each config file is read for its includes before git runs: at the open, and again once it
    changed while the facts are kept (a server's), since the config files are watched."""
    r = Repo(tmp_path / "r")
    r.write("a.txt", "1\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    facts = None
    if when == "while kept":
        facts = RepositoryFacts.open(r.root, warn=print, isolated=True)
        facts.refresh()
        assert not isinstance(facts.describe(["a.txt"], Lookup(NOW_SECONDS)).facts["a.txt"], OSError)
    fifo = tmp_path / "fifo"
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(fifo)
    with open(r.root / ".git" / config, "a", encoding="utf-8") as file:
        file.write(f"[include]\n\tpath = {fifo}\n")
    look = facts.refresh if facts is not None else lambda: RepositoryFacts.open(r.root, warn=print, isolated=True)
    with pytest.raises(BlockingFile) as caught:
        look()
    assert str(caught.value) == f"{fifo} is a FIFO, not a regular file, and git would wait on it; " + (
        "the repository cannot be read"
    )


@posix_only(FIFOS)
def test_a_head_that_is_not_a_regular_file_is_named(tmp_path: Path) -> None:
    git_dir = tmp_path / "git"
    git_dir.mkdir()
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(git_dir / "HEAD")
    facts = RepositoryFacts(tmp_path, git=None, git_dir=git_dir, common_dir=git_dir, warn=print)
    with pytest.raises(RepositoryError) as caught:
        facts._repository_signature()
    assert str(caught.value) == f"{git_dir}/HEAD is a FIFO, not a regular file; the repository cannot be read"


def test_a_change_to_a_file_with_a_one_letter_name_is_seen(tmp_path: Path) -> None:
    """git status prints "XY name": four bytes for a one-letter name, the shortest there is."""
    r = Repo(tmp_path / "r")
    r.write("x", "1\n")
    r.write("yz", "1\n")
    r.commit("2026-01-01T00:00:00Z", "x", "yz")
    r.write("x", "2\n")
    r.write("yz", "2\n")
    facts, _ = facts_of(r.root)
    assert days(facts, "x", "yz") == [0, 0]


def test_a_file_asked_about_again_is_trusted_once_it_settles_and_asked_again_if_edited(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file asked about again (changed within a second of the status read) keeps that answer,
    and the time it was got, for the next calls: asked again if it changed within a second of
    that time, not once it is older."""
    r = Repo(tmp_path / "r")
    r.write("a.txt", "1\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    r.write("a.txt", "1\n")  # the same, just before the read
    clock = [0]
    monkeypatch.setattr(
        repository, "time", SimpleNamespace(time_ns=lambda: time.time_ns() + clock[0], monotonic=time.monotonic)
    )
    statuses: list[tuple[str, ...]] = []
    real_run = Git.run

    def run(git: Git, *args: str, **options: Any) -> tuple[int, bytes, bytes]:
        if args[0] == "status":
            statuses.append(args)
        return real_run(git, *args, **options)

    monkeypatch.setattr(Git, "run", run)
    facts, _ = facts_of(r.root)
    assert days(facts, "a.txt") == [59] and len(statuses) == 1  # the whole status
    assert days(facts, "a.txt") == [59] and len(statuses) == 2 and statuses[1][-1] == "a.txt"  # asked about again
    before = os.stat(r.root / "a.txt")
    r.write("a.txt", "2\n")  # the same size, the same time: only the time of the answer tells
    os.utime(r.root / "a.txt", ns=(before.st_atime_ns, before.st_mtime_ns))
    assert days(facts, "a.txt") == [0] and len(statuses) == 3
    clock[0] = 5 * 10**9  # five seconds on: the answer now is older than the file by far
    assert days(facts, "a.txt") == [0] and len(statuses) == 4  # (its ctime is within the second before)
    assert days(facts, "a.txt") == [0] and len(statuses) == 4  # settled: trusted as last answered
