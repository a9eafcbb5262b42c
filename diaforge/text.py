"""Small text utilities shared by the scripted agents and the rule validators: tokenising tool
names and descriptions, a light stemmer and word overlap, and how a person names a parameter
(`humanise_param`, shared by the scripted agents and the evaluation prompts); and the word tokens
and lexical diversity (`tokenize`, `ttr`, `ngd`) that the corpus statistics (`diaforge.data_gen.corpus`),
the conversational metrics (`diaforge.eval.metrics`) and the turn-level scores (`diaforge.eval.peers.turn_level`)
share, so their numbers compare."""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from diaforge.schema import Tool

STOPWORDS = frozenset(
    [
        "a",
        "an",
        "the",
        "and",
        "or",
        "of",
        "for",
        "to",
        "in",
        "on",
        "at",
        "by",
        "with",
        "from",
        "into",
        "onto",
        "as",
        "is",
        "are",
        "be",
        "been",
        "being",
        "it",
        "its",
        "this",
        "that",
        "these",
        "those",
        "which",
        "who",
        "whom",
        "whose",
        "what",
        "when",
        "where",
        "how",
        "all",
        "any",
        "each",
        "every",
        "some",
        "such",
        "no",
        "not",
        "only",
        "own",
        "same",
        "so",
        "than",
        "too",
        "very",
        "can",
        "will",
        "just",
        "should",
        "now",
        "may",
        "might",
        "must",
        "shall",
        "would",
        "could",
        "do",
        "does",
        "did",
        "done",
        "has",
        "have",
        "had",
        "having",
        "i",
        "me",
        "my",
        "we",
        "our",
        "you",
        "your",
        "he",
        "she",
        "they",
        "them",
        "their",
        "his",
        "her",
        "one",
        "also",
        "via",
        "per",
        "within",
        "without",
        "across",
        "about",
        "over",
        "under",
        "up",
        "down",
        "out",
        "off",
        "again",
        "then",
        "once",
        "here",
        "there",
        "both",
        "few",
        "more",
        "most",
        "other",
        "new",
        "given",
        "using",
        "use",
        "used",
        "based",
        "returns",
        "return",
        "record",
        "records",
        "specified",
        "specific",
        "provided",
        "given",
        "current",
    ]
)

# Words that carry the distinction between family members even though they look like stopwords.
KEEP_WORDS = frozenset({"all", "own", "new", "current", "internal", "external"})

_WORD = re.compile(r"[A-Za-z][A-Za-z0-9]*")
_CAMEL = re.compile(r"(?<=[a-z0-9])(?=[A-Z])")


def stem(word: str) -> str:
    """A deliberately light stemmer: lower-case, strip plural `s`/`es` and `ies` -> `y`."""
    w = word.lower()
    if len(w) > 4 and w.endswith("ies"):
        return w[:-3] + "y"
    if len(w) > 4 and w.endswith(("sses", "shes", "ches", "xes")):
        return w[:-2]
    if len(w) > 3 and w.endswith("s") and not w.endswith(("ss", "us", "is")):
        return w[:-1]
    return w


def words(text: str) -> list[str]:
    """Lower-cased words of a text, camelCase and snake_case split."""
    return [w.lower() for chunk in _WORD.findall(text.replace("_", " ")) for w in _CAMEL.split(chunk)]


def content_stems(text: str) -> set[str]:
    """Stems of the words that carry meaning (stopwords dropped, distinction words kept)."""
    return {stem(w) for w in words(text) if (w not in STOPWORDS or w in KEEP_WORDS) and len(w) > 1}


def name_tokens(tool: Tool | str) -> list[str]:
    """The words of a tool name, in order (`approve_internal_training_request` -> 4 words)."""
    name = tool.name if isinstance(tool, Tool) else tool
    return words(name)


def humanise_name(tool: Tool | str) -> str:
    """`approve_internal_training_request` -> `approve internal training request`."""
    return " ".join(name_tokens(tool))


