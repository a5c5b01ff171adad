"""The rule: the tools' contract, the checks of a call's arguments, the ranking and the JSON
reading it needs. The standard library only (msgspec inside the fast path), so that `codescout
rank` starts about as fast as Python does.

May import: nothing of the package but core and the modules beside the folders (limits,
failure, version).
"""
