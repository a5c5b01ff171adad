"""The tools one server offers, as plain objects the door (`answers/door.py`) and the SDK's
handlers (`server.py`) both run: `rank_search_results` always; with a workspace, the tools that
read it (`rank_workspace_hits` and `search_workspace`, sharing one `Workspace`). Standard
library only; each tool's heavy parts are imported when it is first called.
"""

from __future__ import annotations

from codescout_mcp.answers import catalog, words
from codescout_mcp.answers.door import Door
from codescout_mcp.answers.protocol import instructions
from codescout_mcp.core.contract import TOOL_NAME
from codescout_mcp.core.fastpath import Decoded, rank_decoded
from codescout_mcp.limits import OFFLOAD_HITS

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any, Final

    from codescout_mcp.answers.door import Tool


class RankTool:
    """`rank_search_results`: the rule on hits the caller has; it never searches or reads a file."""

    name: Final = TOOL_NAME
    definition: Final = catalog.RANK_TOOL

    def heavy(self, arguments: dict[str, Any] | Decoded) -> bool:
        if isinstance(arguments, Decoded):
            return arguments.hit_count > OFFLOAD_HITS
        hits = arguments.get("hits")
        return isinstance(hits, list) and len(hits) > OFFLOAD_HITS

    def call(self, arguments: dict[str, Any] | Decoded, *, cached_only: bool = False) -> dict[str, Any]:
        from codescout_mcp.core.ranking import rank
        from codescout_mcp.core.validate import InvalidArguments

        try:
            if isinstance(arguments, Decoded):  # a large call, read by the fast path (`fastpath`)
                return words.tool_result(rank_decoded(arguments))
            return words.tool_result(rank(arguments))
        except InvalidArguments as error:
            return words.tool_error(str(error))


def tools(workspace: str | None = None, *, warm: bool = False) -> list[Tool]:
    """The tools a server offers: the ranking, and with a workspace the tools that read it (`warm`:
    its history walked in the background from now on, for the first search)."""
    found: list[Tool] = [RankTool()]
    if workspace is not None:
        from codescout_mcp.tools.search import SearchTool
        from codescout_mcp.tools.workspace import Workspace, WorkspaceTool

        shared = Workspace(workspace)  # what one tool reads of the checkout, the other need not read again
        if warm:
            shared.warm()
        found += [WorkspaceTool(shared), SearchTool(shared)]
    return found


class Offer:
    """What one server offers, made once and shared by the door and the SDK's `Server`: its
    tools (one `Workspace` behind those that read the checkout) and the instructions naming them."""

    def __init__(self, workspace: str | None = None, *, warm: bool = False) -> None:
        self.workspace = workspace
        self.tools = tools(workspace, warm=warm)
        self.instructions = instructions(workspace=workspace is not None)

    def door(self, *, enabled: bool = True) -> Door:
        """The door for these tools (off: the SDK answers everything, for the suite's comparisons)."""
        return Door(self.tools, self.instructions, enabled=enabled)
