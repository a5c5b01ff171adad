"""The Guard: ASGI middleware in front of the SDK's app, answering everything the SDK should never see.

It composes three layers, each one concern and each testable in process
(tests/unit/test_guard.py):

1. access (`access.py`): framing, Host, Origin and CORS, method, token, version; refusals
   that need no body;
2. admission (`admission.py`): content negotiation, a slot, room in the byte budget, the whole
   body; refusals that read the rest of the body first;
3. routing (`routing.py`): the body read as JSON-RPC, then the door (codescout's own calls) or
   the SDK.

The seam between them is the request's `BudgetedSend`: it carries what the request holds of the
budget (`send.held`, a `budget.Held`) from admission through routing to the answer's bytes, and
the Guard gives it all back when the request ends. The Guard also logs each request and, when
the shutdown's time runs out under one, answers it 503.
"""

from __future__ import annotations

import asyncio
import logging
import time
from typing import Any

from mcp.server.lowlevel import Server

from codescout_mcp.answers.door import Door
from codescout_mcp.http.access import Access
from codescout_mcp.http.admission import Admission
from codescout_mcp.http.asgi import STARTED_KEY, ASGIApp, Headers, Receive, Scope, Send, respond
from codescout_mcp.http.budget import BudgetedSend, Held
from codescout_mcp.http.routing import Router
from codescout_mcp.http.settings import ENDPOINT, HttpSettings

logger = logging.getLogger("codescout")


class Guard:
    """ASGI middleware: the three layers, then the SDK's app."""

    def __init__(
        self, app: ASGIApp, server: Server[Any], door: Door, settings: HttpSettings, token: str | None
    ) -> None:
        self.app = app
        self.settings = settings
        self.access = Access(settings, token)
        self.admission = Admission(settings)
        self.router = Router(app, server, door)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        started = time.monotonic()
        deadline = scope.get(STARTED_KEY, started) + self.settings.request_timeout
        held = Held(self.admission.budget, deadline)
        budgeted = BudgetedSend(send, held)
        try:
            await self._serve(scope, receive, budgeted)
        except asyncio.CancelledError:
            # The shutdown timeout ran out while this request was still arriving or being
            # served: tell the client, rather than leave uvicorn to log a traceback.
            if budgeted.status is not None:
                raise
            await respond(budgeted, 503, b"Service Unavailable: the server is shutting down\n", close=True)
        finally:
            held.release()
        if logger.isEnabledFor(logging.INFO):
            # The path only: a client may put a secret in the query string.
            elapsed = (time.monotonic() - started) * 1000
            client = scope.get("client")
            who = f"{client[0]}:{client[1]}" if client else "-"
            logger.info("%s %s %s -> %s in %.1f ms", who, scope["method"], scope["path"], budgeted.status, elapsed)

    async def _serve(self, scope: Scope, receive: Receive, send: BudgetedSend) -> None:
        headers = Headers(scope)
        if not await self.access.admits(scope, headers, send):
            return
        if scope["path"] != ENDPOINT:
            await self.app(scope, receive, send)
            return
        await self.admission.serve(scope, headers, receive, send, self.router.serve)
