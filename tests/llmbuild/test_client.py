"""BuilderClient: lenient JSON parsing, corrections, response_format fallback, cache replay, budget, metrics."""

from __future__ import annotations

import asyncio
import json
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from chat_server import Raw, chat_server, completion
from envsynth.llm import ChatResponse, Fail, Message, OpenAIChat, RetryPolicy, ScriptedProvider, Usage
from envsynth.llm.types import message_text
from envsynth.llmbuild.client import (
    BudgetExceeded,
    BuilderClient,
    CallFailed,
    EndpointUnavailable,
    PromptTooLong,
    StructuredOutputError,
    estimate_tokens,
    extract_json_object,
)

GOOD = '{"domain": "bakery", "tools": [{"name": "list_cakes", "params": ["flavour"]}]}'


class Tool(BaseModel):
    name: str
    params: list[str] = []


class Design(BaseModel):
    domain: str
    tools: list[Tool]


def ask(text: str) -> list[Message]:
    return [{"role": "system", "content": "You design tool-use domains."}, {"role": "user", "content": text}]


class Recorder:
    """A ChatModel that records the params of every request and forwards to a ScriptedProvider."""

    def __init__(self, inner: ScriptedProvider) -> None:
        self.inner, self.model, self.params_seen = inner, inner.model, []

    @property
    def usage(self) -> Usage:
        return self.inner.usage

    async def complete(self, messages: list[Message], tools: list[Message] | None = None, **params: Any) -> ChatResponse:
        self.params_seen.append(params)
        return await self.inner.complete(messages, tools, **params)


@pytest.mark.parametrize(
    "reply",
    [
        GOOD,
        f"```json\n{GOOD}\n```",
        f"Here is the design:\n```\n{GOOD}\n```\nHope it helps.",
        f"Sure! The design is {GOOD} -- let me know if you need more.",
        '{"domain": "bakery", "tools": [{"name": "list_cakes", "params": ["flavour",],},],}',
        f"<think>maybe {{draft}} first</think>\n{GOOD}",
        'Use the {placeholder} form: {"domain": "bakery", "tools": [{"name": "list_cakes", "params": ["flavour"]}]}',
    ],
    ids=["plain", "json-fence", "bare-fence-in-prose", "prose", "trailing-commas", "think-block", "braces-in-prose"],
)
def test_replies_parse_leniently(reply: str) -> None:
    llm = ScriptedProvider([reply])
    client = BuilderClient(llm, structured="prompt")
    design = asyncio.run(client.structured("designer", ask("bakery"), Design))
    assert design == Design(domain="bakery", tools=[Tool(name="list_cakes", params=["flavour"])])
    assert client.stats["designer"].invalid_outputs == 0


def test_strings_with_braces_commas_and_escapes_survive() -> None:
    text = 'ok: {"a": "x, }\\" {", "b": [1, 2,],}'
    assert extract_json_object(text) == {"a": 'x, }" {', "b": [1, 2]}


@pytest.mark.parametrize(
    ("reply", "message"),
    [
        ("", "empty"),
        ("I cannot help with that.", "no JSON object"),
        ('[{"domain": "x"}]', "got a JSON array"),
        ('{"domain": "bakery", "tools": [', "not valid JSON"),
    ],
)
def test_unusable_replies_are_rejected_with_a_clear_error(reply: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        extract_json_object(reply)


def test_prompt_mode_puts_the_schema_in_the_system_message_and_sends_no_response_format() -> None:
    rec = Recorder(ScriptedProvider([GOOD]))
    asyncio.run(BuilderClient(rec, structured="prompt").structured("designer", ask("bakery"), Design))
    system = rec.inner.requests[0][0]
    assert system["role"] == "system" and system["content"].startswith("You design tool-use domains.")
    assert "ONE JSON object" in system["content"] and '"tools"' in system["content"]
    assert [sorted(p) for p in rec.params_seen] == [["max_tokens"]]  # no response_format; no sampling set


def test_json_schema_mode_sends_response_format() -> None:
    rec = Recorder(ScriptedProvider([GOOD]))
    client = BuilderClient(rec, structured="json_schema", temperature=0.2)
    asyncio.run(client.structured("designer", ask("bakery"), Design))
    (params,) = rec.params_seen
    assert params["temperature"] == 0.2
    assert params["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Design", "schema": Design.model_json_schema(), "strict": False},
    }
    assert rec.inner.requests[0] == ask("bakery")  # no instruction added in this mode


