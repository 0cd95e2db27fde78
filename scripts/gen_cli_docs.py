"""The docs' command-line reference, written from `devtool.cli`'s own argparse parsers at every build.

An MkDocs hook (`mkdocs.yml` `hooks:`): `on_files` adds `cli.md` as a generated page, so the reference
is never a file that could fall behind the parsers. `python scripts/gen_cli_docs.py` prints it.
"""

from __future__ import annotations

import argparse
import html
from typing import Any

from devtool.cli import build_parser


def _cell(text: str) -> str:
    # A table cell: one line, no pipe that would end it, no `<` that Markdown would take for HTML.
    return html.escape(" ".join(text.split()), quote=False).replace("|", "&#124;")


def _subcommands(parser: argparse.ArgumentParser) -> list[tuple[str, str, argparse.ArgumentParser]]:
    (group,) = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    helps = {choice.dest: choice.help or "" for choice in group._choices_actions}
    return [(name, helps.get(name, ""), sub) for name, sub in group.choices.items()]


def _arguments(parser: argparse.ArgumentParser) -> list[str]:
    formatter = parser._get_formatter()
    rows = ["| argument | what |", "|---|---|"]
    for action in parser._actions:
        if isinstance(action, argparse._HelpAction) or action.help == argparse.SUPPRESS:
            continue
        if action.option_strings:
            name = ", ".join(action.option_strings)
            if action.nargs != 0:
                name += " " + formatter._format_args(action, formatter._get_default_metavar_for_optional(action))
        else:
            name = formatter._format_args(action, formatter._get_default_metavar_for_positional(action))
        what = formatter._expand_help(action) if action.help else ""
        if action.choices and action.metavar is not None:
            what += f" (one of: {', '.join(map(str, action.choices))})"
        rows.append(f"| <code>{_cell(name)}</code> | {_cell(what)} |")
    return rows


def cli_reference() -> str:
    """The reference page's Markdown: each subcommand's usage, description, arguments and epilog."""
    parser = build_parser()
    lines = [
        "# Command line",
        "",
        "Generated from the `devtool` command's own parsers (`devtool.cli.build_parser`) when the docs are",
        "built, so it says what `devtool COMMAND --help` says. Errors a user can cause print one line and",
        "exit with code 2.",
        "",
    ]
    for name, summary, sub in _subcommands(parser):
        lines += [f"## devtool {name}", "", f"{_cell(summary)}", ""]
        lines += ["```text", sub.format_usage().strip(), "```", ""]
        if sub.description:
            lines += [sub.description.strip(), ""]
        lines += [*_arguments(sub), ""]
        if sub.epilog:
            lines += ["```text", sub.epilog.strip(), "```", ""]
    return "\n".join(lines)


def on_files(files: Any, config: Any) -> Any:
    from mkdocs.structure.files import File

    files.append(File.generated(config, "cli.md", content=cli_reference()))
    return files


if __name__ == "__main__":
    print(cli_reference())
