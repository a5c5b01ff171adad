"""Check a tool's arguments against the contract: fast when they are valid, precise when not.

Two engines read the one hand-written schema in `contract.py`:

* the accept path is Python source compiled from that schema when this module loads (a
  type test and a comparison per field, duplicates found in the same pass), so a million
  valid hits cost well under a second and `jsonschema` is never imported;
* when that path refuses, `jsonschema` checks the offending part and the error is
  described from what it reports, choosing the first offending location in the input's
  own order.

The tests check that both engines give the same verdict on generated inputs.
"""

from __future__ import annotations

import json

from codescout_mcp.contract import DEFAULT_LIMIT, INPUT_SCHEMA, MAX_INTEGER_DIGITS

# Typing names are for the checker only: importing typing costs `codescout rank` start-up time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, Final

# What the compiled accept path understands. A schema keyword outside these sets stops the
# module from loading rather than being skipped in silence.
_ANNOTATIONS: Final = frozenset({"$schema", "description", "title", "default"})
_KEYWORDS: Final = frozenset({"type", "properties", "required", "minimum", "minLength", "minItems", "items"})

_HUGE: Final = 10**MAX_INTEGER_DIGITS
_UNIQUE_FIELD: Final = "path"
ROOT: Final = "arguments"


class InvalidArguments(ValueError):
    """Arguments that break the contract: where (`hits[2].matches`) and what was expected."""

    def __init__(self, location: str, message: str) -> None:
        super().__init__(f"{location}: {message}")
        self.location = location
        self.message = message


class Arguments:
    """Arguments that passed every check, as the ranking reads them."""

    __slots__ = ("has_integral_floats", "hits", "limit")

    def __init__(self, hits: list[dict[str, Any]], limit: int, has_integral_floats: bool) -> None:
        self.hits = hits
        self.limit = limit
        # True when some integer field was written with a zero fraction (`3.0`), so ranking
        # must turn values into exact integers before doing arithmetic on them.
        self.has_integral_floats = has_integral_floats


def validate(arguments: object) -> Arguments:
    """Return the checked arguments, or raise InvalidArguments for the first violation."""
    if _top_level_ok(arguments):
        assert isinstance(arguments, dict)
        hits = arguments["hits"]
        bad, floats = _scan_hits(hits)
        if bad < 0:
            return Arguments(hits, arguments.get("limit", DEFAULT_LIMIT), floats)
    return _validate_slowly(arguments)


# --- the accept path, compiled from the schema -------------------------------------------


def _check_keywords(schema: dict[str, Any], where: str) -> None:
    unknown = set(schema) - _KEYWORDS - _ANNOTATIONS
    if unknown:
        raise NotImplementedError(f"{where}: the compiled checker has no rule for {sorted(unknown)}")


def _value_lines(schema: dict[str, Any], var: str, fail: str, where: str) -> list[str]:
    """Statements that run `fail` unless `var` holds a value of a scalar or array field."""
    _check_keywords(schema, where)
    kind = schema["type"]
    # Each test tries the exact built-in type first (one cheap check for JSON-parsed data)
    # and then isinstance, so subclasses passed through the Python API get jsonschema's verdict.
    if kind == "string":
        cond = f"(type({var}) is str or isinstance({var}, str))"
        if "minLength" in schema:
            cond += f" and len({var}) >= {int(schema['minLength'])}"
        return [f"if not ({cond}): {fail}"]
    if kind == "integer":
        low = int(schema.get("minimum", -_HUGE))
        # Integral floats (3.0) are valid but rare: they leave the fast test and set a flag.
        return [
            f"if not (type({var}) is int and {low} <= {var} < _HUGE):",
            f"    if isinstance({var}, float) and {var}.is_integer() and {var} >= {low}: floats = True",
            f"    elif not (isinstance({var}, int) and not isinstance({var}, bool) and {low} <= {var} < _HUGE):",
            f"        {fail}",
        ]
    if kind == "array":
        cond = f"(type({var}) is list or isinstance({var}, list))"
        return [f"if not ({cond} and len({var}) >= {int(schema.get('minItems', 0))}): {fail}"]
    raise NotImplementedError(f"{where}: the compiled checker has no rule for type {kind!r}")


def _object_lines(schema: dict[str, Any], var: str, fail: str, where: str, *, unique: str | None = None) -> list[str]:
    """Statements that run `fail` unless `var` is an object whose fields pass (items unchecked)."""
    _check_keywords(schema, where)
    if schema["type"] != "object":
        raise NotImplementedError(f"{where}: expected an object schema")
    lines = [f"if type({var}) is not dict and not isinstance({var}, dict): {fail}"]
    required = set(schema.get("required", ()))
    for name, sub in schema["properties"].items():
        lines.append(f"v = {var}.get({name!r}, _ABSENT)")
        checks = _value_lines(sub, "v", fail, f"{where}.{name}")
        if name not in required:
            lines.append("if v is not _ABSENT:")
            checks = ["    " + line for line in checks]
        lines.extend(checks)
        if name == unique:
            lines.append("u = v")
    return lines


