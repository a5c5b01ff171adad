"""Mutation testing of the core: how many small wrong changes does the test suite catch?

    python bench/mutation.py                       # every module below, 2 workers
    python bench/mutation.py --module ranking.py   # one module
    python bench/mutation.py --list                # the mutants, without running anything
    python bench/mutation.py --module facts/repository.py --lines 1-300   # a long module in parts

Each mutant is one small change to one module (an operator swapped, a comparison's edge
moved, a constant changed, a condition inverted, a string altered, a `break` made a
`continue`...), written into a copy of the package that comes first on PYTHONPATH, so the
tests' subprocesses (the CLI, the MCP server) run it too, and module-level code such as the
compiled checker is rebuilt from it. The module's tests then run; a failure (or a run three
times slower than the clean one) kills the mutant.

Mutants that cannot change behaviour are listed in bench/MUTATION.md with a reason each;
the score leaves them out: killed / (all - equivalent), per module. Results go to
.cache/mutation/results.json. Not part of the default test run (it takes a while).
"""

from __future__ import annotations

import argparse
import ast
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "codescout_mcp"
EQUIVALENTS = ROOT / "bench" / "MUTATION.md"
RESULTS = ROOT / ".cache" / "mutation" / "results.json"
# Its own environment, with the package installed as a plain copy: an editable install's
# import hook would win over PYTHONPATH and hide the mutants.
VENV = ROOT / ".cache" / "mutation" / "venv"
PYTHON = VENV / "bin" / "python"
PYTEST = [str(PYTHON), "-m", "pytest", "-x", "-q", "-n", "0", "-p", "no:cacheprovider"]

# The modules that read facts from repositories, judged by the same tests.
FACTS_MODULES = (
    *("facts/hits.py", "facts/repository.py", "facts/checkout.py", "facts/gitfiles.py", "facts/rgcounts.py"),
    *("facts/git.py", "system/platform.py", "system/paths.py", "system/processes.py"),
)

