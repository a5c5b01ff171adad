"""What a long-lived workspace keeps between calls, held to what a fresh one reads.

A server's `Workspace` keeps what it read (the index, the status, the history and the cache
file, CODEOWNERS, the ignore files' folders, the folders it resolved) and refreshes it when
the checkout moves. Here a seeded run of random steps changes a repository (edits, some that
keep the file's old time, reverted edits, commits, new files added or left untracked, files
removed, branch switches, a commit undone, links, CODEOWNERS and .gitignore rewrites), and after
each step the kept workspace's answers to `rank_workspace_hits` and `search_workspace` must be
those of a workspace opened afresh on the same checkout.
"""

from __future__ import annotations

import os
import random
import time
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest

from codescout_mcp.tools.search import SearchTool
from codescout_mcp.tools.workspace import Workspace, WorkspaceTool
from tests.gitrepo import Repo

STEPS = 30
OWNERS = ["@a", "@b", "@c"]


def ago(days: int) -> str:
    return (datetime.now(timezone.utc) - timedelta(days=days, hours=12)).strftime("%Y-%m-%dT%H:%M:%SZ")


def files_in(root: Path) -> list[str]:
    """Every file (or link) under the checkout, `.git` aside, as the workspace names them."""
    found = []
    for folder, folders, names in os.walk(root):
        folders[:] = [name for name in folders if name != ".git"]
        found += [os.path.relpath(os.path.join(folder, name), root).replace(os.sep, "/") for name in names]
    return sorted(found)


class Run:
    """One seeded run of steps on a repository."""

    def __init__(self, root: Path, seed: int) -> None:
        self.random = random.Random(seed)
        self.repo = Repo(root)
        self.days = 900
        self.serial = 0
        for name in ("src/a.py", "src/b.py", "docs/c.md", "d.txt"):
            self.repo.write(name, "word\n")
        self.repo.write("CODEOWNERS", "* @a\n")
        self.commit()
        self.repo.git("branch", "side")

    def commit(self) -> None:
        self.days -= self.random.randint(1, 30)
        self.repo.git("add", "-A")
        self.repo.commit(ago(self.days), message=f"step {self.serial}")

    def text(self) -> str:
        self.serial += 1
        return "word " * self.random.randint(1, 4) + f"{self.serial}\n"

    def tracked(self) -> list[str]:
        return sorted(self.repo.git("ls-files").split())

    def step(self) -> str:
        """Change the checkout one random way; what was done."""
        root, tracked = self.repo.root, self.tracked()
        kind = self.random.choice(
            ["edit", "edit_keeping_time", "revert", "commit", "untracked", "add", "remove", "switch", "undo",
             "link", "codeowners", "gitignore"]
        )  # fmt: skip
        name = self.random.choice(tracked)
        if kind in ("edit", "edit_keeping_time") and name != "CODEOWNERS" and (root / name).is_file():
            kept = os.stat(root / name)
            if kind == "edit":
                self.repo.write(name, self.text())
            else:  # the same size and modification time: only the inode's change time tells
                self.repo.write(name, (root / name).read_text(encoding="utf-8").swapcase())
                os.utime(root / name, ns=(kept.st_atime_ns, kept.st_mtime_ns))
        elif kind == "revert":
            self.repo.git("checkout", "-q", "--", ".")
        elif kind == "commit":
            self.commit()
        elif kind in ("untracked", "add"):
            new = f"{self.random.choice(['src', 'docs', 'new'])}/n{self.serial}.py"
            path = self.repo.write(new, self.text())
            moment = time.time() - self.random.randint(1, 50) * 86_400 - 43_200
            os.utime(path, (moment, moment))
            if kind == "add":
                self.repo.git("add", "--", new)
        elif kind == "remove" and len(tracked) > 3 and name != "CODEOWNERS":
            self.repo.git("rm", "-q", "-f", "--", name)
        elif kind == "switch":
            self.repo.git("add", "-A")
            self.repo.git("stash", "-q", "--include-untracked", check=False)
            current = self.repo.git("rev-parse", "--abbrev-ref", "HEAD").strip()
            self.repo.git("checkout", "-q", "side" if current != "side" else "main")
        elif kind == "undo" and self.repo.git("rev-list", "--count", "HEAD").strip() != "1":
            self.repo.git("reset", "-q", "--hard", "HEAD~1")
        elif kind == "link":
            target = self.random.choice([name for name in files_in(root) if (root / name).is_file()])
            link = root / f"link{self.serial}.py"
            self.serial += 1
            link.symlink_to(os.path.relpath(root / target, link.parent))
        elif kind == "codeowners":
            lines = [f"{pattern} {self.random.choice(OWNERS)}" for pattern in ("*", "*.py", "/docs/", "src/b.py")]
            self.repo.write("CODEOWNERS", "\n".join(self.random.sample(lines, self.random.randint(1, 4))) + "\n")
        elif kind == "gitignore":
            self.repo.write(".gitignore", self.random.choice(["", "*.md\n", "new/\n", "*.txt\n!d.txt\n"]))
        return f"{kind} {name}"


def answers(workspace: Workspace, root: Path) -> tuple[dict[str, Any] | None, dict[str, Any] | None]:
    """rank_workspace_hits for every file on disk, and search_workspace for the word in them all."""
    hits = [{"path": name, "matches": 1 + len(name) % 3} for name in files_in(root)]
    ranked = WorkspaceTool(workspace).call({"hits": hits, "limit": 100})
    searched = SearchTool(workspace).call({"pattern": "word", "limit": 100})
    return ranked, searched


@pytest.mark.parametrize("seed", [1, 2])
def test_a_kept_workspace_answers_as_a_fresh_one_after_every_step(tmp_path: Path, seed: int) -> None:
    run = Run(tmp_path / "r", seed)
    kept = Workspace(str(run.repo.root))
    done = []
    for _ in range(STEPS):
        done.append(run.step())
        if run.random.random() < 0.15:
            time.sleep(1.1)  # now and then, past the second in which a status read is not trusted
        assert answers(kept, run.repo.root) == answers(Workspace(str(run.repo.root)), run.repo.root), done
