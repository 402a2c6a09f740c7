"""A compositional, seeded generator of everyday action requests and of non-requests with the
same surface words, split by TEMPLATE FAMILY into train and dev (eval.actionbench reads both).

A genuine row combines
- a lead-in (none, "can you", "could u", "would you mind" with the -ing verb, "pls", "I need you
  to", "hey, quick one:" ...),
- a verb frame of its kind (the family: "send a message to X saying ...", "text X that ...",
  "message X and tell her ...", "ping X: ...", "shoot X a text ...", "remind me <time> to ...",
  "don't let me forget to ...", "check in on me <time>", "put ... in my calendar", "jot down
  that ..." ...),
- slots: recipients (names from many cultures, relations, a pronoun after a sentence naming
  the person), contents, and times (weekday + part of day, "7pm-ish", "like 7", "in 20 min",
  "after lunch", "first thing tomorrow", "tonight", or none),
- surface: lowercase, no final punctuation, a typo in a frame word, a chatty sentence before
  or after.
A non-request row puts the same action words in one of sixteen framings (question, negation,
refusal, reported, quote, wish, hypothetical, plan_self, past, story, advice, sarcasm, idiom,
query_existing, conditional, other_addressee).

Rows carry, for a genuine request, the kind, recipient (and the name a pronoun stands for), the
dictated content, and the window its time must fall in relative to `NOW` (Monday 2026-11-30
10:00 UTC, the bench's clock); `when_window: null` means no time was said.

    python -m eval.everyday --split dev > dev.jsonl
"""

from __future__ import annotations

import json
import random
from datetime import datetime, timedelta, timezone

NOW = datetime(2026, 11, 30, 10, 0, tzinfo=timezone.utc)  # a Monday; eval.actionbench.NOW
SPLIT_SEED = 2025
DAYS = ["monday", "tuesday", "wednesday", "thursday", "friday", "saturday", "sunday"]

NAMES = [("Lena", "her"), ("Jonas", "him"), ("Priya", "her"), ("Oluwaseun", "him"), ("Mei", "her"),
         ("Siobhan", "her"), ("Arjun", "him"), ("Kwame", "him"), ("Yuki", "her"), ("Fatima", "her"),
         ("Björn", "him"), ("Zeynep", "her"), ("Thandiwe", "her"), ("Dmitri", "him"), ("Aroha", "her"),
         ("Camila", "her"), ("Chidi", "him"), ("Leilani", "her"), ("Mateus", "him"), ("Ngozi", "her"),
         ("Raj", "him"), ("Ana", "her"), ("Sven", "him"), ("Hiroshi", "him")]
RELATIONS = [("my sister", "her"), ("mum", "her"), ("my mom", "her"), ("my boss", "him"), ("my brother", "him"),
             ("dad", "him"), ("my landlord", "him"), ("grandma", "her"), ("my flatmate", "them"),
             ("my best friend", "her"), ("the babysitter", "her"), ("my manager", "her"), ("my husband", "him"),
             ("my wife", "her"), ("my neighbour", "him"), ("my coach", "them")]
MESSAGES = ["I can pick her up from the station", "I'll be there by 8", "dinner's on me tonight",
            "I'm running about 10 min late", "the keys are under the mat", "happy birthday, hope it's a good one",
            "I can't make it on Saturday, sorry", "the rent will be a few days late", "call me when you're free",
            "I got the flat!", "we're out of milk", "the meeting moved to 3", "thanks for yesterday",
            "I'll bring the cake", "don't forget the charger", "good luck with the exam tomorrow",
            "I left my scarf at yours", "see you at the usual place"]
TASKS = ["call the landlord", "take my meds", "put the bins out", "ring mum back", "pick up the dry cleaning",
         "pay the water bill", "book the vet", "email the school", "buy milk", "water the tomatoes",
         "send the invoice to Kwame", "stretch", "check the oven"]
NOTES = ["the wifi password is on the router", "Yuki is allergic to peanuts", "the spare key is in the blue pot",
         "the plumber comes on Thursday", "the gate code is 4821", "we're out of eggs",
         "Arjun prefers calls after 2pm", "parking is on level 3"]
ENTRIES = ["the dentist", "yoga", "lunch with Mei", "the parents' evening", "the vet appointment", "book club",
           "Siobhan's leaving drinks"]
TOPICS = ["the exam", "the interview", "my run", "the move", "how I'm sleeping", "the new job"]
NEWS = ["long day.", "ugh, what a week.", "ok so.", "I'm so tired lol.", "Busy morning here.", "quick thing,",
        "just got home.", "phone's at 5%."]
AFTER = ["thanks!", "ty", "you're a star.", "this week is a lot.", "cheers", ""]


def _at(day: int, h: int, m: int = 0) -> datetime:
    return (NOW + timedelta(days=day)).replace(hour=h, minute=m)


def _ahead(weekday: str) -> int:
    return (DAYS.index(weekday) - NOW.weekday()) % 7 or 7


# (family, phrase, window [lo, hi]) of a time; built per weekday so the slot varies.
def _times(rnd: random.Random) -> list[tuple[str, str, tuple[datetime, datetime] | None]]:
    d = rnd.choice(DAYS[1:])
    k = _ahead(d)
    return [
        ("day_evening", f"{d} evening", (_at(k, 17), _at(k, 21))),
        ("on_day_evening", f"on {d} evening", (_at(k, 17), _at(k, 21))),
        ("day_night", f"{d} night", (_at(k, 19), _at(k, 23))),
        ("day_morning", f"{d} morning", (_at(k, 7), _at(k, 11))),
        ("day_ish", f"{d} at 7pm-ish", (_at(k, 19), _at(k, 19))),
        ("day_like", f"{d} at like 7", (_at(k, 19), _at(k, 19))),
        ("in_min", "in 20 min", (NOW + timedelta(minutes=20), NOW + timedelta(minutes=20))),
        ("in_hour", "in an hour", (NOW + timedelta(hours=1), NOW + timedelta(hours=1))),
        ("after_lunch", "after lunch", (_at(0, 13), _at(0, 15))),
        ("first_thing", "first thing tomorrow", (_at(1, 7), _at(1, 9))),
        ("tonight", "tonight", (_at(0, 18), _at(0, 22))),
        ("tomorrow_am", "tomorrow morning", (_at(1, 7), _at(1, 11))),
        ("clock", "at 6:30pm", (_at(0, 18, 30), _at(0, 18, 30))),
    ]


