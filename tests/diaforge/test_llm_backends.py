"""Tests for the chat backends: the OpenAI-compatible backend against a local fault-injecting
server (retries, timeouts, cache, accounting, concurrency), the factory, and the hf backend on a
tiny random Llama with a ChatML tokenizer built on the spot."""

from __future__ import annotations

import asyncio
import json
import logging
import socket
import time
from typing import Any

import pytest

from diaforge.bench.fake_server import FaultyOpenAIServer
from diaforge.llm.base import BackendConfigError, BackendError, ChatBackend, GenerationRequest
from diaforge.llm.cache import RequestCache, is_cacheable, make_key
from diaforge.llm.factory import BackendSpec, build_backend
from diaforge.llm.openai_backend import OpenAIBackend, _retry_after_seconds

USER = [{"role": "user", "content": "what is the capital of france"}]


def run(coro):
    return asyncio.run(coro)


async def _chat_and_close(backend: OpenAIBackend, *calls: dict[str, Any]):
    try:
        return [await backend.chat(USER, **kw) for kw in calls]
    finally:
        await backend.aclose()


def _backend(server: FaultyOpenAIServer, **kwargs: Any) -> OpenAIBackend:
    kwargs.setdefault("backoff_base", 0.01)
    kwargs.setdefault("timeout", 5.0)
    return OpenAIBackend("test-model", base_url=server.base_url, **kwargs)


@pytest.fixture(autouse=True)
def _no_real_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


# --------------------------------------------------------------------------------------------
# OpenAI-compatible backend
# --------------------------------------------------------------------------------------------


def test_success_usage_cost_and_request_fields():
    prices = {"test-model": {"input_per_million": 1.0, "output_per_million": 2.0}}
    with FaultyOpenAIServer(lambda req: "the capital is paris") as server:
        backend = _backend(server, prices=prices, extra_body={"top_k": 5})
        first, second = run(
            _chat_and_close(backend, {"temperature": 0.2, "seed": 7, "max_tokens": 32, "stop": ["END"]}, {})
        )
    assert isinstance(backend, ChatBackend)
    assert first.text == "the capital is paris"
    assert first.model == "test-model"
    assert first.tool_calls is None and first.reasoning is None
    # The server counts words: 6 in the prompt, 4 in the reply.
    assert (first.usage.prompt_tokens, first.usage.completion_tokens) == (6, 4)
    assert first.usage.requests == 1 and first.usage.retries == 0
    assert first.usage.cost_usd == pytest.approx((6 * 1.0 + 4 * 2.0) / 1e6)
    assert backend.usage.requests == 2
    assert backend.usage.prompt_tokens == 12 and backend.usage.completion_tokens == 8
    assert backend.usage.cost_usd == pytest.approx(2 * (6 + 8) / 1e6)
    sent = server.received[0]
    assert sent["model"] == "test-model" and sent["messages"] == USER
    assert sent["temperature"] == 0.2 and sent["seed"] == 7
    assert sent["max_tokens"] == 32 and sent["stop"] == ["END"] and sent["top_k"] == 5
    # temperature=None falls back to the backend's default_temperature.
    assert server.received[1]["temperature"] == 0.7
    assert "seed" not in server.received[1] and "max_tokens" not in server.received[1]


def test_unknown_price_counts_zero_and_warns_once(caplog):
    with FaultyOpenAIServer(lambda req: "ok") as server:
        backend = OpenAIBackend("model-without-price", base_url=server.base_url, prices={"other": {}})
        with caplog.at_level(logging.WARNING, logger="diaforge.llm.openai_backend"):
            results = run(_chat_and_close(backend, {}, {}))
    assert all(r.usage.cost_usd == 0 for r in results)
    warnings = [r for r in caplog.records if "model-without-price" in r.getMessage()]
    assert len(warnings) == 1


def test_native_tool_calls_and_reasoning_are_returned():
    reply = {
        "content": None,
        "reasoning_content": "the user wants the weather",
        "tool_calls": [
            {"name": "get_weather", "arguments": {"city": "Paris"}},
            {"id": "x", "type": "function", "function": {"name": "broken", "arguments": "{not json"}},
        ],
    }
    with FaultyOpenAIServer(lambda req: reply) as server:
        (result,) = run(_chat_and_close(_backend(server), {"tools": [{"type": "function", "function": {}}]}))
    assert result.text == ""
    assert result.reasoning == "the user wants the weather"
    assert result.tool_calls == [
        {"name": "get_weather", "arguments": {"city": "Paris"}},
        {"name": "broken", "arguments": "{not json"},
    ]
    assert server.received[0]["tools"] == [{"type": "function", "function": {}}]


