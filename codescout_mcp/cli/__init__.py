"""The command line: the console scripts, the parser and its commands, and the standard streams
in any state. `entry.py` handles a stop signal before anything else is imported.

May import: core, system, facts, answers, tools, server, stdio, http.
"""
