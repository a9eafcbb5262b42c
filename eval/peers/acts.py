"""Dialog-act classifiers for assistant replies (CONFETTI's acts), rule-based or LLM-backed.

CONFETTI labels every agent turn with one or more of five acts; a turn that calls a function is
``function_calling`` by its call, so a classifier only decides the act of a turn's *text*: one of
`TEXT_ACTS` (our names for CONFETTI's agent_seek_information, agent_inform_user,
agent_reject_request and agent_other). A prediction is right when it is among the gold acts
(CONFETTI's "any predicted label among the gold ones").

Rules (`classify_act`, the default). The reply is cut into sentences (at ``.!?`` and line breaks)
and each sentence is sorted into one of:

* *closing*: an offer of more help or a sign-off ("Is there anything else I can help you with?",
  "Let me know if you need anything else", "feel free to reach out", "Have a great day");
* *courtesy*: thanks, "you're welcome", "glad I could help", a greeting or a one-word
  interjection ("Sure!", "Great!"), or a bare statement of readiness ("I can help you with that");
* *substantive*: anything else.

Then, in this order: an empty reply -> ``other``; a refusal -> ``reject`` (a first-person
inability in a substantive sentence: "I cannot", "I am unable to", "I don't have the capability",
"not supported", "not equipped"; or "unfortunately" / "sorry" / "apologize" opening the first
substantive sentence of a reply that presents no results: no list, no code block, no "here
are"); a request for information -> ``seek_info`` (in a substantive sentence: a wh-question, "could
/ can you provide / tell / share / specify / confirm", "may I ask", "please provide / share / let me
know the ...", "I will need", "I need the following", "once you receive it, please ...") unless the
reply presents results, which makes it ``inform`` (CONFETTI labels such turns inform, or inform and
seek_info); any substantive sentence -> ``inform``; only closing and courtesy sentences ->
``other``. A yes/no offer ("Would you like to book one of these?") seeks nothing.

Labelled set. ``tests/fixtures/peers/confetti_acts/`` holds 201 agent turns of CONFETTI's
released dialog-act answers (verbatim lines, CC-BY-4.0), stratified over the acts and split into a
development half (the rules were tuned on it) and a held-out half (reported, never tuned on); its
README gives the source and the selection. `read_act_examples` reads any file in that format.

LLM option (`LLMActClassifier`). A chat backend (``diaforge.llm``: ``hf``, a local model folder or
the embedded SmolLM2; ``openai``, any OpenAI-compatible server) is shown the act definitions and the
reply and answers with one act name, at temperature 0; the answer is read by `parse_act` (an act
name, its CONFETTI spelling, or a distinctive word of it); an answer that names none falls back to
the rules (``fallbacks`` counts them). `build_act_classifier` makes either from the command line
(`add_act_classifier_args`: ``--act-classifier rules|llm``, ``--act-backend``, ``--act-model``,
``--act-base-url``).
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from diaforge.format.rendering import THINK_BLOCK

__all__ = [
    "ACT_CLASSIFIERS",
    "TEXT_ACTS",
    "ActExample",
    "LLMActClassifier",
    "RuleActClassifier",
    "add_act_classifier_args",
    "add_turn_level_act_args",
    "build_act_classifier",
    "classify_act",
    "classify_act_set",
    "cmd_act_set",
    "format_act_scores",
    "parse_act",
    "read_act_examples",
    "run_with_act_classifier",
    "score_acts",
    "without_closings",
]

TEXT_ACTS = ("seek_info", "inform", "reject", "other")
ACT_CLASSIFIERS = ("rules", "llm")
_ROUND = 6

# --------------------------------------------------------------------------------------------
# Rules
# --------------------------------------------------------------------------------------------

_SENTENCE = re.compile(r"(?<=[.!?])\s+|\n+")
_CLOSING = re.compile(
    r"\b(?:anything else|any(?:thing)? other (?:questions?|requests?|way|help|details?|information|"
    r"needs?|concerns?|notifications?|recommendations?|specifics|restaurants?|options?)|any more "
    r"(?:help|questions?|assistance)|what else|how else|further (?:assistance|help|questions?)|"
    r"feel free|(?:do not|don't) hesitate|(?:don't|do not) be afraid|reach out|"
    r"have a (?:\w+ )?(?:day|evening|afternoon|night|week|weekend|trip)|take care|enjoy the rest|"
    r"rest of your day|great day ahead|safe travels|good luck|i(?:'m| am) here (?:if|whenever|to help)|"
    r"happy to (?:help|assist) (?:further|more)|glad (?:i|to) (?:could )?help|"
    r"let me know if (?:you|there)(?:'s| is| are| have| need| would| want)? ?(?:any|anything|more|other|"
    r"further|interested)|if you (?:have|need) (?:any )?(?:more|other|further|additional))",
    re.I,
)
_COURTESY = re.compile(
    r"^(?:you(?:'re| are) (?:very |vey |most )?welcome|no problem|my pleasure|it is my pleasure|"
    r"thank(?:s| you)|i(?:'m| am) glad|glad|great|perfect|wonderful|awesome|sure|certainly|of course|"
    r"absolutely|okay|ok|got it|hello|hi|hey|good (?:day|morning|afternoon|evening)|greetings|(?:good ?)?bye|"
    r"farewell|"
    r"i(?:'d| would) be (?:happy|glad|delighted) to (?:help|assist)|"
    r"i can (?:certainly |definitely )?(?:help|assist) (?:you )?with (?:that|this)|"
    r"i(?:'m| am) (?:happy|here) to (?:help|assist))\b",
    re.I,
)
_INABLE = re.compile(
    r"\b(?:i|we)(?:'m| am| are)? (?:(?:currently|unfortunately|afraid i|sorry,? i) )?"
    r"(?:cannot|can't|can not|(?:am |'m |are )?(?:unable|not able|not equipped|not allowed)|"
    r"(?:do not|don't|does not) (?:currently )?(?:have|support|see)(?: the| any)? ?"
    r"(?:capability|ability|tools?|access|functionality|option|permission|enough information)|"
    r"(?:do not|don't) have (?:have )?the (?:capability|ability|required tools|tools))|"
    r"\bbut (?:cannot|can't|am unable to)\b|\bnot supported\b|\bdoes not include the capability\b|\bwas unable to\b|\bbeyond my\b|"
    r"\boutside (?:of )?(?:my|the) scope\b",
    re.I,
)
_SORRY = re.compile(
    r"^(?:\w+[,.!]? )?(?:unfortunately|i(?:'m| am)(?: very| so)? sorry|i apologi[sz]e|"
    r"sorry|i sincerely apologi[sz]e|i must inform)",
    re.I,
)
_RESULTS = re.compile(
    r"```|\bhere (?:are|is)\b|\bi (?:have )?found\b|\bi see\b|\bsuccessfully\b|"
    r"\bhas been (?:booked|sent|cancell?ed|placed|filed|created|updated|submitted)\b|"
    r"\bi(?:'ve| have) (?:gone ahead|sent|booked|cancell?ed|placed|filed|ordered|created|updated)\b|"
    r"\baccording to\b",
    re.I,
)
_LIST_LINE = re.compile(r"^\s*(?:[-*•]|\d+[.)])\s+\S[^\n]*\d", re.M)
_WH = re.compile(r"^(?:\w+[,!]? )?(?:so,? )?(?:what|which|when|where|who|whom|whose|how)\b", re.I)
_ASK = re.compile(
    r"\b(?:could|can|would|will) you (?:please |kindly )?(?:provide|tell|share|specify|confirm|give|"
    r"send|let me know|clarify|rephrase|describe|explain|enter|reply)\b|"
    r"\bmay i (?:ask|know|have|get)\b|\bdo you (?:have|know|want|prefer)\b|"
    r"\bplease (?:\w+ )?(?:provide|share|send|tell|specify|confirm|give|enter|reply|let me know (?:the|your|"
    r"what|which|when|where|how|who|if you(?:'d| would) prefer|whether))\b|"
    r"\b(?:i(?:'ll| will| would)?|i am going to|we(?:'ll| will)?) (?:first |just |also )?need\b|"
    r"\bneed (?:the following|a few|some|to know|more (?:details|information))\b|"
    r"\bonce you (?:receive|have|get|find)\b|\blet me know (?:the|your|what|which|when|where|how|who)\b|"
    r"\bsend (?:me|over) (?:the|your)\b",
    re.I,
)


def _sentences(text: str) -> list[str]:
    return [s.strip(" \t-*#>`|") for s in _SENTENCE.split(text) if s.strip(" \t-*#>`|")]


def _is_closing(s: str) -> bool:
    return bool(_CLOSING.search(s))


def _is_courtesy(s: str) -> bool:
    m = _COURTESY.match(s)
    return bool(m) and (len(s) - m.end() < 12 or not re.search(r"[,:;]\s*\w+\s+\w+", s[m.end() :]))


def without_closings(text: str) -> str:
    """`text` without its closing sentences (offers of more help, sign-offs: module docstring), so
    that "Is there anything else I can help you with?" does not make a reply a question."""
    return " ".join(s for s in _sentences(text) if not _is_closing(s))


def _presents_results(text: str) -> bool:
    return bool(_RESULTS.search(text)) or len(_LIST_LINE.findall(text)) >= 2


def _seeks(s: str) -> bool:
    if s.endswith("?") and _WH.search(s):
        return True
    return bool(_ASK.search(s))


def classify_act(text: str) -> str:
    """The CONFETTI act of a reply's text (rules in the module docstring): one of `TEXT_ACTS`."""
    if not text or not text.strip():
        return "other"
    sentences = _sentences(text)
    substantive = [s for s in sentences if not _is_closing(s) and not _is_courtesy(s)]
    results = _presents_results(text)
    if any(_INABLE.search(s) for s in substantive):
        return "reject"
    if substantive and _SORRY.search(substantive[0]) and not results:
        return "reject"
    if any(_seeks(s) for s in substantive):
        return "inform" if results else "seek_info"
    return "inform" if substantive else "other"


