"""The checker: compiled from the schema, precise in its errors, judging plain values only."""

from __future__ import annotations

import copy
import enum
from collections import OrderedDict, UserList
from typing import Any

import pytest

from codescout_mcp import InvalidArguments, rank
from codescout_mcp.core.contract import INPUT_SCHEMA, MAX_INTEGER_DIGITS, WORKSPACE_INPUT_SCHEMA
from codescout_mcp.core.flatcheck import FlatChecker
from codescout_mcp.core.validate import (
    Checker,
    OversizedInteger,
    _build_hit_scanner,
    _build_top_level_check,
    validate,
)

ITEMS = INPUT_SCHEMA["properties"]["hits"]["items"]


def error_of(arguments: Any) -> tuple[str, str]:
    with pytest.raises(InvalidArguments) as caught:
        validate(arguments)
    return caught.value.location, caught.value.message


def hit(**fields: Any) -> dict[str, Any]:
    return {"path": "a", "matches": 1, "last_modified_days": 0, **fields}


# --- compiled from the schema -----------------------------------------------------------


def test_checker_follows_the_schema_it_is_compiled_from() -> None:
    stricter = copy.deepcopy(ITEMS)
    stricter["properties"]["matches"]["minimum"] = 5
    scan = _build_hit_scanner(stricter)
    assert scan([{"path": "a", "matches": 5, "last_modified_days": 0}]) == (-1, False)
    assert scan([{"path": "a", "matches": 4, "last_modified_days": 0}]) == (0, False)
    assert scan([{"path": "a", "matches": 5.0, "last_modified_days": 0}]) == (-1, True)
    assert scan([{"path": "a", "matches": 4.0, "last_modified_days": 0}]) == (0, False)


@pytest.mark.parametrize("least", [0, 1, 2, 3])
def test_checker_follows_a_strings_minimum_length(least: int) -> None:
    schema = copy.deepcopy(ITEMS)
    schema["properties"]["path"]["minLength"] = least
    scan = _build_hit_scanner(schema)
    for length in range(5):
        verdict = scan([{"path": "p" * length, "matches": 1, "last_modified_days": 0}])
        assert verdict == ((-1, False) if length >= least else (0, False)), length


def test_checker_reports_the_first_bad_hit_and_duplicates() -> None:
    scan = _build_hit_scanner(ITEMS)
    good = {"path": "a", "matches": 1, "last_modified_days": 0}
    assert scan([good, {**good, "path": "b"}, {**good, "path": "c", "owner": None}]) == (2, False)
    assert scan([good, {**good, "path": "b"}, good]) == (2, False)
    assert scan([good, {**good, "path": "b"}]) == (-1, False)


@pytest.mark.parametrize("keyword", [("maxLength", 10), ("pattern", "^s"), ("enum", ["a"]), ("maximum", 9)])
def test_checker_refuses_a_schema_keyword_it_has_no_rule_for(keyword: tuple[str, Any]) -> None:
    schema = copy.deepcopy(ITEMS)
    schema["properties"]["path"][keyword[0]] = keyword[1]
    with pytest.raises(NotImplementedError) as caught:
        _build_hit_scanner(schema)
    assert str(caught.value) == f"hits[].path: the compiled checker has no rule for ['{keyword[0]}']"


@pytest.mark.parametrize("kind", ["number", "boolean", "null", "object"])
def test_checker_refuses_a_field_type_it_has_no_rule_for(kind: str) -> None:
    schema = copy.deepcopy(ITEMS)
    schema["properties"]["owner"]["type"] = kind
    with pytest.raises(NotImplementedError) as caught:
        _build_hit_scanner(schema)
    assert str(caught.value) == f"hits[].owner: the compiled checker has no rule for type '{kind}'"


def test_checker_refuses_items_anywhere_but_in_hits() -> None:
    schema = copy.deepcopy(INPUT_SCHEMA)  # hits keeps its items: the top level must not see them
    with pytest.raises(NotImplementedError) as caught:
        _build_top_level_check(schema)
    assert str(caught.value) == "arguments.hits: the compiled checker has no rule for ['items']"


def test_checker_refuses_a_top_level_that_is_not_an_object() -> None:
    schema = copy.deepcopy(INPUT_SCHEMA)
    del schema["properties"]["hits"]["items"]
    schema["type"] = "array"
    with pytest.raises(NotImplementedError) as caught:
        _build_top_level_check(schema)
    assert str(caught.value) == "arguments: expected an object schema"