# Parameter-name words a person spells in capitals (``cost_center_id`` -> ``cost center ID``).
_ACRONYMS = {
    **{
        w: w.upper()
        for w in [
            "id",
            "url",
            "uri",
            "sku",
            "po",
            "iso",
            "vat",
            "api",
            "ip",
            "uuid",
            "sla",
            "kpi",
            "hr",
            "pto",
            "eta",
            "gl",
            "crm",
            "erp",
            "ssn",
            "iban",
            "bic",
            "mfa",
            "vpn",
            "sso",
            "utc",
            "dob",
            "pdf",
            "csv",
            "os",
            "sap",
            "sepa",
            "ifrs",
            "gaap",
            "vip",
            "sms",
        ]
    },
    "ids": "IDs",
    "urls": "URLs",
    "skus": "SKUs",
}


def param_tokens(name: str) -> list[str]:
    """The lower-cased words of a parameter name: ``costCenterID`` / ``cost_center_id`` /
    ``cost-center id`` -> ``[cost, center, id]``."""
    spaced = re.sub(r"(?<=[a-z0-9])(?=[A-Z])", " ", name)
    return [t for t in re.split(r"[\s_\-./:]+", spaced.lower()) if t]


def humanise_param(name: str) -> str:
    """How a person names a parameter: ``cost_center_id`` -> ``cost center ID``,
    ``startDate`` -> ``start date``, ``is_urgent`` -> ``urgent flag``. Idempotent."""
    tokens = param_tokens(name)
    if not tokens:
        return name
    if len(tokens) > 1 and tokens[0] in ("is", "has"):
        tokens = [*tokens[1:], "flag"]
    return " ".join(_ACRONYMS.get(t, t) for t in tokens)


def tool_stems(tool: Tool) -> set[str]:
    """Name stems and description stems of a tool."""
    return {stem(w) for w in name_tokens(tool)} | content_stems(tool.description)


def overlap(text_stems: Iterable[str], tool: Tool, *, name_weight: float = 2.0) -> float:
    """How much of a text speaks about a tool: name stems count double."""
    ts = set(text_stems)
    name = {stem(w) for w in name_tokens(tool)}
    desc = content_stems(tool.description) - name
    return name_weight * len(ts & name) + len(ts & desc)


def join_options(items: Sequence[str], conj: str = "or") -> str:
    """`a`, `a or b`, `a, b, or c`."""
    items = list(items)
    if len(items) <= 1:
        return "".join(items)
    if len(items) == 2:
        return f"{items[0]} {conj} {items[1]}"
    return f"{', '.join(items[:-1])}, {conj} {items[-1]}"


def line_of_business_key(label: object) -> str:
    """A line-of-business label compared case- and punctuation-insensitively: ``"Travel &
    Expense"`` -> ``"travel and expense"``; anything but a string -> ``""``."""
    if not isinstance(label, str):
        return ""
    text = label.lower().replace("&", " and ")
    return " ".join(re.findall(r"[a-z0-9]+", text))


# Word tokens of prose: lower-cased, an inner apostrophe kept ("don't"). Unlike `words`, which
# splits identifiers, this reads what people wrote.
_TOKEN = re.compile(r"\w+(?:'\w+)?")


def tokenize(text: str) -> list[str]:
    """Lower-cased word tokens: ``re.findall(r"\\w+(?:'\\w+)?", text.lower())``."""
    return _TOKEN.findall(text.lower())


def ttr(texts: Sequence[str]) -> float:
    """Type-token ratio over all texts together (distinct tokens / tokens); 0.0 with no tokens."""
    tokens = [tok for text in texts for tok in tokenize(text)]
    return len(set(tokens)) / len(tokens) if tokens else 0.0


def ngd(texts: Sequence[str], n: int) -> float:
    """n-gram diversity: distinct n-grams / n-grams, n-grams taken inside each text (never across
    two); 0.0 with none."""
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    grams: list[tuple[str, ...]] = []
    for text in texts:
        toks = tokenize(text)
        grams.extend(tuple(toks[i : i + n]) for i in range(len(toks) - n + 1))
    return len(set(grams)) / len(grams) if grams else 0.0
