"""`codescout hits`' arguments built in process (`facts/hits.py`): timestamps, vanished files, a deleted folder."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from codescout_mcp.facts.checkout import Checkout
from codescout_mcp.facts.hits import HitsError, build_arguments, parse_now
from codescout_mcp.facts.lookup import FileFacts
from tests.gitrepo import DAY, NOW_SECONDS
from tests.platforms import DELETED_CWD, posix_only


def test_file_facts_cannot_be_changed_once_known() -> None:
    fact = FileFacts(3, "@a")
    with pytest.raises(AttributeError):
        fact.days = 0  # type: ignore[misc]
    assert fact == FileFacts(3, "@a") and hash(fact) == hash(FileFacts(3, "@a"))


def test_parse_now_forms() -> None:
    assert parse_now(" 2026-03-01T00:00:00z ") == NOW_SECONDS
    assert parse_now("2026-03-01T00:00:00Z") == NOW_SECONDS
    assert parse_now("2026-03-01T03:00:00+03:00") == NOW_SECONDS


def test_build_arguments_when_every_file_vanished(tmp_path: Path) -> None:
    warnings: list[str] = []
    checkout = Checkout.open(None, cwd=tmp_path, warn=warnings.append)
    with pytest.raises(HitsError, match=r"^no hits are left to rank$"):
        build_arguments({"gone.txt": 1}, checkout=checkout, cwd=tmp_path, now=NOW_SECONDS)
    assert warnings == ["gone.txt: left out, cannot read its modification time (No such file or directory)"]


def test_build_arguments_leaves_out_only_the_files_that_vanished(tmp_path: Path) -> None:
    for name in ("b.txt", "d.txt"):
        (tmp_path / name).write_text("x", encoding="utf-8")
        os.utime(tmp_path / name, (NOW_SECONDS - DAY,) * 2)
    warnings: list[str] = []
    checkout = Checkout.open(None, cwd=tmp_path, warn=warnings.append)
    counts = {"d.txt": 4, "c-gone.txt": 3, "b.txt": 2, "a-gone.txt": 1}
    built = build_arguments(counts, checkout=checkout, cwd=tmp_path, now=NOW_SECONDS, limit=5)
    assert built == {
        "hits": [
            {"path": "b.txt", "matches": 2, "last_modified_days": 1},
            {"path": "d.txt", "matches": 4, "last_modified_days": 1},
        ],
        "limit": 5,
    }
    assert [w.split(":")[0] for w in warnings] == ["a-gone.txt", "c-gone.txt"]


@posix_only(DELETED_CWD)
def test_build_arguments_in_a_deleted_folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    checkout = Checkout.open(None, cwd=tmp_path, warn=lambda _: None)
    gone = tmp_path / "gone"
    gone.mkdir()
    monkeypatch.chdir(gone)
    gone.rmdir()
    with pytest.raises(HitsError, match=r"^cannot read the current directory: No such file or directory$"):
        build_arguments({"a": 1}, checkout=checkout, now=NOW_SECONDS)
