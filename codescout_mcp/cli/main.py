"""The `codescout` command: `rank` runs the tool's handler on a file, `mcp` serves it.

Only the `mcp` command imports the MCP SDK; `rank` stays on the standard library so it
starts about as fast as Python itself. `codescout-mcp` is `codescout mcp` under its own
name, so that `uvx codescout-mcp` starts the server.

Every failure is one line on stderr and a non-zero exit status, whatever state the
standard streams are in: closed, full, or a pipe whose reader went away.
"""

from __future__ import annotations

import argparse
import os
import sys

from codescout_mcp import limits
from codescout_mcp.cli.streams import (
    CliError,
    State,
    guarded,
    leave,
    write_all,
    write_stdout,
)
from codescout_mcp.core.text import shown
from codescout_mcp.failure import UsageError
from codescout_mcp.version import __version__

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn

WORKSPACE_VARIABLE = "CODESCOUT_WORKSPACE"


class _Formatter(argparse.HelpFormatter):
    # argparse would import shutil (and with it bz2 and lzma) just to read the terminal width.
    def __init__(self, prog: str) -> None:
        try:
            width = os.get_terminal_size(1).columns
        except (OSError, ValueError):
            width = 80
        super().__init__(prog, width=max(width, 40) - 2)


class _Parser(argparse.ArgumentParser):
    def error(self, message: str) -> NoReturn:
        # One line, not argparse's usage block: errors here are meant to be read by scripts too.
        raise UsageError(f"{self.prog}: usage error: {shown(message)} (see '{self.prog} --help')")

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse swallows write errors (so `--version >&-` would say nothing and exit 0);
        # help and version text go through the checked writer instead.
        if not message:
            return
        if file is sys.stderr:
            write_all(2, message.encode("utf-8", "backslashreplace"))
        else:
            write_stdout(message.encode("utf-8", "backslashreplace"))


