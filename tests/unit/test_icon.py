"""The server's icon (serverInfo.icons): one picture, as SVG and as PNG, safe to render anywhere.

The SVG is plain rectangles, nothing a client must sanitize (no script, no links, no styles);
the PNG is the same picture at its declared 64x64, so a client that shows only PNG (the one
format the spec makes every icon-showing client support) shows what an SVG client shows.
"""

from __future__ import annotations

import struct
import xml.etree.ElementTree as ET
import zlib

from tests.helpers import ROOT

ICONS = ROOT / "codescout_mcp" / "icons"
SVG_NS = "{http://www.w3.org/2000/svg}"
SIZE = 64

Picture = list[list[tuple[int, int, int]]]


def _colour(text: str) -> tuple[int, int, int]:
    assert len(text) == 7 and text[0] == "#", text
    return (int(text[1:3], 16), int(text[3:5], 16), int(text[5:7], 16))


def svg_picture() -> Picture:
    """The SVG painted pixel by pixel; it may hold nothing but filled rectangles."""
    root = ET.fromstring((ICONS / "codescout.svg").read_bytes())
    assert root.tag == f"{SVG_NS}svg"
    assert root.attrib == {"width": str(SIZE), "height": str(SIZE), "viewBox": f"0 0 {SIZE} {SIZE}"}
    picture: Picture = [[(0, 0, 0)] * SIZE for _ in range(SIZE)]
    painted = [[False] * SIZE for _ in range(SIZE)]
    for shape in root:
        assert shape.tag == f"{SVG_NS}rect", shape.tag
        assert not list(shape) and not (shape.text or "").strip()
        assert set(shape.attrib) <= {"x", "y", "width", "height", "fill"}, shape.attrib
        x, y = int(shape.get("x", "0")), int(shape.get("y", "0"))
        width, height = int(shape.attrib["width"]), int(shape.attrib["height"])
        assert 0 <= x < x + width <= SIZE and 0 <= y < y + height <= SIZE
        for row in range(y, y + height):
            for column in range(x, x + width):
                picture[row][column] = _colour(shape.attrib["fill"])
                painted[row][column] = True
    assert all(all(row) for row in painted), "the rectangles cover the whole square"
    return picture


def png_picture() -> tuple[Picture, int]:
    """The PNG decoded (an indexed image whose rows use no filter), and its bit depth."""
    data = (ICONS / "codescout.png").read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    chunks: list[tuple[bytes, bytes]] = []
    at = 8
    while at < len(data):
        (length,) = struct.unpack(">I", data[at : at + 4])
        kind, body = data[at + 4 : at + 8], data[at + 8 : at + 8 + length]
        (crc,) = struct.unpack(">I", data[at + 8 + length : at + 12 + length])
        assert crc == zlib.crc32(kind + body), kind
        chunks.append((kind, body))
        at += 12 + length
    assert [kind for kind, _ in chunks] == [b"IHDR", b"PLTE", b"IDAT", b"IEND"]
    width, height, depth, colour_type, *methods = struct.unpack(">IIBBBBB", chunks[0][1])
    assert (width, height, colour_type, methods) == (SIZE, SIZE, 3, [0, 0, 0])
    table = chunks[1][1]
    palette = [(table[i], table[i + 1], table[i + 2]) for i in range(0, len(table), 3)]
    pixels = zlib.decompress(chunks[2][1])
    stride = 1 + (SIZE * depth + 7) // 8
    assert len(pixels) == SIZE * stride
    picture: Picture = []
    for row in range(SIZE):
        line = pixels[row * stride : (row + 1) * stride]
        assert line[0] == 0, "rows are stored unfiltered"
        bits = int.from_bytes(line[1:], "big")
        total = (stride - 1) * 8
        indices = [(bits >> (total - depth * (column + 1))) & ((1 << depth) - 1) for column in range(SIZE)]
        picture.append([palette[index] for index in indices])
    return picture, depth


def test_the_png_shows_exactly_what_the_svg_draws() -> None:
    picture, depth = png_picture()
    assert depth in (1, 2, 4, 8)
    assert picture == svg_picture()


def test_the_icons_are_small_enough_to_repeat_in_every_answer() -> None:
    """At 2026-07-28 serverInfo (icons included) is stamped on every result."""
    assert (ICONS / "codescout.svg").stat().st_size <= 400
    assert (ICONS / "codescout.png").stat().st_size <= 200
