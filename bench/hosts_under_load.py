"""`codex exec` and `claude -p` on a busy machine, ten turns each (the suite runs two).

    python bench/hosts_under_load.py           # ten turns of each host
    python bench/hosts_under_load.py --runs 3

Each turn is one test of tests/interop/test_hosts_under_load.py: two busy processes load the cores,
then the host runs one turn against the scripted model endpoint and must offer codescout's
tool in its first request (Codex) or start with codescout `connected` (Claude Code), and make
one real call. Reported: per host, how many turns passed. One turn at a time: the turns
measure what the load does, so they do not run beside each other.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
HOSTS = {"codex_exec": "codex exec offered the tool", "claude_p": "claude -p started connected"}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--runs", type=int, default=10, help="turns of each host (default 10)")
    args = parser.parse_args()
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "-n0", "-q", "-rA", "tests/interop/test_hosts_under_load.py"],
        cwd=ROOT,
        env={**os.environ, "CODESCOUT_HOST_RUNS": str(args.runs)},
        capture_output=True,
        text=True,
        check=False,
    )
    passed: collections.Counter[str] = collections.Counter()
    ran: collections.Counter[str] = collections.Counter()
    for line in done.stdout.splitlines():
        outcome = re.match(r"(PASSED|FAILED|ERROR) \S+::test_(codex_exec|claude_p)_", line)
        if outcome:
            ran[outcome.group(2)] += 1
            passed[outcome.group(2)] += outcome.group(1) == "PASSED"
    for host, words in HOSTS.items():
        print(f"{words}, and called it: {passed[host]} of {ran[host]} turns (load: 2 busy processes)")
    if not ran:
        print(done.stdout[-3000:] + done.stderr[-3000:])
    return 0 if ran and passed == ran else 1


if __name__ == "__main__":
    raise SystemExit(main())
