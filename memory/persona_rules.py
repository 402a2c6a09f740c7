"""Persona phrases: explicit first-person self-descriptions, as data, and the matcher over them.

`PHRASES` rows are (pattern, slot, value, facet):
    pattern  a regular expression, matched case-insensitively against one sentence of a
             participant message (quoted text removed, curly apostrophes straightened). Named
             group `k` marks the words that carry the statement: negation is looked for
             before it (see `negated`), so a negator that is part of the phrase itself
             ("I can't stand ...", "I never plan ...") belongs inside `k`.
    slot     what a contradicting statement is about:
               "big_five:<trait>"   one of TRAITS, value "high" or "low"
               "<facet>:<aspect>"   a description aspect, e.g. "decision_making:speed" = "fast"
               "quirk"              a habit or idiosyncrasy
             A slot ending in ":*" (and "quirk") is open-ended: the statement's own clause is
             the value, so different statements stand side by side instead of superseding.
    value    the slot's value; None for open-ended slots.
    facet    the description facet the statement's clause is written into (None: none).
             Trait rows name one too, so "I always plan everything ahead" both sets
             conscientiousness=high and reads "Plans everything ahead" under work_style.

Order matters: rows are tried in order and a later match overlapping an earlier one in the
same sentence is skipped (one statement, one item), so traits and descriptions come before
the generic quirk rows ("I always ...", "I can't stand ...").

What is deliberately not read: negated statements ("I'm not an introvert" yields nothing, not
extraversion=high: absence of a trait is not its opposite), passing states ("I'm so tired",
"I'm anxious about tomorrow": the phrase must end the clause or be followed by a word that
makes it general, see `_END`), the past ("I used to worry ..."), questions and hypotheticals
(the extractor drops those sentences), other people's words (quotes are removed first).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

VERSION = "1"

TRAITS = ("openness", "conscientiousness", "extraversion", "agreeableness", "neuroticism")
TRAIT_VALUES = ("high", "low")
FACETS = ("decision_making", "emotional_style", "social", "work_style", "curiosity", "daily_rhythm")

_I = r"(?<![\w'])i"
_IM = _I + r"(?:'m| am)"
# Words that may sit between "I'm" and the trait word. No negators here on purpose.
_PRE = (r"(?:(?:a|an|the|such an?|a bit of an?|a bit|bit of an?|kind of an?|kind of|sort of an?|sort of|"
        r"quite an?|quite|pretty|very|really|so|real|total|complete|huge|massive|big|true|little|"
        r"naturally|honestly|definitely|super|extremely|incredibly|totally|generally|basically|just|"
        r"more of an?|bit|fairly|rather|seriously|always been|always|such a|hopelessly) )*")
# The phrase must end its clause, or be followed by a word that makes it general: this keeps
# passing states out ("I'm anxious about tomorrow", "I'm calm now").
_END = (r"(?=\s*(?:[.,;:!?)\-]|$|\b(?:and|but|so|or|by nature|in general|at heart|deep down|"
        r"through and through|most of the time|all the time|really|honestly|though|too|as well|"
        r"to be honest|to the core|generally|basically|lol|haha)\b))")
_NOUN = r"(?: (?:person|type|guy|girl|one|by nature))?"
# An open-ended tail: the rest of the clause.
_REST = r"(?P<x>[a-z][^.,;:!?\"]*?)(?=\s*(?:[.,;:!?\"]|$|\b(?:but|because|though|although|so that|and i|and i'm)\b))"
_ADV = r"(?:(?:always|usually|often|generally|constantly|really|just|tend to|definitely|honestly) )*"


def _adj(words: str) -> str:
    """'I'm (a real) <words> (person)' ending its clause."""
    return _IM + r" " + _PRE + r"(?P<k>" + words + r")" + _NOUN + _END


def _verb(words: str, tail: str = "") -> str:
    """'I (always) <words> <tail>' ending its clause."""
    return _I + r" " + _ADV + r"(?P<k>" + words + r")" + tail + _END


