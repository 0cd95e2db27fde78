"""The README's promises: it opens with the two commands CI relies on, and its links into the docs lead somewhere.

Its examples moved to the docs site, where tests/test_docs.py runs them."""

from __future__ import annotations

import re

from tests.conftest import REPO

README = (REPO / "README.md").read_text()


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


def test_readme_links_into_the_docs_and_shows_a_real_screenshot() -> None:
    targets = re.findall(r"\]\((docs/[^)#]+)", README)
    assert "docs/img/run-page.png" in targets
    assert len({t for t in targets if t.endswith(".md")}) >= 5
    for target in targets:
        assert (REPO / target).is_file(), target
    assert (REPO / "docs/img/run-page.png").read_bytes().startswith(b"\x89PNG")
