"""The MCP server through real client sessions: in memory (both handshake styles) and stdio."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import anyio
import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters
from mcp.shared.exceptions import MCPError

from codescout_mcp import __version__
from codescout_mcp.core.contract import (
    INPUT_SCHEMA,
    OUTPUT_SCHEMA,
    SEARCH_TOOL_NAME,
    TOOL_NAME,
    TOOL_TITLE,
    WORKSPACE_TOOL_NAME,
)
from codescout_mcp.server import build_server
from tests.helpers import (
    EXAMPLE,
    EXAMPLE_RESULT,
    applies,
    as_json,
    codescout_exe,
    load_vectors,
    reference_rank,
    server_info_on_the_wire,
)

pytestmark = pytest.mark.anyio

MODES = ["legacy", "auto"]
VECTORS = [v for v in load_vectors() if applies(v, "mcp")]


@pytest.fixture(params=MODES)
async def client(request: pytest.FixtureRequest) -> AsyncIterator[Client]:
    async with Client(build_server(), mode=request.param) as connected:
        yield connected


def tool_text(result: types.CallToolResult) -> str:
    assert len(result.content) == 1
    block = result.content[0]
    assert isinstance(block, types.TextContent)
    return block.text


def _keys(value: Any) -> set[str]:
    """Every key anywhere in a JSON value."""
    if isinstance(value, dict):
        return set(value).union(*(_keys(v) for v in value.values()))
    if isinstance(value, list):
        return set().union(*(_keys(v) for v in value))
    return set()


async def test_advertised_schemas_name_no_dialect(client: Client) -> None:
    listed = await client.list_tools()
    for tool in listed.tools:
        assert "$schema" not in _keys(tool.input_schema)
        assert "$schema" not in _keys(tool.output_schema)


def _types(value: Any) -> list[object]:
    """Every value of a "type" keyword anywhere in a schema."""
    if isinstance(value, dict):
        found = [value["type"]] if "type" in value else []
        return found + [t for v in value.values() for t in _types(v)]
    if isinstance(value, list):
        return [t for v in value for t in _types(v)]
    return []


async def test_advertised_schemas_give_each_value_one_type() -> None:
    # MCP Inspector's --strict mode warns on a "type" that is a list (["string", "null"]), which
    # some clients' schema converters cannot read: a value that may be null is an anyOf instead.
    async with Client(build_server(workspace="."), mode="auto") as connected:
        listed = await connected.list_tools()
    assert len(listed.tools) == 3  # the ranking, rank_workspace_hits and search_workspace
    for tool in listed.tools:
        for schema in (tool.input_schema, tool.output_schema):
            assert _types(schema) and all(isinstance(kind, str) for kind in _types(schema)), tool.name
    owner = listed.tools[0].output_schema["properties"]["results"]["items"]["properties"]["owner"]  # type: ignore[index]
    assert owner["anyOf"] == [{"type": "string"}, {"type": "null"}]


async def test_tools_list_may_be_cached_for_a_day_by_anyone() -> None:
    async with Client(build_server(), mode="auto") as connected:
        listed = await connected.list_tools()
        assert (listed.ttl_ms, listed.cache_scope) == (86_400_000, "public")


async def test_tools_list_advertises_the_hand_written_schemas(client: Client) -> None:
    listed = await client.list_tools()
    assert [t.name for t in listed.tools] == [TOOL_NAME]
    tool = listed.tools[0]
    assert tool.title == TOOL_TITLE
    assert tool.input_schema == INPUT_SCHEMA
    assert tool.output_schema == OUTPUT_SCHEMA
    assert tool.annotations == types.ToolAnnotations(
        title=TOOL_TITLE, read_only_hint=True, destructive_hint=False, idempotent_hint=True, open_world_hint=False
    )
    assert tool.description is not None
    shape = "{results:[{path,matches,last_modified_days,owner,score,rank}],counts:{hits,returned}}"
    for phrase in ("score = matches*100 - last_modified_days", shape, "tool error naming where"):
        assert phrase in tool.description
    assert "not null" in INPUT_SCHEMA["properties"]["hits"]["items"]["properties"]["owner"]["description"]


async def test_server_identifies_itself() -> None:
    async with Client(build_server(), mode="legacy") as connected:
        assert connected.server_info is not None
        assert (connected.server_info.name, connected.server_info.version) == ("codescout", __version__)
        shown = connected.server_info.model_dump(mode="json", by_alias=True, exclude_none=True)
        assert shown == server_info_on_the_wire()
        assert connected.instructions is not None
        assert "rank_search_results" in connected.instructions
        assert connected.server_capabilities.tools is not None


async def test_tools_list_refuses_a_cursor_it_never_issued(client: Client) -> None:
    assert (await client.list_tools()).next_cursor is None  # one page: no cursor is ever handed out
    for cursor in ("page-2", ""):
        with pytest.raises(MCPError) as caught:
            await client.list_tools(cursor=cursor, cache_mode="bypass")
        assert (caught.value.code, caught.value.message) == (
            types.INVALID_PARAMS,
            "Invalid cursor: tools/list has one page and no cursors",
        )


def _properties(schema: dict[str, Any], at: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every property a schema declares, at any depth, with its dotted location."""
    for name, prop in schema.get("properties", {}).items():
        yield f"{at}{name}", prop
        yield from _properties(prop, f"{at}{name}.")
        if "items" in prop:
            yield from _properties(prop["items"], f"{at}{name}[].")


