"""mcpscore, an independent MCP auditor ("Lighthouse for MCP"), against the server as users run it.

Three targets: `codescout-mcp` over stdio, the same with `--workspace` (the second tool), and
`codescout mcp --transport streamable-http` served over HTTPS (`--tls-certfile`/`--tls-keyfile`
with a certificate made for the test, whose CA mcpscore trusts through `SSL_CERT_FILE`). Every rule
mcpscore judges must pass, except the ones `tests/auditor/baseline.json` names for that target,
each with its reason; a baselined rule that passes (or is no longer judged) fails the test too,
so the baseline stays exact.

mcpscore runs from its own environment (`tests/auditor/requirements.txt`, installed once into
`.cache/mcpscore/<hash>/`): it needs Python 3.11 or newer and pins the MCP SDK exactly, and the
auditor must not decide which SDK codescout is tested with. Its `--json` report is read, not its
text; `--no-config` keeps any rule configuration in the checkout out of the verdict.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.gitrepo import Repo
from tests.helpers import ROOT, installed
from tests.httpserver import RunningServer, serving
from tests.platforms import exclusive
from tests.tlscerts import make_certificates

REQUIREMENTS = ROOT / "tests" / "auditor" / "requirements.txt"
BASELINE = ROOT / "tests" / "auditor" / "baseline.json"
CACHE = ROOT / ".cache" / "mcpscore"
TARGETS = ("stdio", "stdio-workspace", "https")
TRANSPORT = {"stdio": "stdio", "stdio-workspace": "stdio", "https": "streamable-http"}

# Rules mcpscore skips for want of evidence rather than as not applicable. Over stdio there is
# no HTTP surface to probe (auth, malformed bodies); a server that declares no prompts or
# resources gives no listing to judge. Any other rule skipped this way means a probe failed
# (a timeout on a busy machine, say): then the audit judged less than it should, and the
# test says so instead of counting the missing verdicts as passes.
NOT_OBSERVABLE = {
    "stdio": {
        "capability_prompts_present",
        "capability_resources_present",
        "security_malformed_request_handling",
        "auth_www_authenticate",
        "auth_protected_resource_metadata",
        "auth_authorization_servers_https",
        "auth_challenge_references_metadata",
        "auth_metadata_https",
        "auth_scopes_advertised",
        "auth_server_metadata_present",
        "auth_server_metadata_pkce",
        "auth_client_registration_advertised",
        "auth_invalid_token_rejected",
    },
    "streamable-http": {"capability_prompts_present", "capability_resources_present"},
}


def pinned_version() -> str:
    """The mcpscore version the requirements file pins."""
    for line in REQUIREMENTS.read_text(encoding="utf-8").splitlines():
        if line.startswith("mcpscore=="):
            return line.removeprefix("mcpscore==").strip()
    raise AssertionError(f"{REQUIREMENTS} pins no mcpscore version")


def _python_for_mcpscore() -> str:
    """An interpreter mcpscore runs on (3.11 or newer): this one, or the newest found on PATH or by `py`."""
    if sys.version_info >= (3, 11):
        return sys.executable
    for name in ("python3.14", "python3.13", "python3.12", "python3.11"):
        found = shutil.which(name)
        if found is not None:
            return found
    launcher = shutil.which("py")  # on Windows, Pythons go by `py -3.X`, not by versioned names
    for version in ("3.14", "3.13", "3.12", "3.11") if launcher is not None else ():
        asked = [str(launcher), f"-{version}", "-c", "import sys; print(sys.executable)"]
        done = subprocess.run(asked, capture_output=True, text=True, timeout=60, check=False)
        if done.returncode == 0:
            return done.stdout.strip()
    raise RuntimeError("mcpscore needs Python 3.11 or newer; none is on PATH, or known to `py`, beside this 3.10")


def install() -> Path:
    """The `mcpscore` command, installing the pinned set first if it was never installed here."""
    digest = hashlib.sha256(REQUIREMENTS.read_bytes()).hexdigest()[:16]
    home = CACHE / digest
    CACHE.mkdir(parents=True, exist_ok=True)
    # Where a venv keeps its commands, and what they are called.
    scripts, exe = (home / "Scripts", ".exe") if os.name == "nt" else (home / "bin", "")
    with exclusive(CACHE / ".lock"):
        done = home / ".installed"
        if not done.exists():
            shutil.rmtree(home, ignore_errors=True)
            subprocess.run([_python_for_mcpscore(), "-m", "venv", str(home)], check=True, timeout=300)
            pip = [str(scripts / f"python{exe}"), "-m", "pip", "install", "--disable-pip-version-check", "-q"]
            result = subprocess.run(
                [*pip, "-r", str(REQUIREMENTS)],
                capture_output=True,
                text=True,
                timeout=900,
                check=False,
            )
            if result.returncode != 0:
                raise RuntimeError(f"pip install of mcpscore failed:\n{result.stdout}\n{result.stderr}")
            done.write_text(digest, encoding="utf-8")
    return scripts / f"mcpscore{exe}"


def baselined(target: str) -> dict[str, str]:
    """The rules the baseline expects to fail on `target`, with their reasons."""
    entries = json.loads(BASELINE.read_text(encoding="utf-8"))["expected_failures"]
    return {entry["rule"]: entry["reason"] for entry in entries if target in entry["targets"]}


@pytest.fixture(scope="module")
def mcpscore() -> Path:
    return install()


@pytest.fixture(scope="module")
def certificates(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """The test's CA, and a certificate and key for 127.0.0.1 signed by it."""
    return make_certificates(tmp_path_factory.mktemp("tls"))


