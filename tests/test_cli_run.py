"""`devtool run MODULE:FUNC`: a real child process runs an entrypoint, records it, replays a snapshot."""

from __future__ import annotations

import json
import re
import textwrap
from pathlib import Path

import pytest

from tests.conftest import DevtoolRunner

AGENT_MODULE = textwrap.dedent(
    """
    import json
    from devtool.core import ScriptedModel, create_agent, prompt
    from devtool.core.debugger import dump_snapshot

    async def main(props):
        model = ScriptedModel(["hello " + props["name"]])

        async def greet(p):
            answer = await prompt("greet " + p["name"])
            if p.get("dump_to"):
                with open(p["dump_to"], "w") as handle:
                    json.dump(dump_snapshot(), handle)
            return answer

        answer = await create_agent("greeter", greet, model=model)(props)
        return {"answer": answer, "modelCalls": model.calls}
    """
)


@pytest.fixture
def project(tmp_path: Path) -> Path:
    (tmp_path / "greeting.py").write_text(AGENT_MODULE)
    return tmp_path


def test_run_records_entrypoint_and_props_and_prints_the_result(devtool: DevtoolRunner, project: Path) -> None:
    result = devtool("run", "greeting:main", "--props", '{"name": "ada"}', "--trace", "t.jsonl")
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout) == {"answer": "hello ada", "modelCalls": 1}
    events = [json.loads(line) for line in (project / "t.jsonl").read_text().splitlines()]
    assert events[0]["type"] == "runWith:start"
    assert events[0]["metadata"] == {"entrypoint": "greeting:main", "props": {"name": "ada"}}
    assert events[-1]["type"] == "runWith:end"


def test_run_replays_a_snapshot_file_without_calling_the_model(devtool: DevtoolRunner, project: Path) -> None:
    props = json.dumps({"name": "ada", "dump_to": str(project / "snap.json")})
    assert devtool("run", "greeting:main", "--props", props).returncode == 0
    replay = devtool("run", "greeting:main", "--props", props, "--snapshot", "snap.json", "--trace", "r.jsonl")
    assert replay.returncode == 0, replay.stderr
    assert json.loads(replay.stdout) == {"answer": "hello ada", "modelCalls": 0}
    start = json.loads((project / "r.jsonl").read_text().splitlines()[0])
    assert start["metadata"]["snapshot"] == "snap.json"
    assert start["config"]["replayOf"]["source"] == "dump"


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["os.system"], "entrypoint must look like module:function"),
        (["no_such_module:main"], "cannot import 'no_such_module'"),
        (["greeting:nope"], "'greeting' has no attribute 'nope'"),
        (["greeting:main", "--props", "{bad"], "argument --props: not JSON"),
        (["greeting:main", "--snapshot", "missing.json"], "cannot read snapshot missing.json"),
    ],
)
def test_bad_entrypoints_and_arguments_are_one_line(
    devtool: DevtoolRunner, project: Path, args: list[str], message: str
) -> None:
    result = devtool("run", *args)
    assert result.returncode == 2
    assert message in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_the_help_example_is_an_entrypoint_that_runs(devtool: DevtoolRunner, tmp_path: Path) -> None:
    shown = devtool("run", "--help")
    example = re.search(r"e\.g\. (\S+:\w+)", " ".join(shown.stdout.split()))
    assert example is not None, shown.stdout
    trace = tmp_path / "example.jsonl"
    done = devtool("run", example.group(1), "--trace", str(trace))
    assert done.returncode == 0, done.stderr
    assert any(json.loads(line)["type"] == "runWith:end" for line in trace.read_text().splitlines())
