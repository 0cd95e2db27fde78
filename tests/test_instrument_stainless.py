"""The SDKs' requests as turns: recorded in a run, replayed as the SDK's own objects and streams with no
request, untouched outside a run, hashed by meaning, never holding a key."""

from __future__ import annotations

import asyncio
import contextvars
import threading
import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import anthropic
import openai
import orjson
import pytest

import devtool.instrument
from devtool.core import MemorySink, create_agent, prompt, run_with
from devtool.core.debugger import dump_snapshot
from devtool.core.frame import current_frame
from devtool.core.providers.openai_chat import OpenAIChatModel
from devtool.instrument.stainless import WRAPPED
from testkit.fake_provider import FakeProvider

KEY = "sk-stainless-test-0123456789"
HI = [{"role": "user", "content": "hi"}]

devtool.instrument.install()


def recorded_and_replayed(fn: Callable[[], Any]) -> tuple[Any, Any, MemorySink, MemorySink]:
    """`fn()` (sync or async) recorded in a run, then replayed from that run's snapshot."""

    async def main() -> tuple[Any, Any]:
        result = fn()
        return (await result if asyncio.iscoroutine(result) else result), dump_snapshot()

    first, second = MemorySink(), MemorySink()
    result, snapshot = asyncio.run(run_with(main, sinks=[first]))
    again, _ = asyncio.run(run_with(main, sinks=[second], snapshot=snapshot))
    return result, again, first, second


def of(sink: MemorySink, kind: str) -> list[dict[str, Any]]:
    return [dict(event) for event in sink.events if event["type"] == kind]


def test_every_sdk_client_is_wrapped_once() -> None:
    assert devtool.instrument.openai() is False  # already done at import of this module
    for sdk in (openai, anthropic):
        base = sdk._base_client  # type: ignore[attr-defined]
        assert getattr(base.SyncAPIClient.request, WRAPPED) is True
        assert getattr(base.AsyncAPIClient.request, WRAPPED) is True


def test_an_unrecorded_call_goes_straight_through_and_is_not_journaled(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "plain"}, times=None)
    client = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key=KEY)
    outside = client.chat.completions.create(model="gpt-4.1-mini", messages=HI)
    assert type(outside).__name__ == "ChatCompletion"
    seen: list[Any] = []

    async def main() -> Any:
        # A plain thread is not handed the run's context: its request is outside the run.
        thread = threading.Thread(
            target=lambda: seen.append(client.chat.completions.create(model="gpt-4.1-mini", messages=HI))
        )
        thread.start()
        thread.join()
        return dump_snapshot()

    sink = MemorySink()
    snapshot = asyncio.run(run_with(main, sinks=[sink]))
    assert fake_provider.count() == 2
    assert seen[0].choices[0].message.content == "plain"
    assert of(sink, "turn:start") == []
    assert snapshot["root"]["journal"] == {"prompt": {}, "tool": {}}


def test_a_whole_answers_body_is_kept_as_its_bytes_and_snapshotted_as_json(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "kept"})
    client = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key=KEY)

    async def main() -> Any:
        client.chat.completions.create(model="gpt-4.1-mini", messages=HI)
        root = current_frame()
        root.run.emitter.settle()
        (entry,) = root.journal["prompt"].values()
        return entry["output"], dump_snapshot()

    sink = MemorySink()
    kept, snapshot = asyncio.run(run_with(main, sinks=[sink]))
    assert fake_provider.count() == 1
    # Until a snapshot reads it, the frame holds the entry as text: one object for the collector, not a dozen.
    assert isinstance(kept, bytes)
    (end,) = of(sink, "turn:end")
    (entry,) = snapshot["root"]["journal"]["prompt"].values()
    assert entry["output"] == end["response"] == orjson.loads(bytes(kept))
    assert end["response"]["api"] == "openai.chat"
    assert end["response"]["status"] == 200
    assert entry["output"]["body"]["choices"][0]["message"]["content"] == "kept"


