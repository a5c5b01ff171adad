"""Calls of rank_search_results answered by codescout itself (the door) against the SDK's own answers.

In process, each call goes once through the door (`answers/door.py`) and once to the SDK's
`Server` on memory streams, after the same opening (a handshake at each version, or none at
2026-07-28), and the two answers must be equal as JSON: for every contract vector, for tool
errors, for each `_meta` the call may carry, and for generated calls whenever the door takes
them. Through the stdio server as a subprocess: such calls are answered (with the door shut
the SDK answers the same bytes' JSON), alone and in a batch, a cancelled one is never
answered, and what the door does not take (another tool, a call before the handshake) is
still the SDK's. Over HTTP, at both eras, alone and in a batch, likewise.
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from mcp.shared.message import SessionMessage

from codescout_mcp.answers.door import Call, Session
from codescout_mcp.answers.jsonrpc import Dropped, Refused, check_envelope, encode, sdk_message
from codescout_mcp.core.fastpath import FAST_BYTES
from codescout_mcp.http.exchange import encoded, exchange
from codescout_mcp.server import build_server
from codescout_mcp.tools.toolbox import Offer
from tests.helpers import ROOT
from tests.httpserver import RunningServer, serving

VECTORS = sorted((ROOT / "tests" / "vectors").glob("*.json"))
HANDSHAKE_VERSIONS = ["2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25"]
MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
HITS = [
    {"path": "a.py", "matches": 3, "last_modified_days": 1, "owner": "ann"},
    {"path": "b.py", "matches": 1, "last_modified_days": 40},
]


def opening(version: str | None) -> list[dict[str, Any]]:
    """What a client sends before its first call: a handshake at `version`, or nothing (2026-07-28)."""
    if version is None:
        return []
    params = {"protocolVersion": version, "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}
    return [
        {"jsonrpc": "2.0", "id": "open", "method": "initialize", "params": params},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]


def call(rid: Any, params: dict[str, Any], version: str | None) -> dict[str, Any]:
    if version is None:
        params = {**params, "_meta": {**MODERN_META, **params.get("_meta", {})}}
    return {"jsonrpc": "2.0", "id": rid, "method": "tools/call", "params": params}


def sdk_answers(version: str | None, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The SDK's answers to `calls` after the opening for `version`, in the order of `calls`."""
    wanted = {json.dumps(c["id"]) for c in calls}
    answers: dict[str, dict[str, Any]] = {}

    async def run() -> None:
        server = build_server()
        to_server, reads = anyio.create_memory_object_stream[SessionMessage | Exception](64)
        writes, from_server = anyio.create_memory_object_stream[SessionMessage](64)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.run, reads, writes, server.create_initialization_options())
            for message in opening(version) + calls:
                model = sdk_message(check_envelope(message))
                assert not isinstance(model, (Refused, Dropped)), model
                await to_server.send(SessionMessage(model))
            with anyio.fail_after(60):
                while len(answers) < len(wanted):
                    item = await from_server.receive()
                    dumped = item.message.model_dump(by_alias=True, exclude_unset=True, mode="json")
                    answer = json.loads(encode(dumped))
                    if json.dumps(answer.get("id")) in wanted:
                        answers[json.dumps(answer["id"])] = answer
            tasks.cancel_scope.cancel()

    anyio.run(run)
    return [answers[json.dumps(c["id"])] for c in calls]


DOOR = Offer().door()


def routed(message: dict[str, Any], version: str | None) -> Call | None:
    """The door's call for `message` in an initialized session at `version` (None: 2026-07-28), if it takes it."""
    route = DOOR.route(check_envelope(json.loads(json.dumps(message))), Session.stateless(version))
    assert route is None or isinstance(route, Call)
    return route


