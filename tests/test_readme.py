"""The README's promises: its Python example runs, and it opens with the two commands CI relies on."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

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


def test_python_examples_run(tmp_path: Path) -> None:
    blocks = re.findall(r"```python\n(.*?)```", README, re.S)
    assert blocks
    for index, code in enumerate(blocks):
        script = tmp_path / f"readme_{index}.py"
        script.write_text(code)
        result = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True)
        assert result.returncode == 0, result.stderr
    assert (tmp_path / "trace.jsonl").read_text().count("\n") > 10