# --------------------------------------------------------------------------------------------
# The labelled set and its scores
# --------------------------------------------------------------------------------------------


@dataclass
class ActExample:
    """The text of one agent turn and its gold acts (our names; ``function_calling`` left out)."""

    id: str
    text: str
    gold: list[str]
    calls: int = 0
    """How many call strings the turn's content held besides its text."""


def read_act_examples(path: str | Path) -> list[ActExample]:
    """Agent turns of a file in CONFETTI's dialog-act answer format (JSON Lines of ``{"id",
    "ground_truth": ["agent_..."], "ground_truth_content": [call strings and text]}``): the text is
    the content strings that are not calls, the gold acts the labels other than function calling.
    A turn whose only label is function calling has no text act and is left out."""
    from diaforge.errors import InputError
    from diaforge.eval.peers import need, read_json_lines
    from diaforge.eval.peers.confetti import ACT_LABELS, looks_like_calls

    out = []
    for lineno, obj in read_json_lines(path):
        labels = obj.get("ground_truth")
        need(
            isinstance(labels, list) and all(x in ACT_LABELS for x in labels),
            f"{obj.get('id', '?')}: 'ground_truth' must list CONFETTI acts ({', '.join(ACT_LABELS)})",
            Path(path),
            lineno,
        )
        content = obj.get("ground_truth_content") or []
        if not isinstance(content, list) or not all(isinstance(x, str) for x in content):
            raise InputError("'ground_truth_content' must be a list of strings", path=path, record=lineno)
        texts = [x for x in content if not looks_like_calls(x)]
        gold = [ACT_LABELS[x] for x in labels if ACT_LABELS[x] != "function_calling"]
        if gold:
            out.append(
                ActExample(str(obj.get("id", lineno)), "\n".join(texts), gold, len(content) - len(texts))
            )
    return out


