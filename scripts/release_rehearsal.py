#!/usr/bin/env python3
"""Rehearse a release here: build and check everything a version tag publishes, and publish nothing.

    .venv/bin/python scripts/release_rehearsal.py               # the version the package names
    .venv/bin/python scripts/release_rehearsal.py --tag v0.1.0  # as the release workflow runs it
    .venv/bin/python scripts/release_rehearsal.py --keep DIR    # keep what the GitHub release carries
    .venv/bin/python scripts/release_rehearsal.py --no-image --no-arm64

Run it with the Python of a venv holding the test extras (build, twine, check-wheel-contents).

From a clean clone of the current commit (uncommitted changes are not in it), in this order:

1. the versions: the tag (when given), the package, server.json (its own, the package's and
   the image's), the Dockerfile's default and CHANGELOG.md's entry all name one version;
   server.json is valid against the MCP Registry's schema (tests/data/server.schema.json);
2. the sdist and the wheel, built twice from two clones at different paths, under different
   umasks, with SOURCE_DATE_EPOCH at the commit's time: the two builds must be identical, byte
   for byte; then `twine check --strict`, `check-wheel-contents`, and the wheel's metadata
   (its version, and the `mcp-name:` line by which the registry knows the package is ours);
3. the wheel installed in a fresh venv: `codescout --version`, and one MCP call to
   `codescout-mcp` over stdio;
4. the bundle: built, validated with the official `mcpb`, its manifest at the version;
5. the image (unless --no-image), on the stand-in base scripts/docker-ready makes: its labels
   (version, the registry's server name) and one MCP call to `docker run -i`;
6. arm64 (unless --no-arm64): the wheel and its dependencies resolved as aarch64 wheels, what
   the arm64 image's Python layer holds, then run under qemu-aarch64 with the Python of a
   Debian arm64 root: the native modules imported, `codescout rank`, one MCP call, and the
   ripgrep binary. (No binfmt handlers here: only processes qemu starts itself run as arm64.)

It stops before anything would leave the machine: nothing is uploaded, pushed or tagged, and
it says so. The exit status is 0 when every check passed, 1 at the first that failed (named
on stderr, with what it found), 2 for a usage error.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import gzip
import hashlib
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import tempfile
import time
import zipfile
from collections.abc import Iterator, Sequence
from email.parser import HeaderParser
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))
import debian_roots  # beside this script, found through the path set just above

REPO = debian_roots.REPO
DIST = "codescout_mcp"  # the distribution's file names: codescout-mcp, normalised
PACKAGE = "codescout-mcp"
BASE_IMAGE = "local/python-bookworm"  # what scripts/docker-ready makes (no registry is reachable here)
ARM64_SUITE = "bookworm"  # the stand-in base's suite: the same Python (3.11) as the amd64 image here
GLIBC_MINOR = {"bookworm": 36, "trixie": 41}  # each suite's glibc is 2.<this>
ELF_AARCH64 = 183  # e_machine of an AArch64 ELF file
CALL_SECONDS = 120.0  # one MCP call, from start to answer
QEMU_CALL_SECONDS = 600.0  # the same under qemu, which starts Python some 10 to 20 times slower
HITS = [
    {"path": "src/a.py", "matches": 2, "last_modified_days": 3},
    {"path": "src/b.py", "matches": 5, "last_modified_days": 40, "owner": "@core"},
    {"path": "docs/c.md", "matches": 1, "last_modified_days": 0},
]
EXPECTED_ORDER = ["src/b.py", "src/a.py", "docs/c.md"]


class Failed(Exception):
    """A check did not pass: what it found, for the user."""


def say(line: str) -> None:
    print(f"release-rehearsal: {line}", flush=True)


@contextlib.contextmanager
def step(name: str) -> Iterator[None]:
    """One check, named on the way in and timed on the way out."""
    say(f"{name} ...")
    started = time.monotonic()
    try:
        yield
    except Failed as failed:
        raise Failed(f"{name}: {failed}") from None
    say(f"{name}: ok ({time.monotonic() - started:.1f} s)")


def run(argv: Sequence[str | Path], *, cwd: Path | None = None, env: dict[str, str] | None = None,
        timeout: float = 900, what: str | None = None) -> str:  # fmt: skip
    """Run a command to the end; its stdout, or Failed with the tail of what it said."""
    try:
        done = subprocess.run(
            [str(arg) for arg in argv], cwd=cwd, env=env, capture_output=True, text=True, timeout=timeout, check=False
        )
    except FileNotFoundError:
        raise Failed(f"{argv[0]} is not installed") from None
    except subprocess.TimeoutExpired:
        raise Failed(f"{what or argv[0]} did not finish in {timeout:.0f} s") from None
    if done.returncode != 0:
        said = (done.stdout + done.stderr).strip().splitlines()[-25:]
        raise Failed(f"{what or Path(str(argv[0])).name} exited {done.returncode}:\n    " + "\n    ".join(said))
    return done.stdout


def text_of(checkout: Path, name: str) -> str:
    """A file of the checkout, as text; Failed naming it when it is missing or unreadable."""
    try:
        return (checkout / name).read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as error:
        raise Failed(f"{name} cannot be read: {error}") from None


def digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# --- 1. the versions ------------------------------------------------------------------------


def package_version(checkout: Path) -> str:
    text = text_of(checkout, "codescout_mcp/version.py")
    found = re.search(r'^__version__ = "([^"]+)"$', text, flags=re.MULTILINE)
    if found is None:
        raise Failed("codescout_mcp/version.py names no __version__")
    return found.group(1)


def changelog_entry(checkout: Path, version: str) -> str:
    """The CHANGELOG's words for `version` (Keep a Changelog: `## [X.Y.Z] - YYYY-MM-DD`)."""
    text = text_of(checkout, "CHANGELOG.md")
    heading = re.search(rf"^## \[{re.escape(version)}\] - (\d{{4}}-\d{{2}}-\d{{2}})$", text, flags=re.MULTILINE)
    if heading is None:
        raise Failed(f"CHANGELOG.md has no entry headed '## [{version}] - YYYY-MM-DD'")
    try:
        datetime.date.fromisoformat(heading.group(1))
    except ValueError:
        raise Failed(f"CHANGELOG.md dates {version} {heading.group(1)}, which is no date") from None
    rest = text[heading.end() :]
    following = re.search(r"^## |^\[", rest, flags=re.MULTILINE)
    body = rest[: following.start() if following else len(rest)].strip()
    if not body:
        raise Failed(f"CHANGELOG.md's entry for {version} is empty")
    if not re.search(rf"^\[{re.escape(version)}\]: https://", text, flags=re.MULTILINE):
        raise Failed(f"CHANGELOG.md has no link for [{version}] at its foot")
    return body


