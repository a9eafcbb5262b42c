"""A training run's folder: checkpoints and resuming, W&B setup, and the files that say what a run
was trained on (`data_fingerprint.json`, `recipe_resolved.yaml`). Used by train/sft.py."""

from __future__ import annotations

import hashlib
import json
import logging
import os
import shutil
from pathlib import Path
from typing import Any

from data_gen.runs import has_wandb_credentials, sha256_file, wandb_reachable
from train.slicing import SliceConfig

logger = logging.getLogger("diaforge.sft")

# --------------------------------------------------------------------------------------------
# Output folder, resume, W&B
# --------------------------------------------------------------------------------------------


def checkpoints(output_dir: Path) -> list[Path]:
    """checkpoint-N folders of `output_dir`, oldest first."""
    found = []
    for p in output_dir.glob("checkpoint-*") if output_dir.is_dir() else []:
        step = p.name.removeprefix("checkpoint-")
        if p.is_dir() and step.isdigit():
            found.append((int(step), p))
    return [p for _, p in sorted(found)]


def last_complete_checkpoint(output_dir: Path) -> Path | None:
    """The newest checkpoint holding trainer_state.json (written last), so a checkpoint cut short by
    a crash is skipped."""
    for p in reversed(checkpoints(output_dir)):
        if (p / "trainer_state.json").is_file():
            return p
        logger.warning("skipping incomplete checkpoint %s (no trainer_state.json)", p)
    return None


def resume_checkpoint(args: Any, training_args: Any, output_dir: Path, *, main_process: bool) -> str | None:
    """The checkpoint to resume from: `resume_from_checkpoint` when given, else (with `resume`) the
    last complete checkpoint-N of the output folder. `overwrite_output_dir` deletes them first."""
    if args.overwrite_output_dir:
        if main_process:
            for ckpt in checkpoints(output_dir):
                shutil.rmtree(ckpt)
        return training_args.resume_from_checkpoint
    if training_args.resume_from_checkpoint is not None:
        return training_args.resume_from_checkpoint
    if not args.resume:
        if checkpoints(output_dir):
            logger.warning("resume is false: starting afresh; older checkpoints in %s are kept", output_dir)
        return None
    last = last_complete_checkpoint(output_dir)
    return str(last) if last else None


def configure_wandb(args: Any, output_dir: Path) -> str:
    """W&B project, entity and tags from the recipe; offline into the output folder when there is
    no API key (`wandb sync` uploads later). Returns the mode."""
    if args.wandb_project:
        os.environ["WANDB_PROJECT"] = args.wandb_project
    if args.wandb_entity:
        os.environ["WANDB_ENTITY"] = args.wandb_entity
    if args.wandb_tags:
        os.environ["WANDB_TAGS"] = ",".join(args.wandb_tags)
    os.environ.setdefault("WANDB_DIR", str(output_dir))
    if "WANDB_MODE" not in os.environ and not has_wandb_credentials():
        os.environ["WANDB_MODE"] = "offline"
        for var, sub in (
            ("WANDB_CACHE_DIR", "cache"),
            ("WANDB_DATA_DIR", "data"),
            ("WANDB_CONFIG_DIR", "config"),
        ):
            os.environ.setdefault(var, str(output_dir / "wandb" / sub))
        logger.info("no W&B API key: wandb runs offline in %s (upload later with `wandb sync`)", output_dir)
    elif os.environ.get("WANDB_MODE", "online") == "online":
        ok, why = wandb_reachable()
        if not ok:
            _go_offline(output_dir)
            logger.warning(
                "W&B is unreachable (%s): wandb runs offline in %s; upload later with `wandb sync`",
                why,
                output_dir,
            )
    return os.environ.get("WANDB_MODE", "online")


