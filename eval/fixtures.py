"""A small synthetic release in the benchmark format, deterministic in its seed.

    python -m eval.fixtures OUT_DIR [--seed 7]

Three participants of clearly different sizes. Facts (job, sister and her city, a pet, a trip,
a dislike, a hobby, a book the companion recommended) are planted on days 1-2 and referred back
to from day 3 on, so every reference is far from its plant. Each reference is written to be
found a known way (`fixture_match`, an extra field readers keep and ignore):
  lexical    shares content words with its gold (BM25 can find it)
  paraphrase shares none (only dense retrieval can)
  mixed      gold both far and inside the recent window
  near       gold only inside the recent window (thread follow-ups)
  none       no gold
Tiers: basic = a direct lookup, intermediate = the referent is named but its meaning lies in
the past, hard = paraphrased or implicit need, edge = updated facts, false memories, noise.
Every user message carries its annotation, so any sample of them (the proportional stratum is
drawn blind to need) is labelled truthfully.
"""

from __future__ import annotations

import argparse
import random
from dataclasses import dataclass, replace
from datetime import date, datetime, time, timedelta, timezone
from pathlib import Path

from eval.formats import ChatProbe, ConversationRow, Description, Persona, ProfileClaim, QAItem, Trait
from eval.readers import Participant, Release, manifest_for, write_release

RECENT_WINDOW = 3
TZ = timezone(timedelta(hours=1))  # CET; the dates stay before the March DST switch
START = date(2026, 2, 2)
SIZES = {"U01": (75, 4), "U02": (160, 7), "U03": (400, 15)}  # target messages, active days
PROPORTIONAL_SHARE = 0.25


@dataclass(frozen=True)
class Gold:
    locus: str
    tier: str
    category: str
    on_screen: str
    grounding: tuple[str, ...] = ()  # message keys, or "-k": the message k before this one
    claims: tuple[str, ...] = ()  # claim keys (profile_refs)
    match: str = "none"
    scoreable: bool = True
    verified: str | None = None  # locus_verified when it differs from locus


@dataclass(frozen=True)
class Msg:
    sender: str
    text: str  # a str.format template over the participant's facts and filler slots
    gold: Gold | None = None
    key: str | None = None
    ref: bool = False  # a scripted memory reference: collected into the enriched stratum
    cold: bool = False  # a session's first message: a control when not sampled


def U(text, gold, key=None, ref=False):
    return Msg("user", text, gold, key, ref)


def C(text, key=None):
    return Msg("companion", text, key=key)


def none(category):
    return Gold("none", "basic", category, "no")


def far(locus, tier, category, grounding, match, claims=(), on_screen="no", verified=None):
    return Gold(locus, tier, category, on_screen, tuple(grounding), tuple(claims), match, verified=verified)


THREAD = Gold("thread", "basic", "thread_followup", "clear", ("-1",), match="near")

# --- facts: participant i takes entry order[i] of each (independently shuffled) list ----------
JOBS = [
    dict(job="nurse", place="children's hospital", detail="night shifts",
         job_para="the ward was chaos again and I only got home as the sun came up. should I say something to my manager?"),
    dict(job="bus driver", place="city depot", detail="early routes",
         job_para="my alarm went off at 4am again and the passengers were grumpy all day, is it normal to feel this drained?"),
    dict(job="baker", place="bakery on Elm Street", detail="pre-dawn starts",
         job_para="my hands smell of sourdough and I've been up since 3am, is this sustainable?"),
    dict(job="junior architect", place="studio by the river", detail="site visits",
         job_para="spent the whole afternoon arguing with my boss about a staircase drawing, how do I push back politely?"),
]
SISTERS = [dict(sister=s, city=c, city2=c2) for s, c, c2 in
           [("Lena", "Porto", "Vienna"), ("Marta", "Gdansk", "Madrid"), ("Ines", "Valencia", "Lyon"), ("Noor", "Tallinn", "Oslo")]]
