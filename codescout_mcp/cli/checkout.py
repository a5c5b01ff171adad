"""`codescout hits` and `codescout search`: the two commands that read a checkout, run by
`cli/main.py` (which parses their arguments) in the same process, on the folder the user named.
Standard library only; each imports the facts it needs when it runs.
"""

from __future__ import annotations

import os

from codescout_mcp.cli.streams import EXIT_OK, CliError, State, fail, read_input, write_stdout
from codescout_mcp.core.text import shown

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    import argparse


def run_hits(args: argparse.Namespace) -> int:
    """`codescout hits`: ripgrep's JSON in, rank arguments with each file's age and owner out."""
    from codescout_mcp.cli.streams import ProgressOnTerminal, end_children_on_signals, is_console

    end_children_on_signals()
    _cache_choice(args)
    _warnings_as_lines()
    from codescout_mcp.facts.hits import HitsError, hits_arguments

    if args.source is None and 0 not in State.closed and is_console(0):
        args.parser.error("pipe ripgrep's output in (rg --json PATTERN | codescout hits) or use --from FILE")
    name = args.source or "-"
    source = "stdin" if name == "-" else shown(name)
    try:
        data = read_input(name, source, args.max_input_bytes)
        with ProgressOnTerminal():
            arguments = hits_arguments(
                data,
                source,
                repo=args.repo,
                codeowners=args.codeowners,
                warn=lambda m: fail(f"warning: {m}"),
                now=args.now,
                limit=args.limit,
            )
    except HitsError as error:
        raise CliError(str(error)) from None
    from codescout_mcp.cli.rank import render_json

    write_stdout(render_json(arguments))
    return EXIT_OK


def run_search(args: argparse.Namespace) -> int:
    """`codescout search`: the search tool's handler, run in process on the workspace named."""
    import time

    from codescout_mcp.cli.streams import ProgressOnTerminal, end_children_on_signals

    end_children_on_signals()
    _cache_choice(args)
    _warnings_as_lines()
    from codescout_mcp.cli.rank import render_json
    from codescout_mcp.core.validate import InvalidArguments
    from codescout_mcp.facts.git import GitError
    from codescout_mcp.facts.gitfiles import RepositoryError
    from codescout_mcp.facts.lookup import Lookup
    from codescout_mcp.facts.rg import SearchError
    from codescout_mcp.tools.search import SearchTool
    from codescout_mcp.tools.workspace import Workspace

    folder = args.workspace if args.workspace is not None else "."
    if not os.path.isdir(folder):
        args.parser.error(f"--workspace {folder}: not a directory")
    arguments: dict[str, object] = {"pattern": args.pattern, "fixed_strings": args.fixed_strings}
    arguments["ignore_case"] = args.ignore_case
    arguments |= {name: getattr(args, name) for name in ("path", "glob", "limit") if getattr(args, name) is not None}
    tool = SearchTool(Workspace(folder, warn=lambda message: fail(f"warning: {message}")))
    lookup = Lookup(time.time() if args.now is None else args.now, seconds=tool.seconds)
    try:
        with ProgressOnTerminal():
            answer, notes = tool.search(arguments, lookup)
    except InvalidArguments as error:
        raise CliError(str(error)) from None
    except SearchError as error:
        raise CliError(f"{error.where}: {error}" if error.where else str(error)) from None
    except (RepositoryError, GitError) as error:
        raise CliError(f"the workspace {shown(os.path.realpath(folder))} cannot be read: {error}") from None
    for note in notes:
        fail(f"note: {note}")
    write_stdout(render_json(answer))
    return EXIT_OK


def _cache_choice(args: argparse.Namespace) -> None:
    """--no-cache: this process reads and writes no cached history."""
    if args.no_cache:
        from codescout_mcp.facts import cache

        cache.disable()


def _warnings_as_lines() -> None:
    """What `hits` and `search` log at warning level (a cache folder not used, ripgrep unconfined)
    is said as their other warnings are: one line on stderr, `codescout: warning: ...`."""
    import logging

    class OneLine(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            fail(f"warning: {record.getMessage()}")

    found = logging.getLogger("codescout")
    found.addHandler(OneLine(logging.WARNING))
    found.setLevel(logging.WARNING)
    found.propagate = False