def versions_named(checkout: Path) -> dict[str, str]:
    """Every place a release names its version, with the version it names there."""
    named = {"codescout_mcp/version.py": package_version(checkout)}
    server = json.loads(text_of(checkout, "server.json"))
    named["server.json version"] = server.get("version", "(none)")
    for package in server.get("packages", []):
        kind = package.get("registryType")
        if kind == "oci":
            named["server.json image tag"] = str(package.get("identifier", "")).rpartition(":")[2]
        else:
            named[f"server.json {kind} package"] = package.get("version", "(none)")
    defaults = re.findall(r"^ARG CODESCOUT_VERSION=(\S+)$", text_of(checkout, "Dockerfile"),
                          flags=re.MULTILINE)  # fmt: skip
    if not defaults:
        raise Failed("the Dockerfile declares no ARG CODESCOUT_VERSION")
    for number, default in enumerate(defaults, 1):
        named[f"Dockerfile ARG CODESCOUT_VERSION ({number})"] = default
    return named


def check_versions(checkout: Path, tag: str | None) -> tuple[str, dict[str, Any]]:
    """The one version every place names (Failed listing them when they disagree), and server.json."""
    named = versions_named(checkout)
    version = named["codescout_mcp/version.py"]
    if tag is not None:
        named["the tag"] = tag.removeprefix("v") if tag.startswith("v") else f"{tag} (a tag starts with v)"
    disagree = {where: found for where, found in named.items() if found != version}
    if disagree:
        listed = "\n    ".join(f"{where}: {found}" for where, found in named.items())
        raise Failed(f"the versions disagree ({', '.join(disagree)} differ):\n    {listed}")
    server = json.loads(text_of(checkout, "server.json"))
    kinds = sorted(package.get("registryType") for package in server["packages"])
    if kinds != ["oci", "pypi"]:
        raise Failed(f"server.json names packages {kinds}, not one on the index and one image")
    pypi = next(package for package in server["packages"] if package["registryType"] == "pypi")
    if pypi["identifier"] != PACKAGE:
        raise Failed(f"server.json names the package {pypi['identifier']!r}, not {PACKAGE!r}")
    return version, server


