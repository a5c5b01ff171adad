"""Large arguments parsed by pydantic-core: fast when sure, precise when not.

`jsontext` reads JSON as JSON.parse does (lone surrogates, integers of any length, a located
error for every flaw), in Python: on a million hits that parse is most of `codescout rank`'s
time. pydantic-core, which the SDK already depends on (Rust, wheels for every platform),
parses the same text faster than `json` and, caching keys as `json` does, in no more memory.
Its values then go through the contract's own compiled accept path (`validate.RANK_CHECKER`),
which takes exactly the values the precise path would take. pydantic-core is used only where
its values are sure to be the ones `jsontext` would give:

* it refuses, so the precise path reads and describes: a lone surrogate, an integer past
  Python's digit limit, NaN and Infinity (`allow_inf_nan=False`), invalid UTF-8, and
  anything else JSON.parse would not take; a byte-order mark is left to the precise path here;
* the accept path refuses anything the contract refuses (an integer of more than
  MAX_INTEGER_DIGITS digits too, a path given twice), and then the precise path says where;
* duplicate keys keep the last value, as JSON.parse and `json` do.

Its validators were measured too: they build a tree of their own before the Python values
(about 40% more peak memory) and their integer bounds cost a second on a million hits.

Memory: Rust cannot fail an allocation gracefully. Past a memory cap (`ulimit -v`, RLIMIT_AS or
RLIMIT_DATA) pydantic-core panics and the process aborts or hangs, where the precise path raises
MemoryError and `codescout rank` says "not enough memory". So the fast path is taken only when
the cap, if any, leaves ROOM_FACTOR times the input's size free (its peak is about five times).

The suite holds the two paths to the same answer and the same error on generated and mutated
inputs (tests/test_fastpath.py). Only inputs of FAST_BYTES or more come here: importing
pydantic-core costs more than it saves on a small file.
"""

from __future__ import annotations

import codecs

# Typing names are for the checker only: importing typing costs `codescout rank` start-up time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

    from codescout_mcp.validate import Arguments

FAST_BYTES: Final = 8 << 20
ROOM_FACTOR: Final = 8


def _room_for(size: int) -> bool:
    """Whether a memory cap on this process, if any, leaves `size` bytes free."""
    import sys

    if sys.platform == "win32":
        return True  # no rlimits; a job object's cap is not looked at
    import resource

    for limit, field in ((resource.RLIMIT_AS, "VmSize:"), (resource.RLIMIT_DATA, "VmData:")):
        cap = resource.getrlimit(limit)[0]
        if cap != resource.RLIM_INFINITY and cap - _in_use(field) < size:
            return False
    return True


def _in_use(field: str) -> int:
    """This process's size in bytes by /proc's `field`; where there is no /proc, its peak resident size."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith(field):
                    return int(line.split()[1]) << 10
    except (OSError, ValueError):
        pass
    import resource
    import sys

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak << 10  # bytes on macOS, KiB elsewhere


def checked(data: bytes) -> Arguments | None:
    """The arguments in `data`, parsed and checked, when the fast path is sure of them; else None."""
    if data.startswith(codecs.BOM_UTF8) or not _room_for(ROOM_FACTOR * len(data)):
        return None
    from pydantic_core import from_json

    from codescout_mcp.validate import RANK_CHECKER

    try:
        value = from_json(data, allow_inf_nan=False, cache_strings="keys")
    except (ValueError, RecursionError):
        return None
    return RANK_CHECKER.accept(value)
