"""The one handler both fronts call: an arguments object in, the ranked answer out."""

from __future__ import annotations

from codescout_mcp.ranking import ranked
from codescout_mcp.validate import validate

# Typing names are for the checker only: importing typing costs `codescout rank` start-up time.
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


def rank(arguments: object) -> dict[str, Any]:
    """Rank the hits in a tool arguments object; raise InvalidArguments if it breaks the contract.

    >>> rank({"hits": [{"path": "a.py", "matches": 2, "last_modified_days": 5}]})["results"][0]["score"]
    195
    """
    checked = validate(arguments)
    return ranked(checked.hits, checked.limit, has_integral_floats=checked.has_integral_floats)