def test_auto_falls_back_to_prompt_mode_once_and_remembers() -> None:
    rec = Recorder(ScriptedProvider([Fail(400, "response_format is not supported"), GOOD, GOOD]))
    client = BuilderClient(rec)
    assert client.metrics()["structured_mode"] == "json_schema"
    asyncio.run(client.structured("designer", ask("bakery"), Design))
    asyncio.run(client.structured("designer", ask("bakery 2"), Design))
    assert ["response_format" in p for p in rec.params_seen] == [True, False, False]
    assert client.metrics()["structured_mode"] == "prompt" and client.stats["designer"].calls == 3


def test_json_schema_mode_does_not_fall_back() -> None:
    client = BuilderClient(ScriptedProvider([Fail(400, "response_format is not supported")]), structured="json_schema")
    with pytest.raises(EndpointUnavailable) as err:
        asyncio.run(client.structured("designer", ask("bakery"), Design))
    assert err.value.error.status == 400 and client.structured_mode == "json_schema"


def test_an_invalid_reply_is_sent_back_with_its_error_and_corrected() -> None:
    bad = '{"domain": "bakery", "tools": [{"params": []}]}'
    llm = ScriptedProvider([bad, GOOD])
    client = BuilderClient(llm, structured="prompt")
    design = asyncio.run(client.structured("designer", ask("bakery"), Design))
    assert design.tools[0].name == "list_cakes"
    assert client.stats["designer"].invalid_outputs == 1 and client.stats["designer"].calls == 2
    second = llm.requests[1]
    assert second[-2] == {"role": "assistant", "content": bad}
    assert second[-1]["role"] == "user" and "tools[0].name: Field required" in second[-1]["content"]
    assert "corrected JSON object" in second[-1]["content"]


def test_always_invalid_raises_after_max_invalid_plus_one_attempts() -> None:
    llm = ScriptedProvider(lambda messages, tools, i: '{"domain": 3}')
    client = BuilderClient(llm, structured="prompt", max_invalid=2)
    with pytest.raises(StructuredOutputError) as err:
        asyncio.run(client.structured("designer", ask("bakery"), Design))
    assert (err.value.role, err.value.attempts, len(err.value.errors)) == ("designer", 3, 3)
    assert "domain: Input should be a valid string (got 3)" in err.value.errors[-1] and "tools: Field required" in err.value.errors[-1]
    assert len(llm.requests) == 3 and client.stats["designer"].invalid_outputs == 3


def replier(messages: list[Message], tools: Any, i: int) -> str:
    """Answers by the request: designs (invalid on the first try for 'broken'), and text for the writer."""
    last = message_text(messages[-1]["content"])
    if last.startswith("write"):
        return f"task text for {last}"
    if "broken" in last and not last.startswith("Your reply"):
        return '{"domain": "broken"}'
    name = "broken" if last.startswith("Your reply") else last
    return json.dumps({"domain": name, "tools": [{"name": f"{name}_tool", "params": []}]})


async def pipeline(client: BuilderClient) -> list[Any]:
    """Three designs concurrently (one needing a correction), then three writer texts in order."""
    designs = await asyncio.gather(*(client.structured("designer", ask(d), Design) for d in ("bakery", "broken", "clinic")))
    texts = [await client.text("writer", ask(f"write {d.domain}")) for d in designs]
    return [*designs, *texts]


def check_metrics_add_up(client: BuilderClient) -> None:
    m = client.metrics()
    for key in m["total"]:
        assert m["total"][key] == sum(r[key] for r in m["roles"].values())
    assert m["spent_tokens"] == m["total"]["total_tokens"] == client.spent_tokens