def check_server_json(checkout: Path, server: dict[str, Any]) -> None:
    import jsonschema

    schema = json.loads(text_of(checkout, "tests/data/server.schema.json"))
    if server.get("$schema") != schema.get("$id"):
        raise Failed(f"server.json names the schema {server.get('$schema')}, the registry's is {schema.get('$id')}")
    validator = jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker())
    errors = sorted(validator.iter_errors(server), key=lambda error: list(error.absolute_path))
    if errors:
        where = "/".join(str(part) for part in errors[0].absolute_path) or "(the top)"
        raise Failed(f"server.json breaks the registry's schema at {where}: {errors[0].message}")


# --- 2. the sdist and the wheel -------------------------------------------------------------


def clone(destination: Path, commit: str) -> Path:
    """A clean clone of `commit` (the files as git holds them, nothing ignored or uncommitted)."""
    run(["git", "clone", "--quiet", "--no-local", "--no-checkout", REPO, destination], what="git clone")
    run(["git", "-C", destination, "checkout", "--quiet", "--detach", commit], what="git checkout")
    return destination


def build(checkout: Path, out: Path, epoch: str, umask: int) -> list[Path]:
    """[the sdist, the wheel], the wheel built from the sdist (as the index's users rebuild it)."""
    env = {**os.environ, "SOURCE_DATE_EPOCH": epoch}
    previous = os.umask(umask)
    try:
        run([sys.executable, "-m", "build", "--outdir", out, checkout], env=env, what="python -m build")
    finally:
        os.umask(previous)
    made = sorted(path.name for path in out.iterdir())
    sdists = [name for name in made if name.endswith(".tar.gz")]
    wheels = [name for name in made if name.endswith(".whl")]
    if len(sdists) != 1 or len(wheels) != 1 or len(made) != 2:
        raise Failed(f"the build made {made}, not one sdist and one wheel")
    return [out / sdists[0], out / wheels[0]]


def first_difference(one: Path, other: Path) -> str:
    """Where two archives of the same name first differ, in words."""
    left: list[tuple[Any, ...]]
    right: list[tuple[Any, ...]]
    if one.suffix == ".whl":
        with zipfile.ZipFile(one) as a, zipfile.ZipFile(other) as b:
            left = [(i.filename, i.date_time, i.external_attr, i.CRC) for i in a.infolist()]
            right = [(i.filename, i.date_time, i.external_attr, i.CRC) for i in b.infolist()]
    else:
        a_bytes, b_bytes = one.read_bytes(), other.read_bytes()
        if a_bytes[:10] != b_bytes[:10]:
            return f"the gzip headers differ: {a_bytes[:10].hex()} and {b_bytes[:10].hex()}"
        with (
            tarfile.open(fileobj=io.BytesIO(gzip.decompress(a_bytes))) as a,
            tarfile.open(fileobj=io.BytesIO(gzip.decompress(b_bytes))) as b,
        ):
            left = [(m.name, m.mtime, m.mode, m.uid, m.gid, m.uname, m.gname, m.size) for m in a.getmembers()]
            right = [(m.name, m.mtime, m.mode, m.uid, m.gid, m.uname, m.gname, m.size) for m in b.getmembers()]
    for mine, theirs in zip(left, right, strict=False):  # lengths compared below
        if mine != theirs:
            return f"first at {mine[0]}: {mine[1:]} against {theirs[1:]}"
    if len(left) != len(right):
        return f"one holds {len(left)} entries, the other {len(right)}"
    return "the entries agree; the bytes between them differ"


def check_reproducible(first: list[Path], second: list[Path]) -> None:
    for one, other in zip(first, second, strict=True):  # build() made one sdist and one wheel each
        if one.name != other.name:
            raise Failed(f"the two builds named their files differently: {one.name} and {other.name}")
        if digest(one) != digest(other):
            raise Failed(f"{one.name} differs between the two builds: {first_difference(one, other)}")


