"""How the model under test decodes: `DecodingConfig`, the one object that carries every decoding
rule from the command line (``eval run --constrain-calls on``, a YAML ``decoding:`` mapping, a
`DemoConfig` field) to the generator (`diaforge.eval.models.ModelSpec.decoding`) and into the
run's record (``metrics.json["decoding"]``).

Each field is documented once, on itself: its docstring is the help of its flag, which
``eval run``, ``diaforge demo`` and ``diaforge demo-curve`` make from the field
(`diaforge.cliargs.add_field_flags`), so a new rule is a new field and no parser changes. What a
rule needs is checked once, in `DecodingConfig.check`: a rule that holds a call's text needs
`constrain_calls` (`NEEDS`), and every rule but the loop stop runs inside the hf backend, so any
other executor refuses it in one line rather than dropping it.

The class is lax and its fields strict (``StrictBool``): a config that nests it (`EvalConfig`,
`DemoConfig`) then takes a mapping for it, as a YAML file gives it, while ``constrain_calls: 1`` is
still refused. A new field takes a strict type too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Any

from pydantic import ConfigDict, StrictBool
from pydantic.dataclasses import dataclass

from diaforge.errors import InputError

__all__ = [
    "APPLIED_BY",
    "NEEDS",
    "NOT_AIDS",
    "DecodingConfig",
    "decoding_class",
    "decoding_keys",
    "fold_decoding",
]

#: The executor that applies the decoding aids (`DecodingConfig.aids`); another refuses them.
APPLIED_BY = "hf"
#: The fields that are not aids: the loop stop is a budget rule, left out where it cannot run
#: (``metrics.json`` says so under ``unapplied``) instead of refused.
NOT_AIDS = ("loop_stop",)
#: The aids that need `constrain_calls`, and why (the end of their refusal).
NEEDS = {
    "ground_values": "it holds the values of constrained calls",
    "copy_thoughts": "it hands each reply's call to the call constraint",
}


@dataclass(config=ConfigDict(extra="forbid", use_attribute_docstrings=True))
class DecodingConfig:
    """The decoding rules of the model under test (``eval run``'s decoding flags; a YAML config's
    ``decoding:`` mapping)."""

    loop_stop: StrictBool = True
    """`hf`: end a reply whose tail repeats one block three times in a row (`diaforge.llm.loops`;
    it counts as truncated, as the budget would have made it). Default true."""
    constrain_calls: StrictBool = False
    """`hf`: once a reply opens a call list, keep it a valid call to a candidate (strict function
    calling, `diaforge.llm.constrain`); apply it alike to every model compared. Default false."""
    ground_values: StrictBool = False
    """`hf`, with `constrain_calls`: a call's string and number values must also copy words the user
    said in the dialogue, as `diaforge.eval.anatomy` counts a value grounded (copy-constrained
    decoding, `diaforge.llm.constrain.Grounding`). Default false."""
    copy_thoughts: StrictBool = False
    """`hf`, with `constrain_calls`: hold the copy spans of `lookup` thoughts to the tool listing
    (the name after an option's description, the signature and required keys after ``The tool
    is``) and the call's tool to the one the thought settled on (`diaforge.llm.thought_copy`).
    Default false."""

    def aids(self) -> list[str]:
        """The aids turned on: every true field but `NOT_AIDS`, in field order."""
        return [name for name, value in self.as_dict().items() if value is True and name not in NOT_AIDS]

    def check(self, backend: str, *, policy: bool = False) -> None:
        """What the rules need, checked in one place: an aid of `NEEDS` without `constrain_calls`,
        then any aid asked of an executor other than `APPLIED_BY` (`backend`; `policy`: it is a
        reference policy, which decodes nothing). Each refusal is one `InputError` line naming the
        flags."""
        for name, why in NEEDS.items():
            if getattr(self, name) and not self.constrain_calls:
                raise InputError(f"{_flag(name)} on needs --constrain-calls on ({why})")
        asked = self.aids()
        if backend != APPLIED_BY and asked:
            flags = ", ".join(f"{_flag(name)} on" for name in asked)
            what = (
                f"the {backend} policy decodes nothing"
                if policy
                else f"the {backend} backend cannot apply it"
            )
            raise InputError(f"{flags}: decoding aids run inside the {APPLIED_BY} backend only; {what}")

    def unapplied(self, backend: str) -> list[str]:
        """The rules turned on that `backend` leaves out (after `check`, the loop stop alone)."""
        return (
            [] if backend == APPLIED_BY else [name for name, value in self.as_dict().items() if value is True]
        )

    def as_dict(self) -> dict[str, Any]:
        """``{field: value}``, as ``metrics.json["decoding"]`` records it."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self)}


def decoding_keys(config: type = DecodingConfig) -> list[str]:
    """The fields of a decoding config (`DecodingConfig` or a subclass): its flags' keys."""
    return [f.name for f in dataclasses.fields(config)]


def decoding_class(config: type) -> type[DecodingConfig]:
    """The decoding config that `config` (`EvalConfig`, `DemoConfig`, a subclass) nests: the type of
    its `decoding` field, whose fields are its decoding flags."""
    return config.__pydantic_fields__["decoding"].annotation


def fold_decoding(
    raw: Mapping[str, Any], *, base: DecodingConfig | None = None, keys: list[str] | None = None
) -> dict[str, Any]:
    """`raw`, a config's keys, with its top-level decoding keys (the flags' spelling,
    ``constrain_calls: true``) moved into its ``decoding`` mapping, over what that holds (over
    `base` when it holds nothing: the nesting config's own default). A ``decoding`` that is
    neither a mapping nor a `DecodingConfig` is left for the field to refuse. `keys`: the decoding
    keys (default `DecodingConfig`'s)."""
    flat = {k: raw[k] for k in (decoding_keys() if keys is None else keys) if k in raw}
    if not flat:
        return dict(raw)
    out = {k: v for k, v in raw.items() if k not in flat}
    nested = out.get("decoding", base)
    if isinstance(nested, DecodingConfig):
        nested = nested.as_dict()
    if nested is None or isinstance(nested, Mapping):
        out["decoding"] = {**(nested or {}), **flat}
    return out


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")