PHRASES: list[tuple[str, str, str | None, str | None]] = [
    # ---- extraversion
    (_adj(r"introvert(?:ed)?|shy|reserved|a homebody|homebody|a loner|loner|a private person|private person|"
          r"an introvert|not a people person|not much of a people person"), "big_five:extraversion", "low", "social"),
    (_verb(r"prefer (?:my own company|being alone|being on my own|staying in|quiet nights?(?: in)?|small groups|"
           r"one on one|one-on-one)"), "big_five:extraversion", "low", "social"),
    (_verb(r"need (?:a lot of |lots of |my |some )?(?:time alone|alone time|time to myself|time on my own|"
           r"to recharge alone)"), "big_five:extraversion", "low", "social"),
    (r"(?P<k>(?:big |large )?(?:crowds|parties|big groups|social events|people)) (?:really )?"
     r"(?:drain|exhaust|tire|wear out|wear) me(?: out)?" + _END, "big_five:extraversion", "low", "social"),
    (_verb(r"(?:hate|avoid|dread|can't stand|cannot stand) (?:small talk|parties|crowds|big groups|big parties|"
           r"networking)"), "big_five:extraversion", "low", "social"),
    (_adj(r"an? extrovert(?:ed)?|extrovert(?:ed)?|an? extravert(?:ed)?|extravert(?:ed)?|outgoing|a people person|"
          r"people person|a social butterfly|social butterfly|very social|sociable|a party animal|the life of the party"),
     "big_five:extraversion", "high", "social"),
    (_verb(r"love (?:meeting new people|being around people|parties|big groups|hosting|a good party|"
           r"talking to strangers|being the centre of attention|being the center of attention)"),
     "big_five:extraversion", "high", "social"),
    (_verb(r"get (?:my )?energy from (?:being around )?(?:people|other people|crowds)"),
     "big_five:extraversion", "high", "social"),
    # ---- openness
    (_verb(r"love (?:trying new things|trying new stuff|new experiences|trying new (?:food|foods|places|hobbies|"
           r"restaurants|things)|learning new things|exploring new places|travelling to new places|"
           r"traveling to new places|a new challenge|new challenges|learning)"), "big_five:openness", "high", "curiosity"),
    (_adj(r"curious|adventurous|creative|open[- ]minded|always up for (?:something new|anything|an adventure)|"
          r"up for anything"), "big_five:openness", "high", "curiosity"),
    (_adj(r"a creature of habit|creature of habit|set in my ways|not (?:very |that |really )?adventurous"), "big_five:openness", "low", "curiosity"),
    (_verb(r"(?:hate|don't like|do not like|dislike|can't stand|cannot stand) (?:change|surprises|trying new things|"
           r"new things)"), "big_five:openness", "low", "curiosity"),
    (_verb(r"(?:prefer|like) (?:to )?stick(?:ing)? (?:to|with) what i know"), "big_five:openness", "low", "curiosity"),
    # ---- conscientiousness
    (_verb(r"plan (?:everything|things|it all|every detail|my days?|my weeks?|ahead)"
           r"(?: (?:out|ahead|in advance|down to the minute|to the minute))*"),
     "big_five:conscientiousness", "high", "work_style"),
    (_adj(r"organi[sz]ed|very organi[sz]ed|a planner|planner|a perfectionist|perfectionist|punctual|tidy|"
          r"a neat freak|disciplined|detail[- ]oriented|always on time|never late|a list person|a list maker"),
     "big_five:conscientiousness", "high", "work_style"),
    (_verb(r"make (?:lists|to-do lists|to do lists|a list for everything|lists for everything|a plan for everything)"),
     "big_five:conscientiousness", "high", "work_style"),
    (_verb(r"(?:double|triple)[- ]check (?:everything|things|my work)"), "big_five:conscientiousness", "high",
     "work_style"),
    (_adj(r"disorgani[sz]ed|messy|always late|chronically late|lazy|a procrastinator|procrastinator|"
          r"scatter(?:ed|brained)|forgetful|terrible at planning|bad at planning|hopeless at planning"),
     "big_five:conscientiousness", "low", "work_style"),
    (_verb(r"procrastinate|leave (?:everything|things|it all|stuff) (?:to|until|till) the last minute|"
           r"wing it|never plan(?: anything| ahead)?|never make plans"),
     "big_five:conscientiousness", "low", "work_style"),
    # ---- agreeableness
    (_adj(r"a people pleaser|people pleaser|easy[- ]?going|too nice|kind|a pushover|pushover|trusting|forgiving|"
          r"patient|cooperative|a peacemaker|peacemaker|a softie|soft[- ]hearted"),
     "big_five:agreeableness", "high", "social"),
    (_verb(r"(?:hate|avoid|can't stand|cannot stand|dread) (?:conflict|confrontation|arguments|arguing|"
           r"letting people down)"), "big_five:agreeableness", "high", "social"),
    (_verb(r"put (?:other people|others|everyone else|everyone) first"), "big_five:agreeableness", "high", "social"),
    (_verb(r"(?:find it hard to|can't|cannot|struggle to) say no(?: to (?:people|anyone))?"),
     "big_five:agreeableness", "high", "social"),
    (_adj(r"stubborn|blunt|competitive|argumentative|critical|cynical|brutally honest|confrontational|"
          r"hard to get along with"), "big_five:agreeableness", "low", "social"),
    (_verb(r"(?:don't|do not) suffer fools(?: gladly)?"), "big_five:agreeableness", "low", "social"),
    # ---- neuroticism
    (_verb(r"worry about (?:everything|every little thing|things|anything|it all|all sorts|literally everything)|"
           r"worry(?: a lot| constantly| all the time| too much)"), "big_five:neuroticism", "high", "emotional_style"),
    (_adj(r"a worrier|worrier|an anxious person|anxious person|the anxious type|a nervous wreck|an overthinker|overthinker|moody|"
          r"easily stressed|easily upset|highly strung|high[- ]strung|neurotic|a nervous person|insecure|"
          r"a bundle of nerves"), "big_five:neuroticism", "high", "emotional_style"),
    (_verb(r"overthink(?: everything| things| it all| stuff)?|stress about everything|stress out easily|"
           r"panic (?:easily|about everything|over everything)|get (?:stressed|anxious|nervous|upset)(?: out)? "
           r"(?:really |very )?easily"), "big_five:neuroticism", "high", "emotional_style"),
    (_adj(r"laid[- ]back|a calm person|calm person|calm by nature|chill|unflappable|hard to rattle|even[- ]tempered|level[- ]headed|zen|"
          r"pretty zen"), "big_five:neuroticism", "low", "emotional_style"),
    (_verb(r"(?:don't|do not|never|rarely|hardly ever) (?:really )?(?:get stressed(?: out)?|stress(?: out)?|worry|"
           r"panic)(?: (?:much|easily|about (?:much|anything|things)))?"),
     "big_five:neuroticism", "low", "emotional_style"),
    (r"(?P<k>nothing (?:really )?(?:fazes|bothers|rattles|stresses) me)" + _END, "big_five:neuroticism", "low",
     "emotional_style"),
    (_verb(r"(?:stay|keep|remain) calm under pressure"), "big_five:neuroticism", "low", "emotional_style"),
    # ---- decision making
    (_verb(r"(?:make decisions|make up my mind|decide|choose) (?:really |very |super )?(?:fast|quickly|on the spot|"
           r"in a snap|in seconds)"), "decision_making:speed", "fast", "decision_making"),
    (_adj(r"decisive"), "decision_making:speed", "fast", "decision_making"),
    (_verb(r"take (?:forever|ages|a long time|a while) to (?:decide|choose|make (?:up my mind|decisions|a decision))|"
           r"(?:agoni[sz]e|dither) over (?:decisions|every decision|choices|everything)"),
     "decision_making:speed", "slow", "decision_making"),
    (_adj(r"indecisive|terrible at (?:making )?decisions|bad at (?:making )?decisions"),
     "decision_making:speed", "slow", "decision_making"),
    (_verb(r"(?:go with|trust|follow|listen to) my gut"), "decision_making:basis", "gut", "decision_making"),
    (_adj(r"impulsive|spontaneous"), "decision_making:basis", "impulse", "decision_making"),
    (_verb(r"weigh (?:up )?(?:all )?(?:the |my )?(?:options|pros and cons)|make (?:a )?pros and cons lists?|"
           r"research everything|read all the reviews|need all the facts"), "decision_making:basis", "analysis",
     "decision_making"),
    (_verb(r"ask (?:my \w+|friends|my friends|other people|others|someone|everyone|around) (?:for (?:advice|their "
           r"opinions?)|before (?:i decide|deciding|making a decision))"), "decision_making:others", "consults",
     "decision_making"),
    # ---- emotional style
    (_verb(r"bottle (?:things|it|my feelings|stuff|everything) up|keep (?:my feelings|things|it|stuff) to myself"),
     "emotional_style:expression", "inward", "emotional_style"),
    (_adj(r"an open book|open book|a crier|an emotional person|a very emotional person"), "emotional_style:expression", "outward",
     "emotional_style"),
    (_verb(r"cry (?:easily|at everything|at films|at movies)|wear my heart on my sleeve"),
     "emotional_style:expression", "outward", "emotional_style"),
    (_adj(r"quick to anger|hot[- ]headed|short[- ]tempered|quick-tempered"), "emotional_style:temper", "quick",
     "emotional_style"),
    (_verb(r"lose my temper (?:easily|quickly|fast)|(?:never|rarely|hardly ever) lose my temper"),
     "emotional_style:temper:*", None, "emotional_style"),
    (r"(?<![\w'])(?P<k>when i'm (?:stressed|upset|sad|down|anxious|angry|overwhelmed),? i) " + _REST,
     "emotional_style:coping:*", None, "emotional_style"),
    # ---- social
    (_verb(r"have (?:a few|a small group of|only a few|just a few|a handful of) (?:close |good )?friends"),
     "social:circle", "small", "social"),
    (_adj(r"a good listener|good listener"), "social:role:*", None, "social"),
    # ---- work style
    (_verb(r"work (?:best|better)", r" (?P<x>under pressure|alone|on my own|in the mornings?|at night|late at night|"
           r"with music on|in silence|with a deadline|in a team|with other people|from home)"),
     "work_style:conditions:*", None, "work_style"),
    (_verb(r"(?:prefer|like) (?:to )?work(?:ing)? (?:alone|on my own|independently|in a team|with others|from home)"),
     "work_style:setting:*", None, "work_style"),
    (_adj(r"a multitasker|multitasker|a workaholic|workaholic"), "work_style:habit:*", None, "work_style"),
    # ---- daily rhythm
    (_adj(r"a night owl|night owl"), "daily_rhythm:chronotype", "evening", "daily_rhythm"),
    (_adj(r"an early bird|early bird|a morning person|morning person|an early riser|early riser"),
     "daily_rhythm:chronotype", "morning", "daily_rhythm"),
    # ---- quirks (generic; last, so the rows above win a shared span)
    (_I + r" (?P<k>can't stand|cannot stand|can't bear|cannot bear) " + _REST, "quirk", None, None),
    (_I + r" (?P<k>have (?:a|this) (?:weird |strange |funny |bad |odd )?habit of) " + _REST, "quirk", None, None),
    (_IM + r" (?:weirdly |strangely |oddly |a bit |kind of |totally |completely )?(?P<k>obsessed with|addicted to) "
     + _REST, "quirk", None, None),
    (_I + r" (?P<k>always|never|tend to|can never|can't help but) " + _REST, "quirk", None, None),
]

