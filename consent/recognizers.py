"""Identifier recognizers for releases: one place, used to pseudonymize and again to gate.

`scan(text)` / `scan_many(texts)` return `Hit(kind, start, end, text, source)` for everything in a
text that could point at a person; `source` names the recognizer that fired (it is shown when an
export refuses). The export replaces every hit with a surrogate, and the release gates run the
very same scan over every text field of the written files. All offline.

Sources, merged (longest span first; on a tie the more specific source; overlaps dropped):
1. `PATTERNS`, a versioned table: emails (also "ana dot lopez at gmail dot com", "[at]/[dot]"),
   @handles and handles after a cue ("my insta is x.y_z"), US SSN, Spanish DNI/NIE (check letter),
   UK NI, licence plates, street addresses (English and continental forms, number first or last),
   postcodes (UK; a US ZIP after a state; a code with a digit after a cue, words allowed between),
   dates of birth, employers ("work at/for ...").
2. national numbers verified by their check digits (`CHECKSUMS`): Brazilian CPF, Aadhaar
   (Verhoeff), French INSEE/NIR (97 - n mod 97), Italian codice fiscale (check letter), Polish
   PESEL, Dutch BSN (11-test), Swedish personnummer, Canadian SIN, South African ID (Luhn), UK NHS
   (mod 11), Chinese resident ID (ISO 7064 mod 11-2), Turkish kimlik; payment cards (Luhn), IBAN
   (mod 97), phones (python-phonenumbers, valid numbers of eight regions), IPs, URLs and emails
   with a real public suffix (tldextract's bundled list, nothing fetched).
3. the class of identifiers no table lists (`number_hits`): a cue word that names an identifier
   ("MRN", "patient ID", "policy number", "passport no.", any acronym) followed by an ID-like token
   (four digits or more, or letters and digits); a bare run of eight digits or more, or a
   letters-and-digits code of eight characters or more with five digits, that is no date,
   amount or quantity.
4. spaCy NER (the shared pipeline `memory.nlp`, en_core_web_sm 3.8): PERSON -> PERSON,
   GPE/LOC/FAC -> PLACE, ORG -> ORG. A leading relation word, possessive or title is cut off
   ("my sister Lena" -> "Lena", a PERSON whatever NER says); weekdays and months in any form
   ("on Tuesdays", "Thurs"), spans with digits, and a PERSON made only of English words that no
   name list knows ("Dessert") are dropped.
5. name rules for what the small model misses: a first name (every locale of Faker's person
   providers, ~31k) or a surname (~26k) that is not an English word, in any case
   ("had coffee with józef", "dr srinivasan"); any word after a title ("mrs o'halloran"); a
   capitalized mid-sentence word that is no English word ("texted Priya"); a first name after a
   relation word ("my neighbour rose"); a nickname after "Big/Lil/Uncle/Doc ..." ("Big Mo"), after
   "called/aka/known as" or before "(that's what we call ...)". Adjacent name words are one name.
6. other languages (`consent.languages`): each sentence is read as English, as another Latin-script
   language, or as a sentence of its script. In an English sentence a run of up to four words of a
   non-Latin script is a name ("lunch with Александра"); a sentence written in Greek, Cyrillic,
   Arabic, Devanagari, Han, Hangul ... keeps its words, and only that script's names are replaced
   (capitalized mid-sentence words in cased scripts, known names, surname + given name or a name
   before an honorific in Han, kana and Hangul); a German or Spanish sentence keeps its nouns, and
   NER (an English model) is believed there only on known or standing-out capitalized names.

Over-redaction is the safe side, but it has a price in research value: the ordinary-message
sets in tests/data measure it (tests/anonymization_bench.py prints both numbers).
"""

from __future__ import annotations

import importlib
import ipaddress
import pkgutil
import re
import unicodedata
from dataclasses import dataclass
from datetime import date
from functools import lru_cache

from consent import languages

VERSION = "recognizers-v2"

NER_KINDS = {"PERSON": "PERSON", "GPE": "PLACE", "LOC": "PLACE", "FAC": "PLACE", "ORG": "ORG"}
# Kinds of numbers and codes (normalized to their letters and digits when compared).
NUMBER_KINDS = {"US_SSN", "ES_DNI", "UK_NI", "PLATE", "POSTCODE", "CARD", "IBAN", "ID_NUMBER", "BR_CPF",
                "IN_AADHAAR", "FR_INSEE", "IT_FISCAL", "PL_PESEL", "NL_BSN", "SE_PERSONNUMMER", "CA_SIN",
                "UK_NHS", "CN_RESIDENT", "TR_KIMLIK", "ZA_ID"}

_MONTHS = ("jan(?:uary)?|feb(?:ruary)?|mar(?:ch)?|apr(?:il)?|may|june?|july?|aug(?:ust)?|"
           "sep(?:t(?:ember)?)?|oct(?:ober)?|nov(?:ember)?|dec(?:ember)?")
_DOT = r"(?:\s*\[\s*dot\s*\]\s*|\s*\(\s*dot\s*\)\s*|\s+dot\s+|\.)"
_AT = r"(?:\s*\[\s*at\s*\]\s*|\s*\(\s*at\s*\)\s*|\s*\{\s*at\s*\}\s*|\s+at\s+|\s*@\s*)"
_TLD = r"(?:com|org|net|edu|gov|io|co|uk|de|es|fr|it|nl|pl|pt|info|me|us|ca|au|ch|at|be|se|no|dk|fi|ie|mx|br)"
_STREET = (r"(?:Road|Rd|Street|St|Avenue|Ave|Lane|Ln|Drive|Dr|Boulevard|Blvd|Way|Court|Ct|Place|Pl|Terrace|"
           r"Close|Crescent|Square|Sq|Parkway|Pkwy|Highway|Hwy|Row|Mews|Grove|Gardens|Hill|Walk)")
_CONT_STREET = r"(?:Calle|Avenida|Av\.|Plaza|Paseo|Carrer|Rua|Travessa|Largo|Via|Viale|Corso|Piazza|Rue|Straße|Strasse|ulica|ul\.)"
_CONT_STREET_ANY = (r"(?i:rue|avenue|av\.|boulevard|bd|chemin|allée|impasse|quai|via|viale|corso|piazza|calle|avenida|"
                    r"rua|travessa|largo|carrer|paseo|plaza|straße|strasse|ulica|ul\.)")
_LINKS = r"(?:(?:de|del|de la|la|las|los|da|das|do|dos|di|della|des|du|le|les|von|der)\s+)*"
_STATES = ("AL|AK|AZ|AR|CA|CO|CT|DE|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|"
           "NC|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|DC")
_DATE = (rf"(?:\d{{1,2}}[/.-]\d{{1,2}}[/.-](?:19|20)\d{{2}}|(?:19|20)\d{{2}}-\d{{2}}-\d{{2}}|"
         rf"\d{{1,2}}(?:st|nd|rd|th)?\s+(?:of\s+)?(?:{_MONTHS})\.?,?\s+(?:19|20)\d{{2}}|"
         rf"(?:{_MONTHS})\.?\s+\d{{1,2}}(?:st|nd|rd|th)?,?\s+(?:19|20)\d{{2}})")
