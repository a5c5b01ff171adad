"""CODEOWNERS patterns (`codescout_mcp.facts.globs`) held to independent readings of the same rules.

* GitHub's patterns are gitignore's: pathspec's GitIgnoreSpecPattern, a reading written
  apart from codescout, is the oracle for every pattern GitHub reads that way (all but the
  `docs/*` rule, which is GitHub's own and is pinned here by its documented examples);
* GitLab matches with Ruby's `File.fnmatch` (FNM_PATHNAME | FNM_DOTMATCH): real Ruby, from
  Debian's package, answers a few thousand generated cases in one run, and codescout must
  agree with every one.
"""

from __future__ import annotations

import random
import shutil
import subprocess
from collections.abc import Callable

import pytest
from hypothesis import given
from hypothesis import strategies as st
from pathspec.patterns.gitignore.spec import GitIgnoreSpecPattern

from codescout_mcp.facts.codeowners import _gitlab_pattern
from codescout_mcp.facts.globs import github_regex, gitlab_regex
from tests.debian import apt_install

PATTERN_PARTS = ["a", "b", "ab", ".", "*", "**", "?", "/", "\\a", "\\*", "\\"]
NAMES = ["a", "b", "ab", "ba", "aa", ".a", "a.b", "*", "?", "\\"]

patterns = st.lists(st.sampled_from(PATTERN_PARTS), min_size=1, max_size=7).map("".join)
paths = st.lists(st.sampled_from(NAMES), min_size=1, max_size=5).map("/".join)


def direct_children_only(pattern: str) -> bool:
    segments = pattern.rstrip("/").split("/")
    return len(segments) >= 2 and segments[-1] == "*" and segments[-2] != "**"


def pathspec_reading(pattern: str, path: str) -> str:
    try:
        compiled = GitIgnoreSpecPattern(pattern)
    except ValueError:
        return "invalid"
    if compiled.include is None:
        return "matches nothing"
    return "match" if compiled.match_file(path) is not None else "no match"


def codescout_reading(pattern: str, path: str) -> str:
    try:
        regex = github_regex(pattern)
    except ValueError:
        return "invalid"
    if regex is None:
        return "matches nothing"
    return "match" if regex.search(path) is not None else "no match"


@pytest.mark.parametrize("read", [github_regex, gitlab_regex])
def test_patterns_of_up_to_4096_characters_are_matched_and_longer_ones_refused(
    read: Callable[[str], object],
) -> None:
    assert read("/" + "a" * 4095) is not None
    with pytest.raises(ValueError, match="longer than 4096 characters, more than codescout matches"):
        read("/" + "a" * 4096)


@given(patterns, paths)
def test_github_patterns_match_as_gitignore_reads_them(pattern: str, path: str) -> None:
    if direct_children_only(pattern):
        return  # GitHub's own rule: the examples below
    assert codescout_reading(pattern, path) == pathspec_reading(pattern, path)


GITHUB_HAND_PICKED = [
    ("?", "a"),  # `?` is any one character but `/`
    ("a?", "ab"),
    ("a?", "a/b"),
    ("?", "ab"),
    ("a\\?", "a?"),  # an escaped `?` is itself
    ("a\\?", "ab"),
    ("*ab*", "xaby"),  # a run of characters between two stars
    ("*ab*", "xayb"),
    ("*a*b*", "xaybz"),
    ("/a*b*c", "a1b2c"),
    ("/a*b*c", "a1c2b"),
    ("**/*", "a/b/c"),  # `**` then `*`: anything, at any depth
    ("**/", "a/b"),  # `**/`: everything below the root
    ("**/", "a"),
    ("**/**/", "a/b"),
    ("**", "a/b"),
]


def test_github_patterns_match_as_gitignore_reads_them_in_thousands_of_fixed_cases() -> None:
    cases = generated_cases(4000, PATTERN_PARTS, NAMES, seed=20261202) + GITHUB_HAND_PICKED
    cases = [(pattern, path) for pattern, path in cases if not direct_children_only(pattern)]
    readings = [(case, codescout_reading(*case), pathspec_reading(*case)) for case in cases]
    assert [reading for reading in readings if reading[1] != reading[2]] == []
    matched = sum(ours == "match" for _, ours, _ in readings)
    assert 0.05 < matched / len(readings) < 0.95  # the cases are worth comparing: both answers occur


def test_an_empty_pattern_is_refused_with_its_reason() -> None:
    with pytest.raises(ValueError, match=r"^it is empty once its slashes are read$"):
        github_regex("")


