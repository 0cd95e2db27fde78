"""The SDK instrumentation's overhead per request in instructions, which do not depend on the machine.

    python bench/count_instrument.py [--requests 200] [--kinds "whole bare,whole recorded,..."]
    python bench/count_instrument.py --kinds "streamed bare,reading ours,reading parse"

`bench_instrument.py` times the overhead in CPU µs, and on this workplace's machines the same code's
µs drift by a third within an hour with nothing else running (BENCHMARKS.md, issue 15): a change of
ten µs cannot be told from the drift. Here each kind of request of `bench_instrument` (whole or
streamed; bare, unrecorded or recorded, its deferred work settled) runs in a child process under
valgrind's callgrind, which counts the instructions the process executes, every thread's (the
drainer's too), the same on every run of the same code and inputs. The child makes its requests over
the in-memory transport of `bench_instrument --in-memory` (the fake provider's bytes, fetched once),
warms up, then calls `zlib.crc32` before and after the counted requests: callgrind's
`--dump-before=zlib_crc32` writes the counts of each stretch to a file of its own, so start-up,
imports and warm-up are left out. The counts are of user space: the kernel's part (the JSONL sink's
`write` calls, the threads' hand-overs of the interpreter's lock) is not in them. What the recording
does by the clock happens more often under callgrind, which runs the process ~50× slower: a streamed
answer's progress events (every `PROGRESS_INTERVAL`) and the drainer's settlings (every
`DRAIN_INTERVAL`), so a recorded streamed request's count is somewhat above its native one.

Two kinds more count what reading a streamed answer costs by itself, with no SDK and no request:
`reading ours` is the instrumentation's reading of the recorded stream's bytes, all at once (the
decoder and the API's reader: what a streamed turn reads at the least), `reading parse` only the
JSON of its events, each parsed by orjson (split beforehand, out of the count): what any reading
that parses the events once more costs at the least.

Reported per request: each kind's instructions, and its overhead over the bare SDK's in instructions
and in µs at the rate the bare SDK ran at natively here, just before (its µs over its instructions:
a conversion, not a measurement; our code's instructions may retire at another rate than the SDK's).
The target is an overhead of at most 50 µs.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import zlib
from collections.abc import Callable
from contextlib import nullcontext
from datetime import date
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

import openai

import devtool
import devtool.instrument
from bench.bench_instrument import KEY, answers_of, asker, bare_sdk_client, recorded_answers
from devtool.core.frame import CURRENT_FRAME
from devtool.instrument.api import StreamReader, payloads
from devtool.instrument.chat_completions import ChatCompletions
from devtool.instrument.sse import SseDecoder
from testkit.fake_provider import FakeProviderProcess

READINGS = ("reading ours", "reading parse")
KINDS = (
    *(f"{form} {how}" for form in ("whole", "streamed") for how in ("bare", "unrecorded", "recorded")),
    *READINGS,
)
WARMUP = 30
BLOCK = 10  # requests between two settlings of the run's deferred work, as in bench_instrument
TEXT = ("Lisbon: hills, trams, tiles and tarts. " * 11)[:400]


def requests(kind: str, url: str, count: int, folder: Path, marked: bool) -> float:
    """Make `count` requests of `kind` after a warm-up; the CPU seconds they took, each. With `marked`,
    `zlib.crc32` is called just before and after them: callgrind's markers."""
    form, how = kind.split()
    devtool.instrument.openai()
    sdk_class = bare_sdk_client() if how == "bare" else openai.OpenAI
    http = openai.DefaultHttpxClient(transport=answers_of(url))
    client = sdk_class(base_url=f"{url}/v1", api_key=KEY, max_retries=0, http_client=http)
    ask = asker(client, streamed=form == "streamed")
    # Unrecorded: outside any run, what a request of a process that called `install()` pays then.
    with devtool.record("count", to=folder / f"{form}-{how}.jsonl") if how == "recorded" else nullcontext():
        settle = CURRENT_FRAME.get().run.emitter.settle if how == "recorded" else (lambda: None)
        for _ in range(WARMUP):
            ask()
        settle()

        def counted_requests() -> None:
            for done in range(1, count + 1):
                ask()
                if done % BLOCK == 0:
                    settle()
            settle()

        took = _stretch(counted_requests, marked)
    client.close()
    return took / count


def readings(kind: str, url: str, count: int, marked: bool) -> float:
    """Read the fake provider's streamed answer `count` times as `kind` says, after a warm-up; the CPU
    seconds a reading took. With `marked`, `zlib.crc32` is called just before and after them."""
    content = b"".join(recorded_answers(url)[True][2])

    def ours() -> StreamReader:
        reader = ChatCompletions().reader()
        reader.read(SseDecoder().feed(content), [])
        return reader

    read = ours()
    if not read.complete or read.answer().message["content"] != TEXT:
        raise SystemExit(f"the stream read is not the fake provider's answer: {content[:200]!r}")
    datas = [data for _, data in SseDecoder().feed(content) if data != "[DONE]"]
    reading = ours if kind == "reading ours" else functools.partial(payloads, datas)
    for _ in range(WARMUP):
        reading()

    def counted_readings() -> None:
        for _ in range(count):
            reading()

    return _stretch(counted_readings, marked) / count