def test_a_prompt_turn_on_an_adapter_is_recorded_once(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "once"})
    model = OpenAIChatModel("gpt-4.1-mini", base_url=fake_provider.openai_base_url, api_key=KEY)
    sink = MemorySink()
    asyncio.run(run_with(lambda: create_agent("a", lambda _: prompt("hi"), model=model)({}), sinks=[sink]))
    assert fake_provider.count() == 1
    assert len(of(sink, "turn:end")) == len(of(sink, "model:call:end")) == 1


@pytest.mark.parametrize("streamed", [False, True])
def test_openai_chat_sync_replays_the_sdks_objects_without_a_request(
    fake_provider: FakeProvider, streamed: bool
) -> None:
    fake_provider.reply({"text": "The answer, in pieces of eight.", "usage": {"input": 12, "output": 7}})
    client = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key=KEY)

    def ask() -> Any:
        if not streamed:
            return client.chat.completions.create(model="gpt-4.1-mini", messages=HI, temperature=0)
        stream = client.chat.completions.create(
            model="gpt-4.1-mini", messages=HI, stream=True, stream_options={"include_usage": True}
        )
        return [(type(chunk).__name__, chunk.choices[0].delta.content if chunk.choices else None) for chunk in stream]

    result, again, first, second = recorded_and_replayed(ask)
    assert fake_provider.count() == 1
    if streamed:
        assert result == again
        assert [text for _, text in again if text] == ["The answ", "er, in p", "ieces of", " eight."]
        assert {kind for kind, _ in again} == {"ChatCompletionChunk"}
        assert of(first, "turn:progress")[0]["text"] == "The answ"
    else:
        assert type(again) is type(result)
        assert again.model_dump() == result.model_dump()
    (call,) = of(first, "model:call:end")
    assert call["usage"] == {"promptTokens": 12, "completionTokens": 7, "totalTokens": 19}
    assert call["costs"]["micro_usd"] > 0
    assert of(first, "turn:end")[0]["message"] == {"role": "assistant", "content": "The answer, in pieces of eight."}
    assert of(second, "turn:end")[0]["cache"] is True
    assert of(second, "model:call:start") == []


def test_async_and_raw_response_forms_replay_as_they_were_asked(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "raw"}, {"text": "streamed raw"})

    async def ask() -> Any:
        client = openai.AsyncOpenAI(base_url=fake_provider.openai_base_url, api_key=KEY)
        raw = await client.chat.completions.with_raw_response.create(model="gpt-4.1-mini", messages=HI)
        async with client.responses.with_streaming_response.create(model="gpt-4.1-mini", input="hi", stream=True) as r:
            events = [event.type async for event in await r.parse()]
        return type(raw).__name__, raw.parse().choices[0].message.content, events

    result, again, _, second = recorded_and_replayed(ask)
    assert fake_provider.count() == 2
    assert result == again
    assert result[0] == "LegacyAPIResponse"
    assert result[2][-1] == "response.completed"
    assert [e["cache"] for e in of(second, "turn:end")] == [True, True]


def test_anthropic_async_stream_replays_its_events(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"tool_calls": [{"name": "search", "arguments": {"q": "rust"}}], "text": "Let me look."})

    async def ask() -> Any:
        client = anthropic.AsyncAnthropic(base_url=fake_provider.anthropic_base_url, api_key=KEY)
        async with client.messages.stream(model="claude-haiku-4-5", max_tokens=64, messages=HI) as stream:
            kinds = [event.type async for event in stream]
            final = await stream.get_final_message()
        return kinds, final.model_dump()

    result, again, first, _ = recorded_and_replayed(ask)
    assert fake_provider.count() == 1
    assert result == again
    message = of(first, "turn:end")[0]["message"]
    assert message["content"] == "Let me look."
    assert message["tool_calls"][0]["name"] == "search"
    assert of(first, "model:call:end")[0]["finishReason"] == "tool_calls"


