"""Real MCP hosts run codescout from the snippets of docs/hosts.md: Claude Code, Gemini CLI, Qwen Code, opencode, Codex.

The hosts install from npm at the versions pinned in tests/hosts/package.json, into the
checkout's .cache/hosts/ (keyed by that manifest), and run under the Node 22 of the other Node
tools. Each run gets its own HOME and XDG folders, with the hosts' telemetry and updates off
and a clean environment (no keys or settings of whoever runs the suite). The snippet is read
out of docs/hosts.md and only its command is swapped for the `codescout-mcp` installed beside this
interpreter (and the example workspace path for a temporary git repository). A host that needs
a model to run a turn gets tests/fakemodel.py on loopback: nothing here logs in or needs the
network beyond loopback.

Hosts take seconds to start, so the module starts the scenarios of all its selected tests at
once, a few at a time, and each test then asserts its own scenario's outcome.
"""

from __future__ import annotations

import contextlib
import json
import os
import queue
import re
import shlex
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp.answers.protocol import WORKSPACE_INSTRUCTIONS
from tests.fakemodel import FakeModel
from tests.gitrepo import Repo
from tests.helpers import ROOT, installed
from tests.httpserver import RunningServer
from tests.nodetools import NodeTools, install_manifest
from tests.platforms import linux_only
from tests.project.test_readme import client_snippet, remote_claude_code_line, snippet_argv, workspace_snippet

pytestmark = linux_only(
    "the hosts run through npm's .bin links, in process groups ended by a signal, as set up on Linux"
)

MANIFEST = ROOT / "tests" / "hosts" / "package.json"
CACHE = ROOT / ".cache" / "hosts"
README_WORKSPACE = "/Users/me/src/project"  # docs/hosts.md's example of an absolute workspace path
TIMEOUT = 120.0  # seconds for one host command: generous, since a busy machine slows every host
PARALLEL = 4  # scenarios at once: each host mostly waits on its own child processes
SLOWEST_FIRST = ["opencode", "gemini", "codex", "qwen", "claude"]  # hosts by their usual run time

# What the temporary project holds, and what ranking it through rank_workspace_hits must give.
WORKSPACE_ARGUMENTS = {"hits": [{"path": "README.md", "matches": 1}, {"path": "src/rank.py", "matches": 3}]}
WORKSPACE_RESULT = {
    "results": [
        {
            "path": "src/rank.py",
            "matches": 3,
            "last_modified_days": 3,
            "owner": "@acme/search",
            "score": 297,
            "rank": 1,
        },
        {"path": "README.md", "matches": 1, "last_modified_days": 3, "owner": "@acme/search", "score": 97, "rank": 2},
    ],
    "counts": {"hits": 2, "returned": 2},
}
SEARCH_ARGUMENTS = {"hits": [{"path": "a.py", "matches": 2, "last_modified_days": 5, "owner": "alice"}]}
SEARCH_RESULT = {
    "results": [{"path": "a.py", "matches": 2, "last_modified_days": 5, "owner": "alice", "score": 195, "rank": 1}],
    "counts": {"hits": 1, "returned": 1},
}


# What a server started with a workspace offers, in its order.
WORKSPACE_TOOLS = ["rank_search_results", "rank_workspace_hits", "search_workspace"]


def compact(value: Any) -> str:
    """JSON as codescout writes its text block."""
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False)


# --- the hosts, installed once ---------------------------------------------------------------


@dataclass(frozen=True)
class Hosts:
    """The installed hosts, and the Node 22 they run under."""

    home: Path
    node: NodeTools

    def bin(self, name: str) -> str:
        return str(self.home / "node_modules" / ".bin" / name)


@dataclass
class Run:
    """One finished host command."""

    argv: list[str]
    returncode: int
    stdout: str
    stderr: str


class Sandbox:
    """A fresh HOME (with XDG folders), a git project, and a clean environment for one scenario."""

    def __init__(self, root: Path, hosts: Hosts) -> None:
        self.hosts = hosts
        self.home = root / "home"
        self.project = root / "project"
        self.home.mkdir(parents=True)
        self.env = {
            "PATH": f"{hosts.node.node.parent}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
            "HOME": str(self.home),
            "XDG_CONFIG_HOME": str(self.home / ".config"),
            "XDG_DATA_HOME": str(self.home / ".local" / "share"),
            "XDG_STATE_HOME": str(self.home / ".local" / "state"),
            "XDG_CACHE_HOME": str(self.home / ".cache"),
            "LANG": "C.UTF-8",
            "TERM": "dumb",
            "NO_COLOR": "1",
            "NO_UPDATE_NOTIFIER": "1",
        }
        self._make_project()

    def _make_project(self) -> None:
        repo = Repo(self.project)
        repo.write("src/rank.py", "def rank():\n    return []\n")
        repo.write("README.md", "# project\n")
        repo.write("CODEOWNERS", "* @acme/search\n")
        # Three days and an hour ago: three whole days, whatever the second the host calls at.
        when = (datetime.now(timezone.utc) - timedelta(days=3, hours=1)).strftime("%Y-%m-%dT%H:%M:%SZ")
        repo.commit(when, "src/rank.py", "README.md", "CODEOWNERS")

    def write_json(self, path: Path, value: Any) -> None:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(value, indent=2), encoding="utf-8")

    def run(self, host: str, *args: str, cwd: Path | None = None, env: dict[str, str] | None = None) -> Run:
        """A host command, in the project unless told otherwise; its whole process group ends with it."""
        argv = [self.hosts.bin(host), *args]
        with subprocess.Popen(
            argv,
            cwd=cwd or self.project,
            env={**self.env, **(env or {})},
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        ) as proc:
            try:
                stdout, stderr = proc.communicate(timeout=TIMEOUT)
            except subprocess.TimeoutExpired:
                end_group(proc.pid)
                stdout, stderr = proc.communicate()
                raise AssertionError(f"{argv} did not finish in {TIMEOUT} s:\n{stdout}\n{stderr}") from None
            end_group(proc.pid)  # a server the host left behind
        return Run(argv, proc.returncode, stdout, stderr)


