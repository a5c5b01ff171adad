"""The defaults of the command-line flags, stated once: the CLI's help text and the transports read them here.

Plain constants (standard library only), so that the CLI can format its help from them
without importing a transport.
"""

from __future__ import annotations

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

MIB: Final = 1024 * 1024

# The CLI: the largest input `rank` and `hits` read.
MAX_INPUT_BYTES: Final = 256 * MIB

# stdio: the largest message read from stdin.
MAX_MESSAGE_BYTES: Final = 32 * MIB

# streamable HTTP.
HOST: Final = "127.0.0.1"
PORT: Final = 8000
MAX_BODY_BYTES: Final = 32 * MIB
MAX_BUFFERED_BYTES: Final = 32 * MIB
REQUEST_TIMEOUT: Final = 30.0
WRITE_TIMEOUT: Final = 30.0
MAX_CONCURRENT: Final = 32
SHUTDOWN_TIMEOUT: Final = 10.0
KEEP_ALIVE_TIMEOUT: Final = 5.0
LOG_LEVEL: Final = "warning"

# Ranking is CPU work: a call of more hits than this is ranked in a worker thread, so that the
# event loop keeps answering pings and reading other requests while it runs.
OFFLOAD_HITS: Final = 5_000


def in_words(size: int) -> str:
    """A byte count as the help text gives it: exact, and in MiB when it is a whole number of them."""
    return f"{size}, {size // MIB} MiB" if size % MIB == 0 else str(size)


def seconds(value: float) -> str:
    return f"{value:g}"
