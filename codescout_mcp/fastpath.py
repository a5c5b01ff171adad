"""Large arguments parsed by pydantic-core: fast when sure, precise when not.

`jsontext` reads JSON as JSON.parse does (lone surrogates, integers of any length, a located
error for every flaw), in Python: on a million hits that parse is most of `codescout rank`'s
time. pydantic-core, which the SDK already depends on (Rust, wheels for every platform),
parses the same text in about half the time and, caching keys as `json` does, in little more
memory. Its value is used only where it is sure to be the one `jsontext` would give; it
refuses, so the precise path reads and describes, a lone surrogate, an integer past Python's
digit limit, NaN and Infinity (`allow_inf_nan=False`), invalid UTF-8 and anything else
JSON.parse would not take; a byte-order mark is left to the precise path here. Duplicate keys
keep the last value, as JSON.parse and `json` do. Everything after the parse is shared: the
value goes to `rank`, whose contract check (the compiled accept path, then the precise
description of the first problem) cannot tell which parser made it, so the bytes can go as
soon as the value exists. Its validators were measured too: they build a tree of their own
before the Python values (about 40% more peak memory) and their integer bounds cost a second
on a million hits.

Memory: Rust cannot fail an allocation gracefully. Past a memory cap (`ulimit -v`, RLIMIT_AS or
RLIMIT_DATA) pydantic-core panics and the process aborts or hangs, where the precise path raises
MemoryError and `codescout rank` says "not enough memory". So the fast path is taken only when
the cap, if any, leaves ROOM_FACTOR times the input's size free (its peak is about five times).

The suite holds the two parsers to the same value, type for type and key for key, and so the
two paths to the same answer and the same error, on generated and mutated inputs
(tests/unit/test_fastpath.py). Only inputs of FAST_BYTES or more come here: importing
pydantic-core costs more than it saves on a small file.
"""

from __future__ import annotations

import codecs

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

FAST_BYTES: Final = 8 << 20
ROOM_FACTOR: Final = 8
UNSURE: Final = object()  # what `parsed` gives for an input it leaves to the precise path


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
    import sys

    if sys.platform == "win32":
        return 0  # not asked there: Windows has no rlimits
    import resource

    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    return peak if sys.platform == "darwin" else peak << 10  # bytes on macOS, KiB elsewhere


def parsed(data: bytes) -> Any:
    """The JSON value in `data` when pydantic-core is sure to read it as `jsontext` would; else UNSURE."""
    if data.startswith(codecs.BOM_UTF8) or not _room_for(ROOM_FACTOR * len(data)):
        return UNSURE
    from pydantic_core import from_json

    try:
        return from_json(data, allow_inf_nan=False, cache_strings="keys")
    except (ValueError, RecursionError):
        return UNSURE
