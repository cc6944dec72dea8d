"""The OpenAI-compatible backend against real servers started here on 127.0.0.1 with the tiny
qwen35moe model: llama.cpp's own ``llama-server`` (built from the vendored source by
``native/llama_server.py``, cached) and llama-cpp-python's ``python -m llama_cpp.server``.

One test uses a fake server, named as such: a real server cannot be made to answer with invalid
JSON on every try. Without a built llama-server its cases are skipped, or fail when
``MANGAKA_REQUIRE_LLAMA_SERVER=1`` (set by ``.ci/run``).
"""

from __future__ import annotations

import asyncio
import json
import logging
import os
import threading
import time
from pathlib import Path

import jsonschema
import pytest

from mangaka.devtools.tiny_models import write_model
from mangaka.errors import ContextOverflowError, GenerationError, InvalidOutputError
from mangaka.llm.base import PRESETS, CallContext
from mangaka.llm.openai import AuthError, OpenAICompatibleLLM
from mangaka.screenplay import ScreenplayRequest, validate_screenplay, write_screenplay
from mangaka.source import source_map
from mangaka.structured import generate_json
from tests.servers import Server, free_port, llama_server_binary

ROOT = Path(__file__).resolve().parents[2]
CHAPTER = (ROOT / "prompts" / "samples" / "demo_chapter.en.txt").read_text(encoding="utf-8")
SCHEMA = json.loads((ROOT / "schemas" / "screenplay.schema.json").read_text(encoding="utf-8"))
KEY = "right-key-5c1f"  # a test key: the tests check it never shows up in an error or a log


KINDS = ["llama_cpp.server", "llama-server"]
FLAVOR = {"llama_cpp.server": "llama-cpp-python", "llama-server": "llama-server"}


def need(kind: str) -> None:
    if kind == "llama-server" and llama_server_binary() is None:
        if os.environ.get("MANGAKA_REQUIRE_LLAMA_SERVER") == "1":
            pytest.fail(
                "llama-server is required but not built (python native/llama_server.py)", pytrace=False
            )
        pytest.skip("llama-server is not built: python native/llama_server.py")


@pytest.fixture(scope="module")
def roomy(tmp_path_factory) -> Path:
    folder = tmp_path_factory.mktemp("remote")
    return write_model(folder / "qwen35moe-32k.gguf", "qwen35moe", context_length=32768)


@pytest.fixture(scope="module", params=KINDS)
def server(request, roomy):
    need(request.param)
    s = Server(roomy, request.param).start()
    yield s
    s.stop()


def test_screenwriter_through_the_server_returns_a_schema_valid_screenplay(server):
    llm = OpenAICompatibleLLM(server.url)
    result = write_screenplay(
        llm, CHAPTER, ScreenplayRequest(panels=2, dialogue=2, sampling=PRESETS["greedy"])
    )
    data = result.screenplay.model_dump(mode="json")
    jsonschema.validate(data, SCHEMA)
    assert validate_screenplay(data) == []
    assert llm.flavor == FLAVOR[server.kind]  # found by asking /v1/models


# A chapter of 3 quoted lines (one "…," said Mei) and 2 names (Jun, Mei): 4 units.
GROUNDED = (
    "Rain drummed on the tin roof of the noodle stall. Mei wiped the counter and watched the street.\n\n"
    'Jun ducked under the awning, shaking water from his coat. "One bowl, the spicy one," Jun said.\n\n'
    '"You always order the spicy one," said Mei, reaching for the ladle.\n\n'
    'Jun laughed and sat on the last free stool. "Then I am a man of habit."\n'
)


