"""Identifier recognizers for releases: one place, used to pseudonymize and again to gate.

`scan(text)` / `scan_many(texts)` return `Hit(kind, start, end, text, source)` for everything in a
text that could point at a person. The export replaces every hit with a surrogate, and the
release gates run the very same scan over every text field of the written files and refuse on
any hit that is not a surrogate. All offline.

Four sources, merged (longest span first, then leftmost; overlaps dropped):
1. presidio-analyzer's pattern recognizers (email, phone, URL, IP, card, IBAN) on a
   `NoOpNlpEngine`; the email check uses tldextract's bundled suffix list only
   (`suffix_list_urls=()`, no cache dir): nothing is fetched.
2. `PATTERNS`, a table of our own (versioned data below): obfuscated emails ("ana dot lopez at
   gmail dot com", "[at]/[dot]"), @handles, US SSN, Spanish DNI/NIE (check letter verified), UK
   NI numbers, licence plates (UK, Spanish, French, German; any letters-and-digits token after
   "plate"/"registration"), street addresses (number + name + street word, continental street
   words + number), postcodes (UK; a US ZIP after a state; a 4-5 digit code next to a place),
   dates of birth (a full date in a sentence about birth, or any full date before 2016), employers
   (the capitalized run after "work at/for", "employed by", "teach at" ...).
3. spaCy NER (the shared pipeline `memory.nlp`, en_core_web_sm 3.8): PERSON -> PERSON,
   GPE/LOC/FAC -> PLACE, ORG -> ORG, minus kinship words, weekdays and the like (`NOT_ENTITIES`).
4. name-like tokens the small model misses: a word in a first-name gazetteer (every locale of
   Faker's person providers, ~31k names) that is not an English word (the WordNet word index the
   spaCy lemmatizer ships), in any case, so "had coffee with józef" counts; a run of letters of a
   non-Latin script (Cyrillic, Greek, CJK, Arabic ...: in an English chat, nearly always a name or
   a place); a capitalized word mid-sentence that is no English word ("texted Priya").
   A relation word before a lowercase word ("my neighbour keisha") makes it a PERSON as well.

Over-redaction is the safe side, but it has a price in research value: the ordinary-message
set in tests/data measures it (tests/anonymization_bench.py prints both numbers).
"""

from __future__ import annotations

import importlib
import pkgutil
import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

VERSION = "recognizers-v1"

PRESIDIO_ENTITIES = ("EMAIL_ADDRESS", "PHONE_NUMBER", "URL", "IP_ADDRESS", "CREDIT_CARD", "IBAN_CODE")
PRESIDIO_KINDS = {"EMAIL_ADDRESS": "EMAIL", "PHONE_NUMBER": "PHONE", "URL": "URL", "IP_ADDRESS": "IP",
                  "CREDIT_CARD": "CARD", "IBAN_CODE": "IBAN"}
NER_KINDS = {"PERSON": "PERSON", "GPE": "PLACE", "LOC": "PLACE", "FAC": "PLACE", "ORG": "ORG"}

_MONTHS = ("jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
           "sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?")
_DOT = r"(?:\s*\[\s*dot\s*\]\s*|\s*\(\s*dot\s*\)\s*|\s+dot\s+|\.)"
_AT = r"(?:\s*\[\s*at\s*\]\s*|\s*\(\s*at\s*\)\s*|\s*\{\s*at\s*\}\s*|\s+at\s+|\s*@\s*)"
_TLD = r"(?:com|org|net|edu|gov|io|co|uk|de|es|fr|it|nl|pl|pt|info|me|us|ca|au|ch|at|be|se|no|dk|fi|ie|mx|br)"
_STREET = (r"(?:Road|Rd|Street|St|Avenue|Ave|Lane|Ln|Drive|Dr|Boulevard|Blvd|Way|Court|Ct|Place|Pl|Terrace|"
           r"Close|Crescent|Square|Sq|Parkway|Pkwy|Highway|Hwy|Row|Mews|Grove|Gardens|Hill|Walk)")
_CONT_STREET = r"(?:Calle|Avenida|Av\.|Plaza|Paseo|Carrer|Rua|Via|Viale|Corso|Rue|Straße|Strasse|ulica|ul\.)"
_STATES = ("AL|AK|AZ|AR|CA|CO|CT|DE|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|"
           "NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|DC")
