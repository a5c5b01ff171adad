"""Shared helpers for the tests: the installed entry point, the vectors, a reference ranking."""

from __future__ import annotations

import functools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from codescout_mcp.ranking import JS_WHITESPACE

ROOT = Path(__file__).resolve().parent.parent
VECTORS_DIR = Path(__file__).resolve().parent / "vectors"
EXAMPLE = ROOT / "examples" / "args.json"
SPEC_KEYS = ["path", "matches", "last_modified_days", "owner", "score", "rank"]

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


def codescout_exe() -> str:
    """The `codescout` console script installed beside the running interpreter."""
    exe = Path(sys.executable).parent / ("codescout.exe" if os.name == "nt" else "codescout")
    if not exe.exists():
        raise RuntimeError(f"codescout is not installed beside {sys.executable}; run pip install -e .[test]")
    return str(exe)


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
        owner = hit.get("owner")
        if owner is not None and owner.strip(JS_WHITESPACE) == "":
            owner = None
        entries.append(
            {
                "path": hit["path"],
                "matches": matches,
                "last_modified_days": days,
                "owner": owner,
                "score": matches * 100 - days,
            }
        )
    entries.sort(key=functools.cmp_to_key(_reference_cmp))
    kept = entries[: int(arguments.get("limit", 10))]
    for position, entry in enumerate(kept, 1):
        entry["rank"] = position
    return {"results": kept, "counts": {"hits": len(arguments["hits"]), "returned": len(kept)}}
