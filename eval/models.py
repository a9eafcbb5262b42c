"""The model under test: load it (base folder, LoRA adapter folder, merged folder, a served model,
or vLLM), or take a reference policy (`reference`, `name-overlap`, `random`: the floors of
`diaforge.eval.policies`, no model), and ask it for the next assistant turn of many dialogues at once.

Prompt mode shows the candidate tools in the system prompt and expects the paper's text format;
native mode passes them as `tools=` (to the chat template, or to the server's tools API) and reads
native tool calls. Either way every reply comes back as a `ParsedMessage` (reply, tool calls, or
malformed with a reason) plus the raw text, and whether the token budget cut it off
(`Reply.truncated`; its `kind` is then ``truncated``, counted apart from malformed output).

What the model sees is its `PromptFormat` (`diaforge.format`): `choose_prompt_format` reads the
``prompt_format.json`` that training saved beside the adapter, checkpoint or merged model, lets an
explicit option override it (with a warning naming both values), and falls back to the documented
defaults for a model without the file.

The token budget defaults to ``auto`` (`auto_max_new_tokens`): the longest reference assistant
turn of the benchmark, rendered as the model must write it (with its thought, unless the format's
`target_reasoning` is 'drop') and counted in the model's tokenizer, plus a margin.
"""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from diaforge.errors import InputError
from diaforge.eval.policies import POLICIES, make_policy
from diaforge.format import (
    PROMPT_FORMAT_FILE,
    ParsedMessage,
    PromptFormat,
    parse_assistant,
    parse_openai_message,
    shown_value,
)
from diaforge.llm.base import ChatResult, GenerationRequest, generate_replies
from diaforge.llm.decoding import DecodingConfig
from diaforge.llm.loops import LOOP_FINISH
from diaforge.schema import Dialogue, Turn

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

MODEL_BACKENDS = ("hf", "openai", "vllm")


def decoding_executor(backend: str) -> str:
    """The executor a backend's decoding is checked against before anything runs: a served model
    (`openai`) as `diaforge serve`, whose server `ModelUnderTest.check` then asks."""
    return "diaforge-serve" if backend == "openai" else backend


BACKENDS = (*MODEL_BACKENDS, *POLICIES)

TRUNCATED_REASON = "cut off by the token budget (max_new_tokens) before the end of the turn"


@dataclass
class Reply:
    """One assistant output of the model under test."""

    parsed: ParsedMessage
    """The output classified by `diaforge.format` (reply, tool calls or malformed)."""
    raw: str
    """The text the model wrote (for a native reply, its message as JSON)."""
    truncated: bool = False
    """The backend stopped at the token budget without an end-of-turn token (hf), or the server
    said ``finish_reason == "length"`` (openai, vllm), or the loop stop ended a reply that kept
    repeating itself (hf, ``finish_reason == "loop"``): the output is incomplete."""

    @property
    def kind(self) -> str:
        """``reply``, ``tool_calls``, ``malformed`` or ``truncated``. A cut-off output is
        ``truncated`` whatever its prefix parses as, except a complete call list: the parser
        accepts only a whole JSON list, so such an output lost nothing but its end-of-turn token
        and stays a call."""
        if self.truncated and self.parsed.kind != "tool_calls":
            return "truncated"
        return self.parsed.kind


