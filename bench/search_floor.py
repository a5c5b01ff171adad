"""How close a new process's search can come to `rg -c`: the floor the contract sets, in one run.

    python bench/search_floor.py --repo ~/src/rails --pattern belongs_to
    python bench/search_floor.py --smoke        # a small generated repository: the script still works

A search's answer needs two things from ripgrep: the match counts of `rg --json` (what `codescout
hits` reads) and `files_searched`, how many files `rg --files` lists with the same filters
(ripgrep's JSON summary counts only the files that matched). Against the baseline of issue 45's
warm target (`rg -c PATTERN` with the search's filters, plus `codescout --version`), in
alternating runs (medians), this times:

* floor: a bare Python (`-S`, no package imported) that starts those two ripgreps at once and
  counts what they print, and nothing else: no git, no vetting of ignore files, no ranking;
* json only: the same with `rg --json` alone (what the floor would be without files_searched);
* warm search: `codescout search PATTERN` in a new process whose cache folder an earlier search
  filled.

The target is 1.5x for the warm search; the floor shows how much of it the two ripgreps leave.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench.bench import CODESCOUT, PYTHON, compile_package, make_history, report
from codescout_mcp.facts.rg import VCS_FOLDERS, rg_program

RG_FILTERS = ["--hidden", *(f"--glob=!{name}" for name in VCS_FOLDERS)]

# The floor: both ripgreps at once (only `rg --json` when the first argument is "json"), their
# output read and counted, in a Python that imports nothing of ours.
_FLOOR = """
import json, subprocess, sys, threading
which, rg, pattern, *filters = sys.argv[1:]
listed = []
if which == "both":
    files = subprocess.Popen([rg, "--no-config", "--files", "--null", *filters], stdout=subprocess.PIPE)
    reader = threading.Thread(target=lambda: listed.append(files.stdout.read().count(b"\\0")))
    reader.start()
search = subprocess.Popen([rg, "--no-config", "--json", *filters, "-e", pattern], stdout=subprocess.PIPE)
counts = {}
for line in search.stdout:
    if line.startswith(b'{"type":"match"'):
        data = json.loads(line)["data"]
        path = data["path"].get("text")
        counts[path] = counts.get(path, 0) + (len(data["submatches"]) or 1)
search.wait()
if which == "both":
    reader.join()
    files.wait()
print(len(counts), listed)
"""


def timed(argv: list[str], cwd: Path, env: dict[str, str] | None = None) -> float:
    started = time.perf_counter()
    done = subprocess.run(argv, cwd=cwd, env=env, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, check=False)
    elapsed = time.perf_counter() - started
    if done.returncode not in (0, 1):
        raise SystemExit(f"{argv[:3]} failed ({done.returncode}): {done.stderr.decode(errors='replace')}")
    return elapsed


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--smoke", action="store_true", help="a small generated repository and one round")
    parser.add_argument("--repo", type=Path, help="the checkout to search (default: a generated one)")
    parser.add_argument("--pattern", default="needle", help="what to search for (default: needle)")
    parser.add_argument("--rounds", type=int, help="alternating runs (default 15, smoke 1)")
    args = parser.parse_args()
    rounds = args.rounds or (1 if args.smoke else 15)
    compile_package()
    rg = rg_program()
    with tempfile.TemporaryDirectory(prefix="codescout-floor-") as scratch:
        repo = args.repo
        if repo is None:
            repo = Path(scratch) / "repo"
            make_history(repo, files=50 if args.smoke else 5_000, commits=100 if args.smoke else 2_000)
        repo = repo.resolve()
        env = {**os.environ, "CODESCOUT_CACHE_DIR": str(Path(scratch) / "cache")}
        search = [CODESCOUT, "search", args.pattern, "--workspace", str(repo)]
        timed(search, repo, env)  # (fills the cache: every later search is a warm one)
        cases: dict[str, list[float]] = {"baseline": [], "floor": [], "json only": [], "warm search": []}
        for _ in range(rounds):
            cases["baseline"].append(
                timed([rg, "-c", *RG_FILTERS, "-e", args.pattern], repo) + timed([CODESCOUT, "--version"], repo)
            )
            for name, which in (("floor", "both"), ("json only", "json")):
                cases[name].append(timed([PYTHON, "-S", "-c", _FLOOR, which, rg, args.pattern, *RG_FILTERS], repo))
            cases["warm search"].append(timed(search, repo, env))
    median = {name: statistics.median(times) for name, times in cases.items()}
    base = median["baseline"]
    print(f"{repo}: `{args.pattern}`; medians of {rounds}; baseline (rg -c + codescout --version) {base:.3f} s")
    details = {
        "floor": "a bare Python running rg --json and rg --files at once",
        "json only": "the same with rg --json alone",
        "warm search": "codescout search in a new process, cache filled",
    }
    for name, detail in details.items():
        report(f"floor {name} / rg -c + start", median[name] / base, 1.5, f"{median[name]:.3f} s; {detail}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
