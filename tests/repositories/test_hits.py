"""`codescout hits` against real git repositories and real ripgrep output."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import time
from datetime import datetime, timezone
from pathlib import Path

import pytest

from codescout_mcp.facts.hits import parse_now
from codescout_mcp.facts.lookup import whole_days
from codescout_mcp.facts.rgcounts import RipgrepError, read_match_counts
from tests.gitrepo import DAY, NOW, NOW_SECONDS, Repo, env_for, hits_from_rg, hits_of, rg_exe, run
from tests.helpers import codescout_exe
from tests.platforms import BYTE_NAMES, CONTROL_NAMES, DELETED_CWD, FAKE_GIT, SHELL, linux_only, posix_only


def subcommand(logged: str) -> str:
    """The git subcommand in a logged git command line (after git's own options)."""
    words = logged.split()
    index = 0
    while words[index].startswith("-"):
        index += 2 if words[index] == "-c" else 1
    return words[index]


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
    # rg --json needle | codescout hits --now NOW | codescout rank --input -, each joined by a
    # real pipe (no shell, so the same pipeline runs on Windows), and each must succeed.
    argvs = [
        [rg_exe(), "--json", "needle"],
        [codescout_exe(), "hits", "--now", NOW],
        [codescout_exe(), "rank", "--input", "-"],
    ]
    stages: list[subprocess.Popen[bytes]] = []
    for argv in argvs:
        upstream = stages[-1].stdout if stages else None
        stages.append(
            subprocess.Popen(
                argv,
                cwd=repo.root,
                stdin=upstream or subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                env=env_for(),
            )
        )
        if upstream is not None:
            upstream.close()  # the next stage holds it now
    stdout, stderr = stages[-1].communicate(timeout=120)
    assert [stage.wait(timeout=120) for stage in stages] == [0, 0, 0], stderr
    result = json.loads(stdout)
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


@posix_only(FAKE_GIT)
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
    # What its config includes (read as plain files), where the repository is, what its settings
    # name (and which filters to switch off), what it tracks, what changed, HEAD's commit, and when.
    assert [subcommand(c) for c in calls] == ["config", "rev-parse", "config", "ls-files", "status", "rev-parse", "log"]


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


@linux_only(BYTE_NAMES)
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
        (b"a.py: 3\n", "codescout: stdin: line 1: b' 3' is not a match count\n"),
        (b"a.py:3 \n", "codescout: stdin: line 1: b'3 ' is not a match count\n"),
        (
            "a.py:3\r\n".encode("utf-16-le"),
            "codescout: stdin: the input is UTF-16LE (as PowerShell's `>` saves it), not ripgrep's own output; pipe "
            "ripgrep into codescout hits, or save its output as UTF-8 (`| Out-File -Encoding utf8`)\n",
        ),
        (
            "\ufeffa.py:3\n".encode("utf-16-be"),
            "codescout: stdin: the input is UTF-16BE (as PowerShell's `>` saves it), not ripgrep's own output; pipe "
            "ripgrep into codescout hits, or save its output as UTF-8 (`| Out-File -Encoding utf8`)\n",
        ),
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


# --- CODEOWNERS files in a repository (the rules themselves: tests/unit/test_codeowners.py) ----------


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
    with pytest.raises(RipgrepError):
        read_match_counts(b"  \n\n", "t")


# --- ages on real histories -------------------------------------------------------------------


def rg_counts(*paths: str) -> bytes:
    return b"".join(f"{path}:1\n".encode() for path in paths)


def test_a_change_made_in_a_merge_counts_at_the_merge(tmp_path: Path) -> None:
    r = Repo(tmp_path / "merges")
    r.write("a.txt", "one\n")
    r.write("b.txt", "one\n")
    r.write("c.txt", "one\n")
    r.commit("2020-01-01T00:00:00Z", "a.txt", "b.txt", "c.txt")
    r.git("checkout", "-q", "-b", "side")
    r.write("b.txt", "side\n")  # brought in by merging the branch
    r.write("a.txt", "side\n")
    r.commit("2021-01-01T00:00:00Z", "a.txt", "b.txt")
    r.git("checkout", "-q", "main")
    r.write("a.txt", "main\n")
    r.commit("2022-01-01T00:00:00Z", "a.txt")
    r.git("merge", "-q", "--no-ff", "side", "-m", "merge", date="2026-02-01T00:00:00Z", check=False)
    r.write("a.txt", "resolved\n")  # the conflict, resolved in the merge commit
    r.git("add", "a.txt")
    r.git("commit", "-q", "--no-edit", date="2026-02-01T00:00:00Z")
    days = {h["path"]: h["last_modified_days"] for h in hits_of_repo(r, "a.txt", "b.txt", "c.txt")}
    assert days == {"a.txt": 28, "b.txt": 28, "c.txt": 2251}


def hits_of_repo(r: Repo, *paths: str) -> list[dict[str, object]]:
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=rg_counts(*paths))
    assert done.returncode == 0, done.stderr
    hits: list[dict[str, object]] = json.loads(done.stdout)["hits"]
    return hits


