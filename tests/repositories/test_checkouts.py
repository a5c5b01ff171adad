"""`codescout hits` and `rank_workspace_hits` where real checkouts live.

Submodules, nested and sibling repositories, another user's checkout, shallow clones with
several boundaries, a hostile global git config, a workspace opened from a subfolder. Each
answer is held to plain git asked about the file inside the repository that holds it.
Both fronts run as users run them: the CLI and the stdio server as subprocesses.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp.core.contract import WORKSPACE_TOOL_NAME
from tests.gitrepo import NOW, NOW_SECONDS, Repo, env_for, run, workspace_call
from tests.helpers import codescout_exe
from tests.layouts import (
    git_age_days,
    long_history,
    make_shallow_with_two_boundaries,
    make_superproject,
    owned_by_another_user,
    walk_recorder,
    with_nested,
    write_hostile_config,
)
from tests.platforms import FAKE_GIT, posix_only, root_only


def counts(*paths: str) -> bytes:
    return b"".join(f"{path}:1\n".encode() for path in paths)


def hits(cwd: Path, stdin: bytes, *args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[bytes]:
    return run([codescout_exe(), "hits", "--now", NOW, *args], cwd, stdin=stdin, env=env)


def table(done: subprocess.CompletedProcess[bytes]) -> dict[str, tuple[int, str | None]]:
    assert done.returncode == 0, done.stderr
    return {h["path"]: (h["last_modified_days"], h.get("owner")) for h in json.loads(done.stdout)["hits"]}


def days_by_path(result: dict[str, Any]) -> dict[str, tuple[int, str | None]]:
    assert not result.get("isError"), result
    return {r["path"]: (r["last_modified_days"], r["owner"]) for r in result["structuredContent"]["results"]}


# --- submodules, nested and sibling repositories ----------------------------------------------------


@pytest.fixture
def layout(tmp_path: Path) -> Any:
    return make_superproject(tmp_path)


def test_each_file_is_dated_and_owned_by_the_repository_that_holds_it(layout: Any) -> None:
    project = layout.project.root
    paths = ["app.py", "lib/core.c", "lib/util/helper.c", "vendor/nested/nested.c", "../sibling/other.py"]
    found = table(hits(project, counts(*paths)))
    assert found == {
        "app.py": (git_age_days(project, "app.py"), "@app-team"),
        "lib/core.c": (git_age_days(layout.lib.root, "core.c"), "@lib-team"),
        "lib/util/helper.c": (git_age_days(layout.lib.root, "util/helper.c"), "@lib-util"),
        "vendor/nested/nested.c": (git_age_days(layout.nested.root, "nested.c"), None),
        "../sibling/other.py": (git_age_days(layout.sibling.root, "other.py"), "@sibling-team"),
    }
    assert found["lib/core.c"][0] == 105 and found["vendor/nested/nested.c"][0] == 1093  # not the file times


def test_from_a_folder_holding_several_repositories_each_answers_for_its_own(layout: Any) -> None:
    found = table(hits(layout.top, counts("project/app.py", "project/lib/core.c", "sibling/other.py")))
    assert found == {
        "project/app.py": (git_age_days(layout.project.root, "app.py"), "@app-team"),
        "project/lib/core.c": (git_age_days(layout.lib.root, "core.c"), "@lib-team"),
        "sibling/other.py": (git_age_days(layout.sibling.root, "other.py"), "@sibling-team"),
    }


def test_a_file_in_no_repository_keeps_its_file_time(layout: Any, tmp_path: Path) -> None:
    loose = tmp_path / "loose.txt"
    loose.write_text("needle\n", encoding="utf-8")
    os.utime(loose, (NOW_SECONDS - 4 * 86_400,) * 2)
    found = table(hits(layout.project.root, f"{loose}:1\n".encode()))
    assert found == {"../../loose.txt": (4, None)}


@posix_only(FAKE_GIT)
def test_one_git_log_per_repository_involved(layout: Any, tmp_path: Path) -> None:
    log = tmp_path / "calls"
    shim = tmp_path / "shim"
    shim.mkdir()
    real = subprocess.run(["which", "git"], capture_output=True, text=True, check=True).stdout.strip()
    (shim / "git").write_text(f'#!/bin/sh\necho "$PWD $@" >> "{log}"\nexec "{real}" "$@"\n', encoding="utf-8")
    (shim / "git").chmod(0o755)
    env = env_for()
    env["PATH"] = f"{shim}{os.pathsep}{env['PATH']}"
    many = [f"n{i}.c" for i in range(30)]
    for name in many:
        (layout.lib.root / name).write_text("x\n", encoding="utf-8")
    layout.lib.commit("2026-01-05T00:00:00Z", *many)
    table(hits(layout.project.root, counts("app.py", "lib/core.c", *[f"lib/n{i}.c" for i in range(30)]), env=env))
    logs = [line.split()[0] for line in log.read_text(encoding="utf-8").splitlines() if " log " in f" {line} "]
    assert sorted(logs) == sorted([str(layout.project.root.resolve()), str(layout.lib.root.resolve())])


def test_the_workspace_tool_reads_submodules_and_nested_repositories_too(layout: Any) -> None:
    project = layout.project.root
    paths = ["app.py", "lib/core.c", "vendor/nested/nested.c"]
    result, _ = workspace_call(project, paths)
    assert days_by_path(result) == table(run([codescout_exe(), "hits"], project, stdin=counts(*paths)))
    assert days_by_path(result)["lib/core.c"][1] == "@lib-team"


# --- another user's checkout ------------------------------------------------------------------------


@posix_only("another user's checkout is made with chown, or with a stand-in git that is a #!/bin/sh script")
def test_a_checkout_git_refuses_is_named_with_its_fix(tmp_path: Path) -> None:
    r = Repo(tmp_path / "theirs")
    r.write("a.txt", "needle\n")
    r.commit("2025-01-01T00:00:00Z", "a.txt")
    env = owned_by_another_user(r.root, tmp_path / "shim")
    fix = f"git config --global --add safe.directory {r.root}"

    done = hits(r.root, counts("a.txt"), env=env)  # ripgrep run inside it: a warning, then file times
    assert done.returncode == 0
    warning = done.stderr.decode()
    assert warning.startswith(f"codescout: warning: git refuses to read {r.root}: detected dubious ownership")
    assert fix in warning and warning.count("\n") == 1

    done = hits(tmp_path, counts("theirs/a.txt"), "--repo", str(r.root), env=env)
    assert (done.returncode, done.stdout) == (1, b"")
    assert fix in done.stderr.decode() and done.stderr.decode().count("\n") == 1

    result, _ = workspace_call(r.root, ["a.txt"], env=env)
    assert result["isError"] is True
    text = result["content"][0]["text"]
    assert "detected dubious ownership" in text and fix in text


@root_only("one folder is handed to another uid, the rest of the checkout kept")
def test_a_nested_repository_git_refuses_costs_it_its_history_not_the_call(tmp_path: Path) -> None:
    """`codescout hits` warns once and gives its files their file times; the workspace tool, which
    answers for the whole workspace, says git refuses it."""
    r, inner = with_nested(tmp_path / "r", "2025-01-01T00:00:00Z", "2025-01-01T00:00:00Z")
    env = owned_by_another_user(inner.root, tmp_path / "shim")

    done = hits(r.root, counts("a.txt", "vendor/lib/b.txt"), env=env)
    ages = table(done)
    assert ages["a.txt"] == (git_age_days(r.root, "a.txt"), None)
    assert ages["vendor/lib/b.txt"][0] < ages["a.txt"][0]  # its file time: today's, not 2025's
    warning = done.stderr.decode()
    assert warning.startswith(f"codescout: warning: git refuses to read {inner.root}: detected dubious ownership")
    assert warning.endswith("; its files keep their file modification times and have no owners\n")
    assert warning.count("\n") == 1

    result, _ = workspace_call(r.root, ["a.txt", "vendor/lib/b.txt"], env=env)
    assert result["isError"] is True
    assert "detected dubious ownership" in result["content"][0]["text"]


# --- the user's own git config -------------------------------------------------------------------------


def test_a_hostile_global_config_changes_no_answer(layout: Any, tmp_path: Path) -> None:
    project = layout.project.root
    _, clone = make_shallow_with_two_boundaries(tmp_path / "shallow")
    hostile = write_hostile_config(tmp_path / "hostile.gitconfig", tmp_path / "excludes")
    env_hostile = {**env_for(), "GIT_CONFIG_GLOBAL": str(hostile)}
    cases = [
        (project, ["app.py", "lib/core.c", "CODEOWNERS", ".gitmodules"]),
        (clone, ["ancient.txt", "main.txt", "side.txt"]),
    ]
    for root, paths in cases:
        clean = hits(root, counts(*paths))
        assert clean.returncode == 0, clean.stderr
        assert hits(root, counts(*paths), env=env_hostile).stdout == clean.stdout
        # The workspace tool reads the user's own config from HOME (it clears every GIT_* variable).
        home = tmp_path / f"home-{root.name}"
        home.mkdir()
        (home / ".gitconfig").write_text(hostile.read_text(encoding="utf-8"), encoding="utf-8")
        plain_env = {k: v for k, v in env_for().items() if not k.startswith("GIT_")}
        calm, _ = workspace_call(root, paths, env={**plain_env, "HOME": str(tmp_path / "empty-home")})
        wild, _ = workspace_call(root, paths, env={**plain_env, "HOME": str(home)})
        assert wild["structuredContent"] == calm["structuredContent"]


# --- shallow clones ---------------------------------------------------------------------------------


def test_a_shallow_clone_names_the_date_files_get_and_only_when_a_hit_gets_it(tmp_path: Path) -> None:
    _, clone = make_shallow_with_two_boundaries(tmp_path)
    done = hits(clone, counts("ancient.txt", "main.txt", "side.txt"))
    assert table(done) == {"ancient.txt": (273, None), "main.txt": (273, None), "side.txt": (19, None)}
    assert done.stderr.decode() == (
        f"codescout: warning: {clone} is a shallow clone: 2 files show 2025-06-01, the date of the oldest commit it "
        "has on this branch, because they were last changed then or before; run `git fetch --unshallow` for their "
        "real ages\n"
    )
    quiet = hits(clone, counts("side.txt"))
    assert table(quiet) == {"side.txt": (19, None)} and quiet.stderr == b""

    result, _ = workspace_call(clone, ["ancient.txt", "side.txt"])
    texts = [block["text"] for block in result["content"]]
    assert json.loads(texts[0]) == result["structuredContent"]
    assert len(texts) == 2 and texts[1].startswith(f"Note: {clone} is a shallow clone: 1 file shows 2025-06-01")
    alone, _ = workspace_call(clone, ["side.txt"])
    assert len(alone["content"]) == 1


# --- ignored files and files inside .git ----------------------------------------------------------------


@posix_only(FAKE_GIT)
def test_ignored_files_and_files_in_dot_git_need_no_history_walk(tmp_path: Path) -> None:
    r = tmp_path / "r"
    long_history(r, 3000, start=1_600_000_000)
    repo = Repo(r, init=False)
    repo.write(".gitignore", "*.log\n")
    repo.write("recent.txt", "needle\n")
    repo.commit("2026-02-27T00:00:00Z", ".gitignore", "recent.txt")
    ignored = repo.write("build.log", "needle\n")
    os.utime(ignored, (NOW_SECONDS - 3 * 86_400,) * 2)
    os.utime(r / ".git" / "config", (NOW_SECONDS - 6 * 86_400,) * 2)
    marks = tmp_path / "finished-walks"
    env = walk_recorder(tmp_path / "shim", marks)
    done = hits(r, counts("recent.txt", "build.log", ".git/config"), env=env)
    # A file of git's own is no hit (it is left out with a warning), and needs no walk either.
    assert table(done) == {"recent.txt": (2, None), "build.log": (3, None)}
    assert not marks.exists()  # git log was stopped at the first commit: nothing else was wanted from it
    walked = hits(r, counts("recent.txt", "history/first.txt"), env=env)
    assert walked.returncode == 0 and marks.read_text(encoding="utf-8") == "finished\n"  # the recorder sees a walk


# --- the workspace tool's own rules ---------------------------------------------------------------------


def test_a_link_to_a_file_already_given_is_the_same_file(tmp_path: Path) -> None:
    r = Repo(tmp_path / "r")
    r.write("real.txt", "x\n")
    r.commit("2026-01-01T00:00:00Z", "real.txt")
    (r.root / "alias.txt").symlink_to("real.txt")
    os.link(r.root / "real.txt", r.root / "hard.txt")
    for second in ("alias.txt", "hard.txt"):
        result, _ = workspace_call(r.root, ["real.txt", second])
        assert result["isError"] is True
        assert result["content"][0]["text"] == f'hits[1].path: "{second}" names the same file as hits[0] ("real.txt")'


def test_a_forced_dialect_with_no_file_in_its_places_says_where_it_looked(tmp_path: Path) -> None:
    r = Repo(tmp_path / "r")
    r.write("a.txt", "x\n")
    r.write(".gitlab/CODEOWNERS", "* @gitlab-owner\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt", ".gitlab/CODEOWNERS")
    done = hits(r.root, counts("a.txt"), "--codeowners", "github")
    assert table(done) == {"a.txt": (59, None)}
    assert done.stderr.decode() == (
        "codescout: warning: --codeowners github: no CODEOWNERS in GitHub's places (.github/CODEOWNERS, CODEOWNERS, "
        "docs/CODEOWNERS); .gitlab/CODEOWNERS is there, which GitHub does not read; no owners are read\n"
    )
    assert table(hits(r.root, counts("a.txt"), "--codeowners", "gitlab")) == {"a.txt": (59, "@gitlab-owner")}


def test_a_workspace_inside_a_repository_answers_for_its_own_files_with_the_repositorys_history(
    tmp_path: Path,
) -> None:
    """Paths are the workspace's; ages and owners still come from the repository around it."""
    r = Repo(tmp_path / "r")
    r.write("CODEOWNERS", "/sub/ @sub-team\n")
    r.write("src/a.py", "x\n")
    r.commit("2025-01-01T00:00:00Z", "src/a.py", "CODEOWNERS")
    r.write("sub/b.py", "x\n")
    r.write("sub/src/a.py", "x\n")
    r.commit("2026-01-01T00:00:00Z", "sub/b.py", "sub/src/a.py")
    result, _ = workspace_call(r.root / "sub", ["b.py", "src/a.py"])
    assert [(e["path"], e["owner"]) for e in result["structuredContent"]["results"]] == [
        ("b.py", "@sub-team"),
        ("src/a.py", "@sub-team"),
    ]
    assert len(set(days_by_path(result).values())) == 1  # both from the 2026 commit, not the root's src/a.py
    outside, _ = workspace_call(r.root / "sub", ["../src/a.py"])
    assert outside["content"][0]["text"] == (
        f"hits[0].path: outside the workspace {r.root / 'sub'}; the workspace is a folder inside the repository "
        f"{r.root}: pass --workspace {r.root}"
    )