@pytest.fixture(scope="module")
def https_server(certificates: tuple[Path, Path, Path]) -> Iterator[RunningServer]:
    _, cert, key = certificates
    yield from serving("--tls-certfile", str(cert), "--tls-keyfile", str(key))


def audit(
    mcpscore: Path, target: str, server: RunningServer | None, workspace: Path, ca: Path | None = None
) -> dict[str, Any]:
    """mcpscore's JSON report on one target (trusting the CA `ca`, for HTTPS)."""
    if target == "https":
        assert server is not None and server.url.startswith("https://")
        where = [server.url]
    else:
        where = ["--stdio", installed("codescout-mcp")]
        if target == "stdio-workspace":
            where += ["--workspace", str(workspace)]
    # Only loopback is audited: keep any proxy of the machine out of the way.
    no_proxy = ",".join(filter(None, [os.environ.get("NO_PROXY"), "127.0.0.1", "localhost"]))
    done = subprocess.run(
        [str(mcpscore), "--no-config", "--json", *where],
        capture_output=True,
        text=True,
        cwd=workspace,
        env={
            **os.environ,
            "NO_PROXY": no_proxy,
            "no_proxy": no_proxy,
            **({"SSL_CERT_FILE": str(ca)} if ca is not None else {}),
        },
        timeout=300,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-4000:]
    report: dict[str, Any] = json.loads(done.stdout)
    return report


def test_the_baseline_gives_every_entry_a_reason_and_a_known_target() -> None:
    entries = json.loads(BASELINE.read_text(encoding="utf-8"))["expected_failures"]
    assert entries
    for entry in entries:
        assert set(entry) == {"rule", "targets", "reason"}, entry
        assert entry["reason"].strip(), entry
        assert entry["targets"], entry
        assert set(entry["targets"]) <= set(TARGETS), entry
    rules = [entry["rule"] for entry in entries]
    assert len(rules) == len(set(rules)), "one entry per rule"


@pytest.mark.parametrize("target", TARGETS)
def test_mcpscore_passes_every_rule_it_judges_but_the_baselined(
    mcpscore: Path, https_server: RunningServer, certificates: tuple[Path, Path, Path], target: str, tmp_path: Path
) -> None:
    project = Repo(tmp_path / "project")
    project.write("src/app.py", "print('hi')\n")
    project.commit("2026-01-01T12:00:00+00:00", "src/app.py")
    https = target == "https"
    report = audit(mcpscore, target, https_server if https else None, project.root, certificates[0] if https else None)

    assert report["mcpscore_version"] == pinned_version()
    assert report["transport"] == TRANSPORT[target]
    assert (report["partial"], report["authenticated"]) == (False, False)
    judged = report["results"] + report["readiness"]["results"]
    failing = {rule["rule_id"]: rule for rule in judged if not rule["passed"]}
    expected = baselined(target)
    unexpected = {
        rule_id: f"{rule['severity']}: {rule['message']} Fix: {rule.get('suggested_fix')}"
        for rule_id, rule in failing.items()
        if rule_id not in expected
    }
    stale = sorted(set(expected) - set(failing))
    assert (unexpected, stale) == ({}, []), "failing outside the baseline / baselined but passing or not judged"

    not_observed = {rule["rule_id"] for rule in report["skipped_rules"] if rule["reason"] != "not-applicable"}
    assert not_observed == NOT_OBSERVABLE[TRANSPORT[target]]
    # Nothing else costs points: the score is the maximum less the baselined rules' weights.
    lost = sum(failing[rule_id]["severity_value"] for rule_id in expected)
    assert report["score"] == report["max_score"] - lost
