"""The decoding rules inside a vLLM server: the aids of `eval run --backend hf` (constrained calls,
grounded values, copied thoughts, the loop stop) as a vLLM logits processor loaded by class path,
fed per request through ``vllm_xargs``.

    VLLM_USE_V2_MODEL_RUNNER=0 vllm serve outputs/demo/sft --no-async-scheduling \\
        --logits-processors diaforge.llm.vllm_rules:DiaforgeRules

and per request ``extra_body={"vllm_xargs": payload(decoding, candidates, said)}`` with
temperature 0. The toolkit must be importable in vLLM's environment (its torch and transformers
pins are vLLM's; the rules need only pydantic and transformers).

What vLLM offers, as read in its source (``vllm/v1/sample/logits_processor/__init__.py`` and
``interface.py``, ``examples/offline_inference/logits_processor/custom_req.py``,
``docs/features/custom_logitsprocs.md``):

- ``--logits-processors module:Class`` loads a subclass of the V1 sampler's
  ``vllm.v1.sample.logits_processor.LogitsProcessor``. ``AdapterLogitsProcessor`` wraps a
  per-request callable: ``new_req_logits_processor(params)`` gets the request's
  ``SamplingParams`` (``params.extra_args`` is the request's ``vllm_xargs``) and returns the
  callable or None; the callable is called at every step with the request's output token ids so
  far and its logits row, and with the prompt's ids first when it takes three arguments
  (``AdapterLogitsProcessor._new_state`` counts them). The class also answers
  ``is_argmax_invariant()`` (False here: the rules change greedy picks) and may check a request
  at admission with the class method ``validate_params(params)`` (a ``ValueError`` refuses it).
- ``vllm_xargs`` holds strings and numbers (lists of them in recent versions), so the payload
  travels as one JSON string under ``"diaforge"`` (`payload`).
- Recent vLLM runs dense models on its Model Runner V2 by default, which has its own processor
  interface; with ``--logits-processors`` given it falls back to the V1 runner, and
  ``VLLM_USE_V2_MODEL_RUNNER=0`` says so outright. Under async scheduling the output ids a
  processor sees hold ``-1`` placeholders unless vLLM repairs them (it does when custom
  processors are loaded); ``--no-async-scheduling`` takes the question away, and `RequestRules`
  refuses a placeholder rather than feeding it to the rules.

`RequestRules` is the per-request callable: pure torch, it feeds its `RuleChain` the tokens it has
not seen, then leaves only the chain's pick possible (the model's own greedy token unless a rule
masks it), so greedy decoding writes what `HFBackend` writes for the same prompt and rules. A
logits processor cannot end a request, so once the chain gives a finish reason it writes the
end-of-turn token: the text is the hf backend's, but the reply holds that one more token and its
finish reason is vLLM's ``stop`` (a reply the loop stop ended reads ``loop`` through the hf
backend). `DiaforgeRules` (the vLLM class) exists only where vLLM imports: importing this module
never imports vLLM.
"""

from __future__ import annotations

import functools
import json
import logging
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from diaforge.llm.decoding import DecodingConfig, decoding_keys, rule_of
from diaforge.llm.rules import RuleChain, Vocab, build_chain
from diaforge.schema import Tool

if TYPE_CHECKING:
    import torch

__all__ = [
    "XARGS_KEY",
    "Payload",
    "RequestRules",
    "check_request",
    "payload",
    "read_payload",
    "request_rules",
    "vocab_of",
]

logger = logging.getLogger(__name__)

XARGS_KEY = "diaforge"
"""The key of the toolkit's payload in a request's ``vllm_xargs`` (its ``SamplingParams.extra_args``)."""
PAYLOAD_KEYS = ("decoding", "candidates", "said")
ASYNC_PLACEHOLDER = (
    "the rules were given a placeholder output token (-1): vLLM's async scheduling did not fill in "
    "the sampled ids; serve with --no-async-scheduling"
)


@dataclass(frozen=True)
class Payload:
    """What a request sends the rules: its decoding, the tools its call may name, the user's words."""

    decoding: DecodingConfig
    candidates: tuple[Tool, ...] = ()
    said: tuple[str, ...] = ()


def payload(
    decoding: DecodingConfig, candidates: Sequence[Tool] = (), said: Sequence[str] = ()
) -> dict[str, str]:
    """The ``vllm_xargs`` a client sends for one request: its `DecodingConfig`, the candidate tool
    records the call rule holds a call to, and what the user said (grounded values copy it; the
    server sees token ids only, so the client names the words, as `GenerationRequest.user_texts`
    gives them), as one JSON string (``vllm_xargs`` values are strings and numbers)."""
    body = {
        "decoding": decoding.as_dict(),
        "candidates": [t.model_dump(mode="json") for t in candidates],
        "said": [str(s) for s in said],
    }
    return {XARGS_KEY: json.dumps(body, ensure_ascii=False, separators=(",", ":"))}


