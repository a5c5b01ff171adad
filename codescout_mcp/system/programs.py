"""The programs codescout runs (git, ripgrep, and on Windows taskkill), found safely: from PATH's
absolute folders only, never the current folder, and Windows' own by their full path.
Standard library only.
"""

from __future__ import annotations

import ntpath
import os

from codescout_mcp.system.platform import CURRENT, System

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Callable
    from typing import Final

# What a program found on PATH may be called on Windows. CreateProcess runs these itself; a
# `.bat` or `.cmd` would run through cmd.exe, whose reading of arguments no quoting makes safe
# for file names, so such a file is never taken for the program.
WINDOWS_PROGRAM_SUFFIXES: Final = (".exe", ".com")


def find_program(
    name: str,
    system: System = CURRENT,
    *,
    path: str | None = None,
    is_program: Callable[[str], bool] | None = None,
) -> str | None:
    """The program `name` as an absolute path, from PATH's absolute folders only (the system's
    default folders, `os.defpath`, when PATH is not set, as exec looks); None if none has it.

    Unlike `shutil.which`, the current folder is never searched, whether Windows would search
    it first or PATH names it (an empty entry, `.`, any relative folder): codescout runs in
    checkouts nobody vetted, and a `git` committed at a checkout's root must not be what runs.
    """
    paths = system.paths
    entries = (os.environ.get("PATH", os.defpath) if path is None else path).split(paths.pathsep)
    suffixes = WINDOWS_PROGRAM_SUFFIXES if system.windows else ("",)
    if system.windows and name.lower().endswith(suffixes):
        suffixes = ("",)
    check = is_program if is_program is not None else _is_program
    for entry in entries:
        if system.windows:
            entry = entry.strip().strip('"')
            if not paths.splitdrive(entry)[0]:  # `\bin` is relative to the current drive
                continue
        if not entry or not paths.isabs(entry):
            continue
        for suffix in suffixes:
            candidate: str = paths.join(entry, name + suffix)
            if check(candidate):
                return candidate
    return None


def _is_program(candidate: str) -> bool:
    return os.path.isfile(candidate) and os.access(candidate, os.X_OK)


def windows_system_program(name: str) -> str:
    """A program of Windows' own (taskkill.exe), by its full path in System32, never by PATH."""
    root = os.environ.get("SYSTEMROOT") or os.environ.get("WINDIR") or "C:\\Windows"  # any case, on Windows
    return ntpath.join(root, "System32", name)
