"""How the assistant reads a value back from a user utterance: `extract_value`.

The counterpart of `diaforge.data_gen.values.rendering`: it finds a parameter by its humanised name (or raw
key, or loosely by singular/plural), outside quoted text, takes the value after a connector
(``is``, ``should be``, ``:``, ...) or before ``for the <name>``/``as the <name>``, delimits it by
the spec's kind (a quoted string, a list, JSON, a free-text run or one token) and coerces it to the
spec's type. For constrained specs (enum, pattern, a checked format) a conforming token in the
same clause is preferred to a non-conforming reading.
"""

from __future__ import annotations

import contextlib
import copy
import functools
import json
import re
from typing import Any

from diaforge.data_gen.values import formats
from diaforge.data_gen.values.checking import check_value, declared_types
from diaforge.data_gen.values.generator import pick_type
from diaforge.data_gen.values.rendering import mask_quotes
from diaforge.data_gen.values.vocabulary import toggle_plural, word_list
from diaforge.saying import LIST_STOP, render_value
from diaforge.text import humanise_param, param_tokens

_LEFT_WORDS = frozenset(
    word_list("the my our your a an and with new set its this that their his her also plus then")
)
_CONNECTOR_RE = re.compile(
    r"\s*[:=]\s*|\s+(?:is|are|was|were|should\s+be|will\s+be|would\s+be|to|of)\s+", re.IGNORECASE
)
_BACK_LEAD_RE = re.compile(r"(?:^|(?<=\s))(?:for|as)\s+the\s+$", re.IGNORECASE)
_RIGHT_END_RE = re.compile(r"\s*(?:[,;.!?)]|$)|\s+(?:and|please|too|as\s+well|instead|then)\b", re.IGNORECASE)
_CLAUSE_DELIM_RE = re.compile(r",\s|;|[.!?](?:\s|$)|\s+and\s+|\s+but\s+", re.IGNORECASE)
_FREE_END_RE = re.compile(
    r",\s|,$|;|\s+and\s|[.!?]+(?:\s|$)|\s+(?:please|so|but|because|thanks|thank\s+you)\b|$",
    re.IGNORECASE,
)
_LIST_SEP_RE = re.compile(r"\s*,\s*(?:and\s+)?|\s+and\s+", re.IGNORECASE)
_LIST_SEP_BEFORE_RE = re.compile(r"(?:\s*,\s*(?:and\s+)?|\s+and\s+)$", re.IGNORECASE)
_OWNED_VALUE_RE = re.compile(r"(?:(?<![\w-])(?:is|are|was|were|be|to|of|the)\s+|[:=]\s*)$", re.IGNORECASE)
_ITEM_END_RE = re.compile(r"\s*(?:,|[.!?;](?:\s|$)|$)|\s+and\s", re.IGNORECASE)
_SENTENCE_START_RE = re.compile(r"(?:^\s*|[.!?;]\s+)$")
_LEAD_BEFORE_RE = re.compile(r"(?<![\w-])(?:with|take|then|also|plus|maybe|perhaps|try)\s+$", re.IGNORECASE)
_INTERJECTIONS = frozenset(word_list("okay ok sure hi hello hey right well thanks great fine alright"))
_TOKEN_RE = re.compile(r"[^\s,;]+")
_NUMBER_RE = re.compile(r"[+-]?(?:\d+\.?\d*|\.\d+)(?:[eE][+-]?\d+)?")
_TRUE_WORDS = {"yes", "y", "true", "on", "1"}
_FALSE_WORDS = {"no", "n", "false", "off", "0"}
_TRAILING_PUNCT = ".!?;:)"


