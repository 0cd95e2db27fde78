"""Driving the fake provider from a test: start its process, script a namespace, read what it answered.

    with FakeProviderProcess.start(log=tmp_path / "fake.log") as process:
        fake = process.namespace("my-test")
        fake.reply({"tool_calls": [{"name": "search", "arguments": {"q": "rust"}}]}, {"text": "done"})
        os.environ.update(fake.env(api_key="sk-test"))   # or base_url=fake.openai_base_url
        ...
        assert fake.count() == 2

The process is real (`python -m testkit.fake_provider --port 0`): the SDKs reach it over HTTP on a
loopback port, as they would reach the provider.
"""

from __future__ import annotations

import subprocess
import sys
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from typing import Any

import orjson

DEFAULT_KEY = "sk-fake-0123456789abcdef"


class FakeProvider:
    """One namespace of a running fake provider: its base URLs, its script, its requests."""

    def __init__(self, url: str, namespace: str = "default") -> None:
        self.url = url.rstrip("/")
        self.namespace = namespace
        prefix = "" if namespace == "default" else f"/ns/{namespace}"
        # What each SDK's base_url is (OpenAI's ends in /v1; Anthropic's SDK adds /v1/messages itself).
        self.openai_base_url = f"{self.url}{prefix}/v1"
        self.anthropic_base_url = f"{self.url}{prefix}"

    def env(self, api_key: str = DEFAULT_KEY) -> dict[str, str]:
        """The SDKs' environment variables pointing at this namespace, with `api_key` for both."""
        return {
            "OPENAI_BASE_URL": self.openai_base_url,
            "OPENAI_API_KEY": api_key,
            "ANTHROPIC_BASE_URL": self.anthropic_base_url,
            "ANTHROPIC_API_KEY": api_key,
        }

    def add(self, *rules: dict[str, Any]) -> None:
        """Add rules (`{"match": {...}, "reply": {...}, "times": 1}`), answered in the order added."""
        self._call("POST", "rules", {"rules": list(rules)})

    def reply(self, *replies: dict[str, Any], times: int | None = 1, **match: str) -> None:
        """One rule per reply, each with this `match` (api, model, contains, last, tool) and `times`."""
        self.add(*({"match": match, "reply": reply, "times": times} for reply in replies))

    def configure(self, **config: Any) -> dict[str, Any]:
        """Change this namespace's config (api_key, models, unsupported_params, chunk_delay, chunk_size)."""
        result: dict[str, Any] = self._call("PUT", "config", config)["config"]
        return result

    def requests(self) -> list[dict[str, Any]]:
        """Every provider request this namespace answered, oldest first."""
        result: list[dict[str, Any]] = self._call("GET", "requests")["requests"]
        return result

    def count(self) -> int:
        """How many provider requests this namespace answered (whatever their status)."""
        return int(self._call("GET", "requests")["count"])

    def rules(self) -> list[dict[str, Any]]:
        result: list[dict[str, Any]] = self._call("GET", "rules")["rules"]
        return result

    def reset(self) -> None:
        self._call("POST", "reset", {})

    def _call(self, method: str, what: str, body: Any = None) -> Any:
        data = orjson.dumps(body) if body is not None else None
        request = urllib.request.Request(
            f"{self.url}/_fake/{self.namespace}/{what}",
            data=data,
            method=method,
            headers={"Content-Type": "application/json"},
        )
        try:
            with urllib.request.urlopen(request, timeout=10) as response:
                return orjson.loads(response.read())
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")
            raise ValueError(f"fake provider refused {method} {what}: {detail}") from None


class FakeProviderProcess:
    """A running `python -m testkit.fake_provider` child process."""

    def __init__(self, process: subprocess.Popen[str], url: str, log: Path | None) -> None:
        self.process = process
        self.url = url
        self.log = log

    @classmethod
    def start(cls, *, log: Path | None = None, host: str = "127.0.0.1") -> FakeProviderProcess:
        args = [sys.executable, "-u", "-m", "testkit.fake_provider", "--host", host, "--port", "0"]
        if log is not None:
            args += ["--log", str(log)]
        repo = Path(__file__).resolve().parents[2]
        process = subprocess.Popen(args, stdout=subprocess.PIPE, text=True, cwd=repo)
        assert process.stdout is not None
        first = process.stdout.readline()
        if not first.startswith("Fake provider at "):
            process.kill()
            raise RuntimeError(f"the fake provider did not start: {first!r}")
        return cls(process, first.removeprefix("Fake provider at ").strip(), log)

    def namespace(self, name: str = "default") -> FakeProvider:
        return FakeProvider(self.url, name)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log is not None and self.log.exists() else ""

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        if self.process.stdout is not None:
            self.process.stdout.close()

    def __enter__(self) -> FakeProviderProcess:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, traceback: TracebackType | None
    ) -> None:
        self.stop()
