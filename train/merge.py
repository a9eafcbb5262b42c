"""Merge a LoRA adapter into its base model and save the result as a plain model folder.

    diaforge merge --adapter outputs/run --output outputs/run-merged [--base PATH_OR_ID] [--dtype auto]
    python -m diaforge.train.merge ...    (or python train/merge.py ... in the checkout)

The base is the one recorded in the adapter (`adapter_config.json`, `base_model_name_or_path`)
unless `--base` says otherwise. The tokenizer (with its chat template) is taken from the adapter
folder when `train/sft.py` saved it there, else from the base, and the adapter's
`prompt_format.json` is copied (and its response template set in the saved tokenizer config, so
stock engines parse the merged model), so evaluating the merged model prompts it as it was trained, with
`data_fingerprint.json` and `training_run.json`, so its evaluation names the training run and data.
Problems with the paths give one line and exit code 2.
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import warnings
from pathlib import Path

from diaforge.cliargs import DefaultsHelpFormatter, OneLineArgumentParser, output_path
from diaforge.console import (
    emit,
    library_bars_off,
    quiet_library_bars,
    results_only_on_stdout,
    stage_bar,
)
from diaforge.errors import command_main
from diaforge.format import PROMPT_FORMAT_FILE, PromptFormat, attach_response_template
from diaforge.lineage import LINEAGE_FILES
from diaforge.train.modeling import ModelPathError, check_model_path, gguf_file_in, load_tokenizer

DTYPES = ("auto", "float32", "bfloat16", "float16")
MERGE_STEPS = 4


def adapter_base(adapter_dir: Path) -> str:
    config = adapter_dir / "adapter_config.json"
    if not config.is_file():
        raise ModelPathError(f"{adapter_dir}: no adapter_config.json (not a LoRA adapter folder)")
    try:
        base = json.loads(config.read_text(encoding="utf-8")).get("base_model_name_or_path")
    except json.JSONDecodeError as exc:
        raise ModelPathError(f"{config}: invalid JSON ({exc.msg})") from None
    if not base:
        raise ModelPathError(f"{config}: base_model_name_or_path is not set (pass --base)")
    return base


def merge(
    adapter: str | Path,
    output: str | Path,
    *,
    base: str | None = None,
    dtype: str = "auto",
    trust_remote_code: bool = False,
    progress: bool | None = None,
) -> Path:
    """Load base + adapter, merge the LoRA weights into the base and save model and tokenizer,
    with a bar over those steps on stderr (`progress`; None: when stderr is a terminal)."""
    adapter_dir = Path(adapter).expanduser()
    base_path = check_model_path(base or adapter_base(adapter_dir))
    out = Path(output).expanduser()
    if out.resolve() == adapter_dir.resolve():
        raise ModelPathError(f"--output {output}: must differ from the adapter folder")
    kwargs: dict = {"trust_remote_code": trust_remote_code}
    if Path(base_path).is_dir() and (gguf := gguf_file_in(Path(base_path))):
        kwargs["gguf_file"] = gguf
    with stage_bar(MERGE_STEPS, desc="merge", enabled=progress) as step:
        step("importing torch, transformers and peft")  # most of a small model's merge time
        import torch
        from peft import PeftModel
        from transformers import AutoModelForCausalLM

        kwargs["dtype"] = dtype if dtype == "auto" else getattr(torch, dtype)
        with library_bars_off():  # this bar stands for transformers' own
            step(f"loading the base {Path(base_path).name}")
            model = AutoModelForCausalLM.from_pretrained(base_path, **kwargs)
            step("merging the adapter")
            with warnings.catch_warnings():  # peft calls a transformers method deprecated for v6
                warnings.filterwarnings(
                    "ignore", message=".*is_gradient_checkpointing", category=FutureWarning
                )
                merged = PeftModel.from_pretrained(model, str(adapter_dir)).merge_and_unload()
            step(f"saving to {out}")
            out.mkdir(parents=True, exist_ok=True)
            merged.save_pretrained(out)
            has_tokenizer = (adapter_dir / "tokenizer_config.json").is_file()
            tokenizer = load_tokenizer(
                str(adapter_dir) if has_tokenizer else base_path, trust_remote_code=trust_remote_code
            )
            fmt = PromptFormat.load(adapter_dir)
            if fmt is not None:  # the base's tokenizer lacks it; an older adapter's too
                attach_response_template(tokenizer, fmt)
            tokenizer.save_pretrained(out)
    for name in (PROMPT_FORMAT_FILE, *LINEAGE_FILES):
        if (adapter_dir / name).is_file():
            shutil.copyfile(adapter_dir / name, out / name)
    (out / "merge_info.json").write_text(
        json.dumps({"base": base_path, "adapter": str(adapter_dir.resolve()), "dtype": dtype}, indent=2)
        + "\n"
    )
    return out


def build_parser() -> argparse.ArgumentParser:
    """The command line of `main` (a bad one: one line, exit 2)."""
    parser = OneLineArgumentParser(
        prog="train/merge.py", description=__doc__.split("\n\n")[0], formatter_class=DefaultsHelpFormatter
    )
    parser.add_argument(
        "--adapter", required=True, help="folder written by train/sft.py (adapter_config.json)"
    )
    parser.add_argument("--output", type=output_path, required=True, help="folder for the merged model")
    parser.add_argument(
        "--base", default=None, help="base model folder or hub id (default: the adapter's own)"
    )
    parser.add_argument(
        "--dtype", default="auto", choices=DTYPES, help="dtype to load and save in (default auto)"
    )
    parser.add_argument("--trust-remote-code", action="store_true", help="allow the base model's own code")
    parser.add_argument("--quiet", action="store_true", help="no progress bar")
    return parser


@command_main
def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if args.quiet:
        quiet_library_bars()
    with results_only_on_stdout():
        out = merge(
            args.adapter,
            args.output,
            base=args.base,
            dtype=args.dtype,
            trust_remote_code=args.trust_remote_code,
            progress=False if args.quiet else None,
        )
    emit(f"merged model saved to {out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
