"""What one DevTool server is configured with; `create_app` takes it, nothing reads globals."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

# Bodies up to this size as sent are read in the server's threads, not queued for an OTLP worker
# (`live/otlp_reader.py` says why): the default of `Settings.otlp_small_body`.
SMALL_BODY = 32 * 1024


@dataclass(frozen=True)
class Settings:
    """Server settings. Defaults suit `devtool serve` on loopback."""

    # The biggest file the upload form accepts (a trace, a journal or a snapshot).
    max_upload_bytes: int = 512 * 1024 * 1024
    # Live ingest (`POST /api/v1/traces`): the biggest body and the most events in one batch.
    max_ingest_bytes: int = 32 * 1024 * 1024
    max_ingest_events: int = 10_000
    # OTLP trace requests are read in this many worker processes (`live/otlp_reader.py`); none: in the
    # server's threads. `devtool serve` starts one; an app made in a test or a script starts none
    # unless asked (whether to start processes is its owner's choice). The workers are spawned, so
    # they import the main module again: a script that asks serves under `if __name__ == "__main__":`.
    otlp_workers: int = 0
    # Bodies up to this many bytes as sent are read in the server's threads even with workers: one
    # small trace's export is not queued behind an ingest's big bodies (`SMALL_BODY`).
    otlp_small_body: int = SMALL_BODY
    # Live streams: at most one message per `live_interval` s per client, but for messages of a
    # thousand events, which go at once (a page's refreshes also queue behind each other, so it
    # redraws no faster than fragments render), and the spans of live events derived at most that
    # often; a client that falls `live_queue_events` behind is told to resync; a heartbeat every
    # `live_heartbeat` s.
    live_interval: float = 0.1
    live_queue_events: int = 10_000
    live_heartbeat: float = 15.0
    # Trace files to tail (`devtool serve --follow`), looked at every `follow_interval` s.
    follow: tuple[Path, ...] = ()
    follow_interval: float = 0.1
    # The team token (`--token`, `DEVTOOL_TOKEN`): with one, every request must carry it (see `auth`).
    token: str | None = None
    # Without a team token, the server answers requests whose `Host` names it (a loopback name or its
    # address, with its port) and these names (`--allow-host`; `devtool.web.hosts`), and no others.
    allow_hosts: tuple[str, ...] = ()
    # How long a teammate's sign-in lasts (a restart or signing out ends it sooner).
    session_seconds: float = 12 * 3600
    # The command line's token (`devtool serve` writes it beside the database, readable by its user
    # only): `devtool load` and `devtool export` on this machine work through the server with it.
    local_token: str | None = None
    # Replay runs entrypoints from modules under this folder only (None: where the server started).
    replay_root: Path | None = None
    # Runs of at least this many events get a frame index in the background (`actions/frame_indexer.py`),
    # once they have not grown for `rewind_index_interval` s; smaller runs rewind fast enough without.
    rewind_index_events: int = 50_000
    rewind_index_interval: float = 5.0
