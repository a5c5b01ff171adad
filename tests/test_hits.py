"""`codescout hits` against real git repositories and real ripgrep output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp.hits import CodeOwners, HitsError, parse_now, read_match_counts, whole_days
from tests.helpers import codescout_exe

NOW = "2026-03-01T00:00:00Z"
NOW_SECONDS = parse_now(NOW)
DAY = 86_400
BIN = str(Path(sys.executable).parent)


def rg_exe() -> str:
    found = shutil.which("rg", path=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    if found is None:
        raise RuntimeError("ripgrep is not installed; pip install -e .[test] brings it")
    return found


def env_for() -> dict[str, str]:
    # Keep git away from any repository around the temp dirs and from the user's settings.
    return {
        **os.environ,
        "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}",
        "GIT_CEILING_DIRECTORIES": tempfile.gettempdir(),
        "GIT_CONFIG_GLOBAL": os.devnull,
        "GIT_CONFIG_NOSYSTEM": "1",
    }


class Repo:
    def __init__(self, root: Path) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.git("init", "-q", "-b", "main")

    def git(self, *args: str, date: str | None = None) -> None:
        env = env_for()
        if date is not None:
            env.update(GIT_AUTHOR_DATE=date, GIT_COMMITTER_DATE=date)
        subprocess.run(
            ["git", "-c", "user.name=Test", "-c", "user.email=test@example.com", *args],
            cwd=self.root,
            env=env,
            check=True,
            capture_output=True,
        )

    def write(self, name: str | bytes, text: str) -> Path:
        path = Path(os.fsdecode(self.root / os.fsdecode(name)))
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
        return path

    def commit(self, date: str, *names: str) -> None:
        self.git("add", "--", *names)
        self.git("commit", "-q", "-m", f"change {' '.join(names)}", date=date)


def run(argv: list[str], cwd: Path, stdin: bytes | None = None) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, cwd=cwd, input=stdin, capture_output=True, env=env_for(), check=False)


def hits_from_rg(cwd: Path, *rg_args: str, hits_args: tuple[str, ...] = ("--now", NOW)) -> dict[str, Any]:
    rg = run([rg_exe(), *rg_args], cwd)
    assert rg.returncode == 0, rg.stderr
    done = run([codescout_exe(), "hits", *hits_args], cwd, stdin=rg.stdout)
    assert done.returncode == 0, done.stderr
    result: dict[str, Any] = json.loads(done.stdout)
    return result


@pytest.fixture
def repo(tmp_path: Path) -> Repo:
    """A repository with controlled history, an uncommitted change, an untracked file, owners."""
    r = Repo(tmp_path / "project")
    r.write("src/search/rank.py", "needle\nneedle needle\n")
    r.write("src/legacy/old.py", "needle\n")
    r.write("docs/guide.md", "needle\n")
    r.write("my docs/caf\u00e9 \u00fcber.md", "needle needle\n")
    r.write(".github/CODEOWNERS", "* @org/everyone\n/src/search/ @alice @bob\n/src/legacy/\n")
    r.commit("2025-06-01T12:00:00Z", "src/legacy/old.py", ".github/CODEOWNERS")
    r.commit("2026-01-01T00:00:00Z", "src/search/rank.py", "docs/guide.md", "my docs/caf\u00e9 \u00fcber.md")
    r.write("src/search/rank.py", "needle\nneedle needle\nneedle\n")
    r.commit("2026-02-27T18:00:00Z", "src/search/rank.py")
    r.write("docs/guide.md", "needle\nmore needle\n")  # changed, not committed
    fresh = r.write("src/new.py", "needle\n")  # untracked
    os.utime(fresh, (NOW_SECONDS - 5 * DAY - 60, NOW_SECONDS - 5 * DAY - 60))
    return r


def test_pipeline_counts_days_and_owners(repo: Repo) -> None:
    arguments = hits_from_rg(repo.root, "--json", "needle", hits_args=("--now", NOW, "--limit", "3"))
    assert arguments == {
        "hits": [
            {"path": "docs/guide.md", "matches": 2, "last_modified_days": 0, "owner": "@org/everyone"},
            {
                "path": "my docs/caf\u00e9 \u00fcber.md",
                "matches": 2,
                "last_modified_days": 59,
                "owner": "@org/everyone",
            },
            {"path": "src/legacy/old.py", "matches": 1, "last_modified_days": 272},
            {"path": "src/new.py", "matches": 1, "last_modified_days": 5, "owner": "@org/everyone"},
            {"path": "src/search/rank.py", "matches": 4, "last_modified_days": 1, "owner": "@alice @bob"},
        ],
        "limit": 3,
    }


def test_full_pipe_into_rank(repo: Repo) -> None:
    shell = f"{rg_exe()} --json needle | {codescout_exe()} hits --now {NOW} | {codescout_exe()} rank --input -"
    done = subprocess.run(
        ["bash", "-c", f"set -o pipefail; {shell}"],
        cwd=repo.root,
        capture_output=True,
        env=env_for(),
        check=False,
    )
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert [(r["path"], r["score"], r["owner"]) for r in result["results"]] == [
        ("src/search/rank.py", 399, "@alice @bob"),
        ("docs/guide.md", 200, "@org/everyone"),
        ("my docs/caf\u00e9 \u00fcber.md", 141, "@org/everyone"),
        ("src/new.py", 95, "@org/everyone"),
        ("src/legacy/old.py", -172, None),
    ]


def test_count_matches_output_gives_the_same_arguments(repo: Repo) -> None:
    from_json = hits_from_rg(repo.root, "--json", "needle")
    from_counts = hits_from_rg(repo.root, "--count-matches", "needle")
    assert from_counts == from_json
    assert hits_from_rg(repo.root, "--count-matches", "--null", "needle") == from_json


def test_paths_are_relative_to_the_root_from_a_subfolder_and_with_dot_prefixes(repo: Repo) -> None:
    whole = hits_from_rg(repo.root, "--json", "needle")
    assert hits_from_rg(repo.root, "--json", "needle", "./") == whole
    sub = hits_from_rg(repo.root / "src", "--json", "needle")
    assert [h["path"] for h in sub["hits"]] == ["src/legacy/old.py", "src/new.py", "src/search/rank.py"]
    from_elsewhere = hits_from_rg(
        repo.root.parent, "--json", "needle", "project", hits_args=("--now", NOW, "--repo", "project")
    )
    assert from_elsewhere == whole


def test_from_file_and_now_with_an_offset(repo: Repo, tmp_path: Path) -> None:
    rg = run([rg_exe(), "--json", "needle"], repo.root)
    saved = tmp_path / "rg.jsonl"
    saved.write_bytes(rg.stdout)
    done = run([codescout_exe(), "hits", "--from", str(saved), "--now", "2026-03-01T02:00:00+02:00"], repo.root)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == hits_from_rg(repo.root, "--json", "needle")


def test_one_git_process_per_question_not_per_file(tmp_path: Path) -> None:
    r = Repo(tmp_path / "many")
    names = [f"pkg/m{i:03d}.py" for i in range(120)]
    for name in names:
        r.write(name, "needle\n")
    r.commit("2026-01-01T00:00:00Z", *names)
    log = tmp_path / "git-calls.log"
    shim = tmp_path / "shim"
    shim.mkdir()
    real_git = shutil.which("git")
    assert real_git is not None
    (shim / "git").write_text(f'#!/bin/sh\necho "$@" >> "{log}"\nexec "{real_git}" "$@"\n', encoding="utf-8")
    (shim / "git").chmod(0o755)
    rg = run([rg_exe(), "--json", "needle"], r.root)
    env = {**env_for(), "PATH": f"{shim}{os.pathsep}{env_for()['PATH']}"}
    done = subprocess.run(
        [codescout_exe(), "hits", "--now", NOW], cwd=r.root, input=rg.stdout, capture_output=True, env=env, check=False
    )
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout)["hits"]) == 120
    calls = log.read_text(encoding="utf-8").splitlines()
    assert [c.split(" -C ")[1].split()[1] for c in calls] == ["rev-parse", "status", "log"]


def test_outside_git_uses_file_times_and_no_owners(tmp_path: Path) -> None:
    plain = tmp_path / "plain"
    plain.mkdir()
    (plain / "CODEOWNERS").write_text("* @nobody\n", encoding="utf-8")
    target = plain / "a.txt"
    target.write_text("needle\n", encoding="utf-8")
    os.utime(target, (NOW_SECONDS - 3 * DAY, NOW_SECONDS - 3 * DAY))
    assert hits_from_rg(plain, "--json", "needle") == {
        "hits": [{"path": "a.txt", "matches": 1, "last_modified_days": 3}]
    }


def test_non_utf8_file_name_travels_through_to_rank(tmp_path: Path) -> None:
    r = Repo(tmp_path / "bytes")
    name = os.fsdecode(b"caf\xe9.txt")
    (r.root / name).write_text("needle\n", encoding="utf-8")
    os.utime(r.root / name, (NOW_SECONDS, NOW_SECONDS))
    rg = run([rg_exe(), "--json", "needle"], r.root)
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=rg.stdout)
    assert done.returncode == 0, done.stderr
    assert b'"path": "caf\\udce9.txt"' in done.stdout
    ranked = run([codescout_exe(), "rank", "--input", "-"], r.root, stdin=done.stdout)
    assert ranked.returncode == 0, ranked.stderr


# --- errors ---------------------------------------------------------------------------------


def hits_error(cwd: Path, stdin: bytes, *args: str) -> tuple[int, str, bytes]:
    done = run([codescout_exe(), "hits", *args], cwd, stdin=stdin)
    return done.returncode, done.stderr.decode(), done.stdout


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        (b"", "codescout: stdin: no input; pipe in the output of `rg --json PATTERN`\n"),
        (b'{"type": "begin"}\n{oops\n', "codescout: stdin: line 2: not a ripgrep --json event (invalid JSON)\n"),
        (b'{"type": "begin"}\n[1]\n', 'codescout: stdin: line 2: not a ripgrep --json event (no "type")\n'),
        (b'{"type": "match", "data": {}}\n', "codescout: stdin: line 1: a match event without a path and submatches\n"),
        (
            b"17\n",
            "codescout: stdin: line 1: expected PATH:COUNT from `rg --count-matches` "
            "(with one file, add --with-filename)\n",
        ),
        (b"a.py:many\n", "codescout: stdin: line 1: b'many' is not a match count\n"),
        (
            b'{"type": "summary", "data": {}}\n',
            "codescout: stdin: the ripgrep output holds no matches, so there is nothing to rank\n",
        ),
    ],
)
def test_invalid_ripgrep_streams_are_one_line_errors(tmp_path: Path, stdin: bytes, message: str) -> None:
    status, stderr, stdout = hits_error(tmp_path, stdin)
    assert (status, stderr, stdout) == (1, message, b"")


def test_repo_that_is_not_a_git_repository(tmp_path: Path) -> None:
    status, stderr, _ = hits_error(tmp_path, b"a.py:1\n", "--repo", str(tmp_path))
    assert (status, stderr) == (1, f"codescout: --repo {tmp_path}: not a git repository\n")
    status, stderr, _ = hits_error(tmp_path, b"a.py:1\n", "--repo", str(tmp_path / "missing"))
    assert (status, stderr) == (1, f"codescout: --repo {tmp_path / 'missing'}: no such directory\n")


def test_unreadable_from_file(tmp_path: Path) -> None:
    status, stderr, _ = hits_error(tmp_path, b"", "--from", str(tmp_path / "nope.jsonl"))
    assert status == 1
    assert stderr == f"codescout: cannot read {tmp_path / 'nope.jsonl'}: No such file or directory\n"


@pytest.mark.parametrize(
    ("args", "text"),
    [
        (("--limit", "0"), "is not a positive integer"),
        (("--now", "last tuesday"), "is not an ISO 8601 timestamp"),
        (("--bogus",), "unrecognized arguments"),
    ],
)
def test_hits_usage_errors_exit_2(tmp_path: Path, args: tuple[str, ...], text: str) -> None:
    status, stderr, _ = hits_error(tmp_path, b"a.py:1\n", *args)
    assert status == 2
    assert text in stderr
    assert stderr.count("\n") == 1


# --- CODEOWNERS, as GitHub reads it ----------------------------------------------------------


def owners_for(text: str, paths: list[str]) -> tuple[dict[str, str | None], list[str]]:
    warnings: list[str] = []
    table = CodeOwners.parse(text, "CODEOWNERS", warnings.append)
    return {p: table.owner_of(p) for p in paths}, warnings


def test_codeowners_last_matching_rule_wins() -> None:
    owners, _ = owners_for("*.js @js\n/src/ @src\n", ["src/a.js", "lib/a.js", "src/a.py"])
    assert owners == {"src/a.js": "@src", "lib/a.js": "@js", "src/a.py": "@src"}
    owners, _ = owners_for("/src/ @src\n*.js @js\n", ["src/a.js"])
    assert owners == {"src/a.js": "@js"}


def test_codeowners_directory_patterns() -> None:
    text = "/build/logs/ @logs\napps/ @apps\n**/cache @cache\n"
    paths = ["build/logs/a.txt", "x/build/logs/a.txt", "apps/x.py", "deep/apps/y.py", "a/b/cache/z", "cache/q"]
    owners, _ = owners_for(text, paths)
    assert owners == {
        "build/logs/a.txt": "@logs",
        "x/build/logs/a.txt": None,
        "apps/x.py": "@apps",
        "deep/apps/y.py": "@apps",
        "a/b/cache/z": "@cache",
        "cache/q": "@cache",
    }


def test_codeowners_single_star_stays_in_its_folder_double_star_does_not() -> None:
    owners, _ = owners_for("docs/* @docs\nsrc/** @src\n", ["docs/a.md", "docs/sub/b.md", "src/a", "src/x/y/z"])
    assert owners == {"docs/a.md": "@docs", "docs/sub/b.md": None, "src/a": "@src", "src/x/y/z": "@src"}
    owners, _ = owners_for("* @all\n", ["a", "b/c/d"])
    assert owners == {"a": "@all", "b/c/d": "@all"}


def test_codeowners_rule_without_owners_unowns() -> None:
    owners, _ = owners_for("* @all\n/apps/ @apps\n/apps/github\n", ["apps/x", "apps/github/y", "z"])
    assert owners == {"apps/x": "@apps", "apps/github/y": None, "z": "@all"}


def test_codeowners_several_owners_comments_escapes_and_case() -> None:
    text = "# comment\n\n*.md   @a   @org/team-x  user@example.com  # trailing comment\nmy\\ notes.txt @n\n"
    owners, warnings = owners_for(text, ["README.md", "my notes.txt", "README.MD"])
    assert owners == {"README.md": "@a @org/team-x user@example.com", "my notes.txt": "@n", "README.MD": None}
    assert warnings == []


def test_codeowners_unsupported_lines_warn_once_each_and_are_skipped() -> None:
    text = "* @all\n!secret.txt\n[ab].py @ranges\n\\#hash @h\nsrc/ not-an-owner\n*.py @py\n"
    owners, warnings = owners_for(text, ["secret.txt", "a.py", "src/x"])
    assert owners == {"secret.txt": "@all", "a.py": "@py", "src/x": "@all"}
    assert warnings == [
        "CODEOWNERS:2: negation (!) is not supported in CODEOWNERS; line skipped",
        "CODEOWNERS:3: character ranges ([...]) are not supported in CODEOWNERS; line skipped",
        "CODEOWNERS:4: escaping # is not supported in CODEOWNERS; line skipped",
        "CODEOWNERS:5: 'not-an-owner' is not a @user, @org/team or email owner; line skipped",
    ]


def test_codeowners_file_locations_first_found_wins(tmp_path: Path) -> None:
    r = Repo(tmp_path / "owners")
    r.write("a.txt", "needle\n")
    r.write("docs/CODEOWNERS", "* @from-docs\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt", "docs/CODEOWNERS")
    assert hits_from_rg(r.root, "--json", "needle", "a.txt")["hits"][0]["owner"] == "@from-docs"
    r.write("CODEOWNERS", "* @from-root\n")
    assert hits_from_rg(r.root, "--json", "needle", "a.txt")["hits"][0]["owner"] == "@from-root"
    r.write(".github/CODEOWNERS", "* @from-github\n")
    assert hits_from_rg(r.root, "--json", "needle", "a.txt")["hits"][0]["owner"] == "@from-github"


def test_malformed_codeowners_lines_warn_on_stderr_and_output_stays_valid(tmp_path: Path) -> None:
    r = Repo(tmp_path / "warn")
    r.write("a.txt", "needle\n")
    r.write("CODEOWNERS", "!a.txt @x\n* @ok\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt", "CODEOWNERS")
    rg = run([rg_exe(), "--json", "needle", "a.txt"], r.root)
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=rg.stdout)
    assert done.returncode == 0
    assert done.stderr.decode() == (
        "codescout: warning: CODEOWNERS:1: negation (!) is not supported in CODEOWNERS; line skipped\n"
    )
    assert json.loads(done.stdout)["hits"][0]["owner"] == "@ok"


# --- small pieces ---------------------------------------------------------------------------


def test_whole_days_floor_and_future() -> None:
    assert whole_days(NOW_SECONDS, NOW_SECONDS - DAY + 1) == 0
    assert whole_days(NOW_SECONDS, NOW_SECONDS - DAY) == 1
    assert whole_days(NOW_SECONDS, NOW_SECONDS + 5 * DAY) == 0


def test_now_parsing() -> None:
    assert parse_now("2026-03-01T00:00:00") == NOW_SECONDS
    assert parse_now("2026-03-01T01:00:00+01:00") == NOW_SECONDS
    assert parse_now("2026-03-01") == NOW_SECONDS


def test_multiple_submatches_on_one_line_all_count() -> None:
    stream = b"\n".join(
        json.dumps(e).encode()
        for e in [
            {"type": "begin", "data": {"path": {"text": "a.py"}}},
            {"type": "match", "data": {"path": {"text": "a.py"}, "submatches": [{}, {}, {}]}},
            {"type": "match", "data": {"path": {"text": "a.py"}, "submatches": [{}]}},
            {"type": "context", "data": {"path": {"text": "a.py"}}},
            {"type": "end", "data": {"path": {"text": "a.py"}}},
        ]
    )
    assert read_match_counts(stream, "t") == {"a.py": 4}
    with pytest.raises(HitsError):
        read_match_counts(b"  \n\n", "t")
