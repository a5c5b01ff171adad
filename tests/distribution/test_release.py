"""scripts/release_rehearsal.py's checks fail when what they check is wrong.

CI runs the whole rehearsal (.ci/run); here each check meets a release that breaks it: versions
that disagree, a CHANGELOG without the entry, a server.json the registry would refuse, two
builds that differ, a package the registry could not tie to the server, a server that answers
wrongly. The script is loaded as a module from its file (it has no .py suffix).
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import platform
import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from importlib.machinery import SourceFileLoader
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest

from codescout_mcp import __version__
from tests.helpers import ROOT, installed
from tests.platforms import linux_only

SCRIPT = ROOT / "scripts" / "release_rehearsal.py"
VERSIONED = ("codescout_mcp/version.py", "server.json", "Dockerfile", "CHANGELOG.md", "tests/data/server.schema.json")


def load() -> ModuleType:
    loader = SourceFileLoader("release_rehearsal", str(SCRIPT))
    spec = importlib.util.spec_from_loader("release_rehearsal", loader)
    assert spec is not None
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


rehearsal = load()


@pytest.fixture
def checkout(tmp_path: Path) -> Path:
    """The files a release names its version in, copied from this checkout."""
    for name in VERSIONED:
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, tmp_path / name)
    return tmp_path


def edit(path: Path, old: str, new: str) -> None:
    text = path.read_text(encoding="utf-8")
    assert old in text, (path, old)
    path.write_text(text.replace(old, new, 1), encoding="utf-8")


def edit_json(path: Path, change: Any) -> None:
    data = json.loads(path.read_text(encoding="utf-8"))
    change(data)
    path.write_text(json.dumps(data), encoding="utf-8")


def test_this_checkout_agrees_with_itself_and_its_tag(checkout: Path) -> None:
    version, server = rehearsal.check_versions(checkout, f"v{__version__}")
    assert version == __version__
    rehearsal.check_server_json(checkout, server)
    assert rehearsal.changelog_entry(checkout, version).startswith("The first release.")


def _bump_oci(data: dict[str, Any]) -> None:
    oci = next(p for p in data["packages"] if p["registryType"] == "oci")
    oci["identifier"] = oci["identifier"].rpartition(":")[0] + ":9.9.9"


def _bump_pypi(data: dict[str, Any]) -> None:
    next(p for p in data["packages"] if p["registryType"] == "pypi")["version"] = "9.9.9"


@pytest.mark.parametrize(
    ("where", "spoil"),
    [
        ("server.json version", lambda c: edit_json(c / "server.json", lambda d: d.update(version="9.9.9"))),
        ("server.json pypi package", lambda c: edit_json(c / "server.json", _bump_pypi)),
        ("server.json image tag", lambda c: edit_json(c / "server.json", _bump_oci)),
        ("Dockerfile ARG CODESCOUT_VERSION (2)", lambda c: edit(
            c / "Dockerfile", f"ARG CODESCOUT_VERSION={__version__}\nLABEL", "ARG CODESCOUT_VERSION=9.9.9\nLABEL")),
    ],
    ids=["server", "pypi", "oci", "dockerfile"],
)  # fmt: skip
def test_a_version_that_disagrees_is_named(checkout: Path, where: str, spoil: Any) -> None:
    spoil(checkout)
    with pytest.raises(rehearsal.Failed, match="the versions disagree") as failed:
        rehearsal.check_versions(checkout, None)
    assert f"({where} differ)" in str(failed.value)
    assert f"{where}: 9.9.9" in str(failed.value)


@pytest.mark.parametrize("tag", ["v9.9.9", __version__])
def test_a_tag_for_another_version_or_without_its_v_is_refused(checkout: Path, tag: str) -> None:
    with pytest.raises(rehearsal.Failed, match=r"\(the tag differ\)"):
        rehearsal.check_versions(checkout, tag)


@pytest.mark.parametrize(
    ("spoil", "said"),
    [
        (lambda text: text.replace(f"## [{__version__}]", "## [0.0.9]"), "has no entry headed"),
        (lambda text: re.sub(rf"(## \[{re.escape(__version__)}\] - \d{{4}})-\d\d", r"\1-13", text), "which is no date"),
        (lambda text: text.replace(f"[{__version__}]: https://", f"[{__version__}]: see "), "no link for"),
    ],
    ids=["missing", "bad-date", "no-link"],
)
def test_a_changelog_without_a_proper_entry_is_refused(checkout: Path, spoil: Any, said: str) -> None:
    changelog = checkout / "CHANGELOG.md"
    changelog.write_text(spoil(changelog.read_text(encoding="utf-8")), encoding="utf-8")
    with pytest.raises(rehearsal.Failed, match=said):
        rehearsal.changelog_entry(checkout, __version__)


def test_an_empty_changelog_entry_is_refused(checkout: Path) -> None:
    (checkout / "CHANGELOG.md").write_text(
        f"# Changelog\n\n## [{__version__}] - 2026-12-03\n\n[{__version__}]: https://example.invalid/\n",
        encoding="utf-8",
    )
    with pytest.raises(rehearsal.Failed, match="is empty"):
        rehearsal.changelog_entry(checkout, __version__)


def test_a_server_json_the_registry_refuses_is_named_where(checkout: Path) -> None:
    edit_json(checkout / "server.json", lambda data: data["packages"][0].update(transport={"type": "carrier-pigeon"}))
    server = json.loads((checkout / "server.json").read_text(encoding="utf-8"))
    with pytest.raises(rehearsal.Failed, match="breaks the registry's schema at packages/0"):
        rehearsal.check_server_json(checkout, server)


def _wheel(path: Path, metadata: str, stamp: tuple[int, int, int, int, int, int] = (2026, 1, 1, 0, 0, 0)) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        info = zipfile.ZipInfo(f"codescout_mcp-{__version__}.dist-info/METADATA", date_time=stamp)
        archive.writestr(info, metadata)
    return path


def _sdist(path: Path, pkg_info: str, mode: int = 0o644) -> Path:
    data = pkg_info.encode()
    with tarfile.open(path, "w:gz") as archive:
        member = tarfile.TarInfo(f"codescout_mcp-{__version__}/PKG-INFO")
        member.size, member.mode, member.mtime = len(data), mode, 1_767_225_600
        archive.addfile(member, io.BytesIO(data))
    return path


def test_two_builds_that_differ_are_caught_with_the_entry_that_differs(tmp_path: Path) -> None:
    name = f"codescout_mcp-{__version__}-py3-none-any.whl"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    one = _wheel(tmp_path / "a" / name, "same")
    other = _wheel(tmp_path / "b" / name, "same", stamp=(2026, 1, 2, 0, 0, 0))
    with pytest.raises(rehearsal.Failed, match=f"{name} differs between the two builds: first at codescout_mcp-"):
        rehearsal.check_reproducible([one], [other])
    sdist = f"codescout_mcp-{__version__}.tar.gz"
    a, b = _sdist(tmp_path / "a" / sdist, "x"), _sdist(tmp_path / "b" / sdist, "x", mode=0o664)
    found = rehearsal.first_difference(a, b)
    assert "PKG-INFO" in found or "gzip headers" in found, found
    (tmp_path / "c").mkdir()
    rehearsal.check_reproducible([one], [_wheel(tmp_path / "c" / name, "same")])  # equal bytes pass


def test_a_package_the_registry_cannot_tie_to_the_server_is_refused(tmp_path: Path) -> None:
    name = "io.github.codescout-dev/codescout"
    good = f"Metadata-Version: 2.4\nName: codescout-mcp\nVersion: {__version__}\n\n<!-- mcp-name: {name} -->\n"
    wheel = _wheel(tmp_path / f"codescout_mcp-{__version__}-py3-none-any.whl", good)
    sdist = _sdist(tmp_path / f"codescout_mcp-{__version__}.tar.gz", good)
    rehearsal.check_metadata(wheel, sdist, __version__, name)
    (tmp_path / "bare").mkdir()
    bare = _wheel(tmp_path / "bare" / wheel.name, good[: good.index("<!--")])
    with pytest.raises(rehearsal.Failed, match=r"the wheel's METADATA lacks 'mcp-name: io\.github"):
        rehearsal.check_metadata(bare, sdist, __version__, name)
    with pytest.raises(rehearsal.Failed, match=r"not for codescout-mcp 9\.9\.9"):
        rehearsal.check_metadata(wheel, sdist, "9.9.9", name)


def test_one_call_reaches_the_installed_server() -> None:
    assert rehearsal.one_call([installed("codescout-mcp")]) == f"codescout {__version__}"


@pytest.mark.parametrize(
    ("answer", "said"),
    [
        ('{"jsonrpc":"2.0","id":1,"result":{"serverInfo":{"name":"x","version":"1"}}}', "answers to \\[1\\]"),
        ("not json", "not JSON"),
        (
            '{"jsonrpc":"2.0","id":1,"result":{"serverInfo":{"name":"x","version":"1"}}}\\n'
            '{"jsonrpc":"2.0","id":2,"result":{"isError":true,"content":[]}}',
            "not the ranking",
        ),
    ],
    ids=["no-answer", "garbage", "tool-error"],
)
def test_one_call_fails_on_a_server_that_answers_wrongly(tmp_path: Path, answer: str, said: str) -> None:
    fake = tmp_path / "fake.py"
    fake.write_text(f"import sys\nsys.stdin.read()\nprint('{answer}')\n", encoding="utf-8")
    with pytest.raises(rehearsal.Failed, match=said):
        rehearsal.one_call([sys.executable, fake])


@linux_only("reads the ELF header of this Python's own binary")
def test_the_machine_of_a_binary_is_read_from_its_elf_header(tmp_path: Path) -> None:
    machine = {"x86_64": 62, "aarch64": rehearsal.ELF_AARCH64}[platform.machine()]
    assert rehearsal.elf_machine(Path(os.path.realpath(sys.executable))) == machine
    text = tmp_path / "text.so"
    text.write_text("not a binary", encoding="utf-8")
    assert rehearsal.elf_machine(text) == -1
    assert "manylinux_2_36_aarch64" in rehearsal.arm64_platforms(36)
    assert "manylinux_2_37_aarch64" not in rehearsal.arm64_platforms(36)


def run_script(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120, check=False
    )


def test_a_tag_that_is_no_version_is_a_usage_error() -> None:
    done = run_script("--tag", "release-1")
    assert done.returncode == 2
    assert "is not a version tag" in done.stderr
    assert "Traceback" not in done.stderr


def test_the_rehearsal_stops_at_a_tag_for_another_version_and_says_which() -> None:
    done = run_script("--tag", "v9.9.9", "--no-image", "--no-arm64")
    assert done.returncode == 1, done.stdout + done.stderr
    assert done.stderr.startswith("release-rehearsal: FAILED: every version agrees with the tag v9.9.9: the versions")
    assert "the tag: 9.9.9" in done.stderr
    assert "Traceback" not in done.stderr
    assert "stopped before anything leaves" not in done.stdout
