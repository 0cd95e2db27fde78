"""The postmortem script of the published post runs on `devtool.journal` and prints what the post shows.

`examples/postmortem.py` is the post's script with only its import line changed; both facts are
checked against the post itself (`tests/corpus/seeds/004_cdd3d3b1962c038d.txt`), and the script runs
as a real child process.
"""

from __future__ import annotations

import subprocess
import sys

from tests.conftest import CORPUS, REPO

POST = CORPUS / "seeds" / "004_cdd3d3b1962c038d.txt"
SCRIPT = REPO / "examples" / "postmortem.py"


def post_script() -> str:
    text = POST.read_text()
    start = text.index("import asyncio\n\nfrom promptise")
    end = text.index("asyncio.run(main())") + len("asyncio.run(main())")
    return text[start:end] + "\n"


def post_output() -> list[str]:
    after = POST.read_text().split("Running it prints:\n\n", 1)[1]
    return after.split("\n\n", 1)[0].splitlines()


def test_the_example_is_the_post_script_with_only_its_import_line_changed() -> None:
    ours, theirs = SCRIPT.read_text().splitlines(), post_script().splitlines()
    assert len(ours) == len(theirs) > 50
    changed = [(mine, original) for mine, original in zip(ours, theirs, strict=True) if mine != original]
    assert changed == [("from devtool.journal import (", "from promptise.runtime.journal import (")]


def test_the_postmortem_prints_exactly_the_five_lines_of_the_post() -> None:
    expected = post_output()
    assert len(expected) == 5
    assert expected[2] == "plan: preview only: 2 entries affected (0 conversation, 2 code/state)."
    done = subprocess.run([sys.executable, str(SCRIPT)], capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    assert done.stdout.splitlines() == expected