_SOCIAL = (r"insta(?:gram)?|ig|snap(?:chat)?|tiktok|twitter|threads|bluesky|discord|telegram|twitch|reddit|github|"
           r"gamertag|psn|steam|xbox(?:\s+live)?|username|user\s?name|handle|screen\s?name|skype|signal|mastodon")

# (kind, regex, flags): the versioned pattern table. A group named `x` marks the identifier
# inside a match that also carries its context ("plate: X").
PATTERNS: tuple[tuple[str, str, int], ...] = (
    ("EMAIL", rf"(?<![\w.])[a-z0-9][a-z0-9._%+-]*(?:{_DOT}[a-z0-9_%+-]+)*{_AT}[a-z0-9-]+(?:{_DOT}[a-z0-9-]+)*"
              rf"{_DOT}{_TLD}\b", re.I),
    ("HANDLE", r"(?<![\w.@/])@[A-Za-z0-9_](?:[A-Za-z0-9_.]*[A-Za-z0-9_])?", 0),
    ("HANDLE", rf"\b(?i:{_SOCIAL})\b(?:\s+(?i:is|name|handle|account|id))?\s*(?:[:=-]|,?\s*(?i:it's|its|is))?\s*"
               r"(?P<x>(?<![\w@])[A-Za-z0-9_][A-Za-z0-9_.]{2,29}(?<!\.))", 0),  # kept only if no plain word (_handle_ok)
    ("US_SSN", r"\b(?!000|666|9\d\d)\d{3}([- ])(?!00)\d{2}\1(?!0000)\d{4}\b", 0),
    ("ES_DNI", r"\b\d{8}-?[A-Z]\b|\b[XYZ]-?\d{7}-?[A-Z]\b", re.I),
    ("UK_NI", r"\b[A-Z]{2}\s?\d{2}\s?\d{2}\s?\d{2}\s?[A-D]\b", 0),  # any prefix: "QQ" is the one on forms
    ("PLATE", r"\b[A-Z]{2}\d{2}\s?[A-Z]{3}\b", 0),                       # UK
    ("PLATE", r"\b\d{4}\s?[BCDFGHJKLMNPRSTVWXYZ]{3}\b", 0),              # Spain
    ("PLATE", r"\b[A-Z]{2}-\d{3}-[A-Z]{2}\b", 0),                        # France
    ("PLATE", r"\b[A-ZÄÖÜ]{1,3}-[A-Z]{1,2}\s?\d{1,4}[EH]?\b", 0),        # Germany
    ("PLATE", r"\b(?i:plate|registration|reg|licen[cs]e)(?:\s+(?i:number|no\.?|plate))?(?:\s+(?i:is|was))?\s*[:#]?\s*"
              r"(?P<x>[A-Z0-9]{1,8}(?:[ -][A-Z0-9]{1,4})?)\b", 0),  # kept only with a letter and a digit
    ("ADDRESS", rf"\b\d{{1,5}}[A-Za-z]?,?\s+(?:[NSEW]\.?\s+)?(?:[A-Z][\w'’.-]*\s+){{1,3}}{_STREET}\b\.?", 0),
    ("ADDRESS", rf"\b{_CONT_STREET}\s+{_LINKS}[\w'’-]+(?:\s+[A-Z][\w'’-]+)?,?\s*\d{{1,4}}[a-zA-Z]?\b", 0),
    ("ADDRESS", rf"\b\d{{1,4}}(?:\s?(?:bis|ter))?,?\s+{_CONT_STREET_ANY}\s+{_LINKS}[\w'’-]+(?:\s+[A-Z][\w'’-]+)*", 0),
    ("ADDRESS", r"\b[A-ZÄÖÜ][\wäöüß-]*(?:straße|strasse|weg|gasse|platz|allee|ring)\s+\d{1,4}[a-z]?\b", 0),
    ("ADDRESS", rf"\b(?:[A-Z][\w'’-]+\s+){{1,2}}{_STREET}\b", 0),         # a street named without number
    ("POSTCODE", r"\b[A-Z]{1,2}\d[A-Z\d]?\s?\d[A-Z]{2}\b", 0),           # UK
    ("POSTCODE", r"\b[ABCEGHJ-NPRSTVXY]\d[ABCEGHJ-NPRSTV-Z][ -]?\d[ABCEGHJ-NPRSTV-Z]\d\b", 0),  # Canada
    ("POSTCODE", r"\b[1-9]\d{3}[ ]?(?!(?:AM|PM|BC|AD|CE|OK|GB|MB|KB|TB|HZ|KM|KG|SA|SD|SS|UK|US)\b)[A-Z]{2}\b", 0),  # NL
    ("POSTCODE", rf"\b(?:{_STATES})\s+(?P<x>\d{{5}}(?:-\d{{4}})?)\b", 0),
    ("POSTCODE", r"\b(?:post\s?code|zip(?:\s?code)?|postal\s+code|code\s+postal|CP|CEP|PLZ|Postleitzahl|"
                 r"PIN\s?code|pincode|eircode)\b(?:\s+(?!is\b)[^\W\d_]+){0,4}?\s*(?:is|was|:|=|-|é|ist|es)?\s*"
                 r"(?P<x>(?=[A-Z]{0,4}\d)[A-Z0-9]{2,5}(?:[ -]?[A-Z0-9]{3,4})?)\b", re.I),
    ("DOB", rf"\b(?:born|birthday|b\.|DOB|date of birth|birth date|birthdate)\b[^.!?\n]{{0,30}}?(?P<x>{_DATE})", re.I),
    ("DOB", rf"(?P<x>{_DATE})[^.!?\n]{{0,20}}?\b(?:is my birthday|my birthday|I was born)\b", re.I),
    ("DOB", rf"\b(?P<x>{_DATE})\b", re.I),  # any full date: kept only if before OLD_DATE (see _old)
    ("ORG", r"\b(?:work(?:s|ed|ing)?|job|employed|intern(?:s|ed|ing)?|teach(?:es|ing)?|volunteer(?:s|ed|ing)?|"
            r"hired|started)\s+(?:at|for|by|with)\s+(?:the\s+)?"
            r"(?P<x>[A-Z][\w&'’.-]*(?:\s+(?:&|and|of|de|del|la|für|[A-Z][\w&'’.-]*))*(?:\s+[A-Z][\w'’.-]*)?)", 0),
)
OLD_DATE = 2016  # a full date before this year is nearly always a birth date in a chat

RELATIONS = ("sister brother friend boss mother mom mum dad father wife husband partner son daughter colleague "
             "coworker cousin aunt uncle neighbour neighbor girlfriend boyfriend roommate flatmate grandma grandpa "
             "grandmother grandfather teacher doctor therapist manager niece nephew landlord landlady ex fiance "
             "fiancee fiancé fiancée buddy mate housemate classmate stepmom stepdad stepson stepdaughter "
             "godmother godfather bestie coach tutor supervisor").split()