def check_metadata(wheel: Path, sdist: Path, version: str, server_name: str) -> None:
    if wheel.name != f"{DIST}-{version}-py3-none-any.whl" or sdist.name != f"{DIST}-{version}.tar.gz":
        raise Failed(f"the files are named {wheel.name} and {sdist.name}, not for {PACKAGE} {version}")
    with zipfile.ZipFile(wheel) as archive:
        metadata = archive.read(f"{DIST}-{version}.dist-info/METADATA").decode("utf-8")
    with tarfile.open(sdist) as archive:
        member = archive.extractfile(f"{DIST}-{version}/PKG-INFO")
        assert member is not None
        pkg_info = member.read().decode("utf-8")
    for where, text in (("the wheel's METADATA", metadata), ("the sdist's PKG-INFO", pkg_info)):
        headers = HeaderParser().parsestr(text)
        if (headers["Name"], headers["Version"]) != (PACKAGE, version):
            raise Failed(f"{where} says {headers['Name']} {headers['Version']}, not {PACKAGE} {version}")
        # The MCP Registry takes a package on the index as this server's when its description
        # (the README) names the server: without the line, publishing server.json fails.
        if f"mcp-name: {server_name}" not in text:
            raise Failed(f"{where} lacks 'mcp-name: {server_name}', by which the registry knows the package")


# --- 3. one MCP call ------------------------------------------------------------------------


def one_call(argv: Sequence[str | Path], *, env: dict[str, str] | None = None, seconds: float = CALL_SECONDS) -> str:
    """Start an MCP server over stdio, make one tools/call, and stop it: the server's name and version."""
    messages = [
        {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "release-rehearsal", "version": "1"}}},
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
         "params": {"name": "rank_search_results", "arguments": {"hits": HITS}}},
    ]  # fmt: skip
    stdin = "".join(json.dumps(message) + "\n" for message in messages)
    try:
        # stdin closes after the three lines: the server answers what it read, then stops.
        done = subprocess.run([str(arg) for arg in argv], input=stdin, capture_output=True, text=True, env=env,
                              timeout=seconds, check=False)  # fmt: skip
    except subprocess.TimeoutExpired:
        raise Failed(f"no answer and no exit in {seconds:.0f} s") from None
    answers = {}
    for line in done.stdout.splitlines():
        try:
            message = json.loads(line)
        except ValueError:
            raise Failed(f"the server wrote a line that is not JSON: {line[:200]!r}") from None
        answers[message.get("id")] = message
    if done.returncode != 0 or set(answers) != {1, 2}:
        raise Failed(f"exit {done.returncode}, answers to {sorted(answers, key=str)}; stderr: {done.stderr[-1500:]}")
    result = answers[2].get("result", {})
    order = [row.get("path") for row in result.get("structuredContent", {}).get("results", [])]
    if result.get("isError") or order != EXPECTED_ORDER:
        raise Failed(f"the call's answer is not the ranking: {json.dumps(answers[2])[:600]}")
    info = answers[1]["result"]["serverInfo"]
    return f"{info['name']} {info['version']}"


def check_installed(wheel: Path, work: Path, version: str) -> None:
    venv = work / "venv"
    run([sys.executable, "-m", "venv", venv], what="python -m venv")
    binaries = venv / ("Scripts" if os.name == "nt" else "bin")
    run([binaries / "python", "-m", "pip", "install", "--quiet", "--disable-pip-version-check", wheel],
        what="pip install (the wheel, with its dependencies from the index)")  # fmt: skip
    said = run([binaries / "codescout", "--version"]).strip()
    if said != f"codescout {version}":
        raise Failed(f"codescout --version says {said!r}")
    server = one_call([binaries / "codescout-mcp"])
    if server != f"codescout {version}":
        raise Failed(f"the server calls itself {server!r}")


# --- 4. the bundle --------------------------------------------------------------------------


