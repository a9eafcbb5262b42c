"""Model and tokenizer loading for training: path checks, the tiny test model, quantisation.

Three kinds of `model_name_or_path` are accepted:

* a local folder (a `save_pretrained` output, or one holding a single `.gguf` file);
* a hub id of the form ``owner/name`` (used from the local cache when ``HF_HUB_OFFLINE=1``);
* ``tiny://llama``: a tiny random `LlamaForCausalLM` with a byte-level BPE tokenizer trained on
  the spot on the training dialogues and a ChatML template. It is built once, deterministically,
  into ``<output_dir>/tiny-base`` and reused from there, so an adapter trained on it can be
  reloaded and merged like any other. The tests and ``recipes/tiny`` use it.

Every problem with the model path becomes a `ModelPathError`, one line naming the path, instead
of a traceback from a hub lookup.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from diaforge.errors import UserError

TINY_SCHEME = "tiny://"
TINY_KINDS = ("llama",)
TINY_DIRNAME = "tiny-base"

# Special tokens of the tiny tokenizer (ChatML plus a padding token).
TINY_SPECIAL_TOKENS = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<|pad|>"]

# ChatML with OpenAI-style tools and calls (Qwen-like <tools>/<tool_call> tags) and the thought of
# an assistant message rendered from `reasoning_content`, so both prompt and native mode train on it.
TINY_CHAT_TEMPLATE = (
    "{%- if messages and messages[0].role == 'system' %}"
    "{%- set system_message = messages[0].content %}{%- set rest = messages[1:] %}"
    "{%- else %}"
    "{%- set system_message = 'You are a helpful assistant.' %}{%- set rest = messages %}"
    "{%- endif %}"
    "{{- '<|im_start|>system\\n' + system_message }}"
    "{%- if tools %}"
    "{{- '\\n\\n# Tools\\n\\nYou may call the functions below.\\n<tools>' }}"
    "{%- for t in tools %}{{- '\\n' + (t | tojson) }}{%- endfor %}"
    "{{- '\\n</tools>\\n\\nTo call one, answer with "
    '<tool_call>{"name": <function name>, "arguments": <JSON object>}</tool_call>.\' }}'
    "{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- for message in rest %}"
    "{{- '<|im_start|>' + message.role + '\\n' }}"
    "{%- if message.role == 'assistant' %}"
    "{%- if message.reasoning_content %}"
    "{{- '<think>\\n' + message.reasoning_content + '\\n</think>\\n' }}"
    "{%- endif %}"
    "{%- if message.content %}{{- message.content }}{%- endif %}"
    "{%- for call in message.tool_calls or [] %}"
    "{%- set fn = call.function if call.function is defined else call %}"
    '{{- \'<tool_call>{"name": "\' + fn.name + \'", "arguments": \' }}'
    "{%- if fn.arguments is string %}{{- fn.arguments }}{%- else %}{{- fn.arguments | tojson }}{%- endif %}"
    "{{- '}</tool_call>' }}"
    "{%- endfor %}"
    "{%- else %}"
    "{{- message.content }}"
    "{%- endif %}"
    "{{- '<|im_end|>\\n' }}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)

# Text the tiny tokenizer always sees, so that common words and JSON punctuation get merges even
# when the training dialogues are few.
_TINY_BASE_TEXT = (
    "You are a helpful assistant. <think>\nThe user wants a tool.\n</think>\n"
    '[{"name": "tool", "args": {"id": 1, "date": "2025-01-01"}}] '
    "Could you tell me which one you mean, and the identifier? Thanks, I will do that now.\n"
)

_HUB_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,95}/[A-Za-z0-9][A-Za-z0-9._-]{0,95}")


class ModelPathError(UserError):
    """A model path that cannot be used; `str(err)` is one line meant to be printed as is."""


# --------------------------------------------------------------------------------------------
# Path checks
# --------------------------------------------------------------------------------------------


def is_tiny(name_or_path: str | None) -> bool:
    return bool(name_or_path) and str(name_or_path).startswith(TINY_SCHEME)


def looks_like_hub_id(name: str) -> bool:
    """`owner/name` with hub-legal characters, and nothing that only a file path would have."""
    return (
        bool(_HUB_ID.fullmatch(name))
        and ".." not in name
        and "--" not in name
        and not name.endswith((".yaml", ".yml", ".json", ".gguf", ".safetensors", ".bin"))
    )


def _hub_offline() -> bool:
    return os.environ.get("HF_HUB_OFFLINE", "").strip().lower() in ("1", "true", "yes", "on")


def _is_cached(repo_id: str, revision: str | None = None) -> bool:
    try:
        from huggingface_hub import try_to_load_from_cache

        found = try_to_load_from_cache(repo_id, "config.json", revision=revision)
    except Exception:
        return False
    return isinstance(found, str)


def gguf_file_in(folder: Path) -> str | None:
    """The name of the single `.gguf` file of a folder without `config.json`, else None."""
    if (folder / "config.json").exists():
        return None
    ggufs = sorted(p.name for p in folder.glob("*.gguf"))
    return ggufs[0] if len(ggufs) == 1 else None


def check_model_path(name_or_path: str | None, *, revision: str | None = None) -> str:
    """Return the path or hub id unchanged when it can be loaded; raise `ModelPathError` otherwise.

    A local folder must hold `config.json` (or exactly one `.gguf` file). Anything that is not an
    existing folder must look like a hub id (`owner/name`); with ``HF_HUB_OFFLINE=1`` it must also
    be in the local cache. Whether an online hub id exists is left to the loader.
    """
    if not name_or_path:
        raise ModelPathError("model_name_or_path is not set (give a local folder, a hub id or tiny://llama)")
    name = str(name_or_path)
    path = Path(name).expanduser()
    if path.is_dir():
        if (path / "config.json").exists() or gguf_file_in(path):
            return name
        raise ModelPathError(f"model_name_or_path '{name}': folder has no config.json (not a saved model)")
    if path.exists():
        raise ModelPathError(f"model_name_or_path '{name}': is a file, expected a model folder or hub id")
    if not looks_like_hub_id(name):
        raise ModelPathError(f"model_name_or_path '{name}': no such folder, and not a hub id (owner/name)")
    if _hub_offline() and not _is_cached(name, revision):
        raise ModelPathError(
            f"model_name_or_path '{name}': not in the local Hugging Face cache and HF_HUB_OFFLINE=1 "
            "(download it first, or point to a local folder)"
        )
    return name


def resolve_model_path(
    name_or_path: str | None,
    *,
    output_dir: str | Path,
    texts: Iterable[str] = (),
    seed: int = 0,
    revision: str | None = None,
) -> str:
    """The folder or hub id to load. ``tiny://llama`` is built into ``<output_dir>/tiny-base``
    (once; an existing build is reused) and its absolute path returned."""
    if is_tiny(name_or_path):
        kind = str(name_or_path)[len(TINY_SCHEME) :]
        if kind not in TINY_KINDS:
            raise ModelPathError(
                f"model_name_or_path '{name_or_path}': unknown tiny model (expected "
                + ", ".join(TINY_SCHEME + k for k in TINY_KINDS)
                + ")"
            )
        target = Path(output_dir).expanduser().resolve() / TINY_DIRNAME
        if not (target / "config.json").exists():
            build_tiny_model(target, texts=texts, seed=seed)
        return str(target)
    return check_model_path(name_or_path, revision=revision)


def _one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


# --------------------------------------------------------------------------------------------
# The tiny model
# --------------------------------------------------------------------------------------------


def build_tiny_tokenizer(texts: Iterable[str], *, vocab_size: int = 1024):
    """A byte-level BPE tokenizer trained on `texts` (decoding gives back the exact text), with the
    ChatML special tokens and chat template. Deterministic for the same texts."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast

    backend = Tokenizer(models.BPE())
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    backend.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=vocab_size,
        special_tokens=TINY_SPECIAL_TOKENS,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
        show_progress=False,
    )
    corpus = [_TINY_BASE_TEXT, *texts]
    backend.train_from_iterator(corpus, trainer=trainer)
    tokenizer = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<|endoftext|>",
        eos_token="<|im_end|>",
        pad_token="<|pad|>",
        unk_token=None,
        additional_special_tokens=["<|im_start|>", "<|im_end|>"],
    )
    tokenizer.chat_template = TINY_CHAT_TEMPLATE
    tokenizer.padding_side = "right"
    return tokenizer