async def test_every_property_says_in_words_its_bounds_and_default(tmp_path: Path) -> None:
    """Some clients (Codex) drop minimum, minLength, minItems and default from what the model sees;
    no host shows a model the output schema, whose words are for the people who write clients."""
    async with Client(build_server(workspace=str(tmp_path)), mode="legacy") as connected:
        listed = await connected.list_tools()
    assert [tool.name for tool in listed.tools] == [TOOL_NAME, WORKSPACE_TOOL_NAME, SEARCH_TOOL_NAME]
    stated = []
    phrases = {"minimum": ">= {}", "minItems": "at least {}", "minLength": "non-empty", "default": "default {}"}
    for tool in listed.tools:
        for where, prop in _properties(tool.input_schema):
            words = prop["description"]
            for keyword, phrase in phrases.items():
                if keyword in prop and not (keyword == "default" and prop[keyword] is False):  # false: left out
                    assert phrase.format(prop[keyword]) in words, (tool.name, where, words)
                    stated.append((tool.name, where, keyword))
        assert tool.output_schema is not None
        # The output's fields are not described: the tool's words name them, no host shows a model
        # this schema, and it is held to 800 bytes (tests/unit/test_words.py).
        for where, prop in _properties(tool.output_schema):
            assert "description" not in prop, (tool.name, where)
    assert sorted(stated) == sorted(
        [
            (TOOL_NAME, "hits", "minItems"),
            (TOOL_NAME, "hits[].path", "minLength"),
            (TOOL_NAME, "hits[].matches", "minimum"),
            (TOOL_NAME, "hits[].last_modified_days", "minimum"),
            (TOOL_NAME, "limit", "minimum"),
            (TOOL_NAME, "limit", "default"),
            (WORKSPACE_TOOL_NAME, "hits", "minItems"),
            (WORKSPACE_TOOL_NAME, "hits[].path", "minLength"),
            (WORKSPACE_TOOL_NAME, "hits[].matches", "minimum"),
            (WORKSPACE_TOOL_NAME, "limit", "minimum"),
            (WORKSPACE_TOOL_NAME, "limit", "default"),
            (SEARCH_TOOL_NAME, "pattern", "minLength"),
            (SEARCH_TOOL_NAME, "path", "minLength"),
            (SEARCH_TOOL_NAME, "glob", "minLength"),
            (SEARCH_TOOL_NAME, "limit", "minimum"),
            (SEARCH_TOOL_NAME, "limit", "default"),
        ]
    )


@pytest.mark.parametrize("vector", VECTORS, ids=lambda v: v["name"])
async def test_vector_through_tools_call(client: Client, vector: dict[str, Any]) -> None:
    result = await client.call_tool(TOOL_NAME, vector["arguments"])
    if "error" in vector:
        error = vector["error"]
        assert result.is_error
        assert result.structured_content is None
        assert tool_text(result) == f"{error['location']}: {error['message']}"
    else:
        assert not result.is_error
        assert as_json(result.structured_content) == as_json(vector["expected"])
        assert tool_text(result) == json.dumps(vector["expected"], ensure_ascii=False, separators=(",", ":"))


