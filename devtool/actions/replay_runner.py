"""Replay: run a recorded entrypoint again from a snapshot, in a child process that streams back here.

What runs comes from a trace, and a trace can come from anyone (a teammate's file, an upload), so
its entrypoint string is untrusted. A replay therefore runs only what the code's owner allowed and a
person confirmed:

- `module:function` made of ASCII identifiers, `function` defined at the top of `module` (what you
  read is what runs: no look-alike letters, no option or shell syntax), as `sys.executable -m devtool
  run ...` with an argument list, never a shell, each value as one `--option=value` argument;
- a function its module declares replayable (`@replayable` from `devtool.core`, or `name =
  replayable(...)`): found by reading the module's source, without importing it (nothing of it runs
  in the server), and checked again by the child on the imported function (`--only-replayable`), so
  neither an importable `os:system` nor a project's own helper that never said so is ever run;
- from a module under the replay root (the folder the DevTool was started in, `Settings.replay_root`)
  and not from an installed package (anything under `site-packages`), except the bundled demo agents;
- confirmed: the confirm page shows exactly the argument list the child gets (this server's address
  and the replay's id included) and the declaration, and carries a one-time confirmation this server
  made for that page (`Replays.offer`); the POST needs it (and the page token), from every client,
  and runs what was offered only if the recorded entrypoint and props still say the same.

The child streams its events to this server (`--to`, with the team token in its environment, never
on its command line) and records, under `metadata.replay`, the snapshot, the original run and the
replay's id, which is how the replay page finds the run it became.

What the child writes (its stdout and stderr) goes to a file without a name (`tempfile.TemporaryFile`,
unlinked from the start) that this server holds open and the replay page shows the end of. It is
read nowhere else, so it lives exactly as long as someone may read it (this server: `Replays.close`
at its shutdown) or write it (the child, which may outlive the server: its own session), and then
the system frees it. A server stopped, killed or crashed leaves nothing in the temporary folder (a
folder of named logs per server did, never removed: 33 of them in one machine's /tmp).
"""

from __future__ import annotations

import ast
import hashlib
import hmac
import importlib.machinery
import os
import re
import secrets
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from collections import OrderedDict
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

import orjson

import devtool
from devtool.store.private_files import user_umask

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
ENTRYPOINT = re.compile(rf"{_NAME}(\.{_NAME})*:{_NAME}")
# Agents that ship with the DevTool (`devtool demo`): replayable wherever the DevTool is installed.
BUNDLED = "devtool.demo."
# A virtualenv inside the project folder is common: what it installed is still not the project's code.
INSTALLED = frozenset({"site-packages", "dist-packages"})
LOG_TAIL_BYTES = 8 << 10
# The decorator's name, as the source spells it (`@replayable`, `@devtool.core.replayable`).
MARK = "replayable"
SOURCE_LINES = 12  # of the declared function, shown on the confirm page
# Confirmations made for confirm pages: each is good for one replay, for a while.
OFFER_SECONDS = 15 * 60
MAX_OFFERS = 64


class ReplayRefused(Exception):
    """This entrypoint will not be run; the message says why."""


@dataclass(frozen=True)
class Declaration:
    """Where a replayable entrypoint is declared: its module's file, the line and the source shown."""

    module_path: Path
    line: int
    source: str


@dataclass(frozen=True)
class ReplayPlan:
    """What a replay will run, as recorded in the trace and allowed by its module."""

    snapshot_id: str
    original_trace_id: str | None
    entrypoint: str
    props: Any
    declaration: Declaration
    name: str | None = None  # the recorded run's name, which the replay is called by too

    @property
    def fingerprint(self) -> str:
        """What was offered: a replay runs only if the run's record still says the same."""
        shown = orjson.dumps([self.snapshot_id, self.entrypoint, self.props], option=orjson.OPT_SORT_KEYS)
        return hashlib.sha256(shown).hexdigest()[:32]

    def argv(self, server_url: str, replay_id: str) -> list[str]:
        """The child's argument list (never a shell string)."""
        metadata = {
            "replay": {"id": replay_id, "snapshotId": self.snapshot_id, "originalTraceId": self.original_trace_id}
        }
        return [
            sys.executable,
            "-m",
            "devtool",
            "run",
            self.entrypoint,
            "--only-replayable",
            f"--props={orjson.dumps(self.props).decode()}",
            f"--to={server_url}",
            f"--snapshot={server_url}/snapshots/{self.snapshot_id}.json",
            f"--metadata={orjson.dumps(metadata).decode()}",
            *([f"--name={self.name}"] if self.name else []),
        ]


