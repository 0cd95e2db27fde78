"""`devtool diff RUN_A RUN_B`: where two runs first differ, for a person or a CI script.

    devtool diff 6513270e269e ffffffffffff          the first divergence and a summary
    devtool diff A B --json                         the answer of `GET /compare?a=&b=` (JSON)

Exits 0 when the runs are the same (every call agrees in input, output, error and memory), 1 when
they differ, 2 when it cannot tell (no such run, an ambiguous short id). Runs are named by their
id or the short prefix the UI shows. The comparison is `devtool.actions.compare`'s, the one the
compare page shows; when a `devtool serve` owns the database, it is asked (`/compare`, JSON).
"""

from __future__ import annotations

import argparse
import json
from typing import Any
from urllib.parse import urlencode

from devtool.cli.errors import CliError
from devtool.cli.options import add_db_option, default_db_path, open_store, require_web_extra
from devtool.cli.server_file import RunningServer, running_server

SAME, DIFFERENT = 0, 1
SHOWN_CHARS = 400
_MARKS = {"same": "{}", "del": "[-{}-]", "ins": "{{+{}+}}"}  # as `git diff --word-diff` marks words


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "diff", help="where two runs first differ (exit 1 when they differ, 0 when they are the same)"
    )
    parser.add_argument("run_a", metavar="RUN_A", help="a run's id, or the short id the DevTool shows")
    parser.add_argument("run_b", metavar="RUN_B", help="the run to compare it with")
    parser.add_argument("--json", action="store_true", help="print the comparison as JSON (GET /compare's answer)")
    add_db_option(parser)
    parser.set_defaults(run=run)


def run(args: argparse.Namespace) -> int:
    require_web_extra()
    server = running_server(args.db or default_db_path())
    summary = _from_server(server, args) if server is not None else _from_store(args)
    if args.json:
        print(json.dumps(summary, indent=2))
    else:
        print(describe(summary))
    return SAME if summary["firstDivergence"] is None else DIFFERENT


def _from_store(args: argparse.Namespace) -> dict[str, Any]:
    from devtool.actions.compare import compare, summary_json
    from devtool.store import NotFoundError
    from devtool.store.queries.run_ids import AmbiguousRunError, resolve_run

    store = open_store(args)
    try:
        a, b = resolve_run(store, args.run_a), resolve_run(store, args.run_b)
        return summary_json(store, compare(store, a, b))
    except (NotFoundError, AmbiguousRunError) as exc:
        raise CliError(str(exc)) from None
    finally:
        store.close()


def _from_server(server: RunningServer, args: argparse.Namespace) -> dict[str, Any]:
    answer: dict[str, Any] = server.json_of("compare?" + urlencode({"a": args.run_a, "b": args.run_b}))
    return answer


def describe(summary: dict[str, Any]) -> str:
    """The comparison in a few lines: the verdict, the first divergence with its word diff, what follows."""
    from devtool.actions.compare import narrow, word_diff

    runs = f"{summary['a'][:12]} and {summary['b'][:12]}"
    first = summary["firstDivergence"]
    if first is None:
        return f"same: runs {runs} agree in all {summary['total']:,} calls"
    lines = [
        f"differ: {summary['differing']:,} of {summary['total']:,} calls of runs {runs}",
        f"first divergence: the {first['field']} of {first['name']}  ({first['callId']})",
    ]
    if first["field"] == "call":
        lines.append(f"  only run {'A' if first['b'] is None else 'B'} made this call")
    else:
        path, a, b = narrow(first["a"], first["b"])
        pieces = word_diff(_text(a), _text(b))
        marked = "".join(
            p.text if p.op == "same" else f"[-{p.text}-]" if p.op == "del" else f"{{+{p.text}+}}" for p in pieces
        )
        lines.append(f"  {first['field']}{path}: {_cut(marked)}")
    if summary.get("downstream"):
        lines.append("downstream:")
        lines += [f"  {d['name']} ({', '.join(d['fields'])})" for d in summary["downstream"]]
        more = summary["differing"] - 1 - len(summary["downstream"])
        if more > 0:
            lines.append(f"  and {more:,} more")
    return "\n".join(lines)


def _text(value: Any) -> str:
    return value if isinstance(value, str) else "" if value is None else json.dumps(value, indent=2)


def _cut(text: str) -> str:
    return text if len(text) <= SHOWN_CHARS else text[: SHOWN_CHARS - 1] + "…"
