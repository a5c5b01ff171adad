"""The HTTP app (`http/guard.py` and its three layers) driven in process, as ASGI, without sockets.

Access (framing, Host, Origin, CORS, method, token), admission (content negotiation, body
limits, a refusal that reads the rest of the body first) and routing (JSON-RPC read first,
then the door or the SDK) each answer here as they do over a real socket (tests/http/), in
a fraction of the time. Routing is held to the door: a server whose SDK handler for
`tools/call` marks its answer shows that no well-formed call, at any era or in a batch, reaches
the SDK.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from typing import Any

import mcp_types as types
import pytest

from codescout_mcp import server
from codescout_mcp.answers import words
from codescout_mcp.http import build_app
from codescout_mcp.http.settings import HttpSettings
from tests.asgidriver import Driven, driven

pytestmark = pytest.mark.anyio

HITS = [
    {"path": "a.py", "matches": 3, "last_modified_days": 1},
    {"path": "b.py", "matches": 1, "last_modified_days": 9},
]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
MODERN = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "rank_search_results"}


def rank_call(rid: object, *, modern: bool = False, **arguments: Any) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "rank_search_results", "arguments": {"hits": HITS, **arguments}}
    if modern:
        params["_meta"] = MODERN_META
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


@pytest.fixture
def marked_sdk(monkeypatch: pytest.MonkeyPatch) -> None:
    """The SDK's tools/call handler answers "the SDK answered" for codescout's own tools."""
    original = server.Tools.call_tool

    async def marked(self: server.Tools, ctx: Any, params: types.CallToolRequestParams) -> types.CallToolResult:
        if params.name not in self.by_name:
            return await original(self, ctx, params)
        return types.CallToolResult.model_validate(words.tool_error("the SDK answered"), by_name=False)

    monkeypatch.setattr(server.Tools, "call_tool", marked)


@pytest.fixture
async def app() -> AsyncIterator[Driven]:
    async with driven(build_app(HttpSettings())) as running:
        yield running


# --- access ---------------------------------------------------------------------------------------


async def test_a_body_framed_two_ways_is_refused_and_the_connection_closed(app: Driven) -> None:
    answer = await app.request(body=b"{}", headers={"transfer-encoding": "chunked"})
    assert (answer.status, answer.header("connection")) == (400, "close")
    assert b"both Content-Length and Transfer-Encoding" in answer.body


async def test_hosts_origins_and_methods_are_refused_before_any_body_is_read(app: Driven) -> None:
    assert (await app.request(headers={"host": "evil.example"})).status == 421
    assert (await app.request(headers={"host": "LOCALHOST:9"})).status != 421  # loopback in any case, any port
    refused = await app.request(headers={"origin": "https://evil.example"})
    assert refused.status == 403 and refused.header("access-control-allow-origin") is None
    got = await app.request("GET")
    assert (got.status, got.header("allow")) == (405, "POST")


async def test_an_allowed_origin_is_told_so_and_its_preflight_answered(app: Driven) -> None:
    origin = {"origin": "http://localhost:3000"}
    preflight = await app.request(
        "OPTIONS", headers={**origin, "access-control-request-method": "POST", "access-control-request-headers": "x-a"}
    )
    assert preflight.status == 204
    assert (preflight.header("access-control-allow-methods"), preflight.header("access-control-allow-headers")) == (
        "POST",
        "x-a",
    )
    answered = await app.post_json(rank_call(1), origin)
    assert answered.status == 200 and answered.header("access-control-allow-origin") == "http://localhost:3000"


async def test_a_header_the_guard_reads_given_twice_is_refused() -> None:
    # Given twice on the wire: the driver's headers are a dict, so the scope is made by hand.
    async with driven(build_app(HttpSettings())) as app:
        sent: list[dict[str, Any]] = []

        async def receive() -> dict[str, Any]:
            return {"type": "http.request", "body": b"{}", "more_body": False}

        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        scope = {
            "type": "http",
            "method": "POST",
            "path": "/mcp",
            "headers": [(b"host", b"127.0.0.1"), (b"authorization", b"Bearer a"), (b"authorization", b"Bearer b")],
        }
        await app.app(scope, receive, send)  # type: ignore[arg-type]
        assert sent[0]["status"] == 400 and b"authorization header is given more than once" in sent[1]["body"]


async def test_a_token_is_required_when_one_is_set() -> None:
    async with driven(build_app(HttpSettings(), token="s3cret")) as app:
        refused = await app.post_json(rank_call(1))
        assert (refused.status, refused.header("www-authenticate")) == (401, 'Bearer realm="codescout"')
        wrong = await app.post_json(rank_call(1), {"authorization": "Bearer nope"})
        assert wrong.status == 401
        right = await app.post_json(rank_call(1), {"authorization": "bearer   s3cret"})
        assert right.status == 200


# --- admission ------------------------------------------------------------------------------------


async def test_content_that_rules_out_json_is_refused_at_the_handshake_versions(app: Driven) -> None:
    not_acceptable = await app.post_json(rank_call(1), {"accept": "text/html"})
    assert not_acceptable.status == 406 and not_acceptable.json()["error"]["code"] == -32600
    unsupported = await app.post_json(rank_call(1), {"content-type": "text/plain"})
    assert (
        unsupported.status == 415 and "Content-Type must be application/json" in unsupported.json()["error"]["message"]
    )


async def test_a_body_over_the_limit_is_refused_and_the_rest_of_it_read_first() -> None:
    async with driven(build_app(HttpSettings(max_body_bytes=100, max_buffered_bytes=1000))) as app:
        declared = await app.request(body=b"x" * 101)
        assert (declared.status, declared.header("connection")) == (413, "close")
        chunks = [b"x" * 60, b"x" * 60, b"x" * 60]
        chunked = await app.request(body=chunks, headers={"transfer-encoding": "chunked"})
        assert chunked.status == 413 and chunked.complete


# --- routing --------------------------------------------------------------------------------------


async def test_bodies_are_read_as_json_rpc_first(app: Driven) -> None:
    broken = await app.request(body=b'{"jsonrpc": "2.0", "id": 7, "method": "ping"\xff}')
    assert broken.status == 400 and broken.json()["error"]["code"] == -32700
    not_rpc = await app.post_json({"jsonrpc": "1.0", "id": 8, "method": "ping"})
    assert not_rpc.status == 400 and not_rpc.json() == {
        "jsonrpc": "2.0",
        "id": 8,
        "error": {"code": -32600, "message": 'Invalid request: "jsonrpc" must be "2.0"'},
    }
    malformed_response = await app.post_json({"jsonrpc": "2.0", "id": 1, "result": {}, "error": {}})
    assert malformed_response.status == 400 and b"malformed JSON-RPC response" in malformed_response.body
    nan = await app.request(body=b'{"jsonrpc": "2.0", "id": 9, "method": "ping", "params": {"x": NaN}}', headers=MODERN)
    assert nan.status == 400 and nan.json()["error"]["code"] == -32700


@pytest.mark.usefixtures("marked_sdk")
async def test_every_well_formed_call_is_the_doors_at_every_era_and_in_a_batch(app: Driven) -> None:
    for version in ("2025-03-26", "2025-06-18", "2025-11-25"):
        alone = await app.post_json(rank_call(1, limit=1), {"MCP-Protocol-Version": version})
        assert alone.status == 200, alone.body
        assert alone.json()["result"]["structuredContent"]["counts"] == {"hits": 2, "returned": 1}
    modern = await app.post_json(rank_call(2, modern=True, limit=1), MODERN)
    assert modern.status == 200 and modern.json()["result"]["structuredContent"]["counts"]["returned"] == 1
    assert modern.json()["result"]["_meta"] == {words.SERVER_INFO_KEY: words.SERVER_STAMP}
    odd = {"jsonrpc": "2.0", "id": "odd", "method": "tools/call", "params": {"name": "nope", "arguments": {}}}
    body = json.dumps([rank_call("a", limit=1), odd]).encode()
    # The client stays: a batch whose client leaves is served no further.
    batch = await app.request(body=body, headers={"MCP-Protocol-Version": "2025-03-26"}, leave=False)
    answers = {answer["id"]: answer for answer in batch.json()}
    assert answers["a"]["result"] == alone.json()["result"]
    assert answers["odd"]["error"]["code"] == -32602  # an unknown tool: the SDK's to refuse
    assert "the SDK answered" not in json.dumps([alone.json(), modern.json(), batch.json()])


@pytest.mark.usefixtures("marked_sdk")
async def test_a_2026_07_28_call_whose_headers_disagree_is_left_to_the_sdks_entry(app: Driven) -> None:
    answer = await app.post_json(rank_call(3, modern=True), {**MODERN, "Mcp-Name": "another_tool"})
    assert answer.status == 400 and answer.json()["id"] == 3 and "error" in answer.json()
