"""codescout: rank code-search hits you already have by one fixed, inspectable rule."""

from __future__ import annotations

from codescout_mcp.version import __version__

# Why TYPE_CHECKING = False: docs/architecture.md, "Why the layers".
TYPE_CHECKING = False
if TYPE_CHECKING:
    from codescout_mcp.core.ranking import rank
    from codescout_mcp.core.validate import InvalidArguments


def __getattr__(name: str) -> object:
    """`rank` and `InvalidArguments`, imported when first asked for: importing the package (as the
    server and the CLI do before anything else) costs nothing then."""
    if name == "rank":
        from codescout_mcp.core.ranking import rank

        return rank
    if name == "InvalidArguments":
        from codescout_mcp.core.validate import InvalidArguments

        return InvalidArguments
    raise AttributeError(f"module 'codescout_mcp' has no attribute {name!r}")


__all__ = ["InvalidArguments", "__version__", "rank"]
