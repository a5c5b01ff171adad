"""What the server says of itself and which protocol versions it serves: plain data, no SDK.

Kept apart from `server.py` so that the stdio transport's early answers (`stdio/early.py`,
built from `answers/catalog.py`) can name the versions before the SDK has finished importing.
"""

from __future__ import annotations

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Final

# The protocol versions served, all of them fully. 2025-03-26 is the one version whose
# clients may send JSON-RPC batches; both transports serve batches to it (and only to it).
# A client asking for a version not listed is offered the newest handshake version.
HANDSHAKE_VERSIONS: Final = ("2024-11-05", "2025-03-26", "2025-06-18", "2025-11-25")
MODERN_VERSIONS: Final = ("2026-07-28",)
SERVED_PROTOCOL_VERSIONS: Final = (*HANDSHAKE_VERSIONS, *MODERN_VERSIONS)
BATCH_VERSIONS: Final = ("2025-03-26",)
# What `server/discover` names, newest first. The SDK names only the modern versions there;
# this server also answers the handshake ones, and the discover answer says so.
DISCOVERED_VERSIONS: Final = tuple(reversed(SERVED_PROTOCOL_VERSIONS))

# The project's homepage, as pyproject.toml's [project.urls] names it (a test holds them equal).
WEBSITE_URL: Final = "https://github.com/codescout-dev/codescout"

# How long one tool call may take (git included, for rank_workspace_hits) before it is an
# error; after stdin closes, the stdio server waits this long (and a little more) for answers.
CALL_SECONDS: Final = 120.0

# What the server tells a client, every session; Codex shows it as the description of the
# server's whole tool group. With a workspace, the search tool comes first: one call does it all.
INSTRUCTIONS: Final = (
    "codescout ranks code-search hits you already have: after a search returns many files, call "
    "rank_search_results with each file's path, match count and days since it changed, and open the "
    "files in the order it returns."
)
WORKSPACE_INSTRUCTIONS: Final = (
    "codescout finds the files to open in this workspace: call search_workspace with a pattern to "
    "search and rank in one step. rank_workspace_hits adds ages and owners to files you found; "
    "rank_search_results ranks full hits."
)


def instructions(*, workspace: bool) -> str:
    """What the server tells a client about using it, with or without the workspace tool."""
    return WORKSPACE_INSTRUCTIONS if workspace else INSTRUCTIONS


def served_initialize_params(params: object) -> object:
    """`initialize` params with an unserved protocol version replaced by the newest served one."""
    if isinstance(params, dict):
        requested = params.get("protocolVersion")
        if isinstance(requested, str) and requested not in HANDSHAKE_VERSIONS:
            return {**params, "protocolVersion": HANDSHAKE_VERSIONS[-1]}
    return params
