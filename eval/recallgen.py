"""A seeded generator of everyday recall questions about what the participant said, as
`companion bench chat` scripts (eval/benchchat.py's format), and their scoring.

Issue 25's second week (written by someone else) answered 2 of 10 recall questions right where
our own week got 9 of 9: its questions were everyday and indirect ("random q, whose wedding did i
say i'm going to? testing u", "Mia asked where im going and i said Portugal but she wanted the
city... which one did i tell u?"). The class: a question about the participant's own earlier
statement, phrased indirectly, in slang or with typos, asking for a slot (who/whose, which city,
when, what X is called, what they do, how old) whose answer is in a statement that may use other
words than the question.

A *world* is a participant's facts (a pet, two people of theirs, a trip, an event of someone
else's, an appointment, their job, a named thing, an age), each told in passing in one of several
wordings among small talk. Then questions: every slot x every phrasing *family* of the split
(the families, and the statement wordings, are divided between `train` and `dev`: tune on train,
report dev), questions about what was never told (the same shapes, about something absent), and
action requests worded like questions ("can you remind me to ..."), which must make an action and
not a recall answer. Each question turn carries `recall` (the expected fact, alternatives) or
`unknown` or `action`, plus `family` and `slot` for the scoring here.

    python -m eval.recallgen make --split dev --worlds 3 --seed 1 --out DIR
    companion bench chat --model echo --no-alone --script DIR/dev-1.json --json > run.json
    python -m eval.recallgen score DIR/dev-1.json run.json [more pairs...]
    python -m eval.recallgen offline v3:train:1 v3:train:2 v3:test:1   # the reader alone, generated weeks

v3 (`script3`, `make --v3`): weeks in other people's styles, splits `train` and `test` (held out).
"""

from __future__ import annotations

import json
import math
import random
import re
import sys
from pathlib import Path

VERSION = "recallgen-v1"

# ---------------------------------------------------------------- pools

PEOPLE_NAMES = ["Lena", "Tomas", "Yusuf", "Marisol", "Ingrid", "Dara", "Kofi", "Aiko", "Priyanka", "Mateo",
                "Rosa", "Jonas", "Nadia", "Felix", "Hana", "Oskar", "Leila", "Bruno", "Anouk", "Rafael",
                "Sanne", "Tariq", "Maeve", "Emil", "Zofia", "Idris", "Greta", "Lucas", "Amara", "Niko"]
FRIENDS = ["Mia", "Chloe", "Sam", "Jess", "Ollie", "Ben", "Tasha", "Kim"]  # third parties who ask
RELS = ["sister", "brother", "cousin", "friend", "aunt", "uncle", "flatmate", "colleague"]
PETS = {"dog": ["beagle", "spaniel", "labrador", "whippet", "collie"], "cat": ["tabby", "siamese", "ragdoll"],
        "rabbit": ["lop", "lionhead"], "parrot": ["cockatiel", "budgie"]}
PET_NAMES = ["Biscuit", "Pickle", "Mochi", "Pepper", "Clover", "Waffles", "Juniper", "Noodle", "Ziggy", "Bramble",
             "Toffee", "Pudding", "Sprout", "Olive", "Kiwi"]
TRIPS = [("Portugal", "Lisbon"), ("Portugal", "Porto"), ("Spain", "Valencia"), ("Italy", "Bologna"),
         ("Germany", "Leipzig"), ("Poland", "Krakow"), ("Greece", "Thessaloniki"), ("Japan", "Osaka"),
         ("Canada", "Montreal"), ("Norway", "Bergen"), ("Croatia", "Split"), ("Denmark", "Aarhus")]
HOME_CITIES = ["Leeds", "Bristol", "Glasgow", "Cardiff", "Utrecht", "Ghent", "Lyon", "Hamburg", "Toronto",
               "Melbourne", "Dublin", "Galway", "Sheffield", "Nantes"]
JOBS = ["nurse", "teacher", "physiotherapist", "electrician", "librarian", "pharmacist", "chef", "architect",
        "accountant", "paramedic", "translator", "hairdresser"]
EVENTS = ["wedding", "birthday party", "leaving do", "housewarming", "graduation", "baby shower"]
APPTS = ["dentist", "doctor", "physio", "eye test", "haircut", "vet"]
THINGS = [("book club", ["The Page Turners", "Spine Breakers"]), ("band", ["The Lemon Thieves", "Night Owls"]),
          ("running club", ["the Canal Striders", "Hill Harriers"]), ("bakery", ["Crumbs", "Rise and Shine"]),
          ("podcast", ["Tea and Tangents", "Small Hours"]), ("boat", ["Marigold", "Sea Biscuit"])]
MONTHS = ["January", "February", "March", "April", "May", "June", "July", "August", "September", "October",
          "November", "December"]
WEEKDAYS = ["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"]

FILLER = ["ugh, monday. coffee first.", "Long day, back-to-back meetings.", "it's raining again lol",
          "Made a huge pot of soup tonight, feeling smug.", "not much going on today tbh",
          "Finally finished that series everyone's talking about.", "slept like a log for once",
          "The bus was late again, standing in the cold for 20 minutes.", "Trying to drink more water this week.",
          "anyway, how's your day going?", "went for a walk at lunch, felt good", "my back is killing me today"]


def _ordinal(d: int) -> str:
    return f"{d}{'th' if 10 <= d % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(d % 10, 'th')}"


# ---------------------------------------------------------------- a world


def _pronoun(rel: str, rnd: random.Random) -> str:
    return {"sister": "she", "aunt": "she", "daughter": "she", "niece": "she", "brother": "he", "uncle": "he",
            "son": "he", "nephew": "he"}.get(rel) or rnd.choice(["she", "he"])


def world(rnd: random.Random) -> dict:
    names = rnd.sample(PEOPLE_NAMES, 5)
    rels = rnd.sample(RELS, 3)
    kind = rnd.choice(sorted(PETS))
    country, city = rnd.choice(TRIPS)
    month, day = rnd.randrange(12), rnd.randint(2, 27)
    hour, minute = rnd.choice([9, 10, 11, 2, 3, 4, 5]), rnd.choice([0, 15, 30, 45])
    thing, thing_names = rnd.choice(THINGS)
    home = rnd.choice(HOME_CITIES)
    crel = rnd.choice(["son", "daughter", "niece", "nephew"])
    return {
        "pet": {"kind": kind, "name": rnd.choice(PET_NAMES), "breed": rnd.choice(PETS[kind])},
        "p1": {"rel": rels[0], "name": names[0], "city": rnd.choice([c for c in HOME_CITIES if c != home]),
               "job": rnd.choice(JOBS), "she": _pronoun(rels[0], rnd)},
        "p2": {"rel": rels[1], "name": names[1]},  # named, nothing else told: never-told questions
        "absent_rel": rels[2],  # never mentioned at all
        "owner": {"name": names[2], "event": rnd.choice(EVENTS)},
        "trip": {"country": country, "city": city, "month": MONTHS[month], "day": day},
        "appt": {"what": rnd.choice(APPTS), "weekday": rnd.choice(WEEKDAYS), "hour": hour, "minute": minute},
        "me": {"job": rnd.choice([j for j in JOBS]), "home": home, "age": rnd.randint(24, 61)},
        "thing": {"what": thing, "name": rnd.choice(thing_names)},
        "child": {"rel": crel, "she": _pronoun(crel, rnd), "name": names[3],
                  "age": rnd.randint(3, 14)},
        "friend": rnd.choice(FRIENDS),
        "other_name": names[4],
    }


def _clock(a: dict) -> tuple[str, list[str]]:
    h, m = a["hour"], a["minute"]
    pm = "pm" if h < 8 else "am"
    said = f"{h}:{m:02d}" if m else f"{h}{pm}"
    expected = [f"{h}:{m:02d}"] if m else [f"{h}{pm}", f"{h} {pm}", f"{h}:00", f"{h} o'clock"]
    return said, expected


def _date_forms(t: dict) -> tuple[list[str], list[str]]:
    d, mo = t["day"], t["month"]
    said = [f"{mo} {_ordinal(d)}", f"the {_ordinal(d)} of {mo}", f"{d} {mo}"]
    return said, [f"{mo} {d}", f"{d} {mo}", _ordinal(d), f"{d}th" if _ordinal(d) != f"{d}th" else _ordinal(d)]


