"""ripgrep's output formats read in process (`facts/ripgrep.py`): `--json`, count lines, `--null` counts."""

from __future__ import annotations

import base64
import json
import os
from typing import Any

import pytest

from codescout_mcp.facts.ripgrep import RipgrepError, read_match_counts


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
