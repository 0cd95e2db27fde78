"""The DevTool's actions: what changes state, each decided here once; the web app only calls them.

- `run_rewind`: a run's snapshot at a cut, from its frame index or from its events, stored by id.
- `frame_indexer`: frame indexes of big runs, built in a background thread.
- `process_rewind`: a process journal's rewind plan, and Apply (recorded in its journal file).
- `fork`: a new snapshot from another with memory edited or journal entries dropped.
- `replay_runner`: a recorded entrypoint run again from a snapshot, in a child process.
- `replay_by_hand`: the Python script and the quoted shell line that replay a run by hand.

No web stack here (no Starlette, Jinja2 or requests): the layer sits between `store` and `web`.
"""
