"""The checker for a tool whose arguments are one flat object of strings, integers and booleans
(`search_workspace`'s), read from its schema; its errors in the words `core/validate.py` gives the
ranking tools'. Standard library only.
"""

from __future__ import annotations

from codescout_mcp.core.contract import MAX_EXACT_FLOAT
from codescout_mcp.core.validate import HUGE, ROOT, InvalidArguments, check_keywords, describe, show, too_long

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final


class FlatChecker:
    """The checker for a tool whose arguments are one object of strings, integers and booleans
    (the search tool's), read from its schema: each field's type and bound, the first problem in
    input order named, in the words the ranking tools' errors use."""

    _TYPES: Final = {"string": (str,), "integer": (int, float), "boolean": (bool,)}

    def __init__(self, schema: dict[str, Any]) -> None:
        self.properties: dict[str, Any] = schema["properties"]
        self.required = [name for name in self.properties if name in set(schema.get("required", ()))]
        for name, sub in self.properties.items():
            check_keywords(sub, name)
            if sub["type"] not in self._TYPES:
                raise NotImplementedError(f"{name}: the flat checker has no rule for type {sub['type']!r}")

    def validate(self, arguments: object) -> dict[str, Any]:
        """Every field with its value (or its default), or InvalidArguments for the first problem."""
        if type(arguments) is not dict:
            raise InvalidArguments(ROOT, f"expected an object, got {show(arguments)}")
        checked = {name: sub["default"] for name, sub in self.properties.items() if "default" in sub}
        for name, value in dict.items(arguments):
            sub = self.properties.get(name) if type(name) is str else None
            if sub is None:
                continue  # a field the tool does not read is ignored
            checked[name] = self._value(name, sub, value)
        for name in self.required:
            if name not in arguments:
                raise InvalidArguments(name, f"missing, expected {describe(self.properties[name], required=True)}")
        return checked

    def _value(self, name: str, schema: dict[str, Any], value: object) -> object:
        required = name in self.required
        kind = schema["type"]
        if kind == "boolean" and type(value) is bool:
            return value
        if kind == "string" and type(value) is str and len(value) >= schema.get("minLength", 0):
            return value
        if kind == "integer" and (type(value) is int or type(value) is float):
            number = value
            if type(number) is int and (number >= HUGE or (number <= -HUGE and "minimum" not in schema)):
                raise InvalidArguments(name, too_long(number))
            integral = type(number) is int or (float(number).is_integer() and abs(number) <= MAX_EXACT_FLOAT)
            if integral and number >= schema.get("minimum", -HUGE):
                return int(number)
        raise InvalidArguments(name, f"expected {describe(schema, required=required)}, got {show(value)}")
