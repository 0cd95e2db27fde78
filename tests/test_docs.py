"""The docs site's promises: every Python example in docs/ runs, its shell lines parse, its CLI page is whole.

The recording and CI examples talk to a model: they run on the official SDKs and frameworks, pointed by
their environment at the fake provider, which each test scripts. Every other example runs standalone,
in a fresh process and an empty folder. `make docs` (in `make test`) builds the site with
`mkdocs build --strict`, its CLI page generated from the parsers at that moment.
"""

from __future__ import annotations

import argparse
import os
import shlex
import subprocess
import sys
from pathlib import Path

import orjson
import pytest

from devtool.store.lake import HEAD
from scripts.docs_figures import with_figures
from scripts.gen_cli_docs import cli_reference
from testkit import served
from testkit.checkout import child_env
from testkit.fake_provider import FakeProvider
from tests.docs_examples import DOCS, blocks, page, run_example

# The pages whose examples need a scripted model, and how many each test below runs.
SCRIPTED = {"recording.md": 6, "testing.md": 1, "http-api.md": 1}
STANDALONE = [
    (path.name, index)
    for path in sorted(DOCS.glob("*.md"))
    if path.name not in SCRIPTED
    for index in range(len(blocks(path.read_text(), "python")))
]
KEY = "sk-docs-000000000000"


def test_every_python_example_is_run_by_a_test() -> None:
    for name, count in SCRIPTED.items():
        assert len(blocks(page(name), "python")) == count, name
    assert len(STANDALONE) >= 3  # time travel, a trace read back, a process journal


@pytest.mark.parametrize(("name", "index"), STANDALONE)
def test_standalone_example_runs(name: str, index: int, tmp_path: Path, fake_provider: FakeProvider) -> None:
    code = blocks(page(name), "python")[index]
    env = child_env({**os.environ, **fake_provider.env(api_key=KEY)})
    result = run_example(code, tmp_path, f"example_{index}.py", env)
    assert result.returncode == 0, result.stderr
    assert fake_provider.count() == 0  # these run on a ScriptedModel: nothing may reach a provider


def test_the_recording_examples_run(tmp_path: Path, fake_provider: FakeProvider) -> None:
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
    env = child_env({**os.environ, **fake_provider.env(api_key=KEY)})
    outputs = []
    for index, code in enumerate(blocks(page("recording.md"), "python")[:3]):
        result = run_example(code, tmp_path, f"recording_{index}.py", env)
        assert result.returncode == 0, result.stderr
        outputs.append(result.stdout)
    assert (tmp_path / "trace.jsonl").read_text().count("\n") > 10
    assert outputs[1:] == ["Light clothes and sunglasses.\n", "It shipped yesterday.\n"]
    assert fake_provider.count() == 4  # two turns recorded, the replay asked nothing; then the support bot's two
    support = [orjson.loads(line) for line in (tmp_path / "support.jsonl").read_bytes().splitlines()]
    assert support[0]["metadata"]["entrypoint"] == "recording_2:main"
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
    env = {**os.environ, **fake_provider.env(api_key=KEY), "OPENAI_AGENTS_DISABLE_TRACING": "1"}
    examples = blocks(page("recording.md"), "python")[3:]
    for index, (code, (_, tool, arguments, _, answer, trace, agents)) in enumerate(
        zip(examples, FRAMEWORKS, strict=True)
    ):
        result = run_example(code, tmp_path, f"framework_{index}.py", env)
        assert result.returncode == 0, result.stderr
        assert result.stdout == answer + "\n"
        events = [orjson.loads(line) for line in (tmp_path / f"{trace}.jsonl").read_bytes().splitlines()]
        assert [e["agentId"] for e in events if e["type"] == "agent:start"] == agents
        (call,) = [r for e in events if e["type"] == "tools:execute:end" for r in e["toolResults"]]
        assert (call["toolName"], call["input"]) == (tool, arguments)


def test_the_ci_example_records_then_replays_without_the_model(tmp_path: Path, fake_provider: FakeProvider) -> None:
    text = page("testing.md")
    (code,) = blocks(text, "python")
    commands = blocks(text, "sh")[0]
    name = code.splitlines()[0].removeprefix("# ")
    (tmp_path / name).write_text(code)
    fake_provider.reply({"text": "It shipped yesterday."}, contains="Where is my order A17?")
    fake_provider.reply({"text": "Yes: your refund for A17 is on its way."}, contains="refund")
    # The key is needed only to record: the replay in CI runs without one.
    env = child_env({**os.environ, **fake_provider.env(api_key=KEY)})
    ran = 0
    for line in commands.splitlines():
        argv = shlex.split(line, comments=True)
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
        ran += 1
    assert ran == 2
    folder = tmp_path / "__snapshots__" / "test_support_bot"
    assert sorted(path.name for path in folder.iterdir()) == ["test_a_refund.json", "test_where_is_my_order.json"]
    assert KEY not in (folder / "test_a_refund.json").read_text()


def test_shell_examples_are_quoted_so_a_shell_reads_what_they_say() -> None:
    for path in sorted(DOCS.glob("*.md")):
        for block in blocks(path.read_text(), "sh"):
            for line in block.replace("\\\n", " ").splitlines():
                words = shlex.split(line, comments=True)  # raises on an unclosed quote
                assert not words or "<" not in words[0], (path.name, line)


def test_the_cli_reference_names_every_command_and_option() -> None:
    from devtool.cli import build_parser

    reference = cli_reference()
    (commands,) = [a for a in build_parser()._actions if isinstance(a, argparse._SubParsersAction)]
    for name, parser in commands.choices.items():
        assert f"## devtool {name}\n" in reference
        for action in parser._actions:
            for option in action.option_strings:
                assert option in reference, (name, option)
    assert not (DOCS / "cli.md").exists()  # written at build time only, so it cannot go stale


def test_the_http_api_example_finds_its_run_on_a_running_devtool(tmp_path: Path) -> None:
    (code,) = blocks(page("http-api.md"), "python")
    server = served.start(tmp_path / "api.duckdb", log=tmp_path / "serve.log")
    try:
        result = run_example(code, tmp_path, "api_example.py", child_env({**os.environ, "DEVTOOL_URL": server.url}))
    finally:
        server.stop()
    assert result.returncode == 0, result.stderr
    first, *hits = result.stdout.splitlines()
    assert "'name': 'support'" in first
    assert "toolResults[0].output · order A17: lost in transit" in hits


def test_the_figures_a_page_quotes_are_the_codes() -> None:
    deploying = with_figures(page("deploying.md"))
    assert f"as soon as its first {HEAD:,} events are here" in deploying
    assert "{{" not in deploying