def check_entrypoint(entrypoint: Any, root: Path) -> Declaration:
    """Where `entrypoint` is declared replayable, if a replay may run it; else `ReplayRefused` saying why."""
    if not isinstance(entrypoint, str) or not ENTRYPOINT.fullmatch(entrypoint):
        shown = repr(entrypoint)
        shown = shown if len(shown) <= 120 else shown[:119] + "…"
        raise ReplayRefused(
            f"the recorded entrypoint {shown} is not module:function (ASCII names joined by dots, "
            "one colon, a function at the top of its module): it will not be run"
        )
    module = entrypoint.partition(":")[0]
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        raise ReplayRefused(f"{entrypoint} is in Python's standard library, not an agent: it will not be run")
    top_dir, module_file = _locate(module, root)
    bundled = module.startswith(BUNDLED) and top_dir == Path(devtool.__file__).resolve().parent
    if not bundled and INSTALLED.intersection(top_dir.parts):
        raise ReplayRefused(
            f"{entrypoint} is an installed package ({top_dir}), not your project's code: it will not be run"
        )
    if not bundled and not top_dir.is_relative_to(root.resolve()):
        raise ReplayRefused(
            f"{entrypoint} comes from {top_dir}, outside {root} (the folder this DevTool replays code "
            "from): start the DevTool in your project's folder to replay its agents"
        )
    return declaration(entrypoint, module_file)


def declaration(entrypoint: str, module_file: Path) -> Declaration:
    """Where `module_file` declares `entrypoint`'s function replayable, read from its source (nothing
    is imported); `ReplayRefused` when its last definition at the top of the module is not."""
    module, _, function = entrypoint.partition(":")
    try:
        text = module_file.read_text(encoding="utf-8")
        tree = ast.parse(text, filename=str(module_file))
    except (OSError, UnicodeDecodeError, SyntaxError, ValueError) as exc:
        raise ReplayRefused(f"{module_file} cannot be read as Python ({exc}): nothing to run") from None
    binding: ast.stmt | None = None
    for statement in _top_level(tree.body):
        if function in _bound(statement):
            binding = statement
    if binding is None:
        raise ReplayRefused(f"{module} defines no {function} at its top level: nothing to run")
    if not _declares(binding):
        raise ReplayRefused(
            f"{entrypoint} is not declared replayable: only a function its module marks with @replayable "
            f"(from devtool.core) is run again, and {module_file} does not mark {function}"
        )
    lines = text.splitlines()
    first = min([binding.lineno, *(d.lineno for d in getattr(binding, "decorator_list", ()))])
    shown = lines[first - 1 : min(binding.end_lineno or first, first - 1 + SOURCE_LINES)]
    return Declaration(module_file, first, "\n".join(shown))


def _top_level(body: list[ast.stmt]) -> Iterator[ast.stmt]:
    """The module's statements in order, those inside `if`/`try`/`with` blocks included (they run at import)."""
    for statement in body:
        yield statement
        if isinstance(statement, ast.If | ast.For | ast.While):
            yield from _top_level([*statement.body, *statement.orelse])
        elif isinstance(statement, ast.With):
            yield from _top_level(statement.body)
        elif isinstance(statement, ast.Try):
            handlers = [item for handler in statement.handlers for item in handler.body]
            yield from _top_level([*statement.body, *handlers, *statement.orelse, *statement.finalbody])