def direct_answers(version: str | None, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for message in calls:
        route = routed(message, version)
        assert route is not None, message
        found.append(json.loads(encode(anyio.run(route.answer))))
    return found


def vector_calls() -> list[dict[str, Any]]:
    calls = []
    for index, path in enumerate(VECTORS):
        arguments = json.loads(path.read_text(encoding="utf-8"))["arguments"]
        if not isinstance(arguments, dict):
            continue  # arguments that are not an object: the SDK's to refuse
        calls.append({"name": "rank_search_results", "arguments": arguments, "_index": index})
    return calls


ERRORS: list[Any] = [
    {},
    {"hits": []},
    {"hits": "x"},
    {"hits": [{"path": "a", "matches": -1}]},
    {"hits": HITS, "limit": 0},
    {"hits": HITS, "limit": True},
    {"hits": HITS, "extra": 1},
    {"hits": [{"path": "a", "matches": 1}, {"path": "a", "matches": 2}]},
    {"hits": [{"path": "\ud800", "matches": 1}]},
]
METAS: list[Any] = [
    None,
    {},
    {"progressToken": 1},
    {"progressToken": "p"},
    {"progressToken": "p", "other": {"x": [1]}},
]


def params_of(arguments: Any, meta: Any = None, *, with_arguments: bool = True) -> dict[str, Any]:
    params: dict[str, Any] = {"name": "rank_search_results"}
    if with_arguments:
        params["arguments"] = arguments
    if meta is not None:
        params["_meta"] = meta
    return params


@pytest.mark.parametrize("version", [*HANDSHAKE_VERSIONS, None], ids=lambda v: v or "2026-07-28")
def test_direct_answers_are_the_sdks(version: str | None) -> None:
    calls = [call(n, {k: v for k, v in c.items() if k != "_index"}, version) for n, c in enumerate(vector_calls())]
    base = len(calls)
    calls += [call(base + n, params_of(arguments), version) for n, arguments in enumerate(ERRORS)]
    base = len(calls)
    calls += [call(base + n, params_of({"hits": HITS}, meta), version) for n, meta in enumerate(METAS)]
    calls.append(call("no-arguments", params_of(None, with_arguments=False), version))
    calls.append(call("string-id", params_of({"hits": HITS, "limit": 1}), version))
    assert direct_answers(version, calls) == sdk_answers(version, calls)


def test_a_large_call_is_answered_as_the_sdk_does() -> None:
    hits = [{"path": f"src/{n:06}.py", "matches": 1 + n % 17, "last_modified_days": n % 400} for n in range(6_000)]
    calls = [call(1, params_of({"hits": hits, "limit": 100}), "2025-11-25")]
    assert direct_answers("2025-11-25", calls) == sdk_answers("2025-11-25", calls)


def test_what_the_door_does_not_vouch_for_is_left_to_the_sdk() -> None:
    def taken(params: Any, *, modern: bool = False, method: str = "tools/call", with_id: bool = True) -> bool:
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method, "params": params}
        if with_id:
            message["id"] = 1
        session = Session.stateless(None if modern else "2025-11-25")
        return isinstance(DOOR.route(message, session), Call)

    good = params_of({"hits": HITS})
    assert taken(good)
    assert not taken(good, with_id=False)
    assert not taken(good, method="tools/list")
    assert not taken({**good, "name": "rank_workspace_hits"})  # not offered without a workspace
    assert not taken({**good, "name": 5})
    assert not taken({**good, "task": {}})
    assert not taken({**good, "arguments": [1]})
    assert not taken({**good, "arguments": None})
    assert not taken({**good, "_meta": {"progressToken": 1.5}})
    assert not taken({**good, "_meta": {"progressToken": True}})
    assert not taken({**good, "_meta": 3})
    assert not taken(None)
    assert not taken(good, modern=True)  # no envelope: the SDK refuses it on a 2026-07-28 connection
    assert taken({**good, "_meta": MODERN_META}, modern=True)
    bad_version = {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}
    assert not taken({**good, "_meta": bad_version}, modern=True)
    no_info = {k: v for k, v in MODERN_META.items() if "clientInfo" not in k}
    assert not taken({**good, "_meta": no_info}, modern=True)