# The tests that judge each module: those that exercise it, kept small enough to run often.
TESTS: dict[str, list[str]] = {
    "core/ranking.py": [
        "tests/cli/test_vectors.py",
        "tests/unit/test_ranking.py",
        "tests/unit/test_properties.py",
        "tests/unit/test_fastpath.py",  # ranked_structs, the ranking of the fast path's structs
        # Not the tests that run the CLI as a subprocess (slow); the vectors through the Python API stay.
        "-k",
        "not through_cli and not through_the_cli",
    ],
    "core/fastpath.py": ["tests/unit/test_fastpath.py", "tests/cli/test_cli.py", "-k", "fast or memory or large"],
    # The door and the early answers, judged against the SDK's own answers.
    **{
        module: [
            "tests/unit/test_words.py",
            "tests/unit/test_door.py",
            "tests/unit/test_early_answers.py",
            "tests/stdio/test_direct_calls.py",
            "tests/stdio/test_stdio_start.py",
            "tests/unit/test_guard.py",
        ]
        for module in ("answers/accepted.py", "answers/door.py", "answers/handshake.py", "answers/words.py")
    },
    # The early phase on stdio, in process first (its bounds, batches, calls begun early).
    "stdio/early.py": [
        "tests/unit/test_stdio_early.py",
        "tests/unit/test_early_answers.py",
        "tests/stdio/test_direct_calls.py",
        "tests/stdio/test_stdio_start.py",
    ],
    "core/validate.py": [
        "tests/cli/test_vectors.py",
        "tests/unit/test_validate.py",
        "tests/unit/test_properties.py",
        "tests/unit/test_fastpath.py",  # duplicate_error, the fast path's words for a repeated path
        "tests/repositories/test_workspace.py",
        "-k",
        "not through_cli and not over_stdio and not over_http and not variable and not git_dir",
    ],
    # The search tool's flat arguments: their unit tests, then the searches that check them.
    "core/flatcheck.py": ["tests/unit/test_validate.py", "tests/repositories/test_search.py"],
    **{
        module: [
            "tests/unit/test_repository.py",
            "tests/unit/test_ripgrep.py",
            "tests/unit/test_git.py",
            "tests/unit/test_gitfiles.py",
            "tests/unit/test_hits_arguments.py",
            "tests/repositories/test_hits.py",
            "tests/repositories/test_workspace.py",
            "tests/repositories/test_hostile_checkouts.py",
            "tests/unit/test_platform.py",
            "-k",
            "not over_stdio and not over_http",
        ]
        for module in FACTS_MODULES
    },
    # Narrower lists where the module's own tests are known: the whole list above takes about a
    # minute for each mutant that survives it.
    "facts/gitfiles.py": [
        "tests/unit/test_gitfiles.py",
        "tests/repositories/test_hostile_checkouts.py",
        "-k",
        "not over_stdio and not over_http",
    ],
    "facts/checkout.py": [
        "tests/unit/test_repository.py",
        "tests/unit/test_hits_arguments.py",
        "tests/repositories/test_checkouts.py",  # submodules, nested and sibling repositories
        "tests/repositories/test_casefold.py",  # git's spelling of a name typed in another case
        "tests/repositories/test_hits.py",
        "tests/repositories/test_hostile_checkouts.py",  # a nested repository git cannot read
        "tests/repositories/test_workspace.py",
        "-k",
        "not over_stdio and not over_http",
    ],
    "facts/codeowners.py": [
        "tests/unit/test_codeowners.py",
        "tests/unit/test_globs.py",
        "tests/repositories/test_hits.py",
        "tests/repositories/test_checkouts.py",
        "tests/repositories/test_hostile_checkouts.py",
        "-k",
        "codeowners or gitlab or github or owner or pattern or dialect",
    ],
    "facts/globs.py": ["tests/unit/test_globs.py", "tests/unit/test_codeowners.py"],
    # `codescout hits` and the search tool's ranking of what it found (`top_ranked`).
    "facts/hits.py": [
        "tests/unit/test_top_ranked.py",
        "tests/unit/test_hits_arguments.py",
        "tests/repositories/test_hits.py",
        "tests/repositories/test_search.py",
        "tests/repositories/test_casefold.py",  # one file under two names, one hit
        "tests/repositories/test_checkouts.py",
        "tests/repositories/test_hostile_checkouts.py",
        "-k",
        "not over_stdio and not over_http",
    ],
    # ripgrep's output is read for `codescout hits` and for the search tool.
    "facts/rgcounts.py": [
        "tests/unit/test_ripgrep.py",
        "tests/repositories/test_hits.py",
        "tests/repositories/test_search.py",
        "-k",
        "not over_stdio and not over_http",
    ],
    # git's words, deadlines and overrides in process first, then what a hostile checkout sets.
    "facts/git.py": [
        "tests/unit/test_git.py",
        "tests/unit/test_repository_parts.py",  # the command line cut into runs that fit (chunks)
        "tests/unit/test_platform.py",  # the same, counted as Windows and macOS count
        "tests/repositories/test_hostile_checkouts.py",
        "tests/repositories/test_checkouts.py",  # a refused repository, submodules
        "tests/repositories/test_hits.py",
        "tests/unit/test_repository.py",
        "-k",
        "not over_stdio and not over_http",
    ],
    # One repository's facts: its unit tests first (their fixture waits out git's racy second,
    # so more workers than cores pay), then the checkouts that reach it.
    "facts/repository.py": [
        "tests/unit/test_repository_parts.py",
        "tests/unit/test_git.py",
        "tests/unit/test_platform.py",  # Windows' names and times, simulated
        "tests/unit/test_repository.py",
        "tests/repositories/test_hits.py",
        "tests/repositories/test_search.py",  # the search tool asks for what git tracks
        "tests/repositories/test_checkouts.py",
        "tests/repositories/test_casefold.py",
        "tests/repositories/test_hostile_checkouts.py",
        "tests/repositories/test_workspace.py",
        "-k",
        "not over_stdio and not over_http",
    ],
    # One call's terms: the repository's tests, which pass a lookup everywhere.
    "facts/lookup.py": ["tests/unit/test_repository_parts.py", "tests/unit/test_repository.py"],
    # Each system's rules, simulated in process first, then the checkouts that meet them.
    "system/platform.py": [
        "tests/unit/test_platform.py",
        "tests/unit/test_repository_parts.py",  # command lines cut as Windows counts them
        "tests/unit/test_ripgrep.py",
        "tests/http/test_http_limits.py::test_so_reuseaddr_is_set_on_posix_and_left_off_on_windows",
        "tests/repositories/test_casefold.py",
        "tests/repositories/test_workspace_boundary.py",
        "tests/repositories/test_hits.py",
        "tests/repositories/test_stops.py",
        "-k",
        "not over_stdio and not over_http",
    ],
    # Paths held inside a workspace or repository, and files read only when regular.
    "system/paths.py": [
        "tests/unit/test_paths.py",
        "tests/unit/test_platform.py",
        "tests/unit/test_repository_parts.py",
        "tests/unit/test_top_ranked.py",
        "tests/repositories/test_workspace_boundary.py",
        "tests/repositories/test_workspace.py",
        "tests/repositories/test_casefold.py",
        "tests/repositories/test_hostile_checkouts.py",
        "tests/repositories/test_checkouts.py",
        "tests/repositories/test_hits.py",
        "tests/unit/test_repository.py",
        "-k",
        "not over_stdio and not over_http",
    ],
    # The children ended on every way a command or a server stops, besides the facts' tests.
    "system/processes.py": [
        "tests/unit/test_processes.py",
        "tests/unit/test_git.py",
        "tests/unit/test_platform.py",
        "tests/repositories/test_hostile_checkouts.py",
        "tests/repositories/test_stops.py",
        "tests/repositories/test_hits.py",
        "tests/repositories/test_search.py",
    ],
    # Programs found on PATH (simulated for Windows and macOS in test_platform.py).
    "system/programs.py": ["tests/unit/test_processes.py", "tests/unit/test_platform.py", "tests/unit/test_git.py"],
}