TITLES = set("mr mrs ms mx miss dr prof mme mlle sr sra srta herr frau sig signora signor dott sir madam lady lord "
             "mister missus".split())
_WORD_TITLES = {"miss", "sir", "madam", "lady", "lord", "mister", "missus", "signora", "signor"}  # also plain words
# Words before a nickname or a name that stay as they are ("Big Mo" -> "Big Avery", "Uncle Bob").
NICK_PREFIXES = set("big lil little fat skinny tiny old young crazy mad baby sweet lady uncle auntie aunt aunty "
                    "grandma grandpa granny nana nonna nonno papa mama cousin brother sister doc coach captain "
                    "sarge father mother tía tío tia tio tante onkel abuela abuelo grand-mère grand-père mémé pépé "
                    "oma opa baba dada didi bhaiya akka amma appa".split())
# An animal's name follows these ("our cat Mochi", "the puppy, Taco"): it is the household's, and as
# identifying as a person's.
PETS = set("dog dogs cat cats puppy pup kitten kitty hamster rabbit bunny parrot budgie tortoise turtle horse pony "
           "ferret goldfish lizard gecko snake pig rat mouse chinchilla cockatiel iguana".split())
WEEKDAYS = ("monday tuesday wednesday thursday friday saturday sunday mon tue tues wed weds thu thur thurs fri sat "
            "sun").split()
MONTHS = ("january february march april may june july august september october november december jan feb mar apr "
          "jun jul aug sep sept oct nov dec").split()
# Words NER or the capitalized-word rule mistake for names; lowercased.
NOT_ENTITIES = set("""grandma grandpa granny nana mom mum dad mommy daddy mama papa auntie uncle sis bro
christmas easter xmas today tomorrow yesterday tonight weekend weekends
diwali eid ramadan hanukkah chanukah thanksgiving friendsgiving halloween passover holi navratri kwanzaa
hogmanay pentecost lent advent
i i'm i've i'll i'd ok okay hey hi hello thanks lol omg haha yes no
the a an my our your his her their this that these those it is was and but or so oh
mr mrs ms dr sir madam""".split()) | set(WEEKDAYS) | set(MONTHS)
# Residue allowed around a surrogate in a hit the gate sees ("Dr Avery", "Avery's", "Big Avery").
TRIVIAL = NOT_ENTITIES | TITLES | NICK_PREFIXES | {"s", "'s", "’s", "of", "&", "st", "de", "la", "von", "van", "der",
                                                   "jr", "sr"}
_LATIN = re.compile(r"LATIN")


@dataclass(frozen=True)
class Hit:
    kind: str
    start: int
    end: int
    text: str
    source: str = ""


# --- word lists, loaded once ----------------------------------------------------------------------


def _faker_names(attrs: tuple[str, ...]) -> frozenset[str]:
    import faker.providers.person as people

    out: set[str] = set()
    for m in pkgutil.iter_modules(people.__path__):
        try:
            provider = importlib.import_module(f"{people.__name__}.{m.name}").Provider
        except (ImportError, AttributeError):
            continue
        for attr in attrs:
            v = provider.__dict__.get(attr)
            if isinstance(v, (list, tuple, set, dict)):
                out |= {n.casefold() for n in v if isinstance(n, str) and len(n) >= 3}
    # as people type them too: "horvath" for Horváth, "jozef" for József
    out |= {unaccented(n) for n in out}
    return frozenset(out)


def unaccented(s: str) -> str:
    return "".join(c for c in unicodedata.normalize("NFKD", s) if not unicodedata.combining(c))


@lru_cache(maxsize=1)
def first_names() -> frozenset[str]:
    """Casefolded first names of every locale Faker ships (the gazetteer of the name rules)."""
    return _faker_names(("first_names", "first_names_male", "first_names_female"))


@lru_cache(maxsize=1)
def surnames() -> frozenset[str]:
    """Casefolded surnames of every locale Faker ships, of 4 letters or more, minus English words
    and their plurals ("flowers", "weeks": a surname list holds many)."""
    return frozenset(w for w in _faker_names(("last_names", "last_names_male", "last_names_female"))
                     if len(w) >= 4 and not english_word(w))


@lru_cache(maxsize=1)
def english_words() -> frozenset[str]:
    """The WordNet word index (nouns, verbs, adjectives, adverbs) that spaCy's lemmatizer ships."""
    from memory import nlp

    lookups = nlp.nlp().get_pipe("lemmatizer").lookups
    index, exceptions = lookups.get_table("lemma_index"), lookups.get_table("lemma_exc")
    words = {w for pos in index.keys() for w in index[pos]}
    words |= {w for pos in exceptions.keys() for w in exceptions[pos]}  # said, children, went ...
    return frozenset(words)


@lru_cache(maxsize=1)
def _stop_words() -> frozenset[str]:
    from spacy.lang.en.stop_words import STOP_WORDS

    return frozenset(STOP_WORDS)


@lru_cache(maxsize=65536)
def english_word(w: str) -> bool:
    """`w` (casefolded) is an English word or a regular inflection of one (the lemmatizer is not
    run: this is the check it would have made)."""
    words = english_words()
    if w in words or w in _stop_words():
        return True
    w = w.removesuffix("'s").removesuffix("’s")
    stems = []
    if w.endswith("ies"):
        stems.append(w[:-3] + "y")
    if w.endswith("men"):
        stems.append(w[:-3] + "man")  # women, firemen
    if w.endswith("es"):
        stems.append(w[:-2])
    if w.endswith("s"):
        stems.append(w[:-1])
    if w.endswith("ed"):
        stems += [w[:-2], w[:-1]]
    if w.endswith("ing"):
        stems += [w[:-3], w[:-3] + "e"]
    if w.endswith("ly"):
        stems.append(w[:-2])
    if w.endswith(("er", "est")):
        stems += [w[:-2], w[:-3], w[:-1]]
    return any(len(s) >= 2 and s in words for s in stems)


def temporal(w: str) -> bool:
    """A weekday or month in any form: "Tuesdays", "Thurs", "Friday's", "Sept"."""
    w = w.casefold().removesuffix("'s").removesuffix("’s").rstrip(".")
    return w in WEEKDAYS or w in MONTHS or (w.endswith("s") and w[:-1] in WEEKDAYS)


def _script(ch: str) -> str:
    try:
        name = unicodedata.name(ch)
    except ValueError:
        return ""
    return "LATIN" if _LATIN.search(name) else name.split()[0]


def _letter(ch: str) -> bool:
    """A letter or a combining mark (Devanagari vowel signs are marks, not letters)."""
    return unicodedata.category(ch)[0] in "LM"