def build_bundle(checkout: Path, out: Path, version: str) -> Path:
    stage = out / "stage"
    printed = run([sys.executable, checkout / "bundle" / "build.py", "--out", out, "--stage", stage],
                  what="bundle/build.py").strip()  # fmt: skip
    bundle = out / f"{PACKAGE}-{version}.mcpb"
    if printed != str(bundle) or not bundle.is_file():
        raise Failed(f"bundle/build.py made {printed!r}, not {bundle}")
    with zipfile.ZipFile(bundle) as archive:
        manifest = json.loads(archive.read("manifest.json"))
    if manifest.get("version") != version:
        raise Failed(f"the bundle's manifest says version {manifest.get('version')!r}")
    # The official mcpb, with the Node tools the suite installs (cached in this checkout's .cache/).
    sys.path.insert(0, str(REPO))
    from tests.nodetools import install

    tools = install()
    said = run([*tools.command("mcpb"), "validate", stage / "manifest.json"], env=tools.env(), what="mcpb validate")
    if "validation passes" not in said:
        raise Failed(f"mcpb validate said: {said.strip()[-400:]}")
    return bundle


# --- 5. the image ---------------------------------------------------------------------------


def check_image(checkout: Path, version: str, server_name: str, base: str) -> None:
    if shutil.which("docker") is None or subprocess.run(["docker", "info"], capture_output=True).returncode != 0:
        raise Failed("no Docker engine answers (scripts/docker-ready starts one), or pass --no-image")
    if subprocess.run(["docker", "image", "inspect", base], capture_output=True).returncode != 0:
        raise Failed(f"no base image {base} (scripts/docker-ready makes the stand-in), or pass --base-image")
    tag = f"codescout-rehearsal:{version}"
    run(["docker", "build", "--quiet", "--force-rm", "--build-arg", f"PYTHON_IMAGE={base}",
         "--build-arg", f"CODESCOUT_VERSION={version}", "-t", tag, checkout], what="docker build")  # fmt: skip
    try:
        labels = json.loads(run(["docker", "image", "inspect", "--format", "{{json .Config.Labels}}", tag]))
        wanted = {"org.opencontainers.image.version": version, "io.modelcontextprotocol.server.name": server_name}
        found = {key: labels.get(key) for key in wanted}
        if found != wanted:
            raise Failed(f"the image's labels say {found}, not {wanted}")
        server = one_call(["docker", "run", "--rm", "-i", "--network", "none", tag])
        if server != f"codescout {version}":
            raise Failed(f"the server in the image calls itself {server!r}")
    finally:
        subprocess.run(["docker", "image", "rm", "--force", tag], capture_output=True, check=False)


# --- 6. arm64, under qemu-user --------------------------------------------------------------


def arm64_root() -> tuple[Path, str]:
    """A Debian arm64 root with Python (made once), and that Python's version (3.11)."""
    recipe = debian_roots.Recipe(ARM64_SUITE, ("python3", "ca-certificates"), architecture="arm64")
    root = debian_roots.make_root(f"{ARM64_SUITE}-arm64", recipe, say=say)
    pythons = sorted((root / "usr" / "bin").glob("python3.[0-9]*"))
    found = [path.name.removeprefix("python") for path in pythons if re.fullmatch(r"python3\.\d+", path.name)]
    if not found:
        raise Failed(f"the arm64 root {root} holds no python3.X")
    return root, found[0]


def qemu() -> str:
    program = shutil.which("qemu-aarch64")
    if program is None and sys.platform != "win32" and os.geteuid() == 0 and shutil.which("apt-get"):
        say("installing qemu-user (Debian's, for qemu-aarch64; no binfmt handlers are registered)")
        apt = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
        wait = ["-o", "DPkg::Lock::Timeout=600"]
        with contextlib.suppress(Failed):  # a stale package list: refresh it, then try again
            run(["apt-get", *wait, "install", "-y", "-qq", "--no-install-recommends", "qemu-user"], env=apt)
        if shutil.which("qemu-aarch64") is None:
            run(["apt-get", *wait, "update", "-qq"], env=apt)
            run(["apt-get", *wait, "install", "-y", "-qq", "--no-install-recommends", "qemu-user"], env=apt)
        program = shutil.which("qemu-aarch64")
    if program is None:
        raise Failed("qemu-aarch64 is not installed (Debian's qemu-user), or pass --no-arm64")
    return program


def elf_machine(path: Path) -> int:
    """The machine an ELF file is built for (its e_machine), or -1 for a file that is not ELF."""
    with open(path, "rb") as file:
        header = file.read(20)
    if len(header) < 20 or header[:4] != b"\x7fELF":
        return -1
    return int.from_bytes(header[18:20], "little" if header[5] == 1 else "big")