_DATE = (rf"(?:\d{{1,2}}[/.-]\d{{1,2}}[/.-](?:19|20)\d{{2}}|(?:19|20)\d{{2}}-\d{{2}}-\d{{2}}|"
         rf"\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\.?,?\s+(?:19|20)\d{{2}}|"
         rf"(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+(?:19|20)\d{{2}})")

# (kind, regex, flags): the versioned pattern table. A group named `x` marks the identifier
# inside a match that also carries its context ("plate: X").
PATTERNS: tuple[tuple[str, str, int], ...] = (
    ("EMAIL", rf"(?<![\w.])[a-z0-9][a-z0-9._%+-]*(?:{_DOT}[a-z0-9_%+-]+)*{_AT}[a-z0-9-]+(?:{_DOT}[a-z0-9-]+)*"
              rf"{_DOT}{_TLD}\b", re.I),
    ("HANDLE", r"(?<![\w.@/])@[A-Za-z0-9_](?:[A-Za-z0-9_.]*[A-Za-z0-9_])?", 0),
    ("US_SSN", r"\b(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}\b", 0),
    ("ES_DNI", r"\b\d{8}-?[A-Z]\b|\b[XYZ]-?\d{7}-?[A-Z]\b", re.I),
    ("UK_NI", r"\b(?!BG|GB|NK|KN|TN|NT|ZZ)[A-CEGHJ-PR-TW-Z][A-CEGHJ-NPR-TW-Z]\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b", 0),
    ("PLATE", r"\b[A-Z]{2}\d{2}\s?[A-Z]{3}\b", 0),                       # UK
    ("PLATE", r"\b\d{4}\s?[BCDFGHJKLMNPRSTVWXYZ]{3}\b", 0),              # Spain
    ("PLATE", r"\b[A-Z]{2}-\d{3}-[A-Z]{2}\b", 0),                        # France
    ("PLATE", r"\b[A-ZÄÖÜ]{1,3}-[A-Z]{1,2}\s?\d{1,4}[EH]?\b", 0),        # Germany
    ("PLATE", r"\b(?i:plate|registration|reg|licen[cs]e)(?:\s+(?i:number|no\.?|plate))?(?:\s+(?i:is|was))?\s*[:#]?\s*"
              r"(?P<x>[A-Z0-9]{1,8}(?:[ -][A-Z0-9]{1,4})?)\b", 0),  # kept only with a letter and a digit
    ("ADDRESS", rf"\b\d{{1,5}}[A-Za-z]?,?\s+(?:[NSEW]\.?\s+)?(?:[A-Z][\w'’.-]*\s+){{1,3}}{_STREET}\b\.?", 0),
    ("ADDRESS", rf"\b{_CONT_STREET}\s+(?:(?:de|del|de la|la|las|los|da|do|dos|di|des|du|von|der)\s+)*"
                rf"[\w'’-]+(?:\s+[A-Z][\w'’-]+)?,?\s*\d{{1,4}}[a-zA-Z]?\b", 0),
    ("ADDRESS", r"\b[A-ZÄÖÜ][\wäöüß-]*(?:straße|strasse|weg|gasse|platz|allee|ring)\s+\d{1,4}[a-z]?\b", 0),
    ("ADDRESS", rf"\b(?:[A-Z][\w'’-]+\s+){{1,2}}{_STREET}\b", 0),         # a street named without number
    ("POSTCODE", r"\b[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}\b", 0),           # UK
    ("POSTCODE", rf"\b(?:{_STATES})\s+(?P<x>\d{{5}}(?:-\d{{4}})?)\b", 0),
    ("POSTCODE", r"\b(?:post\s?code|zip(?:\s?code)?|postal code|CP)\s*(?:is|:)?\s*(?P<x>[A-Z0-9]{3,5}(?:[ -]?[A-Z0-9]{3,4})?)\b", re.I),
    ("DOB", rf"\b(?:born|birthday|b\.|DOB|date of birth|birth date|birthdate)\b[^.!?\n]{{0,30}}?(?P<x>{_DATE})", re.I),
    ("DOB", rf"(?P<x>{_DATE})[^.!?\n]{{0,20}}?\b(?:is my birthday|my birthday|I was born)\b", re.I),
    ("DOB", rf"\b(?P<x>{_DATE})\b", re.I),  # any full date: kept only if before OLD_DATE (see _old)
    ("ORG", r"\b(?:work(?:s|ed|ing)?|job|employed|intern(?:s|ed|ing)?|teach(?:es|ing)?|volunteer(?:s|ed|ing)?|"
            r"hired)\s+(?:at|for|by|with)\s+(?:the\s+)?"
            r"(?P<x>[A-Z][\w&'’.-]*(?:\s+(?:&|and|of|de|del|la|für|[A-Z][\w&'’.-]*))*(?:\s+[A-Z][\w'’.-]*)?)", 0),
)
OLD_DATE = 2016  # a full date before this year is nearly always a birth date in a chat
PLACE_ADJACENT_CODE = re.compile(r"^[ ,]*(\d{4,5})\b|\b(\d{4,5})[ ,]*$")

