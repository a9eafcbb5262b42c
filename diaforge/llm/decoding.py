"""How the model under test decodes: `DecodingConfig`, the one object that carries every decoding
rule from the command line (``eval run --constrain-calls on``, a YAML ``decoding:`` mapping, a
`DemoConfig` field) to the generator (`diaforge.eval.models.ModelSpec.decoding`) and into the
run's record (``metrics.json["decoding"]``).

Each field is documented once, on itself: its docstring is the help of its flag, which
``eval run``, ``diaforge demo`` and ``diaforge demo-curve`` make from the field
(`diaforge.cliargs.add_field_flags`), so a new rule is a new field and no parser changes. A
rule's field carries its `Rule` (the factory that builds it for a row, its place in the chain,
the field it needs), which `diaforge.llm.rules.build_chain` reads to assemble a row's chain.
What a rule needs is checked once, in `DecodingConfig.check`: a rule that holds a call's text
needs `constrain_calls` (`NEEDS`), and the aids run only where the chain runs (`APPLIED_BY`), so
any other executor refuses them in one line rather than dropping them.

The class is lax and its fields strict (``StrictBool``): a config that nests it (`EvalConfig`,
`DemoConfig`) then takes a mapping for it, as a YAML file gives it, while ``constrain_calls: 1`` is
still refused. A new field takes a strict type too.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from typing import Annotated, Any

from pydantic import ConfigDict, Field, StrictBool, StrictInt
from pydantic.dataclasses import dataclass

from diaforge.errors import InputError

__all__ = [
    "APPLIED_BY",
    "NEEDS",
    "NOT_AIDS",
    "DecodingConfig",
    "Rule",
    "decoding_class",
    "decoding_keys",
    "fold_decoding",
    "rule_of",
]

#: The executors that apply the decoding aids (`DecodingConfig.aids`), each with the settings it
#: leaves out (it applies every other: the rules of `diaforge.llm.rules.RuleChain`, which each
#: drives); another refuses the aids. `hf` and `diaforge-serve` run the chain inside the hf
#: generator; `vllm-rules` is a vLLM server running it as its logits processor
#: (`diaforge.llm.vllm_rules`, named by ``eval run --backend openai --base-url vllm-rules+http://...``),
#: which masks one step at a time and drafts nothing: every rule but speculation.
APPLIED_BY: dict[str, tuple[str, ...]] = {"hf": (), "diaforge-serve": (), "vllm-rules": ("speculate",)}


@dataclass(frozen=True)
class Rule:
    """What a decoding field turns on, written beside the field (``Annotated[StrictBool, Rule(...)]``):
    the rule's factory, its place in the chain, what it needs. Adding a rule is its module and one
    field carrying this; nothing else changes (docs/extending.md, "A decoding rule")."""

    factory: str | None
    """``"module:callable"``: called with a `diaforge.llm.rules.RuleContext`, it returns the row's
    rule (or None when the row has nothing for it to do); None for a field that only tunes another
    rule (``ground_values`` tunes the call rule)."""
    order: int = 50
    """Place in the chain (lower first): rules that end replies, then the thought, then the call."""
    needs: str | None = None
    """A field that must be on too."""
    why: str = ""
    """Why it needs that field (the end of the refusal's line)."""
    aid: bool = True
    """False for a budget rule (the loop stop): left out, not refused, where it cannot run."""


@dataclass(config=ConfigDict(extra="forbid", use_attribute_docstrings=True))
class DecodingConfig:
    """The decoding rules of the model under test (``eval run``'s decoding flags; a YAML config's
    ``decoding:`` mapping)."""

    loop_stop: Annotated[StrictBool, Rule("diaforge.llm.loops:LoopRule.build", order=20, aid=False)] = True
    """`hf`: end a reply whose tail repeats one block three times in a row (`diaforge.llm.loops`;
    it counts as truncated, as the budget would have made it). Default true."""
    constrain_calls: Annotated[StrictBool, Rule("diaforge.llm.call_rule:CallRule.build", order=40)] = False
    """`hf`: once a reply opens a call list, keep it a valid call to a candidate (strict function
    calling, `diaforge.llm.constrain`); apply it alike to every model compared. Default false."""
    ground_values: Annotated[
        StrictBool, Rule(None, needs="constrain_calls", why="it holds the values of constrained calls")
    ] = False
    """`hf`, with `constrain_calls`: a call's string and number values must also copy words the user
    said in the dialogue, as `diaforge.eval.anatomy` counts a value grounded (copy-constrained
    decoding, `diaforge.llm.constrain.Grounding`). Default false."""
    copy_thoughts: Annotated[
        StrictBool,
        Rule(
            "diaforge.llm.thought_copy:ThoughtRule.build",
            order=30,
            needs="constrain_calls",
            why="it hands each reply's call to the call constraint",
        ),
    ] = False
    """`hf`, with `constrain_calls`: hold the copy spans of `lookup` thoughts to the tool listing
    (the name after an option's description, the signature and required keys after ``The tool
    is``) and the call's tool to the one the thought settled on (`diaforge.llm.thought_copy`).
    Default false."""
    speculate: Annotated[StrictInt, Field(ge=0, le=64)] = 0
    """`hf`, greedy, through the prefix cache: draft up to this many tokens per step from the
    row's own prompt and reply (prompt lookup, `diaforge.llm.drafts.PromptLookup`) and
    verify them in one forward pass; the reply is the one decoding without it writes, in fewer
    passes. 0 turns it off. Default 0."""

    def aids(self) -> list[str]:
        """The aids turned on: every true field whose `Rule` is an aid, in field order."""
        return [name for name, value in self.as_dict().items() if value is True and name not in NOT_AIDS]

    def check(self, backend: str, *, policy: bool = False) -> None:
        """What the rules need, checked in one place: a field whose `Rule` needs another that is
        off, then any aid asked of an executor that leaves it out (`backend`, `APPLIED_BY`;
        `policy`: it is a reference policy, which decodes nothing). Each refusal is one
        `InputError` line naming the flags."""
        for name in decoding_keys(type(self)):
            rule = rule_of(type(self), name)
            if getattr(self, name) and rule is not None and rule.needs and not getattr(self, rule.needs):
                raise InputError(f"{_flag(name)} on needs {_flag(rule.needs)} on ({rule.why})")
        asked = [name for name in self.aids() if name in self.unapplied(backend)]
        if asked:
            flags = ", ".join(f"{_flag(name)} on" for name in asked)
            what = (
                f"the {backend} policy decodes nothing"
                if policy
                else f"the {backend} backend cannot apply it"
            )
            raise InputError(
                f"{flags}: decoding aids run only where the toolkit's rules run "
                f"({', '.join(APPLIED_BY)}); {what}"
            )

    def unapplied(self, backend: str) -> list[str]:
        """The settings turned on that `backend` leaves out: every one outside `APPLIED_BY`, those
        named beside it there (after `check`: the loop stop and speculation, which change a reply's
        cost, not its meaning)."""
        left_out = APPLIED_BY.get(backend)
        return [n for n, value in self.as_dict().items() if value and (left_out is None or n in left_out)]

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


def rule_of(config: type, name: str) -> Rule | None:
    """The `Rule` written beside field `name` of a decoding config class, or None."""
    info = config.__pydantic_fields__[name]
    return next((m for m in info.metadata if isinstance(m, Rule)), None)


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")


#: The fields that are not aids (budget rules, left out where they cannot run, not refused).
NOT_AIDS = tuple(n for n in decoding_keys() if (r := rule_of(DecodingConfig, n)) is not None and not r.aid)
#: The fields that need another on, and why (the end of their refusal).
NEEDS = {n: r.why for n in decoding_keys() if (r := rule_of(DecodingConfig, n)) is not None and r.needs}
