"""Lines from stdin's bytes (`stdio/framing.py`), in process: splits across reads, lines over the
limit dropped as they come, and the id of such a line still found."""

from __future__ import annotations

import json

import pytest
from hypothesis import given
from hypothesis import strategies as st

from codescout_mcp.answers.jsonrpc import INVALID_REQUEST, PARSE_ERROR, Dropped, Message, Refused
from codescout_mcp.stdio.framing import IdSniffer, Line, LineFramer, Oversized, read_item


def framed(chunks: list[bytes], limit: int = 1 << 20) -> list[Line | Oversized]:
    framer = LineFramer(limit)
    items = [item for chunk in chunks for item in framer.feed(chunk)]
    return items + list(framer.finish())


def datas(items: list[Line | Oversized]) -> list[bytes | tuple[int, object]]:
    return [item.data if isinstance(item, Line) else (item.size, item.request_id) for item in items]


def test_lines_are_split_at_newlines_wherever_the_reads_end() -> None:
    assert datas(framed([b'{"a":1}\n{"b"', b":2}\n\n", b"last"])) == [b'{"a":1}', b'{"b":2}', b"", b"last"]
    assert datas(framed([b"x\n"])) == [b"x"]  # nothing left after the last newline


@given(st.lists(st.binary(max_size=12).filter(lambda b: b"\n" not in b), min_size=1, max_size=6), st.data())
def test_any_way_of_cutting_the_stream_gives_the_same_lines(lines: list[bytes], data: st.DataObject) -> None:
    stream = b"\n".join(lines) + b"\n"
    cuts = sorted(data.draw(st.lists(st.integers(0, len(stream)), max_size=5)))
    chunks = [stream[a:b] for a, b in zip([0, *cuts], [*cuts, len(stream)], strict=True)]
    assert datas(framed(chunks)) == lines


def test_a_line_over_the_limit_is_dropped_as_it_comes_with_its_size_and_id() -> None:
    big = json.dumps({"jsonrpc": "2.0", "id": "big-1", "method": "x", "params": {"pad": "y" * 200}}).encode()
    items = framed([big[:50], big[50:], b"\n", b'{"ok":1}\n'], limit=100)
    assert datas(items) == [(len(big), "big-1"), b'{"ok":1}']
    read = read_item(items[0], 100, batches=False)
    assert isinstance(read, Refused)
    assert read.refusal.code == INVALID_REQUEST and read.refusal.request_id == "big-1"
    assert read.refusal.message == (
        f"Invalid request: the message has {len(big)} bytes, more than the limit of 100 (--max-message-bytes)"
    )


@pytest.mark.parametrize(
    ("text", "found"),
    [
        ('{"id": 7, "x": 1}', 7),
        ('{"x": {"id": 1}, "id": "top"}', "top"),  # a nested id is not the message's
        ('{"a": "\\"id\\": 2", "id": -3}', -3),  # an id inside a string is no key
        ('{"id": "a\\"b"}', 'a"b'),
        ('{"id": 1.5}', None),  # not a request id
        ('{"id": true}', None),
        ('[{"id": 1}]', None),  # not an object
        ('{"x": 1}', None),
    ],
)
def test_the_sniffer_finds_only_the_top_level_id(text: str, found: object) -> None:
    sniffer = IdSniffer()
    for byte in text.encode():
        sniffer.feed(bytes([byte]))  # one byte at a time: nothing depends on where reads end
    assert sniffer.request_id() == found


def test_a_framed_line_is_read_as_a_message() -> None:
    read = read_item(Line(b'{"jsonrpc": "2.0", "method": "x"}\r'), 10, batches=False)
    assert isinstance(read, Message) and read.envelope == {"jsonrpc": "2.0", "method": "x"}
    read = read_item(Line(b"{nope"), 10, batches=False)
    assert isinstance(read, Refused) and read.refusal.code == PARSE_ERROR
    read = read_item(Line(b" \t"), 10, batches=False)
    assert isinstance(read, Dropped)  # a blank line: nothing to answer
