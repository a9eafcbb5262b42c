"""The `slow` mark's detection and the guard of a run without the slow tests (`tests/_slow.py`)."""

from __future__ import annotations

import asyncio
import contextlib
import platform
import subprocess
import subprocess as sp
import sys
from pathlib import Path

import pytest
from _slow import fast_loop_guard, starts_a_process

from diaforge.similarity import MiniLMEncoder


def _runs_a_command() -> None:
    subprocess.run(["true"], check=True)


def _through_an_alias() -> None:
    sp.check_output(["true"])


def _through_a_helper() -> None:
    _runs_a_command()


def _names_the_interpreter() -> list[str]:
    return [sys.executable, "-c", "pass"]


def _in_a_closure() -> object:
    return lambda: asyncio.create_subprocess_exec("true")


def _sleeps() -> object:
    return asyncio.sleep(0)


def _adds() -> int:
    return sum(range(4))


# (function, whether it starts a process as the detection sees it)
SAMPLES = (
    (_runs_a_command, True),
    (_through_an_alias, True),
    (_through_a_helper, True),
    (_names_the_interpreter, True),
    (_in_a_closure, True),
    (_sleeps, False),
    (_adds, False),
)


@pytest.mark.parametrize(("func", "expected"), SAMPLES, ids=[f.__name__ for f, _ in SAMPLES])
def test_starting_a_process_is_seen_in_the_code(func: object, expected: bool) -> None:
    assert starts_a_process(func, set()) is expected


def test_the_guard_refuses_a_process_and_minilm_but_not_the_platform_probe() -> None:
    with fast_loop_guard("t.py::t"):
        with pytest.raises(pytest.fail.Exception, match=r"t\.py::t starts a process \(\['true'\]\)"):
            _runs_a_command()
        with pytest.raises(pytest.fail.Exception, match=r"t\.py::t encodes with MiniLM"):
            MiniLMEncoder().encode(["a sentence"])
        assert isinstance(platform._Processor.from_subprocess(), str)  # `uname -p`, let through
    # outside the guard, processes start again
    assert subprocess.run(["true"], check=True).returncode == 0


def _item(slow: bool) -> object:
    from types import SimpleNamespace

    marker = pytest.mark.slow.mark if slow else None
    config = SimpleNamespace(getoption=lambda name: "")  # a full run: no `-m "not slow"`
    return SimpleNamespace(nodeid="t.py::t", config=config, get_closest_marker=lambda name: marker)


@pytest.mark.parametrize("slow", [False, True], ids=["unmarked", "marked"])
def test_the_guard_wraps_every_unmarked_test_of_a_full_run(
    slow: bool, request: pytest.FixtureRequest
) -> None:
    """The run-test hook of tests/conftest.py puts the guard around an unmarked test whatever the
    run's mark expression, so `make test` (CI) fails an unmarked test that starts a process, as
    `make test-fast` does; a marked test runs without it."""
    # The root conftest as pytest registered it (`import conftest` may find another folder's).
    root = Path(__file__).with_name("conftest.py").resolve()
    (conftest,) = [
        plugin
        for plugin in request.config.pluginmanager.get_plugins()
        if Path(getattr(plugin, "__file__", "") or "/").resolve() == root
    ]
    before = subprocess.Popen._execute_child
    hook = conftest.pytest_runtest_protocol(_item(slow), None)
    next(hook)
    try:
        guarded = subprocess.Popen._execute_child is not before
    finally:
        with contextlib.suppress(StopIteration):
            next(hook)
    assert guarded is not slow
    assert subprocess.Popen._execute_child is before
