"""The two hosts that give up soonest, on a busy machine: `codex exec` and `claude -p`.

Each run starts two busy processes that load the machine's two cores (a load average near
that of a laptop running an IDE, a build and an agent), then one turn of the host against the
scripted model endpoint (tests/fakemodel.py). In every run the host must offer codescout's
tool to the model in its first request (Codex starts its turn without a server that has not
answered; Claude Code marks one `pending` and hides its tools) and make one real call.
bench/hosts_under_load.py runs the same turns ten times each.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

from tests.fakemodel import FakeModel
from tests.helpers import busy_machine, installed
from tests.interop.test_hosts import (
    CLAUDE_ENV,
    CODEX_SETTINGS,
    SEARCH_ARGUMENTS,
    SEARCH_RESULT,
    Hosts,
    Sandbox,
    hosts,  # noqa: F401 - the fixture, shared with tests/interop/test_hosts.py
)
from tests.platforms import linux_only

pytestmark = linux_only("the hosts run through npm's .bin links, as set up on Linux")

# Each host's turns in the suite; bench/hosts_under_load.py sets CODESCOUT_HOST_RUNS to ten.
RUNS = int(os.environ.get("CODESCOUT_HOST_RUNS", "2"))
TOOL = "rank_search_results"
BUSY_SECONDS = 120


def offered_first(exchange: Any) -> list[str]:
    """The codescout tools the host offered in its first request to the model."""
    return [name for name in exchange.offered[0] if "codescout" in name] if exchange.offered else []


def codex_turn(box: Sandbox) -> dict[str, Any]:
    (box.home / ".codex").mkdir(parents=True, exist_ok=True)
    with FakeModel(TOOL, SEARCH_ARGUMENTS) as model:
        settings = CODEX_SETTINGS.replace('base_url = "http://127.0.0.1:9/v1"', f'base_url = "{model.url}/v1"')
        server = f"[mcp_servers.codescout]\ncommand = {json.dumps(installed('codescout-mcp'))}\nargs = []\n"
        (box.home / ".codex" / "config.toml").write_text(settings + server, encoding="utf-8")
        with busy_machine(2, seconds=BUSY_SECONDS, settle=0.5):  # the load has begun before the host starts
            run = box.run(
                "codex",
                *("exec", "--skip-git-repo-check", "--json", "--dangerously-bypass-approvals-and-sandbox"),
                "Rank my hits",
                env={"CODEX_HOME": str(box.home / ".codex")},
            )
    return {"run": run, "exchange": model.exchange}


def claude_turn(box: Sandbox) -> dict[str, Any]:
    add = box.run("claude", "mcp", "add", "codescout", "--", installed("codescout-mcp"), env=CLAUDE_ENV)
    assert add.returncode == 0, add.stderr
    with FakeModel(TOOL, SEARCH_ARGUMENTS) as model, busy_machine(2, seconds=BUSY_SECONDS, settle=0.5):
        run = box.run(
            "claude",
            *("-p", "Rank my hits", "--output-format", "stream-json", "--verbose"),
            *("--allowedTools", f"mcp__codescout__{TOOL}"),
            env={
                **CLAUDE_ENV,
                "ANTHROPIC_BASE_URL": model.url,
                "ANTHROPIC_API_KEY": "sk-ant-test",
                "ENABLE_TOOL_SEARCH": "false",
            },
        )
    events = [json.loads(line) for line in run.stdout.splitlines() if line.startswith("{")]
    init = next(event for event in events if event.get("subtype") == "init")
    status = {server["name"]: server["status"] for server in init.get("mcp_servers", [])}
    return {"run": run, "exchange": model.exchange, "status": status}


def result_of(value: Any) -> Any:
    """The ranking (`{"results": ..., "counts": ...}`) somewhere in what the host handed back to the
    model: a text block, a JSON string inside one, structured content, however the host wrapped it."""
    if isinstance(value, dict):
        if "results" in value and "counts" in value:
            return value
        value = list(value.values())
    if isinstance(value, str):
        try:
            return result_of(json.loads(value))
        except ValueError:
            return None
    if isinstance(value, list):
        return next((found for found in map(result_of, value) if found is not None), None)
    return None


@pytest.mark.parametrize("attempt", range(RUNS))
def test_codex_exec_offers_codescouts_tool_and_calls_it_on_a_busy_machine(
    hosts: Hosts,  # noqa: F811
    tmp_path: Path,
    attempt: int,
) -> None:
    outcome = codex_turn(Sandbox(tmp_path, hosts))
    run, exchange = outcome["run"], outcome["exchange"]
    assert run.returncode == 0, run.stderr[-2000:]
    assert offered_first(exchange) == [f"mcp__codescout__{TOOL}"], exchange.offered
    assert result_of(exchange.result) == SEARCH_RESULT


@pytest.mark.parametrize("attempt", range(RUNS))
def test_claude_p_starts_with_codescout_connected_and_calls_it_on_a_busy_machine(
    hosts: Hosts,  # noqa: F811
    tmp_path: Path,
    attempt: int,
) -> None:
    outcome = claude_turn(Sandbox(tmp_path, hosts))
    run, exchange = outcome["run"], outcome["exchange"]
    assert run.returncode == 0, run.stderr[-2000:]
    assert outcome["status"] == {"codescout": "connected"}
    assert f"mcp__codescout__{TOOL}" in offered_first(exchange), exchange.offered
    assert result_of(exchange.result) == SEARCH_RESULT
