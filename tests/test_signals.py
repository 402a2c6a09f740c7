"""Implicit signals: each rule on hand-made messages, written before the rules (held out).

The messages are in a different voice from the rule data's phrases (memory/data/signals.json):
lower case, typos, fillers, mid-sentence cues. Each rule also has messages that must not fire.
"""

import pytest

from memory import signals

RESTATE = [
    "i literally told you yesterday that im vegetarian",
    "like I said, the interview is on friday",
    "As I mentioned before, my brother lives in Leeds.",
    "did you forget? I said I was moving in March",
    "I've told you this twice now: I don't drink coffee",
    "ugh, remember I told you about the dog?",
]
NOT_RESTATE = [
    "I told my boss I'd be late",
    "she said she'd call me later",
    "As I walked home I saw a fox",
    "can I tell you something?",
    "I said no to the promotion",
    "like I care about football",
    "my mum always told me to save money",
]
CORRECT = [
    "no, her name is Priya, not Pria",
    "Actually it's my sister who lives in Porto, not my cousin",
    "That's not right, I work at the library",
    "you've got that wrong - I quit smoking last year",
    "I never said I hated my job",
    "nope, it was tuesday",
]
NOT_CORRECT = [
    "no worries, talk later",
    "No thanks, I'm good",
    "nothing much going on today",
    "Actually I think I'll go for a run",
    "no idea what to cook tonight",
    "my answer was wrong on the quiz, annoying",
    "I didn't sleep much",
]
IRRELEVANT = [
    "why are you bringing that up now?",
    "what does that have to do with anything",
    "that's got nothing to do with what I asked",
    "Not relevant right now.",
    "why would you mention my ex, I was asking about dinner",
    "that was ages ago, it doesn't matter anymore",
]
NOT_IRRELEVANT = [
    "why are you up so late?",
    "nothing to do this weekend",
    "I brought up the kids on my own",
    "that's relevant to my thesis actually",
    "it doesn't matter which restaurant, you pick",
    "what does your name mean?",
]


CASES = [(rule, text, fires) for rule, yes, no in (("restate", RESTATE, NOT_RESTATE),
                                                    ("correct", CORRECT, NOT_CORRECT),
                                                    ("irrelevant", IRRELEVANT, NOT_IRRELEVANT))
         for fires, texts in ((True, yes), (False, no)) for text in texts]


@pytest.mark.parametrize("rule, text, fires", CASES)
def test_each_rule_fires_on_its_messages_and_not_on_the_others(rule, text, fires):
    assert (rule in signals.detect(text)) is fires
