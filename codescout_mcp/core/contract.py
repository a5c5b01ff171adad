"""The contract as data: the tool's name, its words for a model, and both JSON Schemas.

The input schema below is written once, by hand. It is what the MCP server advertises in
`tools/list`, what jsonschema checks when an error must be described, and what the fast
accept path in `core/validate.py` is compiled from.

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

# The words a model reads, every turn: each says what a model needs (the rule, the answer's
# shape, what is refused) once, and the bounds stay in the words (some hosts strip `minimum`
# and `minLength`); tests/interop/test_hosts.py holds what hosts send a model to a byte budget.
TOOL_DESCRIPTION: Final = (
    "Rank code-search hits you already have, best first, to pick the files to open; it never searches "
    "or reads files. score = matches*100 - last_modified_days. "
    "Returns {results:[{path,matches,last_modified_days,owner,score,rank}],counts:{hits,returned}}. "
    "A bad argument is a tool error naming where it is."
)

# Python refuses to turn integers of more than 4300 digits into text, and a score has up to
# two digits more than its inputs; a bound well inside that keeps every answer printable.
MAX_INTEGER_DIGITS: Final = 4000

# A number written with a fraction or an exponent is read as a double, as JSON.parse reads
# it; it stands for an integer only while doubles still hold every integer exactly.
MAX_EXACT_FLOAT: Final = 2**53

LIMIT: Final[dict[str, Any]] = {
    "type": "integer",
    "minimum": 1,
    "default": 10,
    "description": "Max results: integer >= 1; default 10.",
}

INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "hits": {
            "type": "array",
            "description": "One per file, any order; at least 1.",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "minLength": 1, "description": "The file; non-empty, unique."},
                    "matches": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "Matches in it: integer >= 1.",
                    },
                    "last_modified_days": {
                        "type": "integer",
                        "minimum": 0,
                        "description": "Days since it changed: integer >= 0.",
                    },
                    "owner": {
                        "type": "string",
                        "description": "Owner if known, else omit (not null).",
                    },
                },
                "required": ["path", "matches", "last_modified_days"],
            },
        },
        "limit": LIMIT,
    },
    "required": ["hits"],
}

# For validators and the people who write clients, not for a model (no host shows a model the
# output schema): the fields of a result go undescribed, the tool's words name them already.
RESULT: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "path": {"type": "string"},
        "matches": {"type": "integer"},
        "last_modified_days": {"type": "integer"},
        # Two branches of one type each, not `"type": ["string", "null"]`: clients that map
        # schemas onto a single-type dialect (Gemini's, say) read this form, and MCP Inspector's
        # --strict check asks for it.
        "owner": {"anyOf": [{"type": "string"}, {"type": "null"}]},
        "score": {"type": "integer"},
        "rank": {"type": "integer"},
    },
    "required": ["path", "matches", "last_modified_days", "owner", "score", "rank"],
    "additionalProperties": False,
}


def output_schema(*, least_hits: int = 1, **more: dict[str, Any]) -> dict[str, Any]:
    """The answer's schema: results and counts (counts.hits at least `least_hits`), and `more` fields.

    Undescribed, and kept within 800 bytes (tests/unit/test_words.py): the tool's description,
    which a model reads, says what each field is; this is for clients that check an answer's shape.
    """
    hits: dict[str, Any] = {"type": "integer", "minimum": least_hits} if least_hits else {"type": "integer"}
    counts = {"hits": hits, "returned": {"type": "integer", "minimum": 0}}
    return {
        "type": "object",
        "properties": {
            "results": {"type": "array", "items": RESULT},
            "counts": {
                "type": "object",
                "properties": counts,
                "required": ["hits", "returned"],
                "additionalProperties": False,
            },
            **more,
        },
        "required": ["results", "counts", *more],
        "additionalProperties": False,
    }


OUTPUT_SCHEMA: Final = output_schema()


# --- the opt-in second tool: the same ranking, with ages and owners read from a checkout ----

WORKSPACE_TOOL_NAME: Final = "rank_workspace_hits"
WORKSPACE_TOOL_TITLE: Final = "Rank search hits in this workspace"

WORKSPACE_TOOL_DESCRIPTION: Final = (
    "Rank files your own search found in this workspace, best first; codescout reads each file's age "
    "(git) and owner (CODEOWNERS). score = matches*100 - days since it changed. Returns "
    "{results:[{path,matches,last_modified_days,owner,score,rank}],counts:{hits,returned}}, paths "
    "relative to the workspace. A path outside it, missing or repeated is a tool error naming where."
)

WORKSPACE_INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "hits": {
            "type": "array",
            "description": "One per file, any order; at least 1.",
            "minItems": 1,
            "items": {
                "type": "object",
                "properties": {
                    "path": {
                        "type": "string",
                        "minLength": 1,
                        "description": "The file, in the workspace; non-empty.",
                    },
                    "matches": {
                        "type": "integer",
                        "minimum": 1,
                        "description": "Matches in it: integer >= 1.",
                    },
                },
                "required": ["path", "matches"],
            },
        },
        "limit": LIMIT,  # the same rule, the same words
    },
    "required": ["hits"],
}


# --- the search tool: a pattern in, the workspace's matching files ranked out ---------------

SEARCH_TOOL_NAME: Final = "search_workspace"
SEARCH_TOOL_TITLE: Final = "Search this workspace and rank the files"

SEARCH_TOOL_DESCRIPTION: Final = (
    "Search this workspace, ranking matching files best first. ripgrep counts matches (occurrences, not "
    "lines), hidden files too; skips ignored and binary files, links, .git. Ages from git, owners from "
    "CODEOWNERS; score = matches*100 - days since changed. Returns {results:[{path,matches,"
    "last_modified_days,owner,score,rank}],counts:{hits,returned},search:{files_searched}}, paths relative "
    "to the workspace. Bad pattern: tool error."
)

SEARCH_INPUT_SCHEMA: Final[dict[str, Any]] = {
    "type": "object",
    "properties": {
        "pattern": {
            "type": "string",
            "minLength": 1,
            "description": "Regex (ripgrep syntax), or text if fixed_strings; non-empty.",
        },
        "fixed_strings": {"type": "boolean", "default": False, "description": "Pattern is plain text."},
        "ignore_case": {"type": "boolean", "default": False, "description": "Ignore letter case."},
        "path": {
            "type": "string",
            "minLength": 1,
            "description": "Only this folder or file; non-empty.",
        },
        "glob": {
            "type": "string",
            "minLength": 1,
            "description": "Only files matching this glob; non-empty (*.py, !*.md).",
        },
        "limit": LIMIT,
    },
    "required": ["pattern"],
}

SEARCH_OUTPUT_SCHEMA: Final = output_schema(
    least_hits=0,
    search={
        "type": "object",
        "properties": {"files_searched": {"type": "integer"}, "ignored_files": {"type": "integer"}},
        "required": ["files_searched"],
    },
)