def test_a_file_s_age_never_depends_on_which_other_files_are_asked_about(tmp_path: Path) -> None:
    r = Repo(tmp_path / "clock")
    r.write("old.txt", "1\n")
    r.write("other.txt", "1\n")
    r.commit("2021-01-01T00:00:00Z", "old.txt", "other.txt")
    r.write("old.txt", "2\n")
    r.commit("2026-02-01T00:00:00Z", "old.txt")
    r.write("other.txt", "2\n")
    r.commit("2020-12-01T00:00:00Z", "other.txt")  # a commit dated before its parent
    alone = hits_of_repo(r, "old.txt")
    together = hits_of_repo(r, "old.txt", "other.txt")
    assert alone[0]["last_modified_days"] == 28
    assert together == [
        {"path": "old.txt", "matches": 1, "last_modified_days": 28},
        {"path": "other.txt", "matches": 1, "last_modified_days": 1916},
    ]


def test_ages_come_from_the_committer_date_not_the_author_date(tmp_path: Path) -> None:
    r = Repo(tmp_path / "dates")
    r.write("a.txt", "1\n")
    r.commit("2026-02-20T00:00:00Z", "a.txt", author_date="2019-05-05T00:00:00Z")
    assert hits_of_repo(r, "a.txt")[0]["last_modified_days"] == 9


def test_days_are_counted_from_now_when_no_now_is_given(tmp_path: Path) -> None:
    r = Repo(tmp_path / "today")
    r.write("a.txt", "1\n")
    r.write("b.txt", "1\n")
    ten_days_ago = datetime.fromtimestamp(time.time() - 10 * DAY - 3600, timezone.utc).isoformat()
    r.commit(ten_days_ago, "a.txt", "b.txt")
    os.utime(r.write("c.txt", "new\n"), (time.time() - 3 * DAY - 60,) * 2)  # untracked
    done = run([codescout_exe(), "hits"], r.root, stdin=rg_counts("a.txt", "c.txt"))
    assert done.returncode == 0, done.stderr
    assert [h["last_modified_days"] for h in json.loads(done.stdout)["hits"]] == [10, 3]


@pytest.mark.parametrize("zone", ["UTC", "America/Los_Angeles", "Asia/Kolkata", "Pacific/Kiritimati"])
def test_now_without_a_zone_means_utc_on_any_machine(tmp_path: Path, zone: str) -> None:
    r = Repo(tmp_path / "zones")
    r.write("a.txt", "1\n")
    r.commit("2026-02-28T23:30:00Z", "a.txt")
    for now, days in (("2026-03-01T23:29:59", 0), ("2026-03-01T23:30:00", 1)):
        done = run([codescout_exe(), "hits", "--now", now], r.root, stdin=rg_counts("a.txt"), env=env_for(TZ=zone))
        assert json.loads(done.stdout)["hits"][0]["last_modified_days"] == days, (zone, now)


def test_uncommitted_changes_are_today_and_untracked_files_use_their_time(tmp_path: Path) -> None:
    r = Repo(tmp_path / "dirty")
    for name in ("a", "b", "c", "d"):
        r.write(name, "1\n")
    r.commit("2025-01-01T00:00:00Z", "a", "b", "c", "d")
    r.write("a", "changed\n")
    r.write("b", "staged\n")
    r.git("add", "b")
    os.utime(r.write("e", "untracked\n"), (NOW_SECONDS - 4 * DAY,) * 2)
    os.utime(r.write("f", "untracked\n"), (NOW_SECONDS - 7 * DAY,) * 2)
    hits = hits_of_repo(r, "a", "b", "c", "d", "e", "f")
    assert [(h["path"], h["last_modified_days"]) for h in hits] == [
        ("a", 0), ("b", 0), ("c", 424), ("d", 424), ("e", 4), ("f", 7)
    ]  # fmt: skip