RELATIONS = ("sister brother friend boss mother mom mum dad father wife husband partner son daughter colleague "
             "coworker cousin aunt uncle neighbour neighbor girlfriend boyfriend roommate flatmate grandma grandpa "
             "grandmother grandfather teacher doctor therapist manager niece nephew landlord landlady ex fiance "
             "fiancee fiancé fiancée buddy mate").split()
# Words NER or the capitalized-word rule mistake for names; lowercased.
NOT_ENTITIES = set("""grandma grandpa granny nana mom mum dad mommy daddy mama papa auntie uncle sis bro
monday tuesday wednesday thursday friday saturday sunday january february march april may june july august
september october november december christmas easter xmas today tomorrow yesterday tonight
i i'm i've i'll i'd ok okay hey hi hello thanks lol omg haha yes no
the a an my our your his her their this that these those it is was and but or so oh
mr mrs ms dr sir madam""".split())
# Residue allowed around a surrogate in a hit the gate sees ("Dr Avery", "Avery's").
TRIVIAL = NOT_ENTITIES | {"s", "'s", "’s", "of", "&", "st", "de", "la", "von", "van", "der", "jr", "sr"}
_LATIN = re.compile(r"LATIN")


@dataclass(frozen=True)
class Hit:
    kind: str
    start: int
    end: int
    text: str
    source: str = ""


# --- the shared resources, loaded once -----------------------------------------------------------

_ANALYZER = None


def analyzer():
    """presidio's AnalyzerEngine with pattern recognizers only, fully offline (built once)."""
    global _ANALYZER
    if _ANALYZER is None:
        import tldextract
        from presidio_analyzer import AnalyzerEngine, RecognizerRegistry
        from presidio_analyzer.nlp_engine import NoOpNlpEngine
        from presidio_analyzer.predefined_recognizers import (CreditCardRecognizer, EmailRecognizer,
                                                              IbanRecognizer, IpRecognizer, PhoneRecognizer,
                                                              UrlRecognizer)

        offline = tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)

        class OfflineEmail(EmailRecognizer):
            def validate_result(self, pattern_text: str):
                return offline(pattern_text).fqdn != ""

        class OfflineUrl(UrlRecognizer):
            # "dolo.makes.things" or "dot.com" inside a handle or obfuscated email is not a link:
            # a bare domain must have a real public suffix.
            def validate_result(self, pattern_text: str):
                return "://" in pattern_text or pattern_text.startswith("www.") or offline(pattern_text).suffix != ""

        reg = RecognizerRegistry(supported_languages=["en"])
        for r in (OfflineEmail(), PhoneRecognizer(), OfflineUrl(), IpRecognizer(), CreditCardRecognizer(),
                  IbanRecognizer()):
            reg.add_recognizer(r)
        _ANALYZER = AnalyzerEngine(registry=reg, supported_languages=["en"],
                                   nlp_engine=NoOpNlpEngine(models=[{"lang_code": "en", "model_name": "none"}]))
    return _ANALYZER


@lru_cache(maxsize=1)
def first_names() -> frozenset[str]:
    """Casefolded first names of every locale Faker ships (the gazetteer of source 4)."""
    import faker.providers.person as people

    out: set[str] = set()
    for m in pkgutil.iter_modules(people.__path__):
        try:
            provider = importlib.import_module(f"{people.__name__}.{m.name}").Provider
        except (ImportError, AttributeError):
            continue
        for attr in ("first_names", "first_names_male", "first_names_female"):
            v = provider.__dict__.get(attr)
            if isinstance(v, (list, tuple, set, dict)):
                out |= {n.casefold() for n in v if isinstance(n, str) and len(n) >= 3}
    return frozenset(out)


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """The WordNet word index (nouns, verbs, adjectives, adverbs) that spaCy's lemmatizer ships."""
    from memory import nlp

    lookups = nlp.nlp().get_pipe("lemmatizer").lookups
    index, exceptions = lookups.get_table("lemma_index"), lookups.get_table("lemma_exc")
    words = {w for pos in index.keys() for w in index[pos]}
    words |= {w for pos in exceptions.keys() for w in exceptions[pos]}  # said, children, went ...
    return frozenset(words)