def test_429_with_retry_after_is_retried_without_backoff():
    # backoff_base is huge: finishing fast proves the server's Retry-After: 0 was used instead.
    with FaultyOpenAIServer(lambda req: "ok", fault_plan={0: "429", 1: "429"}) as server:
        backend = _backend(server, backoff_base=30.0, backoff_max=30.0)
        start = time.perf_counter()
        (result,) = run(_chat_and_close(backend, {}))
        elapsed = time.perf_counter() - start
    assert result.text == "ok"
    assert result.usage.retries == 2 and backend.usage.retries == 2
    assert server.stats.faults["429"] == 2 and server.stats.requests == 3
    assert elapsed < 5


def test_500s_then_success():
    with FaultyOpenAIServer(lambda req: "ok", fault_plan=["500", "503", "502"]) as server:
        (result,) = run(_chat_and_close(_backend(server), {}))
    assert result.text == "ok" and result.usage.retries == 3
    assert server.stats.requests == 4 and server.stats.served == 1


def test_timeout_then_success():
    with FaultyOpenAIServer(lambda req: "ok", fault_plan={0: "timeout"}) as server:
        backend = _backend(server, timeout=0.5)
        start = time.perf_counter()
        (result,) = run(_chat_and_close(backend, {}))
        elapsed = time.perf_counter() - start
    assert result.text == "ok" and result.usage.retries == 1
    assert server.stats.faults["timeout"] == 1
    assert 0.5 <= elapsed < 5


def test_dropped_connection_is_retried():
    with FaultyOpenAIServer(lambda req: "ok", fault_plan={0: "disconnect"}) as server:
        (result,) = run(_chat_and_close(_backend(server), {}))
    assert result.text == "ok" and result.usage.retries == 1


def test_persistent_500_fails_after_all_attempts():
    with FaultyOpenAIServer(lambda req: "ok", fault_plan=lambda i, req: "500") as server:
        backend = _backend(server, max_retries=3)
        with pytest.raises(BackendError, match=r"after 4 attempts: HTTP 500"):
            run(_chat_and_close(backend, {}))
    assert server.stats.requests == 4
    assert backend.usage.retries == 3 and backend.usage.requests == 0


@pytest.mark.parametrize("status", ["400", "404", "401"])
def test_other_4xx_fail_at_once(status):
    with (
        FaultyOpenAIServer(lambda req: "ok", fault_plan={0: status}) as server,
        pytest.raises(BackendError, match=f"HTTP {status}") as info,
    ):
        run(_chat_and_close(_backend(server, max_retries=5), {}))
    assert "injected fault" in str(info.value)  # the server's own message is kept
    assert server.stats.requests == 1


def test_missing_api_key_for_real_openai():
    with pytest.raises(BackendConfigError, match="OPENAI_API_KEY is not set: export it, or point base_url"):
        OpenAIBackend("gpt-4o-mini")
    with pytest.raises(BackendConfigError, match="MY_KEY is not set"):
        OpenAIBackend("gpt-4o-mini", api_key_env="MY_KEY")


def test_key_comes_from_the_environment(monkeypatch):
    monkeypatch.setenv("MY_KEY", "sk-test")
    backend = OpenAIBackend("gpt-4o-mini", api_key_env="MY_KEY")
    assert backend._client.api_key == "sk-test"
    assert backend._max_tokens_field == "max_completion_tokens"
    run(backend.aclose())
    # A local server needs no key: a placeholder is sent.
    local = OpenAIBackend("m", base_url="http://127.0.0.1:1/v1")
    assert local._client.api_key and local._max_tokens_field == "max_tokens"
    run(local.aclose())


def test_bad_base_url_is_a_config_error():
    with pytest.raises(BackendConfigError, match="must start with http"):
        OpenAIBackend("m", base_url="localhost:8000/v1")


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def test_check_names_an_unreachable_url():
    port = _closed_port()
    backend = OpenAIBackend("m", base_url=f"http://127.0.0.1:{port}/v1")
    with pytest.raises(BackendConfigError, match=f"cannot reach http://127.0.0.1:{port}/v1"):
        run(backend.check())
    run(backend.aclose())


def test_check_passes_against_a_live_server():
    async def check_then_chat(backend):
        await backend.check()
        return await _chat_and_close(backend, {})

    with FaultyOpenAIServer() as server:
        (result,) = run(check_then_chat(_backend(server)))
    assert server.stats.models_requests == 1
    assert result.text == "echo: what is the capital of france"


