"""`diaforge.errors`: `InputError`'s one line, and `command_main`, the one way a command ends on a
`UserError` (``error: LINE`` on stderr, the error's exit code)."""

from __future__ import annotations

import pytest

from diaforge.errors import InputError, UserError, command_main


class _StageFailed(UserError):
    exit_code = 1


def _main_raising(exc: BaseException | None):
    @command_main
    def main(argv: list[str] | None = None) -> int:
        """The command's own docstring."""
        if exc is not None:
            raise exc
        return 0

    return main


def test_an_input_error_names_what_is_known_in_order() -> None:
    assert str(InputError("bad")) == "bad"
    assert (
        str(InputError("bad", path="d.jsonl", record=3, field="turns"))
        == "d.jsonl, line 3, field 'turns': bad"
    )
    assert str(InputError("bad", path="d.jsonl", record="seed-7")) == "d.jsonl, record 'seed-7': bad"
    assert isinstance(InputError("bad"), UserError) and InputError("bad").exit_code == 2


def test_a_user_error_is_one_line_and_its_exit_code(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DIAFORGE_DEBUG", raising=False)
    monkeypatch.delenv("RANK", raising=False)
    assert _main_raising(InputError("must be at least 1, got 0", path="c.yaml", field="k"))([]) == 2
    assert capsys.readouterr().err == "error: c.yaml, field 'k': must be at least 1, got 0\n"
    assert _main_raising(_StageFailed("stage 'data' failed (exit 3): x"))([]) == 1
    assert capsys.readouterr().err == "error: stage 'data' failed (exit 3): x\n"
    assert _main_raising(None)([]) == 0
    assert capsys.readouterr().err == ""


def test_ctrl_c_is_one_line_and_130(capsys: pytest.CaptureFixture[str]) -> None:
    assert _main_raising(KeyboardInterrupt())([]) == 130
    assert capsys.readouterr().err == "interrupted\n"


def test_only_the_first_rank_prints(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("DIAFORGE_DEBUG", raising=False)
    monkeypatch.setenv("RANK", "1")
    assert _main_raising(UserError("same mistake on every rank"))([]) == 2
    assert capsys.readouterr().err == ""


def test_debug_raises_the_error_itself(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DIAFORGE_DEBUG", "1")
    with pytest.raises(UserError, match="^shown with its traceback$"):
        _main_raising(UserError("shown with its traceback"))([])


def test_other_errors_pass_through_and_the_wrapper_keeps_the_name() -> None:
    main = _main_raising(RuntimeError("a bug"))
    with pytest.raises(RuntimeError, match="a bug"):
        main([])
    assert (main.__name__, main.__doc__) == ("main", "The command's own docstring.")
