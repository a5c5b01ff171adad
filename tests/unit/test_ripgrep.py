"""ripgrep's output formats read in process (`facts/rgcounts.py`): `--json`, count lines, `--null` counts."""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import pytest

from codescout_mcp.facts.rgcounts import BEGIN_EVENT_BYTES, JsonCounter, RipgrepError, TooManyFiles, read_match_counts


def event(kind: str, path: object = None, submatches: object = None) -> bytes:
    data: dict[str, object] = {}
    if path is not None:
        data["path"] = path
    if submatches is not None:
        data["submatches"] = submatches
    return json.dumps({"type": kind, "data": data}).encode()


def test_json_stream_skips_blank_lines_and_other_events() -> None:
    stream = b"\n".join(
        [
            event("begin", {"text": "a"}),
            b"",
            event("match", {"text": "a"}, [{}, {}]),
            b"   ",
            event("context", {"text": "b"}),
            event("match", {"text": "b"}, []),
            event("end", {"text": "a"}),
        ]
    )
    assert read_match_counts(stream, "t") == {"a": 2, "b": 1}


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (event("match", {"text": "a"}), "line 1: a match event without a path and submatches"),
        (event("match", None, [{}]), "line 1: a match event without a path and submatches"),
        (event("match", {"bytes": "not base64!"}, [{}]), "line 1: a match event without a path and submatches"),
        (event("match", {"bytes": "YWJj!"}, [{}]), "line 1: a match event without a path and submatches"),
        (event("match", {"other": "a"}, [{}]), "line 1: a match event without a path and submatches"),
        (event("match", {"text": ""}, [{}]), "line 1: an empty path"),
        (b'{"type": "match", "data": [1]}', "line 1: a match event without a path and submatches"),
    ],
)
def test_json_stream_refusals(line: bytes, message: str) -> None:
    with pytest.raises(RipgrepError) as caught:
        read_match_counts(line, "t")
    assert str(caught.value) == f"t: {message}"


def test_base64_paths_are_their_bytes() -> None:
    encoded = base64.b64encode(b"caf\xe9.txt").decode()
    assert read_match_counts(event("match", {"bytes": encoded}, [{}]), "t") == {os.fsdecode(b"caf\xe9.txt"): 1}


def test_count_lines_skip_blank_lines_anywhere() -> None:
    assert read_match_counts(b"a:1\n\n  \nb:2\n", "t") == {"a": 1, "b": 2}
    assert read_match_counts(b"a:1\na:2\n", "t") == {"a": 3}  # the same path twice adds up


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (b":5\n", "line 1: expected PATH:COUNT"),
        (b"a:1\nb\n", "line 2: expected PATH:COUNT"),
        (b"a:-3\n", "line 1: a negative match count"),
        (b"a:-\n", "line 1: b'-' is not a match count"),
        (b"a:1-2\n", "line 1: b'1-2' is not a match count"),
        (b"a:" + b"7" * 50 + b"x\n", "line 1: b'" + "7" * 40 + "' is not a match count"),
    ],
)
def test_count_line_refusals(data: bytes, message: str) -> None:
    with pytest.raises(RipgrepError) as caught:
        read_match_counts(data, "t")
    assert str(caught.value).startswith(f"t: {message}")


def test_null_counts_edges() -> None:
    assert read_match_counts(b"a\x001", "t") == {"a": 1}  # no newline at the end
    assert read_match_counts(b"a\x001\n\n  \n", "t") == {"a": 1}  # trailing blank lines
    assert read_match_counts(b"\na\x002\n", "t") == {"a": 2}  # a blank line before the first record
    assert read_match_counts(b"one\x001\nnext\n\x002\n", "t") == {"one": 1, "next\n": 2}
    with pytest.raises(RipgrepError, match=r"^t: line 3: the path holds a NUL character"):
        read_match_counts(b"a\x001\nb\x002\nc\x00d\x003\n", "t")
    with pytest.raises(RipgrepError, match=r"^t: line 2: an empty path"):
        read_match_counts(b"a\x001\n\x003\n", "t")
    with pytest.raises(RipgrepError, match=r"^t: line 1: an empty path"):
        read_match_counts(b"\x003\n", "t")
    with pytest.raises(RipgrepError, match=r"^t: line 2: expected PATH, NUL, COUNT"):
        read_match_counts(b"a\x001\nb 2\n", "t")


class CountedBytes(bytes):
    """Bytes that add up how much of themselves their slices copy."""

    copied = 0

    def __getitem__(self, key: Any) -> Any:
        part = bytes.__getitem__(self, key)
        if isinstance(key, slice):
            CountedBytes.copied += len(part)
        return part


