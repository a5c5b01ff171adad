"""Properties that must hold for every input, checked with generated hits."""

from __future__ import annotations

import copy
import itertools
import json
import random
from typing import Any

import jsonschema
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from codescout_mcp import InvalidArguments, rank
from codescout_mcp.core.contract import INPUT_SCHEMA, MAX_INTEGER_DIGITS
from codescout_mcp.core.ranking import utf16_order
from tests.helpers import as_json, reference_rank, reference_verdict

# Characters chosen to hit every ordering trap: ASCII, Latin-1, the top of the BMP (which
# sorts after surrogates in UTF-16), astral characters, and ECMAScript-only whitespace.
PATH_CHARS = st.sampled_from(
    [*"ab/._ B", "\u00e9", "\ue000", "\uffff", "\uff5e", "\U0001f600", "\U0001f601", "\U00010000", "\u3000"]
)
OWNER_CHARS = st.sampled_from([*" \t\nab@-", "\u00a0", "\u3000", "\ufeff", "\u001f", "\u200b", "\U0001f98a"])

paths = st.text(PATH_CHARS, min_size=1, max_size=6)
counts = st.one_of(st.integers(1, 60), st.integers(1, 10**30), st.sampled_from([1.0, 2.0, 60.0]))
days = st.one_of(st.integers(0, 6000), st.integers(0, 10**30), st.sampled_from([0.0, -0.0, 3.0, 2.0**53]))
hit_strategy: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {"path": paths, "matches": counts, "last_modified_days": days},
    optional={"owner": st.text(OWNER_CHARS, max_size=4), "note": st.integers()},
)
hit_lists = st.lists(hit_strategy, min_size=1, max_size=25, unique_by=lambda h: h["path"])
limits = st.one_of(st.none(), st.integers(1, 30), st.sampled_from([1.0, 3.0]))


def one_of_values(values: list[Any]) -> st.SearchStrategy[Any]:
    """sampled_from for values hypothesis cannot print (integers of thousands of digits)."""
    return st.integers(0, len(values) - 1).map(lambda i: values[i])


def arguments_of(hits: list[dict[str, Any]], limit: int | float | None) -> dict[str, Any]:
    return {"hits": hits} if limit is None else {"hits": hits, "limit": limit}


@given(hit_lists, limits)
def test_result_matches_the_reference_reading_of_the_spec(hits: list[dict[str, Any]], limit: int | None) -> None:
    arguments = arguments_of(hits, limit)
    assert as_json(rank(arguments)) == as_json(reference_rank(arguments))


@given(hit_lists, limits, st.randoms(use_true_random=False))
def test_output_does_not_depend_on_input_order(
    hits: list[dict[str, Any]], limit: int | None, rnd: random.Random
) -> None:
    shuffled = hits[:]
    rnd.shuffle(shuffled)
    assert as_json(rank(arguments_of(shuffled, limit))) == as_json(rank(arguments_of(hits, limit)))


@given(hit_lists, limits)
def test_counts_ranks_and_pairwise_order(hits: list[dict[str, Any]], limit: int | None) -> None:
    result = rank(arguments_of(hits, limit))
    results = result["results"]
    assert result["counts"] == {"hits": len(hits), "returned": min(int(limit or 10), len(hits))}
    assert [r["rank"] for r in results] == list(range(1, len(results) + 1))
    for r in results:
        assert r["score"] == r["matches"] * 100 - r["last_modified_days"]
        assert type(r["matches"]) is int and type(r["last_modified_days"]) is int
    for a, b in itertools.pairwise(results):
        key_a = (-a["score"], -a["matches"], a["last_modified_days"], a["path"].encode("utf-16-be", "surrogatepass"))
        key_b = (-b["score"], -b["matches"], b["last_modified_days"], b["path"].encode("utf-16-be", "surrogatepass"))
        assert key_a < key_b
    # Nothing left out ranks above anything returned.
    returned = {r["path"] for r in results}
    if results:
        worst = results[-1]
        for h in hits:
            if h["path"] not in returned:
                assert int(h["matches"]) * 100 - int(h["last_modified_days"]) <= worst["score"]


@given(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12))
def test_utf16_order_agrees_with_utf16_encoding(a: str, b: str) -> None:
    ea, eb = a.encode("utf-16-be"), b.encode("utf-16-be")
    assert (utf16_order(a) < utf16_order(b)) == (ea < eb)


# --- one invalid change to a valid input: an error at that place, and no result ----------

BAD_FIELD_VALUES: dict[str, list[Any]] = {
    "path": ["", 3, None, [], {}, True],
    "matches": [0, -1, 1.5, "1", True, None, [], 10**MAX_INTEGER_DIGITS, float("inf"), float("nan"), 2.0**53 + 2],
    "last_modified_days": [-1, 0.5, "0", False, None, {}, 10**MAX_INTEGER_DIGITS, -(10**4500), 1e300],
    "owner": [None, 1, [], {}, False],
}


