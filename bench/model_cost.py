"""What "find the files about X" costs a model, three ways, in one run (tokens: OpenAI's o200k_base).

    python bench/model_cost.py            # 10 and 1,000 matching files
    python bench/model_cost.py --smoke    # tiny sizes: the script still works

The three ways, each on the same generated checkout and through one real stdio session of
`codescout-mcp --workspace`:

* search: one `search_workspace` call; the model writes its arguments and reads the answer;
* workspace: the model runs a search of its own (it reads the file list a host's grep tool
  gives, `path:count` a line), then writes a `rank_workspace_hits` call with every file and
  reads the answer;
* rank: the same search, then a `rank_search_results` call with every file's age written out
  too (what the model would have had to find out elsewhere is not counted).

Written tokens are the dear kind (output, and generation time); read ones are input. Each
figure is a ratio against the search way's, measured in the same run. Every turn also pays for
the tools' definitions, reported once (each tool as Claude Code sends it to its model).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench import PipeSession, report
from codescout_mcp.answers import catalog
from codescout_mcp.answers.protocol import WORKSPACE_INSTRUCTIONS


def make_checkout(root: Path, matching: int) -> list[str]:
    """A repository of `matching` files that hold the word, and as many that do not."""
    subprocess.run(["git", "init", "-q", "-b", "main", str(root)], check=True)
    names = [f"src/pkg_{n % 37:02d}/handler_{n:05d}.py" for n in range(matching)]
    for n, name in enumerate(names):
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("def parse_config():\n    pass\n" * (1 + n % 5), encoding="utf-8")
    for n in range(matching):
        other = root / "lib" / f"other_{n:05d}.py"
        other.parent.mkdir(parents=True, exist_ok=True)
        other.write_text("x = 1\n", encoding="utf-8")
    subprocess.run(["git", "-C", str(root), "add", "-A"], check=True)
    subprocess.run(
        ["git", "-C", str(root), "-c", "user.name=b", "-c", "user.email=b@e", "commit", "-q", "-m", "start"],
        check=True,
        env={
            "GIT_COMMITTER_DATE": "2026-01-01T00:00:00Z",
            "GIT_AUTHOR_DATE": "2026-01-01T00:00:00Z",
            "PATH": "/usr/bin:/bin",
        },
    )
    return names


class Counter:
    """Token counts from js-tiktoken (the Node tools of the suite, installed once into .cache/)."""

    def __init__(self) -> None:
        from tests.nodetools import install

        tools = install()
        self.argv = tools.script("tokens.mjs")
        self.env = tools.env()

    def tokens(self, *texts: str) -> list[int]:
        data = "".join(json.dumps(text) + "\n" for text in texts)
        done = subprocess.run(self.argv, input=data, capture_output=True, text=True, env=self.env, check=True)
        return [int(line) for line in done.stdout.split()]


def call(session: PipeSession, tool: str, arguments: dict[str, Any]) -> tuple[str, str]:
    """(the arguments as the model writes them, the answer's text as the model reads it)."""
    written = json.dumps(arguments, separators=(",", ":"))
    reply = session.request("tools/call", {"name": tool, "arguments": arguments})
    result = reply["result"]
    if result.get("isError"):
        raise SystemExit(f"{tool}: {result['content'][0]['text']}")
    return written, result["content"][0]["text"]


def ways(repo: Path, names: list[str]) -> dict[str, tuple[str, str]]:
    """Each way's (what the model writes, what it reads)."""
    session = PipeSession("--workspace", str(repo))
    try:
        search = call(session, "search_workspace", {"pattern": "parse_config"})
        counts = {name: 2 * (1 + n % 5) for n, name in enumerate(names)}
        grep = "".join(f"{name}:{count}\n" for name, count in counts.items())  # what its own search shows
        hits = [{"path": name, "matches": count} for name, count in counts.items()]
        workspace = call(session, "rank_workspace_hits", {"hits": hits})
        ages = json.loads(workspace[1])  # the ages the model would have had to find elsewhere
        days = {entry["path"]: entry["last_modified_days"] for entry in ages["results"]}
        full = [{**hit, "last_modified_days": days.get(hit["path"], 330)} for hit in hits]
        rank = call(session, "rank_search_results", {"hits": full})
    finally:
        session.close()
    return {"search": search, "workspace": (workspace[0], grep + workspace[1]), "rank": (rank[0], grep + rank[1])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: check the script runs")
    args = parser.parse_args()
    counter = Counter()
    definitions = [
        json.dumps(
            {
                "name": f"mcp__codescout__{tool['name']}",
                "description": tool["description"],
                "input_schema": tool["inputSchema"],
            },
            separators=(",", ":"),
        )
        for tool in (catalog.RANK_TOOL, catalog.WORKSPACE_TOOL, catalog.SEARCH_TOOL)
    ]
    per_turn = counter.tokens(*definitions, WORKSPACE_INSTRUCTIONS)
    print(
        "every turn: definitions "
        + ", ".join(
            f"{tool['name']} {n} tokens"
            for tool, n in zip((catalog.RANK_TOOL, catalog.WORKSPACE_TOOL, catalog.SEARCH_TOOL), per_turn, strict=False)
        )
        + f"; instructions {per_turn[-1]} tokens"
    )
    ok = True
    for matching in (3, 30) if args.smoke else (10, 1_000):
        with tempfile.TemporaryDirectory(prefix="codescout-bench-") as scratch:
            repo = Path(scratch) / "repo"
            names = make_checkout(repo, matching)
            found = ways(repo, names)
        counted = {way: counter.tokens(written, read) for way, (written, read) in found.items()}
        written, read = counted["search"]
        print(f"{matching:,} files, search_workspace: writes {written} tokens, reads {read}")
        for way, tool in (("workspace", "rank_workspace_hits"), ("rank", "rank_search_results")):
            their_written, their_read = counted[way]
            print(f"{matching:,} files, {tool}: writes {their_written} tokens, reads {their_read}")
            # The search way must cost the model no more than either other way.
            ok &= report(
                f"{matching:,} files: search tokens written / {tool}'s", written / their_written, 1.0, "output tokens"
            )
            ok &= report(f"{matching:,} files: search tokens read / {tool}'s", read / their_read, 1.0, "input tokens")
    return 0 if args.smoke or ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