class RecordingLLM(OpenAICompatibleLLM):
    """The backend as it is, keeping each call's schema and reply text (before the engine parses it)."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.calls: list[tuple[dict | None, str]] = []

    def complete(self, messages, *, schema=None, **kwargs):
        done = super().complete(messages, schema=schema, **kwargs)
        self.calls.append((schema, done.text))
        return done


def test_a_grounded_screenplay_through_the_server_quotes_the_chapter_verbatim(server):
    llm = RecordingLLM(server.url)
    result = write_screenplay(llm, GROUNDED, ScreenplayRequest(language="en", panels=3, dialogue="auto"))
    data = result.screenplay.model_dump(mode="json")
    jsonschema.validate(data, SCHEMA)
    assert validate_screenplay(data) == []
    m = source_map(GROUNDED, "en")
    assert len(m.lines) == 3 and len(m.units) == 4
    sp = result.screenplay
    quoted = [line for line in sp.dialogue if line.quote is not None]
    assert [(q.quote, q.line) for q in quoted] == [(n.number, n.text) for n in m.lines]  # all 3, in order
    assert [c.name for c in sp.characters] == [c.name for c in m.names] == ["Jun", "Mei"]
    sources = [p.source for p in sp.panels]
    assert len(sp.panels) == 3 and all(s is not None for s in sources)
    covered = [unit for first, last in sources for unit in range(first, last + 1)]
    assert covered == list(range(1, len(m.units) + 1)), sources  # units 1..n, in order, each once
    # The grammar reached the server: a random-weight model's raw reply to each call is JSON valid
    # against the schema sent, with every quote number (a const) written, in order, at the first try.
    assert [a.call for a in result.attempts] == ["screenplay cast", "screenplay script"], result.attempts
    for schema, text in llm.calls:
        jsonschema.Draft202012Validator(schema).validate(json.loads(text))
    sent, reply = llm.calls[-1]
    assert "$defs" in sent and "prefixItems" in sent["properties"]["dialogue"]  # what the server had to take
    script = json.loads(reply)
    assert [line["quote"] for line in script["dialogue"]] == [1, 2, 3]
    assert llm.flavor == FLAVOR[server.kind]


def test_progress_streams_and_cancel_stops(server):
    llm = OpenAICompatibleLLM(server.url)
    seen: list[int] = []
    done = llm.complete(
        [{"role": "user", "content": "Tell a story."}],
        max_tokens=40,
        context=CallContext(on_progress=lambda n, t: seen.append(n)),
    )
    assert seen == sorted(seen) and len(seen) >= 10 and done.finish_reason in ("length", "stop")
    from mangaka.errors import Cancelled

    with pytest.raises(Cancelled):
        llm.complete(
            [{"role": "user", "content": "Tell a story."}],
            max_tokens=400,
            context=CallContext(cancel=lambda: len(seen) > 50, on_progress=lambda n, t: seen.append(n)),
        )


@pytest.mark.parametrize("kind", KINDS)
def test_a_server_killed_mid_stream_and_started_again_is_retried(roomy, kind, caplog):
    """The server is killed a few tokens into a long answer and started again a second later;
    the call retries and returns the whole answer. A loaded machine can stall the client until
    the server has sent everything, so that the kill lands after the stream: then the scenario
    runs again (at most 3 times) until a kill lands mid-stream."""
    need(kind)
    s = Server(roomy, kind).start()
    restarts: list[threading.Thread] = []
    schema = {
        "type": "object",
        "properties": {"story": {"type": "string", "pattern": "^[a-z ]{1500,2000}$"}},
        "required": ["story"],
        "additionalProperties": False,
    }
    try:
        llm = OpenAICompatibleLLM(s.url, backoff=0.5, retries=6)
        for _attempt in range(3):
            killed = threading.Event()

            def on_progress(n: int, _total: int, killed: threading.Event = killed) -> None:
                if n == 5 and not killed.is_set():
                    killed.set()
                    s.kill()  # mid-stream
                    restart = threading.Thread(target=lambda: (time.sleep(1.0), s.start()), daemon=True)
                    restarts.append(restart)
                    restart.start()

            caplog.clear()
            with caplog.at_level(logging.WARNING, logger="mangaka.llm.openai"):
                data, _ = generate_json(
                    llm,
                    [{"role": "user", "content": "A story."}],
                    schema,
                    max_tokens=2500,
                    sampling=PRESETS["greedy"],
                    context=CallContext(on_progress=on_progress),
                )
            assert killed.is_set()
            assert 1500 <= len(data["story"]) <= 2000
            for restart in restarts:
                restart.join(130)  # the server is up again before the next attempt
            if any("retry 1 of 6" in r.message for r in caplog.records):
                break
        else:
            pytest.fail("the kill never landed mid-stream in 3 attempts")
    finally:
        for restart in restarts:
            restart.join(130)  # a restart still pending would outlive the test
        s.stop()


@pytest.mark.parametrize("kind", KINDS)
def test_a_wrong_key_is_a_clear_401_that_never_shows_the_key(roomy, kind, monkeypatch, caplog):
    need(kind)
    s = Server(roomy, kind, api_key=KEY).start()
    try:
        monkeypatch.setenv("MANGAKA_TEST_KEY", "wrong-key-7e2a")
        llm = OpenAICompatibleLLM(s.url, api_key_env="MANGAKA_TEST_KEY")
        with caplog.at_level(logging.DEBUG), pytest.raises(AuthError) as err:
            llm.complete([{"role": "user", "content": "hi"}], max_tokens=4)
        message = str(err.value)
        assert "401" in message and "MANGAKA_TEST_KEY" in message
        assert "wrong-key-7e2a" not in message and "wrong-key-7e2a" not in caplog.text
        monkeypatch.setenv("MANGAKA_TEST_KEY", KEY)
        assert llm.complete([{"role": "user", "content": "hi"}], max_tokens=4).usage.completion_tokens > 0
        monkeypatch.delenv("MANGAKA_TEST_KEY")
        with pytest.raises(AuthError, match="MANGAKA_TEST_KEY is not set"):
            llm.complete([{"role": "user", "content": "hi"}], max_tokens=4)
    finally:
        s.stop()


def test_a_wrong_base_url_is_a_404_naming_the_fix(server):
    llm = OpenAICompatibleLLM(server.url + "/nope", retries=0)
    with pytest.raises(GenerationError, match="404") as err:
        llm.complete([{"role": "user", "content": "hi"}], max_tokens=4)
    assert "check the base URL" in str(err.value) and "/nope" in str(err.value)


def test_a_prompt_longer_than_the_servers_context_is_an_error_at_once(server):
    # Both servers run with an 8192-token context; this prompt is about 23,000 tokens of the tiny
    # model's vocabulary. llama-server answers 400 naming the context (ContextOverflowError);
    # llama-cpp-python's server ends the stream without a word, which the client names as such.
    llm = OpenAICompatibleLLM(server.url, retries=0)
    prompt = " ".join(f"w{i % 97}q{i % 89}" for i in range(4000))
    expected = ContextOverflowError if server.kind == "llama-server" else GenerationError
    with pytest.raises(expected) as err:
        llm.complete([{"role": "user", "content": prompt}], max_tokens=8)
    message = str(err.value)
    assert "context" in message and "shorten the chapter" in message, message
    assert server.proc.poll() is None  # the server is still up, and answers the next request
    assert llm.complete([{"role": "user", "content": "hi"}], max_tokens=4).usage.completion_tokens > 0


def test_a_key_given_in_place_of_a_variable_name_is_refused_without_echoing_it():
    with pytest.raises(Exception, match="NAME of an environment variable") as err:
        OpenAICompatibleLLM("http://127.0.0.1:1", api_key_env="sk-abc.def/123")
    assert "sk-abc" not in str(err.value)


# A fake, named as such: a server that always streams the same non-JSON reply.


def _fake_server(reply: str) -> tuple[str, threading.Event]:
    from aiohttp import web

    port = free_port()
    stop = threading.Event()

    async def models(_request):
        return web.json_response({"data": [{"id": "fake", "owned_by": "llamacpp"}]})

    async def chat(request):
        response = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
        await response.prepare(request)
        for piece in (reply[: len(reply) // 2], reply[len(reply) // 2 :]):
            chunk = {"choices": [{"delta": {"content": piece}, "finish_reason": None}]}
            await response.write(f"data: {json.dumps(chunk)}\n\n".encode())
        end = {"choices": [{"delta": {}, "finish_reason": "stop"}]}
        await response.write(f"data: {json.dumps(end)}\n\ndata: [DONE]\n\n".encode())
        return response

    def serve() -> None:
        async def main() -> None:
            app = web.Application()
            app.router.add_get("/v1/models", models)
            app.router.add_post("/v1/chat/completions", chat)
            runner = web.AppRunner(app)
            await runner.setup()
            await web.TCPSite(runner, "127.0.0.1", port).start()
            while not stop.is_set():
                await asyncio.sleep(0.05)
            await runner.cleanup()

        asyncio.run(main())

    threading.Thread(target=serve, daemon=True).start()
    time.sleep(0.5)
    return f"http://127.0.0.1:{port}", stop


TITLE = {
    "type": "object",
    "properties": {"title": {"type": "string", "maxLength": 20}},
    "required": ["title"],
    "additionalProperties": False,
}


def test_invalid_json_on_every_try_is_the_same_error_as_in_process():
    url, stop = _fake_server("Sure! Here is your screenplay: {title: 'oops'")
    try:
        llm = OpenAICompatibleLLM(url)
        with pytest.raises(InvalidOutputError) as err:
            generate_json(llm, [{"role": "user", "content": "x"}], TITLE, max_attempts=2)
        assert len(err.value.attempts) == 2
        assert llm.flavor == "llama-server"
    finally:
        stop.set()


def test_a_book_keeps_n_chapters_in_flight_and_resumes(roomy, tmp_path):
    need("llama-server")
    s = Server(roomy, "llama-server", parallel=3).start()
    try:
        book = tmp_path / "book.txt"
        book.write_text(
            "Chapter 1\n\nLin ran to the ferry.\n\nChapter 2\n\nA lantern floated by.\n\n"
            "Chapter 3\n\nLin hung the lantern by the door.\n",
            encoding="utf-8",
        )
        llm = OpenAICompatibleLLM(s.url, concurrency=3)
        from mangaka.batch.book import write_book

        out = tmp_path / "screenplays"
        request = ScreenplayRequest(panels=2, dialogue=2, sampling=PRESETS["greedy"])
        done = write_book(llm, book, out, concurrency=3, request=request)
        assert done.ok and [p.name[:2] for p in done.written] == ["01", "02", "03"]
        assert llm.max_in_flight == 3  # three chapters' requests were at the server at once
        for path in done.written:
            assert validate_screenplay(json.loads(path.read_text(encoding="utf-8"))) == []
        again = write_book(llm, book, out, concurrency=3, request=request)
        assert again.written == [] and len(again.skipped) == 3  # a rerun resumes: nothing written twice
    finally:
        s.stop()
