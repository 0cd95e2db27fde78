"""The `devtool` command: one module per subcommand, each adding its parser and its `run`.

Every failure a user can cause (a bad argument, a busy port, an unreadable file) ends as one
line on stderr and exit code 2, never a traceback.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from devtool import __version__
from devtool.cli import demo, diff, export, lake, load, run, serve
from devtool.cli.errors import CliError

COMMANDS = [serve, load, run, demo, export, diff, lake]


class _Parser(argparse.ArgumentParser):
    """argparse, but a usage error is one line that points at --help."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(2, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="devtool", description="Time travel for AI agents.")
    parser.add_argument("--version", action="version", version=f"devtool {__version__}")
    subparsers = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)
    for command in COMMANDS:
        command.register(subparsers)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        code: int = args.run(args)
    except CliError as exc:
        print(f"devtool {args.command}: error: {exc}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return 130
    return code
