"""A training run's folder: checkpoints and resuming, W&B setup, and the files that say what a run
was trained on (`data_fingerprint.json`, `recipe_resolved.yaml`, `prompt_format.json`) and which
W&B run it was (`training_run.json`); the first, second and last go into every checkpoint too, for
evaluation to name the training run and data behind a model (diaforge/lineage.py). The saved
adapter is logged as a W&B ``model`` artifact. Used by train/sft.py."""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from diaforge.format import PROMPT_FORMAT_FILE, PromptFormat
from diaforge.hygiene import sha256_file
from diaforge.lineage import LINEAGE_FILES, TRAINING_RUN_FILE
from diaforge.train.slicing import SliceConfig

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
    """W&B project, entity and tags from the recipe; the run group from ``WANDB_RUN_GROUP``, else
    the output folder's name (evaluation runs of the model join the same group); offline into the
    output folder when there is no API key (`wandb sync` uploads later). Returns the mode."""
    from diaforge.wandb_offline import has_wandb_credentials, wandb_reachable

    if args.wandb_project:
        os.environ["WANDB_PROJECT"] = args.wandb_project
    if args.wandb_entity:
        os.environ["WANDB_ENTITY"] = args.wandb_entity
    if args.wandb_tags:
        os.environ["WANDB_TAGS"] = ",".join(args.wandb_tags)
    os.environ.setdefault("WANDB_RUN_GROUP", output_dir.name)
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


RUN_FILES = ("recipe_resolved.yaml", PROMPT_FORMAT_FILE, "data_fingerprint.json")
"""The files of a training run's W&B artifact (`run_callback`)."""


def wandb_run_config(
    args: Any, fmt: PromptFormat, fingerprint: dict[str, Any], stats: dict[str, Any]
) -> dict[str, Any]:
    """What the W&B run config holds besides TRL's arguments: the prompt format and slicing
    options at the top level (so runs group by the paper's ablations), the dataset files, the data
    fingerprint and the slicing statistics."""
    return {
        "prompt_mode": fmt.prompt_mode,
        "tool_style": fmt.tool_style,
        "history_reasoning": fmt.history_reasoning,
        "target_reasoning": fmt.target_reasoning,
        "system_prompt_file": args.system_prompt_file,
        "system_prompt_sha256": fmt.system_prompt_sha256,
        "eot_token": fmt.eot_token,
        "slicing": args.slicing,
        "overflow": args.overflow,
        "max_dialogues": args.max_dialogues,
        "dataset_path": [str(p) for p in args.dataset_path],
        "eval_dataset_path": [str(p) for p in args.eval_dataset_path or []],
        "data_fingerprint": fingerprint["fingerprint"],
        "diaforge/data": stats,
    }


def run_callback(output_dir: Path, prompt_format: PromptFormat, wandb_config: dict[str, Any]):
    """A `TrainerCallback` that puts `wandb_config` into the W&B run's config and the run files
    (`RUN_FILES`) into a ``run-files`` artifact when training starts, and writes
    ``prompt_format.json`` into every checkpoint it saves."""
    from transformers import TrainerCallback

    class DiaforgeRunCallback(TrainerCallback):
        def on_train_begin(self, args, state, control, **kwargs):
            if not state.is_world_process_zero:
                return
            try:
                import wandb
            except ImportError:
                return
            run = wandb.run
            if run is None:
                return
            run.config.update(wandb_config, allow_val_change=True)
            stats = wandb_config["diaforge/data"]
            run.summary.update({f"data/{k}": v for k, v in stats.items() if not isinstance(v, dict)})
            artifact = wandb.Artifact(
                f"run-files-{run.id}",
                type="run-files",
                description="recipe_resolved.yaml, prompt_format.json and data_fingerprint.json of the run",
                metadata={"data_fingerprint": wandb_config["data_fingerprint"]},
            )
            for name in RUN_FILES:
                if (output_dir / name).is_file():
                    artifact.add_file(str(output_dir / name), name=name)
            run.log_artifact(artifact)
            record = {
                "wandb_run": wandb_run_record(run),
                "data_fingerprint": wandb_config["data_fingerprint"],
            }
            _write_json(output_dir / TRAINING_RUN_FILE, record)

        def on_save(self, args, state, control, **kwargs):
            if state.is_world_process_zero:
                folder = Path(args.output_dir) / f"checkpoint-{state.global_step}"
                if folder.is_dir():
                    prompt_format.save(folder)
                    for name in LINEAGE_FILES:
                        if (output_dir / name).is_file():
                            shutil.copyfile(output_dir / name, folder / name)

    return DiaforgeRunCallback()


@contextlib.contextmanager
def closing_wandb_run() -> Iterator[None]:
    """Finish the W&B run the trainer started (if any) when the block ends, marked failed when it
    ends with an exception. Left to interpreter exit, wandb prints its footer to stdout with colour
    codes; finished here, it goes to stderr with the rest of wandb's lines."""
    try:
        yield
    except BaseException:
        _finish_wandb(1)
        raise
    _finish_wandb(0)