def _bound(statement: ast.stmt) -> set[str]:
    """The names a statement binds in its module."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef | ast.ClassDef):
        return {statement.name}
    if isinstance(statement, ast.Import | ast.ImportFrom):
        return {(alias.asname or alias.name).split(".")[0] for alias in statement.names}
    targets: list[ast.expr] = []
    if isinstance(statement, ast.Assign):
        targets = statement.targets
    elif isinstance(statement, ast.AnnAssign | ast.AugAssign):
        targets = [statement.target]
    return {node.id for target in targets for node in ast.walk(target) if isinstance(node, ast.Name)}


def _declares(statement: ast.stmt) -> bool:
    """`@replayable def f` (or `async def`), or `f = replayable(...)`."""
    if isinstance(statement, ast.FunctionDef | ast.AsyncFunctionDef):
        return any(_is_mark(decorator) for decorator in statement.decorator_list)
    if isinstance(statement, ast.Assign) and isinstance(statement.value, ast.Call):
        return _is_mark(statement.value.func)
    return False


def _is_mark(node: ast.expr) -> bool:
    return (isinstance(node, ast.Name) and node.id == MARK) or (isinstance(node, ast.Attribute) and node.attr == MARK)


def _locate(module: str, root: Path) -> tuple[Path, Path]:
    """Where `module`'s top-level package (or module) and `module` itself are, found as the child's
    import finds them (the root first, then this Python's path), without importing anything."""
    parts = module.split(".")
    search = [str(root), *sys.path]
    found: list[Path] = []
    for depth, part in enumerate(parts):
        name = ".".join(parts[: depth + 1])
        spec = importlib.machinery.PathFinder.find_spec(name, search) if search else None
        if spec is None:
            where = f"under {root} nor installed" if depth == 0 else f"in package {parts[depth - 1]!r}"
            raise ReplayRefused(f"there is no module {part!r} {where}: nothing to run")
        search = list(spec.submodule_search_locations or [])
        origin = spec.origin if spec.origin not in (None, "namespace") else (search[0] if search else None)
        if origin is None:
            raise ReplayRefused(f"module {name!r} has no file to run")
        found.append(Path(origin).resolve())
    top = found[0]
    return (top.parent if top.name == "__init__.py" else top), found[-1]


@dataclass
class Replay:
    """One replay child process: what it runs and how it is doing."""

    id: str
    plan: ReplayPlan
    argv: list[str]
    started_at: float
    log: IO[bytes]  # the child's output, a file without a name (see the module's docstring)
    process: subprocess.Popen[bytes]
    actor: str
    trace_id: str | None = None  # the run it became, once its first events are stored

    @property
    def returncode(self) -> int | None:
        return self.process.poll()

    def log_tail(self) -> str:
        """The end of what the child wrote (its result line, or why it failed); "" once the server stopped."""
        try:
            # pread, not seek: the child writes at the file's offset, which it shares with this descriptor.
            descriptor = self.log.fileno()
            size = os.fstat(descriptor).st_size
            start = max(0, size - LOG_TAIL_BYTES)
            return os.pread(descriptor, size - start, start).decode("utf-8", errors="replace")
        except (OSError, ValueError):  # ValueError: closed
            return ""


@dataclass(frozen=True)
class Offer:
    """A replay as a confirm page showed it: started only by the POST that brings back its `token`."""

    token: str
    replay_id: str
    plan: ReplayPlan
    argv: tuple[str, ...]
    expires: float  # time.monotonic()


@dataclass
class Replays:
    """The replays one server offered and started, by id; children are reaped as they exit."""

    root: Path
    token: str | None = None
    _by_id: dict[str, Replay] = field(default_factory=dict)
    _offers: OrderedDict[str, Offer] = field(default_factory=OrderedDict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def offer(self, plan: ReplayPlan, server_url: str) -> Offer:
        """A confirmation for a page that shows `plan`: its token, and the exact command it will start."""
        replay_id = uuid.uuid4().hex
        offer = Offer(
            secrets.token_urlsafe(24),
            replay_id,
            plan,
            tuple(plan.argv(server_url, replay_id)),
            time.monotonic() + OFFER_SECONDS,
        )
        with self._lock:
            self._offers[offer.token] = offer
            while len(self._offers) > MAX_OFFERS:
                self._offers.popitem(last=False)
        return offer

    def redeem(self, token: str) -> Offer | None:
        """The offer `token` confirms, used up; None when this server made none such, or it expired."""
        with self._lock:
            found = next((key for key in self._offers if hmac.compare_digest(key.encode(), token.encode())), None)
            offer = self._offers.pop(found) if found is not None else None
        return offer if offer is not None and offer.expires > time.monotonic() else None

    def start(self, offer: Offer, *, actor: str) -> Replay:
        """Run what `offer` showed, as a child process (it blocks while the child starts: not on an event loop)."""
        env = dict(os.environ)
        env.pop("DEVTOOL_TOKEN", None)
        if self.token is not None:
            env["DEVTOOL_TOKEN"] = self.token
        log = tempfile.TemporaryFile(prefix="devtool-replay-")  # noqa: SIM115 (open while the server runs: `close`)
        try:
            process = subprocess.Popen(
                list(offer.argv),
                cwd=self.root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
                umask=-1 if (umask := user_umask()) is None else umask,  # the agent's files are the user's
            )
        except BaseException:
            log.close()
            raise
        replay = Replay(offer.replay_id, offer.plan, list(offer.argv), time.time(), log, process, actor)
        threading.Thread(target=process.wait, name=f"devtool-replay-{offer.replay_id[:8]}", daemon=True).start()
        with self._lock:
            self._by_id[offer.replay_id] = replay
        return replay

    def get(self, replay_id: str) -> Replay | None:
        with self._lock:
            return self._by_id.get(replay_id)

    def close(self) -> None:
        """The server is stopping: let go of the replays' logs (a child still running keeps its own
        until it ends; then the system frees it)."""
        with self._lock:
            replays = list(self._by_id.values())
        for replay in replays:
            replay.log.close()
