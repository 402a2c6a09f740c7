"""A seeded generator of action messages: non-requests in many framings, and genuine requests
in the same variety, in the shape `eval.actionbench` reads.

Each row: {"id", "text", "genuine", "kinds", "recipient", "content", "framing", "context"}
(`kinds`: the action kinds asked for, empty for a non-request; `content`: the exact words
dictated, for a genuine request). A row is built by combining, at random under a seed:

- an action of the inventory (all six kinds) with a recipient (a name or a relation) and its
  content (what the message says, what to be reminded of, the note, the entry, the topic),
  rendered in the verb form a framing needs (base, -ing, past, third person, "your" recipient);
- a framing: for a non-request one of twelve (question, negation, refusal, reported speech,
  quote, wish or temptation, hypothetical, plan to do it oneself, past event, dream or story,
  advice from someone else, sarcasm), for a genuine request one of the everyday request forms
  (bare, please, can/could/would you, I need/I'd like you to, would you mind, after other news,
  with a discourse opener);
- surface noise: lowercase, a dropped apostrophe, a typo in a frame word.

The framings are templates over verb forms, not example sentences: every combination of
template, action, recipient and content is a different message, so a recognizer cannot pass by
knowing the examples. Nothing here is read by the product's code.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass

NAMES = ["Lena", "Jonas", "Priya", "Marco", "Sofia", "Omar", "Hannah", "Kenji", "Elif", "Mateo", "Grace",
         "Tomás", "Aisha", "Dr. Patel", "Mrs. Gomez", "Ben", "Clara", "Yusuf", "Noor", "Ivan"]
RELATIONS = ["my sister", "my brother", "my mom", "my dad", "my boss", "my landlord", "my ex", "my manager",
             "my neighbour", "my roommate", "my best friend", "my wife", "my husband", "my coach", "my tutor",
             "my aunt", "the team", "the plumber", "my teacher", "my doctor"]
MESSAGES = ["I quit", "I'm running late", "happy birthday", "I miss you", "the rent will be late this month",
            "I can pick you up from the station", "the meeting is moved to Thursday", "I'm not coming tonight",
            "sorry about yesterday", "the heating is broken again", "I got the job", "call me when you can",
            "do not worry, I am not going to cancel the trip", "dinner is at 7", "I'm sick today",
            "the keys are under the mat", "congratulations on the baby", "we need to talk",
            "I found your scarf", "the report is ready"]
TASKS = ["call the dentist", "water the plants", "take my pills", "pay the electricity bill", "book the flights",
         "buy a present for Jo", "renew my passport", "send the invoice", "feed the cat", "move the car",
         "back up my laptop", "call grandma"]
NOTES = ["the wifi password is on the router", "Sam is allergic to peanuts", "the spare key is in the blue pot",
         "the client prefers calls after 2pm", "the gate code is 4821", "we are out of eggs"]
ENTRIES = ["the dentist", "yoga class", "the team lunch", "date night", "the vet appointment", "book club"]
TOPICS = ["the exam", "the interview", "my run", "the presentation", "the move", "the doctor's visit"]
WHENS = ["tomorrow at 9am", "on friday at 3pm", "tonight", "in 2 hours", "next week", "on sunday at 5pm"]
NEWS = ["Long day at work.", "Ugh, traffic is terrible.", "My phone is almost dead.", "I just got home.",
        "Okay, quick one.", "So the meeting ran over.", "I'm exhausted today.", "Busy morning here."]

KINDS = ["send_message", "draft_message", "set_reminder", "schedule_checkin", "add_note", "add_calendar_entry"]


@dataclass
class Act:
    """One action in every verb form a framing needs."""
    kind: str
    recipient: str | None
    content: str | None
    base: str  # "text my sister saying hi"
    ing: str  # "texting my sister saying hi"
    past: str  # "texted my sister saying hi"
    third: str  # "texts my sister saying hi" (someone else does it)
    yours: str  # base with the participant's things as "your" (advice addressed to them)


_SEND = [  # (base, ing, past, third, pattern)
    ("text", "texting", "texted", "texts", "{v} {r} saying {c}"),
    ("email", "emailing", "emailed", "emails", "{v} {r} saying {c}"),
    ("message", "messaging", "messaged", "messages", "{v} {r} saying {c}"),
    ("send", "sending", "sent", "sends", "{v} {r} a message saying {c}"),
    ("send", "sending", "sent", "sends", "{v} a message to {r} saying {c}"),
    ("tell", "telling", "told", "tells", "{v} {r} that {c}"),
    ("let", "letting", "let", "lets", "{v} {r} know that {c}"),
    ("text", "texting", "texted", "texts", "{v} {r}: {c}"),
]


def _your(s: str) -> str:
    return " ".join({"my": "your", "me": "you", "I": "you", "I'm": "you're", "I'll": "you'll"}.get(w, w)
                    for w in s.split())


def act(rnd: random.Random, kind: str, genuine: bool = False) -> Act:
    """A random action of `kind`, rendered in every verb form."""
    def forms(pattern: str, verbs: tuple[str, str, str, str], **slots) -> dict:
        names = ("base", "ing", "past", "third")
        out = {n: pattern.format(v=v, **slots) for n, v in zip(names, verbs)}
        out["yours"] = pattern.format(v=verbs[0], **{k: _your(v) for k, v in slots.items()})
        return out

    if kind in ("send_message", "draft_message"):
        r = rnd.choice(NAMES if rnd.random() < 0.45 else RELATIONS)
        c = rnd.choice(MESSAGES)
        if kind == "send_message":
            *verbs, pattern = rnd.choice(_SEND)
            f = forms(pattern, tuple(verbs), r=r, c=c)
        else:
            what = rnd.choice(["a message", "an email", "a text", "a reply"])
            f = forms("{v} " + what + " to {r} saying {c}", ("draft", "drafting", "drafted", "drafts"), r=r, c=c)
        return Act(kind, r, c, **f)
    when = rnd.choice(WHENS)
    # "remind me" / "check in with me" only where the companion is the one addressed (a request);
    # a framing with the participant as subject needs a form they could do themselves.
    addressed = genuine and rnd.random() < 0.6
    if kind == "set_reminder":
        c = rnd.choice(TASKS)
        f = forms("{v} me to {c} {w}", ("remind", "reminding", "reminded", "reminds"), c=c, w=when) if addressed \
            else forms("{v} a reminder to {c} {w}", ("set", "setting", "set", "sets"), c=c, w=when)
    elif kind == "schedule_checkin":
        c = rnd.choice(TOPICS)
        f = forms("{v} in with me about {c} {w}", ("check", "checking", "checked", "checks"), c=c, w=when) \
            if addressed else forms("{v} a check-in about {c} {w}", ("schedule", "scheduling", "scheduled",
                                                                    "schedules"), c=c, w=when)
    elif kind == "add_note":
        c = rnd.choice(NOTES)
        f = forms("{v} a note that {c}", ("make", "making", "made", "makes"), c=c)
    else:
        c = rnd.choice(ENTRIES)
        f = forms("{v} {c} in my calendar {w}", ("put", "putting", "put", "puts"), c=c, w=when)
    return Act(kind, None, c, **f)


# Non-request framings: each template names the verb form it takes. None of them asks the
# companion to do the action now.
FRAMINGS: dict[str, list[str]] = {
    "question": ["Should I {base}?", "Would it be crazy to {base}?", "Do you think I should {base}?",
                 "Is it a good idea to {base}?", "What would happen if I {past}?", "Did you {base}?",
                 "Would you {base} if you were me?", "Why would anyone {base}?", "Is it rude to {base}?"],
    "negation": ["I'm not going to {base}.", "Don't {base}.", "Please don't {base}.", "I would never {base}.",
                 "Never {base}.", "You shouldn't {base}.", "I'm not {ing}.", "Do not {base}, ever."],
    "refusal": ["I refuse to {base}.", "I won't {base}.", "There's no way I'm {ing}.",
                "I'm not {ing}, forget it.", "Absolutely not going to {base}.", "I flatly refuse to {base}."],
    "reported": ["Someone on reddit wrote: {base}", "My friend said: {base}", "She told me to {base}.",
                 "My coworker keeps saying I should {base}.", "The group chat says {base}.",
                 "My sister texted me this: {base}", "He kept telling me to {base}."],
    "quote": ["\"{Base}\" is what my mum always says.", "I saw a meme that said \u201c{Base}\u201d.",
              "He literally wrote '{base}' on the whiteboard.", "The sign said \"{Base}\", which made me laugh.",
              "\u201c{Base}\u201d, she said, and walked off."],
    "wish": ["I wish I could {base}.", "Part of me is tempted to {base}.", "I really want to {base}.",
             "I'd love to {base} someday.", "Sometimes I fantasize about {ing}.", "I'm so tempted to {base}."],
    "hypothetical": ["If I were braver I'd {base}.", "Imagine {ing}.", "What if I {past}?",
                     "Suppose I {past}, what then?", "In a perfect world I would {base}.",
                     "If she calls again, {base}.", "Hypothetically, {base}."],
    "plan": ["Tomorrow I'll probably {base} myself.", "I'm going to {base} later.",
             "I'll {base} when I get home.", "Let me {base}.", "Gonna {base} tonight.",
             "I plan to {base} this weekend.", "Note to self: {base}."],
    "past": ["I {past} yesterday.", "Last week I {past}.", "Remember when I {past}?", "I already {past}.",
             "This morning I {past}, finally.", "Two years ago I {past}."],
    "dream": ["Last night I dreamt I {past}.", "In my dream I {past}.", "I had a dream where I {past}.",
              "In the story I'm writing, the hero decides to {base}.", "In the novel, the narrator {third}."],
    "advice": ["My therapist suggested I {base}.", "My friend's advice: {yours}.", "Everyone says I should {base}.",
               "My dad thinks I should {base}.", "The article recommends that you {yours}.",
               "My mentor told me to {base}."],
    "sarcasm": ["Oh sure, {base}. Great idea.", "Yeah right, like I'd {base}.",
                "Sure, let me just {base}, what could go wrong.", "Totally going to {base}, lol.",
                "Oh yes, {base}, because that always ends well.", "Right, {base}. Not."],
}

# Genuine request forms: each one asks the companion, in so many words, to do it now.
REQUESTS = ["{Base}.", "{base}", "Please {base}.", "{Base}, please.", "Can you {base}?", "Could you {base}?",
            "Could you please {base}?", "Would you {base}?", "I need you to {base}.", "I'd like you to {base}.",
            "can u {base}", "pls {base}", "Hey, {base}.", "{news} {Base}.", "{news} Can you {base}?",
            "{news} Please {base}.", "Oh and {base}.", "Would you mind {ing}?", "Will you {base}?",
            "Just {base}.", "Okay, {base}."]

_TYPOS = {"please": "pleas", "could": "coud", "can": "cna", "would": "woudl", "you": "yuo", "Please": "Pleas",
          "Could": "Coud", "Can": "Cna"}


def _cap(s: str) -> str:
    return s[:1].upper() + s[1:]


def _noise(rnd: random.Random, text: str, content: str | None) -> str:
    """Lowercase, dropped apostrophes or one typo in a frame word (never inside the dictated content)."""
    head, sep, tail = (text.partition(content) if content and content in text else (text, "", ""))
    roll = rnd.random()
    if roll < 0.15:
        return text.lower()
    if roll < 0.25:
        words = head.split(" ")
        spots = [i for i, w in enumerate(words) if w.strip(",.?") in _TYPOS]
        if spots:
            i = rnd.choice(spots)
            w = words[i]
            words[i] = w.replace(w.strip(",.?"), _TYPOS[w.strip(",.?")])
            return " ".join(words) + sep + tail
    if roll < 0.32:
        return head.replace("'", "") + sep + tail
    return text


def _row(rid: str, text: str, a: Act, genuine: bool, framing: str, rnd: random.Random) -> dict:
    return {"id": rid, "text": text, "genuine": genuine, "kinds": [a.kind] if genuine else [],
            "recipient": a.recipient, "content": a.content if genuine else None, "framing": framing,
            "context": "work" if a.recipient in ("my boss", "my manager", "the team") else rnd.choice(
                ["personal", "personal", "work"])}


def generate(seed: int = 22, non_requests: int = 360, requests: int = 240) -> list[dict]:
    """`non_requests` messages spread evenly over the twelve framings and six kinds, and
    `requests` genuine requests over the request forms and kinds; the same seed, the same rows."""
    rnd = random.Random(seed)
    rows = []
    framings = list(FRAMINGS)
    for i in range(non_requests):
        framing = framings[i % len(framings)]
        a = act(rnd, KINDS[(i // len(framings)) % len(KINDS)])
        template = rnd.choice(FRAMINGS[framing])
        text = template.format(base=a.base, Base=_cap(a.base), ing=a.ing, past=a.past, third=a.third,
                               yours=a.yours)
        rows.append(_row(f"gen-n{i + 1:04d}", _noise(rnd, text, None), a, False, framing, rnd))
    for i in range(requests):
        a = act(rnd, KINDS[i % len(KINDS)], genuine=True)
        template = rnd.choice(REQUESTS)
        text = template.format(base=a.base, Base=_cap(a.base), ing=a.ing, news=rnd.choice(NEWS))
        rows.append(_row(f"gen-g{i + 1:04d}", _noise(rnd, text, a.content), a, True, "request", rnd))
    return rows


# Autonomy statements: plain grants addressed to the companion, and the same words in framings
# that grant nothing (a motto, a quote, someone else's words, a question, a negation).
GRANTS = ["just do it, don't ask me first", "go ahead without asking me", "stop asking me for permission",
          "don't wait for my approval", "act on your own from now on", "no need to ask me first",
          "feel free to handle things without checking with me", "handle my messages from here on",
          "you can handle my messages from here on, I trust you", "you don't need to ask me first",
          "you have my permission to act on your own", "I trust you to handle things on your own",
          "I want you to act without asking me", "I'm happy for you to act on your own"]
NOT_GRANTS = {
    "motto": ["{Core}, that's my philosophy.", "{Core}! That's my motto.", "My motto is: {core}.",
              "{Core}. That's what my coach always says."],
    "quote": ["\"{Core}\" is written on my mug.", "The poster in the office says \u201c{Core}\u201d."],
    "others": ["My sister tells her assistant: {core}.", "My boss always says {core}.",
               "My neighbour told her kids: {core}."],
    "question": ["Should I tell you: {core}?", "Is it a good idea to say {core}?", "What if I said {core}?"],
    "negation": ["I'm not saying {core}.", "I would never say {core}.", "I don't mean {core}."],
}


def autonomy(seed: int = 25, grants: int = 40, others: int = 80) -> list[dict]:
    """Autonomy statements: {"id", "text", "grants_autonomy", "framing", "context"}."""
    rnd = random.Random(seed)
    rows = []
    for i in range(grants):
        core = rnd.choice(GRANTS)
        text = _cap(core) + rnd.choice([".", "!", " from now on.", ", really."]) if not core.endswith("on") \
            else _cap(core) + "."
        rows.append({"id": f"auto-g{i + 1:03d}", "text": _noise(rnd, text, None), "grants_autonomy": True,
                     "framing": "grant", "context": "personal"})
    framings = list(NOT_GRANTS)
    for i in range(others):
        framing = framings[i % len(framings)]
        core = rnd.choice(GRANTS)
        text = rnd.choice(NOT_GRANTS[framing]).format(core=core, Core=_cap(core))
        rows.append({"id": f"auto-n{i + 1:03d}", "text": text, "grants_autonomy": False, "framing": framing,
                     "context": "personal"})
    return rows


def main(argv: list[str] | None = None) -> None:
    """python -m eval.actiongen [--seed N] [--autonomy] > corpus.jsonl"""
    import argparse

    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=22)
    ap.add_argument("--non-requests", type=int, default=360)
    ap.add_argument("--requests", type=int, default=240)
    ap.add_argument("--autonomy", action="store_true", help="autonomy statements instead of action messages")
    args = ap.parse_args(argv)
    rows = autonomy(args.seed) if args.autonomy else generate(args.seed, args.non_requests, args.requests)
    for r in rows:
        print(json.dumps(r, ensure_ascii=False))


if __name__ == "__main__":
    main()