# Statement wordings per fact: (template, split). {x} fields from the world; each says the fact
# in passing. Splits alternate so both halves see every fact.
STATEMENTS = {
    "pet": [
        "We also have a {kind} called {pet}, he's a {breed}.",
        "ugh {pet} (our {breed}) chewed my charger again",
        "My {kind}'s name is {pet} btw, total menace. {pet_cap_pron} is a {breed}.",
        "came home to find my {kind} {pet} asleep on my laptop. typical {breed}",
        "Took {pet} to the park, our little {breed} made friends with everyone. Best {kind} ever.",
        "our {kind} is {pet}, a very fluffy {breed}",
    ],
    "p1": [
        "My {rel} {p1} lives in {p1city}, we talk most Sundays. {P1she}'s {a_p1job}.",
        "talked to my {rel} {p1lower} today, {p1she}'s been in {p1city} for years now and still works as {a_p1job}",
        "{p1} (my {rel}) moved to {p1city} last year. {P1she} works as {a_p1job} there.",
        "my {rel} is called {p1}, {p1she} lives in {p1city} and {p1she}'s {a_p1job}, always busy",
    ],
    "p2": [
        "Had coffee with my {rel2} {p2} this morning, nice to catch up.",
        "my {rel2} {p2lower} came round for dinner, we ate way too much",
    ],
    "trip": [
        "Booked it! {country} in {month}, flying into {city} on {date}.",
        "so excited, going to {country} soon, {city} first, I fly on {date}",
        "I'm off to {city} in {country} on {date}, need to find my passport lol",
        "Trip sorted: {date}, {city}! Never been to {country} before.",
    ],
    "owner": [
        "I'm going to my friend {owner}'s {event} next weekend, need an outfit.",
        "{owner}'s {event} is coming up, I said I'd go and help set up",
        "got an invite to {owner}'s {event}!! definitely going",
        "Going to the {event} of my mate {owner} on Saturday, should be fun.",
    ],
    "appt": [
        "I've got a {appt} appointment on {weekday} at {clock}, not looking forward to it.",
        "{appt} on {weekday} {clock}, dreading it tbh",
        "Booked the {appt} for {weekday} at {clock}.",
        "ugh have to go to the {appt} {weekday} at {clock}",
    ],
    "me": [
        "I work as {a_job} at the hospital, so nights are rough sometimes.",
        "being {a_job} is exhausting some days honestly",
        "Work was mad today, I'm {a_job} and we were two people short.",
        "im {a_job}, been doing it 10 years now",
    ],
    "home": [
        "I live in {home} and it's been grey all week.",
        "{home} is so busy this time of year, I love living here though",
        "Moved to {home} three years ago and I still get lost.",
        "the trams in {home} are a nightmare today, that's where I live for my sins",
    ],
    "thing": [
        "My {thing} is called {thing_name}, we meet on Thursdays.",
        "the {thing} (it's called {thing_name}) was great tonight",
        "Joined a {thing}, {thing_name}, last month and I love it.",
        "our {thing}'s name is {thing_name}, I know, I know",
    ],
    "child": [
        "My {crel} {child} is {cage} now and thinks {cshe} knows everything.",
        "{child}, my {crel}, turned {cage} last week, we had cake",
        "can't believe my {crel} {childlower} is {cage} already",
        "Took my {crel} {child} swimming, not bad for a {cage} year old.",
    ],
    "age": [
        "I'm turning {age} on Friday, trying not to think about it.",
        "Turned {age} yesterday, feel ancient.",
        "being {age} means my knees hurt after running, who knew",
        "I'm {age} and I still can't cook rice",
    ],
}


def _split_of(i: int) -> str:
    return "train" if i % 2 == 0 else "dev"


# Question cores per slot: `ask` direct forms, `past` forms about what they said, `emb` embedded
# clauses ("what my dog's called"); each list alternates train/dev by index.
SLOTS = {
    "pet_name": {"ask": ["what's my {kind} called?", "what's my {kind}'s name?", "what do we call the {kind}?",
                         "what is the {kind} called?"],
                 "past": ["what did i say my {kind} is called", "what did i tell u my {kind}'s name was",
                          "what's the name i told you for my {kind}", "what did i say the {kind}'s name is"],
                 "emb": ["what my {kind} is called", "what my {kind}'s name is", "what the {kind}'s called",
                         "what our {kind}'s name is"],
                 "expect": lambda w: [w["pet"]["name"]], "fact": "pet"},
    "pet_breed": {"ask": ["what breed is {pet}?", "what kind of {kind} is {pet}?", "what type of {kind} is {pet}?",
                          "what breed is my {kind}?"],
                  "past": ["what breed did i say {pet} is", "what kind of {kind} did i tell u {pet} is",
                           "what breed did i say my {kind} was", "what sort of {kind} did i say {pet} is"],
                  "emb": ["what breed {pet} is", "what kind of {kind} {pet} is", "what breed my {kind} is",
                          "what sort of {kind} {pet} is"],
                  "expect": lambda w: [w["pet"]["breed"]], "fact": "pet"},
    "person_name": {"ask": ["what's my {rel}'s name?", "who's my {rel}?", "what is my {rel} called?",
                            "what's my {rel} called again?"],
                    "past": ["what did i say my {rel}'s name was", "who did i say my {rel} is",
                             "what name did i tell u for my {rel}", "what did i tell you my {rel} is called"],
                    "emb": ["what my {rel}'s name is", "what my {rel} is called", "who my {rel} is",
                            "my {rel}'s name"],
                    "expect": lambda w: [w["p1"]["name"]], "fact": "p1"},
    "person_city": {"ask": ["where does {p1} live?", "which city does my {rel} live in?",
                            "where does my {rel} live?", "what city is {p1} in?"],
                    "past": ["where did i say {p1} lives", "which city did i tell u my {rel} lives in",
                             "where did i say my {rel} lives", "what city did i say {p1} lives in"],
                    "emb": ["where {p1} lives", "which city my {rel} lives in", "where my {rel} lives",
                            "what city {p1} lives in"],
                    "expect": lambda w: [w["p1"]["city"]], "fact": "p1"},
    "person_job": {"ask": ["what does {p1} do for a living?", "what's my {rel}'s job?", "what does my {rel} do?",
                           "what's {p1}'s job?"],
                   "past": ["what did i say {p1} does for work", "what did i tell u my {rel}'s job is",
                            "what did i say my {rel} does", "what job did i say {p1} has"],
                   "emb": ["what {p1} does for a living", "what my {rel}'s job is", "what my {rel} does",
                           "what {p1} does for work"],
                   "expect": lambda w: [w["p1"]["job"]], "fact": "p1"},
    "trip_city": {"ask": ["which city am i flying to?", "where am i going in {country}?",
                          "what city am i going to?", "which city in {country} am i visiting?"],
                  "past": ["which city did i say i'm flying to", "where did i tell u i'm going in {country}",
                           "what city did i say i'm going to", "which city in {country} did i say"],
                  "emb": ["which city i'm flying to", "where in {country} i'm going", "what city i'm going to",
                          "which city i'm visiting"],
                  "expect": lambda w: [w["trip"]["city"]], "fact": "trip"},
    "trip_date": {"ask": ["when am i flying to {city}?", "what date is my flight?", "when's my trip to {city}?",
                          "what day do i fly to {city}?"],
                  "past": ["when did i say i'm flying to {city}", "what date did i tell u my flight was",
                           "when did i say the trip to {city} is", "what day did i say i fly"],
                  "emb": ["when i'm flying to {city}", "what date my flight is", "when my trip to {city} is",
                          "what day i fly"],
                  "expect": lambda w: _date_forms(w["trip"])[1], "fact": "trip"},
    "event_owner": {"ask": ["whose {event} am i going to?", "who's having the {event}?",
                            "whose {event} is it again?", "who is the {event} for?"],
                    "past": ["whose {event} did i say i'm going to", "who did i tell u is having the {event}",
                             "whose {event} did i say it was", "who did i say the {event} is for"],
                    "emb": ["whose {event} i'm going to", "who's having the {event}", "whose {event} it is",
                            "who the {event} is for"],
                    "expect": lambda w: [w["owner"]["name"]], "fact": "owner"},
    "appt_time": {"ask": ["when is my {appt} appointment?", "what time is the {appt}?",
                          "when's the {appt}?", "what time's my {appt} appointment?"],
                  "past": ["when did i say the {appt} was", "what time did i tell u the {appt} is",
                           "when did i say my {appt} appointment is", "what time did i say for the {appt}"],
                  "emb": ["when my {appt} appointment is", "what time the {appt} is", "when the {appt} is",
                          "what time my {appt} appointment is"],
                  "expect": lambda w: _clock(w["appt"])[1] + [w["appt"]["weekday"]], "fact": "appt"},
    "own_job": {"ask": ["what do i do for a living?", "what's my job?", "what do i do for work?",
                        "what's my job again?"],
                "past": ["what did i say i do for a living", "what did i tell u my job is",
                         "what did i say i do for work", "what job did i tell you i have"],
                "emb": ["what i do for a living", "what my job is", "what i do for work", "what my job is"],
                "expect": lambda w: [w["me"]["job"]], "fact": "me"},
    "home_city": {"ask": ["which city do i live in?", "where do i live?", "what city am i in?",
                          "where do i live again?"],
                  "past": ["which city did i say i live in", "where did i tell u i live",
                           "what city did i say i'm in", "where did i say i live"],
                  "emb": ["which city i live in", "where i live", "what city i live in", "where i live"],
                  "expect": lambda w: [w["me"]["home"]], "fact": "home"},
    "thing_name": {"ask": ["what's my {thing} called?", "what's the name of my {thing}?",
                           "what is our {thing} called?", "what's the {thing} called again?"],
                   "past": ["what did i say my {thing} is called", "what did i tell u the {thing}'s name is",
                            "what did i say our {thing} was called", "what name did i say for the {thing}"],
                   "emb": ["what my {thing} is called", "what the {thing}'s name is", "what our {thing} is called",
                           "the name of my {thing}"],
                   "expect": lambda w: [w["thing"]["name"]], "fact": "thing"},
    "child_age": {"ask": ["how old is my {crel}?", "how old is {child}?", "how old is my {crel} now?",
                          "what age is {child}?"],
                  "past": ["how old did i say my {crel} is", "how old did i tell u {child} is",
                           "what age did i say my {crel} is", "how old did i say {child} was"],
                  "emb": ["how old my {crel} is", "how old {child} is", "what age my {crel} is",
                          "how old {child} is now"],
                  "expect": lambda w: [str(w["child"]["age"])], "fact": "child"},
    "own_age": {"ask": ["how old am i?", "how old am i turning?", "what age am i?", "how old am i again?"],
                "past": ["how old did i say i am", "how old did i tell u i'm turning", "what age did i say i was",
                         "how old did i say i was"],
                "emb": ["how old i am", "how old i'm turning", "what age i am", "how old i am"],
                "expect": lambda w: [str(w["me"]["age"])], "fact": "age"},
}

