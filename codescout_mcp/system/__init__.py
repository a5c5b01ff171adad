"""What differs by system (Linux, macOS, Windows) and the children codescout starts: where a path
is, which programs run, their sandbox, their memory bound and their deadline.

May import: core.
"""
