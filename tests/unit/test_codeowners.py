"""CODEOWNERS rules as GitHub and as GitLab read them (files in repositories: tests/repositories/test_hits.py)."""

from __future__ import annotations

import os
import sys
from pathlib import Path

import pytest

from codescout_mcp.facts import codeowners
from codescout_mcp.facts.codeowners import CodeOwners, load_codeowners, parse_github, parse_gitlab
from codescout_mcp.facts.globs import MAX_PATTERN_CHARACTERS
from tests.platforms import posix_only


def github(text: str, paths: list[str]) -> tuple[dict[str, str | None], list[str]]:
    warnings: list[str] = []
    table = parse_github(text, "CODEOWNERS", warnings.append)
    return {p: table.owner_of(p) for p in paths}, warnings


def gitlab(text: str, paths: list[str]) -> tuple[dict[str, str | None], list[str]]:
    warnings: list[str] = []
    table = parse_gitlab(text, "CODEOWNERS", warnings.append)
    return {p: table.owner_of(p) for p in paths}, warnings


# --- GitHub -----------------------------------------------------------------------------


def test_github_last_matching_rule_wins() -> None:
    owners, _ = github("*.js @js\n/src/ @src\n", ["src/a.js", "lib/a.js", "src/a.py"])
    assert owners == {"src/a.js": "@src", "lib/a.js": "@js", "src/a.py": "@src"}
    owners, _ = github("/src/ @src\n*.js @js\n", ["src/a.js"])
    assert owners == {"src/a.js": "@js"}


def test_github_directory_patterns() -> None:
    text = "/build/logs/ @logs\napps/ @apps\n**/cache @cache\n"
    paths = ["build/logs/a.txt", "x/build/logs/a.txt", "apps/x.py", "deep/apps/y.py", "a/b/cache/z", "cache/q"]
    owners, _ = github(text, paths)
    assert owners == {
        "build/logs/a.txt": "@logs",
        "x/build/logs/a.txt": None,
        "apps/x.py": "@apps",
        "deep/apps/y.py": "@apps",
        "a/b/cache/z": "@cache",
        "cache/q": "@cache",
    }


def test_github_single_star_stays_in_its_folder_double_star_does_not() -> None:
    owners, _ = github("docs/* @docs\nsrc/** @src\n", ["docs/a.md", "docs/sub/b.md", "src/a", "src/x/y/z"])
    assert owners == {"docs/a.md": "@docs", "docs/sub/b.md": None, "src/a": "@src", "src/x/y/z": "@src"}
    owners, _ = github("* @all\n", ["a", "b/c/d"])
    assert owners == {"a": "@all", "b/c/d": "@all"}


def test_github_docs_double_star_star_owns_everything_under_docs() -> None:
    paths = ["docs/a.md", "docs/sub/b.md", "docs/x/y/z.md", "other/docs/q.md", "docs"]
    owners, _ = github("docs/**/* @docs\n", paths)
    assert owners == {
        "docs/a.md": "@docs",
        "docs/sub/b.md": "@docs",
        "docs/x/y/z.md": "@docs",
        "other/docs/q.md": None,
        "docs": None,
    }


def test_github_rule_without_owners_unowns() -> None:
    owners, _ = github("* @all\n/apps/ @apps\n/apps/github\n", ["apps/x", "apps/github/y", "z"])
    assert owners == {"apps/x": "@apps", "apps/github/y": None, "z": "@all"}


def test_github_several_owners_comments_escapes_and_case() -> None:
    text = "# comment\n\n*.md   @a   @org/team-x  user@example.com  # trailing comment\nmy\\ notes.txt @n\n"
    owners, warnings = github(text, ["README.md", "my notes.txt", "README.MD"])
    assert owners == {"README.md": "@a @org/team-x user@example.com", "my notes.txt": "@n", "README.MD": None}
    assert warnings == []


def test_github_managed_user_owners_are_valid() -> None:
    owners, warnings = github("* @octocat_acme @mona-lisa_corp2 @org_acme/team\n", ["a"])
    assert owners == {"a": "@octocat_acme @mona-lisa_corp2 @org_acme/team"}
    assert warnings == []


def test_github_byte_order_mark_does_not_break_the_first_rule() -> None:
    owners, warnings = github("\ufeff*.py @py\n", ["a.py"])
    assert (owners, warnings) == ({"a.py": "@py"}, [])