def _name_variants(name: str) -> tuple[list[str], list[str]]:
    """(exact, loose) spellings of a parameter name: the humanised and raw forms first, then the
    singular/plural of each (tried only when no exact spelling yields a value)."""
    from diaforge.data_gen.phrasing.render import param_noun  # the name the scripted agents say

    human = humanise_param(name)
    dated = param_noun(name, {"description": "date"})  # "the available-from date" (a date described)
    spellings = (human, param_noun(name), dated, " ".join(param_tokens(name)), name)
    exact = list(dict.fromkeys(v for v in spellings if v.strip()))
    loose = []
    for v in exact:
        words = v.split()
        if words:
            loose.append(" ".join([*words[:-1], toggle_plural(words[-1])]))
    loose = [v for v in dict.fromkeys(loose) if v.lower() not in {e.lower() for e in exact}]
    return exact, loose


def _variants_regex(variants: list[str]) -> re.Pattern[str] | None:
    alts = []
    for v in sorted(variants, key=len, reverse=True):
        words = [w for w in re.split(r"[\s_\-]+", v) if w]
        if words:
            alts.append(r"[\s_\-]+".join(re.escape(w) for w in words))
    if not alts:
        return None
    return re.compile(r"(?<![\w\-])(?:" + "|".join(alts) + r")(?![\w\-])", re.IGNORECASE)


@functools.lru_cache(maxsize=4096)
def _name_regexes(name: str) -> tuple[re.Pattern[str], ...]:
    """The exact-spelling regex, then the loose one, for a parameter name."""
    return tuple(rx for rx in map(_variants_regex, _name_variants(name)) if rx is not None)


def _left_ok(masked: str, start: int) -> bool:
    """A name starts a noun phrase of its own: at the start, after punctuation, or after a
    determiner (so ``date`` is not read inside ``the start date is ...``)."""
    prefix = masked[:start]
    if not prefix.strip():
        return True
    if not prefix[-1].isspace():
        return not (prefix[-1].isalnum() or prefix[-1] in "_-\x00")
    word = re.search(r"(\S+)\s+$", prefix)
    if word is None:
        return True
    w = word.group(1)
    return w[-1] in ',;:.!?("”' or w.lower() in _LEFT_WORDS


def _unquote(rendered: str) -> str:
    if len(rendered) >= 2 and rendered[0] == '"' and rendered[-1] == '"':
        return rendered[1:-1]
    return rendered


def _value_kind(spec: dict[str, Any]) -> str:
    """How a value is delimited in text: array, object, free (string run) or token."""
    if "const" in spec or isinstance(spec.get("enum"), list):
        return "token"
    types = declared_types(spec) or [pick_type(spec)]
    main = next((t for t in types if t != "null"), "null")
    if main in ("array", "object"):
        return main
    if main == "string" and not spec.get("pattern") and spec.get("format") not in formats.CHECKED:
        return "free"
    return "token"


def _quoted_at(text: str, i: int) -> tuple[str, int] | None:
    if i < len(text) and text[i] in '"“':
        close = '"' if text[i] == '"' else "”"
        j = text.find(close, i + 1)
        if j >= 0:
            return text[i + 1 : j], j + 1
    return None


def _token_at(text: str, i: int) -> tuple[str, int] | None:
    m = _TOKEN_RE.match(text, i)
    if m is None:
        return None
    tok = m.group(0).rstrip(_TRAILING_PUNCT)
    return (tok, i + len(tok)) if tok else None


def _json_at(text: str, i: int) -> tuple[Any, int] | None:
    if i < len(text) and text[i] in "[{":
        try:
            value, end = json.JSONDecoder().raw_decode(text, i)
        except json.JSONDecodeError:
            return None
        return value, end
    return None