def test_cache_hit_on_repeated_greedy_request(tmp_path):
    with FaultyOpenAIServer(lambda req: "cached reply") as server:
        backend = _backend(server, cache=tmp_path / "cache")
        first, second = run(_chat_and_close(backend, {"temperature": 0}, {"temperature": 0.0}))
    assert server.stats.requests == 1
    assert first.text == second.text == "cached reply"
    assert first.usage.cached == 0 and first.usage.prompt_tokens == 6
    assert second.usage.cached == 1
    assert second.usage.total_tokens == 0 and second.usage.cost_usd == 0 and second.usage.requests == 0
    assert backend.usage.cached == 1 and backend.usage.requests == 1
    # The original counts stay in the stored payload.
    cache = RequestCache(tmp_path / "cache")
    key = make_key(
        model="test-model",
        messages=USER,
        temperature=0,
        max_tokens=None,
        seed=None,
        extra_body=None,
        endpoint=server.base_url,
    )
    assert cache.get_payload(key)["usage"]["prompt_tokens"] == 6
    cache.close()


def test_cache_only_for_greedy_or_seeded_requests(tmp_path):
    with FaultyOpenAIServer(lambda req: f"reply {len(server.received)}") as server:
        backend = _backend(server, cache=RequestCache(tmp_path))
        a, b, c, d = run(
            _chat_and_close(backend, {"temperature": 0.9}, {"temperature": 0.9}, {"seed": 3}, {"seed": 3})
        )
    # Two unseeded sampled requests both reach the server; the seeded pair shares one reply.
    assert server.stats.requests == 3
    assert a.text != b.text and c.text == d.text and d.usage.cached == 1
    assert is_cacheable(0, None) and is_cacheable(0.7, 1)
    assert not is_cacheable(0.7, None) and not is_cacheable(None, None)


def test_cache_key_is_canonical():
    base = {"model": "m", "messages": USER, "max_tokens": 10, "seed": None}
    assert make_key(temperature=0, **base) == make_key(temperature=0.0, **base)
    assert make_key(temperature=0, **base) != make_key(temperature=0, stop=["x"], **base)
    assert make_key(temperature=0, endpoint="http://a/v1", **base) != make_key(
        temperature=0, endpoint="http://b/v1", **base
    )
    tools_a = [{"name": "f", "parameters": {"a": 1, "b": 2}}]
    tools_b = [{"parameters": {"b": 2, "a": 1}, "name": "f"}]
    assert make_key(temperature=0, tools=tools_a, **base) == make_key(temperature=0, tools=tools_b, **base)


def test_64_concurrent_requests_are_not_serialised():
    async def many(backend):
        try:
            return await asyncio.gather(
                *[backend.chat([{"role": "user", "content": f"request {i}"}]) for i in range(64)]
            )
        finally:
            await backend.aclose()

    with FaultyOpenAIServer(lambda req: req["messages"][-1]["content"], latency=0.2) as server:
        backend = _backend(server)
        start = time.perf_counter()
        results = run(many(backend))
        elapsed = time.perf_counter() - start
    assert [r.text for r in results] == [f"request {i}" for i in range(64)]
    assert elapsed < 64 * 0.2 / 4  # serialised would take 12.8 s
    assert server.stats.max_in_flight >= 32
    assert backend.usage.requests == 64


def test_backoff_is_jittered_reproducible_and_capped():
    def delays(seed):
        backend = OpenAIBackend(
            "m", base_url="http://127.0.0.1:1/v1", backoff_base=0.5, backoff_max=4.0, jitter_seed=seed
        )
        out = [backend._backoff(attempt, None) for attempt in range(1, 9)]
        run(backend.aclose())
        return out, backend

    first, backend = delays(1)
    assert first == delays(1)[0] and first != delays(2)[0]
    for attempt, delay in enumerate(first, start=1):
        assert 0 <= delay <= min(4.0, 0.5 * 2 ** (attempt - 1))
    assert backend._backoff(1, 100.0) == 4.0  # Retry-After capped by backoff_max
    assert backend._backoff(5, 0.0) == 0.0
    assert _retry_after_seconds({"retry-after": "2"}) == 2.0
    assert _retry_after_seconds({"retry-after-ms": "1500"}) == 1.5
    assert _retry_after_seconds({"retry-after": "soon"}) is None
    assert _retry_after_seconds({}) is None