# Phrasing families: how a core is said. Train families tune, dev families report.
FAMILIES = {
    "direct": ("train", lambda c, w, r: _cap(c["ask"])),
    "typo": ("train", lambda c, w, r: _typos(c["ask"], r)),
    "third_party": ("train", lambda c, w, r: r.choice([
        "{f} asked me {emb} and i totally blanked, what did i tell you?",
        "my mum was asking {emb}, remind me?",
        "{f} wants to know {emb}. i told you, right?"]).format(f=w["friend"], emb=c["emb"])),
    "remind_what": ("train", lambda c, w, r: r.choice([
        "can you remind me {emb}?", "remind me {emb}?", "could you remind me {emb} please"]).format(emb=c["emb"])),
    "which_one": ("dev", lambda c, w, r: r.choice([
        "{f} asked and i said something but wasn't sure... {past}? which one did i tell u?",
        "{f} asked me {emb} and i gave a vague answer, she wanted the exact one... which did i tell u?",
        "wait i told u {emb} right? which one was it"]).format(f=w["friend"], emb=c["emb"], past=c["past"])),
    "testing": ("dev", lambda c, w, r: r.choice([
        "random q, {past}? testing u", "ok pop quiz: {past}?", "let's see if u remember... {past}?",
        "testing your memory lol, {past}?"]).format(past=c["past"])),
    "story": ("dev", lambda c, w, r: r.choice([
        "So I was on the phone with {f} for ages and we got onto all sorts, and then I completely blanked. {past}?",
        "bumped into an old friend at the shops and we were catching up and i realised i couldn't remember, "
        "{past}?",
        "Long story but {f} and I were arguing about it over lunch. {Past}?"]).format(
            f=w["friend"], past=c["past"], Past=_cap(c["past"]))),
    "did_i_say": ("dev", lambda c, w, r: r.choice([
        "did i ever tell u {emb}?", "do u remember {emb}?", "did I mention {emb}?"]).format(emb=c["emb"])),
}
# The issue's own quoted trip form, as one more which_one wording for the trip city (dev)
TRIP_WHICH = "{f} asked where im going and i said {country} but she wanted the city... which one did i tell u?"


def _a(noun: str) -> str:
    return ("an " if noun[:1] in "aeiou" else "a ") + noun


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


_SLANG = [(r"\byou\b", "u"), (r"\byour\b", "ur"), (r"\bwhat's\b", "whats"), (r"\bwhat\b", "wat"),
          (r"\bi'm\b", "im"), (r"\bdoes\b", "dose"), (r"\bplease\b", "pls")]


def _typos(text: str, rnd: random.Random) -> str:
    """Lowercase, slang, dropped apostrophes and question mark, one swapped letter pair in a
    filler word (never in a name or the slot's noun)."""
    t = text.lower()
    for pat, rep in _SLANG:
        if rnd.random() < 0.6:
            t = re.sub(pat, rep, t)
    t = t.replace("'", "") if rnd.random() < 0.5 else t
    words = t.rstrip("?").split()
    fillers = [i for i, w in enumerate(words) if w in ("again", "called", "live", "going", "does", "living", "where")]
    if fillers:
        i = rnd.choice(fillers)
        w = words[i]
        j = rnd.randrange(len(w) - 1)
        words[i] = w[:j] + w[j + 1] + w[j] + w[j + 2:]
    tail = rnd.choice(["", " lol", " again", "??", " haha"])
    return " ".join(words) + tail


def _fill(template: str, w: dict) -> str:
    p1, pet, child = w["p1"], w["pet"], w["child"]
    date_said, _ = _date_forms(w["trip"])
    clock, _ = _clock(w["appt"])
    return template.format(
        kind=pet["kind"], pet=pet["name"], breed=pet["breed"], pet_cap_pron="He",
        p1she=p1["she"], P1she=p1["she"].capitalize(), cshe=child["she"],
        rel=p1["rel"], p1=p1["name"], p1lower=p1["name"].lower(), p1city=p1["city"], p1job=p1["job"],
        rel2=w["p2"]["rel"], p2=w["p2"]["name"], p2lower=w["p2"]["name"].lower(),
        country=w["trip"]["country"], city=w["trip"]["city"], month=w["trip"]["month"],
        date=date_said[w["_date_form"]], owner=w["owner"]["name"], event=w["owner"]["event"],
        appt=w["appt"]["what"], weekday=w["appt"]["weekday"], clock=clock,
        job=w["me"]["job"], a_job=_a(w["me"]["job"]), a_p1job=_a(p1["job"]), home=w["me"]["home"], age=w["me"]["age"],
        thing=w["thing"]["what"], thing_name=w["thing"]["name"],
        crel=child["rel"], child=child["name"], childlower=child["name"].lower(), cage=child["age"])


def _never_told(w: dict, rnd: random.Random, split: str) -> list[dict]:
    """Questions in the same shapes about something never told: the second person's city and
    job, a relation never mentioned, the pet's age, the participant's birthday."""
    p2, ab = w["p2"], w["absent_rel"]
    forms = [
        (f"where does {p2['name']} live?", f"where {p2['name']} lives"),
        (f"random q, what did i say {p2['name']} does for work? testing u", f"what {p2['name']} does"),
        (f"what's my {ab}'s name?", f"the {ab}'s name"),
        (f"did i ever tell u where my {ab} lives?", f"where the {ab} lives"),
        (f"how old is {w['pet']['name']}?", "the pet's age"),
        (f"{w['friend']} asked when my birthday is and i forgot lol, what did i tell u?", "their birthday"),
        (f"which city does my {ab} live in", f"where the {ab} lives"),
        (f"whats my {w['p2']['rel']}s job again", f"the {w['p2']['rel']}'s job"),
    ]
    keep = [f for i, f in enumerate(forms) if _split_of(i) == split]
    return [{"text": q, "unknown": what, "family": "never_told", "slot": "never_told"} for q, what in keep]


def _action_questions(w: dict, rnd: random.Random, split: str) -> list[dict]:
    p1, appt = w["p1"], w["appt"]
    forms = [
        f"Can you remind me to call {p1['name']} on Friday at 6pm?",
        f"could u remind me about the {appt['what']} on {appt['weekday']} morning?",
        f"can you remind me to buy {w['pet']['kind']} food tomorrow at 5pm?",
        f"Can you remind me to pack for {w['trip']['city']} on Thursday at 7pm?",
        f"hey can you remind me to send {w['owner']['name']} a card tomorrow?",
        f"would you remind me to water the plants on Sunday at 10am?",
    ]
    keep = [f for i, f in enumerate(forms) if _split_of(i) == split]
    return [{"text": q, "action": "set_reminder", "family": "action_question", "slot": "action"} for q in keep]


def _timeline(steps: list[dict], start: str, rnd: random.Random) -> list[dict]:
    """The steps as timed turns: from 08:00 on `start`, 2-40 minutes apart, six turns a day."""
    from datetime import datetime, timedelta

    turns, t = [], datetime.fromisoformat(f"{start}T08:00")
    for i, step in enumerate(steps):
        if i and i % 6 == 0:
            t = t.replace(hour=8, minute=0) + timedelta(days=1)
        turns.append({"at": t.strftime("%Y-%m-%dT%H:%M"), **step})
        t += timedelta(minutes=rnd.randint(2, 40))
    return turns


