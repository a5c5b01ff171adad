"""The ranking rule's pieces, checked against the spec's own words (no shared code)."""

from __future__ import annotations

import json
import random
from typing import Any

import pytest

from codescout_mcp import rank
from codescout_mcp.core import fastpath
from codescout_mcp.core.ranking import SAMPLE
from tests.helpers import ECMASCRIPT_TRIMMED, as_json, reference_rank

NOT_TRIMMED = ["\u0085", "\u180e", "\u200b", "\u2060", "\u001c", "\u001f", "\u00ad", "x"]


def owner_of(owner: str) -> object:
    result = rank({"hits": [{"path": "a", "matches": 1, "last_modified_days": 0, "owner": owner}]})
    return result["results"][0]["owner"]


@pytest.mark.parametrize("char", sorted(ECMASCRIPT_TRIMMED), ids=lambda c: f"U+{ord(c):04X}")
def test_each_character_javascript_trims_makes_an_owner_blank(char: str) -> None:
    assert owner_of(char) is None
    assert owner_of(char * 3) is None
    assert owner_of(f"{char}ab{char}") == f"{char}ab{char}"  # kept exactly as given


@pytest.mark.parametrize("char", NOT_TRIMMED, ids=lambda c: f"U+{ord(c):04X}")
def test_characters_javascript_does_not_trim_are_an_owner(char: str) -> None:
    assert owner_of(char) == char
    assert owner_of(f" {char} ") == f" {char} "


def test_an_empty_owner_is_blank() -> None:
    assert owner_of("") is None


def test_ties_fall_to_matches_then_days_then_utf16_path() -> None:
    hits = [
        {"path": "z", "matches": 2, "last_modified_days": 100},  # 100
        {"path": "y", "matches": 1, "last_modified_days": 0},  # 100, fewer matches
        {"path": "\uffff", "matches": 2, "last_modified_days": 100},  # 100, same as z: path decides
        {"path": "\U0001f600", "matches": 2, "last_modified_days": 100},
    ]
    result = rank({"hits": hits})
    assert [r["path"] for r in result["results"]] == ["z", "\U0001f600", "\uffff", "y"]
    assert [r["score"] for r in result["results"]] == [100, 100, 100, 100]


def test_negative_scores_are_reported_as_they_are() -> None:
    result = rank({"hits": [{"path": "a", "matches": 1, "last_modified_days": 10**30}]})
    assert result["results"][0]["score"] == 100 - 10**30


def test_letters_digits_and_punctuation_are_never_trimmed() -> None:
    import string

    for char in string.ascii_letters + string.digits + string.punctuation:
        assert owner_of(char) == char, char


def test_the_best_hit_is_found_when_more_matches_score_less() -> None:
    # 100 points a match exactly: at 101 a match, three matches 201 days old would outscore
    # one match today, and a top-k that picked its floor on those scores would lose the best.
    hits = [
        {"path": "older.py", "matches": 3, "last_modified_days": 201},
        {"path": "today.py", "matches": 1, "last_modified_days": 0},
        {"path": "other.py", "matches": 1, "last_modified_days": 5},
    ]
    for limit in (1, 2):
        ranked = rank({"hits": hits, "limit": limit})["results"]
        assert [(entry["path"], entry["score"]) for entry in ranked] == [("today.py", 100), ("older.py", 99)][:limit]


# --- the top of many hits: sieves that must never lose a hit of the top --------------------------


def _shaped(shape: str, count: int, step: int) -> list[dict[str, Any]]:
    """`count` hits laid out to test `ranking._reaching`'s sieves (`step`: its sampling stride)."""
    rnd = random.Random(shape)
    hits: list[dict[str, Any]] = []
    for i in range(count):
        if shape == "random":
            matches, days = rnd.randint(1, 60), rnd.randint(0, 3000)
        elif shape == "matches alike":  # the matches sieve lets every hit through
            matches, days = 7, rnd.randint(0, 3000)
        elif shape == "ascending":
            matches, days = 1 + i * 60 // count, rnd.randint(0, 99)
        elif shape == "descending":
            matches, days = 60 - i * 60 // count, rnd.randint(0, 99)
        elif shape == "top between samples":  # the best hits lie where the sample never looks
            best = i % step == 1 and i < 40 * step
            matches, days = (59, rnd.randint(0, 40)) if best else (59, 50 + rnd.randint(0, 40))
        elif shape == "floor on a hundred":  # the sample's floor is 5,900: 59 matches, 0 days reach it
            matches, days = (59, 0) if i % step == 1 else (60, 100 + rnd.randint(0, 3))
        elif shape == "ties at the floor":  # thousands of hits share each score: matches, days, path decide
            matches = rnd.choice([3, 4])
            days = 100 * (matches - 3)
        elif shape == "negative":
            matches, days = rnd.randint(1, 3), rnd.randint(10**6, 10**6 + 500)
        elif shape == "best first":  # the sample's first hit is the best of all
            matches, days = (60, 0) if i == 0 else (rnd.randint(50, 59), rnd.randint(0, 99))
        elif shape == "sample above the rest":  # every hit the sample looks at outscores every other
            matches, days = (60, rnd.randint(0, 99)) if i % step == 0 else (30, rnd.randint(0, 99))
        else:
            raise AssertionError(shape)
        hits.append({"path": f"p/{rnd.random():.17f}/{i}", "matches": matches, "last_modified_days": days})
    return hits


SHAPES = ["random", "matches alike", "ascending", "descending", "top between samples", "floor on a hundred",
          "ties at the floor", "negative", "best first"]  # fmt: skip


@pytest.mark.parametrize("limit", [1, 10, SAMPLE // 16, SAMPLE // 16 + 1])
@pytest.mark.parametrize("shape", SHAPES)
def test_the_top_of_many_hits_is_the_spec_s_whatever_their_shape(shape: str, limit: int) -> None:
    count = 4 * SAMPLE + 123  # enough for the sample-based sieves to run
    hits = _shaped(shape, count, count // SAMPLE)
    arguments = {"hits": hits, "limit": limit}
    expected = as_json(reference_rank(arguments))
    assert as_json(rank(arguments)) == expected  # the dicts' path
    assert as_json(fastpath.ranked([json.dumps(arguments).encode()])) == expected  # the structs' path


def test_a_limit_above_the_sample_s_size_is_never_cut_by_it() -> None:
    """The sample's `limit`-th best bounds the floor only while the sample holds `limit` hits."""
    count = 4 * SAMPLE + 123
    step = count // SAMPLE
    arguments = {"hits": _shaped("sample above the rest", count, step), "limit": count // step + 100}
    expected = as_json(reference_rank(arguments))
    assert as_json(rank(arguments)) == expected
    assert as_json(fastpath.ranked([json.dumps(arguments).encode()])) == expected