_COMPILED = [(re.compile(p, re.I), slot, value, facet) for p, slot, value, facet in PHRASES]

# Negators looked for between the start of the clause and the phrase's key words.
_NEGATOR = re.compile(r"\b(?:not|never|no|nor|neither|hardly|barely|rarely|seldom|no longer|used to|\w+n't|cannot)\b",
                      re.I)
_CLAUSE_BREAK = re.compile(r"[,;:\-]|\b(?:but|and|so|though|although|because|whereas|while|yet)\b", re.I)
INTENSIFIERS = re.compile(r"\b(?:real|very|so|extremely|super|totally|completely|incredibly|hugely|"
                          r"massively|seriously|absolutely|definitely|such an?|huge|massive|total|through and "
                          r"through|to the core|literally)\b", re.I)
# A habit is stated in the present: "I never said that" is not a quirk.
_PAST = {"said", "did", "was", "were", "had", "went", "got", "told", "thought", "knew", "saw", "made", "came",
         "took", "gave", "found", "felt", "left", "meant", "heard", "wanted", "liked", "loved", "asked", "tried",
         "been", "used", "expected", "realised", "realized", "noticed", "imagined", "guessed", "managed"}
_MAX_TAIL_WORDS = 14


def negated_in_parse(sentence: str, key_start: int, key_end: int | None = None) -> bool:
    """The clause holding the key words, or a clause it hangs under, is negated in the spaCy
    parse ("I've never really been what you'd call shy", "nobody would say I'm outgoing" is not
    caught, "I don't think I'm shy" is). Read only when a phrase matched, so its parse (~4 ms)
    is paid on few sentences. A negator inside the key words (`key_start`..`key_end`: "can't
    stand", "never plan") is the phrase's own and does not count."""
    from memory import nlp

    doc = nlp.parse(sentence)
    tok = next((t for t in doc if t.idx <= key_start < t.idx + max(len(t.text), 1)), None)
    if tok is None:
        return False
    chain = [tok, *tok.ancestors]
    for t in chain:
        if any((c.dep_ == "neg" or (c.dep_ == "advmod" and c.lower_ in ("never", "hardly", "barely", "rarely")))
               and not (key_end is not None and key_start <= c.idx < key_end) for c in t.children):
            return True
        if t.dep_ in ("conj", "parataxis") and any(c.dep_ in ("nsubj", "nsubjpass") for c in t.children):
            break  # a clause of its own: a negation before it is not its own
    return False


