"""Large arguments decoded by msgspec into typed structs and checked in the same pass: fast when
valid, precise when not.

`jsontext` reads JSON as JSON.parse does (lone surrogates, integers of any length, a located
error for every flaw), in Python, and `validate` then checks a tree of Python dicts: on a
million hits that is most of `codescout rank`'s time and memory. msgspec (C, BSD-3, no
dependencies, wheels for every platform the package names) decodes the bytes straight into
structs whose types and bounds come from the contract's schema, and checks each field as it
reads it: no dict tree is built and no copy of the text is kept.

Its answer is used only where it is sure to be the precise path's. It gives up, and the
precise path reads and words the input, on:

- any field the schema does not name, at any level (unknown fields are forbidden, so nothing
  is ever skipped unread: msgspec does not check the UTF-8 or the depth of what it skips);
- a number written with a fraction or an exponent (`3.0`, `1e2`): the contract takes those
  as integers, msgspec does not, so their reading is left to `jsontext`;
- an integer of 2**63 or more, a lone surrogate escape, invalid UTF-8, a byte-order mark,
  NaN, and any other flaw in the JSON or break of the contract;
- every error msgspec raises (`msgspec.DecodeError`; a bare `UnicodeDecodeError` in 0.22).

A decode error costs only the time spent before it; the precise path then reads the whole
input as it would have anyway. A key given twice keeps its last value, as in JSON.parse and
`jsontext`. What the structs cannot say is whether two hits share a path, so duplicates are
found on them after the decode, and the first is worded exactly as `validate` words it. The
ranking is done on the structs (`ranking.ranked_structs`), with the same order and the same
output as on dicts.

Memory: under a memory cap (`ulimit -v`, RLIMIT_AS or RLIMIT_DATA) that an allocation meets,
msgspec mostly raises MemoryError, but not always: the suite's cap tests crashed with SIGSEGV in
3 of their runs under load (msgspec 0.22), where the precise path raises MemoryError and
`codescout rank` says "not enough memory". So the fast path is taken only when the cap, if
any, leaves ROOM_FACTOR times the input's size free (its peak is about 2.4 times). The input's
bytes are released as soon as the structs exist.

Both fronts use it: `codescout rank` for a file (`ranked`), and the MCP transports for a
whole `tools/call` of the rank tool (`call_message`, through `jsonrpc.fast_call`), whose
arguments reach the tool `Decoded`; the envelope's `_meta` is read by the precise path's reader.

The suite holds the two paths to the same answer and the same error on generated and mutated
inputs and messages (tests/unit/test_fastpath.py). Only inputs of FAST_BYTES or more come
here: importing msgspec and building the structs costs more than it saves on a small input.
"""

from __future__ import annotations

import codecs
from operator import attrgetter

from codescout_mcp.core.contract import INPUT_SCHEMA, TOOL_NAME

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

FAST_BYTES: Final = 2 << 20
ROOM_FACTOR: Final = 8

# msgspec reads integers up to 2**64 - 1 natively; the bound keeps every accepted integer a
# machine integer, far inside the contract's digit limit, so the precise path reads any larger.
_MAX_INTEGER: Final = 2**63 - 1

_KEYWORDS: Final = frozenset({"type", "properties", "required", "minimum", "minLength", "minItems", "items"})
_ANNOTATIONS: Final = frozenset({"description", "title", "default"})

_decoder: Any = None
_call: Any = None
_PATH: Final = attrgetter("path")


def _room_for(size: int) -> bool:
    """Whether a memory cap on this process, if any, leaves `size` bytes free."""
    import sys

    if sys.platform == "win32":
        return True  # no rlimits; a job object's cap is not looked at
    import resource

    for limit, field in ((resource.RLIMIT_AS, "VmSize:"), (resource.RLIMIT_DATA, "VmData:")):
        cap = resource.getrlimit(limit)[0]
        if cap != resource.RLIM_INFINITY and cap - _in_use(field) < size:
            return False
    return True


