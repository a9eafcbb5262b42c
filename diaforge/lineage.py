"""Where a model came from: the training run and the data behind a model folder.

Training (train/sft.py, train/tracking.py) leaves two files beside the adapter, in every
checkpoint, and (train/merge.py) in a merged model:

- ``data_fingerprint.json``: what the model was trained on, hashed into one ``fingerprint``;
- ``training_run.json`` (only when the run reported to W&B): the W&B run (id, name, project,
  entity, group, mode, url) and, in the final folder, the ``model`` artifact the adapter was
  logged as.

`training_lineage` reads them back for `eval run`, which records the result in ``metrics.json``
and in its own W&B run (the training run's id and fingerprint in the config, its group as the
eval run's group, and, online, `use_artifact` of the model artifact), so a W&B user sees
eval <- model <- data.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from diaforge.errors import InputError

TRAINING_RUN_FILE = "training_run.json"
FINGERPRINT_FILE = "data_fingerprint.json"
LINEAGE_FILES = (FINGERPRINT_FILE, TRAINING_RUN_FILE)
"""The files a checkpoint and a merged model copy from the training run's folder."""


def _read(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise InputError(
            f"cannot read the training record ({exc}); delete or restore this file", path=path
        ) from None
    if not isinstance(data, dict):
        raise InputError("expected a JSON object", path=path)
    return data


def training_lineage(folder: str | Path) -> dict[str, Any] | None:
    """What `folder` (an adapter, a checkpoint or a merged model) records of its training:
    ``{"data_fingerprint", "dataset_files", "wandb_run", "model_artifact"}`` (each None when not
    recorded), or None for a folder with neither file (a base model, say)."""
    p = Path(folder)
    if not p.is_dir() or not any((p / name).is_file() for name in LINEAGE_FILES):
        return None
    fingerprint = _read(p / FINGERPRINT_FILE) if (p / FINGERPRINT_FILE).is_file() else {}
    run = _read(p / TRAINING_RUN_FILE) if (p / TRAINING_RUN_FILE).is_file() else {}
    return {
        "data_fingerprint": fingerprint.get("fingerprint") or run.get("data_fingerprint"),
        "dataset_files": fingerprint.get("dataset_files"),
        "wandb_run": run.get("wandb_run"),
        "model_artifact": run.get("model_artifact"),
    }


def lineage_config(lineage: dict[str, Any] | None) -> dict[str, Any]:
    """The flat W&B config keys of an eval run naming its model's training run and data (empty
    without a lineage): ``training_run_id``, ``training_run_path``, ``training_group``,
    ``data_fingerprint``, ``model_artifact``."""
    if not lineage:
        return {}
    run = lineage.get("wandb_run") or {}
    artifact = lineage.get("model_artifact") or {}
    return {
        "training_run_id": run.get("id"),
        "training_run_path": run.get("path"),
        "training_group": run.get("group"),
        "data_fingerprint": lineage.get("data_fingerprint"),
        "model_artifact": artifact.get("ref"),
    }