# Genuine verb frames, by kind: (family, frame). {r} recipient, {p} pronoun, {c} content, {t} time.
FRAMES: dict[str, list[tuple[str, str]]] = {
    "send_message": [
        ("send_to_saying", "send a message to {r} saying {c}"), ("send_r_msg_saying", "send {r} a message saying {c}"),
        ("text_saying", "text {r} saying {c}"), ("text_that", "text {r} that {c}"), ("tell_that", "tell {r} that {c}"),
        ("tell_bare", "tell {r} {c}"), ("let_know_that", "let {r} know that {c}"), ("let_know_bare", "let {r} know {c}"),
        ("message_and_tell", "message {r} and tell {p} {c}"),
        ("message_for_me_tell", "message {r} for me and tell {p} {c}"), ("ping_colon", "ping {r}: {c}"),
        ("shoot_text", "shoot {r} a text saying {c}"), ("drop_line", "drop {r} a line saying {c}"),
        ("email_saying", "email {r} saying {c}"), ("whatsapp_saying", "whatsapp {r} saying {c}"),
        ("text_colon", "text {r}: {c}"), ("send_text_that", "send {r} a text that says {c}"),
        ("text_and_say", "text {r} and say {c}"),
    ],
    "set_reminder": [
        ("remind_t_to", "remind me {t} to {c}"), ("remind_to_t", "remind me to {c} {t}"),
        ("dont_let_forget", "don't let me forget to {c} {t}"), ("set_reminder_for", "set a reminder for {t} to {c}"),
        ("remind_to_notime", "remind me to {c}"), ("reminder_colon", "set a reminder to {c} {t}"),
        ("nudge_me", "nudge me {t} to {c}"),
    ],
    "schedule_checkin": [
        ("checkin_on_me", "check in on me {t}"), ("checkin_with_me_about", "check in with me {t} about {c}"),
        ("check_on_me", "check on me {t}"), ("follow_up", "follow up with me {t} about {c}"),
        ("checkin_later", "check in with me {t}"),
    ],
    "add_calendar_entry": [
        ("put_in_cal", "put {c} in my calendar {t}"), ("add_to_cal", "add {c} to my calendar for {t}"),
        ("pop_diary", "pop {c} in my diary {t}"), ("calendar_entry", "make a calendar entry for {c} {t}"),
    ],
    "add_note": [
        ("jot_down", "jot down that {c}"), ("make_note", "make a note that {c}"), ("note_that", "note that {c}"),
        ("take_note_colon", "take a note: {c}"), ("write_down", "write down that {c}"),
        ("save_note", "save a note saying {c}"),
    ],
    "draft_message": [
        ("draft_to", "draft a message to {r} saying {c}"), ("write_email", "write an email to {r} saying {c}"),
    ],
}
ING = {"send": "sending", "text": "texting", "tell": "telling", "let": "letting", "message": "messaging",
       "ping": "pinging", "shoot": "shooting", "drop": "dropping", "email": "emailing", "whatsapp": "whatsapping",
       "remind": "reminding", "don't": None, "set": "setting", "nudge": "nudging", "check": "checking",
       "follow": "following", "put": "putting", "add": "adding", "pop": "popping", "make": "making",
       "jot": "jotting", "note": "noting", "take": "taking", "write": "writing", "save": "saving",
       "draft": "drafting"}
LEADS = [("bare", "{a}"), ("can_you", "can you {a}?"), ("could_u", "could u {a}"), ("mind", "would you mind {ing}?"),
         ("pls", "pls {a}"), ("need_you", "I need you to {a}"), ("quick_one", "hey, quick one: {a}"),
         ("please_cap", "Please {a}."), ("could_you_please", "Could you please {a}?"), ("can_u", "can u {a}"),
         ("id_like", "I'd like you to {a}."), ("would_you", "would you {a} for me?")]
_TYPOS = {"can": "cna", "could": "coudl", "please": "plese", "you": "yuo", "remind": "remmind", "message": "mesage"}

# Non-request framings over the same action words ({a} base, {ing}, {past}).
NON: dict[str, list[str]] = {
    "question": ["should I {a}?", "would it be weird to {a}?", "do you think I should {a}?", "is it ok to {a}?"],
    "negation": ["I'm not going to {a}.", "don't {a}.", "please don't {a}", "I'd never {a}"],
    "refusal": ["I refuse to {a}.", "no way I'm {ing}", "I won't {a}, end of story."],
    "reported": ["my sister said to {a}", "Priya told me I should {a}.", "someone in the group chat wrote: {a}"],
    "quote": ["\"{A}\" was all he wrote.", "the note on the fridge said '{a}'", "she literally said “{a}” and left"],
    "wish": ["I wish I could just {a}.", "part of me wants to {a}", "so tempted to {a} honestly"],
    "hypothetical": ["if I were braver I'd {a}", "imagine if I {past}", "hypothetically, would you {a}?"],
    "plan_self": ["I'll {a} myself later.", "let me {a} when I get home", "gonna {a} myself tonight"],
    "past": ["I already {past}.", "yesterday I {past}", "remember when I {past}?"],
    "story": ["in my dream I {past}", "in the book, the main character decides to {a}", "the film ends when she {past}"],
    "advice": ["my therapist thinks I should {a}", "everyone says I should {a}", "my mum's advice was to {a}"],
    "sarcasm": ["oh sure, {a}, great idea lol", "yeah right, like I'd {a}", "totally going to {a}, not."],
    "idiom": ["remind me never to eat there again lol", "note to self: never trust the weather app",
              "tell me about it.", "don't let me forget how bad that was, haha", "let me tell you, that meeting was long"],
    "query_existing": ["is there anything I asked you to remind me about?", "what reminders do I have?",
                       "did I ask you to remind me to {task}?", "what's in my calendar this week?",
                       "what notes have I made so far?", "do I have any reminders for tomorrow?",
                       "have you got anything in my calendar for {day}?", "what did I ask you to note down?"],
    "conditional": ["if she doesn't reply by 6, {a}", "if it rains tomorrow, {a}", "only {a} if I say so later"],
    "other_addressee": ["Sam, can you {a}? (to my flatmate)", "I asked my husband to {a}",
                        "@Jonas pls {a}, I'm driving"],
}


def _past(verb: str, rest: str) -> str:
    past = {"send": "sent", "text": "texted", "tell": "told", "let": "let", "message": "messaged", "ping": "pinged",
            "shoot": "shot", "drop": "dropped", "email": "emailed", "whatsapp": "whatsapped", "remind": "reminded",
            "set": "set", "nudge": "nudged", "check": "checked", "follow": "followed", "put": "put", "add": "added",
            "pop": "popped", "make": "made", "jot": "jotted", "note": "noted", "take": "took", "write": "wrote",
            "save": "saved", "draft": "drafted"}.get(verb)
    return f"{past} {rest}" if past else f"did {verb} {rest}"


def split_families(seed: int = SPLIT_SEED, dev_share: float = 0.34) -> dict[str, set[str]]:
    """The frame families of each kind and the templates of each non-request framing, split
    into train and dev under `seed` (at least one dev family per kind and framing)."""
    rnd = random.Random(seed)
    dev: set[str] = set()
    for kind, frames in FRAMES.items():
        names = [f"{kind}/{f}" for f, _ in frames]
        rnd.shuffle(names)
        dev |= set(names[:max(1, round(len(names) * dev_share))])
    for framing, templates in NON.items():
        names = [f"{framing}/{i}" for i in range(len(templates))]
        rnd.shuffle(names)
        dev |= set(names[:max(1, round(len(names) * dev_share))])
    every = {f"{k}/{f}" for k, fr in FRAMES.items() for f, _ in fr} | {
        f"{k}/{i}" for k, ts in NON.items() for i in range(len(ts))}
    return {"dev": dev, "train": every - dev}


def _slots(rnd: random.Random, kind: str) -> dict:
    if kind in ("send_message", "draft_message"):
        who, pron = rnd.choice(NAMES if rnd.random() < 0.55 else RELATIONS)
        return {"r": who, "p": pron, "c": rnd.choice(MESSAGES)}
    if kind == "set_reminder":
        return {"c": rnd.choice(TASKS)}
    if kind == "add_note":
        return {"c": rnd.choice(NOTES)}
    if kind == "add_calendar_entry":
        return {"c": rnd.choice(ENTRIES)}
    return {"c": rnd.choice(TOPICS)}