SWAPS: dict[type, type] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.FloorDiv,
    ast.FloorDiv: ast.Mult,
    ast.Div: ast.Mult,
    ast.Mod: ast.FloorDiv,
    ast.BitOr: ast.BitAnd,
    ast.BitAnd: ast.BitOr,
    ast.LShift: ast.RShift,
    ast.RShift: ast.LShift,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
    ast.And: ast.Or,
    ast.Or: ast.And,
}


@dataclass(frozen=True)
class Mutant:
    module: str
    index: int  # which mutation point, in walk order
    line: int
    column: int
    kind: str
    detail: str
    # Parts of one f-string share its position (and `a - b - c` its operators' start): the
    # second and later mutants at one place are told apart by a count.
    occurrence: int = 1

    @property
    def key(self) -> str:
        """A name that stays the same while the code around it does not move."""
        suffix = f"#{self.occurrence}" if self.occurrence > 1 else ""
        return f"{self.module}:{self.line}:{self.column}:{self.kind}:{self.detail}{suffix}"


def _skipped(tree: ast.Module) -> set[int]:
    """Nodes no mutant may touch: docstrings, annotations, typing-only blocks, log messages."""
    skip: set[int] = set()

    def mark(node: ast.AST) -> None:
        for sub in ast.walk(node):
            skip.add(id(sub))

    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        first = body[0] if isinstance(body, list) and body else None
        if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
            mark(first)
        if isinstance(node, (ast.arg, ast.AnnAssign)) and getattr(node, "annotation", None) is not None:
            mark(node.annotation)  # type: ignore[arg-type]
        if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and node.returns is not None:
            mark(node.returns)
        if isinstance(node, ast.If) and isinstance(node.test, ast.Name) and node.test.id == "TYPE_CHECKING":
            mark(node)
        if isinstance(node, ast.Assign) and any(
            isinstance(t, ast.Name) and t.id in ("TYPE_CHECKING", "__all__", "__slots__") for t in node.targets
        ):
            mark(node)
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "logger"
        ):
            mark(node)
        if (
            isinstance(node, ast.AnnAssign)
            and isinstance(node.target, ast.Name)
            and node.target.id in PROSE_TABLES
            and isinstance(node.value, ast.Dict)
        ):
            for value in node.value.values:
                mark(value)
    return skip


