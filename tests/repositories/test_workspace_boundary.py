"""`rank_workspace_hits` answers for the folder the user named and nothing beyond it, in every layout.

Layouts: the workspace is a repository; a folder inside one (a host started in a subfolder);
a plain folder inside a repository (a project under a dotfiles repository in $HOME); a plain
folder. Spellings: relative, absolute, through `..`, through links, to the workspace's own
files and to files around it. Each case runs through a real session of the installed server,
over stdio and over HTTP. (Other letter cases on a file system that ignores them: the FUSE
mount in tests/repositories/test_casefold.py.)

The rule: a path that resolves inside the workspace is answered relative to it, `/`-separated;
anything else is a tool error, one that names the fix when the file is in the repository
around the workspace.
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import Repo, env_for
from tests.helpers import installed
from tests.httpserver import RunningServer


@dataclass
class Layout:
    workspace: Path
    repository: Path | None  # the repository around the workspace, if it is not the workspace itself


def make_layout(tmp_path: Path, kind: str) -> Layout:
    """A home holding secrets, and a workspace holding a.py and docs/readme.md, laid out as `kind`."""
    home = tmp_path / "home"
    (home / ".ssh").mkdir(parents=True)
    (home / ".ssh" / "id_rsa").write_text("secret\n", encoding="utf-8")
    (home / "secret.txt").write_text("secret\n", encoding="utf-8")
    if kind == "repository":
        workspace = home / "project"
        r = Repo(workspace)
        files = ["a.py", "docs/readme.md"]
        for name in files:
            r.write(name, "x\n")
        r.commit("2026-01-01T00:00:00Z", *files)
        return Layout(workspace, None)
    if kind == "subfolder":
        r = Repo(home / "project")
        files = ["src/a.py", "src/docs/readme.md", "docs/readme.md", "secret.txt"]
        for name in files:
            r.write(name, "x\n")
        r.commit("2026-01-01T00:00:00Z", *files)
        return Layout(home / "project" / "src", home / "project")
    if kind == "dotfiles":
        r = Repo(home)
        r.write(".bashrc", "x\n")
        r.commit("2026-01-01T00:00:00Z", ".bashrc", ".ssh/id_rsa", "secret.txt")
        workspace = home / "project"
        for name in ("a.py", "docs/readme.md"):
            (workspace / name).parent.mkdir(parents=True, exist_ok=True)
            (workspace / name).write_text("x\n", encoding="utf-8")
        return Layout(workspace, home)
    workspace = home / "project"
    (workspace / "docs").mkdir(parents=True)
    (workspace / "a.py").write_text("x\n", encoding="utf-8")
    (workspace / "docs" / "readme.md").write_text("x\n", encoding="utf-8")
    return Layout(workspace, None)


KINDS = ["repository", "subfolder", "dotfiles", "plain"]


def links(layout: Layout) -> None:
    ws = layout.workspace
    (ws / "inner-link.md").symlink_to("docs/readme.md")
    (ws / "outer-link").symlink_to(ws.parent / "secret.txt")
    (ws / "home-link").symlink_to(ws.parent)


def inside_spellings(ws: Path) -> dict[str, str]:
    """Each path given, and the path the answer must show for it."""
    return {
        "a.py": "a.py",
        "./docs//readme.md": "docs/readme.md",
        f"{ws}/docs/readme.md": "docs/readme.md",
        f"../{ws.name}/a.py": "a.py",
        "docs/../a.py": "a.py",
        "inner-link.md": "inner-link.md",
        f"home-link/{ws.name}/docs/readme.md": "docs/readme.md",
    }


def outside_spellings(ws: Path) -> list[str]:
    return [
        "../secret.txt",
        "../.ssh/id_rsa",
        str(ws.parent / "secret.txt"),
        "docs/../../secret.txt",
        "/etc/hostname",
        "outer-link",
        "home-link/secret.txt",
        "../../../../../../../../etc/hostname",
    ]


Call = Callable[[list[str]], dict[str, Any]]


def stdio_caller(workspace: Path) -> Call:
    def call(paths: list[str]) -> dict[str, Any]:
        lines = [
            {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
                "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
            {"jsonrpc": "2.0", "method": "notifications/initialized"},
            *({"jsonrpc": "2.0", "id": 10 + i, "method": "tools/call", "params": {
                "name": "rank_workspace_hits", "arguments": {"hits": [{"path": p, "matches": 1}]}}}
              for i, p in enumerate(paths)),
        ]  # fmt: skip
        done = subprocess.run(
            [installed("codescout-mcp"), "--workspace", str(workspace)],
            input="".join(json.dumps(line) + "\n" for line in lines).encode(),
            capture_output=True,
            env=env_for(),
            timeout=120,
            check=True,
        )
        replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.decode().splitlines())}
        return {path: replies[10 + i]["result"] for i, path in enumerate(paths)}

    return call


def http_caller(server: RunningServer) -> Call:
    def call(paths: list[str]) -> dict[str, Any]:
        results = {}
        for path in paths:
            body = {"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {
                "name": "rank_workspace_hits", "arguments": {"hits": [{"path": path, "matches": 1}]}}}  # fmt: skip
            status, answer = server.post(json.dumps(body).encode())
            assert status == 200, answer
            results[path] = json.loads(answer)["result"]
        return results

    return call


def check_layout(layout: Layout, call: Call) -> None:
    ws = layout.workspace
    inside = inside_spellings(ws)
    outside = outside_spellings(ws)
    results = call([*inside, *outside])
    for given, expected in inside.items():
        result = results[given]
        assert not result.get("isError"), (given, result)
        assert [entry["path"] for entry in result["structuredContent"]["results"]] == [expected], given
    hint = ""
    if layout.repository is not None:
        repository = layout.repository
        hint = f"; the workspace is a folder inside the repository {repository}: pass --workspace {repository}"
    for given in outside:
        result = results[given]
        assert result.get("isError") is True, (given, result)
        text = result["content"][0]["text"]
        in_repository = layout.repository is not None and not given.endswith("hostname")
        words = f"outside the workspace {ws}" + (hint if in_repository else "")
        if given == "outer-link":  # the file is the link; where it points is outside
            assert text == f'hits[0].path: "outer-link" is a link to {words}', text
        else:
            assert text == f"hits[0].path: {words}", (given, text)


@pytest.mark.parametrize("kind", KINDS)
def test_over_stdio_nothing_outside_the_named_folder_is_answered(tmp_path: Path, kind: str) -> None:
    layout = make_layout(tmp_path, kind)
    links(layout)
    check_layout(layout, stdio_caller(layout.workspace))


@pytest.mark.parametrize("kind", KINDS)
def test_over_http_nothing_outside_the_named_folder_is_answered(tmp_path: Path, kind: str) -> None:
    layout = make_layout(tmp_path, kind)
    links(layout)
    server = RunningServer("--workspace", str(layout.workspace), env=env_for())
    try:
        check_layout(layout, http_caller(server))
    finally:
        server.stop()


def test_a_path_from_the_repository_root_names_the_workspace_to_pass(tmp_path: Path) -> None:
    """A host started in a subfolder: the agent's paths are the project's; the error says what to pass."""
    layout = make_layout(tmp_path, "subfolder")
    assert layout.repository is not None
    results = stdio_caller(layout.workspace)(["docs/readme.md", "src/a.py", "nowhere.py"])
    assert results["docs/readme.md"]["structuredContent"]["results"][0]["path"] == "docs/readme.md"  # src/docs/...
    hint = (
        f"; the workspace is a folder inside the repository {layout.repository}: for a path from its root, "
        f"pass --workspace {layout.repository}"
    )
    assert results["src/a.py"]["content"][0]["text"] == (
        f'hits[0].path: no such file in the workspace {layout.workspace}: "src/a.py"{hint}'
    )
    # The same words whether or not such a file is there: nothing outside the workspace is looked at.
    assert results["nowhere.py"]["content"][0]["text"] == (
        f'hits[0].path: no such file in the workspace {layout.workspace}: "nowhere.py"{hint}'
    )


def test_a_missing_path_says_nothing_of_what_exists_around_the_workspace(tmp_path: Path) -> None:
    """A project under a dotfiles repository in $HOME: `../.ssh/id_rsa` and `../.ssh/absent` are refused
    in words that do not tell which one exists."""
    layout = make_layout(tmp_path, "dotfiles")
    results = stdio_caller(layout.workspace)([".ssh/id_rsa", ".ssh/absent"])
    said = [results[path]["content"][0]["text"].replace(path, "PATH") for path in (".ssh/id_rsa", ".ssh/absent")]
    assert said[0] == said[1], said


@pytest.mark.parametrize("kind", KINDS)
def test_a_folder_swapped_for_a_link_out_between_two_calls_is_refused_in_the_next(tmp_path: Path, kind: str) -> None:
    """Each call looks at the folders on a path afresh: one found plain in a call is not taken on trust
    in the next."""
    import anyio
    from mcp import Client

    from codescout_mcp.server import build_server

    layout = make_layout(tmp_path, kind)
    ws = layout.workspace
    (ws.parent / "elsewhere").mkdir()
    (ws.parent / "elsewhere" / "readme.md").write_text("secret\n", encoding="utf-8")
    hit = {"hits": [{"path": "docs/readme.md", "matches": 1}]}

    async def scenario() -> list[Any]:
        said = []
        async with Client(build_server(workspace=str(ws)), mode="legacy") as client:
            for step in ("folder", "link"):
                if step == "link":
                    (ws / "docs").rename(ws / "docs-before")
                    (ws / "docs").symlink_to(ws.parent / "elsewhere")
                result = await client.call_tool("rank_workspace_hits", hit)
                said.append(result.content[0].text if result.is_error else result.structured_content)  # type: ignore[union-attr]
        return said

    before, after = anyio.run(scenario)
    assert before["results"][0]["path"] == "docs/readme.md"
    words = f"outside the workspace {ws}"
    if layout.repository is not None:
        repository = layout.repository
        words += f"; the workspace is a folder inside the repository {repository}: pass --workspace {repository}"
    assert after == f"hits[0].path: {words}"