def read_payload(extra_args: Mapping[str, Any] | None) -> Payload | None:
    """The request's payload (`payload`) from its ``extra_args``; None when it sends none. A bad
    payload is a ``ValueError`` whose message is one line naming the field."""
    if not extra_args or XARGS_KEY not in extra_args:
        return None
    raw = extra_args[XARGS_KEY]
    where = f"vllm_xargs.{XARGS_KEY}"
    if not isinstance(raw, str):
        raise ValueError(f"{where} must be a JSON string (vllm_xargs holds strings and numbers)")
    try:
        body = json.loads(raw)
    except ValueError as exc:
        raise ValueError(f"{where} is not JSON: {_first_line(exc)}") from None
    if not isinstance(body, dict):
        raise ValueError(f"{where} must be a JSON object with {', '.join(PAYLOAD_KEYS)}")
    unknown = sorted(set(body) - set(PAYLOAD_KEYS))
    if unknown:
        raise ValueError(f"{where}: unknown key(s) {', '.join(unknown)}; known: {', '.join(PAYLOAD_KEYS)}")
    if "decoding" not in body:
        raise ValueError(f"{where}.decoding is missing (the request's DecodingConfig fields)")
    return Payload(
        _decoding(body["decoding"], where),
        _candidates(body.get("candidates", []), where),
        _said(body.get("said", []), where),
    )


def _decoding(raw: Any, where: str) -> DecodingConfig:
    if not isinstance(raw, dict):
        raise ValueError(f"{where}.decoding must be an object of DecodingConfig fields")
    try:
        decoding = DecodingConfig(**raw)
    except (TypeError, ValueError) as exc:  # pydantic's ValidationError is a ValueError
        raise ValueError(f"{where}.decoding: {_first_line(exc)}") from None
    for name in decoding_keys(DecodingConfig):
        rule = rule_of(DecodingConfig, name)
        if getattr(decoding, name) and rule is not None and rule.needs and not getattr(decoding, rule.needs):
            raise ValueError(f"{where}.decoding: {name} needs {rule.needs} ({rule.why})")
    return decoding


def _candidates(raw: Any, where: str) -> tuple[Tool, ...]:
    if not isinstance(raw, list):
        raise ValueError(f"{where}.candidates must be a list of tool records")
    tools = []
    for i, record in enumerate(raw):
        try:
            tools.append(Tool.model_validate(record))
        except ValueError as exc:
            raise ValueError(f"{where}.candidates[{i}]: {_first_line(exc)}") from None
    return tuple(tools)


def _said(raw: Any, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(s, str) for s in raw):
        raise ValueError(f"{where}.said must be a list of strings")
    return tuple(raw)


def _first_line(exc: BaseException) -> str:
    lines = [line.strip() for line in str(exc).splitlines() if line.strip()]
    # pydantic: "1 validation error for X" / "field" / "  message": keep the field and its message
    if len(lines) >= 3 and "validation error" in lines[0]:
        return f"{lines[1]}: {lines[2]}"
    return lines[0] if lines else type(exc).__name__


def check_request(extra_args: Mapping[str, Any] | None, temperature: float | None) -> None:
    """A request's payload checked at admission (`DiaforgeRules.validate_params`): readable, and
    greedy when it asks for an aid (the aids need temperature 0, as `diaforge serve` says)."""
    found = read_payload(extra_args)
    if found is None:
        return
    aids = found.decoding.aids()
    if aids and temperature:
        raise ValueError(
            f"vllm_xargs.{XARGS_KEY}: {', '.join(aids)} need greedy decoding; send temperature 0"
        )


def request_rules(extra_args: Mapping[str, Any] | None, vocab: Vocab) -> RequestRules | None:
    """The per-request callable for a request's ``extra_args``: None when it sends no payload or
    its decoding turns no rule on; a bad payload is a ``ValueError`` (`read_payload`)."""
    found = read_payload(extra_args)
    if found is None:
        return None
    chain = build_chain(found.decoding, vocab, candidates=found.candidates, said=found.said)
    return RequestRules(chain) if chain.rules else None


