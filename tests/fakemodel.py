"""A stand-in language model on loopback, so real MCP hosts can run a turn without a login.

A host (Claude Code, Gemini CLI, opencode, Codex) sends its model the tools it has loaded; that
request is the one place where the host shows which MCP tools it sees. This server speaks just
enough of four model APIs (Anthropic messages, Gemini generateContent, OpenAI chat completions
and OpenAI responses, which `codex exec` speaks) for a host to finish a turn, and follows one
script: when a request offers the tool it was told to call, it answers with a call to that
tool; when a request carries that call's result, it records the result and ends the turn.
Every other request (titles, routing) gets a short text.
"""

from __future__ import annotations

import http.server
import json
import re
import threading
from dataclasses import dataclass, field
from typing import Any

CALL_ID = "call_codescout_1"
# Claude Code may send the first request before a server has connected, offering instead a tool
# that waits for pending servers; a model that needs the server calls it, and so does this one.
WAIT_TOOL, WAIT_ID = "WaitForMcpServers", "call_wait_1"


@dataclass
class Exchange:
    """What the host sent: the tool names offered per request, and the tool result it returned."""

    offered: list[list[str]] = field(default_factory=list)
    result: Any = None
    paths: list[str] = field(default_factory=list)
    bodies: list[dict[str, Any]] = field(default_factory=list)
    waited: bool = False  # whether the host was asked to wait for its servers first


def _offered(body: dict[str, Any]) -> list[str]:
    names: list[str] = []
    for tool in body.get("tools") or []:
        if "functionDeclarations" in tool:  # Gemini groups declarations
            names.extend(declaration["name"] for declaration in tool["functionDeclarations"])
        elif "function" in tool:  # OpenAI chat completions
            names.append(tool["function"]["name"])
        else:  # Anthropic messages
            names.append(tool["name"])
    return names


def _responses_offered(body: dict[str, Any]) -> list[str]:
    """The tools a Responses request offers: its function tools, and the MCP tools that Codex's
    code mode names for its `exec` tool (as `tools.mcp__<server>__<tool>`, somewhere in the request)."""
    names = [tool["name"] for tool in body.get("tools") or [] if isinstance(tool, dict) and "name" in tool]
    text = json.dumps(body)
    names += sorted(set(re.findall(r"mcp__codescout__[A-Za-z0-9_]+", text)))
    # Code mode lists a connected server as a deferred namespace (`- mcp__codescout: <its
    # instructions>`), its tools callable as `tools.mcp__codescout__<tool>`.
    if "- mcp__codescout:" in text:
        names.append("mcp__codescout__")
    return names


def _code_mode(body: dict[str, Any]) -> bool:
    """Whether the request offers Codex's `exec` tool, through which MCP tools are called."""
    for item in body.get("input") or []:
        if isinstance(item, dict) and item.get("type") == "additional_tools":
            for group in item.get("tools") or []:
                if any(tool.get("name") == "exec" for tool in group.get("tools") or []):
                    return True
    return False


def _tool_result(dialect: str, body: dict[str, Any], tool: str) -> Any:
    """The result of our call, as the host passed it back to the model, or None if absent."""
    if dialect == "responses":
        for item in body.get("input") or []:
            if isinstance(item, dict) and item.get("call_id") == CALL_ID and item.get("type", "").endswith("_output"):
                return item.get("output")
        return None
    if dialect == "anthropic":
        for message in body.get("messages", []):
            content = message.get("content")
            if isinstance(content, list):
                for block in content:
                    if block.get("type") == "tool_result" and block.get("tool_use_id") == CALL_ID:
                        return block.get("content")
    elif dialect == "gemini":
        for content in body.get("contents", []):
            for part in content.get("parts", []):
                response = part.get("functionResponse")
                if response is not None and response.get("name", "").endswith(tool):
                    return response.get("response")
    else:
        for message in body.get("messages", []):
            if message.get("role") == "tool" and message.get("tool_call_id") == CALL_ID:
                return message.get("content")
    return None


class FakeModel:
    """The server; `tool` is matched by suffix, since each host prefixes MCP tool names its own way."""

    def __init__(self, tool: str, arguments: dict[str, Any]) -> None:
        self.tool = tool
        self.arguments = arguments
        self.exchange = Exchange()
        self._lock = threading.Lock()
        model = self

        class Handler(http.server.BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = json.loads(self.rfile.read(length) or b"{}")
                kind, data = model.answer(self.path, body)
                self.send_response(200)
                self.send_header("Content-Type", kind)
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def do_GET(self) -> None:  # model lists and the like: nothing here
                with model._lock:
                    model.exchange.paths.append(f"GET {self.path}")
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self._server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._thread = threading.Thread(target=self._server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> FakeModel:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()

    def answer(self, path: str, body: dict[str, Any]) -> tuple[str, bytes]:
        """The reply to one request: a call to our tool, the end of the turn, or a bare text."""
        if path.endswith("/responses"):
            dialect = "responses"
        else:
            dialect = "anthropic" if "/messages" in path else "gemini" if "enerateContent" in path else "openai"
        offered = _responses_offered(body) if dialect == "responses" else _offered(body)
        result = _tool_result(dialect, body, self.tool)
        offered = [f"{name}{self.tool}" if name == "mcp__codescout__" else name for name in offered]
        with self._lock:
            self.exchange.paths.append(f"POST {path}")
            self.exchange.offered.append(offered)
            self.exchange.bodies.append(body)
            if result is not None:
                self.exchange.result = result
        target = next((name for name in offered if "codescout" in name and name.endswith(self.tool)), None)
        if result is not None:
            return _text(dialect, path, body, "done")
        if target is not None:
            return _call(dialect, path, body, target, self.arguments, CALL_ID)
        if WAIT_TOOL in offered and not self.exchange.waited:
            self.exchange.waited = True
            return _call(dialect, path, body, WAIT_TOOL, {"servers": ["codescout"]}, WAIT_ID)
        return _text(dialect, path, body, "ok")


def _sse(events: list[tuple[str | None, Any]]) -> bytes:
    lines = []
    for event, data in events:
        if event is not None:
            lines.append(f"event: {event}\n")
        lines.append(f"data: {data if isinstance(data, str) else json.dumps(data)}\n\n")
    return "".join(lines).encode()


def _anthropic(body: dict[str, Any], block: dict[str, Any], stop: str) -> tuple[str, bytes]:
    usage = {"input_tokens": 1, "output_tokens": 1}
    message = {"id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model", "m")}
    if not body.get("stream"):
        return "application/json", json.dumps(
            {**message, "content": [block], "stop_reason": stop, "stop_sequence": None, "usage": usage}
        ).encode()
    if block["type"] == "tool_use":
        start = {**block, "input": {}}
        delta = {"type": "input_json_delta", "partial_json": json.dumps(block["input"])}
    else:
        start = {"type": "text", "text": ""}
        delta = {"type": "text_delta", "text": block["text"]}
    opening = {**message, "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}
    return "text/event-stream", _sse(
        [
            ("message_start", {"type": "message_start", "message": opening}),
            ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": start}),
            ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": delta}),
            ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop}, "usage": usage}),
            ("message_stop", {"type": "message_stop"}),
        ]
    )


