"""What repositories say of files: their ages from git and their owners from CODEOWNERS.

Read for `codescout hits` and for the opt-in tool rank_workspace_hits; the ranking itself
never reads a repository. Every git runs with fixed arguments, a deadline, and nothing a
repository configures (`git.py`); every file read here is a regular file read up to a size.

May import: core, system.
"""

from collections.abc import Callable

# How a fact-finder tells its caller something is off (one line each): `codescout hits` prints
# it as a warning, the workspace tool logs it once.
Warn = Callable[[str], None]
