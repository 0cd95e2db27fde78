"""The documentation's time-travel example runs as a script and behaves as documented."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from testkit.checkout import child_env
from tests.conftest import REPO


def test_record_dump_then_replay_with_no_model_or_tool_call(tmp_path: Path) -> None:
    snapshot = tmp_path / "snapshot.json"
    result = subprocess.run(
        [sys.executable, str(REPO / "examples" / "time_travel.py"), str(snapshot)],
        capture_output=True,
        text=True,
        check=True,
        env=child_env(),
    )
    assert result.stdout.splitlines() == [
        "recorded: It is sunny in Paris, 21°C. (model calls: 2, tool calls: 1)",
        "replayed: It is sunny in Paris, 21°C. (model calls: 0, tool calls: 0)",
    ]
    saved = json.loads(snapshot.read_text())
    assert saved["metadata"] == {"reason": "before migration"}
    assert saved["root"]["children"]["root/agent:assistant:0"]["memory"] == {"visits": 1}