PETS = [dict(pet=p, pet_name=n, furry=f) for p, n, f in
        [("cat", "Pixel", "furry"), ("dog", "Biscuit", "furry"), ("rabbit", "Moss", "furry"), ("parrot", "Kiwi", "feathered")]]
TRIPS = [dict(trip=t, month=m, language=lang) for t, m, lang in
         [("Lisbon", "April", "Portuguese"), ("Kyoto", "May", "Japanese"), ("Seville", "April", "Spanish"), ("Istanbul", "May", "Turkish")]]
DISLIKES = [dict(dislike=d) for d in ["cilantro", "olives", "mushrooms", "blue cheese"]]
HOBBIES = [dict(hobby=h) for h in ["bouldering", "pottery", "chess", "salsa"]]
BOOKS = [dict(book=b, other_book=o) for b, o in
         [("The Overstory", "Piranesi"), ("Piranesi", "Klara and the Sun"),
          ("Klara and the Sun", "A Gentleman in Moscow"), ("A Gentleman in Moscow", "The Overstory")]]

PLANTS = {  # day -> units
    1: [
        [U("first week as a {job} at the {place} is done, the {detail} are exhausting but I love it", none("disclosure"), "job"),
         C("Congratulations on getting through it! What do you love most about being a {job}?"),
         U("the people I work with, honestly", THREAD), C("That makes such a difference.")],
        [U("my sister {sister} just moved to {city}, I already miss her", none("disclosure"), "sister"),
         C("That's a big move! How is {sister} finding {city} so far?"),
         U("she says the flat is tiny but the view is great", THREAD), C("A great view makes up for a lot.")],
    ],
    2: [
        [U("{pet_name} knocked my water glass off the desk this morning", none("disclosure"), "pet"),
         U("classic {pet} behaviour", THREAD),  # a double user message, in every history
         C("Oh no! Is {pet_name} always this chaotic?"),
         U("only when she's hungry lol", THREAD), C("Ha, fair enough.")],
        [U("booked it! {trip} in {month}, a whole week off", none("disclosure"), "trip"),
         C("Amazing! What are you most looking forward to in {trip}?"),
         U("the food, and wandering around with no plans", THREAD), C("That sounds like the perfect week.")],
        [U("the canteen put {dislike} in everything again, I really can't stand {dislike}", none("disclosure"), "dislike"),
         C("Ugh, annoying when you can't avoid it. Did you find anything else to eat?"),
         U("just had bread and soup", THREAD), C("Simple, but sometimes that's all you need.")],
        [U("tried {hobby} for the first time today, I was terrible but it was so fun", none("disclosure"), "hobby"),
         C("That's the best way to start! Will you go again?"),
         U("definitely, there's a beginners' class on thursdays", THREAD), C("Love that.")],
        [U("I need something to read on the train, any ideas?", none("request")),
         C("For the train, try the book '{book}', it's gentle and strange in a good way.", key="book"),
         U("ooh adding it to my list", THREAD), C("Let me know what you think!")],
    ],
}