def test_an_array_without_min_items_may_be_empty() -> None:
    schema = copy.deepcopy(INPUT_SCHEMA)
    del schema["properties"]["hits"]["items"]
    del schema["properties"]["hits"]["minItems"]
    assert _build_top_level_check(schema)({"hits": []}) is True
    assert _build_top_level_check(schema)({"hits": {}}) is False


def test_fields_without_lower_bounds_are_described_without_them() -> None:
    schema = copy.deepcopy(INPUT_SCHEMA)
    del schema["properties"]["hits"]["minItems"]
    del schema["properties"]["hits"]["items"]["properties"]["last_modified_days"]["minimum"]
    checker = Checker(schema)
    assert checker.validate({"hits": [hit(last_modified_days=-5)]}).hits == [hit(last_modified_days=-5)]
    cases = [
        ({"hits": "x"}, ("hits", 'expected an array, got "x"')),
        ({"hits": [hit(last_modified_days="x")]}, ("hits[0].last_modified_days", 'expected an integer, got "x"')),
        ({"hits": [{"path": "a", "matches": 1}]}, ("hits[0].last_modified_days", "missing, expected an integer")),
    ]
    longest = -(10**MAX_INTEGER_DIGITS - 1)
    assert checker.validate({"hits": [hit(last_modified_days=longest)]}).hits[0]["last_modified_days"] == longest
    # Without a lower bound, the digit limit still holds below zero: the contract refuses
    # an integer of more than 4000 digits whatever its sign, and its stand-in too.
    too_long = ("hits[0].last_modified_days", "expected an integer of at most 4000 digits, got a longer one")
    cases += [
        ({"hits": [hit(last_modified_days=longest - 1)]}, too_long),
        ({"hits": [hit(last_modified_days=-(10**4500))]}, too_long),
        ({"hits": [hit(last_modified_days=OversizedInteger(True))]}, too_long),
    ]
    for arguments, expected in cases:
        with pytest.raises(InvalidArguments) as caught:
            checker.validate(arguments)
        assert (caught.value.location, caught.value.message) == expected


def test_the_first_problem_is_found_whatever_order_the_schema_lists_its_keywords_in() -> None:
    schema = copy.deepcopy(INPUT_SCHEMA)
    items = schema["properties"]["hits"]["items"]
    schema["properties"]["hits"]["items"] = {"required": items["required"], **items}
    assert next(iter(schema["properties"]["hits"]["items"])) == "required"
    with pytest.raises(InvalidArguments) as caught:
        Checker(schema).validate({"hits": [{"matches": 0, "last_modified_days": 0}]})
    assert (caught.value.location, caught.value.message) == ("hits[0].matches", "expected an integer >= 1, got 0")


def test_compiled_checks_name_themselves_in_a_traceback() -> None:
    assert _build_hit_scanner(ITEMS).__code__.co_filename == "<codescout compiled scan_hits>"
    top_level = copy.deepcopy(INPUT_SCHEMA)
    del top_level["properties"]["hits"]["items"]
    assert _build_top_level_check(top_level).__code__.co_filename == "<codescout compiled top_level_ok>"


def test_annotations_are_allowed_and_ignored() -> None:
    schema = copy.deepcopy(ITEMS)
    schema["properties"]["path"].update(title="Path", description="d", default="x", **{"$schema": "s"})
    assert _build_hit_scanner(schema)([{"path": "a", "matches": 1, "last_modified_days": 0}]) == (-1, False)


def test_the_workspace_schema_gets_its_own_checker() -> None:
    checker = Checker(WORKSPACE_INPUT_SCHEMA)
    checked = checker.validate({"hits": [{"path": "a", "matches": 2, "last_modified_days": "ignored"}]})
    assert (checked.hits, checked.limit) == ([{"path": "a", "matches": 2, "last_modified_days": "ignored"}], 10)
    with pytest.raises(InvalidArguments) as caught:
        checker.validate({"hits": [{"path": "a"}]})
    assert (caught.value.location, caught.value.message) == ("hits[0].matches", "missing, expected an integer >= 1")


# --- the edges of integers ----------------------------------------------------------------


