"""The fast path (msgspec into checked structs) held to the precise one (jsontext + validate).

For each generated or mutated input: when the fast path answers (a ranking, or the duplicate
path error it words itself), the precise path must give the same; when it gives up, the
precise path answers alone. Which path a caller took is never visible in what it gets.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from codescout_mcp.core import fastpath
from codescout_mcp.core.contract import TOOL_NAME
from codescout_mcp.core.jsontext import JsonTextError, parse_json
from codescout_mcp.core.ranking import rank
from codescout_mcp.core.validate import InvalidArguments
from tests.helpers import codescout_exe


def precise(data: bytes) -> Any:
    """The precise path's answer: the ranking, or the error's words."""
    try:
        return rank(parse_json(data, "input"))
    except (JsonTextError, InvalidArguments) as error:
        return f"error: {error}"


def fast(data: bytes) -> Any:
    """The fast path's answer (the ranking, or the error's words), or None where it gives up."""
    holder = [data]
    try:
        answer = fastpath.ranked(holder)
    except InvalidArguments as error:
        assert holder == []  # the bytes were let go once the structs existed
        return f"error: {error}"
    assert holder == ([] if answer is not None else [data])
    return answer


def agree(data: bytes) -> bool:
    """Whether the fast path answered (and then: with the precise path's very answer)."""
    answer = fast(data)
    if answer is None:
        return False
    expected = precise(data)
    assert answer == expected, data[:300]
    if not isinstance(answer, str):  # the same bytes out, key order and integer types included
        assert json.dumps(answer) == json.dumps(expected)
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
    """Arguments the contract takes in the shape the fast path reads (no unknown field, integers
    written as integers below 2**63), keys given twice and any path: its own ground, where it
    must answer and agree."""
    hits = []
    for index in range(draw(st.integers(1, 12))):
        hit: dict[str, Any] = {
            "path": draw(st.text(min_size=1, max_size=6)) + f"/{index}",
            "matches": draw(st.one_of(st.integers(1, 10**6), st.integers(1, 2**63 - 1))),
            "last_modified_days": draw(st.one_of(st.integers(0, 10**6), st.integers(0, 2**63 - 1))),
        }
        if draw(st.booleans()):
            hit["owner"] = draw(st.text(max_size=4))
        hits.append(hit)
    if draw(st.booleans()):  # a repeated path: the error the fast path words itself
        hits.append(dict(draw(st.sampled_from(hits))))
    arguments: dict[str, Any] = {"hits": hits}
    if draw(st.booleans()):
        arguments["limit"] = draw(st.integers(1, 20))
    text = json.dumps(arguments, ensure_ascii=draw(st.booleans()))
    if draw(st.booleans()):  # a key twice: the last one counts, on both paths
        text = text.replace('{"path": ', '{"path": "first", "path": ', 1)
    if draw(st.booleans()):
        text = text.replace('"matches": ', '"matches": 1, "matches": ', 1)
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
    assert agree(json.dumps({"hits": hits, "limit": 20}).encode())
    assert agree(json.dumps({"hits": hits}).encode())
    assert agree(json.dumps({"hits": hits, "limit": 2**63 - 1}).encode())
    largest = {"path": " ", "matches": 2**63 - 1, "last_modified_days": 2**63 - 1, "owner": " "}
    assert agree(json.dumps({"hits": [largest]}).encode())


HIT = b'{"path": "a", "matches": 1, "last_modified_days": 0'


@pytest.mark.parametrize(
    "document",
    [
        # An unknown field, whatever it holds: invalid UTF-8, deep nesting, NaN, anything.
        HIT + b', "x": "\xff"}]}'.replace(b"\\xff", b"\xff"),
        HIT + b', "x": "\xed\xa0\x80"}]}',
        HIT + b', "x": ' + b"[" * 5000 + b"]" * 5000 + b"}]}",
        HIT + b', "x": NaN}]}',
        HIT + b', "x": 1}], "note": {}}',
        HIT + b"}], " + b'"note": ' + b"[" * 100 + b"]" * 100 + b"}",
        # Numbers the contract reads as integers, or larger than a machine integer.
        b'{"hits": [{"path": "a", "matches": 3.0, "last_modified_days": 0}]}',
        b'{"hits": [{"path": "a", "matches": 1, "last_modified_days": 1e2}]}',
        b'{"hits": [{"path": "a", "matches": 1, "last_modified_days": -0.0}]}',
        b'{"hits": [{"path": "a", "matches": 9223372036854775808, "last_modified_days": 0}]}',
        b'{"hits": [{"path": "a", "matches": 1' + b"0" * 5000 + b', "last_modified_days": 0}]}',
        HIT + b'}], "limit": 9223372036854775808}',
        HIT + b'}], "limit": 2.0}',
        # What the JSON or its text cannot be for msgspec, and what JSON.parse takes anyway.
        b"\xef\xbb\xbf" + HIT + b"}]}",
        b'{"hits": [{"path": "\\ud800", "matches": 1, "last_modified_days": 0}]}',
        b'{"hits": [{"path": "\\udc00\\ud800", "matches": 1, "last_modified_days": 0}]}',
        b'{"hits": [{"path": "\xed\xa0\x80", "matches": 1, "last_modified_days": 0}]}',
        b'{"hits": [{"path": "\xff", "matches": 1, "last_modified_days": 0}]}',
        b'{"hits": [{"path": "a\x01", "matches": 1, "last_modified_days": 0}]}',
        HIT + b"}],}",
        HIT + b"}]}\x0c",
        HIT + b"}]} x",
        # A key given twice whose first value msgspec refuses as it reads it, the last one good.
        b'{"hits": [{"path": "a", "matches": "x", "matches": 1, "last_modified_days": 0}]}',
        # What the contract refuses: the precise path words it.
        HIT + b', "owner": null}]}',
        HIT + b'}], "limit": 0}',
        HIT + b'}], "limit": true}',
        b'{"hits": []}',
        b'{"hits": [{"path": "", "matches": 1, "last_modified_days": 0}]}',
        b'{"hits": [{"path": "a", "last_modified_days": 0}]}',
        b"[]",
    ],
)
def test_what_the_fast_path_leaves_to_the_precise_one(document: bytes) -> None:
    assert fast(document) is None
    assert precise(document)  # an answer or an error, from the precise path alone


@pytest.mark.parametrize(
    ("document", "expected"),
    [
        (
            b'{"hits": [{"path": "a", "matches": 1, "last_modified_days": 0}, '
            b'{"path": "a", "matches": 2, "last_modified_days": 0}]}',
            'error: hits[1].path: duplicate path "a", first given at hits[0]',
        ),
        (
            b'{"hits": [{"path": "b", "matches": 1, "last_modified_days": 0}, {"path": "a", "matches": 1, '
            b'"last_modified_days": 0}, {"path": "a", "matches": 2, "last_modified_days": 0}, '
            b'{"path": "b", "matches": 2, "last_modified_days": 0}]}',
            'error: hits[2].path: duplicate path "a", first given at hits[1]',
        ),
        (  # a key given twice: the last value is the path, on both paths
            b'{"hits": [{"path": "a", "matches": 1, "last_modified_days": 0}, '
            b'{"path": "a", "path": "b", "matches": 2, "last_modified_days": 0}, '
            b'{"path": "b", "path": "a", "path": "c", "matches": 2, "last_modified_days": 0}, '
            b'{"path": "c", "matches": 2, "matches": 3, "last_modified_days": 0}]}',
            'error: hits[3].path: duplicate path "c", first given at hits[2]',
        ),
        (
            b'{"hits": [{"path": "\\u00e9", "matches": 1, "last_modified_days": 0}, '
            b'{"path": "\xc3\xa9", "matches": 2, "last_modified_days": 0}]}',
            'error: hits[1].path: duplicate path "\xe9", first given at hits[0]',
        ),
    ],
)
def test_a_repeated_path_is_said_in_the_precise_words_by_the_fast_path(document: bytes, expected: str) -> None:
    assert fast(document) == precise(document) == expected


def test_a_key_given_twice_keeps_its_last_value_on_both_paths() -> None:
    document = (
        b'{"limit": 5, "hits": [{"path": "a", "matches": 1, "last_modified_days": 0, "matches": 7, "owner": "x", '
        b'"owner": "y"}], "limit": 1, "hits": [{"path": "b", "matches": 2, "last_modified_days": 3}, '
        b'{"path": "c", "matches": 9, "last_modified_days": 0, "owner": "z"}]}'
    )
    answer = fast(document)
    assert answer == precise(document)
    assert answer["counts"] == {"hits": 2, "returned": 1} and answer["results"][0]["path"] == "c"


def test_every_contract_keyword_has_a_rule_in_the_fast_path() -> None:
    """A keyword the structs cannot express stops the fast path rather than being skipped."""
    from codescout_mcp.core.contract import INPUT_SCHEMA

    fastpath._type_for(INPUT_SCHEMA, "arguments")  # the contract as it is: every keyword known
    changed = json.loads(json.dumps(INPUT_SCHEMA))
    changed["properties"]["hits"]["items"]["properties"]["path"]["maxLength"] = 9
    with pytest.raises(NotImplementedError, match=r"arguments\.hits\.items\.path: .*maxLength"):
        fastpath._type_for(changed, "arguments")
    changed = json.loads(json.dumps(INPUT_SCHEMA))
    changed["properties"]["limit"]["type"] = "number"
    with pytest.raises(NotImplementedError, match=r"arguments\.limit: .*'number'"):
        fastpath._type_for(changed, "arguments")


def large(count: int) -> bytes:
    hits = [{"path": f"p/{i}", "matches": 1 + i % 30, "last_modified_days": i % 400} for i in range(count)]
    return json.dumps({"hits": hits, "limit": 5}).encode()


def test_a_large_input_ranks_the_same_through_the_cli_whichever_path(tmp_path: Path) -> None:
    """Over FAST_BYTES: the fast path answers a valid file, the precise path a file it would not take."""
    valid = large(40_000)
    assert len(valid) >= fastpath.FAST_BYTES and fast(valid) is not None
    floats = valid.replace(b'"matches": 1,', b'"matches": 1.0,')  # integral floats: the precise path's
    surrogate = valid.replace(b'"p/7"', b'"p/\\udc00"', 1)  # a lone surrogate: the precise path's
    extra = valid.replace(b'"p/9"', b'"p/9", "x": "\xff"', 1)  # invalid UTF-8 in an unknown field
    for data in (floats, surrogate, extra):
        assert fast(data) is None
    for data in (valid, floats, surrogate):
        source = tmp_path / "args.json"
        source.write_bytes(data)
        done = subprocess.run([codescout_exe(), "rank", "--input", str(source)], capture_output=True, check=False)
        assert done.returncode == 0, done.stderr
        assert done.stdout == render(precise(data))
    refusals = {
        valid.replace(b'"p/1"', b'"p/0"', 1): 'codescout: hits[1].path: duplicate path "p/0", first given at hits[0]\n',
        valid.replace(b'"limit": 5', b'"limit": 0'): (
            "codescout: limit: expected an integer >= 1 (or leave the field out), got 0\n"
        ),
        valid + b"]": f"codescout: args.json: invalid JSON at line 1, column {len(valid) + 1}: Extra data\n",
        extra: f"codescout: args.json: not valid UTF-8 at byte offset {extra.index(bytes([255]))}\n",
    }
    for data, words in refusals.items():
        source = tmp_path / "args.json"
        source.write_bytes(data)
        done = subprocess.run(
            [codescout_exe(), "rank", "--input", "args.json"], capture_output=True, check=False, cwd=tmp_path
        )
        assert (done.returncode, done.stdout) == (1, b"")
        assert done.stderr.decode().startswith(words), done.stderr


def render(answer: Any) -> bytes:
    from codescout_mcp.cli.rank import render_json

    return render_json(answer)


@pytest.mark.skipif(sys.platform == "win32", reason="resource limits are POSIX-only")
@pytest.mark.parametrize("limit", ["RLIMIT_AS", "RLIMIT_DATA"])
def test_under_a_memory_cap_too_tight_for_it_the_fast_path_stands_aside(limit: str) -> None:
    """Under a cap, the fast path is taken only with room for ROOM_FACTOR times the input (msgspec
    can crash where an allocation fails; the precise path raises MemoryError)."""
    probe = (
        "import resource, sys\n"
        "from codescout_mcp.core import fastpath\n"
        f"limit = resource.{limit}\n"
        "used = fastpath._in_use('VmSize:' if limit == resource.RLIMIT_AS else 'VmData:')\n"
        "resource.setrlimit(limit, (used + (64 << 20), resource.getrlimit(limit)[1]))\n"
        "print(fastpath._room_for(32 << 20), fastpath._room_for(128 << 20))\n"
        'hits = b\'{"hits": [{"path": "a", "matches": 1, "last_modified_days": 0}]}\'\n'
        'call = b\'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": '
        '{"name": "rank_search_results", "arguments": \' + hits + b\'}}\'\n'
        "print(fastpath.ranked([hits]) is not None, fastpath.call_message(call) is not None)\n"
        "padding = b' ' * (16 << 20)  # valid, and 16 MiB: no room for 8 times that\n"
        "print(fastpath.ranked([hits + padding]), fastpath.call_message(call + padding))\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "True False\nTrue True\nNone None\n", "")
    assert fastpath._room_for(1 << 40)  # no cap here: always room


def test_the_rules_for_keywords_the_contract_leaves_out() -> None:
    """What the fast path reads from a schema without `minimum`, `minLength` or `minItems`, or with
    the annotations: the JSON Schema meaning (no bound), up to a machine integer."""
    import msgspec

    def reads(schema: dict[str, Any], text: bytes) -> bool:
        try:
            msgspec.json.decode(text, type=fastpath._type_for(schema, "x"))
        except msgspec.ValidationError:
            return False
        return True

    integer = {"type": "integer", "title": "n", "description": "a number", "default": 1}
    assert reads(integer, b"-9223372036854775808") and reads(integer, b"9223372036854775807")
    assert not reads(integer, b"-9223372036854775809") and not reads(integer, b"9223372036854775808")
    assert reads({"type": "string"}, b'""') and reads({"type": "array", "items": {"type": "string"}}, b"[]")


def test_the_structs_are_not_tracked_by_the_collector() -> None:
    """A million hits would be a million objects for every collection to walk (gc=False)."""
    import gc

    document = b'{"hits": [{"path": "a", "matches": 1, "last_modified_days": 0, "owner": "x"}]}'
    arguments = fastpath.decoder().decode(document)
    assert not gc.is_tracked(arguments) and not any(map(gc.is_tracked, arguments.hits))


def test_msgspec_is_imported_only_for_a_large_input(tmp_path: Path) -> None:
    """Below FAST_BYTES importing it would cost more than it saves."""
    probe = (
        "import sys\n"
        "from codescout_mcp.cli.rank import _ranked\n"
        'small = b\'{"hits": [{"path": "a", "matches": 1, "last_modified_days": 0}]}\'\n'
        "_ranked(small, 'input')\n"
        "print('msgspec' in sys.modules)\n"
        "_ranked(small[:-2] + b' ' * (2 << 20) + b']}', 'input')\n"
        "print('msgspec' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "False\nTrue\n", "")


@given(
    st.lists(
        st.tuples(
            st.text(st.sampled_from(["a", "B", "\u00e9", "\ue000", "\uffff", "\U0001f600", "\U00010000"]), min_size=1),
            st.integers(1, 4),
            st.integers(0, 401),
        ),
        min_size=1,
        max_size=30,
        unique_by=lambda hit: hit[0],
    ),
    st.integers(1, 32),
)
def test_the_structs_rank_as_the_dicts_through_ties_and_utf16_order(
    hits: list[tuple[str, int, int]], limit: int
) -> None:
    """Scores that tie across matches and days (a match is worth 100 days) and paths that sort
    differently as UTF-16 than as code points: the order and the floor of the top-k."""
    arguments = {"hits": [{"path": p, "matches": m, "last_modified_days": d} for p, m, d in hits], "limit": limit}
    assert agree(json.dumps(arguments).encode())


def test_the_floor_of_the_top_k_is_the_scores_own() -> None:
    """A floor found on any other weight of a match would keep only the hit of more matches here."""
    few = {"path": "few", "matches": 1, "last_modified_days": 98}  # score 2: the best
    many = {"path": "many", "matches": 4, "last_modified_days": 399}  # score 1
    answer = fast(json.dumps({"hits": [many, few], "limit": 1}).encode())
    assert answer == precise(json.dumps({"hits": [many, few], "limit": 1}).encode())
    assert [row["path"] for row in answer["results"]] == ["few"]


# --- whole tools/call messages (the MCP fronts' large calls) -----------------------------------------

MODERN = {
    "io.modelcontextprotocol/protocolVersion": "2026-07-28",
    "io.modelcontextprotocol/clientInfo": {"name": "t", "version": "1"},
    "io.modelcontextprotocol/clientCapabilities": {},
}


def answered(envelope: dict[str, Any]) -> Any:
    """What the door does with a checked envelope in a fresh initialized session: the answer, or
    None (the SDK's), at 2026-07-28 when it carries that era's `_meta`, else at 2025-11-25."""
    from codescout_mcp.answers.door import Call, Session
    from codescout_mcp.tools.toolbox import Offer

    meta = envelope.get("params", {}).get("_meta") if isinstance(envelope.get("params"), dict) else None
    modern = isinstance(meta, dict) and "io.modelcontextprotocol/protocolVersion" in meta
    route = Offer().door().route(envelope, Session.stateless(None if modern else "2025-11-25"))
    return json.loads(json.dumps(route.run())) if isinstance(route, Call) else None


def message_agrees(data: bytes) -> bool:
    """Whether the fast path read the message (and then: as the precise path reads it, with the
    same answer through the door); the precise path's refusals stay its own."""
    from codescout_mcp.answers.jsonrpc import Refusal, check_envelope, decoded, parsed
    from codescout_mcp.core.fastpath import Decoded

    fast_message = fastpath.call_message(data)
    if fast_message is None:
        return False
    try:
        precise_message = check_envelope(parsed(decoded(data)))
    except Refusal as refusal:
        raise AssertionError(f"the fast path read what the precise one refuses: {refusal.message}") from None
    fast_arguments = fast_message["params"]["arguments"]
    assert isinstance(fast_arguments, Decoded)
    plain = fast_arguments.plain()
    precise_arguments = precise_message["params"]["arguments"]
    assert plain == {"limit": 10, **precise_arguments} or plain == precise_arguments
    same = {**fast_message, "params": {**fast_message["params"], "arguments": precise_arguments}}
    assert same == precise_message  # id, method, name and _meta (whose key order is kept, as read)
    if "_meta" in same["params"]:
        assert json.dumps(same["params"]["_meta"]) == json.dumps(precise_message["params"]["_meta"])
    assert answered(fast_message) == answered(precise_message)
    assert answered(check_envelope(fast_message)) == answered(fast_message)
    return True


# Ids and `_meta`s the fast path reads, and ones it leaves to the precise path.
GOOD_IDS = st.sampled_from(["1", "-7", '"a"', '""', "9223372036854775807"])
IDS = st.one_of(GOOD_IDS, st.sampled_from(['"\\ud800"', "9223372036854775808", "1" + "0" * 30, "1.0", "true", "null"]))
GOOD_METAS = st.sampled_from([None, "{}", '{"progressToken": 3}', '{"progressToken": "p", "x": [1, {"y": null}]}',
                              json.dumps(MODERN), json.dumps({**MODERN, "progressToken": 1})])  # fmt: skip
METAS = st.one_of(
    GOOD_METAS,
    st.sampled_from(['{"progressToken": 1.5}', '{"a": NaN}', '{"a": "\\udc00"}', '{"a": ' + "[" * 40 + "]" * 40 + "}",
                     '{"a": 1' + "0" * 5000 + "}", '{"a": "\xff"}', "[]", "null", '"m"']),
)  # fmt: skip
NAMES = st.sampled_from(['"rank_workspace_hits"', "3", "null"])
VERSIONS = st.sampled_from(['"1.0"', "2", '"2.0 "'])
METHODS = st.sampled_from(['"ping"', '"tools/cal"', "1"])


@st.composite
def messages(draw: st.DrawFn) -> bytes:
    """`tools/call` messages of the rank tool, well formed in half of them, with one flaw or more of the
    envelope's in the rest (and, anywhere, whatever `well_formed` and METAS hold)."""
    flawed = draw(st.booleans())

    def part(good: str, bad: st.SearchStrategy[str]) -> str:
        return draw(bad) if flawed and draw(st.integers(0, 3)) == 0 else good

    params = [f'"name": {part(json.dumps(TOOL_NAME), NAMES)}', f'"arguments": {draw(well_formed()).decode()}']
    meta = draw(METAS if flawed else GOOD_METAS)
    if meta is not None:
        params.append(f'"_meta": {meta}')
    if flawed and draw(st.integers(0, 5)) == 0:
        params.append('"extra": 1')
    draw(st.randoms()).shuffle(params)
    fields = [f'"jsonrpc": {part(json.dumps("2.0"), VERSIONS)}', f'"method": {part(json.dumps("tools/call"), METHODS)}']
    fields.append('"params": {' + ", ".join(params) + "}")
    if not flawed or draw(st.integers(0, 5)):
        fields.append(f'"id": {draw(IDS if flawed else GOOD_IDS)}')
    if flawed and draw(st.integers(0, 5)) == 0:
        fields.append('"extra": {}')
    draw(st.randoms()).shuffle(fields)
    return ("{" + ", ".join(fields) + "}").encode("utf-8", "surrogatepass")


@given(messages())
def test_a_call_the_fast_path_reads_is_the_precise_paths_to_the_last_byte(data: bytes) -> None:
    event("the fast path read it" if message_agrees(data) else "the precise path's")


def test_the_generated_calls_are_mostly_the_fast_paths_own() -> None:
    """The two tests above prove something only where the fast path reads the call: most well-formed ones."""
    taken = []

    @settings(max_examples=200, derandomize=True)
    @given(messages())
    def count(data: bytes) -> None:
        taken.append(fastpath.call_message(data) is not None)

    count()
    assert sum(taken) >= len(taken) // 3, f"{sum(taken)} of {len(taken)}"


@given(messages(), st.integers(0, 2000), st.integers(0, 255))
def test_a_mutated_byte_in_a_call_never_makes_the_two_paths_disagree(data: bytes, where: int, byte: int) -> None:
    index = where % len(data)
    message_agrees(data[:index] + bytes([byte]) + data[index + 1 :])


CALL: dict[str, Any] = {"jsonrpc": "2.0", "id": 5, "method": "tools/call", "params": {"name": "rank_search_results"}}
GOOD = {"hits": [{"path": "a", "matches": 2, "last_modified_days": 1}]}


def nested(depth: int) -> Any:
    """A `_meta` `depth` levels deep, itself the first."""
    value: Any = {}
    for _ in range(depth - 1):
        value = {"a": value}
    return value


@pytest.mark.parametrize(
    "params",
    [
        {"arguments": {"hits": [{"path": "a", "matches": 2, "last_modified_days": 1}]}},
        {"arguments": {"hits": [{"path": "a", "matches": 2, "last_modified_days": 1}]}, "_meta": {"progressToken": 1}},
        {"arguments": {"hits": [{"path": "a", "matches": 2, "last_modified_days": 1}], "limit": 1}, "_meta": MODERN},
        {"arguments": {"hits": [{"path": "a", "matches": 1, "last_modified_days": 0}] * 2}},  # a repeated path
    ],
)
def test_the_fast_path_reads_the_calls_it_is_for(params: dict[str, Any]) -> None:
    assert message_agrees(json.dumps({**CALL, "params": {**CALL["params"], **params}}).encode())


@pytest.mark.parametrize(
    "message",
    [
        {**CALL, "params": {"name": "rank_search_results"}},  # no arguments: the contract's error, worded
        {**CALL, "params": {**CALL["params"], "arguments": GOOD}, "id": None},
        {**CALL, "params": {**CALL["params"], "arguments": GOOD}, "id": 1.0},
        {key: value for key, value in {**CALL, "params": {**CALL["params"], "arguments": GOOD}}.items() if key != "id"},
        {**CALL, "params": {**CALL["params"], "arguments": GOOD}, "method": "tools/list"},
        {**CALL, "params": {"name": "rank_workspace_hits", "arguments": GOOD}},
        {**CALL, "params": {"name": "rank_search_results", "arguments": {"hits": []}}},
        {**CALL, "params": {"name": "rank_search_results", "arguments": {"hits": [{"path": "a", "matches": 1.0}]}}},
        {**CALL, "params": {"name": "rank_search_results", "arguments": {"hits": [], "x": 1}}},
        # A _meta over 64 KiB, or over 32 levels deep (both at the edge).
        {**CALL, "params": {**CALL["params"], "arguments": GOOD, "_meta": {"a": "b" * (64 * 1024 - 7)}}},
        {**CALL, "params": {**CALL["params"], "arguments": GOOD, "_meta": nested(33)}},
        {**CALL, "params": {**CALL["params"], "arguments": GOOD, "_meta": {"a": "\udc00"}}},
        {**CALL, "params": {**CALL["params"], "arguments": GOOD, "extra": 1}},
        {**CALL, "params": {**CALL["params"], "arguments": GOOD}, "extra": 1},
    ],
)
def test_what_the_fast_path_leaves_of_a_call_to_the_precise_one(message: dict[str, Any]) -> None:
    assert fastpath.call_message(json.dumps(message).encode()) is None
    good = {**CALL, "params": {**CALL["params"], "arguments": GOOD}}
    assert fastpath.call_message(json.dumps(good).encode()) is not None  # (the same call without the flaw)


def test_a_meta_at_the_edge_of_its_bounds_is_read_by_the_fast_path() -> None:
    """64 KiB and 32 levels are taken (one byte or one level more is not: the test above)."""
    for meta in ({"a": "b" * (64 * 1024 - 8)}, nested(32)):
        message = {**CALL, "params": {**CALL["params"], "arguments": GOOD, "_meta": meta}}
        data = json.dumps(message, separators=(",", ":")).encode()
        assert message_agrees(data), meta if isinstance(meta, dict) and len(str(meta)) < 200 else len(data)


def without_proc(monkeypatch: pytest.MonkeyPatch) -> None:
    """This process as it is where there is no /proc (macOS, the BSDs): opening anything there fails."""
    import builtins

    real_open = builtins.open

    def no_proc(name: Any, *args: Any, **kwargs: Any) -> Any:
        if str(name).startswith("/proc/"):
            raise FileNotFoundError(2, "No such file or directory", name)
        return real_open(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", no_proc)


@pytest.mark.skipif(sys.platform == "win32", reason="resource limits are POSIX-only")
def test_without_proc_the_size_in_use_is_the_peak_resident_size(monkeypatch: pytest.MonkeyPatch) -> None:
    """Where there is no /proc (macOS, the BSDs), the room check reads the process's peak instead."""
    if sys.platform == "win32":  # skipped there; said again for mypy's Windows pass
        return
    import resource

    without_proc(monkeypatch)
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    used = fastpath._in_use("VmSize:")
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    unit = 1 if sys.platform == "darwin" else 1024  # ru_maxrss: bytes on macOS, KiB elsewhere
    assert before * unit <= used <= after * unit and used > 0


@pytest.mark.skipif(sys.platform != "linux", reason="reads /proc, as the room check does there")
def test_the_size_in_use_is_what_proc_says() -> None:
    def said(field: str) -> int:
        with open("/proc/self/status", encoding="ascii") as status:
            return next(int(line.split()[1]) << 10 for line in status if line.startswith(field))

    for field in ("VmSize:", "VmData:"):
        before, used, after = said(field), fastpath._in_use(field), said(field)
        assert min(before, after) <= used <= max(before, after), (before, used, after)


@pytest.mark.skipif(sys.platform == "win32", reason="resource limits are POSIX-only")
def test_the_room_check_by_the_byte_and_by_system(monkeypatch: pytest.MonkeyPatch) -> None:
    """Room is the cap less what is in use, at least the size asked; Windows, which has no rlimits,
    is not asked; macOS's peak is in bytes. (Other systems simulated here by their names.)"""
    if sys.platform == "win32":  # skipped there; said again for mypy's Windows pass
        return
    import resource

    monkeypatch.setattr(resource, "getrlimit", lambda limit: (1000, resource.RLIM_INFINITY))
    monkeypatch.setattr(fastpath, "_in_use", lambda field: 400)
    assert fastpath._room_for(600) and not fastpath._room_for(601)
    monkeypatch.setattr(sys, "platform", "win32")
    assert fastpath._room_for(601)  # no rlimits there: not looked at
    monkeypatch.undo()

    without_proc(monkeypatch)
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    monkeypatch.setattr(sys, "platform", "darwin")
    assert fastpath._in_use("VmSize:") == peak  # bytes there
    monkeypatch.setattr(sys, "platform", "win32")
    assert fastpath._in_use("VmSize:") == 0


def test_the_fast_path_asks_room_for_eight_times_its_input(monkeypatch: pytest.MonkeyPatch) -> None:
    """Its peak is about 2.4 times the input: the rest is a margin under a cap (the precise path
    meets a cap as MemoryError, msgspec not always)."""
    asked: list[int] = []

    def room_for(size: int) -> bool:
        asked.append(size)
        return False

    monkeypatch.setattr(fastpath, "_room_for", room_for)
    data = b'{"hits": [{"path": "a", "matches": 1, "last_modified_days": 0}]}'
    call = b'{"jsonrpc": "2.0", "id": 1, "method": "tools/call", "params": {"name": "rank_search_results", '
    call += b'"arguments": ' + data + b"}}"
    assert fastpath.ranked([data]) is None and fastpath.call_message(call) is None
    assert asked == [8 * len(data), 8 * len(call)]


def test_a_meta_nested_in_lists_is_held_to_the_same_depth() -> None:
    deep: Any = []
    for _ in range(32):
        deep = [deep]
    message = {**CALL, "params": {**CALL["params"], "arguments": GOOD, "_meta": {"a": deep}}}  # 34 levels
    assert fastpath.call_message(json.dumps(message).encode()) is None
    message["params"]["_meta"] = {"a": deep[0][0]}  # 32 levels
    assert fastpath.call_message(json.dumps(message).encode()) is not None