JSON_LEAF = st.none() | st.booleans() | st.integers(-(2**70), 2**70) | st.floats(allow_nan=False) | st.text(max_size=4)
JSON = st.recursive(
    JSON_LEAF,
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=4), inner, max_size=3),
    max_leaves=8,
)
META_KEYS = st.sampled_from(["progressToken", "other", *MODERN_META])
METAS_ANY = st.dictionaries(META_KEYS, JSON | st.sampled_from(list(MODERN_META.values())), max_size=4)
HIT: st.SearchStrategy[dict[str, Any]] = st.fixed_dictionaries(
    {"path": st.sampled_from(["a", "b", "c/d.py", "é"]), "matches": st.integers(-1, 5)},
    optional={"last_modified_days": st.integers(-1, 500) | st.floats(0, 9), "owner": st.none() | st.text(max_size=3)},
)
ARGUMENTS = st.fixed_dictionaries(
    {"hits": st.lists(HIT, max_size=4) | JSON}, optional={"limit": st.integers(-1, 5) | JSON, "x": JSON}
)


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    era=st.sampled_from([*HANDSHAKE_VERSIONS, None]),
    arguments=ARGUMENTS | JSON,
    meta=st.none() | METAS_ANY,
)
def test_whatever_the_door_takes_it_answers_as_the_sdk(era: str | None, arguments: Any, meta: Any) -> None:
    if era is None:  # the envelope, with whatever was generated over it
        meta = {**MODERN_META, **(meta or {})}
    message = {"jsonrpc": "2.0", "id": 7, "method": "tools/call", "params": params_of(arguments, meta)}
    if routed(message, era) is None:
        return
    assert direct_answers(era, [message]) == sdk_answers(era, [message])


# --- through the stdio server -------------------------------------------------------------------

SERVE_WITHOUT_DIRECT = (
    "import sys\nfrom codescout_mcp.stdio import serve_stdio\nsys.exit(serve_stdio(early_answers=False))\n"
)


def converse(lines: list[dict[str, Any]], *, ours: bool = True, timeout: float = 60) -> list[dict[str, Any]]:
    argv = [sys.executable, "-m", "codescout_mcp", "mcp"] if ours else [sys.executable, "-c", SERVE_WITHOUT_DIRECT]
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    done = subprocess.run(argv, input=data, capture_output=True, timeout=timeout, cwd=ROOT, check=False)
    assert done.returncode == 0, done.stderr.decode()
    assert b"Traceback" not in done.stderr
    return [json.loads(line) for line in done.stdout.splitlines()]