# (when, unit). when: late = any day from 3; before/after_update place references around the
# sister's second move, so their gold stays true at the time they are asked.
REFS = [
    ("late", [U("another week of {detail}, do you think I should ask for a different rota?",
                far("profile", "intermediate", "biographical", ["job"], "lexical", claims=["job"]), "job_lex", True),
              C("Since you're on {detail} as a {job}, asking for a steadier rota seems fair. Maybe raise it at your next check-in?")]),
    ("late", [U("{job_para}", far("profile", "hard", "wellbeing", ["job"], "paraphrase", claims=["job"]), "job_para", True),
              C("That sounds draining; the {detail} take a lot out of you. It's fair to tell your manager how it's going.")]),
    ("before_update", [U("{sister} called me last night, she sounded lonely",
                         far("episode", "intermediate", "event_recall", ["sister"], "lexical"), ref=True),
                       C("That makes sense after moving to {city}; a new city can feel lonely at first. Maybe plan a regular video call?")]),
    ("before_update", [U("what was the city my sister moved to again? I want to look at flights",
                         far("episode", "basic", "biographical", ["sister"], "lexical"), ref=True),
                       C("{sister} moved to {city}. Want help comparing flights?")]),
    ("before_update", [U("it's so strange not having my sibling around anymore, we used to have dinner together every Sunday",
                         far("episode", "hard", "event_recall", ["sister"], "paraphrase"), "sister_para", True),
                       C("You must miss {sister}. {city} is a long way from Sunday dinners; could you keep the tradition going over video?")]),
    ("before_update", [U("it's my sister's birthday next week",
                         far("profile", "basic", "biographical", ["sister"], "lexical", claims=["sister_name"]), ref=True),
                       C("Oh lovely! Are you sending {sister} something?"),
                       U("yes, a care package. what would she like, given where she lives now?",
                         far("episode", "intermediate", "event_recall", ["sister", "-2"], "mixed", on_screen="partial"), ref=True),
                       C("Something she can't get in {city} would be sweet, maybe your favourite snacks from home.")]),
    ("update", [U("big news: my sister is leaving {city}, she got a job in {city2}!",
                  far("episode", "intermediate", "event_recall", ["sister"], "lexical"), "sister_update", True),
                C("Wow, {city2}! Another move so soon. How does she feel about leaving {city}?"),
                U("excited, just tired of packing boxes", THREAD), C("Understandable!")]),
    ("after_update", [U("if I visit my sister this spring, which airport do I fly into?",
                        far("episode", "edge", "update", ["sister_update"], "lexical"), ref=True),
                      C("Now that {sister} has moved to {city2}, you'd fly into {city2}, not {city}.")]),
    ("late", [U("{pet_name} did the water glass thing again 🙄", far("episode", "basic", "event_recall", ["pet"], "lexical"), ref=True),
              C("Again! {pet_name} clearly has a vendetta against that glass on your desk.")]),
    ("late", [U("my {furry} roommate woke me at 5am yelling for food, how do I get some sleep?",
                far("profile", "hard", "biographical", ["pet"], "paraphrase", claims=["pet"]), ref=True),
              C("Sounds like {pet_name} has you trained! Try feeding your {pet} right before bed so mornings are calmer.")]),
    ("late", [U("counting down to my week off in {trip}!", far("episode", "basic", "plan", ["trip"], "lexical"), ref=True),
              C("The countdown is on! Have you sorted where you're staying for the week?"),
              U("not yet, should I stay somewhere central or somewhere quieter?",
                far("episode", "basic", "plan", ["trip", "-2"], "mixed", on_screen="clear"), ref=True),
              C("For a week in {trip} I'd go central: you can walk everywhere and still escape to quieter spots.")]),
    ("late", [U("what should I pack for {trip} in {month}?",
                far("profile", "intermediate", "plan", ["trip"], "lexical", claims=["trip"], on_screen="partial", verified="episode"), ref=True),
              C("For a whole week in {trip} in {month}: layers, comfy shoes for all that wandering, and a light rain jacket.")]),
    ("late", [U("I want to learn a few phrases before my holiday, where do I start?",
                far("profile", "hard", "plan", ["trip"], "paraphrase", claims=["trip"]), ref=True),
              C("Since you're off to {trip}, start with a few {language} greetings and how to order food.")]),
    ("late", [U("can you suggest something quick for dinner tonight?",
                far("profile", "hard", "preference", ["dislike"], "paraphrase", claims=["dislike"]), ref=True),
              C("How about a quick veggie stir-fry? And no {dislike}, I promise.")]),
    ("late", [U("went to {hobby} again and I was way less terrible this time!",
                far("episode", "basic", "event_recall", ["hobby"], "lexical"), "hobby_lex", True),
              C("Huge progress from your first time! The thursday class is paying off.")]),
    ("late", [U("what was that book you told me to try on the train?",
                far("companion", "intermediate", "companion_statement", ["book"], "lexical"), ref=True),
              C("It was '{book}', gentle and strange in a good way.")]),
    ("late", [U("halfway through that novel you suggested, it's so weird, I love it",
                far("companion", "hard", "companion_statement", ["book"], "paraphrase"), ref=True),
              C("I'm so glad '{book}' is working for you!")]),
    ("late", [U("you recommended '{other_book}' to me, right? I can't find it anywhere",
                far("companion", "edge", "companion_statement", ["book"], "paraphrase"), ref=True),
              C("I think it was actually '{book}', not '{other_book}'. Easy to mix up!")]),
]