# Tables whose values are reasons written for people, read by no code (their keys are mutated).
PROSE_TABLES = frozenset({"UNPINNED"})


def _points(tree: ast.Module) -> list[tuple[ast.AST, str, str]]:
    """(node, kind, detail) for every mutation this module offers, in a fixed order."""
    skip = _skipped(tree)
    points: list[tuple[ast.AST, str, str]] = []
    for node in ast.walk(tree):
        if id(node) in skip:
            continue
        if isinstance(node, (ast.BinOp, ast.AugAssign)) and type(node.op) in SWAPS:
            points.append((node, "operator", f"{type(node.op).__name__}->{SWAPS[type(node.op)].__name__}"))
        elif isinstance(node, ast.BoolOp) and type(node.op) in SWAPS:
            points.append((node, "boolean", f"{type(node.op).__name__}->{SWAPS[type(node.op)].__name__}"))
        elif isinstance(node, ast.Compare):
            for position, op in enumerate(node.ops):
                if type(op) in SWAPS:
                    points.append((node, f"compare{position}", f"{type(op).__name__}->{SWAPS[type(op)].__name__}"))
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            points.append((node, "not", "drop not"))
        elif isinstance(node, ast.If | ast.While | ast.IfExp):
            points.append((node, "condition", "negate"))
        elif isinstance(node, ast.Constant):
            value = node.value
            if isinstance(value, bool):
                points.append((node, "constant", f"{value}->{not value}"))
            elif isinstance(value, int):
                points.append((node, "constant", f"{value}->{value + 1}"))
            elif isinstance(value, str):
                points.append((node, "string", "altered"))
        elif isinstance(node, ast.Break):
            points.append((node, "flow", "break->continue"))
        elif isinstance(node, ast.Continue):
            points.append((node, "flow", "continue->break"))
    return points


def _apply(node: ast.AST, kind: str) -> None:
    if kind in ("operator", "boolean"):
        node.op = SWAPS[type(node.op)]()  # type: ignore[attr-defined]
    elif kind.startswith("compare"):
        position = int(kind.removeprefix("compare"))
        ops = node.ops  # type: ignore[attr-defined]
        ops[position] = SWAPS[type(ops[position])]()
    elif kind == "not":
        # `not x` -> `(x)`: swap the node's contents for its operand's.
        operand = node.operand  # type: ignore[attr-defined]
        node.__class__ = operand.__class__
        node.__dict__.update(operand.__dict__)
    elif kind == "condition":
        node.test = ast.UnaryOp(op=ast.Not(), operand=node.test)  # type: ignore[attr-defined]
    elif kind == "constant":
        value = node.value  # type: ignore[attr-defined]
        node.value = (not value) if isinstance(value, bool) else value + 1  # type: ignore[attr-defined]
    elif kind == "string":
        node.value = "XX" + node.value + "XX"  # type: ignore[attr-defined]
    elif kind == "flow":
        node.__class__ = ast.Continue if isinstance(node, ast.Break) else ast.Break


def mutants(module: str) -> list[Mutant]:
    return mutants_of(module, (PACKAGE / module).read_text(encoding="utf-8"))


def mutants_of(module: str, source: str) -> list[Mutant]:
    """Every mutant of one module's source, named the same under every Python the suite runs.

    Whatever is inside an f-string (its strings, its format specs, its expressions) is placed at
    the outermost f-string's start: Python 3.12 (PEP 701) gave those parts positions of their own,
    which differ from 3.11's, so their own would name another mutant on another Python.
    """
    tree = ast.parse(source)
    enclosing: dict[int, tuple[int, int]] = {}
    for node in ast.walk(tree):  # outer nodes first, so the outermost f-string claims its parts
        if isinstance(node, ast.JoinedStr) and id(node) not in enclosing:
            for part in ast.walk(node):
                enclosing.setdefault(id(part), (node.lineno, node.col_offset))
    found: list[Mutant] = []
    seen: dict[tuple[int, int, str, str], int] = {}
    for index, (node, kind, detail) in enumerate(_points(tree)):
        line, column = enclosing.get(id(node), (getattr(node, "lineno", 0), getattr(node, "col_offset", 0)))
        place = (line, column, kind, detail)
        seen[place] = seen.get(place, 0) + 1
        found.append(Mutant(module, index, *place, occurrence=seen[place]))
    return found