def _action(rnd: random.Random, kind: str, frame: str) -> tuple[str, dict, tuple | None, str]:
    """(the action's words in base form, slots, the time window, the time family)."""
    s = _slots(rnd, kind)
    fam, phrase, window = rnd.choice(_times(rnd))
    if "{t}" not in frame:
        phrase, window, fam = "", None, "none"
    text = frame.format(r=s.get("r", ""), p=s.get("p", ""), c=s["c"], t=phrase)
    return " ".join(text.split()), s, window, fam


def _noise(rnd: random.Random, text: str, content: str) -> str:
    head, sep, tail = text.partition(content) if content in text else (text, "", "")
    roll = rnd.random()
    if roll < 0.2:
        return (head + sep + tail).lower() if content.lower() == content else head.lower() + sep + tail.lower()
    if roll < 0.3:
        words = head.split(" ")
        spots = [i for i, w in enumerate(words) if w.lower() in _TYPOS]
        if spots:
            i = rnd.choice(spots)
            words[i] = _TYPOS[words[i].lower()]
            return " ".join(words) + sep + tail
    if roll < 0.4:
        return (head.replace("'", "") + sep + tail).rstrip("?.!")
    return text


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def genuine(rnd: random.Random, kind: str, family: str, frame: str, i: int) -> dict:
    a, s, window, tfam = _action(rnd, kind, frame)
    verb, rest = a.split(" ", 1)
    lead_name, lead = rnd.choice(LEADS)
    ing = ING.get(verb)
    if lead_name == "mind" and not ing:
        lead_name, lead = LEADS[0]
    text = lead.format(a=a, ing=f"{ing} {rest}" if ing else a)
    recipient, refers_to = s.get("r"), None
    if kind == "send_message" and rnd.random() < 0.15 and " {r} " in f" {frame} ":
        # a pronoun after a sentence naming the person
        who, pron = rnd.choice(NAMES)
        text = text.replace(s["r"], pron if pron != "them" else "them", 1)
        text = f"{who} has been waiting all day. " + text
        recipient, refers_to = pron, who
    roll = rnd.random()
    if roll < 0.2:
        text = f"{rnd.choice(NEWS)} {text}"
    elif roll < 0.35:
        text = f"{text}{'' if text[-1] in '.?!' else '.'} {rnd.choice(AFTER)}".strip()
    if text == text.lower() and rnd.random() < 0.3:
        text = _cap(text)
    text = _noise(rnd, text, s["c"])
    return {"id": f"ev-g{i:04d}", "text": text, "genuine": True, "kinds": [kind], "recipient": recipient,
            "refers_to": refers_to, "content": s["c"] if kind not in ("schedule_checkin",) or "{c}" in frame
            else None, "framing": "request", "family": family, "lead": lead_name, "time_family": tfam,
            "when_window": [w.isoformat() for w in window] if window else None,
            "context": "work" if recipient in ("my boss", "my manager") else "personal"}


def non_request(rnd: random.Random, framing: str, t_index: int, i: int) -> dict:
    kind = rnd.choice(["send_message"] * 3 + ["set_reminder", "schedule_checkin", "add_calendar_entry", "add_note"])
    frame = rnd.choice([f for _, f in FRAMES[kind]])
    a, s, _, _ = _action(rnd, kind, frame)
    verb, rest = a.split(" ", 1)
    template = NON[framing][t_index]
    text = template.format(a=a, A=_cap(a), ing=f"{ING.get(verb) or verb} {rest}", past=_past(verb, rest),
                           task=rnd.choice(TASKS), day=rnd.choice(DAYS))
    if rnd.random() < 0.3:
        text = _cap(text)
    return {"id": f"ev-n{i:04d}", "text": text, "genuine": False, "kinds": [], "surface_kinds": [kind],
            "recipient": s.get("r"), "content": None, "framing": framing, "family": f"{framing}/{t_index}",
            "context": "personal"}


def generate(split: str = "dev", seed: int = 7, per_family: int = 6, per_template: int = 4) -> list[dict]:
    """`per_family` genuine rows per frame family and `per_template` rows per non-request
    template, of the families in `split` ("train", "dev" or "all")."""
    fams = split_families()
    keep = (lambda f: True) if split == "all" else (lambda f: f in fams[split])
    rnd = random.Random(f"{seed}:{split}")
    rows, g, n = [], 0, 0
    for kind, frames in FRAMES.items():
        for family, frame in frames:
            if keep(f"{kind}/{family}"):
                for _ in range(per_family):
                    g += 1
                    rows.append(genuine(rnd, kind, f"{kind}/{family}", frame, g))
    for framing, templates in NON.items():
        for t in range(len(templates)):
            if keep(f"{framing}/{t}"):
                for _ in range(per_template):
                    n += 1
                    rows.append(non_request(rnd, framing, t, n))
    return rows


# Autonomy statements: grants in the words people use, and non-grants over the same words.
GRANT_FAMILIES: dict[str, list[str]] = {
    "handle_from_now": ["you can handle my {obj} from here on, I trust you", "feel free to take care of my {obj} "
                        "from now on", "go ahead and deal with my {obj} yourself from now on"],
    "no_approval": ["don't wait for my approval", "you don't have to wait for me to say yes",
                    "there's no need to run things past me anymore", "you don't need my ok for {obj}"],
    "no_asking": ["stop asking me before you do stuff", "you don't have to ask me first anymore",
                  "no need to check with me before sending {obj}", "I'd rather you didn't ask me every time"],
    "trust": ["I trust you to sort out my {obj} without me", "I trust your judgement, just go ahead with {obj}",
              "honestly I trust you, you can just do things"],
    "permission": ["you have my permission to send {obj} without asking", "consider yourself allowed to act "
                   "without checking", "you're allowed to go ahead without asking me"],
    "happy_for": ["I'm happy for you to handle {obj} on your own", "I'm fine with you just doing it",
                  "it's ok for you to send {obj} without asking me"],
}
GRANT_OBJ = ["messages", "reminders", "texts", "the little stuff", "emails", "things"]
NOT_GRANT: dict[str, list[str]] = {
    "question": ["should I let you {g}?", "would it be ok if I said {g}?", "can I tell you to {g}?"],
    "negation": ["I'm not saying {g}.", "I would never tell you {g}.", "I don't want you to {g}"],
    "reported": ["my sister told her assistant: {g}", "my boss always says {g}", "Jonas said {g} to his intern"],
    "motto": ["{G}, that's my philosophy in life.", "my motto at work is {g}"],
    "conditional": ["if I ever say {g}, ignore me", "maybe one day I'll say {g}, but not yet"],
    "wish": ["I wish I could say {g}", "one day I hope to tell you {g}"],
    "past": ["last year I told my old assistant {g}", "I once said {g} to my team"],
}