def test_github_unsupported_lines_warn_once_each_and_are_skipped() -> None:
    text = "* @all\n!secret.txt\n[ab].py @ranges\n\\#hash @h\nsrc/ not-an-owner\n[Docs] @docs\n*.py @py\n@@x\n"
    owners, warnings = github(text, ["secret.txt", "a.py", "src/x"])
    assert owners == {"secret.txt": "@all", "a.py": "@py", "src/x": "@all"}
    assert warnings == [
        "CODEOWNERS:2: negation (!) is not supported in CODEOWNERS; line skipped",
        "CODEOWNERS:3: character ranges ([...]) are not supported in CODEOWNERS; line skipped",
        "CODEOWNERS:4: escaping # is not supported in CODEOWNERS; line skipped",
        "CODEOWNERS:5: 'not-an-owner' is not a @user, @org/team or email owner; line skipped",
        "CODEOWNERS:6: a GitLab section header, which GitHub does not read (see --codeowners gitlab); line skipped",
    ]


# --- GitLab -----------------------------------------------------------------------------


def test_gitlab_sections_combine_owners_in_file_order() -> None:
    text = (
        "* @general\n"
        "\n"
        "[Documentation] @docs-team\n"
        "docs/\n"
        "README.md\n"
        "*.txt\n"
        "\n"
        "^[Database][2] @database-team\n"
        "model/db/\n"
        "config/db/database-setup.md @docs-team\n"
    )
    paths = ["src/a.py", "docs/guide.md", "model/db/CHANGELOG.txt", "config/db/database-setup.md", "README.md"]
    owners, warnings = gitlab(text, paths)
    assert warnings == []
    assert owners == {
        "src/a.py": "@general",
        "docs/guide.md": "@general @docs-team",
        "model/db/CHANGELOG.txt": "@general @docs-team @database-team",
        "config/db/database-setup.md": "@general @docs-team",
        "README.md": "@general @docs-team",
    }


def test_gitlab_last_matching_entry_wins_within_a_section() -> None:
    owners, _ = gitlab("[A]\n*.py @first\nsrc/ @second\n[B]\nsrc/ @third\n*.py @fourth\n", ["src/x.py"])
    assert owners == {"src/x.py": "@second @fourth"}


def test_gitlab_section_names_are_not_case_sensitive_and_merge() -> None:
    owners, _ = gitlab("[Docs]\n*.md @one\n[Other]\n*.md @two\n[DOCS]\ndocs/*.md @three\n", ["docs/a.md", "a.md"])
    assert owners == {"docs/a.md": "@three @two", "a.md": "@one @two"}


def test_gitlab_each_owner_once() -> None:
    owners, _ = gitlab("* @a @b\n[S] @b\n*.py\n[T]\n*.py @a @c @a\n", ["x.py"])
    assert owners == {"x.py": "@a @b @c"}


def test_gitlab_patterns_follow_fnmatch_with_pathname_and_dotmatch() -> None:
    text = (
        "[P]\n"
        "/docs/* @root-docs\n"
        "/build/ @build\n"
        "lib/ @lib\n"
        "README @readme\n"
        "**/*.rb @ruby\n"
        "*.c? @c\n"
        "[abc].txt @letters\n"
        "path\\ with\\ spaces/ @spaces\n"
        "\\#hash.md @hash\n"
        "/.hidden* @dot\n"
    )
    paths = {
        "docs/a.md": "@root-docs",
        "docs/sub/b.md": None,
        "build/x/y": "@build",
        "src/build/x": None,
        "lib/a": "@lib",
        "deep/lib/b": "@lib",
        "README": "@readme",
        "sub/README": "@readme",
        "README/x": None,
        "config/database.rb": "@ruby",
        "app/controllers/users/stars_controller.rb": "@ruby",
        "x.cc": "@c",
        "x.c/y": None,
        "b.txt": "@letters",
        "d.txt": None,
        "path with spaces/f": "@spaces",
        "#hash.md": "@hash",
        ".hiddenrc": "@dot",
    }
    owners, warnings = gitlab(text, list(paths))
    assert warnings == []
    assert owners == paths