def test_four_thousand_digits_is_the_edge() -> None:
    largest = 10**MAX_INTEGER_DIGITS - 1
    result = rank({"hits": [hit(matches=largest)]})
    assert result["results"][0]["score"] == largest * 100
    assert error_of({"hits": [hit(matches=largest + 1)]}) == (
        "hits[0].matches",
        "expected an integer of at most 4000 digits, got a larger one",
    )
    assert error_of({"hits": [hit(last_modified_days=largest + 1)]})[0] == "hits[0].last_modified_days"
    assert error_of({"hits": [hit()], "limit": largest + 1})[0] == "limit"
    assert rank({"hits": [hit()], "limit": largest})["counts"] == {"hits": 1, "returned": 1}


def test_a_too_large_integer_before_another_bad_field_is_named_first() -> None:
    big = 10**MAX_INTEGER_DIGITS
    assert error_of({"hits": [{"path": "a", "matches": big, "last_modified_days": "x"}]})[0] == "hits[0].matches"
    assert error_of({"hits": [{"path": "a", "last_modified_days": big, "matches": 0}]})[0] == (
        "hits[0].last_modified_days"
    )
    assert error_of({"limit": big, "hits": []})[0] == "limit"
    assert error_of({"hits": [], "limit": big})[0] == "hits"


def test_negative_integers_too_long_to_print_are_described_not_printed() -> None:
    assert error_of({"hits": [hit(last_modified_days=-(10**4500))]}) == (
        "hits[0].last_modified_days",
        "expected an integer >= 0, got a very large negative integer",
    )
    assert error_of({"hits": [hit(path=-(10**4500))]}) == (
        "hits[0].path",
        "expected a non-empty string, got a very large negative integer",
    )
    assert error_of({"hits": [hit()], "limit": -(10**4500)})[0] == "limit"
    assert error_of({"hits": [hit(path=[10**4500, [[]]])]}) == (
        "hits[0].path",
        "expected a non-empty string, got an array",
    )
    deep: list[Any] = []
    for _ in range(100_000):
        deep = [deep]
    assert error_of({"hits": [hit(owner=deep)]})[0] == "hits[0].owner"


def test_doubles_count_as_integers_only_up_to_two_to_the_53() -> None:
    assert rank({"hits": [hit(last_modified_days=2.0**53)]})["results"][0]["last_modified_days"] == 2**53
    assert error_of({"hits": [hit(matches=12345678901234567891.0)]}) == (
        "hits[0].matches",
        "expected an integer >= 1, got 1.2345678901234567e+19 "
        "(write integers beyond 2**53 without a fraction or exponent)",
    )
    assert error_of({"hits": [hit()], "limit": 1e300})[1].startswith(
        "expected an integer >= 1 (or leave the field out), got 1e+300"
    )
    for bad in (float("nan"), float("inf"), float("-inf")):
        assert error_of({"hits": [hit(matches=bad)]}) == (
            "hits[0].matches",
            "expected an integer >= 1, got a number out of range",
        )
    assert rank({"hits": [hit(last_modified_days=-0.0)]})["results"][0]["last_modified_days"] == 0


def test_oversized_literals_stand_in_at_their_location() -> None:
    assert error_of({"hits": [hit(matches=OversizedInteger(False))]})[1] == (
        "expected an integer of at most 4000 digits, got a larger one"
    )
    assert error_of({"hits": [hit(matches=OversizedInteger(True))]})[1] == (
        "expected an integer >= 1, got a very large negative integer"
    )
    assert rank({"hits": [hit(note=OversizedInteger(False))]})["counts"] == {"hits": 1, "returned": 1}


# --- how received values are shown ---------------------------------------------------------


def test_shown_values_are_cut_at_sixty_characters() -> None:
    fifty_eight = "x" * 58  # 60 characters with its quotes: shown whole
    assert error_of({"hits": [hit(matches=fifty_eight)]})[1] == f'expected an integer >= 1, got "{fifty_eight}"'
    fifty_nine = "x" * 59  # 61 with quotes: cut to 59 and an ellipsis
    assert error_of({"hits": [hit(matches=fifty_nine)]})[1] == f'expected an integer >= 1, got "{"x" * 58}\u2026'
    long_number = 10**70
    assert error_of({"hits": [hit(path=long_number)]})[1] == (
        f"expected a non-empty string, got {str(long_number)[:59]}\u2026"
    )
    assert error_of({"hits": [hit(path=1.5)]})[1] == "expected a non-empty string, got 1.5"
    assert error_of({"hits": [hit(path={"a": 1})]})[1] == "expected a non-empty string, got an object"
    # An object is shown as one whatever it holds, even an integer too long to print.
    assert error_of({"hits": [hit(path={"k": 10**5000})]}) == (
        "hits[0].path",
        "expected a non-empty string, got an object",
    )
    assert error_of({"hits": [hit(path=[])]})[1] == "expected a non-empty string, got an empty array"
    assert error_of({"hits": [hit(path=object())]})[1] == "expected a non-empty string, got a Python object"


