"""The fast path (pydantic-core) held to the precise one (jsontext + validate) on every input.

For each generated or mutated input: when the fast path answers, the precise path must give
the same ranking; when the precise path refuses, the fast path must not answer. Which path
a caller took is never visible in what it gets.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codescout_mcp import fastpath
from codescout_mcp.jsontext import JsonTextError, parse_json
from codescout_mcp.ranking import rank
from codescout_mcp.validate import InvalidArguments
from tests.helpers import codescout_exe


def precise(data: bytes) -> Any:
    """The precise path's answer: the ranking, or the error's words."""
    try:
        return rank(parse_json(data, "input"))
    except (JsonTextError, InvalidArguments) as error:
        return f"error: {error}"


def fast(data: bytes) -> Any:
    """The fast path's answer (the ranking, or the error's words), or None where it is unsure."""
    value = fastpath.parsed(data)
    if value is fastpath.UNSURE:
        return None
    assert same(value, parse_json(data, "input")), data[:300]
    try:
        return rank(value)
    except InvalidArguments as error:
        return f"error: {error}"


def same(a: object, b: object) -> bool:
    """Equal type for type and, in objects, key for key in order (1 == 1.0 and {a, b} == {b, a} are not enough)."""
    if type(a) is not type(b):
        return False
    if isinstance(a, dict) and isinstance(b, dict):
        return list(a) == list(b) and all(same(a[key], b[key]) for key in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(map(same, a, b))
    if isinstance(a, float):
        return repr(a) == repr(b)  # -0.0 is not 0.0 here
    return a == b


def agree(data: bytes) -> bool:
    """Whether the fast path answered (and then: with the precise parser's value, and the same answer)."""
    answer = fast(data)
    if answer is None:
        return False
    assert answer == precise(data), data[:300]
    return True


NUMBERS = st.one_of(
    st.integers(-3, 10**6),
    st.sampled_from(["3.0", "1e2", "-0", "0", "1.5", "1" + "0" * 4000, "9" * 4001, "true", "null", '"3"', "NaN"]),
)
# Paths as JSON text: any string, and escapes written as they would come (a lone surrogate too).
PATHS = st.one_of(
    st.text(max_size=8).map(json.dumps),
    st.sampled_from(
        ['""', '"a"', '"A"', '"\\ud800"', '"\\u00e9"', '"NaN.py"', '"\U0001f600"', '"a\\u0000b"', '"\\ud83d\\ude00"']
    ),
)


EXTRAS = st.sampled_from(["[1, NaN]", "{}", "[[[]]]", "1e999", '"x"'])


def number_text(value: object) -> str:
    return str(value)


@st.composite
def documents(draw: st.DrawFn) -> bytes:
    """JSON text of arguments: mostly well formed, with every kind of wrong part mixed in."""
    hits = []
    for _ in range(draw(st.integers(0, 5))):
        fields = [f'"path": {draw(PATHS)}']
        fields.append(f'"matches": {number_text(draw(NUMBERS))}')
        fields.append(f'"last_modified_days": {number_text(draw(NUMBERS))}')
        if draw(st.booleans()):
            fields.append(f'"owner": {draw(st.sampled_from(["null", json.dumps("alice"), json.dumps(" "), "5"]))}')
        if draw(st.booleans()):
            fields.append(f'"extra": {draw(EXTRAS)}')
        if draw(st.booleans()):
            fields.append(fields[0])  # a key given twice
        draw(st.randoms()).shuffle(fields)
        hits.append("{" + ", ".join(fields) + "}")
    parts = [f'"hits": [{", ".join(hits)}]']
    if draw(st.booleans()):
        parts.append(f'"limit": {number_text(draw(NUMBERS))}')
    text = "{" + ", ".join(parts) + "}"
    data = text.encode("utf-8", "surrogatepass")
    if draw(st.booleans()):
        data = b"\xef\xbb\xbf" + data
    return data


@st.composite
def well_formed(draw: st.DrawFn) -> bytes:
    """Arguments the contract takes, with extra fields, keys given twice and any path: the fast
    path's own ground, where it must answer and agree."""
    hits = []
    for index in range(draw(st.integers(1, 12))):
        hit: dict[str, Any] = {
            "path": draw(st.text(min_size=1, max_size=6)) + f"/{index}",
            "matches": draw(st.integers(1, 10**30)),
            "last_modified_days": draw(st.integers(0, 10**6)),
        }
        if draw(st.booleans()):
            hit["owner"] = draw(st.text(max_size=4))
        if draw(st.booleans()):
            hit["extra"] = draw(st.sampled_from([[], {"a": [1, {}]}, "x", 1.5, None]))
        hits.append(hit)
    arguments: dict[str, Any] = {"hits": hits}
    if draw(st.booleans()):
        arguments["limit"] = draw(st.integers(1, 20))
    text = json.dumps(arguments, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):  # a key twice: the last one counts, on both paths
        text = text.replace('{"path": ', '{"path": "first", "path": ', 1)
    return text.encode()


@given(well_formed())
def test_on_well_formed_input_the_fast_path_answers_as_the_precise_one(data: bytes) -> None:
    assert agree(data)


@given(documents())
def test_the_fast_path_answers_only_what_the_precise_path_answers_the_same(data: bytes) -> None:
    agree(data)


@given(st.one_of(documents(), well_formed()), st.integers(0, 400), st.integers(0, 255))
def test_a_mutated_byte_never_makes_the_two_paths_disagree(data: bytes, where: int, byte: int) -> None:
    if data:
        index = where % len(data)
        agree(data[:index] + bytes([byte]) + data[index + 1 :])


def test_the_fast_path_answers_well_formed_input() -> None:
    hits = [
        {"path": f"src/{i}.py", "matches": 1 + i % 7, "last_modified_days": i % 90, "owner": "a"} for i in range(500)
    ]
    assert agree(json.dumps({"hits": hits, "limit": 20, "note": {"x": [1, 2]}}).encode())
    assert agree(json.dumps({"hits": hits}).encode())


@pytest.mark.parametrize(
    "document",
    [
        b'{"hits": [{"path": "a", "matches": 1, "last_modified_days": 0, "x": NaN}]}',
        b'{"hits": [{"path": "a", "matches": 1, "last_modified_days": 0, "x": -Infinity}]}',
        b'\xef\xbb\xbf{"hits": [{"path": "a", "matches": 1, "last_modified_days": 0}]}',
        b'{"hits": [{"path": "\\ud800", "matches": 1, "last_modified_days": 0}]}',
        b'{"hits": [{"path": "a", "matches": 1' + b"0" * 5000 + b', "last_modified_days": 0}]}',
        b'{"hits": [{"path": "a", "matches": 1, "last_modified_days": 0}],}',
        b'{"hits": [{"path": "a\x01", "matches": 1, "last_modified_days": 0}]}',
        b'{"hits": [{"path": "\xff", "matches": 1, "last_modified_days": 0}]}',
    ],
)
def test_what_the_fast_path_leaves_to_the_precise_one(document: bytes) -> None:
    assert fastpath.parsed(document) is fastpath.UNSURE


@pytest.mark.parametrize(
    ("document", "error"),
    [
        (b'{"hits": [{"path": "a", "matches": 1, "last_modified_days": 0}], "limit": 0}', "limit"),
        (
            b'{"hits": [{"path": "a", "matches": 1, "last_modified_days": 0}, '
            b'{"path": "a", "matches": 2, "last_modified_days": 0}]}',
            "hits[1].path",
        ),
        (b'{"hits": [{"path": "a", "matches": 1' + b"0" * 4000 + b', "last_modified_days": 0}]}', "hits[0].matches"),
        (b'{"hits": [{"path": "a", "matches": 1e400, "last_modified_days": 0}]}', "hits[0].matches"),
        (b'{"hits": [{"path": "a", "matches": 1.5, "last_modified_days": -0}]}', "hits[0].matches"),
        (b'{"hits": []}', "hits"),
    ],
)
def test_what_the_contract_refuses_is_said_in_the_precise_words_from_the_fast_value(
    document: bytes, error: str
) -> None:
    answer = fast(document)
    assert answer == precise(document)
    assert isinstance(answer, str) and answer.startswith(f"error: {error}: "), answer


def test_a_large_input_ranks_the_same_through_the_cli_whichever_path(tmp_path: Path) -> None:
    """Over FAST_BYTES: the fast path answers a valid file, the precise path a file it would not take."""
    hits = [{"path": f"p/{i}", "matches": 1 + i % 30, "last_modified_days": i % 400} for i in range(160_000)]
    valid = json.dumps({"hits": hits, "limit": 5}).encode()
    assert len(valid) >= fastpath.FAST_BYTES and fastpath.parsed(valid) is not fastpath.UNSURE
    floats = valid.replace(b'"matches": 1,', b'"matches": 1.0,')  # integral floats: ranked as integers
    assert fastpath.parsed(floats) is not fastpath.UNSURE
    surrogate = valid.replace(b'"p/7"', b'"p/\\udc00"', 1)  # a lone surrogate: the precise path's
    assert fastpath.parsed(surrogate) is fastpath.UNSURE
    for data in (valid, floats, surrogate):
        source = tmp_path / "args.json"
        source.write_bytes(data)
        done = subprocess.run([codescout_exe(), "rank", "--input", str(source)], capture_output=True, check=False)
        assert done.returncode == 0, done.stderr
        assert json.loads(done.stdout) == rank(json.loads(data))
    duplicate = valid.replace(b'"p/1"', b'"p/0"', 1)
    source = tmp_path / "args.json"
    source.write_bytes(duplicate)
    done = subprocess.run([codescout_exe(), "rank", "--input", str(source)], capture_output=True, check=False)
    assert (done.returncode, done.stdout) == (1, b"")
    assert done.stderr.decode() == 'codescout: hits[1].path: duplicate path "p/0", first given at hits[0]\n'


@pytest.mark.skipif(sys.platform == "win32", reason="resource limits are POSIX-only")
@pytest.mark.parametrize("limit", ["RLIMIT_AS", "RLIMIT_DATA"])
def test_under_a_memory_cap_too_tight_for_it_the_fast_path_stands_aside(limit: str) -> None:
    """Under a cap, the fast path is taken only with room for ROOM_FACTOR times the input."""
    probe = (
        "import resource, sys\n"
        "from codescout_mcp import fastpath\n"
        f"limit = resource.{limit}\n"
        "used = fastpath._in_use('VmSize:' if limit == resource.RLIMIT_AS else 'VmData:')\n"
        "resource.setrlimit(limit, (used + (64 << 20), resource.getrlimit(limit)[1]))\n"
        "print(fastpath._room_for(32 << 20), fastpath._room_for(128 << 20))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "True False\n", "")
    assert fastpath._room_for(1 << 40)  # no cap here: always room
