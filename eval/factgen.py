"""A seeded generator of the fact classes of issue 27 and of their look-alike non-facts, in the
tests/data/facts row format (scored by eval.facts_eval), split by TEMPLATE FAMILY, not by item.

Fact classes: several facts in one message, facts in passing inside a question or a complaint,
past states and changes, corrections, people and pets introduced without a relation word,
ages / dates / durations / quantities, health / diet / work schedules / study, slang / typos /
non-native word order. Look-alikes (no claim may be read; `forbid` holds what would be the
wrong reading): negated, hypothetical or wished, asked, quoted or reported speech, jokes and
figures of speech, other people's facts (not the participant's nor someone of theirs).

Every family is a list of wordings of one construction; a row fills one wording with values
drawn from the value lists. Families are assigned to `train` or `dev` by a seeded shuffle
within each class (each class has families on both sides), so a dev score says how the reader
does on constructions it was never tuned on, not on new values of the same sentence. Tune on
train families only; report dev families.

    python -m eval.factgen --split dev --n 6 --seed 3 --out PATH.jsonl     # then eval.facts_eval PATH.jsonl
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from dataclasses import dataclass

V = {
    "name": ["Lena", "Tomasz", "Priya", "Jonas", "Amara", "Diego", "Yuki", "Farah", "Mateo", "Ines", "Kofi", "Sanne"],
    "pet": ["Biscuit", "Mochi", "Pepper", "Rocco", "Luna", "Ziggy", "Olive", "Bruno"],
    "city": ["Porto", "Leeds", "Utrecht", "Krakow", "Osaka", "Valencia", "Denver", "Tallinn", "Gdansk", "Lyon"],
    "city2": ["Bristol", "Ghent", "Seville", "Turin", "Bergen", "Austin"],
    "occ": ["nurse", "electrician", "teacher", "accountant", "plumber", "pharmacist", "architect", "paramedic"],
    "place": ["hospital", "library", "bakery", "warehouse", "pharmacy", "school", "airport", "call centre"],
    "company": ["Siemens", "Ikea", "Decathlon", "Philips", "Deloitte", "Unilever"],
    "age": ["27", "34", "41", "52", "38", "29", "63"],
    "age2": ["33", "40", "45", "31"],
    "kids": ["two", "three", "2", "3"],
    "years": ["five", "ten", "three", "12", "seven"],
    "month": ["March", "June", "September", "November", "April"],
    "condition": ["asthma", "diabetes", "migraines", "eczema", "arthritis"],
    "med": ["metformin", "insulin", "sertraline", "levothyroxine"],
    "diet": ["vegetarian", "vegan", "pescatarian"],
    "subject": ["nursing", "law", "chemistry", "physics", "Spanish", "accounting"],
    "instrument": ["bass", "cello", "drums", "piano", "ukulele"],
    "animal": ["dog", "cat", "rabbit", "parrot", "hamster"],
    "breed": ["beagle", "greyhound", "labrador", "tabby"],
    "rel": ["sister", "brother", "cousin", "aunt", "uncle", "daughter", "son"],
    "day": ["Saturdays", "weekends", "Mondays", "Sundays"],
}


@dataclass(frozen=True)
class Family:
    id: str
    cls: str  # the class of issue 27 (facts) or the look-alike it imitates (non-facts)
    fact: bool
    wordings: tuple  # templates with {slot} fields
    claims: tuple = ()  # (kind, [stems]) with {slot} fields: gold
    optional: tuple = ()  # [stems]: right but not required
    forbid: tuple = ()  # [stems]: the wrong reading


def F(id, cls, wordings, claims=(), optional=(), forbid=()):
    return Family(id, cls, bool(claims), tuple(wordings), tuple(claims), tuple(optional), tuple(forbid))


FAMILIES = [
    # ---------------------------------------------------------------- several facts in one message
    F("multi-sibling", "several", ["My {rel} {name} lives in {city} and works as a {occ}.",
                                   "my {rel} {name} is a {occ}, she lives in {city} now",
                                   "So my {rel} {name} moved to {city} last year and is a {occ} there."],
      [("family", ["{rel}", "{name:l}"]), ("place", ["{name:l}", "{city:l}"]), ("work", ["{name:l}", "{occ}"])]),
    F("multi-self", "several", ["I'm a {occ} in {city} and I have {kids} kids.",
                                "I work as a {occ}, live in {city}, and have {kids} kids.",
                                "Well I'm a {occ}, I live in {city}, two cats, {kids} kids, busy life."],
      [("work", ["{occ}"]), ("place", ["{city:l}"]), ("family", ["{kids}", "kid"])]),
    F("multi-pet-job", "several", ["I have a {animal} called {pet} and I work at the {place}.",
                                   "We've got a {animal} named {pet}, and I work nights at the {place}."],
      [("pet", ["{animal}", "{pet:l}"]), ("work", ["{place}"])]),
    F("multi-age-home", "several", ["I'm {age} and I live in {city} with my {rel} {name}.",
                                    "{age} years old, living in {city}, sharing a flat with my {rel} {name}."],
      [("age", ["{age}"]), ("place", ["{city:l}"]), ("family", ["{rel}", "{name:l}"])]),
    # ---------------------------------------------------------------- in passing, in a question or a complaint
    F("passing-question", "passing", ["I work nights at the {place}, any tips for sleeping during the day?",
                                      "Since I work nights at the {place}, how do I fix my sleep?",
                                      "As someone who works nights at the {place}, what should I eat before a shift?"],
      [("work", ["night|{place}"])]),
    F("passing-question-home", "passing", ["I just moved to {city}, where do people go for brunch?",
                                           "Now that I live in {city}, is it worth getting a bike?"],
      [("place", ["{city:l}"])]),
    F("passing-complaint", "passing", ["Ugh, my {rel} {name} is staying with us again and the flat is tiny.",
                                       "honestly sick of it, my {rel} {name} borrowed my car again"],
      [("family", ["{rel}", "{name:l}"])]),
    F("passing-complaint-health", "passing", ["My {condition} is acting up again, so annoying.",
                                              "Can't sleep, my {condition} is terrible this week."],
      [("health", ["{condition}"])]),
    # ---------------------------------------------------------------- past states and changes
    F("past-lived", "past", ["I used to live in {city}.", "I lived in {city} for years before moving here.",
                             "back when I lived in {city} I cycled everywhere"],
      [("past", ["{city:l}"])], forbid=[["lives", "{city:l}"]]),
    F("past-ended", "past", ["I don't live in {city} anymore.", "I'm not in {city} any more, I left in {month}.",
                             "I no longer live in {city}."],
      [("past", ["longer|used|left|moved|former", "{city:l}"])], forbid=[["lives", "{city:l}"]]),
    F("past-job", "past", ["I quit my job at {company} last month.", "I left {company} in {month}.",
                           "I'm not at {company} anymore."],
      [("past", ["{company:l}"])], forbid=[["works", "{company:l}"]]),
    F("past-relationship", "past", ["I'm not with {name} anymore.", "{name} and I broke up in {month}.",
                                    "me and {name} split up, it's over"],
      [("past", ["{name:l}"])], forbid=[["boyfriend|girlfriend|partner", "{name:l}"]]),
    # ---------------------------------------------------------------- corrections
    F("correct-age", "correction", ["Actually I'm {age}, not {age2}.", "Sorry, I said {age2} earlier, I'm {age}.",
                                     "correction: I'm {age}, I got it wrong before"],
      [("age", ["{age}"])], forbid=[["{age2}"]]),
    F("correct-city", "correction", ["Sorry, my {rel} lives in {city}, not {city2}.",
                                     "I meant {city}, my {rel} lives in {city}, not {city2}."],
      [("place", ["{city:l}"])], optional=[["{rel}"]], forbid=[["{city2:l}"]]),
    # ---------------------------------------------------------------- people and pets without a relation word
    F("norel-married", "no-relation-word", ["{name} and I got married in {month}.",
                                             "{name} and I have been married for {years} years."],
      [("family", ["{name:l}"])]),
    F("norel-pet", "no-relation-word", ["Took {pet} to the vet today, the old {breed} is fine.",
                                        "{pet} my {breed} chewed my shoes again"],
      [("pet", ["{pet:l}"])]),
    F("norel-dating", "no-relation-word", ["I've been seeing {name} since {month}.",
                                           "Been dating {name} for {years} months now."],
      [("family", ["{name:l}"])]),
    # ---------------------------------------------------------------- ages, dates, durations, quantities
    F("age-plain", "numbers", ["I'm {age}, if you must know.", "I'm {age} btw.", "I turned {age} last week."],
      [("age", ["{age}"])]),
    F("duration-job", "numbers", ["I've been a {occ} for {years} years.",
                                  "Been working as a {occ} for {years} years now."],
      [("work", ["{occ}"])]),
    F("quantity-kids", "numbers", ["I have {kids} kids.", "We've got {kids} children.", "{kids} kids, all under ten."],
      [("family", ["{kids}", "kid|child|children"])]),
    F("date-trip", "numbers", ["I'm off to {city} on {month} 14th.", "Flying to {city} on the 3rd of {month}!"],
      [("plan", ["{city:l}"])]),
    # ---------------------------------------------------------------- health, diet, work schedules, study
    F("health-diag", "health", ["I was diagnosed with {condition} in 2019.", "I have {condition}.",
                                "I've had {condition} since I was a kid."],
      [("health", ["{condition}"])]),
    F("health-med", "health", ["I'm on {med} for my blood sugar.", "I take {med} every morning."],
      [("health", ["{med}"])]),
    F("diet", "health", ["I'm {diet}.", "I've been {diet} for {years} years.", "I went {diet} in {month}."],
      [("diet", ["{diet}"])]),
    F("schedule", "schedule", ["I work {day} at the {place}.", "My shifts at the {place} are on {day}."],
      [("work", ["{place}"])]),
    F("study", "study", ["I'm studying {subject} at uni.", "I'm in my second year of {subject}.",
                         "I study {subject} part-time."],
      [("study", ["{subject:l}"])]),
    # ---------------------------------------------------------------- slang, typos, non-native order
    F("slang", "register", ["ngl i live in {city} now lol", "im a {occ} fr", "my bro {name} lives in {city} tbh"],
      [("any", ["{city:l}|{occ}"])]),
    F("nonnative", "register", ["In {city} I am living since {years} years.",
                                "Since {years} years I am working as {occ}."],
      [("any", ["{city:l}|{occ}"])]),
    F("typos", "register", ["i wrk as a {occ} at teh {place}", "my sistr {name} lives in {city}"],
      [("any", ["{occ}|{city:l}"])]),
    # ================================================================ look-alikes: nothing to store
    F("neg-plain", "negated", ["I don't live in {city}.", "I'm not a {occ}.", "I've never lived in {city}.",
                               "I do not have a {animal}."],
      forbid=[["{city:l}"], ["{occ}"], ["{animal}"]]),
    F("neg-other", "negated", ["My {rel} isn't a {occ}.", "No, my {rel} doesn't live in {city}.",
                               "I don't have {condition}, thankfully."],
      forbid=[["{occ}"], ["{city:l}"], ["{condition}"]]),
    F("hypo-if", "hypothetical", ["If I lived in {city} I'd cycle everywhere.", "If I were a {occ} I'd be exhausted.",
                                  "if i had a {animal} i'd call it {pet}"],
      forbid=[["{city:l}"], ["{occ}"], ["{pet:l}"]]),
    F("hypo-wish", "hypothetical", ["I'd love to move to {city} someday.", "I wish I had a {animal}.",
                                    "Maybe I'll become a {occ} one day.", "I might study {subject} next year, not sure."],
      forbid=[["{city:l}"], ["{animal}"], ["{occ}"], ["{subject:l}"]]),
    F("question", "question", ["Do you think I should move to {city}?", "Is it hard to become a {occ}?",
                               "Should I get a {animal}?", "Would I like living in {city}?"],
      forbid=[["{city:l}"], ["{occ}"], ["{animal}"]]),
    F("question-tag", "question", ["Am I too old to learn {instrument} at {age}?", "Can I even call myself a {occ}?"],
      forbid=[["{instrument}"], ["{occ}"]]),
    F("quote", "reported", ['My friend said "I live in {city}" yesterday.', 'The ad says "{occ} wanted in {city}".',
                            'She texted me "I\'m a {occ} now"'],
      optional=[["friend"]], forbid=[["{city:l}"], ["{occ}"]]),
    F("reported", "reported", ["{name} told me she's moving to {city}.", "My coworker says she is a {diet}.",
                               "He claims he lives in {city}."],
      optional=[["coworker"]], forbid=[["{city:l}"], ["{diet}"]]),
    F("joke-place", "joke", ["I basically live at the {place} at this point lol.",
                             "my {animal} is basically my landlord haha"],
      optional=[["{animal}"]], forbid=[["lives", "{place}"], ["landlord"]]),
    F("joke-figure", "joke", ["I'm a professional napper haha.", "My {animal} is the real boss of this house.",
                              "I'm married to my job lol"],
      optional=[["{animal}"]], forbid=[["napper"], ["boss"], ["married"]]),
    F("other-news", "other-people", ["The guy on the news lives in {city}.", "Some actor has {kids} kids."],
      forbid=[["{city:l}"], ["{kids}"]]),
    F("other-strangers", "other-people", ["A woman on the bus was a {occ}.",
                                          "The couple next to us at dinner were from {city}."],
      forbid=[["{occ}"], ["{city:l}"]]),
]


# ================================================================ TEST families (facts4, issue 27)
# Written once, before the change they measure, in constructions none of FAMILIES uses (reported
# clauses hung off a time phrase, fronted objects, lists, appositions, dashes and emoji, long
# chatty run-ons, questions with the fact in a subordinate clause); never tuned on, never used
# for a threshold: `generate("test")` is for the final report only.
TEST_FAMILIES = [
    F("t-multi-run-on", "several", ["ok so quick update, my {rel} {name} just started as a {occ} and honestly she loves it, "
                                    "and we finally moved to {city} last month",
                                    "Long week! {name}, my {rel}, got a job as a {occ}, and I moved to {city} in {month}."],
      [("family", ["{rel}", "{name:l}"]), ("work", ["{occ}"]), ("place", ["{city:l}"])]),
    F("t-multi-list", "several", ["About me: {age}, {occ}, based in {city}.",
                                  "me: {age}, {diet}, working as a {occ} in {city}"],
      [("age", ["{age}"]), ("work", ["{occ}"]), ("place", ["{city:l}"])]),
    F("t-passing-why", "passing", ["Why is it so hard to find a flat here in {city} when you work at the {place}?",
                                   "Any idea why my {animal} {pet} keeps scratching the sofa?"],
      [("any", ["{city:l}|{pet:l}"])]),
    F("t-passing-rant", "passing", ["Twelve-hour shifts at the {place} again this week, I'm exhausted",
                                    "so tired of commuting, the drive from {city} to the {place} takes ages every day"],
      [("work", ["{place}"])]),
    F("t-past-since", "past", ["Ever since I left {city} I miss the food.", "I moved out of {city} back in {month}."],
      [("past", ["{city:l}"])], forbid=[["lives", "{city:l}"]]),
    F("t-past-former", "past", ["My ex, {name}, still texts me sometimes.",
                                "I was a {occ} until {month}, now I'm between jobs."],
      [("past", ["{name:l}|{occ}"])], forbid=[["partner|girlfriend|boyfriend", "{name:l}"]]),
    F("t-correct", "correction", ["Wait, I got that wrong: it's {city}, not {city2}, where I live.",
                                  "No sorry, I'm {age}, I typed {age2} by mistake."],
      [("any", ["{city:l}|{age}"])], forbid=[["{city2:l}"], ["{age2}"]]),
    F("t-norel-names", "no-relation-word", ["{name} and I have {kids} kids together.",
                                            "{pet} (my {animal}) is {age2} in dog years lol"],
      [("any", ["{name:l}|{pet:l}"])]),
    F("t-numbers", "numbers", ["Turning {age} next week, feeling old.",
                               "It's been {years} years since I started at {company}."],
      [("any", ["{age}|{company:l}"])]),
    F("t-plan-date", "numbers", ["Booked a trip to {city} on {month} 14th!",
                                 "We're heading to {city} for a week in {month}."],
      [("plan", ["{city:l}"])]),
    F("t-health", "health", ["Doctor says it's {condition}, so now I'm on {med}.",
                             "Been living with {condition} for {years} years now."],
      [("health", ["{condition}"])]),
    F("t-diet", "health", ["Being {diet} makes eating out hard.", "As a {diet} I struggle at barbecues."],
      [("diet", ["{diet}"])]),
    F("t-schedule", "schedule", ["Night shift at the {place} again tonight, 10pm to 6am.",
                                 "I'm on the early shift at the {place} all week."],
      [("work", ["{place}"])]),
    F("t-study", "study", ["Final year of my {subject} degree, wish me luck",
                           "Exams for my {subject} course are next week."],
      [("study", ["{subject:l}"])]),
    F("t-register", "register", ["me nd my {rel} {name} live in {city} \U0001f60a",
                                 "Working like {occ} in {city} since {years} year."],
      [("any", ["{city:l}|{occ}"])]),
    # look-alikes
    F("t-neg", "negated", ["Nope, never been a {occ} in my life.", "{city}? I've never even been there, let alone lived there."],
      forbid=[["{occ}"], ["{city:l}"]]),
    F("t-hypo", "hypothetical", ["Imagine living in {city}, that would be the dream.",
                                 "Thinking about maybe getting a {animal} one of these days."],
      forbid=[["{city:l}"], ["{animal}"]]),
    F("t-question", "question", ["How long does it take to train as a {occ}?", "What's it like living in {city}?"],
      forbid=[["{occ}"], ["{city:l}"]]),
    F("t-reported", "reported", ["According to {name}, she's a {occ} now.", "Apparently my neighbour is moving to {city}."],
      optional=[["neighbour"]], forbid=[["{occ}"], ["{city:l}"]]),
]


def splits(seed: int = 27) -> dict[str, str]:
    """family id -> train | dev: per class a seeded shuffle, about half on each side (a class
    with one family is train; the look-alike classes are paired so each side has every kind)."""
    rng = random.Random(seed)
    by_cls: dict[str, list[str]] = {}
    for f in FAMILIES:
        by_cls.setdefault(f.cls, []).append(f.id)
    out = {}
    for cls in sorted(by_cls):
        ids = sorted(by_cls[cls])
        rng.shuffle(ids)
        half = max(1, len(ids) // 2)
        for i, fid in enumerate(ids):
            out[fid] = "train" if i < half else "dev"
    for f in TEST_FAMILIES:
        out[f.id] = "test"
    return out


def _fill(template: str, values: dict) -> str:
    out = template
    for k, v in values.items():
        out = out.replace("{" + k + ":l}", v.lower()).replace("{" + k + "}", v)
    return out


def generate(split: str | None = None, n: int = 6, seed: int = 3) -> list[dict]:
    """`n` rows per wording of every family of `split` (None: all), values drawn with `seed`."""
    rng = random.Random(seed)
    where = splits()
    rows = []
    for f in FAMILIES + TEST_FAMILIES:
        if split is not None and where[f.id] != split:
            continue
        for w, wording in enumerate(f.wordings):
            for k in range(n):
                values = {slot: rng.choice(vals) for slot, vals in V.items()}
                values["city2"] = rng.choice([c for c in V["city2"] if c != values["city"]])
                values["age2"] = rng.choice([a for a in V["age2"] if a != values["age"]])
                text = _fill(wording, values)
                forbid = [[_fill(s, values) for s in item] for item in f.forbid]
                # a family forbids only what this wording names
                words = re.findall(r"[\w'-]+", text.lower())
                forbid = [item for item in forbid if all(any(w.startswith(p) or (p.startswith(w) and len(w) >= 3)
                                                             for w in words for p in s.split("|")) for s in item)]
                rows.append({"id": f"{f.id}/{w}/{k}", "family": f.id, "class": f.cls, "split": where[f.id],
                             "fact": f.fact, "text": text,
                             "claims": [{"kind": kind, "must": [_fill(s, values) for s in must]}
                                        for kind, must in f.claims],
                             "optional": [[_fill(s, values) for s in item] for item in f.optional],
                             "forbid": forbid})
    return rows


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.factgen", description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("train", "dev", "test", "all"), default="dev")
    ap.add_argument("--n", type=int, default=6, help="rows per wording")
    ap.add_argument("--seed", type=int, default=3)
    ap.add_argument("--out", default="-")
    a = ap.parse_args(argv)
    rows = generate(None if a.split == "all" else a.split, a.n, a.seed)
    text = "".join(json.dumps(r, ensure_ascii=False) + "\n" for r in rows)
    if a.out == "-":
        sys.stdout.write(text)
    else:
        with open(a.out, "w", encoding="utf-8") as fh:
            fh.write(text)
        print(f"{len(rows)} rows ({a.split}) -> {a.out}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
