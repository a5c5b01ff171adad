"""The door: for each request on every transport, whether codescout answers it or the SDK does.

One function decides, `Door.route`. Each transport asks it about every request it has read
and checked as JSON-RPC, alone or in a batch (stdio before and after the SDK has loaded, HTTP
at both eras), and does what it says:

* a `Call`: a well-formed call of one of codescout's tools, in a session that may make it.
  codescout answers it itself, in the SDK's words (`words.py`), without the SDK's copies of the
  arguments and the answer; the SDK never sees it. `await call.answer()` runs it on the event
  loop when that is cheap and in a worker thread when it is not (the one place that is
  decided); `call.run()` runs it where there is no event loop. Each call has a `Stop`
  (`system/processes.py`): `call.cancel()` (a client's cancellation) or the awaiting task cancelled
  (the client gone, the server stopping) ends the children it started, and the awaiting
  task returns only once its thread has, so whatever slot the transport holds for the call
  is held until the work is gone. A batch gives its members one deadline;
* an `Early` answer: only while the SDK is still loading (stdio). A host's first requests
  (`handshake.py`) are answered now; the message is still handed to the SDK once it is up,
  whose own answer is dropped and compared;
* None: the SDK's, in its own words.

docs/architecture.md has the same rule as a table. Standard library only (anyio is imported
only by `Call.answer`, which runs on an event loop that already has it).
"""

from __future__ import annotations

from codescout_mcp.answers import words
from codescout_mcp.answers.accepted import call_params, opens_modern
from codescout_mcp.answers.handshake import Handshake
from codescout_mcp.system.processes import Cancelled, Stop, working_for

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable, Sequence
    from typing import Any, Protocol, TypeVar

    T = TypeVar("T")

    class Tool(Protocol):
        """One of codescout's tools, as the door (and the SDK's handler, `server.py`) runs it."""

        @property
        def name(self) -> str: ...

        @property
        def definition(self) -> dict[str, Any]:
            """Its catalog entry, as `tools/list` gives it."""

        def heavy(self, arguments: dict[str, Any]) -> bool:
            """Whether a call with these arguments must run off the event loop from the start."""

        def call(self, arguments: dict[str, Any], *, cached_only: bool = False) -> dict[str, Any] | None:
            """The tool result (`words.tool_result` or `words.tool_error`); with `cached_only`,
            None when the answer needs work first (git, a file read, a search)."""


class Session:
    """What the door knows of the session a request comes in: its era, its version, whether the SDK is up.

    A stdio session keeps one for its whole life (the first request settles the era; the
    handshake, the version). Over HTTP every request is a session of its own, born ready
    (`stateless`), as the SDK's stateless transport serves it.
    """

    __slots__ = ("answering_early", "era", "negotiated", "sdk_ready")

    def __init__(self, *, era: str | None = None, negotiated: str | None = None, sdk_ready: bool = True) -> None:
        self.era = era  # "handshake" or "modern", once the first request settled it
        self.negotiated = negotiated  # the handshake's protocol version, once `initialize` settled it
        self.sdk_ready = sdk_ready
        self.answering_early = not sdk_ready  # whether early answers may still be given

    @classmethod
    def stateless(cls, version: str | None) -> Session:
        """An HTTP request's session: at the handshake `version` it names, or 2026-07-28 (None)."""
        if version is None:
            return cls(era="modern")
        return cls(era="handshake", negotiated=version)

    # What the transports say of the session (the door's own writes aside, these are its only ones).

    def sdk_loaded(self) -> None:
        """The SDK is up: it answers every request the door leaves it, early answers are over."""
        self.sdk_ready = True

    def negotiated_as(self, version: str) -> None:
        """The SDK's `initialize` answer settled the protocol version."""
        self.negotiated = version

    def end_early(self) -> None:
        """No early answer may follow: the SDK must answer what comes next itself."""
        self.answering_early = False

    def settle(self, request: dict[str, Any]) -> bool:
        """Note a request's era if it is the first (it settles the session's); whether the
        session may make it: 2026-07-28 requests carry the envelope, handshake-era ones do not."""
        modern = opens_modern(request)
        if self.era is None:
            self.era = "modern" if modern else "handshake"
        return modern == (self.era == "modern")


class Early:
    """An answer given while the SDK loads; the SDK still sees the request (its answer is dropped)."""

    __slots__ = ("reply",)

    def __init__(self, reply: dict[str, Any]) -> None:
        self.reply = reply


