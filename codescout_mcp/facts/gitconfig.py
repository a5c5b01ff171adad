"""What a repository's config makes git open, checked before git opens it.

A checkout's own config (`.git/config`, and whatever it includes) can name files for git to
read: an attributes file, an excludes file, a diff order file, another config to include. A
FIFO there holds git until its deadline (and the workspace with it); a device such as
/dev/zero feeds it without end. No list of such settings stays complete, so the rule covers
the class:

* the config files git reads for the repository, and every file they include
  (`include.path`, `includeIf.*.path`, followed here with `--no-includes`, as far as git
  follows them), must be regular files, before any git runs in the repository;
* then every value of every setting git would honour that names a FIFO, a device or a socket
  (absolute, or `~/`-relative; a relative one for settings whose names say they are paths),
  other than the null device, is refused, naming the setting and the file it came from;
* the files under `objects/` that git reads as it walks history (loose objects, packs, the
  commit-graph, the multi-pack index), and `info/` (sparse-checkout, grafts), must be regular
  files too, however they are reached (a link to a FIFO is one).

Each refusal is a BlockingFile (`gitfiles.py`), at once, naming what would have held git.
Every git also runs with a bound on its memory (`processes.CHILD_DATA_BYTES`).
"""

from __future__ import annotations

import contextlib
import os
import stat
import sys
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Final

from codescout_mcp.core.text import shown
from codescout_mcp.facts.git import Git, GitError
from codescout_mcp.facts.gitfiles import BlockingFile, check_for_git
from codescout_mcp.system.paths import describe_kind
from codescout_mcp.system.platform import decode_name

INCLUDES: Final = r"^include(if\..*)?\.path$"
# git follows includes at most this deep (config.c's MAX_INCLUDE_DEPTH).
MAX_INCLUDE_DEPTH: Final = 10
# Settings whose relative values are paths (from the repository's root).
PATH_SUFFIXES: Final = ("file", "path", "dir", "worktree")


def check_includes(configs: Iterable[Path], git: Git, seconds: float | None = None) -> None:
    """BlockingFile for a config file, or a file one includes (and so on), that is not a regular file.

    Each file is read by git itself, as a plain file (`git config --file F --no-includes`), run
    outside any repository: a git run in the repository would follow the includes before
    anything could look at them.
    """
    pending = [(Path(config), 0) for config in configs]
    seen: set[Path] = set()
    with _outside_any_repository() as (nowhere, ceiling):
        env = {**git.env, "GIT_CEILING_DIRECTORIES": ceiling, "GIT_CONFIG_NOSYSTEM": "1"}
        while pending:
            config, depth = pending.pop()
            if config in seen or depth > MAX_INCLUDE_DEPTH:
                continue
            seen.add(config)
            check_for_git([config])
            if not config.is_file():
                continue
            argv = git.command("config", "--file", str(config), "--no-includes", "-z", "--get-regexp", INCLUDES)
            status, out, err = git.run_argv(argv, "config", cwd=nowhere, env=env, seconds=seconds)
            if status not in (0, 1):  # 1: no include at all
                raise GitError(f"git cannot read the config {shown(str(config))}: {decode_name(err).strip()}")
            for entry in filter(None, out.split(b"\0")):
                _, _, value = entry.partition(b"\n")
                target = Path(os.path.expanduser(decode_name(value)))
                if not target.is_absolute():
                    target = config.parent / target
                pending.append((target, depth + 1))


@contextlib.contextmanager
def _outside_any_repository() -> Iterator[tuple[str, str]]:
    """A folder no repository holds, to run git in, and the ceiling that keeps git from looking
    above it. On Linux, /proc (where nobody can make a .git), so that a read-only root with no
    writable temporary folder (`docker run --read-only`) needs none; elsewhere a temporary folder."""
    if sys.platform == "linux" and os.path.isdir("/proc/self"):
        yield "/proc", "/"
        return
    import tempfile

    with tempfile.TemporaryDirectory(prefix="codescout-config-") as scratch:
        nowhere = os.path.join(scratch, "outside-any-repository")
        os.mkdir(nowhere)
        yield nowhere, scratch


def check_values(git: Git, seconds: float | None = None) -> list[str]:
    """BlockingFile for a setting git would honour whose value names a FIFO, a device or a socket;
    else the keys of every setting (in git's spelling: section and key in lower case)."""
    status, out, err = git.run("config", "-z", "--list", "--show-origin", check=False, seconds=seconds)
    if status != 0:
        raise GitError(f"git config failed in {shown(str(git.where))}: {decode_name(err).strip()}")
    fields = out.split(b"\0")
    keys = []
    for origin, entry in zip(fields[0::2], fields[1::2], strict=False):
        key, _, value = decode_name(entry).partition("\n")
        keys.append(key)
        if not value or value == os.devnull:
            continue
        candidate = os.path.expanduser(value)
        if not os.path.isabs(candidate):
            if not key.lower().endswith(PATH_SUFFIXES):
                continue
            candidate = os.path.join(git.where, candidate)
        try:
            mode = os.stat(candidate).st_mode
        except (OSError, ValueError):
            continue
        if not (stat.S_ISREG(mode) or stat.S_ISDIR(mode)):
            where = decode_name(origin).removeprefix("file:")
            raise BlockingFile(
                f"the setting {shown(key)} (in {shown(where)}) names {shown(value)}, {describe_kind(mode)}, "
                "which git would wait on; the repository cannot be read"
            )
    return keys


def check_objects(common_dir: Path) -> None:
    """BlockingFile for a file git reads under objects/ or info/ that is not a regular file (links followed)."""
    objects = common_dir / "objects"
    places = [common_dir / "info", objects / "info", objects / "info" / "commit-graphs", objects / "pack"]
    with contextlib.suppress(OSError):  # no objects folder: git's to judge
        places += [objects / entry.name for entry in os.scandir(objects) if len(entry.name) == 2 and entry.is_dir()]
    for folder in places:
        try:
            entries = list(os.scandir(folder))
        except OSError:
            continue
        # Most entries are regular files, which the directory listing says without a stat.
        check_for_git(
            entry.path for entry in entries if not entry.is_file(follow_symlinks=False) and not entry.is_dir()
        )
