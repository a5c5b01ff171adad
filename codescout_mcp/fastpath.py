"""Large arguments read and checked in one pass by pydantic-core: fast when valid, precise when not.

`jsontext` reads JSON as JSON.parse does and `validate` then checks it; on a million hits that is
two passes over a million Python objects (about 1.6 times what `json.load` alone takes).
pydantic-core, which the SDK already depends on (Rust, wheels for every platform), parses and
checks in one pass from the bytes. It is used only where its answer is sure to be the same:

* its checker is derived from the contract's input schema (`contract.INPUT_SCHEMA`), not
  written again: `core_schema_of` translates the schema's keywords and refuses any it does not
  know, so a change to the schema cannot leave this path behind;
* it takes no float for an integer, no integer of more than MAX_INTEGER_DIGITS digits, no
  NaN or Infinity anywhere (not even in a field nobody reads, which pydantic would let pass),
  no byte-order mark, no lone surrogate: inputs holding any of them, any input it refuses, and
  any input with a path given twice go to the precise path (`None` here), which reads them
  exactly as before and says where they are wrong;
* duplicate keys keep the last value, as JSON.parse and `json` do.

The suite holds the two paths to the same answer and the same error on generated and mutated
inputs (tests/test_fastpath.py). Only inputs of FAST_BYTES or more come here: importing
pydantic-core costs more than it saves on a small file.
"""

from __future__ import annotations

import codecs

from codescout_mcp.contract import INPUT_SCHEMA, MAX_INTEGER_DIGITS

# Typing names are for the checker only: importing typing costs `codescout rank` start-up time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

    from pydantic_core import SchemaValidator

FAST_BYTES: Final = 8 << 20
# Below this in magnitude an integer has at most MAX_INTEGER_DIGITS digits.
_DIGITS_BOUND: Final = 10**MAX_INTEGER_DIGITS

_validator: SchemaValidator | None = None


def core_schema_of(schema: dict[str, Any]) -> Any:
    """The pydantic-core schema that checks what the JSON Schema `schema` checks (strictly: no
    coercion); ValueError for a keyword this translation does not know."""
    from pydantic_core import core_schema as cs

    known = {"type", "properties", "required", "items", "minItems", "minLength", "minimum", "description", "default"}
    unknown = set(schema) - known
    if unknown:
        raise ValueError(f"no fast path for the schema keywords {sorted(unknown)}")
    kind = schema["type"]
    if kind == "object":
        required = set(schema.get("required", ()))
        fields = {
            name: cs.typed_dict_field(core_schema_of(sub), required=name in required)
            for name, sub in schema["properties"].items()
        }
        return cs.typed_dict_schema(fields, extra_behavior="ignore")
    if kind == "array":
        return cs.list_schema(core_schema_of(schema["items"]), min_length=schema.get("minItems"), strict=True)
    if kind == "string":
        return cs.str_schema(strict=True, min_length=schema.get("minLength"))
    if kind == "integer":
        return cs.int_schema(strict=True, ge=schema.get("minimum", -_DIGITS_BOUND + 1), lt=_DIGITS_BOUND)
    raise ValueError(f"no fast path for the schema type {kind!r}")


def _checker() -> SchemaValidator:
    global _validator
    if _validator is None:
        from pydantic_core import SchemaValidator

        _validator = SchemaValidator(core_schema_of(INPUT_SCHEMA))
    return _validator


def checked(data: bytes) -> dict[str, Any] | None:
    """The arguments in `data`, parsed and checked, when the fast path is sure of them; else None."""
    if data.startswith(codecs.BOM_UTF8) or b"NaN" in data or b"Infinity" in data:
        return None
    from pydantic_core import ValidationError

    try:
        arguments: dict[str, Any] = _checker().validate_json(data)
    except (ValidationError, ValueError, RecursionError):
        return None
    hits = arguments["hits"]
    if len({hit["path"] for hit in hits}) != len(hits):
        return None  # a path given twice: the precise path names both places
    return arguments
