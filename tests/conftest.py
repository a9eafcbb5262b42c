"""What every test shares: the offline environment, the repository root, and the `slow` mark.

The environment of `_repo.OFFLINE` (no model hub, W&B offline) is set here, when pytest loads this
file and before it imports any test module, so in-process code and every command a test starts see
it, on a laptop as in CI. Tests that start another process, read a real model, train or serve are
marked `slow` (`_slow.py` says how). Every run, the full `make test` as much as `make test-fast`
(`-m "not slow"`), fails a test that starts a process or encodes with MiniLM without the mark, so
the fast loop cannot go red unnoticed by CI.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from _repo import OFFLINE, ROOT
from _slow import fast_loop_guard, slow_reason

os.environ.update(OFFLINE)
# The fluency judge reads phrases with SmolLM2: a generation test that does not ask for it (its
# own tests do, and are marked slow) runs with the rules alone, as a small fixture should.
os.environ.setdefault("DIAFORGE_FLUENCY_JUDGE", "0")  # diaforge.data_gen.fluency.FLUENCY_JUDGE_ENV


@pytest.fixture(scope="session")
def repo_root() -> Path:
    """The repository's root folder (`_repo.ROOT`)."""
    return ROOT


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.get_closest_marker("slow") is None:
            reason = slow_reason(item)
            if reason is not None:
                item.add_marker(pytest.mark.slow(reason=reason))


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Iterator[None]:
    if item.get_closest_marker("slow") is not None:
        yield
        return
    with fast_loop_guard(item.nodeid):
        yield
