"""Is this sentence an instruction to the companion? Read from the dependency parse.

The fail-safe rule for actions (docs/SECURITY.md): an action runs without approval only when the
participant's message is, with high confidence, an instruction addressed to the companion to do
that very thing now. Confidence here is not a score: it is a reading of the sentence's
structure, and anything the reading cannot place among the forms of a request is *not* a
request, with the reason why. The forms of a request are few and closed; the ways of talking
about an action without asking for it are open (a question, a negation, a quote, a story, a
wish, someone else's advice ...), so the reading accepts the first and never lists the second.

A request is
- an imperative main clause: the sentence root is the action's verb, in its base form, with no
  subject ("Text my sister saying ..."), or
- a request form around it: "can / could / would / will you V", "would you mind V-ing",
  "I need / want / 'd like you to V", "I was wondering if you could V", "it would be great if
  you could V", "please V", "go ahead and V", "make sure to V", "remember to V",
  "don't forget to V", "don't let me forget to ..." (a reminder),

and it is none of: negated, a question (unless the form itself is one), past or another tense,
said by or to someone else (a subject other than the companion, a reporting or thinking verb
above it, a colon frame "someone wrote: ...", words in quotation marks, "your" recipient),
conditional ("if he calls, ..."), at another time than now (an external action), the
participant's own plan ("let me ...", "myself"), or ironic (a sarcastic opener, "lol", a
retraction after it). Before the request only discourse openers ("ok", "hey", "so", "oh and",
"please") and a separate clause of news ("I'm exhausted, can you ...") may stand.

The same reading decides what may raise autonomy (`grant`): only an explicit statement to the
companion about how it should act for the participant.

The parse is spaCy's (en_core_web_sm), passed in by the app: the wrapper imports no model. Any
object with spaCy's token attributes (i, idx, text, lower_, lemma_, tag_, dep_, head, children,
sent) will do.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# --------------------------------------------------------------------------- the closed classes

# Words a request may open with (discourse markers, politeness), nothing else.
OPENERS = {"ok", "okay", "k", "hey", "hi", "hello", "please", "pls", "plz", "so", "also", "and", "oh", "anyway",
           "anyways", "btw", "alright", "now", "just", "then", "first", "quickly", "kindly", "actually", "yo",
           "by", "the", "way", "one", "more", "thing", "quick", "favour", "favor", "companion", "again", "but",
           # interjections
           "ugh", "argh", "ah", "oof", "phew", "hmm", "um", "uh", "aw", "wow", "omg", "gosh", "yikes", "sigh"}
# Modal auxiliaries that make "... you V" a request.
REQUEST_MODALS = {"can", "could", "would", "will", "wo", "ca"}
YOU = {"you", "u", "ya", "y'all", "yall"}
# Verbs whose clause around the action is a request form ("I need you to ...").
WANT_FRAMES = {"need", "want", "like", "love"}
# Imperative frames whose complement is the action ("make sure to ...", "go ahead and ...").
LIGHT_FRAMES = {"make", "be", "remember", "try", "go", "do", "forget"}
# Conjunctions that make a clause conditional or timed: the action is not asked for now.
CONDITIONAL = {"if", "unless", "when", "whenever", "once", "until", "after", "before", "while", "in", "case",
               "suppose", "supposing", "as"}
# Verbs that put the words after them in someone's mouth or mind (a clause they govern is said,
# thought, wished or told, not asked of the companion).
FRAMING = {"say", "tell", "write", "post", "tweet", "reply", "answer", "shout", "yell", "whisper", "read", "hear",
           "think", "believe", "feel", "guess", "suppose", "imagine", "dream", "wish", "hope", "want", "plan",
           "intend", "consider", "wonder", "suggest", "advise", "recommend", "propose", "insist", "claim", "joke",
           "mean", "decide", "tempt", "fantasize", "fantasise", "picture", "pretend", "bet", "swear", "promise",
           "admit", "mention", "quote", "ask", "text", "message", "email", "comment", "recall", "remember"}
THIRD = {"he", "she", "they", "someone", "somebody", "everyone", "everybody", "people", "anyone", "nobody",
         "one", "it"}
# Markers of irony or non-literal speech.
IRONY = re.compile(r"(?:^|\W)(?:lol|lmao|rofl|haha\w*|hehe\w*|jk|j/k|/s|just kidding|kidding|yeah right|as if|"
                   r"said no one|not!)(?:$|\W)|[\U0001F644\U0001F602\U0001F923\U0001F61C\U0001F60F\U0001F643]",
                   re.I)
TIME_WORDS = {"tomorrow", "tonight", "later", "today", "monday", "tuesday", "wednesday", "thursday", "friday",
              "saturday", "sunday", "week", "morning", "evening", "afternoon", "weekend", "next", "soon"}
WH = {"what", "which", "who", "whom", "whose", "when", "where", "why", "how", "whether", "if"}
QUESTION_START = WH | {"can", "could", "would", "will", "do", "does", "did", "is", "are", "was", "were", "should",
                       "shall", "may", "might", "have", "has", "any", "am"}

_LEAD = re.compile(r"^\s*([\w' ,!]+?)\s*[:\u2014\u2013]\s*")
_LEAD_WORDS = {"quick", "one", "question", "thing", "favour", "favor", "request", "real", "another", "small", "q",
               "reminder", "random", "lol", "ok", "so", "right"}
_OPEN_QUOTES, _CLOSE_QUOTES = "\"\u201c\u2018'", "\"\u201d\u2019'"


@dataclass(frozen=True)
class Reading:
    request: bool
    reason: str
    form: str = ""  # imperative | modal-you | want-you | ... when it is a request


def no(reason: str) -> Reading:
    return Reading(False, "not a request: " + reason)


def not_grant(reason: str) -> Reading:
    return Reading(False, "not an explicit statement to the companion: " + reason.removeprefix("not a request: "))


# --------------------------------------------------------------------------- text-level checks


def quoted(text: str, start: int) -> bool:
    """Inside a quotation at `start`: more opening quote marks before it than closing ones (an
    apostrophe inside a word, as in "I'm", is neither)."""
    opened = closed = 0
    for i, ch in enumerate(text[:start]):
        before = text[i - 1] if i else " "
        after = text[i + 1] if i + 1 < len(text) else " "
        if ch in _OPEN_QUOTES and (before.isspace() or before in "([:") and not after.isspace():
            opened += 1
        elif ch in _CLOSE_QUOTES and not before.isspace() and (after.isspace() or after in ".,!?;:)"):
            closed += 1
    return opened > closed


def ironic(text: str) -> bool:
    return bool(IRONY.search(text))


def _marker_only(doc, sent) -> bool:
    """The sentence just before is nothing but an irony marker ("lol." / "haha ok."): it frames
    what follows."""
    before = [s for s in doc.sents if s.end <= sent.start]
    if not before:
        return False
    words = [t for t in before[-1] if not t.is_punct]
    return bool(words) and len(words) <= 3 and ironic(before[-1].text) and all(
        IRONY.search(f" {t.text} ") or t.lower_ in OPENERS for t in words)


# --------------------------------------------------------------------------- parse helpers


def token_at(doc, char: int):
    for t in doc:
        if t.idx <= char < t.idx + max(len(t.text), 1):
            return t
    return None


def _subjects(t) -> list:
    """The subjects of `t`; a noun set off from the verb by a comma ("Lena, text him ...", "Ugh,
    ...") is a vocative or an interjection, not a subject."""
    out = []
    for c in t.children:
        if c.dep_ not in ("nsubj", "nsubjpass", "csubj", "expl"):
            continue
        if c.i < t.i and c.pos_ in ("PROPN", "NOUN", "INTJ") and any(x.text == "," for x in t.doc[c.i + 1:t.i]) \
                and not any(x.pos_ in ("VERB", "AUX") for x in c.subtree):
            continue
        out.append(c)
    return out


def _neg(t) -> bool:
    return any(c.dep_ == "neg" or c.lower_ in ("never", "not", "n't") for c in t.children)


def _aux(t) -> list:
    return [c for c in t.children if c.dep_ in ("aux", "auxpass") and c.i < t.i and c.tag_ != "TO"]


def _is_you(tok) -> bool:
    return tok.lower_ in YOU


def _clausal_lefts(head, before: int) -> list:
    """Clauses attached to `head` that end before token index `before` (news, frames, conditions)."""
    return [c for c in head.children if c.i < before and c.dep_ in (
        "ccomp", "parataxis", "advcl", "csubj", "dep", "conj", "npadvmod", "intj", "nsubj") and
        any(x.pos_ in ("VERB", "AUX") for x in c.subtree)]


def _span_ids(tok) -> set[int]:
    return {x.i for x in tok.subtree}


def _left_clause_reason(clause, sent, exclude: set[int] = frozenset()) -> str | None:
    """Why a clause standing before the request makes it something else (None: it is news).
    `exclude`: tokens of the clause's subtree that are not part of it (the request itself)."""
    sub = [x for x in clause.subtree if x.i not in exclude]
    words = {x.lower_ for x in sub}
    marks = [x for x in sub if x.dep_ == "mark" or (x.i == min(x.i for x in sub) and x.lower_ in CONDITIONAL)]
    if any(m.lower_ in CONDITIONAL for m in marks) or words & {"if", "unless", "whenever"}:
        return "conditional"
    end = max(x.i for x in sub)
    nxt = sent.doc[end + 1] if end + 1 < len(sent.doc) else None
    if nxt is not None and nxt.text in (":", "\u2014") and nxt.i < sent.end:
        return f"after a frame ('{_clip(clause)}:')"
    verbs = [x for x in sub if x.pos_ in ("VERB", "AUX")]
    if any(v.lemma_.lower() in FRAMING for v in verbs):
        v = next(v for v in verbs if v.lemma_.lower() in FRAMING)
        return f"framed by '{v.text}'"
    for v in verbs:
        for s in _subjects(v):
            if s.lower_ in THIRD - {"it"} or s.ent_type_ == "PERSON" or s.pos_ == "PROPN":
                return f"about what {s.text} did or said"
    return None


def _clip(tok) -> str:
    ids = sorted(_span_ids(tok))
    return " ".join(tok.doc[i].text for i in ids)[:40]


def _opener_reason(tokens) -> str | None:
    """Words before the request that are not discourse openers make it something else."""
    bad = [t for t in tokens if not t.is_punct and t.lower_.strip(".,!") not in OPENERS]
    if bad:
        return f"'{' '.join(t.text for t in bad)}' before it is not a plain request"
    return None


def _tail_reason(sent, doc) -> str | None:
    """A later sentence that takes the request back ("Not.", "just kidding") or characterizes
    what was said ("that's my motto", "that's what she told me")."""
    for s in doc.sents:
        if s.start < sent.end:
            continue
        words = [t for t in s if not t.is_punct]
        if not words:
            continue
        if len(words) <= 3 and any(t.lower_ in ("not", "no", "nope", "kidding", "jk") for t in words):
            return f"taken back ('{s.text.strip()}')"
        root = s.root
        subj = [t for t in _subjects(root)]
        if subj and subj[0].lower_ in ("that", "this", "those", "which") and root.lemma_ in ("be", "say", "sound"):
            return f"characterized afterwards ('{s.text.strip()[:40]}')"
    return None


# --------------------------------------------------------------------------- requests

# The few words of a request form, and their commonest slips (one adjacent swap, one letter
# dropped): "cna yuo", "coud you", "pleas".
_FORM_WORDS = ("you", "can", "could", "would", "will", "please")


def _slip_of(word: str) -> str | None:
    w = word.lower()
    if w in _FORM_WORDS or len(w) < 3 or not w.isalpha():
        return None
    for target in _FORM_WORDS:
        if len(w) == len(target) and sorted(w) == sorted(target) and sum(a != b for a, b in zip(w, target)) == 2:
            return target
        if len(target) >= 5 and len(w) == len(target) - 1 and any(target[:k] + target[k + 1:] == w
                                                                    for k in range(len(target))):
            return target
    return None


_APOSTROPHE = {"id": "I'd", "im": "I'm", "ive": "I've", "dont": "don't", "cant": "can't", "couldnt": "couldn't",
               "wouldnt": "wouldn't", "youre": "you're", "wont": "won't", "ill": "I'll"}


def _mend(prefix: str) -> str:
    """The request form as it would be spelled: a slipped frame word ("cna yuo") and a dropped
    apostrophe ("Id like you to", "dont let me forget") mended."""
    return re.sub(r"[A-Za-z]+", lambda m: _slip_of(m.group(0)) or _APOSTROPHE.get(m.group(0).lower(), m.group(0)),
                  prefix)


def request(text: str, doc, parse, start: int, content_start: int | None, *, external: bool,
            recipient: str | None = None, ing: bool = False, hint: str = "") -> Reading:
    """Whether the action whose verb starts at character `start` of `text` (its dictated words
    at `content_start`) is asked of the companion, now, in so many words. `doc` is the parse of
    `text`; `parse(str)` parses more text.

    The form of the request is read from the words before the action's verb, parsed again in
    front of a plain verb ("Please text Marco: ..." as "Please send it."): the small parser often
    takes an imperative "Text" or "Put" for a noun, and what is dictated after the verb must not
    change how the request around it is read. What comes after it is read in the whole parse: a
    condition on the verb, a reporting clause that heads the sentence ("..., my mom said"), a
    later sentence that takes it back."""
    if doc is None or parse is None:
        return no("no parse of the message: nothing can be read as a request")
    if quoted(text, start):
        return no("quoted: someone else's words")
    t = token_at(doc, start)
    if t is None:
        return no("the words are not in the parse")
    sent = t.sent
    after = [s for s in doc.sents if s.start >= sent.end]
    if ironic(text[sent.start_char:after[0].end_char if after else len(text)]) or _marker_only(doc, sent):
        # the request's own sentence and the one after it; a laugh in the news before it ("I'm
        # so tired lol. Can you ...") is about the news, one in a later sentence about that one
        return no("irony or a joke ('lol', 'yeah right' ...)")
    if external and recipient and re.match(r"(?i)your\b", recipient):
        return no("addressed to the participant ('your ...'): someone else's advice")
    frame_end = content_start if content_start is not None else sent.end_char
    if external and _TIME.search(text[sent.start_char:frame_end]):
        return no("asks for it at another time, not now")
    content_is_question = content_start is not None and text[content_start:].strip().split(" ")[0].lower().strip(
        "\"\u201c'") in QUESTION_START
    question = sent.text.rstrip().endswith("?") and not content_is_question
    prefix = _mend(_EMOJI.split(text[sent.start_char:start])[-1].lstrip())  # an emoji ends what came before, like a full stop
    if (lead := _LEAD.match(prefix)) and all(w.lower() in OPENERS | _LEAD_WORDS for w in re.findall(r"[\w']+", lead[1])):
        prefix = prefix[lead.end():]  # "hey, quick one: ...", "ok so -": a discourse opener set off by a colon
    prefix, ing = polite(prefix, ing, text[frame_end:sent.end_char])
    plain = parse(prefix + ("sending it" if ing else "send it") + ("?" if question else "."))
    v = token_at(plain, len(prefix))
    if v is None:
        return no("the request form does not parse")
    vsent = v.sent
    head, form, why = _form(v, vsent)
    if head is None:
        return no(why)
    if hint == "let_forget" and sum(x.dep_ == "neg" or x.lower_ in ("never", "not", "n't", "dont") for x in sent
                                    if x.idx < (content_start or sent.end_char)) > 1:
        return no("negated")  # "please don't don't let me forget ..."
    if _neg(head) and not (hint == "let_forget" or (head.lemma_ == "forget" and form == "light")):
        return no("negated")
    if v.i != head.i and _neg(v):
        return no("negated")
    left_ids: set[int] = set()
    for c in _clausal_lefts(head, v.i):
        reason = _left_clause_reason(c, vsent)
        if reason:
            return no(reason)
        left_ids |= _span_ids(c)
    if head.i != vsent.root.i and vsent.root.i < head.i:  # a clause of news heads the sentence
        left_ids |= _span_ids(vsent.root) - _span_ids(head)
    frame_ids = {x.i for x in _frame_tokens(head, v)}
    before = [x for x in plain if x.i < v.i and x.i not in left_ids and x.i not in frame_ids
              and not (x.i < vsent.start)]
    if not external:
        before = [x for x in before if not (x.lower_ in TIME_WORDS or x.ent_type_ in ("DATE", "TIME"))]
    if (why := _opener_reason(before)) is not None:
        return no(why)
    earlier = [s for s in plain.sents if s.end <= vsent.start]  # the parser split the prefix itself
    for s in earlier:
        reason = _left_clause_reason(s.root, s) or (f"after a frame ('{s.text.strip()}')" if s.text.rstrip()
                                                     .endswith(":") else None)
        if reason:
            return no(reason)
    if question and form not in ("modal-you", "mind"):
        return no("a question")
    # After the verb, in the whole parse.
    content_i = token_at(doc, content_start).i if content_start is not None and token_at(doc, content_start) \
        else sent.end
    root = sent.root
    if root.i >= content_i and root.pos_ in ("VERB", "AUX") and root.lemma_.lower() in FRAMING and any(
            t.i not in _span_ids(x) for x in _subjects(root)):  # a subject that is not the request itself
        return no(f"reported: '{_clip_words(root)}' heads the sentence")
    for c in t.children:
        if c.dep_ == "advcl" and any(m.lower_ in CONDITIONAL and m.dep_ == "mark" for m in c.children) and not (
                hint == "passes_on" and c.idx >= (content_start or 0)):
            return no("conditional")
    if any(x.lower_ in ("if", "unless") and x.i > t.i and not (x.i == content_i and hint == "passes_on") for x in sent):
        # "... saying I'm sick if he calls", "would you ... if you were me?": whether the
        # condition is on the sending or in the words, it is not an instruction to act now; the
        # "if" that opens a question to pass on ("message her asking if ...") is its first word
        return no("conditional ('if')")
    if any(x.lower_ in ("myself", "ourselves") and not (content_i <= x.i) for x in sent):
        return no("the participant's own plan ('myself')")
    if (why := _tail_reason(sent, doc)) is not None:
        return no(why)
    return Reading(True, f"request: {form}", form)


# The polite forms of asking the companion, each said as the plain form it means ("do you think
# you could V" is "could you V"). A closed class: the subject is "you", the modal affirmative, the
# frame stands right before the action's verb; whatever else stands before it is judged as before.
_POLITE = [(re.compile(p + r"\s*$", re.I), plain) for p, plain in [
    (r"\b(?:do|d'?you)\s+(?:you\s+)?(?:think|reckon|suppose)\s+you\s+(?:could|can|would|might)(?:\s+possibly)?", "could you "),
    (r"\b(?:is\s+there\s+)?(?:any|a)\s+chance\s+(?:that\s+)?you\s+(?:could|can|would|might)", "could you "),
    (r"\b(could|can|would|will)\s+you\s+(?:possibly|kindly|maybe|perhaps|please\s+just|just|quickly|pretty\s+please)",
     r"\1 you "),
    (r"\b(could|can|would|will)\s+you\s+(?:be\s+(?:able|so\s+kind\s+as|kind\s+enough|willing)|manage)\s+to", r"\1 you "),
    (r"\b(?:could|can|may|might)\s+I\s+(?:ask|get)\s+you\s+to(?:\s+please)?", "could you "),
    (r"\b(?:would|will|is)\s+it\s+(?:be\s+)?possible\s+for\s+you\s+to", "could you "),
    (r"\b(could|can|would|will)\s+you\s+do\s+me\s+a\s+(?:quick\s+|small\s+|big\s+|huge\s+)?favou?r\s+and", r"\1 you "),
    (r"^\W*(?:please\s+)?do\s+me\s+a\s+(?:quick\s+|small\s+|big\s+|huge\s+)?favou?r\s*(?:and|[,:\u2014-])", ""),
    (r"^\W*(?:please\s+)?would\s+you\s+kindly", "please "),
    (r"^\W*(?:please\s+)?kindly", "please "),
    (r"^\W*(?:please\s+)?be\s+an?\s+(?:star|dear|love|gem|angel|darling|sweetheart|legend|doll|sweetie|treasure)\s+and",
     "please "),
    (r"\bI(?:'d|\s+would)\s+(?:be\s+(?:so\s+|really\s+|very\s+|most\s+)?(?:grateful|thankful|obliged)|(?:really\s+)?"
     r"(?:appreciate|love)\s+it)\s+if\s+you\s+(?:could|would|can)(?:\s+please)?", "could you "),
]]
_THANKS_AFTER = re.compile(r"^[^.!?]*?,?\s*(?:that|it)(?:'d|\s+would)\s+be\s+(?:great|amazing|lovely|awesome|perfect|brilliant|"
                           r"wonderful|fab|a\s+(?:huge\s+|big\s+)?help)\b", re.I)


_EMOJI = re.compile(r"[\U0001F000-\U0001FAFF\u2600-\u27BF\u2B00-\u2BFF]+\ufe0f?")


def polite(prefix: str, ing: bool, after: str) -> tuple[str, bool]:
    """The request form before the action's verb said plainly (see `_POLITE`); "mind V-ing?" as
    "would you mind V-ing?", and "if you could V ..., that would be great" as "could you V"
    when the sentence ends in thanks (else "if" stays a condition). Returns (prefix, -ing form)."""
    for pattern, plain in _POLITE:
        if m := pattern.search(prefix):
            return prefix[:m.start()] + m.expand(plain), ing
    if ing and (m := re.search(r"(?i)(?:^|(?<=[\s,]))mind\s*$", prefix)) and not re.search(r"(?i)\b(?:you|u)\s+mind\s*$", prefix) \
            and not prefix[:m.start()].strip(" ,").split()[-1:] in (["never"], ["don't"], ["dont"]):
        return prefix[:m.start()] + "would you mind ", ing
    if (m := re.search(r"(?i)\bif\s+you\s+(could|can|would)\s*$", prefix)) and _THANKS_AFTER.match(after):
        return prefix[:m.start()] + m[1] + " you ", ing
    return prefix, ing


_TIME = re.compile(r"\b(?:tomorrow|tonight|later|next week|next month|in (?:\d+|an?|a few) (?:minute|hour|day|week)s?|"
                   r"on (?:monday|tuesday|wednesday|thursday|friday|saturday|sunday)|this (?:evening|afternoon|weekend)|"
                   r"at \d)", re.I)


def _clip_words(tok) -> str:
    subj = _subjects(tok)
    return (" ".join(x.text for x in subj[0].subtree) + " " if subj else "") + tok.text


def _frame_tokens(head, t) -> list:
    """The tokens that make up the request form itself (its subject, modal, 'please', 'to')."""
    out = []
    for x in (head, t):
        for c in x.children:
            if c.i < t.i and (c.dep_ in ("aux", "auxpass", "nsubj", "intj", "dobj", "acomp", "neg", "prt", "advmod",
                                        "dative", "attr", "cc", "mark", "expl") or c.lower_ in ("please", "pls")):
                if c.dep_ in ("advmod", "intj") and c.lower_ not in OPENERS | {"please", "pls", "ahead"}:
                    continue  # an adverb that is not politeness stays in the prefix and is judged there
                if c.dep_ in ("nsubj", "expl") and not (_is_you(c) or c.lower_ in ("i", "it")):
                    continue  # a vocative or another subject is judged with the prefix
                out += list(c.subtree) if c.dep_ in ("dobj", "attr", "dative") else [c]
        if x.i == head.i and head.i != t.i:
            out.append(head)
    return out


def _own(t, right_of=None):
    """`t` heads its own clause: an imperative, or "can / could / would / will you V"."""
    subj = [s for s in _subjects(t) if s.i < t.i and (right_of is None or s.i > right_of.i)]
    aux = [a for a in _aux(t) if right_of is None or a.i > right_of.i]
    if not subj:
        if aux and not all(a.lower_ in ("do", "please") for a in aux):
            return None, "", f"'{' '.join(a.text for a in aux)} {t.text}' is not addressed to the companion"
        if t.tag_ != "VB":
            return None, "", f"'{t.text}' is not an instruction (past, -ing or third person)"
        return t, "imperative", ""
    if len(subj) == 1 and _is_you(subj[0]) and aux and aux[0].lower_ in REQUEST_MODALS and aux[0].i < subj[0].i:
        return t, "modal-you", ""
    who = subj[0].text
    return None, "", ("the participant's own plan or doing" if who.lower() in ("i", "we") else
                      f"about {who}, not asked of the companion")


def _set_off(h, t) -> bool:
    """A comma, semicolon or dash stands between the clause of `h` and the clause of `t`."""
    first = min(_span_ids(t))
    return any(x.text in (",", ";", "\u2014", "-", "\u2013") for x in h.doc[h.i:first])


def _form(t, sent):
    """(the head of the request form, its name, or None and why not)."""
    root = sent.root
    if t.i == root.i:
        return _own(t)
    h = t.head
    if h.i == t.i:
        return None, "", "no clause"
    if h.lower_ == "sure" and h.head.i == root.i and root.lemma_.lower() in ("make", "be"):
        h = root  # "make sure to V": the frame is "make"
    if h.i == root.i and h.i < t.i and t.dep_ in ("conj", "parataxis", "ccomp", "advcl") and _set_off(h, t):
        # "I just got the news, text my sister ...": a clause of news heads the sentence, the
        # request stands after it as a clause of its own.
        reason = _left_clause_reason(h, sent, exclude=_span_ids(t))
        if reason:
            return None, "", reason
        return _own(t, right_of=h)
    # "I need you to V", "I'd like you to V", "would you mind V-ing", "I was wondering if you could V",
    # "it would be great if you could V", "make sure to V", "go ahead and V", "please remember to V".
    lemma = h.lemma_.lower()
    if h.i != root.i:
        return None, "", f"embedded under '{h.text}'"
    hsubj = [s for s in _subjects(h) if s.i < h.i]
    you_before_t = any(_is_you(x) for x in sent if h.i < x.i < t.i)
    if lemma in WANT_FRAMES and t.dep_ in ("xcomp", "ccomp") and hsubj and hsubj[0].lower_ == "i" and you_before_t:
        if h.tag_ == "VBD" or any(a.lower_ in ("did", "was", "had") for a in _aux(h)):
            return None, "", "past: what the participant wanted then"
        if any(a.lower_ not in ("'d", "would", "do", "really") for a in _aux(h)):
            return None, "", f"'{' '.join(a.text for a in _aux(h))} {h.text}' is not a request"
        return h, "want-you", ""
    if lemma == "mind" and t.dep_ in ("xcomp", "ccomp") and t.tag_ == "VBG" and hsubj and _is_you(hsubj[0]) \
            and _aux(h) and _aux(h)[0].lower_ in ("would", "do", "could"):
        return h, "mind", ""
    if t.dep_ in ("advcl", "ccomp") and any(m.lower_ in ("if", "whether") for m in t.children if m.dep_ == "mark") \
            and any(_is_you(s) for s in _subjects(t)) and any(a.lower_ in ("could", "would", "can", "will")
                                                               for a in _aux(t)):
        polite = (lemma in ("wonder", "appreciate", "love", "help") and hsubj and hsubj[0].lower_ == "i") or (
            lemma == "be" and hsubj and hsubj[0].lower_ in ("it", "that"))
        if polite and not _neg(h):
            return h, "if-you-could", ""
    if lemma in LIGHT_FRAMES and not hsubj and t.dep_ in ("xcomp", "ccomp", "conj", "advcl"):
        if lemma in ("make", "be") and not any(c.lower_ == "sure" for c in h.children):
            return None, "", f"embedded under '{h.text}'"
        if lemma == "go" and not any(c.lower_ == "ahead" for c in h.children):
            return None, "", f"embedded under '{h.text}'"
        if lemma == "do" and not any(c.lower_ in ("favor", "favour") for c in h.subtree):
            return None, "", f"embedded under '{h.text}'"
        if lemma == "forget" and not _neg(h):
            return None, "", "embedded under 'forget'"
        if h.tag_ != "VB" or _aux(h) and not all(a.lower_ in ("do",) for a in _aux(h)):
            return None, "", f"'{h.text}' is not an instruction"
        return h, "light", ""
    return None, "", f"embedded under '{h.text}'"


# --------------------------------------------------------------------------- what may raise autonomy

# Verbs a negation may cancel in a grant: not asking, not waiting, not checking first.
APPROVAL_SEEKING = {"ask", "check", "wait", "confirm", "bother", "run", "need", "have", "seek", "get", "require"}
APPROVING = {"fine", "ok", "okay", "happy", "comfortable", "cool", "good", "alright", "glad", "content"}
GRANT_FRAMES = {"want", "need", "like", "prefer", "trust", "give", "allow", "let", "permit", "authorize",
                "authorise", "be", "mean", "rather", "love", "consider"}


def grant(doc, text: str, start: int, end: int) -> Reading:
    """Whether the words at [start, end) of the participant's message are an explicit statement
    to the companion about how it should act for them (what alone may raise autonomy): an
    imperative to the companion, a statement whose subject is the companion ("you can handle
    my messages"), or "I want / trust / give you ...". Never a saying, a quote, talk about
    someone else, a question or a negated grant."""
    if doc is None:
        return not_grant("no parse of the message")
    if quoted(text, start):
        return not_grant("quoted: someone else's words")
    if ironic(text):
        return not_grant("irony or a joke")
    toks = [t for t in doc if start <= t.idx < end] or [token_at(doc, start)]
    toks = [t for t in toks if t is not None]
    if not toks:
        return not_grant("the words are not in the parse")
    sent = toks[0].sent
    if sent.text.rstrip().endswith("?"):
        return not_grant("a question")
    # Words set off by a colon or a dash after a frame are someone's words, not the
    # participant's to the companion ("My sister tells her assistant: act on your own").
    framed = [x for x in doc if x.i < toks[0].i and x.text in (":", "\u2014") and any(
        not y.is_punct and y.lower_ not in OPENERS for y in doc[max(x.sent.start, 0):x.i])]
    if framed:
        return not_grant(f"after a frame ('{doc[framed[-1].sent.start:framed[-1].i + 1].text[:40]}')")
    if (why := _tail_reason(sent, doc)) is not None:
        return not_grant(why)
    root = sent.root
    span_root = min(toks, key=lambda t: len(list(t.ancestors)))
    # The statement is what the sentence says: its head must be a statement to the companion
    # (a motto, a saying or someone else's words heads the sentence otherwise), and the words
    # must not stand in a condition under it ("I'll be upset if you act on your own").
    for x in [span_root, *span_root.ancestors]:
        if x.dep_ == "advcl" and any(c.dep_ == "mark" and c.lower_ in CONDITIONAL for c in x.children):
            return not_grant("conditional")
    ok, why = _grant_head(root)
    if not ok:
        return not_grant(why)
    # Every other clause coordinated with it must be a grant too ("just do it, that's my motto").
    # Wherever the parser attaches it, a clause "that's ..." / "this is what ... says" in the
    # sentence characterizes the words as a saying (a motto, a slogan), not a statement.
    for c in sent:
        if c.i != root.i and c.pos_ in ("VERB", "AUX") and c.lemma_ in ("be", "say"):
            subj = _subjects(c)
            if subj and subj[0].lower_ in ("that", "this", "which"):
                return not_grant(f"characterized as a saying ('{_clip(c)}')")
    return Reading(True, "an explicit statement to the companion", "grant")


def _grant_head(v) -> tuple[bool, str]:
    subj = [s for s in _subjects(v) if s.i < v.i] or _subjects(v)
    aux = _aux(v)
    negated = _neg(v)
    if negated:
        seeking = v.lemma_.lower() in APPROVAL_SEEKING or any(
            c.dep_ in ("xcomp", "ccomp") and c.lemma_.lower() in APPROVAL_SEEKING for c in v.children)
        if not seeking:
            return False, "negated"
    if any(c.dep_ == "mark" and c.lower_ in ("if", "unless", "when", "whenever") for c in v.children):
        return False, "conditional"
    if not subj:
        if v.pos_ == "NOUN" and v.lemma_ == "need" and any(c.lower_ == "no" for c in v.children):
            return True, ""  # "no need to ask me first"
        if v.tag_ == "VB" and not [a for a in aux if a.lower_ not in ("do",)]:
            return True, ""
        return False, f"'{v.text}' is not addressed to the companion"
    s = subj[0].lower_
    if s in YOU:
        if v.tag_ == "VBD" and not aux:
            return False, "past"
        return True, ""
    lemma = "be" if v.lower_ in ("m", "'m", "\u2019m") else v.lemma_.lower()  # "Im happy for you to ..."
    if s in ("i", "im") and lemma in GRANT_FRAMES and v.tag_ != "VBD" and any(
            _is_you(x) or (lemma == "trust" and x.lower_ == "your") for x in v.subtree if x.i > v.i) and (lemma != "be" or any(
            c.dep_ == "acomp" and c.lemma_.lower() in APPROVING for c in v.children)):
        if any(a.lower_ in ("did", "was", "had") for a in aux):
            return False, "past"
        return True, ""
    if s == "there" and v.lemma_ == "be" and any(c.lemma_ == "need" and any(d.lower_ == "no" for d in c.children)
                                                 for c in v.children):
        return True, ""  # "there's no need to run things past me"
    if s in ("it", "that") and v.lemma_ == "be" and any(
            c.dep_ in ("advcl", "ccomp", "xcomp") and any(_is_you(x) for x in c.subtree) for c in v.children):
        if s == "that":
            return False, "characterized as a saying"
        return True, ""
    return False, ("not about the companion" if s in ("i", "we") else f"about {subj[0].text}, not the participant's "
                   "own instruction")


# --------------------------------------------------------------------------- a grant, read whole

# What a grant of autonomy says, in its parts: the companion may act without the participant's
# approval. Each is a closed class of meaning ("not asking / not waiting", "without my ok", "on
# your own", "handle X from now on", "allowed to go ahead"); `grant` decides whether the words
# are said to the companion, by the participant, now.
_SEEKING = (r"(?:ask(?:ing)?|wait(?:ing)?|check(?:ing)?|confirm(?:ing)?|bother(?:ing)?|run(?:ning)?\s+(?:it|things|"
            r"stuff|everything|them|this)?\s*(?:past|by)|get(?:ting)?\s+my\s+(?:ok|okay|approval|permission))")
_GRANT_PARTS = re.compile(
    r"(?P<neg>\b(?:don'?t|do not|never|no need to|needn'?t|don'?t (?:have|need) to|do not (?:have|need) to|"
    r"(?:you )?(?:don'?t|do not|shouldn'?t) (?:have|need) to|stop|quit|no more|didn'?t|not|no longer)\s+(?:\w+\s+){0,2}?"
    + _SEEKING + r"\b)"
    r"|(?P<without>\bwithout\s+(?:\w+\s+)?(?:asking|checking|waiting|running|my\s+(?:ok|okay|approval|permission|"
    r"say-so|sign-off)|me\b))"
    r"|(?P<ok>\b(?:don'?t|do not)\s+need\s+my\s+(?:ok|okay|approval|permission|go-ahead|sign-off|say-so)\b)"
    r"|(?P<own>\b(?:on your own|by yourself|off your own bat|at your (?:own )?discretion)\b)"
    r"|(?P<handle>\b(?:handle|take care of|deal with|sort(?: out)?|manage|look after|take over|run)\b[^.!?]{0,40}?"
    r"\b(?:from (?:now|here) on|going forward|from today|from now|yourself|without me)\b)"
    r"|(?P<ahead>\bjust (?:go ahead|do (?:it|things|stuff|them)|act|send (?:it|them))\b)"
    r"|(?P<allowed>\b(?:allowed|free|permission|authori[sz]ed|ok|okay|fine|happy)\b[^.!?]{0,25}?\b(?:to|with)\s+(?:\w+\s+)?"
    r"(?:act|go ahead|send|do|handle|decide|just)\b)", re.I)
_INTERNAL_ONLY = re.compile(r"\b(?:reminders?|notes?|calendar|little (?:stuff|things)|small (?:stuff|things)|drafts?)\b",
                            re.I)
_EXTERNAL = re.compile(r"\b(?:messages?|texts?|emails?|send\w*|mails?|replies|contacts?|everything|anything)\b", re.I)


def autonomy_grant(doc, text: str) -> tuple[str | None, Reading]:
    """The autonomy a message grants the companion ("you can handle my messages from here on, I
    trust you", "you don't have to wait for me to say yes", "there's no need to run things past
    me anymore"), or None with why not. A grant is a sentence that says the companion may act
    without the participant's approval AND is, by `grant`, said to the companion by the
    participant: a question, a quote, a saying, someone else's words, a condition or a negated
    grant raises nothing (fail safe: what is not read as a grant changes nothing). The setting is
    self_directed when only internal things are named ("the little stuff", "reminders"),
    autonomous otherwise."""
    if doc is None:
        return None, not_grant("no parse of the message")
    norm = text.replace("\u2019", "'")
    last = not_grant("no statement that the companion may act without approval")
    for sent in doc.sents:
        s0, s1 = sent.start_char, sent.end_char
        m = _GRANT_PARTS.search(norm, s0, s1)
        if m is None:
            continue
        denied = [t for t in sent if _neg(t) and t.lemma_.lower() in (GRANT_FRAMES | FRAMING) - APPROVAL_SEEKING
                  and any(x.lower_ in ("i", "we") for x in _subjects(t))]
        if denied:  # "I don't want you to ...", "I'm not saying ...": whatever follows is not granted
            last = not_grant(f"negated ('{denied[0].text}')")
            continue
        told = [t for t in sent if t.idx < m.start() and t.tag_ in ("VBD", "VBN") and t.lemma_.lower() in FRAMING]
        if told:  # "I once said ... to my team": words said then, to someone, are not a grant now
            last = not_grant(f"said before ('{told[0].text}')")
            continue
        if why := _not_now_to_me(sent):
            last = not_grant(why)
            continue
        reading = grant(doc, text, m.start(), m.end())
        if reading.request and (why := _governed(doc, m.start(), m.end())):
            reading = not_grant(why)
        if not reading.request:
            last = reading
            continue
        words = norm[s0:s1]
        internal = bool(_INTERNAL_ONLY.search(words)) and not _EXTERNAL.search(words)
        return ("self_directed" if internal else "autonomous"), reading
    return None, last


_CONDITION_MARKS = {"if", "unless", "once", "when", "whenever", "until", "till", "provided", "assuming"}
_HEDGES = {"maybe", "perhaps", "someday", "eventually", "possibly", "probably", "likely", "hopefully",
           "theoretically", "ideally", "soon", "later"}
# a verb that hands the permission over: with a future or possible modal it is a promise, not a grant
_HANDING = {"let", "allow", "give", "grant", "hand", "trust", "permit"}
_LATER_MODALS = {"'ll", "will", "might", "may", "would", "could", "shall", "'d", "wo"}
# a time that starts later ("after the holidays", "from next week", "starting in May", "next month")
_LATER_TIMES = set("""next tomorrow week weeks month months year years holiday holidays christmas summer winter
spring autumn fall weekend monday tuesday wednesday thursday friday saturday sunday january february march
april june july august september october november december""".split())
_LATER_PREPS = {"after", "from", "starting", "beginning", "in", "by", "come"}
# a possibility said of the companion ("you could act ...", "you might ..."): not a permission given
_POSSIBLE = {"could", "might", "would", "'d"}
_WANTING = {"like", "love", "prefer", "want"}  # "I'd like you to act without asking" is a grant said now
_DISCOURSE = set("""okay ok please yes yeah yep no nope honestly seriously look listen right fine so well alright
actually also now anyway anyways basically sure great cool thanks besides finally frankly really still then
first plus otherwise overall lastly again today tonight tomorrow and but oh hey hi hello seriously right
going forward from here on starting""".split())
_OPENERS = {"hey", "hi", "hello", "ok", "okay", "so", "oh", "and", "well"}


def _not_now_to_me(sent) -> str | None:
    """Why a sentence that holds grant words grants nothing now to the companion (None: it may):
    a condition or a hedge anywhere in it ("If you ever get good at this, maybe I'll let you ...",
    "once you've learned ...", "probably"), a promise for later ("I'll let you ...", "I'm going to
    give you ..."), a possibility rather than a permission ("you could act ..."; "I'd like you to
    ..." is a wish said now), a start later than now ("after the holidays", "from next week", "next
    month"), a scope the reader does not map ("..., but not on this one", "except ..."), or a name
    it is said to ("Lucas, from now on you can ...": a person, not the companion). Each refusal is
    fail safe: a grant it turns down changes nothing and can be said again plainly."""
    toks = [t for t in sent if not t.is_space]
    for t in toks:
        low = t.lower_
        if low in _CONDITION_MARKS and t.dep_ in ("mark", "advmod") and t.head.i != t.i:
            return f"a condition ('{t.text}')"
        if low in _HEDGES or (low == "day" and t.i > 0 and t.nbor(-1).lower_ in ("one", "some")):
            return f"a hedge ('{t.text}')"
        if t.lemma_.lower() in _HANDING and (any(c.lower_ in _LATER_MODALS for c in t.children)
                                             or _going_to(t)):
            return f"a promise for later ('{t.text}')"
        if low in _POSSIBLE and t.tag_ == "MD" and t.head.lemma_.lower() not in _WANTING:
            return f"a possibility, not a permission ('{t.text}')"
        if low in _LATER_PREPS and t.dep_ in ("prep", "advmod", "mark") and any(
                x.lower_ in _LATER_TIMES for x in t.subtree if x.i != t.i):
            return f"starts later ('{t.text} ...')"
        if low in _LATER_TIMES and low not in ("tomorrow",) and t.dep_ in ("npadvmod", "amod", "det") and \
                t.head.lower_ in _LATER_TIMES | {"time"}:
            return f"starts later ('{t.text}')"
        if low == "except" or (low == "not" and t.i > sent.start and t.nbor(-1).lower_ == "but") or \
                (low in ("apart", "other") and t.i + 1 < sent.end and t.nbor(1).lower_ in ("from", "than")):
            return f"a scope the grant reader does not map ('{t.text}')"
    i = 0
    while i < len(toks) and (toks[i].lower_ in _OPENERS or toks[i].is_punct):
        i += 1
    # "Lucas, ...", "hey Mei Ling, ...": capitalized words before a comma that are no discourse word
    # (the parser often tags an unknown name a noun, so the capital decides; fail safe)
    j = i
    while j < len(toks) and toks[j].text[:1].isupper() and toks[j].is_alpha and toks[j].lower_ not in _DISCOURSE:
        j += 1
    if i < j <= i + 3 and j < len(toks) and toks[j].text == "," and toks[i].lower_ != "i":
        return f"said to someone by name ('{toks[i].text}')"
    return None


def _going_to(t) -> bool:
    """ "I'm going to let you ...", "gonna let you ...": a handing-over announced for later."""
    prev = [x.lower_ for x in t.doc[max(t.i - 3, 0):t.i]]
    return "gonna" in prev or prev[-2:] == ["going", "to"]


def _governed(doc, start: int, end: int) -> str | None:
    """Why the clause of a grant's words does not stand as said (None: it does): a negation
    above them that is not the grant's own "don't ask" ("I don't want you to ..."), or a verb
    of saying or thinking above them ("I'd never say you can ...")."""
    toks = [t for t in doc if start <= t.idx < end]
    if not toks:
        return "the words are not in the parse"
    top = min(toks, key=lambda t: len(list(t.ancestors)))
    for x in [top, *top.ancestors]:
        if x is not top and x.lemma_.lower() in FRAMING - {"want", "mean"} and _subjects(x):
            return f"framed by '{x.text}'"
        if x.idx >= end or x.idx < start:
            if _neg(x) and x.lemma_.lower() not in APPROVAL_SEEKING:
                return "negated"
    return None
