"""A team's shared store: a DuckLake (catalog in PostgreSQL, Parquet data in a shared folder or S3)
attached beside the local DuckDB file. Each DevTool publishes its finished runs to it, lists the
team's runs beside its own, and opens a lake run by copying it in once (its head first, so its page
answers at once, the rest after). See DESIGN.md ("A team's
lake") for what lives where.
"""

from devtool.store.lake.attach import ALIAS, Lake, attach_lake, detach_lake
from devtool.store.lake.config import COPY_CHUNK, LakeConfig, LakeError, lake_config
from devtool.store.lake.fetch import in_lake, open_snapshot, refresh_listing
from devtool.store.lake.maintenance import Compacted, compact
from devtool.store.lake.opening import (
    HEAD,
    Opening,
    being_copied,
    copied_unordered,
    finish_open,
    open_head,
    open_run,
    open_span,
    opening,
    unfinished_opens,
)
from devtool.store.lake.prefix import prefix_events
from devtool.store.lake.publish import Published, publish_run, publish_runs, publish_snapshot, unpublished_runs
from devtool.store.lake.worker import LakeWorker

__all__ = [
    "ALIAS",
    "COPY_CHUNK",
    "HEAD",
    "Compacted",
    "Lake",
    "LakeConfig",
    "LakeError",
    "LakeWorker",
    "Opening",
    "Published",
    "attach_lake",
    "being_copied",
    "compact",
    "copied_unordered",
    "detach_lake",
    "finish_open",
    "in_lake",
    "lake_config",
    "open_head",
    "open_run",
    "open_snapshot",
    "open_span",
    "opening",
    "prefix_events",
    "publish_run",
    "publish_runs",
    "publish_snapshot",
    "refresh_listing",
    "unfinished_opens",
    "unpublished_runs",
]
