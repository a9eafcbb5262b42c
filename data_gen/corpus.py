"""Corpus statistics of a set of dialogues: `python -m data_gen analyze-corpus DIALOGUES.jsonl`.

What `analyze_corpus` reports (every number in one JSON object, see `format_corpus_report`):

* **turns**: total, user and assistant turns, turns per dialogue (mean, median, min, max and a
  histogram), calls per dialogue;
* **dialogue acts**: the distribution of the coarse CONFETTI label (`act`: seek_info, inform,
  reject, function_calling, other) and of the fine ToolDial action (`action`: clarify, request,
  suggest, call, response, response_fail, system_bye, retriever_call) over assistant turns, their
  joint distribution, how many assistant turns carry both labels, and every consistency violation
  (`label_violations`);
* **DICE-Score** (DICE-Bench, Eq. 1; `dice_score`): per dialogue, then mean, median, min, max and
  how many dialogues had an undefined score (scored 0.0);
* **lexical diversity**: TTR and NGD-2/3/4 over the assistant's replies (the same definitions and
  tokenisation as `eval.metrics.ttr` / `eval.metrics.ngd`, so the numbers compare with an
  evaluation run's) and, separately, over the user turns.

DICE-Score
----------
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
(`LLMItemCounter`) supplies the counts. Text is normalised as in `eval.metrics.values_match`
(Unicode NFKC, case folding, whitespace runs collapsed); a phrase is "in" an utterance when it
occurs there between word boundaries. An item is mentioned in an utterance when:

==============  ================================================================================
item            mentioned when
==============  ================================================================================
function name   every word of the name (snake_case and camelCase split, light stemming:
                `data_gen.text.stem`) is among the utterance's words: "approve the internal
                training request" mentions ``approve_internal_training_request``
string value    the value (surrounding quotes and whitespace stripped) occurs in the utterance;
                an empty string is never mentioned
number          its rendering (``data_gen.values.render_value``: 3.0 -> "3", 12.5 -> "12.5"),
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
the released dialogues). `LLMItemCounter(..., prompt="dicebench")` asks DICE-Bench's own question.

Each item counts at most once per utterance; an item mentioned in two utterances counts in both
(that is what the repetition penalty is for).
"""

from __future__ import annotations

import asyncio
import json
import math
import re
import statistics
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, get_args

from data_gen.schema import ACT_OF_ACTION, Dialogue, DialogueAct, SystemAction, ToolCall
from data_gen.text import stem, words
from data_gen.values import render_value

__all__ = [
    "ACTS",
    "ACTIONS",
    "DiceBenchItemCounter",
    "DiceItem",
    "LLMItemCounter",
    "analyze_corpus",
    "count_items",
    "dialogue_dice",
    "dialogue_dice_counts",
    "dice_items",
    "dice_score",
    "dicebench_doc",
    "format_corpus_report",
    "item_mentioned",
    "label_violations",
    "number_words",
    "parse_number_words",
]

DICE_ALPHA = math.e**2
"""α of DICE-Bench Eq. 1: the repetition penalty."""

ACTS: tuple[str, ...] = get_args(DialogueAct)
"""CONFETTI's coarse dialogue acts, in schema order."""
ACTIONS: tuple[str, ...] = get_args(SystemAction)
"""ToolDial's fine system actions, in schema order."""

CALL_ACTIONS = ("call", "retriever_call")
_ROUND = 6


# --------------------------------------------------------------------------------------------
# DICE-Score
# --------------------------------------------------------------------------------------------


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
    from data_gen.phrasing import _inflect_engine

    engine = _inflect_engine()
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
_THINK = re.compile(r"<think>.*?</think>", re.S)