def script(seed: int, split: str, start: str = "2026-03-02") -> dict:
    """One world's week as a bench chat script: its facts told in passing (statement wordings of
    the split) among small talk, then every slot x every family of the split, the never-told
    questions and the action requests worded as questions, in a seeded order."""

    if split not in ("train", "dev"):
        raise ValueError(f"split must be 'train' or 'dev', got {split!r}")
    rnd = random.Random(f"{VERSION}:{split}:{seed}")
    w = world(rnd)
    w["_date_form"] = rnd.randrange(3)
    told = []
    for fact, forms in STATEMENTS.items():
        mine = [f for i, f in enumerate(forms) if _split_of(i) == split]
        told.append({"text": _fill(rnd.choice(mine), w), "fact": fact})
    talk = told + [{"text": t} for t in rnd.sample(FILLER, 5)]
    rnd.shuffle(talk)
    questions = []
    fams = [f for f, (s, _) in FAMILIES.items() if s == split]
    for slot, core in SLOTS.items():
        for fam in fams:
            pick = {k: _fill(rnd.choice([x for i, x in enumerate(core[k]) if _split_of(i) == split]), w)
                    for k in ("ask", "past", "emb")}
            pick["ask"] = pick["ask"]
            text = FAMILIES[fam][1](pick, w, rnd)
            if slot == "trip_city" and fam == "which_one":
                text = TRIP_WHICH.format(f=w["friend"], country=w["trip"]["country"])
            expected = core["expect"](w)
            assert not any(re.search(rf"\b{re.escape(e.lower())}\b", text.lower()) for e in expected), (text, expected)
            questions.append({"text": text, "recall": expected, "family": fam, "slot": slot})
    questions += _never_told(w, rnd, split) + _action_questions(w, rnd, split)
    rnd.shuffle(questions)
    turns = _timeline(talk + questions, start, rnd)
    return {"version": f"{VERSION}-{split}-{seed}",
            "why": "Generated by eval/recallgen.py: facts told in passing, then everyday recall questions "
                   f"(families of the {split} split), never-told questions and reminder requests worded as questions.",
            "participant": f"gen-{split}-{seed}", "tz": "Europe/London", "context": "personal", "turns": turns}


# ---------------------------------------------------------------- second classes (recallgen-v2)
#
# Issue 25 again, on a week by another author: recall right 5/11, never-told honest 1/3 (a fact
# of the wrong slot or the wrong person instead). The classes that failed: facts told inside long
# multi-topic messages; people reached through possessives and relations ("my sister's husband",
# "Dani's sister"); "who is X?" (the answer is a relation); "what did I say about X?"; things with
# names (a company, a team) and where an activity happens; food; how many; and never-told
# questions whose slot is held by another person, or whose person is told with another slot.
# Same shape as above: a world, statement wordings split train/dev by index, question cores per
# slot, asked in the phrasing families of the split (plus two more below), never-told forms.

PARTNERS = {"husband": "he", "wife": "she", "partner": "they", "boyfriend": "he", "girlfriend": "she"}
KIN = ["sister", "brother", "mum", "dad", "cousin"]
PROJECTS = ["building a treehouse", "training for a marathon", "learning the cello", "restoring an old van",
            "writing a cookbook"]
COMPANIES = [("firm", "Halden & Roe"), ("company", "Brightwater"), ("agency", "Calder Studio"),
             ("company", "Northgate Labs"), ("firm", "Fennick and Sons"), ("charity", "Open Doors")]
ACTIVITIES = [("climbing", "gym"), ("swimming", "pool"), ("pottery", "studio"), ("boxing", "gym"),
              ("yoga", "studio"), ("five-a-side", "pitch")]
STREETS = ["Stokes Croft", "Gloucester Road", "Canal Street", "Mill Lane", "Harbourside", "Elm Park"]
DISHES = [("Moroccan", "lamb tagine"), ("Thai", "pad thai"), ("Italian", "mushroom risotto"),
          ("Korean", "bibimbap"), ("Vietnamese", "pho"), ("Spanish", "paella"), ("Nigerian", "jollof rice")]
COUNTED = [("chickens", "hens"), ("plants", "plants"), ("bikes", "bikes"), ("guitars", "guitars")]
NUMBER_WORDS = ["zero", "one", "two", "three", "four", "five", "six", "seven", "eight", "nine"]
LEADS = ["Long message incoming, sorry. ", "Ok so, update on everything. ", "Right, where do I start. ", ""]
JOINS = [" Oh and ", " Also, ", " Anyway. ", " Then ", " Other news: "]


def world2(rnd: random.Random) -> dict:
    w = world(rnd)
    used = {w["p1"]["name"], w["p2"]["name"], w["owner"]["name"], w["child"]["name"], w["other_name"]}
    free = [n for n in PEOPLE_NAMES if n not in used]
    n = rnd.sample(free, 4)
    prel = rnd.choice(sorted(PARTNERS))
    kin = rnd.choice(KIN)
    word, company = rnd.choice(COMPANIES)
    act, venue = rnd.choice(ACTIVITIES)
    cuisine, dish = rnd.choice(DISHES)
    counted, _ = rnd.choice(COUNTED)
    w.update({
        "inlaw": {"rel": prel, "she": PARTNERS[prel], "name": n[0], "doing": rnd.choice(PROJECTS)},
        "third": {"name": n[1], "rel": kin, "rname": n[2], "role": rnd.choice(["writes the quiz questions",
                                                                               "runs the bakery on the corner",
                                                                               "plays drums in a band"])},
        "work": {"word": word, "company": company},
        "activity": {"what": act, "venue": venue, "street": rnd.choice(STREETS)},
        "food": {"cuisine": cuisine, "dish": dish},
        "count": {"what": counted, "n": rnd.randint(2, 6)},
        "stranger": n[3],  # named nowhere: never told
    })
    return w


STATEMENTS2 = {
    "inlaw": [
        "my {rel} {p1} called, and {p1her} {prel} {inlaw} is apparently {doing}, which is very on brand",
        "{p1} (my {rel}) says {p1her} {prel}, {inlaw}, is {doing} now.",
        "Dinner at my {rel}'s: {p1}'s {prel} {inlaw} talked about {doing} all night.",
        "My {rel}'s {prel} is called {inlaw} and he's {doing}, no idea how he finds the time.",
    ],
    "third": [
        "{third} from work invited me out. {third}'s {krel} {tname} {role}, small world.",
        "Met {tname} yesterday, {third}'s {krel}. {tsubj} {role}.",
        "{third} told me {third_her} {krel} {tname} {role}",
        "turns out {tname} is {third}'s {krel}!! {tsubj} {role}",
    ],
    "work": [
        "Started at a {cword} called {company} last month, mostly spreadsheets so far.",
        "I'm at {company} now, it's a small {cword} but I like it.",
        "work at {company} was chaos today, three meetings about one email",
        "Signed the contract with {company}, so that's where I work from Monday!",
    ],
    "activity": [
        "I finally joined the {act} {venue} on {street}, first session Wednesday.",
        "{act} on {street} again tonight, my arms are jelly",
        "The {venue} on {street} where I do {act} has new owners.",
        "went {act} after work, the place on {street} was packed",
    ],
    "food": [
        "Had lunch at a little {cuisine} place, the {dish} was so good it's my new favourite thing to eat.",
        "{dish} is my favourite food, I could eat it every day",
        "Made {dish} tonight, honestly my favourite dish in the world.",
        "my all-time favourite meal? {dish}, no contest",
    ],
    "count": [
        "We've got {n} {what} now, don't ask how that happened.",
        "counting my {what} again: {n}. That's plenty.",
        "Now that we have {n_word} {what} the house is chaos.",
        "I own {n} {what}, which my mum thinks is too many",
    ],
}

