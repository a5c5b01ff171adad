"""A case-insensitive, case-preserving file system for the tests: FUSE over a backing folder.

macOS (APFS and HFS+ as it formats them) and Windows (NTFS) take `Src/a.py` and `src/a.py`
for one file, and macOS also takes a name in NFC and in NFD for one; Linux file systems do
neither, and this machine's kernel has no casefold ext4 or tmpfs and no vfat. So the tests
mount this pass-through instead: every operation goes to the same path in a backing folder,
except that each name on the way is looked up as those systems look it up:

* a name that exists exactly as typed is that entry;
* otherwise the entry whose name matches caselessly (Unicode canonical caseless matching:
  NFD of the case-folded NFD, so case and normalisation are both ignored) is;
* a new name (create, mkdir, symlink, link, the target of a rename) is stored as typed, or
  refused with EEXIST when an entry matching it caselessly exists already; a rename onto
  the file's own other spelling changes the stored spelling, as on macOS;
* listings show the stored names, and every spelling of a file reports the backing file's
  inode number (`use_ino`), so `os.stat` finds the same (st_dev, st_ino) for all of them.

Run as `python -m tests.casefold_fs BACKING MOUNTPOINT` (in the foreground, until unmounted).
`mounted()` does that for a test: it installs libfuse 2 with apt-get when it is missing (once,
whichever test worker comes first), mounts, waits until the mount shows, and unmounts after
(fusermount -u, or umount where there is none: root needs no fusermount). `folding_folder()`
is what tests ask for: this mount on Linux, the system's own volume on macOS and Windows.

Limits, known and accepted for the tests: names must be UTF-8 (fusepy decodes them so; APFS
asks the same); full case folding (`str.casefold`, so `ß` matches `ss`, where APFS folds one
character to one); the kernel caches nothing (entry and attribute timeouts are 0), so each
look-up is a round trip to Python; the kernel keeps one inode per spelling, so a file open
under one spelling does not see a write made under another until it is opened again (nothing
in the tests does that); the kernel names a folder as it was typed, so the current directory
(and git's --show-toplevel) is spelled as the user typed it, where macOS would give the stored
spelling; no extended attributes or ioctls (locks are the kernel's own). A change made to the backing
folder behind the mount's back is seen (listings are kept only while the folder's mtime and
inode stay as they were), but the tests make every change through the mount.
"""

from __future__ import annotations

import contextlib
import ctypes.util
import errno
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from tests.debian import apt_install

MOUNT_SECONDS = 20.0

# The mount is Linux's (see the docstring): mypy judging the suite as macOS or Windows, where
# some of the calls below do not exist, reads them through an untyped name.
if sys.platform == "linux":
    posix = os
else:
    posix: Any = os


def caseless(name: str) -> str:
    """The key under which two names are the same file: case and normalisation both ignored."""
    return unicodedata.normalize("NFD", unicodedata.normalize("NFD", name).casefold())


class Folding:
    """How the backing folder's entries are found by a name in any case or normalisation."""

    def __init__(self, backing: str) -> None:
        self.backing = os.path.realpath(backing)
        self._lock = threading.Lock()
        # backing folder -> ((st_ino, st_mtime_ns), {caseless key: stored name})
        self._listings: dict[str, tuple[tuple[int, int], dict[str, str]]] = {}

    def forget(self, *folders: str) -> None:
        """Drop the kept listings of folders whose entries we changed (mtimes can be coarse)."""
        with self._lock:
            for folder in folders:
                self._listings.pop(folder, None)

    def stored(self, folder: str, name: str) -> str | None:
        """The stored name in backing `folder` that `name` finds, or None."""
        if os.path.lexists(os.path.join(folder, name)):
            return name
        try:
            info = os.lstat(folder)
        except OSError:
            return None
        signature = (info.st_ino, info.st_mtime_ns)
        with self._lock:
            kept = self._listings.get(folder)
            if kept is None or kept[0] != signature:
                try:
                    names = os.listdir(folder)
                except OSError:
                    return None
                listing: dict[str, str] = {}
                for entry in sorted(names):  # the same one wins every time if two fold alike
                    listing.setdefault(caseless(entry), entry)
                kept = (signature, listing)
                self._listings[folder] = kept
            return kept[1].get(caseless(name))

    def real(self, path: str) -> str:
        """The backing path for a mount path (`/`-rooted); names not found stay as typed."""
        current = self.backing
        for part in path.split("/"):
            if part in ("", "."):
                continue
            found = self.stored(current, part)
            current = os.path.join(current, found if found is not None else part)
        return current

    def new(self, path: str) -> str:
        """The backing path for a name about to be made: EEXIST when it exists in any spelling."""
        parent, name = os.path.split(path.rstrip("/"))
        folder = self.real(parent)
        if self.stored(folder, name) is not None:
            raise OSError(errno.EEXIST, os.strerror(errno.EEXIST))
        return os.path.join(folder, name)


