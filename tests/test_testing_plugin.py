"""The agent-cassette pytest plugin, as a user meets it: test files run by a real `pytest` (pytester, in a
child process that loads the plugin through its `pytest11` entry point), their agents on the official
SDKs and on `devtool.core`, pointed at the fake provider, which counts the requests that reach it."""

from __future__ import annotations

import json
import re
import shlex
import sys
import time
import urllib.request

import pytest

import devtool.instrument
from testkit.checkout import child_env
from testkit.fake_provider import DEFAULT_KEY, FakeProvider
from tests.plugin_projects import (
    CORE_AGENT,
    FRAMEWORK_AGENT,
    SUPPORT_BOT,
    assert_refused,
    cassette,
    diff_lines,
    git,
    pytest_run,
    rerecord_command,
    script_support,
)
from tests.test_instrument_programs import page_names, served  # noqa: F401 (a real devtool serve, a fixture)

pytestmark = pytest.mark.timeout(240)
# The SDKs (and their instrumentation) imported once, here: a pytest run inside this one keeps what was
# imported before it, and would otherwise import them again each time, seconds on a loaded machine.
devtool.instrument.installed_sdks()


@pytest.fixture
def project(pytester: pytest.Pytester, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch) -> pytest.Pytester:
    """A project folder whose pytest runs talk to this test's namespace of the fake provider."""
    for name, value in fake_provider.env().items():
        monkeypatch.setenv(name, value)
    monkeypatch.delenv("CHANGE", raising=False)
    monkeypatch.delenv("DEVTOOL_URL", raising=False)
    monkeypatch.delenv("DEVTOOL_TRACE", raising=False)
    # pytest in a child process loads the plugin of this checkout, whatever the venv's install points at.
    monkeypatch.setenv("PYTHONPATH", child_env()["PYTHONPATH"])
    # Test files are edited in place within a second, some to the same size: never run a stale .pyc of one.
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    monkeypatch.setattr(sys, "dont_write_bytecode", True)
    return pytester


def test_record_then_replay_calls_no_model(project: pytest.Pytester, fake_provider: FakeProvider) -> None:
    script_support(fake_provider)
    project.makepyfile(test_bot=SUPPORT_BOT)
    # A child process, as a user runs pytest: the plugin comes from devtool's `pytest11` entry point.
    project.runpytest_subprocess("-p", "no:cacheprovider").assert_outcomes(passed=1)
    assert fake_provider.count() == 2
    recorded = json.loads(cassette(project, "test_bot", "test_support").read_text())
    assert recorded["test"] == "test_bot.py::test_support"
    assert [(call["kind"], call["callId"]) for call in recorded["calls"]] == [
        ("prompt", "root/turn:gpt-4.1-mini:0"),
        ("prompt", "root/turn:gpt-4.1-mini:1"),
    ]
    assert recorded["calls"][0]["request"]["request"]["temperature"] == 0
    for mode in ("once", "none"):
        project.runpytest_subprocess("-p", "no:cacheprovider", f"--devtool-record={mode}").assert_outcomes(passed=1)
    assert fake_provider.count() == 2  # both replays answered from the cassette


