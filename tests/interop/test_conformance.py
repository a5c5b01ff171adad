"""The official MCP conformance suite against `codescout mcp --transport streamable-http`.

Both protocol eras: the 2025-11-25 requirement set (initialize handshake) and the
2026-07-28 set (stateless, per-request envelope). Each run must leave no failing check
outside its baseline, and no baseline entry may have started passing (the suite reports
such an entry as stale, which fails the run too).
"""

from __future__ import annotations

import json
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.helpers import ROOT
from tests.httpserver import RunningServer, serving
from tests.nodetools import NodeTools

ERAS = ["2025-11-25", "2026-07-28"]


@pytest.fixture(scope="module")
def server() -> Iterator[RunningServer]:
    yield from serving()


@pytest.mark.parametrize("era", ERAS)
def test_conformance_suite_passes_all_but_the_baselined_checks(
    node_tools: NodeTools, server: RunningServer, era: str, tmp_path: Path
) -> None:
    baseline = ROOT / "tests" / "conformance" / f"baseline-{era}.yml"
    done = subprocess.run(
        [
            *node_tools.command("conformance"),
            "server",
            "--url",
            server.url,
            "--requirements",
            era,
            "--expected-failures",
            str(baseline),
            "-o",
            str(tmp_path),
        ],
        capture_output=True,
        text=True,
        env=node_tools.env(),
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert "Baseline check passed" in done.stdout
    counts = {"SUCCESS": 0, "FAILURE": 0, "WARNING": 0}
    for checks in tmp_path.glob("*/checks.json"):
        for check in json.loads(checks.read_text(encoding="utf-8")):
            if check.get("status") in counts:
                counts[check["status"]] += 1
    baselined = sum(1 for line in baseline.read_text(encoding="utf-8").splitlines() if line.startswith("  - "))
    print(
        f"conformance {era}: {counts['SUCCESS']} checks passed, {counts['FAILURE'] + counts['WARNING']} "
        f"failed or warned, all expected (baseline: {baselined} entries)"
    )
    # The suite's verdict above is the test; this guards against a run that checked little.
    assert counts["SUCCESS"] >= 30