def _in_use(field: str) -> int:
    """This process's size in bytes by /proc's `field`; where there is no /proc, its peak resident size."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError):
        pass
    import sys

    if sys.platform == "win32":
        return 0  # not asked there: Windows has no rlimits
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak << 10  # bytes on macOS, KiB elsewhere


def _type_for(schema: dict[str, Any], where: str) -> Any:
    """The msgspec type that accepts exactly what `schema` accepts (up to _MAX_INTEGER), or a
    NotImplementedError for a keyword it has no rule for: a contract change must not be skipped."""
    from typing import Annotated

    import msgspec

    unknown = set(schema) - _KEYWORDS - _ANNOTATIONS
    if unknown:
        raise NotImplementedError(f"{where}: the fast path has no rule for {sorted(unknown)}")
    kind = schema["type"]
    if kind == "string":
        return Annotated[str, msgspec.Meta(min_length=schema.get("minLength", 0))]
    if kind == "integer":
        return Annotated[int, msgspec.Meta(ge=schema.get("minimum", -_MAX_INTEGER - 1), le=_MAX_INTEGER)]
    if kind == "array":
        item = _type_for(schema["items"], f"{where}.items")
        return Annotated[list[item], msgspec.Meta(min_length=schema.get("minItems", 0))]  # type: ignore[valid-type]
    if kind == "object":
        required = schema.get("required", [])
        fields: list[tuple[str, Any] | tuple[str, Any, Any]] = []
        for name in sorted(schema["properties"], key=lambda name: name not in required):  # required first
            sub = schema["properties"][name]
            kind_of = _type_for(sub, f"{where}.{name}")
            if name in required:
                fields.append((name, kind_of))
            else:  # absent: the default, or UNSET (which reads as absent)
                fields.append((name, kind_of | msgspec.UnsetType, sub.get("default", msgspec.UNSET)))
        name = where.rpartition(".")[2].title()
        return msgspec.defstruct(name, fields, forbid_unknown_fields=True, gc=False)
    raise NotImplementedError(f"{where}: the fast path has no rule for type {kind!r}")


def decoder() -> Any:
    """The decoder of the rank tool's arguments, built from the schema once."""
    global _decoder  # built on first use: msgspec is imported for large inputs only
    if _decoder is None:
        import msgspec

        _decoder = msgspec.json.Decoder(_type_for(INPUT_SCHEMA, "arguments"))
    return _decoder


def _call_decoder() -> Any:
    """The decoder of a whole JSON-RPC `tools/call` of the rank tool, its arguments the structs above."""
    global _call  # built on first use, as `decoder`
    if _call is None:
        from typing import Literal

        import msgspec

        fields: list[Any] = [("name", Literal[TOOL_NAME]), ("arguments", _type_for(INPUT_SCHEMA, "arguments"))]
        fields.append(("meta", msgspec.Raw | msgspec.UnsetType, msgspec.UNSET))
        params = msgspec.defstruct("Params", fields, rename={"meta": "_meta"}, forbid_unknown_fields=True, gc=False)
        envelope: list[Any] = [("jsonrpc", Literal["2.0"]), ("id", int | str), ("method", Literal["tools/call"])]
        envelope.append(("params", params))
        _call = msgspec.json.Decoder(msgspec.defstruct("Call", envelope, forbid_unknown_fields=True, gc=False))
    return _call


class Decoded:
    """A call's arguments as the fast path decoded them: checked structs, which the rank tool ranks
    as they are (`rank_decoded`). Whatever else must see them as JSON values asks for `plain()`."""

    __slots__ = ("arguments",)

    def __init__(self, arguments: Any) -> None:
        self.arguments = arguments

    @property
    def hit_count(self) -> int:
        return len(self.arguments.hits)

    def plain(self) -> dict[str, Any]:
        """The arguments as the precise path reads them: dicts, lists, strings and integers."""
        import msgspec

        plain: dict[str, Any] = msgspec.to_builtins(self.arguments)  # (an absent owner stays absent)
        return plain


