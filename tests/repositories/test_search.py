"""`search_workspace` and `codescout search` on a real checkout, held to the pipeline done by hand.

The checkout has pinned commit dates, CODEOWNERS, and files ripgrep skips by default (ignored,
hidden, binary, a link to a folder outside); one file turns binary after its first matches.
For words, regexes and options, each at several limits, the tool's results and counts (over
a real stdio session of the installed server) and `codescout search`'s are those of
`rg --json PATTERN | codescout hits | codescout rank`. Then what must never happen: a ripgrep
config or a pattern that looks like an option running anything, a search reaching outside
the workspace, a bad pattern answered with anything but a tool error naming it, a blocking
ignore file waited on, ripgrep left running past its deadline.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import sysconfig
import threading
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp.facts.lookup import Lookup
from codescout_mcp.facts.repository import RepositoryFacts
from codescout_mcp.facts.rg import count_matches
from codescout_mcp.tools import search as search_module
from codescout_mcp.tools.search import SearchTool
from codescout_mcp.tools.workspace import Workspace
from tests.gitrepo import Repo, env_for, rg_exe, run
from tests.helpers import codescout_exe, installed
from tests.platforms import linux_only, posix_only

# Pinned ages: whole days, far from a day's edge whenever the test runs.
AGES = {"src/search.py": 3, "src/rank.py": 40, "docs/guide.md": 200, "README.md": 10, "src/deep/util.py": 700}


def ago(days: int) -> str:
    return (datetime.now(timezone.utc) - timedelta(days=days, hours=12)).strftime("%Y-%m-%dT%H:%M:%SZ")


@pytest.fixture(scope="module")
def checkout(tmp_path_factory: pytest.TempPathFactory) -> Path:
    base = tmp_path_factory.mktemp("search")
    outside = base / "outside"
    outside.mkdir()
    (outside / "secret.py").write_text("search search search search search\n", encoding="utf-8")
    repo = Repo(base / "project")
    texts = {
        "src/search.py": "def search(pattern):\n    return search_all(pattern)  # search\n",
        "src/rank.py": "def rank(hits):\n    # rank the search hits\n    return sorted(hits)\n",
        "docs/guide.md": "# Guide\nSearch, then rank. search search.\n",
        "README.md": "search once\n",
        "src/deep/util.py": "SEARCH = 'Search'\n",
    }
    for name, text in texts.items():
        repo.write(name, text)
    repo.write("CODEOWNERS", "*.py @py-team\n/docs/ @writers\n")
    repo.write(".gitignore", "build/\n")
    for name in sorted(AGES, key=lambda n: -AGES[n]):
        repo.commit(ago(AGES[name]), name)
    repo.commit(ago(900), "CODEOWNERS", ".gitignore")
    repo.write("build/out.py", "search search search\n")  # ignored
    repo.write(".hidden/h.py", "search search\n")  # hidden
    (repo.root / "data.bin").write_bytes(b"search\0search\n")  # binary at once
    # Binary only after its first 64 KiB: --json counts its early matches, --count-matches not.
    (repo.root / "late.dat").write_bytes(b"search line\n" * 8000 + b"\0\nsearch\n")
    (repo.root / "linked").symlink_to(outside, target_is_directory=True)  # a link out: not followed
    repo.write("untracked.txt", "search search search search\n")
    return repo.root


def session(workspace: Path, calls: list[dict[str, Any]], env: dict[str, str] | None = None) -> list[dict[str, Any]]:
    """Each call's result, through `codescout-mcp --workspace` on a pipe."""
    lines: list[dict[str, Any]] = [
        {"jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-11-25", "capabilities": {}, "clientInfo": {"name": "t", "version": "0"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
    ]  # fmt: skip
    lines += [
        {"jsonrpc": "2.0", "id": n, "method": "tools/call", "params": {"name": "search_workspace", "arguments": a}}
        for n, a in enumerate(calls, 1)
    ]
    done = subprocess.run(
        [installed("codescout-mcp"), "--workspace", str(workspace)],
        input="".join(json.dumps(line) + "\n" for line in lines).encode(),
        capture_output=True,
        env=env or env_for(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    replies = {reply["id"]: reply for reply in map(json.loads, done.stdout.decode().splitlines())}
    return [replies[n]["result"] for n in range(1, len(calls) + 1)]


# The pipeline docs/workspace.md gives: hidden files searched, version-control folders left out.
PIPELINE_FILTERS = ["--hidden", *(f"--glob=!{name}" for name in (".git", ".svn", ".hg", ".bzr", ".jj", ".sl"))]


def by_hand(workspace: Path, arguments: dict[str, Any]) -> dict[str, Any] | None:
    """`rg --json ... | codescout hits | codescout rank` in the workspace; None when it ranks nothing."""
    options = ["--fixed-strings"] * arguments.get("fixed_strings", False) + ["--ignore-case"] * arguments.get(
        "ignore_case", False
    )
    options += [f"--glob={arguments['glob']}"] if "glob" in arguments else []
    where = [arguments["path"]] if "path" in arguments else []
    rg = run([rg_exe(), "--json", *options, *PIPELINE_FILTERS, "-e", arguments["pattern"], *where], workspace)
    assert rg.returncode in (0, 1), rg.stderr
    limit = ["--limit", str(arguments["limit"])] if "limit" in arguments else []
    hits = run([codescout_exe(), "hits", *limit], workspace, stdin=rg.stdout)
    if hits.returncode != 0:
        assert b"nothing to rank" in hits.stderr or b"no hits are left" in hits.stderr, hits.stderr
        return None
    ranked = run([codescout_exe(), "rank", "--input", "-"], workspace, stdin=hits.stdout)
    assert ranked.returncode == 0, ranked.stderr
    answer: dict[str, Any] = json.loads(ranked.stdout)
    return answer


SEARCHES: list[dict[str, Any]] = [
    {"pattern": "search"},
    {"pattern": "search", "limit": 1},
    {"pattern": "search", "limit": 2},
    {"pattern": "search", "limit": 100},
    {"pattern": "sea?rch\\b"},
    {"pattern": "(rank|search)_?", "limit": 3},
    {"pattern": "SEARCH", "ignore_case": True},
    {"pattern": "search(", "fixed_strings": True},
    {"pattern": "search", "path": "src"},
    {"pattern": "search", "path": "src/search.py"},
    {"pattern": "search", "glob": "*.md"},
    {"pattern": "search", "glob": "!*.py", "limit": 2},
    # Anchored to a haystack's start, and matching the empty string: counted line by line, as
    # `rg --json` counts them (rg --count-matches counts some of them once a file).
    {"pattern": "\\Asearch", "limit": 100},
    {"pattern": "(?-m:^)search", "limit": 100},
    {"pattern": "search|", "limit": 100},
    {"pattern": "x*", "limit": 100, "glob": "*.py"},
    {"pattern": "search", "glob": "src/**", "path": "src"},
]


def test_the_tool_and_the_command_answer_as_the_pipeline_does(checkout: Path) -> None:
    answers = session(checkout, SEARCHES)
    for arguments, result in zip(SEARCHES, answers, strict=True):
        assert not result.get("isError"), (arguments, result)
        found = result["structuredContent"]
        expected = by_hand(checkout, arguments)
        assert expected is not None, arguments
        assert {"results": found["results"], "counts": found["counts"]} == expected, arguments
        assert found["search"]["files_searched"] >= found["counts"]["hits"]
        assert json.loads(result["content"][0]["text"]) == found
        command = ["search", arguments["pattern"]]
        command += ["--fixed-strings"] * arguments.get("fixed_strings", False)
        command += ["--ignore-case"] * arguments.get("ignore_case", False)
        for name in ("path", "glob", "limit"):
            command += [f"--{name}={arguments[name]}"] if name in arguments else []
        printed = run([codescout_exe(), *command], checkout)
        assert printed.returncode == 0, printed.stderr
        assert json.loads(printed.stdout) == found, arguments


def test_hidden_files_are_searched_and_what_else_ripgrep_skips_is_not(checkout: Path) -> None:
    (result,) = session(checkout, [{"pattern": "search", "limit": 100}])
    paths = {entry["path"] for entry in result["structuredContent"]["results"]}
    assert paths == {
        "src/search.py",
        "src/rank.py",
        "docs/guide.md",
        "README.md",
        "untracked.txt",
        "late.dat",
        ".hidden/h.py",
    }
    ages = {entry["path"]: entry["last_modified_days"] for entry in result["structuredContent"]["results"]}
    assert {name: ages[name] for name in ("src/search.py", "src/rank.py", "docs/guide.md")} == {
        "src/search.py": 3,
        "src/rank.py": 40,
        "docs/guide.md": 200,
    }
    owners = {entry["path"]: entry["owner"] for entry in result["structuredContent"]["results"]}
    assert (owners["src/search.py"], owners["docs/guide.md"], owners["README.md"]) == ("@py-team", "@writers", None)


def test_a_pattern_that_matches_nothing_is_an_answer(checkout: Path) -> None:
    (result,) = session(checkout, [{"pattern": "zebra-xylophone"}])
    assert result.get("isError") is False
    assert result["structuredContent"]["results"] == []
    assert result["structuredContent"]["counts"] == {"hits": 0, "returned": 0}
    assert result["structuredContent"]["search"]["ignored_files"] == 0
    assert result["structuredContent"]["search"]["files_searched"] > 5


def test_bad_arguments_are_tool_errors_naming_their_place(checkout: Path) -> None:
    calls: list[dict[str, Any]] = [
        {"pattern": "("},
        {"pattern": "x", "glob": "["},
        {"pattern": "x", "path": "../outside"},
        {"pattern": "x", "path": "linked"},
        {"pattern": "x", "path": "nowhere"},
        {"pattern": ""},
        {"pattern": 3},
        {},
        {"pattern": "x", "limit": 0},
        {"pattern": "x", "ignore_case": "yes"},
        {"pattern": "a\u0000b"},
    ]
    said = [result["content"][0]["text"] for result in session(checkout, calls)]
    assert said == [
        "pattern: not a regular expression ripgrep reads (unclosed group)",
        "glob: not a glob ripgrep reads (unclosed character class; missing ']')",
        f"path: outside the workspace {checkout}",
        f"path: outside the workspace {checkout}",
        f'path: no such file or folder in the workspace {checkout}: "nowhere"',
        'pattern: expected a non-empty string, got ""',
        "pattern: expected a non-empty string, got 3",
        "pattern: missing, expected a non-empty string",
        "limit: expected an integer >= 1 (or leave the field out), got 0",
        'ignore_case: expected true or false (or leave the field out), got "yes"',
        'pattern: "a\\x00b" holds a character no command line can carry',
    ]


def test_a_file_written_as_a_folder_is_refused_as_ripgrep_refuses_it(checkout: Path) -> None:
    """`src/search.py/` names a folder, and the system opens none there (ENOTDIR): a tool error, not a
    search of the file; a folder written so is the folder."""
    for given in ("src/search.py/", "src/search.py/."):
        assert run([rg_exe(), "--json", "-e", "search", given], checkout).returncode == 2
    calls = [{"pattern": "search", "path": path} for path in ("src/search.py/", "src/search.py/.", "src/", "src/.")]
    refused_file, refused_dot, folder, folder_dot = session(checkout, calls)
    assert [refused_file["content"][0]["text"], refused_dot["content"][0]["text"]] == [
        'path: "src/search.py/" is not a folder, and a path that ends so names one',
        'path: "src/search.py/." is not a folder, and a path that ends so names one',
    ]
    assert refused_file["isError"] is refused_dot["isError"] is True
    expected = by_hand(checkout, {"pattern": "search", "path": "src"})
    for answer in (folder, folder_dot):
        assert not answer.get("isError"), answer
        found = answer["structuredContent"]
        assert {"results": found["results"], "counts": found["counts"]} == expected


@posix_only("a shell script stands in for the program ripgrep's --pre would run")
def test_no_ripgrep_config_and_no_pattern_runs_anything(checkout: Path, tmp_path: Path) -> None:
    marker = tmp_path / "ran"
    script = tmp_path / "pre.sh"
    script.write_text(f'#!/bin/sh\ntouch {marker}\ncat "$1"\n', encoding="utf-8")
    script.chmod(0o755)
    config = tmp_path / "ripgreprc"
    calls: list[dict[str, Any]] = [
        {"pattern": "search", "limit": 100},
        {"pattern": f"--pre={script}"},
        {"pattern": "-z"},
        {"pattern": "--files"},
        {"pattern": "x", "glob": f"--pre={script}"},
    ]
    config.write_text(f"--pre={script}\n--no-hidden\n--no-ignore\n--follow\n", encoding="utf-8")
    results = session(checkout, calls, env=env_for(RIPGREP_CONFIG_PATH=str(config)))
    assert not marker.exists()
    paths = {entry["path"] for entry in results[0]["structuredContent"]["results"]}
    assert ".hidden/h.py" in paths and "build/out.py" not in paths  # the config's options were not taken
    assert not any(path.startswith("linked/") for path in paths)
    for result in results[1:]:
        assert result.get("isError") is False and result["structuredContent"]["counts"]["hits"] == 0, result


@posix_only("a symbolic link to /dev/zero")
def test_a_folder_whose_ignore_file_is_a_device_is_left_out_and_said(tmp_path: Path) -> None:
    """ripgrep would read /dev/zero without end: the folder is not searched, the rest is, and a note says why."""
    repo = Repo(tmp_path / "p")
    repo.write("a.py", "search\n")
    repo.write("sub/b.py", "search\n")
    (repo.root / "sub" / ".gitignore").symlink_to("/dev/zero")
    repo.commit(ago(5), "a.py", "sub/b.py", "sub/.gitignore")
    started = time.monotonic()
    (result,) = session(repo.root, [{"pattern": "search"}])
    assert time.monotonic() - started < 20
    assert result["isError"] is False
    assert [entry["path"] for entry in result["structuredContent"]["results"]] == ["a.py"]
    assert [block["text"] for block in result["content"][1:]] == [
        f"Note: not searched: sub/, because {repo.root}/sub/.gitignore is a device, which ripgrep would read "
        "without end"
    ]


@posix_only("a symbolic link to /dev/zero")
def test_an_ignore_file_every_search_reads_that_is_a_device_is_refused_at_once(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "p")
    repo.write("sub/a.py", "search\n")
    (repo.root / ".ignore").symlink_to("/dev/zero")
    repo.commit(ago(5), "sub/a.py", ".ignore")
    for arguments in ({"pattern": "search"}, {"pattern": "search", "path": "sub"}):
        (result,) = session(repo.root, [arguments])
        assert result["isError"] is True
        assert result["content"][0]["text"] == (
            f"{repo.root}/.ignore is a device, which ripgrep would read without end; every search here reads it, "
            "so none can run"
        )


@linux_only("a FIFO, and /proc to see what runs")
def test_an_untracked_fifo_where_ripgrep_reads_an_ignore_file_is_never_waited_on(tmp_path: Path) -> None:
    repo = Repo(tmp_path / "p")
    repo.write("a.py", "search\n")
    repo.commit(ago(5), "a.py")
    (repo.root / "sub").mkdir()
    (repo.root / "sub" / "b.py").write_text("search\n", encoding="utf-8")
    if sys.platform == "win32":  # marked Linux-only; this is for the type checker
        raise AssertionError("no FIFOs on Windows")
    os.mkfifo(repo.root / "sub" / ".ignore")  # untracked, in a folder ripgrep walks into
    tool = SearchTool(Workspace(str(repo.root)), seconds=30.0)
    started = time.monotonic()
    result = tool.call({"pattern": "search"})
    assert time.monotonic() - started < 10
    assert result is not None and result["isError"] is False
    assert [entry["path"] for entry in result["structuredContent"]["results"]] == ["a.py"]
    assert result["content"][1]["text"] == (
        f"Note: not searched: sub/, because {repo.root}/sub/.ignore is a FIFO, which ripgrep would wait on"
    )
    assert ripgreps_in(repo.root) == []


@linux_only("/proc, to see what runs")
def test_a_search_past_its_deadline_is_an_error_and_leaves_no_ripgrep(tmp_path: Path) -> None:
    """A pattern that matches the empty string, over 2,000 files: ripgrep prints far more than a second's worth."""
    repo = Repo(tmp_path / "p")
    repo.write("a.py", "search\n")
    repo.commit(ago(5), "a.py")
    for number in range(2_000):
        (repo.root / f"text{number}.txt").write_text("some words on a line of text\n" * 200, encoding="utf-8")
    tool = SearchTool(Workspace(str(repo.root)), seconds=1.0)
    started = time.monotonic()
    result = tool.call({"pattern": "x*"})
    assert result is not None and result["isError"] is True
    assert result["content"][0]["text"] == "the search did not finish within 1 s; narrow it with path or glob"
    assert time.monotonic() - started < 10
    time.sleep(0.5)
    assert ripgreps_in(repo.root) == []


@linux_only("a memory bound on a child (RLIMIT_DATA)")
def test_a_search_past_ripgreps_memory_bound_is_an_error_that_says_so(tmp_path: Path) -> None:
    """ripgrep holds each file's output whole: `x*` over one 12 MB file prints 500 MB for it."""
    repo = Repo(tmp_path / "p")
    repo.write("a.py", "search\n")
    repo.commit(ago(5), "a.py")
    (repo.root / "big.txt").write_text("some words on a line of text\n" * 400_000, encoding="utf-8")
    result = SearchTool(Workspace(str(repo.root))).call({"pattern": "x*"})
    assert result is not None and result["isError"] is True
    assert result["content"][0]["text"].startswith(
        "ripgrep needed more than the 256 MiB of memory a search may use (memory allocation of "
    )
    assert ripgreps_in(repo.root) == []


def ripgreps_in(folder: Path) -> list[str]:
    """The ripgrep processes working in `folder` (Linux: /proc)."""
    found = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                cwd = os.readlink(f"/proc/{entry}/cwd")
                argv = Path(f"/proc/{entry}/cmdline").read_bytes().split(b"\0")
            except OSError:
                continue
            if cwd == str(folder) and os.path.basename(argv[0]) in (b"rg", b"rg.exe"):  # (a confined rg's cwd too)
                found.append(entry)
    return found


def test_without_ripgrep_the_tool_says_what_to_install(
    checkout: Path, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.setattr(sysconfig, "get_path", lambda name: str(tmp_path))
    monkeypatch.setenv("PATH", str(tmp_path))
    result = SearchTool(Workspace(str(checkout))).call({"pattern": "search"})
    assert result is not None and result["isError"] is True
    assert result["content"][0]["text"] == (
        "ripgrep is not installed: install it (`pip install ripgrep`, or your system's `ripgrep` package) "
        "and start the server again"
    )


def test_the_command_line_refuses_what_the_tool_refuses(checkout: Path) -> None:
    done = run([codescout_exe(), "search", "("], checkout)
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr == b"codescout: pattern: not a regular expression ripgrep reads (unclosed group)\n"
    usage = run([codescout_exe(), "search"], checkout)
    assert usage.returncode == 2 and b"usage error" in usage.stderr
    dashes = run([codescout_exe(), "search", "--", "--pre=x"], checkout)
    assert dashes.returncode == 0 and json.loads(dashes.stdout)["counts"]["hits"] == 0


def test_an_empty_matching_pattern_that_matches_nothing_is_an_empty_answer(checkout: Path) -> None:
    """`^\\s*$` in files with no blank line, `^$` where the glob selects nothing: no results, no error."""
    results = session(checkout, [{"pattern": "^\\s*$", "glob": "src/*.py"}, {"pattern": "^$", "glob": "*.nothing"}])
    for result in results:
        assert result["isError"] is False, result
        assert result["structuredContent"]["counts"] == {"hits": 0, "returned": 0}


def test_files_searched_is_what_ripgrep_lists_with_the_same_filters(checkout: Path) -> None:
    listed = run([rg_exe(), "--files", *PIPELINE_FILTERS], checkout)
    count = len(listed.stdout.splitlines())
    src = len(run([rg_exe(), "--files", *PIPELINE_FILTERS, "src"], checkout).stdout.splitlines())
    results = session(
        checkout,
        [{"pattern": "search"}, {"pattern": "zebra-xylophone"}, {"pattern": "x*"}, {"pattern": "def", "path": "src"}],
    )
    assert [result["structuredContent"]["search"]["files_searched"] for result in results] == [count, count, count, src]


def test_one_ripgrep_search_a_call_even_for_a_file_that_turns_binary(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """late.dat is binary after its first matches: counted from the one run, never searched twice."""
    from codescout_mcp.system.processes import StreamedChild

    started: list[list[str]] = []
    real = StreamedChild

    def counting(argv: list[str], **options: Any) -> Any:
        started.append(argv)
        return real(argv, **options)

    monkeypatch.setattr("codescout_mcp.facts.rg.StreamedChild", counting)
    result = SearchTool(Workspace(str(checkout))).call({"pattern": "search", "limit": 100})
    assert result is not None and result["isError"] is False
    assert {entry["path"]: entry["matches"] for entry in result["structuredContent"]["results"]}["late.dat"] == 5461
    assert [("--json" in argv, "--files" in argv) for argv in started] == [(False, True), (True, False)]


def test_a_search_needs_no_temporary_file(checkout: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """With no temporary folder to write in (`docker run --read-only`), a search still answers."""
    import tempfile

    def no_room(*args: object, **kwargs: object) -> Any:
        raise FileNotFoundError("no usable temporary directory")

    for name in ("TemporaryDirectory", "NamedTemporaryFile", "mkdtemp", "mkstemp"):
        monkeypatch.setattr(tempfile, name, no_room)
    for pattern in ("search", "x*", "zebra-xylophone"):
        result = SearchTool(Workspace(str(checkout))).call({"pattern": pattern, "fixed_strings": pattern != "x*"})
        assert result is not None and result["isError"] is False, result


def test_arguments_ripgrep_cannot_take_are_tool_errors_naming_them(checkout: Path) -> None:
    too_long = "a" * 65_537
    huge = "|".join(f"(a|b|c)*w{n}x[a-z]{{20,90}}y\\w{{10,50}}" for n in range(1_000))
    calls: list[dict[str, Any]] = [
        {"pattern": too_long},
        {"pattern": "x", "glob": too_long},
        {"pattern": "one\ntwo", "fixed_strings": True},
        {"pattern": "one\ntwo"},
        {"pattern": "one\\ntwo"},
        {"pattern": huge},
    ]
    said = [result["content"][0]["text"] for result in session(checkout, calls)]
    assert said == [
        "pattern: 65,537 bytes long, more than the 65,536 a search takes",
        "glob: 65,537 bytes long, more than the 65,536 a search takes",
        "pattern: holds a line break, and a search matches text within one line at a time",
        "pattern: holds a line break, and a search matches a pattern within one line at a time",
        "pattern: matches a line break, and a search matches within one line at a time",
        "pattern: too large a regular expression: compiled, it passes ripgrep's 32MB limit; use fewer "
        "alternatives or repetitions",
    ]


def test_hidden_files_are_found_as_the_hosts_grep_finds_them(tmp_path: Path) -> None:
    """.github/, dotfiles and hidden folders are searched, version-control folders and ignored
    files are not: the files `rg --hidden` with those folders left out lists, exactly."""
    repo = Repo(tmp_path / "p")
    files = {
        ".github/workflows/ci.yml": "run: needle\n",
        ".env.example": "NEEDLE=needle\n",
        ".config/tool.toml": "needle = 1\n",
        "src/a.py": "needle\n",
        ".gitignore": "build/\n*.log\n",
    }
    for name, text in files.items():
        repo.write(name, text)
    repo.commit(ago(3), *files)
    repo.write("build/out.js", "needle needle\n")
    repo.write("debug.log", "needle\n")
    repo.write(".hg/store/data", "needle\n")
    repo.write(".svn/entries", "needle\n")
    (result,) = session(repo.root, [{"pattern": "needle", "limit": 100}])
    found = sorted(entry["path"] for entry in result["structuredContent"]["results"])
    listed = run([rg_exe(), "--files-with-matches", *PIPELINE_FILTERS, "needle"], repo.root)
    assert found == sorted(listed.stdout.decode().splitlines())
    assert found == [".config/tool.toml", ".env.example", ".github/workflows/ci.yml", "src/a.py"]
    (empty,) = session(repo.root, [{"pattern": "needle needle"}])
    assert empty["structuredContent"]["counts"] == {"hits": 0, "returned": 0}
    assert empty["structuredContent"]["search"]["ignored_files"] == 1
    assert [block["text"] for block in empty["content"][1:]] == [
        "Note: No file the ignore rules let through matches, but 1 file they leave out does: build/out.js (1). "
        "To search one, pass it (or its folder) as path."
    ]
    (followed,) = session(repo.root, [{"pattern": "needle needle", "path": "build/out.js"}])
    assert [entry["path"] for entry in followed["structuredContent"]["results"]] == ["build/out.js"]


def test_a_search_matching_more_files_than_are_held_is_an_error(
    checkout: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import codescout_mcp.facts.rg as runner

    monkeypatch.setattr(runner, "MAX_FILES", 3)
    result = SearchTool(Workspace(str(checkout))).call({"pattern": "search"})
    assert result is not None and result["isError"] is True
    assert result["content"][0]["text"] == (
        "the search matched more than 3 files (or 8 MiB of their names), more than codescout ranks at once; "
        "narrow it with path or glob"
    )


def test_a_pattern_anchored_to_the_start_of_a_haystack_counts_each_line(tmp_path: Path) -> None:
    """ripgrep's --count-matches reads a file as one haystack in parts: `\\Aab` on four lines that
    start with ab counted 2 there; rg --json (the pipeline) counts it on each of the 4 lines."""
    repo = Repo(tmp_path / "p")
    repo.write("a.txt", "ab\nab\nab\nab\n")
    repo.write("b.txt", "xab\nab\n")
    repo.commit(ago(5), "a.txt", "b.txt")
    for pattern in ("\\Aab", "(?-m:^)ab"):
        (result,) = session(repo.root, [{"pattern": pattern}])
        found = {entry["path"]: entry["matches"] for entry in result["structuredContent"]["results"]}
        expected = by_hand(repo.root, {"pattern": pattern})
        assert expected is not None
        assert found == {entry["path"]: entry["matches"] for entry in expected["results"]} == {"a.txt": 4, "b.txt": 1}


def test_a_file_edited_while_ripgrep_runs_is_dated_today(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The status a search reads ahead, beside its ripgrep, is not taken for a file edited after
    it was read: one edited then, keeping its old time as some editors do, is dated today."""
    repo = Repo(tmp_path / "r")
    repo.write("a.py", "search\n")
    repo.commit(ago(30), "a.py")
    time.sleep(1.1)  # older than a status read's slack: only what is read after can tell
    read = threading.Event()
    plain_ready = RepositoryFacts.ready

    def ready(self: RepositoryFacts, lookup: Lookup) -> None:
        plain_ready(self, lookup)
        read.set()

    def edited_meanwhile(*args: Any, **kwargs: Any) -> Any:
        counted = count_matches(*args, **kwargs)
        assert read.wait(30), "the status was not read ahead"
        kept = os.stat(repo.root / "a.py")
        repo.write("a.py", "search, edited\n")
        os.utime(repo.root / "a.py", ns=(kept.st_atime_ns, kept.st_mtime_ns))
        return counted

    monkeypatch.setattr(RepositoryFacts, "ready", ready)
    monkeypatch.setattr(search_module, "count_matches", edited_meanwhile)
    answer, _ = SearchTool(Workspace(str(repo.root))).search({"pattern": "search"}, Lookup(time.time(), seconds=60))
    assert [(hit["path"], hit["last_modified_days"]) for hit in answer["results"]] == [("a.py", 0)]


def test_whether_ripgrep_starts_confined_is_asked_once_however_many_ask(monkeypatch: pytest.MonkeyPatch) -> None:
    """The check a search starts ahead of its ripgrep and the one the search then waits on are
    one check: callers at once wait for the first one's answer."""
    asked: list[str] = []

    def slow_confine(**kwargs: Any) -> None:
        asked.append("confine")
        time.sleep(0.2)  # (no sandbox given: the answer is False)

    monkeypatch.setattr(search_module, "confine", slow_confine)
    monkeypatch.setattr(search_module, "_CONFINABLE", {})
    answers: list[bool] = []
    callers = [threading.Thread(target=lambda: answers.append(search_module.confinable("/no/rg"))) for _ in range(4)]
    for caller in callers:
        caller.start()
    for caller in callers:
        caller.join(10)
    assert asked == ["confine"] and answers == [False] * 4