def test_a_second_client_on_the_same_cache_replays_without_model_calls(tmp_path: Path) -> None:
    first_llm = ScriptedProvider(replier)
    first = BuilderClient(first_llm, cache_dir=tmp_path, structured="prompt")
    results = asyncio.run(pipeline(first))
    assert results[1].domain == "broken" and results[3] == "task text for write bakery"
    assert first.stats["designer"].calls == 4 and first.stats["writer"].calls == 3
    assert first.spent_tokens == first_llm.usage.total_tokens > 0
    check_metrics_add_up(first)

    replay_llm = ScriptedProvider([])
    replay = BuilderClient(replay_llm, cache_dir=tmp_path, structured="prompt")
    assert asyncio.run(pipeline(replay)) == results
    assert replay_llm.requests == [] and replay_llm.usage.requests == 0
    m = replay.metrics()
    assert m["total"]["calls"] == 0 and m["total"]["cache_hits"] == 7 and m["spent_tokens"] == 0
    assert m["roles"]["designer"]["invalid_outputs"] == 0  # the replayed invalid reply is a cache hit: the endpoint sent nothing
    assert len(list(tmp_path.glob("*/*.json"))) == 7 and not list(tmp_path.glob("*/.*"))


def test_a_corrupt_cache_file_is_a_miss_and_is_rewritten(tmp_path: Path) -> None:
    asyncio.run(BuilderClient(ScriptedProvider(["hello"]), cache_dir=tmp_path).text("writer", ask("hi")))
    (path,) = tmp_path.glob("*/*.json")
    assert path.parent.name == path.stem[:2]
    path.write_text('{"message": ')
    llm = ScriptedProvider(["hello again"])
    assert asyncio.run(BuilderClient(llm, cache_dir=tmp_path).text("writer", ask("hi"))) == "hello again"
    assert json.loads(path.read_text())["message"]["content"] == "hello again"


def test_the_cache_key_covers_model_params_and_schema(tmp_path: Path) -> None:
    llm = ScriptedProvider(lambda m, t, i: f"reply {i}")
    asyncio.run(BuilderClient(llm, cache_dir=tmp_path).text("r", ask("hi")))
    asyncio.run(BuilderClient(llm, cache_dir=tmp_path, temperature=0.5).text("r", ask("hi")))
    asyncio.run(BuilderClient(ScriptedProvider(lambda m, t, i: "x", model="other"), cache_dir=tmp_path).text("r", ask("hi")))
    asyncio.run(BuilderClient(llm, cache_dir=tmp_path).text("r", ask("hi")))
    assert len(llm.requests) == 2 and len(list(tmp_path.glob("*/*.json"))) == 3


def test_the_budget_stops_a_run_and_a_rerun_with_more_continues_from_the_cache(tmp_path: Path) -> None:
    def script(messages: list[Message], tools: Any, i: int) -> ChatResponse:
        return ChatResponse({"role": "assistant", "content": f"step {messages[-1]['content']}"}, Usage(15, 10))

    async def steps(client: BuilderClient) -> list[str]:
        return [await client.text("writer", ask(str(n))) for n in range(5)]

    # each request reserves its prompt estimate (22) and max_tokens (16): 38; each spends 25
    small_llm = ScriptedProvider(script)
    small = BuilderClient(small_llm, cache_dir=tmp_path, max_tokens_total=110, max_output_tokens=16)
    assert estimate_tokens(ask("0")) + 16 == 38
    with pytest.raises(BudgetExceeded, match="larger --max-tokens-total") as err:
        asyncio.run(steps(small))
    assert (err.value.spent, err.value.budget, err.value.needed) == (75, 110, 38) and len(small_llm.requests) == 3
    assert small.spent_tokens <= 110  # never over: 75 + 38 > 110, so the fourth was not sent
    with pytest.raises(BudgetExceeded):  # a stopped client sends nothing more, even what would fit
        asyncio.run(small.text("writer", ask("x")))

    big_llm = ScriptedProvider(script)
    big = BuilderClient(big_llm, cache_dir=tmp_path, max_tokens_total=110, max_output_tokens=16)  # the cached three are free
    assert asyncio.run(steps(big)) == [f"step {n}" for n in range(5)]
    assert [m[-1]["content"] for m in big_llm.requests] == ["3", "4"]
    assert big.stats["writer"].cache_hits == 3 and big.spent_tokens == 50
    check_metrics_add_up(big)


