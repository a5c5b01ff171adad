"""The compiled accept path: derived from the schema, refusing what it does not understand."""

from __future__ import annotations

import copy
import enum
from collections import OrderedDict, UserList
from typing import Any

import pytest

from codescout_mcp import InvalidArguments, rank
from codescout_mcp.contract import INPUT_SCHEMA
from codescout_mcp.validate import _build_hit_scanner, _build_top_level_check, fast_verdict, validate

ITEMS = INPUT_SCHEMA["properties"]["hits"]["items"]


def test_checker_follows_the_schema_it_is_compiled_from() -> None:
    stricter = copy.deepcopy(ITEMS)
    stricter["properties"]["matches"]["minimum"] = 5
    scan = _build_hit_scanner(stricter)
    assert scan([{"path": "a", "matches": 5, "last_modified_days": 0}]) == (-1, False)
    assert scan([{"path": "a", "matches": 4, "last_modified_days": 0}]) == (0, False)
    assert scan([{"path": "a", "matches": 5.0, "last_modified_days": 0}]) == (-1, True)


def test_checker_reports_the_first_bad_hit_and_duplicates() -> None:
    scan = _build_hit_scanner(ITEMS)
    good = {"path": "a", "matches": 1, "last_modified_days": 0}
    assert scan([good, {**good, "path": "b"}, {**good, "path": "c", "owner": None}]) == (2, False)
    assert scan([good, {**good, "path": "b"}, good]) == (2, False)


@pytest.mark.parametrize("keyword", [("maxLength", 10), ("pattern", "^s"), ("enum", ["a"]), ("maximum", 9)])
def test_checker_refuses_a_schema_keyword_it_has_no_rule_for(keyword: tuple[str, Any]) -> None:
    schema = copy.deepcopy(ITEMS)
    schema["properties"]["path"][keyword[0]] = keyword[1]
    with pytest.raises(NotImplementedError, match=keyword[0]):
        _build_hit_scanner(schema)


def test_checker_refuses_an_unknown_type() -> None:
    schema = copy.deepcopy(INPUT_SCHEMA)
    del schema["properties"]["hits"]["items"]
    schema["properties"]["limit"]["type"] = "number"
    with pytest.raises(NotImplementedError, match="number"):
        _build_top_level_check(schema)


class Level(enum.IntEnum):
    ONE = 1
    TWO = 2


class Path(str):
    pass


def test_subclasses_from_python_callers_are_judged_like_their_base_types() -> None:
    hits: UserList[Any] = UserList()
    hits.extend([OrderedDict(path=Path("b"), matches=Level.TWO, last_modified_days=0)])
    assert not isinstance(hits, list)
    with pytest.raises(InvalidArguments) as caught:
        rank({"hits": hits})
    assert caught.value.location == "hits"

    class Hits(list[Any]):
        pass

    arguments = {
        "hits": Hits([OrderedDict(path=Path("b"), matches=Level.TWO, last_modified_days=0)]),
        "limit": Level.ONE,
    }
    assert fast_verdict(arguments)
    assert rank(arguments) == {
        "results": [{"path": "b", "matches": 2, "last_modified_days": 0, "owner": None, "score": 200, "rank": 1}],
        "counts": {"hits": 1, "returned": 1},
    }


def test_a_bad_hit_after_a_subclassed_one_is_still_found() -> None:
    first = OrderedDict(path="a", matches=1, last_modified_days=0)
    with pytest.raises(InvalidArguments) as caught:
        validate({"hits": [first, {"path": "b", "matches": 0, "last_modified_days": 0}]})
    assert caught.value.location == "hits[1].matches"
