"""The Guard's third layer, routing: an admitted body read as JSON-RPC, then the door or the SDK.

Every body is read here as the stdio transport reads a line (`answers/jsonrpc.py`): what is not JSON
gets -32700 (naming the byte offset, with the id when it can be read), what is not JSON-RPC
-32600, a malformed response 400 with no JSON-RPC answer at all, at every protocol version.
Then each request is put to the door (`answers/door.py`), as on stdio: a call of codescout's
tools is answered by codescout. Anything else goes to the SDK: at the handshake-era versions
(2025-03-26 to 2025-11-25, and a request with no `MCP-Protocol-Version`, which means
2025-03-26) through its dispatcher (`exchange.py`), a batch (2025-03-26 only) member by
member; at 2026-07-28 through the SDK's own entry, from the body already read.

While a request is served, its connection is watched (`until_gone`): a client that leaves
ends the work it asked for (its call's children are ended, `answers/door.py`), and the
request keeps its slot until that work is gone.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any, Final, TypeVar

import anyio
import mcp_types as types
from mcp.server.lowlevel import Server

from codescout_mcp.answers.door import Call, Door, Session
from codescout_mcp.answers.jsonrpc import Batch, Dropped, Message, Refused, read_message, sdk_message
from codescout_mcp.answers.protocol import BATCH_VERSIONS
from codescout_mcp.http.access import requested_version
from codescout_mcp.http.admission import rules_out_json
from codescout_mcp.http.asgi import (
    MALFORMED_RESPONSE,
    RESPONSE_REFUSED,
    ASGIApp,
    Headers,
    Receive,
    Scope,
    replay,
    respond,
)
from codescout_mcp.http.budget import BudgetedSend
from codescout_mcp.http.exchange import batch_answer, encoded, exchange, modern_checks_pass

logger = logging.getLogger("codescout")

T = TypeVar("T")


class Router:
    """The routing layer, for one server: the door, and the SDK's app and `Server` behind it."""

    def __init__(self, app: ASGIApp, server: Server[Any], door: Door) -> None:
        self.app = app
        self.server = server
        self.door = door

    async def serve(self, scope: Scope, headers: Headers, body: bytes, receive: Receive, send: BudgetedSend) -> None:
        """Answer one admitted request (`admission.Route`)."""
        version = requested_version(headers)
        if version is None:
            await self._serve_modern(scope, headers, body, receive, send)
        else:
            await self._serve_handshake_era(body, receive, send, version)

    async def _serve_handshake_era(self, body: bytes, receive: Receive, send: BudgetedSend, version: str) -> None:
        """A request at a 2025 version: one message, or a batch of them at 2025-03-26."""
        read = read_message(body, batches=version in BATCH_VERSIONS)
        del body
        if isinstance(read, Batch):
            await self._serve_batch(read.members, version, receive, send)
            return
        if not isinstance(read, Message):
            await refuse(send, read)
            return
        route = self.door.route(read.envelope, Session.stateless(version))
        served: dict[str, Any] | _Gone | None
        if isinstance(route, Call):
            del read  # (the call's arguments go before its answer is written)
            served = await until_gone(receive, route.answer)
            del route
        else:
            message = sdk_message(read.envelope)
            del read, route
            if isinstance(message, (Refused, Dropped)):
                await refuse(send, message)
                return
            if isinstance(message, (types.JSONRPCResponse, types.JSONRPCError)):
                await respond(send, 202, b"")  # a response to a request this server never sends: nothing to do
                return
            served = await until_gone(receive, partial(exchange, self.server, message, version))
            del message
        if isinstance(served, _Gone):
            logger.info("a client left before its answer; the work it asked for was ended")
            return
        answer = served
        if answer is None:
            await respond(send, 202, b"")
            return
        data = encoded(answer)
        del answer
        await respond(send, 200, data, json_body=True)

    async def _serve_batch(self, members: list[Any], version: str, receive: Receive, send: BudgetedSend) -> None:
        """A JSON-RPC batch: served until its client leaves (a reset connection stops it)."""
        answers = await until_gone(receive, partial(batch_answer, self.server, self.door, members, version, send.held))
        if isinstance(answers, _Gone):
            logger.info("a batch's client left; the rest of the batch was not served")
            return
        if answers is None:  # notifications and responses only
            await respond(send, 202, b"")
            return
        await respond(send, 200, answers, json_body=True)

    async def _serve_modern(
        self, scope: Scope, headers: Headers, body: bytes, receive: Receive, send: BudgetedSend
    ) -> None:
        """A 2026-07-28 request: read as at the other versions, then answered through the door when
        it is a call of codescout's tools that the SDK's own checks pass, else by the SDK's own entry.

        (The SDK reads NaN and Infinity as numbers and answers every invalid body with one
        -32600 and `id: null`; here such a body gets its own error, as at the other versions.)
        """
        read = read_message(body)
        if not isinstance(read, Message):
            assert not isinstance(read, Batch)  # (no batches at this version)
            await refuse(send, read)
            return
        checked = read.envelope
        del read
        if "method" not in checked:
            await respond(send, 400, RESPONSE_REFUSED)
            return
        route = self.door.route(checked, Session.stateless(None))
        if isinstance(route, Call) and not rules_out_json(headers) and modern_checks_pass(scope, checked):
            del checked, body
            answer = await until_gone(receive, route.answer)
            del route
            if isinstance(answer, _Gone):
                logger.info("a client left before its answer; the work it asked for was ended")
                return
            data = encoded(answer)
            del answer
            await respond(send, 200, data, json_body=True)
            return
        del checked, route
        await self.app(scope, replay(body, receive), send)


async def refuse(send: BudgetedSend, read: Refused | Dropped) -> None:
    """A body that is not served: its JSON-RPC error, or (a malformed response) a plain 400."""
    if isinstance(read, Refused):
        await respond(send, 400, read.refusal.reply(), json_body=True)
    else:
        await respond(send, 400, MALFORMED_RESPONSE)


class _Gone:
    """What `until_gone` gives when the client left first."""


GONE: Final = _Gone()


async def until_gone(receive: Receive, work: Callable[[], Awaitable[T]]) -> T | _Gone:
    """`await work()`, unless the client leaves first (its body is read: what `receive` says
    next is the client leaving); then the work is cancelled, and GONE returned once it is gone
    (`Call.answer` waits for its thread)."""
    outcome: T | _Gone = GONE
    async with anyio.create_task_group() as tasks:

        async def watch() -> None:
            with contextlib.suppress(Exception):  # a receive that fails tells nothing: the work goes on
                while (await receive())["type"] != "http.disconnect":
                    pass
                tasks.cancel_scope.cancel()

        tasks.start_soon(watch)
        outcome = await work()
        tasks.cancel_scope.cancel()
    return outcome