def _list_at(text: str, i: int) -> list[tuple[str, bool]]:
    """Items of a rendered list starting at `i`: quoted or bare tokens joined by ``, `` / `` and ``.

    An item after the first must itself be followed by a separator or the end of the sentence,
    and must not be a connector word or a ``name:``; otherwise it opens the next clause
    (``... to V1676912 and dry run: yes``) and the list ends before it.
    """
    items: list[tuple[str, bool]] = []
    pos = i
    while True:
        q = _quoted_at(text, pos)
        if q is not None:
            item, end, ends_sentence = (q[0], True), q[1], False
        else:
            m = _TOKEN_RE.match(text, pos)
            if m is None:
                break
            raw = m.group(0)
            tok = raw.rstrip(_TRAILING_PUNCT)
            if not tok or (items and (tok.lower() in LIST_STOP or raw[-1] in ":=")):
                break
            item, end, ends_sentence = (tok, False), m.end(), tok != raw
        if items and not ends_sentence and not _ITEM_END_RE.match(text, end):
            break
        items.append(item)
        if ends_sentence:
            break
        sep = _LIST_SEP_RE.match(text, end)
        if sep is None or sep.end() >= len(text):
            break
        pos = sep.end()
    return items


def _coerce_scalar(raw: str, quoted: bool, spec: dict[str, Any]) -> tuple[bool, Any]:
    choices = [spec["const"]] if "const" in spec else spec.get("enum")
    if isinstance(choices, list):
        for exact in (True, False):
            for member in choices:
                said = _unquote(render_value(member))
                if said == raw if exact else said.lower() == raw.lower():
                    return True, copy.deepcopy(member)
        return False, None
    types = declared_types(spec) or [pick_type(spec)]
    if "null" in types and not quoted and raw.lower() in ("none", "null"):
        return True, None
    for t in types:
        if t == "string":
            return True, raw
        if quoted:
            continue
        if t == "integer":
            m = re.fullmatch(r"[$€£]?([+-]?\d+)(?:\.0+)?%?", raw)
            if m:
                return True, int(m.group(1))
        elif t == "number":
            m = re.fullmatch(r"[$€£]?(" + _NUMBER_RE.pattern + r")%?", raw)
            if m:
                return True, float(m.group(1))
        elif t == "boolean":
            if raw.lower() in _TRUE_WORDS:
                return True, True
            if raw.lower() in _FALSE_WORDS:
                return True, False
        elif t in ("array", "object") and raw[:1] in "[{":
            try:
                return True, json.loads(raw)
            except json.JSONDecodeError:
                pass
    return False, None


def _coerce_list(items: list[tuple[str, bool]], spec: dict[str, Any]) -> tuple[bool, Any]:
    item_spec = spec.get("items") if isinstance(spec.get("items"), dict) else {}
    if len(items) == 1 and not items[0][1] and items[0][0].lower() in ("none", "nothing"):
        return True, []
    out = []
    for raw, quoted in items:
        ok, value = _coerce_scalar(raw, quoted, item_spec)
        if not ok:
            return False, None
        out.append(value)
    return (True, out) if out else (False, None)


def _read_forward(text: str, i: int, spec: dict[str, Any]) -> tuple[bool, Any]:
    while i < len(text) and text[i].isspace():
        i += 1
    kind = _value_kind(spec)
    if kind in ("array", "object"):
        got = _json_at(text, i)
        if got is not None:
            return True, got[0]
        if kind == "object":
            return False, None
        return _coerce_list(_list_at(text, i), spec)
    q = _quoted_at(text, i)
    if q is not None:
        return _coerce_scalar(q[0], True, spec)
    if kind == "free":
        end = _FREE_END_RE.search(text, i)
        raw = text[i : end.start() if end else len(text)].strip().rstrip(_TRAILING_PUNCT)
        return (True, raw) if raw else (False, None)
    tok = _token_at(text, i)
    return _coerce_scalar(tok[0], False, spec) if tok else (False, None)