def test_the_hash_is_the_requests_meaning(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "same"}, times=None)
    client = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key=KEY)
    asks = {
        "plain": lambda: client.chat.completions.create(model="gpt-4.1-mini", messages=HI),
        "other user, metadata, header, timeout": lambda: client.chat.completions.create(
            model="gpt-4.1-mini", messages=HI, user="u2", metadata={"k": "v"}, extra_headers={"X-A": "1"}, timeout=9
        ),
        "other temperature": lambda: client.chat.completions.create(model="gpt-4.1-mini", messages=HI, temperature=0.5),
        "streamed": lambda: list(client.chat.completions.create(model="gpt-4.1-mini", messages=HI, stream=True)),
    }

    async def main() -> Any:
        asks["plain"]()
        return dump_snapshot()

    snapshot = asyncio.run(run_with(main))
    live = {}
    for name, ask in asks.items():
        before = fake_provider.count()
        asyncio.run(run_with(ask, snapshot=snapshot))
        live[name] = fake_provider.count() - before
    assert live == {"plain": 0, "other user, metadata, header, timeout": 0, "other temperature": 1, "streamed": 1}


def test_no_key_in_events_or_snapshots_and_a_refused_request_is_a_failed_turn(fake_provider: FakeProvider) -> None:
    fake_provider.configure(api_key="sk-the-right-one-000000")
    client = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key=KEY, max_retries=0)
    sink = MemorySink()

    async def main() -> Any:
        with pytest.raises(openai.AuthenticationError):
            client.chat.completions.create(model="gpt-4.1-mini", messages=HI)
        return dump_snapshot()

    snapshot = asyncio.run(run_with(main, sinks=[sink]))
    (end,) = of(sink, "turn:end")
    assert end["success"] is False
    assert "HTTP 401" in end["error"]["message"]
    assert end["error"]["details"]["code"] == "auth_error"
    text = orjson.dumps([sink.events, snapshot]).decode()
    assert KEY not in text
    assert KEY[-8:] not in text.replace("*", "")
    assert snapshot["root"]["journal"]["prompt"] == {}


def test_a_stream_closed_early_is_a_failed_turn_and_not_journaled(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "a long answer that the caller stops reading after one piece"})
    client = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key=KEY)
    sink = MemorySink()

    async def main() -> Any:
        stream = client.chat.completions.create(model="gpt-4.1-mini", messages=HI, stream=True)
        next(iter(stream))
        stream.close()
        return dump_snapshot()

    snapshot = asyncio.run(run_with(main, sinks=[sink]))
    (end,) = of(sink, "turn:end")
    assert end["success"] is False
    assert end["error"]["name"] == "StreamClosedError"
    assert snapshot["root"]["journal"]["prompt"] == {}


class _NotJSON(BaseHTTPRequestHandler):
    """A proxy in front of the provider that answers 200 with an error page labelled as JSON."""

    def do_POST(self) -> None:
        self.rfile.read(int(self.headers["content-length"]))
        page = b"<html>502 Bad Gateway</html>"
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(page)))
        self.end_headers()
        self.wfile.write(page)

    def log_message(self, *args: Any) -> None:
        """Quiet: the test reads the run's events, not the server's log."""


def test_a_whole_answer_that_is_not_json_is_a_failed_turn_and_not_journaled() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", 0), _NotJSON)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    client = openai.OpenAI(base_url=f"http://127.0.0.1:{server.server_port}/v1", api_key=KEY, max_retries=0)
    sink = MemorySink()

    async def main() -> Any:
        with pytest.raises(ValueError, match="Expecting value"):  # the SDK's own refusal reaches the caller
            client.chat.completions.create(model="gpt-4.1-mini", messages=HI)
        return dump_snapshot()

    try:
        snapshot = asyncio.run(run_with(main, sinks=[sink]))
    finally:
        server.shutdown()
        server.server_close()
    (end,) = of(sink, "turn:end")
    assert end["success"] is False
    assert end["error"]["name"] == "JSONDecodeError"
    assert snapshot["root"]["journal"]["prompt"] == {}


ANSWER = "Tiles, trams and tarts: Lisbon in eight-byte pieces."


def _texts(kind: str, events: list[Any]) -> list[str]:
    """The answer's text pieces, chunk by chunk, as each API streams them."""
    if kind == "chat":
        return [e.choices[0].delta.content for e in events if e.choices and e.choices[0].delta.content]
    if kind == "responses":
        return [e.delta for e in events if e.type == "response.output_text.delta"]
    return [e.delta.text for e in events if e.type == "content_block_delta" and e.delta.type == "text_delta"]