@dataclass
class ModelSpec:
    """The model under test: where it is, how to query it, and the prompt format it is shown."""

    model: str
    """A local folder (base, LoRA adapter, or merged model) for `hf`/`vllm`, a served model name for
    `openai`, or the policy's name for a reference policy (`reference`, `name-overlap`, `random`)."""
    backend: str = "hf"
    """`hf`, `openai`, `vllm`, or a reference policy of `diaforge.eval.policies` (no model is loaded)."""
    prompt_format: PromptFormat = field(default_factory=PromptFormat)
    """What the model sees: prompt mode, tool listing, system prompt, history reasoning (see
    `diaforge.format.PromptFormat`). `eval run` takes it from the model's ``prompt_format.json``
    (`choose_prompt_format`); default: the documented defaults."""
    base_url: str | None = None
    """OpenAI-compatible server for `backend: openai`; the key comes from `api_key_env`.
    ``vllm-rules+http://...``: a vLLM server applying the decoding rules (`diaforge.llm.openai_backend`)."""
    api_key_env: str = "OPENAI_API_KEY"
    max_new_tokens: int = 384
    """Reply length cap in tokens, default 384; the command line's default is ``auto``
    (`auto_max_new_tokens`). Reference policies ignore it."""
    temperature: float = 0.0
    """0 = greedy (the default: evaluation should be deterministic)."""
    batch_size: int = 16
    device: str = "cpu"
    decoding: DecodingConfig = field(default_factory=DecodingConfig)
    """The decoding rules (`diaforge.llm.decoding.DecodingConfig`: the loop stop, constrained calls,
    grounded values, copied thoughts), as the run's config gives them; `validate` checks them
    against the backend (`DecodingConfig.check`)."""
    prefix_cache: bool = True
    """`hf`: reuse the keys and values of each dialogue's earlier turns and of the shared system
    prompt (`diaforge.llm.prefix_cache`); False recomputes every prompt with `model.generate`."""
    cache_gib: float | None = None
    """`hf`: GiB of keys and values the prefix cache keeps (None: its default,
    `diaforge.llm.prefix_cache.DEFAULT_MAX_CACHED_BYTES`)."""
    seed: int = 0
    """Seed of the reference policies (`random` draws its tool from it and the dialogue id)."""

    @property
    def is_policy(self) -> bool:
        """Whether the backend is a reference policy (a floor) rather than a model."""
        return self.backend in POLICIES

    @property
    def native(self) -> bool:
        return self.prompt_format.prompt_mode == "native"

    def validate(self) -> None:
        if not isinstance(self.decoding, DecodingConfig):
            raise InputError(
                f"decoding must be a diaforge.llm.decoding.DecodingConfig, got {self.decoding!r}"
            )
        # A served model's aids are checked once its server says what it applies (`check`).
        self.decoding.check(decoding_executor(self.backend), policy=self.is_policy)
        if self.backend not in BACKENDS:
            raise InputError(f"unknown model backend {self.backend!r}; choose one of {', '.join(BACKENDS)}")
        if not isinstance(self.prompt_format, PromptFormat):
            raise InputError(
                f"prompt_format must be a diaforge.format.PromptFormat, got {self.prompt_format!r}"
            )


@dataclass(frozen=True)
class FormatChoice:
    """The prompt format of a run and where it came from (``metrics.json``'s ``prompt_format``)."""

    prompt_format: PromptFormat
    source: str
    """``prompt_format.json`` (recorded with the model), ``--prompt-format`` (a file named on the
    command line), ``defaults`` (no file, no option given) or ``options`` (no file; the command
    line's options over the defaults)."""
    file: str | None = None
    """The ``prompt_format.json`` that was read, if any."""
    overridden: Mapping[str, tuple[Any, Any]] = field(default_factory=dict)
    """``{option: (recorded value, given value)}`` for every option that contradicted the file."""
    replaced: Mapping[str, tuple[Any, Any]] = field(default_factory=dict)
    """With ``--prompt-format``: ``{option: (the model's own value, the file's)}`` where the model
    folder's own ``prompt_format.json`` differs from the file given."""

    def warnings(self) -> list[str]:
        """One line per option that overrode the recorded format, naming both values, and one for a
        ``--prompt-format`` file that differs from the model's own."""
        lines = []
        if self.replaced:
            changes = ", ".join(
                f"{name} {shown_value(name, own)} -> {shown_value(name, theirs)}"
                for name, (own, theirs) in self.replaced.items()
            )
            lines.append(
                f"warning: --prompt-format {self.file} replaces the model's own prompt format ({changes})"
            )
        return lines + [
            f"warning: {flag_name(name)} {shown_value(name, given)} overrides {name} {shown_value(name, recorded)} "
            f"recorded in {self.file}; the model is prompted differently from how it was trained"
            for name, (recorded, given) in self.overridden.items()
        ]

    def as_dict(self) -> dict[str, Any]:
        return {
            **self.prompt_format.as_dict(),
            "source": self.source,
            "file": self.file,
            "overridden": {k: {"recorded": r, "given": g} for k, (r, g) in self.overridden.items()},
            "replaced": {k: {"own": o, "file": f} for k, (o, f) in self.replaced.items()},
        }


FORMAT_FLAGS = {
    "prompt_mode": "--prompt-mode",
    "tool_style": "--tool-style",
    "history_reasoning": "--history-reasoning",
    "target_reasoning": "--target-reasoning",
    "system_prompt": "--system-prompt-file",
}
"""The `PromptFormat` options `eval` takes on the command line, and their flags."""


