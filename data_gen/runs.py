"""Small helpers that the run-producing commands of all three packages share (data_gen is the
package the others may import): file digests for provenance, and whether W&B can reach a server."""

from __future__ import annotations

import hashlib
import netrc
import os
from pathlib import Path


def sha256_file(path: str | Path) -> str:
    """Hex SHA-256 of a file's bytes, read in 1 MiB blocks."""
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def has_wandb_credentials() -> bool:
    """True when W&B has an API key: ``WANDB_API_KEY``, or a ~/.netrc entry for its host."""
    if os.environ.get("WANDB_API_KEY", "").strip():
        return True
    try:
        host = os.environ.get("WANDB_BASE_URL", "https://api.wandb.ai").split("://")[-1].split("/")[0]
        return netrc.netrc().authenticators(host) is not None
    except (FileNotFoundError, netrc.NetrcParseError, OSError):
        return False