def _gemini(path: str, part: dict[str, Any]) -> tuple[str, bytes]:
    chunk = {
        "candidates": [{"content": {"role": "model", "parts": [part]}, "finishReason": "STOP", "index": 0}],
        "usageMetadata": {"promptTokenCount": 1, "candidatesTokenCount": 1, "totalTokenCount": 2},
    }
    if "stream" in path:
        return "text/event-stream", _sse([(None, chunk)])
    return "application/json", json.dumps(chunk).encode()


def _openai(body: dict[str, Any], delta: dict[str, Any], finish: str) -> tuple[str, bytes]:
    usage = {"prompt_tokens": 1, "completion_tokens": 1, "total_tokens": 2}
    head = {"id": "chat_1", "created": 0, "model": body.get("model", "m")}
    if not body.get("stream"):
        message = {
            "role": "assistant",
            "content": delta.get("content"),
            **({"tool_calls": delta["tool_calls"]} if "tool_calls" in delta else {}),
        }
        choice = {"index": 0, "message": message, "finish_reason": finish}
        return "application/json", json.dumps(
            {**head, "object": "chat.completion", "choices": [choice], "usage": usage}
        ).encode()
    first = {"index": 0, "delta": {"role": "assistant", **delta}, "finish_reason": None}
    last = {"index": 0, "delta": {}, "finish_reason": finish}
    chunk = {**head, "object": "chat.completion.chunk"}
    return "text/event-stream", _sse(
        [(None, {**chunk, "choices": [first]}), (None, {**chunk, "choices": [last], "usage": usage}), (None, "[DONE]")]
    )


def _responses(items: list[dict[str, Any]]) -> tuple[str, bytes]:
    """A streamed Responses answer holding `items`, then its completion."""
    events: list[tuple[str | None, Any]] = [
        ("response.created", {"type": "response.created", "response": {"id": "r1"}})
    ]
    for index, item in enumerate(items):
        for kind in ("response.output_item.added", "response.output_item.done"):
            events.append((kind, {"type": kind, "output_index": index, "item": item}))
    usage = {"input_tokens": 1, "input_tokens_details": None, "output_tokens": 1, "output_tokens_details": None}
    done = {"type": "response.completed", "response": {"id": "r1", "usage": {**usage, "total_tokens": 2}}}
    events.append(("response.completed", done))
    return "text/event-stream", _sse(events)


def _text(dialect: str, path: str, body: dict[str, Any], text: str) -> tuple[str, bytes]:
    if dialect == "responses":
        content = [{"type": "output_text", "text": text, "annotations": []}]
        return _responses([{"type": "message", "role": "assistant", "id": "m1", "content": content}])
    if dialect == "anthropic":
        return _anthropic(body, {"type": "text", "text": text}, "end_turn")
    if dialect == "gemini":
        return _gemini(path, {"text": text})
    return _openai(body, {"content": text}, "stop")


def _call(
    dialect: str, path: str, body: dict[str, Any], name: str, arguments: dict[str, Any], call_id: str
) -> tuple[str, bytes]:
    if dialect == "responses":
        if _code_mode(body):  # the MCP tool is called from JavaScript, through `exec`
            script = f"const r = await tools.{name}({json.dumps(arguments)});\ntext(JSON.stringify(r));\n"
            item = {"type": "custom_tool_call", "id": "c1", "call_id": call_id, "name": "exec", "input": script}
            return _responses([{**item, "namespace": "functions"}])
        return _responses([{"type": "function_call", "id": "f1", "call_id": call_id, "name": name,
                            "arguments": json.dumps(arguments)}])  # fmt: skip
    if dialect == "anthropic":
        return _anthropic(body, {"type": "tool_use", "id": call_id, "name": name, "input": arguments}, "tool_use")
    if dialect == "gemini":
        return _gemini(path, {"functionCall": {"name": name, "args": arguments}})
    call = {
        "index": 0,
        "id": call_id,
        "type": "function",
        "function": {"name": name, "arguments": json.dumps(arguments)},
    }
    return _openai(body, {"tool_calls": [call]}, "tool_calls")
