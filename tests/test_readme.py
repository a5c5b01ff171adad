"""The README stays true: its commands, its JSON, TOML, YAML and shell lines, and its Python run as written."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import sys
import urllib.parse

import pytest
import yaml

from codescout_mcp import rank
from codescout_mcp.server import SERVED_PROTOCOL_VERSIONS
from tests.helpers import ROOT

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

README = (ROOT / "README.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.DOTALL)


def section(title: str) -> str:
    """The README text from a `## title` heading to the next `## ` heading."""
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## )", README, flags=re.DOTALL | re.MULTILINE)
    assert found is not None, title
    return found.group(1)


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = re.search(r"^test_command='(.*)'$", ci, flags=re.MULTILINE)
    assert command is not None
    assert any(block.strip() == command.group(1) for block in blocks("sh"))


def test_every_json_block_parses() -> None:
    found = blocks("json")
    assert len(found) >= 12
    for block in found:
        json.loads(block)


def test_readme_example_input_gives_the_readme_example_output() -> None:
    inputs = [json.loads(b) for b in blocks("json") if '"hits"' in b and '"results"' not in b]
    outputs = [json.loads(b) for b in blocks("json") if '"results"' in b]
    assert rank(inputs[0]) == outputs[0]
    assert inputs[0] == json.loads((ROOT / "examples" / "args.json").read_text(encoding="utf-8"))


def test_python_example_runs_and_prints_what_it_says() -> None:
    (source,) = blocks("python")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(source, "README.md", "exec"), {})
    assert printed.getvalue().splitlines() == ["195", "hits expected a non-empty array, got an empty array"]


def test_readme_carries_the_registry_name_marker() -> None:
    server = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
    assert f"mcp-name: {server['name']}" in README


def test_readme_says_why_the_distribution_is_not_called_codescout() -> None:
    assert "`codescout` there belongs to an unrelated project" in section("Install")


# --- client configuration: one parsed snippet per host --------------------------------------

CLIENTS = [
    "Claude Desktop",
    "Claude Code",
    "VS Code",
    "Cursor",
    "Windsurf",
    "Zed",
    "Codex CLI",
    "Gemini CLI",
    "Qwen Code",
    "opencode",
    "Kilo",
    "Continue",
    "Cline",
    "GitHub Copilot CLI",
    "Docker",
]
WORKSPACE_CLIENTS = ["VS Code", "Claude Code", "Claude Desktop", "Codex CLI", "Gemini CLI", "opencode", "Docker"]
WORKSPACE_SECTION = "For agents without a shell: `rank_workspace_hits`"


def _first_block(text: str) -> tuple[str, str]:
    found = re.search(r"```(\w+)\n(.*?)```", text, flags=re.DOTALL)
    assert found is not None
    return found.group(1), found.group(2)


def client_snippet(client: str) -> tuple[str, str]:
    """The language and text of the first code block after `**client**` in the MCP server section."""
    text = section("MCP server")
    return _first_block(text[text.index(f"**{client}**") :])


def workspace_snippet(client: str) -> tuple[str, str]:
    """The language and text of the block after the paragraph naming `client` in the workspace section."""
    text = section(WORKSPACE_SECTION)
    return _first_block(text[text.index(f"\n{client} (") :])


def snippet_argv(client: str, language: str, body: str) -> list[str]:
    """The command line a host runs from its snippet, read the way that host reads its file."""
    if language == "sh":
        words = shlex.split(body)
        assert words[:4] == ["claude", "mcp", "add", "codescout"] and words[4] == "--", words
        return words[5:]
    if language == "toml":
        server = tomllib.loads(body)["mcp_servers"]["codescout"]
        assert set(server) == {"command", "args"}
        return [server["command"], *server["args"]]
    if language == "yaml":
        config = yaml.safe_load(body)
        # A Continue block file names itself and its schema; the servers are a list, not a table.
        assert {key: config[key] for key in ("name", "version", "schema")} == {
            "name": "codescout", "version": "0.0.1", "schema": "v1",
        }  # fmt: skip
        (server,) = config["mcpServers"]
        assert set(server) == {"name", "command", "args"} and server["name"] == "codescout"
        return [server["command"], *server["args"]]
    assert language == "json"
    config = json.loads(body)
    if client in ("opencode", "Kilo"):
        # opencode's shape (Kilo reads the same): `mcp`, a local type, and one list for the command.
        assert set(config) <= {"$schema", "mcp"}
        server = config["mcp"]["codescout"]
        assert set(server) == {"type", "command"} and server["type"] == "local"
        command: list[str] = server["command"]
        return command
    table = {"VS Code": "servers", "Zed": "context_servers"}.get(client, "mcpServers")
    assert list(config) == [table]
    server = config[table]["codescout"]
    expected_keys = {"command", "args"}
    if client == "VS Code":
        assert server.pop("type") == "stdio"
    elif client == "GitHub Copilot CLI":
        assert (server.pop("type"), server.pop("tools")) == ("local", ["*"])
    elif client == "Cline":
        assert server.pop("timeout") == 60  # seconds; it also lifts the CLI's 3 s wait for a start
    assert set(server) == expected_keys
    return [server["command"], *server["args"]]


@pytest.mark.parametrize("client", CLIENTS)
def test_each_client_snippet_parses_and_starts_codescout_mcp(client: str) -> None:
    language, body = client_snippet(client)
    expected_language = {"Claude Code": "sh", "Codex CLI": "toml", "Continue": "yaml"}.get(client, "json")
    assert language == expected_language
    if client == "Docker":
        assert snippet_argv(client, language, body) == ["docker", "run", "-i", "--rm", "codescout"]
    else:
        assert snippet_argv(client, language, body) == ["uvx", "codescout-mcp"]


def test_every_client_with_a_bold_heading_in_the_mcp_section_is_parsed() -> None:
    named = re.findall(r"^\*\*([^*]+)\*\*[ :(,]", section("MCP server"), flags=re.MULTILINE)
    assert named == [*CLIENTS, "A shared server over HTTP"]


def test_the_config_file_table_names_every_host_with_a_file() -> None:
    table = section("MCP server").split("#### Where each host keeps its configuration")[1].split("####")[0]
    rows = [line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    hosts = {row.split(" (")[0] for row in rows[1:]}
    assert hosts == set(CLIENTS) - {"Docker"}
    for line in table.splitlines()[2:]:
        if line.startswith("| "):
            assert len(line.strip("|").split(" | ")) == 4, line


def test_the_timeout_table_names_every_host() -> None:
    table = section("MCP server").split("#### Start-up timeouts")[1]
    rows = [line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    hosts = {host for row in rows[1:] for host in row.split(", ")}
    assert hosts == set(CLIENTS) - {"Docker"}


def test_every_uvx_line_in_the_readme_names_codescout_mcp() -> None:
    for line in README.splitlines():
        if "uvx " in line:
            assert re.search(r"uvx (--from codescout-mcp codescout|codescout-mcp)\b", line), line


def test_vs_code_install_link_carries_the_same_config() -> None:
    link = re.search(r"\(https://insiders\.vscode\.dev/redirect/mcp/install\?([^)]*)\)", README)
    assert link is not None
    query = urllib.parse.parse_qs(link.group(1))
    assert query["name"] == ["codescout"]
    assert json.loads(query["config"][0]) == {"type": "stdio", "command": "uvx", "args": ["codescout-mcp"]}


def remote_claude_code_line() -> str:
    """The README's `claude mcp add --transport http ...` line."""
    text = section("MCP server")
    blocks: list[str] = re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL)
    (line,) = [block for block in blocks if "--transport http" in block]
    return line.strip()


