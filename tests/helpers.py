"""Shared helpers for the tests: the installed entry points, the vectors, independent oracles.

The oracles here (`reference_rank`, `reference_verdict`) are written from SPEC.md alone and
import nothing from the package, so that a mistake in the package cannot hide in them.
"""

from __future__ import annotations

import base64
import contextlib
import functools
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
VECTORS_DIR = Path(__file__).resolve().parent / "vectors"
EXAMPLE = ROOT / "examples" / "args.json"
SPEC_KEYS = ["path", "matches", "last_modified_days", "owner", "score", "rank"]
BIN = Path(sys.executable).parent

# What examples/args.json (the brief's worked example) must rank to, pinned by hand.
EXAMPLE_RESULT = {
    "results": [
        {
            "path": "src/search/rank.ts",
            "matches": 14,
            "last_modified_days": 2,
            "owner": "alice",
            "score": 1398,
            "rank": 1,
        },
        {
            "path": "src/search/tokenize.ts",
            "matches": 9,
            "last_modified_days": 30,
            "owner": "bob",
            "score": 870,
            "rank": 2,
        },
    ],
    "counts": {"hits": 3, "returned": 2},
}


@contextlib.contextmanager
def busy_machine(processes: int, *, seconds: float, settle: float = 0.0) -> Iterator[None]:
    """`processes` interpreters spinning on the cores while the block runs (none for 0), each for
    at most `seconds`; the block starts `settle` seconds after them."""
    spin = f"import time\nend = time.time() + {seconds}\nwhile time.time() < end: pass"
    loops = [subprocess.Popen([sys.executable, "-c", spin]) for _ in range(processes)]
    time.sleep(settle)
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def installed(name: str) -> str:
    """A console script installed beside the running interpreter."""
    exe = BIN / (f"{name}.exe" if os.name == "nt" else name)
    if not exe.exists():
        raise RuntimeError(f"{name} is not installed beside {sys.executable}; run pip install -e .[test]")
    return str(exe)


def codescout_exe() -> str:
    """The `codescout` console script installed beside the running interpreter."""
    return installed("codescout")


def run_cli(*args: str, stdin: bytes | None = None, timeout: float = 60) -> subprocess.CompletedProcess[bytes]:
    """Run the installed `codescout` with arguments; capture bytes."""
    return subprocess.run([codescout_exe(), *args], input=stdin, capture_output=True, timeout=timeout, check=False)


def load_vectors() -> list[dict[str, Any]]:
    """Every conformance vector, in file order."""
    return [json.loads(p.read_text(encoding="utf-8")) for p in sorted(VECTORS_DIR.glob("*.json"))]


def applies(vector: dict[str, Any], front: str) -> bool:
    """Whether a vector is meant for a front (api, cli, mcp)."""
    fronts: list[str] = vector.get("fronts", ["api", "cli", "mcp"])
    return front in fronts


def as_json(value: Any) -> str:
    """Canonical text for comparing results: key order and int-vs-float both count."""
    return json.dumps(value, ensure_ascii=False)


def project_urls() -> dict[str, str]:
    """pyproject.toml's [project.urls]."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    with open(ROOT / "pyproject.toml", "rb") as handle:
        urls: dict[str, str] = tomllib.load(handle)["project"]["urls"]
    return urls


def data_uri(name: str, mime_type: str) -> str:
    """One of the package's icons (codescout_mcp/icons/) as a base64 data: URI."""
    data = (ROOT / "codescout_mcp" / "icons" / name).read_bytes()
    return f"data:{mime_type};base64,{base64.b64encode(data).decode('ascii')}"


def server_info_on_the_wire() -> dict[str, Any]:
    """`serverInfo` as the server must send it: who it is, its homepage, its icons."""
    from codescout_mcp import __version__

    return {
        "name": "codescout",
        "title": "codescout",
        "version": __version__,
        "description": "Ranks code-search hits by matches and recency.",
        "websiteUrl": project_urls()["Homepage"],
        "icons": [
            {"src": data_uri("codescout.svg", "image/svg+xml"), "mimeType": "image/svg+xml", "sizes": ["any"]},
            {"src": data_uri("codescout.png", "image/png"), "mimeType": "image/png", "sizes": ["64x64"]},
        ],
    }


# --- independent oracles --------------------------------------------------------------------

# ECMAScript's WhiteSpace and LineTerminator code points (ECMA-262, String.prototype.trim),
# listed by number here rather than taken from the package.
ECMASCRIPT_TRIMMED = frozenset(
    chr(c)
    for c in (
        0x09, 0x0A, 0x0B, 0x0C, 0x0D, 0x20, 0xA0, 0x1680,
        *range(0x2000, 0x200B),
        0x2028, 0x2029, 0x202F, 0x205F, 0x3000, 0xFEFF,
    )
)  # fmt: skip


def _owner(value: object) -> str | None:
    if isinstance(value, str) and any(ch not in ECMASCRIPT_TRIMMED for ch in value):
        return value
    return None


def _utf16_cmp(a: str, b: str) -> int:
    ea = a.encode("utf-16-be", "surrogatepass")
    eb = b.encode("utf-16-be", "surrogatepass")
    return (ea > eb) - (ea < eb)


def _reference_cmp(x: dict[str, Any], y: dict[str, Any]) -> int:
    for field, sign in (("score", -1), ("matches", -1), ("last_modified_days", 1)):
        if x[field] != y[field]:
            return sign if x[field] > y[field] else -sign
    return _utf16_cmp(x["path"], y["path"])


def reference_rank(arguments: dict[str, Any]) -> dict[str, Any]:
    """A slow, obviously-correct reading of SPEC: full sort by a comparator, then cut."""
    entries = []
    for hit in arguments["hits"]:
        matches = int(hit["matches"])
        days = int(hit["last_modified_days"])
        entries.append(
            {
                "path": hit["path"],
                "matches": matches,
                "last_modified_days": days,
                "owner": _owner(hit.get("owner")),
                "score": matches * 100 - days,
            }
        )
    entries.sort(key=functools.cmp_to_key(_reference_cmp))
    kept = entries[: int(arguments.get("limit", 10))]
    for position, entry in enumerate(kept, 1):
        entry["rank"] = position
    return {"results": kept, "counts": {"hits": len(arguments["hits"]), "returned": len(kept)}}


def _is_integer(value: object, low: int) -> bool:
    """SPEC's integer: an int of at most 4000 digits, or an integral double up to 2**53."""
    if type(value) is int:
        return low <= value < 10**4000  # 4000 digits at most
    if type(value) is float:
        return value == value and value.is_integer() and abs(value) <= 2**53 and value >= low
    return False


def reference_verdict(arguments: Any) -> bool:
    """Whether plain arguments keep every rule of SPEC.md (written from the spec alone)."""
    if type(arguments) is not dict or "hits" not in arguments:
        return False
    if "limit" in arguments and not _is_integer(arguments["limit"], 1):
        return False
    hits = arguments["hits"]
    if type(hits) is not list or not hits:
        return False
    seen: list[str] = []
    for hit in hits:
        if type(hit) is not dict:
            return False
        path = hit.get("path")
        if type(path) is not str or path == "" or path in seen:
            return False
        seen.append(path)
        if "matches" not in hit or not _is_integer(hit["matches"], 1):
            return False
        if "last_modified_days" not in hit or not _is_integer(hit["last_modified_days"], 0):
            return False
        if "owner" in hit and type(hit["owner"]) is not str:
            return False
    return True