def score_acts(examples: Sequence[ActExample], pred: Sequence[str]) -> dict[str, Any]:
    """``accuracy`` (prediction among the gold acts), ``n``, ``per_act`` (accuracy and count by
    first gold act) and ``confusion`` ({first gold act: {predicted act: count}})."""
    if len(examples) != len(pred):
        raise ValueError(f"{len(examples)} examples but {len(pred)} predictions")
    right = [p in e.gold for e, p in zip(examples, pred, strict=True)]
    confusion: dict[str, dict[str, int]] = {}
    per: dict[str, list[bool]] = {}
    for e, p, ok in zip(examples, pred, right, strict=True):
        row = confusion.setdefault(e.gold[0], {})
        row[p] = row.get(p, 0) + 1
        per.setdefault(e.gold[0], []).append(ok)
    n = len(examples)
    return {
        "n": n,
        "accuracy": round(sum(right) / n, _ROUND) if n else 0.0,
        "per_act": {a: {"accuracy": round(sum(v) / len(v), _ROUND), "n": len(v)} for a, v in per.items()},
        "confusion": confusion,
    }


def format_act_scores(m: dict[str, Any], name: str = "") -> str:
    """Accuracy, per-act accuracy and the confusion as a few lines."""
    acts = [a for a in TEXT_ACTS if a in m["confusion"] or any(a in r for r in m["confusion"].values())]
    lines = [
        f"dialog acts{f' ({name})' if name else ''}: accuracy {m['accuracy']:.3f}, n={m['n']}",
        "per gold act: "
        + ", ".join(f"{a} {v['accuracy']:.3f} ({v['n']})" for a, v in sorted(m["per_act"].items())),
        "confusion (rows gold, columns predicted): " + " ".join(f"{a:>9}" for a in acts),
    ]
    for g in acts:
        row = m["confusion"].get(g, {})
        lines.append(f"  {g:>9} " + " ".join(f"{row.get(p, 0):>9}" for p in acts))
    return "\n".join(lines)