def _compile(source: str, name: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {"_ABSENT": _ABSENT, "_HUGE": _HUGE}
    exec(compile(source, f"<codescout compiled {name}>", "exec"), namespace)
    function: Callable[..., Any] = namespace[name]
    return function


def _build_top_level_check(schema: dict[str, Any]) -> Callable[[object], bool]:
    # Integral floats in `limit` are left to the slow path: it is one value, not a million.
    body = _object_lines(schema, "args", "return False", ROOT)
    source = "def top_level_ok(args):\n    floats = False\n"
    source += "".join(f"    {line}\n" for line in body)
    source += "    return not floats\n"
    check: Callable[[object], bool] = _compile(source, "top_level_ok")
    return check


def _build_hit_scanner(item_schema: dict[str, Any]) -> Callable[[list[Any]], tuple[int, bool]]:
    body = _object_lines(item_schema, "h", "return i, floats", "hits[]", unique=_UNIQUE_FIELD)
    source = "def scan_hits(hits):\n    seen = set()\n    add = seen.add\n    floats = False\n    i = 0\n"
    source += "    for h in hits:\n"
    source += "".join(f"        {line}\n" for line in body)
    # A duplicate path is the one that leaves the set no larger than it was.
    source += "        add(u)\n        i += 1\n        if len(seen) != i: return i - 1, floats\n"
    source += "    return -1, floats\n"
    scanner: Callable[[list[Any]], tuple[int, bool]] = _compile(source, "scan_hits")
    return scanner


class _Absent:
    def __repr__(self) -> str:
        return "<absent>"


_ABSENT: Final = _Absent()


def _without_items(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with the hits' item rules left out: the top level alone."""
    shallow = dict(schema)
    shallow["properties"] = dict(schema["properties"])
    hits = dict(shallow["properties"]["hits"])
    del hits["items"]
    shallow["properties"]["hits"] = hits
    return shallow


_ITEM_SCHEMA: Final[dict[str, Any]] = INPUT_SCHEMA["properties"]["hits"]["items"]
_TOP_LEVEL_SCHEMA: Final[dict[str, Any]] = _without_items(INPUT_SCHEMA)
_INTEGER_FIELDS: Final = tuple(k for k, v in _ITEM_SCHEMA["properties"].items() if v["type"] == "integer")
_top_level_ok: Final = _build_top_level_check(_TOP_LEVEL_SCHEMA)
_scan_hits: Final = _build_hit_scanner(_ITEM_SCHEMA)


def fast_verdict(arguments: object) -> bool:
    """The compiled path's verdict alone (for the tests that hold it to jsonschema's)."""
    if not isinstance(arguments, dict):
        return False
    # The top-level check leaves integral floats in `limit` to the slow path; count them valid.
    top = {**arguments, "limit": _integral(arguments.get("limit", DEFAULT_LIMIT))}
    return _top_level_ok(top) and _scan_hits(arguments["hits"])[0] < 0


def _integral(value: object) -> object:
    if isinstance(value, float) and value.is_integer():
        return int(value)
    return value


# --- the precise path: which location, and what was expected -----------------------------

Path = tuple[str | int, ...]


class _Problem:
    __slots__ = ("message", "order", "path")

    def __init__(self, order: tuple[int, ...], path: Path, message: str) -> None:
        self.order = order  # where it stands in the input, for choosing the first
        self.path = path
        self.message = message


def _validate_slowly(arguments: object) -> Arguments:
    problem = min(_problems(arguments), key=lambda p: p.order, default=None)
    if problem is not None:
        raise InvalidArguments(format_location(problem.path), problem.message)
    assert isinstance(arguments, dict)
    hits = arguments["hits"]
    index, floats = _scan_hits(hits)
    if index >= 0:  # pragma: no cover - the tests hold the two engines to one verdict
        raise AssertionError(f"the compiled checker refused hits[{index}] but jsonschema accepted it")
    return Arguments(hits, int(arguments.get("limit", DEFAULT_LIMIT)), floats)


def _problems(arguments: object) -> Iterator[_Problem]:
    from jsonschema import Draft202012Validator

    if not isinstance(arguments, dict):
        yield _Problem((), (), f"expected an object, got {_show(arguments)}")
        return
    top = Draft202012Validator(_TOP_LEVEL_SCHEMA)
    yield from _from_jsonschema(top.iter_errors(arguments), arguments, _TOP_LEVEL_SCHEMA, (), ())
    limit = arguments.get("limit")
    if isinstance(limit, int) and not isinstance(limit, bool) and limit >= _HUGE:
        yield _too_large(arguments, ("limit",), ())
    hits = arguments.get("hits")
    if not isinstance(hits, list) or not hits:
        return
    index, _ = _scan_hits(hits)
    if index < 0:
        return
    hit = hits[index]
    base: Path = ("hits", index)
    base_order = (_key_order(arguments, "hits"), index)
    items = Draft202012Validator(_ITEM_SCHEMA)
    yield from _from_jsonschema(items.iter_errors(hit), hit, _ITEM_SCHEMA, base, base_order)
    if not isinstance(hit, dict):
        return
    for name in _INTEGER_FIELDS:
        value = hit.get(name)
        if isinstance(value, int) and not isinstance(value, bool) and value >= _HUGE:
            yield _too_large(hit, (*base, name), base_order)
    path = hit.get(_UNIQUE_FIELD)
    if isinstance(path, str):
        first = next((k for k in range(index) if hits[k][_UNIQUE_FIELD] == path), None)
        if first is not None:
            yield _Problem(
                (*base_order, _key_order(hit, _UNIQUE_FIELD)),
                (*base, _UNIQUE_FIELD),
                f"duplicate path {_show(path)}, first given at {format_location(('hits', first))}",
            )


def _from_jsonschema(
    errors: Iterator[Any], instance: Any, schema: dict[str, Any], base: Path, base_order: tuple[int, ...]
) -> Iterator[_Problem]:
    for error in errors:
        rel: Path = tuple(error.absolute_path)
        order = base_order + _order_of(instance, rel)
        if error.validator == "required":
            present = error.instance
            for name in error.validator_value:
                if name not in present:
                    sub = error.schema["properties"][name]
                    yield _Problem(
                        (*order, len(present) + error.validator_value.index(name)),
                        (*base, *rel, name),
                        f"missing, expected {_describe(sub, required=True)}",
                    )
            continue
        sub = _subschema(schema, rel)
        required = _is_required(schema, rel)
        if error.validator in ("type", "minimum", "minLength", "minItems"):
            message = f"expected {_describe(sub, required=required)}, got {_show(error.instance)}"
        else:  # pragma: no cover - the schema uses no other keyword
            message = error.message
        yield _Problem(order, (*base, *rel), message)


def _too_large(container: dict[str, Any], path: Path, base_order: tuple[int, ...]) -> _Problem:
    return _Problem(
        (*base_order, _key_order(container, path[-1])),
        path,
        f"expected an integer of at most {MAX_INTEGER_DIGITS} digits, got a larger one",
    )


def _key_order(obj: dict[str, Any], key: str | int) -> int:
    for position, name in enumerate(obj):
        if name == key:
            return position
    return len(obj)


def _order_of(instance: Any, rel: Path) -> tuple[int, ...]:
    order: list[int] = []
    for step in rel:
        if isinstance(instance, dict):
            order.append(_key_order(instance, step))
        else:
            assert isinstance(step, int)
            order.append(step)
        instance = instance[step]
    return tuple(order)


def _subschema(schema: dict[str, Any], rel: Path) -> dict[str, Any]:
    for step in rel:
        schema = schema["items"] if isinstance(step, int) else schema["properties"][step]
    return schema


def _is_required(schema: dict[str, Any], rel: Path) -> bool:
    if not rel or isinstance(rel[-1], int):
        return True
    parent = _subschema(schema, rel[:-1])
    return rel[-1] in parent.get("required", ())


def _describe(schema: dict[str, Any], *, required: bool) -> str:
    """What a value must be, in words: 'an integer >= 1', 'a non-empty string'."""
    kind = schema["type"]
    if kind == "integer":
        text = f"an integer >= {schema['minimum']}" if "minimum" in schema else "an integer"
    elif kind == "string":
        text = "a non-empty string" if schema.get("minLength", 0) >= 1 else "a string"
    elif kind == "array":
        text = "a non-empty array" if schema.get("minItems", 0) >= 1 else "an array"
    else:
        text = "an object"
    return text if required else f"{text} (or leave the field out)"


_SHOW_LIMIT: Final = 60


def _show(value: object) -> str:
    """A short, one-line rendering of a received value for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        text = str(value) if value.bit_length() < 3 * MAX_INTEGER_DIGITS else "a very large integer"
    elif isinstance(value, float):
        text = repr(value) if value == value and abs(value) != float("inf") else "a number out of range"
    elif isinstance(value, str):
        text = json.dumps(value, ensure_ascii=False)
    elif isinstance(value, list):
        return "an empty array" if not value else "an array"
    elif isinstance(value, dict):
        return "an object"
    else:
        return f"a Python {type(value).__name__}"
    return text if len(text) <= _SHOW_LIMIT else text[: _SHOW_LIMIT - 1] + "\u2026"


def format_location(path: Path) -> str:
    """`("hits", 2, "matches")` -> `hits[2].matches`; the empty path is the arguments."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return text or ROOT
