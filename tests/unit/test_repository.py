"""RepositoryFacts and Checkout in process (`facts/repository.py`, `facts/checkout.py`): where paths are,
ages kept and refreshed, CODEOWNERS seen as it changes, shallow clones."""

from __future__ import annotations

import os
import subprocess
import time
from pathlib import Path

import pytest

from codescout_mcp.facts.checkout import Checkout
from codescout_mcp.facts.lookup import Lookup, NeedsWork
from codescout_mcp.system.paths import resolved_folder
from codescout_mcp.system.processes import Cancelled
from tests.gitrepo import DAY, NOW_SECONDS, Repo
from tests.repofacts import days, facts_of

# The slack of a status read (a second, for coarse clocks) made a tenth of one, so that a test
# waits SETTLE for its files to be older than it rather than a second each; time only moves on,
# so a loaded machine makes them older still. (The test of a folder changed within the slack
# keeps the real one: it needs the call to come within it.)
SHORT_SLACK_NS = 100_000_000
SETTLE = 0.15


@pytest.fixture
def short_slack(monkeypatch: pytest.MonkeyPatch) -> None:
    from codescout_mcp.facts import checkout, repository

    monkeypatch.setattr(repository, "STATUS_SLACK_NS", SHORT_SLACK_NS)
    monkeypatch.setattr(checkout, "STATUS_SLACK_NS", SHORT_SLACK_NS)


@pytest.fixture
def repo(tmp_path: Path, short_slack: None) -> Repo:
    r = Repo(tmp_path / "r")
    r.write("a.txt", "1\n")
    r.write("b.txt", "1\n")
    r.commit("2025-03-01T12:00:00Z", "a.txt", "b.txt")
    r.write("a.txt", "2\n")
    r.commit("2026-02-01T12:00:00Z", "a.txt")
    # Files changed within the slack of a status read are read again; let these settle.
    time.sleep(SETTLE)
    return r


# --- where paths are --------------------------------------------------------------------------------