def flag_name(option: str) -> str:
    return FORMAT_FLAGS.get(option, option)


def choose_prompt_format(
    model: str | Path | None,
    given: Mapping[str, Any] | None = None,
    format_file: str | Path | None = None,
) -> FormatChoice:
    """The prompt format to evaluate `model` in: its ``prompt_format.json`` when the folder has one
    (written by training beside the adapter, each checkpoint and the merged model), or the one
    `format_file` names (``--prompt-format``: e.g. a base model prompted in its tuned model's
    format), else the defaults; every option in `given` that is not None wins over either. An
    option that contradicts the file is listed in `FormatChoice.overridden` (see
    `FormatChoice.warnings`)."""
    given = {k: v for k, v in (given or {}).items() if v is not None}
    unknown = sorted(set(given) - {f.name for f in dataclasses.fields(PromptFormat)})
    if unknown:
        raise ValueError(f"not a prompt format option: {unknown[0]!r}")
    folder = Path(model) if model else None
    own = PromptFormat.load(folder) if folder is not None and folder.is_dir() else None
    file, replaced = (str(folder / PROMPT_FORMAT_FILE) if own else None), {}
    recorded = own
    if format_file is not None:
        path = Path(format_file)
        path = path if path.is_file() else path / PROMPT_FORMAT_FILE
        recorded = PromptFormat.load(path)
        if recorded is None:
            raise InputError("no prompt_format.json there (--prompt-format)", path=path)
        replaced = own.differences(recorded) if own is not None else {}
        file = str(path)
    base = recorded or PromptFormat()
    try:
        fmt = dataclasses.replace(base, **given)
    except ValueError as exc:
        raise InputError(str(exc)) from None
    if recorded is None:
        return FormatChoice(fmt, "options" if given else "defaults")
    overridden = {k: (getattr(recorded, k), v) for k, v in given.items() if getattr(recorded, k) != v}
    source = PROMPT_FORMAT_FILE if format_file is None else "--prompt-format"
    return FormatChoice(fmt, source, file, overridden, replaced)


def describe_checkpoint(path: str | Path) -> dict[str, Any]:
    """What a local folder holds: `{"kind": "adapter"|"model", "base": ..., "path": ...}`.

    A folder with `adapter_config.json` is a LoRA adapter whose base comes from the adapter's
    `base_model_name_or_path`; a folder with `config.json` is a full (base or merged) model.
    """
    p = Path(path)
    if not p.exists():
        raise InputError("model path not found (give a local model, adapter or merged folder)", path=p)
    if not p.is_dir():
        raise InputError("model path is not a folder", path=p)
    if (p / "adapter_config.json").exists():
        cfg = json.loads((p / "adapter_config.json").read_text(encoding="utf-8"))
        base = cfg.get("base_model_name_or_path")
        if not base:
            raise InputError("adapter_config.json names no base model", path=p / "adapter_config.json")
        base_path = Path(base)
        if not base_path.is_absolute() and not base_path.exists() and (p / base).exists():
            base_path = p / base
        if not base_path.exists():
            raise InputError(
                f"the adapter's base model {base!r} is not a local folder; materialise it or edit "
                "base_model_name_or_path in adapter_config.json",
                path=p / "adapter_config.json",
            )
        return {"kind": "adapter", "path": str(p), "base": str(base_path)}
    if (p / "config.json").exists():
        return {"kind": "model", "path": str(p), "base": None}
    raise InputError(
        "folder holds neither config.json (a model) nor adapter_config.json (a LoRA adapter)", path=p
    )


def load_hf_model(
    path: str | Path, *, device: str = "cpu", merge_adapter: bool = True
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase, dict[str, Any]]:
    """Loads a base, merged, or base + LoRA adapter model and its tokenizer, offline, and returns
    ``(model, tokenizer, info)``. An adapter is merged into its base's weights in memory
    (`merge_adapter`, the default): the same function, without the adapter's extra matrix products
    at every layer of every generated token."""
    import torch
    from transformers import AutoModelForCausalLM, AutoTokenizer

    info = describe_checkpoint(path)
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    src = info["base"] if info["kind"] == "adapter" else info["path"]
    model = AutoModelForCausalLM.from_pretrained(src, dtype=dtype, local_files_only=True)
    if info["kind"] == "adapter":
        from peft import PeftModel

        model = PeftModel.from_pretrained(model, info["path"], local_files_only=True)
        if merge_adapter:
            model = model.merge_and_unload()
    tokenizer = AutoTokenizer.from_pretrained(_tokenizer_dir(info), local_files_only=True)
    # Checkpoints saved by a Trainer before train/sft.py restored it carry use_cache: false.
    model.config.use_cache = True
    model.to(device)
    model.eval()
    return model, tokenizer, info


