"""Giving freed memory back to the system while decoding.

A decoding batch's keys and values live in a few dozen tensors per layer group of tens of MiB each
(16 rows of 2,000 tokens of SmolLM2-135M: about 25 MiB a layer's keys), remade whenever rows join
or leave. glibc serves an allocation of that size from its heap once its adaptive threshold has
risen past it, and a heap that many such blocks of changing sizes went through keeps its freed
pages mapped: the process's resident memory grows with the churn, not with what it holds.
`release_free_memory` asks glibc to hand back every free page (``malloc_trim(0)``); elsewhere it
does nothing.
"""

from __future__ import annotations

import ctypes
import functools

__all__ = ["release_free_memory"]


@functools.cache
def _trim() -> ctypes._CFuncPtr | None:
    """glibc's ``malloc_trim``, or None where the C library has none (macOS, musl)."""
    try:  # the symbols already loaded into this process (no library search, which runs ldconfig)
        return ctypes.CDLL(None).malloc_trim
    except (OSError, AttributeError, TypeError):
        return None


def release_free_memory() -> bool:
    """Return the C heap's free pages to the system; whether anything could be asked."""
    trim = _trim()
    if trim is None:
        return False
    trim(0)
    return True
