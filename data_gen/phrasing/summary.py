"""What a description says a tool does, cut from everything else a description carries.

Catalogues write descriptions for many readers: a Python docstring has a summary line and then
`Args:` / `Returns:` sections, a markdown one bold verbs, backticks, bullet lists and an
`Example:` line, an OpenAPI one an HTTP verb and a path or a `[DEPRECATED]` tag, an agent-tool
one instructions ("Use this tool to ...", "Do not use for ..."), and many a preamble about the
tool ("This function ...", "Is used to ...", "Allows the caller to ...", "Responsible for ...").
`summary` is the one place that removes all of it, by the structure of the text and never by the
words of one catalogue, before any parse reads a description (`shorthand.plain_description`
calls it first):

1. markup: HTML tags, markdown emphasis, backticks and links (the words stay);
2. structure: the first paragraph only, up to a docstring section header, a bullet, a numbered
   item, an `Example:` line, a fenced block or a JSDoc or Sphinx tag (`@param`, `:returns:`);
3. tags and routes: a leading `[DEPRECATED]`-style tag or version note ("Since v3.0:"), an HTTP verb
   and its path;
4. sentences about using the tool, not about what it does: "Do not use for ...", "For a whole
   litter, call X instead", and a preamble that states only when to use it ("Use this when the
   user knows the pet's name ...", "Is used when a specimen cannot be tested"): dropped;
5. preambles before the action: "Use this tool to", "Call this to", "Use this when the owner
   wants to", "This tool/function/API (will) ...", "Is used to/for", "Can be used to/for",
   "Allows (the caller) to", "Lets (an agent)", "Responsible for", "Helper that", "Will", the
   tool's own name in title case before "API to" ("Document Question Answering (DocumentQA) API
   to ..."), a contract's duty ("The Service shall ...", also after its setting: "Upon receipt of
   a request, the Provider shall ..."), a purpose fragment ("In order to ...", "For refunding a
   crossing ..."), a difference from another tool ("Like get_stay, but sorts ..."):
   removed, and what follows put in the imperative where it is a gerund ("registering a whole
   rack" -> "register a whole rack") or where "will" stood; a first word that can be a noun
   keeps a "to" before it, which the parse reads as an order ("API to search places" -> "to
   search places", `intents.strip_lead_in`);
6. a gerund opening ("Fetching invoices by customer", "Bulk-updating plans") in the imperative
   ("fetch invoices by customer", "bulk-update plans"), when the word cannot be a noun or an
   object follows it with a determiner ("Pricing rules for ..." stays a noun phrase);
7. a dash that adds a remark ("Creating a draft refund — not submitted") a clause break;
8. an operation's own identifier before a dash or colon ("CreateBatch - registers a batch",
   "get_user: Returns a user"), written as code (an underscore, a dot or a capital inside a word);
9. sentences that do not say what the tool does, where another sentence is left: a question to
   the reader ("Dropped a pass on the slopes?"), an exclamation (product copy's slogan: "Say
   goodbye to paperwork!"), a labelled remark ("NOTE: ...", "Warning: ...") and one in capitals
   throughout;
10. labelled fields that name the verb and its object ("Action: raise. Object: one request ...")
   read as one sentence ("Raise one request ...");
11. a condition or setting before the action ("If a loan is nearly due, extends it", "For
   supervisors only: clears a fine"): the sentence from its verb on, where a comma or colon is
   followed by a third-person or imperative verb; a sentence whose subject is the tool ("This
   endpoint starts ...", "Given that number, this endpoint returns ...") read first after
   background that opens with no verb; an adverb of manner before the verb ("Simply upload ...",
   "Instantly books ...") dropped;
12. a first sentence in the passive with a noun phrase for its subject, as an order ("A bay is
   reserved for the vehicle" -> "Reserve a bay for the vehicle"; never "Payment is required");
   the quoted names of the tool's parameters after "parameters" dropped.

A third-person opening ("Creates a new advert") stays as written: the parse reads it as a verb
(`english.verb_lemma`), and it is the commonest opening of the catalogues we measure. What is
left may be empty: the description then says nothing the scripted agents can vouch for, and the
parse falls back to the tool's name (`intents.intent_of`).
"""

from __future__ import annotations

import html
import re