OPENERS = [("hey, back again", "Welcome back! What's on your mind?"), ("hi :)", "Hi! How's your day been?"),
           ("hello hello", "Hello! Nice to hear from you."), ("hey there", "Hey! What's new?"),
           ("me again!", "Always good to see you. How are things?")]
NOISE = [U("asdfjkl sorry, wrong window", Gold("none", "edge", "noise", "no", scoreable=False)),
         C("No worries! How's your day going?")]

FILLERS = [
    [U("just made {food} for lunch", none("small_talk")), C("Nice! Did it turn out well?"), U("{food_verdict}", THREAD), C("{ack}")],
    [U("the weather is {weather} today", none("small_talk")), C("Does that change your plans at all?"), U("{plan}", THREAD), C("{ack}")],
    [U("watching {show} tonight", none("small_talk")), C("Is it any good so far?"), U("{show_verdict}", THREAD), C("{ack}")],
    [U("so tired today", none("small_talk")), C("Did you sleep badly?"), U("{sleep}", THREAD), C("Be gentle with yourself today.")],
    [U("going for a {activity} before it gets dark", none("small_talk")), C("Enjoy! Which way are you heading?"), U("{route}", THREAD), C("{ack}")],
    [U("ugh, the tram was late again", none("small_talk")), U("{minutes} minutes standing in the cold", THREAD),
     C("That's so frustrating. At least you're home now.")],  # a double user message
    [U("listening to {music} while I tidy up", none("small_talk")), C("Good choice, that makes chores go faster.")],
    [U("found a new {spot} near my place", none("small_talk")), C("Oh nice, what's it like?"), U("{spot_verdict}", THREAD), C("{ack}")],
    [U("can't decide what to have for dinner", none("small_talk")), U("maybe {food}?", THREAD), C("Sounds good to me!")],
    [U("cleaned the whole flat this afternoon", none("small_talk")), C("So satisfying! Treating yourself after?"),
     U("a long shower and absolutely nothing else", THREAD), C("{ack}")],
]
SLOTS = dict(
    food=["pasta with pesto", "a big salad", "lentil soup", "fried rice", "pancakes", "a veggie curry", "eggs on toast", "dumplings"],
    food_verdict=["yes, a bit too salty though", "pretty good actually", "edible, let's say that", "better than last time"],
    weather=["grey and drizzly", "weirdly sunny", "freezing", "really windy"],
    plan=["not really, staying in anyway", "might go for a walk later", "I'll take the tram instead of cycling"],
    show=["a baking competition", "an old detective series", "a nature documentary", "a dating show, don't judge"],
    show_verdict=["surprisingly good", "it's fine, good background noise", "I'm hooked already", "meh, might switch"],
    sleep=["yeah, kept waking up", "went to bed way too late", "the neighbours were loud"],
    activity=["walk", "run", "bike ride"], route=["along the canal", "round the park", "just around the block"],
    music=["old jazz records", "a podcast about space", "lo-fi beats"], minutes=["ten", "fifteen", "twenty"],
    spot=["café", "bookshop", "noodle bar", "second-hand shop"],
    spot_verdict=["cosy, with way too many plants", "small but really good", "a bit pricey but nice"],
    ack=["Love that.", "That sounds nice.", "Ha, fair enough.", "Good to hear!", "Makes sense."],
)