SLOTS2 = {
    "inlaw_name": {"ask": ["what's my {rel}'s {prel} called?", "what's the name of my {rel}'s {prel}?",
                           "who is my {rel}'s {prel}?", "what is my {rel}'s {prel}'s name?"],
                   "past": ["what did i say my {rel}'s {prel} is called", "who did i say my {rel}'s {prel} is",
                            "what name did i give for my {rel}'s {prel}", "what did i tell u {p1}'s {prel} is called"],
                   "emb": ["what my {rel}'s {prel} is called", "who my {rel}'s {prel} is",
                           "the name of my {rel}'s {prel}", "what {p1}'s {prel} is called"],
                   "expect": lambda w: [w["inlaw"]["name"]], "fact": "inlaw"},
    "inlaw_doing": {"ask": ["what's {inlaw} up to these days?", "what is {inlaw} doing?",
                            "what's my {rel}'s {prel} doing at the moment?", "what's {inlaw} busy with?"],
                    "past": ["what did i say {inlaw} is doing", "what did i tell u {inlaw} was up to",
                             "what did i say my {rel}'s {prel} is doing", "what did i say about {inlaw}"],
                    "emb": ["what {inlaw} is doing", "what {inlaw} is up to", "what my {rel}'s {prel} is doing",
                            "what {inlaw} is busy with"],
                    "expect": lambda w: [w["inlaw"]["doing"].split()[0], w["inlaw"]["doing"].split()[-1]],
                    "fact": "inlaw"},
    "third_rel_name": {"ask": ["what's {third}'s {krel} called?", "what's the name of {third}'s {krel}?",
                               "who is {third}'s {krel}?", "what is {third}'s {krel}'s name?"],
                       "past": ["what did i say {third}'s {krel} is called", "who did i say {third}'s {krel} is",
                                "what name did i say {third}'s {krel} has", "what did i tell u {third}'s {krel}'s name was"],
                       "emb": ["what {third}'s {krel} is called", "who {third}'s {krel} is",
                               "the name of {third}'s {krel}", "what {third}'s {krel}'s name is"],
                       "expect": lambda w: [w["third"]["rname"]], "fact": "third"},
    "who_is": {"ask": ["who is {tname}?", "who's {tname} again?", "who is {tname} again?", "who's {tname}?"],
               "past": ["who did i say {tname} is", "who did i tell u {tname} was", "who did i say {tname} was",
                        "what did i say about {tname}"],
               "emb": ["who {tname} is", "who {tname} was", "who {tname} is again", "who {tname} is exactly"],
               "expect": lambda w: [f"{w['third']['name']}'s {w['third']['rel']}"], "fact": "third"},
    "workplace": {"ask": ["what's the name of the {cword} i work for?", "where do i work?",
                          "what was the name of the company i work at?", "who do i work for?"],
                  "past": ["where did i say i work", "what did i say my {cword} is called",
                           "which company did i say i work for", "what did i tell u the {cword} is called"],
                  "emb": ["where i work", "what my {cword} is called", "which company i work for",
                          "the name of the place i work"],
                  # one wording of the job says "at the hospital": also a right answer to where they work
                  "expect": lambda w: [w["work"]["company"], "the hospital"], "fact": "work"},
    "activity_place": {"ask": ["where do i go {act}?", "where's the {act} {venue}?", "where do i do {act}?",
                               "which street is my {act} {venue} on?"],
                       "past": ["where did i say i go {act}", "where did i tell u the {venue} is",
                                "where did i say i do {act}", "which street did i say the {venue} is on"],
                       "emb": ["where i go {act}", "where the {act} {venue} is", "where i do {act}",
                               "which street the {venue} is on"],
                       "expect": lambda w: [w["activity"]["street"]], "fact": "activity"},
    "food": {"ask": ["what's my favourite food?", "what's my favourite dish?", "what food do i love?",
                     "what's my favourite thing to eat?"],
             "past": ["what did i say my favourite food is", "what did i tell u my favourite dish was",
                      "what did i say i love eating", "what did i say about {dish_word}"],
             "emb": ["what my favourite food is", "what my favourite dish is", "what food i love",
                     "my favourite thing to eat"],
             "expect": lambda w: [w["food"]["dish"].split()[-1]], "fact": "food"},
    "count": {"ask": ["how many {what} do i have?", "how many {what} have we got?", "how many {what} do we have?",
                      "how many {what} did i say?"],
              "past": ["how many {what} did i say i have", "how many {what} did i tell u we've got",
                       "how many {what} did i say we have", "how many {what} did i mention"],
              "emb": ["how many {what} i have", "how many {what} we've got", "how many {what} we have",
                      "how many {what} i own"],
              "expect": lambda w: [str(w["count"]["n"]), NUMBER_WORDS[w["count"]["n"]]], "fact": "count"},
}

# Two more phrasing families for every core (both sets of slots): one per split.
FAMILIES2 = {
    "forgot": ("train", lambda c, w, r: r.choice([
        "{Ask} I forgot", "sorry, brain fog, {ask}", "{Ask} my head is empty today"]).format(
            ask=c["ask"], Ask=_cap(c["ask"]))),
    "remember": ("dev", lambda c, w, r: r.choice([
        "do you remember {emb}?", "you remember {emb}, right?", "do you happen to remember {emb}?"]).format(
            emb=c["emb"])),
}


def _fill2(template: str, w: dict) -> str:
    p1, inl, th = w["p1"], w["inlaw"], w["third"]
    her = {"he": "his", "she": "her"}.get(p1["she"], "their")
    tsubj = {"sister": "She", "mum": "She", "brother": "He", "dad": "He"}.get(th["rel"], "They")
    out = template
    for k, v in {"{p1her}": her, "{prel}": inl["rel"], "{inlaw}": inl["name"], "{doing}": inl["doing"],
                 "{third}": th["name"], "{krel}": th["rel"], "{tname}": th["rname"], "{role}": th["role"],
                 "{tsubj}": tsubj, "{third_her}": "his" if th["name"] in ("Tomas", "Yusuf", "Kofi", "Mateo") else "her",
                 "{cword}": w["work"]["word"], "{company}": w["work"]["company"],
                 "{act}": w["activity"]["what"], "{venue}": w["activity"]["venue"], "{street}": w["activity"]["street"],
                 "{cuisine}": w["food"]["cuisine"], "{dish}": w["food"]["dish"],
                 "{dish_word}": f"the {w['food']['cuisine']} place", "{what}": w["count"]["what"],
                 "{n}": str(w["count"]["n"]), "{n_word}": NUMBER_WORDS[w["count"]["n"]],
                 "{stranger}": w["stranger"]}.items():
        out = out.replace(k, v)
    return _fill(out, w)


def _never_told2(w: dict, split: str) -> list[dict]:
    """Never told, where a wrong answer is at hand: another person holds the slot asked, or the
    person asked about is told with another slot, or the relation asked is someone else's."""
    p1, inl, th = w["p1"], w["inlaw"], w["third"]
    forms = [
        (f"where does {inl['name']} work?", f"where {inl['name']} works"),
        (f"how old is {th['name']}?", f"{th['name']}'s age"),
        (f"what's {th['rname']}'s job?", f"{th['rname']}'s job"),
        (f"where does my {w['p2']['rel']} live?", "the second person's city"),
        (f"what's {th['name']}'s {w['pet']['kind']} called?", f"{th['name']}'s pet"),
        (f"do you remember where {w['stranger']} lives?", f"{w['stranger']} (never named)"),
        (f"what's my {w['absent_rel']}'s {inl['rel']} called?", "an absent relation's partner"),
        (f"what does {inl['name']} do for a living?", f"{inl['name']}'s job"),
        (f"which city is {th['name']} from?", f"{th['name']}'s city"),
        (f"how many {w['count']['what']} does {p1['name']} have?", f"{p1['name']}'s count"),
    ]
    keep = [f for i, f in enumerate(forms) if _split_of(i) == split]
    return [{"text": q, "unknown": what, "family": "never_told2", "slot": "never_told"} for q, what in keep]


def script2(seed: int, split: str, start: str = "2026-03-02") -> dict:
    """A recallgen-v2 world's week: every fact (both sets) told in statement wordings of the split,
    two or three at a time in long multi-topic messages among small talk; then every slot of both
    sets x every phrasing family of the split (FAMILIES and FAMILIES2), and the never-told forms."""

    if split not in ("train", "dev"):
        raise ValueError(f"split must be 'train' or 'dev', got {split!r}")
    rnd = random.Random(f"recallgen-v2:{split}:{seed}")
    w = world2(rnd)
    w["_date_form"] = rnd.randrange(3)
    said = []
    for table in (STATEMENTS, STATEMENTS2):
        for fact, forms in table.items():
            mine = [f for i, f in enumerate(forms) if _split_of(i) == split]
            said.append(_fill2(rnd.choice(mine), w))
    rnd.shuffle(said)
    talk, i = [], 0
    while i < len(said):  # two or three facts per message, joined as people run on
        k = rnd.choice([1, 2, 3, 3])
        parts = said[i:i + k]
        i += k
        text = rnd.choice(LEADS) + parts[0].rstrip(".!") + "."
        for p in parts[1:]:
            text += rnd.choice(JOINS) + p[:1].lower() + p[1:].rstrip(".!") + "."
        talk.append({"text": text.strip()})
    talk += [{"text": t} for t in rnd.sample(FILLER, 4)]
    rnd.shuffle(talk)
    fams = {**{f: v for f, v in FAMILIES.items() if v[0] == split}, **{f: v for f, v in FAMILIES2.items() if v[0] == split}}
    questions = []
    for slot, core in {**SLOTS, **SLOTS2}.items():
        for fam, (_, make) in fams.items():
            pick = {k: _fill2(rnd.choice([x for j, x in enumerate(core[k]) if _split_of(j) == split]), w)
                    for k in ("ask", "past", "emb")}
            text = make(pick, w, rnd)
            expected = core["expect"](w)
            if any(re.search(rf"\b{re.escape(e.lower())}\b", text.lower()) for e in expected):
                continue  # the question holds its own answer ("what did i say about the pho?")
            questions.append({"text": text, "recall": expected, "family": fam, "slot": slot})
    questions += _never_told2(w, split)
    rnd.shuffle(questions)
    turns = _timeline(talk + questions, start, rnd)
    return {"version": f"recallgen-v2-{split}-{seed}",
            "why": "Generated by eval/recallgen.py (v2 classes): facts told two or three to a message, through "
                   f"possessives and relations; recall questions in the {split} families; never-told questions "
                   "whose slot another person holds.",
            "participant": f"gen2-{split}-{seed}", "tz": "Europe/London", "context": "personal", "turns": turns}