def test_core_agents_and_devtool_tools_replay_without_calling_anything(
    project: pytest.Pytester, fake_provider: FakeProvider
) -> None:
    fake_provider.reply(
        {"tool_calls": [{"name": "weather", "arguments": {"city": "Lisbon"}}]}, {"text": "Light clothes."}
    )
    project.makepyfile(test_core=CORE_AGENT)
    pytest_run(project).assert_outcomes(passed=2)
    log = project.path / "side-effects.log"
    assert log.read_text() == "weather Lisbon\norder A17\n"
    assert fake_provider.count() == 2
    calls = json.loads(cassette(project, "test_core", "test_forecast").read_text())["calls"]
    assert [(c["agent"], c["kind"], c["callId"]) for c in calls] == [
        ("forecaster", "tool", "root/agent:forecaster:0/tool:weather:0"),
        ("forecaster", "prompt", "root/agent:forecaster:0/turn:gpt-4.1-mini:0"),
        ("forecaster", "prompt", "root/agent:forecaster:0/turn:gpt-4.1-mini:1"),
    ]
    (order,) = json.loads(cassette(project, "test_core", "test_order").read_text())["calls"]
    assert order["request"] == {"name": "order_status", "input": {"order_id": "A17"}}
    assert order["output"] == "order A17: shipped"

    pytest_run(project, "--devtool-record=none").assert_outcomes(passed=2)
    assert fake_provider.count() == 2
    assert log.read_text() == "weather Lisbon\norder A17\n"  # no tool ran again

    # An agent's changed prompt is refused in its name, at its callId; nothing is asked, no tool runs.
    project.makepyfile(test_core=CORE_AGENT.replace('{"city": "Lisbon"}', '{"city": "Porto"}'))
    failed = pytest_run(project, "--devtool-record=none", "-k", "test_forecast")
    failed.assert_outcomes(failed=1, deselected=1)
    assert_refused(
        failed,
        "agent 'forecaster' made a model request its cassette does not hold",
        "root/agent:forecaster:0/turn:gpt-4.1-mini:0",
        '"content": "What should I wear in Lisbon?",',
        '"content": "What should I wear in Porto?",',
    )
    assert fake_provider.count() == 2
    assert log.read_text() == "weather Lisbon\norder A17\n"


def test_a_framework_agents_tool_is_a_cassette_call_and_does_not_run_on_replay(
    project: pytest.Pytester, fake_provider: FakeProvider
) -> None:
    fake_provider.reply({"tool_calls": [{"name": "weather", "arguments": {"city": "Lisbon"}}]}, last="Plan a day")
    fake_provider.reply({"text": "Lisbon is sunny."}, last="sunny")
    project.makepyfile(test_trip=FRAMEWORK_AGENT)
    pytest_run(project).assert_outcomes(passed=1)
    log = project.path / "side-effects.log"
    assert log.read_text() == "weather Lisbon\n"
    assert fake_provider.count() == 2
    calls = json.loads(cassette(project, "test_trip", "test_trip").read_text())["calls"]
    assert [(c["agent"], c["kind"], c["callId"]) for c in calls] == [
        ("travel", "tool", "root/agent:travel:0/tool:weather:0"),
        ("travel", "prompt", "root/agent:travel:0/turn:gpt-4.1-mini:0"),
        ("travel", "prompt", "root/agent:travel:0/turn:gpt-4.1-mini:1"),
    ]
    pytest_run(project, "--devtool-record=none").assert_outcomes(passed=1)
    assert fake_provider.count() == 2
    assert log.read_text() == "weather Lisbon\n"  # the replay served the tool: it did not run again