def _foreign_script(word: str) -> bool:
    letters = [c for c in word if unicodedata.category(c)[0] == "L"]
    return bool(letters) and all(_script(c) != "LATIN" for c in letters)


@dataclass
class _Word:
    start: int
    end: int
    text: str
    lower: str
    sent_start: bool
    possessive: bool = False  # written "son's": what follows is the son's, not his name


_JOINERS = "-'’\u200c\u200d"


def _words(text: str) -> list[_Word]:
    """Words as a reader sees them: letters and combining marks, joined by hyphens and apostrophes
    ("Kessler-Duval", "o'halloran", "अनिरुद्ध"), each knowing if it starts a sentence."""
    out, i, n = [], 0, len(text)
    sent = True
    while i < n:
        c = text[i]
        if _letter(c):
            j = i + 1
            while j < n and (_letter(text[j]) or (text[j] in _JOINERS and j + 1 < n and _letter(text[j + 1]))):
                j += 1
            w = text[i:j]
            possessive = w.endswith(("'s", "’s")) and len(w) > 3
            if possessive:
                w = w[:-2]
            out.append(_Word(i, i + len(w), w, w.casefold(), sent, possessive))
            sent = False
            i = j
            continue
        if c in ".!?\n…":
            sent = True
        elif c.isdigit():
            sent = False
        i += 1
    return out


# --- check digits -------------------------------------------------------------------------------

_DNI_LETTERS = "TRWAGMYFPDXBNJZSQVHLCKE"


def _dni_ok(s: str) -> bool:
    s = re.sub(r"[\s-]", "", s.upper())
    digits = s[:-1].replace("X", "0").replace("Y", "1").replace("Z", "2")
    return digits.isdigit() and _DNI_LETTERS[int(digits) % 23] == s[-1]


def _luhn(d: str) -> bool:
    total = 0
    for i, c in enumerate(reversed(d)):
        x = int(c)
        if i % 2:
            x = x * 2 - 9 if x > 4 else x * 2
        total += x
    return total % 10 == 0


_V_D = ((0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 2, 3, 4, 0, 6, 7, 8, 9, 5), (2, 3, 4, 0, 1, 7, 8, 9, 5, 6),
        (3, 4, 0, 1, 2, 8, 9, 5, 6, 7), (4, 0, 1, 2, 3, 9, 5, 6, 7, 8), (5, 9, 8, 7, 6, 0, 4, 3, 2, 1),
        (6, 5, 9, 8, 7, 1, 0, 4, 3, 2), (7, 6, 5, 9, 8, 2, 1, 0, 4, 3), (8, 7, 6, 5, 9, 3, 2, 1, 0, 4),
        (9, 8, 7, 6, 5, 4, 3, 2, 1, 0))
_V_P = ((0, 1, 2, 3, 4, 5, 6, 7, 8, 9), (1, 5, 7, 6, 2, 8, 3, 0, 9, 4), (5, 8, 0, 3, 7, 9, 6, 1, 4, 2),
        (8, 9, 1, 6, 0, 4, 3, 5, 2, 7), (9, 4, 5, 3, 1, 2, 6, 8, 7, 0), (4, 2, 8, 6, 5, 7, 3, 9, 0, 1),
        (2, 7, 9, 3, 8, 0, 6, 4, 1, 5), (7, 0, 4, 6, 9, 1, 3, 2, 5, 8))


def _verhoeff(d: str) -> bool:
    c = 0
    for i, ch in enumerate(reversed(d)):
        c = _V_D[c][_V_P[i % 8][int(ch)]]
    return c == 0


def _cpf(d: str) -> bool:
    if len(set(d)) == 1:
        return False
    body = [int(c) for c in d[:9]]
    for w in (10, 11):
        s = sum(x * y for x, y in zip(body, range(w, 1, -1)))
        body.append(0 if s % 11 < 2 else 11 - s % 11)
    return "".join(map(str, body)) == d


def _insee(d: str) -> bool:
    n = d[:13].upper().replace("2A", "19").replace("2B", "18")
    return n.isdigit() and 97 - int(n) % 97 == int(d[13:])


_CF_ODD = dict(zip("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
                   (1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 1, 0, 5, 7, 9, 13, 15, 17, 19, 21, 2, 4, 18, 20, 11, 3, 6, 8,
                    12, 14, 16, 10, 22, 25, 24, 23)))


def _fiscal(d: str) -> bool:
    d = d.upper()
    total = sum(_CF_ODD[c] if i % 2 == 0 else (int(c) if c.isdigit() else ord(c) - 65) for i, c in enumerate(d[:15]))
    return chr(65 + total % 26) == d[15]


def _pesel(d: str) -> bool:
    s = sum(int(x) * w for x, w in zip(d, (1, 3, 7, 9, 1, 3, 7, 9, 1, 3)))
    return (10 - s % 10) % 10 == int(d[10])


def _bsn(d: str) -> bool:
    d = d.zfill(9)
    return sum(int(x) * w for x, w in zip(d, (9, 8, 7, 6, 5, 4, 3, 2, -1))) % 11 == 0 and d != "000000000"


def _nhs(d: str) -> bool:
    s = sum(int(x) * w for x, w in zip(d[:9], range(10, 1, -1)))
    check = (11 - s % 11) % 11
    return check != 10 and check == int(d[9])


def _cn(d: str) -> bool:
    s = sum(int(x) * (2 ** (17 - i) % 11) for i, x in enumerate(d[:17]))
    return "10X98765432"[s % 11] == d[17].upper()


def _kimlik(d: str) -> bool:
    x = [int(c) for c in d]
    return x[0] != 0 and ((x[0] + x[2] + x[4] + x[6] + x[8]) * 7 - (x[1] + x[3] + x[5] + x[7])) % 10 == x[9] \
        and sum(x[:10]) % 10 == x[10]


def _za(d: str) -> bool:
    return _luhn(d) and 1 <= int(d[2:4]) <= 12 and 1 <= int(d[4:6]) <= 31 and d[10] in "01"


def _iban(d: str) -> bool:
    d = d.upper()
    return len(d) >= 15 and int("".join(str(int(c, 36)) for c in d[4:] + d[:4])) % 97 == 1