def _finish_wandb(exit_code: int) -> None:
    wandb = sys.modules.get("wandb")
    run = getattr(wandb, "run", None)
    if run is not None:
        run.finish(exit_code=exit_code)


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def wandb_run_record(run: Any) -> dict[str, Any]:
    """What `training_run.json` says of a W&B run: id, name, project, entity, group, mode, url and
    ``path`` (``entity/project/id``, without the entity when offline, where it is not known yet)."""
    entity = getattr(run, "entity", None) or None
    return {
        "id": run.id,
        "name": run.name,
        "project": run.project,
        "entity": entity,
        "group": run.group or None,
        "mode": "offline" if run.offline else "online",
        "url": run.url,
        "path": "/".join(p for p in (entity, run.project, run.id) if p),
    }


def log_model_artifact(output_dir: Path, global_step: int) -> dict[str, Any] | None:
    """Log the saved adapter (or full model) of `output_dir` as a W&B artifact of type ``model``
    named ``adapter-<run id>`` (``model-<run id>`` for a full fine-tune), with the data
    fingerprint, base model and step as metadata, and record it in `training_run.json`. The files
    are not copied (they are final once saved). Returns the artifact record; None when no W&B run
    is active."""
    wandb = sys.modules.get("wandb")
    run = getattr(wandb, "run", None)
    if run is None:
        return None
    record_path = output_dir / TRAINING_RUN_FILE
    record = json.loads(record_path.read_text(encoding="utf-8")) if record_path.is_file() else {}
    adapter = output_dir / "adapter_config.json"
    base = (
        json.loads(adapter.read_text(encoding="utf-8")).get("base_model_name_or_path")
        if adapter.is_file()
        else None
    )
    name = f"{'adapter' if adapter.is_file() else 'model'}-{run.id}"
    fingerprint = json.loads((output_dir / "data_fingerprint.json").read_text()).get("fingerprint")
    artifact = wandb.Artifact(
        name,
        type="model",
        description=f"the {'LoRA adapter' if base else 'model'} saved by train/sft.py at step {global_step}",
        metadata={"data_fingerprint": fingerprint, "base_model": base, "global_step": global_step},
    )
    for path in sorted(output_dir.iterdir()):
        if path.is_file() and path.name != TRAINING_RUN_FILE and not path.name.endswith(".tmp"):
            artifact.add_file(str(path), name=path.name, policy="immutable")
    run.log_artifact(artifact, aliases=["latest", f"step-{global_step}"])
    prefix = "/".join(p for p in (getattr(run, "entity", None) or None, run.project) if p)
    record["wandb_run"] = record.get("wandb_run") or wandb_run_record(run)
    record["model_artifact"] = {"name": name, "type": "model", "ref": f"{prefix}/{name}:latest"}
    _write_json(record_path, record)
    return record["model_artifact"]


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
    tokenizer and chat template. `fingerprint` hashes all of it; `prompt_format` (the options and
    system prompt text, also in `prompt_format.json`) rides along without entering the hash."""
    body = {
        "dataset_files": [{"path": str(p), "sha256": sha256_file(p)} for p in args.dataset_path],
        "eval_dataset_files": [
            {"path": str(p), "sha256": sha256_file(p)} for p in args.eval_dataset_path or []
        ],
        "slicing": {**args.slicing_config(), "max_length": slice_config.max_length},
        "system_prompt_sha256": slice_config.prompt_format.system_prompt_sha256,
        "samples": len(samples),
        "samples_sha256": samples_sha256(samples),
        "tokenizer": str(getattr(tokenizer, "name_or_path", "")),
        "chat_template_sha256": hashlib.sha256((tokenizer.chat_template or "").encode()).hexdigest(),
    }
    canonical = json.dumps(
        {**body, "dataset_files": [f["sha256"] for f in body["dataset_files"]], "tokenizer": None},
        sort_keys=True,
    )
    return {
        "fingerprint": hashlib.sha256(canonical.encode()).hexdigest(),
        **body,
        "prompt_format": slice_config.prompt_format.as_dict(),
    }


def write_run_files(
    output_dir: Path,
    fingerprint: dict[str, Any],
    recipe: dict[str, Any],
    model_path: str,
    resume_from: str | None,
    prompt_format: PromptFormat | None = None,
) -> None:
    """`data_fingerprint.json`, `recipe_resolved.yaml` and `prompt_format.json`, written before
    training starts so that a crashed run still says what it was; a resumed run warns when its data
    changed. The adapter is saved into the same folder, so the prompt format travels with it."""
    import yaml

    output_dir.mkdir(parents=True, exist_ok=True)
    path = output_dir / "data_fingerprint.json"
    if resume_from and path.is_file():
        old = json.loads(path.read_text()).get("fingerprint")
        if old != fingerprint["fingerprint"]:
            logger.warning("the training data or slicing settings changed since %s was written", path)
    path.write_text(json.dumps(fingerprint, indent=2) + "\n")
    if prompt_format is not None:
        prompt_format.save(output_dir)
    recipe = {**recipe, "model_name_or_path": model_path}
    (output_dir / "recipe_resolved.yaml").write_text(
        "# Every recipe key with the value this run used; parses back as a recipe.\n"
        + yaml.safe_dump(recipe, sort_keys=False, allow_unicode=True),
        encoding="utf-8",
    )