from diaforge.data_gen.phrasing.english import DETERMINERS, _lemmas, is_base_verb, is_noun, verb_lemma

_SECTION = re.compile(
    r"^\s*(?:args|arguments|parameters|params|param|returns?|yields?|raises|throws|exceptions|examples?"
    r"|notes?|usage|see also|warnings?|response|request|body|attributes|todo)\s*:",
    re.I,
)
_INLINE_SECTION = re.compile(
    r"\s(?:Args|Arguments|Parameters|Returns|Raises|Yields|Examples?|Usage|Response)\s*:(?:\s|$)"
    r"|(?:^|\s)(?:@|:)(?:param|arg|argument|returns?|throws|raises|example|default|type|rtype)\b"
)
_BULLET = re.compile(r"^\s*(?:[-*+•]|\d{1,2}[.)])\s+")
_FENCE = re.compile(r"^\s*(?:```|~~~)")
_HTML_TAG = re.compile(r"<(?:/?[A-Za-z][^<>]*|!--.*?--)>", re.S)
_BLOCK_TAG = re.compile(r"</?(?:p|br|li|ul|ol|div|h[1-6]|tr|table)\b[^<>]*>", re.I)
_LINK = re.compile(r"\[([^\[\]]+)\]\([^()]*\)")
_EMPHASIS = re.compile(r"(\*\*|__|\*|_)(?=\S)(.+?)(?<=\S)\1(?![\w*])")
_HEADING = re.compile(r"^\s*#{1,6}\s+")
_TAG = re.compile(
    r"^\s*(?:\[[^\[\]]{1,24}\]|\((?:deprecated|beta|alpha|internal|experimental|legacy|preview|admin"
    r"(?: only)?)\)|(?:deprecated|beta|alpha|internal|experimental|legacy|preview|note|admin only"
    r"|(?:since|as of|added in|new in)\s+v?\d[\w.]*)\s*[:\-–—])\s*",
    re.I,
)
_ROUTE = re.compile(
    r"^\s*(?:(?:GET|POST|PUT|PATCH|DELETE|HEAD|OPTIONS)\s+/?[^\s]*|/[\w{}/.:-]+)\s*[:\-–—]?\s*"
)
# An operation's identifier written as code, then a dash or colon: "CreateBatch - ", "get_user: ".
_NAME_LEAD = re.compile(
    r"^\s*(?:[A-Za-z][A-Za-z0-9]*(?:[_.][A-Za-z0-9]+)+|[A-Za-z]*[a-z][A-Z][A-Za-z0-9]*)\s*(?:-|–|—|:)\s+(?=\S)"
)
# A department or topic label before what the tool does, when a verb in the lower case follows
# ("Billing: moves a charge ...", "[Payroll] runs a pay cycle ..."); never a dash, which may close
# the action itself ("Updating billing addr — requires verified caller").
_LABEL_LEAD = re.compile(r"^\s*(?:\[[^\]]{1,40}\]\s*:?|[A-Z][A-Za-z&/ ]{0,30}?\s*:)\s+(?=[a-z])")
# Labelled fields that name the verb and its object: "Action: raise. Object: one request ...".
_FIELDS = re.compile(
    r"^\s*(?:action|operation|verb|does)\s*:\s*(?P<verb>[A-Za-z][\w-]*)\s*[.;]\s*"
    r"(?:object|target|resource|entity|on|subject)\s*:\s*(?P<obj>[^.;]+)[.;]?",
    re.I,
)
# A remark with a label: "NOTE: ...", "Warning - ...".
_REMARK = re.compile(r"^(?:note|nb|warning|caution|important|tip|hint|info|attention)\b\s*[:\-–—!]", re.I)
# Words that open a condition or a setting before the action ("If ...", "For supervisors only: ...").
_SETTING_WORDS = frozenset(
    {
        "if",
        "when",
        "whenever",
        "where",
        "wherever",
        "once",
        "after",
        "before",
        "until",
        "unless",
        "while",
        "for",
        "at",
        "on",
        "in",
        "during",
        "with",
        "without",
        "given",
        "as",
        "since",
        "upon",
        "from",
        "by",
        "whether",
    }
)
_DASH = re.compile(r"\s+(?:—|–|--)\s+|\s*—\s*")
# A sentence about using the tool, not about what it does.
_USAGE = re.compile(
    r"^(?:do not|don't|never|avoid|not for)\b|^(?:for|to)\b[^,]{0,60},\s*(?:use|call)\b|\binstead\b\W*$"
    # "You must confirm the site with the user"; not "You can use this to see ...", a preamble
    r"|^you\s+(?:must|should|will|can|may|need to|have to)\b(?!\s+(?:use|call)\s+(?:this|it)\b)",
    re.I,
)
_TOOL = (
    r"(?:tool|function|endpoint|api|operation|method|action|command|service|utility|helper|wrapper|routine)"
)
_DUTY = r"(?:the\s+)?(?-i:[A-Z][\w-]*)(?:\s+(?-i:[A-Z][\w-]*))?\s+(?:shall|must|will)\s+(?:(?:also|then|thereupon|promptly|forthwith)\s+)?"
_WHO = (
    r"(?:the |a |an |any |our |your )?(?:caller|callers|user|users|you|agent|agents|client|clients|assistant"
    r"|model|operator|operators|staff|admin|admins|system|customer|customers|app|application|someone|one|us)"
)
_WANTS = r"(?:wants?|needs?|wish(?:es)?|would like|asks?|has|have|is (?:asked|trying|about)) to"
# Preambles whose action follows: the group `rest` is what the tool does.
_PREAMBLES = tuple(
    re.compile(rx, re.I)
    for rx in (
        rf"^(?:please\s+|you\s+(?:can|could|may)\s+)?(?:use|call|invoke|run|pick|choose|select)\s+(?:this|it|me|the\s+{_TOOL})(?:\s+{_TOOL})?"
        rf"\s+(?:(?:when|if|whenever|once)\s+[^,;]{{1,60}}?\s+{_WANTS}\s+|to\s+|in order to\s+|for\s+)(?P<rest>.+)",
        rf"^(?:this|the|a|an)\s+(?:\w+\s+)?{_TOOL}\s+(?P<link>will\s+|can\s+|shall\s+|(?:is|was)\s+(?:used|designed|meant|"
        rf"intended)\s+(?:to|for)\s+|can be used\s+(?:to|for)\s+|(?:lets|allows|enables|helps)\s+(?:{_WHO}\s+)?"
        r"(?:to\s+)?|(?:that|which)\s+(?:will\s+|can\s+)?|to\s+|for\s+)?(?P<rest>.+)",
        rf"^(?:{_TOOL})\s+(?:that|which|to|for)\s+(?P<rest>.+)",
        # the tool's own name in title case, an acronym after it: "Document Question Answering
        # (DocumentQA) API to provide answers ..."
        rf"^(?-i:(?:[A-Z][\w-]*\s+){{1,5}})(?:\([^)]*\)\s+)?{_TOOL}\s+(?:to|for)\s+(?P<rest>.+)",
        r"^(?:(?:it\s+)?is\s+|was\s+)?(?:used|designed|meant|intended)\s+(?:to|for)\s+(?P<rest>.+)",
        r"^(?:can|could|may)\s+be\s+used\s+(?:to|for)\s+(?P<rest>.+)",
        # "lets you export", "helps users find"; "allows", "enables" and "permits" take their "to"
        # ("Enables a user group ..." acts on the group)
        rf"^(?:lets?|helps?)\s+(?:{_WHO}\s+(?:to\s+)?|to\s+)(?P<rest>.+)",
        rf"^(?:allows?|enables?|permits?)\s+(?:{_WHO}\s+)?to\s+(?P<rest>.+)",
        r"^(?:is\s+)?(?:responsible|used)\s+for\s+(?P<rest>.+)",
        r"^(?:will|shall|can)\s+(?P<rest>.+)",
        # a tool said by its difference from another: "Same as get_booking, but looks up by surname"
        r"^(?:(?:the\s+)?same\s+as|just\s+like|like|similar\s+to)\s+[^,;]{1,60}[,;]\s*(?:but|except|only)\s+(?P<rest>.+)",
        # a contract's defined term and its duty: "The Service shall release ...", "the Provider MUST ..."
        rf"^{_DUTY}(?P<rest>.+)",
        # a purpose said as a fragment: "In order to move a sailing ...", "For refunding a crossing ..."
        r"^(?:in order to|so as to)\s+(?P<rest>.+)",
        r"^for\s+(?P<rest>[a-z]+ing\s+(?:a|an|the|one|every|each|all|any|it|them|your|their|its)\b.+)",
        r"^(?:you can|we(?:'ll| will)?|it)\s+(?P<rest>.+)",
        # a user story: "As a dispatcher, I can reassign a job, so that ..."; its "I" is the user
        # (group `story`), a company's "we" ("We install your panels") is not
        r"^(?P<story>as\s+(?:(?:an?|the)\s+)?[^,]{1,60},\s*(?:i|we))\s+(?:can|could|may|want to|need to|would like to|should be able to"
        r"|am able to|must be able to)\s+(?P<rest>.+)",
        # "This sells a season pass": "this" and a third-person verb before an object
        r"^(?:this|it)\s+(?P<rest>[a-z]+s\s+(?:a|an|the|one|every|each|all|any|some|your|their|its|his|her)\s.+)",
    )
)
_MODALS = frozenset(
    {"will", "can", "may", "must", "shall", "should", "would", "could", "might", "do", "does"}
)
# Preambles that say only when to use the tool: the sentence says nothing it does.
_WHEN_ONLY = re.compile(
    rf"^(?:(?:please\s+|you\s+(?:should|must|can|may|might)\s+(?:only\s+|also\s+)?)?(?:use|call|invoke|pick|choose)"
    rf"\s+(?:this|it)(?:\s+{_TOOL})?(?:\s+instead\s+of\s+[^,;]{{1,60}}?)?|(?:it\s+)?is\s+used"
    rf"|(?:this|the)\s+{_TOOL}\s+is\s+used|(?:this|the)\s+{_TOOL}\s+(?:should|must)\s+be\s+used)\s+"
    r"(?:when|if|whenever|once|for cases|in cases|only)\b",
    re.I,
)


