"""docs/architecture.md's "Who answers" table, held to `Door.route`.

Each row of the table is a kind of request; each column a transport and era. The test reads the
table as written and, for sample requests of each row, asks the door in a session of each
column: a cell that says codescout answers early (`Early`) must get an Early answer, one that
says codescout answers must get a `Call`, one that says the SDK answers must get None. Cells in
parentheses (a batch waits, there are no batches) are about batches, which the transports split
before the door: they are checked member by member as the row above them.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from codescout_mcp.answers.accepted import CLIENT_CAPABILITIES_KEY, CLIENT_INFO_KEY, PROTOCOL_VERSION_KEY
from codescout_mcp.answers.door import Call, Early, Session
from codescout_mcp.tools.toolbox import Offer
from tests.helpers import ROOT

TABLE = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8").split("## Who answers", 1)[1]
HANDSHAKE_VERSION = "2025-11-25"
MODERN_META = {
    PROTOCOL_VERSION_KEY: "2026-07-28",
    CLIENT_INFO_KEY: {"name": "table", "version": "1"},
    CLIENT_CAPABILITIES_KEY: {},
}
INITIALIZE = {
    "protocolVersion": HANDSHAKE_VERSION,
    "capabilities": {},
    "clientInfo": {"name": "table", "version": "1"},
}


def rows() -> list[list[str]]:
    """The table's rows, each a list of its cells (the header and the rule left out)."""
    lines = [line for line in TABLE.splitlines() if line.startswith("| ")]
    return [[cell.strip() for cell in line.strip("|").split(" | ")] for line in lines[1:] if "---" not in line][:4]


def column_sessions(column: int, *, modern: bool) -> Session:
    """A session as each column's transport holds it when a request of the row comes: on stdio,
    after `initialize` (handshake era) or a first modern request; over HTTP, a stateless one."""
    if column in (1, 2):
        session = Session(sdk_ready=column == 2)
        if modern:
            session.settle({"method": "tools/list", "params": {"_meta": MODERN_META}})
        else:
            session.settle({"method": "initialize", "params": INITIALIZE})
            session.negotiated_as(HANDSHAKE_VERSION)
        return session
    if column == 3:
        return Session.stateless(HANDSHAKE_VERSION)
    return Session.stateless(None)


def samples(row: int, *, modern: bool) -> list[dict[str, Any]]:
    """Requests of one row, in the era the column serves."""
    meta = {"_meta": dict(MODERN_META)} if modern else {}
    if row == 0:  # a host's first requests (after initialize, for the handshake era)
        methods = ["server/discover", "tools/list"] if modern else ["ping", "tools/list", "prompts/list"]
        return [{"jsonrpc": "2.0", "id": 1, "method": method, "params": dict(meta)} for method in methods]
    if row in (1, 2):  # a well-formed call of one of codescout's tools
        params = {"name": "rank_search_results", "arguments": {"hits": []}, **meta}
        return [{"jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": params}]
    return [  # anything else
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 3, "result": {}},
        {"jsonrpc": "2.0", "id": 4, "method": "completion/complete", "params": dict(meta)},
        {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "no_such", "arguments": {}, **meta}},
        {"jsonrpc": "2.0", "id": 6, "method": "tools/call", "params": {"name": "rank_search_results", "arguments": 7}},
    ]


def expected(cell: str) -> type[Call] | type[Early] | str | None:
    """What a cell says answers: an Early answer, a Call, the SDK (None), or "skip" (batches)."""
    if cell.startswith("("):
        return "skip"
    if re.match(r"codescout \(`Early`", cell):
        return Early
    if cell.startswith("codescout"):
        return Call
    assert cell.startswith("the SDK"), cell
    return None


def test_the_table_has_the_rows_and_columns_the_test_reads() -> None:
    table = rows()
    assert [len(row) for row in table] == [5, 5, 5, 5]
    assert table[0][0].startswith("a host's first requests")
    assert table[1][0].startswith("a well-formed call")
    assert table[2][0].startswith("the same call inside a 2025-03-26 batch")
    assert table[3][0].startswith("anything else")


@pytest.mark.parametrize("row", range(4))
@pytest.mark.parametrize("column", range(1, 5))
def test_the_door_answers_as_the_table_says(row: int, column: int) -> None:
    cell = rows()[row][column]
    wanted = expected(cell)
    if wanted == "skip":
        return
    door = Offer().door()
    modern = column == 4  # the 2026-07-28 column; stdio serves both eras, held by the columns' sessions
    for request in samples(1 if row == 2 else row, modern=modern):
        got = door.route(request, column_sessions(column, modern=modern))
        if wanted is None:
            assert got is None, (cell, request)
        else:
            assert isinstance(got, wanted), (cell, request, got)  # type: ignore[arg-type]
