"""In process, no server started: the rule, the checker, the parsers, CODEOWNERS, platform rules, the early answers.

The inner loop: `python -m pytest tests/unit` runs in well under a minute.
"""
