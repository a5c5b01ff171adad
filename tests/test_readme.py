"""The README stays true: its commands, its JSON, TOML and shell lines, and its Python run as written."""

from __future__ import annotations

import contextlib
import io
import json
import re
import shlex
import sys
import urllib.parse
from typing import Any

import pytest

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


def _stdio_servers(config: dict[str, Any]) -> list[dict[str, Any]]:
    for key in ("mcpServers", "servers", "context_servers"):
        if key in config:
            return list(config[key].values())
    raise AssertionError(f"no server table in {config}")


CLIENTS = ["Claude Desktop", "Claude Code", "VS Code", "Cursor", "Windsurf", "Zed", "Codex CLI", "Gemini CLI", "Docker"]


def client_snippet(client: str) -> str:
    text = section("MCP server")
    start = text.index(f"**{client}**")
    found = re.search(r"```(\w+)\n(.*?)```", text[start:], flags=re.DOTALL)
    assert found is not None
    return f"{found.group(1)}\n{found.group(2)}"


@pytest.mark.parametrize("client", CLIENTS)
def test_each_client_snippet_parses_and_starts_codescout_mcp(client: str) -> None:
    language, _, body = client_snippet(client).partition("\n")
    if language == "json":
        (server,) = _stdio_servers(json.loads(body))
        argv = [server["command"], *server["args"]]
        if server.get("type") is not None:
            assert server["type"] == "stdio"
    elif language == "toml":
        server = tomllib.loads(body)["mcp_servers"]["codescout"]
        argv = [server["command"], *server["args"]]
    else:
        assert language == "sh"
        words = shlex.split(body)
        argv = words[words.index("--") + 1 :]
        assert words[:4] == ["claude", "mcp", "add", "codescout"]
    if client == "Docker":
        assert argv == ["docker", "run", "-i", "--rm", "codescout"]
    else:
        assert argv == ["uvx", "codescout-mcp"]


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


def test_remote_snippets_point_at_the_mcp_endpoint() -> None:
    text = section("MCP server")
    remote = json.loads(re.findall(r"```json\n(.*?)```", text, flags=re.DOTALL)[-1])
    (server,) = _stdio_servers(remote)
    assert server["type"] == "http" and server["url"].endswith(":8000/mcp")
    (line,) = [block for block in re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL) if "--transport http" in block]
    words = shlex.split(line)
    assert words[:6] == ["claude", "mcp", "add", "--transport", "http", "codescout"]
    assert words[6].endswith(":8000/mcp")


def test_workspace_snippets_pass_the_workspace() -> None:
    text = section("For agents without a shell: `rank_workspace_hits`")
    configs = [json.loads(b) for b in re.findall(r"```json\n(.*?)```", text, flags=re.DOTALL)]
    argvs = [[s["command"], *s["args"]] for c in configs for s in _stdio_servers(c)]
    assert argvs[0] == ["uvx", "codescout-mcp", "--workspace", "${workspaceFolder}"]
    assert argvs[1] == ["uvx", "codescout-mcp", "--workspace", "/Users/me/src/project"]
    assert argvs[2][-3:] == ["mcp", "--workspace", "/w"] and "/Users/me/src/project:/w:ro" in argvs[2]
    (line,) = [b for b in re.findall(r"```sh\n(.*?)```", text, flags=re.DOTALL) if b.startswith("claude")]
    assert shlex.split(line)[-4:] == ["uvx", "codescout-mcp", "--workspace", "."]


def test_readme_lists_exactly_the_protocol_versions_served() -> None:
    text = section("MCP server")
    named = re.findall(r"\*\*(\d{4}-\d{2}-\d{2})\*\*", text)
    assert tuple(named) == SERVED_PROTOCOL_VERSIONS
