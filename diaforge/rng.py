"""Seeded random generators shared by the generator and the evaluation: a generator derived from a
hash of its parts, so a seed's draws depend on (run seed, record, step) alone, never on the order in
which concurrent work happens to run."""

from __future__ import annotations

import hashlib
import random
from typing import Any


def seeded_rng(*parts: Any) -> random.Random:
    """A generator seeded from a hash of its parts (stable across processes and Python versions)."""
    digest = hashlib.sha256("\x1f".join(str(p) for p in parts).encode("utf-8")).digest()
    return random.Random(int.from_bytes(digest[:8], "big"))
