"""A learned request detector: does a participant's message ask the companion to do an action of
kind K now (one of the inventory's six), or nothing?

The rule reader (`wrapper.intents`) makes an action only from the wordings it parses; anything
else used to be dropped silently. This model reads the message as a whole instead: a
multinomial logistic regression over the message's sentence embedding (all-MiniLM-L6-v2, the
app's embedder, handed in as `embed`: the wrapper imports no model) and a few cheap surface
features (`surface`). It is trained by `python -m eval.request_train` on the TRAIN families of
the project's generators and on natural non-requests (LoCoMo turns between two people), its
threshold chosen on the DEV families; the weights and the threshold are data
(wrapper/data/request_model-v1.npz, its `meta` says how they were made).

It is fail safe by construction, not by its accuracy: what it detects is only ever *proposed*,
held for the participant's confirmation at every autonomy (`wrapper.actions.decide`, origin
`detector`), never run; and it is consulted only when the rules made nothing of the message.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from datetime import datetime
from functools import lru_cache
from importlib import resources
from typing import Callable

import numpy as np

from wrapper import intents

NONE = "none"
MODEL_FILE = "data/request_model-v1.npz"

_WORD = re.compile(r"[a-z0-9']+")
_POLITE = re.compile(r"\b(?:please|pls|plz|can you|could you|could u|can u|would you|will you|would u|mind|"
                     r"i need you|i'd like you|id like you|i want you|for me)\b")
# "I texted", "we already sent", "i just fired off": a report of what they did (an adverb or two may sit between)
_FIRST_PAST = re.compile(r"\b(?:i|we)(?: (?:\w+ly|already|just|finally|never|also|even|then|literally|once))* "
                         r"(?:\w+ed|sent|wrote|told|put|set|made|forgot|said|had|was|did|got|gave|left|rang|"
                         r"spoke|went|ran|met|saw|took|brought|thought|paid|kept)\b")
_OTHERS = re.compile(r"\b(?:he|she|they|his|her|their|someone|somebody|people|everyone)\b")
_WISH = re.compile(r"\b(?:wish|tempted|imagine|if i|what if|would it be|should i|thinking (?:of|about)|"
                   r"dream|dreamt|dreamed|maybe i|i might|i'll|ill|i will|i'm going to|gonna)\b")
SURFACE = ("question mark", "polite or addressed", "first-person past", "other people",
           "wish, plan or hypothetical", "states a time", "quote marks", "log words", "me/my")


def _norm(text: str) -> str:
    return text.lower().replace("\u2019", "'")


def surface(text: str) -> np.ndarray:
    """The cheap features, in the order of SURFACE (each 0/1 but the word count)."""
    t = _norm(text)
    words = _WORD.findall(t)
    return np.array([
        "?" in t,
        bool(_POLITE.search(t)),
        bool(_FIRST_PAST.search(t)),
        bool(_OTHERS.search(t)),
        bool(_WISH.search(t)),
        bool(intents.TIME_PHRASE.search(t)),
        bool(re.search(r"[\"\u201c\u201d]", text)),
        np.log1p(len(words)) / 4.0,
        bool(re.search(r"\b(?:me|my|myself)\b", t)),
    ], dtype=np.float32)


def features(vectors: np.ndarray, texts: list[str]) -> np.ndarray:
    """What the model reads: each text's embedding next to its surface features."""
    return np.hstack([np.asarray(vectors, dtype=np.float32), np.stack([surface(t) for t in texts])])


def without(X: np.ndarray, off) -> np.ndarray:
    """`X` with the surface features named in `off` set to 0 (a model trained without them reads
    them as absent: their standardized value is 0 and their weight nothing)."""
    if not off:
        return X
    X = X.copy()
    for name in off:
        X[:, X.shape[1] - len(SURFACE) + SURFACE.index(name)] = 0.0
    return X


@dataclass(frozen=True)
class Detection:
    kind: str | None  # an action of the inventory, or None: no request
    p_request: float  # 1 - P(no request)
    p_kind: float  # P(kind)
    threshold: float
    version: str

    @property
    def fired(self) -> bool:
        return self.kind is not None

    def public(self) -> dict:
        return {"kind": self.kind, "p_request": round(self.p_request, 4), "p_kind": round(self.p_kind, 4),
                "threshold": self.threshold, "version": self.version}