def _read_backward(text: str, masked: str, e: int, spec: dict[str, Any]) -> tuple[bool, Any]:
    """The value that ends at `e` (``use VALUE for the name`` / ``VALUE as the name``)."""
    while e > 0 and text[e - 1].isspace():
        e -= 1
    if e == 0:
        return False, None
    kind = _value_kind(spec)
    uses = list(re.finditer(r"(?<![\w-])use\s+", masked[:e], re.IGNORECASE))
    use = uses[-1] if uses else None
    if use is not None:
        between = masked[use.end() : e]
        stop = r"[.!?;](?:\s|$)|\b(?:for|as)\s+the\b|\b(?:is|are)\b"
        if kind == "free":
            stop += r"|,\s|\s+and\s+"
        if re.search(stop, between, re.IGNORECASE):
            use = None
    if kind in ("array", "object") and text[e - 1] in "]}":
        for start in range(e - 1, -1, -1):
            if text[start] in "[{":
                got = _json_at(text, start)
                if got is not None and got[1] == e:
                    return True, got[0]
        return False, None
    if kind == "array":
        if use is not None:
            span = text[use.end() : e]
            items = _list_at(span, 0)
            return _coerce_list(items, spec)
        # Without a leading "use", walk back item by item. A further item must convert to the
        # item schema, must not be a connector word or an interjection ("Okay, a and b as the
        # tags"), must not be another clause's value (preceded by a connector, "the", ":" or
        # "="), and must itself follow a separator, the sentence start or a lead word ("go
        # with"): a word after any other word is the end of a name ("the problem title and X").
        item_spec = spec.get("items") if isinstance(spec.get("items"), dict) else {}
        items: list[tuple[str, bool]] = []
        pos = e
        while pos > 0:
            item = _item_before(text, pos)
            if item is None:
                break
            (raw, quoted), start = item
            if items:
                if not quoted and (raw.lower() in LIST_STOP or raw.lower() in _INTERJECTIONS):
                    break
                if _OWNED_VALUE_RE.search(masked, 0, start):
                    break
                ok, value = _coerce_scalar(raw, quoted, item_spec)
                if not ok or check_value(value, item_spec) is not None:
                    break
                before = masked[:start]
                if not (
                    _SENTENCE_START_RE.search(before)
                    or _LIST_SEP_BEFORE_RE.search(before)
                    or _LEAD_BEFORE_RE.search(before)
                ):
                    break
            items.insert(0, (raw, quoted))
            sep = _LIST_SEP_BEFORE_RE.search(masked, 0, start)
            if sep is None:
                break
            pos = sep.start()
        return _coerce_list(items, spec)
    item = _item_before(text, e)
    if item is None:
        return False, None
    (raw, quoted), _start = item
    if not quoted and kind == "free" and use is not None:
        raw = text[use.end() : e].strip()
    return _coerce_scalar(raw, quoted, spec)


def _item_before(text: str, e: int) -> tuple[tuple[str, bool], int] | None:
    if e > 0 and text[e - 1] in '"”':
        opener = '"' if text[e - 1] == '"' else "“"
        s = text.rfind(opener, 0, e - 1)
        if s >= 0:
            return (text[s + 1 : e - 1], True), s
    m = re.search(r"[^\s,;]+$", text[:e])
    if m is None:
        return None
    tok = m.group(0).lstrip("(")
    return ((tok, False), m.end() - len(tok)) if tok else None


def _clause_bounds(masked: str, start: int, end: int) -> tuple[int, int]:
    lo = 0
    for m in _CLAUSE_DELIM_RE.finditer(masked, 0, start):
        lo = m.end()
    m = _CLAUSE_DELIM_RE.search(masked, end)
    hi = m.start() if m else len(masked)
    return lo, hi


def _constrained(spec: dict[str, Any]) -> bool:
    return (
        "const" in spec
        or isinstance(spec.get("enum"), list)
        or isinstance(spec.get("pattern"), str)
        or spec.get("format") in formats.CHECKED
    )