@st.composite
def single_mutation(draw: st.DrawFn) -> tuple[dict[str, Any], str]:
    hits = copy.deepcopy(draw(hit_lists))
    limit = draw(limits)
    arguments = arguments_of(hits, limit)
    kind = draw(st.sampled_from(["field", "missing", "hit", "limit", "hits", "duplicate"]))
    index = draw(st.integers(0, len(hits) - 1))
    if kind == "field":
        field = draw(st.sampled_from(sorted(BAD_FIELD_VALUES)))
        hits[index][field] = draw(one_of_values(BAD_FIELD_VALUES[field]))
        return arguments, f"hits[{index}].{field}"
    if kind == "missing":
        field = draw(st.sampled_from(["path", "matches", "last_modified_days"]))
        del hits[index][field]
        return arguments, f"hits[{index}].{field}"
    if kind == "hit":
        hits[index] = draw(st.sampled_from(["x", None, 1, [], True]))
        return arguments, f"hits[{index}]"
    if kind == "limit":
        arguments["limit"] = draw(
            one_of_values([0, -1, 1.5, "1", True, None, [], 10**MAX_INTEGER_DIGITS, -(10**4500), 1e20])
        )
        return arguments, "limit"
    if kind == "hits":
        replacement: Any = draw(st.sampled_from([[], {}, None, "hits", "missing"]))
        if replacement == "missing":
            del arguments["hits"]
        else:
            arguments["hits"] = replacement
        return arguments, "hits"
    other = draw(st.integers(0, len(hits) - 1).filter(lambda k: k != index)) if len(hits) > 1 else None
    if other is None:
        hits.append(dict(hits[0]))
        return arguments, f"hits[{len(hits) - 1}].path"
    hits[max(index, other)]["path"] = hits[min(index, other)]["path"]
    return arguments, f"hits[{max(index, other)}].path"


@given(single_mutation())
def test_any_single_invalid_change_is_one_error_at_its_location(case: tuple[dict[str, Any], str]) -> None:
    arguments, location = case
    with pytest.raises(InvalidArguments) as caught:
        rank(arguments)
    assert caught.value.location == location
    assert "\n" not in str(caught.value)
    assert len(str(caught.value)) < 400


# --- rank() agrees with the spec on loose inputs, through subclasses that lie --------------

_SCHEMA_VALIDATOR = jsonschema.Draft202012Validator(INPUT_SCHEMA)


class LyingInt(int):
    """An int whose comparisons and hash lie; its value is what int's storage holds."""

    def __lt__(self, other: object) -> bool:
        return True

    def __ge__(self, other: object) -> bool:
        return True

    def __eq__(self, other: object) -> bool:
        return False

    def __hash__(self) -> int:
        return 7


class LyingStr(str):
    """A str that cannot be hashed and compares equal to nothing."""

    __hash__ = None  # type: ignore[assignment]

    def __eq__(self, other: object) -> bool:
        return False


class SaltedStr(str):
    """Equal strings with different hashes."""

    _salt = itertools.count()

    def __hash__(self) -> int:
        return next(self._salt)


class LyingFloat(float):
    def is_integer(self) -> bool:
        return True


class LyingDict(dict[str, Any]):
    """A dict whose lookups hide `matches` behind a valid-looking value."""

    def get(self, key: str, default: Any = None) -> Any:
        return 5 if key == "matches" else super().get(key, default)

    def __getitem__(self, key: str) -> Any:
        return 5 if key == "matches" else super().__getitem__(key)


class LyingList(list[Any]):
    def __iter__(self) -> Any:
        return iter([])

    def __len__(self) -> int:
        return 3


def disguise(value: Any, rnd: random.Random) -> Any:
    """The same plain value, maybe dressed in a subclass whose methods lie about it."""
    if rnd.random() < 0.5:
        return value
    if type(value) is int:
        return LyingInt(value)
    if type(value) is str:
        return rnd.choice([LyingStr, SaltedStr])(value)
    if type(value) is float:
        return LyingFloat(value)
    if type(value) is dict:
        return LyingDict({k: disguise(v, rnd) for k, v in value.items()})
    if type(value) is list:
        return LyingList([disguise(v, rnd) for v in value])
    return value


scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, -0.0, 1.0, 2.5, -1.0, 1e300, 2.0**53, 2.0**53 + 2, float("nan"), float("inf")]),
    one_of_values([10**MAX_INTEGER_DIGITS - 1, 10**MAX_INTEGER_DIGITS, -(10**4500), 10**4500]),
    st.sampled_from(["", "a", "b", " ", "3"]),
)
loose_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=2), max_leaves=3)
loose_hits = st.one_of(
    hit_strategy,
    st.dictionaries(st.sampled_from(["path", "matches", "last_modified_days", "owner", "x"]), loose_values, max_size=5),
    loose_values,
)
loose_arguments = st.one_of(
    st.fixed_dictionaries({"hits": st.lists(loose_hits, max_size=4)}, optional={"limit": loose_values}),
    st.dictionaries(st.sampled_from(["hits", "limit", "x"]), loose_values, max_size=3),
    loose_values,
)


@settings(max_examples=500)
@given(loose_arguments, st.randoms(use_true_random=False))
def test_rank_agrees_with_the_spec_whatever_the_python_types(arguments: Any, rnd: random.Random) -> None:
    verdict = reference_verdict(arguments)
    if verdict:
        assert _SCHEMA_VALIDATOR.is_valid(arguments)  # the spec's rules include the schema's
    disguised = disguise(copy.deepcopy(arguments), rnd)
    if verdict:
        assert as_json(rank(disguised)) == as_json(reference_rank(arguments))
    else:
        with pytest.raises(InvalidArguments) as caught:
            rank(disguised)
        assert "\n" not in str(caught.value)


def test_vectors_agree_with_the_reference_verdict() -> None:
    from tests.helpers import load_vectors

    for vector in load_vectors():
        assert reference_verdict(vector["arguments"]) == ("expected" in vector), vector["name"]
        assert _SCHEMA_VALIDATOR.is_valid(vector["arguments"]) or "error" in vector, vector["name"]


def test_results_round_trip_as_json() -> None:
    arguments = {"hits": [{"path": "a", "matches": 2.0, "last_modified_days": 0}]}
    assert json.loads(json.dumps(rank(arguments)))["results"][0]["matches"] == 2
