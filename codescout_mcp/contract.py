"""The contract as data: the tool's name, its words for a model, and both JSON Schemas.

The input schema below is written once, by hand. It is what the MCP server advertises in
`tools/list`, what jsonschema checks when an error must be described, and what the fast
accept path in `validate.py` is compiled from.
"""

from __future__ import annotations

# Typing names are for the checker only: importing typing costs `codescout rank` start-up time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

TOOL_NAME: Final = "rank_search_results"
TOOL_TITLE: Final = "Rank code search hits"

TOOL_DESCRIPTION: Final = (
    "Rank code-search hits you already have, best first, so you know which files to open. "
    "It runs no search and reads no files: pass one entry per file with its match count and "
    "the days since it last changed (and its owner if known).\n"
    "Rule: score = matches * 100 - last_modified_days (negative scores are kept). Order: "
    "score descending, then more matches, then fewer days, then path (UTF-16 code-unit order). "
    "Returns the first `limit` entries (default 10) as "
    "{results: [{path, matches, last_modified_days, owner, score, rank}], "
    "counts: {hits, returned}}; rank is 1-based; owner is null when absent, empty or "
    "whitespace only. Paths must be unique; a bad argument is an error naming its location."
)

# Python refuses to turn integers of more than 4300 digits into text, and a score has up to
# two digits more than its inputs; a bound well inside that keeps every answer printable.
MAX_INTEGER_DIGITS: Final = 4000

INPUT_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "hits": {
            "type": "array",
            "description": "The search hits to rank, one per file, in any order.",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The file the hit is in; unique within the call.",
                    },
                    "matches": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "How many matches the file holds.",
                    },
                    "last_modified_days": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Whole days since the file last changed.",
                    },
                    "owner": {
                        "type": "string",
                        "description": "Who owns the file; leave it out when unknown.",
                    },
                },
                "required": ["path", "matches", "last_modified_days"],
            },
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "default": 10,
            "description": "How many results to return at most.",
        },
    },
    "required": ["hits"],
}

DEFAULT_LIMIT: Final[int] = INPUT_SCHEMA["properties"]["limit"]["default"]

OUTPUT_SCHEMA: Final[dict[str, Any]] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "description": "The returned hits, best first.",
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "minLength": 1},
                    "matches": {"type": "integer", "minimum": 1},
                    "last_modified_days": {"type": "integer", "minimum": 0},
                    "owner": {"type": ["string", "null"]},
                    "score": {
                        "type": "integer",
                        "description": "matches * 100 - last_modified_days",
                    },
                    "rank": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "1-based position in results.",
                    },
                },
                "required": ["path", "matches", "last_modified_days", "owner", "score", "rank"],
                "additionalProperties": False,
            },
        },
        "counts": {
            "type": "object",
            "properties": {
                "hits": {"type": "integer", "minimum": 1},
                "returned": {"type": "integer", "minimum": 0},
            },
            "required": ["hits", "returned"],
            "additionalProperties": False,
        },
    },
    "required": ["results", "counts"],
    "additionalProperties": False,
}
