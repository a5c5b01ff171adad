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
from codescout_mcp.contract import INPUT_SCHEMA, MAX_INTEGER_DIGITS
from codescout_mcp.ranking import utf16_order
from codescout_mcp.validate import fast_verdict, validate
from tests.helpers import as_json, reference_rank

# Characters chosen to hit every ordering trap: ASCII, Latin-1, the top of the BMP (which
# sorts after surrogates in UTF-16), astral characters, and ECMAScript-only whitespace.
PATH_CHARS = st.sampled_from([*"ab/._ B", "\u00e9", "\ue000", "\uff5e", "\U0001f600", "\U00010000", "\u3000"])
OWNER_CHARS = st.sampled_from([*" \t\nab@-", "\u00a0", "\u3000", "\ufeff", "\u001f", "\u200b", "\U0001f98a"])

paths = st.text(PATH_CHARS, min_size=1, max_size=6)
counts = st.one_of(st.integers(1, 60), st.integers(1, 10**30))
days = st.one_of(st.integers(0, 6000), st.integers(0, 10**30))
hit_strategy = st.fixed_dictionaries(
    {"path": paths, "matches": counts, "last_modified_days": days},
    optional={"owner": st.text(OWNER_CHARS, max_size=4), "note": st.integers()},
)
hit_lists = st.lists(hit_strategy, min_size=1, max_size=25, unique_by=lambda h: h["path"])
limits = st.one_of(st.none(), st.integers(1, 30))


def arguments_of(hits: list[dict[str, Any]], limit: int | None) -> dict[str, Any]:
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
    assert result["counts"] == {"hits": len(hits), "returned": min(limit or 10, len(hits))}
    assert [r["rank"] for r in results] == list(range(1, len(results) + 1))
    for r in results:
        assert r["score"] == r["matches"] * 100 - r["last_modified_days"]
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
                assert h["matches"] * 100 - h["last_modified_days"] <= worst["score"]


@given(st.text(min_size=1, max_size=12), st.text(min_size=1, max_size=12))
def test_utf16_order_agrees_with_utf16_encoding(a: str, b: str) -> None:
    ea, eb = a.encode("utf-16-be"), b.encode("utf-16-be")
    assert (utf16_order(a) < utf16_order(b)) == (ea < eb)


# --- one invalid change to a valid input: an error at that place, and no result ----------

BAD_FIELD_VALUES: dict[str, list[Any]] = {
    "path": ["", 3, None, [], {}, True],
    "matches": [0, -1, 1.5, "1", True, None, [], 10**MAX_INTEGER_DIGITS, float("inf")],
    "last_modified_days": [-1, 0.5, "0", False, None, {}, 10**MAX_INTEGER_DIGITS],
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
        hits[index][field] = draw(st.sampled_from(BAD_FIELD_VALUES[field]))
        return arguments, f"hits[{index}].{field}"
    if kind == "missing":
        field = draw(st.sampled_from(["path", "matches", "last_modified_days"]))
        del hits[index][field]
        return arguments, f"hits[{index}].{field}"
    if kind == "hit":
        hits[index] = draw(st.sampled_from(["x", None, 1, [], True]))
        return arguments, f"hits[{index}]"
    if kind == "limit":
        arguments["limit"] = draw(st.sampled_from([0, -1, 1.5, "1", True, None, [], 10**MAX_INTEGER_DIGITS]))
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


# --- the compiled accept path and jsonschema must give one verdict -------------------------

_SCHEMA_VALIDATOR = jsonschema.Draft202012Validator(INPUT_SCHEMA)
_HUGE = 10**MAX_INTEGER_DIGITS


def reference_verdict(arguments: Any) -> bool:
    """jsonschema's verdict plus the contract's two rules a schema cannot say."""
    if not _SCHEMA_VALIDATOR.is_valid(arguments):
        return False
    ints = [arguments.get("limit", 1)]
    for h in arguments["hits"]:
        ints += [h["matches"], h["last_modified_days"]]
    if any(isinstance(v, int) and v >= _HUGE for v in ints):
        return False
    paths = [h["path"] for h in arguments["hits"]]
    return len(set(paths)) == len(paths)


class Count(int):
    pass


class Text(str):
    pass


json_scalars = st.one_of(
    st.sampled_from([Count(2), Count(0), Text("p"), Text("")]),
    st.none(),
    st.booleans(),
    st.integers(-3, 3),
    st.sampled_from([0.0, 1.0, 2.5, -1.0, 1e300, _HUGE]),
    st.sampled_from(["", "a", "b", " ", "3"]),
)
loose_values = st.recursive(json_scalars, lambda inner: st.lists(inner, max_size=2), max_leaves=3)
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


@settings(max_examples=400)
@given(loose_arguments)
def test_compiled_checker_agrees_with_jsonschema(arguments: Any) -> None:
    verdict = reference_verdict(arguments)
    assert fast_verdict(arguments) == verdict
    if verdict:
        validate(arguments)
    else:
        with pytest.raises(InvalidArguments):
            validate(arguments)


@given(hit_lists, limits)
def test_compiled_checker_accepts_every_valid_input(hits: list[dict[str, Any]], limit: int | None) -> None:
    arguments = arguments_of(hits, limit)
    assert reference_verdict(arguments)
    assert fast_verdict(arguments)


def test_vectors_agree_with_jsonschema_too() -> None:
    from tests.helpers import load_vectors

    for vector in load_vectors():
        assert fast_verdict(vector["arguments"]) == ("expected" in vector), vector["name"]
        assert reference_verdict(vector["arguments"]) == ("expected" in vector), vector["name"]


def test_results_round_trip_as_json() -> None:
    arguments = {"hits": [{"path": "a", "matches": 2.0, "last_modified_days": 0}]}
    assert json.loads(json.dumps(rank(arguments)))["results"][0]["matches"] == 2
