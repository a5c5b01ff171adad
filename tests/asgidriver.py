"""The HTTP app driven in process: requests as ASGI messages, answers gathered, no sockets.

`Driven` runs the app's lifespan (the SDK's session manager starts in it) and sends requests
whose bodies arrive in the chunks a test chooses, optionally followed by the client leaving.
"""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from typing import Any

import anyio

from codescout_mcp.http.asgi import ASGIApp


@dataclass
class Answer:
    """What the app sent back for one request."""

    status: int = 0
    headers: dict[bytes, bytes] = field(default_factory=dict)
    body: bytes = b""
    complete: bool = False  # the app sent the last part of its answer

    def json(self) -> Any:
        return json.loads(self.body)

    def header(self, name: str) -> str | None:
        value = self.headers.get(name.lower().encode())
        return None if value is None else value.decode("latin-1")


class Driven:
    """An app whose lifespan has started, taking requests in process."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def request(
        self,
        method: str = "POST",
        path: str = "/mcp",
        *,
        body: bytes | Sequence[bytes] = b"",
        headers: dict[str, str] | None = None,
        leave: bool = True,
    ) -> Answer:
        """One request; `body` as one part or as the parts the client sends; then, with `leave`,
        the client's disconnect for whatever the app reads after the body."""
        parts = [body] if isinstance(body, bytes) else list(body)
        sent = {"host": "127.0.0.1:8000", "content-type": "application/json", "accept": "application/json"}
        sent |= {name.lower(): value for name, value in (headers or {}).items()}
        if "content-length" not in sent and isinstance(body, bytes):
            sent["content-length"] = str(len(body))
        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": method,
            "scheme": "http",
            "path": path,
            "raw_path": path.encode(),
            "query_string": b"",
            "headers": [(name.encode(), value.encode("latin-1")) for name, value in sent.items()],
            "client": ("127.0.0.1", 50000),
            "server": ("127.0.0.1", 8000),
        }
        messages: list[dict[str, Any]] = [
            {"type": "http.request", "body": part, "more_body": index < len(parts) - 1}
            for index, part in enumerate(parts or [b""])
        ]
        gone = anyio.Event()

        async def receive() -> dict[str, Any]:
            if messages:
                return messages.pop(0)
            if not leave:
                await anyio.sleep_forever()
            gone.set()
            return {"type": "http.disconnect"}

        answer = Answer()

        async def send(message: dict[str, Any]) -> None:
            if message["type"] == "http.response.start":
                answer.status = message["status"]
                answer.headers = {name.lower(): value for name, value in message.get("headers", [])}
            elif message["type"] == "http.response.body":
                answer.body += message.get("body", b"")
                answer.complete = not message.get("more_body", False)

        with anyio.fail_after(60):
            await self.app(scope, receive, send)  # type: ignore[arg-type]
        return answer

    async def post_json(self, value: Any, headers: dict[str, str] | None = None) -> Answer:
        return await self.request(body=json.dumps(value).encode(), headers=headers)


@asynccontextmanager
async def driven(app: ASGIApp) -> AsyncIterator[Driven]:
    """`app` with its lifespan started for the block, and stopped after it."""
    to_app, app_reads = anyio.create_memory_object_stream[dict[str, Any]](4)
    app_says, from_app = anyio.create_memory_object_stream[dict[str, Any]](4)

    async def run() -> None:
        await app({"type": "lifespan", "asgi": {"version": "3.0"}}, app_reads.receive, app_says.send)  # type: ignore[arg-type]

    async with anyio.create_task_group() as tasks:
        tasks.start_soon(run)
        await to_app.send({"type": "lifespan.startup"})
        started = await from_app.receive()
        assert started["type"] == "lifespan.startup.complete", started
        try:
            yield Driven(app)
        finally:
            await to_app.send({"type": "lifespan.shutdown"})
            with anyio.fail_after(10):
                await from_app.receive()
