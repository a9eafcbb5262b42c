"""The files every evaluation command leaves in its run folder, written one way.

`eval run` (`diaforge.eval.report.write_run`), ``bfcl``, ``next-action`` and ``turn-level`` each leave a
metrics JSON, one JSONL line per scored item and, for some, a markdown report, under names that
share a prefix::

    eval run      metrics.json              transcripts.jsonl               report.md
    bfcl          bfcl_metrics.json         bfcl_transcripts.jsonl          bfcl_report.md
    next-action   next_action_metrics.json  next_action_predictions.jsonl
    turn-level    turn_level_metrics.json   turn_level_records.jsonl

`write_run_files` writes such a set. Every file is written whole to a temporary name and then
renamed, so an interrupted run never leaves half a file where a complete one was.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from pydantic import BaseModel

from diaforge.jsonl import dump_record

__all__ = ["write_atomic", "write_run_files"]


def write_atomic(path: Path, text: str) -> None:
    """`text` into `path` through a temporary file and a rename."""
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    os.replace(tmp, path)


def _line(record: BaseModel | Mapping[str, Any]) -> str:
    """A pydantic record as `diaforge.schema` writes it (it refuses NaN and lone surrogates); a
    plain record as JSON, anything JSON cannot hold as its text."""
    if isinstance(record, BaseModel):
        return dump_record(record)
    return json.dumps(record, ensure_ascii=False, default=str)


def write_run_files(
    run_dir: str | Path,
    *,
    metrics: Mapping[str, Any],
    records: Iterable[BaseModel | Mapping[str, Any]],
    records_name: str,
    prefix: str = "",
    report: str | None = None,
) -> Path:
    """Write ``<prefix>metrics.json`` (`metrics`, indented), ``<prefix><records_name>.jsonl`` (one
    line per record: pydantic models or plain mappings) and, when `report` is given,
    ``<prefix>report.md`` into `run_dir` (created); returns the folder."""
    out = Path(run_dir)
    out.mkdir(parents=True, exist_ok=True)
    lines = "".join(_line(r) + "\n" for r in records)
    write_atomic(out / f"{prefix}{records_name}.jsonl", lines)
    write_atomic(out / f"{prefix}metrics.json", json.dumps(metrics, indent=2, ensure_ascii=False) + "\n")
    if report is not None:
        write_atomic(out / f"{prefix}report.md", report)
    return out
