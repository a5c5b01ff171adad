"""The README and the pages of docs/ stay true: their commands, their JSON, TOML, YAML and shell lines,
their links, and their Python, run as written.

The README is the front door (what it is, install, one snippet per common host, the rule and its
example, the two commands, the exit statuses); docs/hosts.md holds every host's snippet, and the
README's snippets must be the same text as the page's, which the hosts themselves run
(tests/interop/test_hosts.py).
"""

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
DOCS = {path.name: path.read_text(encoding="utf-8") for path in sorted((ROOT / "docs").glob("*.md"))}
HOSTS = DOCS["hosts.md"]
# Every page a user may read, by its path in the checkout.
PAGES = {"README.md": README, **{f"docs/{name}": text for name, text in DOCS.items()}}
# The front door's size: what it is, install, the common hosts, the rule, two commands, links.
README_MAX_BYTES = 15_000


def blocks(language: str, text: str = README) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", text, flags=re.DOTALL)


def all_blocks(language: str) -> list[str]:
    """The blocks in `language` on every page."""
    return [block for text in PAGES.values() for block in blocks(language, text)]


def section(title: str, text: str = README) -> str:
    """The text from a `## title` heading to the next `## ` heading (or the end of the page)."""
    found = re.search(rf"^## {re.escape(title)}\n(.*?)(?=^## |\Z)", text, flags=re.DOTALL | re.MULTILINE)
    assert found is not None, title
    return found.group(1)


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = re.search(r"^test_command='(.*)'$", ci, flags=re.MULTILINE)
    assert command is not None
    assert any(block.strip() == command.group(1) for block in blocks("sh"))
    # The development page opens with the same command.
    assert blocks("sh", DOCS["development.md"])[0].strip() == command.group(1)


def test_every_json_block_parses() -> None:
    found = all_blocks("json")
    assert len(found) >= 12
    for block in found:
        json.loads(block)


def test_readme_example_input_gives_the_readme_example_output() -> None:
    inputs = [json.loads(b) for b in blocks("json") if '"hits"' in b and '"results"' not in b]
    outputs = [json.loads(b) for b in blocks("json") if '"results"' in b]
    assert rank(inputs[0]) == outputs[0]
    assert inputs[0] == json.loads((ROOT / "examples" / "args.json").read_text(encoding="utf-8"))


def test_python_example_runs_and_prints_what_it_says() -> None:
    assert all_blocks("python") == blocks("python", DOCS["cli.md"])
    (source,) = blocks("python", DOCS["cli.md"])
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(source, "docs/cli.md", "exec"), {})
    assert printed.getvalue().splitlines() == ["195", "hits expected a non-empty array, got an empty array"]


def test_readme_carries_the_registry_name_marker() -> None:
    server = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
    assert f"mcp-name: {server['name']}" in README


def test_readme_says_why_the_distribution_is_not_called_codescout() -> None:
    assert "`codescout` there belongs to an unrelated project" in section("Install")


def test_readme_stays_a_front_door() -> None:
    assert len(README.encode("utf-8")) <= README_MAX_BYTES
    titles = re.findall(r"^## (.+)$", README, flags=re.MULTILINE)
    assert titles == ["Install", "Connect your host", "The rule", "Two commands", "Exit statuses", "More", "License"]


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def anchors(text: str) -> set[str]:
    headings = re.findall(r"^#+ (.+)$", re.sub(r"```.*?```", "", text, flags=re.DOTALL), flags=re.MULTILINE)
    return {slug(heading) for heading in headings}


@pytest.mark.parametrize("page", list(PAGES))
def test_every_link_between_pages_leads_somewhere(page: str) -> None:
    folder = (ROOT / page).parent
    for target in re.findall(r"\]\(([^)\s]+)\)", PAGES[page]):
        if re.match(r"[a-z]+:", target):
            continue  # a web address
        path, _, anchor = target.partition("#")
        linked = (folder / path).resolve() if path else (ROOT / page).resolve()
        assert linked.is_file(), (page, target)
        if anchor:
            text = linked.read_text(encoding="utf-8")
            assert anchor in anchors(text), (page, target)


def test_the_readme_links_every_docs_page() -> None:
    linked = set(re.findall(r"\]\(docs/([\w-]+\.md)", section("More")))
    assert linked == set(DOCS)


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
# The hosts whose snippet the README shows too (the same text as docs/hosts.md's).
README_CLIENTS = ["Claude Code", "Claude Desktop", "VS Code", "Cursor", "Codex CLI", "Gemini CLI", "Docker"]
HOSTS_SECTION = "Host by host"
WORKSPACE_SECTION = "With a workspace"


