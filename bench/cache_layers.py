"""What each of the workspace's caches is worth: a repeat rank_workspace_hits call with one layer
dropped before it, against the same call with every layer kept, in one process, interleaved.

    python bench/cache_layers.py --repo /path/to/a/checkout   # 100 tracked paths of it
    python bench/cache_layers.py --smoke                      # a small generated history

The layers, each dropped alone: the index and status snapshot with the stat data of the files
judged against it (`RepositoryFacts._forget`); the history walk kept for HEAD (read again from
the user's cache folder); the parsed CODEOWNERS; what the checkout knows of folders without
`.git` and of path prefixes; and everything at once (a new `Workspace`). Each line is
median(call with the layer dropped) / median(call with all kept): a layer whose ratio is near 1
does not earn its keep on that repository.
"""

from __future__ import annotations

import argparse
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench import make_history
from codescout_mcp.tools.workspace import Workspace, WorkspaceTool


def repositories(tool: WorkspaceTool) -> list[object]:
    checkout = tool.workspace._checkout
    assert checkout is not None
    return [facts for facts in checkout._repositories.values() if facts is not None]


def drop_snapshot(tool: WorkspaceTool) -> WorkspaceTool:
    for facts in repositories(tool):
        facts._forget()  # type: ignore[attr-defined]
    return tool


def drop_history(tool: WorkspaceTool) -> WorkspaceTool:
    for facts in repositories(tool):
        facts._history = None  # type: ignore[attr-defined]
    return tool


def drop_owners(tool: WorkspaceTool) -> WorkspaceTool:
    for facts in repositories(tool):
        facts._owners = None  # type: ignore[attr-defined]
        facts._owners_signature = None  # type: ignore[attr-defined]
    return tool


def drop_folders(tool: WorkspaceTool) -> WorkspaceTool:
    checkout = tool.workspace._checkout
    assert checkout is not None
    checkout._without_git.clear()
    checkout._prefixes.clear()
    return tool


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repo", type=Path, help="a checkout to measure (default: a generated history)")
    parser.add_argument("--paths", type=int, default=100, help="tracked paths in the call (default 100)")
    parser.add_argument("--rounds", type=int, default=15, help="rounds, each layer against the kept (default 15)")
    parser.add_argument("--smoke", action="store_true", help="a small generated history, 3 rounds")
    options = parser.parse_args()
    rounds = 3 if options.smoke else options.rounds
    with tempfile.TemporaryDirectory() as scratch:
        repo = options.repo
        if repo is None:
            repo = Path(scratch) / "repo"
            make_history(repo, commits=200 if options.smoke else 5_000, files=300 if options.smoke else 2_000)
        listed = subprocess.run(["git", "-C", str(repo), "ls-files"], capture_output=True, text=True, check=True)
        tracked = listed.stdout.splitlines()
        paths = random.Random(7).sample(tracked, min(options.paths, len(tracked)))
        arguments = {"hits": [{"path": path, "matches": 1 + i % 7} for i, path in enumerate(paths)]}
        kept = WorkspaceTool(Workspace(str(repo.resolve())))
        first = kept.call(arguments)
        assert first is not None and not first["isError"], first

        def keep(tool: WorkspaceTool) -> WorkspaceTool:
            return tool

        def fresh(_: WorkspaceTool) -> WorkspaceTool:
            return WorkspaceTool(Workspace(str(repo.resolve())))

        layers: dict[str, Callable[[WorkspaceTool], WorkspaceTool]] = {
            "index and status snapshot": drop_snapshot,
            "history kept for HEAD": drop_history,
            "parsed CODEOWNERS": drop_owners,
            "folders without .git, prefixes": drop_folders,
            "everything (a new Workspace)": fresh,
        }
        print(f"{repo}: {len(paths)} paths, medians of {rounds}")
        for name, drop in layers.items():
            with_all: list[float] = []
            without: list[float] = []
            for _ in range(rounds):
                for times, tool_of in ((with_all, keep), (without, drop)):
                    tool = tool_of(kept)  # (the layer dropped just before the call, not before the round)
                    start = time.perf_counter()
                    answer = tool.call(arguments)
                    times.append(time.perf_counter() - start)
                    assert answer == first, f"dropping the {name} changed the answer"
            kept_ms, without_ms = statistics.median(with_all) * 1000, statistics.median(without) * 1000
            print(f"  {name:<32} {without_ms:8.1f} ms against {kept_ms:6.1f} ms kept: {without_ms / kept_ms:6.2f}x")
    return 0


if __name__ == "__main__":
    sys.exit(main())
