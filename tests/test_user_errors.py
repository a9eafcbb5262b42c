"""Every error a command reports as one line derives from `diaforge.errors.UserError`, so one
wrapper (`command_main`) ends every command on it; and every command's `main` is wrapped."""

from __future__ import annotations

import importlib

import pytest

from diaforge.errors import UserError

ONE_LINE_ERRORS = [
    ("diaforge.errors", "InputError", 2),
    ("diaforge.configs", "FieldProblem", 2),
    ("diaforge.packaged", "PackagedFileError", 2),
    ("diaforge.llm.base", "BackendConfigError", 2),
    ("diaforge.train.config", "RecipeError", 2),
    ("diaforge.train.modeling", "ModelPathError", 2),
    ("diaforge.train.slicing", "SlicingError", 2),
    ("diaforge.llm.base", "BackendError", 1),  # the configuration was fine; the server gave up
    ("diaforge.pipeline.demo", "DemoError", 1),  # a stage failed; its own output says why
]
COMMANDS = (
    "diaforge.data_gen.cli",
    "diaforge.eval.cli",
    "diaforge.train.sft",
    "diaforge.train.dpo",
    "diaforge.train.launch",
    "diaforge.train.preview",
    "diaforge.train.merge",
    "diaforge.train.plan",
    "diaforge.pipeline.cli",
    "diaforge.cli",
    "diaforge.llm.smollm2",
    "scripts.build_assets",
)


@pytest.mark.parametrize(("module", "name", "code"), ONE_LINE_ERRORS, ids=[n for _, n, _ in ONE_LINE_ERRORS])
def test_every_one_line_error_is_a_user_error_with_its_exit_code(module: str, name: str, code: int) -> None:
    cls = getattr(importlib.import_module(module), name)
    assert issubclass(cls, UserError)
    assert cls.exit_code == code


def test_a_missing_packaged_file_is_still_a_file_not_found_error() -> None:
    from diaforge.packaged import PackagedFileError

    assert issubclass(PackagedFileError, FileNotFoundError)


@pytest.mark.parametrize("module", COMMANDS)
def test_every_command_main_is_wrapped(module: str) -> None:
    main = importlib.import_module(module).main
    assert main.__wrapped__.__name__ == "main"  # functools.wraps of command_main
    assert main.__wrapped__.__module__ == module