def test_the_command_line_follows_the_callers_git_variables(
    repo: Repo, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    monkeypatch.setenv("GIT_DIR", str(repo.root / ".git"))
    monkeypatch.setenv("GIT_WORK_TREE", str(repo.root))
    followed = Checkout.open(None, cwd=elsewhere, warn=lambda _: None)  # as `codescout hits` opens it
    assert followed.main is not None and followed.base == repo.root.resolve()
    isolated = Checkout.open(None, cwd=elsewhere, warn=lambda _: None, isolated=True)  # the workspace tool
    assert isolated.main is None and isolated.base == elsewhere.resolve()


def test_locate_and_shown(repo: Repo, tmp_path: Path) -> None:
    checkout = Checkout.open(None, cwd=repo.root, warn=lambda _: None, isolated=True)
    sub = repo.root / "src"
    sub.mkdir()

    def where(given: str, cwd: Path) -> str:
        return checkout.name_of(checkout.locate(given, cwd))

    assert checkout.locate("a.txt", sub) == str(sub / "a.txt")
    assert where("a.txt", repo.root) == "a.txt"
    assert where("../a.txt", sub) == "a.txt"
    assert where(".", sub) == "src"
    assert where("..", sub) == "."
    assert where("src/", repo.root) == "src"
    assert where(str(tmp_path / "elsewhere.txt"), repo.root) == "../elsewhere.txt"
    assert checkout.name_of(str(repo.root / "x" / "y")) == "x/y"
    assert checkout.name_of(str(tmp_path)) == ".."


def test_resolved_folders_follow_links_and_dot_dot(tmp_path: Path) -> None:
    (tmp_path / "real" / "deep").mkdir(parents=True)
    (tmp_path / "link").symlink_to(tmp_path / "real")
    known: dict[str, str] = {}
    assert resolved_folder(str(tmp_path / "link" / "deep"), known) == str(tmp_path / "real" / "deep")
    assert resolved_folder(str(tmp_path / "link" / "deep" / ".."), known) == str(tmp_path / "real")
    assert resolved_folder(str(tmp_path / "link" / "." / "deep"), known) == str(tmp_path / "real" / "deep")
    assert resolved_folder("/", known) == "/"
    assert known[str(tmp_path / "link")] == str(tmp_path / "real")


# --- ages, kept and refreshed ------------------------------------------------------------------------


def test_refresh_sees_every_way_the_history_can_move(repo: Repo) -> None:
    facts, _ = facts_of(repo.root)
    assert days(facts, "a.txt", "b.txt") == [27, 364]
    repo.git("reset", "-q", "--soft", "HEAD~1")  # the branch moves; the index keeps the change
    assert days(facts, "a.txt", "b.txt") == [0, 364]
    repo.git("reset", "-q", "--hard", "HEAD")
    assert days(facts, "a.txt") == [364]
    repo.git("checkout", "-q", "-b", "other")
    repo.write("b.txt", "2\n")
    repo.commit("2026-02-20T12:00:00Z", "b.txt")
    assert days(facts, "b.txt") == [8]
    repo.git("checkout", "-q", "main")  # HEAD names another branch
    assert days(facts, "b.txt") == [364]
    repo.git("pack-refs", "--all")  # refs move into packed-refs: nothing changes
    assert days(facts, "b.txt") == [364]
    repo.git("reset", "-q", "--hard", "other")  # the packed branch moves
    assert days(facts, "b.txt") == [8]
    repo.git("checkout", "-q", "--detach", "HEAD~1")  # a detached HEAD
    assert days(facts, "b.txt") == [364]


def test_edits_are_seen_and_reverted_edits_too(repo: Repo) -> None:
    facts, _ = facts_of(repo.root)
    assert days(facts, "a.txt") == [27]
    time.sleep(0.01)
    repo.write("a.txt", "edited\n")
    assert days(facts, "a.txt") == [0]
    repo.git("checkout", "-q", "--", "a.txt")
    assert days(facts, "a.txt") == [27]
    untracked = repo.write("new.txt", "x\n")
    os.utime(untracked, (NOW_SECONDS - 3 * DAY,) * 2)
    assert days(facts, "new.txt") == [3]


def test_a_change_is_today_whatever_the_files_time_says(repo: Repo) -> None:
    facts, _ = facts_of(repo.root)
    repo.write("a.txt", "edited\n")
    os.utime(repo.root / "a.txt", (NOW_SECONDS - 5 * DAY,) * 2)  # an editor that keeps times
    assert days(facts, "a.txt") == [0]
    repo.git("add", "a.txt")  # staged, the same
    assert days(facts, "a.txt") == [0]


def test_an_untracked_file_is_dated_by_its_own_time_even_with_history(repo: Repo) -> None:
    repo.git("rm", "-q", "--cached", "b.txt")
    repo.commit("2026-02-10T12:00:00Z")  # b.txt leaves the history but stays on disk
    os.utime(repo.root / "b.txt", (NOW_SECONDS - 3 * DAY,) * 2)
    facts, _ = facts_of(repo.root)
    assert days(facts, "b.txt", "a.txt") == [3, 27]


def test_adding_a_file_to_the_index_is_seen(repo: Repo) -> None:
    new = repo.write("new.txt", "x\n")
    os.utime(new, (NOW_SECONDS - 3 * DAY,) * 2)
    time.sleep(SETTLE)  # its inode settles: only the index can tell what changes next
    facts, _ = facts_of(repo.root)
    assert days(facts, "new.txt") == [3]  # untracked: its own time
    repo.git("add", "new.txt")  # the file is untouched; the index changes
    assert days(facts, "new.txt") == [0]


def test_a_status_read_that_failed_is_read_again(repo: Repo, monkeypatch: pytest.MonkeyPatch) -> None:
    """A status read that ends early (a cancelled call's, the warm-up's given way) leaves nothing
    behind: the next call reads the status itself, and an edit made before it is still seen."""
    repo.write("a.txt", "edited\n")
    os.utime(repo.root / "a.txt", (NOW_SECONDS - 5 * DAY,) * 2)
    time.sleep(SETTLE)  # older than the read's slack: only the status can tell it changed
    facts, _ = facts_of(repo.root)
    facts.refresh()
    plain = facts._read_status

    def cut_short(names: object, lookup: Lookup) -> set[str]:
        raise Cancelled

    monkeypatch.setattr(facts, "_read_status", cut_short)
    with pytest.raises(Cancelled):
        facts.describe(["a.txt"], Lookup(NOW_SECONDS))
    monkeypatch.setattr(facts, "_read_status", plain)
    assert days(facts, "a.txt") == [0]


def test_a_reftable_list_that_changes_drops_what_was_known(repo: Repo) -> None:
    facts, _ = facts_of(repo.root)
    assert days(facts, "a.txt") == [27]
    facts.refresh()
    assert facts._status_read_at is not None  # nothing moved: kept
    tables = repo.root / ".git" / "reftable" / "tables.list"
    tables.parent.mkdir()
    tables.write_text("0x000000000001-0x000000000002-00000000.ref\n", encoding="ascii")
    facts.refresh()
    assert facts._status_read_at is None and not facts._head_checked  # (the history is asked for HEAD again)


def test_a_linked_worktree_follows_its_own_head(repo: Repo, tmp_path: Path) -> None:
    linked = tmp_path / "linked"
    repo.git("worktree", "add", "-q", "-b", "side", str(linked))
    time.sleep(SETTLE)
    facts, _ = facts_of(linked)
    assert facts.base == linked.resolve() and days(facts, "b.txt") == [364]
    side = Repo(linked, init=False)
    side.write("b.txt", "side\n")
    side.commit("2026-02-25T12:00:00Z", "b.txt")  # only the worktree's branch and index move
    assert days(facts, "b.txt") == [3]


def test_a_head_that_is_not_utf8_is_read_without_failing(repo: Repo) -> None:
    facts, _ = facts_of(repo.root)
    assert days(facts, "a.txt") == [27]
    head = repo.root / ".git" / "HEAD"
    kept = head.read_bytes()
    head.write_bytes(b"ref: refs/heads/\xff\n")
    facts.refresh()
    assert facts._status_read_at is None  # a new HEAD: what was known is dropped
    head.write_bytes(kept)
    assert days(facts, "a.txt") == [27]


def test_cached_only_answers_only_from_what_is_known(repo: Repo) -> None:
    facts, _ = facts_of(repo.root)
    facts.refresh()
    with pytest.raises(NeedsWork):  # nothing read yet
        facts.describe(["a.txt"], Lookup(NOW_SECONDS, cached_only=True))
    assert days(facts, "a.txt") == [27]
    assert days(facts, "a.txt", cached_only=True) == [27]
    with pytest.raises(NeedsWork):  # b.txt was not met before the early stop
        days(facts, "b.txt", cached_only=True)
    assert days(facts, "b.txt") == [364]
    repo.write("a.txt", "edited\n")
    with pytest.raises(NeedsWork):  # its status must be read again
        days(facts, "a.txt", cached_only=True)


def test_a_walk_after_an_early_stop_goes_on_from_where_it_stopped(repo: Repo) -> None:
    """a.txt is found in the newest commit, b.txt in the one before: two walks, each commit read once."""
    facts, _ = facts_of(repo.root)
    assert days(facts, "a.txt") == [27]
    history = facts._history
    assert history is not None and not history.complete  # stopped once a.txt was found
    assert history.commits_walked == 1
    assert days(facts, "b.txt") == [364]
    assert history.complete and history.commits_walked == 2


def test_paths_outside_and_missing(repo: Repo, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("x", encoding="utf-8")
    os.utime(outside, (NOW_SECONDS - 2 * DAY,) * 2)
    (repo.root / "CODEOWNERS").write_text("* @all\n", encoding="utf-8")
    for facts in (facts_of(repo.root)[0], Checkout.open(None, cwd=repo.root, warn=lambda _: None)):
        facts.refresh()
        if isinstance(facts, Checkout):
            named = {str(outside): "../outside.txt", str(repo.root / "missing.txt"): "missing.txt"}
            named |= {str(repo.root / "a.txt"): "a.txt", str(tmp_path): ".."}
        else:
            named = {name: name for name in ("../outside.txt", "missing.txt", "a.txt", "..")}
        found = facts.describe(list(named), Lookup(NOW_SECONDS)).facts
        described = {named[key]: value for key, value in found.items()}
        parent = described[".."]  # the folder above the work tree: outside, so nobody owns it
        assert not isinstance(parent, OSError) and parent.owner is None
        fact = described["../outside.txt"]
        assert not isinstance(fact, OSError)
        assert (fact.days, fact.owner) == (2, None)
        assert isinstance(described["missing.txt"], FileNotFoundError)
        inside = described["a.txt"]
        assert not isinstance(inside, OSError) and inside.owner == "@all"


def test_codeowners_are_read_and_warned_about_once_while_unchanged(repo: Repo) -> None:
    (repo.root / "CODEOWNERS").write_text("!a.txt @x\n* @all\n", encoding="utf-8")
    facts, warnings = facts_of(repo.root)
    for _ in range(3):
        facts.refresh()
        fact = facts.describe(["a.txt", "b.txt"], Lookup(NOW_SECONDS)).facts["a.txt"]
        assert not isinstance(fact, OSError) and fact.owner == "@all"
    assert len(warnings) == 1 and "negation (!) is not supported" in warnings[0]


def test_stats_already_known_are_used_and_the_rest_are_read(repo: Repo) -> None:
    facts, _ = facts_of(repo.root)
    facts.refresh()
    given = {"b.txt": os.stat(repo.root / "b.txt")}
    described = facts.describe(["b.txt", "a.txt", "gone.txt"], Lookup(NOW_SECONDS), stats=given).facts
    assert [getattr(described[name], "days", None) for name in ("b.txt", "a.txt")] == [364, 27]
    assert isinstance(described["gone.txt"], FileNotFoundError)


@pytest.mark.parametrize("place", [".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS", ".gitlab/CODEOWNERS"])
def test_codeowners_written_edited_and_removed_in_each_place_are_seen(repo: Repo, place: str) -> None:
    facts, _ = facts_of(repo.root)

    def owner() -> str | None:
        facts.refresh()
        fact = facts.describe(["a.txt"], Lookup(NOW_SECONDS)).facts["a.txt"]
        assert not isinstance(fact, OSError)
        return fact.owner

    assert owner() is None
    rules = repo.root / place
    rules.parent.mkdir(exist_ok=True)
    rules.write_text("* @one\n", encoding="utf-8")
    assert owner() == "@one"
    rules.write_text("* @three\n", encoding="utf-8")  # another size: seen at once
    assert owner() == "@three"
    rules.unlink()
    assert owner() is None


def test_a_shallow_boundary_without_its_file_dates_at_zero(tmp_path: Path, repo: Repo) -> None:
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{repo.root}", str(clone)], check=True)
    time.sleep(SETTLE)  # the checkout settles, so a second read needs no status again
    facts, warnings = facts_of(clone)
    notes: list[str] = []
    assert days(facts, "b.txt", notes=notes) == [27]  # the boundary commit's date
    assert len(notes) == 1 and "1 file shows 2026-02-01, the date of the oldest" in notes[0]
    assert days(facts, "b.txt", cached_only=True, notes=notes) == [27]  # everything is known, the boundary too
    assert len(notes) == 1 and "1 file shows 2026-02-01" in notes[0]
    assert days(facts, "a.txt", notes=notes) == [27] and len(notes) == 1  # then or before: the clone cannot tell
    assert warnings == []  # notes are the caller's to pass on
    subprocess.run(["git", "-C", str(clone), "fetch", "-q", "--deepen=1"], check=True)  # only .git/shallow moves
    assert days(facts, "b.txt", notes=notes) == [364] and len(notes) == 1 and "2025-03-01" in notes[0]


def test_what_a_checkout_remembers_of_its_folders_is_bounded(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, short_slack: None
) -> None:
    """Which folders held no `.git`, and their names, are kept between calls up to a bound, then
    started afresh: a hostile client naming folder after folder cannot grow them without end."""
    from codescout_mcp.facts import checkout as module
    from codescout_mcp.tools.workspace import Workspace, WorkspaceTool

    r = Repo(tmp_path / "r")
    files = [f"d{i}/a.txt" for i in range(6)]
    for name in files:
        r.write(name, "x\n")
    r.commit("2025-03-01T12:00:00Z", *files)
    time.sleep(SETTLE)  # folders older than the slack: what was seen of them is kept
    monkeypatch.setattr(module, "CACHE_ENTRIES", 4)
    tool = WorkspaceTool(Workspace(str(r.root)))

    def call(names: list[str]) -> Checkout:
        result = tool.call({"hits": [{"path": name, "matches": 1} for name in names]})
        assert result is not None and not result["isError"], result
        checkout = tool.workspace._checkout
        assert checkout is not None
        return checkout

    checkout = call(files[:3])
    assert sorted(checkout._without_git) == [str(r.root.resolve() / f"d{i}") for i in range(3)]
    checkout = call(files[3:])  # d3 fills it; d4 finds it full, starts it afresh; d5
    assert sorted(checkout._without_git) == [str(r.root.resolve() / f"d{i}") for i in (4, 5)]
    assert len(checkout._prefixes) == 2


def test_a_folder_changed_within_the_slack_is_looked_into_again_at_each_call(tmp_path: Path) -> None:
    """A coarse clock could give a `.git` made in the same tick the folder's old times: a folder
    changed less than STATUS_SLACK_NS before a call is not remembered as holding none."""
    from codescout_mcp.tools.workspace import Workspace, WorkspaceTool

    r = Repo(tmp_path / "r")
    r.write("old/a.txt", "x\n")
    r.write("new/a.txt", "x\n")
    r.commit("2025-03-01T12:00:00Z", "old/a.txt", "new/a.txt")
    time.sleep(1.1)
    (r.root / "new" / "b.txt").write_text("x\n", encoding="utf-8")  # `new` changed just now
    tool = WorkspaceTool(Workspace(str(r.root)))
    result = tool.call({"hits": [{"path": "old/a.txt", "matches": 1}, {"path": "new/a.txt", "matches": 1}]})
    assert result is not None and not result["isError"], result
    checkout = tool.workspace._checkout
    assert checkout is not None
    assert sorted(checkout._without_git) == [str(r.root.resolve() / "old")]
