"""The Claude Desktop bundle: built by one command, checked by the official `mcpb`, and run."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path, PurePath, PureWindowsPath
from typing import Any

import pytest
from mcp import Client, StdioServerParameters

from bundle import build
from codescout_mcp import __version__
from codescout_mcp.server import build_server
from tests.helpers import EXAMPLE, EXAMPLE_RESULT, ROOT
from tests.nodetools import NodeTools

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover - Python 3.10
    import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]

FORBIDDEN = (".venv/", "venv/", "server/lib/", "__pycache__/", ".pyc", ".pytest_cache", ".mypy_cache", "node_modules")


@pytest.fixture(scope="module")
def built(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """(the bundle, its unpacked folder), from the documented command."""
    out = tmp_path_factory.mktemp("bundle")
    done = subprocess.run(
        [sys.executable, str(ROOT / "bundle" / "build.py"), "--out", str(out), "--stage", str(out / "stage")],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    bundle = out / f"codescout-mcp-{__version__}.mcpb"
    assert done.stdout.strip() == str(bundle)
    return bundle, out / "stage"


def names_in(bundle: Path) -> list[str]:
    with zipfile.ZipFile(bundle) as archive:
        return sorted(archive.namelist())


def manifest_of(bundle: Path) -> dict[str, Any]:
    with zipfile.ZipFile(bundle) as archive:
        data: dict[str, Any] = json.loads(archive.read("manifest.json"))
    return data


def mcpb(node_tools: NodeTools, *args: str) -> subprocess.CompletedProcess[str]:
    """The official `mcpb` command; it must succeed."""
    done = subprocess.run(
        [*node_tools.command("mcpb"), *args],
        capture_output=True,
        text=True,
        env=node_tools.env(),
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return done


def test_the_official_mcpb_validates_the_manifest(node_tools: NodeTools, built: tuple[Path, Path]) -> None:
    _, stage = built
    done = mcpb(node_tools, "validate", str(stage / "manifest.json"))
    assert "validation passes" in done.stdout


def test_the_official_mcpb_packs_the_same_files(
    node_tools: NodeTools, built: tuple[Path, Path], tmp_path: Path
) -> None:
    bundle, stage = built
    packed = tmp_path / "packed.mcpb"
    mcpb(node_tools, "pack", str(stage), str(packed))
    ours, theirs = names_in(bundle), names_in(packed)
    # mcpb leaves out the ignore file itself; otherwise the two bundles hold the same files.
    assert [n for n in ours if n != ".mcpbignore"] == [n for n in theirs if n != ".mcpbignore"]
    assert manifest_of(packed) == manifest_of(bundle)
    print(f"bundle: {bundle.stat().st_size} bytes ({len(ours)} files); mcpb pack: {packed.stat().st_size} bytes")


def test_the_bundle_holds_sources_and_no_environment(built: tuple[Path, Path]) -> None:
    bundle, _ = built
    names = names_in(bundle)
    for required in (
        "manifest.json",
        "pyproject.toml",
        "README.md",
        "LICENSE",
        "server/main.py",
        "codescout_mcp/cli/main.py",
    ):
        assert required in names
    for name in names:
        assert not any(part in name for part in FORBIDDEN), name
    # Stored, not deflated (see bundle/build.py): the sources as they are, no environment.
    assert bundle.stat().st_size < 700_000  # (the sources: 575 KB on 2026-12-06; a venv would be tens of MB)


def test_the_manifest_says_what_the_server_does(built: tuple[Path, Path]) -> None:
    manifest = manifest_of(built[0])
    with open(ROOT / "pyproject.toml", "rb") as handle:
        meta = tomllib.load(handle)["project"]
    assert manifest["manifest_version"] == "0.4"
    assert (manifest["name"], manifest["version"], manifest["license"]) == ("codescout-mcp", __version__, "MIT")
    assert manifest["server"]["type"] == "uv"
    assert manifest["compatibility"]["runtimes"] == {"python": meta["requires-python"]}

    async def listed() -> list[dict[str, str]]:
        async with Client(build_server(), mode="legacy") as client:
            tools = await client.list_tools()
        return [{"name": t.name, "description": t.description or ""} for t in tools.tools]

    import anyio

    assert manifest["tools"] == anyio.run(listed)


@pytest.mark.anyio
async def test_the_hosts_command_serves_a_session(built: tuple[Path, Path], tmp_path: Path) -> None:
    """What an MCPB host runs (manifest's mcp_config): uv installs the project and its dependencies."""
    _, stage = built
    unpacked = tmp_path / "installed"
    shutil.copytree(stage, unpacked)
    manifest = json.loads((unpacked / "manifest.json").read_text(encoding="utf-8"))
    config = manifest["server"]["mcp_config"]
    args = [arg.replace("${__dirname}", str(unpacked)) for arg in config["args"]]
    uv = shutil.which("uv") or str(Path(sys.executable).parent / "uv")
    env = dict(os.environ, UV_CACHE_DIR=str(ROOT / ".cache" / "uv"), UV_PROJECT_ENVIRONMENT=str(tmp_path / "venv"))
    async with Client(
        StdioServerParameters(command=uv, args=args, env=env), mode="legacy", read_timeout_seconds=300
    ) as c:
        result = await c.call_tool("rank_search_results", json.loads(EXAMPLE.read_text(encoding="utf-8")))
    assert result.structured_content == EXAMPLE_RESULT


# --- the same bytes on every system -----------------------------------------------------------------


def test_every_entry_is_stamped_alike_and_stored_in_name_order(built: tuple[Path, Path]) -> None:
    bundle, _ = built
    with zipfile.ZipFile(bundle) as archive:
        infos = archive.infolist()
        written = [archive.read(name) for name in ("manifest.json", ".mcpbignore")]
    names = [info.filename for info in infos]
    assert names == sorted(names)
    stamps = {(i.date_time, i.create_system, i.external_attr >> 16, i.compress_type, i.flag_bits) for i in infos}
    # 0o100644: a regular file, rw-r--r--; 3: made on Unix (so the mode is read); 0: stored.
    assert stamps == {((2026, 1, 1, 0, 0, 0), 3, 0o100644, zipfile.ZIP_STORED, 0)}
    assert [b"\r" in text for text in written] == [False, False]


def windows_text(
    path: Path, data: str, encoding: str | None = None, errors: str | None = None, newline: str | None = None
) -> int:
    """Path.write_text as Windows runs it: text mode writes each "\\n" as "\\r\\n" unless `newline` says otherwise."""
    if newline is None:
        data, newline = data.replace("\n", "\r\n"), "\n"
    return REAL_WRITE_TEXT(path, data, encoding=encoding, errors=errors, newline=newline)


REAL_WRITE_TEXT = Path.write_text


def test_packed_by_windows_rules_the_bundle_has_the_same_bytes(
    built: tuple[Path, Path], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    bundle, _ = built
    with monkeypatch.context() as windows:
        windows.setattr(Path, "write_text", windows_text)
        build.stage(tmp_path / "stage")
    # The files as Windows names and orders them: backslashes, and an order that ignores case.
    files = [(PureWindowsPath(*inside.parts), source) for inside, source in build.staged_files(tmp_path / "stage")]
    files.sort(key=lambda file: file[0])
    assert [str(inside) for inside, _ in files][:3] == [
        ".mcpbignore",
        "codescout_mcp\\__init__.py",
        "codescout_mcp\\__main__.py",
    ]
    assert sorted(inside.as_posix() for inside, _ in files)[:3] == [".mcpbignore", "LICENSE", "README.md"]
    with monkeypatch.context() as windows:
        windows.setattr(sys, "platform", "win32")  # zipfile's entries then say they were made on MS-DOS
        build.pack(files, tmp_path / "windows.mcpb")
    assert (tmp_path / "windows.mcpb").read_bytes() == bundle.read_bytes()
    # And from the files listed in any other order.
    posix: list[tuple[PurePath, Path]] = list(reversed(build.staged_files(tmp_path / "stage")))
    build.pack(posix, tmp_path / "reversed.mcpb")
    assert (tmp_path / "reversed.mcpb").read_bytes() == bundle.read_bytes()


def test_a_fresh_checkout_builds_the_same_bytes(built: tuple[Path, Path], tmp_path: Path) -> None:
    """The files a checkout of this work tree holds, written anew (other times, other modes,
    no caches), build the bundle built from the work tree itself, byte for byte."""
    bundle, _ = built
    listed = subprocess.run(
        ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
        cwd=ROOT,
        capture_output=True,
        check=True,
    ).stdout
    fresh = tmp_path / "checkout"
    for name in sorted(set(filter(None, listed.decode("utf-8").split("\0")))):
        source = ROOT / name
        if source.is_file() and not source.is_symlink():  # a tracked file deleted in the work tree is not in it
            target = fresh / name
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_bytes(source.read_bytes())
    done = subprocess.run(
        [sys.executable, str(fresh / "bundle" / "build.py"), "--out", str(tmp_path / "out")],
        cwd=fresh,
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "out" / bundle.name).read_bytes() == bundle.read_bytes()


def test_the_bundle_carries_the_project_without_its_extras(built: tuple[Path, Path]) -> None:
    """A host's uv resolves every extra of what it runs: the test tools stay out of the bundle."""
    _, stage = built
    staged = tomllib.loads((stage / "pyproject.toml").read_text(encoding="utf-8"))
    whole = tomllib.loads((ROOT / "pyproject.toml").read_text(encoding="utf-8"))
    assert "optional-dependencies" not in staged["project"]
    whole["project"].pop("optional-dependencies")
    assert staged == whole