_SEP = r"[ .-]?"
# (kind, regex, check of the letters and digits): national numbers and accounts, verified
CHECKSUMS: tuple[tuple[str, str, object], ...] = (
    ("IBAN", r"\b[A-Z]{2}\d{2}(?:[ -]?[A-Z0-9]{4}){2,7}(?:[ -]?[A-Z0-9]{1,3})?\b", _iban),
    ("BR_CPF", r"\b\d{3}\.?\d{3}\.?\d{3}[-.]?\d{2}\b", _cpf),
    ("IN_AADHAAR", r"\b[2-9]\d{3}[ -]?\d{4}[ -]?\d{4}\b", _verhoeff),
    ("FR_INSEE", r"\b[12] ?\d{2} ?(?:0[1-9]|1[0-2]|[2-9]\d) ?(?:\d{2}|2[AB]) ?\d{3} ?\d{3} ?\d{2}\b", _insee),
    ("IT_FISCAL", r"(?i:\b[A-Z]{6}[\dLMNP-V]{2}[A-EHLMPR-T][\dLMNP-V]{2}[A-Z][\dLMNP-V]{3}[A-Z]\b)", _fiscal),
    ("CN_RESIDENT", r"\b\d{17}[\dXx]\b", _cn),
    ("ZA_ID", r"\b\d{13}\b", _za),
    ("PL_PESEL", r"\b\d{11}\b", _pesel),
    ("TR_KIMLIK", r"\b[1-9]\d{10}\b", _kimlik),
    ("SE_PERSONNUMMER", r"\b(?:19|20)?\d{6}[-+]\d{4}\b", lambda d: _luhn(d[-10:])),
    ("UK_NHS", r"\b\d{3}[ -]?\d{3}[ -]?\d{4}\b", _nhs),
    ("CA_SIN", r"\b\d{3}[ -]\d{3}[ -]\d{3}\b", _luhn),
    ("NL_BSN", r"\b\d{4}\.?\d{2}\.?\d{3}\b|\b\d{9}\b", _bsn),
    # last: a national number of the same length that passes its own, stricter check wins the tie
    ("CARD", r"\b(?:\d{4}[ -]?){3}\d{1,7}\b|\b\d{4}[ -]?\d{6}[ -]?\d{5}\b", lambda d: 13 <= len(d) <= 19 and _luhn(d)),
)

# Cue words that name an identifier ("MRN", "policy number", "passport no."): the word before an
# ID-like token. Any acronym of 2-6 capitals directly before a number of 5 digits counts too.
_CUE = (r"numbers?|no\.|n[º°]\.?|nr\.?|num\.?|n[uú]mero|num[ée]ro|nummer|#|ids?|codes?|ref(?:erence)?\.?|mrn|nhs|"
        r"ssn|sin|tin|itin|pin|nino|nie|nif|dni|cpf|cnpj|rg|aadhaa?r|uid|pan|insee|s[ée]cu|vitale|bsn|pesel|"
        r"personnummer|kimlik|curp|rfc|nric|hkid|passport|licen[cs]e|policy|account|acct|member(?:ship)?|patient|"
        r"chart|record|case|claim|ticket|booking|confirmation|tracking|invoice|serial|voter|fiscale?|身份证号?|번호|番号")
_CHUNK = r"[A-Za-z]{0,4}\d[A-Za-z0-9]*"
_RUN = rf"(?:[A-Z]{{1,4}}[-. ]?)?{_CHUNK}(?:[-./ ](?:[A-Z]{{1,4}}[-./])?{_CHUNK})*"
_TIGHT_RUN = rf"(?:[A-Z]{{1,4}}[-.]?)?{_CHUNK}(?:[-./ ](?:[A-Z]{{1,4}}[-./])?{_CHUNK})*"  # a cue word stays apart
_FILLER = r"(?:\s*(?:(?i:is|was|are|it's|its|it is|number|no|nr|id|code|reads|says)\b\.?|[:#=–-]))*"
# Names of identifier systems are no one's name ("my Aadhaar", "the INSEE number").
CUE_WORDS = set("""number no nr id code ref reference mrn nhs ssn sin tin itin pin nino nie nif dni cpf cnpj rg aadhaar
aadhar uid pan insee sécu secu vitale bsn burgerservicenummer pesel personnummer kimlik tc curp rfc nric hkid passport
licence license policy account member membership patient chart record case claim ticket booking confirmation
tracking invoice serial voter fiscale fiscal codice iban swift bic sa kyc""".split())
CUE_ID = re.compile(rf"(?:(?i:(?<!\w)(?:{_CUE})(?!\w))|#){_FILLER}\s*[(]?\s*(?P<x>(?<![\w@/]){_RUN})")
ID_THEN_CUE = re.compile(rf"(?P<x>(?<![\w@/]){_RUN})\s+(?i:is|was|=|are)\s+(?i:my|your|his|her|our|their|the|a)\s+"
                         rf"(?:[^\W\d_]+\s+){{0,2}}(?i:{_CUE})(?!\w)")  # "156020 is my member ID"
ACRONYM_ID = re.compile(rf"\b[A-Z]{{2,6}}\b\s*[:#]?\s*(?P<x>(?<![\w@/]){_RUN})")
BARE_RUN = re.compile(rf"(?<![\w@/.,-]){_TIGHT_RUN}(?![\w@]|[.,]\d)")
_UNIT_AFTER = re.compile(r"\s*(?:%|k\b|km|m\b|mi\b|miles?|kg|g\b|lbs?|steps|people|views|followers|likes|dollars|"
                         r"euros?|pounds|bucks|usd|eur|gbp|yen|rupees|reais|calories|kcal|words|pages|points|pts|"
                         r"years?|days?|hours?|minutes?|seconds?|times|x\b)", re.I)
_CURRENCY_BEFORE = re.compile(r"(?:[$€£¥₹]|\b(?:usd|eur|gbp|inr|brl|r\$))\s*$", re.I)
_DATE_RUN = re.compile(r"^(?:\d{1,2}[/.-]\d{1,2}(?:[/.-]\d{2,4})?|\d{4}[/.-]\d{1,2}[/.-]\d{1,2}|"
                       r"(?:19|20)\d{2} ?[-/–] ?(?:(?:19|20)?\d{2}))$")  # dates and year ranges

_PHONE_REGIONS = ("US", "GB", "DE", "FR", "IL", "IN", "CA", "BR")
_EMAIL = re.compile(r"(?<![\w.+-])[\w.%+-]+@[\w-]+(?:\.[\w-]+)+")
_URL = re.compile(r"(?i)\b(?:https?://|www\.)[^\s<>\"')\]]+|(?<![@\w.-])(?:[a-z0-9](?:[a-z0-9-]*[a-z0-9])?\.)+"
                  r"[a-z]{2,24}(?:/[^\s<>\"')\]]*)?(?![\w@-])")
_IPV4 = re.compile(r"(?<![\d.])(?:\d{1,3}\.){3}\d{1,3}(?:/\d{1,2})?(?![\d.]|\.\d)")
_IPV6 = re.compile(r"(?<![\w:])(?:[0-9A-Fa-f]{0,4}:){2,7}[0-9A-Fa-f]{0,4}(?![\w:])")


@lru_cache(maxsize=1)
def _suffixes():
    import tldextract

    return tldextract.TLDExtract(suffix_list_urls=(), cache_dir=None)


_COMPILED = [(k, re.compile(p, f)) for k, p, f in PATTERNS]
_CHECKS = [(k, re.compile(p), fn) for k, p, fn in CHECKSUMS]


def _old(s: str) -> bool:
    years = re.findall(r"(?:19|20)\d{2}", s)
    return bool(years) and int(years[-1]) < min(OLD_DATE, date.today().year)


