"""The decoding rules as vLLM's per-request logits processor (`diaforge.llm.vllm_rules`), without
vLLM: a greedy loop drives `RequestRules` as vLLM's sampler does (one forward pass a step, the
callable on the step's logits row with the prompt and the output ids so far, then the argmax), and
its replies must be those of `HFBackend` on the same prompt with the same rules."""

from __future__ import annotations

import json
import sys
import types
from functools import partial
from pathlib import Path
from typing import Any

import pytest
import torch
from _repo import ROOT

from diaforge.format import PromptFormat, parse_assistant
from diaforge.llm import vllm_rules
from diaforge.llm.base import GenerationRequest
from diaforge.llm.decoding import DecodingConfig
from diaforge.llm.hf_backend import HFBackend
from diaforge.llm.loops import LOOP_FINISH
from diaforge.llm.rules import RuleChain, Vocab
from diaforge.llm.vllm_rules import (
    XARGS_KEY,
    Payload,
    RequestRules,
    check_request,
    payload,
    read_payload,
    request_rules,
    vocab_of,
)
from diaforge.schema import Dialogue, load_dialogues

BENCH = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"
AIDS = DecodingConfig(constrain_calls=True, ground_values=True, copy_thoughts=True)


@pytest.fixture(scope="module")
def dialogues() -> list[Dialogue]:
    return load_dialogues(BENCH)[:4]


@pytest.fixture(scope="module")
def tiny(tmp_path_factory: pytest.TempPathFactory, dialogues: list[Dialogue]) -> Path:
    from diaforge.train.modeling import build_tiny_model

    texts = [t.content for d in dialogues for t in d.turns if t.content]
    return build_tiny_model(tmp_path_factory.mktemp("tiny") / "model", texts=texts, seed=0)


def _backend(path: Path, *, open_bracket: bool = False) -> HFBackend:
    """The tiny model in float64 (a greedy tie cannot flip with the order of a sum); with
    `open_bracket` its head is biased to write ``[`` wherever it may (and no whitespace), so every
    reply opens a call list that only the call rule can turn into a call."""
    from transformers import AutoModelForCausalLM, AutoTokenizer

    tokenizer = AutoTokenizer.from_pretrained(path)
    model = AutoModelForCausalLM.from_pretrained(path).double().eval()
    if open_bracket:
        head = torch.nn.Linear(model.lm_head.in_features, model.lm_head.out_features, bias=True).double()
        with torch.no_grad():
            head.weight.copy_(model.lm_head.weight)
            head.bias.zero_()
            head.bias[tokenizer.convert_tokens_to_ids("[")] = 50.0
            for token in range(len(tokenizer)):  # and never to pad a call with whitespace
                if tokenizer.decode([token]).isspace():
                    head.bias[token] = -50.0
        model.lm_head = head
    return HFBackend.from_model(model, tokenizer, default_temperature=None, max_new_tokens=64)


def _request(d: Dialogue, decoding: DecodingConfig, max_tokens: int) -> GenerationRequest:
    """The first assistant turn of `d`, asked as evaluation asks it (`ModelUnderTest.request`)."""
    fmt = PromptFormat()
    upto = next(i for i, t in enumerate(d.turns) if t.role == "assistant")
    return GenerationRequest(
        fmt.messages(d, upto=upto),
        fmt.tools(d),
        candidates=tuple(d.candidate_tools),
        said=tuple(t.content for t in d.turns if t.role == "user" and t.content),
        decoding=decoding,
        temperature=0.0,
        max_tokens=max_tokens,
    )


def _prompt(backend: HFBackend, request: GenerationRequest) -> list[int]:
    text = backend.render(request.messages, request.tools)
    return list(backend.tokenizer(text, add_special_tokens=False)["input_ids"])


def _vllm_greedy(
    backend: HFBackend, prompt: list[int], rules: RequestRules | None, max_tokens: int
) -> list[int]:
    """Greedy decoding as vLLM's engine runs it: one pass a step over the cached prompt, the
    request's logits processor on the step's row (prompt ids, the output list so far, the row),
    the argmax written; it stops at an end-of-turn token or the budget."""
    model, out = backend.hf_model, []
    with torch.inference_mode():
        step = model(input_ids=torch.tensor([prompt]), use_cache=True)
        while len(out) < max_tokens:
            row = step.logits[0, -1].clone()
            if rules is not None:
                row = rules(prompt, out, row)
            token = int(row.argmax())
            out.append(token)
            if token in backend.eos_token_ids:
                break
            step = model(
                input_ids=torch.tensor([[token]]), past_key_values=step.past_key_values, use_cache=True
            )
    return out


def _through_vllm(backend: HFBackend, request: GenerationRequest) -> tuple[str, list[int], RequestRules]:
    xargs = payload(request.decoding, request.candidates, request.user_texts())
    rules = request_rules(json.loads(json.dumps(xargs)), backend.vocab)  # as JSON carries it
    assert rules is not None
    ids = _vllm_greedy(backend, _prompt(backend, request), rules, request.max_tokens)
    text = backend.tokenizer.decode(
        [t for t in ids if t not in backend.eos_token_ids], skip_special_tokens=True
    )
    return text, ids, rules