def _search_conforming(text: str, masked: str, lo: int, hi: int, spec: dict[str, Any]) -> tuple[bool, Any]:
    """A value conforming to a constrained `spec` anywhere in ``text[lo:hi]``."""
    region = text[lo:hi]
    choices = [spec["const"]] if "const" in spec else spec.get("enum")
    if isinstance(choices, list):
        said = sorted(((_unquote(render_value(m)), m) for m in choices), key=lambda p: -len(p[0]))
        for words, member in said:
            if words and re.search(r"(?<![\w-])" + re.escape(words) + r"(?![\w-])", region, re.IGNORECASE):
                return True, copy.deepcopy(member)
        return False, None
    candidates: list[str] = []
    fmt = spec.get("format")
    finder = formats.FINDERS.get(fmt if isinstance(fmt, str) else "")
    if finder is not None:
        candidates += [m.group(0) for m in finder.finditer(region)]
    pattern = spec.get("pattern")
    if isinstance(pattern, str):
        bare = re.sub(r"^\^|(?<!\\)\$$", "", pattern)
        with contextlib.suppress(re.error):
            candidates += [m.group(0) for m in re.finditer(bare, region) if m.group(0)]
    candidates += [m.group(1) for m in re.finditer(r'"([^"]*)"|“([^”]*)”', region) if m.group(1)]
    for m in re.finditer(r"[^\s,;]+", masked[lo:hi]):
        if "\x00" not in m.group(0):
            candidates.append(m.group(0).strip("\"'“”(").rstrip(_TRAILING_PUNCT))
    for cand in candidates:
        ok, value = _coerce_scalar(cand, False, spec)
        if ok and check_value(value, spec) is None:
            return True, value
    return False, None


def extract_value(
    text: str, name: str, spec: dict[str, Any] | None, *, anywhere: bool = False
) -> tuple[bool, Any]:
    """Find the value of parameter `name` in a user utterance; ``(True, value)`` coerced to the
    spec's type, or ``(False, None)``.

    The name is located by its humanised form (`humanise_param`), its raw key, or loosely by its
    singular/plural, outside quoted text and not inside a longer name (``date`` is not read from
    ``the start date is``). The value is taken after a connector (``is``/``are``/``should be``/
    ``to``/``of``/``:``/``=``) or before ``for the <name>``/``as the <name>``: a double-quoted
    string, a list ``a, b and c``, JSON for objects, a free-text run up to the next ``, ``/
    `` and ``/sentence end for unconstrained strings, or a single token otherwise. When the spec
    has an enum, a pattern or a checked format (`formats.CHECKED`) and that value does not
    conform, a conforming token in the same clause is preferred (an enum member matched as a whole
    word, case-insensitively). With `anywhere`, an utterance that does not name the parameter is
    searched whole for a conforming value (only for such constrained specs).
    """
    if not isinstance(text, str) or not text.strip():
        return False, None
    spec = spec if isinstance(spec, dict) else {}
    masked = mask_quotes(text)
    tentative: tuple[bool, Any] | None = None
    anchors: list[tuple[int, int]] = []  # name spans fit for the clause search
    for rx in _name_regexes(name):
        for m in rx.finditer(masked):
            if _left_ok(masked, m.start()):
                anchors.append((m.start(), m.end()))
                conn = _CONNECTOR_RE.match(masked, m.end())
                if conn is not None:
                    got = _read_forward(text, conn.end(), spec)
                    if got[0] and check_value(got[1], spec) is None:
                        return got
                    if got[0] and tentative is None:
                        tentative = got
            lead = _BACK_LEAD_RE.search(masked, 0, m.start())
            if lead is not None and _RIGHT_END_RE.match(masked, m.end()):
                anchors.append((m.start(), m.end()))
                got = _read_backward(text, masked, lead.start(), spec)
                if got[0] and check_value(got[1], spec) is None:
                    return got
                if got[0] and tentative is None:
                    tentative = got
    if _constrained(spec):
        for start, end in anchors:
            lo, hi = _clause_bounds(masked, start, end)
            got = _search_conforming(text, masked, lo, hi, spec)
            if got[0]:
                return got
    if tentative is not None:
        return tentative
    if anywhere and _constrained(spec) and not anchors:
        return _search_conforming(text, masked, 0, len(text), spec)
    return False, None
