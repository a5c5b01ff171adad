from __future__ import annotations

import os
import tempfile

import pytest
from hypothesis import settings

# Every process the suite starts keeps its cached histories here, never in the user's own cache
# folder (tests about the cache name a folder of their own).
os.environ["CODESCOUT_CACHE_DIR"] = tempfile.mkdtemp(prefix="codescout-test-cache-")

# Generated examples are judged by what they show, never by how long one took: a slow
# machine or a busy core must not fail a property.
settings.register_profile("codescout", deadline=None, print_blob=True)
settings.load_profile("codescout")


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def node_tools() -> object:
    """The pinned Node clients (conformance suite, TypeScript SDK, mcpb), installed once."""
    from tests.nodetools import install

    return install()


def _printable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> object:
    """A failure whose message holds a lone surrogate (several tests are about them) must
    still reach the main process: pytest-xdist cannot send such text and would stop the run."""
    outcome = yield
    report = outcome.get_result()  # type: ignore[attr-defined]
    if report.longrepr is not None:
        shown = str(report.longrepr)
        if _printable(shown) != shown:
            report.longrepr = _printable(shown)
    report.sections = [(title, _printable(body)) for title, body in report.sections]