# The quoted names of the tool's own parameters listed after the word ("based on the search
# parameters - 'keyword', 'location' and 'work_experience'"): about the tool, and said as a list of
# identifiers; the word stays.
_Q = r"['\"‘“][\w .-]{1,40}['\"’”]"
_PARAMETER_NAMES = re.compile(
    rf"\b((?:parameters?|arguments?|fields?|inputs?)\b)\s*(?:-|:|—|–)?\s*{_Q}(?:\s*,\s*(?:and\s+|or\s+)?{_Q})*"
    rf"(?:\s*,?\s*(?:and|or)\s+{_Q})?",
    re.I,
)


def _markup_removed(text: str) -> str:
    text = _BLOCK_TAG.sub("\n", text)
    text = html.unescape(_HTML_TAG.sub("", text))
    text = _LINK.sub(r"\1", text)
    text = text.replace("`", "")
    for _ in range(2):  # "***bold italic***"
        text = _EMPHASIS.sub(r"\2", text)
    return text


def _first_paragraph(text: str) -> str:
    """The lines of the first paragraph, up to a section header, a bullet, a fence or a blank
    line after text (a heading's marks dropped)."""
    kept: list[str] = []
    for line in text.splitlines():
        if _FENCE.match(line) or (kept and (_SECTION.match(line) or _BULLET.match(line))):
            break
        if not line.strip():
            if kept:
                break
            continue
        kept.append(_BULLET.sub("", _HEADING.sub("", line)).strip())
    out = " ".join(kept)
    m = _INLINE_SECTION.search(out)  # a docstring whose lines were joined: "... claim number. Args: ..."
    return out[: m.start()] if m and m.start() > 0 else out