def test_remote_snippets_point_at_the_mcp_endpoint() -> None:
    language, body = client_snippet("A shared server over HTTP")
    assert language == "json"
    server = json.loads(body)["servers"]["codescout"]
    assert server["type"] == "http" and server["url"].endswith(":8000/mcp")
    words = shlex.split(remote_claude_code_line())
    assert words[:6] == ["claude", "mcp", "add", "--transport", "http", "codescout"]
    assert words[6].endswith(":8000/mcp")
    # The shell leaves a single-quoted header alone: Claude Code gets (and stores) the variable.
    assert words[7:] == ["--header", "Authorization: Bearer ${CODESCOUT_TOKEN}"]
    assert "'Authorization: Bearer ${CODESCOUT_TOKEN}'" in remote_claude_code_line()


@pytest.mark.parametrize("client", WORKSPACE_CLIENTS)
def test_workspace_snippets_pass_the_workspace(client: str) -> None:
    language, body = workspace_snippet(client)
    argv = snippet_argv(client, language, body)
    expected = {
        "VS Code": ["uvx", "codescout-mcp", "--workspace", "${workspaceFolder}"],
        "Claude Code": ["uvx", "codescout-mcp", "--workspace", "."],
        "Claude Desktop": ["uvx", "codescout-mcp", "--workspace", "/Users/me/src/project"],
        "Codex CLI": ["uvx", "codescout-mcp", "--workspace", "/Users/me/src/project"],
        "Gemini CLI": ["uvx", "codescout-mcp", "--workspace", "."],
        "opencode": ["uvx", "codescout-mcp", "--workspace", "."],
    }
    if client == "Docker":
        assert argv[-3:] == ["mcp", "--workspace", "/w"] and "/Users/me/src/project:/w:ro" in argv
    else:
        assert argv == expected[client]


def test_every_workspace_snippet_is_parsed() -> None:
    # A paragraph just above a code block names the host (the section's first block, the command
    # line, follows the opening paragraph and so is not matched).
    leads = re.findall(r"\n\n((?:[^\n]+\n)+)\n```", section(WORKSPACE_SECTION))
    assert [lead.split(" (")[0] for lead in leads] == WORKSPACE_CLIENTS


def test_readme_lists_exactly_the_protocol_versions_served() -> None:
    text = section("MCP server")
    named = re.findall(r"\*\*(\d{4}-\d{2}-\d{2})\*\*", text)
    assert tuple(named) == SERVED_PROTOCOL_VERSIONS
