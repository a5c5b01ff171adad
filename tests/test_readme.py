"""The README stays true: its commands, its JSON and its Python run as written."""

from __future__ import annotations

import contextlib
import io
import json
import re

from codescout_mcp import rank
from tests.helpers import ROOT

README = (ROOT / "README.md").read_text(encoding="utf-8")


def blocks(language: str) -> list[str]:
    return re.findall(rf"```{language}\n(.*?)```", README, flags=re.DOTALL)


def test_ci_runs_exactly_the_readme_test_command() -> None:
    ci = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    command = re.search(r"^test_command='(.*)'$", ci, flags=re.MULTILINE)
    assert command is not None
    assert any(block.strip() == command.group(1) for block in blocks("sh"))


def test_every_json_block_parses() -> None:
    found = blocks("json")
    assert len(found) >= 5
    for block in found:
        json.loads(block)


def test_readme_example_input_gives_the_readme_example_output() -> None:
    inputs = [json.loads(b) for b in blocks("json") if '"hits"' in b and '"results"' not in b]
    outputs = [json.loads(b) for b in blocks("json") if '"results"' in b]
    assert rank(inputs[0]) == outputs[0]
    assert inputs[0] == json.loads((ROOT / "examples" / "args.json").read_text(encoding="utf-8"))


def test_python_example_runs_and_prints_what_it_says() -> None:
    (source,) = blocks("python")
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        exec(compile(source, "README.md", "exec"), {})
    assert printed.getvalue().splitlines() == ["195", "hits expected a non-empty array, got an empty array"]


def test_readme_carries_the_registry_name_marker() -> None:
    server = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
    assert f"mcp-name: {server['name']}" in README