def _go_offline(output_dir: Path) -> None:
    os.environ["WANDB_MODE"] = "offline"
    for var, sub in (
        ("WANDB_CACHE_DIR", "cache"),
        ("WANDB_DATA_DIR", "data"),
        ("WANDB_CONFIG_DIR", "config"),
    ):
        os.environ.setdefault(var, str(output_dir / "wandb" / sub))


def stats_callback(stats: dict[str, Any], fingerprint: dict[str, Any]):
    from transformers import TrainerCallback

    class DatasetStatsCallback(TrainerCallback):
        """Puts the slicing statistics and the data fingerprint into the W&B run's config."""

        def on_train_begin(self, args, state, control, **kwargs):
            if not state.is_world_process_zero:
                return
            try:
                import wandb
            except ImportError:
                return
            if wandb.run is not None:
                wandb.run.config.update(
                    {"diaforge/data": stats, "diaforge/data_fingerprint": fingerprint["fingerprint"]},
                    allow_val_change=True,
                )
                wandb.run.summary.update(
                    {f"data/{k}": v for k, v in stats.items() if not isinstance(v, dict)}
                )

    return DatasetStatsCallback()


# --------------------------------------------------------------------------------------------
# Data fingerprint
# --------------------------------------------------------------------------------------------


def samples_sha256(samples: list[dict[str, Any]]) -> str:
    """Hash of the token ids and labels of every sample, in order: it changes whenever what the
    model is trained on changes (data, slicing settings, system prompt, template, tokenizer)."""
    from array import array

    digest = hashlib.sha256()
    for sample in samples:
        digest.update(array("q", sample["input_ids"]).tobytes())
        digest.update(array("q", sample["labels"]).tobytes())
    return digest.hexdigest()


def data_fingerprint(
    args: Any, slice_config: SliceConfig, tokenizer: Any, samples: list[dict[str, Any]]
) -> dict[str, Any]:
    """What the training data was: file hashes, slicing settings, sample count and token hash,
    tokenizer and chat template. `fingerprint` hashes all of it."""
    body = {
        "dataset_files": [{"path": str(p), "sha256": sha256_file(p)} for p in args.dataset_path],
        "eval_dataset_files": [
            {"path": str(p), "sha256": sha256_file(p)} for p in args.eval_dataset_path or []
        ],
        "slicing": {**args.slicing_config(), "max_length": slice_config.max_length},
        "system_prompt_sha256": hashlib.sha256(slice_config.system_prompt_template.encode()).hexdigest()
        if slice_config.system_prompt_template
        else None,
        "samples": len(samples),
        "samples_sha256": samples_sha256(samples),
        "tokenizer": str(getattr(tokenizer, "name_or_path", "")),
        "chat_template_sha256": hashlib.sha256((tokenizer.chat_template or "").encode()).hexdigest(),
    }
    canonical = json.dumps(
        {**body, "dataset_files": [f["sha256"] for f in body["dataset_files"]], "tokenizer": None},
        sort_keys=True,
    )
    return {"fingerprint": hashlib.sha256(canonical.encode()).hexdigest(), **body}


def write_run_files(
    output_dir: Path,
    fingerprint: dict[str, Any],
    recipe: dict[str, Any],
    model_path: str,
    resume_from: str | None,
) -> None:
    """`data_fingerprint.json` and `recipe_resolved.yaml`, written before training starts so that a
    crashed run still says what it was; a resumed run warns when its data changed."""
    import yaml

    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / "data_fingerprint.json"
    if resume_from and path.is_file():
        old = json.loads(path.read_text()).get("fingerprint")
        if old != fingerprint["fingerprint"]:
            logger.warning("the training data or slicing settings changed since %s was written", path)
    path.write_text(json.dumps(fingerprint, indent=2) + "\n")
    recipe = {**recipe, "model_name_or_path": model_path}
    (output_dir / "recipe_resolved.yaml").write_text(
        "# Every recipe key with the value this run used; parses back as a recipe.\n"
        + yaml.safe_dump(recipe, sort_keys=False, allow_unicode=True),
        encoding="utf-8",
    )
