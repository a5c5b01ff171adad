"""Debian roots made by debootstrap, once, and kept in the git-ignored .cache/roots/.

scripts/other-pythons runs the suite in roots of this machine's own architecture (other
Pythons); scripts/release_rehearsal.py runs the wheel under qemu-aarch64 in an arm64 root. A root
is remade when its recipe (suite, architecture, packages) changes, and is built in a folder
beside it that is renamed into place only when complete, so an interrupted build never passes
for a root.

An arm64 root on an amd64 machine is made with `debootstrap --foreign`, which unpacks the base
but leaves the second stage (running the packages' scripts) to a process that could run arm64
programs: here that needs binfmt handlers, which this machine lacks. The packages asked for are
downloaded but not unpacked by the first stage, so they are unpacked here with dpkg-deb. No
package's scripts ever run: enough for a Python to start under qemu-user, not a system to boot.
"""

from __future__ import annotations

import json
import platform
import shutil
import subprocess
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
ROOTS = REPO / ".cache" / "roots"
MARKER = ".debian-root.json"
# What `uname -m` says, as Debian names the architecture.
DEBIAN_ARCHITECTURES = {"x86_64": "amd64", "aarch64": "arm64"}


class RootError(Exception):
    """A root could not be made: one line for the user, with where the whole log is."""


@dataclass(frozen=True)
class Recipe:
    """What a root holds: a Debian suite for an architecture, with packages added to its minimal base."""

    suite: str
    packages: tuple[str, ...]
    architecture: str = DEBIAN_ARCHITECTURES.get(platform.machine(), platform.machine())

    @property
    def foreign(self) -> bool:
        """True when this machine cannot run the root's programs itself."""
        return self.architecture != DEBIAN_ARCHITECTURES.get(platform.machine(), platform.machine())


def mirror() -> str:
    """The Debian mirror this machine's apt uses (its first source that is not security's)."""
    sources = Path("/etc/apt/sources.list.d/debian.sources")
    if sources.exists():
        for stanza in sources.read_text(encoding="utf-8").split("\n\n"):
            fields = {}
            for line in stanza.splitlines():
                name, colon, value = line.partition(":")
                if colon and not line.startswith((" ", "#")):
                    fields[name.strip()] = value.strip()
            suites = fields.get("Suites", "").split()
            if "deb" in fields.get("Types", "").split() and suites and not suites[0].endswith("-security"):
                return fields["URIs"].split()[0]
    listed = Path("/etc/apt/sources.list")
    if listed.exists():
        for line in listed.read_text(encoding="utf-8").splitlines():
            words = line.split()
            if len(words) >= 3 and words[0] == "deb" and not words[2].endswith("-security"):
                return words[1]
    raise RootError(f"no Debian archive named in {sources} or {listed}")


def mounts_under(path: Path) -> list[str]:
    """Mount points at or below a folder (so it is never deleted through a bind mount)."""
    prefix = str(path.resolve())
    points = [line.split()[4] for line in Path("/proc/self/mountinfo").read_text(encoding="utf-8").splitlines()]
    return [point for point in points if point == prefix or point.startswith(prefix + "/")]


def remove(path: Path) -> None:
    """Delete a folder, refusing when something is mounted inside it."""
    if path.exists() or path.is_symlink():
        mounted = mounts_under(path)
        if mounted:
            raise RootError(f"{mounted[0]} is mounted; unmount it before {path} can be removed")
        shutil.rmtree(path)


def make_root(
    name: str, recipe: Recipe, *, finish: Callable[[Path], None] | None = None, say: Callable[[str], None] = print
) -> Path:
    """The root .cache/roots/NAME for `recipe`, made unless a root of the same recipe is there.

    `finish` runs on the new root before it is put in place (links, folders its user needs).
    """
    root = ROOTS / name
    marker = root / MARKER
    wanted = asdict(recipe)
    wanted["packages"] = list(recipe.packages)
    if marker.exists() and json.loads(marker.read_text(encoding="utf-8")) == wanted:
        return root
    ROOTS.mkdir(parents=True, exist_ok=True)
    partial = ROOTS / f"{name}.partial"
    remove(partial)
    remove(root)
    say(f"making the root {root} (Debian {recipe.suite}, {recipe.architecture})")
    started = time.monotonic()
    log = ROOTS / f"{name}.debootstrap.log"
    argv = ["debootstrap", "--variant=minbase", f"--include={','.join(recipe.packages)}"]
    if recipe.foreign:
        argv += ["--foreign", f"--arch={recipe.architecture}"]
    with open(log, "wb") as out:
        done = subprocess.run(
            [*argv, recipe.suite, str(partial), mirror()], stdout=out, stderr=subprocess.STDOUT, check=False
        )
    if done.returncode != 0:
        tail = log.read_text(encoding="utf-8", errors="replace").splitlines()[-20:]
        raise RootError("debootstrap failed:\n" + "\n".join(tail) + f"\n(whole log: {log})")
    if recipe.foreign:
        _unpack_downloaded(partial)
    if finish is not None:
        finish(partial)
    (partial / MARKER).write_text(json.dumps(wanted), encoding="utf-8")
    partial.rename(root)
    say(f"made the root {root} in {time.monotonic() - started:.0f} s")
    return root


def _unpack_downloaded(root: Path) -> None:
    """Unpack every package the first stage downloaded (it unpacked only the base) into the root."""
    archives = sorted((root / "var" / "cache" / "apt" / "archives").glob("*.deb"))
    if not archives:
        raise RootError(f"debootstrap --foreign downloaded no packages into {root}")
    for archive in archives:
        done = subprocess.run(["dpkg-deb", "-x", str(archive), str(root)], capture_output=True, check=False)
        if done.returncode != 0:
            said = done.stderr.decode("utf-8", "replace").strip()
            raise RootError(f"dpkg-deb could not unpack {archive.name}: {said}")
