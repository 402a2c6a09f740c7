"""A seeded generator of interaction-preference statements in other voices, and of look-alikes that
state no preference, for every setting of the IX inventory (issue 27, item 3).

    python -m eval.prefgen [--seed 11] [--split dev|train|all] [--out PATH]
    python -m eval.prefgen --score PATH [--json]      # the reversal sequences of a generated set

Each item is built from a FRAME (a template family) and a CORE (what the setting sounds like,
eval.prefgen_cores). Families are split into train and dev as wholes, and so are the cores
(imp[0:2] + complaint[0] train, imp[2] + complaint[1] dev): a dev item shares neither its frame
nor its content words with anything the train side can see. Tune only on train families; report
dev. The output is the prefs-heldout-v1 shape eval.prefheldout scores (kind, text, said_in,
expect, forbid), plus `family`, `split` and, for reversals, `before` (the earlier message of the
same conversation that the reversal takes back).

Voices (a preference is stated): complaint, sarcasm, hedge, embedded in other content, context-
specific (work / personal), a later reversal, typos / slang / non-native word order.
Take-backs (kind `takeback`, round 5: "you can stop trying to ...", "never mind me asking you to
..."): the core is the setting taken back, `expect` the context's default it returns to
(`reverted`), `before` the earlier message asking for it. They are kept out of the classifier's
generated bank and train the stance model with the complaint frames (`stance_examples`);
`scope_examples` (topics of TOPICS in SCOPE_FRAMES) train the scope model (eval.prefmodels).
Look-alikes (nothing may be stored; `forbid` holds the core's setting): quoted, questioned,
someone else's, reported, hypothetical, conditional on a request not made, negated, a motto, and
the content of a requested action ("text my sister and ask her to ..."). Ordinary chat (`chat`,
families of eval.prefgen_cores.CHAT: stories, questions, tasks, small talk and other people's
habits sharing the cores' words) states nothing either; it is in the output unless `--no-chat`,
and its train families are "none" in the generated bank.
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
from dataclasses import dataclass

from eval.prefgen_cores import CORES


@dataclass(frozen=True)
class Family:
    name: str
    split: str  # train | dev
    kind: str
    frame: str  # {imp} / {complaint}; {content} {content2}: other talk around it
    states: bool = True  # False: a look-alike that states nothing
    context: str | None = None  # the context the frame scopes the statement to
    typos: bool = False


FAMILIES = [
    # complaints
    Family("complaint_plain", "train", "complaint", "{Complaint}."),
    Family("complaint_ugh", "train", "complaint", "ugh, {complaint}"),
    Family("complaint_ngl", "dev", "complaint", "not gonna lie, {complaint}."),
    Family("complaint_again", "dev", "complaint", "{Complaint}, again. Every time."),
    # sarcasm
    Family("sarcasm_kill", "train", "sarcasm", "Would it kill you to {imp}?"),
    Family("sarcasm_love", "train", "sarcasm", "oh great, {complaint}. love that for me"),
    Family("sarcasm_wow", "dev", "sarcasm", "Wow, {complaint}. Super helpful."),
    Family("sarcasm_toomuch", "dev", "sarcasm", "Is it too much to ask that you {imp}?"),
    # hedges
    Family("hedge_mind", "train", "hedge", "I wouldn't mind if you'd {imp}."),
    Family("hedge_nice", "train", "hedge", "it'd be nice if you could {imp}"),
    Family("hedge_hurt", "dev", "hedge", "It wouldn't hurt to {imp} now and then."),
    Family("hedge_trouble", "dev", "hedge", "maybe you could {imp}, if that's not too much trouble"),
    # embedded in other content
    Family("embedded_btw", "train", "embedded", "{content} Oh and btw, {imp} from now on. {content2}"),
    Family("embedded_anyway", "dev", "embedded", "{content} Also, please {imp}. Anyway, {content2l}"),
    # context-specific
    Family("context_work_just", "train", "context", "at work just {imp}", context="work"),
    Family("context_personal_for", "train", "context", "For personal stuff, {imp}.", context="personal"),
    Family("context_job", "dev", "context", "When it's about my job, {imp}.", context="work"),
    Family("context_weekend", "dev", "context", "on weekends {imp} please", context="personal"),
    # reversals (a `before` message asked for another setting of the attribute)
    Family("reversal_scratch", "train", "reversal", "Scratch what I said before, {imp}."),
    Family("reversal_second", "dev", "reversal", "on second thought, {imp} after all"),
    # typos, slang, non-native word order
    Family("voice_pls", "train", "voice", "pls {imp} thx", typos=True),
    Family("voice_nonnative_better", "train", "voice", "Please you {imp}, is better for me.", typos=True),
    Family("voice_u", "dev", "voice", "can u {imp} plz", typos=True),
    Family("voice_nonnative_for_me", "dev", "voice", "For me is more good when you {imp}.", typos=True),
    # look-alikes that state nothing
    Family("quoted_texted", "train", "quoted", 'My sister texted me "{imp}" and I laughed.', states=False),
    Family("quoted_note", "dev", "quoted", 'The sticky note on my monitor just says "{imp}".', states=False),
    Family("question_people", "train", "questioned", "Do you think people prefer it when you {imp}?", states=False),
    Family("question_team", "dev", "questioned", "Should I ask my team to {imp}?", states=False),
    Family("others_boss", "train", "others", "My boss always tells me to {imp}.", states=False),
    Family("others_priya", "dev", "others", "Priya wants her assistant to {imp}.", states=False),
    Family("hypo_ever", "train", "hypothetical", "If I ever wanted you to {imp}, I'd tell you.", states=False),
    Family("hypo_incase", "dev", "hypothetical", "In case I ever need you to {imp}, I'll let you know.", states=False),
    Family("negated_asking", "train", "negated", "I'm not asking you to {imp}.", states=False),
    Family("negated_notthat", "dev", "negated", "It's not that I need you to {imp}, it's fine as it is.", states=False),
    Family("motto_work", "train", "motto", "My motto at work is basically: {imp}.", states=False),
    Family("motto_grandad", "dev", "motto", "My grandad's life philosophy was to {imp}.", states=False),
    # more of the scope reader's refusals (issue 27, round 3): every frame around every core
    Family("negated_never_asked", "train", "negated", "I never asked you to {imp}.", states=False),
    Family("negated_nobody", "dev", "negated", "Nobody ever told you to {imp}.", states=False),
    Family("negated_dont_need", "train", "negated", "I don't need you to {imp}, honestly.", states=False),
    Family("negated_didnt_want", "dev", "negated", "I didn't want you to {imp} at all.", states=False),
    Family("conditional_if_boss", "train", "conditional", "If my boss asks, I'll tell her you can {imp}.", states=False),
    Family("conditional_only_if", "dev", "conditional", "I'd only want you to {imp} if I asked for it.", states=False),
    Family("hypo_imagine", "train", "hypothetical", "Imagine if I wanted you to {imp}, that would be weird.", states=False),
    Family("hypo_suppose", "dev", "hypothetical", "Suppose I asked you to {imp}, could you even do that?", states=False),
    Family("question_usually", "train", "questioned", "Do you usually {imp}?", states=False),
    Family("question_why_anyone", "dev", "questioned", "Why would anyone want you to {imp}?", states=False),
    Family("quoted_whiteboard", "train", "quoted", 'Someone wrote "please {imp}" on the office whiteboard.', states=False),
    Family("quoted_manual", "dev", "quoted", '\u201c{Imp}\u201d is literally what the manual says.', states=False),
    Family("others_husband", "train", "others", "My husband keeps asking his assistant to {imp}.", states=False),
    Family("others_team", "dev", "others", "Apparently my team wants everyone to {imp}.", states=False),
    Family("reported_said", "train", "reported", "Sam said that you should {imp}, but I don't agree.", states=False),
    Family("reported_told", "dev", "reported", "My friend told me her assistant has to {imp}.", states=False),
    Family("action_remind", "train", "action", "Remind me to tell Jonas to {imp}.", states=False),
    Family("action_text", "train", "action", "Text my sister and ask her to {imp}.", states=False),
    Family("action_email", "dev", "action", "Send Mia a message asking her to {imp}.", states=False),
    Family("action_note", "dev", "action", "Write a note for the intern telling him to {imp}.", states=False),
    # more voices that state one
    Family("complaint_tired", "train", "complaint", "I'm so tired of this, {complaint}."),
    Family("complaint_honestly", "dev", "complaint", "honestly? {complaint}"),
    Family("hedge_possible", "train", "hedge", "if possible, {imp}"),
    Family("hedge_prefer", "dev", "hedge", "I think I'd prefer it if you'd {imp}."),
    Family("embedded_ps", "train", "embedded", "{content} P.S. {imp}, thanks."),
    Family("embedded_mid", "dev", "embedded", "{content} Going forward, {imp}. {content2}"),
    Family("context_office", "train", "context", "When I'm at the office, {imp}.", context="work"),
    Family("context_home", "dev", "context", "At home it's different: {imp}.", context="personal"),
    Family("reversal_actually", "train", "reversal", "Actually, forget what I said earlier, {imp}."),
    Family("reversal_changed", "dev", "reversal", "I changed my mind: {imp}."),
    Family("voice_lower", "train", "voice", "{imp} from now on ok", typos=True),
    Family("voice_nonnative_want", "dev", "voice", "I am wanting that you {imp} always.", typos=True),
    # issue 27 round 4: more constructions per class. Train families go into the bank; the "test"
    # families (dev cores, constructions unlike any train or dev frame) are measured once at the end.
    Family("reversal_goback", "train", "reversal", "Actually go back to the old way: {imp}."),
    Family("reversal_nevermind", "train", "reversal", "Never mind my last request, {imp} again."),
    Family("reversal_takeback", "test", "reversal", "ok I take that back. {Imp} like before."),
    Family("reversal_rather", "test", "reversal", "Forget the earlier thing, I'd rather you {imp}."),
    Family("context_workstuff", "train", "context", "for work stuff just {imp}", context="work"),
    Family("context_family", "train", "context", "When it's family things, {imp}.", context="personal"),
    Family("context_inoffice", "test", "context", "In the office, {imp} please.", context="work"),
    Family("context_sparetime", "test", "context", "in my spare time stuff {imp}", context="personal"),
    Family("register_kindly", "train", "register", "Kindly {imp} in future."),
    Family("register_appreciate", "test", "register", "I would appreciate it if you could {imp} going forward."),
    Family("complaint_seriously", "train", "complaint", "Seriously, {complaint}."),
    Family("complaint_annoying", "test", "complaint", "{Complaint} and it's really annoying."),
    Family("sarcasm_thanks", "train", "sarcasm", "Thanks a lot, {complaint}. Brilliant."),
    Family("sarcasm_sure", "test", "sarcasm", "Oh sure, {complaint}, very useful."),
    Family("hedge_guess", "train", "hedge", "I guess it'd be better if you {imp}."),
    Family("hedge_nopressure", "test", "hedge", "no pressure, but could you {imp}?"),
    Family("voice_shld", "train", "voice", "u shld {imp} tbh", typos=True),
    Family("voice_pleeease", "test", "voice", "{imp} pleeease, thank u", typos=True),
    Family("embedded_onemore", "train", "embedded", "{content} One more thing: {imp}. {content2}"),
    Family("embedded_request", "test", "embedded", "{content} Anyway, one request: {imp}. {content2}"),
    # look-alikes: a question about a third party's wish (help with a task for someone else) is no
    # wish about how the companion helps; nor reported, quoted, questioned or negated ones
    Family("thirdparty_howto", "train", "thirdparty", "My boss wants me to {imp} in my reports, how do I do that?", states=False),
    Family("thirdparty_tips", "train", "thirdparty", "My manager keeps asking me to {imp}. Any tips?", states=False),
    Family("thirdparty_client", "test", "thirdparty", "Our client expects us to {imp}; what's the best way to manage that?", states=False),
    Family("thirdparty_teacher", "test", "thirdparty", "Can you help me with my essay? My teacher says we have to {imp}.", states=False),
    Family("question_everasked", "train", "questioned", "Have you ever been asked to {imp}?", states=False),
    Family("question_normal", "test", "questioned", "Is it normal for an assistant to {imp}?", states=False),
    Family("reported_heard", "train", "reported", "I heard someone say assistants should {imp}.", states=False),
    Family("reported_coworker", "test", "reported", "According to my coworker, you're supposed to {imp}.", states=False),
    Family("quoted_mug", "train", "quoted", 'My coffee mug says "{imp}" in big letters.', states=False),
    Family("quoted_email", "test", "quoted", 'The email ended with "{imp}", which was odd.', states=False),
    Family("negated_wasnt", "train", "negated", "It wasn't me who asked you to {imp}.", states=False),
    Family("negated_notsaying", "test", "negated", "I'm not saying you should {imp}.", states=False),
]

# issue 27, round 5: take-backs. A statement that takes back a preference it NAMES ("you can stop
# keeping it short", "never mind the short answers", "forget what I said about bullet points")
# returns the cell to the context's default (the other setting of a two-setting attribute whose
# default is the named one). Kind "takeback": the core is the named (taken-back) setting, expect
# holds the setting it returns to. Kept apart from FAMILIES so the classifier's generated bank (and
# its shipped weights) stay as they were: these train the stance model (memory.pref_train --stance).
TAKEBACK = [
    Family("takeback_stop", "train", "takeback", "You can stop trying to {imp} now."),
    Family("takeback_nevermind", "train", "takeback", "Never mind me asking you to {imp}."),
    Family("takeback_forget", "train", "takeback", "Forget what I said about wanting you to {imp}."),
    Family("takeback_anymore", "train", "takeback", "you don't have to {imp} anymore, go back to how you were"),
    Family("takeback_undo", "train", "takeback", "Let's undo the whole {imp} thing."),
    Family("takeback_drop", "train", "takeback", "ok drop the {imp} thing, it's not working for me"),
    Family("takeback_over", "dev", "takeback", "I'm over the {imp} thing, back to normal please."),
    Family("takeback_quit", "dev", "takeback", "Please quit trying to {imp}, it was a bad idea."),
    Family("takeback_scrap", "dev", "takeback", "Scrap my request that you {imp}."),
    Family("takeback_revert", "test", "takeback", "Can we go back to before I asked you to {imp}?"),
    Family("takeback_nolonger", "test", "takeback", "I no longer need you to {imp}."),
]

# issue 27, round 5: a context read from the topic, not a marker word ("when you help with the client
# deck, ..." is for work; "for the kids' homework, ..." personal). Train the scope model
# (memory.pref_train --scope); dev topics and frames choose its threshold.
TOPICS = {
    "work": {"train": ["my quarterly report", "the client deck", "code reviews", "the team meeting notes",
                       "emails to my manager", "the product roadmap", "my performance review"],
             "dev": ["the sprint planning", "the project budget", "vendor contracts", "the board presentation"],
             "test": ["the onboarding docs", "my shift schedule"]},
    "personal": {"train": ["my recipes", "the kids' homework", "our holiday plans", "my workouts",
                           "birthday party ideas", "my dating life", "the garden"],
                 "dev": ["my grandma's visit", "my piano practice", "the wedding planning", "my running training"],
                 "test": ["my book club", "the dog's vet visits"]},
}
SCOPE_FRAMES = {"train": ["When you help with {topic}, {imp}.", "for {topic} {imp} please", "{Imp} when it's about {topic}."],
                "dev": ["Whenever we're doing {topic}, {imp}.", "With {topic}, {imp}."],
                "test": ["{Imp} for anything to do with {topic}."]}
PLAIN_FRAMES = {"train": ["{Imp}.", "please {imp}", "From now on, {imp}.", "{Imp}, thanks."],
                "dev": ["Could you {imp}?", "I'd like you to {imp}."], "test": ["{Imp} going forward."]}


def scope_examples(seed: int = 11, split: str = "train") -> list[dict]:
    """Statements whose context is read from their topic (`context` work / personal) or that name
    none (`context` None: the context they are said in), from every core of the split."""
    rng = random.Random(seed)
    out = []
    for key in sorted(CORES):
        for core in (_cores("train", key) if split == "train" else _cores("dev", key))[0]:
            fill = dict(imp=core, Imp=core[:1].upper() + core[1:])
            for context in ("work", "personal"):
                topic = rng.choice(TOPICS[context][split])
                frame = rng.choice(SCOPE_FRAMES[split])
                out.append({"text": frame.format(topic=topic, **fill), "context": context,
                            "attribute": key[0], "setting": key[1]})
            out.append({"text": rng.choice(PLAIN_FRAMES[split]).format(**fill), "context": None,
                        "attribute": key[0], "setting": key[1]})
    return out


CONTENT = {
    "train": ["The plumber finally came this morning.", "I've got three deadlines this week.",
              "My cousin is visiting on Sunday.", "We painted the kitchen yellow.", "The bus was packed again."],
    "dev": ["The quarterly numbers look fine.", "Our cat knocked over a plant last night.",
            "I'm trying to book the dentist.", "It's been raining since Tuesday.", "The new printer is finally set up."],
    "test": ["My flight got moved to Thursday.", "The neighbours are having a party tonight.",
             "I finally finished the first draft.", "Our team lunch is on Friday.", "The car needs new tyres."],
}


def _cores(split: str, key) -> tuple[list[str], list[str]]:
    c = CORES[key]
    return (c["imp"][:2], c["complaint"][:1]) if split == "train" else (c["imp"][2:], c["complaint"][1:])


def _typo(text: str, rng: random.Random) -> str:
    from memory.pref_train import _typo as typo

    words = text.split()
    for _ in range(rng.choice((1, 1, 2))):
        k = rng.randrange(len(words))
        words[k] = typo(words[k], rng)
    return " ".join(words)


def reverted(attribute: str, named: str, context: str) -> str | None:
    """The setting a take-back of `named` returns a context's cell to: the context's default, or
    the other setting of a two-setting attribute whose default is the named one (None: no way
    back is said). memory.preferences applies the same rule."""
    from memory.ix_attributes import ATTRIBUTES

    a = ATTRIBUTES[attribute]
    default = a["default"][context]
    if default != named:
        return default
    others = [s for s in a["settings"] if s != named]
    return others[0] if len(others) == 1 else None


def _takeback(fam: Family, key: tuple[str, str], rng: random.Random) -> list[dict]:
    attribute, named = key
    out = []
    for core in _cores(fam.split, key)[0]:
        said_in = rng.choice(("work", "personal"))
        target = reverted(attribute, named, said_in)
        if target is None:
            continue
        out.append({"kind": "takeback", "family": fam.name, "split": fam.split,
                    "text": fam.frame.format(imp=core, Imp=core[:1].upper() + core[1:]), "said_in": said_in,
                    "named": f"{attribute}={named}",
                    "expect": [{"attribute": attribute, "setting": target, "contexts": [said_in]}],
                    "forbid": [{"attribute": attribute, "setting": named}],
                    "before": {"text": f"Please {core}.", "said_in": said_in,
                               "expect": [{"attribute": attribute, "setting": named, "contexts": [said_in]}]}})
    return out


def stance_examples(seed: int = 11, split: str = "train") -> tuple[list[str], list[int], list[str]]:
    """(texts, against, family) for the stance model (memory.pref_train --stance): 1 when a
    statement speaks AGAINST the behaviour its words name (a complaint about it: "your replies are
    way too long", sarcasm around one, a take-back: "you can stop trying to keep it short"), 0 when
    it asks FOR what it names (a request, a hedge, a scoped or embedded one, "go back to the old
    way: ..."). Look-alikes and chat are left out: the stance matters only where a setting is read."""
    texts, against, fams = [], [], []
    for it in generate(seed, split, takeback=True):
        if not it["expect"]:
            continue
        fam = next(f for f in FAMILIES + TAKEBACK if f.name == it["family"])
        text = it["text"]
        if it["kind"] == "embedded":
            e = it["expect"][0]
            core = next(c for c in CORES[(e["attribute"], e["setting"])]["imp"] if c in text)
            text = next(x for x in __import__("re").split(r"(?<=[.!?])\s+", text) if core in x)
        texts.append(text)
        against.append(int(fam.kind == "takeback" or "omplaint}" in fam.frame))
        fams.append(fam.name)
    return texts, against, fams


def generate(seed: int = 11, split: str = "dev", takeback: bool = True) -> list[dict]:
    from memory.ix_attributes import ATTRIBUTES

    rng = random.Random(seed)
    items = []
    for fam in FAMILIES + (TAKEBACK if takeback else []):
        if split != "all" and fam.split != split:
            continue
        for key in sorted(CORES):
            attribute, setting = key
            if fam.kind == "takeback":
                items += _takeback(fam, key, rng)
                continue
            imps, complaints = _cores(fam.split, key)
            uses_imp = "{imp}" in fam.frame or "{Imp}" in fam.frame
            for core in imps if uses_imp else complaints:
                content = CONTENT[fam.split]
                c1, c2 = rng.sample(content, 2)
                text = fam.frame.format(imp=core, Imp=core[:1].upper() + core[1:], complaint=core,
                                        Complaint=core[:1].upper() + core[1:],
                                        content=c1, content2=c2, content2l=c2[:1].lower() + c2[1:])
                if fam.typos:
                    text = _typo(text, rng)
                said_in = rng.choice(("work", "personal"))
                others = [s for s in ATTRIBUTES[attribute]["settings"] if s != setting]
                item = {"kind": fam.kind, "family": fam.name, "split": fam.split, "text": text, "said_in": said_in}
                if fam.states:
                    item["expect"] = [{"attribute": attribute, "setting": setting, "contexts": [fam.context or said_in]}]
                    item["forbid"] = [{"attribute": attribute, "setting": s} for s in others]
                else:
                    item["expect"], item["forbid"] = [], [{"attribute": attribute, "setting": setting}]
                if fam.kind == "reversal":
                    other = rng.choice(others)
                    before = _cores(fam.split, (attribute, other))[0][0]
                    item["before"] = {"text": f"Please {before}.", "said_in": said_in,
                                      "expect": [{"attribute": attribute, "setting": other, "contexts": [said_in]}]}
                items.append(item)
    return items


def chat(seed: int = 11, split: str = "dev") -> list[dict]:
    """Ordinary chat of eval.prefgen_cores.CHAT's families (stories, questions, tasks, small talk,
    other people's habits that share words with the preference cores), each template filled with
    every name of its split: nothing may be stored, so nothing may be acknowledged."""
    from eval.prefgen_cores import CHAT, NAMES, THINGS

    rng = random.Random(seed)
    items = []
    for family, (fsplit, templates) in sorted(CHAT.items()):
        if split != "all" and fsplit != split:
            continue
        for t in templates:
            for name in NAMES[fsplit] if "{name}" in t else [None]:
                text = t.format(name=name, thing=rng.choice(THINGS[fsplit]))
                if text[0].islower() is False and name and text.startswith(name):
                    text = text[0].upper() + text[1:]
                items.append({"kind": "chat", "family": family, "split": fsplit, "text": text,
                              "said_in": rng.choice(("work", "personal")), "expect": [], "forbid": []})
    return items


BANK_OUT = "memory/data/prefs/bank-generated-v1.json"


def bank(seed: int = 11) -> dict:
    """The train families' items as training examples for memory.pref_train: per setting the
    sentence that states it (an embedded statement without the talk around it), and the
    look-alikes as "none". Dev families never enter it."""
    import re

    from memory import preferences

    items = generate(seed, "train", takeback=False)  # take-backs train the stance model, not the bank
    settings: dict[str, list[str]] = {}
    none: list[str] = []
    for it in items:
        if not it["expect"]:
            # The parse's gates keep a look-alike from the classifier; what it would see of a
            # quote is the blanked rest. The gated ones are not taught as "none": their content
            # is a setting's own words, and the gates, not the weights, say they are not stated.
            if it["kind"] == "quoted":
                none.append(" ".join(preferences._blank_quotes(it["text"]).split()))
            continue
        text = it["text"]
        if it["kind"] == "embedded":
            core = next(c for c in (*CORES[(it["expect"][0]["attribute"], it["expect"][0]["setting"])]["imp"],) if c in text)
            text = next(s for s in re.split(r"(?<=[.!?])\s+", text) if core in s)
        e = it["expect"][0]
        settings.setdefault(f"{e['attribute']}={e['setting']}", []).append(text)
    none += [it["text"] for it in chat(seed, "train")]  # ordinary chat sharing the cores' words
    return {"format": "prefs-bank-generated-v1", "version": "1", "generator": "eval.prefgen", "seed": seed,
            "families": sorted({f.name for f in FAMILIES if f.split == "train"}),
            "description": "Generated training examples of the preference classifier: the TRAIN template families "
                           "and train cores of eval.prefgen (complaint, sarcasm, hedge, embedded, context, reversal, "
                           "typos and non-native voices; quoted, questioned, others', hypothetical, negated and "
                           "motto look-alikes are left to the parse's gates; a quote's blanked rest is none). Regenerate with `python -m eval.prefgen --bank`; dev "
                           "families are measured, never trained on.",
            "settings": settings, "none": none}


def score_sequences(items: list[dict]) -> dict:
    """Reversals read in order: the earlier message, then the later one; the setting left for the
    (context, attribute) after both must be the later one's (PET-like, on the reader alone)."""
    from memory import extract, preferences

    n = ok = read_first = 0
    for it in items:
        if "before" not in it:
            continue
        n += 1
        state: dict[tuple[str, str], str] = {}
        for msg in (it["before"], it):
            for f in preferences.find(msg["text"], msg["said_in"], rules=extract.preference_phrases):
                for c in f.contexts:
                    state[(c, f.attribute)] = f.setting
        first = it["before"]["expect"][0]
        read_first += state.get((first["contexts"][0], first["attribute"])) is not None
        e = it["expect"][0]
        ok += state.get((e["contexts"][0], e["attribute"])) == e["setting"]
    return {"sequences": n, "final_setting_right": ok, "rate": round(ok / n, 3) if n else None,
            "earlier_read_at_all": read_first}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m eval.prefgen", description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, default=11)
    ap.add_argument("--split", choices=("train", "dev", "test", "all"), default="dev")
    ap.add_argument("--out", default=None, help="write the set here (default: stdout)")
    ap.add_argument("--score", default=None, help="score the reversal sequences of a generated set")
    ap.add_argument("--json", action="store_true")
    ap.add_argument("--no-chat", action="store_true", help="leave out the ordinary chat families")
    ap.add_argument("--bank", nargs="?", const=BANK_OUT, default=None,
                    help=f"write the train families as the classifier's generated bank (default {BANK_OUT})")
    a = ap.parse_args(argv)
    if a.bank:
        b = bank(a.seed)
        with open(a.bank, "w", encoding="utf-8") as fh:
            fh.write(json.dumps(b, indent=1, ensure_ascii=False) + "\n")
        print(f"wrote {a.bank}: {sum(map(len, b['settings'].values()))} examples of {len(b['settings'])} settings, "
              f"{len(b['none'])} none")
        return 0
    if a.score:
        items = json.loads(open(a.score, encoding="utf-8").read())["items"]
        r = score_sequences(items)
        print(json.dumps(r) if a.json else f"{a.score}: reversal sequences {r['sequences']}, final setting right "
              f"{r['final_setting_right']} ({r['rate']}); earlier message read at all {r['earlier_read_at_all']}")
        return 0
    items = generate(a.seed, a.split) + ([] if a.no_chat else chat(a.seed, a.split))
    doc = {"format": "prefs-heldout-v1", "version": "1", "generator": "eval.prefgen", "seed": a.seed,
           "split": a.split, "description": __doc__.splitlines()[0], "items": items}
    out = json.dumps(doc, indent=1, ensure_ascii=False)
    if a.out:
        with open(a.out, "w", encoding="utf-8") as fh:
            fh.write(out + "\n")
        print(f"wrote {a.out}: {len(items)} items ({sum(bool(i['expect']) for i in items)} stating a preference)")
    else:
        print(out)
    return 0


if __name__ == "__main__":
    sys.exit(main())