def test_gitlab_roles_groups_and_emails_are_owners() -> None:
    owners, warnings = gitlab("* @@maintainer @group/sub/team jane.doe@example.com @user.name\n", ["a"])
    assert (owners, warnings) == ({"a": "@@maintainer @group/sub/team jane.doe@example.com @user.name"}, [])


def test_gitlab_invalid_lines_warn_and_are_skipped() -> None:
    text = "[] @x\n* @ok\nsrc/ nobody\n[Docs]\ndocs/\n[Bad] owner\n*.md @md\n"
    owners, warnings = gitlab(text, ["src/a", "docs/b", "c.md"])
    assert owners == {"src/a": "@ok", "docs/b": "@ok", "c.md": "@ok @md"}
    assert warnings == [
        "CODEOWNERS:1: a section needs a name; line skipped, and its entries count in the section before",
        "CODEOWNERS:3: 'nobody' is not a @user, @group, @@role or email owner; line skipped",
        "CODEOWNERS:5: no owners, and the section has no default owners; line skipped",
        "CODEOWNERS:6: 'owner' is not a GitLab owner; line skipped, and its entries count in the section before",
    ]


def test_gitlab_character_classes_escapes_and_stars() -> None:
    """As Ruby's File.fnmatch reads them (tests/unit/test_globs.py holds the two to the same answers)."""
    text = (
        "[P]\n"
        "[]a].txt @never-empty-set\n"
        "[!]q @any-one\n"
        "[!a]x @not-a\n"
        "[^b]y @not-b\n"
        "/lib** @lib-prefix\n"
        "/top/** @one-level\n"
        "\\*.md @literal-star\n"
        "\\?.md @literal-question\n"
        "/[a-c]/z @range\n"
        "/slash[/]x @never\n"
        "/open[ab @unterminated\n"
    )
    paths = {
        "].txt": None,
        "a.txt": None,
        "xq": "@any-one",
        "bx": "@not-a",
        "ax": None,
        "ay": "@not-b",
        "by": None,
        "lib": "@lib-prefix",
        "library": "@lib-prefix",
        "lib/x": None,
        "top/a": "@one-level",
        "top/a/b": None,
        "*.md": "@literal-star",
        "a.md": None,
        "?.md": "@literal-question",
        "b/z": "@range",
        "d/z": None,
        "slash/x": None,
        "open[ab": None,
    }
    owners, warnings = gitlab(text, list(paths))
    assert warnings == []
    assert owners == paths


def test_gitlab_a_range_the_wrong_way_round_holds_its_two_ends() -> None:
    owners, warnings = gitlab("* @all\n[S]\n[z-a].py @ends\n", ["z.py", "a.py", "m.py"])
    assert owners == {"z.py": "@all @ends", "a.py": "@all @ends", "m.py": "@all"}
    assert warnings == []


def test_a_pattern_longer_than_codescout_matches_is_one_warning() -> None:
    long = "a" * (MAX_PATTERN_CHARACTERS + 1)
    owners, warnings = github(f"* @all\n{long} @long\n", [long])
    assert owners == {long: "@all"}
    assert warnings == [
        f"CODEOWNERS:2: invalid pattern '{'a' * 200}'... (longer than {MAX_PATTERN_CHARACTERS} characters, "
        "more than codescout matches); line skipped"
    ]
    owners, warnings = gitlab(f"* @all\n{long} @long\n", [long])
    assert owners == {long: "@all"} and len(warnings) == 1


def test_an_invalid_pattern_is_quoted_whole_up_to_two_hundred_characters() -> None:
    for length, shown in ((200, "'" + "a" * 199 + "\\\\'"), (201, "'" + "a" * 200 + "'...")):
        pattern = "a" * (length - 1) + "\\"  # ends in an escape with nothing to escape
        _, warnings = github(f"{pattern}\n", ["a"])  # at the line's end, escaping no space
        assert warnings == [
            f"CODEOWNERS:1: invalid pattern {shown} (it ends in an escape (\\) with nothing to escape); line skipped"
        ]


def test_github_patterns_git_refuses_are_one_warning_each() -> None:
    owners, warnings = github("* @all\n/ @root\nend\\\n", ["a"])
    assert owners == {"a": "@all"}
    assert warnings == [
        "CODEOWNERS:2: pattern '/' matches nothing; line skipped",
        "CODEOWNERS:3: invalid pattern 'end\\\\' (it ends in an escape (\\) with nothing to escape); line skipped",
    ]


