"""The early answers (`answers/handshake.py`, through `stdio/early.py`) against the SDK's own, for any SDK.

In process: each sequence of messages goes once through `EarlyAnswers` (what the server says
before the SDK loads) and once through the SDK's `Server` on memory streams (what the relay
gives it once it is up), and every early answer must equal the SDK's as JSON. The sequences
are the first messages real hosts send (tests/data/first-messages/, recorded through a relay)
and variations made to find the edges: params of every shape, each era, each method a host
sends before its first tool call. Every request a host sends before its first tool call must
be answered early; anything the early answers cannot vouch for must be left to the SDK.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import anyio
import pytest
from mcp.shared.message import SessionMessage

from codescout_mcp.answers.door import Session
from codescout_mcp.answers.jsonrpc import Dropped, Refused, check_envelope, encode, sdk_message
from codescout_mcp.server import build_server
from codescout_mcp.stdio.early import EarlyAnswers
from codescout_mcp.stdio.framing import Line
from codescout_mcp.tools.toolbox import Offer
from tests.helpers import ROOT

FIRST_MESSAGES = ROOT / "tests" / "data" / "first-messages"


class Collected:
    """Stands in for the stdout writer: keeps what is sent."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send(self, data: bytes) -> None:
        self.sent.append(data)

    def reader_gone(self) -> bool:
        return False


def early_answers(messages: list[dict[str, Any]], *, workspace: bool, folder: Path) -> dict[Any, dict[str, Any]]:
    """What the server answers before the SDK is up, by request id (tool calls left out)."""
    writer = Collected()
    door = Offer(str(folder) if workspace else None).door()
    early = EarlyAnswers(writer, 1 << 20, door, Session(sdk_ready=False))  # type: ignore[arg-type]
    for message in messages:
        if message.get("method") == "tools/call":
            break  # tool calls are the door's, held to the SDK's answers in tests/stdio/test_direct_calls.py
        early._take(Line(json.dumps(message).encode()))
    return {answer["id"]: answer for answer in map(json.loads, writer.sent)}


def sdk_answers(messages: list[dict[str, Any]], *, workspace: bool, folder: Path) -> dict[Any, dict[str, Any]]:
    """What the SDK's Server answers to the same messages, on one connection, by request id."""
    requests = [m for m in messages if "id" in m and "method" in m and m.get("method") != "tools/call"]
    answers: dict[Any, dict[str, Any]] = {}

    async def run() -> None:
        server = build_server(workspace=str(folder) if workspace else None)
        to_server, reads = anyio.create_memory_object_stream[SessionMessage | Exception](64)
        writes, from_server = anyio.create_memory_object_stream[SessionMessage](64)
        async with anyio.create_task_group() as tasks:
            tasks.start_soon(server.run, reads, writes, server.create_initialization_options())
            for message in messages:
                if message.get("method") == "tools/call":
                    break  # tool calls are the SDK's in both cases
                model = sdk_message(check_envelope(message))
                assert not isinstance(model, (Refused, Dropped)), model
                await to_server.send(SessionMessage(model))
            with anyio.fail_after(30):
                while len(answers) < len(requests):
                    item = await from_server.receive()
                    answer = json.loads(encode(item.message.model_dump(by_alias=True, exclude_unset=True, mode="json")))
                    answers[answer["id"]] = answer
            tasks.cancel_scope.cancel()

    anyio.run(run)
    return answers


