"""The peers bench's table: each figure's median over the rounds for every system, and ours ÷ each
peer (below 1 is ours ahead on a time, a size or a memory; on spans a second, above 1 is). A peer's
figure over the round's budget shows as "> budget", and the ratio to it as "< r"."""

from __future__ import annotations

from bench.peers.measure import OVER

ROWS = [  # key, label, format
    ("ingest_s", "ingest of the workload over 2 connections, to visible (s)", "{:,.1f}"),
    ("ingest_spans_per_s", "  = spans a second", "{:,.0f}"),
    ("ingest_cpu_s", "  server CPU for it (s)", "{:,.1f}"),
    ("check_cpu_s", "  server CPU of the bench's check of every trace after it, not counted above (s)", "{:,.1f}"),
    ("ingest_retries", "  retries the exporters made (429/503)", "{:,.0f}"),
    ("busy_p50_ms", "  one small trace during it, export to visible, p50 (ms)", "{:,.0f}"),
    ("busy_p95_ms", "  one small trace during it, export to visible, p95 (ms)", "{:,.0f}"),
    ("busy_post_p50_ms", "    of which the export's answer, p50 (ms)", "{:,.0f}"),
    ("busy_post_p95_ms", "    of which the export's answer, p95 (ms)", "{:,.0f}"),
    ("busy_probes", "    small traces posted during it", "{:,.0f}"),
    ("visible_p50_ms", "one small trace, export to visible, p50 (ms)", "{:,.0f}"),
    ("visible_p95_ms", "one small trace, export to visible, p95 (ms)", "{:,.0f}"),
    ("open_first_s", "a 10,000-span trace: opened first (s)", "{:,.2f}"),
    ("open_warm_s", "a 10,000-span trace: opened again, warm (s)", "{:,.2f}"),
    ("search_ms", "a word in 1% of answers: search (ms)", "{:,.0f}"),
    ("search_found", "  traces found (of the expected)", "{:,.0f}"),
    ("cold_start_s", "cold start to first page (s)", "{:,.1f}"),
    ("storage_mb", "storage on disk (MB)", "{:,.0f}"),
    ("peak_rss_mb", "peak memory, RSS of the process tree (MB)", "{:,.0f}"),
]


def _cell(figures: dict[str, float], key: str, form: str) -> str:
    """The median, "> " before it when it is the budget that ran out; "—" when not taken."""
    if key not in figures:
        return "—"
    return ("> " if OVER + key in figures else "") + form.format(figures[key])


def render(medians: dict[str, dict[str, float]], titles: dict[str, str]) -> str:
    """A Markdown table: a column per system (ours first), then ours ÷ each peer."""
    systems = list(medians)
    peers = [name for name in systems if name != "ours"]
    head = ["figure (medians)", *(titles[name] for name in systems), *(f"ours ÷ {titles[p]}" for p in peers)]
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for key, label, form in ROWS:
        if not any(key in medians[name] for name in systems):  # a figure not taken (`--figures`)
            continue
        cells = [_cell(medians[name], key, form) for name in systems]
        if key == "search_found":
            cells = [
                f"{c} of {medians[n]['search_expected']:,.0f}" if key in medians[n] else c
                for c, n in zip(cells, systems, strict=True)
            ]
        ratios = []
        for peer in peers:
            ours, theirs = medians.get("ours", {}).get(key), medians[peer].get(key)
            if key in ("search_found", "ingest_retries", "busy_probes") or ours is None or not theirs:
                ratios.append("")
            elif OVER + key in medians["ours"]:
                ratios.append("")  # ours a lower bound: no ratio says anything
            else:  # theirs a lower bound: ours ÷ theirs is at most this
                ratios.append(("< " if OVER + key in medians[peer] else "") + f"{ours / theirs:.2g}")
        lines.append("| " + " | ".join([label, *cells, *ratios]) + " |")
    return "\n".join(lines)