class LLMItemCounter:
    """Counts the function-related items of an utterance with an LLM (DICE-Bench used GPT-4o-mini).

    `backend` is any object with ``async chat(messages, *, temperature, max_tokens, seed)``
    returning something with ``.text`` (every `data_gen.llm` backend qualifies). The answer's first
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
        gate = asyncio.Semaphore(max(1, concurrency))

        async def one(d: Dialogue) -> tuple[str, tuple[list[int], int]]:
            async with gate:
                return d.id, await self.counts(d)

        return dict(await asyncio.gather(*(one(d) for d in dialogues)))


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
        gate = asyncio.Semaphore(max(1, concurrency))

        async def one(d: Dialogue) -> tuple[str, tuple[list[int], int]]:
            async with gate:
                return d.id, await self.counts(d)

        return dict(await asyncio.gather(*(one(d) for d in dialogues)))


# --------------------------------------------------------------------------------------------
# Dialogue-act labels
# --------------------------------------------------------------------------------------------


def label_violations(d: Dialogue) -> list[str]:
    """Every problem with the act/action labels of `d`'s assistant turns, one string each:

    * a turn without an `act` or without an `action`;
    * an action whose act is not the one it implies (`data_gen.schema.ACT_OF_ACTION`:
      clarify/request/suggest -> seek_info, call/retriever_call -> function_calling,
      response -> inform, response_fail -> reject, system_bye -> other);
    * a turn with tool calls not labelled function_calling and call/retriever_call;
    * a turn without tool calls labelled call/retriever_call or function_calling (a clarify or
      request turn, like every other non-call turn, has no call).
    """
    out = []
    for i, t in enumerate(d.turns):
        if t.role != "assistant":
            continue
        where = f"{d.id} turn {i}"
        if t.act is None or t.action is None:
            missing = " and ".join(k for k in ("act", "action") if getattr(t, k) is None)
            out.append(f"{where}: no {missing}")
            continue
        if ACT_OF_ACTION.get(t.action) != t.act:
            out.append(
                f"{where}: action {t.action!r} implies act {ACT_OF_ACTION.get(t.action)!r}, got {t.act!r}"
            )
        if t.tool_calls and (t.act != "function_calling" or t.action not in CALL_ACTIONS):
            out.append(f"{where}: has tool calls but is labelled {t.act}/{t.action}")
        if not t.tool_calls and (t.act == "function_calling" or t.action in CALL_ACTIONS):
            out.append(f"{where}: labelled {t.act}/{t.action} but has no tool call")
    return out


# --------------------------------------------------------------------------------------------
# Lexical diversity (same definitions as eval.metrics.ttr / ngd)
# --------------------------------------------------------------------------------------------

_TOKEN = re.compile(r"\w+(?:'\w+)?")


def _tokens(text: str) -> list[str]:
    return _TOKEN.findall(text.lower())


def _diversity(texts: Sequence[str]) -> dict[str, Any]:
    tokens = [tok for text in texts for tok in _tokens(text)]
    out: dict[str, Any] = {"texts": len(texts), "tokens": len(tokens)}
    out["TTR"] = round(len(set(tokens)) / len(tokens), _ROUND) if tokens else 0.0
    for n in (2, 3, 4):
        grams = []
        for text in texts:
            toks = _tokens(text)
            grams.extend(tuple(toks[i : i + n]) for i in range(len(toks) - n + 1))
        out[f"NGD{n}"] = round(len(set(grams)) / len(grams), _ROUND) if grams else 0.0
    return out


# --------------------------------------------------------------------------------------------
# The report
# --------------------------------------------------------------------------------------------


def _summary(values: Sequence[float]) -> dict[str, float]:
    if not values:
        return {"mean": 0.0, "median": 0.0, "min": 0.0, "max": 0.0}
    return {
        "mean": round(statistics.fmean(values), _ROUND),
        "median": round(float(statistics.median(values)), _ROUND),
        "min": round(float(min(values)), _ROUND),
        "max": round(float(max(values)), _ROUND),
    }


def analyze_corpus(
    dialogues: Sequence[Dialogue],
    *,
    dice_counts: dict[str, tuple[list[int], int]] | None = None,
    counter_name: str = "value-matcher",
    max_examples: int = 20,
) -> dict[str, Any]:
    """Every statistic of the module docstring for `dialogues`, as one JSON-able dict.

    `dice_counts` ({dialogue id: (S, T)}) replaces the deterministic item counter, e.g. with the
    output of `LLMItemCounter.corpus_counts`; `counter_name` says which counter produced them.
    """
    n = len(dialogues)
    turn_counts = [len(d.turns) for d in dialogues]
    assistant = [t for d in dialogues for t in d.turns if t.role == "assistant"]
    users = [t for d in dialogues for t in d.turns if t.role == "user"]
    acts = Counter(t.act or "unlabelled" for t in assistant)
    actions = Counter(t.action or "unlabelled" for t in assistant)
    pairs = Counter(f"{t.act or '-'}/{t.action or '-'}" for t in assistant)
    violations = [v for d in dialogues for v in label_violations(d)]
    scores, undefined = [], 0
    for d in dialogues:
        counts, total = dice_counts[d.id] if dice_counts is not None else dialogue_dice_counts(d)
        if total == 0 or not any(counts):
            undefined += 1
        scores.append(dice_score(counts, total))
    replies = [t.content for t in assistant if not t.tool_calls and t.content.strip()]
    return {
        "dialogues": n,
        "turns": {
            "total": sum(turn_counts),
            "user": len(users),
            "assistant": len(assistant),
            "per_dialogue": _summary(turn_counts),
            "assistant_per_dialogue": _summary(
                [sum(1 for t in d.turns if t.role == "assistant") for d in dialogues]
            ),
            "histogram": {str(k): v for k, v in sorted(Counter(turn_counts).items())},
            "tool_calls": sum(len(t.tool_calls or []) for t in assistant),
        },
        "acts": {k: acts[k] for k in (*ACTS, "unlabelled") if acts[k]},
        "actions": {k: actions[k] for k in (*ACTIONS, "unlabelled") if actions[k]},
        "act_action": dict(sorted(pairs.items(), key=lambda kv: (-kv[1], kv[0]))),
        "labels": {
            "assistant_turns": len(assistant),
            "fully_labelled": sum(1 for t in assistant if t.act is not None and t.action is not None),
            "violations": len(violations),
            "violation_examples": violations[:max_examples],
        },
        "dice": {
            "counter": counter_name,
            "alpha": round(DICE_ALPHA, _ROUND),
            **_summary(scores),
            "undefined": undefined,
            "n": n,
        },
        "diversity": {"assistant": _diversity(replies), "user": _diversity([t.content for t in users])},
        "seed_tools": len({d.seed_tool for d in dialogues if d.seed_tool is not None}),
    }


def format_corpus_report(stats: dict[str, Any]) -> str:
    """A readable summary of `analyze_corpus` output."""
    t, lab, dice, div = stats["turns"], stats["labels"], stats["dice"], stats["diversity"]
    per = t["per_dialogue"]
    lines = [
        f"dialogues:            {stats['dialogues']} ({stats['seed_tools']} distinct seed tools)",
        f"turns:                {t['total']} ({t['user']} user, {t['assistant']} assistant, {t['tool_calls']} tool calls)",
        f"turns per dialogue:   mean {per['mean']:.2f}, median {per['median']:g}, min {per['min']:g}, max {per['max']:g}",
        "turn histogram:       " + ", ".join(f"{k}: {v}" for k, v in t["histogram"].items()),
        f"DICE-Score ({dice['counter']}): mean {dice['mean']:.4f}, median {dice['median']:.4f}, "
        f"min {dice['min']:.4f}, max {dice['max']:.4f}; undefined (scored 0): {dice['undefined']}",
    ]
    for who in ("assistant", "user"):
        d = div[who]
        lines.append(
            f"{who + ' diversity:':<22}TTR {d['TTR']:.4f}  NGD2 {d['NGD2']:.4f}  NGD3 {d['NGD3']:.4f}  "
            f"NGD4 {d['NGD4']:.4f}  ({d['texts']} texts, {d['tokens']} tokens)"
        )
    total = max(1, lab["assistant_turns"])
    lines.append("")
    lines.append(
        f"labels: {lab['fully_labelled']}/{lab['assistant_turns']} assistant turns carry act and action "
        f"({lab['fully_labelled'] / total:.1%}); consistency violations: {lab['violations']}"
    )
    lines.append("acts:    " + ", ".join(f"{k} {v} ({v / total:.1%})" for k, v in stats["acts"].items()))
    lines.append("actions: " + ", ".join(f"{k} {v} ({v / total:.1%})" for k, v in stats["actions"].items()))
    lines.append("act/action: " + ", ".join(f"{k} {v}" for k, v in stats["act_action"].items()))
    for v in lab["violation_examples"]:
        lines.append(f"  violation: {v}")
    return "\n".join(lines)