def test_a_changed_prompt_fails_with_its_diff_and_the_command_that_records_just_it(
    project: pytest.Pytester, fake_provider: FakeProvider
) -> None:
    script_support(fake_provider)
    project.makepyfile(test_bot=SUPPORT_BOT)
    pytest_run(project).assert_outcomes(passed=1)
    path = cassette(project, "test_bot", "test_support")
    git(project.path, "init", "-q")
    git(project.path, "add", "-A")
    git(project.path, "commit", "-qm", "recorded")
    before = json.loads(path.read_text())

    project.makepyfile(test_bot=SUPPORT_BOT.replace('"Say thanks in French."', '"Say thank you in French."'))
    failed = pytest_run(project)
    failed.assert_outcomes(failed=1)
    assert fake_provider.count() == 2  # the changed request never reached the model
    out = failed.stdout.str()
    assert "the run (outside any agent) made a model request its cassette does not hold" in out
    assert "callId    root/turn:gpt-4.1-mini:1" in out
    assert "cassette  __snapshots__/test_bot/test_support.json" in out
    diff = diff_lines(out.splitlines())
    assert '-"content": "Say thanks in French.",' in diff
    assert '+"content": "Say thank you in French.",' in diff
    assert not any(line.startswith(("-", "+")) and "Where is my order" in line for line in diff)
    assert "Traceback" not in out
    command = rerecord_command(out)
    assert command == "python -m pytest test_bot.py::test_support --devtool-record=new_episodes"

    # The command, as printed: only the changed request is asked for and recorded.
    argv = shlex.split(command)
    rerecorded = pytest_run(project, *argv[3:])
    rerecorded.assert_outcomes(passed=1)
    assert fake_provider.count() == 3
    after = json.loads(path.read_text())
    assert after["calls"][0] == before["calls"][0]
    assert after["calls"][1]["contentHash"] != before["calls"][1]["contentHash"]

    # The cassette's git diff is that entry: every changed line lies inside it.
    changed = git(project.path, "diff", "-U0", "--", str(path.relative_to(project.path)))
    text = path.read_text().splitlines()
    entry_start = text.index('      "callId": "root/turn:gpt-4.1-mini:1",') - 1
    entry_end = next(i for i in range(entry_start + 1, len(text)) if text[i] in ("    }", "    },"))
    hunks = re.findall(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", changed, re.M)
    assert hunks
    for first, count in hunks:
        lines = range(int(first) - 1, int(first) - 1 + int(count or 1))
        assert all(entry_start <= line <= entry_end for line in lines), changed
    assert re.search(r'^\+\s+"content": "Say thank you in French\.",$', changed, re.M), changed
    assert "Where is my order" not in changed

    pytest_run(project, "--devtool-record=none").assert_outcomes(passed=1)
    assert fake_provider.count() == 3


def test_a_changed_tool_input_fails_the_same_way_and_the_tool_does_not_run(
    project: pytest.Pytester, fake_provider: FakeProvider
) -> None:
    fake_provider.reply({"text": "unused"})
    project.makepyfile(test_core=CORE_AGENT)
    pytest_run(project, "-k", "test_order").assert_outcomes(passed=1, deselected=1)
    project.makepyfile(test_core=CORE_AGENT.replace('ORDER = "A17"', 'ORDER = "B22"'))
    failed = pytest_run(project, "-k", "test_order", "--devtool-record=none")
    failed.assert_outcomes(failed=1, deselected=1)
    assert_refused(
        failed,
        "the run (outside any agent) made a tool call its cassette does not hold",
        "root/tool:order_status:0",
        '"order_id": "A17"',
        '"order_id": "B22"',
    )
    assert (project.path / "side-effects.log").read_text() == "order A17\n"


def test_a_refusal_the_code_catches_still_fails_the_test(project: pytest.Pytester, fake_provider: FakeProvider) -> None:
    script_support(fake_provider)
    project.makepyfile(test_bot=SUPPORT_BOT)
    pytest_run(project).assert_outcomes(passed=1)
    swallowing = SUPPORT_BOT.replace(
        '    assert ask("Say thanks in French.") == "Merci."',
        '    try:\n        ask("Say hello in French.")\n    except Exception:\n        pass',
    )
    project.makepyfile(test_bot=swallowing)
    failed = pytest_run(project)
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(['*+*"content": "Say hello in French.",*'])
    assert fake_provider.count() == 2
    # Each refused call is counted (here the code went on after the first, caught, refusal).
    project.makepyfile(test_bot=swallowing.replace("pass", 'ask("Say goodbye in French.")'))
    failed = pytest_run(project)
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(['*+*"content": "Say hello in French.",*', "*(1 more call refused after it)"])
    assert fake_provider.count() == 2


def test_the_rerecord_command_works_from_where_pytest_was_started(
    project: pytest.Pytester, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    script_support(fake_provider)
    project.makeini("[pytest]\n")
    (project.path / "tests").mkdir()
    (project.path / "tests" / "test_bot.py").write_text(SUPPORT_BOT)
    monkeypatch.chdir(project.path / "tests")
    pytest_run(project).assert_outcomes(passed=1)
    assert (project.path / "tests" / "__snapshots__" / "test_bot" / "test_support.json").exists()
    (project.path / "tests" / "test_bot.py").write_text(SUPPORT_BOT.replace("A17", "B22"))
    failed = pytest_run(project)
    failed.assert_outcomes(failed=1)
    command = rerecord_command(failed.stdout.str())
    assert command == (
        f"cd {shlex.quote(str(project.path))} && "
        "python -m pytest tests/test_bot.py::test_support --devtool-record=new_episodes"
    )
    failed.stdout.fnmatch_lines(["*cassette  tests/__snapshots__/test_bot/test_support.json"])


@pytest.mark.parametrize("change", ["headers", "request_id", "timeout", "user_agent"])
def test_http_details_are_not_in_the_cassette(
    project: pytest.Pytester, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch, change: str
) -> None:
    script_support(fake_provider)
    project.makepyfile(test_bot=SUPPORT_BOT)
    pytest_run(project).assert_outcomes(passed=1)
    text = cassette(project, "test_bot", "test_support").read_text()
    for secret in (DEFAULT_KEY, "authorization", "Bearer", "cookie", "user-agent", "x-stainless", "127.0.0.1"):
        assert secret.lower() not in text.lower()
    monkeypatch.setenv("CHANGE", change)
    pytest_run(project, "--devtool-record=none").assert_outcomes(passed=1)
    assert fake_provider.count() == 2
    # The change is real: made live, the provider sees it (and did not see it when the cassette was recorded).
    pytest_run(project, "--devtool-record=all").assert_outcomes(passed=1)
    header, value = CHANGED_HEADER[change]
    first, last = fake_provider.requests()[0]["headers"], fake_provider.requests()[-1]["headers"]
    assert last[header] == value if value else len(last[header]) == 16
    assert first.get(header) != last[header]
    assert fake_provider.count() == 4


CHANGED_HEADER = {
    "headers": ("x-team", "payments"),
    "request_id": ("x-request-id", None),
    "timeout": ("x-stainless-read-timeout", "3.5"),
    "user_agent": ("user-agent", "support-bot/2.0 (other SDK)"),
}


def test_no_key_or_credential_is_written(
    project: pytest.Pytester, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("PAYMENTS_API_KEY", "pk-live-7f3a9c2e")
    fake_provider.reply({"text": "done"})
    project.makepyfile(
        test_keys="""
import os
import openai
import pytest

@pytest.mark.agent_cassette
def test_keys():
    key = os.environ["PAYMENTS_API_KEY"]
    reply = openai.OpenAI().chat.completions.create(
        model="gpt-4.1-mini", messages=[{"role": "user", "content": f"charge with {key}"}],
        extra_body={"metadata_headers": {"Authorization": "Bearer " + key, "cookie": "sid=1"}},
    )
    assert reply.choices[0].message.content == "done"
"""
    )
    pytest_run(project).assert_outcomes(passed=1)
    text = cassette(project, "test_keys", "test_keys").read_text()
    assert "pk-live-7f3a9c2e" not in text
    assert "sid=1" not in text
    assert DEFAULT_KEY not in text
    assert '"content": "charge with [redacted]"' in text
    assert '"Authorization": "[redacted]"' in text
    # Redacted text is for the eyes: the request still replays, by the hash of what was sent.
    pytest_run(project, "--devtool-record=none").assert_outcomes(passed=1)
    assert fake_provider.count() == 1


def test_record_modes(project: pytest.Pytester, fake_provider: FakeProvider) -> None:
    script_support(fake_provider)
    project.makepyfile(test_bot=SUPPORT_BOT)
    path = cassette(project, "test_bot", "test_support")

    refused = pytest_run(project, "--devtool-record=none")  # CI with no cassette: nothing is called or written
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines(["*cassette  __snapshots__/test_bot/test_support.json (not recorded yet)*"])
    assert fake_provider.count() == 0
    assert not path.exists()

    pytest_run(project).assert_outcomes(passed=1)
    assert fake_provider.count() == 2
    first = path.read_bytes()
    recorded_at = path.stat().st_mtime_ns

    time.sleep(0.01)
    pytest_run(project, "--devtool-record=new_episodes").assert_outcomes(passed=1)  # nothing new
    assert fake_provider.count() == 2
    assert path.stat().st_mtime_ns == recorded_at  # an unchanged cassette is not rewritten

    pytest_run(project, "--devtool-record=all").assert_outcomes(passed=1)
    assert fake_provider.count() == 4
    again = json.loads(path.read_bytes())
    assert [c["contentHash"] for c in again["calls"]] == [c["contentHash"] for c in json.loads(first)["calls"]]

    # A call the code no longer makes leaves the cassette when it is recorded again.
    project.makepyfile(test_bot=SUPPORT_BOT.replace('    assert ask("Say thanks in French.") == "Merci."\n', ""))
    pytest_run(project, "--devtool-record=new_episodes").assert_outcomes(passed=1)
    assert [c["callId"] for c in json.loads(path.read_bytes())["calls"]] == ["root/turn:gpt-4.1-mini:0"]
    assert fake_provider.count() == 4


@pytest.mark.parametrize("new", ["the second call", "the first call"])
def test_a_failed_rerecord_keeps_every_recorded_call(
    project: pytest.Pytester, fake_provider: FakeProvider, monkeypatch: pytest.MonkeyPatch, new: str
) -> None:
    script_support(fake_provider)
    project.makepyfile(test_bot=SUPPORT_BOT)
    path = cassette(project, "test_bot", "test_support")
    pytest_run(project).assert_outcomes(passed=1)
    recorded = path.read_bytes()
    assert len(json.loads(recorded)["calls"]) == 2
    # A changed call to record, and the provider unreachable (a closed port): the re-record fails.
    changed = "Say thanks in German." if new == "the second call" else "Where is my order B42?"
    old = "Say thanks in French." if new == "the second call" else "Where is my order A17?"
    project.makepyfile(test_bot=SUPPORT_BOT.replace(old, changed))
    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/v1")
    pytest_run(project, "--devtool-record=new_episodes").assert_outcomes(failed=1)
    assert path.read_bytes() == recorded
    assert [p.name for p in path.parent.iterdir()] == [path.name]  # no temporary file left either
    # CI, replaying the cassette the failed re-record left, passes on the code it was recorded for.
    project.makepyfile(test_bot=SUPPORT_BOT)
    pytest_run(project, "--devtool-record=none").assert_outcomes(passed=1)
    assert fake_provider.count() == 2


def test_a_streamed_answer_is_kept_one_event_a_line_and_replays(
    project: pytest.Pytester, fake_provider: FakeProvider
) -> None:
    fake_provider.reply({"text": "Streaming works fine."})
    project.makepyfile(
        test_stream="""
import openai
import pytest

@pytest.mark.agent_cassette
def test_stream():
    stream = openai.OpenAI().chat.completions.create(
        model="gpt-4.1-mini", messages=[{"role": "user", "content": "stream please"}], stream=True)
    assert "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices) == "Streaming works fine."
"""
    )
    pytest_run(project).assert_outcomes(passed=1)
    (call,) = json.loads(cassette(project, "test_stream", "test_stream").read_text())["calls"]
    assert isinstance(call["output"]["sse"], list)
    assert sum(line.startswith("data: ") for line in call["output"]["sse"]) > 2
    pytest_run(project, "--devtool-record=none").assert_outcomes(passed=1)
    assert fake_provider.count() == 1


def test_an_anthropic_agent_replays_too(project: pytest.Pytester, fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "Bonjour."}, api="anthropic.messages")
    project.makepyfile(
        test_claude="""
import anthropic
import pytest

@pytest.mark.agent_cassette
def test_claude():
    reply = anthropic.Anthropic().messages.create(
        model="claude-sonnet-4-5", max_tokens=64, messages=[{"role": "user", "content": "Say hello in French."}])
    assert reply.content[0].text == "Bonjour."
"""
    )
    pytest_run(project).assert_outcomes(passed=1)
    (call,) = json.loads(cassette(project, "test_claude", "test_claude").read_text())["calls"]
    assert call["request"]["api"] == "anthropic.messages"
    assert call["request"]["request"]["max_tokens"] == 64
    pytest_run(project, "--devtool-record=none").assert_outcomes(passed=1)
    assert fake_provider.count() == 1


def test_async_tests_record_and_replay(project: pytest.Pytester, fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "hi"}, times=None)
    project.makepyfile(
        test_async="""
import openai
import pytest

pytestmark = pytest.mark.anyio


@pytest.fixture
def anyio_backend():
    return "asyncio"


async def ask(text):
    async with openai.AsyncOpenAI() as client:  # closed in its own event loop (each test has one)
        reply = await client.chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": text}])
    return reply.choices[0].message.content


@pytest.mark.agent_cassette
async def test_marker():
    assert await ask("hello from the marker") == "hi"


async def test_block(agent_cassette):
    async with agent_cassette:
        assert await ask("hello from a block") == "hi"
"""
    )
    pytest_run(project).assert_outcomes(passed=2)
    assert fake_provider.count() == 2
    for test in ("test_marker", "test_block"):
        assert len(json.loads(cassette(project, "test_async", test).read_text())["calls"]) == 1
    pytest_run(project, "--devtool-record=none").assert_outcomes(passed=2)
    assert fake_provider.count() == 2


def test_a_malformed_cassette_is_named_with_where(project: pytest.Pytester, fake_provider: FakeProvider) -> None:
    project.makepyfile(test_bot=SUPPORT_BOT)
    path = cassette(project, "test_bot", "test_support")
    path.parent.mkdir(parents=True)
    path.write_text('{"devtoolCassette": 1,\n "calls": [\n  {"callId": 3}\n ]\n}\n')
    failed = pytest_run(project)
    failed.assert_outcomes(failed=1)
    failed.stdout.fnmatch_lines(["*test_support.json: calls[[]0[]].callId: must be a string*"])
    path.write_text('{"devtoolCassette": 1,\n "calls": [\n')
    pytest_run(project).stdout.fnmatch_lines(["*test_support.json: not JSON: * at line 3, column 1*"])
    assert fake_provider.count() == 0
    assert path.read_text() == '{"devtoolCassette": 1,\n "calls": [\n'  # kept as it was


def page(url: str) -> tuple[int, str]:
    deadline = time.monotonic() + 20
    while True:
        try:
            with urllib.request.urlopen(url, timeout=5) as response:
                return response.status, response.read().decode()
        except urllib.error.HTTPError as exc:
            if time.monotonic() > deadline:
                return exc.code, ""
        time.sleep(0.2)


def test_devtool_url_streams_the_run_and_a_failure_ends_with_its_link(
    project: pytest.Pytester, fake_provider: FakeProvider, request: pytest.FixtureRequest
) -> None:
    url: str = request.getfixturevalue("served")  # a real `devtool serve`, shared with the instrument tests
    script_support(fake_provider)
    project.makepyfile(test_bot=SUPPORT_BOT.replace('== "Merci."', '== "Danke."'))
    failed = pytest_run(project, f"--devtool-url={url}")
    failed.assert_outcomes(failed=1)
    out = failed.stdout.str()
    block = out[out.index("_ test_support _") : out.rindex("\n", 0, out.index("short test summary"))]
    assert "AssertionError" in block
    (link,) = re.findall(r"the run: (http://\S+)", block)
    assert link.startswith(f"{url}/runs/")
    assert block.rstrip().endswith(link)
    status, html = page(link)
    assert status == 200
    assert "test_bot.py::test_support" in html
    trace_id = link.rpartition("/")[2]
    assert {"turn 0", "turn 1"} <= set(page_names(url, trace_id, {"turn 0", "turn 1"}))

    # A strict replay's refusal ends with the link too, and that run is on the DevTool as well.
    project.makepyfile(test_bot=SUPPORT_BOT.replace("Where is my order A17?", "Where is my order B22?"))
    refused = pytest_run(project, f"--devtool-url={url}/")
    refused.assert_outcomes(failed=1)
    lines = refused.stdout.str().splitlines()
    at = next(i for i, line in enumerate(lines) if "re-record this test:" in line)
    (link,) = re.findall(r"the run: (http://\S+)", lines[at + 1])
    assert page(link)[0] == 200
    assert fake_provider.count() == 2