def _first_block(text: str) -> tuple[str, str]:
    found = re.search(r"```(\w+)\n(.*?)```", text, flags=re.DOTALL)
    assert found is not None
    return found.group(1), found.group(2)


def client_snippet(client: str) -> tuple[str, str]:
    """The language and text of the first code block after `**client**` in docs/hosts.md's hosts."""
    text = section(HOSTS_SECTION, HOSTS)
    return _first_block(text[text.index(f"**{client}**") :])


def workspace_snippet(client: str) -> tuple[str, str]:
    """The language and text of the block after the paragraph naming `client` in docs/hosts.md's workspace part."""
    text = section(WORKSPACE_SECTION, HOSTS)
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


def test_every_client_with_a_bold_heading_in_the_hosts_page_is_parsed() -> None:
    named = re.findall(r"^\*\*([^*]+)\*\*[ :(,]", section(HOSTS_SECTION, HOSTS), flags=re.MULTILINE)
    assert named == [*CLIENTS, "A shared server over HTTP"]


def test_the_readme_shows_the_common_hosts_as_the_hosts_page_does() -> None:
    text = section("Connect your host")
    named = re.findall(r"^\*\*([^*]+)\*\*[ :(,]", text, flags=re.MULTILINE)
    assert named == README_CLIENTS
    for client in named:
        assert _first_block(text[text.index(f"**{client}**") :]) == client_snippet(client), client
    # The image with a workspace (tests/distribution/test_docker.py runs the README's block).
    assert _first_block(text[text.index("\nDocker (") :]) == workspace_snippet("Docker")


def test_the_config_file_table_names_every_host_with_a_file() -> None:
    table = section("Where each host keeps its configuration", HOSTS)
    rows = [line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    hosts = {row.split(" (")[0] for row in rows[1:]}
    assert hosts == set(CLIENTS) - {"Docker"}
    for line in table.splitlines()[2:]:
        if line.startswith("| "):
            assert len(line.strip("|").split(" | ")) == 4, line


def test_the_timeout_table_names_every_host() -> None:
    table = section("Start-up timeouts", HOSTS)
    rows = [line.split("|")[1].strip() for line in table.splitlines() if line.startswith("| ") and "---" not in line]
    hosts = {host for row in rows[1:] for host in row.split(", ")}
    assert hosts == set(CLIENTS) - {"Docker"}


@pytest.mark.parametrize("page", list(PAGES))
def test_every_uvx_line_names_codescout_mcp(page: str) -> None:
    for line in PAGES[page].splitlines():
        if "uvx " in line:
            assert re.search(r"uvx (--from codescout-mcp codescout|codescout-mcp)\b", line), line


def test_vs_code_install_links_carry_the_same_config() -> None:
    pages = [README, HOSTS]
    links = [re.findall(r"\(https://insiders\.vscode\.dev/redirect/mcp/install\?([^)]*)\)", text) for text in pages]
    assert [len(found) for found in links] == [1, 1]
    for (link,) in links:
        query = urllib.parse.parse_qs(link)
        assert query["name"] == ["codescout"]
        assert json.loads(query["config"][0]) == {"type": "stdio", "command": "uvx", "args": ["codescout-mcp"]}


def remote_claude_code_line() -> str:
    """docs/hosts.md's `claude mcp add --transport http ...` line."""
    text = section(HOSTS_SECTION, HOSTS)
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
        # The shell of whoever runs it from the project's root puts the folder there.
        "Claude Code": ["uvx", "codescout-mcp", "--workspace", "$PWD"],
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
    # A paragraph just above a code block names the host.
    leads = re.findall(r"\n\n((?:[^\n]+\n)+)\n```", section(WORKSPACE_SECTION, HOSTS))
    assert [lead.split(" (")[0] for lead in leads] == WORKSPACE_CLIENTS


def test_claude_codes_workspace_line_names_the_folder_it_is_run_in() -> None:
    _, line = workspace_snippet("Claude Code")
    assert line.strip().endswith('--workspace "$PWD"')  # quoted: a project path may hold spaces


def test_the_docs_list_exactly_the_protocol_versions_served() -> None:
    text = section("What the server offers", HOSTS)
    named = re.findall(r"\*\*(\d{4}-\d{2}-\d{2})\*\*", text)
    assert tuple(named) == SERVED_PROTOCOL_VERSIONS