def call_message(data: bytes) -> dict[str, Any] | None:
    """A JSON-RPC `tools/call` of the rank tool, read from `data` by msgspec: the message as the
    precise path would read it, its arguments `Decoded`. None for anything else (another method,
    tool or shape, a flaw anywhere), and wherever the precise path must read it: it then reads
    `data` as it would have. A `_meta` is read by the precise path whatever its size.

    (The caller lets go of `data` once it is done with the message: the structs hold no part of it.)
    """
    if data.startswith(codecs.BOM_UTF8) or not _room_for(ROOM_FACTOR * len(data)):
        return None
    try:
        call = _call_decoder().decode(data)
    except (ValueError, RecursionError):  # as in `ranked`
        return None
    params: dict[str, Any] = {"name": call.params.name, "arguments": Decoded(call.params.arguments)}
    if not isinstance(call.params.meta, _unset_type()):
        meta = _meta(bytes(call.params.meta))
        if meta is None:
            return None
        params["_meta"] = meta
    return {"jsonrpc": call.jsonrpc, "id": call.id, "method": call.method, "params": params}


# A `_meta` (a few hundred bytes from every host) is read here only up to this size and depth;
# past them the whole message is the precise path's, so that how deep it may nest is decided
# in one place, whatever the Python stack around the reader.
META_BYTES: Final = 64 * 1024
META_DEPTH: Final = 32


def _meta(data: bytes) -> Any:
    """A `_meta` read by the precise path's reader, or None where the whole message must be."""
    from codescout_mcp.core.jsontext import JsonTextError, parse_json

    if len(data) > META_BYTES:
        return None
    try:
        value = parse_json(data, "")
    except JsonTextError:
        return None
    level, depth = [value], 0
    while level:
        depth += 1
        if depth > META_DEPTH:
            return None
        level = [
            inner
            for outer in level
            for inner in (outer.values() if isinstance(outer, dict) else outer if isinstance(outer, list) else ())
            if isinstance(inner, (dict, list))
        ]
    return value


def _unset_type() -> type:
    import msgspec

    return msgspec.UnsetType


def rank_decoded(decoded: Decoded) -> dict[str, Any]:
    """The ranking of decoded arguments; InvalidArguments for a repeated path, in `validate`'s words."""
    return _ranking(decoded.arguments, None)


def ranked(holder: list[bytes], *, keep: list[object] | None = None) -> dict[str, Any] | None:
    """The ranking of the arguments in `holder`'s one element, or None where the precise path must
    read them. Once the structs exist the bytes are taken out of `holder` and released;
    InvalidArguments for a repeated path, in `validate`'s words.

    With `keep`, what was built to get there (a million structs and a set of their paths) is put
    in it rather than freed: a command that ends the process next (`os._exit`) is spared freeing
    each object in turn."""
    data = holder[0]
    if data.startswith(codecs.BOM_UTF8) or not _room_for(ROOM_FACTOR * len(data)):
        return None
    try:
        arguments = decoder().decode(data)
    except (ValueError, RecursionError):  # DecodeError, ValidationError, UnicodeDecodeError
        return None
    del data
    holder.clear()
    return _ranking(arguments, keep)


def _ranking(arguments: Any, keep: list[object] | None) -> dict[str, Any]:
    from codescout_mcp.core.ranking import ranked_structs
    from codescout_mcp.core.validate import duplicate_error

    hits = arguments.hits
    seen = set(map(_PATH, hits))
    if len(seen) != len(hits):
        raise duplicate_error(list(map(_PATH, hits)))
    if keep is not None:
        keep += (arguments, seen)
    del seen
    return ranked_structs(hits, arguments.limit)