def _ask(kind: str, client: Any, streamed: bool) -> Any:
    if kind == "chat":
        usage = {"stream_options": {"include_usage": True}} if streamed else {}
        return client.chat.completions.create(model="gpt-4.1-mini", messages=HI, stream=streamed, **usage)
    if kind == "responses":
        return client.responses.create(model="gpt-4.1-mini", input="hi", stream=streamed)
    return client.messages.create(model="claude-haiku-4-5", max_tokens=64, messages=HI, stream=streamed)


def _client(kind: str, fake: FakeProvider, asynchronous: bool) -> Any:
    if kind == "messages":
        sdk_class = anthropic.AsyncAnthropic if asynchronous else anthropic.Anthropic
        return sdk_class(base_url=fake.anthropic_base_url, api_key=KEY)
    return (openai.AsyncOpenAI if asynchronous else openai.OpenAI)(base_url=fake.openai_base_url, api_key=KEY)


@pytest.mark.parametrize("kind", ["chat", "responses", "messages"])
@pytest.mark.parametrize("asynchronous", [False, True], ids=["sync", "async"])
@pytest.mark.parametrize("streamed", [False, True], ids=["whole", "streamed"])
def test_each_api_sync_and_async_streamed_and_whole_replays_what_it_recorded(
    fake_provider: FakeProvider, kind: str, asynchronous: bool, streamed: bool
) -> None:
    fake_provider.reply({"text": ANSWER, "usage": {"input": 9, "output": 13}})

    async def ask() -> Any:
        client = _client(kind, fake_provider, asynchronous)
        result = _ask(kind, client, streamed)
        result = await result if asynchronous else result
        if not streamed:
            answer = type(result).__name__, result.model_dump()
        else:
            events = [e async for e in result] if asynchronous else list(result)
            answer = type(events[0]).__name__, _texts(kind, events)
        closed = client.close()
        if asynchronous:
            await closed
        return answer

    result, again, first, second = recorded_and_replayed(ask)
    assert fake_provider.count() == 1  # the replay sent no request
    assert again == result  # the SDK's own types, the same content; streamed: the same chunks' text
    if streamed:
        assert len(result[1]) > 1
        assert "".join(result[1]) == ANSWER
    (end,) = of(first, "turn:end")
    assert end["message"]["content"] == ANSWER
    (call,) = of(first, "model:call:end")
    assert call["usage"]["promptTokens"] == 9
    assert call["usage"]["completionTokens"] == 13
    assert call["costs"]["micro_usd"] > 0
    assert [e["cache"] for e in of(second, "turn:end")] == [True]
    assert of(second, "model:call:start") == []


def test_gathered_requests_number_in_the_order_they_were_made_whatever_order_they_end(
    fake_provider: FakeProvider,
) -> None:
    # The first request is answered last: callIds follow the requests' creation, not their answers.
    for n, delay in ((0, 0.6), (1, 0.3), (2, 0)):
        fake_provider.reply({"text": f"answer {n}", "delay": delay}, last=f"question {n}", times=None)

    async def ask() -> Any:
        client = openai.AsyncOpenAI(base_url=fake_provider.openai_base_url, api_key=KEY)
        completions = await asyncio.gather(
            *(
                client.chat.completions.create(
                    model="gpt-4.1-mini", messages=[{"role": "user", "content": f"question {n}"}]
                )
                for n in range(3)
            )
        )
        await client.close()
        return [c.choices[0].message.content for c in completions]

    result, again, first, second = recorded_and_replayed(ask)
    assert result == again == ["answer 0", "answer 1", "answer 2"]
    assert fake_provider.count() == 3
    ended = [(e["callId"], e["message"]["content"]) for e in of(first, "turn:end")]
    assert [answer for _, answer in ended] == ["answer 2", "answer 1", "answer 0"]  # they did end in reverse
    assert sorted(ended) == [
        ("root/turn:gpt-4.1-mini:0", "answer 0"),
        ("root/turn:gpt-4.1-mini:1", "answer 1"),
        ("root/turn:gpt-4.1-mini:2", "answer 2"),
    ]
    assert all(e["cache"] for e in of(second, "turn:end"))


