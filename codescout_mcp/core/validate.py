"""Check a tool's arguments against the contract: fast when they are valid, precise when not.

Two engines read the one hand-written schema in `core/contract.py`:

* the accept path is Python source compiled from that schema when this module loads (a
  type test and a comparison per field, duplicates found in the same pass), so a million
  valid hits cost well under a second and `jsonschema` is never imported. It accepts only
  the exact types JSON parsing produces (dict, list, str, int, float);
* anything else (a refusal, or values of other types handed in through the Python API) is
  first copied into plain JSON values, field by field as the contract reads them, and
  checked again; when that refuses, `jsonschema` checks the offending part and the error is
  described from what it reports, choosing the first offending location in input order.

Both engines therefore judge the same plain values, and the ranking ranks those values.
"""

from __future__ import annotations

import json

from codescout_mcp.core.contract import INPUT_SCHEMA, MAX_EXACT_FLOAT, MAX_INTEGER_DIGITS

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Iterator
    from typing import Any, Final

# What the compiled accept path understands. A schema keyword outside these sets stops the
# module from loading rather than being skipped in silence.
_ANNOTATIONS: Final = frozenset({"$schema", "description", "title", "default"})
_KEYWORDS: Final = frozenset({"type", "properties", "required", "minimum", "minLength", "minItems"})

# The smallest integer with more than MAX_INTEGER_DIGITS digits. Plain copies hold any
# integer at least this large (in magnitude) as exactly this value, so no error message
# ever has to turn an integer of thousands of digits into text.
HUGE: Final = 10**MAX_INTEGER_DIGITS
_UNIQUE_FIELD: Final = "path"
ROOT: Final = "arguments"


class InvalidArguments(ValueError):
    """Arguments that break the contract: where (`hits[2].matches`) and what was expected."""

    def __init__(self, location: str, message: str) -> None:
        super().__init__(f"{location}: {message}")
        self.location = location
        self.message = message


class OversizedInteger(int):
    """An integer literal too long to convert, as a JSON reader stands it in: +-HUGE."""

    def __new__(cls, negative: bool) -> OversizedInteger:
        return super().__new__(cls, -HUGE if negative else HUGE)


class Arguments:
    """Arguments that passed every check, as the ranking reads them."""

    __slots__ = ("has_integral_floats", "hits", "limit")

    def __init__(self, hits: list[dict[str, Any]], limit: int, has_integral_floats: bool) -> None:
        self.hits = hits
        self.limit = limit
        # True when some integer field was written with a zero fraction (`3.0`), so ranking
        # must turn values into exact integers before doing arithmetic on them.
        self.has_integral_floats = has_integral_floats