def _same_reply(backend: HFBackend, request: GenerationRequest) -> tuple[Any, list[int], RequestRules]:
    """The hf backend's reply and the vLLM-driven one, checked equal: the text, the rule counters,
    the tokens (the vLLM one ends with the end-of-turn token it forces where a rule ended it)."""
    expected = backend.generate_batch([request])[0]
    text, ids, rules = _through_vllm(backend, request)
    assert text == expected.text
    assert rules.chain.counters() == expected.counters
    # A rule's own finish (the loop stop) is the processor's to force; an end-of-turn token or the
    # budget ends the request in vLLM itself, before the processor hears of it.
    forced = expected.finish_reason not in ("stop", "length")
    assert rules.finish == (expected.finish_reason if forced else None)
    assert len(ids) == expected.usage.completion_tokens + forced
    if forced:
        assert ids[-1] == backend.vocab.eos[0]
    return expected, ids, rules


@pytest.mark.slow(reason="eight greedy replies of a tiny model over ~1300-token prompts, two ways")
def test_every_aid_on_gives_the_hf_backends_replies(tiny: Path, dialogues: list[Dialogue]) -> None:
    backend = _backend(tiny)
    ended_by_loop = []
    for d in dialogues:
        request = _request(d, AIDS, 64)
        expected, ids, _ = _same_reply(backend, request)
        if expected.finish_reason == LOOP_FINISH:
            ended_by_loop.append((request, ids))
    # The loop stop made a difference: without the rules the same reply runs on past it.
    assert ended_by_loop
    request, ids = ended_by_loop[0]
    bare = _vllm_greedy(backend, _prompt(backend, request), None, request.max_tokens)
    assert bare[: len(ids) - 1] == ids[:-1] and len(bare) > len(ids) and backend.vocab.eos[0] not in bare


def test_the_call_rule_turns_an_opened_list_into_the_same_call(tiny: Path, dialogues: list[Dialogue]) -> None:
    backend = _backend(tiny, open_bracket=True)
    request = _request(dialogues[0], AIDS, 160)
    expected, ids, rules = _same_reply(backend, request)
    parsed = parse_assistant(expected.text)
    assert expected.finish_reason == "stop" and parsed.kind == "tool_calls"
    assert parsed.tool_calls[0].name in {t.name for t in dialogues[0].candidate_tools}
    assert rules.chain.counters()["constrained_tokens"] > 0
    # Without the rules the model only ever opens lists.
    bare = _vllm_greedy(backend, _prompt(backend, request), None, 8)
    assert backend.tokenizer.decode(bare) == "[" * 8


def test_the_vocabulary_is_the_hf_backends(tiny: Path) -> None:
    backend = _backend(tiny)
    vocab = vocab_of(backend.tokenizer, backend.hf_model.generation_config.eos_token_id)
    assert vocab.eos == backend.vocab.eos and list(vocab.texts) == list(backend.vocab.texts)


def test_payload_round_trip(dialogues: list[Dialogue]) -> None:
    tools, said = tuple(dialogues[0].candidate_tools), ("I need the board calendar", "for Tuesday")
    xargs = payload(AIDS, tools, said)
    assert list(xargs) == [XARGS_KEY] and isinstance(xargs[XARGS_KEY], str)  # vllm_xargs: str values
    assert read_payload(json.loads(json.dumps(xargs))) == Payload(AIDS, tools, said)
    bare = Vocab(["a", "b", ""], (2,), lambda ids: "")
    rules = request_rules(xargs, bare)
    assert rules is not None and rules.masks
    assert [r.name for r in rules.chain.rules] == ["loop_stop", "thought", "call"]
    # No payload, or a decoding that turns no rule on: vLLM is told to leave the request alone.
    assert request_rules(None, bare) is None and request_rules({"other": 1}, bare) is None
    assert request_rules(payload(DecodingConfig(loop_stop=False)), bare) is None
    assert read_payload(payload(DecodingConfig())) == Payload(DecodingConfig())


@pytest.mark.parametrize(
    ("value", "says"),
    [
        ({"decoding": {}}, "must be a JSON string"),
        ("{not json", "is not JSON"),
        ("[1, 2]", "must be a JSON object"),
        ('{"decoding": {}, "tools": []}', "unknown key(s) tools"),
        ('{"said": []}', "decoding is missing"),
        ('{"decoding": {"constrain_calls": 1}}', "decoding: constrain_calls"),
        ('{"decoding": {"beam": true}}', "decoding: beam"),
        ('{"decoding": {"copy_thoughts": true}}', "copy_thoughts needs constrain_calls"),
        ('{"decoding": {}, "candidates": [{"name": 3}]}', "candidates[0]"),
        ('{"decoding": {}, "candidates": {}}', "candidates must be a list"),
        ('{"decoding": {}, "said": "hello"}', "said must be a list of strings"),
    ],
)
def test_a_bad_payload_is_one_line_naming_the_field(value: Any, says: str) -> None:
    with pytest.raises(ValueError) as caught:
        read_payload({XARGS_KEY: value})
    message = str(caught.value)
    assert says in message and "\n" not in message, message
    with pytest.raises(ValueError):
        check_request({XARGS_KEY: value}, 0.0)


