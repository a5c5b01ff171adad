"""The contract as data: the tool's name, its words for a model, and both JSON Schemas.

The input schema below is written once, by hand. It is what the MCP server advertises in
`tools/list`, what jsonschema checks when an error must be described, and what the fast
accept path in `validate.py` is compiled from.

Neither schema names its dialect with `$schema`: MCP's default dialect is JSON Schema
2020-12, and some clients refuse the key (Gemini's function declarations) or cannot load
the 2020-12 meta-schema (Ajv set up for draft-07). The code that checks them names the
2020-12 validator explicitly.
"""

from __future__ import annotations

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
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

# A number written with a fraction or an exponent is read as a double, as JSON.parse reads
# it; it stands for an integer only while doubles still hold every integer exactly.
MAX_EXACT_FLOAT: Final = 2**53

INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "hits": {
            "type": "array",
            "description": "The search hits to rank, one per file, in any order: at least 1 hit.",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": (
                            "The file the hit is in: a non-empty string (at least 1 character), unique within the call."
                        ),
                    },
                    "matches": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "How many matches the file holds: an integer, at least 1.",
                    },
                    "last_modified_days": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Whole days since the file last changed: an integer, at least 0.",
                    },
                    "owner": {
                        "type": "string",
                        "description": (
                            "Who owns the file: a string (null is not allowed); optional: leave it out when "
                            "unknown, and the result's owner is null."
                        ),
                    },
                },
                "required": ["path", "matches", "last_modified_days"],
            },
        },
        "limit": {
            "type": "integer",
            "minimum": 1,
            "default": 10,
            "description": "How many results to return at most: an integer, at least 1; default 10.",
        },
    },
    "required": ["hits"],
}

OUTPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "results": {
            "type": "array",
            "description": "The returned hits, best first: at most `limit` of them.",
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "minLength": 1, "description": "The file the hit is in."},
                    "matches": {"type": "integer", "minimum": 1, "description": "How many matches the file holds."},
                    "last_modified_days": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Whole days since the file last changed.",
                    },
                    # Two branches of one type each, not `"type": ["string", "null"]`: clients
                    # that map schemas onto a single-type dialect (Gemini's, say) read this form,
                    # and MCP Inspector's --strict check asks for it.
                    "owner": {
                        "anyOf": [{"type": "string"}, {"type": "null"}],
                        "description": "Who owns the file, exactly as given; null when unknown, empty or blank.",
                    },
                    "score": {
                        "type": "integer",
                        "description": "matches * 100 - last_modified_days; may be negative.",
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
            "description": "How many hits came in and how many results went out.",
            "properties": {
                "hits": {"type": "integer", "minimum": 1, "description": "The number of hits given."},
                "returned": {
                    "type": "integer",
                    "minimum": 0,
                    "description": "The number of results returned: the smaller of counts.hits and limit.",
                },
            },
            "required": ["hits", "returned"],
            "additionalProperties": False,
        },
    },
    "required": ["results", "counts"],
    "additionalProperties": False,
}


# --- the opt-in second tool: the same ranking, with ages and owners read from a checkout ----

WORKSPACE_TOOL_NAME: Final = "rank_workspace_hits"
WORKSPACE_TOOL_TITLE: Final = "Rank search hits in this workspace"

WORKSPACE_TOOL_DESCRIPTION: Final = (
    "Rank the files your own search found in this workspace, best first, so you know which to "
    "open. Pass each file once with its path (relative to the workspace root, or absolute inside "
    "it) and how many matches it holds; nothing else. The server reads each file's age (days since "
    "its last commit, from git; 0 if it has uncommitted changes; its modification time outside git) "
    "and owner (CODEOWNERS) itself. It never searches and never reads file contents.\n"
    "Rule: score = matches * 100 - last_modified_days. Order: score descending, then more matches, "
    "then fewer days, then path. Returns the first `limit` entries (default 10) as "
    "{results: [{path, matches, last_modified_days, owner, score, rank}], counts: {hits, returned}}; "
    "each path comes back relative to the workspace root with / separators, ready to open. A path "
    "outside the workspace, missing, not a regular file, or naming the same file as an earlier hit "
    "is an error naming its location."
)

WORKSPACE_INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "hits": {
            "type": "array",
            "description": "The files your search found, one entry per file, in any order: at least 1 entry.",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": (
                            "The file, relative to the workspace root (or absolute inside it): a non-empty "
                            "string (at least 1 character)."
                        ),
                    },
                    "matches": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "How many matches your search found in the file: an integer, at least 1.",
                    },
                },
                "required": ["path", "matches"],
            },
        },
        "limit": INPUT_SCHEMA["properties"]["limit"],  # the same rule, the same words
    },
    "required": ["hits"],
}
