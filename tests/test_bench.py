"""The benchmark script still runs (at a tiny size: speed is judged by bench/, not by tests)."""

from __future__ import annotations

import subprocess
import sys

from tests.helpers import ROOT


def test_benchmark_smoke_run_prints_every_ratio() -> None:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / "bench.py"), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    for label in (
        "cold start",
        "rank time / json.load time",
        "rank peak RSS / json.load peak",
        "100-hit tools/call / ping",
        "call / same bytes rejected",
        "HTTP 100-hit tools/call",
        "req/s",
        "hits: 200 files, 300 commits",
    ):
        assert label in done.stdout
