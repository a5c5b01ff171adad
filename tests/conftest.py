from __future__ import annotations

import pytest
from hypothesis import settings

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