# --------------------------------------------------------------------------------------------
# Classifiers: the rules, or an LLM through a chat backend
# --------------------------------------------------------------------------------------------

ACT_DEFINITIONS = {
    "seek_info": "the assistant asks the user for information it needs (a value, a choice, a detail)",
    "inform": "the assistant gives the user information or results, or reports what it has done",
    "reject": "the assistant says it cannot or will not do what the user asked",
    "other": "greetings, thanks, you're-welcome and goodbye messages with no other content",
}
_ACT_WORDS = {
    "seek_info": ("seek_info", "seek_information", "seek", "ask", "request"),
    "inform": ("inform", "inform_user", "information"),
    "reject": ("reject", "reject_request", "refuse", "refusal"),
    "other": ("other", "greeting", "goodbye"),
}


_SHOTS = (
    ("Sure! Could you tell me the date of your trip and where you are flying from?", "seek_info"),
    ("Your table for two at Luigi's is booked for 7 pm. Anything else I can do for you?", "inform"),
    ("I'm sorry, I can't book train tickets; I can only help with flights and hotels.", "reject"),
    ("You're welcome! Have a great day.", "other"),
)


def _ask(text: str) -> str:
    return f'Assistant message:\n"""\n{text.strip()}\n"""\nAct (seek_info, inform, reject or other):'


def parse_act(answer: str) -> str | None:
    """The act an LLM's answer names (ours or CONFETTI's ``agent_...`` spelling, or a word of it:
    ``seek``, ``refuse``), the first one in the answer; None when it names none."""
    low = re.sub(THINK_BLOCK, " ", answer or "", flags=re.S).lower().replace("agent_", "")
    best: tuple[int, str] | None = None
    for act, words in _ACT_WORDS.items():
        for w in words:
            m = re.search(rf"\b{w}\b", low)
            if m and (best is None or m.start() < best[0]):
                best = (m.start(), act)
    return best[1] if best else None


class RuleActClassifier:
    """`classify_act` behind the classifier interface (``async classify(texts) -> acts``)."""

    name = "rules"

    async def classify(self, texts: Sequence[str]) -> list[str]:
        return [classify_act(t) for t in texts]


@dataclass
class LLMActClassifier:
    """Asks a chat backend (``async chat(messages, temperature=, max_tokens=, seed=)``) for the act
    of each reply (module docstring); an answer that names no act falls back to the rules."""

    backend: Any
    max_tokens: int = 8
    concurrency: int = 8
    name: str = "llm"
    fallbacks: int = 0
    answers: list[str | None] = field(default_factory=list)
    """The raw answer to each text of the last `classify` call (None: an empty text, not asked)."""

    @staticmethod
    def messages(text: str) -> list[dict[str, str]]:
        """The act definitions, four short worked examples (one per act, written for this
        prompt) as earlier chat turns, then the message: small models answer with a bare label
        after a few such turns, where an instruction alone makes them echo the message."""
        defs = "\n".join(f"- {a}: {d}" for a, d in ACT_DEFINITIONS.items())
        system = (
            "You label the dialog act of a customer-service assistant's message. The acts are:\n"
            f"{defs}\nA message that asks for details is seek_info even when it is polite; a "
            "message that presents results is inform even when it ends with an offer of more help. "
            "Answer with the act name only."
        )
        out = [{"role": "system", "content": system}]
        for shot, act in _SHOTS:
            out += [{"role": "user", "content": _ask(shot)}, {"role": "assistant", "content": act}]
        return [*out, {"role": "user", "content": _ask(text)}]

    async def _one(self, text: str, gate: Any) -> tuple[str, str | None]:
        if not text.strip():
            return "other", None
        async with gate:
            result = await self.backend.chat(
                self.messages(text), temperature=0.0, max_tokens=self.max_tokens, seed=0
            )
        answer = result.text or ""
        act = parse_act(answer)
        if act is None:
            self.fallbacks += 1
            return classify_act(text), answer
        return act, answer

    async def classify(self, texts: Sequence[str]) -> list[str]:
        import asyncio

        gate = asyncio.Semaphore(max(1, self.concurrency))
        done = await asyncio.gather(*(self._one(t, gate) for t in texts))
        self.answers = [answer for _, answer in done]
        return [act for act, _ in done]


