"""The inputs the benchmarks share: the checkout's fixtures and benchmark, the bundled
generator's corpus, SmolLM2, and the demo recipe's slicing settings (parts of `python -m
diaforge.bench.run`, also used by `diaforge.bench.gpu_sft`)."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

#: The checkout: the bench reads its fixtures (tests/fixtures) and writes its reference numbers here.
ROOT = Path(__file__).resolve().parents[1]
CATALOGUE = ROOT / "data_gen" / "assets" / "catalogue_train.json"
FIXTURE = ROOT / "tests" / "fixtures" / "dialogues_small.jsonl"
BENCH = ROOT / "eval" / "benchmarks" / "diabench_heldout_v1.jsonl"
DEMO_RECIPE = ROOT / "recipes" / "smollm2-135m" / "demo.yaml"
SMOLLM2 = ROOT / "outputs" / "models" / "SmolLM2-135M-Instruct"


def log(msg: str) -> None:
    print(f"[bench] {msg}", flush=True)


def generate_corpus(out: Path, num_dialogues: int, seed: int = 0, **options: Any) -> list:
    """Scripted dialogues from the training catalogue (the bundled generator, offline); `options`
    are further `GenerationConfig` fields (``dialogues_per_listing=6, reasoning="lookup"``)."""
    from diaforge.data_gen.engine import generate
    from diaforge.data_gen.gen_config import GenerationConfig
    from diaforge.schema import load_dialogues

    cfg = GenerationConfig(
        catalogue=str(CATALOGUE),
        out=str(out),
        num_dialogues=num_dialogues,
        seed=seed,
        progress=False,
        plots=False,
        export=False,
        **options,
    )
    summary = asyncio.run(generate(cfg))
    log(f"corpus: {summary.accepted} dialogues accepted of {summary.seeds} seeds in {summary.seconds:.1f} s")
    return load_dialogues(out / "dialogues.jsonl")


def smollm2_path(out_dir: Path) -> Path:
    """SmolLM2-135M-Instruct as a safetensors folder: the checkout's copy when there is one (only
    read), else one materialised once into `out_dir`/models (the folder of --out)."""
    from diaforge.llm.smollm2 import is_materialised, materialise_smollm2

    if is_materialised(SMOLLM2):
        return SMOLLM2
    target = out_dir / "models" / SMOLLM2.name
    if not is_materialised(target):
        log(f"materialising SmolLM2-135M-Instruct into {target}")
        materialise_smollm2(target)
    return target


def demo_slicing() -> dict[str, Any]:
    """The slicing settings of recipes/smollm2-135m/demo.yaml (the recipe trained on this machine)."""
    from diaforge.format import PromptFormat
    from diaforge.train.config import read_recipe
    from diaforge.train.slicing import SliceConfig

    recipe = read_recipe(DEMO_RECIPE)
    defaults = {
        **{k: getattr(PromptFormat, k) for k in PromptFormat.CHOICES},
        "overflow": SliceConfig.overflow,
        "max_length": 1024,
    }
    return {k: recipe.get(k, v) for k, v in defaults.items()}


def slice_samples(tokenizer, dialogues, **settings):
    from diaforge.train.slicing import SliceConfig, TurnSlicer

    return TurnSlicer(tokenizer, SliceConfig.of(**settings)).slice_all(dialogues)