def autonomy(split: str = "dev", seed: int = 7, per_template: int = 4) -> list[dict]:
    """Grants (split by family) and non-grants (split by template) in the shape actionbench reads."""
    rnd = random.Random(f"{seed}:auto:{split}")
    split_rnd = random.Random(SPLIT_SEED + 1)
    grant_fams = sorted(GRANT_FAMILIES)
    split_rnd.shuffle(grant_fams)
    dev_grants = set(grant_fams[:2])
    not_keys = [f"{k}/{i}" for k, ts in NOT_GRANT.items() for i in range(len(ts))]
    split_rnd.shuffle(not_keys)
    dev_not = set(not_keys[:len(not_keys) // 3])
    rows, i = [], 0
    for fam, templates in GRANT_FAMILIES.items():
        if split != "all" and (fam in dev_grants) != (split == "dev"):
            continue
        for t in templates:
            for _ in range(per_template):
                i += 1
                text = t.format(obj=rnd.choice(GRANT_OBJ))
                text = _cap(text) + rnd.choice([".", "", "!", " :)"]) if rnd.random() < 0.6 else text
                rows.append({"id": f"ev-ag{i:03d}", "text": text, "grants_autonomy": True, "framing": "grant",
                             "family": fam, "context": "personal"})
    for key in not_keys:
        if split != "all" and (key in dev_not) != (split == "dev"):
            continue
        framing, t = key.split("/")
        for _ in range(per_template):
            i += 1
            core = rnd.choice(rnd.choice(list(GRANT_FAMILIES.values()))).format(obj=rnd.choice(GRANT_OBJ))
            core = core.removeprefix("I'm ").removeprefix("I ")
            text = NOT_GRANT[framing][int(t)].format(g=core, G=_cap(core))
            rows.append({"id": f"ev-an{i:03d}", "text": text, "grants_autonomy": False, "framing": framing,
                         "family": key, "context": "personal"})
    return rows


# ------------------------------------------------------------------ round 3: the classes of misses
#
# The misses on the last set written by another author fell into classes (informal send verbs and
# abbreviations, check-ins with a day, notes and calendar entries introduced by a header and a
# colon, recipients with titles or of several words, requests inside a long chatty message, polite
# question forms). Each class has its own template families here, each family a frame over slots,
# and each class its non-request counterparts with the same verbs; the families of every class
# are split into train and dev under their own seed (`split_classes`), so the earlier split above
# is unchanged. {r} recipient, {p} pronoun, {c} content, {t} time, {d} a weekday, {h} how-clause.

RECIPIENTS3 = [("Dr. Patel", "her"), ("Mr. Okafor", "him"), ("Ms. Lindqvist", "her"), ("Mrs. Abara", "her"),
               ("Prof. Nakamura", "him"), ("Aunt Rosa", "her"), ("Uncle Dev", "him"), ("Mei Ling", "her"),
               ("Jean-Luc", "him"), ("Anna Maria", "her"), ("my friend Sam", "them"), ("my sister-in-law", "her"),
               ("my son's teacher", "her"), ("the kids' coach", "him"), ("my mother in law", "her"),
               ("Coach Rivera", "him"), ("Lena", "her"), ("Kwame", "him"), ("my landlord", "him"),
               ("my boss", "her"), ("mum", "her"), ("Grandpa Joe", "him")]
HOW = ["the interview went", "I'm sleeping", "the move is going", "my run went", "I'm feeling", "the exam went",
       "the new job is going"]
CHATTY_BEFORE = ["So work was a nightmare today, my manager moved every deadline and I barely had lunch.",
                 "Honestly this week has been so much, the kids are sick and the car broke down again.",
                 "ok so I finally got back from the trip, the train was delayed two hours and I'm starving.",
                 "Weird day. I ran into my old teacher at the shop and we talked for like an hour.",
                 "I've been thinking about the whole flat situation and I think we're going to stay."]
CHATTY_AFTER = ["I think I'll just order pizza tonight and crash.", "Anyway, how are you doing?",
                "Then I need a very long bath lol.", "The rest can wait until the weekend.",
                "Thanks, you're saving my life this week."]

# class -> [(family, kind, frame)]
CLASS_FRAMES: dict[str, list[tuple[str, str, str]]] = {
    "informal_send": [
        ("shoot_a_text_to", "send_message", "shoot a text to {r} saying {c}"),
        ("fire_off", "send_message", "fire off a text to {r} saying {c}"),
        ("fire_off_colon", "send_message", "fire off a quick message to {r}: {c}"),
        ("drop_a_text", "send_message", "drop {r} a text saying {c}"),
        ("drop_msg_to_that", "send_message", "drop a message to {r} that {c}"),
        ("msg_saying", "send_message", "msg {r} saying {c}"),
        ("msg_colon", "send_message", "msg {r}: {c}"),
        ("txt_that", "send_message", "txt {r} that {c}"),
        ("message_dash_quote", "send_message", "message {r} - '{c}'"),
        ("message_dash", "send_message", "message {r} - {c}"),
        ("text_comma", "send_message", "text {r}, {c}"),
        ("quick_msg_colon", "send_message", "send a quick msg to {r}: {c}"),
        ("hit_up_say", "send_message", "hit up {r} and say {c}"),
        ("heads_up", "send_message", "give {r} a heads up that {c}"),
        ("send_text_quote", "send_message", "send {r} a text: \"{c}\""),
        ("dm_saying", "send_message", "dm {r} saying {c}"),
        ("reach_out_let_know", "send_message", "reach out to {r} and let {p} know {c}"),
        ("get_message_to", "send_message", "get a message to {r} saying {c}"),
        ("shoot_msg_quote", "send_message", "shoot {r} a msg \u201c{c}\u201d"),
        ("email_comma", "send_message", "email {r}, {c}"),
    ],
    "checkin_day": [
        ("ask_me_on_day_how", "schedule_checkin", "ask me on {d} how {h}"),
        ("ask_me_t_how", "schedule_checkin", "ask me {t} how {h}"),
        ("touch_base_t", "schedule_checkin", "touch base with me {t}"),
        ("touch_base_about", "schedule_checkin", "touch base with me {t} about {c}"),
        ("checkin_with_on_day", "schedule_checkin", "check in with me on {d}"),
        ("checkin_on_day_about", "schedule_checkin", "check in with me on {d} about {c}"),
        ("follow_up_on_day", "schedule_checkin", "follow up with me on {d} about {c}"),
        ("see_how_doing", "schedule_checkin", "see how I'm doing {t}"),
        ("ping_me_ask_how", "schedule_checkin", "ping me {t} to ask how {h}"),
        ("check_back_with_me", "schedule_checkin", "check back with me on {d}"),
        ("make_sure_check_in", "schedule_checkin", "make sure you check in with me {t}"),
        ("come_check_on_me", "schedule_checkin", "come check on me {t}"),
    ],
    "note_header": [
        ("jot_this_colon", "add_note", "jot this down: {c}"),
        ("add_to_notes_colon", "add_note", "add to my notes: {c}"),
        ("note_this_colon", "add_note", "note this: {c}"),
        ("put_in_notes_colon", "add_note", "put this in my notes: {c}"),
        ("add_this_notes_dash", "add_note", "add this to my notes - {c}"),
        ("for_my_notes", "add_note", "for my notes: {c}"),
        ("save_to_notes", "add_note", "save this to my notes: {c}"),
        ("write_this_down", "add_note", "write this down for me: {c}"),
        ("new_note", "add_note", "new note: {c}"),
        ("note_of_this", "add_note", "make a note of this: {c}"),
        ("note_down_that", "add_note", "note down that {c}"),
        ("stick_in_notes", "add_note", "stick this in my notes: {c}"),
        ("add_note_saying", "add_note", "add a note saying {c}"),
        ("notes_colon", "add_note", "notes: {c}"),
    ],
    "calendar_header": [
        ("calendar_colon", "add_calendar_entry", "calendar: {c} {t}"),
        ("add_to_calendar_colon", "add_calendar_entry", "add to calendar: {c} {t}"),
        ("for_my_calendar", "add_calendar_entry", "for my calendar: {c} {t}"),
        ("new_entry_colon", "add_calendar_entry", "new calendar entry: {c} {t}"),
        ("put_in_calendar_colon", "add_calendar_entry", "put in my calendar: {c} {t}"),
        ("diary_colon", "add_calendar_entry", "diary: {c} {t}"),
        ("calendar_dash", "add_calendar_entry", "calendar - {c} {t}"),
        ("add_t_to_calendar", "add_calendar_entry", "add {c} {t} to my calendar"),
        ("schedule_in_calendar", "add_calendar_entry", "schedule {c} in my calendar for {t}"),
        ("block_out_for", "add_calendar_entry", "block out {t} in my calendar for {c}"),
        ("calendar_event", "add_calendar_entry", "add an event to my calendar: {c} {t}"),
        ("stick_in_calendar", "add_calendar_entry", "stick {c} in the calendar for {t}"),
    ],
    "titled_recipient": [  # the everyday send frames, over recipients with titles and of several words
        ("t_send_to_saying", "send_message", "send a message to {r} saying {c}"),
        ("t_text_saying", "send_message", "text {r} saying {c}"),
        ("t_email_that", "send_message", "email {r} that {c}"),
        ("t_tell_that", "send_message", "tell {r} that {c}"),
        ("t_let_know", "send_message", "let {r} know {c}"),
        ("t_text_colon", "send_message", "text {r}: {c}"),
        ("t_message_and_tell", "send_message", "message {r} and tell {p} {c}"),
        ("t_send_r_text", "send_message", "send {r} a text saying {c}"),
        ("t_draft_to", "draft_message", "draft an email to {r} saying {c}"),
    ],
}
# Polite question forms and long chatty messages are lead-ins and surroundings of any frame:
# their families are the lead or the surrounding, crossed with the train frames above.
POLITE_LEADS: list[tuple[str, str]] = [
    ("could_you_q", "could you {a}?"), ("would_you_mind_q", "would you mind {ing}?"),
    ("think_you_could", "do you think you could {a}?"), ("any_chance", "is there any chance you could {a}?"),
    ("be_able_to", "would you be able to {a}?"), ("any_chance_short", "any chance you could {a}?"),
    ("could_i_ask", "could I ask you to {a}?"), ("can_i_get_you", "can I get you to {a}?"),
    ("possible_for_you", "would it be possible for you to {a}?"), ("wondering_if", "I was wondering if you could {a}"),
    ("so_kind", "would you be so kind as to {a}?"), ("could_you_possibly", "could you possibly {a}?"),
    ("mind_ing", "mind {ing}?"), ("would_be_great", "if you could {a} that would be great"),
    ("do_me_a_favour", "can you do me a favour and {a}?"), ("could_you_please_q", "could you please {a} for me?"),
    ("can_you_pls", "can you pls {a}"), ("would_you_kindly", "would you kindly {a}?"),
]
CHATTY: list[tuple[str, str]] = [
    ("before_anyway", "{b} Anyway, {x}"), ("before_and_after", "{b} {X} {e}"), ("before_oh_and", "{b} oh and {x}"),
    ("two_before", "{b} {b2} So yeah. {X}"), ("after_only", "{X} {e} {e2}"), ("mid_but_first", "{b} but first, {x} {e}"),
]
_ING3 = {"shoot": "shooting", "fire": "firing", "drop": "dropping", "msg": "messaging", "txt": "texting",
         "hit": "hitting", "give": "giving", "dm": "dming", "reach": "reaching", "get": "getting", "ask": "asking",
         "touch": "touching", "see": "seeing", "come": "coming", "stick": "sticking", "block": "blocking",
         "schedule": "scheduling", "jot": "jotting", "save": "saving", "write": "writing", "note": "noting",
         "put": "putting", "add": "adding", "make": "making", "email": "emailing", "text": "texting",
         "message": "messaging", "send": "sending", "tell": "telling", "let": "letting", "follow": "following",
         "check": "checking", "draft": "drafting", "ping": "pinging"}

# Non-request counterparts with the same verbs ({a} the action's words in base form, {past}).
NON3: dict[str, list[str]] = {
    "informal_send": ["should I shoot a text to {r} saying {c}?", "I already fired off a text to {r} saying {c}",
                      "{r} dropped me a text saying {c}", "gonna msg {r} myself later: {c}",
                      "lol imagine if I txt {r} that {c}", "don't message {r} - {c}",
                      "my sister keeps saying hit up {r} and say {c}", "I'd never dm {r} saying {c}"],
    "checkin_day": ["my mum asked me on {d} how {h}", "I told my coach I'd touch base with him {t}",
                    "do you usually check in with people on {d}?", "I need to check in with my manager on {d}",
                    "I'll ask her on {d} how {h}", "she never checks in with me on {d}, typical",
                    "should I follow up with Lena on {d} about {c}?"],
    "note_header": ["I jotted this down yesterday: {c}", "she wrote in her notes: {c}",
                    "should I add this to my notes: {c}?", "my teacher always said jot this down: {c}",
                    "did I already put this in my notes: {c}?", "I never write things down, like {c}"],
    "calendar_header": ["the school calendar says: {c} {t}", "is {c} {t} in my calendar?",
                        "I already put {c} in my calendar {t}", "my wife's calendar: {c} {t}",
                        "should I add {c} to the calendar {t}?", "what's on my calendar {t}?"],
    "titled_recipient": ["should I text {r} saying {c}?", "{r} told me that {c}", "I'm not going to email {r} that {c}",
                         "if I were you I'd tell {r} that {c}", "yesterday I sent a message to {r} saying {c}"],
    "polite_question": ["could you believe {r} texted me saying {c}?", "would you mind if I texted {r} saying {c}?",
                        "do you think I could text {r} saying {c}?", "is there any chance {r} will message me?",
                        "can I text {r} saying {c} or is that weird?", "would you be able to tell if {r} is upset?",
                        "could I ever tell {r} that {c}?", "would you text {r} saying {c} if you were me?"],
    "chatty": ["{b} My sister said I should text {r} saying {c}. {e}",
               "{b} Part of me wants to message {r} that {c}, but I won't. {e}",
               "{b} I already told {r} that {c}. {e}",
               "{b} Should I remind {r} about it or is that too much? {e}"],
}


def split_classes(seed: int = SPLIT_SEED + 3, dev_share: float = 0.34) -> dict[str, set[str]]:
    """The round-3 families of each class (frames, polite leads, chatty surroundings) and the
    non-request templates of each class, split into train and dev under `seed`."""
    rnd = random.Random(seed)
    groups = {c: [f"{c}/{f}" for f, _, _ in fr] for c, fr in CLASS_FRAMES.items()}
    groups["polite_question"] = [f"polite_question/{f}" for f, _ in POLITE_LEADS]
    groups["chatty"] = [f"chatty/{f}" for f, _ in CHATTY]
    groups |= {f"non:{c}": [f"non:{c}/{i}" for i in range(len(ts))] for c, ts in NON3.items()}
    dev: set[str] = set()
    every: set[str] = set()
    for names in groups.values():
        names = sorted(names)
        rnd.shuffle(names)
        dev |= set(names[:max(1, round(len(names) * dev_share))])
        every |= set(names)
    return {"dev": dev, "train": every - dev}


def _time3(rnd: random.Random, kind: str, frame: str):
    """(time phrase, window, family, weekday) for a round-3 frame."""
    d = rnd.choice(DAYS[1:])
    k = _ahead(d)
    if "{d}" in frame:
        lo, hi = (_at(k, 7), _at(k, 21)) if kind != "add_calendar_entry" else (_at(k, 0), _at(k, 23, 59))
        return "", (lo, hi), "on_day", d
    if "{t}" not in frame:
        return "", None, "none", d
    fam, phrase, window = rnd.choice(_times(rnd) + [("on_day", f"on {d}", (_at(k, 7), _at(k, 21)))])
    return phrase, window, fam, d


def _fill3(rnd: random.Random, kind: str, frame: str, titled: bool = False) -> tuple[str, dict, tuple | None, str]:
    s = _slots(rnd, kind)
    if kind in ("send_message", "draft_message") and (titled or rnd.random() < 0.4):
        s["r"], s["p"] = rnd.choice(RECIPIENTS3)
    phrase, window, tfam, d = _time3(rnd, kind, frame)
    s["h"] = rnd.choice(HOW)
    text = frame.format(r=s.get("r", ""), p=s.get("p", ""), c=s["c"], t=phrase, d=d, h=s["h"])
    return " ".join(text.split()), s, window, tfam


def _row3(i: int, text: str, kind: str, s: dict, window, tfam: str, cls: str, family: str, frame: str) -> dict:
    content = s["c"] if kind != "schedule_checkin" or "{c}" in frame else None
    recipient = s.get("r") if kind in ("send_message", "draft_message") else None
    return {"id": f"ev3-g{i:04d}", "text": text, "genuine": True, "kinds": [kind], "recipient": recipient,
            "refers_to": None, "content": content, "framing": "request", "class": cls, "family": family,
            "time_family": tfam, "when_window": [w.isoformat() for w in window] if window else None,
            "context": "work" if recipient in ("my boss",) else "personal"}


def _verb_frame(frame: str) -> bool:
    return frame.split(" ", 1)[0] in _ING3


def generate_classes(split: str = "dev", seed: int = 7, per_family: int = 5, per_template: int = 4) -> list[dict]:
    """Round-3 rows: `per_family` genuine rows per family of `split` (frames of each class; polite
    leads and chatty surroundings each over frames of the same split), `per_template` rows per
    non-request template of `split`."""
    fams = split_classes()
    keep = (lambda f: True) if split == "all" else (lambda f: f in fams[split])
    rnd = random.Random(f"{seed}:classes:{split}")
    frames = [(c, f, k, fr) for c, fs in CLASS_FRAMES.items() for f, k, fr in fs]
    own = [x for x in frames if keep(f"{x[0]}/{x[1]}")]
    # a header frame ("calendar: ...", "new note: ...") takes no lead-in: only frames that open
    # with the action's verb are put in a polite question or a chatty message
    pool = [x for x in own if _verb_frame(x[3])] or [x for x in frames if _verb_frame(x[3])]
    rows, g, n = [], 0, 0
    for cls, family, kind, frame in own:
        for _ in range(per_family):
            g += 1
            text, s, window, tfam = _fill3(rnd, kind, frame, titled=cls == "titled_recipient")
            lead = rnd.random() if _verb_frame(frame) else 1.0
            if lead < 0.25:
                text = f"please {text}" if not text.startswith("please") else text
            elif lead < 0.4:
                text = _cap(text) + "."
            elif lead < 0.5:
                text = f"can you {text}?"
            rows.append(_row3(g, text, kind, s, window, tfam, cls, f"{cls}/{family}", frame))
    for group, wrappers in (("polite_question", POLITE_LEADS), ("chatty", CHATTY)):
        for name, wrap in wrappers:
            if not keep(f"{group}/{name}"):
                continue
            for _ in range(per_family):
                g += 1
                cls, family, kind, frame = rnd.choice(pool)
                a, s, window, tfam = _fill3(rnd, kind, frame)
                verb, _, rest = a.partition(" ")
                if group == "polite_question":
                    ing = _ING3.get(verb.lower())
                    if "{ing}" in wrap and not ing:
                        wrap = "could you {a}?"
                    text = wrap.format(a=a, ing=f"{ing} {rest}" if ing else a)
                else:
                    lead_name, lead = rnd.choice(LEADS[:6] + LEADS[7:])
                    ing = _ING3.get(verb.lower())
                    x = lead.format(a=a, ing=f"{ing} {rest}" if ing else a)
                    x = x if x[-1] in ".?!" else x + "."
                    b, b2 = rnd.sample(CHATTY_BEFORE, 2)
                    e, e2 = rnd.sample(CHATTY_AFTER, 2)
                    text = wrap.format(b=b, b2=b2, e=e, e2=e2, x=x, X=_cap(x))
                rows.append(_row3(g, text, kind, s, window, tfam, group, f"{group}/{name}", frame))
    for cls, templates in NON3.items():
        for t, template in enumerate(templates):
            if not keep(f"non:{cls}/{t}"):
                continue
            for _ in range(per_template):
                n += 1
                kind = {"checkin_day": "schedule_checkin", "note_header": "add_note",
                        "calendar_header": "add_calendar_entry"}.get(cls, "send_message")
                s = _slots(rnd, kind)
                if kind == "send_message":
                    s["r"], s["p"] = rnd.choice(RECIPIENTS3 + RELATIONS[:4])
                phrase, _, _, d = _time3(rnd, kind, "{t}")
                b, = rnd.sample(CHATTY_BEFORE, 1)
                e, = rnd.sample(CHATTY_AFTER, 1)
                text = template.format(r=s.get("r", ""), c=s["c"], t=phrase, d=d, h=rnd.choice(HOW), b=b, e=e)
                text = " ".join(text.split())
                if rnd.random() < 0.3:
                    text = _cap(text)
                rows.append({"id": f"ev3-n{n:04d}", "text": text, "genuine": False, "kinds": [],
                             "surface_kinds": [kind] + (["set_reminder"] if "remind" in template else []),
                             "recipient": s.get("r"), "content": None, "framing": cls, "class": cls,
                             "family": f"non:{cls}/{t}", "context": "personal"})
    return rows


# ------------------------------------------------------------------ round 4: constructions of the last misses
#
# The misses on the 161 requests of the last set by another author fell into classes of
# CONSTRUCTION: the time or the dictated words in a sentence after the action's verb; a question
# to pass on ("message X asking if ..."); app and idiom send verbs (whatsapp, ping, drop a line,
# shoot a text, let X know); words dictated after "this:", in quotes or between "quote ...
# unquote"; polite leads ("kindly", "I need you to", "would you mind"); chit-chat around the
# request. Each class has TRAIN and TEST families that differ in construction, not in fillers
# (the split is written down per family, not drawn: a test family is a construction no train
# family has). The non-request families put the same action words in reported speech,
# hypotheticals, negations, things already done, questions about existing reminders, wishes
# about others, quotes, and talk about the feature itself. {r} recipient, {p} pronoun, {c}
# content, {t} time, {T} capitalized time, {q} a question clause to pass on.

QUESTIONS4 = [("if", "she can pick me up from the station"), ("whether", "he wants to come on Sunday"),
              ("if", "they are free for dinner"), ("when", "the train gets in"), ("whether", "the flat is still free"),
              ("what time", "the party starts"), ("if", "she got my parcel"), ("where", "we are meeting")]

# class -> [(family, split, kind, frame)]
CLASS_FRAMES4: dict[str, list[tuple[str, str, str, str]]] = {
    "next_sentence": [
        ("remind_then_would_be_good", "train", "set_reminder", "remind me to {c}. {t} would be good"),
        ("remind_then_make_it", "train", "set_reminder", "remind me to {c}. make it {t}"),
        ("send_then_say", "train", "send_message", "send a message to {r}. say {c}"),
        ("text_then_tell", "train", "send_message", "text {r}. tell {p} {c}"),
        ("reminder_then_time_please", "train", "set_reminder", "set a reminder to {c}. {T} please"),
        ("remind_q_then_ideally", "test", "set_reminder", "can you remind me to {c}? ideally {t}"),
        ("remind_then_time_works", "test", "set_reminder", "remind me to {c}. {T} works best for me"),
        ("message_then_the_message", "test", "send_message", "message {r} for me. the message is: {c}"),
        ("text_q_then_just_say", "test", "send_message", "can you text {r}? just say {c}"),
        ("email_then_write", "test", "send_message", "email {r}. write that {c}"),
    ],
    "asking": [
        ("message_asking", "train", "send_message", "message {r} asking {q}"),
        ("text_asking", "train", "send_message", "text {r} asking {q}"),
        ("send_msg_asking", "train", "send_message", "send {r} a message asking {q}"),
        ("email_to_ask", "test", "send_message", "email {r} to ask {q}"),
        ("ask_r", "test", "send_message", "ask {r} {q}"),
        ("text_and_ask", "test", "send_message", "text {r} and ask {q}"),
        ("drop_line_asking", "test", "send_message", "drop {r} a line asking {q}"),
    ],
    "app_verbs": [
        ("whatsapp_that", "train", "send_message", "whatsapp {r} that {c}"),
        ("ping_saying", "train", "send_message", "ping {r} saying {c}"),
        ("drop_line_saying", "train", "send_message", "drop {r} a line saying {c}"),
        ("shoot_text_saying", "train", "send_message", "shoot {r} a text saying {c}"),
        ("let_know", "train", "send_message", "let {r} know {c}"),
        ("send_whatsapp_to", "test", "send_message", "send a whatsapp to {r} saying {c}"),
        ("drop_line_to_say", "test", "send_message", "drop {r} a line to say {c}"),
        ("shoot_over_text", "test", "send_message", "shoot a quick text over to {r} that {c}"),
        ("ping_message", "test", "send_message", "ping {r} a message: {c}"),
        ("give_shout_and_say", "test", "send_message", "give {r} a shout and say {c}"),
        ("let_know_on_whatsapp", "test", "send_message", "let {r} know on whatsapp that {c}"),
    ],
    "dictated": [
        ("send_this_colon", "train", "send_message", "send {r} this: {c}"),
        ("text_quote", "train", "send_message", "text {r} \"{c}\""),
        ("tell_quote_unquote", "train", "send_message", "tell {r} quote {c} unquote"),
        ("message_following", "train", "send_message", "message {r} the following: {c}"),
        ("send_this_message_to", "test", "send_message", "send this message to {r}: {c}"),
        ("text_the_words", "test", "send_message", "text {r} the words \u201c{c}\u201d"),
        ("message_quote_comma", "test", "send_message", "message {r}, quote, {c}, end quote"),
        ("heres_message_for", "test", "send_message", "here's a message for {r}: {c}"),
        ("send_r_this_text", "test", "send_message", "send {r} this text - '{c}'"),
    ],
}
# Polite leads and chit-chat are around any frame: crossed with the frames of the same split.
POLITE4: list[tuple[str, str, str]] = [
    ("kindly", "train", "Kindly {a}."), ("need_you_to", "train", "I need you to {a}."),
    ("would_you_mind", "train", "would you mind {ing}?"), ("want_you_to", "train", "I want you to {a}"),
    ("kindly_lower_please", "test", "please kindly {a}"), ("need_you_to_please", "test", "I need you to please {a}"),
    ("do_you_mind", "test", "do you mind {ing}?"), ("appreciate_if", "test", "I'd appreciate it if you could {a}"),
    ("be_a_star", "test", "be a star and {a}"), ("grateful_if", "test", "I'd be grateful if you could {a}."),
]
CHAT4: list[tuple[str, str, str]] = [
    ("hi_hope", "train", "Hi! Hope you're well. {X} Thanks so much."),
    ("after_question", "train", "{X} How's your day going, by the way?"),
    ("news_then", "train", "Ugh, Mondays. {X}"),
    ("emoji_thanks", "test", "hey hey \U0001f642 {X} you're the best \U0001f64f"),
    ("long_before", "test", "Morning! Slept badly again, the neighbours had a party until 3. Anyway. {X}"),
    ("question_before", "test", "Are you there? Okay good. {X} Cheers!"),
]
# Non-requests with the same action words: (family, split, template). {a} the action's words.
NON4: dict[str, list[tuple[str, str, str]]] = {
    "reported": [("asked_me_to", "train", "{r} asked me to {a}"),
                 ("said_colon", "test", "my flatmate said, and I quote: {a}"),
                 ("told_me_yesterday", "test", "Yesterday {r} told me I should {a}.")],
    "hypothetical": [("if_i_would_she", "train", "if I texted {r} saying {c}, would that be weird?"),
                     ("imagine_if", "test", "imagine if I had to {a}, haha no"),
                     ("suppose_i", "test", "Suppose I wanted to {a}, what would you say?")],
    "negation": [("no_need", "train", "no need to {a}"),
                 ("dont_bother", "test", "don't bother to {a}, I'll see {p} later"),
                 ("not_yet", "test", "please don't {a} yet, I'm still deciding")],
    "already_done": [("already_texted", "train", "I already texted {r} saying {c}"),
                     ("just_sent", "test", "I just sent {r} a message asking {q}"),
                     ("done_it", "test", "I've let {r} know {c} already, all sorted")],
    "existing_reminders": [("did_i_set", "train", "did I set a reminder to {c2}?"),
                           ("what_reminders_for", "test", "what reminders have I got for {t}?"),
                           ("anything_about", "test", "have I asked you to remind me about {c2}?"),
                           ("show_me", "test", "show me my reminders please")],
    "wish_others": [("wish_would", "train", "I wish {r} would text me saying {c}"),
                    ("hope_tells", "test", "I hope {r} tells me {c}"),
                    ("if_only", "test", "if only {r} would message me asking {q}")],
    "quote": [("sign_said", "train", "the sign on the door said \"{A}\""),
              ("song_lyric", "test", "there's this song that goes '{a}', can't get it out of my head")],
    "feature_talk": [("can_you_send", "train", "can you actually send messages to people?"),
                     ("how_reminders_work", "test", "how do reminders work here?"),
                     ("what_happens_when", "test", "what happens when I ask you to {a}?"),
                     ("do_you_ever", "test", "do you ever send texts without asking me first?")],
}
# the non-request templates whose {a} may also be "remind me ..." (the others have the
# participant as the subject of the action: "I asked ... to remind me" would not be English)
_ANY_KIND4 = {"no_need", "dont_bother", "not_yet", "what_happens_when", "sign_said", "song_lyric", "said_colon"}
_ING4 = _ING3 | {"whatsapp": "whatsapping", "ask": "asking", "give": "giving", "remind": "reminding",
                 "set": "setting"}


def split_round4() -> dict[str, set[str]]:
    """The round-4 families, split by construction as written in the tables (not drawn)."""
    out: dict[str, set[str]] = {"train": set(), "test": set()}
    for cls, fams in CLASS_FRAMES4.items():
        for fam, split, _, _ in fams:
            out[split].add(f"{cls}/{fam}")
    for group, table in (("polite", POLITE4), ("chat", CHAT4)):
        for fam, split, _ in table:
            out[split].add(f"{group}/{fam}")
    for cls, fams in NON4.items():
        for fam, split, _ in fams:
            out[split].add(f"non:{cls}/{fam}")
    return out


def _fill4(rnd: random.Random, kind: str, frame: str) -> tuple[str, dict, tuple | None, str]:
    s = _slots(rnd, kind)
    if kind == "send_message" and rnd.random() < 0.4:
        s["r"], s["p"] = rnd.choice(RECIPIENTS3)
    if "{q}" in frame:
        w, clause = rnd.choice(QUESTIONS4)
        s["c"] = f"{w} {clause}"
    if "{t}" in frame or "{T}" in frame:
        fam, phrase, window = rnd.choice(_times(rnd))
    else:
        fam, phrase, window = "none", "", None
    text = frame.format(r=s.get("r", ""), p=s.get("p", ""), c=s["c"], q=s["c"], t=phrase, T=_cap(phrase))
    return " ".join(text.split()), s, window, fam


def _row4(i: int, text: str, kind: str, s: dict, window, tfam: str, cls: str, family: str) -> dict:
    recipient = s.get("r") if kind in ("send_message", "draft_message") else None
    return {"id": f"ev4-g{i:04d}", "text": text, "genuine": True, "kinds": [kind], "recipient": recipient,
            "refers_to": None, "content": s["c"], "framing": "request", "class": cls, "family": family,
            "time_family": tfam, "when_window": [w.isoformat() for w in window] if window else None,
            "context": "work" if recipient in ("my boss", "my manager") else "personal"}


def generate_round4(split: str = "test", seed: int = 7, per_family: int = 6, per_template: int = 6) -> list[dict]:
    """Round-4 rows of `split` ("train", "test" or "all"): `per_family` genuine rows per frame,
    polite-lead and chit-chat family (the last two over the frames of the same split and the
    earlier rounds' plain frames), `per_template` rows per non-request family."""
    fams = split_round4()
    keep = (lambda f: True) if split == "all" else (lambda f: f in fams[split])
    rnd = random.Random(f"{seed}:round4:{split}")
    own = [(c, f, k, fr) for c, fs in CLASS_FRAMES4.items() for f, sp, k, fr in fs if keep(f"{c}/{f}")]
    plain = [("plain", f, k, fr) for k, frs in FRAMES.items() for f, fr in frs if k in ("send_message", "set_reminder")
             and "{t}" not in fr]
    pool = [x for x in own if x[3].split(" ", 1)[0] in _ING4] + plain
    rows, g, n = [], 0, 0
    for cls, family, kind, frame in own:
        for _ in range(per_family):
            g += 1
            text, s, window, tfam = _fill4(rnd, kind, frame)
            if rnd.random() < 0.2 and frame[0].islower():
                text = _cap(text)
            rows.append(_row4(g, text, kind, s, window, tfam, cls, f"{cls}/{family}"))
    for group, table in (("polite", POLITE4), ("chat", CHAT4)):
        for name, _, wrap in table:
            if not keep(f"{group}/{name}"):
                continue
            for _ in range(per_family):
                g += 1
                _, _, kind, frame = rnd.choice(pool)
                a, s, window, tfam = _fill4(rnd, kind, frame)
                if "." in a or "?" in a.rstrip("?"):  # a frame of two sentences takes no lead-in
                    a, s, window, tfam = _fill4(rnd, "send_message", "text {r} saying {c}")
                    kind = "send_message"
                verb, _, rest = a.partition(" ")
                ing = _ING4.get(verb.lower())
                if group == "polite":
                    text = wrap.format(a=a, ing=f"{ing} {rest}" if ing else a) if ing or "{ing}" not in wrap \
                        else f"could you {a}?"
                else:
                    x = _cap(a) + ("" if a[-1] in ".?!" else ".")
                    text = wrap.format(X=x)
                rows.append(_row4(g, text, kind, s, window, tfam, group, f"{group}/{name}"))
    for cls, table in NON4.items():
        for name, _, template in table:
            if not keep(f"non:{cls}/{name}"):
                continue
            for _ in range(per_template):
                n += 1
                kind = rnd.choice(["send_message", "send_message", "set_reminder"]) if name in _ANY_KIND4 \
                    else "send_message"
                frame = rnd.choice([f for _, f in FRAMES[kind] if "{t}" not in f] + (
                    ["message {r} asking {q}"] if kind == "send_message" else []))
                a, s, _, _ = _fill4(rnd, kind, frame)
                w, clause = rnd.choice(QUESTIONS4)
                fam_t, phrase, _ = rnd.choice(_times(rnd))
                r, p = (s["r"], s["p"]) if "r" in s else rnd.choice(RECIPIENTS3)
                text = template.format(a=a, A=_cap(a), r=r, p=p, c=rnd.choice(MESSAGES), q=f"{w} {clause}",
                                       c2=rnd.choice(TASKS), t=phrase)
                if rnd.random() < 0.3:
                    text = _cap(text)
                rows.append({"id": f"ev4-n{n:04d}", "text": text, "genuine": False, "kinds": [],
                             "surface_kinds": [kind], "recipient": r, "content": None, "framing": cls, "class": cls,
                             "family": f"non:{cls}/{name}", "context": "personal"})
    return rows


def main(argv: list[str] | None = None) -> None:
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--split", choices=("train", "dev", "test", "all"), default="dev",
                    help="test: only with --round4 (its families are train or test)")
    ap.add_argument("--seed", type=int, default=7)
    ap.add_argument("--autonomy", action="store_true")
    ap.add_argument("--classes", action="store_true", help="the round-3 class families instead (split_classes)")
    ap.add_argument("--round4", action="store_true",
                    help="the round-4 construction families (split_round4: train or test)")
    args = ap.parse_args(argv)
    if args.round4 and args.split == "dev":
        ap.error("--round4 has train and test families, no dev: pass --split train or --split test")
    if args.split == "test" and not args.round4:
        ap.error("--split test exists only with --round4")
    rows = generate_round4(args.split, args.seed) if args.round4 else autonomy(args.split, args.seed) if args.autonomy else generate_classes(args.split, args.seed) \
        if args.classes else generate(args.split, args.seed)
    for r in rows:
        print(json.dumps(r, ensure_ascii=False))


if __name__ == "__main__":
    main()