def add_act_classifier_args(p: Any) -> None:
    """``--act-classifier rules|llm`` and the LLM's backend options on an argparse parser."""
    p.add_argument(
        "--act-classifier",
        default="rules",
        choices=ACT_CLASSIFIERS,
        help="dialog acts of replies: rules (default) or an LLM (--act-backend, --act-model)",
    )
    p.add_argument(
        "--act-backend", default="hf", choices=("hf", "openai"), help="backend of the LLM classifier"
    )
    p.add_argument(
        "--act-model",
        default="smollm2",
        help="LLM classifier: hf model folder ('smollm2' = the embedded SmolLM2-135M-Instruct) or "
        "the model name an OpenAI-compatible server knows",
    )
    p.add_argument("--act-base-url", help="LLM classifier: OpenAI-compatible endpoint (openai backend)")
    p.add_argument("--act-device", default="cpu", help="LLM classifier: torch device (hf backend)")


def add_turn_level_act_args(p: Any) -> None:
    """What ``python -m diaforge.eval turn-level`` takes for dialog acts: the verb (``run``, default, or
    ``acts``: score the act classifier on a labelled file), ``--data`` and the classifier options."""
    p.add_argument(
        "verb",
        nargs="?",
        choices=("run", "acts"),
        default="run",
        help="run (default): query --model; acts: score the act classifier on --data",
    )
    p.add_argument("--data", help="acts: dialog-act answer lines in CONFETTI's format")
    add_act_classifier_args(p)


async def run_with_act_classifier(args: Any, fn: Any) -> Any:
    """``await fn(classifier)`` with the classifier of `args`, its backend checked and closed."""
    classifier, backend = build_act_classifier(args)
    try:
        if hasattr(backend, "check"):
            await backend.check()
        return await fn(classifier)
    finally:
        if backend is not None:
            await backend.aclose()


def build_act_classifier(args: Any) -> tuple[Any, Any]:
    """(classifier, backend or None) from `add_act_classifier_args` options; the caller awaits
    ``backend.aclose()``. A bad backend configuration is a `BackendConfigError`."""
    if getattr(args, "act_classifier", "rules") != "llm":
        return RuleActClassifier(), None
    from diaforge.llm.factory import BackendSpec, build_backend

    spec = BackendSpec(
        backend=args.act_backend,
        model=args.act_model,
        base_url=args.act_base_url,
        temperature=0.0,
        device=args.act_device,
    )
    backend = build_backend(spec)
    return LLMActClassifier(backend, name=f"llm:{args.act_backend}:{args.act_model}"), backend


async def classify_act_set(path: str | Path, classifier: Any) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """Score `classifier` on a labelled file (`read_act_examples`): (metrics, per-example records)."""
    examples = read_act_examples(path)
    pred = await classifier.classify([e.text for e in examples])
    metrics = score_acts(examples, pred)
    metrics["classifier"] = classifier.name
    metrics["data"] = str(path)
    if isinstance(classifier, LLMActClassifier):
        metrics["fallbacks"] = classifier.fallbacks
    records = [{"id": e.id, "gold": e.gold, "pred": p} for e, p in zip(examples, pred, strict=True)]
    if isinstance(classifier, LLMActClassifier):
        for r, answer in zip(records, classifier.answers, strict=True):
            r["answer"] = answer
            r["fallback"] = answer is not None and parse_act(answer) is None
    return metrics, records


def cmd_act_set(args: Any) -> int:
    """``python -m diaforge.eval turn-level acts --data FILE``: accuracy and confusion of the act
    classifier on a labelled set in CONFETTI's dialog-act answer format."""
    import asyncio

    from diaforge.console import emit
    from diaforge.errors import InputError

    if not args.data:
        raise InputError("turn-level acts needs --data FILE (CONFETTI dialog-act answer lines)")

    metrics, records = asyncio.run(run_with_act_classifier(args, lambda c: classify_act_set(args.data, c)))
    emit(format_act_scores(metrics, metrics["classifier"]))
    if args.json:
        emit(json.dumps({**metrics, "records": records}, indent=2))
    return 0