def test_a_long_history_is_read_past_64_kib_of_log(tmp_path: Path) -> None:
    r = Repo(tmp_path / "long")
    names = [f"dir_{i:04d}/a_rather_long_file_name_to_fill_the_log_{i:04d}.txt" for i in range(2000)]
    for name in names:
        r.write(name, "x\n")
    r.commit("2025-01-01T00:00:00Z", *names[:1000])
    r.commit("2026-01-01T00:00:00Z", *names[1000:])
    hits = hits_of_repo(r, names[0], names[-1])
    assert [h["last_modified_days"] for h in hits] == [424, 59]


def test_a_file_that_vanished_is_left_out_with_a_warning(tmp_path: Path) -> None:
    r = Repo(tmp_path / "gone")
    r.write("a.txt", "1\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=rg_counts("a.txt", "gone.txt"))
    assert done.returncode == 0
    assert (
        done.stderr
        == b"codescout: warning: gone.txt: left out, cannot read its modification time (No such file or directory)\n"
    )
    assert [h["path"] for h in json.loads(done.stdout)["hits"]] == ["a.txt"]


def test_a_shallow_clone_says_so_and_dates_older_files_at_its_boundary(tmp_path: Path) -> None:
    r = Repo(tmp_path / "deep")
    r.write("old.txt", "1\n")
    r.write("new.txt", "1\n")
    r.commit("2020-01-01T00:00:00Z", "old.txt", "new.txt")
    r.write("mid.txt", "1\n")
    r.commit("2025-12-01T00:00:00Z", "mid.txt")
    r.write("new.txt", "2\n")
    r.commit("2026-02-01T00:00:00Z", "new.txt")
    clone = tmp_path / "shallow"
    subprocess.run(["git", "clone", "-q", "--depth", "2", f"file://{r.root}", str(clone)], env=env_for(), check=True)
    done = run([codescout_exe(), "hits", "--now", NOW], clone, stdin=rg_counts("old.txt", "mid.txt", "new.txt"))
    assert done.returncode == 0, done.stderr
    assert [(h["path"], h["last_modified_days"]) for h in json.loads(done.stdout)["hits"]] == [
        ("mid.txt", 90), ("new.txt", 28), ("old.txt", 90)
    ]  # fmt: skip
    assert done.stderr.decode() == (
        f"codescout: warning: {clone} is a shallow clone: 2 files show 2025-12-01, the date of the oldest commit it "
        "has on this branch, because they were last changed then or before; run `git fetch --unshallow` for their "
        "real ages\n"
    )
    unaffected = run([codescout_exe(), "hits", "--now", NOW], clone, stdin=rg_counts("new.txt"))
    assert unaffected.returncode == 0 and unaffected.stderr == b""  # no hit dated by the boundary: nothing to say
    full = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=rg_counts("old.txt"))
    assert full.stderr == b""


def test_absolute_paths_through_a_symlinked_folder_land_in_the_repository(tmp_path: Path) -> None:
    r = Repo(tmp_path / "real" / "project")
    r.write("src/a.txt", "needle\n")
    r.write("CODEOWNERS", "* @owner\n")
    r.commit("2026-01-01T00:00:00Z", "src/a.txt", "CODEOWNERS")
    link = tmp_path / "link"
    link.symlink_to(tmp_path / "real")
    through_link = link / "project" / "src" / "a.txt"
    done = run([codescout_exe(), "hits", "--now", NOW], link / "project", stdin=f"{through_link}:2\n".encode())
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hits"] == [
        {"path": "src/a.txt", "matches": 2, "last_modified_days": 59, "owner": "@owner"}
    ]


