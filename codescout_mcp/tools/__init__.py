"""The tools one server offers (the ranking, and with a workspace the search and the ranking of
its hits) and the workspace folder they read, held to it.

May import: core, system, facts, answers.
"""
