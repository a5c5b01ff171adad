"""The search tool's ranking of what ripgrep found (`facts.hits.top_ranked`), in process.

It must give what ranking every hit gives, while dating only the files that can still reach
the first `limit`. A stand-in checkout says each file's facts and records what it was asked.
"""

from __future__ import annotations

import errno
import os
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

from codescout_mcp.core.ranking import rank
from codescout_mcp.facts.hits import hit_of, top_ranked
from codescout_mcp.facts.lookup import Described, FileFacts

GONE = OSError(errno.ENOENT, "No such file or directory")


class Checkout:
    """Says `table`'s facts for each path (by its absolute path); keeps each batch it was asked."""

    def __init__(
        self,
        table: dict[str, FileFacts | OSError],
        spellings: dict[str, str] | None = None,
        notes: list[str] | None = None,
    ) -> None:
        self.table = table
        self.spellings = spellings or {}
        self.notes = notes or []
        self.asked: list[list[str]] = []
        self.stats_given: list[dict[str, Any]] = []

    def describe(self, paths: list[str], lookup: object, *, stats: dict[str, Any]) -> Described:
        self.asked.append(list(paths))
        self.stats_given.append(stats)
        spellings = {path: self.spellings[path] for path in paths if path in self.spellings}
        return Described({path: self.table[path] for path in paths}, spellings, list(self.notes))


def ranked(
    located: dict[str, int], checkout: Checkout, limit: int, stats: dict[str, Any] | None = None, name_of: Any = None
) -> tuple[dict[str, Any], list[str]]:
    def plain_name(path: str) -> str | None:
        return path.removeprefix("/w/")

    return top_ranked(
        located,
        stats or {},
        checkout=checkout,  # type: ignore[arg-type]
        lookup=None,  # type: ignore[arg-type]
        limit=limit,
        name_of=name_of or plain_name,
    )


def every_hit_ranked(located: dict[str, int], table: dict[str, Any], limit: int) -> dict[str, Any]:
    hits = [hit_of(path.removeprefix("/w/"), matches, table[path]) for path, matches in located.items()]
    return rank({"hits": hits, "limit": limit})


@settings(max_examples=300, deadline=None)
@given(
    files=st.lists(st.tuples(st.integers(1, 12), st.integers(0, 400)), min_size=1, max_size=12),
    limit=st.integers(1, 14),
)
def test_the_answer_is_every_hit_ranked(files: list[tuple[int, int]], limit: int) -> None:
    located = {f"/w/f{index:02}.py": matches for index, (matches, _) in enumerate(files)}
    table: dict[str, Any] = {f"/w/f{index:02}.py": FileFacts(days, None) for index, (_, days) in enumerate(files)}
    answer, notes = ranked(located, Checkout(table), limit)
    assert answer == every_hit_ranked(located, table, limit)
    assert notes == []


def test_a_file_that_cannot_reach_the_first_limit_is_never_dated() -> None:
    # many.py scores 606; one.py at most 100, six.py at most 600: neither can reach it.
    located = {"/w/many.py": 10, "/w/six.py": 6, "/w/one.py": 1}
    table: dict[str, Any] = {path: FileFacts(0, None) for path in located}
    checkout = Checkout({**table, "/w/many.py": FileFacts(394, None)})
    answer, _ = ranked(located, checkout, 1)
    assert checkout.asked == [["/w/many.py"]]
    assert [row["path"] for row in answer["results"]] == ["many.py"]
    assert answer["counts"] == {"hits": 3, "returned": 1}  # every file found is counted


def test_a_file_that_can_only_tie_the_floor_is_dated() -> None:
    located = {"/w/b.py": 2, "/w/a.py": 1}  # b.py: 200 - 100 = 100; a.py at best 100, and a.py < b.py
    table: dict[str, Any] = {"/w/b.py": FileFacts(100, None), "/w/a.py": FileFacts(0, None)}
    checkout = Checkout(table)
    answer, _ = ranked(located, checkout, 1)
    assert checkout.asked == [["/w/b.py"], ["/w/a.py"]]
    assert answer == every_hit_ranked(located, table, 1)


def test_files_gone_or_unnamed_are_left_out_and_not_counted() -> None:
    located = {"/w/a.py": 3, "/w/gone.py": 9, "/outside/x.py": 5}
    table: dict[str, Any] = {"/w/a.py": FileFacts(1, "@me"), "/w/gone.py": GONE, "/outside/x.py": FileFacts(0, None)}

    def name_of(path: str) -> str | None:
        return path.removeprefix("/w/") if path.startswith("/w/") else None

    answer, _ = ranked(located, Checkout(table), 10, name_of=name_of)
    assert answer == {
        "results": [{"path": "a.py", "matches": 3, "last_modified_days": 1, "owner": "@me", "score": 299, "rank": 1}],
        "counts": {"hits": 1, "returned": 1},
    }


def test_nothing_left_is_an_empty_answer() -> None:
    answer, _ = ranked({"/w/gone.py": 2}, Checkout({"/w/gone.py": GONE}), 5)
    assert answer == {"results": [], "counts": {"hits": 0, "returned": 0}}


def test_one_file_under_two_names_is_one_hit_with_all_its_matches_named_as_git_spells_it() -> None:
    located = {"/w/src/A.py": 2, "/w/src/a.py": 3, "/w/b.py": 1}
    table: dict[str, Any] = {
        "/w/src/A.py": FileFacts(10, None),
        "/w/src/a.py": FileFacts(10, None),
        "/w/b.py": FileFacts(0, None),
    }
    checkout = Checkout(table, spellings={"/w/src/A.py": "/w/src/a.py"})
    answer, _ = ranked(located, checkout, 10)
    assert [(row["path"], row["matches"]) for row in answer["results"]] == [("src/a.py", 5), ("b.py", 1)]
    assert answer["counts"] == {"hits": 2, "returned": 2}


def test_notes_are_said_once_and_stats_are_passed_on_for_the_paths_asked() -> None:
    located = {"/w/a.py": 5, "/w/b.py": 5, "/w/c.py": 1}
    table: dict[str, Any] = {path: FileFacts(0, None) for path in located}
    status = os.stat(os.curdir)
    checkout = Checkout(table, notes=["git was slow", "git was slow"])
    _, notes = ranked(located, checkout, 1, stats={"/w/a.py": status, "/w/c.py": status})
    assert notes == ["git was slow"]
    assert checkout.asked[0] == ["/w/a.py"]
    assert checkout.stats_given[0] == {"/w/a.py": status}
