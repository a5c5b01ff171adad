"""Every conformance vector through the Python API and through the installed CLI."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp import InvalidArguments, rank
from tests.helpers import SPEC_KEYS, applies, as_json, load_vectors, run_cli

VECTORS = load_vectors()


def test_there_are_enough_vectors_covering_both_outcomes() -> None:
    assert len(VECTORS) >= 40
    assert sum("error" in v for v in VECTORS) >= 20
    assert sum("expected" in v for v in VECTORS) >= 20
    names = [v["name"] for v in VECTORS]
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("vector", [v for v in VECTORS if applies(v, "api")], ids=lambda v: v["name"])
def test_vector_through_python_api(vector: dict[str, Any]) -> None:
    if "error" in vector:
        with pytest.raises(InvalidArguments) as caught:
            rank(vector["arguments"])
        assert caught.value.location == vector["error"]["location"]
        assert caught.value.message == vector["error"]["message"]
    else:
        result = rank(vector["arguments"])
        assert as_json(result) == as_json(vector["expected"])
        assert all(list(entry) == SPEC_KEYS for entry in result["results"])


@pytest.mark.parametrize("vector", [v for v in VECTORS if applies(v, "cli")], ids=lambda v: v["name"])
def test_vector_through_cli(vector: dict[str, Any], tmp_path: Path) -> None:
    args_file = tmp_path / "args.json"
    args_file.write_text(json.dumps(vector["arguments"]), encoding="utf-8")
    done = run_cli("rank", "--input", str(args_file))
    if "error" in vector:
        error = vector["error"]
        assert (done.returncode, done.stdout) == (1, b"")
        assert done.stderr.decode("utf-8") == f"codescout: {error['location']}: {error['message']}\n"
    else:
        assert (done.returncode, done.stderr) == (0, b"")
        assert done.stdout.decode("utf-8") == pretty(vector["expected"])
        assert json.loads(done.stdout) == vector["expected"]


def pretty(value: dict[str, Any]) -> str:
    """The CLI's output: indented, non-ASCII as is, a lone surrogate (no UTF-8 for it) escaped."""
    text = json.dumps(value, ensure_ascii=False, indent=2) + "\n"
    return re.sub("[\ud800-\udfff]", lambda found: f"\\u{ord(found.group()):04x}", text)
