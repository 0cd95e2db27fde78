"""The billing-ops incident: a cron-started reconcile raced by a `payment_failed` webhook.

The process journal of the published postmortem, made by a real `ProcessRecorder` whose
invocation is a real agent run: the cron tick wakes the process, the reconcile agent starts, and
while it fetches the invoice the dunning webhook fires and flips `account_status` to delinquent
under it. The agent then recommends a hold, and the process applies it: an irreversible action
taken on a state that a racing trigger had corrupted. Rewinding to the `apply_account_hold` tool
call shows the state just before it (3 entries affected: the call, its context update and the
process's stop, which ends the recording).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from devtool.core import JsonlSink, ScriptedModel, create_agent, create_tool, memory, prompt
from devtool.core.jsonvalue import JSON
from devtool.core.model import Message
from devtool.journal import FileJournal, ProcessRecorder

PROCESS_ID = "billing-ops"
ACCOUNT = "acme-42"

DECISION_SCHEMA: dict[str, JSON] = {
    "type": "object",
    "properties": {"action": {"type": "string", "enum": ["none", "hold"]}, "message": {"type": "string"}},
    "required": ["action", "message"],
}


def scripted_model() -> ScriptedModel:
    def answer(messages: list[Message]) -> Any:
        asked = [call["name"] for m in messages for call in m.get("tool_calls", [])]
        if "start_reconcile" not in asked:
            return {"tool_calls": [{"name": "start_reconcile", "arguments": {"account": ACCOUNT}}]}
        if "fetch_invoice" not in asked:
            return {"tool_calls": [{"name": "fetch_invoice", "arguments": {"account": ACCOUNT, "cycle": "2026-07"}}]}
        if "account_status" not in asked:
            return {"tool_calls": [{"name": "account_status", "arguments": {"account": ACCOUNT}}]}
        status = json.loads(str(messages[-1]["content"]))["status"]
        if status == "delinquent":
            return json.dumps({"action": "hold", "message": f"{ACCOUNT} is delinquent; applying an account hold."})
        return json.dumps({"action": "none", "message": f"{ACCOUNT} reconciled."})

    # A little latency, so the run has a visible width on the process timeline.
    return ScriptedModel(answer, id="demo-model", provider="scripted", delay=0.04)


def reconcile_agent(recorder: ProcessRecorder, model: ScriptedModel) -> Any:
    """The invocation's agent; its tools read and write the process's state through the recorder."""

    async def start_reconcile(account: str) -> dict[str, str]:
        await recorder.set_context("invoice_state", "reconciling")
        return {"account": account, "invoice_state": "reconciling"}

    async def fetch_invoice(account: str, cycle: str) -> dict[str, Any]:
        # The dunning webhook lands while the invoice is being fetched: the race of the incident.
        await recorder.trigger("webhook", {"event": "payment_failed", "account": account}, trigger_id="whk_7731")
        await recorder.set_context("account_status", "delinquent")
        return {"account": account, "cycle": cycle, "amount_due": 1200, "paid": 1200}

    async def account_status(account: str) -> dict[str, str]:
        return {"account": account, "status": str(recorder.context_state["account_status"])}

    account_only: dict[str, JSON] = {
        "type": "object",
        "properties": {"account": {"type": "string"}},
        "required": ["account"],
    }
    tools = [
        create_tool("start_reconcile", start_reconcile, parameters=account_only),
        create_tool(
            "fetch_invoice",
            fetch_invoice,
            parameters={
                "type": "object",
                "properties": {"account": {"type": "string"}, "cycle": {"type": "string"}},
                "required": ["account", "cycle"],
            },
        ),
        create_tool("account_status", account_status, parameters=account_only),
    ]

    async def reconcile(props: dict[str, Any]) -> Any:
        memory()["account"] = props["account"]
        decision = await prompt(
            [
                {"role": "system", "content": "You reconcile invoices. Decide whether the account needs a hold."},
                {"role": "user", "content": props["request"]},
            ],
            schema=DECISION_SCHEMA,
            tools=tools,
        )
        memory()["decision"] = decision["action"]
        return decision

    return create_agent("reconciler", reconcile, model=model)


async def run_incident(folder: Path) -> tuple[Path, list[Path]]:
    """Write the process journal and the invocation's trace into `folder`; return their paths."""
    journal = FileJournal(folder)
    recorder = ProcessRecorder(journal, PROCESS_ID)
    trace_path = folder / f"{PROCESS_ID}.invocation-1.trace.jsonl"
    request = f"Reconcile account {ACCOUNT} for the July cycle."

    await recorder.transition("running")
    await recorder.trigger("cron", {"schedule": "0 2 * * *", "at": "2026-07-16T02:00:00Z"}, trigger_id="cron_0200")
    await recorder.set_context("account_status", "active")
    await recorder.user_prompt(request)
    with JsonlSink(trace_path) as sink:
        invocation = await recorder.invoke(
            lambda: reconcile_agent(recorder, scripted_model())({"account": ACCOUNT, "request": request}),
            sinks=[sink],
        )
    decision = invocation.result
    await recorder.assistant_message(decision["message"])
    if decision["action"] == "hold":
        await recorder.tool_call("apply_account_hold", {"account": ACCOUNT})
        await recorder.set_context("action", "account_hold_applied")
    # The incident is handled and the recording ends here: the journal says the process stopped, so it
    # does not read as running forever (a rewind past this point takes the stop back with the rest).
    await recorder.transition("stopped", reason="the July reconcile is done")
    return journal.path_for(PROCESS_ID), [trace_path]
