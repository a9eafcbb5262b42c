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
