"""DICE-Score (DICE-Bench, Eq. 1): a dataset metric of how scattered over the user's turns the
items a dialogue's calls need are. Shared vocabulary: `python -m diaforge.data_gen analyze-corpus` reports
it for a corpus and `diaforge.eval.metrics` re-exports it for an evaluation run.

For a dialogue whose function-related items (the function name plus one item per argument) must
be gathered from its user utterances, with S = (S_1, ..., S_|S|) the number of items mentioned in
each utterance and T the number of items::

    DICE(S, T) = min(|S_{≠0}|, T) · sqrt(|S| · T) / Σ_{i ∈ S} ln(1 + α · S_i),      α = e²

|S_{≠0}| is the number of utterances that mention at least one item. The score grows when the
items are scattered over many utterances and shrinks when the same items are repeated (α is the
repetition penalty). It is 0.0 where it is undefined: T = 0, no utterance, or a zero denominator
(no utterance mentions anything). These are the conventions of the public DICE-Bench code
(field notes 3.1): T = Σ over the calls of (1 + number of arguments); only non-assistant
utterances are counted; an utterance is matched against the calls that come after it (in
DICE-Bench, a round-r utterance against the functions of rounds r..N).

Item counting (`count_items`) is by a deterministic value matcher unless an LLM counter
(`LLMItemCounter`) supplies the counts. Text is normalised as in `diaforge.eval.metrics.values_match`
(Unicode NFKC, case folding, whitespace runs collapsed); a phrase is "in" an utterance when it
occurs there between word boundaries. An item is mentioned in an utterance when:

==============  ================================================================================
item            mentioned when
==============  ================================================================================
function name   every word of the name (snake_case and camelCase split, light stemming:
                `diaforge.text.stem`) is among the utterance's words: "approve the internal
                training request" mentions ``approve_internal_training_request``
string value    the value (surrounding quotes and whitespace stripped) occurs in the utterance;
                an empty string is never mentioned
number          its rendering (``diaforge.saying.render_value``: 3.0 -> "3", 12.5 -> "12.5"),
                for integers of 1000 and more the comma-grouped form ("1,000"), or, for a
                whole number below a million, its English cardinal (`number_words`: "three",
                "twenty-five" or "twenty five", "one hundred and five") occurs: "three
                bedrooms" mentions ``bedrooms=3``. A string that is a whole number ("4") is
                matched the same way, and a string that is a cardinal ("four") also by its
                digits
boolean         a flag is said by naming it: every word of the parameter name except a leading
                "is"/"has" occurs (``is_urgent`` -> "urgent"), whatever the value
null            never
list / object   every scalar inside it is mentioned (an empty list or object: never)
==============  ================================================================================

DICE-Bench's own counter is an LLM (GPT-4o-mini, given the documentation of the functions still
to be called), which reads "three bedrooms" as the value 3 without being told; the cardinals are
what lets the value matcher do the same (a digit-only matcher misses every spelled-out number of
the released dialogues). `DiceBenchItemCounter` asks DICE-Bench's own question.

Each item counts at most once per utterance; an item mentioned in two utterances counts in both
(that is what the repetition penalty is for).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import unicodedata
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

from diaforge.format.rendering import THINK_CLOSE, THINK_OPEN
from diaforge.saying import inflect_engine, render_value
from diaforge.schema import Dialogue, ToolCall
from diaforge.text import stem, words

__all__ = [
    "DICE_ALPHA",
    "DiceBenchItemCounter",
    "DiceItem",
    "LLMItemCounter",
    "count_items",
    "dialogue_dice",
    "dialogue_dice_counts",
    "dice_items",
    "dice_score",
    "dicebench_doc",
    "item_mentioned",
    "number_words",
    "parse_number_words",
]

DICE_ALPHA = math.e**2
"""α of DICE-Bench Eq. 1: the repetition penalty."""


def dice_score(counts: Sequence[int], num_items: int, alpha: float = DICE_ALPHA) -> float:
    """DICE-Bench Eq. 1: ``min(|S≠0|, T) · sqrt(|S|·T) / Σ ln(1 + α·S_i)``.

    `counts` are the S_i (items mentioned per utterance), `num_items` is T (the function name plus
    each argument). 0.0 where the score is undefined: T = 0, no utterance, or a zero denominator
    (every count is 0). Raises `ValueError` on a negative count or T, or a non-positive α.
    """
    if alpha <= 0:
        raise ValueError(f"alpha must be positive, got {alpha}")
    if num_items < 0:
        raise ValueError(f"num_items must be >= 0, got {num_items}")
    bad = [c for c in counts if c < 0]
    if bad:
        raise ValueError(f"counts must be >= 0, got {bad[0]}")
    if num_items == 0 or not counts:
        return 0.0
    denominator = sum(math.log1p(alpha * c) for c in counts)
    if denominator <= 0:
        return 0.0
    nonzero = sum(1 for c in counts if c > 0)
    return min(nonzero, num_items) * math.sqrt(len(counts) * num_items) / denominator


@dataclass(frozen=True)
class DiceItem:
    """One function-related item: the function name (`param` None) or one argument."""

    function: str
    param: str | None = None
    value: Any = None

    @property
    def is_function(self) -> bool:
        return self.param is None

    def describe(self) -> str:
        if self.is_function:
            return f"the function name {self.function!r}"
        return f"argument {self.param} = {render_value(self.value)}"


def dice_items(calls: Iterable[ToolCall | tuple[str, dict[str, Any]]]) -> list[DiceItem]:
    """The items of some calls: for each call its name, then one item per argument (T = len)."""
    out: list[DiceItem] = []
    for call in calls:
        name, args = (call.name, call.args) if isinstance(call, ToolCall) else call
        out.append(DiceItem(name))
        out.extend(DiceItem(name, key, value) for key, value in args.items())
    return out


def _norm(text: str) -> str:
    return " ".join(unicodedata.normalize("NFKC", text).casefold().split())


def _contains(haystack: str, needle: str) -> bool:
    """`needle` (normalised) occurs in `haystack` (normalised) between word boundaries."""
    needle = _norm(needle)
    if not needle:
        return False
    return re.search(rf"(?<!\w){re.escape(needle)}(?!\w)", haystack) is not None


def _word_stems(text: str) -> set[str]:
    return {stem(w) for w in words(text)}


NUMBER_WORDS_BELOW = 1_000_000
"""Whole numbers below this get their English cardinals as mention forms (`number_words`)."""

_UNITS = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_TENS = ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]
_SMALL = {w: i for i, w in enumerate(_UNITS)} | {w: 20 + 10 * i for i, w in enumerate(_TENS)}


@lru_cache(maxsize=4096)
def number_words(n: int) -> tuple[str, ...]:
    """The English cardinals of a whole number below `NUMBER_WORDS_BELOW` in absolute value (none
    otherwise): with and without "and" after the hundreds, hyphenated and spaced tens, no commas:
    25 -> ("twenty-five", "twenty five"); 105 -> ("one hundred five", "one hundred and five")."""
    if abs(n) >= NUMBER_WORDS_BELOW:
        return ()
    engine = inflect_engine()
    forms: list[str] = []
    for andword in ("", "and"):
        text = " ".join(engine.number_to_words(n, andword=andword).replace(",", " ").split())
        for form in (text, text.replace("-", " ")):
            if form not in forms:
                forms.append(form)
    return tuple(forms)


def parse_number_words(text: str) -> int | None:
    """The whole number an English cardinal names ("four", "twenty-five", "one hundred and five",
    "two thousand three hundred"); None for anything else. The inverse of `number_words`."""
    tokens = [t for t in re.split(r"[\s-]+", _norm(text)) if t and t != "and"]
    if not tokens:
        return None
    sign = -1 if tokens[0] in ("minus", "negative") else 1
    tokens = tokens[1:] if sign < 0 else tokens
    total = current = 0
    seen = False
    for t in tokens:
        if t in _SMALL:
            current += _SMALL[t]
        elif t == "hundred" and seen:
            current *= 100
        elif t == "thousand" and seen:
            total, current = total + current * 1000, 0
        else:
            return None
        seen = True
    return sign * (total + current) if seen else None


def _whole_number_forms(n: int) -> list[str]:
    return [str(n), *([f"{n:,}"] if abs(n) >= 1000 else []), *number_words(n)]


def _scalar_forms(value: Any) -> list[str]:
    if isinstance(value, str):
        text = value.strip().strip("\"'").strip()
        if re.fullmatch(r"[+-]?\d+", text):
            return [text, *(f for f in _whole_number_forms(int(text)) if f != text)]
        spelled = parse_number_words(text)
        return [text, str(spelled)] if spelled is not None else [text]
    if isinstance(value, int):
        return _whole_number_forms(value)
    if isinstance(value, float):
        forms = [render_value(value)]
        if math.isfinite(value) and value.is_integer():
            forms.extend(f for f in _whole_number_forms(int(value)) if f not in forms)
        return forms
    return [str(value)]


def _leaves(value: Any) -> list[Any]:
    if isinstance(value, dict):
        return [leaf for v in value.values() for leaf in _leaves(v)]
    if isinstance(value, (list, tuple)):
        return [leaf for v in value for leaf in _leaves(v)]
    return [value]


def _value_mentioned(norm_text: str, stems: set[str], param: str, value: Any) -> bool:
    if value is None:
        return False
    if isinstance(value, bool):
        flag = words(param)
        if len(flag) > 1 and flag[0] in ("is", "has"):
            flag = flag[1:]
        return bool(flag) and {stem(w) for w in flag} <= stems
    if isinstance(value, (dict, list, tuple)):
        leaves = _leaves(value)
        return bool(leaves) and all(_value_mentioned(norm_text, stems, param, leaf) for leaf in leaves)
    return any(_contains(norm_text, form) for form in _scalar_forms(value))


def _mentioned(norm_text: str, stems: set[str], item: DiceItem) -> bool:
    if item.is_function:
        name = {stem(w) for w in words(item.function)}
        return bool(name) and name <= stems
    return _value_mentioned(norm_text, stems, item.param or "", item.value)


def item_mentioned(utterance: str, item: DiceItem) -> bool:
    """Whether `utterance` mentions `item` under the deterministic rules of the module docstring."""
    return _mentioned(_norm(utterance), _word_stems(utterance), item)


def count_items(utterance: str, items: Sequence[DiceItem]) -> int:
    """S_i: how many of `items` the utterance mentions (each at most once)."""
    norm_text, stems = _norm(utterance), _word_stems(utterance)
    return sum(1 for item in items if _mentioned(norm_text, stems, item))


def _gold_calls(d: Dialogue) -> list[tuple[int, list[ToolCall]]]:
    """(turn index, calls) of every assistant turn with calls; a dialogue with none but a seed
    tool gets its gold call after the last turn."""
    calls = [(i, list(t.tool_calls)) for i, t in enumerate(d.turns) if t.role == "assistant" and t.tool_calls]
    if not calls and d.seed_tool is not None:
        calls = [(len(d.turns), [ToolCall(name=d.seed_tool, args=dict(d.gold_args))])]
    return calls


def _utterance_targets(d: Dialogue) -> tuple[list[tuple[str, list[DiceItem]]], int]:
    calls = _gold_calls(d)
    total = sum(1 + len(c.args) for _, cs in calls for c in cs)
    pairs = []
    for i, t in enumerate(d.turns):
        if t.role != "user":
            continue
        later = [c for j, cs in calls if j > i for c in cs]
        pairs.append((t.content, dice_items(later)))
    return pairs, total


def dialogue_dice_counts(
    d: Dialogue, counter: Callable[[str, Sequence[DiceItem]], int] = count_items
) -> tuple[list[int], int]:
    """(S, T) of a dialogue: one count per user turn (matched against the calls after it), and T."""
    pairs, total = _utterance_targets(d)
    return [counter(text, items) if items else 0 for text, items in pairs], total


def dialogue_dice(
    d: Dialogue, counter: Callable[[str, Sequence[DiceItem]], int] = count_items, alpha: float = DICE_ALPHA
) -> float:
    """DICE-Score of one dialogue with the deterministic counter (or any sync counter)."""
    counts, total = dialogue_dice_counts(d, counter)
    return dice_score(counts, total, alpha)


_INT = re.compile(r"-?\d+")
_THINK = re.compile(f"{re.escape(THINK_OPEN)}.*?{re.escape(THINK_CLOSE)}", re.S)


async def _counts_by_dialogue(
    counts: Callable[[Dialogue], Awaitable[tuple[list[int], int]]],
    dialogues: Sequence[Dialogue],
    concurrency: int,
) -> dict[str, tuple[list[int], int]]:
    """`counts` of every dialogue, at most `concurrency` at a time, keyed by dialogue id."""
    gate = asyncio.Semaphore(max(1, concurrency))

    async def one(d: Dialogue) -> tuple[str, tuple[list[int], int]]:
        async with gate:
            return d.id, await counts(d)

    return dict(await asyncio.gather(*(one(d) for d in dialogues)))


class LLMItemCounter:
    """Counts the function-related items of an utterance with an LLM (DICE-Bench used GPT-4o-mini).

    `backend` is any object with ``async chat(messages, *, temperature, max_tokens, seed)``
    returning something with ``.text`` (every `diaforge.llm` backend qualifies). The answer's first
    integer, clamped to [0, number of items], is the count; an answer with no integer gives None
    (the caller decides; `counts` falls back to the deterministic matcher for that utterance and
    records how often it had to). Backend errors propagate: a count is never made up.
    """

    SYSTEM = (
        "You count how many function-related items a single chat utterance mentions or clearly "
        "refers to. An item is the function to call or the value of one of its arguments."
    )

    def __init__(self, backend: Any, *, temperature: float = 0.0, max_tokens: int = 8, seed: int | None = 0):
        self.backend = backend
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.seed = seed
        self.fallbacks = 0

    def messages(self, utterance: str, items: Sequence[DiceItem]) -> list[dict[str, str]]:
        listing = "\n".join(f"{i}. {item.describe()}" for i, item in enumerate(items, start=1))
        user = (
            f"Items:\n{listing}\n\nUtterance:\n<utterance>\n{utterance}\n</utterance>\n\n"
            "How many of the items above does the utterance mention? Only respond with an integer."
        )
        return [{"role": "system", "content": self.SYSTEM}, {"role": "user", "content": user}]

    async def count(self, utterance: str, items: Sequence[DiceItem]) -> int | None:
        """The LLM's count, clamped to [0, len(items)]; None when its answer holds no integer."""
        if not items:
            return 0
        result = await self.backend.chat(
            self.messages(utterance, items),
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            seed=self.seed,
        )
        m = _INT.search(_THINK.sub(" ", result.text or ""))
        if m is None:
            return None
        return max(0, min(len(items), int(m.group(0))))

    async def counts(self, d: Dialogue) -> tuple[list[int], int]:
        """(S, T) of a dialogue, S from the LLM (the value matcher where its answer held no integer)."""
        pairs, total = _utterance_targets(d)
        out = []
        for text, items in pairs:
            n = await self.count(text, items)
            if n is None:
                self.fallbacks += 1
                n = count_items(text, items)
            out.append(n)
        return out, total

    async def corpus_counts(
        self, dialogues: Sequence[Dialogue], *, concurrency: int = 4
    ) -> dict[str, tuple[list[int], int]]:
        """`counts` for every dialogue, `concurrency` dialogues at a time, keyed by dialogue id."""
        return await _counts_by_dialogue(self.counts, dialogues, concurrency)