def _stretch(work: Callable[[], None], marked: bool) -> float:
    """The CPU seconds `work()` took; with `marked`, between two calls of `zlib.crc32` (callgrind's
    markers: `--dump-before=zlib_crc32` counts what lies between them apart)."""
    if marked:
        zlib.crc32(b"start")
    started = time.process_time()
    work()
    took = time.process_time() - started
    if marked:
        zlib.crc32(b"end")
    return took


def counted(kind: str, url: str, count: int, folder: Path) -> int:
    """The instructions of `count` requests of `kind`, in a child process under callgrind."""
    dumped = folder / "callgrind"
    dumped.mkdir(exist_ok=True)
    out = dumped / kind.replace(" ", "-")
    callgrind = ["valgrind", "--tool=callgrind", "--dump-before=zlib_crc32", f"--callgrind-out-file={out}"]
    command = [*callgrind, *_child(kind, url, count, folder)]
    env = {**os.environ, "PYTHONHASHSEED": "0"}
    child = subprocess.run(command, env=env, capture_output=True, text=True)
    if child.returncode != 0:
        raise SystemExit(f"the counted child of {kind} failed ({child.returncode}):\n{child.stderr[-3000:]}")
    # The dumps in order: up to the first marker (start-up, warm-up), between the two (the requests),
    # after the second (exit), numbered by callgrind as it wrote them.
    dumps = sorted(dumped.glob(f"{out.name}.*"), key=lambda path: int(path.suffix[1:]))
    assert len(dumps) >= 2, f"callgrind wrote {len(dumps)} dumps for {kind}: no markers reached"
    return _total(dumps[1])


def _total(dump: Path) -> int:
    for line in dump.read_text().splitlines():
        if line.startswith(("totals:", "summary:")):
            return int(line.split()[1])
    raise ValueError(f"{dump}: no totals line")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--requests", type=int, default=200)
    parser.add_argument("--kinds", default=",".join(KINDS))
    parser.add_argument("--child", help=argparse.SUPPRESS)
    parser.add_argument("--url", help=argparse.SUPPRESS)
    parser.add_argument("--folder", help=argparse.SUPPRESS)
    parser.add_argument("--timed", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child in READINGS:
        print(readings(args.child, args.url, args.requests, marked=not args.timed))
        return
    if args.child:
        took = requests(args.child, args.url, args.requests, Path(args.folder), marked=not args.timed)
        print(took)
        return
    if shutil.which("valgrind") is None:
        parser.error("valgrind is not installed (Debian: apt-get install valgrind)")
    kinds = [kind.strip() for kind in args.kinds.split(",")]
    unknown = set(kinds) - set(KINDS)
    if unknown:
        parser.error(f"unknown kinds {sorted(unknown)}: choose among {', '.join(KINDS)}")
    load_before = os.getloadavg()
    with tempfile.TemporaryDirectory() as name, FakeProviderProcess.start() as process:
        folder = Path(name)
        fake = process.namespace()
        fake.reply({"text": TEXT, "usage": {"input": 30, "output": 100}}, times=None)
        # The bare SDK's native µs a request, for the conversion: median of five runs in a child each.
        native = {
            form: statistics.median(_native(f"{form} bare", process.url, folder) for _ in range(5))
            for form in ("whole", "streamed")
            if f"{form} bare" in kinds
        }
        instructions = {kind: counted(kind, process.url, args.requests, folder) / args.requests for kind in kinds}
    print(
        f"count_instrument · {date.today()} · {platform.machine()}, {os.cpu_count()} cores · "
        f"{args.requests} requests a kind after {WARMUP}, under callgrind"
    )
    print(f"load average before {load_before[0]:.2f}, after {os.getloadavg()[0]:.2f}")
    print("extra: a request's instructions over the bare SDK's request of its form; a reading's own")
    print(f"{'what':<20} {'instructions':>14} {'extra':>12} {'≈ µs extra':>16}")
    for kind in kinds:
        # A reading is a part of a streamed request: its µs are at the streamed bare SDK's rate.
        form = "streamed" if kind in READINGS else kind.split()[0]
        bare = instructions.get(f"{form} bare")
        shown = ""
        if bare is not None:
            rate = native[form] * 1e6 / bare  # µs an instruction, the bare SDK's
            over = instructions[kind] if kind in READINGS else instructions[kind] - bare
            shown = f"{over:>12,.0f} {over * rate:>13.1f} µs"
        print(f"{kind:<20} {instructions[kind]:>14,.0f} {shown}")
    for form, seconds in native.items():
        print(f"the bare SDK natively, {form}: {seconds * 1e6:.0f} µs a request (median of 5 children)")


def _native(kind: str, url: str, folder: Path) -> float:
    """The CPU seconds of a request of `kind`, natively, in a child as the counted ones run."""
    command = [*_child(kind, url, 400, folder), "--timed"]
    return float(subprocess.run(command, check=True, capture_output=True, text=True).stdout.strip())


def _child(kind: str, url: str, count: int, folder: Path) -> list[str]:
    """The command of a child that makes `count` requests of `kind` (`requests`)."""
    return [sys.executable, __file__, "--child", kind, "--url", url, "--requests", str(count), "--folder", str(folder)]


if __name__ == "__main__":
    main()
