"""The projects the pytest plugin's tests run (a user's test files, as text) and what those tests
read their runs with: the pytest inside the test, the cassette it writes, the report of a refusal."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

import pytest

from testkit.fake_provider import FakeProvider

SUPPORT_BOT = """
import os
import openai
import pytest

QUESTION = "Where is my order A17?"


def client():
    change = os.environ.get("CHANGE", "")
    options = {}
    if change == "headers":
        options["default_headers"] = {"X-Team": "payments", "Cookie": "session=abc"}
    elif change == "user_agent":
        options["default_headers"] = {"User-Agent": "support-bot/2.0 (other SDK)"}
    elif change == "timeout":
        options.update(timeout=3.5, max_retries=0)
    return openai.OpenAI(**options)


def ask(text):
    extra = {}
    if os.environ.get("CHANGE") == "request_id":
        extra["extra_headers"] = {"X-Request-Id": os.urandom(8).hex(), "Idempotency-Key": os.urandom(8).hex()}
    reply = client().chat.completions.create(
        model="gpt-4.1-mini",
        messages=[{"role": "system", "content": "You are terse."}, {"role": "user", "content": text}],
        temperature=0,
        **extra,
    )
    return reply.choices[0].message.content


@pytest.mark.agent_cassette
def test_support():
    assert ask(QUESTION) == "It shipped yesterday."
    assert ask("Say thanks in French.") == "Merci."
"""

FRAMEWORK_AGENT = """
from pathlib import Path

import pytest
from pydantic_ai import Agent

LOG = Path(__file__).with_name("side-effects.log")


def weather(city: str) -> str:
    \"\"\"The weather in a city.\"\"\"
    with LOG.open("a") as log:
        log.write(f"weather {city}\\n")
    return f"{city}: sunny"


agent = Agent("openai:gpt-4.1-mini", name="travel", tools=[weather])


@pytest.mark.agent_cassette
def test_trip():
    assert agent.run_sync("Plan a day in Lisbon").output == "Lisbon is sunny."
"""

CORE_AGENT = """
from pathlib import Path

import devtool
from devtool.core import create_agent, create_tool, prompt

LOG = Path(__file__).with_name("side-effects.log")


def weather(city):
    with LOG.open("a") as log:
        log.write(f"weather {city}\\n")
    return f"{city}: 21C and sunny"


tool = create_tool("weather", weather, parameters={
    "type": "object", "properties": {"city": {"type": "string"}}, "required": ["city"]})


async def forecast(props):
    return await prompt(f"What should I wear in {props['city']}?", tools=[tool])


agent = create_agent("forecaster", forecast, model="openai:gpt-4.1-mini")


@devtool.tool
def order_status(order_id: str) -> str:
    with LOG.open("a") as log:
        log.write(f"order {order_id}\\n")
    return f"order {order_id}: shipped"


def test_forecast(agent_cassette):
    assert agent_cassette.run(agent, {"city": "Lisbon"}) == "Light clothes."


def test_order(agent_cassette):
    with agent_cassette:
        assert order_status(ORDER) == f"order {ORDER}: shipped"


ORDER = "A17"
"""


def script_support(fake: FakeProvider) -> None:
    fake.reply({"text": "It shipped yesterday."}, contains="Where is my order", times=None)
    fake.reply({"text": "Merci."}, contains="in French", times=None)


def pytest_run(project: pytest.Pytester, *args: str) -> pytest.RunResult:
    """pytest in this process (the SDKs imported once: a child process spends seconds importing them);
    the first test runs it as a child process, as a user does."""
    # pytest-playwright keeps module-wide state that a pytest inside a pytest would share: not loaded there.
    return project.runpytest_inprocess("-p", "no:cacheprovider", "-p", "no:playwright", *args)


def cassette(project: pytest.Pytester, module: str, test: str) -> Path:
    return project.path / "__snapshots__" / module / f"{test}.json"


def rerecord_command(out: str) -> str:
    """The one command a failure prints; the short summary repeats the message in full when pytest
    runs under CI (it truncates only at a terminal), so the same command may show twice."""
    (command,) = set(re.findall(r"re-record this test: (.*)", out))
    return command


def diff_lines(lines: list[str]) -> list[str]:
    """Output lines stripped, a diff line's sign kept against its text (`-"content": ...`)."""
    return [re.sub(r"^([-+])\s+", r"\1", line.strip()) for line in lines]


def assert_refused(failed: pytest.RunResult, refusal: str, call_id: str, removed: str, added: str) -> None:
    """`failed`'s report has the line `refusal`, the call's `call_id`, and a diff that takes out the line
    `removed` and puts in `added`."""
    out = diff_lines(failed.stdout.lines)
    assert refusal in out
    assert f"callId    {call_id}" in out
    assert f"-{removed}" in out
    assert f"+{added}" in out


def git(folder: Path, *args: str) -> str:
    done = subprocess.run(
        ["git", "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
        cwd=folder, capture_output=True, text=True, check=True,
    )  # fmt: skip
    return done.stdout