def _operations(backing: str) -> Any:
    from fuse import Operations  # type: ignore[import-untyped]

    class CaseFolding(Operations):  # type: ignore[misc]
        """Pass-through operations on the backing folder, each name found caselessly."""

        use_ns = True  # times in nanoseconds, as git compares them

        def __init__(self) -> None:
            self.fold = Folding(backing)

        # -- names

        def getattr(self, path: str, fh: Any = None) -> dict[str, int]:
            info = os.fstat(fh.fh) if fh is not None else os.lstat(self.fold.real(path))
            fields = ("st_mode", "st_ino", "st_nlink", "st_uid", "st_gid", "st_size", "st_blocks")
            attrs = {key: getattr(info, key) for key in fields}
            attrs |= {"st_atime": info.st_atime_ns, "st_mtime": info.st_mtime_ns, "st_ctime": info.st_ctime_ns}
            return attrs

        def readdir(self, path: str, fh: int) -> list[str]:
            return [".", "..", *os.listdir(self.fold.real(path))]

        def readlink(self, path: str) -> str:
            return os.readlink(self.fold.real(path))

        def access(self, path: str, amode: int) -> None:
            if not os.access(self.fold.real(path), amode):
                raise OSError(errno.EACCES, os.strerror(errno.EACCES))

        def statfs(self, path: str) -> dict[str, int]:
            info = posix.statvfs(self.fold.real(path))
            keys = ("f_bavail", "f_bfree", "f_blocks", "f_bsize", "f_favail", "f_ffree", "f_files", "f_flag")
            return {key: getattr(info, key) for key in (*keys, "f_frsize", "f_namemax")}

        # -- making and removing names

        def mkdir(self, path: str, mode: int) -> None:
            real = self.fold.new(path)
            os.mkdir(real, mode)
            self.fold.forget(os.path.dirname(real))

        def mknod(self, path: str, mode: int, dev: int) -> None:
            real = self.fold.new(path)
            posix.mknod(real, mode, dev)
            self.fold.forget(os.path.dirname(real))

        def symlink(self, target: str, source: str) -> None:  # fusepy passes (link name, its target)
            real = self.fold.new(target)
            os.symlink(source, real)
            self.fold.forget(os.path.dirname(real))

        def link(self, target: str, source: str) -> None:  # (new name, existing file)
            real = self.fold.new(target)
            os.link(self.fold.real(source), real)
            self.fold.forget(os.path.dirname(real))

        def unlink(self, path: str) -> None:
            real = self.fold.real(path)
            os.unlink(real)
            self.fold.forget(os.path.dirname(real))

        def rmdir(self, path: str) -> None:
            real = self.fold.real(path)
            os.rmdir(real)
            self.fold.forget(os.path.dirname(real), real)

        def rename(self, old: str, new: str) -> None:
            source = self.fold.real(old)
            source_folder = os.path.dirname(source)
            parent, name = os.path.split(new.rstrip("/"))
            folder = self.fold.real(parent)
            existing = self.fold.stored(folder, name)
            target = os.path.join(folder, name)
            if existing is not None and existing != name and os.path.join(folder, existing) != source:
                # Onto another file's other spelling: replace that file, then take the new spelling.
                os.rename(source, os.path.join(folder, existing))
                source = os.path.join(folder, existing)
            os.rename(source, target)  # a rename onto its own other spelling just respells it
            self.fold.forget(source_folder, folder)

        # -- attributes

        def chmod(self, path: str, mode: int) -> None:
            os.chmod(self.fold.real(path), mode)  # (a link's own mode cannot be changed on Linux)

        def chown(self, path: str, uid: int, gid: int) -> None:
            posix.chown(self.fold.real(path), uid, gid, follow_symlinks=False)

        def utimens(self, path: str, times: tuple[int, int] | None = None) -> None:
            real = self.fold.real(path)
            if times is None:
                os.utime(real, follow_symlinks=False)
            else:
                os.utime(real, ns=times, follow_symlinks=False)

        def truncate(self, path: str, length: int, fh: Any = None) -> None:
            if fh is not None:
                os.ftruncate(fh.fh, length)
            else:
                os.truncate(self.fold.real(path), length)

        # -- contents

        def open(self, path: str, fi: Any) -> None:
            fi.fh = os.open(self.fold.real(path), fi.flags)

        def create(self, path: str, mode: int, fi: Any) -> None:
            real = self.fold.real(path)  # an existing file in another spelling, or the name as typed
            if os.path.lexists(real) and fi.flags & os.O_EXCL:
                raise OSError(errno.EEXIST, os.strerror(errno.EEXIST))
            fi.fh = os.open(real, fi.flags | os.O_CREAT, mode)
            self.fold.forget(os.path.dirname(real))

        def read(self, path: str, size: int, offset: int, fh: Any) -> bytes:
            data: bytes = posix.pread(fh.fh, size, offset)
            return data

        def write(self, path: str, data: bytes, offset: int, fh: Any) -> int:
            written: int = posix.pwrite(fh.fh, data, offset)
            return written

        def flush(self, path: str, fh: Any) -> None:
            pass  # each write went to the backing file at once

        def fsync(self, path: str, datasync: int, fh: Any) -> None:
            if datasync:
                posix.fdatasync(fh.fh)
            else:
                os.fsync(fh.fh)

        def release(self, path: str, fh: Any) -> None:
            os.close(fh.fh)

    return CaseFolding()