def test_retries_and_failures_are_counted_and_model_errors_propagate() -> None:
    client = BuilderClient(ScriptedProvider([Fail(429), "fine", Fail(500), Fail(500)], retry=RetryPolicy(max_retries=1, sleep=_no_sleep)))
    assert asyncio.run(client.text("writer", ask("a"))) == "fine"
    with pytest.raises(EndpointUnavailable) as err:  # no fallback: the build stops
        asyncio.run(client.text("writer", ask("b")))
    assert err.value.error.status == 500 and "HTTP 500" in str(err.value)
    assert client.stats["writer"].retries == 2 and client.stats["writer"].calls == 2 and client.stats["writer"].failures == 1
    assert client.metrics()["total"]["requests"] == 4


async def _no_sleep(_seconds: float) -> None:
    return None


# --- a real OpenAIChat against a local server without response_format support ---------------


class NoResponseFormatServer:
    """/v1/chat/completions on 127.0.0.1: 400 to any request carrying response_format, else a design in prose."""

    def __init__(self) -> None:
        self.requests: list[dict[str, Any]] = []
        self.lock = threading.Lock()

    def reply(self, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        with self.lock:
            self.requests.append(body)
        if "response_format" in body:
            return 400, {"error": {"message": "response_format is not supported", "type": "invalid_request_error"}}
        domain = body["messages"][-1]["content"]
        content = f'Here it is:\n```json\n{{"domain": "{domain}", "tools": [{{"name": "t", "params": [],}}]}}\n```'
        return 200, completion(body["model"], {"role": "assistant", "content": content}, prompt_tokens=50, completion_tokens=20)


@pytest.fixture
def server() -> Iterator[tuple[str, NoResponseFormatServer]]:
    scripted = NoResponseFormatServer()

    def route(path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        return scripted.reply(body) if path == "/v1/chat/completions" else (404, {"error": {"message": "no route"}})

    with chat_server(route) as url:
        yield url, scripted


def test_openai_client_against_a_server_without_response_format(
    server: tuple[str, NoResponseFormatServer], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytest.importorskip("openai")
    url, scripted = server
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)

    async def run(client: BuilderClient) -> list[Design]:
        try:
            return [await client.structured("designer", ask(d), Design) for d in ("bakery", "clinic", "garage")]
        finally:
            await client.chat.aclose()  # type: ignore[attr-defined]

    def chat() -> OpenAIChat:
        return OpenAIChat("m", base_url=url, retry=RetryPolicy(max_retries=1, base=0.01, cap=0.01))

    client = BuilderClient(chat(), cache_dir=tmp_path)
    designs = asyncio.run(run(client))
    assert [d.domain for d in designs] == ["bakery", "clinic", "garage"]
    assert ["response_format" in b for b in scripted.requests] == [True, False, False, False]
    assert all("ONE JSON object" in b["messages"][0]["content"] for b in scripted.requests[1:])
    m = client.metrics()
    assert m["structured_mode"] == "prompt" and m["roles"]["designer"]["calls"] == 4
    assert m["spent_tokens"] == 3 * 70 and m["total"]["invalid_outputs"] == 0

    replay = BuilderClient(chat(), cache_dir=tmp_path)  # the rejection is cached too: no request at all
    assert asyncio.run(run(replay)) == designs
    assert len(scripted.requests) == 4 and replay.metrics()["structured_mode"] == "prompt"
    assert replay.stats["designer"].cache_hits == 4 and replay.stats["designer"].calls == 0

    explicit = BuilderClient(chat(), cache_dir=tmp_path, structured="json_schema")  # asks the server, cache or not
    with pytest.raises(EndpointUnavailable) as err:
        asyncio.run(run(explicit))
    assert err.value.error.status == 400 and len(scripted.requests) == 5


# --- context length, endpoint failures ------------------------------------------------------

CONTEXT_400 = (
    "This model's maximum context length is 8192 tokens. However, you requested 9120 tokens "
    "(5024 in the messages, 4096 in the completion). Please reduce the length of the messages or completion."
)


def test_a_context_length_400_is_not_a_response_format_rejection(tmp_path: Path) -> None:
    rec = Recorder(ScriptedProvider([Fail(400, CONTEXT_400), GOOD]))
    client = BuilderClient(rec, cache_dir=tmp_path)
    with pytest.raises(PromptTooLong, match=r"the server refused it: .*maximum context length"):
        asyncio.run(client.structured("designer", ask("bakery"), Design))
    assert client.structured_mode == "json_schema" and len(rec.params_seen) == 1  # no switch, no second try in prompt mode
    assert not list(tmp_path.glob("*/*.json"))  # nothing cached: a rerun asks again
    assert client.stats["designer"].failures == 1 and client.stopped is None
    design = asyncio.run(client.structured("designer", ask("bakery"), Design))  # the next call still asks for json_schema
    assert design.domain == "bakery" and "response_format" in rec.params_seen[-1]


def test_a_prompt_over_the_budget_is_not_sent() -> None:
    llm = ScriptedProvider([GOOD])
    client = BuilderClient(llm, context_tokens=2048)
    with pytest.raises(PromptTooLong, match="over the prompt budget of 1024 tokens"):
        asyncio.run(client.structured("designer", ask("x" * 4000), Design))
    assert llm.requests == [] and client.stats["designer"].calls == 0


def test_a_correction_echoes_only_part_of_a_long_invalid_reply() -> None:
    long_invalid = '{"domain": "bakery", "tools": [' + ", ".join(['{"name": "t", "params": ["p"]}'] * 2000)  # cut off
    rec = Recorder(ScriptedProvider([long_invalid, GOOD]))
    client = BuilderClient(rec, structured="prompt")
    asyncio.run(client.structured("designer", ask("bakery"), Design))
    second = rec.inner.requests[1]
    assert len(long_invalid) > 60_000 and len(second[2]["content"]) <= 4000 and "characters omitted" in second[2]["content"]
    assert client.fits(second) and rec.params_seen[1]["max_tokens"] == 8192 - estimate_tokens(second)


def test_requests_carry_max_tokens_temperature_and_seed() -> None:
    rec = Recorder(ScriptedProvider(["a", "b"]))
    client = BuilderClient(rec, temperature=0.3, seed=7, max_output_tokens=1000)
    asyncio.run(client.text("writer", ask("hi")))
    assert rec.params_seen == [{"temperature": 0.3, "seed": 7, "max_tokens": 1000}]
    assert client.metrics()["params"] == {"temperature": 0.3, "seed": 7} and client.metrics()["max_output_tokens"] == 1000


def test_a_role_with_a_fallback_gets_call_failed_until_the_endpoint_is_deemed_down() -> None:
    llm = ScriptedProvider([Fail(503)] * 20, retry=RetryPolicy(max_retries=1, sleep=_no_sleep))
    client = BuilderClient(llm)
    for _ in range(2):
        with pytest.raises(CallFailed):
            asyncio.run(client.text("gating", ask("p?"), fallback=True))
    with pytest.raises(EndpointUnavailable, match=r"3 calls in a row failed"):
        asyncio.run(client.text("gating", ask("p?"), fallback=True))
    with pytest.raises(EndpointUnavailable):  # stopped: nothing more is sent
        asyncio.run(client.text("writer", ask("hi")))
    assert len(llm.requests) == 6 and client.metrics()["total"]["requests"] == 6


@pytest.mark.parametrize("content_type", ["application/json", "text/html"])
def test_an_html_body_under_a_200_is_retried(content_type: str, monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("openai")
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")
    seen: list[int] = []

    def route(path: str, body: dict[str, Any]) -> tuple[int, Any]:
        seen.append(1)
        if len(seen) == 1:
            return 200, Raw("<html><body>502 Bad Gateway</body></html>", content_type)
        return 200, completion(body["model"], {"role": "assistant", "content": "fine"})

    async def go(chat: OpenAIChat) -> str:
        try:
            return await BuilderClient(chat).text("writer", ask("hi"))
        finally:
            await chat.aclose()

    with chat_server(route) as url:
        chat = OpenAIChat("m", base_url=url, retry=RetryPolicy(max_retries=2, base=0.001, cap=0.001))
        assert asyncio.run(go(chat)) == "fine"
    assert len(seen) == 2 and chat.usage.retries == 1
