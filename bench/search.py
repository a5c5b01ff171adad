"""search_workspace against the pipeline by hand, in one run.

    python bench/search.py                    # a generated 4,500-file repository with 20,000 commits
    python bench/search.py --repo ~/src/git   # a real checkout (git's own is the size the target is set at)
    python bench/search.py --smoke            # tiny sizes: the script still works

* first search: a fresh server's first search_workspace call (its start included) against
  `rg --json PATTERN | codescout hits | codescout rank --input -` in the same checkout
  (target: at most 1.3x);
* repeat search: the same call on a warm server, against the same pipeline (target 1.3x too).
Both answers are compared first: the bench stops if they differ.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench import CODESCOUT, PipeSession, make_history, report
from codescout_mcp.facts.rg import VCS_FOLDERS, rg_program

# The pipeline docs/workspace.md gives: hidden files searched, version-control folders left out.
FILTERS = " ".join(["--hidden", *(f"--glob '!{name}'" for name in VCS_FOLDERS)])


def search_line(session: PipeSession, pattern: str) -> bytes:
    return session.encode("tools/call", {"name": "search_workspace", "arguments": {"pattern": pattern}})


def pipeline(repo: Path, pattern: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    command = f"'{rg_program()}' --json {FILTERS} -e '{pattern}' | '{CODESCOUT}' hits | '{CODESCOUT}' rank --input -"
    done = subprocess.run(["sh", "-c", command], cwd=repo, capture_output=True, check=True)
    return time.perf_counter() - started, json.loads(done.stdout)


def first_search(repo: Path, pattern: str) -> tuple[float, dict[str, Any]]:
    started = time.perf_counter()
    session = PipeSession("--workspace", str(repo))
    try:
        _, reply = session.round_trip(search_line(session, pattern))
    finally:
        session.close()
    return time.perf_counter() - started, reply["result"]["structuredContent"]


def ranking_of(answer: dict[str, Any]) -> dict[str, Any]:
    return {"results": answer["results"], "counts": answer["counts"]}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: check the script runs")
    parser.add_argument("--repo", type=Path, help="a checkout to search (default: a generated one)")
    parser.add_argument("--pattern", default="needle", help="what to search for (default: needle)")
    parser.add_argument("--rounds", type=int, help="alternating runs (default 5, smoke 1)")
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.smoke else 5)
    with tempfile.TemporaryDirectory(prefix="codescout-bench-") as scratch:
        repo = args.repo
        if repo is None:
            repo = Path(scratch) / "repo"
            files, commits = (40, 100) if args.smoke else (4_500, 20_000)
            make_history(repo, files, commits)
            detail = f"a generated checkout of {files:,} files and {commits:,} commits"
        else:
            detail = str(repo)
        ok = True
        tool: list[float] = []
        by_hand: list[float] = []
        for _ in range(rounds):
            elapsed, answer = first_search(repo, args.pattern)
            tool.append(elapsed)
            elapsed, expected = pipeline(repo, args.pattern)
            by_hand.append(elapsed)
            if ranking_of(answer) != expected:
                raise SystemExit("search_workspace and the pipeline gave different answers")
        ratio = statistics.median(tool) / statistics.median(by_hand)
        ok &= report(
            "search: first call / pipeline by hand",
            ratio,
            1.3,
            f"{statistics.median(tool):.3f} s vs {statistics.median(by_hand):.3f} s, {detail}",
        )
        session = PipeSession("--workspace", str(repo))
        try:
            session.round_trip(search_line(session, args.pattern))  # the history read once
            warm = []
            again = []
            for _ in range(rounds):
                started = time.perf_counter()
                session.round_trip(search_line(session, args.pattern))
                warm.append(time.perf_counter() - started)
                again.append(pipeline(repo, args.pattern)[0])
        finally:
            session.close()
        ratio = statistics.median(warm) / statistics.median(again)
        ok &= report(
            "search: repeat call / pipeline by hand",
            ratio,
            1.3,
            f"{statistics.median(warm):.3f} s vs {statistics.median(again):.3f} s",
        )
    # Smoke runs are too small to judge speed; they only prove the benchmark still works.
    return 0 if args.smoke or ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