@dataclass
class Model:
    classes: list[str]
    W: np.ndarray  # (n_features, n_classes)
    b: np.ndarray  # (n_classes,)
    mean: np.ndarray  # feature standardization
    scale: np.ndarray
    threshold: float
    meta: dict = field(default_factory=dict)

    @property
    def version(self) -> str:
        return str(self.meta.get("version", "request-model-v1"))

    def probabilities(self, X: np.ndarray) -> np.ndarray:
        X = without(X, self.meta.get("surface_off", ()))
        z = ((X - self.mean) / self.scale) @ self.W + self.b
        z -= z.max(axis=1, keepdims=True)
        e = np.exp(z)
        return e / e.sum(axis=1, keepdims=True)

    def decide(self, probs: np.ndarray) -> Detection:
        """A request when P(no request) is at most 1 - threshold; its kind the likeliest other class."""
        none = self.classes.index(NONE)
        p_request = float(1.0 - probs[none])
        order = [i for i in np.argsort(-probs) if i != none]
        kind = self.classes[order[0]]
        fired = p_request >= self.threshold
        return Detection(kind if fired else None, p_request, float(probs[order[0]]), self.threshold, self.version)

    def detect_many(self, texts: list[str], embed: Callable[[list[str]], np.ndarray]) -> list[Detection]:
        if not texts:
            return []
        probs = self.probabilities(features(embed(texts), texts))
        return [self.decide(p) for p in probs]

    def save(self, path) -> None:
        np.savez_compressed(path, W=self.W.astype(np.float32), b=self.b.astype(np.float32),
                            mean=self.mean.astype(np.float32), scale=self.scale.astype(np.float32),
                            meta=json.dumps({**self.meta, "classes": self.classes, "threshold": self.threshold,
                                             "surface": list(SURFACE)}))


def load_from(path) -> Model:
    with np.load(path, allow_pickle=False) as z:
        meta = json.loads(str(z["meta"]))
        return Model(classes=list(meta["classes"]), W=z["W"], b=z["b"], mean=z["mean"], scale=z["scale"],
                     threshold=float(meta["threshold"]), meta=meta)


@lru_cache(maxsize=1)
def load() -> Model | None:
    """The shipped model, or None when its weights are missing (then nothing is detected)."""
    f = resources.files("wrapper") / MODEL_FILE
    if not f.is_file():
        return None
    with resources.as_file(f) as path:
        return load_from(path)


def detect(text: str, embed: Callable[[list[str]], np.ndarray] | None, model: Model | None = None) -> Detection | None:
    """The detector's reading of one message; None when it cannot read (no weights, no embedder,
    an empty message): then nothing is proposed (fail safe)."""
    model = model or load()
    if model is None or embed is None or not text.strip():
        return None
    return model.detect_many([text], embed)[0]


# ---------------------------------------------------------------- the proposal's slots


_LEAD = re.compile(r"^(?:(?:hey|hi|ok|okay|so|um|uh|oh|yo|right|alright|quick one|quick thing|also|and|then|"
                   r"actually|btw|listen|companion)\b[\s,:!.-]*)+", re.I)
_ASK_LEAD = re.compile(r"^(?:(?:can|could|would|will)\s+(?:you|u)\s+(?:please\s+|pls\s+|maybe\s+|just\s+)?|"
                       r"(?:please|pls|plz|kindly)\s+|would you mind\s+|do you mind\s+|"
                       r"i(?:'d| would) like you to\s+|i need you to\s+|i want you to\s+)+", re.I)
_TAIL = re.compile(r"(?:[\s,]*(?:please|pls|plz|thanks|thank you|thx|ty|cheers|for me|k|ok|okay))+[\s.!?]*$", re.I)
_MSG_BODY = re.compile(r"(?:\bsaying\b|\bto say\b|\band say\b|\bthat says\b|\band tell (?:him|her|them)(?: that)?\b|"
                       r"\band let (?:him|her|them) know(?: that)?\b|\btell(?:ing)? (?:him|her|them)(?: that)?\b|"
                       r"\bthat\b|:|\u2014|\s-\s)\s*(?P<body>.+)$", re.I | re.S)
_TO = re.compile(r"\b(?:to|tell|text|txt|message|msg|email|e-mail|ping|dm|ask|let|write|inform|notify|remind|"
                 r"contact|reach out to|get back to|reply to|answer|wish|thank|warn|update|give|send|shout at|call|ring|buzz|hit up|remind)\s+(?P<to>"
                 + intents.WHO + r")", re.I)
_NOT_TO = re.compile(r"^(?:me|myself|you|u|it|this|that|them|him|her|us|the|a|an|some|know|go|do|be|say|"
                     r"remember|forget|get|make|put|see)$", re.I)
_SECOND = {"i": "you", "me": "you", "my": "your", "mine": "yours", "myself": "yourself", "i'm": "you're",
           "im": "you're", "i've": "you've", "i'll": "you'll", "i'd": "you'd", "am": "are", "was": "were"}


def _plain(text: str) -> str:
    t = re.sub(r"\s+", " ", text).strip()
    t = _LEAD.sub("", t)
    t = _ASK_LEAD.sub("", t)
    t = _TAIL.sub("", t)
    return t.strip(" ,;:.!?") or text.strip()


def second_person(text: str) -> str:
    """The participant's words said back to them ("my pills" -> "your pills", "I'm" -> "you're");
    "was"/"am" only after "I"."""
    words = text.split(" ")
    out = []
    for n, w in enumerate(words):
        core = w.rstrip(".,!?;:")
        low = core.lower().replace("\u2019", "'")
        tail = w[len(core):]
        if low in ("am", "was"):
            prev = out[-1].lower() if out else ""
            out.append((_SECOND[low] if prev == "you" else core) + tail)
        elif low in _SECOND:
            out.append(_SECOND[low] + tail)
        else:
            out.append(w)
    return " ".join(out)


