"""`rank_workspace_hits`: ages and owners read from the checkout, for agents without a shell."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

import mcp_types as types
import pytest
from mcp import Client, StdioServerParameters

from codescout_mcp.core.contract import (
    OUTPUT_SCHEMA,
    SEARCH_TOOL_NAME,
    TOOL_NAME,
    WORKSPACE_INPUT_SCHEMA,
    WORKSPACE_TOOL_NAME,
)
from codescout_mcp.server import build_server
from codescout_mcp.tools.workspace import Workspace, WorkspaceTool
from tests.gitrepo import DAY, Repo, env_for, run, workspace_call
from tests.helpers import codescout_exe, installed
from tests.httpserver import RunningServer
from tests.platforms import FIFOS, posix_only

pytestmark = pytest.mark.anyio


def ago(days: float) -> str:
    """An ISO date `days` days (and six hours, away from day boundaries) before now."""
    return datetime.fromtimestamp(time.time() - days * DAY - 6 * 3600, timezone.utc).isoformat()


@pytest.fixture
def project(tmp_path: Path) -> Repo:
    r = Repo(tmp_path / "project")
    r.write("src/search/rank.py", "x\n")
    r.write("src/legacy/old.py", "x\n")
    r.write("docs/guide.md", "x\n")
    r.write("a b/caf\u00e9.md", "x\n")
    r.write(".github/CODEOWNERS", "* @org/everyone\n/src/search/ @alice @bob\n")
    r.commit(ago(300), "src/legacy/old.py", ".github/CODEOWNERS")
    r.commit(ago(40), "src/search/rank.py", "docs/guide.md", "a b/caf\u00e9.md")
    r.write("src/search/rank.py", "y\n")
    r.commit(ago(2), "src/search/rank.py")
    return r


def text_of(result: types.CallToolResult) -> str:
    (block,) = result.content
    assert isinstance(block, types.TextContent)
    return block.text


async def call(client: Client, hits: list[dict[str, Any]], **extra: Any) -> types.CallToolResult:
    return await client.call_tool(WORKSPACE_TOOL_NAME, {"hits": hits, **extra})


@pytest.fixture
async def client(project: Repo) -> AsyncIterator[Client]:
    async with Client(build_server(workspace=str(project.root)), mode="legacy") as connected:
        yield connected


# --- the tool list ------------------------------------------------------------------------------


async def test_without_a_workspace_the_list_is_the_one_tool_byte_for_byte(project: Repo) -> None:
    async with Client(build_server(), mode="legacy") as plain:
        alone = (await plain.list_tools()).tools
    async with Client(build_server(workspace=str(project.root)), mode="legacy") as with_workspace:
        both = (await with_workspace.list_tools()).tools
    assert [t.name for t in alone] == [TOOL_NAME]
    assert [t.name for t in both] == [TOOL_NAME, WORKSPACE_TOOL_NAME, SEARCH_TOOL_NAME]
    assert alone[0].model_dump_json() == both[0].model_dump_json()
    tool = both[1]
    assert tool.input_schema == WORKSPACE_INPUT_SCHEMA
    assert tool.output_schema == OUTPUT_SCHEMA
    assert tool.annotations is not None
    assert (tool.annotations.read_only_hint, tool.annotations.idempotent_hint, tool.annotations.open_world_hint) == (
        True,
        True,
        False,
    )
    assert tool.description is not None
    for phrase in ("relative to the workspace", "age (git)", "owner (CODEOWNERS)", "tool error naming where"):
        assert phrase in tool.description


# --- the answers ------------------------------------------------------------------------------


def hits_then_rank(root: Path, counts: dict[str, int], limit: int = 10) -> Any:
    """What `codescout hits | codescout rank` gives for the same paths."""
    lines = "".join(f"{path}:{count}\n" for path, count in counts.items()).encode()
    made = run([codescout_exe(), "hits", "--limit", str(limit)], root, stdin=lines)
    assert made.returncode == 0, made.stderr
    ranked = run([codescout_exe(), "rank", "--input", "-"], root, stdin=made.stdout)
    assert ranked.returncode == 0, ranked.stderr
    return json.loads(ranked.stdout)


async def test_results_equal_codescout_hits_piped_into_rank(client: Client, project: Repo) -> None:
    counts = {"src/search/rank.py": 3, "src/legacy/old.py": 9, "docs/guide.md": 1, "a b/caf\u00e9.md": 2}
    result = await call(client, [{"path": p, "matches": n} for p, n in counts.items()], limit=3)
    assert not result.is_error, text_of(result)
    expected = hits_then_rank(project.root, counts, limit=3)
    assert result.structured_content == expected
    assert [(r["path"], r["last_modified_days"], r["owner"]) for r in expected["results"]] == [
        ("src/legacy/old.py", 300, "@org/everyone"),
        ("src/search/rank.py", 2, "@alice @bob"),
        ("a b/caf\u00e9.md", 40, "@org/everyone"),
    ]
    assert json.loads(text_of(result)) == expected


async def test_paths_come_back_normalised_relative_to_the_workspace(client: Client, project: Repo) -> None:
    hits = [
        {"path": "./src/search/../search/rank.py", "matches": 1, "last_modified_days": 999, "owner": "me"},
        {"path": str(project.root / "docs" / "guide.md"), "matches": 1},
    ]
    result = await call(client, hits)
    assert result.structured_content is not None
    assert [(r["path"], r["last_modified_days"]) for r in result.structured_content["results"]] == [
        ("src/search/rank.py", 2),
        ("docs/guide.md", 40),
    ]


async def test_a_workspace_inside_a_repository_reads_the_whole_repository(project: Repo) -> None:
    async with Client(build_server(workspace=str(project.root / "src")), mode="legacy") as connected:
        result = await call(
            connected, [{"path": "search/rank.py", "matches": 2}, {"path": "legacy/old.py", "matches": 1}]
        )
    assert result.structured_content is not None
    assert [(r["path"], r["last_modified_days"], r["owner"]) for r in result.structured_content["results"]] == [
        ("search/rank.py", 2, "@alice @bob"),
        ("legacy/old.py", 300, "@org/everyone"),
    ]


async def test_a_plain_folder_uses_file_times(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    target = folder / "a.txt"
    target.write_text("x", encoding="utf-8")
    os.utime(target, (time.time() - 5 * DAY - 60,) * 2)
    (folder / "CODEOWNERS").write_text("* @nobody\n", encoding="utf-8")
    async with Client(build_server(workspace=str(folder)), mode="legacy") as connected:
        result = await call(connected, [{"path": "a.txt", "matches": 1}])
    assert result.structured_content is not None
    assert result.structured_content["results"][0] == {
        "path": "a.txt",
        "matches": 1,
        "last_modified_days": 5,
        "owner": None,
        "score": 95,
        "rank": 1,
    }


async def test_a_commit_or_an_edit_between_two_calls_shows_in_the_second(client: Client, project: Repo) -> None:
    hits = [{"path": "docs/guide.md", "matches": 1}, {"path": "src/legacy/old.py", "matches": 1}]

    async def days() -> list[int]:
        result = await call(client, hits)
        assert result.structured_content is not None
        return [r["last_modified_days"] for r in sorted(result.structured_content["results"], key=lambda r: r["path"])]

    assert await days() == [40, 300]
    assert await days() == [40, 300]  # kept, unchanged
    project.write("docs/guide.md", "edited, not committed\n")
    assert await days() == [0, 300]
    project.commit(ago(10), "docs/guide.md")
    assert await days() == [10, 300]
    project.write("src/legacy/old.py", "edited\n")
    project.git("add", "src/legacy/old.py")
    assert await days() == [10, 0]
    project.git("checkout", "-q", "HEAD", "--", "src/legacy/old.py")
    assert await days() == [10, 300]


async def test_a_workspace_deleted_or_moved_while_the_server_runs_is_said_so(project: Repo, tmp_path: Path) -> None:
    """Not "git is not installed": the folder is gone; and a folder put back at the path is served."""
    hits = [{"path": "docs/guide.md", "matches": 1}]
    root = project.root
    async with Client(build_server(workspace=str(root)), mode="legacy") as connected:
        assert not (await call(connected, hits)).is_error
        moved = tmp_path / "moved"
        root.rename(moved)
        gone = f"the workspace {root} cannot be read: {root} no longer exists (deleted or moved)"
        for result in (await call(connected, hits), await connected.call_tool(SEARCH_TOOL_NAME, {"pattern": "x"})):
            assert result.is_error and text_of(result) == gone
        moved.rename(root)  # back where it was: served again, ages from git
        result = await call(connected, hits)
        assert not result.is_error and result.structured_content is not None
        assert result.structured_content["results"][0]["last_modified_days"] == 40
        search = await connected.call_tool(SEARCH_TOOL_NAME, {"pattern": "x"})
        assert not search.is_error and search.structured_content is not None
        root.rename(moved)  # another folder made at the path, a plain one: opened afresh, file times
        (root / "docs").mkdir(parents=True)
        (root / "docs" / "guide.md").write_text("x x\n", encoding="utf-8")
        result = await call(connected, hits)
        assert not result.is_error and result.structured_content is not None
        assert result.structured_content["results"][0]["last_modified_days"] == 0
        search = await connected.call_tool(SEARCH_TOOL_NAME, {"pattern": "x"})
        assert search.structured_content is not None
        assert [(r["path"], r["matches"]) for r in search.structured_content["results"]] == [("docs/guide.md", 2)]


# --- errors at the caller's index ----------------------------------------------------------------


@pytest.mark.parametrize(
    ("hits", "message"),
    [
        ([{"path": "../outside.txt", "matches": 1}], "hits[0].path: outside the workspace {root}"),
        (
            [{"path": "docs/guide.md", "matches": 1}, {"path": "/etc/hostname", "matches": 1}],
            "hits[1].path: outside the workspace {root}",
        ),
        ([{"path": "nope.py", "matches": 1}], 'hits[0].path: no such file in the workspace {root}: "nope.py"'),
        ([{"path": "docs", "matches": 1}], 'hits[0].path: "docs" is a directory, not a regular file'),
        (
            [{"path": "docs/guide.md", "matches": 1}, {"path": "src/../docs/./guide.md", "matches": 2}],
            'hits[1].path: "src/../docs/./guide.md" names the same file as hits[0] ("docs/guide.md")',
        ),
        ([{"path": "a.py"}], "hits[0].matches: missing, expected an integer >= 1"),
        ([{"path": "a.py", "matches": 0}], "hits[0].matches: expected an integer >= 1, got 0"),
        ([], "hits: expected a non-empty array, got an empty array"),
    ],
)
async def test_bad_hits_are_tool_errors_naming_the_place(
    client: Client, project: Repo, hits: list[dict[str, Any]], message: str
) -> None:
    result = await call(client, hits)
    assert result.is_error
    assert text_of(result) == message.replace("{root}", str(project.root))


async def test_every_bad_path_is_named_in_one_error_in_input_order(client: Client, project: Repo) -> None:
    """One call tells every path to fix, not the first alone; nothing is ranked."""
    given = ["docs/guide.md", "nope.py", "src/legacy/old.py", "../outside.txt", "docs", "./docs/guide.md"]
    result = await call(client, [{"path": path, "matches": 1} for path in given])
    assert result.is_error
    assert text_of(result) == "\n".join(
        [
            f'hits[1].path: no such file in the workspace {project.root}: "nope.py"',
            f"hits[3].path: outside the workspace {project.root}",
            'hits[4].path: "docs" is a directory, not a regular file',
            'hits[5].path: "./docs/guide.md" names the same file as hits[0] ("docs/guide.md")',
        ]
    )


async def test_each_repeat_of_a_file_names_the_first_hit_that_named_it(client: Client, project: Repo) -> None:
    """The first hit that named the file as a file, fine itself; a hit naming it as a folder names no file."""
    given = [
        "src/search/rank.py/",
        "src/search/rank.py",
        "src/search/./rank.py",
        "nope.py",
        "src/legacy/../search/rank.py",
    ]
    result = await call(client, [{"path": path, "matches": 1} for path in given])
    assert result.is_error
    assert text_of(result) == "\n".join(
        [
            'hits[0].path: "src/search/rank.py/" is not a folder, and a path that ends so names one',
            'hits[2].path: "src/search/./rank.py" names the same file as hits[1] ("src/search/rank.py")',
            f'hits[3].path: no such file in the workspace {project.root}: "nope.py"',
            'hits[4].path: "src/legacy/../search/rank.py" names the same file as hits[1] ("src/search/rank.py")',
        ]
    )


@posix_only("a symbolic link out of the workspace, and a name past NAME_MAX (ENAMETOOLONG)")
def test_over_stdio_one_error_names_each_bad_path_whatever_is_wrong(project: Repo, tmp_path: Path) -> None:
    secret = tmp_path / "secret.txt"
    secret.write_text("x", encoding="utf-8")
    (project.root / "link.txt").symlink_to(secret)
    given = [
        "docs/guide.md",
        "a\0b",
        "x\ud800y",
        "docs/guide.md/",
        "n" * 300,
        "link.txt",
        "src/legacy/old.py",
        "docs//guide.md",
    ]
    result, stderr = workspace_call(project.root, given)
    lines = [
        'hits[1].path: "a\\x00b" holds a NUL character, which no file name can',
        'hits[2].path: "x\\ud800y" holds an unpaired surrogate, which no file name here can',
        'hits[3].path: "docs/guide.md/" is not a folder, and a path that ends so names one',
        f'hits[4].path: "{"n" * 200}" is longer than a path can be',
        f'hits[5].path: "link.txt" is a link to outside the workspace {project.root}',
        'hits[7].path: "docs//guide.md" names the same file as hits[0] ("docs/guide.md")',
    ]
    assert result == {"content": [{"type": "text", "text": "\n".join(lines)}], "isError": True}
    assert "Traceback" not in stderr


async def test_past_twenty_bad_paths_the_rest_are_counted(client: Client, project: Repo) -> None:
    hits = [{"path": "docs/guide.md", "matches": 1}, *({"path": f"gone/{n}.py", "matches": 1} for n in range(25))]
    result = await call(client, hits)
    assert result.is_error
    listed = [f'hits[{n + 1}].path: no such file in the workspace {project.root}: "gone/{n}.py"' for n in range(20)]
    assert text_of(result) == "\n".join(
        [*listed, "... and 5 more bad paths not listed, the first of them hits[21].path"]
    )
    one_more = await call(client, hits[:22])
    assert text_of(one_more).splitlines()[20:] == ["... and 1 more bad path not listed: hits[21].path"]


async def test_a_schema_error_is_said_alone_before_any_path_is_looked_at(client: Client) -> None:
    hits = [{"path": "nope.py", "matches": 1}, {"path": "docs/guide.md", "matches": 0}, {"path": "../x", "matches": 1}]
    result = await call(client, hits)
    assert result.is_error
    assert text_of(result) == "hits[1].matches: expected an integer >= 1, got 0"


def test_a_hundred_thousand_bad_paths_cost_one_pass_and_a_bounded_error(project: Repo) -> None:
    """Each path is looked at once (no quadratic pass over the refused), and the error stays 21 lines."""
    kinds = ["gone/{n}.py", "../out-{n}.txt", "docs/guide.md/{n}", "src/./{n}/"]
    hits = [{"path": "docs/guide.md", "matches": 1}]
    hits += [{"path": kinds[n % len(kinds)].format(n=n), "matches": 1} for n in range(100_000)]
    started = time.monotonic()
    result = WorkspaceTool(Workspace(str(project.root))).call({"hits": hits})
    elapsed = time.monotonic() - started
    assert result is not None and result["isError"] is True
    lines = result["content"][0]["text"].splitlines()
    assert len(lines) == 21
    assert lines[:4] == [
        f'hits[1].path: no such file in the workspace {project.root}: "gone/0.py"',
        f"hits[2].path: outside the workspace {project.root}",
        f'hits[3].path: no such file in the workspace {project.root}: "docs/guide.md/2"',
        f'hits[4].path: no such file in the workspace {project.root}: "src/./3/"',
    ]
    assert lines[20] == "... and 99980 more bad paths not listed, the first of them hits[21].path"
    assert elapsed < 120, elapsed  # far above one pass, even on a busy machine; a pass per refused path takes hours


@posix_only(FIFOS)
async def test_a_fifo_and_links_out_of_the_workspace_are_refused(client: Client, project: Repo, tmp_path: Path) -> None:
    if sys.platform == "win32":  # marked POSIX-only; this is for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(project.root / "pipe")
    secret = tmp_path / "secret.txt"
    secret.write_text("x", encoding="utf-8")
    (project.root / "link.txt").symlink_to(secret)
    (project.root / "linked").symlink_to(tmp_path)
    for path, message in [
        ("pipe", 'hits[0].path: "pipe" is a FIFO, not a regular file'),
        ("link.txt", f'hits[0].path: "link.txt" is a link to outside the workspace {project.root}'),
        ("linked/secret.txt", f"hits[0].path: outside the workspace {project.root}"),
    ]:
        result = await call(client, [{"path": path, "matches": 1}])
        assert result.is_error
        assert text_of(result) == message


# --- starting it -----------------------------------------------------------------------------------


def tool_names_over_stdio(*args: str, env: dict[str, str] | None = None) -> list[str]:
    async def names() -> list[str]:
        params = StdioServerParameters(command=installed("codescout-mcp"), args=list(args), env=env)
        async with Client(params, mode="legacy") as connected:
            return [t.name for t in (await connected.list_tools()).tools]

    import anyio

    return anyio.run(names)


def test_the_variable_does_what_the_flag_does_and_the_flag_wins(project: Repo, tmp_path: Path) -> None:
    assert tool_names_over_stdio() == [TOOL_NAME]
    assert tool_names_over_stdio(env={"CODESCOUT_WORKSPACE": str(project.root)}) == [
        TOOL_NAME,
        WORKSPACE_TOOL_NAME,
        SEARCH_TOOL_NAME,
    ]
    assert tool_names_over_stdio("--workspace", str(project.root)) == [TOOL_NAME, WORKSPACE_TOOL_NAME, SEARCH_TOOL_NAME]
    done = subprocess.run(
        [installed("codescout-mcp"), "--workspace", str(project.root)],
        input=b"",
        env={**os.environ, "CODESCOUT_WORKSPACE": str(tmp_path / "missing")},
        capture_output=True,
        timeout=30,
        check=False,
    )
    assert done.returncode == 0, done.stderr  # the flag, a directory, wins over the broken variable


@pytest.mark.parametrize("how", ["flag", "variable"])
def test_a_workspace_that_is_not_a_directory_refuses_to_start(tmp_path: Path, how: str) -> None:
    missing = tmp_path / "missing"
    env: dict[str, str]
    if how == "flag":
        argv, env = [installed("codescout-mcp"), "--workspace", str(missing)], dict(os.environ)
    else:
        argv, env = [codescout_exe(), "mcp"], {**os.environ, "CODESCOUT_WORKSPACE": str(missing)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=30, env=env, check=False)
    assert done.returncode == 2
    assert done.stderr.count("\n") == 1
    origin = "--workspace" if how == "flag" else "CODESCOUT_WORKSPACE"
    assert f"usage error: {origin} {missing}: not a directory" in done.stderr


def test_a_git_dir_in_the_servers_environment_is_not_followed(project: Repo, tmp_path: Path) -> None:
    other = Repo(tmp_path / "other")
    other.write("docs/guide.md", "x\n")
    other.commit(ago(1000), "docs/guide.md")

    async def ask() -> Any:
        env = {**env_for(), "GIT_DIR": str(other.root / ".git"), "GIT_WORK_TREE": str(other.root)}
        params = StdioServerParameters(
            command=installed("codescout-mcp"), args=["--workspace", str(project.root)], env=env
        )
        async with Client(params, mode="legacy") as connected:
            result = await call(connected, [{"path": "docs/guide.md", "matches": 1}])
        return result.structured_content

    import anyio

    answer = anyio.run(ask)
    assert answer["results"][0]["last_modified_days"] == 40


def test_the_workspace_tool_over_http(project: Repo) -> None:
    running = RunningServer("--workspace", str(project.root))
    try:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {
                "name": WORKSPACE_TOOL_NAME,
                "arguments": {"hits": [{"path": "src/search/rank.py", "matches": 4}]},
            },
        }
        status, answer = running.post(json.dumps(body).encode())
        assert status == 200, answer
        result = json.loads(answer)["result"]["structuredContent"]["results"][0]
        assert (result["path"], result["last_modified_days"], result["score"]) == ("src/search/rank.py", 2, 398)
    finally:
        status, log = running.stop()
    assert status == 0, log


def test_the_instructions_name_the_workspace_tool_when_it_is_offered(project: Repo) -> None:
    """Codex shows the instructions as the description of the server's whole tool group."""

    async def instructions(*args: str) -> str:
        params = StdioServerParameters(command=installed("codescout-mcp"), args=list(args))
        async with Client(params, mode="legacy") as connected:
            assert connected.instructions is not None
            return connected.instructions

    import anyio

    plain = anyio.run(instructions)
    with_workspace = anyio.run(instructions, "--workspace", str(project.root))
    assert "rank_search_results" in plain and "rank_workspace_hits" not in plain
    assert "rank_workspace_hits" in with_workspace and "rank_search_results" in with_workspace
