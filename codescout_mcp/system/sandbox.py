"""Children that may read only what codescout names: Linux's Landlock, applied as a child starts.

ripgrep walks a workspace by name: were a folder inside swapped for a link to somewhere else
while it runs (and swapped back before codescout looks again), it would read and count files
outside. On Linux 5.13 and newer with Landlock enabled, a search's ripgrep is started confined:
it may read files and list folders beneath the workspace folder (the one codescout checked, held
open, whatever its name leads to since), read the few files outside that a search needs (ignore
files in the folders above, git's exclude files, the global gitignore) and its own program and
libraries, and nothing else, and may write nothing. A read outside is refused by the kernel, so
nothing outside can be counted, however the tree changes under the search.

The rules are built in the parent (`confine`); the child applies them between fork and exec
(`Confinement.apply`, as `preexec_fn`): two system calls made through ctypes objects prepared
in advance, so that nothing is imported or looked up in the child. Where Landlock is missing
(another system, an older or differently built kernel, a seccomp profile that refuses its calls)
`confine` answers None and the caller falls back to checking the folders after the run.
"""

from __future__ import annotations

import contextlib
import os
import struct
import sys

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from collections.abc import Iterable
    from typing import Final

# System call numbers: the same on every architecture Linux gave them to (they came after the
# unified table), and the flags of <linux/landlock.h>.
_CREATE_RULESET: Final = 444
_ADD_RULE: Final = 445
_RESTRICT_SELF: Final = 446
_CREATE_RULESET_VERSION: Final = 1
_RULE_PATH_BENEATH: Final = 1
_PR_SET_NO_NEW_PRIVS: Final = 38

EXECUTE: Final = 1 << 0
READ_FILE: Final = 1 << 2
READ_DIR: Final = 1 << 3
# Every file-system right each ABI version knows (those not granted are refused): ABI 1 has
# bits 0-12, ABI 2 adds REFER, 3 TRUNCATE, 5 IOCTL_DEV.
_HANDLED_BY_ABI: Final = {1: (1 << 13) - 1, 2: (1 << 14) - 1, 3: (1 << 15) - 1, 4: (1 << 15) - 1}
_HANDLED_NEWEST: Final = (1 << 16) - 1
# The rights a rule on a file (not a folder) may grant.
_FILE_RIGHTS: Final = EXECUTE | READ_FILE

# Where a dynamically linked program's loader and libraries live (a program whose libraries
# are elsewhere fails to start confined, and is then run unconfined: `Confinement.failed`).
LIBRARY_FOLDERS: Final = ("/lib", "/lib32", "/lib64", "/libx32", "/usr/lib", "/usr/lib32", "/usr/lib64", "/usr/libx32")
LIBRARY_FILES: Final = ("/etc/ld.so.cache",)


class _Native:
    """The ctypes objects the child calls, made once in the parent."""

    def __init__(self) -> None:
        import ctypes

        self.ctypes = ctypes
        libc = ctypes.CDLL(None, use_errno=True)
        self.syscall = libc.syscall
        self.syscall.restype = ctypes.c_long
        self.prctl = libc.prctl
        self.prctl.restype = ctypes.c_int

        class RulesetAttr(ctypes.Structure):
            _fields_ = (("handled_access_fs", ctypes.c_uint64),)

        self.RulesetAttr = RulesetAttr


_NATIVE: _Native | None = None
_ABI: int | None = None  # the kernel's Landlock ABI version; 0: none


def abi_version() -> int:
    """The Landlock ABI version the kernel offers this process (0: none, or not Linux)."""
    global _ABI, _NATIVE
    if _ABI is None:
        _ABI = 0
        if sys.platform == "linux":
            try:
                native = _Native()
                found = native.syscall(_CREATE_RULESET, None, 0, _CREATE_RULESET_VERSION)
            except (OSError, AttributeError):  # no libc to load, or no syscall() in it
                found = -1
            if found > 0:
                _NATIVE = native
                _ABI = int(found)
    return _ABI


class Confinement:
    """A Landlock ruleset, ready for a child to apply to itself (`apply`, its `preexec_fn`)."""

    def __init__(self, ruleset: int, native: _Native) -> None:
        self.ruleset = ruleset
        self._no_new_privs = native.prctl
        self._restrict = native.syscall

    def apply(self) -> None:
        """In the child, before exec: from now on it may do only what the rules grant."""
        if self._no_new_privs(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError("cannot set no_new_privs")
        if self._restrict(_RESTRICT_SELF, self.ruleset, 0) != 0:
            raise OSError("cannot apply the Landlock rules")

    def close(self) -> None:
        with contextlib.suppress(OSError):
            os.close(self.ruleset)


def confine(*, read_beneath: Iterable[int | str], read_files: Iterable[str], run: Iterable[str]) -> Confinement | None:
    """Rules that let a child list and read beneath `read_beneath` (folders: open descriptors, or
    paths), read `read_files`, run and read `run` (its program) and the system's libraries, and
    nothing more; None where Landlock cannot be had. Paths that do not exist are left out."""
    version = abi_version()
    native = _NATIVE
    if not version or native is None:
        return None
    ctypes = native.ctypes
    handled = _HANDLED_BY_ABI.get(version, _HANDLED_NEWEST)
    attr = native.RulesetAttr(handled_access_fs=handled)
    ruleset = native.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.sizeof(attr), 0)
    if ruleset < 0:
        return None
    confinement = Confinement(int(ruleset), native)
    try:
        for folder in read_beneath:
            _add(native, confinement.ruleset, folder, READ_FILE | READ_DIR)
        for folder in LIBRARY_FOLDERS:
            _add(native, confinement.ruleset, folder, READ_FILE | READ_DIR | EXECUTE)
        for path in (*LIBRARY_FILES, *read_files):
            _add(native, confinement.ruleset, path, READ_FILE)
        for program in run:
            _add(native, confinement.ruleset, program, READ_FILE | EXECUTE)
    except OSError:
        confinement.close()
        return None
    return confinement


def _add(native: _Native, ruleset: int, where: int | str, rights: int) -> None:
    """Grant `rights` beneath `where` (a folder or a file; a descriptor or a path)."""
    if sys.platform != "linux":  # (never called elsewhere: `confine` needs Landlock)
        return
    opened = None
    if isinstance(where, str):
        try:
            opened = fd = os.open(where, os.O_PATH | os.O_CLOEXEC)
        except OSError:
            return  # nothing there to grant
    else:
        fd = where
    try:
        if not _is_folder(fd):
            rights &= _FILE_RIGHTS
        ctypes = native.ctypes
        # struct landlock_path_beneath_attr is packed: a u64 then an s32, 12 bytes, no padding.
        attr = ctypes.create_string_buffer(struct.pack("=Qi", rights, fd), 12)
        if native.syscall(_ADD_RULE, ruleset, _RULE_PATH_BENEATH, attr, 0) != 0:
            raise OSError(ctypes.get_errno(), "cannot add a Landlock rule")
    finally:
        if opened is not None:
            os.close(opened)


def _is_folder(fd: int) -> bool:
    import stat

    return stat.S_ISDIR(os.fstat(fd).st_mode)
