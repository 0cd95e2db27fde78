"""The README's promises: its Python example runs, and it opens with the two commands CI relies on."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

import orjson

from testkit.checkout import child_env
from testkit.fake_provider import FakeProvider
from tests.conftest import REPO

README = (REPO / "README.md").read_text()
CI_SECTION = "## Testing agents in CI"


def test_readme_opens_with_the_demo_and_test_commands() -> None:
    first_block = re.search(r"```sh\n(.*?)```", README, re.S)
    assert first_block is not None
    commands = [line.split("#")[0].strip() for line in first_block.group(1).splitlines()]
    assert commands == ["make demo", "make test"]
    assert README.index("```sh") < README.index("##")


def test_ci_runs_the_readme_test_command_and_nothing_else() -> None:
    script = [line for line in (REPO / ".ci" / "run").read_text().splitlines() if line and not line.startswith("#")]
    assert script[-1] == "exec make test"
    assert all(line.startswith(("set ", "cd ", "exec make test")) for line in script)


def test_python_examples_run(tmp_path: Path, fake_provider: FakeProvider) -> None:
    # The real-model example runs on the official SDK, pointed by its environment at the fake provider.
    fake_provider.reply(
        {"tool_calls": [{"name": "weather", "arguments": {"city": "Lisbon"}}]},
        {"text": "Light clothes and sunglasses."},
        contains="What should I wear in Lisbon today?",
    )
    fake_provider.reply(
        {"tool_calls": [{"name": "order_status", "arguments": {"order_id": "A17"}}]},
        {"text": "It shipped yesterday."},
        contains="Where is my order A17?",
    )
    env = child_env({**os.environ, **fake_provider.env(api_key="sk-readme-0000000000")})
    blocks = re.findall(r"```python\n(.*?)```", README[: README.index(CI_SECTION)], re.S)
    assert len(blocks) == 3 + len(FRAMEWORKS)
    outputs = []
    for index, code in enumerate(blocks[:3]):
        script = tmp_path / f"readme_{index}.py"
        script.write_text(code)
        result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env)
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    assert (tmp_path / "trace.jsonl").read_text().count("\n") > 10
    assert outputs[1:] == ["Light clothes and sunglasses.\n", "It shipped yesterday.\n"]
    assert fake_provider.count() == 4  # two turns recorded, the replay asked nothing; then the support bot's two
    support = [orjson.loads(line) for line in (tmp_path / "support.jsonl").read_bytes().splitlines()]
    assert support[0]["metadata"]["entrypoint"] == "readme_2:main"
    assert [e["type"] for e in support].count("turn:end") == 2
    (tool,) = [e for e in support if e["type"] == "tools:execute:end"]
    assert tool["toolResults"][0]["output"] == "order A17: shipped yesterday"
    events = [orjson.loads(line) for line in (tmp_path / "forecast.jsonl").read_bytes().splitlines()]
    (batch,) = [e for e in events if e["type"] == "tools:execute:end"]
    assert batch["toolResults"][0]["output"] == "Lisbon: 21°C and sunny"


# The frameworks' examples: the last message each tool call answers, the call, the tool's output that the
# answer follows, the answer, the trace file and its agents.
FRAMEWORKS = [
    ("time is it in Lisbon", "local_time", {"city": "Lisbon"}, "09:30", "It is 09:30.", "clock", ["clock"]),
    ("billing", "refund", {"order_id": "A17"}, "refunded", "A17 is refunded.", "refunds", ["triage", "billing"]),
    (
        "rain in Porto",
        "rain",
        {"city": "Porto"},
        "mm of rain",
        "Yes, 4 mm.",
        "rain",
        ["forecaster", "model", "tools", "model"],
    ),
]


def test_the_framework_examples_record_their_agents_and_tools(tmp_path: Path, fake_provider: FakeProvider) -> None:
    fake_provider.reply({"tool_calls": [{"name": "transfer_to_billing", "arguments": {}}]}, last="Refund my order")
    for asked, tool, arguments, output, answer, _, _ in FRAMEWORKS:
        fake_provider.reply({"tool_calls": [{"name": tool, "arguments": arguments}]}, last=asked)
        fake_provider.reply({"text": answer}, last=output)
    # The Agents SDK would also send its own traces to OpenAI: not from a test.
    env = {**os.environ, **fake_provider.env(api_key="sk-readme-0000000000"), "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    blocks = re.findall(r"```python\n(.*?)```", README[: README.index(CI_SECTION)], re.S)[3:]
    for index, (code, (_, tool, arguments, _, answer, trace, agents)) in enumerate(
        zip(blocks, FRAMEWORKS, strict=True)
    ):
        script = tmp_path / f"readme_framework_{index}.py"
        script.write_text(code)
        result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, env=env)
        assert result.returncode == 0, result.stderr
        assert result.stdout == answer + "\n"
        events = [orjson.loads(line) for line in (tmp_path / f"{trace}.jsonl").read_bytes().splitlines()]
        assert [e["agentId"] for e in events if e["type"] == "agent:start"] == agents
        (call,) = [r for e in events if e["type"] == "tools:execute:end" for r in e["toolResults"]]
        assert (call["toolName"], call["input"]) == (tool, arguments)


def test_the_ci_example_records_then_replays_without_the_model(tmp_path: Path, fake_provider: FakeProvider) -> None:
    section = README[README.index(CI_SECTION) :]
    section = section[: section.index("\n## ")]
    (code,) = re.findall(r"```python\n(.*?)```", section, re.S)
    commands = re.findall(r"```sh\n(.*?)```", section, re.S)[0]
    name = code.splitlines()[0].removeprefix("# ")
    (tmp_path / name).write_text(code)
    fake_provider.reply({"text": "It shipped yesterday."}, contains="Where is my order A17?")
    fake_provider.reply({"text": "Yes: your refund for A17 is on its way."}, contains="refund")
    # The key is needed only to record: the replay in CI runs without one.
    env = child_env({**os.environ, **fake_provider.env(api_key="sk-readme-0000000000")})
    for line in commands.splitlines():
        argv = line.split("#")[0].split()
        if argv[0] != "pytest":
            continue
        if "--devtool-record=none" in argv:
            env = {k: v for k, v in env.items() if k not in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY")}
        # pytest-playwright's plugin is not needed by the example (and not what a user of it would have).
        argv = [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "-p", "no:playwright", *argv[1:]]
        result = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, env=env)
        assert result.returncode == 0, result.stdout + result.stderr
        assert "2 passed" in result.stdout
        assert fake_provider.count() == 2  # the first run asked twice; CI's replay asked nothing
    folder = tmp_path / "__snapshots__" / "test_support_bot"
    assert sorted(path.name for path in folder.iterdir()) == ["test_a_refund.json", "test_where_is_my_order.json"]
    assert "sk-readme" not in (folder / "test_a_refund.json").read_text()