def by_id(answers: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {json.dumps(answer["id"]): answer for answer in answers}


@pytest.mark.parametrize("version", ["2024-11-05", "2025-11-25", None], ids=lambda v: v or "2026-07-28")
def test_the_stdio_server_answers_calls_as_the_sdk_would(version: str | None) -> None:
    lines = [
        *opening(version),
        call(1, params_of({"hits": HITS}), version),
        call(2, params_of({"hits": []}), version),
        call(3, {"name": "nope", "arguments": {}}, version),
        call(4, params_of({"hits": HITS}, {"progressToken": "t"}), version),
    ]
    ours, theirs = by_id(converse(lines)), by_id(converse(lines, ours=False))
    assert ours == theirs
    assert set(ours) >= {"1", "2", "3", "4"}
    assert ours["1"]["result"]["isError"] is False
    assert ours["2"]["result"]["isError"] is True


def test_a_call_before_the_handshake_is_the_sdks_to_refuse() -> None:
    lines = [call(1, params_of({"hits": HITS}), "2025-11-25"), *opening("2025-11-25")]
    ours, theirs = by_id(converse(lines)), by_id(converse(lines, ours=False))
    assert ours == theirs
    assert "error" in ours["1"]


# A server whose SDK handler for tools/call says so instead of answering: whatever reaches it was
# not taken by the door. (The SDK's own refusals, like an unknown tool, still come from the SDK.)
SERVE_WITH_A_MARKED_SDK = """
import sys
from codescout_mcp.answers import words
from codescout_mcp import server

async def marked(self, ctx, params):
    import mcp_types
    if params.name not in self.by_name:
        return await original(self, ctx, params)
    return mcp_types.CallToolResult.model_validate(words.tool_error("the SDK answered"), by_name=False)

original = server.Tools.call_tool
server.Tools.call_tool = marked
from codescout_mcp.stdio import serve_stdio
sys.exit(serve_stdio(workspace=sys.argv[1] if len(sys.argv) > 1 else None))
"""


def converse_marked(lines: list[dict[str, Any]], *args: str) -> dict[str, dict[str, Any]]:
    data = b"".join(json.dumps(line).encode() + b"\n" for line in lines)
    argv = [sys.executable, "-c", SERVE_WITH_A_MARKED_SDK, *args]
    done = subprocess.run(argv, input=data, capture_output=True, timeout=60, cwd=ROOT, check=False)
    assert done.returncode == 0 and b"Traceback" not in done.stderr, done.stderr.decode()
    answers: dict[str, dict[str, Any]] = {}
    for line in done.stdout.splitlines():
        value = json.loads(line)
        for answer in value if isinstance(value, list) else [value]:
            answers[json.dumps(answer["id"])] = answer
    return answers


@pytest.mark.parametrize("version", ["2025-03-26", "2025-11-25", None], ids=lambda v: v or "2026-07-28")
def test_the_door_answers_every_well_formed_call_alone_and_in_a_batch(version: str | None) -> None:
    """The same call gets the same answer alone and inside a 2025-03-26 batch, and the SDK is never asked."""
    alone = call("alone", params_of({"hits": HITS, "limit": 1}), version)
    lines = [*opening(version), alone]
    if version == "2025-03-26":
        in_batch = [
            call("in-batch", params_of({"hits": HITS, "limit": 1}), version),
            call("bad", params_of({"hits": []}), version),
            call("odd", {"name": "nope", "arguments": {}}, version),
            {"jsonrpc": "2.0", "id": "ping", "method": "ping"},
        ]
        lines.append(in_batch)  # type: ignore[arg-type]
    answers = converse_marked(lines)
    assert answers['"alone"']["result"]["structuredContent"]["counts"] == {"hits": 2, "returned": 1}
    if version == "2025-03-26":
        assert answers['"in-batch"']["result"] == answers['"alone"']["result"]
        assert answers['"bad"']["result"]["isError"] is True
        assert "the SDK answered" not in json.dumps(answers)
        assert answers['"odd"']["error"]["code"] == -32602  # an unknown tool: the SDK's to refuse
        assert answers['"ping"']["result"] == {}


def test_a_workspace_call_right_after_initialize_does_not_wait_for_the_sdk(tmp_path: Path) -> None:
    """With the SDK's import held back for 20 s, the handshake and a rank_workspace_hits call are
    answered at once, by codescout, and the SDK (once up) is never asked for the call."""
    (tmp_path / "a.py").write_text("x\n", encoding="utf-8")
    script = (
        "import sys, time\nfrom codescout_mcp import stdio\n"
        "run = stdio.Loader._run\nstdio.Loader._run = lambda self: (time.sleep(20), run(self))\n"
        "sys.exit(stdio.serve_stdio(workspace=sys.argv[1]))\n"
    )
    arguments = {"hits": [{"path": "a.py", "matches": 2}]}
    lines = [*opening("2025-11-25"), call(1, {"name": "rank_workspace_hits", "arguments": arguments}, "2025-11-25")]
    proc = subprocess.Popen(
        [sys.executable, "-c", script, str(tmp_path)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        cwd=ROOT,
    )
    assert proc.stdin is not None and proc.stdout is not None
    started = time.monotonic()
    try:
        proc.stdin.write(b"".join(json.dumps(line).encode() + b"\n" for line in lines))
        proc.stdin.flush()
        opened = json.loads(proc.stdout.readline())
        answered = json.loads(proc.stdout.readline())
        elapsed = time.monotonic() - started
    finally:
        proc.kill()
        proc.communicate()
    assert opened["id"] == "open" and "result" in opened
    assert answered["id"] == 1
    assert answered["result"]["structuredContent"]["results"][0]["path"] == "a.py"
    assert elapsed < 15, elapsed  # the SDK is held back for 20 s


def big_hits(count: int) -> list[dict[str, Any]]:
    return [{"path": f"src/{n:07}.py", "matches": 1 + n % 9, "last_modified_days": n % 300} for n in range(count)]


def test_a_cancelled_direct_call_is_not_answered_and_the_session_goes_on() -> None:
    lines = [
        *opening("2025-11-25"),
        call(2, params_of({"hits": big_hits(150_000), "limit": 3}), "2025-11-25"),
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 2}},
        {"jsonrpc": "2.0", "id": 3, "method": "ping"},
        call(4, params_of({"hits": HITS}), "2025-11-25"),
    ]
    answers = by_id(converse(lines))
    assert set(answers) == {'"open"', "3", "4"}
    assert answers["4"]["result"]["structuredContent"]["counts"] == {"hits": 2, "returned": 2}