def _recipient(text: str) -> str | None:
    for m in _TO.finditer(text):
        who = m.group("to").strip()
        first = who.split()[0]
        if _NOT_TO.match(first) and not who.lower().startswith(("the ", "my ")):
            continue
        if first[0].islower() and not who.lower().startswith(("my ", "our ", "the ")) and first.lower() not in (
                "mum", "mom", "dad", "grandma", "grandpa", "nana", "gran", "mama", "papa"):
            continue
        return intents._clean(who)
    return None


def slots(kind: str, text: str, now: datetime) -> dict:
    """The proposal's arguments from the message: the participant's own words as its content
    (said back in the second person for what is for them: a reminder, a note, a check-in, an
    entry; as dictated for a message to someone), the recipient and the time when the existing
    slot readers find them (`intents.parse_when`, `intents.WHO`); what is not found stays
    missing, and the companion asks for it."""
    plain = _plain(text)
    when = intents.parse_when(text, now)
    args: dict = {}
    if kind in ("send_message", "draft_message"):
        to = _recipient(plain)
        body = None
        if m := _MSG_BODY.search(plain):
            body = m.group("body").strip(" ,;:.!?\"\u201c\u201d")
        args = {"to": to, "text": direct_question(body or plain, to)}
        return args
    words = intents._strip_when(plain) if when else plain
    words = intents._clean(words) or plain
    said = second_person(words)
    if kind == "set_reminder":
        args = {"text": said}
    elif kind == "add_note":
        args = {"text": words}
    elif kind == "add_calendar_entry":
        args = {"title": words}
    elif kind == "schedule_checkin":
        args = {"topic": said}
    if when:
        args["when"] = when.isoformat()
    return args


# ---------------------------------------------------------------- a passed-on question, asked directly


_INDIRECT = re.compile(r"^(?:(?:to\s+)?ask(?:ing)?\s+(?:(?P<who>him|her|them|[A-Z][\w'-]*|my\s+\w+|the\s+\w+)\s+)?)?"
                       r"(?P<wh>if|whether|when|what|where|why|how|who|which)\s+(?P<rest>.+)$", re.S)
_AUX = ("can", "could", "will", "would", "should", "shall", "may", "might", "must", "is", "are", "was", "were",
        "am", "have", "has", "had", "do", "does", "did")
_PRONOUNS = {"he": "you", "she": "you", "they": "you", "him": "you", "her": "you", "them": "you", "his": "your",
             "their": "your", "he's": "you're", "she's": "you're", "they're": "you're", "himself": "yourself",
             "herself": "yourself", "themselves": "yourself"}
_BE = {"is": "are", "was": "were"}
_DAYS = {"mon": "Monday", "tue": "Tuesday", "tues": "Tuesday", "wed": "Wednesday", "thu": "Thursday",
         "thur": "Thursday", "thurs": "Thursday", "fri": "Friday", "sat": "Saturday", "sun": "Sunday"}


def direct_question(body: str, recipient: str | None = None) -> str:
    """A question passed on in reported form ("if I can swap my sat shift for sunday", "ask Sam
    whether he's free") as the question the recipient reads ("Can I swap my Saturday shift for
    Sunday?", "Are you free?"): the subject and its auxiliary inverted, the recipient's pronoun
    made "you", weekday abbreviations and weekdays written out. A clause with no auxiliary to
    invert ("if she wants ...") and anything not set off by if/whether/wh- stays as dictated."""
    m = _INDIRECT.match(body.strip())
    if not m:
        return body
    wh, rest = m.group("wh").lower(), m.group("rest").strip().rstrip(".!?")
    words = rest.split()
    # the recipient's own pronoun becomes "you": "if she is free" -> "are you free"
    words = [_PRONOUNS.get(w.lower(), w) if w.lower() in _PRONOUNS else w for w in words]
    if len(words) >= 2 and words[0].lower() == "you" and words[1].lower() in _BE:
        words[1] = _BE[words[1].lower()]
    if len(words) >= 1 and words[0].lower() == "you're":
        words = ["you", "are", *words[1:]]
    subj_end = None
    for n, w in enumerate(words[:4]):
        if w.lower() in _AUX:
            subj_end = n
            break
    if subj_end is None or subj_end == 0:
        return body  # nothing to invert: as dictated
    subject, aux, tail = words[:subj_end], words[subj_end], words[subj_end + 1:]
    if wh in ("if", "whether"):
        out = [aux, *subject, *tail]
    elif wh == "who" and not subject:
        return body
    else:
        out = [wh, aux, *subject, *tail]
    out = [_DAYS.get(w.lower(), w.capitalize() if w.lower() in intents.WEEKDAYS else w) for w in out]
    text = " ".join(out)
    return text[0].upper() + text[1:] + "?"