def before_the_first_call(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    found = []
    for message in messages:
        if message.get("method") == "tools/call":
            break
        found.append(message)
    return found


def recorded() -> list[Path]:
    return sorted(path for path in FIRST_MESSAGES.glob("*.json") if "instant-replay" not in path.name)


@pytest.mark.parametrize("path", recorded(), ids=lambda path: path.stem)
def test_a_hosts_first_requests_are_answered_early_with_the_sdks_answers(path: Path, tmp_path: Path) -> None:
    record = json.loads(path.read_text(encoding="utf-8"))
    messages = before_the_first_call(record["sent"])
    workspace = "workspace" in path.stem
    early = early_answers(messages, workspace=workspace, folder=tmp_path)
    sdk = sdk_answers(messages, workspace=workspace, folder=tmp_path)
    requests = [m["id"] for m in messages if "id" in m and "method" in m]
    methods = [m.get("method") for m in messages]
    if methods[0] == "server/discover" and "initialize" in methods:
        # Claude Code sent `initialize` on a 2026-07-28 connection because its probe went
        # unanswered (the server of the recording was late): from there the SDK answers.
        assert list(early) == requests[:1]
    else:
        assert list(early) == requests, f"{path.stem}: not all answered before the SDK loaded"
    assert {rid: sdk[rid] for rid in early} == early


MODERN_META = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}
INITIALIZE = {"protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "1"}}


def initialized(version: str = "2025-11-25") -> list[dict[str, Any]]:
    return [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {**INITIALIZE, "protocolVersion": version}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]


def request(rid: int, method: str, params: Any = None) -> dict[str, Any]:
    message: dict[str, Any] = {"jsonrpc": "2.0", "id": rid, "method": method}
    if params is not None:
        message["params"] = params
    return message


# Each shape of params, and whether the server answers it before the SDK is up (True: the early
# path is sure of the SDK's answer, success or refusal; False: the SDK must say). The answers
# given early are held to the SDK's own below; which ones are given early is pinned here, so that
# a check that grows stricter (leaving to the SDK what it could answer) shows as well as one
# that grows looser (answering what the SDK would refuse).
ICON = {"src": "data:image/png;base64,AA==", "mimeType": "image/png", "sizes": ["48x48"], "theme": "light"}
CLIENT = {"name": "t", "version": "1"}
INITIALIZE_VARIANTS: list[tuple[Any, bool]] = [
    *(({**INITIALIZE, "protocolVersion": version}, True)
      for version in ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25", "2026-07-28", "1999-01-01", "")),
    ({"capabilities": {}, "clientInfo": CLIENT}, True),  # refused early, as the SDK refuses it
    ({**INITIALIZE, "protocolVersion": 5}, True),
    ({**INITIALIZE, "capabilities": None}, True),
    ({**INITIALIZE, "capabilities": {"roots": 5}}, False),
    ({**INITIALIZE, "capabilities": {"roots": {"listChanged": "yes"}}}, False),
    ({**INITIALIZE, "capabilities": {"roots": {"listChanged": True}, "sampling": {}, "elicitation": {"form": {}}}},
     True),
    ({**INITIALIZE, "capabilities": {"experimental": {"a": {}}, "extensions": {"x/ui": {"mimeTypes": ["t"]}}}}, True),
    ({**INITIALIZE, "capabilities": {"experimental": {"a": 1}}}, False),
    ({**INITIALIZE, "capabilities": {"extensions": {"x/ui": 1}}}, False),
    ({**INITIALIZE, "capabilities": {"tasks": {"list": {}}, "unknown": 7}}, True),
    # Nested deeper than one level: each member of the type the SDK's models expect, or left to it.
    ({**INITIALIZE, "capabilities": {"sampling": {"context": {}, "tools": {}},
                                     "elicitation": {"form": {}, "url": {}},
                                     "tasks": {"list": {}, "cancel": {},
                                               "requests": {"sampling": {"createMessage": {}},
                                                            "elicitation": {"create": {}}}}}}, True),
    ({**INITIALIZE, "capabilities": {"tasks": {"requests": {"elicitation": 5}}}}, False),
    ({**INITIALIZE, "capabilities": {"tasks": {"requests": {"elicitation": {"create": 5}}}}}, False),
    ({**INITIALIZE, "capabilities": {"tasks": {"requests": {"sampling": {"createMessage": []}}}}}, False),
    ({**INITIALIZE, "capabilities": {"tasks": {"requests": {"sampling": {"createMessage": {}}}, "cancel": {}}}}, True),
    ({**INITIALIZE, "capabilities": {"tasks": {"list": 1}}}, False),
    ({**INITIALIZE, "capabilities": {"tasks": {"cancel": "yes"}}}, False),
    ({**INITIALIZE, "capabilities": {"sampling": {"context": "yes"}}}, False),
    ({**INITIALIZE, "capabilities": {"sampling": {"tools": 5}}}, False),
    ({**INITIALIZE, "capabilities": {"elicitation": {"form": {}, "url": None}}}, False),
    ({**INITIALIZE, "capabilities": {"elicitation": {"form": 5}}}, False),
    ({**INITIALIZE, "capabilities": {"elicitation": {"url": []}}}, False),
    ({**INITIALIZE, "capabilities": {"tasks": {"list": {}, "requests": {"other": 1}}}}, True),
    ({**INITIALIZE, "clientInfo": {"name": "t"}}, True),  # refused early
    ({**INITIALIZE, "clientInfo": "t"}, True),
    ({**INITIALIZE, "clientInfo": {"name": "t", "version": 1}}, True),
    ({**INITIALIZE, "clientInfo": {**CLIENT, "title": 3}}, False),
    ({**INITIALIZE, "clientInfo": {**CLIENT, "icons": [{"src": "x", "theme": "dusk"}]}}, False),
    ({**INITIALIZE, "clientInfo": {**CLIENT, "websiteUrl": "u", "icons": [{"src": "x"}]}}, True),
    ({**INITIALIZE, "clientInfo": {**CLIENT, "title": "T", "description": "d", "icons": [ICON]}}, True),
    ({**INITIALIZE, "clientInfo": {**CLIENT, "icons": [{**ICON, "theme": "dark"}]}}, True),
    ({**INITIALIZE, "clientInfo": {**CLIENT, "description": 3}}, False),
    ({**INITIALIZE, "clientInfo": {**CLIENT, "websiteUrl": 3}}, False),
    ({**INITIALIZE, "clientInfo": {**CLIENT, "icons": [{"src": 5}]}}, False),
    ({**INITIALIZE, "clientInfo": {**CLIENT, "icons": [{**ICON, "mimeType": 5}]}}, False),
    ({**INITIALIZE, "clientInfo": {**CLIENT, "icons": [{**ICON, "sizes": "48x48"}]}}, False),
    ({**INITIALIZE, "clientInfo": {**CLIENT, "icons": [{**ICON, "sizes": [48]}]}}, False),
    ({**INITIALIZE, "clientInfo": {**CLIENT, "icons": {"src": "x"}}}, False),
    ({**INITIALIZE, "_meta": {"progressToken": 1}}, True),
    ({**INITIALIZE, "_meta": {"progressToken": 1.5}}, False),
    ({**INITIALIZE, "_meta": 3}, False),
    ({}, True),
]  # fmt: skip

LIST_PARAMS: list[tuple[Any, bool]] = [
    (None, True),
    ({}, True),
    ({"_meta": {}}, True),
    ({"_meta": {"progressToken": 0}}, True),
    ({"_meta": {"progressToken": "p", "other": [1]}}, True),
    ({"_meta": {"progressToken": True}}, False),
    ({"_meta": {"progressToken": 2.5}}, False),
    ({"_meta": None}, False),
    ({"cursor": "next"}, True),
    ({"_meta": {"progressToken": 1}, "cursor": "next"}, True),
    ({"cursor": 5}, False),
    ({"cursor": None}, False),
    ({"extra": 1}, False),
]
LIST_METHODS = ["tools/list", "ping", "prompts/list", "resources/list", "resources/templates/list", "server/discover"]

# (params, answered early as `tools/list`, as another list request or `ping`); `initialize` at
# 2026-07-28 is always answered early. Only `tools/list` has a cursor to judge.
MODERN_VARIANTS: list[tuple[Any, bool, bool]] = [
    ({"_meta": MODERN_META}, True, True),
    ({"_meta": {**MODERN_META, "progressToken": 3}}, True, True),
    ({"_meta": MODERN_META, "cursor": "x"}, True, False),
    ({"_meta": {k: v for k, v in MODERN_META.items() if "clientInfo" not in k}}, False, False),
    ({"_meta": {k: v for k, v in MODERN_META.items() if "Capabilities" not in k}}, False, False),
    ({"_meta": {**MODERN_META, "io.modelcontextprotocol/protocolVersion": "2099-01-01"}}, False, False),
    ({"_meta": {**MODERN_META, "io.modelcontextprotocol/clientInfo": {"name": "t"}}}, False, False),
    ({"_meta": {**MODERN_META, "io.modelcontextprotocol/clientCapabilities": {"roots": {}, "elicitation": {}}}},
     True, True),
]  # fmt: skip


def cases() -> list[tuple[str, list[dict[str, Any]], Any, bool]]:
    """(name, messages, the request whose answer is pinned, whether it is answered early)."""
    found: list[tuple[str, list[dict[str, Any]], Any, bool]] = []
    for index, (params, early) in enumerate(INITIALIZE_VARIANTS):
        found.append((f"initialize-{index}", [request(0, "initialize", params), request(1, "tools/list")], 0, early))
    for version in ("2024-11-05", "2025-11-25"):
        for method in LIST_METHODS:
            for index, (params, early) in enumerate(LIST_PARAMS):
                messages = [*initialized(version), request(1, method, params)]
                if method == "server/discover":  # a 2026-07-28 method: at a handshake version, the SDK's
                    early = False
                if method == "ping" and isinstance(params, dict) and "cursor" in params:  # not a list
                    early = False
                found.append((f"{version}-{method}-{index}", messages, 1, early))
    for method in [*LIST_METHODS, "initialize"]:
        for index, (params, as_tools_list, as_other) in enumerate(MODERN_VARIANTS):
            early = True if method == "initialize" else as_tools_list if method == "tools/list" else as_other
            found.append((f"modern-{method}-{index}", [request(1, method, params)], 1, early))
    found.append(
        ("modern-then-legacy", [request(1, "tools/list", {"_meta": MODERN_META}), request(2, "ping")], 2, False)
    )
    found.append(("legacy-then-modern", [*initialized(), request(1, "tools/list", {"_meta": MODERN_META})], 1, False))
    found.append(("ping-before-initialize", [request(1, "ping"), request(2, "tools/list")], 2, False))
    found.append(("list-before-initialize", [request(1, "tools/list"), *initialized()], 1, False))
    # After an initialize refused early, the SDK's connection is not initialized: it answers the rest.
    refused = request(0, "initialize", {"capabilities": {}, "clientInfo": CLIENT})
    found.append(("initialize-after-a-refusal", [refused, request(1, "initialize", INITIALIZE)], 1, False))
    twice = [request(0, "initialize", INITIALIZE), request(1, "initialize", INITIALIZE)]
    found.append(("initialize-twice", twice, 1, False))  # the second is the SDK's to judge
    return found


def test_every_early_answer_is_the_sdks_for_every_shape_of_params(tmp_path: Path) -> None:
    differing = []
    misjudged = []
    for name, messages, pinned, expected in cases():
        for workspace in (False, True):
            early = early_answers(messages, workspace=workspace, folder=tmp_path)
            sdk = sdk_answers(messages, workspace=workspace, folder=tmp_path)
            differing += [(name, workspace, early[rid], sdk[rid]) for rid in early if early[rid] != sdk[rid]]
            if (pinned in early) != expected:
                misjudged.append((name, workspace, "answered early" if pinned in early else "left to the SDK"))
    assert differing == []
    assert misjudged == []