def test_a_plain_folder_that_becomes_a_repository_is_read_as_one(tmp_path: Path) -> None:
    from mcp import Client

    from codescout_mcp.server import build_server

    folder = tmp_path / "later"
    folder.mkdir()
    (folder / "a.txt").write_text("x\n", encoding="utf-8")
    (folder / "CODEOWNERS").write_text("* @team\n", encoding="utf-8")

    async def scenario() -> list[tuple[int, str | None]]:
        seen = []
        async with Client(build_server(workspace=str(folder)), mode="legacy") as client:
            for step in ("plain", "repository"):
                if step == "repository":
                    r = Repo(folder)
                    r.commit("2000-01-01T00:00:00Z", "a.txt", "CODEOWNERS")
                result = await client.call_tool(WORKSPACE_TOOL_NAME, {"hits": [{"path": "a.txt", "matches": 1}]})
                assert result.structured_content is not None
                first = result.structured_content["results"][0]
                seen.append((first["last_modified_days"], first["owner"]))
        return seen

    import anyio

    plain, repository = anyio.run(scenario)
    assert plain == (0, None)
    assert repository[0] > 9000 and repository[1] == "@team"


def test_a_repository_made_around_a_folder_between_two_calls_answers_in_the_next(tmp_path: Path) -> None:
    # The server remembers which folders held no `.git` (by their stat data), so a repeat call
    # looks at no folder twice; a `git init` changes its folder, and the next call must see it.
    import time

    import anyio
    from mcp import Client

    from codescout_mcp.server import build_server

    r = Repo(tmp_path / "project")
    r.write("vendor/lib/src/x.c", "x\n")
    r.write("CODEOWNERS", "* @outer\n")
    r.commit("2020-01-01T00:00:00Z", "vendor/lib/src/x.c", "CODEOWNERS")
    time.sleep(1.2)  # older than the slack for coarse clocks, so that what was seen is remembered
    hit = {"hits": [{"path": "vendor/lib/src/x.c", "matches": 1}]}

    async def scenario() -> list[tuple[int, str | None]]:
        seen = []
        async with Client(build_server(workspace=str(r.root)), mode="legacy") as client:
            for step in ("outer", "outer again", "nested"):
                if step == "nested":
                    nested = Repo(r.root / "vendor" / "lib")
                    nested.write("CODEOWNERS", "* @nested\n")
                    nested.commit("2000-01-01T00:00:00Z", "src/x.c", "CODEOWNERS")
                result = await client.call_tool(WORKSPACE_TOOL_NAME, hit)
                assert result.structured_content is not None, result
                first = result.structured_content["results"][0]
                seen.append((first["last_modified_days"], first["owner"]))
        return seen

    outer, again, nested = anyio.run(scenario)
    assert outer == again and outer[1] == "@outer"
    assert nested[1] == "@nested" and nested[0] - outer[0] == 7305  # 2000-01-01 to 2020-01-01


def test_the_callers_git_variables_name_the_main_repository_only(tmp_path: Path) -> None:
    """`codescout hits` follows GIT_DIR to its repository; one nested inside is still read as itself."""
    r, inner = with_nested(tmp_path / "r", "2026-01-01T00:00:00Z", "2000-01-01T00:00:00Z")
    env = env_for(GIT_DIR=str(r.root / ".git"), GIT_WORK_TREE=str(r.root))
    done = hits(r.root, counts("a.txt", "vendor/lib/b.txt"), env=env)
    assert table(done) == {"a.txt": (59, None), "vendor/lib/b.txt": (git_age_days(inner.root, "b.txt"), None)}
    assert git_age_days(inner.root, "b.txt") > 9000