_ABBREVIATIONS = frozenset(
    {"e.g", "i.e", "eg", "ie", "etc", "vs", "approx", "incl", "excl", "no", "nr", "cf", "esp", "a.m", "p.m"}
)
_STOP = re.compile(r"(?<=[A-Za-z0-9)'’\"])[.!?](?:\s+|$)")


def _sentences(text: str) -> list[tuple[str, str]]:
    """The sentences of `text`, each with the mark that ends it ("" for none); a full stop after a
    common abbreviation ("e.g.", "no.") ends none."""
    out: list[tuple[str, str]] = []
    start = 0
    for m in _STOP.finditer(text):
        before = text[start : m.start()].split()
        initialism = bool(before) and re.fullmatch(r"(?:[A-Z]\.)+[A-Z]", before[-1]) is not None  # "U.S."
        if before and (before[-1].lower() in _ABBREVIATIONS or initialism) and m.end() < len(text):
            continue
        out.append((text[start : m.start()], text[m.start()]))
        start = m.end()
    out.append((text[start:], ""))
    return [(p.strip(), stop) for p, stop in out if p.strip()]


def _aside(sentence: str, stop: str) -> bool:
    """Whether a sentence says nothing the tool does (module docstring, item 9): a question, an
    exclamation (the slogan of product copy: "Plans changed? No problem!", "Say goodbye to
    paperwork!"), a labelled remark, or capitals throughout (three words or more)."""
    letters = [c for c in sentence if c.isalpha()]
    shouting = len(sentence.split()) >= 3 and sum(c.isupper() for c in letters) >= 0.8 * len(letters)
    return stop in ("?", "!") or bool(_REMARK.match(sentence)) or shouting