# --- values from Python callers ------------------------------------------------------------


class Level(enum.IntEnum):
    ONE = 1
    TWO = 2


class Path(str):
    pass


def test_subclasses_from_python_callers_are_judged_like_their_base_types() -> None:
    hits: UserList[Any] = UserList()
    hits.extend([OrderedDict(path=Path("b"), matches=Level.TWO, last_modified_days=0)])
    assert not isinstance(hits, list)
    assert error_of({"hits": hits})[0] == "hits"

    class Hits(list[Any]):
        pass

    arguments = {
        "hits": Hits([OrderedDict(path=Path("b"), matches=Level.TWO, last_modified_days=0)]),
        "limit": Level.ONE,
    }
    assert rank(arguments) == {
        "results": [{"path": "b", "matches": 2, "last_modified_days": 0, "owner": None, "score": 200, "rank": 1}],
        "counts": {"hits": 1, "returned": 1},
    }
    assert type(rank(arguments)["results"][0]["matches"]) is int


def test_a_dict_that_hides_a_field_behind_get_is_judged_by_what_it_holds() -> None:
    class Hiding(dict[str, Any]):
        def get(self, key: str, default: Any = None) -> Any:
            return 3 if key == "matches" else super().get(key, default)

        def __getitem__(self, key: str) -> Any:
            return 3 if key == "matches" else super().__getitem__(key)

    assert error_of({"hits": [Hiding(path="a", matches=0, last_modified_days=0)]}) == (
        "hits[0].matches",
        "expected an integer >= 1, got 0",
    )


def test_equal_paths_with_different_hashes_are_duplicates() -> None:
    class Salted(str):
        def __hash__(self) -> int:
            return id(self)

    assert error_of({"hits": [hit(path=Salted("a")), hit(path=Salted("a"))]}) == (
        "hits[1].path",
        'duplicate path "a", first given at hits[0]',
    )


def test_an_int_subclass_with_odd_comparisons_is_ranked_by_its_value() -> None:
    class Odd(int):
        def __lt__(self, other: object) -> bool:
            return True

        def __ge__(self, other: object) -> bool:
            return False

    result = rank({"hits": [hit(path="a", matches=Odd(2)), hit(path="b", matches=Odd(3))]})
    assert [(r["path"], r["score"]) for r in result["results"]] == [("b", 300), ("a", 200)]


def test_an_unhashable_str_subclass_is_a_path_like_any_other() -> None:
    class Unhashable(str):
        __hash__ = None  # type: ignore[assignment]

    assert rank({"hits": [hit(path=Unhashable("a"))]})["results"][0]["path"] == "a"


def test_a_bad_hit_after_a_subclassed_one_is_still_found() -> None:
    first = OrderedDict(path="a", matches=1, last_modified_days=0)
    assert error_of({"hits": [first, {"path": "b", "matches": 0, "last_modified_days": 0}]})[0] == "hits[1].matches"


def test_keys_are_read_as_plain_strings_whatever_their_hash() -> None:
    class Salted(str):
        def __hash__(self) -> int:
            return 12345

        def __eq__(self, other: object) -> bool:
            return False

    result = rank({Salted("hits"): [{Salted("path"): "a", "matches": 1, "last_modified_days": 0}]})
    assert result["results"][0]["path"] == "a"


def test_booleans_and_huge_integers_are_shown_in_words() -> None:
    assert error_of({"hits": [hit(last_modified_days=False)]}) == (
        "hits[0].last_modified_days",
        "expected an integer >= 0, got false",
    )
    assert error_of({"hits": [hit(matches=True)]})[1] == "expected an integer >= 1, got true"
    assert error_of({"hits": [hit(path=10**4500)]}) == (
        "hits[0].path",
        "expected a non-empty string, got a very large integer",
    )
    assert error_of({"hits": [hit(owner=10**MAX_INTEGER_DIGITS)]})[1] == (
        "expected a string (or leave the field out), got a very large integer"
    )


# --- the flat checker (the search tool's arguments) -------------------------------------------

