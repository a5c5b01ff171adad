"""Failures a command ends with: one line on stderr and the exit status the failure carries.

Each kind of failure says its own exit status (as click's exceptions do), so the code that
raises it decides, and the one place that reports it (`cli/streams.guarded`) only prints the
line and returns the status. Standard library only.
"""

from __future__ import annotations


class Failure(Exception):
    """Something the user can act on, said in one line; exit status 1 unless a kind says otherwise."""

    exit_status = 1

    def line(self) -> str:
        """The line stderr gets."""
        return f"codescout: {self}"


class UsageError(Failure):
    """A command line argparse (or a command) refuses: exit status 2; the message is the whole line."""

    exit_status = 2

    def line(self) -> str:
        return str(self)


class ConfigurationError(Failure):
    """A server setting it cannot start with (an address it cannot listen on, a certificate that
    does not load): exit status 2."""

    exit_status = 2