def arm64_platforms(glibc_minor: int) -> list[str]:
    """pip's --platform values for a manylinux aarch64 system with glibc 2.<glibc_minor>."""
    return ["manylinux2014_aarch64", *(f"manylinux_2_{minor}_aarch64" for minor in range(17, glibc_minor + 1))]


def check_arm64(wheel: Path, work: Path, version: str) -> None:
    if debian_roots.DEBIAN_ARCHITECTURES.get(platform.machine()) == "arm64":
        raise Failed("this machine is arm64: the image's own test runs here, not this emulation")
    emulator = qemu()
    root, python_version = arm64_root()
    glibc_minor = GLIBC_MINOR[ARM64_SUITE]
    site = work / "arm64-site"
    tag = python_version.replace(".", "")
    # What the Dockerfile's build stage installs on arm64: the wheel and every dependency as a
    # binary for aarch64 (nothing built from source, which under emulation would take hours).
    run([sys.executable, "-m", "pip", "install", "--quiet", "--disable-pip-version-check", "--only-binary=:all:",
         *(f"--platform={name}" for name in arm64_platforms(glibc_minor)), f"--python-version={python_version}",
         "--implementation=cp", f"--abi=cp{tag}", "--target", site, wheel],
        what="pip install --platform (aarch64)")  # fmt: skip
    natives = sorted([*site.rglob("*.so"), site / "bin" / "rg"])
    foreign = [str(path.relative_to(site)) for path in natives if elf_machine(path) != ELF_AARCH64]
    if foreign:
        raise Failed(f"of the {len(natives)} native files installed for aarch64, these are not: {foreign}")
    python = [emulator, "-L", str(root), str(root / "usr" / "bin" / f"python{python_version}")]
    env = {"PYTHONPATH": str(site), "PATH": "/usr/bin:/bin", "LANG": "C.UTF-8", "PYTHONDONTWRITEBYTECODE": "1"}
    probe = ("import platform, pydantic_core, rpds, msgspec, jsonschema, mcp, codescout_mcp; "
             "print(platform.machine(), codescout_mcp.__version__)")  # fmt: skip
    said = run([*python, "-c", probe], env=env, timeout=QEMU_CALL_SECONDS, what="python under qemu-aarch64").split()
    if said != ["aarch64", version]:
        raise Failed(f"the arm64 Python says {said}, not aarch64 {version}")
    arguments = work / "arm64-arguments.json"
    arguments.write_text(json.dumps({"hits": HITS}), encoding="utf-8")
    ranked = run([*python, "-m", "codescout_mcp", "rank", "--input", arguments], env=env, timeout=QEMU_CALL_SECONDS,
                 what="codescout rank under qemu-aarch64")  # fmt: skip
    if [row["path"] for row in json.loads(ranked)["results"]] != EXPECTED_ORDER:
        raise Failed(f"codescout rank under qemu-aarch64 printed {ranked[:300]!r}")
    server = one_call([*python, "-m", "codescout_mcp", "mcp"], env=env, seconds=QEMU_CALL_SECONDS)
    if server != f"codescout {version}":
        raise Failed(f"the arm64 server calls itself {server!r}")
    rg = run([emulator, "-L", str(root), site / "bin" / "rg", "--version"], what="rg under qemu-aarch64")
    if not rg.startswith("ripgrep "):
        raise Failed(f"rg --version under qemu-aarch64 said {rg[:200]!r}")


# --- what a GitHub release carries ----------------------------------------------------------


def keep(files: list[Path], notes: str, version: str, destination: Path) -> None:
    destination.mkdir(parents=True, exist_ok=True)
    for path in files:
        shutil.copyfile(path, destination / path.name)
    sums = "".join(f"{digest(path)}  {path.name}\n" for path in sorted(files, key=lambda path: path.name))
    (destination / "SHA256SUMS").write_text(sums, encoding="utf-8")
    (destination / "NOTES.md").write_text(
        f"{notes}\n\nThe files below are listed with their SHA-256 in `SHA256SUMS`; the package on the index "
        f"carries attestations of the sdist and the wheel.\n\nInstall: `uvx {PACKAGE}@{version}`, or "
        f"`pip install {PACKAGE}=={version}`.\n",
        encoding="utf-8",
    )


