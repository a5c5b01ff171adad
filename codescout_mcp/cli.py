"""The `codescout` command: `rank` runs the tool's handler on a file, `mcp` serves it.

Only the `mcp` command imports the MCP SDK; `rank` stays on the standard library so it
starts about as fast as Python itself. `codescout-mcp` is `codescout mcp` under its own
name, so that `uvx codescout-mcp` starts the server.

Every failure is one line on stderr and a non-zero exit status, whatever state the
standard streams are in: closed, full, or a pipe whose reader went away.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import sys

from codescout_mcp import __version__
from codescout_mcp.jsontext import JsonTextError, decode_utf8, parse_json_text, shown
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

WORKSPACE_VARIABLE = "CODESCOUT_WORKSPACE"


class CliError(Exception):
    """A runtime failure the user can act on; printed as one line, exit status 1."""


class _ReaderGone(Exception):
    """stdout is a pipe whose reader has gone (`| head`): stop quietly, exit status 1."""


# Standard descriptors that were closed when the command started. They are reopened on the
# null device at once (so no file opened later lands on them), but stay "closed" here:
# output meant for a closed stdout is an error, not something to throw away.
_closed: frozenset[int] = frozenset()


def _reserve_standard_descriptors() -> frozenset[int]:
    closed = set()
    for fd in (0, 1, 2):
        try:
            os.fstat(fd)
        except OSError:
            closed.add(fd)
    for fd in sorted(closed):
        opened = os.open(os.devnull, os.O_RDONLY if fd == 0 else os.O_WRONLY)
        if opened != fd:
            os.dup2(opened, fd)
            os.close(opened)
    return frozenset(closed)


def _fail(message: str) -> None:
    """One line on stderr, if stderr can take it."""
    _write_all(2, f"codescout: {message}\n".encode("utf-8", "backslashreplace"))


def _write_all(fd: int, data: bytes) -> None:
    view = memoryview(data)
    try:
        while view:
            view = view[os.write(fd, view) :]
    except OSError:
        pass  # stderr itself is gone: the exit status is all that is left to say it


def write_stdout(data: bytes) -> None:
    """All of `data` to stdout, or CliError / _ReaderGone: a short write never passes as done."""
    if 1 in _closed:
        raise CliError("cannot write the output: stdout is closed")
    if os.name == "nt":  # pragma: no cover - Windows: a console takes text, not UTF-8 bytes
        from codescout_mcp.system import is_console, write_console

        if is_console(1):
            write_console(data)
            return
    view = memoryview(data)
    while view:
        try:
            written = os.write(1, view)
        except OSError as error:
            from codescout_mcp.system import CURRENT

            if error.errno in CURRENT.broken_pipe_errnos:  # EPIPE; on Windows also EINVAL
                raise _ReaderGone from None
            raise CliError(f"cannot write to stdout: {error.strerror or error}") from None
        view = view[written:]


DEFAULT_MAX_INPUT_BYTES = 256 << 20


def read_input(name: str, source: str, limit: int = DEFAULT_MAX_INPUT_BYTES) -> bytes:
    """The whole of a file, or of stdin for `-`, up to `limit` bytes; CliError naming `source`
    (made one line) if it cannot be read or holds more (an endless source like /dev/zero too)."""
    if name == "-" and 0 in _closed:
        raise CliError("cannot read stdin: it is closed")
    try:
        if name == "-":
            return _read_bounded(0, source, limit)
        fd = os.open(name, os.O_RDONLY | getattr(os, "O_BINARY", 0))
        try:
            return _read_bounded(fd, source, limit)
        finally:
            os.close(fd)
    except OSError as error:
        raise CliError(f"cannot read {source}: {error.strerror or error}") from None
    except MemoryError:
        raise CliError(f"not enough memory to read {source}") from None


def _read_bounded(fd: int, source: str, limit: int) -> bytes:
    status = os.fstat(fd)
    if status.st_size > limit:  # a regular file says its size: refused before a byte is read
        raise CliError(f"{source} holds more than {limit} bytes, more than --max-input-bytes allows")
    chunks = []
    size = 0
    # A regular file in one read (then no copy joins its parts); anything else in pieces.
    want = status.st_size + 1 if status.st_size and (status.st_mode & 0o170000) == 0o100000 else 1 << 20
    while chunk := os.read(fd, want):
        size += len(chunk)
        if size > limit:
            raise CliError(f"{source} holds more than {limit} bytes, more than --max-input-bytes allows")
        chunks.append(chunk)
        want = 1 << 20
    return chunks[0] if len(chunks) == 1 else b"".join(chunks)


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
        self.exit(EXIT_USAGE, f"{self.prog}: usage error: {shown(message)} (see '{self.prog} --help')\n")

    def _print_message(self, message: str, file: Any = None) -> None:
        # argparse swallows write errors (so `--version >&-` would say nothing and exit 0);
        # help and version text go through the checked writer instead.
        if not message:
            return
        if file is sys.stderr:
            _write_all(2, message.encode("utf-8", "backslashreplace"))
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
    hits_cmd.set_defaults(run=_run_hits, parser=hits_cmd)
    return parser


def add_input_limit(command: argparse.ArgumentParser) -> None:
    command.add_argument(
        "--max-input-bytes",
        type=_positive,
        default=DEFAULT_MAX_INPUT_BYTES,
        metavar="N",
        help=f"largest input read; a larger one is an error (default {DEFAULT_MAX_INPUT_BYTES}, 256 MiB)",
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
    mcp_cmd.add_argument(
        "--log-level",
        default="warning",
        choices=["debug", "info", "warning", "error", "critical"],
        help="what to log on stderr (default: warning)",
    )
    stdio = mcp_cmd.add_argument_group("stdio options")
    stdio.add_argument(
        "--max-message-bytes",
        type=_positive,
        metavar="N",
        help="largest message read from stdin; a larger one gets an error reply (default 33554432, 32 MiB)",
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
    http.add_argument(
        "--max-buffered-bytes",
        type=_positive,
        metavar="N",
        help="bytes of request bodies and unsent answers held at once; a request with no room waits up to 2 s, "
        "then gets 503 with Retry-After (default 33554432, 32 MiB; at least --max-body-bytes; peak memory: README)",
    )
    http.add_argument(
        "--request-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="a request's headers and body must arrive within this time, else 408 (default 30)",
    )
    http.add_argument(
        "--write-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="an answer whose client reads none of it for this long is dropped with its connection (default 30)",
    )
    http.add_argument(
        "--max-concurrent",
        type=_positive,
        metavar="N",
        help="requests served at once; more get 503 with Retry-After (default 32)",
    )
    http.add_argument(
        "--shutdown-timeout",
        type=_seconds,
        metavar="SECONDS",
        help="on SIGTERM, how long to let requests in flight finish (default 10)",
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
    status = _guarded(lambda: _main(_parser(), argv))
    if argv is None:
        _leave(status)
    return status


def _leave(status: int) -> NoReturn:
    """End the command now: everything is written (unbuffered), and tearing down what it read
    (a million hits are a million objects to free one by one) would only delay the exit."""
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(OSError, ValueError):
            stream.flush()
    os._exit(status)


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

    return _guarded(run)


class _ClosedStream:
    """Stands in for sys.stdout or sys.stderr when Python found the descriptor closed."""

    def write(self, text: str) -> int:
        return len(text)

    def flush(self) -> None:
        pass


def _guarded(run: Any) -> int:
    global _closed
    _closed = _reserve_standard_descriptors()
    # Python sets a stream it found closed to None; give each one an identity of its own, so
    # that help text meant for stdout is never taken for an error meant for stderr.
    for name in ("stdout", "stderr"):
        if getattr(sys, name) is None:
            setattr(sys, name, _ClosedStream())
    try:
        status: int = run()
    except CliError as error:
        _fail(str(error))
        return EXIT_ERROR
    except _ReaderGone:
        _silence_stdout()
        return EXIT_ERROR
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED
    except MemoryError:  # an input under --max-input-bytes can still be more than a memory cap allows
        _fail("not enough memory for this input")
        return EXIT_ERROR
    return status


def _main(parser: argparse.ArgumentParser, argv: Sequence[str] | None) -> int:
    args = parser.parse_args(argv)
    if args.command is None:
        parser.error("a command is required: rank, mcp or hits")
    status: int = args.run(args)
    return status


def _run_rank(args: argparse.Namespace) -> int:
    import gc

    # A short-lived process that builds one large tree of objects and frees it at exit:
    # the collector would only walk it again and again (a third of the parse's time).
    gc.disable()
    source = "stdin" if args.input == "-" else shown(args.input)
    try:
        arguments = _parsed(args.input, source, args.max_input_bytes)
        result = rank(arguments)
    except (JsonTextError, InvalidArguments) as error:
        raise CliError(str(error)) from None
    write_stdout(render_json(result))
    return EXIT_OK


def _parsed(name: str, source: str, limit: int) -> Any:
    """The input's JSON value; its bytes are freed once decoded, its text once parsed, so the
    peak is that of the text and the value together, as for `json.load`."""
    text = decode_utf8(read_input(name, source, limit), source)
    return parse_json_text(text, source)


def render_json(value: dict[str, Any]) -> bytes:
    """Pretty JSON, UTF-8, ending in a newline, as `rank` and `hits` print it."""
    import json

    text = json.dumps(value, ensure_ascii=False, indent=2) + "\n"
    # A lone surrogate (legal in JSON text as an escape) cannot be UTF-8: write it back as the
    # escape it came from, which is what backslashreplace produces for it.
    return text.encode("utf-8", "backslashreplace")


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
    from codescout_mcp.contract import MAX_INTEGER_DIGITS

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
    from codescout_mcp.hits import parse_now

    try:
        return parse_now(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 timestamp") from None


def _run_hits(args: argparse.Namespace) -> int:
    from codescout_mcp.hits import HitsError, hits_arguments
    from codescout_mcp.system import is_console

    if args.source is None and 0 not in _closed and is_console(0):
        args.parser.error("pipe ripgrep's output in (rg --json PATTERN | codescout hits) or use --from FILE")
    name = args.source or "-"
    source = "stdin" if name == "-" else shown(name)
    try:
        arguments = hits_arguments(
            read_input(name, source, args.max_input_bytes),
            source,
            repo=args.repo,
            codeowners=args.codeowners,
            warn=lambda m: _fail(f"warning: {m}"),
            now=args.now,
            limit=args.limit,
        )
    except HitsError as error:
        raise CliError(str(error)) from None
    write_stdout(render_json(arguments))
    return EXIT_OK


def _run_mcp(args: argparse.Namespace) -> int:
    if 1 in _closed and args.transport == "stdio":
        raise CliError("stdout is closed, and the MCP server writes its replies there")
    unused = _STDIO_OPTIONS if args.transport != "stdio" else _HTTP_OPTIONS
    given = [name for name in unused if getattr(args, name) is not None]
    if given:
        flag = "--" + given[0].replace("_", "-")
        other = "stdio" if args.transport != "stdio" else "streamable-http"
        args.parser.error(f"{flag} only applies with --transport {other}")
    workspace = _workspace(args)

    from codescout_mcp.system import configure_logging

    configure_logging(args.log_level)
    if args.transport == "stdio":
        from codescout_mcp.stdio import DEFAULT_MAX_MESSAGE_BYTES, serve_stdio

        return serve_stdio(
            max_message_bytes=args.max_message_bytes or DEFAULT_MAX_MESSAGE_BYTES,
            workspace=workspace,
        )

    if args.tls_keyfile is not None and args.tls_certfile is None:
        args.parser.error("--tls-keyfile needs --tls-certfile (the certificate the key belongs to)")

    from codescout_mcp.remote import HttpSettings, serve_http

    defaults = HttpSettings()
    settings = HttpSettings(
        host=args.host or defaults.host,
        port=defaults.port if args.port is None else args.port,
        allow_hosts=tuple(args.allow_host or ()),
        allow_origins=tuple(args.allow_origin or ()),
        max_body_bytes=args.max_body_bytes or defaults.max_body_bytes,
        max_buffered_bytes=args.max_buffered_bytes or defaults.max_buffered_bytes,
        request_timeout=args.request_timeout or defaults.request_timeout,
        write_timeout=args.write_timeout or defaults.write_timeout,
        max_concurrent=args.max_concurrent or defaults.max_concurrent,
        shutdown_timeout=args.shutdown_timeout or defaults.shutdown_timeout,
        tls_certfile=args.tls_certfile,
        tls_keyfile=args.tls_keyfile,
        log_level=args.log_level,
    )
    return serve_http(settings, workspace=workspace)


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


def _silence_stdout() -> None:
    devnull = os.open(os.devnull, os.O_WRONLY)
    os.dup2(devnull, 1)
    os.close(devnull)