def _english(token) -> bool:
    w = token.lower_
    return w in english_words() or token.lemma_.lower() in english_words() or token.is_stop


def _script(ch: str) -> str:
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return ""
    return "LATIN" if _LATIN.search(name) else name.split()[0]


def _foreign_script(word: str) -> bool:
    letters = [c for c in word if c.isalpha()]
    return bool(letters) and all(_script(c) != "LATIN" for c in letters)


# --- the four sources ---------------------------------------------------------------------------

_COMPILED = [(k, re.compile(p, f)) for k, p, f in PATTERNS]
_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def _dni_ok(s: str) -> bool:
    s = re.sub(r"[\s-]", "", s.upper())
    digits = s[:-1].replace("X", "0").replace("Y", "1").replace("Z", "2")
    return digits.isdigit() and _DNI_LETTERS[int(digits) % 23] == s[-1]


def _old(s: str) -> bool:
    years = re.findall(r"(?:19|20)\d{2}", s)
    return bool(years) and int(years[-1]) < min(OLD_DATE, date.today().year)


def pattern_hits(text: str) -> list[Hit]:
    # Ask presidio only for what the text could hold: its phone matcher tries every region and
    # is the slowest part of a scan, and a phone, card or IBAN needs 7 digits at least.
    digits = sum(c.isdigit() for c in text)
    entities = [e for e, need in (("EMAIL_ADDRESS", "@" in text), ("URL", "." in text or ":" in text),
                                  ("IP_ADDRESS", digits >= 4 or ":" in text), ("PHONE_NUMBER", digits >= 7),
                                  ("CREDIT_CARD", digits >= 12), ("IBAN_CODE", digits >= 7)) if need]
    out = [Hit(PRESIDIO_KINDS[r.entity_type], r.start, r.end, text[r.start:r.end], "presidio")
           for r in (analyzer().analyze(text=text, language="en", entities=entities) if entities else [])]
    for kind, rx in _COMPILED:
        for m in rx.finditer(text):
            a, b = m.span("x") if "x" in rx.groupindex and m.group("x") else m.span()
            s = text[a:b].rstrip(" -.,")
            b = a + len(s)
            if not s:
                continue
            if kind == "ES_DNI" and not _dni_ok(s):
                continue
            if kind == "PLATE" and not (re.search(r"\d", s) and re.search(r"[A-Z]", s) and len(s) >= 4):
                continue
            if kind == "DOB" and "x" in rx.groupindex and rx.pattern.startswith(r"\b(?P<x>") and not _old(s):
                continue
            if kind == "ORG":
                s = re.sub(r"(?:\s+(?:&|and|of|de|del|la|für))+$", "", s)
                b = a + len(s)
                if s.casefold() in NOT_ENTITIES or len(s) < 2:
                    continue
            out.append(Hit(kind, a, b, s, "pattern"))
    return out


def ner_hits(doc) -> list[Hit]:
    out = []
    for e in doc.ents:
        kind = NER_KINDS.get(e.label_)
        if kind is None:
            continue
        toks = [t for t in e if not (t.i == e.start and t.lower_ in ("the", "a", "an"))]
        if not toks:
            continue
        a, b = toks[0].idx, toks[-1].idx + len(toks[-1].text)
        s = doc.text[a:b]
        words = [t.lower_ for t in toks if t.is_alpha]
        if not words or all(w in NOT_ENTITIES for w in words):
            continue
        if s.islower() and all(w in english_words() for w in words):
            continue  # "grandma", "the gym": a lowercase common noun, not a name
        if s.isupper() and len(s) <= (4 if kind == "ORG" else 3):
            continue  # HR, NHS, NI, UK: acronyms of roles, institutions and countries, not of the person
        out.append(Hit(kind, a, b, s, "ner"))
    return out