# ---------------------------------------------------------------- others' styles (recallgen-v3)
#
# Issue 25 a third time, on a 36-turn week by another author: recall right 3/12, the right
# statement retrieved for 6/12. Half the misses were retrieval (the question's words are not the
# statement's: "what's the name of the café where I meet Jo?" against "we always end up at Little
# Bean"), half answer formation (the slot asked is not read from the statement found, or the
# question's form is not recognised). Their facts come in passing, inside long messages about
# several things, through possessives and relations, and are corrected later ("actually she
# moved to Leeds"); their questions are indirect ("I forgot what ...", "remind me ...", "the
# name of ..."), ask when, how long or which, or are yes/no ("did I tell you ...?").
#
# Splits here are `train` (tune) and `test` (held out: report only). They differ in the
# statement wordings, the question cores' wordings and the phrasing families, not in fillers.

CAFES = ["Little Bean", "The Daily Grind", "Corner Cup", "Bluebird", "The Copper Kettle", "Steam Room",
         "Blackbird Coffee", "Pip's"]
MEETERS = ["Jo", "Alex", "Priti", "Dom", "Fran", "Sol", "Bea", "Rory"]
LEARNING = ["Spanish", "the piano", "Japanese", "salsa", "the guitar", "Italian", "pottery", "Welsh"]
GYMS = ["Iron Works", "The Foundry", "Peak Fitness", "Pulse", "Anytime Fit"]

STATEMENTS3 = {  # (fact): wordings alternating train/test by index
    "cafe": [
        "Met {meet} for coffee, we always end up at {cafe}, the flat whites there are unreal",
        "Coffee with {meet} again this morning. {cafe} never disappoints.",
        "{meet} and I did our usual catch-up at {cafe}, two hours gone just like that",
        "{cafe} was rammed when {meet} and I got there, but we found a corner table like always",
        "Caught up with {meet} this afternoon, finally. We went to {cafe} as usual, best coffee in town.",
    ],
    "learning": [
        "I've been learning {lang} for {dur_word} years now and I'm still rubbish lol",
        "{dur} years into {lang} and I can finally get through a whole song",
        "started {lang} {dur_word} years ago and honestly it's the best thing I do all week",
        "Been doing {lang} for {dur} years, my teacher says I'm improving, I'm not so sure",
    ],
    "move_old": [
        "my {rel} {p1} lives in {oldcity}, so I don't see {p1her} much",
        "{p1}, my {rel}, is in {oldcity} these days",
        "Visiting my {rel} {p1} in {oldcity} soon, can't wait",
        "{p1} (my {rel}) has a tiny flat in {oldcity}",
    ],
    "move_new": [
        "actually {p1she} moved to {p1city} last month, I keep forgetting",
        "oh correction on {p1}: {p1she}'s not in {oldcity} anymore, {p1she} lives in {p1city} now",
        "Update: {p1} has moved to {p1city}! New job and everything.",
        "so {p1} packed up and moved to {p1city}, the {oldcity} flat is gone",
        "{p1} left {oldcity} in the end, {p1she}'s living in {p1city} now",
    ],
    "event": [
        "{owner}'s {event} is on {eweekday} the {eday}, I still need a present",
        "Got the date for {owner}'s {event}: {eweekday} {eday}. Need to book a train.",
        "Can't believe {owner}'s {event} is this {eweekday}, the {eday}, already",
        "{owner} finally sent the invites, the {event} is {eweekday} the {eday}",
    ],
    "inlaw": [
        "My partner's mum {inlaw} is coming to stay next week, pray for me",
        "Dinner with {inlaw}, my partner's mum, she brought far too much food",
        "my partner's mum is called {inlaw} and she's lovely but very opinionated",
        "{inlaw} (my partner's mum) rang twice today about christmas",
    ],
    "pet": [
        "the {kind} is sulking. {pet} is such a diva about the rain, typical {breed}",
        "{pet} my {kind} just stole a whole sausage off the counter, {breed}s are so food obsessed",
        "Our {breed} {pet} has decided the sofa is hers now",
        "sorry, {pet} was going mad at the postman again. {breed}s, honestly",
    ],
    "work": [
        "Work at {company} was a slog today, mostly spreadsheets",
        "The commute to {company} is killing me, two trains and a bus",
        "my boss at {company} wants the report by friday, great",
        "{company} is doing a team away day, forced fun",
    ],
    "gym": [
        "Went to {gym} after work, best workout in ages",
        "Signed up at {gym}, the one by the station",
        "{gym} was heaving tonight, I could barely get a bench",
        "Back at {gym} after a week off, felt good",
    ],
    "appt": [
        "The {appt}'s booked for {weekday} at {clock}, yay",
        "ugh {appt} {weekday} {clock}, can't move it",
        "Got a {appt} slot for {weekday} at {clock}.",
        "{weekday} is {appt} day, {clock}, wish me luck",
    ],
}

SLOTS3 = {
    "venue_name": {"ask": ["what's the name of the café where I meet {meet}?", "which café do {meet} and I go to?",
                           "where do {meet} and I usually get coffee?", "what's the coffee place {meet} and I like called?"],
                   "emb": ["the name of the café where I meet {meet}", "which café {meet} and I go to",
                           "where {meet} and I usually have coffee", "what the coffee place {meet} and I go to is called"],
                   "expect": lambda w: _bare(w["cafe"]["name"])},
    "duration": {"ask": ["how long have I been learning {lang}?", "how many years have I been doing {lang}?",
                         "how long have I been doing {lang} for?", "how many years have I been learning {lang} now?",
                         "how many years have I spent on {lang}?"],
                 "emb": ["how long I've been learning {lang}", "how many years I've been doing {lang}",
                         "how long I've been doing {lang}", "how many years I've been learning {lang}",
                         "how many years I've spent on {lang}"],
                 "expect": lambda w: [str(w["learning"]["years"]), NUMBER_WORDS[w["learning"]["years"]]]},
    "moved_city": {"ask": ["where does {p1} live now?", "which city is my {rel} in?", "where's {p1} living these days?",
                           "what city does my {rel} live in?"],
                   "emb": ["where {p1} lives now", "which city my {rel} is in", "where {p1} is living these days",
                           "what city my {rel} lives in"],
                   "expect": lambda w: [w["p1"]["city"]], "stale": lambda w: [w["oldcity"]]},
    "event_date": {"ask": ["when is {owner}'s {event}?", "what day is {owner}'s {event}?", "when's the {event}?",
                           "which day is {owner}'s {event} on?"],
                   "emb": ["when {owner}'s {event} is", "what day {owner}'s {event} is", "when the {event} is",
                           "which day the {event} is on"],
                   "expect": lambda w: [w["ev"]["weekday"], _ordinal(w["ev"]["day"])]},
    "inlaw_name": {"ask": ["what's my partner's mum called?", "what's the name of my partner's mum?",
                           "who's my partner's mum again?", "what is my partner's mum's name?"],
                   "emb": ["what my partner's mum is called", "the name of my partner's mum",
                           "who my partner's mum is", "what my partner's mum's name is"],
                   "expect": lambda w: [w["inlaw"]["name"]]},
    "pet_name": {"ask": ["what's my {kind} called?", "what's the name of my {kind}?", "what's our {kind}'s name?",
                         "what do we call the {kind}?"],
                 "emb": ["what my {kind} is called", "the name of my {kind}", "what our {kind}'s name is",
                         "what we call the {kind}"],
                 "expect": lambda w: [w["pet"]["name"]]},
    "pet_breed": {"ask": ["what breed is {pet}?", "which breed is my {kind}?", "what kind of {kind} is {pet}?",
                          "what sort of {kind} have I got?"],
                  "emb": ["what breed {pet} is", "which breed my {kind} is", "what kind of {kind} {pet} is",
                          "what sort of {kind} I've got"],
                  "expect": lambda w: [w["pet"]["breed"]]},
    "workplace": {"ask": ["where do I work?", "which company am I at?", "who do I work for?",
                          "what's the name of the company I work at?"],
                  "emb": ["where I work", "which company I'm at", "who I work for", "the name of the company I work at"],
                  "expect": lambda w: [w["work"]["company"]]},
    "gym_name": {"ask": ["which gym do I go to?", "what's the name of my gym?", "what's my gym called?",
                         "which gym did I sign up at?"],
                 "emb": ["which gym I go to", "the name of my gym", "what my gym is called", "which gym I signed up at"],
                 "expect": lambda w: _bare(w["gym"])},
    "appt_time": {"ask": ["when is my {appt}?", "what time is the {appt}?", "when's my {appt} appointment?",
                          "which day is the {appt}?"],
                  "emb": ["when my {appt} is", "what time the {appt} is", "when my {appt} appointment is",
                          "which day the {appt} is"],
                  "expect": lambda w: _clock(w["appt"])[1] + [w["appt"]["weekday"]]},
}