def rehearse(args: argparse.Namespace, work: Path) -> str:
    commit = run(["git", "-C", REPO, "rev-parse", "HEAD"]).strip()
    if run(["git", "-C", REPO, "status", "--porcelain", "--untracked-files=no"]).strip():
        say("uncommitted changes are not rehearsed: the clone holds the last commit only")
    epoch = run(["git", "-C", REPO, "log", "-1", "--format=%ct", commit]).strip()
    with step(f"a clean clone of {commit[:12]}"):
        first = clone(work / "one" / "codescout", commit)
        second = clone(work / "two" / "elsewhere" / "codescout-again", commit)
    with step("every version agrees" + (f" with the tag {args.tag}" if args.tag else "")):
        version, server = check_versions(first, args.tag)
        notes = changelog_entry(first, version)
        check_server_json(first, server)
    with step("the sdist and the wheel, built twice, are identical byte for byte"):
        built = build(first, work / "dist-one", epoch, 0o022)
        check_reproducible(built, build(second, work / "dist-two", epoch, 0o002))
        sdist, wheel = built
    with step("twine check --strict, check-wheel-contents, the metadata"):
        run([sys.executable, "-m", "twine", "check", "--strict", sdist, wheel], what="twine check --strict")
        run([sys.executable, "-m", "check_wheel_contents", wheel], what="check-wheel-contents")
        check_metadata(wheel, sdist, version, server["name"])
    with step("the wheel in a fresh venv answers one MCP call"):
        check_installed(wheel, work, version)
    with step("the bundle, validated by the official mcpb"):
        bundle = build_bundle(first, work / "bundle", version)
    if args.image:
        with step(f"the image, on {args.base_image}, answers one MCP call"):
            check_image(first, version, server["name"], args.base_image)
    if args.arm64:
        with step("arm64: the wheel's aarch64 install, run under qemu-aarch64"):
            check_arm64(wheel, work, version)
    if args.keep is not None:
        keep([sdist, wheel, bundle], notes, version, args.keep)
        say(f"kept in {args.keep}: {sdist.name}, {wheel.name}, {bundle.name}, SHA256SUMS, NOTES.md")
    skipped = [name for name, wanted in (("the image", args.image), ("arm64", args.arm64)) if not wanted]
    return version + (f" (not checked: {', '.join(skipped)})" if skipped else "")


def main() -> int:
    parser = argparse.ArgumentParser(prog="scripts/release_rehearsal.py", description=__doc__.split("\n\n")[0])
    parser.add_argument("--tag", help="the tag being released (vX.Y.Z); it must name the package's version")
    parser.add_argument("--keep", type=Path, metavar="DIR", help="keep the release's files (and SHA256SUMS, NOTES.md)")
    parser.add_argument("--no-image", dest="image", action="store_false", help="do not build the image")
    parser.add_argument("--no-arm64", dest="arm64", action="store_false", help="do not run the arm64 checks")
    parser.add_argument("--base-image", default=BASE_IMAGE, help=f"the image's base (default {BASE_IMAGE})")
    args = parser.parse_args()
    if args.tag is not None and not re.fullmatch(r"v\d+\.\d+\.\d+(?:(?:a|b|rc)\d+)?", args.tag):
        parser.error(f"--tag {args.tag!r} is not a version tag (vX.Y.Z)")
    import importlib.util

    missing = [
        name for name in ("build", "twine", "check_wheel_contents", "jsonschema") if not importlib.util.find_spec(name)
    ]
    if missing:
        hint = "run it with the Python of a venv that has the test extras (.venv/bin/python)"
        print(f"release-rehearsal: {sys.executable} lacks {', '.join(missing)}: {hint}", file=sys.stderr)
        return 2
    started = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="release-rehearsal-") as work:
        try:
            what = rehearse(args, Path(work))
        except (Failed, debian_roots.RootError) as failed:
            print(f"release-rehearsal: FAILED: {failed}", file=sys.stderr, flush=True)
            return 1
    say(f"every check passed for {what} in {time.monotonic() - started:.0f} s")
    say("stopped before anything leaves the machine: nothing was uploaded, pushed or tagged")
    return 0


if __name__ == "__main__":
    sys.exit(main())