def test_a_request_json_cannot_hash_runs_and_is_recorded_but_not_journaled(fake_provider: FakeProvider) -> None:
    fake_provider.reply({"text": "big seed"}, times=None)
    client = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key=KEY)
    sink = MemorySink()

    async def main() -> Any:
        # The SDK sends an integer beyond 64 bits; the canonical JSON of the content hash cannot hold it.
        answer = client.chat.completions.create(model="gpt-4.1-mini", messages=HI, seed=2**70)
        return answer.choices[0].message.content, dump_snapshot()

    answer, snapshot = asyncio.run(run_with(main, sinks=[sink]))
    assert answer == "big seed"
    assert fake_provider.count() == 1
    (start,) = of(sink, "turn:start")
    assert start["contentHash"] is None
    assert of(sink, "turn:end")[0]["message"]["content"] == "big seed"
    assert snapshot["root"]["journal"]["prompt"] == {}


def test_a_recorded_requests_start_is_on_disk_while_the_request_is_in_flight(
    fake_provider: FakeProvider, tmp_path: Any
) -> None:
    """A run that dies waiting for its provider leaves the turn it waited on: the turn's start is
    deferred work, on disk within the drain interval (`DRAIN_INTERVAL`), long before an answer comes."""
    fake_provider.reply({"text": "Saved first.", "usage": {"input": 3, "output": 2}, "delay": 0.4}, times=2)
    trace = tmp_path / "trace.jsonl"
    on_disk_when_answered: list[list[str]] = []
    raw_header_sent: list[str | None] = []

    def sending(request: Any) -> None:
        raw_header_sent.append(request.headers.get("X-Stainless-Raw-Response"))

    def answering(response: Any) -> None:
        on_disk_when_answered.append([orjson.loads(line)["type"] for line in trace.read_bytes().splitlines()])

    hooks = {"request": [sending], "response": [answering]}
    client = openai.OpenAI(
        base_url=fake_provider.openai_base_url, api_key=KEY, http_client=openai.DefaultHttpxClient(event_hooks=hooks)
    )
    with devtool.record("disk", to=trace):
        answer = client.chat.completions.create(model="gpt-4.1-mini", messages=HI)
        raw = client.chat.completions.with_raw_response.create(model="gpt-4.1-mini", messages=HI)
    assert answer.choices[0].message.content == raw.parse().choices[0].message.content == "Saved first."
    # The raw form's header is taken off what is sent (the SDK would wrap our response too early).
    assert raw_header_sent == [None, None]
    assert [seen[-2:] for seen in on_disk_when_answered] == [["turn:start", "model:call:start"]] * 2
    types = [orjson.loads(line)["type"] for line in trace.read_bytes().splitlines()]
    assert types.count("turn:end") == 2
    assert types[-1] == "runWith:end"
    assert types[types.index("model:call:end") + 1] == "turn:end"


def test_a_snapshot_taken_right_after_requests_holds_their_deferred_journal_and_usage(
    fake_provider: FakeProvider,
) -> None:
    """A request's journal entry and usage are deferred work: a snapshot taken at once, before the
    drainer could run, still holds every request's, and the trace has each turn's end before it."""
    fake_provider.reply({"text": "journaled", "usage": {"input": 5, "output": 3}}, times=None)
    client = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key=KEY)

    async def main() -> Any:
        for n in range(3):
            client.chat.completions.create(model="gpt-4.1-mini", messages=[{"role": "user", "content": f"q{n}"}])
        return dump_snapshot()

    sink = MemorySink()
    snapshot = asyncio.run(run_with(main, sinks=[sink]))
    assert len(snapshot["root"]["journal"]["prompt"]) == 3
    types = [e["type"] for e in sink.events]
    assert types.index("snapshot:dump") > max(i for i, t in enumerate(types) if t == "turn:end")
    assert types.count("turn:end") == 3
    assert of(sink, "runWith:end")[0]["metrics"]["totalTokens"] == 3 * 8
    before = fake_provider.count()
    replay = MemorySink()
    asyncio.run(run_with(main, sinks=[replay], snapshot=snapshot))
    assert fake_provider.count() == before  # all three served from the snapshot taken mid-run
    assert [e["cache"] for e in of(replay, "turn:end")] == [True] * 3