FAMILIES3 = {
    "forgot_what": ("train", lambda c, w, r: r.choice([
        "I forgot {emb}, sorry", "I can't remember {emb}", "i've totally forgotten {emb}"]).format(emb=c["emb"])),
    "remind_me": ("train", lambda c, w, r: r.choice([
        "remind me {emb}?", "can you remind me {emb}?", "remind me again {emb}"]).format(emb=c["emb"])),
    "did_i_tell": ("train", lambda c, w, r: r.choice([
        "did I tell you {emb}?", "did i mention {emb}?"]).format(emb=c["emb"])),
    "plain": ("train", lambda c, w, r: _cap(c["ask"])),
    "blank": ("test", lambda c, w, r: r.choice([
        "my mind's gone blank, {ask}", "for the life of me I can't recall {emb}",
        "brain's not working today... {ask}"]).format(ask=c["ask"], emb=c["emb"])),
    "have_i_said": ("test", lambda c, w, r: r.choice([
        "have I mentioned {emb}?", "did I ever say {emb} to you?", "have i told you {emb}?"]).format(emb=c["emb"])),
    "in_passing": ("test", lambda c, w, r: r.choice([
        "Busy morning, the boiler's playing up again. Anyway, {ask} It's gone right out of my head.",
        "Ok so the kids are finally asleep and I was thinking about the week. {Ask}",
        "Not much news, work is work. Quick one though: {ask}"]).format(ask=c["ask"], Ask=_cap(c["ask"]))),
    "sorry_again": ("test", lambda c, w, r: r.choice([
        "sorry to ask again but {ask}", "this is embarrassing but {emb}?", "sorry, {ask} I should know this"]).format(
            ask=c["ask"], emb=c["emb"])),
}


_STARTERS = {"my", "met", "coffee", "visiting", "got", "can't", "dinner", "our", "work", "went", "signed", "back",
             "the", "been", "started", "sorry", "i've", "ugh", "update:", "oh", "so", "actually"}


def _bare(name: str) -> list[str]:
    """A name, and without its article ("Daily Grind" is a right answer for "The Daily Grind")."""
    return [name] + ([name[4:]] if name.startswith("The ") else [])


def world3(rnd: random.Random) -> dict:
    w = world2(rnd)
    used = {w["p1"]["name"], w["p2"]["name"], w["owner"]["name"], w["child"]["name"], w["other_name"],
            w["inlaw"]["name"], w["third"]["name"], w["third"]["rname"], w["stranger"]}
    free = [n for n in PEOPLE_NAMES if n not in used]
    w["inlaw"]["name"] = rnd.choice(free)
    years = rnd.randint(2, 9)
    w.update({
        "cafe": {"name": rnd.choice(CAFES), "meet": rnd.choice(MEETERS)},
        "learning": {"what": rnd.choice(LEARNING), "years": years},
        "oldcity": rnd.choice([c for c in HOME_CITIES if c not in (w["p1"]["city"], w["me"]["home"])]),
        "ev": {"weekday": rnd.choice(WEEKDAYS), "day": rnd.randint(2, 28)},
        "gym": rnd.choice(GYMS),
        "absent_thing": rnd.choice(["book club", "choir", "allotment", "running club"]),
    })
    return w


def _fill3(template: str, w: dict) -> str:
    p1 = w["p1"]
    her = {"he": "him", "she": "her"}.get(p1["she"], "them")
    out = template
    for k, v in {"{meet}": w["cafe"]["meet"], "{cafe}": w["cafe"]["name"], "{lang}": w["learning"]["what"],
                 "{dur}": str(w["learning"]["years"]), "{dur_word}": NUMBER_WORDS[w["learning"]["years"]],
                 "{oldcity}": w["oldcity"], "{p1her}": her, "{eweekday}": w["ev"]["weekday"],
                 "{eday}": _ordinal(w["ev"]["day"]), "{gym}": w["gym"], "{inlaw}": w["inlaw"]["name"]}.items():
        out = out.replace(k, v)
    return _fill2(out, w)


def _never_told3(w: dict, split: str) -> list[dict]:
    """Never told, in the v3 question forms: a slot of someone named, a thing never mentioned, a
    duration never said, yes/no forms."""
    p2, cafe = w["p2"], w["cafe"]
    forms = [
        (f"did I tell you where {p2['name']} lives?", f"where {p2['name']} lives"),
        (f"what's the name of my {w['absent_thing']}?", f"the {w['absent_thing']}'s name"),
        (f"how long have I been at {w['work']['company']}?", "how long at work"),
        (f"I forgot when {p2['name']}'s birthday is", f"{p2['name']}'s birthday"),
        (f"remind me what {cafe['meet']} does for a living?", f"{cafe['meet']}'s job"),
        (f"have I mentioned how old {w['pet']['name']} is?", "the pet's age"),
        (f"which city does my {w['absent_rel']} live in?", f"the {w['absent_rel']}'s city"),
        (f"for the life of me I can't recall what my partner's dad is called", "the partner's dad"),
    ]
    keep = [f for i, f in enumerate(forms) if ("train" if i % 2 == 0 else "test") == split]
    return [{"text": q, "unknown": what, "family": "never_told3", "slot": "never_told"} for q, what in keep]


def script3(seed: int, split: str, start: str = "2026-03-02") -> dict:
    """A recallgen-v3 week: facts told in others' styles (in passing, two or three to a long message,
    through possessives, a city corrected later), then every v3 slot x every phrasing family of the
    split, and never-told questions. `split`: train or test."""
    if split not in ("train", "test"):
        raise ValueError(f"split must be 'train' or 'test', got {split!r}")
    rnd = random.Random(f"recallgen-v3:{split}:{seed}")
    w = world3(rnd)
    w["_date_form"] = rnd.randrange(3)
    idx = 0 if split == "train" else 1

    def said(fact):
        mine = [f for i, f in enumerate(STATEMENTS3[fact]) if i % 2 == idx]
        return _fill3(rnd.choice(mine), w)

    early = [said(f) for f in STATEMENTS3 if f != "move_new"]
    rnd.shuffle(early)
    talk, i = [], 0
    while i < len(early):  # one to three facts a message, run together
        k = rnd.choice([1, 2, 3])
        parts = early[i:i + k]
        i += k
        text = rnd.choice(LEADS) + parts[0].rstrip(".!") + "."
        for p in parts[1:]:  # run on in lower case, but a name keeps its capital ("Little Bean was rammed")
            low = p.split()[0].lower() in _STARTERS
            text += rnd.choice(JOINS) + (p[:1].lower() if low else p[:1]) + p[1:].rstrip(".!") + "."
        talk.append({"text": text.strip()})
    talk += [{"text": t} for t in rnd.sample(FILLER, 4)]
    rnd.shuffle(talk)
    # the correction comes after the old city was told, said in a message of its own or after small talk
    # (by pronoun, "actually she moved to Leeds", the next message, as people correct; by name, any later one)
    old_at = next(j for j, t in enumerate(talk) if w["oldcity"] in t["text"])
    fix = said("move_new")
    if w["p1"]["name"] in fix:
        fix = fix if rnd.random() < 0.5 else rnd.choice(FILLER).rstrip(".") + ". " + _cap(fix)
        talk.insert(rnd.randint(old_at + 1, len(talk)), {"text": fix})
    else:
        talk.insert(old_at + 1, {"text": fix})
    questions = []
    fams = {f: v for f, v in FAMILIES3.items() if v[0] == split}
    for slot, core in SLOTS3.items():
        for fam, (_, make) in fams.items():
            pick = {k: _fill3(rnd.choice([x for j, x in enumerate(core[k]) if j % 2 == idx]), w) for k in ("ask", "emb")}
            text = make(pick, w, rnd)
            expected = core["expect"](w)
            if any(re.search(rf"\b{re.escape(e.lower())}\b", text.lower()) for e in expected):
                continue
            q = {"text": text, "recall": expected, "family": fam, "slot": slot}
            if "stale" in core:
                q["stale"] = core["stale"](w)
            questions.append(q)
    questions += _never_told3(w, split)
    rnd.shuffle(questions)
    turns = _timeline(talk + questions, start, rnd)
    return {"version": f"recallgen-v3-{split}-{seed}",
            "why": "Generated by eval/recallgen.py (v3, others' styles): facts in passing, in long messages, "
                   f"through possessives, one corrected later; recall questions in the {split} families.",
            "participant": f"gen3-{split}-{seed}", "tz": "Europe/London", "context": "personal", "turns": turns}


# ---------------------------------------------------------------- scoring a bench chat run