def negated(sentence: str, key_start: int) -> bool:
    """A negator in the clause before the key words ("I'm not a real introvert", "I don't
    think I'm shy", "I used to be a worrier"). Cheap on purpose: it may drop a true statement
    ("not sure, but I'm an introvert" is cut at "but", so that one is kept), never invert one."""
    before = sentence[:key_start]
    pieces = _CLAUSE_BREAK.split(before)
    clause = pieces[-1] if pieces else before
    return _NEGATOR.search(clause) is not None


# ---------------------------------------------------------------- third person

_PRONOUNS = {"i": "they", "i'm": "they're", "i've": "they've", "i'd": "they'd", "i'll": "they'll", "me": "them",
             "my": "their", "mine": "theirs", "myself": "themselves", "am": "are"}
_IRREGULAR = {"have": "has", "do": "does", "go": "goes", "be": "is", "am": "is", "don't": "doesn't",
              "do not": "does not", "can": "can", "can't": "can't", "cannot": "cannot", "won't": "won't",
              "will": "will", "should": "should", "must": "must", "might": "might", "would": "would",
              "could": "could", "may": "may"}
_ADVERBS = {"always", "never", "usually", "often", "sometimes", "generally", "constantly", "rarely", "seldom",
            "really", "just", "still", "totally", "honestly", "literally", "basically", "also", "hardly", "ever",
            "definitely", "probably", "actually"}