def test_requests_from_threads_and_gather_at_once_leave_each_turn_once_and_in_its_own_order(
    fake_provider: FakeProvider,
) -> None:
    """Four threads (each with the run's context) and eight gathered async requests at once, their
    deferred work drained meanwhile: each turn's events once, its start before its call and its end,
    and every request in the journal and the run's usage."""
    fake_provider.reply({"text": "at once", "usage": {"input": 2, "output": 1}, "delay": 0.05}, times=None)
    sync_client = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key=KEY)

    def threaded(n: int) -> str:
        answer = sync_client.chat.completions.create(
            model="gpt-4.1-mini", messages=[{"role": "user", "content": f"thread {n}"}]
        )
        return answer.choices[0].message.content or ""

    async def main() -> Any:
        client = openai.AsyncOpenAI(base_url=fake_provider.openai_base_url, api_key=KEY)
        with ThreadPoolExecutor(4) as pool:
            futures = [pool.submit(contextvars.copy_context().run, threaded, n) for n in range(4)]
            gathered = await asyncio.gather(
                *(
                    client.chat.completions.create(
                        model="gpt-4.1-mini", messages=[{"role": "user", "content": f"gathered {n}"}]
                    )
                    for n in range(8)
                )
            )
            answers = [f.result() for f in futures] + [c.choices[0].message.content for c in gathered]
        await client.close()
        return answers, dump_snapshot()

    sink = MemorySink()
    answers, snapshot = asyncio.run(run_with(main, sinks=[sink]))
    assert answers == ["at once"] * 12
    by_call: dict[str, list[str]] = {}  # a turn's span: its events' types, the model call's in it
    for e in sink.events:
        if e["type"] in ("turn:start", "turn:end"):
            by_call.setdefault(e["trace"]["spanId"], []).append(e["type"])
        elif e["type"] in ("model:call:start", "model:call:end"):
            by_call.setdefault(e["trace"]["parentSpanId"], []).append(e["type"])
    assert len(by_call) == 12
    assert len({e["callId"] for e in of(sink, "turn:end")}) == 12
    assert all(
        kinds == ["turn:start", "model:call:start", "model:call:end", "turn:end"] for kinds in by_call.values()
    ), by_call
    assert len(snapshot["root"]["journal"]["prompt"]) == 12
    assert of(sink, "runWith:end")[0]["metrics"]["modelCalls"] == 12


def test_a_slow_requests_start_is_read_from_the_trace_within_the_drain_interval_not_at_its_end(
    fake_provider: FakeProvider, tmp_path: Any
) -> None:
    """The trace file polled while a 3 s request is in flight: its turn's start is there long before
    the answer (the drainer's interval, with slack for a loaded machine), its end only after."""
    fake_provider.reply({"text": "slow", "delay": 3.0})
    trace = tmp_path / "trace.jsonl"
    client = openai.OpenAI(base_url=fake_provider.openai_base_url, api_key=KEY)
    seen: dict[str, float] = {}
    with devtool.record("slow", to=trace):
        context = contextvars.copy_context()
        asking = threading.Thread(
            target=context.run, args=(client.chat.completions.create,), kwargs={"model": "gpt-4.1-mini", "messages": HI}
        )
        started = time.monotonic()
        asking.start()
        while asking.is_alive():
            for line in trace.read_bytes().splitlines() if trace.exists() else []:
                seen.setdefault(orjson.loads(line)["type"], time.monotonic() - started)
            time.sleep(0.01)
        asking.join()
    assert "turn:end" not in seen, seen
    # Read while the request was in flight, well before its answer at 3 s (the drainer writes every
    # 0.1 s: the margin is for a loaded machine, how soon is bench's).
    assert seen["turn:start"] < 2.5
