"""The command line's user error."""

from __future__ import annotations


class CliError(Exception):
    """A user error: reported as one line, exit status 2."""
