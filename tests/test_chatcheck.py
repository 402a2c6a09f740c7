"""The checks `bench chat` reports (eval/chatcheck.py), on replies judged by hand."""

from __future__ import annotations

import pytest

from eval import chatcheck as c

SAID = ["Hi! I'm Priya. I live in Leeds and work as a physiotherapist at a small clinic.",
        "I live with my cat Pickle, she's a tabby and a bit of a troublemaker.",
        "My brother Arun lives in Cardiff, he's a chef at a seafood restaurant there.",
        "Big news: I'm flying to Lisbon on March 14th for my friend Sofia's wedding!",
        "I've got a dentist appointment on Monday at 4:30, not looking forward to it.",
        "what's my cat called again?"]


@pytest.fixture
def known():
    k = c.Known()
    for t in SAID:
        k.add(t)
    return k


@pytest.mark.parametrize("reply,rules", [
    # invented: a name never written, about their world
    ("Biscuku, she's a sweet little lady.", {"name"}),
    ("Your brother Arun works at the Hilton.", {"name"}),
    # a relation they never named, also in a question
    ("How is your husband doing?", {"relation"}),
    # a weekday and a time they never wrote
    ("Your appointment is on Tuesday at 3pm.", {"number or date"}),
    # a place of theirs said of the wrong person
    ("Your brother is living in Lisbon now.", {"misattributed"}),
    # a relative day never said
    ("Sofia's wedding is happening tomorrow night.", {"relative time"}),
    # words put in their mouth
    ('They said: "I am so glad to see you today."', {"words put in their mouth"}),
    # an action of their person the participant never wrote
    ("Arun is a chef. He loves his job.", {"attribute"}),
])
def test_invented_participant_facts_are_found(known, reply, rules):
    assert {f["rule"] for f in c.inventions(reply, known)} == rules


@pytest.mark.parametrize("reply", [
    "Your cat is called Pickle: you told me on Monday.",     # their own facts, and when it was told
    "Arun lives in Cardiff and he's a chef.",                # what they said, restated
    "You could visit the Royal Armouries in Leeds.",         # a suggestion states nothing about them
    "Sure! Try a stir fry with noodles.",                    # not about their world
    "Your appointment is on Monday at 4:30pm.",              # their time, another spelling
    "Waiting for your approval: remind you: book a sitter (Mon 09 Mar, 04:30).",  # bookkeeping
    "You told me: \u201cMy brother Arun lives in Cardiff, he's a chef at a seafood restaurant there.\u201d",
    "Pickle sounds lovely!",                                 # an opinion, a linking verb
])
def test_what_they_said_and_what_is_not_about_them_is_not_counted(known, reply):
    assert c.inventions(reply, known) == []


def test_recall_counts_the_reply_or_an_answering_quote_only(known):
    assert c.recall_right("Your cat is called Pickle.", ["Pickle"], known)
    assert not c.recall_right("Your cat is called Biscuzzle.", ["Pickle"], known)
    # the quoted statement answers: it counts
    assert c.recall_right("Hmm. You told me: \u201cI live with my cat Pickle, she's a tabby and a bit of a "
                          "troublemaker.\u201d", ["Pickle"], known)
    # a quoted question never counts, even holding the word
    assert not c.recall_right("You told me: \u201cwhat's my cat called again?\u201d", ["cat"], known)
    # alternatives, and a time with its suffix
    assert c.recall_right("It's at 4:30pm on Monday.", ["4:30", "half past four"], known)
    assert c.recall_right("You fly on the 14th of March.", ["March 14", "14th"], known)
    assert not c.recall_right("You fly on the 15th of March.", ["March 14", "14th"], known)


def test_quoted_questions_and_quoted_non_answers(known):
    q = c.quotes("You told me: \u201cwhat's my cat called again?\u201d", known, ["Pickle"])
    assert q["questions"] == ["what's my cat called again?"] and q["nonanswers"] == []
    q = c.quotes("You told me: \u201cMy brother Arun lives in Cardiff, he's a chef at a seafood restaurant "
                 "there.\u201d", known, ["Sofia"])
    assert q["questions"] == [] and len(q["nonanswers"]) == 1
    # on a never-told question every quoted statement is a non-answer
    assert len(c.quotes("You told me: \u201cI live with my cat Pickle, she's a tabby and a bit of a "
                        "troublemaker.\u201d", known, None)["nonanswers"]) == 1
    # a quote that is not their words is not a quote of theirs
    assert c.quotes("As they say, \u201ctime flies when you have fun\u201d.", known, None)["quoted"] == []