def _fill(unit: list[Msg], ctx: dict) -> list[Msg]:
    return [replace(m, text=m.text.format(**ctx)) for m in unit]


def _facts(i: int, rng: random.Random) -> dict:
    facts = {}
    for table in (JOBS, SISTERS, PETS, TRIPS, DISLIKES, HOBBIES, BOOKS):
        order = list(range(len(table)))
        rng.shuffle(order)
        facts.update(table[order[i]])
    return facts


def _plan(target: int, days: int, facts: dict, rng: random.Random) -> list[list[list[Msg]]]:
    """days -> sessions -> messages, with the planted, referring and filler units placed."""
    u = days // 2 + 1 if days >= 6 else None  # the sister moves again only in the longer histories
    span = {"late": (3, days), "before_update": (3, u - 1 if u else days),
            "update": (u, u), "after_update": (u + 1 if u else 0, days)}
    units: list[list[list[Msg]]] = [[] for _ in range(days)]
    for day, us in PLANTS.items():
        units[day - 1] += [_fill(x, facts) for x in us]
    for when, unit in REFS:
        if u is None and when in ("update", "after_update"):
            continue
        lo, hi = span[when]
        units[rng.randint(lo, hi) - 1].append(_fill(unit, facts))
    sessions = [2 if rng.random() < 0.35 else 1 for _ in range(days)]
    total = sum(len(x) for us in units for x in us) + 2 * sum(sessions)
    while total < target - 1:
        filler = _fill(rng.choice(FILLERS), {k: rng.choice(v) for k, v in SLOTS.items()})
        units[rng.randrange(days)].append(filler)
        total += len(filler)
    noise_day = rng.randrange(1, days)
    plan = []
    for d, us in enumerate(units):
        rng.shuffle(us)  # plants and references never share a day, so any order is consistent
        cut = [0, rng.randint(1, len(us) - 1), len(us)] if sessions[d] == 2 and len(us) > 1 else [0, len(us)]
        day = []
        for s in range(len(cut) - 1):
            if d == noise_day and s == 0:
                opener = NOISE
            else:
                o = rng.choice(OPENERS)
                opener = [U(o[0], none("greeting")), C(o[1])]
            opener = [replace(opener[0], cold=True), opener[1]]
            day.append(opener + [m for x in us[cut[s]:cut[s + 1]] for m in x])
        plan.append(day)
    return plan


def _timeline(plan, rng: random.Random) -> list[tuple[Msg, str, str]]:
    """(message, dayid, ts): dayids computed from the local timestamps as the store does."""
    out, day, last = [], START, None
    counters: dict[int, int] = {}
    for d, sessions in enumerate(plan):
        if d:
            day += timedelta(days=rng.choice([1, 1, 1, 2, 3]))
        hours = [rng.randint(8, 20)] if len(sessions) == 1 else [rng.randint(7, 9), rng.randint(18, 20)]
        for hour, msgs in zip(hours, sessions):
            t = datetime.combine(day, time(hour, rng.randrange(60)), TZ)
            for m in msgs:
                # people take a while to type; the companion answers within seconds
                t += timedelta(seconds=rng.randint(4, 20) if m.sender == "companion" else rng.randint(20, 240))
                assert last is None or t > last
                last = t
                n = (t.date() - START).days + 1
                counters[n] = counters.get(n, 0) + 1
                out.append((m, f"day{n}-{counters[n]}", t.isoformat()))
    return out


