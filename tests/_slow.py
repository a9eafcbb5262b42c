"""Which tests are slow, and the guard of a run without them (used by `tests/conftest.py`).

`slow` marks a test that starts another process, loads a real model from disk (SmolLM2, MiniLM),
trains or serves; `make test-fast` runs the others (`-m "not slow"`). Besides the explicit marks,
`slow_reason` finds a test slow when that can be seen before it runs:

* it starts a process: its code, its fixtures' code, or a helper they call from a module under
  `tests/` (followed through every call) names `subprocess`, `pty`, asyncio's
  `create_subprocess_*`, or `sys.executable`;
* it uses a fixture that loads a real model (`REAL_MODEL_FIXTURES`), names a real model's loader
  in its code or takes one as a parameter (`REAL_MODEL_NAMES`), or names a real model as a
  parameter or a string in its code (`tokenizer_for("smollm2", ...)`, `encoder="minilm"`);
* it uses a fixture marked `@slow_fixture(reason)` (one that generates with MiniLM, say).

What cannot be seen before a test runs (a training run in-process, MiniLM behind the default
encoder, a library that starts a process) is marked by hand, `@pytest.mark.slow(reason=...)`. A run
that leaves the slow tests out keeps the marks honest (`fast_loop_guard`): a test that starts a
process there (the standard library's own `uname -p` probe aside) or encodes with MiniLM fails,
saying which mark it lacks.
"""

from __future__ import annotations

import contextlib
import inspect
import platform
import subprocess
import sys
import types
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from _repo import ROOT

F = TypeVar("F", bound=Callable[..., object])

TESTS = ROOT / "tests"
#: Fixtures that read a real model (or its tokenizer) from disk.
REAL_MODEL_FIXTURES = frozenset({"smollm2_tokenizer", "smollm2_tokenizer_dir"})
#: Parameter values and strings that name a real model (a fixture or a config loads it on request).
REAL_MODEL_PARAMS = frozenset({"smollm2", "minilm"})
#: Names whose use in a test's code loads a real model.
REAL_MODEL_NAMES = frozenset({"MiniLMEncoder", "materialise_smollm2"})
#: Names that, with the module that owns them, start another process.
SPAWNING = {
    "subprocess": None,  # any use of the module
    "pty": None,
    "asyncio": {"create_subprocess_exec", "create_subprocess_shell"},
    "sys": {"executable"},
}


def _in_tests(obj: object) -> bool:
    try:
        source = inspect.getsourcefile(obj)  # type: ignore[arg-type]
    except TypeError:
        return False
    return source is not None and Path(source).resolve().is_relative_to(TESTS)


def _codes(code: types.CodeType) -> Iterator[types.CodeType]:
    """`code` and the code of every function, lambda and comprehension defined inside it."""
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def starts_a_process(func: object, seen: set[int]) -> bool:
    """Whether `func`, or a function under `tests/` it names (followed through every call), starts
    another process (`SPAWNING`)."""
    func = inspect.unwrap(func)  # type: ignore[arg-type]
    if not isinstance(func, types.FunctionType) or id(func) in seen:
        return False
    seen.add(id(func))
    for code in _codes(func.__code__):
        names = set(code.co_names)
        for module, attrs in SPAWNING.items():
            if module in names and (attrs is None or attrs & names):
                return True
        for name in names:
            value = func.__globals__.get(name)
            if getattr(value, "__module__", None) in ("subprocess", "pty"):
                return True  # `from subprocess import run`
            if isinstance(value, types.ModuleType) and value.__name__ in ("subprocess", "pty"):
                return True  # `import subprocess as sp`
            # a helper of a module under tests/, named directly or as `module.helper`
            if isinstance(value, types.ModuleType) and _in_tests(value):
                helpers = [getattr(value, n, None) for n in names]
            else:
                helpers = [value]
            if any(_in_tests(h) and starts_a_process(h, seen) for h in helpers if callable(h)):
                return True
    return False


def slow_fixture(reason: str) -> Callable[[F], F]:
    """Mark a fixture (under `@pytest.fixture`) as slow: every test that uses it, directly or
    through other fixtures, is marked `slow` with `reason` (pytest marks tests, not fixtures)."""

    def mark(func: F) -> F:
        func.slow_reason = reason  # type: ignore[attr-defined]
        return func

    return mark


def slow_reason(item: pytest.Item) -> str | None:
    """Why `item` belongs to the slow tests, as far as it can be seen before it runs (None: it
    does not, or only its explicit mark says so)."""
    if not isinstance(item, pytest.Function):
        return None
    real = REAL_MODEL_FIXTURES.intersection(item.fixturenames)
    if real:
        return f"uses the real-model fixture {sorted(real)[0]}"
    callspec = getattr(item, "callspec", None)
    params = list(callspec.params.values()) if callspec is not None else []
    loaded = {type(v).__name__ for v in params} & REAL_MODEL_NAMES
    if loaded:
        return f"loads a real model ({sorted(loaded)[0]})"
    asked = {v for v in params if isinstance(v, str)}
    asked.update(c for code in _codes(item.function.__code__) for c in code.co_consts if isinstance(c, str))
    named = asked & REAL_MODEL_PARAMS
    if named:
        return f"asks for the real model {sorted(named)[0]}"
    loaders = {n for code in _codes(item.function.__code__) for n in code.co_names} & REAL_MODEL_NAMES
    if loaders:
        return f"loads a real model ({sorted(loaders)[0]})"
    funcs: list[object] = [item.function]
    fixtureinfo = getattr(item, "_fixtureinfo", None)
    for defs in getattr(fixtureinfo, "name2fixturedefs", {}).values():
        funcs.extend(d.func for d in defs if _in_tests(d.func))
    marked = [f.slow_reason for f in funcs if isinstance(getattr(f, "slow_reason", None), str)]
    if marked:
        return marked[0]
    seen: set[int] = set()
    if any(starts_a_process(f, seen) for f in funcs):
        return "starts another process"
    return None


def _from_platform() -> bool:
    """Whether the process being started is the standard library's `platform` probe (`uname -p`,
    run once per process by clients that describe the machine)."""
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code.co_filename == platform.__file__:
            return True
        frame = frame.f_back
    return False


@contextlib.contextmanager
def fast_loop_guard(nodeid: str) -> Iterator[None]:
    """While one test runs (its fixtures included): starting a process or encoding with MiniLM fails
    the test with the mark it lacks."""
    from diaforge.similarity import MiniLMEncoder

    start, encode = subprocess.Popen._execute_child, MiniLMEncoder.encode  # type: ignore[attr-defined]

    def refuse_process(self: subprocess.Popen, args: object, *rest: object, **kwargs: object) -> None:
        if not _from_platform():
            pytest.fail(
                f"{nodeid} starts a process ({args!r:.120}) without the slow mark: "
                'mark it @pytest.mark.slow(reason="...")',
                pytrace=False,
            )
        start(self, args, *rest, **kwargs)

    def refuse_minilm(self: MiniLMEncoder, texts: object) -> object:
        pytest.fail(
            f"{nodeid} encodes with MiniLM (read from disk) without the slow mark: mark it "
            '@pytest.mark.slow(reason="reads MiniLM from disk") or use encoder "tfidf"',
            pytrace=False,
        )

    subprocess.Popen._execute_child = refuse_process  # type: ignore[attr-defined]
    MiniLMEncoder.encode = refuse_minilm  # type: ignore[method-assign]
    try:
        yield
    finally:
        subprocess.Popen._execute_child = start  # type: ignore[attr-defined]
        MiniLMEncoder.encode = encode  # type: ignore[method-assign]