def _after_setting(sentence: str) -> str:
    """`sentence` from its verb on when a condition or setting opens it (module docstring, item
    11); else as it is. After a comma or colon, a word is that verb when it is a third-person or
    base verb followed by an object: a determiner or pronoun, or any word where the verb cannot be
    a noun ("For orders, invoices and notes, returns ...": "invoices and" is no verb)."""
    words = sentence.split()
    if not words or words[0].lower() not in _SETTING_WORDS:
        return sentence
    duty = re.search(rf",\s+(?={_DUTY}\w)", sentence, re.I)
    if duty:  # "Upon receipt of a valid request, the Provider shall issue ...": the duty is the action
        return sentence[duty.end() :]
    for k in range(1, len(words) - 2):
        if not words[k].endswith((",", ":")):
            continue
        verb, nxt = words[k + 1], words[k + 2].lower()
        if not verb[:1].islower() or nxt in ("and", "or") or not nxt[:1].isalnum():
            continue
        if (verb_lemma(verb, nxt) or is_base_verb(verb)) and (
            nxt in DETERMINERS or nxt in _OBJECT_PRONOUNS or not is_noun(verb)
        ):
            return " ".join([verb[:1].upper() + verb[1:], *words[k + 2 :]])
    return sentence


_OBJECT_PRONOUNS = frozenset({"it", "them", "one", "you", "him", "her", "us", "me"})


def _base_of(word: str, nxt: str = "") -> str | None:
    """The base form of a gerund (`registering` -> register, `bulk-updating` -> bulk-update) or
    of a third-person verb after a preamble (`assigns` -> assign); None otherwise."""
    head, _, last = word.rpartition("-")
    low = last.lower()
    if low.endswith("ing"):
        verbs = _lemmas(low).get("VERB")
        base = verbs[0] if verbs and verbs[0] != low else None
    else:
        base = verb_lemma(last, nxt)
    if base is None:
        return None
    return f"{head.lower()}-{base}" if head else base


def _gerund_opening(words: list[str]) -> bool:
    """Whether a sentence opens with a gerund that is an order: the word cannot be a noun
    ("Fetching", "Bulk-updating"), or a determiner follows it ("Listing all orders")."""
    if len(words) < 2 or not words[0][:1].isalpha() or words[1][:1].isupper() and not words[1].isupper():
        return False  # "Processing Fee": a name in title case
    last = words[0].rpartition("-")[2].lower()
    if not last.endswith("ing") or len(last) < 5:
        return False
    pos = _lemmas(last)
    if "VERB" not in pos:
        return False
    nxt = words[1].lower().strip(",;:")
    if nxt in DETERMINERS and nxt not in ("that", "this"):
        return True
    if pos.keys() & {"NOUN", "ADJ"}:
        return False
    # a bare object: an order unless a participle later makes the whole a noun phrase
    # ("Recurring journal entry templates defined for ...": a look-up)
    clause = []
    for w in words[2:]:  # within its clause: "Updating billing addr; requires verified caller"
        if w.endswith((";", ",", ":")):
            break
        clause.append(w)
    return not any(_participle(w) for w in clause)


def _participle(word: str) -> bool:
    w = word.lower().strip(",;:.")
    verbs = _lemmas(w).get("VERB")
    return bool(verbs) and w not in verbs and (w.endswith("ed") or not w.endswith(("s", "ing")))


