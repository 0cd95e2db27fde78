"""A keyed run's failed spans, in a table of their own (`span_failures`): what its cause and its
failure marks read (`queries/cause.py`).

A run's failed spans are few (4,598 of 279,023 at a million events) but scattered over every row
group of `spans`, so reading them there is a read of most of the run's spans' columns: 0.15 s a
million events warm, 1.3 s for the first ask of a ten-million-event run on a fresh server. Kept
beside the run's other span keys (`span_keys.py`, made with them by a load or the server's indexer,
in time order), they are one range of a narrow table, with their names and callIds (a cause's chain is
of failed spans: its names are read there).
"""

from __future__ import annotations

from devtool.store import list_param

# Statements of a run's span keys' build (`span_keys_build`), in its transaction: `{traces}` is a
# table of the runs keyed now, already in `keyed_runs`.
BUILD = """
    INSERT INTO span_failures
    SELECT k.run, s.span_id, s.parent_span_id, s.kind, s.instant, s.start_ts, s.end_ts, s.error, s.end_event_id,
           s.depth, s.start_event_id, s.name, s.call_id
    FROM spans s JOIN keyed_runs k USING (trace_id)
    WHERE s.trace_id IN (SELECT trace_id FROM {traces}) AND s.status = 'failed'
    ORDER BY k.run, s.start_ts, s.start_event_id;
"""

FORGET = """
    DELETE FROM span_failures
    WHERE run IN (SELECT run FROM keyed_runs WHERE trace_id IN (SELECT trace_id FROM {traces}));
"""

# The failed spans of keyed run `{run}`, as a relation (`cause.py` reads it as it reads `spans`).
OF_RUN = "(SELECT * FROM span_failures WHERE run = {run})"

# The names and callIds of failed spans `$ids` of keyed run `$run` (a cause's chain: a few of them, read
# apart, as making strings of every failed span's name was a fifth of a first ask at 10M events).
NAMES = (
    "SELECT span_id, name, call_id FROM span_failures "
    f"WHERE run = $run AND span_id IN (SELECT unnest({list_param.of('ids')}))"
)