@pytest.mark.parametrize(
    ("pattern", "owned", "not_owned"),
    [
        ("docs/*", ["docs/a.md", "docs/.env"], ["docs", "docs/sub/b.md", "other/docs/a.md"]),
        ("/*", ["a", "b.txt"], ["sub/c"]),
        ("**/docs/*", ["docs/a", "x/docs/a", "docs/a/docs/b"], ["docs/a/b", "x/docs/a/b"]),
        # The file's own folder is `a`, so it is a direct child, however else the path could be split.
        ("**/a/*", ["a/x", "a/a/x", "q/a/x"], ["a/x/y"]),
        ("docs/*/", ["docs/a/b"], ["docs/a", "docs/a/b/c"]),
    ],
)
def test_github_single_star_last_owns_direct_children_only(
    pattern: str, owned: list[str], not_owned: list[str]
) -> None:
    regex = github_regex(pattern)
    assert regex is not None
    assert [path for path in owned + not_owned if regex.search(path)] == owned


# --- GitLab against Ruby ----------------------------------------------------------------------

SET_PARTS = [
    *("[ab]", "[!a]", "[^a]", "[]a]", "[!]", "[a-b]", "[b-a]", "[\\]]", "[a-\\]]", "[a/b]", "[a", "x]"),
    *("[a-]", "[-a]", "[!-]", "[\\a-b]", "[a-\\b]", "[]-a]", "[a-", "[\\", "[a\\"),
]


@pytest.fixture(scope="module")
def ruby() -> str:
    """Debian's Ruby, installed when it is missing."""
    found = shutil.which("ruby")
    if found is None:
        apt_install("ruby")
        found = shutil.which("ruby")
    assert found is not None, "apt-get install ruby gave no ruby command"
    return found


RUBY_FNMATCH = r"""
flags = File::FNM_PATHNAME | File::FNM_DOTMATCH
STDIN.each_line do |line|
  pattern, path = line.chomp.split("\t", 2)
  puts(File.fnmatch(pattern, "/" + path, flags) ? "1" : "0")
end
"""


GITLAB_PARTS = [*PATTERN_PARTS, *SET_PARTS, "\\/"]  # a set may hold `/`, and `\\/` is an escaped one
GITLAB_NAMES = [*NAMES, "]", "[", "a]", "[a", "-"]


def generated_cases(count: int, parts: list[str], names: list[str], seed: int) -> list[tuple[str, str]]:
    """Patterns of parts and paths of names from a fixed seed: the same cases on every run, any machine."""
    chooser = random.Random(seed)
    cases = []
    for _ in range(count):
        pattern = "".join(chooser.choice(parts) for _ in range(chooser.randint(1, 7)))
        path = "/".join(chooser.choice(names) for _ in range(chooser.randint(1, 5)))
        cases.append((pattern, path))
    return cases


HAND_PICKED = [
    ("/a**/b", "ax/b"),
    ("/a**/b", "a/x/b"),
    ("/**/x", "x"),
    ("/top/**", "top/a/b"),
    ("/slash[/]x", "slash/x"),
    ("/x[a/b]y", "xay"),
    ("/[z-a]", "z"),
    ("/[z-a]", "m"),
    ("/end\\", "end"),
    ("/a\\/b", "a/b"),
    ("/" + "**/a/" * 6 + "b", "a/" * 8 + "b"),
    # An escape inside a segment of stars: the segment is not `**`, so it spans no folders.
    ("/q/*\\a*/b", "q/x/y/b"),
    ("/q/*\\a*/b", "q/xay/b"),
    # A set holds its members and nothing else, negated or not.
    ("/[ab]", "X"),
    ("/[ab]", "b"),
    ("/[!ab]", "X"),
    ("/[!ab]", "a"),
]


def test_gitlab_patterns_match_as_rubys_fnmatch_does(ruby: str) -> None:
    generated = generated_cases(4000, GITLAB_PARTS, GITLAB_NAMES, seed=20261201)
    cases = [(_gitlab_pattern(pattern), path) for pattern, path in generated] + HAND_PICKED
    lines = "".join(f"{pattern}\t{path}\n" for pattern, path in cases)
    answers = subprocess.run([ruby, "-e", RUBY_FNMATCH], input=lines, capture_output=True, text=True, check=True)
    rubys = [answer == "1" for answer in answers.stdout.split()]
    assert len(rubys) == len(cases)
    ours = [gitlab_regex(pattern).fullmatch(path) is not None for pattern, path in cases]
    differing = [(case, theirs) for case, theirs, mine in zip(cases, rubys, ours, strict=True) if theirs != mine]
    assert differing == []
    assert 0.05 < sum(rubys) / len(rubys) < 0.95  # the cases are worth comparing: both answers occur