def imperative(sentence: str, *, after_preamble: bool = False) -> str:
    """`sentence` with a gerund opening in the imperative ("Fetching invoices" -> "fetch
    invoices"); after a preamble also a third-person verb ("assigns a loss adjuster" -> "assign
    a loss adjuster"). Any other sentence as it is."""
    words = sentence.split()
    if not words:
        return sentence
    nxt = words[1] if len(words) > 1 else ""
    base = None
    if _gerund_opening(words) or (after_preamble and words[0].lower().endswith("ing")):
        base = _base_of(words[0])
    elif after_preamble:
        base = _base_of(words[0], nxt)
    if base is None:
        return sentence
    if words[0].lower().endswith("ing"):  # "cancelling a crossing and refunding it": both in the base form
        for k in range(1, len(words) - 2):  # with an object after it: never "and billing | addresses"
            gerund, obj = words[k + 1].lower(), words[k + 2].lower().strip(",.;:")
            joined = words[k].lower() in ("and", "or") and obj in DETERMINERS | _OBJECT_PRONOUNS
            if joined and gerund.endswith("ing") and (also := _base_of(gerund)):
                words[k + 1] = also
    prefix, _, verb = base.rpartition("-")
    if prefix in _MANNER_PREFIXES:  # "bulk-update plans" -> "update plans in bulk"
        return " ".join([verb, *words[1:], _MANNER_PREFIXES[prefix]])
    return " ".join([base, *words[1:]])


# Prefixes of a verb that say how it acts ("bulk-update"): said after its object instead.
_MANNER_PREFIXES = {"bulk": "in bulk", "batch": "in a batch", "mass": "in bulk"}

# A speaker's words for themselves, as the same words are said to them (a description is read as
# written to the user, `english.in_user_voice` turns it back in the user's mouth).
_TO_READER = {
    "i am": "you are",
    "i'm": "you're",
    "i was": "you were",
    "we are": "you are",
    "we're": "you're",
    "we were": "you were",
    "i": "you",
    "we": "you",
    "me": "you",
    "us": "you",
    "my": "your",
    "our": "your",
    "mine": "yours",
    "ours": "yours",
    "myself": "yourself",
    "ourselves": "yourselves",
}
_SPEAKER = re.compile(
    r"\b(?:i am|i'm|i was|we are|we're|we were|i|we|me|my|our|mine|ours|myself|ourselves|us)\b", re.I
)


def to_the_reader(text: str) -> str:
    """A first-person stretch (a user story's "I can book a collection from my premises") said to
    its speaker: "book a collection from your premises". "US" in capitals (a country) stays."""
    said = text.replace("’", "'")

    def reader(m: re.Match[str]) -> str:
        if m.group(0) == "US":
            return "US"
        word = _TO_READER[m.group(0).lower()]
        opens = m.start() == 0 or said[: m.start()].rstrip().endswith((".", "!", "?"))
        return word[0].upper() + word[1:] if opens else word

    return _SPEAKER.sub(reader, said)


def _without_manner(sentence: str) -> str:
    """`sentence` without an adverb of manner that opens it before its verb ("Simply upload ...",
    "Instantly books ...", "Automatically archives ..."): the verb opens what the tool does."""
    words = sentence.split()
    classes = _lemmas(words[0].lower()).keys() if words else set()
    if len(words) < 3 or not words[0].lower().endswith("ly") or classes != {"ADV"}:
        return sentence  # never "Weekly demand forecast ...", an adjective
    verb, nxt = words[1], words[2].lower()
    if not (verb_lemma(verb, nxt) or is_base_verb(verb)):
        return sentence
    return (
        " ".join([verb[:1].upper() + verb[1:], *words[2:]]) if sentence[:1].isupper() else " ".join(words[1:])
    )


# The verb "to be" of a passive ("A bay is reserved ...") and the words that may stand between it
# and the participle.
_PASSIVE_AUX = frozenset({"is", "are", "was", "were", "gets", "get"})
_PASSIVE_ADVERBS = frozenset({"then", "also", "first", "now", "immediately", "automatically", "always"})
# Participles that state a condition or a fact rather than what the tool does ("Payment is
# required", "The list is limited to 50 rows", "A clinic is located in ...").
_STATIVE_WORDS = (
    "required needed allowed supported permitted expected based located limited known called named deprecated"
    " included considered assumed preferred optional meant designed intended used"
)
_STATIVE = frozenset(_STATIVE_WORDS.split())
_NO_SUBJECT_WORDS = "it this that there which what who each nothing none all"
_NO_SUBJECT = frozenset(_NO_SUBJECT_WORDS.split())


