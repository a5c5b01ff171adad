"""Lint, format and strict typing are part of the test suite, so one command checks them all."""

from __future__ import annotations

import subprocess
import sys

import pytest

from tests.helpers import ROOT


def mypy_as(platform: str) -> list[str]:
    """mypy --strict judging the code as it runs on `platform` (sys.platform checks are read as there).

    Each system is checked on every system, so code that names what Windows or macOS lacks
    fails here, not only on their CI runners; each keeps a cache of its own.
    """
    return ["mypy", "--platform", platform, "--cache-dir", f".mypy_cache/{platform}"]


@pytest.mark.parametrize(
    "command",
    [
        ["ruff", "check", "."],
        ["ruff", "format", "--check", "."],
        mypy_as("linux"),
        mypy_as("darwin"),
        mypy_as("win32"),
    ],
    ids=["ruff-check", "ruff-format", "mypy-strict", "mypy-strict-macos", "mypy-strict-windows"],
)
def test_tool_is_clean(command: list[str]) -> None:
    done = subprocess.run(
        [sys.executable, "-m", *command], cwd=ROOT, capture_output=True, text=True, timeout=300, check=False
    )
    assert done.returncode == 0, done.stdout + done.stderr