class Checker:
    """Both engines for one tool's input schema: `{"hits": [{...}], "limit": N}` in shape.

    The schema is an object whose `hits` is a non-empty array of objects, each with a
    unique `path`; every other field is a string, an integer or (at the top) `limit`.
    """

    def __init__(self, schema: dict[str, Any]) -> None:
        self.schema = schema
        self.item_schema: dict[str, Any] = schema["properties"]["hits"]["items"]
        self.top_level_schema = _without_items(schema)
        self.integer_fields = tuple(
            name for name, sub in self.item_schema["properties"].items() if sub["type"] == "integer"
        )
        self.default_limit: int = schema["properties"]["limit"]["default"]
        self._top_level_ok = _build_top_level_check(self.top_level_schema)
        self._scan_hits = _build_hit_scanner(self.item_schema)

    def validate(self, arguments: object) -> Arguments:
        """Return the checked arguments, or raise InvalidArguments for the first violation."""
        accepted = self._accept(arguments)
        if accepted is not None:
            return accepted
        plain = _plain(arguments, self.schema)
        if plain is not arguments:
            accepted = self._accept(plain)
            if accepted is not None:
                return accepted
        problem = min(self._problems(plain), key=lambda p: p.order, default=None)
        if problem is None:  # pragma: no cover - the tests hold the two engines to one verdict
            raise AssertionError("the compiled checker refused arguments that jsonschema and the rules accept")
        raise InvalidArguments(format_location(problem.path), problem.message)

    def _accept(self, arguments: object) -> Arguments | None:
        """The checked arguments when the compiled path takes them; None when only the precise check can say."""
        if not self._top_level_ok(arguments):
            return None
        assert type(arguments) is dict
        hits = arguments["hits"]
        bad, floats = self._scan_hits(hits)
        if bad >= 0:
            return None
        limit = arguments.get("limit", self.default_limit)
        return Arguments(hits, int(limit), floats)

    def _problems(self, arguments: object) -> Iterator[_Problem]:
        """Every violation in plain arguments that the compiled path refused (one bad hit at most)."""
        from jsonschema import Draft202012Validator

        if type(arguments) is not dict:
            yield _Problem((), (), f"expected an object, got {show(arguments)}")
            return
        top = Draft202012Validator(self.top_level_schema)
        yield from _from_jsonschema(top.iter_errors(arguments), arguments, self.top_level_schema, (), ())
        if "limit" in arguments:
            yield from _integer_rules(arguments, "limit", self.top_level_schema, (), ())
        hits = arguments.get("hits")
        if type(hits) is not list or not hits:
            return
        index, _ = self._scan_hits(hits)
        if index < 0:
            return
        hit = hits[index]
        base: Path = ("hits", index)
        base_order = (_key_order(arguments, "hits"), index)
        items = Draft202012Validator(self.item_schema)
        yield from _from_jsonschema(items.iter_errors(hit), hit, self.item_schema, base, base_order)
        if type(hit) is not dict:
            return
        for name in self.integer_fields:
            if name in hit:
                yield from _integer_rules(hit, name, self.item_schema, base, base_order)
        path = hit.get(_UNIQUE_FIELD)
        if type(path) is str:
            first = next((k for k in range(index) if _path_of(hits[k]) == path), None)
            if first is not None:
                yield _Problem(
                    (*base_order, _key_order(hit, _UNIQUE_FIELD)),
                    (*base, _UNIQUE_FIELD),
                    duplicate_message(path, first),
                )


# --- the accept path, compiled from the schema -------------------------------------------


def check_keywords(schema: dict[str, Any], where: str) -> None:
    unknown = set(schema) - _KEYWORDS - _ANNOTATIONS
    if unknown:
        raise NotImplementedError(f"{where}: the compiled checker has no rule for {sorted(unknown)}")


def _value_lines(schema: dict[str, Any], var: str, fail: str, where: str) -> list[str]:
    """Statements that run `fail` unless `var` holds a value of a scalar or array field."""
    check_keywords(schema, where)
    kind = schema["type"]
    if kind == "string":
        cond = f"type({var}) is str"
        if "minLength" in schema:
            least = int(schema["minLength"])
            cond += f" and {var}" if least == 1 else f" and len({var}) >= {least}"  # truth: no call
        return [f"if not ({cond}): {fail}"]
    if kind == "integer":
        # Without a lower bound, the digit limit is the bound: -HUGE (the stand-in for any
        # longer negative literal) is refused like HUGE.
        low = f"{int(schema['minimum'])} <= {var}" if "minimum" in schema else f"-_HUGE < {var}"
        # Integral floats (3.0) are valid up to 2**53 but rare: they leave the fast test and
        # set a flag. (A NaN fails `is_integer`, an infinity fails it too.)
        return [
            f"if not (type({var}) is int and {low} < _HUGE):",
            f"    if type({var}) is float and {var}.is_integer() and {low} and -_EXACT <= {var} <= _EXACT:",
            "        floats = True",
            f"    else: {fail}",
        ]
    if kind == "array":
        return [f"if not (type({var}) is list and len({var}) >= {int(schema.get('minItems', 0))}): {fail}"]
    raise NotImplementedError(f"{where}: the compiled checker has no rule for type {kind!r}")