def conjugate(verb: str) -> str:
    """Third person singular of a base-form verb."""
    w = verb.lower()
    if w in _IRREGULAR:
        out = _IRREGULAR[w]
    elif w.endswith(("s", "sh", "ch", "x", "z", "o")):
        out = w + "es"
    elif w.endswith("y") and len(w) > 1 and w[-2] not in "aeiou":
        out = w[:-1] + "ies"
    else:
        out = w + "s"
    return out


def third_person(statement: str) -> str:
    """'I always plan everything ahead' -> 'Always plans everything ahead';
    "I'm a real introvert" -> 'Is a real introvert'; 'big crowds drain me' -> 'Big crowds drain them'."""
    words = statement.strip().split()
    if not words:
        return ""
    out: list[str] = []
    first = words[0].lower()
    rest = words
    if first in ("i'm",) or (first == "i" and len(words) > 1 and words[1].lower() == "am"):
        out.append("is")
        rest = words[1:] if first == "i'm" else words[2:]
    elif first == "i" and len(words) > 1:
        rest = words[1:]
        i = 0
        while i < len(rest) and rest[i].lower() in _ADVERBS:
            out.append(rest[i].lower())
            i += 1
        if i < len(rest):
            w = rest[i].lower()
            if w == "tend" or w not in _ADVERBS:
                out.append(conjugate(w))
            i += 1
        rest = rest[i:]
    prev = out[-1].lower() if out else ""
    for w in rest:
        lw = w.lower()
        if lw in _PRONOUNS and not (lw == "am" and prev != "they"):
            w = _PRONOUNS[lw]
        out.append(w)
        prev = w.lower()
    text = " ".join(out)
    return text[:1].upper() + text[1:]