def build_tiny_model(
    path: str | Path,
    *,
    texts: Iterable[str] = (),
    seed: int = 0,
    vocab_size: int = 1024,
    hidden_size: int = 64,
    num_layers: int = 2,
    num_heads: int = 4,
    max_positions: int = 8192,
    initializer_range: float = 0.1,
) -> Path:
    """Save a tiny random `LlamaForCausalLM` and its tokenizer to `path` and return it.

    The weights are drawn wider than usual (`initializer_range` 0.1 instead of 0.02): with the
    output head frozen under LoRA, a narrow head caps the logits near zero and the loss could
    barely fall below log(vocab), which would make the training tests meaningless.

    The folder is written next to its final place and renamed into it, so a crash never leaves a
    half-built model that a rerun would take for a finished one.
    """
    import torch
    from transformers import GenerationConfig, LlamaConfig, LlamaForCausalLM

    path = Path(path)
    tokenizer = build_tiny_tokenizer(texts, vocab_size=vocab_size)
    config = LlamaConfig(
        vocab_size=len(tokenizer),
        hidden_size=hidden_size,
        intermediate_size=hidden_size * 2,
        num_hidden_layers=num_layers,
        num_attention_heads=num_heads,
        num_key_value_heads=num_heads,
        max_position_embeddings=max_positions,
        initializer_range=initializer_range,
        tie_word_embeddings=False,
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    fork_devices: list[int] = []
    with torch.random.fork_rng(devices=fork_devices):
        torch.manual_seed(seed)
        model = LlamaForCausalLM(config)
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=tokenizer.eos_token_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    tmp = path.with_name(path.name + f".tmp-{os.getpid()}")
    if tmp.exists():
        shutil.rmtree(tmp)
    tmp.mkdir(parents=True)
    model.save_pretrained(tmp)
    tokenizer.save_pretrained(tmp)
    (tmp / "tiny_model.json").write_text(
        json.dumps(
            {
                "kind": "llama",
                "seed": seed,
                "vocab_size": len(tokenizer),
                "hidden_size": hidden_size,
                "num_layers": num_layers,
                "num_heads": num_heads,
                "note": "random weights, built by diaforge.train.modeling.build_tiny_model for tests",
            },
            indent=2,
        )
        + "\n"
    )
    if path.exists():  # another process finished first: keep its copy (same seed, same result)
        shutil.rmtree(tmp)
    else:
        path.parent.mkdir(parents=True, exist_ok=True)
        os.replace(tmp, path)
    return path


# --------------------------------------------------------------------------------------------
# Loading
# --------------------------------------------------------------------------------------------


def load_tokenizer(
    name_or_path: str,
    *,
    revision: str | None = None,
    trust_remote_code: bool = False,
    chat_template_path: str | None = None,
):
    """The tokenizer of a model, right-padded, with a pad token (the eos token when it has none).

    `chat_template_path` (a `.jinja` file) replaces the model's chat template.
    """
    from transformers import AutoTokenizer

    kwargs: dict[str, Any] = {"revision": revision, "trust_remote_code": trust_remote_code}
    folder = Path(name_or_path)
    if folder.is_dir() and (gguf := gguf_file_in(folder)):
        kwargs["gguf_file"] = gguf
    try:
        tokenizer = AutoTokenizer.from_pretrained(name_or_path, **kwargs)
    except Exception as exc:  # hub or file errors: one line naming the path
        raise ModelPathError(f"could not load the tokenizer of '{name_or_path}': {_one_line(exc)}") from None
    if chat_template_path:
        template = Path(chat_template_path)
        if not template.is_file():
            raise ModelPathError(f"chat_template_path '{chat_template_path}': no such file")
        tokenizer.chat_template = template.read_text(encoding="utf-8")
    if not getattr(tokenizer, "chat_template", None):
        raise ModelPathError(
            f"the tokenizer of '{name_or_path}' has no chat template (set chat_template_path to a .jinja file)"
        )
    if tokenizer.pad_token is None:
        tokenizer.pad_token = tokenizer.eos_token
    tokenizer.padding_side = "right"
    return tokenizer


def kbit_device_map() -> dict[str, int]:
    """The whole quantised model on this process's GPU (bitsandbytes models cannot be sharded by
    DeepSpeed ZeRO-3 or moved after loading)."""
    from accelerate import PartialState

    return {"": PartialState().local_process_index}


def model_init_kwargs(model_args: Any, training_args: Any, *, on_gpu: bool) -> dict[str, Any]:
    """`from_pretrained` keyword arguments from TRL's ModelConfig: dtype, attention, quantisation.

    8-bit (the paper's setting) and 4-bit (QLoRA) loading go through bitsandbytes and place the
    whole model on this process's GPU, as TRL's scripts do.
    """
    from trl import get_quantization_config

    dtype = model_args.dtype
    if not on_gpu:
        dtype = "float32"  # CPU: full precision (bf16 matmuls are slow and lossy there)
    kwargs: dict[str, Any] = {
        "revision": model_args.model_revision,
        "trust_remote_code": getattr(training_args, "trust_remote_code", False),
        "dtype": dtype,
    }
    if model_args.attn_implementation:
        kwargs["attn_implementation"] = model_args.attn_implementation
    quantization = get_quantization_config(model_args)
    if quantization is not None:
        if not on_gpu:
            raise ModelPathError(
                "load_in_8bit / load_in_4bit need a CUDA GPU (bitsandbytes); set both to false on CPU"
            )
        kwargs["quantization_config"] = quantization
        kwargs["device_map"] = kbit_device_map()
    return kwargs


def load_model(name_or_path: str, model_args: Any, training_args: Any, *, on_gpu: bool):
    """The base model for LoRA training (see `model_init_kwargs`); k-bit models are prepared for
    training (layer norms in fp32, input gradients for checkpointing)."""
    from transformers import AutoModelForCausalLM

    kwargs = model_init_kwargs(model_args, training_args, on_gpu=on_gpu)
    folder = Path(name_or_path)
    if folder.is_dir() and (gguf := gguf_file_in(folder)):
        kwargs["gguf_file"] = gguf
    try:
        model = AutoModelForCausalLM.from_pretrained(name_or_path, **kwargs)
    except (OSError, ValueError) as exc:
        raise ModelPathError(f"could not load the model '{name_or_path}': {_one_line(exc)}") from None
    if "quantization_config" in kwargs:
        from peft import prepare_model_for_kbit_training

        model = prepare_model_for_kbit_training(
            model, use_gradient_checkpointing=bool(training_args.gradient_checkpointing)
        )
    return model