def serve(backing: str, mountpoint: str) -> None:
    """Mount the folding file system over `backing` at `mountpoint`; return once unmounted."""
    from fuse import FUSE  # type: ignore[import-untyped, unused-ignore]

    FUSE(
        _operations(backing),
        mountpoint,
        foreground=True,
        raw_fi=True,
        use_ino=True,  # every spelling reports the backing file's inode number
        hard_remove=True,  # an unlinked open file is gone at once (no .fuse_hidden files)
        entry_timeout=0,  # the kernel keeps no name -> file answer: a rename shows at once
        negative_timeout=0,
        attr_timeout=0,
        fsname="casefold",
        subtype="casefold",
    )


# --- what a test uses ---------------------------------------------------------------------------


def unmounter() -> list[str]:
    """The command that unmounts a FUSE mount here (fusermount from fuse 2 or 3, else umount)."""
    for name in ("fusermount", "fusermount3"):
        found = shutil.which(name)
        if found is not None:
            return [found, "-u"]
    return ["umount"]


def ensure_fuse() -> None:
    """libfuse 2 (which fusepy loads) and a fusermount, installed with apt-get when missing.

    Test workers run this at once: a lock file makes the first install and the others wait.
    """
    if sys.platform == "win32":  # never called there; said so for mypy judging the suite as Windows
        raise RuntimeError("FUSE is POSIX-only")
    import fcntl

    if not os.path.exists("/dev/fuse"):
        raise RuntimeError("/dev/fuse is missing: this kernel has no FUSE, so no case-insensitive mount here")
    with open(os.path.join(tempfile.gettempdir(), "codescout-casefold-install.lock"), "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if ctypes.util.find_library("fuse") is None:
            try:
                apt_install("libfuse2")
            except RuntimeError:  # Debian 13 on: the 64-bit-time build has its own name
                apt_install("libfuse2t64")
        if unmounter() == ["umount"] and posix.geteuid() != 0:  # root mounts and unmounts without it
            apt_install("fuse")


def _mounted_at(mountpoint: str) -> bool:
    target = os.path.realpath(mountpoint)
    with open("/proc/self/mounts", encoding="utf-8", errors="surrogateescape") as mounts:
        return any(line.split()[1] == target for line in mounts if line.strip())


@contextlib.contextmanager
def mounted(backing: Path, mountpoint: Path) -> Iterator[Path]:
    """A case-insensitive, case-preserving folder at `mountpoint`, stored in `backing`."""
    ensure_fuse()
    backing.mkdir(parents=True, exist_ok=True)
    mountpoint.mkdir(parents=True, exist_ok=True)
    root = str(Path(__file__).resolve().parent.parent)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([root, os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    log = open(backing.parent / f"{mountpoint.name}.fuse.log", "wb")  # noqa: SIM115 - open for the mount's life
    server = subprocess.Popen(
        [sys.executable, "-m", "tests.casefold_fs", str(backing), str(mountpoint)],
        stdin=subprocess.DEVNULL,
        stdout=log,
        stderr=subprocess.STDOUT,
        env=env,
    )
    try:
        deadline = time.monotonic() + MOUNT_SECONDS
        while not _mounted_at(str(mountpoint)):
            if server.poll() is not None or time.monotonic() > deadline:
                log.flush()
                said = (backing.parent / f"{mountpoint.name}.fuse.log").read_text(errors="replace")
                raise RuntimeError(f"the case-folding file system did not mount (status {server.poll()}): {said}")
            time.sleep(0.02)
        yield mountpoint
    finally:
        if _mounted_at(str(mountpoint)):
            subprocess.run([*unmounter(), str(mountpoint)], capture_output=True, check=False)
        try:
            server.wait(timeout=MOUNT_SECONDS)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
            subprocess.run(["umount", "-l", str(mountpoint)], capture_output=True, check=False)
        log.close()


@contextlib.contextmanager
def folding_folder(tmp_path: Path) -> Iterator[Path]:
    """An empty folder that ignores case and normalisation: this mount on Linux, the temp
    folder itself where the system's own file system does (macOS, Windows)."""
    if sys.platform.startswith("linux"):
        with mounted(tmp_path / "backing", tmp_path / "folding") as folder:
            yield folder
        return
    folder = tmp_path / "folding"
    folder.mkdir()
    (folder / "probe").write_bytes(b"")
    if not (folder / "PROBE").exists():
        raise RuntimeError(f"{folder} tells letter case apart; these tests need a volume that does not")
    (folder / "probe").unlink()
    yield folder


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