def _active(sentence: str) -> str:
    """`sentence` as an order in the active voice when it is in the passive with a noun phrase for
    its subject ("A service bay and a technician are reserved for the vehicle" -> "Reserve a
    service bay and a technician for the vehicle"); any other sentence as it is. A subject that
    opens with a verb or an adverb, names the tool, holds a clause ("Only the suppliers you list
    are invited") or ends with "and" (a second predicate: "The balance stays and is given back"),
    and a participle that states a condition ("is required"), keep the sentence as written."""
    words = sentence.split()
    k = next((i for i, w in enumerate(words[:10]) if w.lower() in _PASSIVE_AUX), 0)
    subject = words[:k]
    if not subject or subject[-1].lower() in ("and", "or") or "ADV" in _lemmas(subject[0].lower()):
        return sentence
    if any(w.endswith((",", ";", ":")) or w.lower() in _NO_SUBJECT for w in subject):
        return sentence
    first, nxt = subject[0], words[1].lower()
    if (
        first.lower() in _SETTING_WORDS
        or subject[-1].lower() in _TOOL_WORD_SET
        or _CLAUSE_WORDS & {w.lower() for w in subject}
    ):
        return sentence
    third_person = first.lower().endswith("s") and verb_lemma(first, nxt)
    if third_person or (is_base_verb(first) and "NOUN" not in _lemmas(first.lower())):
        return sentence  # "Returns all units ...": a verb opens it ("Repair orders are listed" a noun)
    rest = words[k + 1 :]
    if rest and rest[0].lower() in _PASSIVE_ADVERBS:
        rest = rest[1:]
    part = rest[0].lower().strip(",;:.") if rest else ""
    verbs = _lemmas(part).get("VERB")
    if not verbs or part in _STATIVE or not _participle(part):
        return sentence
    said = [w if w[1:2].isupper() else w.lower() for w in subject[:1]] + subject[1:]
    out = " ".join([verbs[0], *said, *rest[1:]])
    return out[:1].upper() + out[1:] if sentence[:1].isupper() else out


# A second duty in the same sentence: "... and shall thereupon commence the Ride" -> "and commence".
_DUTY_AGAIN = re.compile(
    r"\b(and|or)\s+(?:shall|must|will)\s+(?:(?:also|then|thereupon|promptly|forthwith)\s+)?", re.I
)
_TOOL_WORD_SET = frozenset(_TOOL.strip("(?:)").split("|"))
_CLAUSE_WORD_LIST = "that which who whose whether if when where you we they i he she"
_CLAUSE_WORDS = frozenset(_CLAUSE_WORD_LIST.split())


def _without_preamble(sentence: str) -> str | None:
    """The action after a preamble about the tool, in the imperative; the sentence as it is
    when it has none; None when the preamble says only when to use the tool."""
    for _ in range(3):  # "This tool can be used to ..."
        for rx in _PREAMBLES:
            m = rx.match(sentence)
            if not m or not m.group("rest").strip():
                continue
            if _WHEN_ONLY.match(sentence) and not re.search(_WANTS, sentence[: m.start("rest")], re.I):
                return None
            said = m.group("rest").split()
            if m.groupdict().get("link", "") is None and not (
                said[0].endswith("s") and verb_lemma(said[0], said[1] if len(said) > 1 else "")
            ):
                continue  # "A service bay and ...": no verb follows the tool word, so no preamble
            rest = imperative(_DUTY_AGAIN.sub(r"\1 ", m.group("rest").strip()), after_preamble=True)
            if m.groupdict().get("story"):
                rest = to_the_reader(rest)  # a story's "I" is the user: "from my premises" -> "your"
            first = rest.split()[0].lower()
            if is_base_verb(first) and first not in _MODALS:  # "The service desk queue ..." keeps its words
                # a word that can be a noun keeps the "to" that makes it an order ("to search places")
                sentence = f"to {rest}" if "NOUN" in _lemmas(first) else rest
                break
        else:
            break
    if _WHEN_ONLY.match(sentence):
        return None
    return sentence