def name_hits(doc) -> list[Hit]:
    names = first_names()
    out = []
    i, toks = 0, list(doc)
    while i < len(toks):
        t = toks[i]
        if t.is_alpha and _foreign_script(t.text):
            j = i
            while j + 1 < len(toks) and toks[j + 1].is_alpha and _foreign_script(toks[j + 1].text):
                j += 1
            out.append(Hit("PERSON", t.idx, toks[j].idx + len(toks[j].text), doc.text[t.idx:toks[j].idx + len(toks[j].text)], "script"))
            i = j + 1
            continue
        w = t.lower_
        if t.is_alpha and len(w) >= 3 and w not in NOT_ENTITIES:
            capital_mid = t.text[0].isupper() and not t.is_sent_start and not t.text.isupper()
            # "my neighbour rose", not "my doctor said"
            after_relation = (i > 0 and toks[i - 1].lower_ in RELATIONS and t.text.islower()
                              and t.pos_ in ("PROPN", "NOUN"))
            if (w in names and not _english(t)) or (capital_mid and not _english(t)) or \
                    (after_relation and w in names):
                out.append(Hit("PERSON", t.idx, t.idx + len(t.text), t.text, "name"))
        i += 1
    return out


def _merge(hits: list[Hit]) -> list[Hit]:
    """Non-overlapping: longest first; on a tie our patterns, presidio, NER, then the name rules."""
    rank = {"pattern": 0, "presidio": 1, "ner": 2, "script": 3, "name": 4}  # the specific pattern wins a tie
    hits = sorted(hits, key=lambda h: (-(h.end - h.start), rank.get(h.source, 4), h.start))
    taken: list[Hit] = []
    for h in hits:
        if all(h.end <= t.start or h.start >= t.end for t in taken):
            taken.append(h)
    return sorted(taken, key=lambda h: h.start)


def _postcodes_by_places(text: str, hits: list[Hit]) -> list[Hit]:
    """'Madrid 28009', '28009 Madrid': a 4-5 digit number next to a place is its postcode."""
    out = []
    for h in hits:
        if h.kind not in ("PLACE", "ADDRESS"):
            continue
        after = re.match(r"[ ,]*(\d{4,5})\b", text[h.end:])
        if after:
            a = h.end + after.start(1)
            out.append(Hit("POSTCODE", a, a + len(after.group(1)), after.group(1), "pattern"))
        before = re.search(r"\b(\d{4,5})[ ,]*$", text[:h.start])
        if before:
            out.append(Hit("POSTCODE", before.start(1), before.end(1), before.group(1), "pattern"))
    return out


def _scan_doc(text: str, doc) -> list[Hit]:
    hits = pattern_hits(text) + ner_hits(doc) + name_hits(doc)
    merged = _merge(hits)
    return _merge(merged + _postcodes_by_places(text, merged))


def _pipe(texts: list[str], batch_size: int = 128):
    from memory import nlp

    # NER needs only tok2vec; the lemmatizer (for `_english`) needs the tagger. The parser gives
    # sentence starts, which the capitalized-word rule needs.
    return nlp.nlp().pipe(texts, batch_size=batch_size)


def scan(text: str) -> list[Hit]:
    """Every identifier hit in `text` (non-overlapping, in order)."""
    return scan_many([text])[0]


def scan_many(texts: list[str], batch_size: int = 128, cache: dict | None = None) -> list[list[Hit]]:
    """`scan` over many texts, with spaCy batching them (nlp.pipe). `cache` (text -> hits), when
    given, is read and filled: an export scans a participant's messages once for terms to learn
    and again to replace them."""
    texts = list(texts)
    cache = {} if cache is None else cache
    todo = list(dict.fromkeys(t for t in texts if t and t.strip() and t not in cache))  # each text once
    for t, doc in zip(todo, _pipe(todo, batch_size)):
        cache[t] = _scan_doc(t, doc)
    return [cache.get(t, []) if t and t.strip() else [] for t in texts]


def uncovered(text: str, hits: list[Hit], surrogates) -> list[Hit]:
    """Hits that are not (wholly, up to titles and connectors) surrogates of a release."""
    if not hits:
        return []
    mask = [False] * len(text)
    for s in surrogates:
        if not s:
            continue
        for m in re.finditer(r"(?<!\w)" + re.escape(s) + r"(?!\w)", text):
            mask[m.start():m.end()] = [True] * (m.end() - m.start())
    out = []
    for h in hits:
        rest = "".join(" " if mask[i] else text[i] for i in range(h.start, h.end))
        left = [w for w in re.findall(r"[\w'’]+", rest.casefold()) if w not in TRIVIAL]
        if left and rest != text[h.start:h.end]:
            # partly a surrogate ("Harbor & Finch said"): the rest counts only if it is no English word
            left = [w for w in left if w not in english_words()]
        if left:
            out.append(h)
    return out
