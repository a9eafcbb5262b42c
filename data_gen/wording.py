"""The wording banks of the scripted agents.

Two banks with no template in common: `train` writes training corpora, `heldout` writes the
evaluation benchmark and plays the user-proxy during evaluation, so a model cannot score by
recalling training sentences (`python -m diaforge.data_gen ngram-overlap` measures what is left).
`get_wording` gives a bank by name; the scripted agents and the generation config call that
name their `wording`. `REASONING_STYLES` names the two ways the teacher words its thoughts.
Slots: `{act}` a verb phrase, `{Act}` the same capitalised, `{role}`/`{department}` from the
persona, `{verb}` a verb shared by the options, `{options}` the options joined with "or",
`{choice}` what the user picks, `{need}` a restated need, `{items}` requested arguments,
`{option}` the one option a question offers.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Wording:
    """One bank. Every list is sampled uniformly by the scripted agents."""

    openings: dict[str, tuple[str, ...]]
    """The user's first message, by persona tone (`{act}`, `{Act}`, `{role}`, `{department}`)."""
    jargon: tuple[str, ...]
    """A sentence appended to an opening now and then (`{term}`)."""
    ask_shared_verb: tuple[str, ...]
    """The teacher's disambiguating question when all options share one verb (`{verb}`, `{options}`)."""
    ask_actions: tuple[str, ...]
    """The teacher's question when the options are different actions (`{options}`)."""
    pick: tuple[str, ...]
    """The user's answer naming the option it wants, in its own words (`{choice}`, `{Choice}`)."""
    none_fits: tuple[str, ...]
    """The user's answer when no offered option is what it needs (`{need}`)."""
    restate: tuple[str, ...]
    """The user's answer to a question that does not separate its goal (`{need}`)."""
    ask_values: tuple[str, ...]
    """The teacher's first request for arguments (`{act}`, `{items}`, `{them}`, `{is_are}`)."""
    ask_more: tuple[str, ...]
    """Later requests for arguments."""
    nothing_more: tuple[str, ...]
    """The user's reply when asked for values it has all given."""
    ask_one: tuple[str, ...]
    """The teacher's question when a single candidate is left to offer (`{option}`, a verb
    phrase); only a retrieval miss asks it (`diaforge.data_gen.agents.refusal`)."""
    ask_other: tuple[str, ...]
    """The teacher's question offering the candidates left after the user turned the first ones
    down (`{options}`, verb phrases); only a retrieval miss asks it."""
    refuse: tuple[str, ...]
    """The teacher's plain refusal once the user has ruled out every candidate: a statement (no
    question mark) with a negation, which is how `diaforge.data_gen.agents.refusal.is_refusal` reads it."""


TRAIN = Wording(
    openings={
        "terse": ("Need to {act}.", "{Act}, please.", "I have to {act}. Can you do that?"),
        "formal": (
            "Good morning. I would like to {act}.",
            "Hello, I need assistance: I have to {act}.",
            "I am writing because I need to {act}.",
        ),
        "friendly": (
            "Hi there! Could you help me {act}?",
            "Hey, hope you're well. I'd like to {act}.",
            "Hi! Quick one: I need to {act}.",
        ),
        "impatient": (
            "I need to {act} today, can you sort it out?",
            "Can we {act} right away? This is urgent.",
            "I've been trying to {act} all morning. Help?",
        ),
        "chatty": (
            "Hi, so I'm {role} in {department} and I need to {act} for something coming up.",
            "Morning! Long week already. Anyway, I need to {act}.",
            "Hello! I was told you could help me {act}, so here I am.",
        ),
        "precise": (
            "Request: {act}.",
            "I need to {act}. Tell me what you need from me.",
            "Please help me {act}.",
        ),
    },
    jargon=("It's part of our {term} work.", "This is for the {term} process."),
    ask_shared_verb=(
        "Happy to help. Should I {verb} {options}?",
        "There are a few ways to do that. Do you want me to {verb} {options}?",
        "Before I go ahead, which is it: {verb} {options}?",
    ),
    ask_actions=(
        "Happy to help. Should I {options}?",
        "There are a few ways to do that. Do you want me to {options}?",
        "Before I go ahead, which is it: {options}?",
    ),
    pick=("{Choice}, please.", "I need {choice}.", "It's {choice}.", "Definitely {choice}."),
    none_fits=("None of those, really. {need}", "Not quite. {need}"),
    restate=("Let me put it another way. {need}", "To be clearer: {need}"),
    ask_values=(
        "Got it. To {act}, I need {items}. Could you share {them}?",
        "Understood. Could you give me {items}?",
        "Sure. What {is_are} {items}?",
    ),
    ask_more=("Thanks. What {is_are} {items}?", "Thank you. Could you also give me {items}?"),
    nothing_more=("That's everything I have. Please go ahead.",),
    ask_one=("I can {option}. Is that what you need?", "Do you want me to {option}?"),
    ask_other=(
        "I see. I can also {options}. Is it one of those?",
        "Understood. Would you like me to {options} instead?",
    ),
    refuse=(
        "I'm sorry, none of the tools I have can do that.",
        "Unfortunately that is not something I can do with the tools I have.",
        "I can't help with that one, I'm afraid: none of my tools does it.",
    ),
)