def test_a_cancel_naming_another_id_leaves_a_direct_call_answered() -> None:
    lines = [
        *opening("2025-11-25"),
        call(2, params_of({"hits": big_hits(20_000), "limit": 3}), "2025-11-25"),
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": "2"}},
    ]
    answers = by_id(converse(lines))
    assert answers["2"]["result"]["structuredContent"]["counts"] == {"hits": 20_000, "returned": 3}


def over_fast_bytes(version: str | None, rid: Any, *, duplicate: bool = False, meta: Any = None) -> dict[str, Any]:
    """A call whose line is over FAST_BYTES, so that the fast path reads it (`fastpath.call_message`)."""
    hits = big_hits(40_000)
    if duplicate:
        hits[-1] = {**hits[-1], "path": hits[7]["path"]}
    message = call(rid, params_of({"hits": hits, "limit": 5}, meta), version)
    assert len(json.dumps(message)) > FAST_BYTES
    return message


@pytest.mark.parametrize("version", ["2025-11-25", None], ids=lambda v: v or "2026-07-28")
def test_calls_over_two_mib_are_answered_as_the_sdk_does(version: str | None) -> None:
    """Such calls are read by the fast path; the SDK (the door shut) gets them as JSON values."""
    lines = [
        *opening(version),
        over_fast_bytes(version, 1),
        over_fast_bytes(version, "dup", duplicate=True),
        over_fast_bytes(version, 3, meta={"progressToken": "t"}),
    ]
    if version is not None:
        lines.insert(0, over_fast_bytes(version, "early"))  # before the handshake: the SDK's to refuse
    ours, theirs = by_id(converse(lines)), by_id(converse(lines, ours=False))
    assert ours == theirs
    assert ours["1"]["result"]["structuredContent"]["counts"] == {"hits": 40_000, "returned": 5}
    assert ours['"dup"']["result"]["content"][0]["text"] == (
        'hits[39999].path: duplicate path "src/0000007.py", first given at hits[7]'
    )
    if version is not None:
        assert "error" in ours['"early"']


def test_many_large_direct_calls_at_once_are_each_answered(tmp_path: Path) -> None:
    hits = big_hits(8_000)
    lines = [*opening("2025-11-25")] + [call(n, params_of({"hits": hits, "limit": 1}), "2025-11-25") for n in range(12)]
    answers = by_id(converse(lines))
    assert set(answers) == {'"open"', *map(str, range(12))}
    assert all(answers[str(n)]["result"]["structuredContent"]["counts"]["hits"] == 8_000 for n in range(12))


# --- through the HTTP server --------------------------------------------------------------------


@pytest.fixture(scope="module")
def http_server() -> Iterator[RunningServer]:
    yield from serving()


def http_calls() -> list[dict[str, Any]]:
    return [
        call(1, params_of({"hits": HITS}), "2025-11-25"),
        call(2, params_of({"hits": [{"path": "a", "matches": 0}]}), "2025-11-25"),
        call("three", params_of({"hits": HITS, "limit": 1}, {"progressToken": 9}), "2025-11-25"),
        call(4, params_of({"hits": [{"path": "\ud800", "matches": 1, "last_modified_days": 0}]}), "2025-11-25"),
        call(5, params_of({"hits": big_hits(6_000), "limit": 2}), "2025-11-25"),
        call(6, {"name": "nope", "arguments": {}}, "2025-11-25"),
    ]