def _parser(prog: str = "codescout") -> argparse.ArgumentParser:
    parser = _Parser(
        prog=prog,
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
    add_input_limit(rank_cmd)
    rank_cmd.set_defaults(run=_run_rank)

    mcp_cmd = commands.add_parser(
        "mcp",
        formatter_class=_Formatter,
        help="serve the rank_search_results tool over MCP",
        description="Serve the rank_search_results tool to an MCP client (also installed as codescout-mcp).",
    )
    add_mcp_options(mcp_cmd)

    hits_cmd = commands.add_parser(
        "hits",
        formatter_class=_Formatter,
        help="build rank arguments from ripgrep output, git history and CODEOWNERS",
        description="Read `rg --json` (or `rg --count-matches`) output and print the arguments "
        "object for `codescout rank`: match counts from ripgrep, days since each file's last "
        "change from git, owners from CODEOWNERS. Example: "
        "rg --json PATTERN | codescout hits | codescout rank --input -",
    )
    hits_cmd.add_argument(
        "--from", dest="source", metavar="FILE", help="read ripgrep's output from FILE (default stdin)"
    )
    add_input_limit(hits_cmd)
    hits_cmd.add_argument(
        "--repo", metavar="DIR", help="the git repository (default: the one around the current directory)"
    )
    hits_cmd.add_argument("--limit", type=_limit, metavar="N", help="add this limit to the arguments")
    hits_cmd.add_argument(
        "--now", type=_timestamp, metavar="ISO8601", help="count days up to this moment instead of now (UTC if no zone)"
    )
    hits_cmd.add_argument(
        "--codeowners",
        choices=["github", "gitlab"],
        help="read CODEOWNERS as GitHub or GitLab does (default: detected from the file's place and sections)",
    )
    add_cache_option(hits_cmd)
    hits_cmd.set_defaults(run=_run_hits, parser=hits_cmd)

    search_cmd = commands.add_parser(
        "search",
        formatter_class=_Formatter,
        help="search a checkout with ripgrep and print its matching files ranked, as JSON",
        description="Search the workspace (default: the current directory) for PATTERN with ripgrep and "
        "print the matching files ranked by the rule, with their ages from git and owners from CODEOWNERS: "
        "the answer of the MCP tool search_workspace. Exit status: 0 searched (no match included), "
        "1 a pattern, path or checkout that cannot be searched, 2 usage error.",
    )
    search_cmd.add_argument("pattern", metavar="PATTERN", help="a regular expression, as ripgrep reads it")
    search_cmd.add_argument("-F", "--fixed-strings", action="store_true", help="PATTERN is plain text")
    search_cmd.add_argument("-i", "--ignore-case", action="store_true", help="ignore letter case")
    search_cmd.add_argument("--path", metavar="PATH", help="search only this folder or file of the workspace")
    search_cmd.add_argument(
        "-g", "--glob", metavar="GLOB", help="search only files matching this glob (!GLOB excludes)"
    )
    search_cmd.add_argument("--limit", type=_limit, metavar="N", help="print at most N files (default 10)")
    search_cmd.add_argument(
        "--workspace", metavar="DIR", help="the folder to search and the boundary of every path (default: here)"
    )
    search_cmd.add_argument(
        "--now", type=_timestamp, metavar="ISO8601", help="count days up to this moment instead of now (UTC if no zone)"
    )
    add_cache_option(search_cmd)
    search_cmd.set_defaults(run=_run_search, parser=search_cmd)
    return parser


def add_input_limit(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--max-input-bytes",
        type=_positive,
        default=limits.MAX_INPUT_BYTES,
        metavar="N",
        help=f"largest input read; a larger one is an error (default {limits.in_words(limits.MAX_INPUT_BYTES)})",
    )


def add_cache_option(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--no-cache",
        action="store_true",
        help="neither read nor write the histories kept in the cache folder (docs/workspace.md); it only costs speed",
    )


def add_mcp_options(mcp_cmd: argparse.ArgumentParser) -> None:
    """The options of `codescout mcp`, which `codescout-mcp` shares exactly."""
    mcp_cmd.add_argument("--version", action="version", version=f"codescout {__version__}")
    mcp_cmd.add_argument(
        "--transport",
        choices=["stdio", "streamable-http"],
        default="stdio",
        help="stdio (default) for a client that starts the server; streamable-http for a shared service",
    )
    mcp_cmd.add_argument(
        "--workspace",
        metavar="DIR",
        help="also offer rank_workspace_hits, which reads ages and owners from this checkout "
        f"(default: ${WORKSPACE_VARIABLE}, if set)",
    )
    add_cache_option(mcp_cmd)
    mcp_cmd.add_argument(
        "--no-warm",
        action="store_true",
        help="with --workspace, do not walk its history in the background at start (the first search then walks it)",
    )
    mcp_cmd.add_argument(
        "--log-level",
        default=limits.LOG_LEVEL,
        choices=["debug", "info", "warning", "error", "critical"],
        help=f"what to log on stderr (default: {limits.LOG_LEVEL})",
    )
    stdio = mcp_cmd.add_argument_group("stdio options")
    stdio.add_argument(
        "--max-message-bytes",
        type=_positive,
        metavar="N",
        help="largest message read from stdin; a larger one gets an error reply "
        f"(default {limits.in_words(limits.MAX_MESSAGE_BYTES)})",
    )
    http = mcp_cmd.add_argument_group("streamable HTTP options")
    http.add_argument("--host", help=f"address to listen on (default {limits.HOST})")
    http.add_argument("--port", type=_port, help=f"port to listen on (default {limits.PORT}; 0 picks a free one)")
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
        help=f"largest request body accepted; larger gets 413 (default {limits.in_words(limits.MAX_BODY_BYTES)})",
    )
    http.add_argument(
        "--max-buffered-bytes",
        type=_positive,
        metavar="N",
        help="bytes of request bodies and unsent answers held at once; a request with no room waits in line until "
        "its --request-timeout, then gets 503 with Retry-After "
        f"(default {limits.in_words(limits.MAX_BUFFERED_BYTES)}; at least --max-body-bytes; peak memory: docs/http.md)",
    )
    http.add_argument(
        "--request-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="a request's headers and body must arrive within this time (time waiting in line not counted), "
        f"else 408 (default {limits.seconds(limits.REQUEST_TIMEOUT)})",
    )
    http.add_argument(
        "--write-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="an answer whose client reads none of it for this long is dropped with its connection "
        f"(default {limits.seconds(limits.WRITE_TIMEOUT)})",
    )
    http.add_argument(
        "--max-concurrent",
        type=_positive,
        metavar="N",
        help="requests served at once; more wait in line until their --request-timeout, then get 503 with "
        f"Retry-After (default {limits.MAX_CONCURRENT})",
    )
    http.add_argument(
        "--shutdown-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="on SIGTERM, how long to let requests in flight finish "
        f"(default {limits.seconds(limits.SHUTDOWN_TIMEOUT)})",
    )
    http.add_argument(
        "--keep-alive-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="an idle connection is closed after this long; behind a proxy, set it above the proxy's idle timeout "
        f"(default {limits.seconds(limits.KEEP_ALIVE_TIMEOUT)})",
    )
    http.add_argument(
        "--forwarded-allow-ip",
        action="append",
        metavar="ADDRESS",
        help="a proxy whose X-Forwarded-For and X-Forwarded-Proto are believed (repeatable; an address or a "
        "network such as 10.0.0.0/8); from anyone else they are ignored (default: no one)",
    )
    http.add_argument(
        "--tls-certfile",
        metavar="FILE",
        help="serve HTTPS with this PEM certificate (chain); it may hold the private key too",
    )
    http.add_argument(
        "--tls-keyfile",
        metavar="FILE",
        help="the PEM private key for --tls-certfile, when that file does not hold it",
    )
    mcp_cmd.set_defaults(run=_run_mcp, parser=mcp_cmd)


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; return the exit status (as the `codescout` command, exit with it)."""
    status = guarded(lambda: _main(_parser(), argv))
    if argv is None:
        leave(status)
    return status


def mcp_main(argv: Sequence[str] | None = None) -> int:
    """`codescout-mcp`: exactly `codescout mcp`, under the name `uvx codescout-mcp` runs."""

    def run() -> int:
        parser = _Parser(
            prog="codescout-mcp",
            formatter_class=_Formatter,
            description="Serve the rank_search_results tool to an MCP client (the same as `codescout mcp`).",
        )
        add_mcp_options(parser)
        args = parser.parse_args(argv)
        status: int = args.run(args)
        return status

    return guarded(run)


def _main(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    args = parser.parse_args(argv)
    if args.command is None:
        parser.error("a command is required: rank, mcp, hits or search")
    status: int = args.run(args)
    return status


def _run_rank(args: argparse.Namespace) -> int:
    from codescout_mcp.cli.rank import run_rank

    return run_rank(args.input, args.max_input_bytes)


_HTTP_OPTIONS = (
    "host",
    "port",
    "allow_host",
    "allow_origin",
    "max_body_bytes",
    "max_buffered_bytes",
    "request_timeout",
    "write_timeout",
    "max_concurrent",
    "shutdown_timeout",
    "keep_alive_timeout",
    "forwarded_allow_ip",
    "tls_certfile",
    "tls_keyfile",
)
_STDIO_OPTIONS = ("max_message_bytes",)


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


def _limit(text: str) -> int:
    """A limit `rank` will take: a positive integer of at most MAX_INTEGER_DIGITS digits."""
    from codescout_mcp.core.contract import MAX_INTEGER_DIGITS

    if len(text.strip().lstrip("+").lstrip("0")) > MAX_INTEGER_DIGITS:
        raise argparse.ArgumentTypeError(f"a limit of more than {MAX_INTEGER_DIGITS} digits, too large to rank")
    return _positive(text)


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not 0 < value < 1e9:  # also refuses NaN
        raise argparse.ArgumentTypeError(f"{text!r} is not a positive number of seconds")
    return value


def _integer(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None


def _timestamp(text: str) -> float:
    from codescout_mcp.facts.hits import parse_now

    try:
        return parse_now(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 timestamp") from None


def _run_hits(args: argparse.Namespace) -> int:
    from codescout_mcp.cli.checkout import run_hits

    return run_hits(args)


def _run_search(args: argparse.Namespace) -> int:
    from codescout_mcp.cli.checkout import run_search

    return run_search(args)


def _run_mcp(args: argparse.Namespace) -> int:
    if 1 in State.closed and args.transport == "stdio":
        raise CliError("stdout is closed, and the MCP server writes its replies there")
    unused = _STDIO_OPTIONS if args.transport != "stdio" else _HTTP_OPTIONS
    given = [name for name in unused if getattr(args, name) is not None]
    if given:
        flag = "--" + given[0].replace("_", "-")
        other = "stdio" if args.transport != "stdio" else "streamable-http"
        args.parser.error(f"{flag} only applies with --transport {other}")
    workspace = _workspace(args)

    configure_logging(args.log_level)
    if args.no_cache:
        from codescout_mcp.facts import cache

        cache.disable()
    warm = workspace is not None and not args.no_warm
    if args.transport == "stdio":
        from codescout_mcp.stdio import serve_stdio

        return serve_stdio(
            max_message_bytes=args.max_message_bytes or limits.MAX_MESSAGE_BYTES, workspace=workspace, warm=warm
        )

    if args.tls_keyfile is not None and args.tls_certfile is None:
        args.parser.error("--tls-keyfile needs --tls-certfile (the certificate the key belongs to)")

    from codescout_mcp.http import HttpSettings, serve_http

    settings = HttpSettings.given(
        **{name: getattr(args, name) for name in _HTTP_OPTIONS},
        allow_hosts=tuple(args.allow_host or ()),
        allow_origins=tuple(args.allow_origin or ()),
        forwarded_allow_ips=tuple(args.forwarded_allow_ip or ()),
        log_level=args.log_level,
    )
    return serve_http(settings, workspace=workspace, warm=warm)


def _workspace(args: argparse.Namespace) -> str | None:
    """The workspace folder: --workspace, else $CODESCOUT_WORKSPACE; it must be a directory."""
    given: str | None = args.workspace
    origin = "--workspace"
    if given is None:
        given = os.environ.get(WORKSPACE_VARIABLE) or None
        origin = WORKSPACE_VARIABLE
    if given is None:
        return None
    if not os.path.isdir(given):
        args.parser.error(f"{origin} {given}: not a directory")
    return os.path.realpath(given)


def configure_logging(level: str) -> None:
    """Log to stderr only (on stdio, stdout carries nothing but JSON-RPC), always in UTF-8.

    The MCP spec asks for UTF-8 on stderr too; Windows would write the console's code page.
    A name holding a lone surrogate (a client can send one) is written as its escape
    instead of failing the log line.
    """
    import logging

    stream = open(2, "w", encoding="utf-8", errors="backslashreplace", closefd=False, buffering=1)  # noqa: SIM115
    logging.basicConfig(
        stream=stream,
        level=level.upper(),
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