# --- files: where they are looked for, and how they are read --------------------------------


def load(root: Path, dialect: str | None = None) -> tuple[CodeOwners, list[str]]:
    warnings: list[str] = []
    return load_codeowners(root, dialect, warnings.append), warnings


def test_gitlab_looks_in_docs_before_dot_gitlab(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / ".gitlab").mkdir()
    (tmp_path / "docs" / "CODEOWNERS").write_text("[A]\n* @from-docs\n", encoding="utf-8")
    (tmp_path / ".gitlab" / "CODEOWNERS").write_text("[A]\n* @from-gitlab\n", encoding="utf-8")
    assert load(tmp_path)[0].owner_of("x") == "@from-docs"
    assert load(tmp_path, "gitlab")[0].owner_of("x") == "@from-docs"
    (tmp_path / "docs" / "CODEOWNERS").unlink()
    assert load(tmp_path)[0].owner_of("x") == "@from-gitlab"


def test_a_file_in_dot_gitlab_is_gitlabs_even_without_sections(tmp_path: Path) -> None:
    (tmp_path / ".gitlab").mkdir()
    # GitLab reads `docs` as a file named docs anywhere; GitHub as that folder and all in it.
    (tmp_path / ".gitlab" / "CODEOWNERS").write_text("docs @docs-owner\n", encoding="utf-8")
    owners, _ = load(tmp_path)
    assert (owners.owner_of("docs/a.md"), owners.owner_of("x/docs")) == (None, "@docs-owner")
    (tmp_path / "CODEOWNERS").write_text("docs @docs-owner\n", encoding="utf-8")
    owners, _ = load(tmp_path)  # the root file comes first, has no sections: GitHub's reading
    assert (owners.owner_of("docs/a.md"), owners.owner_of("x/docs")) == ("@docs-owner", "@docs-owner")


def test_a_byte_order_mark_does_not_hide_a_section_header(tmp_path: Path) -> None:
    (tmp_path / "CODEOWNERS").write_bytes(b"\xef\xbb\xbf[Docs] @docs\ndocs/\n")
    owners, warnings = load(tmp_path)
    assert (owners.owner_of("docs/a.md"), warnings) == ("@docs", [])


def test_invalid_utf8_in_codeowners_is_read_around(tmp_path: Path) -> None:
    (tmp_path / "CODEOWNERS").write_bytes(b"# caf\xe9\n* @all\n")
    assert load(tmp_path)[0].owner_of("a") == "@all"


@pytest.mark.parametrize(("size", "used"), [(3 * 1024 * 1024 - 1, True), (3 * 1024 * 1024, False)])
def test_github_reads_a_file_just_under_3_mb_and_ignores_one_of_3_mb(tmp_path: Path, size: int, used: bool) -> None:
    head = b"* @all\n"
    (tmp_path / "CODEOWNERS").write_bytes(head + b"#" * (size - len(head) - 1) + b"\n")
    owners, warnings = load(tmp_path)
    assert owners.owner_of("a") == ("@all" if used else None)
    assert len(warnings) == (0 if used else 1)


def test_a_codeowners_file_that_cannot_be_read_is_one_warning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "CODEOWNERS").write_text("* @all\n", encoding="utf-8")

    def refuse(path: str, limit: int, *, inside: str | None = None) -> bytes:
        raise PermissionError(13, "Permission denied")

    monkeypatch.setattr(codeowners, "read_regular", refuse)  # as root, a file mode would not stop the read
    owners, warnings = load(tmp_path)
    assert owners.owner_of("a") is None
    assert warnings == ["cannot read CODEOWNERS (Permission denied); no owners are read"]


def test_owners_are_remembered_per_path_and_stay_right() -> None:
    owners, _ = github("*.py @py\n", [])
    table = parse_github("*.py @py\nsrc/ @src\n", "CODEOWNERS", lambda _: None)
    assert [table.owner_of(p) for p in ("src/a.py", "src/a.py", "b.py", "b.py", "c.txt")] == [
        "@src",
        "@src",
        "@py",
        "@py",
        None,
    ]
    assert owners == {}


def test_github_slash_star_at_the_root_owns_top_level_files_only() -> None:
    owners, _ = github("/* @root\n", ["a", "b.txt", "sub/c"])
    assert owners == {"a": "@root", "b.txt": "@root", "sub/c": None}


