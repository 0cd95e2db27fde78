"""The error a subcommand raises for anything the user can fix; `main` prints it in one line."""

from __future__ import annotations


class CliError(Exception):
    """A one-line, user-facing failure: exit code 2."""