def _object_lines(schema: dict[str, Any], var: str, fail: str, where: str, *, unique: str | None = None) -> list[str]:
    """Statements that run `fail` unless `var` is an object whose fields pass (items unchecked)."""
    check_keywords(schema, where)
    if schema["type"] != "object":
        raise NotImplementedError(f"{where}: expected an object schema")
    lines = [f"if type({var}) is not dict: {fail}"]
    required = [name for name in schema["properties"] if name in set(schema.get("required", ()))]
    # (Not an f-string: where its parts sit in the syntax tree differs between Pythons, and
    # bench/MUTATION.md names a mutant of this string by its place.)
    names = {name: "v" + str(number) for number, name in enumerate(schema["properties"])}
    # Required fields by subscript, all at once: cheaper than a `get` call each, and on
    # this path the order of the checks within one object does not matter (a refusal is
    # described by jsonschema, which finds the first problem itself).
    if required:
        lines.append("try:")
        lines += [f"    {names[name]} = {var}[{name!r}]" for name in required]
        lines.append(f"except KeyError: {fail}")
    for name, sub in schema["properties"].items():
        local = names[name]
        checks = _value_lines(sub, local, fail, f"{where}.{name}")
        if name not in required:
            lines.append(f"{local} = {var}.get({name!r}, _ABSENT)")
            lines.append(f"if {local} is not _ABSENT:")
            checks = ["    " + line for line in checks]
        lines.extend(checks)
        if name == unique:
            lines.append(f"u = {local}")
    return lines


# The names the compiled functions use, bound as parameter defaults: a local is read faster
# than a global or a builtin, once per field of each of a million hits.
_LOCAL_NAMES: Final = (
    "type=type, dict=dict, str=str, int=int, float=float, len=len, "
    "_ABSENT=_ABSENT, _HUGE=_HUGE, _EXACT=_EXACT, _duplicate=_duplicate"
)


def _compile(source: str, name: str) -> Callable[..., Any]:
    namespace: dict[str, Any] = {
        "_ABSENT": _ABSENT,
        "_HUGE": HUGE,
        "_EXACT": MAX_EXACT_FLOAT,
        "_duplicate": _duplicate,
    }
    exec(compile(source, f"<codescout compiled {name}>", "exec"), namespace)
    function: Callable[..., Any] = namespace[name]
    return function


def _build_top_level_check(schema: dict[str, Any]) -> Callable[[object], bool]:
    body = _object_lines(schema, "args", "return False", ROOT)
    source = f"def top_level_ok(args, {_LOCAL_NAMES}):\n    floats = False\n"
    source += "".join(f"    {line}\n" for line in body)
    source += "    return True\n"
    check: Callable[[object], bool] = _compile(source, "top_level_ok")
    return check


def _build_hit_scanner(item_schema: dict[str, Any]) -> Callable[[list[Any]], tuple[int, bool]]:
    """`scan_hits(hits)`: (index of the first hit that breaks a rule, or -1; whether any
    integer field was written as an integral float).

    The unique field's values are collected as the loop goes, and told apart in one set at
    the end (at C speed: a set grown in the loop would cost more than the rest of the loop).
    The first broken rule in input order wins: a hit that fails a field's rule is reported
    unless a duplicate comes before it.
    """
    # Hit number i fails with i paths kept; a duplicate among them is at most i, so that the
    # first broken rule is min(i, _duplicate(paths)), which is _duplicate(paths) itself.
    fail = "return _duplicate(paths), floats"
    body = _object_lines(item_schema, "h", fail, "hits[]", unique=_UNIQUE_FIELD)
    source = f"def scan_hits(hits, {_LOCAL_NAMES}):\n    paths = []\n    keep = paths.append\n    floats = False\n"
    source += "    for h in hits:\n"
    source += "".join(f"        {line}\n" for line in body)
    source += "        keep(u)\n"
    source += "    if len(set(paths)) != len(paths): return _duplicate(paths), floats\n"
    source += "    return -1, floats\n"
    scanner: Callable[[list[Any]], tuple[int, bool]] = _compile(source, "scan_hits")
    return scanner