def mutated_source(mutant: Mutant) -> str:
    tree = ast.parse((PACKAGE / mutant.module).read_text(encoding="utf-8"))
    node, kind, _ = _points(tree)[mutant.index]
    _apply(node, kind)
    return ast.unparse(ast.fix_missing_locations(tree))


def equivalents() -> dict[str, str]:
    """Mutant keys listed as equivalent in MUTATION.md, with their reasons."""
    found: dict[str, str] = {}
    if EQUIVALENTS.exists():
        for line in EQUIVALENTS.read_text(encoding="utf-8").splitlines():
            match = re.match(r"- `([^`]+)`\s+(.*)", line)
            if match:
                found[match.group(1)] = match.group(2).lstrip("- ").strip()
    return found


def environment() -> None:
    """The mutation runs' environment: a venv with the package (not editable) and test tools, made
    again whenever pyproject.toml changed since (a new dependency must be in it)."""
    import hashlib

    marker = VENV / ".installed"
    wanted = hashlib.sha256((ROOT / "pyproject.toml").read_bytes()).hexdigest()
    if marker.exists() and marker.read_text(encoding="utf-8") == wanted:
        return
    shutil.rmtree(VENV, ignore_errors=True)
    subprocess.run([sys.executable, "-m", "venv", str(VENV)], check=True)
    subprocess.run([str(PYTHON), "-m", "pip", "install", "-q", f"{ROOT}[test]"], check=True)
    marker.write_text(wanted, encoding="utf-8")


# What a copy of the checkout needs for the tests to run from it (and import from it).
COPIED = ("codescout_mcp", "tests", "examples", "bench", "docs", "pyproject.toml", "README.md", "LICENSE")


def checkout_copy(target: Path) -> None:
    """The package and its tests copied into `target`, where imports will find them first."""
    for name in COPIED:
        source = ROOT / name
        if source.is_dir():
            shutil.copytree(source, target / name, ignore=shutil.ignore_patterns("__pycache__", "node_modules"))
        else:
            shutil.copy2(source, target / name)


def run_tests(copy_root: Path, module: str, timeout: float) -> str:
    """Run the module's tests from a checkout copy (its package first on every path)."""
    env = {**os.environ, "PYTHONPATH": str(copy_root), "PYTHONDONTWRITEBYTECODE": "1"}
    try:
        done = subprocess.run(
            [*PYTEST, "--hypothesis-seed=0", *TESTS[module]],
            cwd=copy_root,
            env=env,
            capture_output=True,
            timeout=timeout,
            check=False,
        )
    except subprocess.TimeoutExpired:
        return "timeout"
    return "survived" if done.returncode == 0 else "killed"


def judge(mutant: Mutant, timeout: float) -> str:
    with tempfile.TemporaryDirectory(prefix="codescout-mutant-") as scratch:
        copy_root = Path(scratch)
        checkout_copy(copy_root)
        try:
            source = mutated_source(mutant)
            compile(source, mutant.module, "exec")
        except (SyntaxError, ValueError, TypeError):
            return "invalid"
        (copy_root / "codescout_mcp" / mutant.module).write_text(source, encoding="utf-8")
        return run_tests(copy_root, mutant.module, timeout)