HELDOUT = Wording(
    openings={
        "terse": ("Want to {act}.", "Looking to {act}.", "{Act} needed."),
        "formal": (
            "Dear assistant, my task today is to {act}.",
            "May I ask for your support? The task is to {act}.",
            "Kindly assist me; the task at hand is to {act}.",
        ),
        "friendly": (
            "Hello! Would you mind helping me {act}?",
            "Hey there, got a minute? Trying to {act}.",
            "Hiya, I'm hoping to {act} with your help.",
        ),
        "impatient": (
            "Quick, need help: must {act} before noon.",
            "No time to waste, gotta {act} now.",
            "Running late here. Must {act} asap.",
        ),
        "chatty": (
            "Hey, {role} from {department} here, and my job this week is to {act}.",
            "So, busy day over here, but first up I want to {act}.",
            "Oh hi! Somebody said you're the one to ask, since I want to {act}.",
        ),
        "precise": (
            "Task: {act}.",
            "Objective is to {act}. List the inputs you require.",
            "My goal: {act}.",
        ),
    },
    jargon=("We call this {term} internally.", "Think {term}, if that helps."),
    ask_shared_verb=(
        "Sure thing. Would you like to {verb} {options}?",
        "Got a couple of possibilities to {verb} here: {options}. Which matches?",
        "Could you tell me which applies, to {verb} {options}?",
    ),
    ask_actions=(
        "Sure thing. Would you like to {options}?",
        "Got a couple of possibilities here: {options}. Which matches?",
        "Could you tell me which applies: {options}?",
    ),
    pick=("My case is {choice}.", "Going with {choice}.", "That would be {choice}.", "Ah, {choice}!"),
    none_fits=("Hmm, neither of these. {need}", "Those miss the mark. {need}"),
    restate=("Put differently: {need}", "Maybe this helps: {need}"),
    ask_values=(
        "Okay. In order to {act}, could you send {items}?",
        "Alright, can you let me have {items}?",
        "Right, may I have {items}?",
    ),
    ask_more=("Appreciated. May I also have {items}?", "Great, and {items}?"),
    nothing_more=("I believe you have it all now, go for it.",),
    ask_one=("One thing I can do is {option}. Does that match?", "Might you want me to {option}?"),
    ask_other=(
        "Okay. Other things within reach: {options}. Any of these?",
        "Right. Perhaps you'd like to {options}?",
    ),
    refuse=(
        "Apologies, but no tool available to me handles that.",
        "I'm afraid that isn't something my tools can do.",
        "Unfortunately I'm unable to do that with the tools I have.",
    ),
)

WORDINGS = {"train": TRAIN, "heldout": HELDOUT}
WORDING_CHOICES = tuple(WORDINGS)
REASONING_STYLES = ("summary", "lookup")
"""How the scripted teacher words its argument-completion thoughts (`diaforge.data_gen.agents.lookup`):
`summary` states the conclusions (the paper's style); `lookup` copies the signature and the
user's words first."""
DEFAULT_TONE = "friendly"


def get_wording(name: str) -> Wording:
    """The bank called `name` (`train` or `heldout`)."""
    try:
        return WORDINGS[name]
    except KeyError:
        raise ValueError(f"unknown wording {name!r}; choose one of {', '.join(WORDING_CHOICES)}") from None
