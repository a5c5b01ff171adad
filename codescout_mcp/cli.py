"""The `codescout` command: `rank` runs the tool's handler on a file, `mcp` serves it.

Only the `mcp` command imports the MCP SDK; `rank` stays on the standard library so it
starts about as fast as Python itself.
"""

from __future__ import annotations

import argparse
import codecs
import json
import os
import sys

from codescout_mcp import __version__
from codescout_mcp.contract import MAX_INTEGER_DIGITS
from codescout_mcp.tool import rank
from codescout_mcp.validate import InvalidArguments

# Typing names are for the checker only: importing typing costs `codescout rank` start-up time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn

EXIT_OK = 0
EXIT_ERROR = 1
EXIT_USAGE = 2
EXIT_INTERRUPTED = 130


class CliError(Exception):
    """A runtime failure the user can act on; printed as one line, exit status 1."""


class _Formatter(argparse.HelpFormatter):
    # argparse would import shutil (and with it bz2 and lzma) just to read the terminal width.
    def __init__(self, prog: str) -> None:
        try:
            width = os.get_terminal_size(sys.stdout.fileno()).columns
        except (OSError, ValueError):
            width = 80
        super().__init__(prog, width=max(width, 40) - 2)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage block: errors here are meant to be read by scripts too.
        self.exit(EXIT_USAGE, f"{self.prog}: usage error: {message} (see '{self.prog} --help')\n")


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="codescout",
        formatter_class=_Formatter,
        description="Rank code-search hits you already have by one fixed rule: "
        "score = matches * 100 - last_modified_days.",
    )
    parser.add_argument("--version", action="version", version=f"codescout {__version__}")
    commands = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    rank_cmd = commands.add_parser(
        "rank",
        formatter_class=_Formatter,
        help="rank the hits in an arguments file and print the result as JSON",
        description='Read a tool arguments object ({"hits": [...], "limit": N}) and print '
        "the ranked result as JSON. Exit status: 0 ranked, 1 unreadable or invalid input, "
        "2 usage error.",
    )
    rank_cmd.add_argument("--input", "-i", required=True, metavar="FILE", help="the arguments file; - reads stdin")
    rank_cmd.set_defaults(run=_run_rank)

    mcp_cmd = commands.add_parser(
        "mcp",
        formatter_class=_Formatter,
        help="serve the rank_search_results tool over MCP",
        description="Serve the rank_search_results tool to an MCP client.",
    )
    mcp_cmd.add_argument(
        "--transport",
        choices=["stdio", "streamable-http"],
        default="stdio",
        help="stdio (default) for a client that starts the server; streamable-http for a shared service",
    )
    http = mcp_cmd.add_argument_group("streamable HTTP options")
    http.add_argument("--host", help="address to listen on (default 127.0.0.1)")
    http.add_argument("--port", type=_port, help="port to listen on (default 8000; 0 picks a free one)")
    http.add_argument(
        "--allow-host",
        action="append",
        metavar="HOST[:PORT]",
        help="a Host header to accept besides loopback names (repeatable; NAME:* for any port)",
    )
    http.add_argument(
        "--allow-origin",
        action="append",
        metavar="ORIGIN",
        help="a browser Origin to accept besides loopback ones (repeatable)",
    )
    http.add_argument(
        "--max-body-bytes",
        type=_positive,
        metavar="N",
        help="largest request body accepted; larger gets 413 (default 33554432, 32 MiB)",
    )
    mcp_cmd.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error", "critical"],
        help="what to log on stderr (default: warning)",
    )
    mcp_cmd.set_defaults(run=_run_mcp, parser=mcp_cmd)

    hits_cmd = commands.add_parser(
        "hits",
        formatter_class=_Formatter,
        help="build rank arguments from ripgrep output, git history and CODEOWNERS",
        description="Read `rg --json` (or `rg --count-matches`) output and print the arguments "
        "object for `codescout rank`: match counts from ripgrep, days since each file's last "
        "commit from git, owners from CODEOWNERS. Example: "
        "rg --json PATTERN | codescout hits | codescout rank --input -",
    )
    hits_cmd.add_argument(
        "--from", dest="source", metavar="FILE", help="read ripgrep's output from FILE (default stdin)"
    )
    hits_cmd.add_argument(
        "--repo", metavar="DIR", help="the git repository (default: the one around the current directory)"
    )
    hits_cmd.add_argument("--limit", type=_positive, metavar="N", help="add this limit to the arguments")
    hits_cmd.add_argument(
        "--now", type=_timestamp, metavar="ISO8601", help="count days up to this moment instead of now (UTC if no zone)"
    )
    hits_cmd.set_defaults(run=_run_hits, parser=hits_cmd)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status."""
    parser = _parser()
    args = parser.parse_args(argv)
    if args.command is None:
        parser.error("a command is required: rank, mcp or hits")
    try:
        status: int = args.run(args)
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    return status


def _run_rank(args: argparse.Namespace) -> int:
    source = "stdin" if args.input == "-" else args.input
    try:
        arguments = _parse(_read_text(args.input, source), source)
        result = rank(arguments)
    except (CliError, InvalidArguments) as error:
        _fail(str(error))
        return EXIT_ERROR
    return _write_json(result)


_HTTP_OPTIONS = ("host", "port", "allow_host", "allow_origin", "max_body_bytes")


def _port(text: str) -> int:
    value = _integer(text)
    if not 0 <= value <= 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0-65535)")
    return value


def _positive(text: str) -> int:
    value = _integer(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive integer")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def _timestamp(text: str) -> float:
    from codescout_mcp.hits import parse_now

    try:
        return parse_now(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 timestamp") from None


def _run_hits(args: argparse.Namespace) -> int:
    from pathlib import Path

    from codescout_mcp.hits import HitsError, build_arguments, read_match_counts, repository_root

    if args.source is None and sys.stdin.isatty():
        args.parser.error("pipe ripgrep's output in (rg --json PATTERN | codescout hits) or use --from FILE")
    name = args.source or "-"
    source = "stdin" if name == "-" else name
    try:
        counts = read_match_counts(_read_bytes(name, source), source)
        root = repository_root(args.repo)
        arguments = build_arguments(
            counts, root=root, cwd=Path.cwd(), now=args.now, limit=args.limit, warn=lambda m: _fail(f"warning: {m}")
        )
    except (CliError, HitsError) as error:
        _fail(str(error))
        return EXIT_ERROR
    return _write_json(arguments)


def _run_mcp(args: argparse.Namespace) -> int:
    if args.transport == "stdio":
        given = [name for name in _HTTP_OPTIONS if getattr(args, name) is not None]
        if given:
            flag = "--" + given[0].replace("_", "-")
            args.parser.error(f"{flag} only applies with --transport streamable-http")
        from codescout_mcp.server import serve

        return serve(log_level=args.log_level)

    from codescout_mcp.remote import DEFAULT_MAX_BODY_BYTES, serve_http
    from codescout_mcp.server import configure_logging

    configure_logging(args.log_level)
    return serve_http(
        host=args.host or "127.0.0.1",
        port=8000 if args.port is None else args.port,
        allow_hosts=args.allow_host or [],
        allow_origins=args.allow_origin or [],
        max_body_bytes=args.max_body_bytes or DEFAULT_MAX_BODY_BYTES,
        log_level=args.log_level,
    )


def _fail(message: str) -> None:
    sys.stderr.write(f"codescout: {message}\n")
    sys.stderr.flush()


def _read_bytes(name: str, source: str) -> bytes:
    """The whole of a file, or of stdin for `-`; CliError naming `source` if it cannot be read."""
    try:
        if name == "-":
            return sys.stdin.buffer.read()
        with open(name, "rb") as handle:
            return handle.read()
    except OSError as error:
        raise CliError(f"cannot read {source}: {error.strerror or error}") from None


def _read_text(name: str, source: str) -> str:
    data = _read_bytes(name, source)
    start = len(codecs.BOM_UTF8) if data.startswith(codecs.BOM_UTF8) else 0
    try:
        return str(data[start:], "utf-8") if start else data.decode("utf-8")
    except UnicodeDecodeError as error:
        raise CliError(f"{source}: not valid UTF-8 at byte offset {error.start + start}") from None


def _reject_constant(name: str) -> NoReturn:
    raise CliError(f"{name} is not a JSON value")


def _parse(text: str, source: str) -> Any:
    try:
        return json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as error:
        raise CliError(f"{source}: invalid JSON at line {error.lineno}, column {error.colno}: {error.msg}") from None
    except CliError as error:
        raise CliError(f"{source}: invalid JSON: {error}") from None
    except RecursionError:
        raise CliError(f"{source}: invalid JSON: nested too deeply") from None
    except ValueError:
        # The only other ValueError the decoder raises: Python's guard on huge integers.
        raise CliError(
            f"{source}: a number has more than {getattr(sys, 'get_int_max_str_digits', lambda: 4300)()} digits; "
            f"integers may have at most {MAX_INTEGER_DIGITS}"
        ) from None


def _write_json(result: dict[str, Any]) -> int:
    text = json.dumps(result, ensure_ascii=False, indent=2) + "\n"
    # A lone surrogate (legal in JSON text as an escape) cannot be UTF-8: write it back as the
    # escape it came from, which is what backslashreplace produces for it.
    data = text.encode("utf-8", "backslashreplace")
    try:
        sys.stdout.buffer.write(data)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`| head`): say nothing more, and keep Python quiet at exit.
        _silence_stdout()
        return EXIT_ERROR
    return EXIT_OK


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, sys.stdout.fileno())
    os.close(devnull)