def _participant(pid: str, i: int, seed: int, size: tuple[int, int] | None = None) -> Participant:
    """`size` = (target messages, active days); default SIZES[pid]. eval.synth asks for larger ones."""
    rng = random.Random(f"{seed}:{pid}")
    # one permutation shared: distinct facts (past four participants, fact sets repeat)
    facts = _facts(i % len(JOBS), random.Random(f"{seed}:facts"))
    target, days = size or SIZES[pid]
    timeline = _timeline(_plan(target, days, facts, rng), rng)
    conv = [ConversationRow(dayid=d, sender=m.sender, text=m.text, ts=ts) for m, d, ts in timeline]
    msgs = [m for m, _, _ in timeline]
    key = {m.key: d for m, d, _ in timeline if m.key}

    claims = _claims(key, facts)
    claim_id = {k: c.id for k, c in claims.items()}
    users = [k for k, m in enumerate(msgs) if m.sender == "user"]
    # the proportional stratum: a sample drawn blind to need
    sample = set(random.Random(f"{seed}:{pid}:sample").sample(users, round(PROPORTIONAL_SHARE * len(users))))
    probes = []
    for k in users:
        m, g = msgs[k], msgs[k].gold
        stratum = "proportional" if k in sample else "enriched" if m.ref else "control" if m.cold else None
        if stratum is None:
            continue
        grounding = [conv[k - int(x[1:])].dayid if x.startswith("-") else key[x] for x in g.grounding]
        reply = next((x.text for x in msgs[k + 1:] if x.sender == "companion"), None)
        probes.append(ChatProbe(
            probe_dayid=conv[k].dayid, stratum=stratum, scoreable=g.scoreable, locus=g.locus,
            locus_verified=g.verified or g.locus, recent_context=[r.dayid for r in conv[max(0, k - RECENT_WINDOW):k]],
            episode_refs=grounding if g.locus in ("episode", "companion") else [],
            profile_refs=[claim_id[c] for c in g.claims], grounding_dayids=grounding, tier=g.tier,
            category=g.category, referent_on_screen=g.on_screen, reference_reply=reply,
            trace={x: {} for x in "ABCDE"}, fixture_match=g.match))
    return Participant(pid, conv, list(claims.values()), _persona(key, facts), probes, _qa(pid, key, facts))


def _claims(key: dict, f: dict) -> dict[str, ProfileClaim]:
    moved = "sister_update" in key
    rows = [  # one of each verdict, so reconstruction scoring meets them all
        ("job", f"Works as a {f['job']} ({f['detail']}) at the {f['place']}", "work", 0.9, "job", None, ["job", "job_lex"], "supported"),
        ("sister_name", f"Has a sister called {f['sister']}", "family", 0.95, "sister", None, ["sister"], "supported"),
        ("sister_city", f"Sister lives in {f['city']}", "family", 0.8, "sister", "sister_update", ["sister"], "supported"),
        ("sister_city2", f"Sister lives in {f['city2']}", "family", 0.85, "sister_update", None, ["sister_update"], "supported"),
        ("pet", f"Has a {f['pet']} called {f['pet_name']}", "pets", 0.95, "pet", None, ["pet"], "supported"),
        ("trip", f"Travelling to {f['trip']} in {f['month']} for a week", "plans", 0.9, "trip", None, ["trip"], "supported"),
        ("dislike", f"Dislikes {f['dislike']}", "preferences", 0.9, "dislike", None, ["dislike"], "supported"),
        ("hobby", f"Has started {f['hobby']}", "hobbies", 0.7, "hobby", None, ["hobby", "hobby_lex"], "supported"),
        ("trip_length", f"Travelling to {f['trip']} for two weeks", "plans", 0.5, "trip", None, ["trip"], "repairable"),
        ("children", "Has two children", "family", 0.3, None, None, ["job"], "unsupported"),
        ("rota", "May ask for a change of rota", "work", 0.6, None, None, ["job_lex"], "pending"),
        ("owns_pet", "Owns a pet", "pets", 0.9, None, None, ["pet"], "pruned_supported"),
        ("quiet", "Prefers quiet evenings at home", "lifestyle", 0.4, None, None, [], "undetermined"),
    ]
    out = {}
    for k, text, cat, conf, vfrom, vto, src, verdict in rows:
        if k == "sister_city2" and not moved:
            continue
        out[k] = ProfileClaim(id=f"c{len(out) + 1:04d}", text=text, category=cat, confidence=conf,
                              valid_from=key.get(vfrom), valid_to=key.get(vto),
                              source_dayids=[key[s] for s in src], verdict=verdict)
    return out