def test_a_bare_repository_has_no_work_tree(tmp_path: Path) -> None:
    r = Repo(tmp_path / "origin")
    r.write("a.txt", "1\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    bare = tmp_path / "bare.git"
    subprocess.run(["git", "clone", "-q", "--bare", str(r.root), str(bare)], env=env_for(), check=True)
    done = run([codescout_exe(), "hits", "--repo", str(bare)], tmp_path, stdin=b"a.txt:1\n")
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr.decode() == (
        f"codescout: --repo {bare}: a bare git repository (or a .git folder) has no work tree; use a checkout\n"
    )
    inside = r.root / ".git"  # a checkout's git folder: not bare, and no work tree either
    for argv, cwd, named in (
        (["--repo", str(inside)], tmp_path, f"--repo {inside}"),
        ([], inside, str(inside)),
    ):
        done = run([codescout_exe(), "hits", *argv], cwd, stdin=b"a.txt:1\n")
        assert (done.returncode, done.stdout) == (1, b"")
        assert done.stderr.decode() == (
            f"codescout: {named}: a bare git repository (or a .git folder) has no work tree; use a checkout\n"
        )


def test_without_git_installed_file_times_are_used_and_repo_is_refused(tmp_path: Path) -> None:
    folder = tmp_path / "plain"
    folder.mkdir()
    (folder / "a.txt").write_text("x", encoding="utf-8")
    os.utime(folder / "a.txt", (NOW_SECONDS - 2 * DAY,) * 2)
    no_git = env_for(PATH=str(Path(codescout_exe()).parent))  # the venv only: no git on it
    done = run([codescout_exe(), "hits", "--now", NOW], folder, stdin=b"a.txt:1\n", env=no_git)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout) == {"hits": [{"path": "a.txt", "matches": 1, "last_modified_days": 2}]}
    assert done.stderr == (
        b"codescout: warning: git is not installed; ages come from file modification times and there are no owners\n"
    )
    done = run([codescout_exe(), "hits", "--repo", str(folder)], folder, stdin=b"a.txt:1\n", env=no_git)
    assert (done.returncode, done.stderr) == (1, b"codescout: git is not installed, and --repo needs it\n")


@posix_only(SHELL)
@posix_only(DELETED_CWD)
def test_a_deleted_current_directory_is_one_error_line(tmp_path: Path) -> None:
    gone = tmp_path / "gone"
    gone.mkdir()
    script = f'cd "{gone}" && rmdir "{gone}" && printf "a.txt:1\\n" | "{codescout_exe()}" hits'
    done = subprocess.run(["bash", "-c", script], capture_output=True, env=env_for(), check=False)
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr == b"codescout: cannot read the current directory: No such file or directory\n"


# --- ripgrep output, read by whole lines --------------------------------------------------------


def test_count_output_whose_first_path_starts_with_a_brace_is_count_output(tmp_path: Path) -> None:
    r = Repo(tmp_path / "cookie")
    name = "{{cookiecutter.slug}}/app.py"
    r.write(name, "needle\nneedle\n")
    r.commit("2026-01-01T00:00:00Z", name)
    assert hits_from_rg(r.root, "--count-matches", "needle") == {
        "hits": [{"path": name, "matches": 2, "last_modified_days": 59}]
    }


@posix_only(CONTROL_NAMES)
def test_count_matches_with_null_reads_names_holding_newlines(tmp_path: Path) -> None:
    r = Repo(tmp_path / "newlines")
    r.write("two\nlines.txt", "needle needle\n")
    r.write("plain.txt", "needle\n")
    r.commit("2026-01-01T00:00:00Z", "two\nlines.txt", "plain.txt")
    result = hits_from_rg(r.root, "--count-matches", "--null", "needle")
    assert result == {
        "hits": [
            {"path": "plain.txt", "matches": 1, "last_modified_days": 59},
            {"path": "two\nlines.txt", "matches": 2, "last_modified_days": 59},
        ]
    }


@pytest.mark.parametrize(
    ("stdin", "message"),
    [
        (
            b'{"type": "begin"}\n{"type": "match", "data": {"path": {"text": "a\\u0000b"}, "submatches": []}}\n',
            "codescout: stdin: line 2: the path holds a NUL character, which no file name can\n",
        ),
        (
            b'{"type": "match", "data": {"path": {"text": "a\\ud800"}, "submatches": []}}\n',
            "codescout: stdin: line 1: the path holds an unpaired surrogate, which no file name can\n",
        ),
        (
            b'{"type": "match", "data": {"path": {"bytes": "YQBi"}, "submatches": []}}\n',
            "codescout: stdin: line 1: the path holds a NUL character, which no file name can\n",
        ),
        (
            b"ok.txt:1\nbig.txt:" + b"9" * 4001 + b"\n",
            "codescout: stdin: line 2: a match count of more than 4000 digits, too large to rank\n",
        ),
        (b"a.txt:-3\n", "codescout: stdin: line 1: a negative match count\n"),
        (b"a\0b\0c\n", "codescout: stdin: line 1: the path holds a NUL character, which no file name can\n"),
    ],
)
def test_paths_and_counts_no_file_could_have_are_one_line_errors(tmp_path: Path, stdin: bytes, message: str) -> None:
    done = run([codescout_exe(), "hits", "--now", NOW], tmp_path, stdin=stdin)
    assert (done.returncode, done.stdout, done.stderr.decode()) == (1, b"", message)