# Words a department label never holds; a phrase with them before a colon names a thing.
_LABEL_LINKS = frozenset({"of", "for", "to", "in", "on", "with", "by", "from", "per"})


def _without_label(para: str) -> str:
    """`para` without a leading label (`_LABEL_LEAD`) when a verb follows it ("Billing: moves a
    charge" -> "moves a charge"; "Returns: the balance" keeps its words)."""
    m = _LABEL_LEAD.match(para)
    if m is None:
        return para
    label = re.findall(r"[A-Za-z&/]+", para[: m.end()])
    if len(label) > 3 or any(w.lower() in DETERMINERS or w.lower() in _LABEL_LINKS for w in label):
        return para  # "One view of a customer account: open opportunities, ..." names a thing
    rest = para[m.end() :]
    words = rest.split()
    first = words[0].strip(",.;:") if words else ""
    nxt = words[1] if len(words) > 1 else ""
    # a verb in the third person ("moves"), or an order whose word is no noun ("rent", "seat" are)
    said = first.endswith("s") and verb_lemma(first, nxt)
    if said or (is_base_verb(first) and first not in _MODALS and not _lemmas(first).keys() & {"NOUN", "ADJ"}):
        return rest[:1].upper() + rest[1:]
    return para


# A sentence whose subject is the tool, after a setting of a few words ("Given that number, this
# endpoint returns ...", "In that case, this endpoint searches ...").
_TOOL_SUBJECT = re.compile(rf"^(?:[^,;.]{{1,40}},\s*)?(this\s+{_TOOL}\s+\w.*)", re.I | re.S)


def _tool_sentence_first(sentences: list[str]) -> list[str]:
    """`sentences` with the first that names the tool as its subject ("This endpoint starts
    service at an address ...") put first, when the first is background that opens with no verb
    ("When a customer moves into a home, service has to be opened ..."): the description marks
    which sentence says what the tool does."""
    at = next((k for k, s in enumerate(sentences) if _TOOL_SUBJECT.match(s)), 0)
    words = sentences[0].split() if sentences else []
    nxt = words[1] if len(words) > 1 else ""
    opens_with_verb = bool(words) and bool(verb_lemma(words[0], nxt) or is_base_verb(words[0]))
    opens_with_verb &= not nxt.endswith("ing")  # "Skippers calling the office ...": a noun and its clause
    if opens_with_verb or not (m := _TOOL_SUBJECT.match(sentences[at]) if sentences else None):
        return sentences
    said = m.group(1)  # the setting before the tool goes with the move
    return [said[:1].upper() + said[1:], *sentences[:at], *sentences[at + 1 :]]


def summary(text: str) -> str:
    """What `text`, a tool's description, says the tool does: the first paragraph without
    markup, tags, routes, sentences about how to use the tool and preambles, a gerund opening in
    the imperative (see the module's docstring). Sentences are kept, joined by full stops, the
    last one's as written; "" when nothing is left."""
    if not text or not text.strip():
        return ""
    para = _PARAMETER_NAMES.sub(r"\1", _first_paragraph(_markup_removed(text)))
    para = _FIELDS.sub(lambda m: f"{m['verb'].capitalize()} {m['obj'].strip()}.", para, count=1)
    for _ in range(3):
        para = _NAME_LEAD.sub("", _ROUTE.sub("", _TAG.sub("", para), count=1), count=1)
        para = _without_label(para)
    para = _DASH.sub("; ", para)
    sentences = _sentences(para)
    said = _tool_sentence_first([s for s, stop in sentences if not _aside(s, stop)])
    out: list[str] = []
    for n, sentence in enumerate(said or [s for s, _ in sentences]):
        if _USAGE.search(sentence):
            continue
        kept = _without_preamble(_without_manner(_after_setting(sentence)))
        if kept is None:
            continue
        if n == 0:  # a passive said later is a side effect ("The requester is notified")
            kept = _active(kept)
        ordered = imperative(kept)
        if ordered != kept:
            out.append(ordered)  # in lower case, as a changelog line: without articles, it gets them back
        elif kept:
            out.append(kept[:1].upper() + kept[1:] if sentence[:1].isupper() else kept)
    stop = "." if para.rstrip().endswith((".", "!", "?")) else ""
    return ". ".join(out) + stop if out else ""


__all__ = ["imperative", "summary"]
