"""pytest fixtures of the fake provider (loaded for tests/ and e2e/ by `-p` in pyproject.toml).

- `fake_provider_process` (session): one real fake provider process for the whole session, its log
  in the session's temporary folder;
- `fake_provider`: a `FakeProvider` on a namespace of its own for one test (its own rules, config
  and request count), so tests never see each other's requests.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator

import pytest

from testkit.fake_provider.client import FakeProvider, FakeProviderProcess

_numbers = itertools.count(1)


@pytest.fixture(scope="session")
def fake_provider_process(tmp_path_factory: pytest.TempPathFactory) -> Iterator[FakeProviderProcess]:
    log = tmp_path_factory.mktemp("fake-provider") / "requests.jsonl"
    with FakeProviderProcess.start(log=log) as process:
        yield process


@pytest.fixture
def fake_provider(fake_provider_process: FakeProviderProcess, request: pytest.FixtureRequest) -> FakeProvider:
    name = re.sub(r"[^A-Za-z0-9_-]+", "-", request.node.name)[:60].strip("-")
    return fake_provider_process.namespace(f"{next(_numbers)}-{name}")