def _handle_ok(s: str) -> bool:
    """A handle after a cue is kept only if it is no plain word ("my insta is great")."""
    return bool(re.search(r"[\d_.]", s) or re.search(r"[a-z][A-Z]", s)) or not english_word(s.casefold())


_NEED_DIGITS = {"US_SSN", "ES_DNI", "UK_NI", "POSTCODE", "DOB", "PLATE"}


def _table_hits(text: str, digits: bool) -> list[Hit]:
    out = []
    for kind, rx in _COMPILED:
        if not digits and kind in _NEED_DIGITS:
            continue
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
            if kind == "POSTCODE" and not re.search(r"\d", s):
                continue
            if kind == "HANDLE" and "x" in rx.groupindex and not _handle_ok(s):
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


def _checksum_hits(text: str) -> list[Hit]:
    out = []
    for kind, rx, ok in _CHECKS:
        for m in rx.finditer(text):
            s = m.group(0)
            d = re.sub(r"[^0-9A-Za-z]", "", s)
            if kind == "IBAN":  # a trailing word can look like a last group: try shorter
                while not ok(d) and re.search(r"[ -][A-Z0-9]{1,4}$", s):
                    s = re.sub(r"[ -][A-Z0-9]{1,4}$", "", s)
                    d = re.sub(r"[^0-9A-Za-z]", "", s)
            if ok(d):
                out.append(Hit(kind, m.start(), m.start() + len(s), s, "checksum"))
    return out


def _phone_hits(text: str) -> list[Hit]:
    import phonenumbers

    out, seen = [], set()
    for region in _PHONE_REGIONS:
        for m in phonenumbers.PhoneNumberMatcher(text, region, leniency=phonenumbers.Leniency.VALID):
            if (m.start, m.end) not in seen:
                seen.add((m.start, m.end))
                out.append(Hit("PHONE", m.start, m.end, m.raw_string, "phone"))
    return out


def _net_hits(text: str) -> list[Hit]:
    out = []
    if "@" in text:
        for m in _EMAIL.finditer(text):
            s = m.group(0).rstrip(".")
            if _suffixes()(s.split("@", 1)[1]).suffix:
                out.append(Hit("EMAIL", m.start(), m.start() + len(s), s, "email"))
    if "." in text:
        for m in _URL.finditer(text):
            s = m.group(0).rstrip(".,;:!?")
            host = re.sub(r"^(?i:https?://)", "", s).split("/", 1)[0]
            if "://" in s or s.lower().startswith("www.") or (_suffixes()(host).suffix and not host[0].isdigit()
                                                                 and not re.fullmatch(r"[\d.]+", host)):
                out.append(Hit("URL", m.start(), m.start() + len(s), s, "url"))
        for m in _IPV4.finditer(text):
            try:
                ipaddress.ip_network(m.group(0), strict=False)
                out.append(Hit("IP", m.start(), m.end(), m.group(0), "ip"))
            except ValueError:
                pass
    if text.count(":") >= 2:
        for m in _IPV6.finditer(text):
            try:
                ipaddress.IPv6Address(m.group(0))
                out.append(Hit("IP", m.start(), m.end(), m.group(0), "ip"))
            except ValueError:
                pass
    return out


def _id_like(s: str, cue: bool) -> bool:
    d = sum(c.isdigit() for c in s)
    alnum = sum(c.isalnum() for c in s)
    if _DATE_RUN.match(s):
        return False
    if cue:
        return d >= 4 or (alnum >= 5 and d >= 2)
    letters = alnum - d
    return d >= 8 or (alnum >= 8 and d >= 5 and letters >= 1 and " " not in s)


def number_hits(text: str) -> list[Hit]:
    """Identifiers of no listed form: an ID-like token after a cue word or an acronym, or long
    enough alone (the class of "MRN 00482917", "member number AXA-88120457", "W8841207753")."""
    out = []
    for rx, source in ((CUE_ID, "cue"), (ACRONYM_ID, "cue"), (ID_THEN_CUE, "cue")):
        for m in rx.finditer(text):
            a, b = m.span("x")
            s = text[a:b]
            if rx is ACRONYM_ID and sum(c.isdigit() for c in s) < 5:
                continue
            if _id_like(s, cue=True) and not _UNIT_AFTER.match(text, b):
                out.append(Hit("ID_NUMBER", a, b, s, source))
    for m in BARE_RUN.finditer(text):
        s = m.group(0)
        if not _id_like(s, cue=False):
            continue
        if _UNIT_AFTER.match(text, m.end()) or _CURRENCY_BEFORE.search(text[:m.start()]):
            continue
        out.append(Hit("ID_NUMBER", m.start(), m.end(), s, "digits"))
    return out


def pattern_hits(text: str) -> list[Hit]:
    """Hits of every source that reads the characters only (1-3 of the module doc)."""
    digits = sum(c.isdigit() for c in text)
    out = _table_hits(text, digits > 0)
    if digits >= 4:
        out += _checksum_hits(text) + number_hits(text)
    if digits >= 7:
        out += _phone_hits(text)
    if "@" in text or "." in text or ":" in text:
        out += _net_hits(text)
    return out


# --- names --------------------------------------------------------------------------------------

NICKNAME_TOLD = re.compile(
    r"\b(?i:call(?:s|ed)?|nicknamed|aka|a\.k\.a\.|known as|goes by|go by|going by)\s+"
    r"(?:(?i:my|our|his|her|their)\s+(?:\w+\s+)?(?:" + "|".join(RELATIONS) + r")\s+|(?i:him|her|them|me|us)\s+)?"
    r"[\"“']?(?P<x>[A-Z][^\W\d_]+(?:[-'’][^\W\d_]+)?)")
NICKNAME_BEFORE = re.compile(
    r"(?P<x>[A-Z][^\W\d_]+)\s*\((?i:that's|that is|which is|as)\s+(?i:what)\s+(?i:we|they|i|everyone|people|"
    r"everybody)\s+call")


# A surname with its particles: two particles ("van der", "de la") or one that is only a particle,
# then the name itself.
PARTICLE_NAME = re.compile(
    r"(?<![\w'])(?i:(?:(?:van|von|de|di|da|du|del|della|der|den|ter|ten|le|la|dos|das|do|bin|ibn|al|el|abu)\s+){2,}"
    r"|(?:van|von|der|den|ter|ten|bin|ibn|della|dos|das)\s+)[^\W\d_]{3,}(?:-[^\W\d_]+)?")


def _is_name_word(w: _Word) -> bool:
    return w.lower in first_names() or w.lower in surnames()


def _gazetteer(low: str) -> bool:
    return low in first_names() or low in surnames()


