"""Replay: run a recorded entrypoint again from a snapshot, in a child process that streams back here.

What runs comes from a trace, and a trace can come from anyone (a teammate's file, an upload), so
its entrypoint string is untrusted. A replay therefore:

- runs only `module:function` made of ASCII identifiers (what you read is what runs: no look-alike
  letters, no option or shell syntax), as `sys.executable -m devtool run ...` with an argument list,
  never a shell, each value as one `--option=value` argument;
- refuses the standard library and builtins (`os:system`, `subprocess:run`, `builtins:exec`),
  installed packages (anything under `site-packages`, even in a virtualenv inside the project), and
  any module whose top-level package is not under the replay root (the folder the DevTool was started
  in, `Settings.replay_root`), except the bundled demo agents; the module is located without
  importing it (nothing of it runs in the server);
- has the child refuse a function the module only imported (`--defined-in-module`), so a project
  module that does `from subprocess import run` cannot be used to call `subprocess.run`;
- shows the user exactly that command, the props and where the module lives, and runs only on a
  confirming POST whose fingerprint matches what was shown (if the recorded entrypoint changed in
  between, it refuses).

The child streams its events to this server (`--to`, with the team token in its environment, never
on its command line) and records, under `metadata.replay`, the snapshot, the original run and the
replay's id, which is how the replay page finds the run it became.
"""

from __future__ import annotations

import hashlib
import importlib.machinery
import os
import re
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import orjson

import devtool

_NAME = r"[A-Za-z_][A-Za-z0-9_]*"
ENTRYPOINT = re.compile(rf"{_NAME}(\.{_NAME})*:{_NAME}(\.{_NAME})*")
# Agents that ship with the DevTool (`devtool demo`): replayable wherever the DevTool is installed.
BUNDLED = "devtool.demo."
# A virtualenv inside the project folder is common: what it installed is still not the project's code.
INSTALLED = frozenset({"site-packages", "dist-packages"})
LOG_TAIL_BYTES = 8 << 10


class ReplayRefused(Exception):
    """This entrypoint will not be run; the message says why."""


@dataclass(frozen=True)
class ReplayPlan:
    """Exactly what a replay will run, as shown to the user before they confirm it."""

    snapshot_id: str
    original_trace_id: str | None
    entrypoint: str
    props: Any
    module_path: Path

    @property
    def fingerprint(self) -> str:
        """What the confirming form carries back: the replay runs only if it still matches."""
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
            "--defined-in-module",
            f"--props={orjson.dumps(self.props).decode()}",
            f"--to={server_url}",
            f"--snapshot={server_url}/snapshots/{self.snapshot_id}.json",
            f"--metadata={orjson.dumps(metadata).decode()}",
        ]


def check_entrypoint(entrypoint: Any, root: Path) -> Path:
    """The file of `entrypoint`'s module, if a replay may run it; else `ReplayRefused` saying why."""
    if not isinstance(entrypoint, str) or not ENTRYPOINT.fullmatch(entrypoint):
        shown = repr(entrypoint)
        shown = shown if len(shown) <= 120 else shown[:119] + "…"
        raise ReplayRefused(
            f"the recorded entrypoint {shown} is not module:function (ASCII names joined by dots, "
            "one colon): it will not be run"
        )
    module = entrypoint.partition(":")[0]
    top = module.split(".")[0]
    if top in sys.stdlib_module_names or top in sys.builtin_module_names:
        raise ReplayRefused(f"{entrypoint} is in Python's standard library, not an agent: it will not be run")
    top_dir, module_file = _locate(module, root)
    if module.startswith(BUNDLED) and top_dir == Path(devtool.__file__).resolve().parent:
        return module_file
    if INSTALLED.intersection(top_dir.parts):
        raise ReplayRefused(
            f"{entrypoint} is an installed package ({top_dir}), not your project's code: it will not be run"
        )
    if not top_dir.is_relative_to(root.resolve()):
        raise ReplayRefused(
            f"{entrypoint} comes from {top_dir}, outside {root} (the folder this DevTool replays code "
            "from): start the DevTool in your project's folder to replay its agents"
        )
    return module_file


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
    log_path: Path
    process: subprocess.Popen[bytes]
    actor: str
    trace_id: str | None = None  # the run it became, once its first events are stored

    @property
    def returncode(self) -> int | None:
        return self.process.poll()

    def log_tail(self) -> str:
        """The end of what the child wrote (its result line, or why it failed)."""
        try:
            with self.log_path.open("rb") as log:
                log.seek(0, os.SEEK_END)
                size = log.tell()
                log.seek(max(0, size - LOG_TAIL_BYTES))
                return log.read().decode("utf-8", errors="replace")
        except OSError:
            return ""


@dataclass
class Replays:
    """The replays one server started, by id; children are reaped as they exit."""

    root: Path
    token: str | None = None
    _by_id: dict[str, Replay] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    _logs: Path | None = None

    def start(self, plan: ReplayPlan, server_url: str, *, actor: str) -> Replay:
        replay_id = uuid.uuid4().hex
        argv = plan.argv(server_url, replay_id)
        log_path = self._log_dir() / f"{replay_id}.log"
        env = dict(os.environ)
        env.pop("DEVTOOL_TOKEN", None)
        if self.token is not None:
            env["DEVTOOL_TOKEN"] = self.token
        with log_path.open("wb") as log:
            process = subprocess.Popen(
                argv,
                cwd=self.root,
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        replay = Replay(replay_id, plan, argv, time.time(), log_path, process, actor)
        threading.Thread(target=process.wait, name=f"devtool-replay-{replay_id[:8]}", daemon=True).start()
        with self._lock:
            self._by_id[replay_id] = replay
        return replay

    def get(self, replay_id: str) -> Replay | None:
        with self._lock:
            return self._by_id.get(replay_id)

    def _log_dir(self) -> Path:
        with self._lock:
            if self._logs is None:
                self._logs = Path(tempfile.mkdtemp(prefix="devtool-replays-"))
            return self._logs
