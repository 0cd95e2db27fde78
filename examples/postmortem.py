import asyncio

from devtool.journal import (
    InMemoryJournal,
    JournalEntry,
    ReplayEngine,
    RewindEngine,
    RewindMode,
)


async def main() -> None:
    journal = InMemoryJournal()
    pid = "billing-ops"

    # A live process writes these entries as it runs. We append them by
    # hand so the whole decision history is visible in one place.
    events = [
        ("e01", "state_transition", {"from_state": "created", "to_state": "running"}),
        ("e02", "trigger_event", {"trigger_type": "cron", "at": "2026-07-16T02:00:00"}),
        ("e03", "context_update", {"key": "account_status", "value": "active"}),
        ("e04", "user_prompt", {"prompt": "Reconcile account acme-42 for the July cycle."}),
        ("e05", "context_update", {"key": "invoice_state", "value": "reconciling"}),
        # A dunning webhook fires MID-reconciliation and flips the flag.
        ("e06", "trigger_event", {"trigger_type": "webhook", "event": "payment_failed"}),
        ("e07", "context_update", {"key": "account_status", "value": "delinquent"}),
        ("e08", "assistant_message", {"content": "acme-42 is delinquent; applying an account hold."}),
        # The baffling action — an irreversible hold on a live customer.
        ("e09", "tool_call", {"tool": "apply_account_hold", "args": {"account": "acme-42"}}),
        ("e10", "context_update", {"key": "action", "value": "account_hold_applied"}),
    ]
    for entry_id, entry_type, data in events:
        await journal.append(JournalEntry(
            entry_id=entry_id, process_id=pid, entry_type=entry_type, data=data,
        ))

    # 1. What state did the process end up in? Replay the journal forward.
    recovered = await ReplayEngine(journal).recover(pid)
    print("current (broken) state:", recovered["context_state"])

    # 2. Find the baffling action in the decision history.
    history = await journal.read(pid)
    bad = next(e for e in history if e.entry_type == "tool_call")
    print("baffling action:", bad.data["tool"], "->", bad.entry_id)

    # 3. Preview a rewind to the moment *just before* that action (dry-run).
    rewind = RewindEngine(journal)
    plan = await rewind.plan(process_id=pid, target_entry_id=bad.entry_id)
    print("plan:", plan.summary)

    # 4. Reconstruct the exact state the agent saw before it acted.
    #    record=False keeps the postmortem read-only — nothing is written.
    before = await rewind.apply(
        process_id=pid,
        target_entry_id=bad.entry_id,
        mode=RewindMode.BOTH,
        record=False,
    )
    print("state before the decision:", before.context_state)
    print("what the agent had said:", [m["content"] for m in before.conversation])


asyncio.run(main())
