"""The ranking rule: score, order, top-k, pure functions on checked hits; and `rank`, the one handler
both fronts call (an arguments object in, the ranked answer out). No I/O."""

from __future__ import annotations

import heapq
from itertools import compress, repeat
from operator import attrgetter, itemgetter, mul, sub

from codescout_mcp.core.validate import validate

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, Final

    Hit = dict[str, Any]
    Row = dict[str, Any]

# ECMAScript's white space and line terminators (what String.prototype.trim removes): the
# brief's tool is JavaScript, so "whitespace only" means this set, not str.isspace().
JS_WHITESPACE: Final = (
    "\t\n\v\f\r \u00a0\u1680\u2000\u2001\u2002\u2003\u2004\u2005\u2006\u2007\u2008\u2009\u200a"
    "\u2028\u2029\u202f\u205f\u3000\ufeff"
)


def score(matches: int, last_modified_days: int) -> int:
    """The pinned score: a hundred points a match, less one a day of age; never clamped."""
    return matches * 100 - last_modified_days


def owner_or_none(owner: object) -> str | None:
    """The owner as given, or None when it is absent, empty or whitespace only."""
    if isinstance(owner, str) and owner.strip(JS_WHITESPACE):
        return owner
    return None


def utf16_order(path: str) -> str:
    """A string whose code-point order is `path`'s UTF-16 code-unit order.

    Only characters above U+FFFF sort differently (their surrogates, D800-DFFF, sort below
    E000-FFFF), so they are spelled as their surrogate pairs; other strings come back as is.
    """
    if path.isascii() or max(path) <= "\uffff":
        return path
    units = []
    for char in path:
        code = ord(char)
        if code > 0xFFFF:
            code -= 0x10000
            units.append(chr(0xD800 | (code >> 10)) + chr(0xDC00 | (code & 0x3FF)))
        else:
            units.append(char)
    return "".join(units)


def _order(matches: int, days: int, path: str) -> tuple[int, int, int, str]:
    """The full order: best score first, then more matches, fewer days, the path in UTF-16."""
    return (days - matches * 100, -matches, days, path if path.isascii() else utf16_order(path))


def _key(hit: Hit) -> tuple[int, int, int, str]:
    return _order(hit["matches"], hit["last_modified_days"], hit["path"])


def _exact_key(hit: Hit) -> tuple[int, int, int, str]:
    return _order(int(hit["matches"]), int(hit["last_modified_days"]), hit["path"])


def _struct_key(hit: Any) -> tuple[int, int, int, str]:
    return _order(hit.matches, hit.last_modified_days, hit.path)


_MATCHES: Final = itemgetter("matches")
_DAYS: Final = itemgetter("last_modified_days")
_MATCHES_OF: Final = attrgetter("matches")
_DAYS_OF: Final = attrgetter("last_modified_days")


def top(hits: list[Hit], limit: int, *, has_integral_floats: bool) -> list[Hit]:
    """The best `limit` hits, best first: a bounded heap, never a sort of all of them.

    Most hits score below the `limit`-th best score, so that score is found first, at C
    speed (every score in one pass of `map`, then a bounded heap of plain integers), and
    only the hits that reach it are ordered by the full key.
    """
    if has_integral_floats:  # scores of floats are not worth a floor: order them all exactly
        return heapq.nsmallest(limit, hits, key=_exact_key)
    return _best(hits, limit, _MATCHES, _DAYS, _key)


def _best(
    hits: list[Any],
    limit: int,
    matches_of: Callable[[Any], int],
    days_of: Callable[[Any], int],
    key: Callable[[Any], Any],
) -> list[Any]:
    """`top` for hits whose fields `matches_of` and `days_of` read as exact integers."""
    if limit < len(hits):
        hits = _reaching(hits, limit, matches_of, days_of)
    # Paths are unique, so the key is a total order and ties never fall to input order.
    return heapq.nsmallest(limit, hits, key=key)


# The floor is first looked for in a sample of about this many hits.
SAMPLE: Final = 4_096


def _reaching(
    hits: list[Any], limit: int, matches_of: Callable[[Any], int], days_of: Callable[[Any], int]
) -> list[Any]:
    """The hits whose score reaches the `limit`-th best (and maybe a few more): all that can be in the top.

    The `limit`-th best score of a sample (every n-th hit) is at most the `limit`-th best of
    all, so every hit that reaches the latter reaches it too; and a hit's score is at most a
    hundred times its matches (days are never negative), so a hit with too few matches to reach
    it cannot be in the top. Those two sieves, matches first (no arithmetic, no new integer),
    leave a few hits whose `limit`-th best score is the real floor. Every pass is at C speed
    (`map`, `compress`); none is a Python loop over every hit.
    """
    if len(hits) >= 4 * SAMPLE and limit * 16 <= SAMPLE:
        step = len(hits) // SAMPLE
        sample_floor = heapq.nlargest(limit, _scores(hits[::step], matches_of, days_of))[-1]
        fewest = -(-sample_floor // 100)  # the fewest matches that can reach it
        if fewest > 1:
            hits = list(compress(hits, map(fewest.__le__, map(matches_of, hits))))
        if len(hits) > 16 * limit * step:  # (matches alike: the sieve let most through)
            hits = list(compress(hits, map(sample_floor.__le__, _scores(hits, matches_of, days_of))))
        if len(hits) <= limit:
            return hits
    scores = list(_scores(hits, matches_of, days_of))
    floor = heapq.nlargest(limit, scores)[-1]
    return list(compress(hits, map(floor.__le__, scores)))


def _scores(hits: list[Any], matches_of: Callable[[Any], int], days_of: Callable[[Any], int]) -> Iterator[int]:
    return map(sub, map(mul, map(matches_of, hits), repeat(100)), map(days_of, hits))


def result_row(hit: Hit, rank: int) -> Row:
    """One result entry, keys in the contract's order, integers exact."""
    return _row(hit["path"], int(hit["matches"]), int(hit["last_modified_days"]), hit.get("owner"), rank)


def _row(path: str, matches: int, days: int, owner: object, rank: int) -> Row:
    return {
        "path": path,
        "matches": matches,
        "last_modified_days": days,
        "owner": owner_or_none(owner),
        "score": score(matches, days),
        "rank": rank,
    }


def ranked(hits: list[Hit], limit: int, *, has_integral_floats: bool) -> dict[str, Any]:
    """The whole answer for checked hits: results best first, and the counts."""
    results = [
        result_row(hit, rank) for rank, hit in enumerate(top(hits, limit, has_integral_floats=has_integral_floats), 1)
    ]
    return {"results": results, "counts": {"hits": len(hits), "returned": len(results)}}


def ranked_structs(hits: list[Any], limit: int) -> dict[str, Any]:
    """`ranked` for hits decoded into structs by `fastpath` (fields as attributes, integers exact,
    an absent owner a value that is not a string): the same rows, in the same order."""
    best = _best(hits, limit, _MATCHES_OF, _DAYS_OF, _struct_key)
    results = [_row(hit.path, hit.matches, hit.last_modified_days, hit.owner, rank) for rank, hit in enumerate(best, 1)]
    return {"results": results, "counts": {"hits": len(hits), "returned": len(results)}}


def rank(arguments: object) -> dict[str, Any]:
    """Rank the hits in a tool arguments object; raise InvalidArguments if it breaks the contract.

    >>> rank({"hits": [{"path": "a.py", "matches": 2, "last_modified_days": 5}]})["results"][0]["score"]
    195
    """
    checked = validate(arguments)
    return ranked(checked.hits, checked.limit, has_integral_floats=checked.has_integral_floats)
