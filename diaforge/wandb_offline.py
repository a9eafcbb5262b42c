"""W&B without a server: whether to go offline, and reading offline runs back.

- `has_wandb_credentials` / `wandb_reachable`: whether W&B has an API key and whether its server
  answers within `WANDB_PROBE_TIMEOUT_S`, so that training and evaluation choose offline mode up
  front instead of waiting for wandb's own retries to fail the run.
- `run_records` and the readers after it: what an offline run recorded, from its folder, with no
  server: the run config and the artifacts it logged. `wandb sync` uploads the same records; this
  lets a person (or a test) check them before that.

An offline run folder (``.../wandb/offline-run-<time>-<id>/``) holds ``run-<id>.wandb``: a
LevelDB-style log (a 7-byte file header ``:W&B`` + magic + version, then 32 KiB blocks of records
with a 7-byte header: CRC-32, length, and type full/first/middle/last) of
``wandb_internal_pb2.Record`` protobufs.
"""

from __future__ import annotations

import json
import netrc
import os
import struct
from pathlib import Path
from typing import Any

_BLOCK = 32768
_HEADER = 7
_FULL, _FIRST, _MIDDLE, _LAST = 1, 2, 3, 4


def has_wandb_credentials() -> bool:
    """True when W&B has an API key: ``WANDB_API_KEY``, or a ~/.netrc entry for its host."""
    if os.environ.get("WANDB_API_KEY", "").strip():
        return True
    try:
        host = os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai").split("://")[-1].split("/")[0]
        return netrc.netrc().authenticators(host) is not None
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return False


#: Seconds `wandb_reachable` waits for a TCP connection to the W&B server.
WANDB_PROBE_TIMEOUT_S = 3.0


def wandb_reachable(timeout: float = WANDB_PROBE_TIMEOUT_S) -> tuple[bool, str]:
    """Whether the W&B server (``WANDB_BASE_URL``, default api.wandb.ai) accepts a TCP connection
    within `timeout` seconds, and why not when it does not. Name resolution and the connection are
    both bounded, so a machine without a network answers in seconds (wandb itself retries for
    about 100 s and then fails the run)."""
    import concurrent.futures
    import socket
    from urllib.parse import urlsplit

    url = urlsplit(os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai"))
    host = url.hostname or "api.wandb.ai"
    port = url.port or (80 if url.scheme == "http" else 443)

    def connect() -> None:
        with socket.create_connection((host, port), timeout=timeout):
            pass

    pool = concurrent.futures.ThreadPoolExecutor(max_workers=1)
    try:
        pool.submit(connect).result(timeout=timeout + 0.5)  # getaddrinfo has no timeout of its own
    except concurrent.futures.TimeoutError:
        return False, f"no answer from {host}:{port} within {timeout:g}s"
    except OSError as exc:
        return False, f"cannot reach {host}:{port} ({exc.strerror or exc})"
    finally:
        pool.shutdown(wait=False)
    return True, ""


def run_records(run_file: str | Path) -> list[Any]:
    """The `wandb_internal_pb2.Record`s of a ``run-*.wandb`` file, in order."""
    from wandb.proto import wandb_internal_pb2

    raw = Path(run_file).read_bytes()
    if raw[:4] != b":W&B":
        raise ValueError(f"{run_file}: not a W&B run file")
    pos, parts, records = _HEADER, b"", []
    while pos + _HEADER <= len(raw):
        left = _BLOCK - pos % _BLOCK
        if left < _HEADER:  # the rest of a block too short for a header is padding
            pos += left
            continue
        _, length, kind = struct.unpack("<IHB", raw[pos : pos + _HEADER])
        if length == 0 and kind == 0:  # zero padding to the end of the block
            pos += left
            continue
        data = raw[pos + _HEADER : pos + _HEADER + length]
        pos += _HEADER + length
        parts = data if kind in (_FULL, _FIRST) else parts + data
        if kind in (_FULL, _LAST):
            record = wandb_internal_pb2.Record()
            record.ParseFromString(parts)
            records.append(record)
            parts = b""
    return records


def read_offline_run(run_dir: str | Path) -> dict[str, Any]:
    """``{"run": {"id", "project", "entity", "group", "name", "job_type"}, "config": {key: value},
    "artifacts": [{"name", "type", "files", "metadata"}], "finished": bool}`` of an offline run
    folder (``offline-run-*``), or of a folder holding exactly one such run. `finished` says
    whether the exit record is there: W&B's service may still be writing the file for a moment
    after `wandb.finish()` returns."""
    folder = Path(run_dir)
    files = sorted(folder.glob("run-*.wandb")) or sorted(folder.glob("**/offline-run-*/run-*.wandb"))
    if len(files) != 1:
        raise ValueError(f"{run_dir}: expected one offline W&B run, found {len(files)}")
    config: dict[str, Any] = {}
    artifacts: list[dict[str, Any]] = []
    run: dict[str, Any] = {}
    finished = False
    for record in run_records(files[0]):
        kind = record.WhichOneof("record_type")
        if kind == "run":
            r = record.run
            run = {
                "id": r.run_id,
                "project": r.project,
                "entity": r.entity,
                "group": r.run_group,
                "name": r.display_name,
                "job_type": r.job_type,
            }
            config.update({i.key: json.loads(i.value_json) for i in r.config.update})
        elif kind == "config":
            config.update({i.key: json.loads(i.value_json) for i in record.config.update})
        elif kind == "exit":
            finished = True
        elif kind == "artifact":
            a = record.artifact
            artifacts.append(
                {
                    "name": a.name,
                    "type": a.type,
                    "files": sorted(e.path for e in a.manifest.contents),
                    "metadata": json.loads(a.metadata) if a.metadata else {},
                }
            )
    return {"run": run, "config": config, "artifacts": artifacts, "finished": finished}


def wait_for_offline_run(run_dir: str | Path, timeout: float = 30.0) -> dict[str, Any]:
    """`read_offline_run` once the run file holds its exit record (or after `timeout` seconds)."""
    import time

    deadline = time.monotonic() + timeout
    while True:
        run = read_offline_run(run_dir)
        if run["finished"] or time.monotonic() > deadline:
            return run
        time.sleep(0.2)