def test_github_a_folder_pattern_ending_in_a_slash_owns_all_below() -> None:
    owners, _ = github("docs/*X/ @x\n", ["docs/aX/b.md", "docs/aX/c/d.md", "docs/b.md"])
    assert owners == {"docs/aX/b.md": "@x", "docs/aX/c/d.md": "@x", "docs/b.md": None}


def test_gitlab_comments_and_a_byte_order_mark() -> None:
    owners, warnings = gitlab("\ufeff# owners\n* @all\n  # indented comment\n[S]\n# another\n*.md @md\n", ["a.md"])
    assert (owners, warnings) == ({"a.md": "@all @md"}, [])


def padded(rule: str, size: int) -> bytes:
    """A CODEOWNERS file of exactly `size` bytes: `rule` on its first line, then comment lines."""
    head = (rule + "\n").encode()
    filler = size - len(head)
    lines = [b"#" * 99 + b"\n"] * (filler // 100)
    rest = filler - 100 * len(lines)
    return head + b"".join(lines) + (b"#" * (rest - 1) + b"\n" if rest else b"")


@pytest.mark.parametrize(
    ("dialect", "place", "rule", "largest"),
    [("gitlab", "docs/CODEOWNERS", "[A]\n* @owner", 10 * 2**20), ("github", "CODEOWNERS", "* @owner", 3 * 2**20 - 1)],
)
def test_the_largest_codeowners_read_and_the_first_size_refused(
    tmp_path: Path, dialect: str, place: str, rule: str, largest: int
) -> None:
    # GitLab's file is read up to 10 MiB (codescout's own bound); GitHub ignores one of 3 MB or more.
    (tmp_path / "docs").mkdir()
    (tmp_path / place).write_bytes(padded(rule, largest))
    assert (tmp_path / place).stat().st_size == largest
    assert load(tmp_path, dialect)[0].owner_of("x") == "@owner"
    (tmp_path / place).write_bytes(padded(rule, largest + 1))
    owners, warnings = load(tmp_path, dialect)
    assert owners.owner_of("x") is None
    if dialect == "gitlab":
        assert warnings == [f"{place} is more than 10485760 bytes, more than codescout reads; no owners are read"]
    else:
        assert warnings == [
            f"{place} is 3145728 bytes, over GitHub's 3 MB limit, so GitHub ignores it; no owners are read"
        ]


@pytest.mark.parametrize(
    ("dialect", "expected"),
    [
        ("github", "GitHub's places (.github/CODEOWNERS, CODEOWNERS, docs/CODEOWNERS)"),
        ("gitlab", "GitLab's places (CODEOWNERS, docs/CODEOWNERS, .gitlab/CODEOWNERS)"),
    ],
)
def test_a_forced_dialect_with_no_file_anywhere_names_only_its_own_places(
    tmp_path: Path, dialect: str, expected: str
) -> None:
    owners, warnings = load(tmp_path, dialect)
    assert owners.owner_of("x") is None
    assert warnings == [f"--codeowners {dialect}: no CODEOWNERS in {expected}; no owners are read"]


@posix_only("FIFOs")
def test_a_codeowners_that_is_not_a_regular_file_is_named_and_not_read(tmp_path: Path) -> None:
    if sys.platform == "win32":  # the mark skips it there; said so for mypy judging the suite as Windows
        return
    os.mkfifo(tmp_path / "CODEOWNERS")  # opening it to read would wait for a writer forever
    owners, warnings = load(tmp_path, "github")
    assert owners.owner_of("x") is None
    assert warnings == ["CODEOWNERS is a FIFO, not a regular file; it is not read, and no owners are read"]


def test_a_gitlab_line_with_an_invalid_pattern_is_skipped_and_the_next_lines_are_read() -> None:
    long = "a" * (MAX_PATTERN_CHARACTERS + 1)
    owners, warnings = gitlab(f"[A]\n{long} @long\n* @all\n", ["x"])
    assert owners == {"x": "@all"}
    assert warnings == [
        f"CODEOWNERS:2: invalid pattern '{'a' * 200}'... (longer than {MAX_PATTERN_CHARACTERS} characters, "
        "more than codescout matches); line skipped"
    ]
