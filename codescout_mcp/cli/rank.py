"""`codescout rank`'s work: read the arguments, rank them, print the answer; no argparse.

The usual command line, `codescout rank --input FILE` (or `-i FILE`, `--input=FILE`), is
recognised by `plain_input` before anything else is imported (`cli/entry.py`), and run here
without building the parser: argparse and the parser of every command cost a fifth of the
command's start. Any other command line, `--help` and every mistake included, goes through
argparse in `cli/main.py`, which calls `run_rank` with what it parsed. The suite holds the two
ways to the same output, stderr and exit status (tests/cli/test_cli.py).
"""

from __future__ import annotations

from codescout_mcp import limits
from codescout_mcp.cli.streams import EXIT_OK, CliError, guarded, leave, read_input, write_stdout
from codescout_mcp.core.text import shown

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Sequence
    from typing import Any, NoReturn


def plain_input(argv: Sequence[str]) -> str | None:
    """The FILE of `rank --input FILE`, `rank -i FILE` or `rank --input=FILE`, when that is the
    whole command line and argparse would read it so; None for any other command line.

    A FILE that starts with "-" (other than "-" itself, stdin) is left to argparse, which
    takes some such words for options.
    """
    if len(argv) == 3 and argv[0] == "rank" and argv[1] in ("--input", "-i"):
        name = argv[2]
    elif len(argv) == 2 and argv[0] == "rank" and argv[1].startswith("--input="):
        name = argv[1][len("--input=") :]
        return name if name else None
    else:
        return None
    return name if name == "-" or not name.startswith("-") else None


def main_plain(name: str) -> NoReturn:
    """Run `codescout rank --input NAME` (the input limit at its default) and end the process."""
    leave(guarded(lambda: run_rank(name, limits.MAX_INPUT_BYTES)))


def run_rank(name: str, max_input_bytes: int) -> int:
    """Rank the arguments in the file `name` (- for stdin) and print the answer; the exit status."""
    import gc

    from codescout_mcp.core.jsontext import JsonTextError
    from codescout_mcp.core.validate import InvalidArguments

    # A short-lived process that builds one large tree of objects and frees it at exit:
    # the collector would only walk it again and again (a third of the parse's time).
    gc.disable()
    source = "stdin" if name == "-" else shown(name)
    try:
        result = _ranked(read_input(name, source, max_input_bytes), source)
    except (JsonTextError, InvalidArguments) as error:
        raise CliError(str(error)) from None
    write_stdout(render_json(result))
    return EXIT_OK


# What the fast path built, left for the process's end to free (`streams.leave`: os._exit).
_KEPT: list[object] = []


def _ranked(data: bytes, source: str) -> Any:
    """The ranking of the arguments in `data`: a large input decoded into checked structs by msgspec
    where it is sure of it (`fastpath`), anything else read precisely and checked by `validate`.
    Either way the bytes go once decoded (the precise path's text too), so the peak is that of
    the input and its value together at most, as for `json.load`."""
    from codescout_mcp.core.fastpath import FAST_BYTES

    if len(data) >= FAST_BYTES:
        from codescout_mcp.core.fastpath import ranked

        holder = [data]
        del data
        answer = ranked(holder, keep=_KEPT)
        if answer is not None:
            return answer
        data = holder.pop()
    from codescout_mcp.core.jsontext import decode_utf8, parse_json_text
    from codescout_mcp.core.ranking import rank

    text = decode_utf8(data, source)
    del data
    value = parse_json_text(text, source)
    del text
    return rank(value)


def render_json(value: dict[str, Any]) -> bytes:
    """Pretty JSON, UTF-8, ending in a newline, as `rank` and `hits` print it."""
    import json

    text = json.dumps(value, ensure_ascii=False, indent=2) + "\n"
    # A lone surrogate (legal in JSON text as an escape) cannot be UTF-8: write it back as the
    # escape it came from, which is what backslashreplace produces for it.
    return text.encode("utf-8", "backslashreplace")