def duplicate_message(path: str, first: int) -> str:
    """What is wrong with a path that hit number `first` gave already."""
    return f"duplicate path {show(path)}, first given at {format_location(('hits', first))}"


def duplicate_error(paths: list[str]) -> InvalidArguments:
    """The error for the first path in `paths` that came before it (there must be one)."""
    index = _duplicate(paths)
    path = paths[index]
    return InvalidArguments(format_location(("hits", index, _UNIQUE_FIELD)), duplicate_message(path, paths.index(path)))


def _duplicate(paths: list[str]) -> int:
    """The index of the first value that appeared before it (len(paths) when none did)."""
    seen: set[str] = set()
    for index, path in enumerate(paths):
        if path in seen:
            return index
        seen.add(path)
    return len(paths)


_ABSENT: Final = object()  # a field left out (`None` is a value: JSON's null)


def _without_items(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema with the hits' item rules left out: the top level alone."""
    shallow = dict(schema)
    shallow["properties"] = dict(schema["properties"])
    hits = dict(shallow["properties"]["hits"])
    del hits["items"]
    shallow["properties"]["hits"] = hits
    return shallow


# --- plain copies: what both engines judge when the input is not plain JSON values ---------


def _plain(value: object, schema: dict[str, Any]) -> object:
    """`value` with every field the contract reads copied into a plain JSON value.

    Subclasses of dict, list, str, int and float are read through their base type's own
    storage, never through methods they override, so a `get` or `__eq__` of their own
    cannot show one engine a value the other does not see. Integers of more than
    MAX_INTEGER_DIGITS digits become +-HUGE. Fields the contract does not read are kept
    as they are (they are ignored). Values of other types are kept: they fail the type test.
    """
    kind = schema.get("type")
    if kind == "object" and isinstance(value, dict):
        properties: dict[str, Any] = schema["properties"]
        copy: dict[Any, Any] = {}
        for key, item in dict.items(value):
            name = str.__str__(key) if isinstance(key, str) else key
            sub = properties.get(name) if type(name) is str else None
            copy[name] = item if sub is None else _plain(item, sub)
        return copy
    if kind == "array" and isinstance(value, list):
        items: dict[str, Any] = schema["items"]
        return [_plain(item, items) for item in list.__iter__(value)]
    return plain_scalar(value)


def plain_scalar(value: object) -> object:
    """A str, int or float (of any subclass) as the exact built-in type; huge integers clamped."""
    if isinstance(value, bool):
        return bool(value)
    if isinstance(value, int):
        return max(-HUGE, min(int.__index__(value), HUGE))
    if isinstance(value, float):
        return float.__float__(value)
    if isinstance(value, str):
        return str.__str__(value)
    # A container where the contract wants a scalar is refused for its type alone; a small
    # stand-in of the same type and emptiness keeps jsonschema from printing what is inside
    # (integers too long to print, or nesting too deep to print).
    if isinstance(value, list):
        return [None] if list.__len__(value) else []
    if isinstance(value, dict):
        return {}  # shown as "an object", full or not
    return value


# --- the precise path: which location, and what was expected -----------------------------

Path = tuple[str | int, ...]


class _Problem:
    __slots__ = ("message", "order", "path")

    def __init__(self, order: tuple[int, ...], path: Path, message: str) -> None:
        self.order = order  # where it stands in the input, for choosing the first
        self.path = path
        self.message = message


def _path_of(hit: object) -> object:
    return hit.get(_UNIQUE_FIELD) if type(hit) is dict else None


def _integer_rules(
    container: dict[str, Any], name: str, parent: dict[str, Any], base: Path, base_order: tuple[int, ...]
) -> Iterator[_Problem]:
    """The two integer rules a schema cannot say: at most 4000 digits, floats exact (<= 2**53)."""
    value = container[name]
    order = (*base_order, _key_order(container, name))
    schema = parent["properties"][name]
    if type(value) is int and (value >= HUGE or (value <= -HUGE and "minimum" not in schema)):
        # (Below a minimum, a long negative integer is refused by the bound, in its words.)
        yield _Problem(order, (*base, name), too_long(value))
    elif type(value) is float and value.is_integer() and abs(value) > MAX_EXACT_FLOAT:
        required = name in parent.get("required", ())
        yield _Problem(
            order,
            (*base, name),
            f"expected {describe(schema, required=required)}, got {show(value)} "
            "(write integers beyond 2**53 without a fraction or exponent)",
        )


def too_long(value: int) -> str:
    return (
        f"expected an integer of at most {MAX_INTEGER_DIGITS} digits, got a {'larger' if value > 0 else 'longer'} one"
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
                        f"missing, expected {describe(sub, required=True)}",
                    )
            continue
        sub = _subschema(schema, rel)
        required = _is_required(schema, rel)
        if error.validator in ("type", "minimum", "minLength", "minItems"):
            message = f"expected {describe(sub, required=required)}, got {show(error.instance)}"
        else:  # pragma: no cover - the schema uses no other keyword
            message = error.message
        yield _Problem(order, (*base, *rel), message)


def _key_order(obj: dict[str, Any], key: str | int) -> int:
    for position, name in enumerate(obj):
        if name == key:
            return position
    return len(obj)


# jsonschema reports every problem at the object it checks (the arguments, or one hit) or at
# one of its fields: `rel` is () or (field name,), never deeper.


def _order_of(instance: Any, rel: Path) -> tuple[int, ...]:
    return (_key_order(instance, rel[0]),) if rel else ()


def _subschema(schema: dict[str, Any], rel: Path) -> dict[str, Any]:
    return schema["properties"][rel[0]] if rel else schema


def _is_required(schema: dict[str, Any], rel: Path) -> bool:
    return not rel or rel[0] in schema.get("required", ())


def describe(schema: dict[str, Any], *, required: bool) -> str:
    """What a value must be, in words: 'an integer >= 1', 'a non-empty string'."""
    kind = schema["type"]
    if kind == "integer":
        text = f"an integer >= {schema['minimum']}" if "minimum" in schema else "an integer"
    elif kind == "string":
        text = "a non-empty string" if schema.get("minLength", 0) >= 1 else "a string"
    elif kind == "array":
        text = "a non-empty array" if schema.get("minItems", 0) >= 1 else "an array"
    elif kind == "boolean":
        text = "true or false"
    else:
        text = "an object"
    return text if required else f"{text} (or leave the field out)"


SHOW_LIMIT: Final = 60


def show(value: object) -> str:
    """A short, one-line rendering of a received value for an error message."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        if value >= HUGE:
            return "a very large integer"
        if value <= -HUGE:
            return "a very large negative integer"
        text = str(value)
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
    return text if len(text) <= SHOW_LIMIT else text[: SHOW_LIMIT - 1] + "\u2026"


def format_location(path: Path) -> str:
    """`("hits", 2, "matches")` -> `hits[2].matches`; the empty path is the arguments."""
    text = ""
    for step in path:
        text += f"[{step}]" if isinstance(step, int) else (f".{step}" if text else step)
    return text or ROOT


RANK_CHECKER: Final = Checker(INPUT_SCHEMA)


def validate(arguments: object) -> Arguments:
    """Check `rank_search_results` arguments: the checked hits, or InvalidArguments."""
    return RANK_CHECKER.validate(arguments)