def _foreign_name(w: _Word, prev: str, english: bool, noun_caps: bool) -> bool:
    """A word of a sentence in another Latin-script language that is a name: after a title ("Herr
    Bauer"), or capitalized and a first name (also a surname where nouns are not capitalized: German
    "Koch", "Fischer" are nouns), or a capitalized mid-sentence word no English list knows where nouns
    are not capitalized. At a sentence's start only a first name of four letters or more ("Hoy" is
    a surname somewhere)."""
    if prev in TITLES:
        return True
    if not w.text[0].isupper() or w.text.isupper():
        return False
    low, plain = w.lower, unaccented(w.lower)
    first = low in first_names() or plain in first_names()
    if w.sent_start:
        return first and len(low) >= 4
    if noun_caps:
        return first
    return first or low in surnames() or plain in surnames() or not english


def name_hits(doc, sents: list[languages.Sentence] | None = None) -> list[Hit]:
    text = doc.text
    words = _words(text)
    sents = sents or languages.sentences(text, english_word)
    tok_at = {t.idx: t for t in doc}
    names = first_names()
    found: list[tuple[int, int, str]] = []  # (start, end, source)
    # sentences written in another script: that script's own rules (see consent.languages)
    for sent in sents:
        if sent.mode not in ("en", "latin"):
            inside = [w for w in words if sent.start <= w.start < sent.end]
            found += [(a, b, "script") for a, b in languages.native_name_spans(text, inside, sent, _gazetteer)]
    i = 0
    while i < len(words):
        w = words[i]
        prev = words[i - 1].lower if i else ""
        sent = languages.mode_at(sents, w.start)
        if _foreign_script(w.text):
            j = i
            while j + 1 < len(words) and _foreign_script(words[j + 1].text) and \
                    text[words[j].end:words[j + 1].start].strip() == "":
                j += 1
            if sent.mode in ("en", "latin"):
                if j - i + 1 <= languages.EMBEDDED_RUN:  # "lunch with Александра tomorrow"
                    found.append((w.start, words[j].end, "script"))
                else:  # a passage in another script quoted in a Latin sentence: its own rules
                    run = languages.Sentence(w.start, words[j].end, languages._dominant(text[w.start:words[j].end])[0])
                    found += [(a, b, "script") for a, b in
                              languages.native_name_spans(text, words[i:j + 1], run, _gazetteer)]
            i = j + 1
            continue
        low = w.lower
        if low in NOT_ENTITIES or temporal(low) or len(low) < 2:
            i += 1
            continue
        english = english_word(low)
        if sent.mode == "latin":
            # a sentence in another Latin-script language: a known name, capitalized, or a capitalized
            # mid-sentence word where nouns are not capitalized
            if _foreign_name(w, prev, english, languages.capitalizes_nouns(text, sent)):
                found.append((w.start, w.end, "name"))
            i += 1
            continue
        # "dr srinivasan", "Mrs O'Halloran": after a title; a plain English word only if capitalized
        after_title = (i and prev in TITLES and text[words[i - 1].end:w.start].strip(" .") == ""
                       and (w.text[0].isupper() or not english) and not (prev in _WORD_TITLES and w.text.islower())
                       and (prev not in _WORD_TITLES or words[i - 1].text[0].isupper()))
        capital_mid = w.text[0].isupper() and not w.sent_start and not w.text.isupper()
        tok = tok_at.get(w.start)
        after_relation = (prev in RELATIONS and not words[i - 1].possessive and w.text.islower() and low in names
                          and (tok is None or tok.pos_ in ("PROPN", "NOUN")))
        after_pet = (prev in PETS and i and text[words[i - 1].end:w.start] in (" ", ", ") and not w.sent_start
                     and (w.text[0].isupper() or not english) and low not in PETS)  # "my dog Biscuit"
        after_nick = (prev in NICK_PREFIXES and w.text[0].isupper() and i
                      and text[words[i - 1].end:w.start] == " " and (not english or low in names or len(low) <= 3))
        if after_title and low not in RELATIONS:
            found.append((w.start, w.end, "title"))
        elif len(low) >= 3 and ((low in names and not english) or (low in surnames())
                                or (unaccented(low) in surnames() and not english_word(unaccented(low)))):
            found.append((w.start, w.end, "name"))
            # a given name's next word is its surname if it is no English word ("joão pedrosa")
            if i + 1 < len(words) and text[w.end:words[i + 1].start] == " ":
                nxt = words[i + 1]
                if len(nxt.lower) >= 3 and not english_word(nxt.lower) and not temporal(nxt.lower) \
                        and nxt.lower not in NOT_ENTITIES and not _foreign_script(nxt.text):
                    found.append((nxt.start, nxt.end, "name"))
                    i += 1
        elif len(low) >= 3 and capital_mid and not english:
            found.append((w.start, w.end, "name"))
        elif after_relation or after_nick or after_pet:
            found.append((w.start, w.end, "nickname" if after_nick else "name"))
        i += 1
    for m in PARTICLE_NAME.finditer(text):  # "van der berg", "ms de la cruz"
        sent = languages.mode_at(sents, m.start())
        if sent.mode == "latin":  # "das Wetter", "von mir": articles and prepositions in their own language
            last = [w for w in words if m.start() <= w.start < m.end()][-1]
            if not _foreign_name(last, "", english_word(last.lower), languages.capitalizes_nouns(text, sent)):
                continue
        found.append((m.start(), m.end(), "name"))
    for rx in (NICKNAME_TOLD, NICKNAME_BEFORE):
        for m in rx.finditer(text):
            s = m.group("x")
            if s.casefold() not in NOT_ENTITIES and not temporal(s):
                found.append((m.start("x"), m.end("x"), "nickname"))
    # a capitalized first name or surname next to a name is part of it, English word or not
    # ("Dolores Ibáñez", "Rose Okafor")
    at = {w.start: k for k, w in enumerate(words)}
    for a, b, src in list(found):
        k = at.get(a)
        if k is None or src == "script":
            continue
        for j in (k - 1, k + 1):
            if 0 <= j < len(words):
                nb = words[j]
                gap = text[nb.end:a] if j < k else text[words[k].end:nb.start]
                if gap == " " and nb.text[0].isupper() and _is_name_word(nb) and nb.lower not in NOT_ENTITIES \
                        and nb.lower not in NICK_PREFIXES and not temporal(nb.lower):
                    found.append((nb.start, nb.end, "name"))
    # adjacent name words are one name ("Ginevra Bellandi", "joão pedrosa"), so one surrogate
    found.sort()
    merged: list[list] = []
    for a, b, src in found:
        if merged and (a <= merged[-1][1] or (text[merged[-1][1]:a] == " " and src != "script")):
            merged[-1][1] = max(merged[-1][1], b)
        else:
            merged.append([a, b, src])
    # a lowercase English word is not a name just because it follows one ("joão said")
    return [Hit("PERSON", a, b, text[a:b], src) for a, b, src in merged]


def _sentence_initial(doc, tok) -> bool:
    return tok.i == 0 or doc[tok.i - 1].text in (".", "!", "?", "…", "\n") or "\n" in doc[tok.i - 1].text


def _known(tok) -> bool:
    return tok.lower_ in first_names() or tok.lower_ in surnames()


