"""rank_workspace_hits against its two baselines, in one run.

    python bench/workspace.py            # a 20,000-commit repository, 1,000 and 100 paths
    python bench/workspace.py --smoke    # tiny sizes: the script still works

* first call: a fresh server's first rank_workspace_hits call with 1,000 paths, against
  `codescout hits` on the same paths (target: at most 1.5x);
* repeat call: rank_workspace_hits with 100 paths on an unchanged checkout, against a
  rank_search_results call of the same size, interleaved on one stdio session (at most 3x).
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench import CODESCOUT, PipeSession, make_history, median_round_trips, report


def workspace_call(session: PipeSession, paths: list[str]) -> bytes:
    hits = [{"path": path, "matches": 1 + i % 7} for i, path in enumerate(paths)]
    return session.encode("tools/call", {"name": "rank_workspace_hits", "arguments": {"hits": hits}})


def first_calls(repo: Path, paths: list[str], rounds: int) -> tuple[list[float], list[float]]:
    """(first rank_workspace_hits call on a fresh server, codescout hits), rounds each, alternating."""
    counts = "".join(f"{path}:{1 + i % 7}\n" for i, path in enumerate(paths)).encode()
    workspace: list[float] = []
    hits: list[float] = []
    for _ in range(rounds):
        session = PipeSession("--workspace", str(repo))
        try:
            elapsed, reply = session.round_trip(workspace_call(session, paths))
        finally:
            session.close()
        if "error" in reply or reply["result"].get("isError"):
            raise SystemExit(f"rank_workspace_hits failed: {reply}")
        if reply["result"]["structuredContent"]["counts"]["hits"] != len(paths):
            raise SystemExit("rank_workspace_hits did not rank every path")
        workspace.append(elapsed)
        start = time.perf_counter()
        subprocess.run([CODESCOUT, "hits"], cwd=repo, input=counts, capture_output=True, check=True)
        hits.append(time.perf_counter() - start)
    return workspace, hits


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--smoke", action="store_true", help="tiny sizes: check the script runs")
    args = parser.parse_args()
    files, commits = (300, 300) if args.smoke else (10_000, 20_000)
    first, repeat = (100, 50) if args.smoke else (1_000, 100)
    rounds = 3 if args.smoke else 5
    with tempfile.TemporaryDirectory(prefix="codescout-bench-") as tmp:
        repo = Path(tmp) / "history"
        names = make_history(repo, files, commits)
        rnd = random.Random(5)
        workspace, hits = first_calls(repo, rnd.sample(names, first), rounds)
        ok = report(
            f"workspace: first call, {first:,} paths / codescout hits",
            statistics.median(workspace) / statistics.median(hits),
            1.5,
            f"{statistics.median(workspace):.3f} s vs {statistics.median(hits):.3f} s, {commits:,} commits",
        )
        session = PipeSession("--workspace", str(repo))
        try:
            sample = rnd.sample(names, repeat)
            plain = [{"path": p, "matches": 1 + i % 7, "last_modified_days": i % 300} for i, p in enumerate(sample)]
            session.round_trip(workspace_call(session, sample))  # the first call reads the history
            m = median_round_trips(
                session,
                {
                    "workspace": lambda: workspace_call(session, sample),
                    "rank": lambda: session.encode(
                        "tools/call", {"name": "rank_search_results", "arguments": {"hits": plain}}
                    ),
                },
                rounds * 40,
            )
        finally:
            session.close()
        ok &= report(
            f"workspace: repeat call, {repeat} paths / rank_search_results",
            m["workspace"] / m["rank"],
            3.0,
            f"{m['workspace'] * 1000:.2f} ms vs {m['rank'] * 1000:.2f} ms",
        )
    return 0 if args.smoke or ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