def _persona(key: dict, f: dict) -> Persona:
    ev = lambda *ks: [key[k] for k in ks]  # noqa: E731
    return Persona(
        big_five={"openness": Trait(value="high", strength="moderate", evidence=ev("hobby", "trip")),
                  "agreeableness": Trait(value="high", strength="moderate", evidence=ev("sister_para")),
                  "neuroticism": Trait(value="moderate", strength="weak", evidence=ev("job_para"))},
        slots={"occupation": Trait(value=f["job"], strength="strong", evidence=ev("job")),
               "pet": Trait(value=f"{f['pet']} ({f['pet_name']})", strength="strong", evidence=ev("pet")),
               "sibling": Trait(value=f["sister"], strength="strong", evidence=ev("sister"))},
        descriptions=[Description(facet="family", text=f"Close to their sister {f['sister']} and feels her absence",
                                  evidence=ev("sister", "sister_para")),
                      Description(facet="planning", text="Books trips well ahead and looks forward to them", evidence=ev("trip")),
                      Description(facet="wellbeing", text=f"Finds the {f['detail']} draining but enjoys the work",
                                  evidence=ev("job", "job_para"))])


def _qa(pid: str, key: dict, f: dict) -> list[QAItem]:
    moved = "sister_update" in key
    rows = [
        ("What does the user do for work?", f"{f['job']}, {f['detail']}", "biographical", ["job"]),
        ("What is the name of the user's sister?", f["sister"], "biographical", ["sister"]),
        ("Where does the user's sister live now?", f["city2"] if moved else f["city"],
         "temporal" if moved else "biographical", ["sister_update"] if moved else ["sister"]),
        (f"What is the name of the user's {f['pet']}?", f["pet_name"], "biographical", ["pet"]),
        ("Where and when is the user travelling?", f"{f['trip']} in {f['month']}, for a week", "plans", ["trip"]),
        ("Which book did the companion recommend?", f["book"], "companion", ["book"]),
        ("What food does the user dislike?", f["dislike"], "preference", ["dislike"]),
        ("What hobby did the user take up?", f["hobby"], "biographical", ["hobby"]),
        ("What is the user's favourite football team?", "Not mentioned", "adversarial", []),
    ]
    return [QAItem(id=f"{pid}-q{n:04d}", question=q, answer=a, category=c, evidence_dayids=[key[k] for k in ev])
            for n, (q, a, c, ev) in enumerate(rows, 1)]


def build(seed: int = 7) -> Release:
    participants = {pid: _participant(pid, i, seed) for i, pid in enumerate(SIZES)}
    return Release(manifest_for(participants, RECENT_WINDOW, generator="eval.fixtures", seed=seed), participants)


def make_release(out_dir: str | Path, seed: int = 7) -> Path:
    """Write the fixture release to `out_dir` (replacing an earlier release there) and return it."""
    return write_release(build(seed), out_dir, overwrite=True)


def main(argv: list[str] | None = None) -> None:
    ap = argparse.ArgumentParser(prog="python -m eval.fixtures", description=__doc__.split("\n")[0])
    ap.add_argument("out_dir", type=Path)
    ap.add_argument("--seed", type=int, default=7)
    a = ap.parse_args(argv)
    rel = build(a.seed)
    path = write_release(rel, a.out_dir, overwrite=True)
    for pid, c in rel.manifest.counts.items():
        print(f"{pid}: {c.messages} messages, {c.chat_rows} chat probes, {c.qa} qa, {c.claims} claims")
    print(f"wrote {path}")


if __name__ == "__main__":
    main()