def end_group(pid: int) -> None:
    """Stop what is left of a process group this module started."""
    if sys.platform == "win32":  # the module runs on Linux only; this is for the type checker
        raise AssertionError("Linux only")
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pid, signal.SIGKILL)


def swapped(argv: list[str], workspace: Path | None = None) -> list[str]:
    """The snippet's command with `uvx codescout-mcp` swapped for the installed server."""
    assert argv[:2] == ["uvx", "codescout-mcp"], argv
    rest = [str(workspace) if workspace is not None and arg == README_WORKSPACE else arg for arg in argv[2:]]
    return [installed("codescout-mcp"), *rest]


def strip_ansi(text: str) -> str:
    return re.sub(r"\x1b\[[0-9;?]*[A-Za-z]", "", text)


# --- scenarios: each runs hosts and returns what they showed -----------------------------------

Scenario = Callable[[Sandbox], dict[str, Any]]
SCENARIOS: dict[str, Scenario] = {}


def scenario(function: Scenario) -> Scenario:
    """Register a scenario under the name of the test that asserts it (`test_<name>`)."""
    SCENARIOS[function.__name__] = function
    return function


@pytest.fixture(scope="module")
def hosts(node_tools: NodeTools) -> Hosts:
    """The pinned hosts, installed into .cache/hosts/ the first time this manifest is seen."""
    return Hosts(install_manifest(MANIFEST, CACHE, what="the MCP hosts", timeout=900), node_tools)


