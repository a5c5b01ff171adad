"""Running git on a checkout nobody vetted: fixed arguments, a deadline, and nothing it configures.

A repository's own config (`.git/config`, files it includes, a submodule's config) can name
commands for git to run: a clean or smudge filter for files its `.gitattributes` names, an
fsmonitor hook, a pager, a transport for fetching missing objects. codescout only asks git
what changed and when, so every git it starts is told, on its command line (which outranks
every config file), to run none of them:

* filters: each filter driver the config defines gets an empty clean, smudge and process
  command and `required=false` (listed with `git config` first; `status` is the one command
  here that may read a file's content, to tell whether a file whose time changed really
  changed, and it reads it raw);
* `core.fsmonitor=false`, `core.hooksPath` at the null device, `--no-pager`;
* every transport refused, so a partial clone's missing object fails instead of being
  fetched from wherever its config points: GIT_ALLOW_PROTOCOL set to a list that names no
  transport (it outranks every `protocol.*` setting; `-c protocol.allow=never` would not
  outrank a checkout's own `protocol.ftp.allow=always`), and GIT_NO_LAZY_FETCH for the
  gits that know it (2.39.4, 2.44 and newer);
* signatures not checked (`log.showSignature=false`), `.mailmap` not read.

Settings that change what git prints are pinned too, so that the user's own config cannot
change an answer (`log.showRoot=true` above all: without it the root commit lists no
files). Paths are read with `-z`, so they are never quoted, and messages are asked for in
the C locale, so that a refusal can be told from a failure by its words.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Final

from codescout_mcp.core.text import shown
from codescout_mcp.system.platform import System, decode_name
from codescout_mcp.system.processes import ChildOutputTooLarge, ChildTimeout, StreamedChild, run_child
from codescout_mcp.system.programs import find_program

GIT_TIMEOUT: Final = 120.0

# Settings on every git's command line, each for a reason given above or here.
PINNED: Final = (
    ("core.fsmonitor", "false"),
    ("core.hooksPath", os.devnull),
    ("log.showRoot", "true"),
    ("log.showSignature", "false"),
    ("log.mailmap", "false"),
    ("log.follow", "false"),
    ("log.decorate", "false"),
    ("diff.relative", "false"),  # names relative to the work tree's root, never the current folder
    ("diff.renames", "false"),
    ("status.renames", "false"),
    ("status.submoduleSummary", "false"),
    ("status.showStash", "false"),
    ("status.branch", "false"),
    ("submodule.recurse", "false"),
    ("color.ui", "false"),
    ("color.diff", "false"),
    ("color.status", "false"),
    ("i18n.logOutputEncoding", "UTF-8"),  # the commit headers git log prints, whatever the commits say
)


# git's other settings of the kinds that change what git prints (each of git's log.*, status.*,
# diff.* and i18n.* settings is pinned above or named here: tests/unit/test_git.py holds the two
# to what `git help --config` lists), and why none changes what the commands here print.
UNPINNED: Final = {
    "diff.algorithm": "names only: no hunks are made",
    "diff.autoRefreshIndex": "not a diff command the user runs",
    "diff.colorMoved": "no colour (color.diff is pinned)",
    "diff.colorMovedWS": "no colour",
    "diff.context": "no hunks",
    "diff.dirstat": "no --dirstat",
    "diff.external": "--no-ext-diff is given",
    "diff.guitool": "no difftool",
    "diff.ignoreSubmodules": "status gets --ignore-submodules=all",
    "diff.indentHeuristic": "no hunks",
    "diff.interHunkContext": "no hunks",
    "diff.mnemonicPrefix": "names only: no a/ and b/ prefixes are printed",
    "diff.noprefix": "names only",
    "diff.noPrefix": "names only (as git 2.46 and later spell it)",
    "diff.srcPrefix": "names only: no a/ prefix is printed",
    "diff.dstPrefix": "names only: no b/ prefix is printed",
    "diff.orderFile": "the order of names within a commit does not matter here (and its file is checked)",
    "diff.renameLimit": "renames are off",
    "diff.statGraphWidth": "no --stat",
    "diff.statNameWidth": "no --stat",
    "diff.submodule": "no submodule diffs",
    "diff.suppressBlankEmpty": "no hunks",
    "diff.tool": "no difftool",
    "diff.trustExitCode": "no difftool",
    "diff.wordRegex": "no word diff",
    "diff.wsErrorHighlight": "no hunks",
    "i18n.commitEncoding": "for making commits, not reading them",
    "log.abbrevCommit": "%H is always the whole id",
    "log.date": "%ct is always seconds",
    "log.diffMerges": "--diff-merges=first-parent is given",
    "log.excludeDecoration": "log.decorate is pinned off",
    "log.graphColors": "no --graph",
    "log.initialDecorationSet": "log.decorate is pinned off",
    "status.aheadBehind": "status.branch is pinned off",
    "status.compareBranches": "status.branch is pinned off, and --porcelain is given",
    "status.displayCommentPrefix": "the long format only",
    "status.relativePaths": "--porcelain paths are always from the root",
    "status.renameLimit": "renames are off",
    "status.short": "--porcelain is given",
    "status.showUntrackedFiles": "--untracked-files=no is given",
}


class GitError(Exception):
    """git could not answer: missing, failed, too slow. The message is one line."""


class GitMissing(GitError):
    """No git program on PATH."""


class GitRefused(GitError):
    """git will not open a repository (its "dubious ownership" guard); the message names the fix."""


class NotARepository(GitError):
    """The folder is in no git repository."""


def git_program() -> str:
    """The git program from PATH's absolute folders, as a full path; GitMissing if there is none.

    Never the current folder (`programs.find_program`): a `git` or `git.bat` committed at a
    checkout's root is not git. (On macOS without the command line tools, /usr/bin/git is a
    stand-in that only says so and fails: `open_failure` names the cure when its message
    comes back.)
    """
    found = find_program("git")
    if found is None:
        raise GitMissing("git is not installed (no `git` on PATH)")
    return found


class Overrides:
    """Settings for one git command that no config file can outrank: `-c` arguments, and the
    same given through the environment for keys `-c` cannot carry."""

    def __init__(self, arguments: tuple[str, ...] = (), environment: dict[str, str] | None = None) -> None:
        self.arguments = arguments
        self.environment = environment or {}


def config_environment(settings: list[tuple[str, str]], env: dict[str, str]) -> dict[str, str]:
    """`GIT_CONFIG_COUNT` variables adding `settings` after those already in `env`.

    git splits `-c key=value` at the first `=`, so a key holding one (a filter driver named
    `a=b`) cannot be set that way: `-c filter.a=b.clean=` would set `filter.a` instead. These
    variables name the key and the value apart, and outrank every config file as `-c` does.
    """
    try:
        start = int(env.get("GIT_CONFIG_COUNT") or 0)
    except ValueError:
        start = 0  # git itself refuses such a count, and says so
    added = {f"GIT_CONFIG_KEY_{start + n}": key for n, (key, _) in enumerate(settings)}
    added |= {f"GIT_CONFIG_VALUE_{start + n}": value for n, (_, value) in enumerate(settings)}
    added["GIT_CONFIG_COUNT"] = str(start + len(settings))
    return added


class Git:
    """Runs git in one folder: fixed argument lists, no shell, a deadline, nothing configured run.

    `isolated` clears every GIT_* variable from the environment, so that the caller's
    environment cannot point git at another repository or change how it reads this one.
    """

    def __init__(self, where: Path, *, isolated: bool = False, timeout: float = GIT_TIMEOUT) -> None:
        self.where = where
        self.timeout = timeout
        env = dict(os.environ)
        if isolated:
            env = {k: v for k, v in env.items() if not k.startswith("GIT_")}
        env.update(LC_ALL="C", LANGUAGE="C", GIT_TERMINAL_PROMPT="0")
        env.update(GIT_ALLOW_PROTOCOL="", GIT_NO_LAZY_FETCH="1")  # no transport, whatever the config says
        self.env = env
        self.program = git_program()  # found once for this folder's commands

    def command(self, *args: str, extra: tuple[str, ...] = (), literal: bool = True) -> list[str]:
        """The full argv for `git ARGS`: the pinned settings first, then `extra` settings; every
        pathspec read literally, unless not `literal` (for a command that takes no pathspecs
        magic, `check-ignore`: it refuses the option)."""
        options = [item for key, value in PINNED for item in ("-c", f"{key}={value}")]
        literally = ("--literal-pathspecs",) if literal else ()
        return [self.program, "--no-pager", "--no-optional-locks", *literally, *options, *extra, *args]

    def run(
        self,
        *args: str,
        check: bool = True,
        seconds: float | None = None,
        overrides: Overrides | None = None,
        stdin: int | None = None,
        literal: bool = True,
    ) -> tuple[int, bytes, bytes]:
        """(status, stdout, stderr) of one git command (given the file open at descriptor `stdin`,
        if any, as its input); GitError if it cannot run, fails or overruns."""
        extra: tuple[str, ...] = ()
        env = self.env
        if overrides is not None:
            extra, env = overrides.arguments, {**self.env, **overrides.environment}
        argv = self.command(*args, extra=extra, literal=literal)
        status, out, err = self.run_argv(argv, args[0], cwd=str(self.where), env=env, seconds=seconds, stdin=stdin)
        if check and status != 0:
            raise GitError(f"git {args[0]} failed in {shown(str(self.where))}: {said(err, status)}")
        return status, out, err

    def run_argv(
        self,
        argv: list[str],
        name: str,
        *,
        cwd: str,
        env: dict[str, str],
        seconds: float | None = None,
        stdin: int | None = None,
    ) -> tuple[int, bytes, bytes]:
        """(status, stdout, stderr) of a git argv (`command`'s, for the subcommand `name`) run in `cwd`;
        GitError if it cannot run or overruns."""
        limit = self.timeout if seconds is None else min(seconds, self.timeout)
        try:
            return run_child(argv, cwd=cwd, env=env, seconds=limit, stdin=stdin)
        except ChildTimeout:
            raise GitError(f"git {name} took longer than {limit:.0f} s in {shown(str(self.where))}") from None
        except ChildOutputTooLarge:
            raise GitError(f"git {name} printed more than codescout will read in {shown(str(self.where))}") from None
        except FileNotFoundError:
            raise GitMissing("git is not installed (no `git` on PATH)") from None
        except OSError as error:
            raise GitError(f"cannot run git in {shown(str(self.where))}: {error.strerror}") from None

    @contextmanager
    def stream(self, *args: str, seconds: float | None = None) -> Iterator[GitOutput]:
        """git's stdout as it is produced; the process (and its children) ended when the block ends.

        A block that reads to the end and leaves normally checks git's exit status: a git
        that failed part-way (a missing object, say) is a GitError, not a short answer.
        """
        limit = self.timeout if seconds is None else min(seconds, self.timeout)
        try:
            child = StreamedChild(self.command(*args), cwd=str(self.where), env=self.env, seconds=limit)
        except FileNotFoundError:
            raise GitMissing("git is not installed (no `git` on PATH)") from None
        timed_out = GitError(f"git {args[0]} took longer than {limit:.0f} s in {shown(str(self.where))}")
        try:
            yield GitOutput(child, timed_out)
            if child.ended_at_eof:
                try:
                    status, err = child.finish()
                except ChildTimeout:
                    raise timed_out from None
                if status != 0:
                    raise GitError(f"git {args[0]} failed in {shown(str(self.where))}: {said(err, status)}")
        finally:
            child.close()

    def filter_overrides(self, keys: list[str]) -> Overrides:
        """Settings that turn every configured filter driver into no filter at all, from the keys of
        the repository's settings (`gitconfig.check_values` reads them).

        A driver's name is the checkout's to choose: one that `-c` can carry gets `-c`
        settings (any git takes them); one holding `=` gets them through the environment
        (`config_environment`), once this git is known to read them there.
        """
        drivers: dict[str, None] = {}
        for key in keys:
            if key.startswith("filter.") and key.count(".") >= 2:
                drivers[key[len("filter.") : key.rindex(".")]] = None
        arguments: list[str] = []
        by_environment: list[tuple[str, str]] = []
        for driver in drivers:
            for key, value in (("clean", ""), ("smudge", ""), ("process", ""), ("required", "false")):
                if "=" in driver:
                    by_environment.append((f"filter.{driver}.{key}", value))
                else:
                    arguments += ["-c", f"filter.{driver}.{key}={value}"]
        if not by_environment:
            return Overrides(tuple(arguments))
        self._check_environment_config()
        return Overrides(tuple(arguments), config_environment(by_environment, self.env))

    def _check_environment_config(self) -> None:
        """GitError unless this git reads settings from GIT_CONFIG_COUNT (git 2.31 and newer)."""
        if self.program in _ENVIRONMENT_CONFIG:
            return
        probe = Overrides((), config_environment([("codescout.probe", "yes")], {}))
        status, out, _ = self.run("config", "--get", "codescout.probe", check=False, overrides=probe)
        if status != 0 or out.strip() != b"yes":
            raise GitError(
                f"{shown(str(self.where))} defines a filter driver whose name holds '=', which this git "
                "cannot be told to leave unused (git 2.31 or newer can); its files are not read"
            )
        _ENVIRONMENT_CONFIG.add(self.program)


# Each git program found to read settings from the environment (asked once per program).
_ENVIRONMENT_CONFIG: set[str] = set()


class GitOutput:
    """git's stdout as `Git.stream` hands it out: `read` raises GitError once the deadline passed."""

    def __init__(self, child: StreamedChild, timed_out: GitError) -> None:
        self.child = child
        self.timed_out = timed_out

    def read(self, size: int) -> bytes:
        try:
            return self.child.read(size)
        except ChildTimeout:
            raise self.timed_out from None


def said(stderr: bytes, status: int) -> str:
    """What git said about a failure, in one line: its last line (or its exit status)."""
    lines = [line for line in decode_name(stderr).strip().splitlines() if line.strip()]
    fatal = [line for line in lines if line.startswith(("fatal:", "error:"))]
    if fatal:
        return shown(fatal[0])
    return shown(lines[-1]) if lines else f"exit status {status}, and nothing said"


def open_failure(folder: str, stderr: bytes, status: int) -> GitError:
    """The error for a `git rev-parse` that failed in `folder`: not a repository, refused, failed."""
    text = decode_name(stderr)
    if "not a git repository" in text:
        return NotARepository(f"{shown(folder)} is not in a git repository")
    if "dubious ownership" in text:
        return GitRefused(
            f"git refuses to read {shown(folder)}: {said(stderr, status).removeprefix('fatal: ')} "
            "(it belongs to another user); if you trust it, run "
            f"`git config --global --add safe.directory {shown(_refused_folder(text) or folder)}`"
        )
    if "xcrun" in text or "xcode-select" in text or "No developer tools were found" in text:
        return GitError(
            f"git cannot run: {said(stderr, status)} (on macOS, install the command line tools: "
            "`xcode-select --install`)"
        )
    return GitError(f"git cannot read {shown(folder)}: {said(stderr, status)}")


def _refused_folder(text: str) -> str | None:
    """The folder git names in its "dubious ownership" message (`... at '/path'`)."""
    _, found, rest = text.partition(" at '")
    folder, closed, _ = rest.partition("'")
    return folder if found and closed else None


def command_cost(arguments: Iterable[str], system: System) -> int:
    """What `arguments` take of a command line, counted as the system counts.

    POSIX counts the bytes of each argument and its NUL (a name of three-byte characters is
    three times its length); Windows counts UTF-16 units of the whole command line, each
    argument with a separator and its quotes.
    """
    if system.windows:
        return sum(len(argument.encode("utf-16-le", "surrogatepass")) // 2 + 3 for argument in arguments)
    return sum(len(argument.encode("utf-8", "surrogateescape")) + 1 for argument in arguments)


def chunks(names: list[str], system: System, fixed: list[str]) -> list[list[str]]:
    """`names` in runs that, each with the `fixed` arguments, stay under the system's command-line
    limit (a name too long even alone is a run of its own)."""
    limit = system.command_line_limit - command_cost(fixed, system)
    runs: list[list[str]] = []
    run: list[str] = []
    size = 0
    for name in names:
        cost = command_cost((name,), system)
        if run and size + cost > limit:
            runs.append(run)
            run, size = [], 0
        run.append(name)
        size += cost
    if run:
        runs.append(run)
    return runs