def _tokenizer_dir(info: dict[str, Any]) -> str:
    """The adapter's own tokenizer when it saved one, else its base's (or the model's)."""
    src = info["base"] if info["kind"] == "adapter" else info["path"]
    return info["path"] if (Path(info["path"]) / "tokenizer_config.json").exists() else src


def load_tokenizer(path: str | Path) -> Any:
    """The tokenizer `load_hf_model` would load for this base, adapter or merged folder, alone."""
    from transformers import AutoTokenizer

    return AutoTokenizer.from_pretrained(_tokenizer_dir(describe_checkpoint(path)), local_files_only=True)


class ModelUnderTest:
    """The assistant being evaluated. `respond` takes dialogues in progress (their turns so far end
    with a user turn) and returns the model's next assistant turn for each."""

    def __init__(self, cfg: ModelSpec) -> None:
        cfg.validate()
        self.cfg = cfg
        self.label = cfg.model
        self._backend = None
        self._policy = None
        self._counters: dict[str, int] = {}
        if cfg.is_policy:
            self._policy = make_policy(cfg.backend, seed=cfg.seed)
            self.info = {"kind": "policy", "path": None, "base": None, "policy": cfg.backend}
        elif cfg.backend == "hf":
            from diaforge.llm.hf_backend import HFBackend

            model, tokenizer, info = load_hf_model(cfg.model, device=cfg.device)
            self.info = info
            self._backend = HFBackend.from_model(
                model,
                tokenizer,
                model_name=Path(cfg.model).name,
                max_new_tokens=cfg.max_new_tokens,
                default_temperature=cfg.temperature or None,
                prefix_cache=cfg.prefix_cache,
                max_cached_bytes=None if cfg.cache_gib is None else int(cfg.cache_gib * 2**30),
            )
        elif cfg.backend == "openai":
            from diaforge.llm.openai_backend import OpenAIBackend

            self.info = {"kind": "served", "path": cfg.model, "base": None}
            self._backend = OpenAIBackend(
                cfg.model,
                base_url=cfg.base_url,
                api_key_env=cfg.api_key_env,
                default_temperature=cfg.temperature,
                default_max_tokens=cfg.max_new_tokens,
            )
        else:
            from diaforge.llm.vllm_backend import VLLMBackend

            info = describe_checkpoint(cfg.model)
            self.info = info
            adapter = info["kind"] == "adapter"
            self._backend = VLLMBackend(
                info["base"] if adapter else info["path"],
                adapter=info["path"] if adapter else None,
                temperature=cfg.temperature,
                max_tokens=cfg.max_new_tokens,
            )

    async def check(self) -> None:
        """The backend reachable, and the decoding aids applied where they run: a served model's
        server must be `diaforge serve`, or vLLM with the rules that its base URL declares
        (``vllm-rules+http://...``), for them (`OpenAIBackend.require_decoding`)."""
        check = getattr(self._backend, "check", None)
        if check is not None:
            await check()
        require = getattr(self._backend, "require_decoding", None)
        if require is not None:
            require(self.cfg.decoding)

    @property
    def executor(self) -> str:
        """What applies the decoding (``metrics.json["decoding"]["executor"]``): the backend, or for
        a served model what its server said it is (``diaforge-serve``, or ``openai``) or its base
        URL declared (``vllm-rules``)."""
        return getattr(self._backend, "executor", None) or self.cfg.backend

    async def aclose(self) -> None:
        if self._backend is not None:
            await self._backend.aclose()

    def messages(self, d: Dialogue) -> list[dict[str, Any]]:
        """The conversation so far as the model sees it, in its prompt format (the same messages
        training rendered for the turn at this point)."""
        return self.cfg.prompt_format.messages(d, arguments_as="dict" if self.cfg.backend == "hf" else "json")

    def tools(self, d: Dialogue) -> list[dict[str, Any]] | None:
        return self.cfg.prompt_format.tools(d)

    @property
    def is_policy(self) -> bool:
        """Whether a reference policy plays the assistant (no model is loaded)."""
        return self._policy is not None

    async def respond(
        self,
        dialogues: list[Dialogue],
        messages: Sequence[list[dict[str, Any]]] | None = None,
        answered: Sequence[list[Turn]] | None = None,
    ) -> list[Reply]:
        """The next assistant turn of each dialogue. `messages` (one list per dialogue) replaces
        `self.messages(d)`, e.g. a peer's own prompt; tools still come from the dialogue. A
        reference policy reads the dialogue only, and `answered` (static mode: per dialogue, the
        reference's own assistant turns, which its user turns answer; `diaforge.eval.policies`); a model
        never sees them."""
        if self._policy is not None:
            mine = list(answered) if answered is not None else [None] * len(dialogues)
            return [
                self._text_reply(self._policy.respond(d, a)) for d, a in zip(dialogues, mine, strict=True)
            ]
        convs = list(messages) if messages is not None else [self.messages(d) for d in dialogues]
        if len(convs) != len(dialogues):
            raise ValueError(f"{len(convs)} message lists for {len(dialogues)} dialogues")
        requests = [self.request(d, m) for d, m in zip(dialogues, convs, strict=True)]
        results = await generate_replies(self._backend, requests, batch_size=self.cfg.batch_size)
        for r in results:
            for key, n in r.counters.items():
                self._counters[key] = self._counters.get(key, 0) + n
        return [self._reply(r) for r in results]

    def request(self, d: Dialogue, messages: list[dict[str, Any]] | None = None) -> GenerationRequest:
        """What the backend is asked for the next turn of `d`: its conversation (`messages`, else
        `self.messages(d)`), its tools, what its user said, and the run's decoding."""
        return GenerationRequest(
            self.messages(d) if messages is None else messages,
            tools=self.tools(d),
            candidates=tuple(d.candidate_tools),
            said=tuple(t.content for t in d.turns if t.role == "user" and t.content),
            decoding=self.cfg.decoding,
            temperature=self.cfg.temperature,
            max_tokens=self.cfg.max_new_tokens,
            seed=0,
        )

    def _reply(self, r: ChatResult) -> Reply:
        """A backend's reply as a `Reply`: native tool calls parsed from the message, text parsed
        as the model wrote it."""
        if not r.tool_calls:
            reply = self._text_reply(r.text, r.finish_reason)
            if r.reasoning and reply.parsed.thought is None:  # a server's reasoning parser took it
                reply.parsed = dataclasses.replace(reply.parsed, thought=r.reasoning.strip())
            return reply
        message = {"content": r.text, "tool_calls": r.tool_calls, "reasoning_content": r.reasoning}
        return Reply(
            parse_openai_message(message),
            json.dumps(message, ensure_ascii=False, default=str),
            truncated=r.finish_reason in ("length", LOOP_FINISH),
        )

    @property
    def constraint_stats(self) -> dict[str, int] | None:
        """What the decoding rules counted over the run, summed by name (`diaforge.llm.rules`:
        each rule's own counters, e.g. the call rule's tokens chosen under it, deep scans and
        fallbacks); None when no rule keeps a count (no call rule: calls were not constrained)."""
        return dict(self._counters) or None

    @property
    def cache_stats(self) -> dict[str, Any] | None:
        """Prompt tokens the hf backend's prefix cache served against those it computed
        (`diaforge.llm.prefix_cache.CacheStats`); None without that cache."""
        cache = getattr(self._backend, "prefix_cache", None)
        return cache.stats.as_dict() if cache is not None else None

    @staticmethod
    def _text_reply(text: str, finish_reason: str | None = None) -> Reply:
        return Reply(parse_assistant(text), text, truncated=finish_reason in ("length", LOOP_FINISH))


def reply_to_turn(reply: Reply, phase: str | None = None) -> Turn:
    """The model's reply as an assistant turn (malformed or truncated text is kept as the visible
    content, with the reason in `metadata`)."""
    p = reply.parsed
    kind = reply.kind
    if kind == "tool_calls":
        return Turn(role="assistant", thought=p.thought, tool_calls=p.tool_calls, phase=phase)
    if kind == "reply":
        return Turn(role="assistant", thought=p.thought, content=p.content, phase=phase)
    metadata = {"truncated": TRUNCATED_REASON} if kind == "truncated" else {"malformed": p.reason}
    return Turn(
        role="assistant",
        thought=p.thought,
        content=reply.raw.strip(),
        phase=phase,
        metadata=metadata,
    )


def offline_env() -> None:
    """Evaluation never reaches a model hub."""
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")