class Call:
    """A call of one of codescout's tools, answered by codescout; `deadline` (time.monotonic()) is
    its batch's, shared by every member, by when it must end (None: only the tool's own bound)."""

    __slots__ = ("arguments", "heavy", "modern", "progress_token", "request_id", "stop", "tool")

    def __init__(
        self,
        tool: Tool,
        request_id: object,
        arguments: dict[str, Any],
        *,
        modern: bool,
        deadline: float | None = None,
        progress_token: str | int | None = None,
    ) -> None:
        self.tool = tool
        self.request_id = request_id
        self.arguments = arguments
        self.modern = modern
        self.heavy = tool.heavy(arguments)
        self.stop = Stop(deadline=deadline)
        self.progress_token = progress_token  # the client's, for progress notifications (None: it wants none)

    def report_to(self, send: Callable[[dict[str, Any]], None]) -> None:
        """Send the call's progress, as MCP progress notifications, through `send` (when the client asked for it)."""
        token = self.progress_token
        if token is None:
            return

        def progress(done: float, message: str) -> None:
            send(words.progress_notification(token, done, message))

        self.stop.on_progress = progress

    def cancel(self) -> None:
        """Nobody will read its answer: the children it started are ended, and its work returns soon."""
        self.stop.cancel()

    def result(self, *, cached_only: bool = False) -> dict[str, Any] | None:
        """The tool result as it goes out; with `cached_only`, None when the tool must do some work first.

        A call cancelled, or whose batch's deadline passed before it started, is not run: a tool error says so.
        """
        if self.stop.cancelled:
            result: dict[str, Any] | None = words.tool_error(words.CANCELLED)
        elif self.stop.seconds_left() == 0:
            result = words.tool_error(words.BATCH_OUT_OF_TIME)
        else:
            try:
                with working_for(self.stop):
                    result = self.tool.call(self.arguments, cached_only=cached_only)
            except Cancelled:
                result = words.tool_error(words.CANCELLED)
            except Exception as error:  # a bug: the caller still gets an answer, the log the details
                result = words.internal_error(self.tool.name, error)
        return None if result is None else words.stamped(result, modern=self.modern)

    def run(self, *, cached_only: bool = False) -> dict[str, Any] | None:
        """The JSON-RPC answer; with `cached_only`, None when the tool must do some work first."""
        result = self.result(cached_only=cached_only)
        return None if result is None else words.answer(self.request_id, result)

    async def answer(self) -> dict[str, Any]:
        """The JSON-RPC answer, computed where it costs the event loop least (`settled`)."""
        return await self.settled(self.run)

    async def settled(self, step: Callable[..., dict[str, Any] | None]) -> dict[str, Any]:
        """`step()` (`run` or `result`) on the event loop when that is cheap (a light call whose
        facts are known), else in a worker thread while the loop keeps serving."""
        if not self.heavy:
            found = step(cached_only=True)
            if found is not None:
                return found
        answer = await in_worker(step, stop=self.stop)
        assert answer is not None  # without cached_only, every step answers
        return answer


class Door:
    """The door for one server: its tools, and its answers to a host's first requests."""

    def __init__(self, tools: Sequence[Tool], instructions: str, *, enabled: bool) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.handshake = Handshake([tool.definition for tool in tools], instructions)
        # Off: the SDK answers everything (how the suite compares the two).
        self.enabled = enabled

    def route(
        self, envelope: dict[str, Any], session: Session, *, deadline: float | None = None
    ) -> Call | Early | None:
        """Who answers `envelope` (a checked JSON-RPC message) in `session`: codescout (a Call, or
        an Early answer while the SDK loads) or the SDK (None). `deadline`: a batch member's, the batch's."""
        if "id" not in envelope or "method" not in envelope:
            return None  # notifications and responses are the SDK's
        fits = session.settle(envelope)
        if not self.enabled:
            return None
        method = envelope["method"]
        if method == "tools/call":
            modern = session.era == "modern"
            ready = modern or session.negotiated is not None
            if fits and ready and call_params(envelope.get("params"), self.tools, modern=modern):
                params = envelope["params"]
                tool = self.tools[params["name"]]
                meta = params.get("_meta")
                token = meta.get("progressToken") if isinstance(meta, dict) else None
                return Call(
                    tool,
                    envelope["id"],
                    params.get("arguments", {}),
                    modern=modern,
                    deadline=deadline,
                    progress_token=token,
                )
            return None  # (an odd call changes nothing the handshake depends on: early answers go on)
        if session.sdk_ready or not session.answering_early:
            return None
        reply = self.handshake.answer(envelope, session.era, session.negotiated) if fits else None
        if reply is None or reply.ends_early:
            session.end_early()  # the SDK's answer to this may change what it would say next
        if reply is None:
            return None
        if reply.negotiated is not None:
            session.negotiated_as(reply.negotiated)
        return Early(reply.message)


async def in_worker(function: Callable[..., T], *args: object, stop: Stop | None = None) -> T:
    """Run `function(*args)` in a daemon thread, for `stop`.

    When the awaiting task is cancelled (the client gone, the server stopping), `stop` is
    cancelled (the children the work started are ended) and the task waits, shielded, for the
    thread to return before it is cancelled in turn: whoever holds a slot for the work holds it
    until the work is gone. (A process that is leaving never waits for it: it ends its
    children itself and exits, `processes.exit_now`.)
    """
    import contextlib
    import threading

    import anyio
    import anyio.from_thread
    import anyio.lowlevel

    done = anyio.Event()
    box: dict[str, Any] = {}
    token = anyio.lowlevel.current_token()

    def work() -> None:
        try:
            box["value"] = function(*args)
        except BaseException as error:  # handed back to the awaiting task below
            box["error"] = error
        with contextlib.suppress(anyio.RunFinishedError, RuntimeError):  # the server may have stopped
            anyio.from_thread.run_sync(done.set, token=token)

    threading.Thread(target=work, daemon=True, name="codescout-call").start()
    try:
        await done.wait()
    except anyio.get_cancelled_exc_class():
        if stop is not None:
            stop.cancel()
        with anyio.CancelScope(shield=True):
            await done.wait()
        raise
    if "error" in box:
        raise box["error"]
    value: T = box["value"]
    return value
