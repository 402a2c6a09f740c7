"""Interaction-preference attributes, their settings, and the phrases that state them.

The attributes and settings are the IX inventory's (wrapper.inventory). `PHRASES` maps a
regular expression (matched case-insensitively against one normalized sentence of a participant
message, see memory.derived.norm) to (attribute, setting). Within an attribute the first
matching pattern wins, so negated forms ("don't ask me before ...") come before plain ones.
"""

from __future__ import annotations

from wrapper import inventory

VERSION = "1"

# The attributes and their settings are the IX inventory's (wrapper/data/inventory.json): one
# vocabulary for what is extracted, stored in cells and acted on by the wrapper.
ATTRIBUTES: dict[str, dict] = {
    a.name: {"settings": list(a.settings), "definition": a.definition} for a in inventory.load().attributes.values()
}

# (pattern, attribute, setting). Patterns see normalized text: lowercase, no punctuation
# except apostrophes ("don't"), single spaces.
PHRASES: list[tuple[str, str, str]] = [
    # verbosity
    (r"\b(one line|one word|one liners?|bare minimum|as few words as possible|terse)\b", "verbosity", "terse"),
    (r"\b(short version|keep it short|keep (them|it|things|replies|answers) short|short answers|"
     r"shorter (answers|replies)|be brief|briefly|tl ?dr|less text|too long)\b", "verbosity", "brief"),
    (r"\b(more detail|in detail|detailed|long version|full explanation|explain (it )?fully|elaborate|"
     r"go deeper|all the details)\b", "verbosity", "detailed"),
    # autonomy
    (r"\b(don't|do not|no need to|never) (ask|check with) me (before|first)|\bjust do it\b|"
     r"\bwithout asking( me)?\b|\bdon't need to ask\b", "autonomy", "autonomous"),
    (r"\b(go ahead and|feel free to) .* (tell|let) me (after|afterwards|know)\b|"
     r"\bdo it and (tell|let) me\b", "autonomy", "self_directed"),
    (r"\b(don't|do not|never) do anything (unless|until) i ask\b|\bonly (do|act) when i ask\b|"
     r"\bwait (for me )?until i ask\b", "autonomy", "reactive"),
    (r"\b(ask|check with) me (before|first)\b|\balways ask( me)? first\b|\bsuggest (it|things) first\b|"
     r"\bwait for my (ok|okay|approval)\b", "autonomy", "suggest"),
    # reasoning visibility
    (r"\b(don't|do not|no need to) (show|explain) (me )?(your|the) (reasoning|thinking|working)|"
     r"\bskip the (reasoning|explanation)|\bno explanations?\b|\bdon't explain( why)?\b|"
     r"\bjust (give me )?the answer\b", "reasoning_visibility", "hide"),
    (r"\b(show|tell|walk) me (through )?(your|the) (reasoning|thinking|working|steps)|"
     r"\bshow your work\b|\bexplain (your|the) reasoning\b|\bi want to (see|know) why\b",
     "reasoning_visibility", "show"),
    # elicitation
    (r"\bone question at a time\b|\bask (me )?one (thing|question) at a time\b", "elicitation", "iterative"),
    (r"\b(all (the |your )?questions|everything) (at once|together|in one go)\b|"
     r"\b(list|send) (me )?(all )?your questions\b", "elicitation", "structured"),
    (r"\b(just guess|figure it out yourself|use your (best )?judg(e)?ment|"
     r"(don't|stop) ask(ing)? me so many questions|fewer questions)\b", "elicitation", "infer"),
]

# A preference stated for both contexts, or explicitly for one.
BOTH = r"\b(for both|in both|everywhere|work and (personal|home|private)|(personal|home) and work|" \
       r"at work and at home|at home and at work|always, work or not|whatever the context)\b"
WORK = r"\b(at work|for work|work stuff|work things|in work mode|work context)\b"
PERSONAL = r"\b(at home|personal stuff|personal things|outside work|in private|personal context)\b"

DESCRIPTIONS = {
    ("verbosity", "terse"): "Wants replies of one line",
    ("verbosity", "brief"): "Wants short replies",
    ("verbosity", "detailed"): "Wants detailed replies",
    ("autonomy", "reactive"): "Wants the companion to act only when asked",
    ("autonomy", "suggest"): "Wants to be asked before the companion acts",
    ("autonomy", "self_directed"): "Lets the companion act and report afterwards",
    ("autonomy", "autonomous"): "Lets the companion act without asking first",
    ("reasoning_visibility", "show"): "Wants to see the reasoning",
    ("reasoning_visibility", "hide"): "Wants answers without the reasoning",
    ("elicitation", "infer"): "Prefers the companion to infer rather than ask",
    ("elicitation", "structured"): "Prefers all questions at once",
    ("elicitation", "iterative"): "Prefers one question at a time",
}


def check(attribute: str, setting: str) -> None:
    if attribute not in ATTRIBUTES:
        raise ValueError(f"unknown preference attribute {attribute!r}; known: {sorted(ATTRIBUTES)}")
    if setting not in ATTRIBUTES[attribute]["settings"]:
        raise ValueError(f"unknown setting {setting!r} of {attribute}; settings: {ATTRIBUTES[attribute]['settings']}")


def describe(attribute: str, setting: str) -> str:
    if (attribute, setting) in DESCRIPTIONS:
        return DESCRIPTIONS[(attribute, setting)]
    a = inventory.load().attributes.get(attribute)
    return f"{a.title}: {setting.replace('_', ' ')}" if a else f"{attribute}: {setting}"