def test_zero_counts_are_left_out_and_one_character_names_are_fine(tmp_path: Path) -> None:
    r = Repo(tmp_path / "short")
    for name in ("a", "b", "c"):
        r.write(name, "x\n")
    r.commit("2026-01-01T00:00:00Z", "a", "b", "c")
    result = hits_of(r.root, b"a:0\nb:2\nc:1\n", "--now", NOW)
    assert result == {
        "hits": [
            {"path": "b", "matches": 2, "last_modified_days": 59},
            {"path": "c", "matches": 1, "last_modified_days": 59},
        ]
    }
    done = run([codescout_exe(), "hits"], r.root, stdin=b"a:0\n")
    assert (done.returncode, done.stderr) == (
        1,
        b"codescout: stdin: the ripgrep output holds no matches, so there is nothing to rank\n",
    )


# --- CODEOWNERS dialects on a real repository ------------------------------------------------------


def test_gitlab_codeowners_are_detected_by_place_and_by_sections(tmp_path: Path) -> None:
    r = Repo(tmp_path / "gitlab")
    r.write("docs/a.md", "x\n")
    r.write(".gitlab/CODEOWNERS", "[Docs] @docs-team\ndocs/\n")
    r.commit("2026-01-01T00:00:00Z", "docs/a.md", ".gitlab/CODEOWNERS")
    assert hits_of(r.root, b"docs/a.md:1\n")["hits"][0]["owner"] == "@docs-team"
    r.write("CODEOWNERS", "* @everyone\n\n[Docs]\ndocs/ @writers\n")  # root first, in GitLab's order
    assert hits_of(r.root, b"docs/a.md:1\n")["hits"][0]["owner"] == "@everyone @writers"
    done = run([codescout_exe(), "hits", "--now", NOW, "--codeowners", "github"], r.root, stdin=b"docs/a.md:1\n")
    assert json.loads(done.stdout)["hits"][0]["owner"] == "@writers"
    assert done.stderr.decode() == (
        "codescout: warning: CODEOWNERS:3: a GitLab section header, which GitHub does not read "
        "(see --codeowners gitlab); line skipped\n"
    )
    r.write(".github/CODEOWNERS", "docs/ @github-docs\n")  # GitHub's own place wins the detection
    assert hits_of(r.root, b"docs/a.md:1\n")["hits"][0]["owner"] == "@github-docs"
    forced = run([codescout_exe(), "hits", "--now", NOW, "--codeowners", "gitlab"], r.root, stdin=b"docs/a.md:1\n")
    assert json.loads(forced.stdout)["hits"][0]["owner"] == "@everyone @writers"


def test_codeowners_option_takes_only_the_two_dialects(tmp_path: Path) -> None:
    done = run([codescout_exe(), "hits", "--codeowners", "bitbucket"], tmp_path, stdin=b"a:1\n")
    assert done.returncode == 2
    assert b"invalid choice: 'bitbucket'" in done.stderr
    assert done.stderr.count(b"\n") == 1


def test_a_codeowners_file_of_3_mb_or_more_is_not_used(tmp_path: Path) -> None:
    r = Repo(tmp_path / "huge")
    r.write("a.txt", "x\n")
    r.write(".github/CODEOWNERS", "* @owner\n" + "# padding\n" * 320_000)
    r.commit("2026-01-01T00:00:00Z", "a.txt")
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=b"a.txt:1\n")
    assert json.loads(done.stdout)["hits"] == [{"path": "a.txt", "matches": 1, "last_modified_days": 59}]
    size = (r.root / ".github/CODEOWNERS").stat().st_size
    assert done.stderr.decode() == (
        f"codescout: warning: .github/CODEOWNERS is {size} bytes, over GitHub's 3 MB limit, so GitHub ignores it; "
        "no owners are read\n"
    )


# --- reading git's log, piece by piece ---------------------------------------------------------


class Chunks:
    """A stream that hands out its bytes in pieces of a given size, as a pipe may."""

    def __init__(self, data: bytes, size: int) -> None:
        self.data = data
        self.size = size

    def read(self, _: int) -> bytes:
        piece, self.data = self.data[: self.size], self.data[self.size :]
        return piece


