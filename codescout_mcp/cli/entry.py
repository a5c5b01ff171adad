"""The two commands' entry points, kept apart so that they run before anything else is imported.

`codescout-mcp` (and `codescout mcp`) first make a stop signal end the process at once with
exit status 0, until a transport puts its own handlers in place: nothing has been read or
answered yet. Without that, SIGTERM in the first tenths of a second (argparse, the package's
modules) would end the server with status 143, and Ctrl-C with a KeyboardInterrupt traceback.
What is left is the interpreter's own start, before any of codescout runs.
"""

from __future__ import annotations

import os
import sys


def stop_at_once_on_signals() -> None:
    """Until a transport's own handlers replace it: a stop signal ends the process, exit status 0."""
    import signal

    from codescout_mcp.system.platform import stop_signals

    for signum in stop_signals():
        signal.signal(signum, lambda signum, frame: os._exit(0))


def codescout() -> int:
    """The `codescout` command."""
    if sys.argv[1:2] == ["mcp"]:
        stop_at_once_on_signals()
    elif sys.argv[1:2] == ["rank"]:  # `rank --input FILE`, as usual: without argparse (cli/rank.py)
        from codescout_mcp.cli.rank import main_plain, plain_input

        name = plain_input(sys.argv[1:])
        if name is not None:
            main_plain(name)
    from codescout_mcp.cli.main import main

    return main()


def codescout_mcp() -> int:
    """The `codescout-mcp` command: `codescout mcp` under the name `uvx codescout-mcp` runs."""
    stop_at_once_on_signals()
    from codescout_mcp.cli.main import mcp_main

    return mcp_main()