_BREAKS = {"on", "at", "in", "with", "from", "to", "for", "by", "and", "or"}  # not a name's own "of", "de", "&"
_NER_TRIM = NOT_ENTITIES | TITLES | NICK_PREFIXES | set(RELATIONS) | {"'s", "’s", "my", "your", "his", "her", "our",
                                                                    "their"}


def _ner_believed(doc, e, sents: list[languages.Sentence]) -> bool:
    """English NER is believed in English sentences; elsewhere only on capitalized Latin words that a
    name list knows or that stand out in a language that does not capitalize its nouns."""
    sent = languages.mode_at(sents, e.start_char)
    words = [t for t in e if t.is_alpha]
    if sent.mode == "en":
        return True
    if any(languages.script(c) != "LATIN" for t in words for c in t.text):
        return False
    if sent.mode != "latin":
        return True  # a Latin word inside a sentence of another script: "встретил John"
    return bool(words) and all(t.text[0].isupper() for t in words) and (
        any(_gazetteer(t.lower_) or _gazetteer(unaccented(t.lower_)) for t in words)
        or (not languages.capitalizes_nouns(doc.text, sent) and not _sentence_initial(doc, words[0])))


def ner_hits(doc, sents: list[languages.Sentence] | None = None) -> list[Hit]:
    out = []
    sents = sents or languages.sentences(doc.text, english_word)
    for e in doc.ents:
        kind = NER_KINDS.get(e.label_)
        if kind is None or not _ner_believed(doc, e, sents):
            continue
        toks = list(e)
        related = False
        # "my sister Lena" -> "Lena", a person: the relation word stays in the text; so do titles and a
        # sentence's first English word ("Reading Paddington to my nephew")
        while toks and (toks[0].lower_ in _NER_TRIM or (len(toks) > 1 and _sentence_initial(doc, toks[0])
                                                         and english_word(toks[0].lower_) and not _known(toks[0]))):
            related = related or toks[0].lower_ in RELATIONS
            toks = toks[1:]
        while toks and (toks[-1].lower_ in ("'s", "’s") or toks[-1].is_punct
                        or (toks[-1].text.islower() and english_word(toks[-1].lower_))):
            toks = toks[:-1]
        while toks and toks[0].text.islower() and english_word(toks[0].lower_):  # "at Ikea"
            toks = toks[1:]
        if any(t.text.islower() and t.lower_ in _BREAKS for t in toks):  # "Succession on Airbnb": two names
            parts, cur = [], []
            for t in toks:
                if t.text.islower() and t.lower_ in _BREAKS:
                    parts.append(cur)
                    cur = []
                else:
                    cur.append(t)
            parts.append(cur)
            for part in (p for p in parts if p):
                a, b = part[0].idx, part[-1].idx + len(part[-1].text)
                sub = doc.text[a:b]
                ws = [t.lower_ for t in part if t.is_alpha]
                if ws and not all(w in NOT_ENTITIES or temporal(w) for w in ws) and not sub.islower():
                    out.append(Hit(kind, a, b, sub, "ner"))
            continue
        if not toks:
            continue
        if e.start > 0 and doc[e.start - 1].lower_ in RELATIONS:
            related = True
        a, b = toks[0].idx, toks[-1].idx + len(toks[-1].text)
        s = doc.text[a:b]
        words = [t.lower_ for t in toks if t.is_alpha]
        if not words or all(w in NOT_ENTITIES or temporal(w) or w in CUE_WORDS for w in words):
            continue
        if any(c.isdigit() for c in s):
            continue  # numbers are the number rules' (NER calls "7544 7027 0768" a PERSON)
        if s.islower() and all(english_word(w) for w in words):
            continue  # "grandma", "the gym": a lowercase common noun, not a name
        if s.isupper() and len(s) <= (4 if kind == "ORG" else 3):
            continue  # HR, NHS, NI, UK: acronyms of roles, institutions and countries, not of the person
        known = any(w in first_names() or w in surnames() for w in words)
        if kind == "PERSON" and not related and not known and all(english_word(w) for w in words):
            continue  # "Dessert", "Hogwarts Legacy" is kept: not every word is English
        if len(words) == 1 and _sentence_initial(doc, toks[0]) and english_word(words[0]) and not known and not related:
            continue  # "Tiramisu is my weakness": a sentence starts with a capital
        out.append(Hit("PERSON" if related else kind, a, b, s, "ner"))
    return out


def _merge(hits: list[Hit]) -> list[Hit]:
    """Non-overlapping: longest first; on a tie the verified number, our patterns, then the rest."""
    rank = {"checksum": 0, "pattern": 1, "email": 2, "url": 2, "ip": 2, "phone": 3, "cue": 4, "ner": 5, "title": 6,
            "script": 6, "nickname": 6, "name": 7, "digits": 8}
    hits = sorted(hits, key=lambda h: (-(h.end - h.start), rank.get(h.source, 9), h.start))
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


_BEFORE_CODE = re.compile(r"(?<![\w,])([A-Z][^\W\d_]+(?:[ -][A-Z][^\W\d_]+)?),?\s+$")


def _places_by_postcodes(text: str, hits: list[Hit]) -> list[Hit]:
    """'Leeds LS6 2EX', 'Chicago, IL 60625': the capitalized name just before a postcode is a place."""
    out = []
    for h in hits:
        if h.kind != "POSTCODE":
            continue
        head = re.sub(r"\b(?:" + _STATES + r")\s*$", "", text[:h.start]).rstrip()
        m = _BEFORE_CODE.search(head + " ")
        if m and m.group(1).casefold() not in NOT_ENTITIES and not temporal(m.group(1)):
            out.append(Hit("PLACE", m.start(1), m.end(1), m.group(1), "pattern"))
    return out


def _scan_doc(text: str, doc) -> list[Hit]:
    sents = languages.sentences(text, english_word)
    merged = _merge(pattern_hits(text) + ner_hits(doc, sents) + name_hits(doc, sents))
    merged = _merge(merged + _postcodes_by_places(text, merged))
    return _merge(merged + _places_by_postcodes(text, merged))


# The recognizers read tokens, tags and entities: the parser and the lemmatizer are not needed
# (sentence starts and English words are decided by `_words` and `english_word`).
_UNUSED = ("parser", "lemmatizer")


def _pipe(texts: list[str], batch_size: int = 128):
    from memory import nlp

    return nlp.nlp().pipe(texts, batch_size=batch_size, disable=_UNUSED)


def scan(text: str) -> list[Hit]:
    """Every identifier hit in `text` (non-overlapping, in order)."""
    return scan_many([text])[0]


def scan_many(texts: list[str], batch_size: int = 128, cache: dict | None = None) -> list[list[Hit]]:
    """`scan` over many texts, with spaCy batching them (nlp.pipe). `cache` (text -> hits), when
    given, is read and filled: an export scans each text once, and its gate reads the same cache."""
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
            left = [w for w in left if not english_word(w)]
        if left:
            out.append(h)
    return out