def exchanged(version: str, calls: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """What the SDK answers each call over HTTP at `version` (`http/exchange.py`'s way to it)."""

    async def run() -> list[dict[str, Any]]:
        server = build_server()
        found = []
        for message in calls:
            model = sdk_message(check_envelope(json.loads(json.dumps(message))))
            assert not isinstance(model, (Refused, Dropped)), model
            answer = await exchange(server, model, version)
            assert answer is not None
            found.append(json.loads(encoded(answer)))
        return found

    return anyio.run(run)


@pytest.mark.parametrize("version", ["2025-03-26", "2025-06-18", "2025-11-25"])
def test_the_http_server_answers_each_call_as_the_sdk_does(http_server: RunningServer, version: str) -> None:
    calls = http_calls()
    expected = exchanged(version, calls)
    for message, wanted in zip(calls, expected, strict=True):
        status, body = http_server.post(encode(message), {"MCP-Protocol-Version": version})
        assert status == 200, body
        assert json.loads(body) == wanted


def test_the_http_server_answers_a_batch_of_calls_as_the_sdk_does(http_server: RunningServer) -> None:
    calls = http_calls()
    status, body = http_server.post(encode(calls), {"MCP-Protocol-Version": "2025-03-26"})
    assert status == 200, body
    assert json.loads(body) == exchanged("2025-03-26", calls)


def test_an_enveloped_call_at_a_handshake_version_is_left_to_the_sdk(http_server: RunningServer) -> None:
    """Over HTTP the SDK's stateless path takes such a call (stdio's refuses it): the SDK decides."""
    message = call(1, params_of({"hits": HITS}, MODERN_META), "2025-11-25")
    assert routed(message, "2025-11-25") is None
    _, body = http_server.post(encode(message))
    assert json.loads(body) == exchanged("2025-11-25", [message])[0]


MODERN_HEADERS = {"MCP-Protocol-Version": "2026-07-28", "Mcp-Method": "tools/call", "Mcp-Name": "rank_search_results"}


def test_a_2026_07_28_call_over_http_is_answered_as_the_sdk_does(http_server: RunningServer) -> None:
    calls = [
        call(1, params_of({"hits": HITS}), None),
        call(2, params_of({"hits": [{"path": "a", "matches": 0}]}), None),
        call("three", params_of({"hits": HITS, "limit": 1}, {"progressToken": 9}), None),
        call(4, params_of({"hits": big_hits(6_000), "limit": 2}), None),
    ]
    expected = sdk_answers(None, calls)
    for message, wanted in zip(calls, expected, strict=True):
        status, body = http_server.post(encode(message), MODERN_HEADERS)
        assert status == 200, body
        assert json.loads(body) == wanted
        assert json.loads(body)["result"]["_meta"] == {
            "io.modelcontextprotocol/serverInfo": {
                "name": "codescout",
                "version": wanted["result"]["_meta"]["io.modelcontextprotocol/serverInfo"]["version"],
            }
        }


def test_calls_over_two_mib_over_http_are_answered_as_the_sdk_does(http_server: RunningServer) -> None:
    handshake = [over_fast_bytes("2025-11-25", 1), over_fast_bytes("2025-11-25", 2, duplicate=True)]
    for message, wanted in zip(handshake, exchanged("2025-11-25", handshake), strict=True):
        status, body = http_server.post(encode(message), {"MCP-Protocol-Version": "2025-11-25"})
        assert (status, json.loads(body)) == (200, wanted)
    # With the 2026-07-28 envelope at a handshake version: the SDK's, from the JSON values.
    enveloped = over_fast_bytes("2025-11-25", 3, meta=MODERN_META)
    status, body = http_server.post(encode(enveloped))
    assert json.loads(body) == exchanged("2025-11-25", [enveloped])[0]
    modern = [over_fast_bytes(None, 4), over_fast_bytes(None, 5, duplicate=True)]
    for message, wanted in zip(modern, sdk_answers(None, modern), strict=True):
        status, body = http_server.post(encode(message), MODERN_HEADERS)
        assert (status, json.loads(body)) == (200, wanted)
    status, body = http_server.post(encode(modern[0]), {**MODERN_HEADERS, "Mcp-Name": "nope"})
    assert status == 400 and json.loads(body)["id"] == 4  # headers that disagree: the SDK's own entry, from the body


@pytest.mark.parametrize(
    "headers",
    [
        {**MODERN_HEADERS, "Mcp-Name": "rank_workspace_hits"},
        {**MODERN_HEADERS, "Mcp-Method": "tools/list"},
        {k: v for k, v in MODERN_HEADERS.items() if k != "Mcp-Method"},
    ],
    ids=["another-name", "another-method", "no-method"],
)
def test_a_2026_07_28_call_whose_headers_disagree_is_the_sdks_to_refuse(
    http_server: RunningServer, headers: dict[str, str]
) -> None:
    status, body = http_server.post(encode(call(1, params_of({"hits": HITS}), None)), headers)
    answer = json.loads(body)
    assert status == 400 and "error" in answer, body
    assert answer["id"] == 1 and answer["error"]["code"] != -32603