# ---------------------------------------------------------------- matcher

@dataclass(frozen=True)
class Hit:
    slot: str
    value: str
    facet: str | None
    evidence: str  # the words of the sentence that state it, verbatim
    clause: str  # the statement in the third person
    intensified: bool
    start: int
    end: int


def _tail_ok(x: str) -> bool:
    words = x.split()
    if not words or len(words) > _MAX_TAIL_WORDS:
        return False
    w = words[0].lower()
    if w in _PAST or (w.endswith("ed") and w not in {"need", "feed", "bleed", "speed", "proceed", "exceed",
                                                     "succeed", "shred", "embed"}):
        return False
    return True


def find(sentence: str) -> list[Hit]:
    """Persona statements in one sentence (already free of quotes; not a question)."""
    s = sentence.replace("\u2019", "'").replace("\u2018", "'")
    hits: list[Hit] = []
    taken: list[tuple[int, int]] = []
    for rx, slot, value, facet in _COMPILED:
        for m in rx.finditer(s):
            if any(a < m.end() and m.start() < b for a, b in taken):
                continue
            k = m.start("k")
            if negated(s, k if k >= 0 else m.start()) or negated_in_parse(
                    s, k if k >= 0 else m.start(), m.end("k") if k >= 0 else None):
                continue
            x = m.groupdict().get("x")
            if x is not None and slot in ("quirk", "emotional_style:coping:*") and not _tail_ok(x):
                continue
            evidence = m.group(0).strip()
            clause = third_person(evidence)
            if slot == "quirk" or slot.endswith(":*"):
                val = clause_key(clause)
                full = slot if slot == "quirk" else slot[:-2]
                full = f"{full}:{val}"
            else:
                val, full = value, slot
            taken.append((m.start(), m.end()))
            hits.append(Hit(full, val, facet, evidence, clause, bool(INTENSIFIERS.search(evidence)),
                            m.start(), m.end()))
    # One sentence stating both values of a slot ("I'm shy but I love parties") says neither.
    values: dict[str, set] = {}
    for h in hits:
        values.setdefault(h.slot, set()).add(h.value)
    return sorted((h for h in hits if len(values[h.slot]) == 1), key=lambda h: h.start)


def clause_key(clause: str) -> str:
    """The value of an open-ended slot: its clause, lowercased, punctuation dropped."""
    t = clause.lower()
    t = re.sub(r"[^\w\s']+", " ", t)
    return re.sub(r"\s+", " ", t).strip()