NOT_TOLD = re.compile(r"(?:don't|do not) think you(?:'ve| have) told me|you haven't told me|"
                      r"not sure you(?:'ve| have)? told me|you never told me", re.I)


def wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    if n == 0:
        return (0.0, 0.0)
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return (round(max(0.0, c - h), 3), round(min(1.0, c + h), 3))


def score(pairs: list[tuple[dict, dict]]) -> dict:
    """Per family: recall right (the reply names the expected fact, chatcheck's rule), never-told
    said so (and invented nothing, quoted nothing), action requests made an action and were not
    answered as recall; questions quoted as facts; replies inventing a participant fact."""
    fam: dict[str, dict] = {}
    slots: dict[str, list] = {}
    quoted_q = invented = turns = stale = 0
    failures = []
    for spec, result in pairs:
        for step, row in zip(spec["turns"], result["rows"]):
            turns += 1
            quoted_q += len(row.get("quoted_questions") or [])
            invented += bool(row.get("inventions"))
            f = step.get("family")
            if not f:
                continue
            d = fam.setdefault(f, {"n": 0, "right": 0})
            d["n"] += 1
            if step.get("recall"):
                ok = bool(row.get("recall_right"))
                if step.get("stale") and not ok and any(
                        re.search(rf"\b{re.escape(x)}\b", row["reply"]) for x in step["stale"]):
                    stale += 1  # answered with what was corrected later
                slots.setdefault(step["slot"], []).append(ok)
            elif step.get("unknown"):
                ok = bool(NOT_TOLD.search(row["reply"])) and bool(row.get("unknown_right"))
            else:
                ok = bool(row.get("action_made")) and not NOT_TOLD.search(row["reply"])
            d["right"] += ok
            if not ok:
                failures.append({"family": f, "slot": step.get("slot"), "text": step["text"],
                                 "expected": step.get("recall") or step.get("unknown") or step.get("action"),
                                 "reply": row["reply"]})
    for d in fam.values():
        d["rate"] = round(d["right"] / d["n"], 3)
        d["ci95"] = wilson(d["right"], d["n"])
    # never_told2 stays in the total as it was when the v2 numbers were reported; v3 keeps its never-told apart
    recall_fams = {k: v for k, v in fam.items() if k not in ("never_told", "never_told3", "action_question")}
    k, n = sum(v["right"] for v in recall_fams.values()), sum(v["n"] for v in recall_fams.values())
    return {"version": VERSION, "turns": turns, "recall": {"right": k, "n": n, "rate": round(k / max(1, n), 3),
                                                           "ci95": wilson(k, n)},
            "families": fam, "slots": {s: f"{sum(v)}/{len(v)}" for s, v in sorted(slots.items())},
            "quoted_questions": quoted_q, "replies_inventing": invented, "stale_answers": stale,
            "failures": failures}


# ---------------------------------------------------------------- the reader alone (fast, for tuning)


def offline(spec: dict, window: int = 6) -> dict:
    """The recall reader alone over a script: every message of the participant stored as the turn
    stores it (no model, no consolidation, no retrieval: the reader's own search and the recent
    window), each recall or never-told question answered by `memory.answers.answer` and checked by
    the bench's own checks. Minutes faster than `bench chat --model echo`, which runs the whole turn;
    a question the reader leaves to the model gets "". An action request counts as right here when
    the reader leaves it alone (making the action is the turn's part, measured by bench chat)."""
    import tempfile
    from datetime import datetime
    from zoneinfo import ZoneInfo

    from consent import records
    from eval import benchchat, chatcheck
    from memory import answers, messages
    from memory.store import Store

    tz = ZoneInfo(spec.get("tz", "UTC"))
    rows = []
    known = chatcheck.Known()
    with tempfile.TemporaryDirectory(prefix="recallgen-offline-") as d:
        store = Store(d)
        store.indexes = []  # the reader searches text, not vectors: no embedding of every message
        who = spec["participant"]
        records.accept(store, who, tz=spec.get("tz", "UTC"))
        try:
            for i, step in enumerate(spec["turns"], 1):
                at = datetime.fromisoformat(step["at"]).replace(tzinfo=tz) if step.get("at") else datetime.now(tz)
                recent = messages.read(store, who, 10**9)[-window:]
                as_of = messages.next_ordinal(store, who)
                reply, _ = answers.answer(store, who, as_of, step["text"], (), recent, at)
                reply = reply or ""
                messages.append(store, who, "user", step["text"], spec.get("context", "personal"), ts=at)
                known.add(step["text"])
                row = benchchat.TurnRow(i=i, text=step["text"], reply=reply, verbosity=None, words=len(reply.split()),
                                        loops=False, cut=False, ttft_s=None, total_s=0.0, generate_s=0.0,
                                        completion_tokens=None, tokens_per_s=None, rss_mb=0.0)
                row = benchchat.check(row, step, known)
                if step.get("action"):  # the reader's part: an action request is left to the turn, not answered
                    row.action_made = reply == ""
                out = vars(row)
                if not (step.get("recall") or step.get("unknown") or step.get("action")):
                    out["statement_answered"] = reply != ""  # a statement read as a recall question
                    out["reply"] = reply
                rows.append(out)
        finally:
            store.close()
    return {"rows": rows}


def render(s: dict) -> str:
    out = [f"{s['version']}: {s['turns']} turns; recall right {s['recall']['right']}/{s['recall']['n']} "
           f"({s['recall']['rate']}, 95% CI {s['recall']['ci95']})"]
    for f, d in sorted(s["families"].items()):
        out.append(f"  {f:<16} {d['right']:>3}/{d['n']:<3} {d['rate']:.3f}  CI {d['ci95']}")
    out.append("  by slot: " + ", ".join(f"{k} {v}" for k, v in s["slots"].items()))
    out.append(f"  questions quoted as facts: {s['quoted_questions']}; replies inventing a fact: "
               f"{s['replies_inventing']}; answered with a corrected-away value: {s.get('stale_answers', 0)}")
    return "\n".join(out)


def _load_or_make(arg: str) -> dict:
    """A script file, or a generated one named `v3:SPLIT:SEED` (also v2:, v1:)."""
    m = re.fullmatch(r"v([123]):(train|dev|test):(\d+)", arg)
    if m:
        v, split, seed = m.group(1), m.group(2), int(m.group(3))
        return {"1": script, "2": script2, "3": script3}[v](seed, split)
    p = Path(arg)
    if not p.exists():
        raise SystemExit(f"recallgen: no script file {arg!r} (or a generated name such as v3:test:1)")
    return json.loads(p.read_text(encoding="utf-8"))


def main(argv: list[str]) -> int:
    if not argv or argv[0] not in ("make", "score", "offline"):
        print(__doc__)
        return 2
    if argv[0] == "make":
        import argparse

        ap = argparse.ArgumentParser(prog="recallgen make")
        ap.add_argument("--split", choices=["train", "dev", "test"], required=True)
        ap.add_argument("--v3", action="store_true", help="recallgen-v3 (others' styles; splits train/test)")
        ap.add_argument("--worlds", type=int, default=3)
        ap.add_argument("--seed", type=int, default=1)
        ap.add_argument("--out", required=True)
        a = ap.parse_args(argv[1:])
        out = Path(a.out)
        out.mkdir(parents=True, exist_ok=True)
        for i in range(a.worlds):
            spec = script3(a.seed + i, a.split) if a.v3 else script(a.seed + i, a.split)
            p = out / f"{a.split}-{a.seed + i}.json"
            p.write_text(json.dumps(spec, indent=1), encoding="utf-8")
            print(p)
        return 0
    if argv[0] == "offline":  # the reader alone over scripts (no model): python -m eval.recallgen offline S...
        pairs = [(spec, offline(spec)) for spec in (_load_or_make(p) for p in argv[1:])]
        s = score(pairs)
        print(render(s))
        told = [(r["text"], r["reply"]) for _, res in pairs for r in res["rows"] if r.get("statement_answered")]
        print(f"  statements answered as recall questions: {len(told)} of "
              f"{sum('statement_answered' in r for _, res in pairs for r in res['rows'])}")
        for t, r in told:
            print(f"  STATEMENT ANSWERED {t!r} -> {r!r}")
        for f in s["failures"]:
            print(f"  MISS [{f['family']}/{f['slot']}] {f['text']!r} want {f['expected']!r} got {f['reply']!r}")
        return 0
    args = argv[1:]
    if len(args) < 2 or len(args) % 2:
        print("score SCRIPT RUN [SCRIPT RUN ...]", file=sys.stderr)
        return 2
    pairs = []
    for sp, rp in zip(args[::2], args[1::2]):
        spec = json.loads(Path(sp).read_text(encoding="utf-8"))
        lines = Path(rp).read_text(encoding="utf-8").strip().splitlines()
        pairs.append((spec, json.loads(lines[-1])))
    s = score(pairs)
    print(render(s))
    print(json.dumps(s))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