FLAT_SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "pattern": {"type": "string", "minLength": 1},
        "note": {"type": "string"},
        "strict": {"type": "boolean", "default": False},
        "limit": {"type": "integer", "minimum": 1, "default": 10},
        "offset": {"type": "integer"},
    },
    "required": ["pattern"],
}


def flat(arguments: object) -> object:
    try:
        return FlatChecker(FLAT_SCHEMA).validate(arguments)
    except InvalidArguments as error:
        return str(error)


@pytest.mark.parametrize(
    ("arguments", "expected"),
    [
        ({"pattern": "x"}, {"strict": False, "limit": 10, "pattern": "x"}),
        (
            {"pattern": "x", "limit": 3.0, "strict": True, "note": ""},
            {"strict": True, "limit": 3, "pattern": "x", "note": ""},
        ),
        ({"pattern": "x", "limit": 1}, {"strict": False, "limit": 1, "pattern": "x"}),
        (
            {"pattern": "x", "offset": -5, "other": [1], 7: "y"},
            {"strict": False, "limit": 10, "pattern": "x", "offset": -5},
        ),
        (
            {"pattern": "x", "offset": -(10**4000) + 1},
            {"strict": False, "limit": 10, "pattern": "x", "offset": -(10**4000) + 1},
        ),
        ({"pattern": "x", "offset": float(2**53)}, {"strict": False, "limit": 10, "pattern": "x", "offset": 2**53}),
        ([], "arguments: expected an object, got an empty array"),
        ({}, "pattern: missing, expected a non-empty string"),
        ({"pattern": ""}, 'pattern: expected a non-empty string, got ""'),
        ({"pattern": 1}, "pattern: expected a non-empty string, got 1"),
        ({"pattern": "x", "note": None}, "note: expected a string (or leave the field out), got null"),
        ({"pattern": "x", "strict": 1}, "strict: expected true or false (or leave the field out), got 1"),
        ({"pattern": "x", "limit": True}, "limit: expected an integer >= 1 (or leave the field out), got true"),
        ({"pattern": "x", "limit": 0}, "limit: expected an integer >= 1 (or leave the field out), got 0"),
        ({"pattern": "x", "limit": 2.5}, "limit: expected an integer >= 1 (or leave the field out), got 2.5"),
        (
            {"pattern": "x", "offset": float(2**53) * 2},
            "offset: expected an integer (or leave the field out), got 1.8014398509481984e+16",
        ),
        ({"pattern": "x", "limit": 10**4000}, "limit: expected an integer of at most 4000 digits, got a larger one"),
        (
            {"pattern": "x", "offset": -(10**4000)},
            "offset: expected an integer of at most 4000 digits, got a longer one",
        ),
        (
            {"pattern": "x", "limit": -(10**4000)},
            "limit: expected an integer >= 1 (or leave the field out), got a very large negative integer",
        ),
        ({"limit": 0}, "limit: expected an integer >= 1 (or leave the field out), got 0"),  # before the missing field
        ({"other": 1, "limit": 0, "pattern": "x"}, "limit: expected an integer >= 1 (or leave the field out), got 0"),
    ],
)
def test_the_flat_checker_takes_the_values_its_schema_says_and_names_the_first_problem(
    arguments: object, expected: object
) -> None:
    assert flat(arguments) == expected


def test_the_flat_checker_refuses_a_schema_it_has_no_rule_for() -> None:
    with pytest.raises(NotImplementedError, match=r"^x: the flat checker has no rule for type 'number'$"):
        FlatChecker({"type": "object", "properties": {"x": {"type": "number"}}})
    with pytest.raises(NotImplementedError, match="maximum"):
        FlatChecker({"type": "object", "properties": {"x": {"type": "integer", "maximum": 3}}})


@pytest.mark.parametrize("field", ["matches", "last_modified_days"])
def test_a_huge_negative_integer_under_a_minimum_is_refused_by_the_bound(field: str) -> None:
    """Below a minimum the bound speaks, not the digit limit (which is for integers with no lower bound)."""
    hit: dict[str, Any] = {"path": "a", "matches": 1, "last_modified_days": 0, field: -(10**5000)}
    bound = 1 if field == "matches" else 0
    with pytest.raises(InvalidArguments) as raised:
        rank({"hits": [hit]})
    assert str(raised.value) == f"hits[0].{field}: expected an integer >= {bound}, got a very large negative integer"
