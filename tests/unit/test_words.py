"""The SDK's words and shapes that codescout says itself (`answers/words.py`), pinned one by one.

Both paths build from this module, so the tests that hold codescout's answers to the SDK's
cannot see a word changed here: it changes on both sides. Here each word is held to the SDK's
own constant where it has one, and otherwise to what users and hosts read.
"""

from __future__ import annotations

import json
import logging

import mcp_types
import pytest
from mcp_types import jsonrpc

from codescout_mcp.answers import words


def test_the_error_codes_and_the_server_info_key_are_the_sdks() -> None:
    assert (words.METHOD_NOT_FOUND, words.INVALID_PARAMS, words.INTERNAL_ERROR) == (
        jsonrpc.METHOD_NOT_FOUND,
        jsonrpc.INVALID_PARAMS,
        jsonrpc.INTERNAL_ERROR,
    )
    assert words.SERVER_INFO_KEY == mcp_types.SERVER_INFO_META_KEY


def test_a_text_block_carries_json_compact_with_characters_as_they_are() -> None:
    value = {"path": "src/café.py", "owner": None, "counts": [1, 2]}
    text = words.compact(value)
    assert text == '{"path":"src/café.py","owner":null,"counts":[1,2]}'
    assert json.loads(text) == value


def test_a_tool_result_is_its_value_twice_then_one_block_per_note() -> None:
    value = {"results": [], "counts": {"hits": 0, "returned": 0}}
    assert words.tool_result(value, ["one", "two"]) == {
        "content": [
            {"type": "text", "text": words.compact(value)},
            {"type": "text", "text": "Note: one"},
            {"type": "text", "text": "Note: two"},
        ],
        "isError": False,
        "structuredContent": value,
    }


def test_a_bug_is_a_tool_error_naming_its_kind_and_the_log_has_the_rest(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.DEBUG, logger="codescout"):
        said = words.internal_error("rank_search_results", ValueError("bad\nthing"))
    assert said == {
        "content": [
            {"type": "text", "text": "internal error in rank_search_results: ValueError; see the server's log"}
        ],
        "isError": True,
    }
    records = [(record.name, record.levelno, record.getMessage()) for record in caplog.records]
    assert records[0][:2] == ("codescout", logging.ERROR)
    assert records[0][2].startswith("tool rank_search_results failed: ValueError: bad")
    assert "\n" not in records[0][2]  # one line, whatever the error says
    assert records[1][:2] == ("codescout", logging.DEBUG)
    assert caplog.records[1].exc_info is not None and caplog.records[1].exc_info[1] is not None


def test_an_unknown_tool_is_named_with_the_tools_there_are() -> None:
    assert words.unknown_tool("nope", ["rank_search_results", "search_workspace"]) == (
        "Unknown tool: 'nope'; this server has 'rank_search_results' and 'search_workspace'"
    )
    assert words.unknown_tool(3, ["rank_search_results"]) == "Unknown tool: 3; this server has 'rank_search_results'"


def test_a_result_at_2026_07_28_is_complete_and_names_who_answered() -> None:
    result = words.stamped({"isError": False, "_meta": {"progressToken": 1}}, modern=True)
    assert result["resultType"] == "complete"
    assert result["_meta"] == {"progressToken": 1, mcp_types.SERVER_INFO_META_KEY: words.SERVER_STAMP}
    assert words.stamped({"isError": False}, modern=False) == {"isError": False}


def test_the_json_rpc_envelopes_and_errors() -> None:
    assert words.answer(7, {"a": 1}) == {"jsonrpc": "2.0", "id": 7, "result": {"a": 1}}
    assert words.error_answer("x", {"code": 1, "message": "m"}) == {
        "jsonrpc": "2.0",
        "id": "x",
        "error": {"code": 1, "message": "m"},
    }
    assert words.method_not_found("prompts/list") == {
        "code": -32601,
        "message": "Method not found",
        "data": "prompts/list",
    }
    assert words.invalid_params() == {"code": -32602, "message": "Invalid request parameters", "data": ""}
    assert words.invalid_cursor() == {
        "code": -32602,
        "message": "Invalid cursor: tools/list has one page and no cursors",
    }


def test_a_batch_whose_answers_grew_too_large_says_what_to_do() -> None:
    assert words.batch_too_large("64 MiB") == (
        "Internal error: this batch's answers passed 64 MiB; send its requests in smaller batches"
    )


# What a host sends its model of each tool (its name, description and input schema), and what a
# client checks an answer against (the output schema), each held to a budget: every byte of the
# first is read by the model on every turn.
DEFINITION_BYTES = 1_200
OUTPUT_SCHEMA_BYTES = 800


@pytest.mark.parametrize("tool", ["RANK_TOOL", "WORKSPACE_TOOL", "SEARCH_TOOL"])
def test_each_tool_definition_and_output_schema_keep_to_their_budgets(tool: str) -> None:
    from codescout_mcp.answers import catalog

    definition = getattr(catalog, tool)
    read = {
        "name": definition["name"],
        "description": definition["description"],
        "inputSchema": definition["inputSchema"],
    }
    # Claude Code names a tool `mcp__<server>__<tool>`, 16 bytes more than its own name.
    assert len(json.dumps(read, separators=(",", ":"), ensure_ascii=False).encode()) + 16 <= DEFINITION_BYTES
    assert len(json.dumps(definition["outputSchema"], separators=(",", ":")).encode()) <= OUTPUT_SCHEMA_BYTES