# --------------------------------------------------------------------------------------------
# The test server itself
# --------------------------------------------------------------------------------------------


def test_server_speaks_plain_http():
    import urllib.error
    import urllib.request

    with FaultyOpenAIServer(lambda req: "hi", fault_plan={1: "429"}) as server:
        body = json.dumps({"model": "m", "messages": [{"role": "user", "content": "a b"}]}).encode()
        request = urllib.request.Request(
            server.base_url + "/chat/completions", data=body, headers={"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=5) as response:
            payload = json.loads(response.read())
        assert payload["choices"][0]["message"]["content"] == "hi"
        assert payload["usage"] == {"prompt_tokens": 2, "completion_tokens": 1, "total_tokens": 3}
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(request, timeout=5)
        assert info.value.code == 429 and info.value.headers["Retry-After"] == "0"
        with urllib.request.urlopen(server.base_url + "/models", timeout=5) as response:
            assert json.loads(response.read())["data"][0]["id"] == "test-model"
        with pytest.raises(urllib.error.HTTPError) as info:
            urllib.request.urlopen(server.base_url + "/nothing", timeout=5)
        assert info.value.code == 404
    assert server.stats.requests == 2 and server.stats.served == 1


# --------------------------------------------------------------------------------------------
# Factory
# --------------------------------------------------------------------------------------------


def test_factory_builds_each_backend(tmp_path):
    assert build_backend(BackendSpec()) is None
    with pytest.raises(BackendConfigError, match="unknown backend 'x'; choose scripted, openai or hf"):
        build_backend(BackendSpec(backend="x"))
    spec = BackendSpec(
        backend="openai",
        model="served",
        base_url="http://127.0.0.1:1/v1",
        temperature=0.0,
        max_tokens=64,
        timeout=3.0,
        max_retries=2,
        extra_body={"a": 1},
    )
    backend = build_backend(spec, cache_dir=tmp_path, prices={"served": {"input_per_million": 1}})
    assert isinstance(backend, OpenAIBackend)
    assert (backend.model, backend.timeout, backend.max_retries) == ("served", 3.0, 2)
    assert backend.default_temperature == 0.0 and backend.default_max_tokens == 64
    assert backend.cache is not None and backend.prices == {"served": {"input_per_million": 1}}
    run(backend.aclose())
    with pytest.raises(BackendConfigError, match="model folder not found"):
        build_backend(BackendSpec(backend="hf", model=str(tmp_path / "missing")))


def test_backend_spec_from_dict_names_bad_keys():
    spec = BackendSpec.from_dict({"backend": "openai", "model": "m", "base_url": "http://x/v1"})
    assert spec.model == "m" and spec.api_key_env == "OPENAI_API_KEY"
    with pytest.raises(BackendConfigError, match="unknown key.*api_key"):
        BackendSpec.from_dict({"backend": "openai", "model": "m", "api_key": "sk-secret"})
    with pytest.raises(BackendConfigError, match="needs `model`"):
        BackendSpec.from_dict({"backend": "openai"})


# --------------------------------------------------------------------------------------------
# hf backend on a tiny random model
# --------------------------------------------------------------------------------------------

CHATML = (
    "{% if tools %}{{ '<|im_start|>system\\ntools' }}{% for tool in tools %}{{ ' ' + tool['name'] }}"
    "{% endfor %}{{ '<|im_end|>\\n' }}{% endif %}"
    "{% for message in messages %}{{ '<|im_start|>' + message['role'] + '\\n' + message['content'] + "
    "'<|im_end|>\\n' }}{% endfor %}{% if add_generation_prompt %}{{ '<|im_start|>assistant\\n' }}{% endif %}"
)
SPECIALS = ["<unk>", "<pad>", "<|im_start|>", "<|im_end|>"]
BASE_WORDS = """system user assistant tools what is the capital of france paris hello world please book a
flight to from city date weather today tomorrow yes no which one do you mean find order status ? . , !"""
WORDS = [word for word in BASE_WORDS.split()] + [f"w{i}" for i in range(40)]


@pytest.fixture(scope="module")
def tiny_model_dir(tmp_path_factory):
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    vocab = {token: i for i, token in enumerate(SPECIALS + WORDS)}
    raw = Tokenizer(models.WordLevel(vocab, unk_token="<unk>"))
    raw.pre_tokenizer = pre_tokenizers.Whitespace()
    raw.add_special_tokens(SPECIALS)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=raw, unk_token="<unk>", pad_token="<pad>", eos_token="<|im_end|>"
    )
    tokenizer.chat_template = CHATML
    config = LlamaConfig(
        vocab_size=len(vocab),
        hidden_size=64,
        intermediate_size=128,
        num_hidden_layers=2,
        num_attention_heads=4,
        num_key_value_heads=2,
        max_position_embeddings=256,
        tie_word_embeddings=False,
        bos_token_id=vocab["<|im_start|>"],
        eos_token_id=vocab["<|im_end|>"],
        pad_token_id=vocab["<pad>"],
    )
    torch.manual_seed(0)
    model = LlamaForCausalLM(config)
    # Sampling defaults the backend must not let leak into greedy requests.
    model.generation_config.do_sample = True
    model.generation_config.temperature = 1.7
    out = tmp_path_factory.mktemp("tiny-chatml-llama")
    model.save_pretrained(out)
    tokenizer.save_pretrained(out)
    return out


@pytest.fixture(scope="module")
def hf_backend(tiny_model_dir):
    from diaforge.llm.hf_backend import HFBackend

    return HFBackend(tiny_model_dir, max_new_tokens=12, default_temperature=0.0)


CONVERSATIONS = [
    [{"role": "user", "content": "what is the capital of france ?"}],
    [{"role": "user", "content": "hello"}],
    [
        {"role": "system", "content": "please find the order status"},
        {"role": "user", "content": "book a flight from paris to w3 tomorrow"},
        {"role": "assistant", "content": "which city do you mean ?"},
        {"role": "user", "content": "paris"},
    ],
]


def test_hf_chat_returns_text_and_usage(hf_backend):
    result = run(hf_backend.chat(CONVERSATIONS[0], temperature=0, max_tokens=8))
    prompt_ids = hf_backend._encode(CONVERSATIONS[0], None)
    assert isinstance(hf_backend, ChatBackend)
    assert result.text.strip()
    assert result.usage.prompt_tokens == len(prompt_ids)
    assert 1 <= result.usage.completion_tokens <= 8 and result.usage.requests == 1
    assert result.model == str(hf_backend.model)
    assert "<|im_start|>" not in result.text and "<|im_end|>" not in result.text


def test_hf_greedy_is_deterministic_and_seeded_sampling_reproducible(hf_backend):
    greedy = [run(hf_backend.chat(CONVERSATIONS[2], temperature=0)).text for _ in range(2)]
    assert greedy[0] == greedy[1]
    sampled = [run(hf_backend.chat(CONVERSATIONS[2], temperature=1.0, seed=11)).text for _ in range(2)]
    assert sampled[0] == sampled[1]
    others = {run(hf_backend.chat(CONVERSATIONS[2], temperature=1.5, seed=s)).text for s in range(6)}
    assert len(others) > 1  # seeds matter


def test_hf_generate_batch_equals_one_by_one_greedy(hf_backend):
    one_by_one = [hf_backend.generate_one(c, temperature=0) for c in CONVERSATIONS]
    batched = hf_backend.generate_batch(
        [GenerationRequest(c, temperature=0) for c in CONVERSATIONS], batch_size=3
    )
    assert [r.text for r in batched] == [r.text for r in one_by_one]
    assert [r.usage.completion_tokens for r in batched] == [r.usage.completion_tokens for r in one_by_one]
    assert [r.usage.prompt_tokens for r in batched] == [r.usage.prompt_tokens for r in one_by_one]
    assert hf_backend.generate_batch([]) == []


def test_hf_concurrent_chats_are_serialised_safely(hf_backend):
    async def many():
        return await asyncio.gather(*[hf_backend.chat(CONVERSATIONS[1], temperature=0) for _ in range(4)])

    texts = {r.text for r in run(many())}
    assert len(texts) == 1


def test_hf_stops_at_end_of_turn(tiny_model_dir, hf_backend):
    from transformers import AutoTokenizer

    from diaforge.llm.hf_backend import HFBackend

    im_end = hf_backend.tokenizer.convert_tokens_to_ids("<|im_end|>")
    assert im_end in hf_backend.eos_token_ids
    # Make the first greedy token the end of turn: the reply is then empty and costs one token.
    prompt = hf_backend._encode(CONVERSATIONS[0], None)
    first = hf_backend._generate_ids([prompt], temperature=0, max_new_tokens=1, seed=None, chains=[None])[
        0
    ].ids[0]
    tokenizer = AutoTokenizer.from_pretrained(tiny_model_dir)
    hf_backend.hf_model.generation_config.eos_token_id = first
    try:
        stopping = HFBackend.from_model(
            hf_backend.hf_model, tokenizer, model_name="tiny", default_temperature=0
        )
    finally:
        hf_backend.hf_model.generation_config.eos_token_id = im_end
    result = stopping.generate_one(CONVERSATIONS[0])
    assert result.text == "" and result.usage.completion_tokens == 1


def test_hf_stop_strings_and_tools(hf_backend):
    full = hf_backend.generate_one(CONVERSATIONS[2], temperature=0, max_tokens=12).text
    words = full.split()
    assert len(words) >= 3
    stopped = hf_backend.generate_one(CONVERSATIONS[2], temperature=0, max_tokens=12, stop=[words[2]])
    assert words[2] not in stopped.text.split()
    assert full.startswith(stopped.text.strip())
    prompt = hf_backend.render(CONVERSATIONS[1], tools=[{"name": "find_order_status"}])
    assert prompt.startswith("<|im_start|>system\ntools find_order_status<|im_end|>")
    assert prompt.endswith("<|im_start|>assistant\n")


def test_hf_missing_folder_is_a_config_error(tmp_path):
    from diaforge.llm.hf_backend import HFBackend

    with pytest.raises(BackendConfigError, match="model folder not found: .*nowhere"):
        HFBackend(tmp_path / "nowhere")
    (tmp_path / "empty").mkdir()
    with pytest.raises(BackendConfigError, match="no config.json"):
        HFBackend(tmp_path / "empty")


def test_hf_batch_with_stop_strings_and_per_conversation_tools(hf_backend):
    full = [
        r.text
        for r in hf_backend.generate_batch([GenerationRequest(c, temperature=0) for c in CONVERSATIONS])
    ]
    stop_word = full[2].split()[1]
    one_by_one = [hf_backend.generate_one(c, temperature=0, stop=[stop_word]) for c in CONVERSATIONS]
    stopping = [GenerationRequest(c, temperature=0, stop=(stop_word,)) for c in CONVERSATIONS]
    batched = hf_backend.generate_batch(stopping, batch_size=3)
    assert [r.text for r in batched] == [r.text for r in one_by_one]
    assert [r.usage.completion_tokens for r in batched] == [r.usage.completion_tokens for r in one_by_one]
    assert batched[2].finish_reason == "stop" and stop_word not in batched[2].text
    tools = [[{"name": "find_order_status"}], None, [{"name": "w1"}]]
    with_tools = hf_backend.generate_batch(
        [GenerationRequest(c, t, temperature=0) for c, t in zip(CONVERSATIONS, tools, strict=True)]
    )
    expected = [
        hf_backend.generate_one(c, temperature=0, tools=t) for c, t in zip(CONVERSATIONS, tools, strict=True)
    ]
    assert [r.text for r in with_tools] == [r.text for r in expected]
    assert with_tools[0].usage.prompt_tokens == len(hf_backend._encode(CONVERSATIONS[0], tools[0]))


def test_the_uncached_path_runs_the_same_rule_chains_as_the_prefix_cache(hf_backend):
    """`model.generate` (prefix_cache off) applies a row's chain through the logits processor and
    the stopping criterion: the same tokens, finish reasons and rule counts as the prefix cache."""
    from diaforge.llm.hf_backend import HFBackend
    from diaforge.llm.rules import RuleChain, StopStrings
    from tests._chain import BanToken

    plain = HFBackend.from_model(
        hf_backend.hf_model,
        hf_backend.tokenizer,
        model_name="tiny",
        default_temperature=0,
        prefix_cache=False,
    )
    assert plain.prefix_cache is None and hf_backend.prefix_cache is not None
    prompts = [hf_backend._encode(c, None) for c in CONVERSATIONS]
    free = hf_backend._generate_ids(prompts, temperature=0, max_new_tokens=12, seed=None, chains=[None] * 3)
    stop_word = hf_backend.tokenizer.decode([free[2].ids[3]])

    def chains() -> list:
        return [RuleChain([BanToken(g.ids[0]), StopStrings([stop_word])], hf_backend.vocab) for g in free]

    runs = []
    for backend in (hf_backend, plain):
        made = chains()
        out = backend._generate_ids(prompts, temperature=0, max_new_tokens=12, seed=None, chains=made)
        runs.append(([(g.ids, g.finish) for g in out], [c.counters() for c in made]))
    assert runs[0] == runs[1]
    assert all(ids[0] != g.ids[0] for (ids, _), g in zip(runs[0][0], free, strict=True))
    assert all(c["bans"] >= 1 for c in runs[0][1])