@pytest.mark.parametrize("tail", [b"", b" \n" * 5_000])
def test_null_counts_are_read_in_one_pass(tail: bytes) -> None:
    records = 5_000
    data = CountedBytes(b"".join(b"src/file%05d.py\x00%d\n" % (i, i + 1) for i in range(records)) + tail)
    CountedBytes.copied = 0
    counts = read_match_counts(data, "t")
    assert len(counts) == records and counts["src/file04999.py"] == 5_000
    # Each record is copied a bounded number of times, not the rest of the input per record.
    assert CountedBytes.copied <= 3 * len(data)


# --- the search's own reading: rg --json counted as it streams --------------------------------


@pytest.fixture(scope="module")
def odd_tree(tmp_path_factory: pytest.TempPathFactory) -> str:
    """Files whose names and lines make JSON escapes, base64 paths and odd lines: every kind of event."""
    root = tmp_path_factory.mktemp("odd")
    texts = {
        "plain.txt": "ab ab\nab\n\nx\n",
        'quote"and\\back.txt': 'a "quoted" {"match":1} "submatches":[] ab\n',
        "new\nline.txt": "abab\n",
        "no-end.txt": "ab",
        "crlf.txt": "ab\r\nab\r\n",
        "late-binary.txt": "ab line\n" * 9000 + "\0\nab\n",
        "uni\u00e9\U0001f600.txt": "\u00e9ab\U0001f600ab\n",
    }
    for name, text in texts.items():
        (root / name).write_text(text, encoding="utf-8", newline="")
    if os.name != "nt":
        (root / os.fsdecode(b"raw\xff.txt")).write_bytes(b"ab \xff ab\n")
    return str(root)


# Patterns that match, that match the empty string, that anchor to a haystack's start, that match nothing.
PATTERNS = ["ab", "x*", "^", "$", "\\b", "a|", "\\Aab", "(?-m:^)ab", "ab\\b|", "\\s*$", "zzz", "(?m)^$", '"', "\\{"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_the_streamed_count_is_the_pipelines_in_pieces_of_any_size(odd_tree: str, pattern: str) -> None:
    import subprocess

    from tests.gitrepo import rg_exe

    out = subprocess.run(
        [rg_exe(), "--no-config", "--json", "--hidden", "-e", pattern], cwd=odd_tree, capture_output=True, check=False
    ).stdout
    try:
        expected = read_match_counts(out, "rg")
    except RipgrepError:  # (no match: the reader for `codescout hits` says so; the search answers empty)
        expected = {}
    # Every size up to a run's length (one byte at a time where the output is small), and bigger.
    sizes = (1, 2, 7, 15, 16, 17) if len(out) < 100_000 else (13, 16, 17)
    for size in (*sizes, 64, 4096, len(out) or 1):
        counter = JsonCounter(max_files=100, max_name_bytes=1 << 20)
        for start in range(0, len(out), size):
            counter.feed(out[start : start + size])
        assert counter.counts() == expected, (pattern, size)
        assert counter.summarised


def test_the_streamed_count_holds_its_bounds() -> None:
    stream = b"".join(
        event("begin", {"text": f"f{n}"}) + b"\n" + event("match", {"text": f"f{n}"}, [{"match": {}}]) + b"\n"
        b'{"type":"end","data":{}}\n'
        for n in range(3)
    )
    stream = stream.replace(b'"type": ', b'"type":').replace(b'{"match": {}}', b'{"match":{}}')
    counter = JsonCounter(max_files=3, max_name_bytes=100)
    counter.feed(stream)
    assert counter.counts() == {"f0": 1, "f1": 1, "f2": 1}
    with pytest.raises(TooManyFiles, match="more than 2 files"):
        JsonCounter(max_files=2, max_name_bytes=100).feed(stream)
    with pytest.raises(TooManyFiles):
        JsonCounter(max_files=100, max_name_bytes=3).feed(stream)


def test_the_streamed_count_refuses_what_is_not_ripgreps() -> None:
    counter = JsonCounter(max_files=10, max_name_bytes=100)
    counter.feed(b'{"type":"begin","data":{"path":{"text":"a"}}}\n{"type":"match"')
    with pytest.raises(RipgrepError, match="ended inside a file"):
        counter.counts()
    assert not counter.summarised
    with pytest.raises(RipgrepError, match="begin event 1: not JSON"):
        JsonCounter(max_files=10, max_name_bytes=100).feed(b'{"type":"begin",oops}\n')
    with pytest.raises(RipgrepError, match="longer than any path"):
        JsonCounter(max_files=10, max_name_bytes=100).feed(b'{"type":"begin"' + b"x" * (BEGIN_EVENT_BYTES + 1))
