"""Interaction-preference attributes, their settings, and the phrases that state them.

The attributes and settings are the IX inventory's (wrapper/data/inventory.json, read as data). `PHRASES` maps a
regular expression (matched case-insensitively against one normalized sentence of a participant
message, see memory.derived.norm) to (attribute, setting). Within an attribute the first
matching pattern wins, so negated forms ("don't ask me before ...") come before plain ones.
The phrases are the exact road; what people say in their own words is read by the classifier of
memory.preferences, which also puts these phrases behind the parse's gates.
"""

from __future__ import annotations

import json
from importlib import resources

VERSION = "1"

# The attributes and their settings are the IX inventory's (wrapper/data/inventory.json): one
# vocabulary for what is extracted, stored in cells and acted on by the wrapper. Read as data, so
# memory imports no wrapper code.
ATTRIBUTES: dict[str, dict] = {
    name: {"settings": list(a["settings"]), "definition": a["definition"], "title": a["title"],
           "default": dict(a.get("default", {}))}
    for name, a in json.loads((resources.files("wrapper") / "data/inventory.json").read_text())["attributes"].items()
}

# (pattern, attribute, setting). Patterns see normalized text: lowercase, no punctuation
# except apostrophes ("don't"), single spaces. Within an attribute the first matching pattern
# wins, so negated forms ("no need to be so formal") come before the plain ones they contain.
PHRASES: list[tuple[str, str, str]] = [
    # verbosity
    (r"\b(one line|one word|one liners?|bare minimum|as few words as possible|terse)\b", "verbosity", "terse"),
    (r"\b(short version|keep it short|keep (them|it|things|replies|answers) short|short answers|"
     r"shorter (answers|replies)|be brief|briefly|tl ?dr|less text|too long|less detail)\b", "verbosity", "brief"),
    (r"\b(more detail|in detail|detailed|long version|full explanation|explain (it )?fully|elaborate|"
     r"go deeper|all the details)\b", "verbosity", "detailed"),
    # autonomy
    (r"\b(don't|do not|no need to|never) (ask|check with) me (before|first)|\bjust do it\b|"
     r"\bwithout asking( me)?\b|\bdon't need to ask\b|\bhandle it (yourself|end to end)\b|"
     r"\bact on your own\b|\bstop asking (me )?(for )?(permission|first|before)\b|"
     r"\b(don't|do not|no need to) wait for my (approval|ok|okay|go ahead|permission)\b|"
     r"\bi trust you to (handle|decide|act|take care of)\b", "autonomy", "autonomous"),
    (r"\b(go ahead and|feel free to) .* (tell|let) me (after|afterwards|know)\b|"
     r"\bdo it and (tell|let) me\b|\b(notes|reminders|drafts)( and (notes|reminders|drafts|calendar entries))* "
     r"(are|is) fine\b|\b(ask|check with) me (only )?before (anything|sending anything) "
     r"(external|to other people|that leaves)\b", "autonomy", "self_directed"),
    (r"\b(don't|do not|never) do anything (unless|until) i ask\b|\bonly (do|act) when i ask\b|"
     r"\bwait (for me )?until i ask\b|\bwait for me to ask\b|"
     r"\b(don't|do not|never) (start|take|propose) (anything|any actions?) (on your own|unprompted|unless i ask)\b",
     "autonomy", "reactive"),
    (r"\b(ask|check with) me (before|first)\b|\balways ask( me)? first\b|\bsuggest (it|things) first\b|"
     r"\bwait for my (ok|okay|approval)\b|\brun it by me( first)?\b|\bjust suggest\b|"
     r"\bpropose (it|things|actions) and (let me|i'll) decide\b", "autonomy", "suggest"),
    # reasoning visibility
    (r"\b(don't|do not|no need to) (show|explain) (me )?(your|the) (reasoning|thinking|working)|"
     r"\bskip the (reasoning|explanation|why|rationale)|\bno explanations?\b|\bdon't explain( why)?\b|"
     r"\bjust (give me )?the answer\b|\bleave out the (why|rationale|reasoning)\b", "reasoning_visibility", "hide"),
    (r"\b(show|tell|walk) me (through )?(your|the) (reasoning|thinking|working|steps)|"
     r"\bshow your work\b|\bexplain (your|the) reasoning\b|\bi want to (see|know) why\b|"
     r"\b(include|give me) the (why|rationale|reasoning)\b", "reasoning_visibility", "show"),
    # process visibility
    (r"\b(when you start and when you('re| are)? (done|finish(ed)?)|(the )?start and (the )?(end|finish)|"
     r"beginning and (the )?end|first and last (update|note)s?)\b", "process_visibility", "bookend"),
    (r"\b(narrate every step|every step as you go|(keep me posted|update me) on every step|step by step updates|"
     r"running commentary|all (the )?progress (notes|updates)|narrate (it|everything|as you go))\b",
     "process_visibility", "full_narration"),
    (r"\b(no (progress|status) (updates|notes|reports)|don't narrate|do not narrate|only the (outcome|result)|"
     r"skip the play by play|just tell me when it's done|no play by play)\b", "process_visibility", "silent"),
    # elicitation
    (r"\bone question at a time\b|\bask (me )?one (thing|question) at a time\b|\bone question per (turn|message)\b",
     "elicitation", "iterative"),
    (r"\b(all (the |your )?questions|everything) (at once|together|in one go|up front)\b|"
     r"\b(list|send) (me )?(all )?your questions\b|\bask (me )?everything up front\b", "elicitation", "structured"),
    (r"\b(just guess|figure it out yourself|use your (best )?judg(e)?ment|"
     r"(don't|stop) ask(ing)? me so many questions|fewer questions|just (make|go with) (an )?assumptions?|"
     r"don't ask me anything)\b", "elicitation", "infer"),
    # topic management
    (r"\b(one (topic|subject|issue) at a time|deal with (them|things|topics) one at a time)\b",
     "topic_management", "one_at_a_time"),
    (r"\b(follow my (lead|order|flow)|in the order i (raised|said|asked|brought up) them|no headings|"
     r"(don't|do not) (use headings|organi[sz]e (it|them|things)|sort (it|them|things) by topic))\b",
     "topic_management", "follow"),
    (r"\b((group|sort|organi[sz]e) (it|them|things|the reply|everything|the answer) by topic|use headings|"
     r"with headings|under (a )?headings?|a heading (each|per topic))\b", "topic_management", "organize"),
    # solution breadth
    (r"\b(just )?(give me |pick )?(one|a single) (option|recommendation|choice|pick)\b|\bpick one for me\b|"
     r"\b(not|too) (so )?many options\b|\bjust tell me what you recommend\b", "solution_breadth", "low"),
    (r"\b(give me|show me|lay out|list) (the |all the |some |a few |several )?(alternatives|options)\b|"
     r"\bside by side\b|\bmore than one option\b|\bseveral options\b|\bcompare (the )?options\b",
     "solution_breadth", "high"),
    # proactive outreach
    (r"\b(don't|do not|never|no need to) (check in|reach out|message me|follow up)( on me| with me)?"
     r"( unless i ask| first| unprompted)?\b|\bno check ins\b|\bi'll reach out (when|if) i need\b",
     "proactive_outreach", "low"),
    (r"\b(feel free to|please|do) (check in|follow up)( on me| with me)?\b|\bcheck in (on me )?(later|afterwards|after)\b|"
     r"\breach out (to me )?(first|unprompted|anytime)\b|\bping me (later|afterwards)\b", "proactive_outreach", "high"),
    # task expansion
    (r"\b((just|only) (do )?what i ask(ed)?( for)?|stick to what i ask(ed)?( for)?|nothing extra|no extras|"
     r"(don't|do not) add (extra|anything)( tasks| things)?)\b", "task_expansion", "as_asked"),
    (r"\b((take care of|handle|do) (the )?(related|adjacent|obvious next|follow up) (stuff|things|tasks|bits|steps)|"
     r"while you're at it|the next obvious step|go beyond what i ask(ed)?)\b", "task_expansion", "adjacent"),
    # formality
    (r"\b(don't|do not|please don't) be (so )?(casual|chatty|informal)\b", "formality", "formal"),
    (r"\b((don't|do not|no need to) be (so )?(formal|stiff|polite)|less formal|drop the formalities|"
     r"(be|keep it) (casual|relaxed|chill|informal)|talk (to me )?like a friend)\b", "formality", "casual"),
    (r"\b(keep it (formal|professional)|be (more )?(formal|professional)|formal (please|register|tone|language)|"
     r"no slang)\b", "formality", "formal"),
    # emotional engagement
    (r"\b((just )?(stick|stay|keep) (to|on) the task|skip the (feelings|emotional stuff|sympathy|pep talk)|"
     r"(don't|do not|no need to) (comment on|acknowledge|ask about|talk about) (my |how i )?(feelings|feel|mood))\b",
     "emotional_engagement", "task_focused"),
    (r"\b((acknowledge|ask about|notice) (how i('m| am)? feel(ing)?|my feelings)|show (some )?empathy|"
     r"(be )?(more )?(warm|warmer|empathetic|understanding) (please|with me)|a little sympathy)\b",
     "emotional_engagement", "empathetic"),
    # feedback directness
    (r"\b(don't|do not) be (so )?(blunt|harsh|brutal)\b", "feedback_directness", "gentle"),
    (r"\b((just )?be (direct|blunt|frank|straight with me)|tell me straight|(don't|do not) sugarcoat|"
     r"no sugarcoating|say (it|what's wrong) plainly|(just )?tell me what's wrong)\b", "feedback_directness", "direct"),
    (r"\b((be|go) (gentle|easy|softer|kinder) (with|on) (me|my)|soften (the|your) (critique|feedback|criticism)|"
     r"(start|lead) with (the )?(positives|what works))\b", "feedback_directness", "gentle"),
    # uncertainty disclosure
    (r"\b((don't|do not|no need to) (flag|mention|show|hedge)( your| the| any)? (uncertainty|doubts)|"
     r"(no|stop|without the|skip the) (hedging|caveats|disclaimers)|(give me )?your best (guess|answer))\b",
     "uncertainty_disclosure", "minimal"),
    (r"\b((tell|let) me (know )?(when|if|how) (you're|you are) (not sure|unsure|uncertain)|"
     r"(flag|mention|show) (your |any )?(uncertainty|doubts)|how (sure|confident) you are|confidence levels?)\b",
     "uncertainty_disclosure", "explicit"),
    # error reporting
    (r"\b(don't|do not) hide (errors|problems|glitches|mistakes)\b", "error_reporting", "explicit"),
    (r"\b((don't|do not|no need to) (tell|bother|report to) me (about )?(every |small |little |minor |the )?"
     r"(errors|glitches|hiccups|problems)|(fix|handle|sort out) (the |small |little |minor )?(glitches|hiccups|errors|problems) "
     r"(quietly|yourself|silently)|only tell me about problems (if|when) (it matters|they matter))\b",
     "error_reporting", "quiet"),
    (r"\b((tell|let) me (know )?(about )?(any |every |all )(errors|problems|glitches)|"
     r"report (every|all|any) (errors?|problems?|glitch(es)?)|(tell|let) me (know )?(when|whenever) something goes wrong)\b",
     "error_reporting", "explicit"),
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
    ("process_visibility", "silent"): "Wants no progress notes, only the outcome",
    ("process_visibility", "bookend"): "Wants to hear when a task starts and when it is done",
    ("process_visibility", "full_narration"): "Wants every step of a task narrated",
    ("topic_management", "follow"): "Wants topics in the order they raised them, no headings",
    ("topic_management", "organize"): "Wants replies grouped by topic under headings",
    ("topic_management", "one_at_a_time"): "Wants one topic dealt with at a time",
    ("solution_breadth", "low"): "Wants one recommended option",
    ("solution_breadth", "high"): "Wants the alternatives side by side",
    ("proactive_outreach", "low"): "Wants no check-ins unless they ask",
    ("proactive_outreach", "high"): "Welcomes check-ins without being asked",
    ("task_expansion", "as_asked"): "Wants only what was asked done",
    ("task_expansion", "adjacent"): "Welcomes related follow-up tasks being taken on",
    ("formality", "formal"): "Wants a formal register",
    ("formality", "casual"): "Wants a casual register",
    ("emotional_engagement", "task_focused"): "Wants replies to stay on the task",
    ("emotional_engagement", "empathetic"): "Wants feelings acknowledged",
    ("feedback_directness", "gentle"): "Wants critique softened",
    ("feedback_directness", "direct"): "Wants problems stated plainly",
    ("uncertainty_disclosure", "explicit"): "Wants to be told when the companion is unsure",
    ("uncertainty_disclosure", "minimal"): "Wants the best answer without hedging",
    ("error_reporting", "explicit"): "Wants every problem on the companion's side reported",
    ("error_reporting", "quiet"): "Wants minor problems handled quietly",
}


def check(attribute: str, setting: str) -> None:
    if attribute not in ATTRIBUTES:
        raise ValueError(f"unknown preference attribute {attribute!r}; known: {sorted(ATTRIBUTES)}")
    if setting not in ATTRIBUTES[attribute]["settings"]:
        raise ValueError(f"unknown setting {setting!r} of {attribute}; settings: {ATTRIBUTES[attribute]['settings']}")


def from_description(text: str) -> tuple[str, str] | None:
    """(attribute, setting) whose description is `text` (a cell's file-memory line), or None."""
    return _BY_DESCRIPTION.get(text.strip().rstrip(".").lower())


def describe(attribute: str, setting: str) -> str:
    if (attribute, setting) in DESCRIPTIONS:
        return DESCRIPTIONS[(attribute, setting)]
    a = ATTRIBUTES.get(attribute)
    return f"{a['title']}: {setting.replace('_', ' ')}" if a else f"{attribute}: {setting}"


_BY_DESCRIPTION = {d.lower(): key for key, d in DESCRIPTIONS.items()}
assert len(_BY_DESCRIPTION) == len(DESCRIPTIONS), "two settings share a description"
