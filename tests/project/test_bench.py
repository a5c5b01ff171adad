"""The benchmark scripts still run and still measure (at tiny sizes: speed is judged by bench/)."""

from __future__ import annotations

import math
import re
import subprocess
import sys

from tests.helpers import ROOT
from tests.platforms import FAKE_GIT, PROC, linux_only, posix_only

RATIO = re.compile(r"^(?P<label>.+?)\s+(?P<ratio>\d+\.\d+)x\s+\(target <= (?P<target>\d+(\.\d+)?)x, (ok|OVER TARGET)\)")


def smoke(script: str) -> str:
    done = subprocess.run(
        [sys.executable, str(ROOT / "bench" / script), "--smoke"],
        capture_output=True,
        text=True,
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done.stdout


def ratios(output: str) -> dict[str, float]:
    found = {}
    for line in output.splitlines():
        match = RATIO.match(line)
        if match:
            value = float(match.group("ratio"))
            assert math.isfinite(value) and value > 0, line
            found[match.group("label")] = value
    return found


@posix_only("bench.py measures each child's peak memory with os.wait4")
@posix_only(FAKE_GIT)
def test_bench_smoke_measures_every_ratio() -> None:
    output = smoke("bench.py")
    measured = ratios(output)
    assert set(measured) == {
        "cold start: rank example / python -c 'import json'",
        *(
            f"{label}: {request}{ratio}"
            for label in ("stdio start", "stdio start, loaded")
            for request in ("Codex tools/list", "Claude Code server/discover", "Gemini CLI initialize")
            for ratio in (" / SDK import", ", older pydantic / newest")
        ),
        "2,000 hits: rank time / json.load time",
        "2,000 hits: rank peak RSS / json.load peak",
        "2,000 hits: rank time / Node reference time",
        "MCP stdio: 100-hit tools/call / ping",
        "MCP stdio: 1,000-hit call / same bytes rejected",
        "hits, 10 recent files / whole git log",
        "hits, 10 recent + ignored + .git/ / whole git log",
    }
    assert re.search(r"mcp-server-time initialize\s+\d+ ms", output), output
    assert re.search(
        r"HTTP 100-hit tools/call\s+4 clients x 5:\s+\d+ req/s, p50\s+[\d.]+ ms, p99\s+[\d.]+ ms \(20 requests\)",
        output,
    )
    hits_lines = [line for line in output.splitlines() if line.startswith("hits: ")]
    assert [line.split("  ")[0] for line in hits_lines] == [
        "hits: 200 files, 300 commits",
        "hits: 100 files, 50 merges",
    ]
    assert all("git runs: config, rev-parse, config, ls-files, status, rev-parse, log" in line for line in hits_lines)


def test_workspace_bench_smoke_measures_both_ratios() -> None:
    measured = ratios(smoke("workspace.py"))
    assert set(measured) == {
        "workspace: first call, 100 paths / codescout hits",
        "workspace: repeat call, 50 paths / rank_search_results",
    }


@posix_only("the pipeline by hand runs through sh")
def test_search_bench_smoke_measures_both_ratios() -> None:
    measured = ratios(smoke("search.py"))
    assert set(measured) == {"search: first call / pipeline by hand", "search: repeat call / pipeline by hand"}


def test_search_floor_bench_smoke_measures_every_case() -> None:
    measured = ratios(smoke("search_floor.py"))
    assert set(measured) == {f"floor {name} / rg -c + start" for name in ("floor", "json only", "warm search")}


def test_history_bench_smoke_measures_every_case() -> None:
    output = smoke("history.py")
    measured = ratios(output)
    assert set(measured) == {
        f"history {case}: {search}{baseline}"
        for case, baseline in (
            ("cold", " / git log + start"),
            ("warm", " / rg -c + start"),
            ("after 100 commits", " / rg -c + start"),
            ("server", ", first call / repeat"),
        )
        for search in ("recent files", "old file")
    }
    assert "first-parent commits 300 (git rev-list --count --first-parent HEAD); files tracked 50;" in output, output
    assert "after 100 new commits: 400 first-parent commits; cold answers recent files changed" in output, output
    # The old file's walk is kept: a new process on the same HEAD walks nothing, after the update only the new commits.
    assert re.search(r"^history warm: old file / .*; walked 0 commits$", output, re.M), output
    assert re.search(r"^history after 100 commits: old file / .*; walked 100 commits$", output, re.M), output
    assert re.search(r"^answers: \d+ compared .*, all the same$", output, re.M), output


def test_model_cost_bench_smoke_measures_the_three_ways() -> None:
    output = smoke("model_cost.py")
    measured = ratios(output)
    assert set(measured) == {
        f"{size} files: search tokens {kind} / {tool}'s"
        for size in (3, 30)
        for kind in ("written", "read")
        for tool in ("rank_workspace_hits", "rank_search_results")
    }
    assert re.search(r"every turn: definitions rank_search_results \d+ tokens, rank_workspace_hits \d+ tokens", output)


@linux_only(PROC)
def test_line_bench_smoke_measures_the_waiting_line() -> None:
    output = smoke("line.py")
    assert set(ratios(output)) == {"200 waiting: peak RSS / formula"}
    assert re.search(r"200 requests of [\d,]+ bytes waiting: \d+ MiB -> \d+ MiB, [\d.]+ KiB each", output), output


@linux_only(PROC)
def test_soak_smoke_reports_its_figures() -> None:
    output = smoke("soak.py")
    assert re.search(r"with slow clients: \d+ served \(0 not\)", output), output
    assert re.search(r"slow connections still open \d+ s after they began: 0 of \d+", output), output
    # More clients than --max-concurrent: the fifth waits its turn instead of being refused.
    assert re.search(r"first attempts, both waves: \{200: 10\}", output), output
    assert "served without a retry: 10 of 10 calls (100%)" in output, output
    assert re.search(r"one call of [\d.]+ MiB alone: 200, [\d.]+ MiB of memory per MiB of body", output), output
    # Every attempt answered 200 or 503 (none lost or reset), and every call served in the end.
    assert re.search(r"every attempt: \{200: 10\}; lost or reset: 0", output), output
    assert "served in the end: 10 of 10 calls" in output, output
    assert re.search(r"peak \d+ MiB; formula \d+ MiB \(under\), 1.5 GiB \(under\)", output), output
    phase_3 = r"phase 3: {} calls? .*\n  answers: \{{200: {}\}}\n  server peak RSS \d+ MiB; formula \d+ MiB \(under\)"
    assert re.search(phase_3.format(1, 1), output), output
    assert re.search(phase_3.format("[45]", "[45]"), output), output


@linux_only(PROC)
def test_search_memory_smoke_reports_every_workspace_on_both_transports() -> None:
    output = smoke("search_memory.py")
    assert re.search(r"load average \d+\.\d\d \d+\.\d\d \d+\.\d\d at start", output), output
    lines = re.findall(
        r"^(\S+)\s+(stdio|http)\s+peak\s+([\d,]+) MiB \|.*\| (\d+) results, (\d+) tool errors, "
        r"(\d+) JSON-RPC errors, (\d+) missing",
        output,
        re.M,
    )
    cases = [(workspace, transport) for workspace, transport, *_ in lines]
    assert cases == [
        (workspace, transport)
        for workspace in ("empty-match", "big-gitignore", "submodule-zero", "heavy-rules")
        for transport in ("stdio", "http")
    ], output
    for _, _, peak, *counts in lines:
        assert math.isfinite(float(peak.replace(",", ""))) and float(peak.replace(",", "")) > 0, output
        assert sum(int(count) for count in counts) == 4, output  # every call is an answer or counted missing
    assert "LEFT RUNNING" not in output, output


def test_a_string_inside_an_f_string_is_named_by_the_f_strings_place() -> None:
    """Python 3.12 gave an f-string's parts positions of their own (3.11 gives them the f-string's):
    a mutant's name must not depend on which Python reads the module."""
    from bench import mutation

    found = mutation.mutants_of("m.py", 'x = 1\nname = f"a{x}b{x:>{x}}"\n')
    strings = [m.key for m in found if m.kind == "string"]
    assert strings == ["m.py:2:7:string:altered", "m.py:2:7:string:altered#2", "m.py:2:7:string:altered#3"]


def test_every_listed_equivalent_mutant_is_still_a_mutant() -> None:
    """bench/MUTATION.md names mutants by line and column: code that moves must take them along."""
    from bench import mutation

    listed = mutation.equivalents()
    assert listed
    current = {m.key for module in mutation.TESTS for m in mutation.mutants(module)}
    assert sorted(set(listed) - current) == []
    assert all(reason for reason in listed.values())


def test_call_memory_smoke_measures_every_way() -> None:
    output = smoke("call_memory.py")
    pattern = r"^2,000-hit (\w+) tools/call \([\d.]+ MiB\): (.+?)\s+(\d+\.\d+) MiB per MiB$"
    per_mib = re.findall(pattern, output, re.M)
    ways = ["precise path", "fast path", "through SDK"]
    assert [(shape, way) for shape, way, _ in per_mib] == [(shape, way) for shape in ("usual", "worst") for way in ways]
    precise, fast, sdk = (float(value) for _, _, value in per_mib[:3])
    assert 1 < fast < precise <= sdk, output  # the body itself is counted in, so none is below 1
    worst_precise, worst_sdk = float(per_mib[3][2]), float(per_mib[5][2])
    assert worst_sdk > worst_precise, output  # the SDK's response model, dumped (docs/architecture.md)


def test_every_file_in_a_mutation_test_list_has_tests_selected() -> None:
    """A `-k` that deselects a whole file (tests moved into `tests/cli/` and "not cli") would let
    mutants survive that its tests kill, and the scores drop without a word."""
    sys.path.insert(0, str(ROOT))
    try:
        from bench.mutation import TESTS
    finally:
        sys.path.remove(str(ROOT))
    for arguments in {tuple(listed) for listed in TESTS.values()}:
        files = {argument.split("::")[0] for argument in arguments if argument.split("::")[0].endswith(".py")}
        done = subprocess.run(
            [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider", "--collect-only", *arguments],
            capture_output=True,
            text=True,
            cwd=ROOT,
            timeout=120,
            check=False,
        )
        assert done.returncode == 0, done.stdout + done.stderr
        selected = {line.split("::")[0] for line in done.stdout.splitlines() if "::" in line}
        assert selected == files, (arguments, files - selected)


def test_cache_layers_smoke_measures_each_layer_against_all_kept() -> None:
    output = smoke("cache_layers.py")
    found = re.findall(r"^  (.+?)\s+(\d+\.\d+) ms against\s+(\d+\.\d+) ms kept:\s+(\d+\.\d+)x$", output, re.M)
    assert [name for name, *_ in found] == [
        "index and status snapshot",
        "history kept for HEAD",
        "parsed CODEOWNERS",
        "folders without .git, prefixes",
        "everything (a new Workspace)",
    ], output
    assert all(float(ratio) > 0 for *_, ratio in found), output