class RequestRules:
    """One request's `RuleChain` as vLLM's per-request logits processor (module docstring).

    Called as vLLM calls a three-argument processor, ``(prompt_ids, output_ids, logits)``, once per
    step: the chain is admitted with the prompt on the first call, accepts every output token it
    has not seen, and the row comes back with every token but the chosen one at ``-inf`` (in
    place): the chain's pick given the row's argmax while it masks, the end-of-turn token once it
    has given a finish reason, the row untouched when it has no mask. A second call for the same
    step (vLLM samples a chunked prompt's partial prefill too) gives the same token."""

    def __init__(self, chain: RuleChain, prompt_ids: Sequence[int] | None = None) -> None:
        self.chain = chain
        self.masks = chain.masks
        self.finish: str | None = None
        """The chain's finish reason once it gave one (``loop``, ``stop``), else None."""
        self.seen = 0
        self._picked: tuple[int, int] | None = None
        self._admitted = False
        if prompt_ids is not None:
            self.admit(prompt_ids)

    def admit(self, prompt_ids: Sequence[int]) -> None:
        self.chain.admit([int(t) for t in prompt_ids])
        self._admitted = True

    def __call__(
        self, prompt_ids: Sequence[int] | None, output_ids: Sequence[int], logits: torch.Tensor
    ) -> torch.Tensor:
        if not self._admitted:
            self.admit(prompt_ids or ())
        self.feed(output_ids)
        token = self.choose(logits)
        if token is None:
            return logits
        kept = float(logits[token])
        logits.fill_(float("-inf"))
        logits[token] = kept if math.isfinite(kept) else 0.0
        return logits

    def feed(self, output_ids: Sequence[int]) -> None:
        """Accept the output tokens the chain has not seen (none after it finished)."""
        if len(output_ids) < self.seen:
            raise RuntimeError(f"the request's output shrank from {self.seen} to {len(output_ids)} tokens")
        while self.finish is None and self.seen < len(output_ids):
            token = int(output_ids[self.seen])
            if token < 0:
                raise RuntimeError(ASYNC_PLACEHOLDER)
            self.seen += 1
            self.finish = self.chain.accept(token)
            if self.finish is not None:
                self.chain.retire()

    def choose(self, logits: torch.Tensor) -> int | None:
        """The one token this step may write, or None when the rules leave the row as it is."""
        if self.finish is not None:
            return self.chain.vocab.eos[0]
        if not self.masks:
            return None
        if self._picked is not None and self._picked[0] == self.seen:
            return self._picked[1]
        row = logits.detach().float().cpu()
        token = self.chain.pick(row, int(row.argmax()))
        self._picked = (self.seen, token)
        return token


def vocab_of(tokenizer: Any, generation_eos: int | Sequence[int] | None = None) -> Vocab:
    """The `Vocab` the rules see, built from a tokenizer as `HFBackend.vocab` builds it: each
    token's text, and the end-of-turn ids (`diaforge.llm.hf_backend.end_of_turn_ids`; the model's
    generation config's eos ids first)."""
    from diaforge.llm.hf_backend import end_of_turn_ids

    eos = end_of_turn_ids(tokenizer, generation_eos)
    if not eos:
        raise ValueError("the tokenizer has no end-of-turn token (no eos_token_id, no known marker)")
    return Vocab.of(tokenizer, eos)


def _model_vocab(model_config: Any) -> Vocab:
    """The `Vocab` of the model a vLLM server loaded (its `ModelConfig`): its tokenizer, and its
    generation config's eos ids where it has one."""
    from transformers import AutoTokenizer, GenerationConfig

    trust = bool(getattr(model_config, "trust_remote_code", False))
    tokenizer = AutoTokenizer.from_pretrained(
        model_config.tokenizer,
        revision=getattr(model_config, "tokenizer_revision", None),
        trust_remote_code=trust,
    )
    try:
        generation = GenerationConfig.from_pretrained(
            model_config.model, revision=getattr(model_config, "revision", None)
        )
    except (OSError, ValueError):
        generation = None
    return vocab_of(tokenizer, getattr(generation, "eos_token_id", None))


@functools.cache
def _processor_class() -> type:
    """`DiaforgeRules`, defined over vLLM's ``AdapterLogitsProcessor`` (vLLM imported here)."""
    try:
        from vllm.v1.sample.logits_processor import AdapterLogitsProcessor
    except ImportError as exc:
        raise ImportError(f"DiaforgeRules needs vLLM (its V1 logits processor interface): {exc}") from None

    class DiaforgeRules(AdapterLogitsProcessor):
        """The toolkit's decoding rules as a vLLM logits processor (`diaforge.llm.vllm_rules`)."""

        def __init__(self, vllm_config: Any, device: Any, is_pin_memory: bool) -> None:
            super().__init__(vllm_config, device, is_pin_memory)
            self.vocab = _model_vocab(vllm_config.model_config)

        @classmethod
        def validate_params(cls, params: Any) -> None:
            check_request(getattr(params, "extra_args", None), getattr(params, "temperature", None))

        def is_argmax_invariant(self) -> bool:
            return False

        def new_req_logits_processor(self, params: Any) -> RequestRules | None:
            try:
                return request_rules(getattr(params, "extra_args", None), self.vocab)
            except ValueError as exc:  # admission refuses it where vLLM calls validate_params
                logger.error("diaforge rules not applied to a request: %s", exc)
                return None

    DiaforgeRules.__module__ = __name__
    DiaforgeRules.__qualname__ = "DiaforgeRules"
    return DiaforgeRules


def __getattr__(name: str) -> Any:
    """``DiaforgeRules`` on first use (vLLM's loader reads it with ``getattr``); vLLM stays unimported
    until then."""
    if name == "DiaforgeRules":
        return _processor_class()
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