def test_admission_refuses_aids_with_sampling() -> None:
    check_request(None, 1.0)
    check_request(payload(DecodingConfig()), 0.7)  # the loop stop alone is no aid
    check_request(payload(AIDS), 0.0)
    with pytest.raises(ValueError, match="need greedy decoding"):
        check_request(payload(AIDS), 0.7)


def test_a_step_asked_twice_gives_one_token_and_placeholders_are_refused() -> None:
    from tests._chain import BanToken, toy_vocab

    vocab = toy_vocab(["a", "b", "c"])
    rules = RequestRules(RuleChain([BanToken(0)], vocab), prompt_ids=[1, 2])
    row = torch.tensor([3.0, 2.0, 1.0, 0.0])
    first = rules(None, [], row.clone())
    again = rules(None, [], row.clone())  # a chunked prefill's partial step, sampled and dropped
    assert torch.equal(first, again) and int(first.argmax()) == 1
    assert rules.chain.counters() == {"bans": 1} and first[0] == float("-inf")
    with pytest.raises(RuntimeError, match="--no-async-scheduling"):
        rules(None, [1, -1], row.clone())


def _fake_vllm(monkeypatch: pytest.MonkeyPatch) -> None:
    """A stand-in for ``vllm.v1.sample.logits_processor`` whose adapter binds a per-request
    callable as vLLM's does: the prompt's ids too when the callable takes three arguments."""
    import inspect

    class AdapterLogitsProcessor:
        def __init__(self, vllm_config: Any, device: Any, is_pin_memory: bool) -> None:
            self.req_info: dict[int, Any] = {}

        def add(self, index: int, params: Any, prompt: list[int], output: list[int]) -> None:
            lp = self.new_req_logits_processor(params)
            if lp:
                three = len(inspect.signature(lp).parameters) == 3
                self.req_info[index] = partial(lp, *([prompt, output] if three else [output]))

        def apply(self, logits: torch.Tensor) -> torch.Tensor:
            for index, lp in self.req_info.items():
                logits[index] = lp(logits[index])
            return logits

    module = types.ModuleType("vllm.v1.sample.logits_processor")
    module.AdapterLogitsProcessor = AdapterLogitsProcessor  # type: ignore[attr-defined]
    for name in ("vllm", "vllm.v1", "vllm.v1.sample"):
        monkeypatch.setitem(sys.modules, name, types.ModuleType(name))
    monkeypatch.setitem(sys.modules, module.__name__, module)
    vllm_rules._processor_class.cache_clear()


def test_the_vllm_class_loads_by_name_and_binds_the_prompt(
    tiny: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    _fake_vllm(monkeypatch)
    try:
        cls = vllm_rules.DiaforgeRules
        config = types.SimpleNamespace(
            model_config=types.SimpleNamespace(tokenizer=str(tiny), model=str(tiny))
        )
        processor = cls(config, torch.device("cpu"), False)
        assert cls.__name__ == "DiaforgeRules" and not processor.is_argmax_invariant()
        assert processor.vocab.eos == _backend(tiny).vocab.eos
        with pytest.raises(ValueError, match="need greedy decoding"):
            cls.validate_params(types.SimpleNamespace(extra_args=payload(AIDS), temperature=1.0))
        params = types.SimpleNamespace(extra_args=payload(AIDS, said=("hi",)), temperature=0.0)
        processor.add(0, params, [5, 6, 7], [])
        processor.add(1, types.SimpleNamespace(extra_args=None, temperature=0.0), [5], [])
        processor.add(2, types.SimpleNamespace(extra_args={XARGS_KEY: "{"}, temperature=0.0), [5], [])
        assert sorted(processor.req_info) == [0]  # no payload, and a bad one: left alone
        processor.apply(torch.zeros(3, len(processor.vocab.texts)))
        assert processor.req_info[0].func.chain.row.prompt == [5, 6, 7]
    finally:
        vllm_rules._processor_class.cache_clear()


def test_without_vllm_the_module_imports_and_the_class_says_why(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "vllm", None)  # import vllm fails, whether or not it is installed
    vllm_rules._processor_class.cache_clear()
    with pytest.raises(ImportError, match="DiaforgeRules needs vLLM"):
        vllm_rules.DiaforgeRules  # noqa: B018
    with pytest.raises(AttributeError):
        vllm_rules.NoSuchThing  # noqa: B018
