"""codescout: rank code-search hits you already have by one fixed, inspectable rule."""

from codescout_mcp.tool import rank
from codescout_mcp.validate import InvalidArguments

__version__ = "0.1.0"

__all__ = ["InvalidArguments", "__version__", "rank"]