def dicebench_doc(tool: Any) -> dict[str, Any]:
    """A tool as DICE-Bench documents it (``{function, desc, parameters: [{name, type, desc}],
    return}``): the imported document itself when the tool came from a DICE-Bench tool file
    (``metadata["doc"]``), else one written from the tool's schema."""
    doc = tool.metadata.get("doc")
    if isinstance(doc, dict):
        return {k: doc.get(k, [] if k == "parameters" else {} if k == "return" else "") for k in _DOC_KEYS}
    params = [
        {"name": k, "type": str(spec.get("type", "")), "desc": str(spec.get("description", ""))}
        for k, spec in tool.properties.items()
    ]
    return {
        "function": tool.name,
        "desc": tool.description,
        "parameters": params,
        "return": tool.metadata.get("return") or {},
    }


_DOC_KEYS = ("function", "desc", "parameters", "return")


class DiceBenchItemCounter:
    """DICE-Bench's own item counter (``src/get_dice_score.py`` of snuhcc/DICE-Bench), for parity
    with the paper's scores.

    Per user utterance it sends DICE-Bench's prompt, word for word: the documentation (description,
    parameters, return; `dicebench_doc`, as indented JSON) of every function still to be called, one
    entry per later call, and the utterance's text without its speaker tag, with the system message
    "You are a helpful assistant.", temperature 0 and at most 64 tokens. The reply, stripped, must
    be an integer; otherwise the count is 0, as there (`unparsed` says how often). Unlike
    `LLMItemCounter` the model sees no gold value, only what the functions take, and the count is
    not clamped. An utterance with no function left to call counts 0 without a query. Backend errors
    propagate.
    """

    SYSTEM = "You are a helpful assistant."

    def __init__(self, backend: Any, *, max_tokens: int = 64, seed: int | None = 0):
        self.backend = backend
        self.max_tokens = max_tokens
        self.seed = seed
        self.unparsed = 0

    @staticmethod
    def prompt(utterance: str, docs: Sequence[dict[str, Any]]) -> str:
        docs_str = json.dumps(list(docs), indent=2, ensure_ascii=False)
        return (
            "Below is documentation for one or more functions (description, parameters).\n"
            "Given the user utterance, count how many items (function names, parameter are "
            "semantically referenced in that utterance.\n\n"
            f"Function Docs:\n{docs_str}\n\n"
            f'User Utterance: "{utterance}"\n\n'
            "Respond with an integer only (0 if nothing is referenced)."
        )

    @staticmethod
    def queries(d: Dialogue) -> tuple[list[tuple[str, list[dict[str, Any]]]], int]:
        """(utterance text, docs of the later calls) per user turn, and T."""
        tools = {t.name: t for t in d.candidate_tools}
        calls = _gold_calls(d)
        total = sum(1 + len(c.args) for _, cs in calls for c in cs)
        out = []
        for i, t in enumerate(d.turns):
            if t.role != "user":
                continue
            speaker = t.metadata.get("speaker")
            text = t.content
            if isinstance(speaker, str) and text.startswith(f"{speaker}: "):
                text = text[len(speaker) + 2 :]
            later = [c for j, cs in calls if j > i for c in cs]
            out.append((text, [dicebench_doc(tools[c.name]) for c in later if c.name in tools]))
        return out, total

    async def count(self, utterance: str, docs: Sequence[dict[str, Any]]) -> int:
        if not docs:
            return 0
        result = await self.backend.chat(
            [
                {"role": "system", "content": self.SYSTEM},
                {"role": "user", "content": self.prompt(utterance, docs)},
            ],
            temperature=0.0,
            max_tokens=self.max_tokens,
            seed=self.seed,
        )
        try:
            return int((result.text or "").strip())
        except ValueError:
            self.unparsed += 1
            return 0

    async def counts(self, d: Dialogue) -> tuple[list[int], int]:
        """(S, T) of a dialogue with DICE-Bench's counter."""
        pairs, total = self.queries(d)
        return [await self.count(text, docs) for text, docs in pairs], total

    async def corpus_counts(
        self, dialogues: Sequence[Dialogue], *, concurrency: int = 4
    ) -> dict[str, tuple[list[int], int]]:
        """`counts` for every dialogue, `concurrency` dialogues at a time, keyed by dialogue id."""
        return await _counts_by_dialogue(self.counts, dialogues, concurrency)