LOG = (
    b"\x001700000300 c3 c2\x00\nnewest.txt\x00second\nline.txt\x00\nthird.txt\x00"  # later names may hold newlines
    b"\x001700000200 c2 c1 x9\x00"  # a merge that changed nothing against its first parent
    b"\x001700000100 c1 \x00\n\nleading-newline.txt\x00a\x00"
)


@pytest.mark.parametrize("size", [1, 2, 3, 7, 64, 65536])
def test_log_entries_read_the_same_whatever_the_pieces(size: int) -> None:
    from codescout_mcp.facts.history import commits_of

    assert [(c.when, c.id, c.first_parent, c.names) for c in commits_of(Chunks(LOG, size))] == [
        (1700000300, b"c3", b"c2", ["newest.txt", "second\nline.txt", "\nthird.txt"]),
        (1700000200, b"c2", b"c1", []),
        (1700000100, b"c1", None, ["\nleading-newline.txt", "a"]),
    ]


def test_counts_with_leading_zeros_and_the_digit_limit() -> None:
    assert read_match_counts(b"a:007\nb:" + b"0" * 5000 + b"1\n", "t") == {"a": 7, "b": 1}
    assert read_match_counts(b"a:" + b"9" * 4000 + b"\n", "t") == {"a": int("9" * 4000)}
    with pytest.raises(RipgrepError, match="line 1: a match count of more than 4000 digits"):
        read_match_counts(b"a:1" + b"0" * 4000 + b"\n", "t")
    with pytest.raises(RipgrepError, match=r"line 2: b'12x' is not a match count"):
        read_match_counts(b"a:1\nb:12x\n", "t")
    assert read_match_counts(b"a:1\r\nb:2\r\n", "t") == {"a": 1, "b": 2}  # CRLF lines


def test_null_count_records_and_their_line_numbers() -> None:
    assert read_match_counts(b"one\x003\ntwo\nlines\x001\n", "t") == {"one": 3, "two\nlines": 1}
    with pytest.raises(RipgrepError, match="line 4: expected PATH, NUL, COUNT"):
        read_match_counts(b"one\x003\ntwo\nlines\x001\nbroken", "t")
    with pytest.raises(RipgrepError, match="line 2: an empty path"):
        read_match_counts(b"one\x003\n\x001\n", "t")


def test_a_folder_and_gits_own_files_are_left_out_with_a_warning(tmp_path: Path) -> None:
    r = Repo(tmp_path / "r")
    r.write("a.txt", "x\n")
    r.write("src/b.txt", "x\n")
    r.commit("2026-01-01T00:00:00Z", "a.txt", "src/b.txt")
    done = run(
        [codescout_exe(), "hits", "--now", NOW],
        r.root,
        stdin=b"gone.txt:2\n.git:3\n.git/HEAD:2\nsrc:4\na.txt:1\nsrc/b.txt:1\n",  # (what follows a vanished file too)
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["hits"] == [
        {"path": "a.txt", "matches": 1, "last_modified_days": 59},
        {"path": "src/b.txt", "matches": 1, "last_modified_days": 59},
    ]
    assert done.stderr.decode() == (
        "codescout: warning: .git: left out, a directory, not a file\n"
        "codescout: warning: src: left out, a directory, not a file\n"
        "codescout: warning: left out: .git/HEAD is git's own (inside .git), not the repository's\n"
        "codescout: warning: gone.txt: left out, cannot read its modification time (No such file or directory)\n"
    )
    # `rg --hidden` lists every file of .git: one line says it of them all.
    listed = b"".join(f".git/{name}:1\n".encode() for name in ("HEAD", "config", "index", "description"))
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=listed + b"a.txt:1\n")
    assert done.returncode == 0, done.stderr
    assert done.stderr.decode() == (
        "codescout: warning: left out: 4 files (the first .git/HEAD) are git's own (inside .git), "
        "not the repository's\n"
    )
    done = run([codescout_exe(), "hits", "--now", NOW], r.root, stdin=b".git:3\n")
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr.decode().endswith("codescout: no hits are left to rank\n")


def test_a_limit_too_long_to_rank_is_a_usage_error(tmp_path: Path) -> None:
    status, stderr, stdout = hits_error(tmp_path, b"a.py:1\n", "--limit", "9" * 4001)
    assert (status, stdout) == (2, b"")
    assert stderr == (
        "codescout hits: usage error: argument --limit: a limit of more than 4000 digits, too large to rank "
        "(see 'codescout hits --help')\n"
    )
