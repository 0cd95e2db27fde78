"""Side by side with the peers a user would install instead (issue 43): Arize Phoenix and MLflow, on
the same OTLP workload, and our OTLP ingest against its floor. Run by hand, never by the test suite:

    .venv/bin/python -m bench.peers [--spans 100000] [--rounds 3] [--systems ours phoenix mlflow]
                                    [--figures ingest probes big search] [--budget 1800]
                                    [--scratch ~/.cache/devtool-bench-peers]

Once: installs each peer from PyPI into its own venv under the scratch folder (`venvs.py`), and makes
the workload with the OpenTelemetry SDK and its OTLP encoder (`workload.py`). Then, each round, every
system in turn on a fresh data folder (the order alternates: reversed every other round), each
figure of `measure.py`; and the floor (`floor.py`) on the same ingest bodies. Prints, and writes to
the scratch folder, the table of medians and ratios (`table.py`) with the load average.
"""

from __future__ import annotations

import argparse
import importlib
import os
import shutil
import statistics
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from types import ModuleType

from bench.peers import floor, measure, venvs, workload
from bench.peers.table import render


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--spans", type=int, default=100_000, help="spans in the ingest workload (default 100,000)")
    parser.add_argument("--rounds", type=int, default=3, help="rounds over the systems (default 3)")
    parser.add_argument(
        "--systems", nargs="+", default=["ours", "phoenix", "mlflow"], choices=["ours", "phoenix", "mlflow"]
    )
    parser.add_argument(
        "--figures",
        nargs="+",
        default=list(measure.FIGURES),
        choices=measure.FIGURES,
        help="which figures to take (default all); the search needs the ingest's traces",
    )
    parser.add_argument(
        "--budget",
        type=float,
        default=1800.0,
        help="seconds a system may take for its ingest, and for its search (default 1800); past it the"
        " figure is shown as '> budget' and, for the ingest, the round's other figures of it are not taken",
    )
    parser.add_argument("--scratch", type=Path, default=Path.home() / ".cache" / "devtool-bench-peers")
    args = parser.parse_args(argv)
    scratch: Path = args.scratch
    systems: dict[str, ModuleType] = {name: importlib.import_module(f"bench.peers.{name}") for name in args.systems}
    titles = {"ours": "DevTool"}
    for name in args.systems:
        if name != "ours":
            systems[name].BIN = venvs.ensure(scratch, name)  # type: ignore[attr-defined]
            titles[name] = f"{systems[name].TITLE} {venvs.version(scratch, name)}"
    sets = ("ingest", "probes", "busy", "big")
    loads = {name: workload.load(scratch / "workload", name, args.spans) for name in sets}
    print(f"workload: {loads['ingest'].spans:,} spans in {len(loads['ingest'].trace_ids):,} traces", flush=True)
    results: dict[str, list[dict[str, float]]] = {name: [] for name in args.systems}
    floors, loadavg = [], []
    for number in range(args.rounds):
        order = args.systems if number % 2 == 0 else args.systems[::-1]
        print(f"round {number + 1}: {' → '.join(order)}; load average {os.getloadavg()[0]:.2f}", flush=True)
        loadavg.append(os.getloadavg()[0])
        for name in order:
            data = scratch / "runs" / name
            shutil.rmtree(data, ignore_errors=True)
            results[name].append(measure.one_round(systems[name], data, loads, tuple(args.figures), args.budget))
        if "ingest" in args.figures:
            floors.append(floor.measure(loads["ingest"].bodies))
            print(f"  floor: {floors[-1]:.2f} s", flush=True)
        loadavg.append(os.getloadavg()[0])
    medians = {name: measure.medians(found) for name, found in results.items()}
    stamp = datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC")
    lines = [
        f"bench.peers · {stamp} · {os.cpu_count()} cores · {loads['ingest'].spans:,} spans · {args.rounds} round(s)"
        f" · budget {args.budget:,.0f} s a figure"
        f" · load average {min(loadavg):.1f}-{max(loadavg):.1f} (1 min, at each round's start and end)"
        f" · figures: {', '.join(args.figures)}",
        "",
        render(medians, titles),
    ]
    if "ours" in medians and floors:
        floor_s, ours_s = statistics.median(floors), medians["ours"]["ingest_s"]
        lines.append("")
        lines.append(
            f"OTLP ingest floor (decode, a JSON line a span, DuckDB read_json): {floor_s:.2f} s median;"
            f" ours to visible {ours_s:.2f} s = {ours_s / floor_s:.1f}× the floor"
        )
    text = "\n".join(lines)
    print(text)
    out = scratch / f"results-{time.strftime('%Y%m%d-%H%M%S')}.md"
    out.write_text(text + "\n")
    print(f"written to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