@pytest.fixture(scope="module")
def outcomes(
    request: pytest.FixtureRequest, hosts: Hosts, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[dict[str, Future[dict[str, Any]]]]:
    """Every selected test's scenario, started at once (PARALLEL at a time)."""
    wanted = [
        item.name.removeprefix("test_")
        for item in request.session.items
        if item.path == request.path and item.name.removeprefix("test_") in SCENARIOS
    ]
    wanted.sort(key=lambda name: SLOWEST_FIRST.index(name.split("_")[0]))  # the pool ends sooner
    sandboxes = {name: Sandbox(tmp_path_factory.mktemp(name[:40]), hosts) for name in wanted}
    with ThreadPoolExecutor(max_workers=PARALLEL) as pool:
        yield {name: pool.submit(SCENARIOS[name], sandboxes[name]) for name in wanted}


@pytest.fixture
def outcome(request: pytest.FixtureRequest, outcomes: dict[str, Future[dict[str, Any]]]) -> dict[str, Any]:
    """What this test's scenario showed (a scenario that failed fails the test with its error)."""
    return outcomes[request.node.name.removeprefix("test_")].result()


# --- Claude Code -------------------------------------------------------------------------------

# Its documented switches for telemetry, the updater and other traffic that is not the model's.
CLAUDE_ENV = {"DISABLE_TELEMETRY": "1", "DISABLE_AUTOUPDATER": "1", "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"}


def claude_add_args(line: str, workspace: Path | None = None, cwd: Path | None = None) -> list[str]:
    """`claude mcp add codescout -- uvx codescout-mcp ...` as arguments, the server swapped, and
    `"$PWD"` what the shell makes of it in `cwd` (where the line is run: the project's root)."""
    words = [str(cwd) if word == "$PWD" and cwd is not None else word for word in shlex.split(line)]
    assert words[:5] == ["claude", "mcp", "add", "codescout", "--"], words
    return [*words[1:5], *swapped(words[5:], workspace)]


@scenario
def claude_code_connects_with_the_readme_line(box: Sandbox) -> dict[str, Any]:
    language, line = client_snippet("Claude Code")
    assert language == "sh"
    return {
        "box": box,
        "add": box.run("claude", *claude_add_args(line), env=CLAUDE_ENV),
        "list": box.run("claude", "mcp", "list", env=CLAUDE_ENV),
        "get": box.run("claude", "mcp", "get", "codescout", env=CLAUDE_ENV),
    }


def test_claude_code_connects_with_the_readme_line(outcome: dict[str, Any]) -> None:
    box, exe = outcome["box"], installed("codescout-mcp")
    assert_run(
        outcome["add"],
        f"Added stdio MCP server codescout with command: {exe}  to local config\n"
        f"File modified: {box.home}/.claude.json [project: {box.project}]\n",
    )
    assert_run(outcome["list"], f"Checking MCP server health…\n\ncodescout: {exe}  - ✔ Connected\n")
    assert_run(
        outcome["get"],
        "codescout:\n"
        "  Scope: Local config (private to you in this project)\n"
        "  Status: ✔ Connected\n"
        "  Type: stdio\n"
        f"  Command: {exe}\n"
        "  Args:\n"
        "  Environment:\n"
        "\n"
        "To remove this server, run: claude mcp remove codescout -s local\n",
    )


def assert_run(run: Run, stdout: str, stderr: str = "", returncode: int = 0) -> None:
    """A host command's whole result."""
    assert (run.returncode, run.stdout, run.stderr) == (returncode, stdout, stderr), run.argv


@scenario
def claude_code_sees_both_tools_and_calls_one_from_the_workspace_line(box: Sandbox) -> dict[str, Any]:
    language, line = workspace_snippet("Claude Code")
    assert language == "sh"
    add = box.run("claude", *claude_add_args(line, cwd=box.project), env=CLAUDE_ENV)
    with FakeModel("rank_workspace_hits", WORKSPACE_ARGUMENTS) as model:
        turn = box.run(
            "claude",
            *("-p", "Rank my hits", "--output-format", "stream-json", "--verbose"),
            *("--allowedTools", "mcp__codescout__rank_workspace_hits"),
            env={
                **CLAUDE_ENV,
                "ANTHROPIC_BASE_URL": model.url,
                "ANTHROPIC_API_KEY": "sk-ant-test",
                # Tools in the request itself, as other hosts send them, not behind a search tool.
                "ENABLE_TOOL_SEARCH": "false",
            },
        )
    return {"box": box, "add": add, "turn": turn, "exchange": model.exchange}


def test_claude_code_sees_both_tools_and_calls_one_from_the_workspace_line(outcome: dict[str, Any]) -> None:
    box, exe, exchange = outcome["box"], installed("codescout-mcp"), outcome["exchange"]
    assert_run(
        outcome["add"],
        f"Added stdio MCP server codescout with command: {exe} --workspace {box.project} to local config\n"
        f"File modified: {box.home}/.claude.json [project: {box.project}]\n",
    )
    turn = outcome["turn"]
    assert (turn.returncode, turn.stderr) == (0, ""), turn.stdout
    events = [json.loads(line) for line in turn.stdout.splitlines()]
    assert (events[-1]["type"], events[-1]["subtype"], events[-1]["result"]) == ("result", "success", "done")
    ours = [[name for name in offered if "codescout" in name] for offered in exchange.offered]
    both = [f"mcp__codescout__{name}" for name in WORKSPACE_TOOLS]
    # The request that got the call and the one carrying its result offer both tools; when the
    # server had not connected by the first request, the model waited for it first.
    assert ours == ([[], both, both] if exchange.waited else [both, both])
    assert exchange.result == compact(WORKSPACE_RESULT)


@scenario
def claude_code_keeps_the_readme_header_variable_and_connects_over_http(box: Sandbox) -> dict[str, Any]:
    token = "s3cret-token-for-the-test"
    server = RunningServer(token=token)
    claude = box.hosts.bin("claude")
    try:
        # The page's line run by a real shell (the variable set in it), against the test's server.
        line = remote_claude_code_line().replace("http://codescout.internal:8000/mcp", server.url)
        shell = {**box.env, **CLAUDE_ENV, "CODESCOUT_TOKEN": token, "PATH": f"{Path(claude).parent}:{box.env['PATH']}"}
        add = subprocess.run(
            ["bash", "-c", line], cwd=box.project, env=shell, capture_output=True, text=True, timeout=TIMEOUT
        )
        stored = json.loads((box.home / ".claude.json").read_text(encoding="utf-8"))
        connected = box.run("claude", "mcp", "get", "codescout", env={**CLAUDE_ENV, "CODESCOUT_TOKEN": token})
        refused = box.run("claude", "mcp", "get", "codescout", env={**CLAUDE_ENV, "CODESCOUT_TOKEN": "wrong"})
        # Without the braces, as docs/hosts.md warns: Claude Code sends the text as it stands.
        unbraced = line.replace("${CODESCOUT_TOKEN}", "$CODESCOUT_TOKEN").replace(" codescout ", " bare ")
        subprocess.run(
            ["bash", "-c", unbraced], cwd=box.project, env=shell, capture_output=True, timeout=TIMEOUT, check=True
        )
        bare = box.run("claude", "mcp", "get", "bare", env={**CLAUDE_ENV, "CODESCOUT_TOKEN": token})
    finally:
        status, log = server.stop()
    return {
        "box": box, "url": server.url, "token": token, "add": add, "stored": stored,
        "connected": connected, "refused": refused, "bare": bare, "server": (status, log),
    }  # fmt: skip


def claude_http_server(name: str, url: str, status: str, header: str) -> str:
    """What `claude mcp get NAME` shows for an HTTP server, with its status line(s)."""
    return (
        f"{name}:\n"
        "  Scope: Local config (private to you in this project)\n"
        f"  Status: {status}\n"
        "  Type: http\n"
        f"  URL: {url}\n"
        "  Headers:\n"
        f"    Authorization: {header}\n"
        "\n"
        f"To remove this server, run: claude mcp remove {name} -s local\n"
    )


REJECTED = (
    "✘ Failed to connect\n"
    "  Issue: Server rejected the configured Authorization header (HTTP 401). Check that the token is valid for "
    "this MCP endpoint — OAuth fallback is disabled when headers.Authorization is set. Error detail: "
    "Unauthorized: a valid bearer token is required"
)


def test_claude_code_keeps_the_readme_header_variable_and_connects_over_http(outcome: dict[str, Any]) -> None:
    box, url, token = outcome["box"], outcome["url"], outcome["token"]
    assert (outcome["add"].returncode, outcome["add"].stderr) == (0, "")
    assert outcome["add"].stdout == (
        f"Added HTTP MCP server codescout with URL: {url} to local config\n"
        'Headers: {\n  "Authorization": "[REDACTED]"\n}\n'
        f"File modified: {box.home}/.claude.json [project: {box.project}]\n"
    )
    # The variable is stored, not the token; Claude Code fills it in each time it connects.
    servers = outcome["stored"]["projects"][str(box.project)]["mcpServers"]
    assert servers == {
        "codescout": {"type": "http", "url": url, "headers": {"Authorization": "Bearer ${CODESCOUT_TOKEN}"}}
    }
    assert token not in json.dumps(outcome["stored"])
    variable = "Bearer ${CODESCOUT_TOKEN}"
    assert_run(outcome["connected"], claude_http_server("codescout", url, "✔ Connected", variable))
    assert_run(outcome["refused"], claude_http_server("codescout", url, REJECTED, variable))
    assert_run(outcome["bare"], claude_http_server("bare", url, REJECTED, "Bearer $CODESCOUT_TOKEN"))
    status, log = outcome["server"]
    assert status == 0 and "Traceback" not in log, log


# --- Gemini CLI --------------------------------------------------------------------------------

# Its settings for updates, usage statistics and telemetry, and the key-based login the fake
# model accepts (GOOGLE_GEMINI_BASE_URL sends the requests there).
GEMINI_SETTINGS = {
    "general": {"enableAutoUpdate": False, "enableAutoUpdateNotification": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
    "security": {"auth": {"selectedType": "gemini-api-key"}},
}


def json_snippet_with(snippet: tuple[str, str], workspace: Path | None = None) -> dict[str, Any]:
    """An `mcpServers` snippet parsed, its command swapped for the installed server."""
    language, body = snippet
    assert language == "json"
    config: dict[str, Any] = json.loads(body)
    for server in config["mcpServers"].values():
        command, *args = swapped([server["command"], *server["args"]], workspace)
        server.update(command=command, args=args)
    return config


def gemini_home_settings(box: Sandbox, *, trusted: bool) -> None:
    """The page's user settings (command swapped) with the sandbox's, and the project's trust."""
    config = json_snippet_with(client_snippet("Gemini CLI"))
    box.write_json(box.home / ".gemini" / "settings.json", {**config, **GEMINI_SETTINGS})
    if trusted:
        box.write_json(box.home / ".gemini" / "trustedFolders.json", {str(box.project): "TRUST_FOLDER"})


@scenario
def gemini_cli_keeps_the_server_disabled_in_an_untrusted_folder(box: Sandbox) -> dict[str, Any]:
    gemini_home_settings(box, trusted=False)
    return {"box": box, "list": box.run("gemini", "mcp", "list")}


def test_gemini_cli_keeps_the_server_disabled_in_an_untrusted_folder(outcome: dict[str, Any]) -> None:
    # Gemini CLI prints its listing on stderr.
    assert_run(
        outcome["list"],
        "",
        "Warning: MCP servers are configured but disabled because this folder is untrusted.\n"
        "User-level servers are also suppressed in untrusted folders to prevent accidental side-effects.\n"
        "\n"
        f"Configured MCP servers:\n\n○ codescout: {installed('codescout-mcp')}  (stdio) - Disabled\n",
    )


@scenario
def gemini_cli_connects_with_the_readme_snippet_in_a_trusted_folder(box: Sandbox) -> dict[str, Any]:
    gemini_home_settings(box, trusted=True)
    return {"box": box, "list": box.run("gemini", "mcp", "list")}


def test_gemini_cli_connects_with_the_readme_snippet_in_a_trusted_folder(outcome: dict[str, Any]) -> None:
    exe = installed("codescout-mcp")
    assert_run(outcome["list"], "", f"Configured MCP servers:\n\n✓ codescout: {exe}  (stdio) - Connected\n")


@scenario
def gemini_cli_sees_both_tools_and_calls_one_from_the_workspace_snippet(box: Sandbox) -> dict[str, Any]:
    box.write_json(box.home / ".gemini" / "settings.json", GEMINI_SETTINGS)
    box.write_json(box.home / ".gemini" / "trustedFolders.json", {str(box.project): "TRUST_FOLDER"})
    box.write_json(box.project / ".gemini" / "settings.json", json_snippet_with(workspace_snippet("Gemini CLI")))
    with FakeModel("rank_workspace_hits", WORKSPACE_ARGUMENTS) as model:
        # A fixed model skips the router's extra request; yolo lets a non-interactive run call MCP tools.
        turn = box.run(
            *("gemini", "-m", "gemini-2.5-flash", "--approval-mode", "yolo"),
            *("-p", "Rank my hits", "--output-format", "json"),
            env={"GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": model.url},
        )  # fmt: skip
    return {"box": box, "turn": turn, "exchange": model.exchange}


def test_gemini_cli_sees_both_tools_and_calls_one_from_the_workspace_snippet(outcome: dict[str, Any]) -> None:
    turn, exchange = outcome["turn"], outcome["exchange"]
    assert turn.returncode == 0, turn.stderr
    assert json.loads(turn.stdout)["response"] == "done"
    ours = [[name for name in offered if "codescout" in name] for offered in exchange.offered]
    both = [f"mcp_codescout_{name}" for name in WORKSPACE_TOOLS]
    assert ours == [both, both]
    # Gemini CLI hands the model a server's text wrapped as untrusted context.
    assert exchange.result == {"output": f"<untrusted_context>\n{compact(WORKSPACE_RESULT)}\n</untrusted_context>"}


# --- Qwen Code ---------------------------------------------------------------------------------

# Gemini CLI's settings for updates, usage statistics and telemetry, which Qwen Code kept.
QWEN_SETTINGS = {
    "general": {"enableAutoUpdate": False},
    "privacy": {"usageStatisticsEnabled": False},
    "telemetry": {"enabled": False},
}


@scenario
def qwen_code_connects_with_the_readme_snippet(box: Sandbox) -> dict[str, Any]:
    config = json_snippet_with(client_snippet("Qwen Code"))
    box.write_json(box.home / ".qwen" / "settings.json", {**config, **QWEN_SETTINGS})
    return {"box": box, "list": box.run("qwen", "mcp", "list")}


def test_qwen_code_connects_with_the_readme_snippet(outcome: dict[str, Any]) -> None:
    listed = outcome["list"]
    assert (listed.returncode, strip_ansi(listed.stdout), strip_ansi(listed.stderr)) == (
        0, f"Configured MCP servers:\n✓ codescout: {installed('codescout-mcp')}  (stdio) - Connected\n", "",
    )  # fmt: skip


# --- opencode ----------------------------------------------------------------------------------

# Its switches for the updater, the model catalogue download, default plugins, LSP downloads,
# and reading Claude Code's files; sharing off in its config.
OPENCODE_ENV = {
    "OPENCODE_DISABLE_AUTOUPDATE": "1",
    "OPENCODE_DISABLE_MODELS_FETCH": "1",
    "OPENCODE_DISABLE_DEFAULT_PLUGINS": "1",
    "OPENCODE_DISABLE_LSP_DOWNLOAD": "1",
    "OPENCODE_DISABLE_CLAUDE_CODE": "1",
}
OPENCODE_SETTINGS = {"autoupdate": False, "share": "disabled", "snapshot": False}


def opencode_snippet_with(snippet: tuple[str, str], workspace: Path | None = None) -> dict[str, Any]:
    """An opencode snippet parsed, its command swapped for the installed server."""
    language, body = snippet
    assert language == "json"
    config: dict[str, Any] = json.loads(body)
    for server in config["mcp"].values():
        server["command"] = swapped(server["command"], workspace)
    return config


def opencode_home_settings(box: Sandbox, config: dict[str, Any]) -> None:
    box.write_json(box.home / ".config" / "opencode" / "opencode.json", {**config, **OPENCODE_SETTINGS})


@scenario
def opencode_ignores_an_mcp_servers_table(box: Sandbox) -> dict[str, Any]:
    opencode_home_settings(box, json_snippet_with(client_snippet("Claude Desktop")))
    return {"box": box, "list": box.run("opencode", "mcp", "list", env=OPENCODE_ENV)}


def test_opencode_ignores_an_mcp_servers_table(outcome: dict[str, Any]) -> None:
    listed = outcome["list"]
    # Colours stripped (opencode colours its output even when told not to; stderr is a colour reset).
    assert (listed.returncode, strip_ansi(listed.stdout), strip_ansi(listed.stderr)) == (
        0, "┌  MCP Servers\n│\n▲  No MCP servers configured\n│\n└  Add servers with: opencode mcp add\n\n", "\n",
    )  # fmt: skip


@scenario
def opencode_connects_with_the_readme_snippet(box: Sandbox) -> dict[str, Any]:
    opencode_home_settings(box, opencode_snippet_with(client_snippet("opencode")))
    return {"box": box, "list": box.run("opencode", "mcp", "list", env=OPENCODE_ENV)}


def test_opencode_connects_with_the_readme_snippet(outcome: dict[str, Any]) -> None:
    listed = outcome["list"]
    exe = installed("codescout-mcp")
    assert (listed.returncode, strip_ansi(listed.stdout), strip_ansi(listed.stderr)) == (
        0, f"┌  MCP Servers\n│\n●  ✓ codescout connected\n│      {exe}\n│\n└  1 server(s)\n\n", "\n",
    )  # fmt: skip


@scenario
def opencode_sees_both_tools_and_calls_one_from_the_workspace_snippet(box: Sandbox) -> dict[str, Any]:
    box.write_json(box.project / "opencode.json", opencode_snippet_with(workspace_snippet("opencode")))
    with FakeModel("rank_workspace_hits", WORKSPACE_ARGUMENTS) as model:
        provider = {
            "npm": "@ai-sdk/openai-compatible",
            "name": "Loopback",
            "options": {"baseURL": f"{model.url}/v1", "apiKey": "test-key"},
            "models": {"fake": {"name": "fake"}},
        }
        opencode_home_settings(box, {"provider": {"loopback": provider}, "model": "loopback/fake"})
        turn = box.run("opencode", "run", "Rank my hits", "--format", "json", env=OPENCODE_ENV)
    return {"box": box, "turn": turn, "exchange": model.exchange}


def test_opencode_sees_both_tools_and_calls_one_from_the_workspace_snippet(outcome: dict[str, Any]) -> None:
    turn, exchange = outcome["turn"], outcome["exchange"]
    assert (turn.returncode, turn.stderr) == (0, ""), turn.stdout
    events = [json.loads(line) for line in turn.stdout.splitlines()]
    calls = [event["part"] for event in events if event["type"] == "tool_use"]
    assert [(call["tool"], call["state"]["status"], call["state"]["input"]) for call in calls] == [
        ("codescout_rank_workspace_hits", "completed", WORKSPACE_ARGUMENTS)
    ]
    assert [event["part"]["text"] for event in events if event["type"] == "text"] == ["done"]
    ours = [[name for name in offered if "codescout" in name] for offered in exchange.offered if offered]
    both = [f"codescout_{name}" for name in WORKSPACE_TOOLS]
    assert ours == [both, both]
    assert exchange.result == compact(WORKSPACE_RESULT)


# --- Codex -------------------------------------------------------------------------------------


class AppServer:
    """`codex app-server`: JSON-RPC over its stdin and stdout, one message a line."""

    def __init__(self, box: Sandbox) -> None:
        self.proc = subprocess.Popen(
            [box.hosts.bin("codex"), "app-server"],
            cwd=box.project,
            env={**box.env, "CODEX_HOME": str(box.home / ".codex")},
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            start_new_session=True,
        )
        self.notifications: list[dict[str, Any]] = []
        self.stderr: list[str] = []
        self._lines: queue.Queue[str] = queue.Queue()
        self._next = 0
        assert self.proc.stdout is not None and self.proc.stderr is not None
        threading.Thread(target=self._read, daemon=True).start()
        threading.Thread(target=lambda: self.stderr.extend(self.proc.stderr or ()), daemon=True).start()

    def _read(self) -> None:
        for line in self.proc.stdout or ():
            self._lines.put(line)

    def request(self, method: str, params: dict[str, Any]) -> Any:
        """The result of one request; notifications that arrive meanwhile are kept."""
        self._next += 1
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"id": self._next, "method": method, "params": params}) + "\n")
        self.proc.stdin.flush()
        deadline = time.monotonic() + TIMEOUT
        while True:
            try:
                message = json.loads(self._lines.get(timeout=max(0.0, deadline - time.monotonic())))
            except queue.Empty:
                raise AssertionError(f"codex app-server did not answer {method}: {''.join(self.stderr)}") from None
            if message.get("id") == self._next and "method" not in message:
                assert "error" not in message, message
                return message["result"]
            self.notifications.append(message)

    def notify(self, method: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(json.dumps({"method": method}) + "\n")
        self.proc.stdin.flush()

    def close(self) -> int:
        assert self.proc.stdin is not None
        self.proc.stdin.close()
        try:
            return self.proc.wait(timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise AssertionError("codex app-server did not exit when its input closed") from None
        finally:
            end_group(self.proc.pid)


# No update check, no analytics, and a model provider on a closed loopback port: starting a
# thread warms up a connection to the provider, which must not leave the machine.
CODEX_SETTINGS = """check_for_update_on_startup = false
model_provider = "loopback"

[analytics]
enabled = false

[model_providers.loopback]
name = "loopback"
base_url = "http://127.0.0.1:9/v1"

"""


def codex_config(snippet: tuple[str, str], workspace: Path | None = None) -> str:
    """The page's TOML with its command swapped, after the sandbox's own settings."""
    language, body = snippet
    assert language == "toml"
    command, *args = swapped(snippet_argv("Codex CLI", language, body), workspace)
    # JSON strings are TOML basic strings for any path these tests make.
    return CODEX_SETTINGS + f"[mcp_servers.codescout]\ncommand = {json.dumps(command)}\nargs = {json.dumps(args)}\n"


def codex_session(box: Sandbox, config: str, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """Configure Codex, list its MCP servers, start a thread and call one tool through it."""
    (box.home / ".codex").mkdir(parents=True)
    (box.home / ".codex" / "config.toml").write_text(config, encoding="utf-8")
    server = AppServer(box)
    try:
        server.request("initialize", {"clientInfo": {"name": "codescout-tests", "version": "1"}})
        server.notify("initialized")
        status = server.request("mcpServerStatus/list", {})
        thread = server.request("thread/start", {"cwd": str(box.project), "ephemeral": True})
        called = server.request(
            "mcpServer/tool/call",
            {"server": "codescout", "threadId": thread["thread"]["id"], "tool": tool, "arguments": arguments},
        )
    finally:
        returncode = server.close()
    return {"box": box, "status": status, "called": called, "returncode": returncode}


def served(argv: list[str], cwd: Path) -> dict[str, Any]:
    """What codescout itself answers to initialize and tools/list over stdio, to compare a host's view with."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {}, "clientInfo": {"name": "tests", "version": "1"},
        }},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/list"},
    ]  # fmt: skip
    done = subprocess.run(
        argv,
        cwd=cwd,
        input="".join(json.dumps(message) + "\n" for message in messages),
        capture_output=True,
        text=True,
        timeout=TIMEOUT,
        check=True,
    )
    initialized, listed = (json.loads(line)["result"] for line in done.stdout.splitlines())
    return {**initialized, "tools": {tool["name"]: tool for tool in listed["tools"]}}


def without_nulls(value: dict[str, Any]) -> dict[str, Any]:
    """Codex fills every field it knows, with null where the server sent none."""
    return {key: item for key, item in value.items() if item is not None}


def assert_codex_session(outcome: dict[str, Any], result: dict[str, Any]) -> None:
    served, status = outcome["served"], outcome["status"]
    (entry,) = status["data"]
    tools = entry.pop("tools")
    # Codex lists the server as it introduced itself, with exactly the tools it offers, every field of each.
    assert (status, entry) == (
        {"data": [entry], "nextCursor": None},
        {
            "name": "codescout",
            "environmentId": None,
            "runtimeStatus": None,
            "pluginId": None,
            "httpOrigin": None,
            "serverInfo": {"icons": None, "websiteUrl": None, **served["serverInfo"]},
            "serverCapabilities": served["capabilities"],
            "toolListMeta": None,
            "toolsError": None,
            "resources": [],
            "resourceTemplates": [],
            "authStatus": "unsupported",
        },
    )
    assert {name: without_nulls(tool) for name, tool in tools.items()} == served["tools"]
    assert outcome["called"] == {
        "content": [{"type": "text", "text": compact(result)}],
        "structuredContent": result,
        "isError": False,
    }
    assert outcome["returncode"] == 0


@scenario
def codex_lists_and_calls_the_tool_from_the_readme_toml(box: Sandbox) -> dict[str, Any]:
    config = codex_config(client_snippet("Codex CLI"))
    outcome = codex_session(box, config, "rank_search_results", SEARCH_ARGUMENTS)
    return {**outcome, "served": served([installed("codescout-mcp")], box.project)}


def test_codex_lists_and_calls_the_tool_from_the_readme_toml(outcome: dict[str, Any]) -> None:
    assert list(outcome["served"]["tools"]) == ["rank_search_results"]
    assert_codex_session(outcome, SEARCH_RESULT)


@scenario
def codex_lists_both_tools_and_calls_one_from_the_workspace_toml(box: Sandbox) -> dict[str, Any]:
    config = codex_config(workspace_snippet("Codex CLI"), box.project)
    outcome = codex_session(box, config, "rank_workspace_hits", WORKSPACE_ARGUMENTS)
    argv = swapped(snippet_argv("Codex CLI", *workspace_snippet("Codex CLI")), box.project)
    return {**outcome, "served": served(argv, box.home)}


def test_codex_lists_both_tools_and_calls_one_from_the_workspace_toml(outcome: dict[str, Any]) -> None:
    assert list(outcome["served"]["tools"]) == WORKSPACE_TOOLS
    assert_codex_session(outcome, WORKSPACE_RESULT)


# --- what a model reads: codescout's definitions and a search answer, as hosts send them ---------

# The budget each tool's name, description and input schema keep in a host's request to its model
# (no tested host shows a model the output schema, the title, the annotations or the icons).
DEFINITION_BYTES = 1_200
SEARCH_CALL = {"pattern": "rank"}


def codescout_definitions(body: dict[str, Any]) -> dict[str, int]:
    """Each codescout tool's definition in a request to the model, in bytes of compact JSON: an
    Anthropic or Responses function tool, or (Codex's code mode) the lines that describe it."""
    found: dict[str, int] = {}
    for tool in body.get("tools") or []:
        name = tool.get("name", "")
        if "codescout" in name:
            found[name] = len(json.dumps(tool, separators=(",", ":"), ensure_ascii=False).encode())
    return found


def search_turn_claude(box: Sandbox) -> dict[str, Any]:
    _, line = workspace_snippet("Claude Code")
    add = box.run("claude", *claude_add_args(line, cwd=box.project), env=CLAUDE_ENV)
    with FakeModel("search_workspace", SEARCH_CALL) as model:
        turn = box.run(
            "claude",
            *("-p", "Which files are about ranking?", "--output-format", "stream-json", "--verbose"),
            *("--allowedTools", "mcp__codescout__search_workspace"),
            env={**CLAUDE_ENV, "ANTHROPIC_BASE_URL": model.url, "ANTHROPIC_API_KEY": "sk-ant-test",
                 "ENABLE_TOOL_SEARCH": "false"},
        )  # fmt: skip
    return {"box": box, "add": add, "turn": turn, "exchange": model.exchange}


def search_turn_codex(box: Sandbox) -> dict[str, Any]:
    (box.home / ".codex").mkdir(parents=True, exist_ok=True)
    with FakeModel("search_workspace", SEARCH_CALL) as model:
        settings = CODEX_SETTINGS.replace('base_url = "http://127.0.0.1:9/v1"', f'base_url = "{model.url}/v1"')
        config = codex_config(workspace_snippet("Codex CLI"), box.project).replace(CODEX_SETTINGS, settings)
        (box.home / ".codex" / "config.toml").write_text(config, encoding="utf-8")
        turn = box.run(
            "codex",
            *("exec", "--skip-git-repo-check", "--json", "--dangerously-bypass-approvals-and-sandbox"),
            "Which files are about ranking?",
            env={"CODEX_HOME": str(box.home / ".codex")},
        )
    return {"box": box, "turn": turn, "exchange": model.exchange}


@scenario
def claude_code_finds_the_files_with_one_search_call(box: Sandbox) -> dict[str, Any]:
    return search_turn_claude(box)


@scenario
def codex_exec_finds_the_files_with_one_search_call(box: Sandbox) -> dict[str, Any]:
    return search_turn_codex(box)


INSTRUCTION_BYTES = 320


def instructions_shown(body: dict[str, Any]) -> str | None:
    """The server's instructions as the request shows them to the model: Claude Code's system
    prompt section, or Codex's line for the deferred namespace (which it cuts, with "...", when long)."""
    text = json.dumps(body, ensure_ascii=False)
    for start in ("## codescout\\n", "- mcp__codescout: "):
        at = text.find(start)
        if at >= 0:
            found: str = json.loads('"' + text[at + len(start) :].split("\\n", 1)[0] + '"')
            return found
    return None


def model_reads(outcome: dict[str, Any], host: str) -> dict[str, Any]:
    """What the model read of codescout in the turn: each tool's definition, the instructions and
    the search's answer, in bytes; each held to its budget."""
    turn, exchange = outcome["turn"], outcome["exchange"]
    assert turn.returncode == 0, (turn.stdout[-2000:], turn.stderr[-2000:])
    first = exchange.bodies[0]
    definitions = codescout_definitions(first)
    for size in definitions.values():
        assert size <= DEFINITION_BYTES, definitions
    shown = instructions_shown(first)
    assert shown == WORKSPACE_INSTRUCTIONS, shown  # whole: not cut by a host that cuts long ones
    assert len(shown.encode()) <= INSTRUCTION_BYTES
    answer = json.dumps(exchange.result, ensure_ascii=False)
    assert '"path":"src/rank.py"' in answer.replace("\\", "").replace(" ", "") and "data:image" not in answer, answer
    measured = {
        "host": host,
        "definitions": definitions,
        "instructions_bytes": len(shown.encode()),
        "answer_bytes": len(answer.encode()),
    }
    report = os.environ.get("CODESCOUT_MODEL_BYTES")  # bench/model_cost.py collects them
    if report:
        with open(report, "a", encoding="utf-8") as handle:
            handle.write(json.dumps(measured) + "\n")
    return measured


def test_claude_code_finds_the_files_with_one_search_call(outcome: dict[str, Any]) -> None:
    measured = model_reads(outcome, "claude-code")
    # Claude Code puts every tool's definition in each request; the answer is the compact JSON text.
    assert {name.rpartition("__")[2] for name in measured["definitions"]} == set(WORKSPACE_TOOLS)
    assert measured["answer_bytes"] < 400


def test_codex_exec_finds_the_files_with_one_search_call(outcome: dict[str, Any]) -> None:
    measured = model_reads(outcome, "codex")
    # Codex's code mode names the server (its instructions) and loads a tool's definition only
    # when the model asks for it: none is in the turn's requests.
    assert measured["definitions"] == {}
    assert measured["answer_bytes"] < 1_000


def test_every_scenario_has_its_test() -> None:
    tests = {name.removeprefix("test_") for name in globals() if name.startswith("test_")}
    assert set(SCENARIOS) <= tests
