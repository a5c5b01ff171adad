"""Build the MCP Bundle (.mcpb) for Claude Desktop and other MCPB hosts.

    python bundle/build.py [--out DIR] [--stage DIR]

writes DIR/codescout-mcp-<version>.mcpb (DIR defaults to dist/). The bundle uses server
type "uv" (manifest 0.4): it carries the package's sources and pyproject.toml, and the host
installs Python and the dependencies itself, so the bundle holds no virtual environment.
Its tool list is what the server's tools/list returns, read from the package itself.
`--stage DIR` also keeps the unpacked folder (the tests run the official `mcpb` on it).

The same sources give the same bytes on every system: entries in the order of their names
(Windows orders paths ignoring case), POSIX separators, one fixed time, mode and creating
system (zipfile writes MS-DOS on Windows), LF line endings in the files written here, and no
compression (deflate's bytes depend on the zlib a Python is built with, zlib or zlib-ng).
The checkout's own files are LF everywhere too (.gitattributes).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import shutil
import stat
import sys
import tempfile
import zipfile
from collections.abc import Iterable
from pathlib import Path, PurePath
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

# What goes in, relative to the checkout: the package, what builds it, and the entry point.
FILES = ("pyproject.toml", "README.md", "LICENSE")
PACKAGE = "codescout_mcp"
ENTRY_POINT = "server/main.py"
IGNORED = (".venv/", "__pycache__/", "*.pyc", "server/lib/", "server/venv/", ".pytest_cache/", ".mypy_cache/")
# What the system's file managers leave in folders (macOS Finder, Windows Explorer): never packed.
SYSTEM_LITTER = (".DS_Store", "._*", "Thumbs.db", "desktop.ini")
# A fixed time, mode and creating system for every entry (3: Unix, so that the mode is read).
ZIP_TIME = (2026, 1, 1, 0, 0, 0)
ZIP_MODE = stat.S_IFREG | 0o644  # a regular file, rw-r--r--
ZIP_SYSTEM = 3


def without_table(text: str, table: str) -> str:
    """TOML `text` without the table `[table]` (its header up to the next header), as written."""
    kept: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        header = line.strip()
        if header.startswith("[") and not header.startswith("[["):
            skipping = header == f"[{table}]"
        if not skipping:
            kept.append(line)
    return "".join(kept)


def project() -> dict[str, Any]:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - Python 3.10
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    with open(ROOT / "pyproject.toml", "rb") as handle:
        data: dict[str, Any] = tomllib.load(handle)["project"]
    return data


def listed_tools() -> list[dict[str, str]]:
    """The tools a default server lists, as the manifest names them."""
    from mcp import Client

    from codescout_mcp.server import build_server

    async def ask() -> list[dict[str, str]]:
        async with Client(build_server(), mode="legacy") as client:
            listed = await client.list_tools()
        return [{"name": tool.name, "description": tool.description or ""} for tool in listed.tools]

    return asyncio.run(ask())


def manifest() -> dict[str, Any]:
    from codescout_mcp import __version__

    meta = project()
    urls = meta["urls"]
    return {
        "manifest_version": "0.4",
        "name": meta["name"],
        "display_name": "codescout",
        "version": __version__,
        "description": "Ranks code-search hits you already have by match count and recency, best first.",
        "long_description": (
            "codescout takes the hits of a code search you already ran (each file's path, match count and "
            "days since it last changed) and returns them ranked by one fixed rule: "
            "score = matches * 100 - last_modified_days. It runs no search, reads no files and keeps no state."
        ),
        "author": {"name": meta["authors"][0]["name"]},
        "repository": {"type": "git", "url": urls["Repository"]},
        "homepage": urls["Homepage"],
        "documentation": urls["Homepage"],
        "support": urls["Issues"],
        "license": meta["license"],
        "keywords": meta["keywords"],
        "server": {
            "type": "uv",
            "entry_point": ENTRY_POINT,
            "mcp_config": {"command": "uv", "args": ["run", "--directory", "${__dirname}", ENTRY_POINT]},
        },
        "tools": listed_tools(),
        "tools_generated": False,
        "compatibility": {
            "platforms": ["darwin", "linux", "win32"],
            "runtimes": {"python": meta["requires-python"]},
        },
    }


def stage(target: Path) -> None:
    """The bundle's files, unpacked, in `target`."""
    if target.exists():
        shutil.rmtree(target)
    target.mkdir(parents=True)
    for name in FILES:
        shutil.copy2(ROOT / name, target / name)
    # The host's uv resolves every extra of the project it runs: the test tools are not the
    # server's, and an older uv cannot resolve some of them (zizmor, Python 3.11+ only).
    text = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    (target / "pyproject.toml").write_text(
        without_table(text, "project.optional-dependencies"), encoding="utf-8", newline="\n"
    )
    ignored = shutil.ignore_patterns(
        "__pycache__", "*.pyc", ".mypy_cache", ".pytest_cache", ".ruff_cache", *SYSTEM_LITTER
    )
    shutil.copytree(ROOT / PACKAGE, target / PACKAGE, ignore=ignored)
    (target / "server").mkdir()
    shutil.copy2(ROOT / "bundle" / "main.py", target / ENTRY_POINT)
    # newline="\n": text mode would write CRLF on Windows.
    (target / ".mcpbignore").write_text("\n".join(IGNORED) + "\n", encoding="utf-8", newline="\n")
    (target / "manifest.json").write_text(json.dumps(manifest(), indent=2) + "\n", encoding="utf-8", newline="\n")


def staged_files(folder: Path) -> list[tuple[PurePath, Path]]:
    """Each file of an unpacked bundle: (its path inside the bundle, the file), in no set order."""
    return [(path.relative_to(folder), path) for path in folder.rglob("*") if path.is_file()]


def pack(files: Iterable[tuple[PurePath, Path]], output: Path) -> None:
    """Zip the files into `output`, each under its path inside the bundle, the same bytes on every system.

    Entries go in the order of their names with POSIX separators, not in the order of the paths
    (on Windows paths compare ignoring case), and each is stamped the same whatever system packs it.
    """
    entries = sorted((inside.as_posix(), source) for inside, source in files)
    output.parent.mkdir(parents=True, exist_ok=True)
    with zipfile.ZipFile(output, "w", compression=zipfile.ZIP_STORED) as archive:
        for name, source in entries:
            info = zipfile.ZipInfo(name, date_time=ZIP_TIME)
            info.create_system = ZIP_SYSTEM  # zipfile would say 0 (MS-DOS) on Windows
            info.external_attr = ZIP_MODE << 16
            info.compress_type = zipfile.ZIP_STORED
            archive.writestr(info, source.read_bytes())


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="Build codescout-mcp-<version>.mcpb.")
    parser.add_argument("--out", type=Path, default=ROOT / "dist", help="where to write the bundle (default dist/)")
    parser.add_argument("--stage", type=Path, help="also keep the unpacked bundle in this folder")
    args = parser.parse_args(argv)
    from codescout_mcp import __version__

    with tempfile.TemporaryDirectory() as scratch:
        folder = args.stage or Path(scratch) / "bundle"
        stage(folder)
        output = args.out / f"codescout-mcp-{__version__}.mcpb"
        pack(staged_files(folder), output)
    print(output)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