async def test_absent_arguments_are_a_tool_error(client: Client) -> None:
    result = await client.call_tool(TOOL_NAME)
    assert result.is_error
    assert tool_text(result) == "hits: missing, expected a non-empty array"


async def test_unknown_tool_is_invalid_params(client: Client) -> None:
    with pytest.raises(MCPError) as caught:
        await client.call_tool("rank_everything", {"hits": []})
    assert caught.value.code == types.INVALID_PARAMS
    assert "rank_everything" in caught.value.message


async def test_fifty_concurrent_calls_each_get_their_own_answer(client: Client) -> None:
    answers: dict[int, Any] = {}
    asked: dict[int, Any] = {}

    async def call(n: int) -> None:
        hits = [{"path": f"f{i}", "matches": 1 + (i * n) % 9, "last_modified_days": i} for i in range(1, 40)]
        asked[n] = {"hits": hits, "limit": 1 + n % 5}
        result = await client.call_tool(TOOL_NAME, asked[n])
        answers[n] = result.structured_content

    async with anyio.create_task_group() as tasks:
        for n in range(50):
            tasks.start_soon(call, n)
    for n in range(50):
        assert as_json(answers[n]) == as_json(reference_rank(asked[n]))


async def test_large_call_is_ranked_and_the_session_keeps_answering(client: Client) -> None:
    hits = [{"path": f"src/f{i:06d}.py", "matches": 1 + i % 50, "last_modified_days": i % 997} for i in range(50_000)]
    result = await client.call_tool(TOOL_NAME, {"hits": hits, "limit": 3})
    assert as_json(result.structured_content) == as_json(reference_rank({"hits": hits, "limit": 3}))
    assert (await client.list_tools()).tools[0].name == TOOL_NAME


# --- over stdio, against the installed `codescout mcp` -------------------------------------


def stdio_params(*extra: str) -> StdioServerParameters:
    return StdioServerParameters(command=codescout_exe(), args=["mcp", *extra])


@pytest.mark.parametrize("mode", MODES)
async def test_installed_server_over_stdio(mode: str) -> None:
    arguments = json.loads(EXAMPLE.read_text(encoding="utf-8"))
    async with Client(stdio_params(), mode=mode) as connected:
        tools = await connected.list_tools()
        assert tools.tools[0].input_schema == INPUT_SCHEMA
        result = await connected.call_tool(TOOL_NAME, arguments)
        assert result.structured_content == EXAMPLE_RESULT
        bad = await connected.call_tool(TOOL_NAME, {"hits": [{"path": "a", "matches": "3", "last_modified_days": 0}]})
        assert bad.is_error
        assert tool_text(bad) == 'hits[0].matches: expected an integer >= 1, got "3"'


async def test_fifty_concurrent_calls_over_stdio() -> None:
    answers: dict[int, Any] = {}
    async with Client(stdio_params(), mode="legacy") as connected:

        async def call(n: int) -> None:
            hits = [{"path": f"f{i}", "matches": 1 + (i * n) % 7, "last_modified_days": i % 40} for i in range(60)]
            arguments = {"hits": hits, "limit": 1 + n % 6}
            result = await connected.call_tool(TOOL_NAME, arguments)
            answers[n] = (result.structured_content, reference_rank(arguments))

        async with anyio.create_task_group() as tasks:
            for n in range(50):
                tasks.start_soon(call, n)
    assert len(answers) == 50
    for got, want in answers.values():
        assert as_json(got) == as_json(want)


@pytest.mark.filterwarnings("ignore:ping is removed")
async def test_two_hundred_thousand_hits_over_stdio() -> None:
    hits = [{"path": f"p/{i}", "matches": 1 + i % 30, "last_modified_days": i % 400} for i in range(200_000)]
    async with Client(stdio_params(), mode="legacy", read_timeout_seconds=120) as connected:
        result = await connected.call_tool(TOOL_NAME, {"hits": hits})
        assert as_json(result.structured_content) == as_json(reference_rank({"hits": hits}))
        await connected.send_ping()