class _Progress:
    """Judges mutants; says how far it has got every 25, and each survivor as it is found."""

    def __init__(self, module: str, total: int) -> None:
        self.module = module
        self.total = total
        self.done = 0

    def judge(self, mutant: Mutant, timeout: float) -> str:
        verdict = judge(mutant, timeout)
        self.done += 1
        if verdict == "survived":
            print(f"  survived: {mutant.key}", flush=True)  # said at once, to start on it early
        if self.done % 25 == 0:
            print(f"  {self.module}: {self.done} of {self.total} judged", flush=True)
        return verdict


def main() -> int:
    parser = argparse.ArgumentParser(description="Mutation testing of codescout's core.")
    parser.add_argument("--module", action="append", choices=sorted(TESTS), help="only this module (repeatable)")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--list", action="store_true", help="list the mutants and stop")
    parser.add_argument("--mutant", action="append", metavar="KEY", help="only the mutant with this key (repeatable)")
    parser.add_argument("--lines", metavar="FIRST-LAST", help="only the mutants on these lines")
    args = parser.parse_args()
    modules = args.module or sorted(TESTS)
    known = equivalents()
    if not args.list:
        environment()
    started = time.monotonic()
    # Earlier results are kept: a run of some modules (or of some mutants) updates its own.
    results: dict[str, dict[str, str]] = json.loads(RESULTS.read_text(encoding="utf-8")) if RESULTS.exists() else {}
    for module in modules:
        found = mutants(module)
        if args.mutant:
            found = [m for m in found if m.key in args.mutant]
        if args.lines:
            first, _, last = args.lines.partition("-")
            found = [m for m in found if int(first) <= m.line <= int(last)]
        part = bool(args.mutant or args.lines)
        if args.list:
            for mutant in found:
                print(mutant.key)
            continue
        with tempfile.TemporaryDirectory(prefix="codescout-clean-") as scratch:
            checkout_copy(Path(scratch))
            clean_start = time.monotonic()
            if run_tests(Path(scratch), module, timeout=1800) != "survived":
                raise SystemExit(f"the tests for {module} fail without any mutant")
            baseline = time.monotonic() - clean_start
        timeout = max(60.0, 3 * baseline)
        todo = [m for m in found if m.key not in known]
        progress = _Progress(module, len(todo))
        with ThreadPoolExecutor(max_workers=args.workers) as pool:
            verdicts = list(pool.map(progress.judge, todo, [timeout] * len(todo)))
        outcome = {m.key: v for m, v in zip(todo, verdicts, strict=True)}
        outcome.update({key: "equivalent" for key in known if key.startswith(module + ":")})
        if part:
            results.setdefault(module, {}).update(outcome)
        else:
            results[module] = outcome
        report(module, found, outcome, known, whole=not part)
    if not args.list:
        RESULTS.parent.mkdir(parents=True, exist_ok=True)
        RESULTS.write_text(json.dumps(results, indent=1, sort_keys=True), encoding="utf-8")
        print(f"\n{time.monotonic() - started:.0f} s; results in {RESULTS.relative_to(ROOT)}")
    return 0


def report(module: str, found: list[Mutant], outcome: dict[str, str], known: dict[str, str], *, whole: bool) -> None:
    keys = {m.key for m in found}
    stale = sorted(k for k in known if k.startswith(module + ":") and k not in keys) if whole else []
    counts: dict[str, int] = {}
    for key in keys:
        verdict = outcome.get(key, "equivalent" if key in known else "?")
        counts[verdict] = counts.get(verdict, 0) + 1
    caught = counts.get("killed", 0) + counts.get("timeout", 0)
    judged = caught + counts.get("survived", 0)
    score = 100.0 * caught / judged if judged else 100.0
    print(
        f"{module:<14} {len(keys):4} mutants: {caught} killed ({counts.get('timeout', 0)} by timeout), "
        f"{counts.get('survived', 0)} survived, {counts.get('equivalent', 0)} equivalent, "
        f"{counts.get('invalid', 0)} invalid; score {score:.1f}%"
    )
    for key in sorted(k for k in keys if outcome.get(k) == "survived"):
        print(f"  survived: {key}")
    for key in stale:
        print(f"  listed as equivalent but no longer a mutant here: {key}")


if __name__ == "__main__":
    raise SystemExit(main())
