"""Command-line argument checking shared by the entry points of data_gen, eval and train: every
bad flag is one line on stderr and exit code 2, never a usage dump or a traceback; the one type of
every flag that names a file or folder to write (`output_path`); and the flags of a config's
fields (`add_field_flags`), documented once, on the field."""

from __future__ import annotations

import argparse
import math
import re
import sys
import typing
from collections.abc import Callable, Collection, Iterable, Mapping, Sequence
from pathlib import Path, PurePath
from types import UnionType
from typing import TYPE_CHECKING, Any, NoReturn

if TYPE_CHECKING:
    from pydantic.fields import FieldInfo


class DefaultsHelpFormatter(argparse.HelpFormatter):
    """Help in which every option shows its default: ``(default: X)`` is appended, ``(default:
    off)`` / ``(default: on)`` for a switch, unless the help text already speaks of its default or
    there is none to show (None: the help says what happens when the option is left out; an
    empty list; a required positional)."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        default = action.default
        if "default" in text.lower() or default is None or default is argparse.SUPPRESS:
            return text
        if isinstance(default, bool):
            return f"{text} (default: {'on' if default else 'off'})"
        if isinstance(default, (list, tuple)) and not default:
            return text
        if not action.option_strings and action.nargs not in ("?", "*"):
            return text
        return f"{text} (default: %(default)s)"


class OneLineArgumentParser(argparse.ArgumentParser):
    """`argparse` that reports a bad command line as one line (`error: PROG: MESSAGE (see
    --help)`), exit 2. Subparsers made from it are of the same class."""

    def error(self, message: str) -> NoReturn:
        print(f"error: {self.prog}: {' '.join(message.split())} (see --help)", file=sys.stderr)
        raise SystemExit(2)


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a whole number, got {text!r}") from None


def positive_int(text: str) -> int:
    """An integer >= 1 (`--limit 0` or `--limit -3` would silently mean something else)."""
    value = _int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, got {value}")
    return value


def non_negative_int(text: str) -> int:
    value = _int(text)
    if value < 0:
        raise argparse.ArgumentTypeError(f"must be 0 or more, got {value}")
    return value


def finite_float(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}") from None
    if not math.isfinite(value):
        raise argparse.ArgumentTypeError(f"must be a finite number, got {text!r}")
    return value


def share(text: str) -> float:
    """A share: a finite number from 0 to 1 (`--no-tool-share 0.1`)."""
    value = finite_float(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"must lie in [0, 1], got {text!r}")
    return value


def int_between(low: int, high: int) -> Callable[[str], int]:
    """An argparse type: a whole number in [low, high] (`--concurrency 100000` is refused, not
    tried)."""

    def parse(text: str) -> int:
        value = _int(text)
        if value < low:
            raise argparse.ArgumentTypeError(f"must be at least {low:,}, got {value:,}")
        if value > high:
            raise argparse.ArgumentTypeError(f"must be at most {high:,}, got {value:,}")
        return value

    parse.__name__ = f"int_between_{low}_{high}"
    return parse


def output_path(text: str) -> str:
    """A file or folder to write (``--out``, ``--json``, ``--output``, ``--work-dir``, ...): any
    path but an empty or blank one, which names none (``--out ""`` would write into the working
    folder, ``--out " "`` into a folder named by a space). Every door's output flags take it, so
    the refusal is one line naming the flag (`diaforge.hygiene.output_path_problem`)."""
    from diaforge.hygiene import output_path_problem

    problem = output_path_problem(text)
    if problem is not None:
        raise argparse.ArgumentTypeError(problem)
    return text


def output_folder(text: str) -> Path:
    """`output_path` as a `Path`, for the commands that keep their paths as Paths (the demo)."""
    return Path(output_path(text))


# --------------------------------------------------------------------------------------------
# Flags made from the fields of a config
# --------------------------------------------------------------------------------------------


def on_off(text: str) -> bool:
    """``on`` or ``off``, as a setting that a flag can give either way (over a config's key)."""
    if text not in ("on", "off"):
        raise argparse.ArgumentTypeError(f"expected on or off, got {text!r}")
    return text == "on"


def add_field_flags(
    parser: argparse.ArgumentParser | argparse._ArgumentGroup,
    fields: Mapping[str, FieldInfo],
    names: Iterable[str],
    *,
    choices: Mapping[str, Sequence[str]] | None = None,
    types: Mapping[str, Callable[[str], Any]] | None = None,
    switches: Collection[str] = (),
    off: Mapping[str, str] | None = None,
    defaults: Mapping[str, Any] | None = None,
) -> None:
    """One flag for each of `names`, fields of a pydantic config (`fields`: its
    ``model_fields``), so that each option is documented once, on its field. The flag of
    ``num_dialogues`` is ``--num-dialogues``; its help is the field's documentation and the
    field's default (unless the text speaks of it already); its value lands under the field's
    name, None when the flag is not given (so that a config file's key stands).

    How a value is read follows the field: an integer with bounds (``ge=1``: `positive_int`,
    ``ge=0``: `non_negative_int`, both bounds: `int_between`), a share (a float in [0, 1]), a
    list (several values), a boolean (``on`` or ``off``), a path (a `Path`, for a config whose
    paths are Paths); `types` overrides that for a field and
    `choices` gives a field's allowed values (the constants its validator checks). A boolean in
    `switches` is a plain switch that sets it true; `off` maps a boolean to the flag of a switch
    that sets it false (``{"plots": "--no-plots"}``). `defaults` gives the default of a field that
    the config nesting it sets otherwise (the demo's decoding rules, on): the help shows it, its
    documentation's own ``Default ...`` sentence left out."""
    choices, types, off, defaults = choices or {}, types or {}, off or {}, defaults or {}
    for name in names:
        info = fields[name]
        kind, bounds = _field_kind(info)
        kwargs: dict[str, Any] = {"dest": name, "default": None}
        text = field_help(info)
        if name in off:
            text = f"turn off {name} (on by default): {text[:1].lower()}{text[1:]}"
            parser.add_argument(off[name], action="store_const", const=False, help=text, **kwargs)
            continue
        default = info.get_default(call_default_factory=True)
        if name in defaults:
            default, text = defaults[name], _DEFAULT_SENTENCE.sub("", text)
        if "default" not in text.lower():
            text = f"{text.rstrip('.')} (default: {_shown_default(default)})"
        if name in switches:
            parser.add_argument(_flag(name), action="store_const", const=True, help=text, **kwargs)
            continue
        if name in types:
            kwargs["type"] = types[name]
        elif kind is bool:
            kwargs.update(type=on_off, metavar="{on,off}")
        elif kind is list:
            kwargs["nargs"] = "*"
        elif kind in (int, float):
            kwargs["type"] = _number_type(kind, *bounds)
        elif kind is not None and issubclass(kind, PurePath):
            kwargs["type"] = Path
        if name in choices:
            kwargs["choices"] = tuple(choices[name])
        parser.add_argument(_flag(name), help=text, **kwargs)


_DEFAULT_SENTENCE = re.compile(r"\s*Default[^.]*\.$")


def field_help(info: FieldInfo) -> str:
    """A field's documentation as a line of help: backquotes dropped, white space folded, ``%``
    kept from argparse's formatting."""
    text = (info.description or "").replace("``", "").replace("`", "")
    return " ".join(text.split()).replace("%", "%%")


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


def _shown_default(value: Any) -> str:
    if value in (None, "", [], ()):
        return "none"
    if isinstance(value, bool):
        return "on" if value else "off"
    if isinstance(value, list | tuple):
        return ",".join(map(str, value))
    return str(value)


def _field_kind(info: FieldInfo) -> tuple[type | None, tuple[Any, Any]]:
    """The field's type with an optional None and its annotations taken off (int, float, bool,
    str, Path, list) and its (lower, upper) bounds from ``ge``/``le`` (None: unbounded)."""
    import annotated_types

    annotation, metadata = info.annotation, list(info.metadata)
    members = [a for a in typing.get_args(annotation) if a is not type(None)]
    if isinstance(annotation, UnionType) or typing.get_origin(annotation) is typing.Union:
        annotation = members[0] if len(members) == 1 else None
    if typing.get_origin(annotation) is typing.Annotated:
        annotation, *extra = typing.get_args(annotation)
        for item in extra:
            metadata += getattr(item, "metadata", [item])
    low = next((m.ge for m in metadata if isinstance(m, annotated_types.Ge)), None)
    high = next((m.le for m in metadata if isinstance(m, annotated_types.Le)), None)
    kind = list if typing.get_origin(annotation) is list else annotation
    return (kind if isinstance(kind, type) else None), (low, high)


def _number_type(kind: type, low: Any, high: Any) -> Callable[[str], Any]:
    """The argparse type of a number field with these bounds (its errors: one line each)."""
    if kind is float:
        return share if (low, high) == (0, 1) else finite_float
    if low is not None and high is not None:
        return int_between(low, high)
    return {1: positive_int, 0: non_negative_int}.get(low, int)


def add_export_format_flags(parser: argparse.ArgumentParser) -> None:
    """The options of an export format (`diaforge.format.export_format`) besides its name, as the
    commands that write training rows take them; `export_format_from_args` reads them back."""
    from diaforge.format import HISTORY_REASONING, TARGET_REASONING, TOOL_STYLES

    parser.add_argument("--tool-style", default="json", choices=TOOL_STYLES, help="tool listing of hf-prompt")
    parser.add_argument(
        "--history-reasoning",
        default="strip",
        choices=HISTORY_REASONING,
        help="thoughts of earlier assistant turns in each prompt: strip (as the model sees its history at "
        "inference) or keep",
    )
    parser.add_argument(
        "--target-reasoning", default="keep", choices=TARGET_REASONING, help="keep or drop the thoughts"
    )
    parser.add_argument(
        "--system-prompt-file",
        help="custom system prompt ('{tools}' is filled in hf-prompt) (default: none, the built-in prompt)",
    )


def export_format_from_args(args: argparse.Namespace) -> Any:
    """The `PromptFormat` of ``--format`` and the flags of `add_export_format_flags`."""
    from diaforge.format import export_format

    return export_format(
        args.format,
        tool_style=args.tool_style,
        history_reasoning=args.history_reasoning,
        target_reasoning=args.target_reasoning,
        system_prompt_file=args.system_prompt_file,
    )
