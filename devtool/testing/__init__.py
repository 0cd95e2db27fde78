"""Agent regression tests: a pytest plugin that records a test's agent runs as cassettes and replays them.

    @pytest.mark.agent_cassette                 # or: def test_x(agent_cassette): with agent_cassette: ...
    def test_order():
        assert "shipped" in support_bot("Where is my order A17?")

`pytest` records `__snapshots__/<module>/<test>.json` beside the test the first time (the model and
tool calls: callId, agent, request, answer); from then on it replays them, calling no model, and a
request the cassette does not hold fails the test with the agent, the callId, a diff against the
request recorded there and the command that re-records it. `--devtool-record=once|none|new_episodes|all`
as VCR's, `--devtool-url URL` to look at a test's run in a DevTool.

- `plugin.py`: the pytest side (options, marker, fixture, failure); registered by the `pytest11` entry point.
- `session.py`: `AgentCassette`, the run around the test's code in a record mode.
- `cassette.py`: the file (its layout for review, the snapshot a replay takes, no credentials).
- `report.py`: the failure a person reads.
"""

from __future__ import annotations

from devtool.testing.errors import CassetteError, CassetteMiss, TestingError
from devtool.testing.session import AgentCassette, Mode

__all__ = ["AgentCassette", "CassetteError", "CassetteMiss", "Mode", "TestingError"]
